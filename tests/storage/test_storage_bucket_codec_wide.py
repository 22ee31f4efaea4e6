"""The bucket codec and wide buckets: its cost is per column (~30 µs of NumPy call overhead), a
general compressor's per byte. The full write of one measurement of 100,000 fields held the storage
writer thread — and with it every client's commit — 3.5 s (a small insert into another collection
waited 12 s), for a value larger than zstd's of the BSON (682 KB against 457 KB). A bucket of more than
``MAX_COLUMNS`` data columns is not column-encoded, by either entry (``encode``, ``encode_columns``);
storage stores it with zstd and gives back exactly its bytes; up to the limit nothing changes."""

from __future__ import annotations

import datetime as dt

import bson
import numpy as np
from bson import ObjectId
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.storage import bucket_codec
from tidemark.storage.compression import TAG_BUCKET, TAG_ZSTD, ValueCodec


def _bucket(columns: int, rows: int) -> dict:
    t0 = dt.datetime(2024, 1, 1)
    data: dict = {"t": {str(r): t0 + dt.timedelta(seconds=r) for r in range(rows)}}
    for c in range(columns - 1):
        data[f"f{c}"] = {str(r): float(c * rows + r) for r in range(rows)}
    mins = {name: column["0"] for name, column in data.items()}
    maxs = {name: column[str(rows - 1)] for name, column in data.items()}
    return {"_id": ObjectId(), "control": {"version": 1, "min": mins, "max": maxs}, "meta": "a", "data": data}


def _head_and_columns(doc: dict) -> tuple[bytes, list]:
    encoded = bson.encode(doc)
    data_bytes = bson.encode(doc["data"])
    head = encoded[:len(encoded) - len(data_bytes) - 1]  # up to and including "\x03data\x00"
    columns = []
    for name, column in doc["data"].items():
        values = list(column.values())
        if name == "t":
            array = np.array([[int(v.timestamp() * 1000) for v in values]], "<i8")
            columns.append((name.encode(), 0x09, array))
        else:
            columns.append((name.encode(), 0x01, np.array([values], "<f8")))
    return head, columns


@settings(max_examples=20, deadline=None)
@given(columns=st.sampled_from([2, 100, bucket_codec.MAX_COLUMNS - 1, bucket_codec.MAX_COLUMNS,
                                bucket_codec.MAX_COLUMNS + 1, 3 * bucket_codec.MAX_COLUMNS]),
       rows=st.integers(1, 12))
def test_only_buckets_of_at_most_max_columns_are_column_encoded_and_every_one_reads_back(columns, rows):
    doc = bson.encode(_bucket(columns, rows))
    codec = ValueCodec("zstd")
    stored = codec.pack(doc)
    assert codec.unpack(stored) == doc
    encoded = bucket_codec.encode(doc)
    if columns > bucket_codec.MAX_COLUMNS:
        assert encoded is None
        assert stored[0] == TAG_ZSTD
    else:
        assert encoded is not None and bucket_codec.decode(encoded) == doc
        if columns >= 100:
            assert stored[0] == TAG_BUCKET


@settings(max_examples=10, deadline=None)
@given(columns=st.sampled_from([bucket_codec.MAX_COLUMNS, bucket_codec.MAX_COLUMNS + 1, 2 * bucket_codec.MAX_COLUMNS]),
       rows=st.integers(1, 5))
def test_the_many_buckets_entry_refuses_the_same_buckets(columns, rows):
    doc = _bucket(columns, rows)
    head, cols = _head_and_columns(doc)
    assert len(cols) == columns
    streams = bucket_codec.encode_columns([head], cols)
    if columns > bucket_codec.MAX_COLUMNS:
        assert streams == [None]
    else:
        assert streams[0] is not None
        assert bucket_codec.decode(bucket_codec.compress(streams[0])) == bson.encode(doc)
