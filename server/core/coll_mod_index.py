"""``collMod``'s ``index`` argument, parsed as mongod 7.0 parses it for every collection kind (its strict
``CollModIndex`` IDL struct, then the checks of ``parseCollModRequest`` that need no index): one parse
for regular collections (``commands/ddl``) and time-series collections (``timeseries/collmod``), which
then apply their own rules.

- fields in document order: an unknown one is 40415 ``BSON field 'collMod.index.<f>' is an unknown
  field.``; ``name`` not a string, ``keyPattern`` not an object, ``expireAfterSeconds`` not a number
  (safeInt64) or a flag not a bool or number (safeBool) is 14 with the IDL's message; null is absent;
- both ``name`` and ``keyPattern``: 72 "Cannot specify both key pattern and name."; neither: 72
  "Must specify either index name or key pattern."; no change asked: 72 "no expireAfterSeconds, hidden,
  unique, or prepareUnique field"; ``unique`` with ``forceNonUnique``: 72.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from bson.decimal128 import Decimal128

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.expr_base import type_name
from tidemark.query.expr_logic import truthy
from tidemark.query.values import is_number

__all__ = ["CollModIndex", "parse_coll_mod_index", "ttl_seconds"]

_SAFE_BOOL = "[bool, long, int, decimal, double]"
_SAFE_INT64 = "[long, int, decimal, double]"
_FLAGS = ("hidden", "unique", "prepareUnique", "forceNonUnique")
# index_key_validate.cpp's bounds: a secondary TTL index's seconds fit an int32; a clustered
# collection's (a time-series or clustered collection's own expireAfterSeconds) stay below 2^62
MAX_INDEX_TTL_SECONDS = 2**31 - 1
MAX_CLUSTERED_TTL_SECONDS = 2**62 - 1


@dataclass(frozen=True)
class CollModIndex:
    """One ``collMod.index``: the index (by ``name`` or ``key_pattern``, exactly one) and what changes
    (None: not asked; a flag's value is its truth as mongod's safeBool reads it)."""

    name: str | None
    key_pattern: dict[str, Any] | None
    expire_after_seconds: int | None
    hidden: bool | None
    unique: bool | None
    prepare_unique: bool | None
    force_non_unique: bool | None


def _wrong_type(field: str, value: Any, expected: str) -> MongoError:
    plural = "types" if expected.startswith("[") else "type"
    return MongoError(ErrorCode.TypeMismatch, f"BSON field 'collMod.index.{field}' is the wrong type "
                                              f"'{type_name(value)}', expected {plural} '{expected}'")


def _safe_int64(value: Any) -> int:
    """IDL safeInt64: a number read as a 64-bit integer (truncated; NaN is 0; clamped)."""
    number = float(value.to_decimal()) if isinstance(value, Decimal128) else float(value)
    if math.isnan(number):
        return 0
    return int(max(min(number, 2.0**63 - 1), -(2.0**63)))


def parse_coll_mod_index(spec: Any) -> CollModIndex:
    """``collMod.index`` validated as above (``spec`` as sent)."""
    if not isinstance(spec, dict):
        raise MongoError(ErrorCode.TypeMismatch,
                         f"BSON field 'collMod.index' is the wrong type '{type_name(spec)}', expected type 'object'")
    values: dict[str, Any] = {}
    for field, value in spec.items():
        if field not in ("name", "keyPattern", "expireAfterSeconds", *_FLAGS):
            raise MongoError(ErrorCode.IDLUnknownField, f"BSON field 'collMod.index.{field}' is an unknown field.")
        if value is None:
            continue
        if field == "name" and type(value) is not str:
            raise _wrong_type(field, value, "string")
        if field == "keyPattern" and not isinstance(value, dict):
            raise _wrong_type(field, value, "object")
        if field == "expireAfterSeconds":
            if isinstance(value, bool) or not is_number(value):
                raise _wrong_type(field, value, _SAFE_INT64)
            value = _safe_int64(value)
        if field in _FLAGS:
            if not (isinstance(value, bool) or is_number(value)):
                raise _wrong_type(field, value, _SAFE_BOOL)
            value = truthy(value)
        values[field] = value
    name, key = values.get("name"), values.get("keyPattern")
    if name is not None and key is not None:
        raise MongoError(ErrorCode.InvalidOptions, "Cannot specify both key pattern and name.")
    if name is None and key is None:
        raise MongoError(ErrorCode.InvalidOptions, "Must specify either index name or key pattern.")
    if not any(field in values for field in ("expireAfterSeconds", *_FLAGS)):
        raise MongoError(ErrorCode.InvalidOptions, "no expireAfterSeconds, hidden, unique, or prepareUnique field")
    if "unique" in values and "forceNonUnique" in values:
        raise MongoError(ErrorCode.InvalidOptions,
                         "collMod does not support 'unique' and 'forceNonUnique' options at the same time")
    return CollModIndex(name=name, key_pattern=key, expire_after_seconds=values.get("expireAfterSeconds"),
                        hidden=values.get("hidden"), unique=values.get("unique"),
                        prepare_unique=values.get("prepareUnique"), force_non_unique=values.get("forceNonUnique"))


def ttl_seconds(seconds: int, *, clustered: bool = False) -> int:
    """mongod's validateExpireAfterSeconds: for a secondary TTL index (collMod.index) or, ``clustered``,
    for a collection's own expireAfterSeconds (create and collMod of a time-series or clustered
    collection)."""
    if seconds < 0:
        raise MongoError(ErrorCode.InvalidOptions, "TTL index 'expireAfterSeconds' option cannot be less than 0")
    if seconds > (MAX_CLUSTERED_TTL_SECONDS if clustered else MAX_INDEX_TTL_SECONDS):
        raise MongoError(ErrorCode.InvalidOptions,
                         "TTL index 'expireAfterSeconds' option must be within an acceptable range, try a lower number")
    return seconds
