"""Bucket scans: the buckets of one ``system.buckets`` namespace as bucketview objects, stored ones
merged with the catalog's in-memory ones, filtered by a bucket predicate.

Stored buckets come from the clustered ``_id`` order (a fresh read transaction per chunk: nothing is
held while a cursor is suspended), from a buckets index, or newest first. The in-memory buckets are
snapshotted when the read starts (``live_views``: each bucket's committed rows then) and replace their
stored version by ``_id``; those never stored are yielded after the stored ones.

A bucket ``_id`` holds its start modulo 2**32 seconds, so buckets before 1970 or after 2106 wrap around
the key space: ``id_ranges`` scans exactly the image of a bucket-start range under that wrap, and the
newest-first scan orders by the real start (``control.min``), never by the ``_id``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from bson.objectid import ObjectId

from tidemark.query.index_keys import holds, may_leave_out
from tidemark.storage.records import clustered_rid
from tidemark.timeseries import stored
from tidemark.timeseries.bucketdoc import date_ms
from tidemark.timeseries.bucketview import LiveBucket
from tidemark.timeseries.filters import kept

WRAP = 2**32


def live_views(server: Any, ns: str, lo_s: int | None = None, hi_s: int | None = None) -> dict[str, Any]:
    """The catalog's in-memory buckets of ``ns`` with committed rows and a start in ``[lo_s, hi_s]``,
    as views of their rows now (by ``_id``)."""
    views = {}
    for bucket in server.bucket_catalog.live_buckets(ns):
        if (lo_s is not None and bucket.start_s < lo_s) or (hi_s is not None and bucket.start_s > hi_s):
            continue
        view = LiveBucket(bucket)
        if view.n:
            views[bucket.id] = view
    return views


def id_ranges(lo_s: int | None, hi_s: int | None) -> list[tuple[bytes | None, bytes | None]]:
    """(exclusive lower key, inclusive upper key) ranges of ``_id`` holding every bucket whose start is
    in ``[lo_s, hi_s]`` (None: open): the image of that range modulo 2**32 seconds."""
    if lo_s is None or hi_s is None or hi_s - lo_s >= WRAP - 1:
        return [(None, None)]
    if hi_s < lo_s:
        return []
    a, b = lo_s % WRAP, hi_s % WRAP

    def above(seconds: int) -> bytes | None:  # keys of timestamps >= seconds
        return _key(seconds - 1, high=True) if seconds > 0 else None

    if a <= b:
        return [(above(a), _key(b, high=True))]
    return [(None, _key(b, high=True)), (above(a), None)]


def _key(seconds: int, *, high: bool) -> bytes:
    return clustered_rid(ObjectId(seconds.to_bytes(4, "big") + (b"\xff" * 8 if high else b"\x00" * 8)))


def _stored_then_live(stored_chunks: Iterator[list[Any]], live: dict[str, Any], stats: dict[str, Any] | None,
                      predicate: Any) -> Iterator[list[Any]]:
    """The buckets passing ``predicate`` in chunks: each stored chunk (its in-memory buckets replacing
    their stored version), then the in-memory buckets never stored, by ``_id``. A chunk may be empty
    (nothing in it passed): every chunk read reaches the consumer, whose interruption check runs
    per chunk."""
    for chunk in stored_chunks:
        if stats is not None:
            stats["bucketsScanned"] = stats.get("bucketsScanned", 0) + len(chunk)
        if live:
            chunk = [live.pop(view.id, view) for view in chunk]
        yield kept(predicate, chunk)
    ordered = sorted(live)
    for start in range(0, len(ordered), stored.CHUNK):
        # popped: not held once passed (a view keeps the copies its reader made)
        chunk = [live.pop(bucket_id) for bucket_id in ordered[start:start + stored.CHUNK]]
        if stats is not None:
            stats["bucketsScanned"] = stats.get("bucketsScanned", 0) + len(chunk)
        yield kept(predicate, chunk)
        del chunk


def buckets(server: Any, ns: str, lo_s: int | None = None, hi_s: int | None = None, stats: dict[str, Any] | None = None,
            predicate: Any = None) -> Iterator[list[Any]]:
    """Buckets of ``ns`` whose start is in ``[lo_s, hi_s]`` (None: open) and that pass ``predicate``
    (over ``summary()``), in ``_id`` order, in-memory ones last when never stored; in chunks (lists,
    possibly empty)."""
    live = live_views(server, ns, lo_s, hi_s)

    def stored_chunks() -> Iterator[list[Any]]:
        for lo, hi in id_ranges(lo_s, hi_s):
            yield from stored.chunks(server.engine, ns, lo=lo, hi=hi)

    return _stored_then_live(stored_chunks(), live, stats, predicate)


def index_buckets(server: Any, ns: str, plan: Any, stats: dict[str, Any] | None = None, predicate: Any = None,
                  lo_s: int | None = None, hi_s: int | None = None) -> Iterator[list[Any]]:
    """Buckets through a buckets index: record ids first (one short transaction), then the records in
    the index's order (its key order under its own collation, backwards for a reverse plan; a bucket
    with several keys where it first appears), a fresh read transaction per chunk; in-memory buckets
    (starting in ``[lo_s, hi_s]``) merged like ``buckets`` — only those the index would hold (a sparse,
    partial or geo index leaves buckets out, and the in-memory ones have no entries in it yet); in
    chunks like ``buckets``."""
    live = live_views(server, ns, lo_s, hi_s)
    index = plan.index
    if live and may_leave_out(index):
        reads_data = any(str(path).startswith("data") for path in index["key"])
        live = {bid: view for bid, view in live.items()
                if holds(index, view.document() if reads_data else view.summary())}
    rids: dict[bytes, None] = {}  # insertion-ordered: the index order, each bucket once
    with server.engine.read() as r:
        info = r.get_collection(ns)
        if info is not None:
            for interval in (reversed(plan.intervals) if plan.reverse else plan.intervals):
                for _key, rid in r.index_scan(info, plan.index["name"], interval.lo, interval.hi,
                                              lo_inclusive=interval.lo_incl, hi_inclusive=interval.hi_incl,
                                              reverse=plan.reverse):
                    rids.setdefault(bytes(rid))
    if stats is not None:
        stats["indexName"] = plan.index["name"]
        stats["keysExamined"] = len(rids)
    return _stored_then_live(stored.get_many(server.engine, ns, list(rids)), live, stats, predicate)


def newest_first(server: Any, ns: str, time_field: str, hi_s: int | None, stats: dict[str, Any], predicate: Any,
                 done_before: Any) -> Iterator[list[Any]]:
    """Buckets by descending start — stored ones merged with in-memory ones — until ``done_before(start)``
    says no older bucket can matter. ``_id`` order is start order only for starts in [0, 2**31): the
    top half of the key space (starts 2038..2106, and 1901..1970) is read whole first; the lower half
    is then read down from the filter's start bound, and stops early only when that bound is below
    2**32 (a later start would wrap into it). Starts before 1901 wrap into the lower half too, anywhere
    (1900 sits among 2036's keys): older than every other bucket, they matter only when ``done_before``
    did not say stop for them, so the keys above the bound are read (in key order) only then. Each
    bucket taken is a chunk of its own (``done_before`` is asked again after the consumer took it)."""
    half = WRAP // 2
    may_stop = hi_s is not None and hi_s < WRAP
    live = live_views(server, ns, None, hi_s)
    ordered = sorted(live.values(), key=lambda view: view.start_s, reverse=True)
    normal = [view for view in ordered if 0 <= view.start_s < half]

    def take(view: Any) -> bool:
        stats["bucketsScanned"] = stats.get("bucketsScanned", 0) + 1
        return predicate is None or bool(predicate(view))

    for view in ordered:
        if not 0 <= view.start_s < half and take(view):
            yield [view]
    for view in stored.scan(server.engine, ns, reverse=True, lo=_key(half - 1, high=True), chunk_size=32):
        if view.summary()["_id"] not in live and take(view):
            yield [view]
    pending = 0  # in-memory buckets of the lower half not taken yet (descending start)
    top = half - 1 if hi_s is None or not 0 <= hi_s < half else hi_s
    for view in stored.scan(server.engine, ns, reverse=True, hi=_key(top, high=True), chunk_size=32):
        summary = view.summary()
        start = _start_s(summary, time_field)
        while pending < len(normal) and (start is None or normal[pending].start_s >= start):
            current = normal[pending]
            pending += 1
            if may_stop and done_before(current.start_s):
                return
            if take(current):
                yield [current]
        if may_stop and start is not None and 0 <= start < half and done_before(start):
            return
        if summary["_id"] not in live and take(view):
            yield [view]
    for current in normal[pending:]:
        if may_stop and done_before(current.start_s):
            return
        if take(current):
            yield [current]
    # the latest start before 1901 (-2**31 - 1): when no bucket starting then or before can matter, none above
    # the bound need be read (the predicate rejects the buckets starting after the bound read on the way)
    if top < half - 1 and not done_before(-half - 1):
        for view in stored.scan(server.engine, ns, reverse=True, lo=_key(top, high=True),
                                hi=_key(half - 1, high=True), chunk_size=32):
            if view.summary()["_id"] not in live and take(view):
                yield [view]


def _start_s(summary: dict[str, Any], time_field: str) -> int | None:
    ms = date_ms(((summary.get("control") or {}).get("min") or {}).get(time_field))
    return None if ms is None else ms // 1000


def bucket_documents(server: Any, ns: str) -> Iterator[dict[str, Any]]:
    """Every bucket document of ``ns`` (a ``system.buckets.*`` namespace), in-memory ones included:
    what every read of the buckets namespace takes its documents from."""
    return (view.document() for chunk in buckets(server, ns) for view in chunk)


def natural_order(server: Any, ns: str, *, reverse: bool = False,
                  after: bytes | None = None) -> Iterator[tuple[bytes, dict[str, Any]]]:
    """(record id, bucket document) of every bucket of ``ns`` in clustered ``_id`` order (descending with
    ``reverse``), strictly past record id ``after``: stored buckets merged by key with the in-memory ones
    (which replace their stored version). What a ``$natural`` scan of the buckets collection reads, and
    what makes it resumable by record id."""
    live = {clustered_rid(bucket_id): view for bucket_id, view in live_views(server, ns).items()}

    def earlier(a: bytes, b: bytes) -> bool:  # a comes before b in this scan's direction
        return a > b if reverse else a < b

    pending = iter(sorted((rid for rid in live if after is None or earlier(after, rid)), reverse=reverse))
    upcoming = next(pending, None)
    for view in stored.scan(server.engine, ns, resume=after, reverse=reverse):
        while upcoming is not None and earlier(upcoming, view.rid):
            yield upcoming, live.pop(upcoming).document()
            upcoming = next(pending, None)
        if upcoming == view.rid:
            yield upcoming, live.pop(upcoming).document()
            upcoming = next(pending, None)
        else:
            yield view.rid, view.document()
    while upcoming is not None:
        yield upcoming, live.pop(upcoming).document()
        upcoming = next(pending, None)


def unstored_buckets(server: Any, ns: str) -> tuple[int, int]:
    """(count, approximate BSON bytes) of the in-memory buckets of ``ns`` with committed rows and no
    stored document yet: what a buckets collection's counts and sizes add for them."""
    fresh = [view.bucket for view in live_views(server, ns).values() if not view.bucket.stored_count]
    return len(fresh), sum(bucket.size for bucket in fresh)


# mongod's dateOutsideStandardRange: a measurement whose whole seconds since the epoch (truncated
# toward zero) fall outside [0, 2**31 - 1] needs extended-range support
_STANDARD_MAX_S = 2**31 - 1


def _outside_standard_range(value: Any) -> bool:
    ms = date_ms(value)
    if ms is None:
        return False
    seconds = int(ms / 1000)
    return seconds < 0 or seconds > _STANDARD_MAX_S


def uses_extended_range(server: Any, ns: str, time_field: str) -> bool:
    """Whether the time-series collection behind ``ns`` holds measurements before 1970 or after
    2038-01-19T03:14:07Z (mongod's ``requiresTimeseriesExtendedRangeSupport``, which explain shows as
    ``usesExtendedRange``). Such a bucket's ``_id`` start, modulo 2**32 seconds, is at least 2**31, so
    it sorts after every other: the newest stored ``_id`` tells (mongod's start-up check also reads the
    bucket ids), its ``control.max`` the bucket starting just before the limit; in-memory buckets are
    looked at one by one."""
    def outside(view: Any) -> bool:
        control = view.summary().get("control") or {}
        return any(_outside_standard_range((control.get(side) or {}).get(time_field)) for side in ("min", "max"))

    if any(not 0 <= view.start_s <= _STANDARD_MAX_S or outside(view) for view in live_views(server, ns).values()):
        return True
    for view in stored.scan(server.engine, ns, reverse=True, chunk_size=1):
        bucket_id = view.summary().get("_id")
        wrapped = isinstance(bucket_id, ObjectId) and int.from_bytes(bucket_id.binary[:4], "big") > _STANDARD_MAX_S
        return wrapped or outside(view)
    return False
