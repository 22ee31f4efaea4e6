"""The "lastpoint" read (TSBS): ``$sort {<meta paths>..., <time>: -1}`` -> ``$group`` keyed on meta with
only ``$first`` accumulators. Every group's first document is the latest measurement of some series
(distinct meta value), so the buckets holding each series' latest time, restricted to their rows at
that time, carry the whole answer; they are yielded in the order the full scan would meet them
(stored ones in ``_id`` order, an in-memory bucket in place of its stored version, memory-only ones
last), so ties in the ``$sort`` resolve the same way.

Finding them takes each stored bucket's series and latest time (``meta``, ``control.max``). Those facts
(``SeriesFacts``, per collection) are kept across reads and brought forward to each read's LMDB snapshot
by re-reading only the records the commits in between changed (``engine.changes``): an insert into an
open bucket changes none, a bucket written or deleted one each. Only the first read (or one after a
restart, or after the change notes were evicted) passes over every bucket, in short read transactions,
keeping just the facts (~200 B a bucket), not the decoded buckets. The buckets index could list the
candidates in O(series) instead, but a bucket whose meta is a one-element array ``[v]`` is indexed
under ``v`` like the series ``v`` (the write paths flag such an index multikey, but stores written before
they did hold unflagged ones).
"""

from __future__ import annotations

import bisect
import threading
import weakref
from collections.abc import Iterator
from typing import Any

import numpy as np

from tidemark.query import interrupt
from tidemark.storage.records import clustered_rid
from tidemark.timeseries import scan
from tidemark.timeseries.bucketdoc import MISSING, date_ms, meta_key
from tidemark.timeseries.columns import DATE
from tidemark.timeseries.deps import refs
from tidemark.timeseries.rowbson import MeasurementRows
from tidemark.timeseries.stored import CHUNK, stored_bucket

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
    """A bucket view restricted to its rows at its latest time (``unpack`` only)."""

    __slots__ = ("view", "positions")
    cached = None

    def __init__(self, view: Any, positions: np.ndarray | None):
        self.view, self.positions = view, positions

    def summary(self) -> dict[str, Any]:
        summary: dict[str, Any] = self.view.summary()
        return summary

    def head(self) -> dict[str, Any]:
        head: dict[str, Any] = self.view.head()
        return head

    def time_range(self, time_field: str) -> tuple[int | None, int | None]:
        found: tuple[int | None, int | None] = self.view.time_range(time_field)
        return found

    def unpack(self, fields: Any = None, positions: Any = None, *, time_field: str,
               meta_field: str | None) -> MeasurementRows:
        """The rows, remembered with what the bucket's rows derive (each read gets its own dicts)."""
        memo = self.view.derived()
        key = ("latest rows", time_field, meta_field, None if fields is None else frozenset(fields))
        rows = memo.get(key)
        if rows is None:
            rows = memo[key] = list(self.view.unpack(fields, self.positions, time_field=time_field,
                                                     meta_field=meta_field).dicts())
        return MeasurementRows(dict(row) for row in rows)


def latest_buckets(server: Any, ns: str, time_field: str, stats: dict[str, Any]) -> Iterator[list[LatestRows]]:
    """For every series, its bucket(s) holding its latest time, restricted to the rows at that time; in
    chunks of up to ``stored.CHUNK`` (the read sources' form, view.py)."""
    engine = server.engine
    live = scan.live_views(server, ns)  # before the stored facts: a bucket leaving memory meanwhile is in both
    facts = _facts_of(engine, ns, time_field)
    if not facts.lock.acquire(blocking=False):
        # waiting, this job holds no run token (the holder may yield its own between read transactions)
        while not interrupt.gil_released(facts.lock.acquire, timeout=0.1):
            interrupt.check()
    try:
        winners, scanned = _read_latest(engine, ns, facts, live, time_field, stats)
    finally:
        facts.lock.release()
    stats["bucketsScanned"] = stats.get("bucketsScanned", 0) + scanned
    for start in range(0, len(winners), CHUNK):
        yield [LatestRows(view, latest_positions(view, time_field)) for view in winners[start:start + CHUNK]]


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


def _facts(bucket: Any, time_field: str) -> tuple[Any, int]:
    """(series key, latest ms) of a stored bucket, remembered with its cached parts."""
    entry = bucket.cached
    memo_key = ("lastpoint", time_field)
    if entry is not None:
        found: tuple[Any, int] | None = entry.memo.get(memo_key)
        if found is not None:
            return found
    facts = _series_facts(bucket.summary(), time_field)
    if entry is not None:
        entry.memo[memo_key] = facts
    return facts


# ------------------------------------------------------------------ stored buckets: facts kept up to date


class SeriesFacts:
    """What lastpoint needs of every stored bucket of one collection (``ident``) at one LMDB snapshot
    (``snapshot``; None: not known): each bucket's series and latest time, and per series its buckets
    by latest time (``(-latest, rid)`` ascending: newest first, then record id).

    One per (engine, namespace, time field) in ``_FACTS``, brought forward under ``lock`` to the
    snapshot of each read: through the records the commits in between changed (``engine.changes``,
    storage/changes.py), or by a pass over every bucket when those are not known (first read, after a
    restart, another collection under the name, notes evicted). A read holds the lock from bringing
    the facts forward until it has copied its buckets out of that same read transaction: it answers
    at the facts' snapshot, never a mix."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.clear(None, None)

    def clear(self, ident: str | None, snapshot: int | None) -> None:
        self.ident, self.snapshot = ident, snapshot
        self.of_rid: dict[bytes, tuple[Any, int]] = {}
        self.by_series: dict[Any, list[tuple[int, bytes]]] = {}
        self.held: dict[bytes, Any] = {}  # the stored views of the last answer, by record id

    def forget(self, rid: bytes) -> None:
        self.held.pop(rid, None)  # rewritten or deleted: its view is not of this snapshot
        old = self.of_rid.pop(rid, None)
        if old is not None:
            series, latest = old
            entries = self.by_series[series]
            del entries[bisect.bisect_left(entries, (-latest, rid))]
            if not entries:
                del self.by_series[series]

    def note(self, bucket: Any, time_field: str, *, in_order: bool = True) -> None:
        """Add a stored bucket (``in_order`` False: appended, the caller sorts the lists after)."""
        series, latest = self.of_rid[bucket.rid] = _facts(bucket, time_field)
        entries = self.by_series.setdefault(series, [])
        if in_order:
            bisect.insort(entries, (-latest, bucket.rid))
        else:
            entries.append((-latest, bucket.rid))


_FACTS: dict[tuple[str, str], tuple[Any, SeriesFacts]] = {}  # (ns, time field) -> (weakref to engine, facts)
_FACTS_LOCK = threading.Lock()
_MAX_COLLECTIONS = 64  # facts of more collections than this: the least recently read ones go
_ATTEMPTS = 3  # passes in chunks whose changes since were evicted meanwhile: the last is one transaction
_MAX_HELD = 4096  # stored views kept from one answer to the next (a few KB each: packed and opened bytes)
_PASS_CHUNK = 512  # buckets per read transaction of a pass (~25 ms of summaries)


def _facts_of(engine: Any, ns: str, time_field: str) -> SeriesFacts:
    with _FACTS_LOCK:
        found = _FACTS.pop((ns, time_field), None)
        if found is None or found[0]() is not engine:
            found = (weakref.ref(engine), SeriesFacts())
        _FACTS[(ns, time_field)] = found  # most recently read last
        while len(_FACTS) > _MAX_COLLECTIONS:
            del _FACTS[next(iter(_FACTS))]
        return found[1]


def _read_latest(engine: Any, ns: str, facts: SeriesFacts, live: dict[Any, Any], time_field: str,
                 stats: dict[str, Any]) -> tuple[list[Any], int]:
    """(views of the buckets holding each series' latest time in the order the full scan meets them,
    buckets examined), ``facts`` brought to the snapshot the stored ones are read at (lock held)."""
    stats["factsRebuilt"], stats["factsBucketsRead"] = False, 0
    for attempt in range(_ATTEMPTS):
        with engine.read() as r:
            snapshot = r.snapshot_id()
            info = r.get_collection(ns)
            if info is None:
                facts.clear(None, snapshot)
                return _winners(facts, live, time_field, r, info, ns)
            changed = engine.changes.changed(info.ident, facts.snapshot, snapshot) \
                if facts.ident == info.ident and facts.snapshot is not None else None
            if changed is None and attempt == _ATTEMPTS - 1:
                _pass(r, info, ns, facts, time_field, stats, chunk=None)
                changed = set()  # every bucket read at this snapshot
            if changed is not None:
                opener = r.stored_opener()
                for rid in changed:
                    interrupt.tick(16)  # a summary costs ~16 documents' worth of a scan
                    facts.forget(rid)
                    stored_value = r.get_stored(info, rid)
                    if stored_value is not None:
                        facts.note(stored_bucket(ns, rid, stored_value, opener, remember=False), time_field)
                stats["factsBucketsRead"] += len(changed)
                facts.snapshot = snapshot
                return _winners(facts, live, time_field, r, info, ns)
        _rebuild(engine, ns, facts, time_field, stats)
    raise AssertionError("unreachable: the last attempt reads every bucket in its own transaction")


def _rebuild(engine: Any, ns: str, facts: SeriesFacts, time_field: str, stats: dict[str, Any]) -> None:
    """Facts of every bucket from a pass in short read transactions: they hold each bucket as some
    snapshot from the first one's on saw it, so they belong to the first one's snapshot once brought
    forward through what changed since (the caller's next step)."""
    resume: bytes | None = None
    ident = first = None
    while True:
        with engine.read() as r:
            info = r.get_collection(ns)
            if resume is None:
                ident, first = (info.ident if info is not None else None), r.snapshot_id()
            if info is None or info.ident != ident:
                return  # dropped (and maybe recreated) during the pass: the facts stay unknown
            resume = _pass(r, info, ns, facts, time_field, stats, chunk=_PASS_CHUNK, resume=resume)
        if resume is None:
            facts.snapshot = first
            return


def _pass(r: Any, info: Any, ns: str, facts: SeriesFacts, time_field: str, stats: dict[str, Any], *,
          chunk: int | None, resume: bytes | None = None) -> bytes | None:
    """Facts of the next ``chunk`` buckets after ``resume`` (None: all) from read view ``r``; the
    record id to resume after, None at the end (the facts' snapshot is unknown until the caller sets it:
    an interrupted pass leaves them unknown). Keeps only the facts: a bucket not already in
    ``bucketcache`` is decoded as far as its summary and not kept (a pass used to hold every
    bucket's packed value and summary there: +420 MB at 38,400 buckets)."""
    if resume is None:
        facts.clear(info.ident, None)
        stats["factsRebuilt"] = True
    opener = r.stored_opener()
    count = 0
    for rid, stored_value in r.scan_stored(info, start_after=resume):
        interrupt.tick(16)
        facts.note(stored_bucket(ns, rid, stored_value, opener, remember=False), time_field, in_order=False)
        count += 1
        if chunk is not None and count >= chunk:
            resume = rid
            break
    else:
        resume = None
    stats["factsBucketsRead"] += count
    if resume is None:
        for entries in facts.by_series.values():
            entries.sort()
    return resume


# ------------------------------------------------------------------ in-memory buckets and the winners


def _winners(facts: SeriesFacts, live: dict[Any, Any], time_field: str, r: Any, info: Any,
             ns: str) -> tuple[list[Any], int]:
    """Views of every bucket holding its series' latest time, in the order the full scan meets them:
    stored records by record id (an in-memory bucket in place of its stored version; stored ones read
    from ``r``, the facts' snapshot), then memory-only buckets by ``_id``; and the buckets examined."""
    replaced = {}
    live_by_series: dict[Any, list[tuple[int, Any]]] = {}
    for bucket_id, view in live.items():
        rid = clustered_rid(bucket_id)
        if rid in facts.of_rid:
            replaced[rid] = view
        series, latest = _series_facts(view.summary(), time_field)
        live_by_series.setdefault(series, []).append((latest, view))
    found: list[tuple[tuple[Any, ...], Any]] = []
    for series in facts.by_series.keys() | live_by_series.keys():
        candidates = live_by_series.get(series, ())
        best = max((latest for latest, _ in candidates), default=None)
        entries = facts.by_series.get(series, ())
        # the newest stored bucket not held in memory (a series' replaced ones are few: no copy)
        newest = next((-negated for negated, rid in entries if rid not in replaced), None)
        if newest is not None and (best is None or newest > best):
            best = newest
        for negated, rid in entries:
            if rid in replaced:
                continue
            if -negated != best:
                break
            found.append(((0, rid), rid))
        for latest, view in candidates:
            if latest == best:
                rid = clustered_rid(view.id)
                found.append(((0, rid) if rid in facts.of_rid else (1, view.id), view))
    found.sort(key=lambda item: item[0])
    views = []
    held, facts.held = facts.held, {}
    for _position, ref in found:
        if isinstance(ref, bytes):  # only when the collection exists (facts of no collection are empty)
            view = held.get(ref)  # a record unchanged since: the same bytes at this snapshot
            if view is None:
                stored_value = r.get_stored(info, ref)
                if stored_value is None:  # the facts are of this snapshot: a bug, not a race
                    raise AssertionError(f"lastpoint facts name a bucket {ref.hex()} absent from their snapshot")
                view = stored_bucket(ns, ref, stored_value, r.stored_opener())
            if len(facts.held) < _MAX_HELD:
                facts.held[ref] = view
            ref = view
        views.append(ref)
    return views, len(facts.of_rid) + len(live) - len(replaced)
