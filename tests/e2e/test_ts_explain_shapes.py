"""Issue 25 item 13: explain on a time-series collection has MongoDB 7.0's shapes, as mongod's jstests
read them (``jstests/libs/analyze_plan.js``: ``getAggPlanStage``, ``getPlanStage``; time-series jstests
such as ``timeseries_explain_delete.js`` and ``timeseries_groupby_reorder.js``): the unpack stage and
what 7.0 moves before or after it, the delete plan, clustered and index scans over the buckets."""

from __future__ import annotations

import datetime as dt

import pymongo.errors
import pytest

T0 = dt.datetime(2024, 3, 1)
CLOSED = {"control.closed": {"$not": {"$eq": True}}}

pytestmark = pytest.mark.commands("explain", "aggregate", "delete", "createIndexes")


# ------------------------------------------------------------------ analyze_plan.js, in Python


def plan_stages(root: dict, stage: str) -> list[dict]:
    """getPlanStages: the plan nodes named ``stage`` under ``root`` (inputStage/inputStages)."""
    out = [root] if root.get("stage") == stage else []
    if "inputStage" in root:
        out += plan_stages(root["inputStage"], stage)
    for child in root.get("inputStages", []):
        out += plan_stages(child, stage)
    return out


def agg_plan_stages(explain: dict, stage: str) -> list[dict]:
    """getAggPlanStages: agg stages named ``stage`` (each stage document has exactly one field besides
    execution counters) plus plan nodes of the ``$cursor``'s winning plan."""
    stages = explain["stages"]
    assert "queryPlanner" in stages[0]["$cursor"] and "winningPlan" in stages[0]["$cursor"]["queryPlanner"]
    out = [s for s in stages if next(iter(s)) == stage]
    return out + plan_stages(stages[0]["$cursor"]["queryPlanner"]["winningPlan"], stage)


def agg_plan_stage(explain: dict, stage: str) -> dict | None:
    found = agg_plan_stages(explain, stage)
    assert len(found) <= 1, found
    return found[0] if found else None


def stage_names(explain: dict) -> list[str]:
    return [next(iter(s)) for s in explain["stages"]]


def explain_agg(db, pipeline, coll="ts", verbosity="queryPlanner"):
    return db.command("explain", {"aggregate": coll, "pipeline": pipeline, "cursor": {}}, verbosity=verbosity)


def winning(explain):
    return explain["stages"][0]["$cursor"]["queryPlanner"]["winningPlan"]


@pytest.fixture
def ts(db):
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    db.ts.insert_many([{"t": T0 + dt.timedelta(minutes=10 * i), "m": {"s": s, "k": i % 2}, "v": i, "w": -i}
                       for i in range(60) for s in "ab"])
    return db.ts


# ------------------------------------------------------------------ the unpack stage


def test_unpack_includes_the_fields_the_rest_needs_meta_last(db, ts):
    explain = explain_agg(db, [{"$group": {"_id": "$m.s", "total": {"$sum": "$v"}}}])
    unpack = agg_plan_stage(explain, "$_internalUnpackBucket")["$_internalUnpackBucket"]
    assert unpack == {"include": ["v", "m"], "timeField": "t", "metaField": "m", "bucketMaxSpanSeconds": 3600,
                      "assumeNoMixedSchemaData": True}
    assert list(ts.aggregate([{"$group": {"_id": "$m.s", "total": {"$sum": "$v"}}}, {"$sort": {"_id": 1}}])) == [
        {"_id": "a", "total": sum(range(60))}, {"_id": "b", "total": sum(range(60))}]


def test_an_inclusion_project_after_unpack_is_absorbed(db, ts):
    explain = explain_agg(db, [{"$project": {"v": 1}}])
    assert stage_names(explain) == ["$cursor", "$_internalUnpackBucket"]
    assert explain["stages"][1]["$_internalUnpackBucket"]["include"] == ["_id", "v"]
    computed = explain_agg(db, [{"$project": {"x": {"$add": ["$v", 1]}}}])
    assert stage_names(computed) == ["$cursor", "$_internalUnpackBucket", "$project"]


def test_without_a_projection_every_field_is_unpacked(db, ts):
    explain = explain_agg(db, [{"$match": {"v": {"$gt": 5}}}])
    unpack = explain["stages"][1]["$_internalUnpackBucket"]
    assert unpack["exclude"] == [] and unpack["eventFilter"] == {"v": {"$gt": 5}}
    assert "wholeBucketFilter" not in unpack and "fixedBuckets" not in unpack


def test_a_meta_only_match_runs_before_unpack_on_meta(db, ts):
    explain = explain_agg(db, [{"$match": {"m.s": "a"}}], verbosity="executionStats")
    unpack = agg_plan_stage(explain, "$_internalUnpackBucket")
    assert "eventFilter" not in unpack["$_internalUnpackBucket"]
    assert "wholeBucketFilter" not in unpack["$_internalUnpackBucket"]
    cursor = explain["stages"][0]["$cursor"]
    assert cursor["queryPlanner"]["parsedQuery"] == {"meta.s": "a"}
    assert agg_plan_stage(explain, "COLLSCAN")["filter"] == {"meta.s": "a"}
    assert unpack["nReturned"] == 60


def test_fixed_buckets_show_on_the_unpack_stage(db):
    db.create_collection("fx", timeseries={"timeField": "t", "metaField": "m", "bucketMaxSpanSeconds": 600,
                                           "bucketRoundingSeconds": 600})
    db.fx.insert_one({"t": T0, "m": 1, "v": 1})
    unpack = explain_agg(db, [{"$match": {"v": 1}}], "fx")["stages"][1]["$_internalUnpackBucket"]
    assert unpack["fixedBuckets"] is True and unpack["bucketMaxSpanSeconds"] == 600


# ------------------------------------------------------------------ $group and $sort around the unpack


def test_min_max_group_on_meta_runs_on_buckets_without_unpack(db, ts):
    pipeline = [{"$group": {"_id": "$m.s", "lo": {"$min": "$v"}, "hi": {"$max": "$w"}}}]
    explain = explain_agg(db, pipeline)
    assert agg_plan_stage(explain, "$_internalUnpackBucket") is None  # assertUnpackOptimizedAway
    assert stage_names(explain) == ["$cursor", "$group"]
    assert explain["stages"][1]["$group"] == {"_id": "$meta.s", "lo": {"$min": "$control.min.v"},
                                              "hi": {"$max": "$control.max.w"}}
    assert sorted(ts.aggregate(pipeline), key=lambda d: d["_id"]) == [
        {"_id": "a", "lo": 0, "hi": 0}, {"_id": "b", "lo": 0, "hi": 0}]


@pytest.mark.parametrize("pipeline", [
    [{"$group": {"_id": "$v", "lo": {"$min": "$w"}}}],  # a measurement key
    [{"$group": {"_id": "$m.s", "lo": {"$min": "$t"}}}],  # control.min of time is rounded down
    [{"$group": {"_id": "$m.s", "n": {"$sum": "$v"}}}],  # not min/max
    [{"$group": {"_id": "$m.s", "lo": {"$min": {"$add": ["$v", "$w"]}}}}],  # SERVER-73822
    [{"$match": {"v": {"$gt": 3}}}, {"$group": {"_id": "$m.s", "lo": {"$min": "$v"}}}],  # a residual filter
])
def test_other_groups_keep_the_unpack(db, ts, pipeline):
    explain = explain_agg(db, pipeline)
    assert agg_plan_stage(explain, "$_internalUnpackBucket") is not None
    assert agg_plan_stage(explain, "$group") is not None


def test_a_meta_filter_still_lets_the_group_run_on_buckets(db, ts):
    pipeline = [{"$match": {"m.s": "b"}}, {"$group": {"_id": "$m.k", "hi": {"$max": "$v"}}}]
    explain = explain_agg(db, pipeline)
    assert stage_names(explain) == ["$cursor", "$group"]
    assert explain["stages"][1]["$group"] == {"_id": "$meta.k", "hi": {"$max": "$control.max.v"}}
    assert sorted(ts.aggregate(pipeline), key=lambda d: d["_id"]) == [{"_id": 0, "hi": 58}, {"_id": 1, "hi": 59}]


def test_a_sort_on_meta_moves_into_the_cursor(db, ts):
    explain = explain_agg(db, [{"$sort": {"m.s": -1, "m.k": 1}}])
    sort = agg_plan_stage(explain, "SORT")
    assert sort["sortPattern"] == {"meta.s": -1, "meta.k": 1}
    assert sort["inputStage"]["stage"] == "COLLSCAN"
    assert stage_names(explain) == ["$cursor", "$_internalUnpackBucket"]
    on_time = explain_agg(db, [{"$sort": {"m.s": 1, "t": 1}}])
    assert agg_plan_stage(on_time, "SORT") is None
    assert on_time["stages"][2] == {"$sort": {"sortKey": {"m.s": 1, "t": 1}}}


def test_set_window_fields_partitioned_by_meta_sorts_on_meta_before_unpack(db, ts):
    output = {"total": {"$sum": "$v"}}
    explain = explain_agg(db, [{"$setWindowFields": {"partitionBy": "$m.s", "output": output}}])
    assert agg_plan_stage(explain, "SORT")["sortPattern"] == {"meta.s": 1}
    assert stage_names(explain) == ["$cursor", "$_internalUnpackBucket", "$_internalSetWindowFields"]
    sorted_too = explain_agg(db, [{"$setWindowFields": {"partitionBy": "$m.s", "sortBy": {"t": 1},
                                                        "output": output}}])
    assert stage_names(sorted_too) == ["$cursor", "$_internalUnpackBucket", "$sort", "$_internalSetWindowFields"]
    assert sorted_too["stages"][2]["$sort"]["sortKey"] == {"m.s": 1, "t": 1}


def test_set_window_fields_on_a_regular_collection_is_sort_then_internal_stage(db):
    db.plain.insert_many([{"g": i % 2, "v": i} for i in range(4)])
    explain = explain_agg(db, [{"$setWindowFields": {"partitionBy": {"$mod": ["$v", 2]}, "sortBy": {"v": 1},
                                                     "output": {"n": {"$count": {}}}}}], "plain")
    assert stage_names(explain) == ["$cursor", "$addFields", "$sort", "$_internalSetWindowFields", "$project"]


# ------------------------------------------------------------------ scans over the buckets


def test_a_time_range_is_a_clustered_scan_over_bucket_ids(db, ts):
    lo, hi = T0 + dt.timedelta(hours=2), T0 + dt.timedelta(hours=5)
    explain = explain_agg(db, [{"$match": {"t": {"$gte": lo, "$lt": hi}}}])
    scan = agg_plan_stage(explain, "CLUSTERED_IXSCAN")
    assert scan["direction"] == "forward"
    assert scan["minRecord"].generation_time.replace(tzinfo=None) == lo - dt.timedelta(hours=1)
    assert scan["maxRecord"].generation_time.replace(tzinfo=None) == hi
    assert agg_plan_stage(explain, "COLLSCAN") is None


def test_index_scans_on_buckets_say_partial_and_name_multikey_paths(db, ts):
    ts.create_index([("m.s", 1)], partialFilterExpression={"m.k": 1}, name="part")
    explain = explain_agg(db, [{"$match": {"m.s": "a", "m.k": 1}}], verbosity="executionStats")
    ixscan = agg_plan_stage(explain, "IXSCAN")
    assert ixscan["indexName"] == "part" and ixscan["isPartial"] is True
    assert ixscan["isMultiKey"] is False and ixscan["multiKeyPaths"] == {"meta.s": []}
    assert ixscan["keyPattern"] == {"meta.s": 1} and ixscan["indexBounds"]
    assert agg_plan_stage(explain, "FETCH") is not None


# ------------------------------------------------------------------ delete explain


def explain_delete(db, statement, verbosity="queryPlanner"):
    return db.command("explain", {"delete": "del", "deletes": [statement]}, verbosity=verbosity)


@pytest.fixture
def small(db):
    """timeseries_explain_delete.js's data: two buckets (tag 1, tag 2) of two measurements each."""
    db.create_collection("del", timeseries={"timeField": "time", "metaField": "tag"})
    when = dt.datetime(2021, 7, 12, 16)
    docs = [{"_id": i, "time": when, "tag": 1 if i <= 2 else 2} for i in range(1, 5)]
    db["del"].insert_many(docs)
    return docs


def test_an_empty_delete_many_is_a_delete_of_open_buckets(db, small):
    explain = explain_delete(db, {"q": {}, "limit": 0})
    delete = plan_stages(explain["queryPlanner"]["winningPlan"], "DELETE")[0]
    assert plan_stages(delete, "COLLSCAN")[0]["filter"] == CLOSED
    stats = explain_delete(db, {"q": {}, "limit": 0}, "executionStats")["executionStats"]["executionStages"]
    assert stats["stage"] == "DELETE" and stats["nWouldDelete"] == 4
    assert sorted(d["_id"] for d in db["del"].find()) == [1, 2, 3, 4]


@pytest.mark.parametrize("statement, op_type, deleted, unpacked", [
    ({"q": {"tag": 2, "_id": {"$gte": 3}}, "limit": 0}, "deleteMany", 2, 1),
    ({"q": {"_id": {"$lte": 3}}, "limit": 0}, "deleteMany", 3, 2),
    ({"q": {"_id": 3}, "limit": 1}, "deleteOne", 1, 1),
])
def test_a_measurement_delete_is_ts_modify(db, small, statement, op_type, deleted, unpacked):
    explain = explain_delete(db, statement)
    assert explain["queryPlanner"]["namespace"] == f"{db.name}.system.buckets.del"
    ts_modify = plan_stages(explain["queryPlanner"]["winningPlan"], "TS_MODIFY")[0]
    assert ts_modify["opType"] == op_type
    assert ts_modify["bucketFilter"]["$and"][0] == CLOSED
    assert ts_modify["residualFilter"] == statement["q"]
    assert ts_modify["inputStage"]["stage"] in ("COLLSCAN", "CLUSTERED_IXSCAN", "FETCH")
    stats = explain_delete(db, statement, "executionStats")["executionStats"]["executionStages"]
    assert stats["stage"] == "TS_MODIFY"
    assert (stats["nMeasurementsDeleted"], stats["nBucketsUnpacked"]) == (deleted, unpacked)
    assert sorted(d["_id"] for d in db["del"].find()) == [1, 2, 3, 4]  # explain deletes nothing


def test_a_hinted_delete_scans_the_index(db, small):
    db["del"].create_index([("tag", 1)])
    statement = {"q": {"tag": 2, "_id": 3}, "limit": 0, "hint": {"tag": 1}}
    plan = explain_delete(db, statement)["queryPlanner"]["winningPlan"]
    assert plan["stage"] == "TS_MODIFY"
    assert plan_stages(plan, "IXSCAN")[0]["indexName"] == "tag_1"
    stats = explain_delete(db, statement, "executionStats")["executionStats"]["executionStages"]
    assert (stats["nMeasurementsDeleted"], stats["nBucketsUnpacked"]) == (1, 1)
    db["del"].delete_many({"tag": 2, "_id": 3}, hint={"tag": 1})
    assert sorted(d["_id"] for d in db["del"].find()) == [1, 2, 4]


def test_deletes_leave_closed_buckets_alone(db, small):
    db.system.buckets["del"].update_many({"meta": 1}, {"$set": {"control.closed": True}})
    db["del"].delete_many({})
    assert sorted(d["_id"] for d in db["del"].find()) == [1, 2]
    db["del"].delete_many({"_id": {"$lte": 2}})
    assert sorted(d["_id"] for d in db["del"].find()) == [1, 2]


def _explain(db, command, verbosity="queryPlanner"):
    return db.command("explain", command, verbosity=verbosity)


@pytest.mark.commands("explain", "update")
def test_a_meta_update_explains_as_an_update_of_the_buckets(db, small):
    """7.0 runs a meta update as the translated update of the buckets collection (the meta path renamed
    to ``meta``), and explains that; before, the view's explain answered EOF/nonExistentNamespace."""
    db["del"].create_index([("tag", 1)])
    command = {"update": "del", "updates": [{"q": {"tag": 2}, "u": {"$set": {"tag": 3}}, "multi": True}]}
    planner = _explain(db, command)["queryPlanner"]
    assert planner["namespace"] == f"{db.name}.system.buckets.del"
    assert planner["parsedQuery"] == {"meta": 2}
    assert planner["winningPlan"]["stage"] == "UPDATE"
    assert plan_stages(planner["winningPlan"], "IXSCAN")[0]["indexName"] == "tag_1"
    stats = _explain(db, command, "executionStats")["executionStats"]
    # n / nModified of the update itself count measurements: so do the explain's counters
    assert (stats["executionStages"]["nMatched"], stats["executionStages"]["nWouldModify"]) == (2, 2)
    assert stats["totalKeysExamined"] == 1 and stats["totalDocsExamined"] == 1
    assert db["del"].count_documents({"tag": 3}) == 0  # explain changes nothing
    assert db["del"].update_many({"tag": 2}, {"$set": {"tag": 3}}).modified_count == 2


@pytest.mark.commands("explain", "update", "findAndModify")
@pytest.mark.parametrize("command", [
    {"update": "del", "updates": [{"q": {"_id": 3}, "u": {"$set": {"tag": 3}}, "multi": True}]},
    {"update": "del", "updates": [{"q": {"tag": 2}, "u": {"$set": {"tag": 3}}}]},
    {"update": "del", "updates": [{"q": {"tag": 2}, "u": {"$set": {"x": 3}}, "multi": True}]},
    {"findAndModify": "del", "query": {"tag": 2}, "update": {"$set": {"tag": 3}}},
    {"findAndModify": "del", "query": {"tag": 2}, "remove": True, "sort": {"time": 1}},
])
def test_explain_refuses_what_the_write_refuses(db, small, command):
    """An explained write on a time-series collection is refused with the write's own error (72)."""
    name = next(iter(command))
    with pytest.raises(pymongo.errors.OperationFailure) as refused:
        _explain(db, command)
    if name == "update":
        ran = db.command(command)
        assert ran["writeErrors"][0]["code"] == refused.value.code == 72
        assert ran["writeErrors"][0]["errmsg"] == refused.value.details["errmsg"]
    else:
        with pytest.raises(pymongo.errors.OperationFailure) as direct:
            db.command(command)
        assert (direct.value.code, direct.value.details["errmsg"]) == (72, refused.value.details["errmsg"])


@pytest.mark.commands("explain", "findAndModify")
def test_a_find_and_modify_remove_explains_as_a_delete_of_one_measurement(db, small):
    command = {"findAndModify": "del", "query": {"_id": 3}, "remove": True}
    planner = _explain(db, command)["queryPlanner"]
    assert planner["namespace"] == f"{db.name}.system.buckets.del"
    ts_modify = plan_stages(planner["winningPlan"], "TS_MODIFY")[0]
    assert ts_modify["opType"] == "deleteOne" and ts_modify["residualFilter"] == {"_id": 3}
    stats = _explain(db, command, "executionStats")["executionStats"]["executionStages"]
    assert (stats["nMeasurementsDeleted"], stats["nBucketsUnpacked"]) == (1, 1)
    assert sorted(d["_id"] for d in db["del"].find()) == [1, 2, 3, 4]
