"""The first stage of an aggregation on a time-series collection (agg_stage_coverage.js, the stages a
7.0 server has). mongod 7.0 resolves the view: the read's pipeline runs after the view's
``$_internalUnpackBucket`` (resolved_view.cpp), so a stage that must be first fails 40602 there — after
its own parse, as mongod parses every stage before it checks positions — except ``$collStats`` (run on
the view itself, unresolved) and ``$indexStats`` (moved in front of the unpack, its documents converted to
the time-series form). agg_stage_coverage.js skips ``$planCacheStats`` on view-based time-series
collections for that reason; Tidemark answered it with no entry (ok)."""

from __future__ import annotations

import datetime as dt

import pytest
from harness.jstests import aggregate_fails
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("aggregate", "explain", "create", "insert")

T0 = dt.datetime(2024, 1, 1)


@pytest.fixture
def colls(db):
    db.create_collection("ts", timeseries={"timeField": "time", "metaField": "m"})
    db.ts.insert_many([{"time": T0 + dt.timedelta(seconds=i), "m": {"tag": "A"}, "value": i * 10}
                       for i in range(10)])
    db.plain.insert_many([{"_id": i, "other": i * 20} for i in range(10)])
    # an ordinary view with a stage of its own: its reader's first stage is not first either
    db.command("create", "staged", viewOn="plain", pipeline=[{"$match": {}}])
    return db


def test_plan_cache_stats_on_a_timeseries_collection_is_not_first(colls):
    """$planCacheStats on the time-series collection fails 40602 (it follows the unpack), in an aggregate
    and in its explain; on the buckets collection and on an ordinary collection it answers."""
    error = aggregate_fails(colls.ts, [{"$planCacheStats": {}}], 40602)
    assert error.details["errmsg"] == "$planCacheStats is only valid as the first stage in a pipeline"
    with pytest.raises(OperationFailure) as info:
        colls.command("explain", {"aggregate": "ts", "pipeline": [{"$planCacheStats": {}}], "cursor": {}})
    assert info.value.code == 40602
    assert list(colls["system.buckets.ts"].aggregate([{"$planCacheStats": {}}])) == []
    assert list(colls.plain.aggregate([{"$planCacheStats": {}}])) == []


def test_collstats_and_indexstats_still_head_a_timeseries_read(colls):
    """$collStats and $indexStats are the two first-only stages mongod runs in front of the unpack."""
    (stats,) = colls.ts.aggregate([{"$collStats": {"latencyStats": {}}}])
    assert stats["ns"] == f"{colls.name}.ts" and "control" not in stats
    names = [d["name"] for d in colls.ts.aggregate([{"$indexStats": {}}])]
    assert names == ["m_1_time_1"]


def test_a_stage_spec_error_comes_before_the_position(colls):
    """mongod parses the stage before it checks where it stands: the stage's own error wins."""
    aggregate_fails(colls.ts, [{"$planCacheStats": 1}], 9)  # FailedToParse: not an object
    aggregate_fails(colls.ts, [{"$planCacheStats": {"x": 1}}], 9)
    aggregate_fails(colls.ts, [{"$currentOp": {}}], 73)  # not the admin database with {aggregate: 1}
    aggregate_fails(colls.ts, [{"$documents": []}], 73)


HEAD_STAGES = st.one_of(
    st.fixed_dictionaries({"$planCacheStats": st.one_of(
        st.just({}), st.just({"allHosts": False}), st.just({"allHosts": True}), st.just({"allHosts": 1}),
        st.integers(-(2**31), 2**31 - 1), st.text(max_size=3), st.just({"bad": 1}), st.just({"allHosts": False, "x": 1}))}),
    st.fixed_dictionaries({"$currentOp": st.one_of(st.just({}), st.integers(-(2**31), 2**31 - 1))}),
    st.fixed_dictionaries({"$listSessions": st.one_of(st.just({}), st.integers(-(2**31), 2**31 - 1))}),
    st.fixed_dictionaries({"$documents": st.one_of(st.just([]), st.just([{"a": 1}]), st.integers(-(2**31), 2**31 - 1))}),
    st.fixed_dictionaries({"$changeStream": st.just({})}),
)


def _outcome(coll, pipeline):
    try:
        return "ok", len(list(coll.aggregate(pipeline)))
    except OperationFailure as error:
        return "error", error.code


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(head=HEAD_STAGES, before=st.sampled_from([[], [{"$match": {"value": {"$gte": 0}}}], [{"$limit": 5}]]),
       rest=st.sampled_from([[], [{"$limit": 1}], [{"$project": {"_id": 1}}], [{"$limit": -1}]]))
def test_first_only_stages_in_a_timeseries_read_as_in_an_ordinary_views(colls, head, before, rest):
    """For any first-only stage but $collStats/$indexStats, with any spec, at the head of the read or
    after stages the time-series source absorbs, the time-series collection answers as an ordinary view
    whose pipeline has a stage of its own: a stage's own parse error, or 40602 (never a result)."""
    pipeline = [*before, head, *rest]
    got = _outcome(colls.ts, pipeline)
    assert got == _outcome(colls.staged, pipeline), pipeline
    assert got[0] == "error"


@pytest.mark.parametrize(("pipeline", "code"), [
    ([{"$match": {}}, {"$planCacheStats": {"allHosts": True}}], 4503200),
    ([{"$match": {}}, {"$planCacheStats": 1}], 9),
    ([{"$match": {}}, {"$currentOp": {}}], 73),
    ([{"$match": {}}, {"$planCacheStats": {}}, {"$limit": -1}], 15958),
    ([{"$match": {}}, {"$planCacheStats": {}}, {"$limit": 1}], 40602),
], ids=["allHosts", "not-an-object", "currentOp", "later-stage-error", "misplaced"])
def test_every_stage_parses_before_positions_are_checked(colls, pipeline, code):
    """The order behind the time-series answers, on any read: mongod parses every stage of a pipeline,
    then checks the first-only ones stand first (Pipeline::validateCommon); a misplaced stage's own
    error, or a later stage's, comes before its 40602 — on a collection, a view and a time-series one."""
    for coll in (colls.plain, colls.staged, colls.ts):
        aggregate_fails(coll, pipeline, code)


def test_indexstats_through_a_view_with_no_stages(colls):
    """A view with no stages of its own resolves to what its chain ends at, and $indexStats runs there
    (resolved_view.cpp moves it in front of a time-series collection's unpack): through a view of the
    time-series collection, its indexes in user form; through a view of an ordinary collection, that
    collection's. Tidemark answered no document for either."""
    colls.command("create", "over_ts", viewOn="ts", pipeline=[])
    colls.command("create", "over_plain", viewOn="plain", pipeline=[])
    assert [(d["name"], d["key"]) for d in colls.over_ts.aggregate([{"$indexStats": {}}])] == \
        [("m_1_time_1", {"m": 1, "time": 1})]
    assert [d["name"] for d in colls.over_plain.aggregate([{"$indexStats": {}}])] == ["_id_"]
    aggregate_fails(colls.staged, [{"$indexStats": {}}], 40602)  # a view with a stage: not first


SUB_HEADS = [{"$planCacheStats": {}}, {"$indexStats": {}}]


@pytest.mark.parametrize("head", SUB_HEADS, ids=lambda h: next(iter(h)))
@pytest.mark.parametrize("stage", ["$unionWith", "$lookup"])
def test_first_only_stage_in_a_sub_pipeline_over_a_timeseries_collection(colls, stage, head):
    """A $unionWith/$lookup sub-pipeline over the time-series collection is parsed after its unpack (and
    over a view, after the view's stages), with no stage moved in front: a first-only stage there fails
    40602. Over an ordinary collection it heads the sub-pipeline and runs."""
    def run(target):
        spec = {"$unionWith": {"coll": target, "pipeline": [head]}} if stage == "$unionWith" else \
            {"$lookup": {"from": target, "pipeline": [head], "as": "out"}}
        return list(colls.plain.aggregate([spec]))
    for target in ("ts", "staged"):
        with pytest.raises(OperationFailure) as info:
            run(target)
        assert info.value.code == 40602, target
    assert run("plain")
