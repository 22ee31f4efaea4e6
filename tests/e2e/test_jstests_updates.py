"""MongoDB's update-operator and update-command jstests ported to pymongo against a real Tidemark
server: the documents an update leaves (and their field/element order where the jstest checks it),
``n`` / ``nModified`` / ``upserted``, findAndModify's reply and the error codes of malformed updates.

Ported from mongodb/mongo with MongoDB 7.0's behaviour as the reference (a jstest rewritten for later
semantics is ported with the 7.0 answer; one needing FCV 7.3, upsert_fields_duplicate_or.js, is left
out). Shard, replication, explain, metrics and failpoint parts are left out.

- ``jstests/core/query/update/`` (older copies in ``jstests/core/write/update/``): update_arrayFilters,
  update_modifier_pop, update_mul_examples, update_min_max_examples, update_bit_examples,
  update_setOnInsert, update_set_unset (updatea), update_inc_special_values, upsert_fields,
  update_with_pipeline, update_addToSet, update_addToSet2, update_addToSet3,
  update_positional_no_array_elem (updatel), verify_update_mods, upsert_and, upsert_nor,
  update_numeric_field_name, update_dollar_fields (updateh), update_currentdate_examples,
  update_push_numeric_subfield (update9), update_find_and_modify_id, update_inc_create_embedded_field
  (update6), update_nested_arr_idx, update_mod_dotted (update3), update_arraymatch3, update_arraymatch5,
  update_arraymatch6, update_arraymatch7, update_arraymatch8, update_array_offset_positional,
  update_multi5, update_multi_upsert_fails, update_fail_halts_modifications (updatej),
  update_guarantee_id (updatem), update_invalid1, update_positional_inc, update_blank1, updateg,
  updatek, update_numeric_eq_strings, update2, update5, collation_update,
  batch_write_command_update, upsert_by_id, update_hint, update_set_large_numeric_field,
  update_upsert_add_filter, update_dbref, update_array_many_elements,
  update_validation_skip_field_names, update_options_object, update_multi4, update_multi7 (update7),
  update_arraymatch1, update_arraymatch2
- ``jstests/core/query/push/``: push, push2, push_sort; ``.../pull/``: pull, pull2, pull_or,
  pull_remove1, pullall, pullall2; ``.../set/``: set4, set5, set6, set7, set_type_change;
  ``.../inc/``: inc3, inc_negative_overflow; ``.../rename/``: rename_operator,
  rename_operator_change_target_type, rename_operator_missing_source
- ``jstests/core/write/find_and_modify/``: find_and_modify, find_and_modify2, find_and_modify3,
  find_and_modify4, find_and_modify_where, find_and_modify_hint,
  find_and_modify_server6254, _server6659, _server6909, _server6993, _server7660,
  find_and_modify_empty_update, find_and_modify_pipeline_update, find_and_modify_invalid_query_params

The shell's plain numbers are doubles; where a result type matters (``$bit``, ``$inc``), int32/int64
are sent explicitly. Hypothesis checks operators against reference models where the jstest states an
invariant over structured inputs: ``$push`` modifiers, SafeNum typing and overflow of ``$inc``/``$mul``,
``$pop``, and upsert_by_id's property over integers.
"""

from __future__ import annotations

import datetime as dt
import functools
import math

import pytest
from bson import Int64, ObjectId, Regex, Timestamp
from bson.dbref import DBRef
from harness.jstests import canon
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo import ReturnDocument
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("update", "findAndModify", "insert", "find", "delete", "drop", "create",
                                  "createIndexes")

BAD_VALUE = 2
FAILED_TO_PARSE = 9
TYPE_MISMATCH = 14
IMMUTABLE_FIELD = 66
PATH_NOT_VIABLE = 28
CONFLICTING_UPDATE_OPERATORS = 40
NOT_SINGLE_VALUE_FIELD = 54
QUERY_FEATURE_NOT_ALLOWED = 224
INVALID_ID_FIELD = 53

# (no known differences from MongoDB 7.0 left here: a stored DBRef is now a document to update paths)


# --------------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------------

def update(coll, q, u, **options) -> dict:
    """The ``update`` command with one statement; the reply (write errors included, not raised)."""
    statement = {"q": q, "u": u, **options}
    return coll.database.command("update", coll.name, updates=[statement])


def ok(reply: dict) -> dict:
    assert "writeErrors" not in reply, reply
    return reply


def write_error(reply: dict, *codes) -> dict:
    """The reply's single write error (its code one of ``codes`` when given)."""
    errors = reply.get("writeErrors")
    assert errors, f"expected a write error, got {reply}"
    error = errors[0]
    if codes:
        assert error["code"] in codes, error
    return error


def upserted_doc(coll, q, u) -> dict:
    """The jstests' ``upsertedField`` helper: a fresh collection, an upsert, the one document."""
    coll.drop()
    ok(update(coll, q, u, upsert=True))
    docs = list(coll.find())
    assert len(docs) == 1, docs
    return docs[0]


def fam(coll, **fields) -> dict:
    """The findAndModify command's whole reply."""
    return coll.database.command("findAndModify", coll.name, **fields)


def fam_fails(coll, *codes, **fields) -> OperationFailure:
    with pytest.raises(OperationFailure) as info:
        fam(coll, **fields)
    if codes:
        assert info.value.code in codes, info.value.details
    return info.value


def one(coll, q=None) -> dict:
    return coll.find_one(q or {})


def same(a, b) -> bool:
    """Type-exact equality (``1 == 1.0 == True`` in Python, not in BSON)."""
    return canon(a) == canon(b)


# --------------------------------------------------------------------------------------------------
# update_modifier_pop.js
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("arg", [0.0, -2.0, 2.5, 1.1, {"b": 1.0}], ids=repr)
def test_pop_argument_other_than_one_or_minus_one_fails_to_parse(db, arg):
    """update_modifier_pop.js: ``$pop`` with 0, -2, 2.5, 1.1 or an object is 9 FailedToParse."""
    db.c.insert_one({"_id": 0})
    write_error(update(db.c, {"_id": 0}, {"$pop": {"a.b": arg}}), FAILED_TO_PARSE)


@pytest.mark.parametrize("doc", [{"_id": 0}, {"_id": 0, "a": {"c": 1.0}}, {"_id": 0, "a": {"b": []}},
                                 {"_id": 0, "a": [{"b": 0.0}, {"b": 1.0}]}], ids=str)
def test_pop_is_a_no_op_on_missing_partial_or_empty_paths(db, doc):
    """update_modifier_pop.js: ``$pop`` of a missing path, a partially existing path, an empty array
    or a missing array element matches the document but modifies nothing."""
    db.c.insert_one(doc)
    path = "a.2.b" if isinstance(doc.get("a"), list) else "a.b"
    reply = ok(update(db.c, {"_id": 0}, {"$pop": {path: 1.0}}))
    assert (reply["n"], reply["nModified"]) == (1, 0)
    assert one(db.c) == doc


@pytest.mark.parametrize("doc, path, code, message", [
    ({"a": {"b": 1.0}}, "a.b.c", PATH_NOT_VIABLE, "Cannot use the part (c) of (a.b.c) to traverse the element ({b: 1.0})"),
    ({"a": {"b": [1.0, 2.0]}}, "a.b.c", PATH_NOT_VIABLE,
     "Cannot use the part (c) of (a.b.c) to traverse the element ({b: [ 1.0, 2.0 ]})"),
    ({"a": {"b": {"c": 1.0}}}, "a.b", TYPE_MISMATCH, "Path 'a.b' contains an element of non-array type 'object'"),
], ids=["scalar", "array", "object"])
def test_pop_fails_when_blocked_or_not_an_array(db, doc, path, code, message):
    """update_modifier_pop.js: ``$pop`` fails when the path is blocked by a scalar or an array (28
    PathNotViable: it never creates a path, but a path it could not create is an error), or names a
    non-array value (14, naming the whole path)."""
    db.c.insert_one({"_id": 0, **doc})
    error = write_error(update(db.c, {"_id": 0}, {"$pop": {path: 1.0}}), code)
    assert error["errmsg"] == message
    assert one(db.c) == {"_id": 0, **doc}


def test_pop_from_either_end_with_positional_array_filters_and_nested_arrays(db):
    """update_modifier_pop.js: pops from the end (1) and the beginning (-1), through ``a.$.b``,
    through ``a.$[i].b`` with arrayFilters and from a nested array ``a.1``."""
    c = db.c
    c.insert_one({"_id": 0, "a": {"b": [1, 2, 3]}})
    reply = ok(update(c, {"_id": 0}, {"$pop": {"a.b": 1.0}}))
    assert (reply["n"], reply["nModified"]) == (1, 1)
    assert one(c) == {"_id": 0, "a": {"b": [1, 2]}}
    ok(update(c, {"_id": 0}, {"$pop": {"a.b": -1.0}}))
    assert one(c) == {"_id": 0, "a": {"b": [2]}}
    c.delete_many({})
    c.insert_one({"_id": 0, "a": [{"b": [1, 2, 3]}, {"b": [4, 5, 6]}]})
    ok(update(c, {"_id": 0, "a.b": 5}, {"$pop": {"a.$.b": 1.0}}))
    assert one(c) == {"_id": 0, "a": [{"b": [1, 2, 3]}, {"b": [4, 5]}]}
    c.delete_many({})
    c.insert_one({"_id": 0, "a": [{"b": [1, 2]}, {"b": [4, 5]}, {"b": [2, 3]}]})
    ok(update(c, {"_id": 0}, {"$pop": {"a.$[i].b": -1.0}}, arrayFilters=[{"i.b": 2}]))
    assert one(c) == {"_id": 0, "a": [{"b": [2]}, {"b": [4, 5]}, {"b": [3]}]}
    c.delete_many({})
    c.insert_one({"_id": 0, "a": [1, [2, 3, 4]]})
    ok(update(c, {"_id": 0}, {"$pop": {"a.1": 1.0}}))
    assert one(c) == {"_id": 0, "a": [1, [2, 3]]}


# --------------------------------------------------------------------------------------------------
# update_mul_examples.js, update_inc_special_values.js, update_set_unset.js
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("factor, expected", [(10.0, 20.0), (-10.0, -20.0), (0.0, 0.0), (1.1, 2.2),
                                              (-0.1, -0.2)], ids=repr)
def test_mul_examples(db, factor, expected):
    """update_mul_examples.js: ``$mul`` by a positive, negative, zero, fractional factor."""
    db.c.insert_one({"_id": 1, "a": 2.0})
    ok(update(db.c, {}, {"$mul": {"a": factor}}))
    assert one(db.c)["a"] == pytest.approx(expected)


INF = float("inf")
NAN = float("nan")


@pytest.mark.parametrize("initial, inc, expected", [
    (10.0, NAN, NAN), (NAN, 5.0, NAN), (NAN, NAN, NAN), (NAN, INF, NAN), (INF, 10.0, INF), (-INF, 10.0, -INF),
    (INF, -INF, NAN), (-INF, INF, NAN), (10.0, -INF, -INF), (-INF, 100.0, -INF),
], ids=repr)
def test_inc_special_values(db, initial, inc, expected):
    """update_inc_special_values.js: ``$inc`` with NaN and ±Infinity follows IEEE addition."""
    db.c.insert_one({"value": initial})
    ok(update(db.c, {}, {"$inc": {"value": inc}}))
    got = one(db.c)["value"]
    assert (math.isnan(got) if math.isnan(expected) else got == expected), got


def test_set_unset_inc_push_through_array_indexes(db):
    """update_set_unset.js: ``$set``/``$unset``/``$inc``/``$push`` on numeric path components of an
    array (``a.0.x``, ``a.1.z`` new, ``a.1.y`` removed, ``a.10``), and ``$inc`` creating a field next
    to a longer-named one (SERVER-3218)."""
    c = db.c
    c.insert_one({"_id": 1, "a": [{"x": 1, "y": 2}, {"x": 10, "y": 11}]})
    ok(update(c, {}, {"$set": {"a.0.x": 3}}))
    ok(update(c, {}, {"$set": {"a.1.z": 17}}))
    ok(update(c, {}, {"$unset": {"a.1.y": 1}}))
    assert one(c) == {"_id": 1, "a": [{"x": 3, "y": 2}, {"x": 10, "z": 17}]}
    c.drop()
    c.insert_one({"_id": 1, "comments": [{"name": "blah", "rate_up": 0, "rate_ups": []}]})
    ok(update(c, {}, {"$inc": {"comments.0.rate_up": 1}, "$push": {"comments.0.rate_ups": 99}}))
    assert one(c) == {"_id": 1, "comments": [{"name": "blah", "rate_up": 1, "rate_ups": [99]}]}
    c.drop()
    c.insert_one({"_id": 1, "a": list(range(12))})
    ok(update(c, {}, {"$inc": {"a.0": 1}}))
    ok(update(c, {}, {"$inc": {"a.10": 1}}))
    assert one(c)["a"] == [1, *range(1, 10), 11, 11]
    c.drop()
    c.insert_one({"a": {"c00": 1}, "c": 2})
    ok(update(c, {"c": 2}, {"$inc": {"a.c000": 1}}))
    assert one(c)["a"] == {"c00": 1, "c000": 1}


# --------------------------------------------------------------------------------------------------
# update_min_max_examples.js
# --------------------------------------------------------------------------------------------------

def test_min_max_examples(db):
    """update_min_max_examples.js: ``$min``/``$max`` on numbers, dates (one ms apart), tiny doubles and
    through the positional ``$`` (an element whose ``a`` is an array is left alone)."""
    c = db.c
    c.insert_many([{"_id": 1, "a": 2.0}, {"_id": 2, "a": 2.0}])
    ok(update(c, {"_id": 1}, {"$min": {"a": 1.0}}))
    ok(update(c, {"_id": 2}, {"$max": {"a": 1.0}}))
    assert [d["a"] for d in c.find().sort("_id", 1)] == [1.0, 2.0]
    date = dt.datetime(2022, 8, 11, 12, 29, 31, 757000)
    later = date + dt.timedelta(milliseconds=2)
    c.insert_many([{"_id": 3, "a": date}, {"_id": 4, "a": date}])
    ok(update(c, {"_id": 3}, {"$min": {"a": later}}))
    ok(update(c, {"_id": 4}, {"$max": {"a": later}}))
    assert one(c, {"_id": 3})["a"] == date and one(c, {"_id": 4})["a"] == later
    bigger = 0.000000000000001000000000000001
    c.insert_many([{"_id": 5, "a": 1e-15}, {"_id": 6, "a": bigger}])
    ok(update(c, {"_id": 5}, {"$max": {"a": bigger}}))
    ok(update(c, {"_id": 6}, {"$min": {"a": 1e-15}}))
    assert one(c, {"_id": 5})["a"] == bigger and one(c, {"_id": 6})["a"] == 1e-15
    for _id, op, value in ((7, "$max", 7.0), (8, "$min", 5.0)):
        c.insert_one({"_id": _id, "y": [{"a": 2.0}, {"a": 6.0}, {"a": [9.0, 1.0, 1.0]}]})
        ok(update(c, {"_id": _id, "y.a": 6.0}, {op: {"y.$.a": value}}))
        assert one(c, {"_id": _id}) == {"_id": _id, "y": [{"a": 2.0}, {"a": value}, {"a": [9.0, 1.0, 1.0]}]}


# --------------------------------------------------------------------------------------------------
# update_bit_examples.js
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("start, how, mask, expected", [(2, "and", 4, 0), (2, "or", 4, 6), (0, "xor", 4, 4)])
def test_bit_examples(db, start, how, mask, expected):
    """update_bit_examples.js: ``$bit`` and/or/xor of int32s stays an int32."""
    db.c.insert_one({"_id": 1, "a": start})
    ok(update(db.c, {}, {"$bit": {"a": {how: mask}}}))
    assert same(one(db.c)["a"], expected)


def test_bit_empty_operation_fails_and_padding_past_the_end(db):
    """update_bit_examples.js: ``$bit: {a: {}}`` is a write error (SERVER-19706); ``$bit`` on
    ``a.9``/``a.10`` of a one-element array pads it with nulls."""
    db.c.insert_one({"_id": 1, "a": 1})
    write_error(update(db.c, {}, {"$bit": {"a": {}}}), BAD_VALUE)
    db.c.insert_one({"_id": 2, "a": [0]})
    ok(update(db.c, {"_id": 2}, {"$bit": {"a.9": {"or": 0}, "a.10": {"or": 0}}}))
    assert one(db.c, {"_id": 2})["a"] == [0, None, None, None, None, None, None, None, None, 0, 0]


# --------------------------------------------------------------------------------------------------
# update_setOnInsert.js
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("indexed", [False, True], ids=["no_index", "index_a"])
def test_set_on_insert_applies_only_when_inserting(db, indexed):
    """update_setOnInsert.js: an upsert that inserts applies ``$setOnInsert`` (and sets ``_id`` from the
    query); a later upsert that matches ignores it."""
    c = db.c
    if indexed:
        c.create_index("a")
    ok(update(c, {"_id": 5}, {"$inc": {"x": 2.0}, "$setOnInsert": {"a": 3.0}}, upsert=True))
    assert one(c) == {"_id": 5, "a": 3.0, "x": 2.0}
    ok(update(c, {"_id": 5}, {"$set": {"a": 4.0}}, upsert=True))
    ok(update(c, {"_id": 5}, {"$inc": {"x": 2.0}, "$setOnInsert": {"a": 3.0}}, upsert=True))
    assert one(c) == {"_id": 5, "a": 4.0, "x": 4.0}


@pytest.mark.parametrize("q, u", [
    ({"_id": 1}, {"$setOnInsert": {"_id.a": dt.datetime(2020, 1, 1)}}),
    ({"_id.a": 4}, {"$setOnInsert": {"_id.b": 1}}),
    ({"_id.a": 4}, {"$setOnInsert": {"_id": {"a": 4, "b": 1}}}),
], ids=["set_id_a", "set_id_b", "replace_id"])
def test_set_on_insert_cannot_change_the_id_the_query_fixed(db, q, u):
    """update_setOnInsert.js (SERVER-9958): ``$setOnInsert`` may not alter an ``_id`` the query fixed."""
    write_error(update(db.c, q, u, upsert=True))
    assert db.c.count_documents({}) == 0


# --------------------------------------------------------------------------------------------------
# update_arrayFilters.js
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("filters, code, fragment", [
    ([{"i": 0, "j": 0}], FAILED_TO_PARSE, "Expected a single top-level field name"),
    ([{"$alwaysTrue": 1}], FAILED_TO_PARSE, "Cannot use an expression without a top-level field name in arrayFilters"),
    ([{"$text": {"$search": "foo"}}], BAD_VALUE, None),
    ([{"$where": "this.a == 2"}], BAD_VALUE, None),
    ([{"$expr": {"$eq": ["$foo", "$bar"]}}], QUERY_FEATURE_NOT_ALLOWED, None),
    ([{"I": 0}], BAD_VALUE, "The top-level field name must be an alphanumeric string beginning with a lowercase "
                            "letter, found 'I'"),
], ids=["two_names", "no_name", "text", "where", "expr", "uppercase"])
def test_array_filter_parse_errors(db, filters, code, fragment):
    """update_arrayFilters.js: array filters with two top-level names, none, ``$text``, ``$where``,
    ``$expr`` or an identifier not starting with a lowercase letter fail the statement."""
    db.create_collection("c")
    path = "a.$[I]" if filters == [{"I": 0}] else "a.$[i]"
    error = write_error(update(db.c, {"_id": 0}, {"$set": {path: 5.0}}, arrayFilters=filters), code)
    if fragment:
        assert fragment in error["errmsg"]


def test_array_filter_duplicates_unused_and_missing_identifiers(db):
    """update_arrayFilters.js: two filters for one identifier (9), a filter no path uses (9, naming the
    update), a ``$[id]`` without a filter (2), ``$[id]`` in ``$rename`` (2) and a non-array
    ``arrayFilters`` (14)."""
    db.create_collection("c")
    c = db.c
    error = write_error(update(c, {"_id": 0}, {"$set": {"a.$[i]": 5.0, "a.$[j]": 6.0}},
                               arrayFilters=[{"i": 0}, {"j": 0}, {"i": 1}]), FAILED_TO_PARSE)
    assert "Found multiple array filters with the same top-level field name" in error["errmsg"]
    error = write_error(update(c, {"_id": 0}, {"$set": {"a.$[i]": 5.0}}, arrayFilters=[{"i": 0}, {"j": 0}]),
                        FAILED_TO_PARSE)
    assert "The array filter for identifier 'j' was not used in the update { $set: { a.$[i]: 5.0 } }" in error["errmsg"]
    error = write_error(update(c, {"id": 0}, {"$rename": {"a": "b"}}, arrayFilters=[{"i": 0}]), FAILED_TO_PARSE)
    assert "The array filter for identifier 'i' was not used in the update { $rename: { a: \"b\" } }" in error["errmsg"]
    error = write_error(update(c, {"_id": 0}, {"$set": {"a.$[i]": 0.0}}), BAD_VALUE)
    assert "No array filter found for identifier 'i' in path 'a.$[i]'" in error["errmsg"]
    with pytest.raises(OperationFailure) as info:
        update(c, {"_id": 0}, {"$set": {"a.$[i]": 5.0}}, arrayFilters={"i": 0})
    assert info.value.code == TYPE_MISMATCH
    with pytest.raises(OperationFailure) as info:
        update(c, {"_id": 0}, {"$set": {"a.$[i]": 5.0}}, arrayFilters=["bad"])
    assert info.value.code == TYPE_MISMATCH


def test_array_filters_that_parse_succeed_on_a_missing_document(db):
    """update_arrayFilters.js: good filters (also ``$or`` with an empty ``$and``) succeed; no document
    matches, so nothing is modified; findAndModify answers null."""
    db.create_collection("c")
    reply = ok(update(db.c, {"_id": 0}, {"$set": {"a.$[i]": 5.0, "a.$[j]": 6.0}}, arrayFilters=[{"i": 0}, {"j": 0}]))
    assert reply["nModified"] == 0
    ok(update(db.c, {"_id": 0}, {"$set": {"a.$[i]": 5.0}}, arrayFilters=[{"$or": [{"i": 0}, {"$and": [{}]}]}]))
    assert fam(db.c, query={"_id": 0}, update={"$set": {"a.$[i]": 5.0}}, arrayFilters=[{"i": 0}])["value"] is None
    assert db.c.find_one_and_update({"_id": 0}, {"$set": {"a.$[i]": 5.0}}, array_filters=[{"i": 0}]) is None


def test_find_and_modify_array_filter_errors(db):
    """update_arrayFilters.js: findAndModify refuses a non-array ``arrayFilters``, a non-object filter,
    ``arrayFilters`` with ``remove``, a bad filter and duplicate identifiers."""
    db.create_collection("c")
    c = db.c
    fam_fails(c, TYPE_MISMATCH, query={"_id": 0}, update={"$set": {"a.$[i]": 5.0}}, arrayFilters={"i": 0})
    fam_fails(c, TYPE_MISMATCH, query={"_id": 0}, update={"$set": {"a.$[i]": 5.0}}, arrayFilters=["bad"])
    fam_fails(c, query={"_id": 0}, remove=True, arrayFilters=[{"i": 0}])
    fam_fails(c, FAILED_TO_PARSE, query={"_id": 0}, update={"$set": {"a.$[i]": 5.0}}, arrayFilters=[{"i": 0, "j": 0}])
    fam_fails(c, FAILED_TO_PARSE, query={"_id": 0}, update={"$set": {"a.$[i]": 5.0, "a.$[j]": 6.0}},
              arrayFilters=[{"i": 0}, {"j": 0}, {"i": 1}])


# (start document, update, arrayFilters, document after) for each modifier, with $[i] then $[]
ARRAY_FILTER_MODIFIERS = [
    ([0, 1, 0, 1], {"$set": {"a.$[i]": 2}}, [{"i": 0}], [2, 1, 2, 1]),
    ([2, 1, 2, 1], {"$set": {"a.$[]": 3}}, None, [3, 3, 3, 3]),
    ([0, 1, 0, 1], {"$unset": {"a.$[i]": True}}, [{"i": 0}], [None, 1, None, 1]),
    ([None, 1, None, 1], {"$unset": {"a.$[]": True}}, None, [None, None, None, None]),
    ([0, 1, 0, 1], {"$inc": {"a.$[i]": 1}}, [{"i": 1}], [0, 2, 0, 2]),
    ([0, 1, 0, 1], {"$inc": {"a.$[]": 1}}, None, [1, 2, 1, 2]),
    ([0, 2, 0, 2], {"$mul": {"a.$[i]": 3}}, [{"i": 2}], [0, 6, 0, 6]),
    ([1, 2, 1, 2], {"$mul": {"a.$[]": 3}}, None, [3, 6, 3, 6]),
    ([{"b": 0, "c": 1}, {"b": 0, "c": -1}, {"b": 1, "c": 1}], {"$min": {"a.$[i].c": 0}}, [{"i.b": 0}],
     [{"b": 0, "c": 0}, {"b": 0, "c": -1}, {"b": 1, "c": 1}]),
    ([{"b": 0, "c": 0}, {"b": 0, "c": -1}, {"b": 1, "c": 1}], {"$min": {"a.$[].c": 0}}, None,
     [{"b": 0, "c": 0}, {"b": 0, "c": -1}, {"b": 1, "c": 0}]),
    ([{"b": 0, "c": 1}, {"b": 0, "c": -1}, {"b": 1, "c": -1}], {"$max": {"a.$[i].c": 0}}, [{"i.b": 0}],
     [{"b": 0, "c": 1}, {"b": 0, "c": 0}, {"b": 1, "c": -1}]),
    ([{"b": 0, "c": 1}, {"b": 0, "c": 0}, {"b": 1, "c": -1}], {"$max": {"a.$[].c": 0}}, None,
     [{"b": 0, "c": 1}, {"b": 0, "c": 0}, {"b": 1, "c": 0}]),
    ([[0], [1]], {"$addToSet": {"a.$[i]": 2}}, [{"i": 0}], [[0, 2], [1]]),
    ([[0], [1]], {"$addToSet": {"a.$[]": 2}}, None, [[0, 2], [1, 2]]),
    ([[0, 1], [1, 2]], {"$pop": {"a.$[i]": 1}}, [{"i": 0}], [[0], [1, 2]]),
    ([[0]], {"$pop": {"a.$[]": 1}}, None, [[]]),
    ([[0, 1, 2, 3], [1, 2, 3, 4]], {"$pullAll": {"a.$[i]": [0, 2]}}, [{"i": 0}], [[1, 3], [1, 2, 3, 4]]),
    ([[0, 1, 2, 3], [1, 2, 3, 4]], {"$pullAll": {"a.$[]": [0, 2]}}, None, [[1, 3], [1, 3, 4]]),
    ([[0, 1], [1, 2]], {"$pull": {"a.$[i]": 1}}, [{"i": 2}], [[0, 1], [2]]),
    ([[0, 1], [1, 2]], {"$pull": {"a.$[]": 1}}, None, [[0], [2]]),
    ([[0, 1], [2, 3]], {"$push": {"a.$[i]": 4}}, [{"i": 0}], [[0, 1, 4], [2, 3]]),
    ([[0, 1], [2, 3]], {"$push": {"a.$[]": 4}}, None, [[0, 1, 4], [2, 3, 4]]),
    ([0, 2], {"$bit": {"a.$[i]": {"or": 10}}}, [{"i": 0}], [10, 2]),
    ([0, 2], {"$bit": {"a.$[]": {"or": 10}}}, None, [10, 10]),
    ([{"b": 0}, {"b": 1}], {"$set": {"a.$[].b": 2}}, None, [{"b": 2}, {"b": 2}]),
    ([{"b": 0}, {"b": 1}], {"$set": {"a.$[i].b": 2}}, [{"i.b": 0}], [{"b": 2}, {"b": 1}]),
    ([[0, 1], [0, 1]], {"$set": {"a.$[].$[j]": 2}}, [{"j": 0}], [[2, 1], [2, 1]]),
    ([{"b": 0, "c": [{"d": 0}, {"d": 1}]}, {"b": 1, "c": [{"d": 0}, {"d": 1}]}], {"$set": {"a.$[i].c.$[j].d": 2}},
     [{"i.b": 0}, {"j.d": 0}], [{"b": 0, "c": [{"d": 2}, {"d": 1}]}, {"b": 1, "c": [{"d": 0}, {"d": 1}]}]),
    ([0, 1, 3], {"$set": {"a.$[i]": 2}}, [{"$or": [{"i": 0}, {"i": 3}]}], [2, 1, 2]),
]


@pytest.mark.parametrize("start, u, filters, expected", ARRAY_FILTER_MODIFIERS,
                         ids=[f"{next(iter(r[1]))}{next(iter(next(iter(r[1].values()))))}" for r in ARRAY_FILTER_MODIFIERS])
def test_array_filters_with_each_modifier(db, start, u, filters, expected):
    """update_arrayFilters.js: every modifier through ``$[<id>]`` (with its arrayFilters) and ``$[]``,
    nested ``$[]``/``$[j]`` and ``$[i].c.$[j]``, and a logical filter. Integers are int32 throughout
    (the jstest's ``NumberInt`` for ``$bit``)."""
    db.c.insert_one({"_id": 0, "a": start})
    options = {"arrayFilters": filters} if filters else {}
    ok(update(db.c, {"_id": 0}, u, **options))
    assert same(one(db.c), {"_id": 0, "a": expected})


def test_array_filters_with_set_on_insert_current_date_and_rename(db):
    """update_arrayFilters.js: ``$setOnInsert`` through ``$[i]``/``$[]`` on an upsert seeded with an array,
    ``$currentDate`` through ``$[i]``/``$[]``, ``$rename`` refusing dynamic paths."""
    c = db.c
    ok(update(c, {"_id": 0, "a": [0]}, {"$setOnInsert": {"a.$[i]": 1}}, arrayFilters=[{"i": 0}], upsert=True))
    assert one(c) == {"_id": 0, "a": [1]}
    c.drop()
    ok(update(c, {"_id": 0, "a": [0]}, {"$setOnInsert": {"a.$[]": 1}}, upsert=True))
    assert one(c) == {"_id": 0, "a": [1]}
    c.drop()
    c.insert_one({"_id": 0, "a": [0, 1]})
    ok(update(c, {"_id": 0}, {"$currentDate": {"a.$[i]": True}}, arrayFilters=[{"i": 0}]))
    doc = one(c)
    assert isinstance(doc["a"][0], dt.datetime) and doc["a"][1] == 1
    ok(update(c, {"_id": 0}, {"$currentDate": {"a.$[]": True}}))
    assert all(isinstance(v, dt.datetime) for v in one(c)["a"])
    c.drop()
    c.insert_one({"_id": 0, "a": [0], "b": [1]})
    for u, message in (({"a.$[i]": "b"}, "The source field for $rename may not be dynamic: a.$[i]"),
                       ({"a.$[]": "b"}, "The source field for $rename may not be dynamic: a.$[]"),
                       ({"a": "b.$[]"}, "The destination field for $rename may not be dynamic: b.$[]")):
        options = {"arrayFilters": [{"i": 0}]} if "$[i]" in str(u) else {}
        error = write_error(update(c, {"_id": 0}, {"$rename": u}, **options), BAD_VALUE)
        assert message in error["errmsg"]
    ok(update(c, {"_id": 0}, {"$rename": {"a": "b"}}))
    assert one(c) == {"_id": 0, "b": [0]}


def test_array_filters_multi_update_and_collation(db):
    """update_arrayFilters.js: a multi update applies the filters per document; the filters compare
    strings with the operation's collation and with the collection's default collation."""
    c = db.c
    c.insert_many([{"_id": 0, "a": [0, 1, 0, 1]}, {"_id": 1, "a": [0, 2, 0, 2]}])
    ok(update(c, {}, {"$set": {"a.$[i]": 3}}, multi=True, arrayFilters=[{"i": 0}]))
    assert list(c.find().sort("_id", 1)) == [{"_id": 0, "a": [3, 1, 3, 1]}, {"_id": 1, "a": [3, 2, 3, 2]}]
    ok(update(c, {}, {"$set": {"a.$[]": 3}}, multi=True))
    assert [d["a"] for d in c.find().sort("_id", 1)] == [[3, 3, 3, 3], [3, 3, 3, 3]]
    c.drop()
    c.insert_one({"_id": 0, "a": ["foo", "FOO"]})
    ok(update(c, {"_id": 0}, {"$set": {"a.$[i]": "bar"}}, arrayFilters=[{"i": "foo"}],
              collation={"locale": "en_US", "strength": 2}))
    assert one(c) == {"_id": 0, "a": ["bar", "bar"]}
    c.drop()
    db.create_collection("c", collation={"locale": "en_US", "strength": 2})
    c.insert_one({"_id": 0, "a": ["foo", "FOO"]})
    ok(update(c, {"_id": 0}, {"$set": {"a.$[i]": "bar"}}, arrayFilters=[{"i": "foo"}]))
    assert one(c) == {"_id": 0, "a": ["bar", "bar"]}


@pytest.mark.parametrize("u, message", [
    ({"a.$[i]": 0, "a.$": 0}, "Updating the path 'a.$' would create a conflict at 'a'"),
    ({"a.$[i]": 0, "a.0": 0}, "Updating the path 'a.0' would create a conflict at 'a'"),
    ({"a.$[i]": 0, "a.b": 0}, "Updating the path 'a.b' would create a conflict at 'a'"),
], ids=["positional", "index", "field"])
def test_array_filter_path_conflicts_with_positional_index_or_field(db, u, message):
    """update_arrayFilters.js: ``a.$[i]`` beside ``a.$``, ``a.0`` or ``a.b`` is 40 ConflictingUpdateOperators."""
    db.create_collection("c")
    error = write_error(update(db.c, {"_id": 0}, {"$set": u}, arrayFilters=[{"i": 0}]), CONFLICTING_UPDATE_OPERATORS)
    assert message in error["errmsg"]


def test_array_update_path_errors(db):
    """update_arrayFilters.js: an implicit array traversal ``a.b`` over an array of documents is 28
    (``Cannot create field 'b' in element {a: [ { b: 0.0 } ]}``); ``$[$i]`` is an unknown top-level
    operator (2); ``a.$[i.j]`` is not an identifier but a field that cannot be created (28)."""
    c = db.c
    c.insert_one({"_id": 0, "a": [{"b": 0.0}]})
    error = write_error(update(c, {"_id": 0}, {"$set": {"a.b": 1.0}}), PATH_NOT_VIABLE)
    assert "Cannot create field 'b' in element {a: [ { b: 0.0 } ]}" in error["errmsg"]
    c.drop()
    error = write_error(update(c, {"_id": 0}, {"$set": {"a.$[$i]": 1.0}}, arrayFilters=[{"$i": 0}]), BAD_VALUE)
    assert "unknown top level operator: $i" in error["errmsg"]
    c.insert_one({"_id": 0, "a": [0.0], "b": [{"j": 0.0}]})
    error = write_error(update(c, {"_id": 0}, {"$set": {"a.$[i.j]": 1.0, "b.$[i]": 1.0}}, arrayFilters=[{"i.j": 0}]),
                        PATH_NOT_VIABLE)
    assert "Cannot create field '$[i' in element {a: [ 0.0 ]}" in error["errmsg"]


def test_nested_array_update_conflict_detection(db):
    """update_arrayFilters.js: ``a.$[i].b.$[k].c`` and ``a.$[j].b.$[k].d`` never conflict;
    ``...c`` twice conflicts iff the filters select a common element (``Update created a conflict at
    'a.0.b.$[k].c'`` / ``'a.0.b.0.c'``)."""
    c = db.c
    c.insert_one({"_id": 0, "a": [{"x": 0, "b": [{"y": 0, "c": 0, "d": 0}]}]})
    ok(update(c, {"_id": 0}, {"$set": {"a.$[i].b.$[k].c": 1, "a.$[j].b.$[k].d": 1}},
              arrayFilters=[{"i.x": 0}, {"j.x": 0}, {"k.y": 0}]))
    assert one(c) == {"_id": 0, "a": [{"x": 0, "b": [{"y": 0, "c": 1, "d": 1}]}]}
    c.drop()
    c.insert_one({"_id": 0, "a": [{"x": 0, "b": [{"y": 0, "c": 0}]}, {"x": 1, "b": [{"y": 0, "c": 0}]}]})
    error = write_error(update(c, {"_id": 0}, {"$set": {"a.$[i].b.$[k].c": 1, "a.$[j].b.$[k].c": 2}},
                               arrayFilters=[{"i.x": 0}, {"j.x": 0}, {"k.y": 0}]), CONFLICTING_UPDATE_OPERATORS)
    assert "Update created a conflict at 'a.0.b.$[k].c'" in error["errmsg"]
    ok(update(c, {"_id": 0}, {"$set": {"a.$[i].b.$[k].c": 1, "a.$[j].b.$[k].c": 2}},
              arrayFilters=[{"i.x": 0}, {"j.x": 1}, {"k.y": 0}]))
    assert one(c)["a"] == [{"x": 0, "b": [{"y": 0, "c": 1}]}, {"x": 1, "b": [{"y": 0, "c": 2}]}]
    c.drop()
    c.insert_one({"_id": 0, "a": [{"x": 0, "b": [{"y": 0, "c": 0}]}, {"x": 1, "b": [{"y": 0, "c": 0}, {"y": 1, "c": 0}]}]})
    error = write_error(update(c, {"_id": 0}, {"$set": {"a.$[i].b.$[k].c": 1, "a.$[j].b.$[m].c": 2}},
                               arrayFilters=[{"i.x": 0}, {"j.x": 0}, {"k.y": 0}, {"m.y": 0}]),
                        CONFLICTING_UPDATE_OPERATORS)
    assert "Update created a conflict at 'a.0.b.0.c'" in error["errmsg"]
    ok(update(c, {"_id": 0}, {"$set": {"a.$[i].b.$[k].c": 1, "a.$[j].b.$[m].c": 2}},
              arrayFilters=[{"i.x": 1}, {"j.x": 1}, {"k.y": 0}, {"m.y": 1}]))
    assert one(c)["a"][1] == {"x": 1, "b": [{"y": 0, "c": 1}, {"y": 1, "c": 2}]}


# --------------------------------------------------------------------------------------------------
# upsert_fields.js
# --------------------------------------------------------------------------------------------------

EXPRS = [pytest.param({}, id="replacement"), pytest.param({"$set": {"a": 1}}, id="set"),
         pytest.param({"$setOnInsert": {"a": 1}}, id="setOnInsert")]


def test_upsert_generates_or_takes_the_id(db):
    """upsert_fields.js: an upsert with an empty query generates an ``_id`` (also beside other fields),
    or takes it from the update (replacement, ``$set``, ``$setOnInsert``)."""
    c = db.c
    for u in ({}, {"a": 1}, {"$set": {"a": 1}}, {"$setOnInsert": {"a": 1}}):
        doc = upserted_doc(c, {}, u)
        assert isinstance(doc["_id"], ObjectId)
        assert doc.get("a") == (None if u == {} else 1)
    for u in ({"_id": 1}, {"$set": {"_id": 1}}, {"$setOnInsert": {"_id": 1}}):
        assert upserted_doc(c, {}, u)["_id"] == 1


@pytest.mark.parametrize("u", [{"_id": [1, 2]}, {"$set": {"_id": [1, 2]}}, {"_id": Regex("abc")},
                               {"$set": {"_id": Regex("abc")}}], ids=["repl_array", "set_array", "repl_regex",
                                                                      "set_regex"])
def test_upsert_refuses_an_array_or_regex_id_from_the_update(db, u):
    """upsert_fields.js: an ``_id`` that is an array or a regex is a write error (53 InvalidIdField)."""
    write_error(update(db.c, {}, u, upsert=True), INVALID_ID_FIELD)
    assert db.c.count_documents({}) == 0


_ID_EXTRACTED = [{"_id": 1}, {"_id": {"$eq": 1}}, {"_id": {"$all": [1]}}, {"_id": {"$in": [1]}}, {"$and": [{"_id": 1}]},
                 {"$and": [{"_id": {"$eq": 1}}]}, {"$or": [{"_id": 1}]}, {"$or": [{"_id": {"$eq": 1}}]}]
_ID_NOT_EXTRACTED = [{"_id": {"$gt": 1}}, {"_id": {"$ne": 1}}, {"_id": {"$in": [1, 2]}}, {"_id": {"$elemMatch": {"$eq": 1}}},
                     {"_id": {"$exists": True}}, {"_id": {"$not": {"$eq": 1}}}, {"$or": [{"_id": {"$eq": 1}}, {"_id": 2}]},
                     {"$nor": [{"_id": 1}]}, {"$nor": [{"_id": {"$eq": 1}}]}, {"$nor": [{"_id": {"$eq": 1}}, {"_id": 1}]}]


@pytest.mark.parametrize("u", EXPRS)
@pytest.mark.parametrize("q", _ID_EXTRACTED, ids=str)
def test_upsert_takes_the_id_from_query_equalities(db, q, u):
    """upsert_fields.js: ``_id`` equalities (``$eq``, one-element ``$in``/``$all``, one-clause
    ``$and``/``$or``) seed the upserted document's ``_id``, for replacement and operator updates."""
    assert upserted_doc(db.c, q, u)["_id"] == 1


@pytest.mark.parametrize("u", EXPRS)
@pytest.mark.parametrize("q", _ID_NOT_EXTRACTED, ids=str)
def test_upsert_generates_the_id_for_non_equality_queries(db, q, u):
    """upsert_fields.js: ranges, ``$ne``, several ``$in`` values, ``$elemMatch``, ``$exists``, ``$not``,
    a two-clause ``$or`` and ``$nor`` do not seed ``_id``: it is generated."""
    assert isinstance(upserted_doc(db.c, q, u)["_id"], ObjectId)


@pytest.mark.parametrize("u", EXPRS)
@pytest.mark.parametrize("q", [{"_id": [1, 2]}, {"_id": {"$eq": [1, 2]}}, {"_id": {"$all": [1, 2]}},
                               {"$and": [{"_id": 1}, {"_id": 2}]}, {"$and": [{"_id": {"$eq": 1}}, {"_id": 2}]},
                               {"_id": 1, "_id.x": 1}, {"_id": {"x": 1}, "_id.x": 1}], ids=str)
def test_upsert_id_extraction_errors(db, q, u):
    """upsert_fields.js: an array ``_id`` from the query, two equalities on ``_id``, or ``_id`` beside
    ``_id.x`` fail the upsert, for replacement and operator updates alike."""
    write_error(update(db.c, q, u, upsert=True))
    assert db.c.count_documents({}) == 0


def test_upsert_nested_id_fields(db):
    """upsert_fields.js: ``{'_id.x': 1, '_id.y': 2}`` builds ``_id: {x: 1, y: 2}`` for operator updates
    (a replacement refuses it: test_upsert_replacement_refuses_dotted_id_paths)."""
    for u in ({"$set": {"a": 1}}, {"$setOnInsert": {"a": 1}}):
        assert upserted_doc(db.c, {"_id.x": 1, "_id.y": 2}, u)["_id"] == {"x": 1, "y": 2}


_X_EXTRACTED = [{"x": 1}, {"x": {"$eq": 1}}, {"x": {"$in": [1]}}, {"x": {"$all": [1]}}, {"$and": [{"x": 1}]},
                {"$and": [{"x": {"$eq": 1}}]}, {"$or": [{"x": 1}]}, {"$or": [{"x": {"$eq": 1}}]}]
_X_NOT_EXTRACTED = [{"x": {"$gt": 1}}, {"x": {"$ne": 1}}, {"x": {"$in": [1, 2]}}, {"x": {"$elemMatch": {"$eq": 1}}},
                    {"x": {"$exists": True}}, {"x": {"$not": {"$eq": 1}}}, {"$or": [{"x": {"$eq": 1}}, {"x": 2}]},
                    {"$nor": [{"x": 1}]}, {"$nor": [{"x": {"$eq": 1}}]}, {"$nor": [{"x": {"$eq": 1}}, {"x": 1}]}]


@pytest.mark.parametrize("u", EXPRS)
@pytest.mark.parametrize("q", _X_EXTRACTED, ids=str)
def test_upsert_seeds_fields_for_operator_updates_only(db, q, u):
    """upsert_fields.js: query equalities on a field seed an operator upsert's document; a replacement
    upsert keeps only the replacement (and ``_id``)."""
    doc = upserted_doc(db.c, q, u)
    assert doc.get("x") == (None if u == {} else 1)


@pytest.mark.parametrize("u", EXPRS)
def test_upsert_seeds_arrays_and_dotted_subdocuments(db, u):
    """upsert_fields.js: an array equality and an object with dotted field names are copied as they
    are (operator updates); ``'x.x': 1`` (``$eq``, ``$all: [1]``, under ``$and``/``$or``) builds
    ``x: {x: 1}``."""
    repl = u == {}
    assert upserted_doc(db.c, {"x": [1, 2]}, u).get("x") == (None if repl else [1, 2])
    for q in ({"x.x": 1}, {"x.x": {"$eq": 1}}, {"x.x": {"$all": [1]}}, {"$and": [{"x.x": 1}]},
              {"$and": [{"x.x": {"$eq": 1}}]}, {"$or": [{"x.x": 1}]}, {"$or": [{"x.x": {"$eq": 1}}]}):
        assert upserted_doc(db.c, q, u).get("x") == (None if repl else {"x": 1}), q


def test_upsert_seeds_a_subdocument_with_a_dotted_field_name(db):
    """upsert_fields.js: ``{x: {'x.x': 1}}`` is an equality with a document whose field name holds a
    dot: the operator upsert stores it as is."""
    assert upserted_doc(db.c, {"x": {"x.x": 1}}, {"$set": {"a": 1}})["x"] == {"x.x": 1}


@pytest.mark.parametrize("u", EXPRS)
@pytest.mark.parametrize("q", _X_NOT_EXTRACTED, ids=str)
def test_upsert_ignores_non_equality_fields(db, q, u):
    """upsert_fields.js: non-equality predicates do not seed the field."""
    assert "x" not in upserted_doc(db.c, q, u)


@pytest.mark.parametrize("q", [{"x": {"$all": [1, 2]}}, {"$and": [{"x": 1}, {"x": 2}]},
                               {"$and": [{"x": {"$eq": 1}}, {"x": 2}]}, {"x": 1, "x.x": 1}, {"x": {}, "x.x": 1},
                               {"x": {"x": 1}, "x.x": 1}, {"x": {"x": 1}, "x.y": 1}, {"x": [1, {"x": 1}], "x.x": 1}],
                         ids=str)
@pytest.mark.parametrize("u", EXPRS[1:])
def test_upsert_field_extraction_conflicts_fail_operator_updates(db, q, u):
    """upsert_fields.js: two equalities on one field, or a field beside one of its subpaths, fail an
    operator upsert (54 NotSingleValueField)."""
    write_error(update(db.c, q, u, upsert=True), NOT_SINGLE_VALUE_FIELD)


_REPLACEMENT_CONFLICTS = [{"x": {"$all": [1, 2]}}, {"$and": [{"x": 1}, {"x": 1}]}, {"$and": [{"x": {"$eq": 1}}, {"x": 2}]},
                          {"x": 1, "x.x": 1}, {"x": {}, "x.x": 1}, {"x": {"x": 1}, "x.x": 1}, {"x": {"x": 1}, "x.y": 1},
                          {"x": [1, {"x": 1}], "x.x": 1}, {"_id": 1, "x": [1, {"x": 1}], "x.x": 1}]


@pytest.mark.parametrize("q", [{"x": {"x.x": 1}}] + _REPLACEMENT_CONFLICTS, ids=str)
def test_upsert_replacement_ignores_field_conflicts(db, q):
    """upsert_fields.js: a replacement upsert ignores the query's fields, conflicting or not (only
    ``_id`` is taken): ``{_id: 1, x: [1, {x: 1}], 'x.x': 1}`` upserts ``{_id: 1}``."""
    doc = upserted_doc(db.c, q, {})
    assert "x" not in doc and (doc["_id"] == 1 if "_id" in q else isinstance(doc["_id"], ObjectId))


def test_upsert_replacement_refuses_dotted_id_paths(db):
    """upsert_fields.js: a replacement upsert needs ``_id`` whole: ``{'_id.x': 1, '_id.y': 2}`` is 111
    NotExactValueField."""
    error = write_error(update(db.c, {"_id.x": 1, "_id.y": 2}, {}, upsert=True), 111)
    assert error["errmsg"] == "field at '_id' must be exactly specified, field at sub-path '_id.x'found"


def test_upsert_regex_values_and_dbref(db):
    """upsert_fields.js: a regex in the update is a value; a regex in the query seeds nothing unless
    under ``$eq``; a DBRef set by ``$set`` next to an ``x.$id`` query equality (SERVER-14024)."""
    c = db.c
    assert upserted_doc(c, {}, {"x": Regex("abc")})["x"] == Regex("abc")
    assert upserted_doc(c, {}, {"$set": {"x": Regex("abc")}})["x"] == Regex("abc")
    assert upserted_doc(c, {"x": {"$eq": Regex("abc")}}, {"$set": {"a": 1}})["x"] == Regex("abc")
    assert "x" not in upserted_doc(c, {"x": Regex("abc")}, {"$set": {"a": 1}})
    assert not isinstance(upserted_doc(c, {"_id": Regex("abc")}, {})["_id"], Regex)
    assert upserted_doc(c, {"x.$id": 1}, {"$set": {"x": DBRef("a", 1)}})["x"] == DBRef("a", 1)


# --------------------------------------------------------------------------------------------------
# push_sort.js
# --------------------------------------------------------------------------------------------------

PUSH_SORT_CASES = [
    ([{"a": 1}, {"a": 2}], [{"a": 3}], -5, {"a": 1}, [{"a": 1}, {"a": 2}, {"a": 3}]),
    ([{"a": 1}, {"a": 3}], [{"a": 2}], -2, {"a": 1}, [{"a": 2}, {"a": 3}]),
    ([{"a": 1}, {"a": 3}], [{"a": 2}], -5, {"a": -1}, [{"a": 3}, {"a": 2}, {"a": 1}]),
    ([{"a": 1}, {"a": 3}], [{"a": 2}], -2, {"a": -1}, [{"a": 2}, {"a": 1}]),
    ([{"a": 1, "b": 2}, {"a": 3, "b": 1}], [{"a": 2, "b": 3}], -2, {"b": 1}, [{"a": 1, "b": 2}, {"a": 2, "b": 3}]),
    ([{"a": {"b": 2}}, {"a": {"b": 1}}], [{"a": {"b": 3}}], -5, {"a.b": 1},
     [{"a": {"b": 1}}, {"a": {"b": 2}}, {"a": {"b": 3}}]),
    ([{"a": {"b": 2}}, {"a": {"b": 1}}], [{"a": {"b": 3}}], -2, {"a.b": 1}, [{"a": {"b": 2}}, {"a": {"b": 3}}]),
]


@pytest.mark.parametrize("start, each, slice_, sort, expected", PUSH_SORT_CASES)
def test_push_each_sort_slice(db, start, each, slice_, sort, expected):
    """push_sort.js: ``$push`` with ``$each``, ``$sort`` (ascending, descending, on a subfield, on a
    dotted path) and a negative ``$slice`` too large or small enough to trim."""
    db.c.insert_one({"_id": 1, "x": start})
    ok(update(db.c, {"_id": 1}, {"$push": {"x": {"$each": each, "$slice": slice_, "$sort": sort}}}))
    assert one(db.c)["x"] == expected


def test_push_of_a_document_holding_sort_without_each_appends_it(db):
    """push_sort.js: ``{$push: {x: {$sort: {a: -1}}}}`` (no ``$each``) appends that document."""
    db.c.insert_one({"_id": 8, "x": [{"a": 1}, {"a": 2}]})
    ok(update(db.c, {"_id": 8}, {"$push": {"x": {"$sort": {"a": -1}}}}))
    assert one(db.c) == {"_id": 8, "x": [{"a": 1}, {"a": 2}, {"$sort": {"a": -1}}]}


@pytest.mark.parametrize("push, good", [
    ({"$each": [2], "$slice": -2, "$sort": {"a": 1}}, True),
    ({"$each": [{"a": 2}, 1], "$slice": -2, "$sort": {"a": 1}}, True),
    ({"$each": [{"a": 2}], "$slice": -2, "$sort": {}}, False),
    ({"$each": [{"a": 2}], "$slice": 2, "$sort": {"a": 1}}, True),
    ({"$each": [{"a": 2}], "$slice": -2.1, "$sort": {"a": 1}}, False),
    ({"$each": [{"a": 2}], "$slice": -2, "$sort": {"a": -2}}, False),
    ({"$each": [{"a": 2}], "$slice": -2, "$sort": 1}, True),
    ({"$each": [{"a": 2}], "$slice": -2, "$sort": {"a.": 1}}, False),
    ({"$each": [{"a": 2}], "$slice": -2, "$sort": {"": 1}}, False),
    ({"$each": [{"a": 2}], "$slice": -2, "$xxx": {"s": 1}}, False),
], ids=lambda v: str(v) if not isinstance(v, bool) else ("ok" if v else "bad"))
def test_push_modifier_validation(db, push, good):
    """push_sort.js: non-document ``$each`` elements and positive ``$slice`` are fine; an empty ``$sort``
    pattern, a fractional ``$slice``, a sort direction other than 1/-1, the key patterns ``'a.'`` and
    ``''`` and an unknown clause are 2 BadValue."""
    db.c.insert_one({"_id": 100, "x": [{"a": 1}]})
    reply = update(db.c, {"_id": 100}, {"$push": {"x": push}})
    if good:
        ok(reply)
    else:
        write_error(reply, BAD_VALUE)


def test_push_sort_on_existing_non_document_elements(db):
    """push_sort.js: existing elements need not be documents for a ``$sort`` on a field."""
    db.c.insert_one({"_id": 100, "x": [1, "foo"]})
    ok(update(db.c, {"_id": 100}, {"$push": {"x": {"$each": [{"a": 2}], "$slice": -2, "$sort": {"a": 1}}}}))
    assert len(one(db.c)["x"]) == 2


# --------------------------------------------------------------------------------------------------
# pull.js, pullall.js
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("op", ["$pull", "$pullAll"])
def test_pull_and_pull_all_basics(db, op):
    """pull.js / pullall.js: removing present values, absent values (no change), the last element;
    a dotted path that does not exist creates nothing (SERVER-6047)."""
    c = db.c
    arg = (lambda v: v) if op == "$pull" else (lambda v: [v])
    c.insert_one({"_id": 1, "a": [1, 2, 3]})
    ok(update(c, {}, {op: {"a": arg(2)}}))
    ok(update(c, {}, {op: {"a": arg(6)}}))
    ok(update(c, {}, {op: {"a": arg(2)}}))
    assert one(c)["a"] == [1, 3]
    c.drop()
    c.insert_one({"_id": 1, "a": [2]})
    ok(update(c, {}, {op: {"a": arg(2)}}))
    assert one(c)["a"] == []
    c.drop()
    c.insert_one({"_id": 1, "m": 1})
    reply = ok(update(c, {"m": 1}, {op: {"a.b": [1]}}))
    assert reply["nModified"] == 0
    ok(update(c, {"m": 1}, {op: {"x.y": [1]}}))
    assert one(c) == {"_id": 1, "m": 1}


def test_pull_all_several_values(db):
    """pullall.js: ``$pullAll`` of several values, of none, of present and absent ones."""
    c = db.c
    c.insert_one({"_id": 1, "a": [1, 2, 3]})
    ok(update(c, {}, {"$pullAll": {"a": [2, 3]}}))
    assert one(c)["a"] == [1]
    ok(update(c, {}, {"$pullAll": {"a": []}}))
    assert one(c)["a"] == [1]
    ok(update(c, {}, {"$pullAll": {"a": [1, 5]}}))
    assert one(c)["a"] == []


# --------------------------------------------------------------------------------------------------
# find_and_modify.js, find_and_modify_server6909.js, find_and_modify_empty_update.js
# --------------------------------------------------------------------------------------------------

def test_find_and_modify_queue_pattern(db):
    """find_and_modify.js: the pre-image by default and the post-image with ``new``, in sort order;
    ``fields`` with an expression applies to the returned image; ``remove`` (also ``remove: 1``) returns
    the removed document; no match answers ``value: null``."""
    c = db.c
    c.insert_many([{"priority": i, "inprogress": False, "value": 0} for i in range(1, 11)])
    out = c.find_one_and_update({}, {"$set": {"inprogress": True}, "$inc": {"value": 1}}, sort=[("priority", 1)])
    assert (out["value"], out["inprogress"]) == (0, False)
    c.update_one({"_id": out["_id"]}, {"$set": {"inprogress": False}})
    out = c.find_one_and_update({}, {"$set": {"inprogress": True}, "$inc": {"value": 1}}, sort=[("priority", 1)],
                                return_document=ReturnDocument.AFTER)
    assert (out["value"], out["inprogress"]) == (2, True)
    c.update_one({"_id": out["_id"]}, {"$set": {"inprogress": False}})
    for expected in (10, 9):
        out = c.find_one_and_update({"inprogress": False}, {"$set": {"inprogress": True}}, sort=[("priority", -1)])
        assert out["priority"] == expected
    fields = {"priority": 1, "inprogress": 1, "computedField": {"$add": ["$value", 2]}}
    out = fam(c, query={"inprogress": False}, sort={"priority": -1}, new=False,
              update={"$set": {"inprogress": True}, "$inc": {"value": 1}}, fields=fields)["value"]
    assert (out["priority"], out["inprogress"], out["computedField"]) == (8, False, 2)
    out = fam(c, query={"inprogress": False}, sort={"priority": -1}, new=True,
              update={"$set": {"inprogress": True}, "$inc": {"value": 1}}, fields=fields)["value"]
    assert (out["priority"], out["inprogress"], out["computedField"]) == (7, True, 3)
    assert fam(c, sort={"priority": 1}, remove=True)["value"]["priority"] == 1
    assert fam(c, sort={"priority": 1}, remove=1)["value"]["priority"] == 2
    assert fam(c, query={"no_such_field": 1}, remove=1)["value"] is None


@pytest.mark.parametrize("fields, message", [
    ({"query": {"x": 1}, "update": {"y": 2}, "remove": True}, "Cannot specify both an update and remove=true"),
    ({"query": {"x": 1}, "update": {"y": 2}, "remove": True, "sort": {"x": 1}},
     "Cannot specify both an update and remove=true"),
    ({"query": {"x": 1}, "update": {"y": 2}, "remove": True, "upsert": True}, "Cannot specify both an update and remove=true"),
    ({"query": {"x": 1}, "update": {"y": 2}, "new": True, "remove": True}, "Cannot specify both an update and remove=true"),
    ({"query": {"x": 1}, "upsert": True, "remove": True}, "Cannot specify both upsert=true and remove=true "),
    ({"query": {"x": 1}, "new": True, "remove": True},
     "Cannot specify both new=true and remove=true; 'remove' always returns the deleted document"),
    ({"query": {"x": 1}, "remove": True, "arrayFilters": [{"i": 0}]}, "Cannot specify arrayFilters and remove=true"),
    ({"query": {"x": 1}, "update": [{"$set": {"a": 1}}], "arrayFilters": [{"i": 0}]},
     "Cannot specify arrayFilters and a pipeline update"),
    ({"query": {"x": 1}}, "Either an update or remove=true must be specified"),
], ids=["update_remove", "with_sort", "with_upsert", "with_new", "upsert_remove", "new_remove", "array_filters_remove",
        "array_filters_pipeline", "neither"])
def test_find_and_modify_conflicting_options(db, fields, message):
    """find_and_modify.js (SERVER-16601), update_arrayFilters.js: conflicting findAndModify options are
    9 FailedToParse with mongod's message."""
    db.c.insert_one({"x": 1})
    error = fam_fails(db.c, FAILED_TO_PARSE, **fields)
    assert error.details["errmsg"] == message


@pytest.mark.parametrize("matched, upsert, new", [(False, True, True), (True, True, True), (True, False, True),
                                                  (True, True, False), (True, False, False)])
def test_find_and_modify_invalid_projection(db, matched, upsert, new):
    """find_and_modify.js (SERVER-17387): an invalid projection (``$pop`` is no projection operator)
    fails with 31325 whether the query matches, upserts, or returns the new image."""
    if matched:
        db.c.insert_one({"_id": "found"})
    fam_fails(db.c, 31325, query={"_id": "found" if matched else "miss"}, update={"$inc": {"y": 1}},
              fields={"foo": {"$pop": ["bar"]}}, upsert=upsert, new=new)


def test_find_and_modify_upsert_reply(db):
    """find_and_modify.js (SERVER-17372): an upsert without ``new`` answers ``value: null`` (present),
    with ``new`` the inserted document; both inserted; ``lastErrorObject`` tells it."""
    reply = fam(db.c, query={"_id": "miss"}, update={"$inc": {"y": 1}}, upsert=True)
    assert "value" in reply and reply["value"] is None
    assert reply["lastErrorObject"] == {"n": 1, "updatedExisting": False, "upserted": "miss"}
    reply = fam(db.c, query={"_id": "missagain"}, update={"$inc": {"y": 1}}, upsert=True, new=True)
    assert reply["value"] == {"_id": "missagain", "y": 1}
    assert db.c.count_documents({}) == 2
    reply = fam(db.c, query={"_id": "miss"}, update={"$inc": {"y": 1}})
    assert reply["lastErrorObject"] == {"n": 1, "updatedExisting": True}
    assert reply["value"] == {"_id": "miss", "y": 1}


@pytest.mark.parametrize("_id", [5, None])
def test_find_and_modify_new_image_after_the_query_stops_matching(db, _id):
    """find_and_modify_server6909.js: ``new: true`` returns the updated document even when the update
    makes the query no longer match (also with a null ``_id``)."""
    db.c.insert_one({"_id": _id, "a": {"b": 1}})
    ret = fam(db.c, query={"a.b": 1}, update={"$set": {"a.b": 2}}, new=True)["value"]
    assert ret == {"_id": _id, "a": {"b": 2}}


def test_find_and_modify_empty_update(db):
    """find_and_modify_empty_update.js: ``update: {}`` replaces the matched document by ``{_id}``; the
    pre-image by default, ``{_id}`` with ``new``; with a sort; as an upsert (null value, or the new
    ``{_id}``)."""
    c = db.c
    db.create_collection("c")
    assert fam(c, query={"a": 1}, update={})["value"] is None
    c.insert_one({"_id": 0, "a": 1})
    assert fam(c, query={"a": 1}, update={})["value"] == {"_id": 0, "a": 1}
    assert one(c) == {"_id": 0}
    c.delete_many({})
    c.insert_one({"_id": 0, "a": 1})
    assert fam(c, query={"a": 1}, update={}, new=True)["value"] == {"_id": 0}
    c.delete_many({})
    c.insert_many([{"_id": 0, "a": 1}, {"_id": 1, "a": 1}])
    assert fam(c, query={"a": 1}, update={}, sort={"_id": 1})["value"] == {"_id": 0, "a": 1}
    assert one(c, {"_id": 0}) == {"_id": 0}
    for extra, value in (({}, None), ({"sort": {"a": 1}}, None), ({"sort": {"a": 1}, "new": True}, {"_id": 0})):
        c.delete_many({})
        assert fam(c, query={"_id": 0, "a": 1}, update={}, upsert=True, **extra)["value"] == value
        assert one(c) == {"_id": 0}


# --------------------------------------------------------------------------------------------------
# update_with_pipeline.js
# --------------------------------------------------------------------------------------------------

LARGE = "x" * 1000
PIPELINE_UPDATES = [
    ([{"_id": 1, "x": 1, "largeStr": LARGE}], [{"$set": {"foo": 4}}], [{"_id": 1, "x": 1, "largeStr": LARGE, "foo": 4}]),
    ([{"_id": 1, "x": 1, "y": 1}], [{"$project": {"x": 1}}], [{"_id": 1, "x": 1}]),
    ([{"_id": 1, "x": 1, "y": [{"z": 1, "foo": 1}], "largeStr": LARGE}], [{"$unset": ["x", "y.z"]}],
     [{"_id": 1, "y": [{"foo": 1}], "largeStr": LARGE}]),
    ([{"_id": 1, "x": 1, "t": {"u": {"v": 1}, "largeStr": LARGE}}], [{"$replaceWith": "$t"}],
     [{"_id": 1, "u": {"v": 1}, "largeStr": LARGE}]),
]


@pytest.mark.parametrize("initial, u, expected", PIPELINE_UPDATES, ids=["set", "project", "unset", "replaceWith"])
def test_pipeline_update_of_an_existing_document(db, initial, u, expected):
    """update_with_pipeline.js: ``$set``, ``$project``, ``$unset`` (also a dotted path through an array)
    and ``$replaceWith`` stages update the matched document (``_id`` kept), nModified 1."""
    db.c.create_index("x")
    db.c.insert_many(initial)
    reply = ok(update(db.c, {"_id": 1}, u))
    assert reply["nModified"] == 1
    assert list(db.c.find()) == expected


def test_pipeline_multi_update_and_single_update(db):
    """update_with_pipeline.js: ``multi: true`` updates every match; ``multi: false`` only one."""
    c = db.c
    c.insert_many([{"_id": 1, "x": 1}, {"_id": 2, "x": 1}])
    assert ok(update(c, {"x": 1}, [{"$set": {"bar": 4}}], multi=True))["nModified"] == 2
    assert c.count_documents({"bar": 4}) == 2
    c.drop()
    c.insert_many([{"_id": 1, "x": 1}, {"_id": 2, "x": 2}])
    assert ok(update(c, {"_id": {"$in": [1, 2]}}, [{"$set": {"bar": 4}}], multi=False))["nModified"] == 1
    assert c.count_documents({"bar": 4}) == 1


@pytest.mark.parametrize("q, u, expected", [
    ({"_id": 1, "x": 1}, [{"$set": {"foo": 4}}], {"_id": 1, "x": 1, "foo": 4}),
    ({"_id": 1, "x": 1}, [{"$project": {"x": 1}}], {"_id": 1, "x": 1}),
    ({"_id": 1, "x": 1}, [{"$project": {"x": "foo"}}], {"_id": 1, "x": "foo"}),
    ({"_id": 1, "x": 1, "y": 1}, [{"$unset": ["x"]}], {"_id": 1, "y": 1}),
], ids=["set", "project", "project_literal", "unset"])
def test_pipeline_upsert_runs_on_the_query_seed(db, q, u, expected):
    """update_with_pipeline.js: a pipeline upsert runs the pipeline over the document seeded from the
    query's equalities."""
    ok(update(db.c, q, u, upsert=True))
    assert one(db.c) == expected


def test_pipeline_upsert_supplied_inserts_the_given_document(db):
    """update_with_pipeline.js: ``upsertSupplied`` inserts ``c.new`` (``_id`` from the query)."""
    ok(update(db.c, {"_id": "supplied_doc"}, [{"$set": {"x": 1}}], upsert=True, upsertSupplied=True,
              c={"new": {"suppliedDoc": True}}))
    assert db.c.find_one({"_id": "supplied_doc", "suppliedDoc": True})


def test_pipeline_upsert_supplied_needs_upsert_and_a_new_document(db):
    """update_with_pipeline.js: ``upsertSupplied`` needs ``upsert: true`` and an object ``c.new`` (9);
    mongod 7.0 checks it per statement (ParsedUpdate::parseRequest), so it is a write error."""
    for options in ({"upsert": False, "c": {"new": {"suppliedDoc": True}}}, {"upsert": True},
                    {"upsert": True, "c": {}}, {"upsert": True, "c": {"new": "string"}}):
        reply = update(db.c, {"_id": "supplied_doc"}, [{"$set": {"x": 1}}], upsertSupplied=True, **options)
        write_error(reply, FAILED_TO_PARSE)
    assert db.c.count_documents({}) == 0


@pytest.mark.parametrize("stage", [{"$match": {"x": 1}}, {"$sort": {"x": 1}}, {"$facet": {"a": [{"$match": {"x": 1}}]}},
                                   {"$bucket": {"groupBy": "$a", "boundaries": [0, 1], "default": "foo",
                                                "output": {"count": {"$sum": 1}}}},
                                   {"$lookup": {"from": "foo", "as": "as", "localField": "a", "foreignField": "b"}},
                                   {"$graphLookup": {"from": "foo", "startWith": "$a", "connectFromField": "a",
                                                     "connectToField": "b", "as": "as"}},
                                   {"$indexStats": {}}], ids=lambda s: next(iter(s)))
def test_pipeline_update_refuses_other_stages(db, stage):
    """update_with_pipeline.js: stages other than the update ones are 72 InvalidOptions."""
    db.c.insert_one({"x": 1, "z": 1})
    write_error(update(db.c, {"x": 1}, [stage]), 72)


def test_pipeline_stage_as_an_operator_and_array_filters_fail(db):
    """update_with_pipeline.js: ``{$addFields: ...}`` as an update operator is 9; arrayFilters with a
    pipeline update is 9."""
    write_error(update(db.c, {"_id": 1}, {"$addFields": {"x": 1}}), FAILED_TO_PARSE)
    write_error(update(db.c, {"_id": 1}, [{"$set": {"x": 1}}], arrayFilters=[{"x": {"$eq": 1}}]), FAILED_TO_PARSE)


@pytest.mark.parametrize("constants, u, expected", [
    ({"foo": "bar"}, [{"$set": {"foo": "$$foo"}}], "bar"),
    ({"foo": {"a": {"b": {"c": "bar"}}}}, [{"$set": {"foo": "$$foo"}}], {"a": {"b": {"c": "bar"}}}),
    ({"foo": [1, 2, 3]}, [{"$set": {"foo": {"$arrayElemAt": ["$$foo", 2]}}}], 3),
    ({"largeStr": LARGE}, [{"$set": {"foo": "$$largeStr"}}], LARGE),
    ({"foo": "$x"}, [{"$set": {"foo": "$$foo"}}], "$x"),
    ({"foo": {"$add": [1, 2]}}, [{"$set": {"foo": "$$foo"}}], {"$add": [1, 2]}),
], ids=["string", "object", "array", "large", "field_ref", "expression"])
def test_pipeline_update_constants(db, constants, u, expected):
    """update_with_pipeline.js: ``c`` constants are variables of a pipeline update, taken literally
    (a ``$x`` string or an expression object is a value, not evaluated)."""
    db.c.insert_one({"_id": 1, "x": 1})
    assert ok(update(db.c, {"_id": 1}, u, c=constants))["nModified"] == 1
    assert one(db.c) == {"_id": 1, "x": 1, "foo": expected}


@pytest.mark.parametrize("u, c", [({"x": "$$foo"}, {"foo": "bar"}), ({"$set": {"x": "$$foo"}}, {"foo": "bar"}),
                                  ({"$set": {"x": "1"}}, {})], ids=["replacement", "operator", "empty_constants"])
def test_constants_refused_outside_pipeline_updates(db, u, c):
    """update_with_pipeline.js: ``c`` with a replacement or operator update is 51198."""
    db.c.insert_one({"_id": 1})
    try:
        reply = update(db.c, {"_id": 1}, u, c=c)
    except OperationFailure as exc:
        assert exc.code == 51198
    else:
        write_error(reply, 51198)
    assert one(db.c) == {"_id": 1}


# --------------------------------------------------------------------------------------------------
# update_addToSet.js
# --------------------------------------------------------------------------------------------------

def test_add_to_set_basics_and_each(db):
    """update_addToSet.js: adding a new value, a present one (no change), ``$each`` with duplicates
    inside and against the array, upserts with ``$addToSet`` (SERVER-628, SERVER-630, SERVER-3245)."""
    c = db.c
    c.insert_one({"_id": 1, "a": [2, 1]})
    ok(update(c, {}, {"$addToSet": {"a": 3}}))
    assert ok(update(c, {}, {"$addToSet": {"a": 3}}))["nModified"] == 0
    ok(update(c, {}, {"$addToSet": {"a": {"$each": [3, 5, 6]}}}))
    assert one(c) == {"_id": 1, "a": [2, 1, 3, 5, 6]}
    c.drop()
    c.insert_one({"_id": 1, "a": [3, 5, 6]})
    ok(update(c, {}, {"$addToSet": {"a": {"$each": [3, 5, 6]}}}))
    assert one(c) == {"_id": 1, "a": [3, 5, 6]}
    c.drop()
    for _ in range(2):
        ok(update(c, {"_id": 1}, {"$addToSet": {"a": {"$each": [3, 5, 6]}}}, upsert=True))
        assert one(c) == {"_id": 1, "a": [3, 5, 6]}
    c.drop()
    ok(update(c, {"_id": 2}, {"$addToSet": {"a": 3}}, upsert=True))
    assert list(c.find()) == [{"_id": 2, "a": [3]}]
    for each in ([1, 2], [1, 2, 1, 2]):
        c.drop()
        ok(update(c, {"_id": 1}, {"$addToSet": {"a": {"$each": each}}}, upsert=True))
        assert one(c) == {"_id": 1, "a": [1, 2]}
    c.drop()
    c.insert_one({"_id": 1})
    ok(update(c, {"_id": 1}, {"$addToSet": {"a": {"$each": [1, 2, 2, 1]}}}))
    ok(update(c, {"_id": 1}, {"$addToSet": {"a": {"$each": [3, 2, 2, 3, 3]}}}))
    assert one(c) == {"_id": 1, "a": [1, 2, 3]}


def test_add_to_set_accepts_dotted_and_dollar_names_nested_ids_and_dbrefs(db):
    """update_addToSet.js: elements with dotted or ``$``-prefixed field names (nested or in ``$each``),
    a nested ``_id`` holding an array or a regex, and DBRefs are accepted."""
    c = db.c
    c.insert_one({"_id": 1, "a": [1, 2]})
    for value in ({"x.$.y": "bad"}, {"b": {"x.$.y": "bad"}}, {"$bad": "bad"}, {"b": {"$bad": "bad"}}, {"_id": {"x.y": 2}},
                  {"$each": [{"x.$.y": "bad"}]}, {"$each": [{"b": {"x.$.y": "bad"}}]}, {"$each": [{"$bad": "bad"}]},
                  {"$each": [{"b": {"$bad": "bad"}}]}, {"_id": ["foo", "bar", "baz"]}, {"_id": Regex("acme.*corp")}):
        ok(update(c, {}, {"$addToSet": {"a": value}}))
    ref = {"reference": DBRef("c", ObjectId(), db.name)}
    ok(update(c, {"_id": 1}, {"$addToSet": {"a": ref}}))
    ok(update(c, {"_id": 1}, {"$addToSet": {"a": {"b": ref}}}))
    a = one(c)["a"]
    assert a[-2] == ref and a[-1] == {"b": ref}


# --------------------------------------------------------------------------------------------------
# update_positional_no_array_elem.js
# --------------------------------------------------------------------------------------------------

def test_positional_without_an_array_match_fails(db):
    """update_positional_no_array_elem.js: ``a.$.b`` with no array match in the query fails — an upsert
    inserts nothing (SERVER-4713), an update changes nothing (SERVER-6669), also by ``_id``; a second
    ``$`` fails too (SERVER-831)."""
    c = db.c
    write_error(update(c, {}, {"$set": {"a.$.b": 1}}, upsert=True))
    assert c.count_documents({}) == 0
    c.insert_one({"_id": 0})
    write_error(update(c, {}, {"$set": {"a.$.b": 1}}))
    write_error(update(c, {"_id": 0}, {"$set": {"a.$.b": 1}}))
    assert list(c.find()) == [{"_id": 0}]
    c.delete_many({})
    c.insert_one({"_id": 0, "a": [{"b": {"c": 1}}]})
    write_error(update(c, {"a.b.c": 1}, {"$set": {"a.$.b.$.c": 2}}))
    assert list(c.find()) == [{"_id": 0, "a": [{"b": {"c": 1}}]}]


def test_positional_with_a_regex_query(db):
    """update_positional_no_array_elem.js (SERVER-1155): the element a regex matched is the position."""
    c = db.c
    c.insert_one({"_id": 1, "arr": [{"a": "z", "b": 1}]})
    ok(update(c, {"arr.a": Regex("^z$")}, {"$set": {"arr.$.b": 2}}, multi=True))
    assert one(c)["arr"][0] == {"a": "z", "b": 2}
    c.drop()
    c.insert_one({"_id": 1, "arr": [{"a": "z", "b": 1}, {"a": "abc", "b": 2}, {"a": "lmn", "b": 3}]})
    ok(update(c, {"arr.a": Regex("l")}, {"$inc": {"arr.$.b": 2}}, multi=True))
    assert one(c)["arr"][2] == {"a": "lmn", "b": 5}


# --------------------------------------------------------------------------------------------------
# verify_update_mods.js
# --------------------------------------------------------------------------------------------------

# (query, update, documents before, documents after | an error code)
UPDATE_MODS = [
    ({"_id": 1}, {"$set": {"a": 2}}, [{"_id": 1, "a": 1}], [{"_id": 1, "a": 2}]),
    ({"_id": 1}, {"$unset": {"a": 1}}, [{"_id": 1, "a": 1}], [{"_id": 1}]),
    ({"_id": 1}, {"$inc": {"a": 1}}, [{"_id": 1, "a": 1}], [{"_id": 1, "a": 2}]),
    ({"_id": 1}, {"$mul": {"a": 2}}, [{"_id": 1, "a": 1}], [{"_id": 1, "a": 2}]),
    ({"_id": 1}, {"$push": {"a": 2}}, [{"_id": 1, "a": [1]}], [{"_id": 1, "a": [1, 2]}]),
    ({"_id": 1}, {"$addToSet": {"a": 2}}, [{"_id": 1, "a": [1]}], [{"_id": 1, "a": [1, 2]}]),
    ({"_id": 1}, {"$pull": {"a": 1}}, [{"_id": 1, "a": [1]}], [{"_id": 1, "a": []}]),
    ({"_id": 1}, {"$rename": {"a": "b"}}, [{"_id": 1, "a": 1}], [{"_id": 1, "b": 1}]),
    ({"_id": 1}, {"$bit": {"a": {"and": Int64(1)}}}, [{"_id": 1, "a": Int64(2)}], [{"_id": 1, "a": Int64(0)}]),
    ({"_id": 1}, {"$bit": {"a": {"and": Int64(3)}}}, [], [{"_id": 1, "a": Int64(0)}]),
    ({"_id": 1}, {"$bit": {"b": {"or": Int64(3)}}}, [], [{"_id": 1, "b": Int64(3)}]),
    ({"_id": 1}, {"$bit": {"c.d": {"or": 3}}}, [], [{"_id": 1, "c": {"d": 3}}]),
    ({"_id": 1}, {"$max": {"a": 2}}, [{"_id": 1, "a": 1}], [{"_id": 1, "a": 2}]),
    ({"_id": 1}, {"$min": {"a": 0}}, [{"_id": 1, "a": 1}], [{"_id": 1, "a": 0}]),
    ({"_id": 2}, {"$setOnInsert": {"a": 1}}, [{"_id": 1, "a": 1}], [{"_id": 1, "a": 1}, {"_id": 2, "a": 1}]),
    ({"_id": 1}, {"$setOnInsert": {"a": 2}}, [{"_id": 1, "a": 1}], [{"_id": 1, "a": 1}]),
    ({"_id": 1}, {"$pop": {"a": True}}, [{"_id": 1, "a": [1, 2]}], FAILED_TO_PARSE),
    ({"_id": 1}, {"$pop": {"a": 1}}, [{"_id": 1, "a": [1, 2]}], [{"_id": 1, "a": [1]}]),
    ({"_id": 1}, {"$pop": {"a": -1}}, [{"_id": 1, "a": [1, 2]}], [{"_id": 1, "a": [2]}]),
    ({"_id": 1}, {"$pop": {"a": 1}}, [{"_id": 1, "a": []}], [{"_id": 1, "a": []}]),
    ({"_id": 1}, {"$pop": {"a": 1}}, [], [{"_id": 1}]),
    ({"_id": 1}, {"$pullAll": {"a": [1]}}, [{"_id": 1, "a": [1, 2, 1]}], [{"_id": 1, "a": [2]}]),
]
_EMPTY_OPERANDS = ["$set", "$unset", "$inc", "$mul", "$push", "$addToSet", "$pull", "$rename", "$bit", "$max",
                   "$min", "$currentDate", "$setOnInsert", "$pop", "$pullAll"]


def _run_update_mod(coll, command, q, u, before, after, array_filters=None):
    coll.delete_many({})
    if before:
        coll.insert_many(before)
    extra = {"arrayFilters": array_filters} if array_filters is not None else {}
    if command == "update":
        reply = update(coll, q, u, upsert=True, **extra)
        if isinstance(after, int):
            write_error(reply, after)
            return
        ok(reply)
    else:
        if isinstance(after, int):
            fam_fails(coll, after, query=q, update=u, upsert=True, **extra)
            return
        fam(coll, query=q, update=u, upsert=True, **extra)
    assert same(list(coll.find().sort("_id", 1)), after)


@pytest.mark.parametrize("command", ["update", "findAndModify"])
@pytest.mark.parametrize("q, u, before, after", UPDATE_MODS, ids=[f"{next(iter(r[1]))}{i}" for i, r in enumerate(UPDATE_MODS)])
def test_update_modifiers_through_update_and_find_and_modify(db, command, q, u, before, after):
    """verify_update_mods.js: each modifier applied (as an upsert) through ``update`` and through
    ``findAndModify`` leaves the same documents (``$pop: true`` is 9 in both)."""
    _run_update_mod(db.c, command, q, u, before, after)


@pytest.mark.parametrize("command", ["update", "findAndModify"])
@pytest.mark.parametrize("op", _EMPTY_OPERANDS)
def test_empty_operator_object_is_a_no_op(db, command, op):
    """verify_update_mods.js: since MongoDB 5.0 an operator with an empty object (``{$set: {}}``) is a
    no-op: the matched document stays as it was, an upsert inserts ``{_id}``."""
    _run_update_mod(db.c, command, {"_id": 1}, {op: {}}, [{"_id": 1, "a": [1]}], [{"_id": 1, "a": [1]}])
    _run_update_mod(db.c, command, {"_id": 2}, {op: {}}, [{"_id": 1, "a": [1]}], [{"_id": 1, "a": [1]}, {"_id": 2}])


@pytest.mark.parametrize("command", ["update", "findAndModify"])
def test_empty_set_with_array_filters_fails(db, command):
    """verify_update_mods.js: ``{$set: {}}`` with an (unused) array filter is 9 FailedToParse."""
    _run_update_mod(db.c, command, {"_id": 1}, {"$set": {}}, [{"_id": 1, "a": [1]}], FAILED_TO_PARSE,
                    array_filters=[{"element": {"$gt": 6}}])


# --------------------------------------------------------------------------------------------------
# upsert_and.js, upsert_nor.js
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("q, u, expected", [
    ({"_id": 1, "$and": [{"c": 1}, {"d": 1}], "a": 12}, {"$inc": {"y": 1}}, {"_id": 1, "c": 1, "d": 1, "a": 12, "y": 1}),
    ({"$and": [{"c": 1}, {"d": 1}]}, {"$setOnInsert": {"_id": 1}}, {"_id": 1, "c": 1, "d": 1}),
    ({"$and": [{"c": 1}, {"d": 1}, {"$or": [{"x": 1}]}]}, {"$setOnInsert": {"_id": 1}}, {"_id": 1, "c": 1, "d": 1, "x": 1}),
    ({"$and": [{"c": 1}, {"d": 1}], "$or": [{"x": 1}, {"x": 2}]}, {"$setOnInsert": {"_id": 1}}, {"_id": 1, "c": 1, "d": 1}),
    ({"r": {"$gt": 3}, "$and": [{"c": 1}, {"d": 1}], "$or": [{"x": 1}, {"x": 2}]}, {"$setOnInsert": {"_id": 1}},
     {"_id": 1, "c": 1, "d": 1}),
    ({"r": Regex("s"), "$and": [{"c": 1}, {"d": 1}], "$or": [{"x": 1}, {"x": 2}]}, {"$setOnInsert": {"_id": 1}},
     {"_id": 1, "c": 1, "d": 1}),
], ids=["inc", "and", "and_or1", "or2", "gt", "regex"])
def test_upsert_takes_fields_from_and_clauses(db, q, u, expected):
    """upsert_and.js: equalities under ``$and`` (and a one-clause ``$or`` inside it) seed the upsert;
    a two-clause ``$or``, ranges and regexes do not. The ``_id`` comes first."""
    ok(update(db.c, q, u, upsert=True))
    assert list(db.c.find()) == [expected]


def test_upsert_and_conflicting_with_a_top_level_equality_fails(db):
    """upsert_and.js: ``{c: 2, $and: [{c: 1}, ...]}`` matches ``c`` twice: the upsert fails (54)."""
    write_error(update(db.c, {"c": 2, "$and": [{"c": 1}, {"d": 1}]}, {"$setOnInsert": {"_id": 1}}, upsert=True),
                NOT_SINGLE_VALUE_FIELD)


def test_upsert_takes_nothing_behind_nor(db):
    """upsert_nor.js: nothing behind ``$nor`` seeds the upserted document."""
    reply = ok(update(db.c, {"$nor": [{"$or": [{"x": 1}, {"y": 2}]}, {"x": {"$ne": 3}}]}, [{"$unset": "z"}], upsert=True))
    assert reply["upserted"]
    assert db.c.count_documents({"x": 3}) == 0


# --------------------------------------------------------------------------------------------------
# update_numeric_field_name.js
# --------------------------------------------------------------------------------------------------

def test_update_creating_an_ambiguous_numeric_field_under_an_indexed_array_fails(db):
    """update_numeric_field_name.js (SERVER-37058): with an index on ``a.0.c``, ``$set`` of ``a.0.0``
    or ``a.0.0.b`` (a field named "0" in an array element) is 16746; ``a.1.b.0.0`` is fine."""
    c = db.c
    c.insert_one({"_id": 0, "a": [{}]})
    c.create_index("a.0.c")
    write_error(update(c, {"_id": 0}, {"$set": {"a.0.0": 1}}), 16746)
    write_error(update(c, {"_id": 0}, {"$set": {"a.0.0.b": 1}}), 16746)
    ok(update(c, {"_id": 0}, {"$set": {"a.1.b.0.0": 1}}))
    assert one(c) == {"_id": 0, "a": [{}, {"b": {"0": {"0": 1}}}]}


# --------------------------------------------------------------------------------------------------
# Hypothesis: $push modifiers, $inc/$mul typing and $pop against reference models
# --------------------------------------------------------------------------------------------------

def _push_model(arr: list, each: list, position, slice_, sort) -> list:
    """push_sort.js / mongod's PushNode: insert at $position (negative counts from the end, clamped),
    then $sort, then $slice (negative keeps the tail)."""
    out = list(arr)
    if position is None or position >= len(out):
        out.extend(each)
    else:
        at = position if position >= 0 else max(len(out) + position, 0)
        out[at:at] = each
    if sort is not None:
        out.sort(reverse=sort < 0)
    if slice_ is not None:
        out = out[:slice_] if slice_ >= 0 else out[len(out) + slice_:] if -slice_ < len(out) else out
    return out


_small = st.lists(st.integers(-5, 5), max_size=5)


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(arr=_small, each=_small, position=st.none() | st.integers(-7, 7), slice_=st.none() | st.integers(-7, 7),
       sort=st.none() | st.sampled_from([1, -1]))
def test_push_modifiers_follow_the_reference_model(db, arr, each, position, slice_, sort):
    """push_sort.js, generalised: any combination of ``$each``, ``$position``, ``$sort`` (1/-1) and
    ``$slice`` leaves the array the reference model computes; nModified is 0 exactly when nothing was
    inserted, no ``$sort`` was given and nothing was trimmed."""
    c = db.c
    c.delete_many({})
    c.insert_one({"_id": 1, "x": arr})
    push: dict = {"$each": each}
    if position is not None:
        push["$position"] = position
    if sort is not None:
        push["$sort"] = sort
    if slice_ is not None:
        push["$slice"] = slice_
    reply = ok(update(c, {"_id": 1}, {"$push": {"x": push}}))
    expected = _push_model(arr, each, position, slice_, sort)
    assert one(c)["x"] == expected
    trimmed = slice_ is not None and len(arr) + len(each) > abs(slice_)
    assert reply["nModified"] == int(bool(each) or sort is not None or trimmed)


_INT32 = 2**31
_numbers = st.one_of(
    st.integers(-_INT32, _INT32 - 1),
    st.sampled_from([_INT32 - 1, -_INT32, 2**62]).map(Int64) | st.integers(-(2**63), 2**63 - 1).map(Int64),
    st.floats(allow_nan=False, allow_infinity=False, width=64),
)


def _kind(v) -> int:
    return 2 if isinstance(v, float) else 1 if isinstance(v, Int64) or not -_INT32 <= v < _INT32 else 0


def _arith_model(op: str, a, b):
    """mongod's SafeNum: the wider kind wins; int32 overflow widens to int64; int64 overflow is
    invalid (None: the update fails with 2 BadValue)."""
    kind = max(_kind(a), _kind(b))
    if kind == 2:
        return float(a) + float(b) if op == "$inc" else float(a) * float(b)
    r = int(a) + int(b) if op == "$inc" else int(a) * int(b)
    if kind == 0 and -_INT32 <= r < _INT32:
        return r
    if -(2**63) <= r < 2**63:
        return Int64(r)
    return None


@settings(max_examples=80, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(op=st.sampled_from(["$inc", "$mul"]), start=_numbers, arg=_numbers)
def test_inc_and_mul_result_types_follow_safe_num(db, op, start, arg):
    """inc_negative_overflow.js / update_mul_examples.js, generalised: ``$inc``/``$mul`` keep the widest
    numeric type of their operands, widening int32 to int64 on overflow; an int64 overflow fails the
    update (2) and leaves the document (value and BSON type checked)."""
    c = db.c
    c.delete_many({})
    c.insert_one({"_id": 1, "a": start})
    expected = _arith_model(op, start, arg)
    reply = update(c, {"_id": 1}, {op: {"a": arg}})
    if expected is None:
        write_error(reply, BAD_VALUE)
        assert same(one(c)["a"], start)
        return
    ok(reply)
    got = one(c)["a"]
    assert type(got) is type(expected)
    assert got == expected or (isinstance(got, float) and math.isnan(got) and math.isnan(expected))


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(arr=_small, end=st.sampled_from([1, -1]), times=st.integers(1, 4))
def test_pop_removes_from_the_chosen_end(db, arr, end, times):
    """update_modifier_pop.js, generalised: each ``$pop`` removes one element from the end (1) or the
    front (-1), a no-op (nModified 0) on an empty array."""
    c = db.c
    c.delete_many({})
    c.insert_one({"_id": 1, "a": arr})
    expected = list(arr)
    for _ in range(times):
        reply = ok(update(c, {"_id": 1}, {"$pop": {"a": end}}))
        assert reply["nModified"] == int(bool(expected))
        if expected:
            expected = expected[:-1] if end == 1 else expected[1:]
    assert one(c)["a"] == expected


# --------------------------------------------------------------------------------------------------
# find_and_modify_server6254.js, _server6659.js, _server6993.js, _server7660.js,
# find_and_modify_pipeline_update.js, find_and_modify_invalid_query_params.js
# --------------------------------------------------------------------------------------------------

def test_find_and_modify_server_regressions(db):
    """find_and_modify_server6254.js: ``new`` returns the updated document, no second document appears;
    _server6659.js: an upsert with ``new`` returns the ``$set`` value over the query's; _server6993.js:
    ``a.$`` with findAndModify sets the matched element; _server7660.js: an upsert with a sort and
    ``new`` returns exactly the stored document."""
    c = db.c
    c.insert_one({"x": 1})
    assert fam(c, query={"x": 1}, update={"$set": {"x": 2}}, new=True)["value"]["x"] == 2
    assert c.count_documents({}) == 1
    c.drop()
    assert fam(c, query={"f": 1}, update={"$set": {"f": 2}}, upsert=True, new=True)["value"]["f"] == 2
    assert one(c)["f"] == 2
    c.drop()
    c.insert_one({"a": [1, 2]})
    fam(c, query={"a": 1}, update={"$set": {"a.$": 5}})
    assert one(c)["a"] == [5, 2]
    c.drop()
    a = fam(c, query={"foo": "bar"}, update={"$set": {"bob": "john"}}, sort={"foo": 1}, upsert=True, new=True)["value"]
    assert a == one(c) and (a["foo"], a["bob"]) == ("bar", "john")


def test_find_and_modify_pipeline_update(db):
    """find_and_modify_pipeline_update.js: a pipeline update returns the pre-image, or with ``new`` the
    post-image; ``fields`` applies to either; with a sort the first document in sort order is updated;
    arrayFilters with a pipeline is 9."""
    c = db.c
    c.insert_many([{"_id": i} for i in range(5)])
    assert fam(c, query={"_id": 0}, update=[{"$set": {"y": 1}}])["value"] == {"_id": 0}
    assert fam(c, query={"_id": 0}, update=[{"$set": {"z": 2}}], new=True)["value"] == {"_id": 0, "y": 1, "z": 2}
    assert fam(c, query={"_id": 0}, update=[{"$unset": ["z"]}], new=True)["value"] == {"_id": 0, "y": 1}
    c.drop()
    c.insert_many([{"_id": i, "x": i} for i in range(4)])
    assert fam(c, query={"_id": 0}, update=[{"$set": {"y": 0}}], fields={"x": 0})["value"] == {"_id": 0}
    assert fam(c, query={"_id": 1}, update=[{"$set": {"y": 1}}], fields={"x": 1})["value"] == {"_id": 1, "x": 1}
    assert fam(c, query={"_id": 2}, update=[{"$set": {"y": 2}}], fields={"x": 0}, new=True)["value"] == {"_id": 2, "y": 2}
    assert fam(c, query={"_id": 3}, update=[{"$set": {"y": 3}}], fields={"x": 1}, new=True)["value"] == {"_id": 3, "x": 3}
    c.drop()
    c.insert_many([{"_id": 0, "x": "b"}, {"_id": 1, "x": "d"}, {"_id": 2, "x": "a"}, {"_id": 3, "x": "c"}])
    found = fam(c, update=[{"$set": {"foo": "bar"}}], sort={"x": -1}, new=True)["value"]
    assert found == {"_id": 1, "x": "d", "foo": "bar"}
    fam_fails(c, FAILED_TO_PARSE, query={"_id": 1}, update=[{"$set": {"y": 1}}], arrayFilters=[{"i.x": 4}])


@pytest.mark.parametrize("field, value", [("query", 1), ("query", "{_id: 1}"), ("query", False), ("sort", 1),
                                          ("sort", "{_id: 1}"), ("sort", False), ("fields", 1), ("fields", "{_id: 1}"),
                                          ("fields", False)], ids=str)
def test_find_and_modify_refuses_non_object_query_sort_fields(db, field, value):
    """find_and_modify_invalid_query_params.js (SERVER-41829): a ``query``, ``sort`` or ``fields`` that
    is not an object is 14 TypeMismatch."""
    db.c.insert_one({"_id": 0})
    fam_fails(db.c, TYPE_MISMATCH, **{field: value, "update": {"value": 2}})


def test_find_and_modify_null_missing_and_empty_parameters(db):
    """find_and_modify_invalid_query_params.js: null, missing and empty ``query``/``sort``/``fields`` are
    allowed; false/0 booleans are as good as absent (also ``remove: 0.0`` beside arrayFilters, which a
    replacement ignores); an upsert without ``new`` answers null; a numeric hint is 9, a hint by name or
    key pattern is used."""
    c = db.c
    c.insert_many([{"_id": 0}, {"_id": 1}])
    assert fam(c, query={"_id": 1}, update={"$set": {"value": "basic"}}, new=True)["value"] == {"_id": 1, "value": "basic"}
    for extra, value in (({"query": None, "update": {"value": 2}}, 2),
                         ({"update": {"$set": {"value": "missingQuery"}}}, "missingQuery"),
                         ({"query": {}, "update": {"$set": {"value": "emptyQuery"}}}, "emptyQuery"),
                         ({"sort": {"_id": -1}, "update": {"$set": {"value": "sort"}}}, "sort"),
                         ({"sort": None, "update": {"value": 2}}, 2),
                         ({"sort": {}, "update": {"$set": {"value": "emptySort"}}}, "emptySort"),
                         ({"fields": {"_id": 0}, "update": {"$set": {"value": "project"}}}, "project"),
                         ({"fields": None, "update": {"value": 2}}, 2),
                         ({"fields": {}, "update": {"$set": {"value": "emptyFields"}}}, "emptyFields")):
        assert fam(c, new=True, **extra)["value"]["value"] == value, extra
    c.drop()
    c.insert_one({"_id": 0})
    for fields in ({"update": {"value": 2}, "remove": True}, {"query": {"_id": 1}, "upsert": True, "remove": True},
                   {"new": True, "remove": True}, {"update": {}, "arrayFilters": [{"x.a": {"$gt": 85}}], "remove": True},
                   {"update": [], "arrayFilters": [{"x.a": {"$gt": 85}}]},
                   {"query": {"_id": 0}, "update": {"value": "usedHint"}, "hint": 1}):
        fam_fails(c, FAILED_TO_PARSE, **fields)
    assert fam(c, update={"value": "newVal"}, new=True, remove=False)["value"]["value"] == "newVal"
    assert fam(c, update={"value": "newerVal"}, new=False, remove=0)["value"]["value"] == "newVal"
    assert fam(c, query={"_id": 1}, update={"value": "newerVal"}, new=1, remove=False, upsert=1)["value"]["value"] == "newerVal"
    out = fam(c, update={"value": "newestVal"}, new=False, arrayFilters=[{"x.a": {"$gt": 85}}], remove=0.0)["value"]
    assert out["value"] == "newerVal"
    assert fam(c, query={"_id": 2}, update={"value": "newVal"}, new=False, remove=False, upsert=True)["value"] is None
    c.create_index("value", name="value")
    out = fam(c, query={"_id": 0}, update={"value": "usedHint"}, new=1.0, hint="value", remove=0.0)["value"]
    assert out["value"] == "usedHint"
    out = fam(c, query={"_id": 0, "value": "usedHint"}, update={"value": "newValue"}, new=0, hint={"_id": 1}, remove=0)
    assert out["value"]["value"] == "usedHint"


# --------------------------------------------------------------------------------------------------
# update_dollar_fields.js, update_currentdate_examples.js, update_push_numeric_subfield.js,
# update_find_and_modify_id.js, update_inc_create_embedded_field.js, update_nested_arr_idx.js,
# update_mod_dotted.js
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("u", [{"$set": {"$z": 1}}, {"$inc": {"$z": 1}}, {"$set": {"$x": 1}}, {"$set": {"$$$": 1}},
                               {"$set": {"$secret.agent.x": 1}}, {"$set": {"$reffoo": 1}}, {"$set": {"$idbar": 1}},
                               {"$set": {"$dbbaz": 1}}], ids=str)
def test_dollar_prefixed_top_level_field_is_refused(db, u):
    """update_dollar_fields.js (SERVER-7150, SERVER-11241): a ``$``-prefixed top-level field (also one
    merely starting like a DBRef field) cannot be created by an update."""
    db.c.insert_one({"_id": 0, "n": 0})
    write_error(update(db.c, {"n": 0}, u))
    assert one(db.c) == {"_id": 0, "n": 0}


@pytest.mark.parametrize("u, field", [({"$set": {"a.$b": 1}}, "a"), ({"$set": {"a": {"$z": 1}}}, "a"),
                                      ({"$set": {"sneaky.$x": 1}}, "sneaky"), ({"$set": {"secret.agent$.$x": 1}}, "secret"),
                                      ({"$set": {"secret.agent$": 1}}, "secret"),
                                      ({"$set": {"x": {"$ref": "1", "$id": 1, "$db": "1"}}}, "x"),
                                      ({"$set": {"ke$sha": 1}}, "ke$sha"), ({"$set": {"more$$moreproblem$": 1}}, "more$$moreproblem$")],
                         ids=str)
def test_dollar_inside_nested_or_non_leading_names_is_allowed(db, u, field):
    """update_dollar_fields.js (SERVER-3231, SERVER-7557): ``$``-prefixed names below the top level, a
    DBRef subdocument and ``$`` elsewhere in a name are fine."""
    db.c.insert_one({"_id": 0, "n": 0})
    ok(update(db.c, {"n": 0}, u))
    assert field in one(db.c)


@pytest.mark.parametrize("arg, kind", [(True, dt.datetime), ({"$type": "date"}, dt.datetime),
                                       ({"$type": "timestamp"}, Timestamp)], ids=["true", "date", "timestamp"])
def test_current_date_examples(db, arg, kind):
    """update_currentdate_examples.js: ``$currentDate`` sets a date by default or for ``$type: 'date'``,
    a timestamp for ``$type: 'timestamp'``."""
    db.c.insert_one({"_id": 1, "a": 2})
    ok(update(db.c, {}, {"$currentDate": {"a": arg}}))
    assert isinstance(one(db.c)["a"], kind)


def test_push_to_a_numeric_subfield_of_a_document(db):
    """update_push_numeric_subfield.js: ``choices.0.votes`` where ``choices`` is a document with a field
    named "0" pushes into that field's document (field order kept)."""
    orig = {"_id": 1, "question": "a", "choices": {"1": {"choice": "b"}, "0": {"choice": "c"}}}
    db.c.insert_one(orig)
    ok(update(db.c, {"_id": 1, "choices.0.votes": {"$ne": 1}}, {"$push": {"choices.0.votes": 1}}))
    assert one(db.c)["choices"] == {"1": {"choice": "b"}, "0": {"choice": "c", "votes": [1]}}


@pytest.mark.parametrize("command", ["update", "findAndModify"])
def test_id_in_the_update_is_fine_while_unchanged(db, command):
    """update_find_and_modify_id.js (SERVER-4516, SERVER-6913): an ``_id`` in a replacement or ``$set``
    is accepted when it keeps the value; a different ``_id`` fails and leaves the document."""
    c = db.c

    def run_it(u, qid):
        c.drop()
        c.insert_one({"_id": 1, "a": 1})
        if command == "update":
            return update(c, {"_id": qid}, u, upsert=True)
        try:
            return fam(c, query={"_id": qid}, update=u, upsert=True)
        except OperationFailure as exc:
            return {"writeErrors": [{"code": exc.code}]}

    for u, qid, expected in (({"_id": 1, "a": 2}, 1, {"_id": 1, "a": 2}), ({"$set": {"_id": 1}}, 1, {"_id": 1, "a": 1}),
                             ({"_id": 1, "b": "a"}, 1, {"_id": 1, "b": "a"}), ({"_id": 2, "a": 3}, 2, {"_id": 2, "a": 3})):
        ok(run_it(u, qid))
        assert one(c, {"_id": qid}) == expected
    for u, qid in (({"$set": {"_id": 2}}, 1), ({"_id": 2, "a": 3}, 1), ({"_id": 2, "a": 3}, 3)):
        write_error(run_it(u, qid))
        assert list(c.find()) == [{"_id": 1, "a": 1}]


def test_inc_creates_embedded_fields_after_the_existing_ones(db):
    """update_inc_create_embedded_field.js: ``$inc`` of ``b.c`` keeps field order; ``b.0e`` and
    ``b3.0719`` (numeric-looking names in documents) are new fields appended at the end."""
    c = db.c
    c.insert_one({"a": 1, "b": {"c": 1, "d": 1}})
    ok(update(c, {"a": 1}, {"$inc": {"b.c": 1}}))
    ok(update(c, {"a": 1}, {"$inc": {"b.0e": 1}}))
    assert list(one(c)["b"].items()) == [("c", 2), ("d", 1), ("0e", 1)]
    for extra in ({}, {"b324": {"0720": 1}}):
        c.drop()
        c.insert_one({"_id": 2, "b3": {"0720": 5, "0721": 12, "0722": 11, "0723": 3}, **extra})
        ok(update(c, {"_id": 2}, {"$inc": {"b3.0719": 1}}, upsert=True))
        assert list(one(c)["b3"]) == ["0720", "0721", "0722", "0723", "0719"]


def test_set_and_inc_into_array_elements_of_nulls(db):
    """update_nested_arr_idx.js: ``$set`` of ``items.0`` over null, then ``$inc`` of ``items.0.amount``
    with ``$set`` of ``items.1`` in one update."""
    c = db.c
    c.insert_one({"_id": 0.5, "items": [None, None, None, None]})
    ok(update(c, {}, {"$set": {"items.0": {"amount": 9000, "itemId": 1}}}))
    ok(update(c, {}, {"$inc": {"items.0.amount": 1000}, "$set": {"items.1": {"amount": 1, "itemId": 2}}}))
    assert one(c)["items"] == [{"amount": 10000, "itemId": 1}, {"amount": 1, "itemId": 2}, None, None]


def test_update_mods_dotted_corner_cases(db):
    """update_mod_dotted.js: ``$inc``/``$set`` of top-level and dotted fields, ``$set`` of ``_id`` is
    66 ImmutableField, ``$unset`` of a present and a missing dotted path."""
    c = db.c
    c.insert_one({"_id": 0, "a": {"b": 1}})
    ok(update(c, {}, {"$inc": {"a.b": 1}}))
    ok(update(c, {}, {"$set": {"a.c": 5}}))
    assert one(c) == {"_id": 0, "a": {"b": 2, "c": 5}}
    error = write_error(update(c, {}, {"$set": {"_id": 5}}), IMMUTABLE_FIELD)
    assert error["errmsg"] == "Performing an update on the path '_id' would modify the immutable field '_id'"
    ok(update(c, {}, {"$unset": {"a": 1, "b.c": 1}}))
    assert one(c) == {"_id": 0}


# --------------------------------------------------------------------------------------------------
# update_arraymatch8.js, update_array_offset_positional.js, update_addToSet2.js, update_addToSet3.js
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("index, doc, q, u, new_q, old_q, old_stays", [
    ("array.name", {"array": [{"name": "old"}]}, {"array.name": "old"}, {"$set": {"array.$.name": "new"}},
     {"array.name": "new"}, {"array.name": "old"}, False),
    ("array.name", {"array": [{"name": "old"}]}, {"array.name": "old"}, {"$set": {"array.$": {"name": "new"}}},
     {"array.name": "new"}, {"array.name": "old"}, False),
    ("array.name", {"array": [{"name": "old"}]}, {"array.name": "old"}, {"$set": {"array.0.name": "new"}},
     {"array.name": "new"}, {"array.name": "old"}, False),
    ("array.name", {"array": [{"name": "old"}]}, {"array.name": "old"}, {"$set": {"array.0": {"name": "new"}}},
     {"array.name": "new"}, {"array.name": "old"}, False),
    ("array.name", {"_id": 0, "array": [{"name": "old"}] * 20}, {"_id": 0}, {"$set": {"array.12.name": "new"}},
     {"array.name": "new"}, {"array.name": "old"}, True),
    ("array.name", {"_id": 0, "array": [{"name": "old"}] * 20}, {"_id": 0}, {"$set": {"array.12": {"name": "new"}}},
     {"array.name": "new"}, {"array.name": "old"}, True),
    ("array.123a.name", {"array": [{"123a": {"name": "old"}}]}, {"array.123a.name": "old"},
     {"$set": {"array.$.123a.name": "new"}}, {"array.123a.name": "new"}, {"array.123a.name": "old"}, False),
    ("array.name", {"array": [{"123a": {"name": "old"}}]}, {"array.123a.name": "old"},
     {"$set": {"array.$.123a": {"name": "new"}}}, {"array.123a.name": "new"}, {"array.123a.name": "old"}, False),
    ("array.123a.name", {"array": [{"123a": {"name": "old"}}]}, {"array.123a.name": "old"},
     {"$set": {"array.0.123a.name": "new"}}, {"array.123a.name": "new"}, {"array.123a.name": "old"}, False),
    ("a.0.b", {"a": [[{"b": "old"}]]}, {}, {"$set": {"a.0.0.b": "new"}}, {"a.0.b": "new"}, {"a.0.b": "old"}, False),
    ("a.0.b.c", {"a": [{"b": [{"c": "old"}]}]}, {}, {"$set": {"a.0.b.0.c": "new"}}, {"a.0.b.c": "new"},
     {"a.0.b.c": "old"}, False),
    pytest.param("a.b.$ref", {"a": [{"b": {"$ref": "old", "$id": 0}}]}, {}, {"$set": {"a.0.b.$ref": "new"}},
                 {"a.b.$ref": "new"}, {"a.b.$ref": "old"}, False, id="a.0.b.$ref"),
    ("a.b", {"a": {"b": "old"}}, {}, {"$set": {"a": {"b": "new"}}}, {"a.b": "new"}, {"a.b": "old"}, False),
], ids=lambda v: str(v) if isinstance(v, dict) and len(str(v)) < 40 else None)
def test_positional_and_index_updates_keep_indexes_right(db, index, doc, q, u, new_q, old_q, old_stays):
    """update_arraymatch8.js (SERVER-7511): updates through ``$``, an index (``.0``, ``.12``), a nested
    array and a DBRef ``$ref`` leave an index on the updated path answering the new value and (unless
    other elements keep it) no longer the old one."""
    c = db.c
    c.create_index(index)
    if index == "a.b":
        c.create_index("a-b")
    c.insert_one(doc)
    ok(update(c, q, u))
    assert c.find_one(new_q) is not None
    assert (c.find_one(old_q) is not None) is old_stays


@pytest.mark.parametrize("doc, q, u", [
    ({"_id": 0, "a": [0]}, {"_id": 0, "a.0": 0}, {"$set": {"a.$": 1}}),
    ({"_id": 0, "a": [{"b": 0}]}, {"_id": 0, "a.0.b": 0}, {"$set": {"a.$.b": 1}}),
    ({"_id": 0, "a": [[0]]}, {"_id": 0, "a.0.0": 0}, {"$set": {"a.$.0": 1}}),
    ({"_id": 0, "a": [{"b": [0]}]}, {"_id": 0, "a.0.b.0": 0}, {"$set": {"a.$.b.0": 1}}),
], ids=["a.0", "a.0.b", "a.0.0", "a.0.b.0"])
def test_positional_needs_an_implicit_array_traversal(db, doc, q, u):
    """update_array_offset_positional.js: a query matching only through an array offset (``a.0``)
    gives ``$`` no position: the update fails and changes nothing."""
    db.c.insert_one(doc)
    write_error(update(db.c, q, u), BAD_VALUE)
    assert one(db.c) == doc


@pytest.mark.parametrize("doc, q, u, expected", [
    ({"_id": 0, "a": [{"b": [0, 1]}]}, {"_id": 0, "a.0.b": 1}, {"$set": {"a.0.b.$": 2}}, {"_id": 0, "a": [{"b": [0, 2]}]}),
    ({"_id": 0, "a": [{"b": [0, 1]}]}, {"_id": 0, "a.b.1": 1}, {"$set": {"a.$.b.1": 2}}, {"_id": 0, "a": [{"b": [0, 2]}]}),
    ({"_id": 0, "a": [0, 1], "b": [0]}, {"_id": 0, "a": 1, "b.0": 0}, {"$set": {"a.$": 2}},
     {"_id": 0, "a": [0, 2], "b": [0]}),
    ({"_id": 0, "a": [0, 1], "b": [{"c": 0}]}, {"_id": 0, "a": 1, "b.0.c": 0}, {"$set": {"a.$": 2}},
     {"_id": 0, "a": [0, 2], "b": [{"c": 0}]}),
    ({"_id": 0, "a": [0, 1], "b": [[0]]}, {"_id": 0, "a": 1, "b.0.0": 0}, {"$set": {"a.$": 2}},
     {"_id": 0, "a": [0, 2], "b": [[0]]}),
    ({"_id": 0, "a": [0, 1], "b": [{"c": [0]}]}, {"_id": 0, "a": 1, "b.0.c.0": 0}, {"$set": {"a.$": 2}},
     {"_id": 0, "a": [0, 2], "b": [{"c": [0]}]}),
], ids=["same_path_offset", "same_path_prefix", "other_b.0", "other_b.0.c", "other_b.0.0", "other_b.0.c.0"])
def test_array_offset_matches_do_not_provide_the_position(db, doc, q, u, expected):
    """update_array_offset_positional.js: offset matches (``a.0.b``, ``b.0``) never provide the
    position; the implicit traversal of the other predicate does."""
    db.c.insert_one(doc)
    ok(update(db.c, q, u))
    assert one(db.c) == expected


def test_add_to_set_documents_and_each_order(db):
    """update_addToSet2.js / update_addToSet3.js: distinct documents are both added; ``$each`` keeps its
    order, skips present values and duplicates within itself; a non-array ``$each`` is an error."""
    c = db.c
    c.insert_one({"_id": 1})
    ok(update(c, {}, {"$addToSet": {"kids": {"name": "Bob", "age": "4"}}}))
    ok(update(c, {}, {"$addToSet": {"kids": {"name": "Dan", "age": "2"}}}))
    assert len(one(c)["kids"]) == 2
    for each, expected in (([6, 5, 4], [6, 5, 4]), ([3, 2, 1], [6, 5, 4, 3, 2, 1]), ([4, 7, 9, 2], [6, 5, 4, 3, 2, 1, 7, 9]),
                           ([12, 13, 12], [6, 5, 4, 3, 2, 1, 7, 9, 12, 13])):
        ok(update(c, {"_id": 1}, {"$addToSet": {"a": {"$each": each}}}))
        assert one(c)["a"] == expected
    write_error(update(c, {"_id": 1}, {"$addToSet": {"a": {"$each": 0}}}), BAD_VALUE)
    write_error(update(c, {"_id": 1}, {"$addToSet": {"a": {"$each": {"a": 1}}}}), BAD_VALUE)


# --------------------------------------------------------------------------------------------------
# update_multi5.js, update_multi_upsert_fails.js, update_fail_halts_modifications.js,
# update_guarantee_id.js, update_invalid1.js, update_positional_inc.js, update_blank1.js
# --------------------------------------------------------------------------------------------------

def test_multi_updates(db):
    """update_multi5.js: ``$addToSet`` in a multi update reaches every document (nMatched 2);
    update_multi_upsert_fails.js: a replacement upsert works, a multi replacement is 9."""
    c = db.c
    c.insert_many([{"path": "r1", "subscribers": [1, 2]}, {"path": "r2", "subscribers": [3, 4]}])
    assert ok(update(c, {}, {"$addToSet": {"subscribers": 5}}, upsert=False, multi=True))["n"] == 2
    assert [len(d["subscribers"]) for d in c.find()] == [3, 3]
    c.drop()
    ok(update(c, {"_id": 1}, {"_id": 1, "x": 1, "y": 2}, upsert=True, multi=False))
    assert c.find_one({"_id": 1})
    error = write_error(update(c, {"_id": 2}, {"_id": 2, "x": 1, "y": 2}, upsert=True, multi=True), FAILED_TO_PARSE)
    assert error["errmsg"] == "multi update is not supported for replacement-style update"


def test_failing_multi_update_stops_at_the_failing_document(db):
    """update_fail_halts_modifications.js (SERVER-4779): a multi ``$push`` that fails on a non-array
    stops there: only the document before it was updated."""
    c = db.c
    c.insert_many([{"_id": 1, "a": []}, {"_id": 2, "a": 1}, {"_id": 3, "a": []}])
    error = write_error(update(c, {}, {"$push": {"a": 2}}, multi=True), BAD_VALUE)
    assert error["errmsg"] == "The field 'a' must be an array but is of type int in document {_id: 2}"
    assert c.count_documents({"a": 2}) == 1


def test_upserts_always_get_an_id(db):
    """update_guarantee_id.js: an operator upsert without ``_id`` in the query gets one; the second
    run updates the same document."""
    for _ in range(2):
        ok(update(db.c, {"a": 1}, {"$inc": {"b": 1}}, upsert=True))
        assert isinstance(db.c.find_one({"a": 1})["_id"], ObjectId)
    assert one(db.c)["b"] == 2


def test_upsert_may_create_a_top_level_dollar_field(db):
    """update_invalid1.js: since 5.0 only top-level ``$``-prefixed fields are validated, so
    ``{$set: {$inc: {x: 5}}}`` upserts a document (the jstest checks only that one exists)."""
    ok(update(db.c, {"_id": 5}, {"$set": {"$inc": {"x": 5}}}, upsert=True))
    assert db.c.count_documents({}) == 1


@pytest.mark.parametrize("indexed", [False, True], ids=["no_index", "index_arr"])
def test_positional_set_on_a_scalar_array(db, indexed):
    """update_positional_inc.js (SERVER-1055): ``arr.$`` replaces the matched string, with or
    without an index on ``arr``."""
    c = db.c
    c.insert_one({"_id": 1, "arr": ["A1", "B1", "C1"]})
    if indexed:
        c.create_index("arr")
    ok(update(c, {"arr": "A1"}, {"$set": {"arr.$": "A2"}}))
    assert one(c) == {"_id": 1, "arr": ["A2", "B1", "C1"]}
    assert c.find_one({"arr": "A2"}) is not None


def test_set_keeps_an_empty_field_name(db):
    """update_blank1.js (SERVER-2651): ``$set`` on a document with a field named "" keeps it, and the
    field order (the insert moved ``_id`` first)."""
    db.c.insert_one({"": 1, "_id": 2, "a": 3, "b": 4})
    ok(update(db.c, {}, {"$set": {"c": 5}}))
    assert list(one(db.c).items()) == [("_id", 2), ("", 1), ("a", 3), ("b", 4), ("c", 5)]


# --------------------------------------------------------------------------------------------------
# inc_negative_overflow.js
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("start, inc, expected", [(2**31 - 1, 1, Int64(2**31)), (-(2**31), -1, Int64(-(2**31) - 1))],
                         ids=["int32_max", "int32_min"])
def test_int32_overflow_spills_to_int64(db, start, inc, expected):
    """inc_negative_overflow.js: an int32 ``$inc`` past either end of its range becomes an int64."""
    db.c.insert_one({"_id": 1, "a": start})
    assert ok(update(db.c, {}, {"$inc": {"a": inc}}))["n"] == 1
    assert same(one(db.c)["a"], expected)


@pytest.mark.parametrize("op, start, arg", [("$inc", Int64(2**63 - 1), 1), ("$inc", Int64(-(2**63)), -1),
                                            ("$mul", Int64(2**62), 2), ("$mul", 2**30, Int64(2**40))],
                         ids=["inc_max", "inc_min", "mul_long", "mul_int_by_long"])
def test_int64_overflow_is_an_error(db, op, start, arg):
    """inc_negative_overflow.js: an int64 overflow fails the update (nMatched 0, 2 BadValue with
    mongod's message) and leaves the document."""
    db.c.insert_one({"_id": 1, "a": start})
    reply = update(db.c, {}, {op: {"a": arg}})
    error = write_error(reply, BAD_VALUE)
    kind = "NumberLong" if isinstance(start, Int64) else "NumberInt"
    assert error["errmsg"] == f"Failed to apply {op} operations to current value (({kind}){int(start)}) for document {{_id: 1}}"
    assert reply["n"] == 0 and same(one(db.c)["a"], start)


# --------------------------------------------------------------------------------------------------
# rename_operator.js, rename_operator_change_target_type.js, rename_operator_missing_source.js
# --------------------------------------------------------------------------------------------------

_RENAME_ALWAYS_BAD = [{"a": "a"}, {"": "a"}, {"a": ""}, {".a": "b"}, {"a": ".b"}, {"a.": "b"}, {"a": "b."}, {"a.b": "a"},
                      {"a.$": "b"}, {"a": "b.$"}]


@pytest.mark.parametrize("rename", _RENAME_ALWAYS_BAD, ids=str)
def test_rename_invalid_paths(db, rename):
    """rename_operator.js: same source and target, empty paths or parts, a path and its prefix, and
    positional paths are write errors."""
    db.c.insert_one({"_id": 1, "a": 2})
    write_error(update(db.c, {}, {"$rename": rename}))
    assert one(db.c) == {"_id": 1, "a": 2}


@pytest.mark.parametrize("u", [{"$rename": {"_id": "a"}}, {"$set": {"b": 1}, "$rename": {"a": "b"}},
                               {"$rename": {"a": "b"}, "$set": {"b": 1}}, {"$rename": {"a": "b"}, "$set": {"a": 1}},
                               {"$set": {"b.c": 1}, "$rename": {"a": "b"}}, {"$set": {"b": 1}, "$rename": {"a": "b.c"}},
                               {"$rename": {"a": "b"}, "$set": {"b.c": 1}}, {"$rename": {"a": "b.c"}, "$set": {"b": 1}}],
                         ids=str)
def test_rename_conflicts_with_other_operators_or_id(db, u):
    """rename_operator.js: renaming ``_id`` and a rename whose source or target another operator
    also writes (or a prefix of it) are write errors."""
    db.c.insert_one({"_id": 1, "a": 2})
    write_error(update(db.c, {}, u))
    assert one(db.c) == {"_id": 1, "a": 2}


@pytest.mark.parametrize("rename", [{"a.0": "f"}, {"a.0": "g"}, {"f": "a.0"}, {"b.c.0": "f"}, {"f": "b.c.0"},
                                    {"d.e": "d.f"}, {"d.e": "f"},
                                    {"d.f": "d.e"}, {"f": "d.e"}, {"d.0.e": "d.f"},
                                    {"d.0.e": "f"}, {"d.f": "d.0.e"}, {"f": "d.0.e"}, {"f.g": "a"}, {"a": "f.g"}],
                         ids=str)
def test_rename_through_arrays_or_scalars_fails(db, rename):
    """rename_operator.js: a source or target inside an array (``a.0``, ``d.e`` over an array of
    documents) or under a scalar (``f.g``) is a write error."""
    doc = {"_id": 1, "a": [1], "b": {"c": [2]}, "d": [{"e": 3}], "f": 4}
    db.c.insert_one(doc)
    error = write_error(update(db.c, {}, {"$rename": rename}))
    source = next(iter(rename))
    if source in ("d.e", "f.g"):  # a source through an array by name, or through a scalar: not viable
        blocked = source.split(".")[0]
        assert error["code"] == PATH_NOT_VIABLE
        assert error["errmsg"] == (f"cannot use the part ({blocked} of {source}) to traverse the element "
                                   f"({{{blocked}: {'[ { e: 3 } ]' if blocked == 'd' else '4'}}})")
    assert one(db.c) == doc


RENAME_GOOD = [
    ({"a": 1}, {"$rename": {"a": "b"}}, {"b": 1}),
    ({"b": 1}, {"$rename": {"b": "a"}}, {"a": 1}),
    ({"a": {"y": 1}}, {"$rename": {"a.y": "a.z"}}, {"a": {"z": 1}}),
    ({"a": {"z": 1}}, {"$rename": {"a.z": "a.y"}}, {"a": {"y": 1}}),
    ({"a": {"c": 1}}, {"$rename": {"a": "b"}}, {"b": {"c": 1}}),
    ({"a": 1, "b": 2}, {"$rename": {"a": "b"}}, {"b": 1}),
    ({"a": 1, "bb": 2}, {"$rename": {"a": "bb"}}, {"bb": 1}),
    ({"a": 1}, {"$rename": {"a": "b.c"}}, {"b": {"c": 1}}),
    ({"a": 1, "b": {}}, {"$rename": {"a": "b.c"}}, {"b": {"c": 1}}),
    ({"a": 1}, {"$rename": {"b": "c"}}, {"a": 1}),
    ({}, {"$rename": {"b": "c"}}, {}),
    ({"a": {"b": 1, "c": 2}}, {"$rename": {"a.b": "d"}}, {"a": {"c": 2}, "d": 1}),
    ({"a": {"b": 1}}, {"$rename": {"a.b": "d"}}, {"a": {}, "d": 1}),
    ({"a": [5]}, {"$rename": {"a": "b"}}, {"b": [5]}),
    ({"0": 1}, {"$rename": {"0": "5"}}, {"5": 1}),
    ({"a": 1, "b": 2}, {"$rename": {"a": "c"}, "$set": {"b": 5}}, {"b": 5, "c": 1}),
    ({"a": 1, "b": 2}, {"$rename": {"z": "c"}, "$set": {"b": 5}}, {"a": 1, "b": 5}),
    ({"a": {"z": 1, "b": 1}}, {"$rename": {"a.b": "a.c"}}, {"a": {"z": 1, "c": 1}}),
    ({"a": {"z": 1, "tomato": 1, "potato": 1}}, {"$rename": {"a.tomato": "a.potato"}}, {"a": {"z": 1, "potato": 1}}),
    ({"a": {"z": 1, "b": 1, "c": 1}}, {"$rename": {"a.b": "aa.c"}}, {"a": {"z": 1, "c": 1}, "aa": {"c": 1}}),
    ({"a": 1, "c": 4}, {"$rename": {"b": "c.d"}}, {"a": 1, "c": 4}),
]


@pytest.mark.parametrize("start, u, expected", RENAME_GOOD, ids=[str(r[1]) for r in RENAME_GOOD])
def test_rename_good_cases(db, start, u, expected):
    """rename_operator.js: renames to new, existing (overwritten) and nested targets, from nested
    sources, of missing sources (no-op, even onto an invalid target), beside ``$set``. The jstest
    compares with docEq, which ignores field order: compared as sets of fields here."""
    db.c.insert_one({"_id": 1, **start})
    ok(update(db.c, {}, u))
    got = one(db.c)
    del got["_id"]
    assert got == expected


@pytest.mark.parametrize("start, u, query, expected", [
    ({"a": 1}, {"$rename": {"a": "b"}}, {"a": None}, {"b": 1}),
    ({"a": 1}, {"$rename": {"a": "bb"}}, {"a": None}, {"bb": 1}),
    ({"b": 1}, {"$rename": {"b": "a"}}, {"a": 1}, {"a": 1}),
    ({"bb": 1}, {"$rename": {"bb": "a"}}, {"a": 1}, {"a": 1}),
])
def test_rename_keeps_the_index_on_source_and_target_right(db, start, u, query, expected):
    """rename_operator.js: with an index on ``a``, renaming away from or onto ``a`` leaves the index
    answering the hinted query."""
    db.c.create_index("a")
    db.c.insert_one(start)
    ok(update(db.c, {}, u))
    got = db.c.find_one(query, hint=[("a", 1)])
    del got["_id"]
    assert got == expected


def test_rename_overwrites_the_target_type(db):
    """rename_operator_change_target_type.js (SERVER-32109): renaming a double onto an equal int64
    leaves a double."""
    db.c.insert_one({"to": Int64(100), "from": 100.0})
    ok(update(db.c, {}, {"$rename": {"from": "to"}}))
    assert type(one(db.c)["to"]) is float


def test_rename_missing_source(db):
    """rename_operator_missing_source.js (SERVER-4845): a rename of a missing source changes nothing,
    also beside ``$set``/``$inc`` and in upserts; several renames in one update."""
    c = db.c
    c.create_index("a")
    c.insert_one({"b": 1})
    ok(update(c, {}, {"$rename": {"a": "b"}}))
    ok(update(c, {}, {"$rename": {"a": "b"}, "$set": {"x": 1}}))
    ok(update(c, {}, {"$rename": {"a": "b"}, "$inc": {"x": 1}}))
    assert (one(c)["b"], one(c)["x"]) == (1, 2)
    for q, u, expected in (({"b": 1}, {"$rename": {"a": "b"}}, {"b": 1}),
                           ({"b": 1}, {"$rename": {"a": "b"}, "$set": {"c": 1}}, {"b": 1, "c": 1}),
                           ({"b": 1, "c": 2}, {"$rename": {"a": "b"}, "$inc": {"c": 1}}, {"b": 1, "c": 3})):
        c.drop()
        ok(update(c, q, u, upsert=True))
        got = one(c)
        del got["_id"]
        assert got == expected
    c.drop()
    c.insert_one({"b": 1, "x": 1})
    ok(update(c, {}, {"$rename": {"a": "b", "x": "y"}}))
    got = one(c)
    assert (got["b"], got["y"], "x" in got) == (1, 1, False)


# --------------------------------------------------------------------------------------------------
# push.js, push2.js, pull2.js, pull_or.js, pull_remove1.js, pullall2.js
# --------------------------------------------------------------------------------------------------

def test_push_and_pop_sequence(db):
    """push.js: ``$push`` appends; ``$pop`` 1/-1 removes the last/first element; popping an empty
    array or a missing field changes nothing."""
    c = db.c
    c.insert_one({"_id": 2, "a": [1]})
    for u, expected in (({"$push": {"a": 2}}, [1, 2]), ({"$push": {"a": 3}}, [1, 2, 3]), ({"$pop": {"a": 1}}, [1, 2]),
                        ({"$pop": {"a": -1}}, [2]), ({"$pop": {"a": -1}}, []), ({"$pop": {"a": 1}}, []),
                        ({"$pop": {"b": -1}}, []), ({"$pop": {"b": 1}}, [])):
        ok(update(c, {"_id": 2}, u))
        assert one(c) == {"_id": 2, "a": expected}, u


def test_push_past_the_document_size_limit_fails(db):
    """push2.js: pushing 700 KB strings eventually fails (the document would pass 16 MB) with a write
    error, and the stored document stays within the limit."""
    c = db.c
    c.insert_one({"_id": 1, "a": []})
    big = "," * 699999
    pushed = 0
    while "writeErrors" not in update(c, {}, {"$push": {"a": big}}):
        pushed += 1
        assert pushed < 30, "pushing 21 MB never failed"
    assert 20 <= pushed <= 24
    assert len(one(c)["a"]) == pushed


def test_pull_document_conditions(db):
    """pull2.js / pullall2.js / pull_remove1.js: ``$pull`` with a document condition removes every
    element it matches (extra fields allowed, operators such as ``$lt``/``$in`` inside); ``$pullAll``
    removes only exactly equal documents; ``$pull: {$lt: 6}`` on scalars."""
    c = db.c
    c.insert_one({"_id": 1, "a": [{"x": 1}, {"x": 1, "b": 2}]})
    ok(update(c, {}, {"$pull": {"a": {"x": 1}}}))
    assert one(c)["a"] == []
    ok(update(c, {}, {"$push": {"a": {"x": 1}}}))
    ok(update(c, {}, {"$push": {"a": {"x": 1, "b": 2}}}))
    ok(update(c, {}, {"$pullAll": {"a": [{"x": 1}]}}))
    assert one(c)["a"] == [{"x": 1, "b": 2}]
    for x in (2, 3, 4):
        ok(update(c, {}, {"$push": {"a": {"x": x, "b": 2}}}))
    ok(update(c, {}, {"$pull": {"a": {"x": {"$lt": 3}}}}))
    assert [z["x"] for z in one(c)["a"]] == [3, 4]
    c.drop()
    c.insert_one({"_id": 1, "a": [{"x": i, "y": i} for i in range(5)]})
    ok(update(c, {}, {"$pull": {"a": {"x": 3}}}))
    ok(update(c, {}, {"$pull": {"a": {"x": {"$in": [1, 4]}}}}))
    assert one(c)["a"] == [{"x": 0, "y": 0}, {"x": 2, "y": 2}]
    c.drop()
    c.insert_one({"_id": 1, "a": [1, 2, 3, 4, 5, 6, 7, 8]})
    ok(update(c, {}, {"$pull": {"a": {"$lt": 6}}}))
    assert one(c)["a"] == [6, 7, 8]


def test_pull_with_exists_and_or(db):
    """pull_or.js: ``$pull`` with ``{y: {$exists: true}}`` and with an ``$or`` of two ``$exists``."""
    c = db.c
    doc = {"_id": 1, "a": {"b": [{"x": 1}, {"y": "y"}, {"x": 2}, {"z": "z"}]}}
    c.insert_one(doc)
    ok(update(c, {}, {"$pull": {"a.b": {"y": {"$exists": True}}}}))
    assert one(c)["a"]["b"] == [{"x": 1}, {"x": 2}, {"z": "z"}]
    c.drop()
    c.insert_one(doc)
    ok(update(c, {}, {"$pull": {"a.b": {"$or": [{"y": {"$exists": True}}, {"z": {"$exists": True}}]}}}))
    assert one(c)["a"]["b"] == [{"x": 1}, {"x": 2}]


# --------------------------------------------------------------------------------------------------
# set4.js, set5.js, set6.js, set7.js, set_type_change.js, inc3.js
# --------------------------------------------------------------------------------------------------

def test_set_array_indexes_pad_with_nulls(db):
    """set7.js: ``$set`` of an index past the end pads with nulls (also two such indexes in one update,
    applied in index order); ``a.0`` on a missing ``a`` creates a document ``{"0": ...}`` (also from an
    upsert query); ``a.f`` on an array fails; ``a.2.b`` and ``a.2.c`` build one padded element; an
    upsert with an array equality then ``a.11``."""
    c = db.c
    c.insert_one({"a": [0, 1, 2, 3]})
    ok(update(c, {}, {"$set": {"a.0": 2}}))
    ok(update(c, {}, {"$set": {"a.4": 5}}))
    ok(update(c, {}, {"$set": {"a.9": 9}}))
    assert one(c)["a"] == [2, 1, 2, 3, 5, None, None, None, None, 9]
    for start, u, expected in (
            ([0, 1, 2, 3], {"a.9": 9, "a.7": 7}, [0, 1, 2, 3, None, None, None, 7, None, 9]),
            (list(range(11)), {"a.11": 11}, list(range(12))),
            (list(range(11)), {"a.11": 11, "a.2": -2}, [0, 1, -2, *range(3, 12)]),
            ([], {"a.2.b": 1, "a.2.c": 1}, [None, None, {"b": 1, "c": 1}])):
        c.drop()
        c.insert_one({"a": start})
        ok(update(c, {}, {"$set": u}))
        assert one(c)["a"] == expected, u
    c.drop()
    c.insert_one({})
    ok(update(c, {}, {"$set": {"a.0": 4}}))
    assert one(c)["a"] == {"0": 4}
    c.drop()
    ok(update(c, {"a.0": 4}, {"$set": {"b": 1}}, upsert=True))
    assert one(c)["a"] == {"0": 4}
    c.drop()
    c.insert_one({"a": []})
    write_error(update(c, {}, {"$set": {"a.f": 1}}), PATH_NOT_VIABLE)
    assert one(c)["a"] == []
    c.drop()
    ok(update(c, {"a": list(range(11))}, {"$set": {"a.11": 11}}, upsert=True))
    assert one(c)["a"] == list(range(12))


def test_set_padding_limit(db):
    """set7.js (SERVER-3750): padding 1,500,000 nulls is the limit; one more, or an index of a
    billion, is 34 CannotBackfillArray (and allocates nothing)."""
    c = db.c
    c.insert_one({"_id": 1, "a": []})
    error = write_error(update(c, {}, {"$set": {"a.1500001": 1}}), 34)
    assert error["errmsg"] == "can't backfill more than 1500000 elements"
    write_error(update(c, {}, {"$set": {"a.1000000000": 1}}), 34)
    assert one(c) == {"_id": 1, "a": []}
    ok(update(c, {}, {"$set": {"a.1500000": 1}}))
    assert len(one(c)["a"]) == 1500001


def test_set_of_an_equal_value_of_another_type_modifies(db):
    """set_type_change.js: ``$set`` of int64 2 over int32 2 modifies the document (nModified 1) and the
    stored type, with an index on the field."""
    c = db.c
    c.create_index("a")
    c.insert_one({"a": 2})
    reply = ok(update(c, {}, {"$set": {"a": Int64(2)}}))
    assert (reply["n"], reply["nModified"]) == (1, 1)
    assert type(one(c)["a"]) is Int64


def test_set_array_element_and_new_subdocument_together(db):
    """set4.js: ``a.0.x`` and ``foo.bar`` in one ``$set``, twice."""
    c = db.c
    c.insert_one({"_id": 1, "a": [{"x": 1}]})
    ok(update(c, {}, {"$set": {"a.0.x": 2, "foo.bar": 3}}))
    assert one(c) == {"_id": 1, "a": [{"x": 2}], "foo": {"bar": 3}}
    ok(update(c, {}, {"$set": {"a.0.x": 4, "foo.bar": 5}}))
    assert one(c) == {"_id": 1, "a": [{"x": 4}], "foo": {"bar": 5}}


def test_upsert_set_overrides_the_query_field(db):
    """set5.js: an upsert ``$set`` of the query's field wins; the new fields follow in field-name order."""
    ok(update(db.c, {"a": 5}, {"$set": {"a": 6, "b": None}}, upsert=True))
    doc = one(db.c)
    del doc["_id"]
    assert doc == {"a": 6, "b": None}
    db.c.drop()
    ok(update(db.c, {"z": 5}, {"$set": {"z": 6, "b": None}}, upsert=True))
    doc = one(db.c)
    del doc["_id"]
    assert list(doc.items()) == [("z", 6), ("b", None)]


def test_set_dbrefs(db):
    """set6.js: ``$set`` of a whole DBRef and of a new DBRef field."""
    c = db.c
    r = DBRef("foo", ObjectId())
    c.insert_one({"_id": 1, "r": r})
    r = DBRef("foo", ObjectId())
    ok(update(c, {}, {"$set": {"r": r}}))
    ok(update(c, {}, {"$set": {"r2": DBRef("foo2", 5)}}))
    assert one(c) == {"_id": 1, "r": r, "r2": DBRef("foo2", 5)}


def test_set_inside_a_dbref(db):
    """set6.js: ``$set`` of ``r.$id`` inside a stored DBRef."""
    c = db.c
    c.insert_one({"_id": 1, "r": DBRef("foo", ObjectId())})
    ok(update(c, {}, {"$set": {"r.$id": 2}}))
    assert one(c)["r"].id == 2


@pytest.mark.parametrize("doc", [{"_id": 1, "z": 1, "a": 1}, {"_id": 1, "a": 1, "z": 1}], ids=["z_first", "a_first"])
def test_inc_of_two_fields_keeps_their_order(db, doc):
    """inc3.js: ``$inc`` of two existing fields, in either order of the update, keeps the document's
    field order."""
    db.c.insert_one(doc)
    ok(update(db.c, {}, {"$inc": {"z": 1, "a": 1}}))
    ok(update(db.c, {}, {"$inc": {"a": 1, "z": 1}}))
    assert list(one(db.c).items()) == [(k, v if k == "_id" else 3) for k, v in doc.items()]


@pytest.mark.parametrize("fields, code, name", [
    ({"query": {"_id": 1}, "update": {"$set": {"a.1500001": 1}}}, 34, "CannotBackfillArray"),
    ({"query": {"_id.x": 1}, "update": {"a": 1}, "upsert": True}, 111, "NotExactValueField"),
], ids=["backfill", "not_exact"])
def test_find_and_modify_error_code_names(db, fields, code, name):
    """set7.js / upsert_fields.js through findAndModify, whose errors carry a codeName: 34
    CannotBackfillArray and 111 NotExactValueField."""
    db.c.insert_one({"_id": 1, "a": []})
    error = fam_fails(db.c, code, **fields)
    assert error.details["codeName"] == name


# --------------------------------------------------------------------------------------------------
# updateg.js, updatek.js (updatea/h/j/l/m.js are the older copies of the set_unset, dollar_fields,
# fail_halts_modifications, positional_no_array_elem and guarantee_id tests above)
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("start", [None, {"all": {}, "all-copy": {}}], ids=["upsert", "existing"])
def test_field_names_sorting_below_the_dot(db, start):
    """updateg.js (SERVER-3370): ``all.t`` and ``all-copy.t`` (``-`` sorts below ``.``) in one update;
    ``all11.t`` with ``all2.t``."""
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


def test_numerically_equal_field_names_are_distinct(db):
    """updatek.js (SERVER-4776): fields "1" and "01" of a document are different paths."""
    c = db.c
    c.insert_one({"_id": 0, "1": {}, "01": {}})
    ok(update(c, {}, {"$set": {"1.b": 1, "1.c": 2}}))
    assert one(c) == {"_id": 0, "1": {"b": 1, "c": 2}, "01": {}}
    c.drop()
    c.insert_one({"_id": 0, "1": {}, "01": {}})
    ok(update(c, {}, {"$set": {"1.b": 1, "01.c": 2}}))
    assert one(c) == {"_id": 0, "1": {"b": 1}, "01": {"c": 2}}


# --------------------------------------------------------------------------------------------------
# update2.js, update5.js, update7.js (update3/6/9.js are the older copies of update_mod_dotted,
# update_inc_create_embedded_field and update_push_numeric_subfield above)
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("indexed", [False, True], ids=["no_index", "index_a"])
def test_inc_of_the_queried_field(db, indexed):
    """update2.js: ``$inc`` of the field the query matched on, with and without an index on it."""
    c = db.c
    c.insert_one({"a": 4})
    if indexed:
        c.create_index("a")
    ok(update(c, {"a": 4}, {"$inc": {"a": 2}}))
    assert one(c)["a"] == 6


@pytest.mark.parametrize("key", [{"a": 5}, {"a": 5, "b": 7}, {"a": None, "b": 7}, {"referer": "blah"},
                                 {"referer": "blah", "lame": "bar"}, {"referer": "blah", "name": "bar"},
                                 {"date": None, "referer": "blah", "name": "bar"}], ids=str)
def test_repeated_upserts_find_the_upserted_document(db, key):
    """update5.js: the same upsert three times inserts once then increments (null equalities too),
    and still finds it once an index on the query's fields exists."""
    c = db.c
    for n in (1, 2, 3):
        ok(update(c, key, {"$inc": {"n": 1}}, upsert=True))
        assert c.count_documents({}) == 1 and one(c)["n"] == n
    c.create_index(list((k, 1) for k in key))
    ok(update(c, key, {"$inc": {"n": 1}}, upsert=True))
    assert c.count_documents({}) == 1 and one(c)["n"] == 4


def _xs(c) -> list:
    return [d.get("x") for d in c.find().sort("_id", 1)]


@pytest.mark.parametrize("indexed", [False, True], ids=["no_index", "indexed"])
def test_single_and_multi_updates_over_plain_and_multikey_fields(db, indexed):
    """update7.js: a non-multi update changes the first match only, a multi update every match, with
    and without indexes on the queried (also multikey) fields; ``$inc`` creates a missing ``x``; a
    multi ``$inc`` of an indexed field moves every document once."""
    c = db.c
    c.insert_many([{"_id": 1, "x": 1, "a": 1, "b": 1}, {"_id": 2, "x": 5, "a": 1, "b": 2}])
    if indexed:
        c.create_index("a")
        c.create_index("b")
    ok(update(c, {}, {"$inc": {"x": 1}}))
    assert _xs(c) == [2, 5]
    ok(update(c, {"a": 1}, {"$inc": {"x": 1}}, multi=True))
    ok(update(c, {"b": 1}, {"$inc": {"x": 1}}, multi=True))
    ok(update(c, {"b": 3}, {"$inc": {"x": 1}}, multi=True))
    assert _xs(c) == [4, 6]
    c.drop()
    c.insert_many([{"_id": 1, "x": 1, "a": [1, 2]}, {"_id": 2, "x": 5, "a": [2, 3]}])
    if indexed:
        c.create_index("a")
    for q, expected in (({"a": 1}, [2, 5]), ({"a": 1}, [3, 5]), ({"a": 3}, [3, 6]), ({"a": 2}, [4, 7]),
                        ({"a": {"$gt": 0}}, [5, 8])):
        ok(update(c, q, {"$inc": {"x": 1}}, multi=True))
        assert _xs(c) == expected, q
    for i in range(3, 8):
        c.insert_one({"_id": i})
    c.insert_one({"_id": 8, "x": 1})
    ok(update(c, {}, {"$inc": {"x": 1}}, multi=True))
    assert _xs(c) == [6, 9, 1, 1, 1, 1, 1, 2]
    c.drop()
    c.insert_many([{"_id": i, "x": i} for i in (1, 2, 3)])
    c.create_index("x")
    assert ok(update(c, {"x": {"$gt": 0}}, {"$inc": {"x": 5}}, multi=True))["nModified"] == 3
    assert _xs(c) == [6, 7, 8]


# --------------------------------------------------------------------------------------------------
# collation_update.js
# --------------------------------------------------------------------------------------------------

CI = {"locale": "en_US", "strength": 2}
CS = {"locale": "en_US", "strength": 3}
NUMERIC = {"locale": "en_US", "numericOrdering": True}


def test_min_max_follow_the_collation(db):
    """collation_update.js: ``$min``/``$max`` compare strings with the operation's collation, else the
    collection default (numeric ordering: "1234" > "124"); an ``_id`` query with a hint on another
    index uses it too."""
    c = db.c
    db.create_collection("c", collation=NUMERIC)
    c.insert_one({"_id": 1, "a": "124"})
    ok(update(c, {"_id": 1}, {"$min": {"a": "1234"}}))
    assert one(c)["a"] == "124"
    c.create_index("foobar")
    ok(update(c, {"_id": 1}, {"$min": {"a": "49"}}, hint={"foobar": 1}))
    assert one(c)["a"] == "49"
    ok(update(c, {"_id": 1}, {"$min": {"a": "5"}}, hint={"_id": 1}))
    assert one(c)["a"] == "5"
    c.drop()
    c.insert_one({"a": "124"})
    ok(update(c, {"a": "124"}, {"$min": {"a": "1234"}}, collation=NUMERIC))
    assert one(c)["a"] == "124"
    ok(update(c, {"a": "124"}, {"$min": {"a": "1234"}}, collation=CS))
    assert one(c)["a"] == "1234"
    c.drop()
    c.insert_one({"a": "124"})
    ok(update(c, {"a": "124"}, {"$max": {"a": "1234"}}, collation=CS))
    assert one(c)["a"] == "124"
    ok(update(c, {"a": "124"}, {"$max": {"a": "1234"}}, collation=NUMERIC))
    assert one(c)["a"] == "1234"
    c.drop()
    db.create_collection("c", collation=NUMERIC)
    c.insert_one({"a": "124"})
    ok(update(c, {"a": "124"}, {"$max": {"a": "1234"}}))
    assert one(c)["a"] == "1234"


def test_array_operators_follow_the_collation(db):
    """collation_update.js: ``$addToSet`` (also with ``$each``), ``$pull`` (equality and ``$lt``) and
    ``$pullAll`` compare with the operation's collation, else the collection default."""
    c = db.c
    c.insert_one({"a": ["foo"]})
    ok(update(c, {}, {"$addToSet": {"a": "FOO"}}, collation=CI))
    assert one(c)["a"] == ["foo"]
    ok(update(c, {}, {"$addToSet": {"a": "FOO"}}, collation=CS))
    assert one(c)["a"] == ["foo", "FOO"]
    c.drop()
    c.insert_one({"a": ["foo", "bar", "FOO"]})
    ok(update(c, {}, {"$addToSet": {"a": {"$each": ["FOO", "BAR", "str"]}}}, collation=CI))
    assert one(c)["a"] == ["foo", "bar", "FOO", "str"]
    c.drop()
    c.insert_one({"a": ["foo", "FOO"]})
    ok(update(c, {}, {"$pull": {"a": "foo"}}, collation=CS))
    assert one(c)["a"] == ["FOO"]
    ok(update(c, {}, {"$pull": {"a": "foo"}}, collation=CI))
    assert one(c)["a"] == []
    c.drop()
    c.insert_one({"a": ["124", "1234"]})
    ok(update(c, {}, {"$pull": {"a": {"$lt": "1234"}}}, collation=CS))
    assert one(c)["a"] == ["124", "1234"]
    ok(update(c, {}, {"$pull": {"a": {"$lt": "1234"}}}, collation=NUMERIC))
    assert one(c)["a"] == ["1234"]
    c.drop()
    c.insert_one({"a": ["foo", "bar"]})
    ok(update(c, {}, {"$pullAll": {"a": ["FOO", "BAR"]}}, collation=CS))
    assert one(c)["a"] == ["foo", "bar"]
    ok(update(c, {}, {"$pullAll": {"a": ["FOO", "BAR"]}}, collation=CI))
    assert one(c)["a"] == []
    for u, start, expected in (({"$addToSet": {"a": "FOO"}}, ["foo"], ["foo"]), ({"$pull": {"a": "foo"}}, ["foo", "FOO"], []),
                               ({"$pullAll": {"a": ["FOO", "BAR"]}}, ["foo", "bar"], [])):
        c.drop()
        db.create_collection("c", collation=CI)
        c.insert_one({"a": start})
        ok(update(c, {}, u))
        assert one(c)["a"] == expected, u


def test_push_sort_and_positional_follow_the_collation(db):
    """collation_update.js: ``$push`` ``$sort`` orders strings by the collation (operation's or
    default); the positional ``$`` finds the element the collation-aware query matched."""
    c = db.c
    for options, default, expected in (({"collation": CS}, None, ["1230", "1234", "124"]),
                                       ({"collation": NUMERIC}, None, ["124", "1230", "1234"]),
                                       ({}, NUMERIC, ["124", "1230", "1234"])):
        c.drop()
        if default:
            db.create_collection("c", collation=default)
        c.insert_one({"a": ["1234", "124"]})
        ok(update(c, {}, {"$push": {"a": {"$each": ["1230"], "$sort": 1}}}, **options))
        assert one(c)["a"] == expected
    c.drop()
    c.insert_one({"a": ["foo", "FOO"]})
    ok(update(c, {"a": "FOO"}, {"$set": {"a.$": "FOO"}}, collation=CS))
    assert one(c)["a"] == ["foo", "FOO"]
    ok(update(c, {"a": "FOO"}, {"$set": {"a.$": "FOO"}}, collation=CI))
    assert one(c)["a"] == ["FOO", "FOO"]
    c.drop()
    db.create_collection("c", collation=CI)
    c.insert_one({"a": ["foo", "FOO"]})
    ok(update(c, {"a": "FOO"}, {"$set": {"a.$": "FOO"}}))
    assert one(c)["a"] == ["FOO", "FOO"]


@pytest.mark.parametrize("stage", ["$addFields", "$project", "$replaceWith"])
def test_pipeline_updates_follow_the_collation(db, stage):
    """collation_update.js: ``$indexOfArray`` in a pipeline update compares with the operation's
    collation (case-sensitive finds "B" at 5, case-insensitive "b" at 3) or the collection default."""
    c = db.c
    expr = {"newField": {"$indexOfArray": ["$x", "B"]}}
    u = [{stage: expr}]
    for options, default, expected in (({"collation": CS}, None, 5), ({"collation": CI}, None, 3), ({}, CI, 3)):
        c.drop()
        if default:
            db.create_collection("c", collation=default)
        c.insert_one({"x": [1, 2, "a", "b", "c", "B"]})
        ok(update(c, {}, u, **options))
        assert one(c)["newField"] == expected


# --------------------------------------------------------------------------------------------------
# update_arraymatch3.js, update_arraymatch5.js, update_arraymatch6.js, update_arraymatch7.js
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("indexed", [False, True], ids=["no_index", "indexed"])
def test_positional_updates_with_and_without_indexes(db, indexed):
    """update_arraymatch3/5/6/7.js (SERVER-5067): ``$`` with a multi ``$inc``, two ``$``-paths in one
    ``$set`` beside a compound multikey index, replacing a matched element's array, an index-only
    match; with and without indexes."""
    c = db.c
    if indexed:
        c.create_index("a.id")
        c.create_index("a.b")
        c.create_index([("abc.visible", 1), ("testarray.visible", 1), ("testarray.xxx", 1)])
    c.insert_one({"_id": 1, "title": "ABC", "comments": [{"by": "joe", "votes": 3}, {"by": "jane", "votes": 7}]})
    ok(update(c, {"comments.by": "joe"}, {"$inc": {"comments.$.votes": 1}}, multi=True))
    assert one(c)["comments"] == [{"by": "joe", "votes": 4}, {"by": "jane", "votes": 7}]
    c.delete_many({})
    c.insert_one({"abc": {"visible": True}, "testarray": [{"foobar_id": 316, "visible": True, "xxx": 1}]})
    ok(update(c, {"testarray.foobar_id": 316}, {"$set": {"testarray.$.visible": True, "testarray.$.xxx": 2}}, multi=True))
    assert c.find_one({"abc.visible": True, "testarray": {"$elemMatch": {"visible": True, "xxx": 2}}})
    assert c.count_documents({}) == 1
    c.delete_many({})
    c.insert_one({"a": [{"id": 1, "x": [5, 6, 7]}, {"id": 2, "x": [8, 9, 10]}]})
    ok(update(c, {"a.id": 1}, {"$set": {"a.$.x": [1, 1, 1]}}))
    assert one(c)["a"][0]["x"] == [1, 1, 1]
    c.delete_many({})
    c.insert_one({"a": [{"b": "match", "count": 0}]})
    ok(update(c, {"a.b": "match"}, {"$inc": {"a.$.count": 1}}))
    assert c.find_one({"a.count": 1})


@pytest.mark.parametrize("path, message", [
    ("a.$.b.$.c", "Too many positional (i.e. '$') elements found in path 'a.$.b.$.c'"),
    ("$.a", "Cannot have positional (i.e. '$') element in the first position in path '$.a'"),
    ("$[]", "Cannot have array filter identifier (i.e. '$[<id>]') element in the first position in path '$[]'"),
], ids=["two_positionals", "positional_first", "all_positional_first"])
def test_positional_placement_errors(db, path, message):
    """update_positional_no_array_elem.js (SERVER-831) and mongod's update parser: two ``$`` in one
    path, a ``$`` or ``$[]`` first, are 2 BadValue when the update is parsed (before any document)."""
    db.c.insert_one({"_id": 0, "a": [{"b": {"c": 1}}]})
    error = write_error(update(db.c, {"a.b.c": 1}, {"$set": {path: 2}}), BAD_VALUE)
    assert error["errmsg"] == message


# --------------------------------------------------------------------------------------------------
# batch_write_command_update.js
# --------------------------------------------------------------------------------------------------

def _batch(coll, updates, **options) -> dict:
    return coll.database.command("update", coll.name, updates=updates, **options)


def test_update_command_reply_shapes(db):
    """batch_write_command_update.js: no ``updates`` fails the command; an upsert answers n 1,
    nModified 0 and ``upserted: [{index, _id}]``; an update nModified 1 and no ``upserted``; a mixed
    unordered batch; a multi update with a no-op document (nModified counts real changes)."""
    c = db.c
    with pytest.raises(OperationFailure) as info:
        db.command("update", "c")
    assert isinstance(info.value.code, int)
    for options in ({}, {"writeConcern": {"w": 1}}, {"writeConcern": {"w": 1}, "ordered": True}):
        c.delete_many({})
        reply = _batch(c, [{"q": {"a": 1}, "u": {"$set": {"a": 1}}, "upsert": True}], **options)
        assert (reply["n"], reply["nModified"], len(reply["upserted"]), reply["upserted"][0]["index"]) == (1, 0, 1, 0)
        assert c.count_documents({"_id": reply["upserted"][0]["_id"]}) == 1
    c.delete_many({})
    c.insert_one({"a": 1})
    reply = _batch(c, [{"q": {"a": 1}, "u": {"$set": {"c": 1}}}], writeConcern={"w": 1})
    assert (reply["n"], reply["nModified"], "upserted" in reply) == (1, 1, False)
    c.delete_many({})
    c.insert_one({"b": 1})
    reply = _batch(c, [{"q": {"b": 1}, "u": {"$set": {"b": 1, "a": 1}}, "upsert": True},
                       {"q": {"b": 2}, "u": {"$set": {"b": 2, "a": 1}}, "upsert": True}], ordered=False)
    assert (reply["n"], reply["nModified"], [u["index"] for u in reply["upserted"]]) == (2, 1, [1])
    assert c.count_documents({}) == 2
    c.delete_many({})
    c.insert_many([{"a": 1, "c": 2}, {"a": 1}])
    reply = _batch(c, [{"q": {"a": 1}, "u": {"$set": {"c": 2}}, "multi": True}], ordered=False)
    assert (reply["n"], reply["nModified"]) == (2, 1)


def test_update_batch_size_limit(db):
    """batch_write_command_update.js: a large batch runs every statement (2,000 ``$inc`` here: the
    jstest's 100,000 take half a minute on a shared machine), 100,001 statements fail the whole
    command (16 InvalidLength) before any runs."""
    c = db.c
    c.insert_one({"a": 0})
    reply = _batch(c, [{"q": {}, "u": {"$inc": {"a": 1}}}] * 2000, ordered=False)
    assert (reply["n"], reply["nModified"]) == (2000, 2000)
    with pytest.raises(OperationFailure) as info:
        _batch(c, [{"q": {}, "u": {"$inc": {"a": 1}}}] * 100001, ordered=False)
    assert info.value.code == 16
    assert one(c)["a"] == 2000


@pytest.mark.parametrize("ordered", [True, False], ids=["ordered", "unordered"])
def test_upserts_hitting_a_unique_index(db, ordered):
    """batch_write_command_update.js: upserts that collide on a unique index are write errors; an
    ordered batch stops at the first, an unordered one goes on; ``upserted`` lists the others."""
    c = db.c
    c.create_index("a", unique=True)
    if ordered:
        updates = [{"q": {"b": 1}, "u": {"$set": {"b": 1, "a": 1}}, "upsert": True},
                   {"q": {"b": 3}, "u": {"$set": {"b": 3, "a": 2}}, "upsert": True},
                   {"q": {"b": 2}, "u": {"$set": {"b": 2, "a": 1}}, "upsert": True}]
        errors, upserted = [2], [0, 1]
    else:
        updates = [{"q": {"b": 1}, "u": {"$set": {"b": 1, "a": 1}}, "upsert": True},
                   {"q": {"b": 2}, "u": {"$set": {"b": 2, "a": 1}}, "upsert": True},
                   {"q": {"b": 2}, "u": {"$set": {"b": 2, "a": 1}}, "upsert": True},
                   {"q": {"b": 3}, "u": {"$set": {"b": 3, "a": 3}}, "upsert": True}]
        errors, upserted = [1, 2], [0, 3]
    reply = _batch(c, updates, ordered=ordered)
    assert (reply["n"], reply["nModified"]) == (2, 0)
    assert [e["index"] for e in reply["writeErrors"]] == errors
    assert all(e["code"] == 11000 for e in reply["writeErrors"])
    assert [u["index"] for u in reply["upserted"]] == upserted


# --------------------------------------------------------------------------------------------------
# find_and_modify2.js, find_and_modify4.js, upsert_by_id.js, update_hint.js
# (upsert_fields_duplicate_or.js needs FCV 7.3: 7.0 does not merge the duplicated $or clauses)
# --------------------------------------------------------------------------------------------------

def test_find_and_modify_fields_projection(db):
    """find_and_modify2.js: ``fields`` inclusion/exclusion (``_id`` kept unless excluded) on the post-
    and pre-image."""
    c = db.c
    c.insert_one({"_id": 1, "i": 0, "j": 0})
    assert fam(c, update={"$inc": {"i": 1}}, new=True, fields={"i": 1})["value"] == {"_id": 1, "i": 1}
    assert fam(c, update={"$inc": {"i": 1}}, fields={"i": 0})["value"] == {"_id": 1, "j": 0}
    assert fam(c, update={"$inc": {"i": 1}}, fields={"_id": 0, "j": 1})["value"] == {"j": 0}
    assert fam(c, update={"$inc": {"i": 1}}, fields={"_id": 0, "j": 1}, new=True)["value"] == {"j": 0}


def test_find_and_modify_counters_and_upsert_images(db):
    """find_and_modify4.js: the auto-increment counter pattern (upsert + ``new``); without ``new`` an
    upsert answers null and later calls the pre-image; a generated ``_id`` with the query's fields."""
    c = db.c

    def next_val(name):
        return fam(c, query={"_id": name}, update={"$inc": {"val": 1}}, upsert=True, new=True)["value"]

    assert [next_val(n) for n in "aaazza"] == [{"_id": "a", "val": 1}, {"_id": "a", "val": 2}, {"_id": "a", "val": 3},
                                               {"_id": "z", "val": 1}, {"_id": "z", "val": 2}, {"_id": "a", "val": 4}]
    c.drop()

    def helper(upsert):
        return fam(c, query={"_id": "asdf"}, update={"$inc": {"val": 1}}, upsert=upsert, new=False)["value"]

    assert helper(False) is None and c.count_documents({}) == 0
    assert helper(True) is None and c.count_documents({}) == 1
    assert [helper(True), helper(False), helper(True)] == [{"_id": "asdf", "val": v} for v in (1, 2, 3)]
    out = fam(c, query={"a": 1}, update={"$set": {"b": 2}}, upsert=True, new=True)["value"]
    assert isinstance(out["_id"], ObjectId) and (out["a"], out["b"]) == (1, 2)


@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(val=st.integers(-(2**31), 2**31 - 1))
def test_upsert_by_id_eq_matches_the_stored_id(db, val):
    """upsert_by_id.js (fast-check there, Hypothesis here): an upsert by ``{_id: {$eq: v}}`` finds the
    stored ``_id`` v (a number, ``{foo: v}``, ``{eq: v}``): nMatched 1, nothing upserted, nModified 1."""
    c = db.c
    c.drop()
    for rhs in (val, {"foo": val}, {"eq": val}):
        c.insert_one({"_id": rhs})
        reply = ok(update(c, {"_id": {"$eq": rhs}}, {"$set": {"a": 1}}, upsert=True))
        assert (reply["n"], reply["nModified"], "upserted" in reply) == (1, 1, False)


def test_update_hints(db):
    """update_hint.js: a hinted sparse index limits a multi update to the documents it holds, and can
    make an upsert insert although a document matches; a numeric or boolean hint is 9; a hint naming
    no index is 2."""
    c = db.c
    c.insert_many([{"x": 1}, {"x": 1}, {"x": 1, "s": 0}, {"x": 1, "s": 0}])
    c.create_index("x")
    c.create_index("s", sparse=True)
    ok(update(c, {}, {"$set": {"s": 1}}, hint={"s": 1}, multi=True))
    assert c.count_documents({"s": 1}) == 2
    c.insert_one({"x": 2})
    reply = ok(update(c, {"x": 2}, {"$set": {"x": 1}}, hint={"s": 1}, upsert=True))
    assert len(reply["upserted"]) == 1
    for hint in (1, True):
        with pytest.raises(OperationFailure) as info:
            update(c, {"_id": 1}, {"$set": {"y": 1}}, hint=hint)
        assert info.value.code == FAILED_TO_PARSE
    write_error(update(c, {"_id": 1}, {"$set": {"y": 1}}, hint={"badHint": 1}), BAD_VALUE)


# --------------------------------------------------------------------------------------------------
# update_set_large_numeric_field.js, update_upsert_add_filter.js, update_dbref.js,
# find_and_modify3.js, find_and_modify_where.js (update_numeric_eq_strings.js is updatek.js above)
# --------------------------------------------------------------------------------------------------

def test_set_numeric_looking_field_names_in_documents(db):
    """update_set_large_numeric_field.js (SERVER-1347): numeric-looking names (leading zeros, past
    int64) in documents are plain field names, distinct from each other; empty path parts are 56."""
    c = db.c
    c.insert_one({"_id": 1, "actual": {"key1": "val1", "001": "val3", "002": "val4", "0020000000000000000000": "val5"},
                  "profile-id": "test"})
    ok(update(c, {"profile-id": "test"}, {"$set": {"actual.0030000000000000000000": "val6"}}))
    ok(update(c, {"profile-id": "test"}, {"$set": {"actual.02": "v4"}}))
    ok(update(c, {"_id": 1}, {"$set": {"actual.2139043290148390248219423941.b": 4}}))
    ok(update(c, {"_id": 1}, {"$set": {"7213647182934612837492342341": 1}}))
    ok(update(c, {"_id": 1}, {"$set": {"7213647182934612837492342342": 2}}))
    for name in ("000", "00", "000", "01"):
        ok(update(c, {"_id": 1}, {"$set": {f"actual.{name}": f"val{name}"}}))
    q = one(c)
    assert (q["actual"]["0020000000000000000000"], q["actual"]["0030000000000000000000"]) == ("val5", "val6")
    assert (q["actual"]["02"], q["actual"]["002"], q["actual"]["2139043290148390248219423941"]) == ("v4", "val4", {"b": 4})
    assert (q["7213647182934612837492342341"], q["7213647182934612837492342342"]) == (1, 2)
    assert (q["actual"]["000"], q["actual"]["00"], q["actual"]["01"]) == ("val000", "val00", "val01")
    for path in ("0..", "0..0", ".0", "..0", "0.0..0"):
        write_error(update(c, {"_id": 1}, {"$set": {path: "val01"}}), 56)


def test_upsert_builds_subdocuments_from_dotted_equalities(db):
    """update_upsert_add_filter.js: ``{'x.y': 2}`` seeds ``x: {y: 2}`` next to the ``$inc`` field."""
    ok(update(db.c, {"x.y": 2}, {"$inc": {"a": 7}}, upsert=True))
    got = one(db.c)
    del got["_id"]
    assert got == {"a": 7, "x": {"y": 2}}


def test_dbref_field_names_refused_at_the_top_level(db):
    """update_dbref.js: ``$id``, ``$ref``, ``$db`` cannot be set as top-level fields (the error names
    the field); the stored DBRef is left alone."""
    c = db.c
    c.insert_one({"_id": 1, "a": DBRef("a", "b")})
    for field, value in (("$id", 3), ("$ref", "foo"), ("$db", "aDB")):
        error = write_error(update(c, {}, {"$set": {field: value}}))
        assert field in error["errmsg"]
    assert one(c) == {"_id": 1, "a": DBRef("a", "b")}


def test_set_fields_of_a_stored_dbref(db):
    """update_dbref.js: ``$set`` of ``a.$id`` and ``a.$ref`` inside a stored DBRef."""
    c = db.c
    c.insert_one({"_id": 1, "a": DBRef("a", "b")})
    ok(update(c, {}, {"$set": {"a.$id": 2}}))
    ok(update(c, {}, {"$set": {"a.$ref": "b"}}))
    assert one(c) == {"_id": 1, "a": DBRef("b", 2)}


def test_find_and_modify_positional_with_sort_and_where(db):
    """find_and_modify3.js: ``comments.$.j`` through findAndModify with a sort modifies only the
    matched document's matched element; find_and_modify_where.js: a ``$where`` query."""
    c = db.c
    docs = [{"_id": i, "other": i, "comments": [{"i": 0, "j": 0}, {"i": 1, "j": 1}]} for i in range(3)]
    c.insert_many(docs)
    out = fam(c, query={"_id": 1, "comments.i": 0}, update={"$set": {"comments.$.j": 2}}, new=True,
              sort={"other": 1})["value"]
    assert out["comments"] == [{"i": 0, "j": 2}, {"i": 1, "j": 1}]
    out = fam(c, query={"other": 1, "comments.i": 1}, update={"$set": {"comments.$.j": 3}}, new=True,
              sort={"other": 1})["value"]
    assert out["comments"] == [{"i": 0, "j": 2}, {"i": 1, "j": 3}]
    assert one(c, {"_id": 0}) == docs[0] and one(c, {"_id": 2}) == docs[2]
    c.drop()
    c.insert_one({"_id": 1, "x": 1})
    fam(c, query={"$where": "return this.x == 1"}, update={"$set": {"y": 1}})
    assert one(c)["y"] == 1


# --------------------------------------------------------------------------------------------------
# Hypothesis: the order an operator update creates new fields in (verify_update_mods.js and the 5.0
# rule that updates apply in field-name order, mongod's cmpPathsAndArrayIndexes)
# --------------------------------------------------------------------------------------------------

def _mongod_path_cmp(a: str, b: str) -> int:
    """A direct transcription of the comparator's rules, as the reference model."""
    def less(x: str, y: str) -> bool:
        plain = (not x or not y or not x[0].isdigit() or not y[0].isdigit() or (x[0] == "0" and len(x) > 1)
                 or (y[0] == "0" and len(y) > 1))
        if plain:
            return x.encode() < y.encode()
        if len(x.encode()) != len(y.encode()):
            return len(x.encode()) < len(y.encode())
        return x.encode() < y.encode()
    return -1 if less(a, b) else 1 if less(b, a) else 0


_field_names = st.text(alphabet="019-ab", min_size=1, max_size=3)


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(names=st.lists(_field_names, min_size=1, max_size=6, unique=True))
def test_new_fields_are_created_in_mongods_path_order(db, names):
    """Operators apply in mongod's path order (plain byte order, except that names led by a non-zero
    digit compare by length first): new fields of one subdocument appear in that order, after the
    existing ones, whatever the order of the update document."""
    c = db.c
    c.delete_many({})
    c.insert_one({"_id": 1, "x": {"keep": 0}})
    ok(update(c, {"_id": 1}, {"$set": {f"x.{n}": 1 for n in names}}))
    assert list(one(c)["x"]) == ["keep", *sorted(names, key=functools.cmp_to_key(_mongod_path_cmp))]


# --------------------------------------------------------------------------------------------------
# update_array_many_elements.js, update_validation_skip_field_names.js, update_options_object.js,
# find_and_modify_hint.js
# --------------------------------------------------------------------------------------------------

_SCORES = list(range(16))
MANY_ELEMENTS = [
    ({"$pop": {"scores": -1}}, None, _SCORES[1:]),
    ({"$pop": {"scores": 1}}, None, _SCORES[:-1]),
    ({"$pull": {"scores": {"$gte": 5, "$lte": 10}}}, None, [0, 1, 2, 3, 4, 11, 12, 13, 14, 15]),
    ({"$pullAll": {"scores": [1, 2, 3, 4, 5]}}, None, [0, *range(6, 16)]),
    ({"$push": {"scores": 16}}, None, list(range(17))),
    ({"$push": {"scores": {"$each": [16, 17, 18], "$position": 10, "$slice": -10}}}, None,
     [9, 16, 17, 18, 10, 11, 12, 13, 14, 15]),
    ({"$addToSet": {"scores": 10}}, None, _SCORES),
    ({"$addToSet": {"scores": {"$each": [14, 15, 16]}}}, None, list(range(17))),
    ({"$set": {"scores.1": 10, "scores.10": 100, "scores.13": 130}}, None,
     [0, 10, 2, 3, 4, 5, 6, 7, 8, 9, 100, 11, 12, 130, 14, 15]),
    ({"$set": {"scores.$[element]": 99}}, [{"element": {"$gte": 9}}], [*range(9), *[99] * 7]),
    ({"$set": {"scores.$[]": 99}}, None, [99] * 16),
    ({"$inc": {"scores.1": 10, "scores.10": 100, "scores.12": 1000}}, None,
     [0, 11, 2, 3, 4, 5, 6, 7, 8, 9, 110, 11, 1012, 13, 14, 15]),
    ({"$max": {"scores.1": 10, "scores.10": 10, "scores.12": 100}}, None,
     [0, 10, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 100, 13, 14, 15]),
    ({"$min": {"scores.1": 10, "scores.10": 10, "scores.12": 10}}, None,
     [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 10, 13, 14, 15]),
    ({"$mul": {"scores.1": 10, "scores.10": 100}}, None, [0, 10, 2, 3, 4, 5, 6, 7, 8, 9, 1000, 11, 12, 13, 14, 15]),
    ({"$unset": {"scores.1": "", "scores.10": "", "scores.12": ""}}, None,
     [0, None, 2, 3, 4, 5, 6, 7, 8, 9, None, 11, None, 13, 14, 15]),
    ({"$bit": {"scores.1": {"and": 10}, "scores.10": {"xor": 170}, "scores.13": {"or": 7}}}, None,
     [0, 0, 2, 3, 4, 5, 6, 7, 8, 9, 160, 11, 12, 15, 14, 15]),
]


@pytest.mark.parametrize("u, filters, expected", MANY_ELEMENTS, ids=[f"{next(iter(r[0]))}{i}" for i, r in enumerate(MANY_ELEMENTS)])
def test_arrays_of_more_than_ten_elements_keep_their_order(db, u, filters, expected):
    """update_array_many_elements.js (SERVER-91432): every operator on an array of 16 int32s keeps the
    elements in order (positions 10+ are not ordered as strings)."""
    db.c.insert_one({"_id": 1, "scores": _SCORES})
    ok(update(db.c, {"_id": 1}, u, **({"arrayFilters": filters} if filters else {})))
    assert same(one(db.c)["scores"], expected)


def test_array_many_elements_positional_rename_and_current_date(db):
    """update_array_many_elements.js: ``scores.$`` for the element 10, ``$rename`` of the array and
    ``$currentDate`` of positions 1 and 10."""
    c = db.c
    c.insert_one({"_id": 1, "scores": _SCORES})
    ok(update(c, {"_id": 1, "scores": 10}, {"$set": {"scores.$": 100}}))
    assert one(c)["scores"] == [*range(10), 100, *range(11, 16)]
    ok(update(c, {"_id": 1}, {"$rename": {"scores": "array"}}))
    assert list(one(c)) == ["_id", "array"]
    ok(update(c, {"_id": 1}, {"$currentDate": {"array.1": True, "array.10": True}}))
    got = one(c)["array"]
    assert isinstance(got[1], dt.datetime) and isinstance(got[10], dt.datetime) and got[11] == 11


def test_add_to_set_into_a_nested_array_element(db):
    """update_validation_skip_field_names.js (SERVER-12848): ``$addToSet`` on ``a.1`` where that element
    is an array."""
    db.c.insert_one({"_id": 1, "a": [1, []]})
    ok(update(db.c, {"_id": 1}, {"$addToSet": {"a.1": 1}}))
    assert one(db.c) == {"_id": 1, "a": [1, [1]]}


@pytest.mark.parametrize("options, q, updated, total", [
    ({"multi": True}, {"k": "x"}, 10, 10), ({"multi": False}, {"k": "x"}, 1, 10), ({"upsert": True}, {"k": "x"}, 1, 10),
    ({"upsert": True, "multi": True}, {"k": "x"}, 10, 10), ({"upsert": True}, {"k": "y"}, 1, 11),
    ({"upsert": False}, {"k": "x"}, 1, 10), ({"upsert": False}, {"k": "y"}, 0, 10),
], ids=["multi", "single", "upsert_found", "upsert_multi_found", "upsert_not_found", "found", "not_found"])
def test_update_options(db, options, q, updated, total):
    """update_options_object.js (SERVER-4176): multi / single / upsert found or not / no upsert."""
    c = db.c
    c.insert_many([{"_id": i, "k": "x", "a": []} for i in range(10)])
    ok(update(c, q, {"$push": {"a": "y"}}, **options))
    assert (c.count_documents({"a": "y"}), c.count_documents({})) == (updated, total)


def test_find_and_modify_hints(db):
    """find_and_modify_hint.js: a hinted sparse index limits which document is updated or removed and
    can make an upsert insert; numeric or boolean hints are 9, an unknown index 2."""
    c = db.c
    c.insert_many([{"_id": 0, "x": 1}, {"_id": 1, "x": 1}, {"_id": 2, "x": 1, "s": 0}])
    c.create_index("x")
    c.create_index("s", sparse=True)
    reply = fam(c, query={}, update={"$set": {"y": 1}}, hint={"s": 1}, new=True)
    assert reply["value"] == {"_id": 2, "x": 1, "s": 0, "y": 1}
    c.insert_one({"x": 2})
    reply = fam(c, query={"x": 2}, update={"$set": {"_id": 3, "y": 1}}, hint={"s": 1}, upsert=True, new=True)
    assert reply["lastErrorObject"]["upserted"] == 3 and reply["value"] == {"_id": 3, "x": 2, "y": 1}
    c.insert_one({"x": 1})
    assert fam(c, query={"x": 1}, remove=True, hint={"s": 1})["value"] == {"_id": 2, "x": 1, "s": 0, "y": 1}
    c.insert_one({"_id": 5, "x": 3})
    out = c.find_one_and_replace({"x": 3}, {"_id": 6, "y": 2}, hint=[("s", 1)], upsert=True,
                                 return_document=ReturnDocument.AFTER)
    assert out == {"_id": 6, "y": 2}
    for hint in (1, True):
        fam_fails(c, FAILED_TO_PARSE, query={"_id": 1}, update={"$set": {"y": 1}}, hint=hint)
    fam_fails(c, BAD_VALUE, query={"_id": 1}, update={"$set": {"y": 1}}, hint={"badHint": 1})


# --------------------------------------------------------------------------------------------------
# update_multi4.js, update_arraymatch1.js, update_arraymatch2.js (update_multi7.js is update7.js)
# --------------------------------------------------------------------------------------------------

def test_multi_update_through_an_index(db):
    """update_multi4.js: a multi ``$set`` selected through an index reaches all 84 matches."""
    c = db.c
    c.insert_many([{"_id": i, "k": i % 12, "v": f"v{i % 12}"} for i in range(1000)])
    c.create_index("k")
    assert c.count_documents({"k": 2, "v": "v2"}) == 84
    assert ok(update(c, {"k": 2}, {"$set": {"v": "two v2"}}, multi=True))["nModified"] == 84
    assert (c.count_documents({"k": 2, "v": "v2"}), c.count_documents({"k": 2, "v": "two v2"})) == (0, 84)


def test_positional_basics(db):
    """update_arraymatch1.js / update_arraymatch2.js: ``$`` of an array of documents and of scalars,
    under a subdocument (``x.y.$``), and on another array than the queried one (``y.$`` from
    ``x: 92``, elements in parallel positions); documents without the array are skipped."""
    c = db.c
    c.insert_one({"_id": 1, "a": [{"x": 1, "y": 1}, {"x": 2, "y": 2}, {"x": 3, "y": 3}]})
    ok(update(c, {"a.x": 2}, {"$set": {"b": 5}}))
    ok(update(c, {"a.x": 2}, {"$inc": {"a.$.y": 1}}))
    assert one(c) == {"_id": 1, "a": [{"x": 1, "y": 1}, {"x": 2, "y": 3}, {"x": 3, "y": 3}], "b": 5}
    c.drop()
    c.insert_many([{}, {"x": [1, 2, 3]}, {"x": 99}])
    ok(update(c, {"x": 2}, {"$inc": {"x.$": 1}}, multi=True))
    assert c.find_one({"x": 1})["x"] == [1, 3, 3]
    c.insert_one({"x": {"y": [8, 7, 6]}})
    ok(update(c, {"x.y": 7}, {"$inc": {"x.y.$": 1}}, multi=True))
    assert c.find_one({"x.y": 8})["x"]["y"] == [8, 8, 6]
    c.insert_one({"x": [90, 91, 92], "y": ["a", "b", "c"]})
    ok(update(c, {"x": 92}, {"$set": {"y.$": "z"}}, multi=True))
    assert c.find_one({"x": 92})["y"] == ["a", "b", "z"]


@pytest.mark.parametrize("fields", [{"query": 1}, {"query": 1, "remove": True, "update": {"a": 1}},
                                    {"sort": "x", "new": True, "remove": True}, {"fields": False, "upsert": True, "remove": True}],
                         ids=["no_update", "update_and_remove", "new_and_remove", "upsert_and_remove"])
def test_find_and_modify_field_types_are_checked_before_option_combinations(db, fields):
    """find_and_modify_invalid_query_params.js with find_and_modify.js: a non-object ``query``,
    ``sort`` or ``fields`` is 14 even beside conflicting options (mongod parses the command before
    validating the combination)."""
    db.c.insert_one({"_id": 0})
    fam_fails(db.c, TYPE_MISMATCH, **fields)
