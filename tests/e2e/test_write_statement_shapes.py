"""Parse, then dispatch: a malformed update/delete statement gets the same answer on a regular and on a
time-series collection — mongod parses the whole write batch (its IDL) before it looks at the target's
kind, so a shape error fails the command (ok: 0, one code and message) on both; what only the
statement's meaning rules out stays a write error on both."""

from __future__ import annotations

import datetime as dt

import pytest
from harness.server import raw_command

T0 = dt.datetime(2024, 3, 1, 12, 0, 0)
GOOD_U = {"$set": {"tag": "b"}}

# (label, command name, statements field, statements): each statement list holds one malformed statement
# (the time-series family's own rules — multi: true, a meta-only update — are met, so only the shape
# differs from a statement both accept).
MALFORMED = [
    ("update q not an object", "update", "updates", [{"q": 1, "u": GOOD_U, "multi": True}]),
    ("update q missing", "update", "updates", [{"u": GOOD_U, "multi": True}]),
    ("update u missing", "update", "updates", [{"q": {}, "multi": True}]),
    ("update u a string", "update", "updates", [{"q": {}, "u": "x", "multi": True}]),
    ("update unknown statement field", "update", "updates", [{"q": {}, "u": GOOD_U, "multi": True, "bogus": 1}]),
    ("update multi not a bool", "update", "updates", [{"q": {}, "u": GOOD_U, "multi": "yes"}]),
    ("update upsert not a bool", "update", "updates", [{"q": {}, "u": GOOD_U, "multi": True, "upsert": 1}]),
    ("update arrayFilters not an array", "update", "updates",
     [{"q": {}, "u": GOOD_U, "multi": True, "arrayFilters": {"x": 1}}]),
    ("update arrayFilters element not an object", "update", "updates",
     [{"q": {}, "u": GOOD_U, "multi": True, "arrayFilters": [1]}]),
    ("update hint a number", "update", "updates", [{"q": {}, "u": GOOD_U, "multi": True, "hint": 5}]),
    ("update collation a string", "update", "updates", [{"q": {}, "u": GOOD_U, "multi": True, "collation": "fr"}]),
    ("update c a number", "update", "updates", [{"q": {}, "u": GOOD_U, "multi": True, "c": 1}]),
    ("update statement not an object", "update", "updates", [5]),
    ("update second statement malformed, unordered", "update", "updates",
     [{"q": {}, "u": GOOD_U, "multi": True}, {"q": {}, "u": GOOD_U, "multi": True, "hint": 5}]),
    ("update updates not an array", "update", "updates", {"q": {}}),
    ("update updates empty", "update", "updates", []),
    ("delete limit 5", "delete", "deletes", [{"q": {}, "limit": 5}]),
    # mongod reads 'limit' with numberDouble() (write_ops.cpp readMultiDeleteProperty): a string is 0, not
    # malformed; a fraction is
    ("delete limit a fraction", "delete", "deletes", [{"q": {}, "limit": 0.5}]),
    ("delete limit missing", "delete", "deletes", [{"q": {}}]),
    ("delete q missing", "delete", "deletes", [{"limit": 0}]),
    ("delete q not an object", "delete", "deletes", [{"q": "x", "limit": 0}]),
    ("delete unknown statement field", "delete", "deletes", [{"q": {}, "limit": 0, "multi": True}]),
    ("delete hint a number", "delete", "deletes", [{"q": {}, "limit": 0, "hint": 5}]),
    ("delete collation a string", "delete", "deletes", [{"q": {}, "limit": 0, "collation": "fr"}]),
    ("delete statement not an object", "delete", "deletes", ["x"]),
]

# The other write commands' statement shapes: (label, command fields after the collection name).
OTHER_WRITES = [
    ("insert document not an object", {"insert": None, "documents": [{"time": T0, "tag": "a"}, 5]}),
    ("delete let a number", {"delete": None, "deletes": [{"q": {}, "limit": 0}], "let": 5}),
    ("update let a string", {"update": None, "updates": [{"q": {}, "u": GOOD_U, "multi": True}], "let": "x"}),
    ("findAndModify hint a number", {"findAndModify": None, "query": {}, "remove": True, "hint": 5}),
    ("findAndModify update a number", {"findAndModify": None, "query": {}, "update": 5}),
    ("findAndModify arrayFilters a number", {"findAndModify": None, "query": {}, "remove": True, "arrayFilters": 5}),
    ("findAndModify query a number", {"findAndModify": None, "query": 1, "remove": True}),
]

# Well-shaped statements whose meaning is wrong: a write error (ok: 1) on both kinds.
MEANINGLESS = [
    ("update unknown operator", "update", "updates", [{"q": {}, "u": {"$bogus": {"tag": 1}}, "multi": True}]),
    ("update bad filter operator", "update", "updates", [{"q": {"tag": {"$bogus": 1}}, "u": GOOD_U, "multi": True}]),
    ("delete bad filter operator", "delete", "deletes", [{"q": {"tag": {"$bogus": 1}}, "limit": 0}]),
]


@pytest.fixture
def pair(server, db):
    db.create_collection("ts", timeseries={"timeField": "time", "metaField": "tag"})
    db.create_collection("regular")
    for name in ("ts", "regular"):
        db[name].insert_many([{"time": T0, "tag": "a", "v": 1}, {"time": T0, "tag": "a", "v": 2}])
    db.port = server.port  # statements that are not objects cannot go through the driver
    return db


def _answer(db, command: str, coll: str, field: str, statements, ordered: bool) -> dict:
    """The reply as a client sees it: ok 0 (code, codeName, errmsg) or ok 1 (n, write error codes).
    Sent as one OP_MSG body (no driver: it would refuse statements that are not objects)."""
    reply = raw_command(db.port, {command: coll, field: statements, "ordered": ordered, "$db": db.name})
    if not reply.get("ok"):
        return {"ok": 0, "code": reply.get("code"), "codeName": reply.get("codeName"), "errmsg": reply.get("errmsg")}
    errors = [(w["index"], w["code"], w.get("codeName")) for w in reply.get("writeErrors", [])]
    return {"ok": 1, "writeErrors": errors}


@pytest.mark.commands("update", "delete")
@pytest.mark.parametrize("label,command,field,statements", MALFORMED, ids=[c[0] for c in MALFORMED])
def test_malformed_statement_fails_the_whole_command_on_both_kinds(pair, label, command, field, statements):
    for ordered in (True, False):
        regular = _answer(pair, command, "regular", field, statements, ordered)
        timeseries = _answer(pair, command, "ts", field, statements, ordered)
        assert regular["ok"] == 0, (label, regular)
        assert timeseries == regular, (label, ordered)
    # nothing was written by either
    assert sorted(d["v"] for d in pair.ts.find()) == sorted(d["v"] for d in pair.regular.find()) == [1, 2]
    assert {d["tag"] for d in pair.ts.find()} == {d["tag"] for d in pair.regular.find()} == {"a"}


@pytest.mark.commands("insert", "update", "delete", "findAndModify")
@pytest.mark.parametrize("label,fields", OTHER_WRITES, ids=[c[0] for c in OTHER_WRITES])
def test_other_write_shapes_fail_the_whole_command_on_both_kinds(pair, label, fields):
    answers = []
    for coll in ("regular", "ts"):
        cmd = dict(fields)
        cmd[next(iter(cmd))] = coll
        reply = raw_command(pair.port, {**cmd, "$db": pair.name})
        answers.append((reply.get("ok"), reply.get("code"), reply.get("codeName"), reply.get("errmsg")))
    assert answers[0][0] == 0, (label, answers[0])
    assert answers[1] == answers[0], label
    assert pair.ts.count_documents({}) == pair.regular.count_documents({}) == 2


@pytest.mark.commands("update", "delete")
@pytest.mark.parametrize("label,command,field,statements", MEANINGLESS, ids=[c[0] for c in MEANINGLESS])
def test_meaningless_statement_is_a_write_error_on_both_kinds(pair, label, command, field, statements):
    regular = _answer(pair, command, "regular", field, statements, True)
    timeseries = _answer(pair, command, "ts", field, statements, True)
    assert regular["ok"] == 1 and regular["writeErrors"], (label, regular)
    assert timeseries == regular, label


@pytest.mark.commands("update", "delete")
def test_malformed_statement_messages_are_mongods(pair):
    cases = [
        ("update", "updates", [{"q": 1, "u": GOOD_U}], 14,
         "BSON field 'update.updates.q' is the wrong type 'int', expected type 'object'"),
        ("update", "updates", [{"q": {}, "u": GOOD_U, "multi": "yes"}], 14,
         "BSON field 'update.updates.multi' is the wrong type 'string', expected type 'bool'"),
        ("update", "updates", [{"q": {}, "u": GOOD_U, "arrayFilters": [1]}], 14,
         "BSON field 'update.updates.arrayFilters.0' is the wrong type 'int', expected type 'object'"),
        ("update", "updates", [{"q": {}, "u": GOOD_U, "hint": 5}], 9, "Hint must be a string or an object"),
        ("update", "updates", [{"q": {}, "u": "x"}], 9, "Update argument must be either an object or an array"),
        ("update", "updates", [{"q": {}}], 40414, "BSON field 'update.updates.u' is missing but a required field"),
        ("delete", "deletes", [{"q": {}, "limit": 5}], 9, "The limit field in delete objects must be 0 or 1. Got 5"),
        ("delete", "deletes", [{"q": {}, "limit": 0, "bogus": 1}], 40415,
         "BSON field 'delete.deletes.bogus' is an unknown field."),
    ]
    for command, field, statements, code, errmsg in cases:
        for coll in ("regular", "ts"):
            answer = _answer(pair, command, coll, field, statements, True)
            assert (answer["ok"], answer["code"], answer["errmsg"]) == (0, code, errmsg), (coll, statements)
