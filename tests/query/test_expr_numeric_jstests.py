"""Numeric and conversion expressions as mongod 7.0 answers them: double -> decimal conversion with 15
digits, Intel-library rounding of decimal logarithms, powers and trigonometry, $mod result types,
$round/$trunc places, $convert targets. Expected values come from MongoDB's jstests
(log_pow_exp.js, expression_trigonometric.js, round_trunc.js, convert.js, expression_mod.js) and from
mongod's source where a jstest has no case."""

import math
from decimal import Decimal

import pytest
from bson.decimal128 import Decimal128
from bson.int64 import Int64

from tidemark.protocol.errors import MongoError
from tidemark.query import expr_base
from tidemark.query.expressions import evaluate


def same(a, b) -> bool:
    """Equal values of the same BSON type; decimals by their exact string (2 != 2.000)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, Decimal128):
        return str(a) == str(b)
    return a == b


def code_of(expr) -> int:
    with pytest.raises(MongoError) as e:
        evaluate(expr, {})
    return e.value.code


# --------------------------------------------------------------------------------------------------
# conversions


@pytest.mark.parametrize("value,expected", [
    (1.9, "1.90000000000000"),
    (12.5, "12.5000000000000"),
    (0.1, "0.100000000000000"),
    (0.9999999999999994, "0.999999999999999"),  # the low exponent guess first keeps 15 nines
    (100000.0, "100000.000000000"),
    (1e-5, "0.0000100000000000000"),
    (-2.0, "-2.00000000000000"),
    (0.0, "0"),
    (-0.0, "-0"),
])
def test_double_to_decimal_keeps_15_significant_digits(value, expected):
    assert str(expr_base.double_to_decimal(value)) == expected


def test_double_to_decimal_keeps_infinities_and_nan():
    assert expr_base.double_to_decimal(math.inf) == Decimal("Infinity")
    assert expr_base.double_to_decimal(-math.inf) == Decimal("-Infinity")
    assert expr_base.double_to_decimal(math.nan).is_nan()


@pytest.mark.parametrize("expr,expected", [
    ({"$divide": [12.5, Decimal128("2.5")]}, Decimal128("5.000000000000")),
    ({"$toDecimal": 1.9}, Decimal128("1.90000000000000")),
    ({"$convert": {"input": 1.9, "to": "decimal"}}, Decimal128("1.90000000000000")),
    ({"$multiply": [0.1, Decimal128("3")]}, Decimal128("0.300000000000000")),
    ({"$subtract": [Decimal128("1"), 0.1]}, Decimal128("0.900000000000000")),
])
def test_a_double_meeting_a_decimal_is_converted_with_15_digits(expr, expected):
    assert same(evaluate(expr, {}), expected)


@pytest.mark.parametrize("value,expected", [(1.0, "1"), (-1e6, "-1e+06"), (1.1, "1.1"), (math.inf, "inf"),
                                            (-math.inf, "-inf"), (math.nan, "nan"), (1.00001, "1.00001")])
def test_stream_double_prints_like_cpp_ostream(value, expected):
    assert expr_base.stream_double(value) == expected


# --------------------------------------------------------------------------------------------------
# logarithms, exp, pow (log_pow_exp.js)


@pytest.mark.parametrize("expr,expected", [
    # the binary128 double rounding of Intel's library shows in the last digit or the exponent
    ({"$log": [Decimal128("2.5"), 9]}, "0.4170218835732348650487566466679398"),
    ({"$log": [81, Decimal128("9")]}, "2"),
    ({"$log": [Decimal128("170"), 12.77]}, "2.016332738676605709114981994718173"),
    ({"$log": [Decimal128("64"), 8]}, "2.000000000000000000000000000000000"),
    ({"$log": [1, Decimal128("8")]}, "0E+33"),
    ({"$log10": Decimal128("2.5")}, "0.3979400086720376095725222105510140"),
    ({"$log10": Decimal128("100")}, "2"),
    ({"$ln": Decimal128("2.5")}, "0.9162907318741550651835272117680110"),
    ({"$ln": Decimal128("0.3678794411714423215955237701614609")}, "-0.9999999999999999999999999999999998"),
    ({"$ln": Decimal128("1")}, "0"),
    ({"$exp": Decimal128("1")}, "2.718281828459045235360287471352662"),
    ({"$exp": Decimal128("-1")}, "0.3678794411714423215955237701614609"),
])
def test_decimal_logarithms_round_like_intels_library(expr, expected):
    assert same(evaluate(expr, {}), Decimal128(expected))


@pytest.mark.parametrize("expr", [{"$log": [math.nan, 10.0]}, {"$log": [10.0, math.nan]},
                                  {"$log": [math.nan, Decimal128("10")]}, {"$log10": math.nan},
                                  {"$ln": math.nan}, {"$ln": Decimal128("NaN")}])
def test_logarithm_of_nan_is_a_double_nan(expr):
    got = evaluate(expr, {})
    assert isinstance(got, float) and math.isnan(got)


@pytest.mark.parametrize("expr,code,message", [
    ({"$ln": -1}, 28766, "$ln's argument must be a positive number, but is -1"),
    ({"$log10": Decimal128("0")}, 28761, "$log10's argument must be a positive number, but is 0"),
    ({"$log": [2.5, Decimal128("1")]}, 28759, "$log's base must be a positive number not equal to 1, but is 1"),
])
def test_logarithm_errors_print_the_argument_as_a_cpp_double(expr, code, message):
    with pytest.raises(MongoError) as e:
        evaluate(expr, {})
    assert (e.value.code, e.value.message) == (code, message)


@pytest.mark.parametrize("args,expected", [
    ([Decimal128("10.0"), -2.0], "0.01000000000000000000000000000000000"),
    ([0.5, Decimal128("-1")], "2.000000000000000000000000000000000"),
    ([Decimal128("-2.0"), 2], "4.000000000000000000000000000000000"),
    ([5, Decimal128("-112")], "5.192296858534827628530496329220096E-79"),
    ([Decimal128("3"), Decimal128("0")], "1.000000000000000000000000000000000"),
    ([Decimal128("-8"), Decimal128("0.5")], "NaN"),
    ([Decimal128("-2"), Decimal128("3")], "-8.000000000000000000000000000000000"),
    ([Decimal128("0.5"), Decimal128("Infinity")], "0E-6176"),
    ([Decimal128("2"), Decimal128("-Infinity")], "0E-6176"),
    ([Decimal128("1"), math.nan], "1.000000000000000000000000000000000"),
])
def test_decimal_pow_has_34_digits(args, expected):
    assert same(evaluate({"$pow": args}, {}), Decimal128(expected))


def test_decimal_pow_of_zero_to_a_negative_exponent_fails():
    assert code_of({"$pow": [Decimal128("0"), Int64(-1)]}) == 28764


# --------------------------------------------------------------------------------------------------
# $mod (expression_mod.js)


@pytest.mark.parametrize("args,expected", [
    ([8, 3.0], 2), ([Int64(8), 3.0], Int64(2)), ([8, 3.25], 1.5), ([138.5, 3], 0.5),
    ([Int64(500000000000), 450000000000.0], 50000000000.0), ([8, Int64(3)], Int64(2)),
    ([-8, 3.0], -2), ([8, 2.0**31], 8.0),
])
def test_mod_by_an_int32_integral_double_is_integral(args, expected):
    assert same(evaluate({"$mod": args}, {}), expected)


# --------------------------------------------------------------------------------------------------
# $round / $trunc (round_trunc.js)


@pytest.mark.parametrize("expr,expected", [
    ({"$trunc": [1.298, 100]}, 1.298),
    ({"$round": [Decimal128("1.298"), Decimal128("100")]}, Decimal128("1.298000000000000000000000000000000")),
    ({"$trunc": [Decimal128("1.298912343250054252245154325"), Int64(20)]}, Decimal128("1.29891234325005425224")),
    ({"$round": [Decimal128("23.298"), -1.0]}, Decimal128("2E+1")),
    ({"$round": [2.675, 2]}, 2.67),  # the double's 34-digit decimal is 2.674999..., not 2.675
    ({"$round": [2147483647, -1.0]}, Int64(2147483650)),
    ({"$round": [Decimal128("NaN"), 2]}, Decimal128("NaN")),
    ({"$round": [1.5, None]}, None),
    ({"$round": [Decimal128("0"), 2]}, Decimal128("0.00")),
])
def test_round_and_trunc_quantize_like_mongod(expr, expected):
    assert same(evaluate(expr, {}), expected)


@pytest.mark.parametrize("expr,code", [
    ({"$round": [Int64(9223372036854775806), -1.0]}, 51080),
    ({"$round": [1.0, Decimal128("1.4")]}, 51082),
    ({"$trunc": [1.0, 10.5]}, 51082),
    ({"$round": [1.0, Int64(2**40)]}, 51082),
    ({"$round": [1.0, 101]}, 51083),
    ({"$round": [1.0, -21.0]}, 51083),
    ({"$round": [1.0, "two"]}, 16004),
    ({"$round": ["one", None]}, 51081),  # the number is checked before the place is looked at
])
def test_round_and_trunc_errors(expr, code):
    assert code_of(expr) == code


# --------------------------------------------------------------------------------------------------
# trigonometry (expression_trigonometric.js)


@pytest.mark.parametrize("name,fn", [
    ("sin", math.sin), ("cos", math.cos), ("tan", math.tan), ("atan", math.atan), ("sinh", math.sinh),
    ("cosh", math.cosh), ("tanh", math.tanh), ("asinh", math.asinh),
])
@pytest.mark.parametrize("x", ["0.5", "-1.25", "3", "1E-8", "100"])
def test_decimal_trigonometry_agrees_with_doubles(name, fn, x):
    got = expr_base.decimal_function(name, Decimal(x))
    assert float(got) == pytest.approx(fn(float(x)), rel=1e-14, abs=1e-300)


@pytest.mark.parametrize("name,fn,x", [("asin", math.asin, "0.5"), ("acos", math.acos, "-0.999"),
                                       ("acos", math.acos, "0.999999"), ("acosh", math.acosh, "1.0000001"),
                                       ("atanh", math.atanh, "-0.75"), ("acosh", math.acosh, "12.5")])
def test_decimal_inverse_functions_agree_with_doubles(name, fn, x):
    assert float(expr_base.decimal_function(name, Decimal(x))) == pytest.approx(fn(float(x)), rel=1e-14)


def test_decimal_sine_reduces_huge_arguments_exactly():
    assert float(expr_base.decimal_function("sin", Decimal("1E+22"))) == pytest.approx(math.sin(1e22), rel=1e-15)
    assert abs(expr_base.decimal_function("sin", Decimal("1E+6144"))) <= 1


@pytest.mark.parametrize("expr,expected", [
    ({"$tanh": Decimal128("Infinity")}, Decimal128("1")),
    ({"$tanh": Decimal128("-Infinity")}, Decimal128("-1")),
    ({"$atanh": Decimal128("1")}, Decimal128("Infinity")),
    ({"$atanh": -1.0}, -math.inf),
    ({"$cosh": Decimal128("-Infinity")}, Decimal128("Infinity")),
    ({"$sinh": -1000.0}, -math.inf),
    ({"$acos": Decimal128("NaN")}, Decimal128("NaN")),
    ({"$cos": 0}, 1.0),
    ({"$acosh": Int64(1)}, 0.0),
    ({"$degreesToRadians": Decimal128("180")}, Decimal128("3.141592653589793238462643383279503")),
    ({"$radiansToDegrees": math.pi}, 180.0),
    ({"$atan2": [Decimal128("NaN"), Decimal128("0")]}, Decimal128("NaN")),
    ({"$atan2": [Decimal128("-Infinity"), Decimal128("-Infinity")]},
     Decimal128("-2.356194490192344928846982537459627")),
    ({"$atan2": [Decimal128("0"), Decimal128("-Infinity")]}, Decimal128("3.141592653589793238462643383279503")),
    ({"$atan2": [0, 1]}, 0.0),
    ({"$atan2": [None, "x"]}, None),
])
def test_trigonometry_at_special_points(expr, expected):
    assert same(evaluate(expr, {}), expected)


def test_decimal_atan2_matches_the_double_one():
    got = evaluate({"$atan2": [Decimal128("-3"), 2]}, {})
    assert float(got.to_decimal()) == pytest.approx(math.atan2(-3, 2), rel=1e-15)


@pytest.mark.parametrize("expr,code,message", [
    ({"$acos": 2}, 50989, "cannot apply $acos to 2, value must in [-1,1]"),
    ({"$sin": -math.inf}, 50989, "cannot apply $sin to -inf, value must in (-inf,inf)"),
    ({"$acosh": Decimal128("0.9")}, 50989, "cannot apply $acosh to 0.9, value must in [1,inf]"),
    ({"$tan": "x"}, 28765, "$tan only supports numeric types, not string"),
    ({"$atan2": ["x", 1]}, 51044, "$atan2 only supports numeric types, not string"),
    ({"$atan2": [1, "x"]}, 51045, "$atan2 only supports numeric types, not string"),
    ({"$sin": [1, 2]}, 16020, "Expression $sin takes exactly 1 arguments. 2 were passed in."),
])
def test_trigonometry_errors(expr, code, message):
    with pytest.raises(MongoError) as e:
        evaluate(expr, {})
    assert (e.value.code, e.value.message) == (code, message)


# --------------------------------------------------------------------------------------------------
# $convert targets (convert.js)


@pytest.mark.parametrize("to", ["minKey", "missing", "object", "array", "binData", "undefined", "null", "regex",
                                "dbPointer", "javascript", "symbol", "javascriptWithScope", "timestamp", "maxKey",
                                0, 3, -1, 127])
def test_convert_to_a_type_no_value_converts_to_gives_on_error(to):
    assert evaluate({"$convert": {"input": 1.9, "to": to, "onError": "E"}}, {}) == "E"
    with pytest.raises(MongoError) as e:
        evaluate({"$convert": {"input": 1.9, "to": to}}, {})
    assert e.value.code == 241 and "in $convert with no onError value" in e.value.message


@pytest.mark.parametrize("to,code", [("number", 2), ("nope", 2), (1.5, 9), (100, 9), (Int64(2**40), 9)])
def test_convert_to_a_value_naming_no_type_fails_even_with_on_error(to, code):
    assert code_of({"$convert": {"input": 1, "to": to, "onError": "E"}}) == code


def test_convert_to_boolean_accepts_min_key():
    from bson.min_key import MinKey
    assert evaluate({"$convert": {"input": {"$literal": MinKey()}, "to": "bool"}}, {}) is True
