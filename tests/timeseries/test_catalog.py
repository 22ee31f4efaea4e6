"""Bucket catalog routing and rollover rules (spec §3.3, 7.0 form) and its statistics."""

import datetime as dt

from server.timeseries.buckets import date_ms
from server.timeseries.catalog import BucketCatalog
from server.timeseries.options import parse_timeseries

T0 = dt.datetime(2021, 5, 18, 20, 10, 14)


def setup(**spec):
    spec.setdefault("timeField", "t")
    spec.setdefault("metaField", "m")
    catalog = BucketCatalog(memory_threshold=1 << 40)
    return catalog, catalog.collection("db.system.buckets.c", parse_timeseries("db.c", spec))


def put(catalog, state, t, **fields):
    measurement = {"t": t, **fields}
    return catalog.insert(state, measurement, date_ms(t), t)


def bucket_ids(buckets):
    return len({b.id for b in buckets})


def test_count_limit_makes_buckets_of_1000_1000_500():
    catalog, state = setup()
    buckets = [put(catalog, state, T0 + dt.timedelta(milliseconds=i), m="a", v=i) for i in range(2500)]
    counts = {}
    for b in buckets:
        counts[b.id] = b.count
    assert sorted(counts.values()) == [500, 1000, 1000]
    assert state.stats["numBucketsClosedDueToCount"] == 2
    assert state.stats["numBucketsOpenedDueToMetadata"] == 1


def test_span_boundary_last_millisecond_in_next_out():
    catalog, state = setup()
    first = put(catalog, state, T0, m=1)
    assert put(catalog, state, dt.datetime(2021, 5, 18, 21, 9, 59, 999000), m=1) is first
    later = put(catalog, state, dt.datetime(2021, 5, 18, 21, 10), m=1)
    assert later is not first
    assert state.stats["numBucketsArchivedDueToTimeForward"] == 1


def test_custom_rounding_sets_bucket_start():
    catalog, state = setup(bucketMaxSpanSeconds=300, bucketRoundingSeconds=300)
    bucket = put(catalog, state, T0, m=1)
    assert bucket.document()["control"]["min"]["t"] == dt.datetime(2021, 5, 18, 20, 10)
    catalog, state = setup(granularity="hours")
    assert put(catalog, state, T0, m=1).document()["control"]["min"]["t"] == dt.datetime(2021, 5, 18)


def test_different_metas_never_share_and_field_order_does_not_matter():
    catalog, state = setup()
    a = put(catalog, state, T0, m={"b": 1, "a": 1})
    b = put(catalog, state, T0, m={"a": 1, "b": 1})
    c = put(catalog, state, T0, m={"a": 2, "b": 1})
    null = put(catalog, state, T0, m=None)
    missing = put(catalog, state, T0)
    assert a is b
    assert bucket_ids([a, c, null, missing]) == 4
    assert "meta" not in missing.document() and null.document()["meta"] is None
    assert state.stats["numBucketsOpenedDueToMetadata"] == 4


def test_alternating_days_reuse_archived_buckets():
    catalog, state = setup()
    day1, day2 = dt.datetime(2021, 5, 18, 10), dt.datetime(2021, 5, 19, 10)
    buckets = []
    for i in range(2000):
        buckets.append(put(catalog, state, day1 + dt.timedelta(seconds=i % 3000), m="s"))
        buckets.append(put(catalog, state, day2 + dt.timedelta(seconds=i % 3000), m="s"))
    assert bucket_ids(buckets) == 4
    assert state.stats["numBucketsReopened"] > 0
    assert state.stats["numBucketsArchivedDueToTimeBackward"] > 0


def test_time_backward_before_start_archives_and_opens_new_bucket():
    catalog, state = setup()
    first = put(catalog, state, T0, m=1)
    earlier = put(catalog, state, T0 - dt.timedelta(minutes=5), m=1)
    assert earlier is not first
    assert state.stats["numBucketsArchivedDueToTimeBackward"] == 1
    assert put(catalog, state, T0, m=1) is earlier  # fits the earlier bucket's span


def test_schema_change_closes_bucket():
    catalog, state = setup()
    first = put(catalog, state, T0, m=1, a=1)
    assert put(catalog, state, T0, m=1, a=2.5) is first
    second = put(catalog, state, T0, m=1, a={"b": 1})
    assert second is not first
    assert state.stats["numBucketsClosedDueToSchemaChange"] == 1


def test_size_limit_closes_bucket_after_min_count():
    catalog, state = setup()
    big = "x" * 60000
    buckets = [put(catalog, state, T0, m=1, s=big) for _ in range(12)]
    assert bucket_ids(buckets[:10]) == 1  # kept open below the minimum count of 10 (large measurements)
    assert bucket_ids(buckets) == 2
    assert state.stats["numBucketsClosedDueToSize"] == 1


def test_memory_threshold_closes_idle_buckets():
    catalog = BucketCatalog(memory_threshold=50_000)
    state = catalog.collection("db.system.buckets.c", parse_timeseries("db.c", {"timeField": "t", "metaField": "m"}))
    for i in range(40):
        bucket = put(catalog, state, T0, m=i, v=1)
        bucket.pending.clear()
        catalog.take_dirty()
    assert state.stats["numBucketsClosedDueToMemoryThreshold"] > 0
    assert len(state.open) < 40


def test_closed_bucket_stays_live_until_its_full_write():
    catalog, state = setup()
    first = put(catalog, state, T0, m=1, a=1)
    put(catalog, state, T0, m=1, a="s")
    assert first.id in state.live and not first.open and first.needs_full
    first.needs_full = False
    first.pending.clear()
    catalog.written_full(first)
    assert first.id not in state.live


def test_server_status_counts_open_buckets():
    catalog, state = setup()
    put(catalog, state, T0, m=1)
    put(catalog, state, T0, m=2)
    status = catalog.server_status()
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


def _bucket_contents(state):
    docs = []
    for bucket in state.live.values():
        doc = bucket.document()
        docs.append(repr({"control": doc["control"], "meta": doc.get("meta"), "data": doc["data"]}))
    return sorted(docs)


def test_batched_insert_builds_the_same_buckets_as_one_by_one():
    for seed in (1, 2, 3):
        batch = _random_batch(seed)
        one, state_one = setup()
        many, state_many = setup()
        for doc in batch:
            put(one, state_one, doc["t"], **{k: v for k, v in dict(doc).items() if k != "t"})
        items = [(dict(doc), date_ms(doc["t"]), doc["t"]) for doc in batch]
        for start in range(0, len(items), 700):
            many.insert_many(state_many, items[start:start + 700])
        assert _bucket_contents(state_one) == _bucket_contents(state_many)
        assert state_one.stats == state_many.stats


def test_checkpoint_rewrites_a_bucket_only_after_it_doubled():
    catalog, state = setup()
    bucket = put(catalog, state, T0, m=1, v=1.0)
    bucket.journaled = True
    assert catalog.checkpoint_all() == 1  # never written in full yet
    bucket.needs_full = False
    bucket.full_size = bucket.size
    put(catalog, state, T0, m=1, v=2.0)
    assert catalog.checkpoint_all() == 0  # grew, but not doubled
    assert catalog.checkpoint_all(force=True) == 1
    bucket.needs_full = False
    bucket.full_size = bucket.size
    while bucket.size < 2 * bucket.full_size:
        assert catalog.checkpoint_all() == 0
        put(catalog, state, T0, m=1, v=3.0)
    assert catalog.checkpoint_all() == 1


def test_size_limit_and_large_measurement_rule_hold_for_batched_inserts():
    catalog, state = setup()
    big = "x" * 60000
    items = [({"t": T0, "m": 1, "s": big}, date_ms(T0), T0) for _ in range(12)]
    catalog.insert_many(state, items)
    counts = sorted(b.count for b in state.live.values())
    assert counts == [2, 10]
    assert state.stats["numBucketsClosedDueToSize"] == 1
    # the first measurement of each bucket already passes the limit (its new field counts data + min + max)
    assert state.stats["numBucketsKeptOpenDueToLargeMeasurements"] == 10
