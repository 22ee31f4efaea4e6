"""createIndexes, listIndexes, dropIndexes, unique-index behaviour and index use by queries."""

from __future__ import annotations

import pytest
from pymongo import ASCENDING, DESCENDING, IndexModel
from pymongo.errors import BulkWriteError, DuplicateKeyError, OperationFailure


@pytest.mark.commands("createIndexes", "listIndexes")
def test_create_index_names_and_list_shape(db):
    assert db.c.create_index([("a", ASCENDING), ("b", DESCENDING)]) == "a_1_b_-1"
    reply = db.command("createIndexes", "c", indexes=[{"key": {"x": 1}, "name": "x_1"}])
    assert reply["numIndexesBefore"] == 2 and reply["numIndexesAfter"] == 3
    assert reply["createdCollectionAutomatically"] is False
    specs = list(db.c.list_indexes())
    assert [s["name"] for s in specs] == ["_id_", "a_1_b_-1", "x_1"]
    assert specs[1] == {"v": 2, "key": {"a": 1, "b": -1}, "name": "a_1_b_-1"}


@pytest.mark.commands("createIndexes")
def test_create_index_creates_collection_automatically_and_notes_existing(db):
    reply = db.command("createIndexes", "new", indexes=[{"key": {"a": 1}, "name": "a_1"}])
    assert reply["createdCollectionAutomatically"] is True
    reply = db.command("createIndexes", "new", indexes=[{"key": {"a": 1}, "name": "a_1"}])
    assert reply["note"] == "all indexes already exist"
    assert reply["numIndexesBefore"] == reply["numIndexesAfter"] == 2


@pytest.mark.commands("createIndexes")
def test_index_option_and_key_conflicts_give_85_and_86(db):
    db.c.create_index("a")
    with pytest.raises(OperationFailure) as e:
        db.c.create_index("a", name="other")
    assert e.value.code == 85
    with pytest.raises(OperationFailure) as e:
        db.command("createIndexes", "c", indexes=[{"key": {"b": 1}, "name": "a_1"}])
    assert e.value.code == 86
    with pytest.raises(OperationFailure) as e:  # unique is part of the signature (mongod 4.9+): the name clashes
        db.c.create_index("a", unique=True)
    assert e.value.code == 86


@pytest.mark.commands("createIndexes")
def test_conflict_messages_show_the_existing_index_without_the_internal_multikey_flag(db):
    db.c.insert_one({"a": [1, 2]})
    db.c.create_index("a")
    for spec in ({"key": {"b": 1}, "name": "a_1"}, {"key": {"a": 1}, "name": "a_1", "sparse": True}):
        with pytest.raises(OperationFailure) as e:
            db.command("createIndexes", "c", indexes=[spec])
        assert "existing index: { v: 2, key: { a: 1 }, name: \"a_1\" }" in str(e.value), str(e.value)


@pytest.mark.commands("createIndexes")
def test_bad_index_specs_give_67(db):
    for key in ({}, {"a": 0}, {"a": "bogus"}, {"a": True}):
        with pytest.raises(OperationFailure) as e:
            db.command("createIndexes", "c", indexes=[{"key": key, "name": "k"}])
        assert e.value.code == 67, key


@pytest.mark.commands("createIndexes")
@pytest.mark.parametrize("kind", ["geoHaystack", "columnstore"])
def test_unimplemented_index_types_are_refused_as_not_supported(db, kind):
    with pytest.raises(OperationFailure) as e:
        db.c.create_index([("a", kind)])
    assert "not supported" in str(e.value)


@pytest.mark.commands("createIndexes")
def test_wildcard_index_is_refused_as_not_supported(db):
    with pytest.raises(OperationFailure) as e:
        db.c.create_index([("$**", 1)])
    assert "not supported" in str(e.value)


@pytest.mark.commands("createIndexes")
def test_at_most_64_indexes(db):
    db.c.create_indexes([IndexModel([(f"f{i}", 1)]) for i in range(63)])
    with pytest.raises(OperationFailure) as e:
        db.c.create_index("one_too_many")
    assert e.value.code == 67


@pytest.mark.commands("createIndexes", "insert")
def test_unique_violation_in_ordered_insert_reports_key_pattern_and_value(db):
    db.u.create_index([("email", 1)], unique=True)
    db.u.insert_one({"_id": 1, "email": "a@x"})
    with pytest.raises(BulkWriteError) as e:
        db.u.insert_many([{"_id": 2, "email": "b@x"}, {"_id": 3, "email": "a@x"}, {"_id": 4, "email": "c@x"}])
    [err] = e.value.details["writeErrors"]
    assert err["index"] == 1 and err["code"] == 11000
    assert err["keyPattern"] == {"email": 1} and err["keyValue"] == {"email": "a@x"}
    assert "index: email_1 dup key: { email: \"a@x\" }" in err["errmsg"]
    assert sorted(d["_id"] for d in db.u.find()) == [1, 2]
    assert db.command("validate", "u")["keysPerIndex"] == {"_id_": 2, "email_1": 2}


@pytest.mark.commands("createIndexes", "insert")
def test_unique_violation_in_unordered_insert_continues_and_leaves_nothing_partial(db):
    db.u.create_index([("email", 1)], unique=True)
    with pytest.raises(BulkWriteError) as e:
        db.u.insert_many([{"_id": 1, "email": "a"}, {"_id": 2, "email": "a"}, {"_id": 3, "email": "b"},
                          {"_id": 1, "email": "z"}], ordered=False)
    errs = e.value.details["writeErrors"]
    assert [(x["index"], x["keyPattern"]) for x in errs] == [(1, {"email": 1}), (3, {"_id": 1})]
    assert sorted(d["_id"] for d in db.u.find()) == [1, 3]
    assert [d["_id"] for d in db.u.find({"email": "z"})] == []
    v = db.command("validate", "u")
    assert v["valid"] and v["keysPerIndex"] == {"_id_": 2, "email_1": 2}


@pytest.mark.commands("createIndexes")
def test_unique_compound_and_multikey(db):
    db.u.create_index([("a", 1), ("b", 1)], unique=True)
    db.u.insert_one({"a": 1, "b": 1})
    db.u.insert_one({"a": 1, "b": 2})
    with pytest.raises(DuplicateKeyError) as e:
        db.u.insert_one({"a": 1, "b": [3, 2]})
    assert e.value.details["keyValue"] == {"a": 1, "b": 2}


@pytest.mark.commands("createIndexes")
def test_unique_index_build_over_duplicates_fails_with_11000(db):
    db.c.insert_many([{"a": 1}, {"a": 1}])
    with pytest.raises(OperationFailure) as e:
        db.c.create_index("a", unique=True)
    assert e.value.code == 11000
    assert [i["name"] for i in db.c.list_indexes()] == ["_id_"]


@pytest.mark.commands("createIndexes")
def test_sparse_unique_allows_many_missing(db):
    db.c.create_index("a", unique=True, sparse=True)
    db.c.insert_many([{"x": 1}, {"x": 2}, {"a": 1}])
    with pytest.raises(DuplicateKeyError):
        db.c.insert_one({"a": 1})


@pytest.mark.commands("createIndexes")
def test_partial_unique_only_constrains_matching_documents(db):
    db.c.create_index("a", unique=True, partialFilterExpression={"active": True})
    db.c.insert_many([{"a": 1, "active": False}, {"a": 1, "active": False}, {"a": 1, "active": True}])
    with pytest.raises(DuplicateKeyError):
        db.c.insert_one({"a": 1, "active": True})


@pytest.mark.commands("createIndexes")
def test_parallel_arrays_cannot_be_indexed(db):
    db.c.create_index([("a", 1), ("b", 1)])
    with pytest.raises(OperationFailure) as e:
        db.c.insert_one({"a": [1], "b": [2]})
    assert e.value.code == 171
    assert list(db.c.find()) == []


@pytest.mark.commands("dropIndexes")
def test_drop_indexes_by_name_key_list_and_star(db):
    db.c.create_indexes([IndexModel("a"), IndexModel("b"), IndexModel("c"), IndexModel("d")])
    assert db.command("dropIndexes", "c", index="a_1")["nIndexesWas"] == 5
    db.command("dropIndexes", "c", index={"b": 1})
    db.command("dropIndexes", "c", index=["c_1"])
    assert [i["name"] for i in db.c.list_indexes()] == ["_id_", "d_1"]
    db.c.drop_indexes()
    assert [i["name"] for i in db.c.list_indexes()] == ["_id_"]


@pytest.mark.commands("dropIndexes", "listIndexes")
def test_drop_indexes_errors(db):
    db.c.insert_one({})
    with pytest.raises(OperationFailure) as e:
        db.command("dropIndexes", "c", index="nope")
    assert e.value.code == 27
    with pytest.raises(OperationFailure) as e:
        db.command("dropIndexes", "c", index="_id_")
    assert e.value.code == 72
    with pytest.raises(OperationFailure) as e:
        db.command("dropIndexes", "missing", index="*")
    assert e.value.code == 26
    with pytest.raises(OperationFailure) as e:
        db.command("listIndexes", "missing")
    assert e.value.code == 26
    assert list(db.missing.list_indexes()) == []  # pymongo turns 26 into an empty cursor


@pytest.mark.commands("find", "explain")
def test_queries_use_indexes_and_give_same_results(db):
    db.c.insert_many([{"_id": i, "a": i % 10, "b": i} for i in range(200)])
    plan = db.c.find({"a": 3}).explain()["queryPlanner"]["winningPlan"]
    assert plan["stage"] == "COLLSCAN"
    db.c.create_index([("a", 1), ("b", -1)])
    plan = db.c.find({"a": 3, "b": {"$gt": 100}}).explain()["queryPlanner"]["winningPlan"]
    assert plan["stage"] == "FETCH" and plan["inputStage"]["stage"] == "IXSCAN"
    assert plan["inputStage"]["indexName"] == "a_1_b_-1"
    got = [d["_id"] for d in db.c.find({"a": 3, "b": {"$gt": 100}})]
    assert sorted(got) == [i for i in range(101, 200) if i % 10 == 3]
    got = [d["b"] for d in db.c.find({"a": 3}).sort([("a", 1), ("b", -1)]).limit(3)]
    assert got == [193, 183, 173]
    stats = db.c.find({"a": 3}).explain()["executionStats"]
    assert stats["nReturned"] == 20 and stats["totalDocsExamined"] == 20


@pytest.mark.commands("find")
def test_hidden_index_is_not_used_but_maintained(db):
    db.c.insert_many([{"a": i} for i in range(20)])
    db.c.create_index("a", hidden=True)
    plan = db.c.find({"a": 3}).explain()["queryPlanner"]["winningPlan"]
    assert plan["stage"] == "COLLSCAN"
    db.c.insert_one({"a": 3})
    db.command("collMod", "c", index={"name": "a_1", "hidden": False})
    assert len(list(db.c.find({"a": 3}).hint("a_1"))) == 2


@pytest.mark.commands("find")
def test_multikey_index_returns_each_document_once(db):
    db.c.create_index("tags")
    db.c.insert_many([{"_id": 1, "tags": ["a", "b", "a"]}, {"_id": 2, "tags": ["b"]}, {"_id": 3, "tags": []}])
    assert [d["_id"] for d in db.c.find({"tags": {"$in": ["a", "b"]}})] == [1, 2]
    assert [d["_id"] for d in db.c.find({"tags": {"$gte": "a"}}).sort("tags", 1)] == [1, 2]
    assert [d["_id"] for d in db.c.find({"tags": None})] == []


@pytest.mark.commands("find")
def test_range_on_mixed_types_through_index_matches_scan(db):
    values = [1, 2.5, "s", None, [3, 4], {"x": 1}, True, 7]
    db.c.insert_many([{"v": v} for v in values])
    filters = [{"v": {"$gt": 2}}, {"v": {"$lte": 3}}, {"v": None}, {"v": {"$in": [1, "s", True]}}, {"v": 4}]
    scans = [[d["_id"] for d in db.c.find(f).sort("_id", 1)] for f in filters]
    db.c.create_index("v")
    assert [[d["_id"] for d in db.c.find(f).sort("_id", 1)] for f in filters] == scans


@pytest.mark.commands("find")
def test_two_sided_range_on_multikey_field_matches_scan(db):
    db.c.insert_many([{"_id": 1, "a": [1, 10]}, {"_id": 2, "a": 6}, {"_id": 3, "a": [1, 2]}])
    db.c.create_index("a")
    for flt in ({"a": {"$gt": 5, "$lt": 8}}, {"$and": [{"a": {"$lt": 8}}, {"a": {"$gt": 5}}]}):
        assert sorted(d["_id"] for d in db.c.find(flt)) == [1, 2]


@pytest.mark.commands("find", "insert", "listIndexes", "explain")
def test_multikey_flag_tightens_ranges_only_while_index_has_no_arrays(db):
    db.c.insert_many([{"_id": i, "a": i} for i in range(20)])
    db.c.create_index("a")
    q = {"a": {"$gt": 5, "$lt": 8}}
    ix = db.c.find(q).explain()["queryPlanner"]["winningPlan"]["inputStage"]
    assert ix["isMultiKey"] is False and ix["indexBounds"]["a"] == ["(5, 8)"]
    assert db.c.find(q).explain()["executionStats"]["totalDocsExamined"] == 2
    db.c.insert_one({"_id": 100, "a": [1, 10]})
    ix = db.c.find(q).explain()["queryPlanner"]["winningPlan"]["inputStage"]
    assert ix["isMultiKey"] is True
    assert sorted(d["_id"] for d in db.c.find(q)) == [6, 7, 100]
    assert all("multikey" not in spec for spec in db.c.list_indexes())


@pytest.mark.commands("createIndexes", "find")
def test_index_built_over_arrays_is_multikey_from_the_start(db):
    db.c.insert_many([{"_id": 1, "a": [1, 10]}, {"_id": 2, "a": 6}])
    db.c.create_index("a")
    assert sorted(d["_id"] for d in db.c.find({"a": {"$gt": 5, "$lt": 8}})) == [1, 2]


@pytest.mark.commands("find", "aggregate", "explain")
def test_latest_readings_of_one_device_come_from_the_index_in_order(db):
    import datetime

    t0 = datetime.datetime(2024, 1, 1)
    db.r.insert_many([{"device": f"d{i % 3}", "ts": t0 + datetime.timedelta(minutes=i), "v": i} for i in range(90)])
    db.r.create_index([("device", 1), ("ts", 1)])
    cursor = db.r.find({"device": "d1"}).sort("ts", -1).limit(3)
    assert [d["v"] for d in cursor] == [88, 85, 82]
    plan = db.r.find({"device": "d1"}).sort("ts", -1).limit(3).explain()["queryPlanner"]["winningPlan"]
    assert "SORT" not in str(plan)
    out = db.r.aggregate([{"$match": {"device": "d2"}}, {"$sort": {"ts": -1}}, {"$limit": 2}])
    assert [d["v"] for d in out] == [89, 86]


@pytest.mark.commands("find", "update", "delete", "explain")
def test_or_over_indexed_fields_uses_an_index_union_and_matches_scan(db):
    db.c.insert_many([{"_id": i, "a": i % 7, "b": i % 11, "t": [i, i + 1]} for i in range(200)])
    flt = {"$or": [{"a": 3}, {"b": {"$gte": 9}}, {"t": 50}]}
    expected = sorted(d["_id"] for d in db.c.find(flt))
    db.c.create_index("a")
    db.c.create_index("b")
    db.c.create_index("t")
    plan = db.c.find(flt).explain()["queryPlanner"]["winningPlan"]
    assert plan["inputStage"]["stage"] == "OR" and len(plan["inputStage"]["inputStages"]) == 3
    assert sorted(d["_id"] for d in db.c.find(flt)) == expected
    assert db.c.update_many(flt, {"$set": {"hit": True}}).matched_count == len(expected)
    assert db.c.delete_many(flt).deleted_count == len(expected)
