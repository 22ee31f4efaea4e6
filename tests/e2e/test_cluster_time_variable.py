"""$$CLUSTER_TIME on a standalone: mongod parses it (a view using it is created) and fails only when
it is read, 51144 "Builtin variable '$$CLUSTER_TIME' is not available" (variables.cpp; a standalone
has no logical clock). Tidemark refused it at parse time with 224, so such a view could not even be
created and a branch that never reads it failed (found by a helper porting jstests)."""

from __future__ import annotations

import pytest
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("aggregate", "create", "find")

MESSAGE = "Builtin variable '$$CLUSTER_TIME' is not available"


def test_reading_it_fails_at_run_time(db):
    db.c.insert_one({"_id": 1, "a": 1})
    for pipeline in ([{"$set": {"t": "$$CLUSTER_TIME"}}], [{"$project": {"t": {"$toDate": "$$CLUSTER_TIME"}}}],
                     [{"$match": {"$expr": {"$eq": ["$$CLUSTER_TIME", 1]}}}]):
        with pytest.raises(OperationFailure) as failed:
            list(db.c.aggregate(pipeline))
        assert (failed.value.code, failed.value.details["errmsg"]) == (51144, MESSAGE)


def test_a_view_using_it_is_created_and_fails_when_read(db):
    db.c.insert_one({"_id": 1})
    db.command("create", "v", viewOn="c", pipeline=[{"$set": {"t": "$$CLUSTER_TIME"}}])
    with pytest.raises(OperationFailure) as failed:
        list(db.v.find())
    assert failed.value.code == 51144


def test_a_branch_that_never_reads_it_works(db):
    db.c.insert_one({"_id": 1, "a": 1})
    got = list(db.c.aggregate([{"$project": {"t": {"$cond": [{"$eq": ["$a", 1]}, "one", "$$CLUSTER_TIME"]}}}]))
    assert got == [{"_id": 1, "t": "one"}]
    assert list(db.c.aggregate([{"$match": {"a": 2}}, {"$set": {"t": "$$CLUSTER_TIME"}}])) == []
