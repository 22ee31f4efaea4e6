"""Unit tests of collection-validator parsing (``tidemark.core.collection.parse_validator``,
``check_validator_namespace``, ``bypasses_validation``) and of the encryption-keyword switch of
``tidemark.query.jsonschema``: mongod's allowed-features mask of validator MatchExpressions."""

from __future__ import annotations

import uuid

import pytest
from bson.decimal128 import Decimal128
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.core import collection as C
from tidemark.protocol.errors import MongoError
from tidemark.query import interrupt
from tidemark.query.jsonschema import compile_schema, encrypt_keywords_refused


def _code(fn) -> int:
    with pytest.raises(MongoError) as info:
        fn()
    return info.value.code


# one refused feature, with mongod's code, in each place the parser meets it
BANNED = [
    ({"$where": "true"}, 2),
    ({"$text": {"$search": "x"}}, 2),
    ({"f": {"$near": [0, 0]}}, 2),
    ({"f": {"$geoNear": [0, 0]}}, 2),
    ({"f": {"$not": {"$nearSphere": [0, 0]}}}, 2),
    ({"f": {"$elemMatch": {"g": {"$near": [0, 0]}}}}, 2),
    ({"f": {"$elemMatch": {"$where": "true"}}}, 2),
    ({"$expr": {"$eq": ["$a", "$$nope"]}}, 17276),
    ({"$expr": {"$and": [True, {"$function": {"body": "function() {}", "args": [], "lang": "js"}}]}}, 4660800),
    ({"$expr": {"$_internalJsEmit": {"eval": "function() {}", "this": {}}}}, 4660801),
    ({"$expr": {"$gt": [{"$rand": {}}, 0]}}, 3040500),
]
LEAVES = [{"a": 1}, {"b": {"$gt": 2}}, {"$expr": {"$eq": ["$a", "$$NOW"]}}, {"d": {"$elemMatch": {"e": 1}}},
          {"$jsonSchema": {"required": ["a"]}}, {"$expr": {"$literal": {"$rand": {}}}},
          {"$expr": {"$let": {"vars": {"v": 1}, "in": "$$v"}}}]


@st.composite
def trees(draw, banned):
    clauses = draw(st.lists(st.sampled_from(LEAVES), min_size=1, max_size=4))
    if banned is not None:
        clauses.insert(draw(st.integers(0, len(clauses))), banned)
    for _ in range(draw(st.integers(0, 3))):
        clauses = [{draw(st.sampled_from(["$and", "$or", "$nor"])): clauses}]
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_refused_feature_found_anywhere(data):
    banned, code = data.draw(st.sampled_from(BANNED))
    assert _code(lambda: C.parse_validator(data.draw(trees(banned)), level=None, action=None)) == code


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_allowed_validators_parse(data):
    C.parse_validator(data.draw(trees(None)), level=None, action=None)


def test_empty_validator_is_no_validator():
    C.parse_validator({}, level="moderate", action="warn")
    C.parse_validator(None, level=None, action=None)


ENCRYPT = {"$jsonSchema": {"properties": {"s": {"type": "object", "properties": {"x": {"encrypt": {}}}}}}}
ENCRYPT_METADATA = {"$jsonSchema": {"encryptMetadata": {"algorithm": "AEAD_AES_256_CBC_HMAC_SHA_512-Random"}}}


@pytest.mark.parametrize("validator", [ENCRYPT, ENCRYPT_METADATA, {"$or": [{"a": 1}, ENCRYPT]}])
@pytest.mark.parametrize("level, action, refused", [
    (None, None, False), ("strict", "error", False), ("moderate", None, True), (None, "warn", True),
    ("off", "warn", True), ("moderate", "error", True),
])
def test_encrypt_keywords_follow_level_and_action(validator, level, action, refused):
    if refused:
        assert _code(lambda: C.parse_validator(validator, level=level, action=action)) == 224
    else:
        C.parse_validator(validator, level=level, action=action)


def test_encrypt_switch_is_scoped():
    schema = {"properties": {"a": {"encrypt": {}}}}
    with encrypt_keywords_refused():
        assert _code(lambda: compile_schema(schema)) == 224
        with encrypt_keywords_refused(False):
            compile_schema(schema)
    compile_schema(schema)  # queries keep the keywords


@pytest.mark.parametrize("ns, refused", [
    ("admin.c", True), ("local.c", True), ("config.c", True), ("test.system.js", True),
    ("admin.system.buckets.c", False), ("test.c", False), ("administrator.c", False), ("test.systemx", False),
])
def test_validator_namespaces(ns, refused):
    uid = uuid.uuid4()
    if refused:
        with pytest.raises(MongoError) as info:
            C.check_validator_namespace(ns, {"a": 1}, uid)
        assert info.value.code == 72 and f"{ns} with UUID {uid}" in info.value.message
    else:
        C.check_validator_namespace(ns, {"a": 1}, uid)
    C.check_validator_namespace(ns, {}, uid)  # no validator: nothing to refuse


class _Op:
    def __init__(self, command):
        self.command = command
        self.ticks = 1 << 30

    def check(self) -> None:
        pass


@pytest.mark.parametrize("flag, expected", [
    (None, False), (True, True), (False, False), (0, False), (5, True), (0.0, False), ("false", True),
    (Decimal128("0"), False), (Decimal128("1"), True), ({}, True),
])
def test_bypass_flag_is_bson_truth(flag, expected):
    command = {"aggregate": "c"} if flag is None else {"aggregate": "c", "bypassDocumentValidation": flag}
    assert interrupt.running(_Op(command), C.bypasses_validation) is expected  # type: ignore[arg-type]
    assert C.bypasses_validation() is False  # no operation bound


@pytest.mark.parametrize("spec", [7, "assert", [1]])
def test_non_document_validator_keeps_the_filter_type_error(spec):
    with pytest.raises(MongoError):
        C.parse_validator(spec, level=None, action=None)
