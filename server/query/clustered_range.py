"""The ``_id`` range a read of a clustered collection scans (pure), as mongod 7.0's planner bounds a
collection scan of a clustered collection (``planner_access.cpp``: ``handleRIDRangeScan``).

A clustered collection keeps its records keyed by the encoded ``_id`` (``storage.records.clustered_rid``),
so comparisons on ``_id`` in the filter's top-level conjunction bound the record scan:

- each comparison first bounds the scan to its operand's type bracket (mongod's ``appendMinForType`` /
  ``appendMaxForType``: ``$gt: 5`` scans ``[5, Infinity]``, ``$lt: "m"`` scans ``["", "m"]``), then,
  when the collation allows, by the operand itself: ``$eq`` both sides, ``$lt``/``$lte`` the upper one,
  ``$gt``/``$gte`` the lower one;
- an ``$in`` (without a regex) scans from its smallest to its largest value;
- every conjunct narrows the range (the highest minimum and the lowest maximum win); a range whose
  minimum is above its maximum scans nothing.

Strings in record ids compare binary-wise (the stored ``_id``, not a collation key), so under a
non-simple query collation an operand holding a string bounds the scan only by its type bracket.

Bounds are inclusive and may be loose: the reader always re-applies the full filter. Operands whose
comparison semantics are not plain type brackets (null, MinKey/MaxKey, arrays, regexes, code) add
no bound, so a range never leaves out a matching document.

Two more planner rules of mongod 7.0 for clustered collections live here (``query_planner.cpp``):
- the clustered order gives a sort on ``{_id: 1}`` / ``{_id: -1}`` (``sort_direction``) when the strings
  of ``_id`` compare as stored: under the simple collation, or when the filter leaves strings out
  (``excludes_collatable``: mongod's ``hasCompatibleCollation`` from ``handleRIDRangeScan``);
- ``find`` with ``min``/``max`` and a hint naming the clustered index scans ``[min, max)`` of ``_id``
  (``handleClusteredScanHint``, ``handleRIDRangeMinMax``: ``min_max``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from bson.binary import Binary
from bson.datetime_ms import DatetimeMS
from bson.max_key import MaxKey
from bson.min_key import MinKey
from bson.objectid import ObjectId
from bson.regex import Regex
from bson.timestamp import Timestamp

from tidemark.protocol.errors import MongoError
from tidemark.query.collation import compare_for, same
from tidemark.query.match_leaf import has_strings
from tidemark.storage.keys import (
    T_BINARY,
    T_BOOL,
    T_DATE,
    T_NUMBER,
    T_OBJECT,
    T_OBJECTID,
    T_STRING,
    T_TIMESTAMP,
    encode_key,
    encode_value,
)

CLUSTER_FIELD = "_id"

# mongod's (appendMinForType, appendMaxForType) per canonical type; a maximum may be the minimum of
# the next type (the bounds are inclusive: one more record read, then filtered out)
_TYPE_BRACKETS: dict[int, tuple[Any, Any]] = {
    T_NUMBER: (math.nan, math.inf),
    T_STRING: ("", {}),
    T_OBJECT: ({}, []),
    T_BINARY: (Binary(b"", 0), ObjectId(b"\x00" * 12)),
    T_OBJECTID: (ObjectId(b"\x00" * 12), ObjectId(b"\xff" * 12)),
    T_BOOL: (False, True),
    T_DATE: (DatetimeMS(-(1 << 63)), DatetimeMS((1 << 63) - 1)),
    T_TIMESTAMP: (Timestamp(0, 0), Timestamp(0xFFFFFFFF, 0xFFFFFFFF)),
}


@dataclass(frozen=True)
class Bound:
    value: Any  # shown by explain as ``minRecord`` / ``maxRecord``
    key: bytes  # the record id it encodes to


@dataclass(frozen=True)
class RecordRange:
    """An inclusive record-id range of a clustered collection scan (either side may be open)."""

    min: Bound | None
    max: Bound | None

    @property
    def lo(self) -> bytes | None:
        return self.min.key if self.min else None

    @property
    def hi(self) -> bytes | None:
        return self.max.key if self.max else None

    @property
    def is_point(self) -> bool:
        return self.min is not None and self.max is not None and self.min.key == self.max.key

    def explain_fields(self) -> dict:
        """``minRecord`` / ``maxRecord`` of the explained scan (only the sides that are bounded)."""
        out = {}
        if self.min is not None:
            out["minRecord"] = self.min.value
        if self.max is not None:
            out["maxRecord"] = self.max.value
        return out


def _bound(value: Any) -> Bound:
    return Bound(value, encode_key((value,), (1,)))


def _bracket(value: Any) -> tuple[Bound, Bound] | None:
    pair = _TYPE_BRACKETS.get(encode_value(value)[0])
    return None if pair is None else (_bound(pair[0]), _bound(pair[1]))


def _boundable(value: Any) -> bool:
    """An operand whose comparisons stay inside its type bracket."""
    if value is None or isinstance(value, (MinKey, MaxKey, list, Regex, re.Pattern)):
        return False
    return not (isinstance(value, dict) and any(type(k) is str and k.startswith("$") for k in value))


class _Range:
    """The range being narrowed: the highest minimum and the lowest maximum seen."""

    def __init__(self) -> None:
        self.min: Bound | None = None
        self.max: Bound | None = None

    def raise_min(self, b: Bound) -> None:
        if self.min is None or b.key > self.min.key:
            self.min = b

    def lower_max(self, b: Bound) -> None:
        if self.max is None or b.key < self.max.key:
            self.max = b

    def compare(self, op: str, value: Any, exact: bool) -> None:
        bracket = _bracket(value)
        if bracket is None:
            return
        self.raise_min(bracket[0])
        self.lower_max(bracket[1])
        if not exact:
            return
        if op in ("$eq", "$lt", "$lte"):
            self.lower_max(_bound(value))
        if op in ("$eq", "$gt", "$gte"):
            self.raise_min(_bound(value))

    def any_of(self, values: list, exact: Any) -> None:
        lows, highs = [], []
        for v in values:
            if exact(v):
                lows.append(_bound(v))
                highs.append(_bound(v))
                continue
            bracket = _bracket(v)
            if bracket is None:
                return
            lows.append(bracket[0])
            highs.append(bracket[1])
        if lows:
            self.raise_min(min(lows, key=lambda b: b.key))
            self.lower_max(max(highs, key=lambda b: b.key))


def _conjuncts(flt: dict):
    for k, v in flt.items():
        if k == "$and" and isinstance(v, list):
            for sub in v:
                if isinstance(sub, dict):
                    yield from _conjuncts(sub)
        elif k == CLUSTER_FIELD:
            yield v


def record_range(flt: dict | None, collation: Any = None) -> RecordRange | None:
    """The record range of a clustered collection scan under ``flt`` (None: the whole collection).
    ``collation``: the query's (``collation.Collation``; None = simple)."""
    if not isinstance(flt, dict):
        return None

    def exact(v: Any) -> bool:
        return collation is None or not has_strings(v)

    rng = _Range()
    for cond in _conjuncts(flt):
        is_ops = isinstance(cond, dict) and cond and all(type(k) is str and k.startswith("$") for k in cond)
        if not is_ops:
            if _boundable(cond) or isinstance(cond, (MinKey, MaxKey)):
                rng.any_of([cond], exact)
            continue
        for op, arg in cond.items():
            if op in ("$eq", "$gt", "$gte", "$lt", "$lte") and _boundable(arg):
                rng.compare(op, arg, exact(arg))
            elif op == "$eq" and isinstance(arg, (MinKey, MaxKey)):
                rng.any_of([arg], exact)
            elif op == "$in" and isinstance(arg, list) and arg and \
                    all(_boundable(a) or isinstance(a, (MinKey, MaxKey)) for a in arg):
                rng.any_of(arg, exact)
    if rng.min is None and rng.max is None:
        return None
    return RecordRange(rng.min, rng.max)


def excludes_collatable(flt: dict | None) -> bool:
    """Some conjunct on ``_id`` lets no string ``_id`` through (a comparison with, or an ``$in`` of,
    operands holding no string: their type brackets hold no strings), so the collation cannot change
    the order of what the scan returns."""
    if not isinstance(flt, dict):
        return False
    for cond in _conjuncts(flt):
        is_ops = isinstance(cond, dict) and cond and all(type(k) is str and k.startswith("$") for k in cond)
        if not is_ops:
            if _boundable(cond) and not has_strings(cond):
                return True
            continue
        for op, arg in cond.items():
            if op in ("$eq", "$gt", "$gte", "$lt", "$lte") and _boundable(arg) and not has_strings(arg):
                return True
            if op == "$in" and isinstance(arg, list) and arg and \
                    all(_boundable(a) and not has_strings(a) for a in arg):
                return True
    return False


def sort_direction(sort: dict | None) -> int:
    """1 / -1 when ``sort`` is exactly the clustered key order ``{_id: 1}`` or its reverse, else 0
    (mongod's ``providesSort``: the sort pattern is a prefix of ``{_id: 1}``)."""
    if not sort or len(sort) != 1 or CLUSTER_FIELD not in sort:
        return 0
    value = sort[CLUSTER_FIELD]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value not in (1, -1):
        return 0
    return int(value)


# mongod's CollationIndexKey::isCollatableType: values of these types may compare differently under
# another collation (whatever they hold)
def _collatable_type(value: Any) -> bool:
    return isinstance(value, (str, dict, list))


def _planner_error(code: int, reason: str) -> MongoError:
    return MongoError(code, f"error processing query: planner returned error :: caused by :: {reason}")


def min_max(lo: dict | None, hi: dict | None, collation: Any, collection_collation: Any,
            within: RecordRange | None) -> tuple[RecordRange, Any]:
    """The scan of a ``find`` with ``min`` / ``max`` hinted to the clustered index: ``_id`` in
    ``[min, max)`` compared as the index orders keys (under the query's collation), narrowed further by
    the filter's range ``within``. Returns the (loose, inclusive) record range and the exact test a
    document must pass. Refused as mongod 7.0 (``handleClusteredScanHint``): 6137400 when ``min`` /
    ``max`` is not ``{_id: value}`` or holds a collatable value under a collation other than the
    collection's; 6137401 when ``min`` does not come before ``max``."""
    collators_match = same(collation, collection_collation)
    for doc in (lo, hi):
        if doc and (list(doc) != [CLUSTER_FIELD] or (not collators_match and _collatable_type(doc[CLUSTER_FIELD]))):
            raise _planner_error(6137400, "The clustered index is not compatible with the values provided for "
                                          "min/max due to the query collation")
    compare = compare_for(collation)
    low = lo[CLUSTER_FIELD] if lo else None
    high = hi[CLUSTER_FIELD] if hi else None
    if lo and hi and compare(low, high) >= 0:
        raise _planner_error(6137401, "max() must be greater than min()")
    rng = _Range()
    if within is not None:
        rng.min, rng.max = within.min, within.max
    for doc, is_min in ((lo, True), (hi, False)):
        if not doc:
            continue
        value = doc[CLUSTER_FIELD]
        if collation is not None and has_strings(value):
            # record ids order strings binary-wise: under a non-simple collation a string bound only
            # bounds the scan by its type bracket (``keep`` gives the collation's answer)
            bracket = _bracket(value)
            if bracket is None:
                continue
            bound = Bound(value, (bracket[0] if is_min else bracket[1]).key)
        elif _boundable(value) or isinstance(value, (MinKey, MaxKey)):
            bound = _bound(value)
        else:
            continue  # no record id holds such a value (an array): ``keep`` decides
        if is_min:
            rng.raise_min(bound)
        else:
            rng.lower_max(bound)

    def keep(doc: Any) -> bool:
        value = doc.get(CLUSTER_FIELD)
        return (not lo or compare(value, low) >= 0) and (not hi or compare(value, high) < 0)

    return RecordRange(rng.min, rng.max), keep
