"""$sum/$avg over a window whose lower bound moves: mongod's RemovableSum and WindowFunctionAvg, whose
results differ from the $group accumulators' (infinities and NaN leave the window with their documents;
the result narrows to the types the window holds). Ported from mongod's unit tests
src/mongo/db/pipeline/window_function/window_function_sum_test.cpp and window_function_avg_test.cpp
(each add/remove step and the value or type asserted after it); the end-to-end checks are
tests/e2e/test_window_removable_sum_e2e.py."""

import math

from bson import Decimal128, Int64

from tidemark.query.accumulator_state import WindowAvg, WindowSum

NAN, INF = math.nan, math.inf
LONG_MAX, LONG_MIN, INT_MIN = 2**63 - 1, -(2**63), -(2**31)


def kind(v) -> str:
    return {int: "int", Int64: "long", float: "double", Decimal128: "decimal", type(None): "null"}[type(v)]


def same(a, b) -> bool:
    """Equal values of equal BSON types (NaN equal to NaN)."""
    if type(a) is not type(b):
        return False
    if type(a) is float and math.isnan(a):
        return math.isnan(b)
    return a == b


def test_sum_empty_window_is_int_zero():
    assert same(WindowSum().result(), 0)


def test_sum_ignores_non_numbers():
    s = WindowSum()
    s.process("not a number")
    s.process(1)
    assert same(s.result(), 1)


def test_sum_narrowest_type_1():
    s = WindowSum()
    s.process(1)
    assert kind(s.result()) == "int"
    s.process(NAN)
    s.process(INF)
    assert kind(s.result()) == "double"
    s.remove(NAN)  # the type narrows once the infinity and the NaN have left
    s.remove(INF)
    assert same(s.result(), 1)
    s.process(2147483647)
    assert kind(s.result()) == "long"
    s.process(1.5)
    assert kind(s.result()) == "double"
    s.process(Decimal128("-100000000000000000000000000000"))
    assert kind(s.result()) == "decimal"
    s.remove(Decimal128("-100000000000000000000000000000"))
    assert kind(s.result()) == "double"
    s.remove(1.5)
    assert same(s.result(), Int64(2147483648))
    s.remove(1)
    assert same(s.result(), 2147483647)  # an int again: it fits
    s.process(Int64(LONG_MAX))
    assert kind(s.result()) == "double"  # past the long range


def test_sum_narrowest_type_2_without_decimals():
    s = WindowSum()
    for v in (1, 1.5, 2147483647):
        s.process(v)
    assert kind(s.result()) == "double"
    s.remove(1.5)
    assert same(s.result(), Int64(2147483648))
    s.remove(1)
    assert same(s.result(), 2147483647)
    s.process(Int64(LONG_MAX))
    assert kind(s.result()) == "double"


def test_sum_narrowest_type_3_long_to_int():
    s = WindowSum()
    s.process(Int64(2147483648))
    assert same(s.result(), Int64(2147483648))
    s.remove(1)
    assert same(s.result(), 2147483647)  # longs only, yet an int: Value::createIntOrLong
    s.process(Int64(LONG_MAX))
    assert kind(s.result()) == "double"


def test_sum_overflow_in_and_out():
    s = WindowSum()
    s.process(INT_MIN)
    assert same(s.result(), INT_MIN)
    s.process(-1)
    assert same(s.result(), Int64(INT_MIN - 1))
    s.remove(INT_MIN)
    assert same(s.result(), -1)
    s.process(Int64(LONG_MIN))
    assert same(s.result(), float(LONG_MIN) - 1)
    s.remove(Int64(LONG_MIN))
    assert same(s.result(), -1)


def test_avg_empty_singleton_non_numbers():
    assert WindowAvg().result() is None
    a = WindowAvg()
    a.process(5)
    assert same(a.result(), 5.0)
    b = WindowAvg()
    b.process("not a number")
    b.process(1)
    assert same(b.result(), 1.0)


def test_avg_small_window_and_removal():
    a = WindowAvg()
    for v in (5, 2, 10, 3):
        a.process(v)
    assert same(a.result(), 5.0)
    a.remove(2)
    assert same(a.result(), 6.0)
    a.remove(10)
    assert same(a.result(), 4.0)
    b = WindowAvg()
    b.process(5)
    b.process(2)
    assert same(b.result(), 3.5)


def test_avg_narrowest_type():
    a = WindowAvg()
    a.process(1)
    assert kind(a.result()) == "double"
    a.process(Decimal128("NaN"))
    a.process(Decimal128("Infinity"))
    assert kind(a.result()) == "decimal"
    a.remove(Decimal128("NaN"))
    a.remove(Decimal128("Infinity"))
    assert kind(a.result()) == "double"
    a.process(1.5)
    assert kind(a.result()) == "double"
    a.process(Decimal128("-100000000000000000000000000000"))
    assert kind(a.result()) == "decimal"
    a.process(Decimal128("1"))
    a.remove(Decimal128("-100000000000000000000000000000"))
    assert kind(a.result()) == "decimal"
    a.remove(Decimal128("1"))
    assert same(a.result(), 1.25)


def test_avg_nans():
    a = WindowAvg()
    a.process(1)
    a.process(NAN)
    assert same(a.result(), NAN)
    a.process(3)
    assert same(a.result(), NAN)
    a.remove(NAN)
    assert same(a.result(), 2.0)
    a.process(Decimal128("-NaN"))
    assert str(a.result()) == "NaN"  # a positive decimal NaN, whatever the sign fed
    a.remove(Decimal128("-NaN"))
    assert same(a.result(), 2.0)


def test_avg_infinities():
    a = WindowAvg()
    a.process(1)
    a.process(INF)
    assert same(a.result(), INF)
    a.remove(INF)
    assert same(a.result(), 1.0)
    a.process(Decimal128("Infinity"))
    assert same(a.result(), Decimal128("Infinity"))
    a.remove(Decimal128("Infinity"))
    a.process(-INF)
    assert same(a.result(), -INF)
    a.remove(-INF)
    a.process(Decimal128("-Infinity"))
    assert same(a.result(), Decimal128("-Infinity"))
    a.process(INF)
    assert str(a.result()) == "NaN"
    a.remove(INF)
    a.process(NAN)
    assert str(a.result()) == "NaN"
    a.remove(NAN)
    a.remove(Decimal128("-Infinity"))
    assert same(a.result(), 1.0)
