"""The command table and the one place exceptions become error replies.

The table is built once from the explicit tuple ``FAMILIES``: each family module exports
``COMMANDS = [CommandSpec(...)]``. To add a family, import it here and append it to ``FAMILIES``
(one line each). Names and aliases must be unique; :func:`build_table` raises otherwise.

Error translation (nowhere else): ``MongoError`` -> its reply; ``tidemark.storage.errors.StorageError`` ->
its ``code``/``code_name``/``message``; a full disk anywhere (ENOSPC) -> 14031 OutOfDiskSpace; anything else is logged with its traceback and answered
without Python class names, library text or source paths: input too deep to evaluate
(RecursionError) -> 15 Overflow, out of memory -> 146 ExceededMemoryLimit, a number out of range
(OverflowError) -> 15 Overflow, a genuine bug -> 1 InternalError with a generic message. The
connection stays open.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from tidemark import log
from tidemark.arguments import DOC_SEQUENCE_FIELDS, GENERIC_ARGUMENTS, SEQUENCES_REFUSED
from tidemark.auth.redaction import redact_command
from tidemark.auth.rules import authenticate, authorize, check_session_claim, requires_auth
from tidemark.commands import (
    admin,
    aggregate,
    auth,
    authz_merge,
    capped,
    cluster,
    crud,
    cursors,
    databases,
    ddl,
    explain,
    fcv,
    gridfs,
    handshake,
    indexes,
    map_reduce,
    metadata,
    operations,
    operator,
    oplog,
    plan_cache,
    profiling,
    replication,
    roles,
    sessions,
    split_vector,
    stats,
    testing,
    users,
)
from tidemark.commands.api_version import check_api_parameters, check_repeated_fields
from tidemark.commands.concerns import check_concerns, refuses_write_concern, unacknowledged
from tidemark.context import (
    CloseConnection,
    CommandContext,
    CommandSpec,
    ConnectionInfo,
    ServerState,
)
from tidemark.core.collection import check_db_name
from tidemark.fsync_lock import WRITE_COMMANDS
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query import interrupt
from tidemark.query.expr_base import type_name
from tidemark.session_cache import check_session_fields
from tidemark.storage.errors import OutOfDiskSpace, StorageError, is_out_of_space

FAMILIES = (
    handshake,
    admin,
    sessions,
    cursors,
    databases, ddl, crud, aggregate, explain, map_reduce, indexes, stats, capped, gridfs,
    profiling, replication, cluster, fcv, testing, operations, operator, oplog, metadata, plan_cache,
    auth, users, roles, authz_merge, split_vector,
)


def build_table(families: Iterable[Any] = FAMILIES) -> dict[str, CommandSpec]:
    """name-or-alias -> spec, sorted by name. Raises ValueError on a duplicate name."""
    table: dict[str, CommandSpec] = {}
    for family in families:
        for spec in family.COMMANDS:
            for name in (spec.name, *spec.aliases):
                if name in table:
                    raise ValueError(f"command {name!r} is defined twice ({family.__name__})")
                table[name] = spec
    return dict(sorted(table.items()))


# Python failures that input can provoke, as mongod would name them; anything else is a bug.
_UNEXPECTED: tuple[tuple[type[BaseException], int, str], ...] = (
    (RecursionError, ErrorCode.Overflow, "the operation is nested too deeply to evaluate"),
    (MemoryError, ErrorCode.ExceededMemoryLimit, "the operation needs more memory than the server can give it"),
    (OverflowError, ErrorCode.Overflow, "a value is out of the range this operation can represent"),
)


def error_reply(exc: BaseException, *, context: str = "") -> dict[str, Any]:
    """The ``{ok: 0, errmsg, code, codeName}`` reply for any exception."""
    if isinstance(exc, MongoError):
        return exc.to_reply()
    if is_out_of_space(exc):  # outside the engine too, e.g. a $sort spilling to disk: 14031, like mongod
        exc = OutOfDiskSpace(exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc))
    if isinstance(exc, StorageError) and exc.code != ErrorCode.InternalError:
        return {"ok": 0.0, "errmsg": exc.message, "code": exc.code, "codeName": exc.code_name}
    log.exception(
        "COMMAND", 21962, "Unexpected exception while running a command", exc, ctx=context or "conn"
    )
    for kind, code, message in _UNEXPECTED:
        if isinstance(exc, kind):
            return MongoError(code, message).to_reply()
    what = "the storage engine failed" if isinstance(exc, StorageError) else "an unexpected error occurred"
    return MongoError(ErrorCode.InternalError, f"Internal error: {what}; the server log has the details").to_reply()


def _database(cmd: dict[str, Any]) -> str:
    """The request's ``$db`` as mongod's OpMsgRequest::getDatabase reads it — before the command is
    looked up (curOpCommandSetup names the operation's namespace first): absent 40571; any other type
    than a string, null included, BSONElement::chk's 13111 with both types named; a dot or a NUL 73."""
    if "$db" not in cmd:
        raise MongoError(40571, "OP_MSG requests require a $db argument")
    db = cmd["$db"]
    if type(db) is not str:
        raise MongoError(13111, f"wrong type for field ($db) {type_name(db)} != string")
    # the same step names the operation's namespace <db>.$cmd, whose DatabaseName refuses a dot and a NUL
    # (73, before the command is looked up); the other rules of a name are validDBName's, later
    if "." in db:
        raise MongoError(ErrorCode.InvalidNamespace, f"'.' is an invalid character in a db name: {db}")
    if "\x00" in db:
        raise MongoError(ErrorCode.InvalidNamespace, "database names cannot have embedded null characters")
    return db


def _with_sequences(spec: CommandSpec, cmd: dict[str, Any], sequence_ids: tuple[str, ...]) -> dict[str, Any]:
    """``cmd`` as the command's parse takes its OP_MSG document sequences (``sequence_ids``), by mongod's
    command class (arguments.SEQUENCES_REFUSED): a BasicCommand's parse refuses them (CommandHelpers::
    uassertNoDocumentSequences, 40472: after the authentication check, before the database name's and
    the privileges'); insert, update and delete read them as fields (their handlers check the names:
    40415); every other command never reads them: they are left out."""
    if spec.name in SEQUENCES_REFUSED:
        raise MongoError(40472, f"The {spec.name} command does not support document sequences.")
    if spec.name in DOC_SEQUENCE_FIELDS:
        return cmd
    return {key: value for key, value in cmd.items() if key not in sequence_ids}


# Database names check_db_name accepted (a command's $db: a handful per server), bounded.
_VALID_DBS: set[str] = set()
_VALID_DBS_MAX = 1024


def _max_time_ms(cmd: dict[str, Any]) -> int | None:
    value = cmd.get("maxTimeMS")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise MongoError(ErrorCode.BadValue, "maxTimeMS must be a number")
    if isinstance(value, float) and not value.is_integer():
        raise MongoError(ErrorCode.BadValue, "maxTimeMS has non-integral value")
    if value < 0 or value > 2**31 - 1:
        raise MongoError(
            ErrorCode.BadValue, f"{int(value)} value for maxTimeMS is out of range [0, 2147483647]"
        )
    return int(value) or None


async def _inject_failure(failpoints, spec: CommandSpec, cmd: dict[str, Any], conn: ConnectionInfo,
                          op: Any) -> None:
    """failCommand's effect on this command, if it fires: block, then close or fail (server/failpoints.py).
    It runs inside the command's operation, as in mongod: a blocked command is listed by currentOp,
    and killOp (or shutdown) ends the block with the kill's code, like mongod's interruptible sleep."""
    action = failpoints.before((spec.name, *spec.aliases), cmd, conn)
    if action is None:
        error = failpoints.other_failure(spec.name, cmd)  # maxTimeAlwaysTimeOut, failGetMore...
        if error is not None:
            raise error
        return
    if action.block_ms:
        await op.sleep(action.block_ms / 1000, deadline=False)
    if action.close:
        log.info("COMMAND", 20431, "Failing command via 'failCommand' failpoint: closing connection",
                 ctx=f"conn{conn.id}", command=spec.name)
        raise CloseConnection()
    if action.error is not None:
        raise action.error


# The reply of an insert, update or delete with an unacknowledged write concern sent without moreToCome:
# mongod's write commands skip their output then (populateReply's shouldSkipOutput), leaving the reply
# its defaults; the statements ran, and what they did is not told.
_WRITE_REPLIES = {"insert": {"n": 0, "ok": 1.0}, "update": {"n": 0, "nModified": 0, "ok": 1.0},
                  "delete": {"n": 0, "ok": 1.0}}


class Dispatcher:
    """Runs one command document against the table and always returns a reply document."""

    def __init__(self, server: ServerState, table: dict[str, CommandSpec] | None = None):
        self.server = server
        table = build_table() if table is None else table
        if not server.params["enableTestCommands"]:
            table = {name: spec for name, spec in table.items() if not spec.test_only}
        self.table = table
        server.commands = self.table

    async def execute(self, conn: ConnectionInfo, cmd: dict[str, Any], request_bytes: int = 0,
                      repeated: tuple[tuple[str, Any], ...] | None = None,
                      sequence_ids: tuple[str, ...] = ()) -> dict[str, Any]:
        """Run ``cmd``; ``request_bytes`` is the size of its wire message (large requests parse off
        the event loop: ``CommandContext.run_heavy``); ``repeated``: every element of a body whose
        field names repeat (``OpMsg.repeated``; ``cmd`` then holds each name's first value);
        ``sequence_ids``: the fields of ``cmd`` that came as document sequences."""
        started = time.monotonic()
        server = self.server
        # profiling as it stood when the command began (mongod's CurOp keeps the level it entered with):
        # the profile command that turns it off is still profiled
        watching_at_start = server.profiler.watching
        name = ""
        for name in cmd:  # noqa: B007 - the first field's name (a loop that stops at once: two calls fewer than next(iter()))
            break
        spec = self.table.get(name)
        ctx = None
        db: Any = None  # (the raw $db until _database, or the memo, has passed it)
        try:
            # mongod's order: $db, the command, the API parameters' parse of the body (ExecCommandDatabase::
            # _parseCommand's first step, before any authorization: a client that has not authenticated
            # learns nothing from it but what it sent), the pre-parse authorization checks
            # (uassertShouldAttemptParse: admin-only, authentication), the command's parse (document
            # sequences), then _initiateCommand's: the session fields, the database name (validDBName),
            # help, the user's privileges (checkAuthorization), the rest.
            # a $db that passed every check before (_VALID_DBS: check_db_name refuses what _database
            # does, and more) passes them again: no call for either
            db = cmd["$db"] if "$db" in cmd else None
            known_db = type(db) is str and db in _VALID_DBS
            if not known_db:
                db = _database(cmd)
            if spec is None:
                if not name:
                    raise MongoError(ErrorCode.FailedToParse, "Command document must not be empty")
                raise MongoError(ErrorCode.CommandNotFound, f"no such command: '{name}'")
            if repeated is not None:
                check_repeated_fields(repeated)  # 40413, where mongod's first parse of the body meets it
            if "apiVersion" in cmd or "apiStrict" in cmd or "apiDeprecationErrors" in cmd:
                check_api_parameters(spec.name, cmd)  # 322 / 323 / 4886600, as mongod
            if spec.admin_only and db != "admin":
                raise MongoError(
                    ErrorCode.Unauthorized, f"{name} may only be run against the admin database."
                )
            access = server.auth
            enforcing = access is not None and access.enabled
            if enforcing:
                authenticate(server, conn, spec.name)  # 13 without a user, before the parse
            if sequence_ids:
                cmd = _with_sequences(spec, cmd, sequence_ids)  # (40472: a BasicCommand's parse)
            if "txnNumber" in cmd or "autocommit" in cmd or "startTransaction" in cmd:
                check_session_fields(spec.name, cmd, requires_auth(spec.name), conn, access)
            lsid = cmd["lsid"] if "lsid" in cmd else None
            if lsid is not None:
                if enforcing:
                    check_session_claim(server, conn, spec.name, cmd)  # 13 for another user's uid
                # 261 TooManyLogicalSessions when the cache is full
                server.sessions.vivify(lsid, conn, spec.name, access)
            if not known_db:  # (check_db_name is pure: a name that passed it once passes it again)
                check_db_name(db, dollar=True)
                if len(_VALID_DBS) >= _VALID_DBS_MAX:
                    _VALID_DBS.clear()
                _VALID_DBS.add(db)
            if "help" in cmd and cmd["help"] is True and all(key in GENERIC_ARGUMENTS for key in list(cmd)[1:]):
                return {"help": spec.help, "ok": 1.0}  # (mongod answers help before checkAuthorization)
            if enforcing:
                cmd = authorize(server, conn, spec.name, db, cmd)  # 13 Unauthorized; may narrow a listing
            if spec.counter is not None:
                server.opcounters[spec.counter] += 1
            if "writeConcern" in cmd and refuses_write_concern(spec.name, cmd):
                raise MongoError(ErrorCode.InvalidOptions, "Command does not support writeConcern")
            if "readConcern" in cmd or "writeConcern" in cmd:
                check_concerns(spec.name, cmd)  # a standalone refuses what needs a replica set (issue 13 A.4)
            failpoints = server.failpoints
            max_time_ms = _max_time_ms(cmd) if "maxTimeMS" in cmd else None
            if "apiVersion" not in cmd and server.params["requireApiVersion"]:  # (enforceRequireAPIVersion:
                # after authorization, help, maxTimeMS and the read concern)
                raise MongoError(498870, "The apiVersion parameter is required, please configure your "
                                         "MongoClient's API version")
            # currentOp's ``ns``: ``db.collection`` when the command names one, else ``db.$cmd``
            target = cmd.get("collection") if name == "getMore" else cmd.get(name)
            operations = server.operations
            op = operations.start(
                conn, spec.name, cmd, f"{db}.{target}" if type(target) is str and target else f"{db}.$cmd",
                started + max_time_ms / 1000 if max_time_ms else None, started,
            )
            token = interrupt.bind(op)
            try:
                if failpoints.active:
                    op.time_out_now = failpoints.time_out_now()
                    await _inject_failure(failpoints, spec, cmd, conn, op)
                ctx = CommandContext(server, conn, db, spec.name, lsid=lsid, op=op,
                                     request_bytes=request_bytes, sequence_ids=sequence_ids)
                if log.levels["COMMAND"] >= 2:  # logLevel / logComponentVerbosity (D2, as mongod)
                    log.debug(2, "COMMAND", 21965, "About to run the command", ctx=f"conn{conn.id}", db=db,
                              client=conn.peer, commandArgs=redact_command(cmd, spec.name)[0])
                if spec.name in WRITE_COMMANDS:  # (a writing aggregate waits in its handler, once parsed)
                    gate = server.fsync_lock  # fsync lock: writes wait, reads go on
                    await gate.enter(op)
                    try:
                        reply = await spec.handler(ctx, cmd)
                    finally:
                        gate.exit()
                else:
                    reply = await spec.handler(ctx, cmd)
            finally:
                interrupt.unbind(token)
                operations.finish(op)
            reply["ok"] = 1.0
            if failpoints.active:
                reply.update(failpoints.write_concern_error((spec.name, *spec.aliases), cmd, conn) or {})
        except CloseConnection:
            raise
        except Exception as exc:  # noqa: BLE001 - this is the one translation point
            # (an unknown command counts in metrics.commands.<UNKNOWN> only: mongod's opcounters count
            # a command once it is found and authorized, ParseAndRunCommand's gotCommand)
            reply = error_reply(exc, context=f"conn{conn.id}")
        elapsed = time.monotonic() - started - (ctx.paused if ctx is not None else 0.0)
        ok = reply.get("ok")
        if log.levels["COMMAND"] >= 1:  # (read now: a command that raised it logs its own line)
            log.debug(1, "COMMAND", 4615620, "Command finished", ctx=f"conn{conn.id}",
                      command=spec.name if spec else name, ok=ok,
                      durationMillis=int(elapsed * 1000))
        # (the $db the checks read, when they got that far)
        target_db = db if db is not None else cmd.get("$db")
        facts = ctx._facts if ctx is not None else None
        if spec is None:
            server.top.record_unknown(elapsed)
        elif type(target_db) is str:
            server.top.record(spec.name, cmd, target_db, elapsed)
            server.document_metrics.record(spec.name, reply, facts)
        # (the profiler's cheap test, read here: the one place it is made; ``finish`` decides the rest)
        profiler = server.profiler
        if (watching_at_start or profiler.watching or elapsed * 1000 > profiler.slowms) and type(target_db) is str:
            await profiler.finish(server, conn, target_db, spec.name if spec else name, cmd, reply,
                                         elapsed * 1000, facts)
        counts = server.command_counts.get(spec.name if spec is not None else "<UNKNOWN>")
        if counts is None:
            counts = server.command_counts[spec.name if spec is not None else "<UNKNOWN>"] = [0, 0]
        counts[0] += 1
        if ok != 1.0:
            counts[1] += 1
        if spec is not None and spec.name in _WRITE_REPLIES and ok == 1.0 and unacknowledged(cmd):
            return dict(_WRITE_REPLIES[spec.name])  # (a copy: the caller may add to it)
        return reply
