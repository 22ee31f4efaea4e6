"""Control min/max semantics of v1 buckets (pure): BSON type classes, canonical comparison within a
class, schema compatibility, and the field-wise/element-wise min/max merge (spec §2.3, §3.3).

A bucket never holds two type classes for one path (a schema change closes it), so values are only
ever compared within one class; ``merge_extreme`` still orders classes for buckets written by others.
"""

from __future__ import annotations

import datetime as _dt
import math
from decimal import Decimal
from typing import Any

import bson
from bson.datetime_ms import DatetimeMS
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.objectid import ObjectId

from tidemark.query.values import (
    BRACKET_ARRAY,
    BRACKET_BINDATA,
    BRACKET_BOOL,
    BRACKET_DATE,
    BRACKET_NULL,
    BRACKET_NUMBER,
    BRACKET_OBJECT,
    BRACKET_OBJECTID,
    BRACKET_STRING,
    canonical_type_order,
    compare,
)
from tidemark.timeseries.bucketdoc import date_ms_of

# Type classes are MongoDB's canonical types (canonicalizeBSONType: numbers of every width share one,
# every BinData subtype one, Code and Code with scope two): values of different classes are
# incompatible in one bucket (a schema change).
NUMBER, STRING, OBJECT, ARRAY, DATE, OID = (BRACKET_NUMBER, BRACKET_STRING, BRACKET_OBJECT, BRACKET_ARRAY,
                                            BRACKET_DATE, BRACKET_OBJECTID)
BOOL, NULL, BINARY = BRACKET_BOOL, BRACKET_NULL, BRACKET_BINDATA
_CLASS_BY_TYPE: dict[type, int] = {
    float: NUMBER, int: NUMBER, Int64: NUMBER, Decimal128: NUMBER, str: STRING, dict: OBJECT,
    list: ARRAY, _dt.datetime: DATE, DatetimeMS: DATE, ObjectId: OID, bool: BOOL, type(None): NULL,
    bytes: BINARY, bson.binary.Binary: BINARY,
}
# the classes whose values control min/max bound in a bucket filter (filters.py)
BOUNDED_CLASSES = frozenset((NUMBER, STRING, DATE, OID, BOOL, BINARY))


def type_class(value: Any) -> int:
    cls = _CLASS_BY_TYPE.get(type(value))
    return cls if cls is not None else canonical_type_order(value)


def _number(value: Any) -> Any:
    if isinstance(value, Decimal128):
        return value.to_decimal()
    return value


def _is_nan(value: Any) -> bool:
    if isinstance(value, float):
        return math.isnan(value)
    if isinstance(value, Decimal):
        return value.is_nan()
    return False


def compare_same_class(a: Any, b: Any, collation: Any = None) -> int:
    """-1/0/1 comparing two scalars of the same type class in BSON order (numbers canonically; strings
    under ``collation``, the collection's default ``collation.Collation``, None = binary)."""
    cls = type_class(a)
    if collation is not None and cls == STRING:
        x, y = collation.string_key(a), collation.string_key(b)
        return _sign(x, y)
    if cls == NUMBER:
        x, y = _number(a), _number(b)
        x_nan, y_nan = _is_nan(x), _is_nan(y)
        if x_nan or y_nan:  # NaN sorts below every other number and equals itself
            return 0 if x_nan and y_nan else (-1 if x_nan else 1)
        return _sign(x, y)
    if cls == DATE:
        x, y = date_ms_of(a), date_ms_of(b)
        return _sign(x, y)
    if cls in (STRING, OID, BOOL):
        return _sign(a, b)
    return compare(a, b)  # BSON order: BinData by length, subtype, bytes; regex by pattern, flags; ...


def _sign(x: Any, y: Any) -> int:
    """-1/0/1 as ``x`` orders below/with/above ``y``."""
    return int(x > y) - int(x < y)


def compatible(current: Any, value: Any) -> bool:
    """True when ``value`` has the same type class as ``current`` at every path they share."""
    cls = type_class(value)
    if cls != type_class(current):
        return False
    if cls == OBJECT:
        for key, sub in value.items():
            if key in current and not compatible(current[key], sub):
                return False
    elif cls == ARRAY:
        shared = min(len(current), len(value))
        if _plain_numbers(current, shared) and _plain_numbers(value, shared):
            return True  # (element by element, a long array cost ~0.3 us per element)
        for i, sub in enumerate(value[:shared]):
            if not compatible(current[i], sub):
                return False
    return True


# Array elements decided in bulk when every one is of these types (numbers, no bool: its own class):
# element by element, min/max of a 100,000-number array took ~60 ms, five times per measurement
# inserted (the running schema, the column's min, the full write's min and max, a read's summary)
_PLAIN_NUMBER_TYPES = frozenset((int, float, Int64))
_CONTAINER_TYPES = (dict, list, tuple)


def _plain_numbers(values: list[Any], n: int) -> bool:
    """The first ``n`` of ``values`` are all ints, floats or Int64s."""
    return _PLAIN_NUMBER_TYPES.issuperset(map(type, values[:n] if n < len(values) else values))


def _scalars_only(values: list[Any]) -> bool:
    """No element of ``values`` is an object or an array (so a shallow copy is a deep one)."""
    return not any(issubclass(kind, _CONTAINER_TYPES) for kind in set(map(type, values)))


def copy_value(value: Any) -> Any:
    """A deep copy of a BSON value's containers (objects, arrays); scalars are shared."""
    if isinstance(value, dict):
        return {k: copy_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return list(value) if _scalars_only(value) else [copy_value(v) for v in value]
    return value


def _snapshot(value: Any) -> Any:
    """A deep copy that tolerates concurrent mutation by another thread (copies via C-level calls)."""
    if isinstance(value, dict):
        return {k: _snapshot(v) for k, v in list(value.items())}
    if isinstance(value, list):
        return [_snapshot(v) for v in list(value)]
    return value


def merge_extreme(current: Any, value: Any, sign: int, collation: Any = None) -> Any:
    """Combine ``value`` into a min (sign=-1) or max (sign=1): field-wise for objects, element-wise
    for arrays, canonical comparison for scalars keeping the winner's own type (§2.3); strings, at
    any depth, under ``collation`` (the collection's default, as mongod's bucket catalog compares
    them; of collation-equal strings the first one stays)."""
    if isinstance(value, dict) and isinstance(current, dict):
        for key, sub in value.items():
            current[key] = merge_extreme(current[key], sub, sign, collation) if key in current else copy_value(sub)
        return current
    if isinstance(value, list) and isinstance(current, list):
        shared = min(len(current), len(value))
        if not _numbers_merged(current, value, shared, sign):
            for i in range(shared):
                current[i] = merge_extreme(current[i], value[i], sign, collation)
        current.extend(copy_value(sub) for sub in value[shared:])
        return current
    if type_class(value) != type_class(current):  # only in buckets written by someone else: BSON's type order
        return value if compare(value, current) * sign > 0 else current
    return value if compare_same_class(value, current, collation) * sign > 0 else current


def _numbers_merged(current: list[Any], value: list[Any], n: int, sign: int) -> bool:
    """Merge the first ``n`` elements of ``value`` into ``current`` in place when all of both are plain
    numbers (``_plain_numbers``) and none is NaN (NaN orders below every number: the general rule),
    as ``merge_extreme`` does element by element: the winner keeps its own type, a tie keeps the
    current one. False (nothing done) otherwise."""
    if not n or not (_plain_numbers(current, n) and _plain_numbers(value, n)):
        return False
    if any(x != x for x in current[:n]) or any(x != x for x in value[:n]):
        return False
    pairs = zip(current[:n], value[:n], strict=True)
    current[:n] = [v if v > c else c for c, v in pairs] if sign > 0 else [v if v < c else c for c, v in pairs]
    return True
