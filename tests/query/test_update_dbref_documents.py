"""Pure unit tests: a stored DBRef (which pymongo decodes as a ``bson.dbref.DBRef``) is an ordinary
document to update paths, as it is to mongod: every operator can enter it (``a.$id``, ``a.$ref``,
``a.0.b.$db``), the result encodes to the bytes mongod would store, and a ``$set`` of an equal DBRef
is a no-op (update_dbref.js, set6.js, update_arraymatch8.js)."""

from __future__ import annotations

import bson
import pytest
from bson.dbref import DBRef

from tidemark.protocol.errors import MongoError
from tidemark.query.update import apply_update, parse_update
from tidemark.query.update_ops import deep_copy, identical


def run(doc: dict, update: dict, **kw):
    return apply_update(doc, parse_update(update, array_filters=kw.pop("array_filters", None)), **kw)


def stored(doc: dict) -> dict:
    """What a client reads back: the document encoded and decoded (a {$ref, $id} document is a DBRef)."""
    return bson.decode(bson.encode(doc))


@pytest.mark.parametrize("update, expected", [
    ({"$set": {"a.$id": 2}}, DBRef("c", 2)),
    ({"$set": {"a.$ref": "d"}}, DBRef("d", 1)),
    ({"$set": {"a.$db": "x"}}, DBRef("c", 1, "x")),
    ({"$inc": {"a.$id": 5}}, DBRef("c", 6)),
    ({"$mul": {"a.$id": 3}}, DBRef("c", 3)),
    ({"$max": {"a.$id": 9}}, DBRef("c", 9)),
    ({"$set": {"a.extra": True}}, DBRef("c", 1, extra=True)),
], ids=lambda v: str(v) if isinstance(v, dict) else None)
def test_operators_enter_a_stored_dbref(update, expected):
    new, changed = run({"_id": 0, "a": DBRef("c", 1)}, update)
    assert changed
    assert stored(new) == {"_id": 0, "a": expected}


def test_unset_inside_a_dbref_leaves_a_plain_document():
    new, changed = run({"_id": 0, "a": DBRef("c", 1, "db")}, {"$unset": {"a.$ref": 1}})
    assert changed and stored(new) == {"_id": 0, "a": {"$id": 1, "$db": "db"}}


def test_paths_through_arrays_and_positional_updates_reach_dbrefs():
    doc = {"_id": 0, "a": [{"b": DBRef("old", 0)}, {"b": DBRef("old", 1)}]}
    new, _ = run(doc, {"$set": {"a.0.b.$ref": "new"}})
    assert stored(new)["a"] == [{"b": DBRef("new", 0)}, {"b": DBRef("old", 1)}]
    new, _ = run(doc, {"$set": {"a.$[].b.$ref": "all"}})
    assert stored(new)["a"] == [{"b": DBRef("all", 0)}, {"b": DBRef("all", 1)}]
    new, _ = run(doc, {"$set": {"a.$.b.$id": 7}}, query={"a.b.$id": 1})
    assert stored(new)["a"] == [{"b": DBRef("old", 0)}, {"b": DBRef("old", 7)}]


def test_the_stored_document_is_not_mutated_and_keeps_its_bytes():
    doc = {"_id": 0, "a": DBRef("c", 1, "db", x=2)}
    before = bson.encode(doc)
    new, changed = run(doc, {"$set": {"b": 1}})
    assert changed and doc["a"] == DBRef("c", 1, "db", x=2)
    assert bson.encode({"_id": 0, "a": new["a"]}) == before


@pytest.mark.parametrize("value, same", [
    (DBRef("c", 1), True), (DBRef("c", 2), False), (DBRef("c", 1, "db"), False), ({"$ref": "c", "$id": 1}, True),
])
def test_set_of_an_equal_dbref_is_a_no_op(value, same):
    new, changed = run({"_id": 0, "a": DBRef("c", 1)}, {"$set": {"a": value}})
    assert changed is not same
    assert stored(new)["a"] == (DBRef("c", 1) if same else stored({"a": value})["a"])


def test_deep_copy_and_identical_treat_a_dbref_as_its_document():
    ref = DBRef("c", [1, 2], "db", extra={"k": 1})
    copied = deep_copy(ref)
    assert copied == {"$ref": "c", "$id": [1, 2], "$db": "db", "extra": {"k": 1}}
    assert identical(ref, copied) and identical(copied, ref) and identical(ref, DBRef("c", [1, 2], "db", extra={"k": 1}))
    assert not identical(ref, {"$id": [1, 2], "$ref": "c", "$db": "db", "extra": {"k": 1}})  # field order counts


def test_positional_paths_resolve_inside_a_dbref():
    """``$`` and ``$[]`` through an array held by a DBRef's extra field (the query matched inside it)."""
    doc = {"_id": 0, "r": DBRef("c", 1, arr=[1, 2, 3])}
    new, changed = run(doc, {"$set": {"r.arr.$": 5}}, query={"r.arr": 2})
    assert changed and stored(new)["r"] == DBRef("c", 1, arr=[1, 5, 3])
    new, _ = run(doc, {"$inc": {"r.arr.$[]": 10}})
    assert stored(new)["r"] == DBRef("c", 1, arr=[11, 12, 13])
    new, _ = run(doc, {"$set": {"r.arr.$[i]": 0}}, array_filters=[{"i": {"$gte": 2}}])
    assert stored(new)["r"] == DBRef("c", 1, arr=[1, 0, 0])


@pytest.mark.parametrize("update, code, message", [
    ({"$currentDate": {"a": DBRef("c", 1)}}, 2, "Unrecognized $currentDate option: $ref"),
    ({"$bit": {"a": DBRef("c", 1)}}, 2,
     "The $bit modifier only supports 'and', 'or', and 'xor', not '$ref' which is an unknown operator: {$ref: \"c\"}"),
    (DBRef("c", 1), 9,
     "Unknown modifier: $ref. Expected a valid update modifier or pipeline-style update specified as an array"),
], ids=["currentDate", "bit", "whole_update"])
def test_a_dbref_argument_is_an_object(update, code, message):
    """A DBRef sent as an operator's argument (or as the update) is the object {$ref, $id}."""
    with pytest.raises(MongoError) as info:
        parse_update(update)
    assert (info.value.code, info.value.message) == (code, message)


def test_a_dbref_operand_names_paths():
    """``{$set: DBRef}``: its fields are the paths, exactly as the same object sent as a document."""
    assert run({"_id": 0}, {"$set": DBRef("c", 1)}) == run({"_id": 0}, {"$set": {"$ref": "c", "$id": 1}})
