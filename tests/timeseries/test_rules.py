"""rules.py as pure functions: each rule's decision from plain numbers and values (no catalog, no router).

The rules in their order: 1 time forward, 2 time backward (``time_reason``), 3 count, 4 schema change,
5 size with the min-count exception (``row_reason``, ``size_reason``); the vectorized form ``fits``; the
size rule (``value_size``, ``measurement_size``, ``row_sizes``); the limits read from the parameters."""

from __future__ import annotations

import datetime as dt
import types

import numpy as np
import pytest
from bson.int64 import Int64
from bson.objectid import ObjectId

from tidemark.timeseries import rules
from tidemark.timeseries.bucketdoc import MISSING
from tidemark.timeseries.columns import DOUBLE, INT32, OID

LIMITS = rules.Limits(max_count=4, max_size=1_000, min_count=2, span_ms=3_600_000)


# ------------------------------------------------------------------ rules 1-2: time


@pytest.mark.parametrize(("t_ms", "reason"), [
    (0, None), (3_599_999, None),  # the bucket's [start, start + span)
    (3_600_000, rules.Rollover.TIME_FORWARD), (10**12, rules.Rollover.TIME_FORWARD),
    (-1, rules.Rollover.TIME_BACKWARD),
])
def test_time_reason_and_in_range_agree_on_the_span(t_ms, reason):
    assert rules.time_reason(0, t_ms, LIMITS) == reason
    assert rules.in_range(0, t_ms, LIMITS) is (reason is None)


# ------------------------------------------------------------------ rules 3-5 on a bucket


class Column:
    def __init__(self, schema):
        self._schema = schema

    def schema(self):
        return self._schema


def bucket(count=1, size=100, **columns):
    return types.SimpleNamespace(count=count, size=size, columns={k: Column(v) for k, v in columns.items()})


def test_count_comes_first():
    full = bucket(count=4, v=1.0)
    assert rules.row_reason(full, {"v": "text"}, 10_000, LIMITS, "m") == rules.Rollover.COUNT


def test_schema_change_comes_before_size():
    assert rules.row_reason(bucket(v=1.0), {"v": "text"}, 10_000, LIMITS, "m") == rules.Rollover.SCHEMA_CHANGE


@pytest.mark.parametrize(("current", "value", "ok"), [
    (1.0, 7, True), (1, Int64(7), True), (1.0, "x", False),           # numbers are one class
    ({"a": 1}, {"a": 2.0, "b": "new"}, True), ({"a": 1}, {"a": "x"}, False),  # objects field-wise
    ([1, 2], [3], True), ([1, "x"], [1, 2], False),                  # arrays element-wise
    (MISSING, "anything", True),                                    # a column without values yet
])
def test_schema_compatible_compares_type_classes(current, value, ok):
    assert rules.schema_compatible(Column(current), value) is ok


def test_a_new_field_and_the_meta_field_never_change_the_schema():
    assert rules.schema_compatible(None, "anything")
    assert rules.row_reason(bucket(v=1.0), {"w": "text", "m": "x"}, 10, LIMITS, "m") is None
    assert rules.row_reason(bucket(m=1.0), {"m": "text"}, 10, LIMITS, "m") is None


@pytest.mark.parametrize(("count", "size", "added", "reason"), [
    (0, 0, 5_000, None),                 # an empty bucket takes any measurement
    (3, 900, 100, None),                 # exactly the max size
    (3, 900, 101, rules.Rollover.SIZE),           # over it, with the min count held
    (1, 900, 101, rules.Rollover.KEPT_OPEN),      # over it under the min count: kept open for large measurements
    (1, rules.LARGE_BUCKET_CAP, 1, rules.Rollover.SIZE),  # ...but never past 12 MiB
])
def test_size_reason(count, size, added, reason):
    assert rules.size_reason(count, size, added, LIMITS) == reason


def test_kind_compatible_for_typed_batch_columns():
    assert rules.kind_compatible(Column(1), DOUBLE) and rules.kind_compatible(Column(1.0), INT32)
    assert not rules.kind_compatible(Column("s"), DOUBLE)
    assert rules.kind_compatible(Column(ObjectId()), OID) and not rules.kind_compatible(Column(1), OID)


# ------------------------------------------------------------------ the vectorized form


def test_fits_counts_the_rows_taken_before_the_first_rule_that_stops_them():
    times = np.array([0, 10, 20, 30, 40], np.int64)
    sizes = np.full(5, 100, np.int64)
    assert rules.fits(0, 0, 0, times, sizes, LIMITS) == 4  # count: 4 rows
    assert rules.fits(0, 0, 0, times, np.full(5, 300, np.int64), LIMITS) == 3  # size: 900 <= 1000 < 1200
    assert rules.fits(0, 0, 0, np.array([0, 5, 3_600_000], np.int64), sizes[:3], LIMITS) == 2  # span
    assert rules.fits(0, 0, 100, np.array([100, 99], np.int64), sizes[:2], LIMITS) == 1  # time backward
    assert rules.fits(3, 999, 0, times[:1], np.array([5_000]), LIMITS) == 1  # the first row: already accepted


# ------------------------------------------------------------------ sizes


@pytest.mark.parametrize(("value", "size"), [
    (1.0, 8), (1, 4), (2**31, 8), (Int64(1), 8), (True, 1), (None, 0), (dt.datetime(2024, 1, 1), 8),
    (ObjectId(), 12), ("abc", 8), ("é", 7), ({"a": 1}, 12),
])
def test_value_size_is_the_bson_value_size(value, size):
    assert rules.value_size(value) == size


def test_measurement_size_charges_a_new_field_for_its_column_min_and_max():
    row = {"t": dt.datetime(2024, 1, 1), "m": "meta", "v": 1.0}
    held = {"t", "v"}.__contains__
    known = rules.measurement_size(held, 5, row, "m")
    assert known == (8 + 1 + 2) * 2  # two values of 8 bytes at position key "5", the meta not counted
    fresh = rules.measurement_size({"t"}.__contains__, 5, row, "m")
    assert fresh == known + 12 + len("v") + 2 * (8 + 1 + 2)
    assert rules.measurement_size(held, 10, row, "m") == known + 2  # two-digit position keys


def test_row_sizes_is_measurement_size_for_a_layout_at_many_positions():
    sizes = rules.layout_sizes(("t", "v"), {"t": 0x09, "v": 0x01}, {}, "t")
    positions = np.array([0, 9, 10, 99, 100, 1000])
    row = {"t": dt.datetime(2024, 1, 1), "v": 1.0}
    expected = [rules.measurement_size({"t", "v"}.__contains__, int(p), row, None) for p in positions]
    assert rules.row_sizes(sizes, positions).tolist() == expected


def test_bucket_too_large_counts_values_again_in_control_min_and_max():
    assert not rules.bucket_too_large(1_000, 500)
    assert rules.bucket_too_large(rules.MAX_BUCKET_BSON - 100, 51)


# ------------------------------------------------------------------ limits


def test_limits_of_reads_the_parameters_and_the_collection_options():
    options = types.SimpleNamespace(bucket_max_span_seconds=86_400, bucket_rounding_seconds=3_600)
    params = {"timeseriesBucketMaxCount": 7, "timeseriesBucketMaxSize": 8, "timeseriesBucketMinCount": 9,
              "timeseriesIdleBucketExpiryMaxCountPerAttempt": 2,
              "timeseriesIdleBucketExpiryMemoryUsageThreshold": 0}
    limits = rules.Limits.of(params, options, memory_threshold=12345)
    assert limits == rules.Limits(max_count=7, max_size=8, min_count=9, span_ms=86_400_000, rounding_s=3_600,
                                  memory_threshold=12345, expiry_per_attempt=2)  # 0: the default threshold
    params["timeseriesIdleBucketExpiryMemoryUsageThreshold"] = 500
    assert rules.Limits.of(params, options, 12345).memory_threshold == 500
    assert rules.memory_threshold(500) == 500 and rules.memory_threshold(0) > 0


# ------------------------------------------------------------------ the rollover reasons


def test_every_rollover_reason_carries_its_action_and_a_statistic_the_catalog_reports():
    from tidemark.timeseries.catalog import STAT_NAMES

    Rollover, Action = rules.Rollover, rules.Action
    statistics = [reason.statistic for reason in Rollover]
    assert len(set(statistics)) == len(statistics) and set(statistics) <= set(STAT_NAMES)
    assert {reason: reason.action for reason in Rollover} == {
        Rollover.TIME_FORWARD: Action.ARCHIVE, Rollover.TIME_BACKWARD: Action.ARCHIVE,
        Rollover.COUNT: Action.CLOSE, Rollover.SCHEMA_CHANGE: Action.CLOSE, Rollover.SIZE: Action.CLOSE,
        Rollover.KEPT_OPEN: Action.KEEP, Rollover.MEMORY_THRESHOLD: Action.CLOSE}
    # mongod's names: an archive counts "Archived", a close "Closed"
    for reason in Rollover:
        word = {Action.ARCHIVE: "numBucketsArchivedDueTo", Action.CLOSE: "numBucketsClosedDueTo",
                Action.KEEP: "numBucketsKeptOpenDueTo"}[reason.action]
        assert reason.statistic.startswith(word), reason


def test_vectorized_time_and_room_rules_agree_with_the_scalar_ones():
    times = np.array([-1, 0, 3_599_999, 3_600_000], np.int64)
    assert rules.within(0, times, LIMITS).tolist() == [rules.in_range(0, int(t), LIMITS) for t in times]
    assert rules.within(np.array([0, 0, 5_000_000, 0]), times, LIMITS).tolist() == [False, True, False, False]
    # rule 3 at the max count, rule 5 at the max size (its min-count exception is the row path's)
    assert rules.room(np.array([3, 4, 0]), np.array([1_000, 10, 1_001]), LIMITS).tolist() == [True, False, False]


def test_a_column_batch_and_a_dict_row_get_the_same_reason():
    """``columns_reason`` (a column batch's next row) and ``row_reason`` decide rules 3-5 alike."""
    held = bucket(count=1, size=100, v=1.0)
    held.pure, held.time_field = False, "t"
    batch = types.SimpleNamespace(order=("t", "v"), constants={}, kinds={"t": 0x09, "v": DOUBLE}, table_key=())
    assert rules.columns_reason(held, batch, LIMITS) is None
    batch.constants, batch.order = {"v": "text"}, ("t", "v")
    assert rules.columns_reason(held, batch, LIMITS) is rules.Rollover.SCHEMA_CHANGE
    assert rules.row_reason(held, {"v": "text"}, 10, LIMITS, "m") is rules.Rollover.SCHEMA_CHANGE
    held.count = LIMITS.max_count
    assert rules.columns_reason(held, batch, LIMITS) is rules.Rollover.COUNT
