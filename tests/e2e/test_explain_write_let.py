"""An explained write sees the command's variables (jstests/core/command_let_variables.js, mongod 7.0):
``explain`` of a ``delete``, ``update`` or ``findAndModify`` carrying ``let`` runs its query (and its
pipeline update) with those variables, as the command itself would, and an update statement's ``c``
constants are seen too (winning over ``let``); mongod reports ``nWouldDelete`` / ``nMatched`` /
``nWouldModify`` of the documents the command would touch.

Tidemark planned the explained read without the command's ``let``: every execution-verbosity explain of a
write whose query or update used ``$$var`` failed with 17276 "Use of undefined variable"; and a
``queryPlanner`` explain never parsed the statement, so a variable defined nowhere was not an error there
(mongod parses the write before it plans: 17276 at every verbosity)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("explain", "insert", "delete", "update", "findAndModify")

VERBOSITIES = ["executionStats", "allPlansExecution"]


def _stage(node: dict, name: str) -> dict:
    while node.get("stage") != name:
        node = node["inputStage"]
    return node


def _explain(db, cmd: dict, verbosity: str) -> dict:
    return db.command({"explain": cmd, "verbosity": verbosity})


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(st.integers(0, 4), min_size=1, max_size=8), target=st.integers(0, 4),
       verbosity=st.sampled_from(VERBOSITIES))
def test_explained_writes_count_what_the_command_would_touch(db, values, target, verbosity):
    db.c.drop()
    db.c.insert_many([{"_id": i, "v": v} for i, v in enumerate(values)])
    matching = sum(1 for v in values if v == target)
    q = {"$expr": {"$eq": ["$v", "$$t"]}}
    deleted = _explain(db, {"delete": "c", "let": {"t": target}, "deletes": [{"q": q, "limit": 0}]}, verbosity)
    assert _stage(deleted["executionStats"]["executionStages"], "DELETE")["nWouldDelete"] == matching
    updated = _explain(db, {"update": "c", "let": {"t": target, "n": "new"},
                            "updates": [{"q": q, "u": [{"$set": {"s": "$$n"}}], "multi": True}]}, verbosity)
    stage = _stage(updated["executionStats"]["executionStages"], "UPDATE")
    assert (stage["nMatched"], stage["nWouldModify"]) == (matching, matching)
    famed = _explain(db, {"findAndModify": "c", "let": {"t": target}, "query": q, "update": {"$set": {"s": 1}}},
                     verbosity)
    stage = _stage(famed["executionStats"]["executionStages"], "UPDATE")
    assert (stage["nMatched"], stage["nWouldModify"]) == (min(matching, 1), min(matching, 1))
    assert db.c.count_documents({"s": {"$exists": True}}) == 0  # nothing written


def test_update_constants_are_seen_and_win_over_let(db):
    db.c.insert_many([{"_id": 1, "v": "c"}, {"_id": 2, "v": "let"}])
    reply = _explain(db, {"update": "c", "let": {"t": "let"},
                          "updates": [{"q": {"$expr": {"$eq": ["$v", "$$t"]}}, "u": [{"$set": {"v": "$$t"}}],
                                       "c": {"t": "c"}}]}, "executionStats")
    stage = _stage(reply["executionStats"]["executionStages"], "UPDATE")
    # the statement's constant matches _id 1, whose v is already "c": matched, nothing to modify
    assert (stage["nMatched"], stage["nWouldModify"]) == (1, 0)


UNDEFINED = {"$expr": {"$eq": ["$v", "$$t"]}}
WRITES = [{"delete": "c", "let": {"x": 1}, "deletes": [{"q": UNDEFINED, "limit": 1}]},
          {"update": "c", "let": {"x": 1}, "updates": [{"q": UNDEFINED, "u": {"$set": {"v": 2}}}]},
          {"update": "c", "let": {"x": 1}, "updates": [{"q": {}, "u": [{"$set": {"v": "$$t"}}]}]},
          {"findAndModify": "c", "let": {"x": 1}, "query": UNDEFINED, "remove": True},
          {"findAndModify": "c", "let": {"x": 1}, "query": {}, "update": [{"$set": {"v": "$$t"}}]}]


@pytest.mark.parametrize("verbosity", ["queryPlanner", *VERBOSITIES])
@pytest.mark.parametrize("write", WRITES, ids=lambda w: next(iter(w)))
@pytest.mark.parametrize("exists", [True, False])
def test_undefined_variable_fails_every_verbosity(db, verbosity, write, exists):
    """mongod parses the statement (ParsedDelete / ParsedUpdate: query and update, with the command's
    variables) before it plans, whatever the verbosity and whether or not the collection exists."""
    if exists:
        db.c.insert_one({"_id": 1, "v": 1})
    with pytest.raises(OperationFailure) as info:
        _explain(db, write, verbosity)
    assert info.value.code == 17276
    assert db.c.count_documents({"v": 2}) == 0
