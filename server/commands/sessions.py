"""Session family: startSession, endSessions, refreshSessions, killSessions, killAllSessions.

Tidemark is a standalone without transactions: sessions exist only so that drivers may attach
``lsid`` to commands (hello advertises logicalSessionTimeoutMinutes). A session owns nothing but
the cursors opened under it. As in mongod: startSession and refreshSessions vivify sessions in the
logical session cache (``tidemark.session_cache``; 261 TooManyLogicalSessions when it is full);
endSessions only notes them as ending, and the cache's refresh (``tidemark.session_refresh``) removes
their records and kills their cursors; killSessions/killAllSessions kill the cursors at once and leave
the cache alone (mongod's SessionKiller).

Under access control a session id names the caller's session of that id (mongod fills the
``uid`` with the caller's digest): ``endSessions``/``killSessions`` end and kill only what the
caller's principal owns (``killSessions: []``: all of it), and answer ok whatever the ids (another user's session is left alone, as
mongod leaves it). An explicit ``uid`` of someone else needs ``killAnySession`` (tidemark.auth.rules);
then the sessions of that id are killed whoever owns them. ``killAllSessions: [{user, db}, ...]``
kills those users' sessions, ``[]`` everyone's.
"""

from __future__ import annotations

import uuid
from typing import Any

from tidemark.auth.names import ANYONE, UserName, session_digest, visible_to
from tidemark.context import CommandContext, CommandSpec
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.expr_base import type_name
from tidemark.session_cache import ending_matcher


def _caller(ctx: CommandContext) -> Any:
    """Whose sessions this command may end or kill: the caller's principal under access control,
    ANYONE without it."""
    manager = ctx.server.auth
    return ctx.conn.principal if manager is not None and manager.enabled else ANYONE


def _session_list(ctx: CommandContext, cmd: dict[str, Any]) -> list[dict[str, Any]]:
    value = cmd[ctx.command_name]
    if not isinstance(value, list):
        raise MongoError(
            ErrorCode.TypeMismatch,
            f"BSON field '{ctx.command_name}.{ctx.command_name}' is the wrong type "
            f"'{type_name(value)}', expected type 'array'",
        )
    for item in value:
        if not isinstance(item, dict) or not isinstance(item.get("id"), uuid.UUID):
            raise MongoError(
                ErrorCode.TypeMismatch if not isinstance(item, dict) else ErrorCode.IDLFailedToParse,
                f"BSON field '{ctx.command_name}.id' is missing or is not a UUID",
            )
    return value


async def start_session(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    session = ctx.server.sessions.start(ctx.conn)  # 261 when the cache is full
    return {"id": session, "timeoutMinutes": ctx.server.params["localLogicalSessionTimeoutMinutes"]}


async def end_sessions(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    # (their cursors die, and their records leave config.system.sessions, at the next refresh)
    ctx.server.sessions.end((item["id"] for item in _session_list(ctx, cmd)), owner=_caller(ctx))
    return {}


async def refresh_sessions(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    for item in _session_list(ctx, cmd):
        ctx.server.sessions.vivify(item, ctx.conn)  # 261 for a new one when the cache is full
    return {}


async def kill_sessions(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    sessions = _session_list(ctx, cmd)
    caller = _caller(ctx)
    if not sessions:  # mongod: every session of the caller (of everyone without access control)
        if caller is not None:
            ctx.server.cursors.kill_sessions(lambda _session_id, owner: visible_to(owner, caller))
        return {}
    own = session_digest(ctx.conn.principal.name if ctx.conn.principal is not None else None)
    doomed: set[tuple[Any, Any]] = set()
    for item in sessions:
        uid = item.get("uid")
        # an explicit uid other than the caller's passed the killAnySession check (tidemark.auth.rules)
        doomed.add((item["id"], ANYONE if isinstance(uid, bytes) and bytes(uid) != own else caller))
    ctx.server.cursors.kill_sessions(ending_matcher(doomed))
    return {}


async def kill_all_sessions(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    value = cmd["killAllSessions"]
    if not isinstance(value, list):
        raise MongoError(
            ErrorCode.TypeMismatch, "BSON field 'killAllSessions.killAllSessions' must be an array"
        )
    if not value:
        ctx.server.cursors.kill_sessions(lambda _session_id, _owner: True)
        return {}
    if not all(isinstance(u, dict) and type(u.get("user")) is str and type(u.get("db")) is str for u in value):
        raise MongoError(ErrorCode.TypeMismatch,
                         "BSON field 'killAllSessions.killAllSessions' must be an array of {user, db}")
    names = {UserName(u["user"], u["db"]) for u in value}
    ctx.server.cursors.kill_sessions(lambda _session_id, owner: owner is not None and owner.name in names)
    return {}


COMMANDS = [
    CommandSpec("endSessions", end_sessions, help="end logical sessions (drivers send this on close)"),
    CommandSpec(
        "killAllSessions", kill_all_sessions, help="kill every session and the cursors opened under them"
    ),
    CommandSpec("killSessions", kill_sessions, help="kill sessions and the cursors opened under them"),
    CommandSpec("refreshSessions", refresh_sessions, help="keep logical sessions alive"),
    CommandSpec("startSession", start_session, help="start a logical session and return its id"),
]
