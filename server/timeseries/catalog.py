"""The bucket catalog: the only time-series state of the process, and the only code that changes a
bucket's lifecycle state (through states.move).

Invariants
- Per (collection, series): at most one OPEN bucket (``series.open[sid]``); ARCHIVED buckets of the
  series are in ``series.archived[sid]`` (newest last) and in their table's hot list.
- ``live[ns]`` holds every bucket in memory (OPEN, ARCHIVED, CLOSED): readers merge these over the
  stored ``system.buckets`` records (in-memory wins by ``_id``). A bucket leaves ``live`` only when its
  full document is durable (STORED) or it is frozen.
- ``series.queried[sid]`` is True when every reopenable bucket of the series is in memory (a stored
  one was looked for since the last time one left memory): only then may a new bucket be opened
  without asking storage (reopen.py).
- Mutated only on the event loop; commits read per-slot arrays and column lists as they were at their
  drain (rows below a commit's end do not change while it runs).
- ``memory`` accounts the memory of everything the catalog holds: per live bucket its Python objects
  and its series (``BUCKET_OVERHEAD``, ``META_COPIES`` x its meta's bytes), its table slot row (``Table.row_bytes``, counted by the table's
  ``Meter``: a pure bucket's values) and, while it is not pure, ``PYTHON_OVERHEAD`` per BSON byte
  appended (``footprint``; ``Bucket.charged`` holds what was counted, given back when it leaves).
  Above the threshold
  (``timeseriesIdleBucketExpiryMemoryUsageThreshold``, read at every insert) each new bucket first
  closes up to ``timeseriesIdleBucketExpiryMaxCountPerAttempt`` idle buckets, least recently used
  first (``expiry``: a queue in CLOCK order, amortized O(1) per new bucket): memory stays within the
  threshold plus the buckets not yet committed. Buckets closed and awaiting their full write
  (``leaving``) are memory about to be freed: expiry does not close more for them.
- Every ARCHIVED bucket has an entry in ``archive_queue`` queued when it was last archived, at or after
  its last append (only OPEN buckets take rows): the retire pass reads the queue's old end, never
  every series. Maintenance work that does walk every bucket (the checkpoint) runs in slices of at
  most ``MAINTENANCE_SLICE`` buckets (``checkpoint_slices``), the caller yielding the loop in between.
"""

from __future__ import annotations

import contextlib
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any, cast

import numpy as np
from bson.objectid import ObjectId

from tidemark.protocol.codec import decode
from tidemark.timeseries import rules
from tidemark.timeseries.bucket import Bucket
from tidemark.timeseries.bucketdoc import (
    MISSING,
    MetaPoint,
    date_ms,
    meta_key,
    meta_points,
    new_bucket_id,
    normalize_meta,
    round_start_seconds,
)
from tidemark.timeseries.columns import ConstColumn, ObjectColumn, to_array, typed_kind
from tidemark.timeseries.options import TimeseriesOptions
from tidemark.timeseries.rules import Action, Rollover
from tidemark.timeseries.states import IN_MEMORY, Event, State, move, move_all
from tidemark.timeseries.table import Meter, Table

# the execution statistics in mongod 7.0's order (collStats ``timeseries``, serverStatus ``bucketCatalog``;
# its appendExecutionStatsToBuilder: the 5.0 set, the commit counters and their average, then the
# reopening ones); the rollover ones are counted as their ``rules.Rollover`` member says. mongod 7.0's
# numBucketsClosedDueToTimeForward/TimeBackward (its time rules close when archiving is off) and
# numBucketsArchivedDueToMemoryThreshold (it archives idle buckets before closing them) stay 0 here:
# both time rules archive, and memory pressure closes idle buckets (Rollover.MEMORY_THRESHOLD); so do
# numBucketsClosedDueToReopening (a bucket reopens here only once its series' open one rolled over),
# numBucketsClosedDueToCachePressure (no storage cache derives a bucket size), numBucketFetchesFailed
# (an archived bucket is in memory: nothing to fetch that could be missing) and
# numDuplicateBucketsReopened. numBucketsArchivedDueToTimeForward is Tidemark's (7.0 soft-closes on time
# forward), kept beside its sibling. Reopening (mongod counts its two ways to find a bucket): an
# archived or parting bucket of the catalog becoming open again is *fetched* (mongod fetches an
# archived bucket by its _id); a stored one found by the query is *queried*, a query answering none
# failed; a found bucket that is not reopened (it cannot take the measurement, or its rows are not
# dense) failed to reopen. So numBucketsReopened = numBucketsFetched + numBucketsQueried -
# numBucketReopeningsFailed (tests/timeseries/test_reopen_counters.py).
# mongod 7.0's compression counters (TimeseriesStats, appended last; "TODO(SERVER-70605): Remove these"),
# counted at each full write of a bucket by what it grew since the one before (commit.py): a bucket
# counts once however often it is written in full, as an uncompressed one (Tidemark serves the version 1
# layout; its storage compresses pages, which storageSize shows)
COMPRESSION_STAT_NAMES = ("numBytesUncompressed", "numBytesCompressed", "numSubObjCompressionRestart",
                          "numCompressedBuckets", "numUncompressedBuckets", "numFailedDecompressBuckets")
STAT_NAMES = (
    "numBucketInserts", "numBucketUpdates", "numBucketsOpenedDueToMetadata", "numBucketsClosedDueToCount",
    "numBucketsClosedDueToSchemaChange", "numBucketsClosedDueToSize", "numBucketsClosedDueToTimeForward",
    "numBucketsClosedDueToTimeBackward", "numBucketsClosedDueToMemoryThreshold",
    "numCommits", "numWaits", "numMeasurementsCommitted",  # (avgNumMeasurementsPerCommit follows: _ordered)
    "numBucketsClosedDueToReopening", "numBucketsArchivedDueToMemoryThreshold",
    "numBucketsArchivedDueToTimeForward", "numBucketsArchivedDueToTimeBackward", "numBucketsReopened",
    "numBucketsKeptOpenDueToLargeMeasurements", "numBucketsClosedDueToCachePressure", "numBucketsFetched",
    "numBucketsQueried", "numBucketFetchesFailed", "numBucketQueriesFailed", "numBucketReopeningsFailed",
    "numDuplicateBucketsReopened", *COMPRESSION_STAT_NAMES,
)
PYTHON_OVERHEAD = 3  # in-memory bytes per approximate BSON byte of a bucket
# Python objects per live bucket, its series included (Bucket, ObjectId, live entry, memo, expiry entry;
# series key, meta, raw meta bytes and map entries): measured ~1.3 KB with tracemalloc, kept generous
# (allocator slack); the bucket's table slot row is counted by its table (Table.row_bytes)
BUCKET_OVERHEAD = 2048
# in-memory bytes per BSON byte of a bucket's meta: its series holds the meta three times (the
# normalized value, its key and the raw bytes it was sent as); 10 KB metas of 3,000 series took 96 MB
# of anonymous memory, 32 KB per series, which BUCKET_OVERHEAD alone counted as 2.6 KB
META_COPIES = 3
# what one meta point of a live bucket holds in ``CollectionState.points`` (its tuple, the entry in its
# point's dict, that dict's share): measured ~195 B with tracemalloc (200,000 buckets, two string leaves)
POINT_BYTES = 200
EXPIRY_QUEUE_MIN = 4096  # the expiry queue is compacted when longer than this and 4x its last compaction
EXPIRY_SCAN_LIMIT = 64  # expiry candidates examined per attempt (busy ones go to the back of the queue)
ARCHIVED_IDLE_MS = 2000  # an archived bucket not reopened for this long is written in full and leaves memory
MAX_ARCHIVED_PER_SERIES = 64
# idle archived buckets retired per slice of the maintenance pass (the loop is yielded between slices);
# a pass takes every bucket due, slice after slice: a cap per pass let an ordered load that archives
# faster than the cap (~400 buckets/s at 100 hosts) pile archived buckets up for as long as it lasted,
# so peak memory grew with the data loaded (bench.scaling: +230 MB anonymous at 16 days)
RETIRE_PER_PASS = 256
# buckets a slice of maintenance examines before the loop is yielded (~1 us each: a few ms per slice;
# a checkpoint over the ~220,000 buckets of a series explosion in one go held the loop ~0.5 s, and the
# drain that took all it marked another ~0.5 s)
MAINTENANCE_SLICE = 1024


# a table's arrays shrink only once they have not grown for this long: a time-ordered load empties and
# refills its tables at every bucket span (the archived buckets leave, the new ones start small), and
# shrinking between would copy every array down and up again each span (~4 % of the event loop with
# the page faults of the fresh arrays, bench ordered load); an idle table still shrinks a pass later
SHRINK_AFTER_MS = 10_000


def now_ms() -> int:
    return time.monotonic_ns() // 1_000_000


class Series:
    """The series (distinct normalized metas) of one collection: ids, keys, and each one's buckets.

    A series id is released once no bucket of it is in memory (``held[sid]`` 0, nothing routable): first
    its key leaves the maps (``unmap``: a later measurement of that meta registers it again), then, once
    no insert that computed its series ids before the unmapping is still routing (the catalog's pins),
    the id is reused (``free``). So the per-series lists stay as long as the most series ever held in
    memory at once, not the number of series ever seen."""

    def __init__(self) -> None:
        self.sid_of_raw: dict[tuple[int | None, bytes], int] = {}  # (meta BSON type, value bytes) -> sid
        self.sid_of_key: dict[Any, int] = {}
        self.keys: list[Any] = []
        self.metas: list[Any] = []
        self.open: list[Bucket | None] = []
        self.archived: list[list[Bucket]] = []
        # buckets of the series closed for memory or retired whose full write is not yet durable
        # (``BucketCatalog.resume``): still reopenable, as mongod reopens the stored bucket it closed
        self.parting: dict[int, list[Bucket]] = {}
        self.queried: list[bool] = []
        self.held: list[int] = []  # buckets of the series in memory (any state)
        self.raws: list[Any] = []  # the sid_of_raw keys of the series: None, one key, or a list of keys
        self.empty: list[int] = []  # series whose last bucket left memory (checked again when unmapped)
        self.unmapped: deque[tuple[int, int]] = deque()  # (catalog epoch when unmapped, sid)
        self.free: list[int] = []  # ids to reuse

    def sid(self, key: Any, meta: Any) -> int:
        sid = self.sid_of_key.get(key)
        if sid is None:
            if self.free:
                sid = self.free.pop()
                self.keys[sid], self.metas[sid] = key, meta
                self.queried[sid] = False
            else:
                sid = len(self.keys)
                self.keys.append(key)
                self.metas.append(meta)
                self.open.append(None)
                self.archived.append([])
                self.queried.append(False)
                self.held.append(0)
                self.raws.append(None)
            self.sid_of_key[key] = sid
        return sid

    def __len__(self) -> int:
        """Series ids in use (registered and not released)."""
        return len(self.keys) - len(self.free) - len(self.unmapped)

    def routable(self, sid: int) -> bool:
        return self.held[sid] > 0 or self.open[sid] is not None or bool(self.archived[sid])

    def unmap(self, epoch: int) -> int:
        """Series whose last bucket left memory leave the maps (see the class); returns how many."""
        done = 0
        empty, self.empty = self.empty, []
        for sid in empty:
            if self.routable(sid) or self.sid_of_key.get(self.keys[sid]) != sid:
                continue
            del self.sid_of_key[self.keys[sid]]
            raws = self.raws[sid]
            for raw in (raws if type(raws) is list else (raws,) if raws is not None else ()):
                if self.sid_of_raw.get(raw) == sid:
                    del self.sid_of_raw[raw]
            self.raws[sid] = None
            self.unmapped.append((epoch, sid))
            done += 1
        return done

    def reuse(self, oldest_pin: int | None, tables: Any) -> None:
        """Ids unmapped before every insert still routing computed its series ids become free (an
        insert that routed a measurement to one meanwhile made it hold a bucket: it is mapped again,
        unless its meta was registered anew)."""
        unmapped = self.unmapped
        while unmapped and (oldest_pin is None or unmapped[0][0] < oldest_pin):
            _, sid = unmapped.popleft()
            if self.routable(sid):
                self.sid_of_key.setdefault(self.keys[sid], sid)
                continue
            for table in tables:
                table.forget_series(sid)
            self.keys[sid] = self.metas[sid] = None
            self.queried[sid] = False
            self.free.append(sid)

    def sids_of_raw(self, kind: int | None, raws: list[bytes] | None, n: int) -> np.ndarray | None:
        """Series id of each raw meta value (None: the documents have no meta field); None when a meta
        value is not valid BSON (the batch then takes the per-document parse, which reports it)."""
        if raws is None:
            return np.full(n, self.sid(MISSING, MISSING), np.int64)
        get = self.sid_of_raw.get
        sids: list[int | None] = [get((kind, raw), -1) for raw in raws]
        if -1 in sids:
            for i, sid in enumerate(sids):
                if sid == -1:
                    sid = self._register(cast(int, kind), raws[i])  # raws: the meta field's type
                    if sid is None:
                        return None
                    sids[i] = sid
        return np.asarray(sids, np.int64)

    def _register(self, kind: int, raw: bytes) -> int | None:
        found = self.sid_of_raw.get((kind, raw))
        if found is not None:
            return found
        element = bytes((kind,)) + b"\x00" + raw
        try:
            value = decode((len(element) + 5).to_bytes(4, "little") + element + b"\x00")[""]
        except Exception:  # noqa: BLE001 - invalid BSON: reported by the per-document parse (22)
            return None
        normalized = normalize_meta(value)
        sid = self.sid(meta_key(normalized), normalized)
        if len(self.sid_of_raw) < 1_000_000:
            key = (kind, raw)
            self.sid_of_raw[key] = sid
            known = self.raws[sid]
            self.raws[sid] = key if known is None else [known, key] if type(known) is tuple else known + [key]
        return sid


class CollectionState:
    """One time-series collection's in-memory buckets (``live``, by ``_id``: every bucket in memory, in
    any state) and what inserts route by. ``live`` changes only through ``enter``/``leave``, which keep
    ``points`` — the live buckets by meta point (``bucketdoc.meta_points``) — and ``array_metas`` — how
    many live buckets have a meta holding an array — equal to what ``live`` holds."""

    __slots__ = ("ns", "options", "collation", "tables", "series", "live", "stats", "last_layout", "meter", "points",
                 "array_metas")

    def __init__(self, ns: str, options: TimeseriesOptions, meter: Meter | None = None, collation: Any = None):
        self.ns = ns  # the buckets namespace, "db.system.buckets.c"
        self.options = options
        self.collation = collation  # the collection's default (collation.Collation, None = simple): fixed
        self.meter = meter if meter is not None else Meter()
        self.tables: dict[tuple[Any, ...], Table] = {}
        self.series = Series()
        self.live: dict[Any, Bucket] = {}
        self.points: dict[MetaPoint, dict[Any, Bucket]] = {}
        self.array_metas = 0
        self.stats: dict[str, int] = dict.fromkeys(STAT_NAMES, 0)
        self.last_layout: Any = None  # the layout of the last raw batch (tried first on the next one)

    def enter(self, bucket: Bucket) -> None:
        """``bucket`` is in memory (replacing a bucket object of the same ``_id``, if any)."""
        held = self.live.get(bucket.id)
        if held is not None and held is not bucket:
            self._unindex(held)
        elif held is bucket:
            return
        self.live[bucket.id] = bucket
        points = meta_points(bucket.meta)
        if points is None:
            self.array_metas += 1
            return
        index = self.points
        for point in points:
            at = index.get(point)
            if at is None:
                index[point] = {bucket.id: bucket}
            else:
                at[bucket.id] = bucket
        self.meter.bytes += POINT_BYTES * len(points)

    def leave(self, bucket: Bucket) -> bool:
        """``bucket`` left memory; False when it was not the collection's bucket of its ``_id``."""
        if self.live.get(bucket.id) is not bucket:
            return False
        del self.live[bucket.id]
        self._unindex(bucket)
        return True

    def _unindex(self, bucket: Bucket) -> None:
        points = meta_points(bucket.meta)
        if points is None:
            self.array_metas -= 1
            return
        index = self.points
        for point in points:
            at = index.get(point)
            if at is not None and at.get(bucket.id) is bucket:
                del at[bucket.id]
                if not at:
                    del index[point]
        self.meter.bytes -= POINT_BYTES * len(points)

    def buckets_at(self, alternatives: list[tuple[MetaPoint, ...]]) -> list[Bucket] | None:
        """The live buckets holding one of the points of an alternative — the one with the fewest — or
        None when they cannot answer (no alternative, or a live meta holds an array). A read whose
        filter implies its meta holds one of an alternative's points (the meta equals one of its
        values) needs no other in-memory bucket. Safe off the loop: each dict is copied by one C call."""
        if not alternatives or self.array_metas:
            return None
        index = self.points
        best: list[dict[Any, Bucket]] | None = None
        fewest = -1
        for points in alternatives:
            found = [at for at in (index.get(point) for point in points) if at]
            n = sum(len(at) for at in found)
            if best is None or n < fewest:
                best, fewest = found, n
        assert best is not None
        if len(best) == 1:
            return list(best[0].values())
        unique: dict[Any, Bucket] = {}
        for at in best:
            unique.update(at.copy())  # (a bucket holding two of the points comes once)
        return list(unique.values())

    def table(self, key: tuple[Any, ...]) -> Table:
        table = self.tables.get(key)
        if table is None:
            table = self.tables[key] = Table(key, self.ns, self.options.time_field, self.meter, self.collation)
        return table


class BucketCatalog:
    def __init__(self, *, memory_threshold: int | None = None):
        # the threshold when the parameter is 0 (2.5 % of RAM); ``limits`` carries the one in force
        self.memory_threshold = rules.memory_threshold(memory_threshold or 0)
        self.limits = rules.Limits(memory_threshold=self.memory_threshold)  # of the insert routing now
        self.collections: dict[str, CollectionState] = {}
        self.dirty: dict[int, Bucket] = {}  # buckets with rows or a full write to commit (not via a table)
        self.dirty_tables: set[Table] = set()  # tables whose ``dirty`` slots have rows to commit
        self.meter = Meter()  # ``memory``: shared with the tables, which count their slot rows in it
        self.clock = now_ms()
        self.direct_writes: dict[str, int] = {}  # ns -> direct writes in progress (no reopening by query)
        # collections a direct write reached in this process: a bucket stored there may hold an _id this
        # process's counter makes next (ids are otherwise unique: their 5 middle bytes are random per
        # process), so a new bucket's id is checked against storage (``open``'s ``taken``)
        self.foreign_ids: set[str] = set()
        # expiry candidates, least recently queued first: (weak bucket, last_used when queued, ``commits``
        # when make_room found it busy, else -1)
        self.expiry: deque[tuple[weakref.ref[Bucket], int, int]] = deque()
        # drains and commits done (commit.Committer): a bucket found busy since the last is busy still
        self.commits = 0
        self._expiry_limit = EXPIRY_QUEUE_MIN
        # buckets reopened by query and not used since the routing that loaded them, oldest first:
        # (weak bucket, clock when loaded). ``make_room`` closes these first (see there)
        self.probation: deque[tuple[weakref.ref[Bucket], int]] = deque()
        self._probation_limit = EXPIRY_QUEUE_MIN
        # archived buckets, oldest archive first: (weak bucket, clock when archived); see the invariants
        self.archive_queue: deque[tuple[weakref.ref[Bucket], int]] = deque()
        self.leaving: dict[int, int] = {}  # id(bucket) -> bytes: closed or retired, awaiting the full write
        self.leaving_bytes = 0
        self.deferred = 0  # full writes the last drain left for the next commit (commit.py)
        # buckets whose only work is their full write, spread over commits (commit.drain): those
        # leaving memory (closed, retired), then the others (checkpoints). Weak: an entry never keeps
        # a bucket that left memory (with the full document it keeps for late readers) alive
        self.queued_fulls: tuple[deque[weakref.ref[Bucket]], deque[weakref.ref[Bucket]]] = (deque(), deque())
        self._queued_limit = EXPIRY_QUEUE_MIN  # (``compact_queued``)
        self.epoch = 0  # series unmapping rounds (Series.unmap)
        self.pins: dict[int, int] = {}  # inserts between computing series ids and routing -> epoch then
        self._pin_ids = 0

    @property
    def memory(self) -> int:
        return self.meter.bytes

    @memory.setter
    def memory(self, value: int) -> None:
        self.meter.bytes = value

    @contextlib.contextmanager
    def pinned(self) -> Iterator[None]:
        """Held by an insert from computing its series ids until its rows are routed: no series id it
        may hold is reused meanwhile (Series)."""
        self._pin_ids += 1
        token = self._pin_ids
        self.pins[token] = self.epoch
        try:
            yield
        finally:
            del self.pins[token]

    def release_series(self) -> None:
        """Series with no bucket in memory leave the maps; ids unmapped before every pinned insert
        started are reused (amortized O(1) per bucket that left memory)."""
        oldest = min(self.pins.values()) if self.pins else None
        for state in self.collections.values():
            series = state.series
            if series.empty:
                series.unmap(self.epoch)
            if series.unmapped:
                series.reuse(oldest, state.tables.values())
        self.epoch += 1

    # ------------------------------------------------------------------ collections
    def collection(self, ns: str, options: TimeseriesOptions, collation: Any = None) -> CollectionState:
        """``collation``: the collection's default (``collation.Collation``; a collection keeps it for
        life, so the state takes it once)."""
        state = self.collections.get(ns)
        if state is None:
            state = self.collections[ns] = CollectionState(ns, options, self.meter, collation)
        elif state.options != options:
            state.options = options  # collMod: open buckets keep going; new buckets use the new options
        return state

    def get(self, ns: str) -> CollectionState | None:
        return self.collections.get(ns)

    @contextlib.contextmanager
    def direct_write(self, ns: str) -> Iterator[None]:
        """While held, no bucket of ``ns`` is reopened from storage; afterwards every series asks
        storage again (the write may have changed what it holds)."""
        self.direct_writes[ns] = self.direct_writes.get(ns, 0) + 1
        self.foreign_ids.add(ns)
        try:
            yield
        finally:
            self.direct_writes[ns] -= 1
            if not self.direct_writes[ns]:
                del self.direct_writes[ns]
            state = self.collections.get(ns)
            if state is not None:
                state.series.queried = [False] * len(state.series.queried)

    def live_buckets(self, ns: str, alternatives: list[tuple[MetaPoint, ...]] | None = None) -> list[Bucket]:
        """The in-memory buckets of ``ns``; with ``alternatives`` (see ``CollectionState.buckets_at``)
        only those a read whose meta must hold one of them can match, when the catalog can tell."""
        state = self.collections.get(ns)
        if state is None:
            return []
        if alternatives:
            found = state.buckets_at(alternatives)
            if found is not None:
                return found
        return list(state.live.values())

    def forget(self, ns: str, *, keep_stats: bool = False) -> None:
        """Drop every bucket of ``ns`` from memory without writing it (the collection is dropped, or every
        bucket was written in full); ``keep_stats`` keeps the collection's statistics."""
        state = self.collections.pop(ns, None)
        if state is None:
            return
        if keep_stats:
            fresh = self.collections[ns] = CollectionState(ns, state.options, self.meter, state.collation)
            fresh.stats = state.stats
        for bucket in list(state.live.values()):
            state.leave(bucket)  # (its meta points' bytes leave the meter)
            self.memory -= bucket.charged
            self.leaving_bytes -= self.leaving.pop(id(bucket), 0)
            self.dirty.pop(id(bucket), None)
            move(bucket, Event.FREEZE)
            bucket.leave(None)
        self.memory = max(self.memory, 0)
        self.dirty_tables.difference_update(state.tables.values())

    # ------------------------------------------------------------------ transitions
    def open(self, state: CollectionState, table: Table, sid: int, t_ms: int, rounding_s: int, *,
             first: bool = False, taken: Callable[[str, ObjectId], bool] | None = None) -> Bucket:
        """A new OPEN bucket for series ``sid`` holding ``t_ms`` (``first``: none of the series was in
        memory, counted as mongod counts a bucket opened for a new key). ``taken(ns, id)``: whether
        storage holds a bucket of that id, asked while a direct write may have stored one this process's
        counter makes (``foreign_ids``): the next id is taken then, as mongod retries a bucket insert
        whose _id exists with a new one — never writing over the stored bucket."""
        self.make_room()
        if first:
            state.stats["numBucketsOpenedDueToMetadata"] += 1
        start_s = round_start_seconds(t_ms, rounding_s)
        series = state.series
        bucket_id = new_bucket_id(start_s)
        if taken is not None and state.ns in self.foreign_ids:
            while taken(state.ns, bucket_id):
                bucket_id = new_bucket_id(start_s)
        bucket = Bucket(table, sid, series.keys[sid], series.metas[sid], bucket_id, state.ns, start_s,
                        state.options.meta_field)
        series.open[sid] = bucket
        table.make_hot(sid, bucket.slot)
        self._enter(state, bucket)
        return bucket

    def _enter(self, state: CollectionState, bucket: Bucket, *, probation: bool = False) -> None:
        """A new bucket object is in memory (opened, or loaded: ``probation``)."""
        state.enter(bucket)
        state.series.held[bucket.sid] += 1
        table = bucket.table
        table.last_used[bucket.slot] = self.clock
        bucket.charged = self.footprint(bucket)
        self.memory += bucket.charged
        if probation:
            self._on_probation(bucket)
            return
        self.expiry.append((weakref.ref(bucket), self.clock, -1))
        if len(self.expiry) > self._expiry_limit:
            self._compact_expiry()

    def _on_probation(self, bucket: Bucket) -> None:
        """A bucket brought back for one measurement (loaded by query, or resumed) expires first unless
        a later routing uses it (``_close_probation``)."""
        self.probation.append((weakref.ref(bucket), self.clock))
        if len(self.probation) > self._probation_limit:
            self.probation = deque(entry for entry in self.probation if (b := entry[0]()) is not None
                                   and b.state in (State.OPEN, State.ARCHIVED))
            self._probation_limit = max(EXPIRY_QUEUE_MIN, 4 * len(self.probation))

    def _compact_expiry(self) -> None:
        """Drop the entries of buckets no longer routable: O(queue) once the queue grew fourfold since
        the last compaction (amortized O(1) per bucket)."""
        routable = (State.OPEN, State.ARCHIVED)
        self.expiry = deque(entry for entry in self.expiry
                            if (b := entry[0]()) is not None and b.state in routable)
        self._expiry_limit = max(EXPIRY_QUEUE_MIN, 4 * len(self.expiry))

    def rollover(self, state: CollectionState, bucket: Bucket, reason: Rollover) -> None:
        """The rules refused ``bucket`` a measurement for ``reason``: what its action says is done to
        the bucket (archived, closed, or kept for it) and its statistic counted."""
        action = reason.action
        if action is Action.ARCHIVE:
            self.archive(state, bucket, reason)
        elif action is Action.CLOSE:
            self.close(state, bucket, reason)
        elif not bucket.kept_open:  # kept open for a large measurement: "only increment this metric once
            bucket.kept_open = True  # per bucket" (mongod's bucket catalog)
            state.stats[reason.statistic] += 1

    def archive(self, state: CollectionState, bucket: Bucket, reason: Rollover) -> None:
        """The series' open bucket is archived (time forward/backward): it stays reopenable in memory."""
        move(bucket, Event.ARCHIVE)
        state.stats[reason.statistic] += 1
        series = state.series
        if series.open[bucket.sid] is bucket:
            series.open[bucket.sid] = None
        archived = series.archived[bucket.sid]
        archived.append(bucket)
        self.archive_queue.append((weakref.ref(bucket), self.clock))
        if len(archived) > MAX_ARCHIVED_PER_SERIES:  # the oldest ranges are the least likely to get late data
            self.retire(state, archived[0])

    def reopen(self, state: CollectionState, bucket: Bucket) -> None:
        """An archived bucket of the series takes measurements again (it becomes the open one)."""
        series = state.series
        current = series.open[bucket.sid]
        if current is not None and current is not bucket:
            raise RuntimeError("reopen with another open bucket: archive it first")
        move(bucket, Event.REOPEN)
        archived = series.archived[bucket.sid]
        if bucket in archived:
            archived.remove(bucket)
        series.open[bucket.sid] = bucket
        bucket.table.make_hot(bucket.sid, bucket.slot)
        state.stats["numBucketsReopened"] += 1
        state.stats["numBucketsFetched"] += 1

    def switch(self, state: CollectionState, table: Table, sids: list[int], buckets: list[Bucket],
               reasons: list[Rollover | None]) -> None:
        """Many series continue in an archived bucket of ``table`` at once (the router's vectorized
        path): each series' open bucket, if any, is archived for ``reasons[i]`` (an archiving reason;
        None: the series has no open bucket) and ``buckets[i]`` reopened — what ``archive`` +
        ``reopen`` do one series at a time."""
        series = state.series
        opened, archived = series.open, series.archived
        leaving = [opened[sid] for sid in sids]
        move_all([b for b in leaving if b is not None], Event.ARCHIVE)
        move_all(buckets, Event.REOPEN)
        crowded = []
        stats = state.stats
        for sid, current, bucket, reason in zip(sids, leaving, buckets, reasons, strict=True):
            kept = archived[sid]
            kept.remove(bucket)
            if current is not None:
                stats[cast(Rollover, reason).statistic] += 1
                kept.append(current)
                self.archive_queue.append((weakref.ref(current), self.clock))
                if len(kept) > MAX_ARCHIVED_PER_SERIES:
                    crowded.append(kept[0])
            opened[sid] = bucket
        table.promote(np.asarray(sids, np.int64), np.fromiter((b.slot for b in buckets), np.int64, len(buckets)))
        stats["numBucketsReopened"] += len(buckets)
        stats["numBucketsFetched"] += len(buckets)
        for bucket in crowded:
            self.retire(state, bucket)

    def close(self, state: CollectionState, bucket: Bucket, reason: Rollover | None) -> None:
        """The bucket takes no more measurements: its full document goes out with the next commit
        (``reason`` None: not a rollover — a direct write or shutdown closes every bucket, uncounted)."""
        move(bucket, Event.CLOSE)
        if reason is not None:
            state.stats[reason.statistic] += 1
        self._unroute(state, bucket)
        self._part(state.series, bucket)
        self.mark_full(bucket)
        self._leaving(bucket)

    def retire(self, state: CollectionState, bucket: Bucket) -> None:
        """An archived bucket leaves memory once its full document is durable (it stays reopenable by
        query: the series must ask storage again)."""
        self._unroute(state, bucket)
        state.series.queried[bucket.sid] = False
        self.mark_full(bucket)
        self._leaving(bucket)
        state.series.parting.setdefault(bucket.sid, []).append(bucket)

    def resume(self, state: CollectionState, bucket: Bucket) -> None:
        """A bucket of ``series.parting`` (expired for memory or retired, its full write not yet durable)
        takes a measurement: it is its series' open bucket again, as mongod 7.0 reopens the bucket it
        closed for memory (stored by then) rather than open a second one for the same time range. Its
        pending full write is dropped (its rows stay covered by journal records until a later full
        write; one in flight finds it open and leaves it in memory), and it leaves ``leaving``: its
        memory counts against the threshold again. The series has no open bucket (the caller archived it)."""
        series = state.series
        if series.open[bucket.sid] is not None:
            raise RuntimeError("resume with another open bucket: archive it first")
        self.make_room()  # its memory counts again, as a new or loaded bucket's does (it is leaving: not closed here)
        self._part(series, bucket)
        move(bucket, Event.REOPEN)
        self.leaving_bytes -= self.leaving.pop(id(bucket), 0)
        bucket.needs_full = False  # (its queue entries are skipped; compact_queued drops them)
        series.open[bucket.sid] = bucket
        bucket.table.make_hot(bucket.sid, bucket.slot)
        bucket.table.last_used[bucket.slot] = self.clock
        self._on_probation(bucket)  # as a bucket reopened by query (make_room took its queue entry)
        state.stats["numBucketsReopened"] += 1
        state.stats["numBucketsFetched"] += 1  # (the catalog holds it: storage is not asked)

    @staticmethod
    def _part(series: Series, bucket: Bucket) -> None:
        """``bucket`` is no longer resumable (resumed, closed for good, or gone from memory)."""
        parting = series.parting.get(bucket.sid)
        if parting is not None and bucket in parting:
            parting.remove(bucket)
            if not parting:
                del series.parting[bucket.sid]

    def _leaving(self, bucket: Bucket) -> None:
        """The bucket leaves memory once its full write is durable: its memory is as good as freed."""
        if id(bucket) not in self.leaving:
            size = bucket.charged + bucket.table.row_bytes
            self.leaving[id(bucket)] = size
            self.leaving_bytes += size

    def _unroute(self, state: CollectionState, bucket: Bucket) -> None:
        series = state.series
        if series.open[bucket.sid] is bucket:
            series.open[bucket.sid] = None
        archived = series.archived[bucket.sid]
        if bucket in archived:
            archived.remove(bucket)
        bucket.table.unhot(bucket.slot)

    def mark_full(self, bucket: Bucket) -> None:
        bucket.needs_full = True
        self.dirty[id(bucket)] = bucket

    def written(self, state: CollectionState | None, bucket: Bucket, final: bytes) -> None:
        """A commit made ``bucket``'s full document (``final``) durable: a closed bucket, or an archived
        one no longer routable, leaves memory."""
        if bucket.needs_full or bucket.pending or bucket.count != bucket.durable:
            return
        routable = state is not None and (state.series.open[bucket.sid] is bucket
                                          or bucket in state.series.archived[bucket.sid])
        if bucket.state is State.OPEN or routable:
            return
        move(bucket, Event.STORED)
        self._leave(state, bucket, final)

    def freeze(self, state: CollectionState, bucket: Bucket) -> None:
        """A bucket that must never be written (no committed row: a failed commit emptied it)."""
        self._unroute(state, bucket)
        move(bucket, Event.FREEZE)
        self.dirty.pop(id(bucket), None)
        self._leave(state, bucket, None)

    def _leave(self, state: CollectionState | None, bucket: Bucket, final: bytes | None) -> None:
        if state is not None and state.leave(bucket):
            series = state.series
            self._part(series, bucket)
            series.held[bucket.sid] -= 1
            if not series.routable(bucket.sid):
                series.empty.append(bucket.sid)
        self.leaving_bytes -= self.leaving.pop(id(bucket), 0)
        self.memory = max(self.memory - bucket.charged, 0)
        bucket.leave(final)

    def load(self, state: CollectionState, doc: dict[str, Any], sid: int) -> Bucket | None:
        """A stored bucket back in memory as the series' OPEN bucket (reopening by query; the caller
        counts it once it takes the measurement); None when its rows are not positionally dense
        (written by another tool: it is not reopened)."""
        options = state.options
        tf = options.time_field
        data: Any = doc.get("data")
        times = data.get(tf) if isinstance(data, dict) else None
        if not isinstance(times, dict) or not times:
            return None
        n = len(times)
        positions = [str(i) for i in range(n)]
        if list(times) != positions:
            return None
        start_ms = date_ms(((doc.get("control") or {}).get("min") or {}).get(tf))
        if start_ms is None:
            return None
        key: list[tuple[str, int | None, Any]] = []
        columns: dict[str, Any] = {}
        for name, column in data.items():
            if not isinstance(column, dict):
                return None
            values = [column.get(p, MISSING) for p in positions]
            kind = typed_kind(values[0]) if len(column) == n else None
            if kind is not None and all(typed_kind(v) == kind for v in values):
                key.append((name, kind, None))
                columns[name] = values
            elif len(column) == n and (values[0] is None or type(values[0]) is str) and all(
                    type(v) is type(values[0]) and v == values[0] for v in values):
                key.append((name, None, values[0]))
            else:
                columns[name] = ObjectColumn(name, values)
        if not key or key[0][0] != tf or key[0][1] is None:
            return None
        self.make_room()
        table = state.table(tuple(key))
        series = state.series
        bucket = Bucket(table, sid, series.keys[sid], series.metas[sid], doc["_id"], state.ns, start_ms // 1000,
                        options.meta_field)
        table.reserve_rows(n)
        ordered: dict[str, Any] = {}
        for name in data:
            column = columns.get(name)
            if type(column) is ObjectColumn:
                ordered[name] = column
            else:
                ordered[name] = table.columns[name]
                if type(ordered[name]) is not ConstColumn:
                    table.data[name][bucket.slot, :n] = to_array(table.kinds[name], cast("list[Any]", column))
        if any(type(c) is ObjectColumn for c in ordered.values()):
            bucket.columns = ordered
            table.pure[bucket.slot] = False
        table.count[bucket.slot] = table.durable[bucket.slot] = n
        bucket.in_flight = bucket.stored_count = n
        bucket.committed = True
        table.size[bucket.slot] = bucket.recomputed_size(n)
        bucket.full_size = bucket.size
        series.open[sid] = bucket
        table.make_hot(sid, bucket.slot)
        self._enter(state, bucket, probation=True)
        return bucket

    @staticmethod
    def storage_answered(state: CollectionState, found: bool) -> None:
        """Storage answered the router's query for a stored bucket to reopen: one to load (``found``,
        mongod's numBucketsQueried) or none (numBucketQueriesFailed; a bucket in memory already counts
        as none)."""
        state.stats["numBucketsQueried" if found else "numBucketQueriesFailed"] += 1

    def reopened_by_query(self, state: CollectionState, bucket: Bucket) -> None:
        """A bucket ``load`` brought back takes the measurement: counted as reopened."""
        state.stats["numBucketsReopened"] += 1

    def unload(self, state: CollectionState, bucket: Bucket | None) -> None:
        """A stored bucket the query found is not reopened (numBucketReopeningsFailed): ``load`` refused
        it (None: its rows are not positionally dense), or, just loaded, it cannot take the measurement
        and leaves memory unchanged (storage holds it exactly)."""
        state.stats["numBucketReopeningsFailed"] += 1
        if bucket is None:
            return
        self._unroute(state, bucket)
        move(bucket, Event.CLOSE)
        move(bucket, Event.STORED)
        self._leave(state, bucket, None)

    # ------------------------------------------------------------------ bookkeeping of appends
    def appended_slots(self, table: Table, slots: np.ndarray, added: int) -> None:
        """Rows appended to the pure buckets at ``slots`` of ``table`` (the router's vectorized path),
        ``added`` bytes in all: ``appended`` for many buckets at once (their values are in the table's
        arrays, counted with its slot rows: nothing per byte)."""
        table.last_used[slots] = self.clock
        table.dirty[slots] = True
        self.dirty_tables.add(table)

    def appended(self, bucket: Bucket, added: int) -> None:
        if not bucket.pure:  # values of its own columns: Python objects
            bucket.charged += added * PYTHON_OVERHEAD
            self.memory += added * PYTHON_OVERHEAD
        bucket.table.last_used[bucket.slot] = self.clock
        if bucket.pure:
            bucket.table.dirty[bucket.slot] = True
            self.dirty_tables.add(bucket.table)
        else:
            self.dirty[id(bucket)] = bucket

    @staticmethod
    def footprint(bucket: Bucket) -> int:
        """What the catalog counts for ``bucket`` now besides its table slot row (which its table
        counts): its Python objects and its series' (the meta's copies included), and, unless it is pure, ``PYTHON_OVERHEAD`` per
        byte of its values (a pure bucket's values are in the table's typed arrays, the slot row)."""
        return BUCKET_OVERHEAD + META_COPIES * bucket.meta_bytes + (0 if bucket.pure else bucket.size * PYTHON_OVERHEAD)

    def recharge(self, bucket: Bucket) -> None:
        """``bucket`` lost rows (a failed commit's): count its ``footprint`` as it is now."""
        charged = self.footprint(bucket)
        self.memory += charged - bucket.charged
        bucket.charged = charged

    def make_room(self) -> int:
        """Before a new bucket (mongod's rule): above the memory threshold — not counting buckets
        already leaving — close up to ``expiry_per_attempt`` idle buckets (nothing uncommitted),
        least recently used first. Examines at most ``EXPIRY_SCAN_LIMIT`` queue entries: entries of
        buckets gone are dropped, buckets used since they were queued or busy go to the back (CLOCK
        order), so the work is amortized O(1) per new bucket.

        A busy bucket goes back marked with the ``commits`` count: meeting a mark of the same count
        ends the scan. No drain or commit ran since it was found busy, so it is busy still, and so is
        nearly everything queued after it: buckets found busy, and buckets opened since, which hold
        rows not yet committed. The few that may be idle (used again since queued, or reopened and
        refused at once) wait for the next commit. Without the mark, once an insert's own new buckets
        reached the queue's front (the idle ones ran out before its commit), every later new bucket
        examined EXPIRY_SCAN_LIMIT of them again: 36 per new bucket on average in such a load.
        Returns how many it closed."""
        limits = self.limits
        if self.memory - self.leaving_bytes <= limits.memory_threshold:
            return 0
        closed = self._close_probation()
        if closed >= limits.expiry_per_attempt or self.memory - self.leaving_bytes <= limits.memory_threshold:
            return closed
        queue = self.expiry
        commits = self.commits
        for _ in range(min(len(queue), EXPIRY_SCAN_LIMIT)):
            if queue[0][2] == commits:
                break
            ref, queued, _busy = queue.popleft()
            bucket = ref()
            if bucket is None or bucket.state not in (State.OPEN, State.ARCHIVED) or id(bucket) in self.leaving:
                continue  # (retired: leaving already; ``resume`` queues it again)
            used = int(bucket.table.last_used[bucket.slot])
            if used > queued:
                queue.append((ref, used, -1))
                continue
            if not bucket.idle:
                queue.append((ref, used, commits))
                continue
            state = self.collections.get(bucket.ns)
            if state is None or state.live.get(bucket.id) is not bucket:
                continue
            self._expire(state, bucket)
            closed += 1
            if closed >= limits.expiry_per_attempt or self.memory - self.leaving_bytes <= limits.memory_threshold:
                break
        return closed

    def _expire(self, state: CollectionState, bucket: Bucket) -> None:
        """``make_room`` expires an idle bucket (counted as closed for memory, as mongod 7.0 counts the
        buckets it removes): archived if open, then retired — it leaves memory once its full write is
        durable, and until then its series resumes it rather than open a second bucket (``resume``)."""
        if bucket.state is State.OPEN:
            move(bucket, Event.ARCHIVE)  # (not one of its series' archived buckets: retired at once)
        state.stats[Rollover.MEMORY_THRESHOLD.statistic] += 1
        self.retire(state, bucket)
        # idle (the caller checked): queued for its full write now, where the next drain would queue it,
        # so an insert routing many new series reaches it without a drain (``commit.drain_leaving``:
        # one would take the insert's routed rows with it)
        if self.dirty.pop(id(bucket), None) is not None:
            self.queued_fulls[0].append(weakref.ref(bucket))

    def _close_probation(self) -> int:
        """``make_room``'s first choice: buckets reopened by query that no routing used since the one
        that loaded them, oldest first. A series that comes back once per round of a load whose series
        outnumber what the threshold holds (a million series, one measurement each per round) is not
        worth keeping: with the least recently used closed first instead, each reopened bucket closed
        the resident one the round reached next, so every series of every round was reopened (3,000
        series, ~2,100 held: 3,000 reopens a round instead of ~900). A bucket used again since its load
        joins the expiry queue like any other. The queue is in load order: a busy front entry (rows not
        yet committed: the insert routing now) ends the scan."""
        limits = self.limits
        queue = self.probation
        closed = 0
        for _ in range(min(len(queue), EXPIRY_SCAN_LIMIT)):
            ref, loaded = queue[0]
            bucket = ref()
            if bucket is None or bucket.state not in (State.OPEN, State.ARCHIVED) or id(bucket) in self.leaving:
                queue.popleft()
                continue
            used = int(bucket.table.last_used[bucket.slot])
            if used > loaded:
                queue.popleft()
                self.expiry.append((ref, used, -1))
                continue
            if not bucket.idle:
                break
            queue.popleft()
            state = self.collections.get(bucket.ns)
            if state is None or state.live.get(bucket.id) is not bucket:
                continue
            self._expire(state, bucket)
            closed += 1
            if closed >= limits.expiry_per_attempt or self.memory - self.leaving_bytes <= limits.memory_threshold:
                break
        return closed

    def expire_idle(self, limits: rules.Limits) -> int:
        """``make_room`` under ``limits`` (after an insert routed: one more attempt)."""
        self.limits = limits
        return self.make_room()

    def retire_slices(self) -> Iterator[int]:
        """``retire_idle_archived`` slice after slice until none is due: yields how many each slice
        retired; the caller (the maintenance pass) yields the loop in between."""
        while True:
            retired = self.retire_idle_archived()
            yield retired
            if retired < RETIRE_PER_PASS:
                return

    def retire_idle_archived(self, limit: int | None = None) -> int:
        """Archived buckets not reopened for ``ARCHIVED_IDLE_MS`` are written in full and leave memory,
        at most ``limit`` (``RETIRE_PER_PASS``) per call: the maintenance pass takes them slice after
        slice (``retire_slices``), yielding the loop in between, until none is due. Their full writes are spread over the commits that follow
        (``commit.FULL_WRITES_PER_COMMIT`` each), and while they are more than the leaving allowance
        inserts wait (``ingest.leaving_allowance``): the writer's pace, not a per-pass cap, bounds them,
        so the archived buckets held stay ``ARCHIVED_IDLE_MS`` worth of the archiving rate however long
        a load runs.

        Reads only the old end of ``archive_queue``: O(entries older than the horizon), not O(series)
        (a pass over the per-series lists of a series explosion's ~220,000 series held the loop up to
        ~0.1 s of CPU every second). An entry whose bucket was used after it was queued stands for
        nothing: the bucket was reopened, and if archived again a newer entry was queued then."""
        if limit is None:
            limit = RETIRE_PER_PASS
        retired = 0
        horizon = now_ms() - ARCHIVED_IDLE_MS
        queue = self.archive_queue
        while queue and queue[0][1] < horizon and retired < limit:
            ref, _ = queue.popleft()
            bucket = ref()
            if bucket is None or bucket.state is not State.ARCHIVED or bucket.table.last_used[bucket.slot] >= horizon:
                continue
            state = self.collections.get(bucket.ns)
            if state is None or state.live.get(bucket.id) is not bucket or bucket not in state.series.archived[bucket.sid]:
                continue  # retired or closed already (or its collection dropped)
            self.retire(state, bucket)
            retired += 1
        return retired

    def maintain(self) -> None:
        """The maintenance pass's memory upkeep: series with nothing in memory released, tables with
        no bucket dropped, the others' arrays shrunk once their buckets fit a quarter (table.py) and they
        have not grown for ``SHRINK_AFTER_MS``."""
        self.release_series()
        for state in self.collections.values():
            for key, table in list(state.tables.items()):
                if not table.live and table not in self.dirty_tables:
                    del state.tables[key]
                elif now_ms() - table.grown_ms >= SHRINK_AFTER_MS:
                    table.shrink()

    def checkpoint_all(self, *, force: bool = False) -> int:
        """``checkpoint_slices`` in one go (tests, and callers that hold no loop)."""
        return sum(self.checkpoint_slices(force=force))

    def checkpoint_slices(self, *, force: bool = False, ns: str | None = None) -> Iterator[int]:
        """Mark live buckets with journal records for a full write (the periodic checkpoint), one slice
        of at most ``MAINTENANCE_SLICE`` buckets (table slots) at a time: yields how many each slice
        marked; the caller yields the loop (and lets a commit take what was marked) in between. The
        catalog may change between slices: a bucket that arrives meanwhile waits for the next
        checkpoint, one that leaves is skipped, a dropped collection's are skipped.

        Unless ``force``, a bucket is rewritten only once it has at least doubled since its last full
        write: full writes then total at most about twice a bucket's final size, while the journal to
        replay stays below about half of the open data. ``ns``: that collection's buckets only."""
        states = list(self.collections.values()) if ns is None else [
            state for state in (self.collections.get(ns),) if state is not None]
        for state in states:
            for table in list(state.tables.values()):
                start = 0
                while start < len(table.buckets) and self.collections.get(state.ns) is state:
                    end = start + MAINTENANCE_SLICE
                    live = state.live
                    marked = 0
                    for bucket, durable, size in zip(table.buckets[start:end], table.durable[start:end].tolist(),
                                                     table.size[start:end].tolist(), strict=False):
                        if bucket is not None and durable > bucket.stored_count and not bucket.needs_full and (
                                force or size >= 2 * bucket.full_size) and live.get(bucket.id) is bucket:
                            self.mark_full(bucket)
                            marked += 1
                    start = end
                    yield marked

    def close_all(self, ns: str, buckets: list[Bucket] | None = None) -> int:
        """Close every live bucket of ``ns`` (only ``buckets`` when given; those no longer live are
        skipped) — full write at the next commit — so that nothing routes to them; returns how many
        buckets await their full write."""
        state = self.collections.get(ns)
        if state is None:
            return 0
        closing = list(state.live.values()) if buckets is None else [
            bucket for bucket in buckets if state.live.get(bucket.id) is bucket]
        for bucket in closing:
            if bucket.state is not State.CLOSED:
                self.close(state, bucket, None)
            else:
                self.mark_full(bucket)
            state.series.queried[bucket.sid] = False  # the direct write may leave it reopenable
        return len(state.live) if buckets is None else len(closing)

    def compact_queued(self) -> None:
        """Drop the queued full writes that stand for nothing (written, resumed or dropped meanwhile, or
        queued twice): O(queue) once the queues grew fourfold since the last compaction (amortized O(1)
        per entry). The checkpoint queue is reached only when the one of buckets leaving memory is
        empty, and a checkpoint-marked bucket that expires is queued again in the first: under a steady
        stream of expiries (a million series) every periodic checkpoint added an entry per bucket in
        memory to a queue the drains never reached (430,000 entries after 8 minutes), each holding its
        bucket, and the full document it keeps for late readers, after the bucket left memory."""
        queued = self.queued_fulls
        if len(queued[0]) + len(queued[1]) <= self._queued_limit:
            return
        seen: set[int] = set()
        for queue in queued:
            kept = []
            for ref in queue:
                bucket = ref()
                if bucket is not None and bucket.needs_full and bucket.state in IN_MEMORY and id(bucket) not in seen:
                    seen.add(id(bucket))
                    kept.append(ref)
            queue.clear()
            queue.extend(kept)
        self._queued_limit = max(EXPIRY_QUEUE_MIN, 4 * (len(queued[0]) + len(queued[1])))

    def take_dirty(self) -> tuple[list[Bucket], list[Table]]:
        buckets = list(self.dirty.values())
        self.dirty.clear()
        tables = list(self.dirty_tables)
        self.dirty_tables.clear()
        return buckets, tables

    # ------------------------------------------------------------------ statistics
    def collection_stats(self, ns: str) -> dict[str, Any]:
        """Execution stats of one collection in collStats order (spec §3.4)."""
        state = self.collections.get(ns)
        stats = dict(state.stats) if state else dict.fromkeys(STAT_NAMES, 0)
        return _ordered(stats)

    def live_snapshot(self) -> list[list[Any]]:
        """The live buckets of every collection, copied by C-level list copies (about a millisecond per
        100,000 buckets): what ``server_status`` counts, so the counting can run off the event loop."""
        return [list(state.live.values()) for state in list(self.collections.values())]

    def server_status(self, snapshot: list[list[Any]] | None = None) -> dict[str, Any]:
        """``serverStatus().bucketCatalog``: the catalog's figures, then (as mongod appends its global
        execution stats) every collection's execution stats summed — commits, measurements per commit,
        closes by reason. A dropped collection's counts leave the sums with it. ``snapshot``: a
        ``live_snapshot()`` taken on the loop; the counting walks every live bucket (~130 ms at 200,000
        buckets), so the serverStatus hook runs it in a worker thread, where the buckets' states may
        move while they are counted (the figures are a moment's, as mongod's are)."""
        if snapshot is None:
            snapshot = self.live_snapshot()
        live = [b for buckets in snapshot for b in buckets]
        status: dict[str, Any] = {
            "numBuckets": len(live),
            "numOpenBuckets": sum(1 for b in live if b.state is State.OPEN),
            "numIdleBuckets": sum(1 for b in live if b.state is State.OPEN and b.idle),
            "numArchivedBuckets": sum(1 for b in live if b.state is State.ARCHIVED),
            "memoryUsage": self.memory,
        }
        totals = dict.fromkeys(STAT_NAMES, 0)
        for state in list(self.collections.values()):
            for name in STAT_NAMES:
                totals[name] += state.stats[name]
        status.update(_ordered(totals))
        return status


def _ordered(stats: dict[str, int]) -> dict[str, int]:
    """Execution stats in mongod's order: the average per commit right after the commit counters (only
    once there was a commit), the compression counters last."""
    out: dict[str, int] = {}
    for name in STAT_NAMES:
        out[name] = stats[name]
        if name == "numMeasurementsCommitted" and stats["numCommits"]:
            out["avgNumMeasurementsPerCommit"] = stats["numMeasurementsCommitted"] // stats["numCommits"]
    return out
