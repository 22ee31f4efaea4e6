"""Keys longer than LMDB's key limit (511 bytes): a compact stored form, the full key kept beside it.

mongod has no index key size limit (since 4.2), so neither does storage. Every index entry and every
record has a *full* stored key X (what the layouts in indexes.py / records.py describe: an encoded
index key, ``key + rid + len``, a clustered rid). The LMDB key is

    X                                         when len(X) <= max_key   (exactly as before: no migration)
    X[:head] + blake2b(X[head:-TAIL]) + X[-TAIL:]   otherwise, exactly max_key bytes ("compact form")

and the full X of a compact form is kept in the shared ``_longkeys`` sub-database under
``ident + NUL + blake2b(compact form)``, written and deleted with the entry it belongs to.

Order. A compact form keeps X's first ``head`` bytes, so stored order and full-key order agree
between any two entries that differ in their first ``head`` bytes, or when one of them is at most
``head`` bytes long (it is then full and a prefix of the other's first ``head`` bytes or differs
within them). Entries longer than ``head`` bytes that share their first ``head`` bytes (a *tie
group*) are contiguous in stored order; ``ordered`` reads a tie group whole, resolves full keys and
sorts it (compact forms with the same hash share head and middle, so they already sort by their
raw tail: a time-series series under a long meta differs only in the dates and rid kept there).
Bounds and resume keys are applied to full keys.

Uniqueness: distinct full keys have distinct compact forms (a 128-bit hash of the middle, with the
head, tail and length alike); a unique index checks its compact form, reporting the full key.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from typing import TypeVar

from tidemark.storage.keys import prefix_end
from tidemark.storage.lmdb_types import Handle, Txn

LONGKEYS_DB = b"_longkeys"
HASH_SIZE = 16
TAIL = 64  # raw bytes kept at the end: the dates and record id of a time-series bucket entry

V = TypeVar("V")


def head_size(max_key: int) -> int:
    return max_key - HASH_SIZE - TAIL


def compact(full: bytes, max_key: int) -> bytes:
    """The LMDB key of a full stored key (the key itself when it fits)."""
    if len(full) <= max_key:
        return full
    head = head_size(max_key)
    middle = hashlib.blake2b(full[head:len(full) - TAIL], digest_size=HASH_SIZE).digest()
    return full[:head] + middle + full[len(full) - TAIL:]


def side_prefix(ident: str) -> bytes:
    return ident.encode() + b"\x00"


def drop_ident(txn: Txn, side_db: Handle, ident: str) -> None:
    """Forget every full key recorded for ``ident`` (its collection or index is being dropped)."""
    prefix = side_prefix(ident)
    with txn.cursor(db=side_db) as cur:
        found = cur.set_range(prefix)
        while found and cur.key().startswith(prefix):
            found = cur.delete()


class LongKeys:
    """The full keys of one sub-database's compact forms (``ident``: its collection or index)."""

    __slots__ = ("txn", "db", "prefix", "max_key")

    def __init__(self, txn: Txn, side_db: Handle, ident: str, max_key: int) -> None:
        self.txn, self.db, self.prefix, self.max_key = txn, side_db, side_prefix(ident), max_key

    def _side_key(self, stored: bytes) -> bytes:
        return self.prefix + hashlib.blake2b(stored, digest_size=20).digest()

    def stored(self, full: bytes) -> bytes:
        return compact(full, self.max_key)

    def remember(self, full: bytes) -> bytes:
        """The LMDB key of ``full``, its full form recorded if it is compact (a write)."""
        stored = compact(full, self.max_key)
        if stored is not full:
            self.txn.put(self._side_key(stored), full, db=self.db)
        return stored

    def forget(self, full: bytes) -> None:
        """Drop the record of ``full``'s compact form (its entry is being deleted)."""
        if len(full) > self.max_key:
            self.txn.delete(self._side_key(compact(full, self.max_key)), db=self.db)

    def full(self, stored: bytes) -> bytes:
        """The full key of an LMDB key (itself unless it is a recorded compact form)."""
        if len(stored) != self.max_key:
            return stored
        found = self.txn.get(self._side_key(stored), db=self.db)
        return stored if found is None else found

    def ordered(self, walk: Callable[[bytes | None, bytes | None, bytes | None], Iterator[tuple[bytes, V]]],
                start: bytes | None, end: bytes | None, *, resume: bytes | None = None,
                reverse: bool = False) -> Iterator[tuple[bytes, V]]:
        """(full key, value) with start <= key < end in full-key order (descending with ``reverse``),
        strictly after ``resume`` (a full key) in walk direction. ``walk(start, end, resume)`` walks
        the LMDB keys in the same direction with ``ranges.walk`` semantics."""
        head = head_size(self.max_key)
        # LMDB-key bounds that cover whole tie groups; exact bounds are applied to full keys below
        s_start = start[:head] if start is not None and len(start) > head else start
        s_end = end
        if end is not None and len(end) > head:
            s_end = prefix_end(end[:head])
        s_resume = None
        if resume is not None:
            if len(resume) <= head:
                s_resume = resume  # not in a tie group: its LMDB key is itself
            elif not reverse:
                s_start = resume[:head] if s_start is None else max(s_start, resume[:head])
            else:
                group_end = prefix_end(resume[:head])
                s_end = group_end if s_end is None or group_end is None else min(s_end, group_end)

        def inside(key: bytes) -> bool:
            if start is not None and key < start or end is not None and key >= end:
                return False
            return resume is None or (key < resume if reverse else key > resume)

        def beyond(key: bytes) -> bool:  # past the far bound: nothing later in walk order qualifies
            return (start is not None and key < start) if reverse else (end is not None and key >= end)

        group: list[tuple[bytes, V]] = []
        for stored, value in walk(s_start, s_end, s_resume):
            if group and (len(stored) <= head or stored[:head] != group[0][0][:head]):
                for key, grouped in self._resolve(group, reverse):
                    if beyond(key):
                        return
                    if inside(key):
                        yield key, grouped
                group = []
            if len(stored) > head:
                group.append((stored, value))
                continue
            if beyond(stored):
                return
            if inside(stored):
                yield stored, value
        for key, grouped in self._resolve(group, reverse):
            if beyond(key):
                return
            if inside(key):
                yield key, grouped

    def _resolve(self, group: list[tuple[bytes, V]], reverse: bool) -> list[tuple[bytes, V]]:
        """A tie group with full keys, in full-key order (walk direction)."""
        resolved = [(self.full(stored), value) for stored, value in group]
        resolved.sort(key=lambda e: e[0], reverse=reverse)
        return resolved
