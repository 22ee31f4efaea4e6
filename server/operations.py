"""The operation registry: every running command is an :class:`Operation` until it answers.

What ``currentOp`` / ``$currentOp`` report and ``killOp`` acts on (mongod's ServiceContext client
list). Invariants:
- ``dispatch`` starts an operation before a handler runs and finishes it when the reply is ready
  (success or error); an operation is in the registry exactly while its command runs.
- :meth:`Operation.check` is THE interruption check: killed -> its kill code (11601 Interrupted,
  or 11600 InterruptedAtShutdown), past ``deadline`` -> 50 MaxTimeMSExpired. ``CommandContext.
  check_deadline()``, ``TimeBudget`` and every long loop of the query layer
  (``tidemark.query.interrupt``) end here. Killing only sets a flag: the target stops at its next check,
  on whichever thread it runs (the event loop or the thread pool).
- On a pool thread the check is also the scheduler's preemption point (``tidemark.scheduler``): an
  operation that has run its quantum while others wait parks there until its turn comes back; a
  parked (or still queued) one is woken by ``kill`` and raises at once. The event loop never parks.
- Connections register themselves while open, so ``$currentOp`` with ``idleConnections`` can list the
  ones without a running operation.

This module keeps data only (no asyncio, nothing above ``tidemark.context``): every layer may use it.
"""

from __future__ import annotations

import asyncio
import datetime
import itertools
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from bson.int64 import Int64

from tidemark.auth.names import ANYONE, visible_to
from tidemark.auth.redaction import redact_command
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.interrupt import TICKS_PER_CHECK
from tidemark.scheduler import checkpoint, released, thread_state

T = TypeVar("T")

# Command documents larger than this are shown truncated, like mongod ({"$truncated": "..."}).
MAX_COMMAND_REPORT_BYTES = 1024

# The command each opcounter-style operation type names in currentOp's "op" field.
_OP_TYPES = {
    "find": "query",
    "getMore": "getmore",
    "insert": "insert",
    "update": "update",
    "delete": "remove",
}


class Operation:
    """One running command. ``ticks`` is the countdown used by ``tidemark.query.interrupt.tick``."""

    __slots__ = ("opid", "conn", "command_name", "command", "ns", "started",
                 "deadline", "killed", "ticks", "num_yields", "waker", "cursor", "parked", "waiting_for_lock",
                 "global_lock", "time_out_now", "facts", "params")

    def __init__(self, opid: int, conn: Any, command_name: str, command: dict, ns: str,
                 deadline: float | None, params: Any = None, started: float | None = None):
        self.opid = opid
        self.conn = conn  # tidemark.context.ConnectionInfo
        self.command_name = command_name
        self.command = command
        self.ns = ns
        # monotonic seconds: when dispatch took the command (its clock reading), else now
        self.started = time.monotonic() if started is None else started
        self.deadline = deadline  # monotonic seconds, or None (maxTimeMS; TimeBudget may narrow it)
        self.killed = 0  # the error code to raise at the next check, 0 while alive
        self.ticks = TICKS_PER_CHECK
        self.num_yields = 0
        # Set while the operation sleeps (an awaitData getMore): called by kill() so that it stops
        # waiting and reaches its check at once. Event-loop thread only, like kill() itself.
        self.waker: Any = None
        self.facts: Any = None  # the read's ReadFacts once planned, a write's list of them (its command context sets them)
        self.cursor: Any = None  # the cursors.Cursor a getMore works on (currentOp's "cursor")
        # The scheduler's job while the operation waits for a run token (tidemark.scheduler), else None.
        self.parked: Any = None
        self.waiting_for_lock = False  # a write waiting for the fsync lock (server/fsync_lock.py)
        self.global_lock = ""  # "w" once a write passes (or waits at) the fsync lock's gate: currentOp's locks
        # The maxTimeAlwaysTimeOut fail point while armed (a callable answering whether it fires): an
        # operation with a deadline then expires at its next check, as mongod's checkForInterrupt.
        self.time_out_now: Any = None
        self.params = params  # the server's tidemark.params.ServerParams (None for an operation made by a test)

    def note_disk_use(self) -> None:
        """The read spilled to disk (``interrupt.note_disk_use``): its facts, and its cursor's, which
        every later getMore's facts start from, say so (mongod's usedDisk, a plan summary statistic
        that stays true for the rest of the cursor's getMores)."""
        for facts in (self.facts, getattr(self.cursor, "facts", None)):
            if facts is not None and not isinstance(facts, list):
                facts.used_disk = True

    @property
    def user(self) -> Any:
        """The name (``tidemark.auth.names.UserName``) of the user the connection is authenticated
        as, or None: server-side JavaScript keeps a scope per database and user (``query.javascript``)."""
        session = getattr(self.conn, "auth", None)
        return session.name if session is not None else None

    def user_roles(self) -> list[dict[str, str]]:
        """``$$USER_ROLES``: the roles granted to the user the connection is authenticated as, in the order
        ``connectionStatus`` lists them, each ``{_id: "<db>.<role>", role, db}`` (mongod's
        Variables::defineUserRoles, from AuthorizationSession::getAuthenticatedRoleNames); ``[]`` when
        nobody is. 51144 while the enableAccessToUserRoles parameter is false."""
        if self.params is not None and not self.params["enableAccessToUserRoles"]:
            raise MongoError(51144, "Builtin variable '$$USER_ROLES' is not available")
        session = getattr(self.conn, "auth", None)
        roles = session.role_names() if session is not None else []
        return [{"_id": f"{db}.{role}", "role": role, "db": db} for role, db in roles]

    def check(self) -> None:
        """Raise 11601 (or the kill code) once killed, 50 once past the deadline. On a pool thread,
        first the scheduler's preemption point (may wait for a run token: ``tidemark.scheduler``), once
        it has anything to do on this thread (``due``: not a call per check on the event loop)."""
        if time.monotonic() >= thread_state.due:
            checkpoint()
        if self.killed:
            if self.killed == ErrorCode.InterruptedAtShutdown:
                raise MongoError(ErrorCode.InterruptedAtShutdown, "interrupted at shutdown")
            raise MongoError(ErrorCode.Interrupted, "operation was interrupted")
        if self.deadline is not None and (time.monotonic() >= self.deadline
                                          or self.time_out_now is not None and self.time_out_now()):
            raise MongoError(ErrorCode.MaxTimeMSExpired, "operation exceeded time limit")

    async def sleep(self, seconds: float, *, deadline: bool = True) -> None:
        """Wait ``seconds`` on the event loop as mongod's interruptible ``sleepFor``: a killOp (or
        shutdown) ends the wait at once with its code; with ``deadline``, so does maxTimeMS (50)."""
        woken = asyncio.Event()
        self.waker = woken.set
        end = time.monotonic() + seconds
        try:
            while not self.killed:  # (a timer may fire a little early: the wait goes on to the end)
                now = time.monotonic()
                limit = end - now
                if deadline and self.deadline is not None:
                    limit = min(limit, self.deadline - now)
                if limit <= 0:
                    break
                try:
                    await asyncio.wait_for(woken.wait(), limit)
                except TimeoutError:
                    pass
        finally:
            self.waker = None
        if self.killed or deadline:
            self.check()

    def kill(self, code: int = ErrorCode.Interrupted) -> None:
        """Mark the operation killed (event-loop thread): it raises at its next check; a waiting one
        is woken first."""
        if not self.killed:
            self.killed = int(code)
            if self.waker is not None:
                self.waker()
            parked = self.parked  # read once: the pool thread clears it when its wait ends
            if parked is not None:
                parked.wake()

    def released(self, fn: Callable[[], T]) -> T:
        """``fn()`` (C code with the GIL released) with this thread's run token handed on meanwhile
        (``tidemark.query.interrupt.gil_released``)."""
        return released(fn)

    # -- currentOp ------------------------------------------------------------------------------
    def report(self, host: str, *, truncate: bool = True) -> dict[str, Any]:
        """This operation as a currentOp ``inprog`` entry (mongod's field names and order)."""
        now = time.monotonic()
        micros = int((now - self.started) * 1_000_000)
        entry = _client_fields(self.conn, host)
        entry.update({
            "active": True,
            "currentOpTime": _iso(datetime.datetime.now(datetime.UTC)),
        })
        _add_users(entry, self.conn)
        entry.update({
            "threaded": True,
            "opid": self.opid,
        })
        lsid = self.command.get("lsid")
        if isinstance(lsid, dict):
            entry["lsid"] = lsid
        command, redacted = redact_command(self.command, self.command_name)  # THE rule: no secrets shown
        entry.update({
            "secs_running": Int64(micros // 1_000_000),
            "microsecs_running": Int64(micros),
            "op": _OP_TYPES.get(self.command_name, "command"),
            "ns": self.ns,
            "redacted": redacted,
            "command": command_report(command) if truncate else _shown_command(command),
        })
        facts = self.facts if self.facts is not None else getattr(self.cursor, "facts", None)
        if type(facts) is list:  # a write's, one per statement run so far: the statement running
            facts = facts[-1] if facts else None
        summary = facts.plan_summary() if facts is not None else None
        if summary:  # (mongod's CurOp::reportState, once a plan is chosen)
            entry["planSummary"] = summary
        if self.cursor is not None:
            entry["cursor"] = self.cursor.describe()
        entry.update({
            "numYields": self.num_yields,
            # the global lock a write holds or waits for (an fsync lock holds writes back: currentop.js)
            "locks": {"Global": self.global_lock} if self.global_lock else {},
            "waitingForLock": self.waiting_for_lock,
            "lockStats": {},
            "waitingForFlowControl": False,
            "flowControlStats": {},
        })
        if self.killed:
            entry["killPending"] = True
        return entry


class OperationRegistry:
    """Running operations by opid, and the open connections (for ``idleConnections``)."""

    def __init__(self) -> None:
        self.params: Any = None  # the server's ServerParams, which its operations read (ServerState sets it)
        self._ops: dict[int, Operation] = {}
        self._connections: dict[int, Any] = {}  # connection id -> ConnectionInfo
        self._opids = itertools.count(1)
        self.shutting_down = False

    def __len__(self) -> int:
        return len(self._ops)

    def start(self, conn: Any, command_name: str, command: dict, ns: str,
              deadline: float | None, started: float | None = None) -> Operation:
        """Register a running command (``started``: its monotonic start, when the caller has read it)."""
        op = Operation(next(self._opids), conn, command_name, command, ns, deadline, self.params, started)
        if self.shutting_down:
            op.kill(ErrorCode.InterruptedAtShutdown)
        self._ops[op.opid] = op
        return op

    def finish(self, op: Operation) -> None:
        self._ops.pop(op.opid, None)

    def get(self, opid: int) -> Operation | None:
        return self._ops.get(opid)

    def kill(self, opid: int) -> bool:
        """Mark an operation killed (it stops at its next check); False if no such operation."""
        op = self._ops.get(opid)
        if op is None:
            return False
        op.kill()
        return True

    def kill_all(self, code: int = ErrorCode.InterruptedAtShutdown) -> int:
        """Kill every running operation (shutdown); operations started later are killed at birth."""
        self.shutting_down = code == ErrorCode.InterruptedAtShutdown
        ops = list(self._ops.values())
        for op in ops:
            op.kill(code)
        return len(ops)

    def operations(self) -> list[Operation]:
        return list(self._ops.values())

    # -- connections ----------------------------------------------------------------------------
    def connection_opened(self, conn: Any) -> None:
        self._connections[conn.id] = conn

    def connection_closed(self, conn: Any) -> None:
        self._connections.pop(conn.id, None)

    def report(self, host: str, *, idle_connections: bool = False, idle_cursors: Any = None,
               truncate: bool = True, owner: Any = ANYONE) -> list[dict[str, Any]]:
        """currentOp entries (``host``: this server's ``hostname:port``): running operations, then
        (optionally) idle connections and idle cursors (``idle_cursors``: the CursorRegistry to list).

        ``owner`` (a tidemark.auth.names.Principal) keeps only what belongs to connections
        authenticated as that principal, and the cursors it opened (mongod's ``$ownOps`` /
        ``allUsers: false`` under access control); ANYONE lists everything; None (an unauthenticated
        viewer) matches nothing."""
        def visible(conn: Any) -> bool:
            return owner is ANYONE or (conn is not None and visible_to(conn.principal, owner))

        entries = [op.report(host, truncate=truncate) for op in self.operations() if visible(op.conn)]
        if idle_connections:
            busy = {op.conn.id for op in self._ops.values() if op.conn is not None}
            for conn in list(self._connections.values()):
                if conn.id not in busy and visible(conn):
                    entry = _client_fields(conn, host)
                    entry.update({"active": False, "currentOpTime": _iso(datetime.datetime.now(datetime.UTC))})
                    _add_users(entry, conn)
                    entries.append(entry)
        if idle_cursors is not None:
            busy_cursors = frozenset(op.cursor.id for op in self._ops.values() if op.cursor is not None)
            entries.extend(idle_cursors.report_idle(host, owner=owner, busy=busy_cursors))
        return entries


def current_ops(server: Any, viewer: Any, *, all_users: bool, idle_connections: bool = False,
                idle_cursors: bool = False, truncate: bool = True) -> list[dict[str, Any]]:
    """The currentOp entries of this server that ``viewer`` (the caller's ConnectionInfo) asked for
    (shared by the command and the ``$currentOp`` stage)."""
    owner = ANYONE
    if not all_users and server.auth.enabled:
        owner = viewer.principal if viewer is not None else None  # None: nobody's, never everything
    return server.operations.report(
        server.host,
        idle_connections=idle_connections,
        idle_cursors=server.cursors if idle_cursors else None,
        truncate=truncate,
        owner=owner,
    )


def _client_fields(conn: Any, host: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "op", "host": host}
    if conn is None:
        entry["desc"] = "internal"
        return entry
    entry["desc"] = f"conn{conn.id}"
    entry["connectionId"] = conn.id
    entry["client"] = conn.peer
    metadata = conn.client if isinstance(conn.client, dict) else None
    if metadata:
        app = metadata.get("application")
        if isinstance(app, dict) and type(app.get("name")) is str:
            entry["appName"] = app["name"]
        entry["clientMetadata"] = metadata
    return entry


def _add_users(entry: dict[str, Any], conn: Any) -> None:
    """mongod's ``effectiveUsers``: the user the operation's connection is authenticated as. (mongod
    adds ``runBy`` only when a mongos runs the command on another user's behalf — impersonation a
    standalone never sees.)"""
    users = conn.users if conn is not None else None
    if users:
        entry["effectiveUsers"] = users


def _iso(when: datetime.datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}+00:00"


def _shown_command(command: dict) -> dict:
    """The command as currentOp shows it: kind-1 document sequences stay out (they can be 48 MB)."""
    shown = {}
    for key, value in command.items():
        if key in ("documents", "updates", "deletes") and not isinstance(value, list | dict):
            continue
        shown[key] = value
    return shown


def command_report(command: dict, limit: int = MAX_COMMAND_REPORT_BYTES) -> dict:
    """mongod's truncation: a command over ``limit`` (about 1 KB for currentOp) is shown as
    ``{"$truncated": <its start>}`` (plus its ``comment``). The size is estimated without encoding or
    walking a possibly huge document past the limit: the cost is bounded by ``limit``, whatever the
    command (also used by the profiler and the slow-query log for large commands)."""
    shown = _shown_command(command)
    text, complete = _bounded_repr(shown, limit)
    return shown if complete else _truncated(command, text, limit)


def truncated_report(command: dict, limit: int) -> dict:
    """``{"$truncated": <mongod's text of command>, comment}`` whatever its size (for a caller that
    measured the command itself)."""
    return _truncated(command, _bounded_repr(_shown_command(command), limit)[0], limit)


def _truncated(command: dict, text: str, limit: int) -> dict:
    # (mongod: the toString text, cut to the limit with "..." when longer)
    report: dict[str, Any] = {"$truncated": text if len(text) <= limit else text[:limit - 3] + "..."}
    if "comment" in command:
        report["comment"] = command["comment"]
    return report


def _bounded_repr(value: Any, limit: int) -> tuple[str, bool]:
    """``value`` as mongod's ``BSONObj::toString`` renders it (``{ a: 1, s: "x" }``, strings over 159
    characters shown as their first 150 and ``..."``); (text, fits): whether the value itself (its
    full strings counted, about its BSON size) stays within ``limit``. The text stops once longer than
    ``limit``; containers are walked lazily, so the cost is bounded by ``limit``, not by the value."""
    out: list[str] = []
    shown = weight = 0
    for piece, size in _pieces(value):
        out.append(piece)
        shown += len(piece)
        weight += size
        if shown > limit:
            return "".join(out), False
    return "".join(out), weight <= limit


_MAX_SHOWN_STRING = 159  # mongod shows longer strings (valuestrsize() > 160) as their first 150 chars + ...
_SHOWN_STRING_PREFIX = 150


def _pieces(value: Any) -> Iterator[tuple[str, int]]:
    """(text, size it stands for) pieces of ``value``'s rendering, in order."""
    if isinstance(value, dict):
        if not value:
            yield "{}", 2
            return
        separator = "{ "
        for key, item in value.items():
            piece = f"{separator}{key}: "
            yield piece, len(piece)
            yield from _pieces(item)
            separator = ", "
        yield " }", 2
    elif isinstance(value, list | tuple):
        if not value:
            yield "[]", 2
            return
        separator = "[ "
        for item in value:
            yield separator, 2
            yield from _pieces(item)
            separator = ", "
        yield " ]", 2
    elif isinstance(value, bytes):  # (Binary too: never rendered whole)
        yield repr(bytes(value[:_SHOWN_STRING_PREFIX])), len(value) + 5
    elif type(value) is str:
        if len(value) > _MAX_SHOWN_STRING:
            yield '"' + value[:_SHOWN_STRING_PREFIX] + '..."', len(value) + 2
        else:
            yield '"' + value + '"', len(value) + 2
    else:
        piece = _scalar(value)
        yield piece, len(piece)


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, datetime.datetime):
        return f"new Date({_epoch_ms(value)})"
    return repr(value)[:_SHOWN_STRING_PREFIX]


def _epoch_ms(value: datetime.datetime) -> int:
    if value.tzinfo is not None:
        value = value.replace(tzinfo=None) - (value.utcoffset() or datetime.timedelta())
    return (value - datetime.datetime(1970, 1, 1)) // datetime.timedelta(milliseconds=1)
