"""readConcern and writeConcern as a standalone mongod 7.0 checks them, before any command runs.

A standalone has no replica set: the levels and options that need one are refused with mongod's
codes instead of being silently ignored (a client asking for ``snapshot`` or ``w: 3`` must not be
told it got what it asked for).

- readConcern.level: local, available, majority are served (every acknowledged write is durable
  and visible); ``snapshot`` -> 123 NotAReplicaSet, ``linearizable`` -> 123; another value -> 9.
- readConcern.afterClusterTime / atClusterTime -> 20 IllegalOperation (no replication).
- a transaction (``txnNumber``) -> 20 before either concern is looked at (dispatch, session checks).
- writeConcern is parsed as mongod's WriteConcernOptions (unknown field 40415, j/fsync not bool or
  number 14, w not a number, string or object of numbers 9, j and fsync both true 9); w: 0, 1,
  "majority" and tag documents are served; a number above 1 or another mode -> 2 BadValue, outside
  0..50 -> 9.
- a writeConcern on a command that takes none (mongod's ``supportsWriteConcern()`` false: find, count,
  distinct, getMore, an inline mapReduce, the reports) -> 72 InvalidOptions "Command does not support
  writeConcern", whatever it holds (``refuses_write_concern``). An aggregate takes one even when it
  only reads (jstests/core/aggregation_accepts_write_concern.js).
"""

from __future__ import annotations

from typing import Any

from bson.decimal128 import Decimal128

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.expr_base import type_name
from tidemark.query.expr_logic import truthy
from tidemark.query.value_repr import bson_repr
from tidemark.query.values import is_number

__all__ = ["check_concerns", "refuses_write_concern", "unacknowledged"]

_LEVELS = ("local", "majority", "linearizable", "available", "snapshot")


# Commands whose mongod 7.0 implementation answers supportsWriteConcern() false (they write nothing a
# client could wait for): a writeConcern on them is refused before it is parsed, as
# jstests/core/commands_that_do_not_write_do_not_accept_wc.js (find, distinct, count, mapReduce inline)
# and jstests/sharding/validate_commands_wc.js (ping, even with {}) check. The
# commands not listed here take one; where mongod's answer was not certain, the command is left out
# of this list (a writeConcern it ignores costs a client nothing, a refused one fails its call).
_TAKES_NO_WRITE_CONCERN = frozenset({
    "find", "getMore", "count", "distinct", "explain", "listCollections", "listIndexes", "listDatabases",
    "collStats", "dbStats", "dataSize", "dbHash", "validate", "validateDBMetadata", "ping", "hello", "isMaster",
    "buildInfo", "serverStatus", "hostInfo", "getCmdLineOpts", "getLog", "getParameter", "connectionStatus",
    "currentOp", "top", "usersInfo", "rolesInfo", "listCommands", "whatsmyuri", "features", "filemd5",
    "replSetGetStatus", "replSetGetConfig", "_isSelf", "startSession", "refreshSessions", "endSessions",
    "killSessions", "killAllSessions", "killAllSessionsByPattern", "saslStart", "saslContinue", "authenticate", "logout", "sleep",
    "waitForFailPoint", "getDefaultRWConcern", "connPoolStats", "shardingState", "lockInfo", "getClusterParameter",
    "planCacheClear", "planCacheClearFilters", "planCacheListFilters", "planCacheSetFilter",
    "invalidateUserCache", "clearLog", "dropConnections", "setUserWriteBlockMode", "rotateCertificates", "getDiagnosticData", "setProfilingFilterGlobally", "splitVector", "replSetFreeze", "replSetStepDown",
    "replSetStepUp", "replSetMaintenance", "replSetSyncFrom", "replSetAbortPrimaryCatchUp", "replSetReconfig",
    "replSetGetRBID", "replSetUpdatePosition", "replSetRequestVotes", "replSetHeartbeat",
    "setParameter", "echo", "cpuload", "reapLogicalSessionCacheNow", "refreshLogicalSessionCacheNow",
    "_hashBSONElement", "checkShardingIndex",
})


def refuses_write_concern(name: str, cmd: dict) -> bool:
    """Whether command ``name`` (canonical) refuses any ``writeConcern`` with 72, as mongod's
    uassertCommandDoesNotSpecifyWriteConcern: a mapReduce without ``out`` or with ``out: {inline: ...}``
    (mongod's mrSupportsWriteConcern), and the commands above."""
    if name == "mapReduce":
        out = cmd.get("out")
        return out is None or (isinstance(out, dict) and "inline" in out)
    return name in _TAKES_NO_WRITE_CONCERN


def unacknowledged(cmd: dict) -> bool:
    """mongod's shouldSkipOutput: the command's writeConcern (a valid one: ``check_concerns`` ran) is
    unacknowledged (``w: 0``) and asks no sync (``j`` and ``fsync`` not true)."""
    wc = cmd.get("writeConcern")
    if type(wc) is not dict:
        return False
    w = wc.get("w")
    if isinstance(w, bool) or not is_number(w):
        return False
    return ((w.to_decimal() if isinstance(w, Decimal128) else w) == 0 and not truthy(wc.get("j", False))
            and not truthy(wc.get("fsync", False)))


def check_concerns(cmd: dict) -> None:
    """Raise like mongod for a readConcern/writeConcern a standalone cannot honour. (A transaction was
    refused before (20, dispatch's session checks), as mongod's initializeOperationSessionInfo runs
    before the concerns are read: a transaction with readConcern snapshot is 20, not 123.)"""
    read = cmd.get("readConcern")
    if read is not None:
        _check_read_concern(read)
    write = cmd.get("writeConcern")
    if write is not None:
        _check_write_concern(write)


def _check_read_concern(rc: Any) -> None:
    if not isinstance(rc, dict):
        raise MongoError(ErrorCode.TypeMismatch,
                         f"BSON field 'readConcern' is the wrong type '{type_name(rc)}', expected type 'object'")
    level = rc.get("level")
    if level is not None:
        if type(level) is not str:
            raise MongoError(ErrorCode.TypeMismatch,
                             f"BSON field 'readConcern.level' is the wrong type '{type_name(level)}', "
                             "expected type 'string'")
        if level not in _LEVELS:
            raise MongoError(ErrorCode.FailedToParse,
                             "readConcern.level must be either 'local', 'majority', 'linearizable', 'available', "
                             "or 'snapshot'")
        if level == "snapshot":
            raise MongoError(ErrorCode.NotAReplicaSet,
                             "node needs to be a replica set member to use readConcern: snapshot")
        if level == "linearizable":
            raise MongoError(ErrorCode.NotAReplicaSet, "node needs to be a replica set member to use read concern")
    for option in ("afterClusterTime", "atClusterTime"):
        if option in rc:
            raise MongoError(ErrorCode.IllegalOperation,
                             f"Cannot specify {option} readConcern without replication enabled")


# WriteConcernIdl's fields (strict: another is 40415); wElectionId, wOpTime and getLastError are
# accepted and ignored, as mongod does for old clients
_WRITE_CONCERN_FIELDS = frozenset({"w", "j", "wtimeout", "fsync", "wElectionId", "wOpTime", "getLastError",
                                   "provenance"})
_SAFE_BOOL_TYPES = "[bool, long, int, decimal, double]"


def _check_write_concern(wc: Any) -> None:
    """mongod 7.0's WriteConcernOptions::parse (its IDL, then its own checks), then validateWriteConcern
    on a standalone. An empty document is the default write concern."""
    if not isinstance(wc, dict):
        raise MongoError(ErrorCode.TypeMismatch,
                         f"BSON field 'writeConcern' is the wrong type '{type_name(wc)}', expected type 'object'")
    for key, value in wc.items():
        if key not in _WRITE_CONCERN_FIELDS:
            raise MongoError(ErrorCode.IDLUnknownField, f"BSON field 'WriteConcernOptions.{key}' is an unknown field.")
        if key in ("j", "fsync") and not (isinstance(value, bool) or is_number(value)):
            raise MongoError(ErrorCode.TypeMismatch, f"BSON field 'WriteConcernOptions.{key}' is the wrong type "
                                                     f"'{type_name(value)}', expected types '{_SAFE_BOOL_TYPES}'")
    w = wc.get("w")
    if w is not None and type(w) is not str and not is_number(w):
        if type(w) is not dict:
            raise MongoError(ErrorCode.FailedToParse, f"w has to be a number, string, or object; found: {type_name(w)}")
        if not w:
            raise MongoError(ErrorCode.FailedToParse, "tagged write concern requires tags")
        for tag, count in w.items():
            if not is_number(count):
                raise MongoError(ErrorCode.FailedToParse, "tags must be a single level document with only number "
                                                          f"values; found: {tag}: {bson_repr(count)}")
    if is_number(w):
        n = _w_count(w)
        if n < 0 or n > 50:
            raise MongoError(ErrorCode.FailedToParse,
                             f"w has to be a non-negative number and not greater than 50; found: {n}")
    if truthy(wc.get("j", False)) and truthy(wc.get("fsync", False)):
        raise MongoError(ErrorCode.FailedToParse, "fsync and j options cannot be used together")
    # validateWriteConcern: what a standalone cannot do
    if is_number(w) and _w_count(w) > 1:
        raise MongoError(ErrorCode.BadValue, "cannot use 'w' > 1 when a host is not replicated")
    if type(w) is str and w != "majority":
        raise MongoError(ErrorCode.BadValue,
                         f'cannot use non-majority \'w\' mode "{w}" when a host is not a member of a replica set')


def _w_count(w: Any) -> int:
    """``w``'s number as mongod's safeNumberLong reads it (truncated; NaN is 0)."""
    value = float(w.to_decimal()) if isinstance(w, Decimal128) else float(w)
    if value != value:
        return 0
    return int(max(min(value, 2.0**63 - 1), -(2.0**63)))
