"""An explain never writes (jstests/aggregation/explain_writing_aggs.js, mongod 7.0): an aggregate ending
in ``$out`` or ``$merge`` is explained at every verbosity, the execution ones run the pipeline (their
counters are the read's), and no document is written nor the target collection created; the writing
stage is shown with its target as mongod serializes it (``$out: {db, coll}``, ``$merge: {into: {db,
coll}, on, whenMatched, whenNotMatched}``).

Found while reviewing the explain of optimized-away pipelines: an executionStats explain of
``[{$out: "t"}]`` wrote ``t``."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.commands("explain", "aggregate", "insert", "create")

VERBOSITIES = ["queryPlanner", "executionStats", "allPlansExecution"]
MERGE_MODES = [("replace", "insert"), ("replace", "fail"), ("replace", "discard"), ("merge", "insert"),
               ("merge", "fail"), ("merge", "discard"), ("keepExisting", "insert"), ("fail", "insert")]


def _explain(db, pipeline: list[dict], verbosity: str, coll: str = "src") -> dict:
    return db.command({"explain": {"aggregate": coll, "pipeline": pipeline, "cursor": {}}, "verbosity": verbosity})


def _writing_stage(reply: dict, name: str) -> dict:
    found = [s for s in reply["stages"] if name in s]
    assert len(found) == 1, reply
    return found[0][name]


@pytest.mark.parametrize("verbosity", VERBOSITIES)
def test_out_is_explained_and_writes_nothing(db, verbosity):
    db.src.insert_one({"_id": 1})
    reply = _explain(db, [{"$out": "target"}], verbosity)
    assert _writing_stage(reply, "$out") == {"db": db.name, "coll": "target"}
    assert "target" not in db.list_collection_names()
    if verbosity != "queryPlanner":
        assert reply["stages"][0]["$cursor"]["executionStats"]["nReturned"] == 1


@pytest.mark.parametrize("verbosity", VERBOSITIES)
@pytest.mark.parametrize("matched, not_matched", MERGE_MODES)
def test_merge_is_explained_in_each_mode_and_writes_nothing(db, verbosity, matched, not_matched):
    db.src.insert_one({"_id": 1})
    db.target.insert_one({"_id": 1, "kept": True})
    stage = {"$merge": {"into": "target", "whenMatched": matched, "whenNotMatched": not_matched}}
    shown = _writing_stage(_explain(db, [stage], verbosity), "$merge")
    assert shown == {"into": {"db": db.name, "coll": "target"}, "on": "_id", "whenMatched": matched,
                     "whenNotMatched": not_matched}
    assert list(db.target.find()) == [{"_id": 1, "kept": True}]


def test_out_to_another_database_and_a_missing_source(db, client):
    other = client[db.name + "_o"]
    try:
        for verbosity in VERBOSITIES:
            reply = _explain(db, [{"$out": {"db": other.name, "coll": "t"}}], verbosity, coll="missing")
            assert _writing_stage(reply, "$out") == {"db": other.name, "coll": "t"}
        assert other.list_collection_names() == []
    finally:
        client.drop_database(other.name)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(verbosity=st.sampled_from(VERBOSITIES), n=st.integers(0, 5),
       before=st.lists(st.sampled_from([{"$match": {"a": {"$gte": 1}}}, {"$sort": {"a": -1}}, {"$limit": 3},
                                        {"$project": {"a": 1}}, {"$group": {"_id": "$a"}}]), max_size=3),
       writing=st.sampled_from([{"$out": "target"}, {"$merge": {"into": "target"}},
                                {"$merge": {"into": "target", "whenMatched": "replace", "whenNotMatched": "insert"}}]))
def test_no_explain_of_a_writing_pipeline_writes(db, verbosity, n, before, writing):
    """The family: whatever precedes the writing stage and at every verbosity, the target stays as it
    was, and an execution explain counts what the aggregate would have written."""
    db.src.drop()
    db.target.drop()
    if n:
        db.src.insert_many([{"_id": i, "a": i} for i in range(n)])
    pipeline = [*before, writing]
    reply = _explain(db, pipeline, verbosity)
    assert "target" not in db.list_collection_names()
    if verbosity != "queryPlanner":
        counted = reply["stages"][0]["$cursor"]["executionStats"]["nReturned"]
        # the $cursor counts what reaches the stages after it; all of them run, with none writing
        assert counted <= n
