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

from tidemark import log

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
    """The process's fsync lock count, the event writers wait on and the number of write commands
    running (event-loop thread only). Taking the lock waits for the running writes to finish, as
    mongod's global read lock waits for the writers that hold their intent locks."""

    def __init__(self) -> None:
        self.count = 0
        self.writers = 0  # write commands past the gate, still running
        self._unlocked: asyncio.Event | None = None
        self._drained: asyncio.Event | None = None

    async def enter(self, op: Any) -> None:
        """A write command starts: wait while locked, then count it as running. Either way it holds
        (or wants) the global lock in write mode, as currentOp reports it."""
        op.global_lock = "w"
        if self.count:
            await self.wait_unlocked(op)
        self.writers += 1

    def exit(self) -> None:
        self.writers -= 1
        if self.writers == 0 and self._drained is not None:
            self._drained.set()

    async def drain(self, op: Any) -> None:
        """Wait until no write command runs (new ones wait for the lock); interruptible like a write."""
        while self.writers:
            if self._drained is None or self._drained.is_set():
                self._drained = asyncio.Event()
            await self._wait(op, self._drained)

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
            assert self._unlocked is not None
            await self._wait(op, self._unlocked)

    @staticmethod
    async def _wait(op: Any, event: asyncio.Event) -> None:
        """Until ``event`` is set, the operation is killed or its maxTimeMS passes (then it raises)."""
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
        op.check()  # 11601 / 11600 / 50, else go on


def release_at_shutdown(server: Any) -> None:
    """Shutdown releases the fsync lock (and the held storage writer), as mongod (log id 20469)."""
    if server.fsync_lock.locked:
        log.warning("COMMAND", 20469, "Interrupting fsync because the server is shutting down",
                    ctx="SignalHandler")
        server.fsync_lock.release_all()
        if server.engine is not None:
            server.engine.release_writes()
