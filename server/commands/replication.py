"""What a standalone mongod answers to replica-set features: the replication commands, transactions,
change streams, and ``$listLocalSessions`` (sessions exist on a standalone too).

- ``replSetGetStatus``/``replSetGetConfig``/... -> 76 NoReplicationEnabled "not running with --replSet";
  ``replSetInitiate`` -> 76 "This node was not started with replication enabled." (mongosh's
  ``rs.status()``, ``rs.conf()``, ``rs.initiate()``).
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

from tidemark.auth.names import UserName, same_principal
from tidemark.context import CommandContext, CommandSpec
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.stage_list_sessions import parse_sessions_spec

NOT_REPLSET = "not running with --replSet"


async def not_running_with_repl_set(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    raise MongoError(ErrorCode.NoReplicationEnabled, NOT_REPLSET)


async def repl_set_initiate(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    raise MongoError(ErrorCode.NoReplicationEnabled, "This node was not started with replication enabled.")


def _transaction_command(name: str):
    async def handler(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
        # (with a transaction number: 20, dispatch's session checks)
        raise MongoError(ErrorCode.CommandFailed, f"{name} must be run within a transaction")

    return handler


def check_change_stream(pipeline: list) -> None:
    """40573 for ``watch()``: change streams need a replica set's oplog."""
    if pipeline and isinstance(pipeline[0], dict) and "$changeStream" in pipeline[0]:
        raise MongoError(40573, "The $changeStream stage is only supported on replica sets")


def is_list_local_sessions(pipeline: list) -> bool:
    return bool(pipeline) and isinstance(pipeline[0], dict) and "$listLocalSessions" in pipeline[0]


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
    CommandSpec("replSetGetConfig", not_running_with_repl_set,
                help="the replica set configuration (a standalone has none)", admin_only=True),
    CommandSpec("replSetGetStatus", not_running_with_repl_set,
                help="the replica set status (a standalone has none)", admin_only=True),
    CommandSpec("replSetInitiate", repl_set_initiate,
                help="initiate a replica set (refused: Tidemark is a standalone)", admin_only=True),
]
