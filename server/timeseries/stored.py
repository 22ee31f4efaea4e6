"""Stored buckets as the read paths see them (the bucketview interface): a packed record read in a short
transaction and decoded afterwards only as far as the reader needs (storage/bucket_reader.py for
bucket-codec values), plus ``DocumentBucket``, the same interface over an already decoded document.

``StoredBucket`` answers ``summary()`` from the codec's prefix (no column rebuilt), ``dense(name)``
straight to NumPy, ``measurements`` / ``document`` / ``select(columns)`` by decoding only what they
return. What it decodes is kept in ``bucketcache.CACHE``, keyed by the exact packed bytes.

The readers below open a fresh read transaction per chunk and copy the packed values out, so nothing
is held while a cursor is suspended; decoding happens after the transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from bson.raw_bson import RawBSONDocument

from tidemark.protocol.codec import RAW_CODEC_OPTIONS, decode
from tidemark.storage.bucket_reader import BucketReader
from tidemark.timeseries import rawcolumns
from tidemark.timeseries.bucketcache import CACHE, CachedBucket
from tidemark.timeseries.bucketdoc import MISSING, POS_KEYS, control_time_range, unpack_document
from tidemark.timeseries.columns import (
    BOOL,
    DATE,
    DOUBLE,
    INT32,
    INT64,
    OID,
    to_array,
    typed_kind,
)
from tidemark.timeseries.rowbson import MeasurementRows, Rows, Unpacked

CHUNK = 128
_TYPED_CODEC = {DOUBLE, DATE, INT64, INT32, BOOL, OID}


class _Unpacking:
    """``measurements`` over ``select`` (shared by both stored forms)."""

    if TYPE_CHECKING:  # what each stored form provides
        def select(self, columns: set[str] | None) -> dict[str, Any]: ...
        def column_names(self) -> list[str]: ...
        def dense(self, name: str) -> tuple[int, np.ndarray] | None: ...
        def summary(self) -> dict[str, Any]: ...
        def column(self, name: str) -> Any: ...
        def derived(self) -> dict[str, Any]: ...

    def head(self) -> dict[str, Any]:
        return self.summary()  # (decoded with the control at once: there is nothing cheaper to read)

    def time_range(self, time_field: str) -> tuple[int | None, int | None]:
        return control_time_range(self.summary(), time_field)

    def unpack(self, fields: Any = None, positions: np.ndarray | None = None, *, time_field: str,
               meta_field: str | None) -> Rows:
        found = self._rows_at(fields, positions, time_field, meta_field)
        if found is not None:
            return found
        doc = self.select(None if fields is None else set(fields) | {time_field})
        return MeasurementRows(unpack_document(doc, time_field, meta_field, fields,
                                               None if positions is None else positions.tolist()))

    def _rows_at(self, fields: Any, positions: np.ndarray | None, time_field: str,
                 meta_field: str | None) -> Unpacked | None:
        """The rows at ``positions`` (every row when None): what ``unpack_document`` gives for them,
        only those rows taken — typed columns from their arrays, the others from their own decoded
        column (a constant string, a sparse column), never the whole document. None when the time
        column is not typed (the rows are then numbered by the document's keys)."""
        times = self.dense(time_field)
        if times is None or len(times[1]) > len(POS_KEYS):
            return None
        n = len(times[1])
        wanted = None if fields is None else set(fields)
        every = positions is None
        keys: list[str] | None = None  # the rows' keys in a decoded column (made when one is read)
        out = Unpacked(n if positions is None else len(positions), positions)  # typed columns given whole
        if wanted is None or time_field in wanted:
            out.typed(time_field, times[0], times[1])
        summary = self.summary()
        if meta_field is not None and "meta" in summary and (wanted is None or meta_field in wanted):
            out.constant(meta_field, summary["meta"])
        for name in self.column_names():
            if name == time_field or (wanted is not None and name not in wanted):
                continue
            found = self.dense(name)
            if found is not None and len(found[1]) == n:
                out.typed(name, found[0], found[1])
                continue
            memo = self.derived()
            constant = memo.get("constant string:" + name)
            if constant is not None:
                out.constant(name, constant)
                continue
            column = self.column(name)  # a typed column filling only its first rows is sparse too
            if not isinstance(column, dict):
                continue
            if keys is None:
                keys = POS_KEYS[:n] if positions is None else [POS_KEYS[i] for i in positions.tolist()]
            if len(column) == n and list(column) == POS_KEYS[:n]:  # every row holds it
                constant = _constant_string(column)
                if constant is not None:  # remembered: the next read decodes nothing of it
                    memo["constant string:" + name] = constant
                    out.constant(name, constant)
                else:
                    out.values(name, list(column.values()) if every else [column[key] for key in keys])
            else:
                out.sparse_values(name, [column.get(key, MISSING) for key in keys])
        return out


def _constant_string(column: dict[str, Any]) -> str | None:
    """The string every row of a column holds (a tag such as TSBS's ``measurement``), else None."""
    values = iter(column.values())
    first = next(values, None)
    if type(first) is not str:
        return None
    for value in values:
        if type(value) is not str or value != first:
            return None
    return first


class StoredBucket(_Unpacking):
    """One stored bucket record, decoded lazily; decoded parts are shared through ``bucketcache.CACHE``
    (keyed by the exact packed value ``stored``, which identifies the record's content)."""

    __slots__ = ("rid", "stored", "_opener", "_opened", "cached", "_summary")

    def __init__(self, rid: bytes, stored: bytes, opener: Callable[[bytes], bytes | BucketReader],
                 cached: CachedBucket | None):
        """``cached``: the bucketcache entry of ``stored`` (None: what is decoded is not kept), looked up
        by the caller — ``stored_bucket`` for one record, ``BucketCache.views`` for a chunk at once.
        Positional and plain: a scan builds one per bucket."""
        self.rid, self.stored, self._opener = rid, stored, opener
        self._opened: bytes | BucketReader | None = None
        self.cached = cached  # the read interface's ``cached``; a plain attribute: read per bucket
        self._summary: dict[str, Any] | None = None

    def opened(self) -> bytes | BucketReader:
        """The record opened for reading (``BucketReader`` for bucket-codec values, else BSON bytes)."""
        if self._opened is None:
            self._opened = self._opener(self.stored)
        return self._opened

    @property
    def id(self) -> Any:
        return self.summary()["_id"]

    def derived(self) -> dict[str, Any]:
        """A memo for what reads derive from these stored bytes (the cache entry's; a fresh dict when
        caching is off)."""
        return self.cached.memo if self.cached is not None else {}

    def head(self) -> dict[str, Any]:
        """The summary when it is at hand; else, for a BSON record, ``{_id, meta?}`` alone, remembered
        on the cache entry: a meta test over many small stored buckets (a series each: their control is
        most of their bytes) neither decodes nor caches their control (one series among 200,000
        one-measurement stored buckets: 343 -> 296 ms with the summaries cached, 3.8 -> 2.9 s when they
        do not fit the cache)."""
        if self._summary is not None:
            return self._summary
        entry = self.cached
        if entry is not None:
            summary = entry.summary
            if summary is not None:  # (``summary()``'s first step, taken here: a meta test per bucket)
                self._summary = summary
                return summary
            found = entry.memo.get("head")
            if found is not None:
                return cast("dict[str, Any]", found)
        opened = self.opened()
        if not isinstance(opened, BucketReader):
            found = bson_head(opened)
            if found is not None:
                if entry is not None:
                    entry.memo["head"] = found
                return found
        return self.summary()

    def summary(self) -> dict[str, Any]:
        """``{_id, control, meta?}`` without decoding any data column (shared: do not mutate)."""
        if self._summary is not None:
            return self._summary
        entry = self.cached
        if entry is not None and entry.summary is not None:
            self._summary = entry.summary
            return self._summary
        opened = self.opened()
        if isinstance(opened, BucketReader):
            head_bson = opened.head()
            head = decode(head_bson)
            summary = {"_id": head.get("_id"), "control": head.get("control")}
            if "meta" in head:
                summary["meta"] = head["meta"]
            size = len(head_bson)
        else:
            summary = bson_summary(opened)
            size = len(opened) // 8
        self._summary = summary
        if entry is not None:
            CACHE.set_summary(entry, summary, size)
        return summary

    def column_names(self) -> list[str]:
        """``data`` field names in stored order."""
        entry = self.cached
        if entry is not None and "names" in entry.memo:
            return cast("list[str]", entry.memo["names"])
        opened = self.opened()
        if isinstance(opened, BucketReader):
            names = opened.column_names()
        else:
            names = _bson_column_names(opened)
        if entry is not None:
            entry.memo["names"] = names
        return names

    def dense(self, name: str) -> tuple[int, np.ndarray] | None:
        """(BSON type, read-only values) of a dense fixed-width column, else None."""
        entry = self.cached
        if entry is not None and name in entry.columns:
            return entry.columns[name]
        opened = self.opened()
        if isinstance(opened, BucketReader):
            column = opened.column_values(name)
            if column is not None:
                kind, values = column
                if kind not in _TYPED_CODEC:
                    column = None
                elif kind == OID:
                    column = (kind, np.ascontiguousarray(values).view("V12").reshape(-1))
                elif kind == BOOL:
                    column = (kind, values.view("?"))
        else:
            column = _dense_of(rawcolumns.raw_columns(opened, [name]) or {}, name)
        if entry is not None:
            CACHE.set_column(entry, name, column)
        elif column is not None:
            column[1].flags.writeable = False
        return column

    def column_bson(self, name: str) -> bytes | None:
        opened = self.opened()
        return opened.column_bson(name) if isinstance(opened, BucketReader) else None

    def column(self, name: str) -> Any:
        """The decoded ``data.<name>`` (None when absent), without decoding the other columns."""
        opened = self.opened()
        if isinstance(opened, BucketReader):
            raw = opened.column_bson(name)
            return None if raw is None else decode(raw)
        return bson_columns(opened, {name}).get(name)

    def document(self) -> dict[str, Any]:
        opened = self.opened()
        return decode(opened.document() if isinstance(opened, BucketReader) else opened)

    def select(self, columns: set[str] | None) -> dict[str, Any]:
        """The summary plus only the ``columns`` of ``data`` (in stored order); all when None."""
        if columns is None:
            return self.document()
        doc = dict(self.summary())
        opened = self.opened()
        if isinstance(opened, BucketReader):
            doc["data"] = {name: decode(cast(bytes, opened.column_bson(name))) for name in opened.column_names() if name in columns}
        else:
            doc["data"] = bson_columns(opened, columns)
        return doc


def stored_bucket(ns: str, rid: bytes, stored: bytes, opener: Callable[[bytes], bytes | BucketReader], *,
                  remember: bool = True) -> StoredBucket:
    """One stored record as a ``StoredBucket`` with its cache entry looked up. ``remember`` False: what
    is decoded is not kept (an entry already cached is still used), for a pass over every bucket that
    keeps only its own small results."""
    return StoredBucket(rid, stored, opener, CACHE.entry(ns, rid, stored) if remember else CACHE.find(ns, rid, stored))


class DocumentBucket(_Unpacking):
    """The bucketview interface over a decoded v1 document (a bucket that left memory mid-read, a
    bucket document given by a client)."""

    __slots__ = ("doc",)
    cached = None

    def __init__(self, doc: dict[str, Any]):
        self.doc = doc

    @property
    def id(self) -> Any:
        return self.doc.get("_id")

    def derived(self) -> dict[str, Any]:
        return {}

    def summary(self) -> dict[str, Any]:
        out = {"_id": self.doc.get("_id"), "control": self.doc.get("control")}
        if "meta" in self.doc:
            out["meta"] = self.doc["meta"]
        return out

    def column_names(self) -> list[str]:
        return list(self.doc.get("data") or {})

    def column(self, name: str) -> Any:
        return (self.doc.get("data") or {}).get(name)

    def dense(self, name: str) -> tuple[int, np.ndarray] | None:
        column = (self.doc.get("data") or {}).get(name)
        return _dense_of_dict(column) if isinstance(column, dict) else None

    def document(self) -> dict[str, Any]:
        return self.doc

    def select(self, columns: set[str] | None) -> dict[str, Any]:
        if columns is None:
            return self.doc
        doc = self.summary()
        doc["data"] = {k: v for k, v in (self.doc.get("data") or {}).items() if k in columns}
        return doc


def document_bucket(doc: dict[str, Any]) -> DocumentBucket:
    return DocumentBucket(doc)


def _dense_of_dict(column: dict[str, Any]) -> tuple[int, np.ndarray] | None:
    n = len(column)
    if not n or n > len(POS_KEYS) or list(column) != POS_KEYS[:n]:
        return None
    values = list(column.values())
    kind = typed_kind(values[0])
    if kind is None or any(typed_kind(v) != kind for v in values):
        return None
    array = to_array(kind, values)
    array.flags.writeable = False
    return kind, array


def _dense_of(columns: dict[str, Any], name: str) -> tuple[int, np.ndarray] | None:
    """A dense double/date column of a BSON record straight from its bytes, else from its values."""
    raw = columns.get(name)
    if isinstance(raw, bytes):
        for kind in (DOUBLE, DATE):
            n = rawcolumns.column_length(raw)
            values = rawcolumns.parse_column(raw, n, kind) if n else None
            if values is not None:
                return kind, values
        decoded = decode(raw)
        return _dense_of_dict(decoded) if isinstance(decoded, dict) else None
    return None


def _bson_column_names(raw: bytes) -> list[str]:
    top = rawcolumns.elements(raw)
    if top is not None and "data" in top and raw[top["data"][0]] == 0x03:
        _, value, stop = top["data"]
        columns = rawcolumns.elements(raw[value:stop])
        if columns is not None:
            return list(columns)
    return list(decode(raw).get("data") or {})


_SUMMARY_FIELDS = ("_id", "control", "meta")


def bson_summary(raw: bytes) -> dict[str, Any]:
    """``{_id, control, meta?}`` of a bucket's BSON without decoding its data columns."""
    top = rawcolumns.elements(raw)
    if top is not None and "_id" in top and "control" in top:
        # one decode of the three elements joined (one each cost a full scan of 200,000 small stored
        # buckets ~10 % more: the call, not the bytes, is the cost at this size)
        head = rawcolumns.elements_value(raw, [top[name] for name in _SUMMARY_FIELDS if name in top])
        summary: dict[str, Any] = {"_id": head["_id"], "control": head["control"]}
        if "meta" in head:
            summary["meta"] = head["meta"]
        return summary
    # (an element the walker does not size, e.g. a regex meta, or no _id or control: rare, decoded whole)
    full = decode(raw)
    return {name: full.get(name) for name in _SUMMARY_FIELDS if name != "meta" or name in full}


def bson_head(raw: bytes) -> dict[str, Any] | None:
    """``{_id, meta?}`` of a bucket's BSON, decoding nothing else; None when the walker cannot size its
    top-level elements or it has no ``_id`` (``bson_summary`` then decodes it)."""
    top = rawcolumns.elements(raw)
    if top is None or "_id" not in top:
        return None
    return rawcolumns.elements_value(raw, [top[name] for name in ("_id", "meta") if name in top])


def bson_columns(raw: bytes, columns: set[str]) -> dict[str, Any]:
    """``data`` of a bucket's BSON restricted to ``columns`` (decoded)."""
    head = RawBSONDocument(raw, RAW_CODEC_OPTIONS)
    data = head.get("data")
    if not isinstance(data, RawBSONDocument):
        return {}
    return {field: decode(data[field].raw) if isinstance(data[field], RawBSONDocument) else data[field]
            for field in data if field in columns}


# ------------------------------------------------------------------ readers


def scan(engine: Any, ns: str, resume: bytes | None = None, *,
         reverse: bool = False, lo: bytes | None = None, hi: bytes | None = None,
         chunk_size: int = CHUNK) -> Iterator[StoredBucket]:
    """Stored buckets in key order, one at a time (``chunks``, flattened)."""
    for chunk in chunks(engine, ns, resume, reverse=reverse, lo=lo, hi=hi, chunk_size=chunk_size):
        yield from chunk


def chunks(engine: Any, ns: str, resume: bytes | None = None, *,
           reverse: bool = False, lo: bytes | None = None, hi: bytes | None = None,
           chunk_size: int = CHUNK) -> Iterator[list[StoredBucket]]:
    """Stored buckets in key order (descending with ``reverse``) strictly after ``resume``, in lists of
    up to ``chunk_size`` (one read transaction each, their cache entries looked up at once); ``lo``/``hi``
    bound the scan (``lo`` exclusive, ``hi`` inclusive, prefix semantics)."""
    while True:
        with engine.read() as r:
            info = r.get_collection(ns)
            if info is None:
                return
            opener = r.stored_opener()
            # the chunk taken in one C-level pass over the walk (no Python step per record)
            records = list(r.scan_stored(info, start_after=resume, reverse=reverse, lo=lo, hi=hi,
                                         lo_inclusive=False, limit=chunk_size))
        if records:
            resume = records[-1][0]
            yield CACHE.views(ns, records, StoredBucket, opener)
        if len(records) < chunk_size:  # the walk ended
            return


def get_many(engine: Any, ns: str, rids: Iterable[bytes], start: int = 0) -> Iterator[list[StoredBucket]]:
    """The stored buckets of ``rids[start:]`` (in the given order; absent ones skipped), in lists of up
    to ``CHUNK`` (``read_many``): a read transaction each. (``start``: a caller that read the first
    chunk in a transaction of its own, ``scan.index_buckets``.)"""
    ordered = list(rids)
    for at in range(start, len(ordered), CHUNK):
        with engine.read() as r:
            info = r.get_collection(ns)
            if info is None:
                return
            views = read_many(r, info, ns, ordered[at:at + CHUNK])
        if views:
            yield views


def read_many(r: Any, info: Any, ns: str, rids: list[bytes]) -> list[StoredBucket]:
    """The stored buckets of ``rids`` (absent ones skipped) in the read view ``r`` (``info``: the
    collection's entry in it)."""
    records = r.get_stored_many(info, rids)
    return CACHE.views(ns, records, StoredBucket, r.stored_opener()) if records else []
