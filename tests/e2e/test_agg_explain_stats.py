"""An aggregate's explain at executionStats / allPlansExecution shows what each stage did.

mongod 7.0 appends to every stage after ``$cursor`` its ``nReturned`` and ``executionTimeMillisEstimate``
(pipeline.cpp appendCommonExecStats, both 64-bit), after the stage's own statistics: ``$group``
(document_source_group_base.cpp serialize at kExecStats) ``maxAccumulatorMemoryUsageBytes`` (one per
accumulated field), ``totalOutputDataSizeBytes``, ``usedDisk``, ``spills``, ``spilledDataStorageSize``,
``numBytesSpilledEstimate``, ``spilledRecords``; ``$sort`` (document_source_sort.cpp)
``totalDataSizeSortedBytesEstimate``, ``usedDisk``, ``spills``, ``spilledDataStorageSize``;
``$_internalSetWindowFields`` ``maxFunctionMemoryUsageBytes`` (one per output), ``maxTotalMemoryUsageBytes``,
``usedDisk``; ``$lookup`` (document_source_lookup.cpp)
``totalDocsExamined``, ``totalKeysExamined``, ``collectionScans``, ``indexesUsed``; ``$unionWith`` its
sub-pipeline explained as it ran. At queryPlanner none of them
(jstests/noPassthrough/explain_group_stage_exec_stats.js). Tidemark showed the stages' specs alone.

The family: random documents and random pipelines of $match/$group/$sort/$limit/$project/$lookup/$unwind;
each shown stage's nReturned must be what the pipeline up to it returns, run as a plain aggregate (the
explain's own stages turned back into a pipeline: the $cursor's filter, then each stage).
"""

from __future__ import annotations

import datetime

import pytest
from bson.int64 import Int64
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.commands("explain", "aggregate", "setParameter")

HYPO = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
COMMON = ("nReturned", "executionTimeMillisEstimate")
GROUP_STATS = ("maxAccumulatorMemoryUsageBytes", "totalOutputDataSizeBytes", "usedDisk", "spills",
               "spilledDataStorageSize", "numBytesSpilledEstimate", "spilledRecords")
SORT_STATS = ("totalDataSizeSortedBytesEstimate", "usedDisk", "spills", "spilledDataStorageSize")
STATS = set(COMMON) | set(GROUP_STATS) | set(SORT_STATS) | {"maxFunctionMemoryUsageBytes", "maxTotalMemoryUsageBytes"}


def _explain(db, pipeline, verbosity="executionStats", coll="c", **options):
    return db.command("explain", {"aggregate": coll, "pipeline": pipeline, "cursor": {}, **options},
                      verbosity=verbosity)


def _stages(reply):
    assert "stages" in reply, reply
    return reply["stages"][1:]


def _runnable(stage: dict) -> list[dict]:
    """An explained stage as a pipeline again (its statistics dropped, a top-k $sort as $sort + $limit)."""
    name = next(iter(stage))
    spec = stage[name]
    if name == "$sort":
        return [{"$sort": spec["sortKey"]}] + ([{"$limit": spec["limit"]}] if "limit" in spec else [])
    return [{name: spec}]


# ------------------------------------------------------------------ the family

_values = st.one_of(st.none(), st.integers(-3, 3), st.sampled_from(["x", "y"]), st.lists(st.integers(0, 3), max_size=3))
_docs = st.lists(st.fixed_dictionaries({"a": st.integers(0, 5), "b": _values},
                                       optional={"k": st.integers(0, 3), "arr": st.lists(st.integers(0, 3), max_size=3)}),
                 max_size=25)
_field = st.sampled_from(["a", "b", "k", "arr"])
_stage = st.one_of(
    st.builds(lambda f, v: {"$match": {f: {"$gte": v}}}, _field, st.integers(0, 3)),
    st.builds(lambda f: {"$group": {"_id": f"${f}", "n": {"$sum": 1}, "p": {"$push": "$a"}}}, _field),
    st.builds(lambda f, d: {"$sort": {f: d, "_id": 1}}, _field, st.sampled_from([1, -1])),
    st.builds(lambda n: {"$limit": n}, st.integers(1, 10)),
    st.builds(lambda f: {"$project": {f: 1, "a": 1, "arr": 1}}, _field),
    st.builds(lambda f: {"$lookup": {"from": "f", "localField": f, "foreignField": "k", "as": "j"}}, _field),
    st.builds(lambda f, p: {"$unwind": {"path": f"${f}", "preserveNullAndEmptyArrays": p}},
              st.sampled_from(["arr", "j"]), st.booleans()),
    st.builds(lambda f: {"$sortByCount": f"${f}"}, _field),  # (shown as its $group and $sort)
    st.just({"$count": "n"}),
)
_pipelines = st.lists(_stage, min_size=1, max_size=6)


@pytest.fixture
def family_db(db):
    db.f.insert_many([{"k": i % 4, "w": i} for i in range(7)])
    return db


@HYPO
@given(docs=_docs, pipeline=_pipelines, verbosity=st.sampled_from(["executionStats", "allPlansExecution"]))
def test_each_stage_returns_what_the_pipeline_up_to_it_returns(family_db, docs, pipeline, verbosity):
    db = family_db
    db.c.delete_many({})
    if docs:
        db.c.insert_many([dict(d) for d in docs])
    reply = _explain(db, pipeline, verbosity)
    total = len(list(db.c.aggregate(pipeline)))
    if reply.get("queryPlanner", {}).get("optimizedPipeline"):  # answered by the query layer alone
        assert reply["executionStats"]["nReturned"] == total
        return
    cursor = reply["stages"][0]["$cursor"]
    stages = _stages(reply)
    assert stages, reply
    # Stages pull documents one at a time: a $limit downstream stops the stages before it early, so
    # a stage with a limit after it returned at most what its prefix returns; any other exactly that.
    limited = [any(_limits(later) for later in stages[i + 1:]) for i in range(len(stages))]
    prefix = [{"$match": cursor["queryPlanner"]["parsedQuery"]}]
    _check_count(cursor["executionStats"]["nReturned"], len(list(db.c.aggregate(prefix))),
                 any(_limits(s) for s in stages))
    for stage, cut in zip(stages, limited, strict=True):
        for field in COMMON:
            assert type(stage[field]) is Int64 and stage[field] >= 0, stage
        assert list(stage)[-2:] == list(COMMON), stage  # (after the stage's own statistics)
        prefix += _runnable({k: v for k, v in stage.items() if k not in STATS})
        _check_count(stage["nReturned"], len(list(db.c.aggregate(prefix))), cut, (prefix, stage))
    assert stages[-1]["nReturned"] == total


def _limits(stage: dict) -> bool:
    return "$limit" in stage or "$sort" in stage and "limit" in stage["$sort"]


def _check_count(shown: int, expected: int, cut: bool, context: object = None) -> None:
    if cut:
        assert shown <= expected, context
    else:
        assert shown == expected, context


def test_query_planner_shows_no_statistics(db):
    db.c.insert_many([{"a": i % 3, "b": i} for i in range(10)])
    pipeline = [{"$match": {"b": {"$gte": 0}}}, {"$group": {"_id": "$a", "n": {"$sum": 1}}}, {"$sort": {"n": 1}},
                {"$project": {"n": 1}}]
    for stage in _stages(_explain(db, pipeline, "queryPlanner")):
        assert not STATS & set(stage), stage


def test_group_and_sort_in_memory(db):
    big = "," * 1024
    db.c.insert_many([{"_id": i, "a": i, "b": i % 50, "big": big} for i in range(1, 301)])
    pipeline = [{"$match": {"a": {"$gt": 0}}}, {"$group": {"_id": "$b", "count": {"$sum": 1}, "push": {"$push": "$big"},
                                                          "set": {"$addToSet": "$big"}}},
                {"$sort": {"count": -1, "_id": 1}}]
    group, sort = _stages(_explain(db, pipeline))
    assert list(group)[1:] == [*GROUP_STATS, *COMMON], group
    assert set(group["maxAccumulatorMemoryUsageBytes"]) == {"count", "push", "set"}
    usage = group["maxAccumulatorMemoryUsageBytes"]
    assert 300 * 1024 < usage["push"] < 5 * 300 * 1024, usage  # every value kept: 300 of 1 KiB
    assert 50 * 1024 < usage["set"] < 5 * 50 * 1024, usage  # one per group
    assert 0 < usage["count"] < 50 * 1024, usage
    assert group["totalOutputDataSizeBytes"] > 300 * 1024
    assert (group["usedDisk"], group["spills"], group["spilledRecords"], group["spilledDataStorageSize"],
            group["numBytesSpilledEstimate"]) == (False, 0, 0, 0, 0)
    assert group["nReturned"] == 50
    assert list(sort)[1:] == [*SORT_STATS, *COMMON], sort
    assert (sort["usedDisk"], sort["spills"], sort["spilledDataStorageSize"]) == (False, 0, 0)
    assert sort["totalDataSizeSortedBytesEstimate"] >= group["totalOutputDataSizeBytes"] // 2
    assert sort["nReturned"] == 50


@pytest.mark.slow
@pytest.mark.parametrize("rows", [400, 1500])
def test_spills_are_reported_after_a_small_memory_limit(start_server, rows):
    proc = start_server()
    with proc.client() as client:
        db = client.t
        big = "," * 1024
        db.c.insert_many([{"_id": i, "a": i, "b": i % 7, "big": big} for i in range(rows)])
        pipeline = [{"$group": {"_id": "$a", "push": {"$push": "$big"}}}, {"$sort": {"push": 1, "_id": 1}}]
        group, sort = _stages(_explain(db, pipeline, allowDiskUse=True))
        assert (group["usedDisk"], group["spills"], sort["usedDisk"], sort["spills"]) == (False, 0, False, 0)
        client.admin.command("setParameter", 1, internalDocumentSourceGroupMaxMemoryBytes=300 * 1024)
        client.admin.command("setParameter", 1, internalQueryMaxBlockingSortMemoryUsageBytes=200 * 1024)
        group, sort = _stages(_explain(db, pipeline, allowDiskUse=True))
        assert group["usedDisk"] is True and group["spills"] >= 1, group
        assert group["spilledRecords"] >= 1 and group["spilledDataStorageSize"] > 0, group
        assert group["numBytesSpilledEstimate"] > 0, group
        assert group["nReturned"] == rows
        assert sort["usedDisk"] is True, sort
        # each run holds at most the limit: the documents (over 1 KiB each) took several runs
        assert sort["spills"] >= rows * 1024 // (200 * 1024) - 1, sort
        assert sort["spilledDataStorageSize"] > 0 and sort["totalDataSizeSortedBytesEstimate"] > rows * 1024, sort
        assert sort["nReturned"] == rows
        for verbosity in ("queryPlanner",):
            for stage in _stages(_explain(db, pipeline, verbosity, allowDiskUse=True)):
                assert not STATS & set(stage), stage


def test_set_window_fields(db):
    db.c.insert_many([{"_id": i, "p": i % 3, "v": i} for i in range(12)])
    pipeline = [{"$setWindowFields": {"partitionBy": "$p", "sortBy": {"v": 1}, "output": {"s": {"$sum": "$v"}}}}]
    sort, window = _stages(_explain(db, pipeline))
    assert "$_internalSetWindowFields" in window
    assert list(window)[1:] == ["maxFunctionMemoryUsageBytes", "maxTotalMemoryUsageBytes", "usedDisk", *COMMON], window
    assert window["usedDisk"] is False and window["maxTotalMemoryUsageBytes"] > 0
    assert window["nReturned"] == sort["nReturned"] == 12
    assert set(window["maxFunctionMemoryUsageBytes"]) == {"s"}


def test_set_window_fields_function_memory(db):
    big = "," * 1024
    db.c.insert_many([{"_id": i, "p": i % 2, "big": big} for i in range(40)])
    pipeline = [{"$setWindowFields": {"partitionBy": "$p", "sortBy": {"_id": 1},
                                      "output": {"all": {"$push": "$big"}, "n": {"$count": {}},
                                                 "r": {"$rank": {}}}}}]
    _, window = _stages(_explain(db, pipeline))
    usage = window["maxFunctionMemoryUsageBytes"]
    assert list(usage) == ["all", "n", "r"], usage
    assert 20 * 1024 < usage["all"] < 5 * 20 * 1024, usage  # a partition's 20 values of 1 KiB
    assert 0 < usage["n"] < 1024 and 0 < usage["r"] < 1024, usage
    assert window["maxTotalMemoryUsageBytes"] > 40 * 1024, window


def test_time_series_stages_show_their_counts(db):
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    start = datetime.datetime(2024, 1, 1)
    db.ts.insert_many([{"t": start + datetime.timedelta(minutes=i), "m": i % 3, "v": i} for i in range(60)])
    pipeline = [{"$match": {"v": {"$gte": 10}}}, {"$addFields": {"w": 1}}, {"$group": {"_id": "$m", "s": {"$sum": "$v"}}},
                {"$sort": {"s": 1}}]
    stages = _stages(_explain(db, pipeline, coll="ts"))
    names = [next(iter(s)) for s in stages]
    assert names == ["$_internalUnpackBucket", "$addFields", "$group", "$sort"], stages
    assert [s["nReturned"] for s in stages] == [50, 50, 3, 3]
    assert set(GROUP_STATS) <= set(stages[2]) and set(SORT_STATS) <= set(stages[3])


def test_lookup_reports_the_foreign_documents_it_read(db):
    db.c.insert_many([{"_id": i, "k": i % 4} for i in range(10)])
    db.f.insert_many([{"_id": i, "k": i % 4} for i in range(6)])
    joined = {"$lookup": {"from": "f", "localField": "k", "foreignField": "k", "as": "j"}}
    (lookup,) = _stages(_explain(db, [joined]))
    assert list(lookup)[1:] == ["totalDocsExamined", "totalKeysExamined", "collectionScans", "indexesUsed", *COMMON]
    # Tidemark reads the foreign collection once and joins in memory: one scan of its 6 documents
    assert (lookup["totalDocsExamined"], lookup["totalKeysExamined"], lookup["collectionScans"],
            lookup["indexesUsed"], lookup["nReturned"]) == (6, 0, 1, [], 10)
    correlated = {"$lookup": {"from": "f", "let": {"v": "$k"}, "as": "j",
                              "pipeline": [{"$match": {"$expr": {"$eq": ["$k", "$$v"]}}}]}}
    (lookup,) = _stages(_explain(db, [{"$match": {"_id": {"$lt": 3}}}, correlated]))
    assert lookup["nReturned"] == 3
    assert lookup["totalDocsExamined"] >= 3 * 2 - 1, lookup  # at least each document's matches (2 or 1)
    (lookup,) = _stages(_explain(db, [joined], "queryPlanner"))
    assert "totalDocsExamined" not in lookup and "collectionScans" not in lookup


def test_union_with_shows_its_sub_pipeline_as_run(db):
    db.c.insert_many([{"_id": i, "a": i % 5} for i in range(10)])
    db.f.insert_many([{"_id": i, "a": i} for i in range(4)])
    pipeline = [{"$unionWith": {"coll": "f", "pipeline": [{"$group": {"_id": "$a"}}, {"$sort": {"_id": 1}}]}},
                {"$unionWith": "f"}]
    first, second = _stages(_explain(db, pipeline))
    sub = first["$unionWith"]["pipeline"]
    assert [next(iter(s)) for s in sub] == ["$group", "$sort"]
    assert [s["nReturned"] for s in sub] == [4, 4]
    assert first["nReturned"] == 14 and second["nReturned"] == 18
    assert second["$unionWith"] == {"coll": "f", "pipeline": []}


def test_sort_by_count_shows_its_group_and_sort(db):
    db.c.insert_many([{"_id": i, "a": i % 4} for i in range(10)])
    group, sort = _stages(_explain(db, [{"$sortByCount": "$a"}]))
    assert list(group)[1:] == [*GROUP_STATS, *COMMON] and list(sort)[1:] == [*SORT_STATS, *COMMON]
    assert set(group["maxAccumulatorMemoryUsageBytes"]) == {"count"}
    assert group["nReturned"] == sort["nReturned"] == 4
    assert sort["totalDataSizeSortedBytesEstimate"] > 0


def test_bucket_auto_shows_only_its_counts(db):
    # mongod 7.0's $bucketAuto serializes no statistics of its own (document_source_bucket_auto.cpp)
    db.c.insert_many([{"_id": i, "a": i} for i in range(20)])
    (stage,) = _stages(_explain(db, [{"$bucketAuto": {"groupBy": "$a", "buckets": 4}}]))
    assert list(stage) == ["$bucketAuto", *COMMON] and stage["nReturned"] == 4
