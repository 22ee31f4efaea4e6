"""Secondary index entries: one LMDB sub-database per index ("i:<ident>").

Entry layout (``key`` is an ``encode_key`` result computed by the server):
- unique index:      ``key``                        -> rid
- non-unique index:  ``key + rid + len(rid) byte``  -> b""   (every entry distinct; the trailing
  length byte lets variable-length rids of clustered collections be split off again)
- non-unique index created since the split layout (its sub-database is dupsort): the same stored
  key split after its shortest run of whole leading components of >= SPLIT_AT_LEAST bytes (or
  after the whole index key): LMDB key = that run, value = the rest + rid + len. Each distinct
  long first component is stored once (a time-series meta in the buckets index: ~200 bytes a
  bucket before). The runs are prefix-free (encoded components are, index keys have one arity, and
  the rule depends only on the components), so (key, value) order is the order of the unsplit
  stored keys; ``ranges.walk_split`` yields the unsplit keys, so callers see no difference. A key
  that is not a sequence of encoded values is kept whole as the LMDB key.

A rid longer than 255 bytes (a clustered collection's long ``_id``) ends as ``rid + len u32 + 0`` instead
(a length byte of 0 never occurs otherwise). Any of these stored keys longer than LMDB's limit is kept
in its compact form (storage/longkeys.py): the LMDB key above is then ``compact(stored key)``, split
after its leading run only when that run lies within the compact form's raw head (else before its
last byte), and scans resolve and order entries by their full stored keys.

Bounds have prefix semantics (storage/ranges.py), so they work the same for both layouts and
for compound indexes bounded on a leading subset of fields: ``lo = hi = encode_key([5])``
inclusive returns every entry whose first component is 5.

An index being prepared for uniqueness (a non-unique index whose spec has ``prepareUnique``: the first
step of collMod's conversion to unique) keeps the non-unique layout but refuses a key another record
holds (``check_prepared_unique``): duplicates already present stay, new ones are refused.

Functions here take an open transaction; uniqueness is checked before anything is written.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from operator import itemgetter

from tidemark.storage.errors import DuplicateKey
from tidemark.storage.keyspan import leading_components_length
from tidemark.storage.lmdb_types import Handle, Txn
from tidemark.storage.longkeys import LongKeys, head_size
from tidemark.storage.ranges import raw_range, split_keys, walk, walk_split

# The LMDB key of a split entry is the shortest run of whole leading components of at least this many
# bytes (or the whole index key): a long first component (a time-series meta) is stored once, while
# short ones (a hostname, a number) are not split from the rest, which would cost a sub-page per value.
SPLIT_AT_LEAST = 32


def is_split(txn: Txn, db: Handle) -> bool:
    """Whether an index sub-database uses the split layout (it was created dupsort). The flags are
    the handle's, fixed when it was opened: ``txn`` is not needed to read them."""
    return db.flags()["dupsort"]


def place_split(stored: bytes, full: bytes, key: bytes, max_key: int) -> tuple[bytes, bytes]:
    """(LMDB key, value) in the split layout of a non-unique entry: ``full`` its full stored key
    (``entry_key(key, rid)``), ``stored`` the LMDB form of it (``full`` itself when it fits). The cut:
    after the key's shortest leading run of >= SPLIT_AT_LEAST bytes (or after the key)."""
    n = len(key)
    if n > SPLIT_AT_LEAST:  # the common short key: no parsing, the whole key is the run
        n = leading_components_length(key, SPLIT_AT_LEAST) or n
    if stored is not full and n > head_size(max_key):
        # a compact form whose run is not all raw head bytes: all but the last byte (a dupsort value
        # cannot be empty); such keys are as prefix-free as runs (raw head, hash, then whole components)
        n = len(stored) - 1
    return stored[:n], stored[n:]


def entry_key(key: bytes, rid: bytes) -> bytes:
    """Full stored key of a non-unique entry."""
    n = len(rid)
    return key + rid + (bytes((n,)) if n < 256 else n.to_bytes(4, "big") + b"\x00")


def split_entry(stored_key: bytes) -> tuple[bytes, bytes]:
    """(key, rid) of a non-unique full stored key."""
    n = stored_key[-1]
    if n:
        return stored_key[:-1 - n], stored_key[-1 - n:-1]
    n = int.from_bytes(stored_key[-5:-1], "big")
    return stored_key[:-5 - n], stored_key[-5 - n:-5]


def check_unique(txn: Txn, db: Handle, long: LongKeys, ns: str, name: str, keys: Iterable[bytes],
                 rid: bytes | None) -> None:
    """Raise DuplicateKey if any key is held by a record other than ``rid`` (None: by any record)."""
    for key in keys:
        holder = txn.get(key if len(key) <= long.max_key else long.stored(key), db=db)
        if holder is not None and holder != rid:
            raise DuplicateKey(name, key, ns)


def check_prepared_unique(txn: Txn, db: Handle, long: LongKeys, ns: str, name: str, keys: Iterable[bytes],
                          rid: bytes | None) -> None:
    """Raise DuplicateKey if any key has an entry of a record other than ``rid`` (None: of any record) in
    a non-unique index (``prepareUnique``): a bounded point scan per key (prefix bounds: an index key's
    entries, as the encoded keys of one index are prefix-free)."""
    for key in keys:
        for _, holder in scan(txn, db, long, False, key, key):
            if holder != rid:
                raise DuplicateKey(name, key, ns)


def add(txn: Txn, db: Handle, long: LongKeys, keys: Iterable[bytes], rid: bytes, unique: bool,
        split: bool = False) -> None:
    max_key = long.max_key  # (keys that fit, nearly all, skip the long-key bookkeeping)
    if unique:
        for key in keys:
            txn.put(key if len(key) <= max_key else long.remember(txn, key), rid, db=db)
    elif split:
        for key in keys:
            full = entry_key(key, rid)
            txn.put(*place_split(full if len(full) <= max_key else long.remember(txn, full), full, key, max_key),
                    db=db)
    else:
        for key in keys:
            full = entry_key(key, rid)
            txn.put(full if len(full) <= max_key else long.remember(txn, full), b"", db=db)


def remove(txn: Txn, db: Handle, long: LongKeys, keys: Iterable[bytes], rid: bytes, unique: bool,
           split: bool = False) -> None:
    for key in keys:
        if unique:
            stored = long.stored(key)
            if txn.get(stored, db=db) == rid:
                txn.delete(stored, db=db)
                long.forget(txn, key)
            continue
        full = entry_key(key, rid)
        stored = long.stored(full)
        if split:
            txn.delete(*place_split(stored, full, key, long.max_key), db=db)
        else:
            txn.delete(stored, db=db)
        long.forget(txn, full)


def bulk_add(txn: Txn, db: Handle, long: LongKeys, ns: str, name: str,
             entries: Iterable[tuple[bytes, bytes]], unique: bool) -> int:
    """Add (key, rid) entries for a new index; unique violations raise DuplicateKey (the caller
    runs this in its own nested transaction so nothing partial survives). Returns the count."""
    count = 0
    split = not unique and is_split(txn, db)
    for key, rid in entries:
        if unique:
            stored = long.stored(key)
            if not txn.put(stored, rid, db=db, overwrite=False):
                if txn.get(stored, db=db) != rid:
                    raise DuplicateKey(name, key, ns)
            long.remember(txn, key)
        else:
            full = entry_key(key, rid)
            stored = long.remember(txn, full)
            if split:
                txn.put(*place_split(stored, full, key, long.max_key), db=db)
            else:
                txn.put(stored, b"", db=db)
        count += 1
    return count


def scan(txn: Txn, db: Handle, long: LongKeys, unique: bool, lo: bytes | None = None,
         hi: bytes | None = None, *, lo_inclusive: bool = True, hi_inclusive: bool = True,
         reverse: bool = False, start_after: tuple[bytes, bytes] | None = None) -> Iterator[tuple[bytes, bytes]]:
    """(key, rid) of entries within bounds, in key order (descending with ``reverse``), strictly
    after the ``start_after`` entry (a previously returned (key, rid)) in scan direction. Lazy: nothing
    is read before the first entry is asked for."""
    yield from IndexReader(txn, db, long, unique).scan(lo, hi, lo_inclusive=lo_inclusive, hi_inclusive=hi_inclusive,
                                                       reverse=reverse, start_after=start_after)


class IndexReader:
    """One index as one transaction reads it: what every scan of it needs (its layout, whether it
    holds compact keys) found once, so that many scans in a row — an index scan of a ``$in`` of
    400,000 values is 400,000 point intervals — pay for it once. Valid while ``txn`` is."""

    __slots__ = ("_txn", "_db", "_long", "_unique", "_split", "_plain")

    def __init__(self, txn: Txn, db: Handle, long: LongKeys, unique: bool):
        self._txn, self._db, self._long, self._unique = txn, db, long, unique
        self._split = not unique and is_split(txn, db)
        self._plain = not long.any(txn)  # (no compact forms: every LMDB key is its full key)

    def scan(self, lo: bytes | None = None, hi: bytes | None = None, *, lo_inclusive: bool = True,
             hi_inclusive: bool = True, reverse: bool = False,
             start_after: tuple[bytes, bytes] | None = None) -> Iterator[tuple[bytes, bytes]]:
        """``scan``'s (key, rid) entries; the cursor is positioned at once (use the entries before
        anything else writes through ``txn``)."""
        bounds = raw_range(lo, hi, lo_inclusive, hi_inclusive)
        if bounds is None:
            return iter(())
        resume = None
        if start_after is not None:
            resume = start_after[0] if self._unique else entry_key(*start_after)
        txn, db, split = self._txn, self._db, self._split
        if self._plain:
            if split:  # (the stored keys themselves: no Python step per entry but the split)
                return map(split_entry, split_keys(txn, db, *bounds, resume=resume, reverse=reverse))
            entries = walk(txn, db, *bounds, resume=resume, reverse=reverse)
        else:
            walker = walk_split if split else walk

            def lmdb_walk(start: bytes | None, end: bytes | None, at: bytes | None,
                          backwards: bool) -> Iterator[tuple[bytes, bytes]]:
                return walker(txn, db, start, end, resume=at, reverse=backwards)

            entries = self._long.ordered_known(txn, lmdb_walk, *bounds, resume=resume, reverse=reverse)
        if self._unique:
            return entries
        return map(split_entry, map(_STORED_KEY, entries))  # (no Python step per entry but the split)


_STORED_KEY = itemgetter(0)
