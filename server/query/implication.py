"""Whether a query filter implies a partial index's ``partialFilterExpression`` (mongod's
``expression::isSubsetOf`` for the shapes it proves): a partial index may answer a query only when
every document the query matches is in the index.

Both sides are read as conjunctions of per-path predicates (top level and ``$and``). Every predicate of
the partial filter must be implied by one predicate of the query on the same path:

- comparisons (``$eq``/implicit equality, ``$gt``, ``$gte``, ``$lt``, ``$lte``) by a comparison of the
  same canonical type that is at least as narrow (``{$gt: 10}`` implies ``{$gt: 5}``; ``{$eq: 7}``
  implies ``{$gte: 7}``; an ``$in`` when each of its values does);
- ``{$exists: true}`` by any predicate that cannot match a missing field (a comparison with a non-null
  value, ``$exists: true``, ``$type``, ``$in`` without null, ``$regex``);
- anything else only by the very same predicate.
Anything not understood is not implied (the index is then not used without a hint), never wrongly used.
"""

from __future__ import annotations

import datetime
from typing import Any

from bson.objectid import ObjectId

__all__ = ["filter_implies"]

_COMPARISONS = ("$eq", "$gt", "$gte", "$lt", "$lte")


def filter_implies(query: Any, partial: Any) -> bool:
    required = _predicates(partial)
    if not required:
        return False
    have = _predicates(query)
    if have is None:
        return False
    return all(any(_implies(h, r) for h in have if h[0] == r[0]) for r in required)


def _predicates(filter: Any) -> list[tuple[str, str, Any]] | None:
    """[(path, operator, value)] of a conjunction, or None when it is not one we can read."""
    if not isinstance(filter, dict):
        return None
    out: list[tuple[str, str, Any]] = []
    for key, value in filter.items():
        if key == "$and":
            if not isinstance(value, list):
                return None
            for clause in value:
                sub = _predicates(clause)
                if sub is None:
                    return None
                out += sub
        elif key.startswith("$"):
            return None  # $or, $expr, $text...: not proven
        elif isinstance(value, dict) and value and all(isinstance(k, str) and k.startswith("$") for k in value):
            if "$not" in value or "$options" in value and "$regex" not in value:
                return None
            for op, operand in value.items():
                if op != "$options":
                    out.append((key, op, operand))
        else:
            out.append((key, "$eq", value))
    return out


def _kind(value: Any) -> str | None:
    """The canonical type bracket comparisons stay within (None: not compared here)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return None if value != value else "number"  # NaN
    if isinstance(value, str):
        return "string"
    if isinstance(value, datetime.datetime):
        return "date"
    if isinstance(value, ObjectId):
        return "objectId"
    return None


def _compare_implies(op: str, value: Any, need_op: str, bound: Any) -> bool:
    kind = _kind(value)
    if kind is None or kind != _kind(bound) or kind == "bool" and op != "$eq":
        return False
    if need_op == "$eq":
        return op == "$eq" and value == bound
    if need_op == "$gt":
        return (op == "$gt" and value >= bound) or (op in ("$gte", "$eq") and value > bound)
    if need_op == "$gte":
        return op in ("$gt", "$gte", "$eq") and value >= bound
    if need_op == "$lt":
        return (op == "$lt" and value <= bound) or (op in ("$lte", "$eq") and value < bound)
    if need_op == "$lte":
        return op in ("$lt", "$lte", "$eq") and value <= bound
    return False


def _implies(have: tuple[str, str, Any], need: tuple[str, str, Any]) -> bool:
    _, op, value = have
    _, need_op, bound = need
    if op == need_op and value == bound and type(value) is type(bound):
        return True
    if need_op == "$exists":
        if not bound:
            return False
        if op in _COMPARISONS:
            return value is not None and not isinstance(value, dict | list)
        if op == "$exists":
            return bool(value)
        if op == "$in":
            return isinstance(value, list) and bool(value) and all(v is not None for v in value)
        return op in ("$type", "$regex", "$size", "$all", "$elemMatch", "$mod")
    if need_op in _COMPARISONS:
        if op in _COMPARISONS:
            return _compare_implies(op, value, need_op, bound)
        if op == "$in":
            return isinstance(value, list) and bool(value) and all(
                _compare_implies("$eq", v, need_op, bound) for v in value)
    return False
