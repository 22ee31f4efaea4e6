"""Keys longer than LMDB's key limit (511 bytes): a compact stored form, the full key kept beside it.

mongod has no index key size limit (since 4.2), so neither does storage. Every index entry and every
record has a *full* stored key X (what the layouts in indexes.py / records.py describe: an encoded
index key, ``key + rid + len``, a clustered rid). The LMDB key is

    X                                         when len(X) <= max_key   (exactly as before: no migration)
    X[:head] + blake2b(middle) + rest        otherwise ("compact form", head + 16 .. max_key bytes)

where the middle ends at the end of the encoded component that crosses the head when at most TAIL
bytes follow it (else TAIL bytes before the end; see ``compact``), so the compact form is at most
max_key bytes. The full X of a compact form is kept in the shared ``_longkeys`` sub-database under
``ident + NUL + blake2b(compact form)``, written and deleted with the entry it belongs to.

Order. A compact form keeps X's first ``head`` bytes, so stored order and full-key order agree
between any two entries that differ in their first ``head`` bytes, or when one of them is at most
``head`` bytes long (it is then full and a prefix of the other's first ``head`` bytes or differs
within them). Entries longer than ``head`` bytes that share their first ``head`` bytes (a *tie
group*) are contiguous in stored order; ``ordered`` reads a tie group whole, resolves full keys and
sorts it. Compact forms with the same hash share head and middle, so they already sort by their raw
rest: a tie group whose first and last entries agree through the hash (a *run*: the buckets of a
time-series series under a long meta, keyed meta + dates + rid) is streamed without buffering once it
is found big, and bounds and resume keys inside it are placed exactly. Elsewhere bounds and resume keys
are applied to full keys.

Uniqueness: distinct full keys have distinct compact forms (a 128-bit hash of the middle and its rule,
with the head and rest alike); a unique index checks its compact form, reporting the full key.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from tidemark.storage.keys import prefix_end
from tidemark.storage.keyspan import leading_components_length
from tidemark.storage.lmdb_types import Handle, Txn

LONGKEYS_DB = b"_longkeys"
HASH_SIZE = 16
TAIL = 64  # raw bytes kept at the end: the dates and record id of a time-series bucket entry

V = TypeVar("V")
# walk(start, end, resume, reverse): (LMDB key, value) with ranges.walk semantics
Walk = Callable[[bytes | None, bytes | None, bytes | None, bool], Iterator[tuple[bytes, V]]]


def head_size(max_key: int) -> int:
    return max_key - HASH_SIZE - TAIL


def compact(full: bytes, max_key: int) -> bytes:
    """The LMDB key of a full stored key (the key itself when it fits): its head, the hash of its middle,
    its raw rest. The middle ends where the encoded component crossing the head ends, when at most TAIL
    bytes follow (a long meta or string: keys of one such value differ only in the raw rest), else
    TAIL bytes before the end; a rule byte in the hash keeps the two cuts apart."""
    if len(full) <= max_key:
        return full
    head = head_size(max_key)
    cut = leading_components_length(full, head + 1)
    rule = b"c"
    if cut is None or cut <= head or len(full) - cut > TAIL:
        cut, rule = len(full) - TAIL, b"t"
    middle = hashlib.blake2b(rule + full[head:cut], digest_size=HASH_SIZE).digest()
    return full[:head] + middle + full[cut:]


def side_prefix(ident: str) -> bytes:
    return ident.encode() + b"\x00"


def drop_ident(txn: Txn, side_db: Handle, ident: str) -> None:
    """Forget every full key recorded for ``ident`` (its collection or index is being dropped)."""
    prefix = side_prefix(ident)
    with txn.cursor(db=side_db) as cur:
        found = cur.set_range(prefix)
        while found and cur.key().startswith(prefix):
            found = cur.delete()


class Presence:
    """Whether a side sub-database may hold any full key: ``possible`` is False only while it held none
    when the engine opened and no compact form has been recorded since (``LongKeys.remember`` sets it
    before its write, so before the commit that makes the key visible: a read that begins after that
    commit finds it set). Keys over LMDB's limit are rare: while none exists, ``LongKeys.any`` answers
    without a seek (a cursor and four C calls, and a B-tree page, every index read)."""

    __slots__ = ("possible",)

    def __init__(self, possible: bool) -> None:
        self.possible = possible


_POSSIBLE = Presence(True)  # (a LongKeys made without the engine's: always looks)


class LongKeysByIdent(dict[str, "LongKeys"]):
    """The engine's ``LongKeys``, one per ident, made on first use (``__missing__``: a hit is a plain
    subscript, no Python call), all sharing the engine's ``presence``. At most ``LIMIT`` are kept, then
    all are forgotten at once (a LongKeys holds nothing but its ident's prefix: made again when asked)."""

    __slots__ = ("side_db", "max_key", "presence")
    LIMIT = 4096

    def __init__(self, side_db: Handle, max_key: int, presence: Presence) -> None:
        super().__init__()
        self.side_db, self.max_key, self.presence = side_db, max_key, presence

    def __missing__(self, ident: str) -> LongKeys:
        if len(self) >= self.LIMIT:
            self.clear()
        long = self[ident] = LongKeys(self.side_db, ident, self.max_key, self.presence)
        return long


class LongKeys:
    """The full keys of one sub-database's compact forms (``ident``: its collection or index). Holds no
    transaction: the engine keeps one per ident (``Engine._long_keys``, a ``LongKeysByIdent``), sharing
    the engine's ``Presence`` of its side sub-database."""

    __slots__ = ("db", "prefix", "max_key", "presence")

    def __init__(self, side_db: Handle, ident: str, max_key: int, presence: Presence = _POSSIBLE) -> None:
        self.db, self.prefix, self.max_key, self.presence = side_db, side_prefix(ident), max_key, presence

    def _side_key(self, stored: bytes) -> bytes:
        return self.prefix + hashlib.blake2b(stored, digest_size=20).digest()

    def stored(self, full: bytes) -> bytes:
        return full if len(full) <= self.max_key else compact(full, self.max_key)

    def remember(self, txn: Txn, full: bytes) -> bytes:
        """The LMDB key of ``full``, its full form recorded if it is compact (a write)."""
        if len(full) <= self.max_key:
            return full
        stored = compact(full, self.max_key)
        self.presence.possible = True  # (before the write: see Presence)
        txn.put(self._side_key(stored), full, db=self.db)
        return stored

    def forget(self, txn: Txn, full: bytes) -> None:
        """Drop the record of ``full``'s compact form (its entry is being deleted)."""
        if len(full) > self.max_key:
            txn.delete(self._side_key(compact(full, self.max_key)), db=self.db)

    def full(self, txn: Txn, stored: bytes) -> bytes:
        """The full key of an LMDB key (itself unless it is a recorded compact form)."""
        if len(stored) < head_size(self.max_key) + HASH_SIZE:  # shorter than any compact form
            return stored
        found = txn.get(self._side_key(stored), db=self.db)
        return stored if found is None else found

    def any(self, txn: Txn) -> bool:
        """Whether this ident has compact forms at all (one seek, none while the side sub-database holds no
        key: ``Presence``): scans of one that has none are plain walks."""
        if not self.presence.possible:
            return False
        with txn.cursor(db=self.db) as cur:
            return bool(cur.set_range(self.prefix)) and cur.key().startswith(self.prefix)

    def ordered(self, txn: Txn, walk: Walk[V], start: bytes | None, end: bytes | None, *, resume: bytes | None = None,
                reverse: bool = False) -> Iterator[tuple[bytes, V]]:
        """(full key, value) with start <= key < end in full-key order (descending with ``reverse``),
        strictly after ``resume`` (a full key) in walk direction. ``walk(start, end, resume, reverse)``
        walks the LMDB keys with ``ranges.walk`` semantics."""
        if not self.any(txn):  # every LMDB key is its full key: the walk itself, at no cost per entry
            return walk(start, end, resume, reverse)
        return self._ordered(txn, walk, start, end, resume, reverse)

    def ordered_known(self, txn: Txn, walk: Walk[V], start: bytes | None, end: bytes | None, *,
                      resume: bytes | None = None, reverse: bool = False) -> Iterator[tuple[bytes, V]]:
        """``ordered`` of an ident the caller knows has compact forms (``any`` asked once for many
        scans: ``indexes.IndexReader``)."""
        return self._ordered(txn, walk, start, end, resume, reverse)

    def _ordered(self, txn: Txn, walk: Walk[V], start: bytes | None, end: bytes | None, resume: bytes | None,
                 reverse: bool) -> Iterator[tuple[bytes, V]]:
        head = head_size(self.max_key)
        # LMDB-key bounds: exact where the bound's tie group is one run (``_run``), else covering the
        # whole group; exact bounds are applied to full keys below
        s_start, s_end, s_resume = start, end, None
        if start is not None and len(start) > head:
            s_start = self._place(txn, walk, start) or start[:head]
        if end is not None and len(end) > head:
            s_end = self._place(txn, walk, end) or prefix_end(end[:head])
        if resume is not None:
            s_resume = resume if len(resume) <= head else self._place(txn, walk, resume)
            if s_resume is None and not reverse:
                s_start = resume[:head] if s_start is None else max(s_start, resume[:head])
            elif s_resume is None:
                group_end = prefix_end(resume[:head])
                s_end = group_end if s_end is None or group_end is None else min(s_end, group_end)

        def inside(key: bytes) -> bool:
            if start is not None and key < start or end is not None and key >= end:
                return False
            return resume is None or (key < resume if reverse else key > resume)

        def beyond(key: bytes) -> bool:  # past the far bound: nothing later in walk order qualifies
            return (start is not None and key < start) if reverse else (end is not None and key >= end)

        # bounds no longer than the head are exact on LMDB keys: entries outside tie groups need no check
        exact = all(bound is None or len(bound) <= head for bound in (start, end, resume))
        group: list[tuple[bytes, V]] = []  # the current tie group, buffered unless it streams
        group_head: bytes | None = None
        streaming = False  # the current group is one run: LMDB order is full-key order
        for stored, value in walk(s_start, s_end, s_resume, reverse):
            if group_head is not None and (len(stored) <= head or stored[:head] != group_head):
                for key, grouped in self._sorted(txn, group, reverse):
                    if beyond(key):
                        return
                    if inside(key):
                        yield key, grouped
                group, group_head, streaming = [], None, False
            if len(stored) <= head:
                if exact:
                    yield stored, value
                    continue
                entries = [(stored, value)]
            elif streaming:
                entries = [(self.full(txn, stored), value)]
            else:
                group_head = stored[:head]
                group.append((stored, value))
                if len(group) < _RUN_CHECK_AT or self._run(txn, walk, group_head) is None:
                    continue
                streaming = True  # a big group that is one run: yield what is buffered, stream the rest
                entries, group = [(self.full(txn, s), v) for s, v in group], []
            for key, item in entries:
                if beyond(key):
                    return
                if inside(key):
                    yield key, item
        for key, grouped in self._sorted(txn, group, reverse):
            if beyond(key):
                return
            if inside(key):
                yield key, grouped

    def _sorted(self, txn: Txn, group: list[tuple[bytes, V]], reverse: bool) -> list[tuple[bytes, V]]:
        """A tie group with full keys, in full-key order (walk direction)."""
        resolved = [(self.full(txn, stored), value) for stored, value in group]
        resolved.sort(key=lambda e: e[0], reverse=reverse)
        return resolved

    def _place(self, txn: Txn, walk: Walk[V], bound: bytes) -> bytes | None:
        """The LMDB key equivalent to full key ``bound`` (longer than the head) as a bound, when its tie
        group is one run (``_run``); else None (the caller then covers the whole group)."""
        run = self._run(txn, walk, bound[:head_size(self.max_key)])
        if run is None:
            return None
        stored_prefix, full_prefix = run
        if bound.startswith(full_prefix):
            return stored_prefix + bound[len(full_prefix):]
        return stored_prefix if bound < full_prefix else prefix_end(stored_prefix)

    def _run(self, txn: Txn, walk: Walk[V], group_head: bytes) -> tuple[bytes, bytes] | None:
        """(LMDB-key prefix, full-key prefix) shared by every entry of the tie group ``group_head`` when its
        entries are compact forms of one head and middle (its first and last entries agree through the
        hash): they then differ only in their raw tails, so LMDB order is full-key order. Else None."""
        group_end = prefix_end(group_head)
        first, last = _first(walk(group_head, group_end, None, False)), _first(walk(group_head, group_end, None, True))
        through_hash = head_size(self.max_key) + HASH_SIZE
        if first is None or last is None or len(first) < through_hash or first[:through_hash] != last[:through_hash]:
            return None
        full = self.full(txn, first)
        if full is first:
            return None
        return first[:through_hash], full[:len(full) - (len(first) - through_hash)]


_RUN_CHECK_AT = 64  # a tie group this big is checked for being one run (streamed, not buffered)


def _first(entries: Iterator[tuple[bytes, Any]]) -> bytes | None:
    """The first LMDB key a walk yields (the walk is closed: its cursor freed at once)."""
    try:
        return next((stored for stored, _ in entries), None)
    finally:
        close = getattr(entries, "close", None)
        if close is not None:
            close()
