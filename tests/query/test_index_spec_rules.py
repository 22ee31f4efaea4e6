"""The pure rules behind createIndexes: key patterns (index_kinds.check_key_pattern), partial filter depth
and equivalence (partial_filter), and the spec checks of commands.indexes (parse_spec, check_ttl,
finish_spec, _conflict), as mongod 7.0 states them (index_key_validate.cpp, index_catalog_impl.cpp,
MatchExpression::equivalent)."""

from __future__ import annotations

import pytest
from bson import Int64

from tidemark.commands import indexes
from tidemark.protocol.errors import MongoError
from tidemark.query.index_kinds import check_key_pattern
from tidemark.query.partial_filter import check_partial_filter, filter_signature


@pytest.mark.parametrize(("key", "plugin"), [
    ({"a": 1}, ""), ({"a": -1.5, "b": Int64(2)}, ""), ({"a.$id": 1, "a.$ref": 1, "a.$db": 1}, ""),
    ({"a": "hashed", "b": 1}, "hashed"), ({"a": 1, "b": "2dsphere"}, "2dsphere"), ({"$**": "text"}, "text"),
    ({"a": "text", "b": "text"}, "text"), ({"$**": 1}, "wildcard"), ({"a.$**": -1, "b": 1}, "wildcard"),
])
def test_key_patterns_accepted(key, plugin):
    assert check_key_pattern(key) == plugin


@pytest.mark.parametrize(("key", "code", "message"), [
    ({}, 67, "Index keys cannot be empty."),
    ({"a" * 2100: 1}, 67, "Index key pattern too large."),
    ({"a": "bogus"}, 67, "Unknown index plugin 'bogus'"),
    ({"a": 0}, 67, "Values in the index key pattern cannot be 0."),
    ({"a": float("nan")}, 67, "Values in the index key pattern cannot be NaN."),
    ({"a": False}, 67, "Values in v:2 index key pattern cannot be of type bool. Only numbers > 0, numbers < 0, "
                       "and strings are allowed."),
    ({"a": "text", "b": "2d"}, 67, "Can't use more than one index plugin for a single index."),
    ({"$**": 1, "b": "hashed"}, 67, "Can't use more than one index plugin for a single index."),
    ({"a": 1, "b": "wildcard"}, 7246202, "No wildcard index field is specified for the wildcard index"),
    ({"$**": "wildcard"}, 67, "The key pattern value for an 'wildcard' index must be a non-zero number, not a "
                              "string."),
    ({"": 1}, 67, "Index keys cannot be an empty field."),
    ({"a..b": 1}, 67, "Index keys cannot contain an empty field."),
    ({"$a": 1}, 67, "Index key contains an illegal field name: field name starts with '$'."),
    ({"$id": 1}, 67, "Index key contains an illegal field name: field name starts with '$'."),
    ({"_fts": 1}, 67, "Index key contains an illegal field name: '_fts'"),
    ({"a": ""}, 67, "Values in the index key pattern cannot be empty strings"),
    ({"a": 1, "b": ""}, 67, "Values in the index key pattern cannot be empty strings"),
    ({"a": "columnstore"}, 115, "'columnstore' indexes are not supported by Tidemark"),
])
def test_key_patterns_refused(key, code, message):
    with pytest.raises(MongoError) as refused:
        check_key_pattern(key)
    assert (refused.value.code, refused.value.message) == (code, message)


def _chain(depth: int) -> dict:
    flt: dict = {"x": 3}
    for _ in range(depth - 1):
        flt = {"$and": [flt]}
    return flt


@pytest.mark.parametrize("depth", [1, 2, 3, 4])
def test_partial_filter_depth_allowed(depth):
    check_partial_filter(_chain(depth))


@pytest.mark.parametrize("flt", [
    _chain(5),
    {"a": 1, "$or": [{"$and": [{"b": 1, "c": 1}]}]},  # implicit $and, $or, $and, implicit $and, leaf
    {"$or": [{"a": {"$gt": 1, "$lt": 5}, "$and": [{"b": {"$in": [1]}, "c": 1}]}]},
])
def test_partial_filter_too_deep(flt):
    with pytest.raises(MongoError) as refused:
        check_partial_filter(flt)
    assert (refused.value.code, refused.value.message) == (67, "partialFilterExpression depth may not exceed 4")


def test_partial_filter_first_fault_wins():
    """mongod checks depth-first in document order: an unsupported predicate before a too-deep branch is
    reported as unsupported."""
    with pytest.raises(MongoError) as refused:
        check_partial_filter({"a": {"$ne": 1}, "$and": [_chain(5)]})
    assert refused.value.message.startswith("Expression not supported in partial index: ")
    with pytest.raises(MongoError) as refused:
        check_partial_filter({"$and": [_chain(5)], "a": {"$ne": 1}})
    assert refused.value.message == "partialFilterExpression depth may not exceed 4"


@pytest.mark.parametrize(("a", "b"), [
    ({"a": {"$gt": 0, "$lt": 10}, "b": "blah"}, {"$and": [{"b": "blah"}, {"a": {"$lt": 10}}, {"a": {"$gt": 0}}]}),
    ({"a": 1}, {"a": 1.0}),
    ({"a": 1}, {"a": {"$in": [1]}}),
    ({"a": {"$in": [1, 2, 2]}}, {"a": {"$in": [2, 1]}}),
    ({"$or": [{"a": 1}, {"b": 2}]}, {"$or": [{"b": 2}, {"$or": [{"a": 1}]}]}),
    ({"a": {"$exists": True}, "b": {"$type": "string"}}, {"b": {"$type": 2}, "a": {"$exists": True}}),
])
def test_equivalent_partial_filters(a, b):
    assert filter_signature(a) == filter_signature(b)


@pytest.mark.parametrize(("a", "b"), [
    ({"$and": [{"a": {"$type": 1}}, {"a": {"$type": 2}}]}, {"$and": [{"a": {"$type": 2}}, {"a": {"$type": 1}}]}),
    ({"a": {"$gt": 0}}, {"a": {"$gte": 0}}),
    ({"b": "blah"}, {"b": "BLAH"}),
    ({"$or": [{"a": 1}, {"b": 2}]}, {"$and": [{"a": 1}, {"b": 2}]}),
])
def test_different_partial_filters(a, b):
    assert filter_signature(a) != filter_signature(b)


# --- createIndexes' spec checks (tidemark.commands.indexes: pure functions of the specs) ---------------

@pytest.mark.parametrize(("raw", "code", "message"), [
    ({"key": {"a": 0}, "name": "x"}, 67,
     'Error in specification { key: { a: 0 }, name: "x" } :: caused by :: Values in the index key pattern cannot '
     "be 0."),
    ({"key": {"a": 1}}, 9, "Error in specification { key: { a: 1 } } :: caused by :: The 'name' field is a "
                           "required property of an index specification"),
    ({"key": {"a": 1}, "name": "x", "v": 0}, 67,
     'Error in specification { key: { a: 1 }, name: "x", v: 0 } :: caused by :: Invalid index specification '
     '{ key: { a: 1 }, name: "x", v: 0 }; cannot create an index with v=0'),
    ({"key": {"_id": 1}, "name": "_id_", "unique": True}, 197,
     "The field 'unique' is not valid for an _id index specification. Specification: { key: { _id: 1 }, name: "
     '"_id_", unique: true, v: 2 }'),
    ({"key": {"a": 1}, "name": "*"}, 2, "The index name '*' is not valid."),
])
def test_parse_spec_refusals(raw, code, message):
    with pytest.raises(MongoError) as refused:
        indexes.parse_spec(raw)
    assert (refused.value.code, refused.value.message) == (code, message)


@pytest.mark.parametrize(("raw", "message"), [
    ({"key": {"a": 1}, "name": "x", "expireAfterSeconds": -1},
     ". Index spec: { key: { a: 1 }, name: \"x\", expireAfterSeconds: -1 } :: caused by :: TTL index "
     "'expireAfterSeconds' option cannot be less than 0"),
    ({"key": {"a": 1, "b": 1}, "name": "x", "expireAfterSeconds": 1},
     "TTL indexes are single-field indexes, compound indexes do not support TTL. Index spec: { key: { a: 1, b: 1 }, "
     'name: "x", expireAfterSeconds: 1 }'),
])
def test_ttl_refusals(raw, message):
    with pytest.raises(MongoError) as refused:
        indexes.check_ttl(raw)
    assert (refused.value.code, refused.value.message) == (67, message)


def test_finish_spec_shapes():
    raw, plugin = indexes.parse_spec({"key": {"a": 1}, "name": "a_1", "v": 1, "unique": 1, "dropDups": True,
                                      "ns": "x.y", "bits": 20})
    assert indexes.finish_spec(raw, plugin) == {"v": 1, "key": {"a": 1}, "name": "a_1", "bits": 20, "unique": True,
                                                "collation": {"locale": "simple"}}


def _stored(key, name, **options):
    return {"v": 2, "key": key, "name": name, **options}


def test_conflicts():
    existing = [_stored({"a": 1}, "a_1"), _stored({"b": 1}, "p", partialFilterExpression={"x": {"$gt": 1}, "y": 1})]
    assert indexes._conflict(existing, _stored({"a": 1}, "a_1")) == "exists"
    assert indexes._conflict(existing, _stored({"a": 1}, "a_1", background=True)) == "exists"
    assert indexes._conflict(existing, _stored({"b": 1}, "p", partialFilterExpression={"$and": [{"y": 1},
                                                                                          {"x": {"$gt": 1}}]})) == "exists"
    assert indexes._conflict(existing, _stored({"c": 1}, "c_1")) is None
    for spec, code in ((_stored({"c": 1}, "a_1"), 86), (_stored({"a": 1}, "a_1", hidden=True), 85),
                       (_stored({"a": 1}, "other"), 85), (_stored({"a": 1}, "other", expireAfterSeconds=5), 85)):
        with pytest.raises(MongoError) as refused:
            indexes._conflict(existing, spec)
        assert refused.value.code == code, spec


@pytest.mark.parametrize(("flt", "code", "message"), [
    ({"$text": {"$search": "x"}}, 2, "$text is not allowed in this context"),
    ({"$or": [{"a": 1}, {"$jsonSchema": {}}]}, 224, "$jsonSchema is not allowed in this context"),
    ({"a": {"$elemMatch": {"$expr": {"$eq": ["$b", 1]}}}}, 224, "$expr is not allowed in this context"),
    ({"loc": {"$near": [0, 0], "$maxDistance": 5}}, 5626500, None),
    ({"$and": [{"loc": {"$nearSphere": [0, 0]}}]}, 5626500, None),
    ({"$where": "true"}, 2, "$where is not allowed in this context"),
])
def test_partial_filter_banned_features(flt, code, message):
    """mongod parses a partial filter with every special feature banned: its codes, where it meets them."""
    with pytest.raises(MongoError) as refused:
        check_partial_filter(flt)
    assert refused.value.code == code
    if message is not None:
        assert refused.value.message == message
    else:
        assert refused.value.message.startswith("$geoNear, $near, and $nearSphere are not allowed in this context")
