"""A time window bounds the buckets a time-series read examines on both sides (issue 23.2): what a
window reads does not grow with the buckets of the same series after it (nor before it, for a window
closed below), through a buckets index on {meta, time: ±1} — {time: -1} leads with control.max, which
only the window's *upper* bound limits (control.max < hi + bucketMaxSpanSeconds) — and through the
clustered ``_id`` range (no index, or hinted ``{$natural: 1}``).

Two collections hold the same first two hours; one goes on to 48 hours. Windows inside the first two
hours examine exactly as many index keys and buckets in both. The property test draws windows over
the 48 hours: the measurements found are a brute-force filter of the inserted ones, and the buckets
examined are those overlapping the window plus at most one on each side per series in scope."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.commands("explain", "find", "aggregate", "createIndexes", "insert")

T0 = dt.datetime(2024, 3, 1)
MINUTE = dt.timedelta(minutes=1)
STEP = 5 * MINUTE  # one measurement per host every 5 minutes: 12 per 1-hour bucket
HOSTS = ("a", "b", "c")
SPAN = dt.timedelta(hours=1)  # granularity "seconds"


def _rows(hours: int) -> list[dict]:
    return [{"t": T0 + i * STEP, "m": {"h": h}, "v": float(i % 17)}
            for i in range(hours * 12) for h in HOSTS]


def _make(db, name: str, hours: int, index_direction: int | None):
    db.create_collection(name, timeseries={"timeField": "t", "metaField": "m", "granularity": "seconds"})
    coll = db[name]
    if index_direction is not None:
        coll.create_index([("m.h", 1), ("t", index_direction)])
    coll.insert_many(_rows(hours))
    coll.delete_many({"_id": "none"})  # closes the open buckets: stored buckets and the index hold them all
    return coll


def _examined(db, name: str, filter: dict, hint=None) -> tuple[int, int]:
    cmd = {"find": name, "filter": filter}
    if hint is not None:
        cmd["hint"] = hint
    stats = db.command("explain", cmd, verbosity="executionStats")["stages"][0]["$cursor"]["executionStats"]
    return stats["totalKeysExamined"], stats["totalDocsExamined"]


# windows inside the first two hours (operators of either side, a single instant, an upper bound only)
WINDOWS = [
    {"$gte": T0 + 30 * MINUTE, "$lt": T0 + 90 * MINUTE},
    {"$gt": T0 + 30 * MINUTE, "$lte": T0 + 90 * MINUTE},
    {"$gte": T0 + 60 * MINUTE, "$lte": T0 + 60 * MINUTE},
    {"$gt": T0 + 5 * MINUTE, "$lt": T0 + 20 * MINUTE},
    {"$eq": T0 + 65 * MINUTE},
    {"$lt": T0 + 45 * MINUTE},
    {"$lte": T0 + 100 * MINUTE},
]


@pytest.fixture(params=[1, -1], ids=["time_asc", "time_desc"])
def indexed_pair(db, request):
    return _make(db, "short", 2, request.param), _make(db, "long", 48, request.param)


@pytest.fixture
def unindexed_pair(db):
    return _make(db, "short", 2, None), _make(db, "long", 48, None)


@pytest.mark.parametrize("window", WINDOWS, ids=repr)
def test_an_indexed_window_reads_the_same_buckets_whatever_follows_it(db, indexed_pair, window):
    short, long = indexed_pair
    flt = {"m.h": {"$in": ["b"]}, "t": window}
    keys, docs = _examined(db, "short", flt)
    assert keys > 0, "the read goes through the buckets index"
    assert _examined(db, "long", flt) == (keys, docs)
    assert keys <= 3  # the series' buckets overlapping a window of at most 100 minutes, and one beside
    assert list(long.find(flt, {"_id": 0}).sort("t", 1)) == list(short.find(flt, {"_id": 0}).sort("t", 1))


@pytest.mark.parametrize("window", WINDOWS, ids=repr)
@pytest.mark.parametrize("hint", [None, {"$natural": 1}], ids=["no_index", "natural"])
def test_a_window_over_the_clustered_range_reads_the_same_buckets_whatever_follows_it(db, unindexed_pair,
                                                                                       window, hint):
    flt = {"m.h": "b", "t": window}
    keys, docs = _examined(db, "short", flt, hint)
    assert (keys, docs) == _examined(db, "long", flt, hint)
    assert docs <= 3 * len(HOSTS)


@pytest.mark.parametrize("window", WINDOWS[:2], ids=repr)
def test_the_bench_query_reads_the_same_buckets_whatever_follows_it(db, indexed_pair, window):
    """TSBS single-groupby-1-1-1: one host, one hour, max per minute (the columnar $group)."""
    pipeline = [{"$match": {"t": window, "m.h": {"$in": ["b"]}}},
                {"$group": {"_id": {"$dateTrunc": {"date": "$t", "unit": "minute"}}, "top": {"$max": "$v"}}},
                {"$sort": {"_id": 1}}]
    counts = []
    for name in ("short", "long"):
        reply = db.command("explain", {"aggregate": name, "pipeline": pipeline, "cursor": {}},
                           verbosity="executionStats")
        stats = reply["stages"][0]["$cursor"]["executionStats"]
        counts.append((stats["totalKeysExamined"], stats["totalDocsExamined"]))
    assert counts[0] == counts[1] and counts[0][0] > 0
    short, long = indexed_pair
    assert list(short.aggregate(pipeline)) == list(long.aggregate(pipeline))


# ------------------------------------------------------------------ property: random windows over 48 hours

LOWER_OPS = ("$gt", "$gte")
UPPER_OPS = ("$lt", "$lte")


@st.composite
def windows(draw) -> dict:
    """A window in 48 hours and a little beyond, on a minute grid (so bounds hit measurement times
    now and then): two sides, one instant, or one side."""
    minute = st.integers(-30, 48 * 60 + 30)
    shape = draw(st.sampled_from(["both", "both", "both", "eq", "upper", "lower"]))
    a = T0 + draw(minute) * MINUTE
    if shape == "eq":
        return {"$eq": a}
    if shape == "upper":
        return {draw(st.sampled_from(UPPER_OPS)): a}
    if shape == "lower":
        return {draw(st.sampled_from(LOWER_OPS)): a}
    b = a + draw(st.integers(0, 6 * 60)) * MINUTE
    return {draw(st.sampled_from(LOWER_OPS)): a, draw(st.sampled_from(UPPER_OPS)): b}


def _in_window(t: dt.datetime, window: dict) -> bool:
    checks = {"$eq": t.__eq__, "$gt": t.__gt__, "$gte": t.__ge__, "$lt": t.__lt__, "$lte": t.__le__}
    return all(checks[op](bound) for op, bound in window.items())


def _window_ends(window: dict) -> tuple[dt.datetime | None, dt.datetime | None]:
    lo = next((b for op, b in window.items() if op in ("$eq", *LOWER_OPS)), None)
    hi = next((b for op, b in window.items() if op in ("$eq", *UPPER_OPS)), None)
    return lo, hi


@pytest.fixture
def two_indexes(db):
    """48 hours of three hosts, three collections: {m.h, t: 1}, {m.h, t: -1} and no index."""
    colls = {d: _make(db, f"c{d}", 48, d) for d in (1, -1)}
    colls[None] = _make(db, "cnone", 48, None)
    buckets = list(db["system.buckets.cnone"].find({}, {"control.min.t": 1, "control.max.t": 1, "meta": 1}))
    return colls, buckets


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(window=windows(), host=st.sampled_from(HOSTS), direction=st.sampled_from([1, -1, None]))
def test_a_window_examines_the_buckets_it_overlaps_and_at_most_one_more_each_side(db, two_indexes, window,
                                                                                 host, direction):
    colls, buckets = two_indexes
    coll = colls[direction]
    flt = {"m.h": host, "t": window}
    expected = sorted((r["t"], r["v"]) for r in _rows(48) if r["m"]["h"] == host and _in_window(r["t"], window))
    assert sorted((d["t"], d["v"]) for d in coll.find(flt)) == expected

    keys, docs = _examined(db, coll.name, flt)
    lo, hi = _window_ends(window)
    if lo is not None and hi is None:
        return  # a window open above reads every later bucket: nothing to bound
    # the clustered range holds every series' buckets; an index on the host, this host's
    in_scope = [b for b in buckets if direction is None or b["meta"]["h"] == host]
    overlapping = [b for b in in_scope if b["control"]["min"]["t"] <= hi
                   and (lo is None or b["control"]["max"]["t"] >= lo)]
    series = len(HOSTS) if direction is None else 1
    assert docs <= len(overlapping) + 2 * series
    if direction is not None:
        assert keys <= len(overlapping) + 2
        assert keys > 0 or not expected  # through the index


@pytest.mark.parametrize("early", [dt.datetime(1969, 12, 31, 23), dt.datetime(1900, 6, 1), dt.datetime(1800, 1, 1)],
                         ids=str)
@pytest.mark.parametrize("hint", [None, {"$natural": 1}], ids=["no_index", "natural"])
def test_a_window_open_below_still_finds_buckets_before_1970(db, early, hint):
    """Their ``_id`` start wraps around the key space (to the top half, or anywhere before 1901): the
    ``_id`` range of a window open below is bounded only when no bucket starts before 1970."""
    coll = _make(db, "c", 3, None)
    coll.insert_many([{"t": early, "m": {"h": "b"}, "v": -1.0}, {"t": dt.datetime(2040, 1, 1), "m": {"h": "b"}, "v": -2.0}])
    coll.delete_many({"_id": "none"})
    for upper in ({"$lt": T0 + 30 * MINUTE}, {"$lte": T0}):
        found = [d["v"] for d in coll.find({"m.h": "b", "t": upper}, hint=hint).sort("t", 1)]
        assert found[0] == -1.0 and -2.0 not in found
