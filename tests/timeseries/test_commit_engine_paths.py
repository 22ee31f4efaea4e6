"""Time-series write/read paths against the real storage engine (no server): create, group commit,
journal records instead of bucket rewrites, recovery, view reads with pruning, direct bucket inserts."""

import asyncio
import datetime as dt

import pytest
from harness.timeseries import Server

from tidemark.commands import timeseries_ddl
from tidemark.commands.timeseries import insert_buckets
from tidemark.commands.timeseries_insert import insert_measurements
from tidemark.protocol.errors import MongoError
from tidemark.timeseries import ddl, scan, view

T0 = dt.datetime(2021, 5, 18, 0, 0)


@pytest.fixture
def server(tmp_path):
    s = Server(tmp_path / "data")
    yield s
    s.engine.close()


async def create(server, name="weather", **ts):
    ts.setdefault("timeField", "timestamp")
    ts.setdefault("metaField", "metadata")
    return await timeseries_ddl.create(server.ctx(), {"create": name, "timeseries": ts, "$db": "db"})


async def insert(server, docs, name="weather", ordered=True):
    return await insert_measurements(server.ctx(), {"insert": name, "documents": docs, "ordered": ordered,
                                                           "$db": "db"})


def view_doc(server, name="weather"):
    with server.engine.read() as r:
        return ddl.get_view(r, "db", name)[1]


def find(server, pipeline=(), name="weather"):
    docs, remaining, info = view.read_source(server.ctx().server, "db", view_doc(server, name), list(pipeline))
    assert remaining == [] or remaining == list(pipeline)[len(pipeline) - len(remaining):]
    return list(docs), info


def buckets(server, name="weather"):
    return list(scan.bucket_documents(server, f"db.system.buckets.{name}"))


async def test_worked_example_round_trips_and_stores_one_sparse_bucket(server):
    await create(server)
    docs = [{"_id": i, "metadata": {"sensorId": 5578, "type": "temperature"},
             "timestamp": T0 + dt.timedelta(hours=i), "temp": 12 + i} for i in range(3)]
    docs[2]["ext1"] = 1
    docs = [dict(d, timestamp=T0 + dt.timedelta(minutes=i)) for i, d in enumerate(docs)]
    assert await insert(server, docs) == {"n": 3}
    found, _ = find(server)
    assert sorted(found, key=lambda d: d["_id"]) == [
        {"timestamp": d["timestamp"], "metadata": d["metadata"], "_id": d["_id"], "temp": d["temp"],
         **({"ext1": 1} if "ext1" in d else {})} for d in docs]
    (bucket,) = buckets(server)
    assert bucket["data"]["ext1"] == {"2": 1}
    assert set(bucket["data"]["_id"]) == {"0", "1", "2"}
    assert bucket["control"]["min"]["timestamp"] == T0


async def test_time_field_must_be_a_date_ordered_and_unordered(server):
    await create(server)
    good = {"timestamp": T0, "v": 1}
    reply = await insert(server, [good, {"timestamp": "x"}, {"v": 2}], ordered=False)
    assert reply["n"] == 1
    assert [(e["index"], e["code"]) for e in reply["writeErrors"]] == [(1, 2), (2, 2)]
    assert reply["writeErrors"][0]["errmsg"] == "'timestamp' must be present and contain a valid BSON UTC datetime value"
    reply = await insert(server, [dict(good), {"v": 2}, dict(good)])
    assert reply["n"] == 1 and len(reply["writeErrors"]) == 1
    found, _ = find(server)
    assert len(found) == 2 and all("_id" in d for d in found)


async def test_open_bucket_appends_write_journal_records_not_documents(server):
    await create(server)
    for i in range(5):
        await insert(server, [{"timestamp": T0 + dt.timedelta(seconds=i), "metadata": "s", "v": i}])
    with server.engine.read() as r:
        info = r.get_collection("db.system.buckets.weather")
        assert r.count(info) == 0  # nothing materialized yet: appends went to the journal
        assert len(list(r.journal_scan())) == 5
    assert len(buckets(server)) == 1  # but readers see the open bucket
    await server.ts_committer.checkpoint()
    with server.engine.read() as r:
        assert r.count(r.get_collection("db.system.buckets.weather")) == 1
        assert list(r.journal_scan()) == []


async def test_recovery_rebuilds_buckets_from_the_journal(tmp_path):
    first = Server(tmp_path / "d")
    await create(first)
    await insert(first, [{"timestamp": T0, "metadata": "a", "v": 1}, {"timestamp": T0, "metadata": "b", "v": 2}])
    await first.ts_committer.checkpoint()
    await insert(first, [{"timestamp": T0 + dt.timedelta(seconds=1), "metadata": "a", "v": 3}])
    first.engine.close()  # no shutdown hook: as after a crash
    second = Server(tmp_path / "d")
    try:
        found, _ = find(second)
        assert sorted(d["v"] for d in found) == [1, 2, 3]
        docs = buckets(second)
        assert len(docs) == 2 and sum(len(b["data"]["v"]) for b in docs) == 3
        await insert(second, [{"timestamp": T0 + dt.timedelta(seconds=2), "metadata": "a", "v": 4}])
        assert len(buckets(second)) == 2  # the series continues in its stored bucket (reopened by query)
        stats = second.bucket_catalog.collection_stats("db.system.buckets.weather")
        assert stats["numBucketsReopened"] == 1
    finally:
        second.engine.close()


async def test_concurrent_inserts_share_commits(server):
    await create(server)

    async def client(k):
        for i in range(20):
            await insert(server, [{"timestamp": T0 + dt.timedelta(seconds=i), "metadata": k, "v": i}])

    await asyncio.gather(*(client(k) for k in range(8)))
    stats = server.bucket_catalog.collection_stats("db.system.buckets.weather")
    assert stats["numMeasurementsCommitted"] == 160
    assert stats["numCommits"] < 160 / 2
    assert stats["numWaits"] > 0
    found, _ = find(server)
    assert len(found) == 160


async def test_narrow_time_range_scans_few_buckets(server):
    await create(server)
    docs = [{"timestamp": T0 + dt.timedelta(minutes=10 * i), "metadata": "s", "v": i} for i in range(24 * 6 * 3)]
    await insert(server, docs)
    await server.ts_committer.checkpoint()
    total = len(buckets(server))
    lo = T0 + dt.timedelta(days=1, hours=3)
    found, info = find(server, [{"$match": {"timestamp": {"$gte": lo, "$lt": lo + dt.timedelta(minutes=30)}}}])
    assert sorted(d["v"] for d in found) == [24 * 6 + 18, 24 * 6 + 19, 24 * 6 + 20]
    assert total > 50 and info["bucketsScanned"] <= 3 and info["bucketsUnpacked"] <= 2


async def test_recreate_is_idempotent_and_conflicts_are_namespace_exists(server):
    await create(server)
    await create(server)
    with pytest.raises(MongoError) as info:
        await create(server, granularity="minutes")
    assert info.value.code == 48
    with pytest.raises(MongoError) as info:
        await timeseries_ddl.create(server.ctx(), {"create": "system.buckets.x", "$db": "db"})
    assert info.value.code == 20


async def test_drop_removes_view_and_buckets(server):
    await create(server)
    await insert(server, [{"timestamp": T0, "v": 1}])
    await timeseries_ddl.drop(server.ctx(), "db", "system.buckets.weather")
    assert view_doc(server) is None
    with server.engine.read() as r:
        assert r.get_collection("db.system.buckets.weather") is None


async def test_direct_bucket_inserts_are_validated_and_visible_through_the_view(server):
    await create(server)
    from bson.objectid import ObjectId

    bucket = {"_id": ObjectId(), "control": {"version": 1, "min": {"timestamp": T0}, "max": {"timestamp": T0}},
              "data": {"timestamp": {"0": T0}, "v": {"0": 7}}}
    ctx = server.ctx()
    reply = await insert_buckets(ctx, {"insert": "system.buckets.weather", "documents": [bucket], "$db": "db"})
    assert reply == {"n": 1}
    reply = await insert_buckets(ctx, {"insert": "system.buckets.weather",
                                       "documents": [{"_id": ObjectId(), "x": 1}], "$db": "db"})
    assert reply["n"] == 0 and reply["writeErrors"][0]["code"] == 121
    found, _ = find(server)
    assert found == [{"timestamp": T0, "v": 7}]


async def test_readers_in_threads_see_every_acknowledged_measurement_while_inserts_continue(server):
    await create(server)
    acked = 0
    stop = False
    failures = []

    async def writer():
        nonlocal acked
        for i in range(150):
            await insert(server, [{"timestamp": T0 + dt.timedelta(seconds=i), "metadata": i % 3, "v": i,
                                   **({"extra": i} if i % 7 == 0 else {})}])
            acked = i + 1

    def read_once():
        before = acked
        found, _ = find(server)
        if len(found) < before:
            failures.append((before, len(found)))
        return len(found)

    async def reader():
        loop = asyncio.get_running_loop()
        while not stop:
            await loop.run_in_executor(None, read_once)

    task = asyncio.ensure_future(reader())
    await writer()
    stop = True
    await task
    assert failures == []
    assert read_once() == 150


async def test_close_collection_writes_live_buckets_and_keeps_stats(server):
    await create(server)
    await insert(server, [{"timestamp": T0, "metadata": "a", "v": 1}, {"timestamp": T0, "metadata": "b", "v": 2}])
    await server.ts_committer.close_collection("db.system.buckets.weather")
    assert server.bucket_catalog.live_buckets("db.system.buckets.weather") == []
    with server.engine.read() as r:
        assert r.count(r.get_collection("db.system.buckets.weather")) == 2
        assert list(r.journal_scan()) == []
    stats = server.bucket_catalog.collection_stats("db.system.buckets.weather")
    assert stats["numMeasurementsCommitted"] == 2
    await insert(server, [{"timestamp": T0, "metadata": "a", "v": 3}])
    assert len(buckets(server)) == 2  # the stored bucket with room is reopened by query
    assert server.bucket_catalog.collection_stats("db.system.buckets.weather")["numBucketsReopened"] == 1


async def test_time_range_queries_find_pre_1970_and_post_2038_measurements(server):
    await create(server)
    times = [dt.datetime(1965, 3, 1), dt.datetime(1969, 12, 31, 23, 59), T0, dt.datetime(2050, 1, 1)]
    await insert(server, [{"timestamp": t, "metadata": i, "v": i} for i, t in enumerate(times)])
    await server.ts_committer.checkpoint()
    await server.ts_committer.close_collection("db.system.buckets.weather")  # all from storage

    def values(flt):
        found, _ = find(server, [{"$match": flt}])
        return sorted(d["v"] for d in found)

    assert values({"timestamp": {"$lt": dt.datetime(2000, 1, 1)}}) == [0, 1]
    assert values({"timestamp": {"$lt": dt.datetime(1968, 1, 1)}}) == [0]
    assert values({"timestamp": {"$gte": dt.datetime(1969, 1, 1)}}) == [1, 2, 3]
    assert values({"timestamp": {"$gte": dt.datetime(2040, 1, 1)}}) == [3]
    assert values({"timestamp": times[1]}) == [1]
    assert values({"timestamp": {"$gt": dt.datetime(1960, 1, 1), "$lte": T0}}) == [0, 1, 2]


async def test_random_ingest_with_checkpoints_recovers_every_measurement_exactly_once(tmp_path):
    import random

    rng = random.Random(5)
    first = Server(tmp_path / "r")
    first.params.set_startup_value("timeseriesBucketMaxCount", 50)  # (startup-only, as mongod)
    await create(first)
    inserted = []
    for step in range(120):
        batch = []
        for _ in range(rng.randrange(1, 20)):
            n = len(inserted) + len(batch)
            t = T0 + dt.timedelta(seconds=rng.choice([n, n, n, n - 3000, n + 4000]))
            batch.append({"_id": n, "timestamp": t, "metadata": rng.randrange(4), "v": n})
        await insert(first, batch)
        inserted += [d["_id"] for d in batch]
        if step % 17 == 0:
            await first.ts_committer.checkpoint(force=rng.random() < 0.5)
    first.engine.close()  # a crash: no shutdown flush
    second = Server(tmp_path / "r")
    try:
        found, _ = find(second)
        assert sorted(d["_id"] for d in found) == inserted
        for bucket in buckets(second):
            times = bucket["data"]["timestamp"]
            assert list(times) == [str(i) for i in range(len(times))]
            assert bucket["control"]["min"]["timestamp"] <= min(times.values())
            assert bucket["control"]["max"]["timestamp"] == max(times.values())
        with second.engine.read() as r:
            assert list(r.journal_scan()) == []
    finally:
        second.engine.close()



class _RefusingEngine:
    """The committer's view of an engine that refuses every write at once (closed: a shutdown racing
    an insert), while reads still go to the real one."""

    def write(self, fn):
        from tidemark.storage.errors import EngineClosed

        raise EngineClosed()


async def test_an_insert_answers_when_the_engine_refuses_its_commit(server):
    """A commit the engine refuses outright fails the waiting insert like a failed commit; before, the
    committer's task died with the error and the insert waited forever."""
    from tidemark.storage.errors import EngineClosed

    await create(server)
    server.ts_committer.engine = _RefusingEngine()
    with pytest.raises(EngineClosed):
        await asyncio.wait_for(insert(server, [{"timestamp": T0, "metadata": 1, "v": 1}]), timeout=10)


async def test_a_bucket_that_left_memory_is_freed_while_journal_records_still_name_it(server):
    """Journal records are trimmed oldest first, once every bucket a record names is stored in full, so
    the open bucket of a series written once keeps its record, and every later one, in the journal.
    Buckets those records name that were written in full and left memory meanwhile must be freed: each
    keeps its uncompressed full document for late readers, and the journal's bookkeeping held them all
    (a 1-day parallel backfill of 100 series grew the server's RSS by ~33 MB while it settled)."""
    import gc
    import weakref

    server.params.set_startup_value("timeseriesBucketMaxCount", 20)  # (startup-only, as mongod)
    await create(server)
    ns = "db.system.buckets.weather"
    await insert(server, [{"timestamp": T0, "metadata": "once", "v": 0.0}])  # its bucket stays open
    catalog = server.bucket_catalog
    left = []
    close = catalog.close

    def closing(state, bucket, reason):
        left.append(weakref.ref(bucket))
        close(state, bucket, reason)

    catalog.close = closing
    for series in range(10):
        docs = [{"timestamp": T0 + dt.timedelta(seconds=s), "metadata": f"s{series}", "v": float(s)}
                for s in range(21)]
        await insert(server, docs[:10])  # a journal record names the bucket
        await insert(server, docs[10:])  # 20 rows close it by count: written in full, it leaves memory
    for _ in range(10):  # the closed buckets' full writes may follow in the next commits
        if not any(ref() is not None and not ref().left for ref in left):
            break
        await server.ts_committer.commit([ns])
    assert len(left) == 10
    assert server.ts_committer.logs[ns].records  # the once-written series' record is not trimmed
    # nothing is written after the last commit: what the storage writer ran last (the commit's plan,
    # which names the buckets it wrote) must not keep them either
    for _ in range(100):  # (until the writer thread is back waiting for work)
        gc.collect()
        if all(ref() is None for ref in left):
            break
        await asyncio.sleep(0.02)
    assert [ref() for ref in left] == [None] * 10
    found, _ = find(server)
    assert len(found) == 1 + 10 * 21
