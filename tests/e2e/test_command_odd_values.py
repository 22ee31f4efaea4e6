"""Every argument of every common command, replaced by an odd value, gets a MongoDB error (or runs): never
1 InternalError, never Python's text, never a dropped connection.

The family: a valid command (a template below, on a regular and a time-series collection) with one of its
arguments — a top-level field or a field one level down — replaced by each value of ``ODD`` (NaN,
infinities, decimals past every range, the long range's ends, the BSON types no argument takes). A fuzzer
that mutated these templates at random found, before the fixes (12,000 commands, 64 crashes):

- explain of update / delete / findAndModify / count with a malformed statement (``updates: [-0.0]``,
  ``deletes: 5``, ``query: 5``): explain read the statement before the command's own parse; now the
  explained command is parsed as the command itself parses it (its 14 / 9 / 40414 ...);
- capped ``size`` / ``max`` and ``profile`` / ``slowms`` of NaN, an infinity or a decimal of 6,000 digits
  (OverflowError / ValueError): mongod reads them as ``safeInt64`` (NaN 0, clamped to the long range);
- collStats ``scale`` of a time-series collection: its own copy of the rule, without the safeInt
  reading (one rule now, ``arguments.scale_arg``); a time-series collMod ``expireAfterSeconds`` infinity;
- a time-series index spec whose ``name`` was a regex, a document or a list: the buckets spec is now
  checked as any index spec is (14);
- a find / mapReduce ``limit`` of a decimal past the long range: a 6,000-digit number in the message;
- Python's type names in messages (``endSessions: null`` said 'NoneType', ``$_unpackBucket`` and ``$db``
  named Python types): mongod's type names now (``type_name``).
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Iterator
from typing import Any

import pytest
from bson import Binary, Code, Decimal128, Int64, MinKey, Regex
from harness.server import raw_command

DB = "odd_values"
T0 = dt.datetime(2024, 1, 1)

TEMPLATES: list[dict[str, Any]] = [
    {"find": "c", "filter": {"a": {"$gt": 1}}, "projection": {"a": 1}, "sort": {"a": -1}, "skip": 1, "limit": 3,
     "batchSize": 2, "hint": {"a": 1}, "collation": {"locale": "en"}, "let": {"x": 1}, "maxTimeMS": 1000},
    {"find": "ts", "filter": {"t": {"$gte": T0}, "m": 1}, "sort": {"t": 1}, "limit": 2},
    {"aggregate": "c", "pipeline": [{"$match": {"a": {"$gte": 0}}}, {"$group": {"_id": "$b", "s": {"$sum": "$a"}}}],
     "cursor": {"batchSize": 1}, "allowDiskUse": True, "let": {"x": 1}},
    {"aggregate": "ts", "pipeline": [{"$match": {"m": 1}}, {"$collStats": {"storageStats": {"scale": 2}}}], "cursor": {}},
    {"aggregate": "ts", "pipeline": [{"$collStats": {"storageStats": {"scale": 1}, "count": {},
                                                     "latencyStats": {"histograms": True}}}], "cursor": {}},
    {"count": "c", "query": {"a": 1}, "limit": 1, "skip": 0, "hint": "_id_"},
    {"count": "ts", "query": {"m": 1}, "limit": 5},
    {"distinct": "c", "key": "a", "query": {"a": {"$ne": 3}}},
    {"insert": "c", "documents": [{"a": 10}], "ordered": False},
    {"insert": "ts", "documents": [{"t": T0, "m": 1, "a": 2}], "ordered": True},
    {"update": "c", "updates": [{"q": {"a": 1}, "u": {"$inc": {"a": 0}}, "multi": True, "upsert": False}]},
    {"update": "ts", "updates": [{"q": {"m": 1}, "u": {"$set": {"m": 2}}, "multi": True}]},
    {"delete": "c", "deletes": [{"q": {"a": 5}, "limit": 1}]},
    {"delete": "ts", "deletes": [{"q": {"a": {"$gt": 100}}, "limit": 0}], "let": {"v": 1}},
    {"findAndModify": "c", "query": {"a": 1}, "sort": {"a": 1}, "update": {"$set": {"q": 1}}, "new": True},
    {"findAndModify": "ts", "query": {"a": 100}, "remove": True},
    {"explain": {"find": "c", "filter": {"a": 1}, "limit": 2}, "verbosity": "executionStats"},
    {"explain": {"count": "c", "query": {"a": 1}, "skip": 1}},
    {"explain": {"distinct": "c", "key": "a", "query": {}}},
    {"explain": {"update": "c", "updates": [{"q": {"a": 1}, "u": {"$set": {"x": 1}}}]}},
    {"explain": {"delete": "ts", "deletes": [{"q": {"m": 1}, "limit": 0}]}},
    {"explain": {"findAndModify": "c", "query": {"a": 1}, "update": {"$set": {"x": 1}}}},
    {"createIndexes": "c", "indexes": [{"key": {"a": 1, "b": -1}, "name": "ab", "sparse": True}]},
    {"createIndexes": "ts", "indexes": [{"key": {"m": 1, "t": -1}, "name": "mt", "hidden": False}]},
    {"collMod": "c", "validator": {"a": {"$type": "int"}}, "validationLevel": "moderate"},
    {"collMod": "ts", "expireAfterSeconds": 3600},
    {"collMod": "cap", "cappedSize": 8192, "cappedMax": 10},
    {"create": "cap2", "capped": True, "size": 4096, "max": 10},
    {"create": "ts2", "timeseries": {"timeField": "t", "metaField": "m", "granularity": "hours"},
     "expireAfterSeconds": 10},
    {"convertToCapped": "c2", "size": 10000},
    {"cloneCollectionAsCapped": "c", "toCollection": "cc", "size": 10000},
    {"collStats": "ts", "scale": 1024},
    {"collStats": "c", "scale": 2},
    {"dbStats": 1, "scale": 2},
    {"dataSize": f"{DB}.c"},
    {"validate": "c", "full": True},
    {"mapReduce": "c", "map": Code("function() { emit(this.b, this.a); }"),
     "reduce": Code("function(k, v) { return Array.sum(v); }"), "out": {"inline": 1}, "limit": 10},
    {"profile": -1, "slowms": 50, "sampleRate": 0.5},
    {"listCollections": 1, "filter": {"name": "c"}, "nameOnly": True, "cursor": {"batchSize": 1}},
    {"listIndexes": "ts", "cursor": {"batchSize": 1}},
    {"endSessions": [{"id": Binary(b"s" * 16, 4)}]},
    {"aggregate": "c", "pipeline": [{"$_unpackBucket": {"timeField": "t", "metaField": "m"}}], "cursor": {}},
]

ODD: list[Any] = [math.nan, math.inf, -math.inf, Decimal128("NaN"), Decimal128("-1E+6000"), Decimal128("1E+6000"),
                  Int64(2**63 - 1), Int64(-(2**63)), -1, "", Regex("(", ""), Code("1"), {"$bogus": 1}, [[]], None,
                  MinKey(), Binary(b"x" * 16, 4), dt.datetime(1, 1, 1)]
PYTHON_TEXT = re.compile(r"Traceback|object has no attribute|NoneType|unhashable|not subscriptable|TypeError|KeyError|"
                         r"ValueError|IndexError|AttributeError|OverflowError|positional argument|Internal error")


def _variants(template: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(where, command) for each top-level field after the name and each field one level down."""
    name = next(iter(template))
    for field, value in template.items():
        if field == name:
            continue
        for odd in ODD:
            yield field, {**template, field: odd}
        children = value if isinstance(value, dict) else value[0] if (
            isinstance(value, list) and value and isinstance(value[0], dict)) else None
        for child in children or {}:
            for odd in ODD:
                changed = {**children, child: odd}
                yield f"{field}.{child}", {**template, field: changed if isinstance(value, dict) else [changed]}


@pytest.fixture
def fresh(client):
    db = client[DB]
    client.drop_database(DB)
    db.c.insert_many([{"_id": i, "a": i, "b": i % 2} for i in range(6)])
    db.c.create_index("a")
    db.c2.insert_one({"a": 1})
    db.create_collection("cap", capped=True, size=4096)
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    db.ts.insert_many([{"t": T0 + dt.timedelta(hours=i), "m": i % 2, "a": i} for i in range(6)])
    yield db
    db.command("profile", 0, slowms=100, sampleRate=1.0)  # (slowms and sampleRate are the server's, not the db's)
    client.drop_database(DB)


@pytest.mark.slow
@pytest.mark.commands("find", "aggregate", "count", "distinct", "insert", "update", "delete", "findAndModify",
                      "explain", "createIndexes", "collMod", "create", "convertToCapped", "cloneCollectionAsCapped",
                      "collStats", "dbStats", "dataSize", "validate", "mapReduce", "profile", "listCollections",
                      "listIndexes", "endSessions")
@pytest.mark.parametrize("template", TEMPLATES, ids=[f"{next(iter(t))}-{i}" for i, t in enumerate(TEMPLATES)])
def test_every_argument_with_an_odd_value_gets_a_mongodb_error(server, fresh, template):
    failures = []
    for where, command in _variants(template):
        # raw OP_MSG: a driver would refuse some of these shapes itself (an insert's documents a number)
        reply = raw_command(server.port, {**command, "$db": DB})
        message = str(reply.get("errmsg", "")) + " ".join(str(e.get("errmsg")) for e in reply.get("writeErrors", []))
        codes = {reply.get("code")} | {e.get("code") for e in reply.get("writeErrors", [])}
        if 1 in codes or (PYTHON_TEXT.search(message) and 139 not in codes):  # (139: JavaScript's own error text)
            failures.append((where, command[where.split(".")[0]], sorted(codes, key=str), message[:120]))
    assert failures == [], "\n".join(map(repr, failures))
    assert fresh.command("ping")["ok"] == 1


@pytest.mark.commands("aggregate", "endSessions")
def test_messages_name_bson_types(server, fresh):
    reply = raw_command(server.port, {"endSessions": None, "$db": DB})
    assert reply["errmsg"] == "BSON field 'endSessions.endSessions' is the wrong type 'null', expected type 'array'"
    reply = raw_command(server.port, {"aggregate": "c", "cursor": {}, "$db": DB,
                                      "pipeline": [{"$_unpackBucket": {"timeField": 5}}]})
    assert (reply["code"], reply["errmsg"]) == (5612401, "timeField field must be a string, got: int")
    reply = raw_command(server.port, {"ping": 1, "$db": 5})
    assert reply["errmsg"] == "wrong type for field ($db) int != string"
