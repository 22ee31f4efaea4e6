"""MongoDB's ``$out`` jstests (``jstests/aggregation/sources/out/``) not ported before, against a real
Tidemark server: replace_collection.js, out_dots_and_dollars_fields.js, out_read_write_to_same_collection.js,
required_last_position.js, out_in_lookup_not_allowed.js (7.0's codes). They found no difference; they
guard what a replaced collection keeps (indexes, validator), where ``$out`` may stand, and that a failed
``$out`` leaves its target as it was.
"""

from __future__ import annotations

import pytest
from harness.jstests import aggregate_fails

pytestmark = pytest.mark.commands("aggregate", "insert", "find", "createIndexes", "collMod", "listCollections")


def test_replace_collection(db, client):
    db.drop_collection("out_source")
    db.drop_collection("out_target")
    db.out_source.insert_one({"_id": 0})
    list(db.out_source.aggregate([{"$out": "out_target"}]))
    assert db.out_target.count_documents({}) == 1
    client.drop_database("outDifferentDB")
    list(db.out_source.aggregate([{"$out": {"db": "outDifferentDB", "coll": "outDifferentColl"}}]))
    assert client.outDifferentDB.outDifferentColl.count_documents({}) == 1
    client.drop_database("outDifferentDB")
    list(db.out_source.aggregate([{"$out": "out_target"}]))
    assert db.out_target.count_documents({}) == 1
    # the target's indexes and options survive
    db.drop_collection("out_target")
    db.create_collection("out_target", validator={"a": {"$gt": 0}})
    db.out_target.create_index([("a", 1)])
    db.drop_collection("out_source")
    db.out_source.insert_one({"a": 1})
    list(db.out_source.aggregate([{"$out": "out_target"}]))
    assert db.out_target.count_documents({}) == 1 and len(list(db.out_target.list_indexes())) == 2
    options = db.command("listCollections", filter={"name": "out_target"})["cursor"]["firstBatch"][0]["options"]
    assert options["validator"] == {"a": {"$gt": 0}}
    # a unique index the results violate: 11000, the target as it was
    db.drop_collection("out_source")
    db.out_source.insert_many([{"_id": 0, "a": 0}, {"_id": 1, "a": 0}])
    db.drop_collection("out_target")
    db.out_target.create_index([("a", 1)], unique=True)
    aggregate_fails(db.out_source, [{"$out": "out_target"}], 11000)
    # a target document that would conflict is replaced with the rest, no duplicate
    db.drop_collection("out_source")
    db.out_source.insert_one({"_id": 0, "a": 0})
    db.out_target.delete_many({})
    db.out_target.insert_one({"_id": 1, "a": 0})
    list(db.out_source.aggregate([{"$out": "out_target"}]))
    assert db.out_target.count_documents({}) == 1 and len(list(db.out_target.list_indexes())) == 2


@pytest.mark.parametrize("target", ["out_dots_and_dollars_from", "out_dots_and_dollars_coll"])
def test_out_writes_dotted_and_dollar_fields(db, target):
    test = {"_id": 0, "$aField": 1, "aFie$ld": 1, "aField$": 1, "$$aField": 1, ".aField": 1, "aFie.ld": 1,
            "aField.": 1, "..aField": 1, "$.aField": 1, "aFi.$eld": 1}
    db.drop_collection("out_dots_and_dollars_coll")
    db.out_dots_and_dollars_coll.insert_one({"_id": 0})
    list(db.out_dots_and_dollars_coll.aggregate([{"$replaceWith": {"$const": test}}, {"$out": target}]))
    assert list(db[target].find()) == [test]


def test_out_reads_and_writes_the_same_collection(db):
    coll = db.out_read_write
    coll.drop()
    coll.insert_many([{"group": 1, "count": 1}, {"group": 1, "count": 3}, {"group": 2, "count": 4}, {"group": 2, "count": 8}])
    assert list(coll.aggregate([{"$group": {"_id": "$group", "total": {"$sum": "$count"}}}, {"$out": coll.name}])) == []
    assert list(coll.find().sort("_id", 1)) == [{"_id": 1, "total": 4}, {"_id": 2, "total": 12}]
    coll.create_index([("total", 1)])
    schema = {"$jsonSchema": {"bsonType": "object", "required": ["_id", "total"]}}
    db.command("collMod", coll.name, validator=schema)
    aggregate_fails(coll, [{"$project": {"total": 0}}, {"$out": coll.name}], 121)  # the original stays
    assert list(coll.find().sort("_id", 1)) == [{"_id": 1, "total": 4}, {"_id": 2, "total": 12}]
    list(coll.aggregate([{"$addFields": {"myConstant": 42}}, {"$out": coll.name}]))
    assert list(coll.find().sort("_id", 1)) == [{"_id": 1, "total": 4, "myConstant": 42},
                                                {"_id": 2, "total": 12, "myConstant": 42}]
    options = db.command("listCollections", filter={"name": coll.name})["cursor"]["firstBatch"][0]["options"]
    assert options["validator"] == schema
    assert [dict(i["key"]) for i in coll.list_indexes()] == [{"_id": 1}, {"total": 1}]


def test_out_position(db):
    db.drop_collection("out_position")
    db.out_position.insert_one({"_id": 1})
    aggregate_fails(db.out_position, [{"$out": "x"}, {"$match": {}}], 40601)
    aggregate_fails(db.out_position, [{"$lookup": {"from": "x", "pipeline": [{"$out": "y"}], "as": "z"}}], 51047)
    aggregate_fails(db.out_position, [{"$facet": {"a": [{"$out": "y"}]}}], 40600)
    aggregate_fails(db.out_position, [{"$unionWith": {"coll": "x", "pipeline": [{"$out": "y"}]}}], 31441, 51047)
