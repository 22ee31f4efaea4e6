"""Durable append-only records for the time-series write path.

An open bucket appends one small record per commit (keyed by its ``stream``, e.g. the bucket
id) instead of rewriting the whole bucket; recovery replays them with ``scan``; a checkpoint
that materialized the bucket calls ``trim``.

Schema: the ``_journal`` sub-database maps ``len(stream) (2 bytes) + stream + seq (8 bytes BE)``
to a packed payload (``compression.ValueCodec``). ``_meta`` keeps ``b"jhw:" + stream`` = the
highest trimmed seq of a stream, so sequence numbers keep increasing after a trim.

Invariants: seqs of one stream strictly increase (gaps are allowed: a rolled-back append
consumes its number); records of a stream come back in seq order; streams in (length, bytes)
order.
"""

from __future__ import annotations

from collections.abc import Iterator

from tidemark.storage.compression import ValueCodec
from tidemark.storage.lmdb_types import Handle, Txn

MAX_STREAM = 400  # keeps the key under LMDB's 511-byte limit
_HW = b"jhw:"


def _prefix(stream: bytes) -> bytes:
    if not 0 < len(stream) <= MAX_STREAM:
        raise ValueError(f"journal stream id must be 1..{MAX_STREAM} bytes, got {len(stream)}")
    return len(stream).to_bytes(2, "big") + stream


def key(stream: bytes, seq: int) -> bytes:
    return _prefix(stream) + seq.to_bytes(8, "big")


def last_seq(txn: Txn, jdb: Handle, meta_db: Handle, stream: bytes) -> int:
    """Highest seq ever used by ``stream`` that is still visible (present or trimmed)."""
    prefix = _prefix(stream)
    high = txn.get(_HW + stream, db=meta_db)
    best = int.from_bytes(high, "big") if high else 0
    with txn.cursor(db=jdb) as cur:
        end = prefix + b"\xff" * 8
        if cur.set_range(end):
            found = cur.key() == end or cur.prev()
        else:
            found = cur.last()
        if found and cur.key().startswith(prefix) and len(cur.key()) == len(prefix) + 8:
            best = max(best, int.from_bytes(cur.key()[-8:], "big"))
    return best


def append(txn: Txn, jdb: Handle, stream: bytes, seq: int, payload: bytes, codec: ValueCodec) -> None:
    txn.put(key(stream, seq), codec.pack(payload, fast=True), db=jdb)


def trim(txn: Txn, jdb: Handle, meta_db: Handle, stream: bytes, upto_seq: int) -> int:
    """Delete the stream's records with seq <= upto_seq; returns how many were deleted."""
    prefix = _prefix(stream)
    stop = key(stream, upto_seq)
    deleted = 0
    last_deleted = 0
    with txn.cursor(db=jdb) as cur:
        if cur.set_range(prefix):
            while cur.key().startswith(prefix) and cur.key() <= stop:
                last_deleted = int.from_bytes(cur.key()[-8:], "big")
                deleted += 1
                if not cur.delete():
                    break
    # remember the highest seq used (not the requested bound), so appends continue after it
    high = txn.get(_HW + stream, db=meta_db)
    if last_deleted and (not high or int.from_bytes(high, "big") < last_deleted):
        txn.put(_HW + stream, last_deleted.to_bytes(8, "big"), db=meta_db)
    return deleted


def drop_stream(txn: Txn, jdb: Handle, meta_db: Handle, stream: bytes) -> int:
    """Forget a stream entirely (its records and its high-water mark)."""
    deleted = trim(txn, jdb, meta_db, stream, (1 << 64) - 1)
    txn.delete(_HW + stream, db=meta_db)
    return deleted


def streams(txn: Txn, jdb: Handle) -> list[bytes]:
    """The streams holding records, in key order: one cursor jump per stream, no record read."""
    found: list[bytes] = []
    with txn.cursor(db=jdb) as cur:
        ok = cur.first()
        while ok:
            k = cur.key()
            n = int.from_bytes(k[:2], "big")
            found.append(k[2:2 + n])
            ok = cur.set_range(k[:2 + n] + b"\xff" * 9)  # past the stream's highest possible seq
    return found


def scan(txn: Txn, jdb: Handle, codec: ValueCodec, stream: bytes | None = None,
         after_seq: int = 0) -> Iterator[tuple[bytes, int, bytes]]:
    """(stream, seq, payload) of one stream (seq > after_seq) or of all streams."""
    unpack = codec.unpack
    with txn.cursor(db=jdb) as cur:
        if stream is None:
            if not cur.first():
                return
            for k, v in cur.iternext(keys=True, values=True):
                n = int.from_bytes(k[:2], "big")
                yield k[2:2 + n], int.from_bytes(k[2 + n:], "big"), unpack(v)
            return
        prefix = _prefix(stream)
        if not cur.set_range(key(stream, after_seq + 1)):
            return
        for k, v in cur.iternext(keys=True, values=True):
            if not k.startswith(prefix):
                return
            yield stream, int.from_bytes(k[len(prefix):], "big"), unpack(v)
