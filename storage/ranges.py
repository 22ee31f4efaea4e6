"""Key ranges over an LMDB sub-database: bound semantics and the cursor walk, shared by record
scans (clustered collections are keyed by encoded ``_id``) and index scans.

Bounds have *prefix* semantics, so they work for compound keys bounded on leading components
and for index entries that carry a record id after the key: a stored key K is
    >= lo (inclusive)  when K >= lo;           > lo (exclusive) when K >= prefix_end(lo)
    <= hi (inclusive)  when K < prefix_end(hi); < hi (exclusive) when K < hi
``resume`` continues strictly after (or, reversed, before) a previously returned stored key.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import repeat, takewhile

from tidemark.storage.keys import prefix_end
from tidemark.storage.lmdb_types import Cursor, Handle, Txn


def raw_range(lo: bytes | None, hi: bytes | None, lo_inclusive: bool = True,
              hi_inclusive: bool = True) -> tuple[bytes | None, bytes | None] | None:
    """[start, end) over stored keys for prefix-semantics bounds (None = open); None if empty."""
    start = lo
    if lo is not None and not lo_inclusive:
        start = prefix_end(lo)
        if start is None:
            return None
    end = hi
    if hi is not None and hi_inclusive:
        end = prefix_end(hi)
    return start, end


def walk(txn: Txn, db: Handle, start: bytes | None, end: bytes | None, *,
         resume: bytes | None = None, reverse: bool = False) -> Iterator[tuple[bytes, bytes]]:
    """(stored key, value) with start <= key < end, ascending (descending with ``reverse``),
    strictly after ``resume`` in the direction of the walk.

    The cursor is positioned at once; the entries come from py-lmdb's own iterator, the far bound
    applied by ``takewhile`` with a tuple comparison: no Python step per entry (``(end,) > (key, value)``
    exactly when ``key < end``; ``(start,) <= (key, value)`` exactly when ``key >= start``). The cursor
    is freed with the iterator (and, like any cursor, is invalid once its transaction ends)."""
    cur = txn.cursor(db=db)
    if not reverse:
        if resume is not None and (start is None or resume >= start):
            start = resume
        ok = cur.set_range(start) if start is not None else cur.first()
        if ok and resume is not None and cur.key() == resume:
            ok = cur.next()
        if not ok:
            cur.close()
            return iter(())
        entries = cur.iternext(keys=True, values=True)
        return entries if end is None else takewhile((end,).__gt__, entries)
    if resume is not None and (end is None or resume < end):
        end = resume  # exclusive, like end
    if end is None:
        ok = cur.last()
    elif cur.set_range(end):
        ok = cur.prev()
    else:
        ok = cur.last()
    if not ok:
        cur.close()
        return iter(())
    entries = cur.iterprev(keys=True, values=True)
    return entries if start is None else takewhile((start,).__le__, entries)


def _seek_dup(cur: Cursor, target: bytes) -> bool:
    """Position a cursor of a split (dupsort) index at its first entry with key + value >= target.

    Keys are first components (prefix-free among themselves), so at most one key is a prefix of
    ``target``: the largest key <= target. Its values are searched from the rest of target."""
    if cur.set_range(target):
        if cur.key() == target:
            return cur.first_dup()
        found_after = True
        if not cur.prev_nodup():  # target is below every key
            return cur.set_range(target)
    else:
        found_after = False
        if not cur.last():
            return False
    key = cur.key()
    if target.startswith(key):
        if cur.set_range_dup(key, target[len(key):]):
            return True
        cur.set_key(key)
    elif not found_after:
        return False
    return cur.next_nodup()


def split_keys(txn: Txn, db: Handle, start: bytes | None, end: bytes | None, *,
               resume: bytes | None = None, reverse: bool = False) -> Iterator[bytes]:
    """The stored keys ``walk`` would yield over a split index (dupsort: key = first component, value =
    the rest of the stored key), each ``key + value``. Like ``walk``, the cursor is positioned at once
    and the entries come from py-lmdb's own iterator joined and bounded in C (``b"".join`` of each (key,
    value) pair, ``takewhile`` with the far bound): no Python step per entry. A resume key can only be
    the entry the cursor lands on (entries are distinct), so it is stepped over before the walk."""
    cur = txn.cursor(db=db)
    if not reverse:
        if resume is not None and (start is None or resume >= start):
            start = resume
        ok = _seek_dup(cur, start) if start is not None else cur.first()
        if ok and resume is not None and cur.key() + cur.value() == resume:
            ok = cur.next()
        if not ok:
            cur.close()
            return iter(())
        keys = map(b"".join, cur.iternext(keys=True, values=True))
        return keys if end is None else takewhile(end.__gt__, keys)
    if resume is not None and (end is None or resume < end):
        end = resume  # exclusive, like end
    if end is None:
        ok = cur.last()
    elif _seek_dup(cur, end):
        ok = cur.prev()
    else:
        ok = cur.last()
    if not ok:
        cur.close()
        return iter(())
    keys = map(b"".join, cur.iterprev(keys=True, values=True))
    return keys if start is None else takewhile(start.__le__, keys)


def walk_split(txn: Txn, db: Handle, start: bytes | None, end: bytes | None, *,
               resume: bytes | None = None, reverse: bool = False) -> Iterator[tuple[bytes, bytes]]:
    """``walk`` over a split index: (key + value, b"") exactly as ``walk`` yields the unsplit stored keys
    (``split_keys`` paired with an empty value)."""
    return zip(split_keys(txn, db, start, end, resume=resume, reverse=reverse), repeat(b""))
