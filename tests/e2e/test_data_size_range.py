"""dataSize measures a key range and stops at its limits, as mongod 7.0's CmdDataSize (dbcommands.cpp;
jstests/core/diagnostics/datasize/datasize_validation.js, datasize2.js): with ``min``/``max`` it scans
``[min, max)`` of an index ``keyPattern`` (else ``min``'s fields, ascending) prefixes, one neither sparse,
partial, multikey nor collated (else 96 "Couldn't find valid index containing key pattern"), the bounds
extended with MinKey/MaxKey over the index's further fields (a bound naming other fields: 16634);
``maxObjects``/``maxSize`` stop it one document past them with ``maxReached``; ``estimate`` counts the
average size; only one of min/max is 2; the IDL types are checked (14).

Tidemark ignored min, max, keyPattern, maxObjects and maxSize: every dataSize answered the whole
collection. The test draws documents, an index (ascending or descending fields, one or two) and bounds,
and checks count and size against the documents whose key falls in the range; and the limits, errors and
the clustered index."""

from __future__ import annotations

import bson
import pytest
from bson.max_key import MaxKey
from bson.min_key import MinKey
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("dataSize", "insert", "createIndexes", "create")

values = st.integers(min_value=-5, max_value=5)


def _data_size(db, coll: str, **args) -> dict:
    reply = db.command({"dataSize": f"{db.name}.{coll}", **args})
    reply.pop("ok")
    return reply


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(docs=st.lists(st.fixed_dictionaries({"a": values, "b": values}), min_size=1, max_size=30),
       fields=st.sampled_from([[("a", 1)], [("a", -1)], [("a", 1), ("b", 1)], [("a", 1), ("b", -1)],
                               [("a", -1), ("b", 1)]]),
       low=values, high=values, name_pattern=st.booleans(), estimate=st.booleans())
def test_a_range_of_an_index_is_measured(db, docs, fields, low, high, name_pattern, estimate):
    db.drop_collection("r")
    db.r.insert_many([dict(d) for d in docs])
    db.r.create_index(fields)
    first, direction = fields[0]
    args = {"min": {first: low}, "max": {first: high}, "estimate": estimate}
    if name_pattern or direction < 0:  # (a descending index is found only by its own pattern)
        args["keyPattern"] = {first: direction}
    documents = list(db.r.find())
    sizes = {d["_id"]: len(bson.encode(d)) for d in documents}
    # the range in the index's order: [min, max) on the first field; the MinKey/MaxKey extension of
    # the other fields takes every value of them at both ends
    lo, hi = low * direction, high * direction
    inside = [d for d in documents if lo <= d[first] * direction < hi]
    reply = _data_size(db, "r", **args)
    average = sum(sizes.values()) // len(sizes)
    expected = average * len(inside) if estimate else sum(sizes[d["_id"]] for d in inside)
    assert reply == {"estimate": estimate, "size": expected, "numObjects": len(inside), "millis": 0}


@pytest.mark.parametrize("limit, field", [(1, "maxObjects"), (3, "maxObjects"), (100, "maxSize"), (1, "maxSize")])
def test_limits_stop_one_document_past_them(db, limit, field):
    db.l.insert_many([{"_id": i, "s": "x" * 20} for i in range(10)])
    size = len(bson.encode({"_id": 0, "s": "x" * 20}))
    reply = _data_size(db, "l", **{field: limit})
    n = limit + 1 if field == "maxObjects" else limit // size + 1
    assert reply == {"estimate": False, "size": n * size, "numObjects": n, "millis": 0, "maxReached": True}
    ranged = _data_size(db, "l", keyPattern={"_id": 1}, min={"_id": 2}, max={"_id": 9}, **{field: limit})
    assert ranged["numObjects"] == min(n, 7)


def test_limits_not_reached(db):
    db.l.insert_many([{"_id": i} for i in range(5)])
    assert _data_size(db, "l", maxObjects=5)["numObjects"] == 5
    assert "maxReached" not in _data_size(db, "l", maxObjects=5)


@pytest.mark.parametrize("index, args, code", [
    ({"arr": 1}, {"min": {"arr": 1}, "max": {"arr": 3}}, 96),  # multikey
    ({"a": 1}, {"min": {"b": 1}, "max": {"b": 3}}, 96),  # no index on b
    ({"a": -1}, {"min": {"a": 1}, "max": {"a": 3}}, 96),  # inferred {a: 1} does not prefix {a: -1}
    ({"a": 1}, {"keyPattern": {"a": 1}, "min": {"b": 1}, "max": {"b": 3}}, 16634),
    ({"a": 1}, {"min": {"a": 1}}, 2),
    ({"a": 1}, {"max": {"a": 1}}, 2),
    ({"a": 1}, {"min": {}, "max": {"a": 1}}, 2),
    ({"a": 1}, {"min": 1, "max": 2}, 14),
    ({"a": 1}, {"maxObjects": "x"}, 14),
    ({"a": 1}, {"estimate": "x"}, 14),
])
def test_refusals(db, index, args, code):
    db.e.insert_one({"a": 1, "b": 1, "arr": [1, 2]})
    db.e.create_index(list(index.items()))
    with pytest.raises(OperationFailure) as raised:
        db.command({"dataSize": f"{db.name}.e", **args})
    assert raised.value.code == code, raised.value.details


@pytest.mark.parametrize("spec", [{"sparse": True}, {"partialFilterExpression": {"a": {"$gt": 0}}},
                                  {"collation": {"locale": "fr"}}])
def test_unusable_indexes_are_passed_over(db, spec):
    db.u.insert_many([{"a": i} for i in range(5)])
    db.u.create_index("a", **spec)
    with pytest.raises(OperationFailure) as raised:
        db.command({"dataSize": f"{db.name}.u", "min": {"a": 1}, "max": {"a": 3}})
    assert raised.value.code == 96


def test_the_clustered_index_is_a_range_too(db):
    db.create_collection("c", clusteredIndex={"key": {"_id": 1}, "unique": True})
    db.c.insert_many([{"_id": i} for i in range(20)])
    reply = _data_size(db, "c", min={"_id": 5}, max={"_id": 15})
    assert (reply["numObjects"], reply["size"]) == (10, 10 * len(bson.encode({"_id": 0})))


def test_compound_bounds_extend_with_min_and_max_keys(db):
    db.x.insert_many([{"a": a, "b": b} for a in range(3) for b in range(3)])
    db.x.create_index([("a", 1), ("b", 1)])
    assert _data_size(db, "x", min={"a": 1}, max={"a": 2})["numObjects"] == 3
    assert _data_size(db, "x", min={"a": 1, "b": MinKey()}, max={"a": 1, "b": MaxKey()})["numObjects"] == 3
    assert _data_size(db, "x", keyPattern={"a": 1, "b": 1}, min={"a": 0, "b": 2}, max={"a": 2, "b": 1})[
        "numObjects"] == 5


def test_a_missing_or_empty_collection_measures_nothing(db):
    assert _data_size(db, "missing", min={"a": 1}, max={"a": 2}) == {"size": 0, "numObjects": 0, "millis": 0}
    db.create_collection("empty")
    assert _data_size(db, "empty", min={"zz": 1}, max={"zz": 2}) == {"size": 0, "numObjects": 0, "millis": 0}
