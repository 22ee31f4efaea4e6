"""Time-series collections end to end with pymongo: create, catalog shape, insert, reads on the view
and on system.buckets, bucket rules, statistics, drop (spec §1-§5)."""

import datetime as dt

import pytest
from bson.objectid import ObjectId
from pymongo.errors import BulkWriteError, OperationFailure

T0 = dt.datetime(2021, 5, 18, 0, 0)
pytestmark = pytest.mark.commands(
    "create", "insert", "find", "aggregate", "listCollections", "drop", "count", "distinct"
)


def weather_docs():
    docs = [
        {"metadata": {"sensorId": 5578, "type": "temperature"}, "timestamp": T0, "temp": 12},
        {
            "metadata": {"sensorId": 5578, "type": "temperature"},
            "timestamp": T0 + dt.timedelta(hours=4),
            "temp": 11,
        },
        {
            "metadata": {"sensorId": 5578, "type": "temperature"},
            "timestamp": T0 + dt.timedelta(hours=8),
            "temp": 11,
            "ext1": 1,
        },
    ]
    for doc in docs:
        doc["timestamp"] = doc["timestamp"].replace(hour=0, minute=doc["timestamp"].hour)
    return docs


def test_worked_example_create_list_insert_find_and_buckets(db):
    db.create_collection("weather", timeseries={"timeField": "timestamp", "metaField": "metadata"})
    names = sorted(db.list_collection_names())
    assert names == ["system.buckets.weather", "system.views", "weather"]
    entries = {e["name"]: e for e in db.list_collections()}
    assert entries["weather"] == {
        "name": "weather",
        "type": "timeseries",
        "options": {
            "timeseries": {
                "timeField": "timestamp",
                "metaField": "metadata",
                "granularity": "seconds",
                "bucketMaxSpanSeconds": 3600,
            }
        },
        "info": {"readOnly": False},
    }
    assert entries["system.buckets.weather"]["options"]["clusteredIndex"] is True
    assert list(db.system.views.find()) == [
        {
            "_id": f"{db.name}.weather",
            "viewOn": "system.buckets.weather",
            "pipeline": [
                {
                    "$_internalUnpackBucket": {
                        "timeField": "timestamp",
                        "metaField": "metadata",
                        "bucketMaxSpanSeconds": 3600,
                    }
                }
            ],
        }
    ]
    docs = weather_docs()
    db.weather.insert_many(docs)
    found = sorted(db.weather.find(), key=lambda d: d["timestamp"])
    assert found == sorted(docs, key=lambda d: d["timestamp"])
    # time field, then meta field (the reply encoder may move _id to the front of top-level documents)
    assert [k for k in found[0] if k != "_id"][:2] == ["timestamp", "metadata"]
    (bucket,) = list(db.system.buckets.weather.find())
    assert bucket["control"]["version"] == 1
    assert bucket["control"]["min"]["timestamp"] == T0
    assert bucket["control"]["max"]["temp"] == 12 and bucket["control"]["min"]["temp"] == 11
    assert set(bucket["data"]["temp"]) == {"0", "1", "2"}
    assert bucket["data"]["ext1"] == {"2": 1}
    assert bucket["meta"] == {"sensorId": 5578, "type": "temperature"}


def test_create_validation_codes(db):
    with pytest.raises(OperationFailure) as info:
        db.create_collection("c", timeseries={"timeField": "t", "metaField": "t"})
    assert info.value.code == 72
    with pytest.raises(OperationFailure) as info:
        db.create_collection("c", timeseries={"timeField": "t"}, validator={"a": 1})
    assert info.value.code == 72
    with pytest.raises(OperationFailure) as info:
        db.command("create", "c", timeseries={"timeField": "t", "bogus": 1})
    assert info.value.code == 40415
    db.command("create", "c", timeseries={"timeField": "t"})
    db.command("create", "c", timeseries={"timeField": "t"})  # idempotent
    with pytest.raises(OperationFailure) as info:
        db.command("create", "c", timeseries={"timeField": "t", "metaField": "m"})
    assert info.value.code == 48
    with pytest.raises(OperationFailure) as info:
        db.command("create", "system.buckets.other")
    assert info.value.code == 20


def test_insert_requires_a_date_time_field(db):
    db.create_collection("c", timeseries={"timeField": "t"})
    with pytest.raises(BulkWriteError) as info:
        db.c.insert_many([{"t": T0}, {"t": "x"}, {"x": 1}], ordered=False)
    details = info.value.details
    assert details["nInserted"] == 1
    assert [(e["index"], e["code"]) for e in details["writeErrors"]] == [(1, 2), (2, 2)]
    assert (
        details["writeErrors"][0]["errmsg"]
        == "'t' must be present and contain a valid BSON UTC datetime value"
    )
    reply = db.command("insert", "c", documents=[{"t": T0, "v": 1}])
    assert reply["n"] == 1
    assert all("_id" in d for d in db.c.find())


def test_count_distinct_and_aggregate_on_the_view(db):
    db.create_collection("c", timeseries={"timeField": "t", "metaField": "m"})
    db.c.insert_many([{"t": T0 + dt.timedelta(seconds=i), "m": i % 3, "v": i} for i in range(30)])
    assert db.c.count_documents({}) == 30
    assert db.c.count_documents({"m": 1, "v": {"$gte": 10}}) == 7
    assert db.c.estimated_document_count() == 30
    assert sorted(db.c.distinct("m")) == [0, 1, 2]
    out = list(
        db.c.aggregate(
            [
                {"$match": {"t": {"$lt": T0 + dt.timedelta(seconds=10)}}},
                {"$group": {"_id": "$m", "n": {"$sum": 1}}},
                {"$sort": {"_id": 1}},
            ]
        )
    )
    assert out == [{"_id": 0, "n": 4}, {"_id": 1, "n": 3}, {"_id": 2, "n": 3}]
    assert [d["v"] for d in db.c.find({}, {"_id": 0, "v": 1}).sort("t", -1).limit(3)] == [29, 28, 27]


def test_getmore_resumes_without_repeating(db):
    db.create_collection("c", timeseries={"timeField": "t", "metaField": "m"})
    db.c.insert_many([{"t": T0 + dt.timedelta(seconds=i), "m": i % 5, "v": i} for i in range(2500)])
    values = [d["v"] for d in db.c.find({}, batch_size=101)]
    assert sorted(values) == list(range(2500))


def test_bucket_limits_through_system_buckets(db):
    db.create_collection("c", timeseries={"timeField": "t", "metaField": "m"})
    db.c.insert_many([{"t": T0 + dt.timedelta(milliseconds=i), "m": "one", "v": i} for i in range(2500)])
    sizes = sorted(len(b["data"]["t"]) for b in db.system.buckets.c.find())
    assert sizes == [500, 1000, 1000]
    stats = db.command("collStats", "c")["timeseries"]
    assert stats["numBucketsClosedDueToCount"] == 2
    assert stats["numMeasurementsCommitted"] == 2500


@pytest.mark.parametrize(
    "granularity,start",
    [
        ("seconds", dt.datetime(2021, 5, 18, 20, 10)),
        ("minutes", dt.datetime(2021, 5, 18, 20, 0)),
        ("hours", dt.datetime(2021, 5, 18, 0, 0)),
    ],
)
def test_bucket_id_and_control_min_are_rounded_per_granularity(db, granularity, start):
    db.create_collection("c", timeseries={"timeField": "t", "granularity": granularity})
    db.c.insert_one({"t": dt.datetime(2021, 5, 18, 20, 10, 14, 134000)})
    (bucket,) = list(db.system.buckets.c.find())
    assert bucket["control"]["min"]["t"] == start
    assert bucket["_id"].generation_time.replace(tzinfo=None) == start


def test_custom_rounding_and_span_boundary(db):
    db.create_collection(
        "c", timeseries={"timeField": "t", "bucketMaxSpanSeconds": 600, "bucketRoundingSeconds": 600}
    )
    db.c.insert_one({"t": dt.datetime(2021, 5, 18, 20, 10, 14)})
    db.c.insert_one({"t": dt.datetime(2021, 5, 18, 20, 19, 59, 999000)})
    db.c.insert_one({"t": dt.datetime(2021, 5, 18, 20, 20)})
    counts = sorted(len(b["data"]["t"]) for b in db.system.buckets.c.find())
    assert counts == [1, 2]
    starts = sorted(b["control"]["min"]["t"] for b in db.system.buckets.c.find())
    assert starts == [dt.datetime(2021, 5, 18, 20, 10), dt.datetime(2021, 5, 18, 20, 20)]


def test_meta_grouping_and_alternating_days(db):
    db.create_collection("c", timeseries={"timeField": "t", "metaField": "m"})
    db.c.insert_many(
        [
            {"t": T0, "m": {"b": 1, "a": 1}},
            {"t": T0, "m": {"a": 1, "b": 1}},
            {"t": T0, "m": {"a": 2}},
            {"t": T0, "m": None},
            {"t": T0},
        ]
    )
    assert db.system.buckets.c.count_documents({}) == 4
    assert db.c.count_documents({"m": {"a": 1, "b": 1}}) == 2
    assert db.c.count_documents({"m": {"b": 1, "a": 1}}) == 0
    db.create_collection("d", timeseries={"timeField": "t", "metaField": "m"})
    day1, day2 = dt.datetime(2021, 5, 18, 10), dt.datetime(2021, 5, 19, 10)
    for i in range(2000):
        db.d.insert_many(
            [{"t": day1 + dt.timedelta(seconds=i), "m": 1}, {"t": day2 + dt.timedelta(seconds=i), "m": 1}]
        )
        if i == 20:
            break
    docs = []
    for i in range(2000):
        docs += [
            {"t": day1 + dt.timedelta(seconds=i % 3000), "m": 2},
            {"t": day2 + dt.timedelta(seconds=i % 3000), "m": 2},
        ]
    db.d.insert_many(docs)
    assert db.system.buckets.d.count_documents({"meta": 2}) == 4


def test_schema_change_opens_new_bucket_and_stats_count_it(db):
    db.create_collection("c", timeseries={"timeField": "t", "metaField": "m"})
    db.c.insert_one({"t": T0, "m": 1, "a": 1})
    db.c.insert_one({"t": T0, "m": 1, "a": 2.5})
    db.c.insert_one({"t": T0, "m": 1, "a": {"b": 1}})
    assert db.system.buckets.c.count_documents({}) == 2
    stats = db.command("collStats", "c")["timeseries"]
    assert stats["numBucketsClosedDueToSchemaChange"] == 1
    assert stats["numBucketInserts"] == 2 and stats["numBucketUpdates"] == 1
    assert stats["numBucketsOpenedDueToMetadata"] == 1
    assert stats["numCommits"] == 3


def test_direct_bucket_insert_and_validation(db):
    db.create_collection("c", timeseries={"timeField": "t"})
    bucket = {
        "_id": ObjectId(),
        "control": {"version": 1, "min": {"t": T0}, "max": {"t": T0}},
        "data": {"t": {"0": T0}, "v": {"0": 7}},
    }
    db.system.buckets.c.insert_one(bucket)
    assert [d["v"] for d in db.c.find()] == [7]
    with pytest.raises(OperationFailure) as info:
        db.system.buckets.c.insert_one({"_id": ObjectId(), "control": {"version": 1}})
    assert info.value.code == 121


def test_drop_either_name_drops_both(db):
    db.create_collection("c", timeseries={"timeField": "t"})
    db.c.insert_one({"t": T0})
    db.drop_collection("system.buckets.c")
    assert "c" not in db.list_collection_names()
    db.create_collection("c", timeseries={"timeField": "t"})
    db.c.drop()
    assert db.list_collection_names() in ([], ["system.views"])


def test_unpack_bucket_stage_on_buckets(db):
    db.create_collection("c", timeseries={"timeField": "t", "metaField": "m"})
    db.c.insert_one({"t": T0, "m": "s", "v": 1})
    out = list(
        db.system.buckets.c.aggregate(
            [{"$_unpackBucket": {"timeField": "t", "metaField": "m"}}, {"$project": {"_id": 0}}]
        )
    )
    assert out == [{"t": T0, "m": "s", "v": 1}]
    with pytest.raises(OperationFailure) as info:
        list(db.system.buckets.c.aggregate([{"$_unpackBucket": {"timeField": "t"}}]))
    assert info.value.code == 5369601
    with pytest.raises(OperationFailure) as info:
        list(db.system.buckets.c.aggregate([{"$_unpackBucket": {"metaField": "m"}}]))
    assert info.value.code == 5612405


def test_server_status_has_bucket_catalog_section(db, client):
    db.create_collection("c", timeseries={"timeField": "t"})
    db.c.insert_one({"t": T0})
    before = client.admin.command("serverStatus")["bucketCatalog"]
    db.c.insert_one({"t": T0 + dt.timedelta(days=1)})  # past the bucket's span: a new bucket
    section = client.admin.command("serverStatus")["bucketCatalog"]
    assert section["numOpenBuckets"] >= 1 and section["memoryUsage"] > 0
    # mongod appends its global execution stats: commits, measurements per commit, closes by reason
    assert section["numCommits"] >= before["numCommits"] + 1
    assert section["numMeasurementsCommitted"] >= before["numMeasurementsCommitted"] + 1
    assert section["avgNumMeasurementsPerCommit"] >= 1
    forward = ("numBucketsClosedDueToTimeForward", "numBucketsArchivedDueToTimeForward")
    assert sum(section[k] for k in forward) >= sum(before[k] for k in forward) + 1


@pytest.mark.commands("explain")
def test_narrow_time_range_reads_only_candidate_buckets(db):
    db.create_collection("c", timeseries={"timeField": "t", "metaField": "m"})
    db.c.insert_many([{"t": T0 + dt.timedelta(minutes=10 * i), "m": "s", "v": i} for i in range(6 * 24 * 7)])
    total = db.system.buckets.c.count_documents({})
    lo = T0 + dt.timedelta(days=3)
    flt = {"t": {"$gte": lo, "$lt": lo + dt.timedelta(minutes=30)}}
    explain = db.command("explain", {"find": "c", "filter": flt}, verbosity="executionStats")
    ts = explain["stages"][0]["$cursor"]["queryPlanner"]["winningPlan"]["timeseries"]
    assert total >= 7 * 24
    assert ts["bucketsScanned"] <= 3 and ts["bucketsUnpacked"] <= 2
    assert ts["measurementsReturned"] == 3
    assert sorted(d["v"] for d in db.c.find(flt)) == [432, 433, 434]


def test_unacknowledged_inserts_are_applied(db):
    from pymongo import WriteConcern

    db.create_collection("c", timeseries={"timeField": "t"})
    unacked = db.get_collection("c", write_concern=WriteConcern(w=0))
    for i in range(20):
        unacked.insert_one({"t": T0 + dt.timedelta(seconds=i), "v": i})
    db.c.insert_one({"t": T0, "v": -1})  # requests on one connection run in order
    assert db.c.count_documents({}) == 21


@pytest.mark.commands("collStats")
def test_statistics_counters_follow_each_step(db):
    db.create_collection("c", timeseries={"timeField": "t", "metaField": "m"})
    expected = {"numBucketInserts": 0, "numBucketUpdates": 0, "numBucketsOpenedDueToMetadata": 0,
                "numBucketsClosedDueToCount": 0, "numBucketsClosedDueToSchemaChange": 0,
                "numBucketsClosedDueToSize": 0, "numBucketsArchivedDueToTimeForward": 0,
                "numBucketsArchivedDueToTimeBackward": 0, "numCommits": 0, "numMeasurementsCommitted": 0}

    def check(**changes):
        for name, delta in changes.items():
            expected[name] += delta
        stats = db.command("collStats", "c")["timeseries"]
        assert {k: stats[k] for k in expected} == expected

    db.c.insert_one({"t": T0, "m": "a", "v": 1})  # a new bucket
    check(numBucketInserts=1, numBucketsOpenedDueToMetadata=1, numCommits=1, numMeasurementsCommitted=1)
    db.c.insert_one({"t": T0, "m": "a", "v": 2})  # into the open bucket
    check(numBucketUpdates=1, numCommits=1, numMeasurementsCommitted=1)
    db.c.insert_many([{"t": T0, "m": "b", "v": i} for i in range(1100)])  # a new meta, past the count limit
    check(numBucketInserts=2, numBucketsOpenedDueToMetadata=1, numBucketsClosedDueToCount=1, numCommits=1,
          numMeasurementsCommitted=1100)
    db.c.insert_one({"t": T0 + dt.timedelta(hours=2), "m": "a", "v": 3})  # beyond the span
    check(numBucketInserts=1, numBucketsArchivedDueToTimeForward=1, numCommits=1, numMeasurementsCommitted=1)
    db.c.insert_one({"t": T0, "m": "a", "v": 4})  # back in time: reopens the archived bucket
    check(numBucketUpdates=1, numBucketsArchivedDueToTimeBackward=1, numCommits=1, numMeasurementsCommitted=1)
    db.c.insert_one({"t": T0, "m": "a", "v": "text"})  # a schema change
    check(numBucketInserts=1, numBucketsClosedDueToSchemaChange=1, numCommits=1, numMeasurementsCommitted=1)
    stats = db.command("collStats", "c")["timeseries"]
    assert stats["avgNumMeasurementsPerCommit"] == stats["numMeasurementsCommitted"] // stats["numCommits"]
    assert stats["numBucketsReopened"] == 1


@pytest.mark.commands("explain", "createIndexes")
def test_meta_predicates_use_a_buckets_index(db):
    db.create_collection("c", timeseries={"timeField": "t", "metaField": "m"})
    db.c.create_index([("m.host", 1), ("t", -1)])
    docs = [{"t": T0 + dt.timedelta(minutes=10 * i), "m": {"host": f"h{i % 20}"}, "v": i} for i in range(2000)]
    docs += [{"t": T0, "v": -1}, {"t": T0, "m": None, "v": -2}]
    db.c.insert_many(docs)
    db.c.insert_one({"t": T0 + dt.timedelta(days=30), "m": {"host": "h3"}, "v": -3})  # an open, unwritten bucket
    flt = {"m.host": {"$in": ["h3", "h4"]}, "t": {"$gte": T0 + dt.timedelta(hours=20)}}
    explain = db.command("explain", {"find": "c", "filter": flt}, verbosity="executionStats")
    ts = explain["stages"][0]["$cursor"]["queryPlanner"]["winningPlan"]["timeseries"]
    assert ts["indexName"] == "m.host_1_t_-1"
    expected = sorted(d["v"] for d in docs if d.get("m") and d["m"]["host"] in ("h3", "h4")
                      and d["t"] >= T0 + dt.timedelta(hours=20)) + [-3]
    assert sorted(d["v"] for d in db.c.find(flt)) == sorted(expected)
    assert sorted(d["v"] for d in db.c.find({"m.host": "h5"})) == [i for i in range(2000) if i % 20 == 5]
    assert sorted(d["v"] for d in db.c.find({"m": None})) == [-2, -1]
