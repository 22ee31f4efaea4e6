"""collStats / $collStats / dbStats and the TTL monitor on time-series collections (spec §3.4, §9).

The session server runs the TTL monitor every second (``ttlMonitorSleepSecs=1``); TTL tests wait on the
monitor's own pass counter (serverStatus ``metrics.ttl.passes``): two passes after the data was written.
"""

from __future__ import annotations

import datetime as dt

import bson
import pytest
from harness import wait_ttl_passes


def _now():
    return dt.datetime.now(dt.UTC).replace(tzinfo=None, microsecond=0)


@pytest.mark.commands("collStats")
def test_coll_stats_has_timeseries_section_and_no_count(db):
    db.create_collection("c", timeseries={"timeField": "t", "metaField": "m"})
    t0 = dt.datetime(2024, 1, 1)
    db.c.insert_many([{"t": t0, "m": 1, "v": 1}, {"t": t0, "m": 2, "v": 2}])
    db.c.insert_one({"t": t0, "m": 1, "v": 3})
    stats = db.command("collStats", "c")
    assert "count" not in stats and "avgObjSize" not in stats
    ts = stats["timeseries"]
    assert ts["bucketsNs"] == f"{db.name}.system.buckets.c"
    assert ts["bucketCount"] == 2
    assert ts["avgBucketSize"] > 0
    assert ts["numBucketInserts"] == 2 and ts["numBucketUpdates"] == 1
    assert ts["numBucketsOpenedDueToMetadata"] == 2
    assert ts["numMeasurementsCommitted"] == 3
    assert stats["nindexes"] == 1 and list(stats["indexSizes"]) == ["m_1_t_1"]


COMPRESSION_STATS = ["numBytesUncompressed", "numBytesCompressed", "numSubObjCompressionRestart",
                     "numCompressedBuckets", "numUncompressedBuckets", "numFailedDecompressBuckets"]


@pytest.mark.commands("collStats", "serverStatus")
def test_coll_stats_counts_each_bucket_once_as_uncompressed(db):
    """mongod 7.0's compression counters close the execution stats (TimeseriesStats::append). Tidemark
    serves the version 1 bucket layout, so each bucket counts once as one left uncompressed
    (onBucketClosed's other branch: compressed bytes = its document's bytes), however often it was
    written in full."""
    db.create_collection("c", timeseries={"timeField": "t", "metaField": "m"})
    t0 = dt.datetime(2024, 1, 1)
    assert list(db.command("collStats", "c")["timeseries"])[-6:] == COMPRESSION_STATS
    for batch in range(3):  # 1,100 measurements of one series: a bucket closed by count, then another
        db.c.insert_many([{"t": t0 + dt.timedelta(seconds=batch * 400 + i), "m": 1, "v": i % 7}
                          for i in range(400 if batch < 2 else 300)])
    # a direct write to the buckets collection writes the in-memory buckets in full first
    db["system.buckets.c"].update_one({"_id": "none"}, {"$set": {"x": 1}})
    stored = list(db["system.buckets.c"].find())
    ts = db.command("collStats", "c")["timeseries"]
    assert ts["bucketCount"] == len(stored) == 2
    assert ts["numUncompressedBuckets"] == 2 and ts["numCompressedBuckets"] == ts["numFailedDecompressBuckets"] == 0
    assert ts["numBytesCompressed"] == ts["numBytesUncompressed"] == sum(len(bson.encode(doc)) for doc in stored)
    assert ts["numBytesUncompressed"] / ts["bucketCount"] <= db.client.admin.command(
        "getParameter", 1, timeseriesBucketMaxSize=1)["timeseriesBucketMaxSize"]
    server = db.client.admin.command("serverStatus")["bucketCatalog"]
    keys = list(server)  # (Tidemark's own ``writes`` figures follow mongod's)
    assert keys[keys.index("numBytesUncompressed"):][:6] == COMPRESSION_STATS
    assert server["numUncompressedBuckets"] >= 2


def test_coll_stats_of_empty_collection_has_no_avg_bucket_size(db):
    db.create_collection("c", timeseries={"timeField": "t"})
    ts = db.command("collStats", "c")["timeseries"]
    assert ts["bucketCount"] == 0 and "avgBucketSize" not in ts


def test_coll_stats_aggregation_stage_storage_stats(db):
    db.create_collection("c", timeseries={"timeField": "t", "metaField": "m"})
    db.c.insert_one({"t": dt.datetime(2024, 1, 1), "m": 1})
    (doc,) = db.c.aggregate([{"$collStats": {"storageStats": {}}}])
    assert doc["storageStats"]["timeseries"]["bucketCount"] == 1
    assert "count" not in doc["storageStats"]


@pytest.mark.slow
def test_ttl_removes_buckets_past_expiry_plus_span_and_keeps_newer(db):
    db.create_collection("c", timeseries={"timeField": "t", "metaField": "m"}, expireAfterSeconds=5)
    now = _now()
    db.c.insert_many(
        [
            {"t": now - dt.timedelta(hours=3), "m": "old"},
            {"t": now - dt.timedelta(hours=2), "m": "older"},
            {"t": now - dt.timedelta(seconds=5), "m": "new"},
        ]
    )
    wait_ttl_passes(db.client)
    assert sorted(d["m"] for d in db.c.find()) == ["new"]
    wait_ttl_passes(db.client)  # two more monitor passes: the recent bucket stays
    assert [d["m"] for d in db.c.find()] == ["new"]


@pytest.mark.slow
def test_coll_mod_expire_after_seconds_takes_effect_on_next_pass(db):
    db.create_collection("c", timeseries={"timeField": "t", "metaField": "m"})
    now = _now()
    db.c.insert_many([{"t": now - dt.timedelta(days=2), "m": "old"}, {"t": now, "m": "new"}])
    wait_ttl_passes(db.client)
    assert db.c.count_documents({}) == 2  # no TTL yet
    db.command("collMod", "c", expireAfterSeconds=3600)
    wait_ttl_passes(db.client)
    assert sorted(d["m"] for d in db.c.find()) == ["new"]


@pytest.mark.slow
def test_partial_ttl_index_expires_only_buckets_matching_its_meta_filter(db):
    db.create_collection("c", timeseries={"timeField": "t", "metaField": "m"})
    db.c.create_index([("t", 1)], name="ttl", expireAfterSeconds=5, partialFilterExpression={"m": {"$gt": 5}})
    old = _now() - dt.timedelta(hours=3)
    db.c.insert_many([{"t": old, "m": 10}, {"t": old, "m": 1}, {"t": _now(), "m": 10}])
    wait_ttl_passes(db.client)
    assert sorted((d["m"], d["t"] == old) for d in db.c.find()) == [(1, True), (10, False)]
