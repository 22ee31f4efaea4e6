"""numBucketsKeptOpenDueToLargeMeasurements counts buckets, not measurements (timeseries_large_measurements.js:
50 large measurements make 5 buckets of 10 and the statistic is 5; mongod's bucket catalog "only increment[s]
this metric once per bucket"). Tidemark counted every measurement a bucket was kept open for.
"""

from __future__ import annotations

import datetime as dt

import pytest

pytestmark = pytest.mark.commands("insert", "collStats")


@pytest.mark.parametrize("measurements", [10, 25, 30])
def test_a_bucket_kept_open_for_large_measurements_counts_once(db, measurements):
    db.drop_collection("kept_open")
    db.create_collection("kept_open", timeseries={"timeField": "t", "metaField": "m"})
    for i in range(measurements):  # each over timeseriesBucketMaxSize (128,000 bytes)
        db.kept_open.insert_one({"t": dt.datetime(2024, 1, 1) + dt.timedelta(minutes=i), "m": 1, "x": "a" * 200_000})
    stats = db.command("collStats", "kept_open")["timeseries"]
    buckets = -(-measurements // 10)  # at least 10 measurements before a size close (timeseriesBucketMinCount)
    assert stats["bucketCount"] == buckets
    assert stats["numBucketsKeptOpenDueToLargeMeasurements"] == buckets
    assert db.kept_open.count_documents({}) == measurements
    db.drop_collection("kept_open")
