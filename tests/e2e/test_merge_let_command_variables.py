"""mongod 7.0 runs a ``$merge`` ``whenMatched`` pipeline with the aggregate command's variables: the
merge's updates carry the command's ``let`` (CommonMongodProcessInterface::buildUpdateOp), and the
stage's own ``let`` (default ``{new: "$$ROOT"}``, ``new`` added under ``whenNotMatched: "insert"``:
DocumentSourceMerge::create), evaluated against each result with the command's variables in scope, as
each statement's ``c`` constants, defined after the command's (PipelineExecutor): a stage variable
shadows a command variable of the same name. Tidemark answered 17276 "Use of undefined variable" for
any command variable in the pipeline or in the stage's ``let``.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

NAMES = ["x", "y", "new"]


@pytest.mark.commands("aggregate")
def test_when_matched_pipeline_sees_the_command_let(db):
    db.src.insert_one({"_id": 1})
    db.tgt.insert_one({"_id": 1})
    db.command("aggregate", "src", pipeline=[{"$merge": {"into": "tgt", "whenMatched": [{"$set": {"v": "$$x"}}]}}],
               cursor={}, let={"x": 5})
    assert db.tgt.find_one() == {"_id": 1, "v": 5}


@pytest.mark.commands("aggregate")
def test_the_stage_let_may_use_the_command_let_and_now(db):
    db.src.insert_one({"_id": 1, "a": 10})
    db.tgt.insert_one({"_id": 1})
    db.command("aggregate", "src", cursor={}, let={"x": 5}, pipeline=[{"$merge": {
        "into": "tgt", "let": {"y": {"$add": ["$$x", "$a"]}, "t": "$$NOW"},
        "whenMatched": [{"$set": {"y": "$$y", "same": {"$eq": ["$$t", "$$NOW"]}}}]}}])
    assert db.tgt.find_one() == {"_id": 1, "y": 15, "same": True}


@pytest.mark.commands("aggregate")
def test_an_undefined_variable_is_still_17276(db):
    db.src.insert_one({"_id": 1})
    db.tgt.insert_one({"_id": 1})
    with pytest.raises(Exception) as err:
        db.command("aggregate", "src", cursor={}, let={"x": 5}, pipeline=[
            {"$merge": {"into": "tgt", "whenMatched": [{"$set": {"v": "$$z"}}]}}])
    assert err.value.code == 17276


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(command=st.dictionaries(st.sampled_from(NAMES), st.integers(0, 99)),
       stage=st.none() | st.dictionaries(st.sampled_from(["x", "y"]), st.integers(100, 199)),
       not_matched=st.sampled_from(["insert", "discard", "fail"]))
@pytest.mark.commands("aggregate")
def test_stage_variables_shadow_command_variables(db, command, stage, not_matched):
    db.src.drop()
    db.tgt.drop()
    db.src.insert_one({"_id": 1, "a": 1})
    db.tgt.insert_one({"_id": 1})
    # the pipeline reads every name: one neither let defines must fail 17276
    stage_vars: dict = {"new": "$$ROOT"} if stage is None else dict(stage)
    if not_matched == "insert":
        stage_vars.setdefault("new", "$$ROOT")
    scope = {**command, **{k: ({"_id": 1, "a": 1} if k == "new" else v) for k, v in stage_vars.items()}}
    spec: dict = {"into": "tgt", "whenNotMatched": not_matched,
                  "whenMatched": [{"$set": {f"v_{name}": f"$${name}" for name in NAMES}}]}
    if stage is not None:
        spec["let"] = stage
    call = dict(cursor={}, pipeline=[{"$merge": spec}])
    if command:
        call["let"] = command
    if set(NAMES) <= set(scope):
        db.command("aggregate", "src", **call)
        assert db.tgt.find_one() == {"_id": 1, **{f"v_{name}": scope[name] for name in NAMES}}
    else:
        with pytest.raises(Exception) as err:
            db.command("aggregate", "src", **call)
        assert err.value.code == 17276
