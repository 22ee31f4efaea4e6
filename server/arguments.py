"""Command arguments checked the way mongod's IDL parser checks them: the one place for its messages.

- an unknown field: 40415 IDLUnknownField "BSON field 'createUser.foo' is an unknown field."
  (generic arguments such as ``$db``, ``lsid`` or ``comment`` are always allowed);
- a missing required field: 40414 IDLFailedToParse "BSON field 'getMore.collection' is missing but a
  required field";
- a value of the wrong type: 14 TypeMismatch "BSON field 'createUser.roles' is the wrong type
  'string', expected type 'array'" (or "expected types '[long, int, decimal, double]'"). Type names
  are BSON's ($type names), never Python's.
"""

from __future__ import annotations

from typing import Any

from bson.code import Code

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.expr_base import type_name

__all__ = ["GENERIC_ARGUMENTS", "check_fields", "missing", "wrong_type", "field"]

# Arguments any command may carry that are not parameters of the command itself (mongod's
# "generic arguments"). Handlers that reject unknown fields must ignore these.
GENERIC_ARGUMENTS = frozenset(
    {
        "$db",
        "lsid",
        "txnNumber",
        "autocommit",
        "startTransaction",
        "stmtId",
        "$clusterTime",
        "$readPreference",
        "readConcern",
        "writeConcern",
        "maxTimeMS",
        "comment",
        "apiVersion",
        "apiStrict",
        "apiDeprecationErrors",
        "$audit",
        "$client",
        "$configServerState",
        "$gleStats",
        "$oplogQueryData",
        "$replData",
        "clientOperationKey",
        "mayBypassWriteBlocking",
        "help",
        "backpressure",
    }
)


def check_fields(cmd: dict, command: str, allowed: set[str]) -> None:
    """Refuse a field (after the command name) that is neither ``allowed`` nor generic."""
    for key in list(cmd)[1:]:
        if key not in allowed and key not in GENERIC_ARGUMENTS:
            raise MongoError(ErrorCode.IDLUnknownField, f"BSON field '{command}.{key}' is an unknown field.")


def missing(path: str) -> MongoError:
    return MongoError(ErrorCode.IDLFailedToParse, f"BSON field '{path}' is missing but a required field")


def wrong_type(path: str, value: Any, expected: str | tuple[str, ...]) -> MongoError:
    """``expected`` is one BSON type name, or several (mongod lists them as ``'[long, int]'``)."""
    wanted = f"type '{expected}'" if type(expected) is str else f"types '[{', '.join(expected)}]'"
    return MongoError(ErrorCode.TypeMismatch,
                      f"BSON field '{path}' is the wrong type '{type_name(value)}', expected {wanted}")


def of_kind(value: Any, kind: Any) -> bool:
    """Whether ``value`` is an argument of ``kind`` (a type, union or tuple) as an IDL field's BSON type
    goes: a bool only when ``kind`` is bool; never a JavaScript value (bson's Code is a str subclass,
    but no BSON string)."""
    if isinstance(value, bool):
        return kind is bool
    return isinstance(value, kind) and not isinstance(value, Code)


def field(cmd: dict, command: str, name: str, kind: type | tuple[type, ...], expected: str | tuple[str, ...],
          *, required: bool = False) -> Any:
    """``cmd[name]`` when it is an instance of ``kind`` (a bool only when ``kind`` is bool); None when
    absent and not ``required``."""
    if name not in cmd:
        if required:
            raise missing(f"{command}.{name}")
        return None
    value = cmd[name]
    if not of_kind(value, kind):
        raise wrong_type(f"{command}.{name}", value, expected)
    return value
