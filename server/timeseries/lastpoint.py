"""The "lastpoint" read (TSBS): ``$sort {<meta paths>..., <time>: -1}`` -> ``$group`` keyed on meta with
only ``$first`` accumulators. Every group's first document is the latest measurement of some series
(distinct meta value), so the buckets holding each series' latest time, restricted to their rows at
that time, carry the whole answer; they are yielded in the order the full scan would meet them
(stored ones in ``_id`` order, an in-memory bucket in place of its stored version, memory-only ones
last), so ties in the ``$sort`` resolve the same way.

Finding them takes every bucket's summary (``_id``/``control.max``/``meta``): one pass over the stored
values, where a bucket already seen (same packed bytes, ``bucketcache``) costs a dictionary lookup and
a new or changed one a prefix-only decode. What that pass derives (per series its buckets by latest
time, which record holds each ``_id``) is kept in ``bucketcache.SNAPSHOTS`` for the LMDB snapshot it
was derived from: used only while nothing at all was committed since. The buckets index could list
the candidates in O(series) instead, but a bucket whose meta is a one-element array ``[v]`` is indexed
under ``v`` like the series ``v`` (the write paths flag such an index multikey, but stores written before
they did hold unflagged ones).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from tidemark.query import interrupt
from tidemark.timeseries import scan, stored
from tidemark.timeseries.bucketcache import SNAPSHOTS
from tidemark.timeseries.bucketdoc import MISSING, date_ms, meta_key
from tidemark.timeseries.columns import DATE
from tidemark.timeseries.deps import refs

_NO_TIME = -(2**63)


def is_lastpoint(pipeline: list[dict[str, Any]], time_field: str, meta_field: str | None) -> bool:
    """``$sort {<meta paths>..., <time>: -1}`` then ``$group`` keyed on meta with only ``$first``
    accumulators."""
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
    read: set[str] = set()
    if not refs(group.get("_id"), read) or not read <= {meta_field}:
        return False
    return all(isinstance(acc, dict) and len(acc) == 1 and "$first" in acc
               for name, acc in group.items() if name != "_id")


class LatestRows:
    """A bucket view restricted to its rows at its latest time (``measurements`` only)."""

    __slots__ = ("view", "positions")
    cached = None

    def __init__(self, view: Any, positions: np.ndarray | None):
        self.view, self.positions = view, positions

    def summary(self) -> dict[str, Any]:
        summary: dict[str, Any] = self.view.summary()
        return summary

    def measurements(self, fields: Any = None, positions: Any = None, *, time_field: str,
                     meta_field: str | None) -> Iterator[dict[str, Any]]:
        """The rows, remembered with what the bucket's rows derive (each read gets its own dicts)."""
        memo = self.view.derived()
        key = ("latest rows", time_field, meta_field, None if fields is None else frozenset(fields))
        rows = memo.get(key)
        if rows is None:
            rows = memo[key] = list(self.view.measurements(fields, self.positions, time_field=time_field,
                                                           meta_field=meta_field))
        return (dict(row) for row in rows)


def latest_buckets(server: Any, ns: str, time_field: str, stats: dict[str, Any]) -> Iterator[LatestRows]:
    """For every series, its bucket(s) holding its latest time, restricted to the rows at that time."""
    engine = server.engine
    attempts = 3  # commits racing the read: start over, at last accept rows read after the facts
    for attempt in range(attempts):
        live = scan.live_views(server, ns)
        facts = stored_facts(engine, ns, time_field)
        winners, scanned = _winners(facts, live, time_field)
        views = facts.views(engine, ns, [ref for _, ref in winners if isinstance(ref, bytes)],
                            strict=attempt < attempts - 1)
        if views is not None:
            break
    assert views is not None  # the last attempt is not strict: it takes what storage holds
    stats["bucketsScanned"] = stats.get("bucketsScanned", 0) + scanned
    for _position, ref in winners:
        view = views.get(ref) if isinstance(ref, bytes) else ref
        if view is not None:
            yield LatestRows(view, latest_positions(view, time_field))


def latest_positions(view: Any, time_field: str) -> np.ndarray | None:
    """Positions of the rows at the bucket's latest time (remembered with what the bucket's rows
    derive); None when the time column is not dense (the whole bucket is read)."""
    memo = view.derived()
    memo_key = ("latest positions", time_field)
    if memo_key in memo:
        known: np.ndarray | None = memo[memo_key]
        return known
    found = view.dense(time_field)
    positions = None
    if found is not None and found[0] == DATE and len(found[1]) >= 2:
        times = found[1]
        positions = (times == times.max()).nonzero()[0]
        if len(positions) == len(times):
            positions = None
    memo[memo_key] = positions
    return positions


def _series_facts(summary: dict[str, Any], time_field: str) -> tuple[Any, int]:
    """(series grouping key, latest time in ms) of a bucket summary."""
    latest = date_ms(((summary.get("control") or {}).get("max") or {}).get(time_field))
    return (meta_key(summary["meta"]) if "meta" in summary else MISSING,
            latest if latest is not None else _NO_TIME)


def _facts(bucket: Any, time_field: str) -> tuple[Any, Any, int]:
    """(bucket _id, series key, latest ms) of a stored bucket, remembered with its cached parts."""
    entry = bucket.cached
    memo_key = ("lastpoint", time_field)
    if entry is not None:
        found: tuple[Any, Any, int] | None = entry.memo.get(memo_key)
        if found is not None:
            return found
    summary = bucket.summary()
    facts = (summary["_id"], *_series_facts(summary, time_field))
    if entry is not None:
        entry.memo[memo_key] = facts
    return facts


# ------------------------------------------------------------------ stored buckets: one pass per snapshot


class StoredFacts:
    """What lastpoint needs of every stored bucket of a collection, from one pass over the stored
    values: per series its buckets by latest time (newest first, then record id), and which record
    holds each bucket ``_id``. Kept in ``bucketcache.SNAPSHOTS`` when the pass saw one snapshot
    (``snapshot`` is then its id, else None)."""

    def __init__(self, snapshot: int | None):
        self.snapshot = snapshot
        self.count = 0
        self.rid_of: dict[Any, bytes] = {}
        self.by_series: dict[Any, list[tuple[int, bytes]]] = {}
        self.buckets: dict[bytes, Any] = {}  # each series' newest buckets, from the pass

    def views(self, engine: Any, ns: str, rids: list[bytes], strict: bool = True) -> dict[bytes, Any] | None:
        """The stored buckets of ``rids`` (from the pass, or read again in one transaction that must
        see this snapshot: None when it does not, the caller starts over; with ``strict`` False, what
        storage holds now)."""
        out = {rid: self.buckets[rid] for rid in rids if rid in self.buckets}
        unread = [rid for rid in rids if rid not in out]
        if unread:
            read = stored.get_at(engine, ns, unread, self.snapshot) \
                if strict and self.snapshot is not None else list(stored.get_many(engine, ns, unread))
            if read is None or (strict and len(read) != len(unread)):
                return None
            out.update((bucket.rid, bucket) for bucket in read)
        return out


def stored_facts(engine: Any, ns: str, time_field: str) -> StoredFacts:
    """The collection's ``StoredFacts`` at the current snapshot (remembered per snapshot)."""
    kind = ("lastpoint", time_field)
    before = stored.snapshot_id(engine)
    found: StoredFacts | None = SNAPSHOTS.get(engine, ns, kind, before)
    if found is not None:
        return found
    facts = StoredFacts(before)
    newest: dict[Any, tuple[int, list[bytes]]] = {}  # series -> its latest time, the buckets reaching it
    for bucket in stored.scan(engine, ns, chunk_size=1024):
        interrupt.tick(16)  # a summary costs ~16 documents' worth of a scan
        bucket_id, series, latest = _facts(bucket, time_field)
        facts.count += 1
        facts.rid_of[bucket_id] = bucket.rid
        facts.by_series.setdefault(series, []).append((latest, bucket.rid))
        current = newest.get(series)
        if current is None or latest > current[0]:
            if current is not None:
                for rid in current[1]:
                    del facts.buckets[rid]
            newest[series] = (latest, [bucket.rid])
            facts.buckets[bucket.rid] = bucket
        elif latest == current[0]:
            current[1].append(bucket.rid)
            facts.buckets[bucket.rid] = bucket
    for entries in facts.by_series.values():
        entries.sort(key=lambda entry: (-entry[0], entry[1]))
    if stored.snapshot_id(engine) == before:  # no commit during the pass: it saw one snapshot
        SNAPSHOTS.put(engine, ns, kind, before, facts)
    else:
        facts.snapshot = None
    return facts


# ------------------------------------------------------------------ in-memory buckets and the winners


def _winners(facts: StoredFacts, live: dict[str, Any], time_field: str) -> tuple[list[tuple[tuple[Any, ...], Any]], int]:
    """(position, record id | live view) of every bucket holding its series' latest time, in the order
    the full scan meets them: stored records by record id (an in-memory bucket in place of its stored
    version), then memory-only buckets by ``_id``; and the buckets examined."""
    replaced = {}
    live_by_series: dict[Any, list[tuple[int, Any]]] = {}
    for bucket_id, view in live.items():
        rid = facts.rid_of.get(bucket_id)
        if rid is not None:
            replaced[rid] = view
        series, latest = _series_facts(view.summary(), time_field)
        live_by_series.setdefault(series, []).append((latest, view))
    out: list[tuple[tuple[Any, ...], Any]] = []
    for series in facts.by_series.keys() | live_by_series.keys():
        candidates = live_by_series.get(series, ())
        best = max((latest for latest, _ in candidates), default=None)
        entries = [entry for entry in facts.by_series.get(series, ()) if entry[1] not in replaced] \
            if replaced else facts.by_series.get(series, ())
        if entries and (best is None or entries[0][0] > best):
            best = entries[0][0]
        for latest, rid in entries:
            if latest != best:
                break
            out.append(((0, rid), rid))
        for latest, view in candidates:
            if latest == best:
                rid = facts.rid_of.get(view.id)
                out.append(((0, rid) if rid is not None else (1, view.id), view))
    out.sort(key=lambda found: found[0])
    return out, facts.count + len(live) - len(replaced)
