"""The window functions that compute over positions: $derivative (rise/run between a window's first and
last documents), $integral (trapezoids over every document of a window) and $linearFill (interpolation
over a partition), with mongod's per-document checks and arithmetic (its ``$subtract``/``$divide``
result types, date differences in milliseconds)."""

from __future__ import annotations

import math

from bson.int64 import Int64

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query import dates
from tidemark.query.expr_base import as_float, num_kind, type_name
from tidemark.query.expressions import compile_expression
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
