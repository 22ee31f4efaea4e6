"""Partial indexes on time-series collections: mongod's jstests/core/timeseries/timeseries_index_partial.js.

The user's partialFilterExpression becomes the buckets index's filter through the one bucket-filter
derivation (``filters.derive``) under mongod's createIndex policy: a predicate on the time or a
measurement field with no bucket-level form is refused (5916301); meta predicates are pushed down
as they are. Tidemark's bounds use ``$gt``.. where mongod writes ``$_internalExprGt``.., and a bound on
a measurement's minimum also keeps buckets whose minimum is NaN (the least number)."""

from __future__ import annotations

import datetime as dt

import pytest
from bson.regex import Regex
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("createIndexes", "listIndexes", "aggregate")

TIME, META = "time", "m"
T0 = dt.datetime(2000, 1, 1)
PREFIX = "Error translating non-metadata time-series predicate to operate on buckets: "


@pytest.fixture
def coll(db):
    db.create_collection("c", timeseries={"timeField": TIME, "metaField": META})
    docs = []
    for bucket, a0, bs in (("A", 0, [20, 16, 12, 8, 4]), ("B", 5, [99] * 5), ("C", 10, [0] * 5)):
        docs += [{TIME: T0 + dt.timedelta(seconds=i), META: {"bucket": bucket}, "a": a0 + i, "b": b}
                 for i, b in enumerate(bs)]
    db.c.insert_many(docs)
    return db.c


def _bucket_filter(db, name):
    return next(ix for ix in db["system.buckets.c"].list_indexes() if ix["name"] == name)["partialFilterExpression"]


@pytest.mark.parametrize("predicate", [
    {"a": {}}, {"a": {"b": 3}}, {"a": []}, {"a": [1]}, {"a": [1, 2]},  # comparison with a non-scalar
    {TIME: 7}, {TIME: "abc"},  # never true: the time field always holds a date
    {"a": None}, {"a": {"$eq": None}}, {"a": {"$ne": None}},  # null means null or missing
    {"a": Regex("a")},  # a regex query ({$eq: /a/} is a scalar match, below)
    {"a": {"$exists": False}},  # a bucket's min/max do not tell a field missing from some events
    {"$or": [{}, {"a": {}}]},  # reported even beside an always-true branch
    {"a": {"$in": [None]}}, {"a": {"$in": [Regex("abc")]}},
], ids=repr)
def test_predicates_without_a_bucket_level_form_are_refused(coll, predicate):
    with pytest.raises(OperationFailure) as info:
        coll.create_index([("a", 1)], partialFilterExpression=predicate)
    assert (info.value.code, info.value.details["codeName"]) == (5916301, "Location5916301")
    assert info.value.details["errmsg"].startswith(PREFIX)
    assert "a_1" not in {ix["name"] for ix in coll.list_indexes()}


@pytest.mark.parametrize(("predicate", "message"), [
    ({"a": {"b": 3}}, "operand can't be an object or array: { a: { $eq: { b: 3 } } }"),
    ({TIME: 7}, "This predicate will never be true, because the time field always contains a Date: "
                "{ time: { $eq: 7 } }"),
    ({"a": None}, "can't handle {$eq: null}: { a: { $eq: null } }"),
    ({"a": {"$in": [None]}}, "can't handle {$eq: null} predicate (inside $in predicate): { a: { $in: [ null ] } }"),
])
def test_the_refusal_says_why_and_shows_the_predicate(coll, predicate, message):
    with pytest.raises(OperationFailure) as info:
        coll.create_index([("a", 1)], partialFilterExpression=predicate)
    assert info.value.details["errmsg"] == PREFIX + message


@pytest.mark.parametrize(("predicate", "bucket_filter"), [
    ({}, {}),
    ({"$or": [{"m.a": {"$lt": 5}}, {"m.b": {"$lt": 6}}]}, {"$or": [{"meta.a": {"$lt": 5}}, {"meta.b": {"$lt": 6}}]}),
    ({"m.a": {"$in": [1, 2, 5]}}, {"meta.a": {"$in": [1, 2, 5]}}),
    ({"b": {"$gt": 12}}, {"control.max.b": {"$gt": 12}}),
    ({"a": {"$exists": True}}, {"control.min.a": {"$exists": True}}),
    ({TIME: {"$gt": dt.datetime(2020, 1, 1)}},
     {"$and": [{"control.max.time": {"$gt": dt.datetime(2020, 1, 1)}},
               {"control.min.time": {"$gt": dt.datetime(2019, 12, 31, 23)}}]}),
    # mongod's timeseries_index_partial.js: control.max < D + span as well
    ({TIME: {"$lt": dt.datetime(2020, 1, 1)}}, {"$and": [{"control.min.time": {"$lt": dt.datetime(2020, 1, 1)}},
                                                         {"control.max.time": {"$lt": dt.datetime(2020, 1, 1, 1)}}]}),
    ({"$and": [{TIME: {"$gt": T0}}, {"m.bucket": {"$gte": "B"}}, {"b": {"$gte": 0}}]},
     {"$and": [{"control.max.time": {"$gt": T0}}, {"control.min.time": {"$gt": T0 - dt.timedelta(hours=1)}},
               {"meta.bucket": {"$gte": "B"}}, {"control.max.b": {"$gte": 0}}]}),
], ids=repr)
def test_predicates_with_a_bucket_level_form_become_the_buckets_index_filter(db, coll, predicate, bucket_filter):
    coll.create_index([("a", 1)], name="p", partialFilterExpression=predicate)
    assert _bucket_filter(db, "p") == bucket_filter
    listed = next(ix for ix in coll.list_indexes() if ix["name"] == "p")
    assert listed["partialFilterExpression"] == predicate  # the view shows the user's filter


@pytest.mark.parametrize("predicate", [
    {"a": 5}, {"a": {"$eq": Regex("a")}}, {"a": {"$in": [1, 2, 5]}}, {"$or": [{"a": {"$lt": 5}}, {"b": {"$lt": 6}}]},
    {TIME: {"$eq": dt.datetime(2020, 1, 1)}}, {"$expr": {"$gt": ["$a", 1]}}, {"a.b": 5},
], ids=repr)
def test_other_predicates_mongod_accepts_are_accepted(coll, predicate):
    coll.create_index([("a", 1)], name="p", partialFilterExpression=predicate)


@pytest.mark.parametrize(("partial", "query"), [
    ({"b": {"$lt": 12}}, {"a": {"$lt": 999}, "b": {"$lt": 11}}),
    ({"b": {"$lte": 12}}, {"a": {"$lt": 999}, "b": {"$lte": 12}}),
    ({"b": {"$gt": 12}}, {"a": {"$lt": 999}, "b": {"$gt": 13}}),
    ({"b": {"$gte": 12}}, {"a": {"$lt": 999}, "b": {"$gte": 12}}),
    ({TIME: {"$lt": T0 + dt.timedelta(seconds=1)}}, {"a": {"$lt": 999}, TIME: {"$lte": T0}}),
    ({TIME: {"$gte": T0 + dt.timedelta(seconds=1)}}, {"a": {"$lt": 999}, TIME: {"$gte": T0 + dt.timedelta(seconds=2)}}),
], ids=repr)
def test_reads_through_a_partial_index_find_what_a_scan_finds(coll, partial, query):
    coll.insert_one({TIME: T0, META: {"bucket": "D"}, "a": 50, "b": float("nan")})  # a NaN minimum
    coll.insert_one({TIME: T0 + dt.timedelta(seconds=1), META: {"bucket": "D"}, "a": 51, "b": 3})
    coll.create_index([("a", 1)], partialFilterExpression=partial)
    hinted = [(d["a"], d[TIME]) for d in coll.aggregate([{"$match": query}], hint={"a": 1})]
    scanned = [(d["a"], d[TIME]) for d in coll.find(query).hint([("$natural", 1)])]
    assert sorted(hinted) == sorted(scanned) and scanned
