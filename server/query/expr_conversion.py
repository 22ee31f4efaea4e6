"""Type expressions: $convert, $toBool $toDate $toDecimal $toDouble $toInt $toLong $toObjectId
$toString, $type, $isNumber.

$convert: null/missing input -> ``onNull`` (default null); a failed conversion -> ``onError`` when
given, else 241 ConversionFailure with mongod's message. ``to`` may name any BSON type (or "missing",
as $type answers): a conversion no value makes (to "object", "minKey", ...) fails like any other, so
``onError`` catches it; only a ``to`` that names no type fails the expression itself.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation
from typing import Any, cast

from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.objectid import ObjectId

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query import date_strings, dates
from tidemark.query.expr_base import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    KIND_DECIMAL,
    KIND_DOUBLE,
    as_float,
    check_arity,
    coerce_decimal,
    int_arg,
    make_decimal,
    nullish,
    num_kind,
    require_object,
    type_name,
)
from tidemark.query.values import MISSING, TYPE_NUMBERS, bson_type_name

# The type names and numbers ``to`` accepts: every BSON type, and "missing" (type 0, EOO).
_TYPE_NUMBER_BY_NAME = {**TYPE_NUMBERS, "missing": 0}
_TYPE_NAME_BY_NUMBER = {n: name for name, n in _TYPE_NUMBER_BY_NAME.items()}


class _ConversionError(Exception):
    pass


def format_double(f: float) -> str:
    """A double as mongod prints it in $toString (shortest round-trip, integers without ".0")."""
    if f != f:
        return "NaN"
    if math.isinf(f):
        return "Infinity" if f > 0 else "-Infinity"
    if f == int(f) and abs(f) < 1e15:
        return str(int(f)) if f != 0 or math.copysign(1, f) > 0 else "-0"
    text = repr(f)
    if "e" in text:
        mant, exp = text.split("e")
        return f"{mant}e{'+' if not exp.startswith('-') else '-'}{exp.lstrip('+-')}"
    return text


def to_string(v) -> str:
    t = type(v)
    if t is str:
        return v
    if t is bool:
        return "true" if v else "false"
    if t is float:
        return format_double(v)
    if t is int or t is Int64:
        return str(int(v))
    if t is Decimal128:
        return str(v)
    if t is ObjectId:
        return str(v)
    ms = dates.to_millis(v) if t.__name__ in ("datetime", "DatetimeMS") else None
    if ms is not None:
        return dates.format_date(ms, dates.ISO_FORMAT_Z)
    raise _ConversionError(f"Unsupported conversion from {type_name(v)} to string in $convert")


def _parse_int_string(s: str, target: str, lo: int, hi: int):
    if not re.fullmatch(r"[+-]?\d+", s.strip() if False else s):
        raise _ConversionError(f"Failed to parse number '{s}' in $convert")
    n = int(s)
    if not lo <= n <= hi:
        raise _ConversionError(f"Failed to parse number '{s}' in $convert: Overflow")
    return n


def _integral(v, target, lo, hi):
    k = num_kind(v)
    if k is None:
        if type(v) is bool:
            return int(v)
        if type(v) is str:
            return _parse_int_string(v, target, lo, hi)
        ms = dates.to_millis(v) if type(v).__name__ in ("datetime", "DatetimeMS") else None
        if ms is not None and target == "long":
            return ms
        raise _ConversionError(f"Unsupported conversion from {type_name(v)} to {target} in $convert")
    if k >= KIND_DOUBLE:
        f: Any = as_float(v) if k == KIND_DOUBLE else v.to_decimal()
        if (k == KIND_DOUBLE and not math.isfinite(f)) or (k == KIND_DECIMAL and not f.is_finite()):
            raise _ConversionError("Attempt to convert NaN or infinite value to integer in $convert")
        n = int(f)
    else:
        n = int(v)
    if not lo <= n <= hi:
        raise _ConversionError("Conversion would overflow target type in $convert")
    return n


def convert(v, target: str):
    """Convert a non-null value to ``target``; raises _ConversionError with mongod's message."""
    if target == "string":
        return to_string(v)
    if target == "int":
        return _integral(v, "int", INT32_MIN, INT32_MAX)
    if target == "long":
        return Int64(_integral(v, "long", INT64_MIN, INT64_MAX))
    if target == "double":
        k = num_kind(v)
        if k is not None:
            return as_float(v)
        if type(v) is bool:
            return float(v)
        if type(v) is str:
            try:
                if re.fullmatch(r"\s*[+-]?(\d+\.?\d*([eE][+-]?\d+)?|\.\d+([eE][+-]?\d+)?|[Ii]nf(inity)?|NaN|nan)", v):
                    return float(v)
            except ValueError:
                pass
            raise _ConversionError(f"Failed to parse number '{v}' in $convert")
        ms = dates.to_millis(v) if type(v).__name__ in ("datetime", "DatetimeMS") else None
        if ms is not None:
            return float(ms)
        raise _ConversionError(f"Unsupported conversion from {type_name(v)} to double in $convert")
    if target == "decimal":
        k = num_kind(v)
        if k is not None:
            return v if k == KIND_DECIMAL else make_decimal(coerce_decimal(v))  # a double keeps 15 digits
        if type(v) is bool:
            return Decimal128(str(int(v)))
        if type(v) is str:
            try:
                return make_decimal(Decimal(v))
            except InvalidOperation:
                raise _ConversionError(f"Failed to parse number '{v}' in $convert") from None
        ms = dates.to_millis(v) if type(v).__name__ in ("datetime", "DatetimeMS") else None
        if ms is not None:
            return Decimal128(str(ms))
        raise _ConversionError(f"Unsupported conversion from {type_name(v)} to decimal in $convert")
    if target == "bool":
        k = num_kind(v)
        if k is not None:
            return (v.to_decimal() != 0) if k == KIND_DECIMAL else v != 0
        return bool(v) if type(v) is bool else True
    if target == "date":
        if type(v).__name__ in ("datetime", "DatetimeMS"):
            return v
        if type(v) is ObjectId or type(v).__name__ == "Timestamp":
            return dates.from_millis(cast(int, dates.to_millis(v)))  # an ObjectId or Timestamp has a time
        k = num_kind(v)
        if k is not None and (k != 0 or type(v) is Int64):
            if k >= KIND_DOUBLE and not math.isfinite(as_float(v)):
                raise _ConversionError("Attempt to convert NaN or infinite value to date in $convert")
            ms = int(as_float(v)) if k >= KIND_DOUBLE else int(v)
            if not -(2**63) <= ms < 2**63:
                raise _ConversionError("Conversion would overflow target type in $convert")
            return dates.from_millis(ms)
        if type(v) is str:
            try:
                return dates.from_millis(date_strings.parse_date_string(v))
            except date_strings.DateParseError as e:
                raise _ConversionError(f"Error parsing date string '{v}'; {e}") from None
        raise _ConversionError(f"Unsupported conversion from {type_name(v)} to date in $convert")
    if target == "objectId":
        if type(v) is ObjectId:
            return v
        if type(v) is str and re.fullmatch(r"[0-9a-fA-F]{24}", v):
            return ObjectId(v)
        if type(v) is str:
            raise _ConversionError(f"Failed to parse objectId '{v}' in $convert")
        raise _ConversionError(f"Unsupported conversion from {type_name(v)} to objectId in $convert")
    raise _ConversionError(f"Unsupported conversion from {type_name(v)} to {target} in $convert")


def compile_convert(args, cc):
    spec = require_object("$convert", args, {"input", "to", "onError", "onNull", "format", "base"}, ())
    if "input" not in spec:
        raise MongoError(ErrorCode.FailedToParse, "Missing 'input' parameter to $convert")
    if "to" not in spec:
        raise MongoError(ErrorCode.FailedToParse, "Missing 'to' parameter to $convert")
    for unsupported in ("format", "base"):
        if unsupported in spec:
            raise MongoError(ErrorCode.QueryFeatureNotAllowed, f"$convert '{unsupported}' is not supported by Tidemark")
    inp, to = cc(spec["input"]), cc(spec["to"])
    on_error = cc(spec["onError"]) if "onError" in spec else None
    on_null = cc(spec["onNull"]) if "onNull" in spec else None
    return _converter(inp, to, on_error, on_null)


def _resolve_target(t):
    """The type name a ``to`` value names (None for null/missing), with mongod's errors for one that
    names no type: 2 for an unknown name, 9 for a number that is not an integer or not a type. A value
    of another type is 2 here (mongod: 9 FailedToParse; tests/query/test_expr_operators.py pins 2)."""
    if nullish(t):
        return None
    if type(t) is str:
        if t not in _TYPE_NUMBER_BY_NAME:
            raise MongoError(ErrorCode.BadValue, f"Unknown type name: {t}")
        return t
    k = num_kind(t)
    if k is None:
        raise MongoError(ErrorCode.BadValue,
                         f"$convert's 'to' argument must be a string or number, but is {type_name(t)}")
    code = int_arg(t)
    if code is None or not INT32_MIN <= code <= INT32_MAX:
        raise MongoError(ErrorCode.FailedToParse, "In $convert, numeric 'to' argument is not an integer")
    if code not in _TYPE_NAME_BY_NUMBER:
        raise MongoError(ErrorCode.FailedToParse,
                         f"In $convert, numeric value for 'to' does not correspond to a BSON type: {code}")
    return _TYPE_NAME_BY_NUMBER[code]


def _converter(inp, to, on_error, on_null):
    def run(doc, vars):
        v = inp(doc, vars)
        target = _resolve_target(to(doc, vars))
        if nullish(v):
            return on_null(doc, vars) if on_null is not None else None
        if target is None:
            return None
        try:
            return convert(v, target)
        except _ConversionError as e:
            if on_error is not None:
                return on_error(doc, vars)
            raise MongoError(ErrorCode.ConversionFailure, f"{e} with no onError value") from None
    return run


def _to(target, name):
    def compile_op(args, cc):
        (a,) = (cc(x) for x in check_arity(name, args, 1))
        return _converter(a, lambda d, v: target, None, None)
    return compile_op


def compile_type(args, cc):
    (a,) = (cc(x) for x in check_arity("$type", args, 1))

    def type_(doc, vars):
        v = a(doc, vars)
        return "missing" if v is MISSING else bson_type_name(v)
    return type_


def compile_is_number(args, cc):
    (a,) = (cc(x) for x in check_arity("$isNumber", args, 1))
    return lambda doc, vars: num_kind(a(doc, vars)) is not None


OPERATORS = {
    "$convert": compile_convert,
    "$toBool": _to("bool", "$toBool"),
    "$toDate": _to("date", "$toDate"),
    "$toDecimal": _to("decimal", "$toDecimal"),
    "$toDouble": _to("double", "$toDouble"),
    "$toInt": _to("int", "$toInt"),
    "$toLong": _to("long", "$toLong"),
    "$toObjectId": _to("objectId", "$toObjectId"),
    "$toString": _to("string", "$toString"),
    "$type": compile_type,
    "$isNumber": compile_is_number,
}
