"""Arithmetic expressions: $add $subtract $multiply $divide $mod $abs $ceil $floor $round $trunc
$sqrt $exp $ln $log $log10 $pow $rand, the trigonometric $sin $cos $tan $asin $acos $atan $atan2
$sinh $cosh $tanh $asinh $acosh $atanh $degreesToRadians $radiansToDegrees, and the bitwise $bitAnd
$bitOr $bitXor $bitNot (int and long operands only: 14 TypeMismatch otherwise; an int result when
every operand is an int).

Result types follow mongod: the widest input kind wins (int < long < double < decimal); int results
that overflow become long, long results that overflow become double. null or missing input -> null.
A double meeting a decimal is converted with 15 significant digits (``coerce_decimal``), and decimal
logarithms, powers and trigonometry round as Intel's decimal library does (``expr_base``).
"""

from __future__ import annotations

import decimal
import math
import random
from decimal import ROUND_CEILING, ROUND_DOWN, ROUND_FLOOR, ROUND_HALF_EVEN, Decimal
from typing import Any

from bson.int64 import Int64

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query import dates
from tidemark.query.expr_base import (
    DECIMAL_CONTEXT,
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    KIND_DECIMAL,
    KIND_DOUBLE,
    KIND_INT,
    KIND_LONG,
    args_list,
    as_float,
    check_arity,
    coerce_decimal,
    decimal_atan2,
    decimal_function,
    decimal_log,
    decimal_power,
    decimal_safe,
    double_to_decimal34,
    int32_arg,
    make_decimal,
    make_integer,
    make_number,
    num_kind,
    pad_decimal,
    rerun_trap_free,
    stream_double,
    type_name,
)
from tidemark.query.values import MISSING

_D = DECIMAL_CONTEXT  # mongod's decimals: 34 digits, IEEE 754-2008 results instead of exceptions


def compile_add(args, cc):
    """mongod's AddState: one running total, int64 (int32 results narrowed back), widening to double
    when a double joins or the long overflows, to decimal when a decimal joins. A date adds its
    milliseconds as a long in its place, and the total becomes a date: a double one rounded half
    away from zero (llround), a decimal one half to even. The first nullish operand ends it (null),
    before any later operand's type is checked."""
    fns = [cc(a) for a in args_list(args)]
    count = len(fns)

    def add(doc, vars, first=()):
        # ``first``: the leading operands' values when add2 below has read them already
        kind = KIND_INT
        total: Any = 0  # int, then float when a double joins or the long overflows
        is_date = False
        dec: Any = None  # the Decimal sum once a decimal joins
        done = len(first)
        for i in range(count):
            v = first[i] if i < done else fns[i](doc, vars)
            k = num_kind(v)
            if k is None:
                if v is None or v is MISSING:
                    return None
                ms = dates.to_millis(v) if type(v).__name__ in ("datetime", "DatetimeMS") else None
                if ms is None:
                    raise MongoError(ErrorCode.TypeMismatch,
                                     f"$add only supports numeric or date types, not {type_name(v)}")
                if is_date:
                    raise MongoError(16612, "only one date allowed in an $add expression")
                is_date = True
                v, k = ms, KIND_INT  # (a date does not widen the total's type)
            if k > kind:
                if k == KIND_DECIMAL and dec is None:
                    # mongod keeps 34 digits of the double total so far, but 15 of each double added later
                    dec = double_to_decimal34(total) if type(total) is float else Decimal(total)
                kind = k
            if kind == KIND_DECIMAL:
                dec = _D.add(dec if dec is not None else Decimal(0), coerce_decimal(v))
            elif kind == KIND_DOUBLE:
                total = float(total) + as_float(v)
            else:
                total += v
                if not INT64_MIN <= total <= INT64_MAX:
                    # the long total overflowing goes on as a double: the long so far plus this
                    # operand, each as a double (not the exact sum rounded once)
                    total, kind = float(total - v) + float(v), KIND_DOUBLE
        if is_date:
            if kind == KIND_DECIMAL:
                if not dec.is_finite():
                    raise MongoError(ErrorCode.Overflow, "date overflow in $add")
                return _date_result(int(dec.to_integral_value(ROUND_HALF_EVEN)))
            if kind == KIND_DOUBLE:
                # (NaN fails both bounds; 2^63 itself is out: it is where LLONG_MAX rounds to)
                if not -(2.0**63) <= total < 2.0**63:
                    raise MongoError(ErrorCode.Overflow, "date overflow in $add")
                return _date_result(llround(total))
            return _date_result(total)
        if kind == KIND_DECIMAL:
            return make_decimal(dec)
        return make_number(total, kind)
    if count != 2:
        def add_n(doc, vars):
            # the loop above while every operand is an int32 int or a double, inline; at the first
            # other one it goes on there with the values read so far
            try:
                read: list = []
                total: Any = 0
                for fn in fns:
                    v = fn(doc, vars)
                    read.append(v)
                    t = type(v)
                    if t is float:
                        total = float(total) + v
                    elif t is int and INT32_MIN <= v <= INT32_MAX:
                        total = total + v if type(total) is int else total + float(v)
                    else:
                        return add(doc, vars, read)
                if type(total) is float:
                    return total
                return total if INT32_MIN <= total <= INT32_MAX else Int64(total)
            except decimal.DecimalException:
                return rerun_trap_free(add_n, doc, vars)
        add_n.decimal_safe = True  # type: ignore[attr-defined]  # (expr_base.decimal_safe)
        return add_n
    f, g = fns

    def add2(doc, vars):
        # the loop above for two int32 ints or doubles, inline; anything else goes through it
        try:
            x = f(doc, vars)
            tx = type(x)
            if tx is float or (tx is int and INT32_MIN <= x <= INT32_MAX):
                y = g(doc, vars)
                ty = type(y)
                if ty is float:
                    return (0.0 + x) + y if tx is float else float(x) + y
                if ty is int and INT32_MIN <= y <= INT32_MAX:
                    if tx is float:
                        return (0.0 + x) + float(y)
                    r = x + y
                    return r if INT32_MIN <= r <= INT32_MAX else Int64(r)
                return add(doc, vars, (x, y))
            return add(doc, vars, (x,))
        except decimal.DecimalException:
            return rerun_trap_free(add2, doc, vars)
    add2.decimal_safe = True  # type: ignore[attr-defined]  # (expr_base.decimal_safe)
    return add2


def llround(f: float) -> int:
    """C's llround: to the nearest integer, halves away from zero (Python's round() goes to even)."""
    r = math.trunc(f)
    if abs(f - r) >= 0.5:
        r += 1 if f > 0 else -1
    return r


def compile_subtract(args, cc):
    a, b = (cc(x) for x in check_arity("$subtract", args, 2))

    def subtract(doc, vars):
        try:
            x, y = a(doc, vars), b(doc, vars)
            tx, ty = type(x), type(y)
            if tx is float:  # the common kinds inline: a double, or two int32 ints
                if ty is float or ty is int:
                    return x - float(y)
            elif tx is int and INT32_MIN <= x <= INT32_MAX:
                if ty is float:
                    return float(x) - y
                if ty is int and INT32_MIN <= y <= INT32_MAX:
                    r = x - y
                    return r if INT32_MIN <= r <= INT32_MAX else Int64(r)
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
                    # a double is rounded half away from zero, a decimal half to even (subtract.js)
                    if ky == KIND_DECIMAL:
                        d = y.to_decimal()
                        if not d.is_finite():
                            raise MongoError(ErrorCode.Overflow, "date overflow in $subtract")
                        return _date_result(xm - int(d.to_integral_value(ROUND_HALF_EVEN)))
                    if ky == KIND_DOUBLE:
                        if not math.isfinite(y):
                            raise MongoError(ErrorCode.Overflow, "date overflow in $subtract")
                        return _date_result(xm - llround(y))
                    return _date_result(xm - int(y))
            raise MongoError(ErrorCode.TypeMismatch, f"cant $subtract a {type_name(y)} from a {type_name(x)}")
        except decimal.DecimalException:
            return rerun_trap_free(subtract, doc, vars)
    subtract.decimal_safe = True  # type: ignore[attr-defined]  # (expr_base.decimal_safe)
    return subtract


def _date_result(ms: int):
    if not -(2**63) <= ms < 2**63:
        raise MongoError(ErrorCode.Overflow, "date overflow")
    return dates.from_millis(ms)


def _binary_numeric(x, y, kind, op):
    if kind == KIND_DECIMAL:
        with decimal.localcontext(_D):
            return make_decimal(op(coerce_decimal(x), coerce_decimal(y)))
    if kind == KIND_DOUBLE:
        return float(op(as_float(x), as_float(y)))
    exact = op(int(x), int(y))
    if not INT64_MIN <= exact <= INT64_MAX:
        # mongod's $subtract: a long result overflowing is the operands' difference as doubles
        return float(op(float(x), float(y)))
    return make_integer(exact, kind)


def compile_multiply(args, cc):
    fns = [cc(a) for a in args_list(args)]
    count = len(fns)

    def multiply(doc, vars, first=()):
        # mongod's MultiplyState keeps a double product of every operand beside the exact one: a long
        # product overflowing, or a double operand joining, continues from that double product
        # (the operands' doubles multiplied in order), not from the exact product rounded once.
        # ``first``: the leading operands' values when multiply2 below has read them already.
        prod: Any  # int, then Decimal once a decimal joins
        kind, prod, dprod = KIND_INT, 1, 1.0
        done = len(first)
        for i in range(count):
            v = first[i] if i < done else fns[i](doc, vars)
            k = num_kind(v)
            if k is None:
                if v is None or v is MISSING:
                    return None  # (before any later operand's type is checked, as mongod)
                raise MongoError(ErrorCode.TypeMismatch, f"$multiply only supports numeric types, not {type_name(v)}")
            if k > kind:
                if k == KIND_DECIMAL:
                    prod = coerce_decimal(dprod) if kind == KIND_DOUBLE else coerce_decimal(prod)
                kind = k
            if kind == KIND_DECIMAL:
                prod = _D.multiply(prod, coerce_decimal(v))
                continue
            dprod *= as_float(v)
            if kind != KIND_DOUBLE:
                prod = prod * int(v)
                if not INT64_MIN <= prod <= INT64_MAX:
                    kind = KIND_DOUBLE
        if kind == KIND_DOUBLE:
            return dprod
        return make_number(prod, kind)
    if count != 2:
        return multiply
    f, g = fns

    def multiply2(doc, vars):
        # the loop above for two int32 ints or doubles, inline (the double product is
        # (1.0 * x) * y; an int32 product always fits a long); anything else goes through it
        try:
            x = f(doc, vars)
            tx = type(x)
            if tx is float or (tx is int and INT32_MIN <= x <= INT32_MAX):
                y = g(doc, vars)
                ty = type(y)
                if ty is float:
                    return (1.0 * x) * y
                if ty is int and INT32_MIN <= y <= INT32_MAX:
                    if tx is float:
                        return (1.0 * x) * float(y)
                    r = x * y
                    return r if INT32_MIN <= r <= INT32_MAX else Int64(r)
                return multiply(doc, vars, (x, y))
            return multiply(doc, vars, (x,))
        except decimal.DecimalException:
            return rerun_trap_free(multiply2, doc, vars)
    multiply2.decimal_safe = True  # type: ignore[attr-defined]  # (expr_base.decimal_safe)
    return multiply2


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
            dy = coerce_decimal(y)
            if dy == 0:
                raise MongoError(ErrorCode.BadValue, "can't $divide by zero")
            return make_decimal(_D.divide(coerce_decimal(x), dy))
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
        if kx == KIND_DECIMAL or ky == KIND_DECIMAL:
            dy = coerce_decimal(y)
            if dy == 0:
                raise MongoError(16610, "can't $mod by 0")
            return make_decimal(_D.remainder(coerce_decimal(x), dy))  # truncating, like C fmod
        fy = as_float(y)
        if fy == 0:
            raise MongoError(16610, "can't $mod by 0")
        # a double dividend, or a double divisor that is not an int32 integer, gives fmod's double;
        # otherwise the integer remainder: a long if either side is a long (8 % 3.0 is the int 2)
        if kx == KIND_DOUBLE or (ky == KIND_DOUBLE and int32_arg(fy) is None):
            fx = as_float(x)
            return math.fmod(fx, fy) if math.isfinite(fx) else float("nan")
        ix, iy = int(x), int(fy) if ky == KIND_DOUBLE else int(y)
        r = abs(ix) % abs(iy)
        return make_integer(-r if ix < 0 else r, KIND_LONG if KIND_LONG in (kx, ky) else KIND_INT)
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


def _dec_ctx(fn):
    def run(d):
        with decimal.localcontext(_D):
            return fn(d)
    return run


def _decimal_exp(d: Decimal) -> Decimal:
    return d if d.is_nan() else decimal_function("exp", d)


def _positive_decimal(v) -> Decimal | None:
    """The decimal of a decimal ``v`` greater than 0, else None: mongod takes a decimal logarithm only
    then, and otherwise falls back to the double checks (so a decimal NaN gives a double NaN)."""
    d = coerce_decimal(v)
    return d if not d.is_nan() and d > 0 else None


def _logarithm(name, code, base, f_float):
    """$ln (``base`` 0) and $log10 (``base`` 10): 28765 for non-numbers, ``code`` for arguments <= 0."""
    def compile_op(args, cc):
        (a,) = (cc(x) for x in check_arity(name, args, 1))

        def op(doc, vars):
            v = a(doc, vars)
            if v is None or v is MISSING:
                return None
            k = num_kind(v)
            if k is None:
                raise MongoError(28765, f"{name} only supports numeric types, not {type_name(v)}")
            if k == KIND_DECIMAL:
                d = _positive_decimal(v)
                if d is not None:
                    return make_decimal(decimal_log(d, base))
            f = as_float(v)
            if not (f > 0 or f != f):
                raise MongoError(code, f"{name}'s argument must be a positive number, but is {stream_double(f)}")
            return f_float(f)
        return op
    return compile_op


def compile_log(args, cc):
    a, b = (cc(x) for x in check_arity("$log", args, 2))

    def log(doc, vars):
        x, base = a(doc, vars), b(doc, vars)
        if x is None or x is MISSING or base is None or base is MISSING:
            return None
        kx, kb = num_kind(x), num_kind(base)
        if kx is None:
            raise MongoError(28756, f"$log's argument must be numeric, not {type_name(x)}")
        if kb is None:
            raise MongoError(28757, f"$log's base must be numeric, not {type_name(base)}")
        if kx == KIND_DECIMAL or kb == KIND_DECIMAL:
            dx, db = _positive_decimal(x), _positive_decimal(base)
            if dx is not None and db is not None and db != 1:
                if db == 10 or db == 2:  # mongod uses Intel's log10 / log2 for these bases
                    return make_decimal(decimal_log(dx, int(db)))
                return make_decimal(_D.divide(decimal_log(dx), decimal_log(db)))
        fx, fb = as_float(x), as_float(base)
        if not (fx > 0 or fx != fx):
            raise MongoError(28758, f"$log's argument must be a positive number, but is {stream_double(fx)}")
        if not ((fb > 0 and fb != 1) or fb != fb):
            raise MongoError(28759, f"$log's base must be a positive number not equal to 1, but is "
                                    f"{stream_double(fb)}")
        return math.log(fx) / math.log(fb)
    return log


def _precision(name: str, place) -> int:
    """The place argument of $round/$trunc as mongod checks it: coerced to a long (16004 for a
    non-number), an int32 integer (51082), in [-20, 100] (51083). A place beyond the long range (NaN,
    ±inf, 1e300) is 51083 here; mongod's long coercion fails first with 31109 (a change that needs
    tests/query/test_expr_operators.py's {$round: [1.5, inf]} row to expect 31109)."""
    k = num_kind(place)
    if k is None:
        raise MongoError(16004, f"can't convert from BSON type {type_name(place)} to long")
    if k >= KIND_DOUBLE:
        f = as_float(place)
        if not INT64_MIN <= f < 2.0**63:
            raise MongoError(51083, f"cannot apply {name} with precision value {stream_double(f)} value must be "
                                    "in [-20, 100]")
        integral = (int32_arg(f) is not None if k == KIND_DOUBLE else
                    place.to_decimal() == place.to_decimal().to_integral_value() and INT32_MIN <= f <= INT32_MAX)
        n = int(f) if k == KIND_DOUBLE else int(place.to_decimal())
    else:
        n = int(place)
        integral = INT32_MIN <= n <= INT32_MAX
    if not integral:
        raise MongoError(51082, f"precision argument to  {name} must be a integral value")
    if not -20 <= n <= 100:
        raise MongoError(51083, f"cannot apply {name} with precision value {n} value must be in [-20, 100]")
    return n


def _quantize(d: Decimal, places: int, mode: str) -> Decimal:
    """mongod's Decimal128::quantize to 10^-places: a result that would need more than 34 digits is the
    value itself padded to 34 digits ($trunc of 1.298 to 100 places is 1.298000...0, 34 digits)."""
    if d.is_nan():
        return d
    if d and d.adjusted() + places > 33:
        return pad_decimal(d)
    return d.quantize(Decimal((0, (1,), -places)), mode, _D)


def _rounding(name, mode):
    """$round / $trunc with an optional place argument (-20..100)."""
    def compile_op(args, cc):
        lst = args_list(args)
        if not 1 <= len(lst) <= 2:
            raise MongoError(28667, f"Expression {name} takes at least 1 arguments, and at most 2, but "
                                    f"{len(lst)} were passed in.")
        a = cc(lst[0])
        p = cc(lst[1]) if len(lst) == 2 else None

        def op(doc, vars):
            v = a(doc, vars)
            if v is None or v is MISSING:
                return None
            k = num_kind(v)
            if k is None:
                raise MongoError(51081, f"{name} only supports numeric types, not {type_name(v)}")
            places = 0
            if p is not None:
                place = p(doc, vars)
                if place is None or place is MISSING:
                    return None
                places = _precision(name, place)
            if k == KIND_DECIMAL:
                d = v.to_decimal()
                return v if d.is_infinite() else make_decimal(_quantize(d, places, mode))
            if k == KIND_DOUBLE:
                d = double_to_decimal34(v)  # mongod rounds the double's 34-digit decimal
                return v if d.is_infinite() else float(_quantize(d, places, mode))
            if places >= 0:
                return v
            n = int(Decimal(int(v)).quantize(Decimal((0, (1,), -places)), mode, _D))
            if not INT64_MIN <= n <= INT64_MAX:
                raise MongoError(51080, f"invalid conversion from Decimal128 result in {name} resulting from "
                                        f"arguments: [{int(v)}, {places}]")
            return make_integer(n, k)
        return op
    return compile_op


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
        if kind == KIND_DECIMAL:
            dx, de = coerce_decimal(x), coerce_decimal(e)
            if dx.is_zero() and de.is_signed():
                raise MongoError(28764, "$pow cannot take a base of 0 and a negative exponent")
            return make_decimal(decimal_power(dx, de))
        if as_float(x) == 0 and as_float(e) < 0:
            raise MongoError(28764, "$pow cannot take a base of 0 and a negative exponent")
        if kind == KIND_DOUBLE:
            return c_pow(as_float(x), as_float(e))
        ix, ie = int(x), int(e)
        if ie < 0:  # only 1 and -1 stay integral
            if ix == 1:
                return make_integer(1, kind)
            if ix == -1:
                return make_integer(1 if ie % 2 == 0 else -1, kind)
            return c_pow(float(ix), float(ie))
        if abs(ix) > 1 and ie > 64:  # certainly beyond a long
            return c_pow(float(ix), float(ie))
        exact = ix**ie  # (at most 64 factors of a long: bounded)
        if INT64_MIN <= exact <= INT64_MAX:
            return make_integer(exact, kind)
        # mongod's fallback past a long is pow() of the operands as doubles, not the exact power
        # rounded (which may differ in the last place, and overflows float())
        return c_pow(float(ix), float(ie))
    return pow_


def c_pow(x: float, y: float) -> float:
    """C's pow(): an overflow is ±infinity (negative for a negative base and an odd integral
    exponent), a negative base with a non-integral exponent NaN, where Python's math.pow raises."""
    try:
        return math.pow(x, y)
    except OverflowError:
        negative = x < 0 and y.is_integer() and y % 2 == 1
        return float("-inf") if negative else float("inf")
    except ValueError:
        return float("nan")


# --------------------------------------------------------------------------------------------------
# trigonometry: doubles through C's functions (an int or long argument becomes a double), decimals
# through Intel's (expr_base.decimal_function); NaN passes through, arguments outside a function's
# domain fail with 50989 before any computation, as in mongod's expression_trigonometric.

_INF = float("inf")


def _atanh_double(f: float) -> float:
    return math.copysign(_INF, f) if abs(f) == 1 else math.atanh(f)  # C's atanh(±1) is ±inf


def _sinh_double(f: float) -> float:
    try:
        return math.sinh(f)
    except OverflowError:
        return math.copysign(_INF, f)


def _cosh_double(f: float) -> float:
    try:
        return math.cosh(f)
    except OverflowError:
        return _INF


def _trigonometric(name, f_double, bounds=None):
    """A one-argument trigonometric operator; ``bounds`` is (low, high, inclusive) for the functions
    with a domain."""
    dec_name = name[1:]
    if bounds is not None:
        low, high, inclusive = bounds
        dec_low, dec_high = Decimal(low), Decimal(high)
        shown = f"{'[' if inclusive else '('}{stream_double(low)},{stream_double(high)}{']' if inclusive else ')'}"

        def outside(x) -> bool:
            lo, hi = (dec_low, dec_high) if type(x) is Decimal else (low, high)
            return not (lo <= x <= hi) if inclusive else not (lo < x < hi)

    def compile_op(args, cc):
        (a,) = (cc(x) for x in check_arity(name, args, 1))

        def op(doc, vars):
            v = a(doc, vars)
            if v is None or v is MISSING:
                return None
            k = num_kind(v)
            if k is None:
                raise MongoError(28765, f"{name} only supports numeric types, not {type_name(v)}")
            if k == KIND_DECIMAL:
                d = v.to_decimal()
                if d.is_nan():
                    return v
                if bounds is not None and outside(d):
                    raise MongoError(50989, f"cannot apply {name} to {v}, value must in {shown}")
                return make_decimal(decimal_function(dec_name, d))
            f = float(v)
            if f != f:
                return v
            if bounds is not None and outside(f):
                raise MongoError(50989, f"cannot apply {name} to {stream_double(f)}, value must in {shown}")
            return f_double(f)
        return op
    return compile_op


def compile_atan2(args, cc):
    a, b = (cc(x) for x in check_arity("$atan2", args, 2))

    def atan2(doc, vars):
        y = a(doc, vars)
        if y is None or y is MISSING:
            return None
        ky = num_kind(y)
        if ky is None:
            raise MongoError(51044, f"$atan2 only supports numeric types, not {type_name(y)}")
        x = b(doc, vars)
        if x is None or x is MISSING:
            return None
        kx = num_kind(x)
        if kx is None:
            raise MongoError(51045, f"$atan2 only supports numeric types, not {type_name(x)}")
        if ky == KIND_DECIMAL or kx == KIND_DECIMAL:
            return make_decimal(decimal_atan2(coerce_decimal(y), coerce_decimal(x)))
        return math.atan2(as_float(y), as_float(x))
    return atan2


# mongod's factors: π/180 and 180/π from its 34-digit decimal π, and from the double π
_DECIMAL_PI = _D.create_decimal(Decimal("3.14159265358979323846264338327950288419716939937510"))
_DECIMAL_DEGREE = _D.divide(_DECIMAL_PI, Decimal(180))
_DECIMAL_RADIAN = _D.divide(Decimal(180), _DECIMAL_PI)
_DOUBLE_PI = 3.141592653589793


def _angle_conversion(name, dec_factor, dbl_factor):
    def compile_op(args, cc):
        (a,) = (cc(x) for x in check_arity(name, args, 1))

        def op(doc, vars):
            v = a(doc, vars)
            if v is None or v is MISSING:
                return None
            k = num_kind(v)
            if k is None:
                raise MongoError(28765, f"{name} only supports numeric types, not {type_name(v)}")
            if k == KIND_DECIMAL:
                return make_decimal(_D.multiply(v.to_decimal(), dec_factor))
            return float(v) * dbl_factor
        return op
    return compile_op


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
    "$exp": _single_numeric("$exp", None, _float_fn(math.exp, "$exp"), _decimal_exp),
    "$ln": _logarithm("$ln", 28766, 0, math.log),
    "$log10": _logarithm("$log10", 28761, 10, math.log10),
    "$round": _rounding("$round", ROUND_HALF_EVEN),
    "$trunc": _rounding("$trunc", ROUND_DOWN),
    "$log": compile_log,
    "$pow": compile_pow,
    "$rand": compile_rand,
    "$bitAnd": _bitwise("$bitAnd", lambda a, b: a & b, -1),
    "$bitOr": _bitwise("$bitOr", lambda a, b: a | b, 0),
    "$bitXor": _bitwise("$bitXor", lambda a, b: a ^ b, 0),
    "$bitNot": compile_bit_not,
    "$sin": _trigonometric("$sin", math.sin, (-_INF, _INF, False)),
    "$cos": _trigonometric("$cos", math.cos, (-_INF, _INF, False)),
    "$tan": _trigonometric("$tan", math.tan, (-_INF, _INF, False)),
    "$asin": _trigonometric("$asin", math.asin, (-1.0, 1.0, True)),
    "$acos": _trigonometric("$acos", math.acos, (-1.0, 1.0, True)),
    "$atan": _trigonometric("$atan", math.atan),
    "$atan2": compile_atan2,
    "$sinh": _trigonometric("$sinh", _sinh_double),
    "$cosh": _trigonometric("$cosh", _cosh_double),
    "$tanh": _trigonometric("$tanh", math.tanh),
    "$asinh": _trigonometric("$asinh", math.asinh),
    "$acosh": _trigonometric("$acosh", math.acosh, (1.0, _INF, True)),
    "$atanh": _trigonometric("$atanh", _atanh_double, (-1.0, 1.0, True)),
    "$degreesToRadians": _angle_conversion("$degreesToRadians", _DECIMAL_DEGREE, _DOUBLE_PI / 180.0),
    "$radiansToDegrees": _angle_conversion("$radiansToDegrees", _DECIMAL_RADIAN, 180.0 / _DOUBLE_PI),
}
OPERATORS = {name: (op if name == "$rand" else decimal_safe(op)) for name, op in OPERATORS.items()}
