"""serverStatus metrics.aggStageCounters counts the stages of the pipelines that ran.

mongod 7.0 registers a counter for every aggregation stage (LiteParsedDocumentSource::registerParser,
listed from 0) and ticks, once the aggregate's executor is built (so explain too), each stage of the
pipeline that runs — for a view, the resolved pipeline (the view's stages and the command's; a
time-series collection's begins with $_internalUnpackBucket) — and of
its sub-pipelines ($lookup, $unionWith, each $facet, $merge's whenMatched pipeline:
LiteParsedPipeline::tickGlobalStageCounters); an update command ticks the stages of each pipeline
update; an alias counts under its own name ($count, not $group/$project)
(jstests/noPassthrough/server_status_aggregation_stage_counter.js). Tidemark had no such metric.
"""

from __future__ import annotations

import datetime
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("aggregate", "serverStatus", "update", "findAndModify", "explain", "create")

HYPO = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
LEAVES = [{"$match": {"a": {"$gte": 1}}}, {"$project": {"a": 1}}, {"$skip": 1}, {"$limit": 5}, {"$sort": {"a": 1}},
          {"$group": {"_id": "$a"}}, {"$count": "n"}, {"$addFields": {"b": 1}}, {"$set": {"c": 2}}, {"$unset": "c"}]


def _pipelines(depth: int):
    leaf = st.sampled_from(LEAVES)
    if depth == 0:
        return st.lists(leaf, max_size=4)
    sub = _pipelines(depth - 1)
    nested = st.one_of(
        _pipelines(0).map(lambda p: {"$facet": {"x": p, "y": [{"$limit": 1}]}}),  # (no $facet in a $facet)
        sub.map(lambda p: {"$lookup": {"from": "other", "pipeline": p, "as": "o"}}),
        sub.map(lambda p: {"$unionWith": {"coll": "other", "pipeline": p}}),
    )
    return st.lists(st.one_of(leaf, nested), max_size=4)


def _expected(pipeline) -> Counter:
    """The stages mongod ticks, walked independently of the server's code."""
    out: Counter = Counter()
    for stage in pipeline:
        name, spec = next(iter(stage.items()))
        out[name] += 1
        if name == "$facet":
            for sub in spec.values():
                out += _expected(sub)
        elif name in ("$lookup", "$unionWith"):
            out += _expected(spec["pipeline"])
    return out


def _counters(client) -> dict:
    return client.admin.command("serverStatus")["metrics"]["aggStageCounters"]


def _delta(client, run) -> Counter:
    before = _counters(client)
    run()
    after = _counters(client)
    assert set(after) == set(before)
    return Counter({name: after[name] - before[name] for name in after if after[name] != before[name]})


@pytest.fixture
def coll(db):
    db.c.insert_many([{"a": i} for i in range(4)])
    db.other.insert_many([{"a": i} for i in range(2)])
    return db.c


def test_every_known_stage_is_listed_from_zero(start_server):
    client = start_server().client()
    counters = _counters(client)
    assert {"$match", "$group", "$lookup", "$facet", "$unionWith", "$merge", "$out", "$count", "$setWindowFields",
            "$densify", "$fill", "$geoNear", "$graphLookup", "$sortByCount", "$bucketAuto"} <= set(counters)
    assert set(counters.values()) == {0} and list(counters) == sorted(counters)
    client.close()


@HYPO
@given(pipeline=_pipelines(2), explain=st.booleans())
def test_an_aggregate_counts_its_stages_and_sub_pipelines(client, coll, pipeline, explain):
    if explain:
        def run():
            coll.database.command("explain", {"aggregate": coll.name, "pipeline": pipeline, "cursor": {}})
    else:
        def run():
            list(coll.aggregate(pipeline))
    assert _delta(client, run) == _expected(pipeline)


@HYPO
@given(view=_pipelines(0), pipeline=_pipelines(1))
def test_a_view_counts_its_resolved_pipeline(client, coll, view, pipeline):
    db = coll.database
    db.drop_collection("v")
    db.command("create", "v", viewOn=coll.name, pipeline=view)
    assert _delta(client, lambda: list(db.v.aggregate(pipeline))) == _expected(view) + _expected(pipeline)


def test_a_time_series_read_counts_its_unpack_stage(client, db):
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    db.ts.insert_one({"t": datetime.datetime(2024, 1, 1), "m": 1, "v": 2})
    pipeline = [{"$match": {"m": 1}}, {"$group": {"_id": "$m", "n": {"$sum": "$v"}}}]
    delta = _delta(client, lambda: list(db.ts.aggregate(pipeline)))
    assert delta == Counter({"$_internalUnpackBucket": 1, "$match": 1, "$group": 1})
    db.command("create", "tsv", viewOn="ts", pipeline=[{"$project": {"v": 1}}])
    delta = _delta(client, lambda: list(db.tsv.aggregate([{"$limit": 1}])))
    assert delta == Counter({"$_internalUnpackBucket": 1, "$project": 1, "$limit": 1})


def test_merge_counts_its_when_matched_pipeline(client, coll):
    pipeline = [{"$merge": {"into": coll.name, "whenMatched": [{"$set": {"m": 1}}, {"$unset": "a"}]}}]
    assert _delta(client, lambda: list(coll.aggregate(pipeline))) == Counter({"$merge": 1, "$set": 1, "$unset": 1})


def test_update_pipelines_count_and_find_and_modify_does_not(client, coll):
    statements = [{"q": {}, "u": [{"$addFields": {"x": 1}}, {"$unset": "x"}], "multi": True},
                  {"q": {"a": 1}, "u": {"$set": {"y": 1}}}, {"q": {"a": 2}, "u": [{"$set": {"y": 2}}]}]
    delta = _delta(client, lambda: coll.database.command("update", coll.name, updates=statements))
    assert delta == Counter({"$addFields": 1, "$unset": 1, "$set": 1})
    assert _delta(client, lambda: coll.find_one_and_update({"a": 3}, [{"$set": {"z": 1}}])) == Counter()


def test_a_pipeline_that_fails_to_parse_counts_nothing(client, coll):
    def run():
        with pytest.raises(OperationFailure):
            list(coll.aggregate([{"$match": {"a": 1}}, {"$project": {"a": {"$nope": 1}}}]))
    assert _delta(client, run) == Counter()
