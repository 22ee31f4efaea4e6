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

Bounds have prefix semantics (storage/ranges.py), so they work the same for both layouts and
for compound indexes bounded on a leading subset of fields: ``lo = hi = encode_key([5])``
inclusive returns every entry whose first component is 5.

Functions here take an open transaction; uniqueness is checked before anything is written.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from tidemark.storage.errors import DuplicateKey, KeyTooLong
from tidemark.storage.keyspan import leading_components_length
from tidemark.storage.lmdb_types import Handle, Txn
from tidemark.storage.ranges import raw_range, walk, walk_split

# The LMDB key of a split entry is the shortest run of whole leading components of at least this many
# bytes (or the whole index key): a long first component (a time-series meta) is stored once, while
# short ones (a hostname, a number) are not split from the rest, which would cost a sub-page per value.
SPLIT_AT_LEAST = 32


def is_split(txn: Txn, db: Handle) -> bool:
    """Whether an index sub-database uses the split layout (it was created dupsort). The flags are
    the handle's, fixed when it was opened: ``txn`` is not needed to read them."""
    return db.flags()["dupsort"]


def split_key(key: bytes, rid: bytes) -> tuple[bytes, bytes]:
    """(LMDB key, value) of a non-unique entry in the split layout."""
    if len(key) <= SPLIT_AT_LEAST:  # the common short key: no parsing, the whole key is the run
        return key, rid + bytes((len(rid),))
    n = leading_components_length(key, SPLIT_AT_LEAST) or len(key)
    return key[:n], key[n:] + rid + bytes((len(rid),))


def entry_key(key: bytes, rid: bytes) -> bytes:
    """Stored key of a non-unique entry."""
    return key + rid + bytes((len(rid),))


def split_entry(stored_key: bytes) -> tuple[bytes, bytes]:
    """(key, rid) of a non-unique stored key."""
    n = stored_key[-1]
    return stored_key[:-1 - n], stored_key[-1 - n:-1]


def check_sizes(ns: str, name: str, keys: Iterable[bytes], rid: bytes, unique: bool,
                max_key: int) -> None:
    extra = 0 if unique else len(rid) + 1
    for key in keys:
        if len(key) + extra > max_key:
            raise KeyTooLong(ns, name, len(key) + extra, max_key)


def check_unique(txn: Txn, db: Handle, ns: str, name: str, keys: Iterable[bytes],
                 rid: bytes | None) -> None:
    """Raise DuplicateKey if any key is held by a record other than ``rid`` (None: by any record)."""
    for key in keys:
        holder = txn.get(key, db=db)
        if holder is not None and holder != rid:
            raise DuplicateKey(name, key, ns)


def add(txn: Txn, db: Handle, keys: Iterable[bytes], rid: bytes, unique: bool,
        split: bool = False) -> None:
    if unique:
        for key in keys:
            txn.put(key, rid, db=db)
    elif split:
        for key in keys:
            txn.put(*split_key(key, rid), db=db)
    else:
        for key in keys:
            txn.put(entry_key(key, rid), b"", db=db)


def remove(txn: Txn, db: Handle, keys: Iterable[bytes], rid: bytes, unique: bool,
           split: bool = False) -> None:
    if unique:
        for key in keys:
            if txn.get(key, db=db) == rid:
                txn.delete(key, db=db)
    elif split:
        for key in keys:
            txn.delete(*split_key(key, rid), db=db)
    else:
        for key in keys:
            txn.delete(entry_key(key, rid), db=db)


def bulk_add(txn: Txn, db: Handle, ns: str, name: str, entries: Iterable[tuple[bytes, bytes]],
             unique: bool, max_key: int) -> int:
    """Add (key, rid) entries for a new index; unique violations raise DuplicateKey (the caller
    runs this in its own nested transaction so nothing partial survives). Returns the count."""
    count = 0
    split = not unique and is_split(txn, db)
    for key, rid in entries:
        if unique:
            if len(key) > max_key:
                raise KeyTooLong(ns, name, len(key), max_key)
            if not txn.put(key, rid, db=db, overwrite=False):
                if txn.get(key, db=db) != rid:
                    raise DuplicateKey(name, key, ns)
        else:
            stored = entry_key(key, rid)
            if len(stored) > max_key:
                raise KeyTooLong(ns, name, len(stored), max_key)
            if split:
                txn.put(*split_key(key, rid), db=db)
            else:
                txn.put(stored, b"", db=db)
        count += 1
    return count


def scan(txn: Txn, db: Handle, unique: bool, lo: bytes | None = None, hi: bytes | None = None, *,
         lo_inclusive: bool = True, hi_inclusive: bool = True, reverse: bool = False,
         start_after: tuple[bytes, bytes] | None = None) -> Iterator[tuple[bytes, bytes]]:
    """(key, rid) of entries within bounds, in key order (descending with ``reverse``), strictly
    after the ``start_after`` entry (a previously returned (key, rid)) in scan direction."""
    bounds = raw_range(lo, hi, lo_inclusive, hi_inclusive)
    if bounds is None:
        return
    resume = None
    if start_after is not None:
        resume = start_after[0] if unique else entry_key(*start_after)
    if unique:
        entries = walk(txn, db, *bounds, resume=resume, reverse=reverse)
    elif is_split(txn, db):
        entries = walk_split(txn, db, *bounds, resume=resume, reverse=reverse)
    else:
        entries = walk(txn, db, *bounds, resume=resume, reverse=reverse)
    if unique:
        yield from entries
    else:
        for key, _ in entries:
            yield split_entry(key)
