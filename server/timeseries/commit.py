"""Group commit, journal records, checkpoints and start-up recovery of time-series buckets.

Durability scheme (architecture.md, "The write path"):
- Inserts append to in-memory buckets (catalog, event loop), then await ``Committer.commit``. While a
  commit is in flight, newly arriving inserts queue up; the next drain takes *every* dirty bucket of
  every waiting insert and issues one ``engine.write`` per collection (storage merges all queued
  writes into one LMDB transaction and one fsync). Each waiting insert resolves after its data is
  durable; that is what ``numCommits`` / ``numWaits`` count.
- For a bucket that stays open, a commit appends ONE small journal record with just the new
  measurements (stream ``b"ts:" + bucket _id``), never the whole bucket. A bucket that closes,
  is archived, or is checkpointed gets its full v1 document written (upsert, clustered on ``_id``)
  and its journal stream trimmed in the same transaction.
- ``recover(engine)`` at start-up replays the journal onto the stored documents, writes them in full and
  trims the journal: a restart closes all buckets.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable
from typing import Any

import numpy as np
from bson.objectid import ObjectId

from protocol.codec import decode, encode
from protocol.errors import ErrorCode, MongoError
from server.query import plan as planner
from server.timeseries import commitlog
from server.timeseries import options as ts_options
from server.timeseries.buckets import MISSING, OpenBucket, date_ms, round_start_seconds
from server.timeseries.catalog import BucketCatalog
from server.timeseries.columnstore import ColumnarBucket

log = logging.getLogger("tidemark.timeseries")

JOURNAL_PREFIX = b"ts:"
TRIM_ALL = 2**62


def stream_of(bucket_id: ObjectId) -> bytes:
    return JOURNAL_PREFIX + bucket_id.binary


def drop_stream(w: Any, stream: bytes) -> None:
    """Forget every journal record of a bucket (its full document now holds them)."""
    drop = getattr(w, "journal_drop", None)
    if drop is not None:
        drop(stream)
    else:
        w.journal_trim(stream, TRIM_ALL)


def clustered_rid(bucket_id: Any) -> bytes:
    from storage.keys import encode_key

    return encode_key((bucket_id,), (1,))


def journal_record(bucket: OpenBucket, measurements: list[dict], first: bool = True) -> bytes:
    """One append record: a BSON header followed by a BSON document ``{m: [measurements]}`` with just
    the new measurements. The first record of a stream carries what rebuilding a never-written bucket
    needs (time/meta field names, start, meta); later ones only ``{ns, id}``."""
    header: dict[str, Any] = {"ns": bucket.ns, "id": bucket.id}
    if first:
        header["tf"] = bucket.time_field
        header["start"] = bucket.start_s
        if bucket.meta_field is not None:
            header["mf"] = bucket.meta_field
        if bucket.meta is not MISSING:
            header["meta"] = bucket.meta
    return encode(header) + encode({"m": measurements})


def parse_journal_record(payload: bytes) -> tuple[dict, list[dict]]:
    """(header, measurements) of a record written by ``journal_record``."""
    header_length = int.from_bytes(payload[:4], "little")
    return decode(payload[:header_length]), decode(payload[header_length:])["m"]


# ------------------------------------------------------------------ writer-thread side


def write_full_document(w: Any, info: Any, doc: dict, raw: bytes | None = None, bucket_form: Any = None) -> int:
    """Upsert a bucket document into its clustered collection, keeping secondary indexes in step;
    returns the bytes written. ``raw``: the document's BSON when the caller has it, ``doc`` then
    needs only ``_id``, ``control`` and ``meta`` (what bucket indexes read) unless an index reads
    ``data``; ``bucket_form``: the storage codec's form of it built another way (storage's
    ``ValueCodec.pack``)."""
    rid = clustered_rid(doc["_id"])
    if raw is None:
        raw = encode(doc)
    elif info.indexes and any(str(path).startswith("data") for spec in info.indexes for path in spec["key"]):
        doc = decode(raw)
    old = w.get(info, rid)
    if old is None:
        w.insert(info, raw, planner.index_key_map(info.indexes, doc) if info.indexes else {}, rid=rid,
                 bucket_form=bucket_form)
    elif info.indexes:
        w.update(info, rid, raw, planner.index_key_map(info.indexes, decode(old)),
                 planner.index_key_map(info.indexes, doc), bucket_form=bucket_form)
    else:
        w.update(info, rid, raw, {}, {}, bucket_form=bucket_form)
    return len(raw)


class WriteCounters:
    """Bytes the commits wrote (journal records vs full bucket documents); updated on the writer thread."""

    def __init__(self) -> None:
        self.journal_records = 0
        self.journal_bytes = 0
        self.full_documents = 0
        self.full_bytes = 0

    def as_dict(self) -> dict[str, int]:
        return dict(vars(self))


def _apply(ns: str, ops: list[tuple], counters: WriteCounters) -> Any:
    """The write of one collection's share of a commit. Ops: ``("journal", bucket id, (bucket,
    measurements, first))`` a general-path bucket's record; ``("full", bucket id, document)`` or
    ``("full", bucket id, (summary, bson, bucket form))`` a full write (which also drops the bucket's own journal
    stream); ``("record", log entry, bson)`` a column-wise table's record; ``("trim", stream, seq)``.
    Returns ``[(log entry, seq)]`` for the records appended."""
    def fn(w: Any) -> list:
        info = w.get_collection(ns)
        if info is None:
            raise MongoError(ErrorCode.NamespaceNotFound, f"Namespace {ns} was dropped during the insert")
        appended = []
        for kind, target, payload in ops:
            if kind == "journal":
                record = journal_record(*payload)
                w.journal_append(stream_of(target), record)
                counters.journal_records += 1
                counters.journal_bytes += len(record)
            elif kind == "full":
                if type(payload) is tuple:
                    counters.full_bytes += write_full_document(w, info, *payload)
                else:
                    counters.full_bytes += write_full_document(w, info, payload)
                counters.full_documents += 1
                drop_stream(w, stream_of(target))
            elif kind == "record":
                appended.append((target, w.journal_append(commitlog.stream_of_collection(ns), payload)))
                counters.journal_records += 1
                counters.journal_bytes += len(payload)
            else:  # "trim"
                w.journal_trim(target, payload)
        return appended

    return fn


# ------------------------------------------------------------------ event-loop side


class Committer:
    """Turns dirty buckets into commit groups; one instance per server (``server.ts_committer``)."""

    def __init__(self, engine: Any, catalog: BucketCatalog, *, checkpoint_interval: float = 60.0):
        self.engine = engine
        self.catalog = catalog
        self.checkpoint_interval = checkpoint_interval
        self._waiters: list[tuple[asyncio.Future, frozenset[str]]] = []
        self._running = False
        self._task: asyncio.Task | None = None
        self._checkpointer: asyncio.Task | None = None
        self.groups = 0
        self.counters = WriteCounters()
        self.logs: dict[str, commitlog.CommitLog] = {}  # ns -> records of column-wise buckets in the journal

    def loader(self, ns: str, bucket_id: Any) -> dict | None:
        """The stored document of one bucket (reopening an archived bucket)."""
        with self.engine.read() as r:
            info = r.get_collection(ns)
            raw = r.get(info, clustered_rid(bucket_id)) if info is not None else None
        return decode(raw) if raw is not None else None

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

    def _drain(self) -> dict[str, tuple[list[tuple], list, int]]:
        groups: dict[str, tuple[list[tuple], list, int]] = {}
        for bucket in self.catalog.take_dirty():
            state = self.catalog.get(bucket.ns)
            if state is None or state.live.get(bucket.id) is not bucket:
                continue  # dropped, or superseded
            if type(bucket) is ColumnarBucket:
                self._drain_columnar(groups, state, bucket)
                continue
            ops, full, n = groups.setdefault(bucket.ns, ([], [], 0))
            measurements, bucket.pending = bucket.pending, []
            count = len(measurements)
            if bucket.needs_full:
                bucket.needs_full = False
                bucket.full_size = bucket.size
                bucket.full_count = bucket.count
                bucket.journaled = False
                ops.append(("full", bucket.id, bucket.document()))
                full.append((bucket, None))
            elif measurements:
                ops.append(("journal", bucket.id, (bucket, measurements, not bucket.journaled)))
                bucket.journaled = True
            else:
                continue
            if count:
                state.stats["numBucketUpdates" if bucket.committed else "numBucketInserts"] += 1
                bucket.committed = True
            groups[bucket.ns] = (ops, full, n + count)
        for table in self.catalog.take_dirty_tables():
            self._drain_table(groups, table)
        for ns, log in self.logs.items():
            upto = log.trimmable()
            if upto is not None:
                groups.setdefault(ns, ([], [], 0))[0].append(("trim", log.stream, upto))
        return groups

    def _drain_columnar(self, groups: dict, state: Any, bucket: ColumnarBucket) -> None:
        """A column-wise bucket marked by the catalog: a full write if it needs one, else its new rows
        go with its table's record."""
        table = bucket.table
        if not bucket.needs_full:
            table.dirty[bucket.slot] = True
            self.catalog.dirty_tables.add(table)
            return
        ops, full, n = groups.setdefault(bucket.ns, ([], [], 0))
        slot = bucket.slot
        count = int(table.count[slot])
        added = count - int(table.durable[slot])
        summary, raw, bucket_form = bucket.full_write()
        bucket.needs_full = False
        bucket.full_size = bucket.size
        bucket.full_count = count
        bucket.stored = True
        table.durable[slot] = count
        ops.append(("full", bucket.id, (summary, raw, bucket_form)))
        full.append((bucket, raw))
        if added:
            state.stats["numBucketUpdates" if bucket.committed else "numBucketInserts"] += 1
            bucket.committed = True
            table.ever_committed[slot] = True
        groups[bucket.ns] = (ops, full, n + added)

    def _drain_table(self, groups: dict, table: Any) -> None:
        """One journal record with the new rows of every dirty bucket of ``table``."""
        slots = np.flatnonzero(table.dirty)
        table.dirty[slots] = False
        if not len(slots):
            return
        lo = table.durable[slots]
        hi = table.count[slots]
        keep = hi > lo
        slots, lo, hi = slots[keep], lo[keep], hi[keep]
        buckets = [table.buckets[slot] for slot in slots.tolist()]
        state = self.catalog.get(table.ns)
        if state is None:
            return
        live = state.live
        alive = [b is not None and live.get(b.id) is b for b in buckets]
        if not all(alive):
            mask = np.asarray(alive, bool)
            slots, lo, hi = slots[mask], lo[mask], hi[mask]
            buckets = [b for b, a in zip(buckets, alive, strict=True) if a]
        if not buckets:
            return
        ops, full, n = groups.setdefault(table.ns, ([], [], 0))
        log = self.logs.get(table.ns)
        if log is None:
            log = self.logs[table.ns] = commitlog.CommitLog(table.ns)
        payload = commitlog.build_record(table, table.ns, buckets, slots, lo, hi)
        ops.append(("record", log.add(buckets, hi.tolist()), payload))
        first = ~table.ever_committed[slots]
        stats = state.stats
        stats["numBucketInserts"] += int(first.sum())
        stats["numBucketUpdates"] += int(len(slots) - first.sum())
        table.ever_committed[slots] = True
        table.durable[slots] = hi
        for bucket in buckets:
            bucket.committed = True
        groups[table.ns] = (ops, full, n + int((hi - lo).sum()))

    async def _run(self) -> None:
        try:
            while self._waiters:
                # Let inserts whose frames already arrived route their measurements first (one pass of
                # the ready tasks): they join this commit instead of waiting a whole fsync for the next.
                await asyncio.sleep(0)
                waiters, self._waiters = self._waiters, []
                groups = self._drain()
                errors: dict[str, BaseException] = {}
                futures = {ns: self.engine.write(_apply(ns, ops, self.counters)) for ns, (ops, _, _) in groups.items() if ops}
                for ns, fut in futures.items():
                    try:
                        for entry, seq in await asyncio.wrap_future(fut):
                            entry[0] = seq
                    except BaseException as exc:  # noqa: BLE001 - handed to the waiting inserts
                        errors[ns] = exc
                self.groups += 1
                for ns, (ops, full, count) in groups.items():
                    state = self.catalog.get(ns)
                    if ns in errors or state is None:
                        continue
                    if count or any(op[0] != "trim" for op in ops):
                        state.stats["numCommits"] += 1
                    state.stats["numMeasurementsCommitted"] += count
                    for bucket, raw in full:
                        self.catalog.written_full(bucket, raw)
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

    async def forget_collection(self, ns: str) -> None:
        """The collection is being dropped: forget its buckets and trim their journal streams."""
        streams = [stream_of(b.id) for b in self.catalog.live_buckets(ns)]
        if self.logs.pop(ns, None) is not None:
            streams.append(commitlog.stream_of_collection(ns))
        self.catalog.forget(ns)
        if streams:
            def fn(w: Any) -> None:
                for stream in streams:
                    drop_stream(w, stream)

            await asyncio.wrap_future(self.engine.write(fn))

    async def close_collection(self, ns: str) -> None:
        """Close every live bucket of ``ns`` and wait until each is written in full (then the catalog
        no longer holds them). Used before operations that rewrite or delete stored buckets directly.

        The buckets are closed in one step on the event loop (and the archive is cleared), so inserts
        arriving meanwhile open new buckets instead of reviving the closed ones: the wait is bounded
        even under continuous ingest."""
        if self.catalog.close_all(ns):
            await self.commit((ns,))

    async def checkpoint(self, *, force: bool = False) -> int:
        """Write journaled buckets in full and drop their journal streams; returns buckets written.
        ``force``: every journaled bucket (else only those that doubled since their last full write)."""
        marked = self.catalog.checkpoint_all(force=force)
        if marked:
            await self.commit(())
        return marked

    def start_checkpointer(self) -> None:
        async def loop() -> None:
            while True:
                await asyncio.sleep(self.checkpoint_interval)
                try:
                    await self.checkpoint()
                except Exception:  # noqa: BLE001 - keep checkpointing; the journal still holds the data
                    log.exception("time-series checkpoint failed")

        self._checkpointer = asyncio.get_running_loop().create_task(loop())

    async def close(self) -> None:
        """Shutdown: write every live bucket in full (a restart closes all buckets)."""
        if self._checkpointer is not None:
            self._checkpointer.cancel()
            with contextlib.suppress(BaseException):
                await self._checkpointer
        for state in self.catalog.collections.values():
            for bucket in state.live.values():
                if bucket.journaled or bucket.pending:
                    bucket.needs_full = True
                    self.catalog.dirty[id(bucket)] = bucket
        if self.catalog.dirty:
            await self.commit(())


# ------------------------------------------------------------------ recovery


def recover(engine: Any) -> int:
    """Replay the time-series journal into full bucket documents; returns the buckets rebuilt.

    Column-wise records (``commitlog``) first, in seq order and idempotently by position, then the
    general-path buckets' own streams (a bucket converted to the general path is written in full
    before its own stream starts, so its stream only continues the rows its records hold)."""
    streams: dict[bytes, list[tuple[dict, list[dict]]]] = {}
    table_records: dict[bytes, list[bytes]] = {}
    with engine.read() as r:
        for stream, _seq, payload in r.journal_scan():
            stream = bytes(stream)
            if stream.startswith(commitlog.STREAM_PREFIX):
                table_records.setdefault(stream, []).append(bytes(payload))
            elif stream.startswith(JOURNAL_PREFIX):
                streams.setdefault(stream, []).append(parse_journal_record(bytes(payload)))
    if not streams and not table_records:
        return 0

    def fn(w: Any) -> int:
        rebuilt: dict[Any, tuple[Any, OpenBucket]] = {}
        for stream, payloads in table_records.items():
            for payload in payloads:
                _replay_record(w, payload, rebuilt)
            drop_stream(w, stream)
        for stream, records in streams.items():
            first = records[0][0]
            info = w.get_collection(first["ns"])
            if info is not None:
                known = rebuilt.get(first["id"])
                rebuilt[first["id"]] = (info, _rebuild(w, info, records, known[1] if known else None))
            drop_stream(w, stream)
        for info, bucket in rebuilt.values():
            write_full_document(w, info, bucket.document())
        return len(rebuilt)

    rebuilt = engine.write(fn).result()
    log.info("time-series recovery rebuilt %d bucket(s) from the journal", rebuilt)
    return rebuilt


def _replay_record(w: Any, payload: bytes, rebuilt: dict) -> None:
    header, entries = commitlog.parse_record(payload)
    info = w.get_collection(header["ns"])
    if info is None:
        return
    options = ts_options.from_document((info.options or {}).get("timeseries") or {"timeField": header["tf"]})
    time_field, meta_field = options.time_field, options.meta_field
    for bucket_id, lo, hi, new, rows in entries:
        known = rebuilt.get(bucket_id)
        bucket = known[1] if known else None
        if bucket is None:
            raw = w.get(info, clustered_rid(bucket_id))
            if raw is not None:
                bucket = OpenBucket.from_document(decode(raw), info.ns, time_field, meta_field)
            elif new is not None:
                bucket = OpenBucket(bucket_id, info.ns, time_field, meta_field, new.get("meta", MISSING),
                                    new["start"])
            else:
                continue  # written in full and since removed (drop, TTL, delete): nothing to restore
        if not lo <= bucket.count < hi:
            if bucket.count < lo:
                log.warning("time-series recovery: bucket %s holds %d rows, its record starts at %d",
                            bucket_id, bucket.count, lo)
            continue
        for measurement in rows[bucket.count - lo:]:
            time_value = measurement[time_field]
            bucket.append(measurement, date_ms(time_value), time_value)
        rebuilt[bucket_id] = (info, bucket)


def _rebuild(w: Any, info: Any, records: list[tuple[dict, list[dict]]], bucket: OpenBucket | None = None) -> OpenBucket:
    options = ts_options.from_document((info.options or {}).get("timeseries") or {"timeField": records[0][0]["tf"]})
    time_field, meta_field = options.time_field, options.meta_field
    bucket_id = records[0][0]["id"]
    raw = w.get(info, clustered_rid(bucket_id)) if bucket is None else None
    if bucket is not None:
        pass
    elif raw is not None:
        bucket = OpenBucket.from_document(decode(raw), info.ns, time_field, meta_field)
    else:
        first = next((header for header, _ in records if "start" in header), None)
        sample = records[0][1][0]
        if first is not None:
            start, meta = first["start"], first.get("meta", MISSING)
        else:  # the stream lost its first record (a failed commit): derive from the measurements
            start = round_start_seconds(date_ms(sample[time_field]), options.bucket_rounding_seconds)
            meta = sample.get(meta_field, MISSING) if meta_field is not None else MISSING
        bucket = OpenBucket(bucket_id, info.ns, time_field, meta_field, meta, start)
    for _header, measurements in records:
        for measurement in measurements:
            time_value = measurement[time_field]
            bucket.append(measurement, date_ms(time_value), time_value)
    return bucket
