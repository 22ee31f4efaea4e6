"""The bucket catalog's memory counts each bucket's meta. mongod's bucket memory includes its
metadata, so buckets with large metas reach timeseriesIdleBucketExpiryMemoryUsageThreshold and close
(numBucketsClosedDueToMemoryThreshold); Tidemark counted a fixed ~2.6 KB per bucket whatever its meta,
so 3,000 series with 10 KB metas took 96 MB of memory counted as 7.8 MB, and the threshold never
closed them (found by a helper porting the noPassthrough time-series jstests). The family: metas from
none to 100 KB, each bucket counted at least its meta's bytes, and large metas past a small threshold
close idle buckets.
"""

from __future__ import annotations

import datetime as dt

import pytest

pytestmark = pytest.mark.commands("insert", "serverStatus", "setParameter")

T0 = dt.datetime(2024, 1, 1)


def _catalog(client) -> dict:
    return client.admin.command("serverStatus").get("bucketCatalog", {})  # (absent before any insert)


@pytest.mark.parametrize("meta_bytes", [0, 100, 10_000, 100_000])
def test_a_bucket_counts_its_meta(client, db, meta_bytes):
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    before = _catalog(client).get("memoryUsage", 0)
    series = 20
    db.ts.insert_many([{"t": T0, "m": {"id": i, "pad": "x" * meta_bytes}, "v": 1} for i in range(series)])
    grown = _catalog(client)["memoryUsage"] - before
    assert grown >= series * meta_bytes
    assert grown <= series * (3 * meta_bytes + 64 * 1024)  # the meta's copies and a bucket's own objects


def test_large_metas_reach_the_memory_threshold(client, db):
    name = "timeseriesIdleBucketExpiryMemoryUsageThreshold"
    saved = client.admin.command("getParameter", 1, **{name: 1})[name]
    client.admin.command("setParameter", 1, **{name: 2 << 20})
    try:
        db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
        for i in range(60):  # 60 series of 100 KB metas: ~6 MB of metas against a 2 MB threshold
            db.ts.insert_one({"t": T0, "m": {"id": i, "pad": "x" * 100_000}, "v": i})
        stats = db.command("collStats", "ts")["timeseries"]
        assert stats["numBucketsClosedDueToMemoryThreshold"] > 0
        assert db.ts.count_documents({}) == 60
    finally:
        client.admin.command("setParameter", 1, **{name: saved})
