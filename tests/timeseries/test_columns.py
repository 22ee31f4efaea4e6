"""columns.control_summary: the one builder of a bucket's control (min/max/version), used by its full
document (``Bucket.document_parts``) and by reads of an in-memory bucket (``bucketview.LiveBucket``)."""

from __future__ import annotations

import datetime as dt

import numpy as np
from bson.objectid import ObjectId

from tidemark.timeseries.batch import RowBatch, table_key_of_row
from tidemark.timeseries.bucket import Bucket
from tidemark.timeseries.bucketdoc import MISSING, meta_key
from tidemark.timeseries.bucketview import LiveBucket
from tidemark.timeseries.columns import control_summary
from tidemark.timeseries.table import Table

T0 = dt.datetime(2024, 1, 1, 12, 0)
ROWS = [
    {"t": T0 + dt.timedelta(seconds=5), "v": 3.5, "s": "k", "o": {"a": 2}},  # v typed, s constant, o object
    {"t": T0 + dt.timedelta(seconds=1), "v": -1.0, "s": "k", "o": {"a": 1, "b": "z"}},
    {"t": T0 + dt.timedelta(seconds=9), "v": 2.0, "s": "k"},  # no o: min/max over the rows holding it
]


def bucket_of(rows, meta=MISSING):
    table = Table(table_key_of_row(rows[0], "t", "m"), "db.system.buckets.c", "t")
    bucket = Bucket(table, 0, meta_key(meta), meta, ObjectId(), "db.system.buckets.c", int(T0.timestamp()), "m")
    bucket.append_rows(RowBatch(rows, np.zeros(len(rows), np.int64), [], [], "m").fields(range(len(rows))),
                       len(rows), 0)
    return bucket


def test_control_holds_the_start_the_latest_time_and_each_fields_extremes():
    bucket = bucket_of(ROWS, meta={"site": "a"})
    summary = bucket.document_parts(3).summary
    assert summary["_id"] == bucket.id and summary["meta"] == {"site": "a"}
    assert summary["control"] == {
        "version": 1,
        "min": {"t": T0, "v": -1.0, "s": "k", "o": {"a": 1, "b": "z"}},
        "max": {"t": T0 + dt.timedelta(seconds=9), "v": 3.5, "s": "k", "o": {"a": 2, "b": "z"}},
    }


def test_the_full_document_and_a_read_of_the_bucket_in_memory_take_the_same_control():
    bucket = bucket_of(ROWS)
    for n in (0, 1, 3):
        bucket.table.durable[bucket.slot] = n
        assert LiveBucket(bucket).summary() == bucket.document_parts(n).summary, n


def test_no_rows_has_only_the_start():
    bucket = bucket_of(ROWS)
    typed = {"t": np.zeros(0, np.int64), "v": np.zeros(0)}
    summary = control_summary(bucket.id, MISSING, bucket.start_s, "t", bucket.columns, typed, 0)
    assert summary == {"_id": bucket.id, "control": {"version": 1, "min": {"t": T0}, "max": {"t": None}}}


def test_one_row_extremes_are_the_value_as_decoded_for_every_typed_kind():
    """typed_extremes of a one-row column (every bucket of a series explosion) takes no reduction; it
    must give what bson.decode gives for the value, the same as the reductions over two equal rows."""
    from bson.int64 import Int64

    from tidemark.timeseries.columns import BOOL, DATE, DOUBLE, DTYPE, INT32, INT64, OID, typed_extremes

    oid = ObjectId(b"\x05" * 12)
    samples = {DOUBLE: [1.5, -0.0, float("nan")], INT32: [-7], INT64: [2**40], BOOL: [True], DATE: [1_700_000_000_123],
               OID: [oid.binary]}
    for kind, values in samples.items():
        for value in values:
            column = np.array([value], dtype=DTYPE[kind]) if kind != OID else np.frombuffer(value, DTYPE[kind])
            low, high = typed_extremes(kind, column)
            twice = typed_extremes(kind, np.concatenate([column, column]))
            assert repr((low, high)) == repr(twice), (kind, value)
            assert type(low) is type(twice[0])
    assert typed_extremes(INT64, np.array([5], np.int64)) == (Int64(5), Int64(5))
    assert typed_extremes(OID, np.frombuffer(oid.binary, DTYPE[OID])) == (oid, oid)
