"""Compressed (v2/v3) time-series buckets -> v1 buckets (server/timeseries/bucket_compression.py)."""

from __future__ import annotations

import base64
import datetime

import pytest
from bson import ObjectId
from bson.binary import Binary
from bsoncolumn_fixtures import EOO, blocks, date, dbl, i32, ints, one, string, zz

from tidemark.timeseries.bsoncolumn import BSONColumnError, decode_column
from tidemark.timeseries.bucket_compression import compress_bucket, decompress_bucket, is_compressed_bucket

TIME = datetime.datetime(2024, 1, 16, 20, 48, 39, 448000)


def column(data: bytes) -> Binary:
    return Binary(data, 7)


def mongod_bucket() -> dict:
    """jstests/noPassthrough/timeseries_insert_decompression_failure.js: a v2 bucket written by mongod."""
    return {
        "_id": ObjectId("65a6eb806ffc9fa4280ecac4"),
        "control": {
            "version": 2,
            "min": {"_id": ObjectId("65a6eba7e6d2e848e08c3750"), "t": datetime.datetime(2024, 1, 16, 20, 48), "a": 1},
            "max": {"_id": ObjectId("65a6eba7e6d2e848e08c3751"), "t": TIME, "a": 1},
            "count": 2,
        },
        "meta": 0,
        "data": {
            "t": column(base64.b64decode("CQAYhggUjQEAAIAOAAAAAAAAAAA=")),
            "a": column(base64.b64decode("AQAAAAAAAAAAAJAuAAAAAAAAAAA=")),
            "_id": column(base64.b64decode("BwBlpuun5tLoSOCMN1CALgAAAAAAAAAA")),
        },
    }


def test_mongod_bucket_decompresses_to_its_v1_form():
    bucket = mongod_bucket()
    assert decompress_bucket(bucket) == {
        "_id": ObjectId("65a6eb806ffc9fa4280ecac4"),
        "control": {"version": 1, "min": bucket["control"]["min"], "max": bucket["control"]["max"]},
        "meta": 0,
        "data": {
            "t": {"0": TIME, "1": TIME},
            "a": {"0": 0.0, "1": 1.0},
            "_id": {"0": ObjectId("65a6eba7e6d2e848e08c3750"), "1": ObjectId("65a6eba7e6d2e848e08c3751")},
        },
    }


def test_field_order_is_kept_and_the_version_is_replaced_in_place():
    bucket = {"control": {"min": {}, "closed": True, "version": 3, "count": 1, "max": {}}, "_id": 1,
              "data": {"t": column(date(0) + EOO)}, "extra": "kept"}
    out = decompress_bucket(bucket)
    assert list(out) == ["control", "_id", "data", "extra"]
    assert list(out["control"].items()) == [("min", {}), ("closed", True), ("version", 1), ("max", {})]
    assert type(out["control"]["version"]) is int


def test_skips_become_absent_rows():
    bucket = {"control": {"version": 2, "count": 4},
              "data": {"t": column(date(1000) + ints(1000, 0, 0) + EOO),  # delta-of-delta: +1 s each
                       "x": column(i32(5) + ints(None, 1, None) + EOO),
                       "s": column(ints(None, None) + string("late") + EOO)}}
    data = decompress_bucket(bucket)["data"]
    epoch = datetime.datetime(1970, 1, 1, 0, 0, 1)
    assert data["t"] == {str(k): epoch + datetime.timedelta(seconds=k) for k in range(4)}
    assert data["x"] == {"0": 5, "2": 6}
    assert data["s"] == {"2": "late"}


def test_a_column_may_be_shorter_than_count_but_not_longer():
    short = {"control": {"version": 2, "count": 3}, "data": {"x": column(i32(1) + EOO)}}
    assert decompress_bucket(short)["data"] == {"x": {"0": 1}}
    long = {"control": {"version": 2, "count": 1}, "data": {"x": column(dbl(1.0) + blocks(0x9, one(zz(1))) + EOO)}}
    with pytest.raises(BSONColumnError, match=r"data\.x' holds more values than control.count \(1\)"):
        decompress_bucket(long)


@pytest.mark.parametrize("doc,code", [
    ({"data": {}}, 6540600),
    ({"control": {"min": {}}}, 6540601),
    ({"control": {"version": "2"}}, 6540601),
    ({"control": {"version": 4}}, 6540602),
])
def test_bucket_versions_are_checked_like_mongod(doc, code):
    with pytest.raises(BSONColumnError) as info:
        is_compressed_bucket(doc)
    assert info.value.code == code


def test_is_compressed_bucket():
    assert is_compressed_bucket({"control": {"version": 1}}) is False
    assert is_compressed_bucket({"control": {"version": 2}}) is True
    assert is_compressed_bucket({"control": {"version": 3.0}}) is True


@pytest.mark.parametrize("data,message", [
    ({"x": {"0": 1}}, r"'data\.x' is not a BSONColumn"),
    ({"x": Binary(i32(1) + EOO, 0)}, r"'data\.x' is not a BSONColumn"),
    ({"x": column(i32(1))}, r"'data\.x': BSONColumn is not terminated"),
])
def test_bad_columns_name_their_field(data, message):
    with pytest.raises(BSONColumnError, match=message):
        decompress_bucket({"control": {"version": 2, "count": 1}, "data": data})


def test_uncompressed_bucket_is_refused():
    with pytest.raises(BSONColumnError, match="not compressed"):
        decompress_bucket({"control": {"version": 1}, "data": {}})


def test_size_limit_is_shared_by_the_columns_of_a_bucket():
    big = column(string("x" * 600_000) + EOO)
    bucket = {"control": {"version": 2, "count": 1}, "data": {"a": big, "b": big}}
    assert len(decompress_bucket(bucket, max_size=1_300_000)["data"]) == 2
    with pytest.raises(BSONColumnError, match="size limit"):
        decompress_bucket(bucket, max_size=1_100_000)


def test_compress_then_decompress_gives_back_the_bucket_sorted_on_time():
    t0 = datetime.datetime(2024, 5, 1)
    v1 = {
        "_id": ObjectId("6631853000000000000000aa"),
        "control": {"version": 1, "min": {"t": t0}, "max": {"t": t0 + datetime.timedelta(minutes=2)}},
        "meta": {"host": "a"},
        "data": {
            "t": {"0": t0 + datetime.timedelta(minutes=2), "1": t0, "2": t0 + datetime.timedelta(minutes=1)},
            "cpu": {"0": 2.5, "2": 1.5},
            "tags": {"1": {"k": "v", "n": 1}, "2": {"k": "w"}},
        },
    }
    v2 = compress_bucket(v1, "t")
    assert list(v2) == ["_id", "control", "meta", "data"] and list(v2["data"]) == ["t", "cpu", "tags"]
    assert v2["control"]["version"] == 2 and v2["control"]["count"] == 3
    assert all(isinstance(c, Binary) and c.subtype == 7 for c in v2["data"].values())
    assert decode_column(v2["data"]["t"]) == [t0 + datetime.timedelta(minutes=k) for k in range(3)]
    assert decompress_bucket(v2) == {
        **v1,
        "data": {
            "t": {str(k): t0 + datetime.timedelta(minutes=k) for k in range(3)},
            "cpu": {"1": 1.5, "2": 2.5},
            "tags": {"0": {"k": "v", "n": 1}, "1": {"k": "w"}},
        },
    }
