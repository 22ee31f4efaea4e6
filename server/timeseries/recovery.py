"""Start-up recovery: the one replay of the time-series journal (journal.py) into full bucket documents.

Every collection stream is read in seq order. A record's rows are applied to their bucket — the stored
document when there is one, else a bucket the record itself starts (``new``) — from the bucket's
current count on (idempotent by position: rows a stored document already holds are skipped). Every
rebuilt bucket is then written in full and the streams dropped, in one transaction: a restart closes
all buckets (they are reopened by query when their series continues, reopen.py).
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from tidemark.core.collection import default_collation_of, effective_collation
from tidemark.protocol.codec import decode
from tidemark.storage.records import clustered_rid
from tidemark.timeseries import journal
from tidemark.timeseries import options as ts_options
from tidemark.timeseries.batch import RowBatch, table_key_of_row
from tidemark.timeseries.bucket import Bucket
from tidemark.timeseries.bucketdoc import MISSING, meta_key
from tidemark.timeseries.catalog import BucketCatalog, CollectionState
from tidemark.timeseries.commit import write_full_document

log = logging.getLogger("tidemark.timeseries")


def recover(engine: Any) -> int:
    """Replay the journal into full bucket documents; returns the buckets rebuilt."""
    streams: dict[bytes, list[bytes]] = {}
    foreign = 0
    with engine.read() as r:
        for stream, _seq, payload in r.journal_scan():
            stream = bytes(stream)
            if stream.startswith(journal.STREAM_PREFIX):
                streams.setdefault(stream, []).append(bytes(payload))
            elif stream.startswith(b"ts:"):
                foreign += 1
    if foreign:
        log.error("time-series recovery: %d journal record(s) of an older Tidemark version are left in place "
                  "(start that version once and shut it down cleanly to apply them)", foreign)
    if not streams:
        return 0

    def fn(w: Any) -> int:
        catalog = BucketCatalog(memory_threshold=1 << 62)
        states: dict[str, CollectionState | None] = {}
        rebuilt: dict[Any, tuple[Any, Bucket]] = {}
        for stream, payloads in streams.items():
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
                    _replay(w, catalog, state, entries, rebuilt)
            w.journal_drop(stream)
        current: dict[str, Any] = {}  # ns -> its info as the last write left it (multikey flags set)
        for info, bucket in rebuilt.values():
            parts = bucket.document_parts(bucket.count)
            raw = parts.bson()
            current[info.ns] = write_full_document(w, current.get(info.ns, info), parts.summary, raw,
                                                   parts.codec_form())
        return len(rebuilt)

    rebuilt = engine.write(fn).result()
    log.info("time-series recovery rebuilt %d bucket(s) from the journal", rebuilt)
    return rebuilt


def _replay(w: Any, catalog: BucketCatalog, state: CollectionState, entries: list[Any], rebuilt: dict[str, Any]) -> None:
    info = w.get_collection(state.ns)
    options = state.options
    for bucket_id, lo, hi, new, rows in entries:
        known = rebuilt.get(bucket_id)
        bucket = known[1] if known else None
        if bucket is None:
            raw = w.get(info, clustered_rid(bucket_id))
            if raw is not None:
                doc = decode(raw)
                meta = doc.get("meta", MISSING)
                bucket = catalog.load(state, doc, state.series.sid(meta_key(meta), meta))
                if bucket is None:
                    log.warning("time-series recovery: stored bucket %s cannot take its journal rows", bucket_id)
                    continue
            elif new is not None and rows:
                meta = new.get("meta", MISSING)
                sid = state.series.sid(meta_key(meta), meta)
                table = state.table(table_key_of_row(rows[0], options.time_field, options.meta_field))
                bucket = Bucket(table, sid, meta_key(meta), meta, bucket_id, state.ns, new["start"], options.meta_field)
                state.live[bucket.id] = bucket
            else:
                continue  # written in full and since removed (drop, TTL, delete): nothing to restore
        count = bucket.count
        if not lo <= count < hi:
            if count < lo:
                log.warning("time-series recovery: bucket %s holds %d rows, its record starts at %d",
                            bucket_id, count, lo)
            continue
        todo = rows[count - lo:]
        batch = RowBatch(todo, np.zeros(len(todo), np.int64), [], [], options.meta_field)
        bucket.append_rows(batch.fields(range(len(todo))), len(todo), 0)
        rebuilt[bucket_id] = (info, bucket)
