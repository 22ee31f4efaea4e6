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
from tidemark.timeseries.bucketdoc import MISSING, date_ms, meta_key, ms_to_date, normalize_meta, oid_bound

MAX_CANDIDATES = 16  # index entries examined per query


def loader(engine: Any) -> Any:
    """``load(state, sid, t_ms) -> stored bucket document | None`` for the router."""

    def load(state: Any, sid: int, t_ms: int) -> dict[str, Any] | None:
        options = state.options
        series = state.series
        return find(engine, state.ns, options.time_field, options.meta_field, options.bucket_max_span_seconds,
                    series.metas[sid], series.keys[sid], t_ms)

    return load


def find(engine: Any, ns: str, time_field: str, meta_field: str | None, span_s: int, meta: Any, key: Any,
         t_ms: int) -> dict[str, Any] | None:
    low_ms = t_ms - span_s * 1000  # exclusive: a bucket starting there ends at t
    best: dict[str, Any] | None = None
    best_start = 0  # best's control.min.<time> in ms
    with engine.read() as r:
        info = r.get_collection(ns)
        if info is None or not r.count(info):
            return None
        index = _meta_time_index(info.indexes, time_field) if meta_field is not None else None
        if index is not None:
            flt = {"meta": meta if meta is not MISSING else None,
                   f"control.min.{time_field}": {"$gt": ms_to_date(low_ms), "$lte": ms_to_date(t_ms)}}
            plan = planner.choose_plan(list(info.indexes), flt, None, index["name"])
            rids = []
            for interval in plan.intervals:
                for _key, rid in r.index_scan(info, index["name"], interval.lo, interval.hi,
                                              lo_inclusive=interval.lo_incl, hi_inclusive=interval.hi_incl):
                    rids.append(bytes(rid))
                    if len(rids) >= MAX_CANDIDATES:
                        break
            raws = (r.get(info, rid) for rid in rids)
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

