"""A time-series $group is bounded in memory under allowDiskUse, as every other $group is.

mongod 7.0 runs a $group over a time-series collection as the one DocumentSourceGroup (after
$_internalUnpackBucket): past internalDocumentSourceGroupMaxMemoryBytes it spills its groups' partial
states with allowDiskUse and answers 292 QueryExceededMemoryLimitNoDiskUseAllowed without it
(document_source_group.cpp, jstests/noPassthrough/spill_to_disk_secondary_read.js and
jstests/aggregation/spill_to_disk.js). Tidemark computes the TSBS shapes of it from the buckets'
columns (server/timeseries/groupbatch.py), and that path counted its groups only without allowDiskUse:
with it, a grouping into millions of groups grew without bound and never spilled (the profile said no
``usedDisk``). Now it counts them as the generic stage does and hands them to the same spill.

The family: time-series collections of several meta shapes (none, scalar, object, missing in some
measurements), buckets of a short or long span, some stored and some in memory, values of one or mixed
numeric types with missing ones (dense buckets take the columnar path, the others the generic one in
the same read), grouped by time truncations, meta paths and measurement fields with every kind of
accumulator, under a limit so small that every answer of more than a few groups spills. The regular
collection holding the same measurements in the time-series collection's own read order (so that
$first, $last, $push and ties of $top/$bottom see one order) is the oracle: equal answers, compared
without their order (a spilled $group's order is its own, mongod's too); a spill is seen in the
profile (``usedDisk``); without allowDiskUse the answer is 292 with mongod's message.
"""

from __future__ import annotations

import datetime as dt
import math

import bson
import pytest
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from harness.parameters import server_parameter
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("aggregate", "setParameter", "getParameter", "profile", "delete", "insert")

GROUP_LIMIT = "internalDocumentSourceGroupMaxMemoryBytes"
LIMIT = 4 * 1024  # bytes: every group counts at least 200 (its key and accumulators), so ~20 fit
PER_GROUP = 200  # (stage_group._GROUP_OVERHEAD: the least a group counts)
T0 = dt.datetime(2024, 3, 1)
MESSAGE = "Exceeded memory limit for $group, but didn't allow external sort. Pass allowDiskUse:true to opt in."

ACCUMULATORS = {
    "sum": {"$sum": "$v"}, "avg": {"$avg": "$v"}, "min": {"$min": "$v"}, "max": {"$max": "$v"},
    "first": {"$first": "$v"}, "last": {"$last": "$v"}, "count": {"$count": {}}, "one": {"$sum": 1},
    "sumw": {"$sum": "$w"}, "maxt": {"$max": "$t"}, "push": {"$push": "$v"}, "set": {"$addToSet": "$v"},
    "sdp": {"$stdDevPop": "$v"}, "top": {"$top": {"sortBy": {"t": 1, "w": 1}, "output": "$v"}},
    "bottom": {"$bottom": {"sortBy": {"t": 1}, "output": ["$v", "$w"]}},
    "topN": {"$topN": {"n": 2, "sortBy": {"t": -1}, "output": "$w"}},
}
# accumulators the columnar path computes (columnar._ACCUMULATORS of measurement fields): a group of
# only these, keyed by time truncations and meta paths, takes it
COLUMNAR = ["sum", "avg", "min", "max", "first", "last", "count", "one", "sumw", "maxt"]
UNITS = ["second", "minute", "hour"]


def _trunc(unit: str) -> dict:
    return {"$dateTrunc": {"date": "$t", "unit": unit}}


def _ids(meta: str) -> st.SearchStrategy:
    """Group keys: time truncations, meta paths (of the meta's shape), measurement fields."""
    metas = {"none": [], "scalar": ["$m"], "object": ["$m", "$m.h"], "sparse": ["$m", "$m.h"]}[meta]
    timed = st.sampled_from(UNITS).map(_trunc)
    keys = [timed, st.sampled_from(["$v", "$w"])]
    if metas:
        keys.append(st.sampled_from(metas))
        keys.append(st.tuples(timed, st.sampled_from(metas)).map(lambda p: {"t": p[0], "h": p[1]}))
    keys.append(st.tuples(timed, st.sampled_from(["$w", "$v"])).map(lambda p: {"t": p[0], "x": p[1]}))
    return st.one_of(*keys)


def _meta(shape: str, series: int):
    if shape == "scalar":
        return f"host_{series}"
    return {"h": series % 3, "r": "eu" if series % 2 else "us"}


def _value(kind: str, i: int):
    """The measured ``v`` of row ``i``: one type (a dense column) or mixed (the generic way)."""
    if kind == "doubles":
        return float(i % 17) / 4 - 1.5
    if kind == "integral":
        return float(i % 23 - 11)
    if kind == "ints":
        return i % 13
    choice = i % 7
    return [1.5, 2, Int64(3), None, Decimal128("2.5"), -0.5, "<missing>"][choice]


@st.composite
def cases(draw):
    meta = draw(st.sampled_from(["none", "scalar", "object", "sparse"]))
    series = draw(st.integers(1, 5))
    rows = draw(st.integers(40, 400))
    step = draw(st.sampled_from([1, 7, 37, 301]))  # seconds between a series' measurements
    span = draw(st.sampled_from([60, 3600]))  # bucketMaxSpanSeconds (= rounding): many buckets or fewer
    kinds = draw(st.lists(st.sampled_from(["doubles", "integral", "ints", "mixed"]), min_size=series,
                          max_size=series))
    stored = draw(st.floats(0.0, 1.0))  # the part inserted (and stored) before the rest (in memory)
    docs = []
    for i in range(rows):
        for s in range(series):
            doc = {"t": T0 + dt.timedelta(seconds=i * step, milliseconds=(s * 37 + i) % 1000), "w": float(i % 5)}
            if meta != "none" and not (meta == "sparse" and (i + s) % 9 == 0):
                doc["m"] = _meta(meta, s)
            v = _value(kinds[s], i * (s + 1))
            if v != "<missing>":
                doc["v"] = v
            docs.append(doc)
    group_id = draw(_ids(meta))
    names = draw(st.lists(st.sampled_from(sorted(ACCUMULATORS)), min_size=1, max_size=5, unique=True))
    if draw(st.booleans()):  # often only what the columnar path computes
        names = [n for n in names if n in COLUMNAR] or ["count"]
    return meta, span, docs, int(stored * len(docs)), {"_id": group_id, **{n: ACCUMULATORS[n] for n in names}}


def _load(db, meta: str, span: int, docs: list[dict], stored: int) -> None:
    """``ts`` holding ``docs`` (the first ``stored`` of them settled: stored buckets; the rest in
    memory) and ``reg`` holding the same measurements in ``ts``'s read order."""
    for name in ("ts", "reg"):
        db.drop_collection(name)
    options = {"timeField": "t", "bucketMaxSpanSeconds": span, "bucketRoundingSeconds": span}
    if meta != "none":
        options["metaField"] = "m"
    db.create_collection("ts", timeseries=options)
    if stored:
        db.ts.insert_many([dict(d) for d in docs[:stored]])
        db.ts.delete_many({"t": {"$lt": T0 - dt.timedelta(days=1)}})  # (matches nothing: settles every bucket)
    if stored < len(docs):
        db.ts.insert_many([dict(d) for d in docs[stored:]])
    db.reg.insert_many(list(db.ts.find()))


def _answer(coll, pipeline: list[dict], allow_disk_use: bool) -> list[bytes]:
    """The documents as BSON, in the order of their ``_id``'s BSON (the answer's own order aside); a
    $stdDevPop to 9 significant digits: a spilled group merges its partial states by mongod's parallel
    algorithm, whose last bits differ from the one-by-one Welford update's."""
    docs = list(coll.aggregate(pipeline, allowDiskUse=allow_disk_use))
    for d in docs:
        if type(d.get("sdp")) is float:
            d["sdp"] = f"{d['sdp']:.9g}" if math.isfinite(d["sdp"]) else repr(d["sdp"])
    return sorted(bson.encode(d) for d in docs)


def _used_disk(db, name: str) -> bool:
    entry = next(db.system.profile.find({"command.aggregate": name}).sort("$natural", -1).limit(1))
    return entry.get("usedDisk", False)


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=cases())
def test_a_time_series_group_past_its_limit_spills_and_answers_as_the_regular_one(client, db, case):
    meta, span, docs, stored, group = case
    _load(db, meta, span, docs, stored)
    pipeline = [{"$group": group}]
    expected = _answer(db.reg, pipeline, True)
    assert _answer(db.ts, pipeline, True) == expected  # (no spill: the default limit)
    db.command("profile", 2)
    try:
        with server_parameter(client, GROUP_LIMIT, LIMIT):
            assert _answer(db.ts, pipeline, True) == expected
            if len(expected) * PER_GROUP > LIMIT:  # (fewer groups may spill too: what $push keeps counts)
                assert _used_disk(db, "ts") is True
                with pytest.raises(OperationFailure) as refused:
                    _answer(db.ts, pipeline, False)
                assert (refused.value.code, refused.value.details["codeName"], refused.value.details["errmsg"]) == \
                    (292, "QueryExceededMemoryLimitNoDiskUseAllowed", MESSAGE)
    finally:
        db.command("profile", 0)


@pytest.mark.slow
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=cases(), unit=st.sampled_from(UNITS), k=st.integers(1, 300), direction=st.sampled_from([1, -1]),
       limit=st.sampled_from([100, 256, 1024]))
def test_the_newest_groups_read_spills_and_keeps_the_newest(client, db, case, unit, k, direction, limit):
    """$group by a bare $dateTrunc -> $sort {_id} -> $limit (the newest-groups read when descending:
    columnar.TopK, whose bound counts each group once however often a spill makes it again)."""
    meta, span, docs, stored, _ = case
    _load(db, meta, span, docs, stored)
    pipeline = [{"$match": {"t": {"$lt": T0 + dt.timedelta(days=30)}}},  # (an end: the read may stop)
                {"$group": {"_id": _trunc(unit), "max": {"$max": "$w"}, "n": {"$count": {}}, "sum": {"$sum": "$w"},
                            "vmax": {"$max": "$v"}}},  # (ties of 2 and 2.0 across series: the order shows)
                {"$sort": {"_id": direction}}, {"$limit": k}]
    expected = [bson.encode(d) for d in db.reg.aggregate(pipeline)]
    with server_parameter(client, GROUP_LIMIT, limit):
        assert [bson.encode(d) for d in db.ts.aggregate(pipeline, allowDiskUse=True)] == expected


def test_a_group_made_again_after_a_spill_counts_once_among_the_newest(client, db):
    """The newest three hours of one series in buckets of a minute: the newest-first read settles its
    groups at every bucket start, and under a limit of about one group each settling spills, so an
    hour's group is made again at each of its 60 buckets; the read must still stop only once three
    distinct hours are made (it stopped after one hour, counted three times)."""
    docs = [{"t": T0 + dt.timedelta(seconds=10 * i), "m": "a", "w": float(i % 5)} for i in range(5 * 360)]
    _load(db, "scalar", 60, docs, 3 * 360)
    pipeline = [{"$match": {"t": {"$lt": T0 + dt.timedelta(days=1)}}},  # (an end: the read may stop)
                {"$group": {"_id": _trunc("hour"), "max": {"$max": "$w"}, "n": {"$count": {}}}},
                {"$sort": {"_id": -1}}, {"$limit": 3}]
    expected = [{"_id": T0 + dt.timedelta(hours=h), "max": 4.0, "n": 360} for h in (4, 3, 2)]
    assert list(db.reg.aggregate(pipeline)) == expected
    with server_parameter(client, GROUP_LIMIT, 256):
        assert list(db.ts.aggregate(pipeline, allowDiskUse=True)) == expected


@pytest.mark.slow
def test_a_dense_grouping_of_many_groups_spills(client, db):
    """The TSBS shape (a $dateTrunc and the meta, $avg/$max of doubles, every bucket dense, stored and
    in memory) into thousands of groups: it spills (the profile says usedDisk), answers what the
    regular collection answers, and answers 292 without allowDiskUse."""
    docs = [{"t": T0 + dt.timedelta(seconds=i), "m": {"host": f"h{i % 4}"}, "v": float(i % 11), "w": i % 3 * 0.5}
            for i in range(6000)]
    _load(db, "object", 3600, docs, 4000)
    pipeline = [{"$group": {"_id": {"t": _trunc("second"), "host": "$m.host"},
                            "avg": {"$avg": "$v"}, "max": {"$max": "$w"}, "n": {"$count": {}}}}]
    expected = _answer(db.reg, pipeline, True)
    assert len(expected) == 6000
    db.command("profile", 2)
    try:
        with server_parameter(client, GROUP_LIMIT, 64 * 1024):
            assert _answer(db.ts, pipeline, True) == expected
            assert _used_disk(db, "ts") is True
            with pytest.raises(OperationFailure) as refused:
                _answer(db.ts, pipeline, False)
            assert refused.value.code == 292 and refused.value.details["errmsg"] == MESSAGE
        assert _answer(db.ts, pipeline, True) == expected
        assert _used_disk(db, "ts") is False  # (the default limit: nothing spilled)
    finally:
        db.command("profile", 0)


def test_a_newest_groups_read_whose_spilled_groups_tie_answers_in_the_generic_order(client, db):
    """$max ties of 5 and 5.0 (two series) in groups spilled while read newest first: which one the
    generic $group keeps shows the buckets' order, so the read answers again in the generic order
    (newest_order.OrderMatters), from the merge of the spilled states too."""
    # (series a in the first half of each hour, b in the second: a tie is met only across buckets of
    # different starts, settled apart, so across spilled generations)
    docs = [{"t": T0 + dt.timedelta(seconds=30 * i), "m": "a" if i % 120 < 60 else "b",
             "v": 5 if i % 120 < 60 else 5.0} for i in range(4 * 120)]
    _load(db, "scalar", 60, docs, len(docs) // 2)
    pipeline = [{"$match": {"t": {"$lt": T0 + dt.timedelta(days=1)}}},
                {"$group": {"_id": _trunc("hour"), "v": {"$max": "$v"}, "n": {"$count": {}}}},
                {"$sort": {"_id": -1}}, {"$limit": 2}]
    expected = [bson.encode(d) for d in db.reg.aggregate(pipeline)]
    assert [bson.encode(d) for d in db.ts.aggregate(pipeline)] == expected
    for limit in (256, 100):  # (100: less than one group, so every settling spills)
        with server_parameter(client, GROUP_LIMIT, limit):
            assert [bson.encode(d) for d in db.ts.aggregate(pipeline, allowDiskUse=True)] == expected
