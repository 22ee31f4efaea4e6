"""Stored buckets as the read paths see them: a packed record read in a short transaction and decoded
afterwards only as far as the reader needs (storage/bucket_reader.py for bucket-codec values).

``StoredBucket`` answers ``summary()`` (``{_id, control, meta?}``: pruning, lastpoint), ``document()``
(the whole bucket) and ``partial(columns)`` (the summary plus only some ``data`` columns; with
``RawColumns`` the columns stay undecoded: ``bytes`` of their BSON, or a ``PackedColumn`` straight
from the bucket codec). Every form equals what decoding the whole record and picking from it gives.

The readers below open a fresh read transaction per chunk and copy the packed values out, so nothing
is held while a cursor is suspended; decoding happens after the transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from bson.raw_bson import RawBSONDocument

from protocol.codec import RAW_CODEC_OPTIONS, decode
from server.timeseries import rawcolumns
from server.timeseries.bucketcache import CACHE, CachedBucket
from server.timeseries.rawcolumns import PackedColumn
from storage.bucket_reader import BucketReader

CHUNK = 128


class RawColumns(frozenset):
    """A ``columns`` set asking for the selected data columns undecoded (columnar reads)."""


class StoredBucket:
    """One stored bucket record, decoded lazily; decoded parts are shared through ``bucketcache.CACHE``
    (keyed by the exact packed value ``stored``, which identifies the record's content)."""

    __slots__ = ("rid", "stored", "_opener", "_opened", "_entry", "_summary")

    def __init__(self, ns: str, rid: bytes, stored: bytes, opener: Callable[[bytes], bytes | BucketReader]):
        self.rid, self.stored, self._opener = rid, stored, opener
        self._opened: bytes | BucketReader | None = None
        self._entry: CachedBucket | None = CACHE.entry(ns, rid, stored)
        self._summary: dict | None = None

    def opened(self) -> bytes | BucketReader:
        """The record opened for reading (``BucketReader`` for bucket-codec values, else BSON bytes)."""
        if self._opened is None:
            self._opened = self._opener(self.stored)
        return self._opened

    @property
    def cached(self) -> CachedBucket | None:
        return self._entry

    def summary(self) -> dict:
        """``{_id, control, meta?}`` without decoding any data column (shared: do not mutate)."""
        if self._summary is not None:
            return self._summary
        entry = self._entry
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

    def column_names(self) -> list[str] | None:
        """``data`` field names in stored order (None unless a bucket-codec record)."""
        entry = self._entry
        if entry is not None and "names" in entry.memo:
            return entry.memo["names"]
        opened = self.opened()
        names = opened.column_names() if isinstance(opened, BucketReader) else None
        if entry is not None:
            entry.memo["names"] = names
        return names

    def column_values(self, name: str) -> tuple[int, Any] | None:
        """(bson type, values) of a dense fixed-width column of a bucket-codec record, else None."""
        entry = self._entry
        if entry is not None and name in entry.columns:
            return entry.columns[name]
        opened = self.opened()
        column = opened.column_values(name) if isinstance(opened, BucketReader) else None
        if entry is not None:
            CACHE.set_column(entry, name, column)
        return column

    def column_bson(self, name: str) -> bytes | None:
        opened = self.opened()
        return opened.column_bson(name) if isinstance(opened, BucketReader) else None

    def document(self) -> dict:
        opened = self.opened()
        return decode(opened.document() if isinstance(opened, BucketReader) else opened)

    def partial(self, columns: set[str]) -> dict:
        """The summary plus only the ``columns`` of ``data`` (in stored order); undecoded with
        ``RawColumns``."""
        doc = dict(self.summary())
        names = self.column_names()
        if names is None:
            doc["data"] = bson_columns(self.opened(), columns)
            return doc
        names = [name for name in names if name in columns]
        if isinstance(columns, RawColumns):
            doc["data"] = {name: PackedColumn(self, name) for name in names}
        else:
            doc["data"] = {name: decode(self.column_bson(name)) for name in names}
        return doc

    def select(self, columns: set[str] | None) -> dict:
        """``document()`` when ``columns`` is None, else ``partial(columns)``."""
        return self.document() if columns is None else self.partial(columns)


def bson_summary(raw: bytes) -> dict:
    """``{_id, control, meta?}`` of a bucket's BSON without decoding its data columns."""
    top = rawcolumns.elements(raw)
    if top is not None and "_id" in top and "control" in top:
        summary = {"_id": rawcolumns.element_value(raw, top["_id"]),
                   "control": rawcolumns.element_value(raw, top["control"])}
        if "meta" in top:
            summary["meta"] = rawcolumns.element_value(raw, top["meta"])
        return summary
    head = RawBSONDocument(raw, RAW_CODEC_OPTIONS)
    summary: dict[str, Any] = {"_id": head.get("_id")}
    control = head.get("control")
    summary["control"] = decode(control.raw) if isinstance(control, RawBSONDocument) else control
    if "meta" in head:
        meta = head["meta"]
        summary["meta"] = decode(meta.raw) if isinstance(meta, RawBSONDocument) else _plain(meta)
    return summary


def bson_columns(raw: bytes, columns: set[str]) -> dict:
    """``data`` of a bucket's BSON restricted to ``columns`` (raw BSON ``bytes`` with ``RawColumns``)."""
    if isinstance(columns, RawColumns):
        data_columns = rawcolumns.raw_columns(raw, columns)
        if data_columns is not None:
            return data_columns
    head = RawBSONDocument(raw, RAW_CODEC_OPTIONS)
    data = head.get("data")
    if not isinstance(data, RawBSONDocument):
        return {}
    convert = (lambda v: bytes(v.raw)) if isinstance(columns, RawColumns) else (lambda v: decode(v.raw))
    return {field: convert(data[field]) if isinstance(data[field], RawBSONDocument) else data[field]
            for field in data if field in columns}


def _plain(value: Any) -> Any:
    if isinstance(value, RawBSONDocument):
        return decode(value.raw)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


# ------------------------------------------------------------------ live buckets


def live_snapshot(server: Any, ns: str, lo_s: int | None, hi_s: int | None) -> dict:
    """The catalog's live buckets of ``ns`` (by ``_id``) when the read starts. Their documents are built
    only when yielded (buckets only grow, so a reader sees at least what was acknowledged before it
    started), after the bucket predicate accepted their cheap ``summary()``."""
    catalog = getattr(server, "bucket_catalog", None)
    if catalog is None:
        return {}
    snapshot = {}
    for bucket in catalog.live_buckets(ns):
        if (lo_s is not None and bucket.start_s < lo_s) or (hi_s is not None and bucket.start_s > hi_s):
            continue
        snapshot[bucket.id] = bucket
    return snapshot


def accept_live(bucket: Any, predicate: Any) -> bool:
    return predicate is None or predicate(bucket.summary())


class StoredCandidate:
    """A stored bucket a columnar read may take without building its partial document: ``document()``
    is what the plain scan would have yielded (None when the bucket predicate rejects it)."""

    __slots__ = ("bucket", "predicate", "columns")

    def __init__(self, bucket: StoredBucket, predicate: Any, columns: set[str] | None):
        self.bucket, self.predicate, self.columns = bucket, predicate, columns

    def document(self) -> dict | None:
        if self.predicate is not None and not self.predicate(self.bucket.summary()):
            return None
        return self.bucket.select(self.columns)


class LiveCandidate:
    """A live bucket (already accepted by the bucket predicate) a columnar read may take as arrays;
    ``document()`` is what the plain scan would have yielded."""

    __slots__ = ("bucket",)

    def __init__(self, bucket: Any):
        self.bucket = bucket

    def document(self) -> dict:
        return self.bucket.document()


# ------------------------------------------------------------------ readers


def snapshot_id(engine: Any) -> int:
    """The snapshot a read started now would see (``ReadView.snapshot_id``)."""
    with engine.read() as r:
        return r.snapshot_id()


def get_at(engine: Any, ns: str, rids: Iterable[bytes], snapshot: int) -> list[StoredBucket] | None:
    """The stored buckets of ``rids`` (absent ones skipped) read in one transaction, or None when
    that transaction does not see ``snapshot`` (something was committed since)."""
    with engine.read() as r:
        if r.snapshot_id() != snapshot:
            return None
        info = r.get_collection(ns)
        if info is None:
            return []
        opener = r.stored_opener()
        found = ((rid, r.get_stored(info, rid)) for rid in rids)
        return [StoredBucket(ns, rid, stored, opener) for rid, stored in found if stored is not None]


def scan(engine: Any, ns: str, resume: bytes | None = None, last: bytes | None = None, *,
         reverse: bool = False, lo: bytes | None = None, hi: bytes | None = None,
         chunk_size: int = CHUNK) -> Iterator[StoredBucket]:
    """Stored buckets in key order (descending with ``reverse``) strictly after ``resume``; ascending
    scans stop after ``last``; ``lo``/``hi`` bound the scan (``lo`` exclusive, ``hi`` inclusive, prefix
    semantics). A fresh read transaction per chunk."""
    while True:
        chunk: list[StoredBucket] = []
        done = False
        with engine.read() as r:
            info = r.get_collection(ns)
            if info is None:
                return
            opener = r.stored_opener()
            for rid, stored in r.scan_stored(info, start_after=resume, reverse=reverse, lo=lo, hi=hi,
                                             lo_inclusive=False):
                if last is not None and rid > last:
                    done = True
                    break
                chunk.append(StoredBucket(ns, rid, stored, opener))
                if len(chunk) >= chunk_size:
                    break
            else:
                done = True
        if chunk:
            resume = chunk[-1].rid
        yield from chunk
        if done or not chunk:
            return


def get_many(engine: Any, ns: str, rids: Iterable[bytes]) -> Iterator[StoredBucket]:
    """The stored buckets of ``rids`` (in the given order; absent ones skipped), a read transaction per
    chunk."""
    ordered = list(rids)
    for start in range(0, len(ordered), CHUNK):
        with engine.read() as r:
            info = r.get_collection(ns)
            if info is None:
                return
            opener = r.stored_opener()
            chunk = [StoredBucket(ns, rid, stored, opener)
                     for rid, stored in ((rid, r.get_stored(info, rid)) for rid in ordered[start:start + CHUNK])
                     if stored is not None]
        yield from chunk
