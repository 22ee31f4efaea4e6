"""Server lifecycle: parameters, log, storage, listener, signals, graceful shutdown.

Start-up order: log sink -> parameters -> storage engine (exclusive dbpath lock) -> thread pool ->
lifecycle hooks -> listening sockets. Shutdown (SIGINT/SIGTERM) runs the reverse: stop accepting,
let every connection finish its in-flight command, run shutdown hooks, close cursors, join the
thread pool, close storage. Failures at start-up are :class:`StartupError` with mongod's exit codes.

Extension point: ``LIFECYCLE_HOOKS`` is an explicit tuple of modules exposing
``async def on_startup(state: ServerState)`` and ``async def on_shutdown(state: ServerState)``
(e.g. the time-series bucket catalog). Add one import and one tuple entry to register another.
"""

from __future__ import annotations

import asyncio
import datetime
import errno
import functools
import os
import signal
import socket
import sys
import threading
import time
from typing import Any

from bson.int64 import Int64

from tidemark import fsync_lock, gc_policy, log, session_refresh, tls, ttl
from tidemark.auth import lifecycle as auth_lifecycle
from tidemark.auth.session import UNIX_SOCKET_PEER
from tidemark.commands import fcv
from tidemark.commands.admin import log_process_details
from tidemark.commands.handshake import build_info_document
from tidemark.connection import Connection
from tidemark.context import ServerOptions, ServerState, WorkerPool
from tidemark.core import capped
from tidemark.core.collection import BUCKETS_PREFIX, system_js_globals
from tidemark.core.key_format import upgrade_stored_keys
from tidemark.cursors import CursorRegistry
from tidemark.dispatch import Dispatcher
from tidemark.params import ServerParams
from tidemark.query import interrupt, javascript, spill
from tidemark.scheduler import RunScheduler
from tidemark.session_cache import SessionCache
from tidemark.storage.errors import StorageError
from tidemark.timeseries import hooks as timeseries_hooks

LIFECYCLE_HOOKS: tuple[Any, ...] = (auth_lifecycle, fcv, timeseries_hooks, ttl, session_refresh)


def _drop_temporary_collections(engine: Any) -> None:
    """A standalone mongod drops every collection created with ``temp: true`` when it starts
    (clearTmpCollections): the temporaries of a $out or renameCollection a crash left behind. (A
    time-series buckets collection keeps its own: its view would be left without it.)"""
    with engine.read() as r:
        temporary = [info.ns for db in r.list_databases() for info in r.list_collections(db)
                     if (info.options or {}).get("temp") and not info.name.startswith(BUCKETS_PREFIX)]
    if not temporary:
        return

    def drop(w: Any) -> None:
        for ns in temporary:
            w.drop_collection(ns)

    engine.write_sync(drop)
    for ns in temporary:
        log.info("STORAGE", 22247, "Dropping temporary collection", ctx="initandlisten", namespace=ns)

STARTUP_LOG = "local.startup_log"
STARTUP_LOG_SIZE = 10 * 1024 * 1024


def _log_startup(engine: Any, parsed_options: dict) -> None:
    """One document per start in ``local.startup_log`` (created capped, 10 MB), as mongod's logStartup
    (mongod_main.cpp): ``_id`` "<host>-<start ms>", the host name, the start time (seconds) and its
    local ctime string, the parsed command line (getCmdLineOpts ``parsed``), the pid and the build
    info (the buildInfo command's document); tools read the last one."""
    now_ms = int(time.time() * 1000)
    host = socket.gethostname()
    local = time.localtime(now_ms / 1000)
    entry = {
        "_id": f"{host}-{now_ms}",
        "hostname": host,
        "startTime": datetime.datetime.fromtimestamp(now_ms // 1000, tz=datetime.UTC),
        "startTimeLocal": time.strftime("%a %b ", local) + f"{local.tm_mday:2d} "
                          + time.strftime("%H:%M:%S", local) + f".{now_ms % 1000:03d}",
        "cmdLine": parsed_options,
        "pid": Int64(os.getpid()),
        "buildinfo": build_info_document(),
    }

    def write(w: Any) -> None:
        info = w.get_collection(STARTUP_LOG)
        if info is None:
            info = w.create_collection(STARTUP_LOG, {"capped": True, "size": STARTUP_LOG_SIZE})
        capped.insert_documents(w, info, [entry])

    engine.write_sync(write)


# The thread pool: a thread per running operation (threads start as needed; one waiting for a run
# token holds no GIL), so that long operations never occupy every thread. Requests of one connection
# run one at a time, so this bounds the operations running at once, not the connections. What limits
# how many run Python at once is the scheduler's run tokens (server/scheduler.py; the parameters
# tidemarkRunTokens and tidemarkRunQuantumMillis).
MAX_WORKER_THREADS = 256
# Deep but legal input (1,000-stage pipelines, expressions and filters nested up to the 200-level BSON
# limit, 20 nested sub-pipelines) recurses deeper than Python's default 1,000 frames. The limit is
# raised, and threads started by the server (the thread pool runs queries) get a stack that holds
# it; the main thread's 8 MiB stack holds it too (measured: ~10,000 C-level frames).
RECURSION_LIMIT = 6000
THREAD_STACK_BYTES = 64 * 1024 * 1024
SHUTDOWN_GRACE_SECONDS = 10.0
# Like mongod's listenBacklog (SOMAXCONN): a burst of new connections must not overflow the accept
# queue (an overflow costs the client a 1 s SYN retransmit). The kernel caps it at net.core.somaxconn.
LISTEN_BACKLOG = 4096

# mongod's exit codes for the same failures.
EXIT_BAD_OPTIONS = 2
EXIT_NET_ERROR = 48
EXIT_DBPATH = 100
EXIT_FAILURE = 1


class StartupError(Exception):
    def __init__(self, message: str, exit_code: int):
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


def build_params(options: ServerOptions) -> ServerParams:
    """Parameters with every ``--setParameter`` applied; StartupError on a bad one."""
    params = ServerParams()
    for assignment in options.set_parameters:
        try:
            params.set_at_startup(assignment)
        except ValueError as exc:
            raise StartupError(str(exc), EXIT_BAD_OPTIONS) from None
    if options.quiet:
        params.set_startup_value("quiet", True)
    log.set_verbosity(params["logLevel"])  # the process log's verbosity starts as set
    log.apply_component_verbosity(params["logComponentVerbosity"])
    return params


def open_storage(options: ServerOptions) -> Any:
    dbpath = options.dbpath
    if os.path.exists(dbpath) and not os.path.isdir(dbpath):
        raise StartupError(f"dbpath ({dbpath}) is not a directory", EXIT_DBPATH)
    try:
        if not os.path.isdir(dbpath):
            os.makedirs(dbpath, mode=0o700, exist_ok=True)  # like mongod's: private to its user
            os.chmod(dbpath, 0o700)
    except OSError as exc:
        raise StartupError(f"Cannot create dbpath ({dbpath}): {exc.strerror}", EXIT_DBPATH) from None
    if not os.access(dbpath, os.W_OK | os.X_OK):
        raise StartupError(f"dbpath ({dbpath}) is not writable", EXIT_DBPATH)
    from tidemark.storage.engine import open_engine

    try:
        return open_engine(dbpath, compressor=options.storage_compressor)
    except StorageError as exc:
        raise StartupError(f"{exc.code_name}: {exc.message}", EXIT_DBPATH) from None


def write_pid_file(path: str) -> None:
    """``--pidfilepath``: the process id and a newline, as mongod writes it (removed at a clean shutdown)."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    with open(path, "w", encoding="ascii") as handle:
        handle.write(f"{os.getpid()}\n")


def remove_pid_file(path: str) -> None:
    try:
        with open(path, encoding="ascii") as handle:
            if handle.read().strip() != str(os.getpid()):
                return  # another process's now
        os.remove(path)
    except OSError:
        pass


class App:
    """A running server: owns the listener, the connections and the shared state."""

    def __init__(self, options: ServerOptions):
        self.options = options
        self.state: ServerState | None = None
        self.connections: set[Connection] = set()
        self.servers: list[asyncio.AbstractServer] = []
        self.stopping = asyncio.Event()
        self.port: int | None = None
        self.metrics: Any = None  # tidemark.metrics.MetricsEndpoint while --metricsPort serves
        self.unix_socket_path: str | None = None  # while the Unix domain socket listens
        self._hooks_started: list[Any] = []  # LIFECYCLE_HOOKS whose on_startup completed

    async def start(self) -> None:
        options = self.options
        sys.setrecursionlimit(max(sys.getrecursionlimit(), RECURSION_LIMIT))
        threading.stack_size(THREAD_STACK_BYTES)  # threads created from now on (pool, writer)
        params = build_params(options)
        javascript.set_enabled(getattr(options, "javascript_enabled", True))  # --noscripting: process-wide
        log.set_quiet(params["quiet"])
        log.info(
            "CONTROL",
            4615611,
            "Tidemark starting",
            ctx="initandlisten",
            pid=os.getpid(),
            port=options.port,
            dbPath=options.dbpath,
            host=socket.gethostname(),
        )
        log_process_details(options, ctx="initandlisten")
        try:
            certificates = tls.ServerCertificates(options)
        except ValueError as exc:
            raise StartupError(str(exc), EXIT_BAD_OPTIONS) from None
        engine = open_storage(options)
        if options.pidfilepath:  # after the dbpath lock: a refused second server leaves the file alone
            try:
                write_pid_file(options.pidfilepath)
            except OSError as exc:
                engine.close()
                raise StartupError(f"Cannot write pid file to {options.pidfilepath}: {exc.strerror}",
                                   EXIT_FAILURE) from None
        faults = params["failStorageCommitsForTest"]
        if faults["times"]:  # test-only (storage/faults.py): a full disk from the first write of start-up on
            engine.faults.fail_next(faults["times"], faults["errno"], faults["at"])
        engine.interrupt_check = interrupt.check  # every scan chunk honours killOp and maxTimeMS
        # $where and mapReduce scopes hold their database's system.js (the query package reads no storage)
        javascript.set_stored_loader(functools.partial(system_js_globals, engine))
        spill.configure(os.path.join(options.dbpath, "_tmp"))  # $sort with allowDiskUse
        _drop_temporary_collections(engine)
        try:  # indexes of an older key format: rebuilt before anything reads them (core/key_format.py)
            upgrade_stored_keys(engine)
        except StorageError as exc:
            engine.close()
            raise StartupError(f"{exc.code_name}: {exc.message}", EXIT_DBPATH) from None
        state = ServerState(
            options=options,
            params=params,
            engine=engine,
            cursors=CursorRegistry(),
            sessions=SessionCache(params["maxSessions"]),
            certificates=certificates,
            executor=WorkerPool(MAX_WORKER_THREADS, thread_name_prefix="tidemark-worker"),
            # a thread inside a read transaction never parks (map growth waits for open reads)
            scheduler=RunScheduler(params["tidemarkRunTokens"], params["tidemarkRunQuantumMillis"] / 1000,
                                   pinned=engine.reading),
        )
        state.status_sections["tidemark"] = lambda: {"scheduler": state.scheduler.stats(),
                                                     "gc": gc_policy.POLICY.stats()}
        state.request_shutdown = self.stopping.set  # the shutdown command
        self.state = state
        dispatcher = Dispatcher(state)
        try:
            for hook in LIFECYCLE_HOOKS:
                await hook.on_startup(state)
                self._hooks_started.append(hook)
            _log_startup(engine, options.parsed)
        except StorageError as exc:  # e.g. journal recovery on a full disk: one clear line, exit 100
            state.engine.compact_on_close = False  # nothing more to write on the way out
            await self._close_state()
            raise StartupError(f"{exc.code_name}: {exc.message}", EXIT_DBPATH) from None
        loop = asyncio.get_running_loop()

        def factory(over_tls: bool = False) -> Connection:
            conn = Connection(state, dispatcher, self.connections.discard)
            conn.info.tls = over_tls
            self.connections.add(conn)
            return conn

        listening_port = options.port
        try:
            for host in options.bind_ip:
                server: Any  # an asyncio server or a tls.TlsListener: both have sockets and close()
                if certificates.context is None:
                    server = await loop.create_server(
                        factory, host=host, port=options.port, reuse_address=True, backlog=LISTEN_BACKLOG
                    )
                else:  # TLS, plaintext or both on one port: tidemark.tls sniffs each connection
                    server = await tls.TlsListener.listen(
                        factory, host, options.port, LISTEN_BACKLOG, certificates, options.tls_mode == "requireTLS",
                        sniff_timeout=params["tlsSniffTimeoutSecs"],
                    )
                self.servers.append(server)
                if options.port == 0 and self.port is None:
                    options.port = server.sockets[0].getsockname()[1]
            if options.unix_socket:
                self.unix_socket_path = await self._listen_unix(
                    loop, factory, certificates, sniff_timeout=params["tlsSniffTimeoutSecs"])
            if options.metrics_port:
                from tidemark import metrics  # prometheus-client is only loaded when asked for

                listening_port = options.metrics_port
                self.metrics = metrics.start(state, options.bind_ip, options.metrics_port)
        except OSError as exc:
            for server in self.servers:
                server.close()
            self._remove_unix_socket()
            await self._close_state()
            reason = "Address already in use" if exc.errno == errno.EADDRINUSE else exc.strerror or str(exc)
            where = exc.filename or f"{','.join(options.bind_ip)}:{listening_port}"
            raise StartupError(f"Error setting up listener on {where}: {reason}", EXIT_NET_ERROR) from None
        self.port = options.port
        if not options.auth:
            log.warning(
                "CONTROL",
                22120,
                "Access control is not enabled for the database. Read and write access to data and "
                "configuration is unrestricted",
                ctx="initandlisten",
                startup=True,
            )
        if self.unix_socket_path:
            log.info("NETWORK", 23015, "Listening on", ctx="listener", address=self.unix_socket_path)
        log.info("NETWORK", 23015, "Listening on", ctx="listener", address=",".join(options.bind_ip))
        if options.metrics_port:
            log.info("NETWORK", 4615612, "Serving Prometheus metrics", ctx="listener",
                     address=",".join(options.bind_ip), port=options.metrics_port, path="/metrics")
        log.info(
            "NETWORK", 23016, "Waiting for connections", ctx="listener", port=options.port,
            ssl="off" if certificates.context is None else "on",
        )

    async def _listen_unix(self, loop: asyncio.AbstractEventLoop, factory: Any,
                           certificates: tls.ServerCertificates, sniff_timeout: float) -> str:
        """Listen on mongod's Unix domain socket ``<prefix>/mongodb-<port>.sock`` (its clients count as
        local: the localhost exception); returns its path. As mongod: a file left there (by a killed
        server) is unlinked first, the socket gets ``filePermissions`` (0700 by default), and with TLS
        configured it is sniffed like the TCP port (TLS or plaintext by the first bytes; ``requireTLS``
        refuses plaintext there too)."""
        path = os.path.join(self.options.unix_socket_prefix, f"mongodb-{self.options.port}.sock")
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror, path) from None
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(path)
            sock.listen(LISTEN_BACKLOG)
        except OSError as exc:
            sock.close()
            raise OSError(exc.errno, exc.strerror, path) from None
        server: Any
        if certificates.context is None:
            server = await loop.create_unix_server(factory, sock=sock)
        else:
            server = tls.TlsListener.on_socket(
                sock, factory, certificates, self.options.tls_mode == "requireTLS",
                unix_peer=f"{UNIX_SOCKET_PEER}:{self.options.port}", sniff_timeout=sniff_timeout)
        self.servers.append(server)
        os.chmod(path, self.options.unix_socket_permissions)
        return path

    def _remove_unix_socket(self) -> None:
        path, self.unix_socket_path = self.unix_socket_path, None
        if path:
            log.info("NETWORK", 23017, "removing socket file", ctx="SignalHandler", path=path)
            try:
                os.unlink(path)
            except OSError:
                pass  # already gone: nothing to clean

    async def serve_until_stopped(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self._on_signal, sig)
        # SIGUSR1 (what logrotate's recipe for mongod sends) rotates the log as mongod does, and never stops
        # the server (its default action would).
        loop.add_signal_handler(signal.SIGUSR1, self._rotate_log)
        reaper = loop.create_task(self._reap_cursors())
        try:
            await self.stopping.wait()
        finally:
            reaper.cancel()
            for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1):
                loop.remove_signal_handler(sig)
        await self.shutdown()

    def _on_signal(self, sig: int) -> None:
        log.info(
            "CONTROL", 23377, "Received signal", ctx="SignalHandler", signal=sig, error=signal.strsignal(sig)
        )
        self.stopping.set()

    def _rotate_log(self) -> None:
        if log.rotate(self.options.log_rotate == "rename", ctx="SignalHandler") is None:
            log_process_details(self.options, ctx="SignalHandler", rotated=True)

    async def _reap_cursors(self) -> None:
        while True:
            state = self.state
            await asyncio.sleep(state.params["clientCursorMonitorFrequencySecs"] if state else 4)
            state = self.state
            if state is not None:
                # (the cursors of ended and expired sessions die at the session cache's refresh:
                # tidemark.session_refresh)
                killed = state.cursors.reap_idle(state.params["cursorTimeoutMillis"],
                                                 session_cursors=state.params["enableTimeoutOfInactiveSessionCursors"])
                if killed:
                    log.info("QUERY", 20528, "Killed idle cursors", ctx="clientcursormon", count=killed)

    async def shutdown(self) -> None:
        log.info("CONTROL", 4784900, "Stepping down the listener", ctx="SignalHandler")
        for server in self.servers:
            server.close()
        self._remove_unix_socket()
        if self.state is not None:  # running commands stop at their next check (11600, like mongod)
            fsync_lock.release_at_shutdown(self.state)
            self.state.operations.kill_all()
        if self.metrics is not None:
            await asyncio.get_running_loop().run_in_executor(None, self.metrics.stop)
            self.metrics = None
        connections = list(self.connections)
        if connections:
            done, pending = await asyncio.wait(
                [asyncio.ensure_future(conn.shutdown()) for conn in connections],
                timeout=SHUTDOWN_GRACE_SECONDS,
            )
            for task in pending:
                task.cancel()
        await self._close_state()
        if self.options.pidfilepath:
            remove_pid_file(self.options.pidfilepath)
        log.info("CONTROL", 23138, "Shutting down", ctx="SignalHandler", exitCode=0)

    async def _close_state(self) -> None:
        state = self.state
        if state is None:
            return
        self.state = None
        for hook in reversed(self._hooks_started):
            try:
                await hook.on_shutdown(state)
            except Exception as exc:
                log.exception("CONTROL", 4784901, "Shutdown hook failed", exc, ctx="SignalHandler")
        state.cursors.close_all()
        state.scheduler.close()  # nothing waits for a run token any more
        state.executor.shutdown(wait=True)
        if state.engine is not None:
            log.info("STORAGE", 4784930, "Shutting down the storage engine", ctx="SignalHandler")
            state.engine.close()


async def serve(options: ServerOptions) -> int:
    """Run the server until SIGINT/SIGTERM; returns the process exit code."""
    app = App(options)
    try:
        await app.start()
    except StartupError as exc:
        log.error("CONTROL", 20557, "Fatal error at start-up", ctx="initandlisten", error=exc.message)
        print(f"tidemark: {exc.message}", file=sys.stderr)
        return exc.exit_code
    # A process-wide choice, so only the server's own process makes it: an App embedded in another
    # program (tidemark.testing, the lifecycle tests) must not freeze its host's heap — frozen objects
    # are never collected, and at exit extension modules report them as leaked. The bucket
    # catalog bounds its own memory: the GC backstop watches the rest.
    state = app.state
    gc_policy.POLICY.install(accounted=lambda: state.bucket_catalog.memory if state and state.bucket_catalog else 0)
    sys.setswitchinterval(GIL_SWITCH_INTERVAL)
    collector = asyncio.get_running_loop().create_task(_gc_timer())
    try:
        await app.serve_until_stopped()
    finally:
        collector.cancel()
    return 0


# A thread that wants the GIL (the event loop, a request just given its run token) asks a CPU-bound
# holder to drop it after this long (CPython's default: 5 ms). Each request hands the GIL over a few
# times (loop -> pool thread -> loop), so with run-token holders busy this is most of a short
# request's latency (measured, 16 concurrent $reduce reads: innocent find p50 36 -> 17 ms).
GIL_SWITCH_INTERVAL = 0.001


async def _gc_timer() -> None:
    """The GC policy's timed work on the loop (tidemark.gc_policy): a young collection every
    ``YOUNG_INTERVAL`` seconds, the backstop's full collection when due, the free heap returned to the OS
    when the memory outside the catalog has grown."""
    policy = gc_policy.POLICY
    while True:
        for _ in range(round(gc_policy.FULL_CHECK_INTERVAL / gc_policy.YOUNG_INTERVAL)):
            await asyncio.sleep(gc_policy.YOUNG_INTERVAL)
            policy.collect_young()
        if policy.full_collection_due():
            policy.collect_frozen()
        policy.trim_if_grown()


def run(options: ServerOptions) -> int:
    import uvloop

    return uvloop.run(serve(options))
