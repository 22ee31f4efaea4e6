"""User filter AST -> bucket-level predicate and bucket ``_id`` range (spec §5.2; pure).

Contract: the bucket predicate may be *loose* (keep a bucket that has no matching measurement) but never
strict (drop a bucket that has one); the full per-measurement filter always runs after unpacking.

- predicates only on the meta field (``m``, ``m.x``) are renamed onto ``meta`` and evaluated exactly on
  the bucket (missing meta <-> bucket without ``meta``);
- comparisons on the time field with a date bound ``control.min/max.<time>`` and the clustered ``_id``
  range (the 4-byte bucket start): a measurement ``t`` lies in ``[start, start + span)``;
- comparisons on measurement fields with scalar operands bound ``control.min/max.<field>``, unless the
  bucket holds objects/arrays there or mixed types (min and max of different type classes);
- anything else (``$not``, ``$nor``, ``$expr``, regexes, …) keeps every bucket.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from server.query.match import compile_node
from server.query.match_ast import And, Cmp, ElemMatch, Exists, In, Node, Nor, Not, Or
from server.query.values import compare
from server.timeseries.buckets import date_ms, type_class

BucketPredicate = Callable[[dict], bool]
_ALWAYS: BucketPredicate = lambda bucket: True  # noqa: E731
_NEVER: BucketPredicate = lambda bucket: False  # noqa: E731
_MISSING = object()
_OBJECT_OR_ARRAY = (dict, list)
_STRUCTURAL = (And, Or, Nor, Not)


@dataclasses.dataclass
class BucketFilter:
    """``predicate(bucket_doc)`` plus the ``_id`` timestamp range ``[lo_s, hi_s]`` (None: open)."""

    predicate: BucketPredicate = _ALWAYS
    lo_s: int | None = None
    hi_s: int | None = None
    description: list[str] = dataclasses.field(default_factory=list)
    exact: bool = False  # the predicate decides every measurement of a bucket (meta-only filters)

    @property
    def prunes(self) -> bool:
        return self.predicate is not _ALWAYS or self.lo_s is not None or self.hi_s is not None


def _paths(node: Node, out: list[str]) -> bool:
    """Collect the paths of ``node``; False when it holds a path-less node ($expr, $jsonSchema…)."""
    if isinstance(node, _STRUCTURAL):
        children = node.children if hasattr(node, "children") else (node.child,)
        return all(_paths(child, out) for child in children)
    path = getattr(node, "path", None)
    if path is None:
        return False
    out.append(path)
    return True


def _on_meta(path: str, meta_field: str | None) -> bool:
    return meta_field is not None and (path == meta_field or path.startswith(meta_field + "."))


def _rename_meta(node: Node, meta_field: str) -> Node:
    if isinstance(node, (And, Or, Nor)):
        return dataclasses.replace(node, children=tuple(_rename_meta(c, meta_field) for c in node.children))
    if isinstance(node, Not):
        return Not(_rename_meta(node.child, meta_field))
    return dataclasses.replace(node, path="meta" + node.path[len(meta_field):])


def bucket_filter(node: Node | None, time_field: str, meta_field: str | None, span_s: int,
                  *, use_id_bounds: bool = True, collation: bool = False) -> BucketFilter:
    """Derive the bucket-level filter of a parsed user filter (see module docstring).

    ``collation``: the collection has a non-simple collation, so string bounds are not used (control
    min/max of strings are binary-ordered)."""
    if node is None:
        return BucketFilter()
    token = _STRING_BOUNDS_OFF if collation else None
    result = _derive(node, time_field, meta_field, span_s, token)
    if not use_id_bounds:
        result.lo_s = result.hi_s = None
    return result


_STRING_BOUNDS_OFF = "no-string-bounds"


def _derive(node: Node, tf: str, mf: str | None, span_s: int, flags: str | None = None) -> BucketFilter:
    paths: list[str] = []
    if _paths(node, paths) and paths and all(_on_meta(p, mf) for p in paths):
        renamed = _rename_meta(node, mf)
        return BucketFilter(compile_node(renamed), description=[{"meta": repr(renamed)}], exact=True)
    if isinstance(node, And):
        parts = [_derive(child, tf, mf, span_s, flags) for child in node.children]
        predicates = [p.predicate for p in parts if p.predicate is not _ALWAYS]
        lo = max((p.lo_s for p in parts if p.lo_s is not None), default=None)
        hi = min((p.hi_s for p in parts if p.hi_s is not None), default=None)
        description = [d for p in parts for d in p.description]
        if not predicates:
            return BucketFilter(_ALWAYS, lo, hi, description)
        if len(predicates) == 1:
            return BucketFilter(predicates[0], lo, hi, description)
        return BucketFilter(lambda b: all(p(b) for p in predicates), lo, hi, description)
    if isinstance(node, Or):
        parts = [_derive(child, tf, mf, span_s, flags) for child in node.children]
        if any(p.predicate is _ALWAYS and p.lo_s is None and p.hi_s is None for p in parts):
            return BucketFilter()
        predicates = [p.predicate for p in parts]
        lo = None if any(p.lo_s is None for p in parts) else min(p.lo_s for p in parts)
        hi = None if any(p.hi_s is None for p in parts) else max(p.hi_s for p in parts)
        return BucketFilter(lambda b: any(p(b) for p in predicates), lo, hi,
                            [d for p in parts for d in p.description])
    if isinstance(node, Cmp):
        if node.path == tf:
            return _time_bounds(node, tf, span_s)
        if not _on_meta(node.path, mf) and not (flags and isinstance(node.value, str)):
            return _measurement_bounds(node.path, node.op, node.value)
    if isinstance(node, In) and node.path != tf and not _on_meta(node.path, mf) and not node.regexes \
            and not (flags and any(isinstance(v, str) for v in node.values)):
        parts = [_measurement_bounds(node.path, "$eq", v) for v in node.values]
        if not parts or any(p.predicate is _ALWAYS for p in parts):
            return BucketFilter()
        predicates = [p.predicate for p in parts]
        return BucketFilter(lambda b: any(p(b) for p in predicates), description=[{f"control.min.{node.path}": "$in bounds"}])
    if isinstance(node, (Exists, ElemMatch)) and node.path != tf and not _on_meta(node.path, mf):
        path = node.path
        return BucketFilter(lambda b: _control_value(b, "min", path) is not _MISSING or _is_dotted_array(b, path),
                            description=[{f"control.min.{path}": {"$exists": True}}])
    return BucketFilter()


def _is_dotted_array(bucket: dict, path: str) -> bool:
    """A dotted path may traverse arrays, which control min/max do not describe field-wise."""
    return "." in path


# ------------------------------------------------------------------ time field


def _time_bounds(node: Cmp, tf: str, span_s: int) -> BucketFilter:
    d_ms = date_ms(node.value)
    if d_ms is None:
        return BucketFilter()  # a non-date never equals a date: the event filter answers; no pruning
    op = node.op
    d_floor_s = d_ms // 1000
    lo = hi = None
    if op in ("$eq", "$gt", "$gte"):
        lo = d_floor_s - span_s
    if op in ("$eq", "$lt", "$lte"):
        hi = d_floor_s

    def predicate(bucket: dict) -> bool:
        control = bucket.get("control") or {}
        lo_v = date_ms((control.get("min") or {}).get(tf))
        hi_v = date_ms((control.get("max") or {}).get(tf))
        if lo_v is None or hi_v is None:
            return True
        if op == "$eq":
            return lo_v <= d_ms <= hi_v
        if op == "$gt":
            return hi_v > d_ms
        if op == "$gte":
            return hi_v >= d_ms
        if op == "$lt":
            return lo_v < d_ms
        return lo_v <= d_ms

    bound = f"control.max.{tf}" if op in ("$gt", "$gte") else f"control.min.{tf}"
    shown = [{bound: {op: node.value}}] if op != "$eq" else [{f"control.min.{tf}": {"$lte": node.value}},
                                                             {f"control.max.{tf}": {"$gte": node.value}}]
    return BucketFilter(predicate, lo, hi, shown)


# ------------------------------------------------------------------ measurement fields


def _control_value(bucket: dict, which: str, path: str) -> Any:
    current: Any = (bucket.get("control") or {}).get(which)
    for part in path.split("."):
        if not isinstance(current, dict):
            return _MISSING
        current = current.get(part, _MISSING)
        if current is _MISSING:
            return _MISSING
    return current


def _measurement_bounds(path: str, op: str, value: Any) -> BucketFilter:
    if value is None or isinstance(value, _OBJECT_OR_ARRAY) or type_class(value) > 9:
        return BucketFilter()
    value_class = type_class(value)

    def predicate(bucket: dict) -> bool:
        lo = _control_value(bucket, "min", path)
        hi = _control_value(bucket, "max", path)
        if lo is _MISSING or hi is _MISSING:
            # no measurement has a scalar there (or it sits below an array): keep unless clearly absent
            return "." in path and _has_array_prefix(bucket, path)
        if isinstance(lo, _OBJECT_OR_ARRAY) or isinstance(hi, _OBJECT_OR_ARRAY):
            return True
        lo_class, hi_class = type_class(lo), type_class(hi)
        if lo_class != hi_class:
            return True  # mixed-schema bucket: control min/max do not bound every type
        if lo_class != value_class:
            return False  # type bracketing: no measurement of this bucket compares with the operand
        if op == "$eq":
            return compare(lo, value) <= 0 <= compare(hi, value)
        if op == "$gt":
            return compare(hi, value) > 0
        if op == "$gte":
            return compare(hi, value) >= 0
        if op == "$lt":
            return compare(lo, value) < 0
        return compare(lo, value) <= 0

    bound = f"control.max.{path}" if op in ("$gt", "$gte") else f"control.min.{path}"
    shown = [{bound: {op: value}}] if op != "$eq" else [{f"control.min.{path}": {"$lte": value}},
                                                       {f"control.max.{path}": {"$gte": value}}]
    return BucketFilter(predicate, description=shown)


def _has_array_prefix(bucket: dict, path: str) -> bool:
    parts = path.split(".")
    current: Any = (bucket.get("control") or {}).get("min")
    for part in parts[:-1]:
        if not isinstance(current, dict):
            return isinstance(current, list)
        current = current.get(part, _MISSING)
        if current is _MISSING:
            return False
        if isinstance(current, list):
            return True
    return False


# ------------------------------------------------------------------ bucket index filter


def index_filter(node: Node | None, time_field: str, meta_field: str | None, span_s: int) -> dict | None:
    """A bucket-level filter document for index selection over the buckets collection: equality and
    ``$in`` on meta paths (renamed to ``meta.*``) and time bounds on ``control.min/max.<time>``, taken
    from the top-level conjuncts of the user filter. Loose by construction (the bucket predicate and
    the event filter still run); None when nothing is indexable."""
    if node is None:
        return None
    conjuncts = node.children if isinstance(node, And) else (node,)
    out: dict[str, Any] = {}
    for child in conjuncts:
        path = getattr(child, "path", None)
        if path is None:
            continue
        if _on_meta(path, meta_field) and not isinstance(child, Not):
            bucket_path = "meta" + path[len(meta_field):]
            if isinstance(child, Cmp) and child.op == "$eq" and bucket_path not in out:
                out[bucket_path] = child.value
            elif isinstance(child, In) and not child.regexes and bucket_path not in out:
                out[bucket_path] = {"$in": list(child.values)}
        elif path == time_field and isinstance(child, Cmp) and date_ms(child.value) is not None:
            d = child.value
            if child.op in ("$gt", "$gte", "$eq"):
                out.setdefault(f"control.max.{time_field}", {})["$gt" if child.op == "$gt" else "$gte"] = d
            if child.op in ("$lt", "$lte", "$eq"):
                out.setdefault(f"control.min.{time_field}", {})["$lt" if child.op == "$lt" else "$lte"] = d
    return out or None
