"""Session family: startSession, endSessions, refreshSessions, killSessions, killAllSessions,
killAllSessionsByPattern.

Tidemark is a standalone without transactions: sessions exist only so that drivers may attach
``lsid`` to commands (hello advertises logicalSessionTimeoutMinutes). A session owns nothing but
the cursors opened under it. As in mongod: startSession and refreshSessions vivify sessions in the
logical session cache (``tidemark.session_cache``; 261 TooManyLogicalSessions when it is full);
endSessions only notes them as ending, and the cache's refresh (``tidemark.session_refresh``) removes
their records and kills their cursors; killSessions/killAllSessions/killAllSessionsByPattern kill the
cursors and the running operations of the sessions at once (the operations stop at their next
interruption check with 11601 Interrupted) and leave the cache alone (mongod's SessionKiller:
killSessionsLocalKillOps, then killSessionsLocalKillCursors; :func:`_kill`).

Under access control a session id names the caller's session of that id (mongod fills the
``uid`` with the caller's digest): ``endSessions``/``killSessions`` end and kill only what the
caller's principal owns (``killSessions: []``: all of it), and answer ok whatever the ids (another user's session is left alone, as
mongod leaves it). An explicit ``uid`` of someone else needs ``killAnySession`` (tidemark.auth.rules);
then the sessions of that id are killed whoever owns them. ``killAllSessions: [{user, db}, ...]``
kills those users' sessions, ``[]`` everyone's. ``killAllSessionsByPattern: [{uid}, {lsid: {id, uid}},
{}...]`` (``killAnySession``; ``users``/``roles`` in a pattern also ``impersonate``) kills the sessions
of that user digest, that session, or every session (an empty list too).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from tidemark.arguments import check_fields, missing, wrong_type
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


def _kill(ctx: CommandContext, matches: Callable[[Any, Any], bool]) -> None:
    """Kill the sessions ``matches(session id, owner Principal or None)`` accepts: their cursors and
    their running operations (not the command doing the killing)."""
    for op in ctx.server.operations.operations():
        lsid = op.command.get("lsid")
        session_id = lsid.get("id") if isinstance(lsid, dict) else None
        if op is not ctx.op and isinstance(session_id, uuid.UUID) and matches(session_id, op.conn.principal):
            op.kill()
    ctx.server.cursors.kill_sessions(matches)


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
            _kill(ctx, lambda _session_id, owner: visible_to(owner, caller))
        return {}
    own = session_digest(ctx.conn.principal.name if ctx.conn.principal is not None else None)
    doomed: set[tuple[Any, Any]] = set()
    for item in sessions:
        uid = item.get("uid")
        # an explicit uid other than the caller's passed the killAnySession check (tidemark.auth.rules)
        doomed.add((item["id"], ANYONE if isinstance(uid, bytes) and bytes(uid) != own else caller))
    _kill(ctx, ending_matcher(doomed))
    return {}


async def kill_all_sessions(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    value = cmd["killAllSessions"]
    if not isinstance(value, list):
        raise MongoError(
            ErrorCode.TypeMismatch, "BSON field 'killAllSessions.killAllSessions' must be an array"
        )
    if not value:
        _kill(ctx, lambda _session_id, _owner: True)
        return {}
    if not all(isinstance(u, dict) and type(u.get("user")) is str and type(u.get("db")) is str for u in value):
        raise MongoError(ErrorCode.TypeMismatch,
                         "BSON field 'killAllSessions.killAllSessions' must be an array of {user, db}")
    names = {UserName(u["user"], u["db"]) for u in value}
    _kill(ctx, lambda _session_id, owner: owner is not None and owner.name in names)
    return {}


_PATTERN_FIELDS = ("uid", "lsid", "users", "roles")


def _pattern_matcher(pattern: dict[str, Any]) -> Callable[[Any, Any], bool]:
    """One KillAllSessionsByPattern: sessions of the ``uid`` digest, the ``lsid`` session, or all."""
    lsid, uid = pattern.get("lsid"), pattern.get("uid")

    def digest(owner: Any) -> bytes:
        return session_digest(owner.name if owner is not None else None)

    if lsid is not None:
        return lambda session_id, owner: session_id == lsid["id"] and digest(owner) == bytes(lsid["uid"])
    if uid is not None:
        return lambda _session_id, owner: digest(owner) == bytes(uid)
    return lambda _session_id, _owner: True


def _parse_pattern(item: Any) -> dict[str, Any]:
    """The IDL checks of KillAllSessionsByPattern (kill_sessions.idl)."""
    where = "KillAllSessionsByPatternCmd.killAllSessionsByPattern"
    if not isinstance(item, dict):
        raise wrong_type(where, item, "object")
    for key, value in item.items():
        if key not in _PATTERN_FIELDS:
            raise MongoError(ErrorCode.IDLUnknownField, f"BSON field '{where}.{key}' is an unknown field.")
        if key == "uid" and not (isinstance(value, bytes) and len(value) == 32):
            raise MongoError(ErrorCode.BadValue if isinstance(value, bytes) else ErrorCode.TypeMismatch,
                             f"BSON field '{where}.uid' must be a 32-byte BinData")
        if key == "lsid":
            if not isinstance(value, dict):
                raise wrong_type(f"{where}.lsid", value, "object")
            if not isinstance(value.get("id"), uuid.UUID):
                raise missing(f"{where}.lsid.id")
            if not isinstance(value.get("uid"), bytes):
                raise missing(f"{where}.lsid.uid")
        if key in ("users", "roles") and not isinstance(value, list):
            raise wrong_type(f"{where}.{key}", value, "array")
    return item


async def kill_all_sessions_by_pattern(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    name = "killAllSessionsByPattern"
    check_fields(cmd, name, set())
    value = cmd[name]
    if not isinstance(value, list):
        raise wrong_type(f"KillAllSessionsByPatternCmd.{name}", value, "array")
    patterns = [_parse_pattern(item) for item in value]
    if not patterns:
        _kill(ctx, lambda _session_id, _owner: True)
        return {}
    matchers = [_pattern_matcher(pattern) for pattern in patterns]
    _kill(ctx, lambda session_id, owner: any(m(session_id, owner) for m in matchers))
    return {}


COMMANDS = [
    CommandSpec("endSessions", end_sessions, help="end logical sessions (drivers send this on close)"),
    CommandSpec(
        "killAllSessions", kill_all_sessions, help="kill every session and the cursors opened under them"
    ),
    CommandSpec("killAllSessionsByPattern", kill_all_sessions_by_pattern,
                help="kill the sessions matching patterns ({uid}, {lsid}; [] or {}: every session), their "
                     "cursors and running operations"),
    CommandSpec("killSessions", kill_sessions, help="kill sessions, the cursors opened under them and their "
                                                    "running operations"),
    CommandSpec("refreshSessions", refresh_sessions, help="keep logical sessions alive"),
    CommandSpec("startSession", start_session, help="start a logical session and return its id"),
]
