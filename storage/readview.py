"""ReadView: one LMDB read transaction over the catalog, records, indexes and journal.

Every method sees the same consistent snapshot. Bytes returned are copies (the environment is
used with ``buffers=False``), so they outlive the transaction; iterators do not (consume them
inside the ``with engine.read()`` block). WriteTxn extends this class to see its pending writes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from tidemark.storage import catalog, chunks, indexes, journal, records
from tidemark.storage.bucket_reader import BucketReader
from tidemark.storage.catalog import CollectionInfo
from tidemark.storage.compression import TAG_BUCKET, ValueCodec
from tidemark.storage.errors import IndexNotFound
from tidemark.storage.lmdb_types import Handle, Txn
from tidemark.storage.longkeys import LongKeys

if TYPE_CHECKING:
    from lmdb import _StatDict

    from tidemark.storage.engine import Engine

DSIZE_PREFIX = b"dsize:"  # meta key prefix: data size counter of a collection ident


def size_key(ident: str) -> bytes:
    return DSIZE_PREFIX + ident.encode()


def open_stored(codec: ValueCodec, stored: bytes) -> bytes | BucketReader:
    """A packed value opened for reading: a ``BucketReader`` for a bucket-codec value (tag 4: parts
    decoded on demand), else the value's BSON bytes."""
    if stored[0] == TAG_BUCKET:
        packed = stored[5:]
        return BucketReader(packed, codec.bucket_decompressor(packed))
    return codec.unpack(stored)


def flush_sizes(txn: Txn, meta_db: Handle, sizes: dict[str, int]) -> None:
    """Add a group's data-size deltas to the persisted counters (inside the group txn)."""
    for ident, delta in sizes.items():
        if delta:
            key = size_key(ident)
            raw = txn.get(key, db=meta_db)
            total = (int.from_bytes(raw, "big", signed=True) if raw else 0) + delta
            txn.put(key, total.to_bytes(8, "big", signed=True), db=meta_db)


class ReadView:
    """Read access to one snapshot. Obtain with ``engine.read()``; do not keep past the block (at its end
    the view forgets its transaction: ``engine._ReadContext.__exit__``)."""

    # ``engine.read()``'s views: the engine's catalog generation read before the transaction began (the
    # snapshot holds every catalog change it counts: Engine.catalog_generation); -1 for a write transaction
    catalog_generation: int = -1

    def __init__(self, engine: Engine, txn: Txn, stores: dict[str, tuple[Handle, LongKeys]] | None = None) -> None:
        self._engine = engine
        self._txn = txn
        # ``engine.read()``'s views: a collection's records handle and compact keys by ident, found once
        # per transaction (a read of n buckets looked them up n times, ~8 calls each). A handle found
        # stays usable for the whole read (a drop reclaims it only once the reads begun before it left).
        # None for a write transaction (WriteTxn), whose handles come and go with its nested scopes.
        self._stores = stores

    # --- handles -----------------------------------------------------------------------------
    def _db(self, name: bytes) -> Handle:
        return self._engine._published_handle(name)

    def _records(self, info: CollectionInfo) -> Handle:
        return self._db(info.records_db)

    def _store(self, info: CollectionInfo) -> tuple[Handle, LongKeys]:
        """(records handle, compact keys) of ``info``'s records, memoized per read transaction."""
        stores = self._stores
        if stores is None:
            return self._records(info), self._long(info.ident)
        found = stores.get(info.ident)
        if found is None:  # (a read view: its handles are the engine's published ones, ``_db`` of a read)
            engine = self._engine
            found = stores[info.ident] = (engine._published_handle(info.records_db), engine._long_keys[info.ident])
        return found

    def _long(self, ident: str) -> LongKeys:
        """The full keys of the compact (over-long) LMDB keys of a collection's or index's ident."""
        return self._engine._long_keys[ident]

    def _index(self, info: CollectionInfo, name: str) -> Handle:
        found = info.index_dbs.get(name)
        if found is None:
            raise IndexNotFound(info.ns, name)
        return self._db(found[0])

    def snapshot_id(self) -> int:
        """The LMDB transaction id this view reads at. Two views of the same engine with equal ids
        see byte-identical data (every committed change to any database advances it), so a reader
        may keep what it derived from one snapshot and reuse it while the id stays the same (read
        views only: a write transaction's pending changes do not advance it)."""
        return self._txn.id()

    def snapshot_key(self) -> tuple[Engine, int]:
        """(engine, snapshot id): equal keys see byte-identical data, across the engines one process
        may hold (each counts its own ids). Read views only, as ``snapshot_id``: a write transaction
        (``WriteTxn``) sees its pending changes under an id that a commit later reuses."""
        return self._engine, self._txn.id()

    # --- catalog -----------------------------------------------------------------------------
    def list_databases(self) -> list[str]:
        names: list[str] = []
        with self._txn.cursor(db=self._engine._catalog_db) as cur:
            for key in cur.iternext(keys=True, values=False):
                db = key.decode().partition(".")[0]
                if not names or names[-1] != db:
                    names.append(db)
        return sorted(names)  # "a-b.x" sorts before "a.x" bytewise; callers expect name order

    def list_collections(self, db: str) -> list[CollectionInfo]:
        prefix = (db + ".").encode()
        out = []
        with self._txn.cursor(db=self._engine._catalog_db) as cur:
            if cur.set_range(prefix):
                for key, value in cur.iternext(keys=True, values=True):
                    if not key.startswith(prefix):
                        break
                    out.append(catalog.decode_entry(value))
        return out

    def get_collection(self, ns: str) -> CollectionInfo | None:
        key = ns.encode("utf-8", "surrogatepass")
        if len(key) > self._engine.max_key_size:
            return None  # no catalog entry can have such a key
        raw = self._txn.get(key, db=self._engine._catalog_db)
        return None if raw is None else catalog.decode_entry(raw)

    # --- records -----------------------------------------------------------------------------
    def get(self, info: CollectionInfo, rid: bytes) -> bytes | None:
        return records.get(self._txn, *self._store(info), rid, self._engine._codec, self._engine._chunks_db)

    def scan(self, info: CollectionInfo, *, start_after: bytes | None = None, reverse: bool = False,
             lo: bytes | None = None, hi: bytes | None = None, lo_inclusive: bool = True,
             hi_inclusive: bool = True) -> Iterator[tuple[bytes, bytes]]:
        """(rid, bson) in rid order; optional rid bounds with prefix semantics (for clustered
        collections: ``encode_key([_id])`` bounds, e.g. a bucket ``_id`` range)."""
        return records.scan(self._txn, *self._store(info), self._engine._codec,
                            start_after=start_after, reverse=reverse, lo=lo, hi=hi,
                            lo_inclusive=lo_inclusive, hi_inclusive=hi_inclusive,
                            chunks_db=self._engine._chunks_db)

    # --- packed records: selective decoding (storage/bucket_reader.py) ------------------------
    def get_stored(self, info: CollectionInfo, rid: bytes) -> bytes | None:
        """The stored (packed) value of one record; open it with ``stored_opener()``."""
        return records.get_stored(self._txn, *self._store(info), rid, self._engine._chunks_db)

    def get_stored_many(self, info: CollectionInfo, rids: list[bytes]) -> list[tuple[bytes, bytes]]:
        """(rid, stored value) of each of ``rids`` present, in the given order (absent ones left out):
        ``get_stored`` of each, read in one C-level pass."""
        return records.get_stored_many(self._txn, *self._store(info), rids, self._engine._chunks_db)

    def scan_stored(self, info: CollectionInfo, *, start_after: bytes | None = None, reverse: bool = False,
                    lo: bytes | None = None, hi: bytes | None = None, lo_inclusive: bool = True,
                    hi_inclusive: bool = True, limit: int | None = None) -> Iterator[tuple[bytes, bytes]]:
        """``scan`` yielding (rid, stored value) still packed: equal stored bytes mean an equal record,
        so callers may cache what they decode from them. At most ``limit`` records, read at once."""
        return records.scan_stored(self._txn, *self._store(info), self._engine._chunks_db, start_after=start_after,
                                   reverse=reverse, lo=lo, hi=hi, lo_inclusive=lo_inclusive,
                                   hi_inclusive=hi_inclusive, limit=limit)

    def stored_opener(self) -> Callable[[bytes], bytes | BucketReader]:
        """``open(stored) -> BucketReader | bytes`` (see ``open_stored``). It needs no transaction, so
        it may be kept and used after this read view's block."""
        return functools.partial(open_stored, self._engine._codec)

    def index_scan(self, info: CollectionInfo, index_name: str, lo: bytes | None = None,
                   hi: bytes | None = None, *, lo_inclusive: bool = True, hi_inclusive: bool = True,
                   reverse: bool = False, start_after: tuple[bytes, bytes] | None = None
                   ) -> Iterator[tuple[bytes, bytes]]:
        """(index key, rid) within bounds; bound semantics in storage/indexes.py (prefixes)."""
        return indexes.scan(self._txn, self._index(info, index_name), self._long(info.index_idents[index_name]),
                            info.is_unique(index_name),
                            lo, hi, lo_inclusive=lo_inclusive, hi_inclusive=hi_inclusive,
                            reverse=reverse, start_after=start_after)

    def index_reader(self, info: CollectionInfo, index_name: str) -> indexes.IndexReader:
        """``index_name`` as this view reads it, for many scans in a row (``IndexReader.scan`` takes
        ``index_scan``'s bounds): its handle, layout and compact keys are looked up once."""
        found = info.index_dbs.get(index_name)
        if found is None:
            raise IndexNotFound(info.ns, index_name)
        name, ident, unique = found
        return indexes.IndexReader(self._txn, self._db(name), self._engine._long_keys[ident], unique)

    # --- sizes (cheap: LMDB stat and one counter) -----------------------------------------
    def count(self, info: CollectionInfo) -> int:
        return self._txn.stat(self._records(info))["entries"]

    def data_size(self, info: CollectionInfo) -> int:
        """Sum of the uncompressed BSON sizes of the records (mongod's ``size``)."""
        raw = self._txn.get(size_key(info.ident), db=self._engine._meta_db)
        return int.from_bytes(raw, "big", signed=True) if raw else 0

    @staticmethod
    def _pages_bytes(stat: _StatDict) -> int:
        return (stat["branch_pages"] + stat["leaf_pages"] + stat["overflow_pages"]) * stat["psize"]

    def storage_size(self, info: CollectionInfo) -> int:
        """Bytes of LMDB pages holding the records (compressed), chunked values' pieces included."""
        return self._pages_bytes(self._txn.stat(self._records(info))) + chunks.pieces_pages_bytes(
            self._txn, self._engine._chunks_db, self._engine._meta_db, info.ident)

    def index_size(self, info: CollectionInfo, name: str) -> int:
        return self._pages_bytes(self._txn.stat(self._index(info, name)))

    def index_entries(self, info: CollectionInfo, name: str) -> int:
        return self._txn.stat(self._index(info, name))["entries"]

    def total_index_size(self, info: CollectionInfo) -> int:
        return sum(self.index_size(info, name) for name in info.index_idents)

    # --- journal -----------------------------------------------------------------------------
    def journal_streams(self) -> list[bytes]:
        return journal.streams(self._txn, self._engine._journal_db)

    def journal_scan(self, stream: bytes | None = None, after_seq: int = 0
                     ) -> Iterator[tuple[bytes, int, bytes]]:
        return journal.scan(self._txn, self._engine._journal_db, self._engine._codec, stream, after_seq)
