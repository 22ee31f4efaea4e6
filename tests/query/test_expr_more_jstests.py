"""Units behind the fixes of tests/e2e/test_jstests_expressions_more.py: $binarySize, $bsonSize and the
field-path name checks of expressions."""

import datetime as dt
import math
import uuid

import bson
import pytest
from bson.binary import Binary
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from hypothesis import given
from hypothesis import strategies as st

from tidemark.protocol.errors import MongoError
from tidemark.query.expressions import compile_expression, evaluate
from tidemark.query.values import MISSING


def error_code(expr, doc=None) -> int:
    with pytest.raises(MongoError) as info:
        evaluate(expr, doc or {})
    return info.value.code


@pytest.mark.parametrize("value,expected", [
    ("", 0), ("abc", 3), ("ab\0c", 4), ("é", 2), ("\U0001f600", 4),
    (Binary(b""), 0), (Binary(b"\x00\x01\x02"), 3), (Binary(b"xy", 5), 2), (b"abcd", 4),
    (uuid.UUID(int=7), 16),  # subtype 4, decoded as a UUID
    (None, None), (MISSING, None),
])
def test_binary_size(value, expected):
    """The UTF-8 byte length of a string, the length of any BinData subtype; null for nullish."""
    assert evaluate({"$binarySize": "$x"}, {} if value is MISSING else {"x": value}) == expected


@pytest.mark.parametrize("value", [42, 1.5, Int64(1), True, [], {}, [b"x"]])
def test_binary_size_of_other_types_fails(value):
    assert error_code({"$binarySize": {"$literal": value}}) == 51276


def test_binary_size_arity():
    assert error_code({"$binarySize": ["a", "b"]}) == 16020


_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text("abc", min_size=1, max_size=2), inner, max_size=3),
    max_leaves=8)


@given(st.dictionaries(st.text("xyz", min_size=1, max_size=3), _VALUES, max_size=4))
def test_bson_size_is_the_encoded_size(doc):
    """``$bsonSize`` of any document is the length of its BSON encoding (int, long, double sizes)."""
    assert evaluate({"$bsonSize": {"$literal": doc}}, {}) == len(bson.encode(doc))


def test_bson_size_of_current_and_nullish():
    doc = {"_id": 1, "a": "x" * 10}
    assert evaluate({"$bsonSize": "$$CURRENT"}, doc) == len(bson.encode(doc))
    assert evaluate({"$bsonSize": "$nope"}, doc) is None
    assert evaluate({"$bsonSize": None}, doc) is None


@pytest.mark.parametrize("value", [123, "abc", Binary(b"a"), [123], [{"x": 1}]])
def test_bson_size_of_non_documents_fails(value):
    assert error_code({"$bsonSize": {"$literal": value}}) == 31393


@pytest.mark.parametrize("path", ["$f\0oo", "$a.b\0", "$$CURRENT.x\0y", "$$ROOT.\0"])
def test_field_path_with_nul_fails_at_parse(path):
    """mongod's FieldPath refuses a NUL in any component (16411), when the expression is parsed."""
    with pytest.raises(MongoError) as info:
        compile_expression({"$eq": ["a", path]})
    assert info.value.code == 16411


@given(st.text())
def test_case_conversion_is_ascii_only(s):
    """$toUpper/$toLower change ASCII letters only (mongod's C-locale toupper/tolower byte by byte):
    the UTF-8 bytes change exactly as ``bytes.upper``/``bytes.lower`` change them."""
    assert evaluate({"$toUpper": {"$literal": s}}, {}).encode("utf-8", "surrogatepass") == \
        s.encode("utf-8", "surrogatepass").upper()
    assert evaluate({"$toLower": {"$literal": s}}, {}).encode("utf-8", "surrogatepass") == \
        s.encode("utf-8", "surrogatepass").lower()


@given(st.text(max_size=6), st.text(max_size=6))
def test_strcasecmp_compares_ascii_folded_bytes(a, b):
    """$strcasecmp: the UTF-8 bytes, ASCII letters folded, compared bytewise; antisymmetric."""
    x, y = (v.encode("utf-8", "surrogatepass").upper() for v in (a, b))
    expected = (x > y) - (x < y)
    assert evaluate({"$strcasecmp": [{"$literal": a}, {"$literal": b}]}, {}) == expected
    assert evaluate({"$strcasecmp": [{"$literal": b}, {"$literal": a}]}, {}) == -expected


@pytest.mark.parametrize("a,b,expected", [("ó", "Ó", 1), ("Ó", "ó", -1), ("A", "a", 0), ("ÿ", "Ÿ", -1)])
def test_strcasecmp_non_ascii_letters_do_not_fold(a, b, expected):
    assert evaluate({"$strcasecmp": [a, b]}, {}) == expected


LMAX, LMIN = 2**63 - 1, -(2**63)


@pytest.mark.parametrize("expr,expected", [
    # a long sum overflowing continues as (long so far as a double) + (operand as a double): 2^63 + 1025.0
    # rounds up to 2^63 + 2048, where the exact 2^63 + 1024 would round (to even) down to 2^63
    ({"$add": [Int64(LMAX), 1025]}, 9223372036854777856.0),
    ({"$add": [Int64(LMAX), 1025, 1]}, 9223372036854777856.0 + 1.0),
    ({"$add": [Int64(LMAX), Int64(1)]}, 9.223372036854776e18),
    ({"$add": [2**31 - 1, 1]}, Int64(2**31)),
    ({"$add": [-0.0, -0.0]}, 0.0),
    # $subtract overflowing: the operands' difference as doubles
    ({"$subtract": [Int64(LMIN), 1025]}, -9223372036854777856.0),
    ({"$subtract": [Int64(LMAX), Int64(-1)]}, 9.223372036854776e18),
    # $multiply overflowing: the product of the operands as doubles, in order
    ({"$multiply": [Int64(2**53 + 1), Int64(3), Int64(2**10)]}, float(2**53 + 1) * 3.0 * 1024.0),
    ({"$multiply": [Int64(2**62), 4, 0.5]}, 2.0**63),
    ({"$multiply": [Int64(2**40 + 1), Int64(2**40 + 1), 1.0]}, float(2**40 + 1) * float(2**40 + 1)),
    ({"$multiply": [Int64(LMAX), 2, 0]}, 0.0),
    ({"$multiply": [46341, 46341]}, Int64(46341 * 46341)),
])
def test_integer_overflow_goes_on_in_doubles(expr, expected):
    """mongod's AddState / MultiplyState / $subtract: an int64 result overflowing continues from the
    operands as doubles (not the exact result rounded once); an int32 one widens to long."""
    got = evaluate({op: [{"$literal": a} for a in args] for op, args in expr.items()}, {})
    assert type(got) is type(expected) and got == expected, (got, expected)


@pytest.mark.parametrize("base,exp,expected", [
    (2**31 - 1, 30, math.pow(2147483647.0, 30.0)),  # beyond a long: pow() of doubles
    (2**31 - 1, 34, float("inf")),  # beyond the doubles: infinity, not an Overflow error
    (2**31 - 1, 40, float("inf")),  # beyond the doubles: infinity, not an Overflow error
    (-(2**31), 41, float("-inf")),
    (Int64(3), 40, math.pow(3.0, 40.0)),
    (Int64(-3037000500), 2, math.pow(-3037000500.0, 2.0)),
    (3, 35, Int64(50031545098999707)),
    (-10.0, 309.0, float("-inf")), (-10.0, 310.0, float("inf")), (10.0, 309, float("inf")),
    (-8.0, 1 / 3, float("nan")), (0.5, -1075.0, float("inf")), (-0.5, -1075.0, float("-inf")),
])
def test_pow_past_the_integers_is_c_pow(base, exp, expected):
    """$pow past a long is C's pow() of the operands as doubles: ±infinity when it overflows (never
    error 15), NaN for a negative base and a fractional exponent."""
    got = evaluate({"$pow": [{"$literal": base}, {"$literal": exp}]}, {})
    assert type(got) is type(expected)
    assert (math.isnan(got) and math.isnan(expected)) or got == expected, (got, expected)


_T0 = dt.datetime(2023, 5, 11, 8, 34, 25, 2000)  # 1683794065002 ms


def _ms(d: dt.datetime) -> int:
    return round((d - dt.datetime(1970, 1, 1)).total_seconds() * 1000)


@pytest.mark.parametrize("n,add_delta,sub_delta", [
    (0.5, 1, 1), (1.5, 2, 2), (2.5, 3, 3), (1.4, 1, 1),
    # $add rounds the double total (T0 - 0.5 = ...1.5 rounds up), $subtract the operand
    (-0.5, 0, -1), (-2.5, -2, -3),
    # T0 + 0.49999999999999994 is ...2.5 as a double, rounded away from zero; the operand alone rounds to 0
    (0.49999999999999994, 1, 0),
    (Decimal128("0.5"), 0, 0), (Decimal128("1.5"), 2, 2), (Decimal128("2.5"), 2, 2), (Decimal128("-2.5"), -2, -2),
    (Int64(7), 7, 7), (7, 7, 7),
])
def test_date_plus_and_minus_numbers_round(n, add_delta, sub_delta):
    """A date and a double: rounded half away from zero (llround); a decimal: half to even
    (subtract.js; mongod's AddState rounds the whole total, $subtract the number)."""
    added = evaluate({"$add": [{"$literal": _T0}, {"$literal": n}]}, {})
    assert _ms(added) - _ms(_T0) == add_delta
    minus = evaluate({"$subtract": [{"$literal": _T0}, {"$literal": n}]}, {})
    assert _ms(_T0) - _ms(minus) == sub_delta


@pytest.mark.parametrize("expr", [
    {"$add": [{"$literal": _T0}, float("nan")]}, {"$add": [{"$literal": _T0}, 1e300]},
    {"$add": [{"$literal": _T0}, Decimal128("NaN")]}, {"$subtract": [{"$literal": _T0}, float("inf")]},
    {"$subtract": [{"$literal": _T0}, -9.3e18]}, {"$subtract": [{"$literal": _T0}, Decimal128("-Infinity")]},
])
def test_date_arithmetic_overflow(expr):
    assert error_code(expr) == 15


@pytest.mark.parametrize("op", ["$add", "$multiply"])
def test_first_null_operand_returns_null(op):
    assert evaluate({op: [1, None, "x"]}, {}) is None
    assert evaluate({op: [1, "$nope", {"$literal": [1]}]}, {}) is None
    assert error_code({op: ["x", None]}) == 14
