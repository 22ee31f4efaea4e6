"""readConcern and writeConcern as a standalone mongod 7.0 checks them, before any command runs.

A standalone has no replica set: the levels and options that need one are refused with mongod's
codes instead of being silently ignored (a client asking for ``snapshot`` or ``w: 3`` must not be
told it got what it asked for).

- readConcern is parsed as ReadConcernArgs::parse (a non-object 9, or 14 where the command's IDL
  declares it; an unknown field 72; a field of the wrong BSON type 14 in bsonExtract's words; the
  fields' combinations 72), then the command's supportsReadConcern (a level it does not take -> 72
  "Command insert does not support { readConcern: ... }"), then waitForReadConcern on a standalone:
  local, available, majority are served (every acknowledged write is durable and visible);
  ``snapshot``, ``linearizable`` and ``afterOpTime`` -> 123 NotAReplicaSet; ``afterClusterTime`` /
  ``atClusterTime`` -> 20 IllegalOperation (no replication).
- a transaction (``txnNumber``) -> 20 before either concern is looked at (dispatch, session checks).
- writeConcern is parsed as mongod's WriteConcernOptions (not an object 14, unknown field 40415, j/fsync
  not bool or number 14, provenance not one of the enum's 14/2, w not a number, string or object of
  numbers 9 — each at its place in the document — then j and fsync both true 9); w: 0, 1,
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
from bson.timestamp import Timestamp

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.expr_base import type_name
from tidemark.query.expr_logic import truthy
from tidemark.query.value_repr import bson_repr
from tidemark.query.values import is_number

__all__ = ["check_concerns", "refuses_write_concern", "unacknowledged"]

_LEVELS = ("local", "majority", "linearizable", "available", "snapshot")
_ABSENT = object()


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


def check_concerns(name: str, cmd: dict) -> None:
    """Raise like mongod for a readConcern/writeConcern a standalone cannot honour. (A transaction was
    refused before (20, dispatch's session checks), as mongod's initializeOperationSessionInfo runs
    before the concerns are read: a transaction with readConcern snapshot is 20, not 123.)"""
    read = cmd.get("readConcern", _ABSENT)
    if read is not _ABSENT:
        _check_read_concern(name, read)
    write = cmd.get("writeConcern", _ABSENT)
    if write is not _ABSENT:
        _check_write_concern(name, write)


# mongod 7.0's IDLs that declare ``readConcern`` as an object field (find_command.idl,
# aggregate_command.idl, count_command.idl): their parse meets a non-object first, with the IDL's words.
# Every other command reads it as a generic argument: ReadConcernArgs::initialize's 9.
_IDL_DECLARES_READ_CONCERN = frozenset({"find", "aggregate", "count"})

# The levels a command's supportsReadConcern accepts, where it is not every level (find, aggregate,
# count, distinct and the commands not listed: Tidemark refuses no level mongod might serve). mongod's
# default (Command::supportsReadConcern) is "local" only; the write commands add "snapshot" (for a
# transaction's statements), mapReduce "available" (MapReduceCommandBase). Another level ->
# 72 "Command <name> does not support { readConcern: ... } :: caused by :: read concern not supported".
_LOCAL = frozenset({"local"})
_LOCAL_SNAPSHOT = frozenset({"local", "snapshot"})
_READ_CONCERN_LEVELS: dict[str, frozenset[str]] = {
    "insert": _LOCAL_SNAPSHOT, "update": _LOCAL_SNAPSHOT, "delete": _LOCAL_SNAPSHOT,
    "findAndModify": _LOCAL_SNAPSHOT, "mapReduce": frozenset({"local", "available"}),
    "hello": _LOCAL, "isMaster": _LOCAL, "ping": _LOCAL, "create": _LOCAL, "drop": _LOCAL,
    "createIndexes": _LOCAL, "dropIndexes": _LOCAL, "collMod": _LOCAL, "renameCollection": _LOCAL,
    "dropDatabase": _LOCAL,
}

_PROVENANCES = ("clientSupplied", "implicitDefault", "customDefault", "getLastErrorDefaults",
                "internalWriteDefault")


def _check_read_concern(name: str, rc: Any) -> None:
    """mongod 7.0's order: ReadConcernArgs::parse (each field in document order, then the fields'
    combinations), the command's supportsReadConcern (_extractReadConcern), then waitForReadConcern on
    a standalone (linearizable and snapshot 123, a cluster time 20, afterOpTime 123)."""
    if not isinstance(rc, dict):
        if name in _IDL_DECLARES_READ_CONCERN:
            raise MongoError(ErrorCode.TypeMismatch, f"BSON field '{name}.readConcern' is the wrong type "
                                                     f"'{type_name(rc)}', expected type 'object'")
        raise MongoError(ErrorCode.FailedToParse, "readConcern field should be an object")
    parsed = _parse_read_concern(rc)
    level = parsed.get("level")
    supported = _READ_CONCERN_LEVELS.get(name)
    if level is not None and supported is not None and level not in supported:
        shown = bson_repr({"readConcern": {**parsed, "provenance": rc.get("provenance", "clientSupplied")}})
        raise MongoError(ErrorCode.InvalidOptions,
                         f"Command {name} does not support {shown} :: caused by :: read concern not supported")
    # waitForReadConcern: a standalone has no replica set to be linearizable, to hold snapshots at a
    # cluster time or to wait for an optime
    if level == "linearizable":
        raise MongoError(ErrorCode.NotAReplicaSet, "node needs to be a replica set member to use read concern")
    if level == "snapshot":
        raise MongoError(ErrorCode.NotAReplicaSet,
                         "node needs to be a replica set member to use readConcern: snapshot")
    for option in ("afterClusterTime", "atClusterTime"):
        if option in parsed:
            raise MongoError(ErrorCode.IllegalOperation,
                             f"Cannot specify {option} readConcern without replication enabled")
    if "afterOpTime" in parsed:
        raise MongoError(ErrorCode.NotAReplicaSet, "node needs to be a replica set member to use read concern")


def _parse_read_concern(rc: dict) -> dict[str, Any]:
    """ReadConcernArgs::parse: the fields it read, in mongod's toString order (level, afterOpTime,
    afterClusterTime, atClusterTime), or its error (bsonExtract*Field's words for a wrong type)."""
    found: dict[str, Any] = {}
    for key, value in rc.items():
        if key == "afterOpTime":
            _expect(key, value, dict, "object")
            ts = value.get("ts", _ABSENT)
            if ts is _ABSENT:
                raise MongoError(ErrorCode.NoSuchKey, 'Missing expected field "ts"')
            _expect("ts", ts, Timestamp, "timestamp")
            term = value.get("t", _ABSENT)
            if term is _ABSENT:
                raise MongoError(ErrorCode.NoSuchKey, 'Missing expected field "t"')
            if isinstance(term, bool) or not is_number(term):
                raise MongoError(ErrorCode.TypeMismatch,
                                 f'Expected field "t" to have numeric type, but found {type_name(term)}')
            found[key] = {"ts": ts, "t": term}
        elif key in ("afterClusterTime", "atClusterTime"):
            _expect(key, value, Timestamp, "timestamp")
            found[key] = value
        elif key == "level":
            _expect(key, value, str, "string")
            if value not in _LEVELS:
                raise MongoError(ErrorCode.FailedToParse,
                                 "readConcern.level must be either 'local', 'majority', 'linearizable', "
                                 "'available', or 'snapshot'")
            found[key] = value
        elif key == "allowTransactionTableSnapshot":
            _expect(key, value, bool, "bool")
        elif key == "provenance":
            _check_provenance("ReadConcernArgs::parse", value)
        else:
            raise MongoError(ErrorCode.InvalidOptions, f"Unrecognized option in readConcern: {key}")
    level = found.get("level", "local")
    if "afterClusterTime" in found and "afterOpTime" in found:
        raise MongoError(ErrorCode.InvalidOptions, "Can not specify both afterClusterTime and afterOpTime")
    if "afterClusterTime" in found and "atClusterTime" in found:
        raise MongoError(ErrorCode.InvalidOptions,
                         "Specifying a timestamp for readConcern snapshot in a causally consistent session is not "
                         "allowed. See https://docs.mongodb.com/manual/core/read-isolation-consistency-recency/"
                         "#causal-consistency")
    if "afterClusterTime" in found and level not in ("majority", "local", "snapshot"):
        raise MongoError(ErrorCode.InvalidOptions,
                         "afterClusterTime field can be set only if level is equal to majority, local, or snapshot")
    if "afterOpTime" in found and level == "snapshot":
        raise MongoError(ErrorCode.InvalidOptions, "afterOpTime field cannot be set if level is equal to snapshot")
    if "atClusterTime" in found and level != "snapshot":
        raise MongoError(ErrorCode.InvalidOptions, "atClusterTime field can be set only if level is equal to snapshot")
    if "atClusterTime" in found and found["atClusterTime"] == Timestamp(0, 0):
        raise MongoError(ErrorCode.InvalidOptions, "atClusterTime cannot be a null timestamp")
    if "afterClusterTime" in found and found["afterClusterTime"] == Timestamp(0, 0):
        raise MongoError(ErrorCode.InvalidOptions, "afterClusterTime cannot be a null timestamp")
    return {key: found[key] for key in ("level", "afterOpTime", "afterClusterTime", "atClusterTime") if key in found}


def _check_provenance(context: str, value: Any) -> None:
    """The IDL enum ReadWriteConcernProvenanceSource, read under ``context`` (the parser's name)."""
    if type(value) is not str:
        raise MongoError(ErrorCode.TypeMismatch, f"BSON field '{context}.provenance' is the wrong type "
                                                 f"'{type_name(value)}', expected type 'string'")
    if value not in _PROVENANCES:
        raise MongoError(ErrorCode.BadValue,
                         f"Enumeration value '{value}' for field '{context}.provenance' is not a valid value.")


def _expect(field: str, value: Any, kind: type, kind_name: str) -> None:
    """bsonExtractTypedField's check of one field's BSON type."""
    if type(value) is not kind:
        raise MongoError(ErrorCode.TypeMismatch,
                         f'"{field}" had the wrong type. Expected {kind_name}, found {type_name(value)}')


# WriteConcernIdl's fields (strict: another is 40415); wElectionId, wOpTime and getLastError are
# accepted and ignored, as mongod does for old clients
_WRITE_CONCERN_FIELDS = frozenset({"w", "j", "wtimeout", "fsync", "wElectionId", "wOpTime", "getLastError",
                                   "provenance"})
_SAFE_BOOL_TYPES = "[bool, long, int, decimal, double]"


def _check_write_concern(name: str, wc: Any) -> None:
    """mongod 7.0's extractWCFromCommand (an object: the aggregate IDL's words, bsonExtractTypedField's
    elsewhere), WriteConcernOptions::parse (its IDL, then its own checks), then validateWriteConcern on
    a standalone. An empty document is the default write concern."""
    if not isinstance(wc, dict):
        if name == "aggregate":
            raise MongoError(ErrorCode.TypeMismatch, "BSON field 'aggregate.writeConcern' is the wrong type "
                                                     f"'{type_name(wc)}', expected type 'object'")
        _expect("writeConcern", wc, dict, "object")
    for key, value in wc.items():
        if key not in _WRITE_CONCERN_FIELDS:
            raise MongoError(ErrorCode.IDLUnknownField, f"BSON field 'WriteConcernOptions.{key}' is an unknown field.")
        if key in ("j", "fsync") and not (isinstance(value, bool) or is_number(value)):
            raise MongoError(ErrorCode.TypeMismatch, f"BSON field 'WriteConcernOptions.{key}' is the wrong type "
                                                     f"'{type_name(value)}', expected types '{_SAFE_BOOL_TYPES}'")
        if key == "provenance":
            _check_provenance("WriteConcernOptions", value)
        if key == "w":
            _check_w(value)  # (the IDL's deserializer, at the field's place in the document)
    w = wc.get("w")
    if truthy(wc.get("j", False)) and truthy(wc.get("fsync", False)):
        raise MongoError(ErrorCode.FailedToParse, "fsync and j options cannot be used together")
    # validateWriteConcern: what a standalone cannot do
    if is_number(w) and _w_count(w) > 1:
        raise MongoError(ErrorCode.BadValue, "cannot use 'w' > 1 when a host is not replicated")
    if type(w) is str and w != "majority":
        raise MongoError(ErrorCode.BadValue,
                         f'cannot use non-majority \'w\' mode "{w}" when a host is not a member of a replica set')


def _check_w(w: Any) -> None:
    """deserializeWriteConcernW: a number in 0..50, a string, a document of tag counts; null is unset."""
    if is_number(w):
        n = _w_count(w)
        if n < 0 or n > 50:
            raise MongoError(ErrorCode.FailedToParse,
                             f"w has to be a non-negative number and not greater than 50; found: {n}")
    elif type(w) is dict:
        if not w:
            raise MongoError(ErrorCode.FailedToParse, "tagged write concern requires tags")
        for tag, count in w.items():
            if not is_number(count):
                raise MongoError(ErrorCode.FailedToParse, "tags must be a single level document with only number "
                                                          f"values; found: {tag}: {bson_repr(count)}")
    elif w is not None and type(w) is not str:
        raise MongoError(ErrorCode.FailedToParse, f"w has to be a number, string, or object; found: {type_name(w)}")


def _w_count(w: Any) -> int:
    """``w``'s number as mongod's safeNumberLong reads it (truncated; NaN is 0)."""
    value = float(w.to_decimal()) if isinstance(w, Decimal128) else float(w)
    if value != value:
        return 0
    return int(max(min(value, 2.0**63 - 1), -(2.0**63)))
