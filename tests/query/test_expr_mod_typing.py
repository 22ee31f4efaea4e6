"""$mod's result type and value for every pair of int/long/double/decimal operands, as mongod 7.0's
ExpressionMod computes them (expression.cpp; jstests expression_mod.js and projection_expr_mod.js):

- either side decimal: a decimal (truncating remainder);
- a double dividend, or a double divisor that is not ``Value::integral()`` (an exact int32): fmod's double;
- otherwise (ints, longs and int32-integral double divisors): the truncating integer remainder, a long
  if either side is a long, else an int (``8 % 3.0`` is the int 2, ``NumberLong(8) % 3.0`` the long 2).
"""

import math
from decimal import Decimal

import pytest
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.protocol.errors import MongoError
from tidemark.query.expressions import evaluate

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1

_INTS = st.integers(INT32_MIN, INT32_MAX)
_LONGS = st.integers(-(2**63), 2**63 - 1).map(Int64)
_DOUBLES = st.one_of(
    st.integers(-(2**40), 2**40).map(float),  # integral doubles, in and beyond the int32 range
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([3.0, -3.0, 2.0**31, -(2.0**31), 2.0**31 - 1, 0.5, -0.0]),
)
_DECIMALS = st.decimals(allow_nan=False, allow_infinity=False, places=3, min_value=-(10**6), max_value=10**6).map(
    lambda d: Decimal128(str(d)))
_NUMBERS = st.one_of(_INTS, _LONGS, _DOUBLES, _DECIMALS)


def _trunc_rem(x: int, y: int) -> int:
    r = abs(x) % abs(y)
    return -r if x < 0 else r


def expected_mod(x, y):
    """The answer of mongod 7.0's ExpressionMod, from its rules (not from Tidemark's code)."""
    if isinstance(x, Decimal128) or isinstance(y, Decimal128):
        dx = x.to_decimal() if isinstance(x, Decimal128) else Decimal(repr(x) if isinstance(x, float) else int(x))
        dy = y.to_decimal() if isinstance(y, Decimal128) else Decimal(repr(y) if isinstance(y, float) else int(y))
        return ("decimal", None if dy == 0 else (dx, dy))
    if float(y) == 0:
        return ("error", 16610)
    y_integral = not isinstance(y, float) or (math.isfinite(y) and y == int(y) and INT32_MIN <= y <= INT32_MAX)
    if isinstance(x, float) or not y_integral:
        fx, fy = float(x), float(y)
        return ("double", math.fmod(fx, fy) if math.isfinite(fx) else math.nan)
    r = _trunc_rem(int(x), int(y))
    if isinstance(x, Int64) or isinstance(y, Int64):
        return ("long", Int64(r))
    return ("int", r)


@settings(max_examples=400, deadline=None)
@given(x=_NUMBERS, y=_NUMBERS)
def test_mod_result_type_and_value_follow_mongod_for_every_numeric_pair(x, y):
    kind, want = expected_mod(x, y)
    if kind == "error" or (kind == "decimal" and want is None):
        with pytest.raises(MongoError) as e:
            evaluate({"$mod": [{"$literal": x}, {"$literal": y}]}, {})
        assert e.value.code == 16610
        return
    got = evaluate({"$mod": [{"$literal": x}, {"$literal": y}]}, {})
    if kind == "decimal":
        assert isinstance(got, Decimal128)
        return  # the decimal value itself is pinned by test_expr_numeric_jstests.py
    assert type(got) is type(want), (x, y, got, want)
    if isinstance(want, float) and math.isnan(want):
        assert math.isnan(got)
    else:
        assert got == want


@pytest.mark.parametrize("x,y,want", [
    (8, 3.0, 2), (Int64(8), 3.0, Int64(2)), (-8, 3.0, -2), (8, -3.0, 2),  # int32-integral double divisors
    (INT32_MIN, -1.0, 0), (Int64(-(2**63)), -1.0, Int64(0)),  # mongoSafeMod: no overflow trap
    (8, 2.0**31, 8.0), (Int64(500000000000), 450000000000.0, 50000000000.0),  # beyond int32: fmod
    (8.0, 3, 2.0), (8, 3.5, 1.0),
])
def test_mod_integral_double_divisor_edges(x, y, want):
    got = evaluate({"$mod": [{"$literal": x}, {"$literal": y}]}, {})
    assert (got, type(got)) == (want, type(want))
