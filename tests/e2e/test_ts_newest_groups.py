"""The newest groups read (``$group`` by ``$dateTrunc`` of the time -> ``$sort {_id: -1}`` -> ``$limit k``
on a time-series view: newest buckets first, rows and runs below the k newest truncated times dropped,
one group slot per distinct truncated time whatever the meta) answers exactly what the generic
``$group`` answers over the same buckets (forced by a no-op ``$skip: 0``) and, for the accumulators
that do not depend on row order, what a regular collection holding the same measurements answers.
Series are inserted out of time order (buckets overlapping in time, more than one per series), partly
stored and partly in memory, around 1970 (dates before it) and with ints, doubles, signed zeros,
NaN, null, strings and missing values.

The newest-first read feeds buckets by descending start (and stored buckets of one start by descending
``_id``), the generic read by ascending ``_id``: a group with ``$first``/``$last`` is therefore not read
newest first; ``$max``/``$min`` ties of equal values of different types or signs (``0.0``/``-0.0``,
``1``/``1.0``) in different buckets, and Decimal128 sums, make the read answer again in the generic
order (``test_ties_...``); the values drawn in the first test have no such ties, and its read stays
newest first."""

from __future__ import annotations

import datetime as dt
import math
import struct

import bson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.commands("aggregate", "insert", "create", "delete", "explain")

EPOCHS = [dt.datetime(1969, 12, 31, 22), dt.datetime(2024, 3, 1)]
MISSING = object()
VALUES = [1.0, -3.0, 0.5, 0.0, 7, -2, 2**40, math.nan, None, "s", MISSING]  # no two equal of two types


@st.composite
def _rows(draw):
    """Rows of up to four series (one without meta) over three hours, in drawn (not time) order."""
    base = draw(st.sampled_from(EPOCHS))
    metas = draw(st.lists(st.sampled_from(["a", "b", "c", None]), min_size=1, max_size=4, unique=True))
    rows = []
    for meta in metas:
        for second in draw(st.lists(st.integers(0, 3 * 3600 - 1), min_size=1, max_size=25)):
            row = {"t": base + dt.timedelta(seconds=second, milliseconds=draw(st.integers(0, 999)))}
            if meta is not None:
                row["m"] = {"h": meta}
            value = draw(st.sampled_from(VALUES))
            if value is not MISSING:
                row["v"] = value
            rows.append(row)
    return base, rows


def _encoded(docs) -> list[bytes]:
    return [bson.encode(d) for d in docs]  # field order, BSON types and float bits


ORDER_FREE = {"mx": {"$max": "$v"}, "mn": {"$min": "$v"}, "n": {"$count": {}}, "tmax": {"$max": "$t"}}
SUMS = {"s": {"$sum": "$v"}, "a": {"$avg": "$v"}}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=_rows(), split=st.floats(0, 1), end=st.integers(0, 3 * 3600 + 60), start=st.none() | st.integers(0, 3 * 3600),
       unit=st.sampled_from(["second", "minute", "hour"]), k=st.integers(1, 7), sums=st.booleans())
def test_newest_groups_equal_the_generic_group(client, data, split, end, start, unit, k, sums):
    base, rows = data
    db = client["t_ts_newest_groups"]
    db.drop_collection("ts")
    db.drop_collection("reg")
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m", "granularity": "seconds"})
    cut = int(len(rows) * split)
    if cut:
        db.ts.insert_many(rows[:cut])
        db.ts.delete_many({"_id": "none"})  # closes the buckets: read as stored ones
    if cut < len(rows):
        db.ts.insert_many(rows[cut:])  # in memory
    db.reg.insert_many(rows)
    window = {"$lt": base + dt.timedelta(seconds=end)}
    if start is not None:
        window["$gte"] = base + dt.timedelta(seconds=start)
    group = {"_id": {"$dateTrunc": {"date": "$t", "unit": unit}}, **ORDER_FREE, **(SUMS if sums else {})}
    pipeline = [{"$match": {"t": window}}, {"$group": group}, {"$sort": {"_id": -1}}, {"$limit": k}]
    newest = _encoded(db.ts.aggregate(pipeline))
    for _ in range(2):  # the second read takes stored buckets from their remembered runs
        assert _encoded(db.ts.aggregate(pipeline)) == newest, pipeline
    assert newest == _encoded(db.ts.aggregate([pipeline[0], {"$skip": 0}, *pipeline[1:]])), pipeline
    if not sums:  # (a regular collection sums doubles in another order)
        assert newest == _encoded(db.reg.aggregate(pipeline)), pipeline
    explained = db.command("explain", {"aggregate": "ts", "pipeline": pipeline, "cursor": {}},
                           verbosity="executionStats")
    assert "newestFirst" in str(explained)
    assert "newestFirstAbandoned" not in str(explained)


def test_first_over_buckets_of_one_group_equals_the_generic_group(client):
    """$first/$last depend on the order buckets are fed in: such a group is not read newest first (it
    took the newer bucket's row: 1.0)."""
    db = client["t_ts_newest_groups_first"]
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m", "granularity": "seconds"})
    t0 = dt.datetime(2024, 3, 1)
    db.ts.insert_many([{"t": t0 + dt.timedelta(minutes=1), "m": 1, "v": 1.0}, {"t": t0, "m": 1, "v": -3.0}])
    pipeline = [{"$match": {"t": {"$lt": t0 + dt.timedelta(hours=1)}}},
                {"$group": {"_id": {"$dateTrunc": {"date": "$t", "unit": "hour"}}, "f": {"$first": "$v"}}},
                {"$sort": {"_id": -1}}, {"$limit": 1}]
    generic = list(db.ts.aggregate([pipeline[0], {"$skip": 0}, *pipeline[1:]]))
    newest = list(db.ts.aggregate(pipeline))
    client.drop_database("t_ts_newest_groups_first")
    assert generic == [{"_id": t0, "f": -3.0}]
    assert newest == generic


# values equal under the BSON comparison but not the same BSON value, and Decimal128 sums that round
TIES = [0.0, -0.0, 1, 1.0, bson.Int64(1), bson.Decimal128("1"), bson.Decimal128("1.0"),
        struct.unpack("<d", struct.pack("<Q", 0x7FF8000000000001))[0], math.nan, {"a": 1}, {"a": 1.0}, None,
        bson.Decimal128("1234567890123456789012345678901234"), bson.Decimal128("0.5"), bson.Decimal128("-0.5")]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(st.sampled_from(TIES), min_size=1, max_size=12), split=st.integers(0, 12),
       seconds=st.lists(st.integers(0, 3599), min_size=12, max_size=12), k=st.integers(1, 3))
def test_ties_of_different_values_across_buckets_equal_the_generic_group(client, values, split, seconds, k):
    """$max/$min ties between equal values of different sign or type (0.0/-0.0, 1/1.0/Int64 1,
    Decimal128 1/1.0, NaN payloads, {a: 1}/{a: 1.0}) keep the value the generic $group meets first (the
    older bucket's), and Decimal128 sums round as in the generic order: the newest-first read answers
    again in that order when it meets either (it kept the newer bucket's value)."""
    db = client["t_ts_newest_groups_tie"]
    db.drop_collection("ts")
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m", "granularity": "seconds"})
    t0 = dt.datetime(2024, 3, 1)
    rows = [{"t": t0 + dt.timedelta(seconds=s), "m": 1, "v": v} for s, v in zip(seconds, values, strict=False)]
    for part in (rows[:split], rows[split:]):  # a type change or a second insert opens another bucket
        if part:
            db.ts.insert_many(part)
    group = {"_id": {"$dateTrunc": {"date": "$t", "unit": "minute"}}, "mx": {"$max": "$v"}, "mn": {"$min": "$v"},
             "s": {"$sum": "$v"}, "a": {"$avg": "$v"}}
    pipeline = [{"$match": {"t": {"$lt": t0 + dt.timedelta(hours=1)}}}, {"$group": group},
                {"$sort": {"_id": -1}}, {"$limit": k}]
    generic = _encoded(db.ts.aggregate([pipeline[0], {"$skip": 0}, *pipeline[1:]]))
    assert _encoded(db.ts.aggregate(pipeline)) == generic, rows


def test_tie_of_signed_zeros_across_buckets_takes_the_older_buckets_zero(client):
    db = client["t_ts_newest_groups_zeros"]
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m", "granularity": "seconds"})
    t0 = dt.datetime(2024, 3, 1)
    db.ts.insert_many([{"t": t0 + dt.timedelta(seconds=i), "m": 1, "v": v} for i, v in enumerate([0.0, None, -0.0])])
    pipeline = [{"$match": {"t": {"$lt": t0 + dt.timedelta(hours=1)}}},
                {"$group": {"_id": {"$dateTrunc": {"date": "$t", "unit": "hour"}}, "x": {"$max": "$v"}}},
                {"$sort": {"_id": -1}}, {"$limit": 1}]
    newest = list(db.ts.aggregate(pipeline))
    explained = db.command("explain", {"aggregate": "ts", "pipeline": pipeline, "cursor": {}},
                           verbosity="executionStats")
    client.drop_database("t_ts_newest_groups_zeros")
    assert math.copysign(1.0, newest[0]["x"]) == 1.0  # the first bucket's 0.0 (it was -0.0)
    assert "newestFirstAbandoned" in str(explained)


def _bucket_rows(hours: int, per_hour: int) -> list[dict]:
    t0 = dt.datetime(2024, 3, 1)
    return [{"t": t0 + dt.timedelta(hours=h, seconds=s * 3600 // per_hour), "m": {"h": host}, "v": float(h + s)}
            for h in range(hours) for s in range(per_hour) for host in ("a", "b", "c")]


def test_newest_groups_read_the_buckets_of_the_newest_hour_only(client):
    """Every bucket starting at the newest hour is read (each may hold one of the newest minutes), then
    the stop test, asked again only when the start changes, stops the read before any older bucket:
    the read used to settle its groups every 4 buckets, so it took buckets of the hour before too."""
    db = client["t_ts_newest_groups_stop"]
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m", "granularity": "seconds"})
    rows = _bucket_rows(4, 60)
    db.ts.insert_many(rows)
    db.ts.delete_many({"_id": "none"})
    db.reg.insert_many(rows)
    pipeline = [{"$match": {"t": {"$lt": dt.datetime(2024, 3, 1, 3, 30)}}},
                {"$group": {"_id": {"$dateTrunc": {"date": "$t", "unit": "minute"}}, "v": {"$max": "$v"}}},
                {"$sort": {"_id": -1}}, {"$limit": 5}]
    assert list(db.ts.aggregate(pipeline)) == list(db.reg.aggregate(pipeline))
    explained = db.command("explain", {"aggregate": "ts", "pipeline": pipeline, "cursor": {}},
                           verbosity="executionStats")
    info = explained["stages"][0]["$cursor"]["queryPlanner"]["winningPlan"]["timeseries"]
    assert info["newestFirst"] == 5
    assert info["bucketsScanned"] == 3  # the three series' buckets of 03:00
    client.drop_database("t_ts_newest_groups_stop")
