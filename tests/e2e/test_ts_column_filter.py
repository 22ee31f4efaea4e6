"""The column filter of time-series reads (server/timeseries/rowfilter.py): comparisons of measurement
fields and the time with numbers and dates are decided on a bucket's typed columns, and only the rows
they keep become documents. The answers must be exactly a regular collection's holding the same
documents, for columns of every kind: doubles (with NaN and infinities), int32, int64 (beyond 2**53),
dates, and columns the filter cannot judge (mixed types, missing rows, nulls, arrays), under the
simple collation and a non-simple one, from buckets in memory and stored ones."""

from __future__ import annotations

import datetime as dt
import math

import bson
import pytest
from bson import Decimal128, Int64
from harness.jstests import timeseries_read_details
from harness.ts_differential import in_memory_then_stored
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.commands("aggregate", "find", "explain", "insert", "delete")

T0 = dt.datetime(2024, 3, 1)
HOSTS = ("a", "b", "c")
FIELDS = ("x", "y")
D1 = dt.datetime(2020, 1, 1)
D2 = dt.datetime(2020, 1, 2)

# values near each other and the operands below, of every numeric type (small pools: boundaries meet)
NUMBERS = [-1, 0, 2, 3, 90]
DOUBLES = [-0.0, 2.0, 2.5, 3.0, 90.0, 90.5, math.inf, -math.inf, float(2**53)]
LONGS = [Int64(v) for v in (-(2**63), 2, 3, 2**53, 2**53 + 1, 2**63 - 1)]
DATES = [D1, D2, dt.datetime(1960, 5, 5)]
OTHER = [None, "s", [1, 95.0], [], {"k": 1}, True, Decimal128("2.5"), Decimal128("NaN")]

SCHEMES = {  # what one series' rows hold in one field: typed columns, and columns no filter can judge
    "double": st.sampled_from(DOUBLES),
    "double_nan": st.sampled_from(DOUBLES + [math.nan] * 3),
    "int": st.sampled_from(NUMBERS),
    "long": st.sampled_from(LONGS),
    "date": st.sampled_from(DATES),
    "mixed": st.sampled_from(NUMBERS + DOUBLES + LONGS + DATES + [math.nan] + OTHER),
}

OPERANDS = [2, 2.5, 3, 90, 90.0, -0.0, Int64(2**53 + 1), 2**53 + 1, Int64(2**63 - 1), float(2**63), -math.inf,
            math.nan, Decimal128("2.5"), None, "s", D1, dt.datetime(2020, 1, 1, 0, 0, 0, 500000),
            T0 + dt.timedelta(minutes=25)]
OPS = ("$eq", "$gt", "$gte", "$lt", "$lte", "$ne")


@st.composite
def series_rows(draw) -> list[dict]:
    docs = []
    for host in HOSTS:
        schemes = {f: draw(st.sampled_from(sorted(SCHEMES) + ["missing", "sparse"])) for f in FIELDS}
        for i in range(draw(st.integers(1, 14))):
            doc = {"t": T0 + dt.timedelta(minutes=5 * i + draw(st.integers(0, 4))), "m": {"h": host}}
            for field, scheme in schemes.items():
                if scheme == "missing":
                    continue
                if scheme == "sparse":
                    if draw(st.booleans()):
                        doc[field] = draw(SCHEMES["double"])
                    continue
                doc[field] = draw(SCHEMES[scheme])
            docs.append(doc)
    return docs


def _comparison(draw) -> dict:
    path = draw(st.sampled_from(FIELDS + ("t", "z")))  # z: in no document
    shape = draw(st.sampled_from(("op", "op", "op", "in", "nin", "not")))
    if shape in ("in", "nin"):
        values = draw(st.lists(st.sampled_from(OPERANDS), min_size=1, max_size=3))
        return {path: {"$in" if shape == "in" else "$nin": values}}
    operand = draw(st.sampled_from(OPERANDS))
    if shape == "not":
        return {path: {"$not": {draw(st.sampled_from(OPS[1:5])): operand}}}
    return {path: {draw(st.sampled_from(OPS)): operand}}


@st.composite
def filters(draw) -> dict:
    parts = [_comparison(draw) for _ in range(draw(st.integers(1, 3)))]
    if draw(st.booleans()):
        parts.append({"m.h": {"$in": draw(st.lists(st.sampled_from(HOSTS), min_size=1, max_size=2))}})
    return parts[0] if len(parts) == 1 else {"$and": parts}


def _canonical(value):
    if isinstance(value, dict):
        return {k: _canonical(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    return value


def _answer(coll, flt: dict, collation: dict | None) -> list[bytes]:
    """The documents found, field order aside (BSON bytes compare NaN and number types exactly)."""
    kwargs = {"collation": collation} if collation else {}
    found = list(coll.aggregate([{"$match": flt}], **kwargs))
    return sorted(bson.encode(_canonical(d)) for d in found)


def _in_order(coll, pipeline: list[dict], collation: dict | None) -> list[bytes]:
    kwargs = {"collation": collation} if collation else {}
    return [bson.encode(d) for d in coll.aggregate(pipeline, **kwargs)]


@pytest.fixture
def pair(db):
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m", "granularity": "minutes"})
    return db["ts"], db["reg"]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(docs=series_rows(), flts=st.lists(filters(), min_size=6, max_size=6),
       collation=st.sampled_from([None, None, {"locale": "en", "strength": 2}]))
def test_a_time_series_read_answers_as_a_regular_collection(pair, docs, flts, collation):
    ts, reg = pair
    for stored in in_memory_then_stored(ts, reg, docs, {"_id": "none"}):
        for flt in flts:
            assert _answer(ts, flt, collation) == _answer(reg, flt, collation), (flt, stored)
            # the rows kept are the very documents a whole-bucket unpack makes, fields in the same order
            # (a $match after $skip is not the read's: every row is unpacked, then filtered)
            assert _in_order(ts, [{"$match": flt}], collation) == \
                _in_order(ts, [{"$skip": 0}, {"$match": flt}], collation), (flt, stored)
            # the columnar $group's buckets that are not dense go through the same filtered unpack
            counts = [{"$match": flt}, {"$group": {"_id": {"$dateTrunc": {"date": "$t", "unit": "minute"}},
                                                   "n": {"$sum": 1}}}, {"$sort": {"_id": 1}}]
            assert list(ts.aggregate(counts)) == list(reg.aggregate(counts)), (flt, stored)



def _tsbs_rows() -> list[dict]:
    rows = []
    for i in range(360):
        for host in HOSTS:
            rows.append({"t": T0 + dt.timedelta(seconds=10 * i), "m": {"h": host},
                         "usage_user": float((i * 7 + len(host)) % 100), "usage_system": float(i % 13)})
    return rows


@pytest.mark.parametrize("stored", [False, True], ids=["in_memory", "stored"])
def test_the_high_cpu_shape_materializes_only_the_rows_the_columns_keep(db, stored):
    """TSBS high-cpu-1: a time window, usage_user > 90 and one host. Explain counts the rows made into
    documents (``measurementsUnpacked``) and those the columns rejected (``measurementsSkipped``)."""
    db.create_collection("cpu", timeseries={"timeField": "t", "metaField": "m", "granularity": "seconds"})
    db["cpu"].insert_many(_tsbs_rows())
    if stored:
        db["cpu"].delete_many({"_id": "none"})
    flt = {"t": {"$gte": T0, "$lt": T0 + dt.timedelta(hours=2)}, "usage_user": {"$gt": 90.0},
           "m.h": {"$in": ["b"]}}
    pipeline = [{"$match": flt}]
    expected = [r for r in _tsbs_rows() if r["m"]["h"] == "b" and r["usage_user"] > 90.0]
    found = list(db["cpu"].aggregate(pipeline))
    assert sorted((d["t"], d["usage_user"]) for d in found) == sorted((r["t"], r["usage_user"]) for r in expected)
    plan = db.command("explain", {"aggregate": "cpu", "pipeline": pipeline, "cursor": {}},
                      verbosity="executionStats")
    info = timeseries_read_details(plan)
    assert info["columnFilter"] == ["t $gte Date(1709251200000)", "t $lt Date(1709258400000)",
                                    "usage_user $gt 90.0"]
    # the meta conjunct is decided per bucket by the bucket filter: no row needs the event filter
    assert info["columnFilterComplete"] is True
    assert info["measurementsUnpacked"] == info["measurementsReturned"] == len(expected)
    assert info["measurementsSkipped"] == 360 - len(expected)


def test_a_filter_the_columns_decide_wholly_skips_the_event_filter(db):
    db.create_collection("cpu", timeseries={"timeField": "t", "metaField": "m", "granularity": "seconds"})
    db["cpu"].insert_many(_tsbs_rows())
    pipeline = [{"$match": {"usage_user": {"$gte": 95.0}, "usage_system": {"$ne": 3.0}}}]
    plan = db.command("explain", {"aggregate": "cpu", "pipeline": pipeline, "cursor": {}},
                      verbosity="executionStats")
    info = timeseries_read_details(plan)
    expected = [r for r in _tsbs_rows() if r["usage_user"] >= 95.0 and r["usage_system"] != 3.0]
    assert info["columnFilterComplete"] is True
    assert info["measurementsUnpacked"] == info["measurementsReturned"] == len(expected)
    assert len(list(db["cpu"].aggregate(pipeline))) == len(expected)


# every typed column kind beside every operand, each comparison (the boundaries a random draw may miss)
BOUNDARY_COLUMNS = {"a": (DOUBLES + [math.nan], NUMBERS), "b": (LONGS, DATES), "c": (NUMBERS, DOUBLES)}


@pytest.mark.parametrize("stored", [False, True], ids=["in_memory", "stored"])
def test_every_comparison_at_the_typed_boundaries(pair, stored):
    ts, reg = pair
    docs = []
    for host, (xs, ys) in BOUNDARY_COLUMNS.items():
        for i in range(max(len(xs), len(ys))):
            docs.append({"_id": len(docs), "t": T0 + dt.timedelta(minutes=i), "m": {"h": host},
                         "x": xs[i % len(xs)], "y": ys[i % len(ys)]})
    ts.insert_many([dict(d) for d in docs])
    reg.insert_many([dict(d) for d in docs])
    if stored:
        ts.delete_many({"_id": "none"})
    for path in ("x", "y", "t", "z"):  # z: in no document
        for operand in OPERANDS:
            conditions = [{op: operand} for op in OPS] + [{"$not": {op: operand}} for op in OPS[1:5]]
            conditions += [{"$in": [operand, 3]}, {"$nin": [operand]}]
            for condition in conditions:
                flt = {path: condition}
                found = sorted(d["_id"] for d in ts.find(flt, {"_id": 1}))
                assert found == sorted(d["_id"] for d in reg.find(flt, {"_id": 1})), flt
