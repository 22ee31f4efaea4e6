"""BSONColumn decoding (server/timeseries/bsoncolumn.py) against binaries built by hand.

Every fixture here is written from the published format description (MongoDB's bsoncolumn.h,
simple8b.cpp, bson/column/README.md) with bsoncolumn_fixtures' builders, or taken from MongoDB's
jstests (binaries written by mongod itself) — never produced by the project's encoder, so an
encoder and decoder sharing a misunderstanding cannot both pass.
"""

from __future__ import annotations

import base64
import datetime
import struct
import uuid

import bson
import pytest
from bson import DBRef, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp
from bson.binary import Binary
from bson.code import Code
from bsoncolumn_fixtures import (
    EOO,
    blocks,
    date,
    dbl,
    doc,
    field,
    i32,
    i64,
    ints,
    lit,
    one,
    rle,
    string,
    word,
    zz,
)

from tidemark.timeseries.bsoncolumn import MISSING, BSONColumnError, column_document, decode_column

# -- MongoDB's own binaries (jstests) ----------------------------------------------------------------

def b64(s: str) -> bytes:
    return base64.b64decode(s)


def test_mongod_bucket_from_jstest_decompression_failure():
    # jstests: timeseries_insert_decompression_failure.js — a 2-measurement bucket written by mongod.
    t = decode_column(b64("CQAYhggUjQEAAIAOAAAAAAAAAAA="))
    assert t == [datetime.datetime(2024, 1, 16, 20, 48, 39, 448000)] * 2
    assert decode_column(b64("AQAAAAAAAAAAAJAuAAAAAAAAAAA=")) == [0.0, 1.0]  # literal 0.0, x1 scale, +1
    ids = decode_column(b64("BwBlpuun5tLoSOCMN1CALgAAAAAAAAAA"))
    assert ids == [ObjectId("65a6eba7e6d2e848e08c3750"), ObjectId("65a6eba7e6d2e848e08c3751")]


def test_mongod_columns_grown_by_a_change_stream_diff():
    # jstests: change_streams timeseries test: one insert -> literal only; the second insert's
    # oplog diff {o: 10, d: <bytes>} replaces the EOO at offset 10 with a Simple-8b block + EOO.
    ts, ids = b64("CQDoAwAAAAAAAAA="), b64("AQAAAAAAAADwPwA=")
    assert decode_column(ts) == [datetime.datetime(1970, 1, 1, 0, 0, 1)]
    assert decode_column(ids) == [1.0]
    assert decode_column(ts[:10] + b64("gA4AAAAAAAAAAA==")) == [datetime.datetime(1970, 1, 1, 0, 0, 1)] * 2
    assert decode_column(ids[:10] + b64("kA4AAAAAAAAAAA==")) == [1.0, 1.0]


def test_mongod_column_of_a_thousand_doubles_uses_rle_and_base_selectors():
    # jstests: validate BSONColumn test — 2.0 then an RLE word of 8x120, a 30x2-bit word,
    # an 8x7-bit word (selector 7, extension 0: values from bit 8) and a one-value word.
    values = decode_column(b64("AQAAAAAAAAAAQJN/AAAAAAAAAAIAAAAAAAAABwAAAAAAAAAOAAAAAAAAAAA="))
    assert values == [2.0] * 1000


def test_mongod_string_literals():
    assert decode_column(b64("AgALAAAAcHJlVXBncmFkZQAA")) == ["preUpgrade"]
    assert decode_column(b64("AgAEAAAAZm9vAAA=")) == ["foo"]
    with pytest.raises(BSONColumnError):  # the same without its EOO (jstest: invalid column)
        decode_column(b64("AgAEAAAAZm9vAA=="))


@pytest.mark.parametrize("data", ["O2FkZmdqYWtsamhnJ2xhamhkZzthaCdmZGphZ2hkYQ==", "Ag=="])
def test_mongod_rubbish_columns_are_rejected(data):
    with pytest.raises(BSONColumnError):
        decode_column(b64(data))


# -- literals: every element type ---------------------------------------------------------------------

OID = ObjectId("65a6eba7e6d2e848e08c3750")
UUID = uuid.UUID("12345678-1234-5678-1234-567812345678")


@pytest.mark.parametrize("literal,expected", [
    (dbl(-2.5), -2.5),
    (string("héllo"), "héllo"),
    (lit(0x03, doc(field(0x10, "a", struct.pack("<i", 1)))), {"a": 1}),
    (lit(0x04, doc(field(0x10, "0", struct.pack("<i", 7)))), [7]),
    (lit(0x05, struct.pack("<i", 3) + b"\x80abc"), Binary(b"abc", 0x80)),
    (lit(0x05, struct.pack("<i", 16) + b"\x04" + UUID.bytes), UUID),
    (lit(0x06, b""), None),
    (lit(0x07, OID.binary), OID),
    (lit(0x08, b"\x01"), True),
    (date(1700000000123), datetime.datetime(2023, 11, 14, 22, 13, 20, 123000)),
    (lit(0x0A, b""), None),
    (lit(0x0B, b"^a.c\0i\0"), Regex("^a.c", "i")),
    (lit(0x0C, struct.pack("<i", 2) + b"c\0" + OID.binary), DBRef("c", OID)),
    (string("x => 1", 0x0D), Code("x => 1")),
    (string("sym", 0x0E), "sym"),
    (i32(-7), -7),
    (lit(0x11, struct.pack("<II", 5, 1700000000)), Timestamp(1700000000, 5)),
    (i64(-(2 ** 40)), Int64(-(2 ** 40))),
    (lit(0x13, Decimal128("1.25").bid), Decimal128("1.25")),
    (lit(0xFF, b""), MinKey()),
    (lit(0x7F, b""), MaxKey()),
])
def test_every_type_decodes_as_a_literal(literal, expected):
    (value,) = decode_column(literal + EOO)
    assert value == expected and type(value) is type(expected)


def test_int64_keeps_its_type_and_dates_beyond_datetime_decode_as_datetime_ms():
    values = decode_column(i64(5) + ints(1) + date(-(2 ** 62)) + EOO)
    assert values[:2] == [Int64(5), Int64(6)] and all(type(v) is Int64 for v in values[:2])
    assert type(values[2]).__name__ == "DatetimeMS"


# -- Simple-8b deltas per type ----------------------------------------------------------------------

def test_int32_deltas_wrap_like_int32():
    data = i32(10) + ints(1, -3, 0, 2 ** 31) + EOO
    assert decode_column(data) == [10, 11, 8, 8, 8 + 2 ** 31 - 2 ** 32]


def test_int64_deltas():
    assert decode_column(i64(0) + ints(2 ** 50, -1, None, 5) + EOO) == [0, 2 ** 50, 2 ** 50 - 1, MISSING, 2 ** 50 + 4]


def test_bool_deltas():
    assert decode_column(lit(0x08, b"\x00") + ints(1, 0, -1) + EOO) == [False, True, True, False]


def test_dates_use_delta_of_delta():
    # deltas of deltas: +1000 -> delta 1000; 0 -> same delta again; -500 -> delta 500
    values = decode_column(date(1_000_000) + ints(1000, 0, 0, -500, None, 0) + EOO)
    ms = [None if v is MISSING else int((v - datetime.datetime(1970, 1, 1)).total_seconds() * 1000) for v in values]
    assert ms == [1_000_000, 1_001_000, 1_002_000, 1_003_000, 1_003_500, None, 1_004_000]


def test_timestamps_use_delta_of_delta_on_their_64_bits():
    data = lit(0x11, struct.pack("<II", 1, 100)) + ints(1 << 32, 0, 1) + EOO
    assert decode_column(data) == [Timestamp(100, 1), Timestamp(101, 1), Timestamp(102, 1), Timestamp(103, 2)]


def test_object_id_deltas_follow_the_documented_byte_order():
    # encoded little-endian bytes: c2 ts3 c1 ts2 c0 ts1 ts0 — +1 is the counter's last byte, +256
    # the timestamp's last byte; the 5 process bytes stay those of the literal.
    values = decode_column(lit(0x07, OID.binary) + ints(1, 255, -256) + EOO)
    assert values == [OID, ObjectId("65a6eba7e6d2e848e08c3751"), ObjectId("65a6eba8e6d2e848e08c3751"),
                      ObjectId("65a6eba8e6d2e848e08c3751")]


@pytest.mark.parametrize("nibble,start,deltas,expected", [
    (0x9, 1.0, [1, 2], [1.0, 2.0, 4.0]),                   # x1
    (0xA, 1.5, [1, -20], [1.5, 1.6, -0.4]),                 # x10
    (0xB, 0.25, [1, 1], [0.25, 0.26, 0.27]),                # x100
    (0xC, 123.123, [7], [123.123, 123.1237]),               # x10000
    (0xD, 1.00000001, [-1, 99999999], [1.00000001, 1.0, 1.99999999]),  # x1e8
])
def test_double_deltas_at_every_scale(nibble, start, deltas, expected):
    assert decode_column(dbl(start) + blocks(nibble, *[one(zz(d)) for d in deltas]) + EOO) == expected


def test_double_deltas_on_the_ieee_bits():
    bits = struct.unpack("<q", struct.pack("<d", 1.0))[0]
    step = struct.unpack("<q", struct.pack("<d", 1.5))[0] - bits
    assert decode_column(dbl(1.0) + ints(step, -step) + EOO) == [1.0, 1.5, 1.0]


def test_scale_changes_between_controls_rescale_the_last_value():
    data = dbl(1.5) + blocks(0xA, one(zz(1))) + blocks(0xD, one(zz(5))) + EOO
    assert decode_column(data) == [1.5, 1.6, 1.60000005]


def test_zero_delta_repeats_a_negative_zero_exactly():
    values = decode_column(dbl(-0.0) + blocks(0x9, one(0), one(zz(1))) + EOO)
    assert [struct.pack("<d", v) for v in values] == [struct.pack("<d", x) for x in (-0.0, -0.0, 1.0)]


def test_string_deltas_on_reversed_bytes():
    # "abc" is the integer of its reversed bytes b"cba" (little-endian): +1 changes the last character
    assert decode_column(string("abc") + ints(1, 0x10000 - 1) + EOO) == ["abc", "abd", "bbc"]


def test_code_deltas_and_a_long_string_base_of_zero():
    assert decode_column(string("f()", 0x0D) + ints(1) + EOO) == [Code("f()"), Code("f(*")]
    long = "x" * 20  # not representable: deltas apply to 0
    assert decode_column(string(long) + ints(0, int.from_bytes(b"a", "little")) + EOO) == [long, long, "a"]


def test_binary_deltas_keep_length_and_subtype():
    data = lit(0x05, struct.pack("<i", 4) + b"\x00\x01\x02\x03\x04") + ints(1, 1 << 24) + EOO
    assert decode_column(data) == [b"\x01\x02\x03\x04", b"\x02\x02\x03\x04", b"\x02\x02\x03\x05"]


def test_decimal128_deltas_on_its_128_bits():
    assert decode_column(lit(0x13, Decimal128("1").bid) + ints(1, 7) + EOO) == [
        Decimal128("1"), Decimal128("2"), Decimal128("9")]


@pytest.mark.parametrize("literal", [lit(0x0A, b""), lit(0x03, doc(b"")), string("z" * 30), lit(0xFF, b"")])
def test_zero_deltas_repeat_any_type(literal):
    values = decode_column(literal + ints(0, None, 0) + EOO)
    assert values[0] == values[1] == values[3] and values[2] is MISSING


# -- skips and RLE -------------------------------------------------------------------------------------

def test_skips_before_any_literal_and_between_values():
    data = blocks(0x8, word(1, 1, [None] * 60)) + i32(3) + blocks(0x8, word(2, 2, [None, 0] * 15)) + EOO
    assert decode_column(data) == [MISSING] * 60 + [3] + [MISSING, 3] * 15


def test_zero_and_nonzero_deltas_before_any_literal_are_skips():
    assert decode_column(ints(0, 5) + i32(1) + EOO) == [MISSING, MISSING, 1]


def test_rle_after_a_literal_repeats_zero_deltas():
    assert decode_column(i32(4) + blocks(0x8, rle(2)) + EOO) == [4] * 241


def test_rle_repeats_the_last_delta_not_the_last_value():
    assert decode_column(i32(0) + blocks(0x8, one(zz(2)), rle(1)) + EOO) == list(range(0, 243, 2))


def test_rle_of_skips_and_the_largest_rle_word():
    assert decode_column(i32(1) + blocks(0x8, one(None), rle(16)) + EOO) == [1] + [MISSING] * 1921


def test_rle_at_the_start_of_a_control_continues_the_previous_control():
    data = i32(0) + blocks(0x8, one(zz(1))) + blocks(0x8, rle(1)) + EOO
    assert decode_column(data) == list(range(0, 122))


def test_runs_of_zeros_in_small_slots():
    data = i64(9) + blocks(0x8, word(1, 1, [0] * 60), word(1, 1, [0] * 30 + [None] * 30)) + EOO
    assert decode_column(data) == [Int64(9)] * 91 + [MISSING] * 30


# -- selectors -----------------------------------------------------------------------------------------

BASE = [(1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (6, 6), (7, 7), (8, 8), (9, 10), (10, 12), (11, 15), (12, 20),
        (13, 30), (14, 60)]


@pytest.mark.parametrize("selector,width", BASE)
def test_every_base_selector(selector, width):
    first = 8 if selector in (7, 8) else 4  # 7 and 8 keep an extension nibble (0) in bits 4-7
    count = (64 - first) // width
    slots = [k % 2 if width > 1 else 0 for k in range(count - 1)] + [None]  # zigzag 0, 1 = +0, -1
    data = i64(100) + blocks(0x8, word(selector, width, slots, first_bit=first)) + EOO
    expected, value = [Int64(100)], 100
    for slot in slots[:-1]:
        value -= slot
        expected.append(Int64(value))
    assert decode_column(data) == expected + [MISSING]


@pytest.mark.parametrize("selector,ext,value_bits,count_bits,unit", [
    (7, 1, 2, 4, 1), (7, 5, 7, 4, 1), (7, 9, 52, 4, 1),          # trailing zero bits
    (8, 1, 4, 4, 4), (8, 6, 24, 4, 4), (8, 7, 52, 4, 4),          # trailing zero nibbles
    (8, 8, 4, 5, 4), (8, 11, 13, 5, 4), (8, 13, 51, 5, 4),       # 5-bit nibble count
])
def test_extended_selectors_shift_in_trailing_zeros(selector, ext, value_bits, count_bits, unit):
    slot = value_bits + count_bits
    count = 56 // slot
    zeros = 3 if unit == 1 else 2  # 3 bits / 2 nibbles of trailing zeros
    w = selector | (ext << 4)
    for k in range(count):
        w |= ((1 << count_bits) | zeros) << (8 + k * slot)  # value 1 with `zeros` trailing zero units
    expected_delta = 1 << (zeros * unit)  # zigzag of this: a positive delta of half of it
    values = decode_column(i64(0) + blocks(0x8, w) + EOO)
    assert values == [Int64(k * expected_delta // 2) for k in range(count + 1)]


def test_extended_selector_shifts_128_bit_deltas_beyond_64_bits():
    # selector 8 extension 8: slots of 4 value bits + a 5-bit nibble count; 1 << (25 * 4) = 2**100
    w = 8 | (8 << 4) | (((1 << 5) | 25) << 8)
    for k in range(1, 6):
        w |= ((1 << 9) - 1) << (8 + 9 * k)  # skips
    zero = int.from_bytes(Decimal128("0").bid, "little")
    values = decode_column(lit(0x13, Decimal128("0").bid) + blocks(0x8, w) + EOO)
    assert values[1].bid == (zero + 2 ** 99).to_bytes(16, "little")  # zigzag 2**100 -> +2**99
    assert values[2:] == [MISSING] * 5


@pytest.mark.parametrize("w", [0, 7 | (10 << 4), 8 | (14 << 4), 8 | (15 << 4)])
def test_invalid_selectors_are_rejected(w):
    with pytest.raises(BSONColumnError, match="selector"):
        decode_column(i32(1) + blocks(0x8, w | (1 << 63)) + EOO)


def test_a_64_bit_value_shifted_beyond_64_bits_is_rejected():
    w = 8 | (8 << 4) | (((1 << 5) | 20) << 8)  # 1 << 80
    with pytest.raises(BSONColumnError):
        decode_column(i64(0) + blocks(0x8, w) + EOO)


def test_column_document_is_the_v1_column():
    raw, rows = column_document(i32(1) + ints(None, 1, None) + string("s") + EOO)
    assert rows == 5
    assert raw == bson.encode({"0": 1, "2": 2, "4": "s"})
