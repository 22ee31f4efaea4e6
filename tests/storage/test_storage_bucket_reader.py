"""storage/bucket_reader.py: selective reads of tag-4 values equal the whole-document decode
(head without ``data``, each column's exact BSON, dense columns' values)."""

from __future__ import annotations

import datetime as dt
import math
import random

import bson
import numpy as np
import pytest
from bson.datetime_ms import DatetimeMS
from bson.int64 import Int64
from bson.objectid import ObjectId
from bson.timestamp import Timestamp
from test_storage_bucket_codec import random_bucket, tsbs_bucket

from tidemark.storage import bucket_codec
from tidemark.storage.bucket_reader import BucketReader

OPTS = bson.CodecOptions(datetime_conversion=bson.DatetimeConversion.DATETIME_MS)


def _element_bytes(doc: bytes) -> dict[str, bytes]:
    """Top-level field -> the raw bytes of its value (embedded documents only)."""
    raw = bson.raw_bson.RawBSONDocument(doc)
    return {k: v.raw for k, v in raw.items() if isinstance(v, bson.raw_bson.RawBSONDocument)}


def _check(doc: dict) -> BucketReader:
    raw = bson.encode(doc)
    packed = bucket_codec.encode(raw)
    assert packed is not None
    reader = BucketReader(packed)
    assert reader.document() == raw
    expected_head = dict(bson.decode(raw, OPTS))
    data = expected_head.pop("data")
    assert bson.decode(reader.head(), OPTS) == expected_head
    assert list(bson.decode(reader.head(), OPTS)) == list(expected_head)  # field order kept
    assert reader.column_names() == list(data)
    columns = _element_bytes(_element_bytes(raw)["data"])
    for name in data:
        assert reader.column_bson(name) == columns[name]
        dense = reader.column_values(name)
        decoded = bson.decode(columns[name], OPTS)
        if dense is None:
            continue
        btype, values = dense
        assert list(decoded) == [str(i) for i in range(len(decoded))]
        assert len(values) == len(decoded)
        expected = list(decoded.values())
        if btype == 0x01:
            got = values.tolist()
            assert [math.copysign(1, v) if v == 0 else v for v in got if v == v] == \
                   [math.copysign(1, v) if v == 0 else v for v in expected if v == v]
            assert np.array_equal(values.view("<u8"), np.array(expected, "<f8").view("<u8"))
        elif btype == 0x09:
            assert values.tolist() == [int(v) for v in expected]
        elif btype in (0x10, 0x12):
            assert values.tolist() == [int(v) for v in expected]
        elif btype == 0x07:
            assert [bytes(row) for row in values] == [v.binary for v in expected]
        elif btype == 0x08:
            assert values.tolist() == [int(v) for v in expected]
        elif btype == 0x11:
            assert values.tolist() == [(v.time << 32) | v.inc for v in expected]
    assert reader.column_values("no such column") is None and reader.column_bson("nope") is None
    return reader


def test_tsbs_bucket_head_columns_and_dense_values():
    reader = _check(tsbs_bucket(360))
    btype, times = reader.column_values("time")
    assert btype == 0x09 and times[0] == int(dt.datetime(2016, 1, 1).timestamp() * 1000)
    assert np.all(np.diff(times) == 10_000)
    btype, usage = reader.column_values("usage_0")
    assert btype == 0x01 and usage.dtype == np.dtype("<f8") and len(usage) == 360


@pytest.mark.parametrize("seed", range(60))
def test_random_buckets_read_selectively_like_the_whole_decode(seed):
    _check(random_bucket(random.Random(seed)))


def test_every_fixed_width_type_and_special_doubles():
    n = 12
    doc = tsbs_bucket(n)
    doc["data"]["xor"] = {str(i): v for i, v in enumerate([0.1, -0.0, math.nan, math.inf, 1.5, 2.0 ** 70] * 2)}
    doc["data"]["i32"] = {str(i): (-1) ** i * i * 1000 for i in range(n)}
    doc["data"]["i64"] = {str(i): Int64(2 ** 62 - i) for i in range(n)}
    doc["data"]["flag"] = {str(i): i % 3 == 0 for i in range(n)}
    doc["data"]["ts"] = {str(i): Timestamp(1000 + i, i) for i in range(n)}
    doc["data"]["d"] = {str(i): DatetimeMS(-(2 ** 62) + i) for i in range(n)}
    doc["data"]["sparse"] = {"1": 1.0, "7": 2.0}
    doc["data"]["mixed"] = {str(i): (1.0 if i % 2 else "s") for i in range(n)}
    doc["data"]["oid"] = {str(i): ObjectId() for i in range(n)}
    reader = _check(doc)
    assert reader.column_values("sparse") is None  # sparse keys: only the BSON form
    assert reader.column_values("mixed") is None
    assert reader.column_values("i32")[1].dtype == np.dtype("<i4")


def test_fields_after_data_are_in_the_head():
    doc = tsbs_bucket(5)
    doc["zz"] = {"after": [1, 2]}
    reader = _check(doc)
    assert list(bson.decode(reader.head())) == ["_id", "control", "meta", "zz"]


def test_read_view_hands_out_packed_values_and_opens_them_after_the_block(engine):
    bucket = bson.encode(tsbs_bucket(360))
    small = bson.encode({"_id": ObjectId(), "control": {"version": 1}, "data": {}})  # below the codec size

    def fn(w):
        info = w.create_collection("db.system.buckets.c", clustered=True)
        for i, raw in enumerate((bucket, small)):
            w.insert(info, raw, {}, rid=bytes([i + 1]))

    engine.write_sync(fn)
    with engine.read() as r:
        info = r.get_collection("db.system.buckets.c")
        stored = list(r.scan_stored(info))
        single = r.get_stored(info, b"\x01")
        opener = r.stored_opener()
        assert [rid for rid, _ in r.scan_stored(info, reverse=True)] == [b"\x02", b"\x01"]
    assert [rid for rid, _ in stored] == [b"\x01", b"\x02"]
    assert single == stored[0][1] and single[0] == 4  # packed: the bucket-codec tag
    reader = opener(stored[0][1])
    assert isinstance(reader, BucketReader) and reader.document() == bucket
    assert opener(stored[1][1]) == small  # other tags: the BSON bytes
