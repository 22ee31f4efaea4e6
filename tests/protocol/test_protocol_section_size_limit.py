"""mongod's OpMsg::parse reads every section's document (the body, and each document of a kind-1
sequence) as a ``Validated<BSONObj>``: valid BSON longer than BSONObjMaxInternalSize (16 MB + 16 KB =
16,793,600 bytes) fails the whole request with 10334 BSONObjectTooLarge "BSONObj size: N (0xN) is
invalid. Size must be between 0 and 16793600(16MB) First element: <name: value>"
(``BSONObj::_assertInvalid``, bsonobj.cpp), a non-fatal parse error: the connection stays open.
Tidemark decoded such a body and ran it, and handed such an insert document to the insert, which
answered a per-document error 2. These tests cover the parser: both kinds of section, at the limit and
one byte past it, the document's position in its sequence, and the first element's rendering."""

from __future__ import annotations

import bson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.protocol.framing import MAX_COMMAND_SIZE, ParseError
from tidemark.protocol.messages import OpMsg, RawDocuments, decode_message, encode_op_msg_request


def _sized(first: dict, size: int) -> dict:
    """``first`` plus a string field padding the document to exactly ``size`` BSON bytes."""
    doc = {**first, "pad": ""}
    doc["pad"] = "x" * (size - len(bson.encode(doc)))
    assert len(bson.encode(doc)) == size
    return doc


def _message(command: dict, sequences: dict | None = None) -> OpMsg:
    request = decode_message(encode_op_msg_request(command, 7, sequences=sequences))
    assert isinstance(request, OpMsg)
    return request


def _too_large(size: int, element: str) -> str:
    return (f"BSONObj size: {size} (0x{size:X}) is invalid. Size must be between 0 and 16793600(16MB)"
            f" First element: {element}")


@pytest.mark.parametrize("extra", [0, 1])
def test_a_body_past_16mb_plus_16kb_is_10334_and_not_fatal(extra):
    command = _sized({"insert": "c", "$db": "d"}, MAX_COMMAND_SIZE + extra)
    if not extra:
        assert _message(command).command["pad"] == command["pad"]
        return
    with pytest.raises(ParseError) as info:
        _message(command)
    assert (info.value.code, str(info.value), info.value.fatal, info.value.request_id) == (
        10334, _too_large(MAX_COMMAND_SIZE + 1, 'insert: "c"'), False, 7)


@settings(max_examples=6, deadline=None)
@given(before=st.integers(0, 3), after=st.integers(0, 2), extra=st.sampled_from([0, 1, 1000]),
       identifier=st.sampled_from(["documents", "updates"]))
def test_a_sequence_document_past_the_limit_fails_the_whole_request(before, after, extra, identifier):
    docs = [{"_id": i} for i in range(before)] + [_sized({"_id": before}, MAX_COMMAND_SIZE + extra)]
    docs += [{"_id": before + 1 + i} for i in range(after)]
    command = {"insert" if identifier == "documents" else "update": "c", "$db": "d"}
    if not extra:
        parsed = _message(command, {identifier: docs}).command[identifier]
        assert len(parsed) == len(docs)
        return
    with pytest.raises(ParseError) as info:
        _message(command, {identifier: docs})
    assert (info.value.code, str(info.value), info.value.fatal) == (
        10334, _too_large(MAX_COMMAND_SIZE + extra, f"_id: {before}"), False)


def test_invalid_bson_before_the_oversized_document_is_reported_first():
    """mongod validates each document before loading it: an earlier malformed document is 22."""
    big = bson.encode(_sized({"_id": 1}, MAX_COMMAND_SIZE + 1))
    bad = bytearray(bson.encode({"a": "xy"}))
    bad[7] = 0x7F  # the string's length prefix now overruns the document
    data = bytes(bad) + big
    with pytest.raises(ParseError) as info:
        RawDocuments(data, 0, len(data), "documents")
    assert info.value.code == 22


@settings(max_examples=12, deadline=None)
@given(first=st.sampled_from([
    ({"insert": "c"}, 'insert: "c"'),
    ({"n": "é" * 100}, 'n: "' + "é" * 75 + '..."'),  # 201 bytes: the first 150 bytes and "..."
    ({"s": "y" * 159}, 's: "' + "y" * 159 + '"'),
    ({"s": "y" * 160}, 's: "' + "y" * 150 + '..."'),
    ({"ping": 1}, "ping: 1"),
    ({"n": bson.Int64(-5)}, "n: -5"),
    ({"d": 2.0}, "d: 2.0"),
    ({"d": 0.5}, "d: 0.5"),
    ({"b": True}, "b: true"),
    ({"z": None}, "z: null"),
    ({"_id": bson.ObjectId("65a1b2c3d4e5f60718293a4b")}, "_id: ObjectId('65a1b2c3d4e5f60718293a4b')"),
]))
def test_the_first_element_is_shown_as_mongod_shows_it(first):
    fields, shown = first
    with pytest.raises(ParseError) as info:
        _message(_sized({**fields, "$db": "d"}, MAX_COMMAND_SIZE + 1))
    assert str(info.value) == _too_large(MAX_COMMAND_SIZE + 1, shown)
