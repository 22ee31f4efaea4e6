"""Reads on a time-series view: bucket scan -> bucket filter (filters.py) -> unpack -> the exact
per-measurement filter of the leading ``$match`` stages; the caller runs the rest of the pipeline.

``read_source`` plans the read once: the one bucket-filter derivation gives the bucket predicate, the
``_id`` range and the index filter; the pipeline's dependencies give the columns to unpack; then the
buckets come from the buckets index (hinted, or one the filter bounds), newest first (``$group`` by
``$dateTrunc`` -> ``$sort {_id: -1}`` -> ``$limit``), lastpoint, in time order for a time sort
(``time_sort``: each document given back once no later bucket can precede it; with a limit, read until
no bucket can hold one to output), or the ``_id`` range scan. Every
source yields bucket views (bucketview.py): the generic unpack, the columnar ``$group`` and lastpoint
read them through the same interface. Sources yield buckets in chunks (lists: a stored chunk is one
read transaction's records, its cache entries and bucket predicate decided at once); the running
operation's interruption check (maxTimeMS, killOp: ``tidemark.query.interrupt``) runs once per chunk
(at most ``stored.CHUNK`` buckets), and the consumers tick per bucket they decode.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Iterator
from typing import Any

from bson.errors import InvalidDocument

from tidemark.protocol.codec import EncodedRun, decode_all, encode
from tidemark.query import plan as planner
from tidemark.query.access_path import Plan
from tidemark.query.collation import parse_collation
from tidemark.query.collation import same as same_collation
from tidemark.query.index_bounds import FieldBounds, extract_bounds
from tidemark.query.index_keys import key_fields
from tidemark.query.index_kinds import is_special
from tidemark.query.interrupt import check_through
from tidemark.query.match import And, compile_node
from tidemark.query.match_ast import AlwaysTrue
from tidemark.query.parsed_match import parsed
from tidemark.query.wildcard import is_wildcard
from tidemark.timeseries import (
    columnar,
    groupbatch,
    lastpoint,
    newest_order,
    rowcount,
    rowfilter,
    scan,
    time_sort,
)
from tidemark.timeseries.bucketdoc import time_bound_paths
from tidemark.timeseries.deps import filter_fields, leading_matches, pipeline_fields
from tidemark.timeseries.filters import (
    BucketFilter,
    FilterShape,
    derive,
    fields_fixed,
    shape_of,
    with_expr_implications,
)
from tidemark.timeseries.indexes import translate_hint
from tidemark.timeseries.unpack import parse_internal_unpack


def read_source(server: Any, db: str, view_doc: dict[str, Any], user_pipeline: list[dict[str, Any]], *, hint: Any = None,
                collation: Any = None, buckets_info: Any = None, raw: bool = False,
                sort_memory: tuple[int, bool] | None = None
                ) -> tuple[Iterator[Any], list[dict[str, Any]], dict[str, Any]]:
    """(measurements iterator, remaining pipeline, explain info) for a read on a time-series view
    (``server``: the ServerState).

    ``collation``: the read's effective collation (``collation.Collation``, None = simple). Under a
    non-simple one the source absorbs only the leading ``$match`` stages (the bucket filter loose for
    strings, the event filter collated); grouping, lastpoint and newest-first shapes compare strings
    binary-wise, so the caller runs every later stage under the collation.

    ``hint``: the view-level hint (index name or *user* key pattern, or ``{$natural: ±1}``), translated
    to the buckets index it names; an unknown or hidden index -> 2 BadValue (indexes.translate_hint).
    The chosen buckets index is in ``explain_info["indexName"]``/``["indexKey"]``/``["isMultiKey"]``
    before any read.
    ``buckets_info``: the buckets collection's catalog entry when the caller resolved it already.
    ``raw``: the caller returns the documents as they are when no stage remains (a cursor): they then
    come as ``EncodedRun``s (many documents each) made from the buckets' columns (``rowbson``), not as dicts.
    ``sort_memory``: (the blocking sort's memory limit in bytes, allowDiskUse) for a sort the source
    absorbs (``time_sort``); None: the default limit, no disk use."""
    spec = parse_internal_unpack(view_doc["pipeline"][0]["$_internalUnpackBucket"])
    ns = f"{db}.{view_doc['viewOn']}"
    nodes, remaining = leading_matches(list(user_pipeline))
    n_nodes = len(nodes)
    node = None if not nodes else nodes[0] if n_nodes == 1 else And(tuple(nodes))
    if type(node) is AlwaysTrue:  # (no subclass: no isinstance call)
        node = None  # ($match: {}, countDocuments' own: every measurement passes, nothing to evaluate)
    # what the filter's shape fixes (its bucket filter's binder, column filter and group conditions'
    # templates), bound to this read's values by each planner below
    carried = shape = None
    if node is not None:
        carried = parsed(user_pipeline[0])
        shape = shape_of(node, spec.time_field, spec.meta_field)
        if shape.exprs:  # (the shape tells: most filters have no $expr to imply anything)
            node = with_expr_implications(node, spec.time_field, spec.meta_field,
                                          carried.variables if carried is not None else None)
            shape = shape_of(node, spec.time_field, spec.meta_field)
    span = spec.bucket_max_span_seconds or 3600
    # the view carries the collection's default collation: the order of its buckets' control strings
    default = view_doc.get("collation")
    bfilter = derive(node, spec.time_field, spec.meta_field, span, collation=collation,
                     control_collation=parse_collation(default) if default else None, shape=shape)
    # a meta-only filter is decided exactly per bucket: no per-measurement evaluation needed. The
    # per-measurement predicate of the absorbed ``$match`` stages (compiled when first needed): a stage
    # the command parsed (``carried``) carries the command's variables (``let``), which a ``$expr`` in it
    # reads, and may carry its compile (reused under the same collation); other stages are compiled as
    # they are
    event_filter = None
    if node is not None and not bfilter.exact:
        if carried is not None and n_nodes == 1 and carried.node is nodes[0]:
            event_filter = EventFilter(nodes[0], carried.variables, collation,
                                       carried.predicate if carried.predicate is not None
                                       and same_collation(carried.collation, collation) else None)
        else:
            event_filter = EventFilter(nodes[0] if n_nodes == 1 else And(tuple(nodes)), None, collation)
    # the part of the event filter decided on whole columns: only the rows it keeps become documents
    column_filter = rowfilter.plan(node, spec.time_field, spec.meta_field, shape) if event_filter is not None else None
    tail = _rest_of(remaining, spec.time_field, spec.meta_field)
    rest_fields = tail.fields
    known = None if shape is None else shape.fields
    if rest_fields is None:
        fields = None
    elif known is not None and known[0]:  # the filter's fields, remembered on its shape (``_fields_read``)
        fields = None if known[1] is None else {*known[1], *rest_fields}
    else:
        fields = _fields_read(shape, nodes, rest_fields)
    info: dict[str, Any] = {"stage": "$_internalUnpackBucket", **spec.explained,
                            "bucketFilter": bfilter.mql,
                            "shownBucketFilter": bfilter.shown_of,  # 7.0's form, for explain's plan (rendered)
                            "eventFilter": ([user_pipeline[0]["$match"]] if n_nodes == 1  # (no comprehension: the usual one)
                                            else [s["$match"] for s in user_pipeline[:n_nodes]]),
                            "wholeBucketFilter": bfilter.exact,
                            "idRange": {"min": bfilter.lo_s, "max": bfilter.hi_s},
                            "fields": (lambda: sorted(fields)) if fields is not None else "all",  # (rendered)
                            "bucketsScanned": 0, "bucketsUnpacked": 0, "measurementsUnpacked": 0,
                            "measurementsReturned": 0}
    if column_filter is not None:
        info["columnFilter"] = column_filter.explain  # (rendered)
        info["columnFilterComplete"] = column_filter.complete
        info["measurementsSkipped"] = 0
    predicate = bfilter.predicate
    plain = collation is None  # the special shapes below compare strings binary-wise
    # a read that only counts measurements: each bucket's accepted rows, no document (rowcount)
    counting = tail.counting
    grouping = None
    if fields is not None and plain and counting is None:
        grouping = tail._grouping  # (remembered: no call)
        if grouping is _UNSET:
            grouping = tail.grouping(remaining)
    grouped = (columnar.plan(node, remaining, spec.time_field, spec.meta_field, shape, grouping,
                             None if column_filter is None else column_filter.dates)
               if grouping is not None else None)
    if grouped is not None:
        info["columnarGroup"] = True
    plan = _index_plan(server, ns, bfilter, hint, spec, buckets_info)
    topk = grouping.topk if grouped is not None and grouping is not None and plan is None else None
    in_order = None
    if grouped is not None and topk is not None:
        info["newestFirst"] = topk
        # the planned group answers again in the generic order where the newest-first one could differ
        in_order = (grouped, lambda: map(check_through, _buckets_in_order(server, ns, spec, bfilter, info, predicate)))
        grouped = newest_order.order_checked(grouped)
        grouped.topk = columnar.TopK(topk, span * 1000)
        buckets = scan.newest_first(server, ns, spec.time_field, bfilter.hi_s, info, predicate,
                                    grouped.topk.done_before)
    elif plain and node is None and plan is None and tail.lastpoint(remaining):
        info["lastpoint"] = True
        buckets = lastpoint.latest_buckets(server, ns, spec.time_field, info)
    elif grouped is None and (timed := _time_sorted(server, ns, spec, bfilter, tail.time_sort(remaining) if plain
                                                    else None, plan, sort_memory)) is not None:
        # (a columnar group's pipeline starts with the $group: no time sort, not looked for)
        info["timeSort"] = {"sortKey": {spec.time_field: -1 if timed.shape.descending else 1},
                            "skip": timed.shape.skip, "limit": timed.shape.limit}
        info["timeSortStats"] = timed.stats  # (as read: explain's executionStats; rendered)
        if timed.series is not None:  # several series: their index scans in time order, merged
            info["indexName"], info["indexKey"] = plan.index["name"], plan.index["key"]
            info["ixscan"] = plan.ixscan_explain  # (the bounds of all of them; rendered)
            buckets = _series_merged(server, ns, timed, info, predicate, bfilter.lo_s, bfilter.hi_s)
        elif plan is not None:  # the index scan in time order: one series' buckets, newest (or oldest) first
            plan = timed.plan
            info["indexName"], info["indexKey"] = plan.index["name"], plan.index["key"]
            info["ixscan"] = plan.ixscan_explain  # (rendered)
            buckets = scan.index_buckets(server, ns, plan, info, predicate, bfilter.lo_s, bfilter.hi_s)
        elif timed.shape.descending:
            hi_s = bfilter.hi_s if bfilter.hi_s is not None else scan.WRAP // 2 - 1  # (no extended range)
            buckets = scan.newest_first(server, ns, spec.time_field, hi_s, info, predicate, timed.done_before)
        else:
            buckets = _buckets_in_order(server, ns, spec, bfilter, info, predicate)
        rest = remaining[timed.shape.consumed:]
        return (_time_sorted_top(map(check_through, buckets), timed, spec, event_filter, fields, info, column_filter,
                                 raw and not rest),
                rest, info)
    elif plan is not None:
        info["indexName"], info["indexKey"] = plan.index["name"], plan.index["key"]
        info["ixscan"] = plan.ixscan_explain  # (rendered)
        buckets = scan.index_buckets(server, ns, plan, info, predicate, bfilter.lo_s, bfilter.hi_s)
    else:  # the collection scan: backward for a {$natural: -1} hint (buckets last to first, as mongod)
        backward = isinstance(hint, dict) and isinstance(hint.get("$natural"), int | float) and hint["$natural"] < 0
        buckets = _buckets_in_order(server, ns, spec, bfilter, info, predicate, reverse=backward)
    # a check per chunk of buckets (empty chunks too: a scan whose buckets the predicate rejects still
    # notices), as each is taken (no generator frame per chunk)
    buckets = map(check_through, buckets)
    if counting is not None:
        info["counted"] = True
        info["countSteps"] = counting.steps  # (explain_shape shows them where they stood)
        return (CountedMeasurements(counting, buckets, spec, event_filter, fields, info, column_filter),
                remaining[counting.consumed:], info)
    if grouped is not None:
        return (GroupableMeasurements(grouped, buckets, spec, event_filter, fields, info, column_filter, in_order,
                                      raw),
                remaining, info)
    return _measurements(buckets, spec, event_filter, fields, info, column_filter, raw and not remaining), remaining, info


class _Rest:
    """What the pipeline after the absorbed ``$match`` stages (``remaining``) fixes for a read on a
    collection's time and meta fields, whatever its filter: the fields it reads
    (``deps.pipeline_fields``), its counting plan (``rowcount.plan``), its columnar ``$group``
    (``columnar.grouping``), its time sort (``time_sort.shape_of``) and whether it is a lastpoint
    (``lastpoint.is_lastpoint``). Made once per such pipeline (``_rest_of``) and shared by the reads
    (any thread); the last three are worked out from the pipeline of the first read that asks (as a
    read without a remembered one would: only reads that reach them; each read passes its own
    ``remaining``, of the same BSON), then never changed (two threads may both make one: the same
    value). It holds no read's pipeline."""

    __slots__ = ("fields", "counting", "_time_field", "_meta_field", "_grouping", "_time_sort", "_lastpoint")

    def __init__(self, remaining: list[dict[str, Any]], time_field: str, meta_field: str | None):
        found = pipeline_fields(remaining)
        self.fields = None if found is None else frozenset(found)
        self.counting = rowcount.plan(remaining)
        self._time_field, self._meta_field = time_field, meta_field
        self._grouping: Any = _UNSET
        self._time_sort: Any = _UNSET
        self._lastpoint: Any = _UNSET

    def grouping(self, remaining: list[dict[str, Any]]) -> columnar.Grouping | None:
        if self._grouping is _UNSET:
            self._grouping = columnar.grouping(remaining, self._time_field, self._meta_field)
        found: columnar.Grouping | None = self._grouping
        return found

    def time_sort(self, remaining: list[dict[str, Any]]) -> time_sort.TimeSortShape | None:
        if self._time_sort is _UNSET:
            self._time_sort = time_sort.shape_of(remaining, self._time_field)
        found: time_sort.TimeSortShape | None = self._time_sort
        return found

    def lastpoint(self, remaining: list[dict[str, Any]]) -> bool:
        if self._lastpoint is _UNSET:
            self._lastpoint = lastpoint.is_lastpoint(remaining, self._time_field, self._meta_field)
        return bool(self._lastpoint)


_UNSET = object()


# ``_Rest``s by the BSON of the rest of the pipeline with the time and meta fields (types and field order
# exact: every value the parts read is in it); a pipeline whose BSON is over ``_REST_KEY_MAX`` bytes (or
# has none) is planned for each read. Cleared when full.
_RESTS: dict[bytes, _Rest] = {}
_RESTS_MAX = 256
_REST_KEY_MAX = 4096


def _rest_of(remaining: list[dict[str, Any]], time_field: str, meta_field: str | None) -> _Rest:
    """The ``_Rest`` of ``remaining`` on these fields (made when first seen)."""
    try:
        key = encode({"r": remaining, "t": time_field, "m": meta_field})
    except (InvalidDocument, OverflowError):
        return _Rest(remaining, time_field, meta_field)
    found = _RESTS.get(key)
    if found is None:
        found = _Rest(remaining, time_field, meta_field)
        if len(key) <= _REST_KEY_MAX:
            if len(_RESTS) >= _RESTS_MAX:
                _RESTS.clear()
            _RESTS[key] = found
    return found


def _fields_read(shape: FilterShape | None, nodes: list[Any], rest: frozenset[str]) -> set[str] | None:
    """The top-level fields a read needs (``deps.needed_fields``) given those the rest of its pipeline
    reads (``rest``), from the filter ``nodes``: remembered on its shape (``shape``, None: no filter)
    the first time when the shape fixes them (``filters.fields_fixed``), where ``read_source`` reads
    them from then on."""
    if shape is not None and shape.fields is None:
        fixed = fields_fixed(nodes[0] if len(nodes) == 1 else And(tuple(nodes)))
        read = filter_fields(nodes)
        shape.fields = (fixed, None if read is None else frozenset(read)) if fixed else (False, None)
        return None if read is None else {*read, *rest}
    read = filter_fields(nodes)  # (no filter, {$match: {}}, or fields its shape does not fix)
    return None if read is None else {*read, *rest}


def _time_sorted(server: Any, ns: str, spec: Any, bfilter: BucketFilter, shape: time_sort.TimeSortShape | None,
                 plan: Any, sort_memory: tuple[int, bool] | None = None) -> time_sort.BoundedSort | None:
    """The bounded sort of a read that sorts on time (``time_sort``; ``shape``: ``time_sort.shape_of`` of
    the rest of its pipeline, None under a collation), or None: another
    pipeline, a collation (the rest of the pipeline runs under it), dates outside 1970..2038, or a read
    through a buckets index that cannot give its buckets in time order. With an index: ``plan`` again,
    asked for the buckets' time order (the leading fields pinned to one value, then
    ``control.min.<time>`` or ``control.max.<time>``), as ``.plan`` (and that side as ``.order_by``);
    for a ``$in`` of a few series (index order is series by series), one such plan per series as
    ``.series`` (``_series_plans``), merged by ``_series_merged``."""
    if shape is None:
        return None
    ordered, order_by, series = None, "min", None
    if plan is not None:
        ixfilter = bfilter.index_filter()
        if ixfilter is None or bfilter.collation is not None:
            return None
        bounds = extract_bounds(ixfilter)
        scalar = time_bound_paths(spec.time_field)
        for order_by in ("min", "max"):  # an index on {meta, time: 1} orders by start, on time: -1 by end
            sort = {f"control.{order_by}.{spec.time_field}": -1 if shape.descending else 1}
            ordered = planner.plan_for(plan.index, bounds, sort, True, None, scalar)
            if ordered.provides_sort:
                break
            series = _series_plans(plan.index, bounds, sort, scalar)
            if series is not None:
                ordered = None
                break
        else:
            return None
    if scan.uses_extended_range(server, ns, spec.time_field):
        return None
    limit, disk = sort_memory if sort_memory is not None else (time_sort.DEFAULT_MEMORY_LIMIT, False)
    return time_sort.BoundedSort(shape, spec.time_field, spec.bucket_max_span_seconds or 3600, ordered, order_by,
                                 memory_limit=limit, allow_disk_use=disk, series=series)


# A time sort through a buckets index merges the series' scans (mongod's SORT_MERGE of one index scan per
# point) for up to this many series; more read every bucket of them and sort (each scan reads its series'
# index entries at once, and the merge holds a chunk of buckets of each).
MERGE_MAX_SERIES = 64


def _series_plans(index: dict[str, Any], bounds: dict[str, Any], sort: dict[str, int],
                  scalar: frozenset[str]) -> list[Any] | None:
    """One index plan per series giving ``sort`` (the index fields before the sorted one each pinned to
    one of its points), in the order the read's own index scan meets them — or None: a field before
    the sorted one not bounded by points, one series (``plan_for`` gives the sort itself) or more than
    ``MERGE_MAX_SERIES``. Points the index encodes alike (1 and 1.0) are one series."""
    fields, _ = key_fields(index["key"])
    sorted_field = next(iter(sort))
    if sorted_field not in fields:
        return None
    leading = fields[:fields.index(sorted_field)]
    points: list[list[Any]] = []
    for field in leading:
        found = bounds[field].points if field in bounds else None
        if found is None:
            return None
        points.append(found)
    if not 1 < math.prod(len(p) for p in points) <= MERGE_MAX_SERIES:
        return None
    plans: dict[Any, Any] = {}
    for values in itertools.product(*points):
        one = dict(bounds)
        one.update((f, FieldBounds(points=[v])) for f, v in zip(leading, values, strict=True))
        plan = planner.plan_for(index, one, sort, True, None, scalar)
        if not plan.provides_sort:
            return None
        plans.setdefault(tuple((i.lo, i.hi, i.lo_incl, i.hi_incl) for i in plan.intervals), plan)
    if len(plans) < 2:
        return None
    return sorted(plans.values(), key=lambda p: p.intervals[0].lo or b"")  # the order build_intervals scans


def _series_merged(server: Any, ns: str, timed: time_sort.BoundedSort, info: dict[str, Any], predicate: Any,
                   lo_s: int | None, hi_s: int | None) -> Iterator[list[Any]]:
    """The buckets of the series' index scans (``timed.series``, each in ``control.<order_by>`` time
    order) merged into that order, as (rank, bucket) pairs in chunks: the rank is the bucket's place in
    the read's own index scan (series after series in index order, then each series' index order —
    a reverse scan reads it backwards), which ranks ties as the generic sort ranks them. A bucket that
    several series hold (an array meta: a multikey index) comes once, from the first of them, as the
    read's own scan meets it first there."""
    series = timed.series
    assert series is not None
    side, sign = timed.order_by, -1 if timed.shape.descending else 1

    def ranked(i: int, plan: Any) -> Iterator[tuple[float, int, int, Any]]:
        j = 0
        for chunk in scan.index_buckets(server, ns, plan, info, predicate, lo_s, hi_s):
            for bucket in chunk:
                j += 1
                ms = timed.control_ms(bucket.summary(), side)
                yield (sign * ms if ms is not None else -math.inf, i, -j if plan.reverse else j, bucket)

    seen: set[Any] = set()
    chunk: list[tuple[int, Any]] = []
    for _, i, j, bucket in heapq.merge(*(ranked(i, plan) for i, plan in enumerate(series))):
        if bucket.id in seen:
            continue
        seen.add(bucket.id)
        chunk.append((i * _SERIES_RANK + j, bucket))
        if len(chunk) == _MERGED_CHUNK:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


_SERIES_RANK = 1 << 40  # more buckets than any series holds
_MERGED_CHUNK = 16  # buckets handed on at a time (the bounded sort stops between any two)


def _time_sorted_top(buckets: Iterator[list[Any]], timed: time_sort.BoundedSort, spec: Any,
                     event_filter: EventFilter | None, fields: set[str] | None, info: dict[str, Any],
                     column_filter: rowfilter.ColumnFilter | None, raw: bool = False) -> Iterator[Any]:
    """The documents of the bounded sort, in order: buckets unpacked as ``_bucket_rows`` unpacks them
    (as BSON: what the sort holds), in time order, each document given back once no later bucket can
    hold one before it, until none can hold one to output (``time_sort`` for the rules); ``raw``: as
    ``EncodedRun``s for a cursor, else as measurements (dicts)."""
    time_field, meta_field = spec.time_field, spec.meta_field
    check = None
    ranked = timed.series is not None  # (rank, bucket) pairs (``_series_merged``)
    rank = None
    try:
        for chunk in buckets:
            for bucket in chunk:
                if ranked:
                    rank, bucket = bucket
                summary = bucket.summary()
                done, edge = timed.arrival(summary)
                if done:  # buckets come in time order: no later one can place either
                    break
                if edge is not None:  # what no later bucket can precede is final
                    yield from _given(timed.release(edge), raw)
                    if timed.finished:
                        return
                if timed.skips(summary):
                    continue
                if check is None and event_filter is not None:
                    check = event_filter.get()
                within = timed.rows_worth(bucket)
                if within is not None and not len(within):
                    continue
                info["bucketsUnpacked"] += 1
                timed.offer_bucket(summary, rowfilter.accepted(bucket, fields, check, column_filter, info, time_field,
                                                               meta_field, True, within=within), rank)
            else:
                continue
            break
        yield from _given(timed.release(None), raw)
    finally:
        timed.close()


def _given(stretches: Iterator[list[bytes]], raw: bool) -> Iterator[Any]:
    """A release's stretches as ``EncodedRun``s for a cursor (``raw``), else as measurements (dicts)."""
    for stretch in stretches:
        if raw:
            yield EncodedRun(stretch)
        else:
            yield from decode_all(b"".join(stretch))


def explain_info(info: dict[str, Any]) -> dict[str, Any]:
    """A copy of a read's info with every detail rendered (keys in the same order). A detail only an
    explain shows is held as the callable that renders it (no other value of the info is callable: they
    are documents, lists, strings, numbers and booleans): most reads are no explain, and rendering bounds
    and terms is a good part of a short read's plan — nor is a wrapper object made per detail per read."""
    return {k: v() if callable(v) else v for k, v in info.items()}


def _buckets_in_order(server: Any, ns: str, spec: Any, bfilter: BucketFilter, info: dict[str, Any],
                      predicate: Any, *, reverse: bool = False) -> Iterator[list[Any]]:
    """The buckets the window may hold, by ascending ``_id`` (the collection scan's order; descending
    with ``reverse``)."""
    lo_s = bfilter.lo_s
    if lo_s is None and bfilter.hi_s is not None and not scan.uses_extended_range(server, ns, spec.time_field):
        # no bucket starts before 1970 (where starts wrap around the _id key space): a window open
        # below is a closed _id range, not every bucket up to the newest
        lo_s = 0
    return scan.buckets(server, ns, lo_s, bfilter.hi_s, info, predicate, reverse=reverse)


class EventFilter:
    """The per-measurement predicate of the absorbed ``$match`` stages, compiled the first time a bucket
    needs it (``get``): a read whose column filter decides every bucket, or that meets no bucket, never
    compiles it (the parse already validated the filter, ``$expr`` included; compiling is pure)."""

    __slots__ = ("_node", "_variables", "_collation", "_predicate")

    def __init__(self, node: Any, variables: dict[str, Any] | None, collation: Any, predicate: Any = None):
        self._node, self._variables, self._collation = node, variables, collation
        self._predicate = predicate

    def get(self) -> Any:
        if self._predicate is None:
            self._predicate = compile_node(self._node, variables=self._variables, collation=self._collation)
        return self._predicate


_SPENT: Iterator[Any] = iter(())  # a read's measurements once its group answered them: none (shared)


class GroupableMeasurements:
    """The measurements of a read (an iterator, like every read source) that can also answer the
    ``$group`` stage right after it column-at-a-time: the ``$group`` stage calls
    ``group_result(spec, ctx)`` on its input; unless the group is the one planned and nothing has
    been read yet, it gets None and iterates the measurements as usual."""

    def __init__(self, plan: Any, buckets: Iterator[list[Any]], spec: Any, event_filter: Any,
                 fields: set[str] | None, info: dict[str, Any], column_filter: rowfilter.ColumnFilter | None = None,
                 in_order: tuple[Any, Any] | None = None, raw: bool = False):
        self._plan, self._buckets, self._spec, self._raw = plan, buckets, spec, raw
        self._in_order = in_order  # newest-first reads: (the planned group, the buckets in the generic order)
        self._event_filter, self._fields, self._info = event_filter, fields, info
        self._column_filter = column_filter
        self._it: Iterator[dict[str, Any]] | None = None

    def __iter__(self) -> GroupableMeasurements:
        return self

    def __next__(self) -> dict[str, Any]:
        if self._it is None:
            self._it = _measurements(self._buckets, self._spec, self._event_filter, self._fields, self._info,
                                     self._column_filter)
        return next(self._it)

    def group_result(self, group_spec: Any, ctx: Any) -> Iterator[dict[str, Any]] | None:
        planned = self._plan.group_spec
        if self._it is not None or (group_spec is not planned and group_spec != planned):  # (usually the one object)
            return None
        self._it = _SPENT
        return groupbatch.run(self._plan, self._buckets, self._event_filter, self._fields, self._info, ctx,
                              self._column_filter, self._in_order, self._raw)


class CountedMeasurements:
    """The measurements of a read that only counts them (``rowcount``), past the ``$skip``/``$limit``
    stages it absorbed: the counting group right after it (the ``$group`` stage, or ``$count`` as the
    ``$group`` it stands for) asks ``group_result(spec, ctx)`` and gets its answer from the buckets'
    row counts; unless nothing has been read yet and the group is the one planned it gets None, and
    the measurements come one by one as from any read."""

    def __init__(self, counting: rowcount.CountPlan, buckets: Iterator[list[Any]], spec: Any, event_filter: Any,
                 fields: set[str] | None, info: dict[str, Any], column_filter: rowfilter.ColumnFilter | None):
        self._counting, self._buckets, self._spec = counting, buckets, spec
        self._event_filter, self._fields, self._info = event_filter, fields, info
        self._column_filter = column_filter
        self._it: Iterator[dict[str, Any]] | None = None

    def __iter__(self) -> CountedMeasurements:
        return self

    def __next__(self) -> dict[str, Any]:
        if self._it is None:
            it = _measurements(self._buckets, self._spec, self._event_filter, self._fields, self._info,
                               self._column_filter)
            for name, n in self._counting.steps:
                it = itertools.islice(it, n, None) if name == "$skip" else itertools.islice(it, n)
            self._it = it
        return next(self._it)

    def group_result(self, group_spec: Any, ctx: Any) -> Iterator[dict[str, Any]] | None:
        planned = self._counting.group_spec
        if self._it is not None or (group_spec is not planned and group_spec != planned):  # (usually the one object)
            return None
        self._it = _SPENT
        return rowcount.run(self._counting, self._buckets, self._event_filter, self._fields, self._info,
                            self._column_filter, self._spec.time_field, self._spec.meta_field,
                            getattr(ctx, "variables", None))


_BUCKETS_SCAN = Plan("COLLSCAN")  # what an unindexed read of the buckets counts as


def _index_plan(server: Any, ns: str, bfilter: BucketFilter, hint: Any = None, spec: Any = None,
                info: Any = None) -> Any:
    """The buckets index plan of the read (None: no index), counted as an access of that index — or,
    with no index, as a scan of the buckets collection (``$collStats``' queryExecStats: mongod's plan
    is a collection scan of the clustered buckets, bounded or not)."""
    hinted = hint is not None and hint != {} and hint != ""
    ixfilter = bfilter.index_filter()
    if ixfilter is None and not hinted:
        if info is not None and info.ns == ns:
            server.index_usage.record_plan(info, _BUCKETS_SCAN)
        return None
    if info is None or info.ns != ns:
        with server.engine.read() as r:
            info = r.get_collection(ns)
    indexes = info.indexes if info is not None else ()
    plan = _choose_index(indexes, bfilter, ixfilter, hint, spec.time_field, spec.meta_field)
    if info is not None:
        server.index_usage.record_plan(info, plan if plan is not None and plan.index is not None else _BUCKETS_SCAN)
    return plan


def choose_index(indexes: list[dict[str, Any]], bfilter: BucketFilter, hint: Any, time_field: str,
                 meta_field: str | None) -> Any:
    """An IXSCAN plan over a buckets index whose leading field the bucket filter bounds (or the hinted
    one: index name or *user* key pattern; unknown or hidden -> 2 BadValue), else None (scan the
    clustered ``_id`` range)."""
    return _choose_index(tuple(indexes), bfilter, bfilter.index_filter(), hint, time_field, meta_field)


# The index a read's bounds choose (``planner.best_index``), by (the indexes' tuple — the catalog
# shares one per catalog version —, the time field, which paths the bounds bound and whether with
# points): made once per such shape, the intervals bound to each read's values (``planner.plan_for``).
# An entry also holds whether the indexes' choice reads only that (``_choice_of_shape``; else — a
# partial, special or collated index — it is made for each read, as ``planner.choose_plan`` makes it)
# and the time field's two-sided paths. An entry keeps its indexes, so an id is never taken for
# another tuple's. Cleared when full.
_CHOSEN: dict[tuple[Any, ...], tuple[tuple[dict[str, Any], ...], bool, Any, frozenset[str]]] = {}
_CHOSEN_MAX = 256


def _choose_index(indexes: tuple[dict[str, Any], ...], bfilter: BucketFilter, ixfilter: dict[str, Any] | None,
                  hint: Any, time_field: str, meta_field: str | None) -> Any:
    """``choose_index`` given the bucket filter's ``index_filter()`` (worked out once per read)."""
    if hint is not None and hint != {} and hint != "":
        name = translate_hint(hint, list(indexes), time_field, meta_field)
        if isinstance(name, dict):  # {$natural: ±1}: the clustered scan
            return None
        return planner.choose_plan(list(indexes), ixfilter or {}, None, name, collation=bfilter.collation,
                                   scalar_paths=time_bound_paths(time_field))
    if ixfilter is None or not indexes:
        return None
    if bfilter.collation is None and "$or" not in ixfilter:
        # (no ``mentions_special`` here: an index filter holds no $text and no $near — not index
        # operators of a bucket filter —, and its $geoWithin / $geoIntersects plan as any bound path
        # unless a special index exists, which makes the choice not one of shape)
        bounds = extract_bounds(ixfilter)
        key: tuple[Any, ...] = (id(indexes), time_field)
        for path, b in bounds.items():  # (a loop, not a comprehension: every indexed read plans)
            key += (path, b.points is not None)
        entry = _CHOSEN.get(key)
        if entry is None or entry[0] is not indexes:
            of_shape = _choice_of_shape(indexes)
            entry = (indexes, of_shape, planner.best_index(indexes, ixfilter, bounds, None) if of_shape else None,
                     time_bound_paths(time_field))
            if len(_CHOSEN) >= _CHOSEN_MAX:
                _CHOSEN.clear()
            _CHOSEN[key] = entry
        if entry[1]:
            chosen = entry[2]
            return None if chosen is None else planner.plan_for(chosen, bounds, None, True, None, entry[3])
    plan = planner.choose_plan(list(indexes), ixfilter, None, None, collation=bfilter.collation,
                               scalar_paths=time_bound_paths(time_field))
    return plan if plan.kind == "IXSCAN" and plan.index is not None else None


def _choice_of_shape(indexes: tuple[dict[str, Any], ...]) -> bool:
    """``planner.best_index`` over ``indexes`` reads only which paths a read bounds and whether with
    points (no partial, sparse, special, wildcard or collated index: see there), and no fallback plan can
    follow it (a wildcard index on the meta field is such a fallback: ``planner.choose_plan`` plans it)."""
    return not any("partialFilterExpression" in spec or spec.get("sparse") or "collation" in spec
                   or is_special(spec["key"]) or is_wildcard(spec["key"]) for spec in indexes)


def _measurements(buckets: Iterator[list[Any]], spec: Any, event_filter: EventFilter | None, fields: set[str] | None,
                  info: dict[str, Any], column_filter: rowfilter.ColumnFilter | None = None, raw: bool = False
                  ) -> Iterator[Any]:
    """The measurements of ``buckets`` the event filter (None: none) accepts (``rowfilter.accepted``: with a
    column filter only the rows it keeps are materialized; ``raw``: as BSON documents, in runs of several
    buckets' rows, ``rowfilter.joined``)."""
    rows = _bucket_rows(buckets, spec, event_filter, fields, info, column_filter, raw)
    return rowfilter.joined(rows) if raw else rows


def _bucket_rows(buckets: Iterator[list[Any]], spec: Any, event_filter: EventFilter | None, fields: set[str] | None,
                 info: dict[str, Any], column_filter: rowfilter.ColumnFilter | None, raw: bool) -> Iterator[Any]:
    time_field, meta_field = spec.time_field, spec.meta_field
    check = None
    for chunk in buckets:
        for bucket in chunk:
            if check is None and event_filter is not None:
                check = event_filter.get()  # compiled at the first bucket: a read that meets none never does
            info["bucketsUnpacked"] += 1
            yield from rowfilter.accepted(bucket, fields, check, column_filter, info, time_field, meta_field, raw)


def bucket_records(server: Any, db: str, coll: str, *, reverse: bool = False,
                   after: bytes | None = None) -> Iterator[tuple[bytes, dict[str, Any]]]:
    """(record id, bucket document) of ``db.<coll>`` (a ``system.buckets.*`` name) in ``$natural`` order,
    open buckets included, strictly past record id ``after``."""
    return scan.natural_order(server, f"{db}.{coll}", reverse=reverse, after=after)


def bucket_source(server: Any, db: str, coll: str) -> Iterator[dict[str, Any]]:
    """Every bucket document of ``db.<coll>`` (a ``system.buckets.*`` name), open buckets included."""
    return scan.bucket_documents(server, f"{db}.{coll}")
