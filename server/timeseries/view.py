"""Read glue of time-series collections: bucket scans that merge open buckets, and view reads.

``bucket_documents`` streams the bucket documents of one ``system.buckets`` namespace in ``_id`` order
within an optional bucket-start range, using the clustered key order of storage and a fresh read
transaction per chunk (nothing is held while a cursor is suspended). Buckets that live in the catalog
(open, or closed but not yet written in full) are snapshotted when the read starts and replace their
stored version; those never written at all are yielded after the stored ones.

``read_source`` turns a read on the view into: bucket scan -> bucket-level filter (rewrite.py) ->
column-selective unpack -> the exact per-measurement filter of the leading ``$match`` stages; the
caller runs the rest of the pipeline.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from bson.objectid import ObjectId

from server.query import plan as planner
from server.query.match import And, compile_node
from server.timeseries import columnar, groupbatch, lastpoint, stored
from server.timeseries.buckets import oid_bound, unpack_document
from server.timeseries.commit import clustered_rid
from server.timeseries.deps import leading_matches, needed_fields
from server.timeseries.indexes import translate_hint
from server.timeseries.rewrite import bucket_filter, index_filter
from server.timeseries.stored import (
    LiveCandidate,
    RawColumns,
    StoredBucket,
    StoredCandidate,
    accept_live,
    live_snapshot,
)
from server.timeseries.unpack import parse_internal_unpack


def bucket_documents(server: Any, ns: str, lo_s: int | None = None, hi_s: int | None = None,
                     stats: dict | None = None, predicate: Any = None,
                     columns: set[str] | None = None) -> Iterator[dict]:
    """Bucket documents of ``ns`` whose bucket start is in ``[lo_s, hi_s]`` (None: unbounded) and that
    pass ``predicate`` (a bucket-level filter over ``_id``/``control``/``meta``). A stored bucket the
    predicate rejects is never fully decoded: only its ``control`` and ``meta`` are.

    ``columns``: when given, stored buckets are returned with only these ``data`` columns decoded
    (the caller unpacks just those fields)."""
    snapshot = live_snapshot(server, ns, lo_s, hi_s)
    return _scan(server.engine, ns, lo_s, hi_s, snapshot, stats, predicate, columns)


WRAPPED_START = 2**31  # bucket starts before 1970 wrap to OID timestamps in [2^31, 2^32)


def _ranges(lo_s: int | None, hi_s: int | None) -> list[tuple[bytes | None, bytes | None]]:
    """(start_after, last) key ranges to scan for bucket starts in [lo_s, hi_s].

    Bucket ``_id`` timestamps hold the start modulo 2^32, so pre-1970 buckets sort at the top of the
    key space: an upper bound below 2038 also scans that wrapped region (normally empty)."""
    if hi_s is not None and hi_s < 0:
        return [(None, None)]  # pre-1970 upper bound: scan everything, the predicate decides
    resume = clustered_rid(oid_bound(lo_s - 1, high=True)) if lo_s is not None and lo_s > 0 else None
    if hi_s is None:
        return [(resume, None)]
    ranges = [(resume, clustered_rid(oid_bound(hi_s, high=True)))]
    if hi_s < WRAPPED_START:
        ranges.append((clustered_rid(oid_bound(WRAPPED_START - 1, high=True)), None))
    return ranges


def _emit(bucket: StoredBucket, snapshot: dict, stats: dict | None, predicate: Any,
          columns: set[str] | None) -> Iterator[dict]:
    """The bucket to hand on for one stored record (its live version if the catalog has one)."""
    if stats is not None:
        stats["bucketsScanned"] = stats.get("bucketsScanned", 0) + 1
    if predicate is not None or columns is not None:
        summary = bucket.summary()
        live = snapshot.pop(summary["_id"], None)
        if live is not None:
            if accept_live(live, predicate):
                yield LiveCandidate(live) if isinstance(columns, RawColumns) else live.document()
            return
        if isinstance(columns, RawColumns):  # a columnar read: it applies the predicate when it needs to
            yield StoredCandidate(bucket, predicate, columns)
        elif predicate is None or predicate(summary):
            yield bucket.select(columns)
        return
    doc = bucket.document()
    live = snapshot.pop(doc.get("_id"), None)
    yield live.document() if live is not None else doc


def _leftovers(snapshot: dict, stats: dict | None, predicate: Any, columns: set[str] | None = None) -> Iterator[dict]:
    """Live buckets the stored scan did not meet (never written in full, or outside the scanned keys)."""
    for bucket_id in sorted(snapshot):
        if stats is not None:
            stats["bucketsScanned"] = stats.get("bucketsScanned", 0) + 1
        if accept_live(snapshot[bucket_id], predicate):
            live = snapshot[bucket_id]
            yield LiveCandidate(live) if isinstance(columns, RawColumns) else live.document()


def _scan(engine: Any, ns: str, lo_s: int | None, hi_s: int | None, snapshot: dict,
          stats: dict | None, predicate: Any = None, columns: set[str] | None = None) -> Iterator[dict]:
    for resume, last in _ranges(lo_s, hi_s):
        for bucket in stored.scan(engine, ns, resume, last):
            yield from _emit(bucket, snapshot, stats, predicate, columns)
    yield from _leftovers(snapshot, stats, predicate, columns)


def _index_scan(engine: Any, ns: str, plan: Any, snapshot: dict, stats: dict | None, predicate: Any,
                columns: set[str] | None) -> Iterator[dict]:
    """Buckets through a buckets-collection index: record ids first (one short transaction), then
    the records in clustered order, a fresh read transaction per chunk."""
    rids: set[bytes] = set()
    with engine.read() as r:
        info = r.get_collection(ns)
        if info is not None:
            for interval in plan.intervals:
                for _key, rid in r.index_scan(info, plan.index["name"], interval.lo, interval.hi,
                                              lo_inclusive=interval.lo_incl, hi_inclusive=interval.hi_incl):
                    rids.add(bytes(rid))
    if stats is not None:
        stats["indexName"] = plan.index["name"]
        stats["keysExamined"] = len(rids)
    for bucket in stored.get_many(engine, ns, sorted(rids)):
        yield from _emit(bucket, snapshot, stats, predicate, columns)
    yield from _leftovers(snapshot, stats, predicate, columns)


def bucket_source(ctx: Any, db: str, coll: str) -> Iterator[dict]:
    """Every bucket document of ``db.<coll>`` (a ``system.buckets.*`` name), open buckets included."""
    return bucket_documents(ctx.server, f"{db}.{coll}")


# ------------------------------------------------------------------ view reads


def read_source(ctx: Any, db: str, view_doc: dict, user_pipeline: list[dict], *, hint: Any = None):
    """(measurements iterator, remaining pipeline, explain info) for a read on a time-series view.

    ``hint``: the view-level hint (index name or *user* key pattern, or ``{$natural: ±1}``), translated
    to the buckets index it names; an unknown or hidden index -> 2 BadValue (indexes.translate_hint).
    The chosen buckets index is in ``explain_info["indexName"]``/``["indexKey"]`` before any read."""
    spec = parse_internal_unpack(view_doc["pipeline"][0]["$_internalUnpackBucket"])
    ns = f"{db}.{view_doc['viewOn']}"
    nodes, remaining = leading_matches(list(user_pipeline))
    node = None if not nodes else nodes[0] if len(nodes) == 1 else And(tuple(nodes))
    span = spec.bucket_max_span_seconds or 3600
    bfilter = bucket_filter(node, spec.time_field, spec.meta_field, span, collation=bool(view_doc.get("collation")))
    # a meta-only filter is decided exactly per bucket: no per-measurement evaluation needed
    event_filter = compile_node(node) if node is not None and not bfilter.exact else None
    fields = needed_fields(remaining, nodes)
    info: dict[str, Any] = {"stage": "$_internalUnpackBucket", **spec.explain(),
                            "bucketFilter": bfilter.description,
                            "eventFilter": [s["$match"] for s in user_pipeline[:len(nodes)]],
                            "idRange": {"min": bfilter.lo_s, "max": bfilter.hi_s},
                            "fields": sorted(fields) if fields is not None else "all",
                            "bucketsScanned": 0, "bucketsUnpacked": 0, "measurementsUnpacked": 0,
                            "measurementsReturned": 0}
    predicate = bfilter.predicate if bfilter.prunes else None
    columns = None if fields is None else {*fields, spec.time_field}
    grouped = columnar.plan(node, remaining, spec.time_field, spec.meta_field) if fields is not None else None
    if grouped is not None:
        columns = RawColumns(columns)
        info["columnarGroup"] = True
    plan = _bucket_index_plan(ctx.server.engine, ns, index_filter(node, spec.time_field, spec.meta_field, span),
                              hint, spec)
    topk = columnar.topk_shape(remaining, grouped) if grouped is not None and plan is None else None
    if topk is not None:
        info["newestFirst"] = topk
        grouped.topk = columnar.TopK(topk, span * 1000)
        buckets = _newest_first(ctx.server, ns, bfilter.hi_s, info, predicate, columns, grouped.topk)
    elif node is None and plan is None and lastpoint.is_lastpoint(remaining, spec.time_field, spec.meta_field):
        info["lastpoint"] = True
        buckets = lastpoint.latest_buckets(ctx.server, ns, spec.time_field, info, columns)
    elif plan is not None:
        info["indexName"], info["indexKey"] = plan.index["name"], plan.index["key"]
        snapshot = live_snapshot(ctx.server, ns, None, None)
        buckets = _index_scan(ctx.server.engine, ns, plan, snapshot, info, predicate, columns)
    else:
        buckets = bucket_documents(ctx.server, ns, bfilter.lo_s, bfilter.hi_s, info, predicate, columns)
    if grouped is not None:
        return GroupableMeasurements(grouped, buckets, spec, event_filter, fields, info), remaining, info
    return _measurements(buckets, spec, event_filter, fields, info), remaining, info


class GroupableMeasurements:
    """The measurements of a read (an iterator, like every read source) that can also answer the
    ``$group`` stage right after it column-at-a-time: the ``$group`` stage calls
    ``group_result(spec, ctx)`` on its input; unless the group is the one planned and nothing has
    been read yet, it gets None and iterates the measurements as usual."""

    def __init__(self, plan: Any, buckets: Iterator[dict], spec: Any, event_filter: Any,
                 fields: set[str] | None, info: dict):
        self._plan, self._buckets, self._spec = plan, buckets, spec
        self._event_filter, self._fields, self._info = event_filter, fields, info
        self._it: Iterator[dict] | None = None

    def __iter__(self) -> GroupableMeasurements:
        return self

    def __next__(self) -> dict:
        if self._it is None:
            decoded = groupbatch.resolved(self._buckets)
            self._it = _measurements(decoded, self._spec, self._event_filter, self._fields, self._info)
        return next(self._it)

    def group_result(self, group_spec: Any, ctx: Any) -> Iterator[dict] | None:
        if self._it is not None or group_spec != self._plan.group_spec:
            return None
        self._it = iter(())
        return groupbatch.run(self._plan, self._buckets, self._event_filter, self._fields, self._info, ctx)


def _newest_first(server: Any, ns: str, hi_s: int | None, stats: dict, predicate: Any,
                  columns: set[str] | None, topk: Any) -> Iterator[dict]:
    """Live buckets, then stored ones by descending bucket start (``_id``), until ``topk`` says no
    older bucket can matter (``done_before(start)``). Pre-1970 buckets (wrapped ``_id`` timestamps)
    come first and never stop the scan."""
    snapshot = live_snapshot(server, ns, None, None)
    for bucket_id in sorted(snapshot, reverse=True):
        stats["bucketsScanned"] = stats.get("bucketsScanned", 0) + 1
        if accept_live(snapshot[bucket_id], predicate):
            yield LiveCandidate(snapshot[bucket_id])
    hi = clustered_rid(oid_bound(hi_s, high=True)) if hi_s is not None and 0 <= hi_s < WRAPPED_START else None
    regions = [(clustered_rid(oid_bound(WRAPPED_START - 1, high=True)), None), (None, hi)] if hi is not None \
        else [(None, None)]
    for lo, hi_key in regions:
        for bucket in stored.scan(server.engine, ns, reverse=True, lo=lo, hi=hi_key, chunk_size=32):
            summary = bucket.summary()
            bucket_id = summary["_id"]
            if isinstance(bucket_id, ObjectId) and topk.done_before(int.from_bytes(bucket_id.binary[:4], "big")):
                return
            stats["bucketsScanned"] = stats.get("bucketsScanned", 0) + 1
            if bucket_id in snapshot:
                continue
            if predicate is None or predicate(summary):
                yield bucket.select(columns)


def _bucket_index_plan(engine: Any, ns: str, ixfilter: dict | None, hint: Any = None, spec: Any = None) -> Any:
    """An IXSCAN plan over a buckets index whose leading field the filter bounds (or the hinted one),
    else None (scan the clustered ``_id`` range)."""
    hinted = hint is not None and hint != {} and hint != ""
    if ixfilter is None and not hinted:
        return None
    with engine.read() as r:
        info = r.get_collection(ns)
    indexes = list(info.indexes) if info is not None else []
    if hinted:
        name = translate_hint(hint, indexes, spec.time_field, spec.meta_field)
        if isinstance(name, dict):  # {$natural: ±1}: the clustered scan
            return None
        return planner.choose_plan(indexes, ixfilter or {}, None, name)
    if not indexes:
        return None
    plan = planner.choose_plan(indexes, ixfilter, None, None)
    return plan if plan.kind == "IXSCAN" and plan.index is not None else None


def _measurements(buckets: Iterator[dict], spec: Any, event_filter: Any, fields: set[str] | None,
                  info: dict) -> Iterator[dict]:
    time_field, meta_field = spec.time_field, spec.meta_field
    for bucket in buckets:
        info["bucketsUnpacked"] += 1
        unpacked = 0
        returned = 0
        for measurement in unpack_document(bucket, time_field, meta_field, fields):
            unpacked += 1
            if event_filter is None or event_filter(measurement):
                returned += 1
                yield measurement
        info["measurementsUnpacked"] += unpacked
        info["measurementsReturned"] += returned
