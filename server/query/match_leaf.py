"""Value predicates for filter leaves: ``fn(value) -> bool`` on ONE value (no path traversal).

``match_compile`` wraps them with mongod's path and leaf-array rules. Comparisons are
type-bracketed (``$gt: 5`` only sees numbers); ``$lte: null`` matches null and missing; NaN equals
only NaN and is neither greater nor less than anything; MinKey/MaxKey bounds cross brackets.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import operator
from collections.abc import Callable
from typing import Any

from bson.binary import Binary
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.objectid import ObjectId
from bson.regex import Regex as BsonRegex

from tidemark.query.match_regex import matches, pattern_and_options
from tidemark.query.values import (
    BRACKET_MAXKEY,
    BRACKET_MINKEY,
    BRACKET_NULL,
    BRACKET_NUMBER,
    BRACKET_STRING,
    MISSING,
    bson_type_number,
    canonical_type_order,
    float_is_nan,
    is_number,
    sort_key,
)

Predicate = Callable[[Any], bool]

__all__ = [
    "has_strings",
    "cmp_predicate",
    "in_predicate",
    "regex_predicate",
    "type_predicate",
    "mod_predicate",
    "bits_predicate",
]

_OPS = {"$eq": operator.eq, "$gt": operator.gt, "$gte": operator.ge, "$lt": operator.lt, "$lte": operator.le}


def has_strings(v: Any) -> bool:
    """True when a collation can change how ``v`` compares (it holds a string somewhere)."""
    t = type(v)
    if t is str:
        return True
    if t is dict:
        return any(has_strings(x) for x in v.values())
    if t is list:
        return any(has_strings(x) for x in v)
    return type(v) is str and canonical_type_order(v) == BRACKET_STRING


def cmp_predicate(op: str, rhs: Any, collation: Any = None) -> Predicate:
    """``collation`` (a ``collation.Collation`` or None for simple) orders the strings in ``rhs``."""
    if collation is not None and has_strings(rhs):
        return _collated_cmp_predicate(op, rhs, collation)
    if isinstance(rhs, (BsonRegex,)) or hasattr(rhs, "search"):
        # {a: {$eq: /re/}} compares regex values for equality (no pattern matching).
        key = sort_key(rhs)
        return lambda v: canonical_type_order(v) == canonical_type_order(rhs) and sort_key(v) == key
    bracket = canonical_type_order(rhs)
    if bracket == BRACKET_NULL:
        if op in ("$eq", "$gte", "$lte"):
            return lambda v: v is None or v is MISSING
        return lambda v: False
    if bracket in (BRACKET_MINKEY, BRACKET_MAXKEY):
        return _minmax_predicate(op, bracket)
    cmp = _OPS[op]
    if bracket == BRACKET_NUMBER:
        if float_is_nan(rhs):
            if op in ("$eq", "$gte", "$lte"):
                return float_is_nan
            return lambda v: False
        x = rhs.to_decimal() if isinstance(rhs, Decimal128) else rhs

        def number_pred(v: Any) -> bool:
            t = type(v)
            if t is int or t is Int64:
                return cmp(v, x)
            if t is float:
                return v == v and cmp(v, x)  # a NaN matches no bound (and cannot be ordered with a Decimal)
            if t is Decimal128:
                d = v.to_decimal()
                return False if d.is_nan() else cmp(d, x)
            return False

        return number_pred
    if type(rhs) is ObjectId:
        oid_key = sort_key(rhs)

        def oid_pred(v: Any) -> bool:
            if type(v) is ObjectId:
                return cmp(v.binary, rhs.binary)
            return (
                canonical_type_order(v) == bracket and cmp(sort_key(v), oid_key)
                if v is not MISSING
                else False
            )

        return oid_pred
    if type(rhs) is str:

        def string_pred(v: Any) -> bool:
            if type(v) is str:
                return cmp(v, rhs)
            return False

        return string_pred
    if type(rhs) is _dt.datetime and rhs.tzinfo is None:

        def date_pred(v: Any) -> bool:
            if type(v) is _dt.datetime and v.tzinfo is None:
                return cmp(v, rhs)
            return canonical_type_order(v) == bracket and cmp(sort_key(v), key)

        key = sort_key(rhs)
        return date_pred
    return _bracketed_pred(cmp, bracket, sort_key, sort_key(rhs))


def _collated_cmp_predicate(op: str, rhs: Any, collation: Any) -> Predicate:
    cmp = _OPS[op]
    if type(rhs) is str:
        skey = collation.string_key
        key = skey(rhs)

        def collated_string_pred(v: Any) -> bool:
            if type(v) is str:
                return cmp(skey(v), key)
            return False

        return collated_string_pred
    return _bracketed_pred(cmp, canonical_type_order(rhs), collation.sort_key, collation.sort_key(rhs))


def _bracketed_pred(cmp: Callable[[Any, Any], bool], bracket: int, key_of: Callable[[Any], tuple],
                    key: tuple) -> Predicate:
    """``cmp(key_of(v), key)`` for values in ``bracket`` (comparisons never cross type brackets)."""

    def bracketed_pred(v: Any) -> bool:
        if v is MISSING:
            return False
        try:
            b = canonical_type_order(v)
        except TypeError:
            return False
        return b == bracket and cmp(key_of(v), key)

    return bracketed_pred


def _minmax_predicate(op: str, bracket: int) -> Predicate:
    # Comparisons against MinKey/MaxKey cross type brackets (every value is above MinKey).
    def pred(v: Any) -> bool:
        if v is MISSING:
            vb = BRACKET_NULL
        else:
            vb = canonical_type_order(v)
        c = (vb > bracket) - (vb < bracket)
        return _OPS[op](c, 0)

    return pred


def in_predicate(values: tuple, regexes: tuple, collation: Any = None) -> Predicate:
    if collation is not None and any(has_strings(v) for v in values):
        return _collated_in_predicate(values, regexes, collation)
    # Plain int/float/str members go to ``fast`` as they are (Python equality and hashing are BSON
    # equality for them, across numeric types too); only the other members' sort keys go to ``keys``.
    # A sort key of a number is (NUMBER, 1, value) and of a string (STRING, value), so a value of another
    # type equal to a fast member has that member as its key's last element. (A million-element $in
    # thus holds a million values, not a million key tuples more: half the build, and a third of the
    # time its release holds the GIL.)
    fast: set
    keys: set = set()  # sort keys (tuples of hashables: a hashable BSON identity) of the other members
    has_null = False
    other_numbers = False  # Decimal128 or NaN members: fast-typed values must also check `keys`
    for v in values:  # (every member plain, the usual $in: the set made at once, no call per member)
        t = type(v)
        if not ((t is int or t is float or t is str or t is Int64) and v == v):
            fast = set()
            break
    else:
        values, fast = (), set(values)
    if values:
        for v in values:
            if v is None:
                has_null = True
            t = type(v)
            if (t is int or t is float or t is str or t is Int64) and v == v:
                fast.add(v)
                continue
            if is_number(v):
                other_numbers = True
            keys.add(sort_key(v))
    regex_preds = [regex_predicate(r.compiled, r.pattern, r.options) for r in regexes] if regexes else []

    def pred(v: Any) -> bool:
        t = type(v)
        if t is int or t is str or t is float or t is Int64:
            if v in fast:
                return True
            if other_numbers and t is not str and sort_key(v) in keys:
                return True
            return _regex_any(regex_preds, v) if regex_preds else False
        if v is MISSING or v is None:
            return has_null
        key = sort_key(v)
        if key in keys or _fast_member(key, fast):
            return True
        return _regex_any(regex_preds, v)

    return pred


def _fast_member(key: tuple, fast: set) -> bool:
    """A value of sort key ``key`` equals a member of ``fast`` (``in_predicate``)."""
    bracket = key[0]
    return (bracket == BRACKET_NUMBER and len(key) == 3 or bracket == BRACKET_STRING) and key[-1] in fast


def _collated_in_predicate(values: tuple, regexes: tuple, collation: Any) -> Predicate:
    ckey = collation.sort_key
    keys = {ckey(v) for v in values}
    has_null = any(v is None for v in values)
    regex_preds = [regex_predicate(r.compiled, r.pattern, r.options) for r in regexes]

    def collated_in_pred(v: Any) -> bool:
        if v is MISSING or v is None:
            return has_null
        if ckey(v) in keys:
            return True
        return _regex_any(regex_preds, v) if regex_preds else False

    return collated_in_pred


def _regex_any(preds: list, v: Any) -> bool:
    for p in preds:
        if p(v):
            return True
    return False


def regex_predicate(compiled: Any, pattern: str, options: str) -> Predicate:
    def pred(v: Any) -> bool:
        if type(v) is str:
            return matches(compiled, v)
        if isinstance(v, (BsonRegex,)) or hasattr(v, "search"):
            return pattern_and_options(v) == (pattern, options)
        return False

    return pred


def type_predicate(types: frozenset) -> Predicate:
    want_number = "number" in types
    numbers = frozenset(t for t in types if t != "number")

    def pred(v: Any) -> bool:
        if v is MISSING:
            return False
        if want_number and is_number(v):
            return True
        try:
            return bson_type_number(v) in numbers
        except TypeError:
            return False

    return pred


def _trunc_int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            return None
        return int(v)
    if isinstance(v, Decimal128):
        d = v.to_decimal()
        return int(d) if d.is_finite() else None
    return None


def mod_predicate(divisor: int, remainder: int) -> Predicate:
    def pred(v: Any) -> bool:
        n = _trunc_int(v)
        if n is None or not -(2**63) <= n < 2**63:  # (mongod reads the dividend as a long: beyond, no match)
            return False
        r = abs(n) % abs(divisor)  # C++ % : the result takes the dividend's sign
        return (-r if n < 0 else r) == remainder

    return pred


_LLONG_MIN = -(2**63)


def _decimal_as_long(v: Decimal128) -> int:
    """mongod 7.0's ``BSONElement::numberLong()`` of a decimal: ``Decimal128::toLong()``, rounding half
    to even; NaN, an infinity or a value beyond 64 bits is an invalid conversion, whose result is the
    integer indefinite 0x8000000000000000 (LLONG_MIN). (8.0 rejects such decimals in bit tests.)"""
    d = v.to_decimal()
    if not d.is_finite() or (d and d.adjusted() > 19):  # (20 digits and more: beyond 64 bits, no big int
        return _LLONG_MIN                                # built; a zero's exponent says nothing: 0E+20 is 0)
    n = int(d.to_integral_value(rounding=decimal.ROUND_HALF_EVEN))
    return n if _LLONG_MIN <= n < 2**63 else _LLONG_MIN


def bits_predicate(op: str, mask: int) -> Predicate:
    # A number's bits from 63 on are all its sign (two's complement): tested against a mask whose bits
    # from 63 on are folded into bit 63, so a number never meets a mask wider than 64 bits.
    number_mask = (mask & (2**63 - 1)) | (2**63 if mask >> 63 else 0)
    binary_mask = mask

    def bits_of(v: Any) -> int | None:
        if isinstance(v, (bytes, Binary)):
            return int.from_bytes(bytes(v), "little")
        if not is_number(v):
            return None
        if isinstance(v, Decimal128):
            # (mongod 7.0 checks only doubles for NaN, range and integrality; a decimal is read as a long)
            return _decimal_as_long(v)
        n = _trunc_int(v)
        if n is None or (isinstance(v, float) and v != n):
            return None
        if not -(2**63) <= n < 2**63:
            return None
        return n  # Python ints are two's complement with infinite sign extension, as mongod reads negatives

    def pred(v: Any) -> bool:
        bits = bits_of(v)
        if bits is None:
            return False
        mask = number_mask if is_number(v) else binary_mask
        if op == "$bitsAllSet":
            return bits & mask == mask
        if op == "$bitsAnySet":
            return bits & mask != 0
        if op == "$bitsAllClear":
            return bits & mask == 0
        return bits & mask != mask

    return pred
