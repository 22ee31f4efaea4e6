"""Buckets closed for memory while a full write is pending: the catalog's memory stays within the
threshold when a periodic checkpoint has marked every bucket for a full write, and the queued full
writes never keep a bucket that left memory alive.

A million series one measurement each per round (the default threshold holding ~220,000 of them) is the
load these stand for, in small: before, its catalog held 1,020 MB against a 615 MB threshold."""

from __future__ import annotations

import datetime as dt
import gc
import weakref

from harness.timeseries import Engine

from tidemark.timeseries import commit

T0 = dt.datetime(2024, 1, 1)
THRESHOLD = 2 * 1024 * 1024  # ~700 one-row buckets


def batch(series: range, t: dt.datetime) -> list[dict]:
    return [{"t": t, "m": f"host-{s:06d}", "v": float(s)} for s in series]


def test_buckets_a_checkpoint_marked_still_expire_within_the_threshold():
    """A checkpoint marks every bucket never written in full (at a million series, all of them) and
    their writes queue behind those of the buckets leaving memory: counted busy, none of them could
    expire, and every new series' bucket added to the catalog above the threshold."""
    engine = Engine(memory_threshold=THRESHOLD)
    catalog = engine.catalog
    for b in range(12):
        engine.put_raw(batch(range(b * 500, (b + 1) * 500), T0))
        # the closed buckets are leaving, the rest within the threshold (+ one bucket)
        assert catalog.memory - catalog.leaving_bytes <= THRESHOLD + 4096
        engine.flush()
        assert catalog.checkpoint_all() > 0  # the periodic checkpoint marks the buckets never written
    assert engine.stats["numBucketsClosedDueToMemoryThreshold"] > 3_000


def test_queued_full_writes_keep_no_bucket_that_left_memory():
    """Checkpoint-marked buckets that expire are queued again among the buckets leaving memory; the
    checkpoint queue behind them is reached only when that one is empty (never, under a steady stream
    of expiries). Its entries must not keep the buckets, and the full documents they keep for late
    readers, once they left memory."""
    engine = Engine()
    engine.put_raw(batch(range(1000), T0))
    engine.commit_all()
    catalog = engine.catalog
    refs = [weakref.ref(b) for b in engine.buckets()]
    assert catalog.checkpoint_all() == 1000
    commit.drain(catalog, {})  # queues them (the checkpoint queue), takes FULL_WRITES_PER_COMMIT
    assert len(catalog.queued_fulls[1]) == 1000 - commit.FULL_WRITES_PER_COMMIT
    catalog.limits = engine.limits.__class__(memory_threshold=0, expiry_per_attempt=1000)
    while catalog.make_room():  # (EXPIRY_SCAN_LIMIT a call) checkpoint-marked, still idle: they expire
        pass
    assert engine.stats["numBucketsClosedDueToMemoryThreshold"] == 1000
    engine.flush()  # their full writes durable: they left memory
    assert not engine.buckets()
    gc.collect()
    assert sum(ref() is not None for ref in refs) == 0
