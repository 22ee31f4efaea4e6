"""Injected commit failures (tests only): make the next N group commits fail as a full disk or an I/O
error would, without root, tmpfs or a real failing device.

``Engine.faults.fail_next(n, "ENOSPC" | "EIO")`` arms the hook; the writer thread calls ``check()``
right before each group's LMDB commit, which raises ``OSError`` while failures remain. The group is then
aborted exactly like a commit the kernel refused: nothing of it is written and every write of the group
gets the translated error (``OutOfDiskSpace`` 100 for ENOSPC, ``CommitFailed`` 8 otherwise).
``fail_next(0)`` disarms it. Thread-safe: armed from any thread, consumed on the writer thread.
"""

from __future__ import annotations

import errno
import os
import threading

ERRNOS = {"ENOSPC": errno.ENOSPC, "EIO": errno.EIO}


class CommitFaults:
    __slots__ = ("_lock", "_remaining", "_errno", "injected")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._remaining = 0
        self._errno = errno.ENOSPC
        self.injected = 0  # failures injected so far (tests read it)

    def fail_next(self, n: int, kind: str = "ENOSPC") -> None:
        """Fail the next ``n`` group commits with ``kind`` (a key of ``ERRNOS``)."""
        if kind not in ERRNOS:
            raise ValueError(f"unknown failure kind {kind!r}: expected one of {', '.join(ERRNOS)}")
        if n < 0:
            raise ValueError("the number of commits to fail must be >= 0")
        with self._lock:
            self._remaining = n
            self._errno = ERRNOS[kind]

    @property
    def remaining(self) -> int:
        return self._remaining

    def check(self) -> None:
        """Raise the armed failure for this commit (writer thread, before the LMDB commit)."""
        if not self._remaining:
            return
        with self._lock:
            if not self._remaining:
                return
            self._remaining -= 1
            self.injected += 1
            code = self._errno
        raise OSError(code, f"{os.strerror(code)} (injected for testing)")
