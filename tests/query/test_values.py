"""BSON comparison order, equality and $type names (expected results from MongoDB's documented order)."""

import datetime as dt
import re
import uuid

import pytest
from bson.binary import Binary
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.max_key import MaxKey
from bson.min_key import MinKey
from bson.objectid import ObjectId
from bson.regex import Regex
from bson.timestamp import Timestamp

from tidemark.query.values import (
    MISSING,
    bson_type_name,
    bson_type_number,
    canonical_type_order,
    compare,
    equal,
    is_number,
    sort_key,
)

# One representative per bracket, in BSON order.
ORDERED_BRACKETS = [
    MinKey(),
    None,
    1,
    "a",
    {"a": 1},
    [1],
    Binary(b"x", 0),
    ObjectId("000000000000000000000001"),
    False,
    dt.datetime(2020, 1, 1),
    Timestamp(1, 1),
    Regex("a", "i"),
    MaxKey(),
]


def test_type_brackets_follow_bson_order():
    for lo, hi in zip(ORDERED_BRACKETS, ORDERED_BRACKETS[1:], strict=False):
        assert compare(lo, hi) == -1, (lo, hi)
        assert compare(hi, lo) == 1
        assert canonical_type_order(lo) < canonical_type_order(hi)


@pytest.mark.parametrize(
    "a,b",
    [(1, 1.0), (Int64(5), 5), (Decimal128("2.5"), 2.5), (0.0, -0.0), (float("nan"), Decimal128("NaN"))],
)
def test_numbers_equal_across_types(a, b):
    assert equal(a, b)
    assert compare(a, b) == 0
    assert sort_key(a) == sort_key(b)


def test_nan_sorts_below_every_number():
    assert compare(float("nan"), float("-inf")) == -1
    assert compare(float("nan"), Decimal128("-Infinity")) == -1
    assert compare(float("nan"), None) == 1  # still in the number bracket


def test_large_int64_compares_exactly_with_double():
    assert compare(Int64(2**53 + 1), float(2**53)) == 1
    assert compare(Decimal128("0.1"), 0.1) != 0  # 0.1 double is not exactly 1/10


def test_bool_is_not_a_number():
    assert not is_number(True)
    assert compare(True, 1) == 1  # bool bracket is above numbers
    assert not equal(True, 1)
    assert bson_type_name(True) == "bool"


def test_strings_compare_binary():
    assert compare("B", "a") == -1
    assert compare("a", "ab") == -1
    assert compare("é", "z") == 1


def test_objects_compare_type_then_name_then_value():
    assert compare({"a": 1}, {"b": 0}) == -1
    assert compare({"b": 1}, {"a": "x"}) == -1  # number bracket before string, name second
    assert compare({"a": 1}, {"a": 1, "b": 1}) == -1
    assert compare({}, {"a": MinKey()}) == -1


def test_arrays_compare_element_wise():
    assert compare([1, 2], [1, 3]) == -1
    assert compare([1], [1, 0]) == -1
    assert compare([2], [1, 5]) == 1
    assert compare([], [MinKey()]) == -1


def test_missing_compares_as_null_and_is_falsy():
    assert not MISSING
    assert repr(MISSING) == "MISSING"
    assert equal(MISSING, None)
    assert MISSING is not None


def test_binary_compares_length_then_subtype_then_bytes():
    assert compare(Binary(b"zz", 0), Binary(b"aaa", 0)) == -1
    assert compare(Binary(b"a", 5), Binary(b"b", 0)) == 1
    assert equal(uuid.UUID(int=1), Binary(uuid.UUID(int=1).bytes, 4))


def test_dates_timestamps_regexes():
    assert compare(dt.datetime(1960, 1, 1), dt.datetime(1970, 1, 1)) == -1
    assert compare(Timestamp(1, 2), Timestamp(1, 1)) == 1
    assert equal(Regex("a", "i"), re.compile("a", re.I))
    assert compare(Regex("a", ""), Regex("a", "i")) == -1


def test_sort_key_orders_like_compare():
    values = [3, "b", None, [1], {"x": 1}, 2.5, True, MinKey(), MaxKey(), Int64(-4), "a", float("nan")]
    by_key = sorted(values, key=sort_key)
    for lo, hi in zip(by_key, by_key[1:], strict=False):
        assert compare(lo, hi) <= 0


@pytest.mark.parametrize(
    "value,name,number",
    [
        (1.5, "double", 1),
        ("s", "string", 2),
        ({}, "object", 3),
        ([], "array", 4),
        (Binary(b""), "binData", 5),
        (ObjectId(), "objectId", 7),
        (False, "bool", 8),
        (dt.datetime(2000, 1, 1), "date", 9),
        (None, "null", 10),
        (Regex("x"), "regex", 11),
        (1, "int", 16),
        (2**40, "long", 18),
        (Int64(1), "long", 18),
        (Timestamp(0, 0), "timestamp", 17),
        (Decimal128("1"), "decimal", 19),
        (MinKey(), "minKey", -1),
        (MaxKey(), "maxKey", 127),
    ],
)
def test_type_names_and_numbers(value, name, number):
    assert bson_type_name(value) == name
    assert bson_type_number(value) == number


def test_out_of_range_dates_and_code_and_dbref_have_their_brackets():
    from bson.code import Code
    from bson.datetime_ms import DatetimeMS
    from bson.dbref import DBRef

    far_past = DatetimeMS(-(2**62))
    assert compare(far_past, dt.datetime(1900, 1, 1)) == -1
    assert bson_type_name(far_past) == "date"
    assert compare(Code("a"), Regex("z")) == 1  # javascript sorts after regex
    assert bson_type_name(Code("x")) == "javascript"
    assert compare(DBRef("c", 1), {"$ref": "c", "$id": 1}) == 0  # a DBRef is an object
