"""Find projections: inclusion/exclusion, _id rules, dotted paths through arrays, $slice, $elemMatch,
positional $, computed fields and mongod's errors for invalid mixes."""

import pytest

from tidemark.protocol.errors import MongoError
from tidemark.query.project import compile_projection, projection_is_inclusion

DOC = {
    "_id": 1,
    "a": 1,
    "b": {"c": 2, "d": 3},
    "arr": [{"x": 1, "y": 2}, {"x": 5, "y": 6}, 7],
    "n": [1, 2, 3, 4, 5],
}

CASES = [
    ({"a": 1}, {"_id": 1, "a": 1}),
    ({"a": 1, "_id": 0}, {"a": 1}),
    (
        {"a": 0},
        {
            "_id": 1,
            "b": {"c": 2, "d": 3},
            "arr": [{"x": 1, "y": 2}, {"x": 5, "y": 6}, 7],
            "n": [1, 2, 3, 4, 5],
        },
    ),
    ({"_id": 0}, {k: v for k, v in DOC.items() if k != "_id"}),
    ({"_id": 1}, {"_id": 1}),
    ({"b.c": 1}, {"_id": 1, "b": {"c": 2}}),
    ({"b": {"c": 1}}, {"_id": 1, "b": {"c": 2}}),
    ({"b.c": 0, "arr": 0, "n": 0}, {"_id": 1, "a": 1, "b": {"d": 3}}),
    ({"arr.x": 1}, {"_id": 1, "arr": [{"x": 1}, {"x": 5}]}),
    ({"arr.x": 0, "b": 0, "n": 0, "a": 0}, {"_id": 1, "arr": [{"y": 2}, {"y": 6}, 7]}),
    ({"missing": 1}, {"_id": 1}),
    ({"a.z": 1}, {"_id": 1}),
    ({"n": {"$slice": 2}, "_id": 0, "a": 1}, {"a": 1, "n": [1, 2]}),
    ({"n": {"$slice": -2}}, {**DOC, "n": [4, 5]}),
    ({"n": {"$slice": [1, 2]}}, {**DOC, "n": [2, 3]}),
    ({"n": {"$slice": [-2, 5]}}, {**DOC, "n": [4, 5]}),
    ({"arr": {"$elemMatch": {"x": {"$gt": 2}}}}, {"_id": 1, "arr": [{"x": 5, "y": 6}]}),
    ({"arr": {"$elemMatch": {"x": 99}}}, {"_id": 1}),
    ({"s": "$b.c", "_id": 0}, {"s": 2}),
    ({"s": {"$literal": 1}, "a": 1}, {"_id": 1, "a": 1, "s": 1}),
    ({"s": "$nope", "_id": 0}, {}),
    ({"first": {"$slice": ["$n", 2]}, "_id": 0}, {"first": [1, 2]}),  # aggregation $slice expression
]


@pytest.mark.parametrize("spec,expected", CASES, ids=[str(i) for i in range(len(CASES))])
def test_projection_results(spec, expected):
    assert compile_projection(spec)(DOC) == expected


def test_projection_never_mutates_input():
    doc = {"_id": 1, "a": {"b": 1, "c": 2}, "l": [1, 2, 3]}
    before = repr(doc)
    compile_projection({"a.b": 0, "l": {"$slice": 1}})(doc)
    compile_projection({"a.b": 1})(doc)
    assert repr(doc) == before


def test_positional_projection_keeps_first_matching_element():
    doc = {"_id": 1, "grades": [80, 95, 97], "other": 1}
    proj = compile_projection({"grades.$": 1}, filter={"grades": {"$gte": 90}})
    assert proj(doc) == {"_id": 1, "grades": [95]}
    docs = {"_id": 2, "s": [{"k": "a", "v": 1}, {"k": "b", "v": 2}]}
    assert compile_projection({"s.$": 1}, filter={"s.k": "b"})(docs) == {"_id": 2, "s": [{"k": "b", "v": 2}]}


ERRORS = [
    ({"a": 1, "b": 0}, 31254, "Cannot do exclusion on field b in inclusion projection"),
    ({"a": 0, "b": 1}, 31253, "Cannot do inclusion on field b in exclusion projection"),
    ({"a": 1, "a.b": 1}, 31249, "Path collision at a.b remaining portion b"),
    ({"a.b": 1, "a": 1}, 31250, "Path collision at a"),
    # a "$x" string is a literal operand, not an expression object: mongod's parseLiteral answers 31310
    ({"a": 0, "s": "$x"}, 31310, 'Cannot use an expression s: "$x" in an exclusion projection'),
    ({"a": 0, "s": {"$add": [1]}}, 31252, "Cannot use expression other than $meta in exclusion projection"),
    ({"a.$": 1, "b.$": 1}, 31276, "Cannot specify more than one positional projection per query."),
    # what is no find $slice is read as the $slice expression (projection_parser.cpp), failing as it fails
    ({"a": {"$slice": "x"}}, 28667, "Expression $slice takes at least 2 arguments"),
    ({"a": {}}, 51270, "An empty sub-projection is not a valid value"),
    # (no 31277 for a positional path the filter does not name: positional_projection.js, mongod 5.0+)
    # the code tells which came first (projection_parser.cpp): $elemMatch after a positional is 31255
    ({"a.$": 1, "b": {"$elemMatch": {"x": 1}}}, 31255, "Cannot specify positional operator and $elemMatch."),
    ({"b": {"$elemMatch": {"x": 1}}, "a.$": 1}, 31256, "Cannot specify positional operator and $elemMatch."),
]


@pytest.mark.parametrize("spec,code,message", ERRORS, ids=[str(i) for i in range(len(ERRORS))])
def test_invalid_projections(spec, code, message):
    with pytest.raises(MongoError) as info:
        compile_projection(spec, filter={"a": 1})
    assert info.value.code == code
    assert message in info.value.message


def test_projection_is_inclusion():
    assert projection_is_inclusion({"a": 1, "_id": 0})
    assert not projection_is_inclusion({"a": 0})
    assert not projection_is_inclusion({"_id": 0})
    assert projection_is_inclusion({"x": "$a"})
    assert not projection_is_inclusion({"n": {"$slice": 1}})


def test_positional_projection_requires_a_filter():
    with pytest.raises(MongoError) as info:
        compile_projection({"a.$": 1})
    assert info.value.code == 51050


# A computed dotted path whose value is missing still makes the documents on its way: mongod replaces a
# non-document there by "a new document of all the computed values" (ProjectionNode::
# applyExpressionsToValue), so {"obj.f": "$nope"} gives obj: {} whatever obj was: missing, a scalar, a
# document (projected), or an array (each document element projected, scalars dropped by the inclusion).
MISSING_VALUE_CASES = [
    ({"_id": 1}, {"obj.f": "$nope"}, {"_id": 1, "obj": {}}),
    ({"_id": 1, "obj": 5}, {"obj.f": "$nope"}, {"_id": 1, "obj": {}}),
    ({"_id": 1, "obj": {"y": 1}}, {"obj.f": "$nope"}, {"_id": 1, "obj": {}}),
    ({"_id": 1, "obj": {"y": 1}}, {"obj.y": 1, "obj.f": "$nope"}, {"_id": 1, "obj": {"y": 1}}),
    # (the scalar element keeps its place, then becomes a document of the computed values: mongod 7.0's
    # projection_node.cpp applyProjectionsToValue + applyExpressionsToValue)
    ({"_id": 1, "obj": [1, {"x": 1}]}, {"obj.f": "$nope"}, {"_id": 1, "obj": [{}, {}]}),
    ({"_id": 1, "obj": "s"}, {"obj.g.h": "$nope", "_id": 0}, {"obj": {"g": {}}}),
    ({"_id": 1, "obj": 5}, {"obj.f": "$_id"}, {"_id": 1, "obj": {"f": 1}}),
]


@pytest.mark.parametrize(("doc", "spec", "expected"), MISSING_VALUE_CASES)
def test_a_computed_path_with_a_missing_value_still_makes_its_documents(doc, spec, expected):
    assert compile_projection(spec)(doc) == expected
