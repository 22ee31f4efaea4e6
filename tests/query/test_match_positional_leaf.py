"""An array reached at the end of a path through an array position is one value
(jstests/core/query/match_numeric_components.js): mongod's iterator yields it whole, so the leaf-array
rule (an array matches when one of its elements does) does not apply to it; an array reached by a
field name, even a numeric one ({a: {"0": [42]}}), still gets the rule."""

from __future__ import annotations

import pytest

from tidemark.query.match import compile_filter
from tidemark.query.paths import PositionalLeaf, get_path_values

DOCS = {
    "scalar_in_array": {"a": [42]},                # a.0 -> 42
    "array_in_array": {"a": [[42]]},               # a.0 -> [42], whole
    "field_named_0": {"a": {"0": [42]}},           # a.0 -> [42] by name: its elements count
    "doc_in_array": {"a": [{"0": [42]}]},          # a.0 -> {"0": [42]} by position, [42] by name
    "deep": {"a": [[[42]]]},                        # a.0 -> [[42]], a.0.0 -> [42] whole
    "second": {"a": [1, [42]]},                     # a.1 -> [42], whole
}


@pytest.mark.parametrize("query, matching", [
    ({"a.0": 42}, {"scalar_in_array", "field_named_0", "doc_in_array"}),
    ({"a.0": {"$in": [41, 42]}}, {"scalar_in_array", "field_named_0", "doc_in_array"}),
    ({"a.0": {"$gte": 42}}, {"scalar_in_array", "field_named_0", "doc_in_array"}),
    ({"a.0": {"$type": "number"}}, {"scalar_in_array", "field_named_0", "doc_in_array", "second"}),
    ({"a.0": {"$mod": [2, 0]}}, {"scalar_in_array", "field_named_0", "doc_in_array"}),
    ({"a.0": {"$all": [42]}}, {"scalar_in_array", "field_named_0", "doc_in_array"}),
    ({"a.0": {"$ne": 42}}, {"array_in_array", "deep", "second"}),
    ({"a.0": {"$nin": [42]}}, {"array_in_array", "deep", "second"}),
    ({"a.0": [42]}, {"array_in_array", "field_named_0", "doc_in_array"}),
    ({"a.0": {"$type": "array"}}, {"array_in_array", "field_named_0", "doc_in_array", "deep"}),
    ({"a.0": {"$size": 1}}, {"array_in_array", "field_named_0", "doc_in_array", "deep"}),
    ({"a.0": {"$elemMatch": {"$eq": 42}}}, {"array_in_array", "field_named_0", "doc_in_array"}),
    ({"a.0": {"$exists": True}}, set(DOCS)),
    # (a document element continues with the number as a field name, then is also taken by position)
    ({"a.0.0": 42}, {"array_in_array", "field_named_0", "doc_in_array"}),
    ({"a.0.0": [42]}, {"deep", "doc_in_array"}),
    ({"a.1": 42}, set()),
    ({"a.1": [42]}, {"second"}),
    ({"$or": [{"a.1": 42}, {"a.0": 42}]}, {"scalar_in_array", "field_named_0", "doc_in_array"}),
], ids=repr)
def test_positional_leaf_arrays_are_one_value(query, matching):
    predicate = compile_filter(query)
    assert {name for name, doc in DOCS.items() if predicate(doc)} == matching


def test_only_the_positional_traversal_marks_values():
    doc = {"a": [[42], {"0": [7]}]}
    plain = get_path_values(doc, "a.0")
    assert plain == [[42], [7]]
    marked = get_path_values(doc, "a.0", positional=True)
    assert [type(v) for v in marked] == [PositionalLeaf, list]
    assert marked[0].value == [42]
