"""Reopening by query (MongoDB 7.0): the stored bucket a series continues in when no bucket of it in
memory can take a measurement — after a restart, or once its buckets left memory.

A candidate is a stored bucket of the same meta whose ``[control.min.<time>, + bucketMaxSpanSeconds)``
holds the measurement's time; the newest such one is returned (the router then applies the rules,
reopen.py never decides). It is found through the buckets index ``{meta, control.min.<time>, ...}``
(``create`` builds it) with one short read transaction, or, when that index was dropped, through the
clustered ``_id`` range of bucket starts in ``(t - span, t]``.

The index interval is the planner's for ``{meta: <meta>, control.min.<time>: {$gt: t - span, $lte: t}}``,
encoded directly (``index_bounds``) when the meta is a plain value and the index ascending on both: a
plan per series cost a third of reopening 100,000 series after a restart (~0.6 ms each, profiled). An
insert asks for all the series of a routing slice that may need it at once (``Loader.prefetch``): the
look-ups in key order in the slice's one read transaction, each answer taken by the router's first ask.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable
from typing import Any

from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.objectid import ObjectId

from tidemark.protocol.codec import decode
from tidemark.query import plan as planner
from tidemark.storage.keys import encode_value
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
# meta values whose equality interval on the index is the value's own key (``index_bounds``): not an
# array (multikey: elements match too), not null (missing and undefined match too), not a regex (a
# match, not an equality)
_POINT_TYPES = (dict, str, int, float, bool, ObjectId, Int64, _dt.datetime, Decimal128)


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
        self._found: dict[tuple[str, int], tuple[int, dict[str, Any] | None]] = {}  # prefetched answers

    def _read(self) -> Any:
        """The slice's read view, opened by the first query (``close`` ends it)."""
        if self._view is None:
            self._context = self.engine.read()
            self._view = self._context.__enter__()
        return self._view

    def _collection(self, state: Any) -> tuple[Any, dict[str, Any] | None] | None:
        """(the buckets collection's info, its meta-time index or None); None when it holds no bucket."""
        ns = state.ns
        if ns not in self._collections:
            r = self._read()
            info = r.get_collection(ns)
            index = _meta_time_index(info.indexes, state.options.time_field) if info is not None \
                and state.options.meta_field is not None else None
            self._collections[ns] = (info, index) if info is not None and r.count(info) else None
        return self._collections[ns]

    def __call__(self, state: Any, sid: int, t_ms: int) -> dict[str, Any] | None:
        known = self._found.get((state.ns, sid))
        if known is not None and known[0] == t_ms:
            return known[1]  # asked in this read transaction by ``prefetch``: what asking again would answer
        found = self._collection(state)
        if found is None:
            return None  # no collection, or no bucket stored yet
        info, index = found
        options = state.options
        series = state.series
        return find(self._read(), info, index, options.time_field, options.meta_field,
                    options.bucket_max_span_seconds, series.metas[sid], series.keys[sid], t_ms)

    def prefetch(self, state: Any, sids: list[int], times: list[int]) -> None:
        """Ask now, in index key order, for the candidate of each series ``sids[i]`` at ``times[i]``
        (the series of a routing slice that may ask): the router's asks for one of them at that time
        take the answer (same read transaction, so the same answer it would get asking then)."""
        found = self._collection(state)
        if found is None:
            return  # nothing stored: every answer is None at no cost
        info, index = found
        if index is None:
            return  # no meta-time index: asked one by one
        options = state.options
        span_ms = options.bucket_max_span_seconds * 1000
        metas, keys = state.series.metas, state.series.keys
        asks = []
        for sid, t in zip(sids, times, strict=True):
            interval = index_bounds(index, metas[sid], t - span_ms, t)
            if interval is not None:
                asks.append((interval, sid, t))
        asks.sort(key=lambda ask: ask[0][0])
        r = self._read()
        ns = state.ns
        for interval, sid, t in asks:
            self._found[(ns, sid)] = (t, _best(_index_rids(r, info, index, [interval]), options.time_field,
                                               options.bucket_max_span_seconds, keys[sid], t))

    def taken(self, ns: str, bucket_id: Any) -> bool:
        """Whether a stored bucket of ``ns`` has this ``_id`` (the same read transaction)."""
        r = self._read()
        info = r.get_collection(ns)
        return info is not None and r.get(info, clustered_rid(bucket_id)) is not None

    def close(self) -> None:
        context, self._context, self._view = self._context, None, None
        self._collections.clear()
        self._found.clear()
        if context is not None:
            context.__exit__(None, None, None)


def find(r: Any, info: Any, index: dict[str, Any] | None, time_field: str, meta_field: str | None, span_s: int,
         meta: Any, key: Any, t_ms: int) -> dict[str, Any] | None:
    """The newest reopenable stored bucket for a measurement of series ``meta``/``key`` at ``t_ms``,
    read through ``r`` (a read view) from the buckets collection ``info``; ``index`` is its
    ``{meta, control.min.<time>}`` index (None: the clustered ``_id`` range)."""
    low_ms = t_ms - span_s * 1000  # exclusive: a bucket starting there ends at t
    if index is not None:
        direct = index_bounds(index, meta, low_ms, t_ms)
        if direct is not None:
            intervals: list[Interval] = [direct]
        else:
            flt = {"meta": meta if meta is not MISSING else None,
                   f"control.min.{time_field}": {"$gt": ms_to_date(low_ms), "$lte": ms_to_date(t_ms)}}
            plan = planner.choose_plan([index], flt, None, index["name"], scalar_paths=time_bound_paths(time_field))
            intervals = [(i.lo, i.hi, i.lo_incl, i.hi_incl) for i in plan.intervals]
        return _best(_index_rids(r, info, index, intervals), time_field, span_s, key, t_ms)
    low_s, high_s = low_ms // 1000, t_ms // 1000
    if low_s < 0 or high_s >= 2**32:
        return None  # outside the OID timestamp range: only the index can find it
    return _best((raw for _rid, raw in r.scan(info, lo=clustered_rid(oid_bound(low_s, high=False)),
                                                       hi=clustered_rid(oid_bound(high_s, high=True)))),
                 time_field, span_s, key, t_ms)


Interval = tuple[bytes | None, bytes | None, bool, bool]  # (lo, hi, lo inclusive, hi inclusive)


def index_bounds(index: dict[str, Any], meta: Any, low_ms: int, t_ms: int) -> tuple[bytes, bytes, bool, bool] | None:
    """The one interval the planner makes of ``{meta: <meta>, control.min.<time>: {$gt: low, $lte: t}}``
    on ``index`` (ascending ``meta`` then ``control.min.<time>``: index keys are prefixes), or None
    when the planner must make it (another direction, a meta that is not a plain value)."""
    directions = list(index["key"].values())[:2]
    if type(meta) not in _POINT_TYPES or any(type(d) not in (int, float) or d != 1 for d in directions):
        return None
    point = encode_value(meta)  # (a compound key is its values' encodings one after the other)
    return point + encode_value(ms_to_date(low_ms)), point + encode_value(ms_to_date(t_ms)), False, True


def _index_rids(r: Any, info: Any, index: dict[str, Any], intervals: list[Interval]) -> Iterable[bytes | None]:
    """The stored documents of the first ``MAX_CANDIDATES`` index entries within ``intervals``."""
    rids = []
    for lo, hi, lo_incl, hi_incl in intervals:
        for _key, rid in r.index_scan(info, index["name"], lo, hi, lo_inclusive=lo_incl, hi_inclusive=hi_incl):
            rids.append(bytes(rid))
            if len(rids) >= MAX_CANDIDATES:
                break
    return (r.get(info, rid) for rid in rids)


def _best(raws: Iterable[bytes | None], time_field: str, span_s: int, key: Any, t_ms: int) -> dict[str, Any] | None:
    """The newest of the stored buckets ``raws`` that can take a measurement of series ``key`` at ``t_ms``."""
    low_ms = t_ms - span_s * 1000
    best: dict[str, Any] | None = None
    best_start = 0  # best's control.min.<time> in ms
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

