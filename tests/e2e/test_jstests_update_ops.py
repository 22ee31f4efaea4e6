"""MongoDB's update-operator, upsert and findAndModify jstests not ported by ``test_jstests_updates.py``,
ported to pymongo against a real Tidemark server: the documents an update leaves, ``n`` / ``nModified``
/ ``upserted``, findAndModify's ``value`` and ``lastErrorObject``, and the error codes of bad updates.

Ported from mongodb/mongo with MongoDB 7.0's behaviour as the reference (7.0 keeps these under
``jstests/core/write/update/``, ``jstests/core/write/find_and_modify/`` and ``jstests/core/query/{set,
unset,inc}/``; later versions moved and renamed several, named in brackets). Left out: updatef /
update_namespace_details (a parallel shell renaming collections), update_metrics and
find_and_modify_metrics (serverStatus counters), updateOne_sort (8.0) and upsert_fields_duplicate_or
(FCV 7.3).

- ``jstests/core/write/update/``: update8 (update_push_upsert), update_affects_indexes,
  update_arraymatch4, update_multi3, update_multi6, update_multi_halts, update_undefined, updateb,
  updatec (update_push_set_handle_dups), updated, updatee, updatei, upsert_shell,
  update_with_large_hint, update_pipeline_shell_helpers (not its explain part); and from
  ``jstests/core/query/update/``: update_inc, update_inc_implicit_subfield, update_index
- ``jstests/core/query/set/``: set1, set2, set3; ``.../unset/``: unset, unset2; ``.../inc/``: inc1, inc2
- older ``jstests/core/`` names: inc-SERVER-7446, pop_server_13516, update_server-12848, upsert2, upsert3
  (its replacement upsert of ``{_id: {...}, "_id.a": 1}`` left out: 7.0 answers 111 there)
- ``jstests/core/write/find_and_modify/``: find_and_modify_empty_coll, find_and_modify_server6226
  (find_and_modify_return_null), find_and_modify_server6582 (find_and_modify_last_error_object),
  find_and_modify_server6588 (find_and_modify_positional2), find_and_modify_server6865
  (find_and_modify_positional_new_remove), find_and_modify_concurrent_update; and from
  ``jstests/core/query/find_and_modify/``: find_and_modify_fields, find_and_modify_dotted_fields,
  find_and_modify_new, find_and_modify_new_upsert_sort, find_and_modify_positional,
  find_and_modify_positional3, find_and_modify_upsert, find_and_modify_upsert_non_existent,
  find_and_modify_invalid

Hypothesis checks ``$set`` / ``$unset`` / ``$inc`` / ``$push`` (and, in a second property, ``$mul``,
``$min``, ``$max``, ``$addToSet``, ``$pull``, ``$pop``) over random paths — fields, array indexes,
``$[]`` — into random nested documents (documents, arrays, scalars on the way) against a Python
reference model of mongod's update semantics: the resulting document with its field order and types,
``nModified``, and the error code when the update cannot apply (the stored document then unchanged).
"""

from __future__ import annotations

import copy
import threading

import pytest
from bson import Decimal128, Int64
from bson.codec_options import CodecOptions
from bson.dbref import DBRef
from bson.raw_bson import RawBSONDocument
from harness.jstests import UNDEFINED, canon, command_fails, raw, unordered
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from pymongo import ReturnDocument, UpdateMany, UpdateOne
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("update", "findAndModify", "insert", "find", "delete", "drop", "createIndexes")

BAD_VALUE = 2
FAILED_TO_PARSE = 9
TYPE_MISMATCH = 14
PATH_NOT_VIABLE = 28
CONFLICTING_UPDATE_OPERATORS = 40
EMPTY_FIELD_NAME = 56

# Known differences from MongoDB 7.0, one reason per cause (each used by strict xfails below).
UNDEFINED_STORED_AS_NULL = (
    "BSON undefined (type 6) is stored as null (type 10) at any depth (pymongo's decoder reads undefined as None "
    "and the document is re-encoded), so $expr {$type} 'undefined' finds nothing and documents the update does "
    "not touch come back with null; MongoDB keeps undefined (fix: protocol/codec.py keeping undefined)")


# --------------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------------

def update(coll, q, u, **options) -> dict:
    """The ``update`` command with one statement; the reply (write errors included, not raised)."""
    return coll.database.command("update", coll.name, updates=[{"q": q, "u": u, **options}])


def ok(reply: dict) -> dict:
    assert "writeErrors" not in reply, reply
    return reply


def write_error(reply: dict, code: int) -> dict:
    """The reply's single write error, with ``code``."""
    errors = reply.get("writeErrors")
    assert errors, f"expected a write error, got {reply}"
    assert errors[0]["code"] == code, errors[0]
    return errors[0]


def fam(coll, **fields) -> dict:
    """The findAndModify command's whole reply."""
    return coll.database.command("findAndModify", coll.name, **fields)


def value(coll, **fields):
    """The shell's ``coll.findAndModify(...)``: the reply's ``value``."""
    return fam(coll, **fields)["value"]


def only(coll) -> dict:
    docs = list(coll.find())
    assert len(docs) == 1, docs
    return docs[0]


# --------------------------------------------------------------------------------------------------
# update8.js (update_push_upsert.js), updatec.js (update_push_set_handle_dups.js), updateb.js
# --------------------------------------------------------------------------------------------------

def test_upsert_push_with_ne_query_creates_the_array(db):
    """update8.js: an upsert with ``{_id: 1, tags: {$ne: "a"}}`` seeds only ``_id`` and ``$push``
    creates ``tags``."""
    reply = ok(update(db.c, {"_id": 1, "tags": {"$ne": "a"}}, {"$push": {"tags": "a"}}, upsert=True))
    assert reply["n"] == 1 and reply["upserted"] == [{"index": 0, "_id": 1}]
    assert canon(only(db.c)) == canon({"_id": 1, "tags": ["a"]})


def test_repeated_upsert_of_set_and_push_pushes_twice(db):
    """updatec.js: the second identical upsert updates the document: ``$set`` of an equal subdocument
    is a no-op, ``$push`` appends again."""
    u = {"$set": {"v": {"i": 123, "a": 456}}, "$push": {"f": 234}}
    first = ok(update(db.c, {"_id": 123}, u, upsert=True))
    second = ok(update(db.c, {"_id": 123}, u, upsert=True))
    assert first["upserted"] == [{"index": 0, "_id": 123}]
    assert (second["n"], second["nModified"], "upserted" in second) == (1, 1, False)
    assert unordered(only(db.c)) == unordered({"_id": 123, "f": [234, 234], "v": {"i": 123, "a": 456}})


def test_upsert_with_dotted_equality_builds_the_subdocument(db):
    """updateb.js: an upsert on ``{"x.y": 2}`` with ``$inc: {a: 7}`` creates ``{x: {y: 2}, a: 7}``."""
    ok(update(db.c, {"x.y": 2}, {"$inc": {"a": 7}}, upsert=True))
    got = only(db.c)
    del got["_id"]
    assert canon(got) == canon({"x": {"y": 2}, "a": 7})


# --------------------------------------------------------------------------------------------------
# update_affects_indexes.js
# --------------------------------------------------------------------------------------------------

AFFECTS_INDEXES = [
    ("$set", {"a.1.c": 0}, [{"b": 0}]),
    ("$set_beyond_end", {"a.3.c": 0}, [{"b": 0}]),
    ("$inc", {"a.1.c": 0}, [{"b": 0}]),
    ("$mul", {"a.1.c": 0}, [{"b": 0}]),
    ("$addToSet", {"a.1.c": 0}, [{"b": 0}]),
    ("$bit", {"a.1.c": {"and": 1}}, [{"b": 0}]),
    ("$min", {"a.1.c": 0}, [{"b": 0}]),
    ("$max", {"a.1.c": 0}, [{"b": 0}]),
    ("$currentDate", {"a.1.c": True}, [{"b": 0}]),
    ("$push", {"a.1.c": 0}, [{"b": 0}]),
]


def _index_key_from(coll, doc_id, key):
    """The jstest's probe: the first ``{"a.b"}`` index key of the document at or after ``key``
    (``find(...).hint({"a.b": 1}).min(key).returnKey()``)."""
    return list(coll.find({"_id": doc_id}, hint=[("a.b", 1)], min={"a.b": key}, return_key=True))


def _null_key_ids(coll) -> list:
    """The documents the ``{"a.b": 1}`` index holds a null key for (a hinted ``{"a.b": null}`` scan)."""
    return [d["_id"] for d in coll.find({"a.b": None}, {"_id": 1}, hint=[("a.b", 1)])]


@pytest.mark.parametrize("op, fields, start", AFFECTS_INDEXES, ids=[r[0] for r in AFFECTS_INDEXES])
def test_update_creating_an_array_element_adds_its_index_key(db, op, fields, start):
    """update_affects_indexes.js (SERVER-32048): an operator that implicitly creates an array element
    (at the end, past the end) adds that element's key (null for ``a.b``) to the index on ``a.b``,
    and keeps the existing key 0."""
    c = db.c
    c.create_index([("a.b", 1)])
    c.insert_one({"_id": 0, "a": start})
    assert _null_key_ids(c) == []
    ok(update(c, {"_id": 0}, {op.split("_")[0]: fields}))
    assert _null_key_ids(c) == [0]
    assert [d["_id"] for d in c.find({"a.b": 0}, {"_id": 1}, hint=[("a.b", 1)])] == [0]


def test_update_affects_indexes_return_key_probe(db):
    """update_affects_indexes.js's own probe: after ``$set`` of ``a.1.c`` the index scan from
    ``min({"a.b": null})`` meets the document's null key first, and returnKey shows it."""
    c = db.c
    c.create_index([("a.b", 1)])
    c.insert_one({"_id": 0, "a": [{"b": 0}]})
    assert _index_key_from(c, 0, None) == [{"a.b": 0}]
    ok(update(c, {"_id": 0}, {"$set": {"a.1.c": 0}}))
    assert _index_key_from(c, 0, None) == [{"a.b": None}]


def test_set_into_empty_array_keeps_the_null_key(db):
    """update_affects_indexes.js: ``$set`` of ``a.0.c`` in an empty array keeps the one null key."""
    c = db.c
    c.create_index([("a.b", 1)])
    c.insert_one({"_id": 2, "a": []})
    assert _index_key_from(c, 2, None) == [{"a.b": None}]
    ok(update(c, {"_id": 2}, {"$set": {"a.0.c": 0}}))
    assert _index_key_from(c, 2, None) == [{"a.b": None}]
    assert only(c) == {"_id": 2, "a": [{"c": 0}]}


# --------------------------------------------------------------------------------------------------
# update_arraymatch4.js, find_and_modify_positional3.js, find_and_modify_server6588.js
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("indexed", [False, True], ids=["collscan", "indexed"])
def test_positional_set_of_a_matched_string_element(db, indexed):
    """update_arraymatch4.js (SERVER-1055): ``$set: {"arr.$": ...}`` replaces the element the query
    matched, also when the query uses an index on the array."""
    c = db.c
    c.insert_one({"_id": 1, "arr": ["A1", "B1", "C1"]})
    ok(update(c, {"arr": "A1"}, {"$set": {"arr.$": "A2"}}))
    assert only(c) == {"_id": 1, "arr": ["A2", "B1", "C1"]}
    if indexed:
        c.create_index([("arr", 1)])
    ok(update(c, {"arr": "A2"}, {"$set": {"arr.$": "A3"}}))
    assert only(c) == {"_id": 1, "arr": ["A3", "B1", "C1"]}


def test_find_and_modify_positional_set_of_a_scalar_element(db):
    """find_and_modify_positional3.js: findAndModify ``$set: {"a.$": 5}`` after matching ``a: 1``."""
    db.c.insert_one({"a": [1, 2]})
    fam(db.c, query={"a": 1}, update={"$set": {"a.$": 5}})
    assert only(db.c)["a"] == [5, 2]


@pytest.mark.parametrize("query", [{"_id": 1, "a.b": 1}, {"z": 1, "a.b": 1}], ids=["by_id", "by_z"])
def test_positional_update_through_update_and_find_and_modify(db, query):
    """find_and_modify_server6588.js (find_and_modify_positional2.js): ``a.$.b`` resolves from the
    query's ``a.b`` match for both update and findAndModify, whatever the other query fields."""
    initial = {"_id": 1, "a": [{"b": 1}], "z": 1}
    correct = {"_id": 1, "a": [{"b": 2}], "z": 1}
    up = {"$set": {"a.$.b": 2}}
    c = db.c
    c.insert_one(dict(initial))
    ok(update(c, query, up))
    assert canon(only(c)) == canon(correct)
    c.drop()
    c.insert_one(dict(initial))
    fam(c, query=query, update=up)
    assert canon(only(c)) == canon(correct)


def test_find_and_modify_positional_with_sort_modifies_only_the_match(db):
    """find_and_modify_positional.js: with a sort, ``comments.$.j`` updates the matched comment of the
    one matching document; the others are untouched."""
    c = db.c
    for i in range(3):
        c.insert_one({"_id": i, "other": i, "comments": [{"i": 0, "j": 0}, {"i": 1, "j": 1}]})
    orig0, orig2 = c.find_one({"_id": 0}), c.find_one({"_id": 2})
    out = value(c, query={"_id": 1, "comments.i": 0}, update={"$set": {"comments.$.j": 2}}, new=True,
                sort={"other": 1})
    assert out["comments"] == [{"i": 0, "j": 2}, {"i": 1, "j": 1}]
    out = value(c, query={"other": 1, "comments.i": 1}, update={"$set": {"comments.$.j": 3}}, new=True,
                sort={"other": 1})
    assert out["comments"] == [{"i": 0, "j": 2}, {"i": 1, "j": 3}]
    assert c.find_one({"_id": 0}) == orig0 and c.find_one({"_id": 2}) == orig2


# --------------------------------------------------------------------------------------------------
# update_multi3.js, updatei.js, update_multi6.js, update_multi_halts.js
# --------------------------------------------------------------------------------------------------

def _ten(c) -> None:
    c.drop()
    c.insert_many([{"_id": i, "k": "x", "a": []} for i in range(10)])


@pytest.mark.parametrize("indexed", [False, True], ids=["collscan", "indexed"])
def test_multi_push_updates_every_document_once(db, indexed):
    """update_multi3.js: a multi ``$push`` over ten matching documents pushes once into each, with or
    without an index on the query field."""
    c = db.c
    _ten(c)
    if indexed:
        c.create_index([("k", 1)])
    reply = ok(update(c, {"k": "x"}, {"$push": {"a": "y"}}, multi=True))
    assert (reply["n"], reply["nModified"]) == (10, 10)
    assert [d["a"] for d in c.find({"k": "x"})] == [["y"]] * 10


@pytest.mark.parametrize("q, options, matching, total", [
    ({"k": "x"}, {"multi": True}, 10, 10),
    ({"k": "x"}, {"multi": False}, 1, 10),
    ({"k": "x"}, {"upsert": True}, 1, 10),
    ({"k": "x"}, {"upsert": True, "multi": True}, 10, 10),
    ({"k": "y"}, {"upsert": True}, 1, 11),
    ({"k": "x"}, {"upsert": False}, 1, 10),
    ({"k": "y"}, {"upsert": False}, 0, 10),
], ids=["multi", "single", "upsert_found", "upsert_multi_found", "upsert_not_found", "no_upsert_found",
        "no_upsert_not_found"])
def test_update_options_object(db, q, options, matching, total):
    """updatei.js (SERVER-4176): multi / upsert given as options push into as many documents as
    they should, an upsert not matching inserts one."""
    c = db.c
    _ten(c)
    ok(update(c, q, {"$push": {"a": "y"}}, **options))
    assert c.count_documents({"a": "y"}) == matching
    assert c.count_documents({}) == total


def test_replacement_upsert_single_works_multi_fails(db):
    """update_multi6.js: a replacement upsert creates the document; with ``multi: true`` it is a
    write error (9, a replacement cannot be multi)."""
    c = db.c
    ok(update(c, {"_id": 1}, {"_id": 1, "x": 1, "y": 2}, upsert=True))
    assert c.find_one({"_id": 1}) == {"_id": 1, "x": 1, "y": 2}
    error = write_error(update(c, {"_id": 2}, {"_id": 2, "x": 1, "y": 2}, upsert=True, multi=True), FAILED_TO_PARSE)
    assert error["errmsg"] == "multi update is not supported for replacement-style update"
    assert c.count_documents({"_id": 2}) == 0


@pytest.mark.parametrize("indexed", [False, True], ids=["collscan", "ixscan"])
def test_multi_upsert_does_not_update_the_upserted_document(db, indexed):
    """update_multi_halts.js: an upserted document matching the filter is not updated again."""
    c = db.c
    c.insert_one({"key": 0, "cUpdates": 0})
    options = {}
    if indexed:
        c.create_index([("key", 1)])
        options["hint"] = {"key": 1}
    ok(update(c, {"key": {"$gt": 0}}, {"$set": {"key": 1}, "$inc": {"cUpdates": 1}}, upsert=True, multi=True,
              **options))
    assert c.count_documents({}) == 2
    assert [d["cUpdates"] for d in c.find({"key": 1})] == [1]


def test_multi_update_growing_a_document_updates_it_once(db):
    """update_multi_halts.js: a document that grows (a new field) is not seen again by the scan."""
    c = db.c
    c.insert_one({"key": 1, "cUpdates": 0})
    reply = ok(update(c, {"key": 1}, {"$set": {"new": 42}, "$inc": {"cUpdates": 1}}, multi=True))
    assert (reply["n"], reply["nModified"]) == (1, 1)
    assert only(c)["cUpdates"] == 1


def test_multi_update_moving_a_key_forward_in_the_index_updates_once(db):
    """update_multi_halts.js: incrementing the hinted index's key moves the entry ahead of the scan;
    the document is still updated once."""
    c = db.c
    c.insert_one({"key": 0, "cUpdates": 0})
    c.create_index([("key", 1)])
    reply = ok(update(c, {"key": {"$gte": 0}}, {"$inc": {"key": 10, "cUpdates": 1}}, multi=True, hint={"key": 1}))
    assert (reply["n"], reply["nModified"]) == (1, 1)
    doc = only(c)
    assert (doc["key"], doc["cUpdates"]) == (10, 1)


# --------------------------------------------------------------------------------------------------
# update_undefined.js
# --------------------------------------------------------------------------------------------------

U = UNDEFINED
UNDEFINED_DOCS = [
    {"_id": 0, "a": 1}, {"_id": 1, "a": U}, {"_id": 2, "a": {}}, {"_id": 3, "a": []},
    {"_id": 4, "a": [U, 1, [U, 1]]}, {"_id": 5, "b": U},
    {"_id": 10, "a": {"b": 1}}, {"_id": 11, "a": {"b": {}}}, {"_id": 12, "a": {"b": {"c": 1}}},
    {"_id": 13, "a": {"b": U, "c": 1}},
    {"_id": 20, "a": [{"b": U, "c": 1}, {"c": 1}, 1, [{"b": U, "c": 1}]]},
    {"_id": 30, "a": {"b": []}}, {"_id": 31, "a": {"b": [1, {"c": 1}]}},
    {"_id": 32, "a": {"b": [U, 1, [U]], "c": 1}},
    {"_id": 33, "a": [{"b": [U]}, {"b": 1}, {"b": [1, U]}, {"c": 1}]},
]

_RAW = CodecOptions(document_class=RawBSONDocument)


def _run_undefined_update(db, statement: dict, changed: dict) -> None:
    """Insert the jstest's documents (raw BSON: pymongo cannot write undefined), run the update, and
    compare every stored document's bytes with the expected one (``changed`` by _id, else as inserted)."""
    c = db.c
    c.drop()
    c.insert_many([raw(d) for d in UNDEFINED_DOCS])
    ok(db.command("update", "c", updates=[statement]))
    stored = list(db.get_collection("c", codec_options=_RAW).find().sort("_id", 1))
    expected = [changed.get(d["_id"], d) for d in UNDEFINED_DOCS]
    assert [bytes(d.raw) for d in stored] == [bytes(raw(d).raw) for d in expected]


@pytest.mark.xfail(strict=True, reason=UNDEFINED_STORED_AS_NULL)
def test_expr_type_undefined_then_set_null_changes_only_the_top_level_field(db):
    """update_undefined.js: ``$expr`` ``$type`` "undefined" on ``$a`` does not traverse arrays: only
    ``{a: undefined}`` is set to null."""
    _run_undefined_update(db, {"q": {"$expr": {"$eq": [{"$type": "$a"}, "undefined"]}}, "u": {"$set": {"a": None}},
                               "multi": True}, {1: {"_id": 1, "a": None}})


@pytest.mark.xfail(strict=True, reason=UNDEFINED_STORED_AS_NULL)
def test_expr_type_undefined_on_a_dotted_path(db):
    """update_undefined.js: the same on ``a.b``: only the document whose ``a.b`` is itself undefined."""
    _run_undefined_update(db, {"q": {"$expr": {"$eq": [{"$type": "$a.b"}, "undefined"]}},
                               "u": {"$set": {"a.b": None}}, "multi": True},
                          {13: {"_id": 13, "a": {"b": None, "c": 1}}})


@pytest.mark.xfail(strict=True, reason=UNDEFINED_STORED_AS_NULL)
def test_pipeline_update_removes_top_level_undefined_fields(db):
    """update_undefined.js: ``$replaceWith`` of ``$objectToArray``/``$filter``/``$arrayToObject``
    drops top-level undefined fields."""
    pipeline = [{"$replaceWith": {"$arrayToObject": {"$filter": {
        "input": {"$objectToArray": "$$ROOT"},
        "cond": {"$not": {"$eq": [{"$type": "$$this.v"}, "undefined"]}}}}}}]
    _run_undefined_update(db, {"q": {}, "u": pipeline, "multi": True}, {1: {"_id": 1}, 5: {"_id": 5}})


@pytest.mark.xfail(strict=True, reason=UNDEFINED_STORED_AS_NULL)
def test_pipeline_update_replaces_undefined_one_level_deep(db):
    """update_undefined.js: a ``$set`` stage with ``$cond``/``$map`` replaces undefined by null in
    ``a`` itself, in its array elements and in its subdocument's fields (one level only)."""
    is_undef = {"$eq": [{"$type": "$$this"}, "undefined"]}
    pipeline = [{"$set": {"a": {"$cond": {
        "if": {"$eq": [{"$type": "$a"}, "array"]},
        "then": {"$map": {"input": "$a", "in": {"$cond": {"if": is_undef, "then": None, "else": "$$this"}}}},
        "else": {"$cond": {
            "if": {"$eq": [{"$type": "$a"}, "object"]},
            "then": {"$arrayToObject": {"$map": {"input": {"$objectToArray": "$a"}, "in": {"$cond": {
                "if": {"$eq": [{"$type": "$$this.v"}, "undefined"]}, "then": {"k": "$$this.k", "v": None},
                "else": "$$this"}}}}},
            "else": {"$cond": {"if": {"$eq": [{"$type": "$a"}, "undefined"]}, "then": None, "else": "$a"}}}}}}}}]
    _run_undefined_update(db, {"q": {}, "u": pipeline, "multi": True}, {
        1: {"_id": 1, "a": None}, 4: {"_id": 4, "a": [None, 1, [U, 1]]}, 13: {"_id": 13, "a": {"b": None, "c": 1}}})


# --------------------------------------------------------------------------------------------------
# updated.js, updatee.js, set1-3.js, unset.js, unset2.js
# --------------------------------------------------------------------------------------------------

def test_set_and_inc_array_elements_among_nulls(db):
    """updated.js: ``$set`` of ``items.0`` among nulls, then ``$inc`` inside it and ``$set`` of
    ``items.1`` in one update."""
    c = db.c
    c.insert_one({"_id": 0.5, "items": [None, None, None, None]})
    ok(update(c, {}, {"$set": {"items.0": {"amount": 9000, "itemId": 1}}}))
    assert only(c)["items"] == [{"amount": 9000, "itemId": 1}, None, None, None]
    ok(update(c, {}, {"$inc": {"items.0.amount": 1000}, "$set": {"items.1": {"amount": 1, "itemId": 2}}}))
    assert canon(only(c)) == canon({"_id": 0.5, "items": [{"amount": 10000, "itemId": 1},
                                                          {"amount": 1, "itemId": 2}, None, None]})


def test_numeric_looking_field_names_in_subdocuments(db):
    """updatee.js (SERVER-1347): in a document (not an array) numeric-looking names are plain names:
    huge numbers, leading zeros (``02`` beside ``002``, ``00`` beside ``000``) never collide."""
    c = db.c
    actual = {"key1": "val1", "key2": "val2", "001": "val3", "002": "val4", "0020000000000000000000": "val5"}
    c.insert_one({"_id": 1, "actual": dict(actual), "profile-id": "test"})
    steps = [
        ({"profile-id": "test"}, {"actual.0030000000000000000000": "val6"}),
        ({"profile-id": "test"}, {"actual.02": "v4"}),
        ({"_id": 1}, {"actual.2139043290148390248219423941.b": 4}),
        ({"_id": 1}, {"7213647182934612837492342341": 1}),
        ({"_id": 1}, {"7213647182934612837492342342": 2}),
        ({"_id": 1}, {"actual.000": "val000"}),
        ({"_id": 1}, {"actual.00": "val00"}),
        ({"_id": 1}, {"actual.000": "val000"}),
        ({"_id": 1}, {"actual.01": "val01"}),
    ]
    for q, fields in steps:
        ok(update(c, q, {"$set": fields}))
    got = only(c)
    assert got["actual"] == {**actual, "0030000000000000000000": "val6", "02": "v4",
                             "2139043290148390248219423941": {"b": 4}, "000": "val000", "00": "val00", "01": "val01"}
    assert (got["7213647182934612837492342341"], got["7213647182934612837492342342"]) == (1, 2)


@pytest.mark.parametrize("path", ["0..", "0..0", ".0", "..0", "0.0..0"])
def test_set_of_a_path_with_an_empty_component_is_refused(db, path):
    """updatee.js: paths with an empty component "shouldn't work" (56 EmptyFieldName) and leave the
    document alone."""
    c = db.c
    c.insert_one({"_id": 1, "a": 1})
    error = write_error(update(c, {"_id": 1}, {"$set": {path: "val01"}}), EMPTY_FIELD_NAME)
    assert error["errmsg"] == f"The update path '{path}' contains an empty field name, which is not allowed."
    assert only(c) == {"_id": 1, "a": 1}


def test_set_a_subdocument_with_a_dotted_field_name(db):
    """set1.js: ``$set`` of a whole subdocument whose field name contains a dot stores it as is."""
    c = db.c
    c.insert_one({"_id": 1, "emb": {}})
    ok(update(c, {"_id": 1}, {"$set": {"emb": {"a.dot": "data"}}}))
    assert only(c) == {"_id": 1, "emb": {"a.dot": "data"}}


def test_set_replaces_values_of_any_type_and_adds_several_fields(db):
    """set2.js: ``$set`` replaces a boolean by a number (top level and nested) and adds two fields."""
    c = db.c
    c.insert_one({"_id": 1, "x": True, "y": {"x": True}})
    ok(update(c, {"_id": 1}, {"$set": {"x": 17}}))
    ok(update(c, {"_id": 1}, {"$set": {"y.x": 17}}))
    ok(update(c, {"_id": 1}, {"$set": {"a": 2, "b": 3}}))
    assert canon(only(c)) == canon({"_id": 1, "x": 17, "y": {"x": 17}, "a": 2, "b": 3})


def test_set_a_field_whose_name_extends_a_sibling(db):
    """set3.js: a new field whose name has an existing sibling's name as prefix is a new field."""
    c = db.c
    c.insert_one({"_id": 0, "test1": {"test2": {"abcdefghijklmnopqrstu": {"id": 1}}}})
    ok(update(c, {}, {"$set": {"test1.test2.abcdefghijklmnopqrstuvwxyz": {"id": 2}}}))
    assert only(c)["test1"]["test2"] == {"abcdefghijklmnopqrstu": {"id": 1}, "abcdefghijklmnopqrstuvwxyz": {"id": 2}}


def test_unset_of_missing_fields_is_a_no_op_and_keeps_empty_parents(db):
    """unset.js: unsetting missing fields changes nothing; unsetting ``emb.a`` keeps ``emb`` (empty);
    unsetting ``emb`` removes it."""
    c = db.c
    c.insert_one({"_id": 1, "emb": {}})
    for path in ("emb.a", "z"):
        reply = ok(update(c, {"_id": 1}, {"$unset": {path: 1}}))
        assert (reply["n"], reply["nModified"]) == (1, 0)
    assert only(c) == {"_id": 1, "emb": {}}
    ok(update(c, {"_id": 1}, {"$set": {"emb.a": 1}}))
    ok(update(c, {"_id": 1}, {"$set": {"z": 1}}))
    ok(update(c, {"_id": 1}, {"$unset": {"emb.a": 1}}))
    ok(update(c, {"_id": 1}, {"$unset": {"z": 1}}))
    assert only(c) == {"_id": 1, "emb": {}}
    ok(update(c, {"_id": 1}, {"$unset": {"emb": 1}}))
    assert only(c) == {"_id": 1}


def test_unset_of_array_elements_nulls_them(db):
    """unset2.js: ``$unset`` of an array element sets it to null (an index past the end: no change);
    with ``$set`` of later indexes in the same update; ``$unset`` and ``$set`` of one element conflict
    (40) and change nothing."""
    c = db.c
    c.insert_one({"_id": 0, "a": ["a", "b", "c", "d"]})
    for idx, expected in (("3", ["a", "b", "c", None]), ("1", ["a", None, "c", None]),
                          ("0", [None, None, "c", None]), ("4", [None, None, "c", None])):
        reply = ok(update(c, {}, {"$unset": {f"a.{idx}": 1}}))
        assert only(c)["a"] == expected
        assert reply["nModified"] == (0 if idx == "4" else 1)
    c.drop()
    c.insert_one({"_id": 0, "a": ["a", "b", "c", "d", "e"]})
    ok(update(c, {}, {"$unset": {"a.2": 1}, "$set": {"a.3": 3, "a.4": 4, "a.5": 5}}))
    assert only(c)["a"] == ["a", "b", None, 3, 4, 5]
    c.drop()
    c.insert_one({"_id": 0, "a": ["a", "b", "c", "d", "e"]})
    error = write_error(update(c, {}, {"$unset": {"a.2": 1}, "$set": {"a.2": 4}}), CONFLICTING_UPDATE_OPERATORS)
    assert error["errmsg"] == "Updating the path 'a.2' would create a conflict at 'a.2'"
    assert only(c)["a"] == ["a", "b", "c", "d", "e"]


# --------------------------------------------------------------------------------------------------
# inc1.js, inc2.js, update_inc.js, update_inc_implicit_subfield.js, update_index.js
# --------------------------------------------------------------------------------------------------

def test_inc_steps_and_a_missing_document(db):
    """inc1.js: ``$inc`` by 1, 1, 2, -1 (and by 1 after an index on ``x``); an update matching
    nothing changes nothing."""
    c = db.c
    c.insert_one({"_id": 1, "x": 1})
    for q, by, expected in (({"_id": 1}, 1, 2), ({"_id": 1}, 1, 3), ({"_id": 2}, 1, 3), ({"_id": 1}, 2, 5),
                            ({"_id": 1}, -1, 4)):
        ok(update(c, q, {"$inc": {"x": by}}))
        assert (c.count_documents({}), only(c)["x"]) == (1, expected)
    c.create_index([("x", 1)])
    ok(update(c, {"_id": 1}, {"$inc": {"x": 1}}))
    assert only(c)["x"] == 5


def test_inc_moves_a_document_in_sort_order(db):
    """inc2.js: after ``$inc`` the sort on ``x`` (with and without an index) sees the new value."""
    c = db.c
    c.insert_many([{"_id": i, "x": i} for i in (1, 2, 3)])

    def order():
        return [d["_id"] for d in c.find().sort("x", 1)]

    assert order() == [1, 2, 3]
    ok(update(c, {"_id": 1}, {"$inc": {"x": 4}}))
    assert order() == [2, 3, 1]
    c.create_index([("x", 1)])
    assert order() == [2, 3, 1]
    ok(update(c, {"_id": 3}, {"$inc": {"x": 4}}))
    assert order() == [2, 1, 3]


@pytest.mark.parametrize("key", [{"a": 5}, {"a": 5, "b": 7}, {"a": None, "b": 7}, {"referer": "blah"},
                                 {"referer": "blah", "lame": "bar"}, {"referer": "blah", "name": "bar"},
                                 {"date": None, "referer": "blah", "name": "bar"}], ids=str)
def test_upsert_inc_counter(db, key):
    """update_inc.js: an upsert ``$inc`` on the query's key creates the document once and then
    increments it, also after an index on the key fields."""
    c = db.c
    for n in (1, 2, 3):
        ok(update(c, key, {"$inc": {"n": 1}}, upsert=True))
        assert (c.count_documents({}), only(c)["n"]) == (1, n)
    c.create_index([(k, 1) for k in key])
    ok(update(c, key, {"$inc": {"n": 1}}, upsert=True))
    assert (c.count_documents({}), only(c)["n"]) == (1, 4)


@pytest.mark.parametrize("start", [None, {"all": {}, "all-copy": {}}], ids=["upsert", "existing"])
def test_inc_of_fields_sorting_below_the_dot(db, start):
    """update_inc_implicit_subfield.js (SERVER-3370): ``all.t`` and ``all-copy.t`` ('-' sorts below
    '.') are two separate fields, as are ``all11.t`` and ``all2.t``."""
    c = db.c
    if start is None:
        ok(update(c, {}, {"$inc": {"all.t": 1, "all-copy.t": 1}}, upsert=True))
    else:
        c.insert_one(start)
        ok(update(c, {}, {"$inc": {"all.t": 1, "all-copy.t": 1}}))
    assert c.count_documents({"all": {"t": 1}, "all-copy": {"t": 1}}) == 1
    c.drop()
    c.insert_one({"all11": {}, "all2": {}})
    ok(update(c, {}, {"$inc": {"all11.t": 1, "all2.t": 1}}))
    assert c.count_documents({"all11": {"t": 1}, "all2": {"t": 1}}) == 1


@pytest.mark.parametrize("indexed", [False, True], ids=["collscan", "indexed"])
def test_inc_of_the_queried_field(db, indexed):
    """update_index.js: ``$inc`` of the field the query matched on, with and without an index on it
    (and again after a drop, which drops the index)."""
    c = db.c
    c.insert_one({"a": 4})
    if indexed:
        c.create_index([("a", 1)])
    ok(update(c, {"a": 4}, {"$inc": {"a": 2}}))
    assert only(c)["a"] == 6
    c.drop()
    c.insert_one({"a": 4})
    ok(update(c, {"a": 4}, {"$inc": {"a": 2}}))
    assert only(c)["a"] == 6


# --------------------------------------------------------------------------------------------------
# upsert_shell.js
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("q, u, expected_id", [
    ({"_id": 3}, {"$set": {"a": "123"}}, 3),
    ({"_id": {"a": 1}}, {"$set": {"a": 123}}, {"a": 1}),
    ({"_id": 1233}, {"$set": {"a": 123}}, 1233),
    ({"_id": {"a": 1, "b": 2}}, {"$set": {"a": 123}}, {"a": 1, "b": 2}),
], ids=["int", "subdoc", "int2", "subdoc2"])
def test_upsert_reports_the_id_taken_from_the_query(db, q, u, expected_id):
    """upsert_shell.js: an upsert whose query names ``_id`` reports (and stores) that ``_id``."""
    reply = ok(update(db.c, q, u, upsert=True))
    assert reply["upserted"] == [{"index": 0, "_id": expected_id}]
    assert canon(only(db.c)["_id"]) == canon(expected_id)


def test_upsert_reports_generated_ids_and_none_for_an_update(db):
    """upsert_shell.js: operator and replacement upserts report the generated ``_id`` (the stored
    one); an upsert that updates reports none; a range on ``_id`` generates a new one."""
    c = db.c
    reply = ok(update(c, {"x": 1}, {"$inc": {"y": 1}}, upsert=True))
    assert reply["upserted"][0]["_id"] == c.find_one({"x": 1})["_id"]
    reply = ok(update(c, {"x": 2}, {"x": 2, "y": 3}, upsert=True))
    assert reply["upserted"][0]["_id"] == c.find_one({"x": 2})["_id"]
    assert c.count_documents({}) == 2
    reply = ok(update(c, {"x": 2}, {"x": 2, "y": 4}, upsert=True))
    assert "upserted" not in reply and (reply["n"], reply["nModified"]) == (1, 1)
    reply = ok(update(c, {"_id": {"$gt": 100}}, {"$set": {"a": 123}}, upsert=True))
    new_id = reply["upserted"][0]["_id"]
    assert new_id != 100 and c.find_one({"_id": new_id}) == {"_id": new_id, "a": 123}


# --------------------------------------------------------------------------------------------------
# findAndModify: empty_coll, server6226 (return_null), server6582 (last_error_object), fields,
# dotted_fields, new, new_upsert_sort, upsert, upsert_non_existent, invalid
# --------------------------------------------------------------------------------------------------

def test_find_and_modify_on_a_missing_collection(db):
    """find_and_modify_empty_coll.js (SERVER-18054): remove and update on a missing collection return
    null; an upsert with new returns the new document; with fields and no new, null."""
    c = db.c
    assert value(c, remove=True) is None
    assert value(c, update={"$inc": {"i": 1}}) is None
    assert value(c, query={"_id": 0}, update={"$inc": {"i": 1}}, upsert=True, new=True) == {"_id": 0, "i": 1}
    c.drop()
    assert value(c, remove=True, fields={"z": 1}) is None
    assert value(c, update={"$inc": {"i": 1}}, fields={"z": 1}) is None
    assert value(c, update={"$inc": {"i": 1}}, upsert=True, fields={"z": 1}) is None


def test_find_and_modify_upsert_without_new_returns_null(db):
    """find_and_modify_server6226.js (find_and_modify_return_null.js): an upsert returning the old
    document returns null."""
    reply = fam(db.c, query={"_id": 1}, update={"$inc": {"i": 1}}, upsert=True)
    assert reply["value"] is None
    assert reply["lastErrorObject"] == {"n": 1, "updatedExisting": False, "upserted": 1}


def test_find_and_modify_last_error_object(db):
    """find_and_modify_server6582.js (find_and_modify_last_error_object.js): an upsert reports
    updatedExisting false, n 1 and the upserted _id; a remove reports n 1."""
    c = db.c
    reply = fam(c, query={"f": 1}, update={"$set": {"f": 2}}, upsert=True, new=True)
    le = reply["lastErrorObject"]
    assert (le["updatedExisting"], le["n"], le["upserted"]) == (False, 1, reply["value"]["_id"])
    assert reply["value"]["f"] == 2  # find_and_modify_upsert_non_existent.js
    c.drop()
    c.insert_one({"f": 1})
    assert fam(c, query={"f": 1}, remove=True)["lastErrorObject"] == {"n": 1}


def test_find_and_modify_fields_apply_to_old_and_new_documents(db):
    """find_and_modify_fields.js: inclusion and exclusion projections of the old and the new document."""
    c = db.c
    c.insert_one({"_id": 1, "i": 0, "j": 0})
    assert value(c, update={"$inc": {"i": 1}}, new=True, fields={"i": 1}) == {"_id": 1, "i": 1}
    assert value(c, update={"$inc": {"i": 1}}, fields={"i": 0}) == {"_id": 1, "j": 0}
    assert value(c, update={"$inc": {"i": 1}}, fields={"_id": 0, "j": 1}) == {"j": 0}
    assert value(c, update={"$inc": {"i": 1}}, fields={"_id": 0, "j": 1}, new=True) == {"j": 0}
    assert only(c) == {"_id": 1, "i": 4, "j": 0}


@pytest.mark.parametrize("doc_id", [5, None], ids=["int_id", "null_id"])
def test_find_and_modify_new_document_no_longer_matching_the_query(db, doc_id):
    """find_and_modify_dotted_fields.js, find_and_modify_new.js: new returns the updated document
    even when it no longer matches the query (also with ``_id: null``)."""
    c = db.c
    c.insert_one({"_id": doc_id, "a": {"b": 1}})
    ret = value(c, query={"a.b": 1}, update={"$set": {"a.b": 2}}, new=True)
    assert ret == {"_id": doc_id, "a": {"b": 2}}
    assert c.count_documents({}) == 1


def test_find_and_modify_upsert_with_sort_returns_the_inserted_document(db):
    """find_and_modify_new_upsert_sort.js: an upsert with a sort and new returns what was stored."""
    c = db.c
    a = value(c, query={"foo": "bar"}, update={"$set": {"bob": "john"}}, sort={"foo": 1}, upsert=True, new=True)
    assert a == only(c)
    assert (a["foo"], a["bob"]) == ("bar", "john")


def test_find_and_modify_as_a_counter(db):
    """find_and_modify_upsert.js: the auto-increment idiom (upsert + new), then new: false with and
    without upsert; an upsert without an ``_id`` equality generates one."""
    c = db.c

    def next_val(name):
        return value(c, query={"_id": name}, update={"$inc": {"val": 1}}, upsert=True, new=True)

    assert [next_val(n) for n in "aaazza"] == [
        {"_id": "a", "val": 1}, {"_id": "a", "val": 2}, {"_id": "a", "val": 3}, {"_id": "z", "val": 1},
        {"_id": "z", "val": 2}, {"_id": "a", "val": 4}]
    c.drop()

    def helper(upsert):
        return value(c, query={"_id": "asdf"}, update={"$inc": {"val": 1}}, upsert=upsert, new=False)

    assert helper(False) is None and c.count_documents({}) == 0
    assert helper(True) is None and c.count_documents({}) == 1
    assert helper(True) == {"_id": "asdf", "val": 1}
    assert helper(False) == {"_id": "asdf", "val": 2}
    assert helper(True) == {"_id": "asdf", "val": 3}
    out = value(c, query={"a": 1}, update={"$set": {"b": 2}}, upsert=True, new=True)
    assert out["_id"] is not None and (out["a"], out["b"]) == (1, 2)


@pytest.mark.parametrize("fields, message", [
    ({"remove": True, "update": {}}, "Cannot specify both an update and remove=true"),
    ({"remove": True, "upsert": True}, "Cannot specify both upsert=true and remove=true "),
    ({"remove": True, "new": True},
     "Cannot specify both new=true and remove=true; 'remove' always returns the deleted document"),
    ({"remove": True, "arrayFilters": [{"element": {"$gte": 100}}]}, "Cannot specify arrayFilters and remove=true"),
    ({"update": [{"$match": {}}], "arrayFilters": [{"element": {"$gte": 100}}]},
     "Cannot specify arrayFilters and a pipeline update"),
    ({}, "Either an update or remove=true must be specified"),
], ids=["update_and_remove", "upsert_and_remove", "new_and_remove", "array_filters_and_remove",
        "array_filters_and_pipeline", "empty"])
def test_find_and_modify_invalid_combinations_fail_to_parse(db, fields, message):
    """find_and_modify_invalid.js: contradictory findAndModify options are 9 FailedToParse."""
    db.create_collection("c")
    error = command_fails(db, {"findAndModify": "c", **fields}, FAILED_TO_PARSE)
    assert error.details["errmsg"] == message


# --------------------------------------------------------------------------------------------------
# find_and_modify_server6865.js (find_and_modify_positional_new_remove.js)
# --------------------------------------------------------------------------------------------------

NAMES = [{"name": "first", "value": 1}, {"name": "second", "value": 2}, {"name": "third", "value": 3}]
JOHNS = [{"name": "john", "value": 1}, {"name": "jess", "value": 2}, {"name": "jeff", "value": 3}]
JOHN_Q = {"b": {"$elemMatch": {"name": "john", "value": {"$lt": 2}}}}

FAM_PROJECTIONS = [
    # (inserted, command fields, expected value)
    ({"_id": 42, "a": [1, 2], "b": 3}, {"query": {"_id": 42}, "fields": {"_id": 0, "b": 1}, "remove": True}, {"b": 3}),
    ({"_id": 42, "a": [1, 2], "b": 3, "c": 4}, {"query": {"_id": 42}, "fields": {"a": 0, "b": 0}, "remove": True},
     {"_id": 42, "c": 4}),
    ({"_id": 42, "b": NAMES}, {"query": {"_id": 42}, "fields": {"b": {"$elemMatch": {"value": 2}}}, "remove": True},
     {"_id": 42, "b": [NAMES[1]]}),
    ({"_id": 42, "a": [1, 2]}, {"query": {"a": 2}, "fields": {"a.$": 1}, "remove": True}, {"_id": 42, "a": [2]}),
    ({"_id": 42, "b": NAMES}, {"query": {"_id": 42, "b.name": "third"}, "fields": {"b.$": 1}, "remove": True},
     {"_id": 42, "b": [NAMES[2]]}),
    ({"_id": 42, "a": 5, "b": JOHNS}, {"query": JOHN_Q, "fields": {"_id": 0, "a": 5}, "remove": True}, {"a": 5}),
    ({"_id": 42, "b": JOHNS}, {"query": JOHN_Q, "fields": {"_id": 0, "b.$": 1}, "remove": True}, {"b": [JOHNS[0]]}),
    # update, new: false
    ({"_id": 42, "a": [1, 2], "b": 3},
     {"query": {"_id": 42}, "fields": {"_id": 0, "b": 1}, "update": {"$inc": {"b": 1}}, "new": False}, {"b": 3}),
    ({"_id": 42, "a": [1, 2], "b": 3, "c": 4},
     {"query": {"_id": 42}, "fields": {"a": 0, "b": 0}, "update": {"$set": {"c": 5}}, "new": False},
     {"_id": 42, "c": 4}),
    ({"_id": 42, "b": NAMES}, {"query": {"_id": 42}, "fields": {"b": {"$elemMatch": {"value": 2}}},
                               "update": {"$set": {"name": "2nd"}}, "new": False}, {"_id": 42, "b": [NAMES[1]]}),
    ({"_id": 42, "a": [1, 2]},
     {"query": {"a": 2}, "fields": {"a.$": 1}, "update": {"$set": {"b.kind": "xyz"}}, "new": False},
     {"_id": 42, "a": [2]}),
    ({"_id": 42, "b": NAMES}, {"query": {"_id": 42, "b.name": "third"}, "fields": {"b.$": 1},
                               "update": {"$set": {"b.$.kind": "xyz"}}, "new": False}, {"_id": 42, "b": [NAMES[2]]}),
    ({"_id": 1, "a": [{"x": 1, "y": 1}, {"x": 1, "y": 2}]},
     {"query": {"_id": 1}, "fields": {"a": {"$elemMatch": {"x": 1}}}, "update": {"$pop": {"a": -1}}, "new": False},
     {"_id": 1, "a": [{"x": 1, "y": 1}]}),
    ({"_id": 42, "a": 5, "b": JOHNS},
     {"query": JOHN_Q, "fields": {"_id": 0, "a": 5}, "update": {"$inc": {"a": 6}}, "new": False}, {"a": 5}),
    ({"_id": 42, "b": JOHNS},
     {"query": JOHN_Q, "fields": {"_id": 0, "b.$": 1}, "update": {"$set": {"name": "james"}}, "new": False},
     {"b": [JOHNS[0]]}),
    # update, new: true
    ({"_id": 42, "a": [1, 2], "b": 3},
     {"query": {"_id": 42}, "fields": {"_id": 0, "b": 1}, "update": {"$inc": {"b": 1}}, "new": True}, {"b": 4}),
    ({"_id": 42, "a": [1, 2], "b": 3, "c": 4},
     {"query": {"_id": 42}, "fields": {"a": 0, "b": 0}, "update": {"$set": {"c": 5}}, "new": True},
     {"_id": 42, "c": 5}),
    ({"_id": 42, "b": NAMES}, {"query": {"_id": 42}, "fields": {"b": {"$elemMatch": {"value": 2}}},
                               "update": {"$set": {"b.1.name": "2nd"}}, "new": True},
     {"_id": 42, "b": [{"name": "2nd", "value": 2}]}),
    # ($elemMatch is a computed field in an inclusion: after the included c, as mongod 7.0 orders it)
    ({"_id": 42, "b": NAMES}, {"query": {"_id": 42}, "fields": {"b": {"$elemMatch": {"value": 2}}, "c": 1},
                               "update": {"$set": {"c": "xyz"}}, "new": True}, {"_id": 42, "c": "xyz", "b": [NAMES[1]]}),
    ({"_id": 1, "a": [{"x": 1, "y": 1}, {"x": 1, "y": 2}]},
     {"query": {"_id": 1}, "fields": {"a": {"$elemMatch": {"x": 1}}}, "update": {"$pop": {"a": -1}}, "new": True},
     {"_id": 1, "a": [{"x": 1, "y": 2}]}),
    ({"_id": 42, "a": 5, "b": JOHNS},
     {"query": JOHN_Q, "fields": {"_id": 0, "a": 5}, "update": {"$inc": {"a": 6}}, "new": True}, {"a": 11}),
]


@pytest.mark.parametrize("inserted, cmd, expected", FAM_PROJECTIONS)
def test_find_and_modify_projection_matches_find(db, inserted, cmd, expected):
    """find_and_modify_server6865.js: findAndModify's ``fields`` (inclusion, exclusion, ``$elemMatch``,
    positional) give what find gives for the same query and projection: before a remove or an update
    with new: false, after an update with new: true."""
    c = db.c
    c.insert_one(inserted)
    if not cmd.get("new"):
        assert canon(c.find_one(cmd["query"], cmd["fields"])) == canon(expected)
    assert canon(value(c, **cmd)) == canon(expected)
    if cmd.get("new"):
        assert canon(c.find_one(cmd["query"], cmd["fields"])) == canon(expected)


@pytest.mark.parametrize("inserted, cmd", [
    ({"_id": 42, "a": [1, 2]}, {"query": {"a": 2}, "fields": {"a.$": 1}, "update": {"$set": {"b.kind": "xyz"}}}),
    ({"_id": 42, "b": NAMES}, {"query": {"_id": 42, "b.name": "third"}, "fields": {"b.$": 1},
                               "update": {"$set": {"b.$.kind": "xyz"}}}),
    ({"_id": 42, "b": JOHNS}, {"query": JOHN_Q, "fields": {"_id": 0, "b.$": 1}, "update": {"$set": {"name": "james"}}}),
], ids=["values", "documents", "elem_match_query"])
def test_find_and_modify_positional_projection_of_the_new_document_fails(db, inserted, cmd):
    """find_and_modify_server6865.js: a positional projection with new: true is refused (2: the
    query may no longer match the new document), before anything is written."""
    c = db.c
    c.insert_one(inserted)
    with pytest.raises(OperationFailure) as info:
        fam(c, new=True, **cmd)
    assert info.value.code == BAD_VALUE
    assert info.value.details["errmsg"] == "cannot use a positional projection and return the new document"
    assert only(c) == inserted


def test_find_and_modify_and_concurrent_update_increment_once(db, server):
    """find_and_modify_concurrent_update.js: a findAndModify (slowed by ``$where``) racing an update on
    the same document and predicate: exactly one of them increments ``a``."""
    c = db.c
    c.create_index([("a", 1)])
    c.create_index([("b", 1)])
    for _ in range(3):
        c.delete_many({})
        c.insert_one({"_id": 1, "a": 1, "b": 1})
        with server.client() as other:
            racer = threading.Thread(target=lambda: other[db.name].c.update_one({"a": 1, "b": 1}, {"$inc": {"a": 1}}))
            racer.start()
            fam(c, query={"a": 1, "b": 1, "$where": "sleep(100); return true;"}, update={"$inc": {"a": 1}})
            racer.join()
        docs = list(c.find())
        assert len(docs) == 1 and docs[0]["a"] == 2


# --------------------------------------------------------------------------------------------------
# $set / $unset / $inc / $push over random paths: a reference model of mongod's update semantics
# --------------------------------------------------------------------------------------------------

class _ModelError(Exception):
    def __init__(self, code: int):
        self.code = code


_MISSING = object()


def _model_component_key(p: str) -> tuple:
    # the update tree's per-level order (mongod's cmpPathsAndArrayIndexes) for the components used
    # here: single digits and letters
    return (0 if p.isdigit() else 1, p)


def _model_apply(doc: dict, updates: list[tuple[str, str, object]]) -> tuple[dict, bool]:
    """mongod's result of one update made of ``(op, path, arg)`` entries (paths distinct, none a
    prefix of another): applied in the update tree's order; raises ``_ModelError`` with the code."""
    new = copy.deepcopy(doc)
    concrete = [(op, parts, arg) for op, path, arg in updates for parts in _model_expand(doc, path.split("."))]
    changed = False
    for op, parts, arg in sorted(concrete, key=lambda e: tuple(map(_model_component_key, e[1]))):
        changed |= _model_one(new, op, parts, arg)
    return new, changed


def _model_expand(doc: dict, parts: list[str]) -> list[list[str]]:
    """The concrete paths of ``parts``: ``$[]`` stands for every index of the array it meets in the
    document as it was (a missing path or a non-array there is 2)."""
    paths: list[list[str]] = [[]]
    nodes: list = [doc]
    for part in parts:
        if part != "$[]":
            paths = [p + [part] for p in paths]
            nodes = [_model_get(n, part) for n in nodes]
            continue
        if any(not isinstance(n, list) for n in nodes):
            raise _ModelError(BAD_VALUE)
        paths = [p + [str(i)] for p, n in zip(paths, nodes, strict=True) for i in range(len(n))]
        nodes = [e for n in nodes for e in n]
    return paths


def _model_get(node, part):
    if isinstance(node, dict):
        return node.get(part, _MISSING)
    if isinstance(node, list) and part.isdigit():
        return node[int(part)] if int(part) < len(node) else _MISSING
    return _MISSING


def _model_one(doc: dict, op: str, parts: list[str], arg) -> bool:
    node = doc
    for i, part in enumerate(parts[:-1]):  # walk the existing prefix
        child = _model_get(node, part)
        if isinstance(child, (dict, list)):
            node = child
            continue
        if op == "$unset":
            return False
        # a scalar on the way, or a field name applied to an array, blocks the path
        blocked = child is not _MISSING or (isinstance(node, list) and not part.isdigit())
        if blocked:
            raise _ModelError(PATH_NOT_VIABLE)
        if op in _NON_CREATING:
            return False  # a path that could be created: a no-op
        fresh: dict = {}  # create the rest of the path as documents (an array is padded with nulls)
        _model_put(node, part, fresh)
        _model_create(fresh, parts[i + 1:], op, arg)
        return True
    last = parts[-1]
    if isinstance(node, list) and not last.isdigit():
        if op == "$unset":
            return False
        raise _ModelError(PATH_NOT_VIABLE)
    current = _model_get(node, last)
    if current is _MISSING:
        if op == "$unset" or op in _NON_CREATING:
            return False
        _model_put(node, last, _model_initial(op, arg))
        return True
    if op == "$unset":
        if isinstance(node, list):
            node[int(last)] = None
        else:
            del node[last]
        return True
    if op == "$set":
        result = arg
    elif op in ("$inc", "$mul"):
        if type(current) not in (int, Int64):
            raise _ModelError(TYPE_MISMATCH)
        total = int(current) + arg if op == "$inc" else int(current) * arg
        result = total if type(current) is int and -2**31 <= total < 2**31 else Int64(total)
    elif op in ("$min", "$max"):
        order = _model_compare(arg, current)
        if (order >= 0) if op == "$min" else (order <= 0):
            return False
        result = arg
    else:  # the array operators
        if not isinstance(current, list):
            raise _ModelError(TYPE_MISMATCH if op == "$pop" else BAD_VALUE)
        if op == "$push":
            result = current + [arg]
        elif op == "$addToSet":
            result = current if any(canon(e) == canon(arg) for e in current) else current + [arg]
        elif op == "$pull":
            result = [e for e in current if canon(e) != canon(arg)]
        else:  # $pop
            result = current[1:] if arg < 0 else current[:-1]
    if canon(result) == canon(current):
        return False
    _model_put(node, last, result)
    return True


_NON_CREATING = frozenset({"$pop", "$pull"})
# BSON's canonical type order of the values generated here: null, numbers, string, object, array, bool
_BRACKETS = {type(None): 1, int: 2, Int64: 2, str: 3, dict: 4, list: 5, bool: 8}


def _model_compare(a, b) -> int:
    """BSON order of a scalar ``a`` against any generated value ``b`` (a document or an array only
    ever meets a scalar here, so brackets decide)."""
    ka, kb = _BRACKETS[type(a)], _BRACKETS[type(b)]
    if ka != kb:
        return -1 if ka < kb else 1
    if ka == 1:
        return 0
    return -1 if a < b else int(a > b)


def _model_initial(op: str, arg):
    """What an operator writes where nothing was."""
    if op in ("$push", "$addToSet"):
        return [arg]
    if op == "$mul":
        return Int64(0) if type(arg) is Int64 else 0
    return arg


def _model_put(node, part, val) -> None:
    if isinstance(node, list):
        idx = int(part)
        node.extend([None] * (idx + 1 - len(node)))
        node[idx] = val
    else:
        node[part] = val


def _model_create(node: dict, parts: list[str], op: str, arg) -> None:
    for part in parts[:-1]:
        node[part] = node = {}
    node[parts[-1]] = _model_initial(op, arg)


_names = st.sampled_from(["a", "b", "c"])
_components = st.sampled_from(["a", "b", "c", "0", "1"])
_scalars = st.one_of(st.integers(-3, 3), st.just(2**31 - 1), st.sampled_from(["s", None, True]))
_values = st.recursive(_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(_names, inner, max_size=3)), max_leaves=6)
_docs = st.dictionaries(_names, _values, max_size=3)


_ARGS = {
    "$set": _values, "$push": _values, "$unset": st.just(1), "$inc": st.integers(-2, 2), "$mul": st.integers(-2, 2),
    "$min": _scalars, "$max": _scalars, "$addToSet": _scalars, "$pull": _scalars, "$pop": st.sampled_from([1, -1]),
}


@st.composite
def _updates(draw, operators=("$set", "$unset", "$inc", "$push")):
    ops = draw(st.lists(st.tuples(st.sampled_from(operators),
                                  st.lists(_components, min_size=1, max_size=3).map(".".join)),
                        min_size=1, max_size=3, unique_by=lambda e: e[1]))
    if draw(st.integers(0, 4)) == 0:
        # one all-positional path ($[] anywhere), alone: two array paths may meet on one element
        # only at apply time (40 with a path mongod builds from both), which the model leaves out
        parts = draw(st.lists(_components, min_size=0, max_size=2))
        parts.insert(draw(st.integers(0, len(parts))), "$[]")
        ops = [(ops[0][0], ".".join(parts))]
    return [(op, path, draw(_ARGS[op])) for op, path in ops]


def _conflicting(updates) -> bool:
    paths = [p.split(".") for _, p, _ in updates]
    return any(a != b and b[:len(a)] == a for a in paths for b in paths)


@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(doc=_docs, updates=_updates())
def test_set_unset_inc_push_follow_the_reference_model(db, doc, updates):
    """$set / $unset / $inc / $push over random paths (fields, array indexes and ``$[]``, up to three
    deep) into random documents: the stored document (field order and numeric types included) and
    nModified are the model's; where the model fails, the write error has its code and the document
    is unchanged; a path beside one of its prefixes is 40."""
    _check_against_model(db, doc, updates)


@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(doc=_docs, updates=_updates(("$set", "$mul", "$min", "$max", "$addToSet", "$pull", "$pop")))
def test_mul_min_max_add_to_set_pull_pop_follow_the_reference_model(db, doc, updates):
    """The same property for ``$mul``, ``$min``/``$max`` (BSON order across types), ``$addToSet``,
    ``$pull`` of a value and ``$pop`` beside ``$set``: ``$pop``/``$pull`` never create a path but fail
    (28) where it could not be created, and fail on a non-array (14 / 2)."""
    _check_against_model(db, doc, updates)


def _check_against_model(db, doc: dict, updates: list) -> None:
    c = db.c
    c.delete_many({})
    c.insert_one({"_id": 0, **doc})
    u: dict = {}
    for op, path, arg in updates:
        u.setdefault(op, {})[path] = arg
    reply = update(c, {"_id": 0}, u)
    stored = c.find_one({"_id": 0})
    if _conflicting(updates):
        event("conflict")
        write_error(reply, CONFLICTING_UPDATE_OPERATORS)
        assert canon(stored) == canon({"_id": 0, **doc})
        return
    try:
        expected, changed = _model_apply({"_id": 0, **doc}, updates)
    except _ModelError as exc:
        event(f"error {exc.code}")
        write_error(reply, exc.code)
        assert canon(stored) == canon({"_id": 0, **doc})
        return
    event("modified" if changed else "no-op")
    ok(reply)
    assert canon(stored) == canon(expected), (u, doc)
    assert reply["nModified"] == int(changed)


# --------------------------------------------------------------------------------------------------
# update_with_large_hint.js, update_pipeline_shell_helpers.js
# --------------------------------------------------------------------------------------------------

def test_update_and_delete_with_a_long_hint(db):
    """update_with_large_hint.js: a 1000-character index field as hint works for update and delete;
    once the index is dropped the same hint is a 2 BadValue write error for both."""
    c = db.c
    long_name = "x" * 1000
    c.create_index([(long_name, 1)])
    c.insert_one({"_id": 0})
    ok(db.command("update", "c", updates=[{"q": {"_id": 0}, "u": {"$set": {"x": 1}}, "hint": {long_name: 1}}]))
    reply = db.command("delete", "c", deletes=[{"q": {"_id": 0}, "limit": 1, "hint": {long_name: 1}}])
    assert reply["n"] == 1
    c.drop_indexes()
    c.insert_one({"_id": 0})
    for cmd in ({"update": "c", "updates": [{"q": {"_id": 0}, "u": {"$set": {"x": 1}}, "hint": {long_name: 1}}]},
                {"delete": "c", "deletes": [{"q": {"_id": 0}, "limit": 1, "hint": {long_name: 1}}]}):
        error = write_error(db.command(cmd), BAD_VALUE)  # per statement, as mongod's write path raises it
        assert error["errmsg"] == "hint provided does not correspond to an existing index"


def test_pipeline_updates_through_every_helper(db):
    """update_pipeline_shell_helpers.js: pipeline-style updates through update (single and multi),
    updateOne, updateMany, bulkWrite and findAndModify (new) all apply; a pipeline is refused as a
    replacement by the driver's replace helpers."""
    c = db.c
    c.insert_many([{"_id": 1, "a": 1, "b": 2}, {"_id": 2, "a": 2, "b": 3}])
    ok(update(c, {"_id": 1}, [{"$set": {"update": True}}]))
    ok(update(c, {}, [{"$set": {"updateMulti": True}}], multi=True))
    c.update_one({"_id": 1}, [{"$set": {"updateOne": True}}])
    c.update_many({}, [{"$set": {"updateMany": True}}])
    c.bulk_write([UpdateOne({"_id": 1}, [{"$set": {"bulkWriteUpdateOne": True}}]),
                  UpdateMany({}, [{"$set": {"bulkWriteUpdateMany": True}}])])
    first = {"_id": 1, "a": 1, "b": 2, "update": True, "updateMulti": True, "updateOne": True, "updateMany": True,
             "bulkWriteUpdateOne": True, "bulkWriteUpdateMany": True}
    second = {"_id": 2, "a": 2, "b": 3, "updateMulti": True, "updateMany": True, "bulkWriteUpdateMany": True}
    assert list(c.find().sort("_id", 1)) == [first, second]
    post = value(c, query={"_id": 1}, update=[{"$set": {"findAndModify": True}}], new=True)
    assert post == {**first, "findAndModify": True}
    post = c.find_one_and_update({"_id": 1}, [{"$set": {"findOneAndUpdate": True}}],
                                 return_document=ReturnDocument.AFTER)
    assert post == {**first, "findAndModify": True, "findOneAndUpdate": True}
    with pytest.raises((ValueError, TypeError)):
        c.replace_one({"_id": 1}, [{"$replaceWith": {}}])


# --------------------------------------------------------------------------------------------------
# findAndModify's safeBool options (write_ops.idl: remove, upsert, new, bypassDocumentValidation)
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("field", ["remove", "upsert", "new", "bypassDocumentValidation"])
@pytest.mark.parametrize("bad", ["yes", [True], {"x": 1}], ids=["string", "array", "object"])
def test_find_and_modify_flags_of_a_non_numeric_type_are_type_mismatch(db, field, bad):
    """findAndModify's flags are IDL safeBools (find_and_modify.js passes them as plain shell values):
    a bool or any number; another type is 14 naming the field and the types it takes."""
    db.c.insert_one({"_id": 0})
    error = command_fails(db, {"findAndModify": "c", "query": {}, "update": {"$set": {"x": 1}}, field: bad},
                          TYPE_MISMATCH)
    kind = {str: "string", list: "array", dict: "object"}[type(bad)]
    assert error.details["errmsg"] == (f"BSON field 'findAndModify.{field}' is the wrong type '{kind}', expected types "
                                       "'[bool, long, int, decimal, double]'")
    assert only(db.c) == {"_id": 0}


@pytest.mark.parametrize("flag, returns_new", [
    (1, True), (Int64(0), False), (0.5, True), (float("nan"), True), (Decimal128("0"), False),
    (Decimal128("-0.0"), False), (Decimal128("2"), True),
], ids=repr)
def test_find_and_modify_numeric_new_is_its_truth(db, flag, returns_new):
    """A number as ``new`` means its truth (mongod's trueValue: zero is false, NaN true)."""
    db.c.insert_one({"_id": 0, "i": 0})
    assert value(db.c, query={"_id": 0}, update={"$inc": {"i": 1}}, new=flag)["i"] == (1 if returns_new else 0)


def test_find_and_modify_numeric_remove_and_upsert(db):
    """``remove: 1`` removes; ``remove: 0`` with an update updates; ``upsert: NumberDecimal(1)`` upserts,
    ``upsert: NumberDecimal(0)`` does not; ``remove: 1`` with ``upsert: 0.0`` is allowed."""
    c = db.c
    c.insert_many([{"_id": 0}, {"_id": 1}])
    assert value(c, query={"_id": 0}, remove=1) == {"_id": 0}
    assert value(c, query={"_id": 1}, remove=0, update={"$set": {"x": 1}}, new=True) == {"_id": 1, "x": 1}
    assert value(c, query={"_id": 2}, update={"$set": {"x": 2}}, upsert=Decimal128("0")) is None
    assert c.count_documents({"_id": 2}) == 0
    assert value(c, query={"_id": 2}, update={"$set": {"x": 2}}, upsert=Decimal128("1"), new=True) == {"_id": 2, "x": 2}
    assert value(c, query={"_id": 2}, remove=1, upsert=0.0) == {"_id": 2, "x": 2}
    error = command_fails(db, {"findAndModify": "c", "query": {}, "remove": 1, "upsert": Int64(1)}, FAILED_TO_PARSE)
    assert error.details["errmsg"] == "Cannot specify both upsert=true and remove=true "


# --------------------------------------------------------------------------------------------------
# older jstests/core names: inc-SERVER-7446.js, pop_server_13516.js, update_server-12848.js,
# upsert2.js, upsert3.js
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("start, by, expected", [(2**31 - 1, 1, Int64(2**31)), (-(2**31), -1, Int64(-(2**31) - 1))],
                         ids=["overflow", "underflow"])
def test_int32_inc_past_its_range_becomes_int64(db, start, by, expected):
    """inc-SERVER-7446.js: an int32 incremented past its range becomes an int64."""
    db.c.insert_one({"_id": 0, "a": start})
    assert ok(update(db.c, {}, {"$inc": {"a": by}}))["n"] == 1
    assert canon(only(db.c)["a"]) == canon(expected)


@pytest.mark.parametrize("start, by", [(Int64(2**63 - 1), 1), (Int64(-(2**63)), -1)], ids=["overflow", "underflow"])
def test_int64_inc_past_its_range_fails(db, start, by):
    """inc-SERVER-7446.js: an int64 incremented past its range is a write error (2) and changes nothing."""
    db.c.insert_one({"_id": 0, "a": start})
    error = write_error(update(db.c, {}, {"$inc": {"a": by}}), BAD_VALUE)
    assert error["errmsg"] == (f"Failed to apply $inc operations to current value ((NumberLong){int(start)}) for "
                               "document {_id: 0}")
    assert canon(only(db.c)["a"]) == canon(start)


def test_pop_first_of_a_long_array(db):
    """pop_server_13516.js (SERVER-13516): ``$pop: -1`` of a 4096-element array leaves 4095."""
    db.c.insert_one({"_id": 0, "data": [0] * 4096})
    ok(update(db.c, {"_id": 0}, {"$pop": {"data": -1}}))
    assert len(only(db.c)["data"]) == 4095


def test_add_to_set_into_a_nested_array_element(db):
    """update_server-12848.js (SERVER-12848): ``$addToSet`` into ``a.1``, an array inside an array."""
    db.c.insert_one({"_id": 1, "a": [1, []]})
    ok(update(db.c, {"_id": 1}, {"$addToSet": {"a.1": 1}}))
    assert only(db.c) == {"_id": 1, "a": [1, [1]]}


@pytest.mark.parametrize("q, u, a", [
    ({"a": {"$not": {"$lt": 1}}}, {"$set": {"b": 1}}, None),
    ({"a": {"$not": {"$elemMatch": {"a": 1}}}}, {"$set": {"b": 1}}, None),
    ({"a": {"$not": {"$elemMatch": {"a": 1}}}}, {"$push": {"a": {"b": 1, "c": 0}}}, [{"b": 1, "c": 0}]),
], ids=["not_lt", "not_elem_match", "not_elem_match_push"])
def test_upsert_ignores_not_conditions(db, q, u, a):
    """upsert2.js (SERVER-8178): a ``$not`` condition adds no field to the upserted document, so
    ``$push`` can create ``a``."""
    ok(update(db.c, q, u, upsert=True))
    assert only(db.c).get("a") == a


@pytest.mark.parametrize("q, message", [
    ({"a.b": 1, "a": {"a": 1, "b": 1}}, "cannot infer query fields to set, both paths 'a.b' and 'a' are matched"),
    ({"_id.a": 1, "_id": {"a": 1, "b": 1}}, "cannot infer query fields to set, both paths '_id.a' and '_id' are matched"),
    ({"_id": {"a": 1, "b": 1}, "_id.a": 1}, "cannot infer query fields to set, both paths '_id' and '_id.a' are matched"),
    ({"a": {}, "a.c": 2}, "cannot infer query fields to set, both paths 'a' and 'a.c' are matched"),
    ({"a": {"b": 1}, "a.c": 1}, "cannot infer query fields to set, both paths 'a' and 'a.c' are matched"),
], ids=["a.b_then_a", "_id.a_then__id", "_id_then__id.a", "empty_a_then_a.c", "a_then_a.c"])
def test_upsert_of_overlapping_equalities_fails(db, q, message):
    """upsert3.js (SERVER-11363, SERVER-11514, SERVER-4830): an operator upsert whose query has
    equalities on a path and on its prefix cannot build the document (54), also with ``$setOnInsert``."""
    for u in ({"$inc": {"y": 1}}, {"$setOnInsert": {"y": 1}}):
        error = write_error(update(db.c, q, u, upsert=True), 54)
        assert error["errmsg"] == message
    assert db.c.count_documents({}) == 0


def test_replacement_upsert_ignores_overlapping_non_id_equalities(db):
    """upsert3.js: a replacement upsert takes only ``_id`` from the query, so overlapping equalities on
    other paths do not matter."""
    ok(update(db.c, {"r": {"a": 1, "b": 1}, "r.a": 1}, {"y": 1}, upsert=True))
    got = only(db.c)
    del got["_id"]
    assert got == {"y": 1}


# --------------------------------------------------------------------------------------------------
# update_dbref.js's cause, beyond its own cases: a stored DBRef is a document to every update path
# --------------------------------------------------------------------------------------------------

def test_update_paths_enter_stored_dbrefs(db):
    """update_dbref.js: the server treats a ``{$ref, $id}`` subdocument as a document: ``$inc`` of
    ``$id``, ``$unset`` of ``$db``, ``$set`` of an equal DBRef (a no-op), an arrayFilters update of an
    array in its extra field, and findAndModify's new document."""
    c = db.c
    c.insert_one({"_id": 1, "a": DBRef("c", 1, "db", arr=[1, 2])})
    ok(update(c, {}, {"$inc": {"a.$id": 1}}))
    ok(update(c, {}, {"$unset": {"a.$db": 1}}))
    assert only(c)["a"] == DBRef("c", 2, arr=[1, 2])
    assert ok(update(c, {}, {"$set": {"a": DBRef("c", 2, arr=[1, 2])}}))["nModified"] == 0
    ok(update(c, {}, {"$set": {"a.arr.$[i]": 5}}, arrayFilters=[{"i": 2}]))
    assert only(c)["a"] == DBRef("c", 2, arr=[1, 5])
    ret = value(c, query={}, update={"$set": {"a.$ref": "d"}, "$push": {"a.arr": 9}}, new=True)
    assert ret == {"_id": 1, "a": DBRef("d", 2, arr=[1, 5, 9])}


def test_a_dbref_shaped_update_is_an_unknown_modifier(db):
    """``u: {$ref: "c", $id: 1}`` is an operator-style update naming the modifier ``$ref``: a 9 write
    error (the command itself parses), as for any unknown modifier."""
    db.c.insert_one({"_id": 0})
    error = write_error(update(db.c, {}, DBRef("c", 1)), FAILED_TO_PARSE)
    assert error["errmsg"] == ("Unknown modifier: $ref. Expected a valid update modifier or pipeline-style update "
                               "specified as an array")
