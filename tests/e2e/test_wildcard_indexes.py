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
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(NAMES), inner, max_size=3)),
    max_leaves=8,
)
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
    op = draw(st.sampled_from(["eq", "$eq", "$gt", "$gte", "$lt", "$lte", "$in", "$exists", "$ne", "$not", "$nin"]))
    value = draw(QUERY_VALUES)
    if op == "eq":
        return {path: value}
    if op in ("$in", "$nin"):
        return {path: {op: draw(st.lists(QUERY_VALUES, max_size=3))}}
    if op == "$exists":
        return {path: {"$exists": draw(st.booleans())}}
    if op == "$not":
        return {path: {"$not": {"$gt": value}}}
    return {path: {op: value}}


def _served(flt: dict, key: dict, options: dict) -> bool:
    """Whether the read must be answerable through the index when hinted (mongod plans it)."""
    ((path, cond),) = flt.items()
    projection = options.get("wildcardProjection")
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
@given(docs=DOCS, spec=SPECS, flts=st.lists(filters(), min_size=1, max_size=4), split=st.integers(0, 8))
def test_wildcard_reads_equal_collection_scans(db, docs, spec, flts, split):
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

    for flt in flts:
        expected = scan(flt, hint=[("$natural", 1)])
        assert scan(flt) == expected, flt
        try:
            hinted = scan(flt, hint=name)
        except OperationFailure as e:
            assert e.code == NO_QUERY_EXECUTION_PLANS, (flt, e.details)
            assert not _served(flt, key, options), flt
            continue
        assert hinted == expected, flt
