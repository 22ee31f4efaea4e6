"""A $match moves before the stages it may swap with (mongod's pushMatchBefore, query/match_pushdown.py).

Found by a helper porting jstests/aggregation (double_optimize.js and friends): Tidemark evaluated the
stages in written order, so ``[$addFields {r: {$divide: ["$a", "$b"]}}, $match {b: {$ne: 0}}]`` failed
with 2 "can't $divide by zero" where mongod filters first and answers.

- The jstest's shapes answer (an error only a filtered-out document would raise is never raised).
- Property (Hypothesis): for a generated stage ($addFields, $set, $unset, $project either way, $unwind,
  $lookup, $sort) followed by a generated $match (conjuncts on fields the stage modifies or not), the
  pipeline answers exactly what it answers with ``$limit`` between the two (a stage a $match never
  moves before: the written order), whenever that order answers.
- explain shows the $match moved (or split) as mongod's does.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("aggregate", "explain")

DOCS = [{"_id": i, "a": i * 10, "b": i % 3, "c": {"d": i % 2, "e": [i, i + 1]}, "arr": list(range(i % 3))}
        for i in range(8)]

STAGES = [
    {"$addFields": {"r": {"$divide": ["$a", "$b"]}}},
    {"$set": {"b": {"$add": ["$b", 1]}, "n": 1}},
    {"$addFields": {"c.d": 7}},
    {"$unset": ["c.e"]},
    {"$unset": "b"},
    {"$project": {"a": 1, "b": 1}},
    {"$project": {"a": 1, "c.d": 1, "q": {"$toUpper": "x"}}},
    {"$project": {"c": 0}},
    {"$project": {"_id": 0, "a": 1}},
    {"$unwind": "$arr"},
    {"$unwind": {"path": "$arr", "includeArrayIndex": "idx", "preserveNullAndEmptyArrays": True}},
    {"$lookup": {"from": "pushdown_foreign", "localField": "b", "foreignField": "k", "as": "j"}},
    {"$lookup": {"from": "pushdown_foreign", "localField": "b", "foreignField": "k", "as": "c.j"}},
    {"$sort": {"a": -1}},
]
CONJUNCTS = [
    {"b": {"$ne": 0}}, {"b": 1}, {"a": {"$gte": 30}}, {"c.d": 1}, {"c.e": 3}, {"arr": 1}, {"idx": 0},
    {"j": {"$size": 1}}, {"r": {"$gt": 5}}, {"n": 1}, {"_id": {"$lt": 6}}, {"q": "X"},
    {"$expr": {"$lt": ["$a", 50]}}, {"$or": [{"b": 2}, {"a": 0}]}, {"c": {"$exists": True}},
]


@pytest.fixture(scope="module")
def pushdown(client):
    db = client["match_pushdown"]
    client.drop_database(db.name)
    db.coll.insert_many(DOCS)
    db.pushdown_foreign.insert_many([{"_id": k, "k": k} for k in range(3)])
    yield db
    client.drop_database(db.name)


def _answer(coll, pipeline):
    try:
        return "ok", list(coll.aggregate(pipeline))
    except OperationFailure as failure:
        return "error", failure.code


def test_a_match_filters_before_a_computed_field_that_would_fail(pushdown):
    divide = {"$addFields": {"r": {"$divide": ["$a", "$b"]}}}
    assert [d["_id"] for d in pushdown.coll.aggregate([divide, {"$match": {"b": {"$ne": 0}}}])] == [1, 2, 4, 5, 7]
    # double_optimize.js: the split part moves, the part on 'r' stays after the stage that makes it
    assert list(pushdown.coll.aggregate([divide, {"$match": {"b": {"$ne": 0}, "r": {"$gt": 1000}}}])) == []
    # after $unwind and $lookup, inside $facet's own pipelines too when they are run as a whole pipeline
    assert [d["_id"] for d in pushdown.coll.aggregate([{"$unwind": "$arr"}, divide, {"$match": {"b": 2}}])] == [2, 2, 5, 5]
    with pytest.raises(OperationFailure) as failure:  # a $match reading the computed field cannot help
        list(pushdown.coll.aggregate([divide, {"$match": {"r": {"$gt": 0}}}]))
    assert failure.value.code == 2


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(stage=st.sampled_from(STAGES), conjuncts=st.lists(st.sampled_from(CONJUNCTS), min_size=1, max_size=3, unique_by=repr))
def test_a_moved_match_answers_as_the_written_order(pushdown, stage, conjuncts):
    match = {"$match": {"$and": conjuncts}} if len(conjuncts) > 1 else {"$match": conjuncts[0]}
    written = _answer(pushdown.coll, [stage, {"$limit": 1_000_000}, match])
    if written[0] == "error":
        return  # (the point of moving: such a pipeline may answer once the $match runs first)
    assert _answer(pushdown.coll, [stage, match]) == written, (stage, match)


def test_explain_shows_the_moved_and_the_split_match(pushdown):
    stages = pushdown.command("explain", {"aggregate": "coll", "cursor": {}, "pipeline": [
        {"$addFields": {"r": 1}}, {"$match": {"b": 1, "r": 1}}]})["stages"]
    names = [next(iter(s)) for s in stages]
    assert names[0] == "$cursor" and names[1:] == ["$addFields", "$match"]
    assert set(stages[0]["$cursor"]["queryPlanner"]["parsedQuery"]) == {"b"}  # (the part read by the plan)
    assert set(stages[2]["$match"]) == {"r"}
