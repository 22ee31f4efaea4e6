"""Column-at-a-time ``$group`` over bucket columns (the TSBS shape), pure: which pipelines qualify.

A pipeline ``[$match...] -> $group`` whose ``_id`` depends only on ``$dateTrunc`` of the time field
(UTC, unit second..day, no binSize/timezone) and on meta paths, and whose accumulators are
``$max/$min/$avg/$sum/$first/$last/$count`` of a top-level measurement field (or a constant), and whose
per-measurement filter is a conjunction of comparisons of the time field with dates or of top-level
fields with numbers (meta parts are decided exactly per bucket by the bucket predicate), is planned
here (``plan`` -> ``ColumnarGroup``) and run by groupbatch.py on arrays instead of a dict per
measurement: each group's ``_id`` is computed by the *generic* compiled ``_id`` expression on one
representative row, and the generic accumulators are fed in row order, so results, types and group
order are those of the generic ``$group``.

``$group`` by ``$dateTrunc`` -> ``$sort {_id: -1}`` -> ``$limit k`` additionally gets a ``TopK``: the
read goes newest bucket first and stops once no older bucket can reach the k newest groups.
"""

from __future__ import annotations

import datetime as _dt
import heapq
from collections.abc import Callable
from typing import Any, cast

import numpy as np
from bson.errors import InvalidDocument

from tidemark.protocol.codec import encode
from tidemark.protocol.errors import MongoError
from tidemark.query.expressions import compile_expression
from tidemark.query.match_ast import And, Cmp, Node
from tidemark.query.stage_group import (
    parse_accumulated_fields,
)
from tidemark.timeseries.bucketdoc import date_ms
from tidemark.timeseries.filters import FilterShape, shape_of

# The bare {date, unit} $dateTrunc this path takes is UTC with binSize 1: query.dates.date_trunc's bins
# count from 2000-01-01T00:00Z, a whole number of days after the epoch, so a bin start is
# ``t - t % unit`` (floor, dates before 1970 included); tests/e2e/test_date_expression_properties.py
# checks it against a regular collection.
UNIT_MS = {"millisecond": 1, "second": 1000, "minute": 60_000, "hour": 3_600_000, "day": 86_400_000}
_ACCUMULATORS = {"$max", "$min", "$avg", "$sum", "$first", "$last", "$count"}
_EPOCH = _dt.datetime(1970, 1, 1)
_OPS = {"$gt": np.greater, "$gte": np.greater_equal, "$lt": np.less, "$lte": np.less_equal, "$eq": np.equal}
_MAX_EXACT_INT = 2**53
# ``_shape``'s verdicts by the spec's BSON (with the time and meta fields): shared, never mutated;
# cleared when full
_SHAPES: dict[bytes, _Shape | None] = {}
_SHAPES_MAX = 256
_UNSEEN = object()


# ------------------------------------------------------------------ plan


class _Shape:
    """What a ``$group`` spec fixes for a collection's time and meta fields, whatever the filter: its
    parsed accumulators, compiled ``_id`` and the facts derived from them (``_shape``: made once per
    spec, shared by the queries of that shape; never mutated but for ``keys``, the memo of
    ``_group_keys``)."""

    __slots__ = ("unit_ms", "fields", "id_fn", "id_meta", "id_shape", "field_columns", "keys")

    def __init__(self, group_spec: dict[str, Any], unit_ms: int | None, fields: list[Any], time_field: str,
                 meta_field: str | None):
        self.unit_ms = unit_ms
        self.fields = fields  # [(name, AccumulatorSpec)]
        self.id_fn = compile_expression(group_spec["_id"])
        self.id_meta = not _id_unit(group_spec["_id"], time_field, None, set())  # the _id reads a meta path
        # what fixes each meta's _id template across queries (groupstate's cache key, with the meta's
        # token): the _id expression as BSON (types and field order exact; its $dateTrunc unit with it)
        # and the fields it reads; None when it could read anything else (a variable: never cached)
        self.id_shape: bytes | None = \
            encode({"_id": group_spec["_id"], "t": time_field, "m": meta_field}) \
            if _id_unit(group_spec["_id"], time_field, meta_field, set()) else None
        self.field_columns = {spec.field for _, spec in fields if spec.field is not None}
        # ``_group_keys`` by (time field, the filter's condition paths): a dict read and written by
        # every pool thread (single operations under the GIL; a value is a tuple, made whole first)
        self.keys: dict[tuple[str, tuple[str, ...]], tuple[tuple[str, ...], str, str]] = {}


class ColumnarGroup:
    """A parsed ``$group`` the columnar path can run, plus the vectorized filter."""

    def __init__(self, group_spec: dict[str, Any], shape: _Shape, conditions: list[Any], time_field: str,
                 meta_field: str | None, paths: tuple[str, ...] | None = None):
        self.group_spec = group_spec
        self.unit_ms = shape.unit_ms
        self.fields = shape.fields  # [(name, AccumulatorSpec)]
        self.conditions = conditions  # [(path, np ufunc, operand)]: path == time_field -> ms operand
        self.time_field, self.meta_field = time_field, meta_field
        self.id_fn = shape.id_fn
        self.id_meta = shape.id_meta  # the _id reads a meta path
        self.id_shape = shape.id_shape  # (``_Shape``)
        self.topk: TopK | None = None  # set when only the k newest groups can reach the output
        # the conditions are the whole filter (no meta part): the bucket predicate only prunes
        self.conditions_exact = False
        # the stage whose output is the read's when only a $sort (and a $limit) or nothing follows the
        # group: "$sort", "$group" or None (groupbatch.GroupOutput may then hand BSON to the cursor)
        self.last: str | None = None
        # (the remembered keys read here when the caller has the paths: every columnar read has them)
        found = None if paths is None else shape.keys.get((time_field, paths))
        columns, self.fast_key, self.runs_key = found if found is not None else \
            _group_keys(shape, time_field, conditions, paths)
        self.columns = list(columns)


_KEYS_MAX = 64  # condition path sets remembered per shape (cleared when full)


def _group_keys(shape: _Shape, time_field: str, conditions: list[Any], paths: tuple[str, ...] | None = None
                ) -> tuple[tuple[str, ...], str, str]:
    """(the columns a bucket's dense arrays hold, the memo key of those arrays on a stored bucket's cache
    entry (``densecolumns.fast_arrays``), the memo key of its runs (``groupbatch``)) of a group of
    ``shape`` under a filter with ``conditions``: they depend on the shape, the time field and the
    conditions' paths alone (not their operators or operands), so they are made once per such set and
    remembered on the shape. The keys are strings: hashed once, where a nested tuple is hashed at every
    lookup (once per bucket and query). ``paths``: the conditions' paths, sorted, when the caller has
    them (``_Conditions.paths``)."""
    if paths is None:
        paths = tuple(sorted({path for path, _, _ in conditions}))
    key = (time_field, paths)
    found = shape.keys.get(key)
    if found is None:
        columns = tuple(sorted(shape.field_columns | set(paths) - {time_field}))
        found = (columns, "fast arrays " + repr((time_field, columns)),
                 "runs " + repr((time_field, shape.unit_ms, tuple((spec.name, spec.field) for _, spec in shape.fields),
                                 paths)))
        if len(shape.keys) >= _KEYS_MAX:
            shape.keys.clear()
        shape.keys[key] = found
    return found


def _id_unit(value: Any, tf: str, mf: str | None, units: set[Any]) -> bool:
    """True when the ``_id`` expression reads only ``$dateTrunc`` of the time field and meta paths."""
    if type(value) is str:
        if value.startswith("$$"):
            return False
        if value.startswith("$"):
            path = value[1:]
            return mf is not None and (path == mf or path.startswith(mf + "."))
        return True
    if isinstance(value, dict):
        if len(value) == 1 and "$dateTrunc" in value:
            body = value["$dateTrunc"]
            if not isinstance(body, dict) or set(body) != {"date", "unit"} or body["date"] != "$" + tf:
                return False
            if body["unit"] not in UNIT_MS:
                return False
            units.add(body["unit"])
            return True
        if any(k.startswith("$") for k in value):
            return False
        for v in value.values():
            if not _id_unit(v, tf, mf, units):
                return False
        return True
    if isinstance(value, list):
        return False
    return isinstance(value, (int, float, bool)) or value is None


def _conjuncts(node: Node) -> list[Node]:
    if isinstance(node, And):
        return [c for child in node.children for c in _conjuncts(child)]
    return [node]


def _on_meta(path: str, mf: str | None) -> bool:
    return mf is not None and (path == mf or path.startswith(mf + "."))


def _all_paths_on_meta(node: Node, mf: str | None) -> bool:
    children = getattr(node, "children", None)
    if children is not None:
        return all(_all_paths_on_meta(c, mf) for c in children)
    child = getattr(node, "child", None)
    if child is not None:
        return _all_paths_on_meta(child, mf)
    path = getattr(node, "path", None)
    return path is not None and _on_meta(path, mf)


class _Conditions:
    """What a filter's shape fixes of its row conditions (``_conditions``, made once per shape:
    ``filters.FilterShape.conditions``): its conjuncts (the top-level ``$and`` flattened), each one
    dropped (a meta-only part: the bucket predicate decides it exactly) or a comparison of the time
    field or of a top-level measurement field with its ufunc; ``none``: some part has no vectorized
    form whatever its operand. Whether an operand vectorizes is read at each bind."""

    __slots__ = ("flat", "alone", "kinds", "none", "paths", "times")

    def __init__(self, node: Node, tf: str, mf: str | None):
        self.flat = isinstance(node, And) and not any(isinstance(c, And) for c in node.children)
        self.alone = not isinstance(node, And)  # one conjunct: the node itself (a filter of one comparison)
        self.kinds: list[tuple[str, Any] | None] = []
        self.none = False
        self.paths: tuple[str, ...] = ()  # the bound conditions' paths, sorted (``_group_keys``)
        self.times = 0  # the comparisons of the time field
        for part in _conjuncts(node):
            if _all_paths_on_meta(part, mf):
                self.kinds.append(None)
            elif not isinstance(part, Cmp) or part.op not in _OPS or \
                    part.path != tf and ("." in part.path or part.path == mf):
                self.none = True
                return
            else:
                self.kinds.append((part.path, _OPS[part.op]))
        self.paths = tuple(sorted({kind[0] for kind in self.kinds if kind is not None}))
        self.times = sum(1 for kind in self.kinds if kind is not None and kind[0] == tf)

    def bind(self, node: Node, tf: str, dates: tuple[int | None, ...] | None = None) -> tuple[list[Any], int] | None:
        """(the filter ``node`` of this shape as [(path, ufunc, operand)] row conditions, its number of
        conjuncts), or None when some part has no vectorized form. ``dates``: the time comparisons'
        operands in ms as the column filter converted them (``rowfilter.ColumnFilter.dates``: one per
        comparison of the time field, in order; None where not a ``datetime``), so as not to convert
        them again."""
        if self.none:
            return None
        if dates is not None and len(dates) != self.times:
            dates = None  # (not this filter's: converted here)
        k = 0
        parts = node.children if self.flat else (node,) if self.alone else _conjuncts(node)  # type: ignore[attr-defined]
        out: list[tuple[str, np.ufunc, float]] = []  # the time field's operand is int ms
        for part, kind in zip(parts, self.kinds, strict=True):
            if kind is None:
                continue
            path, ufunc = kind
            value = part.value
            if path == tf:
                ms = dates[k] if dates is not None else None
                k += 1
                if ms is None:
                    ms = date_ms(value) if isinstance(value, _dt.datetime) else None
                if ms is None:
                    return None
                out.append((tf, ufunc, ms))
            elif type(value) in (int, float):
                if type(value) is int and abs(value) >= _MAX_EXACT_INT:
                    return None
                out.append((path, ufunc, float(value)))
            else:
                return None
        return out, len(parts)


class Grouping:
    """What the pipeline after the absorbed ``$match`` stages fixes of a columnar ``$group``, whatever the
    filter (``grouping``; a read source remembers it per such pipeline, ``view._rest_of``): the group's
    ``_Shape``, the stage whose output is the read's (``ColumnarGroup.last``) and the k of a newest-first
    read (``topk_shape``). Never changed once made."""

    __slots__ = ("shape", "last", "topk")

    def __init__(self, spec: dict[str, Any], shape: _Shape, remaining: list[dict[str, Any]]):
        self.shape = shape
        self.last = _last_stage(remaining[1:])
        self.topk = topk_shape(remaining, spec, shape)


def grouping(remaining: list[dict[str, Any]], time_field: str, meta_field: str | None) -> Grouping | None:
    """The ``Grouping`` of ``remaining`` when it starts with a ``$group`` of the supported shape, else None."""
    if not remaining or not isinstance(remaining[0], dict) or len(remaining[0]) != 1:
        return None
    spec = remaining[0].get("$group")
    if not isinstance(spec, dict) or "_id" not in spec:
        return None
    shape = _shape(spec, time_field, meta_field)
    return None if shape is None else Grouping(spec, shape, remaining)


def plan(node: Node | None, remaining: list[dict[str, Any]], time_field: str, meta_field: str | None,
         filter_shape: FilterShape | None = None, group: Grouping | None | object = _UNSEEN,
         dates: tuple[int | None, ...] | None = None) -> ColumnarGroup | None:
    """A ColumnarGroup when ``remaining`` starts with a ``$group`` of the supported shape and the
    leading filter ``node`` vectorizes; else None (the generic path runs). ``filter_shape``:
    ``filters.shape_of(node, ...)`` when the caller has it (the conditions' template lives there);
    ``group``: ``grouping(remaining, ...)`` when the caller has it; ``dates``: the column filter's
    (``_Conditions.bind``)."""
    found: Any = grouping(remaining, time_field, meta_field) if group is _UNSEEN else group
    if found is None:
        return None
    paths: tuple[str, ...] = ()
    if node is None:
        conditions: list[Any] = []
        n_parts = 0
    else:
        fshape = filter_shape if filter_shape is not None else shape_of(node, time_field, meta_field)
        template = fshape.conditions
        if template is None:
            template = fshape.conditions = _Conditions(node, time_field, meta_field)
        bound = template.bind(node, time_field, dates)
        if bound is None:
            return None
        conditions, n_parts = bound
        paths = template.paths
    # (the spec of this read's own pipeline: the $group stage asks whether it is the one planned)
    group = ColumnarGroup(remaining[0]["$group"], found.shape, conditions, time_field, meta_field, paths)
    group.conditions_exact = len(conditions) == n_parts
    group.last = found.last
    return group


def _shape(spec: dict[str, Any], time_field: str, meta_field: str | None) -> _Shape | None:
    """The ``_Shape`` of a ``$group`` spec (with its ``_id``) on these fields, or None when the columnar
    path cannot run it; remembered by the spec's BSON (types and field order exact) with the fields,
    so a query of a known shape neither parses its accumulators nor compiles its ``_id`` here (the
    generic stage parses them for itself)."""
    try:
        key = encode({"g": spec, "t": time_field, "m": meta_field})
    except InvalidDocument:  # (a spec no client can send: made each time)
        return _shape_of(spec, time_field, meta_field)
    found = _SHAPES.get(key, _UNSEEN)
    if found is _UNSEEN:
        found = _shape_of(spec, time_field, meta_field)
        if len(_SHAPES) >= _SHAPES_MAX:
            _SHAPES.clear()
        _SHAPES[key] = found
    return cast(_Shape | None, found)


def _shape_of(spec: dict[str, Any], time_field: str, meta_field: str | None) -> _Shape | None:
    units: set[Any] = set()
    if not _id_unit(spec["_id"], time_field, meta_field, units) or len(units) > 1:
        return None
    try:
        fields = parse_accumulated_fields(spec, "$group")
    except MongoError:
        return None  # the generic $group reports the error
    for _name, acc in fields:
        if acc.name not in _ACCUMULATORS:
            return None
        if acc.field is None:
            if acc.name != "$count" and type(acc.spec) not in (int, float):
                return None
        elif acc.field == time_field:
            if acc.name not in ("$max", "$min", "$first", "$last"):
                return None
        elif acc.field == meta_field:
            return None
    return _Shape(spec, UNIT_MS[units.pop()] if units else None, fields, time_field, meta_field)


def _last_stage(after: list[Any]) -> str | None:
    """"$group" when no stage follows the group, "$sort" when only a ``$sort`` (then a ``$limit``)
    does, else None."""
    if not after:
        return "$group"
    shape = [next(iter(stage)) if isinstance(stage, dict) and len(stage) == 1 else None for stage in after]
    return "$sort" if shape in (["$sort"], ["$sort", "$limit"]) else None


# ------------------------------------------------------------------ newest groups only


class TopK:
    """The k largest truncated times of the groups created so far, for ``$group`` by ``$dateTrunc``
    -> ``$sort {_id: -1}`` -> ``$limit k``: a bucket starting at s holds times < s + span, which all
    truncate below ``kth`` once s + span <= kth, so neither it nor any older bucket can change the
    k newest groups (``done_before``); nor can any row whose time is below ``kth`` (``floor``): its
    group is outranked by k groups already made, which no later row can undo.

    ``settle`` (set by the reader): feeds the rows the reader holds to the groups. The scan asks
    ``done_before`` before each bucket, by descending start; the answer can change only when the start
    does (rows of buckets starting at s truncate below s + span), so the reader is settled then only,
    and may hold every bucket of one start meanwhile.

    ``repeats`` (set once the groups spilled, groupbatch): a group made again after a spill offers its
    time again, and a time the heap holds is then not taken twice (the heap holds distinct times)."""

    def __init__(self, k: int, span_ms: int):
        self.k, self.span_ms = k, span_ms
        self._heap: list[int] = []
        self._asked: int | None = None
        self.settle: Callable[[], None] | None = None
        self.repeats = False

    def offer(self, trunc_ms: int) -> None:
        if self.repeats and trunc_ms in self._heap:
            return
        if len(self._heap) < self.k:
            heapq.heappush(self._heap, trunc_ms)
        elif trunc_ms > self._heap[0]:
            heapq.heapreplace(self._heap, trunc_ms)

    def offer_many(self, truncs: np.ndarray) -> None:
        """``offer`` each of ``truncs`` (int64): the heap keeps the k largest of it and them, found by one
        partition."""
        heap, k = self._heap, self.k
        if len(truncs) <= 2:
            for value in truncs.tolist():
                self.offer(value)
            return
        if self.repeats:
            truncs = np.setdiff1d(truncs, np.asarray(heap, dtype=np.int64))
        if len(heap) >= k:
            truncs = truncs[truncs > heap[0]]  # (what ``offer`` would turn away)
            if not len(truncs):
                return
        joined = np.concatenate([np.asarray(heap, dtype=np.int64), truncs]) if heap else truncs
        if len(joined) > k:
            joined = np.partition(joined, len(joined) - k)[len(joined) - k:]
        self._heap = joined.tolist()
        heapq.heapify(self._heap)

    def floor(self) -> int | None:
        """The k-th largest truncated time of the groups made (None: fewer than k groups)."""
        return self._heap[0] if len(self._heap) >= self.k else None

    def bound(self, times: np.ndarray, unit_ms: int) -> int | None:
        """The k-th largest distinct truncated time of the groups made and of ``times`` (int64 ms of rows,
        or truncated times, about to become groups); None while fewer than k. Nothing below it can reach
        the output. Found among the rows of the top few units (a window widened until it holds k)."""
        heap, k = self._heap, self.k
        if not len(times):
            return self.floor()
        top = int(times.max()) // unit_ms * unit_ms
        if heap:
            top = max(top, max(heap))
        width = (k - 1) * unit_ms
        while True:
            low = top - width  # a truncated time: a row truncates at or above it exactly when it is there
            near = times[times >= low]
            made = [h for h in heap if h >= low]
            found = np.unique(near - near % unit_ms)
            if made:
                found = np.union1d(found, np.asarray(made, dtype=np.int64))
            if len(found) >= k:
                return int(found[-k])
            if len(near) == len(times) and len(made) == len(heap):
                return None
            width *= 4

    def done_before(self, bucket_start_s: int) -> bool:
        if bucket_start_s != self._asked:
            self._asked = bucket_start_s
            if self.settle is not None:
                self.settle()
        return len(self._heap) >= self.k and bucket_start_s * 1000 + self.span_ms <= self._heap[0]


def topk_shape(remaining: list[dict[str, Any]], spec: dict[str, Any], shape: _Shape) -> int | None:
    """k when ``remaining`` is ``$group`` (``spec``, of ``shape``) on exactly ``$dateTrunc`` of the time,
    ``$sort {_id: -1}``, ``$limit k`` and no accumulator depends on the order of the buckets; else None."""
    if len(remaining) < 3 or shape.unit_ms is None or not isinstance(spec["_id"], dict):
        return None
    if "$dateTrunc" not in spec["_id"]:
        return None
    # the newest-first read feeds a group's buckets newest first, the generic one by ascending _id (the
    # collection scan's order): $first/$last would take another bucket's row
    if any(acc.name in ("$first", "$last") for _, acc in shape.fields):
        return None
    sort, limit = remaining[1], remaining[2]
    if sort != {"$sort": {"_id": -1}} or not isinstance(limit, dict) or set(limit) != {"$limit"}:
        return None
    k = limit["$limit"]
    return k if type(k) is int and 0 < k <= 1000 else None



