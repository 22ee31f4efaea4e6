"""``$jsonSchema`` (``tidemark.query.jsonschema``) as mongod 7.0's JSON Schema parser: error codes and
messages of malformed schemas, ``multipleOf``, ``encrypt``, field-order-blind ``enum``/``uniqueItems``;
and the collection validator's 121 ``operatorName`` (``tidemark.core.collection.Validator``)."""

from __future__ import annotations

from fractions import Fraction

import pytest
from bson import Decimal128, Int64, Regex
from bson.binary import Binary
from hypothesis import given
from hypothesis import strategies as st

from tidemark.core.collection import Validator
from tidemark.protocol.errors import MongoError
from tidemark.query.jsonschema import compile_schema, unordered_key, validate


def _error(schema) -> MongoError:
    with pytest.raises(MongoError) as info:
        compile_schema(schema)
    return info.value


@pytest.mark.parametrize("schema, code, message", [
    ({"properties": {"a": "x"}}, 14, "Nested schema for $jsonSchema property 'a' must be an object"),
    ({"$ref": "#"}, 9, "$jsonSchema keyword '$ref' is not currently supported"),
    ({"description": 3}, 14, "$jsonSchema keyword 'description' must be of type string"),
    ({"maxLength": "0"}, 9, 'Expected a number in: maxLength: "0"'),
    ({"maxLength": 1.5}, 9, "Expected an integer: maxLength: 1.5"),
    ({"maxLength": float("inf")}, 9, "Cannot represent as a 64-bit integer: maxLength: inf"),
    ({"maxLength": Decimal128("1E+30")}, 9, None),
    ({"bsonType": "integer"}, 9, "$jsonSchema type 'integer' is not currently supported."),
    ({"type": ["string", "number", "string"]}, 9, "$jsonSchema keyword 'type' has duplicate value: string"),
    ({"type": ["string", 1]}, 14, "$jsonSchema keyword 'type' array elements must be strings"),
    ({"type": []}, 9, "$jsonSchema keyword 'type' must name at least one type"),
    ({"type": ["zzz", "aaa"]}, 2, "Unknown type name alias: aaa"),
    ({"allOf": []}, 2, "$jsonSchema keyword 'allOf' must be a non-empty array"),
    ({"oneOf": ["x"]}, 14, "$jsonSchema keyword 'oneOf' must be an array of objects, but found an element of type string"),
    ({"enum": [{"a": 1, "b": 2}, {"b": 2, "a": 1.0}]}, 9, "$jsonSchema keyword 'enum' array cannot contain duplicate values."),
    ({"required": ["a", "a"]}, 9, "$jsonSchema keyword 'required' array cannot contain duplicate values"),
    ({"items": "x"}, 14, "$jsonSchema keyword 'items' must be an array or an object, not string"),
    ({"items": [1]}, 14, "$jsonSchema keyword 'items' requires that each element of the array is an object, but found a int"),
    ({"additionalItems": "x"}, 14,
     "$jsonSchema keyword 'additionalItems' must be either an object or a boolean, but got a string"),
    ({"multipleOf": 0}, 9, "$jsonSchema keyword 'multipleOf' must have a positive value"),
    ({"multipleOf": Decimal128("-0")}, 9, None),
    ({"exclusiveMinimum": True}, 9, "$jsonSchema keyword 'minimum' must be a present if exclusiveMinimum is present"),
    ({"encrypt": {}, "bsonType": "binData"}, 9, None),
    ({"encrypt": []}, 14, "$jsonSchema keyword 'encrypt' must be an object "),
    ({"encrypt": {"foo": 1}}, 40415, "BSON field 'encrypt.foo' is an unknown field."),
    ({"encrypt": {"algorithm": "rot13"}}, 2, None),
    ({"encryptMetadata": {}}, 9, "$jsonSchema keyword 'encryptMetadata' cannot be an empty object "),
    ({"dependencies": {"a": ["b", 1]}}, 14, None),
])
def test_parse_errors(schema, code, message):
    err = _error(schema)
    assert err.code == code
    if message is not None:
        assert err.message == message


def test_first_fault_in_mongods_order():
    # keyword names first, then description/title, then the type keywords, then the rest
    assert _error({"minLength": -1, "foo": 1}).message == "Unknown $jsonSchema keyword: foo"
    assert _error({"title": 1, "type": "nope"}).code == 14
    assert _error({"enum": [], "pattern": 1}).message == "$jsonSchema keyword 'pattern' must be a string"


def test_top_level_pattern_is_not_compiled():
    # mongod turns a top-level 'pattern' into always-true before compiling it
    assert validate(compile_schema({"pattern": "("}), {"a": "("})
    with pytest.raises(MongoError):
        compile_schema({"properties": {"a": {"pattern": "("}}})


@pytest.mark.parametrize("divisor, value, expected", [
    (2, 4, True), (2, 3, False), (2, Int64(-6), True), (0.1, 0.3, True), (0.1, 0.1 + 0.2, True),
    (Decimal128("0.5"), 1.5, True), (3, float("nan"), False), (3, float("inf"), False), (2, "4", True),
    (2, Decimal128("1E+40"), True), (3, Decimal128("1E+40"), False),
])
def test_multiple_of(divisor, value, expected):
    assert validate(compile_schema({"properties": {"a": {"multipleOf": divisor}}}), {"a": value}) is expected


@given(st.integers(1, 50), st.integers(-10**6, 10**6))
def test_multiple_of_integers_is_exact(divisor, value):
    compiled = compile_schema({"properties": {"a": {"multipleOf": divisor}}})
    assert validate(compiled, {"a": value}) is (Fraction(value, divisor).denominator == 1)


def test_encrypt_matches_bindata_subtype_6_and_its_original_type():
    schema = compile_schema({"properties": {"a": {"encrypt": {}}}})
    assert validate(schema, {"a": Binary(b"x", 6)})
    assert not validate(schema, {"a": Binary(b"x", 0)})
    assert not validate(schema, {"a": [Binary(b"x", 6)]})
    typed = compile_schema({"properties": {"a": {"encrypt": {"bsonType": "string"}}}})
    assert validate(typed, {"a": Binary(bytes([1]) + bytes(16) + bytes([2]) + b"cipher", 6)})
    assert not validate(typed, {"a": Binary(bytes([1]) + bytes(16) + bytes([16]) + b"cipher", 6)})


_leaf = st.one_of(st.integers(-3, 3), st.text("ab", max_size=2), st.none(), st.booleans())


@given(st.dictionaries(st.text("xyz", min_size=1, max_size=2), _leaf, max_size=4), st.randoms())
def test_unordered_key_ignores_field_order(doc, rnd):
    items = list(doc.items())
    rnd.shuffle(items)
    assert unordered_key(doc) == unordered_key(dict(items))
    assert unordered_key({"d": doc}) == unordered_key({"d": dict(items)})


def test_unordered_key_is_bson_equality():
    assert unordered_key(1) == unordered_key(1.0) == unordered_key(Int64(1)) == unordered_key(Decimal128("1"))
    assert unordered_key([1, 2]) != unordered_key([2, 1])
    assert unordered_key(True) != unordered_key(1)


@pytest.mark.parametrize("spec, operator", [
    ({"a": 1}, "$eq"), ({"a": {"$exists": True}}, "$exists"), ({"a": {"$regex": "x", "$options": "i"}}, "$regex"),
    ({"a": Regex("x")}, "$regex"), ({"a": {"$gt": 1, "$lt": 3}}, "$and"), ({"a": 1, "b": 2}, "$and"),
    ({"$or": [{"a": 1}, {"b": 1}]}, "$or"), ({"$jsonSchema": {"required": ["a"]}}, "$jsonSchema"),
])
def test_validator_operator_name(spec, operator):
    with pytest.raises(MongoError) as info:
        Validator({"validator": spec}).check({"_id": 1, "c": 0.5})
    assert info.value.code == 121
    details = info.value.extra["errInfo"]["details"]
    assert details["operatorName"] == operator
    assert ("schemaRulesNotSatisfied" in details) is (operator == "$jsonSchema")


def test_validator_follows_the_collection_collation():
    spec = {"validator": {"a": "xyz"}, "collation": {"locale": "en_US", "strength": 2}}
    Validator(spec).check({"_id": 1, "a": "XYZ"})
    with pytest.raises(MongoError):
        Validator({"validator": {"a": "xyz"}}).check({"_id": 1, "a": "XYZ"})
    with pytest.raises(MongoError):  # $jsonSchema ignores collations
        Validator({**spec, "validator": {"$jsonSchema": {"properties": {"a": {"enum": ["xyz"]}}}}}).check(
            {"_id": 1, "a": "XYZ"})
