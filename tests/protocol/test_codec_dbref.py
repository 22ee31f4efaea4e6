"""{$ref, $id} subdocuments decode as the plain documents they are (protocol/codec.py): pymongo's decoder
alone makes each a ``DBRef`` with its fields reordered, which no path, update, projection or index of the
server walks into. The family: documents of any nesting whose subdocuments hold $ref/$id/$db among other
fields in any order, alone, in arrays, in arrays of arrays."""

from typing import Any

import bson
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.protocol import sliced_decode
from tidemark.protocol.codec import CODEC_OPTIONS, decode, decode_all

_KEYS = st.sampled_from(["$ref", "$id", "$db", "a", "b", "other"])
_SCALARS = st.one_of(st.integers(-5, 5), st.text("xyz", max_size=3), st.none(), st.booleans())


def _documents(children: Any) -> Any:
    return st.lists(st.tuples(_KEYS, children), max_size=5, unique_by=lambda kv: kv[0]).map(dict)


_VALUES = st.recursive(_SCALARS, lambda children: st.one_of(_documents(children), st.lists(children, max_size=4)),
                       max_leaves=25)
_TOP = st.lists(st.tuples(st.sampled_from(["sub", "links", "x", "y"]), _VALUES), max_size=4,
                unique_by=lambda kv: kv[0]).map(dict)


def _shape(value: Any) -> Any:
    """``value`` with every document as its list of (type, key, value): equal shapes mean equal types,
    fields and field order all the way down."""
    if isinstance(value, dict):
        return [(type(value), k, _shape(v)) for k, v in value.items()]
    if isinstance(value, list):
        return (list, [_shape(v) for v in value])
    return (type(value), value)


@settings(max_examples=300, deadline=None)
@given(doc=_TOP)
def test_every_document_decodes_as_sent(doc):
    data = bson.encode(doc)
    assert _shape(decode(data)) == _shape(doc)
    assert _shape(decode(memoryview(data))) == _shape(doc)
    assert [_shape(d) for d in decode_all(data + bson.encode({"n": 1}))] == [_shape(doc), _shape({"n": 1})]
    assert _shape(sliced_decode.decode(data)) == _shape(doc)


@settings(max_examples=200, deadline=None)
@given(doc=_TOP)
def test_without_a_ref_field_the_decode_is_pymongos(doc):
    data = bson.encode(doc)
    if b"$ref\x00" not in data:
        assert _shape(decode(data)) == _shape(bson.decode(data, codec_options=CODEC_OPTIONS))


def test_dbref_shaped_subdocuments_keep_their_order_at_any_depth():
    doc = {"a": {"$id": 1, "$ref": "x", "z": 2}, "l": [{"$ref": "c", "$id": 3, "$db": "d"}, 4,
                                                         [{"q": {"$ref": "r", "$id": 5}}]]}
    for _ in range(300):  # deeper than any recursion would go
        doc = {"n": doc}
    got = decode(bson.encode(doc))
    assert _shape(got) == _shape(doc)


def test_a_malformed_document_with_a_ref_field_is_still_invalid_bson():
    data = bytearray(bson.encode({"a": {"$ref": "x", "$id": 1}, "s": "hello"}))
    data[-8] = 0xFF  # inside the string's bytes: not UTF-8
    try:
        decode(bytes(data))
    except bson.errors.InvalidBSON:
        return
    raise AssertionError("decoded a malformed document")
