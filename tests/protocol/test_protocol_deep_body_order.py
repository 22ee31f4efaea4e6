"""A body nested too deeply is refused as OpMsg::parse reads it: mongod 7.0 reads every section as
validated BSON in wire order (the body a ``Validated<BSONObj>``, depth included), so a too-deep body is
15 Overflow before the error of any section after it (another body 40430, an unknown kind 40432, a
repeated sequence 40431, a third sequence 233, an invalid sequence document 22), and after the error
of a section before it. Tidemark checked the body's depth once every section was read."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.protocol import codec
from tidemark.protocol.framing import HEADER, MAX_BSON_DEPTH, OpCode, ParseError
from tidemark.protocol.messages import decode_message

_INT32 = struct.Struct("<i")
_INVALID_DOCUMENT = _INT32.pack(12) + b"\x99a\x00\x01\x02\x03\x04\x00"  # an element of unknown type 0x99


def _nested(levels: int) -> dict:
    inner: dict = {}
    for _ in range(levels - 1):
        inner = {"a": inner}
    return inner


def _sequence(identifier: str, *documents: bytes) -> bytes:
    payload = identifier.encode() + b"\x00" + b"".join(documents)
    return b"\x01" + _INT32.pack(4 + len(payload)) + payload


GOOD = codec.encode({"x": 1})
# a section after the body that fails on its own, and the error it would answer
LATER = {
    "second body": (b"\x00" + codec.encode({"ping": 1}), 40430),
    "unknown kind": (b"\x05" + GOOD, 40432),
    "repeated sequence": (_sequence("s", GOOD) + _sequence("s", GOOD), 40431),
    "third sequence": (_sequence("s", GOOD) + _sequence("t", GOOD) + _sequence("u", GOOD), 233),
    "invalid sequence document": (_sequence("s", GOOD, _INVALID_DOCUMENT), 22),
}


def _frame(sections: bytes) -> bytes:
    body = struct.pack("<I", 0) + sections
    return HEADER.pack(16 + len(body), 3, 0, OpCode.OP_MSG) + body


def _code(frame: bytes) -> int:
    with pytest.raises(ParseError) as err:
        decode_message(frame)
    return err.value.code


@settings(max_examples=60, deadline=None)
@given(later=st.sampled_from(sorted(LATER)), depth=st.integers(MAX_BSON_DEPTH + 1, MAX_BSON_DEPTH + 40),
       repeated=st.booleans(), before=st.booleans())
def test_a_too_deep_body_is_15_before_any_later_section_error(later, depth, repeated, before):
    deep = _nested(depth)  # the body is level 1: ``depth`` levels below it pass the limit
    if repeated:  # the deep value hidden behind a repeated name (the command keeps the first value)
        elements = codec.encode({"ping": 1})[4:-1] + codec.encode({"v": 1})[4:-1] + codec.encode({"v": deep})[4:-1]
        body = _INT32.pack(len(elements) + 5) + elements + b"\x00"
    else:
        body = codec.encode({"ping": 1, "v": deep})
    after, code = LATER[later]
    assert _code(_frame(b"\x00" + body + after)) == 15
    assert _code(_frame(after + b"\x00" + body)) == (code if later != "second body" else 40430)
    if before:  # a section read before the body that fails answers first, as mongod reads in order
        assert _code(_frame(_sequence("s", GOOD, _INVALID_DOCUMENT) + b"\x00" + body + after)) == 22
