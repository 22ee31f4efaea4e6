"""A time sort without a limit on a time-series collection streams (``server/timeseries/time_sort.py``):
``find().sort({t: ±1})`` and ``aggregate([{$sort: {t: ±1}}, ...])`` read the buckets in time order and
give each measurement back once no later bucket can precede it — mongod 7.0's ``$_internalBoundedSort``
— where the generic sort buffered and sorted every measurement (a blocking sort: 292 past
internalQueryMaxBlockingSortMemoryUsageBytes without allowDiskUse, a spill with it).

What holds, against a real server and pymongo:
- the answer is the generic stable sort's over the collection scan's order (ties included), and the same
  measurements per time as the same data in a regular collection sorted the same way (Hypothesis:
  random series and times, in and out of order, buckets overlapping in time, both directions, with and
  without a meta prefix, skip and limit);
- explain shows the bounded sort as 7.0 does: ``limit`` is the absorbed ``$limit`` (with its ``$skip``),
  0 without one (7.0's sorter option for "no limit"), and no blocking ``$sort``;
- memory follows the overlap, not the collection: with the sort memory limit lowered far below the
  collection's size, the sort answers with allowDiskUse false; when the buckets overlapping in time
  hold more than the limit, 292 (as mongod's bounded sorter), and allowDiskUse spills them (the profile
  says usedDisk) and answers; the differential runs under a limit so small that it spills throughout.
"""

from __future__ import annotations

import datetime as dt
import itertools

import pytest
from harness.parameters import server_parameter
from harness.profiling import profiling
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = [pytest.mark.commands("find", "aggregate", "explain", "insert", "create")]

T0 = dt.datetime(2024, 5, 1)


def _stages(db, command: dict) -> list[dict]:
    return db.command("explain", command, verbosity="queryPlanner")["stages"]


def _bounded(stages: list[dict]) -> list[dict]:
    return [s["$_internalBoundedSort"] for s in stages if "$_internalBoundedSort" in s]


def _bounded_stats(explained: dict) -> dict:
    stage = next(s for s in explained["stages"] if "$_internalBoundedSort" in s)
    return {k: v for k, v in stage.items() if k != "$_internalBoundedSort"}


def _by_time(docs: list[dict], descending: bool) -> list[dict]:
    return sorted(docs, key=lambda d: d["t"], reverse=descending)  # stable: the scan's order of ties


def _groups(docs: list[dict]) -> list[tuple]:
    """The documents as (time, the multiset of the documents of that time) runs, in order."""
    return [(t, sorted(repr(sorted(d.items())) for d in group))
            for t, group in itertools.groupby(docs, key=lambda d: d["t"])]


measurement = st.tuples(st.integers(0, 5),  # series
                        st.integers(0, 4 * 3600 // 7),  # time, on a 7 s grid: ties across series and buckets
                        st.integers(0, 99))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(measurement, min_size=1, max_size=400), batches=st.integers(1, 5),
       descending=st.booleans(), meta_prefix=st.booleans(),
       skip=st.sampled_from([0, 0, 3]), limit=st.sampled_from([None, None, 1, 9, 1000]),
       form=st.sampled_from(["find", "aggregate"]), span=st.sampled_from([60, 3600]),
       projected=st.booleans(), memory=st.sampled_from([None, None, 600, 4096]))
def test_a_time_sort_answers_the_generic_sort(db, client, rows, batches, descending, meta_prefix, skip, limit, form,
                                              span, projected, memory):
    """Measurements inserted in ``batches`` (each in its own order: buckets reopened and overlapping in
    time), sorted by time (or meta then time) both ways, with and without skip and limit, projected (the
    documents made dicts for a stage) or not (the cursor takes the held BSON as it is), under the default
    sort memory or one so small that the held measurements spill again and again (allowDiskUse): the
    generic stable sort's answer, and the regular collection's measurements time by time; a sort on time
    alone is the bounded sort, with the limit it absorbed (0: none)."""
    name = f"s{abs(hash((tuple(rows), batches, span))) % 10 ** 9}"
    db.drop_collection(name)
    db.drop_collection(name + "_reg")
    db.create_collection(name, timeseries={"timeField": "t", "metaField": "m", "bucketMaxSpanSeconds": span,
                                           "bucketRoundingSeconds": span})
    docs = [{"t": T0 + dt.timedelta(seconds=7 * s), "m": m, "v": v, "i": i} for i, (m, s, v) in enumerate(rows)]
    size = -(-len(docs) // batches)
    for start in range(0, len(docs), size):
        db[name].insert_many(docs[start:start + size], ordered=False)
    db[name + "_reg"].insert_many(docs)
    direction = -1 if descending else 1
    sort = {"m": 1, "t": direction} if meta_prefix else {"t": direction}
    pipeline: list[dict] = [{"$sort": sort}]
    if skip:
        pipeline.append({"$skip": skip})
    if limit is not None:
        pipeline.append({"$limit": limit})
    if projected:
        pipeline.append({"$project": {"_id": 0}})
    shown = {"_id": 0} if projected else None

    def run(coll):
        if form == "find":
            return list(coll.find({}, shown, sort=list(sort.items()), skip=skip, limit=limit or 0,
                                  allow_disk_use=True))
        return list(coll.aggregate(pipeline, allowDiskUse=True))

    if memory is None:
        got = run(db[name])
    else:
        with server_parameter(client, "internalQueryMaxBlockingSortMemoryUsageBytes", memory):
            got = run(db[name])
    scanned = list(db[name].find({}, shown))  # the collection scan's order
    if meta_prefix:
        expected = sorted(_by_time(scanned, descending), key=lambda d: d["m"])
    else:
        expected = _by_time(scanned, descending)
    end = None if limit is None else skip + limit
    assert got == expected[skip:end]
    if not meta_prefix and limit is None and not skip:
        assert _groups(got) == _groups(run(db[name + "_reg"]))
    if not meta_prefix:
        command = ({"find": name, "sort": sort, "skip": skip, **({"limit": limit} if limit else {})}
                   if form == "find" else {"aggregate": name, "pipeline": pipeline, "cursor": {}})
        stages = _stages(db, command)
        k = 0 if limit is None else skip + limit
        assert _bounded(stages) == [{"sortKey": {"t": direction},
                                     "bound": {"base": "max" if descending else "min", "offsetSeconds": 0},
                                     "limit": k}]
        assert not any("$sort" in s for s in stages)
    db.drop_collection(name)
    db.drop_collection(name + "_reg")


def test_explain_shows_the_bounded_sort_without_a_limit_and_the_stages_after_it(db):
    db.create_collection("c", timeseries={"timeField": "t", "metaField": "m"})
    db.c.insert_many([{"t": T0 + dt.timedelta(minutes=i), "m": i % 3, "v": i} for i in range(300)])
    min_bound = {"base": "min", "offsetSeconds": 0}
    names = [next(iter(s)) for s in _stages(db, {"find": "c", "sort": {"t": 1}})]
    assert names == ["$cursor", "$_internalUnpackBucket", "$_internalBoundedSort"]
    assert _bounded(_stages(db, {"find": "c", "sort": {"t": 1}})) == [{"sortKey": {"t": 1}, "bound": min_bound,
                                                                       "limit": 0}]
    assert _bounded(_stages(db, {"find": "c", "sort": {"t": -1}})) == [
        {"sortKey": {"t": -1}, "bound": {"base": "max", "offsetSeconds": 0}, "limit": 0}]
    assert _bounded(_stages(db, {"find": "c", "sort": {"t": 1}, "limit": 5})) == [
        {"sortKey": {"t": 1}, "bound": min_bound, "limit": 5}]
    grouped = _stages(db, {"aggregate": "c", "pipeline": [{"$sort": {"t": 1}},
                                                          {"$group": {"_id": "$m", "first": {"$first": "$v"}}}],
                           "cursor": {}})
    assert [next(iter(s)) for s in grouped][1:] == ["$_internalUnpackBucket", "$_internalBoundedSort", "$group"]
    skipped = _stages(db, {"aggregate": "c", "pipeline": [{"$sort": {"t": -1}}, {"$skip": 4}], "cursor": {}})
    assert [next(iter(s)) for s in skipped][2:] == ["$_internalBoundedSort", "$skip"]
    assert _bounded(skipped)[0]["limit"] == 0
    got = list(db.c.aggregate([{"$sort": {"t": 1}}, {"$group": {"_id": "$m", "first": {"$first": "$v"}}},
                               {"$sort": {"_id": 1}}]))
    assert got == [{"_id": 0, "first": 0}, {"_id": 1, "first": 1}, {"_id": 2, "first": 2}]


def _long(db, name: str, series: int, hours: int, step_s: int) -> list[dict]:
    """``series`` series measured every ``step_s`` seconds for ``hours`` hours (buckets of one series
    follow each other in time: the overlap is one bucket per series)."""
    db.create_collection(name, timeseries={"timeField": "t", "metaField": "m", "granularity": "seconds"})
    docs = [{"t": T0 + dt.timedelta(seconds=s), "m": m, "v": s % 1000, "pad": "x" * 40}
            for s in range(0, hours * 3600, step_s) for m in range(series)]
    db[name].insert_many(docs, ordered=False)
    return docs


@pytest.mark.slow
def test_a_sort_of_a_collection_far_larger_than_the_sort_memory_answers_without_disk(db, client):
    """~20,000 measurements (~2 MB of documents) sorted both ways under a 256 KB sort memory limit with
    allowDiskUse false: the bounded sort holds only the buckets that overlap in time, so it answers (the
    generic blocking sort needed the whole collection: 292)."""
    docs = _long(db, "long", 2, 28, 10)
    reference = list(db.long.find({}, {"_id": 0}))
    with server_parameter(client, "internalQueryMaxBlockingSortMemoryUsageBytes", 256 * 1024):
        for direction in (1, -1):
            got = list(db.long.find({}, {"_id": 0}, sort=[("t", direction)], allow_disk_use=False, batch_size=500))
            assert len(got) == len(docs)
            assert got == _by_time(reference, direction == -1)
            agg = list(db.long.aggregate([{"$sort": {"t": direction}}, {"$project": {"_id": 0}}], allowDiskUse=False))
            assert agg == got


def test_buckets_overlapping_past_the_sort_memory_fail_292_unless_disk_use_is_allowed(db, client):
    """Eighty series over the same minutes: every bucket starts at the same time, so the bounded sort
    holds them all before it can give one back — past the lowered limit, 292 with allowDiskUse false (as
    mongod's bounded sorter); allowed, the held measurements spill (the profile says usedDisk) and it
    answers, both ways, projected or not (allowDiskUse absent: allowDiskUseByDefault decides). One series
    of them, ten hours long (~700 KB: far past the limit, 292 for a blocking sort), answers under the same
    limit: its buckets follow each other."""
    db.create_collection("wide", timeseries={"timeField": "t", "metaField": "m", "granularity": "seconds"})
    db.wide.insert_many([{"t": T0 + dt.timedelta(seconds=s), "m": m, "pad": "y" * 40}
                         for s in range(0, 600, 5) for m in range(80)])
    db.wide.insert_many([{"t": T0 + dt.timedelta(seconds=s), "m": 7, "pad": "y" * 40}
                         for s in range(600, 36_000, 5)])
    reference = list(db.wide.find({}, {"_id": 0}))
    with server_parameter(client, "internalQueryMaxBlockingSortMemoryUsageBytes", 64 * 1024):
        with pytest.raises(OperationFailure) as failed:
            list(db.wide.find({}, {"_id": 0}, sort=[("t", 1)], allow_disk_use=False))
        assert failed.value.code == 292
        assert failed.value.details["codeName"] == "QueryExceededMemoryLimitNoDiskUseAllowed"
        assert failed.value.details["errmsg"] == ("Sort exceeded memory limit of 65536 bytes, but did not opt in "
                                                  "to external sorting.")
        for direction in (1, -1):
            with profiling(db):
                got = list(db.wide.aggregate([{"$sort": {"t": direction}}, {"$project": {"_id": 0}}],
                                             allowDiskUse=True))
            assert got == _by_time(reference, direction == -1)
            # the held measurements went to disk: a spill (mongod's bounded sorter spills its heap), in the
            # aggregate or in a getMore (descending, the one long series' newest buckets come first)
            assert db.system.profile.count_documents({"usedDisk": True}) > 0
            db.drop_collection("system.profile")
            # explain's executionStats show the bounded sorter's spills as 7.0's stage does
            stats = _bounded_stats(db.command("explain", {"aggregate": "wide", "pipeline": [{"$sort": {"t": direction}}],
                                                          "cursor": {}, "allowDiskUse": True},
                                              verbosity="executionStats"))
            assert stats["usedDisk"] is True and stats["spills"] >= 1 and stats["spilledDataStorageSize"] > 0
            assert stats["totalDataSizeSortedBytesEstimate"] > 64 * 1024
            got = list(db.wide.find({}, sort=[("t", direction)], allow_disk_use=True))  # (the BSON held, as it is)
            assert [{k: v for k, v in d.items() if k != "_id"} for d in got] == _by_time(reference, direction == -1)
        # allowDiskUse absent: allowDiskUseByDefault decides (true: a spill; false: 292)
        assert list(db.wide.find({}, {"_id": 0}, sort=[("t", 1)])) == _by_time(reference, False)
        with server_parameter(client, "allowDiskUseByDefault", False):
            with pytest.raises(OperationFailure) as failed:
                list(db.wide.aggregate([{"$sort": {"t": -1}}]))
            assert failed.value.code == 292
        one = list(db.wide.find({"m": 7}, {"_id": 0}, sort=[("t", -1)], allow_disk_use=False))
        assert one == _by_time([d for d in reference if d["m"] == 7], True)
        stats = _bounded_stats(db.command("explain", {"find": "wide", "filter": {"m": 7}, "sort": {"t": -1}},
                                          verbosity="executionStats"))
        assert stats["usedDisk"] is False and stats["spills"] == 0 and stats["spilledDataStorageSize"] == 0
