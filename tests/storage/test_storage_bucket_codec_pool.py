"""storage/bucket_codec.py's pool (stored stream version 3): the 1-byte zig-zag deltas of a bucket's
small-integer columns are Huffman-coded together (one raw deflate block) instead of inside the zstd
frame. Byte-exact round trips whatever the columns hold, the readers' views of a pooled value equal
``decode``'s, and values stored before the pool (version 2 streams) still read back."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import math
import zlib

import bson
import numpy as np
import pytest
from bson import ObjectId
from bson.codec_options import CodecOptions, DatetimeConversion
from bson.datetime_ms import DatetimeMS
from bson.int64 import Int64
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tidemark.storage import bucket_codec
from tidemark.storage.bucket_reader import BucketReader

FIELDS = [f"usage_{i}" for i in range(10)]


def fixed_bucket(n: int = 360) -> dict:
    """A deterministic TSBS-like bucket (ten integral-double random walks, dense columns)."""
    rng = np.random.default_rng(n)
    data: dict = {"time": {str(i): dt.datetime(2016, 1, 1) + dt.timedelta(seconds=10 * i) for i in range(n)},
                  "_id": {str(i): ObjectId(bytes(8) + (1000 + 7 * i).to_bytes(4, "big")) for i in range(n)},
                  "measurement": {str(i): "cpu" for i in range(n)}}
    for j, f in enumerate(FIELDS):
        walk = np.clip(np.cumsum(rng.integers(-3, 4, n)) + 10 * j, 0, 100)
        data[f] = {str(i): float(v) for i, v in enumerate(walk.tolist())}
    return {"_id": ObjectId(bytes(range(12))), "control": {"version": 1, "min": {"time": dt.datetime(2016, 1, 1)},
            "max": {"time": dt.datetime(2016, 1, 2)}}, "meta": {"hostname": "host_7"}, "data": data}


# What the code before the pool stored for ``fixed_bucket(360)`` (``bucket_codec.encode``, stream
# version 2, no dictionary), and the SHA-256 of the BSON it must decode to.
OLD_V2_PACKED = base64.b64decode(
    "KLUv/WDXHX0rAGqyEBMwgE2aA6w27QoGEkkmMmF4MlxgEJE5f09EU5uSlA8qNGCNwJ8UCUEVLFDc"
    "ZKeUUkopWwERARABNV2/o1d11VbOFNnVbv/bvG/32zrdXKN61PY4XBb+ocZ+taw6ttNNrLdWebPp"
    "VhqTYtdV85uwY9tP/Wl3V+yWfwEKlCf5fGqef1cehe7sf2Ti6o0qu67Pp9abhtnVx6rqLTVFS1dL"
    "fV5erhNNOmzXhtezyLzofn06uuafbeHFc18Sflr5iqYteg/XVeS6Z9GzqS/dh9Mt73996TUlc9Gd"
    "X9bG2lLM5m8nk+25PMqVp4+nXI/7hd+1z2Ts070jev8uK2Q6fe+vZRVSEohgTLCg6NDBggxUVrE8"
    "JBgOBocOFAuGIwM8hLCoWcWDoqER0RghmQcmnABCKiSrgFAYjsZDgCiLx0IDkwsRD4qJDUkewnAs"
    "JB4UExuW5IAsHgwHk0IHGDBYSIBCBiIkDEfjAZHEgEg0HEyiSEw0KDgwLiAgCQSpYILDQ2IiAwMA"
    "AKLCw11OiYZGxENCQgnSYAFMNY3Vkrh2yFD31Vfm20unRNJ5moqttOod7VTqbKW8aPq1um/1ZOou"
    "67Zb7E6qlDMMTW7+7/eb9EWyk5IRNDBPrF997R12UaiWsy/xO5NRS0byE6Wd8k2rTkefKR1n+7b/"
    "0aVYC6XpVseYTXU3f2z7TdovzvbTWvRmmzP10lOGLEeGox19t6r+v/043/OXYktrq9w8rBqVexJb"
    "T6O3vbbx/e4ur5auJZmY7JZLuUmnq76LafmuT7aY0+z7XS0wEG4MFXu1Fe/WrCyxxPMILKCFC2nz"
    "YsytJXPWj7P2XKKPObds9kVvovxqYphbS91koZR+cTOTiuKcsziy+UbmrpVEVvR/9TulXk76fXh5"
    "0mnX/riLZprc1VYlq3pZcuexyKtkUt7aUjI089qWFzotpXzkfvFurefLp8Vv2uaz8szaH05ceum3"
    "5XXdSiq/1tQe7/pT/1N1a7JpJvthf/+pGH9jfEm35LehGXfuZ2NgwdcvOeb2k7JfN0nvKi+5Z62/"
    "LrJNxWnLbZnah2cvhy97ZtQjjVl7/ewoMUpyvXdcO0rOxWXi+7/eSR7fnLvZk8n57t6bWzVVmh5V"
    "Xrfcx6t73QvvXOcZ0mdC3aTOO8qpbHRZzdfOs/VOpVy9lxyvxo7pXDYpZaJsJX9ji89zfvzPu6XA"
    "gUss3586f53t8o9ZXVdvaT8LSZlLuaeffTlcY32mTNpd+ff/Vr7PkkSazCye/nLuA6d1pqaSXWrt"
    "N1b3vuVZygnpTOTU1Po8LtGacY0XdX2u8a+f6b+403K8ZXJOc97KKrG4+D1V8bHr7ha1RgwXn9O6"
    "MW5Lter6cnmfWe6aa9d4izsvyrH7tuKva9n9WiZXu1Fomh88MGVKqnvU3v9xGn/iadlLw7B+1oqb"
    "Nl/z2jZ33NN7r7+6P46MWIcDDIumM+er5tVVN0tcW/nmPmc4y3+30bKeURPlKiVLJnm/ijHf6dpK"
    "ei4XuWkn27Jr94meW05Gdol51+FCV4lzKRP/1PRfRnPf56bCZew2709DN5RFzyulP3m8cfbq6kyf"
    "1d71SFqXe5NVvrPITHO7yJp5yWq+7y29bYMLYr5Lc6vntvRuATsgoAISkUCqzgGE9AEgUpBc9mYZ"
    "MgRwdVQqpuKQ8MGKY+qv1g2diARWl01Gz8J7NZ4oGPW7JDHMGJ0QwjgQAY1yaAB6iMfURzxmwFwX"
    "Pua2+g4pbcZxAjM+5A70Pkj+hN/spw952OxQgiDJAsJO74y9bx7aREMX/jdiV3kciNwACoTqvQMW"
    "cF0HnxA2vUe/IET0LgeZLCtNBjVbxvMADDS2rvBm7LCi"
)
OLD_V2_SHA256 = "adf6c241643c114e3e42c5c26b024cbec3db0e30b29d7e22330849fe163370c7"


def stored_version(packed: bytes) -> int:
    return bucket_codec.decompress(packed)[0]


def test_a_value_stored_before_the_pool_still_decodes_and_reads():
    doc = bson.encode(fixed_bucket(360))
    assert hashlib.sha256(doc).hexdigest() == OLD_V2_SHA256
    assert stored_version(OLD_V2_PACKED) == 2
    assert bucket_codec.decode(OLD_V2_PACKED) == doc
    reader = BucketReader(OLD_V2_PACKED)
    assert reader.document() == doc
    assert reader.column_bson("usage_3") == bson.encode(fixed_bucket(360)["data"]["usage_3"])


def test_small_integer_columns_are_pooled_and_the_value_shrinks():
    doc = bson.encode(fixed_bucket(360))
    packed = bucket_codec.encode(doc)
    assert packed is not None and bucket_codec.decode(packed) == doc
    assert stored_version(packed) == bucket_codec.POOLED_VERSION
    compressor = bucket_codec._compressor()
    unpooled = compressor.header + compressor.zc.compress(bucket_codec.encode_raw(doc))  # the version-2 form
    # TSBS's own buckets: -300 B of 1,510; the version-5 header (2 B) instead of the frame's magic (4 B)
    assert len(packed) < len(unpooled) == len(OLD_V2_PACKED) - 2


def test_few_small_integers_stay_in_the_zstd_frame():
    doc = bson.encode(fixed_bucket(50))  # 500 pooled bytes < POOL_MIN
    packed = bucket_codec.encode(doc)
    assert packed is not None and stored_version(packed) == bucket_codec.FORMAT_VERSION
    assert bucket_codec.decode(packed) == doc


def test_the_head_of_a_pooled_value_is_read_without_unpooling(monkeypatch):
    raw = fixed_bucket(360)
    doc = bson.encode(raw)
    packed = bucket_codec.encode(doc)
    head = BucketReader(packed)

    def refuse(buf):
        raise AssertionError("unpooled for the head")

    monkeypatch.setattr(bucket_codec, "_unpool", refuse)
    expected = dict(raw)
    del expected["data"]
    assert head.head() == bson.encode(expected)


def test_a_pool_that_does_not_match_its_runs_is_refused():
    doc = bson.encode(fixed_bucket(360))
    pooled, static = bucket_codec._pool(bucket_codec.encode_raw(doc))
    assert pooled[0] == bucket_codec.POOLED_VERSION and not static
    size, pos = bucket_codec._get_varint(pooled, 1)
    co = zlib.compressobj(9, zlib.DEFLATED, -15, 9, zlib.Z_HUFFMAN_ONLY)
    short = co.compress(b"\x00" * 10) + co.flush()
    bad = bytearray((bucket_codec.POOLED_VERSION,))
    bucket_codec._put_varint(bad, len(short))
    bad += pooled[pos:len(pooled) - size] + short
    assert bucket_codec._unpool(pooled) == bucket_codec.encode_raw(doc)
    with pytest.raises(ValueError):
        bucket_codec._unpool(bytes(bad))


# --- Hypothesis: random buckets with enough small integers to be pooled, and everything else -------
SPECIAL_DOUBLES = [-0.0, 0.0, math.nan, math.inf, -math.inf, 5e-324, 1e308, 2.0 ** 63, -(2.0 ** 63), 0.5]
OTHERS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from(SPECIAL_DOUBLES),
    st.integers(-(2 ** 31), 2 ** 31 - 1), st.integers(-(2 ** 63), 2 ** 63 - 1).map(Int64),
    st.sampled_from([Int64(-(2 ** 63)), Int64(2 ** 63 - 1), DatetimeMS(-(2 ** 63)), DatetimeMS(2 ** 63 - 1)]),
    st.integers(-(2 ** 63), 2 ** 63 - 1).map(DatetimeMS), st.booleans(), st.none(), st.text(max_size=4),
    st.binary(min_size=12, max_size=12).map(ObjectId), st.binary(max_size=4),
    st.dictionaries(st.text("ab", max_size=2), st.integers(-3, 3), max_size=2), st.lists(st.integers(-3, 3), max_size=2),
)

RAW_DATES = CodecOptions(datetime_conversion=DatetimeConversion.DATETIME_MS)


@st.composite
def buckets(draw: st.DrawFn) -> dict:
    n = draw(st.sampled_from([200, 360, 1000, 1030]))
    data: dict = {"time": {str(i): DatetimeMS(1_451_606_400_000 + 10_000 * i) for i in range(n)}}
    for c in range(draw(st.integers(1, 6))):
        wrap = draw(st.sampled_from([float, int, Int64, DatetimeMS]))
        start = draw(st.integers(-1000, 1000))
        spread = draw(st.sampled_from([1, 3, 60, 200]))  # 200: some deltas need 2 bytes
        seed = draw(st.integers(0, 2 ** 32 - 1))
        walk = (start + np.cumsum(np.random.default_rng(seed).integers(-spread, spread + 1, n))).tolist()
        column = {str(i): wrap(v) for i, v in enumerate(walk)}
        how = draw(st.sampled_from(["dense", "dense", "sparse", "special", "mixed"]))
        if how == "sparse":
            column = {k: v for k, v in column.items() if int(k) % 3}
        elif how == "special" and wrap is float:
            column[str(draw(st.integers(0, n - 1)))] = draw(st.sampled_from(SPECIAL_DOUBLES))
        elif how == "mixed":
            column[str(draw(st.integers(0, n - 1)))] = draw(OTHERS)
        data[f"i{c}"] = column
    for c in range(draw(st.integers(0, 3))):
        value = draw(OTHERS)
        data[f"o{c}"] = {str(i): value if draw(st.booleans()) else draw(OTHERS) for i in range(0, n, 97)}
    return {"_id": ObjectId(bytes(12)), "control": {"version": 1, "min": {}, "max": {}},
            "meta": draw(st.one_of(st.none(), st.text(max_size=4))), "data": data}


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(buckets())
def test_random_buckets_round_trip_byte_for_byte_and_readers_agree(raw):
    doc = bson.encode(raw)
    packed = bucket_codec.encode(doc)
    assert packed is not None
    assert bucket_codec.decode(packed) == doc
    reader = BucketReader(packed)
    expected_head = dict(raw)
    del expected_head["data"]
    assert reader.head() == bson.encode(expected_head)
    for name, column in raw["data"].items():
        assert reader.column_bson(name) == bson.encode(column)
        values = reader.column_values(name)
        if values is not None:
            decoded = bson.decode(bson.encode(column), codec_options=RAW_DATES)  # any valid date
            assert len(values[1]) == len(decoded)
    assert BucketReader(packed).document() == doc
