"""Group commit of time-series buckets: each commit is a plan, applied after storage says yes (``finish``)
or rolled back after it says no (``abort``).

- Inserts route measurements into buckets (catalog, event loop), then await ``Committer.commit``.
  While a commit is in flight, later inserts queue up; the next drain takes every bucket with rows or a
  full write pending, from every waiting insert, into one plan: per collection one ``engine.write``
  (storage merges them into one LMDB transaction and one fsync). At most one commit is in flight.
- A bucket's new rows ``[durable, count)`` go into a journal record (journal.py), never the whole
  bucket; a bucket that must be written in full (closed, retired, checkpointed) gets its v1 document
  written (upsert, clustered on ``_id``; built on the writer thread from the rows taken at the drain)
  and records it covered are trimmed in the same transaction.
- ``Plan.finish`` runs only after the commit is durable: ``durable`` counts move (readers see the rows
  from then on), stored counts, statistics, buckets leaving memory, journal bookkeeping.
  ``Plan.abort`` runs when it failed: the rows the plan carried are removed from their buckets (rows
  appended meanwhile move down), full writes stay pending, nothing else changes — so an insert
  answered with an error was never visible and never becomes durable, and later records start where
  the durable rows end.
- Large inserts route in slices and yield the event loop in between (``routing()``): a drain waits
  until every insert in progress has routed all of its rows, so a commit carries whole inserts.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import weakref
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any, cast

import numpy as np

from tidemark.core import collection as C
from tidemark.protocol.codec import decode, encode
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.index_keys import index_key_map
from tidemark.storage.errors import EngineClosed
from tidemark.storage.records import clustered_rid
from tidemark.timeseries import journal
from tidemark.timeseries.bucket import full_documents
from tidemark.timeseries.catalog import MAINTENANCE_SLICE, BucketCatalog
from tidemark.timeseries.states import IN_MEMORY

log = logging.getLogger("tidemark.timeseries")

CHECKPOINT_INTERVAL_SECONDS = 60.0
RETIRE_INTERVAL_SECONDS = 1.0
SEGMENT_ROWS = 16_384
# Full writes of idle buckets (closed for memory, retired archived, checkpointed; nothing waits on them)
# cost ~0.4 ms each on the writer thread, holding the GIL, and a commit holds every insert sharing the
# writer (regular collections too): a drain takes at most FULL_WRITES_PER_COMMIT of them, and the
# writer stops writing them once the commit's share of a collection spent FULL_WRITE_CPU_BUDGET seconds
# of its CPU (128 of them held it ~55 ms of CPU in a series explosion); the rest follow in the next
# commits, which run back to back while any is deferred (inserts that open buckets wait for them:
# ingest.LEAVING_ALLOWANCE)
FULL_WRITES_PER_COMMIT = 128
FULL_WRITE_CPU_BUDGET = 0.010
# a periodic checkpoint writes in full the buckets still holding journal records from this many
# checkpoints ago (Committer._mark_journal_holders): the journal holds about that many intervals of
# records. One (the previous checkpoint) rewrote a bucket filling in real time (an hour's bucket, a row
# every 10 s) every interval: 60 full writes an hour instead of the doubling rule's ~9
JOURNAL_HOLD_CHECKPOINTS = 4
# full writes built together (bucket.full_documents: the buckets of one table at once cost a fraction of
# one by one), the budget checked between groups
FULL_WRITE_GROUP = 32


def write_full_document(w: Any, info: Any, doc: dict[str, Any], raw: bytes | None = None, bucket_form: Any = None) -> Any:
    """Upsert a bucket document into its clustered collection, keeping secondary indexes in step (and
    their multikey flags, as for a regular collection: ``C.write_keys``); returns the collection's info,
    refreshed when a flag was set (pass it to the next write). ``raw``: the document's BSON when the
    caller has it, ``doc`` then needs only ``_id``, ``control`` and ``meta`` (what bucket indexes read)
    unless an index reads ``data``; ``bucket_form``: the storage codec's form of it built another way."""
    rid = clustered_rid(doc["_id"])
    if raw is None:
        raw = encode(doc)
    elif info.indexes and any(str(path).startswith("data") for spec in info.indexes for path in spec["key"]):
        doc = decode(raw)
    old = w.get(info, rid)
    info, keys = C.write_keys(w, info, doc) if info.indexes else (info, {})
    if old is None:
        w.insert(info, raw, keys, rid=rid, bucket_form=bucket_form)
    elif info.indexes:
        w.update(info, rid, raw, index_key_map(info.indexes, decode(old)), keys, bucket_form=bucket_form)
    else:
        w.update(info, rid, raw, {}, {}, bucket_form=bucket_form)
    return info


class WriteCounters:
    """What committed time-series writes stored (journal records vs full bucket documents)."""

    def __init__(self) -> None:
        self.journalRecords = 0
        self.journalBytes = 0
        self.bucketDocuments = 0
        self.bucketBytes = 0
        # the most writer-thread CPU one collection's share of a commit took (building journal records
        # and full documents holds the GIL): what a commit costs every other thread at worst
        self.writerCpuMicrosMax = 0
        self.fullWritesPerCommitMax = 0

    def as_dict(self) -> dict[str, int]:
        return dict(vars(self))


# ------------------------------------------------------------------ the plan of one commit


class CollectionPlan:
    """One collection's share of a commit."""

    def __init__(self, state: Any):
        self.state = state
        self.segments: list[journal.Segment] = []
        self.fulls: list[tuple[Any, int, dict[str, Any], dict[str, Any], int]] = []  # (bucket, rows, columns, arrays, size)
        # full writes nothing waits on (commit.FULL_WRITE_CPU_BUDGET): written after ``fulls`` while
        # the budget lasts (at least one), the others marked again for a later commit
        self.deferrable: list[tuple[Any, int, dict[str, Any], dict[str, Any], int]] = []
        self.rows: list[tuple[Any, int, int]] = []  # (bucket, lo, hi): rows this commit makes durable
        # the same for the pure buckets of a table, as arrays: (table, slots, gens, lo, hi)
        self.slot_rows: list[tuple[Any, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        self.trim: tuple[int, int] | None = None  # (seq, records): what the full writes surely made cover
        self.trim_all: tuple[int, int] | None = None  # the same once every deferrable one is written too

    def empty(self) -> bool:
        return not (self.segments or self.fulls or self.deferrable or self.trim or self.trim_all)

    def write_fn(self) -> Any:
        """The storage write (writer thread; may run again: no side effect outside ``w``)."""
        state = self.state
        ns, options = state.ns, state.options
        stream = journal.stream_of(ns)
        segments, fulls, deferrable, trims = self.segments, self.fulls, self.deferrable, (self.trim, self.trim_all)

        def fn(w: Any) -> tuple[list[int], list[int], list[bytes], float, tuple[int, int] | None]:
            started = time.thread_time()
            info = w.get_collection(ns)
            if info is None:
                raise MongoError(ErrorCode.NamespaceNotFound, f"Namespace {ns} was dropped during the insert")
            seqs, sizes = [], []
            for segment in segments:
                payload = segment.encode(ns, options.time_field, options.meta_field)
                seqs.append(w.journal_append(stream, payload))
                sizes.append(len(payload))
            finals: list[bytes] = []
            items = fulls + deferrable
            at = 0
            while at < len(items):
                if at > len(fulls) and time.thread_time() - started >= FULL_WRITE_CPU_BUDGET:
                    break  # the deferrable rest waits for a later commit (at least one group is written)
                end = min(len(fulls) if at < len(fulls) else len(items), at + FULL_WRITE_GROUP)
                for parts in full_documents([(bucket, n, columns, arrays) for bucket, n, columns, arrays, _ in items[at:end]]):
                    raw = parts.bson()
                    info = write_full_document(w, info, parts.summary, raw, parts.codec_form())
                    finals.append(raw)
                at = end
            trim = trims[len(finals) == len(fulls) + len(deferrable)]
            if trim is not None:
                w.journal_trim(stream, trim[0])
            return seqs, sizes, finals, time.thread_time() - started, trim

        return fn

    def finish(self, catalog: BucketCatalog, logs: dict[str, Any], counters: WriteCounters, result: Any) -> None:
        """The commit is durable: the rows become visible and everything derived from them follows."""
        seqs, sizes, finals, cpu, trim = result
        state = self.state
        stats = state.stats
        added = 0
        lo: Any  # a bucket's row bounds (ints), then a table's slot bounds (arrays)
        hi: Any
        for bucket, lo, hi in self.rows:
            if bucket.state not in IN_MEMORY:
                continue  # dropped meanwhile
            table = bucket.table
            table.durable[bucket.slot] = hi
            bucket.in_flight = hi
            if hi > lo:
                added += hi - lo
                stats["numBucketUpdates" if bucket.committed else "numBucketInserts"] += 1
                bucket.committed = True
        for table, slots, gens, lo, hi in self.slot_rows:
            inside = slots < len(table.gen)  # (a table shrinks only above the slots it holds)
            same = inside & (table.gen[np.where(inside, slots, 0)] == gens)  # else the bucket left memory
            if not same.all():
                slots, lo, hi = slots[same], lo[same], hi[same]
            table.durable[slots] = hi
            table.in_flight[slots] = hi
            updated = int(table.committed[slots].sum())
            stats["numBucketUpdates"] += updated
            stats["numBucketInserts"] += len(slots) - updated
            table.committed[slots] = True
            added += int((hi - lo).sum())
        log_ = logs.get(state.ns)
        if self.segments:
            if log_ is None:
                log_ = logs[state.ns] = journal.CommitLog(state.ns)
            for segment, seq in zip(self.segments, seqs, strict=True):
                log_.add(seq, segment.buckets, np.asarray(segment.hi).tolist())
        written = self.fulls + self.deferrable[:len(finals) - len(self.fulls)]
        for (bucket, n, _, _, size), final in zip(written, finals, strict=True):
            # mongod's compression counters: the document is the version 1 layout (the storage engine
            # compresses its own pages), so each bucket counts as one left uncompressed (its
            # onBucketClosed without a compressed form: compressed bytes = uncompressed bytes)
            if not bucket.counted_bytes:
                stats["numUncompressedBuckets"] += 1
            grown = len(final) - bucket.counted_bytes
            stats["numBytesUncompressed"] += grown
            stats["numBytesCompressed"] += grown
            bucket.counted_bytes = len(final)
            if bucket.state not in IN_MEMORY:
                continue
            bucket.stored_count = max(bucket.stored_count, n)
            bucket.full_size = size
            catalog.written(state, bucket, final)
        # beyond the budget: back to the front of their queue, in order, for the next commit
        for bucket, *_ in reversed(self.deferrable[len(written) - len(self.fulls):]):
            if bucket.state in IN_MEMORY:
                bucket.needs_full = True
                catalog.queued_fulls[0 if id(bucket) in catalog.leaving else 1].appendleft(weakref.ref(bucket))
                catalog.deferred += 1
        if trim is not None and log_ is not None:
            log_.trimmed(trim[1])
        if added or finals:
            stats["numCommits"] += 1
        stats["numMeasurementsCommitted"] += added
        counters.journalRecords += len(self.segments)
        counters.journalBytes += sum(sizes)
        counters.bucketDocuments += len(finals)
        counters.bucketBytes += sum(len(raw) for raw in finals)
        counters.writerCpuMicrosMax = max(counters.writerCpuMicrosMax, int(cpu * 1e6))
        counters.fullWritesPerCommitMax = max(counters.fullWritesPerCommitMax, len(finals))

    def abort(self, catalog: BucketCatalog) -> None:
        """The commit failed: remove the rows it carried, keep its full writes pending."""
        state = self.state
        for bucket, lo, hi in self._all_rows():
            if bucket.state not in IN_MEMORY:
                continue
            if hi > lo:
                bucket.remove_rows(lo, hi)
            bucket.in_flight = bucket.durable
            catalog.recharge(bucket)
            if bucket.count == 0 and not bucket.committed and not bucket.stored_count:
                catalog.freeze(state, bucket)  # it held only the failed rows
            elif bucket.pending:
                catalog.appended(bucket, 0)
        for bucket, *_ in self.fulls + self.deferrable:
            if bucket.state in IN_MEMORY:
                catalog.mark_full(bucket)


    def _all_rows(self) -> Iterable[tuple[Any, int, int]]:
        yield from self.rows
        for table, slots, gens, lo, hi in self.slot_rows:
            for slot, gen, a, b in zip(slots.tolist(), gens.tolist(), lo.tolist(), hi.tolist(), strict=True):
                if slot < len(table.gen) and table.gen[slot] == gen:
                    yield table.buckets[slot], a, b


def _take_queued(catalog: BucketCatalog, queues: tuple[Any, ...], plan_of: Callable[[str], CollectionPlan | None],
                 handled: dict[Any, set[int]]) -> None:
    """Up to ``FULL_WRITES_PER_COMMIT`` queued full writes of idle buckets into their plans' deferrable
    lists, the ``queues`` taking turns."""
    # the two queues take turns (a fair share each while both wait; the deferrable list interleaved, so
    # the writer's CPU budget cuts both alike): served leaving-first, a steady stream of expiries (a
    # series count over what the threshold holds) kept the checkpoints from ever being written, and the
    # journal was never trimmed past the first record naming a bucket that stayed in memory
    taken = turn = 0
    while taken < FULL_WRITES_PER_COMMIT and any(queues):
        queue = queues[turn] if queues[turn] else next(q for q in queues if q)
        queued_bucket = queue.popleft()()
        if queued_bucket is None or not queued_bucket.needs_full or queued_bucket.state not in IN_MEMORY:
            continue  # written meanwhile (queued twice), resumed, or dropped
        state = catalog.get(queued_bucket.ns)
        bucket = state.live.get(queued_bucket.id) if state is not None else None
        if bucket is None or bucket is not queued_bucket:
            continue
        lo, hi = bucket.durable, bucket.count
        if hi != lo or bucket.in_flight != hi:
            catalog.mark_full(bucket)  # rows came meanwhile: the next drain takes it with them
            continue
        taken += 1
        turn = (turn + 1) % len(queues)
        handled.setdefault(bucket.table, set()).add(bucket.slot)
        bucket.needs_full = False
        plan = cast(CollectionPlan, plan_of(bucket.ns))
        plan.deferrable.append((bucket, hi, bucket.columns, dict(bucket.table.data), bucket.size))
        plan.rows.append((bucket, lo, hi))


def _planner(catalog: BucketCatalog, plans: dict[str, CollectionPlan]) -> Callable[[str], CollectionPlan | None]:
    """``plan_of(ns)``: the plan of ``ns`` in ``plans``, made on first use (None for a collection the
    catalog no longer holds)."""

    def plan_of(ns: str) -> CollectionPlan | None:
        plan = plans.get(ns)
        if plan is None:
            state = catalog.get(ns)
            if state is None:
                return None
            plan = plans[ns] = CollectionPlan(state)
        return plan

    return plan_of


def drain_leaving(catalog: BucketCatalog) -> dict[str, CollectionPlan]:
    """Only the queued full writes of buckets leaving memory (idle: nothing uncommitted), for a commit
    while an insert is routing (``Committer.write_leaving``): nothing of any insert, no journal trim
    (trims are planned by full drains only, one at a time)."""
    plans: dict[str, CollectionPlan] = {}
    plan_of = _planner(catalog, plans)

    _take_queued(catalog, catalog.queued_fulls[:1], plan_of, {})
    catalog.deferred = len(catalog.queued_fulls[0]) + len(catalog.queued_fulls[1])
    return {ns: plan for ns, plan in plans.items() if not plan.empty()}


def drain(catalog: BucketCatalog, logs: dict[str, Any]) -> dict[str, CollectionPlan]:
    """Everything appended and every full write pending, as per-collection plans (event loop)."""
    plans: dict[str, CollectionPlan] = {}
    plan_of = _planner(catalog, plans)

    # buckets the catalog marked (full writes, impure buckets) one by one; the pure buckets of each
    # table with new rows as slot arrays (a commit may carry thousands of them)
    buckets, tables = catalog.take_dirty()
    pure_slots: dict[Any, list[int]] = {}
    handled: dict[Any, set[int]] = {}  # slots of buckets taken one by one
    seen: set[int] = set()
    queued = catalog.queued_fulls
    for table in tables:
        slots = np.flatnonzero(table.dirty)
        table.dirty[slots] = False
        impure = slots[~table.pure[slots]]
        if len(impure):
            buckets.extend(b for b in (table.buckets[s] for s in impure.tolist()) if b is not None)
        pure_slots[table] = slots[table.pure[slots]].tolist()
    for bucket in buckets:
        if id(bucket) in seen or bucket.state not in IN_MEMORY:
            continue
        seen.add(id(bucket))
        state = catalog.get(bucket.ns)
        if state is None or state.live.get(bucket.id) is not bucket:
            continue
        lo, hi = bucket.durable, bucket.count
        if not bucket.needs_full and bucket.pure:
            pure_slots.setdefault(bucket.table, []).append(bucket.slot)
            continue
        if bucket.needs_full and hi == lo and bucket.in_flight == hi:
            # nothing of it to commit but its full write: queued (those leaving memory first), taken
            # FULL_WRITES_PER_COMMIT per commit below
            queued[0 if id(bucket) in catalog.leaving else 1].append(weakref.ref(bucket))
            continue
        handled.setdefault(bucket.table, set()).add(bucket.slot)
        plan = plan_of(bucket.ns)
        assert plan is not None  # its state was found above
        if bucket.needs_full:
            bucket.needs_full = False
            plan.fulls.append((bucket, hi, bucket.columns, dict(bucket.table.data), bucket.size))
        elif hi > lo:
            plan.segments.append(journal.Segment.of_bucket(bucket, lo, hi))
        else:
            continue
        bucket.in_flight = hi
        plan.rows.append((bucket, lo, hi))
    _take_queued(catalog, queued, plan_of, handled)
    catalog.compact_queued()
    catalog.deferred = len(queued[0]) + len(queued[1])
    for table, listed in pure_slots.items():
        slots = np.unique(np.asarray(listed, np.int64))
        taken_slots = handled.get(table)
        if taken_slots:
            slots = slots[~np.isin(slots, np.fromiter(taken_slots, np.int64, len(taken_slots)))]
        lo, hi = table.durable[slots], table.count[slots]
        moving = hi > lo
        slots, lo, hi = slots[moving], lo[moving], hi[moving]
        if not len(slots):
            continue
        plan = plan_of(table.ns)
        if plan is None:
            continue
        table.in_flight[slots] = hi
        plan.slot_rows.append((table, slots, table.gen[slots], lo, hi))
        members = [table.buckets[s] for s in slots.tolist()]
        # records of at most about SEGMENT_ROWS rows: encoding one holds the GIL on the writer thread
        ends = np.cumsum(hi - lo)
        cuts = [0, *np.flatnonzero(np.diff(ends // SEGMENT_ROWS)) + 1, len(members)]
        for a, b in zip(cuts, cuts[1:], strict=False):
            if a < b:
                plan.segments.append(journal.Segment.of_table(table, members[a:b], slots[a:b], lo[a:b], hi[a:b]))
    for ns, log_ in logs.items():
        plan = plans.get(ns)
        # two candidates: the writer applies the second only if the budget let every deferrable full
        # write through (a record is trimmed only in the transaction that stores what it covers)
        writing = {id(bucket): n for bucket, n, *_ in plan.fulls} if plan is not None else None
        trim = log_.trimmable(writing)
        trim_all = trim
        if plan is not None and plan.deferrable:
            trim_all = log_.trimmable({**(writing or {}), **{id(bucket): n for bucket, n, *_ in plan.deferrable}})
        if trim is not None or trim_all is not None:
            state = catalog.get(ns)
            if state is not None:
                plan = plans.get(ns)
                if plan is None:
                    plan = plans[ns] = CollectionPlan(state)
                plan.trim, plan.trim_all = trim, trim_all
    return {ns: plan for ns, plan in plans.items() if not plan.empty()}


# ------------------------------------------------------------------ event-loop side


class Committer:
    """Turns pending rows into commits; one instance per server (``server.ts_committer``)."""

    def __init__(self, engine: Any, catalog: BucketCatalog, *,
                 checkpoint_interval: Callable[[], float] = lambda: CHECKPOINT_INTERVAL_SECONDS):
        """``checkpoint_interval``: seconds between periodic checkpoints, read before each (the server's
        ``syncdelay`` parameter, settable at runtime; 0: none)."""
        self.engine = engine
        self.catalog = catalog
        self.checkpoint_interval = checkpoint_interval
        self._waiters: list[tuple[asyncio.Future[None], frozenset[str]]] = []
        self._running = False
        self._task: asyncio.Task[None] | None = None
        self._maintenance: list[asyncio.Task[None]] = []
        self.counters = WriteCounters()
        self.logs: dict[str, journal.CommitLog] = {}  # ns -> records still in the journal
        self._routing = 0  # inserts routing in slices right now
        self._wake = asyncio.Event()  # a drain waiting for inserts in progress: one ended, or asks (``write_leaving``)
        self._leaving: list[asyncio.Future[None]] = []  # inserts routing now that wait in ``write_leaving``
        self._draining = asyncio.Event()
        self._draining.set()  # cleared while a drain waits for inserts in progress
        self._turns: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()
        # ns -> the newest journal record's seq at each of the last periodic checkpoints: records up to
        # the oldest are JOURNAL_HOLD_CHECKPOINTS intervals old, and the next checkpoint writes every
        # bucket still holding them in full
        self._horizon: dict[str, deque[int]] = {}

    def turn(self, ns: str) -> asyncio.Lock:
        """The insert turn of ``ns``: held from an insert's backpressure wait to the end of its routing,
        so inserts route one at a time in the order they asked (an asyncio lock is FIFO). One that waits
        (for full writes, between slices, for a drain) is not overtaken by later ones: a time-ordered
        load's rows reach each series in order — overtaken, a series sees times go back across a
        bucket's start (buckets archived and reopened, rows out of order: more CPU and bytes per row).
        Kept only while some insert holds or awaits it."""
        lock = self._turns.get(ns)
        if lock is None:
            lock = self._turns[ns] = asyncio.Lock()
        return lock

    # -- inserts in progress (``routing``) and drains exclude each other
    @contextlib.asynccontextmanager
    async def routing(self) -> AsyncIterator[None]:
        """Held while an insert routes its rows in slices (yielding the loop between them)."""
        while not self._draining.is_set():
            await self._draining.wait()
        self._routing += 1
        try:
            yield
        finally:
            self._routing -= 1
            if not self._routing:
                self._wake.set()

    async def write_leaving(self) -> None:
        """Called by an insert between its routing slices: the next commit writes in full only idle
        buckets leaving memory (``drain_leaving``; the inserts routing now stay out of it, as a commit
        carries whole inserts) and this returns once it is done. The expiries of one insert of many new
        series (each new bucket closes idle ones first, mongod's rule) otherwise all waited for its
        commit: their memory was bounded only by the insert's size (100,000 new series: ~250 MB over the
        threshold); mongod frees an expired bucket at once, its data being stored already."""
        future = asyncio.get_running_loop().create_future()
        self._leaving.append(future)
        self._wake.set()
        if not self._running:
            self._running = True
            self._task = asyncio.get_running_loop().create_task(self._run())
        await future

    async def commit(self, namespaces: Iterable[str]) -> None:
        """Wait until everything appended so far to ``namespaces``' buckets is durable."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        namespaces = frozenset(namespaces)
        if self._running:
            for ns in namespaces:
                state = self.catalog.get(ns)
                if state is not None:
                    state.stats["numWaits"] += 1
        self._waiters.append((future, namespaces))
        if not self._running:
            self._running = True
            self._task = loop.create_task(self._run())
        await future

    async def _run(self) -> None:
        try:
            while self._waiters or self.catalog.deferred or self._leaving:
                # Let inserts whose frames already arrived route their measurements first (one pass of
                # the ready tasks): they join this commit instead of waiting a whole fsync for the next.
                await asyncio.sleep(0)
                while self._routing and not self._leaving:
                    self._draining.clear()
                    self._wake.clear()
                    await self._wake.wait()
                leaving, self._leaving = [(future, frozenset[str]()) for future in self._leaving], []
                try:
                    if self._routing:  # an insert routing now waits for the buckets leaving memory
                        waiters = leaving
                        plans = drain_leaving(self.catalog)
                    else:
                        waiters, self._waiters = self._waiters + leaving, []
                        plans = drain(self.catalog, self.logs)
                finally:
                    self._draining.set()
                self.catalog.commits += 1  # (catalog.make_room) full writes taken: their buckets may be idle
                errors = await self._apply(plans)
                self.catalog.commits += 1  # rows durable, or rolled back: buckets found busy may be idle
                if errors:
                    self.catalog.deferred = 0  # storage refuses: no retry loop (the next insert or pass retries)
                for future, namespaces in waiters:
                    if future.done():
                        continue
                    error = next((errors[ns] for ns in namespaces if ns in errors), None)
                    if error is None:
                        future.set_result(None)
                    else:
                        future.set_exception(error)
        finally:
            self._running = False

    async def _apply(self, plans: dict[str, CollectionPlan]) -> dict[str, BaseException]:
        futures: dict[str, Any] = {}
        errors: dict[str, BaseException] = {}
        for ns, plan in plans.items():
            try:
                futures[ns] = self.engine.write(plan.write_fn())
            except EngineClosed as exc:  # refused at once (a shutdown racing the insert): like a failed commit
                errors[ns] = exc
                plan.abort(self.catalog)
        for ns, fut in futures.items():
            plan = plans[ns]
            try:
                result = await asyncio.wrap_future(fut)
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting inserts
                errors[ns] = exc
                plan.abort(self.catalog)
                log.warning("time-series commit of %s failed: %s", ns, exc)
                continue
            plan.finish(self.catalog, self.logs, self.counters, result)
        return errors

    # -- collections
    def backlog(self) -> dict[str, int]:
        """Gauges of what waits (serverStatus ``bucketCatalog.writes``): journal records not yet trimmed
        (a record goes once every bucket it names is stored in full) and the queued full writes, of
        buckets leaving memory and of checkpoints (entries; stale ones until ``compact_queued``)."""
        leaving, checkpoints = self.catalog.queued_fulls
        return {"journalRecordsHeld": sum(len(log_.records) for log_ in self.logs.values()),
                "queuedLeavingFullWrites": len(leaving), "queuedCheckpointFullWrites": len(checkpoints)}

    async def forget_collection(self, ns: str) -> None:
        """The collection is being dropped: forget its buckets and its journal records."""
        self.catalog.forget(ns)
        self.logs.pop(ns, None)
        self._horizon.pop(ns, None)
        stream = journal.stream_of(ns)
        await asyncio.wrap_future(self.engine.write(lambda w: w.journal_drop(stream)))

    async def close_collection(self, ns: str, buckets: list[Any] | None = None) -> None:
        """Close every live bucket of ``ns`` (only ``buckets`` when given) and wait until each is written
        in full (then it leaves memory). Used before operations that write the buckets collection
        directly; raises when the writes fail (the buckets then stay in memory, nothing is lost).

        The buckets are closed in one step on the event loop, so inserts arriving meanwhile open new
        buckets instead of reviving the closed ones: the wait is bounded even under continuous ingest."""
        if self.catalog.close_all(ns, buckets):
            state = self.catalog.get(ns)
            closing = (list(state.live.values()) if buckets is None else buckets) if state is not None else []
            await self.commit((ns,))
            # a commit carries at most FULL_WRITES_PER_COMMIT of them: wait for the ones closed here
            while any(not bucket.left for bucket in closing):
                await self.commit((ns,))

    async def checkpoint(self, *, force: bool = False, ns: str | None = None) -> int:
        """Write journaled buckets in full; returns buckets marked. ``force``: every journaled bucket
        (else only those that doubled since their last full write); ``ns``: that collection's only. The
        buckets stay in memory, open as they were."""
        marked = await self._mark_checkpoint(force=force, ns=ns)
        while self.catalog.deferred:  # (spread over commits: FULL_WRITES_PER_COMMIT)
            await self.commit(())
        return marked

    async def _mark_checkpoint(self, *, force: bool, ns: str | None = None) -> int:
        """The checkpoint's marking in slices (``catalog.checkpoint_slices``): the loop is yielded after
        each, and a slice that marked buckets is taken by a commit before the next one marks more, so
        neither a slice nor a drain walks more than ``MAINTENANCE_SLICE`` buckets on the loop. The
        full writes themselves are spread over the commits that follow (FULL_WRITES_PER_COMMIT)."""
        marked = 0
        for count in self.catalog.checkpoint_slices(force=force, ns=ns):
            marked += count
            if count:
                await self.commit(())
            else:
                await asyncio.sleep(0)
        if not force:
            marked += await self._mark_journal_holders(ns)
        return marked

    async def _mark_journal_holders(self, ns: str | None) -> int:
        """The periodic checkpoint's second rule: every bucket in memory still holding a journal record
        from ``JOURNAL_HOLD_CHECKPOINTS`` checkpoints ago is marked for a full write, however little it grew. A record
        names the buckets of a whole insert (up to a table's), and goes only once every one of them is
        stored: the doubling rule alone let one bucket that stays in memory, one row per round of a
        load (a million series), keep every later record — the journal grew for as long as the load
        ran. So the journal holds about ``JOURNAL_HOLD_CHECKPOINTS`` + 1 checkpoint intervals of records
        (and whatever the writer has not reached yet). Walks only those records' buckets, ``MAINTENANCE_SLICE`` at a time."""
        marked = examined = 0
        catalog = self.catalog
        for name, log_ in list(self.logs.items()):
            if ns is not None and name != ns:
                continue
            marks = self._horizon.setdefault(name, deque())
            marks.append(log_.records[-1][0] if log_.records else -1)
            if len(marks) <= JOURNAL_HOLD_CHECKPOINTS:
                continue
            horizon = marks.popleft()
            state = catalog.get(name)
            for refs, tos in log_.holding(horizon):
                for ref, to in zip(refs, tos, strict=True):
                    examined += 1
                    if examined % MAINTENANCE_SLICE == 0:
                        await (self.commit(()) if marked else asyncio.sleep(0))
                        state = catalog.get(name)
                    bucket = ref()
                    if bucket is None or bucket.stored_count >= to or bucket.needs_full or state is None:
                        continue  # covered, gone, already marked, or its collection dropped
                    live = state.live.get(bucket.id)
                    if live is bucket and live is not None and live.state in IN_MEMORY:
                        catalog.mark_full(live)
                        marked += 1
        if marked:
            await self.commit(())
        return marked

    def start_maintenance(self) -> None:
        """Archived buckets not reopened for a while leave memory (every second); periodic checkpoints
        (every ``checkpoint_interval``, a task of their own: a checkpoint over many buckets takes many
        slices and commits, and must not hold the retiring back meanwhile)."""
        async def retiring() -> None:
            while True:
                await asyncio.sleep(RETIRE_INTERVAL_SECONDS)
                try:
                    retired = 0
                    for count in self.catalog.retire_slices():  # every bucket due, a slice at a time
                        retired += count
                        await asyncio.sleep(0)
                    self.catalog.maintain()
                    if retired:
                        await self.commit(())
                except Exception:  # noqa: BLE001 - keep going; the journal still holds the data
                    log.exception("time-series maintenance commit failed")

        async def checkpointing() -> None:
            while True:
                interval = self.checkpoint_interval()
                # 0 (none): asked again every second, so that setting it takes effect
                await asyncio.sleep(interval if interval > 0 else 1.0)
                if interval <= 0 or self.checkpoint_interval() <= 0:
                    continue
                try:
                    await self._mark_checkpoint(force=False)
                except Exception:  # noqa: BLE001 - keep going; the journal still holds the data
                    log.exception("time-series checkpoint commit failed")

        loop = asyncio.get_running_loop()
        self._maintenance = [loop.create_task(retiring()), loop.create_task(checkpointing())]

    async def close(self) -> None:
        """Shutdown: write every live bucket with journaled or pending rows in full."""
        for task in self._maintenance:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
        for state in self.catalog.collections.values():
            for bucket in state.live.values():
                if bucket.count > bucket.stored_count:
                    self.catalog.mark_full(bucket)
        while self.catalog.dirty or self.catalog.deferred:  # full writes are spread over commits
            before = len(self.catalog.dirty) + self.catalog.deferred
            await self.commit(())
            if len(self.catalog.dirty) + self.catalog.deferred >= before:  # storage refuses (the journal
                break  # still holds the rows)
