"""What a standalone mongod answers to replica-set features: the replication commands, transactions,
change streams, and ``$listLocalSessions`` (sessions exist on a standalone too).

- ``replSetGetStatus``/``replSetGetConfig``/... -> 76 NoReplicationEnabled "not running with --replSet";
  ``replSetInitiate`` -> 76 "This node was not started with replication enabled." (mongosh's
  ``rs.status()``, ``rs.conf()``, ``rs.initiate()``).
- the other ReplSetCommands (repl_set_commands.cpp, admin only, refused before their arguments are
  read by checkReplEnabledForCommand): replSetFreeze, replSetStepDown, replSetStepUp,
  replSetMaintenance, replSetSyncFrom, replSetAbortPrimaryCatchUp (replSetStateChange),
  replSetReconfig (replSetConfigure), replSetGetRBID, replSetUpdatePosition, replSetRequestVotes
  (internal) -> 76 "not running with --replSet"; replSetHeartbeat (internal) -> 76 "not running using
  replication" (its own isReplEnabled check). mongosh's ``rs.stepDown()``, ``rs.freeze()``,
  ``rs.reconfig()``, ``rs.syncFrom()`` get what a standalone mongod answers.
- ``appendOplogNote`` (admin, cluster action appendOplogNote) -> 76 "Must have replication set up to
  run \"appendOplogNote\"" before its arguments are looked at (oplog_note.cpp: the replication check
  comes first).
- ``setIndexCommitQuorum`` (set_index_commit_quorum.idl; createIndex on the collection): parsed as its
  IDL (unknown field 40415, ``indexNames`` an array of strings and ``commitQuorum`` required 40414,
  wrong types 14, a commitQuorum as CommitQuorumOptions parses it: 9), then
  IndexBuildsCoordinator::setCommitQuorum's answers: no index names 27, no such collection 26 (a view
  166), otherwise 27 "Cannot find an index build ... with the provided index names" — Tidemark builds
  an index within its createIndexes command, so no build is ever in progress to change.
- ``commitTransaction``/``abortTransaction`` (admin): with a transaction number, 20 IllegalOperation
  "Transaction numbers are only allowed on a replica set member or mongos"; without, 125
  CommandFailed "... must be run within a transaction" — as mongod 7.0 standalone.
- an aggregation starting with ``$changeStream`` (``watch()``) -> 40573 "The $changeStream stage is only
  supported on replica sets".
- ``$listLocalSessions`` (``{aggregate: 1}`` only) lists ``tidemark.session_cache`` records.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tidemark.arguments import check_fields, field, missing, safe_number_long, wrong_type
from tidemark.auth.names import UserName, same_principal
from tidemark.context import CommandContext, CommandSpec
from tidemark.core import collection as C
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.stage_list_sessions import parse_sessions_spec
from tidemark.query.values import is_number

NOT_REPLSET = "not running with --replSet"


async def not_running_with_repl_set(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    raise MongoError(ErrorCode.NoReplicationEnabled, NOT_REPLSET)


async def repl_set_heartbeat(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    raise MongoError(ErrorCode.NoReplicationEnabled, "not running using replication")


async def repl_set_initiate(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    raise MongoError(ErrorCode.NoReplicationEnabled, "This node was not started with replication enabled.")


async def append_oplog_note(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    raise MongoError(ErrorCode.NoReplicationEnabled, 'Must have replication set up to run "appendOplogNote"')


_MAX_MEMBERS = 50  # mongod's ReplSetConfig::kMaxMembers: the largest numeric commitQuorum


def _check_commit_quorum(value: Any) -> None:
    """mongod's CommitQuorumOptions::deserializerFromBSON: a number in 0..50 or a non-empty string."""
    if is_number(value) and not isinstance(value, bool):
        if not 0 <= safe_number_long(value) <= _MAX_MEMBERS:
            raise MongoError(ErrorCode.FailedToParse,
                             f"commitQuorum has to be a non-negative number and not greater than {_MAX_MEMBERS}")
    elif type(value) is str:
        if not value:
            raise MongoError(ErrorCode.FailedToParse, "commitQuorum can't be an empty string")
    else:
        raise MongoError(ErrorCode.FailedToParse, "commitQuorum has to be a number or a string")


async def set_index_commit_quorum(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    name = C.collection_arg(cmd, "setIndexCommitQuorum")
    check_fields(cmd, "setIndexCommitQuorum", {"indexNames", "commitQuorum"})
    names = field(cmd, "setIndexCommitQuorum", "indexNames", list, "array", required=True)
    for i, index_name in enumerate(names):
        if type(index_name) is not str:
            raise wrong_type(f"setIndexCommitQuorum.indexNames.{i}", index_name, "string")
    if "commitQuorum" not in cmd:
        raise missing("setIndexCommitQuorum.commitQuorum")
    _check_commit_quorum(cmd["commitQuorum"])
    ns = C.ns_of(ctx.db, name)
    if not names:
        raise MongoError(ErrorCode.IndexNotFound, f"Cannot set a new commit quorum on an index build in collection "
                                                  f"'{ns}' without providing any indexes.")

    def inspect():
        with ctx.server.engine.read() as r:
            return r.get_collection(ns), C.get_view(r, ctx.db, name)

    info, view = await ctx.run_blocking(inspect)
    if view is not None:
        raise C.view_write_error(ctx.db, name)
    if info is None:
        raise MongoError(ErrorCode.NamespaceNotFound, f"Collection '{ns}' was not found.")
    # (createIndexes builds within the command: no build of these indexes can be in progress)
    raise MongoError(ErrorCode.IndexNotFound,
                     f"Cannot find an index build on collection '{ns}' with the provided index names")


def _transaction_command(name: str):
    async def handler(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
        # (with a transaction number: 20, dispatch's session checks)
        raise MongoError(ErrorCode.CommandFailed, f"{name} must be run within a transaction")

    return handler


def check_leading_stage(pipeline: list) -> bool:
    """The leading stages served here, not by a collection: 40573 for ``watch()`` (change streams need a
    replica set's oplog); True when the pipeline starts with ``$listLocalSessions`` (this server's
    session cache). One call per aggregate, a plain dict stage costing no further one."""
    if not pipeline:
        return False
    first = pipeline[0]
    if type(first) is not dict and not isinstance(first, dict):
        return False
    if "$changeStream" in first:
        raise MongoError(40573, "The $changeStream stage is only supported on replica sets")
    return "$listLocalSessions" in first


def check_change_stream(pipeline: list) -> None:
    """40573 for ``watch()`` (explain's check: :func:`check_leading_stage`)."""
    check_leading_stage(pipeline)


def local_sessions(ctx: CommandContext, spec: Any) -> Iterator[dict]:
    """The documents of a leading ``$listLocalSessions`` stage (after mongod's spec checks)."""
    all_users, users = parse_sessions_spec("$listLocalSessions", spec)
    if all_users:
        wanted = None
    elif users:
        names = {UserName(user, db) for user, db in users}
        wanted = lambda owner: owner is not None and owner.name in names  # noqa: E731
    else:  # the caller's own sessions (without a user: the sessions used without one)
        me = ctx.conn.principal
        wanted = (lambda owner: owner is None) if me is None else (lambda owner: same_principal(owner, me))
    return iter(ctx.server.sessions.records(wanted))


COMMANDS = [
    CommandSpec("abortTransaction", _transaction_command("abortTransaction"),
                help="abort a multi-document transaction (a standalone has none)", admin_only=True),
    CommandSpec("commitTransaction", _transaction_command("commitTransaction"),
                help="commit a multi-document transaction (a standalone has none)", admin_only=True),
    CommandSpec("appendOplogNote", append_oplog_note, admin_only=True,
                help="Adds a no-op entry to the oplog (needs a replica set)"),
    CommandSpec("setIndexCommitQuorum", set_index_commit_quorum,
                help="Resets the commitQuorum for the given index builds in a collection (none is ever in "
                     "progress here: createIndexes builds within the command)"),
    CommandSpec("replSetGetConfig", not_running_with_repl_set,
                help="the replica set configuration (a standalone has none)", admin_only=True),
    CommandSpec("replSetGetStatus", not_running_with_repl_set,
                help="the replica set status (a standalone has none)", admin_only=True),
    CommandSpec("replSetInitiate", repl_set_initiate,
                help="initiate a replica set (refused: Tidemark is a standalone)", admin_only=True),
    CommandSpec("replSetHeartbeat", repl_set_heartbeat, help="internal (needs a replica set)", admin_only=True),
    *(CommandSpec(name, not_running_with_repl_set, help=text, admin_only=True) for name, text in (
        ("replSetAbortPrimaryCatchUp", "abort primary catch-up mode (needs a replica set)"),
        ("replSetFreeze", "{ replSetFreeze : <seconds> }: keep this member from seeking election (needs a replica set)"),
        ("replSetGetRBID", "internal: the rollback id (needs a replica set)"),
        ("replSetMaintenance", "{ replSetMaintenance : bool }: maintenance mode (needs a replica set)"),
        ("replSetReconfig", "change the replica set configuration (needs a replica set)"),
        ("replSetRequestVotes", "internal: an election's vote request (needs a replica set)"),
        ("replSetStepDown", "{ replSetStepDown : <seconds> }: step down as primary (needs a replica set)"),
        ("replSetStepUp", "seek election as primary (needs a replica set)"),
        ("replSetSyncFrom", "{ replSetSyncFrom : \"host:port\" }: change the sync source (needs a replica set)"),
        ("replSetUpdatePosition", "internal: a secondary's replication progress (needs a replica set)"),
    )),
]
