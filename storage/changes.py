"""ChangeLog: which records of which collection the recent commits changed, by snapshot id, so a reader
that derived something from every record of a collection at one snapshot can bring it to a later
snapshot by re-reading only the records changed in between (instead of every record again).

Invariants:
- Every record insert, update and delete of a ``WriteTxn`` is noted (collection ident, record id) on
  its group, and the group's notes are added here under the id its commit will get **before** it
  commits: a reader whose snapshot shows a commit always finds that commit's notes. A group that then
  fails to commit leaves notes for changes that never happened (and a rolled-back nested write leaves
  its own): the log may over-report, never under-report. Re-reading an unchanged record is harmless.
- Only record changes are noted. Dropping a collection buries its ident (readers compare idents); the
  other commits (journal, catalog, graveyard, dictionaries) change no record.
- Bounded: at most ``MAX_RIDS`` noted record ids in all; the oldest commits' notes go first and
  ``floor`` rises to their id. ``changed(ident, after, upto)`` answers only for ``after >= floor``
  (every commit after ``floor`` is known), else None: the reader derives from every record again.
- Thread-safe: the writer thread adds, readers on any thread ask (one lock, held briefly).
"""

from __future__ import annotations

import threading
from collections import deque


class ChangeLog:
    MAX_RIDS = 65_536  # ~5 MB of notes at most (a record id, its set slot, its share of a commit)

    def __init__(self, floor: int) -> None:
        self.floor = floor  # the commits up to this id are not known (before the engine opened, or evicted)
        self._commits: deque[tuple[int, dict[str, set[bytes]]]] = deque()  # (snapshot id, ident -> rids)
        self._size = 0
        self._lock = threading.Lock()

    def add(self, snapshot: int, changed: dict[str, set[bytes]]) -> None:
        """Note the records a commit about to become ``snapshot`` changes (writer thread, before the commit)."""
        if not changed:
            return
        with self._lock:
            self._commits.append((snapshot, changed))
            self._size += sum(len(rids) for rids in changed.values())
            while self._size > self.MAX_RIDS and self._commits:
                evicted, notes = self._commits.popleft()
                self._size -= sum(len(rids) for rids in notes.values())
                self.floor = max(self.floor, evicted)

    def changed(self, ident: str, after: int, upto: int) -> set[bytes] | None:
        """Record ids of collection ``ident`` changed by the commits that snapshot ``upto`` sees and
        snapshot ``after`` does not (a superset); None when those commits are not all known."""
        out: set[bytes] = set()
        with self._lock:
            if after < self.floor:
                return None
            for snapshot, notes in reversed(self._commits):
                if snapshot <= after:
                    break
                rids = notes.get(ident) if snapshot <= upto else None
                if rids:
                    out |= rids
        return out
