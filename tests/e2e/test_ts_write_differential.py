"""Differential fuzz of the writes a time-series collection takes after its inserts: arbitrary deletes (7.0,
spec §6.3: any filter; matching measurements removed, a bucket that keeps some repacked under its ``_id``,
an emptied one deleted; ``deleteOne`` removes one matching measurement) and meta updates (spec §6.2: multi,
operator-style, every path inside the metaField; applied to each matching bucket's meta). After every write
the time-series collection holds what a regular collection holding the same measurements holds after the
same write, and reads that lean on each bucket's ``control.min``/``max`` (ranges on time and on a
measurement, the index on meta and time, counts) answer as the regular collection's — a repacked bucket
whose bounds were left too narrow, or a meta update that left a bucket under its old meta in an index or a
catalog, shows here.

The family: measurements with metas of several shapes (scalars, subdocuments, missing), times spread
over a few hours, measurements of mixed types; inserted in batches with some buckets settled to storage
and some still open; then a random sequence of deletes (deleteMany and deleteOne with filters on meta,
time, measurements, ``_id``, ``$or``/``$and``/``$nor``, ``$expr``), meta updates (``$set``, ``$unset``,
``$inc`` on numeric metas, ``$rename`` within the meta), more inserts (into the buckets deletes and
updates left) and settles."""

from __future__ import annotations

import datetime as dt

import pytest
from bson.int64 import Int64
from harness import ts_differential
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

_START = dt.datetime(2024, 3, 1, 12, 0)
_MISSING = object()
_METAS = st.one_of(
    st.sampled_from(["a", "b", 1, None]),
    st.fixed_dictionaries({"h": st.sampled_from(["a", "b"])}, optional={"r": st.sampled_from([1, 2, 2.5, Int64(3)])}),
    st.just(_MISSING),
)
_VALUES = st.one_of(st.integers(-3, 3), st.sampled_from([1.5, -0.0, "s", None, Int64(7)]), st.just(_MISSING))


@st.composite
def _measurement(draw, i):
    doc = {"_id": i, "t": _START + dt.timedelta(seconds=draw(st.integers(0, 4 * 3600)))}
    for field, values in (("m", _METAS), ("x", _VALUES), ("y", _VALUES)):
        value = draw(values)
        if value is not _MISSING:
            doc[field] = value
    if isinstance(doc.get("m"), dict):  # (a bucket's meta is stored normalized, its fields sorted: spec §3.6)
        doc["m"] = dict(sorted(doc["m"].items()))
    return doc


def _batch(start, size):
    return st.tuples(*[_measurement(start + i) for i in range(size)])


_TIME = st.builds(lambda s: _START + dt.timedelta(seconds=s), st.integers(0, 4 * 3600))
_LEAF = st.one_of(
    st.builds(lambda v: {"m": v}, st.sampled_from(["a", "b", 1, None, {"h": "a"}, {"h": "b", "r": 1}])),
    st.builds(lambda v: {"m.h": v}, st.sampled_from(["a", "b", None])),
    st.builds(lambda o, v: {"m.r": {o: v}}, st.sampled_from(["$gt", "$lte", "$eq"]), st.sampled_from([1, 2, 2.5])),
    st.builds(lambda o, v: {"t": {o: v}}, st.sampled_from(["$gt", "$gte", "$lt", "$lte"]), _TIME),
    st.builds(lambda o, v: {"x": {o: v}}, st.sampled_from(["$gt", "$gte", "$lt", "$lte", "$eq", "$ne"]),
              st.sampled_from([0, 1, 2, 1.5, "s", None])),
    st.builds(lambda b: {"y": {"$exists": b}}, st.booleans()),
    st.builds(lambda ids: {"_id": {"$in": ids}}, st.lists(st.integers(0, 40), max_size=4)),
    st.builds(lambda v: {"$expr": {"$gt": ["$x", v]}}, st.integers(-2, 2)),
)
_FILTER = st.one_of(
    _LEAF, _LEAF, st.just({}),
    st.builds(lambda op, fs: {op: fs}, st.sampled_from(["$or", "$and", "$nor"]), st.lists(_LEAF, min_size=1, max_size=3)),
)
_META_FILTER = st.one_of(
    st.just({}),
    st.builds(lambda v: {"m": v}, st.sampled_from(["a", "b", 1, None, {"h": "a"}])),
    st.builds(lambda v: {"m.h": v}, st.sampled_from(["a", "b"])),
    st.builds(lambda v: {"m.r": {"$gte": v}}, st.sampled_from([1, 2])),
)
_META_UPDATE = st.one_of(
    st.builds(lambda v: {"$set": {"m.h": v}}, st.sampled_from(["a", "b", "c", 5])),
    st.builds(lambda v: {"$set": {"m": v}}, st.sampled_from(["a", "z", {"h": "b"}, 3])),
    st.just({"$unset": {"m.r": ""}}),
    st.just({"$rename": {"m.h": "m.g"}}),
)


@st.composite
def _write(draw, next_id):
    kind = draw(st.sampled_from(["deleteMany", "deleteMany", "deleteOne", "update", "update", "inc", "insert",
                                 "settle"]))
    if kind in ("deleteMany", "deleteOne"):
        return kind, draw(_FILTER)
    if kind == "update":  # (a path below a scalar meta fails part-way: only objects and missing metas)
        update = draw(_META_UPDATE)
        filter = draw(_META_FILTER)
        if "m" not in update.get("$set", {}):
            filter = {"$and": [filter, {"$or": [{"m": {"$type": "object"}}, {"m": {"$exists": False}}]}]}
        return kind, (filter, update)
    if kind == "inc":  # (only where m.r is a number: an $inc that fails part-way leaves no common state)
        return "update", ({"$and": [draw(_META_FILTER), {"m.r": {"$type": "number"}}]}, {"$inc": {"m.r": 1}})
    if kind == "insert":
        return kind, list(draw(_batch(next_id, draw(st.integers(1, 6)))))
    return kind, None


def _contents(coll, filter=None):
    return sorted(map(ts_differential.normal, coll.find(filter or {})), key=repr)


def _check_reads(db, context):
    assert _contents(db.ts) == _contents(db.reg), context
    for filter in ({"t": {"$gte": _START + dt.timedelta(hours=2)}}, {"t": {"$lt": _START + dt.timedelta(hours=1)}},
                   {"x": {"$gte": 1}}, {"x": {"$lte": -1}}, {"m.h": "a"}, {"m": "a"},
                   {"m.h": "b", "t": {"$gt": _START + dt.timedelta(minutes=30)}}):
        assert _contents(db.ts, filter) == _contents(db.reg, filter), {**context, "read": filter}
        assert db.ts.count_documents(filter) == db.reg.count_documents(filter), {**context, "count": filter}
    group = [{"$group": {"_id": "$m", "n": {"$sum": 1}, "hi": {"$max": "$t"}, "sx": {"$sum": {"$cond": [{"$isNumber": "$x"}, "$x", 0]}}}}]
    assert sorted(map(ts_differential.normal, db.ts.aggregate(group)), key=repr) == sorted(
        map(ts_differential.normal, db.reg.aggregate(group)), key=repr), {**context, "read": group}


def _apply(db, write, context):
    kind, arg = write
    if kind == "deleteMany":
        assert db.ts.delete_many(arg).deleted_count == db.reg.delete_many(arg).deleted_count, context
    elif kind == "deleteOne":
        before = {d["_id"] for d in db.ts.find({}, {"_id": 1})}
        deleted = db.ts.delete_one(arg).deleted_count
        gone = before - {d["_id"] for d in db.ts.find({}, {"_id": 1})}
        assert deleted == len(gone) == min(1, db.reg.count_documents(arg)), context
        if gone:  # any one matching measurement: the one the regular collection loses too
            (one,) = gone
            assert db.reg.count_documents({"$and": [arg, {"_id": one}]}) == 1, context
            db.reg.delete_one({"_id": one})
    elif kind == "update":
        filter, update = arg
        db.ts.update_many(filter, update)
        db.reg.update_many(filter, update)
    elif kind == "insert":
        db.ts.insert_many([dict(d) for d in arg])
        db.reg.insert_many([dict(d) for d in arg])
    else:
        db.ts.delete_many({"_id": "none"})  # settles every open bucket


@pytest.mark.slow
@pytest.mark.commands("insert", "delete", "update", "find", "count", "aggregate", "createIndexes", "create")
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow, HealthCheck.data_too_large])
@given(first=st.integers(1, 12).flatmap(lambda n: _batch(0, n)), data=st.data())
def test_writes_leave_a_time_series_collection_as_a_regular_one(db, first, data):
    db.drop_collection("ts")
    db.drop_collection("reg")
    granularity = data.draw(st.sampled_from(["seconds", "minutes", "hours"]))
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m", "granularity": granularity})
    db.create_collection("reg")
    if data.draw(st.booleans()):
        db.ts.create_index([("m.h", 1), ("t", -1)])
    settle_first = data.draw(st.booleans())
    db.ts.insert_many([dict(d) for d in first])
    db.reg.insert_many([dict(d) for d in first])
    if settle_first:
        db.ts.delete_many({"_id": "none"})
    next_id = 100
    writes = []
    for _ in range(data.draw(st.integers(1, 6))):
        write = data.draw(_write(next_id))
        next_id += 10
        writes.append(write)
        context = {"granularity": granularity, "first": first, "writes": writes}
        _apply(db, write, context)
        _check_reads(db, context)
