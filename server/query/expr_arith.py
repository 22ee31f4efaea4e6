"""Arithmetic expressions: $add $subtract $multiply $divide $mod $abs $ceil $floor $round $trunc
$sqrt $exp $ln $log $log10 $pow $rand, and the bitwise $bitAnd $bitOr $bitXor $bitNot (int and long
operands only: 14 TypeMismatch otherwise; an int result when every operand is an int).

Result types follow mongod: the widest input kind wins (int < long < double < decimal); int results
that overflow become long, long results that overflow become double. null or missing input -> null.
"""

from __future__ import annotations

import decimal
import math
import random
from decimal import ROUND_CEILING, ROUND_DOWN, ROUND_FLOOR, ROUND_HALF_EVEN, Decimal
from typing import Any

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query import dates
from tidemark.query.expr_base import (
    DECIMAL_CONTEXT,
    KIND_DECIMAL,
    KIND_DOUBLE,
    KIND_INT,
    KIND_LONG,
    args_list,
    as_float,
    check_arity,
    decimal_safe,
    make_decimal,
    make_integer,
    make_number,
    num_kind,
    to_decimal,
    type_name,
)
from tidemark.query.values import MISSING

_D = DECIMAL_CONTEXT  # mongod's decimals: 34 digits, IEEE 754-2008 results instead of exceptions


def compile_add(args, cc):
    fns = [cc(a) for a in args_list(args)]

    def add(doc, vars):
        kind = KIND_INT
        total: Any = 0  # int, then float when a double joins
        date_ms = None
        null = False
        dec: Any = None  # the Decimal sum once a decimal joins
        for fn in fns:
            v = fn(doc, vars)
            k = num_kind(v)
            if k is None:
                if v is None or v is MISSING:
                    null = True
                    continue
                ms = dates.to_millis(v) if type(v).__name__ in ("datetime", "DatetimeMS") else None
                if ms is None:
                    raise MongoError(ErrorCode.TypeMismatch,
                                     f"$add only supports numeric or date types, not {type_name(v)}")
                if date_ms is not None:
                    raise MongoError(16612, "only one date allowed in an $add expression")
                date_ms = ms
                continue
            if k > kind:
                if k == KIND_DECIMAL and dec is None:
                    dec = to_decimal(total)
                kind = k
            if kind == KIND_DECIMAL:
                dec = _D.add(dec if dec is not None else Decimal(0), to_decimal(v))
            elif kind == KIND_DOUBLE:
                total = float(total) + as_float(v)
            else:
                total += v
        if null:
            return None
        if date_ms is not None:
            extra = float(dec) if kind == KIND_DECIMAL else total
            if isinstance(extra, float):
                if not math.isfinite(extra):
                    raise MongoError(ErrorCode.Overflow, "date overflow in $add")
                extra = round(extra)
            return _date_result(date_ms + int(extra))
        if kind == KIND_DECIMAL:
            return make_decimal(dec)
        return make_number(total, kind)
    return add


def compile_subtract(args, cc):
    a, b = (cc(x) for x in check_arity("$subtract", args, 2))

    def subtract(doc, vars):
        x, y = a(doc, vars), b(doc, vars)
        if x is None or x is MISSING or y is None or y is MISSING:
            return None
        kx, ky = num_kind(x), num_kind(y)
        if kx is not None and ky is not None:
            return _binary_numeric(x, y, max(kx, ky), lambda p, q: p - q)
        xm, ym = dates.to_millis(x) if kx is None else None, dates.to_millis(y) if ky is None else None
        if xm is not None and type(x).__name__ in ("datetime", "DatetimeMS"):
            if ym is not None and type(y).__name__ in ("datetime", "DatetimeMS"):
                return make_integer(xm - ym, KIND_LONG)
            if ky is not None:
                fy = as_float(y)
                if not math.isfinite(fy):
                    raise MongoError(ErrorCode.Overflow, "date overflow in $subtract")
                return _date_result(xm - (round(fy) if ky >= KIND_DOUBLE else int(y)))
        raise MongoError(ErrorCode.TypeMismatch, f"cant $subtract a {type_name(y)} from a {type_name(x)}")
    return subtract


def _date_result(ms: int):
    if not -(2**63) <= ms < 2**63:
        raise MongoError(ErrorCode.Overflow, "date overflow")
    return dates.from_millis(ms)


def _binary_numeric(x, y, kind, op):
    if kind == KIND_DECIMAL:
        with decimal.localcontext(_D):
            return make_decimal(op(to_decimal(x), to_decimal(y)))
    if kind == KIND_DOUBLE:
        return float(op(as_float(x), as_float(y)))
    return make_integer(op(int(x), int(y)), kind)


def compile_multiply(args, cc):
    fns = [cc(a) for a in args_list(args)]

    def multiply(doc, vars):
        prod: Any  # int, float or Decimal as the widest kind so far
        kind, prod, null = KIND_INT, 1, False
        for fn in fns:
            v = fn(doc, vars)
            k = num_kind(v)
            if k is None:
                if v is None or v is MISSING:
                    null = True
                    continue
                raise MongoError(ErrorCode.TypeMismatch, f"$multiply only supports numeric types, not {type_name(v)}")
            if k > kind:
                kind = k
                prod = to_decimal(prod) if k == KIND_DECIMAL else (float(prod) if k == KIND_DOUBLE else prod)
            if kind == KIND_DECIMAL:
                prod = _D.multiply(prod, to_decimal(v))
            elif kind == KIND_DOUBLE:
                prod = prod * as_float(v)
            else:
                prod = prod * int(v)
        if null:
            return None
        return make_number(prod, kind)
    return multiply


def compile_divide(args, cc):
    a, b = (cc(x) for x in check_arity("$divide", args, 2))

    def divide(doc, vars):
        x, y = a(doc, vars), b(doc, vars)
        if x is None or x is MISSING or y is None or y is MISSING:
            return None
        kx, ky = num_kind(x), num_kind(y)
        if kx is None or ky is None:
            raise MongoError(ErrorCode.TypeMismatch,
                             f"$divide only supports numeric types, not {type_name(x)} and {type_name(y)}")
        if max(kx, ky) == KIND_DECIMAL:
            dy = to_decimal(y)
            if dy == 0:
                raise MongoError(ErrorCode.BadValue, "can't $divide by zero")
            return make_decimal(_D.divide(to_decimal(x), dy))
        fy = as_float(y)
        if fy == 0:
            raise MongoError(ErrorCode.BadValue, "can't $divide by zero")
        return as_float(x) / fy
    return divide


def compile_mod(args, cc):
    a, b = (cc(x) for x in check_arity("$mod", args, 2))

    def mod(doc, vars):
        x, y = a(doc, vars), b(doc, vars)
        if x is None or x is MISSING or y is None or y is MISSING:
            return None
        kx, ky = num_kind(x), num_kind(y)
        if kx is None or ky is None:
            raise MongoError(16611, f"$mod only supports numeric types, not {type_name(x)} and {type_name(y)}")
        kind = max(kx, ky)
        if kind == KIND_DECIMAL:
            dy = to_decimal(y)
            if dy == 0:
                raise MongoError(16610, "can't $mod by 0")
            return make_decimal(_D.remainder(to_decimal(x), dy))  # truncating, like C fmod
        if kind == KIND_DOUBLE:
            fy = as_float(y)
            if fy == 0:
                raise MongoError(16610, "can't $mod by 0")
            fx = as_float(x)
            return math.fmod(fx, fy) if math.isfinite(fx) else float("nan")
        iy = int(y)
        if iy == 0:
            raise MongoError(16610, "can't $mod by 0")
        ix = int(x)
        r = abs(ix) % abs(iy)
        return make_integer(-r if ix < 0 else r, kind)
    return mod


def _single_numeric(name, f_int, f_float, f_dec, check=None):
    """Compiler for a one-argument numeric operator (28765 for non-numeric input)."""
    def compile_op(args, cc):
        (a,) = (cc(x) for x in check_arity(name, args, 1))

        def op(doc, vars):
            v = a(doc, vars)
            if v is None or v is MISSING:
                return None
            k = num_kind(v)
            if k is None:
                raise MongoError(28765, f"{name} only supports numeric types, not {type_name(v)}")
            if check is not None:
                check(v)
            if k == KIND_DECIMAL:
                with decimal.localcontext(_D):
                    return make_decimal(f_dec(v.to_decimal()))
            if k == KIND_DOUBLE or f_int is None:
                return f_float(as_float(v))
            return make_integer(f_int(int(v)), k)
        return op
    return compile_op


def _check_sqrt(v):
    if as_float(v) < 0:
        raise MongoError(28714, "$sqrt's argument must be greater than or equal to 0")


def _check_ln(v):
    if not as_float(v) > 0:
        raise MongoError(28766, f"$ln's argument must be a positive number, but is {v}")


def _check_log10(v):
    if not as_float(v) > 0:
        raise MongoError(28761, f"$log10's argument must be a positive number, but is {v}")


def _dec_ctx(fn):
    def run(d):
        with decimal.localcontext(_D):
            return fn(d)
    return run


def _rounding(name, mode):
    """$round / $trunc with an optional place argument (-20..100)."""
    def compile_op(args, cc):
        lst = args_list(args)
        if not 1 <= len(lst) <= 2:
            raise MongoError(28667, f"Expression {name} takes at least 1 arguments, and at most 2, but "
                                    f"{len(lst)} were passed in.")
        a = cc(lst[0])
        p = cc(lst[1]) if len(lst) == 2 else (lambda d, v: 0)

        def op(doc, vars):
            v, place = a(doc, vars), p(doc, vars)
            if v is None or v is MISSING or place is None or place is MISSING:
                return None
            k = num_kind(v)
            if k is None:
                raise MongoError(51081, f"{name} only supports numeric types, not {type_name(v)}")
            fp = as_float(place) if num_kind(place) is not None else float("nan")
            if not math.isfinite(fp) or fp != int(fp) or not -20 <= int(fp) < 100:
                raise MongoError(51083, f"cannot apply {name} with precision value {place} value must be in [-20, 100]")
            place = int(as_float(place))
            if k in (KIND_INT, KIND_LONG):
                if place >= 0:
                    return v
                q = Decimal(int(v)).quantize(Decimal(f"1E{-place}"), rounding=mode)
                return make_integer(int(q), k)
            d = to_decimal(v)
            if not d.is_finite():
                return v
            with decimal.localcontext() as ctx:
                ctx.prec = 60
                q = d.quantize(Decimal(1).scaleb(-place), rounding=mode)
            if k == KIND_DECIMAL:
                return make_decimal(q)
            return float(q)
        return op
    return compile_op


def compile_log(args, cc):
    a, b = (cc(x) for x in check_arity("$log", args, 2))

    def log(doc, vars):
        x, base = a(doc, vars), b(doc, vars)
        if x is None or x is MISSING or base is None or base is MISSING:
            return None
        if num_kind(x) is None:
            raise MongoError(28756, f"$log's argument must be numeric, not {type_name(x)}")
        if num_kind(base) is None:
            raise MongoError(28757, f"$log's base must be numeric, not {type_name(base)}")
        fx, fb = as_float(x), as_float(base)
        if not fx > 0:
            raise MongoError(28758, f"$log's argument must be a positive number, but is {x}")
        if not fb > 0 or fb == 1:
            raise MongoError(28759, f"$log's base must be a positive number not equal to 1, but is {base}")
        if num_kind(x) == KIND_DECIMAL or num_kind(base) == KIND_DECIMAL:
            return make_decimal(_D.divide(_D.ln(to_decimal(x)), _D.ln(to_decimal(base))))
        return math.log(fx) / math.log(fb)
    return log


def compile_pow(args, cc):
    a, b = (cc(x) for x in check_arity("$pow", args, 2))

    def pow_(doc, vars):
        x, e = a(doc, vars), b(doc, vars)
        if x is None or x is MISSING or e is None or e is MISSING:
            return None
        kx, ke = num_kind(x), num_kind(e)
        if kx is None:
            raise MongoError(28762, f"$pow's base must be numeric, not {type_name(x)}")
        if ke is None:
            raise MongoError(28763, f"$pow's exponent must be numeric, not {type_name(e)}")
        kind = max(kx, ke)
        if as_float(x) == 0 and as_float(e) < 0:
            raise MongoError(28764, "$pow cannot take a base of 0 and a negative exponent")
        if kind == KIND_DECIMAL:
            return make_decimal(_D.power(to_decimal(x), to_decimal(e)))
        if kind == KIND_DOUBLE:
            try:
                return math.pow(as_float(x), as_float(e))
            except (OverflowError, ValueError):
                return float("nan") if as_float(x) < 0 else float("inf")
        ix, ie = int(x), int(e)
        if ie < 0:  # only 1 and -1 stay integral
            if ix == 1:
                return make_integer(1, kind)
            if ix == -1:
                return make_integer(1 if ie % 2 == 0 else -1, kind)
            return math.pow(ix, ie)
        if abs(ix) > 1 and ie > 64:  # certainly beyond a long: a double, possibly infinite
            try:
                return math.pow(ix, ie)
            except OverflowError:
                return float("inf") if ix > 0 or ie % 2 == 0 else float("-inf")
        return make_integer(ix**ie, kind)
    return pow_


def compile_rand(args, cc):
    if args not in ({}, []):
        raise MongoError(3040500, "$rand does not currently accept arguments")
    return lambda doc, vars: random.random()


def _float_fn(fn, name):
    def safe(x):
        try:
            return fn(x)
        except OverflowError:
            return float("inf")
        except ValueError:
            return float("nan")
    return safe


def _int_abs(v):
    if v == -(2**63):
        raise MongoError(28680, "can't take $abs of long long min")
    return abs(v)


def _bit_operand(name, v):
    """(value, kind) of a bitwise operand; None for null/missing; 14 for anything but int/long."""
    if v is None or v is MISSING:
        return None
    k = num_kind(v)
    if k not in (KIND_INT, KIND_LONG):
        raise MongoError(ErrorCode.TypeMismatch, f"{name} only supports int and long operands.")
    return int(v), k


def _bitwise(name, fold, identity):
    def compile_op(args, cc):
        fns = [cc(a) for a in args_list(args)]

        def op(doc, vars):
            result, kind, null = identity, KIND_INT, False
            for fn in fns:
                operand = _bit_operand(name, fn(doc, vars))
                if operand is None:
                    null = True
                    continue
                result = fold(result, operand[0])
                kind = max(kind, operand[1])
            return None if null else make_integer(result, kind)
        return op
    return compile_op


def compile_bit_not(args, cc):
    (a,) = (cc(x) for x in check_arity("$bitNot", args, 1))

    def bit_not(doc, vars):
        operand = _bit_operand("$bitNot", a(doc, vars))
        return None if operand is None else make_integer(~operand[0], operand[1])
    return bit_not


OPERATORS = {
    "$add": compile_add,
    "$subtract": compile_subtract,
    "$multiply": compile_multiply,
    "$divide": compile_divide,
    "$mod": compile_mod,
    "$abs": _single_numeric("$abs", _int_abs, abs, abs),
    "$ceil": _single_numeric("$ceil", lambda i: i, lambda f: float(math.ceil(f)) if math.isfinite(f) else f,
                             lambda d: d.to_integral_value(ROUND_CEILING) if d.is_finite() else d),
    "$floor": _single_numeric("$floor", lambda i: i, lambda f: float(math.floor(f)) if math.isfinite(f) else f,
                              lambda d: d.to_integral_value(ROUND_FLOOR) if d.is_finite() else d),
    "$sqrt": _single_numeric("$sqrt", None, _float_fn(math.sqrt, "$sqrt"), _dec_ctx(lambda d: d.sqrt()), _check_sqrt),
    "$exp": _single_numeric("$exp", None, _float_fn(math.exp, "$exp"), _dec_ctx(lambda d: d.exp())),
    "$ln": _single_numeric("$ln", None, math.log, _dec_ctx(lambda d: d.ln()), _check_ln),
    "$log10": _single_numeric("$log10", None, math.log10, _dec_ctx(lambda d: d.log10()), _check_log10),
    "$round": _rounding("$round", ROUND_HALF_EVEN),
    "$trunc": _rounding("$trunc", ROUND_DOWN),
    "$log": compile_log,
    "$pow": compile_pow,
    "$rand": compile_rand,
    "$bitAnd": _bitwise("$bitAnd", lambda a, b: a & b, -1),
    "$bitOr": _bitwise("$bitOr", lambda a, b: a | b, 0),
    "$bitXor": _bitwise("$bitXor", lambda a, b: a ^ b, 0),
    "$bitNot": compile_bit_not,
}
OPERATORS = {name: (op if name == "$rand" else decimal_safe(op)) for name, op in OPERATORS.items()}
