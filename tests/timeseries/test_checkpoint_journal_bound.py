"""The journal stays bounded under a steady stream of expiries (more series than the memory threshold
holds, one measurement per series per round, periodic checkpoints): the checkpoint queue gets its share
of every commit's idle full writes, and a checkpoint writes in full every bucket in memory still holding
a record from ``JOURNAL_HOLD_CHECKPOINTS`` checkpoints ago."""

import datetime as dt

from harness.timeseries import Engine, Server

from tidemark.commands import timeseries_ddl, timeseries_insert
from tidemark.timeseries import commit

T0 = dt.datetime(2024, 1, 1)
NS = "db.system.buckets.m"


async def test_the_journal_is_trimmed_while_buckets_keep_expiring(tmp_path):
    server = Server(tmp_path / "db", memory_threshold=1_500_000)
    ctx = server.ctx()
    committer = server.ts_committer
    try:
        await timeseries_ddl.create(ctx, {"create": "m", "timeseries": {"timeField": "t", "metaField": "h"}, "$db": "db"})
        held = []
        for r in range(8):
            for lo in range(0, 3000, 500):
                docs = [{"t": T0 + dt.timedelta(seconds=10 * r), "h": {"id": i}, "v": float(i)} for i in range(lo, lo + 500)]
                await timeseries_insert.insert_measurements(ctx, {"insert": "m", "$db": "db", "documents": docs})
                if lo % 1500 == 0:
                    await committer._mark_checkpoint(force=False)  # the periodic checkpoint, twice a round
            held.append(committer.backlog()["journalRecordsHeld"])
        stats = server.bucket_catalog.collection_stats(NS)
        assert stats["numBucketsClosedDueToMemoryThreshold"] > 5000  # a steady stream of expiries
        # each round journals 6 records; without the checkpoint's share and its second rule every one
        # of them stayed (48 at the end); with them, the records of the last JOURNAL_HOLD_CHECKPOINTS
        # checkpoints (two a round) and the current one
        assert max(held) <= 6 * (commit.JOURNAL_HOLD_CHECKPOINTS // 2 + 1), held
        with server.engine.read() as r:
            assert len(list(r.journal_scan())) == held[-1]
    finally:
        server.engine.close()


def test_a_drain_serves_both_full_write_queues_in_turn():
    engine = Engine()
    engine.put_many([{"t": T0, "m": f"s{i}", "v": 1.0} for i in range(400)])
    engine.commit_all()
    catalog, state = engine.catalog, engine.state
    buckets = engine.buckets()
    for bucket in buckets[:300]:  # leaving memory: the first queue
        catalog._expire(state, bucket)
    for bucket in buckets[300:]:  # checkpointed: the second
        catalog.mark_full(bucket)
    first = commit.drain(catalog, {})
    (plan,) = first.values()
    leaving = sum(1 for bucket, *_ in plan.deferrable if id(bucket) in catalog.leaving)
    assert len(plan.deferrable) == commit.FULL_WRITES_PER_COMMIT
    assert leaving == commit.FULL_WRITES_PER_COMMIT // 2, leaving  # not all of them from the first queue
