"""``collectionUUID`` (issue 25 item 9): a command naming the UUID it expects runs only on the collection
with that UUID; otherwise 361 CollectionUUIDMismatch with ``db``, ``collectionUUID``,
``expectedCollection`` and ``actualCollection`` (the collection of the database that has the UUID, null
when none) — mongod's jstests/core/collection_uuid_*.js and timeseries_collection_uuid.js. Writes answer it
as one write error per statement (an ordered write stops at the first), except a time-series insert, which
fails as a command. A view never matches: a time-series collection's UUID is its buckets collection's."""

import datetime as dt
import uuid

import pytest
from bson.binary import Binary

pytestmark = pytest.mark.commands("insert", "update", "delete", "find", "aggregate", "count", "distinct", "collMod",
                                  "createIndexes", "dropIndexes")

MISMATCH = 361
MESSAGE = "Collection UUID does not match that specified"


def uuid_of(db, name):
    (info,) = db.command("listCollections", filter={"name": name})["cursor"]["firstBatch"]
    return info["info"]["uuid"]


def commands(name):
    """(command, is a write) for each command taking collectionUUID."""
    now = dt.datetime(2024, 5, 1)
    return [
        ({"insert": name, "documents": [{"t": now, "x": 1}, {"t": now, "x": 2}]}, True),
        ({"insert": name, "documents": [{"t": now, "x": 1}, {"t": now, "x": 2}], "ordered": False}, True),
        ({"update": name, "updates": [{"q": {"x": 1}, "u": {"$set": {"y": 1}}}, {"q": {}, "u": {"$set": {"z": 1}}}],
          "ordered": False}, True),
        ({"delete": name, "deletes": [{"q": {"x": 9}, "limit": 0}]}, True),
        ({"find": name, "filter": {}}, False),
        ({"aggregate": name, "pipeline": [], "cursor": {}}, False),
        ({"count": name}, False),
        ({"distinct": name, "key": "x"}, False),
        ({"collMod": name}, False),
        ({"createIndexes": name, "indexes": [{"key": {"x": 1}, "name": "x_1"}]}, False),
    ]


@pytest.fixture
def collections(db):
    db.reg.insert_one({"_id": 0, "x": 1})
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    db.ts.insert_one({"t": dt.datetime(2024, 5, 1), "m": 1, "x": 1})
    db.create_collection("view", viewOn="reg", pipeline=[])
    return {"reg": uuid_of(db, "reg"), "buckets": uuid_of(db, "system.buckets.ts")}


def mismatches(reply, n_statements, ordered, is_write):
    """The error documents of a failed command: its write errors, or the command error itself."""
    if is_write and "writeErrors" in reply:
        assert reply["ok"] == 1.0 and reply["n"] == 0
        errors = reply["writeErrors"]
        assert [e["index"] for e in errors] == list(range(1 if ordered else n_statements))
        return errors
    assert reply["ok"] == 0.0 and reply["codeName"] == "CollectionUUIDMismatch"
    return [reply]


def check_mismatch(db, cmd, is_write, expected_uuid, expected_collection, actual_collection):
    reply = db.command({**cmd, "collectionUUID": expected_uuid}, check=False)
    n = len(cmd.get("documents") or cmd.get("updates") or cmd.get("deletes") or [None])
    for error in mismatches(reply, n, cmd.get("ordered", True), is_write):
        assert error["code"] == MISMATCH, reply
        assert error["errmsg"].endswith(MESSAGE), reply
        assert {k: error[k] for k in ("db", "collectionUUID", "expectedCollection", "actualCollection")} == {
            "db": db.name, "collectionUUID": expected_uuid, "expectedCollection": expected_collection,
            "actualCollection": actual_collection}, reply
    return reply


@pytest.mark.parametrize("index", range(len(commands("x"))))
def test_the_right_uuid_runs_the_command(db, collections, index):
    cmd, _ = commands("reg")[index]
    reply = db.command({**cmd, "collectionUUID": collections["reg"]}, check=False)
    assert reply["ok"] == 1.0 and "writeErrors" not in reply, reply


@pytest.mark.parametrize("index", range(len(commands("x"))))
def test_a_uuid_no_collection_has_is_a_mismatch_with_no_actual_collection(db, collections, index):
    cmd, is_write = commands("reg")[index]
    check_mismatch(db, cmd, is_write, Binary.from_uuid(uuid.uuid4()), "reg", None)
    assert db.reg.count_documents({}) == 1  # nothing was written


@pytest.mark.parametrize("index", range(len(commands("x"))))
def test_another_collections_uuid_names_it_even_when_the_namespace_is_missing_or_a_view(db, collections, index):
    db.other.insert_one({"_id": 1})
    for name in ("other", "missing", "view"):
        cmd, is_write = commands(name)[index]
        check_mismatch(db, cmd, is_write, collections["reg"], name, "reg")
    assert "missing" not in db.list_collection_names()  # an insert or createIndexes created nothing


@pytest.mark.parametrize("index", range(len(commands("x"))))
def test_a_time_series_collection_never_matches_and_names_its_buckets_collection(db, collections, index):
    cmd, is_write = commands("ts")[index]
    for expected, actual in ((collections["buckets"], "system.buckets.ts"), (Binary.from_uuid(uuid.uuid4()), None)):
        reply = check_mismatch(db, cmd, is_write, expected, "ts", actual)
        if "insert" in cmd:  # mongod checks a time-series insert before any measurement: a command error
            assert reply["ok"] == 0.0
            assert reply["errmsg"] == f"time-series insert failed: {db.name}.ts :: caused by :: {MESSAGE}"
    assert db.ts.count_documents({}) == 1


def test_the_buckets_collection_matches_its_own_uuid(db, collections):
    buckets = db["system.buckets.ts"]
    reply = db.command({"find": buckets.name, "collectionUUID": collections["buckets"]})
    assert len(reply["cursor"]["firstBatch"]) == 1
    assert db.command({"count": buckets.name, "collectionUUID": collections["buckets"]})["n"] == 1


def test_drop_indexes_checks_the_uuid_even_for_a_missing_index(db, collections):
    reply = db.command({"dropIndexes": "reg", "index": "nope_1", "collectionUUID": collections["buckets"]},
                       check=False)
    assert reply["code"] == MISMATCH and reply["actualCollection"] == "system.buckets.ts"


@pytest.mark.parametrize("value, message", [
    ("abc", "BSON field 'find.collectionUUID' is the wrong type 'string', expected type 'binData'"),
    (Binary(b"0123456789abcdef", 3),
     "BSON field 'find.collectionUUID' is the wrong binData type 'uuid_old', expected type 'UUID'"),
])
def test_a_collection_uuid_that_is_not_a_uuid_is_a_type_mismatch(db, collections, value, message):
    reply = db.command({"find": "reg", "collectionUUID": value}, check=False)
    assert (reply["code"], reply["errmsg"]) == (14, message)
