"""COUNT_SCAN (pure): the plan a count becomes when its index's bounds answer the whole filter, as
mongod's ``turnIxscanIntoCount`` — the entries of one key interval are counted and no document is
fetched (``tidemark.collections.run_count_scan`` runs it).

- ``count_scan_of(plan, filter, collation, info) -> CountScan | None``: conservative: a plain index
  (no sparse, partial, collated, hashed, geo, text or wildcard one), one interval, each filter field a
  key field with an equality to a scalar or one range of numbers or strings (the simple collation for
  strings); equalities pin a key prefix, at most one range follows, later fields unbounded; on a
  multikey index one bounded field with one operator. Anything else is None: the count scans as
  before (same result), so a wrong acceptance here is the only way a count could differ — the
  Hypothesis tests of tests/query/test_count_scan.py compare counts with finds.
- ``CountScan.explain()``: mongod's COUNT_SCAN explain node (startKey / endKey bounds).
"""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any

from bson.int64 import Int64
from bson.max_key import MaxKey
from bson.min_key import MinKey
from bson.objectid import ObjectId

from tidemark.query.access_path import Plan
from tidemark.query.index_keys import MULTIKEY_FLAG
from tidemark.query.values import compare
from tidemark.query.wildcard import is_wildcard_field

__all__ = ["CountScan", "count_scan_of"]


@dataclasses.dataclass(frozen=True)
class CountScan:
    """mongod's COUNT_SCAN of a count whose filter the index bounds answer exactly (its
    ``turnIxscanIntoCount``): the entries of one key interval are counted, no document is fetched.
    ``plan``: what the profiler shows (``COUNT_SCAN { a: 1 }``); ``start`` / ``end``: the interval's
    ends as explain shows them (one value per key field, MinKey / MaxKey past the bounded ones)."""

    plan: Plan
    start: dict
    start_inclusive: bool
    end: dict
    end_inclusive: bool
    dedup: bool  # a multikey index: a document's several entries count once

    def explain(self) -> dict:
        index = self.plan.index
        assert index is not None
        node = self.plan.ixscan_explain()
        node = {"stage": "COUNT_SCAN", **{k: node[k] for k in ("keyPattern", "indexName", "isMultiKey")}}
        if not self.dedup:
            node["multiKeyPaths"] = {path: [] for path in index["key"]}
        node.update(isUnique=bool(index.get("unique")) or index["name"] == "_id_", isSparse=False,
                    isPartial=False, indexVersion=2,
                    indexBounds={"startKey": self.start, "startKeyInclusive": self.start_inclusive,
                                 "endKey": self.end, "endKeyInclusive": self.end_inclusive})
        return node


# The range operators a COUNT_SCAN's bounds answer exactly, and the values they may compare with: numbers
# (not NaN) and strings (under the simple collation only) keep their bounds within their type.
_LOWER, _UPPER = {"$gt": False, "$gte": True}, {"$lt": False, "$lte": True}
_POINT_TYPES = (int, float, str, bool, Int64, datetime.datetime, ObjectId)


def _bracketed(value: Any) -> str | None:
    """The type bracket a range bound keeps to ("number", "string"), or None (not answered exactly)."""
    if type(value) in (int, float, Int64) and value == value:  # (NaN compares unequal to itself)
        return "number"
    return "string" if type(value) is str else None


def count_scan_of(plan: Any, flt: Any, collation: Any, info: Any) -> CountScan | None:
    """The COUNT_SCAN a count through ``plan`` becomes, or None: an index scan of one interval over a
    plain index (no sparse, partial, collated, hashed, geo, text or wildcard one) whose bounds answer
    the whole filter, so no document needs the filter again (mongod: no FETCH filter, a single
    interval). Conservative: each field of the filter is an index key field with an equality to a
    scalar or one range of numbers or strings; equalities pin a prefix of the key pattern, at most one
    range follows, and the fields after it are unbounded (a multikey index: one bounded field, one
    operator). A count this refuses scans as before (same result, IXSCAN counters). An IDHACK plan
    stays one: mongod plans a count's simple ``{_id: v}`` as COUNT over IDHACK."""
    if (plan is None or plan.kind != "IXSCAN" or plan.id_lookup or plan.index is None or len(plan.intervals) != 1
            or plan.meta is not None or type(flt) is not dict):
        return None
    index = plan.index
    key = index["key"]
    if (index.get("sparse") or "partialFilterExpression" in index or index.get("collation") is not None
            or any(type(v) not in (int, float, Int64) or is_wildcard_field(k) for k, v in key.items())):
        return None
    dedup = bool(index.get(MULTIKEY_FLAG, info.clustered))
    bounds: dict[str, tuple] = {}  # field -> ("point", value) | ("range", lower, lower_incl, upper, upper_incl)
    for path, cond in flt.items():
        if path not in key or any(part.isdigit() for part in path.split(".")):
            return None
        if type(cond) is dict and cond and all(type(k) is str and k.startswith("$") for k in cond):
            if dedup and len(cond) != 1:
                return None
            if set(cond) == {"$eq"}:
                cond = cond["$eq"]
            else:
                bound = _range_bound(cond, collation)
                if bound is None:
                    return None
                bounds[path] = bound
                continue
        if type(cond) not in _POINT_TYPES or (type(cond) is float and cond != cond) or (
                type(cond) is str and collation is not None):
            return None
        bounds[path] = ("point", cond)
    if dedup and len(bounds) > 1:
        return None
    start: dict[str, Any] = {}
    end: dict[str, Any] = {}
    start_incl = end_incl = True
    ranged = False
    for path, direction in key.items():
        bound = bounds.get(path)
        if ranged:  # past the range: unbounded, MinKey / MaxKey as the range's ends include (isSingleInterval)
            if bound is not None:
                return None  # a bounded field after the range: not one interval
            start[path] = MinKey() if start_incl else MaxKey()
            end[path] = MaxKey() if end_incl else MinKey()
            continue
        if bound is None:  # the first unbounded field is the interval's range: all of it
            bound = ("range", MinKey(), True, MaxKey(), True)
        if bound[0] == "point":
            start[path] = end[path] = bound[1]
            continue
        ranged = True
        _, lower, lower_incl, upper, upper_incl = bound
        if direction < 0:  # a descending field is scanned from its high end
            lower, lower_incl, upper, upper_incl = upper, upper_incl, lower, lower_incl
        start[path], end[path] = lower, upper
        start_incl, end_incl = lower_incl, upper_incl
    count_plan = Plan("COUNT_SCAN", index=index, intervals=list(plan.intervals), bounds_desc=plan.bounds_desc)
    return CountScan(count_plan, start, start_incl, end, end_incl, dedup)


def _range_bound(cond: dict, collation: Any) -> tuple | None:
    """("range", lower, lower inclusive, upper, upper inclusive) of ``{$gt.., $lt..}`` over one type
    bracket (the other end that bracket's limit, as mongod's bounds: ±Infinity, "" to {}), else None."""
    lower: tuple | None = None
    upper: tuple | None = None
    brackets = set()
    for op, value in cond.items():
        bracket = _bracketed(value)
        if bracket is None or (bracket == "string" and collation is not None):
            return None
        brackets.add(bracket)
        if op in _LOWER and lower is None:
            lower = (value, _LOWER[op])
        elif op in _UPPER and upper is None:
            upper = (value, _UPPER[op])
        else:
            return None
    if len(brackets) != 1:
        return None
    number = brackets == {"number"}
    lower = lower or ((float("-inf"), True) if number else ("", True))
    upper = upper or ((float("inf"), True) if number else ({}, False))
    if lower[0] != lower[0]:
        return None
    if type(upper[0]) is not dict:
        order = compare(lower[0], upper[0])
        if order > 0 or (order == 0 and not (lower[1] and upper[1])):
            return None  # an empty range ($gt: 5 with $lt: 5 too): left to the index scan, whose filter decides
    return ("range", lower[0], lower[1], upper[0], upper[1])
