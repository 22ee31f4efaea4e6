"""cursors._take_run against a model of ``_fill_batch``'s rule, document by document: the documents of a
run a batch takes (after ``n`` documents and ``size`` bytes of its array, under a count limit or none) and
the array's size after them — each element's head (type, index key, NUL) counted, its key a digit wider
at 10, 100, 1,000 — whether the whole stretch fits (taken at once) or the size limit cuts it; and the
head bytes of any range of indexes (Hypothesis)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark import cursors
from tidemark.protocol.codec import EncodedRun


def _model(n, size, docs, end, max_bytes):
    taken = 0
    for doc in docs:
        if end >= 0 and n + taken == end:
            break
        if n + taken and size + len(doc) > max_bytes:
            break
        size += len(doc) + 2 + len(str(n + taken))
        taken += 1
    return taken, size


@settings(max_examples=400, deadline=None)
@given(n=st.integers(0, 1100) | st.integers(4030, 4200), size=st.integers(0, 3000), lengths=st.lists(st.integers(5, 60), min_size=1, max_size=60),
       limit=st.none() | st.integers(1, 80), sized=st.sampled_from(["array", "int", "none"]),
       max_bytes=st.integers(20, 6000))
def test_a_run_takes_what_the_rule_document_by_document_takes(n, size, lengths, limit, sized, max_bytes):
    end = -1 if limit is None else n + limit  # (a batch asks only while it is below its count)
    if sized == "int":  # (one length for every document)
        lengths = [lengths[0]] * len(lengths)
    docs = [b"d" * length for length in lengths]
    sizes = np.array(lengths, np.int64) if sized == "array" else lengths[0] if sized == "int" else None
    batch = [b"-"] * n
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cursors, "MAX_BATCH_BYTES", max_bytes)
        rest, new_size = cursors._take_run(batch, EncodedRun(docs, sizes), size, end)
        taken, expected_size = _model(n, size, docs, end, max_bytes)
    assert batch[n:] == docs[:taken]
    assert new_size == expected_size
    if taken == len(docs):
        assert rest is None
    else:
        assert rest is not None and rest.docs == docs[taken:]
        rest_sizes = [rest.sizes] * len(rest.docs) if type(rest.sizes) is int else rest.sizes
        assert rest_sizes is None or list(rest_sizes) == lengths[taken:]


@given(start=st.integers(0, 200_000), count=st.integers(0, 2_000))
def test_head_bytes_of_a_range_of_indexes(start, count):
    assert cursors._heads_bytes(start, start + count) == sum(2 + len(str(i)) for i in range(start, start + count))


def test_the_table_of_head_totals_is_the_head_bytes_from_zero():
    assert all(cursors._HEADS_UPTO[i] == cursors._heads_bytes(0, i) for i in range(len(cursors._HEADS_UPTO)))
