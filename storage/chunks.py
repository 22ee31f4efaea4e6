"""Chunked record values (tag 5): a value too large for an LMDB leaf node, stored without page rounding.

LMDB puts a value whose node would exceed ``NODE_MAX`` (2038 bytes with 4 KiB pages) on its own run
of overflow pages, rounded up to whole pages: a 2.46 KB time-series bucket occupies 4 KiB (40 % of
the file was that rounding). The compaction (storage/compact.py) stores such a value instead as a
*head* in its record store, sized to fill what is left of the current leaf page, and the rest as
*pieces* in the ``_chunks`` sub-database, sized to fill its pages:

    head  (r:<ident>, key rid):  0x05 | inner length u32 LE | first piece id u64 BE | piece count u16 BE
                                 | the first bytes of inner
    piece (_chunks, key id u64 BE): the next bytes of inner; ids first .. first + count - 1

``inner`` is the value exactly as it would be stored unchunked (its own tag 0..4), so chunking is
invisible above ``records``: every read resolves a head back to ``inner`` before unpacking it.

Invariants:
- Only the compaction writes heads and pieces. Every write path replaces or deletes a record whole:
  ``update``/``delete`` of a chunked record delete its pieces in the same transaction.
- Piece ids are allocated in ascending order (appended: full pages). The ids of one collection form
  one range, kept in ``_meta`` under ``chunks:<ident>`` (lo u64 BE + hi u64 BE, hi exclusive), so
  dropping a collection deletes its pieces without reading its records.
- A head has at least one piece; ``join`` checks the reassembled length.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from tidemark.storage.errors import StorageError
from tidemark.storage.lmdb_types import Handle, Txn

TAG_CHUNKED = 0x05
CHUNKS_DB = b"_chunks"
RANGE_PREFIX = b"chunks:"  # _meta key prefix: piece id range of a collection ident

_HEAD = struct.Struct("<BI")  # tag, inner length
_IDS = struct.Struct(">QH")  # first piece id, piece count
_LENGTH = struct.Struct("<xI")  # the inner length alone
HEAD_SIZE = _HEAD.size + _IDS.size  # 15


def piece_key(piece_id: int) -> bytes:
    return piece_id.to_bytes(8, "big")


def range_key(ident: str) -> bytes:
    return RANGE_PREFIX + ident.encode()


def make_head(inner_length: int, first_id: int, count: int, prefix: bytes) -> bytes:
    return _HEAD.pack(TAG_CHUNKED, inner_length) + _IDS.pack(first_id, count) + prefix


def head_fields(head: bytes) -> tuple[int, int, int]:
    """(inner length, first piece id, piece count) of a head."""
    _, inner_length = _HEAD.unpack_from(head)
    first_id, count = _IDS.unpack_from(head, _HEAD.size)
    return inner_length, first_id, count


def is_chunked(stored: bytes) -> bool:
    return stored[0] == TAG_CHUNKED


def pieces(txn: Txn, chunks_db: Handle) -> Callable[[bytes], bytes | None]:
    """How ``join`` reads pieces: the ``get`` of one cursor on ``_chunks`` (half the cost of a
    ``txn.get`` per piece); keep it for every head of a scan's batch."""
    return txn.cursor(db=chunks_db).get


def join(get_piece: Callable[[bytes], bytes | None], head: bytes) -> bytes:
    """The inner value of a head, its pieces read by ``get_piece`` (``pieces``: in the same transaction)."""
    (inner_length,) = _LENGTH.unpack_from(head)
    first_id, count = _IDS.unpack_from(head, _HEAD.size)
    piece = get_piece(head[_HEAD.size:_HEAD.size + 8])  # the first piece's key, as the head holds it
    if piece is None:
        raise StorageError(f"chunked value: piece {first_id} is missing")
    inner = head[HEAD_SIZE:] + piece
    if count > 1:  # usually 1 or 2 pieces
        parts = [inner]
        for piece_id in range(first_id + 1, first_id + count):
            piece = get_piece(piece_key(piece_id))
            if piece is None:
                raise StorageError(f"chunked value: piece {piece_id} is missing")
            parts.append(piece)
        inner = b"".join(parts)
    if len(inner) != inner_length:
        raise StorageError(f"chunked value: {len(inner)} bytes reassembled, {inner_length} expected")
    return inner


def resolve(txn: Txn, chunks_db: Handle, stored: bytes) -> bytes:
    """``stored`` itself, or the inner value if it is a head."""
    return join(pieces(txn, chunks_db), stored) if stored[0] == TAG_CHUNKED else stored


def delete_pieces(txn: Txn, chunks_db: Handle, head: bytes) -> None:
    _, first_id, count = head_fields(head)
    for piece_id in range(first_id, first_id + count):
        txn.delete(piece_key(piece_id), db=chunks_db)


def drop_collection(txn: Txn, chunks_db: Handle, meta_db: Handle, ident: str) -> int:
    """Delete every piece of a dropped collection; returns how many there were."""
    raw = txn.get(range_key(ident), db=meta_db)
    if raw is None:
        return 0
    lo, hi = int.from_bytes(raw[:8], "big"), int.from_bytes(raw[8:16], "big")
    deleted = 0
    with txn.cursor(db=chunks_db) as cur:
        if cur.set_range(piece_key(lo)):
            while (key := cur.key()) and int.from_bytes(key, "big") < hi:
                deleted += 1
                if not cur.delete():
                    break
    txn.delete(range_key(ident), db=meta_db)
    return deleted


def pieces_pages_bytes(txn: Txn, chunks_db: Handle, meta_db: Handle, ident: str) -> int:
    """Estimated bytes of ``_chunks`` pages holding a collection's pieces (its share of the
    sub-database by piece count: pieces are appended, so a collection's pieces share pages)."""
    raw = txn.get(range_key(ident), db=meta_db)
    if raw is None:
        return 0
    stat = txn.stat(chunks_db)
    if not stat["entries"]:
        return 0
    pages = stat["branch_pages"] + stat["leaf_pages"] + stat["overflow_pages"]
    mine = min(int.from_bytes(raw[8:16], "big") - int.from_bytes(raw[:8], "big"), stat["entries"])
    return pages * stat["psize"] * mine // stat["entries"]
