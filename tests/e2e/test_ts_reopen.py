"""Defects 15.3 and 15.4: a series continues in its last bucket with room after a restart (reopened from
storage, MongoDB 7.0 reopens by query), and writers whose times interleave reuse each series' buckets:
appending to a reopened bucket writes only the new rows (journal records), never the whole bucket."""

import datetime as dt

import pytest

from tidemark.storage.engine import open_engine

T0 = dt.datetime(2024, 3, 1)
pytestmark = pytest.mark.commands("insert", "find", "collStats")


def rows(host, start, n, step=1):
    return [{"t": start + dt.timedelta(seconds=i * step), "host": host, "v": float(i)} for i in range(n)]


def bucket_counts(client):
    return sorted(len(b["data"]["t"]) for b in client.db.system.buckets.ts.find())


@pytest.mark.slow
@pytest.mark.parametrize("crash", [False, True])
def test_a_series_continues_in_its_bucket_after_a_restart(start_server, crash):
    proc = start_server()
    with proc.client() as client:
        client.db.create_collection("ts", timeseries={"timeField": "t", "metaField": "host"})
        client.db.ts.insert_many(rows("h1", T0, 10))
        client.db.ts.insert_many(rows("h2", T0, 10))
    proc.kill() if crash else proc.terminate()
    proc.start()
    with proc.client() as client:
        client.db.ts.insert_many(rows("h1", T0 + dt.timedelta(seconds=10), 10))
        client.db.ts.insert_one({"t": T0 + dt.timedelta(seconds=30), "host": "h2", "v": 1.0})
        assert bucket_counts(client) == [11, 20]
        stats = client.db.command("collStats", "ts")["timeseries"]
        assert stats["numBucketsReopened"] == 2 and stats["numBucketsOpenedDueToMetadata"] == 0
        assert client.db.ts.count_documents({}) == 31
    proc.restart()
    with proc.client() as client:
        assert bucket_counts(client) == [11, 20]


@pytest.mark.slow
def test_late_data_after_a_restart_reopens_the_stored_bucket_whose_range_holds_it(start_server):
    proc = start_server(params={"timeseriesBucketMaxCount": 20})
    with proc.client() as client:
        client.db.create_collection("ts", timeseries={"timeField": "t", "metaField": "host"})
        client.db.ts.insert_many(rows("h1", T0, 10))  # hour 0: room left
        client.db.ts.insert_many(rows("h1", T0 + dt.timedelta(hours=1), 10))  # hour 1 archives hour 0
        client.db.ts.insert_many(rows("h1", T0 + dt.timedelta(hours=2), 20))  # hour 2: full
    proc.terminate()
    proc.start()
    with proc.client() as client:
        client.db.ts.insert_many(rows("h1", T0 + dt.timedelta(minutes=30), 5))  # into hour 0
        client.db.ts.insert_many(rows("h1", T0 + dt.timedelta(hours=2, minutes=30), 5))  # hour 2 is full
        assert bucket_counts(client) == [5, 10, 15, 20]
        assert client.db.ts.count_documents({}) == 50


def alternating_batches(n_hosts, regions, ticks_per_batch, batches_per_region):
    """Batches of every host's next ticks, alternating between time regions (parallel backfill)."""
    out = []
    for b in range(batches_per_region):
        for start in regions:
            t0 = start + dt.timedelta(seconds=10 * ticks_per_batch * b)
            out.append([{"t": t0 + dt.timedelta(seconds=10 * k), "host": f"h{h}", "v": float(k)}
                        for k in range(ticks_per_batch) for h in range(n_hosts)])
    return out


@pytest.mark.slow
def test_interleaved_writers_append_journal_records_and_make_the_ordered_buckets(start_server):
    proc = start_server()
    regions = [T0, T0 + dt.timedelta(hours=5)]  # two writers far apart in time
    with proc.client() as client:
        client.db.create_collection("ts", timeseries={"timeField": "t", "metaField": "host"})
        for docs in alternating_batches(20, regions, 5, 30):
            client.db.ts.insert_many(docs)
        assert client.db.system.buckets.ts.count_documents({}) == 40  # 20 hosts x 2 hours, as in order
        assert client.db.ts.count_documents({}) == 20 * 5 * 30 * 2
        status = client.admin.command("serverStatus")["bucketCatalog"]
        assert status["writes"]["bucketDocuments"] == 0  # nothing rewritten in full while loading
    proc.kill()
    engine = open_engine(proc.dbpath)
    try:
        with engine.read() as r:
            info = r.get_collection("db.system.buckets.ts")
            assert r.count(info) == 0  # every row is in journal records; no bucket was written in full
    finally:
        engine.close()
    proc.start()
    with proc.client() as client:
        assert client.db.system.buckets.ts.count_documents({}) == 40
        assert client.db.ts.count_documents({}) == 20 * 5 * 30 * 2
