"""v1 bucket documents: meta normalization, control min/max, sparse columns, unpack (spec §2, §3.6)."""

import datetime as dt

from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.objectid import ObjectId

from server.timeseries.buckets import (
    MISSING,
    SCHEMA,
    OpenBucket,
    date_ms,
    meta_key,
    new_bucket_id,
    normalize_meta,
    round_start_seconds,
    unpack_document,
)

T0 = dt.datetime(2021, 5, 18, 0, 0)


def make_bucket(meta=MISSING, start=T0):
    start_s = round_start_seconds(date_ms(start), 60)
    return OpenBucket(new_bucket_id(start_s), "db.system.buckets.c", "t", "m", meta, start_s)


def add(bucket, measurement):
    bucket.append(measurement, date_ms(measurement["t"]), measurement["t"])


def test_meta_objects_are_normalized_recursively_and_arrays_keep_order():
    assert list(normalize_meta({"c": 1, "b": {"f": True, "d": 0}})) == ["b", "c"]
    assert list(normalize_meta({"c": 1, "b": {"f": True, "d": 0}})["b"]) == ["d", "f"]
    assert normalize_meta([{"b": 1, "a": 2}, 3]) == [{"a": 2, "b": 1}, 3]
    assert list(normalize_meta([{"b": 1, "a": 2}])[0]) == ["a", "b"]


def test_meta_keys_equal_for_field_order_and_distinct_for_null_and_missing():
    assert meta_key(normalize_meta({"b": 1, "a": 1})) == meta_key(normalize_meta({"a": 1, "b": 1}))
    assert meta_key(None) != meta_key(MISSING)
    assert meta_key("x") != meta_key(normalize_meta({"x": 1}))


def test_bucket_start_rounds_down_including_before_epoch():
    assert round_start_seconds(date_ms(dt.datetime(2021, 5, 18, 20, 10, 14, 134000)), 60) == date_ms(
        dt.datetime(2021, 5, 18, 20, 10)) // 1000
    assert round_start_seconds(-1, 60) == -60


def test_bucket_id_timestamp_is_the_rounded_start():
    bucket = make_bucket(start=dt.datetime(2021, 5, 18, 20, 10, 14))
    assert bucket.id.generation_time.replace(tzinfo=None) == dt.datetime(2021, 5, 18, 20, 10)
    assert make_bucket().id != make_bucket().id


def test_document_has_control_min_max_and_sparse_columns():
    bucket = make_bucket(meta={"sensorId": 5578, "type": "temperature"})
    ids = [ObjectId() for _ in range(3)]
    add(bucket, {"_id": ids[0], "t": T0 + dt.timedelta(seconds=5), "temp": 12, "m": {"sensorId": 5578}})
    add(bucket, {"_id": ids[1], "t": T0 + dt.timedelta(seconds=1), "temp": 11.5})
    add(bucket, {"_id": ids[2], "t": T0 + dt.timedelta(seconds=9), "temp": 13, "ext1": 1})
    doc = bucket.document()
    assert list(doc) == ["_id", "control", "meta", "data"]
    assert doc["control"]["version"] == 1
    assert doc["control"]["min"] == {"t": T0, "_id": min(ids), "temp": 11.5, "ext1": 1}
    assert doc["control"]["max"] == {"t": T0 + dt.timedelta(seconds=9), "_id": max(ids), "temp": 13, "ext1": 1}
    assert doc["data"]["t"] == {"0": T0 + dt.timedelta(seconds=5), "1": T0 + dt.timedelta(seconds=1),
                                "2": T0 + dt.timedelta(seconds=9)}
    assert doc["data"]["ext1"] == {"2": 1}
    assert "m" not in doc["data"]


def test_min_max_keep_the_winners_numeric_type():
    bucket = make_bucket()
    for value in (1.5, Int64(2), 1, Decimal128("2.5")):
        add(bucket, {"t": T0, "a": value})
    control = bucket.document()["control"]
    assert control["min"]["a"] == 1 and type(control["min"]["a"]) is int
    assert control["max"]["a"] == Decimal128("2.5")


def test_min_max_are_field_wise_for_objects_and_element_wise_for_arrays():
    bucket = make_bucket()
    add(bucket, {"t": T0, "a": {"x": 1, "y": 2}, "b": [1, 2], "e": {}})
    add(bucket, {"t": T0, "a": {"x": 2, "y": 1}, "b": [2, 1, 7], "e": {"x": {"y": 1}}})
    control = bucket.document()["control"]
    assert control["min"]["a"] == {"x": 1, "y": 1} and control["max"]["a"] == {"x": 2, "y": 2}
    assert control["min"]["b"] == [1, 1, 7] and control["max"]["b"] == [2, 2, 7]
    assert control["min"]["e"] == {"x": {"y": 1}}


def test_nan_is_the_minimum_number():
    bucket = make_bucket()
    add(bucket, {"t": T0, "a": 1.0})
    add(bucket, {"t": T0, "a": float("nan")})
    assert bucket.document()["control"]["min"]["a"] != bucket.document()["control"]["min"]["a"]


def test_type_class_change_is_a_schema_rollover():
    bucket = make_bucket()
    add(bucket, {"t": T0, "a": 1, "o": {"b": 1}})
    assert bucket.rollover_reason({"t": T0, "a": 2.5}, 1000, 128000, 10, 1 << 24) is None
    assert bucket.rollover_reason({"t": T0, "a": "x"}, 1000, 128000, 10, 1 << 24) == SCHEMA
    assert bucket.rollover_reason({"t": T0, "o": {"b": "abc"}}, 1000, 128000, 10, 1 << 24) == SCHEMA
    assert bucket.rollover_reason({"t": T0, "o": 1}, 1000, 128000, 10, 1 << 24) == SCHEMA
    assert bucket.rollover_reason({"t": T0, "new": "x"}, 1000, 128000, 10, 1 << 24) is None


def test_unpack_puts_time_then_meta_first_and_round_trips_sparse_fields():
    bucket = make_bucket(meta={"b": 1, "a": 2})
    measurements = [{"_id": 1, "t": T0, "x": 1, "m": {"b": 1, "a": 2}}, {"_id": 2, "t": T0, "y": "s"}]
    for m in measurements:
        add(bucket, m)
    out = list(unpack_document(bucket.document(), "t", "m"))
    assert [list(d)[:2] for d in out] == [["t", "m"], ["t", "m"]]
    assert out == [{"t": T0, "m": {"a": 2, "b": 1}, "_id": 1, "x": 1},
                   {"t": T0, "m": {"a": 2, "b": 1}, "_id": 2, "y": "s"}]
    assert list(unpack_document(bucket.document(), "t", "m", fields=["x"])) == [{"x": 1}, {}]


def test_bucket_rebuilt_from_its_document_is_identical():
    bucket = make_bucket(meta="s1")
    add(bucket, {"t": T0 + dt.timedelta(seconds=3), "v": 1})
    add(bucket, {"t": T0 + dt.timedelta(seconds=2), "w": [1, {"a": 2}]})
    rebuilt = OpenBucket.from_document(bucket.document(), bucket.ns, "t", "m")
    assert rebuilt.document() == bucket.document()
    assert rebuilt.count == 2
