"""$jsonSchema keywords (MongoDB's draft-4 subset): table of (schema, document, valid?) and parse errors."""

import pytest
from bson.decimal128 import Decimal128
from bson.int64 import Int64

from tidemark.protocol.errors import MongoError
from tidemark.query.jsonschema import compile_schema, validate

CASES = [
    ({"bsonType": "object"}, {"a": 1}, True),
    ({"required": ["a", "b"]}, {"a": 1}, False),
    ({"required": ["a"]}, {"a": None}, True),
    ({"properties": {"a": {"bsonType": "string"}}}, {"a": 1}, False),
    ({"properties": {"a": {"bsonType": "string"}}}, {}, True),  # absent is fine unless required
    ({"properties": {"a": {"bsonType": ["int", "long"]}}}, {"a": Int64(5)}, True),
    ({"properties": {"a": {"bsonType": "number"}}}, {"a": Decimal128("1")}, True),
    ({"properties": {"a": {"bsonType": "number"}}}, {"a": True}, False),
    ({"properties": {"a": {"type": "number"}}}, {"a": 1.5}, True),
    ({"properties": {"a": {"type": ["string", "null"]}}}, {"a": None}, True),
    ({"properties": {"a": {"type": "boolean"}}}, {"a": 0}, False),
    ({"properties": {"a": {"minimum": 5}}}, {"a": 5}, True),
    ({"properties": {"a": {"minimum": 5, "exclusiveMinimum": True}}}, {"a": 5}, False),
    ({"properties": {"a": {"maximum": 5}}}, {"a": 6}, False),
    ({"properties": {"a": {"maximum": 5}}}, {"a": "zzz"}, True),  # keywords only constrain their types
    ({"properties": {"s": {"minLength": 2, "maxLength": 3}}}, {"s": "abcd"}, False),
    ({"properties": {"s": {"minLength": 2, "maxLength": 3}}}, {"s": "ab"}, True),
    ({"properties": {"s": {"pattern": "^a+$"}}}, {"s": "aaa"}, True),
    ({"properties": {"s": {"pattern": "^a+$"}}}, {"s": "ab"}, False),
    ({"properties": {"e": {"enum": [1, "x", [1]]}}}, {"e": 1.0}, True),
    ({"properties": {"e": {"enum": [1, "x"]}}}, {"e": "y"}, False),
    ({"properties": {"l": {"items": {"bsonType": "int"}}}}, {"l": [1, 2, "x"]}, False),
    (
        {"properties": {"l": {"items": [{"bsonType": "int"}, {"bsonType": "string"}]}}},
        {"l": [1, "x", None]},
        True,
    ),
    ({"properties": {"l": {"items": [{"bsonType": "int"}], "additionalItems": False}}}, {"l": [1, 2]}, False),
    ({"properties": {"l": {"minItems": 1, "maxItems": 2}}}, {"l": []}, False),
    ({"properties": {"l": {"uniqueItems": True}}}, {"l": [1, 1.0]}, False),
    ({"properties": {"l": {"uniqueItems": True}}}, {"l": [1, "1"]}, True),
    ({"additionalProperties": False, "properties": {"_id": {}, "a": {}}}, {"_id": 1, "a": 1}, True),
    ({"additionalProperties": False, "properties": {"a": {}}}, {"a": 1, "b": 2}, False),
    ({"additionalProperties": {"bsonType": "int"}, "properties": {"a": {}}}, {"a": "s", "b": 2}, True),
    ({"patternProperties": {"^x": {"bsonType": "int"}}}, {"xa": "s"}, False),
    ({"minProperties": 2}, {"a": 1}, False),
    ({"maxProperties": 1}, {"a": 1}, True),
    ({"allOf": [{"required": ["a"]}, {"required": ["b"]}]}, {"a": 1}, False),
    ({"anyOf": [{"required": ["a"]}, {"required": ["b"]}]}, {"b": 1}, True),
    ({"oneOf": [{"required": ["a"]}, {"required": ["b"]}]}, {"a": 1, "b": 1}, False),
    ({"not": {"required": ["a"]}}, {"b": 1}, True),
    ({"dependencies": {"a": ["b"]}}, {"a": 1}, False),
    (
        {"properties": {"o": {"properties": {"p": {"bsonType": "int"}}, "required": ["p"]}}},
        {"o": {"q": 1}},
        False,
    ),
    ({"description": "ignored", "title": "t", "properties": {"a": {"description": "x"}}}, {"a": 1}, True),
]


@pytest.mark.parametrize("schema,doc,expected", CASES, ids=[str(i) for i in range(len(CASES))])
def test_json_schema_keywords(schema, doc, expected):
    assert validate(compile_schema(schema), doc) is expected


@pytest.mark.parametrize(
    "schema,code,message",
    [
        ({"foo": 1}, 9, "Unknown $jsonSchema keyword: foo"),  # FailedToParse, as mongod's json_schema_parser
        ({"properties": {"a": {"bar": 1}}}, 9, "Unknown $jsonSchema keyword: bar"),
        ({"bsonType": "nope"}, 2, "Unknown type name alias: nope"),
        ({"type": "integer"}, 9, "not currently supported"),
        ({"required": "a"}, 14, "'required' must be an array"),
        ({"required": []}, 9, "cannot be an empty array"),
        ({"type": "string", "bsonType": "string"}, 9, "Cannot specify both"),
        ({"minLength": -1}, 9, "Expected a positive number in: minLength: -1"),
        ({"enum": []}, 9, "cannot be an empty array"),
    ],
)
def test_invalid_schemas(schema, code, message):
    with pytest.raises(MongoError) as info:
        compile_schema(schema)
    assert info.value.code == code
    assert message in info.value.message
