"""Cursor family: getMore and killCursors over the registry in ``tidemark.cursors``; an ``awaitData``
getMore waits for inserts through ``tidemark.tailable.InsertNotifier``; the first batch of a tailable
find (``tailable_find``, reached from crud's find). Both commands parse as mongod's strict IDL does
(40415 for an unknown field), and a getMore continues a cursor only in the logical session that
opened it (mongod's validateLSID: 50736 / 50737 / 50738)."""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Callable
from typing import Any

from bson.int64 import Int64

from tidemark import collections as access
from tidemark import tailable
from tidemark.arguments import check_command, check_fields, field, missing, wrong_type
from tidemark.auth.names import session_digest
from tidemark.context import CommandContext, CommandSpec
from tidemark.core import collection as C
from tidemark.cursors import api_parameters, api_parameters_text, cursor_reply, resume_token_fields
from tidemark.profiler import ReadFacts
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.session_cache import lsid_text

DEFAULT_AWAIT_MS = 1000  # mongod's await time for a getMore without maxTimeMS
# The fields of mongod's strict IDL parsers (getmore_command.idl, kill_cursors.idl): any other field
# that is not a generic argument is 40415.
KILLCURSORS_FIELDS = {"cursors"}


async def tailable_find(ctx: CommandContext, spec, ns: str, cmd: dict, *, record_ids: bool = False,
                        shape: Callable[[dict], Any] | None = None) -> dict:
    """A tailable find (``spec`` is the parsed FindSpec): the first batch of a tail cursor, or an
    exhausted cursor (id 0) when there is nothing to tail. ``record_ids`` / ``shape``: showRecordId and
    returnKey's reshaping (``tidemark.tailable.TailingScan``)."""
    def is_view() -> bool:
        with ctx.server.engine.read() as r:
            return C.get_view(r, ctx.db, spec.name) is not None

    if is_view():  # a find on a view runs as an aggregate, which cannot carry a tailable cursor (168)
        raise MongoError(ErrorCode.InvalidPipelineOperator,
                         spec.view_refusal or "Tailable cursors are not supported in aggregation.")
    tail = await ctx.run_blocking(tailable.open_tail, ctx.server.engine, ctx.server.index_usage, spec, ctx.db,
                                  record_ids=record_ids, shape=shape,
                                  table_scan=access.table_scan_allowed(ctx.server, ctx.db, spec.name, spec.filter))
    if tail is None:
        return {"cursor": {"firstBatch": [], "id": Int64(0), "ns": ns}}
    batch_size = spec.batch_size
    if spec.limit and (batch_size is None or batch_size > spec.limit):
        batch_size = spec.limit
    return await cursor_reply(ctx, ns, tail, batch_size, False, first=True,
                              no_timeout=bool(cmd.get("noCursorTimeout", False)), tailable=True,
                              await_data=spec.await_data)


def _cursor_id(value: Any, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise wrong_type(field, value, "long")
    return int(value)


def _collection(cmd: dict[str, Any], command: str, name: str) -> str:
    value = field(cmd, command, name, str, "string", required=True)
    if not value:
        raise MongoError(ErrorCode.InvalidNamespace, f"Invalid namespace specified '{cmd.get('$db')}.'")
    return value


def _batch_size(cmd: dict[str, Any]) -> int | None:
    value = cmd.get("batchSize")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise wrong_type("getMore.batchSize", value, ("long", "int", "decimal", "double"))
    if isinstance(value, float) and not math.isfinite(value):
        raise MongoError(ErrorCode.BadValue, "Unable to coerce NaN/Inf to integral type")
    if value < 0:
        raise MongoError(
            ErrorCode.BadValue, f"BatchSize value must be non-negative, but received: {int(value)}"
        )
    return int(value) or None


async def get_more(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    cursor_id = _cursor_id(cmd["getMore"], "getMore.getMore")
    check_command(cmd, "getMore")
    collection = _collection(cmd, "getMore", "collection")
    batch_size = _batch_size(cmd)
    ns = f"{ctx.db}.{collection}"
    registry = ctx.server.cursors
    cursor = registry.get(cursor_id)
    killed = registry.killed_cursor(cursor_id) if cursor is None else None
    if killed is not None:  # a catalog change killed it: its checks first, as mongod's getMore makes them
        cursor = killed[0]
    if cursor is None:
        raise MongoError(ErrorCode.CursorNotFound, f"cursor id {cursor_id} not found")
    if cursor.ns != ns:
        raise MongoError(
            ErrorCode.Unauthorized,
            f"Requested getMore on namespace '{ns}', but cursor belongs to a different namespace {cursor.ns}",
        )
    _check_session(ctx, cursor)
    if killed is None:
        _check_api_parameters(cmd, cursor)
    if "maxTimeMS" in cmd and not cursor.await_data:
        raise MongoError(ErrorCode.BadValue, "cannot set maxTimeMS on getMore command for a non-awaitData cursor")
    if killed is not None:  # mongod's plan fails to restore: this getMore answers why, and the cursor is gone
        registry.forget_killed(cursor_id)
        raise MongoError(ErrorCode.QueryPlanKilled, killed[1])
    batch_size = batch_size or cursor.batch_size
    ctx.op.cursor = cursor  # currentOp shows the cursor a getMore works on (mongod's "cursor" field)
    if cursor.facts is not None:
        ctx.facts = cursor.facts.resumed()
    elif cursor.snapshot and cursor.origin:
        # listIndexes / listCollections: mongod's queued data, which examines nothing; the getMore still
        # carries its originating command (profile entry, slow-query log, comment)
        ctx.facts = ReadFacts(origin=cursor.origin)
    if cursor.await_data:
        batch, next_id = await _await_batch(ctx, cursor, batch_size, cmd.get("maxTimeMS"))
    else:
        batch, next_id = await registry.next_batch(ctx, cursor, batch_size)
    return {"cursor": {"nextBatch": batch, **resume_token_fields(cursor, len(batch)), "id": Int64(next_id), "ns": ns}}


def _session(lsid: Any, principal: Any) -> tuple[Any, bytes] | None:
    """A logical session as mongod compares it: the client's ``lsid.id`` with the ``uid`` mongod fills
    in from the authenticated user (``session_digest``); None outside a session."""
    if not isinstance(lsid, dict) or "id" not in lsid:
        return None
    sid = lsid["id"]
    if isinstance(sid, bytes) and len(sid) == 16:  # a Binary id: shown as the UUID it holds
        sid = uuid.UUID(bytes=bytes(sid))
    return sid, session_digest(principal.name if principal is not None else None)


def _check_session(ctx: CommandContext, cursor) -> None:
    """mongod's validateLSID: a cursor opened in a session continues only in that session, and one
    opened outside any session only outside one (50736 / 50737 / 50738)."""
    theirs, mine = _session(cursor.lsid, cursor.owner), _session(ctx.lsid, ctx.conn.principal)
    prefix = f"Cannot run getMore on cursor {cursor.id}, which was"
    if theirs is None:
        if mine is not None:
            raise MongoError(50736, f"{prefix} not created in a session, in session "
                                    f"{lsid_text(mine[0], ctx.conn.principal)}")
    elif mine is None:
        raise MongoError(50737, f"{prefix} created in session {lsid_text(theirs[0], cursor.owner)}, without an lsid")
    elif mine != theirs:
        raise MongoError(50738, f"{prefix} created in session {lsid_text(theirs[0], cursor.owner)}, in session "
                                f"{lsid_text(mine[0], ctx.conn.principal)}")


def _check_api_parameters(cmd: dict[str, Any], cursor) -> None:
    """mongod's getMore runs under the API parameters of the command that opened its cursor: it must
    send exactly those (an absent one differs from one sent as false), else 347 APIMismatchError."""
    sent = api_parameters(cmd)
    if sent != cursor.api:
        raise MongoError(ErrorCode.APIMismatchError,
                         f"API parameter mismatch: getMore used params {api_parameters_text(sent)}, "
                         f"the cursor-creating command used {api_parameters_text(cursor.api)}")


async def _await_batch(ctx: CommandContext, cursor, batch_size: int | None, max_time_ms: Any):
    """An awaitData getMore: answer as soon as a batch has documents; else wait for an insert into the
    namespace for up to ``maxTimeMS`` (the await time here, default 1 s, as mongod) and look again.
    killOp and shutdown wake the wait (``Operation.kill`` calls the waiter) and it answers their code
    at once (11601, 11600); a killCursors wakes it too and it answers 237."""
    ctx.deadline = None  # maxTimeMS bounds the wait, it is not an operation deadline
    wait = (max_time_ms if isinstance(max_time_ms, int | float) and max_time_ms > 0 else DEFAULT_AWAIT_MS) / 1000
    until = time.monotonic() + wait
    waiter = ctx.server.tailing.waiter(cursor.ns)
    ctx.op.waker = waiter.wake
    try:
        while True:
            waiter.listen()  # before the read: an insert after it still wakes us
            batch, next_id = await ctx.server.cursors.next_batch(ctx, cursor, batch_size)
            if batch or not next_id:
                return batch, next_id
            if not await waiter.wait(until - time.monotonic()):
                return batch, next_id
            if cursor.killed:  # killCursors woke us (as mongod interrupts the waiting getMore)
                raise MongoError(ErrorCode.CursorKilled, f"cursor id {cursor.id} was killed while awaiting data")
            try:
                ctx.check_deadline()  # killOp or shutdown woke us
            except MongoError:
                ctx.server.cursors.kill(cursor.id)  # a failed getMore takes its cursor along, as in mongod
                raise
    finally:
        ctx.op.waker = None
        waiter.close()


async def kill_cursors(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    collection = _collection(cmd, "killCursors", "killCursors")
    check_fields(cmd, "killCursors", KILLCURSORS_FIELDS)
    if cmd.get("cursors") is None:
        raise missing("killCursors.cursors")
    ids = field(cmd, "killCursors", "cursors", list, "array")
    ns = f"{ctx.db}.{collection}"
    registry = ctx.server.cursors
    killed: list[Int64] = []
    not_found: list[Int64] = []
    for value in ids:
        cursor_id = _cursor_id(value, "killCursors.cursors")
        cursor = registry.get(cursor_id)
        dead = registry.killed_cursor(cursor_id) if cursor is None else None
        if dead is not None and dead[0].ns == ns and registry.forget_killed(cursor_id):
            killed.append(Int64(cursor_id))  # mongod still holds a cursor a catalog change killed
        elif cursor is None or cursor.ns != ns:
            not_found.append(Int64(cursor_id))
        else:
            registry.kill(cursor_id)
            killed.append(Int64(cursor_id))
            if cursor.await_data:
                ctx.server.tailing.notify(ns)  # a getMore awaiting data on it stops waiting
    return {"cursorsKilled": killed, "cursorsNotFound": not_found, "cursorsAlive": [], "cursorsUnknown": []}


COMMANDS = [
    CommandSpec("getMore", get_more, help="the next batch of an open cursor", counter="getmore"),
    CommandSpec("killCursors", kill_cursors, help="close open cursors"),
]
