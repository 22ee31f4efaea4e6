"""tidemark.storage.keys orders every number by its exact value, as mongod's KeyString does and as the
matcher compares them (mongod's compareDecimalToDouble is exact): a double against the Decimal128 values
next to it, int64 beyond 2**53 against doubles, NaN / -0 / infinities and the exponent extremes.
The oracle is the matcher's comparison (``tidemark.query.values.compare``)."""

import math
import struct

from bson.decimal128 import Decimal128
from bson.int64 import Int64
from harness.bson_numbers import neighbours
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.query.values import compare
from tidemark.storage.keys import UNDEFINED, decode_key, encode_key, encode_value
from tidemark.storage.keyspan import leading_components_length

special_doubles = st.sampled_from([0.0, -0.0, math.inf, -math.inf, math.nan, 5e-324, -5e-324, 2.2250738585072014e-308,
                                   1.7976931348623157e308, -1.7976931348623157e308, 0.1, -0.1, 1 / 3, 2.0 ** 53,
                                   2.0 ** 63, -(2.0 ** 63), 1e300, 1e-300])
doubles = st.one_of(special_doubles, st.floats(allow_nan=True, allow_infinity=True),
                    st.integers(0, 2 ** 64 - 1).map(lambda b: struct.unpack("<d", struct.pack("<Q", b))[0]),
                    st.integers(-2 ** 60, 2 ** 60).map(float))
big_ints = st.one_of(st.integers(-8, 8).map(lambda k: 2 ** 53 + k), st.integers(-8, 8).map(lambda k: -(2 ** 53) + k),
                     st.sampled_from([2 ** 63 - 1, -(2 ** 63), 2 ** 63 - 1024, 2 ** 62 + 1]))
int64s = st.one_of(big_ints, st.integers(-(2 ** 63), 2 ** 63 - 1)).map(Int64)
int32s = st.integers(-(2 ** 31), 2 ** 31 - 1)


decimals = st.one_of(
    doubles.flatmap(lambda f: st.sampled_from(neighbours(f))),
    st.sampled_from(["NaN", "-NaN", "Infinity", "-Infinity", "0", "-0", "0E-6176", "1E+6144", "-1E+6144",
                     "9.999999999999999999999999999999999E+6144", "1E-6176", "-1E-6176",
                     "9007199254740993", "-9007199254740993", "9223372036854775807.5"]).map(Decimal128),
)
numbers = st.one_of(doubles, int32s, int64s, decimals)


def _sign(a: bytes, b: bytes) -> int:
    return (a > b) - (a < b)


@settings(max_examples=3000, deadline=None)
@given(numbers, numbers)
def test_number_keys_compare_as_the_matcher_compares_the_numbers(a, b):
    assert _sign(encode_value(a), encode_value(b)) == compare(a, b)
    # descending components invert the order; a following component never leaks into the comparison
    assert _sign(encode_key([a], [-1]), encode_key([b], [-1])) == -compare(a, b)
    order = compare(a, b)
    assert _sign(encode_key([a, "zzz"]), encode_key([b, ""])) == (order if order else 1)


@settings(max_examples=1000, deadline=None)
@given(numbers, st.sampled_from([1, -1]))
def test_number_keys_decode_to_an_equal_number_that_encodes_the_same(v, direction):
    key = encode_key([v, "after"], [direction, 1])
    decoded, after = decode_key(key, [direction, 1])
    assert compare(decoded, v) == 0 and after == "after"
    assert encode_key([decoded], [direction]) == encode_key([v], [direction])
    assert leading_components_length(key, 1) == len(encode_key([v], [direction]))


def test_a_double_sorts_above_the_34_digit_decimal_below_it():
    # the defect: 0.1 is 0.1000000000000000055511151231257827021..., which rounded to 34 digits was
    # the decimal's key, so {$gt: that decimal} through an index missed the double
    dec = Decimal128("0.1000000000000000055511151231257827")
    assert encode_value(dec) < encode_value(0.1) < encode_value(Decimal128("0.1000000000000000055511151231257828"))
    assert encode_value(-0.1) < encode_value(Decimal128("-0.1000000000000000055511151231257827"))
    assert encode_value(float(2 ** 53)) < encode_value(Int64(2 ** 53 + 1)) < encode_value(float(2 ** 53 + 2))


def test_undefined_sorts_between_minkey_and_null_and_is_one_component():
    from bson.min_key import MinKey

    assert encode_value(MinKey()) < encode_value(UNDEFINED) < encode_value(None) < encode_value(math.nan)
    key = encode_key([UNDEFINED, 5], [-1, 1])
    assert leading_components_length(key, 1) == 1
    assert decode_key(key, [-1, 1]) == (None, 5)  # a reply shows it as null
