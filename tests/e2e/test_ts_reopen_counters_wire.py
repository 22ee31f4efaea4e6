"""mongod 7.0's reopening counters over the wire: collStats ``timeseries`` and serverStatus
``bucketCatalog`` report them in 7.0's order (appendExecutionStatsToBuilder: the 5.0 set, the commit
counters and their average, then the reopening block), each counted once where its event happens."""

import datetime as dt

import pytest

T0 = dt.datetime(2024, 3, 1)
pytestmark = pytest.mark.commands("create", "insert", "update", "collStats", "serverStatus")

ORDER_70 = [
    "numBucketInserts", "numBucketUpdates", "numBucketsOpenedDueToMetadata", "numBucketsClosedDueToCount",
    "numBucketsClosedDueToSchemaChange", "numBucketsClosedDueToSize", "numBucketsClosedDueToTimeForward",
    "numBucketsClosedDueToTimeBackward", "numBucketsClosedDueToMemoryThreshold", "numCommits", "numWaits",
    "numMeasurementsCommitted", "avgNumMeasurementsPerCommit", "numBucketsClosedDueToReopening",
    "numBucketsArchivedDueToMemoryThreshold", "numBucketsArchivedDueToTimeBackward", "numBucketsReopened",
    "numBucketsKeptOpenDueToLargeMeasurements", "numBucketsClosedDueToCachePressure", "numBucketsFetched",
    "numBucketsQueried", "numBucketFetchesFailed", "numBucketQueriesFailed", "numBucketReopeningsFailed",
    "numDuplicateBucketsReopened",
]
REOPENING = ("numBucketsReopened", "numBucketsFetched", "numBucketsQueried", "numBucketQueriesFailed",
             "numBucketFetchesFailed", "numBucketReopeningsFailed", "numBucketsClosedDueToReopening")


def test_the_reopening_counters_in_collstats_and_serverstatus(client):
    db = client.reopen_counters_wire
    db.drop_collection("rc")
    db.create_collection("rc", timeseries={"timeField": "t", "metaField": "m"})
    db.rc.insert_one({"t": T0, "m": "a"})  # a new series: storage asked, nothing found
    db.rc.insert_one({"t": T0 + dt.timedelta(hours=2), "m": "a"})  # time forward: the first archived
    db.rc.insert_one({"t": T0 + dt.timedelta(minutes=1), "m": "a"})  # the archived one: fetched
    # a direct write settles every bucket (written in full, gone from memory): the next one is queried
    db["system.buckets.rc"].update_many({}, {"$set": {"control.version": 1}})
    db.rc.insert_one({"t": T0 + dt.timedelta(minutes=2), "m": "a"})
    ts = db.command("collStats", "rc")["timeseries"]
    assert {name: ts[name] for name in REOPENING} == {
        "numBucketsReopened": 2, "numBucketsFetched": 1, "numBucketsQueried": 1, "numBucketQueriesFailed": 1,
        "numBucketFetchesFailed": 0, "numBucketReopeningsFailed": 0, "numBucketsClosedDueToReopening": 0}
    assert ts["bucketCount"] == 2
    assert [name for name in ts if name in ORDER_70] == ORDER_70
    catalog = client.admin.command("serverStatus")["bucketCatalog"]
    assert [name for name in catalog if name in ORDER_70] == ORDER_70
    assert all(catalog[name] >= ts[name] for name in REOPENING)  # (sums over every collection)
