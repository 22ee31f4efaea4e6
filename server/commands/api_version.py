"""The versioned API parameters (``apiVersion``, ``apiStrict``, ``apiDeprecationErrors``), checked as
mongod 7.0 checks them before any command runs (validate_api_parameters.cpp and the IDL's unstable
fields).

- ``apiStrict`` or ``apiDeprecationErrors`` without ``apiVersion`` -> 4886600;
- ``apiVersion`` other than "1" -> 322 APIVersionError ``API version must be "1"``;
- ``apiStrict: true``: a command outside API Version 1 -> 323 APIStrictError (an alias is a command of
  its own: ``findandmodify`` is not in it, ``findAndModify`` is); so is an unstable option of a command
  inside it (``find.returnKey``, ``aggregate.explain``, ``collMod.index.prepareUnique`` ...), an
  aggregation stage outside it (``$currentOp``, ``$indexStats``, ``$collStats`` beyond ``count`` ...,
  also in sub-pipelines and in the pipeline of a view being created), a text index, a capped
  collection and a write to ``system.js``.
- ``apiDeprecationErrors: true``: a command deprecated in API Version 1 -> 324 APIDeprecationError; the
  only one is mongod's test command ``testDeprecation``.
"""

from __future__ import annotations

from typing import Any

from tidemark.arguments import wrong_type
from tidemark.protocol.errors import ErrorCode, MongoError

__all__ = ["check_api_parameters", "check_repeated_fields"]

# Commands in API Version 1 (names as the command table spells them; aliases resolve to these).
API_V1_COMMANDS = frozenset({
    "abortTransaction", "aggregate", "authenticate", "bulkWrite", "collMod", "collStats", "commitTransaction",
    "count", "create", "createIndexes", "createRole", "createSearchIndexes", "createUser", "delete", "drop",
    "dropDatabase", "dropIndexes", "dropRole", "dropSearchIndex", "dropUser", "endSessions", "explain", "find",
    "findAndModify", "getMore", "grantPrivilegesToRole", "grantRolesToRole", "grantRolesToUser", "hello",
    "insert", "killCursors", "listCollections", "listDatabases", "listIndexes", "ping", "refreshSessions",
    "renameCollection", "revokePrivilegesFromRole", "revokeRolesFromRole", "revokeRolesFromUser",
    "saslContinue", "saslStart", "update", "updateRole", "updateSearchIndex", "updateUser",
    "testDeprecation",
})

# Commands deprecated in API Version 1 (mongod's test command only).
API_V1_DEPRECATED = frozenset({"testDeprecation"})

# Writes refused on ``system.js`` under apiStrict (server-side JavaScript is outside API Version 1).
_WRITE_TARGETS = {"insert": "insert", "update": "update", "delete": "delete", "findAndModify": "findAndModify"}

# Aggregation stages in API Version 1.
API_V1_STAGES = frozenset({
    "$addFields", "$bucket", "$bucketAuto", "$changeStream", "$collStats", "$count", "$densify", "$documents",
    "$facet", "$fill", "$geoNear", "$graphLookup", "$group", "$limit", "$lookup", "$match",
    "$merge", "$out", "$project", "$redact", "$replaceRoot", "$replaceWith", "$sample", "$set",
    "$setWindowFields", "$skip", "$sort", "$sortByCount", "$unionWith", "$unset", "$unwind",
})

# Fields the IDL marks unstable in commands of API Version 1.
UNSTABLE_FIELDS = {
    "find": ("min", "max", "returnKey", "showRecordId", "oplogReplay", "term", "readOnce",
             "allowSpeculativeMajorityRead", "noCursorTimeout", "tailable", "awaitData", "$_requestResumeToken",
             "$_resumeAfter"),
    "aggregate": ("explain", "fromMongos", "needsMerge", "exchange", "isMapReduceCommand", "runtimeConstants",
                  "collectionUUID", "$_requestReshardingResumeToken", "$_generateV2ResumeTokens"),
    "create": ("autoIndexId",),
    "listIndexes": ("includeBuildUUIDs", "includeIndexBuildInfo"),
    "listCollections": ("includePendingDrops",),
}

# Unstable fields of collMod's ``index`` document.
UNSTABLE_COLLMOD_INDEX_FIELDS = ("prepareUnique", "forceNonUnique")

# The only $collStats option in API Version 1 (latencyStats, storageStats, queryExecStats are not).
STABLE_COLL_STATS_OPTIONS = frozenset({"count"})


# The API parameters' IDL types (APIParametersFromClient): the parser checks each occurrence's type first.
_API_FIELD_TYPES = {"apiVersion": (str, "string"), "apiStrict": (bool, "bool"), "apiDeprecationErrors": (bool, "bool")}


def check_repeated_fields(elements: tuple[tuple[str, Any], ...]) -> None:
    """A body whose field names repeat (``elements``: all of them, in wire order), refused where mongod
    refuses it: the first IDL parse of the whole body is the API parameters' (APIParametersFromClient, a
    non-strict struct, so every field name counts), so any command answers 40413 IDLDuplicateField
    "BSON field 'APIParametersFromClient.<name>' is a duplicate field" at the first repeat — unless an
    API parameter before it has the wrong type (its parser checks the type first; a null is ignored)."""
    seen: set[str] = set()
    for name, value in elements:
        typed = _API_FIELD_TYPES.get(name)
        if typed is not None:
            if value is None:
                continue
            if type(value) is not typed[0]:
                raise wrong_type(f"APIParametersFromClient.{name}", value, typed[1])
        if name in seen:
            raise MongoError(ErrorCode.IDLDuplicateField,
                             f"BSON field 'APIParametersFromClient.{name}' is a duplicate field")
        seen.add(name)


def check_api_parameters(name: str, cmd: dict[str, Any]) -> None:
    """Raise like mongod for API parameters ``name`` (the command's canonical name) cannot honour. A
    parameter of the wrong type is named by its parser's context, as mongod's
    ``APIParametersFromClient::parse(IDLParserContext("APIParametersFromClient"), body)`` names it."""
    version = cmd.get("apiVersion")
    strict = cmd.get("apiStrict")
    deprecation = cmd.get("apiDeprecationErrors")
    for field, value in (("apiStrict", strict), ("apiDeprecationErrors", deprecation)):
        if value is not None and not isinstance(value, bool):
            raise wrong_type(f"APIParametersFromClient.{field}", value, "bool")
    if (strict is not None or deprecation is not None) and version is None:
        raise MongoError(4886600, "Provided apiStrict and/or apiDeprecationErrors without passing apiVersion")
    if version is None:
        return
    if type(version) is not str:
        raise wrong_type("APIParametersFromClient.apiVersion", version, "string")
    if version != "1":
        raise MongoError(ErrorCode.APIVersionError, 'API version must be "1"')
    if strict:
        _check_strict(name, cmd)
    if deprecation and name in API_V1_DEPRECATED:
        raise MongoError(ErrorCode.APIDeprecationError,
                         f"Provided apiDeprecationErrors: true, but the invoked command {name}'s "
                         'deprecatedApiVersions() does not include "1"')


def _check_strict(name: str, cmd: dict[str, Any]) -> None:
    # the name as sent: an alias is registered as a command of its own, outside API Version 1
    sent = next(iter(cmd), name)
    if name not in API_V1_COMMANDS or sent not in API_V1_COMMANDS:
        raise MongoError(ErrorCode.APIStrictError,
                         f"Provided apiStrict:true, but the command {sent} is not in API Version 1. Information on "
                         "supported commands and migrations in API Version 1 can be found at "
                         "https://dochub.mongodb.org/core/manual-versioned-api.")
    for field in UNSTABLE_FIELDS.get(name, ()):
        if field in cmd:
            raise MongoError(ErrorCode.APIStrictError, f"BSON field '{name}.{field}' is not allowed with apiStrict:true.")
    if name in _WRITE_TARGETS and cmd.get(sent) == "system.js":
        raise MongoError(ErrorCode.APIStrictError,
                         f"Provided apiStrict:true, but the command {name} attempts to write to system.js.")
    if name == "aggregate":
        _check_stages(cmd.get("pipeline"))
    elif name == "create":
        if "viewOn" in cmd:
            _check_stages(cmd.get("pipeline"))
        # (capped without a size is the command's own 72 InvalidOptions, as mongod's parser answers first)
        if cmd.get("capped") is True and "size" in cmd:
            raise MongoError(ErrorCode.APIStrictError, "Capped collections are not allowed with apiStrict:true.")
    elif name == "collMod":
        _check_stages(cmd.get("pipeline"))
        index = cmd.get("index")
        if isinstance(index, dict):
            for field in UNSTABLE_COLLMOD_INDEX_FIELDS:
                if field in index:
                    raise MongoError(ErrorCode.APIStrictError,
                                     f"BSON field 'collMod.index.{field}' is not allowed with apiStrict:true.")
    elif name == "createIndexes" and isinstance(cmd.get("indexes"), list):
        for spec in cmd["indexes"]:
            key = spec.get("key") if isinstance(spec, dict) else None
            if isinstance(key, dict) and "text" in key.values():
                raise MongoError(ErrorCode.APIStrictError, "text indexes cannot be created with apiStrict: true")


def _check_stages(pipeline: Any) -> None:
    if not isinstance(pipeline, list):
        return
    for stage in pipeline:
        if not isinstance(stage, dict) or len(stage) != 1:
            continue  # the pipeline's own parse reports it
        (stage_name, spec), = stage.items()
        if stage_name not in API_V1_STAGES:
            raise MongoError(ErrorCode.APIStrictError,
                             f"{stage_name} is not allowed with 'apiStrict: true' in API Version 1")
        if stage_name == "$collStats" and isinstance(spec, dict):
            for option in spec:
                if option not in STABLE_COLL_STATS_OPTIONS:
                    raise MongoError(ErrorCode.APIStrictError,
                                     f"BSON field '$collStats.{option}' is not allowed with apiStrict:true.")
        if stage_name == "$facet" and isinstance(spec, dict):
            for branch in spec.values():
                _check_stages(branch)
        elif stage_name in ("$lookup", "$unionWith") and isinstance(spec, dict):
            _check_stages(spec.get("pipeline"))
