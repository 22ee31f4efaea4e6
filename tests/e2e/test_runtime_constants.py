"""A command's ``runtimeConstants`` give its ``$$NOW`` and ``$$CLUSTER_TIME``, as in mongod.

mongod 7.0's find, aggregate, update, delete and findAndModify take ``runtimeConstants`` (IDL struct
LegacyRuntimeConstants: ``localNow`` date and ``clusterTime`` timestamp required, ``jsScope``,
``isMapReduce``, ``userRoles`` optional; mongos sends them to shards, and a mongod takes them from any
client: find_cmd.cpp makeExpressionContext, run_aggregate.cpp, the write commands' parse). The
ExpressionContext seeds ``$$NOW`` with ``localNow`` and ``$$CLUSTER_TIME`` with ``clusterTime`` unless
it is the null timestamp (Variables::setLegacyRuntimeConstants). An unknown field is 40415, a missing
one 40414, a wrong type 14, with the field's dotted IDL path. Tidemark refused the field in find and
aggregate (40415) and ignored it in the writes (their ``$$NOW`` was the server's clock).
"""

from __future__ import annotations

import datetime

import pytest
from bson.timestamp import Timestamp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("find", "aggregate", "update", "delete", "findAndModify")

DATES = st.datetimes(min_value=datetime.datetime(1970, 1, 1), max_value=datetime.datetime(2100, 1, 1)).map(
    lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000))
TIMES = st.builds(Timestamp, st.integers(1, 2**31 - 1), st.integers(0, 2**31 - 1))


def _code(db, cmd: dict) -> tuple[int, str]:
    with pytest.raises(OperationFailure) as refused:
        db.command(cmd)
    return refused.value.code, refused.value.details["errmsg"]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(now=DATES, cluster=TIMES)
def test_every_command_sees_the_given_now_and_cluster_time(db, now, cluster):
    db.c.drop()
    db.c.insert_one({"_id": 1})
    rc = {"runtimeConstants": {"localNow": now, "clusterTime": cluster}}
    pipeline = [{"$project": {"n": "$$NOW", "t": "$$CLUSTER_TIME"}}]
    assert db.command({"aggregate": "c", "pipeline": pipeline, "cursor": {}, **rc})["cursor"]["firstBatch"] == [
        {"_id": 1, "n": now, "t": cluster}]
    assert db.command({"find": "c", "filter": {"$expr": {"$eq": ["$$NOW", now]}}, **rc})["cursor"]["firstBatch"] \
        == [{"_id": 1}]
    db.command({"update": "c", "updates": [{"q": {}, "u": [{"$set": {"u": "$$NOW"}}]}], **rc})
    reply = db.command({"findAndModify": "c", "query": {}, "update": [{"$set": {"f": "$$CLUSTER_TIME"}}],
                        "new": True, **rc})
    assert reply["value"] == {"_id": 1, "u": now, "f": cluster}
    assert db.command({"delete": "c", "deletes": [{"q": {"$expr": {"$eq": ["$$NOW", now]}}, "limit": 0}],
                       **rc})["n"] == 1


def test_a_null_cluster_time_leaves_cluster_time_unavailable(db):
    db.c.insert_one({"_id": 1})
    rc = {"localNow": datetime.datetime(2001, 1, 1), "clusterTime": Timestamp(0, 0)}
    assert _code(db, {"aggregate": "c", "pipeline": [{"$project": {"t": "$$CLUSTER_TIME"}}], "cursor": {},
                      "runtimeConstants": rc})[0] == 51144


@pytest.mark.parametrize("command", [{"find": "c"}, {"aggregate": "c", "pipeline": [], "cursor": {}},
                                     {"delete": "c", "deletes": [{"q": {}, "limit": 0}]}])
def test_runtime_constants_are_checked_like_mongod_idl(db, command):
    name = next(iter(command))
    when, null = datetime.datetime(2001, 1, 1), Timestamp(0, 0)
    assert _code(db, {**command, "runtimeConstants": {"localNow": when, "clusterTime": null, "x": 1}}) == (
        40415, f"BSON field '{name}.runtimeConstants.x' is an unknown field.")
    assert _code(db, {**command, "runtimeConstants": {"localNow": when}}) == (
        40414, f"BSON field '{name}.runtimeConstants.clusterTime' is missing but a required field")
    assert _code(db, {**command, "runtimeConstants": {"localNow": 1, "clusterTime": null}}) == (
        14, f"BSON field '{name}.runtimeConstants.localNow' is the wrong type 'int', expected type 'date'")
    assert _code(db, {**command, "runtimeConstants": 1}) == (
        14, f"BSON field '{name}.runtimeConstants' is the wrong type 'int', expected type 'object'")
