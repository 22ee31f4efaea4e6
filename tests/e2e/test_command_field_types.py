"""Command fields are type-checked as mongod 7.0's IDL parser checks them, for every command that
parses its arguments through the IDL — not one option at a time.

The oracle is the IDL itself (mongo 7.0: find_command.idl, aggregate_command.idl, count_command.idl,
distinct_command.idl, write_ops.idl, getmore_command.idl, list_collections.idl, list_indexes.idl,
create_indexes.idl, drop_indexes.idl, commands/create.idl, drop.idl, coll_mod.idl; types from idl/basic_types.idl and idl_parser.cpp):

- ``bool``: a BSON bool; ``safeBool``: a bool or any number; ``safeInt64``: any number (never a bool);
  ``int``: a BSON int32; ``long``: a BSON int64; ``object`` / ``array``. A null of the wrong type is
  ignored (``checkAndAssertType`` returns false: the field reads as absent); anything else is
  14 TypeMismatch "BSON field '<command>.<field>' is the wrong type '<t>', expected type '<x>'" (or
  "expected types '[...]'").
- ``optionalBool`` (``OptionalBool::parseFromBSON``): a bool only — a number or a null too is
  14 "Field '<field>' should be a boolean value, but found: <t>".
- a field the command does not declare and no generic argument: 40415 "BSON field
  '<command>.<field>' is an unknown field."
- the fields are read in document order: the first offending one is the one reported.

A refused write writes nothing.
"""

from __future__ import annotations

import datetime as dt

import pytest
from bson import Binary, Decimal128, Int64, ObjectId, Regex, Timestamp
from bson.max_key import MaxKey
from bson.min_key import MinKey
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

COLL = "field_types"

# One value of each BSON type a client can send (undefined decodes as null), with its $type name.
VALUES: list[tuple[str, object]] = [
    ("double", 1.5), ("string", "x"), ("object", {"a": 1}), ("array", [1]), ("binData", Binary(b"\x01", 0)),
    ("objectId", ObjectId("65f0c0ffee0000000000beef")), ("bool", True), ("bool", False),
    ("date", dt.datetime(2024, 1, 1)), ("null", None), ("regex", Regex("a")), ("int", 1), ("int", 0),
    ("timestamp", Timestamp(1, 1)), ("long", Int64(1)), ("decimal", Decimal128("1")),
    ("minKey", MinKey()), ("maxKey", MaxKey()),
]

NUMBER = ("long", "int", "decimal", "double")
# IDL type -> (accepted $type names, null ignored, what a refusal says it expected)
TYPES = {
    "bool": ({"bool"}, True, "bool"),
    "optionalBool": ({"bool"}, False, None),
    "safeBool": ({"bool", *NUMBER}, True, ("bool", *NUMBER)),
    "safeInt64": (set(NUMBER), True, NUMBER),
    "int": ({"int"}, True, "int"),
    "long": ({"long"}, True, "long"),
    "object": ({"object"}, True, "object"),
    "array": ({"array"}, True, "array"),
}

# command -> (a valid command on the collection, {field: IDL type}) — the plainly typed fields each
# IDL declares (fields of a custom deserializer — a hint, a pipeline, a cursor — are left out)
WRITE_BASE = {"bypassDocumentValidation": "safeBool", "ordered": "bool", "stmtId": "int", "stmtIds": "array",
              "isTimeseriesNamespace": "optionalBool"}
COMMANDS: dict[str, tuple[dict, dict[str, str]]] = {
    "find": ({"find": COLL}, {
        "skip": "safeInt64", "limit": "safeInt64", "batchSize": "safeInt64", "ntoreturn": "safeInt64",
        "term": "safeInt64", "singleBatch": "optionalBool", "allowDiskUse": "optionalBool",
        "returnKey": "optionalBool", "showRecordId": "optionalBool", "tailable": "optionalBool",
        "noCursorTimeout": "optionalBool", "awaitData": "optionalBool", "allowPartialResults": "optionalBool",
        "readOnce": "optionalBool", "allowSpeculativeMajorityRead": "optionalBool",
        "$_requestResumeToken": "optionalBool", "let": "object", "options": "object",
    }),
    "aggregate": ({"aggregate": COLL, "pipeline": [], "cursor": {}}, {
        "allowDiskUse": "optionalBool", "needsMerge": "optionalBool", "fromMongos": "optionalBool",
        "isMapReduceCommand": "optionalBool", "$_requestReshardingResumeToken": "optionalBool",
        "$_requestResumeToken": "optionalBool", "$_isClusterQueryWithoutShardKeyCmd": "optionalBool",
        "bypassDocumentValidation": "safeBool", "stmtId": "int", "collation": "object", "let": "object",
        "$queryOptions": "object", "$_resumeAfter": "object", "$_externalDataSources": "array",
    }),
    "count": ({"count": COLL}, {"$queryOptions": "object", "mirrored": "optionalBool"}),
    "distinct": ({"distinct": COLL, "key": "a"}, {"mirrored": "optionalBool"}),
    "insert": ({"insert": COLL, "documents": [{"_id": 2}]}, WRITE_BASE),
    "update": ({"update": COLL, "updates": [{"q": {"_id": 1}, "u": {"$set": {"b": 1}}}]}, WRITE_BASE),
    "delete": ({"delete": COLL, "deletes": [{"q": {"_id": 1}, "limit": 1}]}, WRITE_BASE),
    "findAndModify": ({"findAndModify": COLL, "query": {"_id": 1}, "update": {"$set": {"b": 1}}}, {
        "query": "object", "fields": "object", "sort": "object", "collation": "object", "let": "object",
        "remove": "safeBool", "upsert": "safeBool", "new": "safeBool", "bypassDocumentValidation": "safeBool",
        "batchSize": "int", "singleBatch": "bool", "stmtId": "int", "isTimeseriesNamespace": "optionalBool",
        "mirrored": "optionalBool",
    }),
    "getMore": ({"getMore": Int64(4242), "collection": COLL}, {"term": "long", "lastKnownCommittedOpTime": "object"}),
    "listCollections": ({"listCollections": 1}, {
        "filter": "object", "nameOnly": "bool", "authorizedCollections": "bool", "includePendingDrops": "safeBool",
    }),
    "listIndexes": ({"listIndexes": COLL}, {
        "includeBuildUUIDs": "safeBool", "includeIndexBuildInfo": "safeBool", "isTimeseriesNamespace": "bool",
    }),
    "createIndexes": ({"createIndexes": COLL, "indexes": [{"key": {"a": 1}, "name": "a_1"}]}, {
        "ignoreUnknownIndexOptions": "bool", "isTimeseriesNamespace": "bool", "returnOnStart": "bool",
    }),
    "dropIndexes": ({"dropIndexes": COLL, "index": "no_such_index"}, {"isTimeseriesNamespace": "bool"}),
    # (the collection exists: a create whose fields all parse fails 48 NamespaceExists, writing nothing)
    "create": ({"create": COLL}, {
        "capped": "safeBool", "autoIndexId": "safeBool", "temp": "safeBool", "recordPreImages": "safeBool",
        "size": "safeInt64", "max": "safeInt64", "expireAfterSeconds": "safeInt64", "flags": "safeInt64",
        "storageEngine": "object", "changeStreamPreAndPostImages": "object",
    }),
    "drop": ({"drop": "no_such_collection"}, {}),
    # (a missing collection: a collMod whose fields all parse fails 26 NamespaceNotFound, writing nothing)
    "collMod": ({"collMod": "no_such_collection"}, {
        "dryRun": "safeBool", "recordPreImages": "safeBool", "timeseriesBucketsMayHaveMixedSchemaData": "safeBool",
        "cappedSize": "safeInt64", "cappedMax": "safeInt64",
    }),
}
WRITES = {"insert", "update", "delete", "findAndModify", "createIndexes", "dropIndexes", "create", "drop", "collMod"}
CASES = [(command, field) for command, (_, fields) in COMMANDS.items() for field in fields]

HYPO = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _refusal(command: str, field: str, kind: str, type_name: str, value: object) -> str | None:
    """mongod's message for ``value`` in ``field``, or None when the IDL takes it."""
    accepted, null_ignored, expected = TYPES[kind]
    if type_name in accepted and not (kind == "int" and isinstance(value, Int64)):
        return None
    if value is None and null_ignored:
        return None
    if expected is None:
        return f"Field '{field}' should be a boolean value, but found: {type_name}"
    wanted = f"type '{expected}'" if isinstance(expected, str) else f"types '[{', '.join(expected)}]'"
    return f"BSON field '{command}.{field}' is the wrong type '{type_name}', expected {wanted}"


def _state(db) -> tuple[list, list]:
    return list(db[COLL].find().sort("_id", 1)), sorted(ix["name"] for ix in db[COLL].list_indexes())


def _reset(db) -> None:
    db[COLL].drop()
    db[COLL].insert_one({"_id": 1, "a": 1})


def _with(base: dict, extra: list[tuple[str, object]]) -> dict:
    cmd = dict(base)
    for field, value in extra:  # (a field of the base moves to where ``extra`` puts it)
        cmd.pop(field, None)
        cmd[field] = value
    return cmd


@pytest.fixture
def coll_db(db):
    _reset(db)
    return db


@pytest.mark.slow
@pytest.mark.commands("find", "aggregate", "count", "distinct", "insert", "update", "delete", "findAndModify",
                      "getMore", "listCollections", "listIndexes", "createIndexes", "dropIndexes", "create", "drop",
                      "collMod")
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_declared_field_takes_what_its_idl_type_takes(coll_db, command):
    """Every (command, declared field, BSON type) — the whole finite family: accepted exactly when the
    IDL type takes it, else 14 with mongod's message naming the field; a refused write writes nothing."""
    base, fields = COMMANDS[command]
    for field, kind in fields.items():
        for type_name, value in VALUES:
            expected = _refusal(command, field, kind, type_name, value)
            before = _state(coll_db)
            reply = coll_db.command(_with(base, [(field, value)]), check=False)
            if expected is None:
                # (the command may still fail for what the value means — a tailable find of a plain
                # collection — but never as a field of the wrong type)
                assert reply.get("code") != 14 or field not in reply.get("errmsg", ""), (field, value, reply)
                if reply.get("ok") == 1 and command in WRITES:
                    _reset(coll_db)
                continue
            assert reply["ok"] == 0, (field, value, reply)
            assert (reply["code"], reply["codeName"], reply["errmsg"]) == (14, "TypeMismatch", expected), (field, value)
            assert _state(coll_db) == before, (field, value)  # a refused write wrote nothing


@pytest.mark.slow
@pytest.mark.commands("find", "aggregate", "count", "insert", "findAndModify", "listCollections")
@HYPO
@given(data=st.data())
def test_the_first_offending_field_in_document_order_is_reported(coll_db, data):
    """Two fields of the wrong type (or an unknown one) in one command: mongod's parser reads the
    command in document order and reports the first."""
    command = data.draw(st.sampled_from(sorted(c for c, (_, fields) in COMMANDS.items() if len(fields) >= 2)))
    base, fields = COMMANDS[command]
    chosen = data.draw(st.lists(st.sampled_from(sorted(fields)), min_size=2, max_size=2, unique=True))
    unknown = data.draw(st.booleans())
    extra: list[tuple[str, object]] = [(field, Regex("never")) for field in chosen]  # no IDL type takes a regex
    if unknown:
        extra.insert(data.draw(st.integers(0, 2)), ("bogusField", 1))
    before = _state(coll_db)
    reply = coll_db.command(_with(base, extra), check=False)
    first, value = extra[0]
    assert reply["ok"] == 0, reply
    if first == "bogusField":
        assert (reply["code"], reply["codeName"], reply["errmsg"]) == (
            40415, "IDLUnknownField", f"BSON field '{command}.bogusField' is an unknown field.")
    else:
        assert (reply["code"], reply["errmsg"]) == (14, _refusal(command, first, fields[first], "regex", value))
    assert _state(coll_db) == before


@pytest.mark.commands("find", "aggregate", "count", "distinct", "insert", "update", "delete", "findAndModify",
                      "getMore", "listCollections", "listIndexes", "createIndexes", "dropIndexes", "create", "drop",
                      "collMod")
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_an_undeclared_field_is_unknown_and_generic_arguments_are_not(coll_db, command):
    base, _ = COMMANDS[command]
    reply = coll_db.command(_with(base, [("notAField", 1)]), check=False)
    assert (reply["ok"], reply["code"], reply["codeName"], reply["errmsg"]) == (
        0, 40415, "IDLUnknownField", f"BSON field '{command}.notAField' is an unknown field.")
    # what drivers and mongosh add to any command: a comment, a read preference, an API version
    generic = [("comment", {"any": "thing"}), ("$readPreference", {"mode": "primaryPreferred"}),
               ("apiVersion", "1")]
    reply = coll_db.command(_with(base, generic), check=False)
    assert reply.get("code") not in (14, 40415), reply


def test_singleBatch_of_a_string_is_refused(coll_db):  # noqa: N802 - the field's name
    """The reported defect: {find, singleBatch: "x"} was accepted (read as its truth)."""
    reply = coll_db.command({"find": COLL, "singleBatch": "x"}, check=False)
    assert (reply["ok"], reply["code"], reply["codeName"], reply["errmsg"]) == (
        0, 14, "TypeMismatch", "Field 'singleBatch' should be a boolean value, but found: string")


def test_driver_shaped_fields_keep_working(coll_db):
    """What drivers send with surprising types: batchSize as an Int64, maxTimeMS as a double, a
    string write concern w, a limit as a double."""
    coll_db[COLL].insert_many([{"_id": i} for i in range(2, 6)])
    reply = coll_db.command({"find": COLL, "batchSize": Int64(2), "limit": 3.0, "maxTimeMS": 1000.0,
                             "singleBatch": False}, check=False)
    assert reply["ok"] == 1 and len(reply["cursor"]["firstBatch"]) == 2, reply
    more = coll_db.command({"getMore": reply["cursor"]["id"], "collection": COLL, "batchSize": Int64(5)})
    assert len(more["cursor"]["nextBatch"]) == 1
    reply = coll_db.command({"insert": COLL, "documents": [{"_id": 9}], "ordered": True,
                             "writeConcern": {"w": "majority", "wtimeout": 0}}, check=False)
    assert reply["ok"] == 1 and reply["n"] == 1, reply
    reply = coll_db.command({"listCollections": 1, "nameOnly": True, "authorizedCollections": True,
                             "cursor": {"batchSize": Int64(1)}}, check=False)
    assert reply["ok"] == 1, reply


TS = "field_types_ts"
T0 = dt.datetime(2024, 3, 1, 12, 0, 0)
# (command on the time-series collection, the field, a value of a type its IDL refuses, the message)
TS_REFUSED = [
    ({"find": TS}, "singleBatch", "x", "Field 'singleBatch' should be a boolean value, but found: string"),
    ({"find": TS}, "limit", True, "BSON field 'find.limit' is the wrong type 'bool', expected types "
                                  "'[long, int, decimal, double]'"),
    ({"aggregate": TS, "pipeline": [], "cursor": {}}, "allowDiskUse", 1,
     "Field 'allowDiskUse' should be a boolean value, but found: int"),
    ({"count": TS}, "mirrored", None, "Field 'mirrored' should be a boolean value, but found: null"),
    ({"insert": TS, "documents": [{"t": T0, "m": 1}]}, "ordered", 1,
     "BSON field 'insert.ordered' is the wrong type 'int', expected type 'bool'"),
    ({"insert": TS, "documents": [{"t": T0, "m": 1}]}, "stmtId", Int64(1),
     "BSON field 'insert.stmtId' is the wrong type 'long', expected type 'int'"),
    ({"update": TS, "updates": [{"q": {"m": 0}, "u": {"$set": {"m": 5}}, "multi": True}]}, "bypassDocumentValidation",
     "x", "BSON field 'update.bypassDocumentValidation' is the wrong type 'string', expected types "
          "'[bool, long, int, decimal, double]'"),
    ({"delete": TS, "deletes": [{"q": {"m": 0}, "limit": 0}]}, "ordered", "x",
     "BSON field 'delete.ordered' is the wrong type 'string', expected type 'bool'"),
    ({"findAndModify": TS, "query": {"m": 0}, "remove": True}, "singleBatch", 1,
     "BSON field 'findAndModify.singleBatch' is the wrong type 'int', expected type 'bool'"),
    ({"listIndexes": TS}, "isTimeseriesNamespace", 1,
     "BSON field 'listIndexes.isTimeseriesNamespace' is the wrong type 'int', expected type 'bool'"),
    ({"collMod": TS}, "timeseriesBucketsMayHaveMixedSchemaData", "yes",
     "BSON field 'collMod.timeseriesBucketsMayHaveMixedSchemaData' is the wrong type 'string', expected types "
     "'[bool, long, int, decimal, double]'"),
]


@pytest.mark.commands("find", "aggregate", "count", "insert", "update", "delete", "findAndModify", "listIndexes",
                      "collMod")
def test_a_time_series_collection_parses_its_commands_alike(db):
    """mongod parses the command (its IDL) before it looks at the target's kind: the same 14 on a
    time-series collection, and nothing written."""
    db.create_collection(TS, timeseries={"timeField": "t", "metaField": "m"})
    db[TS].insert_one({"t": T0, "m": 0, "v": 1})
    for base, field, value, message in TS_REFUSED:
        reply = db.command(_with(base, [(field, value)]), check=False)
        assert (reply["ok"], reply.get("code"), reply.get("errmsg")) == (0, 14, message), (base, field, reply)
    assert [{k: v for k, v in d.items() if k != "_id"} for d in db[TS].find()] == [{"t": T0, "m": 0, "v": 1}]
