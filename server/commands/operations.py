"""Operations family: currentOp and killOp over the registry in ``tidemark.operations``.

- ``currentOp`` answers ``{inprog: [...]}`` like mongod 7.0, which runs it as ``[{$currentOp:
  {allUsers: !$ownOps, idleConnections: $all, truncateOps: true}}, {$match: <the other fields>}]``:
  the same report as the ``$currentOp`` stage, filtered by the query language.
- Under access control, ``$ownOps`` (``allUsers: false`` for the stage, its default) lists only the
  operations, idle connections and cursors of connections authenticated as the caller — whatever its
  privileges, as mongod; without access control everything is listed. Who may ask is
  ``tidemark.auth.rules`` (``inprog``, or ``$ownOps``); who may kill what too (``killop``, or an
  operation of the same user).
- ``lockInfo`` (admin) lists the lock requests held or waited for: none, Tidemark takes no lock a
  client could see (mongod's LockManager::getLockInfoBSON on an idle server: ``lockInfo: []``).
- ``killOp`` (admin) marks the operation killed; it stops at its next interruption check and answers
  11601 Interrupted. mongod answers "attempting to kill op" whether or not the opid exists.
"""

from __future__ import annotations

from typing import Any

from tidemark.arguments import GENERIC_ARGUMENTS
from tidemark.context import CommandContext, CommandSpec
from tidemark.operations import current_ops as report
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.expr_base import type_name
from tidemark.query.expr_logic import truthy
from tidemark.query.match import compile_filter

_CURRENT_OP_FLAGS = ("$all", "$ownOps", "$truncateOps")


async def current_op(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    flags: dict[str, bool] = {}
    conditions: dict[str, Any] = {}
    for i, (key, value) in enumerate(cmd.items()):
        if i == 0 or key in GENERIC_ARGUMENTS:
            continue
        if key in _CURRENT_OP_FLAGS:
            flags[key] = truthy(value)
        else:
            conditions[key] = value
    matches = compile_filter(conditions)
    entries = report(ctx.server, ctx.conn, all_users=not flags.get("$ownOps", False),
                     idle_connections=flags.get("$all", False), truncate=flags.get("$truncateOps", True))
    reply: dict[str, Any] = {"inprog": [entry for entry in entries if matches(entry)]}
    if ctx.server.fsync_lock.locked:  # as mongod: the lock is reported beside the operations
        reply["fsyncLock"] = True
        reply["info"] = "use db.fsyncUnlock() to terminate the fsync write/snapshot lock"
    return reply


def _opid(cmd: dict[str, Any]) -> int:
    if "op" not in cmd:
        raise MongoError(ErrorCode.NoSuchKey, 'Missing expected field "op"')
    value = cmd["op"]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise MongoError(
            ErrorCode.TypeMismatch,
            f'Expected field "op" to have numeric type, but found {type_name(value)}',
        )
    if isinstance(value, float) and not value.is_integer():
        raise MongoError(
            ErrorCode.BadValue,
            f'Expected field "op" to have a value exactly representable as a 64-bit integer, but found op: {value}',
        )
    op = int(value)
    if not -(2**31) <= op <= 2**31 - 1:
        raise MongoError(26823, f"invalid op : {op}. Op ID cannot be represented with 32 bits")
    return op & 0xFFFFFFFF


async def kill_op(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    ctx.server.operations.kill(_opid(cmd))
    return {"info": "attempting to kill op"}


async def lock_info(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    return {"lockInfo": []}


COMMANDS = [
    CommandSpec(
        "currentOp",
        current_op,
        help="the operations running now: {currentOp: 1, $all: <bool>, $ownOps: <bool>, <filter>...}",
        admin_only=True,
    ),
    CommandSpec(
        "killOp",
        kill_op,
        help="interrupt a running operation: {killOp: 1, op: <opid>}; it stops at its next check with "
        "11601 Interrupted",
        admin_only=True,
    ),
    CommandSpec("lockInfo", lock_info, admin_only=True,
                help="show all lock info on the server (Tidemark holds no lock a client could wait for)"),
]
