"""Updates (5.1+ rules) and deletes (7.0 arbitrary deletes) on time-series collections (spec §6)."""

from __future__ import annotations

import datetime as dt

import pytest
from pymongo import DeleteMany, DeleteOne, UpdateMany, UpdateOne
from pymongo.errors import BulkWriteError, OperationFailure

T0 = dt.datetime(2024, 3, 1, 12, 0, 0)


def _ts(db, meta="tag", name="c"):
    options = {"timeField": "time"}
    if meta:
        options["metaField"] = meta
    db.create_collection(name, timeseries=options)
    return db[name]


def _code(fn):
    with pytest.raises(OperationFailure) as info:
        fn()
    return info.value.code, info.value.details.get("errmsg", "")


def _sorted(coll, flt=None):
    docs = [{k: v for k, v in d.items() if k != "_id"} for d in coll.find(flt or {})]
    return sorted(docs, key=lambda d: (d["time"], repr(d)))


# ---------------------------------------------------------------------------------------------- updates


@pytest.mark.commands("update")
def test_spec_update_example_changes_meta_of_matching_measurements_only(db):
    coll = _ts(db)
    docs = [
        {"time": T0, "tag": {"tag": {"a": "a", "b": 1}}, "v": 1},
        {"time": T0 + dt.timedelta(seconds=1), "tag": {"tag": {"a": "a", "b": 1}}, "v": 2},
        {"time": T0 + dt.timedelta(seconds=2), "tag": {"tag": {"a": "z", "b": 1}}, "v": 3},
    ]
    coll.insert_many(docs)
    result = coll.update_many(
        {"tag.tag.a": "a"}, {"$set": {"tag.tag.a": "A"}, "$rename": {"tag.tag.b": "tag.tag.c"}}
    )
    assert result.matched_count == 2 and result.modified_count == 2
    got = _sorted(coll)
    assert [d["tag"] for d in got] == [{"tag": {"a": "A", "c": 1}}] * 2 + [{"tag": {"a": "z", "b": 1}}]
    assert [d["v"] for d in got] == [1, 2, 3]


def test_update_one_is_72_non_multi(db):
    coll = _ts(db)
    coll.insert_one({"time": T0, "tag": 1})
    code, msg = _code(lambda: coll.update_one({"tag": 1}, {"$set": {"tag": 2}}))
    assert (code, msg) == (72, "Cannot perform a non-multi update on a time-series collection")


def test_update_rules_have_exact_codes_and_messages(db):
    coll = _ts(db)
    coll.insert_one({"time": T0, "tag": 1, "v": 1})
    assert _code(lambda: coll.update_many({"tag": 1}, {"$set": {"tag": 2}}, upsert=True)) == (
        72,
        "Cannot perform an upsert on a time-series collection",
    )
    assert _code(lambda: coll.update_many({"v": 1}, {"$set": {"tag": 2}})) == (
        72,
        "Cannot perform an update or delete on a time-series collection when querying on a field that is "
        "not the metaField 'tag'",
    )
    assert _code(lambda: coll.update_many({}, {"$set": {"v": 2}})) == (
        72,
        "Cannot perform an update on a time-series collection which updates a field that is not the "
        "metaField 'tag'",
    )
    assert _code(lambda: coll.update_many({}, [{"$set": {"tag": 2}}]))[1] == (
        "Cannot perform an update on a time-series collection using a pipeline update"
    )
    assert _code(lambda: coll.replace_one({}, {"tag": 2}))[0] == 72


def test_update_without_meta_field_is_72(db):
    coll = _ts(db, meta=None)
    coll.insert_one({"time": T0, "v": 1})
    assert _code(lambda: coll.update_many({}, {"$set": {"v": 2}})) == (
        72,
        "Cannot perform an update on a time-series collection that does not have a metaField",
    )


def test_unordered_update_batch_applies_valid_statements_and_reports_errors(db):
    coll = _ts(db)
    coll.insert_many([{"time": T0, "tag": 1}, {"time": T0, "tag": 2}])
    with pytest.raises(BulkWriteError) as info:
        coll.bulk_write(
            [UpdateOne({"tag": 1}, {"$set": {"tag": 10}}), UpdateMany({"tag": 2}, {"$set": {"tag": 20}})],
            ordered=False,
        )
    details = info.value.details
    assert [e["index"] for e in details["writeErrors"]] == [0]
    assert details["nModified"] == 1
    assert sorted(d["tag"] for d in coll.find()) == [1, 20]


def test_ordered_update_batch_stops_at_the_first_error(db):
    coll = _ts(db)
    coll.insert_many([{"time": T0, "tag": 1}, {"time": T0, "tag": 2}])
    with pytest.raises(BulkWriteError):
        coll.bulk_write(
            [
                UpdateMany({"tag": 2}, {"$set": {"tag": 20}}),
                UpdateOne({"tag": 1}, {"$set": {"tag": 10}}),
                UpdateMany({"tag": 1}, {"$set": {"tag": 11}}),
            ],
            ordered=True,
        )
    assert sorted(d["tag"] for d in coll.find()) == [1, 20]


# ---------------------------------------------------------------------------------------------- deletes


def _buckets(db, name="c"):
    return list(db[f"system.buckets.{name}"].find())


@pytest.mark.commands("delete")
def test_meta_delete_removes_whole_buckets_and_counts_measurements(db):
    coll = _ts(db)
    coll.insert_many([{"time": T0 + dt.timedelta(seconds=i), "tag": i % 2, "v": i} for i in range(10)])
    assert db.command("collStats", "c")["timeseries"]["bucketCount"] == 2
    assert coll.delete_many({"tag": 0}).deleted_count == 5
    assert [b["meta"] for b in _buckets(db)] == [1]
    assert sorted(d["v"] for d in coll.find()) == [1, 3, 5, 7, 9]


def test_measurement_delete_keeps_other_measurements_and_bucket_id(db):
    coll = _ts(db)
    coll.insert_many([{"time": T0 + dt.timedelta(seconds=i), "tag": "a", "v": i} for i in range(5)])
    assert coll.delete_many({"v": 0}).deleted_count == 1
    (before,) = _buckets(db)  # a delete writes open buckets in full, so storage holds the bucket now
    assert coll.delete_many({"v": {"$gte": 3}}).deleted_count == 2
    (after,) = _buckets(db)
    assert after["_id"] == before["_id"]
    assert sorted(d["v"] for d in coll.find()) == [1, 2]
    assert after["control"]["min"]["v"] == 1 and after["control"]["max"]["v"] == 2


def test_deleting_the_last_measurement_removes_the_bucket(db):
    coll = _ts(db)
    coll.insert_many([{"time": T0, "tag": "a", "v": 1}, {"time": T0, "tag": "b", "v": 2}])
    assert coll.delete_many({"v": 1}).deleted_count == 1
    assert [b["meta"] for b in _buckets(db)] == ["b"]


def test_delete_one_removes_exactly_one_measurement(db):
    coll = _ts(db)
    coll.insert_many([{"time": T0 + dt.timedelta(seconds=i), "tag": "a", "v": 7} for i in range(3)])
    assert coll.delete_one({"v": 7}).deleted_count == 1
    assert coll.count_documents({}) == 2


def test_empty_filter_delete_many_without_meta_field(db):
    coll = _ts(db, meta=None)
    coll.insert_many([{"time": T0, "v": i} for i in range(4)])
    assert coll.delete_many({}).deleted_count == 4
    assert _buckets(db) == []


def test_insert_after_delete_never_resurrects_deleted_measurements(db):
    coll = _ts(db)
    coll.insert_many([{"time": T0 + dt.timedelta(seconds=i), "tag": "a", "v": i} for i in range(5)])
    coll.delete_many({"v": {"$lt": 3}})
    coll.insert_one({"time": T0 + dt.timedelta(seconds=10), "tag": "a", "v": 10})
    coll.delete_many({"v": 3})
    coll.insert_one({"time": T0 + dt.timedelta(seconds=11), "tag": "a", "v": 11})
    assert sorted(d["v"] for d in coll.find()) == [4, 10, 11]


def test_bulk_deletes_report_measurement_counts(db):
    coll = _ts(db)
    coll.insert_many([{"time": T0, "tag": i % 3, "v": i} for i in range(9)])
    result = coll.bulk_write([DeleteMany({"tag": 0}), DeleteOne({"v": 1}), DeleteMany({"v": {"$gt": 6}})])
    assert result.deleted_count == 3 + 1 + 2
    assert sorted(d["v"] for d in coll.find()) == [2, 4, 5]


@pytest.mark.commands("findAndModify")
def test_find_one_and_delete_returns_the_measurement(db):
    coll = _ts(db)
    coll.insert_many([{"time": T0, "tag": "a", "v": 1}, {"time": T0, "tag": "a", "v": 2}])
    doc = coll.find_one_and_delete({"v": 2}, projection={"_id": 0})
    assert doc == {"time": T0, "tag": "a", "v": 2}
    assert [d["v"] for d in coll.find()] == [1]


def test_find_and_modify_with_sort_or_update_is_72(db):
    coll = _ts(db)
    coll.insert_one({"time": T0, "tag": "a", "v": 1})
    assert _code(lambda: coll.find_one_and_delete({}, sort=[("v", 1)]))[0] == 72
    assert _code(lambda: coll.find_one_and_update({"tag": "a"}, {"$set": {"tag": "b"}}))[0] == 72


def test_delete_and_update_hints_use_user_key_patterns(db):
    coll = _ts(db)
    coll.insert_many([{"time": T0, "tag": i % 2, "v": i} for i in range(6)])
    assert coll.delete_many({"tag": 0}, hint=[("tag", 1), ("time", 1)]).deleted_count == 3
    assert coll.update_many({"tag": 1}, {"$set": {"tag": 5}}, hint="tag_1_time_1").modified_count == 3
    with pytest.raises(OperationFailure) as info:
        coll.delete_many({"tag": 5}, hint="nope")
    assert info.value.code == 2
    assert coll.count_documents({"tag": 5}) == 3


def test_concurrent_inserts_during_deletes_never_resurrect_deleted_measurements(db):
    import threading

    coll = _ts(db)
    coll.insert_many([{"time": T0 + dt.timedelta(seconds=i), "tag": "a", "v": i} for i in range(200)])
    stop = threading.Event()
    inserted: list[int] = []

    def writer():
        i = 1000
        while not stop.is_set() and i < 1400:
            coll.insert_one({"time": T0 + dt.timedelta(seconds=i), "tag": "a", "v": i})
            inserted.append(i)
            i += 1

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        for low in range(0, 200, 20):
            coll.delete_many({"v": {"$gte": low, "$lt": low + 20}})
    finally:
        stop.set()
        thread.join()
    remaining = sorted(d["v"] for d in coll.find())
    assert remaining == sorted(inserted)


@pytest.mark.slow
def test_deleted_measurements_stay_deleted_after_a_crash_and_restart(start_server):
    proc = start_server()
    client = proc.client()
    db = client.crash
    coll = _ts(db)
    coll.insert_many([{"time": T0 + dt.timedelta(seconds=i), "tag": "a", "v": i} for i in range(10)])
    coll.delete_many({"v": {"$lt": 5}})
    coll.insert_one({"time": T0 + dt.timedelta(seconds=20), "tag": "a", "v": 20})
    client.close()
    proc.kill()
    proc.start()
    with proc.client() as again:
        assert sorted(d["v"] for d in again.crash.c.find()) == [5, 6, 7, 8, 9, 20]
