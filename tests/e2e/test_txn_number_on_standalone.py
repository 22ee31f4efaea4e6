"""Every command carrying a transaction number is refused on a standalone, retryable writes included.

mongod 7.0 runs initializeOperationSessionInfo (src/mongo/db/initialize_operation_session_info.cpp)
for every command before the command itself: a ``txnNumber`` with an ``lsid`` -> 20 IllegalOperation
"Transaction numbers are only allowed on a replica set member or mongos" on a node that is not a
replica-set member; a ``txnNumber`` without ``lsid`` -> 72 "Transaction number requires a session ID
to also be specified"; on a command that needs no authentication (ping, hello, ...) 50889 "It is
illegal to provide a txnNumber for this command" (and ``autocommit`` there 263); ``autocommit``
without ``txnNumber`` -> 72, ``startTransaction`` without ``autocommit`` -> 72. Tidemark refused only
commands with ``startTransaction``/``autocommit`` and only in the commands that looked for them: a bare
``txnNumber`` (a retryable write) was accepted, and the write was done, by every command.
"""

from __future__ import annotations

import uuid

import pytest
from bson.binary import Binary
from bson.int64 import Int64
from harness import raw_command
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("insert", "update", "delete", "findAndModify", "find", "aggregate",
                                  "count", "distinct", "create", "ping", "hello", "commitTransaction")

COMMANDS = [
    {"insert": "c", "documents": [{"x": 1}]},
    {"update": "c", "updates": [{"q": {}, "u": {"$set": {"b": 1}}, "multi": True}]},
    {"delete": "c", "deletes": [{"q": {}, "limit": 0}]},
    {"findAndModify": "c", "query": {}, "update": {"$set": {"f": 1}}},
    {"find": "c"},
    {"aggregate": "c", "pipeline": [], "cursor": {}},
    {"aggregate": "c", "pipeline": [{"$out": "o"}], "cursor": {}},
    {"count": "c"},
    {"distinct": "c", "key": "a"},
    {"create": "t2"},
    {"createIndexes": "c", "indexes": [{"key": {"z": 1}, "name": "z_1"}]},
    {"drop": "c"},
    {"dbStats": 1},
]
OPEN_COMMANDS = [{"ping": 1}, {"hello": 1}, {"buildInfo": 1}]


def _lsid() -> dict:
    return {"id": Binary(uuid.uuid4().bytes, 4)}


def _refused(db, cmd: dict) -> tuple[int, str]:
    with pytest.raises(OperationFailure) as refused:
        db.command(cmd)
    return refused.value.code, refused.value.details["errmsg"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(command=st.sampled_from(COMMANDS), number=st.integers(0, 2**62),
       extra=st.sampled_from([{}, {"autocommit": False}, {"autocommit": False, "startTransaction": True}]))
def test_a_transaction_number_with_a_session_is_20_and_writes_nothing(db, command, number, extra):
    db.c.drop()
    db.c.insert_one({"a": 1})
    cmd = {**command, "lsid": _lsid(), "txnNumber": Int64(number), **extra}
    assert _refused(db, cmd) == (20, "Transaction numbers are only allowed on a replica set member or mongos")
    assert list(db.c.find({}, {"_id": 0})) == [{"a": 1}]
    assert "t2" not in db.list_collection_names() and "o" not in db.list_collection_names()


@pytest.mark.parametrize("command", COMMANDS[:5])
def test_a_transaction_number_without_a_session_is_72(server, db, command):
    # (raw: a driver always adds an lsid)
    reply = raw_command(server.port, {**command, "txnNumber": Int64(1), "$db": db.name})
    assert (reply["ok"], reply["code"], reply["errmsg"]) == (
        0.0, 72, "Transaction number requires a session ID to also be specified")


@pytest.mark.parametrize("command", COMMANDS[:5])
def test_autocommit_or_start_transaction_without_their_prerequisite_is_72(db, command):
    assert _refused(db, {**command, "lsid": _lsid(), "autocommit": False}) == (
        72, "'autocommit' field requires a transaction number to also be specified")
    assert _refused(db, {**command, "lsid": _lsid(), "startTransaction": True}) == (
        72, "'startTransaction' field requires 'autocommit' field to also be specified")


@pytest.mark.parametrize("command", OPEN_COMMANDS)
def test_open_commands_refuse_transaction_fields(db, command):
    assert _refused(db, {**command, "lsid": _lsid(), "txnNumber": Int64(1)}) == (
        50889, "It is illegal to provide a txnNumber for this command")
    assert _refused(db, {**command, "lsid": _lsid(), "txnNumber": Int64(1), "autocommit": False}) == (
        263, "This command is not supported in transactions")


def test_commit_transaction_with_a_number_is_20_without_125(client):
    cmd = {"commitTransaction": 1, "lsid": _lsid(), "txnNumber": Int64(3), "autocommit": False}
    assert _refused(client.admin, cmd)[0] == 20
    assert _refused(client.admin, {"commitTransaction": 1})[0] == 125


def test_a_session_without_a_transaction_number_still_works(client, db):
    with client.start_session() as session:
        db.c.insert_one({"a": 1}, session=session)
        assert db.c.count_documents({}, session=session) == 1
