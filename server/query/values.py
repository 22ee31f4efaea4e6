"""One home for BSON value semantics: type brackets, comparison order, equality, $type names.

Contract: ``compare(a, b)`` and ``sort_key(v)`` agree with MongoDB 7.0's BSON comparison order
(simple collation):

    MinKey < (missing, null) < numbers < strings < objects < arrays < binData < ObjectId < bool
    < date < timestamp < regex < javascript < MaxKey

- All numeric types (int, Int64, float, Decimal128) share one bracket and compare by value, exactly
  (Python compares int/float/Decimal exactly); NaN sorts below every other number and equals NaN.
- Strings compare by code point, which is the same order as mongod's byte-wise UTF-8 comparison.
- Objects compare element by element: canonical type bracket, then field name, then value; a
  prefix sorts first. Arrays compare element-wise the same way (positions stand in for names).
- Python ``bool`` is NOT a number (``bool`` is tested before ``int`` everywhere).
- ``MISSING`` (an absent field) compares equal to null, as in sorting and index keys.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import math
import re
import uuid
from collections.abc import Mapping
from typing import Any

from bson.binary import Binary
from bson.code import Code
from bson.datetime_ms import DatetimeMS
from bson.dbref import DBRef
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.max_key import MaxKey
from bson.min_key import MinKey
from bson.objectid import ObjectId
from bson.regex import Regex
from bson.timestamp import Timestamp

__all__ = [
    "MISSING",
    "BRACKET_MINKEY",
    "BRACKET_NULL",
    "BRACKET_NUMBER",
    "BRACKET_STRING",
    "BRACKET_OBJECT",
    "BRACKET_ARRAY",
    "BRACKET_MAXKEY",
    "TYPE_NUMBERS",
    "TYPE_ALIASES",
    "canonical_type_order",
    "compare",
    "equal",
    "sort_key",
    "sort_key_with",
    "bson_type_name",
    "bson_type_number",
    "is_number",
    "is_integral",
    "to_decimal",
    "to_float",
    "date_to_millis",
    "regex_flags_string",
]


class _Missing:
    """The unique "field absent" sentinel: falsy, distinct from None (null), a singleton."""

    _instance: _Missing | None = None

    def __new__(cls) -> _Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "MISSING"

    def __copy__(self) -> _Missing:
        return self

    def __deepcopy__(self, memo: Any) -> _Missing:
        return self

    def __reduce__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()

# The field names of a DBRef ({$ref, $id, $db}): the '$'-prefixed names mongod takes as field names in
# paths, projections, filters and index keys
DBREF_FIELDS = frozenset({"$id", "$ref", "$db"})

# Canonical type brackets: mongod's canonicalizeBSONType numbers (their order is BSON order; the
# numbers themselves matter to hashed index keys, which hash them).
BRACKET_MINKEY = -1
BRACKET_UNDEFINED = 0
BRACKET_NULL = 5
BRACKET_NUMBER = 10
BRACKET_STRING = 15
BRACKET_OBJECT = 20
BRACKET_ARRAY = 25
BRACKET_BINDATA = 30
BRACKET_OBJECTID = 35
BRACKET_BOOL = 40
BRACKET_DATE = 45
BRACKET_TIMESTAMP = 47
BRACKET_REGEX = 50
BRACKET_CODE = 60
BRACKET_CODE_WS = 65
BRACKET_MAXKEY = 127

# $type names -> BSON type numbers (plus the "number" alias, which has no single number).
TYPE_NUMBERS: dict[str, int] = {
    "double": 1,
    "string": 2,
    "object": 3,
    "array": 4,
    "binData": 5,
    "undefined": 6,
    "objectId": 7,
    "bool": 8,
    "date": 9,
    "null": 10,
    "regex": 11,
    "dbPointer": 12,
    "javascript": 13,
    "symbol": 14,
    "javascriptWithScope": 15,
    "int": 16,
    "timestamp": 17,
    "long": 18,
    "decimal": 19,
    "minKey": -1,
    "maxKey": 127,
}
TYPE_ALIASES: dict[str, int | str] = {**TYPE_NUMBERS, "number": "number"}
_NAME_BY_NUMBER = {n: name for name, n in TYPE_NUMBERS.items()}

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_EPOCH = _dt.datetime(1970, 1, 1)
_EPOCH_TZ = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
_ONE_MS = _dt.timedelta(milliseconds=1)
_RE_FLAG_LETTERS = ((re.IGNORECASE, "i"), (re.MULTILINE, "m"), (re.DOTALL, "s"), (re.VERBOSE, "x"))


def is_number(v: Any) -> bool:
    """True for int, Int64, float and Decimal128 (never bool)."""
    t = type(v)
    if t is int or t is float or t is Int64 or t is Decimal128:
        return True
    if t is bool:
        return False
    return isinstance(v, (int, float, Decimal128)) and not isinstance(v, bool)


def is_integral(v: Any) -> bool:
    """True for int/Int64 (not bool)."""
    return isinstance(v, int) and not isinstance(v, bool)


def to_decimal(v: Any) -> decimal.Decimal:
    """A number as ``decimal.Decimal`` (exact for ints and doubles)."""
    if isinstance(v, Decimal128):
        return v.to_decimal()
    if isinstance(v, float):
        return decimal.Decimal(v)
    return decimal.Decimal(int(v))


def to_float(v: Any) -> float:
    """A number as a Python float (Decimal128 rounds to nearest)."""
    if isinstance(v, Decimal128):
        return float(v.to_decimal())
    return float(v)


def date_to_millis(v: Any) -> int:
    """Milliseconds since the epoch of a ``datetime`` (naive = UTC) or ``DatetimeMS``."""
    if isinstance(v, DatetimeMS):
        return int(v)
    if v.tzinfo is None:
        return (v - _EPOCH) // _ONE_MS
    return (v - _EPOCH_TZ) // _ONE_MS


def regex_flags_string(v: Regex | re.Pattern) -> str:
    """The option letters of a regex, sorted like mongod stores them."""
    if isinstance(v, Regex):
        flags = v.flags
        if isinstance(flags, str):
            return "".join(sorted(flags))
    else:
        flags = v.flags
    letters = [ch for bit, ch in _RE_FLAG_LETTERS if flags & bit]
    return "".join(sorted(letters))


def canonical_type_order(v: Any) -> int:
    """MongoDB's canonical type bracket of ``v`` (all numbers share one bracket)."""
    t = type(v)
    if t is str:
        return BRACKET_STRING
    if t is int or t is float or t is Int64 or t is Decimal128:
        return BRACKET_NUMBER
    if t is dict:
        return BRACKET_OBJECT
    if t is list:
        return BRACKET_ARRAY
    if v is None or v is MISSING:
        return BRACKET_NULL
    if t is bool:
        return BRACKET_BOOL
    if t is _dt.datetime or t is DatetimeMS:
        return BRACKET_DATE
    if t is ObjectId:
        return BRACKET_OBJECTID
    return _slow_bracket(v)


def _slow_bracket(v: Any) -> int:
    if isinstance(v, bool):
        return BRACKET_BOOL
    if isinstance(v, Code):  # a str subclass: test before str
        return BRACKET_CODE_WS if v.scope is not None else BRACKET_CODE
    if isinstance(v, (int, float, Decimal128)):
        return BRACKET_NUMBER
    if type(v) is str:
        return BRACKET_STRING
    if isinstance(v, (Mapping, DBRef)):
        return BRACKET_OBJECT
    if isinstance(v, (list, tuple)):
        return BRACKET_ARRAY
    if isinstance(v, (bytes, Binary, uuid.UUID)):
        return BRACKET_BINDATA
    if isinstance(v, ObjectId):
        return BRACKET_OBJECTID
    if isinstance(v, (_dt.datetime, DatetimeMS)):
        return BRACKET_DATE
    if isinstance(v, Timestamp):
        return BRACKET_TIMESTAMP
    if isinstance(v, (Regex, re.Pattern)):
        return BRACKET_REGEX
    if isinstance(v, Code):
        return BRACKET_CODE_WS if v.scope is not None else BRACKET_CODE
    if isinstance(v, MinKey):
        return BRACKET_MINKEY
    if isinstance(v, MaxKey):
        return BRACKET_MAXKEY
    raise TypeError(f"not a BSON value: {type(v).__name__}")


def _number_key(v: Any) -> tuple:
    # (10, 0) for NaN (below all numbers, equal to each other), (10, 1, value) otherwise.
    t = type(v)
    if t is float:
        return (BRACKET_NUMBER, 0) if v != v else (BRACKET_NUMBER, 1, v)
    if t is Decimal128 or isinstance(v, Decimal128):
        d = v.to_decimal()
        if d.is_nan():
            return (BRACKET_NUMBER, 0)
        return (BRACKET_NUMBER, 1, d if d.is_finite() else float(d))
    return (BRACKET_NUMBER, 1, v)


def _binary_key(v: Any) -> tuple:
    if isinstance(v, uuid.UUID):
        data, subtype = v.bytes, 4
    elif isinstance(v, Binary):
        data, subtype = bytes(v), v.subtype
    else:
        data, subtype = bytes(v), 0
    return (BRACKET_BINDATA, len(data), subtype, data)


def _as_items(v: Any):
    if isinstance(v, DBRef):
        return v.as_doc().items()
    return v.items()


def sort_key(v: Any) -> tuple:
    """A tuple whose natural Python ordering is BSON order; equal keys <=> ``compare == 0``."""
    t = type(v)
    if t is int or t is Int64:
        return (BRACKET_NUMBER, 1, v)
    if t is str:
        return (BRACKET_STRING, v)
    if t is float:
        return (BRACKET_NUMBER, 0) if v != v else (BRACKET_NUMBER, 1, v)
    if v is None or v is MISSING:
        return (BRACKET_NULL,)
    if t is _dt.datetime or t is DatetimeMS:
        return (BRACKET_DATE, date_to_millis(v))
    if t is bool:
        return (BRACKET_BOOL, v)
    if t is dict:
        return (BRACKET_OBJECT, tuple([(canonical_type_order(x), k, sort_key(x)) for k, x in v.items()]))
    if t is list:
        return (BRACKET_ARRAY, tuple([sort_key(x) for x in v]))
    if t is ObjectId:
        return (BRACKET_OBJECTID, v.binary)
    bracket = _slow_bracket(v)
    if bracket == BRACKET_NUMBER:
        return _number_key(v)
    if bracket == BRACKET_STRING:
        return (BRACKET_STRING, str(v))
    if bracket == BRACKET_BOOL:
        return (BRACKET_BOOL, bool(v))
    if bracket == BRACKET_OBJECT:
        return (BRACKET_OBJECT, tuple([(canonical_type_order(x), k, sort_key(x)) for k, x in _as_items(v)]))
    if bracket == BRACKET_ARRAY:
        return (BRACKET_ARRAY, tuple([sort_key(x) for x in v]))
    if bracket == BRACKET_BINDATA:
        return _binary_key(v)
    if bracket == BRACKET_OBJECTID:
        return (BRACKET_OBJECTID, v.binary)
    if bracket == BRACKET_DATE:
        return (BRACKET_DATE, date_to_millis(v))
    if bracket == BRACKET_TIMESTAMP:
        return (BRACKET_TIMESTAMP, v.time, v.inc)
    if bracket == BRACKET_REGEX:
        pattern = v.pattern.decode() if isinstance(v.pattern, bytes) else v.pattern
        return (BRACKET_REGEX, pattern, regex_flags_string(v))
    if bracket == BRACKET_CODE:
        return (BRACKET_CODE, str(v))
    if bracket == BRACKET_CODE_WS:
        return (BRACKET_CODE_WS, str(v), sort_key(dict(v.scope)))
    return (bracket,)  # MinKey / MaxKey


def sort_key_with(v: Any, skey: Any) -> tuple:
    """``sort_key`` with every string value (inside documents and arrays too, never field names)
    ordered by ``skey(s)`` instead of its code points: a collation's keys (``collation.py``)."""
    t = type(v)
    if t is str:
        return (BRACKET_STRING, skey(v))
    if t is dict or (t is not list and isinstance(v, (Mapping, DBRef))):
        items = _as_items(v) if t is not dict else v.items()
        return (BRACKET_OBJECT, tuple([(canonical_type_order(x), k, sort_key_with(x, skey)) for k, x in items]))
    if t is list or t is tuple:
        return (BRACKET_ARRAY, tuple([sort_key_with(x, skey) for x in v]))
    if t is str:
        return (BRACKET_STRING, skey(str(v)))
    return sort_key(v)


def compare(a: Any, b: Any) -> int:
    """-1, 0 or 1 as ``a`` sorts before, equal to or after ``b`` in BSON order."""
    ta, tb = type(a), type(b)
    if ta is tb and (ta is int or ta is str or ta is Int64 or ta is _dt.datetime):
        return (a > b) - (a < b)
    ka, kb = sort_key(a), sort_key(b)
    return (ka > kb) - (ka < kb)


def equal(a: Any, b: Any) -> bool:
    """BSON equality (numbers across types; 1 == 1.0 == Int64(1); NaN == NaN; null == missing)."""
    ta, tb = type(a), type(b)
    if ta is tb and (ta is int or ta is str or ta is Int64 or ta is _dt.datetime or ta is bool):
        return a == b
    return sort_key(a) == sort_key(b)


def bson_type_name(v: Any) -> str:
    """The $type name of ``v`` ("double", "int", "long", "string", ... "missing" for MISSING)."""
    if v is MISSING:
        return "missing"
    return _NAME_BY_NUMBER[bson_type_number(v)]


def bson_type_number(v: Any) -> int:
    """The BSON type number of ``v`` (1..19, -1 minKey, 127 maxKey)."""
    t = type(v)
    if t is float:
        return 1
    if t is str:
        return 2
    if t is bool:
        return 8
    if t is int:
        return 16 if _INT32_MIN <= v <= _INT32_MAX else 18
    if t is Int64:
        return 18
    if t is dict:
        return 3
    if t is list:
        return 4
    if v is None:
        return 10
    if v is MISSING:
        raise TypeError("MISSING has no BSON type")
    if isinstance(v, bool):
        return 8
    if isinstance(v, Int64):
        return 18
    if isinstance(v, int):
        return 16 if _INT32_MIN <= v <= _INT32_MAX else 18
    if isinstance(v, float):
        return 1
    if isinstance(v, Decimal128):
        return 19
    if isinstance(v, Code):  # a str subclass: test before str
        return 15 if v.scope is not None else 13
    if type(v) is str:
        return 2
    if isinstance(v, (Mapping, DBRef)):
        return 3
    if isinstance(v, (list, tuple)):
        return 4
    if isinstance(v, (bytes, Binary, uuid.UUID)):
        return 5
    if isinstance(v, ObjectId):
        return 7
    if isinstance(v, (_dt.datetime, DatetimeMS)):
        return 9
    if isinstance(v, (Regex, re.Pattern)):
        return 11
    if isinstance(v, Code):
        return 15 if v.scope is not None else 13
    if isinstance(v, Timestamp):
        return 17
    if isinstance(v, MinKey):
        return -1
    if isinstance(v, MaxKey):
        return 127
    raise TypeError(f"not a BSON value: {type(v).__name__}")


def float_is_nan(v: Any) -> bool:
    """True for a float or Decimal128 NaN."""
    if isinstance(v, float):
        return math.isnan(v)
    if isinstance(v, Decimal128):
        return v.to_decimal().is_nan()
    return False


class Descending:
    """Inverts the order of a sort-key component: a descending field of a multi-key sort; a heap whose
    root is the greatest (the accumulators that keep the n smallest)."""

    __slots__ = ("key",)

    def __init__(self, key: Any):
        self.key = key

    def __lt__(self, other: Descending) -> bool:
        return other.key < self.key

    def __gt__(self, other: Descending) -> bool:
        return other.key > self.key

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Descending) and self.key == other.key

    def __le__(self, other: Descending) -> bool:
        return other.key <= self.key

    def __ge__(self, other: Descending) -> bool:
        return other.key >= self.key

    __hash__ = None  # type: ignore[assignment]
