"""Collation (issue 13 A.1): ICU collation on every read and write path, collection/view/index
defaults, validation like mongod, and time-series collections. Expected results follow MongoDB's
documented collation semantics (strength 2 = case-insensitive, numericOrdering, ...)."""

import pymongo
import pytest
from pymongo.errors import OperationFailure

CI = {"locale": "en", "strength": 2}  # case-insensitive
EXPANDED_FR_CA = {"locale": "fr_CA", "caseLevel": False, "caseFirst": "off", "strength": 3,
                  "numericOrdering": False, "alternate": "non-ignorable", "maxVariable": "punct",
                  "normalization": False, "backwards": True, "version": "57.1"}


def _names(db, name="c", **kw):
    db[name].insert_many([{"_id": 1, "n": "foo"}, {"_id": 2, "n": "FOO"}, {"_id": 3, "n": "Foo"},
                          {"_id": 4, "n": "bar"}])
    return db[name]


@pytest.mark.commands("delete")
def test_case_insensitive_delete_many_deletes_every_match(db):
    coll = _names(db)
    assert coll.delete_many({"n": "foo"}, collation=CI).deleted_count == 3
    assert [d["_id"] for d in coll.find()] == [4]


@pytest.mark.commands("delete")
def test_delete_one_with_collation_deletes_a_case_variant(db):
    coll = _names(db)
    assert coll.delete_one({"n": "BAR"}, collation=CI).deleted_count == 1
    assert coll.count_documents({}) == 3


@pytest.mark.commands("find")
def test_find_filter_and_sort_use_the_collation(db):
    coll = _names(db)
    assert sorted(d["_id"] for d in coll.find({"n": "fOo"}, collation=CI)) == [1, 2, 3]
    assert list(coll.find({"n": "fOo"})) == []
    assert [d["_id"] for d in coll.find({"n": {"$in": ["BAR", "x"]}}, collation=CI)] == [4]
    assert [d["_id"] for d in coll.find({"n": {"$gt": "E"}}, collation=CI).sort("_id")] == [1, 2, 3]
    nums = db.nums
    nums.insert_many([{"v": "10"}, {"v": "9"}, {"v": "100"}])
    ordered = [d["v"] for d in nums.find({}, {"_id": 0}).sort("v", 1).collation(
        {"locale": "en", "numericOrdering": True})]
    assert ordered == ["9", "10", "100"]
    assert [d["v"] for d in nums.find().sort("v", 1)] == ["10", "100", "9"]


@pytest.mark.commands("count", "distinct", "aggregate")
def test_count_distinct_and_aggregate_use_the_collation(db):
    coll = _names(db)
    assert coll.count_documents({"n": "FOO"}, collation=CI) == 3
    assert db.command("count", "c", query={"n": "FOO"}, collation=CI)["n"] == 3
    values = coll.distinct("n", collation=CI)
    assert len(values) == 2 and values[0] == "bar" and values[1].lower() == "foo"
    groups = list(coll.aggregate([{"$group": {"_id": "$n", "k": {"$sum": 1}}}, {"$sort": {"k": -1}}],
                                 collation=CI))
    assert [g["k"] for g in groups] == [3, 1]
    matched = list(coll.aggregate([{"$match": {"$expr": {"$eq": ["$n", "foo"]}}}], collation=CI))
    assert len(matched) == 3
    assert list(coll.aggregate([{"$match": {"n": "FOO"}}], collation={"locale": "simple"})) == [
        {"_id": 2, "n": "FOO"}]


@pytest.mark.commands("update", "findAndModify")
def test_updates_and_find_and_modify_use_the_collation(db):
    coll = _names(db)
    assert coll.update_many({"n": "foo"}, {"$set": {"hit": True}}, collation=CI).modified_count == 3
    doc = coll.find_one_and_update({"n": "BAR"}, {"$set": {"hit": True}}, collation=CI,
                                   return_document=pymongo.ReturnDocument.AFTER)
    assert doc["_id"] == 4 and doc["hit"] is True
    coll.update_one({"_id": 1}, {"$set": {"tags": ["Red"]}})
    coll.update_one({"_id": 1}, {"$addToSet": {"tags": "RED"}}, collation=CI)
    assert coll.find_one({"_id": 1})["tags"] == ["Red"]
    coll.update_one({"_id": 1}, {"$pull": {"tags": "red"}}, collation=CI)
    assert coll.find_one({"_id": 1})["tags"] == []


@pytest.mark.commands("update", "delete")
def test_bulk_write_statements_carry_their_collation(db):
    coll = _names(db)
    result = coll.bulk_write([pymongo.UpdateMany({"n": "FOO"}, {"$set": {"x": 1}}, collation=CI),
                              pymongo.DeleteMany({"n": "BAR"}, collation=CI)])
    assert result.modified_count == 3 and result.deleted_count == 1


@pytest.mark.commands("create", "listCollections", "find")
def test_collection_default_collation_is_expanded_and_inherited(db):
    db.create_collection("d", collation={"locale": "fr_CA"})
    info = next(db.list_collections(filter={"name": "d"}))
    assert info["options"]["collation"] == EXPANDED_FR_CA
    db.create_collection("ci", collation=CI)
    db.ci.insert_many([{"n": "a"}, {"n": "A"}])
    assert db.ci.count_documents({"n": "a"}) == 2
    assert db.ci.count_documents({"n": "a"}, collation={"locale": "simple"}) == 1
    assert db.ci.delete_many({"n": "A"}).deleted_count == 2
    db.create_collection("s", collation={"locale": "simple"})
    assert "collation" not in next(db.list_collections(filter={"name": "s"}))["options"]


@pytest.mark.commands("create", "find")
def test_view_has_its_own_default_collation_and_refuses_another(db):
    _names(db)
    db.command("create", "v", viewOn="c", pipeline=[], collation=CI)
    assert db.v.count_documents({"n": "foo"}) == 3
    with pytest.raises(OperationFailure) as err:
        list(db.v.find({"n": "foo"}, collation={"locale": "fr"}))
    assert err.value.code == 167


@pytest.mark.commands("createIndexes", "listIndexes", "explain")
def test_index_with_collation_is_listed_and_used_only_by_matching_queries(db):
    coll = _names(db)
    coll.create_index("n", collation=CI, name="n_ci")
    spec = next(s for s in coll.list_indexes() if s["name"] == "n_ci")
    assert spec["collation"]["locale"] == "en" and spec["collation"]["strength"] == 2
    plan = coll.find({"n": "FOO"}).collation(CI).explain()["queryPlanner"]["winningPlan"]
    assert "IXSCAN" in str(plan)
    assert sorted(d["_id"] for d in coll.find({"n": "FOO"}).collation(CI)) == [1, 2, 3]
    plan = coll.find({"n": "FOO"}).explain()["queryPlanner"]["winningPlan"]
    assert "IXSCAN" not in str(plan)
    assert [d["_id"] for d in coll.find({"n": "FOO"})] == [2]


@pytest.mark.commands("createIndexes", "insert")
def test_unique_index_with_case_insensitive_collation_refuses_case_variants(db):
    db.u.create_index("email", unique=True, collation=CI)
    db.u.insert_one({"email": "Ann@x.org"})
    with pytest.raises(pymongo.errors.DuplicateKeyError):
        db.u.insert_one({"email": "ann@X.ORG"})


@pytest.mark.commands("createIndexes")
def test_index_inherits_the_collection_default_unless_it_says_simple(db):
    db.create_collection("d", collation={"locale": "fr_CA"})
    db.d.create_index("a")
    db.d.create_index("b", collation={"locale": "simple"})
    specs = {s["name"]: s for s in db.d.list_indexes()}
    assert specs["a_1"]["collation"] == EXPANDED_FR_CA
    assert "collation" not in specs["b_1"]


@pytest.mark.commands("find", "create", "createIndexes")
def test_invalid_collations_fail_like_mongod(db):
    db.c.insert_one({"n": "x"})
    with pytest.raises(OperationFailure) as err:
        db.c.find_one({}, collation={"locale": "xx"})
    assert err.value.code == 2 and "Field 'locale' is invalid in:" in str(err.value)
    with pytest.raises(OperationFailure) as err:
        db.create_collection("bad", collation={"locale": "en", "strength": 99})
    assert err.value.code == 51024
    with pytest.raises(OperationFailure) as err:
        db.c.create_index("n", collation={"locale": "en", "blah": 1})
    assert err.value.code == 40415
    with pytest.raises(OperationFailure) as err:
        db.c.find_one({}, collation={"locale": "en", "version": "unknownVersion"})
    assert err.value.code == 161  # IncompatibleCollationVersion
    with pytest.raises(OperationFailure) as err:
        db.c.find_one({}, collation={"locale": "simple", "strength": 1})
    assert err.value.code == 9


@pytest.mark.commands("aggregate")
def test_lookup_and_set_operators_use_the_pipeline_collation(db):
    db.a.insert_one({"_id": 1, "k": "Key", "tags": ["x", "X", "y"]})
    db.b.insert_many([{"k": "KEY"}, {"k": "key"}, {"k": "other"}])
    out = list(db.a.aggregate([{"$lookup": {"from": "b", "localField": "k", "foreignField": "k", "as": "m"}},
                               {"$project": {"n": {"$size": "$m"}, "u": {"$setUnion": ["$tags", []]}}}],
                              collation=CI))
    assert out[0]["n"] == 2 and len(out[0]["u"]) == 2


@pytest.mark.commands("create", "insert", "find", "aggregate", "listCollections")
def test_time_series_collection_honours_its_default_collation(db):
    import datetime as dt
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "host"}, collation=CI)
    info = next(db.list_collections(filter={"name": "ts"}))
    assert info["options"]["collation"]["strength"] == 2
    t0 = dt.datetime(2024, 1, 1)
    db.ts.insert_many([{"t": t0, "host": "Alpha", "s": "Up"}, {"t": t0, "host": "ALPHA", "s": "up"},
                       {"t": t0, "host": "beta", "s": "UP"}])
    assert db.ts.count_documents({"host": "alpha"}) == 2
    assert db.ts.count_documents({"s": "up"}) == 3
    assert db.ts.count_documents({"s": "up"}, collation={"locale": "simple"}) == 1
    groups = list(db.ts.aggregate([{"$group": {"_id": "$host", "n": {"$sum": 1}}}, {"$sort": {"n": -1}}]))
    assert [g["n"] for g in groups] == [2, 1]


@pytest.mark.commands("find")
def test_explicit_collation_on_a_plain_time_series_collection(db):
    import datetime as dt
    db.create_collection("ts2", timeseries={"timeField": "t", "metaField": "m"})
    t0 = dt.datetime(2024, 1, 1)
    db.ts2.insert_many([{"t": t0, "m": "A", "v": "Hi"}, {"t": t0, "m": "a", "v": "hi"}])
    assert db.ts2.count_documents({"v": "HI"}, collation=CI) == 2
    assert db.ts2.count_documents({"m": "a"}, collation=CI) == 2
    assert db.ts2.count_documents({"m": "a"}) == 1
