"""MongoDB's ``$jsonSchema`` and document-validation jstests ported to pymongo against a real Tidemark
server: which documents a ``$jsonSchema`` predicate accepts (in ``find``, in an aggregation ``$match``,
as a collection validator on insert and on a strict-level replacement), the error codes of malformed
schemas and validators, validation levels/actions, ``bypassDocumentValidation`` and the shape of the
121 DocumentValidationFailure error.

Ported from mongodb/mongo, MongoDB 7.0 semantics:

- ``jstests/core/json_schema/``: ``json_schema.js``, ``bsontype.js``, ``required.js``,
  ``additional_properties.js``, ``pattern_properties.js``, ``items.js``, ``additional_items.js``,
  ``array_keywords.js``, ``min_max_items.js``, ``min_max_properties.js``, ``unique_items.js``,
  ``dependencies.js``, ``logical_keywords.js``, ``encrypt.js``, ``misc_validation.js``
  (``internal_schema_cond_text_near.js`` tests internal ``$_internalSchema*`` operators only: left out);
- ``jstests/core/doc_validation/``: ``doc_validation_options.js``,
  ``doc_validation_invalid_validators.js``, ``bypass_doc_validation.js``, ``doc_validation_error.js``,
  ``doc_validation_encrypt_keywords.js``;
- the older ``jstests/core/doc_validation.js`` (inserts, updates, findAndModify, collation, ``$expr``).

Each ``assertSchemaMatch(coll, schema, doc, valid)`` of the jstests is one row of ``SCHEMA_MATCH``, checked
the same four ways as ``jstests/libs/assert_schema_match.js``. Left out: log lines (``checkLog``),
``validate`` output, mapReduce's temp collections across databases, ``eval``, the removed ``geoNear``
command and sharding variants. Numbers the shell writes as plain JavaScript numbers are doubles here
where the type matters. ``UNDEFINED`` stands for BSON undefined (type 6), sent as raw BSON.
"""

from __future__ import annotations

import copy

import bson
import pytest
from bson import Code, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp
from bson.binary import Binary
from harness.jstests import UNDEFINED, raw, xf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure, WriteError

pytestmark = pytest.mark.commands(
    "insert", "find", "aggregate", "create", "collMod", "update", "delete", "findAndModify", "count",
    "distinct", "listCollections", "listDatabases", "drop", "createIndexes", "dropIndexes",
)

BAD_VALUE = 2
FAILED_TO_PARSE = 9
TYPE_MISMATCH = 14
DOCUMENT_VALIDATION_FAILURE = 121
QUERY_FEATURE_NOT_ALLOWED = 224

# Known differences from MongoDB 7.0, one reason per cause (each used by strict xfails below).
UNDEFINED_AS_NULL = ("BSON undefined (type 6) is stored as null (type 10), so bsonType 'undefined' finds "
                     "nothing and enum [null] accepts a stored undefined; MongoDB keeps undefined")

# --------------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------------

def find_error(db, filter_: dict) -> OperationFailure:
    with pytest.raises(OperationFailure) as info:
        db.command("find", "c", filter=filter_)
    return info.value


def schema_error(db, schema) -> OperationFailure:
    return find_error(db, {"$jsonSchema": schema})


def create(db, name: str, **options) -> None:
    db.command("create", name, **options)


def assert_schema_match(db, schema: dict, doc: dict, valid: bool) -> None:
    """``assertSchemaMatch``: ``doc`` matches ``schema`` in find and $match, passes it as a validator on
    insert and on a strict-level replacement, iff ``valid``."""
    coll = db["schema_match"]
    coll.drop()
    coll.insert_one(raw(doc))
    assert len(list(coll.find({"$jsonSchema": schema}))) == (1 if valid else 0), "find"
    assert len(list(coll.aggregate([{"$match": {"$jsonSchema": schema}}]))) == (1 if valid else 0), "$match"

    coll.drop()
    create(db, "schema_match", validator={"$jsonSchema": schema})
    if valid:
        coll.insert_one(raw(doc))
    else:
        with pytest.raises(WriteError) as info:
            coll.insert_one(raw(doc))
        assert info.value.code == DOCUMENT_VALIDATION_FAILURE

    coll.drop()
    coll.insert_one({"_id": 0})
    db.command("collMod", "schema_match", validator={"$jsonSchema": schema}, validationLevel="strict")
    replacement = {k: v for k, v in doc.items() if k != "_id"}
    if valid:
        coll.replace_one({"_id": 0}, raw(replacement))
    else:
        with pytest.raises(WriteError) as info:
            coll.replace_one({"_id": 0}, raw(replacement))
        assert info.value.code == DOCUMENT_VALIDATION_FAILURE


def fails_validation(fn) -> None:
    with pytest.raises((WriteError, OperationFailure)) as info:
        fn()
    assert info.value.code == DOCUMENT_VALIDATION_FAILURE, info.value.details


ENCRYPTED = Binary(b"\x00" * 21, 6)
NOT_ENCRYPTED = Binary(b"\x00" * 21, 0)


# --------------------------------------------------------------------------------------------------
# assertSchemaMatch tables
# --------------------------------------------------------------------------------------------------

P = {"properties": {"num": {"bsonType": "double"}}}

BSONTYPE = [
    # bsontype.js
    (P, {"num": 3.0}, True),
    (P, {"num": Int64(3)}, False),
    (P, {"num": 3}, False),
    (P, {"num": Decimal128("3")}, False),
    (P, {"num": {}}, False),
    (P, {"num": [3.0]}, False),
    (P, {"foo": {}}, True),
    ({"properties": {"str": {"bsonType": "string"}}}, {"str": ""}, True),
    ({"properties": {"str": {"bsonType": "string"}}}, {"str": True}, False),
    ({"properties": {"str": {"bsonType": "string"}}}, {"str": [1.0, "foo"]}, False),
    ({"properties": {"str": {"type": "string"}}}, {"str": ""}, True),
    ({"properties": {"str": {"type": "string"}}}, {"str": True}, False),
    ({"properties": {"str": {"type": "string"}}}, {"str": [1.0, "foo"]}, False),
    ({"bsonType": "object"}, {}, True),
    ({"properties": {"obj": {"bsonType": "object"}}}, {"obj": {}}, True),
    ({"properties": {"obj": {"bsonType": "object"}}}, {"obj": True}, False),
    ({"properties": {"obj": {"bsonType": "object"}}}, {"obj": [{}]}, False),
    ({"type": "object"}, {}, True),
    ({"properties": {"obj": {"type": "object"}}}, {"obj": {}}, True),
    ({"properties": {"obj": {"type": "object"}}}, {"obj": True}, False),
    ({"properties": {"obj": {"type": "object"}}}, {"obj": [{}]}, False),
    ({"bsonType": "array"}, {"arr": []}, False),
    ({"properties": {"arr": {"bsonType": "array"}}}, {"arr": []}, True),
    ({"properties": {"arr": {"bsonType": "array"}}}, {"arr": {}}, False),
    ({"type": "array"}, {"arr": []}, False),
    ({"properties": {"arr": {"type": "array"}}}, {"arr": []}, True),
    ({"properties": {"arr": {"type": "array"}}}, {"arr": {}}, False),
    ({"properties": {"bin": {"bsonType": "binData"}}}, {"bin": Binary(b"\x00" * 21, 0)}, True),
    ({"properties": {"bin": {"bsonType": "binData"}}}, {"bin": {}}, False),
    xf(UNDEFINED_AS_NULL, {"properties": {"u": {"bsonType": "undefined"}}, "required": ["u"]},
       {"u": UNDEFINED}, True, id="bsonType-undefined"),
    ({"properties": {"u": {"bsonType": "undefined"}}, "required": ["u"]}, {}, False),
    ({"properties": {"u": {"bsonType": "undefined"}}, "required": ["u"]}, {"u": None}, False),
    ({"properties": {"o": {"bsonType": "objectId"}}}, {"o": ObjectId()}, True),
    ({"properties": {"o": {"bsonType": "objectId"}}}, {"o": 1.0}, False),
    ({"properties": {"b": {"bsonType": "bool"}}}, {"b": True}, True),
    ({"properties": {"b": {"bsonType": "bool"}}}, {"b": False}, True),
    ({"properties": {"b": {"bsonType": "bool"}}}, {"b": 1.0}, False),
    ({"properties": {"b": {"type": "boolean"}}}, {"b": True}, True),
    ({"properties": {"b": {"type": "boolean"}}}, {"b": False}, True),
    ({"properties": {"b": {"type": "boolean"}}}, {"b": 1.0}, False),
    ({"properties": {"date": {"bsonType": "date"}}}, {"date": bson.datetime.datetime(2020, 1, 1)}, True),
    ({"properties": {"date": {"bsonType": "date"}}}, {"date": 1.0}, False),
    ({"properties": {"n": {"bsonType": "null"}}, "required": ["n"]}, {"n": None}, True),
    ({"properties": {"n": {"bsonType": "null"}}, "required": ["n"]}, {}, False),
    ({"properties": {"n": {"bsonType": "null"}}, "required": ["n"]}, {"u": UNDEFINED}, False),
    ({"properties": {"n": {"type": "null"}}, "required": ["n"]}, {"n": None}, True),
    ({"properties": {"n": {"type": "null"}}, "required": ["n"]}, {}, False),
    ({"properties": {"n": {"type": "null"}}, "required": ["n"]}, {"u": UNDEFINED}, False),
    ({"properties": {"r": {"bsonType": "regex"}}}, {"r": Regex("^abc")}, True),
    ({"properties": {"r": {"bsonType": "regex"}}}, {"r": "^abc"}, False),
    ({"properties": {"code": {"bsonType": "javascript"}}}, {"code": Code("function() { return true; }")}, True),
    ({"properties": {"code": {"bsonType": "javascript"}}}, {"code": 1.0}, False),
    ({"properties": {"code": {"bsonType": "javascriptWithScope"}}},
     {"code": Code("function() { return true; }", {"scope": True})}, True),
    ({"properties": {"code": {"bsonType": "javascriptWithScope"}}}, {"code": 1.0}, False),
    ({"properties": {"num": {"bsonType": "int"}}}, {"num": 3}, True),
    ({"properties": {"num": {"bsonType": "int"}}}, {"num": Int64(3)}, False),
    ({"properties": {"num": {"bsonType": "int"}}}, {"num": 3.0}, False),
    ({"properties": {"num": {"bsonType": "int"}}}, {"num": Decimal128("3")}, False),
    ({"properties": {"num": {"bsonType": "int"}}}, {"num": {}}, False),
    ({"properties": {"num": {"bsonType": "int"}}}, {"foo": {}}, True),
    ({"properties": {"ts": {"bsonType": "timestamp"}}}, {"ts": Timestamp(0, 1234)}, True),
    ({"properties": {"ts": {"bsonType": "timestamp"}}}, {"ts": bson.datetime.datetime(2020, 1, 1)}, False),
    ({"properties": {"num": {"bsonType": "long"}}}, {"num": Int64(3)}, True),
    ({"properties": {"num": {"bsonType": "long"}}}, {"num": 3}, False),
    ({"properties": {"num": {"bsonType": "long"}}}, {"num": 3.0}, False),
    ({"properties": {"num": {"bsonType": "long"}}}, {"num": Decimal128("3")}, False),
    ({"properties": {"num": {"bsonType": "long"}}}, {"num": {}}, False),
    ({"properties": {"num": {"bsonType": "long"}}}, {"foo": {}}, True),
    ({"properties": {"num": {"bsonType": "decimal"}}}, {"num": Decimal128("3")}, True),
    ({"properties": {"num": {"bsonType": "decimal"}}}, {"num": Int64(3)}, False),
    ({"properties": {"num": {"bsonType": "decimal"}}}, {"num": 3}, False),
    ({"properties": {"num": {"bsonType": "decimal"}}}, {"num": 3.0}, False),
    ({"properties": {"num": {"bsonType": "decimal"}}}, {"num": {}}, False),
    ({"properties": {"num": {"bsonType": "decimal"}}}, {"foo": {}}, True),
    ({"properties": {"k": {"bsonType": "minKey"}}}, {"k": MinKey()}, True),
    ({"properties": {"k": {"bsonType": "minKey"}}}, {"k": MaxKey()}, False),
    ({"properties": {"k": {"bsonType": "maxKey"}}}, {"k": MaxKey()}, True),
    ({"properties": {"k": {"bsonType": "maxKey"}}}, {"k": MinKey()}, False),
    ({"type": "object", "properties": {"obj": {"bsonType": "object"}}}, {"obj": {}}, True),
    ({"type": "object", "properties": {"obj": {"bsonType": "object"}}}, {"obj": []}, False),
    ({"properties": {"a": {"bsonType": "long"}, "b": {"type": "null"}}}, {"a": Int64(3), "b": None}, True),
    ({"properties": {"a": {"bsonType": "long"}, "b": {"type": "null"}}}, {"a": Int64(3)}, True),
    ({"properties": {"a": {"bsonType": "long"}, "b": {"type": "null"}}}, {"b": None}, True),
    ({"properties": {"a": {"bsonType": "long"}, "b": {"type": "null"}}}, {"a": 3.0, "b": None}, False),
    ({"properties": {"a": {"bsonType": "long"}, "b": {"type": "null"}}}, {"a": Int64(3), "b": 3.0}, False),
    ({"properties": {"f": {"type": ["number", "string"]}}}, {"f": 1.0}, True),
    ({"properties": {"f": {"type": ["number", "string"]}}}, {"f": "str"}, True),
    ({"properties": {"f": {"type": ["number", "string"]}}}, {}, True),
    ({"properties": {"f": {"type": ["number", "string"]}}}, {"f": ["str", 1.0]}, False),
    ({"properties": {"f": {"type": ["number", "string"]}}}, {"f": {}}, False),
    ({"properties": {"f": {"bsonType": ["objectId", "double"]}}}, {"f": 1.0}, True),
    ({"properties": {"f": {"bsonType": ["objectId", "double"]}}}, {"f": ObjectId()}, True),
    ({"properties": {"f": {"bsonType": ["objectId", "double"]}}}, {}, True),
    ({"properties": {"f": {"bsonType": ["objectId", "double"]}}}, {"f": [1.0]}, False),
    ({"properties": {"f": {"bsonType": ["objectId", "double"]}}}, {"f": 1}, False),
    ({"type": ["object", "string"]}, {}, True),
    ({"type": ["object", "string"]}, {"foo": 1.0, "bar": 1.0}, True),
    ({"bsonType": ["object", "double"]}, {}, True),
    ({"bsonType": ["object", "double"]}, {"foo": 1.0, "bar": 1.0}, True),
]

REQUIRED = [
    ({"required": ["a"]}, {"a": 1}, True),
    ({"required": ["a"]}, {}, False),
    ({"required": ["a"]}, {"b": 1}, False),
    ({"required": ["a"]}, {"b": {"a": 1}}, False),
    ({"required": ["a", "b"]}, {"a": 1, "b": 1, "c": 1}, True),
    ({"required": ["a", "b"]}, {"a": 1, "c": 1}, False),
    ({"required": ["a", "b"]}, {"b": 1, "c": 1}, False),
    ({"properties": {"a": {"required": ["b"]}}}, {}, True),
    ({"properties": {"a": {"required": ["b"]}}}, {"a": 1}, True),
    ({"properties": {"a": {"required": ["b"]}}}, {"a": {"b": 1}}, True),
    ({"properties": {"a": {"required": ["b"]}}}, {"a": {"c": 1}}, False),
    ({"properties": {"a": {"required": ["b"]}}}, {"a": {}}, False),
]

AP_TOP = {"properties": {"_id": {}, "a": {}}}
AP_PAT = {"properties": {"_id": {}, "a": {}}, "patternProperties": {"^b": {"type": "string"}}}
AP_NESTED_PAT = {"properties": {"obj": {"properties": {"a": {}}, "patternProperties": {"^b": {"type": "string"}},
                                        "additionalProperties": {"type": "number"}}}}

ADDITIONAL_PROPERTIES = [
    ({**AP_TOP, "additionalProperties": False}, {"_id": 1}, True),
    ({**AP_TOP, "additionalProperties": False}, {"_id": 1, "a": 1}, True),
    ({**AP_TOP, "additionalProperties": False}, {"_id": 1, "b": 1}, False),
    ({**AP_TOP, "additionalProperties": False}, {"_id": 1, "a": 1, "b": 1}, False),
    ({**AP_TOP, "additionalProperties": True}, {"_id": 1, "a": 1, "b": 1}, True),
    ({**AP_TOP, "additionalProperties": {"type": "number"}}, {"_id": 1}, True),
    ({**AP_TOP, "additionalProperties": {"type": "number"}}, {"_id": 1, "b": 1}, True),
    ({**AP_TOP, "additionalProperties": {"type": "number"}}, {"_id": 1, "b": "str"}, False),
    ({**AP_PAT, "additionalProperties": {"type": "number"}}, {"_id": 1, "a": 1, "ba": "str"}, True),
    ({**AP_PAT, "additionalProperties": {"type": "number"}}, {"_id": 1, "a": 1, "ba": "str", "other": 1}, True),
    ({**AP_PAT, "additionalProperties": {"type": "number"}},
     {"_id": 1, "a": 1, "ba": "str", "other": "str"}, False),
    ({**AP_PAT, "additionalProperties": {"type": "number"}}, {"_id": 1, "a": 1, "ba": 1, "other": 1}, False),
    ({**AP_PAT, "additionalProperties": False}, {"_id": 1, "a": 1, "ba": "str"}, True),
    ({**AP_PAT, "additionalProperties": False}, {"_id": 1, "a": 1, "ba": "str", "other": 1}, False),
    ({"properties": {"obj": {"properties": {"a": {}}, "additionalProperties": False}}}, {}, True),
    ({"properties": {"obj": {"properties": {"a": {}}, "additionalProperties": False}}}, {"obj": 1}, True),
    ({"properties": {"obj": {"properties": {"a": {}}, "additionalProperties": False}}}, {"obj": {"a": 1}}, True),
    ({"properties": {"obj": {"properties": {"a": {}}, "additionalProperties": False}}},
     {"obj": {"a": 1, "b": 1}}, False),
    ({"properties": {"obj": {"properties": {"a": {}}, "additionalProperties": False}}}, {"obj": {"b": 1}}, False),
    ({"properties": {"obj": {"properties": {"a": {}}, "additionalProperties": True}}}, {"obj": {"b": 1}}, True),
    ({"properties": {"obj": {"properties": {"a": {}}, "additionalProperties": {"type": "number"}}}},
     {"obj": {"a": 1, "b": 1}}, True),
    ({"properties": {"obj": {"properties": {"a": {}}, "additionalProperties": {"type": "number"}}}},
     {"obj": {"a": 1, "b": "str"}}, False),
    ({"properties": {"obj": {"properties": {"a": {}}, "additionalProperties": {"type": "number"}}}},
     {"obj": {"b": "str"}}, False),
    (AP_NESTED_PAT, {"obj": {}}, True),
    (AP_NESTED_PAT, {"obj": {"a": 1, "ba": "str", "c": 1}}, True),
    (AP_NESTED_PAT, {"obj": {"a": 1, "ba": 1, "c": 1}}, False),
    (AP_NESTED_PAT, {"obj": {"a": 1, "ba": 1, "c": "str"}}, False),
]

PP = {"^a": {"type": "number"}, "^b": {"type": "string"}}
PATTERN_PROPERTIES = [
    ({"patternProperties": PP}, {}, True),
    ({"patternProperties": PP}, {"c": 1}, True),
    ({"patternProperties": PP}, {"ca": 1, "cb": 1}, True),
    ({"patternProperties": PP}, {"a": "str", "ca": 1, "cb": 1}, False),
    ({"patternProperties": PP}, {"a": 1, "b": 1, "ca": 1, "cb": 1}, False),
    ({"patternProperties": PP}, {"a": 1, "b": "str", "ca": 1, "cb": 1}, True),
    ({"properties": {"obj": {"patternProperties": PP}}}, {}, True),
    ({"properties": {"obj": {"patternProperties": PP}}}, {"obj": 1}, True),
    ({"properties": {"obj": {"patternProperties": PP}}}, {"obj": {}}, True),
    ({"properties": {"obj": {"patternProperties": PP}}}, {"obj": {"ca": 1, "cb": 1}}, True),
    ({"properties": {"obj": {"patternProperties": PP}}}, {"obj": {"ac": "str", "ca": 1, "cb": 1}}, False),
    ({"properties": {"obj": {"patternProperties": PP}}}, {"obj": {"ac": 1, "bc": 1, "ca": 1, "cb": 1}}, False),
    ({"properties": {"obj": {"patternProperties": PP}}}, {"obj": {"ac": 1, "bc": "str", "ca": 1, "cb": 1}}, True),
    ({"properties": {"aa": {"type": "number"}}, "patternProperties": {"^a": {"type": "string"}}}, {"aa": 1}, False),
    ({"properties": {"obj": {"properties": {"aa": {"type": "number"}},
                             "patternProperties": {"^a": {"type": "string"}}}}}, {"obj": {"aa": 1}}, False),
]

ITEMS = [
    # items.js
    ({"items": {"type": "number"}}, {}, True),
    ({"items": [{"type": "number"}]}, {}, True),
    ({"properties": {"a": {"items": {"minimum": 0}}}}, {}, True),
    ({"properties": {"a": {"items": {"minimum": 0}}}}, {"a": -1}, True),
    ({"properties": {"a": {"items": [{"minimum": 0}]}}}, {}, True),
    ({"properties": {"a": {"items": [{"minimum": 0}]}}}, {"a": -1}, True),
    ({"properties": {"a": {"items": {"pattern": "a+b"}}}}, {"a": []}, True),
    ({"properties": {"a": {"items": {"pattern": "a+b"}}}}, {"a": [7]}, True),
    ({"properties": {"a": {"items": {"pattern": "a+b"}}}}, {"a": [None]}, True),
    ({"properties": {"a": {"items": {"pattern": "a+b"}}}}, {"a": ["cab", "caab"]}, True),
    ({"properties": {"a": {"items": {"pattern": "a+b"}}}}, {"a": ["cab", "caab", "b"]}, False),
    ({"properties": {"a": {"items": [{"multipleOf": 2}]}}}, {"a": []}, True),
    ({"properties": {"a": {"items": [{"multipleOf": 2}]}}}, {"a": [2]}, True),
    ({"properties": {"a": {"items": [{"multipleOf": 2}]}}}, {"a": [2, 3]}, True),
    ({"properties": {"a": {"items": [{"multipleOf": 2}]}}}, {"a": [3]}, False),
    ({"properties": {"a": {"items": [{"maxLength": 1}, {"maxLength": 2}]}}}, {"a": []}, True),
    ({"properties": {"a": {"items": [{"maxLength": 1}, {"maxLength": 2}]}}}, {"a": ["1", "12", "123"]}, True),
    ({"properties": {"a": {"items": [{"maxLength": 1}, {"maxLength": 2}]}}}, {"a": ["12"]}, False),
    ({"properties": {"a": {"items": [{"maxLength": 1}, {"maxLength": 2}]}}}, {"a": ["1", "123"]}, False),
    ({"properties": {"a": {"items": []}}}, {"a": "blah"}, True),
    ({"properties": {"a": {"items": []}}}, {"a": [1, "foo", {}]}, True),
    # additional_items.js
    ({"items": [{"type": "number"}], "additionalItems": False}, {}, True),
    ({"items": [{"type": "number"}], "additionalItems": {"type": "string"}}, {}, True),
    ({"properties": {"a": {"additionalItems": False}}}, {"a": [1, 2, 3]}, True),
    ({"properties": {"a": {"additionalItems": {"type": "object"}}}}, {"a": [1, 2, 3]}, True),
    ({"properties": {"a": {"items": {}, "additionalItems": False}}}, {"a": [1, 2, 3]}, True),
    ({"properties": {"a": {"items": {}, "additionalItems": {"type": "object"}}}}, {"a": [1, 2, 3]}, True),
    ({"properties": {"a": {"items": [{"type": "number"}, {"type": "string"}], "additionalItems": False}}},
     {"a": [229, "West 43rd"]}, True),
    ({"properties": {"a": {"items": [{"type": "number"}, {"type": "string"}], "additionalItems": False}}},
     {"a": [229, "West 43rd", "Street"]}, False),
    ({"properties": {"a": {"items": [{"type": "number"}, {"type": "string"}], "additionalItems": True}}},
     {"a": [229, "West 43rd", "Street"]}, True),
    ({"properties": {"a": {"items": [{"not": {}}], "additionalItems": True}}}, {"a": []}, True),
    ({"properties": {"a": {"items": [{"type": "number"}, {"type": "string"}],
                           "additionalItems": {"type": "object"}}}}, {"a": [229, "West 43rd", "Street"]}, False),
    ({"properties": {"a": {"items": [{"type": "number"}, {"type": "string"}],
                           "additionalItems": {"type": "object"}}}}, {"a": [229, "West 43rd", {}]}, True),
    ({"properties": {"a": {"items": [{"not": {}}], "additionalItems": False}}}, {"a": []}, True),
    ({"properties": {"a": {"items": [{"not": {}}], "additionalItems": {"not": {}}}}}, {"a": []}, True),
    # min_max_items.js
    ({"properties": {"a": {"minItems": 1}}}, {}, True),
    ({"properties": {"a": {"minItems": 1}}}, {"a": "foo"}, True),
    ({"properties": {"a": {"minItems": 1}}}, {"a": []}, False),
    ({"properties": {"a": {"minItems": 1}}}, {"a": ["x"]}, True),
    ({"minItems": 2}, {}, True),
    ({"properties": {"a": {"maxItems": 1}}}, {"a": "foo"}, True),
    ({"properties": {"a": {"maxItems": 1}}}, {"a": ["x"]}, True),
    ({"properties": {"a": {"maxItems": 1}}}, {"a": [0, 1]}, False),
    ({"maxItems": 2}, {}, True),
    # unique_items.js
    ({"uniqueItems": True}, {}, True),
    ({"properties": {"a": {"uniqueItems": True}}}, {"a": {"foo": [1, 1], "bar": [2, 2]}}, True),
    ({"properties": {"a": {"uniqueItems": True}}}, {"a": [1, 2, 3]}, True),
    ({"properties": {"a": {"uniqueItems": True}}}, {"a": ["foo", "FOO"]}, True),
    ({"properties": {"a": {"uniqueItems": True}}}, {"a": [{}, "", [], None]}, True),
    ({"properties": {"a": {"uniqueItems": True}}}, {"a": [[1, 2], [2, 1]]}, True),
    ({"properties": {"a": {"uniqueItems": True}}}, {"a": [1, 1]}, False),
    ({"properties": {"a": {"uniqueItems": True}}}, {"a": [Int64(1), 1]}, False),
    ({"properties": {"a": {"uniqueItems": True}}}, {"a": [{"a": 1}, {"a": 1}]}, False),
    ({"properties": {"a": {"uniqueItems": True}}}, {"a": [None, None]}, False),
    ({"properties": {"a": {"uniqueItems": True}}}, {"a": [{"x": 1, "y": 1}, {"y": 1, "x": 1}]}, False),
    ({"properties": {"a": {"uniqueItems": True}}}, {"a": [{"x": [1, 2], "y": "a"}, {"y": "a", "x": [1, 2]}]},
     False),
    ({"properties": {"a": {"uniqueItems": False}}}, {"a": [{"x": 1, "y": 1}, {"y": 1, "x": 1}]}, True),
    ({"properties": {"a": {"uniqueItems": False}}}, {"a": [1, 1]}, True),
]

MIN_MAX_PROPERTIES = [
    ({"minProperties": 0}, {}, True),
    ({"minProperties": 0}, {"a": 1, "b": 2}, True),
    ({"maxProperties": 0}, {}, False),  # stored documents always have _id
    ({"maxProperties": 0}, {"a": 1}, False),
    ({"minProperties": 2}, {"_id": 0}, False),
    ({"minProperties": 2}, {"_id": 0, "a": 1}, True),
    ({"maxProperties": 2}, {"_id": 0, "a": 1}, True),
    ({"maxProperties": 2}, {"_id": 0, "a": 1, "b": 2}, False),
    ({"properties": {"a": {"maxProperties": 1}}}, {"a": 1}, True),
    ({"properties": {"a": {"maxProperties": 1}}}, {"a": {"b": 1}}, True),
    ({"properties": {"a": {"maxProperties": 1}}}, {"a": {"b": 1, "c": 1}}, False),
    ({"properties": {"a": {"maxProperties": 0}}}, {"a": {}}, True),
    ({"properties": {"a": {"maxProperties": 0}}}, {"a": {"b": 1}}, False),
    ({"properties": {"a": {"minProperties": 1}}}, {"a": 1}, True),
    ({"properties": {"a": {"minProperties": 1}}}, {"a": {}}, False),
    ({"properties": {"a": {"minProperties": 1}}}, {"a": {"b": 1, "c": 1}}, True),
]

SD = {"dependencies": {"foo": {"required": ["bar"], "properties": {"baz": {"type": "string"}}}}}
PD = {"dependencies": {"foo": ["bar", "baz"]}}
ND = {"properties": {"obj": {"dependencies": {"a": ["b"], "c": {"required": ["d"]}}}}}
DEPENDENCIES = [
    ({"dependencies": {"foo": {"required": ["bar"]}}}, {}, True),
    ({"dependencies": {"foo": {"required": ["bar"]}}}, {"foo": 1, "bar": 1}, True),
    ({"dependencies": {"foo": {"required": ["bar"]}}}, {"bar": 1}, True),
    ({"dependencies": {"foo": {"required": ["bar"]}}}, {"foo": 1}, False),
    (SD, {"bar": 1}, True),
    (SD, {"foo": 1, "bar": 1, "baz": 1}, False),
    (SD, {"foo": 1, "bar": 1, "baz": "str"}, True),
    (PD, {}, True),
    (PD, {"bar": 1, "baz": 1}, True),
    (PD, {"foo": 1}, False),
    (PD, {"foo": 1, "bar": 1}, False),
    (PD, {"foo": 1, "baz": 1}, False),
    (PD, {"foo": 1, "bar": 1, "baz": 1}, True),
    ({"properties": {"obj": {"dependencies": {"foo": {"required": ["bar"]}}}}}, {"obj": 1}, True),
    ({"properties": {"obj": {"dependencies": {"foo": {"required": ["bar"]}}}}}, {"obj": {"foo": 1}}, False),
    ({"properties": {"obj": {"dependencies": {"foo": ["bar"]}}}}, {"obj": {"bar": 1}}, True),
    ({"properties": {"obj": {"dependencies": {"foo": ["bar"]}}}}, {"obj": {"foo": 1}}, False),
    ({"properties": {"obj": {"dependencies": {"foo": ["bar"]}}}}, {"obj": {"foo": 1, "bar": 1}}, True),
    (ND, {"obj": {"b": 1, "d": 1}}, True),
    (ND, {"obj": {"a": 1, "b": 1, "c": 1}}, False),
    (ND, {"obj": {"a": 1, "c": 0, "d": 1}}, False),
    (ND, {"obj": {"b": 1, "c": 1, "d": 1}}, True),
    (ND, {"obj": {"a": 1, "b": 1, "c": 1, "d": 1}}, True),
    ({"dependencies": {}}, {}, True),
    ({"properties": {"obj": {"dependencies": {}}}}, {"obj": {}}, True),
]

LOGICAL = [
    ({"properties": {"foo": {"allOf": [{"minimum": 1}]}}}, {"foo": 1}, True),
    ({"properties": {"foo": {"allOf": [{"minimum": 1}]}}}, {"foo": 0}, False),
    ({"properties": {"foo": {"allOf": [{"minimum": 1}]}}}, {"foo": "string"}, True),
    ({"properties": {"foo": {"allOf": [{}]}}}, {"foo": 0}, True),
    ({"properties": {"foo": {"allOf": [{"type": "number"}, {"minimum": 0}]}}}, {"foo": 0}, True),
    ({"properties": {"foo": {"allOf": [{"type": "number"}, {"minimum": 0}]}}}, {"foo": "string"}, False),
    ({"properties": {"foo": {"allOf": [{"type": "number"}, {"minimum": 0}]}}}, {"foo": [0]}, False),
    ({"allOf": [{}]}, {"foo": 0}, True),
    ({"allOf": [{"type": "string"}]}, {}, False),
    ({"allOf": [{"properties": {"foo": {"type": "string"}}}]}, {"foo": "str"}, True),
    ({"allOf": [{"properties": {"foo": {"type": "string"}}}]}, {"foo": 1}, False),
    ({"properties": {"foo": {"type": "number", "allOf": [{"minimum": 1}]}}}, {"foo": "str"}, False),
    ({"properties": {"foo": {"anyOf": [{"type": "string"}, {"type": "number", "minimum": 1}]}}}, {"foo": "str"}, True),
    ({"properties": {"foo": {"anyOf": [{"type": "string"}, {"type": "number", "minimum": 1}]}}}, {"foo": 1}, True),
    ({"properties": {"foo": {"anyOf": [{"type": "string"}, {"type": "number", "minimum": 1}]}}}, {"foo": 0}, False),
    ({"properties": {"foo": {"anyOf": [{"type": "string"}, {"type": "object"}]}}}, {"foo": [{}]}, False),
    ({"anyOf": [{"properties": {"foo": {"type": "string"}}}]}, {}, True),
    ({"anyOf": [{"properties": {"foo": {"type": "string"}}}]}, {"foo": 1}, False),
    ({"properties": {"foo": {"type": "number", "anyOf": [{"minimum": 1}]}}}, {"foo": "str"}, False),
    ({"properties": {"foo": {"oneOf": [{"minimum": 0}, {"maximum": 3}]}}}, {"foo": 4}, True),
    ({"properties": {"foo": {"oneOf": [{"minimum": 0}, {"maximum": 3}]}}}, {"foo": 1}, False),
    ({"properties": {"foo": {"oneOf": [{"minimum": 0}, {"maximum": 3}]}}}, {"foo": "str"}, False),
    ({"properties": {"foo": {"oneOf": [{"type": "string"}, {"pattern": "ing"}]}}}, {"foo": "str"}, True),
    ({"properties": {"foo": {"oneOf": [{"type": "string"}, {"pattern": "ing"}]}}}, {"foo": "string"}, False),
    ({"oneOf": [{"properties": {"foo": {"type": "string"}}}]}, {"foo": 1}, False),
    ({"oneOf": [{}, {}]}, {}, False),
    ({"properties": {"foo": {"type": "number", "oneOf": [{"minimum": 4}]}}}, {}, True),
    ({"properties": {"foo": {"type": "number", "oneOf": [{"minimum": 4}]}}}, {"foo": "str"}, False),
    ({"properties": {"foo": {"not": {"type": "number"}}}}, {}, True),
    ({"properties": {"foo": {"not": {"type": "number"}}}}, {"foo": "str"}, True),
    ({"properties": {"foo": {"not": {"type": "number"}}}}, {"foo": 1}, False),
    ({"properties": {"foo": {"not": {}}}}, {"foo": 1}, False),
    ({"not": {}}, {}, False),
    ({"not": {"properties": {"foo": {"type": "string"}}}}, {"foo": 1}, True),
    ({"not": {"properties": {"foo": {"type": "string"}}}}, {}, False),
    ({"properties": {"foo": {"type": "string", "not": {"maxLength": 4}}}}, {"foo": "string"}, True),
    ({"properties": {"foo": {"type": "string", "not": {"maxLength": 4}}}}, {"foo": "str"}, False),
    ({"properties": {"foo": {"type": "string", "not": {"maxLength": 4}}}}, {"foo": 1}, False),
    ({"properties": {"a": {"enum": ["str", 5]}}}, {"a": "str"}, True),
    ({"properties": {"a": {"enum": ["str", 5]}}}, {"a": 5}, True),
    ({"properties": {"a": {"enum": ["str", 5]}}}, {}, True),
    ({"properties": {"a": {"enum": ["str", 5]}}}, {"a": ["str"]}, False),
    ({"properties": {"a": {"enum": [None]}}}, {"a": None}, True),
    xf(UNDEFINED_AS_NULL, {"properties": {"a": {"enum": [None]}}}, {"a": UNDEFINED}, False, id="enum-null-undefined"),
    ({"properties": {"a": {"enum": [None]}}}, {"a": 1}, False),
    ({"properties": {"a": {"enum": [None]}}, "required": ["a"]}, {}, False),
    ({"properties": {"a": {"enum": [[1, 2, "3"]]}}}, {"a": [1, 2, "3"]}, True),
    ({"properties": {"a": {"enum": [[1, 2, "3"]]}}}, {"a": [2, "3", 1]}, False),
    ({"properties": {"a": {"enum": [[]]}}}, {"a": []}, True),
    ({"properties": {"a": {"enum": [[]]}}}, {"a": [1]}, False),
    ({"properties": {"a": {"enum": ["str", 1]}}}, {"a": [1]}, False),
    ({"properties": {"a": {"enum": [{"name": "tiny", "size": "large"}]}}}, {"a": {"name": "tiny", "size": "large"}},
     True),
    ({"properties": {"a": {"enum": [{"name": "tiny", "size": "large"}]}}}, {"a": {"size": "large", "name": "tiny"}},
     True),
    ({"properties": {"a": {"enum": [{"name": "tiny"}]}}}, {"a": {"size": "large", "name": "tiny"}}, False),
    ({"enum": [{"_id": 0}]}, {"_id": 0}, True),
    ({"enum": [{"_id": 0, "a": "str"}]}, {"_id": 0, "a": "str"}, True),
    ({"enum": [{"_id": 0, "a": "str"}]}, {"a": "str", "_id": 0}, True),
    ({"enum": [{}]}, {}, False),
    ({"enum": [None]}, {}, False),
    ({"enum": [{"_id": 0, "a": "str"}]}, {"_id": 0, "a": "str", "b": 1}, False),
    ({"enum": [1, 2]}, {}, False),
]

MISC = [
    # json_schema.js: description and title are checked as strings, otherwise ignored.
    ({"description": "test"}, {}, True),
    ({"title": "insert title"}, {}, True),
    ({"properties": {"a": {"description": "test"}}}, {"a": {}}, True),
    ({"properties": {"a": {"title": "this is a's title"}}}, {"a": {}}, True),
    # encrypt.js: only BinData of subtype 6 matches 'encrypt'; arrays are not traversed.
    ({"properties": {"bin": {"encrypt": {}}}}, {"bin": ENCRYPTED}, True),
    ({"properties": {"bin": {"encrypt": {}}}}, {"bin": {}}, False),
    ({"properties": {"bin": {"encrypt": {}}}}, {"bin": NOT_ENCRYPTED}, False),
    ({"properties": {"obj": {"type": "object", "properties": {"a": {"encrypt": {}}}}}}, {"obj": {"a": ENCRYPTED}},
     True),
    ({"properties": {"obj": {"type": "object", "properties": {"a": {"encrypt": {}}}}}}, {"obj": {"a": {}}}, False),
    ({"properties": {"obj": {"type": "object", "properties": {"a": {"encrypt": {}}}}}},
     {"obj": {"a": NOT_ENCRYPTED}}, False),
    ({"properties": {"arr": {"type": "array", "items": {"encrypt": {}}}}}, {"arr": [ENCRYPTED, ENCRYPTED]}, True),
    ({"properties": {"arr": {"type": "array", "items": {"encrypt": {}}}}}, {"arr": [{}, {}]}, False),
    ({"properties": {"arr": {"type": "array", "items": {"encrypt": {}}}}}, {"arr": [ENCRYPTED, NOT_ENCRYPTED]},
     False),
    ({"properties": {"bin": {"encrypt": {}}}}, {"bin": [ENCRYPTED, ENCRYPTED]}, False),
]


@pytest.mark.parametrize(
    "schema, doc, valid",
    BSONTYPE + REQUIRED + ADDITIONAL_PROPERTIES + PATTERN_PROPERTIES + ITEMS + MIN_MAX_PROPERTIES
    + DEPENDENCIES + LOGICAL + MISC,
)
def test_schema_match(db, schema, doc, valid):
    assert_schema_match(db, schema, doc, valid)


# --------------------------------------------------------------------------------------------------
# json_schema.js, array_keywords.js: which documents a find returns
# --------------------------------------------------------------------------------------------------

NUM_DOCS = [{"_id": 0, "num": 3.0}, {"_id": 1, "num": -3.0}, {"_id": 2, "num": 2}, {"_id": 3, "num": -2},
            {"_id": 4, "num": Int64(1)}, {"_id": 5, "num": Int64(-1)}, {"_id": 6, "num": {}},
            {"_id": 7, "num": "str"}, {"_id": 8, "num": "string"}, {"_id": 9}]


@pytest.mark.parametrize("schema, expected", [
    ({}, list(range(10))),
    ({"type": "object"}, list(range(10))),
    ({"type": "string"}, []),
    ({"bsonType": "long"}, []),
    ({"bsonType": "objectId"}, []),
    ({"properties": {"num": {"type": "number"}}}, [0, 1, 2, 3, 4, 5, 9]),
    ({"properties": {"num": {"type": "number", "maximum": -1}}}, [1, 3, 5, 9]),
    ({"type": "object", "properties": {"num": {"type": "number", "maximum": -1}}}, [1, 3, 5, 9]),
    ({"properties": {"num": {"bsonType": "long"}}}, [4, 5, 9]),
    ({"properties": {"num": {"bsonType": "long", "maximum": 0}}}, [5, 9]),
    ({"properties": {"num": {"maximum": 0}}}, [1, 3, 5, 6, 7, 8, 9]),
    ({"properties": {"num": {"type": "string", "maximum": 0}}}, [7, 8, 9]),
    ({"properties": {"num": {"type": "string", "maxLength": 2}}}, [9]),
    ({"properties": {"num": {"type": "string", "maxLength": 3}}}, [7, 9]),
    ({"properties": {"num": {"type": "string", "minLength": 4}}}, [8, 9]),
    ({"properties": {"num": {"type": "string", "minLength": 3}}}, [7, 8, 9]),
    ({"properties": {"num": {"type": "string", "pattern": "ing"}}}, [8, 9]),
    ({"properties": {"num": {"minimum": 2, "exclusiveMinimum": True}}}, [0, 6, 7, 8, 9]),
    ({"properties": {"num": {"maximum": -2, "exclusiveMaximum": False}}}, [1, 3, 6, 7, 8, 9]),
    ({"properties": {"num": {"multipleOf": 3}}}, [0, 1, 6, 7, 8, 9]),
])
def test_json_schema_find_numbers_and_strings(db, schema, expected):
    db.c.insert_many(NUM_DOCS)
    found = [d["_id"] for d in db.c.find({"$jsonSchema": schema}, {"_id": 1}).sort("_id", 1)]
    assert found == expected


def test_json_schema_nested_properties_and_or(db):
    db.c.insert_many([{"_id": 0, "obj": 3}, {"_id": 1, "obj": {"f1": {"f3": "str"}, "f2": "str"}},
                      {"_id": 2, "obj": {"f1": "str", "f2": "str"}}, {"_id": 3, "obj": {"f1": 1, "f2": "str"}}])
    schema = {"properties": {"obj": {"properties": {"f1": {"type": "object", "properties": {"f3": {"type": "string"}}},
                                                    "f2": {"type": "string"}}}}}
    assert [d["_id"] for d in db.c.find({"$jsonSchema": schema}).sort("_id", 1)] == [0, 1]
    found = db.c.find({"$or": [{"obj.f1": "str"}, {"$jsonSchema": schema}]}).sort("_id", 1)
    assert [d["_id"] for d in found] == [0, 1, 2]


def test_json_schema_arrays_are_values(db):
    db.c.insert_many([{"_id": 0, "arr": 3}, {"_id": 1, "arr": [1, "foo"]}, {"_id": 2, "arr": [{"a": 1}, {"b": 2}]},
                      {"_id": 3, "arr": []}, {"_id": 4, "arr": {"a": []}}])
    assert [d["_id"] for d in db.c.find({"$jsonSchema": {"properties": {"arr": {"type": "array"}}}})
            .sort("_id", 1)] == [1, 2, 3]
    assert [d["_id"] for d in db.c.find({"$jsonSchema": {"properties": {"arr": {"type": "number"}}}})] == [0]


def test_json_schema_with_sibling_predicates(db):
    db.c.insert_many([{"_id": 1, "a": 1, "b": 1}, {"_id": 2, "a": 2, "b": 2}])
    assert len(list(db.c.find({"$jsonSchema": {"properties": {"a": {"type": "number"}}, "required": ["a"]},
                               "b": 1}))) == 1
    assert len(list(db.c.find({"$or": [{"$jsonSchema": {}, "a": 1}, {"b": 1}]}))) == 1
    assert len(list(db.c.find({"$and": [{"$jsonSchema": {}, "a": 1}, {"b": 1}]}))) == 1
    assert len(list(db.c.find({"$alwaysTrue": 1, "b": 2}))) == 1
    assert len(list(db.c.find({"$alwaysFalse": 1, "b": 2}))) == 0


@pytest.mark.parametrize("schema, expected", [
    ({"minItems": 10}, [0, 1, 2, 3, 4]),
    ({"properties": {"a": {"minItems": 10}}}, [0, 4]),
    ({"properties": {"a": {"minItems": 2}}}, [0, 2, 3, 4]),
    ({"maxItems": 0}, [0, 1, 2, 3, 4]),
    ({"properties": {"a": {"maxItems": 0}}}, [0, 1, 4]),
    ({"properties": {"a": {"maxItems": 2}}}, [0, 1, 2, 4]),
])
def test_array_keywords_find(db, schema, expected):
    db.c.insert_many([{"_id": 0, "a": 1}, {"_id": 1, "a": []}, {"_id": 2, "a": [2, "str"]},
                      {"_id": 3, "a": [3, 3, "foo"]}, {"_id": 4}])
    assert [d["_id"] for d in db.c.find({"$jsonSchema": schema}, {"_id": 1}).sort("_id", 1)] == expected


def test_json_schema_validator_is_stored_as_given(db):
    for schema in ({"properties": {"a": {"type": "number"}, "b": {"minLength": 1}}},
                   {"title": "Test schema", "description": "Metadata keyword test"},
                   {"properties": {"a": {"title": "Nested title", "description": "Nested description"}}}):
        db.drop_collection("v")
        create(db, "v", validator={"$jsonSchema": schema})
        info = db.command("listCollections", filter={"name": "v"})["cursor"]["firstBatch"][0]
        assert info["options"]["validator"] == {"$jsonSchema": schema}


# --------------------------------------------------------------------------------------------------
# malformed schemas: mongod's code (and message where the jstest's intent pins it)
# --------------------------------------------------------------------------------------------------

MALFORMED = [
    # json_schema.js
    ("foo", TYPE_MISMATCH, "$jsonSchema must be an object"),
    ([], TYPE_MISMATCH, "$jsonSchema must be an object"),
    ({"type": 3}, TYPE_MISMATCH, "$jsonSchema keyword 'type' must be either a string or an array of strings"),
    ({"type": {}}, TYPE_MISMATCH, None),
    ({"type": "integer"}, FAILED_TO_PARSE, "$jsonSchema type 'integer' is not currently supported."),
    ({"properties": 3}, TYPE_MISMATCH, "$jsonSchema keyword 'properties' must be an object"),
    ({"properties": []}, TYPE_MISMATCH, None),
    ({"properties": {"num": "number"}}, TYPE_MISMATCH,
     "Nested schema for $jsonSchema property 'num' must be an object"),
    ({"properties": {"num": {"maximum": "0"}}}, TYPE_MISMATCH, "$jsonSchema keyword 'maximum' must be a number"),
    ({"properties": {"num": {"maximum": {}}}}, TYPE_MISMATCH, None),
    ({"properties": {"num": {"maxLength": "0"}}}, FAILED_TO_PARSE, 'Expected a number in: maxLength: "0"'),
    ({"properties": {"num": {"maxLength": {}}}}, FAILED_TO_PARSE, "Expected a number in: maxLength: {}"),
    ({"properties": {"num": {"minLength": "0"}}}, FAILED_TO_PARSE, None),
    ({"properties": {"num": {"minLength": {}}}}, FAILED_TO_PARSE, None),
    ({"properties": {"num": {"pattern": 0}}}, TYPE_MISMATCH, "$jsonSchema keyword 'pattern' must be a string"),
    ({"properties": {"num": {"pattern": {}}}}, TYPE_MISMATCH, None),
    ({"default": {"_id": 0}}, FAILED_TO_PARSE, "$jsonSchema keyword 'default' is not currently supported"),
    ({"definitions": {"numberField": {"type": "number"}}}, FAILED_TO_PARSE, None),
    ({"format": "email"}, FAILED_TO_PARSE, None),
    ({"id": "someschema.json"}, FAILED_TO_PARSE, None),
    ({"properties": {"a": {"$ref": "#/definitions/positiveInt"}}}, FAILED_TO_PARSE,
     "$jsonSchema keyword '$ref' is not currently supported"),
    ({"$schema": "hyper-schema"}, FAILED_TO_PARSE, None),
    ({"$schema": "http://json-schema.org/draft-04/schema#"}, FAILED_TO_PARSE, None),
    pytest.param({"invalid": {}}, FAILED_TO_PARSE, "Unknown $jsonSchema keyword: invalid"),
    pytest.param({"$comment": "x"}, FAILED_TO_PARSE, "Unknown $jsonSchema keyword: $comment"),
    ({"description": 1}, TYPE_MISMATCH, "$jsonSchema keyword 'description' must be of type string"),
    ({"title": {}}, TYPE_MISMATCH, "$jsonSchema keyword 'title' must be of type string"),
    # bsontype.js
    *[({"properties": {"f": {"type": alias}}}, BAD_VALUE, f"Unknown type name alias: {alias}")
      for alias in ("double", "binData", "undefined", "objectId", "bool", "date", "regex", "javascript",
                    "javascriptWithScope", "int", "timestamp", "long", "decimal", "minKey", "maxKey", "unknown")],
    ({"properties": {"b": {"bsonType": "boolean"}}}, BAD_VALUE, "Unknown type name alias: boolean"),
    ({"properties": {"f": {"bsonType": "unknown"}}}, BAD_VALUE, None),
    ({"properties": {"num": {"bsonType": "integer"}}}, FAILED_TO_PARSE,
     "$jsonSchema type 'integer' is not currently supported."),
    ({"properties": {"num": {"type": "integer"}}}, FAILED_TO_PARSE, None),
    ({"bsonType": "string", "type": "string"}, FAILED_TO_PARSE,
     "Cannot specify both $jsonSchema keywords 'type' and 'bsonType'"),
    ({"properties": {"a": {"bsonType": "string", "type": "string"}}}, FAILED_TO_PARSE, None),
    pytest.param({"f": {"type": ["number", "objectId"]}}, FAILED_TO_PARSE,
       "Unknown $jsonSchema keyword: f"),
    ({"bsonType": ["unknown"]}, BAD_VALUE, "Unknown type name alias: unknown"),
    ({"properties": {"f": {"type": ["number", "objectId"]}}}, BAD_VALUE, "Unknown type name alias: objectId"),
    ({"properties": {"f": {"type": ["number", 2]}}}, TYPE_MISMATCH,
     "$jsonSchema keyword 'type' array elements must be strings"),
    ({"properties": {"f": {"bsonType": ["number", 2]}}}, TYPE_MISMATCH, None),
    ({"properties": {"f": {"type": ["number", "string", "number"]}}}, FAILED_TO_PARSE,
     "$jsonSchema keyword 'type' has duplicate value: number"),
    ({"properties": {"f": {"bsonType": ["number", "string", "number"]}}}, FAILED_TO_PARSE, None),
    ({"properties": {"f": {"type": []}}}, FAILED_TO_PARSE, "$jsonSchema keyword 'type' must name at least one type"),
    # logical_keywords.js
    *[({"properties": {"foo": {kw: arg}}}, code, None)
      for kw in ("allOf", "anyOf", "oneOf")
      for arg, code in (({"maximum": "0"}, TYPE_MISMATCH), ([0], TYPE_MISMATCH), ([], BAD_VALUE))],
    *[pytest.param({"properties": {"foo": {kw: [{"invalid": "0"}]}}}, FAILED_TO_PARSE, None)
      for kw in ("allOf", "anyOf", "oneOf")],
    ({"properties": {"foo": {"allOf": []}}}, BAD_VALUE, "$jsonSchema keyword 'allOf' must be a non-empty array"),
    ({"properties": {"foo": {"anyOf": [0.0]}}}, TYPE_MISMATCH,
     "$jsonSchema keyword 'anyOf' must be an array of objects, but found an element of type double"),
    ({"properties": {"foo": {"not": {"maximum": "0"}}}}, TYPE_MISMATCH, None),
    ({"properties": {"foo": {"not": [0]}}}, TYPE_MISMATCH,
     "$jsonSchema keyword 'not' must be an object, but found an element of type array"),
    ({"properties": {"foo": {"not": [{}]}}}, TYPE_MISMATCH, None),
    ({"properties": {"a": {"enum": 1}}}, TYPE_MISMATCH, None),
    ({"properties": {"a": {"enum": []}}}, FAILED_TO_PARSE, "$jsonSchema keyword 'enum' cannot be an empty array"),
    ({"properties": {"a": {"enum": [1, 1.0]}}}, FAILED_TO_PARSE,
     "$jsonSchema keyword 'enum' array cannot contain duplicate values."),
    ({"enum": [{"a": 1, "b": 2}, {"b": 2, "a": 1}]}, FAILED_TO_PARSE, None),
    # items.js, additional_items.js, unique_items.js, min_max_items.js
    ({"items": 1}, TYPE_MISMATCH, "$jsonSchema keyword 'items' must be an array or an object, not int"),
    ({"items": 1.0}, TYPE_MISMATCH, None),
    ({"items": "true"}, TYPE_MISMATCH, None),
    ({"items": [1]}, TYPE_MISMATCH, None),
    ({"additionalItems": 1}, TYPE_MISMATCH,
     "$jsonSchema keyword 'additionalItems' must be either an object or a boolean, but got a int"),
    ({"additionalItems": 1.0}, TYPE_MISMATCH, None),
    ({"additionalItems": "true"}, TYPE_MISMATCH, None),
    ({"uniqueItems": 1}, TYPE_MISMATCH, "$jsonSchema keyword 'uniqueItems' must be a boolean"),
    ({"uniqueItems": 1.0}, TYPE_MISMATCH, None),
    ({"uniqueItems": "true"}, TYPE_MISMATCH, None),
    ({"minItems": "blah"}, FAILED_TO_PARSE, 'Expected a number in: minItems: "blah"'),
    pytest.param({"minItems": -1}, FAILED_TO_PARSE, "Expected a positive number in: minItems: -1"),
    ({"minItems": 12.5}, FAILED_TO_PARSE, "Expected an integer: minItems: 12.5"),
    ({"maxItems": "blah"}, FAILED_TO_PARSE, None),
    ({"maxItems": -1}, FAILED_TO_PARSE, None),
    ({"maxItems": 12.5}, FAILED_TO_PARSE, None),
    pytest.param({"minProperties": -1.0}, FAILED_TO_PARSE,
       "Expected a positive number in: minProperties: -1.0"),
    ({"maxProperties": 1e300}, FAILED_TO_PARSE, None),
    # the rest of mongod's JSON Schema parser (keywords the jstests use)
    ({"required": "a"}, TYPE_MISMATCH, "$jsonSchema keyword 'required' must be an array, but found an element "
                                       "of type string"),
    ({"required": [1]}, TYPE_MISMATCH, None),
    ({"required": []}, FAILED_TO_PARSE, "$jsonSchema keyword 'required' cannot be an empty array"),
    ({"required": ["a", "a"]}, FAILED_TO_PARSE, "$jsonSchema keyword 'required' array cannot contain duplicate values"),
    ({"additionalProperties": 1}, TYPE_MISMATCH,
     "$jsonSchema keyword 'additionalProperties' must be an object or a boolean"),
    ({"patternProperties": 1}, TYPE_MISMATCH, "$jsonSchema keyword 'patternProperties' must be an object"),
    ({"patternProperties": {"^a": 1}}, TYPE_MISMATCH,
     "$jsonSchema keyword 'patternProperties' has property '^a' which is not an object"),
    ({"dependencies": 1}, TYPE_MISMATCH, "$jsonSchema keyword 'dependencies' must be an object"),
    ({"dependencies": {"a": 1}}, TYPE_MISMATCH,
     "property 'a' in $jsonSchema keyword 'dependencies' must be either an object or an array"),
    ({"dependencies": {"a": []}}, FAILED_TO_PARSE,
     "property 'a' in $jsonSchema keyword 'dependencies' cannot be an empty array"),
    ({"dependencies": {"a": [1]}}, TYPE_MISMATCH, None),
    ({"dependencies": {"a": ["b", "b"]}}, FAILED_TO_PARSE,
     "array 'a' in $jsonSchema keyword 'dependencies' contains duplicate element: b"),
    ({"properties": {"a": {"multipleOf": "2"}}}, TYPE_MISMATCH, "$jsonSchema keyword 'multipleOf' must be a number"),
    ({"properties": {"a": {"multipleOf": 0}}}, FAILED_TO_PARSE,
     "$jsonSchema keyword 'multipleOf' must have a positive value"),
    ({"properties": {"a": {"multipleOf": -2}}}, FAILED_TO_PARSE, None),
    ({"properties": {"a": {"exclusiveMaximum": True}}}, FAILED_TO_PARSE,
     "$jsonSchema keyword 'maximum' must be a present if exclusiveMaximum is present"),
    ({"properties": {"a": {"maximum": 1, "exclusiveMaximum": 1}}}, TYPE_MISMATCH,
     "$jsonSchema keyword 'exclusiveMaximum' must be a boolean"),
    ({"properties": {"a": {"minimum": 1, "exclusiveMinimum": "x"}}}, TYPE_MISMATCH, None),
    # encrypt.js
    ({"properties": {"bin": {"encrypt": {}, "type": "object"}}}, FAILED_TO_PARSE,
     "$jsonSchema keyword 'encrypt' cannot be used in conjunction with 'type', 'encrypt' implies type "
     "'bsonType::BinData'"),
    ({"properties": {"bin": {"encrypt": {}, "bsonType": "object"}}}, FAILED_TO_PARSE, None),
    ({"properties": {"bin": {"encrypt": 1}}}, TYPE_MISMATCH, None),
    ({"encryptMetadata": {}}, FAILED_TO_PARSE, None),
    ({"properties": {"bin": {"encrypt": {}, "encryptMetadata": {"algorithm": "x"}}}}, FAILED_TO_PARSE,
     "Cannot specify both $jsonSchema keywords 'encrypt' and 'encryptMetadata'"),
]


@pytest.mark.parametrize("schema, code, message", MALFORMED)
def test_malformed_schema_fails_to_parse(db, schema, code, message):
    err = schema_error(db, schema)
    assert err.code == code, err.details
    if message is not None:
        assert err.details["errmsg"] == message


def _fails_everywhere(db, invalid: dict) -> None:
    db.c.insert_one({"a": 1})
    for run in (lambda: db.command("count", "c", query={"$jsonSchema": invalid}),
                lambda: db.command("distinct", "c", key="a", query={"$jsonSchema": invalid}),
                lambda: db.command("aggregate", "c", pipeline=[{"$match": {"$jsonSchema": invalid}}], cursor={}),
                lambda: db.command("create", "invalid", viewOn="c", pipeline=[{"$match": {"$jsonSchema": invalid}}]),
                lambda: db.command("listCollections", filter={"$jsonSchema": invalid})):
        with pytest.raises(OperationFailure) as info:
            run()
        assert info.value.code == FAILED_TO_PARSE


def test_json_schema_refused_in_elem_match_projection(db):
    db.c.insert_one({"a": [{}]})
    with pytest.raises(OperationFailure) as info:
        list(db.c.find({}, {"a": {"$elemMatch": {"$jsonSchema": {}}}}))
    assert info.value.code == QUERY_FEATURE_NOT_ALLOWED


def test_unknown_keyword_fails_everywhere(db):
    # misc_validation.js: count, distinct, a view's $match, listCollections' filter; also aggregate.
    _fails_everywhere(db, {"invalid": {}})


def test_unsupported_keyword_fails_everywhere(db):
    _fails_everywhere(db, {"default": {}})


# --------------------------------------------------------------------------------------------------
# misc_validation.js: $jsonSchema outside find
# --------------------------------------------------------------------------------------------------

def test_json_schema_in_count_and_distinct(db):
    db.c.insert_many([{"a": 1, "b": "str"}, {"a": 1, "b": 1}])
    assert db.c.count_documents({"$jsonSchema": {"properties": {"a": {"type": "number"}, "b": {"type": "string"}}}}) == 1
    assert db.command("count", "c", query={"$jsonSchema": {"properties": {"b": {"type": "string"}}}})["n"] == 1
    db.d.insert_many([{"a": 1}, {"a": 2}, {"a": "str"}, {"a": ["STR", "str"]}])
    assert sorted(db.d.distinct("a", {"$jsonSchema": {"properties": {"a": {"type": "number"}}}})) == [1, 2]


def test_json_schema_ignores_collation(db):
    schema = {"properties": {"a": {"enum": ["STR"]}}}
    ci = {"locale": "en_US", "strength": 1}
    create(db, "c", collation=ci)
    db.c.insert_many([{"a": "str"}, {"a": ["STR", "sTr"]}])
    assert len(list(db.c.find({"$jsonSchema": schema}))) == 0
    assert len(list(db.c.find({"$jsonSchema": {"properties": {"a": {"uniqueItems": True}}}}))) == 2
    assert len(list(db.c.find({"a": "STR"}))) == 2
    db.d.insert_many([{"a": "str"}, {"a": ["STR", "sTr"]}])
    assert len(list(db.d.find({"$jsonSchema": schema}, collation=ci))) == 0
    assert len(list(db.d.find({"$jsonSchema": {"properties": {"a": {"uniqueItems": True}}}}, collation=ci))) == 2
    assert len(list(db.d.find({"a": "STR"}, collation=ci))) == 2
    assert db.d.delete_many({"$jsonSchema": schema}, collation=ci).deleted_count == 0


def test_json_schema_in_a_view(db):
    db.c.insert_many([{"name": "Peter", "age": 65}, {"name": "Paul", "age": 105}, {"name": "Mary", "age": 10},
                      {"name": "John", "age": "unknown"}, {"name": "Mark"}, {}])
    db.command("create", "seniorCitizens", viewOn="c", pipeline=[{"$match": {"$jsonSchema": {
        "required": ["name", "age"], "properties": {"name": {"type": "string"}, "age": {"type": "number", "minimum": 65}}}}}])
    assert len(list(db.seniorCitizens.find())) == 2


def test_json_schema_in_list_collections_and_databases(db, client):
    db.c.insert_one({})
    res = db.command("listCollections", filter={"$jsonSchema": {"properties": {"name": {"enum": ["c"]}}}})
    assert len(res["cursor"]["firstBatch"]) == 1
    res = client.admin.command("listDatabases", filter={"$jsonSchema": {"properties": {"name": {"enum": [db.name]}}}})
    assert [d["name"] for d in res["databases"]] == [db.name]


def test_json_schema_in_graph_lookup(db):
    db.foreign.insert_many([{"_id": i, "n": [i - 1, i + 1]} for i in range(10)])
    db.c.insert_one({"starting": 0})
    res = list(db.c.aggregate([{"$graphLookup": {
        "from": "foreign", "startWith": "$starting", "connectFromField": "n", "connectToField": "_id",
        "as": "integers", "restrictSearchWithMatch": {"$jsonSchema": {"properties": {"_id": {"maximum": 4}}}}}}]))
    assert len(res) == 1 and len(res[0]["integers"]) == 5


def test_json_schema_in_writes(db):
    schema = {"properties": {"a": {"type": "number", "maximum": 2}}}
    db.c.insert_many([{"a": 1}, {"a": 2}, {"a": "str"}, {"a": [3]}])
    assert db.c.delete_many({"$jsonSchema": schema}).deleted_count == 2
    assert len(list(db.c.find({"$jsonSchema": schema}))) == 0
    db.d.insert_many([{"a": 1}, {"a": 2}])
    assert db.d.update_many({"$jsonSchema": schema}, {"$inc": {"a": 1}}).matched_count == 2
    assert len(list(db.d.find({"$jsonSchema": schema}))) == 1
    db.e.insert_many([{"a": "long_string"}, {"a": "short"}])
    long_schema = {"properties": {"a": {"type": "string", "minLength": 6}}}
    before = db.e.find_one_and_update({"$jsonSchema": long_schema}, {"$set": {"a": "extra_long_string"}})
    assert before["a"] == "long_string"
    assert len(list(db.e.find({"$jsonSchema": long_schema}))) == 1


def test_json_schema_with_indexes(db):
    db.c.insert_many([{"_id": 1, "a": 1, "b": 1}, {"_id": 2, "a": 2, "b": 2, "point": [5, 5]},
                      {"_id": 3, "a": "temp text test"}])
    db.c.create_index([("a", 1)])
    assert len(list(db.c.find({"$jsonSchema": {}}))) == 3
    assert len(list(db.c.find({"$jsonSchema": {"properties": {"a": {"type": "number"}}}}))) == 2
    assert len(list(db.c.find({"$jsonSchema": {"required": ["a"], "properties": {"a": {"type": "number"}}}}))) == 2
    assert len(list(db.c.find({"$or": [{"$jsonSchema": {"properties": {"a": {"minimum": 2}}}}, {"b": 2}]}))) == 2
    db.c.drop_indexes()
    db.c.create_index([("point", "2dsphere")])
    assert len(list(db.c.find({"$jsonSchema": {"required": ["point"]}}))) == 1
    db.c.drop_indexes()
    db.c.create_index([("a", "text")])
    db.c.create_index([("a", 1)])
    assert len(list(db.c.find({"$jsonSchema": {"properties": {"a": {"minLength": 5}}}}))) == 3
    assert len(list(db.c.find({"$jsonSchema": {"required": ["a"]}, "$text": {"$search": "test"}}))) == 1
    assert len(list(db.c.find({"$and": [{"$jsonSchema": {}}, {"$text": {"$search": "TEST"}}]}))) == 1


# --------------------------------------------------------------------------------------------------
# doc_validation.js (older layout): inserts, upserts, updates and findAndModify under a validator
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("validator", [{"a": {"$exists": True}}, {"$jsonSchema": {"required": ["a"]}}])
def test_insert_update_validation(db, validator):
    big = [{"arbitrary": i} for i in range(2048)]
    c = db.c
    create(db, "c", validator=validator)
    c.insert_one({"_id": "valid1", "a": 1})
    c.replace_one({"_id": "valid2"}, {"_id": "valid2", "a": 2}, upsert=True)
    db.command("findAndModify", "c", query={"_id": "valid3"}, update={"$set": {"a": 3}}, upsert=True)
    fails_validation(lambda: c.insert_one({"_id": "invalid3", "b": 1}))
    fails_validation(lambda: c.replace_one({"_id": "invalid4"}, {"_id": "invalid4", "b": 2}, upsert=True))
    fails_validation(lambda: db.command("findAndModify", "c", query={"_id": "invalid4"},
                                        update={"$set": {"b": 3}}, upsert=True))
    assert c.delete_one({"_id": "valid1"}).deleted_count == 1

    c.drop()
    c.insert_many([{"_id": "valid1", "a": 1}, {"_id": "invalid2", "b": 1}])
    db.command("collMod", "c", validator=validator)
    c.update_one({"_id": "valid1"}, {"$set": {"z": 1}})
    db.command("findAndModify", "c", query={"_id": "valid1"}, update={"$set": {"y": 2}})
    c.update_one({"_id": "valid1"}, {"$inc": {"z": 1}})
    c.update_one({"_id": "valid1"}, {"$set": {"z": big}})
    c.replace_one({"_id": "valid1"}, {"a": 1})
    fails_validation(lambda: c.update_one({"_id": "invalid2"}, {"$set": {"z": 1}}))
    fails_validation(lambda: c.update_one({"_id": "invalid2"}, {"$inc": {"z": 1}}))
    fails_validation(lambda: c.update_one({"_id": "invalid2"}, {"$set": {"z": big}}))
    fails_validation(lambda: db.command("findAndModify", "c", query={"_id": "invalid2"}, update={"$set": {"y": 2}}))
    fails_validation(lambda: db.command("findAndModify", "c", query={"_id": "invalid2"}, update={"$inc": {"y": 1}}))

    c.drop()
    c.insert_many([{"_id": "valid1", "a": 1}, {"_id": "invalid2", "b": 1}, {"_id": "invalid3", "b": 1}])
    db.command("collMod", "c", validator=validator)
    fails_validation(lambda: c.update_one({"_id": "valid1"}, {"$unset": {"a": 1}}))
    c.update_one({"_id": "invalid2"}, {"$set": {"a": 1}})
    fails_validation(lambda: db.command("findAndModify", "c", query={"_id": "valid1"}, update={"$unset": {"a": 1}}))
    db.command("findAndModify", "c", query={"_id": "invalid3"}, update={"$set": {"a": 1}})
    # removing the validator ({}) stops validation
    db.command("collMod", "c", validator={})
    c.update_one({"_id": "valid1"}, {"$unset": {"a": 1}})
    db.command("findAndModify", "c", query={"_id": "valid1"}, update={"$set": {"z": 2}})
    assert db.command("listCollections", filter={"name": "c"})["cursor"]["firstBatch"][0]["options"].get(
        "validator", {}) == {}


@pytest.mark.parametrize("validator", [{"a": {"$exists": True}}, {"$jsonSchema": {"required": ["a"]}}])
def test_noop_update_of_invalid_document_succeeds(db, validator):
    db.c.insert_one({"_id": "invalid2", "b": 1})
    db.command("collMod", "c", validator=validator)
    db.c.update_one({"_id": "invalid2"}, {"$set": {"b": 1}})
    db.command("findAndModify", "c", query={"_id": "invalid2"}, update={"$set": {"b": 1}})


@pytest.mark.parametrize("validator, schema", [({"a": "xyz"}, False),
                                               ({"$jsonSchema": {"properties": {"a": {"enum": ["xyz"]}}}}, True)])
def test_validator_collation(db, validator, schema):
    # A query validator follows the collection's default collation; a $jsonSchema one ignores it. A
    # query validator matches inside leaf arrays; $jsonSchema sees the array as one value.
    c = db.c
    create(db, "c", validator=validator, collation={"locale": "en_US", "strength": 2})
    c.insert_one({"_id": 0, "a": "xyz", "b": "foo"})

    def correct(fn):
        if schema:
            fails_validation(fn)
        else:
            fn()

    correct(lambda: c.insert_one({"a": "XYZ"}))
    correct(lambda: c.insert_one({"a": "XyZ", "b": "foo"}))
    correct(lambda: c.replace_one({"_id": 0}, {"a": "xyZ", "b": "foo"}))
    correct(lambda: c.update_one({"_id": 0}, {"$set": {"a": "Xyz"}}))
    correct(lambda: db.command("findAndModify", "c", query={"_id": 0}, update={"a": "xyZ", "b": "foo"}))
    correct(lambda: db.command("findAndModify", "c", query={"_id": 0}, update={"$set": {"a": "Xyz"}}))
    fails_validation(lambda: c.insert_one({"a": "not xyz"}))
    fails_validation(lambda: c.update_one({"_id": 0}, {"$set": {"a": "xyzz"}}))
    fails_validation(lambda: db.command("findAndModify", "c", query={"_id": 0}, update={"$set": {"a": "xyzz"}}))
    correct(lambda: c.insert_one({"a": ["xyz"]}))
    correct(lambda: c.insert_one({"a": ["XYZ"]}))
    correct(lambda: c.insert_one({"a": ["XyZ"], "b": "foo"}))


def test_expr_validators(db):
    create(db, "c", validator={"$expr": {"$eq": ["$a", 5]}})
    db.c.insert_one({"a": 5})
    fails_validation(lambda: db.c.insert_one({"a": 4}))
    db.command("collMod", "c", validator={"$expr": {"$eq": ["$a", 4]}})
    db.c.insert_one({"a": 4})
    fails_validation(lambda: db.c.insert_one({"a": 5}))

    create(db, "d", validator={"$expr": {"$eq": [1, {"$dayOfMonth": {"date": "$a", "timezone": "America/New_York"}}]}})
    db.d.insert_one({"a": bson.datetime.datetime(2017, 10, 1, 22)})
    fails_validation(lambda: db.d.insert_one({"a": bson.datetime.datetime(2017, 10, 1, 0)}))

    create(db, "e", validator={"$expr": {"$eq": [
        "2017-07-04 14:56:42 +0000 (0 minutes)",
        {"$dateToString": {"format": "%Y-%m-%d %H:%M:%S %z (%Z minutes)", "date": "$date", "timezone": "$tz"}}]}})
    db.e.insert_one({"date": bson.datetime.datetime(2017, 7, 4, 14, 56, 42, 911000), "tz": "UTC"})
    fails_validation(lambda: db.e.insert_one({"date": bson.datetime.datetime(2017, 7, 4, 14, 56, 42, 911000),
                                              "tz": "America/New_York"}))

    # a validator may throw while it runs: the insert fails with that error, not 121
    create(db, "f", validator={"$expr": {"$eq": ["$a", {"$divide": [1, "$b"]}]}})
    db.f.insert_one({"a": 1, "b": 1})
    with pytest.raises(WriteError) as info:
        db.f.insert_one({"a": 1, "b": 0})
    assert info.value.code == BAD_VALUE and "divide by zero" in info.value.details["errmsg"]
    db.f.insert_one({"a": -1, "b": -1})


# --------------------------------------------------------------------------------------------------
# doc_validation_options.js: validationLevel and validationAction
# --------------------------------------------------------------------------------------------------

def test_validation_level_and_action(db):
    t = db.t
    create(db, "t", validator={"a": 1})
    fails_validation(lambda: t.insert_one({"a": 2}))
    t.insert_one({"_id": 1, "a": 1})
    assert t.count_documents({}) == 1
    fails_validation(lambda: t.update_one({}, {"$set": {"a": 2}}))  # strict by default
    assert len(list(t.find({"a": 1}))) == 1

    db.command("collMod", "t", validationAction="warn")
    t.update_one({}, {"$set": {"a": 2}})
    assert len(list(t.find({"a": 2}))) == 1
    info = db.command("listCollections", filter={"name": "t"})["cursor"]["firstBatch"][0]
    assert info["options"]["validationAction"] == "warn"

    # a validator expression that throws accepts writes in 'warn' mode
    db.command("collMod", "t", validator={"$expr": {"$divide": [10, 0]}})
    t.insert_one({"foo": "1"})
    t.delete_one({"foo": "1"})
    db.command("collMod", "t", validator={"a": 1})

    db.command("collMod", "t", validationAction="error", validationLevel="strict")
    fails_validation(lambda: t.update_one({}, {"$set": {"a": 3}}))
    assert len(list(t.find({"a": 2}))) == 1
    db.command("collMod", "t", validationLevel="moderate")
    t.update_one({}, {"$set": {"a": 3}})  # moderate: an invalid document may stay invalid
    assert len(list(t.find({"a": 3}))) == 1

    t.drop()
    create(db, "t", validator={"a": 1}, validationAction="warn")
    t.insert_one({"a": 2})
    t.insert_one({"a": 1})
    assert t.count_documents({}) == 2


def test_validation_level_off(db):
    create(db, "t", validator={"a": 1}, validationLevel="off")
    db.t.insert_one({"a": 2})
    db.command("collMod", "t", validationLevel="strict")
    fails_validation(lambda: db.t.insert_one({"a": 2}))


@pytest.mark.parametrize("options, code", [
    ({"validationLevel": "sometimes"}, BAD_VALUE),
    ({"validationAction": "shout"}, BAD_VALUE),
])
def test_validation_option_values(db, options, code):
    with pytest.raises(OperationFailure) as info:
        create(db, "t", validator={"a": 1}, **options)
    assert info.value.code == code


# --------------------------------------------------------------------------------------------------
# doc_validation_invalid_validators.js, doc_validation_encrypt_keywords.js
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("validator, code", [
    (7, TYPE_MISMATCH),
    ("assert", TYPE_MISMATCH),
    ({"$jsonSchema": {"default": 1}}, FAILED_TO_PARSE),
    ({"$jsonSchema": {"properties": 1}}, TYPE_MISMATCH),
])
def test_invalid_validator_refused_by_create(db, validator, code):
    with pytest.raises(OperationFailure) as info:
        create(db, "c", validator=validator)
    assert info.value.code == code


@pytest.mark.parametrize("validator", [
    {"$text": {"$search": "bob"}},
    {"$where": "this.a == this.b"},
    {"a": {"$near": [0, 0]}},
    {"a": {"$nearSphere": [0, 0]}},
    {"$expr": {"$eq": ["$a", "$$unbound"]}},
    {"$expr": {"$function": {"body": "function(age) { return age >= 21; }", "args": ["$age"], "lang": "js"}}},
])
def test_validator_context_features_refused(db, validator):
    with pytest.raises(OperationFailure):
        create(db, "c", validator=validator)
    create(db, "d")
    with pytest.raises(OperationFailure):
        db.command("collMod", "d", validator=validator)


def test_invalid_validator_refused_by_coll_mod(db):
    create(db, "c", validator={"a": {"$exists": True}})
    with pytest.raises(OperationFailure) as info:
        db.command("collMod", "c", validator={"$jsonSchema": {"default": 7}})
    assert info.value.code == FAILED_TO_PARSE
    db.command("collMod", "c", validator={"a": {"$exists": True}})


@pytest.mark.parametrize("dbname", ["admin", "config"])
def test_validator_refused_on_restricted_databases(client, dbname):
    try:
        with pytest.raises(OperationFailure):
            client[dbname].command("create", "doc_validation_invalid_validators",
                                   validator={"a": {"$exists": True}})
    finally:
        client[dbname].drop_collection("doc_validation_invalid_validators")


ENCRYPT_SCHEMA = {"$jsonSchema": {"properties": {"_id": {"encrypt": {}}}}}
NESTED_ENCRYPT_SCHEMA = {"$jsonSchema": {"properties": {"user": {"type": "object",
                                                                 "properties": {"ssn": {"encrypt": {}}}}}}}
ENCRYPT_METADATA_SCHEMA = {"$jsonSchema": {"encryptMetadata": {
    "algorithm": "AEAD_AES_256_CBC_HMAC_SHA_512-Deterministic"}}}


def test_encrypt_validator_with_strict_error(db):
    create(db, "c", validator=ENCRYPT_SCHEMA, validationAction="error")
    fails_validation(lambda: db.c.insert_one({"_id": 1}))
    db.c.insert_one({"_id": ENCRYPTED})


@pytest.mark.parametrize("validator", [ENCRYPT_SCHEMA, NESTED_ENCRYPT_SCHEMA, ENCRYPT_METADATA_SCHEMA])
@pytest.mark.parametrize("options", [{"validationAction": "warn"}, {"validationLevel": "moderate"}])
def test_encrypt_keywords_refused_unless_strict_error(db, validator, options):
    with pytest.raises(OperationFailure) as info:
        create(db, "c", validator=validator, **options)
    assert info.value.code == QUERY_FEATURE_NOT_ALLOWED


# --------------------------------------------------------------------------------------------------
# bypass_doc_validation.js
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("validator", [{"a": {"$exists": True}}, {"$jsonSchema": {"required": ["a"]}}])
def test_bypass_document_validation(db, validator):
    c = db.bypass
    c.insert_many([{"_id": 1}, {"_id": 2}])
    db.command("collMod", "bypass", validator=validator)

    with pytest.raises(OperationFailure):
        db.command("findAndModify", "bypass", query={}, update={"$set": {"findAndModify": 1}},
                   bypassDocumentValidation=False)
    assert c.count_documents({"findAndModify": 1}) == 0
    db.command("findAndModify", "bypass", query={}, update={"$set": {"findAndModify": 1}},
               bypassDocumentValidation=True)
    assert c.count_documents({"findAndModify": 1}) == 1

    res = db.command("insert", "bypass", documents=[{}], bypassDocumentValidation=False)
    assert res["writeErrors"][0]["code"] == DOCUMENT_VALIDATION_FAILURE
    res = db.command("insert", "bypass", documents=[{}, {"_id": 6}], bypassDocumentValidation=False)
    assert res["n"] == 0 and res["writeErrors"][0]["code"] == DOCUMENT_VALIDATION_FAILURE
    res = db.command("insert", "bypass", documents=[{}, {"_id": 6}], bypassDocumentValidation=True)
    assert res["n"] == 2 and "writeErrors" not in res

    res = db.command("update", "bypass", updates=[{"q": {}, "u": {"$set": {"update": 1}}}],
                     bypassDocumentValidation=False)
    assert res["writeErrors"][0]["code"] == DOCUMENT_VALIDATION_FAILURE
    assert c.count_documents({"update": 1}) == 0
    db.command("update", "bypass", updates=[{"q": {}, "u": {"$set": {"update": 1}}}], bypassDocumentValidation=True)
    assert c.count_documents({"update": 1}) == 1

    res = db.command("update", "bypass", updates=[{"q": {}, "u": [{"$set": {"pipeline": 1}}]}],
                     bypassDocumentValidation=False)
    assert res["writeErrors"][0]["code"] == DOCUMENT_VALIDATION_FAILURE
    assert c.count_documents({"pipeline": 1}) == 0
    db.command("update", "bypass", updates=[{"q": {}, "u": [{"$set": {"pipeline": 1}}]}],
               bypassDocumentValidation=True)
    assert c.count_documents({"pipeline": 1}) == 1

    with pytest.raises(OperationFailure):
        db.command("findAndModify", "bypass", query={}, update=[{"$set": {"findAndModifyPipeline": 1}}],
                   bypassDocumentValidation=False)
    assert c.count_documents({"findAndModifyPipeline": 1}) == 0
    db.command("findAndModify", "bypass", query={}, update=[{"$set": {"findAndModifyPipeline": 1}}],
               bypassDocumentValidation=True)
    assert c.count_documents({"findAndModifyPipeline": 1}) == 1


@pytest.mark.parametrize("validator", [{"a": {"$exists": True}}, {"$jsonSchema": {"required": ["a"]}}])
def test_bypass_document_validation_out(db, validator):
    db.bypass.insert_many([{"_id": 1}, {"_id": 2}])
    create(db, "out", validator=validator)
    pipeline = [{"$match": {"_id": 1}}, {"$project": {"aggregation": {"$add": [1]}}}, {"$out": "out"}]
    fails_validation(lambda: db.command("aggregate", "bypass", pipeline=pipeline, cursor={},
                                        bypassDocumentValidation=False))
    assert db.out.count_documents({"aggregation": 1}) == 0
    db.command("aggregate", "bypass", pipeline=pipeline, cursor={}, bypassDocumentValidation=True)
    assert db.out.count_documents({"aggregation": 1}) == 1


@pytest.mark.parametrize("validator", [{"a": {"$exists": True}}, {"$jsonSchema": {"required": ["a"]}}])
def test_bypass_document_validation_map_reduce(db, validator):
    db.src.insert_one({"_id": 1})
    create(db, "out", validator=validator)
    cmd = {"mapReduce": "src", "map": Code("function() { emit(1, 1); }"),
           "reduce": Code("function() { return 'mapReduce'; }"), "out": {"replace": "out"}}
    with pytest.raises(OperationFailure) as info:
        db.command({**cmd, "bypassDocumentValidation": False})
    assert info.value.code == DOCUMENT_VALIDATION_FAILURE
    assert db.out.count_documents({"value": "mapReduce"}) == 0
    db.command({**cmd, "bypassDocumentValidation": True})
    assert db.out.count_documents({"value": 1}) == 1


# --------------------------------------------------------------------------------------------------
# doc_validation_error.js: the 121 error (the cases with inline validators; the schemastore.org ones
# read files of the mongo source tree)
# --------------------------------------------------------------------------------------------------

ERROR_CASES = {
    "node structure": (
        {"$jsonSchema": {"bsonType": "object", "required": ["_id"], "properties": {
            "parent": {"bsonType": ["string", "null"], "description": "must be a string"},
            "children": {"bsonType": ["array"], "items": {"bsonType": ["string"]}, "minItems": 0, "maxItems": 2,
                         "description": "must be an array of string and max is 2"}}}},
        {"_id": "Languages", "children": 2.0, "parent": "Programming"},
        {"operatorName": "$jsonSchema", "schemaRulesNotSatisfied": [{
            "operatorName": "properties", "propertiesNotSatisfied": [{
                "propertyName": "children", "description": "must be an array of string and max is 2",
                "details": [{"operatorName": "bsonType", "specifiedAs": {"bsonType": ["array"]},
                             "reason": "type did not match", "consideredValue": 2.0,
                             "consideredType": "double"}]}]}]},
    ),
    "array of enums": (
        {"$jsonSchema": {"properties": {"values": {"bsonType": "array", "items": {
            "bsonType": "string", "enum": ["one", "two", "three"]}, "minItems": 1, "uniqueItems": True}}}},
        {"values": ["two", "two"]},
        {"operatorName": "$jsonSchema", "schemaRulesNotSatisfied": [{
            "operatorName": "properties", "propertiesNotSatisfied": [{
                "propertyName": "values", "details": [{
                    "operatorName": "uniqueItems", "specifiedAs": {"uniqueItems": True},
                    "reason": "found a duplicate item", "consideredValue": ["two", "two"],
                    "duplicatedValue": "two"}]}]}]},
    ),
    "duplicate check in an array": (
        {"$expr": {"$eq": [{"$size": "$a.b"}, {"$size": {"$setUnion": "$a.b"}}]}},
        {"a": [{"b": 1}, {"b": 1}]},
        {"operatorName": "$expr",
         "specifiedAs": {"$expr": {"$eq": [{"$size": "$a.b"}, {"$size": {"$setUnion": "$a.b"}}]}},
         "reason": "expression did not match", "expressionResult": False},
    ),
    "contacts": (
        {"$or": [{"phone": {"$type": "string"}}, {"email": {"$regex": Regex("@mongodb\\.com$")}},
                 {"status": {"$in": ["Unknown", "Incomplete"]}}]},
        {"email": "info@mongodb.co"},
        {"operatorName": "$or", "clausesNotSatisfied": [
            {"index": 0, "details": {"operatorName": "$type", "specifiedAs": {"phone": {"$type": "string"}},
                                     "reason": "field was missing"}},
            {"index": 1, "details": {"operatorName": "$regex",
                                     "specifiedAs": {"email": {"$regex": Regex("@mongodb\\.com$")}},
                                     "reason": "regular expression did not match",
                                     "consideredValue": "info@mongodb.co"}},
            {"index": 2, "details": {"operatorName": "$in",
                                     "specifiedAs": {"status": {"$in": ["Unknown", "Incomplete"]}},
                                     "reason": "field was missing"}}]},
    ),
    "contacts 2": (
        {"$jsonSchema": {"bsonType": "object", "required": ["phone"], "properties": {
            "phone": {"bsonType": "string", "description": "must be a string and is required"},
            "email": {"bsonType": "string", "pattern": "@mongodb\\.com$",
                      "description": "must be a string and match the regular expression pattern"},
            "status": {"enum": ["Unknown", "Incomplete"], "description": "can only be one of the enum values"}}}},
        {"email": "info@mongodb.com", "status": "Complete"},
        {"operatorName": "$jsonSchema", "schemaRulesNotSatisfied": [
            {"operatorName": "properties", "propertiesNotSatisfied": [{
                "propertyName": "status", "description": "can only be one of the enum values",
                "details": [{"operatorName": "enum", "specifiedAs": {"enum": ["Unknown", "Incomplete"]},
                             "reason": "value was not found in enum", "consideredValue": "Complete"}]}]},
            {"operatorName": "required", "specifiedAs": {"required": ["phone"]}, "missingProperties": ["phone"]}]},
    ),
    "equality": (  # doc_validation_options.js's logged errInfo
        {"a": 1},
        {"_id": 1, "a": 2.0},
        {"operatorName": "$eq", "specifiedAs": {"a": 1}, "reason": "comparison failed", "consideredValue": 2.0},
    ),
}


def _validation_error(db, validator, doc) -> dict:
    create(db, "c", validator=validator)
    with pytest.raises(WriteError) as info:
        db.c.insert_one(copy.deepcopy(doc))  # the driver would add _id to the table's document
    assert info.value.code == DOCUMENT_VALIDATION_FAILURE
    assert info.value.details["errmsg"] == "Document failed validation"
    return info.value.details["errInfo"]


@pytest.mark.parametrize("name", list(ERROR_CASES))
def test_validation_error_shape(db, name):
    validator, doc, expected = ERROR_CASES[name]
    err_info = _validation_error(db, validator, doc)
    if "_id" in doc:  # else the driver added an ObjectId
        assert err_info["failingDocumentId"] == doc["_id"]
    else:
        assert isinstance(err_info["failingDocumentId"], ObjectId)
    assert err_info["details"]["operatorName"] == expected["operatorName"]


@pytest.mark.parametrize("name", list(ERROR_CASES))
def test_validation_error_details(db, name):
    validator, doc, expected = ERROR_CASES[name]
    assert _validation_error(db, validator, doc)["details"] == expected


@pytest.mark.parametrize("validator, operator", [
    ({"a": {"$exists": True}}, "$exists"),
    ({"a": {"$regex": "x", "$options": "i"}}, "$regex"),
    ({"a": Regex("x")}, "$regex"),
    ({"a": {"$gt": 1, "$lt": 5}}, "$and"),
    ({"a": 1, "b": 1}, "$and"),
    ({"$nor": [{"a": {"$exists": False}}]}, "$nor"),
])
def test_validation_error_operator_name(db, validator, operator):
    assert _validation_error(db, validator, {"b": 7.0})["details"]["operatorName"] == operator


# --------------------------------------------------------------------------------------------------
# Hypothesis: $jsonSchema against a reference model of its per-type keywords, and the jstests'
# invariants (find == $match == the validator's verdict; a top-level 'not' is the complement)
# --------------------------------------------------------------------------------------------------

_scalars = st.one_of(
    st.integers(-5, 5), st.floats(-5, 5, allow_nan=False).map(lambda f: round(f, 1)), st.text("ab", max_size=3),
    st.booleans(), st.none(), st.builds(Int64, st.integers(-5, 5)),
)
_values = st.one_of(_scalars, st.lists(_scalars, max_size=3), st.dictionaries(st.sampled_from("xy"), _scalars,
                                                                                max_size=2))
_TYPE_NAMES = {"number": None, "string": str, "bool": bool, "null": type(None), "array": list, "object": dict,
               "long": Int64, "double": float, "int": int}
_subschemas = st.fixed_dictionaries({}, optional={
    "bsonType": st.sampled_from(sorted(_TYPE_NAMES)),
    "minimum": st.integers(-3, 3), "maximum": st.integers(-3, 3), "exclusiveMaximum": st.booleans(),
    "minLength": st.integers(0, 3), "maxLength": st.integers(0, 3),
    "minItems": st.integers(0, 3), "maxItems": st.integers(0, 3), "uniqueItems": st.booleans(),
    "minProperties": st.integers(0, 2), "required": st.just(["x"]),
    "enum": st.lists(st.one_of(st.integers(-2, 2), st.text("ab", max_size=2)), min_size=1, max_size=3,
                     unique_by=lambda v: (type(v), v)),
    "multipleOf": st.integers(1, 3),
}).map(lambda s: s if "exclusiveMaximum" not in s or "maximum" in s else {**s, "maximum": 0})


def _is_num(v) -> bool:
    return isinstance(v, int | float | Int64) and not isinstance(v, bool)


def _type_ok(v, name: str) -> bool:
    if name == "number":
        return _is_num(v)
    if name == "int":
        return type(v) is int
    if name == "bool":
        return isinstance(v, bool)
    return type(v) is _TYPE_NAMES[name]


def _model(schema: dict, v) -> bool:
    """What MongoDB's $jsonSchema answers for the value of a property that is present."""
    if "bsonType" in schema and not _type_ok(v, schema["bsonType"]):
        return False
    if _is_num(v):
        if "minimum" in schema and v < schema["minimum"]:
            return False
        if "maximum" in schema and (v >= schema["maximum"] if schema.get("exclusiveMaximum") else
                                    v > schema["maximum"]):
            return False
        if "multipleOf" in schema and v % schema["multipleOf"] != 0:
            return False
    if isinstance(v, str) and not schema.get("minLength", 0) <= len(v) <= schema.get("maxLength", 99):
        return False
    if isinstance(v, list):
        if not schema.get("minItems", 0) <= len(v) <= schema.get("maxItems", 99):
            return False
        keys = [("n", float(x)) if _is_num(x) else (type(x).__name__, x) for x in v]
        if schema.get("uniqueItems") and len(set(keys)) != len(keys):
            return False
    if isinstance(v, dict):
        if len(v) < schema.get("minProperties", 0) or ("required" in schema and "x" not in v):
            return False
    if "enum" in schema:
        return any((_is_num(v) and _is_num(m) and v == m) or (type(v) is str and v == m) for m in schema["enum"])
    return True


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(subschema=_subschemas, values=st.lists(_values, min_size=1, max_size=6))
def test_json_schema_matches_reference_model(db, subschema, values):
    db.c.drop()
    db.c.insert_many([{"_id": i, "a": copy.deepcopy(v)} for i, v in enumerate(values)] + [{"_id": -1}])
    schema = {"properties": {"a": subschema}}
    found = sorted(d["_id"] for d in db.c.find({"$jsonSchema": schema}, {"_id": 1}))
    expected = sorted([-1] + [i for i, v in enumerate(values) if _model(subschema, v)])
    assert found == expected
    complement = sorted(d["_id"] for d in db.c.find({"$jsonSchema": {"not": schema}}, {"_id": 1}))
    assert sorted(found + complement) == sorted([-1, *range(len(values))])
    assert not set(found) & set(complement)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(subschema=_subschemas, values=st.lists(_values, min_size=1, max_size=4))
def test_json_schema_validator_agrees_with_find(db, subschema, values):
    # assert_schema_match.js: a document passes the validator iff find and $match return it
    schema = {"properties": {"a": subschema}, "required": ["a"]}
    db.c.drop()
    docs = [{"_id": i, "a": copy.deepcopy(v)} for i, v in enumerate(values)]
    db.c.insert_many(docs)
    found = {d["_id"] for d in db.c.find({"$jsonSchema": schema})}
    assert found == {d["_id"] for d in db.c.aggregate([{"$match": {"$jsonSchema": schema}}])}
    db.v.drop()
    create(db, "v", validator={"$jsonSchema": schema})
    accepted = set()
    for doc in docs:
        try:
            db.v.insert_one(doc)
            accepted.add(doc["_id"])
        except WriteError as e:
            assert e.code == DOCUMENT_VALIDATION_FAILURE
    assert accepted == found


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc=st.dictionaries(st.sampled_from(["x", "y", "z"]), _scalars, max_size=3), perm=st.randoms())
def test_enum_and_unique_items_ignore_field_order(db, doc, perm):
    # logical_keywords.js / unique_items.js: embedded documents compare ignoring field order
    items = list(doc.items())
    perm.shuffle(items)
    shuffled = dict(items)
    db.c.drop()
    db.c.insert_one({"_id": 0, "a": shuffled, "b": [doc, shuffled]})
    assert len(list(db.c.find({"$jsonSchema": {"properties": {"a": {"enum": [doc]}}}}))) == 1
    assert len(list(db.c.find({"$jsonSchema": {"properties": {"b": {"uniqueItems": True}}}}))) == 0


def test_json_schema_in_apply_ops_precondition(db, client):
    """The jstest's applyOps preCondition holding a $jsonSchema: since 6.2 mongod refuses preCondition
    itself (6711600, apply_ops1.js) and applies nothing, whatever it holds."""
    db.c.insert_one({"_id": 0, "a": True})
    with pytest.raises(OperationFailure) as info:
        client.admin.command("applyOps", [{"op": "u", "ns": f"{db.name}.c", "o2": {"_id": 0},
                                           "o": {"_id": 0, "a": False}}],
                             preCondition=[{"ns": f"{db.name}.c",
                                            "q": {"$jsonSchema": {"properties": {"a": {"type": "boolean"}}}},
                                            "res": {"a": True}}])
    assert info.value.code == 6711600
    assert info.value.details["errmsg"] == "applyOps command no longer supports the 'preCondition' option"
    assert db.c.find_one()["a"] is True


@pytest.mark.parametrize("validator", [{"a": {"$exists": True}}, {"$jsonSchema": {"required": ["a"]}}])
def test_bypass_document_validation_apply_ops(db, validator):
    db.bypass.insert_one({"_id": 1})
    db.command("collMod", "bypass", validator=validator)
    op = [{"op": "i", "ns": f"{db.name}.bypass", "o": {"_id": 9}}]
    with pytest.raises(OperationFailure):
        db.command("applyOps", op, bypassDocumentValidation=False)
    assert db.bypass.count_documents({"_id": 9}) == 0
    db.command("applyOps", op, bypassDocumentValidation=True)
    assert db.bypass.count_documents({"_id": 9}) == 1


DUPLICATE_KEYWORD_ACCEPTED = ("a $jsonSchema naming a keyword twice (raw BSON) is accepted, the last value winning "
                              "when the command is decoded; MongoDB fails with 9 'Duplicate $jsonSchema keyword: "
                              "type'")


@pytest.mark.xfail(strict=True, reason=DUPLICATE_KEYWORD_ACCEPTED)
def test_duplicate_keyword_fails_to_parse(db):
    class Pairs(dict):  # a document with repeated field names, as raw BSON lets a client send
        def __init__(self, pairs):
            super().__init__()
            self.pairs = pairs

        def items(self):
            return self.pairs

    filter_ = raw({"$jsonSchema": Pairs([("type", "object"), ("type", "object")])})
    with pytest.raises(OperationFailure) as info:
        db.command("find", "c", filter=filter_)
    assert info.value.code == FAILED_TO_PARSE
