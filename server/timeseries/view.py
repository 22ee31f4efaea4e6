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
from bson.raw_bson import RawBSONDocument

from protocol.codec import RAW_CODEC_OPTIONS, decode
from protocol.errors import MongoError
from server.query import plan as planner
from server.query.match import And, compile_node, filter_fields, parse_filter
from server.timeseries import columnar, rawcolumns
from server.timeseries.buckets import MISSING, date_ms, meta_key, oid_bound, unpack_document
from server.timeseries.commit import clustered_rid
from server.timeseries.indexes import translate_hint
from server.timeseries.rewrite import bucket_filter, index_filter
from server.timeseries.unpack import parse_internal_unpack

CHUNK = 128
_ALL = None  # "every field" for column-selective unpack


def _live_snapshot(server: Any, ns: str, lo_s: int | None, hi_s: int | None) -> dict:
    """The catalog's live buckets of ``ns`` (by ``_id``) when the read starts. Their documents are built
    only when yielded (buckets only grow, so a reader sees at least what was acknowledged before it
    started), after the bucket predicate accepted their cheap ``summary()``."""
    catalog = getattr(server, "bucket_catalog", None)
    if catalog is None:
        return {}
    snapshot = {}
    for bucket in catalog.live_buckets(ns):
        if (lo_s is not None and bucket.start_s < lo_s) or (hi_s is not None and bucket.start_s > hi_s):
            continue
        snapshot[bucket.id] = bucket
    return snapshot


def _accept_live(bucket: Any, predicate: Any) -> bool:
    return predicate is None or predicate(bucket.summary())


def bucket_documents(server: Any, ns: str, lo_s: int | None = None, hi_s: int | None = None,
                     stats: dict | None = None, predicate: Any = None,
                     columns: set[str] | None = None) -> Iterator[dict]:
    """Bucket documents of ``ns`` whose bucket start is in ``[lo_s, hi_s]`` (None: unbounded) and that
    pass ``predicate`` (a bucket-level filter over ``_id``/``control``/``meta``). A stored bucket the
    predicate rejects is never fully decoded: only its ``control`` and ``meta`` are.

    ``columns``: when given, stored buckets are returned with only these ``data`` columns decoded
    (the caller unpacks just those fields)."""
    snapshot = _live_snapshot(server, ns, lo_s, hi_s)
    return _scan(server.engine, ns, lo_s, hi_s, snapshot, stats, predicate, columns)


class RawColumns(frozenset):
    """A ``columns`` set asking for the selected data columns as raw BSON bytes (columnar reads)."""


def _partial(raw: bytes, summary: dict | None, columns: set[str]) -> dict:
    """A stored bucket with only ``columns`` of its data decoded (kept as raw BSON ``bytes`` when
    ``columns`` is a ``RawColumns``)."""
    doc = dict(summary) if summary is not None else _summary(raw)
    if isinstance(columns, RawColumns):
        data_columns = rawcolumns.raw_columns(raw, columns)
        if data_columns is not None:
            doc["data"] = data_columns
            return doc
    head = RawBSONDocument(raw, RAW_CODEC_OPTIONS)
    data = head.get("data")
    if isinstance(data, RawBSONDocument) and isinstance(columns, RawColumns):
        doc["data"] = {field: bytes(data[field].raw) if isinstance(data[field], RawBSONDocument) else data[field]
                       for field in data if field in columns}
    elif isinstance(data, RawBSONDocument):
        doc["data"] = {field: decode(data[field].raw) if isinstance(data[field], RawBSONDocument) else data[field]
                       for field in data if field in columns}
    else:
        doc["data"] = {}
    return doc


def _summary(raw: bytes) -> dict:
    """``{_id, control, meta?}`` of a stored bucket without decoding its data columns."""
    top = rawcolumns.elements(raw)
    if top is not None and "_id" in top and "control" in top:
        summary = {"_id": rawcolumns.element_value(raw, top["_id"]),
                   "control": rawcolumns.element_value(raw, top["control"])}
        if "meta" in top:
            summary["meta"] = rawcolumns.element_value(raw, top["meta"])
        return summary
    head = RawBSONDocument(raw, RAW_CODEC_OPTIONS)
    summary: dict[str, Any] = {"_id": head.get("_id")}
    control = head.get("control")
    summary["control"] = decode(control.raw) if isinstance(control, RawBSONDocument) else control
    if "meta" in head:
        meta = head["meta"]
        summary["meta"] = decode(meta.raw) if isinstance(meta, RawBSONDocument) else _plain(meta)
    return summary


def _plain(value: Any) -> Any:
    if isinstance(value, RawBSONDocument):
        return decode(value.raw)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


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


def _records(engine: Any, ns: str, resume: bytes | None, last: bytes | None) -> Iterator[tuple[bytes, bytes]]:
    """(rid, raw) in key order after ``resume`` up to ``last``; a fresh read transaction per chunk."""
    done = False
    while not done:
        chunk: list[tuple[bytes, bytes]] = []
        with engine.read() as r:
            info = r.get_collection(ns)
            if info is None:
                return
            for rid, raw in r.scan(info, start_after=resume):
                rid = bytes(rid)
                if last is not None and rid > last:
                    done = True
                    break
                chunk.append((rid, bytes(raw)))
                if len(chunk) >= CHUNK:
                    break
            else:
                done = True
        if chunk:
            resume = chunk[-1][0]
        yield from chunk


def _emit(raw: bytes, snapshot: dict, stats: dict | None, predicate: Any,
          columns: set[str] | None) -> Iterator[dict]:
    """The bucket to hand on for one stored record (its live version if the catalog has one)."""
    if stats is not None:
        stats["bucketsScanned"] = stats.get("bucketsScanned", 0) + 1
    if predicate is not None or columns is not None:
        summary = _summary(raw)
        live = snapshot.pop(summary["_id"], None)
        if live is not None:
            if _accept_live(live, predicate):
                yield live.document()
            return
        if predicate is None or predicate(summary):
            yield decode(raw) if columns is None else _partial(raw, summary, columns)
        return
    doc = decode(raw)
    live = snapshot.pop(doc.get("_id"), None)
    yield live.document() if live is not None else doc


def _leftovers(snapshot: dict, stats: dict | None, predicate: Any) -> Iterator[dict]:
    """Live buckets the stored scan did not meet (never written in full, or outside the scanned keys)."""
    for bucket_id in sorted(snapshot):
        if stats is not None:
            stats["bucketsScanned"] = stats.get("bucketsScanned", 0) + 1
        if _accept_live(snapshot[bucket_id], predicate):
            yield snapshot[bucket_id].document()


def _scan(engine: Any, ns: str, lo_s: int | None, hi_s: int | None, snapshot: dict,
          stats: dict | None, predicate: Any = None, columns: set[str] | None = None) -> Iterator[dict]:
    for resume, last in _ranges(lo_s, hi_s):
        for _rid, raw in _records(engine, ns, resume, last):
            yield from _emit(raw, snapshot, stats, predicate, columns)
    yield from _leftovers(snapshot, stats, predicate)


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
    ordered = sorted(rids)
    for start in range(0, len(ordered), CHUNK):
        with engine.read() as r:
            info = r.get_collection(ns)
            if info is None:
                return
            chunk = [raw for raw in (r.get(info, rid) for rid in ordered[start:start + CHUNK]) if raw is not None]
            chunk = [bytes(raw) for raw in chunk]
        for raw in chunk:
            yield from _emit(raw, snapshot, stats, predicate, columns)
    yield from _leftovers(snapshot, stats, predicate)


def bucket_source(ctx: Any, db: str, coll: str) -> Iterator[dict]:
    """Every bucket document of ``db.<coll>`` (a ``system.buckets.*`` name), open buckets included."""
    return bucket_documents(ctx.server, f"{db}.{coll}")


# ------------------------------------------------------------------ view reads


def _leading_matches(pipeline: list[dict]) -> tuple[list, list[dict]]:
    """Parse the leading ``$match`` stages (those we can run exactly right after unpack)."""
    nodes = []
    index = 0
    while index < len(pipeline):
        stage = pipeline[index]
        if not (isinstance(stage, dict) and len(stage) == 1 and "$match" in stage):
            break
        try:
            node = parse_filter(stage["$match"])
            compile_node(node)  # validates; $expr with unknown variables stays in the pipeline
        except MongoError:
            break
        nodes.append(node)
        index += 1
    return nodes, pipeline[index:]


def _refs(value: Any, out: set[str]) -> bool:
    """Top-level fields an expression references; False if it needs the whole document."""
    if isinstance(value, str):
        if value.startswith("$$"):
            name = value[2:].split(".", 1)[0]
            if name in ("ROOT", "CURRENT"):
                return False
            return True
        if value.startswith("$"):
            out.add(value[1:].split(".", 1)[0])
        return True
    if isinstance(value, dict):
        return all(_refs(v, out) for v in value.values())
    if isinstance(value, list):
        return all(_refs(v, out) for v in value)
    return True


def _is_exclusion(value: Any) -> bool:
    return value is False or (type(value) in (int, float) and value == 0)


def needed_fields(pipeline: list[dict], filter_nodes: list) -> set[str] | None:
    """Top-level measurement fields the rest of the pipeline can observe, or None for all."""
    out: set[str] = set()
    for node in filter_nodes:
        out.update(path.split(".", 1)[0] for path in filter_fields(node))
    for stage in pipeline:
        if not isinstance(stage, dict) or len(stage) != 1:
            return _ALL
        name, body = next(iter(stage.items()))
        if name == "$match":
            try:
                out.update(path.split(".", 1)[0] for path in filter_fields(parse_filter(body)))
            except MongoError:
                return _ALL
            if "$expr" in body or "$where" in body:
                return _ALL
        elif name == "$sort" and isinstance(body, dict):
            out.update(key.split(".", 1)[0] for key in body)
        elif name in ("$limit", "$skip"):
            continue
        elif name == "$count":
            return out
        elif name == "$group" and isinstance(body, dict):
            return out if _refs(body, out) else _ALL
        elif name == "$project" and isinstance(body, dict):
            others = [v for k, v in body.items() if k != "_id"]
            if not others or any(_is_exclusion(v) for v in others):
                return _ALL  # an exclusion projection (or {_id: 0}) keeps every other field
            if not _is_exclusion(body.get("_id", 1)):
                out.add("_id")
            for key, value in body.items():
                if key == "_id" and _is_exclusion(value):
                    continue
                out.add(key.split(".", 1)[0])
                if not _refs(value, out):
                    return _ALL
            return out
        else:
            return _ALL
    return _ALL


def read_source(ctx: Any, db: str, view_doc: dict, user_pipeline: list[dict], *, hint: Any = None):
    """(measurements iterator, remaining pipeline, explain info) for a read on a time-series view.

    ``hint``: the view-level hint (index name or *user* key pattern, or ``{$natural: ±1}``), translated
    to the buckets index it names; an unknown or hidden index -> 2 BadValue (indexes.translate_hint).
    The chosen buckets index is in ``explain_info["indexName"]``/``["indexKey"]`` before any read."""
    spec = parse_internal_unpack(view_doc["pipeline"][0]["$_internalUnpackBucket"])
    ns = f"{db}.{view_doc['viewOn']}"
    nodes, remaining = _leading_matches(list(user_pipeline))
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
    elif node is None and plan is None and _is_lastpoint(remaining, spec.time_field, spec.meta_field):
        info["lastpoint"] = True
        buckets = (_latest_rows(bucket, spec.time_field)
                   for bucket in _latest_buckets(ctx.server, ns, spec.time_field, info, columns))
    elif plan is not None:
        info["indexName"], info["indexKey"] = plan.index["name"], plan.index["key"]
        snapshot = _live_snapshot(ctx.server, ns, None, None)
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
            decoded = (columnar.decoded(bucket) for bucket in self._buckets)
            self._it = _measurements(decoded, self._spec, self._event_filter, self._fields, self._info)
        return next(self._it)

    def group_result(self, group_spec: Any, ctx: Any) -> Iterator[dict] | None:
        if self._it is not None or group_spec != self._plan.group_spec:
            return None
        self._it = iter(())
        return columnar.run(self._plan, self._buckets, self._event_filter, self._fields, self._info, ctx)


def _newest_first(server: Any, ns: str, hi_s: int | None, stats: dict, predicate: Any,
                  columns: set[str] | None, topk: Any) -> Iterator[dict]:
    """Live buckets, then stored ones by descending bucket start (``_id``), until ``topk`` says no
    older bucket can matter (``done_before(start)``). Pre-1970 buckets (wrapped ``_id`` timestamps)
    come first and never stop the scan."""
    snapshot = _live_snapshot(server, ns, None, None)
    for bucket_id in sorted(snapshot, reverse=True):
        stats["bucketsScanned"] = stats.get("bucketsScanned", 0) + 1
        if _accept_live(snapshot[bucket_id], predicate):
            yield snapshot[bucket_id].document()
    hi = clustered_rid(oid_bound(hi_s, high=True)) if hi_s is not None and 0 <= hi_s < WRAPPED_START else None
    regions = [(clustered_rid(oid_bound(WRAPPED_START - 1, high=True)), None), (None, hi)] if hi is not None \
        else [(None, None)]
    for lo, hi_key in regions:
        resume = None
        while True:
            with server.engine.read() as r:
                info = r.get_collection(ns)
                if info is None:
                    return
                chunk = []
                for rid, raw in r.scan(info, start_after=resume, reverse=True, lo=lo, hi=hi_key,
                                       lo_inclusive=False):
                    chunk.append((bytes(rid), bytes(raw)))
                    if len(chunk) >= 32:
                        break
            if not chunk:
                break
            resume = chunk[-1][0]
            for _rid, raw in chunk:
                summary = _summary(raw)
                bucket_id = summary["_id"]
                if isinstance(bucket_id, ObjectId) and topk.done_before(int.from_bytes(bucket_id.binary[:4], "big")):
                    return
                stats["bucketsScanned"] = stats.get("bucketsScanned", 0) + 1
                if bucket_id in snapshot:
                    continue
                if predicate is None or predicate(summary):
                    yield decode(raw) if columns is None else _partial(raw, summary, columns)


def _is_lastpoint(pipeline: list[dict], time_field: str, meta_field: str | None) -> bool:
    """``$sort {<meta paths>..., <time>: -1}`` then ``$group`` keyed on meta with only ``$first``
    accumulators (TSBS "lastpoint"): every group's first document is the latest measurement of some
    series, so each series' latest bucket(s) hold the whole answer."""
    if meta_field is None or len(pipeline) < 2 or len(pipeline[0]) != 1 or len(pipeline[1]) != 1:
        return False
    sort, group = pipeline[0].get("$sort"), pipeline[1].get("$group")
    if not isinstance(sort, dict) or not isinstance(group, dict):
        return False
    keys = list(sort.items())
    if not keys or keys[-1] != (time_field, -1):
        return False
    if not all(k == meta_field or k.startswith(meta_field + ".") for k, _ in keys[:-1]):
        return False
    refs: set[str] = set()
    if not _refs(group.get("_id"), refs) or not refs <= {meta_field}:
        return False
    return all(isinstance(acc, dict) and len(acc) == 1 and "$first" in acc
               for name, acc in group.items() if name != "_id")


def _latest_buckets(server: Any, ns: str, time_field: str, stats: dict,
                    columns: set[str] | None) -> Iterator[dict]:
    """For every distinct meta value, the bucket(s) holding its latest measurement time (a superset of
    what a meta-keyed ``$first`` after a time-descending sort can return)."""
    engine = server.engine
    snapshot = _live_snapshot(server, ns, None, None)
    best: dict[Any, tuple[int, list]] = {}

    def offer(summary: dict, ref: Any) -> None:
        stats["bucketsScanned"] = stats.get("bucketsScanned", 0) + 1
        latest = date_ms(((summary.get("control") or {}).get("max") or {}).get(time_field))
        latest = latest if latest is not None else -(2**63)
        key = meta_key(summary["meta"]) if "meta" in summary else MISSING
        current = best.get(key)
        if current is None or latest > current[0]:
            best[key] = (latest, [ref])
        elif latest == current[0]:
            current[1].append(ref)

    for rid, raw in _records(engine, ns, None, None):
        summary = _summary(raw)
        if summary["_id"] not in snapshot:
            offer(summary, rid)
    for bucket in snapshot.values():
        offer(bucket.summary(), bucket)
    stored = sorted(ref for _, refs in best.values() for ref in refs if isinstance(ref, bytes))
    for start in range(0, len(stored), CHUNK):
        with engine.read() as r:
            info = r.get_collection(ns)
            if info is None:
                return
            chunk = [bytes(raw) for raw in (r.get(info, rid) for rid in stored[start:start + CHUNK])
                     if raw is not None]
        for raw in chunk:
            yield decode(raw) if columns is None else _partial(raw, None, columns)
    for _, refs in best.values():
        for ref in refs:
            if not isinstance(ref, bytes):
                yield ref.document()


def _latest_rows(bucket: dict, time_field: str) -> dict:
    """``bucket`` restricted to its measurements at its latest time (lastpoint: within one bucket the
    meta is constant, so a row at an earlier time never sorts first in its group). Buckets with a
    sparse column are kept whole: dropping rows could make the column dense and change field order."""
    data = bucket.get("data")
    times = data.get(time_field) if isinstance(data, dict) else None
    if not isinstance(times, dict) or len(times) < 2:
        return bucket
    positions = list(times)
    if not all(isinstance(column, dict) and list(column) == positions for column in data.values()):
        return bucket
    latest = max(times.values(), key=date_ms_or_min)
    keep = [key for key, value in times.items() if value == latest and type(value) is type(latest)]
    if len(keep) == len(times):
        return bucket
    restricted = dict(bucket)
    restricted["data"] = {field: {key: column[key] for key in keep} for field, column in data.items()}
    return restricted


def date_ms_or_min(value: Any) -> int:
    ms = date_ms(value)
    return ms if ms is not None else -(2**63)


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
