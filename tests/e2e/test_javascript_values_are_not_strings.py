"""A BSON JavaScript value (type 13; pymongo's ``bson.Code``, a ``str`` subclass) where a command takes a
string is no string: mongod's IDL and parsers check the BSON type, so it is refused as any other
non-string is. Tidemark's checks were ``isinstance(value, str)``, which a Code passes, and Code is not
hashable: a Code as a collection name, ``$lookup.from``, ``$unionWith``, ``$count``, ``$unset``, a
``$regex``, a ``$dateTrunc`` unit, a view's ``viewOn``, a time-series ``timeField``, a role name or a
``listCollections`` name filter answered 1 InternalError (``unhashable type: 'Code'``), and a Code was
taken as a string by ``distinct.key``, ``create``, ``$unwind``, ``$out``, ``$merge.into``, ``$lookup.as``,
``$graphLookup``, ``$sortByCount``, ``$rename``, ``$currentDate``, a write's ``hint``, ``validate``,
``createUser`` and ``killCursors`` (found by fuzzing update operators: ``{$rename: {a: Code("b")}}``
renamed the field). Where JavaScript is taken (``$where``, ``$function``, ``$accumulator``,
mapReduce) a Code still is.

The family: every string of a corpus of commands, in turn, replaced by a Code of the same text. Where the
command takes a string by type, the answer is the one an int there gets (the same code: both are "not a
string"); where the string is a value (a literal, a key pattern's kind, an expression's input), the answer
may differ, but it is never 1 InternalError and the server stays up.
"""

from __future__ import annotations

import copy

import pytest
from bson import SON, Code
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("find", "aggregate", "update", "insert", "delete", "distinct", "count", "create",
                                  "drop", "createIndexes", "listIndexes", "collMod", "renameCollection",
                                  "listCollections", "createUser", "killCursors", "validate", "findAndModify")

CORPUS = [
    {"find": "k", "filter": {"s": "x", "a": {"$in": ["x"]}}, "sort": {"s": 1}, "projection": {"s": 1},
     "hint": "_id_", "comment": "c"},
    {"find": "k", "filter": {"s": {"$regex": "x", "$options": "i"}}},
    {"find": "k", "filter": {"s": {"$type": "string"}}},
    {"find": "k", "filter": {"$text": {"$search": "x", "$language": "en"}}},
    {"find": "k", "filter": {"$where": "this.s == 'x'"}},
    {"find": "k", "collation": {"locale": "en", "caseFirst": "upper"}},
    {"find": "k", "readConcern": {"level": "local"}},
    {"insert": "k2", "documents": [{"s": "x"}], "writeConcern": {"w": "majority"}},
    {"count": "k", "query": {"s": "x"}, "hint": "_id_"},
    {"distinct": "k", "key": "s", "query": {"s": "x"}},
    {"create": "k3"},
    {"create": "v1", "viewOn": "k", "pipeline": [{"$match": {"s": "x"}}]},
    {"create": "t1", "timeseries": {"timeField": "t", "metaField": "m", "granularity": "hours"}},
    {"drop": "k5"},
    {"createIndexes": "k", "indexes": [{"key": {"s": 1}, "name": "nm"}]},
    {"createIndexes": "k", "indexes": [{"key": {"s": "text"}, "name": "t", "default_language": "english"}]},
    {"listIndexes": "k"},
    {"collMod": "k", "validationLevel": "moderate", "validationAction": "warn"},
    {"aggregate": "k", "pipeline": [{"$unwind": "$a"}], "cursor": {}},
    {"aggregate": "k", "pipeline": [{"$unwind": {"path": "$a", "includeArrayIndex": "i"}}], "cursor": {}},
    {"aggregate": "k", "pipeline": [{"$count": "n"}], "cursor": {}},
    {"aggregate": "k", "pipeline": [{"$out": "o"}], "cursor": {}},
    {"aggregate": "k", "pipeline": [{"$merge": {"into": "o3", "on": "_id", "whenMatched": "replace"}}], "cursor": {}},
    {"aggregate": "k", "pipeline": [{"$lookup": {"from": "k", "localField": "s", "foreignField": "s", "as": "j"}}],
     "cursor": {}},
    {"aggregate": "k", "pipeline": [{"$graphLookup": {"from": "k", "startWith": "$s", "connectFromField": "s",
                                                      "connectToField": "s", "as": "g"}}], "cursor": {}},
    {"aggregate": "k", "pipeline": [{"$unionWith": "k"}], "cursor": {}},
    {"aggregate": "k", "pipeline": [{"$sortByCount": "$s"}], "cursor": {}},
    {"aggregate": "k", "pipeline": [{"$group": {"_id": "$s", "f": {"$first": "$s"}}}], "cursor": {}},
    {"aggregate": "k", "pipeline": [{"$project": {"t": {"$dateTrunc": {"date": "$$NOW", "unit": "day",
                                                                       "timezone": "UTC"}}}}], "cursor": {}},
    {"aggregate": "k", "pipeline": [{"$project": {"t": {"$getField": {"field": "s", "input": "$$ROOT"}}}}],
     "cursor": {}},
    {"aggregate": "k", "pipeline": [{"$project": {"t": {"$regexMatch": {"input": "$s", "regex": "x"}}}}],
     "cursor": {}},
    {"aggregate": "k", "pipeline": [{"$project": {"t": {"$type": "$s"}, "c": {"$concat": ["$s", "!"]}}}],
     "cursor": {}},
    {"aggregate": "k", "pipeline": [{"$project": {"t": {"$function": {"body": "function(s) {return s}",
                                                                      "args": ["$s"], "lang": "js"}}}}],
     "cursor": {}},
    {"aggregate": "k", "pipeline": [{"$set": {"z": "$s"}}, {"$unset": "z"}], "cursor": {}},
    {"update": "k", "updates": [{"q": {"s": "x"}, "u": {"$rename": {"s": "t"}}}]},
    {"update": "k", "updates": [{"q": {}, "u": {"$currentDate": {"d": {"$type": "date"}}}}]},
    {"update": "k", "updates": [{"q": {}, "u": {"$set": {"y": "x"}}, "hint": "_id_"}]},
    {"delete": "k", "deletes": [{"q": {"s": "y"}, "limit": 0, "hint": "_id_"}]},
    {"findAndModify": "k", "query": {"s": "x"}, "update": {"$set": {"y": "x"}}},
    {"mapReduce": "k", "map": "function() {emit(this._id, 1)}", "reduce": "function(k, v) {return 1}",
     "out": {"inline": 1}},
    {"listCollections": 1, "filter": {"name": "k"}},
    {"validate": "k"},
    {"createUser": "u1", "pwd": "p", "roles": ["read"]},
    {"killCursors": "k", "cursors": []},
]
# strings that are values, not typed arguments: a Code there is a value of another type (a literal, a
# key pattern's kind, a type name, a JavaScript function) and may be answered otherwise than an int
VALUE_POSITIONS = {
    ("filter", "s"), ("filter", "a", "$in", 0), ("filter", "s", "$type"), ("filter", "$where"),
    ("documents", 0, "s"), ("query", "s"), ("pipeline", 0, "$match", "s"), ("indexes", 0, "key", "s"),
    ("writeConcern", "w"), ("pipeline", 0, "$project", "t", "$type"), ("pipeline", 0, "$project", "c", "$concat", 0),
    ("pipeline", 0, "$project", "c", "$concat", 1), ("pipeline", 0, "$project", "t", "$regexMatch", "input"),
    ("pipeline", 0, "$project", "t", "$function", "body"), ("pipeline", 0, "$project", "t", "$function", "args", 0),
    ("pipeline", 0, "$group", "_id"), ("pipeline", 0, "$group", "f", "$first"), ("pipeline", 0, "$set", "z"),
    ("pipeline", 0, "$graphLookup", "startWith"), ("pipeline", 0, "$project", "t", "$getField", "input"),
    ("pipeline", 0, "$project", "t", "$dateTrunc", "date"), ("updates", 0, "q", "s"), ("updates", 0, "u", "$set", "y"),
    ("deletes", 0, "q", "s"), ("update", "$set", "y"), ("map",), ("reduce",), ("comment",), ("roles", 0),
}


def string_positions(value, path=()):
    if isinstance(value, dict):
        for key, item in value.items():
            yield from string_positions(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from string_positions(item, (*path, i))
    elif type(value) is str:
        yield path


def replaced(command, path, value):
    command = copy.deepcopy(command)
    parent = command
    for step in path[:-1]:
        parent = parent[step]
    parent[path[-1]] = value(parent[path[-1]])
    return command


@pytest.fixture
def fresh(client):
    database = client["javascript_not_strings"]

    def reset():
        client.drop_database(database.name)
        database.k.insert_one({"_id": 1, "a": [1, 2], "s": "x", "o": {"p": 1}})
        database.k5.insert_one({})
        return database

    yield reset
    client.drop_database(database.name)


def answer(database, command):
    """The error code (a write's first writeErrors entry's too), None when it worked."""
    try:
        reply = database.command(SON(command))
    except OperationFailure as exc:
        return exc.code
    return reply["writeErrors"][0]["code"] if reply.get("writeErrors") else None


@pytest.mark.parametrize("command", CORPUS, ids=lambda c: next(iter(c)))
def test_a_javascript_value_is_no_string(client, fresh, command):
    for path in string_positions(command):
        as_code = answer(fresh(), replaced(command, path, Code))
        as_int = answer(fresh(), replaced(command, path, lambda _: 5))
        assert as_code != 1, (path, command)
        if path not in VALUE_POSITIONS:
            assert as_code == as_int, (path, as_code, as_int, command)
    assert client.admin.command("ping")["ok"] == 1.0


def test_javascript_is_still_taken_where_javascript_is(fresh):
    database = fresh()
    assert [d["_id"] for d in database.k.find({"$where": Code("this.s == 'x'")})] == [1]
    assert list(database.k.aggregate([{"$project": {"_id": 0, "t": {"$function": {
        "body": Code("function(s) {return s + '!'}"), "args": ["$s"], "lang": "js"}}}}])) == [{"t": "x!"}]
    reply = database.command({"mapReduce": "k", "map": Code("function() {emit(this.s, 1)}"),
                              "reduce": Code("function(k, v) {return Array.sum(v)}"), "out": {"inline": 1}})
    assert reply["results"] == [{"_id": "x", "value": 1.0}]
    # as a value, a Code is stored and matched as itself, not as its text
    database.k.insert_one({"_id": 2, "s": Code("x")})
    assert [d["_id"] for d in database.k.find({"s": "x"})] == [1]
    assert [d["_id"] for d in database.k.find({"s": Code("x")})] == [2]


def test_rename_to_a_javascript_value_is_refused(fresh):
    database = fresh()
    reply = database.command({"update": "k", "updates": [{"q": {}, "u": {"$rename": {"s": Code("t")}}}]})
    assert reply["writeErrors"][0]["code"] == 2 and reply["nModified"] == 0
    assert database.k.find_one({"_id": 1})["s"] == "x"
