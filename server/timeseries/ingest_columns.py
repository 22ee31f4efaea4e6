"""Routing an accepted raw batch (``rawbatch.RawBatch``) into column-wise buckets: the ingest fast path.

``insert_batch`` gives exactly the buckets, sizes, statistics and rollovers that inserting the same
measurements one by one through ``BucketCatalog.insert`` gives (spec §3.3, 7.0 form), but decides
the common case for the whole batch at once:

1. every measurement's series (its normalized meta) and the slot of the series' open bucket;
2. vectorized rules for measurements whose series has an open bucket of this layout: time inside
   ``[start, start + span)``, position below the count limit, running size within the size limit;
3. series whose measurements all pass append them with one fancy-indexed assignment per field;
4. the others (no open bucket yet, a rollover inside the batch, ...) go series by series: each
   rule is applied to the first measurement that breaks it, in the general path's order, and the
   runs in between are appended column-wise. Where the general path would do something this one
   does not model (reopening an archived bucket, a series whose open bucket is a general-path
   bucket or has another layout), the rest of that series' measurements are decoded and handed to
   the general path, which converts a columnar bucket it meets (``BucketCatalog._convert``).

The catalog state stays in the catalog (``CollectionState.tables``); this module holds none.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from bson.objectid import ObjectId

from protocol.codec import decode
from server.timeseries.buckets import date_ms, new_bucket_id, round_start_seconds
from server.timeseries.catalog import reopen_candidates
from server.timeseries.columnstore import ColumnarBucket, SeriesTable
from server.timeseries.rawbatch import RawBatch

_COUNTER_SPACE = 0x1000000


def new_object_ids(n: int) -> np.ndarray:
    """``n`` new distinct ObjectIds as 12-byte voids: one timestamp and process-random part, and
    consecutive values of pymongo's process-wide counter (reserved under its lock)."""
    with ObjectId._inc_lock:
        base = ObjectId._inc
        ObjectId._inc = (base + n) % _COUNTER_SPACE
    prefix = int(time.time()).to_bytes(4, "big") + ObjectId._random()
    out = np.empty((n, 12), np.uint8)
    out[:, :9] = np.frombuffer(prefix, np.uint8)
    counters = (base + np.arange(n, dtype=np.int64)) % _COUNTER_SPACE
    out[:, 9] = counters >> 16
    out[:, 10] = (counters >> 8) & 0xFF
    out[:, 11] = counters & 0xFF
    return out.view("V12").reshape(-1)


def table_for(state: Any, batch: RawBatch) -> SeriesTable:
    table = state.tables.get(batch.layout.key)
    if table is None:
        options = state.options
        table = state.tables[batch.layout.key] = SeriesTable(batch.layout, state.ns, options.time_field,
                                                             options.meta_field)
    return table


def insert_batch(catalog: Any, state: Any, batch: RawBatch, loader: Any) -> bool:
    """Route and append ``batch``; False (and nothing changed) when it must take the general path."""
    table = table_for(state, batch)
    sids = table.series_ids(batch.metas, batch.n)
    if sids is None:
        return False
    if table.generated_id:
        batch.columns["_id"] = new_object_ids(batch.n)
    state.last_layout = batch.layout
    catalog.tick += 1
    n = batch.n
    times = batch.times
    slots = table.series_slot[sids]
    order = np.argsort(slots, kind="stable")
    sorted_slots = slots[order]
    starts = np.flatnonzero(np.concatenate(([True], sorted_slots[1:] != sorted_slots[:-1])))
    lengths = np.diff(np.append(starts, n))
    group_slots = sorted_slots[starts]
    valid = sorted_slots >= 0
    safe = np.where(valid, sorted_slots, 0)
    rank = np.arange(n) - np.repeat(starts, lengths)
    positions = table.count[safe] + rank
    sorted_times = times[order]
    start_ms = table.start_ms[safe]
    span_ms = state.options.bucket_max_span_seconds * 1000
    ok = valid & (sorted_times >= start_ms) & (sorted_times < start_ms + span_ms) & (positions < catalog.max_count)
    sizes = table.row_sizes(positions)
    running = np.cumsum(sizes)
    before_group = np.repeat(running[starts] - sizes[starts], lengths)
    ok &= table.size[safe] + running - before_group <= catalog.max_size
    group_ok = np.logical_and.reduceat(ok, starts) & (group_slots >= 0)
    added = 0
    if group_ok.any():
        take = np.repeat(group_ok, lengths)
        docs = order[take]
        doc_slots = sorted_slots[take]
        doc_positions = positions[take]
        table.reserve_rows(int(doc_positions.max()) + 1)
        for name in table.varying:
            table.data[name][doc_slots, doc_positions] = batch.columns[name][docs]
        fast_slots = group_slots[group_ok]
        fast_lengths = lengths[group_ok]
        table.count[fast_slots] += fast_lengths
        grown = np.add.reduceat(sizes[take], np.concatenate(([0], np.cumsum(fast_lengths)[:-1])))
        table.size[fast_slots] += grown
        table.dirty[fast_slots] = True
        table.last_used[fast_slots] = catalog.tick
        added += int(grown.sum())
        catalog.dirty_tables.add(table)
    if not group_ok.all():
        slow = order[~np.repeat(group_ok, lengths)]
        added += _slow_series(catalog, state, table, batch, sids, slow, loader)
    catalog.memory += added * catalog.PYTHON_OVERHEAD
    if catalog.memory > catalog.memory_threshold:
        catalog._expire_idle()
    return True


def _slow_series(catalog: Any, state: Any, table: SeriesTable, batch: RawBatch, sids: np.ndarray,
                 docs: np.ndarray, loader: Any) -> int:
    """Measurements ``docs`` (arrival order) series by series; returns the bytes added."""
    by_series: dict[int, list[int]] = {}
    for doc, sid in zip(docs.tolist(), sids[docs].tolist(), strict=True):
        by_series.setdefault(sid, []).append(doc)
    added = 0
    for sid, series_docs in by_series.items():
        added += _one_series(catalog, state, table, batch, sid, np.asarray(series_docs, np.int64), loader)
    return added


def _one_series(catalog: Any, state: Any, table: SeriesTable, batch: RawBatch, sid: int, docs: np.ndarray,
                loader: Any) -> int:
    key = table.series_key[sid]
    stats = state.stats
    span_ms = state.options.bucket_max_span_seconds * 1000
    times = batch.times[docs]
    added = 0
    i, m = 0, len(docs)
    while i < m:
        t = int(times[i])
        bucket = state.open.get(key)
        if bucket is not None and (type(bucket) is not ColumnarBucket or bucket.table is not table):
            _general_path(catalog, state, batch, docs[i:], loader)
            return added
        kept_open = False
        if bucket is not None:
            start = bucket.start_s * 1000
            count = bucket.count
            reason = None
            if t - start >= span_ms or t < start:
                forward = t >= start
                stats["numBucketsArchivedDueToTimeForward" if forward else "numBucketsArchivedDueToTimeBackward"] += 1
                catalog._retire(state, bucket, archive=True)
                bucket = _reopen(catalog, state, table, sid, t, loader)
                if bucket is _GENERAL:
                    _general_path(catalog, state, batch, docs[i:], loader)
                    return added
            elif count >= catalog.max_count:
                reason = "Count"
            else:
                size = int(table.row_sizes(np.array([count]))[0])
                if bucket.size + size > catalog.max_size:
                    if count >= catalog.min_count or bucket.size + size > catalog.large_cap:
                        reason = "Size"
                    else:
                        stats["numBucketsKeptOpenDueToLargeMeasurements"] += 1
                        kept_open = True
            if reason is not None:
                stats["numBucketsClosedDueTo" + reason] += 1
                catalog._retire(state, bucket, archive=False)
                bucket = None
        else:
            bucket = _reopen(catalog, state, table, sid, t, loader)
            if bucket is _GENERAL:
                _general_path(catalog, state, batch, docs[i:], loader)
                return added
            if bucket is None:
                stats["numBucketsOpenedDueToMetadata"] += 1
        first = bucket is None
        if first:
            bucket = _open(catalog, state, table, sid, t)
        run = 1 if kept_open else _fit(catalog, table, bucket.slot, times[i:], span_ms, first)
        added += _append(catalog, table, bucket.slot, batch, docs[i:i + run], first)
        i += run
    return added


_GENERAL = object()  # "let the general path handle the rest of this series"


def _reopen(catalog: Any, state: Any, table: SeriesTable, sid: int, t_ms: int, loader: Any) -> Any:
    """An archived bucket of the series whose range holds ``t_ms`` and that can take a measurement,
    reopened (``BucketCatalog._reopen``, column-wise); None if there is none; ``_GENERAL`` when the
    candidate is a general-path bucket or a stored bucket of another layout."""
    key = table.series_key[sid]
    for candidates, index, bucket_id in reopen_candidates(state, key, t_ms):
        bucket = state.live.get(bucket_id)
        if bucket is None and loader is not None:
            doc = loader(state.ns, bucket_id)
            if doc is not None:
                bucket = table.load(doc, sid, state.ns)
                if bucket is None:
                    return _GENERAL
                state.live[bucket.id] = bucket
                catalog.memory += catalog._footprint(bucket)
        elif bucket is not None and (type(bucket) is not ColumnarBucket or bucket.table is not table):
            return _GENERAL
        if bucket is None or bucket.count >= catalog.max_count:
            del candidates[index]
            continue
        count = bucket.count
        size = int(table.row_sizes(np.array([count]))[0])
        if bucket.size + size > catalog.max_size and (count >= catalog.min_count or
                                                      bucket.size + size > catalog.large_cap):
            continue
        del candidates[index]
        bucket.open = True
        state.open[key] = bucket
        table.series_slot[sid] = bucket.slot
        state.stats["numBucketsReopened"] += 1
        return bucket
    return None


def _open(catalog: Any, state: Any, table: SeriesTable, sid: int, t_ms: int) -> ColumnarBucket:
    options = state.options
    start_s = round_start_seconds(t_ms, options.bucket_rounding_seconds)
    slot = table.allocate()
    bucket = ColumnarBucket(table, slot, sid, new_bucket_id(start_s), state.ns, start_s)
    state.open[bucket.key] = bucket
    state.live[bucket.id] = bucket
    table.series_slot[sid] = slot
    catalog.memory += catalog._footprint(bucket)
    return bucket


def _fit(catalog: Any, table: SeriesTable, slot: int, times: np.ndarray, span_ms: int, first: bool) -> int:
    """How many of the measurements at ``times`` (the first one already accepted) join the bucket in
    ``slot`` before a rule stops them."""
    count = int(table.count[slot])
    positions = count + np.arange(len(times))
    sizes = table.row_sizes(positions)
    if first:
        sizes[0] += table.first_extra
    start = int(table.start_ms[slot])
    ok = (times >= start) & (times < start + span_ms) & (positions < catalog.max_count)
    ok &= int(table.size[slot]) + np.cumsum(sizes) <= catalog.max_size
    ok[0] = True
    return len(times) if ok.all() else int(np.argmin(ok))


def _append(catalog: Any, table: SeriesTable, slot: int, batch: RawBatch, docs: np.ndarray, first: bool) -> int:
    count = int(table.count[slot])
    k = len(docs)
    table.reserve_rows(count + k)
    for name in table.varying:
        table.data[name][slot, count:count + k] = batch.columns[name][docs]
    sizes = table.row_sizes(count + np.arange(k))
    grown = int(sizes.sum()) + (table.first_extra if first else 0)
    table.count[slot] = count + k
    table.size[slot] += grown
    table.dirty[slot] = True
    table.last_used[slot] = catalog.tick
    catalog.dirty_tables.add(table)
    return grown


def _general_path(catalog: Any, state: Any, batch: RawBatch, docs: np.ndarray, loader: Any) -> None:
    """Decode measurements ``docs`` of one series and insert them through the general path."""
    time_field = state.options.time_field
    ids = batch.columns.get("_id") if "_id" not in batch.layout.fields else None
    items = []
    for doc in docs.tolist():
        start = batch.offsets[doc]
        length = int.from_bytes(batch.buffer[start:start + 4], "little")
        measurement = decode(memoryview(batch.buffer)[start:start + length])
        if ids is not None:
            measurement = {"_id": ObjectId(bytes(ids[doc])), **measurement}
        time_value = measurement[time_field]
        items.append((measurement, date_ms(time_value), time_value))
    catalog.insert_many(state, items, loader)

