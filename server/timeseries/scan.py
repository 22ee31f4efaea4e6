"""Bucket scans: the buckets of one ``system.buckets`` namespace as bucketview objects, stored ones
merged with the catalog's in-memory ones, filtered by a bucket predicate.

Stored buckets come from the clustered ``_id`` order (a fresh read transaction per chunk: nothing is
held while a cursor is suspended), from a buckets index, or newest first. The in-memory buckets are
snapshotted when the read starts (``live_views``: each bucket's committed rows then), replace their
stored version by ``_id``, and sit where they will sit once stored (``_in_scan_order``): a read's order
never depends on which buckets the writer has stored yet (checkpoints and closes store them at any time).

A bucket ``_id`` holds its start modulo 2**32 seconds, so buckets before 1970 or after 2106 wrap around
the key space: ``id_ranges`` scans exactly the image of a bucket-start range under that wrap, and the
newest-first scan orders by the real start (``control.min``), never by the ``_id``.
"""

from __future__ import annotations

import itertools
import operator
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any, cast

from bson.objectid import ObjectId

from tidemark.protocol.errors import MongoError
from tidemark.query import interrupt
from tidemark.query.index_keys import holds, keyer_for, may_leave_out
from tidemark.storage.indexes import entry_key
from tidemark.storage.ranges import raw_range
from tidemark.storage.records import clustered_rid
from tidemark.timeseries import stored
from tidemark.timeseries.bucketdoc import date_ms
from tidemark.timeseries.bucketview import LiveBucket
from tidemark.timeseries.filters import SELECTING, for_in_memory, kept, point_alternatives

WRAP = 2**32


def live_views(server: Any, ns: str, lo_s: int | None = None, hi_s: int | None = None,
               predicate: Any = None) -> dict[str, Any]:
    """The catalog's in-memory buckets of ``ns`` with committed rows and a start in ``[lo_s, hi_s]``,
    as views of their rows now (by ``_id``); with a bucket ``predicate`` whose meta part says which
    meta points a bucket it passes holds, only the buckets holding them (the others fail it, and so
    does their stored version, of the same meta: the scan's predicate rejects it in its turn). A unit of
    work per bucket (``interrupt.tick``): a read's views are made before its first chunk, and at 100,000
    in-memory buckets that took ~1 s which neither maxTimeMS nor killOp could stop, run inline on the
    event loop for as long (the inline run moves to the pool only at a check). With nothing of ``ns`` in
    memory (the common read) the predicate's points are not worked out."""
    catalog = server.bucket_catalog
    state = catalog.collections.get(ns)  # (the dict's own get: no ``BucketCatalog.get`` frame per read)
    if state is None or not state.live:
        return {}
    views = {}
    for bucket in catalog.live_buckets(ns, point_alternatives(predicate)):
        interrupt.tick()
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


def _in_scan_order(stored_chunks: Iterable[list[Any]], live: dict[Any, Any], stats: dict[str, Any] | None,
                   predicate: Any, stored_position: Callable[[Any], Any],
                   live_position: Callable[[Any], Any], *, reverse: bool = False) -> Iterator[list[Any]]:
    """The buckets passing ``predicate`` in chunks, in the scan's order whatever the writer has stored so
    far: each in-memory bucket where it sits once stored (a checkpoint or a close stores buckets between
    two reads, and the same read must return its documents in the same order before and after — MongoDB
    keeps every bucket in its collection, so its scans never see the difference).

    ``live`` (by ``_id``; taken over) replace their stored version and are merged into the stored ones by
    position (``stored_position`` of a stored view, ``live_position`` of an in-memory one; ascending,
    descending with ``reverse``; None: after every stored bucket, by ``_id``). One chunk per stored chunk
    read, possibly empty: the consumer's interruption check runs per chunk. An in-memory view is held
    only until it is passed on (a view keeps the copies its reader made). Each stored chunk is taken as
    it is asked for (``map``: a read with nothing in memory, most of them, runs no generator)."""
    ids = set(live)  # (their stored versions are left out, whether the predicate keeps them or not)
    # a predicate deciding a chunk at once (``select``: every bucket predicate of a time range or a meta
    # filter) is asked straight, not through ``kept`` (a call per chunk); others, and None, through it
    select = predicate.select if type(predicate) in SELECTING else None

    def taken(chunk: list[Any]) -> list[Any]:  # a stored chunk: the predicate's buckets, counted as scanned
        if ids:
            chunk = [view for view in chunk if view.id not in ids]
        scanned = len(chunk)
        if select is None:
            chunk = kept(predicate, chunk)
        elif chunk:
            chunk = select(chunk)
        if stats is not None:
            stats["bucketsScanned"] = stats.get("bucketsScanned", 0) + scanned
        return chunk

    chunks = map(taken, stored_chunks)
    if not live:
        return chunks
    return _merged(chunks, live, stats, predicate, stored_position, live_position, reverse)


def _merged(chunks: Iterator[list[Any]], live: dict[Any, Any], stats: dict[str, Any] | None, predicate: Any,
            stored_position: Callable[[Any], Any], live_position: Callable[[Any], Any],
            reverse: bool) -> Iterator[list[Any]]:
    """``_in_scan_order``'s chunks with its in-memory buckets placed among them (``chunks``: the stored
    ones, filtered and counted)."""
    before = operator.gt if reverse else operator.lt  # a position before another in this scan's direction
    placed: list[tuple[Any, Any]] = []
    last: list[Any] = []  # in-memory buckets with no position: after the stored ones
    # the predicate first: only the in-memory buckets it keeps are placed (a position is the index key
    # of the bucket's control; one series' read among 100,000 in-memory ones placed every one: 6-9 s)
    views = kept(for_in_memory(predicate), list(live.values()))
    if stats is not None and len(views) < len(live):
        stats["bucketsScanned"] = stats.get("bucketsScanned", 0) + len(live) - len(views)  # (as before)
    for view in views:
        interrupt.tick()  # (as ``live_views``: a bucket's position is worked out before the first chunk)
        position = live_position(view)
        if position is None:
            last.append(view)
        else:
            placed.append((position, view))
    del views
    live.clear()
    placed.sort(key=lambda item: item[0], reverse=reverse)
    last.sort(key=lambda view: view.id)
    pending = deque(placed)
    del placed
    for chunk in chunks:
        # (in-memory buckets are mostly the newest: a chunk all before the next one is taken as is)
        if pending and chunk and before(pending[0][0], stored_position(chunk[-1])):
            merged = []
            for view in chunk:
                here = stored_position(view)
                while pending and before(pending[0][0], here):
                    merged.append(pending.popleft()[1])
                merged.append(view)
            if stats is not None:
                stats["bucketsScanned"] = stats.get("bucketsScanned", 0) + len(merged) - len(chunk)
            chunk = merged
        yield chunk
        del chunk
    if last:
        pending.extend((None, view) for view in last)
    del last
    while pending:
        chunk = [pending.popleft()[1] for _ in range(min(stored.CHUNK, len(pending)))]
        if stats is not None:
            stats["bucketsScanned"] = stats.get("bucketsScanned", 0) + len(chunk)
        yield chunk
        del chunk


def _stored_rid(view: Any) -> bytes:
    return cast(bytes, view.rid)


def _live_rid(view: Any) -> bytes:
    return clustered_rid(view.id)  # (a stored ``_id`` may be of any type: record ids always compare)


def buckets(server: Any, ns: str, lo_s: int | None = None, hi_s: int | None = None, stats: dict[str, Any] | None = None,
            predicate: Any = None, *, reverse: bool = False) -> Iterator[list[Any]]:
    """Buckets of ``ns`` whose start is in ``[lo_s, hi_s]`` (None: open) and that pass ``predicate``
    (over ``summary()``), in ``_id`` order (descending with ``reverse``: a ``{$natural: -1}`` scan),
    in-memory ones included; in chunks (lists, possibly empty)."""
    live = live_views(server, ns, lo_s, hi_s, predicate)
    ranges = id_ranges(lo_s, hi_s)

    def stored_chunks() -> Iterator[list[Any]]:
        for lo, hi in (reversed(ranges) if reverse else ranges):
            yield from stored.chunks(server.engine, ns, lo=lo, hi=hi, reverse=reverse)

    return _in_scan_order(stored_chunks(), live, stats, predicate, _stored_rid, _live_rid, reverse=reverse)


def index_buckets(server: Any, ns: str, plan: Any, stats: dict[str, Any] | None = None, predicate: Any = None,
                  lo_s: int | None = None, hi_s: int | None = None) -> Iterator[list[Any]]:
    """Buckets through a buckets index: record ids first (one short transaction), then the records in
    the index's order (its key order under its own collation, backwards for a reverse plan; a bucket
    with several keys where it first appears): the first chunk's in that transaction, a fresh read
    transaction per later chunk (a short read, most of them, opens one transaction); in-memory buckets
    (starting in ``[lo_s, hi_s]``) merged like ``buckets`` — only those the index would hold (a sparse,
    partial or geo index leaves buckets out, and the in-memory ones have no entries in it yet); in
    chunks like ``buckets``."""
    live = live_views(server, ns, lo_s, hi_s, predicate)
    index = plan.index
    reads_data = bool(live) and any(str(path).startswith("data") for path in index["key"])  # (only for them)
    if live and may_leave_out(index):
        live = {bid: view for bid, view in live.items()
                if holds(index, view.document() if reads_data else view.summary())}
    firsts: dict[bytes, bytes] = {}  # rid -> its first key in this scan (insertion-ordered: the scan's order)
    rids: list[bytes] = []  # (firsts' keys)
    first: list[Any] = []  # the first chunk's records, read in the index scan's transaction
    with server.engine.read() as r:
        info = r.get_collection(ns)
        if info is not None:
            # (one reader for every interval: a $in of n series is n point intervals, each scan of its own
            # looked the index's handle, layout and compact keys up again)
            reader = r.index_reader(info, plan.index["name"])
            for interval in (reversed(plan.intervals) if plan.reverse else plan.intervals):
                for key, rid in reader.scan(interval.lo, interval.hi, lo_inclusive=interval.lo_incl,
                                            hi_inclusive=interval.hi_incl, reverse=plan.reverse):
                    firsts.setdefault(rid, key)  # (bytes: a read view's values are copies)
            rids = list(firsts)
            first = stored.read_many(r, info, ns, rids[:stored.CHUNK])
    chunks: Iterable[list[Any]] = [first] if first else []
    if len(firsts) > stored.CHUNK:  # (most index reads are one chunk: no generator for the rest)
        chunks = itertools.chain(chunks, stored.get_many(server.engine, ns, rids, stored.CHUNK))
    if stats is not None:
        stats["indexName"] = plan.index["name"]
        stats["keysExamined"] = stats.get("keysExamined", 0) + len(firsts)  # (a merge reads several scans)
    return _in_scan_order(chunks, live, stats, predicate,
                          lambda view: entry_key(firsts[view.rid], view.rid),
                          # (no in-memory bucket to place: no key generator and key ranges to make)
                          _index_position(plan, firsts, reads_data, stats) if live else _unplaced,
                          reverse=plan.reverse)


def _unplaced(view: Any) -> None:
    return None  # never called: the read has no in-memory bucket


def _index_position(plan: Any, firsts: dict[bytes, bytes], reads_data: bool,
                    stats: dict[str, Any] | None = None) -> Callable[[Any], bytes | None]:
    """Where an in-memory bucket sits in an index scan (an entry's full stored key: key, then record id):
    its stored version's first entry when the scan met it, else the first of the entries it will have
    once stored that fall in the plan's intervals (None when none does). Those entries count in
    ``stats["keysExamined"]``: mongod stores every bucket at once, so its scan examines them."""
    keyer = keyer_for(plan.index)
    ranges = [raw_range(i.lo, i.hi, i.lo_incl, i.hi_incl) for i in plan.intervals]
    bounds = [b for b in ranges if b is not None]
    pick = max if plan.reverse else min

    def position(view: Any) -> bytes | None:
        rid = clustered_rid(view.id)
        found = firsts.get(rid)
        if found is not None:
            return entry_key(found, rid)
        try:
            keys = keyer.keys(view.document() if reads_data else view.summary())
        except MongoError:  # keys its stored version would be refused (parallel arrays): after the others
            return None
        entries = [entry_key(key, rid) for key in keys]
        inside = [e for e in entries if any((lo is None or lo <= e) and (hi is None or e < hi) for lo, hi in bounds)]
        if not inside:
            return None
        if stats is not None:
            stats["keysExamined"] = stats.get("keysExamined", 0) + len(inside)
        return pick(inside)

    return position


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
    live = live_views(server, ns, None, hi_s, predicate)
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
    return _outside_standard_ms(date_ms(value))


def _outside_standard_ms(ms: int | None) -> bool:
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
    looked at one by one, by their time column alone (``time_range``: 100,000 in-memory buckets'
    whole control min/max, every column's, took 30 s of a find sorted on time, on the event loop)."""
    def outside(view: Any) -> bool:
        control = view.summary().get("control") or {}
        return any(_outside_standard_range((control.get(side) or {}).get(time_field)) for side in ("min", "max"))

    for view in live_views(server, ns).values():
        interrupt.tick()
        if not 0 <= view.start_s <= _STANDARD_MAX_S or any(map(_outside_standard_ms, view.time_range(time_field))):
            return True
    for view in stored.scan(server.engine, ns, reverse=True, chunk_size=1):
        bucket_id = view.summary().get("_id")
        wrapped = isinstance(bucket_id, ObjectId) and int.from_bytes(bucket_id.binary[:4], "big") > _STANDARD_MAX_S
        return wrapped or outside(view)
    return False
