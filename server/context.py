"""What a command handler sees: the command-handler contract types.

- :class:`CommandSpec` — one command-table entry (families export ``COMMANDS = [CommandSpec(...)]``);
- :class:`CommandContext` — per-command context handed to ``handler(ctx, cmd)``;
- :class:`ServerState` — process-wide state (storage engine, cursors, parameters, counters);
- :class:`ConnectionInfo` — per-connection facts (id, peer, client metadata, compressors);
- :class:`ServerOptions` — the parsed command line (defined in the light ``tidemark.options``).

This module only defines data; it is importable from every layer of ``server`` above the server state
(server/README.md, "Layers"). It constructs the state parts below it (operations, profiler, top, index
usage, fail points, sessions, the insert notifier, the scheduler) and names what sits above it (the cursor
registry) under ``TYPE_CHECKING`` only, so nothing it imports imports it back.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import os
import queue
import socket
import threading
import time
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from bson.objectid import ObjectId

from tidemark import log
from tidemark.failpoints import FailPoints
from tidemark.fsync_lock import FsyncLock
from tidemark.index_usage import IndexUsage, held
from tidemark.operations import Operation, OperationRegistry
from tidemark.options import (
    ServerOptions as ServerOptions,  # the parsed command line, re-exported for every layer
)
from tidemark.profiler import DocumentMetrics, Profiler
from tidemark.protocol import compression
from tidemark.query import interrupt
from tidemark.scheduler import MoveToPool, RunScheduler
from tidemark.session_cache import SessionCache
from tidemark.tailable import InsertNotifier
from tidemark.top import Top

if TYPE_CHECKING:  # annotations only: the state's parts that context.py does not construct
    from tidemark.auth.manager import AuthManager
    from tidemark.cursors import CursorRegistry
    from tidemark.params import ServerParams
    from tidemark.storage.engine import Engine
    from tidemark.timeseries.catalog import BucketCatalog
    from tidemark.timeseries.commit import Committer
    from tidemark.tls import ServerCertificates

T = TypeVar("T")

# A request at least this large (its wire message) is parsed and decoded in the thread pool
# (``CommandContext.run_heavy``), so no single request holds the event loop for long.
LARGE_REQUEST_BYTES = 1024 * 1024
# A find/update/delete at least this large parses its filters in the thread pool too: compiling a
# regex costs the engine's parser ~8-30 us per pattern character (Python code, which yields the GIL
# to the loop in a worker thread: measured 22 ms loop gaps instead of 230 ms for a 32 KB pattern),
# so a long pattern would otherwise hold the event loop (issue 21). Below it, a pattern is < 1 KB.
FILTER_REQUEST_BYTES = 1024

# A read of a request at least this large never starts inline on the event loop (run_read): its
# literals (a long $in, a $documents array) could drive Python work between two interruption checks.
INLINE_REQUEST_BYTES = 16 * 1024

Handler = Callable[["CommandContext", dict[str, Any]], Awaitable[dict[str, Any]]]


@dataclass(frozen=True, slots=True)
class CommandSpec:
    """One command. ``name`` is the canonical spelling; ``aliases`` are extra names (e.g. ``ismaster``).

    ``counter`` names the serverStatus opcounter the command bumps in dispatch (``"command"``,
    ``"query"``, ``"getmore"``, or None when the handler counts itself, e.g. insert per document).
    """

    name: str
    handler: Handler
    help: str
    aliases: tuple[str, ...] = ()
    admin_only: bool = False
    counter: str | None = "command"
    test_only: bool = False  # exists only with --setParameter enableTestCommands=1 (like mongod)


class CloseConnection(Exception):  # noqa: N818 - a control-flow signal, not an error
    """Raised by dispatch to drop the client's connection without a reply (failCommand's
    ``closeConnection``); the connection closes quietly."""


@dataclass(slots=True)
class ConnectionInfo:
    id: int
    peer: str  # "host:port" of the client
    local: str = ""
    client: dict[str, Any] | None = None  # handshake metadata
    compressors: tuple[str, ...] = ()  # negotiated in the handshake
    handshake_done: bool = False
    auth: Any = None  # tidemark.auth.session.AuthSession once the connection authenticates or tries to
    tls: bool = False  # the connection runs over TLS
    # the client certificate the TLS handshake verified (ssl getpeercert()'s dict), None without one:
    # MONGODB-X509 authenticates its subject (tidemark.auth.x509)
    peer_certificate: dict[str, Any] | None = None
    closed: bool = False  # the client went away (set by the connection)
    on_close: Any = None  # a waiting awaitable hello's wake-up, called when the client goes away

    @property
    def principal(self) -> Any:
        """The tidemark.auth.names.Principal (user name and user id) authenticated on this connection, or
        None: what owns cursors, operations and sessions (compared with ``same_principal``)."""
        auth = self.auth
        return auth.principal if auth is not None else None

    @property
    def users(self) -> list[dict[str, str]]:
        """The authenticated user as mongod lists it (``[{user, db}]``, empty if nobody): profiler
        entries, ``$listLocalSessions``, ``currentOp``. Display only."""
        principal = self.principal
        return [principal.name.document()] if principal is not None else []


OPCOUNTER_NAMES = ("insert", "query", "update", "delete", "getmore", "command")


@dataclass
class ServerState:
    """Process-wide state shared by every connection. Created by ``tidemark.app``.

    Every attribute is a declared field. The parts a lifecycle hook creates at start-up (``auth``,
    ``bucket_catalog``, ``ts_committer``: ``tidemark.app.LIFECYCLE_HOOKS``) are fields without a
    default (``init=False``): the server accepts no connection before the hooks ran, so every handler
    finds them set and reads them plainly; a test builds a complete state with
    ``tests/harness/server_state.py``."""

    options: ServerOptions
    params: ServerParams
    engine: Engine
    cursors: CursorRegistry
    executor: WorkerPool  # only through run_in_pool (the run tokens of the scheduler below)
    # Users, roles and authentication (tidemark.auth.lifecycle sets it up).
    auth: AuthManager = field(init=False, repr=False)
    # The time-series bucket catalog and its group committer (tidemark.timeseries.hooks sets them up).
    bucket_catalog: BucketCatalog = field(init=False, repr=False)
    ts_committer: Committer = field(init=False, repr=False)
    started_at: float = field(default_factory=time.time)
    started_monotonic: float = field(default_factory=time.monotonic)
    opcounters: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OPCOUNTER_NAMES, 0))
    # serverStatus metrics.commands: command name -> [total, failed] (ok: 0 replies); "<UNKNOWN>" counts
    # the names of no command; update / findAndModify also count statements with an aggregation
    # pipeline or arrayFilters (mongod's UpdateMetrics)
    command_counts: dict[str, list[int]] = field(default_factory=dict)
    # serverStatus metrics.aggStageCounters: stage name -> uses (collections.count_stages)
    agg_stage_counters: dict[str, int] = field(default_factory=dict)
    update_shapes: dict[str, dict[str, int]] = field(default_factory=lambda: {
        name: {"arrayFilters": 0, "pipeline": 0} for name in ("update", "findAndModify")})
    connections_current: int = 0
    connections_total: int = 0
    connections_active: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    num_requests: int = 0
    # serverStatus network.compression: compressor name -> [compressor bytesIn, bytesOut, decompressor
    # bytesIn, bytesOut] (what each codec was given and what it produced, as mongod's counterHit*)
    compression_bytes: dict[str, list[int]] = field(
        default_factory=lambda: {name: [0, 0, 0, 0] for name in compression.AVAILABLE})
    # The sorted command table (name -> spec, aliases included), installed by tidemark.app so that
    # listCommands can read it without importing dispatch.
    commands: dict[str, CommandSpec] = field(default_factory=dict)
    # Extra serverStatus sections ("bucketCatalog", ...): name -> zero-argument callable -> dict, or an
    # awaitable of one (a section whose figures cost a walk does it off the loop).
    status_sections: dict[str, Callable[[], Any]] = field(default_factory=dict)
    # Running commands (currentOp/killOp) and open connections.
    operations: OperationRegistry = field(default_factory=OperationRegistry)
    # Per-namespace usage and latencies (server/top.py) and the profiler (server/profiler.py; its
    # slowms comes from the options when the state is created).
    top: Top = field(default_factory=Top)
    # Index accesses ($indexStats; server/index_usage.py), counted by the reads that scan an index.
    index_usage: IndexUsage = field(default_factory=IndexUsage)
    profiler: Profiler = field(init=False, repr=False)  # its slowms etc. from the options: __post_init__
    # serverStatus metrics.document / queryExecutor / operation.scanAndOrder (server/profiler.py)
    document_metrics: DocumentMetrics = field(default_factory=DocumentMetrics)
    # Logical sessions seen by this server (server/session_cache.py, $listLocalSessions).
    sessions: SessionCache = field(default_factory=SessionCache)
    # Fail points armed by configureFailPoint (server/failpoints.py; test commands only).
    failpoints: FailPoints = field(default_factory=FailPoints)
    # Wakes awaitData getMores when documents are inserted (server/tailable.py).
    tailing: InsertNotifier = field(default_factory=InsertNotifier)
    # The run tokens of the thread pool (server/scheduler.py); tidemark.app sizes it.
    scheduler: RunScheduler = field(default_factory=RunScheduler)
    # The fsync lock (server/fsync_lock.py): write commands wait while it is held.
    fsync_lock: FsyncLock = field(default_factory=FsyncLock)
    # The TLS context of new connections (server/tls.py), which rotateCertificates replaces; tidemark.app
    # sets it (None where no listener was started, e.g. a state built by a test).
    certificates: ServerCertificates | None = None
    # Starts a graceful shutdown (the ``shutdown`` command); tidemark.app installs it.
    request_shutdown: Callable[[], None] | None = None
    # hello's topologyVersion.processId: new at every start (a standalone's counter stays 0).
    topology_process_id: ObjectId = field(default_factory=ObjectId)
    # Where pool jobs leave their outcomes for the event loop (run_in_pool; made on first use).
    pool_inbox: PoolInbox | None = field(default=None, repr=False)


    def __post_init__(self) -> None:
        self.profiler = Profiler(self.options.slowms, self.options.slow_op_sample_rate, self.options.profile)
        self.operations.params = self.params

    @property
    def host(self) -> str:
        """``hostname:port`` as mongod reports itself (serverStatus, $collStats, $indexStats)."""
        return f"{socket.gethostname()}:{self.options.port}"


class WorkerPool:
    """The server's thread pool: up to ``max_threads`` threads taking jobs ``fn(*args)`` from one
    ``SimpleQueue``. Fire and forget: a job delivers its own outcome (``run_in_pool``), so a hand-off
    is one C-level queue put — no ``concurrent.futures.Future`` (its condition and lock), no
    semaphore — about 10 us less CPU on the event loop per hand-off than ``ThreadPoolExecutor``.

    Invariants (``ThreadPoolExecutor``'s): a job is taken by an idle thread when there is one, else a
    new thread starts while fewer than ``max_threads`` exist, else it waits in the queue (FIFO);
    :meth:`shutdown` lets the queued jobs run, then ends every thread."""

    def __init__(self, max_threads: int, thread_name_prefix: str = "tidemark-worker"):
        if max_threads < 1:
            raise ValueError("at least one thread")
        self.max_threads = max_threads
        self._prefix = thread_name_prefix
        self._jobs: queue.SimpleQueue[tuple[Callable[..., Any], tuple[Any, ...]] | None] = queue.SimpleQueue()
        # One entry per thread waiting for a job: list.append and list.pop are atomic, a cheaper count
        # than a semaphore (a wrongly-timed pop only starts a thread early or leaves a job queued
        # behind a thread that is about to take it).
        self._idle: list[None] = []
        self._threads: list[threading.Thread] = []
        self._spawn_lock = threading.Lock()
        self._shutdown = False

    def submit(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run ``fn(*args)`` on a pool thread. ``fn`` must not raise (an exception is logged and lost).
        It may return a zero-argument callable, which the thread calls once it counts as idle: the
        job's delivery (``run_in_pool``), so that a job submitted in answer to it finds this thread
        idle instead of starting another (the woken loop often runs before this thread is back)."""
        if self._shutdown:
            raise RuntimeError("cannot schedule new jobs after shutdown")
        self._jobs.put((fn, args))
        try:
            self._idle.pop()
        except IndexError:  # no thread idle: start one, up to the limit
            if len(self._threads) < self.max_threads:
                self._spawn()

    def _spawn(self) -> None:
        with self._spawn_lock:
            if self._shutdown or len(self._threads) >= self.max_threads:
                return
            thread = threading.Thread(target=self._work, name=f"{self._prefix}_{len(self._threads)}", daemon=True)
            self._threads.append(thread)
            thread.start()

    def _work(self) -> None:
        jobs, idle = self._jobs, self._idle
        while True:
            job = jobs.get()
            if job is None:  # shutdown
                return
            fn, args = job
            del job
            after = None
            try:
                after = fn(*args)
            except BaseException as exc:  # noqa: BLE001 - a pool thread outlives any job
                log.exception("EXECUTOR", 4784903, "A pool job failed", exc, ctx="worker")
            del fn, args  # drop the job's references before waiting (a large request's bytes)
            idle.append(None)
            if after is not None:
                try:
                    after()
                except BaseException as exc:  # noqa: BLE001
                    log.exception("EXECUTOR", 4784903, "A pool job failed", exc, ctx="worker")
                del after

    def shutdown(self, wait: bool = True) -> None:
        """Refuse new jobs; let the queued ones run, then end the threads (joined when ``wait``)."""
        with self._spawn_lock:
            self._shutdown = True
            threads = list(self._threads)
        for _ in threads:
            self._jobs.put(None)
        if wait:
            for thread in threads:
                thread.join()



async def stop_task(task: asyncio.Task[Any] | None) -> None:
    """Cancel a background task of the server (a monitor's loop) and wait until it has ended, whatever it
    raises: shutting down regardless."""
    if task is None:
        return
    task.cancel()
    try:
        await task
    except (asyncio.CancelledError, Exception):  # noqa: BLE001 - shutting down regardless
        pass


async def run_in_pool(server: ServerState, op: Operation | None, fn: Callable[..., T], *args: Any) -> T:
    """THE way work reaches the server's thread pool: ``fn(*args)`` on a pool thread, holding one of
    the scheduler's run tokens (``tidemark.scheduler``: a long operation yields its token to waiting
    ones at its interruption checks, so it never holds a short request of another client behind it),
    with ``op`` bound (``tidemark.query.interrupt``; None: work of no operation, e.g. decoding a large
    frame, which is not interruptible and never yields)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()
    # The pool thread hands the outcome straight to the loop (the server's PoolInbox), without
    # run_in_executor's chained concurrent future (its lock, callbacks and state copy).
    inbox = server.pool_inbox
    if inbox is None or inbox.loop is not loop:
        inbox = server.pool_inbox = PoolInbox(loop)
    server.executor.submit(_pool_job, inbox, done, server.scheduler, op, fn, args)
    return await done


class PoolInbox:
    """Outcomes of pool jobs on their way to one event loop: a deque the loop empties when a pipe it
    watches is written (a pipe, not an eventfd: the same two syscalls, and it exists on every POSIX
    system the server runs on, macOS included).

    Why not ``loop.call_soon_threadsafe``: it wakes the loop while the pool thread still holds the GIL.
    On a busy core the woken loop preempts the pool thread, finds the GIL taken and sleeps again until
    the pool thread lets it go: two more context switches per hand-off (3.7 voluntary switches of the
    loop thread per handed-off command, 1 for a ping). ``os.write`` releases the GIL around its
    write, so the woken loop finds it free. Any thread may ``post``; the loop thread delivers."""

    __slots__ = ("loop", "_items", "_read_fd", "_write_fd", "__weakref__")

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop
        self._items: collections.deque[tuple[asyncio.Future[Any], bool, Any]] = collections.deque()
        self._read_fd, self._write_fd = os.pipe()  # both non-inheritable (PEP 446)
        os.set_blocking(self._read_fd, False)
        os.set_blocking(self._write_fd, False)
        # the loop's reader keeps the inbox alive while registered; the fds go with the inbox
        weakref.finalize(self, _close_fds, self._read_fd, self._write_fd)
        loop.add_reader(self._read_fd, self._deliver_all)

    def post(self, done: asyncio.Future[Any], ok: bool, value: Any) -> None:
        """From any thread: deliver ``value`` (a result, or the exception when not ``ok``) to ``done``."""
        self._items.append((done, ok, value))
        try:
            os.write(self._write_fd, b"\0")  # (appended first: the loop that reads this finds the outcome)
        except BlockingIOError:  # the pipe is full of unread wake-ups: the loop is woken already
            pass

    def _deliver_all(self) -> None:
        try:
            os.read(self._read_fd, 4096)  # every wake-up written so far (the deque holds the outcomes)
        except BlockingIOError:  # already read with an earlier outcome's wake-up
            pass
        items = self._items
        while items:
            _deliver(*items.popleft())


def _close_fds(*fds: int) -> None:
    for fd in fds:
        os.close(fd)


def _pool_job(inbox: PoolInbox, done: asyncio.Future[Any], scheduler: RunScheduler,
              op: Operation | None, fn: Callable[..., Any], args: tuple[Any, ...]) -> Callable[[], None] | None:
    """A pool thread's side of ``run_in_pool``: ``fn(*args)`` under a run token (and bound to ``op``);
    returns the delivery of its result or exception to ``done`` on the loop, which the pool calls once
    the thread counts as idle (None when the loop has closed meanwhile)."""
    call: Callable[[], Any]
    if op is not None:
        call = functools.partial(interrupt.running, op, fn, *args)
    else:
        call = functools.partial(fn, *args) if args else fn
    try:
        result = scheduler.run(op, call)
    except BaseException as exc:  # the awaiting command raises it, as from run_in_executor
        outcome: tuple[bool, Any] = (False, exc)
    else:
        outcome = (True, result)
    del call
    if inbox.loop.is_closed():
        return None
    return functools.partial(inbox.post, done, *outcome)


def _deliver(done: asyncio.Future[Any], ok: bool, value: Any) -> None:
    if done.cancelled():  # the awaiting task was cancelled (e.g. shutdown): nobody reads the outcome
        return
    if ok:
        done.set_result(value)
    else:
        done.set_exception(value)


class CommandContext:
    """Per-command context: target database, server and connection state, and deadline helpers."""

    __slots__ = ("server", "conn", "db", "command_name", "lsid", "op", "request_bytes", "_facts", "paused",
                 "from_oplog", "sequence_ids")

    def __init__(
        self,
        server: ServerState,
        conn: ConnectionInfo,
        db: str,
        command_name: str,
        *,
        lsid: Any = None,
        max_time_ms: int | None = None,
        op: Operation | None = None,
        request_bytes: int = 0,
        from_oplog: bool = False,
        sequence_ids: tuple[str, ...] = (),
    ):
        self.server = server
        self.request_bytes = request_bytes
        # the fields that came as OP_MSG document sequences (folded into the command: only echo tells)
        self.sequence_ids = sequence_ids
        self.conn = conn
        self.db = db
        self.command_name = command_name
        self.lsid = lsid
        if op is None:  # a context built outside dispatch (tests, internal callers)
            deadline = time.monotonic() + max_time_ms / 1000 if max_time_ms else None
            op = Operation(0, conn, command_name, {}, db, deadline)
        self.op = op
        # How a read found its documents (tidemark.profiler.ReadFacts), left by find/aggregate/getMore
        # for the profiler and the slow-query log (and currentOp, through the operation: ``facts``).
        self._facts: Any = None
        # Seconds the command waited by design (an awaitable hello): not latency, as mongod pauses
        # the operation's timer (no slow-query line, no latency statistics).
        self.paused = 0.0
        # The writes of an applyOps entry: mongod's oplog application, which stores what the oplog
        # says without the storage rules of a client's write (core.collection.check_storable)
        self.from_oplog = from_oplog

    @property
    def deadline(self) -> float | None:
        """The operation's maxTimeMS deadline (monotonic seconds), or None."""
        return self.op.deadline

    @deadline.setter
    def deadline(self, value: float | None) -> None:
        self.op.deadline = value

    async def run_blocking(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run synchronous (storage/query) work in the server's thread pool, with this command's
        operation bound so that the work's long loops can be interrupted (``tidemark.query.interrupt``)
        and share the CPU fairly with other operations' (``run_in_pool``)."""
        self.check_deadline()
        if kwargs:
            return await run_in_pool(self.server, self.op, functools.partial(fn, *args, **kwargs))
        return await run_in_pool(self.server, self.op, fn, *args)  # (the pool thread binds the arguments)

    async def run_read(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` — a *restartable* read: it changes nothing outside what it returns before it
        returns (no write, no state a second run would find changed) — on the event loop's own thread
        first, under ``tidemarkInlineReadMicros`` of the loop thread's CPU time (and
        ``INLINE_WALL_FACTOR`` times that of wall-clock time at most): a short read is answered without
        a hand-off to the pool (no sleep and wake of the loop and of a pool thread). At its first
        interruption check past the budget (or before GIL-free C code: a regex match) the inline run
        stops (``scheduler.MoveToPool``: its ``finally`` blocks run, read transactions close) and
        ``fn(*args)`` runs again from its start in the pool, as :meth:`run_blocking` runs it. Its index
        accesses (``$indexStats``) count once, from the run that is kept. Exceptions are ``fn``'s own,
        wherever it ran. Reads of requests of ``INLINE_REQUEST_BYTES`` or more go to the pool at once,
        and so do reads of a kind whose last run took the budget or more, wherever it ran (the pool's
        runs of the others are measured: ``RunScheduler.measured``), or whose inline run met GIL-free C
        code (``RunScheduler.run_inline`` does not start them; the kind: the command, its namespace and
        the request's size — the same query with other values, e.g. another time window, is most often
        the same size — a guess that costs nothing to make, and a wrong one costs a hand-off, or one
        budget, now and then). ``fn`` makes the interruption checks (``first_batch``'s ``_open_and_fill`` begins
        with one, where it decides whether the cursor counts as opened): none here. Inline, ``fn``
        runs in this task's context, where dispatch bound the operation (``interrupt.bind``): it is
        bound again only for a context made outside dispatch."""
        op = self.op
        server = self.server
        budget = server.params["tidemarkInlineReadMicros"]
        if not budget or self.request_bytes >= INLINE_REQUEST_BYTES:
            return await run_in_pool(server, op, fn, *args)
        scheduler = server.scheduler
        kind = (self.command_name, op.ns, self.request_bytes)
        seconds = budget / 1_000_000
        with held(server.index_usage) as accesses:
            try:
                if interrupt.current() is op:
                    return scheduler.run_inline(fn, seconds, kind, args)
                return scheduler.run_inline(interrupt.running, seconds, kind, (op, fn, *args))
            except MoveToPool:  # (or did not start: a long kind)
                accesses.clear()  # the pool's run counts them
        return await run_in_pool(server, op, scheduler.measured, kind, seconds, fn, *args)

    @property
    def facts(self) -> Any:
        return self._facts

    @facts.setter
    def facts(self, value: Any) -> None:
        """Set once the read is planned: the running operation reports its planSummary from them."""
        self._facts = value
        self.op.facts = value

    async def run_heavy(self, fn: Callable[..., T], *args: Any, offload_bytes: int = LARGE_REQUEST_BYTES) -> T:
        """``fn(*args)`` — parsing or decoding the request's own content — inline for an ordinary
        request, in the thread pool (like :meth:`run_blocking`) for one of ``offload_bytes``
        (``LARGE_REQUEST_BYTES``; ``FILTER_REQUEST_BYTES`` for filters, which may hold regexes) or
        more, whose parse could otherwise hold the event loop for a long time."""
        if self.request_bytes >= offload_bytes:
            return await self.run_blocking(fn, *args)
        return fn(*args)

    def check_deadline(self) -> None:
        """THE interruption check (``Operation.check``): 11601 Interrupted once killed (killOp),
        11600 at shutdown, 50 MaxTimeMSExpired once ``maxTimeMS`` has passed."""
        self.op.check()

    def remaining_seconds(self) -> float | None:
        """Seconds left before ``maxTimeMS`` expires (None when unlimited)."""
        deadline = self.op.deadline
        return None if deadline is None else max(0.0, deadline - time.monotonic())

    @property
    def params(self) -> ServerParams:
        return self.server.params
