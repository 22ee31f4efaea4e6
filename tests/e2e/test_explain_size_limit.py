"""An explain too large for one BSON document is pruned as mongod prunes it, not refused.

mongod builds each stage tree of an explain (a winningPlan, each rejected plan, the executionStages)
in its own builder and, before adding a stage, checks how many bytes the tree holds: past
``internalQueryExplainSizeThresholdBytes`` (10 MB) that stage and its inputs become ``{warning: "stats
tree exceeded BSON size limit for explain"}`` (plan_explainer_impl.cpp statsToBSON;
jstests/noPassthrough/explain_output_truncation.js); the explained ``command`` is added only if it
still fits under 16 MB, else ``warning: "'command' has been omitted due to BSON size limit"``
(explain_common.cpp appendIfRoom); an IXSCAN's ``indexBounds`` that would take its tree past the
threshold are ``warning: "index bounds omitted due to BSON size limit for explain"``. Tidemark built the whole document and failed with 10334 (an
executionStats explain of a find with a 400,000-value ``$in``: the filter in parsedQuery, the COLLSCAN,
the executionStages and the command); it had no such parameter.
"""

from __future__ import annotations

import bson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.commands("explain", "setParameter")

PARAM = "internalQueryExplainSizeThresholdBytes"
WARNING = "stats tree exceeded BSON size limit for explain"
BOUNDS_WARNING = "index bounds omitted due to BSON size limit for explain"


@pytest.fixture
def threshold(client):
    old = client.admin.command("getParameter", 1, **{PARAM: 1})[PARAM]
    assert old == 10 * 1024 * 1024
    yield lambda value: client.admin.command("setParameter", 1, **{PARAM: value})
    client.admin.command("setParameter", 1, **{PARAM: old})


def _stages(plan: dict) -> list[dict]:
    out = [plan]
    while "inputStage" in plan:
        plan = plan["inputStage"]
        out.append(plan)
    return out


def test_a_lowered_threshold_cuts_the_index_scan_under_the_fetch(db, threshold):
    # jstests/noPassthrough/explain_output_truncation.js
    db.c.create_index({"a": 1})
    plan = db.c.find({"a": 1, "b": 1}).sort("c", 1).explain()["queryPlanner"]["winningPlan"]
    assert [s["stage"] for s in _stages(plan)] == ["SORT", "FETCH", "IXSCAN"]
    threshold(len(bson.encode(plan)) - len(bson.encode(_stages(plan)[-1])) - 10)
    plan = db.c.find({"a": 1, "b": 1}).sort("c", 1).explain()["queryPlanner"]["winningPlan"]
    assert [s.get("stage") for s in _stages(plan)] == ["SORT", "FETCH", None]
    assert _stages(plan)[-1] == {"warning": WARNING}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(limit=st.integers(0, 400), verbosity=st.sampled_from(["queryPlanner", "executionStats"]))
def test_each_tree_keeps_the_stages_entered_within_the_threshold(db, threshold, limit, verbosity):
    if "a_1" not in db.c.index_information():
        db.c.create_index({"a": 1})
        db.c.insert_many([{"a": i % 3, "b": 1, "c": i} for i in range(10)])
    threshold(10 * 1024 * 1024)
    full = db.command("explain", {"find": "c", "filter": {"a": 1, "b": 1}, "sort": {"c": 1}}, verbosity=verbosity)
    threshold(limit)
    cut = db.command("explain", {"find": "c", "filter": {"a": 1, "b": 1}, "sort": {"c": 1}}, verbosity=verbosity)
    trees = [(full["queryPlanner"]["winningPlan"], cut["queryPlanner"]["winningPlan"])]
    if verbosity == "executionStats":
        trees.append((full["executionStats"]["executionStages"], cut["executionStats"]["executionStages"]))
    for whole, pruned in trees:
        used = 4  # what mongod's builder holds on reaching each stage: its length prefix, then the
        expected = []  # fields before, and each inputStage's type byte, name and length prefix
        for stage in _stages(whole):
            if used > limit:
                expected.append({"warning": WARNING})
                break
            own = {}
            for k, v in stage.items():
                if k == "indexBounds" and used + len(bson.encode(v)) > limit:  # (their objsize)
                    k, v = "warning", BOUNDS_WARNING  # mongod's IXSCAN explain: the bounds left out
                if k != "inputStage":
                    used += len(bson.encode({k: v})) - 5
                    own[k] = v
            used += len(b"inputStage") + 6
            expected.append(own)
        got = [{k: v for k, v in s.items() if k != "inputStage"} for s in _stages(pruned)]
        if verbosity == "executionStats":  # (timings differ between two runs)
            for stages in (got, expected):
                for s in stages:
                    s.pop("executionTimeMillisEstimate", None)
        assert got == expected
    assert cut["command"] == full["command"]


@pytest.mark.slow
@pytest.mark.parametrize("verbosity", ["queryPlanner", "executionStats", "allPlansExecution"])
def test_a_huge_in_explains_without_the_command_when_it_does_not_fit(db, verbosity):
    db.c.insert_many([{"a": i} for i in range(20)])
    values = list(range(400_000))  # a filter of ~4.7 MB, repeated in parsedQuery, the plan, the command
    reply = db.command("explain", {"find": "c", "filter": {"a": {"$in": values}}}, verbosity=verbosity)
    assert reply["queryPlanner"]["winningPlan"]["stage"] == "COLLSCAN"
    assert len(bson.encode(reply)) < 16 * 1024 * 1024
    if verbosity == "queryPlanner":  # (three copies fit)
        assert reply["command"]["filter"] == {"a": {"$in": values}}
    else:
        assert "command" not in reply
        assert reply["warning"] == "'command' has been omitted due to BSON size limit"
        assert reply["executionStats"]["nReturned"] == 20
