"""Differences pymongo's own test suite found (issue 25): each answered as mongod 7.0 does."""

from __future__ import annotations

import pytest
from bson.int64 import Int64
from pymongo import UpdateOne
from pymongo.errors import BulkWriteError, OperationFailure, WriteError


@pytest.mark.commands("insert")
def test_insert_keeps_top_level_dollar_fields(db):
    # mongod 5.0+: $-prefixed names are stored on insert, reserved DBRef names too
    db.c.insert_many([{"_id": 1, "$a": 1}, {"_id": 2, "valid": 1, "$a": {"$b": 1}}, {"_id": 3, "$ref": 1}])
    assert list(db.c.find({}, {"_id": 1}).sort("_id", 1)) == [{"_id": 1}, {"_id": 2}, {"_id": 3}]
    assert db.c.find_one({"_id": 1}) == {"_id": 1, "$a": 1}
    with pytest.raises(WriteError) as info:  # but never inside _id
        db.c.insert_one({"_id": {"$b": 1}})
    assert info.value.code == 52
    with pytest.raises(WriteError) as info:  # nor in a replacement document
        db.c.replace_one({"_id": 1}, {"x": 1, "$a": 2})
    assert info.value.code == 52


@pytest.mark.commands("createIndexes", "listIndexes")
def test_list_indexes_keeps_background(db):
    db.c.create_index("x", background=True)
    db.c.create_index("y")
    specs = {spec["name"]: dict(spec) for spec in db.c.list_indexes()}
    assert specs["x_1"] == {"v": 2, "key": {"x": 1}, "name": "x_1", "background": True}
    assert "background" not in specs["y_1"]
    db.c.create_index("x", background=False)  # the same index: background is not an option that differs
    with pytest.raises(OperationFailure) as info:
        db.c.create_index("z", background="yes")
    assert info.value.code == 14


@pytest.mark.commands("update", "findAndModify")
def test_update_pipeline_with_an_unknown_stage_fails(db):
    """mongod lite-parses an update pipeline before any statement runs: an unknown stage name (or a
    stage that is not one field, or not an object) fails the command, ok: 0, as the drivers' command
    logging spec expects ("Command failed"); a known stage an update does not allow is a write error."""
    db.c.insert_one({"_id": 1})
    for pipeline, code, message in (
            ([{"$unknownStage": {}}], 40324, "Unrecognized pipeline stage name: '$unknownStage'"),
            ([{"$set": {"a": 1}, "$unset": "b"}], 40323,
             "A pipeline stage specification object must contain exactly one field."),
            ([{"$set": {"a": 1}}, 5], 14, "Each element of the 'pipeline' array must be an object")):
        reply = db.command({"update": "c", "updates": [{"q": {}, "u": [{"$set": {"z": 1}}]},
                                                       {"q": {}, "u": pipeline}]}, check=False)
        assert (reply["ok"], reply.get("code"), reply.get("errmsg")) == (0.0, code, message), reply
        with pytest.raises(OperationFailure) as info:
            db.c.bulk_write([UpdateOne({}, pipeline)])
        assert not isinstance(info.value, BulkWriteError) and info.value.code == code
    with pytest.raises(WriteError) as info:  # a known stage that an update does not allow
        db.c.update_one({}, [{"$group": {"_id": 1}}])
    assert info.value.code == 72
    with pytest.raises(OperationFailure) as info:
        db.c.find_one_and_update({}, [{"$unknownStage": {}}])
    assert info.value.code == 40324
    assert db.c.find_one() == {"_id": 1}


@pytest.mark.commands("ping", "count", "distinct", "find", "aggregate", "createIndexes", "buildInfo")
def test_api_strict_refuses_what_is_outside_api_version_1(server, db):
    from pymongo import MongoClient
    from pymongo.server_api import ServerApi

    strict = MongoClient(server.uri, server_api=ServerApi("1", strict=True))
    try:
        coll = strict[db.name].c
        coll.insert_many([{"_id": i, "a": i} for i in range(5)])
        assert coll.count_documents({}) == 5
        assert [d["_id"] for d in coll.find(batch_size=2)] == list(range(5))  # getMore carries no API fields
        assert strict[db.name].command("count", "c")["n"] == 5  # count is in API Version 1
        with pytest.raises(OperationFailure) as info:
            coll.distinct("a")
        assert info.value.code == 323 and info.value.details["codeName"] == "APIStrictError"
        assert info.value.details["errmsg"].startswith(
            "Provided apiStrict:true, but the command distinct is not in API Version 1. ")
        with pytest.raises(OperationFailure) as info:
            strict.admin.command("buildInfo")
        assert info.value.code == 323
        with pytest.raises(OperationFailure) as info:
            list(coll.find({}, return_key=True))
        assert info.value.code == 323
        with pytest.raises(OperationFailure) as info:
            list(coll.aggregate([{"$match": {}}, {"$facet": {"x": [{"$currentOp": {}}]}}]))
        assert info.value.code == 323
        assert info.value.details["errmsg"] == "$currentOp is not allowed with 'apiStrict: true' in API Version 1"
        with pytest.raises(OperationFailure) as info:
            coll.create_index([("t", "text")])
        assert info.value.code == 323
    finally:
        strict.close()
    lax = MongoClient(server.uri, server_api=ServerApi("1"))
    try:
        assert lax[db.name].c.distinct("a") == [0, 1, 2, 3, 4]  # without apiStrict: anything
    finally:
        lax.close()
    # apiVersion other than "1"; apiStrict without apiVersion (raw: drivers refuse to send these)
    assert db.command("ping", apiVersion="1")["ok"] == 1.0
    for extra, code in (({"apiVersion": "2"}, 322), ({"apiStrict": True}, 4886600),
                        ({"apiDeprecationErrors": False}, 4886600)):
        with pytest.raises(OperationFailure) as info:
            db.command({"ping": 1, **extra})
        assert info.value.code == code
    with pytest.raises(OperationFailure) as info:
        db.command({"ping": 1, "apiVersion": "2"})
    assert info.value.details["errmsg"] == 'API version must be "1"'


def _winning_stage(plan: dict) -> str:
    stage = plan
    while stage.get("stage") in ("FETCH", "PROJECTION_SIMPLE", "PROJECTION_DEFAULT", "SORT", "LIMIT"):
        stage = stage["inputStage"]
    return stage["stage"]


@pytest.mark.commands("find", "explain")
def test_a_partial_index_serves_a_query_that_implies_its_filter(db):
    db.p.insert_many([{"a": i, "b": i % 3} for i in range(20)])
    db.p.create_index("a", partialFilterExpression={"a": {"$gt": 5}})
    db.p.create_index("b", partialFilterExpression={"b": {"$exists": True}})

    def stage(query):
        return _winning_stage(db.p.find(query).explain()["queryPlanner"]["winningPlan"])

    for query in ({"a": {"$gt": 10}}, {"a": {"$gte": 6}}, {"a": 7}, {"a": {"$in": [8, 9]}},
                  {"a": {"$gt": 5, "$lt": 9}}, {"$and": [{"a": {"$gt": 6}}, {"c": 1}]}):
        assert stage(query) == "IXSCAN", query
    for query in ({"a": {"$gt": 4}}, {"a": {"$gte": 5}}, {"a": 5}, {"a": {"$in": [3, 9]}}, {"a": {"$lt": 9}},
                  {"a": {"$gt": "x"}}, {"$or": [{"a": 7}, {"a": 1}]}):
        assert stage(query) == "COLLSCAN", query
    assert stage({"$or": [{"a": 7}, {"a": {"$gt": 15}}]}) == "OR"  # each branch implies the filter
    assert stage({"b": 1}) == "IXSCAN" and stage({"b": {"$gt": 0}}) == "IXSCAN"
    assert stage({"b": None}) == "COLLSCAN"
    assert sorted(d["a"] for d in db.p.find({"a": {"$gt": 10}})) == list(range(11, 20))
    assert sorted(d["a"] for d in db.p.find({"a": {"$in": [8, 9]}})) == [8, 9]
    assert len(list(db.p.find({"b": 1}))) == 7


@pytest.mark.commands("find")
def test_find_return_key(db):
    db.k.insert_many([{"_id": i, "a": i, "b": {"c": -i}, "x": "y"} for i in range(5)])
    db.k.create_index([("a", 1), ("b.c", -1)])
    assert list(db.k.find({"a": {"$gte": 3}}, return_key=True).sort("a", 1)) == [
        {"a": 3, "b.c": -3}, {"a": 4, "b.c": -4}]
    assert list(db.k.find({"a": 1}, {"x": 1}, return_key=True)) == [{"a": 1, "b.c": -1}]
    assert list(db.k.find({"x": "y"}, return_key=True).limit(2)) == [{}, {}]  # a collection scan
    assert list(db.k.find({"_id": 2}, return_key=True)) == [{"_id": 2}]
    assert len(list(db.k.find({}, return_key=False))) == 5


@pytest.mark.commands("find")
def test_find_show_record_id(db):
    db.r.insert_many([{"_id": i, "x": i, "y": -i} for i in range(4)])
    docs = list(db.r.find({}, show_record_id=True).sort("_id", 1))
    assert [list(d) for d in docs] == [["_id", "x", "y", "$recordId"]] * 4
    ids = [d["$recordId"] for d in docs]
    assert all(type(i) is Int64 for i in ids) and ids == sorted(ids) and len(set(ids)) == 4
    assert list(db.r.find({"_id": 1}, {"x": 1, "_id": 0}, show_record_id=True)) == [{"x": 1, "$recordId": ids[1]}]
    assert list(db.r.find({"_id": 2}, {"y": 0}, show_record_id=True)) == [{"_id": 2, "x": 2, "$recordId": ids[2]}]
    db.r.create_index("x")
    # pymongo's test_find_options: hint, min/max, returnKey and showRecordId together. returnKey's
    # documents are the key alone (mongod's ReturnKeyStage drops the record id; the drivers' command
    # monitoring spec expects {_id: 1} for find {sort: {_id: 1}, showRecordId, returnKey})
    assert list(db.r.find({}, hint=[("x", 1)], min={"x": 1}, max={"x": 3}, return_key=True,
                          show_record_id=True, projection={"x": False})) == [{"x": 1}, {"x": 2}]
    assert list(db.r.find({}, return_key=True, show_record_id=True).sort("_id", 1).limit(2)) == [
        {"_id": 0}, {"_id": 1}]
    assert "$recordId" not in db.r.find_one({}, show_record_id=False)


@pytest.mark.commands("find", "create")
def test_return_key_and_show_record_id_on_views_are_refused(db):
    import datetime

    db.create_collection("ts", timeseries={"timeField": "t"})
    db.ts.insert_one({"t": datetime.datetime(2026, 1, 1), "a": 1})
    db.base.insert_one({"a": 1})
    db.command("create", "v", viewOn="base", pipeline=[])
    for name in ("ts", "v"):
        for option in ("showRecordId", "returnKey"):
            with pytest.raises(OperationFailure) as info:
                db.command("find", name, **{option: True})
            assert info.value.code == 168
            assert info.value.details["errmsg"] == f"Option {option} not supported in aggregation."
        assert len(db.command("find", name, showRecordId=False)["cursor"]["firstBatch"]) == 1


@pytest.mark.commands("update", "findAndModify")
def test_pipeline_updates_may_set_top_level_dollar_fields(db):
    db.c.insert_one({"_id": 1, "foo": {}})
    set_dollar = [{"$replaceWith": {"$setField": {"field": {"$literal": "$a"}, "value": 1, "input": "$$ROOT"}}}]
    assert db.c.update_one({"_id": 1}, set_dollar).modified_count == 1
    assert db.c.find_one() == {"_id": 1, "foo": {}, "$a": 1}
    assert db.c.find_one_and_update({"_id": 2}, set_dollar, upsert=True, return_document=True) == {
        "_id": 2, "$a": 1}
    with pytest.raises(WriteError) as info:  # an operator update still may not
        db.c.update_one({"_id": 1}, {"$set": {"$b": 1}})
    assert info.value.code == 52
