"""Bit-test operators over decimals: mongod 7.0's ``BitTestMatchExpression`` checks only doubles for NaN,
range and integrality; any other number is read with ``BSONElement::numberLong()``, which for a decimal
is ``Decimal128::toLong()``: rounded half to even, and NaN, infinities and values beyond 64 bits give
the integer indefinite LLONG_MIN (0x8000000000000000). (8.0 stopped matching such decimals.)"""

import decimal

from bson.binary import Binary
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.query.match import compile_filter
from tidemark.query.match_parse import parse_filter

LLONG_MIN = -(2**63)


def _bits(value: int, positions) -> tuple[bool, bool, bool, bool]:
    """(allSet, anySet, allClear, anyClear) of ``value`` read as a 64-bit two's complement integer."""
    bits = [bool(value >> p & 1) if p < 64 else value < 0 for p in positions]
    return all(bits), any(bits), not any(bits), not all(bits)


def _matches(value, positions):
    return tuple(compile_filter({"a": {op: positions}})({"a": value})
                 for op in ("$bitsAllSet", "$bitsAnySet", "$bitsAllClear", "$bitsAnyClear"))


def test_decimals_round_half_to_even():
    assert _matches(Decimal128("2.5"), [1]) == _bits(2, [1])
    assert _matches(Decimal128("3.5"), [2]) == _bits(4, [2])
    assert _matches(Decimal128("1.1"), [0]) == _bits(1, [0])
    assert _matches(Decimal128("-1.1"), list(range(70))) == _bits(-1, list(range(70)))
    # a zero of any exponent is 0, not a value beyond 64 bits (found by the family below)
    assert _matches(Decimal128("0E+20"), [63]) == _bits(0, [63])
    assert _matches(Decimal128("-0E+6111"), [0, 63]) == _bits(0, [0, 63])


def test_invalid_decimals_read_as_llong_min():
    for text in ("NaN", "-NaN", "Infinity", "-Infinity", "1E+30", "-9223372036854775809", "9223372036854775807.5"):
        assert _matches(Decimal128(text), [63]) == (True, True, False, False), text
        assert _matches(Decimal128(text), [0, 62]) == (False, False, True, True), text


def test_doubles_are_still_checked():
    for value in (float("nan"), 1.5, float("inf"), 2.0**63, -(2.0**64)):
        assert _matches(value, [0]) == (False, False, False, False), value


@settings(max_examples=300, deadline=None)
@given(value=st.one_of(
    st.builds(lambda digits, exponent: Decimal128(f"{digits}E{exponent}"), st.integers(-(10**20), 10**20),
              st.integers(-25, 25)),
    st.sampled_from([Decimal128(t) for t in ("NaN", "Infinity", "-Infinity", "1E+6144", "-1E-6176")])),
    positions=st.lists(st.integers(0, 80), max_size=4))
def test_decimal_bit_tests_follow_numberlong(value, positions):
    d = value.to_decimal()
    long = LLONG_MIN
    if d.is_finite():
        n = int(d.to_integral_value(rounding=decimal.ROUND_HALF_EVEN))
        long = n if LLONG_MIN <= n < 2**63 else LLONG_MIN
    assert _matches(value, positions) == _bits(long, positions)


# -- positions anywhere up to mongod's 2^31 - 1, over numbers and BinData ------------------------------

_POSITIONS = st.lists(st.one_of(st.integers(0, 80), st.integers(0, 2**31 - 1)), max_size=6)


def _binary_bits(data: bytes, positions) -> tuple[bool, bool, bool, bool]:
    """mongod's bit test of a BinData value: bit p of byte p // 8 (little-endian), clear past the end."""
    bits = [p < 8 * len(data) and bool(data[p >> 3] >> (p & 7) & 1) for p in positions]
    return all(bits), any(bits), not any(bits), not all(bits)


@settings(max_examples=150, deadline=None)
@given(value=st.integers(-(2**63), 2**63 - 1), positions=_POSITIONS)
def test_numbers_against_far_positions(value, positions):
    """Every position from 63 on is a number's sign bit, however far (2^31 - 1 builds no 2^31-bit mask)."""
    assert _matches(Int64(value), positions) == _bits(value, positions)


@settings(max_examples=150, deadline=None)
@given(data=st.binary(max_size=12), positions=_POSITIONS)
def test_binaries_against_far_positions(data, positions):
    assert _matches(Binary(data), positions) == _binary_bits(data, positions)


def test_a_far_position_builds_a_bounded_mask():
    node = parse_filter({"a": {"$bitsAllSet": [2**31 - 1, 3]}})
    assert node.mask.bit_length() <= 8 * 16 * 1024 * 1024 + 1
