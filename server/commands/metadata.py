"""validateDBMetadata (mongod 7.0's validate_db_metadata_cmd.cpp): which stored metadata a client
using the given API parameters could not use.

``{validateDBMetadata: 1, db?, collection?, apiParameters: {version, strict?, deprecationErrors?}}``
(strict IDL: 40415 unknown fields, 40414 without ``apiParameters`` or its ``version``, 14 wrong types;
a null is an absent field) answers ``{apiVersionErrors: [{ns, code, codeName, errmsg}], hasMoreErrors?}``
over ``db`` (every database when absent) and ``collection`` (every view, then every collection, when
absent). With ``strict: true`` and version "1" an error is reported (always as 323 APIStrictError, as
mongod does) for

- an index outside API Version 1 (text, geoHaystack, columnstore, sparse): "The index with name <name>
  is not allowed in API version 1.";
- a view whose pipeline holds a stage outside API Version 1 (the message apiStrict gives that stage,
  commands/api_version.py). Time-series views are the server's own and never reported.

Tidemark records no API version facts of expressions (mongod's ``exprUnstableForApiV1``), so neither a
validator nor a view's expressions are reported. The errors stop, with ``hasMoreErrors: true``, once
they would pass the user document size limit (mongod's ValidateDBMetadataSizeTracker).
"""

from __future__ import annotations

from typing import Any

from tidemark.arguments import check_fields, missing, of_kind, wrong_type
from tidemark.commands.api_version import check_api_parameters
from tidemark.context import CommandContext, CommandSpec
from tidemark.core import collection as C
from tidemark.core import namespace
from tidemark.protocol.codec import encode
from tidemark.protocol.errors import ErrorCode, MongoError

__all__ = ["COMMANDS", "index_allowed_in_api_v1"]

_COMMAND = "validateDBMetadata"
_MAX_USER_SIZE = 16 * 1024 * 1024  # BSONObjMaxUserSize
_ENTRY_OVERHEAD = 15  # mongod counts each error's BSON size plus this (its array index and type bytes)
_UNSTABLE_INDEX_KINDS = frozenset({"text", "geoHaystack", "columnstore"})


def index_allowed_in_api_v1(spec: dict[str, Any]) -> bool:
    """mongod's isIndexAllowedInAPIVersion1: no text, geoHaystack or columnstore key, not sparse."""
    return not spec.get("sparse") and not any(
        type(v) is str and v in _UNSTABLE_INDEX_KINDS for v in spec.get("key", {}).values())


def _optional(cmd: dict[str, Any], path: str, name: str, kind: type, expected: str) -> Any:
    """An optional IDL field: None when absent or null, else a value of ``kind`` (14 otherwise)."""
    value = cmd.get(name)
    if value is None:
        return None
    if not of_kind(value, kind):
        raise wrong_type(f"{path}.{name}", value, expected)
    return value


def _parse(cmd: dict[str, Any]) -> tuple[str | None, str | None, str, bool, bool]:
    """(db, collection, version, strict, deprecationErrors) as mongod's IDL parses the command."""
    check_fields(cmd, _COMMAND, {"db", "collection", "apiParameters"})
    db = _optional(cmd, _COMMAND, "db", str, "string")
    coll = _optional(cmd, _COMMAND, "collection", str, "string")
    params = _optional(cmd, _COMMAND, "apiParameters", dict, "object")
    if params is None:
        raise missing(f"{_COMMAND}.apiParameters")
    path = f"{_COMMAND}.apiParameters"
    for key in params:
        if key not in ("version", "strict", "deprecationErrors"):
            raise MongoError(ErrorCode.IDLUnknownField, f"BSON field '{path}.{key}' is an unknown field.")
    version = _optional(params, path, "version", str, "string")
    if version is None:
        raise missing(f"{path}.version")
    strict = _optional(params, path, "strict", bool, "bool")
    deprecation = _optional(params, path, "deprecationErrors", bool, "bool")
    return db, coll, version, bool(strict), bool(deprecation)


class _Errors:
    """The reply's errors, cut off like mongod's size tracker: ``add`` is False once it overflowed."""

    def __init__(self) -> None:
        self.errors: list[dict[str, Any]] = []
        self.size = 0
        self.more = False

    def add(self, ns: str, message: str) -> bool:
        error = {"ns": ns, "code": int(ErrorCode.APIStrictError), "codeName": "APIStrictError", "errmsg": message}
        self.size += len(encode(error)) + _ENTRY_OVERHEAD
        if self.size >= _MAX_USER_SIZE:
            self.more = True
            return False
        self.errors.append(error)
        return True


def _check_view(errors: _Errors, db: str, view: dict[str, Any], strict_v1: bool) -> bool:
    """Report the view's pipeline (False: stop, the reply is full)."""
    if not strict_v1 or namespace.is_timeseries_view(view):
        return True
    try:
        check_api_parameters("aggregate", {"aggregate": 1, "pipeline": view.get("pipeline"), "apiVersion": "1",
                                           "apiStrict": True})
    except MongoError as e:
        return errors.add(str(view.get("_id") or C.ns_of(db, "")), e.message)
    return True


def _check_collection(errors: _Errors, info: Any, strict_v1: bool) -> bool:
    if not strict_v1:
        return True
    for spec in info.indexes:
        if not index_allowed_in_api_v1(spec):
            if not errors.add(info.ns, f"The index with name {spec['name']} is not allowed in API version 1."):
                return False
    return True


async def validate_db_metadata(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    db_name, coll_name, version, strict, _deprecation = _parse(cmd)
    strict_v1 = strict and version == "1"

    def work() -> _Errors:
        errors = _Errors()
        with ctx.server.engine.read() as r:
            databases = [db_name] if db_name is not None else r.list_databases()
            for db in databases:
                infos = r.list_collections(db)
                views = namespace.all_views(r, db)
                if not infos and not views:
                    continue  # no such database
                if coll_name is not None:
                    view = next((v for v in views if v.get("_id") == C.ns_of(db, coll_name)), None)
                    info = next((i for i in infos if i.name == coll_name), None)
                    ok = (_check_view(errors, db, view, strict_v1) if view is not None
                          else info is None or _check_collection(errors, info, strict_v1))
                    if not ok:
                        return errors
                    continue
                for view in views:
                    if not _check_view(errors, db, view, strict_v1):
                        return errors
                # mongod walks its catalog in collection UUID order
                for info in sorted(infos, key=lambda i: i.uuid):
                    ctx.check_deadline()
                    if not _check_collection(errors, info, strict_v1):
                        return errors
        return errors

    errors = await ctx.run_blocking(work)
    reply: dict[str, Any] = {"apiVersionErrors": errors.errors}
    if errors.more:
        reply["hasMoreErrors"] = True
    return reply


COMMANDS = [
    CommandSpec(_COMMAND, validate_db_metadata,
                help="validateDBMetadata checks that the stored metadata of a database/collection is valid within "
                     "a particular API version. If 'db' parameter is specified, only runs validation against that "
                     "database, if not the validation will be run againt all dbs. Similarly if 'collection' "
                     "parameter is specified, the validation is only run against that collection, if not the "
                     "validation is run against all collections."),
]
