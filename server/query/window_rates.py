"""The window functions that compute over positions: $derivative (rise/run between a window's first and
last documents), $integral (trapezoids over every document of a window), $linearFill (interpolation
over a partition) and $expMovingAvg (a running average over a partition), with mongod's per-document
checks and arithmetic (its ``$subtract``/``$divide`` result types, date differences in milliseconds,
its Decimal128 moving average)."""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

from bson.decimal128 import Decimal128
from bson.int64 import Int64

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query import dates
from tidemark.query.expr_base import DECIMAL_CONTEXT, as_float, make_decimal, num_kind, type_name
from tidemark.query.expressions import compile_expression
from tidemark.query.value_repr import bson_repr
from tidemark.query.values import MISSING, compare


def _is_date(v) -> bool:
    return type(v).__name__ in ("datetime", "DatetimeMS")


_ARITH = {op: compile_expression({op: ["$a", "$b"]}) for op in ("$add", "$subtract", "$multiply", "$divide")}


def _arith(op, a, b):
    """mongod's arithmetic on two values (its result types, date differences in milliseconds)."""
    return _ARITH[op]({"a": a, "b": b}, {})


def derivative(x0, y0, x1, y1, unit):
    """$derivative over a window: rise / run between its first and last documents."""
    if unit is not None:
        if not (_is_date(x0) and _is_date(x1)):
            raise MongoError(5624900, "$derivative with 'unit' expects the sortBy field to be a Date")
    else:
        if _is_date(x0) or _is_date(x1):
            raise MongoError(5624901, "$derivative where the sortBy is a Date requires an 'unit'")
        if num_kind(x0) is None or num_kind(x1) is None:
            raise MongoError(5624902, "$derivative (with no 'unit') expects the sortBy field to be numeric")
    run = _arith("$subtract", x1, x0)
    rise = _arith("$subtract", y1, y0)
    if rise is None or rise is MISSING:
        raise MongoError(5624903, "$derivative input must not be null or missing")
    try:
        result = _arith("$divide", rise, run)
    except MongoError as e:
        if e.code == ErrorCode.BadValue:  # a zero run (one document in the window) is no error
            return None
        raise
    return _arith("$multiply", result, Int64(dates.FIXED_UNIT_MS[unit])) if unit is not None else result


def integral_point(x, y, unit):
    """One document's (sortBy, input) pair, checked as mongod's $integral checks each one it adds."""
    if num_kind(y) is None or not (num_kind(x) is not None or _is_date(x)):
        raise MongoError(5423900, "The input value of $integral window function must be a vector of 2 value, the "
                                  "first value must be numeric or date type and the second must be numeric.")
    if unit is not None and not _is_date(x):
        raise MongoError(5423901, "$integral with 'unit' expects the sortBy field to be a Date")
    if unit is None and num_kind(x) is None:
        raise MongoError(5423902, "$integral (with no 'unit') expects the sortBy field to be numeric")
    return x, y


def _is_nan(v) -> bool:
    return (type(v) is float and math.isnan(v)) or (type(v).__name__ == "Decimal128" and v.to_decimal().is_nan())


def integral(points, unit):
    """The trapezoidal integral over a window: null when empty; NaN when a value is NaN."""
    if not points:
        return None
    if any(_is_nan(x) or _is_nan(y) for x, y in points):
        return math.nan
    parts = []
    for (x0, y0), (x1, y1) in zip(points, points[1:], strict=False):
        delta = _arith("$subtract", x1, x0)
        parts.append(_arith("$divide", _arith("$multiply", _arith("$add", y1, y0), delta), 2.0))
    total = math.fsum(as_float(v) for v in parts) if parts else 0
    return total / dates.FIXED_UNIT_MS[unit] if unit is not None else total


def linear_fill(values, xs):
    """$linearFill over one partition in sortBy order, with mongod's per-document checks: the value
    numeric or nullish, the sortBy value numeric or a date, never repeated, never switching type."""
    out = []
    last_x = MISSING
    left = right = None       # (x, y) of the known points around a gap
    n = len(values)
    for i in range(n):
        y, x = values[i], xs[i]
        if not (num_kind(y) is not None or y is None or y is MISSING):
            raise MongoError(ErrorCode.TypeMismatch,
                             f"Value to be filled must be numeric or nullish, but found {type_name(y)}")
        if not (num_kind(x) is not None or _dateish(x)):
            raise MongoError(ErrorCode.TypeMismatch,
                             f"Value of the sortBy field must be numeric or a date, but found {type_name(x)}")
        if last_x is not MISSING:
            if compare(x, last_x) == 0:
                raise MongoError(6050106, "There can be no repeated values in the sort field")
            if not ((_dateish(x) and _dateish(last_x)) or (num_kind(x) is not None and num_kind(last_x) is not None)):
                raise MongoError(ErrorCode.TypeMismatch, f"Conflicting sort value types, previously received type "
                                                         f"{type_name(last_x)}, but found {type_name(x)}")
        last_x = x
        if y is not None and y is not MISSING:
            left, right = right if right is not None else (x, y), None
            out.append(y)
            continue
        if left is None:
            out.append(None)
            continue
        if right is None:
            right = next(((xs[j], values[j]) for j in range(i + 1, n)
                          if values[j] is not None and values[j] is not MISSING
                          and xs[j] is not None and xs[j] is not MISSING), None)
            if right is None:
                out.append(None)
                continue
        (x1, y1), (x2, y2) = left, right
        slope = _arith("$divide", _arith("$subtract", y2, y1), _arith("$subtract", x2, x1))
        out.append(_arith("$add", y1, _arith("$multiply", _arith("$subtract", x, x1), slope)))
    return out


def _dateish(v) -> bool:
    """Value::coercibleToDate: a date, a timestamp or an ObjectId."""
    return type(v).__name__ in ("datetime", "DatetimeMS", "Timestamp", "ObjectId")


def decimal_of_double(v: float) -> Decimal:
    """A double as mongod's Decimal128(double): rounded to 15 significant digits, which it keeps
    (0.1 -> 0.100000000000000)."""
    return Decimal(f"{v:.14e}") if math.isfinite(v) else Decimal(repr(v))


def exp_moving_avg(values: list, alpha: Decimal) -> list:
    """$expMovingAvg over one partition in sortBy order (mongod's AccumulatorExpMovingAvg): the first
    number starts the average, each later one gives ``x * alpha + avg * (1 - alpha)``; anything not
    a number is skipped and the document gets the current average (null before the first number).

    mongod computes in Decimal128 and answers a double unless a decimal was seen. A partition
    holding a decimal is computed that way; any other in doubles, which can differ from mongod's
    answer in the last bit only, and is several times faster."""
    out: list = []
    if not any(type(v) is Decimal128 for v in values):
        avg: float | None = None
        a, keep = float(alpha), float(DECIMAL_CONTEXT.subtract(Decimal(1), alpha))
        for v in values:
            t = type(v)
            if t is float or t is int or t is Int64:
                x = float(v)
                avg = x if avg is None else x * a + avg * keep
            out.append(avg)
        return out
    ctx = DECIMAL_CONTEXT
    keep_d = ctx.subtract(Decimal(1), alpha)
    dec_avg: Decimal | None = None
    is_decimal = False
    for v in values:
        if num_kind(v) is not None:
            if type(v) is Decimal128:
                is_decimal = True
                d = v.to_decimal()
            elif type(v) is float:
                d = decimal_of_double(v)
            else:
                d = Decimal(int(v))
            dec_avg = d if dec_avg is None else ctx.add(ctx.multiply(d, alpha), ctx.multiply(dec_avg, keep_d))
        if dec_avg is None:
            out.append(None)
        else:
            out.append(make_decimal(dec_avg) if is_decimal else float(dec_avg))
    return out


# --------------------------------------------------------------------------------------------------
# arguments, checked in mongod's order (FailedToParse unless said otherwise)


def _fail(message: str) -> MongoError:
    return MongoError(ErrorCode.FailedToParse, message)


_RATE_UNITS = ("week", "day", "hour", "minute", "second", "millisecond")
_LONG_MAX = 2**63 - 1
_EMA_FIELDS = ("$expMovingAvg sub object must have exactly two fields: An 'input' field, and either an 'N' "
               "field or an 'alpha' field")


def parse_exp_moving_avg(spec: dict, arg: Any, sort_fields: list, collation: Any) -> tuple[Any, Decimal]:
    """``{input, N | alpha}`` (mongod's ExpressionExpMovingAvg::parse, checks in its order) ->
    (compiled input, alpha): 2 / (N + 1) or the given one, as mongod's Decimal128."""
    if len(spec) != 1 or not isinstance(arg, dict):
        raise _fail("$expMovingAvg must have exactly one argument that is an object")
    if len(arg) != 2 or "input" not in arg:
        raise _fail(_EMA_FIELDS)
    if not sort_fields:
        raise _fail("$expMovingAvg requires an explicit 'sortBy'")
    fn = compile_expression(arg["input"], collation=collation)
    if "N" in arg:
        v = arg["N"]
        if num_kind(v) is None:
            raise _fail(f"'N' field must be an integer, but found type {type_name(v)}")
        f = as_float(v)
        if math.isnan(f) or (math.isfinite(f) and f != math.floor(f)):
            raise _fail(f"'N' field must be an integer, but found  N: {bson_repr(v)}. To use a non-integer, use "
                        "the 'alpha' argument instead")
        n = int(v) if type(v) is int or type(v) is Int64 else (int(f) if math.isfinite(f) else _LONG_MAX)
        n = min(n, _LONG_MAX)  # safeNumberLong saturates
        if n <= 0:
            raise _fail(f"'N' must be greater than zero. Got {n}")
        return fn, DECIMAL_CONTEXT.divide(Decimal(2), Decimal(n + 1))
    if "alpha" in arg:
        v = arg["alpha"]
        if num_kind(v) is None:
            raise _fail("'alpha' must be a number")
        alpha = v.to_decimal() if type(v) is Decimal128 else decimal_of_double(v) if type(v) is float else Decimal(int(v))
        if alpha.is_nan() or not 0 < alpha < 1:  # (ordering a NaN Decimal raises)
            raise _fail(f"'alpha' must be between 0 and 1 (exclusive), found alpha: {bson_repr(v)}")
        return fn, alpha
    raise _fail("Got unrecognized field in $expMovingAvg" + _EMA_FIELDS)


def parse_rate(op: str, arg: Any, has_window: bool, collation: Any) -> tuple[Any, str | None]:
    """$derivative / $integral arguments ``{input, unit?}`` -> (compiled input, unit); $derivative
    needs explicit bounds."""
    if not isinstance(arg, dict):
        raise _fail(f"{op} expects an object, but got a {type_name(arg)}: {op}: {bson_repr(arg)}")
    unit = None
    fn = None
    for k, v in arg.items():
        if k == "input":
            fn = compile_expression(v, collation=collation)
        elif k != "unit":
            raise _fail(f"{op} got unexpected argument: {k}")
        elif type(v) is not str:
            raise _fail(f"unit' must be a string, but got {type_name(v)}")
        elif v not in dates.TIME_UNITS:
            raise _fail(f"unknown time unit value: {v}")
        elif v not in _RATE_UNITS:  # months and years have no fixed length in milliseconds
            raise MongoError(5490710, "unit must be 'week' or smaller")
        else:
            unit = v
    if fn is None:
        raise _fail(f"{op} requires an 'input' expression")
    if op == "$derivative" and not has_window:
        raise _fail("$derivative requires explicit window bounds")
    return fn, unit
