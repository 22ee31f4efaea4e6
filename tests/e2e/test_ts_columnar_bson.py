"""The documents of a columnar ``$group`` whose output goes straight to the cursor (the group, or the
``$sort``/``$limit`` right after it, is the last stage) are BSON made from the group arrays
(groupstate ``encoded``, groupbson): compared here as the raw reply bytes — field order, int32 vs long
vs double, dates, ``-0.0``, null and missing ``_id`` parts — with the generic ``$group`` over the same
buckets (forced by a ``$skip: 0`` before it), with the columnar group handing dicts (a ``$skip: 0``
after it), and, as sets, with a regular collection holding the same measurements. Groups by the
minute: most examples have more than ``ENCODED_MIN`` groups (fewer go as dicts)."""

from __future__ import annotations

import datetime as dt

import pytest
from bson.codec_options import CodecOptions
from bson.raw_bson import RawBSONDocument
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("aggregate", "insert", "create", "delete")

T0 = dt.datetime(2024, 3, 1)
RAW = CodecOptions(document_class=RawBSONDocument)
METAS = [{"h": "a", "r": 1}, {"h": "b"}, {"h": "a", "r": 2}, {"h": 1, "r": 2}, {"h": 2.5}, {"h": None, "r": 1},
         {"r": 3}, {"h": ["x", "a"]}, {"h": {"z": 1}}, {"h": "é" * 3, "r": 2}]
TRUNC = {"$dateTrunc": {"date": "$t", "unit": "minute"}}  # groups enough for the BSON path (ENCODED_MIN)
IDS = {
    "time": TRUNC,
    "time-host": {"t": TRUNC, "h": "$m.h"},
    "host-time": {"h": "$m.h", "t": TRUNC},
    "two-times": {"t": TRUNC, "h": "$m.h", "u": TRUNC},
    "host": "$m.h",
    "host-region": {"h": "$m.h", "r": "$m.r"},
    "time-host-const": {"t": TRUNC, "h": "$m.h", "c": {"$literal": 1}},
    "const": None,
}
ACCUMULATORS = {
    "avg": {"$avg": "$v"}, "sum": {"$sum": "$v"}, "max": {"$max": "$v"}, "min": {"$min": "$v"},
    "first": {"$first": "$v"}, "last": {"$last": "$v"}, "n": {"$count": {}}, "tmax": {"$max": "$t"},
    "tmin": {"$min": "$t"}, "tfirst": {"$first": "$t"}, "tlast": {"$last": "$t"},
}
TIMED = [{"$max": "$t"}, {"$min": "$t"}, {"$first": "$t"}, {"$last": "$t"}]  # (these group generically)
VALUES = [0.0, -0.0, 1.0, -3.0, 7.0, 12.0, 2.0**40]


@st.composite
def _rows(draw):
    rows = []
    values = VALUES if draw(st.booleans()) else [v for v in VALUES if str(v) != "-0.0"]  # -0.0: no NumPy totals
    for k in draw(st.lists(st.integers(0, len(METAS)), min_size=2, max_size=5, unique=True)):
        for minute in draw(st.lists(st.integers(0, 179), min_size=20, max_size=60, unique=True)):
            row = {"t": T0 + dt.timedelta(minutes=minute, seconds=k), "v": draw(st.sampled_from(values))}
            if k < len(METAS):
                row["m"] = METAS[k]
            rows.append(row)
    return rows


@st.composite
def _pipelines(draw):
    group = {"_id": IDS[draw(st.sampled_from(sorted(IDS)))]}
    names = sorted(ACCUMULATORS) if draw(st.booleans()) else sorted(k for k, v in ACCUMULATORS.items() if v not in TIMED)
    for name in draw(st.lists(st.sampled_from(names), min_size=1, max_size=5, unique=True)):
        group[name] = ACCUMULATORS[name]
    start = draw(st.integers(0, 120))
    match = {"$match": {"t": {"$gte": T0 + dt.timedelta(minutes=start)}}}
    tail = draw(st.sampled_from([[], [{"$sort": {"_id": 1}}], [{"$sort": {"_id.t": -1, "_id.h": 1}}],
                                 [{"$sort": {"_id.h": 1}}, {"$limit": 3}]]))
    return [match, {"$group": group}, *tail]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=_rows(), pipeline=_pipelines())
def test_columnar_group_bson_equals_the_generic_group(client, rows, pipeline):
    db = client["t_ts_columnar_bson"]
    db.drop_collection("ts")
    db.drop_collection("reg")
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m", "granularity": "seconds"})
    half = max(1, len(rows) // 2)
    db.ts.insert_many(rows[:half])
    db.ts.delete_many({"_id": "none"})  # the first half stored (closed buckets), the rest in memory
    if rows[half:]:
        db.ts.insert_many(rows[half:])
    db.reg.insert_many(rows)
    ts, reg = db.ts.with_options(codec_options=RAW), db.reg.with_options(codec_options=RAW)
    for state in ("half in memory", "all stored"):
        if state == "all stored":
            db.ts.delete_many({"_id": "none"})  # closes the in-memory buckets too
        generic = [d.raw for d in ts.aggregate([pipeline[0], {"$skip": 0}, *pipeline[1:]])]
        as_dicts = [d.raw for d in ts.aggregate([*pipeline, {"$skip": 0}])]
        for _ in range(2):  # the second read takes stored buckets from their remembered runs
            columnar = [d.raw for d in ts.aggregate(pipeline)]
            assert columnar == generic, (state, pipeline)
            assert columnar == as_dicts, (state, pipeline)
    # ($max/$min keep the first of equal zeros: 0.0 or -0.0 by the rows' order, which a regular
    # collection does not share)
    order_dependent = ("$first", "$last") + (("$max", "$min") if any(str(r["v"]) == "-0.0" for r in rows) else ())
    order_free = not any(acc in order_dependent for v in pipeline[1]["$group"].values() if isinstance(v, dict)
                         for acc in v)
    if len(pipeline) == 2 and order_free:  # the same groups as a regular collection (in another order)
        assert sorted(columnar) == sorted(d.raw for d in reg.aggregate(pipeline)), pipeline


def test_many_groups_take_the_bson_path_and_equal_the_generic_group(client):
    """Groups enough (ENCODED_MIN) of NumPy totals: the documents made as BSON equal the generic ones."""
    db = client["t_ts_columnar_bson_many"]
    db.drop_collection("ts")
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m", "granularity": "seconds"})
    db.ts.insert_many([{"t": T0 + dt.timedelta(minutes=i, seconds=k), "m": METAS[k], "v": float((i * 7 + k) % 23)}
                       for i in range(120) for k in (0, 3, 5, 9)])
    db.ts.delete_many({"_id": "none"})  # closes the buckets: stored ones, dense
    ts = db.ts.with_options(codec_options=RAW)
    group = {"$group": {"_id": IDS["host-time"], **{k: v for k, v in ACCUMULATORS.items() if v not in TIMED}}}
    for id_shape in ("time-host", "time", "two-times"):
        group["$group"]["_id"] = IDS[id_shape]
        for tail in ([], [{"$sort": {"_id": -1}}], [{"$sort": {"_id.t": -1}}, {"$limit": 50}]):
            pipeline = [{"$match": {"t": {"$gte": T0 + dt.timedelta(minutes=7)}}}, group, *tail]
            generic = [d.raw for d in ts.aggregate([pipeline[0], {"$skip": 0}, *pipeline[1:]])]
            assert len(generic) >= 32
            assert [d.raw for d in ts.aggregate(pipeline)] == generic, pipeline


def test_queries_of_other_id_shapes_on_the_same_metas_take_their_own_ids(client):
    """Templates remembered across queries (groupstate ``_TEMPLATES``) are keyed by the whole ``_id``
    expression: one after another on the same metas, ``_id``s differing in unit, field order, meta path,
    a constant's type, a timezone or a ``$$NOW`` part each give the generic group's bytes."""
    db = client["t_ts_columnar_bson_shapes"]
    db.drop_collection("ts")
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m", "granularity": "seconds"})
    db.ts.insert_many([{"t": T0 + dt.timedelta(minutes=7 * i, seconds=k), "m": METAS[k], "v": float(i % 5)}
                       for i in range(60) for k in (0, 1, 3, 9)])
    db.ts.delete_many({"_id": "none"})  # closes the buckets: stored ones, dense
    ts = db.ts.with_options(codec_options=RAW)
    hour = {"$dateTrunc": {"date": "$t", "unit": "hour"}}
    zoned = {"$dateTrunc": {"date": "$t", "unit": "hour", "timezone": "+05:30"}}
    shapes = [{"t": TRUNC, "h": "$m.h"}, {"t": hour, "h": "$m.h"}, {"h": "$m.h", "t": hour}, {"t": hour, "h": "$m.r"},
              {"t": hour, "h": "$m.h", "c": {"$literal": 1}}, {"t": hour, "h": "$m.h", "c": {"$literal": 1.0}}, {"t": zoned, "h": "$m.h"},
              {"t": hour, "h": "$m.h", "now": {"$gt": ["$$NOW", T0]}}, hour, zoned, "$m.h", "$m.r"]
    for _ in range(2):
        for id_spec in shapes + shapes[::-1]:
            for tail in ([], [{"$sort": {"_id": 1}}]):
                pipeline = [{"$group": {"_id": id_spec, "n": {"$count": {}}, "s": {"$sum": "$v"}}}, *tail]
                generic = [d.raw for d in ts.aggregate([{"$skip": 0}, *pipeline])]
                assert [d.raw for d in ts.aggregate(pipeline)] == generic, pipeline


@pytest.mark.parametrize("tail", [[], [{"$sort": {"_id": 1}}], [{"$sort": {"_id": -1}}, {"$limit": 40}]])
def test_one_series_window_of_new_minutes_equals_the_generic_group(client, tail):
    """One series, a row every 10 s, a window cutting its buckets (the TSBS single-groupby shape): every
    run of a batch is a group not seen before (the slots numbered straight from the sort), and the
    documents made as BSON — in first-seen order (the ``$group`` last) or sorted — equal the generic ones."""
    db = client["t_ts_columnar_bson_window"]
    db.drop_collection("ts")
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m", "granularity": "seconds"})
    db.ts.insert_many([{"t": T0 + dt.timedelta(seconds=10 * i), "m": {"h": "host_1"}, "v": float((i * 7) % 23) - 5.0}
                       for i in range(6 * 150)])
    db.ts.delete_many({"_id": "none"})  # closes the buckets: stored ones, dense
    ts = db.ts.with_options(codec_options=RAW)
    window = {"$gte": T0 + dt.timedelta(minutes=13, seconds=25), "$lt": T0 + dt.timedelta(minutes=97, seconds=5)}
    pipeline = [{"$match": {"t": window, "m.h": {"$in": ["host_1"]}}},
                {"$group": {"_id": TRUNC, "mx": {"$max": "$v"}, "s": {"$sum": "$v"}}}, *tail]
    generic = [d.raw for d in ts.aggregate([pipeline[0], {"$skip": 0}, *pipeline[1:]])]
    assert len(generic) >= 32
    for _ in range(2):  # (the second read takes the buckets' remembered parts)
        got = [d.raw for d in ts.aggregate(pipeline)]
        assert (got if tail else sorted(got)) == (generic if tail else sorted(generic)), pipeline


@pytest.mark.parametrize("constant", [1, 1.0, True, False])
def test_a_bare_constant_in_a_group_key_is_refused_on_the_view_as_on_a_collection(client, constant):
    """``{c: 1}`` inside a $group ``_id`` object reads as an inclusion flag: mongod refuses it (17390)
    before any document is read, so the columnar path of a time-series view must refuse it as well."""
    db = client["t_ts_columnar_bson_inclusion"]
    db.drop_collection("ts")
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    db.ts.insert_one({"t": T0, "m": {"h": "a"}, "v": 1.0})
    db.c.insert_one({"t": T0, "m": {"h": "a"}, "v": 1.0})
    pipeline = [{"$group": {"_id": {"t": TRUNC, "h": "$m.h", "c": constant}, "s": {"$sum": "$v"}}}]
    for coll in (db.ts, db.c):
        with pytest.raises(OperationFailure) as err:
            list(coll.aggregate(pipeline))
        assert err.value.code == 17390
