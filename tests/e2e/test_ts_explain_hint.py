"""explain (spec §5.3) and hint (spec §5.4) on a time-series view, end to end.

Explain is aggregate-shaped: a ``$cursor`` over ``system.buckets.<c>`` with the bucket-level filter and
its access path, then ``$_internalUnpackBucket`` with the per-measurement filter, then the rest. A hint
names an index by name or by the *user* key pattern and is translated to the buckets index."""

from __future__ import annotations

import datetime as dt

import pytest
from pymongo.errors import OperationFailure

T0 = dt.datetime(2024, 3, 1)
HOUR = dt.timedelta(hours=1)

pytestmark = pytest.mark.commands("explain", "find", "aggregate", "count")


@pytest.fixture
def week(db):
    """One measurement every 10 minutes for a week, two sensors; buckets written in full."""
    db.create_collection("c", timeseries={"timeField": "t", "metaField": "m"})
    db.c.insert_many([{"t": T0 + dt.timedelta(minutes=10 * i), "m": {"s": s}, "v": i}
                      for i in range(6 * 24 * 7) for s in ("a", "b")])
    db.c.delete_many({"_id": "none"})  # closes open buckets, so stored buckets and indexes hold everything
    return db.c


def _explain_find(db, verbosity="executionStats", **find):
    return db.command("explain", {"find": "c", **find}, verbosity=verbosity)


def _cursor(reply):
    return reply["stages"][0]["$cursor"]


def _unpack(reply):
    return reply["stages"][1]["$_internalUnpackBucket"]


def _scan_stage(plan):
    return plan["inputStage"] if plan["stage"] == "FETCH" else plan


# ------------------------------------------------------------------ explain shape


@pytest.mark.parametrize("verbosity", ["queryPlanner", "executionStats", "allPlansExecution"])
def test_find_explain_is_a_cursor_over_buckets_then_unpack(db, week, verbosity):
    reply = _explain_find(db, verbosity, filter={"v": {"$gt": 5}})
    planner = _cursor(reply)["queryPlanner"]
    assert planner["namespace"] == f"{db.name}.system.buckets.c"
    assert planner["winningPlan"]["stage"] in ("COLLSCAN", "CLUSTERED_IXSCAN")
    # 7.0's bucket predicate for a collection without mixed-schema buckets (no $type guard)
    assert planner["parsedQuery"] == {"control.max.v": {"$_internalExprGt": 5}}
    assert planner["winningPlan"]["filter"] == planner["parsedQuery"]
    unpack = _unpack(reply)
    assert unpack["timeField"] == "t" and unpack["metaField"] == "m"
    assert unpack["exclude"] == [] and unpack["bucketMaxSpanSeconds"] == 3600
    assert unpack["eventFilter"] == {"v": {"$gt": 5}}
    assert ("executionStats" in _cursor(reply)) == (verbosity != "queryPlanner")
    assert reply["serverInfo"]["version"] == "7.0.0" and reply["ok"] == 1.0 and "command" in reply


def test_aggregate_explain_keeps_the_remaining_user_stages(db, week):
    pipeline = [{"$match": {"m.s": "a", "t": {"$lt": T0 + HOUR}}}, {"$group": {"_id": None, "n": {"$sum": 1}}}]
    reply = db.command("explain", {"aggregate": "c", "pipeline": pipeline, "cursor": {}},
                       verbosity="executionStats")
    assert [next(iter(stage)) for stage in reply["stages"]] == ["$cursor", "$_internalUnpackBucket", "$group"]
    assert reply["stages"][-1]["nReturned"] == 1
    assert reply["stages"][1]["nReturned"] == 6
    assert list(db.c.aggregate(pipeline)) == [{"_id": None, "n": 6}]


def test_aggregate_explain_option_gives_the_same_shape(db, week):
    reply = db.command("aggregate", "c", pipeline=[{"$match": {"v": 3}}], explain=True)
    assert _cursor(reply)["queryPlanner"]["namespace"].endswith(".system.buckets.c")
    assert _unpack(reply)["eventFilter"] == {"v": 3}


def test_narrow_time_range_examines_few_buckets(db, week):
    total = db.system.buckets.c.count_documents({})
    lo = T0 + dt.timedelta(days=3)
    reply = _explain_find(db, filter={"t": {"$gte": lo, "$lt": lo + dt.timedelta(minutes=30)}})
    stats = _cursor(reply)["executionStats"]
    assert total >= 2 * 7 * 24
    assert stats["totalDocsExamined"] <= 8  # buckets read, against hundreds stored
    assert stats["nReturned"] <= 4  # buckets handed to unpack
    assert reply["stages"][1]["nReturned"] == 6  # 3 measurements x 2 sensors
    plan = _cursor(reply)["queryPlanner"]["winningPlan"]
    assert plan["stage"] in ("CLUSTERED_IXSCAN", "FETCH")
    assert {"control.max.t": {"$_internalExprGte": lo}} in plan["filter"]["$and"]


def test_meta_equality_uses_the_default_bucket_index(db, week):
    reply = _explain_find(db, filter={"m": {"s": "a"}})
    plan = _cursor(reply)["queryPlanner"]["winningPlan"]
    assert plan["stage"] == "FETCH"
    assert plan["inputStage"]["stage"] == "IXSCAN"
    assert plan["inputStage"]["keyPattern"] == {"meta": 1, "control.min.t": 1, "control.max.t": 1}
    assert _cursor(reply)["queryPlanner"]["parsedQuery"] == {"meta": {"s": "a"}}
    unpack = _unpack(reply)
    # 7.0 moves a meta-only $match before the unpack (the $cursor runs it on meta): no per-measurement filter
    assert "wholeBucketFilter" not in unpack and "eventFilter" not in unpack
    stats = _cursor(reply)["executionStats"]
    assert stats["totalDocsExamined"] == stats["nReturned"]  # only sensor a's buckets were read
    assert reply["stages"][1]["nReturned"] == 6 * 24 * 7


def test_explain_with_no_filter_is_a_collection_scan_of_every_bucket(db, week):
    reply = _explain_find(db)
    plan = _cursor(reply)["queryPlanner"]["winningPlan"]
    assert plan["stage"] == "COLLSCAN" and plan["filter"] == {}
    assert _cursor(reply)["executionStats"]["totalDocsExamined"] == db.system.buckets.c.count_documents({})
    assert "eventFilter" not in _unpack(reply)


# ------------------------------------------------------------------ hint


def test_hint_by_user_key_pattern_uses_that_bucket_index(db, week):
    week.create_index([("m.s", 1), ("t", -1)], name="s_t")
    reply = _explain_find(db, filter={"v": {"$lt": 3}}, hint={"m.s": 1, "t": -1})
    plan = _cursor(reply)["queryPlanner"]["winningPlan"]
    assert _scan_stage(plan)["stage"] == "IXSCAN" and _scan_stage(plan)["indexName"] == "s_t"
    got = sorted((d["m"]["s"], d["v"]) for d in week.find({"v": {"$lt": 3}}).hint([("m.s", 1), ("t", -1)]))
    assert got == [(s, v) for s in ("a", "b") for v in range(3)]


def test_hint_by_index_name_is_used_for_find_aggregate_and_count(db, week):
    week.create_index([("v", 1)], name="by_v")
    flt = {"m.s": "b", "v": {"$gte": 1000}}
    expected = 6 * 24 * 7 - 1000
    assert len(list(week.find(flt).hint("by_v"))) == expected
    assert list(week.aggregate([{"$match": flt}, {"$count": "n"}], hint="by_v")) == [{"n": expected}]
    assert week.count_documents(flt, hint="by_v") == expected
    assert db.command("count", "c", query=flt, hint="by_v")["n"] == expected
    reply = _explain_find(db, filter=flt, hint="by_v")
    assert _scan_stage(_cursor(reply)["queryPlanner"]["winningPlan"])["indexName"] == "by_v"
    agg = db.command("explain", {"aggregate": "c", "pipeline": [{"$match": flt}], "cursor": {}, "hint": "by_v"})
    assert _scan_stage(_cursor(agg)["queryPlanner"]["winningPlan"])["indexName"] == "by_v"


def test_natural_hint_scans_the_clustered_buckets(db, week):
    reply = _explain_find(db, filter={"m.s": "a"}, hint={"$natural": 1})
    assert _cursor(reply)["queryPlanner"]["winningPlan"]["stage"] in ("COLLSCAN", "CLUSTERED_IXSCAN")
    assert len(list(week.find({"m.s": "a"}).hint([("$natural", 1)]))) == 6 * 24 * 7


@pytest.mark.parametrize("hint", ["nope", {"nope": 1}, {"_id": 1}])
def test_unknown_hint_fails_with_bad_value(db, week, hint):
    for run in (lambda: list(week.find({}).hint(hint if isinstance(hint, str) else list(hint.items()))),
                lambda: list(week.aggregate([], hint=hint)),
                lambda: db.command("count", "c", hint=hint)):
        with pytest.raises(OperationFailure) as info:
            run()
        assert info.value.code == 2
        assert info.value.details["errmsg"] == "hint provided does not correspond to an existing index"


def test_hint_on_a_hidden_index_fails_with_bad_value(db, week):
    week.create_index([("v", 1)], name="by_v", hidden=True)
    with pytest.raises(OperationFailure) as info:
        list(week.find({"v": 3}).hint("by_v"))
    assert info.value.code == 2
    assert "hint provided does not correspond to an existing index" in str(info.value)


def test_count_explain_on_the_view_reads_through_the_buckets(db, week):
    reply = db.command("explain", {"count": "c", "query": {"m": {"s": "b"}}}, verbosity="executionStats")
    assert _cursor(reply)["queryPlanner"]["namespace"] == f"{db.name}.system.buckets.c"
    assert _scan_stage(_cursor(reply)["queryPlanner"]["winningPlan"])["stage"] == "IXSCAN"
    # $count explains as mongod shows it: $group then $project
    assert [next(iter(s)) for s in reply["stages"]] == ["$cursor", "$_internalUnpackBucket", "$group", "$project"]
    assert reply["stages"][-1]["nReturned"] == 1
    assert reply["stages"][1]["nReturned"] == 6 * 24 * 7


def test_distinct_explain_on_the_view_reads_through_the_buckets(db, week):
    reply = db.command("explain", {"distinct": "c", "key": "m.s", "query": {"v": {"$lt": 2}}})
    assert _unpack(reply)["eventFilter"] == {"v": {"$lt": 2}}
    assert next(iter(reply["stages"][-1])) == "$group"
    assert sorted(week.distinct("m.s", {"v": {"$lt": 2}})) == ["a", "b"]
