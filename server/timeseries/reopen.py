"""Reopening by query (MongoDB 7.0): the stored bucket a series continues in when no bucket of it in
memory can take a measurement — after a restart, or once its buckets left memory.

A candidate is a stored bucket of the same meta whose ``[control.min.<time>, + bucketMaxSpanSeconds)``
holds the measurement's time; the newest such one is returned (the router then applies the rules,
reopen.py never decides). It is found through the buckets index ``{meta, control.min.<time>, ...}``
(``create`` builds it) with one short read transaction, or, when that index was dropped, through the
clustered ``_id`` range of bucket starts in ``(t - span, t]``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tidemark.protocol.codec import decode
from tidemark.query import plan as planner
from tidemark.storage.records import clustered_rid
from tidemark.timeseries.bucketdoc import (
    MISSING,
    date_ms,
    meta_key,
    ms_to_date,
    normalize_meta,
    oid_bound,
    time_bound_paths,
)

MAX_CANDIDATES = 16  # index entries examined per query


class Loader:
    """``load(state, sid, t_ms) -> stored bucket document | None`` for the router, called for every
    series an insert meets first (a series explosion: every row). All the queries of one routing
    slice share one read transaction and one look-up of the collection and its index; :meth:`close`
    ends it, before the event loop runs anything else (a read transaction never stays open across
    a yield)."""

    def __init__(self, engine: Any):
        self.engine = engine
        self._context: Any = None
        self._view: Any = None
        self._collections: dict[str, tuple[Any, dict[str, Any] | None] | None] = {}

    def _read(self) -> Any:
        """The slice's read view, opened by the first query (``close`` ends it)."""
        if self._view is None:
            self._context = self.engine.read()
            self._view = self._context.__enter__()
        return self._view

    def __call__(self, state: Any, sid: int, t_ms: int) -> dict[str, Any] | None:
        options = state.options
        r = self._read()
        ns = state.ns
        if ns not in self._collections:
            info = r.get_collection(ns)
            index = _meta_time_index(info.indexes, options.time_field) if info is not None \
                and options.meta_field is not None else None
            self._collections[ns] = (info, index) if info is not None and r.count(info) else None
        found = self._collections[ns]
        if found is None:
            return None  # no collection, or no bucket stored yet
        info, index = found
        series = state.series
        return find(r, info, index, options.time_field, options.meta_field, options.bucket_max_span_seconds,
                    series.metas[sid], series.keys[sid], t_ms)

    def taken(self, ns: str, bucket_id: Any) -> bool:
        """Whether a stored bucket of ``ns`` has this ``_id`` (the same read transaction)."""
        r = self._read()
        info = r.get_collection(ns)
        return info is not None and r.get(info, clustered_rid(bucket_id)) is not None

    def close(self) -> None:
        context, self._context, self._view = self._context, None, None
        self._collections.clear()
        if context is not None:
            context.__exit__(None, None, None)


def find(r: Any, info: Any, index: dict[str, Any] | None, time_field: str, meta_field: str | None, span_s: int,
         meta: Any, key: Any, t_ms: int) -> dict[str, Any] | None:
    """The newest reopenable stored bucket for a measurement of series ``meta``/``key`` at ``t_ms``,
    read through ``r`` (a read view) from the buckets collection ``info``; ``index`` is its
    ``{meta, control.min.<time>}`` index (None: the clustered ``_id`` range)."""
    low_ms = t_ms - span_s * 1000  # exclusive: a bucket starting there ends at t
    best: dict[str, Any] | None = None
    best_start = 0  # best's control.min.<time> in ms
    if index is not None:
        flt = {"meta": meta if meta is not MISSING else None,
               f"control.min.{time_field}": {"$gt": ms_to_date(low_ms), "$lte": ms_to_date(t_ms)}}
        plan = planner.choose_plan([index], flt, None, index["name"], scalar_paths=time_bound_paths(time_field))
        rids = []
        for interval in plan.intervals:
            for _key, rid in r.index_scan(info, index["name"], interval.lo, interval.hi,
                                          lo_inclusive=interval.lo_incl, hi_inclusive=interval.hi_incl):
                rids.append(bytes(rid))
                if len(rids) >= MAX_CANDIDATES:
                    break
        raws: Iterable[bytes | None] = (r.get(info, rid) for rid in rids)
    else:
        low_s, high_s = low_ms // 1000, t_ms // 1000
        if low_s < 0 or high_s >= 2**32:
            return None  # outside the OID timestamp range: only the index can find it
        raws = (raw for _rid, raw in r.scan(info, lo=clustered_rid(oid_bound(low_s, high=False)),
                                            hi=clustered_rid(oid_bound(high_s, high=True))))
    for raw in raws:
        if raw is None:
            continue
        doc = decode(raw)
        start = date_ms(((doc.get("control") or {}).get("min") or {}).get(time_field))
        if start is None or not low_ms < start <= t_ms or start + span_s * 1000 <= t_ms:
            continue
        if (meta_key(normalize_meta(doc["meta"])) if "meta" in doc else MISSING) != key:
            continue
        if (doc.get("control") or {}).get("closed") or (doc.get("control") or {}).get("version") != 1:
            continue
        if best is None or start > best_start:
            best, best_start = doc, start
    return best


def _meta_time_index(indexes: Iterable[dict[str, Any]], time_field: str) -> dict[str, Any] | None:
    for spec in indexes:
        keys = list(spec.get("key", {}))
        if keys[:2] == ["meta", f"control.min.{time_field}"] and not spec.get("partialFilterExpression") \
                and not spec.get("sparse") and not spec.get("collation") and not spec.get("hidden"):
            return spec
    return None

