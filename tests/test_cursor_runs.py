"""cursors._fill_batch takes an ``EncodedRun`` (many documents as one item) by exactly the rules it
applies to documents one at a time: the same batches (count limits, the size limit counted with each
element's head whose index key widens at 10, 100, ..., at least one document a batch), the same
exhausted flag, whether the run comes with its documents' sizes (an array, or one ``int`` when they are all
one length) or not, split across batches or
following other documents (Hypothesis, with the size limit made small)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark import cursors
from tidemark.protocol.codec import EncodedDocument, EncodedRun, encode_in_order


def _drain(items, limits):
    cursor = cursors.Cursor(1, "db.c", iter(items))
    out = []
    for limit in limits:
        batch, done = cursors._fill_batch(cursor, limit)
        out.append((list(batch.docs), done))
        if done:
            return out
    while True:
        batch, done = cursors._fill_batch(cursor, None)
        out.append((list(batch.docs), done))
        if done:
            return out


@settings(max_examples=300, deadline=None)
@given(pads=st.integers(0, 180).flatmap(lambda n: st.lists(st.integers(0, 40), min_size=n, max_size=n)), head=st.integers(0, 3),
       sized=st.sampled_from(["array", "int", "none"]),
       limits=st.lists(st.one_of(st.none(), st.integers(1, 40)), max_size=4), max_bytes=st.integers(20, 4000))
def test_a_run_is_batched_as_its_documents_one_at_a_time(pads, head, sized, limits, max_bytes):
    if sized == "int":  # (documents of one length: "i" a constant-width value)
        pads = [pads[0] if pads else 0] * len(pads)
        docs = [encode_in_order({"i": float(i), "p": "x" * pad}) for i, pad in enumerate(pads)]
    else:
        docs = [encode_in_order({"i": i, "p": "x" * pad}) for i, pad in enumerate(pads)]
    single = [EncodedDocument(d) for d in docs]
    rest = docs[head:]
    if sized == "int":
        sizes = len(rest[0]) if rest else 0
    else:
        sizes = np.fromiter(map(len, rest), np.int64, len(rest)) if sized == "array" else None
    runs = [EncodedDocument(d) for d in docs[:head]] + [EncodedRun([]), EncodedRun(rest, sizes)]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cursors, "MAX_BATCH_BYTES", max_bytes)
        assert _drain(runs, limits) == _drain(single, limits)
