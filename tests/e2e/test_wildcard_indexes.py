"""Wildcard (``$**``) indexes against a real Tidemark server: ports of the results (not the explain
shapes) of MongoDB 7.0's ``jstests/core/index/wildcard/*.js``, and a differential property: whatever
the documents, the index spec and the single-path filter, a read through a wildcard index (chosen by
the planner or hinted) returns exactly what a collection scan returns.
"""

from __future__ import annotations

import datetime as dt

import pytest
from bson import Int64
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo import IndexModel
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("createIndexes", "listIndexes", "dropIndexes", "find", "insert", "update",
                                  "delete", "aggregate", "count", "distinct")

CANNOT_CREATE_INDEX = 67
NO_QUERY_EXECUTION_PLANS = 291
BAD_VALUE = 2
FAILED_TO_PARSE = 9
TYPE_MISMATCH = 14


def fails(fn, code):
    with pytest.raises(OperationFailure) as info:
        fn()
    assert info.value.code == code, info.value.details
    return info.value


def ids(cursor):
    return sorted(d["_id"] for d in cursor)


def create(coll, key, **options):
    return coll.create_index(list(key.items()), **options)


# --------------------------------------------------------------------------------------------------
# wildcard_index_validindex.js, compound_wildcard_index_validation.js
# --------------------------------------------------------------------------------------------------

VALID = [
    ({"$**": 1}, {}), ({"a.$**": 1}, {}), ({"$**": 1}, {"partialFilterExpression": {"a": {"$gt": 0}}}),
    ({"$**": 1}, {"collation": {"locale": "fr"}}), ({"$**": 1}, {"wildcardProjection": {"a": 1, "b": 1, "c": 1}}),
    ({"$**": 1}, {"wildcardProjection": {"a": 0, "b": 0, "c": 0}}),
    ({"$**": 1}, {"wildcardProjection": {"_id": 1, "a": 0, "b": 0, "c": 0}}),
    ({"$**": 1}, {"wildcardProjection": {"_id": 0, "a": 1, "b": 1, "c": 1}}), ({"$**": -1}, {}),
    ({"a": 1, "b.$**": 1}, {}), ({"a.$**": 1, "b": 1}, {}), ({"a": 1, "b.$**": -1, "c": 1}, {}),
    ({"a": 1, "$**": 1}, {"wildcardProjection": {"a": 0}}), ({"$**": 1, "a": 1}, {"wildcardProjection": {"a": 0}}),
    ({"a": 1, "$**": -1, "b": 1}, {"wildcardProjection": {"a": 0, "b": 0}}),
]


@pytest.mark.parametrize(("key", "options"), VALID)
def test_valid_wildcard_specs_are_built_and_listed(db, key, options):
    name = create(db.c, key, **options)
    listed = next(i for i in db.c.list_indexes() if i["name"] == name)
    assert listed["key"] == key
    if "wildcardProjection" in options:
        assert listed["wildcardProjection"] == options["wildcardProjection"]
    db.c.drop_index(name)


INVALID = [
    ({"$**": 0}, {}, CANNOT_CREATE_INDEX), ({"$**": 1}, {"sparse": True}, CANNOT_CREATE_INDEX),
    ({"$**": 1}, {"v": 1}, CANNOT_CREATE_INDEX), ({"$**": 1}, {"v": 0}, CANNOT_CREATE_INDEX),
    ({"$**": 1}, {"unique": True}, CANNOT_CREATE_INDEX), ({"$**": "hashed"}, {}, CANNOT_CREATE_INDEX),
    ({"$**": 1}, {"expireAfterSeconds": 3600}, CANNOT_CREATE_INDEX), ({"$**": "2dsphere"}, {}, CANNOT_CREATE_INDEX),
    ({"$**": "2d"}, {}, CANNOT_CREATE_INDEX), ({"a.$**": "text"}, {}, CANNOT_CREATE_INDEX),
    ({"a": "wildcard"}, {}, 7246202), ({"$**": "wildcard"}, {}, CANNOT_CREATE_INDEX),
    ({"a.$**.$**": 1}, {}, CANNOT_CREATE_INDEX), ({"$**.$**": 1}, {}, CANNOT_CREATE_INDEX),
    ({"$**": "hello"}, {}, CANNOT_CREATE_INDEX),
    ({"$**": 1}, {"wildcardProjection": {"a": 1, "b": 0}}, 31254),
    ({"$**": 1}, {"wildcardProjection": {"a": 0, "b": 1}}, 31253),
    ({"$**": 1}, {"wildcardProjection": {"a": 1, "b": "string"}}, 51271),
    ({"$**": 1}, {"wildcardProjection": {}}, FAILED_TO_PARSE),
    ({"a": 1}, {"wildcardProjection": {"a": 1, "b": 1}}, BAD_VALUE),
    ({"$**": "text"}, {"wildcardProjection": {"a": 1, "b": 1}}, BAD_VALUE),
    ({"a.$**": 1}, {"wildcardProjection": "string"}, TYPE_MISMATCH),
    ({"a.$**": 1}, {"wildcardProjection": {"a": 1}}, FAILED_TO_PARSE),
    ({"a.$**": 1}, {"wildcardProjection": {"b": 0}}, FAILED_TO_PARSE),
    # compound wildcard indexes
    ({"a": 1, "a.$**": 1}, {}, 7246204), ({"a.b.c": 1, "a.b.$**": 1}, {}, 7246204),
    ({"$**": 1, "c": 1}, {"wildcardProjection": {"a.b": 1, "a.b.c": 1}}, 7246200),
    ({"a.$**": 1, "b.$**": 1}, {}, 7246201), ({"a.$**": 1, "b": "text"}, {}, CANNOT_CREATE_INDEX),
    ({"a.$**": 1, "b": "hashed"}, {}, CANNOT_CREATE_INDEX), ({"a.$**": 1, "b": "2dsphere"}, {}, CANNOT_CREATE_INDEX),
    ({"$**": 1, "a": 1}, {}, CANNOT_CREATE_INDEX),
    ({"$**": 1, "a": 1}, {"wildcardProjection": {"a": 1}}, 7246208),
    ({"$**": 1, "a": 1}, {"wildcardProjection": {"b": 0}}, 7246209),
    ({"$**": 1, "z": 1}, {"wildcardProjection": {"a": 0}}, 7246210),
    ({"$**": 1, "a": 1, "b": 1}, {"wildcardProjection": {"c": 1, "a": 0}}, 7246210),
    ({"$**": 1, "a": 1}, {"wildcardProjection": {"a": 0, "b": 1}}, 7246211),
    ({"$**": 1, "a": 1}, {"wildcardProjection": {"a": "x"}}, 7246207),
]


@pytest.mark.parametrize(("key", "options", "code"), INVALID)
def test_invalid_wildcard_specs_are_refused(db, key, options, code):
    fails(lambda: db.command("createIndexes", "c", indexes=[{"key": key, "name": "w", **options}]), code)


def test_invalid_wildcard_messages_are_mongods(db):
    e = fails(lambda: create(db.c, {"$**": 1}, sparse=True), CANNOT_CREATE_INDEX)
    assert e.details["errmsg"] == "Index type 'wildcard' does not support the sparse option"
    e = fails(lambda: create(db.c, {"$**": 1}, wildcardProjection={"a": 1, "b": 0}), 31254)
    assert e.details["errmsg"].endswith("Failed to parse projection: wildcardProjection :: caused by :: Cannot do "
                                        "exclusion on field b in inclusion projection")
    e = fails(lambda: create(db.c, {"$**": 1, "a": 1}), CANNOT_CREATE_INDEX)
    assert e.details["errmsg"].endswith("Compound wildcard indexes on all fields must also specify "
                                        "'wildcardProjection' option")


# --------------------------------------------------------------------------------------------------
# wildcard_index_hint.js
# --------------------------------------------------------------------------------------------------

def test_hinted_wildcard_index(db):
    coll = db.c
    db.create_collection("c")
    fails(lambda: db.command("find", "c", filter={"a": 1}, hint={"$**": 1}), BAD_VALUE)
    create(coll, {"$**": 1})
    coll.insert_many([{"_id": 10, "a": 1, "b": 1, "c": {"d": 1, "e": 1}}, {"_id": 11, "a": 1, "b": 2, "c": {"d": 2, "e": 2}},
                      {"_id": 12, "a": 2, "b": 2, "c": {"d": 1, "e": 2}}, {"_id": 13, "a": 2, "b": 1, "c": {"d": 2, "e": 2}},
                      {"_id": 14, "a": 2, "b": 2, "c": {"e": 2}}])
    assert ids(coll.find({"a": 1}).hint({"$**": 1})) == [10, 11]
    create(coll, {"a": 1})
    assert ids(coll.find({"a": 1}).hint({"$**": 1})) == [10, 11]
    assert ids(coll.find({"a": 1, "_id": 10}).hint({"$**": 1})) == [10]
    assert ids(coll.find({"a": 1}).hint({"a": 1})) == [10, 11]
    assert ids(coll.find({"c.d": 1}).hint({"$**": 1})) == [10, 12]
    create(coll, {"c.$**": 1})
    fails(lambda: db.command("find", "c", filter={"a": 1}, hint={"c.$**": 1}), NO_QUERY_EXECUTION_PLANS)
    assert ids(coll.find({"c.d": 1}).hint({"c.$**": 1})) == [10, 12]
    fails(lambda: db.command("find", "c", filter={"b": 1}, min={"a": 1}, hint={"$**": 1}), 51174)
    assert ids(coll.find({"a": 1, "c.e": 1}).hint({"$**": 1})) == [10]
    assert ids(coll.find({"a": 1}).hint("$**_1")) == [10, 11]
    plan = coll.find({"c.d": 1}).hint("$**_1").explain()["queryPlanner"]["winningPlan"]
    assert plan["inputStage"]["indexName"] == "$**_1"
    assert plan["inputStage"]["keyPattern"] == {"$_path": 1, "c.d": 1}


# --------------------------------------------------------------------------------------------------
# wildcard_index_empty_arrays.js, wildcard_index_equality_to_empty_obj.js
# --------------------------------------------------------------------------------------------------

WILDCARDS = [({"$**": 1}, {}), ({"$**": 1, "other": 1}, {"wildcardProjection": {"other": 0}})]


@pytest.mark.parametrize(("key", "options"), WILDCARDS)
def test_empty_arrays(db, key, options):
    coll = db.c
    create(coll, key, **options)
    coll.insert_many([{"_id": 1, "a": 1, "b": 1, "c": [], "d": {"e": [5, 6]}},
                      {"_id": 2, "a": 2, "b": 2, "c": [1, 2], "d": {"e": []}},
                      {"_id": 3, "a": 1, "b": 2, "c": [3, 4], "d": {"e": [7, 8]}, "f": [{"g": []}]},
                      {"_id": 4, "a": 2, "b": [[]], "c": 1, "d": 4}])
    hint = list(key.items())
    assert ids(coll.find({"c": []}).hint(hint)) == [1]
    assert ids(coll.find({"c.0": 1}).hint(hint)) == [2]
    assert ids(coll.find({"d.e": []}).hint(hint)) == [2]
    assert ids(coll.find({"f.0.g": []}).hint(hint)) == [3]
    assert ids(coll.find({"b": []}).hint(hint)) == [4]


@pytest.mark.parametrize(("key", "options"), WILDCARDS)
def test_equality_to_an_empty_object(db, key, options):
    coll = db.c
    coll.insert_many([{"_id": 0}, {"_id": 1, "a": None}, {"_id": 2, "a": []}, {"_id": 3, "a": {}}, {"_id": 4, "a": [{}]},
                      {"_id": 5, "a": [[{}]]}, {"_id": 6, "a": [1, 2, {}]}, {"_id": 7, "a": {"b": 1}}, {"_id": 8, "a": 3},
                      {"_id": 9, "a": {"b": {}}}, {"_id": 10, "a": [0, {"b": {}}]}])
    create(coll, key, **options)
    hint = list(key.items())
    for flt, expected in (({"a": {}}, [3, 4, 6]), ({"a": {"$lte": {}}}, [3, 4, 6]),
                          ({"a": {"$in": [3, {}]}}, [3, 4, 6, 8]), ({"a.b": {"$eq": {}}}, [9, 10])):
        assert ids(coll.find(flt).hint(hint)) == expected, flt
        assert ids(coll.find(flt).hint([("$natural", 1)])) == expected, flt
        assert ids(coll.find(flt)) == expected, flt
    fails(lambda: list(coll.find({"a": {"$gte": {}}}).hint(hint)), NO_QUERY_EXECUTION_PLANS)
    assert ids(coll.find({"a": {"$gte": {}}})) == [3, 4, 6, 7, 9, 10]


# --------------------------------------------------------------------------------------------------
# wildcard_index_multikey.js (results; the jstest's explain checks are not ported)
# --------------------------------------------------------------------------------------------------

def _multikey_docs():
    docs = []
    for i in range(50):
        v = i
        doc = {"a": [v + 1, v + 2], "b": {"c": [v + 3, v + 4], "d": [{"e": v + 5}]}}
        docs.append(doc)
    return docs


MULTIKEY_SPECS = [
    ({"$**": 1}, None), ({"a.$**": 1}, None), ({"b.$**": 1}, None), ({"b.c.$**": 1}, None), ({"b.d.$**": 1}, None),
    ({"$**": 1}, {"a": 1}), ({"$**": 1}, {"b": 1}), ({"$**": 1}, {"b.d": 1}), ({"$**": 1}, {"a": 1, "b.d": 1}),
    ({"$**": 1}, {"a": 0}), ({"$**": 1}, {"b": 0}), ({"$**": 1}, {"b.c": 0}), ({"$**": 1}, {"a": 0, "b.c": 0}),
    ({"$**": 1, "other": 1}, {"other": 0}), ({"$**": -1, "other": 1}, {"other": 0}), ({"a.$**": 1, "other": 1}, None),
    ({"b.c.$**": 1, "other": -1}, None),
]
OPERATIONS = [{"$gte": 10}, {"$gt": 10}, {"$lt": 40}, {"$lte": 40}, {"$gt": 10, "$lt": 40}, {"$eq": 25},
              {"$in": [5, 15, 35, 40]}, {"$elemMatch": {"$gte": 10, "$lte": 40}}]


@pytest.mark.parametrize(("key", "projection"), MULTIKEY_SPECS)
def test_multikey_queries_answer_as_a_collection_scan(db, key, projection):
    coll = db.c
    coll.insert_many(_multikey_docs())
    create(coll, key, **({"wildcardProjection": projection} if projection else {}))
    for op in OPERATIONS:
        for path in ("a", "b.c", "b.d.e"):
            flt = {path: op}
            assert ids(coll.find(flt)) == ids(coll.find(flt).hint([("$natural", 1)])), flt


@pytest.mark.parametrize(("key", "options"), WILDCARDS)
def test_two_sided_ranges_over_arrays(db, key, options):
    coll = db.c
    create(coll, key, **options)
    coll.insert_one({"a": [-5, 15]})
    assert coll.count_documents({"a": {"$gt": 0, "$lt": 9}}) == 1
    assert coll.count_documents({"a": {"$elemMatch": {"$gt": 0, "$lt": 9}}}) == 0
    coll.insert_one({"b": {"c": {"d": [{"e": {"f": -5}}, {"e": {"f": 15}}]}}})
    assert coll.count_documents({"b.c.d.e.f": {"$gt": 0, "$lt": 9}}) == 1
    assert coll.count_documents({"b.c.d": {"$elemMatch": {"e.f": {"$gt": 0, "$lt": 9}}}}) == 0


@pytest.mark.parametrize(("key", "options"), WILDCARDS)
def test_fieldname_or_array_index_paths(db, key, options):
    coll = db.c
    create(coll, key, **options)
    coll.insert_many([{"_id": 1, "a": [{"b": [{"c": 1}]}]}, {"_id": 2, "a": [{"b": [{"c": 0}, {"c": 1}]}]},
                      {"_id": 3, "a": {"0": [{"b": {"1": {"c": 1}}}, {"d": 1}]}}, {"_id": 4, "a": [{"b": [{"1": {"c": 1}}]}]},
                      {"_id": 5, "a": [{"b": [{"1": {"c": {"2": {"d": [0, 1, 2, 3, {"e": 1}]}}}}]}]}])
    hint = list(key.items())
    assert ids(coll.find({"a.0.b.1.c": 1}).hint(hint)) == [2, 3, 4]
    assert ids(coll.find({"a.0.b.1.c.2.d.3": 3}).hint(hint)) == [5]
    coll.delete_many({})
    coll.insert_many([{"_id": 1, "a": [0, 1, 2]}, {"_id": 2, "a": [1, 2, 3]}, {"_id": 3, "a": [2, 3, 4], "b": [5, 6, 7]},
                      {"_id": 4, "a": [3, 4, 5], "b": [6, 7, 8], "c": {"0": 9}},
                      {"_id": 5, "a": [4, 5, 6], "b": [7, 8, 9], "c": {"0": 10}},
                      {"_id": 6, "a": [5, 6, 7], "b": [8, 9, 10], "c": {"0": 11}}])
    for flt, n in (({"a.0": {"$gt": 1, "$lt": 4}}, 2), ({"a.1": {"$gte": 1, "$lte": 4}}, 4), ({"b.2": {"$in": [5, 9]}}, 1),
                   ({"c.0": {"$in": [10, 11]}}, 2)):
        assert len(ids(coll.find(flt).hint(hint))) == n, flt
        assert len(ids(coll.find(flt))) == n, flt
    trim = {"$or": [{"a.0": {"$gte": 0, "$lt": 3}, "a.1": {"$in": [2, 3, 4]}},
                    {"b.1": {"$gt": 6, "$lte": 9}, "c.0": {"$gt": 9, "$lt": 12}}]}
    assert ids(coll.find(trim)) == [2, 3, 5, 6]


def test_positional_reads_through_nested_arrays(db):
    """A position followed by a nested array: the key is the nested array at the path before it."""
    coll = db.c
    create(coll, {"$**": 1})
    coll.insert_many([{"_id": 1, "c": [[1], 5]}, {"_id": 2, "c": [[{"x": 1}]]}, {"_id": 3, "c": {"0": [1]}},
                      {"_id": 4, "c": [{"0": 1}]}, {"_id": 5, "c": [2, [1]]}])
    for flt in ({"c.0": 1}, {"c.0.x": 1}, {"c.1": 1}, {"c.0": {"$gte": 1}}):
        assert ids(coll.find(flt).hint("$**_1")) == ids(coll.find(flt).hint([("$natural", 1)])), flt


# --------------------------------------------------------------------------------------------------
# wildcard_index_collation.js (the strength-1 part lives in test_jstests_collation.py),
# wildcard_index_partial_index.js, wildcard_index_update.js, wildcard_index_count.js,
# wildcard_index_distinct_scan.js, wildcard_and_with_not.js, wildcard_index_dup_predicates.js
# --------------------------------------------------------------------------------------------------

def test_partial_wildcard_index(db):
    coll = db.c
    create(coll, {"$**": 1}, partialFilterExpression={"a": {"$lte": 1.5}})
    coll.insert_many([{"_id": 1, "a": 1, "x": 5}, {"_id": 2, "a": 2, "x": 5}])
    assert ids(coll.find({"x": 5, "a": {"$lte": 1}})) == [1]
    assert ids(coll.find({"x": 5})) == [1, 2]
    assert ids(coll.find({"x": 5}).hint("$**_1")) == [1]  # a hinted partial index holds only its documents


def test_keys_follow_updates_and_deletes(db):
    coll = db.c
    create(coll, {"$**": 1})
    coll.insert_many([{"_id": 1, "a": {"b": 1}}, {"_id": 2, "a": [{"b": 2}]}])
    coll.update_one({"_id": 1}, {"$set": {"a.b": 3, "c": [1, {"d": 4}]}})
    coll.update_one({"_id": 2}, {"$unset": {"a": 1}, "$set": {"e": "x"}})
    hint = "$**_1"
    assert ids(coll.find({"a.b": 1}).hint(hint)) == []
    assert ids(coll.find({"a.b": 3}).hint(hint)) == [1]
    assert ids(coll.find({"c.d": 4}).hint(hint)) == [1]
    assert ids(coll.find({"a.b": 2}).hint(hint)) == []
    assert ids(coll.find({"e": "x"}).hint(hint)) == [2]
    coll.replace_one({"_id": 2}, {"f": {"g": dt.datetime(2024, 1, 1)}})
    assert ids(coll.find({"f.g": {"$gte": dt.datetime(2023, 1, 1)}}).hint(hint)) == [2]
    coll.delete_one({"_id": 1})
    assert ids(coll.find({"a.b": 3}).hint(hint)) == []


def test_count_distinct_and_aggregate_through_a_wildcard_index(db):
    coll = db.c
    create(coll, {"$**": 1})
    coll.insert_many([{"a": i % 3, "b": {"c": i}} for i in range(12)])
    assert coll.count_documents({"a": 1}) == 4
    assert db.command("count", "c", query={"a": 1}, hint="$**_1")["n"] == 4
    assert sorted(coll.distinct("a", {"b.c": {"$gte": 6}})) == [0, 1, 2]
    assert [d["n"] for d in coll.aggregate([{"$match": {"b.c": {"$lt": 3}}}, {"$count": "n"}], hint="$**_1")] == [3]


def test_not_and_duplicate_predicates(db):
    coll = db.c
    create(coll, {"$**": 1})
    coll.insert_many([{"_id": 1, "a": 1, "b": 1}, {"_id": 2, "a": 2, "b": None}, {"_id": 3, "a": 3},
                      {"_id": 4, "a": [1, 5], "b": {"c": 1}}])
    for flt in ({"a": {"$not": {"$eq": 1}}}, {"a": {"$ne": 1}, "b": {"$exists": True}}, {"b": None},
                {"b": {"$exists": False}}, {"a": {"$gt": 0}, "b": {"$exists": True}}, {"$and": [{"a": 1}, {"a": {"$gt": 0}}]},
                {"a": {"$eq": 1, "$in": [1, 2]}}, {"b": {"$exists": True}}, {"b.c": {"$exists": 1}}):
        assert ids(coll.find(flt)) == ids(coll.find(flt).hint([("$natural", 1)])), flt
    assert ids(coll.find({"b": {"$exists": True}}).hint("$**_1")) == [1, 2, 4]
    fails(lambda: list(coll.find({"b": None}).hint("$**_1")), NO_QUERY_EXECUTION_PLANS)
    fails(lambda: list(coll.find({"b": {"$exists": False}}).hint("$**_1")), NO_QUERY_EXECUTION_PLANS)
    fails(lambda: list(coll.find({"a": {"$ne": 1}}).hint("$**_1")), NO_QUERY_EXECUTION_PLANS)


def test_id_is_left_out_unless_projected(db):
    coll = db.c
    coll.insert_many([{"_id": {"x": 1}, "a": 1}, {"_id": {"x": 2}, "a": 2}])
    create(coll, {"$**": 1})
    fails(lambda: list(coll.find({"_id.x": 1}).hint("$**_1")), NO_QUERY_EXECUTION_PLANS)
    create(coll, {"$**": 1}, name="with_id", wildcardProjection={"_id": 1, "a": 0})
    assert [d["_id"] for d in coll.find({"_id.x": 1}).hint("with_id")] == [{"x": 1}]
    fails(lambda: list(coll.find({"a": 1}).hint("with_id")), NO_QUERY_EXECUTION_PLANS)


def test_list_hide_drop_and_stats(db):
    coll = db.c
    coll.insert_one({"a": {"b": 1}})
    create(coll, {"$**": 1}, wildcardProjection={"a": 1})
    create(coll, {"a.$**": -1})
    listed = {i["name"]: i for i in coll.list_indexes()}
    assert listed["$**_1"]["wildcardProjection"] == {"a": 1} and listed["a.$**_-1"]["key"] == {"a.$**": -1}
    # the same key with another projection is another index; the same projection is "already exists"
    assert create(coll, {"$**": 1}, wildcardProjection={"a": 1}) == "$**_1"
    fails(lambda: create(coll, {"$**": 1}, wildcardProjection={"b": 1}), 86)
    db.command("collMod", "c", index={"name": "$**_1", "hidden": True})
    fails(lambda: list(coll.find({"a.b": 1}).hint("$**_1")), BAD_VALUE)
    assert ids(coll.find({"a.b": 1})) == [coll.find_one()["_id"]]
    db.command("collMod", "c", index={"name": "$**_1", "hidden": False})
    assert len(list(coll.find({"a.b": 1}).hint("$**_1"))) == 1
    stats = {s["name"]: s for s in coll.aggregate([{"$indexStats": {}}])}
    assert stats["$**_1"]["accesses"]["ops"] >= 1 and stats["$**_1"]["key"] == {"$**": 1}
    assert "$**_1" in db.command("collStats", "c")["indexSizes"]
    db.command("dropIndexes", "c", index={"$**": 1})
    db.command("dropIndexes", "c", index="a.$**_-1")
    assert [i["name"] for i in coll.list_indexes()] == ["_id_"]


def test_compound_wildcard_index_reads(db):
    coll = db.c
    coll.insert_many([{"_id": i, "k": i % 2, "a": {"x": i, "y": [i, i + 1]}, "other": i % 3} for i in range(10)])
    create(coll, {"k": 1, "a.$**": 1})
    create(coll, {"a.$**": 1, "other": 1})
    for flt in ({"k": 1, "a.x": {"$gte": 4}}, {"a.y": 5}, {"a.y": {"$in": [1, 9]}, "other": 0}, {"k": 0, "a.y": {"$exists": True}}):
        assert ids(coll.find(flt)) == ids(coll.find(flt).hint([("$natural", 1)])), flt
    assert ids(coll.find({"k": 1, "a.x": {"$gte": 4}}).hint("k_1_a.$**_1")) == [5, 7, 9]
    assert ids(coll.find({"a.y": 5}).hint("a.$**_1_other_1")) == [4, 5]


def test_return_key_and_index_key_meta(db):
    """wildcard_index_return_key.js: a wildcard entry's key is {$_path: <path>, <path>: <value>} in
    returnKey and in {$meta: "indexKey"} alike (the entry the scan met); a collection scan shows none."""
    c = db.wildcard_return_key
    create(c, {"$**": 1})
    c.insert_many([{"a": 1, "b": 2, "c": {"d": 2, "e": 1}}, {"a": 2, "b": 2, "c": {"d": 1, "e": 2}},
                   {"a": 2, "b": 1, "c": {"d": 2, "e": 2}}, {"a": 1, "b": 1, "c": {"e": 2}}])

    def keys(flt, **kw):
        return list(c.find(flt, return_key=True, **kw))

    def meta_keys(flt, **kw):
        return [d.get("k") for d in c.find(flt, {"_id": 0, "k": {"$meta": "indexKey"}}, **kw)]

    assert keys({"a": 1}) == [{"$_path": "a", "a": 1}] * 2 == meta_keys({"a": 1})
    assert keys({"c.e": 1}) == [{"$_path": "c.e", "c.e": 1}] == meta_keys({"c.e": 1})
    create(c, {"a": 1})
    assert keys({"a": 1}, hint=[("$**", 1)]) == [{"$_path": "a", "a": 1}] * 2
    c.insert_many([{"a": 2, "b": 2, "c": {"e": 2}, "f": [1, 2, 3]}, {"a": 2, "b": 2, "c": {"e": 2}, "g": [{"h": 1}, {"i": 2}]}])
    assert keys({"f": 1}) == [{"$_path": "f", "f": 1}] == meta_keys({"f": 1})
    assert keys({"g.h": 1}) == [{"$_path": "g.h", "g.h": 1}] == meta_keys({"g.h": 1})
    c.drop_indexes()
    create(c, {"c.$**": 1})
    assert keys({"c.d": 1}) == [{"$_path": "c.d", "c.d": 1}]
    assert keys({"a": 1, "b": 1}) == [{}] and meta_keys({"a": 1, "b": 1}) == [None]


def test_timeseries_meta_wildcard_and_measurement_refusal(db):
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    db.ts.create_index([("m.$**", 1)])
    now = dt.datetime(2024, 5, 1)
    db.ts.insert_many([{"t": now, "m": {"a": 1, "b": {"c": i}}, "v": i} for i in range(4)])
    assert sorted(d["v"] for d in db.ts.find({"m.b.c": {"$gte": 2}}).hint([("m.$**", 1)])) == [2, 3]
    fails(lambda: db.ts.create_index([("v.$**", 1)]), CANNOT_CREATE_INDEX)


# --------------------------------------------------------------------------------------------------
# the differential property
# --------------------------------------------------------------------------------------------------

NAMES = ["a", "b", "c", "0", "1", "x.y"]
SCALARS = st.one_of(
    st.none(), st.integers(-3, 3), st.sampled_from([1.5, -0.5, float("inf"), Int64(2)]), st.booleans(),
    st.sampled_from(["x", "y", "X", ""]), st.just(dt.datetime(2024, 1, 1)),
)
def _nested(inner: st.SearchStrategy) -> st.SearchStrategy:
    """Arrays and sub-documents of ``inner`` (a named function: Hypothesis reads a lambda's source to
    check that it uses its argument, and misreads one spanning lines inside a call)."""
    return st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(NAMES), inner, max_size=3))


VALUES = st.recursive(SCALARS, _nested, max_leaves=8)
DOCS = st.lists(st.dictionaries(st.sampled_from(["a", "b", "c"]), VALUES, max_size=3), min_size=1, max_size=8)
PATHS = st.sampled_from(["a", "b", "c", "a.a", "a.b", "a.b.c", "b.a", "a.0", "a.1", "b.0.a", "a.0.b", "_id", "_id.a",
                         "c.c"])
QUERY_VALUES = st.one_of(SCALARS, st.sampled_from([{}, [], {"a": 1}, [1], [[]]]))
SPECS = st.sampled_from([
    ({"$**": 1}, {}), ({"$**": -1}, {}), ({"a.$**": 1}, {}), ({"a.b.$**": 1}, {}),
    ({"$**": 1}, {"wildcardProjection": {"a": 1}}), ({"$**": 1}, {"wildcardProjection": {"a.b": 1, "c": 1}}),
    ({"$**": 1}, {"wildcardProjection": {"a": 0}}), ({"$**": 1}, {"wildcardProjection": {"a.b": 0}}),
    ({"$**": 1}, {"wildcardProjection": {"_id": 1, "b": 0}}), ({"$**": 1, "c": 1}, {"wildcardProjection": {"c": 0}}),
    ({"c": -1, "a.$**": 1}, {}), ({"$**": 1}, {"collation": {"locale": "en", "strength": 1}}),
])


@st.composite
def filters(draw):
    path = draw(PATHS)
    op = draw(st.sampled_from(["eq", "$eq", "$gt", "$gte", "$lt", "$lte", "$in", "$exists", "$ne", "$not", "$nin",
                               "$elemMatch", "$elemMatch-object", "prefix"]))
    value = draw(QUERY_VALUES)
    if op == "eq":
        return {path: value}
    if op == "$elemMatch":  # (the value form: a comparison of each element)
        inner = draw(st.sampled_from(["$eq", "$gte", "$lt", "$in"]))
        return {path: {"$elemMatch": {inner: [value] if inner == "$in" else value}}}
    if op == "$elemMatch-object":
        return {path: {"$elemMatch": {draw(st.sampled_from(["a", "b", "0"])): value}}}
    if op == "prefix":  # a compound index's regular field alone, or beside a wildcard path
        prefix = {"c": {draw(st.sampled_from(["$eq", "$gte", "$lt", "$ne"])): value}}
        return prefix if draw(st.booleans()) else {**prefix, path: value}
    if op in ("$in", "$nin"):
        return {path: {op: draw(st.lists(QUERY_VALUES, max_size=3))}}
    if op == "$exists":
        return {path: {"$exists": draw(st.booleans())}}
    if op == "$not":
        return {path: {"$not": {"$gt": value}}}
    return {path: {op: value}}


def _served(flt: dict, key: dict, options: dict) -> bool:
    """Whether the read must be answerable through the index when hinted (mongod plans it)."""
    if len(flt) > 1:
        return False
    ((path, cond),) = flt.items()
    projection = options.get("wildcardProjection")
    if isinstance(cond, dict) and "$elemMatch" in cond:
        return False
    if len(key) > 1 or "collation" in options or path.startswith("_id") or any(p.isdigit() for p in path.split(".")):
        return False
    if "a.$**" in key and not path.startswith("a"):
        return False
    if "a.b.$**" in key and not path.startswith("a.b"):
        return False
    if projection == {"a": 1} and not path.startswith("a"):
        return False
    if projection == {"a": 0} and path.startswith("a") or projection == {"_id": 1, "b": 0} and path.startswith("b"):
        return False
    if projection is not None and list(projection) in (["a.b", "c"], ["a.b"]):
        return False
    if isinstance(cond, dict) and set(cond) == {"$exists"}:
        return cond["$exists"] is True and projection is None
    value = cond["$eq"] if isinstance(cond, dict) and set(cond) == {"$eq"} else cond
    if isinstance(cond, dict) and set(cond) & {"$ne", "$not", "$nin", "$gt", "$gte", "$lt", "$lte", "$in"}:
        op = next(iter(cond))
        if op in ("$gt", "$gte", "$lt", "$lte"):
            return cond[op] is not None and not isinstance(cond[op], (dict, list))
        if op == "$in":
            return all(v is not None and not isinstance(v, (dict, list)) for v in cond[op])
        return False
    return value is not None and not isinstance(value, (dict, list))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(docs=DOCS, spec=SPECS, flts=st.lists(filters(), min_size=1, max_size=4), split=st.integers(0, 8),
       direction=st.sampled_from([1, -1]))
def test_wildcard_reads_equal_collection_scans(db, docs, spec, flts, split, direction):
    """Random nested documents (arrays, nulls, numeric field names, mixed types), random wildcard specs
    (projections, compound, collation) built before or after part of the documents, random single-path
    filters: the planner's answer and a hinted wildcard read equal a collection scan's; a hinted read
    of a shape mongod's planner answers through the index must not be refused."""
    key, options = spec
    db.drop_collection("p")
    coll = db.p
    with_ids = [{**d, "_id": i} for i, d in enumerate(docs)]
    if with_ids[:split]:
        coll.insert_many(with_ids[:split])
    name = create(coll, key, **options)
    if with_ids[split:]:
        coll.insert_many(with_ids[split:])
    coll.update_many({"$expr": {"$isNumber": "$b"}}, {"$inc": {"b": 1}})
    collation = options.get("collation")

    def scan(flt, **kw):
        cursor = coll.find(flt, **kw) if collation is None else coll.find(flt, collation=collation, **kw)
        return sorted(d["_id"] for d in cursor)

    from tidemark.query.collation import parse_collation
    from tidemark.query.sort import make_sort_key

    def sorted_scan(flt, path, expected, **kw):
        """The documents of a read sorted on one path (the index may give that order): the same set as
        the collection scan's, in an order the sort accepts (ties in any order)."""
        sort = [(path, direction)]
        cursor = coll.find(flt, sort=sort, **kw) if collation is None else \
            coll.find(flt, sort=sort, collation=collation, **kw)
        try:
            docs_out = list(cursor)
        except OperationFailure as e:
            # a numeric field name inside an array makes the sort path ambiguous (mongod's 16746),
            # whatever the plan: the collection scan refuses it too
            assert e.code == 16746, e.details
            with pytest.raises(OperationFailure):
                list(coll.find(flt, sort=sort, hint=NATURAL))
            return expected
        sort_key = make_sort_key(sort, parse_collation(collation, "collation") if collation else None)
        keys = [sort_key(d) for d in docs_out]
        assert keys == sorted(keys), (flt, sort, docs_out)
        return sorted(d["_id"] for d in docs_out)

    for flt in flts:
        expected = scan(flt, hint=[("$natural", 1)])
        assert scan(flt) == expected, flt
        path = next(iter(flt))
        assert sorted_scan(flt, path, expected) == expected, flt
        try:
            hinted = scan(flt, hint=name)
        except OperationFailure as e:
            assert e.code == NO_QUERY_EXECUTION_PLANS, (flt, e.details)
            assert not _served(flt, key, options), flt
            continue
        assert hinted == expected, flt
        assert sorted_scan(flt, path, expected, hint=name) == expected, flt


# --------------------------------------------------------------------------------------------------
# Ports of the rest of jstests/core/index/wildcard/*.js (results and error codes, not explain shapes).
# Every read is checked against the same read hinted {$natural: 1} (a collection scan).
# --------------------------------------------------------------------------------------------------

NATURAL = [("$natural", 1)]


def _sorted_docs(docs):
    return sorted(docs, key=repr)


def same_as_collscan(coll, flt=None, projection=None, *, sort=None, hint=None, collation=None):
    """The documents ``find`` returns (hinted ``hint`` when given, else as planned) equal a collection
    scan's, in the same order when ``sort`` is given (``_id`` breaks ties, so the order is one);
    returns them."""
    kw: dict = {}
    if sort is not None:
        kw["sort"] = list(sort.items()) + ([] if "_id" in sort else [("_id", 1)])
    if collation is not None:
        kw["collation"] = collation
    expected = list(coll.find(flt, projection, hint=NATURAL, **kw))
    got = list(coll.find(flt, projection, hint=hint, **kw)) if hint is not None else list(coll.find(flt, projection, **kw))
    if sort is None:
        assert _sorted_docs(got) == _sorted_docs(expected), (flt, projection, hint)
    else:
        assert got == expected, (flt, sort, projection, hint)
    return got


def _create_all(coll, specs):
    """createIndex for each (key pattern, options) pair; returns their names."""
    return [create(coll, key, **options) for key, options in specs]


# wildcard_index_collation.js ----------------------------------------------------------------------

CI = {"locale": "en_US", "strength": 1}


@pytest.mark.parametrize(("key", "options"), [({"$**": 1}, {}), ({"$**": 1, "b": 1}, {"wildcardProjection": {"b": 0}})])
def test_collation_applies_to_values_not_paths(db, key, options):
    db.create_collection("c", collation=CI)
    coll = db.c
    name = create(coll, key, **options)
    listed = next(i for i in coll.list_indexes() if i["name"] == name)
    assert listed["collation"]["locale"] == "en_US" and listed["collation"]["strength"] == 1
    docs = [{"a": {"b": "string", "c": "STRING"}, "d": "sTrInG", "e": 5},
            {"a": {"b": "STRING", "c": "string"}, "d": "StRiNg", "e": 5},
            {"A": {"B": "string", "C": "STRING"}, "d": "sTrInG", "E": 5},
            {"A": {"B": "STRING", "C": "string"}, "d": "StRiNg", "E": 5}]
    coll.insert_many([dict(d) for d in docs])
    no_id = {"_id": 0}
    for flt, expected in (({"a.b": "string"}, docs[:2]), ({"A.B": "string"}, docs[2:]),
                          ({"$or": [{"a.c": "string"}, {"A.C": "string"}]}, docs), ({"d": "string"}, docs),
                          ({"e": 5}, docs[:2]), ({"E": 5}, docs[2:])):
        got = same_as_collscan(coll, flt, no_id, collation=CI)
        assert _sorted_docs(got) == _sorted_docs(expected), flt
        assert _sorted_docs(coll.find(flt, no_id)) == _sorted_docs(expected), flt  # the collection's collation
    for flt, proj in (({"e": 5}, {"_id": 0, "e": 1}), ({"E": 5}, {"_id": 0, "E": 1}), ({"e": 5}, {"_id": 0, "E": 1})):
        same_as_collscan(coll, flt, proj, collation=CI)


# wildcard_index_count.js, compound_wildcard_index_count.js -------------------------------------

@pytest.mark.parametrize(("key", "options"), [({"$**": 1}, {}), ({"$**": -1, "b": -1}, {"wildcardProjection": {"b": 0}})])
def test_count_through_a_wildcard_index(db, key, options):
    coll = db.c
    coll.insert_many([{"a": 3}, {"a": None}, {"a": [-1, 0]}, {"a": [4, -3, 5]}, {}, {"a": {"b": 4}}, {"a": []},
                      {"a": [[], {}]}, {"a": {}}])
    create(coll, key, **options)
    for flt, n in (({"a": {"$gt": 0}}, 2), ({"a": {"$in": [3, 4]}}, 2), ({"a": {"$eq": []}}, 2), ({"a": {"$eq": {}}}, 2),
                   ({"a": {"b": 4}}, 1), ({"a": [-1, 0]}, 1), ({}, 9)):
        assert coll.count_documents(flt) == n, flt
        assert db.command("count", "c", query=flt)["n"] == n, flt
        assert len(same_as_collscan(coll, flt)) == n, flt
        assert [d["n"] for d in coll.aggregate([{"$match": flt}, {"$count": "n"}])] == [n], flt


@pytest.mark.parametrize("doc", [
    {"_id": 269, "obj": {"obj": {"date": dt.datetime(2019, 6, 24, 22, 40, 6, 624000),
                                 "obj": {"_id": 273, "str": "Zimbabwe", "date": None}}}},
    {"_id": 269, "obj": {"obj": {"date": dt.datetime(2019, 6, 24, 22, 40, 6, 624000),
                                 "obj": {"_id": 273, "str": "Zimbabwe", "date": None, "array": None,
                                         "obj": {"_id": 274, "str": "partnerships", "array": [],
                                                 "date": dt.datetime(2019, 7, 24, 16, 8, 45, 196000)}}}}},
])
def test_count_on_the_regular_prefix_of_a_compound_wildcard_index(db, doc):
    coll = db.c
    create(coll, {"obj.obj.date": -1, "obj.obj.obj.$**": -1})
    coll.insert_one(doc)
    flt = {"obj.obj.date": {"$lte": dt.datetime(2019, 10, 6, 22, 12, 37, 493000)}}
    assert coll.count_documents(flt) == 1
    assert [d["n"] for d in coll.aggregate([{"$match": flt}, {"$count": "n"}])] == [1]
    assert len(same_as_collscan(coll, flt)) == 1
    assert len(same_as_collscan(coll, flt, hint="obj.obj.date_-1_obj.obj.obj.$**_-1")) == 1


# wildcard_index_dedup.js -------------------------------------------------------------------------

def test_scans_of_several_paths_return_each_document_once(db):
    coll = db.c
    create(coll, {"$**": 1})
    create(coll, {"a.$**": 1, "post": 1})
    coll.insert_one({"a": {"b": 1, "c": {"f": 1, "g": 1}, "h": [1, 2, 3]}, "d": {"e": [1, 2, 3]}, "post": 1})
    for flt, hint in (({"a": {"$exists": True}}, "$**_1"), ({"d": {"$exists": True}}, "$**_1"),
                      ({"a.c": {"$exists": True}}, "$**_1"), ({"a.c": {"$exists": True}, "post": 1}, "a.$**_1_post_1"),
                      ({"a.h": {"$exists": True}, "post": 1}, "a.$**_1_post_1")):
        assert len(same_as_collscan(coll, flt, hint=hint)) == 1, flt


# wildcard_index_distinct_scan.js (results only) ---------------------------------------------------

DISTINCT_VALUES = [1, 2, "3", None, {"c": 5, "d": 6}, {"d": 6, "c": 5}, {}, 9, 10, {"e": 11}]
DISTINCT_CASES = [
    ("a", [1, 2, "3", None, {"c": 5, "d": 6}, {"d": 6, "c": 5}, {}, 9, 10, {"e": 11}]),
    ("a", [1, 2, "3", None, {"c": 5, "d": 6}, {"d": 6, "c": 5}, {}, [], [9, 10], [{"e": 11}]]),
    ("a.x", [{"x": v} for v in DISTINCT_VALUES[:7]] + [{"x": 9}, {"x": 10}, {"x": {"e": 11}}]),
    ("a.x", [[{"x": v}] for v in DISTINCT_VALUES[:7]] + [[{"x": []}], [{"x": 9}, {"x": 10}], [{"x": [{"e": 11}]}]]),
]


def _values_key(values):
    return sorted(repr(v) for v in values)


@pytest.mark.parametrize(("field", "values"), DISTINCT_CASES)
def test_distinct_through_a_wildcard_index(db, field, values):
    from bson.max_key import MaxKey
    from bson.min_key import MinKey

    coll = db.c
    coll.insert_many([{"a": values[i % len(values)], "b": i % len(values), "c": -i} for i in range(200)])
    offset = len(values) // 2
    cases = [({}, DISTINCT_VALUES, None), ({field: {"$lt": 3}}, [1, 2], None),
             ({"b": {"$gte": offset}}, DISTINCT_VALUES[offset:], None),
             ({field: {"$gte": {"c": 5}}}, [{"c": 5, "d": 6}, {"d": 6, "c": 5}, {"e": 11}], None),
             ({field: {"$gte": MinKey(), "$lte": MaxKey()}}, DISTINCT_VALUES, None),
             ({"c": {"$lt": 0}}, DISTINCT_VALUES, {"c": 0})]
    for key, projection in (({"$**": 1}, {}), ({"$**": 1, "other": 1}, {"other": 0})):
        for flt, expected, extra in cases:
            coll.drop_indexes()
            assert _values_key(coll.distinct(field, flt)) == _values_key(expected), flt
            wcp = {**projection, **(extra or {})}
            create(coll, key, **({"wildcardProjection": wcp} if wcp else {}))
            assert _values_key(coll.distinct(field, flt)) == _values_key(expected), (key, flt)
            same_as_collscan(coll, flt)


# wildcard_index_dup_predicates.js -----------------------------------------------------------------

DUP_SPECS = [({"$**": 1}, {}), ({"$**": 1, "c": 1}, {"wildcardProjection": {"c": 0}}),
             ({"$**": -1, "c": 1}, {"wildcardProjection": {"c": 0}})]


@pytest.mark.parametrize(("flt", "n"), [
    ({"$and": [{"a": {"$type": "object"}}, {"a": {"$type": "object"}}, {"a.b": "foo"}]}, 1),
    ({"$and": [{"$expr": {"$gt": ["$a", {"$literal": {}}]}}, {"$expr": {"$gt": ["$a", {"$literal": {}}]}}, {"a.b": "foo"}]}, 1),
    ({"$and": [{"a": {"$gt": {}}}, {"a": {"$gt": {}}}, {"a.b": "foo"}]}, 1),
    ({"$and": [{"a": {"$ne": 3}}, {"a": {"$ne": 3}}, {"a.b": "foo"}]}, 1),
    ({"$and": [{"a": {"$nin": [3, 4, 5]}}, {"a": {"$nin": [3, 4, 5]}}, {"a.b": "foo"}]}, 1),
    ({"$and": [{"a": {"$exists": True}}, {"a": {"$exists": True}}, {"a.b": "foo"}]}, 1),
    ({"$and": [{"a": {"$elemMatch": {"$gt": {}}}}, {"a": {"$elemMatch": {"$gt": {}}}}, {"a.b": "foo"}]}, 0),
])
def test_duplicate_predicates(db, flt, n):
    for key, options in DUP_SPECS:
        db.drop_collection("c")
        name = create(db.c, key, **options)
        db.c.insert_one({"a": {"b": "foo"}})
        assert len(same_as_collscan(db.c, flt)) == n
        assert len(same_as_collscan(db.c, flt, hint=name)) == n


# wildcard_index_minmax.js -------------------------------------------------------------------------

@pytest.mark.parametrize(("key", "options"), [({"$**": 1}, {}), ({"a": 1, "$**": -1}, {"wildcardProjection": {"a": 0}}),
                                              ({"$**": 1, "other": 1}, {"wildcardProjection": {"other": 0}})])
def test_min_max_refused_on_wildcard_indexes(db, key, options):
    coll = db.c
    coll.insert_many([{"a": 1, "b": 1}, {"a": 1, "b": 2}, {"a": 2, "b": 1}, {"a": 2, "b": 2}])
    create(coll, {"a": 1})
    create(coll, key, **options)
    for extra in ({"min": {"a": 0.5}}, {"max": {"a": 1.5}}, {"min": {"a": 0.5}, "max": {"a": 1.5}},
                  {"filter": {"a": 2}, "min": {"a": 1}}, {"filter": {"a": 1}, "max": {"a": 1.5}},
                  {"filter": {"a": 1}, "min": {"a": 0.5}, "max": {"a": 1.5}}, {"filter": {"a": 1}, "min": {"a": 1}},
                  {"filter": {"a": 1}, "max": {"a": 1}}, {"filter": {"a": 1}, "min": {"a": 1}, "max": {"a": 1}}):
        fails(lambda extra=extra: db.command("find", "c", hint=key, **extra), 51174)
    got = list(coll.find({}, {"_id": 0}).min([("a", 0.5)]).max([("a", 1.5)]).hint([("a", 1)]))
    assert _sorted_docs(got) == _sorted_docs([{"a": 1, "b": 1}, {"a": 1, "b": 2}])


# wildcard_index_nonblocking_sort.js (results and order) --------------------------------------------

@pytest.mark.parametrize(("key", "options"), [({"$**": 1}, {"wildcardProjection": {"excludedField": 0}}),
                                              ({"$**": 1, "excludedField": 1}, {"wildcardProjection": {"excludedField": 0}})])
def test_sorted_reads_equal_collection_scans(db, key, options):
    coll = db.c
    create(coll, key, **options)
    coll.insert_many([{"a": i, "b": -i, "x": [123], "excludedField": i} for i in range(50)])
    for direction in (1, -1):
        for proj in (None, {"_id": 0, "a": 1}):
            for flt, sort in (({"a": {"$gte": 0}}, {"a": direction}), ({"a": {"$gte": 0}, "x": 123}, {"a": direction}),
                              ({"a": {"$gte": 0}}, {"a": direction, "b": direction}),
                              ({"a": {"$gte": 0}}, {"a": direction, "b": -direction}),
                              ({"a": {"$gte": 0}}, {"a": -direction, "b": direction}),
                              ({"a": {"$exists": True}}, {"a": direction}), ({}, {"a": direction}),
                              ({"a": {"$gte": 0}, "excludedField": {"$gte": 0}}, {"a": direction, "excludedField": direction}),
                              ({"excludedField": {"$gte": 0}}, {"a": direction, "excludedField": direction}),
                              ({"x": 123}, {"a": direction}), ({"x": {"$elemMatch": {"$eq": 123}}}, {"x": direction}),
                              ({"x": {"$elemMatch": {"$eq": 123}}}, {"a": direction})):
                # (_id tie-breaking is only added when the projection keeps the order checkable)
                got = list(coll.find(flt, proj, sort=list(sort.items())))
                expected = list(coll.find(flt, proj, sort=list(sort.items()), hint=NATURAL))
                if proj is None and set(sort) & {"a", "excludedField"}:
                    assert got == expected, (flt, sort)  # a is unique: the order is one
                else:
                    assert _sorted_docs(got) == _sorted_docs(expected), (flt, sort)


# wildcard_index_partial_index.js ------------------------------------------------------------------

@pytest.mark.parametrize(("key", "options"), [
    ({"$**": 1}, {"partialFilterExpression": {"a": {"$lte": 1.5}}}),
    ({"x.$**": 1}, {"partialFilterExpression": {"a": {"$lte": 1.5}}}),
    ({"$**": 1, "other": 1}, {"partialFilterExpression": {"a": {"$lte": 1.5}}, "wildcardProjection": {"other": 0}}),
    ({"a": 1, "$**": -1, "other": 1}, {"partialFilterExpression": {"a": {"$lte": 1.5}},
                                       "wildcardProjection": {"a": 0, "other": 0}}),
    ({"a.$**": -1, "other": 1}, {"partialFilterExpression": {"a": {"$lte": 1.5}}}),
    ({"x.$**": 1, "other": 1}, {"partialFilterExpression": {"a": {"$lte": 1.5}}}),
])
def test_partial_wildcard_indexes(db, key, options):
    coll = db.c
    create(coll, key, **options)
    coll.insert_many([{"x": 5, "a": 2}, {"x": 6, "a": 1}])
    for flt, n in (({"x": 6, "a": 1}, 1), ({"x": {"$gt": 1}, "a": 1}, 1), ({"x": 6, "a": {"$lte": 1}}, 1),
                   ({"x": 6, "a": {"$lt": 1.6}}, 1), ({"x": 6}, 1), ({"a": {"$gte": 0}}, 2)):
        assert len(same_as_collscan(coll, flt)) == n, flt


def test_partial_wildcard_index_and_null_equality(db):
    coll = db.c
    create(coll, {"$**": 1}, partialFilterExpression={"x": 1})
    coll.insert_one({"x": 1})
    for _ in range(2):
        assert len(same_as_collscan(coll, {"x": 1, "y": 1})) == 0
    assert len(same_as_collscan(coll, {"x": 1, "y": None})) == 1


# wildcard_index_projection.js ---------------------------------------------------------------------

def test_exclusion_projection_that_includes_id(db):
    coll = db.c
    create(coll, {"$**": 1}, wildcardProjection={"name": 0, "type": 0, "_id": 1})
    listed = next(i for i in coll.list_indexes() if i["name"] == "$**_1")
    assert listed["wildcardProjection"] == {"name": 0, "type": 0, "_id": 1}
    coll.insert_many([{"name": "Ted", "type": "Person", "_id": 1}, {"name": "Bernard", "type": "Person", "_id": 2}])
    assert [d["_id"] for d in same_as_collscan(coll, {"_id": {"$eq": 1}}, hint="$**_1")] == [1]
    assert [d["_id"] for d in same_as_collscan(coll, {"_id": {"$eq": 1}})] == [1]
    fails(lambda: list(coll.find({"name": "Ted"}).hint("$**_1")), NO_QUERY_EXECUTION_PLANS)


# wildcard_index_type.js ---------------------------------------------------------------------------

def _type_cases():
    from bson.binary import Binary
    from bson.code import Code
    from bson.regex import Regex
    from bson.timestamp import Timestamp

    return [
        ({"a": "a"}, {"a": {"$type": "string"}}, True), ({"a": 1.1}, {"a": {"$type": "double"}}, True),
        ({"a": True}, {"a": {"$type": "bool"}}, True), ({"a": "a", "b": 1.1, "c": True}, {"a": {"$type": "string"}}, True),
        ({"a": "a", "b": 1.1, "c": True}, {"a": {"$type": "string"}, "b": {"$type": "double"}}, True),
        ({"a": "a", "b": "b", "c": True}, {"a": {"$type": "string"}, "b": {"$type": "double"}}, False),
        ({"a": {"": ""}}, {"a": {"$type": "object"}}, True), ({"a": {}}, {"a": {"$type": "object"}}, True),
        ({"b": {"a": {}}}, {"b.a": {"$type": "object"}}, True),
        ({"a": [{"b": 2}, {"c": 3}, {"d": 4}]}, {"$and": [{"a": {"$type": "object"}}, {"a": {"$size": Int64(3)}}]}, True),
        ({"a": {"b": "foo"}}, {"$and": [{"a": {"$type": "object"}}, {"a.b": "foo"}]}, True),
        ({"a": [[]]}, {"a": {"$type": "array"}}, True), ({"a": [["c"]]}, {"a": {"$type": "array"}}, True),
        ({"a": Regex("r")}, {"a": {"$type": "regex"}}, True), ({"a": None}, {"a": {"$type": "null"}}, True),
        ({"a": None}, {"a": {"$type": "undefined"}}, False), ({"a": Code("var a = 0;")}, {"a": {"$type": "javascript"}}, True),
        ({"a": Binary(b"", 0)}, {"a": {"$type": "binData"}}, True), ({"a": Timestamp(1, 1)}, {"a": {"$type": "timestamp"}}, True),
        ({"a": Timestamp(0x80008000, 0)}, {"a": {"$type": "timestamp"}}, True),
        ({"a": Timestamp(0x80008000, 0)}, {"a": {"$type": "date"}}, False),
        ({"a": dt.datetime(2024, 1, 1)}, {"a": {"$type": "date"}}, True),
        ({"a": dt.datetime(2024, 1, 1)}, {"a": {"$type": "timestamp"}}, False),
    ]


def test_type_queries(db):
    for doc, flt, match in _type_cases():
        for key, options in ({"$**": 1}, {}), ({"$**": 1, "other": 1}, {"wildcardProjection": {"other": 0}}):
            db.drop_collection("c")
            create(db.c, key, **options)
            db.c.insert_one(dict(doc))
            assert len(same_as_collscan(db.c, flt)) == (1 if match else 0), (doc, flt)


# wildcard_index_update.js -------------------------------------------------------------------------

def test_compound_and_nested_wildcard_keys_follow_updates(db):
    coll = db.c
    names = _create_all(coll, [({"a.b.c.d.$**": 1}, {}), ({"a.b.c.d.$**": 1, "other": 1}, {}),
                               ({"pre": 1, "a.b.c.d.$**": 1, "other": 1}, {}), ({"pre": 1, "a.b.c.d.$**": -1}, {})])
    coll.insert_one({"_id": 0, "e": 1})

    def check():
        assert db.command("validate", "c", full=True)["valid"] is True
        for flt in ({"a.b.c.d.e": 1}, {"a.b.c.d.e": {"$exists": True}}, {"pre": 1}, {"pre": 1, "a.b.c.d.e": 1},
                    {"other": 1, "a.b.c.d.e": 1}):
            for name in names:
                try:
                    same_as_collscan(coll, flt, hint=name)
                except OperationFailure as e:
                    assert e.code == NO_QUERY_EXECUTION_PLANS, (flt, name, e.details)
            same_as_collscan(coll, flt)

    check()
    for update in ({"a.e": 1}, {"a.b.e": 1}, {"a.b.c.e": 1}, {"a.b.c.d.e": 1}, {"pre": 1}, {"other": 1}):
        coll.update_one({"_id": 0}, {"$set": update})
        check()
    assert len(same_as_collscan(coll, {"pre": 1, "a.b.c.d.e": 1}, hint="pre_1_a.b.c.d.$**_1_other_1")) == 1


# wildcard_index_cached_plans.js (results only) ---------------------------------------------------

@pytest.mark.parametrize("key", [{"b.$**": 1}, {"b.$**": 1, "other": 1}])
def test_repeated_reads_and_null_equality(db, key):
    coll = db.c
    create(coll, key)
    create(coll, {"a": 1})
    coll.insert_many([{"a": 1} for _ in range(1000)])
    coll.insert_one({"a": 1, "b": 1})
    for _ in range(3):
        assert len(same_as_collscan(coll, {"a": 1, "b": 1})) == 1
    for _ in range(2):
        assert len(same_as_collscan(coll, {"a": 1, "b": None})) == 1000
    db.drop_collection("c")
    db.create_collection("c", collation=CI)
    create(coll, {"b.$**": 1})
    coll.insert_many([{"a": 5, "b": 5}, {"a": 5, "b": "A STRING"}, {"a": 5, "b": "a string"}])
    fr = {"locale": "fr"}
    assert len(same_as_collscan(coll, {"a": 5, "b": 5}, collation=fr)) == 1
    assert len(same_as_collscan(coll, {"a": 5, "b": "a string"}, collation=fr)) == 1
    assert len(same_as_collscan(coll, {"a": 5, "b": "a string"})) == 2  # the collection's strength 1
    db.drop_collection("c")
    create(coll, {"$**": 1}, partialFilterExpression={"a": {"$lte": 5}})
    coll.insert_many([{"a": 4}, {"a": 100}])
    assert len(same_as_collscan(coll, {"a": 4})) == 1
    assert len(same_as_collscan(coll, {"a": 100})) == 1


# wildcard_index_covered_queries.js (results only) ------------------------------------------------

@pytest.mark.parametrize(("key", "options"), [({"$**": 1}, {}), ({"a.$**": 1, "other": 1}, {}),
                                              ({"$**": 1, "other": 1}, {"wildcardProjection": {"other": 0}})])
def test_covered_shapes_answer_as_collection_scans(db, key, options):
    coll = db.c
    coll.insert_many([{"a": {"b": i, "c": f"{i + 1}"}, "d": i + 2, "other": i + 3} for i in range(200)])
    create(coll, {"$**": 1})
    create(coll, key, **options)
    for flt, proj in (({"a.b": 10}, {"_id": 0, "a.b": 1}), ({"a.c": "10"}, {"_id": 0, "a.c": 1}),
                      ({"a.b": {"$gt": 10, "$lt": 99}}, {"_id": 0, "a.b": 1}),
                      ({"a.c": {"$gt": "10", "$lt": "99"}}, {"_id": 0, "a.c": 1}),
                      ({"a.b": {"$in": [0, 50, 100, 150]}}, {"_id": 0, "a.b": 1}),
                      ({"a.c": {"$in": ["0", "50", "100", "150"]}}, {"_id": 0, "a.c": 1}),
                      ({"a.b": {"$gt": 10}, "other": {"$gt": 10}}, {"_id": 0, "a.b": 1, "other": 1}),
                      ({"d": {"$elemMatch": {"$eq": 50}}}, {"_id": 0, "d": 1})):
        same_as_collscan(coll, flt, proj)


def test_projecting_the_virtual_path_field_is_refused(db):
    create(db.c, {"$**": 1})
    db.c.insert_one({"d": 0})
    fails(lambda: list(db.c.find({"d": {"$in": [0, 25]}}, {"_id": 0, "d": 1, "$_path": 1})), 16410)


# wildcard_index_basic_index_bounds.js (results of each query with and without the index) ---------

BOUNDS_OPERATIONS = [
    ({"$gte": 3}, True), ({"$gt": 3}, True), ({"$lt": 7}, True), ({"$lte": 7}, True), ({"$eq": 5}, True),
    # ($gte MinKey / $lte MaxKey: mongod scans [MinKey, MaxKey] and the subpaths, but the comparison also
    # matches a missing field, which has no key: Tidemark does not plan it, refusing the hint with 291)
    ({"$in": [3, 5, 7, 9]}, True), ({"$exists": True}, True), ({"$gte": "MINKEY", "$lte": "MAXKEY"}, False),
    ({"$exists": False}, False), ({"$eq": None}, False), ({"$eq": {"abc": 1}}, False), ({"$lt": {"abc": 1}}, False),
    ({"$ne": {"abc": 1}}, False), ({"$lt": {"abc": 1}, "$gt": {"abc": 1}}, False), ({"$in": [{"abc": 1}, 1, 2, 3]}, False),
    # ($ne: null: mongod scans the path and its subpaths; Tidemark does not plan it: {"a.b": {$ne: null}}
    # matches {a: []}, which has no key at a.b)
    ({"$in": [None, 1, 2, 3]}, False), ({"$ne": None}, False), ({"$ne": None, "$exists": True}, True),
    ({"$eq": None, "$exists": True}, True), ({"$eq": []}, True),
]
BOUNDS_PATHS = ["a", "b.c", "b.d.e", "b.f"]


def _bounds_docs():
    docs = []
    for i in range(100):
        value = i
        doc: dict = {"a": 0, "b": {"c": 0, "d": {"e": 0, "g": 1}, "f": {}, "arr": [1]}}
        doc["a"] = value
        value += 1
        doc["b"]["c"] = value
        doc["b"]["d"]["e"] = value + 1
        doc["b"]["d"]["g"] = value + 2
        doc["b"]["arr"] = list(range(1, i + 2))
        docs.append(doc)
    return docs


def _op(expression):
    from bson.max_key import MaxKey
    from bson.min_key import MinKey

    return {k: MinKey() if v == "MINKEY" else MaxKey() if v == "MAXKEY" else v for k, v in expression.items()}


@pytest.mark.parametrize(("key", "projection", "indexed"), [
    ({"$**": 1}, None, BOUNDS_PATHS), ({"a.$**": 1}, None, ["a"]), ({"b.$**": 1}, None, ["b.c", "b.d.e", "b.f"]),
    ({"$**": 1}, {"a": 1}, ["a"]), ({"$**": 1}, {"b": 0}, ["a"]), ({"$**": 1}, {"b.d": 1, "a": 1}, ["a", "b.d.e"]),
])
def test_basic_bounds_queries_with_and_without_the_index(db, key, projection, indexed):
    coll = db.c
    coll.insert_many(_bounds_docs())
    name = create(coll, key, **({"wildcardProjection": projection} if projection else {}))
    for expression, supported in BOUNDS_OPERATIONS:
        preds = []
        for path in BOUNDS_PATHS:
            flt = {path: _op(expression)}
            same_as_collscan(coll, flt, sort={"_id": 1})
            if supported and path in indexed:
                same_as_collscan(coll, flt, sort={"_id": 1}, hint=name)
                preds.append(flt)
        if preds:
            same_as_collscan(coll, {"$or": preds}, sort={"_id": 1})
            same_as_collscan(coll, {"$and": preds}, sort={"_id": 1})
            same_as_collscan(coll, {"$and": preds}, sort={"_id": 1}, hint=name)


COMPOUND_BOUNDS_QUERIES = [
    ({"a": 3, "b.c": {"$gte": 3}}, True), ({"a": 3, "b.c": {"$gte": 3}, "c": {"$lt": 3}}, True),
    ({"a": 3, "b.c": {"$in": [1]}}, True), ({"a": 3, "b.c": {"$exists": True}, "c": {"$lt": 3}}, True),
    ({"b.c": {"$gt": 3}}, False), ({"abc": {"$gt": 3}}, False), ({"b.c": {"$gt": 3}, "abc": 10}, False), ({"c": 5}, False),
]


def test_compound_bounds_queries_with_and_without_the_index(db):
    coll = db.c
    docs = _bounds_docs()
    for i, doc in enumerate(docs):
        doc["a"] = i % 5
        doc["c"] = i % 7
    coll.insert_many(docs + [{"a": 3}, {"a": 3, "c": 1}])  # (documents without a wildcard leaf)
    name = create(coll, {"a": 1, "b.$**": 1, "c": 1})
    for flt, used in COMPOUND_BOUNDS_QUERIES:
        same_as_collscan(coll, flt, sort={"_id": 1})
        if used:
            same_as_collscan(coll, flt, sort={"_id": 1}, hint=name)


# wildcard_and_text_indexes.js ---------------------------------------------------------------------

WILDCARD_TEXT_DOCS = [{"_id": 1, "a": 1, "_fts": 1, "textToSearch": "banana"},
                      {"_id": 2, "a": 1, "_fts": 2, "textToSearch": "bananas"},
                      {"_id": 3, "a": 1, "_fts": 3, "pre": 1}, {"_id": 4, "a": 1, "_fts": 10, "pre": 1},
                      {"_id": 5, "a": 1, "_fts": 10, "pre": 2}]


def _wildcard_and_text(db):
    coll = db.c
    coll.insert_many(WILDCARD_TEXT_DOCS)
    create(coll, {"$**": 1})
    create(coll, {"pre": 1, "$**": -1}, wildcardProjection={"pre": 0})

    def check():
        for flt, hidden in (({"_fts": {"$gt": 0, "$lt": 4}}, "pre_1_$**_-1"), ({"_fts": 10, "pre": 1}, "$**_1")):
            db.command("collMod", "c", index={"name": hidden, "hidden": True})
            assert len(same_as_collscan(coll, flt)) == (3 if "$gt" in repr(flt) else 1)
            db.command("collMod", "c", index={"name": hidden, "hidden": False})

    check()
    return coll, check


def test_wildcard_and_text_indexes_coexist(db):
    coll, check = _wildcard_and_text(db)
    for text_index in ({"$**": "text"}, {"a": 1, "$**": "text"}):
        create(coll, text_index, name="textIndex")
        check()
        text_query = {**({"a": 1} if "a" in text_index else {}), "$text": {"$search": "banana"}}
        assert ids(coll.find(text_query)) == [1, 2]
        assert ids(coll.find({"_fts": {"$gt": 0, "$lt": 4}, **text_query})) == [1, 2]
        coll.drop_index("textIndex")


def test_wildcard_index_beside_text_under_or(db):
    coll, _ = _wildcard_and_text(db)
    create(coll, {"$**": "text"}, name="textIndex")
    assert ids(coll.find({"$or": [{"_fts": 3}, {"$text": {"$search": "banana"}}]})) == [1, 2, 3]


# wildcard_and_with_not.js -------------------------------------------------------------------------

def test_and_with_not_through_compound_wildcard_indexes(db):
    db.this.insert_one({"_id": "whatever"})
    db.that.insert_many([
        {"_id": 1328, "obj": {"_id": 1334, "date": None, "obj": {"_id": 1335, "str": "strategize",
                                                                  "date": dt.datetime(2019, 3, 12, 19, 21, 41, 618000),
                                                                  "obj": {}}}},
        {"_id": 1378, "obj": {"_id": 1386, "date": None, "obj": None}},
        {"_id": 1403, "obj": {"_id": 1404, "str": "payment recontextualize",
                              "date": dt.datetime(2019, 1, 31, 12, 53, 44, 88000)}},
    ])
    graph = [{"$graphLookup": {"from": "that", "startWith": None, "connectFromField": "obj.obj.obj.obj.obj.num",
                               "connectToField": "obj.date", "as": "array",
                               "restrictSearchWithMatch": {"obj.obj.obj.str": {"$not": {"$lte": "redundant"}}}}}]
    larger = [{"$match": {"$and": [{"obj.obj.obj.str": {"$not": {"$lte": "redundant"}}}, {"obj.date": {"$in": [None]}},
                                   {"obj.date": {"$exists": True}}, {"obj.date": {"$not": {"$type": "undefined"}}}]}}]
    smaller = [{"$match": {"$and": [{"obj.obj.obj.str": {"$not": {"$lte": "redundant"}}}, {"obj.date": {"$exists": True}}]}}]
    for key in ({"obj.obj.obj.$**": 1}, {"obj.date": 1, "obj.obj.obj.$**": 1}, {"obj.obj.obj.$**": 1, "obj.date": 1}):
        db.that.drop_indexes()
        create(db.that, key)
        for coll, pipeline in ((db.this, graph), (db.that, larger), (db.that, smaller)):
            expected = list(coll.aggregate(pipeline, hint={"$natural": 1}))
            assert _sorted_docs(coll.aggregate(pipeline)) == _sorted_docs(expected), (key, pipeline)
        assert len(list(db.that.aggregate(larger))) == 2


# compound_wildcard_index_hiding.js ----------------------------------------------------------------

CWI_CASES = [
    ({"a": 1, "b": 1, "c.$**": 1}, None, {"a": 1, "b": 1, "c.a": 1}),
    ({"a": 1, "c.$**": 1, "b": 1}, None, {"a": 1, "b": 1, "c.a": 1}),
    ({"c.$**": 1, "a": 1, "b": 1}, None, {"a": 1, "b": 1, "c.a": 1}),
    ({"a": -1, "b": 1, "$**": 1}, {"c": 1}, {"a": 1, "b": 1, "c.a": 1}),
    ({"a": 1, "$**": -1, "b": 1}, {"d": 1}, {"a": 1, "b": 1, "d": 1}),
    ({"$**": 1, "a": 1, "b": 1}, {"front": 1}, {"a": 1, "b": 1, "front": 1}),
]
CWI_DOCS = [{"_id": i, "a": i % 2, "b": i % 3, "c": {"a": i % 2, "d": i % 4}, "d": i % 2, "front": i % 2}
            for i in range(12)] + [{"_id": 100, "a": 1, "b": 1}]


def _hidden_of(coll, name):
    return bool(next(i for i in coll.list_indexes() if i["name"] == name).get("hidden", False))


@pytest.mark.parametrize("start_hidden", [False, True])
def test_compound_wildcard_indexes_hide_and_unhide(db, start_hidden):
    coll = db.c
    db.create_collection("c")
    names = []
    for key, projection, _ in CWI_CASES:
        options = {"wildcardProjection": projection} if projection else {}
        names.append(create(coll, key, hidden=start_hidden, **options))
        assert _hidden_of(coll, names[-1]) is start_hidden
    hidden = start_hidden
    for _ in range(2):
        hidden = not hidden
        for name in names:
            db.command("collMod", "c", index={"name": name, "hidden": hidden})
            assert _hidden_of(coll, name) is hidden
    for name in names:
        coll.drop_index(name)
    assert [i["name"] for i in coll.list_indexes()] == ["_id_"]


def test_collmod_by_key_pattern_respects_field_order(db):
    """A key pattern is ordered: collMod by {a, c.$**, b} changes that index, not {a, b, c.$**}
    (for a plain compound index too)."""
    coll = db.c
    first = create(coll, {"a": 1, "b": 1, "c.$**": 1})
    second = create(coll, {"a": 1, "c.$**": 1, "b": 1})
    db.command("collMod", "c", index={"keyPattern": {"a": 1, "c.$**": 1, "b": 1}, "hidden": True})
    assert _hidden_of(coll, second) and not _hidden_of(coll, first)
    plain_first, plain_second = create(coll, {"x": 1, "y": 1}), create(coll, {"y": 1, "x": 1})
    db.command("collMod", "c", index={"keyPattern": {"y": 1, "x": 1}, "hidden": True})
    assert _hidden_of(coll, plain_second) and not _hidden_of(coll, plain_first)


def test_hidden_compound_wildcard_indexes_are_not_used(db):
    coll = db.c
    coll.insert_many(CWI_DOCS)
    names = [create(coll, key, hidden=True, **({"wildcardProjection": p} if p else {})) for key, p, _ in CWI_CASES]
    for name, (_, _, query) in zip(names, CWI_CASES, strict=True):
        same_as_collscan(coll, query)
        fails(lambda name=name, query=query: list(coll.find(query).hint(name)), BAD_VALUE)
        db.command("collMod", "c", index={"name": name, "hidden": False})
        same_as_collscan(coll, query)
        same_as_collscan(coll, query, hint=name)
        db.command("collMod", "c", index={"name": name, "hidden": True})


# compound_wildcard_index_hint.js ------------------------------------------------------------------

def test_compound_wildcard_indexes_obey_hints(db):
    coll = db.c
    coll.insert_many(CWI_DOCS)
    cases = [({"a": 1, "b": -1, "c.$**": 1}, None, {"a": 1, "b": 1, "c.d": 1}, {"a": 1, "b": -1, "c.d": 1}),
             ({"a": -1, "c.$**": 1, "b": 1}, None, {"a": 1, "b": 1, "c.d": 1}, {"a": -1, "c.d": 1, "b": 1}),
             ({"c.$**": 1, "a": 1, "b": 1}, None, {"a": 1, "b": 1, "c.d": 1}, {"c.d": 1, "a": 1, "b": 1}),
             ({"a": 1, "b": 1, "$**": -1}, {"c": 1}, {"a": 1, "b": 1, "c": 1}, {"a": 1, "b": 1, "c": -1}),
             ({"a": 1, "$**": 1, "b": 1}, {"c": 1}, {"a": 1, "b": 1, "c": 1}, {"a": 1, "d": 1, "b": 1}),
             ({"$**": 1, "a": 1, "b": 1}, {"c": 1}, {"a": 1, "b": 1, "c": 1}, {"a": 1, "b": 1, "front": 1})]
    names = []
    for key, projection, _, regular in cases:
        names.append(create(coll, key, **({"wildcardProjection": projection} if projection else {})))
        create(coll, regular)
    for name, (key, _, query, _) in zip(names, cases, strict=True):
        for hint in (name, list(key.items())):
            plan = coll.find(query).hint(hint).explain()["queryPlanner"]["winningPlan"]
            assert plan["inputStage"]["indexName"] == name
            same_as_collscan(coll, query, hint=hint)


# compound_wildcard_index_or.js --------------------------------------------------------------------

def test_compound_wildcard_indexes_under_or(db):
    import re

    docs = [{"_id": 428, "str": "Chicken RAM Nepal"},
            {"_id": 1311, "str": "navigate Stravenue",
             "obj": {"_id": 1313, "obj": {"_id": 1314, "obj": {"_id": 1315, "obj": {"_id": 1316, "obj": {}}}}}}]
    db.plain.insert_many(docs)
    db.wild.insert_many(docs)
    db.wild.create_indexes([IndexModel([("obj.obj.obj.$**", 1)]), IndexModel([("str", -1), ("obj.obj.obj.obj.$**", -1)])])
    pipeline = [{"$match": {"$or": [{"str": {"$regex": re.compile("^Chicken")}}, {"obj.obj.obj.obj.obj": {"$exists": True}}]}}]
    assert _sorted_docs(db.plain.aggregate(pipeline)) == _sorted_docs(docs)
    assert _sorted_docs(db.wild.aggregate(pipeline)) == _sorted_docs(docs)
    coll = db.two
    coll.insert_many([{"num": 1, "sub": {"num": 1, "str": "aa"}, "str": "1"}, {"num": 2, "sub": {"num": 2, "str": "bb"}, "str": "2"},
                      {"num": 3, "sub": {"num": 3, "str": "cc"}, "str": "3"}, {"num": 0, "str": "1"}])
    create(coll, {"num": 1, "sub.$**": 1})
    create(coll, {"sub.$**": 1, "num": 1})
    assert len(same_as_collscan(coll, {"$or": [{"num": {"$gte": 1}}, {"sub.str": "aa"}]})) == 3
    coll.drop_indexes()
    create(coll, {"num": 1, "sub.$**": 1})
    create(coll, {"str": 1, "sub.$**": 1})
    assert len(same_as_collscan(coll, {"$or": [{"$and": [{"num": 1}, {"sub.num": {"$gt": 4}}]},
                                               {"str": "1", "sub.num": {"$lt": 10}}]})) == 1


# compound_wildcard_index_prefix.js ----------------------------------------------------------------

def test_queries_on_the_regular_prefix_of_a_compound_wildcard_index(db):
    coll = db.c
    name = create(coll, {"a": 1, "b": 1, "sub.$**": 1, "c": 1})
    coll.insert_many([{"a": i, "b": i * 2, "sub": {"a": i}, "c": i * 3} for i in range(5)] + [{"a": 1, "b": 3}, {"b": 1}])
    for query in ({"a": 1}, {"a": 1, "b": 1}, {"a": 1, "b": {"$gt": 1}}, {"b": 1}, {"c": 1}):
        for sort in (None, {"a": 1}, {"a": 1, "b": 1}, {"a": 1, "c": 1}, {"a": 1, "b": 1, "c": 1}, {"c": 1}):
            same_as_collscan(coll, query, sort=sort)
            same_as_collscan(coll, query, sort=sort, hint=name)
    assert ids(coll.find({"a": 1}).hint(name)) == ids(coll.find({"a": 1}).hint(NATURAL))
    assert len(list(coll.find({"a": 1}).hint(name))) == 2  # a document without a wildcard leaf too
    plan = coll.find({"a": 1}).explain()["queryPlanner"]["winningPlan"]
    assert plan["inputStage"]["indexName"] == name
    assert plan["inputStage"]["indexBounds"]["$_path"] == ["[MinKey, MinKey]", '["", {})']


# compound_wildcard_index_residual.js (the parts mongod 7.0 answers) ------------------------------

def test_residual_predicates_on_compound_wildcard_indexes(db):
    coll = db.c
    name = create(coll, {"a": 1, "b.$**": 1, "c": 1})
    coll.insert_many([{"a": 1, "b": {"x": 1}, "c": 1}, {"a": 1, "b": {"x": -5}, "c": 1}, {"a": 1, "b": {"x": None}, "c": 1},
                      {"a": 1, "b": None, "c": 1}, {"a": 1, "c": 1}, {"a": 2, "c": 1}, {"a": 1, "b": {"x": 1}},
                      {"a": 1, "b": {"x": 1}, "c": None},
                      {"a": 3, "b": {"c": 1}, "c": 2}, {"a": 3, "b": {"c": {"nested": 1}}, "c": 2},
                      {"a": 3, "b": {"c": {}}, "c": 2}, {"a": 3, "b": {"c": None}, "c": 2}, {"a": 3, "c": 2},
                      {"a": 3, "b": {"c": 1}, "c": 5}])
    for flt, n in (({"a": 1, "b.x": None, "c": 1}, 3), ({"a": 1, "b.x": {"$gte": None}, "c": 1}, 3),
                   ({"a": 1, "b.x": {"$lte": None}, "c": 1}, 3), ({"a": 1, "b.x": {"$in": [None, 1]}, "c": 1}, 4),
                   ({"a": 1, "b.x": {"$not": {"$gt": 0}}, "c": 1}, 4), ({"a": 1, "b.x": {"$not": {"$in": [1, 5]}}, "c": 1}, 4),
                   ({"a": 1, "b.x": {"$exists": False}, "c": 1}, 2), ({"a": 1, "b.x": {"$nin": [1, 5]}, "c": 1}, 4),
                   ({"a": 1, "b.x": {"$ne": None}, "c": 1}, 2), ({"a": 1, "b.x": 1, "c": {"$ne": None}}, 1),
                   ({"a": 3, "b.c": {"$exists": True}, "c": {"$lt": 3}}, 4), ({"a": 3, "b.c": {"$type": "object"}, "c": {"$lt": 3}}, 2),
                   ({"a": 3, "b.c": {"$eq": {}}, "c": {"$lt": 3}}, 1), ({"a": 3, "b.c": {"$gte": {}}, "c": {"$lt": 3}}, 2),
                   ({"a": 3, "b.c": {"$eq": {"nested": 1}}, "c": {"$lt": 3}}, 1),
                   ({"a": 1, "$expr": {"$eq": ["$b.x", None]}, "c": 1}, 1), ({"a": 1, "$expr": {"$lt": ["$b.x", 0]}, "c": 1}, 4),
                   ({"a": 1, "$expr": {"$gt": ["$b.x", 0]}, "c": 1}, 1)):
        assert len(same_as_collscan(coll, flt)) == n, flt
        assert len(same_as_collscan(coll, flt, hint=name)) == n, flt


# compound_wildcard_index_unbounded.js -------------------------------------------------------------

def test_unbounded_scan_of_a_compound_wildcard_index(db):
    coll = db.c
    create(coll, {"a": 1, "$**": 1}, wildcardProjection={"a": 0})
    coll.insert_many([{"a": 1, "b": 1}, {"b": [1, 2]}])
    hint = [("a", 1), ("$**", 1)]
    assert len(same_as_collscan(coll, {"a": {"$exists": True}}, hint=hint)) == 1
    assert len(same_as_collscan(coll, {}, hint=hint)) == 2
    plan = coll.find({"a": {"$exists": True}}).hint(hint).explain()["queryPlanner"]["winningPlan"]["inputStage"]
    assert plan["keyPattern"] == {"a": 1, "$_path": 1}
    assert plan["indexBounds"] == {"a": ["[MinKey, MaxKey]"], "$_path": ["[MinKey, MinKey]", '["", {})']}


# compound_wildcard_sort.js (results and order) ----------------------------------------------------

def _flip(pattern):
    return {k: -v for k, v in pattern.items()}


def _replace_field(pattern, field, keys):
    out = {}
    for k, v in pattern.items():
        if k == field:
            out.update({key: v for key in keys})
        else:
            out[k] = v
    return out


def _path_value(doc, path):
    """The value at a dotted path through sub-documents (None when missing: sorts as null)."""
    value = doc
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _sort_docs():
    strs = ["abc", "def", "ghi", "jkl", "mnopqrstuvwxyz"]
    docs = []
    for i in range(3):
        wild = {"str1": strs[i], "num1": i + 42}
        pre, post, num2, str2 = i, -i, 44 - i, strs[4 - i]
        docs += [{"pre": pre, "wild": wild, "str2": str2, "num2": num2, "post": post},
                 {"pre": pre, "wild": wild, "str2": "", "num2": num2, "post": post},
                 {"wild": wild, "str2": str2, "num2": num2, "post": post},
                 {"pre": pre, "str2": str2, "num2": num2, "post": post},
                 {"pre": pre, "wild": {}, "str2": str2, "num2": num2, "post": post},
                 {"pre": pre, "wild": {"str1": "", "num1": i + 42}, "str2": str2, "num2": num2, "post": post},
                 {"pre": pre, "wild": wild, "post": post}]
    return docs


@pytest.mark.parametrize(("w", "subfields"), [("wild.$**", ["wild.num1", "wild.str1"]), ("$**", ["num2", "str2"])])
def test_compound_wildcard_sorts_equal_collection_scans(db, w, subfields):
    coll = db.c
    coll.insert_many(_sort_docs())
    if "." in w:
        specs = [({w: -1}, {}), ({"pre": 1, w: -1}, {}), ({w: -1, "post": -1}, {}), ({"pre": -1, w: 1, "post": -1}, {})]
    else:
        specs = [({w: -1}, {}), ({"pre": 1, w: 1}, {"wildcardProjection": {"pre": 0}}),
                 ({w: 1, "post": -1}, {"wildcardProjection": {"post": 0}}),
                 ({"pre": 1, w: 1, "post": 1}, {"wildcardProjection": {"pre": 0, "post": 0}})]

    def run(pred, sort):
        proj = {**{k: 1 for k in sort}, "_id": 0}
        got = list(coll.find(pred, proj, sort=list(sort.items())))
        expected = list(coll.find(pred, proj, sort=list(sort.items()), hint=NATURAL))
        # (ties keep no order: compare the sequence of sort keys, and the documents as a multiset)
        assert [[_path_value(d, k) for k in sort] for d in got] == [[_path_value(d, k) for k in sort] for d in expected], \
            (pred, sort)
        assert _sorted_docs(got) == _sorted_docs(expected), (pred, sort)

    for key, options in specs:
        create(coll, key, **options)
        valid = [key, _flip(key)]
        if "pre" in key:
            valid += [{"pre": 1}, {"pre": -1}]
        if "post" in key:
            without = {k: v for k, v in key.items() if k != "post"}
            valid += [without, _flip(without)]
        for kp in valid:
            for sub, pred in ((subfields[0], {subfields[0]: {"$lte": 43}}), (subfields[1], {subfields[1]: {"$gt": ""}})):
                sort = _replace_field(kp, w, [sub])
                full = {"pre": {"$gt": 0}, **pred} if "pre" in key else dict(pred)
                run({}, sort)
                run(full, sort)
                if "post" in key:
                    run({**full, "post": {"$lt": 1}}, sort)
            sort = _replace_field(kp, w, subfields)
            pred = {subfields[0]: {"$gt": ""}, subfields[1]: {"$lte": 43}}
            run({"pre": {"$gt": 0}, **pred} if "pre" in key else pred, sort)
        coll.drop_indexes()


# $elemMatch through a wildcard index (wildcard_index_multikey.js, nonblocking_sort.js) -------------

@pytest.mark.parametrize(("key", "options"), WILDCARDS)
def test_elem_match_is_answered_through_a_wildcard_index(db, key, options):
    coll = db.c
    create(coll, key, **options)
    coll.insert_many([{"_id": 1, "x": [123, 5]}, {"_id": 2, "x": [[123]]}, {"_id": 3, "x": 123},
                      {"_id": 4, "y": [{"b": 1, "c": 2}, {"b": 2}]}, {"_id": 5, "y": [{"b": [1, 3]}]}, {"_id": 6, "y": {"b": 1}},
                      {"_id": 7, "y": [[{"b": 1}]]}, {"_id": 8, "x": [{"a": 123}]}])
    hint = list(key.items())
    # (None: a nested array decides; only the collection scan's answer is checked)
    for flt, expected in (({"x": {"$elemMatch": {"$eq": 123}}}, None), ({"x": {"$elemMatch": {"$gte": 100, "$lt": 200}}}, None),
                          ({"x": {"$elemMatch": {"$in": [5, 6]}}}, [1]), ({"y": {"$elemMatch": {"b": 1}}}, None),
                          ({"y": {"$elemMatch": {"b": 1, "c": 2}}}, [4]), ({"y": {"$elemMatch": {"0.b": 1}}}, None),
                          ({"x": {"$elemMatch": {"a": 123}}}, [8]), ({"y": {"$elemMatch": {"b": {"$gt": 2}}}}, [5])):
        hinted = ids(same_as_collscan(coll, flt, hint=hint))
        assert ids(same_as_collscan(coll, flt)) == hinted, flt
        assert expected is None or hinted == expected, flt


def test_v1_wildcard_index_message(db):
    e = fails(lambda: db.command("createIndexes", "c", indexes=[{"key": {"$**": 1}, "name": "w", "v": 1}]),
              CANNOT_CREATE_INDEX)
    assert e.details["errmsg"] == "bad index key pattern { $**: 1 }: 'wildcard' index plugin is not allowed with index " \
                                  "version v:1"
    assert e.details["codeName"] == "CannotCreateIndex"


INDEX_FILTERS = ("planCacheSetFilter (wildcard_index_filter.js, compound_wildcard_index_filter.js): Tidemark's "
                 "planner takes no index filters, and the command is refused with 115 "
                 "(server/commands/plan_cache.py)")


@pytest.mark.xfail(strict=True, reason=INDEX_FILTERS)
def test_index_filters_name_wildcard_indexes(db):
    create(db.c, {"$**": 1})
    db.c.insert_one({"a": "a"})
    db.command("planCacheSetFilter", "c", query={"a": "a"}, indexes=[{"$**": 1}])
    assert len(db.command("planCacheListFilters", "c")["filters"]) == 1


def _has_sort_stage(plan: dict) -> bool:
    return plan.get("stage") == "SORT" or any(_has_sort_stage(v) for v in plan.values() if isinstance(v, dict))


@pytest.mark.parametrize("key", [{"$**": 1}, {"$**": -1}, {"a.$**": 1}])
def test_a_wildcard_index_gives_the_sort_on_its_scanned_path(db, key):
    """wildcard_index_nonblocking_sort.js: the scan of one path gives the sort on it, forward or
    backward, when the index never held an array (Tidemark knows arrays per index); otherwise a
    blocking sort runs. The order is a collection scan's either way."""
    coll = db.c
    name = create(coll, key)
    coll.insert_many([{"_id": i, "a": (i * 7) % 20 if i % 5 else f"s{i}", "b": -i} for i in range(40)] +
                     [{"_id": 40, "a": {}}, {"_id": 41, "b": 1}, {"_id": 42, "a": 2.5}, {"_id": 43, "a": Int64(3)}])
    for flt in ({"a": {"$gte": 0}}, {"a": {"$in": [3, 4, 18, "s5"]}}, {"a": {"$lte": {}}}, {"a": {"$gt": "s"}}):
        for direction in (1, -1):
            sort = {"a": direction}
            plan = coll.find(flt).sort(list(sort.items())).explain()["queryPlanner"]["winningPlan"]
            assert not _has_sort_stage(plan), (flt, plan)
            got = list(coll.find(flt, sort=list(sort.items())))
            expected = list(coll.find(flt, sort=list(sort.items()), hint=NATURAL))
            assert [d["a"] for d in got] == [d["a"] for d in expected] and _sorted_docs(got) == _sorted_docs(expected)
            assert [d["a"] for d in coll.find(flt, sort=list(sort.items()), hint=name)] == [d["a"] for d in expected]
    # another sort, a sort on two fields or under another collation: a blocking sort
    for flt, sort, kw in (({"a": {"$gte": 0}}, {"b": 1}, {}), ({"a": {"$gte": 0}}, {"a": 1, "b": 1}, {}),
                          ({"a": {"$gt": "s"}}, {"a": 1}, {"collation": {"locale": "fr"}})):
        plan = coll.find(flt, **kw).sort(list(sort.items())).explain()["queryPlanner"]["winningPlan"]
        assert _has_sort_stage(plan), (flt, sort)
        same_as_collscan(coll, flt, sort=sort, **kw)
    coll.insert_one({"_id": 100, "a": [1, 30]})  # the index is multikey now: a blocking sort
    plan = coll.find({"a": {"$gte": 0}}).sort("a", 1).explain()["queryPlanner"]["winningPlan"]
    assert _has_sort_stage(plan)
    for direction in (1, -1):
        got = [d["_id"] for d in coll.find({"a": {"$gte": 0}}, sort=[("a", direction), ("_id", 1)])]
        assert got == [d["_id"] for d in coll.find({"a": {"$gte": 0}}, sort=[("a", direction), ("_id", 1)], hint=NATURAL)]
