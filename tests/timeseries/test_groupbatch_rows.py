"""The columnar ``$group``'s gathering of a batch's rows (groupbatch ``_gathered``, ``_stretches`` and
``_run_starts``), pure, against the straightforward computation: the rows a mask keeps of the buckets
joined, each kept bucket's first row among them with its meta index and sequence, and the runs cut
where a bucket or the truncated time changes — for masks that keep one stretch of each bucket (a
time window), several, none or all, with empty buckets and one-row buckets."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.timeseries.groupbatch import _gathered, _run_starts, _stretches


@st.composite
def _batch(draw):
    lengths = draw(st.lists(st.integers(0, 7), min_size=2, max_size=8))
    n = sum(lengths)
    kind = draw(st.sampled_from(["window", "random", "all", "none", "None"]))
    if kind == "window":  # sorted times in each bucket, a window over them: one stretch each
        lo, hi = sorted(draw(st.lists(st.integers(-1, 8), min_size=2, max_size=2)))
        mask = np.concatenate([np.arange(k) for k in lengths] + [np.zeros(0, np.int64)])
        mask = (mask >= lo) & (mask < hi)
    elif kind == "random":
        mask = np.asarray(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    elif kind == "all":
        mask = np.ones(n, dtype=bool)
    elif kind == "none":
        mask = np.zeros(n, dtype=bool)
    else:
        mask = None
    metas = draw(st.lists(st.integers(0, 3), min_size=len(lengths), max_size=len(lengths)))
    seqs = sorted(draw(st.lists(st.integers(0, 40), min_size=len(lengths), max_size=len(lengths), unique=True)))
    return lengths, mask, metas, seqs


@settings(max_examples=400, deadline=None)
@given(batch=_batch(), joined_value=st.booleans())
def test_gathered_rows_are_the_masked_rows(batch, joined_value):
    lengths, mask, metas, seqs = batch
    rng = np.random.default_rng(sum(lengths))
    pending = []
    for k, meta, seq in zip(lengths, metas, seqs, strict=True):
        times = np.sort(rng.integers(0, 10**6, k)).astype(np.int64)
        arrays = {"v": rng.random(k), "w": rng.random(k)}
        pending.append((times, arrays, meta, seq))
    times = np.concatenate([p[0] for p in pending])
    joined = {"w": np.concatenate([p[1]["w"] for p in pending])} if joined_value else {}
    got = _gathered(pending, ["v", "w"], times, joined, mask)
    keep = np.ones(len(times), dtype=bool) if mask is None else mask
    rows = np.flatnonzero(keep)
    assert got[0].tolist() == times[rows].tolist()
    for name in ("v", "w"):
        assert got[1][name].tolist() == np.concatenate([p[1][name] for p in pending])[rows].tolist()
    firsts, owners, sequences = [], [], []
    at = 0
    for (bucket_times, _arrays, meta, seq), start in zip(pending, np.cumsum([0, *lengths[:-1]]), strict=True):
        kept = int(keep[start:start + len(bucket_times)].sum())
        if kept:
            firsts.append(at)
            owners.append(meta)
            sequences.append(seq)
        at += kept
    assert got[2].tolist() == firsts
    assert got[3].tolist() == owners
    assert got[4].tolist() == sequences


@settings(max_examples=400, deadline=None)
@given(lengths=st.lists(st.integers(0, 6), min_size=1, max_size=6), data=st.data())
def test_stretches_are_each_buckets_one_stretch(lengths, data):
    n = sum(lengths)
    mask = np.asarray(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    edges = np.cumsum([0, *lengths]).tolist()
    changes = [i for i in range(1, n) if mask[i] != mask[i - 1]]
    got = _stretches(edges, changes, bool(mask[0]) if n else False)
    want = []
    for b in range(len(lengths)):
        rows = [i for i in range(edges[b], edges[b + 1]) if mask[i]]
        if rows:
            want.append((b, rows[0], rows[-1] + 1))
            if rows[-1] + 1 - rows[0] != len(rows):
                want = None
                break
    assert got == want


@settings(max_examples=300, deadline=None)
@given(lengths=st.lists(st.integers(1, 6), min_size=1, max_size=6), data=st.data(), same_keys=st.booleans(),
       timed=st.booleans())
def test_run_starts_cut_at_buckets_and_truncated_times(lengths, data, same_keys, timed):
    n = sum(lengths)
    firsts = np.cumsum([0, *lengths[:-1]]).astype(np.int64)
    keys = np.asarray(data.draw(st.lists(st.integers(0, 1), min_size=len(lengths), max_size=len(lengths))),
                      dtype=np.int64)
    trunc = np.asarray(data.draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)), dtype=np.int64) \
        if timed else None
    starts, at = _run_starts(n, firsts, keys if same_keys else None, trunc)
    bucket = np.repeat(np.arange(len(lengths)), lengths)
    key = keys[bucket] if same_keys else bucket
    want = [i for i in range(n) if i == 0 or key[i] != key[i - 1] or (trunc is not None and trunc[i] != trunc[i - 1])]
    assert starts.tolist() == want
    assert at.tolist() == [int(bucket[i]) for i in want]
