"""A time sort with a limit on a time-series collection (``server/timeseries/time_sort.py``): a find's
``sort`` on the time field with ``limit`` (and ``skip``), or the pipeline's ``$sort`` + ``[$skip]`` +
``$limit``, reads buckets in time order and stops once no further bucket can hold a document to output
(without a limit the same sort streams: tests/e2e/test_ts_bounded_sort_stream.py).

What holds, against a real server and pymongo: the answer is the generic one — the measurements in the
collection scan's order (``find`` without a sort), sorted stably by time, skipped and limited — for both
directions, with ties of equal times across buckets and metas, in-memory and stored buckets, filters the
bucket filter decides and ones it cannot, a collection with a short bucket span, collections with a
{meta, time} index either way (one series' buckets read through it in time order), and one holding dates
outside 1970..2038 (where the bounded read is not used); a top-1 reads a bucket or two, not all of them
(explain's ``bucketsUnpacked``), and explain shows 7.0's ``$_internalBoundedSort``."""

from __future__ import annotations

import datetime as dt
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = [pytest.mark.commands("find", "aggregate", "explain", "insert", "create")]

T0 = dt.datetime(2024, 3, 1)
FILTERS = [
    {},
    {"m": 2},  # the bucket filter decides it
    {"m": {"$in": [0, 3]}},
    {"v": {"$gte": 50}},  # per measurement
    {"m": 1, "v": {"$lt": 30}},
    {"t": {"$gte": T0 + dt.timedelta(hours=2), "$lt": T0 + dt.timedelta(hours=5)}},
    {"t": {"$lt": T0 + dt.timedelta(hours=1)}, "m": {"$ne": 4}},
    # through a {meta, time} index: one index scan per series, merged in time order (equal times across
    # series: the ties the merge ranks as the read's own scan; 3 and 3.0 are one series)
    {"m": {"$in": [1, 2, 4]}},
    {"m": {"$in": [4, 0, 3.0, 3]}, "v": {"$lt": 60}},
    {"m": {"$in": [0, 1, 2, 3, 4, 5, 6]}, "t": {"$gte": T0 + dt.timedelta(hours=3)}},
]


def _docs(rng: random.Random, n: int, hours: int, step_s: int) -> list[dict]:
    docs = []
    for i in range(n):
        # times on a coarse grid: many measurements share a time, across metas and buckets
        t = T0 + dt.timedelta(seconds=rng.randrange(0, hours * 3600 // step_s) * step_s)
        docs.append({"t": t, "m": rng.randrange(5), "v": rng.randrange(100), "i": i})
    return docs


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    from harness.server import ServerProcess

    path = tmp_path_factory.mktemp("time_sort")
    proc = ServerProcess(path / "db", log_path=path / "server.log").start()
    rng = random.Random(11)
    with proc.client() as client:
        db = client.tsort
        db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m", "granularity": "seconds"})
        db.create_collection("short", timeseries={"timeField": "t", "metaField": "m", "bucketMaxSpanSeconds": 60,
                                                  "bucketRoundingSeconds": 60})
        db.create_collection("ext", timeseries={"timeField": "t", "metaField": "m"})
        db.create_collection("indexed", timeseries={"timeField": "t", "metaField": "m", "granularity": "seconds"})
        db.indexed.create_index([("m", 1), ("t", 1)])
        db.create_collection("indexed_desc", timeseries={"timeField": "t", "metaField": "m"})
        db.indexed_desc.create_index([("m", 1), ("t", -1)])
        db.indexed_desc.drop_index("m_1_t_1")  # (created with the collection): buckets read by their end
        db.create_collection("indexed_arrays", timeseries={"timeField": "t", "metaField": "m", "granularity": "seconds"})
        for name, hours, step in (("ts", 8, 300), ("short", 2, 20), ("indexed", 8, 300), ("indexed_desc", 8, 300),
                                  ("indexed_arrays", 8, 300)):
            docs = _docs(rng, 1500, hours, step)
            if name == "indexed_arrays":  # a multikey index: a bucket of meta [1, 4] is in two series
                for doc in docs[::4]:
                    doc["m"] = [doc["m"], (doc["m"] + 3) % 5]
            for start in range(0, len(docs), 250):  # batches in no time order: older buckets reopened
                db[name].insert_many(docs[start:start + 250], ordered=False)
        ext = _docs(rng, 200, 3, 600)
        for k, doc in enumerate(ext):
            if k % 7 == 0:
                doc["t"] = dt.datetime(1969, 12, 31, 23) + dt.timedelta(seconds=k)
            elif k % 11 == 0:
                doc["t"] = dt.datetime(2040, 1, 1) + dt.timedelta(seconds=k)
        db.ext.insert_many(ext)
    # a clean restart stores every bucket in its final form: a bucket written in the background later
    # (its rows then ordered by time) would reorder equal times between the reference and the read
    proc.restart()
    with proc.client() as client:
        # then in-memory buckets too, of times no other measurement has (no tie an order could decide)
        for name in ("ts", "indexed"):
            client.tsort[name].insert_many([{"t": T0 + dt.timedelta(seconds=301 * k + 7), "m": k % 5, "v": k,
                                             "i": 10_000 + k} for k in range(0, 8 * 3600 // 301, 3)])
    yield proc
    proc.kill()


def _expected(coll, flt: dict, descending: bool, skip: int, limit: int) -> list[dict]:
    scanned = list(coll.find(flt))  # the collection scan's order
    ordered = sorted(scanned, key=lambda d: d["t"], reverse=descending)  # stable, as the generic sort
    return ordered[skip:skip + limit]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(["ts", "short", "ext", "indexed", "indexed_desc", "indexed_arrays"]),
       flt=st.sampled_from(FILTERS), descending=st.booleans(),
       skip=st.sampled_from([0, 0, 1, 7, 40]), limit=st.sampled_from([1, 2, 5, 33, 400]),
       form=st.sampled_from(["find", "aggregate"]))
def test_a_time_sort_with_a_limit_answers_the_generic_sort(srv, name, flt, descending, skip, limit, form):
    with srv.client() as client:
        coll = client.tsort[name]
        direction = -1 if descending else 1
        if form == "find":
            got = list(coll.find(flt, sort=[("t", direction)], skip=skip, limit=limit))
        else:
            pipeline = [{"$match": flt}] if flt else []
            pipeline.append({"$sort": {"t": direction}})
            if skip:
                pipeline.append({"$skip": skip})
            pipeline.append({"$limit": limit})
            got = list(coll.aggregate(pipeline))
        assert got == _expected(coll, flt, descending, skip, limit)


def test_a_stage_after_the_limit_runs_on_the_kept_documents(srv):
    with srv.client() as client:
        coll = client.tsort.ts
        got = list(coll.aggregate([{"$sort": {"t": -1}}, {"$limit": 10}, {"$project": {"_id": 0, "i": 1}},
                                   {"$sort": {"i": 1}}]))
        assert got == sorted(({"i": d["i"]} for d in _expected(coll, {}, True, 0, 10)), key=lambda d: d["i"])


@pytest.mark.parametrize("direction", [1, -1])
def test_a_top_one_reads_a_few_buckets_and_explain_shows_the_bounded_sort(srv, direction):
    with srv.client() as client:
        db = client.tsort
        name = f"hourly{direction + 1}"
        db.create_collection(name, timeseries={"timeField": "t", "metaField": "m"})
        db[name].insert_many([{"t": T0 + dt.timedelta(hours=h, seconds=s), "m": 1, "v": h}
                              for h in range(48) for s in (0, 600, 1200)])
        explain = db.command("explain", {"find": name, "sort": {"t": direction}, "limit": 1},
                             verbosity="executionStats")
        cursor = explain["stages"][0]["$cursor"]
        read = cursor["queryPlanner"]["winningPlan"]["timeseries"]
        assert read["bucketsUnpacked"] <= 2 < 48
        assert cursor["queryPlanner"]["winningPlan"]["direction"] == ("backward" if direction == -1 else "forward")
        bounded = [s["$_internalBoundedSort"] for s in explain["stages"] if "$_internalBoundedSort" in s]
        assert bounded == [{"sortKey": {"t": direction}, "bound": {"base": "max" if direction == -1 else "min",
                                                                   "offsetSeconds": 0}, "limit": 1}]
        newest = db[name].find_one(sort=[("t", direction)])
        assert newest["v"] == (47 if direction == -1 else 0)


def test_a_skip_and_limit_past_the_sorts_memory_is_answered_without_disk(srv):
    """$sort, $skip, $limit: the kept documents are skip + limit (mongod moves the limit before the skip);
    the generic $sort alone over every measurement of a large collection needs allowDiskUse."""
    with srv.client() as client:
        coll = client.tsort.ts
        got = list(coll.aggregate([{"$sort": {"t": 1}}, {"$skip": 5}, {"$limit": 3}]))
        assert got == _expected(coll, {}, False, 5, 3)


def test_of_the_buckets_read_only_rows_that_may_place_become_documents(srv):
    """Twenty series over the same hour: the first bucket read fills the top; of the others, only rows at
    least as new as the worst kept are made into documents (their dense time column decides)."""
    with srv.client() as client:
        db = client.tsort
        db.create_collection("series", timeseries={"timeField": "t", "metaField": "m"})
        db.series.insert_many([{"t": T0 + dt.timedelta(seconds=s), "m": m, "v": s}
                               for m in range(20) for s in range(0, 2000, 10)])
        explain = db.command("explain", {"find": "series", "sort": {"t": -1}, "limit": 3},
                             verbosity="executionStats")
        read = explain["stages"][0]["$cursor"]["queryPlanner"]["winningPlan"]["timeseries"]
        assert read["bucketsUnpacked"] == 20 and read["measurementsUnpacked"] < 200 + 19 * 3 < 4000
        got = list(db.series.find({}, sort=[("t", -1)], limit=3))
        assert [(d["m"], d["v"]) for d in got] == [(0, 1990), (1, 1990), (2, 1990)]  # ties: the scan's order


@pytest.mark.parametrize("key_direction", [1, -1])  # buckets by start, or by end
@pytest.mark.parametrize("direction", [1, -1])
def test_one_series_newest_or_oldest_is_read_through_its_index_in_time_order(srv, key_direction, direction):
    with srv.client() as client:
        db = client.tsort
        name = f"sensors_{key_direction + 1}_{direction + 1}"
        db.create_collection(name, timeseries={"timeField": "t", "metaField": "m"})
        index = db[name].create_index([("m", 1), ("t", key_direction)])
        if key_direction == -1:
            db[name].drop_index("m_1_t_1")  # the one a collection with a metaField is created with
        db[name].insert_many([{"t": T0 + dt.timedelta(hours=h, minutes=mi), "m": m, "v": h}
                              for m in range(5) for h in range(48) for mi in (0, 30)])
        explain = db.command("explain", {"find": name, "filter": {"m": 3}, "sort": {"t": direction}, "limit": 1},
                             verbosity="executionStats")
        plan = explain["stages"][0]["$cursor"]["queryPlanner"]["winningPlan"]
        read = plan.get("timeseries") or plan["inputStage"]["timeseries"]
        assert read["indexName"] == index and read["bucketsUnpacked"] <= 2 < 48
        assert db[name].find_one({"m": 3}, sort=[("t", direction)])["v"] == (47 if direction == -1 else 0)


@pytest.mark.parametrize("key_direction", [1, -1])
@pytest.mark.parametrize("direction", [1, -1])
def test_a_few_series_newest_or_oldest_merge_their_index_scans(srv, key_direction, direction):
    """A ``$in`` of several series read all their buckets and sorted every measurement (index order is
    series by series): now one index scan per series, merged in time order (mongod's SORT_MERGE), stops
    as one series does; ties of equal times are ranked as the read's own scan ranks them (series order),
    and a ``$in`` of more than MERGE_MAX_SERIES series keeps the generic sort (same answer)."""
    with srv.client() as client:
        db = client.tsort
        name = f"merged_{key_direction + 1}_{direction + 1}"
        db.create_collection(name, timeseries={"timeField": "t", "metaField": "m"})
        db[name].create_index([("m", 1), ("t", key_direction)])
        if key_direction == -1:
            db[name].drop_index("m_1_t_1")
        db[name].insert_many([{"t": T0 + dt.timedelta(hours=h, minutes=mi), "m": m, "v": h}
                              for m in range(80) for h in range(48) for mi in (0, 30)])
        for series in ([31, 5, 17], list(range(70))):
            flt = {"m": {"$in": series}}
            explain = db.command("explain", {"find": name, "filter": flt, "sort": {"t": direction}, "limit": 4},
                                 verbosity="executionStats")
            plan = explain["stages"][0]["$cursor"]["queryPlanner"]["winningPlan"]
            read = plan.get("timeseries") or plan["inputStage"]["timeseries"]
            if len(series) == 3:
                assert read["bucketsUnpacked"] <= 6 < 3 * 48
            else:
                assert read["bucketsUnpacked"] == 70 * 48  # more series than merged: every bucket
            got = list(db[name].find(flt, sort=[("t", direction)], limit=4))
            assert got == _expected(db[name], flt, direction == -1, 0, 4)
            newest = 47 if direction == -1 else 0
            assert [(d["m"], d["v"]) for d in got[:3]] == [(m, newest) for m in sorted(series)[:3]]


def test_a_limit_is_a_stop_not_what_the_sort_memory_holds(srv):
    """As mongod's bounded sorter: the documents held are those of the buckets overlapping in time, not
    the skip + limit kept (a limit only stops the read), so a limit of 400 (~28 KB of documents) answers
    under a 20,000-byte sort memory limit with allowDiskUse false; where the overlap passes the limit,
    292 (tests/e2e/test_ts_bounded_sort_stream.py)."""
    with srv.client() as client:
        coll = client.tsort.ts
        client.admin.command("setParameter", 1, internalQueryMaxBlockingSortMemoryUsageBytes=20_000)
        try:
            got = list(coll.find({}, sort=[("t", -1)], limit=400, allow_disk_use=False))
            agg = list(coll.aggregate([{"$sort": {"t": -1}}, {"$limit": 400}], allowDiskUse=False))
        finally:
            client.admin.command("setParameter", 1, internalQueryMaxBlockingSortMemoryUsageBytes=100 * 1024 * 1024)
        assert got == agg == _expected(coll, {}, True, 0, 400)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf"), 2.5, 0, -3, "x", True])
def test_a_bad_limit_or_skip_gets_the_generic_error(srv, bad):
    """The bounded sort takes only whole numbers; any other $limit/$skip is judged by the generic parse,
    with its own code (never a Python error)."""
    from pymongo.errors import OperationFailure

    with srv.client() as client:
        coll = client.tsort.ts
        for pipeline in ([{"$sort": {"t": -1}}, {"$limit": bad}], [{"$sort": {"t": 1}}, {"$skip": bad}, {"$limit": 2}]):
            if pipeline[1].get("$skip") == 0:
                continue  # a zero skip is valid
            with pytest.raises(OperationFailure) as failed:
                list(coll.aggregate(pipeline))
            assert failed.value.code not in (1, 15), failed.value.details
