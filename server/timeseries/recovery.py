"""Start-up recovery: the one replay of the time-series journal (journal.py) into full bucket documents.

Every collection stream is read in seq order. A record's rows are applied to their bucket — the stored
document when there is one, else a bucket the record itself starts (``new``) — from the bucket's
current count on (idempotent by position: rows a stored document already holds are skipped). A stream
is replayed in slices of about ``SLICE_BYTES`` of records, one transaction each: the slice's rows
applied, every bucket they touch written in full, the records trimmed. A kill -9 during recovery
leaves every slice either wholly done (its rows in stored documents, its records gone) or not at all;
a bucket a later slice continues is loaded back from what the earlier one stored. A restart closes all
buckets (they are reopened by query when their series continues, reopen.py).

A bucket whose full write still fails (a store written before insert-time validation caught what its
indexes refuse) never stops the start-up: its journaled measurements are moved, as plain documents, to
the regular collection ``<db>.tidemark.quarantine.<collection>`` (one document per bucket:
``{_id: bucket id, ns, error: {code, codeName, errmsg}, measurements: [...]}``), with an error log line
and a start-up warning (``getLog: "startupWarnings"``) naming it. Rows its stored document already held
stay in the buckets collection; rows a later slice holds for it join its quarantine document.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

import numpy as np
from bson.objectid import ObjectId

from tidemark import log as server_log
from tidemark.core.collection import default_collation_of, effective_collation
from tidemark.core.namespace import BUCKETS_PREFIX
from tidemark.protocol.codec import decode, encode
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.storage.errors import StorageError
from tidemark.storage.records import clustered_rid
from tidemark.timeseries import journal
from tidemark.timeseries import options as ts_options
from tidemark.timeseries.batch import RowBatch, table_key_of_row
from tidemark.timeseries.bucket import Bucket, full_documents
from tidemark.timeseries.bucketdoc import MISSING, meta_key
from tidemark.timeseries.catalog import BucketCatalog, CollectionState
from tidemark.timeseries.commit import FULL_WRITE_GROUP, write_full_document

log = logging.getLogger("tidemark.timeseries")
# bucket id -> (its collection's info, the bucket rebuilt, the journal rows it takes: appended once all
# records are read)
Rebuilt = dict[ObjectId, tuple[Any, Bucket, list[dict[str, Any]]]]
# a bucket's part of one journal record: (bucket id, from, to, new-bucket info or None, rows)
Entry = tuple[ObjectId, int, int, dict[str, Any] | None, list[dict[str, Any]]]

# journal bytes replayed per transaction: the buckets a slice rebuilds, their documents and the
# transaction's dirty pages are what recovery holds at once (one transaction for the whole journal held
# every rebuilt bucket: peak RSS 1,018 MB at 300,000 series for 690 MB running). A bucket whose rows
# two slices hold is loaded back and written again by the second (20,000 series x 2 rounds in 4 slices:
# 5.6 s of CPU instead of 2.1 in one), so slices are not smaller: ~200,000 journal rows each (the
# journal itself stays below about half of the open data: the checkpoint)
SLICE_BYTES = 16 << 20
QUARANTINE_PREFIX = "tidemark.quarantine."
QUARANTINE_LOG_ID = 8_100_001  # Tidemark's own log id: no mongod line says this


def recover(engine: Any) -> int:
    """Replay the journal into full bucket documents, slice after slice; returns the buckets rebuilt
    (a bucket rebuilt in several slices counts once per slice)."""
    with engine.read() as r:
        names = r.journal_streams()
    ours = [stream for stream in names if stream.startswith(journal.STREAM_PREFIX)]
    foreign = sum(1 for stream in names if stream.startswith(b"ts:"))
    if foreign:
        log.error("time-series recovery: the journal records of %d stream(s) of an older Tidemark version are left "
                  "in place (start that version once and shut it down cleanly to apply them)", foreign)
    rebuilt = 0
    for stream in ours:
        after = 0
        while True:
            payloads: list[bytes] = []
            size = 0
            with engine.read() as r:
                for _stream, seq, payload in r.journal_scan(stream, after):
                    payloads.append(bytes(payload))
                    size += len(payload)
                    after = seq
                    if size >= SLICE_BYTES:
                        break
            if not payloads:
                engine.write(functools.partial(_drop, stream)).result()  # (its seq high-water mark too)
                break
            # (the engine's futures are untyped: fn's answer)
            done: int = engine.write(functools.partial(_replay_slice, payloads, stream, after)).result()
            rebuilt += done
    if ours:
        log.info("time-series recovery rebuilt %d bucket(s) from the journal", rebuilt)
    return rebuilt


def _drop(stream: bytes, w: Any) -> None:
    w.journal_drop(stream)


def _replay_slice(payloads: list[bytes], stream: bytes, upto_seq: int, w: Any) -> int:
    """One transaction: the rows of ``payloads`` (a stream's records up to ``upto_seq``, in seq order)
    applied to their buckets, every bucket they touch written in full, and the records trimmed."""
    catalog = BucketCatalog(memory_threshold=1 << 62)
    states: dict[str, CollectionState | None] = {}
    rebuilt: Rebuilt = {}
    restored: dict[ObjectId, Bucket] = {}  # every bucket loaded or started so far, taking rows or not
    for payload in payloads:
        header, entries = journal.parse(payload)
        ns = header["ns"]
        if ns not in states:
            info = w.get_collection(ns)
            options = (info.options or {}).get("timeseries") if info is not None else None
            collation = effective_collation(None, default_collation_of(info)) if options else None
            states[ns] = catalog.collection(ns, ts_options.from_document(options), collation) if options else None
        state = states[ns]
        if state is not None:
            _replay(w, catalog, state, entries, rebuilt, restored)
    for _info, bucket, rows in rebuilt.values():
        # every record's rows of a bucket in one append (one per record cost a third of a
        # 100,000-series recovery: three records, three column conversions per bucket)
        batch = RowBatch(rows, np.zeros(len(rows), np.int64), [], [], bucket.meta_field)
        bucket.append_rows(batch.fields(range(len(rows))), len(rows), 0)
    current: dict[str, Any] = {}  # ns -> its info as the last write left it (multikey flags set)
    quarantined = 0
    items = list(rebuilt.items())
    for at in range(0, len(items), FULL_WRITE_GROUP):
        group = items[at:at + FULL_WRITE_GROUP]
        # built together as a commit builds them (one by one, 100,000 one-row buckets took 16.6 s
        # to recover, a third of it building documents); a group one of them breaks is built one
        # by one, so that only that one is quarantined
        try:
            built: list[Any] | None = full_documents(
                [(bucket, bucket.count, bucket.columns, bucket.table.data) for _, (_, bucket, _) in group])
        except (ValueError, TypeError, OverflowError):
            built = None
        for k, (bucket_id, (info, bucket, rows)) in enumerate(group):
            try:
                parts = built[k] if built is not None else bucket.document_parts(bucket.count)
                raw = parts.bson()
                current[info.ns] = write_full_document(w, current.get(info.ns, info), parts.summary, raw,
                                                       parts.codec_form())
            except (MongoError, StorageError, ValueError, TypeError, OverflowError) as error:
                # (LMDB's map-full is none of these: the engine grows the map and runs this again)
                _quarantine(w, info.ns, bucket_id, bucket, rows, error)
                quarantined += 1
    w.journal_trim(stream, upto_seq)
    return len(rebuilt) - quarantined


def _replay(w: Any, catalog: BucketCatalog, state: CollectionState, entries: list[Entry], rebuilt: Rebuilt,
            restored: dict[ObjectId, Bucket]) -> None:
    """Take one record's rows of each bucket from the bucket's count so far on (rows before it were
    replayed already or are in its stored document); they are appended once all records are read.
    A bucket is loaded once (``restored``), even when its stored document already holds a record's rows:
    loaded again for each later record naming it, a kill -9 after 300,000 series (buckets closed for
    memory and reopened, their records not yet trimmed) loaded 388,000 buckets for 218,000 rebuilt."""
    info = w.get_collection(state.ns)
    quarantine = w.get_collection(quarantine_ns(state.ns))  # (an earlier slice's, or an earlier start's)
    for bucket_id, lo, hi, new, rows in entries:
        known = rebuilt.get(bucket_id)
        if known is None and quarantine is not None and bucket_id not in restored and _quarantined_more(
                w, quarantine, info, state, bucket_id, lo, hi, rows):
            continue
        if known is not None:
            bucket, taken = known[1], known[2]
        else:
            found = restored.get(bucket_id)
            if found is None:
                found = _restored(w, catalog, state, bucket_id, new, rows)
                if found is None:
                    continue
                restored[bucket_id] = found
            bucket, taken = found, []
        count = bucket.count + len(taken)
        if not lo <= count < hi:
            if count < lo:
                log.warning("time-series recovery: bucket %s holds %d rows, its record starts at %d",
                            bucket_id, count, lo)
            continue
        taken += rows[count - lo:]
        rebuilt[bucket_id] = (info, bucket, taken)


def _restored(w: Any, catalog: BucketCatalog, state: CollectionState, bucket_id: ObjectId,
              new: dict[str, Any] | None, rows: list[dict[str, Any]]) -> Bucket | None:
    """The bucket a journal segment continues: its stored document loaded, else the new bucket the segment
    starts, else None (written in full and since removed — drop, TTL, delete —, or it cannot take rows)."""
    raw = w.get(w.get_collection(state.ns), clustered_rid(bucket_id))
    if raw is not None:
        doc = decode(raw)
        meta = doc.get("meta", MISSING)
        bucket = catalog.load(state, doc, state.series.sid(meta_key(meta), meta))
        if bucket is None:
            log.warning("time-series recovery: stored bucket %s cannot take its journal rows", bucket_id)
        return bucket
    if new is None or not rows:
        return None
    meta = new.get("meta", MISSING)
    sid = state.series.sid(meta_key(meta), meta)
    table = state.table(table_key_of_row(rows[0], state.options.time_field, state.options.meta_field))
    bucket = Bucket(table, sid, meta_key(meta), meta, bucket_id, state.ns, new["start"], state.options.meta_field)
    state.enter(bucket)
    return bucket


def _quarantined_more(w: Any, quarantine: Any, info: Any, state: CollectionState, bucket_id: ObjectId, lo: int,
                      hi: int, rows: list[dict[str, Any]]) -> bool:
    """Whether ``bucket_id`` was quarantined by an earlier slice: then the record's rows it does not
    hold yet join its quarantine document (which holds the rows after its stored document's, if any)."""
    raw = w.get(quarantine, clustered_rid(bucket_id))
    if raw is None:
        return False
    document = decode(raw)
    stored = w.get(info, clustered_rid(bucket_id)) if info is not None else None
    held = len((decode(stored).get("data") or {}).get(state.options.time_field) or {}) if stored else 0
    measurements = document["measurements"]
    at = held + len(measurements)
    if lo <= at < hi:
        meta_field = state.options.meta_field
        meta = next((m[meta_field] for m in measurements if meta_field is not None and meta_field in m), MISSING)
        more = rows[at - lo:]
        measurements += [{**row, meta_field: meta} for row in more] if meta is not MISSING and meta_field else more
        w.update(quarantine, clustered_rid(bucket_id), encode(document))
        log.error("time-series recovery: %d more journaled measurement(s) of quarantined bucket %s moved to %s",
                  len(more), bucket_id, quarantine.ns)
    return True


def quarantine_ns(buckets_ns: str) -> str:
    """``<db>.tidemark.quarantine.<collection>`` for ``<db>.system.buckets.<collection>``."""
    db, _, coll = buckets_ns.partition("." + BUCKETS_PREFIX)
    return f"{db}.{QUARANTINE_PREFIX}{coll}"


def _quarantine(w: Any, ns: str, bucket_id: Any, bucket: Bucket, rows: list[dict[str, Any]], error: BaseException) -> None:
    """Keep a bucket that cannot be written readable elsewhere (see the module), and say so loudly."""
    if isinstance(error, MongoError | StorageError):
        described = {"code": int(error.code), "codeName": error.code_name, "errmsg": str(error)}
    else:  # the bucket codec refused a value
        described = {"code": int(ErrorCode.InternalError), "codeName": "InternalError", "errmsg": repr(error)}
    target = quarantine_ns(ns)
    info = w.get_collection(target)
    if info is None:
        info = w.create_collection(target, {"clusteredIndex": {"key": {"_id": 1}, "unique": True}}, clustered=True)
    if bucket.meta is not MISSING and bucket.meta_field is not None:  # journal rows do not repeat the meta
        rows = [{**row, bucket.meta_field: bucket.meta} for row in rows]
    document = {"_id": bucket_id, "ns": ns, "error": described, "measurements": rows}
    if w.get(info, clustered_rid(bucket_id)) is None:
        w.insert(info, encode(document), rid=clustered_rid(bucket_id))
    server_log.error("STORAGE", QUARANTINE_LOG_ID, "Time-series bucket could not be written at recovery; its "
                     "journaled measurements were moved to a quarantine collection", ctx="initandlisten",
                     bucket=str(bucket_id), namespace=ns, quarantine=target, measurements=len(rows), error=described)
    server_log.warning("STORAGE", QUARANTINE_LOG_ID, f"{len(rows)} acknowledged measurement(s) of {ns} could not be "
                       f"written to their bucket ({described['errmsg']}); they are kept in {target}",
                       ctx="initandlisten", startup=True)
