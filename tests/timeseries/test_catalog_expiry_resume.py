"""Buckets expired for memory (or retired) while their full write is pending: the catalog's memory stays
within the threshold when a periodic checkpoint has marked every bucket for a full write, the queued
full writes never keep a bucket that left memory alive, and a series whose bucket still awaits its full
write resumes it instead of opening a second bucket for the same time range (mongod 7.0 reopens the
bucket it closed for memory).

A million series one measurement each per round (the default threshold holding ~220,000 of them) is the
load these stand for, in small: before, its catalog held 1,020 MB against a 615 MB threshold."""

from __future__ import annotations

import datetime as dt
import gc
import weakref

import pytest
from harness.timeseries import Engine
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.timeseries import catalog as catalog_module
from tidemark.timeseries import commit
from tidemark.timeseries.states import State

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


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(n_series=st.integers(1, 1500), size=st.integers(1, 700), rounds=st.integers(2, 4),
       threshold_buckets=st.integers(1, 600), commit_every=st.integers(1, 3))
def test_a_series_resumes_its_bucket_awaiting_its_full_write(n_series, size, rounds, threshold_buckets, commit_every):
    """Series, one measurement each per round within one bucket span, cut in batches; the threshold
    holds a fraction of them. No full write completes (the writer behind): every series keeps one
    bucket from the first round to the last, each expired bucket resumed by its next measurement
    (counted as reopened). Before, such a series opened a second bucket (the expired one could not be
    reopened, and storage did not hold it yet)."""
    engine = Engine(memory_threshold=threshold_buckets * 3000)
    state = engine.state
    catalog = engine.catalog
    holders: dict[str, set[bytes]] = {}
    flat = [(s, r) for r in range(rounds) for s in range(n_series)]
    for k, at in enumerate(range(0, len(flat), size)):
        part = flat[at:at + size]
        engine.put_raw([{"t": T0 + dt.timedelta(seconds=10 * r), "m": f"host-{s:06d}", "v": float(r)} for s, r in part])
        for s, _ in part:
            meta = f"host-{s:06d}"
            holders.setdefault(meta, set()).add(engine.open_bucket(meta).id.binary)
        if k % commit_every == 0:
            engine.commit_all()  # rows durable; full writes still pending
        assert catalog.leaving_bytes == sum(catalog.leaving.values()) >= 0
    assert {len(ids) for ids in holders.values()} == {1}
    assert len(state.live) == n_series
    expired = engine.stats["numBucketsClosedDueToMemoryThreshold"]
    assert engine.stats["numBucketsReopened"] <= expired
    assert not any(id(b) in catalog.leaving and b.state is State.OPEN for b in engine.buckets())


def test_a_late_measurement_resumes_the_retired_bucket_of_its_range(monkeypatch):
    """An archived bucket retired (idle) and not yet written takes a late measurement of its range: it
    is reopened, not a second bucket opened (storage does not hold it yet)."""
    engine = Engine()
    catalog = engine.catalog
    first = engine.put({"t": T0, "m": "a", "v": 1.0})
    later = engine.put({"t": T0 + dt.timedelta(hours=2), "m": "a", "v": 2.0})  # time forward: first archived
    assert first.state is State.ARCHIVED and later is not first
    engine.commit_all()
    monkeypatch.setattr(catalog_module, "ARCHIVED_IDLE_MS", -10**12)  # every archived bucket is due
    assert catalog.retire_idle_archived() == 1
    assert id(first) in catalog.leaving and first.needs_full
    reopened, fetched = engine.stats["numBucketsReopened"], engine.stats["numBucketsFetched"]
    late = engine.put({"t": T0 + dt.timedelta(seconds=5), "m": "a", "v": 3.0})
    assert late is first and first.state is State.OPEN and first.count == 2
    assert id(first) not in catalog.leaving and not first.needs_full and not engine.state.series.parting
    assert engine.stats["numBucketsReopened"] == reopened + 1
    assert engine.stats["numBucketsFetched"] == fetched + 1  # from the catalog (mongod's fetch by _id), not queried
    assert later.state is State.ARCHIVED and len(engine.buckets()) == 2


@pytest.mark.parametrize("closing", ["count", "direct write"])
def test_a_bucket_closed_for_good_is_not_resumed(closing):
    """Only buckets with room (expired for memory, retired) are resumable: one closed because it is full,
    or by a direct write to the buckets collection, is not."""
    engine = Engine(params={"timeseriesBucketMaxCount": 2})
    catalog = engine.catalog
    first = engine.put({"t": T0, "m": "a", "v": 1.0})
    if closing == "count":
        engine.put({"t": T0, "m": "a", "v": 2.0})
        engine.put({"t": T0, "m": "a", "v": 3.0})
        assert first.state is State.CLOSED
    else:
        engine.commit_all()
        catalog.limits = engine.limits.__class__(memory_threshold=0, expiry_per_attempt=10)
        assert catalog.make_room() == 1 and engine.state.series.parting  # expired: resumable
        catalog.close_all(engine.state.ns)
        assert first.state is State.CLOSED and not engine.state.series.parting
        catalog.limits = engine.limits
    assert engine.put({"t": T0, "m": "a", "v": 4.0}) is not first
