"""Issue 21.6: the bucket catalog's memory stays within timeseriesIdleBucketExpiryMemoryUsageThreshold
for any number of series (every measurement on a new meta): idle buckets close as new ones open, the
series they leave are released and their ids reused, table slots are reused lowest first and the
tables shrink, the memory counter counts a bucket's table slot row at the table's capacity, and the
full writes of closed buckets are spread over commits."""

import datetime as dt
from types import SimpleNamespace

import numpy as np
import pytest
from harness.timeseries import Engine

from tidemark.timeseries import commit, rules
from tidemark.timeseries.catalog import EXPIRY_SCAN_LIMIT
from tidemark.timeseries.states import State
from tidemark.timeseries.table import Table

T0 = dt.datetime(2024, 1, 1)
THRESHOLD = 8 * 1024 * 1024  # ~2,800 one-row buckets


def batch(b, n=1000, prefix="req"):
    return [{"t": T0 + dt.timedelta(milliseconds=b * n + i), "m": f"{prefix}-{b * n + i:08d}", "v": float(i)}
            for i in range(n)]


@pytest.mark.slow
def test_memory_stays_within_the_threshold_for_any_number_of_series():
    engine = Engine(memory_threshold=THRESHOLD)
    catalog, state = engine.catalog, engine.state
    sizes = []
    for b in range(40):
        assert engine.put_raw(batch(b))
        # before the commit: the closed buckets are leaving, the rest within the threshold (+ one bucket)
        assert catalog.memory - catalog.leaving_bytes <= THRESHOLD + 4096
        engine.flush()
        assert catalog.memory <= THRESHOLD + 4096
        sizes.append((len(state.live), len(state.series.keys), len(next(iter(state.tables.values())).count)))
    live, ids, slots = sizes[-1]
    assert 300 < live < THRESHOLD // 2048  # the threshold, not the 60,000 series, bounds what stays
    assert sizes[10] == sizes[-1]  # flat once the threshold was reached: ids and slots are reused
    assert ids < 2 * live + 2000 and slots <= 4 * (live + 1000)
    assert len(state.series.sid_of_key) <= live + 1000 and len(state.series.sid_of_raw) <= live + 1000
    stats = engine.stats
    assert stats["numBucketsOpenedDueToMetadata"] == 40_000
    assert stats["numBucketsClosedDueToMemoryThreshold"] == 40_000 - live


def test_expiry_examines_each_busy_bucket_once_between_commits(monkeypatch):
    """An insert of more new series than there are idle buckets: once the idle ones are closed, the
    expiry queue's front holds the insert's own buckets, busy until it commits. Each is examined once,
    not again by every later new bucket (before: up to EXPIRY_SCAN_LIMIT of them per new bucket, ~35 on
    average on a real server, 3x the cost of opening the bucket). After the commit they are idle and
    the expiry closes them."""
    engine = Engine(memory_threshold=THRESHOLD)
    for b in range(4):  # near the threshold, every bucket committed and idle
        engine.put_raw(batch(b))
        engine.flush()
    idle_before = sum(1 for bucket in engine.buckets() if bucket.idle)
    assert idle_before > 2000
    bucket_type = type(engine.buckets()[0])
    idle = bucket_type.idle
    examined: list[int] = []

    def counted(bucket):
        examined.append(id(bucket))
        return idle.fget(bucket)

    monkeypatch.setattr(bucket_type, "idle", property(counted))
    engine.put_raw(batch(10, n=idle_before + 2000, prefix="burst"))
    closed = engine.stats["numBucketsClosedDueToMemoryThreshold"]
    assert closed > idle_before - 200  # the idle ones went first (~70 opened before the threshold)
    assert len(examined) > closed + EXPIRY_SCAN_LIMIT  # it did meet the burst's busy buckets
    assert len(set(examined)) == len(examined)  # each of them once
    engine.flush()  # committed: the burst's buckets are idle now
    engine.put_raw(batch(11, n=10, prefix="late"))
    assert engine.stats["numBucketsClosedDueToMemoryThreshold"] >= closed + 10


@pytest.mark.slow
def test_a_released_series_returns_with_its_own_meta():
    engine = Engine(memory_threshold=THRESHOLD)
    for b in range(12):
        engine.put_raw(batch(b))
        engine.flush()
    engine.catalog.release_series()
    series = engine.state.series
    assert len(series.sid_of_key) == len(engine.state.live)  # the series expired long ago are unmapped
    engine.put_raw([{"t": T0, "m": "req-00000000", "v": -1.0}] + batch(12)[1:])
    bucket = engine.open_bucket("req-00000000")
    assert bucket.meta == "req-00000000" and bucket.count == 1
    for b in engine.buckets():  # every live bucket holds exactly its own series' meta
        assert series.metas[b.sid] == b.meta and series.sid_of_key[series.keys[b.sid]] == b.sid


def test_a_pinned_insert_keeps_the_series_ids_it_computed():
    engine = Engine(memory_threshold=THRESHOLD)
    engine.put_raw(batch(0))
    engine.flush()
    catalog, series = engine.catalog, engine.state.series
    bucket = engine.open_bucket("req-00000001")
    sid = bucket.sid
    with catalog.pinned():
        catalog.release_series()
        catalog.limits = engine.limits
        catalog.close(engine.state, bucket, rules.Rollover.MEMORY_THRESHOLD)  # its last bucket leaves while pinned
        engine.flush()
        catalog.release_series()
        catalog.release_series()
        assert sid not in series.free and series.keys[sid] is not None
    catalog.release_series()
    assert sid in series.free and series.keys[sid] is None


def test_table_slots_are_reused_lowest_first_and_the_arrays_shrink():
    table = Table((("t", 0x09, None), ("v", 0x01, None)), "db.c", "t")
    owners = [SimpleNamespace(sid=i) for i in range(5000)]
    slots = [table.allocate(o) for o in owners]
    assert slots == list(range(5000)) and len(table.count) >= 5000
    assert table.meter.bytes == 5000 * table.row_bytes
    for slot in slots[10:4000]:
        table.release(slot)
    assert table.allocate(SimpleNamespace(sid=0)) == 10  # the lowest free slot
    table.release(10)
    assert not table.shrink()  # slots 4000..4999 still held: nothing to drop
    for slot in slots[4000:]:
        table.release(slot)
    table.count[:10] = 3
    gens = table.gen[:10].copy()
    assert table.shrink()
    assert len(table.count) == 32 and table.data["v"].shape == (32, 16)
    assert table.meter.bytes == 10 * table.row_bytes
    assert (table.gen[:10] == gens).all() and table.count[:10].tolist() == [3] * 10
    assert table.free == [] and table.used == 10 and table.allocate(SimpleNamespace(sid=0)) == 10
    assert table.gen[10] > gens.max()  # gens never repeat


def test_memory_counts_each_bucket_slot_row_at_the_table_capacity():
    engine = Engine()
    catalog = engine.catalog
    engine.put_raw(batch(0))
    table = next(iter(engine.state.tables.values()))
    before, row = catalog.memory, table.row_bytes
    engine.put_raw([{"t": T0 + dt.timedelta(seconds=i), "m": "long", "v": 1.0} for i in range(1000)])
    assert table.cap >= 1000 and table.row_bytes > 50 * row
    grown = catalog.memory - before
    assert grown >= 1000 * (table.row_bytes - row)  # the 1,000 one-row buckets now cost a wide row each


def test_full_writes_of_idle_buckets_are_spread_over_commits():
    engine = Engine()
    engine.put_raw(batch(0))
    engine.commit_all()
    catalog = engine.catalog
    for bucket in engine.buckets():
        catalog.close(engine.state, bucket, rules.Rollover.MEMORY_THRESHOLD)
    plans = commit.drain(catalog, {})
    (plan,) = plans.values()
    assert len(plan.deferrable) == commit.FULL_WRITES_PER_COMMIT and not plan.fulls
    assert catalog.deferred == 1000 - commit.FULL_WRITES_PER_COMMIT and not catalog.dirty
    assert all(b.state is State.CLOSED for b in engine.buckets())
    total = len(plan.deferrable)
    while catalog.deferred:
        total += sum(len(p.deferrable) for p in commit.drain(catalog, {}).values())
    assert total == 1000


def test_expiry_takes_least_recently_used_idle_buckets_first():
    engine = Engine(memory_threshold=1 << 40)
    engine.put_raw(batch(0, 100, "old"))
    engine.commit_all()
    engine.put_raw(batch(0, 100, "new"))
    engine.commit_all()
    engine.put_raw([{"t": T0 + dt.timedelta(seconds=5), "m": "old-00000000", "v": 0.0}])  # used again
    engine.commit_all()
    catalog = engine.catalog
    catalog.limits = engine.limits.__class__(memory_threshold=0, expiry_per_attempt=50)
    assert catalog.make_room() == 50
    closed = sorted(b.meta for b in engine.buckets() if id(b) in catalog.leaving)
    assert closed == [f"old-{i:08d}" for i in range(1, 51)]
    assert np.all([b.state is State.OPEN for b in engine.buckets() if b.meta.startswith("new")])


async def test_closing_a_collection_waits_for_every_full_write_beyond_one_commit(tmp_path):
    """Direct writes to system.buckets first write every in-memory bucket in full: with the full
    writes spread over commits, close_collection waits for all of them, not just the first commit's."""
    from harness.timeseries import Server

    from tidemark.commands import timeseries_ddl, timeseries_insert

    server = Server(tmp_path / "db")
    ctx = server.ctx()
    try:
        await timeseries_ddl.create(ctx, {"create": "req", "timeseries": {"timeField": "t", "metaField": "m"}, "$db": "db"})
        await timeseries_insert.insert_measurements(ctx, {"insert": "req", "$db": "db", "documents": batch(0, 600)})
        catalog = server.bucket_catalog
        assert len(catalog.live_buckets("db.system.buckets.req")) == 600
        await server.ts_committer.close_collection("db.system.buckets.req")
        assert catalog.live_buckets("db.system.buckets.req") == []
        assert server.ts_committer.counters.bucketDocuments == 600
    finally:
        server.engine.close()


def test_full_writes_of_buckets_leaving_memory_go_before_checkpoints_and_drains_stay_o_of_a_commit():
    engine = Engine()
    engine.put_raw(batch(0))
    engine.commit_all()
    catalog = engine.catalog
    assert catalog.checkpoint_all() == 1000  # every journaled bucket: queued behind what leaves memory
    commit.drain(catalog, {})
    assert catalog.deferred == 1000 - commit.FULL_WRITES_PER_COMMIT
    leaving = [b for b in engine.buckets() if b.needs_full][:10]
    for bucket in leaving:
        catalog.close(engine.state, bucket, rules.Rollover.MEMORY_THRESHOLD)
    (plan,) = commit.drain(catalog, {}).values()
    assert [b for b, *_ in plan.deferrable][:10] == leaving
    assert len(plan.deferrable) == commit.FULL_WRITES_PER_COMMIT


def _mapping_of(array):
    """The object that owns ``array``'s memory (the end of its ``base`` chain)."""
    while isinstance(array, np.ndarray) and array.base is not None:
        array = array.base
    return array.obj if isinstance(array, memoryview) else array


def test_large_table_arrays_are_mappings_of_their_own_and_unmapped_when_replaced():
    """Issue 23.2: table arrays taken from the malloc heap were fully resident (pages earlier arrays had
    touched) and never given back: after a 16-day ordered load the heap held ~230 MB with 100 buckets
    in memory. From OWN_MAPPING_BYTES on, each array is an anonymous mapping of its own: resident only
    where rows were written, and unmapped once the table replaces it (grow or shrink)."""
    import mmap
    import weakref

    from tidemark.timeseries import table as table_module

    table = Table((("t", 0x09, None), ("v", 0x01, None)), "db.c", "t")
    assert not isinstance(_mapping_of(table.data["v"]), mmap.mmap)  # small: malloc's, as before
    owners = [SimpleNamespace(sid=i) for i in range(2000)]
    for owner in owners:
        table.allocate(owner)
    table.reserve_rows(1000)
    assert table.data["v"].nbytes >= table_module.OWN_MAPPING_BYTES
    grown = [_mapping_of(array) for array in table.data.values()]
    assert all(isinstance(m, mmap.mmap) for m in grown)
    unmapped = [weakref.ref(m) for m in grown]
    del grown
    table.data["v"][5, :3] = (1.0, 2.0, 3.0)
    table.count[5] = 3
    assert table.data["v"].flags.writeable
    for slot in range(2000):
        if slot != 5:
            table.release(slot)
    assert table.shrink()
    assert table.data["v"][5, :3].tolist() == [1.0, 2.0, 3.0]
    assert all(ref() is None for ref in unmapped)  # the grown arrays' mappings are gone (munmap)


def test_more_slots_are_a_longer_view_of_the_same_mapping_while_it_has_room(monkeypatch):
    """Growing a large table's slots copied every row held into new arrays: a 1-day TSBS load (2,400
    buckets of 360 rows held at once) grew 512 -> 2,048 -> 8,192 slots, and the last grow held the event
    loop 120 ms. A mapping now has room for RESERVED_BYTES of slots (virtual until written): more slots
    are a longer view of it, rows in place and old views (readers') still showing them; a capacity change
    or a shrink still makes new arrays, and a system that refuses the room gets just what is asked."""
    from tidemark.timeseries import table as table_module

    table = Table((("t", 0x09, None), ("v", 0x01, None)), "db.c", "t")
    owners = [SimpleNamespace(sid=i) for i in range(100)]
    for owner in owners:
        table.allocate(owner)
    table.reserve_rows(1000)
    mapping = _mapping_of(table.data["v"])
    room = table_module.RESERVED_BYTES // (table.cap * 8)
    assert table.data["v"].shape == (128, table.cap) and room > 2048
    table.data["v"][5, :3] = (1.0, 2.0, 3.0)
    table.count[5] = 3
    before = table.data["v"]
    for i in range(100, 2000):
        table.allocate(SimpleNamespace(sid=i))
    assert table.data["v"].shape == (2048, table.cap)
    assert _mapping_of(table.data["v"]) is mapping  # no new array: nothing was copied
    assert table.data["v"][5, :3].tolist() == [1.0, 2.0, 3.0]
    table.data["v"][5, 3] = 4.0
    assert before[5, 3] == 4.0  # the old view is the same memory

    for slot in range(2000):
        if slot != 5:
            table.release(slot)
    assert table.shrink()
    assert _mapping_of(table.data["v"]) is not mapping and table.data["v"][5, :3].tolist() == [1.0, 2.0, 3.0]

    asked = []

    def refusing(fileno, length):
        asked.append(length)
        if length > (1 << 24):
            raise OSError(12, "Cannot allocate memory")
        return real(fileno, length)

    real = table_module.mmap.mmap
    monkeypatch.setattr(table_module.mmap, "mmap", refusing)
    tight = table_module.rows_array(200, 1024, np.float64)
    assert tight.shape == (200, 1024) and asked == [table_module.RESERVED_BYTES, 200 * 1024 * 8]
    tight[199, 1023] = 7.0


@pytest.mark.parametrize("kind", [0x01, 0x07, 0x08, 0x09, 0x10, 0x12], ids=["double", "objectId", "bool", "date",
                                                                      "int", "long"])
def test_every_column_of_a_table_grows_its_slots_in_place_together(kind):
    """A mapping's room was counted in bytes, so a column of 12-byte values (the ObjectId ``_id`` the server
    adds to every measurement) had room for 5,461 slots at 1,024 rows where 8-byte columns had 8,192: a
    1-day TSBS load growing 2,048 -> 8,192 slots copied that one column's rows held into a new mapping,
    52 ms of the event loop. Room is now counted in slots: every typed column, whatever its item size,
    grows in place as far as the time column does."""
    import mmap

    table = Table((("t", 0x09, None), ("c", kind, None)), "db.c", "t")
    for i in range(100):
        table.allocate(SimpleNamespace(sid=i))
    table.reserve_rows(1000)
    assert table.cap == 1024
    for i in range(100, 2000):
        table.allocate(SimpleNamespace(sid=i))
    assert all(array.shape == (2048, 1024) for array in table.data.values())
    mappings = {name: _mapping_of(array) for name, array in table.data.items()}
    assert all(isinstance(m, mmap.mmap) for m in mappings.values())
    for i in range(2000, 8000):
        table.allocate(SimpleNamespace(sid=i))
    assert all(array.shape == (8192, 1024) for array in table.data.values())
    assert {name: _mapping_of(array) for name, array in table.data.items()} == mappings  # nothing copied


def test_one_maintenance_pass_retires_every_archived_bucket_due(tmp_path, monkeypatch):
    """Issue 23.2: the pass retired at most RETIRE_PER_PASS archived buckets a second, so an ordered load
    that archives faster (~400 a second at 100 hosts) piled them up for as long as it ran (peak RSS grew
    with the data loaded). Now a pass takes every bucket due, RETIRE_PER_PASS per slice with the loop
    yielded between slices; the writer's pace (leaving allowance) bounds the rest."""
    import asyncio

    from harness.timeseries import Server

    from tidemark.commands import timeseries_ddl, timeseries_insert
    from tidemark.timeseries import catalog as catalog_module

    monkeypatch.setattr(commit, "RETIRE_INTERVAL_SECONDS", 0.01)
    series = catalog_module.RETIRE_PER_PASS + 44
    docs = [{"t": T0 + dt.timedelta(hours=h), "m": f"host-{i}", "v": 1.0} for h in (0, 1) for i in range(series)]

    async def run():
        server = Server(tmp_path / "db")
        ctx = server.ctx()
        catalog = server.bucket_catalog
        try:
            await timeseries_ddl.create(ctx, {"create": "c", "timeseries": {"timeField": "t", "metaField": "m"},
                                              "$db": "db"})
            await timeseries_insert.insert_measurements(ctx, {"insert": "c", "$db": "db", "documents": docs})
            assert catalog.server_status()["numArchivedBuckets"] == series
            later = catalog_module.now_ms() + catalog_module.ARCHIVED_IDLE_MS + 1
            monkeypatch.setattr(catalog_module, "now_ms", lambda: later)
            slices, passes = [], []
            retire, maintain = catalog.retire_idle_archived, catalog.maintain

            def counting_retire(*args):
                slices.append(retire(*args))
                return slices[-1]

            def counting_maintain():
                passes.append(sum(slices))
                maintain()

            monkeypatch.setattr(catalog, "retire_idle_archived", counting_retire)
            monkeypatch.setattr(catalog, "maintain", counting_maintain)
            server.ts_committer.start_maintenance()
            for _ in range(500):
                if passes:
                    break
                await asyncio.sleep(0.01)
            assert passes[0] == series  # the first pass retired them all (was RETIRE_PER_PASS)
            assert slices[:2] == [catalog_module.RETIRE_PER_PASS, 44]  # a slice at a time
        finally:
            await server.ts_committer.close()
            server.engine.close()

    asyncio.run(run())


def test_the_maintenance_pass_shrinks_a_table_only_once_it_has_not_grown_for_a_while(monkeypatch):
    """Issue 23: a time-ordered load empties and refills its tables at every bucket span; shrinking
    them in between copied every array down and up again each span. A table that grew within
    ``SHRINK_AFTER_MS`` keeps its arrays; an idle one shrinks at the next pass after that."""
    from tidemark.timeseries import catalog as catalog_module

    engine = Engine()
    for b in range(3):
        engine.put_raw(batch(b, n=500))
    engine.flush()
    (table,) = engine.state.tables.values()
    size = len(table.count)
    held = [s for s in range(table.used) if table.taken[s]]
    for slot in held[8:]:  # most slots emptied (as buckets leaving memory leave them): a quarter would do
        table.release(slot)
    assert table.live * 4 <= size
    now = catalog_module.now_ms()
    monkeypatch.setattr(catalog_module, "now_ms", lambda: now)
    engine.catalog.maintain()
    assert len(table.count) == size  # it grew a moment ago: kept
    monkeypatch.setattr(catalog_module, "now_ms", lambda: table.grown_ms + catalog_module.SHRINK_AFTER_MS)
    engine.catalog.maintain()
    assert len(table.count) < size
