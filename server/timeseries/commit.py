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

from bson.objectid import ObjectId

from protocol.codec import decode, encode
from protocol.errors import ErrorCode, MongoError
from server.query import plan as planner
from server.timeseries import options as ts_options
from server.timeseries.buckets import MISSING, OpenBucket, date_ms, round_start_seconds
from server.timeseries.catalog import BucketCatalog

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


def write_full_document(w: Any, info: Any, doc: dict) -> int:
    """Upsert a bucket document into its clustered collection, keeping secondary indexes in step;
    returns the bytes written."""
    rid = clustered_rid(doc["_id"])
    raw = encode(doc)
    old = w.get(info, rid)
    if old is None:
        w.insert(info, raw, planner.index_key_map(info.indexes, doc) if info.indexes else {}, rid=rid)
    elif info.indexes:
        w.update(info, rid, raw, planner.index_key_map(info.indexes, decode(old)),
                 planner.index_key_map(info.indexes, doc))
    else:
        w.update(info, rid, raw, {}, {})
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
    def fn(w: Any) -> int:
        info = w.get_collection(ns)
        if info is None:
            raise MongoError(ErrorCode.NamespaceNotFound, f"Namespace {ns} was dropped during the insert")
        for kind, bucket_id, payload in ops:
            if kind == "journal":
                record = journal_record(*payload)
                w.journal_append(stream_of(bucket_id), record)
                counters.journal_records += 1
                counters.journal_bytes += len(record)
            else:
                counters.full_bytes += write_full_document(w, info, payload)
                counters.full_documents += 1
                drop_stream(w, stream_of(bucket_id))
        return len(ops)

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

    def _drain(self) -> dict[str, tuple[list[tuple], list[OpenBucket], int]]:
        groups: dict[str, tuple[list[tuple], list[OpenBucket], int]] = {}
        for bucket in self.catalog.take_dirty():
            state = self.catalog.get(bucket.ns)
            if state is None or state.live.get(bucket.id) is not bucket:
                continue  # dropped, or superseded
            ops, full, n = groups.setdefault(bucket.ns, ([], [], 0))
            measurements, bucket.pending = bucket.pending, []
            count = len(measurements)
            if bucket.needs_full:
                bucket.needs_full = False
                bucket.full_size = bucket.size
                bucket.journaled = False
                ops.append(("full", bucket.id, bucket.document()))
                full.append(bucket)
            elif measurements:
                ops.append(("journal", bucket.id, (bucket, measurements, not bucket.journaled)))
                bucket.journaled = True
            else:
                continue
            if count:
                state.stats["numBucketUpdates" if bucket.committed else "numBucketInserts"] += 1
                bucket.committed = True
            groups[bucket.ns] = (ops, full, n + count)
        return groups

    async def _run(self) -> None:
        try:
            while self._waiters:
                waiters, self._waiters = self._waiters, []
                groups = self._drain()
                errors: dict[str, BaseException] = {}
                futures = {ns: self.engine.write(_apply(ns, ops, self.counters)) for ns, (ops, _, _) in groups.items() if ops}
                for ns, fut in futures.items():
                    try:
                        await asyncio.wrap_future(fut)
                    except BaseException as exc:  # noqa: BLE001 - handed to the waiting inserts
                        errors[ns] = exc
                self.groups += 1
                for ns, (_, full, count) in groups.items():
                    state = self.catalog.get(ns)
                    if ns in errors or state is None:
                        continue
                    state.stats["numCommits"] += 1
                    state.stats["numMeasurementsCommitted"] += count
                    for bucket in full:
                        self.catalog.written_full(bucket)
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
    """Replay the time-series journal into full bucket documents; returns the buckets rebuilt."""
    streams: dict[bytes, list[tuple[dict, list[dict]]]] = {}
    with engine.read() as r:
        for stream, _seq, payload in r.journal_scan():
            stream = bytes(stream)
            if stream.startswith(JOURNAL_PREFIX):
                streams.setdefault(stream, []).append(parse_journal_record(bytes(payload)))
    if not streams:
        return 0

    def fn(w: Any) -> int:
        rebuilt = 0
        for stream, records in streams.items():
            first = records[0][0]
            info = w.get_collection(first["ns"])
            if info is not None:
                bucket = _rebuild(w, info, records)
                write_full_document(w, info, bucket.document())
                rebuilt += 1
            drop_stream(w, stream)
        return rebuilt

    rebuilt = engine.write(fn).result()
    log.info("time-series recovery rebuilt %d bucket(s) from the journal", rebuilt)
    return rebuilt


def _rebuild(w: Any, info: Any, records: list[tuple[dict, list[dict]]]) -> OpenBucket:
    options = ts_options.from_document((info.options or {}).get("timeseries") or {"timeField": records[0][0]["tf"]})
    time_field, meta_field = options.time_field, options.meta_field
    bucket_id = records[0][0]["id"]
    raw = w.get(info, clustered_rid(bucket_id))
    if raw is not None:
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
