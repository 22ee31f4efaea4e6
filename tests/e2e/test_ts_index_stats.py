"""``$indexStats`` (issue 25 item 5): on a time-series collection it lists the indexes in user form —
the key pattern the user created, as listIndexes on the view shows it, bucket indexes with no user form
left out — and on every collection it counts accesses: one op per read whose plan scans the index
(hinted or chosen), none for explain; a re-created or hidden/unhidden index starts again at 0
(mongod's jstests/core/timeseries/timeseries_index_stats.js and jstests/core/index_stats.js)."""

import datetime as dt

import pytest
from bson.int64 import Int64

T0 = dt.datetime(2024, 1, 1)


def _stats(coll):
    return {d["name"]: d for d in coll.aggregate([{"$indexStats": {}}])}


def _ops(coll, name):
    return _stats(coll)[name]["accesses"]["ops"]


def _ts(db, name="ts"):
    db.create_collection(name, timeseries={"timeField": "tm", "metaField": "mm"})
    coll = db[name]
    coll.insert_one({"_id": 0, "tm": T0, "mm": {"tag1": "a", "tag2": "b"}, "x": 1})
    return coll


@pytest.mark.commands("aggregate", "createIndexes")
def test_index_stats_on_a_time_series_collection_shows_user_key_patterns(db):
    coll = _ts(db)
    keys = {
        "index0": {"mm.tag1": 1},
        "index1": {"mm.tag2": -1, "tm": -1},
        "index2": {"mm.tag3": 1, "mm.tag4": 1},
        "x_1": {"x": 1},
        "mm_1_tm_1": {"mm": 1, "tm": 1},  # the default index create builds
    }
    for name, key in keys.items():
        if name != "mm_1_tm_1":
            coll.create_index(list(key.items()), name=name)
    # no user form: left out on the view, listed on the buckets collection
    db["system.buckets.ts"].create_index([("not_metadata", 1)], name="bucketindex")

    docs = list(coll.aggregate([{"$indexStats": {}}]))
    assert {d["name"]: d["key"] for d in docs} == keys
    assert all(d["spec"]["key"] == keys[d["name"]] for d in docs)
    assert [d["name"] for d in docs] == [ix["name"] for ix in coll.list_indexes()]
    for d in docs:
        assert list(d) == ["name", "key", "host", "accesses", "spec"]
        assert d["accesses"]["ops"] == 0 and isinstance(d["accesses"]["since"], dt.datetime)
        assert isinstance(d["accesses"]["ops"], Int64)
    assert len(list(db["system.buckets.ts"].aggregate([{"$indexStats": {}}]))) == len(keys) + 1
    # not limited to a one-stage pipeline
    grouped = list(coll.aggregate([{"$indexStats": {}}, {"$group": {"_id": 0, "names": {"$addToSet": "$name"}}}]))
    assert sorted(grouped[0]["names"]) == sorted(keys)


@pytest.mark.commands("find", "aggregate", "count", "distinct", "explain")
def test_time_series_reads_count_the_accesses_of_the_index_they_scan(db):
    coll = _ts(db)
    coll.create_index([("mm.tag1", 1)], name="tag1")
    coll.create_index([("x", 1)], name="x_1")
    assert _ops(coll, "tag1") == 0

    assert len(list(coll.find({"mm.tag1": "a"}))) == 1  # planned
    assert _ops(coll, "tag1") == 1
    assert len(list(coll.find().hint("x_1"))) == 1  # hinted by name
    assert len(list(coll.find().hint([("x", 1)]))) == 1  # hinted by user key pattern
    assert _ops(coll, "x_1") == 2
    list(coll.aggregate([{"$match": {"mm.tag1": "a"}}]))
    coll.count_documents({"mm.tag1": "a"})
    coll.distinct("x", {"mm.tag1": "a"})
    assert _ops(coll, "tag1") == 4
    # explain plans the read (and runs it for executionStats) without counting it
    coll.find({"mm.tag1": "a"}).explain()
    db.command("explain", {"find": "ts", "filter": {"mm.tag1": "a"}}, verbosity="executionStats")
    db.command("explain", {"aggregate": "ts", "pipeline": [{"$match": {"mm.tag1": "a"}}], "cursor": {}})
    assert _ops(coll, "tag1") == 4
    # a scan of the clustered buckets touches no secondary index
    list(coll.find({"tm": {"$gte": T0}}).hint({"$natural": 1}))
    assert _ops(coll, "x_1") == 2 and _ops(coll, "mm_1_tm_1") == 0
    # the buckets collection reports the same counters under the same names
    assert _ops(db["system.buckets.ts"], "tag1") == 4


@pytest.mark.commands("find", "aggregate", "dropIndexes", "collMod")
def test_regular_collection_accesses_count_reads_and_reset_with_the_index(db):
    coll = db.c
    coll.insert_many([{"_id": i, "a": i, "b": i} for i in range(3)])
    coll.create_index("a", name="a_1")
    coll.create_index("b", name="b_1")
    assert _ops(coll, "a_1") == 0

    coll.find_one({"a": 1})
    assert _ops(coll, "a_1") == 1
    coll.find_one({"$or": [{"a": 1}, {"b": 2}]})  # an index union counts each index
    assert (_ops(coll, "a_1"), _ops(coll, "b_1")) == (2, 1)
    list(coll.aggregate([{"$match": {"b": 1}}]))
    assert _ops(coll, "b_1") == 2
    coll.find({"a": 1}).explain()
    assert _ops(coll, "a_1") == 2
    assert _ops(coll, "_id_") == 0

    # a new definition of the index (hidden) and a re-created index count from 0 again
    db.command("collMod", "c", index={"name": "a_1", "hidden": True})
    assert _ops(coll, "a_1") == 0
    db.command("collMod", "c", index={"name": "a_1", "hidden": False})
    coll.find_one({"a": 1})
    assert _ops(coll, "a_1") == 1
    coll.drop_index("b_1")
    assert "b_1" not in _stats(coll)
    coll.create_index("b", name="b_1")
    assert _ops(coll, "b_1") == 0


@pytest.mark.commands("aggregate")
def test_index_stats_of_a_missing_collection_is_empty(db):
    assert list(db.nothing.aggregate([{"$indexStats": {}}])) == []
