"""storage/bucket_codec.py: byte-exact round trips of v1-bucket-shaped BSON, and the tag-4 hook in
storage/compression.py (bucket documents use it, other values and older tags keep working)."""

from __future__ import annotations

import datetime as dt
import math
import random

import bson
import numpy as np
import pytest
from bson import ObjectId
from bson.datetime_ms import DatetimeMS
from bson.int64 import Int64

from tidemark.storage import bucket_codec
from tidemark.storage.compression import TAG_BUCKET, TAG_RAW, TAG_SNAPPY, TAG_ZSTD, ValueCodec

START = dt.datetime(2016, 1, 1)


def tsbs_bucket(n: int = 360, *, step_ms: int = 10_000, start: dt.datetime = START) -> dict:
    """A bucket like the server writes for TSBS cpu rows: integral doubles, dense columns."""
    rng = random.Random(n)
    oid = ObjectId()
    base = int(str(oid)[-6:], 16)
    fields = [f"usage_{i}" for i in range(10)]
    walk = [rng.uniform(0, 100) for _ in fields]
    data: dict = {"time": {}, "_id": {}}
    data.update({f: {} for f in fields})
    for i in range(n):
        data["time"][str(i)] = start + dt.timedelta(milliseconds=i * step_ms)
        data["_id"][str(i)] = ObjectId(str(oid)[:18] + f"{(base + 100 * i) & 0xFFFFFF:06x}")
        for j, f in enumerate(fields):
            walk[j] = min(100.0, max(0.0, walk[j] + rng.gauss(0, 1)))
            data[f][str(i)] = float(int(walk[j]))
    mins = {k: min(v.values()) for k, v in data.items()}
    maxs = {k: max(v.values()) for k, v in data.items()}
    return {"_id": ObjectId(), "control": {"version": 1, "min": mins, "max": maxs},
            "meta": {"hostname": "host_1", "region": "eu-west-1"}, "data": data}


def random_value(rng: random.Random, kind: str):
    if kind == "double":
        return rng.choice([rng.uniform(-1e6, 1e6), float(rng.randrange(-50, 50)), -0.0, 0.0, math.nan,
                           math.inf, -math.inf, 5e-324, 1e308, 2.0 ** 63, -(2.0 ** 63)])
    if kind == "int":
        return rng.choice([rng.randrange(-2 ** 31, 2 ** 31), 0, -1, 2 ** 31 - 1])
    if kind == "long":
        return Int64(rng.choice([rng.randrange(-2 ** 63, 2 ** 63), 0, -(2 ** 63), 2 ** 63 - 1]))
    if kind == "date":
        return DatetimeMS(rng.choice([rng.randrange(-2 ** 45, 2 ** 45), -1, 0, -(2 ** 63), 2 ** 63 - 1]))
    if kind == "oid":
        return ObjectId(bytes(rng.randrange(256) for _ in range(12)))
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "string":
        return "x" * rng.randrange(5)
    if kind == "object":
        return {"a": rng.randrange(3), "b": [1, {"c": None}]}
    if kind == "array":
        return [rng.random(), "s", [], {}]
    return None


KINDS = ["double", "int", "long", "date", "oid", "bool", "string", "object", "array", "null"]


def random_bucket(rng: random.Random) -> dict:
    n = rng.choice([1, 2, 7, 100, 1000])
    data: dict = {}
    data["t"] = {str(i): DatetimeMS(rng.randrange(-2 ** 40, 2 ** 40)) for i in range(n)}  # out of order
    for c in range(rng.randrange(1, 8)):
        mixed = rng.random() < 0.3
        kind = rng.choice(KINDS)
        sparse = rng.random() < 0.4
        column = {}
        for i in range(n):
            if sparse and rng.random() < 0.5:
                continue
            column[str(i)] = random_value(rng, rng.choice(KINDS) if mixed else kind)
        data[f"f{c}"] = column
    return {"_id": ObjectId(), "control": {"version": 1, "min": {"t": DatetimeMS(0)}, "max": {"t": None}},
            "meta": rng.choice([None, "m", {"k": [1, 2]}]), "data": data}


def round_trips(doc_bytes: bytes) -> bytes:
    packed = bucket_codec.encode(doc_bytes)
    assert packed is not None
    assert bucket_codec.decode(packed) == doc_bytes
    return packed


def test_tsbs_bucket_round_trips_exactly_and_packs_below_8_bytes_per_measurement():
    raw = bson.encode(tsbs_bucket(360))
    packed = round_trips(raw)
    assert len(packed) / 360 < 8


def test_thousand_measurement_bucket_round_trips():
    round_trips(bson.encode(tsbs_bucket(1000)))


def test_dates_before_1970_and_out_of_order_times_round_trip():
    doc = tsbs_bucket(50, start=dt.datetime(1950, 6, 1))
    times = list(doc["data"]["time"].values())
    random.Random(1).shuffle(times)
    doc["data"]["time"] = {str(i): t for i, t in enumerate(times)}
    round_trips(bson.encode(doc))


def test_special_and_non_integral_doubles_round_trip_bit_exactly():
    values = [-0.0, 0.0, math.nan, math.inf, -math.inf, 0.1, 1.5, 2.0 ** 63, -(2.0 ** 63), 2.0 ** 53 + 2, 5e-324]
    doc = tsbs_bucket(len(values))
    doc["data"]["usage_0"] = {str(i): v for i, v in enumerate(values)}
    raw = bson.encode(doc)
    assert bson.decode(bucket_codec.decode(round_trips(raw)))["data"]["usage_0"]["0"] == 0.0
    # a NaN with a payload is kept bit for bit too
    nan_bits = b"\x01\x00\x00\x00\x00\x00\xf8\x7f"
    patched = raw.replace(b"\x00\x00\x00\x00\x00\x00\xf8\x7f", nan_bits, 1)
    assert patched != raw
    round_trips(patched)


@pytest.mark.parametrize("seed", range(60))
def test_random_bucket_documents_round_trip_byte_for_byte(seed):
    round_trips(bson.encode(random_bucket(random.Random(seed))))


def test_sparse_column_keys_are_kept():
    doc = tsbs_bucket(20)
    doc["data"]["usage_3"] = {"2": 1.0, "5": 2.0, "19": 3.0}
    out = bson.decode(bucket_codec.decode(round_trips(bson.encode(doc))))
    assert list(out["data"]["usage_3"]) == ["2", "5", "19"]


@pytest.mark.parametrize("keys", [["0", "00"], ["1", "0"], ["a", "b"], ["0", "0"], ["-1"], ["01"]])
def test_non_canonical_column_keys_still_round_trip(keys):
    doc = tsbs_bucket(3)
    doc["data"]["odd"] = {k: float(i) for i, k in enumerate(keys)}
    round_trips(bson.encode(doc))


def test_documents_not_shaped_like_buckets_are_refused():
    assert bucket_codec.encode(bson.encode({"_id": 1, "x": "y"})) is None
    assert bucket_codec.encode(bson.encode({"_id": ObjectId(), "data": {"a": 1}})) is None  # column not a doc
    assert bucket_codec.encode(b"\x05\x00\x00\x00") is None
    assert bucket_codec.encode(b"garbage-bytes") is None


def test_fields_after_data_and_data_not_last_round_trip():
    doc = tsbs_bucket(10)
    doc["zz"] = {"after": [1, 2]}
    round_trips(bson.encode(doc))


def test_value_codec_packs_buckets_with_the_bucket_tag_and_reports_their_size():
    codec = ValueCodec("zstd")
    raw = bson.encode(tsbs_bucket(360))
    stored = codec.pack(raw)
    assert stored[0] == TAG_BUCKET
    assert codec.unpack(stored) == raw
    assert codec.unpacked_size(stored) == len(raw)
    assert len(stored) < len(bytes(ValueCodec("zstd").pack(raw, fast=True))) / 3


def test_value_codec_keeps_regular_documents_and_fast_values_on_general_tags():
    codec = ValueCodec("zstd")
    plain = bson.encode({"_id": 1, "text": "abc" * 100})
    assert codec.pack(plain)[0] == TAG_ZSTD
    bucket = bson.encode(tsbs_bucket(50))
    assert codec.pack(bucket, fast=True)[0] == TAG_ZSTD  # journal records: speed over ratio
    assert ValueCodec("none").pack(bucket)[0] == TAG_RAW


def test_older_tags_stay_readable_by_a_codec_configured_otherwise():
    raw = bson.encode(tsbs_bucket(100))
    stored = {c: ValueCodec(c).pack(raw) for c in ("none", "snappy", "zstd")}
    legacy = {TAG_RAW: b"\x00" + raw, TAG_SNAPPY: ValueCodec("snappy").pack(raw)}
    import zstandard
    legacy[TAG_ZSTD] = bytes((TAG_ZSTD,)) + zstandard.ZstdCompressor(level=1).compress(raw)
    for reader in ("none", "snappy", "zstd"):
        codec = ValueCodec(reader)
        for value in [*stored.values(), *legacy.values()]:
            assert codec.unpack(value) == raw
            assert codec.unpacked_size(value) == len(raw)


@pytest.mark.parametrize("n", [1, 9, 10, 11, 99, 100, 101, 1000, 1001, 2500])
def test_dense_column_is_the_bson_of_its_values(n):
    rng = random.Random(n)
    cases = {
        0x01: [rng.choice([rng.random(), -0.0, math.nan, math.inf, 1e308]) for _ in range(n)],
        0x09: [DatetimeMS(rng.randrange(-(1 << 50), 1 << 50)) for _ in range(n)],
        0x10: [rng.randrange(-(1 << 31), 1 << 31) for _ in range(n)],
        0x12: [Int64(rng.randrange(-(1 << 63), 1 << 63)) for _ in range(n)],
        0x08: [rng.random() < 0.5 for _ in range(n)],
        0x07: [ObjectId() for _ in range(n)],
    }
    for btype, values in cases.items():
        expected = bson.encode({str(i): v for i, v in enumerate(values)})
        doc = bson.decode(expected, codec_options=bson.CodecOptions(datetime_conversion=bson.DatetimeConversion.DATETIME_MS))
        value_bytes = b"".join(_value_bytes(btype, v) for v in doc.values())
        assert bucket_codec.dense_column(btype, np.frombuffer(value_bytes, np.uint8)) == expected


def _value_bytes(btype, value):
    return bson.encode({"": value})[6:-1]


def test_a_column_longer_than_the_cached_template_is_built_and_the_cache_stays_bounded():
    n = bucket_codec._TEMPLATE_CACHED_MAX + 10
    values = np.arange(n, dtype="<i8")
    assert bucket_codec.dense_column(0x12, values) == bson.encode({str(i): Int64(i) for i in range(n)})
    assert all(cap <= bucket_codec._TEMPLATE_CACHED_MAX for cap, _ in bucket_codec._templates.values())
