"""Injected storage failures (tests only): make the next N operations at one place fail as a full disk or
an I/O error would, without root, tmpfs or a real failing device.

``Engine.faults.fail_next(n, "ENOSPC" | "EIO", at="commit")`` arms the hook for one place:

- ``commit``: right before a group's LMDB commit (``OSError``, as the kernel refuses a write or fsync);
- ``grow``: when the map is about to grow (LMDB's error, as ``mdb_env_set_mapsize`` reports it);
- ``journal``: a ``WriteTxn.journal_append`` (LMDB's error, as a put that must write spilled pages does);
- ``index``: a ``WriteTxn.create_index`` bulk load (the same).

Every write that hits it gets the translated error (``tidemark.storage.errors.storage_failure``: ``OutOfDiskSpace``
14031 for ENOSPC, ``CommitFailed`` 8 otherwise) and nothing of it is written. ``fail_next(0)`` disarms it.
Thread-safe: armed from any thread, consumed on the writer thread.
"""

from __future__ import annotations

import errno
import os
import threading

import lmdb

ERRNOS = {"ENOSPC": errno.ENOSPC, "EIO": errno.EIO}
PLACES = ("commit", "grow", "journal", "index")


class CommitFaults:
    __slots__ = ("_lock", "_remaining", "_errno", "_at", "injected")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._remaining = 0
        self._errno = errno.ENOSPC
        self._at = "commit"
        self.injected = 0  # failures injected so far (tests read it)

    def fail_next(self, n: int, kind: str = "ENOSPC", at: str = "commit") -> None:
        """Fail the next ``n`` operations at ``at`` (one of ``PLACES``) with ``kind`` (a key of ``ERRNOS``)."""
        if kind not in ERRNOS:
            raise ValueError(f"unknown failure kind {kind!r}: expected one of {', '.join(ERRNOS)}")
        if at not in PLACES:
            raise ValueError(f"unknown failure place {at!r}: expected one of {', '.join(PLACES)}")
        if n < 0:
            raise ValueError("the number of operations to fail must be >= 0")
        with self._lock:
            self._remaining = n
            self._errno = ERRNOS[kind]
            self._at = at

    @property
    def remaining(self) -> int:
        return self._remaining

    def check(self, at: str = "commit") -> None:
        """Raise the armed failure if it is armed for ``at`` (writer thread)."""
        if not self._remaining or self._at != at:
            return
        with self._lock:
            if not self._remaining or self._at != at:
                return
            self._remaining -= 1
            self.injected += 1
            code = self._errno
        message = f"{os.strerror(code)} (injected for testing)"
        if at == "commit":
            raise OSError(code, message)
        raise (lmdb.DiskError if code == errno.ENOSPC else lmdb.Error)(f"mdb_{at}: {message}")
