"""Record stores: one LMDB sub-database per collection ("r:<ident>"), record id -> packed BSON.

Record ids: for ordinary collections an 8-byte big-endian counter (insertion order: the next id
is one past the largest present); clustered collections (time-series buckets) use the encoded
``_id`` key, so scanning in key order is scanning in ``_id`` order. Values are packed by
``compression.ValueCodec`` (1-byte tag + maybe-compressed BSON).

These functions take an open LMDB transaction and handle; they never open transactions.
"""

from __future__ import annotations

from collections.abc import Iterator

import lmdb

from storage.compression import ValueCodec
from storage.ranges import raw_range, walk

RID_SIZE = 8


def rid_from_int(n: int) -> bytes:
    return n.to_bytes(RID_SIZE, "big")


def rid_to_int(rid: bytes) -> int:
    return int.from_bytes(rid, "big")


def last_rid(txn: lmdb.Transaction, db) -> int:
    """The largest counter record id present, 0 when the store is empty."""
    with txn.cursor(db=db) as cur:
        if cur.last():
            key = cur.key()
            if len(key) == RID_SIZE:
                return rid_to_int(key)
    return 0


def get(txn: lmdb.Transaction, db, rid: bytes, codec: ValueCodec) -> bytes | None:
    stored = txn.get(rid, db=db)
    return None if stored is None else codec.unpack(stored)


def scan(txn: lmdb.Transaction, db, codec: ValueCodec, *, start_after: bytes | None = None,
         reverse: bool = False, lo: bytes | None = None, hi: bytes | None = None,
         lo_inclusive: bool = True, hi_inclusive: bool = True) -> Iterator[tuple[bytes, bytes]]:
    """(rid, bson) in record-id order (descending with ``reverse``), strictly after
    ``start_after`` in the direction of the scan, within optional rid bounds (prefix semantics,
    storage/ranges.py: for clustered collections, ``encode_key([_id])`` bounds)."""
    bounds = raw_range(lo, hi, lo_inclusive, hi_inclusive)
    if bounds is None:
        return
    unpack = codec.unpack
    for rid, stored in walk(txn, db, *bounds, resume=start_after, reverse=reverse):
        yield rid, unpack(stored)


def scan_stored(txn: lmdb.Transaction, db, *, start_after: bytes | None = None, reverse: bool = False,
                lo: bytes | None = None, hi: bytes | None = None, lo_inclusive: bool = True,
                hi_inclusive: bool = True) -> Iterator[tuple[bytes, bytes]]:
    """Like ``scan`` but (rid, stored value) with the value still packed (compression tag first), for
    readers that decode selectively (storage/bucket_reader.py) or cache by the stored bytes."""
    bounds = raw_range(lo, hi, lo_inclusive, hi_inclusive)
    if bounds is None:
        return
    yield from walk(txn, db, *bounds, resume=start_after, reverse=reverse)
