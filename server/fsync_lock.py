"""The fsync lock (``{fsync: 1, lock: true}`` / ``fsyncUnlock``): while held, write commands wait.

Invariants: ``count`` is the number of lock requests held (mongod's ``lockCount``; it nests); the
server is locked exactly while ``count > 0``. Only the event-loop thread changes it. A write command
that arrives while locked waits *asynchronously* (an ``asyncio.Event``, never a thread or a storage
transaction), is listed by currentOp with ``waitingForLock: true``, and still answers killOp (11601),
maxTimeMS (50) and shutdown (11600) at once. Reads go on. The lock lives in memory only: a restart
(or shutdown, which releases it as mongod does) leaves the server unlocked.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

# Commands that write (mongod takes an intent-exclusive lock for them, which the fsync lock's global
# read lock holds back).
WRITE_COMMANDS = frozenset({
    "insert", "update", "delete", "findAndModify", "create", "drop", "dropDatabase", "createIndexes",
    "dropIndexes", "collMod", "renameCollection", "convertToCapped", "cloneCollectionAsCapped", "compact",
    "reIndex", "applyOps", "createUser", "updateUser", "dropUser", "dropAllUsersFromDatabase",
    "grantRolesToUser", "revokeRolesFromUser", "createRole", "updateRole", "dropRole",
    "dropAllRolesFromDatabase", "grantRolesToRole", "revokeRolesFromRole", "grantPrivilegesToRole",
    "revokePrivilegesFromRole", "_mergeAuthzCollections",
})


class FsyncLock:
    """The process's fsync lock count and the event writers wait on (event-loop thread only)."""

    def __init__(self) -> None:
        self.count = 0
        self._unlocked: asyncio.Event | None = None

    @property
    def locked(self) -> bool:
        return self.count > 0

    def acquire(self) -> int:
        self.count += 1
        if self._unlocked is None:
            self._unlocked = asyncio.Event()
        self._unlocked.clear()
        return self.count

    def release(self) -> int:
        """One fewer lock request; writers go on when it reaches 0. The caller checks ``locked``."""
        self.count -= 1
        if self.count == 0 and self._unlocked is not None:
            self._unlocked.set()
        return self.count

    def release_all(self) -> None:
        while self.count:
            self.release()

    async def wait_unlocked(self, op: Any) -> None:
        """Wait (without blocking the loop) until unlocked; raises the operation's interruption
        (killOp, maxTimeMS, shutdown) as soon as it happens."""
        while self.count:
            event = self._unlocked
            assert event is not None
            woken = asyncio.Event()
            op.waker = woken.set
            op.waiting_for_lock = True
            try:
                waits = [asyncio.ensure_future(event.wait()), asyncio.ensure_future(woken.wait())]
                timeout = None if op.deadline is None else max(0.0, op.deadline - time.monotonic())
                try:
                    await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    for task in waits:
                        task.cancel()
            finally:
                op.waker = None
                op.waiting_for_lock = False
            op.check()  # 11601 / 11600 / 50, else the lock may be free
