"""The bucket catalog: the only time-series state of the process.

Invariants
- At most one *open* bucket per (collection, normalized meta key); measurements are routed only to it
  (or to a reopened archived bucket of the same key whose [start, start + span) holds the time).
- ``live[ns]`` holds every bucket whose in-memory state is newer than what storage holds: all open
  buckets, plus closed/archived ones whose full document has not been committed yet. Readers merge
  ``live`` over the persisted ``system.buckets`` scan (in-memory wins by ``_id``).
- A bucket leaves ``live`` only after a commit wrote its full document and it is no longer open.
- ``archived[ns][key]`` lists buckets already closed in memory (their full document is or will be
  written by the pending commit) that may be reopened for out-of-order data (7.0 behaviour).
- Mutated only on the event loop (single-threaded); the commit writer sees immutable snapshots.
- ``memory`` approximates the Python memory of live buckets; above the threshold idle buckets (no
  uncommitted measurements) are closed, least recently used first.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

import bson
import numpy as np

from protocol.codec import CODEC_OPTIONS
from server.timeseries.buckets import (
    COUNT,
    KEPT_OPEN,
    MISSING,
    SCHEMA,
    SIZE,
    OpenBucket,
    date_ms,
    meta_key,
    new_bucket_id,
    normalize_meta,
    round_start_seconds,
)
from server.timeseries.columnstore import ColumnarBucket, SeriesTable
from server.timeseries.options import TimeseriesOptions

STAT_NAMES = (
    "numBucketInserts", "numBucketUpdates", "numBucketsOpenedDueToMetadata", "numBucketsClosedDueToCount",
    "numBucketsClosedDueToSchemaChange", "numBucketsClosedDueToSize", "numBucketsClosedDueToTimeForward",
    "numBucketsClosedDueToTimeBackward", "numBucketsClosedDueToMemoryThreshold",
    "numBucketsArchivedDueToTimeForward", "numBucketsArchivedDueToTimeBackward",
    "numBucketsArchivedDueToMemoryThreshold", "numBucketsReopened", "numBucketsKeptOpenDueToLargeMeasurements",
    "numCommits", "numWaits", "numMeasurementsCommitted",
)
META_CACHE_SIZE = 100_000
EXPIRY_SCAN_LIMIT = 64  # LRU entries examined per expiry attempt
MAX_ARCHIVED_PER_SERIES = 64  # archived buckets remembered per series for reopening
PYTHON_OVERHEAD = 3  # in-memory bytes per approximate BSON byte of a bucket
BUCKET_OVERHEAD = 2048

# value types of a flat meta object whose (names, types, values) tuple is an exact cache key; floats are
# left out (0.0 == -0.0 but their BSON differs; NaN != NaN)
_SCALAR_META_TYPES = frozenset({str, int, bool, type(None)})

Loader = Callable[[str, Any], "dict | None"]  # (ns of buckets, bucket _id) -> stored bucket document


def reopen_candidates(state: CollectionState, key: Any, t_ms: int) -> Iterator[tuple[list, int, Any]]:
    """``(archive list, index, bucket id)`` of each archived bucket of series ``key`` whose range
    ``[start, start + span)`` holds ``t_ms``, newest first (7.0 reopening); the caller may delete the
    yielded index from the list."""
    candidates = state.archived.get(key)
    if not candidates:
        return
    span_s = state.options.bucket_max_span_seconds
    t_s = t_ms // 1000
    for index in range(len(candidates) - 1, -1, -1):
        start_s, bucket_id = candidates[index]
        if start_s <= t_s and t_ms < (start_s + span_s) * 1000:
            yield candidates, index, bucket_id


def default_memory_threshold() -> int:
    """2.5 % of system RAM (timeseriesIdleBucketExpiryMemoryUsageThreshold = 0)."""
    try:
        import psutil

        return int(psutil.virtual_memory().total * 0.025)
    except Exception:  # pragma: no cover - psutil is a dependency; stay usable without it
        return 100 * 1024 * 1024


class CollectionState:
    __slots__ = ("ns", "options", "open", "archived", "live", "stats", "tables", "last_layout")

    def __init__(self, ns: str, options: TimeseriesOptions):
        self.ns = ns  # the buckets namespace, "db.system.buckets.c"
        self.options = options
        self.open: dict[Any, OpenBucket | ColumnarBucket] = {}
        self.archived: dict[Any, list[tuple[int, Any]]] = {}  # key -> [(start_s, bucket id)]
        self.live: dict[Any, OpenBucket | ColumnarBucket] = {}
        self.stats: dict[str, int] = dict.fromkeys(STAT_NAMES, 0)
        self.tables: dict[tuple, SeriesTable] = {}  # column-wise buckets, one table per layout
        self.last_layout: Any = None  # the layout of the last raw batch (tried first on the next one)


class BucketCatalog:
    PYTHON_OVERHEAD = PYTHON_OVERHEAD

    def __init__(self, *, max_count: int = 1000, max_size: int = 128000, min_count: int = 10,
                 large_cap: int = 12 * 1024 * 1024, memory_threshold: int | None = None,
                 expiry_per_attempt: int = 3):
        self.max_count = max_count
        self.max_size = max_size
        self.min_count = min_count
        self.large_cap = large_cap
        self.memory_threshold = memory_threshold or default_memory_threshold()
        self.expiry_per_attempt = expiry_per_attempt  # timeseriesIdleBucketExpiryMaxCountPerAttempt
        self.collections: dict[str, CollectionState] = {}
        self.dirty: dict[int, OpenBucket] = {}  # id(bucket) -> bucket with something to commit
        self.lru: OrderedDict[int, OpenBucket] = OrderedDict()  # open buckets, least recently used first
        self.memory = 0
        self._meta_cache: dict[Any, tuple[Any, Any]] = {}  # BSON bytes or flat key
        self.dirty_tables: set[SeriesTable] = set()  # tables with rows or buckets to commit
        self.tick = 0  # raw batches routed so far (the column-wise buckets' LRU clock)

    # ------------------------------------------------------------------ collections
    def collection(self, ns: str, options: TimeseriesOptions) -> CollectionState:
        state = self.collections.get(ns)
        if state is None:
            state = self.collections[ns] = CollectionState(ns, options)
        elif state.options != options:
            state.options = options  # collMod: open buckets keep going; new buckets use the new options
        return state

    def get(self, ns: str) -> CollectionState | None:
        return self.collections.get(ns)

    def forget(self, ns: str, *, keep_stats: bool = False) -> None:
        """Drop every bucket of ``ns`` from memory (the collection was dropped, or all its buckets
        were written in full); ``keep_stats`` keeps the collection's statistics."""
        state = self.collections.pop(ns, None)
        if state is None:
            return
        if keep_stats:
            self.collections[ns] = CollectionState(ns, state.options)
            self.collections[ns].stats = state.stats
        for bucket in state.live.values():
            self.dirty.pop(id(bucket), None)
            self.lru.pop(id(bucket), None)
            self.memory -= self._footprint(bucket)
        self.memory = max(self.memory, 0)
        self.dirty_tables.difference_update(state.tables.values())

    def live_buckets(self, ns: str) -> list[OpenBucket]:
        state = self.collections.get(ns)
        return list(state.live.values()) if state else []

    # ------------------------------------------------------------------ routing
    def _meta_and_key(self, meta_field: str | None, measurement: dict) -> tuple[Any, Any]:
        meta = measurement.get(meta_field, MISSING) if meta_field is not None else MISSING
        if meta is MISSING:
            return MISSING, MISSING
        if type(meta) is dict or type(meta) is list:
            meta, key = self._normalized_meta(meta)
            measurement[meta_field] = meta  # stored and returned normalized (spec §3.6)
            return meta, key
        return meta, meta_key(meta)

    def insert(self, state: CollectionState, measurement: dict, t_ms: int, time_value: Any,
               loader: Loader | None = None) -> OpenBucket:
        """Route one validated measurement to its bucket, applying the rollover rules of spec §3.3
        (7.0 form), and append it. Returns the bucket it went to."""
        meta, key = self._meta_and_key(state.options.meta_field, measurement)
        bucket, size = self._route(state, key, meta, measurement, t_ms, loader)
        bucket.append(measurement, t_ms, time_value, size)
        self._appended(bucket, [measurement], size)
        return bucket

    def insert_batch(self, state: CollectionState, batch: Any, loader: Loader | None = None) -> bool:
        """Route a raw batch (``rawbatch.parse``) column-wise (``ingest_columns``); False when it must
        take the general path instead (nothing was changed)."""
        from server.timeseries.ingest_columns import insert_batch

        return insert_batch(self, state, batch, loader)

    def insert_many(self, state: CollectionState, items: list[tuple[dict, int, Any]],
                    loader: Loader | None = None) -> None:
        """Route a batch of validated ``(measurement, t_ms, time_value)``: same result as calling
        ``insert`` for each in order, but runs of same-shaped measurements of one series are appended
        column-wise (the hot path of large inserts)."""
        meta_field = state.options.meta_field
        groups: dict[Any, tuple[Any, list]] = {}
        for item in items:
            meta, key = self._meta_and_key(meta_field, item[0])
            group = groups.get(key)
            if group is None:
                groups[key] = group = (meta, [])
            group[1].append(item)
        for key, (meta, group) in groups.items():
            self._insert_group(state, key, meta, group, loader)

    def _insert_group(self, state: CollectionState, key: Any, meta: Any, group: list,
                      loader: Loader | None) -> None:
        span_ms = state.options.bucket_max_span_seconds * 1000
        max_count, max_size = self.max_count, self.max_size
        i, n = 0, len(group)
        while i < n:
            measurement, t_ms, time_value = group[i]
            bucket, size = self._route(state, key, meta, measurement, t_ms, loader)
            known = bucket._shape  # a shape the bucket already holds a measurement of
            shape = bucket.shape_of(measurement)
            if shape is None:
                bucket.append(measurement, t_ms, time_value, size)
                self._appended(bucket, [measurement], size)
                i += 1
                continue
            if i + 1 == n:
                if shape is known:
                    bucket.append_shaped(measurement, t_ms, time_value, size, shape)
                else:
                    bucket.append(measurement, t_ms, time_value, size)
                self._appended(bucket, [measurement], size)
                i += 1
                continue
            keys, types, fixed, str_fields = shape[:4]
            start_ms = bucket.start_s * 1000
            end_ms = start_ms + span_ms
            room = max_count - bucket.count
            budget = max_size - bucket.size  # past it, each measurement goes through _route's size rules
            sizes = [size]
            budget -= size
            j = i + 1
            while j < n and j - i < room:
                m, t, _ = group[j]
                if not start_ms <= t < end_ms or tuple(m) != keys or tuple(map(type, m.values())) != types:
                    break
                size = fixed + sum(len(m[f]) for f in str_fields) if str_fields else fixed
                if size > budget:
                    break
                budget -= size
                sizes.append(size)
                j += 1
            if j == i + 1:  # a run of one: the per-measurement append is cheaper
                bucket.append(measurement, t_ms, time_value, sizes[0])
                self._appended(bucket, [measurement], sizes[0])
            else:
                run = group[i:j]
                bucket.append_run(run, keys, sizes)
                self._appended(bucket, [item[0] for item in run], sum(sizes))
            i = j

    def _appended(self, bucket: OpenBucket, measurements: list[dict], size: int) -> None:
        bucket.pending.extend(measurements)
        self.memory += size * PYTHON_OVERHEAD
        ref = id(bucket)
        self.dirty[ref] = bucket
        lru = self.lru
        if lru.get(ref) is not bucket:
            lru[ref] = bucket
        lru.move_to_end(ref)
        if self.memory > self.memory_threshold:
            self._expire_idle()

    def _route(self, state: CollectionState, key: Any, meta: Any, measurement: dict, t_ms: int,
               loader: Loader | None) -> tuple[OpenBucket, int]:
        """The bucket ``measurement`` goes to (rolling over the open one when a rule says so), and the
        measurement's size in that bucket."""
        stats = state.stats
        bucket = state.open.get(key)
        if type(bucket) is ColumnarBucket:
            bucket = self._convert(state, bucket)
        if bucket is None:
            bucket = self._reopen(state, key, t_ms, measurement, loader)
            if bucket is None:
                stats["numBucketsOpenedDueToMetadata"] += 1
        else:
            start_ms = bucket.start_s * 1000
            if t_ms - start_ms >= state.options.bucket_max_span_seconds * 1000 or t_ms < start_ms:
                forward = t_ms >= start_ms
                stats["numBucketsArchivedDueToTimeForward" if forward else "numBucketsArchivedDueToTimeBackward"] += 1
                self._retire(state, bucket, archive=True)
                bucket = self._reopen(state, key, t_ms, measurement, loader)
            else:
                shape = bucket._shape
                if (shape is not None and shape[0] == tuple(measurement)
                        and shape[1] == tuple(map(type, measurement.values()))):
                    # a shape the bucket already holds: no schema change possible, size without dispatch
                    size = bucket.shaped_size(measurement, shape)
                    reason = bucket.rollover_reason(measurement, self.max_count, self.max_size, self.min_count,
                                                    self.large_cap, size, schema_checked=True)
                else:
                    size = bucket.measurement_size(measurement)
                    reason = bucket.rollover_reason(measurement, self.max_count, self.max_size, self.min_count,
                                                    self.large_cap, size)
                if reason is None:
                    return bucket, size
                if reason is KEPT_OPEN:
                    stats["numBucketsKeptOpenDueToLargeMeasurements"] += 1
                    return bucket, size
                stats["numBucketsClosedDueTo" + reason] += 1
                self._retire(state, bucket, archive=False)
                bucket = None
        if bucket is None:
            bucket = self._open(state, meta, key, t_ms)
        return bucket, bucket.measurement_size(measurement)

    def _normalized_meta(self, meta: Any) -> tuple[Any, Any]:
        """(normalized meta, grouping key) of an object/array meta, cached by its exact BSON bytes (or, for
        a flat object of scalars, by its names, value types and values)."""
        raw: Any = None
        if type(meta) is dict:
            values = tuple(meta.values())
            types = tuple(map(type, values))
            if _SCALAR_META_TYPES.issuperset(types):
                # a flat object of strings/ints/bools/nulls: these compare (and hash) equal exactly when
                # their BSON is equal once the types match, so names, types and values make the key
                raw = (tuple(meta), types, values)
        if raw is None:
            raw = bson.encode({"": meta}, codec_options=CODEC_OPTIONS)
        cached = self._meta_cache.get(raw)
        if cached is None:
            normalized = normalize_meta(meta)
            if len(self._meta_cache) >= META_CACHE_SIZE:
                self._meta_cache.clear()
            cached = self._meta_cache[raw] = (normalized, meta_key(normalized))
        return cached

    def _open(self, state: CollectionState, meta: Any, key: Any, t_ms: int) -> OpenBucket:
        options = state.options
        start_s = round_start_seconds(t_ms, options.bucket_rounding_seconds)
        bucket = OpenBucket(new_bucket_id(start_s), state.ns, options.time_field, options.meta_field, meta, start_s)
        state.open[key] = bucket
        state.live[bucket.id] = bucket
        self.memory += self._footprint(bucket)
        return bucket

    def _convert(self, state: CollectionState, columnar: ColumnarBucket) -> OpenBucket:
        """Replace a column-wise bucket by a general-path ``OpenBucket`` with the same id and rows (the
        general path is about to append to it). Its next commit writes it in full, which also covers
        the journal records that hold its rows."""
        options = state.options
        bucket = OpenBucket(columnar.id, state.ns, options.time_field, options.meta_field, columnar.meta,
                            columnar.start_s)
        time_field = options.time_field
        for measurement in columnar.measurements():
            time_value = measurement[time_field]
            bucket.append(measurement, date_ms(time_value), time_value)
        bucket.open = columnar.open
        bucket.committed = columnar.committed
        bucket.full_size = columnar.full_size
        bucket.needs_full = True
        self.memory += self._footprint(bucket) - self._footprint(columnar)
        if state.open.get(columnar.key) is columnar:
            state.open[columnar.key] = bucket
        if state.live.get(columnar.id) is columnar:
            state.live[columnar.id] = bucket
        self.dirty[id(bucket)] = bucket
        self.dirty.pop(id(columnar), None)
        if bucket.open:
            self.lru[id(bucket)] = bucket
        columnar.successor = bucket
        columnar.finish(columnar.document_bytes())
        return bucket

    def _retire(self, state: CollectionState, bucket: OpenBucket | ColumnarBucket, *, archive: bool) -> None:
        """Close (or archive) an open bucket: its full document goes out with the next commit."""
        if type(bucket) is ColumnarBucket:
            bucket.table.unlink(bucket)
        if state.open.get(bucket.key) is bucket:
            del state.open[bucket.key]
        bucket.open = False
        bucket.needs_full = True
        self.dirty[id(bucket)] = bucket
        self.lru.pop(id(bucket), None)
        if archive:
            archived = state.archived.setdefault(bucket.key, [])
            archived.append((bucket.start_s, bucket.id))
            if len(archived) > MAX_ARCHIVED_PER_SERIES:
                del archived[0]  # the oldest ranges are the least likely to receive late data

    def _reopen(self, state: CollectionState, key: Any, t_ms: int, measurement: dict,
                loader: Loader | None) -> OpenBucket | None:
        """An archived bucket of ``key`` whose range holds ``t_ms`` and that can take the measurement."""
        for candidates, index, bucket_id in reopen_candidates(state, key, t_ms):
            bucket = state.live.get(bucket_id)
            if type(bucket) is ColumnarBucket:
                bucket = self._convert(state, bucket)
            if bucket is None and loader is not None:
                doc = loader(state.ns, bucket_id)
                if doc is not None:
                    options = state.options
                    bucket = OpenBucket.from_document(doc, state.ns, options.time_field, options.meta_field)
                    bucket.committed = True
                    state.live[bucket.id] = bucket
                    self.memory += self._footprint(bucket)
            if bucket is None or bucket.count >= self.max_count:
                del candidates[index]
                continue
            if bucket.rollover_reason(measurement, self.max_count, self.max_size, self.min_count,
                                      self.large_cap) not in (None, KEPT_OPEN):
                continue
            del candidates[index]
            bucket.open = True
            state.open[key] = bucket
            state.stats["numBucketsReopened"] += 1
            return bucket
        return None

    def _expire_idle(self) -> None:
        """Close up to ``expiry_per_attempt`` least-recently-used open buckets with nothing uncommitted
        (looking at a bounded number of candidates, so a busy catalog costs O(1) per insert)."""
        closed = 0
        for bucket_ref, bucket in list(itertools.islice(self.lru.items(), EXPIRY_SCAN_LIMIT)):
            if closed >= self.expiry_per_attempt:
                break
            if bucket.pending or bucket.needs_full:
                continue
            state = self.collections.get(bucket.ns)
            if state is None:
                self.lru.pop(bucket_ref, None)
                continue
            state.stats["numBucketsClosedDueToMemoryThreshold"] += 1
            self._retire(state, bucket, archive=False)
            closed += 1
        if closed < self.expiry_per_attempt:
            self._expire_idle_columnar(self.expiry_per_attempt - closed)

    def _expire_idle_columnar(self, budget: int) -> None:
        """Close up to ``budget`` idle column-wise open buckets (nothing uncommitted), least recently
        used first."""
        candidates: list[tuple[int, ColumnarBucket]] = []
        for state in self.collections.values():
            for table in state.tables.values():
                slots = table.series_slot[table.series_slot >= 0]
                idle = slots[(table.count[slots] == table.durable[slots]) & ~table.dirty[slots]]
                for slot in idle[np.argsort(table.last_used[idle])[:budget]].tolist():
                    candidates.append((int(table.last_used[slot]), table.buckets[slot]))
        for _, bucket in sorted(candidates, key=lambda c: c[0])[:budget]:
            state = self.collections[bucket.ns]
            state.stats["numBucketsClosedDueToMemoryThreshold"] += 1
            self._retire(state, bucket, archive=False)

    def close_all(self, ns: str) -> int:
        """Close every live bucket of ``ns`` (full write at the next commit) and forget the archive,
        so that nothing reopens them; returns how many buckets await their full write."""
        state = self.collections.get(ns)
        if state is None:
            return 0
        targets = list(state.live.values())
        for bucket in targets:
            if bucket.open:
                self._retire(state, bucket, archive=False)
            else:
                bucket.needs_full = True
                self.dirty[id(bucket)] = bucket
        state.archived.clear()
        return len(targets)

    def checkpoint_all(self, *, force: bool = False) -> int:
        """Mark live buckets with journal records for a full write (the periodic checkpoint).

        Unless ``force``, a bucket is rewritten only once it has at least doubled since its last full
        write: full writes then total at most about twice a bucket's final size (no O(n^2) rewriting of
        growing buckets), while the journal to replay stays below about half of the open data."""
        marked = 0
        for state in self.collections.values():
            for bucket in state.live.values():
                if bucket.journaled and not bucket.needs_full and (force or bucket.size >= 2 * bucket.full_size):
                    bucket.needs_full = True
                    self.dirty[id(bucket)] = bucket
                    marked += 1
        return marked

    # ------------------------------------------------------------------ commit bookkeeping
    def take_dirty(self) -> list[OpenBucket | ColumnarBucket]:
        buckets = list(self.dirty.values())
        self.dirty.clear()
        return buckets

    def take_dirty_tables(self) -> list[SeriesTable]:
        """Tables with rows appended since the last drain (their ``dirty`` slots say which)."""
        tables = list(self.dirty_tables)
        self.dirty_tables.clear()
        return tables

    def written_full(self, bucket: OpenBucket | ColumnarBucket, document: bytes | None = None) -> None:
        """Called after a commit made ``bucket``'s full document (``document``, for a column-wise
        bucket) durable."""
        if not bucket.open and not bucket.needs_full and not bucket.pending:
            state = self.collections.get(bucket.ns)
            if state is not None and state.live.get(bucket.id) is bucket:
                del state.live[bucket.id]
                self.memory = max(self.memory - self._footprint(bucket), 0)
                if type(bucket) is ColumnarBucket and document is not None:
                    bucket.finish(document)

    @staticmethod
    def _footprint(bucket: OpenBucket) -> int:
        return bucket.size * PYTHON_OVERHEAD + BUCKET_OVERHEAD

    # ------------------------------------------------------------------ statistics
    def collection_stats(self, ns: str) -> dict[str, Any]:
        """Execution stats of one collection in collStats order (spec §3.4)."""
        state = self.collections.get(ns)
        stats = dict(state.stats) if state else dict.fromkeys(STAT_NAMES, 0)
        if stats["numCommits"]:
            stats["avgNumMeasurementsPerCommit"] = stats["numMeasurementsCommitted"] // stats["numCommits"]
        return stats

    def server_status(self) -> dict[str, Any]:
        """``serverStatus().bucketCatalog``."""
        num_open = sum(len(s.open) for s in self.collections.values())
        num_live = sum(len(s.live) for s in self.collections.values())
        idle = sum(1 for b in self.lru.values() if not b.pending)
        for state in self.collections.values():
            for table in state.tables.values():
                slots = table.series_slot[table.series_slot >= 0]
                idle += int((table.count[slots] == table.durable[slots]).sum())
        return {
            "numBuckets": num_live,
            "numOpenBuckets": num_open,
            "numIdleBuckets": idle,
            "numArchivedBuckets": sum(len(v) for s in self.collections.values() for v in s.archived.values()),
            "memoryUsage": self.memory,
        }


_ = (COUNT, SIZE, SCHEMA)  # rollover reasons are the suffixes of the numBucketsClosedDueTo* stats
