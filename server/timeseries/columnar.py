"""Column-at-a-time ``$group`` over bucket columns (the TSBS shape), pure.

A pipeline ``[$match...] -> $group`` whose ``_id`` depends only on ``$dateTrunc`` of the time field
(UTC, unit second..day, no binSize/timezone) and on meta paths, and whose accumulators are
``$max/$min/$avg/$sum/$first/$last/$count`` of a top-level measurement field (or a constant), is run
per bucket on arrays instead of a dict per measurement:

- a stored bucket's time and measurement columns arrive as raw BSON (``bytes``); a column of n dense
  doubles (or dates) keyed ``"0".."n-1"`` is parsed straight into a numpy array (``parse_column``);
- the per-measurement filter (time bounds, numeric bounds; meta parts are decided exactly per bucket
  by the bucket predicate) becomes one boolean mask;
- the rows of a bucket are split by truncated time; each group's ``_id`` is computed by the *generic*
  compiled ``_id`` expression on one representative row (all rows of a split share it), and each
  accumulator gets the group's values in row order through the generic ``process_many``.

Exactness: groups are created in first-seen order, every accumulator sees the same values in the same
order as the generic ``$group`` (a ``$max``/``$min`` of NaN-free doubles is fed the one winning value,
which is what ``process_many`` does with a float batch), so results and types are identical. A bucket
the fast path cannot take (live buckets, sparse or mixed-type columns, NaN under a numeric filter) is
unpacked into measurements and fed through the generic grouping, in order.
"""

from __future__ import annotations

import datetime as _dt
import heapq
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
from bson import encode as bson_encode

from protocol.codec import decode
from protocol.errors import MongoError
from server.query.expressions import compile_expression
from server.query.match_ast import And, Cmp, Node
from server.query.pipeline import PipelineContext
from server.query.stage_group import (
    _GROUP_OVERHEAD,
    _approx_size,
    _Groups,
    _memory_error,
    group_key,
    parse_accumulated_fields,
)
from server.timeseries.buckets import date_ms, unpack_document
from server.timeseries.rawcolumns import DATE, DOUBLE, PackedColumn, column_length, parse_column

UNIT_MS = {"millisecond": 1, "second": 1000, "minute": 60_000, "hour": 3_600_000, "day": 86_400_000}
_ACCUMULATORS = {"$max", "$min", "$avg", "$sum", "$first", "$last", "$count"}
_EPOCH = _dt.datetime(1970, 1, 1)
_OPS = {"$gt": np.greater, "$gte": np.greater_equal, "$lt": np.less, "$lte": np.less_equal, "$eq": np.equal}
_MAX_EXACT_INT = 2**53


# ------------------------------------------------------------------ plan


class ColumnarGroup:
    """A parsed ``$group`` the columnar path can run, plus the vectorized filter."""

    def __init__(self, group_spec: dict, unit_ms: int | None, fields: list, conditions: list,
                 time_field: str, meta_field: str | None):
        self.group_spec = group_spec
        self.unit_ms = unit_ms
        self.fields = fields  # [(name, AccumulatorSpec)]
        self.conditions = conditions  # [(path, np ufunc, operand)]: path == time_field -> ms operand
        self.time_field, self.meta_field = time_field, meta_field
        self.id_fn = compile_expression(group_spec["_id"])
        self.topk: TopK | None = None  # set when only the k newest groups can reach the output
        self.columns = sorted({spec.field for _, spec in fields if spec.field is not None}
                              | {p for p, _, _ in conditions} - {time_field})


def _id_unit(value: Any, tf: str, mf: str | None, units: set) -> bool:
    """True when the ``_id`` expression reads only ``$dateTrunc`` of the time field and meta paths."""
    if isinstance(value, str):
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
        return all(_id_unit(v, tf, mf, units) for v in value.values())
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


def _conditions(node: Node | None, tf: str, mf: str | None) -> list | None:
    """The filter as [(path, ufunc, operand)] row conditions (meta-only parts dropped: the bucket
    predicate decides them exactly), or None when some part has no vectorized form."""
    if node is None:
        return []
    out = []
    for part in _conjuncts(node):
        if _all_paths_on_meta(part, mf):
            continue
        if not isinstance(part, Cmp) or part.op not in _OPS:
            return None
        if part.path == tf:
            ms = date_ms(part.value) if isinstance(part.value, _dt.datetime) else None
            if ms is None:
                return None
            out.append((tf, _OPS[part.op], ms))
        elif "." not in part.path and type(part.value) in (int, float) and part.path != mf:
            if type(part.value) is int and abs(part.value) >= _MAX_EXACT_INT:
                return None
            out.append((part.path, _OPS[part.op], float(part.value)))
        else:
            return None
    return out


def plan(node: Node | None, remaining: list[dict], time_field: str, meta_field: str | None) -> ColumnarGroup | None:
    """A ColumnarGroup when ``remaining`` starts with a ``$group`` of the supported shape and the
    leading filter ``node`` vectorizes; else None (the generic path runs)."""
    if not remaining or not isinstance(remaining[0], dict) or len(remaining[0]) != 1:
        return None
    spec = remaining[0].get("$group")
    if not isinstance(spec, dict) or "_id" not in spec:
        return None
    units: set = set()
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
    conditions = _conditions(node, time_field, meta_field)
    if conditions is None:
        return None
    unit_ms = UNIT_MS[units.pop()] if units else None
    return ColumnarGroup(spec, unit_ms, fields, conditions, time_field, meta_field)


# ------------------------------------------------------------------ newest groups only


class TopK:
    """The k largest truncated times of the groups created so far, for ``$group`` by ``$dateTrunc``
    -> ``$sort {_id: -1}`` -> ``$limit k``: a bucket starting at s holds times < s + span, which all
    truncate below ``kth`` once s + span <= kth, so neither it nor any older bucket can change the
    k newest groups (``done_before``)."""

    def __init__(self, k: int, span_ms: int):
        self.k, self.span_ms = k, span_ms
        self._heap: list[int] = []

    def offer(self, trunc_ms: int) -> None:
        if len(self._heap) < self.k:
            heapq.heappush(self._heap, trunc_ms)
        elif trunc_ms > self._heap[0]:
            heapq.heapreplace(self._heap, trunc_ms)

    def done_before(self, bucket_start_s: int) -> bool:
        return len(self._heap) >= self.k and bucket_start_s * 1000 + self.span_ms <= self._heap[0]


def topk_shape(remaining: list[dict], group: ColumnarGroup) -> int | None:
    """k when ``remaining`` is ``$group`` on exactly ``$dateTrunc`` of the time, ``$sort {_id: -1}``,
    ``$limit k``; else None."""
    if len(remaining) < 3 or group.unit_ms is None or not isinstance(group.group_spec["_id"], dict):
        return None
    if "$dateTrunc" not in group.group_spec["_id"]:
        return None
    sort, limit = remaining[1], remaining[2]
    if sort != {"$sort": {"_id": -1}} or not isinstance(limit, dict) or set(limit) != {"$limit"}:
        return None
    k = limit["$limit"]
    return k if type(k) is int and 0 < k <= 1000 else None


# ------------------------------------------------------------------ execution


def _ms_to_datetime(ms: int) -> _dt.datetime:
    return _EPOCH + _dt.timedelta(milliseconds=int(ms))


def _column_array(column: Any, type_byte: int, n: int | None) -> np.ndarray | None:
    """The values of a dense column of ``type_byte`` values (of length ``n`` when given), else None."""
    if isinstance(column, PackedColumn):
        values = column.dense(type_byte)
    elif isinstance(column, bytes):
        length = column_length(column) if n is None else n
        values = parse_column(column, length, type_byte) if length else None
    else:
        return None
    if values is None or not len(values) or (n is not None and len(values) != n):
        return None
    return values


def _fast_arrays(bucket: dict, group: ColumnarGroup) -> tuple[np.ndarray, dict] | None:
    """(time ms, {field: float64 array}) of a stored bucket whose needed columns are all dense
    doubles without NaN, else None."""
    data = bucket.get("data")
    if not isinstance(data, dict):
        return None
    times = _column_array(data.get(group.time_field), DATE, None)
    if times is None:
        return None
    n = len(times)
    arrays = {}
    for name in group.columns:
        values = _column_array(data.get(name), DOUBLE, n)
        if values is None or np.isnan(values).any():
            return None
        arrays[name] = values
    return times, arrays


def decoded(bucket: dict) -> dict:
    """``bucket`` with its undecoded (``bytes`` / ``PackedColumn``) data columns decoded."""
    data = bucket.get("data")
    if isinstance(data, dict) and any(isinstance(v, (bytes, PackedColumn)) for v in data.values()):
        bucket = dict(bucket)
        bucket["data"] = {k: decode(v) if isinstance(v, bytes) else decode(v.bson()) if isinstance(v, PackedColumn)
                          else v for k, v in data.items()}
    return bucket


def run(group: ColumnarGroup, buckets: Iterable[dict], event_filter: Any, fields: set[str] | None,
        info: dict, ctx: PipelineContext | None = None) -> Iterator[dict]:
    """The ``$group`` output over ``buckets`` (first-seen group order, like the generic stage).

    ``event_filter``: the compiled per-measurement filter for buckets that take the generic path (None
    when the bucket predicate is exact)."""
    ctx = ctx if ctx is not None else PipelineContext(allow_disk_use=True)
    groups = _Groups(group.id_fn, group.fields, ctx)
    tf, mf = group.time_field, group.meta_field
    variables = ctx.variables
    table = groups.groups
    check, limit = not ctx.allow_disk_use, ctx.memory_limit
    # (encoded meta, truncated ms) -> the group's accumulators: the _id depends on nothing else
    cache: dict = {}
    for bucket in buckets:
        info["bucketsUnpacked"] += 1
        fast = _fast_arrays(bucket, group)
        if fast is None:
            docs = []
            for m in unpack_document(decoded(bucket), tf, mf, fields):
                info["measurementsUnpacked"] += 1
                if event_filter is None or event_filter(m):
                    docs.append(m)
            info["measurementsReturned"] += len(docs)
            groups.add_all(docs)
            continue
        times, arrays = fast
        info["bucketsColumnar"] = info.get("bucketsColumnar", 0) + 1
        info["measurementsUnpacked"] += len(times)
        mask = None
        for path, op, operand in group.conditions:
            hit = op(times if path == tf else arrays[path], operand)
            mask = hit if mask is None else mask & hit
        if mask is not None:
            rows = np.nonzero(mask)[0]
            if not len(rows):
                continue
            times = times[rows]
            arrays = {k: v[rows] for k, v in arrays.items()}
        info["measurementsReturned"] += len(times)
        has_meta = mf is not None and "meta" in bucket
        meta = bucket.get("meta")
        meta_token = bson_encode({"m": meta}) if has_meta else None
        order, starts, ends, firsts, trunc = _segments(times, group.unit_ms)
        feeds = [_feeds(spec, order, starts, ends, times, arrays, tf, variables) for _, spec in group.fields]
        for g, first in enumerate(firsts):
            token = (meta_token, int(trunc[first]) if trunc is not None else None)
            accs = cache.get(token)
            if accs is None:
                rep = {tf: _ms_to_datetime(times[first])}
                if has_meta:
                    rep[mf] = meta
                idv = group.id_fn(rep, variables)
                key = _group_key(idv)
                entry = table.get(key)
                if entry is None:
                    entry = table[key] = (idv, [spec.new() for _, spec in group.fields])
                    if group.topk is not None and trunc is not None:
                        group.topk.offer(token[1])
                    if check:  # the generic stage's accounting (only per-group state: no growing accumulators)
                        groups.used += _GROUP_OVERHEAD + _approx_size(idv)
                        if groups.used > limit:
                            raise _memory_error(limit)
                accs = cache[token] = entry[1]
            for acc, feed in zip(accs, feeds, strict=True):
                acc.process_many(feed[g])
    yield from groups.results()


def _group_key(idv: Any) -> Any:
    t = type(idv)
    return idv if (t is str or t is _dt.datetime or t is int) else group_key(idv)


def _segments(times: np.ndarray, unit_ms: int | None):
    """(order, starts, ends, firsts, trunc): the rows of the g-th group (first-seen order of the
    truncated time) are ``order[starts[g]:ends[g]]`` in row order (``order`` None: identity), its
    first row is ``firsts[g]``; ``trunc`` the truncated times (None without a time unit)."""
    n = len(times)
    if unit_ms is None:
        return None, [0], [n], [0], None
    trunc = times - times % unit_ms
    if (trunc == trunc[0]).all():
        return None, [0], [n], [0], trunc
    uniq, first, inverse = np.unique(trunc, return_index=True, return_inverse=True)
    rank = np.argsort(first, kind="stable")
    position = np.empty(len(uniq), dtype=np.int64)
    position[rank] = np.arange(len(uniq))
    label = position[inverse]
    order = np.argsort(label, kind="stable")
    counts = np.bincount(label, minlength=len(uniq))
    ends = np.cumsum(counts)
    starts = ends - counts
    return order, starts.tolist(), ends.tolist(), first[rank].tolist(), trunc


def _feeds(spec: Any, order: Any, starts: list, ends: list, times: np.ndarray, arrays: dict, tf: str,
           variables: dict) -> list[list]:
    """Per group, the list to hand to the accumulator's ``process_many`` (same result as all values)."""
    name, field = spec.name, spec.field
    if field is None:
        value = 1 if name == "$count" else spec.evaluate({}, variables)
        return [[value] * (e - s) for s, e in zip(starts, ends, strict=True)]
    column = times if field == tf else arrays[field]
    ordered = column if order is None else column[order]
    if name == "$max":
        picked = np.maximum.reduceat(ordered, starts)
    elif name == "$min":
        picked = np.minimum.reduceat(ordered, starts)
    elif name == "$first":
        picked = ordered[starts]
    elif name == "$last":
        picked = ordered[np.asarray(ends) - 1]
    else:
        values = ordered.tolist()
        return [values[s:e] for s, e in zip(starts, ends, strict=True)]
    if field == tf:
        return [[_ms_to_datetime(v)] for v in picked.tolist()]
    return [[v] for v in picked.tolist()]
