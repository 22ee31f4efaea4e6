"""readConcern on a standalone, as mongod 7.0 answers it, for the family of commands and shapes.

mongod reads a command's readConcern in three steps (src/mongo/db/repl/read_concern_args.cpp,
service_entry_point_common.cpp's _extractReadConcern, read_concern_mongod.cpp's waitForReadConcern):
1. ReadConcernArgs::parse: a non-object is 9 "readConcern field should be an object" (14 in the IDL's
   words for find, aggregate and count, whose IDLs declare the field); each field in document order —
   an unknown one 72 "Unrecognized option in readConcern: x", a wrong BSON type 14 (bsonExtract's
   '"level" had the wrong type. Expected string, found int'), afterOpTime's missing ts/t 4; then the
   fields' combinations, 72 each (afterClusterTime with afterOpTime or atClusterTime, afterClusterTime
   with level available/linearizable, atClusterTime without snapshot, a null timestamp);
2. the command's supportsReadConcern: a level it does not take is 72 "Command insert does not support
   { readConcern: { level: "majority", provenance: "clientSupplied" } } :: caused by :: read concern not
   supported" (writes take local and snapshot; mapReduce local and available; ping, hello, DDL local);
3. waitForReadConcern on a standalone: linearizable and snapshot 123, afterClusterTime/atClusterTime 20,
   afterOpTime 123.
Tidemark served an unknown field, an afterOpTime and any level on a write, and answered 20 for a
malformed afterClusterTime or an atClusterTime without snapshot.
"""

from __future__ import annotations

import pytest
from bson.int64 import Int64
from bson.timestamp import Timestamp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo import monitoring
from pymongo.errors import OperationFailure
from pymongo.read_concern import ReadConcern

pytestmark = pytest.mark.commands("find", "aggregate", "count", "distinct", "insert", "update", "delete",
                                  "findAndModify", "ping", "hello")

LEVELS = ("local", "majority", "linearizable", "available", "snapshot")

# each command with the levels its mongod 7.0 supportsReadConcern takes
COMMANDS = {
    "find": ({"find": "c"}, set(LEVELS)),
    "aggregate": ({"aggregate": "c", "pipeline": [], "cursor": {}}, set(LEVELS)),
    "count": ({"count": "c"}, set(LEVELS)),
    "distinct": ({"distinct": "c", "key": "a"}, set(LEVELS)),
    "insert": ({"insert": "c", "documents": [{"a": 1}]}, {"local", "snapshot"}),
    "update": ({"update": "c", "updates": [{"q": {}, "u": {"$set": {"b": 1}}}]}, {"local", "snapshot"}),
    "delete": ({"delete": "c", "deletes": [{"q": {"a": 99}, "limit": 0}]}, {"local", "snapshot"}),
    "findAndModify": ({"findAndModify": "c", "query": {"a": 99}, "remove": True}, {"local", "snapshot"}),
    "ping": ({"ping": 1}, {"local"}),
    "hello": ({"hello": 1}, {"local"}),
}
IDL_OBJECT = {"find", "aggregate", "count"}

FIELD_VALUES = {
    "level": st.sampled_from([*LEVELS, "bogus", 1, None]),
    "afterClusterTime": st.sampled_from([Timestamp(1, 1), Timestamp(0, 0), Timestamp(0, 5), 1, "x"]),
    "atClusterTime": st.sampled_from([Timestamp(1, 1), Timestamp(0, 0), 1]),
    "afterOpTime": st.sampled_from([{"ts": Timestamp(1, 1), "t": Int64(1)}, {"ts": Timestamp(1, 1), "t": 2.0},
                                    {"t": Int64(1)}, {"ts": Timestamp(1, 1)}, {"ts": 1, "t": 1},
                                    {"ts": Timestamp(1, 1), "t": "x"}, 1]),
    "allowTransactionTableSnapshot": st.sampled_from([True, 1]),
    "provenance": st.sampled_from(["clientSupplied", "customDefault", "bogus", 1]),
    "foo": st.just(1),
}


@st.composite
def read_concerns(draw):
    if draw(st.integers(0, 9)) == 0:
        return draw(st.sampled_from([1, "majority", None, [], True]))
    keys = draw(st.lists(st.sampled_from(sorted(FIELD_VALUES)), unique=True, max_size=3))
    return {key: draw(FIELD_VALUES[key]) for key in keys}


def _type(v):
    return {bool: "bool", int: "int", str: "string", dict: "object", float: "double", Int64: "long",
            Timestamp: "timestamp", type(None): "null", list: "array"}[type(v)]


def expected(name: str, rc) -> int | None:
    """The code mongod 7.0 answers on a standalone (None: the command runs)."""
    if not isinstance(rc, dict):
        return 14 if name in IDL_OBJECT else 9
    for key, value in rc.items():  # ReadConcernArgs::parse, field by field
        if key == "afterOpTime":
            if type(value) is not dict:
                return 14
            if "ts" not in value:
                return 4
            if type(value["ts"]) is not Timestamp:
                return 14
            if "t" not in value:
                return 4
            if type(value["t"]) not in (int, Int64, float):
                return 14
        elif key in ("afterClusterTime", "atClusterTime"):
            if type(value) is not Timestamp:
                return 14
        elif key == "level":
            if type(value) is not str:
                return 14
            if value not in LEVELS:
                return 9
        elif key == "allowTransactionTableSnapshot":
            if type(value) is not bool:
                return 14
        elif key == "provenance":
            if type(value) is not str:
                return 14
            if value not in ("clientSupplied", "implicitDefault", "customDefault", "getLastErrorDefaults",
                             "internalWriteDefault"):
                return 2
        else:
            return 72
    level = rc.get("level", "local")
    after, at, optime = "afterClusterTime" in rc, "atClusterTime" in rc, "afterOpTime" in rc
    if (after and optime) or (after and at) or (after and level in ("available", "linearizable")):
        return 72
    if (optime and level == "snapshot") or (at and level != "snapshot"):
        return 72
    if (at and rc["atClusterTime"] == Timestamp(0, 0)) or (after and rc["afterClusterTime"] == Timestamp(0, 0)):
        return 72
    if "level" in rc and level not in COMMANDS[name][1]:  # supportsReadConcern
        return 72
    if level in ("linearizable", "snapshot"):  # waitForReadConcern on a standalone
        return 123
    if after or at:
        return 20
    return 123 if optime else None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(sorted(COMMANDS)), rc=read_concerns())
def test_each_read_concern_gets_mongods_answer(db, name, rc):
    cmd = {**COMMANDS[name][0], "readConcern": rc}
    want = expected(name, rc)
    try:
        db.command(cmd)
    except OperationFailure as refused:
        assert refused.code == want, (cmd, refused.details)
        assert refused.details["errmsg"], cmd
    else:
        assert want is None, cmd


@pytest.mark.parametrize(("rc", "code", "errmsg"), [
    ({"foo": 1}, 72, "Unrecognized option in readConcern: foo"),
    ({"level": 1}, 14, '"level" had the wrong type. Expected string, found int'),
    ({"afterClusterTime": 5}, 14, '"afterClusterTime" had the wrong type. Expected timestamp, found int'),
    ({"afterClusterTime": Timestamp(0, 0)}, 72, "afterClusterTime cannot be a null timestamp"),
    ({"level": "available", "afterClusterTime": Timestamp(1, 1)}, 72,
     "afterClusterTime field can be set only if level is equal to majority, local, or snapshot"),
    ({"atClusterTime": Timestamp(1, 1)}, 72, "atClusterTime field can be set only if level is equal to snapshot"),
    ({"afterOpTime": {"ts": Timestamp(1, 1), "t": Int64(1)}}, 123,
     "node needs to be a replica set member to use read concern"),
    ({"afterOpTime": {"t": Int64(1)}}, 4, 'Missing expected field "ts"'),
    ({"afterClusterTime": Timestamp(1, 1)}, 20, "Cannot specify afterClusterTime readConcern without replication enabled"),
])
def test_read_concern_messages(db, rc, code, errmsg):
    with pytest.raises(OperationFailure) as refused:
        db.command({"find": "c", "readConcern": rc})
    assert (refused.value.code, refused.value.details["errmsg"]) == (code, errmsg)


def test_a_non_object_read_concern_in_the_idl_words_or_read_concern_args(db):
    with pytest.raises(OperationFailure) as refused:
        db.command({"find": "c", "readConcern": "majority"})
    assert (refused.value.code, refused.value.details["errmsg"]) == (
        14, "BSON field 'find.readConcern' is the wrong type 'string', expected type 'object'")
    with pytest.raises(OperationFailure) as refused:
        db.command({"distinct": "c", "key": "a", "readConcern": "majority"})
    assert (refused.value.code, refused.value.details["errmsg"]) == (9, "readConcern field should be an object")


def test_a_write_refuses_a_level_it_does_not_support_and_writes_nothing(db):
    with pytest.raises(OperationFailure) as refused:
        db.command({"insert": "c", "documents": [{"a": 1}], "readConcern": {"level": "majority"}})
    assert refused.value.code == 72
    assert refused.value.details["codeName"] == "InvalidOptions"
    assert refused.value.details["errmsg"] == (
        'Command insert does not support { readConcern: { level: "majority", provenance: "clientSupplied" } } '
        ":: caused by :: read concern not supported")
    assert db.c.count_documents({}) == 0
    db.command({"insert": "c", "documents": [{"a": 1}], "readConcern": {"level": "local"}})
    db.command({"insert": "c", "documents": [{"a": 2}], "readConcern": {}})
    assert db.c.count_documents({}) == 2


def test_pymongo_read_concern_levels_on_a_standalone(db):
    db.c.insert_one({"a": 1})
    for level in ("local", "available", "majority"):
        coll = db.get_collection("c", read_concern=ReadConcern(level))
        assert coll.find_one({}, {"_id": 0}) == {"a": 1}
        assert coll.count_documents({}) == 1
        assert coll.distinct("a") == [1]
        assert list(coll.aggregate([{"$project": {"_id": 0}}])) == [{"a": 1}]
    for level in ("linearizable", "snapshot"):
        with pytest.raises(OperationFailure) as refused:
            db.get_collection("c", read_concern=ReadConcern(level)).find_one()
        assert refused.value.code == 123


class _Commands(monitoring.CommandListener):
    def __init__(self):
        self.commands: list[dict] = []

    def started(self, event):
        self.commands.append(dict(event.command))

    def succeeded(self, event):
        pass

    def failed(self, event):
        pass


def test_pymongo_sessions_transactions_and_retryable_writes(server, db):
    """What drivers do against a standalone: no txnNumber for a retryable write (the hello reply has
    no setName/msg, so pymongo sees a Standalone), a causally consistent session reads its own writes
    (no operationTime is gossiped, so no afterClusterTime is sent), a transaction is 20 and watch() 40573."""
    listener = _Commands()
    client = server.client(retryWrites=True, event_listeners=[listener])
    try:
        coll = client[db.name].c
        coll.insert_one({"a": 1})
        assert all("txnNumber" not in cmd for cmd in listener.commands if "insert" in cmd)
        with client.start_session(causal_consistency=True) as session:
            coll.insert_one({"a": 2}, session=session)
            assert coll.count_documents({}, session=session) == 2
        assert all("afterClusterTime" not in cmd.get("readConcern", {}) for cmd in listener.commands)
        with client.start_session() as session, pytest.raises(OperationFailure) as refused:
            session.with_transaction(lambda s: coll.insert_one({"a": 3}, session=s))
        assert refused.value.code == 20
        assert refused.value.details["errmsg"] == "Transaction numbers are only allowed on a replica set member or mongos"
        assert coll.count_documents({"a": 3}) == 0
        with pytest.raises(OperationFailure) as refused:
            coll.watch()
        assert refused.value.code == 40573
        assert refused.value.details["errmsg"] == "The $changeStream stage is only supported on replica sets"
    finally:
        client.close()

