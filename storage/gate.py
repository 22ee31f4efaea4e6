"""The read gate: counts open read transactions so the writer thread can act when none is open.

LMDB allows resizing the map (and closing a dropped sub-database's handle) only while no
transaction of this process is open; every read transaction passes through this gate.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager


class ReadGate:
    """Counts open read transactions so the writer can act when there are none.
    Re-entrant per thread (a thread inside a read may open another read)."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())  # a plain lock: cheaper than RLock
        self._active = 0
        self._exclusive = False
        self._local = threading.local()

    def enter(self) -> None:
        depth = getattr(self._local, "depth", 0)
        with self._cond:
            while self._exclusive and depth == 0:
                self._cond.wait()
            self._active += 1
        self._local.depth = depth + 1

    def held(self) -> bool:
        """This thread is inside a read transaction (the thread pool's scheduler never parks it then)."""
        return getattr(self._local, "depth", 0) > 0

    def leave(self) -> None:
        self._local.depth -= 1
        with self._cond:
            self._active -= 1
            if self._active == 0 and self._exclusive:
                self._cond.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Wait until no read is open and keep new ones out for the duration."""
        with self._cond:
            self._exclusive = True
            while self._active:
                self._cond.wait()
        try:
            yield
        finally:
            with self._cond:
                self._exclusive = False
                self._cond.notify_all()

    def if_idle(self, fn: Callable[[], None]) -> bool:
        """Run fn (quickly!) if no read is open right now; False otherwise."""
        with self._cond:
            if self._active:
                return False
            fn()
            return True
