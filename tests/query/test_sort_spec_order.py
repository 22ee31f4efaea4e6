"""Sort-spec validation in mongod 7.0's SortPattern order (sort_pattern.cpp; sort_with_meta_operator.js):
each field in turn; an object must be ``{$meta: name}`` alone (17312, then 9) and names textScore or
randVal (searchScore 31218, searchHighlights 31219, anything else 31138) and its field name is never
read as a path; a non-object must be a number (15974) equal to 1 or -1 (15975), and only then is its
field name checked as a field path (40352 empty, 16410 '$'-prefixed, 15998 an empty part)."""

import math

import pytest
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.protocol.errors import MongoError
from tidemark.query.sort import parse_sort

_NAMES = st.sampled_from(["a", "b.c", "$a", "", "a..b", "$text", "_id"])
_METAS = st.sampled_from(["textScore", "randVal", "searchScore", "searchHighlights", "geoNearDistance", "bogus",
                          "1", 1, -1, 0.1, None])
_OBJECTS = st.one_of(
    _METAS.map(lambda m: {"$meta": m}),
    st.just({}),
    st.just({"$text": {"$search": "x"}}),
    st.just({"a": 1}),
    _METAS.map(lambda m: {"$meta": m, "x": 1}),
)
_NUMBERS = st.sampled_from([1, -1, 1.0, -1.0, Int64(1), Int64(-1), Decimal128("1"), Decimal128("-1"), 0, 2, 0.5,
                            -2.0, math.nan])
_VALUES = st.one_of(_OBJECTS, _NUMBERS, st.sampled_from(["asc", True, None]))


def expected_code(name, value) -> int | None:
    """The code mongod 7.0 gives one sort field (None: valid), written from SortPattern's checks."""
    if isinstance(value, dict):
        if next(iter(value), None) != "$meta":
            return 17312
        if len(value) != 1:
            return 9
        meta = value["$meta"]
        if meta in ("textScore", "randVal"):
            return None
        if meta == "geoNearDistance":
            return 224  # a known metadata sort Tidemark does not give (clear "not supported")
        return {"searchScore": 31218, "searchHighlights": 31219}.get(meta, 31138) if isinstance(meta, str) else 31138
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal128)):
        return 15974
    number = float(value.to_decimal()) if isinstance(value, Decimal128) else float(value)
    if number not in (1.0, -1.0):
        return 15975
    if name == "":
        return 40352
    if name.startswith("$"):
        return 16410
    if "" in name.split("."):
        return 15998
    return None


@settings(max_examples=400, deadline=None)
@given(fields=st.lists(st.tuples(_NAMES, _VALUES), min_size=1, max_size=4, unique_by=lambda f: f[0]))
def test_first_invalid_field_fails_with_mongods_code_in_sort_pattern_order(fields):
    spec = dict(fields)
    want = next((code for code in (expected_code(k, v) for k, v in spec.items()) if code is not None), None)
    if want is None:
        parsed = parse_sort(spec, allow_meta=True)
        assert [k for k, _ in parsed] == list(spec)
        return
    with pytest.raises(MongoError) as e:
        parse_sort(spec, allow_meta=True)
    assert e.value.code == want, (spec, e.value)


@pytest.mark.parametrize("meta,message", [
    (1, "Illegal $meta sort: $meta: 1"),
    ("bogus", 'Illegal $meta sort: $meta: "bogus"'),
    ("searchScore", "$meta sort by 'searchScore' metadata is not supported"),
    ("searchHighlights", "$meta sort by 'searchHighlights' metadata is not supported"),
])
def test_meta_sort_messages_are_mongods(meta, message):
    with pytest.raises(MongoError) as e:
        parse_sort({"a": {"$meta": meta}}, allow_meta=True)
    assert e.value.message == message


def test_meta_sort_field_name_is_not_a_path():
    assert parse_sort({"$text": {"$meta": "textScore"}, "": {"$meta": "randVal"}}, allow_meta=True) == [
        ("$text", "textScore"), ("", "randVal")]


def test_valid_meta_sorts_are_refused_where_the_caller_cannot_give_them():
    # (windows' sortBy, findAndModify): the known feature is not supported, distinct from invalid input
    for meta in ("textScore", "randVal"):
        with pytest.raises(MongoError) as e:
            parse_sort({"a": {"$meta": meta}})
        assert e.value.code == 224
