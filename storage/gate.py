"""The read gate: counts open read transactions so the writer thread can act when none is open.

LMDB allows resizing the map only while no transaction of this process is open: ``exclusive``
waits for every open read and holds new ones back meanwhile. Closing a dropped sub-database's
handle needs less — only the reads that could have reached it must have left — and must not wait
for a moment with no read open at all (a busy server may never have one): reads are counted by
*epoch*. ``advance`` starts a new epoch; ``if_drained(epoch, fn)`` runs fn once no read begun
before ``epoch`` is open, else calls ``on_idle`` as soon as the last of them leaves.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager


class _ThreadReads(threading.local):
    """A thread's place in the gate: its open reads' nesting depth and the epoch its outermost one began
    in (class defaults: a thread's first look needs no ``getattr`` with a default)."""

    depth = 0
    epoch = 0


class ReadGate:
    """Counts open read transactions (in total and by the epoch they began in) so the writer can
    act when there are none, or none older than an epoch. Re-entrant per thread (a thread inside a
    read may open another read; the nested one belongs to the outer one's epoch)."""

    def __init__(self, on_idle: Callable[[], None] | None = None) -> None:
        # a plain lock (cheaper than RLock), taken directly on the read path (``with self._lock``: no
        # Condition.__enter__/__exit__ Python frames per read); the condition waits and notifies on it
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._active = 0
        self._exclusive = False
        self._local = _ThreadReads()
        self._epoch = 0
        self._by_epoch: dict[int, int] = {}  # epoch -> its open outermost reads (no zero counts)
        self._wanted: int | None = None  # an if_drained refused for this epoch: on_idle when drained
        self._on_idle = on_idle  # called by the leaving reader's thread, no lock held

    def enter(self) -> None:
        depth = self._local.depth
        with self._lock:
            while self._exclusive and depth == 0:
                self._cond.wait()
            self._active += 1
            if depth == 0:
                epoch = self._epoch
                by_epoch = self._by_epoch
                if epoch in by_epoch:
                    by_epoch[epoch] += 1
                else:
                    by_epoch[epoch] = 1
        if depth == 0:
            self._local.epoch = epoch
        self._local.depth = depth + 1

    def held(self) -> bool:
        """This thread is inside a read transaction (the thread pool's scheduler never parks it then)."""
        return self._local.depth > 0

    def epoch(self) -> int | None:
        """The epoch this thread's open read began in; None outside a read."""
        return self._local.epoch if self._local.depth else None

    def leave(self) -> None:
        depth = self._local.depth - 1
        self._local.depth = depth
        with self._lock:
            self._active -= 1
            if self._active == 0 and self._exclusive:
                self._cond.notify_all()
            if depth:
                return
            epoch = self._local.epoch
            left = self._by_epoch[epoch] - 1
            if left:
                self._by_epoch[epoch] = left
                return
            del self._by_epoch[epoch]
            wanted = self._wanted
            if wanted is None or epoch >= wanted or not self._drained(wanted):
                return
            self._wanted = None
        if self._on_idle is not None:
            self._on_idle()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Wait until no read is open and keep new ones out for the duration."""
        with self._lock:
            self._exclusive = True
            while self._active:
                self._cond.wait()
        try:
            yield
        finally:
            with self._lock:
                self._exclusive = False
                self._cond.notify_all()

    def advance(self, mark: Callable[[int], None]) -> None:
        """Start a new epoch: ``mark(new epoch)`` runs (quickly!) before any read can begin in it."""
        with self._lock:
            mark(self._epoch + 1)
            self._epoch += 1

    def _drained(self, epoch: int) -> bool:
        return all(e >= epoch for e in self._by_epoch)

    def if_drained(self, epoch: int, fn: Callable[[], None]) -> bool:
        """Run fn (quickly!) if no read begun before ``epoch`` is open right now; False otherwise,
        and then ``on_idle`` is called once those reads have all left (reads begun since do not
        hold it back)."""
        with self._lock:
            if not self._drained(epoch):
                self._wanted = epoch if self._wanted is None else max(self._wanted, epoch)
                return False
            fn()
            return True
