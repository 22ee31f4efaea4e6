"""Find and aggregation projection rules of mongod's projection_parser.cpp (7.0): which projections
are inclusions, the recorded position of a positional ``$``, the depth of a find ``$slice``, the
``$elemMatch`` projection's filter and the codes of malformed projections."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tidemark.protocol.errors import MongoError
from tidemark.query.project import compile_projection

DOC = {"_id": 1, "a": 1, "b": 2, "s": [1, 2, 3]}
SCORE = {"$meta": "textScore"}


def codes(spec, *, filter=None, aggregation=False, doc=None) -> int:
    with pytest.raises(MongoError) as info:
        fn = compile_projection(spec, filter=filter, aggregation=aggregation)
        fn(doc if doc is not None else DOC)
    return info.value.code


# --------------------------------------------------------------------------------------------------
# computeProjectionType: projections naming only _id and find-only operators
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("spec, find_keys, agg_keys", [
    ({"x": SCORE}, {"_id", "a", "b", "s"}, {"_id"}),
    ({"_id": 0, "x": SCORE}, {"a", "b", "s"}, set()),
    ({"_id": 1, "x": SCORE}, {"_id"}, {"_id"}),
    ({"a": 0, "x": SCORE}, {"_id", "b", "s"}, {"_id", "b", "s"}),
    ({"a": 1, "x": SCORE}, {"_id", "a"}, {"_id", "a"}),
], ids=str)
def test_meta_field_alone_is_exclusion_in_find_and_inclusion_in_aggregate(spec, find_keys, agg_keys):
    # the text score is missing here: the field is left out, what remains shows the projection's type
    assert set(compile_projection(spec)(DOC)) == find_keys
    assert set(compile_projection(spec, aggregation=True)(DOC)) == agg_keys


@pytest.mark.parametrize("spec, expected", [
    ({"s": {"$slice": 1}}, {"_id": 1, "a": 1, "b": 2, "s": [1]}),
    ({"_id": 0, "s": {"$slice": 1}}, {"a": 1, "b": 2, "s": [1]}),
    ({"_id": 1, "s": {"$slice": 1}}, {"_id": 1, "s": [1]}),
    ({"s": {"$elemMatch": {"$gt": 1}}}, {"_id": 1, "s": [2]}),
    ({"_id": 0, "s": {"$elemMatch": {"$gt": 1}}}, {"s": [2]}),
    ({"s": {"$elemMatch": {"$gt": 1}}, "a": 0}, {"_id": 1, "b": 2, "s": [2]}),
    ({"s": {"$elemMatch": {"$gt": 5}}, "a": 0}, {"_id": 1, "b": 2}),
    ({"s": {"$slice": 1}, "t": {"$elemMatch": {"x": 1}}, "_id": 1}, {"_id": 1, "s": [1]}),
    ({"s": {"$slice": 1}, "t": {"$elemMatch": {"x": 1}}}, {"_id": 1, "a": 1, "b": 2, "s": [1]}),
], ids=str)
def test_find_only_operators_decide_the_type_as_mongod(spec, expected):
    assert compile_projection(spec)(DOC) == expected


# --------------------------------------------------------------------------------------------------
# positional $: the position the filter's matcher records
# --------------------------------------------------------------------------------------------------

PARALLEL = {"_id": 1, "a": [1, 2, 3], "b": [4, 5, 6], "c": [7, 8, 9], "x": [{"y": 1}, {"y": 2}]}


@pytest.mark.parametrize("filter, spec, expected", [
    ({"a": 2}, {"b.$": 1}, {"_id": 1, "b": [5]}),                          # a parallel array
    ({"a": 2, "b": 6}, {"c.$": 1}, {"_id": 1, "c": [9]}),                  # the last conjunct's position
    ({"$and": [{"a": 3}, {"a": 1}]}, {"c.$": 1}, {"_id": 1, "c": [7]}),
    ({"a": {"$in": [3, 2]}}, {"c.$": 1}, {"_id": 1, "c": [8]}),            # the first element matched
    ({"$or": [{"a": 3}, {"a": 2}]}, {"c.$": 1}, {"_id": 1, "c": [8]}),     # (an $in for mongod)
    ({"x.y": 2}, {"c.$": 1}, {"_id": 1, "c": [8]}),
    ({"x": {"$elemMatch": {"y": {"$gte": 2}}}}, {"x.$": 1}, {"_id": 1, "x": [{"y": 2}]}),
    ({"a": 2}, {"nope.$": 1}, {"_id": 1}),                                 # no such path: no error
    ({"a": 2}, {"b.$": 1, "_id": 0}, {"b": [5]}),
], ids=str)
def test_positional_uses_the_recorded_position(filter, spec, expected):
    assert compile_projection(spec, filter=filter)(PARALLEL) == expected


@pytest.mark.parametrize("filter, spec, code", [
    ({}, {"a.$": 1}, 51246),
    ({"b": [4, 5, 6]}, {"c.$": 1}, 51246),                                 # only the whole array matched
    ({"$or": [{"a": 1}, {"b": 5}]}, {"a.$": 1}, 51246),
    ({"$nor": [{"a": 0}]}, {"a.$": 1}, 51246),
    ({"a": {"$not": {"$gt": 5}}}, {"a.$": 1}, 51246),
    ({"a": {"$ne": 5}}, {"a.$": 1}, 51246),
    ({"c": 9}, {"x.$": 1}, 51247),                                         # position 2 past x's end
], ids=str)
def test_positional_without_a_usable_position_fails(filter, spec, code):
    assert codes(spec, filter=filter, doc=PARALLEL) == code


def test_positional_path_without_array_is_kept_and_first_array_is_reduced():
    doc = {"_id": 1, "q": [0, 1], "a": {"b": {"c": [1, 2, 3]}}, "d": [{"e": [1, 2]}, {"e": [3, 4]}]}
    assert compile_projection({"a.b.c.$": 1}, filter={"q": 1})(doc) == {"_id": 1, "a": {"b": {"c": [2]}}}
    assert compile_projection({"d.e.$": 1}, filter={"q": 1})(doc) == {"_id": 1, "d": [{"e": [3, 4]}]}
    assert compile_projection({"a.b.$": 1}, filter={"q": 1})(doc) == {"_id": 1, "a": {"b": {"c": [1, 2, 3]}}}


@given(st.lists(st.integers(0, 4), min_size=1, max_size=6), st.lists(st.integers(), max_size=6), st.integers(0, 4))
def test_positional_equality_picks_the_first_matching_index(a, b, v):
    doc = {"_id": 0, "a": a, "b": b}
    fn = compile_projection({"b.$": 1}, filter={"a": v})
    if v not in a or not b:
        if not b and v in a:
            with pytest.raises(MongoError) as info:
                fn(doc)
            assert info.value.code == 51247
        return
    index = a.index(v)
    if index >= len(b):
        with pytest.raises(MongoError) as info:
            fn(doc)
        assert info.value.code == 51247
    else:
        assert fn(doc) == {"_id": 0, "b": [b[index]]}


# --------------------------------------------------------------------------------------------------
# $slice depth, $elemMatch projection, errors
# --------------------------------------------------------------------------------------------------

def test_find_slice_applies_through_one_level_of_arrays_only():
    doc = {"a": [{"b": [1, 2, 3]}, [{"b": [1, 2, 3], "c": 1}], 5]}
    assert compile_projection({"a.b": {"$slice": 1}, "_id": 0})(doc) == {"a": [{"b": [1]}, [{"b": [1, 2, 3], "c": 1}], 5]}
    assert compile_projection({"a.b": {"$slice": 1}, "x": 1, "_id": 0})(doc) == {"a": [{"b": [1]}, [{"b": [1, 2, 3]}]]}


@pytest.mark.parametrize("arg, value", [
    ({"$in": [3, 2]}, [2]),
    ({}, [[9]]),                      # an empty $elemMatch: the first array or document
    ({"$gt": 1, "$lt": 3}, [2]),
    ({"y": 1}, [{"y": 1}]),
    ({"$elemMatch": {"$gt": 8}}, [[9]]),
], ids=str)
def test_elem_match_projection_is_the_filter_over_each_element(arg, value):
    doc = {"_id": 0, "s": ["x", 1, 2, 3, [9], {"y": 1}]}
    assert compile_projection({"s": {"$elemMatch": arg}})(doc) == {"_id": 0, "s": value}


@pytest.mark.parametrize("spec, code", [
    ({"s": {"$elemMatch": 1}}, 31274),
    ({"s.t": {"$elemMatch": {"x": 1}}}, 31275),
    ({"s": {"$elemMatch": {"$jsonSchema": {}}}}, 224),
    ({"s": {"$elemMatch": {"$or": [{"$expr": True}]}}}, 224),
    ({"s": {"$elemMatch": {"t": {"$elemMatch": {"$jsonSchema": {}}}}}}, 224),
    ({"s": {"$elemMatch": {"$where": "true"}}}, 2),
    ({"s.$": {"$slice": 1}}, 31271),
    ({"s.$": "x"}, 31308),
    ({".$": 1}, 5392900),
    ({"a": 0, "b": "$x"}, 31310),
    ({"a": 0, "b": {"$add": [1]}}, 31252),
    ({"s": {"$slice": [1, 2, 3]}}, 28724),    # no find $slice: the $slice expression, which fails on 1
    ({"s": {"$slice": [1, 0]}}, 28724),
    ({"s": {"$slice": [1]}}, 28667),
], ids=str)
def test_projection_errors(spec, code):
    assert codes(spec, filter={"s": 1}) == code


def test_positional_and_find_slice_in_aggregation():
    assert codes({"s.$": 1}, aggregation=True) == 31324
    # in $project, {$slice: [array, n]} is the expression
    assert compile_projection({"t": {"$slice": ["$s", 2]}}, aggregation=True)(DOC) == {"_id": 1, "t": [1, 2]}
