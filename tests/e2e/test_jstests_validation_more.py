"""More of MongoDB's document-validation jstests ported to pymongo against a real Tidemark server: the
validator features create/collMod refuse (with mongod's codes and messages), validators on restricted
namespaces, encryption keywords under a 'warn' action or 'moderate' level (collMod included), ``$$NOW``
in a validator, and the validation of the documents ``$out`` and ``$merge`` write
(``bypassDocumentValidation``). ``tests/e2e/test_jstests_json_schema.py`` holds the first port of the
same area; this file adds what it left out or checked only loosely (``assert.commandFailed``).

Ported from mongodb/mongo, MongoDB 7.0 semantics:

- ``jstests/core/doc_validation/doc_validation_invalid_validators.js``: each refused validator with
  mongod's code (2 for ``$text``/``$where``/near operators, 17276 unbound variable, 4660800
  ``$function``, 4660801 ``$_internalJsEmit``, 72 on admin/local/config), on create and on collMod;
- ``jstests/core/doc_validation/doc_validation_encrypt_keywords.js``: the collMod half (changing the
  validator, or only the action or level, of a collection);
- ``jstests/core/doc_validation_with_now_variable.js``;
- ``jstests/aggregation/sources/merge/bypass_doc_validation.js``;
- ``jstests/aggregation/sources/out/bypass_doc_validation.js`` (the ``$out: name`` form; the
  ``mode`` forms were removed before 7.0) and ``out_preserve_coll_options.js``;
- ``jstests/core/doc_validation/bypass_doc_validation.js``: the ``$out`` part with the other levels
  and actions of the target (the validator of the temporary collection $out inserts into).

Left out: ``validate`` output, log lines, mapReduce (no such command), sharding variants.
"""

from __future__ import annotations

import datetime as dt

import pytest
from bson.int64 import Int64
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure, WriteError

pytestmark = pytest.mark.commands("create", "collMod", "insert", "aggregate", "find", "drop", "findAndModify",
                                  "update")

BAD_VALUE = 2
INVALID_OPTIONS = 72
DOCUMENT_VALIDATION_FAILURE = 121
QUERY_FEATURE_NOT_ALLOWED = 224
UNDEFINED_VARIABLE = 17276

# Known differences from MongoDB 7.0, one reason per cause (each used by strict xfails below).
NEAR_MESSAGE = "$geoNear, $near, and $nearSphere are not allowed in this context"
ENCRYPT_MESSAGE = "Encryption-related validator keywords are not allowed in this context"


def command_error(fn) -> OperationFailure:
    with pytest.raises(OperationFailure) as info:
        fn()
    return info.value


def fails_validation(fn) -> None:
    with pytest.raises((WriteError, OperationFailure)) as info:
        fn()
    assert info.value.code == DOCUMENT_VALIDATION_FAILURE, info.value.details


# --------------------------------------------------------------------------------------------------
# doc_validation_invalid_validators.js: features a validator may not use
# --------------------------------------------------------------------------------------------------

REFUSED = [
    ({"$text": {"$search": "bob"}}, BAD_VALUE, "$text is not allowed in this context"),
    ({"$where": "this.a == this.b"}, BAD_VALUE, "$where is not allowed in this context"),
    ({"a": {"$near": [0, 0]}}, BAD_VALUE, NEAR_MESSAGE),
    ({"a": {"$nearSphere": [0, 0]}}, BAD_VALUE, NEAR_MESSAGE),
    ({"a": {"$geoNear": [0, 0]}}, BAD_VALUE, NEAR_MESSAGE),
    ({"$or": [{"b": 1}, {"$and": [{"$where": "true"}]}]}, BAD_VALUE, "$where is not allowed in this context"),
    ({"a": {"$elemMatch": {"b": {"$near": [0, 0]}}}}, BAD_VALUE, NEAR_MESSAGE),
    ({"a": {"$not": {"$nearSphere": [0, 0]}}}, BAD_VALUE, NEAR_MESSAGE),
    ({"$expr": {"$eq": ["$a", "$$unbound"]}}, UNDEFINED_VARIABLE, "Use of undefined variable: unbound"),
    ({"$expr": {"$function": {"body": "function(age) { return age >= 21; }", "args": ["$age"], "lang": "js"}}},
     4660800, "$function cannot be used inside a validator."),
    ({"$expr": {"$_internalJsEmit": {"eval": "function() {}", "this": {}}}}, 4660801,
     "$_internalJsEmit cannot be used inside a validator."),
    ({"$expr": {"$lt": [{"$rand": {}}, 0.5]}}, 3040500, "$rand not allowed inside collection validators"),
]


@pytest.mark.parametrize("validator, code, message", REFUSED)
def test_validator_feature_refused_by_create(db, validator, code, message):
    err = command_error(lambda: db.command("create", "c", validator=validator))
    assert (err.code, err.details["errmsg"]) == (code, message)
    assert "c" not in db.list_collection_names()


@pytest.mark.parametrize("validator, code, message", REFUSED)
@pytest.mark.parametrize("initial", [None, {"a": {"$exists": True}}])
def test_validator_feature_refused_by_coll_mod(db, validator, code, message, initial):
    db.command("create", "c", **({"validator": initial} if initial else {}))
    err = command_error(lambda: db.command("collMod", "c", validator=validator))
    assert (err.code, err.details["errmsg"]) == (code, message)
    options = db.command("listCollections", filter={"name": "c"})["cursor"]["firstBatch"][0]["options"]
    assert options.get("validator") == initial  # unchanged


@pytest.mark.parametrize("validator", [
    {"$expr": {"$lt": ["$ts", "$$NOW"]}},
    {"$expr": {"$let": {"vars": {"x": 1}, "in": {"$eq": ["$a", "$$x"]}}}},
    {"$expr": {"$eq": [{"$literal": {"$rand": {}}}, "$a"]}},  # a literal is data
    {"a": {"$elemMatch": {"b": 1}}},
    {"loc": {"$geoWithin": {"$center": [[0, 0], 1]}}},
])
def test_validator_features_allowed(db, validator):
    db.command("create", "c", validator=validator)
    db.command("collMod", "c", validator=validator)


def test_top_level_near_is_an_unknown_operator(db):
    # mongod's parser knows $near only under a field: at the top it is unknown (2 BadValue)
    for op in ("$near", "$geoNear", "$nearSphere"):
        err = command_error(lambda op=op: db.command("create", "c", validator={op: {"place": "holder"}}))
        assert err.code == BAD_VALUE and err.details["errmsg"].startswith(f"unknown top level operator: {op}")


_LEAF = st.sampled_from([{"a": 1}, {"b": {"$gt": 2}}, {"c": {"$exists": True}}, {"$expr": {"$eq": ["$a", 1]}},
                         {"d": {"$elemMatch": {"e": 1}}}])
_BANNED = st.sampled_from([
    ({"$where": "true"}, BAD_VALUE), ({"$text": {"$search": "x"}}, BAD_VALUE), ({"f": {"$near": [0, 0]}}, BAD_VALUE),
    ({"g": {"$not": {"$nearSphere": [0, 0]}}}, BAD_VALUE), ({"$expr": {"$eq": ["$a", "$$nope"]}}, UNDEFINED_VARIABLE),
    ({"$expr": {"$function": {"body": "function() { return true; }", "args": [], "lang": "js"}}}, 4660800),
])


@st.composite
def _filter_with(draw, banned):
    """A filter of $and/$or/$nor levels with leaf clauses, ``banned`` (if any) somewhere among them."""
    leaves = draw(st.lists(_LEAF, min_size=1, max_size=4))
    if banned is not None:
        leaves.insert(draw(st.integers(0, len(leaves))), banned)
    node = leaves
    for _ in range(draw(st.integers(0, 3))):
        node = [{draw(st.sampled_from(["$and", "$or", "$nor"])): node}]
    return node[0] if len(node) == 1 else {"$and": node}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_validator_refusal_found_at_any_depth(db, data):
    # invariant: a validator holding one refused feature anywhere under $and/$or/$nor is refused with
    # that feature's code; the same validator without it is accepted
    banned, code = data.draw(_BANNED)
    flt = data.draw(_filter_with(banned))
    db.drop_collection("c")
    assert command_error(lambda: db.command("create", "c", validator=flt)).code == code
    clean = data.draw(_filter_with(None))
    db.command("create", "c", validator=clean)


# --------------------------------------------------------------------------------------------------
# doc_validation_invalid_validators.js: restricted namespaces
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dbname", ["admin", "local", "config"])
def test_validator_refused_on_internal_databases(client, dbname):
    name = "doc_validation_invalid_validators"
    try:
        err = command_error(lambda: client[dbname].command("create", name, validator={"a": {"$exists": True}}))
        assert err.code == INVALID_OPTIONS
        msg = err.details["errmsg"]
        assert msg.startswith(f"Document validators are not allowed on collection {dbname}.{name} with UUID ")
        assert msg.endswith(f" in the {dbname} internal database")
        assert name not in client[dbname].list_collection_names()
        # a collection there without a validator is fine; collMod may not add one (the UUID is its own)
        client[dbname].command("create", name)
        info = client[dbname].command("listCollections", filter={"name": name})["cursor"]["firstBatch"][0]["info"]
        uuid = info["uuid"].as_uuid()  # pymongo's default representation gives the raw subtype-4 Binary
        err = command_error(lambda: client[dbname].command("collMod", name, validator={"a": 1}))
        assert (err.code, err.details["errmsg"]) == (
            INVALID_OPTIONS, f"Document validators are not allowed on collection {dbname}.{name} with UUID {uuid} "
                             f"in the {dbname} internal database")
        client[dbname].command("collMod", name, validator={})  # removing none is allowed
    finally:
        client[dbname].drop_collection(name)


def test_validator_refused_on_system_collection(db):
    err = command_error(lambda: db.command("create", "system.js", validator={"a": 1}))
    assert err.code == INVALID_OPTIONS
    assert err.details["errmsg"].startswith(f"Document validators not allowed on system collection {db.name}.system.js")


def test_invalid_validator_reported_before_restricted_namespace(client):
    # create parses the validator first (mongod's pre-parse), then checks the namespace
    err = command_error(lambda: client.admin.command("create", "dv_order", validator={"$where": "true"}))
    assert err.code == BAD_VALUE


# --------------------------------------------------------------------------------------------------
# doc_validation_encrypt_keywords.js: collMod
# --------------------------------------------------------------------------------------------------

ENCRYPT_SCHEMA = {"$jsonSchema": {"properties": {"_id": {"encrypt": {}}}}}
NESTED_ENCRYPT_SCHEMA = {"$jsonSchema": {"properties": {"user": {"type": "object",
                                                                 "properties": {"ssn": {"encrypt": {}}}}}}}
ENCRYPT_METADATA_SCHEMA = {"$jsonSchema": {"encryptMetadata": {
    "algorithm": "AEAD_AES_256_CBC_HMAC_SHA_512-Deterministic"}}}
ENCRYPT_SCHEMAS = [ENCRYPT_SCHEMA, NESTED_ENCRYPT_SCHEMA, ENCRYPT_METADATA_SCHEMA]


def _options(db) -> dict:
    return db.command("listCollections", filter={"name": "c"})["cursor"]["firstBatch"][0]["options"]


@pytest.mark.parametrize("schema", ENCRYPT_SCHEMAS)
def test_encrypt_validator_refused_by_coll_mod_under_warn(db, schema):
    db.command("create", "c", validator={"$jsonSchema": {"required": ["_id"]}}, validationAction="warn")
    err = command_error(lambda: db.command("collMod", "c", validator=schema))
    assert (err.code, err.details["errmsg"]) == (QUERY_FEATURE_NOT_ALLOWED, ENCRYPT_MESSAGE)
    assert _options(db)["validator"] == {"$jsonSchema": {"required": ["_id"]}}


@pytest.mark.parametrize("change", [{"validationAction": "warn"}, {"validationLevel": "moderate"}])
def test_coll_mod_of_level_or_action_reparses_encrypt_validator(db, change):
    db.command("create", "c", validator=ENCRYPT_SCHEMA, validationAction="error")
    assert command_error(lambda: db.command("collMod", "c", **change)).code == QUERY_FEATURE_NOT_ALLOWED
    options = _options(db)
    assert options.get("validationAction", "error") == "error" and options.get("validationLevel", "strict") == "strict"
    db.command("collMod", "c", validationAction="error", validationLevel="strict")  # still allowed


@pytest.mark.parametrize("schema", ENCRYPT_SCHEMAS)
@pytest.mark.parametrize("change", [{"validationAction": "warn"}, {"validationLevel": "moderate"}])
def test_coll_mod_encrypt_validator_with_warn_or_moderate(db, schema, change):
    db.command("create", "c")
    assert command_error(lambda: db.command("collMod", "c", validator=schema, **change)).code == \
        QUERY_FEATURE_NOT_ALLOWED
    # with 'error'/'strict' in the same collMod it is accepted
    db.command("collMod", "c", validator=schema, validationAction="error", validationLevel="strict")


def test_encrypt_keyword_allowed_when_coll_mod_restores_strict_error(db):
    db.command("create", "c", validator={"a": 1}, validationAction="warn")
    db.command("collMod", "c", validator=ENCRYPT_SCHEMA, validationAction="error")
    assert _options(db)["validator"] == ENCRYPT_SCHEMA


# --------------------------------------------------------------------------------------------------
# doc_validation_with_now_variable.js
# --------------------------------------------------------------------------------------------------

def test_now_variable_in_validator(db):
    db.command("create", "coll_doc_validation_with_now_variable", validator={"$expr": {"$lt": ["$ts", "$$NOW"]}})
    coll = db.coll_doc_validation_with_now_variable
    coll.insert_one({"ts": dt.datetime.fromtimestamp(1589617694.938, dt.UTC)})
    fails_validation(lambda: coll.insert_one({"ts": dt.datetime.fromtimestamp(2708791380, dt.UTC)}))


# --------------------------------------------------------------------------------------------------
# aggregation/sources/merge/bypass_doc_validation.js
# --------------------------------------------------------------------------------------------------

def _agg(db, coll: str, pipeline: list, **options):
    return db.command("aggregate", coll, pipeline=pipeline, cursor={}, **options)


REPLACE_INSERT = {"whenMatched": "replace", "whenNotMatched": "insert"}
FAIL_INSERT = {"whenMatched": "fail", "whenNotMatched": "insert"}


def test_merge_bypass_document_validation_true(db):
    db.command("create", "target", validator={"a": 2})
    db.source.insert_one({"_id": 0, "a": 1})
    _agg(db, "source", [{"$merge": "target"}], bypassDocumentValidation=True)
    assert list(db.target.find()) == [{"_id": 0, "a": 1}]
    _agg(db, "source", [{"$addFields": {"a": 3}}, {"$merge": {"into": "target", **REPLACE_INSERT}}],
         bypassDocumentValidation=True)
    assert list(db.target.find()) == [{"_id": 0, "a": 3}]
    _agg(db, "source", [{"$replaceRoot": {"newRoot": {"_id": 1, "a": 4}}}, {"$merge": {"into": "target", **FAIL_INSERT}}],
         bypassDocumentValidation=True)
    assert list(db.target.find().sort("_id", 1)) == [{"_id": 0, "a": 3}, {"_id": 1, "a": 4}]


def test_merge_valid_replacement_needs_no_bypass(db):
    db.command("create", "target", validator={"a": 2})
    db.source.insert_one({"_id": 0, "a": 1})
    db.target.insert_one({"_id": 0, "a": 2})
    for options in ({}, {"bypassDocumentValidation": False}):
        _agg(db, "source", [{"$addFields": {"a": 2}}, {"$merge": {"into": "target", **REPLACE_INSERT}}], **options)
        assert list(db.target.find({"_id": 0})) == [{"_id": 0, "a": 2}]


@pytest.mark.parametrize("options", [{}, {"bypassDocumentValidation": False}])
def test_merge_fails_validation_without_bypass(db, options):
    db.command("create", "target", validator={"a": 2})
    db.source.insert_one({"_id": 0, "a": 1})
    for pipeline in ([{"$merge": "target"}],
                     [{"$addFields": {"a": 3}}, {"$merge": {"into": "target", **REPLACE_INSERT}}],
                     [{"$replaceRoot": {"newRoot": {"_id": 1, "a": 4}}}, {"$merge": {"into": "target", **FAIL_INSERT}}]):
        fails_validation(lambda pipeline=pipeline: _agg(db, "source", pipeline, **options))
    assert db.target.count_documents({}) == 0


def test_merge_validator_on_source_only(db):
    db.source.insert_one({"_id": 0, "a": 1})
    db.command("collMod", "source", validator={"a": 1})
    _agg(db, "source", [{"$merge": "target"}])
    _agg(db, "source", [{"$addFields": {"a": 3}}, {"$merge": {"into": "target", **REPLACE_INSERT}}])
    _agg(db, "source", [{"$replaceRoot": {"newRoot": {"_id": 1, "a": 4}}}, {"$merge": {"into": "target", **FAIL_INSERT}}])
    assert list(db.target.find().sort("_id", 1)) == [{"_id": 0, "a": 3}, {"_id": 1, "a": 4}]


def test_merge_non_boolean_bypass_is_its_truth_value(db):
    db.command("create", "target", validator={"a": 1})
    db.source.insert_one({"_id": 0, "a": 1})
    _agg(db, "source", [{"$merge": "target"}], bypassDocumentValidation=5)
    assert list(db.target.find()) == [{"_id": 0, "a": 1}]
    # a string is no safeBool: 14 before anything runs (7.0's merge_bypass_doc_validation.js: "the value
    # type can _not_ be string"; the 4.2 test this was first ported from took its truth value)
    with pytest.raises(OperationFailure) as refused:
        _agg(db, "source", [{"$addFields": {"a": 3}}, {"$merge": {"into": "target", **REPLACE_INSERT}}],
             bypassDocumentValidation="false")
    assert refused.value.code == 14
    assert list(db.target.find()) == [{"_id": 0, "a": 1}]


def test_merge_into_foreign_database(db, client):
    foreign = client[db.name + "_foreign"]
    try:
        foreign.command("create", "foreign_coll", validator={"a": 2})
        db.source.insert_one({"_id": 0, "a": 1})
        into = {"db": foreign.name, "coll": "foreign_coll"}
        _agg(db, "source", [{"$addFields": {"a": 3}}, {"$merge": {"into": into, **REPLACE_INSERT}}],
             bypassDocumentValidation=True)
        _agg(db, "source", [{"$replaceRoot": {"newRoot": {"_id": 1, "a": 4}}}, {"$merge": {"into": into, **FAIL_INSERT}}],
             bypassDocumentValidation=True)
        assert list(foreign.foreign_coll.find().sort("_id", 1)) == [{"_id": 0, "a": 3}, {"_id": 1, "a": 4}]
        foreign.foreign_coll.delete_many({})
        fails_validation(lambda: _agg(db, "source", [{"$addFields": {"a": 3}},
                                                      {"$merge": {"into": into, **REPLACE_INSERT}}]))
        fails_validation(lambda: _agg(db, "source", [{"$replaceRoot": {"newRoot": {"_id": 1, "a": 4}}},
                                                      {"$merge": {"into": into, **FAIL_INSERT}}]))
        assert foreign.foreign_coll.count_documents({}) == 0
    finally:
        client.drop_database(foreign.name)


def test_merge_keep_existing_and_unchanged_documents_are_not_validated(db):
    # only written documents are validated: kept ones, and a $set that changes nothing, are not
    db.target.insert_one({"_id": 0, "a": 1})
    db.command("collMod", "target", validator={"a": 2})
    db.source.insert_one({"_id": 0, "a": 1})
    _agg(db, "source", [{"$merge": {"into": "target", "whenMatched": "keepExisting"}}])
    _agg(db, "source", [{"$merge": {"into": "target", "whenMatched": "merge"}}])
    assert list(db.target.find()) == [{"_id": 0, "a": 1}]


def test_merge_moderate_level_lets_invalid_documents_stay_invalid(db):
    db.target.insert_one({"_id": 0, "a": 1})
    db.command("collMod", "target", validator={"a": 2}, validationLevel="moderate")
    db.source.insert_one({"_id": 0, "a": 3, "b": 1})
    _agg(db, "source", [{"$merge": {"into": "target", "whenMatched": "merge"}}])
    assert list(db.target.find()) == [{"_id": 0, "a": 3, "b": 1}]
    db.source.insert_one({"_id": 1, "a": 3})  # a new document is validated whatever the level
    fails_validation(lambda: _agg(db, "source", [{"$merge": {"into": "target", "whenMatched": "merge"}}]))


# --------------------------------------------------------------------------------------------------
# bypass_doc_validation.js: $out and the target's level and action
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("flag", [True, 5, 0.5, Int64(1)])  # any true number or bool bypasses (a safeBool)
def test_out_bypass_document_validation(db, flag):
    db.command("create", "target", validator={"a": 2})
    db.source.insert_one({"_id": 0, "a": 1})
    _agg(db, "source", [{"$out": "target"}], bypassDocumentValidation=flag)
    assert list(db.target.find()) == [{"_id": 0, "a": 1}]


@pytest.mark.parametrize("options", [{}, {"bypassDocumentValidation": False}, {"bypassDocumentValidation": 0}])
def test_out_fails_validation_without_bypass(db, options):
    db.command("create", "target", validator={"a": 2})
    db.source.insert_one({"_id": 0, "a": 1})
    fails_validation(lambda: _agg(db, "source", [{"$out": "target"}], **options))
    assert db.target.count_documents({}) == 0
    _agg(db, "source", [{"$addFields": {"a": 2}}, {"$out": "target"}], **options)  # valid documents pass
    assert list(db.target.find()) == [{"_id": 0, "a": 2}]


def test_out_validator_on_source_only(db):
    db.source.insert_one({"_id": 0, "a": 1})
    db.command("collMod", "source", validator={"a": 1})
    _agg(db, "source", [{"$addFields": {"a": 3}}, {"$out": "target"}])
    assert list(db.target.find()) == [{"_id": 0, "a": 3}]


def test_out_preserves_target_options(db):
    # out_preserve_coll_options.js
    db.command("create", "target", validationLevel="moderate")
    assert _options_of(db, "target") == {"validationLevel": "moderate"}
    db.source.insert_one({"_id": 0})
    _agg(db, "source", [{"$out": "target"}])
    assert db.target.count_documents({}) == 1
    assert _options_of(db, "target") == {"validationLevel": "moderate"}


def test_out_keeps_target_unchanged_on_validation_failure(db):
    db.command("create", "out", validator={"a": {"$exists": True}})
    db.out.insert_one({"_id": "old", "a": 1})
    db.src.insert_many([{"_id": 1, "a": 1}, {"_id": 2}])
    fails_validation(lambda: _agg(db, "src", [{"$out": "out"}]))
    assert list(db.out.find()) == [{"_id": "old", "a": 1}]
    _agg(db, "src", [{"$out": "out"}], bypassDocumentValidation=True)
    assert sorted(d["_id"] for d in db.out.find()) == [1, 2]
    assert _options_of(db, "out")["validator"] == {"a": {"$exists": True}}


def _options_of(db, name: str) -> dict:
    return db.command("listCollections", filter={"name": name})["cursor"]["firstBatch"][0]["options"]


@pytest.mark.parametrize("options", [{"validationAction": "warn"}, {"validationLevel": "off"}])
def test_out_into_target_that_does_not_enforce(db, options):
    db.command("create", "out", validator={"a": {"$exists": True}}, **options)
    db.src.insert_many([{"_id": 1}, {"_id": 2}])
    _agg(db, "src", [{"$out": "out"}])
    assert db.out.count_documents({}) == 2


def test_out_moderate_level_validates_every_document(db):
    # $out inserts into a new collection: no document was there before it, so 'moderate' is 'strict'
    db.command("create", "out", validator={"a": {"$exists": True}}, validationLevel="moderate")
    db.src.insert_one({"_id": 1})
    fails_validation(lambda: _agg(db, "src", [{"$out": "out"}]))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(st.sampled_from([1, 2, None, "2"]), min_size=1, max_size=6), bypass=st.booleans(),
       stage=st.sampled_from(["$out", "$merge"]))
def test_output_stage_validation_model(db, values, bypass, stage):
    # reference model: the write succeeds iff bypassed or every written document has a == 2. A failed
    # $out leaves the target as it was (empty: it writes a temporary collection, renamed at the end);
    # a failed $merge has written the valid documents (mongod's unordered batch writes every document
    # but the refused ones, then reports the first error; merge/batch_writes.js)
    db.drop_collection("src")
    db.drop_collection("target")
    db.command("create", "target", validator={"a": 2})
    db.src.insert_many([{"_id": i} if v is None else {"_id": i, "a": v} for i, v in enumerate(values)])
    valid = bypass or all(v == 2 for v in values)
    run = lambda: _agg(db, "src", [{stage: "target"}], bypassDocumentValidation=bypass)  # noqa: E731
    if valid:
        run()
        assert db.target.count_documents({}) == len(values)
    else:
        fails_validation(run)
        assert db.target.count_documents({}) == (0 if stage == "$out" else values.count(2))


# --------------------------------------------------------------------------------------------------
# a replacement equal in content to the stored document (doc_validation.js, assertSchemaMatch)
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("via", ["update", "findAndModify"])
def test_replacement_without_id_is_validated(db, via):
    db.c.insert_one({"_id": 0})
    db.command("collMod", "c", validator={"a": {"$exists": True}})
    if via == "update":
        fails_validation(lambda: db.c.replace_one({"_id": 0}, {}))
    else:
        fails_validation(lambda: db.command("findAndModify", "c", query={"_id": 0}, update={}))


def test_replacement_binary_equal_to_stored_document_is_a_noop(db):
    db.c.insert_one({"_id": 0})
    db.command("collMod", "c", validator={"a": {"$exists": True}})
    assert db.c.replace_one({"_id": 0}, {"_id": 0}).modified_count == 0
