"""protocol/codec.py ``encode_reply``: a cursor reply whose batch is an ``EncodedBatch`` (its documents'
bytes) encodes to exactly the bytes ``encode`` gives with the batch as a list of those documents, wherever
the batch and the cursor sit among their siblings (``postBatchResumeToken``, fields a reply gains before
or after ``cursor``, an ``_id`` the top-level encoder moves first), for batches whose index keys cross
from one digit to more; ``EncodedBatch`` reads as the list of its documents; ``EncodedRun`` iterates
its documents."""

from __future__ import annotations

import bson
from bson.int64 import Int64
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.protocol.codec import (
    EncodedBatch,
    EncodedDocument,
    EncodedRun,
    element_heads,
    encode,
    encode_in_order,
    encode_reply,
)

# strings as BSON holds them: UTF-8, so no lone surrogate (category Cs), which no encoder can write
utf8 = st.characters(blacklist_categories=("Cs",))
values = st.one_of(st.integers(-2**31, 2**31 - 1), st.floats(allow_nan=False), st.text(utf8, max_size=20), st.none(),
                   st.booleans())
documents = st.dictionaries(st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=6),
                            values, max_size=4)


@settings(max_examples=200, deadline=None)
@given(docs=st.lists(documents, max_size=120), key=st.sampled_from(["firstBatch", "nextBatch"]),
       token=st.booleans(), batch_first=st.booleans(), before=st.booleans(), with_id=st.booleans())
def test_a_reply_with_an_encoded_batch_is_the_reply_with_its_documents(docs, key, token, batch_first, before,
                                                                        with_id):
    raws = [encode_in_order(d) for d in docs]
    def reply(batch):
        cursor = {"id": Int64(7), "ns": "db.c"}
        cursor = {key: batch, **cursor} if batch_first else {**cursor, key: batch}
        if token:
            cursor["postBatchResumeToken"] = {"$recordId": Int64(3)}
        out = {"x": 1} if before else {}
        out["cursor"] = cursor
        out["ok"] = 1.0
        if with_id:
            out["_id"] = "moved first"
        return out
    want = encode(reply([EncodedDocument(r) for r in raws]))
    assert encode_reply(reply(EncodedBatch(raws))) == want
    assert bson.decode(want) == bson.decode(encode_reply(reply(EncodedBatch(raws))))


def test_an_encoded_batch_reads_as_its_documents():
    raws = [encode_in_order({"a": i}) for i in range(12)]
    batch = EncodedBatch(raws)
    assert len(batch) == 12 and batch and not EncodedBatch([])
    assert [d.raw for d in batch] == raws and batch == [EncodedDocument(r) for r in raws]
    assert [d.raw for d in EncodedRun(raws)] == raws and len(EncodedRun(raws)) == 12


def test_element_heads_are_the_encoders():
    for start, stop in ((0, 3), (8, 12), (1020, 1030), (99_995, 100_010)):
        assert element_heads(start, stop) == [b"\x03" + str(i).encode() + b"\x00" for i in range(start, stop)]


def test_a_reply_without_an_encoded_batch_is_encoded_as_is():
    reply = {"cursor": {"firstBatch": [{"a": 1}], "id": Int64(0), "ns": "db.c"}, "ok": 1.0}
    assert encode_reply(reply) == encode(reply)
    assert encode_reply({"ok": 1.0}) == encode({"ok": 1.0})
