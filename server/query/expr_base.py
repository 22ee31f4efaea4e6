"""Shared pieces of the aggregation-expression compiler: the compiled-function shape, argument
checks, numeric result typing, aggregation comparison, variable names and the field-path walk.

A compiled expression is ``fn(current, variables) -> value`` where ``current`` is the document "$a"
paths read ($$CURRENT) and ``variables`` maps variable names (without "$$") to values; ``ROOT`` is
present there when it differs from ``current``. Operator compilers live in the ``expr_*`` modules and
have the shape ``compile_op(args, cc) -> fn`` where ``cc(expr, scope=None)`` compiles a sub-expression;
they never import ``expressions`` (no cycles) and are collected explicitly in ``expressions.OPERATORS``.
"""

from __future__ import annotations

import decimal
import math
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from bson.decimal128 import Decimal128, create_decimal128_context
from bson.int64 import Int64

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.values import MISSING, bson_type_name, sort_key

Compiled = Callable[[Any, dict], Any]
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
DECIMAL_CONTEXT = create_decimal128_context()

# Numeric kinds, widening in this order (mongod's result-type rule).
KIND_INT, KIND_LONG, KIND_DOUBLE, KIND_DECIMAL = 0, 1, 2, 3


def type_name(v: Any) -> str:
    """mongod's typeName of a value, "missing" for an absent field."""
    try:
        return bson_type_name(v)
    except (TypeError, KeyError):
        return type(v).__name__


def nullish(v: Any) -> bool:
    return v is None or v is MISSING


def num_kind(v: Any) -> int | None:
    """KIND_* of a number (never bool), None for anything else."""
    t = type(v)
    if t is float:
        return KIND_DOUBLE
    if t is int:
        return KIND_INT if INT32_MIN <= v <= INT32_MAX else KIND_LONG
    if t is Int64:
        return KIND_LONG
    if t is Decimal128:
        return KIND_DECIMAL
    return None


def make_integer(value: int, kind: int) -> Any:
    """An integer result of ``kind``, widening int -> long -> double on overflow like mongod."""
    if kind == KIND_INT and INT32_MIN <= value <= INT32_MAX:
        return value
    if INT64_MIN <= value <= INT64_MAX:
        return Int64(value)
    return float(value)


def to_decimal(v: Any) -> Decimal:
    if type(v) is Decimal128:
        return v.to_decimal()
    if type(v) is float:
        return Decimal(repr(v)) if math.isfinite(v) else Decimal(str(v))
    return Decimal(int(v))


def make_decimal(d: Decimal) -> Decimal128:
    return Decimal128(DECIMAL_CONTEXT.create_decimal(d))


def decimal_safe(compile_op):
    """Wrap an operator compiler so that Decimal edge cases (inf - inf, 0 * inf, overflow) give
    NaN/Infinity like mongod's IEEE 754-2008 decimals instead of raising: the closure is re-run
    under a trap-free 34-digit context only when the default context raised (no cost otherwise)."""
    def compile_guarded(args, cc):
        fn = compile_op(args, cc)

        def guarded(doc, vars):
            try:
                return fn(doc, vars)
            except decimal.DecimalException:
                with decimal.localcontext(DECIMAL_CONTEXT):
                    return fn(doc, vars)
        return guarded
    return compile_guarded


def as_float(v: Any) -> float:
    return float(v.to_decimal()) if type(v) is Decimal128 else float(v)


def make_number(value: Any, kind: int) -> Any:
    """Wrap a Python number as the BSON kind (ints overflow upward, decimals stay decimal)."""
    if kind == KIND_DECIMAL:
        return make_decimal(value if isinstance(value, Decimal) else to_decimal(value))
    if kind == KIND_DOUBLE:
        return float(value)
    return make_integer(int(value), kind)


def agg_compare(a: Any, b: Any) -> int:
    """Expression comparison: BSON order, except that missing sorts below null (as in $eq/$cmp)."""
    if a is MISSING or b is MISSING:
        if a is b:
            return 0
        return -1 if a is MISSING else 1
    ta = type(a)
    if ta is type(b) and (ta is int or ta is str or ta is float):
        if ta is float and (a != a or b != b):
            pass
        else:
            return (a > b) - (a < b)
    ka, kb = sort_key(a), sort_key(b)
    return (ka > kb) - (ka < kb)


def comparator(cc: Any) -> Callable[[Any, Any], int]:
    """``agg_compare`` under the collation of the compiler ``cc`` (chosen once, at compile time)."""
    coll = getattr(cc, "collation", None)
    if coll is None:
        return agg_compare
    ckey = coll.sort_key

    def collated_compare(a: Any, b: Any) -> int:
        if a is MISSING or b is MISSING:
            if a is b:
                return 0
            return -1 if a is MISSING else 1
        ka, kb = ckey(a), ckey(b)
        return (ka > kb) - (ka < kb)

    return collated_compare


def value_key(cc: Any) -> Callable[[Any], tuple]:
    """The BSON sort key (hashable identity) under the collation of the compiler ``cc``."""
    coll = getattr(cc, "collation", None)
    return sort_key if coll is None else coll.sort_key


def args_list(args: Any) -> list:
    """Operator arguments as a list (a lone non-array argument is one argument)."""
    return args if isinstance(args, list) else [args]


def check_arity(name: str, args: Any, n: int) -> list:
    lst = args_list(args)
    if len(lst) != n:
        plural = "argument" if n == 1 else "arguments"
        raise MongoError(16020, f"Expression {name} takes exactly {n} {plural}. {len(lst)} were passed in.")
    return lst


def require_object(name: str, args: Any, allowed: set[str], required: tuple = ()) -> dict:
    """Named-argument operators: an object with only ``allowed`` keys and all ``required`` ones."""
    if not isinstance(args, dict):
        raise MongoError(ErrorCode.FailedToParse, f"{name} only supports an object as its argument")
    for k in args:
        if k not in allowed:
            raise MongoError(ErrorCode.FailedToParse, f"{name} found an unknown argument: {k}")
    for k in required:
        if k not in args:
            raise MongoError(ErrorCode.FailedToParse, f"Missing '{k}' parameter to {name}")
    return args


def const(value: Any) -> Compiled:
    return lambda doc, vars: value


def int_arg(v: Any) -> int | None:
    """An integral value of any numeric type (2.0 counts), else None."""
    k = num_kind(v)
    if k is None:
        return None
    if k in (KIND_INT, KIND_LONG):
        return int(v)
    f: Any = as_float(v) if k == KIND_DOUBLE else v.to_decimal()
    if k == KIND_DOUBLE and not math.isfinite(f):
        return None
    if k == KIND_DECIMAL and not f.is_finite():
        return None
    return int(f) if f == int(f) else None


def validate_variable_name(name: str, *, allow_current: bool = False) -> None:
    """mongod's rule: user variables start with a lowercase letter or a non-ASCII char (16866/16867)."""
    if allow_current and name == "CURRENT":
        return
    if not name:
        raise MongoError(16869, "empty variable names are not allowed")
    c = name[0]
    if not (c.islower() or ord(c) > 127):
        raise MongoError(16867, f"'{name}' starts with an invalid character for a user variable name")
    for ch in name:
        if not (ch.isalnum() or ch == "_" or ord(ch) > 127):
            raise MongoError(16868, f"'{name}' contains an invalid character for a variable name: '{ch}'")


def traverse(value: Any, parts: list[str], i: int = 0) -> Any:
    """mongod's field-path walk: objects descend, arrays map over their object elements."""
    n = len(parts)
    while i < n:
        t = type(value)
        if t is dict:
            value = value.get(parts[i], MISSING)
            i += 1
        elif t is list:
            out = []
            for el in value:
                if type(el) is dict:
                    r = traverse(el, parts, i)
                    if r is not MISSING:
                        out.append(r)
            return out
        else:
            return MISSING
    return value
