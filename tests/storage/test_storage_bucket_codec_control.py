"""storage/bucket_codec.py's packed control (stored stream version 4): the small integral doubles of a
bucket's control.min / control.max are stored as one byte each, out of the prefix. Byte-exact round
trips whatever the control holds, ``head()`` without unpooling, and values stored before (version 3,
what main stored) still read back."""

from __future__ import annotations

import base64
import hashlib
import math

import bson
import pytest
from bson import ObjectId
from bson.datetime_ms import DatetimeMS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_storage_bucket_codec_pool import OTHERS, SPECIAL_DOUBLES, fixed_bucket, stored_version

from tidemark.storage import bucket_codec
from tidemark.storage.bucket_reader import BucketReader


def control_bucket() -> dict:
    """``fixed_bucket(360)`` with TSBS's control: min and max of each of the ten gauges (two not
    packable: -0.0 and 300.0)."""
    raw = fixed_bucket(360)
    for k in ("min", "max"):
        for j in range(10):
            vals = list(raw["data"][f"usage_{j}"].values())
            raw["control"][k][f"usage_{j}"] = min(vals) if k == "min" else max(vals)
    raw["control"]["min"]["usage_9"] = -0.0
    raw["control"]["max"]["usage_8"] = 300.0
    return raw


def head_of(raw: dict) -> bytes:
    expected = dict(raw)
    del expected["data"]
    return bson.encode(expected)


# What main (stream version 3, before the packed control) stored for ``control_bucket()``
# (``bucket_codec.encode``, no dictionary), and the SHA-256 of the BSON it must decode to.
OLD_V3_PACKED = base64.b64decode(
    "KLUv/WAzFiwKACbQOjdQxSaNARQdEK8AgLiqVqeq+ryLTK32F9smf8JvJu62+97ER430V1/W1tYu"
    "kKIav7LYrcxvW8oULQAxACcAd2xF6X7dumKGwYqC14wnLmxal8gNWCqUSSBg4lZ/FKvpRxgcyGW3"
    "AwyLRXMBEFroQYugFKgFjXLQAmh4LJ50a/8BUZ5OA2ez0VCfDCZhhApKvKykryAAFyEPZZyVD7tB"
    "UsIx5Xer6FDGSbD+5hu571Qzu0j/NJTPmtlF2t/gN6F0T4Uwj/tuqn88Hc5Gk8Hsu6mWKERO322f"
    "FpQQK2UPyi/Tx66Td5v0UayiyAcqoJFwyoKZMEvLrT1AAxKlNQPHRweHowcfiuchD4TEfCAETVZl"
    "yFh1yxi+DYMV0p1OkT1nVIhgR53KlB4s5mCUEGF4FElJeUJkChS5TMQhEXJEFKG0Rx/9IgB0RAXB"
    "SWECABAEwd65BERInqhACQpQEQXIiECqtkw7BZvrTZvqo0u9FruabprRUnbjVBbGjWPIS+yeko24"
    "3LWxdL2N7pB752Z3a7ap153MUmc5iR1iiuyLIjPV17q+zNFpBjR5vhmuN0lic1MrLFrqm3uI3Uyi"
    "xNSuT5EzVO2c3O7qc4PUXK4sN2FCdg3zmqa9HDs5uxRsba1Sc4ybNkZOY7bn/GxOWm5K6y2nJbFi"
    "yKqLovjsEq47iYxLpMYnhbY012u0WGc2I2TKpLOaI3J3iqSlXed2W9JGsc+VI12Ui2plTd3IWpvW"
    "u1NvZlntoYZT1mjbcT3gmg5bGrHlqzzKcXZFihbujCANug7j02U9n1TfWgnJw9qBvESUNR52Irn4"
    "5tZGRgcAAPA7z3cFcdV1KtdGLWcsGQDgEWVdq5OLBIsyJ/imXRRqd9wNKXbBdqKgy1A6LbOkW5Id"
    "YdcCk3PkYkZ6ka5O7JPCORvTKGu3LZfrtKO1jC3HxmF3y4lKIjt09ZamPYmiJZC1LRvpLsTFynWn"
    "O6Nr2zLudmyTNIlSB69WaK7uep7upFvi02wLdBZ4mu/WysmZQzFdol3W+FQ97UB7h3YnLeu2SnaN"
    "8bjLndIiJWmc7txTI025ZnV9c7hWuQutlV10l/hCGLV9590tmXvFrpbl1p2xaZ3YTWktA+hiHToA"
    "0AUvlbOdinBPdwBimSNty+Yord1ztSuR6a3VwuQg92wj1jrZpWmEtaHEu807b5nju72SztuseYz5"
    "WrLBtefTmm3c2e2NurTkZtmZGjmcpyaep1t1cWqJ8zg67+zuesU2eLXxvBudUXdLo7L0uptzVl3n"
    "3FxHpk6ZB/biTh6Z1Ttlt60rOEUeHG1Kl92Aw3dWvN0SYd2xs/DizPQWzyw5IclJKOe2h6I1EZOd"
    "cekCpFl79ia59G67Ne9WS5XimmS96+5uxdKKL2zdYtaeCLGbNOdtc9IupzWd1YboNs6OFEW9drtb"
    "kE9m01WMq0YSsqLT0Ng16XybbA0A4M4JNeq1zXCNHaTrHLBzs6+MDoSai51LcpNdV4ek7K6SSDt2"
    "SXU3DZ/+JNXJNI1c7+bqeiipTthXZc71pA5Fd8duaiMWvCIll0atLKW4KoPtzlFVX8+kJmyqpFjI"
    "nDuWpTqcrW7YfOJuFC41Mk3ngmILeh07WNq01/aUkOasuj7k9ABQ7Ui3U+bii5YBduxw6bm7pceo"
    "bZ3FrldLytarjMdSaVybgkhzu4xc5uGdDvGh8WHLWnfZbpnqpXQkiapbpZN8iVhjTFB79XxaCWVb"
    "phMAAABgdRc4cfh3XXOkjexes07odpsvydLS882Tr7NuuhGlV7EMOYtyyRGXc5JiKTp5AjgdKDI+"
    "ovN1StMyX87LinyFiyNVrkdPSKVXT75tJ9Zs1o1FOVQiiwiAEwAcyKp2DTnZJ2pDz/GcLFOuZG1y"
    "N/eaCc4N3tX7AgcwRbAgK1Z1kZSoMpfHUfMGasOgbAo="
)
OLD_V3_SHA256 = "a90a65b0f6883953eb4da54499f17039e31434baf5c6c418c6da6499f71d597c"


def test_a_value_stored_before_the_packed_control_still_decodes_and_reads():
    raw = control_bucket()
    doc = bson.encode(raw)
    assert hashlib.sha256(doc).hexdigest() == OLD_V3_SHA256
    assert stored_version(OLD_V3_PACKED) == bucket_codec.POOLED_VERSION
    assert bucket_codec.decode(OLD_V3_PACKED) == doc
    reader = BucketReader(OLD_V3_PACKED)
    assert reader.head() == head_of(raw)
    assert reader.document() == doc
    assert BucketReader(OLD_V3_PACKED).column_bson("usage_3") == bson.encode(raw["data"]["usage_3"])


def test_control_doubles_are_packed_and_the_value_shrinks():
    doc = bson.encode(control_bucket())
    packed = bucket_codec.encode(doc)
    assert packed is not None and bucket_codec.decode(packed) == doc
    assert stored_version(packed) == bucket_codec.PACKED_VERSION
    assert len(packed) < len(OLD_V3_PACKED)
    stream = bucket_codec.decompress(packed)
    assert bucket_codec.unpack_control(stream)[0] == bucket_codec.POOLED_VERSION


def test_the_head_of_a_packed_value_is_read_without_unpooling(monkeypatch):
    raw = control_bucket()
    reader = BucketReader(bucket_codec.encode(bson.encode(raw)))

    def refuse(buf):
        raise AssertionError("unpooled for the head")

    monkeypatch.setattr(bucket_codec, "_unpool", refuse)
    monkeypatch.setattr(bucket_codec, "unpack_control", refuse)
    assert reader.head() == head_of(raw)


def test_a_packed_control_that_does_not_match_its_gaps_is_refused():
    stream = bucket_codec.decompress(bucket_codec.encode(bson.encode(control_bucket())))
    at = bucket_codec._prefix_at(stream)
    n, pos = bucket_codec._get_varint(stream, at)
    region = stream[pos:pos + n]
    m, p = bucket_codec._get_varint(region, 0)
    g, p = bucket_codec._get_varint(region, p)
    with pytest.raises(ValueError):
        bucket_codec.control_prefix(region[:p + g + m - 1])  # codes cut short
    bad = bytearray(region)
    bad[p] += 100  # a gap past the end
    with pytest.raises(ValueError):
        bucket_codec.control_prefix(bytes(bad))


# --- Hypothesis: whatever control.min / control.max hold ----------------------------------------------
CONTROL_VALUES = st.one_of(
    st.integers(0, 255).map(float), st.integers(-3, 300).map(float), st.sampled_from(SPECIAL_DOUBLES),
    st.floats(allow_nan=True, allow_infinity=True), OTHERS,
    st.integers(-(2 ** 40), 2 ** 40).map(DatetimeMS), st.binary(min_size=12, max_size=12).map(ObjectId),
    st.dictionaries(st.text("xy", max_size=2), st.integers(0, 9).map(float), max_size=3),
)


@st.composite
def control_buckets(draw: st.DrawFn) -> dict:
    raw = fixed_bucket(draw(st.sampled_from([200, 360])))
    control: dict = {}
    for name in draw(st.permutations(["version", "min", "max", "count", "closed"])):
        if name in ("min", "max"):
            control[name] = draw(st.dictionaries(st.text("abtime_", min_size=1, max_size=6), CONTROL_VALUES,
                                                 max_size=12))
        elif draw(st.booleans()):
            control[name] = draw(st.one_of(st.integers(1, 2), st.integers(0, 255).map(float), st.booleans()))
    raw["control"] = control
    if draw(st.booleans()):
        raw["meta"] = draw(st.one_of(st.none(), st.floats(0, 255), st.text(max_size=4)))
    return raw


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(control_buckets())
def test_random_controls_round_trip_byte_for_byte_and_readers_agree(raw):
    doc = bson.encode(raw)
    packed = bucket_codec.encode(doc)
    assert packed is not None
    assert bucket_codec.decode(packed) == doc
    assert BucketReader(packed).head() == head_of(raw)
    reader = BucketReader(packed)
    assert reader.column_bson("usage_1") == bson.encode(raw["data"]["usage_1"])
    assert reader.head() == head_of(raw)  # after a column read (unpooled)
    assert reader.document() == doc
    small = [v for k in ("min", "max") if isinstance(raw["control"].get(k), dict)
             for v in raw["control"][k].values()
             if isinstance(v, float) and v.is_integer() and 0 <= v <= 255 and math.copysign(1, v) > 0]
    assert (stored_version(packed) == bucket_codec.PACKED_VERSION) == bool(small)
