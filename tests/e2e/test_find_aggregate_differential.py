"""A find answers what the equivalent aggregate answers. In mongod a find with a filter, sort, skip, limit
and projection is the pipeline ``[$match, $sort, $skip, $limit, $project]`` (find commands are even
executed through it when they read a view, and since 4.4 both share one projection language), so the two
must return the same documents in the same order, or fail with the same code. Tidemark runs finds and
aggregates through separate front ends (command parsing, projection parsing, the sort/skip/limit and
top-k paths, count), which this family compares.

The family: a few random documents (nested documents, arrays of scalars and of documents, mixed numeric
types, null and missing, strings differing by case, dates), on a regular collection and on a time-series
collection holding the same documents as measurements; random filters (equality, ranges, ``$in``,
``$exists``, ``$type``, ``$elemMatch``, ``$size``, ``$or``), sorts over one or two paths (made total
with ``_id``), skip and limit, and projections from a grammar (inclusions and exclusions of top-level,
dotted and overlapping paths, ``_id`` either way, computed fields: field paths, ``$literal``, arithmetic
and ``$ifNull`` expressions). Checked: find == aggregate (the same sequence, or the same error code),
``count`` and ``countDocuments`` == the number of documents the find returns, a find's batches (a small
``batchSize``, read through getMore) == its single batch."""

from __future__ import annotations

import datetime

import pytest
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

_SCALARS = [0, 1, 2, -1, Int64(2), 1.5, -0.0, Decimal128("1"), "a", "A", "b", "", None, True, False,
            datetime.datetime(2020, 1, 1), datetime.datetime(1969, 7, 20)]
_SCALAR = st.sampled_from(_SCALARS)
_SUBDOC = st.dictionaries(st.sampled_from(["x", "y"]), _SCALAR, max_size=2)
_VALUE = st.one_of(_SCALAR, _SCALAR, _SCALAR, st.lists(_SCALAR, max_size=3), _SUBDOC,
                   st.lists(_SUBDOC, min_size=1, max_size=2))
_MISSING = object()
_BASE_TIME = datetime.datetime(2024, 5, 1)


@st.composite
def _document(draw, i):
    doc = {"_id": i, "t": _BASE_TIME + datetime.timedelta(seconds=draw(st.integers(0, 3600)))}
    for field, values in (("a", _VALUE), ("b", _SCALAR), ("c", st.one_of(_SUBDOC, _VALUE))):
        value = draw(st.one_of(st.just(_MISSING), values))
        if value is not _MISSING:
            doc[field] = value
    return doc


_DOCUMENTS = st.integers(1, 12).flatmap(lambda n: st.tuples(*[_document(i) for i in range(n)]))
_PATHS = ["a", "b", "c", "a.x", "c.x", "c.y", "a.0"]
_RANGE = ["$gt", "$gte", "$lt", "$lte", "$eq", "$ne"]
_LEAF = st.one_of(
    st.builds(lambda p, v: {p: v}, st.sampled_from(_PATHS), _SCALAR),
    st.builds(lambda p, o, v: {p: {o: v}}, st.sampled_from(_PATHS), st.sampled_from(_RANGE), _SCALAR),
    st.builds(lambda p, vs: {p: {"$in": vs}}, st.sampled_from(_PATHS), st.lists(_SCALAR, max_size=3)),
    st.builds(lambda p, b: {p: {"$exists": b}}, st.sampled_from(_PATHS), st.booleans()),
    st.builds(lambda p, t: {p: {"$type": t}}, st.sampled_from(_PATHS),
              st.sampled_from(["number", "string", "null", "array", "object", "date", "bool"])),
    st.builds(lambda o, v: {"a": {"$elemMatch": {o: v}}}, st.sampled_from(_RANGE[:4]), _SCALAR),
    st.builds(lambda n: {"a": {"$size": n}}, st.integers(0, 2)),
)
_FILTER = st.one_of(st.just({}), _LEAF, _LEAF,
                    st.builds(lambda fs: {"$or": fs}, st.lists(_LEAF, min_size=1, max_size=3)),
                    st.builds(lambda x, y: {"$and": [x, y]}, _LEAF, _LEAF))
_SORT = st.lists(st.tuples(st.sampled_from(["a", "b", "c", "a.x", "c.x", "t"]), st.sampled_from([1, -1])),
                 max_size=2, unique_by=lambda t: t[0])
_COMPUTED = st.sampled_from([
    "$b", "$a.x", "$c", {"$literal": 5}, {"$literal": "$notAPath"}, {"$ifNull": ["$b", "none"]},
    {"$add": [1, {"$ifNull": [{"$cond": [{"$isNumber": "$b"}, "$b", 0]}, 0]}]},
    {"$type": "$a"}, {"$size": {"$ifNull": [{"$cond": [{"$isArray": "$a"}, "$a", []]}, []]}},
    {"x": "$b", "y": {"$literal": 1}},
])
_PROJECTED = ["a", "b", "c", "a.x", "c.x", "c.y", "t", "n"]


@st.composite
def _projection(draw):
    kind = draw(st.sampled_from(["none", "include", "include", "exclude", "exclude", "mixed"]))
    if kind == "none":
        return None
    paths = draw(st.lists(st.sampled_from(_PROJECTED), min_size=1, max_size=3, unique=True))
    projection: dict = {}
    for path in paths:
        if kind == "include":
            projection[path] = draw(st.one_of(st.sampled_from([1, True]), _COMPUTED)) if path == "n" else draw(
                st.sampled_from([1, True]))
        elif kind == "exclude":
            projection[path] = draw(st.sampled_from([0, False]))
        else:  # (mixing is refused: both must refuse with the same code)
            projection[path] = draw(st.sampled_from([0, 1]))
    if draw(st.booleans()):
        projection["_id"] = draw(st.sampled_from([0, 1, False]))
    return projection


def _outcome(run):
    try:
        return run()
    except OperationFailure as failure:
        return ("error", failure.code)


def _find(coll, q, batch_size=0):
    options = {"filter": q["filter"], "skip": q["skip"], "limit": q["limit"], "sort": q["sort"],
               "batch_size": batch_size}
    if q["projection"] is not None:
        options["projection"] = q["projection"]
    return _outcome(lambda: list(coll.find(**options)))


def _aggregate(coll, q):
    pipeline = [{"$match": q["filter"]}, {"$sort": dict(q["sort"])}]
    if q["skip"]:
        pipeline.append({"$skip": q["skip"]})
    if q["limit"]:
        pipeline.append({"$limit": q["limit"]})
    if q["projection"] is not None:
        pipeline.append({"$project": q["projection"]})
    return _outcome(lambda: list(coll.aggregate(pipeline)))


def _check(db, docs, queries):
    db.plain.drop()
    db.drop_collection("series")
    db.create_collection("series", timeseries={"timeField": "t"})
    db.plain.insert_many([dict(d) for d in docs])
    db.series.insert_many([dict(d) for d in docs])
    for q in queries:
        for coll in (db.plain, db.series):
            context = {"collection": coll.name, "query": q, "docs": docs}
            found = _find(coll, q)
            assert found == _aggregate(coll, q), context
            assert _find(coll, q, batch_size=2) == found, context
            if isinstance(found, tuple):
                continue
            if not (q["skip"] or q["limit"]):
                assert coll.count_documents(q["filter"]) == len(found), context
                assert coll.database.command("count", coll.name, query=q["filter"])["n"] == len(found), context


@pytest.mark.slow
@pytest.mark.commands("find", "getMore", "aggregate", "count", "create", "insert")
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow, HealthCheck.data_too_large])
@given(docs=_DOCUMENTS, data=st.data())
def test_a_find_answers_as_its_aggregate(db, docs, data):
    queries = []
    for _ in range(data.draw(st.integers(1, 3))):
        sort = data.draw(_SORT) + [("_id", 1)]
        queries.append({
            "filter": data.draw(_FILTER), "sort": sort,
            "skip": data.draw(st.sampled_from([0, 0, 1, 3])), "limit": data.draw(st.sampled_from([0, 0, 1, 2, 5])),
            "projection": data.draw(_projection()),
        })
    _check(db, docs, queries)
