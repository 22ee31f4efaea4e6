"""aggregate (collection and database level), explain, and views end to end."""

from __future__ import annotations

import pytest
from bson.int64 import Int64
from pymongo.errors import OperationFailure


@pytest.fixture
def sales(db):
    db.sales.insert_many([{"_id": i, "item": "abc"[i % 3], "qty": i, "price": 10 + i % 4} for i in range(30)])
    return db


@pytest.mark.commands("aggregate")
def test_aggregate_group_sort_returns_cursor(sales):
    out = list(sales.sales.aggregate([{"$group": {"_id": "$item", "n": {"$sum": 1}, "q": {"$sum": "$qty"}}},
                                      {"$sort": {"_id": 1}}]))
    assert out == [{"_id": "a", "n": 10, "q": 135}, {"_id": "b", "n": 10, "q": 145}, {"_id": "c", "n": 10, "q": 155}]


@pytest.mark.commands("aggregate", "getMore")
def test_aggregate_cursor_batches_and_int64_id(sales):
    reply = sales.command("aggregate", "sales", pipeline=[{"$match": {}}], cursor={"batchSize": 4})
    assert len(reply["cursor"]["firstBatch"]) == 4 and isinstance(reply["cursor"]["id"], Int64)
    assert reply["cursor"]["ns"] == f"{sales.name}.sales"
    assert len(list(sales.sales.aggregate([], batchSize=7))) == 30


@pytest.mark.commands("aggregate")
def test_aggregate_requires_cursor_and_pipeline_array(sales):
    with pytest.raises(OperationFailure) as e:
        sales.command({"aggregate": "sales", "pipeline": []})
    assert e.value.code == 9
    with pytest.raises(OperationFailure) as e:
        sales.command({"aggregate": "sales", "pipeline": {}, "cursor": {}})
    assert e.value.code == 14


@pytest.mark.commands("aggregate")
def test_unknown_stage_is_40324(sales):
    with pytest.raises(OperationFailure) as e:
        list(sales.sales.aggregate([{"$bogus": {}}]))
    assert e.value.code == 40324


@pytest.mark.commands("aggregate")
def test_count_documents_and_let(sales):
    assert sales.sales.count_documents({"item": "a"}) == 10
    out = list(sales.sales.aggregate([{"$match": {"$expr": {"$eq": ["$qty", "$$q"]}}}], let={"q": 7}))
    assert [d["_id"] for d in out] == [7]


@pytest.mark.commands("aggregate")
def test_database_level_aggregate_with_documents(db):
    out = list(db.aggregate([{"$documents": [{"x": 1}, {"x": 2}]}, {"$match": {"x": 2}}]))
    assert out == [{"x": 2}]
    with pytest.raises(OperationFailure) as e:
        list(db.aggregate([{"$match": {}}]))
    assert e.value.code == 73


@pytest.mark.commands("aggregate")
def test_lookup_joins_another_collection(sales):
    sales.items.insert_many([{"_id": "a", "name": "apple"}, {"_id": "b", "name": "banana"}])
    out = list(sales.sales.aggregate([{"$match": {"_id": {"$lt": 2}}},
                                      {"$lookup": {"from": "items", "localField": "item", "foreignField": "_id",
                                                   "as": "info"}}, {"$sort": {"_id": 1}}]))
    assert [d["info"][0]["name"] for d in out] == ["apple", "banana"]


@pytest.mark.commands("aggregate")
def test_out_and_merge_write_collections(sales):
    list(sales.sales.aggregate([{"$match": {"item": "a"}}, {"$out": "only_a"}]))
    assert len(list(sales.only_a.find())) == 10
    list(sales.sales.aggregate([{"$group": {"_id": "$item", "n": {"$sum": 1}}}, {"$merge": {"into": "totals"}}]))
    list(sales.sales.aggregate([{"$group": {"_id": "$item", "n": {"$sum": 2}}}, {"$merge": {"into": "totals"}}]))
    assert sorted((d["_id"], d["n"]) for d in sales.totals.find()) == [("a", 20), ("b", 20), ("c", 20)]


@pytest.mark.commands("aggregate")
def test_coll_stats_stage_storage_stats(sales):
    [doc] = list(sales.sales.aggregate([{"$collStats": {"storageStats": {}}}]))
    assert doc["ns"] == f"{sales.name}.sales" and doc["storageStats"]["count"] == 30
    assert doc["storageStats"]["nindexes"] == 1


@pytest.mark.commands("explain", "aggregate")
def test_explain_find_and_aggregate(sales):
    sales.sales.create_index("qty")
    plan = sales.command("explain", {"find": "sales", "filter": {"qty": {"$gt": 25}}}, verbosity="executionStats")
    assert plan["queryPlanner"]["winningPlan"]["inputStage"]["stage"] == "IXSCAN"
    assert plan["executionStats"]["nReturned"] == 4
    assert plan["executionStats"]["executionStages"]["stage"] == "FETCH"
    agg = sales.command("aggregate", "sales", pipeline=[{"$match": {"qty": 3}}, {"$project": {"qty": 1}}],
                        explain=True)
    # $match + inclusion $project: the query layer answers alone (optimizedPipeline), the projection on top
    plan = agg["queryPlanner"]["winningPlan"]
    assert agg["queryPlanner"]["optimizedPipeline"] is True and plan["stage"] == "PROJECTION_SIMPLE"
    assert plan["inputStage"]["inputStage"]["indexName"] == "qty_1"


@pytest.mark.commands("explain", "count", "distinct", "update", "delete", "findAndModify")
def test_explain_other_commands(sales):
    for inner in ({"count": "sales", "query": {"qty": 1}}, {"distinct": "sales", "key": "item"},
                  {"update": "sales", "updates": [{"q": {"qty": 1}, "u": {"$set": {"x": 1}}}]},
                  {"delete": "sales", "deletes": [{"q": {"qty": 1}, "limit": 1}]},
                  {"findAndModify": "sales", "query": {"qty": 1}, "remove": True}):
        reply = sales.command("explain", inner)
        assert "queryPlanner" in reply
    assert sales.sales.find_one({"qty": 1}) is not None  # explain never writes


@pytest.mark.commands("create", "find", "listCollections")
def test_view_reads_run_its_pipeline(sales):
    sales.command("create", "a_items", viewOn="sales", pipeline=[{"$match": {"item": "a"}},
                                                                  {"$project": {"qty": 1}}])
    assert [d["qty"] for d in sales.a_items.find({"qty": {"$gt": 20}}).sort("qty", -1)] == [27, 24, 21]
    assert sales.a_items.count_documents({}) == 10
    assert sales.command("count", "a_items")["n"] == 10
    assert sorted(sales.a_items.distinct("qty"))[:2] == [0, 3]
    entry = next(e for e in sales.list_collections() if e["name"] == "a_items")
    assert entry["type"] == "view" and entry["options"]["viewOn"] == "sales"
    assert entry["info"]["readOnly"] is True
    assert sales.list_collection_names(filter={"type": "view"}) == ["a_items"]


@pytest.mark.commands("create", "aggregate")
def test_view_on_view_chains_pipelines(sales):
    sales.command("create", "v1", viewOn="sales", pipeline=[{"$match": {"item": "b"}}])
    sales.command("create", "v2", viewOn="v1", pipeline=[{"$match": {"qty": {"$lt": 10}}}])
    assert [d["_id"] for d in sales.v2.aggregate([{"$sort": {"_id": 1}}])] == [1, 4, 7]


@pytest.mark.commands("create", "collMod", "drop")
def test_view_errors_cycle_and_modification(sales):
    sales.command("create", "v1", viewOn="sales", pipeline=[])
    with pytest.raises(OperationFailure) as e:
        sales.command("create", "v1", viewOn="sales", pipeline=[{"$match": {"x": 1}}])
    assert e.value.code == 48
    with pytest.raises(OperationFailure) as e:
        sales.command("create", "bad", viewOn="sales", pipeline=[{"$out": "x"}])
    assert e.value.code in (167, 9)
    sales.command("collMod", "v1", viewOn="sales", pipeline=[{"$match": {"item": "c"}}])
    assert len(list(sales.v1.find())) == 10
    sales.command("create", "v2", viewOn="v1", pipeline=[])
    with pytest.raises(OperationFailure):
        sales.command("collMod", "v1", viewOn="v2", pipeline=[])
    sales.drop_collection("v2")
    sales.drop_collection("v1")
    assert "v1" not in sales.list_collection_names()  # (system.views stays, as in mongod)


@pytest.mark.commands("insert", "update", "delete", "findAndModify", "createIndexes")
def test_writes_and_index_builds_on_a_view_are_refused_with_166(db):
    db.base.insert_one({"a": 1})
    db.command("create", "v", viewOn="base", pipeline=[])
    for op in (lambda: db.v.insert_one({"a": 2}), lambda: db.v.update_one({}, {"$set": {"a": 3}}),
               lambda: db.v.delete_one({}), lambda: db.v.find_one_and_delete({}),
               lambda: db.v.create_index("a")):
        with pytest.raises(OperationFailure) as e:
            op()
        assert e.value.code == 166


@pytest.mark.commands("aggregate")
def test_out_and_merge_into_a_view_are_refused(sales):
    sales.command("create", "v", viewOn="sales", pipeline=[])
    for stage in ({"$out": "v"}, {"$merge": {"into": "v"}}):
        with pytest.raises(OperationFailure) as e:
            list(sales.sales.aggregate([stage]))
        assert e.value.code == 166
