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

from decimal import ROUND_HALF_EVEN
from typing import Any

from bson.code import Code
from bson.decimal128 import Decimal128

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.expr_base import type_name

__all__ = ["GENERIC_ARGUMENTS", "check_fields", "missing", "wrong_type", "extract_wrong_type", "field"]

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


def extract_wrong_type(name: str, value: Any, expected: str) -> MongoError:
    """14 TypeMismatch as mongod's bsonExtractTypedField words it (commands that read a field without
    the IDL parser): ``"name" had the wrong type. Expected string, found int``."""
    return MongoError(ErrorCode.TypeMismatch,
                      f"\"{name}\" had the wrong type. Expected {expected}, found {type_name(value)}")


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


_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def scale_arg(spec: dict | None) -> int:
    """The ``scale`` of collStats / ``$collStats.storageStats`` as mongod's IDL reads a ``safeInt``
    (``BSONElement::safeNumberInt``): any number, NaN as 0, a double truncated toward zero, a decimal
    rounded half to even, out-of-range values clamped (to the long range, then the int range) — so
    ``Number.MAX_VALUE`` is 2147483647, and every scaled size fits a long; then at least 1."""
    scale = (spec or {}).get("scale", 1)
    if isinstance(scale, bool) or not isinstance(scale, (int, float, Decimal128)):
        raise MongoError(ErrorCode.BadValue, "scale has to be > 0")
    n = safe_number_int(scale)
    if n < 1:
        raise MongoError(ErrorCode.BadValue, "scale has to be > 0")
    return n


def safe_number_long(value: int | float | Decimal128) -> int:
    """``BSONElement::safeNumberLong`` of a number, as mongod's IDL reads a ``safeInt64`` (a pure
    conversion: never raises): NaN is 0, a double truncated toward zero, a decimal rounded half to
    even, values past the long range (infinities too) clamped to it."""
    if isinstance(value, Decimal128):
        d = value.to_decimal()
        return 0 if d.is_nan() else _INT64_MAX if d > _INT64_MAX else _INT64_MIN if d < _INT64_MIN \
            else int(d.to_integral_value(rounding=ROUND_HALF_EVEN))
    if isinstance(value, float):
        return 0 if value != value else _INT64_MAX if value >= 2.0**63 else _INT64_MIN if value < -(2.0**63) \
            else int(value)
    return min(max(int(value), _INT64_MIN), _INT64_MAX)


def safe_number_int(value: int | float | Decimal128) -> int:
    """``BSONElement::safeNumberInt`` of a number (a pure conversion: never raises): the long reading,
    clamped to the int range."""
    return min(max(safe_number_long(value), _INT32_MIN), _INT32_MAX)
