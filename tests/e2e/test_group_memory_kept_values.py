"""A $group's accumulators count what they keep against internalDocumentSourceGroupMaxMemoryBytes.

mongod's N accumulators (accumulator_multi.cpp: AccumulatorMinMaxN, AccumulatorFirstLastN,
AccumulatorTopBottomN, which is $top/$bottom too) add a value's approximate size to their memory
usage when they keep it and take it off when they evict it, so a group's memory is at most its n
values (for $top*/$bottom*: each kept output with its sort key), whatever it was fed; past the limit
DocumentSourceGroup answers 292 without allowDiskUse (and spills with it). Tidemark counted every value
fed to $firstN/$lastN/$minN/$maxN (a large input with a small n: a false 292), and $top/$bottom not at all, $topN/$bottomN 16 bytes per value fed whatever
the output (groups keeping megabytes ran to completion). The same holds on a time-series collection
(these accumulators run there as the generic $group does); and a time-series $group the columnar path
computes counts exactly what the generic one does (its accumulators keep numbers and dates, which
count as the null they replace), so it fails at the same limit as the same $group over a regular
collection.
"""

from __future__ import annotations

import datetime

import pytest
from harness.parameters import server_parameter
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("aggregate", "setParameter", "getParameter")

LIMIT = 256 * 1024
NAME = "internalDocumentSourceGroupMaxMemoryBytes"
HYPO = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
T0 = datetime.datetime(2024, 1, 1)


@pytest.fixture
def group_limit(client):
    with server_parameter(client, NAME, LIMIT):
        yield client


def accumulator(kind: str, n: int) -> dict:
    if kind in ("$top", "$bottom"):
        return {kind: {"sortBy": {"i": 1}, "output": "$s"}}
    if kind in ("$topN", "$bottomN"):
        return {kind: {"n": n, "sortBy": {"i": -1}, "output": "$s"}}
    return {kind: {"n": n, "input": "$s"}}


KINDS = ["$topN", "$bottomN", "$firstN", "$lastN", "$minN", "$maxN", "$top", "$bottom"]


def collection(db, time_series: bool):
    db.c.drop()
    if time_series:
        db.create_collection("c", timeseries={"timeField": "t", "metaField": "g"})
    return db.c


def load(coll, groups: int, per_group: int, size: int) -> None:
    # every value of a group differs (its position first) and has ``size`` characters
    coll.insert_many([{"g": g, "i": k, "t": T0 + datetime.timedelta(seconds=k), "s": f"{k:05}" + "v" * (size - 5)}
                      for g in range(groups) for k in range(per_group)])


def outcome(coll, acc: dict, allow_disk_use: bool) -> int:
    """0 when the $group completes, else its error code."""
    try:
        list(coll.aggregate([{"$group": {"_id": "$g", "v": acc}}, {"$project": {"v": 0}}],
                            allowDiskUse=allow_disk_use))
    except OperationFailure as exc:
        return exc.code
    return 0


@HYPO
@given(kind=st.sampled_from(KINDS), n=st.integers(1, 4), groups=st.integers(1, 4), size=st.sampled_from([800, 3000]),
       time_series=st.booleans(), allow_disk_use=st.booleans())
def test_values_fed_and_dropped_do_not_count(db, group_limit, kind, n, groups, size, time_series, allow_disk_use):
    # each group is fed twice the limit; what the groups keep is at most 4 x 4 x 3 KB (a fifth of it)
    per_group = 2 * LIMIT // size + 1
    coll = collection(db, time_series)
    load(coll, groups, per_group, size)
    assert outcome(coll, accumulator(kind, n), allow_disk_use) == 0


@HYPO
@given(kind=st.sampled_from(KINDS), n=st.integers(1, 4), groups=st.integers(1, 12), extra=st.integers(0, 3),
       time_series=st.booleans(), allow_disk_use=st.booleans())
def test_the_values_kept_count(db, group_limit, kind, n, groups, extra, time_series, allow_disk_use):
    # the groups keep twice the limit (each its n values, fed a few more than it keeps)
    kept = 1 if kind in ("$top", "$bottom") else n
    size = 2 * LIMIT // (groups * kept) + 1
    coll = collection(db, time_series)
    load(coll, groups, kept + extra, size)
    assert outcome(coll, accumulator(kind, n), allow_disk_use) == (0 if allow_disk_use else 292)  # (it spills)


def _threshold(client, coll, pipeline) -> int:
    """The least group memory limit under which ``pipeline`` completes (without allowDiskUse)."""
    low, high = 1, 4 * 1024 * 1024
    while low < high:
        middle = (low + high) // 2
        client.admin.command("setParameter", 1, **{NAME: middle})
        try:
            list(coll.aggregate(pipeline, allowDiskUse=False))
            high = middle
        except OperationFailure as exc:
            assert exc.code == 292
            low = middle + 1
    return low


def test_a_columnar_time_series_group_counts_as_the_generic_one(db, group_limit):
    docs = [{"t": T0 + datetime.timedelta(minutes=i), "m": {"h": f"host_{i % 7}"}, "v": float(i % 31), "w": i}
            for i in range(3000)]
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    db.ts.insert_many(docs)
    db.reg.insert_many(docs)
    pipeline = [{"$match": {"v": {"$gte": 0}}},
                {"$group": {"_id": {"h": "$m.h", "t": {"$dateTrunc": {"date": "$t", "unit": "hour"}}},
                            "a": {"$max": "$v"}, "b": {"$first": "$v"}, "c": {"$avg": "$v"}, "d": {"$last": "$t"},
                            "e": {"$min": "$t"}, "n": {"$count": {}}}}]
    explained = db.command("explain", {"aggregate": "ts", "pipeline": pipeline, "cursor": {}})
    assert "columnarGroup" in str(explained)  # (the columnar path runs it)
    assert _threshold(db.client, db.ts, pipeline) == _threshold(db.client, db.reg, pipeline)
