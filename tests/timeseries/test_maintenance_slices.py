"""Issue 21.6: under a series explosion (a new meta per measurement, ~220,000 buckets in memory) the
catalog's maintenance never walks every bucket or series in one go on the event loop. The retire pass
reads only the archived buckets due (a queue in archive order), not every series' list (it held the
loop up to ~0.1 s of CPU every second); the periodic checkpoint marks at most ``MAINTENANCE_SLICE``
buckets between two loop yields, and a commit takes each slice before the next is marked (in one go it
held the loop ~0.5 s, and the drain that took everything it marked another ~0.5 s). Checked by counting
the work done between yields, not by timing."""

import asyncio
import datetime as dt

import pytest
from harness.timeseries import Engine

from tidemark.timeseries import catalog as catalog_module
from tidemark.timeseries import commit

T0 = dt.datetime(2024, 1, 1)


def batch(start, n, hours=0, later_ms=0):
    return [{"t": T0 + dt.timedelta(hours=hours, milliseconds=later_ms + i), "m": f"req-{i:08d}", "v": float(i)}
            for i in range(start, start + n)]


class CountingList(list):
    """A per-series list that counts the series it hands out."""

    reads = 0

    def __iter__(self):
        for item in super().__iter__():
            CountingList.reads += 1
            yield item

    def __getitem__(self, index):
        CountingList.reads += 1
        return super().__getitem__(index)


def test_the_retire_pass_reads_the_archived_buckets_due_not_every_series(monkeypatch):
    engine = Engine()
    series, archived = 5000, 20
    engine.put_raw(batch(0, series))
    engine.put_raw(batch(0, archived, hours=1))  # 20 series move on: their first buckets are archived
    engine.commit_all()
    state = engine.state
    state.series.archived = CountingList(state.series.archived)
    later = catalog_module.now_ms() + catalog_module.ARCHIVED_IDLE_MS + 1
    monkeypatch.setattr(catalog_module, "now_ms", lambda: later)
    CountingList.reads = 0
    assert engine.catalog.retire_idle_archived() == archived
    assert CountingList.reads <= 4 * archived  # was one read per series (5,000)
    CountingList.reads = 0
    assert engine.catalog.retire_idle_archived() == 0
    assert CountingList.reads == 0


def test_buckets_archived_by_the_vectorized_switch_retire_too(monkeypatch):
    """Series that alternate between two time ranges switch buckets in bulk (catalog.switch): the
    bucket switched away from is archived there, and retires like any other."""
    engine = Engine()
    assert engine.put_raw(batch(0, 100))
    assert engine.put_raw(batch(0, 100, hours=1))  # archives the first buckets (rules path)
    assert engine.put_raw(batch(0, 100, later_ms=500))  # back to the first range: each series switches in bulk
    assert engine.stats["numBucketsReopened"] == 100
    hour_later = [b for b in engine.buckets() if b.start_s >= (T0 - dt.datetime(1970, 1, 1)).total_seconds() + 3600]
    assert len(hour_later) == 100 and all(b.state.name == "ARCHIVED" for b in hour_later)
    engine.commit_all()
    later = catalog_module.now_ms() + catalog_module.ARCHIVED_IDLE_MS + 1
    monkeypatch.setattr(catalog_module, "now_ms", lambda: later)
    assert engine.catalog.retire_idle_archived() == 100
    assert all(b.needs_full for b in hour_later)
    assert all(b.state.name == "OPEN" and not b.needs_full for b in engine.buckets() if b not in hour_later)


async def test_a_checkpoint_marks_one_slice_between_loop_yields_and_commits_each(tmp_path, monkeypatch):
    from harness.timeseries import Server

    from tidemark.commands import timeseries_ddl, timeseries_insert

    monkeypatch.setattr(catalog_module, "MAINTENANCE_SLICE", 200, raising=False)
    server = Server(tmp_path / "db")
    ctx = server.ctx()
    catalog = server.bucket_catalog
    try:
        await timeseries_ddl.create(ctx, {"create": "req", "timeseries": {"timeField": "t", "metaField": "m"}, "$db": "db"})
        await timeseries_insert.insert_measurements(ctx, {"insert": "req", "$db": "db", "documents": batch(0, 2000)})
        marks, drained = [0], []
        mark_full, drain = catalog.mark_full, commit.drain

        def counting_mark_full(bucket):
            marks[0] += 1
            mark_full(bucket)

        def recording_drain(catalog_, logs):
            drained.append(len(catalog_.dirty))
            return drain(catalog_, logs)

        monkeypatch.setattr(catalog, "mark_full", counting_mark_full)
        monkeypatch.setattr(commit, "drain", recording_drain)
        between_yields, done = [], asyncio.Event()

        async def ticker():
            seen = 0
            while not done.is_set():
                between_yields.append(marks[0] - seen)
                seen = marks[0]
                await asyncio.sleep(0)

        ticking = asyncio.create_task(ticker())
        assert await server.ts_committer.checkpoint(force=True) == 2000
        done.set()
        await ticking
        assert marks[0] == 2000 and sum(between_yields) <= 2000
        assert max(between_yields) <= 200  # was 2,000 at once
        assert max(drained) <= 200  # each drain walks one slice's marks (was 2,000)
        assert server.ts_committer.counters.bucketDocuments == 2000
    finally:
        server.engine.close()


@pytest.mark.slow
async def test_an_insert_of_new_series_leaves_no_reference_cycles(tmp_path):
    """Each new series plans a storage query (reopen.py); every plan left a reference cycle (a recursive
    closure in index_bounds) that only the garbage collector frees: under a series explosion the young
    collections ran more often and each freed ~33,000 objects (60,000 series in process: 9 collections,
    330 ms of CPU, vs 1 and 4 ms without the cycles), and every collection pauses the event loop.
    Without cycles, what an insert allocates is freed as it goes."""
    import gc

    from harness.timeseries import Server

    from tidemark.commands import timeseries_ddl, timeseries_insert

    server = Server(tmp_path / "db")
    server.bucket_catalog.memory_threshold = 1 << 20  # buckets close (and reopening is asked) as in the bench
    ctx = server.ctx()
    try:
        await timeseries_ddl.create(ctx, {"create": "req", "timeseries": {"timeField": "t", "metaField": "m"}, "$db": "db"})
        await timeseries_insert.insert_measurements(ctx, {"insert": "req", "$db": "db", "documents": batch(0, 1000)})
        gc.collect()
        gc.disable()
        try:
            for start in range(1000, 4000, 1000):
                await timeseries_insert.insert_measurements(ctx, {"insert": "req", "$db": "db",
                                                                  "documents": batch(start, 1000)})
            assert server.bucket_catalog.server_status()["numBucketsClosedDueToMemoryThreshold"] > 0
            assert gc.collect() == 0
        finally:
            gc.enable()
        await server.ts_committer.close()  # the full writes of the closed buckets still run
    finally:
        server.engine.close()
