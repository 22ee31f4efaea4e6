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
from collections.abc import Callable, Collection, Sequence
from decimal import Decimal
from typing import Any

from bson.decimal128 import Decimal128, create_decimal128_context
from bson.int64 import Int64

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.values import DBREF_FIELDS, MISSING, bson_type_name, sort_key

Compiled = Callable[[Any, dict], Any]
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
DECIMAL_CONTEXT = create_decimal128_context()

def safe_number_long(value: int | float | Decimal128) -> int:
    """``BSONElement::safeNumberLong`` of a number, as mongod's IDL reads a ``safeInt64`` (a pure
    conversion: never raises): NaN is 0, a double truncated toward zero, a decimal rounded half to
    even, values past the long range (infinities too) clamped to it."""
    if isinstance(value, Decimal128):
        d = value.to_decimal()
        return 0 if d.is_nan() else INT64_MAX if d > INT64_MAX else INT64_MIN if d < INT64_MIN \
            else int(d.to_integral_value(rounding=decimal.ROUND_HALF_EVEN))
    if isinstance(value, float):
        return 0 if value != value else INT64_MAX if value >= 2.0**63 else INT64_MIN if value < -(2.0**63) \
            else int(value)
    return min(max(int(value), INT64_MIN), INT64_MAX)


def safe_number_int(value: int | float | Decimal128) -> int:
    """``BSONElement::safeNumberInt`` of a number (a pure conversion: never raises): the long reading,
    clamped to the int range."""
    return min(max(safe_number_long(value), INT32_MIN), INT32_MAX)


# mongod's Ordering::kMaxCompoundIndexKeys: every sort pattern mongod runs ($sort, the sort
# $setWindowFields adds, $top/$bottom's sortBy) becomes an Ordering of one bit per key.
MAX_COMPOUND_KEYS = 32


# The '$'-prefixed field names mongod's FieldPath accepts (field_path.cpp kAllowedDollarPrefixedFields):
# DBRef fields and the metadata fields a projection may carry.
DOLLAR_FIELD_NAMES = frozenset(DBREF_FIELDS) | {"$sortKey", "$recordId"}


def check_field_name(name: str) -> None:
    """One field name (a path component, an object expression's or a $facet's output name) as mongod's
    FieldPath::uassertValidFieldName checks it, in its order: 15998 empty, 16410 '$'-prefixed (but
    ``DOLLAR_FIELD_NAMES``), 16411 a NUL, 16412 a '.'. The one copy of that rule."""
    if not name:
        raise MongoError(15998, "FieldPath field names may not be empty strings.")
    if name[0] == "$" and name not in DOLLAR_FIELD_NAMES:
        raise MongoError(16410, "FieldPath field names may not start with '$'. Consider using $getField or $setField.")
    if "\0" in name:
        raise MongoError(16411, "FieldPath field names may not contain '\\0'.")
    if "." in name:
        raise MongoError(16412, "FieldPath field names may not contain '.'. Consider using $getField or $setField.")


def check_compound_keys(fields: Sequence[tuple[str, Any]]) -> None:
    """A parsed sort pattern (``sort.parse_sort``'s pairs) with more than 32 keys that are not $meta
    sorts (mongod leaves those out of the Ordering) is 13103, as mongod's Ordering::make."""
    if len(fields) > MAX_COMPOUND_KEYS and sum(1 for _, d in fields if type(d) is not str) > MAX_COMPOUND_KEYS:
        raise MongoError(13103, "too many compound keys")


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
        if getattr(fn, "decimal_safe", False):  # a hot closure that catches it itself (no extra call)
            return fn

        def guarded(doc, vars):
            try:
                return fn(doc, vars)
            except decimal.DecimalException:
                with decimal.localcontext(DECIMAL_CONTEXT):
                    return fn(doc, vars)
        return guarded
    return compile_guarded


def rerun_trap_free(fn: Compiled, doc: Any, vars: dict) -> Any:
    """``decimal_safe``'s second run, for a closure marked ``decimal_safe`` that catches
    ``decimal.DecimalException`` in its own body."""
    with decimal.localcontext(DECIMAL_CONTEXT):
        return fn(doc, vars)


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
    if len(lst) != n:  # mongod says "arguments" whatever ``n`` is
        raise MongoError(16020, f"Expression {name} takes exactly {n} arguments. {len(lst)} were passed in.")
    return lst


def named_args(args: Any, fields: Collection[str], not_object: tuple[int, str], unknown: tuple[int, str],
               required: Sequence[tuple[str, int, str]] = ()) -> dict:
    """An operator's object of named arguments, checked in mongod's order with the operator's codes:
    not an object -> ``not_object`` (its message may name the type: ``{}``), the first field not in
    ``fields`` -> ``unknown`` (``{}``: the field), then each missing ``required`` (field, code, message).
    The one check of named arguments: operators without codes of their own use ``require_object``."""
    if type(args) is not dict:
        raise MongoError(not_object[0], not_object[1].format(type_name(args)))
    for field in args:
        if field not in fields:
            raise MongoError(unknown[0], unknown[1].format(field))
    for field, code, message in required:
        if field not in args:
            raise MongoError(code, message)
    return args


def require_object(name: str, args: Any, allowed: set[str], required: tuple = ()) -> dict:
    """Named-argument operators whose errors are all FailedToParse: an object with only ``allowed``
    keys and all ``required`` ones."""
    return named_args(args, allowed, (ErrorCode.FailedToParse, f"{name} only supports an object as its argument"),
                      (ErrorCode.FailedToParse, f"{name} found an unknown argument: {{}}"),
                      [(k, ErrorCode.FailedToParse, f"Missing '{k}' parameter to {name}") for k in required])


def const(value: Any) -> Compiled:
    return lambda doc, vars: value


# What an operator compiler may learn about a compiled argument, to specialise its closure at compile
# time (the closure then does no dispatch per document): ``expressions`` marks a constant's closure
# ``is_const`` and a one-component field path's (``"$name"``) with ``field``.

def constant_of(fn: Compiled) -> tuple[bool, Any]:
    """(True, value) when the compiled ``fn`` is a constant (reads no document and no variable), else
    (False, None). A constant array's value is one copy: the caller must not mutate it."""
    if getattr(fn, "is_const", False):
        return True, fn(None, {})
    return False, None


def field_of(fn: Compiled) -> str | None:
    """The field a compiled one-component path (``"$name"``: ``current.get(name)``, MISSING when
    ``current`` is not a document) reads, else None."""
    return getattr(fn, "field", None)


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


def int32_arg(v: Any) -> int | None:
    """mongod's ``Value::integral()``: a number exactly equal to a 32-bit integer, as that int."""
    i = int_arg(v)
    return i if i is not None and INT32_MIN <= i <= INT32_MAX else None


def validate_variable_name(name: str, *, allow_current: bool = False) -> None:
    """mongod's rule for a name being defined (variableValidation::validateNameForUserWrite): 16866 empty,
    16867 a first character other than a-z or non-ASCII, 16868 a later one other than a letter, digit, '_'
    or non-ASCII."""
    if allow_current and name == "CURRENT":
        return
    if not name:
        raise MongoError(16866, "empty variable names are not allowed")
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
            if i == n - 1:  # the last component: each object element's field, inline
                last = parts[i]
                for el in value:
                    if type(el) is dict:
                        r = el.get(last, MISSING)
                        if r is not MISSING:
                            out.append(r)
                return out
            for el in value:
                if type(el) is dict:
                    r = traverse(el, parts, i)
                    if r is not MISSING:
                        out.append(r)
            return out
        else:
            return MISSING
    return value


# --------------------------------------------------------------------------------------------------
# mongod's number conversions and Decimal128 functions
#
# mongod converts a double to a decimal with 15 significant digits (Value::coerceToDecimal, used by
# every decimal arithmetic operator and by $convert), except for a few running totals that keep 34.
# Its decimal transcendental functions come from Intel's decimal library, which computes most of them
# in binary128 (IEEE quad, 113-bit significand): the input rounded to binary128, the function rounded
# to binary128, the result rounded to 34 decimal digits. The double rounding shows in the last digit
# (ln(2.5) ends in ...110, not the correctly rounded ...111), so the functions below reproduce it:
# they compute at 100 digits (_WORK), then round through binary128.

_WORK = decimal.Context(prec=100, rounding=decimal.ROUND_HALF_EVEN, Emax=10**9, Emin=-(10**9), traps=[])
_TINIEST_ZERO = Decimal("0E-6176")  # adding it pads a decimal to 34 digits (mongod's normalize())
_HALF = Decimal("0.5")


def stream_double(f: float) -> str:
    """A double as C++'s ``ostream << double`` prints it in mongod's messages (6 significant digits)."""
    return "nan" if f != f else f"{f:g}"


def double_to_decimal(f: float) -> Decimal:
    """mongod's Decimal128(double): the double's first 15 significant digits (0.1 -> 0.100000000000000,
    12.5 -> 12.5000000000000); zeros, infinities and NaN convert as they are."""
    if f == 0 or not math.isfinite(f):
        return Decimal(f)
    exact = DECIMAL_CONTEXT.create_decimal(Decimal(f))  # the binary value to 34 digits, as Intel's does
    base2 = math.frexp(f)[1] - 1
    # mongod's integer estimate of the decimal exponent (C division truncates toward zero), one too
    # low at most: quantize to 15 digits and, when that gave 16, once more one place higher.
    base10 = abs(base2 * 30103) // 100000
    base10 = base10 if base2 >= 0 else -base10 - 1
    q = exact.quantize(Decimal((0, (1,), base10 - 14)), decimal.ROUND_HALF_EVEN, DECIMAL_CONTEXT)
    if len(q.as_tuple().digits) > 15:
        q = exact.quantize(Decimal((0, (1,), base10 - 13)), decimal.ROUND_HALF_EVEN, DECIMAL_CONTEXT)
    return q


def double_to_decimal34(f: float) -> Decimal:
    """mongod's Decimal128(double, kRoundTo34Digits): the binary value rounded to 34 digits ($round and
    $trunc of a double, $add's running double total)."""
    return DECIMAL_CONTEXT.create_decimal(Decimal(f))


def coerce_decimal(v: Any) -> Decimal:
    """mongod's Value::coerceToDecimal of a number: doubles to 15 digits, integers exactly."""
    t = type(v)
    if t is Decimal128:
        return v.to_decimal()
    if t is float:
        return double_to_decimal(v)
    return Decimal(int(v))


def pad_decimal(d: Decimal) -> Decimal:
    """``d`` with as many digits as a decimal128 holds (1 -> 1.000000000000000000000000000000000), as
    mongod's Decimal128::normalize() makes it (adding 0E-6176); infinities and NaN unchanged."""
    return DECIMAL_CONTEXT.add(d, _TINIEST_ZERO)


def _to_binary128(d: Decimal) -> tuple[int, int]:
    """``d`` rounded (half-even) to a 113-bit significand: (q, s) with the value q / 2**s. The exponent
    range is not bounded (Intel's functions rescale the inputs that binary128 cannot hold)."""
    num, den = d.as_integer_ratio()
    if num == 0:
        return 0, 0
    a = abs(num)
    e = a.bit_length() - den.bit_length()  # floor(log2(a / den)) is e or e - 1
    if (a < den << e) if e >= 0 else (a << -e < den):
        e -= 1
    s = 112 - e
    top, bottom = (a << s, den) if s >= 0 else (a, den << -s)
    q, r = divmod(top, bottom)
    if 2 * r > bottom or (2 * r == bottom and q & 1):
        q += 1
    return (q if num > 0 else -q), s


def _binary128_input(d: Decimal) -> Decimal:
    """``d`` as the binary128 value Intel's functions compute on (to 100 digits, which is exact enough)."""
    q, s = _to_binary128(d)
    return Decimal(q << -s) if s <= 0 else _WORK.divide(Decimal(q), Decimal(1 << s))


def _binary128_output(y: Decimal) -> Decimal:
    """A function value rounded to binary128, then to 34 digits (an exact value keeps its shortest form:
    log10(100) is 2, not 2.000...)."""
    if not y.is_finite() or not y:
        return DECIMAL_CONTEXT.create_decimal(y)
    q, s = _to_binary128(y)
    if s <= 0:
        return DECIMAL_CONTEXT.create_decimal(q << -s)
    return DECIMAL_CONTEXT.divide(Decimal(q), Decimal(1 << s))


_PI_CACHE: dict[int, Decimal] = {}


def _pi(digits: int) -> Decimal:
    """π to at least ``digits`` digits (Machin's formula in integers; cached per hundred digits, since
    reducing a huge argument of sin/cos needs as many digits as the argument has before its point)."""
    digits = (digits // 100 + 1) * 100
    cached = _PI_CACHE.get(digits)
    if cached is None:
        unity = 10 ** (digits + 10)

        def arccot(x: int) -> int:
            total = term = unity // x
            n, x2, sign = 1, x * x, -1
            while term:
                term //= x2
                n += 2
                total += sign * (term // n)
                sign = -sign
            return total

        # Decimal(int) rather than a string: str() of an int refuses more than 4300 digits
        exact = decimal.Context(prec=digits + 20, Emax=10**9, Emin=-(10**9))
        cached = Decimal(4 * (4 * arccot(5) - arccot(239))).scaleb(-(digits + 10), exact)
        _PI_CACHE[digits] = cached
    return cached


def _sin_cos(x: Decimal) -> tuple[Decimal, Decimal]:
    """(sin x, cos x) in the current (100-digit) context; x is first reduced modulo π/2 with as many
    digits of π as the reduction needs (Intel's reduces exactly too, with a table of 1/2π)."""
    with decimal.localcontext() as ctx:
        ctx.prec = max(0, x.adjusted()) + 120
        half_pi = _pi(ctx.prec) / 2
        k = (x / half_pi).to_integral_value(decimal.ROUND_HALF_EVEN)
        r = x - k * half_pi
    r = +r
    r2 = r * r
    sin, cos, term_s, term_c, n = r, Decimal(1), r, Decimal(1), 0
    while True:  # Taylor series, |r| <= π/4
        n += 2
        term_s = -term_s * r2 / (n * (n + 1))
        term_c = -term_c * r2 / ((n - 1) * n)
        new_sin, new_cos = sin + term_s, cos + term_c
        if new_sin == sin and new_cos == cos:
            break
        sin, cos = new_sin, new_cos
    quadrant = int(k) % 4
    return ((sin, cos), (cos, -sin), (-sin, -cos), (-cos, sin))[quadrant]


def _atan(x: Decimal) -> Decimal:
    if x.is_infinite():
        return (_pi(100) / 2).copy_sign(x)
    if not x:
        return x
    a, invert = abs(x), abs(x) > 1
    if invert:
        a = 1 / a
    for _ in range(2):  # atan(a) = 2 atan(a / (1 + sqrt(1 + a²))): the series then converges fast
        a = a / (1 + (1 + a * a).sqrt())
    a2, term, total, n = a * a, a, a, 1
    while True:
        n += 2
        term = -term * a2
        new = total + term / n
        if new == total:
            break
        total = new
    total *= 4
    if invert:
        total = _pi(100) / 2 - total
    return total.copy_sign(x)


def _atanh_series(v: Decimal) -> Decimal:
    """atanh(v) for |v| <= 1/2 by its series (no cancellation for small v)."""
    v2, term, total, n = v * v, v, v, 1
    while True:
        n += 2
        term *= v2
        new = total + term / n
        if new == total:
            return total
        total = new


def _ln1p(u: Decimal) -> Decimal:
    """ln(1 + u) for -1/3 <= u <= 2 without the cancellation of ln(1 + u) for small u."""
    return 2 * _atanh_series(u / (2 + u))


def _sinh(x: Decimal) -> Decimal:
    if abs(x) < 1:  # series: e^x - e^-x cancels for small x
        x2, term, total, n = x * x, x, x, 1
        while True:
            term = term * x2 / ((n + 1) * (n + 2))
            n += 2
            new = total + term
            if new == total:
                return total
            total = new
    if abs(x) > 20000:  # beyond decimal128 (e^14200 is already)
        return Decimal("Infinity").copy_sign(x)
    e = x.exp()
    return (e - 1 / e) / 2


def _cosh(x: Decimal) -> Decimal:
    if abs(x) > 20000:
        return Decimal("Infinity")
    e = x.exp()
    return (e + 1 / e) / 2


def _tanh(x: Decimal) -> Decimal:
    if x.is_infinite() or abs(x) > 200:  # 1 - tanh(200) is below 100 digits
        return Decimal(1).copy_sign(x)
    if abs(x) < 1:
        s = _sinh(x)
        return s / (1 + s * s).sqrt()
    t = (-2 * abs(x)).exp()
    return ((1 - t) / (1 + t)).copy_sign(x)


def _asinh(x: Decimal) -> Decimal:
    a = abs(x)
    if a.is_infinite() or a >= 1:
        r = (a + (a * a + 1).sqrt()).ln() if a.is_finite() else a
    else:
        r = _ln1p(a + a * a / (1 + (1 + a * a).sqrt()))
    return r.copy_sign(x)


def _acosh(x: Decimal) -> Decimal:
    if x.is_infinite():
        return x
    if x < 2:  # near 1: acosh(1 + d) = ln1p(d + sqrt(d(2 + d)))
        d = x - 1
        return _ln1p(d + (d * (2 + d)).sqrt())
    return (x + ((x - 1) * (x + 1)).sqrt()).ln()


def _atanh(x: Decimal) -> Decimal:
    if abs(x) == 1:
        return Decimal("Infinity").copy_sign(x)
    if abs(x) <= _HALF:
        return _atanh_series(x)
    return ((1 + x) / (1 - x)).ln() / 2


def _asin(x: Decimal) -> Decimal:
    if abs(x) == 1:
        return (_pi(100) / 2).copy_sign(x)
    return _atan(x / ((1 - x) * (1 + x)).sqrt())


def _acos(x: Decimal) -> Decimal:
    if x == -1:
        return +_pi(100)
    return 2 * _atan(((1 - x) / (1 + x)).sqrt())


def _tan(x: Decimal) -> Decimal:
    s, c = _sin_cos(x)
    return s / c


# name -> (function on the 100-digit context, whether Intel's computes on the exact decimal input rather
# than on its binary128 rounding: sin/cos/tan reduce the argument in decimal, exp converts it in two
# parts, ln/log10/log2 correct for the input's rounding when it is near 1)
_DECIMAL_FUNCTIONS: dict[str, tuple[Callable[[Decimal], Decimal], bool]] = {
    "sin": (lambda x: _sin_cos(x)[0], True), "cos": (lambda x: _sin_cos(x)[1], True), "tan": (_tan, True),
    "asin": (_asin, False), "acos": (_acos, False), "atan": (_atan, False),
    "sinh": (_sinh, False), "cosh": (_cosh, False), "tanh": (_tanh, False),
    "asinh": (_asinh, False), "acosh": (_acosh, False), "atanh": (_atanh, False),
    "exp": (lambda x: x.exp(), True),
}


def decimal_function(name: str, d: Decimal) -> Decimal:
    """mongod's Decimal128 sin/cos/.../exp of a finite or infinite ``d`` inside the function's domain
    (callers check the domain and NaN)."""
    fn, exact_input = _DECIMAL_FUNCTIONS[name]
    with decimal.localcontext(_WORK):
        if name == "exp" and abs(d) > 15000:  # Intel's returns 0 for -inf, and under/overflows early
            return Decimal("Infinity") if d > 0 else (Decimal(0) if d.is_infinite() else _TINIEST_ZERO)
        x = d if exact_input or not d.is_finite() else _binary128_input(d)
        return _binary128_output(fn(x))


def decimal_log(d: Decimal, base: int = 0) -> Decimal:
    """mongod's Decimal128 logarithm of a positive ``d``: natural (``base`` 0), base 10 or base 2 (Intel's
    log10/log2; any other base is ln(d) / ln(base), two roundings)."""
    if d.is_infinite():
        return d
    with decimal.localcontext(_WORK):
        x = d if abs(d - 1) < _HALF else _binary128_input(d)
        y = x.ln() if base == 0 else (x.log10() if base == 10 else x.ln() / Decimal(2).ln())
        return _binary128_output(y)


def decimal_power(x: Decimal, y: Decimal) -> Decimal:
    """mongod's Decimal128::power: Intel's pow (exp10/exp2 for bases 10 and 2), nearly always the
    correctly rounded value, then padded to 34 digits (pow(2, 2) is 4.000000000000000000000000000000000)."""
    if not y or x == 1:
        r = Decimal(1)
    elif x.is_nan() or y.is_nan():
        r = Decimal("NaN")
    else:
        y_int = y.is_finite() and y == y.to_integral_value()
        odd = y_int and int(y) % 2 == 1
        a = abs(x)
        if y.is_infinite():
            r = Decimal(1) if a == 1 else (Decimal(0) if (a < 1) != y.is_signed() else Decimal("Infinity"))
        elif x.is_signed() and not y_int and x:
            r = Decimal("NaN")
        else:
            with decimal.localcontext(_WORK):
                r = DECIMAL_CONTEXT.create_decimal(a**y)
            if odd and x.is_signed():
                r = r.copy_negate()
    return pad_decimal(r)


def _atan2_constant(multiple: int, divisor: int) -> Decimal:
    # Intel's atan2 returns π, π/2, π/4 and 3π/4 as decimals with 33 places where the result is exact
    return _WORK.divide(_WORK.multiply(_pi(100), multiple), divisor).quantize(Decimal("1E-33"), context=_WORK)


_PI, _PI_2, _PI_4, _PI_3_4 = (_atan2_constant(m, d) for m, d in ((1, 1), (1, 2), (1, 4), (3, 4)))


def decimal_atan2(y: Decimal, x: Decimal) -> Decimal:
    """mongod's Decimal128::atan2 (Intel's bid128_atan2): the signs, zeros, infinities and NaNs as it
    treats them, otherwise atan(|y / x|) (folded with π when x < 0)."""
    def signed(r: Decimal) -> Decimal:
        return r.copy_negate() if y.is_signed() else r

    zero = Decimal("0E-6176")
    if y.is_nan():
        return Decimal("NaN")
    if y.is_infinite():
        if x.is_infinite():
            return signed(_PI_3_4 if x.is_signed() else _PI_4)
        return Decimal("NaN") if x.is_nan() else signed(_PI_2)
    if not y and x.is_finite() and x:
        return signed(_PI if x.is_signed() else zero)
    if x.is_nan():
        return Decimal("NaN")
    if x.is_infinite() or not x:
        if x.is_infinite() or not y:
            return signed(_PI if x.is_signed() else zero)
        return signed(_PI_2)
    z = DECIMAL_CONTEXT.divide(y, x)
    if abs(z) > Decimal("1E36"):
        return signed(_PI_2)
    if abs(z) < Decimal("1E-36"):
        return signed(_PI) if x.is_signed() else z
    r = decimal_function("atan", abs(z))
    if x.is_signed():
        r = DECIMAL_CONTEXT.subtract(_PI, r)
    return signed(r)
