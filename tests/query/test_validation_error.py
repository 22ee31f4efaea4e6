"""validation_error_info (mongod's doc_validation_error) as a pure function: the families — details exist
exactly when a document fails and every rule or clause they name really fails — and the limits (considered
values, size, depth) and evaluation failures of doc_validation_error_test.cpp."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tidemark.query.jsonschema import compile_schema
from tidemark.query.match import compile_filter
from tidemark.query.validation_error import MAX_ERROR_DEPTH, validation_error_info

# --------------------------------------------------------------------------------------------------
# $jsonSchema: every named rule fails on its own
# --------------------------------------------------------------------------------------------------

_scalars = st.one_of(st.integers(-4, 4), st.floats(-4, 4, allow_nan=False).map(lambda f: round(f, 1)),
                     st.text("ab", max_size=3), st.booleans(), st.none())
_values = st.one_of(_scalars, st.lists(_scalars, max_size=3),
                    st.dictionaries(st.sampled_from("xy"), _scalars, max_size=2))
_leaf_schemas = st.fixed_dictionaries({}, optional={
    "bsonType": st.sampled_from(["number", "string", "bool", "null", "array", "object", "int", "double",
                                 ["string", "int"]]),
    "minimum": st.integers(-3, 3), "maximum": st.integers(-3, 3), "exclusiveMinimum": st.booleans(),
    "minLength": st.integers(0, 3), "maxLength": st.integers(0, 3), "pattern": st.sampled_from(["^a", "b$"]),
    "minItems": st.integers(0, 3), "maxItems": st.integers(0, 3), "uniqueItems": st.booleans(),
    "minProperties": st.integers(0, 2), "maxProperties": st.integers(0, 2),
    "required": st.lists(st.sampled_from("xy"), min_size=1, max_size=2, unique=True),
    "enum": st.lists(st.one_of(st.integers(-2, 2), st.text("ab", max_size=2)), min_size=1, max_size=3,
                     unique_by=lambda v: (type(v), v)),
    "multipleOf": st.integers(1, 3),
    "items": st.fixed_dictionaries({}, optional={"bsonType": st.sampled_from(["int", "string"]),
                                                 "minimum": st.integers(-2, 2)}),
    "additionalProperties": st.booleans(),
    "not": st.fixed_dictionaries({"bsonType": st.sampled_from(["int", "string"])}),
}).map(lambda s: s if "exclusiveMinimum" not in s or "minimum" in s else {**s, "minimum": 0})
_schemas = st.fixed_dictionaries({"properties": st.dictionaries(st.sampled_from("abc"), _leaf_schemas, max_size=3)},
                                 optional={"required": st.lists(st.sampled_from("abc"), min_size=1, max_size=2,
                                                                unique=True),
                                           "minProperties": st.integers(0, 3),
                                           "anyOf": st.lists(_leaf_schemas, min_size=1, max_size=2),
                                           "oneOf": st.lists(_leaf_schemas, min_size=1, max_size=2)})
_docs = st.dictionaries(st.sampled_from("abc"), _values, max_size=3)

# the keywords a rule's check reads besides its own
_COMPANIONS = {"minimum": ("exclusiveMinimum",), "maximum": ("exclusiveMaximum",),
               "additionalProperties": ("properties", "patternProperties"), "additionalItems": ("items",)}


def _fails_alone(schema: dict, keyword: str, value, nested: bool) -> bool:
    sub = {k: schema[k] for k in (keyword, *_COMPANIONS.get(keyword, ())) if k in schema}
    if nested:  # (a top-level schema is about the document: test a nested value as a property's)
        return not compile_schema({"properties": {"v": sub}})({"v": value})
    return not compile_schema(sub)(value)


def _check_rules(schema: dict, value, entries: list, nested: bool) -> None:
    assert entries, (schema, value)
    for e in entries:
        name = e["operatorName"]
        assert name in schema, (name, schema)
        assert _fails_alone(schema, name, value, nested), (name, schema, value)
        if "consideredValue" in e and name not in ("enum",):
            assert e["consideredValue"] == value
        if name == "properties":
            for p in e["propertiesNotSatisfied"]:
                sub = schema["properties"][p["propertyName"]]
                assert not compile_schema({"properties": {"v": sub}})({"v": value[p["propertyName"]]})
                _check_rules(sub, value[p["propertyName"]], p["details"], True)
        if name == "required":
            assert e["missingProperties"] == sorted(k for k in schema["required"] if k not in value)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_schemas, _docs)
def test_schema_details_exactly_when_invalid_and_each_named_rule_fails(schema, doc):
    validator = {"$jsonSchema": schema}
    if compile_filter(validator)(doc):
        return  # (details are generated only for a refused document)
    info = validation_error_info(validator, doc)
    assert info["failingDocumentId"] is None
    details = info["details"]
    assert details["operatorName"] == "$jsonSchema"
    _check_rules(schema, doc, details["schemaRulesNotSatisfied"], False)


# --------------------------------------------------------------------------------------------------
# query operators: the named clauses decided the result
# --------------------------------------------------------------------------------------------------

_clauses = st.one_of(
    st.builds(lambda p, op, v: {p: {op: v}}, st.sampled_from("ab"),
              st.sampled_from(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"]), st.integers(-2, 2)),
    st.builds(lambda p, vs: {p: {"$in": vs}}, st.sampled_from("ab"), st.lists(st.integers(-2, 2), max_size=2)),
    st.builds(lambda p, vs: {p: {"$nin": vs}}, st.sampled_from("ab"), st.lists(st.integers(-2, 2), max_size=2)),
    st.builds(lambda p, b: {p: {"$exists": b}}, st.sampled_from("ab"), st.booleans()),
    st.builds(lambda p, t: {p: {"$type": t}}, st.sampled_from("ab"), st.sampled_from(["int", "string", "array"])),
    st.builds(lambda p, v: {p: {"$not": {"$gt": v}}}, st.sampled_from("ab"), st.integers(-2, 2)),
)
_filters = st.recursive(_clauses, lambda inner: st.builds(
    lambda op, fs: {op: fs}, st.sampled_from(["$and", "$or", "$nor"]), st.lists(inner, min_size=1, max_size=3)),
    max_leaves=6)
_qdocs = st.dictionaries(st.sampled_from("ab"), st.one_of(st.integers(-2, 2), st.text("x", max_size=1),
                                                          st.lists(st.integers(-2, 2), max_size=2)), max_size=2)


_NORMAL_REASONS = {"comparison failed", "no matching value found in array", "path does not exist",
                   "type did not match", "field was missing"}
_INVERTED_REASONS = {"comparison succeeded", "matching value found in array", "path does exist", "type did match"}


def _check_clauses(flt: dict, doc: dict, details: dict, inverted: bool) -> None:
    """``details`` explain ``flt`` in its context: a clause named as failing fails (``inverted``: one
    named as satisfied matches), the operators' names and specifications are the validator's."""
    (key, arg), = flt.items()
    if key in ("$and", "$or", "$nor"):
        assert details["operatorName"] == key
        child_inverted = inverted != (key == "$nor")
        for e in details["clausesSatisfied" if child_inverted else "clausesNotSatisfied"]:
            child = arg[e["index"]]
            assert compile_filter(child)(doc) == child_inverted, (child, doc)
            _check_clauses(child, doc, e["details"], child_inverted)
        return
    assert compile_filter(flt)(doc) == inverted, (flt, doc, details)
    (op, value), = arg.items()
    assert details["operatorName"] == op
    if op == "$not":
        _check_clauses({key: value}, doc, details["details"], not inverted)
        return
    assert details["specifiedAs"] == flt
    negated = op in ("$ne", "$nin") or (op == "$exists" and not value)  # (inverted operators)
    assert details["reason"] in (_INVERTED_REASONS if inverted != negated else _NORMAL_REASONS), details


@settings(max_examples=300, deadline=None)
@given(_filters, _qdocs)
def test_query_details_exactly_when_invalid_and_each_named_clause_decided(flt, doc):
    if compile_filter(flt)(doc):
        return
    _check_clauses(flt, doc, validation_error_info(flt, doc)["details"], False)


# --------------------------------------------------------------------------------------------------
# limits and failures (doc_validation_error_test.cpp)
# --------------------------------------------------------------------------------------------------

def test_an_error_past_12_mib_is_generated_again_truncated():
    big = "x" * (13 * 1024 * 1024)
    info = validation_error_info({"a": {"$eq": 1}}, {"_id": 1, "a": big})
    assert info == {"failingDocumentId": 1, "truncated": True,
                    "details": {"operatorName": "$eq", "reason": "comparison failed"}}


def test_an_error_still_too_large_truncated_is_only_a_note():
    big = "x" * (7 * 1024 * 1024)
    validator = {"$jsonSchema": {"properties": {"a": {"uniqueItems": True}}}}
    info = validation_error_info(validator, {"_id": 2, "a": [big, big]})  # (uniqueItems keeps its value)
    assert info == {"failingDocumentId": 2, "note": "detailed error was too large"}


def _nested_or(depth: int) -> dict:
    query: dict = {"a": 0}
    for i in range(1, depth):
        query = {"$or": [query, {"a": i}]}
    return query


def test_a_too_deeply_nested_error_says_so():
    depth = (MAX_ERROR_DEPTH + 6) // 3  # mongod's test: two levels of three past the limit, then one
    for d in (depth, depth - 1):
        assert validation_error_info(_nested_or(d), {"b": 1}) == {
            "reason": "generated error was too deeply nested", "truncated": True}
    info = validation_error_info(_nested_or(depth - 2), {"b": 1})
    assert "reason" not in info and info["details"]["operatorName"] == "$or"


def test_expressions_that_throw_explain_the_error():
    validator = {"$and": [{"$expr": {"$concat": ["$a", "$b"]}}, {"$expr": {"$divide": [10, 0]}}]}
    details = validation_error_info(validator, {"a": "x", "b": 1})["details"]
    assert details["operatorName"] == "$and"
    assert [c["index"] for c in details["clausesNotSatisfied"]] == [0, 1]
    for clause in details["clausesNotSatisfied"]:
        d = clause["details"]
        assert d["operatorName"] == "$expr"
        assert d["reason"] == "failed to evaluate aggregation expression"
        assert set(d["details"]) == {"code", "codeName", "errmsg"}
    # under $nor a throwing clause explains itself too
    nor = validation_error_info({"$nor": [{"$expr": {"$divide": [10, 0]}}]}, {})["details"]
    assert nor["clausesSatisfied"][0]["details"]["reason"] == "failed to evaluate aggregation expression"


def test_a_failure_while_explaining_still_answers_with_the_document_id(monkeypatch):
    from tidemark.query import validation_error

    def broken(self, g, inverted):
        raise RuntimeError("bug")

    monkeypatch.setattr(validation_error._Leaf, "explain", broken)
    assert validation_error_info({"a": 1}, {"_id": 3, "a": 2}) == {
        "failingDocumentId": 3, "note": "failed to generate document validation error"}


def _encrypt_details(schema: dict, value) -> list:
    details = validation_error_info({"$jsonSchema": schema}, {"_id": 1, "a": value})["details"]
    return details["schemaRulesNotSatisfied"][0]["propertiesNotSatisfied"][0]["details"]


def test_encrypt_explains_plaintext_and_a_wrong_encrypted_type():
    from bson.binary import Binary

    schema = {"bsonType": "object", "properties": {"a": {"encrypt": {"bsonType": "number"}}}}
    assert _encrypt_details(schema, "foo") == [{"operatorName": "encrypt", "reason": "value was not encrypted"}]
    assert _encrypt_details(schema, Binary(b"abc", 0)) == [
        {"operatorName": "encrypt", "reason": "value was not encrypted"}]
    # an FLE1 deterministic blob whose header names a string (type 2): encrypted, of the wrong type
    blob = Binary(bytes([1]) + bytes(16) + bytes([2]), 6)
    assert _encrypt_details(schema, blob) == [{"operatorName": "encrypt", "reason": "encrypted value has wrong type"}]
