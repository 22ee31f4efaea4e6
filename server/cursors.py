"""The cursor registry: open cursors of find/aggregate/listCollections/listIndexes, drawn by getMore.

Invariants:
- A cursor wraps a plain Python iterator (usually a generator) that holds no LMDB transaction while
  suspended; batches are pulled in the server's thread pool (``ctx.run_blocking``), one batch at a
  time per cursor (``in_use`` guards against concurrent getMores).
- A read command's first batch may be drawn in the very pool job that opens the read (``cursor_reply``
  with ``open_docs``: one hand-off to the pool per command): the cursor is registered, in use, before
  that job; an error opening the read takes it back uncounted, an error drawing the batch kills it.
  A restartable read (``restartable=True``) runs that job inline on the event loop while it is short
  (``CommandContext.run_read``); one moved to the pool part-way runs it again from its start there,
  after forgetting what the stopped run left on the cursor (``_open_and_fill``). getMore batches
  always run in the pool (a generator cannot be run again from its start).
- Ids are random positive int64 values, never reused while the cursor lives; 0 means "exhausted".
- Each batch holds at most ``batch_size`` documents (first batch default 101, later ones unlimited)
  and its array stays under ``MAX_BATCH_BYTES``, the documents' elements counted whole — type byte and
  index key too, ~7 bytes a document that 40,000 small documents add up to past the 64 KiB left for
  the envelope (at least one document is always returned); a document that
  would overflow the batch is kept back for the next one. A batch full by count draws nothing past
  its last document, as mongod stops at a full batch (and a first batch of 0 draws nothing at all: the
  read's errors come with the first getMore); the cursor is then reported exhausted only when the
  read knows its end without drawing (mongod's ``PlanExecutor::isEOF``: a find's limit spent, its
  IDHACK lookup done, a missing collection, a snapshot's list drained — ``_ends_here``), else it stays
  open and the next getMore answers an empty batch with id 0.
- A cursor idle longer than ``cursorTimeoutMillis`` is killed by :meth:`CursorRegistry.reap_idle`, unless
  it was opened in a session (an ``lsid`` naming one, as every driver sends) and
  ``enableTimeoutOfInactiveSessionCursors`` is false (mongod's default; CursorManager::
  cursorShouldTimeout_inlock): such a cursor lives as long as its session, and dies with it — at once on
  killSessions/killAllSessions, and for a session ended (endSessions) or expired at the next session-cache
  refresh (:meth:`CursorRegistry.kill_sessions`, run by ``tidemark.session_refresh``, as mongod's
  LogicalSessionCacheImpl::_refresh kills the cursors of ended and removed sessions).
- A cursor a catalog change killed (drop, dropDatabase, rename, the drop of the index it scans) is
  closed at once, but the registry remembers why (``killed_reason``): its next getMore answers what
  mongod's plan executor answers on restoring the plan, 175 QueryPlanKilled with mongod's message, once;
  a reason nobody asks for is forgotten with the idle cursors (``reap_idle``). A ``snapshot`` cursor
  (listIndexes / listCollections: a batch materialised when it opened, mongod's queued data stage)
  reads no collection and outlives those changes.
- A ``tailable`` cursor (server/tailable.py) stays open when its iterator runs dry: the next getMore
  asks the same iterator again. It closes when the iterator says it is ``finished`` (a limit reached).
- Before each getMore's batch the position of a capped collection's scan is restored (mongod's
  restoreState): a tail's own ``restore``, and ``tidemark.core.collection.restoring`` for the scan
  inside any other read: a record the trim took is 136 CappedPositionLost.
- A closed cursor leaves nothing behind: :meth:`CursorRegistry.kill` drops the registry's reference and
  closes the iterator (its frames, held-back document and read-ahead go with it). After many closes,
  :meth:`CursorRegistry.release_memory` (run by :meth:`reap_idle`, i.e. every
  ``clientCursorMonitorFrequencySecs``) shrinks the id table and hands the freed heap back to the OS
  (glibc ``malloc_trim``; mongod's tcmalloc releases freed memory the same way), so the process does not
  stay at its peak.
- Counters in mongod's serverStatus ``metrics.cursor`` shape (:meth:`CursorRegistry.metrics`):
  ``timedOut`` (killed by the idle reaper), ``totalOpened``, ``moreThanOneBatch``, ``lifespan.*`` (at
  close), ``open.{noTimeout, pinned, total}``.
- A cursor belongs to the :class:`~tidemark.auth.names.Principal` that opened it (``owner``: name and
  user id, None without authentication); ownership is decided only by ``tidemark.auth.names``
  (``same_principal`` / ``visible_to``), never by a "user@db" text.
"""

from __future__ import annotations

import collections
import datetime
import itertools
import operator
import random
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from bson.binary import Binary
from bson.int64 import Int64
from bson.raw_bson import RawBSONDocument

from tidemark.auth.names import ANYONE, session_digest, visible_to
from tidemark.context import CommandContext
from tidemark.core.collection import restoring
from tidemark.gc_policy import release_free_heap
from tidemark.protocol.codec import EncodedBatch, EncodedDocument, EncodedRun, encode_in_order
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.interrupt import tick

DEFAULT_FIRST_BATCH = 101
# Leave room under the 16 MiB reply for the envelope ({cursor: {...}, ok}).
MAX_BATCH_BYTES = 16 * 1024 * 1024 - 64 * 1024
_NOTHING = object()
_NO_DOCS: Iterator[Any] = iter(())  # a cursor's iterator before its read is opened (exhausted: shareable)
TICK_STRETCH = 16  # documents a batch draws per interruption tick (tidemark.query.interrupt.tick)
# Cursor ids: a pseudo-random generator seeded from the OS once (as mongod seeds its cursor-id
# PseudoRandom from SecureRandom), not an os.urandom read per cursor (~25 us of every read command).
_IDS = random.Random()
RELEASE_AFTER_CLOSES = 1000  # cursors closed since the last release of freed memory to the OS
# mongod's metrics.cursor.lifespan buckets: (upper bound in seconds, name), the last one open-ended
LIFESPANS = ((1, "lessThan1Second"), (5, "lessThan5Seconds"), (15, "lessThan15Seconds"),
             (30, "lessThan30Seconds"), (60, "lessThan1Minute"), (600, "lessThan10Minutes"),
             (float("inf"), "greaterThanOrEqual10Minutes"))


@dataclass(eq=False)
class Cursor:
    id: int
    ns: str
    iterator: Iterator[Any]
    batch_size: int | None = None  # default for getMore when the request gives none
    lsid: Any = None
    no_timeout: bool = False
    last_used: float = field(default_factory=time.monotonic)
    in_use: bool = False
    killed: bool = False
    pending: Any = _NOTHING  # held back (peeked or too big for the last batch): a document's bytes, or a run
    created: float = field(default_factory=time.time)  # wall clock, for $currentOp idleCursors
    docs_returned: int = 0
    batches_returned: int = 0
    owner: Any = None  # tidemark.auth.names.Principal that opened it (only it may getMore it under --auth)
    tailable: bool = False
    await_data: bool = False
    facts: Any = None  # tidemark.profiler.ReadFacts of the read this cursor continues
    resume: ResumeTokens | None = None  # a find with $_requestResumeToken: each batch's postBatchResumeToken
    snapshot: bool = False  # its documents were materialised at open: catalog changes spare it
    # The command that opened it, as the operation registry holds it (mongod's originatingCommand)
    origin: Any = None

    @property
    def api(self) -> tuple[Any, Any, Any]:
        """The opening command's API parameters (``api_parameters``), which every getMore must repeat
        exactly: derived from ``origin`` when a getMore asks (most cursors end in their first batch)."""
        return (None, None, None) if self.origin is None else api_parameters(self.origin)

    def scanned_indexes(self) -> set[str]:
        """Names of the indexes the read's plan scans (an index union: each branch's), from ``facts``."""
        plan = getattr(self.facts, "plan", None)
        if plan is None:
            return set()
        return {p.index["name"] for p in (plan, *plan.branches)
                if isinstance(p.index, dict) and type(p.index.get("name")) is str}

    def describe(self, origin: bool = False) -> dict[str, Any]:
        """mongod's generic cursor fields, as ``$currentOp`` shows them (idle cursors, and the
        ``cursor`` of a running getMore); ``origin``: with ``originatingCommand`` (an idle cursor's)."""
        now_wall, now = time.time(), time.monotonic()
        described = {
            "cursorId": Int64(self.id),
            "createdDate": datetime.datetime.fromtimestamp(self.created, datetime.UTC).replace(tzinfo=None),
            "lastAccessDate": datetime.datetime.fromtimestamp(
                now_wall - (now - self.last_used), datetime.UTC).replace(tzinfo=None),
            "nDocsReturned": Int64(self.docs_returned),
            "nBatchesReturned": Int64(self.batches_returned),
            "noCursorTimeout": self.no_timeout,
            "tailable": self.tailable,
            "awaitData": self.await_data,
        }
        if origin and isinstance(self.origin, dict) and self.origin:  # (none for a cursor opened outside a command)
            described["originatingCommand"] = self.origin
        return described

    def close(self) -> None:
        close = getattr(self.iterator, "close", None)
        if close is not None:
            try:
                close()
            except Exception:  # a generator's cleanup must not break killCursors
                pass


def _session_id(cursor: Cursor) -> Any:
    """The id of the session the cursor was opened in, or None (no lsid, or a client's odd lsid whose
    id cannot be hashed: it names no session, as in the session cache)."""
    lsid = cursor.lsid
    if not isinstance(lsid, dict):
        return None
    session_id = lsid.get("id")
    try:
        hash(session_id)
    except TypeError:
        return None
    return session_id


def _raw_bytes(document: Any) -> Any:
    """A document's BSON (``bytes``, or a ``memoryview`` a ``RawBSONDocument`` was made over): its own
    bytes (a ``RawBSONDocument``; bytes are a document held back by the previous batch), else encoded
    in the field order the query produced (``bson.encode`` would hoist ``_id`` to the front)."""
    if type(document) is bytes or type(document) is memoryview:
        return document
    if isinstance(document, RawBSONDocument):
        return document.raw
    return encode_in_order(document)


def _fill_batch(cursor: Cursor, limit: int | None) -> tuple[EncodedBatch, bool]:
    """Pull one batch (runs in the thread pool). Returns (the batch, exhausted).

    One pass over the iterator (a ``for``, not a ``next`` call per document), the interruption
    ticks counted a stretch of documents at a time (``tick(TICK_STRETCH)``), documents the server
    encoded itself taken as they are, others encoded straight to bytes (no ``RawBSONDocument`` made
    per document; a document held back for the next batch is held as its bytes): the cursor's
    per-document cost is the size test and the append of its bytes. An ``EncodedRun`` (many documents as
    one item: a columnar ``$group``'s output) is taken a stretch at a time (``_take_run``) by the
    same rules; what the batch cannot hold stays pending as the rest of the run.

    A batch full by count (``limit`` documents; 0: none drawn at all) stops there, drawing nothing past
    it, and is exhausted only when the read knows its end without drawing (``_ends_here``)."""
    batch: list[Any] = []  # each document's BSON (bytes; a memoryview a RawBSONDocument was made over)
    end = limit if limit is not None else -1  # the count that fills the batch (-1: no count limit)
    if end == 0:
        return EncodedBatch(batch), _ends_here(cursor, 0)
    append = batch.append
    size = 0
    key_bytes, wider_at = 3, 10  # the next document's element besides its bytes: type, index key, NUL
    iterator = cursor.iterator
    if cursor.pending is not _NOTHING:
        iterator = itertools.chain((cursor.pending,), iterator)
        cursor.pending = _NOTHING
    # stop: the next document count at which the loop has something to do — the index key grows a digit
    # (wider_at), or the batch is full (end; -1: no count limit). (An expression, not a call: made
    # once per batch and once per run.)
    stop = wider_at if end < 0 or wider_at < end else end
    n = 0
    for doc in iterator:
        if type(doc) is EncodedRun:
            if not doc.docs:
                continue
            rest, size = _take_run(batch, doc, size, end)
            n = len(batch)
            if rest is not None:
                cursor.pending = rest
                return EncodedBatch(batch), False
            if n == end:
                return EncodedBatch(batch), _ends_here(cursor, n)
            digits = len(str(n))
            key_bytes, wider_at = digits + 2, 10 ** digits
            stop = wider_at if end < 0 or wider_at < end else end
            continue
        if not n % TICK_STRETCH:
            tick(TICK_STRETCH)
        raw = doc.raw if type(doc) is EncodedDocument else _raw_bytes(doc)
        doc_size = len(raw)
        if n and size + doc_size > MAX_BATCH_BYTES:
            cursor.pending = raw  # (drawn for this batch, as mongod's stashed result: its counts stay here)
            return EncodedBatch(batch), False
        # the batch array's bytes, as mongod's builder counts them: each document's element is its
        # type byte, its index as a key and the key's NUL besides the document
        size += doc_size + key_bytes
        append(raw)
        n += 1
        if n == stop:
            if n == end:
                return EncodedBatch(batch), _ends_here(cursor, n)
            if n == wider_at:
                key_bytes, wider_at = key_bytes + 1, wider_at * 10
            stop = wider_at if end < 0 or wider_at < end else end
    return EncodedBatch(batch), True


def _ends_here(cursor: Cursor, n: int) -> bool:
    """Whether a read whose batch filled at ``n`` documents knows it has no more without drawing one,
    as mongod's plan executor answers ``isEOF()`` after a full batch: a find's plan past its
    ``ReadFacts.ends_after`` (the LIMIT stage spent, the IDHACK lookup done, the EOF plan of a missing
    collection), a snapshot's list drained (QueuedDataStage). Scans and pipelines learn their end only
    by drawing past it (COLLSCAN, IXSCAN, a blocking sort's output, an aggregate's pipeline): their
    cursor stays open and the next getMore answers an empty batch with id 0."""
    facts = cursor.facts
    ends_after = facts.ends_after if facts is not None else None
    if ends_after is not None and cursor.docs_returned + n >= ends_after:
        return True
    return cursor.snapshot and cursor.pending is _NOTHING and operator.length_hint(cursor.iterator, -1) == 0


def _restore_and_fill(cursor: Cursor, limit: int | None) -> tuple[EncodedBatch, bool]:
    """``_fill_batch`` of a getMore: an iterator that keeps a position in a collection (a capped tail:
    ``tidemark.tailable.TailingScan``) first checks it is still valid (``restore(held_back)``, mongod's
    restoreState: 136 CappedPositionLost once its record was trimmed); a scan of a capped collection
    inside any other cursor's iterator does the same when it is next pulled (``restoring``)."""
    held_back = cursor.pending is not _NOTHING  # (a document held back was drawn, not yet given)
    restore = getattr(cursor.iterator, "restore", None)
    if restore is not None:
        restore(held_back)
    restoring(held_back)
    return _fill_batch(cursor, limit)


def _take_run(batch: list[bytes], run: EncodedRun, size: int, end: int) -> tuple[EncodedRun | None, int]:
    """Put the documents of ``run`` that fit into ``batch`` (its array ``size`` bytes so far; ``end``:
    the count limit, -1 none) by ``_fill_batch``'s rules: (the rest of the run, or None when all were
    taken; the new size). Each document's element counts its head (type, index key, NUL); a document
    after the first that would take the batch past ``MAX_BATCH_BYTES`` stays for the next batch.
    Counted with NumPy over the run's document sizes: no Python step per document."""
    docs = run.docs
    n = len(batch)
    k = len(docs) if end < 0 else min(len(docs), end - n)
    tick(k)
    # the k documents all fit when the last one does (the fit test below only grows with j): the usual
    # stretch — a batch full by count, or the run's end — is summed, not counted element by element (a
    # few NumPy array operations cost more than a short run's whole batch)
    sizes = run.sizes
    taken = docs if k == len(docs) else docs[:k]
    # the heads' bytes (a difference of the table's running totals for the usual batch: no call)
    whole = size + (_HEADS_UPTO[n + k] - _HEADS_UPTO[n] if n + k < len(_HEADS_UPTO) else _heads_bytes(n, n + k))
    if type(sizes) is int:  # (every document ``sizes`` long: ``groupbson.one_head``)
        whole += sizes * k
    elif sizes is None:
        whole += sum(map(len, taken))
    else:  # (the whole run's sizes as they are: no view made of them for the usual whole run)
        whole += int(np.add.reduce(sizes if taken is docs else sizes[:k]))
    # (less the last document's head: its type, NUL and the digits of its index n + k - 1)
    if k and whole - 2 - len(str(n + k - 1)) <= MAX_BATCH_BYTES:
        batch += taken
        if taken is docs:
            return None, whole
        return EncodedRun(docs[k:], sizes if sizes is None or type(sizes) is int else sizes[k:]), whole
    if sizes is None:
        sizes = np.fromiter(map(len, docs), np.int64, len(docs))
    elif type(sizes) is int:
        sizes = np.full(len(docs), sizes, np.int64)
    # each element's head: type, index key, NUL
    heads = _HEADS[n:n + k] if n + k <= len(_HEADS) else 3 + np.searchsorted(_TENS, np.arange(n, n + k), side="right")
    # ends[j]: the array's size once document j is in. Document j fits when the size before it plus its
    # own bytes (its head not counted, as in _fill_batch) stays within the limit: ends[j] - heads[j],
    # which only grows with j (by the next document and the previous head)
    ends = sizes[:k] + heads
    ends.cumsum(out=ends)
    ends += size
    k = max(int((ends - heads).searchsorted(MAX_BATCH_BYTES, side="right")), 1 if n == 0 else 0)
    if k == len(docs):
        batch += docs
        return None, int(ends[-1])
    batch += docs[:k]
    return EncodedRun(docs[k:], sizes[k:]), int(ends[k - 1]) if k else size


def _heads_bytes(start: int, stop: int) -> int:
    """The bytes of the heads (type, index key, NUL) of the array elements ``start``..``stop - 1``."""
    total = 3 * (stop - start)  # type, NUL, the first digit
    wider = 10
    while wider < stop:  # the indexes from ``wider`` on have one more digit
        total += stop - (wider if wider > start else start)
        wider *= 10
    return total


_TENS = 10 ** np.arange(1, 19, dtype=np.int64)  # an index past each is one digit wider
_HEADS = (3 + np.searchsorted(_TENS, np.arange(100_000), side="right")).astype(np.uint8)  # of the first indexes
# _HEADS_UPTO[i]: the bytes of the heads of the array elements 0..i - 1 (``_heads_bytes(0, i)``), for batches
# of up to 4,096 documents (a list of Python ints: read without a call or a NumPy scalar)
_HEADS_UPTO = [0, *itertools.accumulate(2 + len(str(i)) for i in range(4096))]


class ResumeTokens:
    """The record ids of a resumable read (``$_requestResumeToken``), in the order its documents are
    drawn: a batch of n documents ends at the n-th id not yet reported (a document the cursor drew
    but held back for the next batch keeps its id queued). Each document's ``$recordId`` is taken out
    of it unless the find also asked for ``showRecordId``."""

    def __init__(self, docs: Iterator[dict], keep: bool) -> None:
        self._pending: collections.deque = collections.deque()
        self._last: Any = None  # mongod's token before any document: {$recordId: null}
        self.docs = self._track(docs, keep)

    def _track(self, docs: Iterator[dict], keep: bool) -> Iterator[dict]:
        for doc in docs:
            self._pending.append(doc["$recordId"] if keep else doc.pop("$recordId"))
            yield doc

    def after_batch(self, n: int) -> dict[str, Any]:
        """``postBatchResumeToken`` of a batch of ``n`` documents."""
        for _ in range(n):
            self._last = self._pending.popleft()
        return {"$recordId": self._last}


def dropped_reason(uuid: Any) -> str:
    """mongod's message for a plan whose collection was dropped (RequiresCollectionStage's restore):
    what the next getMore of a cursor over it answers with 175 QueryPlanKilled."""
    return f"collection dropped. UUID {uuid}"


class CursorRegistry:
    """Live cursors of this process, by id."""

    def __init__(self) -> None:
        self._cursors: dict[int, Cursor] = {}
        self.timed_out = 0
        self.total_opened = 0
        self.more_than_one_batch = 0
        self.lifespans = dict.fromkeys((name for _, name in LIFESPANS), 0)
        self._closed_since_release = 0
        self._peak = 0  # most cursors open at once since the last release (the id table's size)
        # cursors a catalog change killed, by id: (the dead cursor, mongod's QueryPlanKilled message, when)
        self._killed: dict[int, tuple[Cursor, str, float]] = {}

    def __len__(self) -> int:
        return len(self._cursors)

    def register(
        self,
        ns: str,
        iterator: Iterator[Any],
        *,
        batch_size: int | None = None,
        lsid: Any = None,
        no_timeout: bool = False,
    ) -> Int64:
        """Open a cursor over ``iterator``; returns its id, a fresh positive int64."""
        return Int64(self.open(ns, iterator, batch_size=batch_size, lsid=lsid, no_timeout=no_timeout).id)

    def open(
        self,
        ns: str,
        iterator: Iterable[Any],
        *,
        batch_size: int | None = None,
        lsid: Any = None,
        no_timeout: bool = False,
        tailable: bool = False,
        await_data: bool = False,
        snapshot: bool = False,
    ) -> Cursor:
        """Like :meth:`register`, returning the :class:`Cursor` itself."""
        while True:
            cursor_id = _IDS.getrandbits(63)
            if cursor_id and cursor_id not in self._cursors and cursor_id not in self._killed:
                break
        cursor = Cursor(cursor_id, ns, iter(iterator), batch_size, lsid, no_timeout,
                        tailable=tailable, await_data=await_data, snapshot=snapshot)
        cursors = self._cursors
        cursors[cursor_id] = cursor
        self.total_opened += 1
        if len(cursors) > self._peak:
            self._peak = len(cursors)
        return cursor

    def get(self, cursor_id: int) -> Cursor | None:
        return self._cursors.get(cursor_id)

    def kill(self, cursor_id: int) -> bool:
        """Forget a cursor and close its iterator; a cursor busy in a batch is closed when it returns."""
        cursor = self._cursors.pop(cursor_id, None)
        if cursor is None:
            return False
        cursor.killed = True
        if not cursor.in_use:
            cursor.close()
        if cursor.batches_returned > 1:  # counted when the cursor goes, as mongod's ~ClientCursor
            self.more_than_one_batch += 1
        lifespan = time.time() - cursor.created
        for bound, name in LIFESPANS:  # (the last bound is infinite)
            if lifespan < bound:
                self.lifespans[name] += 1
                break
        self._closed_since_release += 1
        return True

    def kill_namespace(self, ns: str, reason: str | None = None) -> int:
        """Kill every cursor reading ``ns`` (the collection was dropped, renamed or replaced), snapshot
        cursors aside; ``reason``: mongod's QueryPlanKilled message, which their next getMore answers."""
        return self._kill_plans([c for c in self._cursors.values() if c.ns == ns and not c.snapshot], reason)

    def kill_index_scans(self, ns: str, indexes: set[str]) -> int:
        """Kill the cursors over ``ns`` whose plan scans one of ``indexes`` (they were dropped): their
        next getMore answers mongod's "index '<name>' dropped"."""
        killed = 0
        for c in [c for c in self._cursors.values() if c.ns == ns and not c.snapshot]:
            gone = sorted(c.scanned_indexes() & indexes)
            if gone:
                killed += self._kill_plans([c], f"index '{gone[0]}' dropped")
        return killed

    def _kill_plans(self, doomed: list[Cursor], reason: str | None) -> int:
        """Kill ``doomed``, remembering ``reason`` for each one idle (a cursor in the middle of a batch
        answers that batch with id 0: its client asks no more)."""
        now = time.monotonic()
        for cursor in doomed:
            idle = not cursor.in_use
            self.kill(cursor.id)
            if reason is not None and idle:
                # keep only what the getMore checks (namespace, session, owner): not the read itself
                cursor.iterator, cursor.pending, cursor.facts, cursor.resume = iter(()), _NOTHING, None, None
                self._killed[cursor.id] = (cursor, reason, now)
        return len(doomed)

    def killed_cursor(self, cursor_id: int) -> tuple[Cursor, str] | None:
        """A cursor a catalog change killed, and mongod's QueryPlanKilled message for it (None: none)."""
        entry = self._killed.get(cursor_id)
        return None if entry is None else (entry[0], entry[1])

    def forget_killed(self, cursor_id: int) -> bool:
        """Forget a killed cursor's reason (its one getMore, or a killCursors, has used it)."""
        return self._killed.pop(cursor_id, None) is not None

    def session_keys(self) -> set[tuple[Any, Any]]:
        """(session id, owner Principal or None) of every session a cursor was opened in (mongod's
        getOpenCursorSessions)."""
        return {(session_id, c.owner) for c in self._cursors.values() if (session_id := _session_id(c)) is not None}

    def kill_sessions(self, matches: Callable[[Any, Any], bool]) -> int:
        """Kill every cursor opened in a session that ``matches(session id, owner)`` accepts (mongod's
        killCursorsWithMatchingSessions: killSessions, killAllSessions, the session-cache refresh); a
        cursor busy in a batch is closed when the batch returns. Returns how many were killed."""
        doomed = [
            c.id
            for c in self._cursors.values()
            if (session_id := _session_id(c)) is not None and matches(session_id, c.owner)
        ]
        for cursor_id in doomed:
            self.kill(cursor_id)
        return len(doomed)

    def reap_idle(self, timeout_ms: int, now: float | None = None, session_cursors: bool = False) -> int:
        """Kill cursors idle for longer than ``timeout_ms`` — those opened in a session only when
        ``session_cursors`` (enableTimeoutOfInactiveSessionCursors); returns how many were killed."""
        now = time.monotonic() if now is None else now
        limit = timeout_ms / 1000
        idle = [
            c.id
            for c in self._cursors.values()
            if not c.in_use and not c.no_timeout and now - c.last_used > limit
            and (session_cursors or _session_id(c) is None)
        ]
        for cursor_id in idle:
            self.kill(cursor_id)
        self.timed_out += len(idle)
        # a killed cursor's reason lasts as long as the cursor would have lived idle (mongod reaps it so)
        stale = [i for i, (_c, _r, when) in self._killed.items() if now - when > limit]
        for cursor_id in stale:
            del self._killed[cursor_id]
        self.release_memory()
        return len(idle)

    def release_memory(self, force: bool = False) -> bool:
        """After many cursors closed (or ``force``): rebuild the id table if it shrank (a dict never gives
        its slots back) and return the freed heap to the OS. True if it ran."""
        if not force and self._closed_since_release < RELEASE_AFTER_CLOSES:
            return False
        self._closed_since_release = 0
        if len(self._cursors) * 4 < self._peak:
            self._cursors = dict(self._cursors)
        self._peak = len(self._cursors)
        release_free_heap()
        return True

    def metrics(self) -> dict[str, Any]:
        """serverStatus ``metrics.cursor``, as mongod 7.0 shapes it (keys sorted as it prints them)."""
        cursors = self._cursors.values()
        return {
            "lifespan": {name: Int64(self.lifespans[name]) for name in sorted(self.lifespans)},
            "moreThanOneBatch": Int64(self.more_than_one_batch),
            "open": {"noTimeout": Int64(sum(c.no_timeout for c in cursors)),
                     "pinned": Int64(sum(c.in_use for c in cursors)),
                     "total": Int64(len(self._cursors))},
            "timedOut": Int64(self.timed_out),
            "totalOpened": Int64(self.total_opened),
        }

    def report_idle(self, host: str, owner: Any = ANYONE, busy: frozenset[int] = frozenset()
                    ) -> list[dict[str, Any]]:
        """``$currentOp`` ``idleCursors`` entries: cursors no getMore is working on (``busy``: the
        ids of those running getMores hold, e.g. waiting for data) — only those ``owner`` (a
        Principal, or None: nobody's) opened, unless ANYONE."""
        entries = []
        for c in list(self._cursors.values()):
            if c.in_use or c.id in busy or not visible_to(c.owner, owner):
                continue
            entry: dict[str, Any] = {"type": "idleCursor", "host": host, "ns": c.ns}
            if isinstance(c.lsid, dict) and "id" in c.lsid:
                # mongod's LogicalSessionId: the client's id and the uid it derives from the user
                entry["lsid"] = {"id": c.lsid["id"], "uid": Binary(
                    session_digest(c.owner.name if c.owner is not None else None), 0)}
            elif isinstance(c.lsid, dict):
                entry["lsid"] = c.lsid
            summary = c.facts.plan_summary() if c.facts is not None else None
            if summary is not None:
                entry["planSummary"] = summary
            entry["cursor"] = c.describe(origin=True)
            entries.append(entry)
        return entries

    def close_all(self) -> None:
        for cursor_id in list(self._cursors):
            self.kill(cursor_id)
        self._killed.clear()

    async def next_batch(
        self, ctx: CommandContext, cursor: Cursor | int, batch_size: int | None
    ) -> tuple[EncodedBatch, int]:
        """Draw the next batch of a cursor (or cursor id); returns (documents, id to report: the
        cursor's, or 0 if exhausted). ``batch_size`` None means no count limit (size limit only)."""
        if not isinstance(cursor, Cursor):
            found = self._cursors.get(int(cursor))
            if found is None:
                raise MongoError(ErrorCode.CursorNotFound, f"cursor id {int(cursor)} not found")
            cursor = found
        if cursor.in_use:
            raise MongoError(ErrorCode.CursorInUse, f"cursor id {cursor.id} is already in use")
        cursor.in_use = True
        try:
            drawn = await ctx.run_blocking(_restore_and_fill, cursor, batch_size)
        except BaseException:
            self._failed(cursor)
            raise
        return self._drawn(cursor, drawn)

    async def first_batch(self, ctx: CommandContext, cursor: Cursor, open_docs: Callable[[], tuple[Any, Any]],
                          batch_size: int | None, restartable: bool = False) -> tuple[EncodedBatch, int]:
        """``next_batch`` of a cursor just opened (in use) over the documents ``open_docs()`` gives —
        ``(iterator, facts)`` — opened in the same job that draws the batch: one hand-off to the
        pool per read command, not two; none when ``restartable`` (``open_docs`` changes nothing but
        what it returns) and the read is short (``ctx.run_read``: inline on the loop, or run again
        from its start in the pool). An error opening them takes the cursor back as if it had never
        been opened (the command fails before it has a cursor); an error drawing the batch kills it,
        as ``next_batch`` does; so does the operation's interruption check (``_open_and_fill``'s first
        step: a killed or expired operation opens nothing and counts no cursor)."""
        run = ctx.run_read if restartable else ctx.run_blocking
        try:
            opened, drawn = await run(_open_and_fill, cursor, open_docs, batch_size, ctx.op)
        except BaseException:
            self._failed(cursor)
            raise
        if not opened:  # open_docs raised: drawn is its exception
            self._take_back(cursor)
            raise drawn
        return self._drawn(cursor, drawn)

    def _failed(self, cursor: Cursor) -> None:
        self.kill(cursor.id)
        cursor.in_use = False
        cursor.close()

    def _take_back(self, cursor: Cursor) -> None:
        """Forget a cursor whose documents could not be opened: not counted as opened (unless
        something killed it meanwhile, which counted its close)."""
        cursor.in_use = False
        if self._cursors.get(cursor.id) is cursor:
            del self._cursors[cursor.id]
            self.total_opened -= 1

    def _drawn(self, cursor: Cursor, drawn: tuple[EncodedBatch, bool]) -> tuple[EncodedBatch, int]:
        batch, exhausted = drawn
        cursor.in_use = False
        cursor.batches_returned += 1  # (kill reads it: moreThanOneBatch)
        if exhausted and cursor.tailable and not getattr(cursor.iterator, "finished", False):
            exhausted = False  # a tail ran dry for now: the next getMore looks again
        if exhausted or cursor.killed:
            if not self.kill(cursor.id):  # (kill closes a cursor not in use: not closed twice)
                cursor.close()  # killed meanwhile, while in use: closed now that its batch is done
            return batch, 0
        # (what only a live cursor's next batch and currentOp read: nothing to keep for a closed one)
        cursor.last_used = time.monotonic()
        cursor.docs_returned += len(batch.docs)  # (the list's len: no EncodedBatch.__len__ frame)
        return batch, cursor.id


def _open_and_fill(cursor: Cursor, open_docs: Callable[[], tuple[Any, Any]], limit: int | None, op: Any
                   ) -> tuple[bool, Any]:
    """The work of ``first_batch``: (False, the exception) when opening fails — or ``op``'s
    interruption check before it (killed, past maxTimeMS: nothing opened, no cursor counted) — else
    (True, the first batch as ``_fill_batch`` draws it; the draw's own checks stop a read that runs
    out of time from then on). Restartable: a run stopped part-way (an inline run moved to the
    pool) left an opened iterator and perhaps a held-back document, which the next run closes and
    forgets first; the next run checks again first (a read that moved past its maxTimeMS fails
    there, as when it went to the pool at once)."""
    if cursor.pending is not _NOTHING or cursor.facts is not None or cursor.iterator is not _NO_DOCS:
        cursor.pending = _NOTHING
        cursor.facts = None
        cursor.close()
        cursor.iterator = _NO_DOCS
    try:
        op.check()
        docs, cursor.facts = open_docs()
    except Exception as exc:  # noqa: BLE001 - raised again on the loop, after the cursor is taken back
        return False, exc
    cursor.iterator = iter(docs)
    return True, _fill_batch(cursor, limit)


async def cursor_reply(
    ctx: CommandContext,
    ns: str,
    iterator: Iterator[Any] | None,
    batch_size: int | None = None,
    single_batch: bool = False,
    first: bool = True,
    *,
    open_docs: Callable[[], tuple[Any, Any]] | None = None,
    no_timeout: bool = False,
    tailable: bool = False,
    await_data: bool = False,
    facts: Any = None,
    resume: ResumeTokens | None = None,
    restartable: bool = False,
    snapshot: bool = False,
) -> dict[str, Any]:
    """Open a cursor over ``iterator`` and answer its first batch, MongoDB-style:
    ``{"cursor": {"firstBatch": [...], "id": Int64, "ns": ns}}``.

    ``batch_size`` None means the default first batch (101 documents); ``single_batch`` closes the
    cursor after this batch. The batch is an ``EncodedBatch`` (its documents encoded once, in the pool).
    ``open_docs`` (with ``iterator`` None): ``() -> (iterator, facts)``, the read to open, run in the
    pool job that draws the first batch (an error from it fails the command with no cursor opened);
    ``restartable``: opening and drawing change nothing but the cursor (no write, no state outside
    it), so a short read runs inline on the event loop (``CursorRegistry.first_batch``).
    ``snapshot``: ``iterator`` is an in-memory list's (listIndexes, listCollections), which no catalog
    change kills.
    """
    registry: CursorRegistry = ctx.server.cursors
    cursor = registry.open(ns, _NO_DOCS if iterator is None else iterator, lsid=ctx.lsid, no_timeout=no_timeout,
                           tailable=tailable, await_data=await_data, snapshot=snapshot)
    cursor.facts = facts
    cursor.resume = resume
    cursor.owner = ctx.conn.principal
    cursor.origin = ctx.op.command
    limit = batch_size if batch_size is not None else (DEFAULT_FIRST_BATCH if first else None)
    if open_docs is None:
        batch, cursor_id = await registry.next_batch(ctx, cursor, limit)
    else:
        cursor.in_use = True
        batch, cursor_id = await registry.first_batch(ctx, cursor, open_docs, limit, restartable)
    if single_batch and cursor_id:
        registry.kill(cursor_id)
        cursor_id = 0
    key = "firstBatch" if first else "nextBatch"
    reply: dict[str, Any] = {key: batch}
    if resume is not None:  # (a resumable find's token; nothing to work out for the others)
        reply.update(resume_token_fields(cursor, len(batch.docs)))
    reply["id"] = Int64(cursor_id)
    reply["ns"] = ns
    return {"cursor": reply}


def api_parameters(cmd: dict[str, Any]) -> tuple[Any, Any, Any]:
    """A command's API parameters as mongod's APIParameters holds them: (apiVersion, apiStrict,
    apiDeprecationErrors), None where absent (``apiStrict: false`` differs from no apiStrict)."""
    return cmd.get("apiVersion"), cmd.get("apiStrict"), cmd.get("apiDeprecationErrors")


def api_parameters_text(api: tuple[Any, Any, Any]) -> str:
    """mongod's text of an APIParameters document (``{}``, ``{ apiVersion: "1", apiStrict: true }``), for
    the 347 APIMismatchError message."""
    shown = [f"{name}: {_shell_text(value)}" for name, value in
             zip(("apiVersion", "apiStrict", "apiDeprecationErrors"), api, strict=True) if value is not None]
    return "{ " + ", ".join(shown) + " }" if shown else "{}"


def _shell_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return f'"{value}"' if type(value) is str else str(value)


def resume_token_fields(cursor: Cursor, n: int) -> dict[str, Any]:
    """``{postBatchResumeToken}`` of a batch of ``n`` documents of a resumable cursor, else nothing."""
    return {"postBatchResumeToken": cursor.resume.after_batch(n)} if cursor.resume is not None else {}
