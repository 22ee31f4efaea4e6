"""readConcern and writeConcern as a standalone mongod 7.0 checks them, before any command runs.

A standalone has no replica set: the levels and options that need one are refused with mongod's
codes instead of being silently ignored (a client asking for ``snapshot`` or ``w: 3`` must not be
told it got what it asked for).

- readConcern.level: local, available, majority are served (every acknowledged write is durable
  and visible); ``snapshot`` -> 123 NotAReplicaSet, ``linearizable`` -> 123; another value -> 9.
- readConcern.afterClusterTime / atClusterTime -> 20 IllegalOperation (no replication).
- writeConcern.w: 0, 1 and "majority" are served; a number above 1 -> 2 BadValue, outside 0..50 -> 9.
"""

from __future__ import annotations

from typing import Any

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.expr_base import type_name

__all__ = ["check_concerns"]

_LEVELS = ("local", "majority", "linearizable", "available", "snapshot")


def check_concerns(cmd: dict) -> None:
    """Raise like mongod for a readConcern/writeConcern a standalone cannot honour."""
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
        if not isinstance(level, str):
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


def _check_write_concern(wc: Any) -> None:
    if not isinstance(wc, dict):
        raise MongoError(ErrorCode.TypeMismatch,
                         f"BSON field 'writeConcern' is the wrong type '{type_name(wc)}', expected type 'object'")
    w = wc.get("w")
    if isinstance(w, bool) or w is None or isinstance(w, str):
        return
    if isinstance(w, (int, float)):
        n = int(w)
        if n < 0 or n > 50:
            raise MongoError(ErrorCode.FailedToParse,
                             f"w has to be a non-negative number and not greater than 50; found: {n}")
        if n > 1:
            raise MongoError(ErrorCode.BadValue, "cannot use 'w' > 1 on a standalone")
