"""Assertions of mongod's update-node unit tests (``src/mongo/db/update/*_node_test.cpp``,
``update_object_node_test.cpp``) ported to pymongo against a real Tidemark server, with ``_id`` as
the immutable path (a regular collection's only one): which operation of an update fails first and
with what message, what a document without an ``_id`` (an upsert's, before one is generated) is
called in messages, and where a ``$rename`` runs among the other operations.
"""

from __future__ import annotations

import bson
import pytest
from bson import Decimal128, Regex
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("update", "findAndModify", "insert", "find", "drop")

IMMUTABLE_FIELD = 66


def update(coll, q, u, **options) -> dict:
    return coll.database.command("update", coll.name, updates=[{"q": q, "u": u, **options}])


def write_error(reply: dict) -> tuple[int, str]:
    errors = reply.get("writeErrors")
    assert errors, f"expected a write error, got {reply}"
    return errors[0]["code"], errors[0]["errmsg"]


def _fails_leaving(coll, doc: dict, u: dict) -> tuple[int, str]:
    coll.insert_one(doc)
    error = write_error(update(coll, {"_id": doc["_id"]}, u))
    assert coll.find_one() == doc
    return error


@pytest.mark.parametrize("doc, u, path", [
    ({"_id": {"x": 1}}, {"$set": {"_id.x": 2}}, "_id.x"),
    ({"_id": {"x": 1}}, {"$unset": {"_id.x": 1}}, "_id.x"),
    ({"_id": {"x": 1}}, {"$inc": {"_id.x": 1}}, "_id.x"),
    ({"_id": {"x": 1}}, {"$max": {"_id.x": 5}}, "_id.x"),
    ({"_id": {"x": [1, 2]}}, {"$pop": {"_id.x": 1}}, "_id.x"),
    ({"_id": {"x": [1, 2]}}, {"$set": {"_id.x.0": 5}}, "_id.x.0"),
    ({"_id": {"x": 1}, "b": 1}, {"$rename": {"_id.x": "c"}}, "_id.x"),
    ({"_id": {"x": 1}, "b": 1}, {"$rename": {"b": "_id.x"}}, "_id.x"),
    ({"_id": 1, "a": 1}, {"$rename": {"a": "_id"}}, "_id"),
], ids=["set", "unset", "inc", "max", "pop", "set_index", "rename_from", "rename_to", "rename_equal_value"])
def test_changing_an_existing_element_under_id_names_its_path(db, doc, u, path):
    """SetNodeTest.ApplyCannotOverwriteImmutablePath, UnsetNodeTest.ApplyCannotRemoveImmutablePath,
    PopNodeTest.ThrowsWhenPathIsImmutable, RenameNodeTest.ApplyCannotRemoveImmutablePath: an operation
    that changes an element under an immutable path is 66 "Performing an update on the path '<the
    path it wrote>' ..." (ModifierNode::applyToExistingElement). A $rename's target is set without a
    no-op check (SetElementNode), so renaming a field equal to ``_id`` onto it fails too."""
    error = _fails_leaving(db.c, doc, u)
    assert error == (IMMUTABLE_FIELD, f"Performing an update on the path '{path}' would modify the immutable field '_id'")


@pytest.mark.parametrize("doc, u, shown", [
    ({"_id": {"x": 1}}, {"$set": {"_id.y": 2}}, "'_id' to _id: { x: 1, y: 2 }"),
    ({"_id": {"x": {}}}, {"$set": {"_id.x.z": 2}}, "'_id.x' to x: { z: 2 }"),
    ({"_id": {"x": 1}, "b": 1}, {"$rename": {"b": "_id.c"}}, "'_id' to _id: { x: 1, c: 1 }"),
    ({"_id": {"x": [1]}}, {"$push": {"_id.y": 2}}, "'_id' to _id: { x: [ 1 ], y: [ 2 ] }"),
], ids=["set", "set_deeper", "rename_to", "push"])
def test_creating_a_field_under_id_names_the_deepest_existing_element(db, doc, u, shown):
    """SetNodeTest.ApplyCannotCreateFieldAtEndOfImmutablePath: creating a field under an immutable path
    is 66 "Updating the path '<deepest existing element>' to <that element as it became> ..."
    (ModifierNode::applyToNonexistentElement)."""
    error = _fails_leaving(db.c, doc, u)
    assert error == (IMMUTABLE_FIELD, f"Updating the path {shown} would modify the immutable field '_id'")


def test_an_upsert_may_not_change_the_id_its_query_seeded(db):
    """produce_document_for_upsert.cpp: the upsert's update runs with ``_id`` immutable over the seed,
    so the same two messages apply to an ``_id`` the query fixed; an ``_id`` the query did not fix may
    be set."""
    c = db.c
    assert write_error(update(c, {"_id": {"x": 1}}, {"$set": {"_id.x": 2}}, upsert=True)) == (
        IMMUTABLE_FIELD, "Performing an update on the path '_id.x' would modify the immutable field '_id'")
    assert write_error(update(c, {"_id.x": 1}, {"$set": {"_id.y": 2}}, upsert=True)) == (
        IMMUTABLE_FIELD, "Updating the path '_id' to _id: { x: 1, y: 2 } would modify the immutable field '_id'")
    assert c.count_documents({}) == 0
    reply = update(c, {"a": 1}, {"$set": {"_id": {"y": 2}}}, upsert=True)
    assert reply["upserted"] == [{"index": 0, "_id": {"y": 2}}]


@pytest.mark.parametrize("doc, u, code", [
    ({"_id": 1, "s": "x"}, {"$set": {"_id": 2}, "$inc": {"s": 1}}, IMMUTABLE_FIELD),
    ({"_id": 1, "s": "x"}, {"$inc": {"s": 1}, "$set": {"_id": 2}}, IMMUTABLE_FIELD),
    ({"_id": 1, "0": "x"}, {"$set": {"_id": 2}, "$inc": {"0": 1}}, 14),
], ids=["id_sorts_first", "id_sorts_first_written_last", "digit_sorts_before_id"])
def test_the_first_failing_operation_in_path_order_answers(db, doc, u, code):
    """UpdateObjectNode::apply applies the operations in path order and each checks the immutable
    paths as it applies (ModifierNode), so ``_id``'s change is refused before a later path's type
    error, whatever order the update lists them in, and after an earlier path's ("0" < "_id")."""
    assert _fails_leaving(db.c, doc, u)[0] == code


@pytest.mark.parametrize("q, u, message", [
    ({"a": 1}, {"$push": {"a": 2}}, "The field 'a' must be an array but is of type int in document {no id}"),
    ({"a": "s"}, {"$inc": {"a": 1}},
     "Cannot apply $inc to a value of non-numeric type. {no id} has the field 'a' of non-numeric type string"),
    ({"a": [{"b": 1}]}, {"$rename": {"a.0.b": "c"}},
     "The source field cannot be an array element, 'a.0.b' in doc with no id has an array field called 'a'"),
])
def test_an_upsert_document_without_id_is_called_no_id(db, q, u, message):
    """push_node.cpp, arithmetic_node.cpp, rename_node.cpp: the document's ``_id`` element, or "no id"
    for an upsert's document before its ``_id`` is generated."""
    assert write_error(update(db.c, q, u, upsert=True))[1] == message
    with pytest.raises(OperationFailure) as failure:
        db.command("findAndModify", "c", query=q, update=u, upsert=True)
    assert failure.value.details["errmsg"] == message
    assert db.c.count_documents({}) == 0


@pytest.mark.parametrize("start, u, expected", [
    ({"_id": 1, "a": 1}, {"$rename": {"a": "x"}, "$set": {"b": 1}}, {"_id": 1, "b": 1, "x": 1}),
    ({"_id": 1, "z": 1}, {"$rename": {"z": "c"}, "$set": {"b": 1, "d": 1}}, {"_id": 1, "b": 1, "c": 1, "d": 1}),
    ({"_id": 1, "a": 1}, {"$rename": {"a": "b.c"}, "$set": {"b.a": 1, "b.d": 1}},
     {"_id": 1, "b": {"a": 1, "c": 1, "d": 1}}),
])
def test_rename_runs_at_its_target_in_path_order(db, start, u, expected):
    """UpdateObjectNodeTest (parseAndMerge of $rename): a RenameNode sits at the target path and a
    ConflictPlaceholderNode at the source, so the target is created in its own place among the
    fields the update creates, not at its source's."""
    db.c.insert_one(start)
    assert "writeErrors" not in update(db.c, {"_id": 1}, u)
    assert bson.encode(db.c.find_one()) == bson.encode(expected)  # field order at every level


def test_rename_errors_come_in_target_order(db):
    """With the rename at its target, a type error at a path sorting between source and target comes
    first when the target sorts after it."""
    db.c.insert_one({"_id": 1, "a": 1, "m": "x", "z": [1]})
    code, message = write_error(update(db.c, {"_id": 1}, {"$rename": {"a": "z.0"}, "$inc": {"m": 1}}))
    assert code == 14, message


DOLLAR_FIELD = 52


def _dollar_message(name: str) -> str:
    return (f"The dollar ($) prefixed field '{name}' in '{name}' is not allowed in the context of an update's "
            "replacement document. Consider using an aggregation pipeline with $replaceWith.")


@pytest.mark.parametrize("doc, u, expected", [
    ({"_id": 1, "a": 1}, {"$rename": {"a": "b.$c"}}, {"_id": 1, "b": {"$c": 1}}),
    ({"_id": 1, "a": 1}, {"$rename": {"a": "$b"}}, None),
    ({"_id": 1, "s": 1}, {"$rename": {"a": "$b"}}, {"_id": 1, "s": 1}),
    ({"_id": 1, "a": 1}, {"$rename": {"$a": "b"}}, {"_id": 1, "a": 1}),
], ids=["nested_dollar_target", "top_level_dollar_target", "missing_source", "dollar_source_missing"])
def test_rename_paths_are_dynamic_only_for_positional_and_array_updates(db, doc, u, expected):
    """RenameNode::init refuses a source or target holding '$' or '$[...]' (2 "may not be dynamic"); any
    other '$'-prefixed name is a field: nested it is stored (5.0+), at the top level it is 52 when the
    rename writes it (validateUpdate of the created element) and nothing when its source is missing."""
    db.c.insert_one(doc)
    reply = update(db.c, {"_id": 1}, u)
    if expected is None:
        assert write_error(reply) == (DOLLAR_FIELD, _dollar_message("$b"))
        assert db.c.find_one() == doc
    else:
        assert "writeErrors" not in reply, reply
        assert db.c.find_one() == expected


@pytest.mark.parametrize("doc, u, code, name", [
    ({"_id": 1, "s": "x"}, {"$set": {"$a": 1}, "$inc": {"s": 1}}, DOLLAR_FIELD, "$a"),
    ({"_id": 1, "s": "x"}, {"$inc": {"s": 1, "$z": 1}}, DOLLAR_FIELD, "$z"),
    ({"_id": 1, "$y": [1, 2]}, {"$pop": {"$y": 1}}, DOLLAR_FIELD, "$y"),
], ids=["set_before_a_type_error", "inc_before_a_type_error", "pop_of_a_stored_dollar_field"])
def test_a_top_level_dollar_field_is_refused_as_its_operation_applies(db, doc, u, code, name):
    """ModifierNode::validateUpdate (storage_validation.cpp, update_dollar_fields.js): the element an
    operation writes is checked as it applies, so a top-level '$' name sorting before another path's
    type error is what fails; a stored '$y' an operation changes is refused too."""
    assert _fails_leaving(db.c, doc, u) == (code, _dollar_message(name))


def test_unset_of_a_stored_top_level_dollar_field_is_allowed(db):
    """UnsetNode::validateUpdate checks only the removed element's siblings: ``$unset`` may remove a
    top-level '$y' an insert stored, and other operations leave it alone."""
    db.c.insert_many([{"_id": 1, "$y": 1}, {"_id": 2, "$y": 1}])
    assert "writeErrors" not in update(db.c, {"_id": 1}, {"$unset": {"$y": 1}})
    assert "writeErrors" not in update(db.c, {"_id": 2}, {"$set": {"a": 1}})
    assert list(db.c.find()) == [{"_id": 1}, {"_id": 2, "$y": 1, "a": 1}]


@pytest.mark.parametrize("u, code, message", [
    ({"$set": {"a.001.b": 9}}, 28, "Cannot create field 'b' in element {1: 2}"),
    ({"$pop": {"a.001.b": 1}}, 28, "Cannot use the part (b) of (a.001.b) to traverse the element ({1: 2})"),
    ({"$pull": {"a.01.b": 1}}, 28, "Cannot use the part (b) of (a.01.b) to traverse the element ({1: 2})"),
])
def test_an_array_element_is_named_by_its_index_in_path_errors(db, u, code, message):
    """path_support.cpp: an array position may have leading zeros (str::parseUnsignedBase10Integer),
    and the element a path cannot pass is shown with its own field name, for an array element its
    index ('1', not the '001' the path spelled)."""
    assert _fails_leaving(db.c, {"_id": 1, "a": [1, 2]}, u) == (code, message)


@pytest.mark.parametrize("u", [{"_id": 1.0, "a": 1}, {"_id": Decimal128("1"), "a": 1},
                               [{"$replaceWith": {"_id": 1.0, "a": 1}}]], ids=["double", "decimal", "pipeline"])
def test_a_replacement_may_restate_the_id_as_an_equal_value_of_another_type(db, u):
    """object_replace_executor.cpp (ObjectReplaceExecutorTest.CanAddImmutableField... and the
    immutable-path check): ``_id`` must keep its *value* (BSONElement::woCompare, numbers by value),
    and the document stores the replacement's ``_id`` as sent."""
    db.c.insert_one({"_id": 1})
    reply = update(db.c, {"_id": 1}, u)
    assert "writeErrors" not in reply and reply["nModified"] == 1, reply
    stored = db.c.find_one()
    assert bson.encode(stored) == bson.encode({"_id": u[0]["$replaceWith"]["_id"] if isinstance(u, list)
                                               else u["_id"], "a": 1})


@pytest.mark.parametrize("u, code, message", [
    ({"_id": [1]}, 53, "The '_id' value cannot be of type array"),
    ({"_id": Regex("x")}, 53, "The '_id' value cannot be of type regex"),
    ([{"$replaceWith": {"_id": [1]}}], 53, "The '_id' value cannot be of type array"),
    ({"_id": 2}, IMMUTABLE_FIELD, "After applying the update, the (immutable) field '_id' was found to have been "
                                  "altered to _id: 2"),
], ids=["array", "regex", "pipeline_array", "other_value"])
def test_a_replacement_id_is_validated_for_storage_before_immutability(db, u, code, message):
    """ObjectReplaceExecutor::applyReplacementUpdate validates the new document for storage
    (storageValidIdField: 53) before it compares the immutable ``_id`` (66)."""
    assert _fails_leaving(db.c, {"_id": 1}, u) == (code, message)


@pytest.mark.parametrize("q, expected", [
    ({"z": 1, "_id": 5, "b": 2}, {"_id": 5, "b": 2, "z": 1, "x": 1}),
    ({"a.c": 1, "B": 4, "a0": 3, "a.b": 2}, {"B": 4, "a": {"b": 2, "c": 1}, "a0": 3, "x": 1}),
    ({"$and": [{"z": 1}, {"a": 2}]}, {"a": 2, "z": 1, "x": 1}),
], ids=["top_level", "dotted", "and"])
def test_an_upsert_seeds_the_query_equalities_in_path_byte_order(db, q, expected):
    """update_driver.cpp populateDocumentWithQueryFields: the equalities are collected in a map keyed by
    their dotted path (path_support.h EqualityMatches, a std::map) and added in its order
    (pathsupport::addEqualitiesToDoc), then ``_id`` moves first; the update's new fields follow."""
    reply = update(db.c, q, {"$set": {"x": 1}}, upsert=True)
    stored = db.c.find_one()
    assert reply["upserted"] == [{"index": 0, "_id": stored["_id"]}]
    assert bson.encode(stored) == bson.encode({"_id": stored["_id"], **{k: v for k, v in expected.items()
                                                                         if k != "_id"}})


@pytest.mark.parametrize("u, options, code, message", [
    ({"$set": {"a": 1}, "$inc": {"a": 1, "b": "x"}}, {}, 40, "Updating the path 'a' would create a conflict at 'a'"),
    ({"$inc": {"$[]": "x"}}, {}, 14, "Cannot increment with non-numeric argument: {$[]: \"x\"}"),
    ({"$rename": {"a.$[i]": "b"}}, {}, 2, "No array filter found for identifier 'i' in path 'a.$[i]'"),
    ({"$rename": {"a": "$"}}, {}, 2, "Cannot have positional (i.e. '$') element in the first position in path '$'"),
    ({"$set": {"a.$[i]": 1}, "$unset": {"a.$[i]": 1, "c": 1}}, {"arrayFilters": [{"i": 1}, {"j": 1}]}, 40,
     "Updating the path 'a.$[i]' would create a conflict at 'a.$[i]'"),
], ids=["conflict_before_a_later_argument", "argument_before_array_update_placement",
        "rename_source_filter_before_dynamic", "rename_target_path_before_dynamic", "conflict_before_unused_filter"])
def test_an_update_is_parsed_path_by_path_in_document_order(db, u, options, code, message):
    """UpdateObjectNode::parseAndMerge (update_object_node_test.cpp): each path in the update's order
    is checked (empty/positional placement), its operator's argument parsed (leaf init), then merged
    into the tree (array-update identifiers, conflicts); a $rename merges a placeholder at its source
    before its target is checked and parsed; unused array filters are checked last. The first
    failure met answers."""
    db.c.insert_one({"_id": 1, "a": [1]})
    assert write_error(update(db.c, {"_id": 1}, u, **options)) == (code, message)
    assert db.c.find_one() == {"_id": 1, "a": [1]}


@pytest.mark.parametrize("doc, u, expected", [
    ({"_id": 1, "x": [90, 91, 92], "y": ["a"]}, {"$set": {"y.$": "z"}}, {"y": ["a", None, "z"]}),
    ({"_id": 1, "x": [90, 91, 92], "y": {"k": 1}}, {"$set": {"y.$": "z"}}, {"y": {"k": 1, "2": "z"}}),
    ({"_id": 1, "x": [90, 91, 92]}, {"$set": {"y.$": "z"}}, {"y": {"2": "z"}}),
], ids=["past_the_end", "document", "missing"])
def test_the_positional_operator_names_its_position_wherever_the_path_leads(db, doc, u, expected):
    """UpdateObjectNode::apply applies the positional child under the query's matchedField whatever
    the element there (applyChild: an array index, a document's field, a path to create), so '$' from
    ``x: 92`` (position 2) on another array pads it, on a document names field "2"."""
    db.c.insert_one(doc)
    reply = update(db.c, {"x": 92}, u)
    assert "writeErrors" not in reply and reply["nModified"] == 1, reply
    assert bson.encode(db.c.find_one()) == bson.encode({**doc, **expected})
