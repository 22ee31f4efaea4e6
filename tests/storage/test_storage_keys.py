"""tidemark.storage.keys: byte order of encoded keys == MongoDB's BSON comparison order."""

import datetime
import math
import re
import uuid

import pytest
from bson.binary import Binary
from bson.code import Code
from bson.datetime_ms import DatetimeMS
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.max_key import MaxKey
from bson.min_key import MinKey
from bson.objectid import ObjectId
from bson.regex import Regex
from bson.timestamp import Timestamp

from tidemark.storage.keys import (
    T_STRING,
    UNDEFINED,
    decode_key,
    encode_key,
    encode_value,
    prefix_end,
    type_bracket,
)

# Strictly increasing in MongoDB order; each inner list holds values MongoDB considers equal.
REFERENCE = [
    [MinKey()],
    [UNDEFINED],  # an empty array's key (mongod's undefined)
    [None],
    [math.nan, Decimal128("NaN"), Decimal128("-NaN")],
    [-math.inf, Decimal128("-Infinity")],
    [Decimal128("-1E+6000")],
    [-1.7976931348623157e308],
    [Int64(-(2**63))],
    [Int64(-(2**63) + 1)],
    [-(2**31) - 1],
    [-100, -100.0, Decimal128("-100"), Decimal128("-1.00E+2")],
    [-2.5, Decimal128("-2.5")],
    [-2],
    [-1.5],
    [-1, -1.0, Int64(-1), Decimal128("-1.0")],
    [-0.1],  # the double, slightly below -0.1 decimal
    [Decimal128("-0.1")],
    [-5e-324],
    [0, 0.0, -0.0, Int64(0), Decimal128("0"), Decimal128("-0"), Decimal128("0E-50")],
    [Decimal128("1E-6000")],
    [5e-324],
    [Decimal128("0.1")],
    [Decimal128("0.1000000000000000055511151231257827")],  # 0.1's exact value truncated to 34 digits
    [0.1],  # 0.1000000000000000055511151231257827021181583404541015625
    [Decimal128("0.1000000000000000055511151231257828")],
    [0.5, Decimal128("0.5")],
    [1, 1.0, Int64(1), Decimal128("1"), Decimal128("1.000")],
    [1.0000000000000002],
    [1.5],
    [2],
    [10, 10.0, Decimal128("1E+1")],
    [12],
    [100],
    [2**31 - 1],
    [2**31],
    [2**53, float(2**53)],
    [2**53 + 1],
    [Int64(2**63 - 2)],
    [Int64(2**63 - 1)],
    [9.223372036854775807e18],  # the double 2**63, above every long
    [1e300],
    [Decimal128("1E+6000")],
    [math.inf, Decimal128("Infinity")],
    [""],
    ["\x00"],
    ["\x00\x00"],
    ["\x00a"],
    ["A"],
    ["a"],
    ["a\x00"],
    ["a\x00b"],
    ["a\x01"],
    ["ab"],
    ["b"],
    ["é"],
    ["\U0001F600"],
    [{}],
    [{"a": None}],
    [{"a": 1}, {"a": 1.0}],
    [{"a": 1, "b": 1}],
    [{"a": 2}],
    [{"b": 0}],  # objects compare the value's type before the field name
    [{"a": "x"}],
    [{"b": "a"}],
    [{"a": {}}],
    [{"a": []}],
    [[]],
    [[None]],
    [[1], [Decimal128("1")]],
    [[1, 2]],
    [[1, "a"]],
    [[2]],
    [["a"]],
    [[{"a": 1}]],
    [[[1]]],
    [b""],
    [b"\xff"],
    [Binary(b"\x00", 5)],
    [b"\x00\x00"],
    [uuid.UUID(int=0)],
    [uuid.UUID(int=1)],
    [ObjectId("000000000000000000000000")],
    [ObjectId("000000000000000000000001")],
    [ObjectId("ffffffffffffffffffffffff")],
    [False],
    [True],
    [DatetimeMS(-(2**62))],
    [datetime.datetime(1969, 12, 31, 23, 59, 59, 999000)],
    [datetime.datetime(1970, 1, 1), DatetimeMS(0),
     datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)],
    [datetime.datetime(2024, 1, 1)],
    [DatetimeMS(2**62)],
    [Timestamp(0, 0)],
    [Timestamp(0, 1)],
    [Timestamp(1, 0)],
    [Regex("a", "")],
    [Regex("a", "i"), re.compile("a", re.I)],
    [Regex("b", "")],
    [Code("a")],
    [Code("a", {"x": 1})],
    [MaxKey()],
]


def test_reference_groups_encode_equal_within_and_increase_between():
    previous = None
    for group in REFERENCE:
        encodings = {encode_value(v) for v in group}
        assert len(encodings) == 1, f"values not encoded equal: {group!r}"
        (enc,) = encodings
        if previous is not None:
            assert previous[1] < enc, f"{previous[0]!r} should sort before {group[0]!r}"
        previous = (group[0], enc)


def test_every_pair_of_reference_values_compares_like_mongodb():
    flat = [(rank, v) for rank, group in enumerate(REFERENCE) for v in group]
    for rank_a, a in flat:
        ea = encode_value(a)
        for rank_b, b in flat:
            eb = encode_value(b)
            assert (ea < eb) == (rank_a < rank_b) and (ea == eb) == (rank_a == rank_b), (a, b)


def test_descending_component_reverses_order():
    values = [group[0] for group in REFERENCE]
    encoded = [encode_key([v], [-1]) for v in values]
    assert encoded == sorted(encoded, reverse=True)
    assert len(set(encoded)) == len(encoded)


def test_compound_keys_compare_component_wise():
    firsts = [None, -1, 0, 1, "a", "ab", [1], True]
    seconds = [MinKey(), 1, "a", "ab", {"x": 1}, MaxKey()]
    for directions in ([1, 1], [1, -1], [-1, 1], [-1, -1]):
        rows = [(i, j) for i in range(len(firsts)) for j in range(len(seconds))]
        keyed = sorted(rows, key=lambda r: encode_key([firsts[r[0]], seconds[r[1]]], directions))
        expected = sorted(rows, key=lambda r: (r[0] * directions[0], r[1] * directions[1]))
        assert keyed == expected, directions


def test_string_prefix_does_not_leak_into_next_component():
    # "a" followed by 2 must sort before "ab" followed by 1 (component-wise, not bytewise)
    assert encode_key(["a", 2]) < encode_key(["ab", 1])
    assert encode_key(["a\x00", 2]) > encode_key(["a", 3])


def test_bool_and_int_are_different_types():
    assert encode_value(True) != encode_value(1)
    assert encode_value(1) < encode_value(True)


def test_decode_key_round_trips_values():
    values = [None, 1, -2.5, Int64(2**40), Decimal128("1.23E-6000"), "a\x00b", {"a": [1, {"b": "c"}]},
              [], b"xy", Binary(b"z", 7), uuid.UUID(int=5), ObjectId(), True,
              datetime.datetime(2024, 5, 6, 7, 8, 9, 123000), DatetimeMS(2**62), Timestamp(5, 6),
              Regex("a.c", "im"), Code("f", {"x": 1}), MinKey(), MaxKey(), math.inf]
    for directions in ([1] * len(values), [-1] * len(values)):
        decoded = decode_key(encode_key(values, directions), directions)
        assert [encode_value(v) for v in decoded] == [encode_value(v) for v in values]


def test_decode_key_ignores_trailing_record_id():
    key = encode_key(["x", 5], [1, -1]) + (42).to_bytes(8, "big")
    assert decode_key(key, [1, -1]) == ("x", 5)


def test_decode_number_keeps_value_and_picks_natural_type():
    assert decode_key(encode_key([1.0]), [1]) == (1,)
    assert decode_key(encode_key([0.1]), [1]) == (0.1,)
    assert decode_key(encode_key([Int64(2**62)]), [1])[0] == 2**62
    assert math.isnan(decode_key(encode_key([math.nan]), [1])[0])


def test_prefix_end_bounds_every_extension():
    p = encode_key(["abc"])
    end = prefix_end(p)
    assert p < p + b"\xff\xff" < end
    assert encode_key(["abd"]) > end or encode_key(["abd"]) >= end
    assert prefix_end(b"\x01\xff") == b"\x02"
    assert prefix_end(b"\xff") is None


def test_type_bracket_contains_all_strings_only():
    lo, hi = type_bracket(T_STRING)
    for v in ["", "a", "\U0001F600"]:
        assert lo <= encode_value(v) < hi
    for v in [1, math.inf, {}, MaxKey()]:
        assert not (lo <= encode_value(v) < hi)


def test_unsupported_type_is_a_clear_type_error():
    with pytest.raises(TypeError, match="cannot encode"):
        encode_value(object())
