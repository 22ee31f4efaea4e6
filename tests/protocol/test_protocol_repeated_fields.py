"""A body whose field names repeat (protocol/messages.py ``_repeated_fields``): the walk over element
heads counts every element of every BSON type, and only a body that repeats a name carries its elements
(``OpMsg.repeated``), the command keeping each name's first value."""

from __future__ import annotations

import datetime as dt
import struct
import uuid

import pytest
from bson import Binary, Code, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.protocol import codec
from tidemark.protocol.framing import ParseError
from tidemark.protocol.messages import OpMsg, decode_message, encode_op_msg_request

_INT32 = struct.Struct("<i")

# one value of every BSON type a client can send, and three wire-only ones written by hand
VALUES = st.sampled_from([
    1.5, "s", "é", {"a": {"b": [1]}}, [1, "x"], Binary(b"xy", 0), Binary(b"x", 0x80), ObjectId("65f0c0ffee0000000000beef"),
    True, dt.datetime(2020, 1, 1), None, Regex("a.b", "im"), Code("x"), Code("x", {"a": 1}), 5, Timestamp(1, 2),
    Int64(3), Decimal128("1.5"), MinKey(), MaxKey(), uuid.UUID(int=7),
])
WIRE_ONLY = {  # type byte -> value bytes: DBPointer, symbol, undefined
    0x0C: _INT32.pack(2) + b"c\x00" + bytes(12), 0x0E: _INT32.pack(2) + b"z\x00", 0x06: b"",
}


def _element(name: str, value: object) -> bytes:
    if isinstance(value, tuple):  # (type byte, value bytes)
        return bytes([value[0]]) + name.encode() + b"\x00" + value[1]
    return codec.encode({name: value})[4:-1]


def _document(elements: list[tuple[str, object]]) -> bytes:
    inner = b"".join(_element(name, value) for name, value in elements)
    return _INT32.pack(len(inner) + 5) + inner + b"\x00"


@settings(max_examples=300, deadline=None)
@given(names=st.lists(st.sampled_from(["a", "b", "cc", "$db", "é"]), min_size=1, max_size=8),
       values=st.lists(st.one_of(VALUES, st.sampled_from(sorted(WIRE_ONLY.items()))), min_size=8, max_size=8))
def test_only_a_body_that_repeats_a_name_carries_its_elements(names, values):
    elements = [("ping", 1), *zip(names, values, strict=False)]
    request = decode_message(encode_op_msg_request(_document(elements), 3))
    assert isinstance(request, OpMsg)
    wire_names = [name for name, _ in elements]
    if len(set(wire_names)) == len(wire_names):
        assert request.repeated is None
        assert list(request.command) == wire_names
    else:
        assert request.repeated is not None
        assert [name for name, _ in request.repeated] == wire_names
        first: dict[str, object] = {}
        for name, value in request.repeated:
            first.setdefault(name, value)
        assert request.command == first  # each name's first value, in first-seen order
        assert list(request.command) == list(first)


def test_a_repeated_name_whose_first_value_nests_too_deeply_is_15():
    """Every element is validated, as mongod's Validated<BSONObj> walks the whole body: the rebuilt
    command (first values) and the last values alike."""
    deep: object = 1
    for _ in range(201):
        deep = {"a": deep}
    for elements in ([("ping", 1), ("x", deep), ("x", 1)], [("ping", 1), ("x", 1), ("x", deep)]):
        with pytest.raises(ParseError) as info:
            decode_message(encode_op_msg_request(_document(elements), 3))
        assert info.value.code == 15
