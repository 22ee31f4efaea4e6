"""Fast paths of the insert hot path give exactly the results of the general code they short-cut."""

import datetime as dt

import bson
import pytest
from bson.int64 import Int64
from bson.objectid import ObjectId
from harness.timeseries import Engine, document

from tidemark.timeseries.batch import object_id_factory
from tidemark.timeseries.bucketdoc import date_ms

T0 = dt.datetime(2021, 5, 18, 20, 10, 14)


def test_batch_object_ids_are_distinct_and_distinct_from_plain_object_ids():
    before = ObjectId()
    new_id = object_id_factory(5000)
    ids = [new_id(i) for i in range(5000)]
    after = ObjectId()
    assert len({*ids, before, after}) == 5002
    assert all(type(oid) is ObjectId for oid in ids)
    counters = [int.from_bytes(oid.binary[-3:], "big") for oid in ids]
    assert all((b - a) % 0x1000000 == 1 for a, b in zip(counters, counters[1:], strict=False))  # consecutive
    assert len({oid.binary[:9] for oid in ids}) == 1  # one timestamp + process-random part per batch
    assert abs(ids[0].generation_time.timestamp() - before.generation_time.timestamp()) <= 1


def test_batch_object_ids_wrap_the_counter_without_overflow():
    saved = ObjectId._inc
    try:
        ObjectId._inc = 0xFFFFFF - 1
        new_id = object_id_factory(4)
        tails = [new_id(i).binary[-3:] for i in range(4)]
        assert tails == [b"\xff\xff\xfe", b"\xff\xff\xff", b"\x00\x00\x00", b"\x00\x00\x01"]
        assert ObjectId._inc == 2
    finally:
        ObjectId._inc = max(ObjectId._inc, saved)


def test_date_fast_path_matches_date_ms_before_and_after_the_epoch():
    epoch = dt.datetime(1970, 1, 1)
    one_ms = dt.timedelta(milliseconds=1)
    for value in (T0, dt.datetime(1969, 12, 31, 23, 59, 59, 999_999), dt.datetime(1, 1, 1),
                  dt.datetime(9999, 12, 31, 23, 59, 59, 999_999), dt.datetime(1960, 6, 1, 0, 0, 0, 500)):
        assert (value - epoch) // one_ms == date_ms(value)


def test_flat_metas_that_compare_equal_but_differ_in_bson_type_get_different_buckets():
    engine = Engine()
    metas = [{"a": 1}, {"a": True}, {"a": "1"}, {"a": Int64(1)}, {"a": 1.0}, {"a": None}, {"a": -0.0},
             {"a": 0.0}, {"a": 0}, {"a": False}]
    buckets = [engine.put({"t": T0, "m": dict(meta), "v": i}) for i, meta in enumerate(metas)]
    assert len({b.id for b in buckets}) == len(metas)
    for bucket, meta in zip(buckets, metas, strict=True):
        assert bson.encode({"": bucket.meta}) == bson.encode({"": meta})


def test_flat_metas_with_reordered_fields_share_a_bucket_and_are_stored_sorted():
    engine = Engine()
    first = {"t": T0, "m": {"b": "x", "a": 2}, "v": 1}
    second = {"t": T0, "m": {"a": 2, "b": "x"}, "v": 2}
    bucket = engine.put(first)
    assert engine.put(second) is bucket
    assert list(bucket.meta) == ["a", "b"] and list(document(bucket)["meta"]) == ["a", "b"]


def _interleaved_batches(seed, series=40, ticks=60):
    """One measurement per series per batch (the TSBS shape at scale 1000), with NaNs, ints among
    floats, growing strings (size rollover) and an occasional new field or type (schema change)."""
    import random

    rng = random.Random(seed)
    batches = []
    for tick in range(ticks):
        batch = []
        for host in range(series):
            t = T0 + dt.timedelta(seconds=10 * tick, milliseconds=host)
            doc = {"_id": ObjectId(), "t": t, "m": {"host": f"h{host}", "rack": host % 7},
                   "a": rng.choice([1.5, -0.0, 0.0, float("nan"), 2.0, 1e300]), "b": rng.randrange(100),
                   "s": "x" * rng.randrange(3000) if host % 5 == 0 else "y"}
            if rng.random() < 0.02:
                doc["b"] = rng.choice([3.25, Int64(7)])  # same type class, other type: not the shaped path
            if rng.random() < 0.01:
                doc["c"] = "new field"
            if rng.random() < 0.005:
                doc["a"] = "now a string"  # schema change
            batch.append(doc)
        batches.append(batch)
    return batches


def _contents(engine):
    out = []
    for bucket in engine.buckets():
        doc = document(bucket)
        out.append(repr((bucket.size, bucket.count, doc["control"], doc.get("meta"), doc["data"])))
    return sorted(out)


@pytest.mark.slow
def test_interleaved_series_batches_build_the_buckets_of_one_by_one_inserts():
    for seed in (1, 2):
        batches = _interleaved_batches(seed)
        one = Engine(params={"timeseriesBucketMaxSize": 20_000})  # reach the size rule within the test
        many = Engine(params={"timeseriesBucketMaxSize": 20_000})
        for batch in batches:
            for doc in batch:
                one.put(doc)
            many.put_many(batch)
        assert one.stats == many.stats
        assert one.stats["numBucketsClosedDueToSize"] > 0
        assert one.stats["numBucketsClosedDueToSchemaChange"] > 0
        assert _contents(one) == _contents(many)
