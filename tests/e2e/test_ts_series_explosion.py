"""Issue 21.6: every measurement on a new meta (a request id as meta) keeps the server's memory within
timeseriesIdleBucketExpiryMemoryUsageThreshold plus a fixed allowance, for any number of series — the
catalog closes idle buckets as new ones open (numBucketsClosedDueToMemoryThreshold), like mongod — and
every measurement stays readable. Before the fix the catalog closed 3 buckets per 1,000-row insert:
memoryUsage and RSS grew ~2.5 KB per series without bound."""

import datetime as dt

import pytest

THRESHOLD = 16 * 1024 * 1024  # ~5,500 one-row buckets
ALLOWANCE = 16 * 1024 * 1024 + 1000 * 4096  # buckets awaiting their full writes + one insert's new buckets
SERIES = 10_000  # per phase; the threshold is reached within the first
T0 = dt.datetime(2024, 1, 1)
pytestmark = [pytest.mark.commands("insert", "find", "aggregate", "serverStatus", "getParameter", "setParameter"), pytest.mark.slow]


def rss_anon(pid):
    """The server's private resident memory (the mapped LMDB file's pages are the data, not the catalog)."""
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) * 1024
    raise KeyError("RssAnon")


def insert_series(coll, start, n):
    for b in range(start, start + n, 1000):
        coll.insert_many([{"t": T0 + dt.timedelta(milliseconds=i), "request": f"req-{i:08d}", "v": float(i)}
                          for i in range(b, b + 1000)], ordered=False)


def test_new_meta_per_measurement_keeps_memory_within_the_threshold(start_server):
    proc = start_server(params={"timeseriesIdleBucketExpiryMemoryUsageThreshold": THRESHOLD})
    with proc.client() as client:
        assert client.admin.command("getParameter", 1, timeseriesIdleBucketExpiryMemoryUsageThreshold=1)[
            "timeseriesIdleBucketExpiryMemoryUsageThreshold"] == THRESHOLD
        coll = client.db.create_collection("req", timeseries={"timeField": "t", "metaField": "request"})
        samples = []
        for phase in range(3):
            insert_series(coll, phase * SERIES, SERIES)
            catalog = client.admin.command("serverStatus")["bucketCatalog"]
            assert catalog["memoryUsage"] <= THRESHOLD + ALLOWANCE, catalog
            samples.append(rss_anon(proc.process.pid))
        assert catalog["numBucketsClosedDueToMemoryThreshold"] >= 3 * SERIES - THRESHOLD // 2048
        assert catalog["numBuckets"] <= THRESHOLD // 2048 + 1000 + ALLOWANCE // 2048
        # after the threshold is reached memory stays flat: growth per series from SERIES to 3 * SERIES is
        # ~0 (was ~2.5 KB per series: 50 MB here); 12 MB of margin for allocator and LMDB page noise
        growth = samples[2] - samples[0]
        assert growth < 12 * 2**20, [s / 2**20 for s in samples]
        assert coll.count_documents({}) == 3 * SERIES
        for i in (0, 1, SERIES, 2 * SERIES + 17, 3 * SERIES - 1):  # expired long ago, or still in memory
            found = list(coll.find({"request": f"req-{i:08d}"}, {"_id": 0}))
            assert found == [{"t": T0 + dt.timedelta(milliseconds=i), "request": f"req-{i:08d}", "v": float(i)}]
        # the threshold is a runtime parameter too: raising it stops the closing
        client.admin.command("setParameter", 1, timeseriesIdleBucketExpiryMemoryUsageThreshold=1 << 40)
        closed = catalog["numBucketsClosedDueToMemoryThreshold"]
        insert_series(coll, 3 * SERIES, 2000)
        after = client.admin.command("serverStatus")["bucketCatalog"]
        assert after["numBucketsClosedDueToMemoryThreshold"] == closed
        assert coll.count_documents({}) == 3 * SERIES + 2000
