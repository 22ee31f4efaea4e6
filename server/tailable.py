"""Tailable cursors on capped collections, and the wake-up of ``awaitData`` getMores.

- :class:`TailingScan` reads a capped collection in insertion order, a chunk per short LMDB read
  transaction, remembering the record id of the last document it examined. When it has read everything
  it raises StopIteration like any iterator — and the next ``next()`` looks again from that position, so
  the cursor registry keeps a tailable cursor open instead of treating the first StopIteration as the
  end. If the remembered record was removed meanwhile (the capped trim overtook a slow reader, or a
  delete), the position is lost: 136 CappedPositionLost, as mongod answers — checked when the scan reads
  on and before each getMore's batch (``restore``, which the cursor registry calls), so records read
  ahead before the trim are never returned after it.
- :class:`InsertNotifier` is how an ``awaitData`` getMore waits without holding the event loop, a thread
  or a transaction: its :class:`Waiter` listens on the namespace *before* it reads (so an insert between
  the read and the wait is not missed), reads, and if nothing came, waits with the remaining time.
  Writers call :meth:`InsertNotifier.notify` after their commit (crud insert/update/findAndModify, the
  profiler); ``Waiter.wake`` ends the wait for any other reason (killOp, shutdown, killCursors), after
  which the getMore checks why it woke.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
from collections.abc import Callable
from typing import Any

from bson.int64 import Int64

from tidemark.core.collection import position_lost
from tidemark.protocol.codec import decode
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.access_path import Plan
from tidemark.query.plan import no_table_scan

CHUNK = 256


class InsertNotifier:
    """The waiters of each namespace, woken when documents are inserted (event-loop thread only)."""

    def __init__(self) -> None:
        self._waiters: dict[str, set[asyncio.Event]] = {}

    def notify(self, ns: str) -> None:
        for event in self._waiters.pop(ns, ()):
            event.set()

    def waiter(self, ns: str) -> Waiter:
        return Waiter(self, ns)


class Waiter:
    """One awaitData getMore waiting for inserts into ``ns``: ``listen()`` before each read, then
    ``wait(timeout)``; ``wake()`` ends a wait early from anywhere on the event loop; ``close()`` when
    done (no reference is left in the notifier)."""

    __slots__ = ("_notifier", "ns", "_event")

    def __init__(self, notifier: InsertNotifier, ns: str):
        self._notifier = notifier
        self.ns = ns
        self._event = asyncio.Event()

    def listen(self) -> None:
        """The next insert into the namespace (or a ``wake``) ends the next wait."""
        self._event.clear()
        self._notifier._waiters.setdefault(self.ns, set()).add(self._event)

    def wake(self) -> None:
        self._event.set()

    async def wait(self, timeout: float) -> bool:
        """True if woken within ``timeout`` seconds (by an insert or ``wake``)."""
        if timeout > 0 and not self._event.is_set():
            try:
                await asyncio.wait_for(self._event.wait(), timeout)
            except TimeoutError:
                return False
        return self._event.is_set()

    def close(self) -> None:
        waiters = self._notifier._waiters.get(self.ns)
        if waiters is not None:
            waiters.discard(self._event)
            if not waiters:
                del self._notifier._waiters[self.ns]


class TailingScan:
    """Matching documents of a capped collection in insertion order, resumable after running dry.

    ``match``/``project`` are the find's compiled filter and projection; ``skip``/``limit`` count matching
    documents from the start of the tail (mongod applies them to a tailable find too); ``record_ids``
    adds each document's ``$recordId`` (showRecordId) and ``shape`` then reshapes it (returnKey, or a
    projection applied around the record id), as the find command does for other reads. Runs in the
    thread pool (the registry draws batches there)."""

    def __init__(self, engine, ns: str, uuid, *, match: Callable[[dict], bool] | None = None,
                 project: Callable[[dict], Any] | None = None, skip: int = 0, limit: int = 0,
                 record_ids: bool = False, shape: Callable[[dict], Any] | None = None):
        self.engine = engine
        self.ns = ns
        self.uuid = uuid
        self.match = match
        self.project = project
        self.record_ids = record_ids
        self.shape = shape
        self.skip = skip
        self.remaining = limit or None
        self.last: bytes | None = None  # the record last examined
        # the records of the last two documents returned (the one before the last is the position of a
        # cursor that holds the last one back for its next batch)
        self._before: bytes | None = None
        self._returned: bytes | None = None
        self._buffer: collections.deque[tuple[bytes, bytes]] = collections.deque()

    def __iter__(self) -> TailingScan:
        return self

    def __next__(self) -> Any:
        while True:
            if self.remaining == 0:
                raise StopIteration
            if not self._buffer and not self._refill():
                raise StopIteration
            rid, raw = self._buffer.popleft()
            self.last = rid
            doc = decode(raw)
            if self.match is not None and not self.match(doc):
                continue
            if self.skip:
                self.skip -= 1
                continue
            if self.remaining is not None:
                self.remaining -= 1
            out = self.project(doc) if self.project is not None else doc
            if self.record_ids:  # a capped collection is never clustered: its record ids are longs
                out["$recordId"] = Int64(int.from_bytes(rid, "big"))
            self._before, self._returned = self._returned, rid
            return self.shape(out) if self.shape is not None else out

    def restore(self, held_back: bool) -> None:
        """Before each getMore's batch (mongod's restoreState): the scan's position must still be there,
        else 136 CappedPositionLost. The position is mongod's: the record of the last document the client
        was given when the cursor holds back the one it drew past its batch (``held_back``), else the
        record last examined. What was read ahead is dropped and read again past ``last`` (it was read at
        an older moment: a trim or a delete may have removed some of it since)."""
        position = self._before if held_back else self.last
        self._buffer.clear()
        if position is None:
            return
        with self.engine.read() as r:
            info = r.get_collection(self.ns)
            if info is None or info.uuid != self.uuid:
                raise MongoError(ErrorCode.QueryPlanKilled, f"collection dropped. UUID {self.uuid}")
            if r.get(info, position) is None:
                raise position_lost(position)

    @property
    def finished(self) -> bool:
        """A tail with a limit ends once the limit is reached (the cursor then closes)."""
        return self.remaining == 0

    def _refill(self) -> bool:
        with self.engine.read() as r:
            info = r.get_collection(self.ns)
            if info is None or info.uuid != self.uuid:
                raise MongoError(ErrorCode.QueryPlanKilled, f"collection dropped. UUID {self.uuid}")
            if self.last is not None and r.get(info, self.last) is None:
                raise position_lost(self.last)
            rows = itertools.islice(r.scan(info, start_after=self.last), CHUNK)
            self._buffer.extend((bytes(rid), bytes(raw)) for rid, raw in rows)
        return bool(self._buffer)


_TAIL_SCAN = Plan("COLLSCAN")  # a tailable find's plan: a scan of the capped collection


def open_tail(engine, usage, spec, db: str, *, record_ids: bool = False,
              shape: Callable[[dict], Any] | None = None, table_scan: bool = True) -> TailingScan | None:
    """The tail a tailable find reads (thread pool), or None when there is nothing to tail: no such
    collection, or an empty one (mongod keeps no tailable cursor on an empty collection, SERVER-13955).
    2 BadValue on a collection that is not capped, as mongod. ``usage``: the server's IndexUsage, which
    counts the find as a tailable collection scan (empty or not: mongod's plan is one). ``record_ids`` /
    ``shape``: as :class:`TailingScan`. ``table_scan`` False (``notablescan``, a filter given): 291, as
    mongod's planner refuses a tailable cursor, which always scans the collection."""
    ns = f"{db}.{spec.name}"
    with engine.read() as r:
        info = r.get_collection(ns)
        if info is None:
            return None
        if not (info.options or {}).get("capped"):
            raise MongoError(ErrorCode.BadValue, "error processing query: tailable cursor requested on non capped collection")
        if not table_scan:
            raise no_table_scan("Running with 'notablescan', so tailable cursors (which always do a table scan) "
                                "are not allowed")
        usage.record_plan(info, _TAIL_SCAN, tailable=True)
        if r.count(info) == 0:
            return None
    return TailingScan(engine, ns, info.uuid, match=spec.match, project=spec.project, skip=spec.skip,
                       limit=spec.limit, record_ids=record_ids, shape=shape)
