"""mongod 7.0 limits a pipeline to 1000 stages twice (internalPipelineLengthLimit): the raw stages
before any is parsed (Pipeline::parseCommon, 7749501 "Pipeline length must be no longer than 1000
stages."), then the parsed pipeline, where an alias counts as the stages it becomes — ``$sortByCount``,
``$count``, ``$bucket``, ``$densify`` two, ``$documents`` four, ``$setWindowFields`` one to four,
``$fill`` what its ``$setWindowFields`` and ``$addFields`` are (Pipeline::validateCommon, 5054701,
no final period). Both count the stages mongod puts in front: a view's pipeline, and a time-series
collection's ``$_internalUnpackBucket``. Tidemark checked only the raw length of the user's pipeline
(plus a regular view's): ``[{$sortByCount: "$a"}] * 501`` ran, and so did 1000 stages on a
time-series collection.
"""

from __future__ import annotations

import datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

# (stage, how many stages mongod 7.0 parses it into)
STAGES = [
    ({"$match": {}}, 1),
    ({"$sortByCount": "$a"}, 2),  # $group, $sort
    ({"$count": "a"}, 2),  # $group, $project
    ({"$bucket": {"groupBy": "$a", "boundaries": [0, 10], "default": "o"}}, 2),  # $group, $sort
    ({"$densify": {"field": "a", "range": {"step": 1, "bounds": "full"}}}, 2),  # $sort, $_internalDensify
    ({"$setWindowFields": {"output": {"n": {"$count": {}}}}}, 1),
    ({"$setWindowFields": {"sortBy": {"a": 1}, "output": {"n": {"$count": {}}}}}, 2),  # + $sort
    ({"$setWindowFields": {"partitionBy": "$p", "output": {"n": {"$count": {}}}}}, 2),
    # a computed partition: $addFields, $sort, $_internalSetWindowFields, $project
    ({"$setWindowFields": {"partitionBy": {"$toString": "$p"}, "output": {"n": {"$count": {}}}}}, 4),
    ({"$fill": {"output": {"b": {"value": 0}}}}, 1),  # $addFields
    ({"$fill": {"sortBy": {"a": 1}, "output": {"b": {"method": "locf"}}}}, 2),  # $setWindowFields
    # partitionByFields is the computed partition {p: "$p"}: 4, then the $addFields of the value
    ({"$fill": {"partitionByFields": ["p"], "sortBy": {"a": 1},
                "output": {"b": {"method": "locf"}, "c": {"value": 1}}}}, 5),
]

# collection -> (raw stages, parsed stages) mongod puts in front of the read's pipeline
TARGETS = {"regular": (0, 0), "view": (1, 2), "ts": (1, 1)}

SEGMENTS = st.lists(st.tuples(st.sampled_from(range(1, len(STAGES))), st.integers(1, 400)), max_size=4)


@pytest.fixture
def targets(db):
    db.c.insert_many([{"a": i, "p": i % 2, "t": datetime.datetime(2024, 1, 1, 0, i)} for i in range(3)])
    db.create_collection("view", viewOn="c", pipeline=[{"$sortByCount": "$p"}])
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "p"})
    db.ts.insert_many([{"t": datetime.datetime(2024, 1, 1, 0, i), "p": i % 2, "a": i} for i in range(3)])
    return db


def _expect(raw: int, parsed: int) -> int | None:
    if raw > 1000:
        return 7749501
    if parsed > 1000:
        return 5054701
    return None


def _run(db, coll: str, pipeline: list) -> int | None:
    try:
        db.command("aggregate", coll, pipeline=pipeline, cursor={"batchSize": 0})
    except OperationFailure as err:
        if err.code == 7749501:
            assert err.details["errmsg"] == "Pipeline length must be no longer than 1000 stages."
        elif err.code == 5054701:
            assert err.details["errmsg"] == "Pipeline length must be no longer than 1000 stages"
        return err.code
    return None


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(segments=SEGMENTS, target=st.sampled_from(sorted(TARGETS)), over=st.integers(-2, 2))
@pytest.mark.commands("aggregate")
def test_the_limit_counts_aliases_expanded_and_the_stages_put_in_front(targets, segments, target, over):
    """Aliases, then $match filling up to 1000 + ``over`` parsed stages (or as far as the raw limit
    lets: then past it by ``over`` raw stages)."""
    front_raw, front_parsed = TARGETS[target]
    pipeline: list = []
    parsed = front_parsed
    for index, count in segments:
        stage, width = STAGES[index]
        count = min(count, (1000 - parsed) // width)
        pipeline += [stage] * count
        parsed += width * count
    fill = max(0, 1000 + over - parsed)
    pipeline += [{"$match": {}}] * fill
    parsed += fill
    raw = front_raw + len(pipeline)
    assert _run(targets, target, pipeline) == _expect(raw, parsed), (raw, parsed)


@pytest.mark.commands("aggregate")
def test_the_cases_found(targets):
    assert _run(targets, "c", [{"$sortByCount": "$a"}] * 501) == 5054701
    assert _run(targets, "c", [{"$sortByCount": "$a"}] * 500) is None
    assert _run(targets, "ts", [{"$match": {}}] * 1000) == 7749501
    assert _run(targets, "ts", [{"$match": {}}] * 999) is None
    assert _run(targets, "ts", [{"$match": {}}] * 998 + [{"$count": "n"}]) == 5054701


@pytest.mark.commands("aggregate")
def test_a_stage_error_comes_before_the_parsed_length(targets):
    bad = [{"$project": {"x": {"$bogus": 1}}}]
    for coll in ("c", "ts", "view"):
        alone = _run(targets, coll, bad)
        assert alone not in (None, 5054701, 7749501)
        assert _run(targets, coll, [{"$sortByCount": "$a"}] * 499 + bad) == alone
    # the raw length is checked before any stage is parsed
    assert _run(targets, "ts", [{"$match": {}}] * 999 + bad) == 7749501


@pytest.mark.commands("aggregate")
def test_sub_pipelines_have_their_own_limit(targets):
    assert _run(targets, "c", [{"$facet": {"f": [{"$sortByCount": "$a"}] * 501}}]) == 5054701
    assert _run(targets, "c", [{"$lookup": {"from": "c", "as": "l", "pipeline": [{"$count": "n"}] * 501}}]) == 5054701
    assert _run(targets, "c", [{"$lookup": {"from": "ts", "as": "l", "pipeline": [{"$match": {}}] * 1000}}]) == 7749501
    assert _run(targets, "c", [{"$facet": {"f": [{"$sortByCount": "$a"}] * 500}}]) is None


@pytest.mark.commands("aggregate")
@pytest.mark.parametrize("stage", ["$lookup", "$unionWith"])
def test_a_sub_pipeline_counts_what_mongod_puts_in_front_of_its_collection(targets, stage):
    def sub(coll: str, pipeline: list) -> list:
        if stage == "$lookup":
            return [{"$lookup": {"from": coll, "as": "l", "pipeline": pipeline}}]
        return [{"$unionWith": {"coll": coll, "pipeline": pipeline}}]

    match = [{"$match": {}}]
    # the view: one raw stage ($sortByCount), two parsed
    assert _run(targets, "c", sub("view", match * 1000)) == 7749501
    assert _run(targets, "c", sub("view", match * 999)) == 5054701
    assert _run(targets, "c", sub("view", match * 998)) is None
    # the time-series collection: its $_internalUnpackBucket
    assert _run(targets, "c", sub("ts", match * 1000)) == 7749501
    assert _run(targets, "c", sub("ts", match * 998 + [{"$count": "n"}])) == 5054701
    assert _run(targets, "c", sub("ts", match * 999)) is None
