"""v1 bucket documents of the bucket model: meta normalization, control min/max, sparse columns, unpack,
schema classes (spec §2, §3.6)."""

import datetime as dt

from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.objectid import ObjectId
from harness.timeseries import Engine, document

from tidemark.timeseries import rules
from tidemark.timeseries.bucketdoc import (
    MISSING,
    date_ms,
    meta_key,
    normalize_meta,
    round_start_seconds,
    unpack_document,
)

T0 = dt.datetime(2021, 5, 18, 0, 0)


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
    engine = Engine()
    first = engine.put({"t": dt.datetime(2021, 5, 18, 20, 10, 14), "m": 1})
    assert first.id.generation_time.replace(tzinfo=None) == dt.datetime(2021, 5, 18, 20, 10)
    assert engine.put({"t": T0, "m": 2}).id != first.id


def test_document_has_control_min_max_and_sparse_columns():
    engine = Engine()
    ids = [ObjectId() for _ in range(3)]
    meta = {"sensorId": 5578, "type": "temperature"}
    engine.put({"_id": ids[0], "t": T0 + dt.timedelta(seconds=5), "temp": 12, "m": meta})
    engine.put({"_id": ids[1], "t": T0 + dt.timedelta(seconds=1), "temp": 11.5, "m": meta})
    bucket = engine.put({"_id": ids[2], "t": T0 + dt.timedelta(seconds=9), "temp": 13, "ext1": 1, "m": meta})
    doc = document(bucket)
    assert list(doc) == ["_id", "control", "meta", "data"]
    assert doc["control"]["version"] == 1
    assert doc["control"]["min"] == {"t": T0, "_id": min(ids), "temp": 11.5, "ext1": 1}
    assert doc["control"]["max"] == {"t": T0 + dt.timedelta(seconds=9), "_id": max(ids), "temp": 13, "ext1": 1}
    assert doc["data"]["t"] == {"0": T0 + dt.timedelta(seconds=5), "1": T0 + dt.timedelta(seconds=1),
                                "2": T0 + dt.timedelta(seconds=9)}
    assert doc["data"]["ext1"] == {"2": 1}
    assert "m" not in doc["data"]


def test_min_max_keep_the_winners_numeric_type():
    engine = Engine()
    for value in (1.5, Int64(2), 1, Decimal128("2.5")):
        bucket = engine.put({"t": T0, "a": value})
    control = document(bucket)["control"]
    assert control["min"]["a"] == 1 and type(control["min"]["a"]) is int
    assert control["max"]["a"] == Decimal128("2.5")


def test_min_max_are_field_wise_for_objects_and_element_wise_for_arrays():
    engine = Engine()
    engine.put({"t": T0, "a": {"x": 1, "y": 2}, "b": [1, 2], "e": {}})
    bucket = engine.put({"t": T0, "a": {"x": 2, "y": 1}, "b": [2, 1, 7], "e": {"x": {"y": 1}}})
    control = document(bucket)["control"]
    assert control["min"]["a"] == {"x": 1, "y": 1} and control["max"]["a"] == {"x": 2, "y": 2}
    assert control["min"]["b"] == [1, 1, 7] and control["max"]["b"] == [2, 2, 7]
    assert control["min"]["e"] == {"x": {"y": 1}}


def test_nan_is_the_minimum_number():
    engine = Engine()
    engine.put({"t": T0, "a": 1.0})
    bucket = engine.put({"t": T0, "a": float("nan")})
    minimum = document(bucket)["control"]["min"]["a"]
    assert minimum != minimum


def test_type_class_change_is_a_schema_rollover():
    engine = Engine()
    bucket = engine.put({"t": T0, "a": 1, "o": {"b": 1}})
    limits = engine.limits

    def reason(row):
        return rules.row_reason(bucket, row, 10, limits, "m")

    assert reason({"t": T0, "a": 2.5}) is None
    assert reason({"t": T0, "a": "x"}) == rules.Rollover.SCHEMA_CHANGE
    assert reason({"t": T0, "o": {"b": "abc"}}) == rules.Rollover.SCHEMA_CHANGE
    assert reason({"t": T0, "o": 1}) == rules.Rollover.SCHEMA_CHANGE
    assert reason({"t": T0, "new": "x"}) is None


def test_unpack_puts_time_then_meta_first_and_round_trips_sparse_fields():
    engine = Engine()
    for m in [{"_id": 1, "t": T0, "x": 1, "m": {"b": 1, "a": 2}}, {"_id": 2, "t": T0, "y": "s", "m": {"b": 1, "a": 2}}]:
        bucket = engine.put(m)
    out = list(unpack_document(document(bucket), "t", "m"))
    assert [list(d)[:2] for d in out] == [["t", "m"], ["t", "m"]]
    assert out == [{"t": T0, "m": {"a": 2, "b": 1}, "_id": 1, "x": 1},
                   {"t": T0, "m": {"a": 2, "b": 1}, "_id": 2, "y": "s"}]
    assert list(unpack_document(document(bucket), "t", "m", fields=["x"])) == [{"x": 1}, {}]


def test_bucket_loaded_from_its_document_is_identical():
    engine = Engine()
    engine.put({"t": T0 + dt.timedelta(seconds=3), "v": 1, "m": "s1"})
    bucket = engine.put({"t": T0 + dt.timedelta(seconds=2), "w": [1, {"a": 2}], "m": "s1"})
    doc = document(bucket)
    other = Engine()
    sid = other.state.series.sid(meta_key("s1"), "s1")
    loaded = other.catalog.load(other.state, doc, sid)
    assert document(loaded) == doc
    assert loaded.count == 2 and loaded.durable == 2 and loaded.stored_count == 2
