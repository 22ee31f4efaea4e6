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
         reverse: bool = False, raw: bool = False) -> Iterator[tuple[bytes, bytes]]:
    """(rid, bson) in record-id order (descending with ``reverse``), strictly after
    ``start_after`` in the direction of the scan. ``raw`` yields the stored (packed) values."""
    unpack = codec.unpack
    with txn.cursor(db=db) as cur:
        if reverse:
            if start_after is None:
                positioned = cur.last()
            elif cur.set_range(start_after):
                positioned = cur.prev()
            else:
                positioned = cur.last()
            items = cur.iterprev(keys=True, values=True) if positioned else iter(())
        else:
            if start_after is None:
                positioned = cur.first()
            else:
                positioned = cur.set_range(start_after)
                if positioned and cur.key() == start_after:
                    positioned = cur.next()
            items = cur.iternext(keys=True, values=True) if positioned else iter(())
        if raw:
            yield from items
        else:
            for rid, stored in items:
                yield rid, unpack(stored)
