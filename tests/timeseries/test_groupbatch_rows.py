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


_ACCUMULATORS = ["$max", "$min", "$first", "$last", "$sum", "$avg", "$count"]


@settings(max_examples=400, deadline=None)
@given(data=st.data(), names=st.lists(st.sampled_from(_ACCUMULATORS), min_size=1, max_size=4),
       timed=st.booleans())
def test_summarize_is_each_runs_reductions(data, names, timed):
    """``groupruns.summarize``: per run its truncated time, first time, row count and each accumulator's
    value (the max/min, first/last value, total; 0 for a ``$count``), and the facts (not integral,
    absolute sum, a -0.0 beside a zero winner) — with -0.0, 0.0 and fractional values."""
    from types import SimpleNamespace

    from tidemark.timeseries.groupruns import summarize, truncated

    n = data.draw(st.integers(1, 12))
    times = np.asarray(sorted(data.draw(st.lists(st.integers(0, 300_000), min_size=n, max_size=n))), dtype=np.int64)
    values = np.asarray(data.draw(st.lists(st.sampled_from([0.0, -0.0, 1.0, -2.0, 2.5, 7.0]), min_size=n,
                                           max_size=n)), dtype=np.float64)
    starts = np.asarray(sorted({0, *data.draw(st.lists(st.integers(0, n - 1), max_size=n))}), dtype=np.int64)
    fields = [(f"a{j}", SimpleNamespace(name=name, field=None if name == "$count" else "v"))
              for j, name in enumerate(names)]
    group = SimpleNamespace(fields=fields, time_field="t", unit_ms=60_000 if timed else None)
    trunc = truncated(times, group.unit_ms)
    runs = summarize(group, times, {"v": values}, starts, trunc)
    ends = [*starts[1:].tolist(), n]
    width = len(fields)
    for r, (a, z) in enumerate(zip(starts.tolist(), ends, strict=True)):
        row = runs.table[r].tolist()
        assert row[:3] == [float(trunc[a]) if timed else 0.0, float(times[a]), float(z - a)]
        part = values[a:z].tolist()
        for j, name in enumerate(names):
            want = {"$max": max(part), "$min": min(part), "$first": part[0], "$last": part[-1],
                    "$sum": sum(part), "$avg": sum(part), "$count": 0.0}[name]
            assert row[3 + j] == want
            if name in ("$first", "$last"):
                assert np.signbit(row[3 + j]) == np.signbit(want)
    fractional, abs_sums, neg_zeros = runs.exactness()
    for j, name in enumerate(names):
        if name in ("$sum", "$avg"):
            integral = all(v == int(v) for v in values.tolist())
            assert (fractional[j] == 0.0) == integral
            assert abs_sums[j] == (float(np.abs(values).sum()) if integral else float("inf"))
        if name in ("$max", "$min"):
            winners = runs.table[:, 3 + j]
            has_neg_zero = any(v == 0.0 and np.signbit(v) for v in values.tolist())
            assert bool(neg_zeros[j]) == (bool((winners == 0.0).any()) and has_neg_zero)
    assert len(runs.facts) == 3 * width
    assert runs.timed == timed
