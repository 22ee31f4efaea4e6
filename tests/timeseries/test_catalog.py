"""Bucket catalog routing and rollover rules (spec §3.3, 7.0 form) and its statistics."""

import datetime as dt

import pytest
from harness.timeseries import Engine, document

from tidemark.timeseries import catalog as catalog_module
from tidemark.timeseries.states import State

T0 = dt.datetime(2021, 5, 18, 20, 10, 14)


def bucket_ids(buckets):
    return len({b.id for b in buckets})


def test_count_limit_makes_buckets_of_1000_1000_500():
    engine = Engine()
    buckets = [engine.put({"t": T0 + dt.timedelta(milliseconds=i), "m": "a", "v": i}) for i in range(2500)]
    counts = {b.id: b.count for b in buckets}
    assert sorted(counts.values()) == [500, 1000, 1000]
    assert engine.stats["numBucketsClosedDueToCount"] == 2
    assert engine.stats["numBucketsOpenedDueToMetadata"] == 1


def test_span_boundary_last_millisecond_in_next_out():
    engine = Engine()
    first = engine.put({"t": T0, "m": 1})
    assert engine.put({"t": dt.datetime(2021, 5, 18, 21, 9, 59, 999000), "m": 1}) is first
    later = engine.put({"t": dt.datetime(2021, 5, 18, 21, 10), "m": 1})
    assert later is not first
    assert engine.stats["numBucketsArchivedDueToTimeForward"] == 1


def test_custom_rounding_sets_bucket_start():
    engine = Engine(bucketMaxSpanSeconds=300, bucketRoundingSeconds=300)
    assert document(engine.put({"t": T0, "m": 1}))["control"]["min"]["t"] == dt.datetime(2021, 5, 18, 20, 10)
    engine = Engine(granularity="hours")
    assert document(engine.put({"t": T0, "m": 1}))["control"]["min"]["t"] == dt.datetime(2021, 5, 18)


def test_different_metas_never_share_and_field_order_does_not_matter():
    engine = Engine()
    a = engine.put({"t": T0, "m": {"b": 1, "a": 1}})
    b = engine.put({"t": T0, "m": {"a": 1, "b": 1}})
    c = engine.put({"t": T0, "m": {"a": 2, "b": 1}})
    null = engine.put({"t": T0, "m": None})
    missing = engine.put({"t": T0})
    assert a is b
    assert bucket_ids([a, c, null, missing]) == 4
    assert "meta" not in document(missing) and document(null)["meta"] is None
    assert engine.stats["numBucketsOpenedDueToMetadata"] == 4


def test_alternating_days_reuse_archived_buckets():
    engine = Engine()
    day1, day2 = dt.datetime(2021, 5, 18, 10), dt.datetime(2021, 5, 19, 10)
    buckets = []
    for i in range(2000):
        buckets.append(engine.put({"t": day1 + dt.timedelta(seconds=i % 3000), "m": "s"}))
        buckets.append(engine.put({"t": day2 + dt.timedelta(seconds=i % 3000), "m": "s"}))
    assert bucket_ids(buckets) == 4
    assert engine.stats["numBucketsReopened"] > 0
    assert engine.stats["numBucketsArchivedDueToTimeBackward"] > 0


def test_time_backward_before_start_archives_and_opens_new_bucket():
    engine = Engine()
    first = engine.put({"t": T0, "m": 1})
    earlier = engine.put({"t": T0 - dt.timedelta(minutes=5), "m": 1})
    assert earlier is not first and first.state is State.ARCHIVED
    assert engine.stats["numBucketsArchivedDueToTimeBackward"] == 1
    assert engine.put({"t": T0, "m": 1}) is earlier  # fits the earlier bucket's span


def test_schema_change_closes_bucket():
    engine = Engine()
    first = engine.put({"t": T0, "m": 1, "a": 1})
    assert engine.put({"t": T0, "m": 1, "a": 2.5}) is first
    second = engine.put({"t": T0, "m": 1, "a": {"b": 1}})
    assert second is not first and first.state is State.CLOSED
    assert engine.stats["numBucketsClosedDueToSchemaChange"] == 1


def test_size_limit_closes_bucket_after_min_count():
    engine = Engine()
    big = "x" * 60000
    buckets = [engine.put({"t": T0, "m": 1, "s": big}) for _ in range(12)]
    assert bucket_ids(buckets[:10]) == 1  # kept open below the minimum count of 10 (large measurements)
    assert bucket_ids(buckets) == 2
    assert engine.stats["numBucketsClosedDueToSize"] == 1


def test_memory_threshold_closes_idle_buckets():
    engine = Engine(memory_threshold=50_000)
    for i in range(40):
        engine.put({"t": T0, "m": i, "v": 1})
        engine.commit_all()  # committed: idle
    assert engine.stats["numBucketsClosedDueToMemoryThreshold"] > 0
    assert sum(1 for b in engine.buckets() if b.state is State.OPEN) < 40


def test_buckets_with_uncommitted_rows_are_never_closed_for_memory():
    engine = Engine(memory_threshold=50_000)
    for i in range(40):
        engine.put({"t": T0, "m": i, "v": 1})
    assert engine.stats["numBucketsClosedDueToMemoryThreshold"] == 0


def test_closed_bucket_stays_live_until_its_full_write():
    engine = Engine()
    first = engine.put({"t": T0, "m": 1, "a": 1})
    engine.put({"t": T0, "m": 1, "a": "s"})
    assert first.id in engine.state.live and first.state is State.CLOSED and first.needs_full
    engine.commit_all()
    first.needs_full = False
    engine.catalog.written(engine.state, first, b"final")
    assert first.id not in engine.state.live and first.state is State.STORED and first.final == b"final"


def test_server_status_counts_open_buckets():
    engine = Engine()
    engine.put({"t": T0, "m": 1})
    engine.put({"t": T0, "m": 2})
    status = engine.catalog.server_status()
    assert status["numOpenBuckets"] == 2 and status["memoryUsage"] > 0


def _random_batch(seed, n=3000):
    import random

    from bson.int64 import Int64

    rng = random.Random(seed)
    out = []
    for i in range(n):
        t = T0 + dt.timedelta(seconds=rng.choice([i, i, i, i - 4000, i + 5000]))
        doc = {"t": t, "m": {"h": rng.choice("ab"), "r": 1} if rng.random() < 0.9 else rng.choice([None, "s"])}
        if rng.random() < 0.95:
            doc["x"] = rng.choice([rng.random(), float(rng.randrange(5)), float("nan")] if rng.random() < 0.98
                                  else [Int64(3), 7])
        if rng.random() < 0.3:
            doc["s"] = rng.choice(["a", "bb", "x" * rng.randrange(2000)])
        if rng.random() < 0.01:
            doc["x"] = "now a string"  # schema change
        if rng.random() < 0.02:
            doc["o"] = {"k": rng.randrange(3)}
        out.append(doc)
    return out


def _bucket_contents(engine):
    """The buckets without the _id each measurement was given (a fresh ObjectId per insert)."""
    docs = []
    for doc in engine.documents():
        control = {k: {f: v for f, v in doc["control"][k].items() if f != "_id"} if k in ("min", "max") else v
                   for k, v in doc["control"].items()}
        data = {f: column for f, column in doc["data"].items() if f != "_id"}
        docs.append(repr({"control": control, "meta": doc.get("meta"), "data": data}))
    return sorted(docs)


@pytest.mark.slow
def test_batched_insert_builds_the_same_buckets_as_one_by_one():
    for seed in (1, 2, 3):
        batch = _random_batch(seed)
        one, many = Engine(), Engine()
        for doc in batch:
            one.put(doc)
        for start in range(0, len(batch), 700):
            many.put_many(batch[start:start + 700])
        assert _bucket_contents(one) == _bucket_contents(many)
        assert one.stats == many.stats


def test_checkpoint_rewrites_a_bucket_only_after_it_doubled():
    engine = Engine()
    bucket = engine.put({"t": T0, "m": 1, "v": 1.0})
    engine.commit_all()
    assert engine.catalog.checkpoint_all() == 1  # never written in full yet
    bucket.needs_full = False
    bucket.full_size, bucket.stored_count = bucket.size, bucket.count
    engine.put({"t": T0, "m": 1, "v": 2.0})
    engine.commit_all()
    assert engine.catalog.checkpoint_all() == 0  # grew, but not doubled
    assert engine.catalog.checkpoint_all(force=True) == 1
    bucket.needs_full = False
    bucket.full_size, bucket.stored_count = bucket.size, bucket.count
    while bucket.size < 2 * bucket.full_size:
        assert engine.catalog.checkpoint_all() == 0
        engine.put({"t": T0, "m": 1, "v": 3.0})
        engine.commit_all()
    assert engine.catalog.checkpoint_all() == 1


def test_size_limit_and_large_measurement_rule_hold_for_batched_inserts():
    engine = Engine()
    big = "x" * 60000
    engine.put_many([{"t": T0, "m": 1, "s": big} for _ in range(12)])
    counts = sorted(b.count for b in engine.buckets())
    assert counts == [2, 10]
    assert engine.stats["numBucketsClosedDueToSize"] == 1
    # both buckets were kept open past the limit (each counted once, as mongod's bucket catalog)
    assert engine.stats["numBucketsKeptOpenDueToLargeMeasurements"] == 2


def test_idle_archived_buckets_retire_a_bounded_number_per_slice(monkeypatch):
    """An hour boundary archives every series at once: they retire RETIRE_PER_PASS per call (a slice
    of the maintenance pass, which yields the loop between slices and takes them all: see
    test_catalog_memory), and their full writes are spread over commits."""
    engine = Engine()
    series = catalog_module.RETIRE_PER_PASS + 44
    engine.put_many([{"t": T0, "m": i} for i in range(series)])
    engine.put_many([{"t": T0 + dt.timedelta(hours=1), "m": i} for i in range(series)])  # every series archives one
    archived = engine.catalog.server_status()["numArchivedBuckets"]
    assert archived == series
    later = catalog_module.now_ms() + catalog_module.ARCHIVED_IDLE_MS + 1
    monkeypatch.setattr(catalog_module, "now_ms", lambda: later)
    assert engine.catalog.retire_idle_archived() == catalog_module.RETIRE_PER_PASS
    assert engine.catalog.retire_idle_archived() == series - catalog_module.RETIRE_PER_PASS
    assert engine.catalog.retire_idle_archived() == 0
