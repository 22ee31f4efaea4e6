"""Equality to null along paths with array positions ("a.0.b", "x.1.y"), as mongod has matched since 2.5.

A path that reaches a missing field of a document matches null; a path whose array position holds a scalar
reaches nothing, which does not: ``{"a.0.b": null}`` does not match ``{a: [5]}`` (Tidemark matched it,
found by a helper porting the $lookup equijoin jstests; the cases below are the matcher corpus that mirrors
mongod's, minimongo's "dotted keypaths, nulls, numeric indices, arrays"). Run as find and as $match, with
no index and with one on the path (the fetch re-checks what the bounds let through).
"""

from __future__ import annotations

import pytest
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("find", "aggregate", "createIndexes")

# (filter, document, matches). (*): the index keys follow the array position only, so the document has no
# null key; mongod's index plan then misses it (its known inconsistency, SERVER-64221, which its $lookup
# equijoin jstest records for index joins). Tidemark answers as the collection scan, index or not: a null
# bound on a path with a numeric component does not narrow the scan (index_bounds, c859dfd)
CASES = [
    ({"a.0.b": None}, {"a": [5]}, False),
    ({"x.1.y": None}, {"x": [7, {"y": 8}, 9]}, True),  # "1" tried as a key of the document element (*)
    ({"x.1.y": 8}, {"x": [7, {"y": 8}, 9]}, True),
    ({"a.1.b": None}, {"a": [7, {"b": 9}, {"1": {"b": "foo"}}]}, True),
    ({"a.1.b": 9}, {"a": [7, {"b": 9}, {"1": {"b": "foo"}}]}, True),
    ({"a.1.b": "foo"}, {"a": [7, {"b": 9}, {"1": {"b": "foo"}}]}, True),
    ({"a.1.b": 2}, {"a": [1, [{"b": 2}], 3]}, True),
    ({"a.1.b": None}, {"a": [1, [{"b": 2}], 3]}, False),
    ({"a.1": 4}, {"a": [{"1": 4}, 5]}, True),
    ({"a.1": 5}, {"a": [{"1": 4}, 5]}, True),
    ({"a.1": None}, {"a": [{"1": 4}, 5]}, False),
    ({"a.1.foo": 4}, {"a": [{"1": {"foo": 4}}, {"foo": 5}]}, True),
    ({"a.1.foo": 5}, {"a": [{"1": {"foo": 4}}, {"foo": 5}]}, True),
    ({"a.1.foo": None}, {"a": [{"1": {"foo": 4}}, {"foo": 5}]}, True),
    ({"a.1": None}, {"a": [7, 8, 9]}, False),
    ({"a.b": None}, {"a": [1]}, False),
    ({"a.b": None}, {"a": 5}, True),
    ({"a.0.b": None}, {"a": [{"b": 1}]}, True),  # the element lacks a field "0" (*)
    ({"a.0.b": None}, {"a": [[1]]}, False),
    ({"a.0.b": None}, {"a": [1, 2]}, False),
    ({"a.0.b": None}, {"a": [{"c": 1}]}, True),
    ({"a.0.b": {"$exists": False}}, {"a": [5]}, True),
    ({"a.0.b": {"$ne": None}}, {"a": [5]}, True),
]



@pytest.mark.parametrize("indexed", [False, True], ids=["no index", "index on the path"])
def test_null_along_array_positions(db, indexed):
    failures = []
    for i, (flt, doc, expected) in enumerate(CASES):
        coll = db[f"nullpos_{i}"]
        coll.drop()
        coll.insert_one({"_id": 1, **doc})
        coll.insert_one({"_id": 2, "other": 1})  # (a document that matches every null equality)
        path = next(iter(flt))
        if indexed:
            try:
                coll.create_index(path)
            except OperationFailure as failure:  # mongod refuses such an index too
                assert failure.code == 16746  # "Ambiguous field name found in array"
                continue
        found = 1 in [d["_id"] for d in coll.find(flt)]
        matched = 1 in [d["_id"] for d in coll.aggregate([{"$match": flt}])]
        if (found, matched) != (expected, expected):
            failures.append((flt, doc, expected, found, matched))
        coll.drop()
    assert failures == [], "\n".join(map(repr, failures))
