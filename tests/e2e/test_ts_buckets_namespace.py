"""Defect 15.2 and issue 14.3: every read and write of ``system.buckets.<c>`` sees and acts on exactly what
``find`` shows, open buckets included, right after an insert; direct writes retire the open buckets
they affect first, so their effects are what the view shows, now and after a restart."""

import datetime as dt

import pytest
from bson.objectid import ObjectId
from pymongo.errors import DuplicateKeyError

T0 = dt.datetime(2024, 3, 1)


def setup(client, n_hosts=3, per_host=5):
    client.db.create_collection("ts", timeseries={"timeField": "t", "metaField": "host"})
    docs = [{"t": T0 + dt.timedelta(seconds=i), "host": f"h{h}", "v": float(i)}
            for h in range(n_hosts) for i in range(per_host)]
    client.db.ts.insert_many(docs)
    return client.db.ts, client.db.system.buckets.ts


@pytest.mark.slow
@pytest.mark.commands("count", "aggregate", "collStats", "dbStats", "find")
def test_counts_and_sizes_include_open_buckets_right_after_an_insert(start_server):
    proc = start_server()
    with proc.client() as client:
        coll, buckets = setup(client)
        found = list(buckets.find())
        assert len(found) == 3
        assert buckets.count_documents({}) == 3
        assert buckets.estimated_document_count() == 3
        assert buckets.count_documents({"meta": "h1"}) == 1
        assert client.db.command("count", "system.buckets.ts")["n"] == 3
        assert sorted(buckets.distinct("meta")) == ["h0", "h1", "h2"]
        stats = client.db.command("collStats", "ts")
        assert stats["timeseries"]["bucketCount"] == 3 and stats["size"] > 0 and stats["storageSize"] > 0
        (stage,) = list(coll.aggregate([{"$collStats": {"storageStats": {}, "count": {}}}]))
        assert stage["count"] == 15
        assert stage["storageStats"]["timeseries"]["bucketCount"] == 3
        (raw_stage,) = list(buckets.aggregate([{"$collStats": {"storageStats": {}, "count": {}}}]))
        assert raw_stage["count"] == 3 and raw_stage["storageStats"]["count"] == 3
        assert raw_stage["storageStats"]["size"] > 0 and raw_stage["storageStats"]["storageSize"] > 0
        bucket_stats = client.db.command("collStats", "system.buckets.ts")
        assert bucket_stats["count"] == 3 and bucket_stats["size"] > 0
        assert client.db.command("dbStats")["objects"] >= 3


@pytest.mark.slow
@pytest.mark.commands("delete", "find")
def test_direct_deletes_see_open_buckets_and_the_view_follows_them_after_a_restart(start_server):
    proc = start_server()
    with proc.client() as client:
        coll, buckets = setup(client)
        assert buckets.delete_one({"meta": "h0"}).deleted_count == 1
        assert sorted({d["host"] for d in coll.find()}) == ["h1", "h2"]
        assert buckets.delete_many({}).deleted_count == 2
        assert coll.count_documents({}) == 0
        coll.insert_one({"t": T0, "host": "h9", "v": 1.0})  # a new bucket after the deletes
    proc.kill()
    proc.start()
    with proc.client() as client:
        assert [d["host"] for d in client.db.ts.find()] == ["h9"]


@pytest.mark.slow
@pytest.mark.commands("update", "findAndModify", "find")
def test_direct_updates_and_find_and_modify_act_on_open_buckets(start_server):
    proc = start_server()
    with proc.client() as client:
        coll, buckets = setup(client)
        result = buckets.update_many({"meta": "h1"}, {"$set": {"meta": "renamed"}})
        assert (result.matched_count, result.modified_count) == (1, 1)
        assert coll.count_documents({"host": "renamed"}) == 5
        removed = buckets.find_one_and_delete({"meta": "h2"})
        assert removed is not None and len(removed["data"]["t"]) == 5
        assert coll.count_documents({"host": "h2"}) == 0
        coll.insert_one({"t": T0 + dt.timedelta(seconds=30), "host": "renamed", "v": 9.0})
        assert coll.count_documents({"host": "renamed"}) == 6
    proc.kill()
    proc.start()
    with proc.client() as client:
        assert client.db.ts.count_documents({"host": "renamed"}) == 6
        assert client.db.ts.count_documents({"host": "h2"}) == 0
        assert client.db.ts.count_documents({}) == 11


@pytest.mark.slow
@pytest.mark.commands("insert", "find")
def test_a_direct_insert_reusing_an_open_buckets_id_is_a_duplicate_key(start_server):
    proc = start_server()
    with proc.client() as client:
        coll, buckets = setup(client, n_hosts=1)
        (bucket,) = list(buckets.find())
        clone = dict(bucket)
        with pytest.raises(DuplicateKeyError):
            buckets.insert_one(clone)
        other = dict(bucket, _id=ObjectId.from_datetime(T0))
        buckets.insert_one(other)
        assert coll.count_documents({}) == 10
    proc.kill()
    proc.start()
    with proc.client() as client:
        assert client.db.ts.count_documents({}) == 10
        assert client.db.system.buckets.ts.count_documents({}) == 2


@pytest.mark.parametrize("extra", [-1, 0, 1, 15, 16])
def test_a_time_series_name_leaves_room_for_its_buckets_namespace(db, extra):
    """The buckets collection ``<db>.system.buckets.<name>`` is a namespace like any other: 255 bytes at
    most. A time-series name whose buckets namespace would be longer is refused (73, naming that
    namespace) and creates nothing; the ordinary collection of the same name is fine up to 255."""
    from pymongo.errors import OperationFailure

    room = 255 - len(db.name) - 1 - len("system.buckets.")  # the longest time-series name
    name = "é" * ((room + extra) // 2) + "x" * ((room + extra) % 2)  # (two bytes a character, then one)
    assert len(name.encode()) == room + extra
    if extra <= 0:
        db.create_collection(name, timeseries={"timeField": "t"})
        db[name].insert_one({"t": T0})
        assert db[f"system.buckets.{name}"].count_documents({}) == 1
        return
    with pytest.raises(OperationFailure) as refused:
        db.create_collection(name, timeseries={"timeField": "t"})
    assert refused.value.code == 73
    own_too_long = len(db.name) + 1 + len(name.encode()) > 255  # (then its own namespace is named)
    assert refused.value.details["errmsg"].startswith(
        f"Fully qualified namespace is too long. Namespace: {db.name}." + ("" if own_too_long else "system.buckets."))
    assert refused.value.details["errmsg"].endswith(" Max: 255")
    assert name not in db.list_collection_names()
    if not own_too_long:
        db.create_collection(name)  # (as an ordinary collection it fits)
