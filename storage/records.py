"""Record stores: one LMDB sub-database per collection ("r:<ident>"), record id -> packed BSON.

Record ids: for ordinary collections an 8-byte big-endian counter (insertion order: the next id
is one past the largest present); clustered collections (time-series buckets) use the encoded
``_id`` key, so scanning in key order is scanning in ``_id`` order. Values are packed by
``compression.ValueCodec`` (1-byte tag + maybe-compressed BSON); a value the compaction chunked
(tag 5, storage/chunks.py) is reassembled from ``chunks_db`` before it is unpacked, so every
reader sees the same bytes whatever the layout on disk.

A clustered rid longer than LMDB's key limit (a long ``_id``) is stored under its compact form
(storage/longkeys.py, with the collection's ident); callers always see and pass full rids.

These functions take an open LMDB transaction and handle; they never open transactions.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import chain, islice
from operator import itemgetter
from typing import Any

from bson.raw_bson import RawBSONDocument

from tidemark.storage.catalog import CATALOG_CODEC
from tidemark.storage.chunks import TAG_CHUNKED, join, pieces
from tidemark.storage.compression import ValueCodec
from tidemark.storage.keys import encode_key
from tidemark.storage.lmdb_types import Handle, Txn
from tidemark.storage.longkeys import LongKeys
from tidemark.storage.ranges import raw_range, walk

RID_SIZE = 8
_RAW_CODEC = CATALOG_CODEC.with_options(document_class=RawBSONDocument)  # decodes only what is read


def rid_from_int(n: int) -> bytes:
    return n.to_bytes(RID_SIZE, "big")


def rid_to_int(rid: bytes) -> int:
    return int.from_bytes(rid, "big")


def clustered_rid(doc_id: Any) -> bytes:
    """A clustered collection's record id: the encoded ``_id`` (so record order is ``_id`` order)."""
    return encode_key((doc_id,), (1,))


def clustered_rid_of(bson_bytes: bytes) -> bytes:
    """The record id of a clustered collection's document given as BSON (its ``_id`` alone is read)."""
    return clustered_rid(RawBSONDocument(bson_bytes, _RAW_CODEC)["_id"])


def last_rid(txn: Txn, db: Handle) -> int:
    """The largest counter record id present, 0 when the store is empty."""
    with txn.cursor(db=db) as cur:
        if cur.last():
            key = cur.key()
            if len(key) == RID_SIZE:
                return rid_to_int(key)
    return 0


def get_stored(txn: Txn, db: Handle, long: LongKeys, rid: bytes, chunks_db: Handle) -> bytes | None:
    """The record's stored value as written (tagged, chunks reassembled), or None."""
    stored = txn.get(rid if len(rid) <= long.max_key else long.stored(rid), db=db)  # (a compact key: rare)
    if stored is not None and stored[0] == TAG_CHUNKED:
        return join(pieces(txn, chunks_db), stored)
    return stored


def get_stored_many(txn: Txn, db: Handle, long: LongKeys, rids: list[bytes],
                    chunks_db: Handle) -> list[tuple[bytes, bytes]]:
    """(rid, stored value as ``get_stored`` gives it) of each of ``rids`` present, in the given order:
    one C-level pass (a cursor's ``getmulti``) for the lot — a read of n records by ``get_stored`` took
    ~7 calls each — unless a rid is over-long (its compact key: rare) or a value chunked."""
    if max(map(len, rids), default=0) > long.max_key:
        found = [(rid, get_stored(txn, db, long, rid, chunks_db)) for rid in rids]
        return [(rid, stored) for rid, stored in found if stored is not None]
    with txn.cursor(db=db) as cursor:
        entries = cursor.getmulti(rids)
    return _unchunked(txn, chunks_db, entries)


def get(txn: Txn, db: Handle, long: LongKeys, rid: bytes, codec: ValueCodec, chunks_db: Handle) -> bytes | None:
    stored = get_stored(txn, db, long, rid, chunks_db)
    return None if stored is None else codec.unpack(stored)


def _walk(txn: Txn, db: Handle, long: LongKeys, bounds: tuple[bytes | None, bytes | None],
          start_after: bytes | None, reverse: bool) -> Iterator[tuple[bytes, bytes]]:
    """(full rid, LMDB value) in rid order."""
    def lmdb_walk(start: bytes | None, end: bytes | None, at: bytes | None,
                  backwards: bool) -> Iterator[tuple[bytes, bytes]]:
        return walk(txn, db, start, end, resume=at, reverse=backwards)

    return long.ordered(txn, lmdb_walk, *bounds, resume=start_after, reverse=reverse)


def _unchunked(txn: Txn, chunks_db: Handle, entries: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """``entries`` with any chunked value (tag 5) reassembled; looked for in one C-level pass."""
    if TAG_CHUNKED in map(_TAG, map(_VALUE, entries)):
        get_piece = pieces(txn, chunks_db)
        return [(rid, join(get_piece, stored) if stored[0] == TAG_CHUNKED else stored) for rid, stored in entries]
    return entries


_VALUE, _TAG = itemgetter(1), itemgetter(0)
_BATCH = 128  # entries read per C-level pass by an unlimited ``scan_stored``


def scan_stored(txn: Txn, db: Handle, long: LongKeys, chunks_db: Handle, *, start_after: bytes | None = None,
                reverse: bool = False, lo: bytes | None = None, hi: bytes | None = None,
                lo_inclusive: bool = True, hi_inclusive: bool = True,
                limit: int | None = None) -> Iterator[tuple[bytes, bytes]]:
    """(rid, stored value as written: tagged, chunks reassembled); arguments as ``scan``, at most
    ``limit`` entries. The one place a reader of packed values (e.g. selective bucket reads) should
    take them from. Entries are read in lists (all ``limit`` at once, else ``_BATCH`` at a time) by one
    C-level pass over the walk each: no Python step per record unless one is chunked."""
    bounds = raw_range(lo, hi, lo_inclusive, hi_inclusive)
    if bounds is None:
        return iter(())
    entries = _walk(txn, db, long, bounds, start_after, reverse)
    if limit is not None:
        return iter(_unchunked(txn, chunks_db, list(islice(entries, limit))))
    batches = iter(lambda: list(islice(entries, _BATCH)), [])
    return chain.from_iterable(_unchunked(txn, chunks_db, batch) for batch in batches)


def scan(txn: Txn, db: Handle, long: LongKeys, codec: ValueCodec, *, start_after: bytes | None = None,
         reverse: bool = False, lo: bytes | None = None, hi: bytes | None = None,
         lo_inclusive: bool = True, hi_inclusive: bool = True,
         chunks_db: Handle) -> Iterator[tuple[bytes, bytes]]:
    """(rid, bson) in record-id order (descending with ``reverse``), strictly after
    ``start_after`` in the direction of the scan, within optional rid bounds (prefix semantics,
    storage/ranges.py: for clustered collections, ``encode_key([_id])`` bounds)."""
    bounds = raw_range(lo, hi, lo_inclusive, hi_inclusive)
    if bounds is None:
        return
    unpack = codec.unpack
    get_piece = None
    for rid, stored in _walk(txn, db, long, bounds, start_after, reverse):  # lazy: callers may stop at once
        if stored[0] == TAG_CHUNKED:
            if get_piece is None:
                get_piece = pieces(txn, chunks_db)
            stored = join(get_piece, stored)
        yield rid, unpack(stored)
