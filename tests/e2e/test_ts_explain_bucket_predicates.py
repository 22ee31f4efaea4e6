"""Issue 25 item 13: explain writes a time-series read's bucket-level predicate as mongod 7.0 does
(``bucket_unpacker.cpp`` ``createComparisonPredicate`` for a collection without mixed-schema buckets):
``$_internalExpr*`` comparisons on ``control.min``/``control.max`` (no ``$type`` guard), a time
comparison with its ``D ± bucketMaxSpanSeconds`` bound and bucket ``_id`` bound (dropped once the
collection uses the extended date range), ``$exists`` on both control sides. What runs is unchanged:
Tidemark's own filter stays in the plan's ``timeseries`` details, and the shown one, run on
``system.buckets``, keeps the buckets the read unpacked."""

from __future__ import annotations

import datetime as dt

import pytest
from bson.codec_options import CodecOptions, DatetimeConversion
from bson.datetime_ms import DatetimeMS
from bson.objectid import ObjectId

pytestmark = pytest.mark.commands("explain", "find", "delete", "insert")

T0 = dt.datetime(2024, 3, 1)
SPAN = dt.timedelta(seconds=3600)
CLOSED = {"control.closed": {"$not": {"$eq": True}}}


@pytest.fixture
def ts(db):
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    db.ts.insert_many([{"t": T0 + dt.timedelta(minutes=7 * i), "m": i % 3, "v": i} for i in range(40)])
    return db.ts


def _planner(db, flt, coll="ts"):
    reply = db.command("explain", {"find": coll, "filter": flt}, verbosity="executionStats")
    return reply["stages"][0]["$cursor"]


def _oid(when: dt.datetime, *, high: bool) -> ObjectId:
    seconds = int((when - dt.datetime(1970, 1, 1)).total_seconds())
    return ObjectId(seconds.to_bytes(4, "big") + (b"\xff" if high else b"\x00") * 8)


@pytest.mark.parametrize("flt, shown", [
    ({"v": {"$gt": 5}}, {"control.max.v": {"$_internalExprGt": 5}}),
    ({"v": {"$gte": 5}}, {"control.max.v": {"$_internalExprGte": 5}}),
    ({"v": {"$lt": 5}}, {"control.min.v": {"$_internalExprLt": 5}}),
    ({"v": {"$lte": 5}}, {"control.min.v": {"$_internalExprLte": 5}}),
    ({"v": 5}, {"$and": [{"control.min.v": {"$_internalExprLte": 5}}, {"control.max.v": {"$_internalExprGte": 5}}]}),
    ({"v": {"$in": [1, 30]}}, {"$or": [
        {"$and": [{"control.min.v": {"$_internalExprLte": 1}}, {"control.max.v": {"$_internalExprGte": 1}}]},
        {"$and": [{"control.min.v": {"$_internalExprLte": 30}}, {"control.max.v": {"$_internalExprGte": 30}}]}]}),
    ({"v": {"$exists": True}}, {"$and": [{"control.min.v": {"$exists": True}}, {"control.max.v": {"$exists": True}}]}),
    ({"m": 1, "v": {"$gt": 5}}, {"$and": [{"meta": 1}, {"control.max.v": {"$_internalExprGt": 5}}]}),
])
def test_measurement_predicates_are_internal_expr_comparisons_on_control(db, ts, flt, shown):
    cursor = _planner(db, flt)
    planner = cursor["queryPlanner"]
    assert planner["parsedQuery"] == shown
    assert planner["winningPlan"]["filter"] == shown
    # what ran is Tidemark's own filter, in the plan's details
    assert "bucketFilter" in planner["winningPlan"]["timeseries"]
    # the shown filter keeps every bucket the read unpacked
    assert db.system.buckets.ts.count_documents(shown) >= cursor["executionStats"]["nReturned"]
    assert sorted(d["v"] for d in ts.find(flt)) == sorted(d["v"] for d in ts.find() if _holds(d, flt))


def _holds(doc, flt):
    for key, cond in flt.items():
        value = doc.get(key)
        if not isinstance(cond, dict):
            if value != cond:
                return False
            continue
        for op, arg in cond.items():
            if op == "$exists":
                ok = (key in doc) == arg
            elif op == "$in":
                ok = value in arg
            else:
                ok = {"$gt": value > arg, "$gte": value >= arg, "$lt": value < arg, "$lte": value <= arg}[op]
            if not ok:
                return False
    return True


def test_time_comparisons_bound_the_other_side_and_the_bucket_id(db, ts):
    d = T0 + dt.timedelta(hours=1, milliseconds=250)
    x = "$_internalExprGte"
    assert _planner(db, {"t": {"$gte": d}})["queryPlanner"]["parsedQuery"] == {"$and": [
        {"control.max.t": {x: d}}, {"control.min.t": {x: d - SPAN}}, {"_id": {"$gte": _oid(d - SPAN, high=False)}}]}
    assert _planner(db, {"t": {"$gt": d}})["queryPlanner"]["parsedQuery"] == {"$and": [
        {"control.max.t": {"$_internalExprGt": d}}, {"control.min.t": {"$_internalExprGt": d - SPAN}},
        {"_id": {"$gt": _oid(d - SPAN, high=True)}}]}
    up = d.replace(microsecond=0) + dt.timedelta(seconds=1)  # a fraction of a second rounds up
    assert _planner(db, {"t": {"$lt": d}})["queryPlanner"]["parsedQuery"] == {"$and": [
        {"control.min.t": {"$_internalExprLt": d}}, {"control.max.t": {"$_internalExprLt": d + SPAN}},
        {"_id": {"$lt": _oid(up, high=False)}}]}
    assert _planner(db, {"t": {"$lte": d}})["queryPlanner"]["parsedQuery"] == {"$and": [
        {"control.min.t": {"$_internalExprLte": d}}, {"control.max.t": {"$_internalExprLte": d + SPAN}},
        {"_id": {"$lte": _oid(up, high=True)}}]}
    cursor = _planner(db, {"t": d})
    assert cursor["queryPlanner"]["parsedQuery"] == {"$and": [
        {"control.min.t": {"$_internalExprLte": d}}, {"control.min.t": {x: d - SPAN}},
        {"control.max.t": {x: d}}, {"control.max.t": {"$_internalExprLte": d + SPAN}},
        {"_id": {"$lte": _oid(up, high=True)}}, {"_id": {"$gte": _oid(d - SPAN, high=False)}}]}
    assert cursor["queryPlanner"]["winningPlan"]["stage"] == "CLUSTERED_IXSCAN"
    # a date within one span of the epoch: the lowest ObjectId
    early = dt.datetime(1970, 1, 1, 0, 10)
    shown = _planner(db, {"t": {"$gte": early}})["queryPlanner"]["parsedQuery"]
    assert shown["$and"][-1] == {"_id": {"$gte": ObjectId(b"\x00" * 12)}}


def test_no_bucket_id_bounds_once_dates_leave_1970_2038(db):
    db.create_collection("wide", timeseries={"timeField": "t", "metaField": "m"})
    wide = db.get_collection("wide", codec_options=CodecOptions(datetime_conversion=DatetimeConversion.DATETIME_MS))
    wide.insert_many([{"t": DatetimeMS(T0), "m": 1, "v": 1}, {"t": DatetimeMS(-86_400_000), "m": 1, "v": 2}])
    shown = _planner(db, {"t": {"$gte": T0}}, "wide")["queryPlanner"]["parsedQuery"]
    assert shown == {"$and": [{"control.max.t": {"$_internalExprGte": T0}},
                              {"control.min.t": {"$_internalExprGte": T0 - SPAN}}]}
    assert [d["v"] for d in db.wide.find({"t": {"$gte": T0}})] == [1]


def test_a_measurement_delete_explains_the_same_bucket_filter(db, ts):
    reply = db.command("explain", {"delete": "ts", "deletes": [{"q": {"v": {"$gt": 5}}, "limit": 0}]},
                       verbosity="queryPlanner")
    plan = reply["queryPlanner"]["winningPlan"]
    assert plan["stage"] == "TS_MODIFY"
    assert plan["bucketFilter"] == {"$and": [CLOSED, {"control.max.v": {"$_internalExprGt": 5}}]}
    assert reply["queryPlanner"]["parsedQuery"] == plan["bucketFilter"]
    assert ts.count_documents({}) == 40  # explain deletes nothing
