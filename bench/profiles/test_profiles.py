"""Checks of the profiling scripts' pure parts (run: .venv/bin/python -m pytest -q bench/profiles)."""

from __future__ import annotations

import datetime as dt

import bson
import numpy as np
from bson.objectid import ObjectId

from bench.profiles import profile_columnar, profile_ingest, profile_queries, profile_storage


def _frame(func: str, path: str, line: int = 1) -> str:
    return f"{func} ({path}:{line})"


def test_ingest_innermost_listed_frame_decides_the_phase():
    stack = [_frame("Connection._handle", "server/connection.py"),
             _frame("insert_measurements", "server/timeseries/writes.py"),
             _frame("BucketCatalog.insert_many", "server/timeseries/catalog.py"),
             _frame("OpenBucket.append_run", "server/timeseries/buckets.py"),
             _frame("something_unlisted", "bson/__init__.py")]
    assert profile_ingest.classify(stack, set()) == "column appends"


def test_ingest_commit_line_is_fsync_and_other_commit_group_lines_are_puts():
    commit = _frame("Engine._commit_group", "storage/engine.py", 325)
    other = _frame("Engine._commit_group", "storage/engine.py", 300)
    assert profile_ingest.classify([commit], {325}) == "LMDB commit + fsync"
    assert profile_ingest.classify([other], {325}) == "LMDB puts + storage bookkeeping"


def test_ingest_parked_writer_thread_is_idle():
    assert profile_ingest.classify([_frame("Engine._writer_loop", "storage/engine.py", 257)], set()) \
        == profile_ingest.IDLE


def test_queries_filters_on_bucket_summaries_are_not_per_measurement_match():
    summary = [_frame("_emit", "server/timeseries/view.py"), _frame("pred", "server/query/match_compile.py")]
    measurement = [_frame("_measurements", "server/timeseries/view.py"),
                   _frame("pred", "server/query/match_compile.py")]
    assert profile_queries.classify(summary) == "bucket-level predicate (control/meta)"
    assert profile_queries.classify(measurement) == "$match (per measurement)"


def test_numpy_column_parse_equals_bson_decode_for_doubles_and_dates():
    n = 1234
    doubles = {str(i): float(i % 97) for i in range(n)}
    start = dt.datetime(2016, 1, 1)
    dates = {str(i): start + dt.timedelta(seconds=10 * i) for i in range(n)}
    got = profile_columnar.bson_column_numpy(bson.encode(doubles))
    assert got.tolist() == list(doubles.values())
    got_dates = profile_columnar.bson_column_numpy(bson.encode(dates))
    assert got_dates.tolist() == profile_columnar.epoch_ms(list(dates.values())).tolist()


def test_numpy_column_parse_refuses_mixed_types():
    mixed = bson.encode({"0": 1.0, "1": "x"})
    try:
        profile_columnar.bson_column_numpy(mixed)
    except ValueError:
        return
    raise AssertionError("a mixed column must not parse as a dense 8-byte column")


def test_column_stream_kinds():
    assert profile_storage.column_stream("m", ["cpu"] * 5)[0] == "constant strings (RLE)"
    assert profile_storage.column_stream("v", [1.0, 2.0, 2.0])[0] == "doubles (integral: int deltas)"
    assert profile_storage.column_stream("v", [1.5, 2.0])[0] == "doubles (raw)"
    assert profile_storage.column_stream("_id", [ObjectId(), ObjectId()])[0] == "_id (ObjectId deltas)"


def test_gorilla_bits_constant_column_costs_one_bit_per_repeat():
    assert profile_storage.gorilla_bits(np.full(10, 42.0)) == 64 + 9


def test_zigzag_varint_small_deltas_take_one_byte():
    assert len(profile_storage.varint_bytes(profile_storage.zigzag(np.array([0, -1, 1, 63, -64])))) == 5
