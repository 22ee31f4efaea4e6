"""``insert`` on a time-series view: validate, route, commit (spec §4). The command
(``tidemark.commands.timeseries_insert.insert_measurements``) runs the three steps with this module.

1. **Prepare** (pure; off the event loop for large inserts): the documents become a ``ColumnBatch``
   when they share one layout (parsed from the bytes), else a ``RowBatch`` of validated dicts: the time
   field must be a BSON date (else 2 BadValue ``'<t>' must be present and contain a valid BSON UTC
   datetime value``), a measurement over 16 MiB (or whose bucket alone would be) gets 10334 like a
   regular insert, the server adds an ObjectId ``_id`` to measurements without one, metas are
   normalized. Ordered inserts stop at the first invalid document; unordered ones report each.
2. **Route** (event loop): series ids, then router.py — in slices for large inserts, yielding the loop
   between them while ``Committer.routing`` holds commits off, so the insert is committed whole.
3. **Commit**: wait for the group commit that makes the rows durable. A failed commit removes them
   (commit.py) and the insert answers the storage error (14031 OutOfDiskSpace, 8 UnknownError).
"""

from __future__ import annotations

import datetime as _dt
from typing import TYPE_CHECKING, Any

import numpy as np

from tidemark.protocol.codec import decode_all, encode
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.protocol.messages import RawDocuments, materialize
from tidemark.timeseries import options as ts_options
from tidemark.timeseries import rawbatch, rules
from tidemark.timeseries.batch import ColumnBatch, RowBatch, object_id_factory
from tidemark.timeseries.bucketdoc import EPOCH, MISSING, date_ms, meta_key, normalize_meta

if TYPE_CHECKING:
    from tidemark.timeseries.indexes import MeasurementRules

MAX_WRITE_BATCH = 100_000
ON_LOOP_DOCUMENTS = 2_000  # smaller inserts are parsed on the event loop (a thread hop costs more)
ON_LOOP_BYTES = 1024 * 1024
ON_LOOP_DOCUMENT_BYTES = 16 * 1024  # inserts of larger documents on average are parsed off the loop
COLUMNAR_DOCUMENT_BYTES = 64 * 1024  # larger documents (wide, or long strings) take the per-document parse
SLICE_VALUES = 50_000  # values (rows x fields) routed between two yields of the event loop
DECODE_CHUNK = 500  # documents decoded per C call
SERIES_PER_SLICE = 32  # series that may query storage (reopen.py) routed between two yields
LEAVING_ALLOWANCE = 16 * 1024 * 1024  # closed buckets' memory awaiting their full writes before inserts wait
MAX_LEAVING_WAITS = 256  # commits an insert waits for at most (storage failing: it goes ahead)
_ONE_MS = _dt.timedelta(milliseconds=1)
_ID_BYTES = 17  # an ObjectId _id element


def documents(cmd: dict[str, Any]) -> list[Any]:
    raw = cmd.get("documents")
    docs = _decoded(raw) if type(raw) is RawDocuments else materialize(raw)
    if not isinstance(docs, list):
        raise MongoError(ErrorCode.TypeMismatch, "BSON field 'insert.documents' is missing or not an array")
    if len(docs) > MAX_WRITE_BATCH:
        raise MongoError(ErrorCode.InvalidLength,
                         f"Write batch sizes must be between 1 and {MAX_WRITE_BATCH}. Got {len(docs)} operations.")
    return docs


def _decoded(raw: RawDocuments) -> list[Any]:
    """The documents of a kind-1 sequence, decoded a chunk at a time: a worker thread decoding a large
    insert lets the event loop run between chunks (one C call would hold the GIL throughout)."""
    if len(raw) <= DECODE_CHUNK:
        return raw.decode()
    out: list[Any] = []
    offsets, buffer = raw.offsets.tolist(), memoryview(raw.buffer)
    ends = offsets[1:] + [raw.end]
    try:
        for start in range(0, len(offsets), DECODE_CHUNK):
            last = min(start + DECODE_CHUNK, len(offsets)) - 1
            out.extend(decode_all(buffer[offsets[start]:ends[last]]))
    except Exception:  # noqa: BLE001 - invalid BSON: the sequence's own decode raises mongod's error (22)
        return raw.decode()
    return out


# The earliest measurement time a bucket can hold: a bucket starts at its first time rounded down by up to
# a year (the longest bucketRoundingSeconds), and that start must still be a 64-bit date in milliseconds
EARLIEST_TIME_MS = -(2**63) + 2 * 365 * 86400 * 1000


class Prepared:
    """What preparing an insert gives: the batch of valid measurements and the write errors."""

    __slots__ = ("batch", "errors")

    def __init__(self, batch: ColumnBatch | RowBatch | None, errors: list[dict[str, Any]]):
        self.batch, self.errors = batch, errors


def prepare(cmd: dict[str, Any], options: ts_options.TimeseriesOptions, columnar: bool, known_layout: Any,
            index_rules: Any = None) -> Prepared:
    """The insert's documents as a batch (pure: may run in a worker thread). ``index_rules``: what the
    collection's indexes require of measurements (``indexes.MeasurementRules``; None: nothing)."""
    raw = cmd.get("documents")
    ordered = cmd.get("ordered", True) is not False
    lengths = None
    if type(raw) is RawDocuments:
        if not 0 < len(raw) <= MAX_WRITE_BATCH:
            documents(cmd)  # raises the error mongod answers
        sizes = np.diff(np.append(raw.offsets, raw.end))
        longest = int(sizes.max())
        # a column batch holds scalars only (no arrays), but a scalar under a 2dsphere index is refused
        if columnar and longest <= COLUMNAR_DOCUMENT_BYTES and not (index_rules and index_rules.point_paths):
            parsed = rawbatch.parse(raw.buffer, raw.offsets, options.time_field, options.meta_field, known_layout)
            if parsed is not None and parsed.n and int(parsed.times.min()) < EARLIEST_TIME_MS:
                parsed = None  # a time no bucket can start at: the per-document path reports it
            if parsed is not None:
                batch = ColumnBatch(parsed, options.time_field, options.meta_field)
                if not rules.bucket_too_large(longest, batch.value_bytes()) and not (
                        index_rules and index_rules.column_batch_error(batch.metas, batch.meta_kind)):
                    return Prepared(batch, [])
        lengths = sizes.tolist()
    return prepare_rows(documents(cmd), lengths, options, ordered, index_rules)


def prepare_rows(docs: list[Any], lengths: list[int] | None, options: ts_options.TimeseriesOptions,
                 ordered: bool, index_rules: Any = None) -> Prepared:
    """Validated dict measurements (see the module); ``index_rules`` as for ``prepare``."""
    time_field, meta_field = options.time_field, options.meta_field
    time_error = f"'{time_field}' must be present and contain a valid BSON UTC datetime value"
    rows, times, metas, keys, errors = [], [], [], [], []
    new_id = object_id_factory(len(docs))
    datetime, epoch, one_ms = _dt.datetime, EPOCH, _ONE_MS
    normalized: dict[bytes, tuple[Any, ...]] = {}
    meta_rules = index_rules if index_rules is not None and index_rules.meta_needs_check else None
    row_rules = index_rules if index_rules is not None and index_rules.checks_measurements else None
    scalar_checks: dict[Any, MongoError | None] = {}  # scalar meta key -> _meta_check
    for index, doc in enumerate(docs):
        error = None
        if not isinstance(doc, dict):
            error = MongoError(ErrorCode.TypeMismatch, "documents must be objects")
        else:
            size = lengths[index] if lengths is not None else None
            time_value = doc.get(time_field)
            t_ms: int | None
            if type(time_value) is datetime and time_value.tzinfo is None:
                t_ms = (time_value - epoch) // one_ms
            else:
                t_ms = date_ms(time_value) if time_value is not None else None
            if t_ms is None:
                error = MongoError(ErrorCode.BadValue, time_error)
            elif t_ms < EARLIEST_TIME_MS:
                error = MongoError(ErrorCode.Overflow, f"'{time_field}' is too early for a time-series bucket: its bucket "
                                   "would start before the earliest date BSON can hold")
            elif size is not None and size + (0 if "_id" in doc else _ID_BYTES) > rules.MAX_MEASUREMENT_BSON:
                stored = size + (0 if "_id" in doc else _ID_BYTES)  # with the _id the server adds, like mongod
                error = MongoError(ErrorCode.BSONObjectTooLarge, f"object to insert too large. size in bytes: "
                                   f"{stored}, max size: {rules.MAX_MEASUREMENT_BSON}")
            elif size is not None and size > 1024 * 1024 and rules.bucket_too_large(
                    size, values := size - (rules.meta_size(doc.get(meta_field, MISSING)) if meta_field else 0)):
                # (the meta is stored once, at the bucket's top: only the other values are repeated in
                # control min and max)
                error = MongoError(ErrorCode.BSONObjectTooLarge,
                                   f"measurement too large for a time-series bucket: its bucket would be about "
                                   f"{size + 2 * values} bytes, max size: {rules.MAX_BUCKET_BSON}")
        if error is None:
            meta = doc.get(meta_field, MISSING) if meta_field is not None else MISSING
            if meta is MISSING:
                key = MISSING
                meta_error = None
            elif type(meta) is dict or type(meta) is list:
                raw_meta = encode({"": meta})
                found = normalized.get(raw_meta)
                if found is None:  # once per distinct meta: normalized, and what the indexes say of it
                    found = normalized[raw_meta] = (*_normalized(meta), _meta_check(meta_rules, meta, raw_meta))
                meta, key, meta_error = found
                doc[meta_field] = meta  # stored and returned normalized (spec §3.6)
            else:
                key = meta_key(meta)
                meta_error = None
                if meta_rules is not None:
                    if key not in scalar_checks:
                        scalar_checks[key] = _meta_check(meta_rules, meta, None)
                    meta_error = scalar_checks[key]
            error = meta_error
            if error is None and row_rules is not None:
                error = row_rules.measurement_error(doc)
        if error is not None:
            errors.append(error.to_write_error(index))
            if ordered:
                break
            continue
        if "_id" not in doc:
            doc = {"_id": new_id(index), **doc}
        rows.append(doc)
        times.append(t_ms)
        metas.append(meta)
        keys.append(key)
    batch = RowBatch(rows, np.asarray(times, np.int64), metas, keys, meta_field) if rows else None
    return Prepared(batch, errors)


def leaving_allowance(threshold: int) -> int:
    """Memory of closed buckets awaiting their full writes above which inserts wait for commits: a
    quarter of the threshold, between 1 and ``LEAVING_ALLOWANCE`` (16) MiB."""
    return min(LEAVING_ALLOWANCE, max(threshold // 4, 1024 * 1024))


def series_ids(series: Any, batch: ColumnBatch | RowBatch) -> bool:
    """Step 2's first half: set ``batch.sids`` (each row's series id in the catalog's ``Series``); False
    when a column batch holds a meta value that is not valid BSON (``batch.sids`` None: the caller takes
    the per-document parse, which reports it)."""
    if isinstance(batch, ColumnBatch):
        distinct = series.sids_of_raw(batch.meta_kind, batch.metas, len(batch.metas or ()) or batch.n)
        batch.meta_sids = distinct
        batch.sids = None if distinct is None else distinct if batch.meta_index is None else distinct[batch.meta_index]
        return batch.sids is not None
    sid = series.sid
    batch.sids = np.fromiter((sid(k, m) for k, m in zip(batch.keys, batch.metas, strict=True)), np.int64, batch.n)
    return True


def ask_storage(catalog: Any, state: Any, batch: ColumnBatch | RowBatch, start: int, end: int, loader: Any) -> None:
    """Before rows ``[start, end)`` are routed: the series among them that will ask storage for a
    stored bucket to reopen (nothing of them in memory, storage not asked since: after a restart, every
    series) are looked up together (``reopen.Loader.prefetch``), each at its first row's time — the
    time the router asks at (a series explosion's or a restart's second round: one look-up per series,
    in index order, in the slice's one read transaction)."""
    if batch.sids is None or catalog.direct_writes.get(state.ns):
        return
    sids, first = np.unique(batch.sids[start:end], return_index=True)
    series = state.series
    queried, held = series.queried, series.held
    asking = [(sid, at) for sid, at in zip(sids.tolist(), (first + start).tolist(), strict=True)
              if not queried[sid] and not held[sid]]
    if asking:
        loader.prefetch(state, [sid for sid, _ in asking], batch.times[[at for _, at in asking]].tolist())


def slices(batch: ColumnBatch | RowBatch, queried: list[bool] | None = None) -> list[int]:
    """Row boundaries of the slices routed between yields of the event loop (about ``SLICE_VALUES``
    values each: the routing cost grows with rows times fields; fewer rows when more than
    ``SERIES_PER_SLICE`` of the batch's series may query storage, i.e. are not ``queried``).

    Only those series count: one already asked costs no storage query, and an insert cut into slices
    lets concurrent inserts route between them, so the series of time-ordered loaders see times go
    back and forth (archived and reopened buckets, rows out of order: more CPU and bytes per row)."""
    if isinstance(batch, ColumnBatch):
        step = max(1, SLICE_VALUES // max(len(batch.order), 1))
        asking = 1
        if batch.sids is not None and batch.meta_sids is not None:
            distinct = set(batch.meta_sids.tolist())  # (the distinct metas': np.unique of every row's cost more)
            asking = len(distinct) if queried is None else sum(1 for sid in distinct if not queried[sid])
        if asking > SERIES_PER_SLICE:  # each costs a storage query (~0.5 ms)
            step = min(step, max(SERIES_PER_SLICE, batch.n * SERIES_PER_SLICE // asking))
        return list(range(0, batch.n, step)) + [batch.n]
    cuts, values = [0], 0
    for i, row in enumerate(batch.rows):
        values += len(row)
        if values >= SLICE_VALUES // 100 and i + 1 < batch.n:  # a dict row's value costs ~100x a column's
            cuts.append(i + 1)
            values = 0
    return cuts + [batch.n]


def _meta_check(meta_rules: MeasurementRules | None, meta: Any, raw_meta: bytes | None) -> MongoError | None:
    """What the collection's indexes say of a bucket of ``meta``: the keys are computed only when an index
    may refuse a meta (``MeasurementRules.meta_needs_check``; ``meta_rules`` None: none may)."""
    if meta_rules is None:
        return None
    if raw_meta is not None:
        return meta_rules.meta_verdict(None, raw_meta, lambda: normalize_meta(meta))
    return meta_rules.meta_error(meta)


def _normalized(meta: Any) -> tuple[Any, Any]:
    normalized = normalize_meta(meta)
    return normalized, meta_key(normalized)


