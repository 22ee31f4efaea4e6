"""The BSONColumn encoder (server/timeseries/bsoncolumn_encode.py): what it writes decodes to exactly
the values given. Its bytes are checked against the format here only where the choice is the
encoder's (scale, interleaving); the decoder is checked against hand-built bytes elsewhere."""

from __future__ import annotations

import datetime
import math
import random
import struct
import uuid

import pytest
from bson import Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp
from bson.binary import Binary
from bson.code import Code
from bson.datetime_ms import DatetimeMS

from tidemark.timeseries.bsoncolumn import MISSING, decode_column
from tidemark.timeseries.bsoncolumn_encode import encode_column


def same(a, b) -> bool:
    """Equal with the same type, NaN equal to NaN and -0.0 different from 0.0 (recursively)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return struct.pack("<d", a) == struct.pack("<d", b) or (math.isnan(a) and math.isnan(b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def round_trip(values: list, **kwargs) -> bytes:
    data = encode_column(values, **kwargs)
    decoded = decode_column(data)
    assert len(decoded) == len(values)
    for k, (want, got) in enumerate(zip(values, decoded, strict=True)):
        assert same(want, got), (k, want, got)
    return data


T0 = datetime.datetime(2024, 1, 1)


@pytest.mark.parametrize("values", [
    [T0 + datetime.timedelta(seconds=k) for k in range(1000)],
    [T0 + datetime.timedelta(milliseconds=k * k) for k in range(300)] + [MISSING, T0],
    [k * 7 for k in range(300)] + [2 ** 31 - 1, -(2 ** 31)],
    [Int64(5), Int64(2 ** 62), Int64(-(2 ** 63)), Int64(0), Int64(2 ** 63 - 1)],
    [1.5, MISSING, 2.25, MISSING, -0.0, 0.0, float("nan"), float("inf"), -1e300, 3.0],
    [round(k * 0.1, 1) for k in range(500)],
    [True, False, True, True, MISSING, False],
    ["a", "ab", "abc", "x" * 20, "x" * 20, "", "z", "hé"],
    [ObjectId() for _ in range(30)] + [ObjectId("65a6eba7e6d2e848e08c3750")],
    [Decimal128("1.5"), Decimal128("2.5"), Decimal128("-1E+100"), Decimal128("NaN")],
    [Timestamp(1000 + k, k % 3) for k in range(100)],
    [b"abcd", b"abce", b"abcd" * 5, Binary(b"xy", 0x80), uuid.UUID(int=5), uuid.UUID(int=6)],
    # (a {$ref, $id} subdocument is a document like any other: protocol.codec decodes it so)
    [None, None, MinKey(), MaxKey(), Regex("a", "i"), Code("x"), Code("y"), "sym", {"$ref": "c", "$id": 1}],
    [[1, 2], [1, 2], [], {"a": 1}, {"a": 1}, {}],
    [DatetimeMS(-(2 ** 62)), DatetimeMS(2 ** 62)],
    [MISSING] * 500 + [1] + [MISSING] * 300,
    [],
])
def test_every_kind_of_value_round_trips(values):
    round_trip(values)


@pytest.mark.parametrize("values,nibble", [
    ([1.0, 2.0, 3.0], 0x9), ([1.5, 1.6], 0xA), ([0.25, 0.26], 0xB), ([1.0001, 1.0002], 0xC),
    ([1.00000001, 1.5], 0xD), ([0.1, 1 / 3], 0x8), ([-0.0, -5e-324], 0x8),
])
def test_doubles_take_the_smallest_exact_scale(values, nibble):
    data = round_trip(values)
    assert data[10] >> 4 == nibble  # after the 10-byte double literal


def test_objects_go_to_interleaved_sections():
    values = [{"a": k, "b": {"c": k / 4, "d": "x"}} for k in range(200)]
    data = round_trip(values)
    assert data[0] == 0xF1 and len(data) < 200
    literal = round_trip(values, interleave=False)
    assert literal[0] == 0x03


def test_objects_with_changing_fields_share_a_section():
    values = [{"a": 1}, {"a": 2, "b": "x"}, MISSING, {"b": "y"}, {"z": [1, 2, 3]}, {"a": 3, "z": [4]}]
    data = round_trip(values)
    assert data.count(0xF1) == 1


def test_incompatible_objects_start_new_sections_or_literals():
    values = [{"a": 1, "b": 2}, {"b": 1, "a": 2}, {"a": {"x": 1}}, {"e": {}}, {}, 5, {"a": 1}]
    round_trip(values)


def test_long_runs_use_rle():
    assert len(round_trip([7] * 5000)) < 60
    assert len(round_trip([MISSING] * 5000 + [1.5] * 5000)) < 120


def test_random_columns_round_trip():
    rng = random.Random(7)

    def value():
        k = rng.random()
        if k < 0.1:
            return MISSING
        if k < 0.25:
            return rng.randint(-5, 5)
        if k < 0.45:
            return round(rng.uniform(-100, 100), rng.randint(0, 9))
        if k < 0.55:
            return rng.choice(["a", "bb", "hello world", "x" * 17])
        if k < 0.7:
            return {"a": rng.randint(0, 3), "b": {"c": rng.random()}} if rng.random() < 0.5 else {"a": 1.5}
        if k < 0.8:
            return T0 + datetime.timedelta(milliseconds=rng.randint(0, 10 ** 9))
        if k < 0.9:
            return Int64(rng.randint(-(2 ** 63), 2 ** 63 - 1))
        return rng.choice([True, False, None])

    for _ in range(150):
        round_trip([value() for _ in range(rng.randint(0, 200))])
