"""Command arguments checked the way mongod's IDL parser checks them: the one place for its messages.

- an unknown field: 40415 IDLUnknownField "BSON field 'createUser.foo' is an unknown field."
  (generic arguments such as ``$db``, ``lsid`` or ``comment`` are always allowed);
- a missing required field: 40414 IDLFailedToParse "BSON field 'getMore.collection' is missing but a
  required field";
- a value of the wrong type: 14 TypeMismatch "BSON field 'createUser.roles' is the wrong type
  'string', expected type 'array'" (or "expected types '[long, int, decimal, double]'"). Type names
  are BSON's ($type names), never Python's.

``COMMAND_FIELDS`` is the one table of the fields mongod's IDL declares for the commands that read
their arguments through it, with each field's IDL type; ``check_command`` walks a command in document
order against it, as the generated parsers do (a declared field's type first, then a generic argument,
else 40415). A field typed ``ANY`` has a custom deserializer: its handler checks it.
"""

from __future__ import annotations

from typing import Any

from bson.code import Code
from bson.decimal128 import Decimal128
from bson.int64 import Int64

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.expr_base import INT32_MAX, INT32_MIN, safe_number_int, safe_number_long, type_name

# safe_number_long / safe_number_int (BSONElement's conversions) live with the query language's numbers,
# which reads them too; they are re-exported here for the argument readers.
__all__ = ["safe_number_int", "safe_number_long", "GENERIC_ARGUMENTS", "COMMAND_FIELDS", "DOC_SEQUENCE_FIELDS", "SEQUENCES_REFUSED", "check_command", "check_fields", "missing", "wrong_type",
           "extract_wrong_type", "field"]

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


# --------------------------------------------------------------------------------------------------
# The IDL field types (mongo/idl/basic_types.idl) and the table of each command's declared fields
# --------------------------------------------------------------------------------------------------

_NUMBERS = frozenset({int, float, Int64, Decimal128})


class IdlType:
    """An IDL field type as its generated parser checks a value: the Python classes of the BSON types
    it takes (``bool`` never counts as a number), what a refusal says it expected, and whether a null
    (or undefined) reads as absent — ``checkAndAssertType[s]`` ignores a null of the wrong type; an
    ``optionalBool`` (``OptionalBool::parseFromBSON``, a custom deserializer) refuses it."""

    __slots__ = ("classes", "expected", "null_absent", "int32")

    def __init__(self, classes: frozenset[type], expected: str | tuple[str, ...], *, null_absent: bool = True,
                 int32: bool = False):
        self.classes = classes
        self.expected = expected
        self.null_absent = null_absent
        self.int32 = int32  # the IDL ``int``: a BSON int32 only (a Python int in range, never an Int64)

    def refusal(self, path: str, name: str, value: Any) -> MongoError | None:
        """None when ``value`` is one of this type's (or a null it ignores), else mongod's error."""
        cls = value.__class__
        if cls in self.classes:
            if not self.int32 or INT32_MIN <= value <= INT32_MAX:
                return None
        elif value is None and self.null_absent:
            return None
        elif isinstance(value, (dict, list)) and cls.__mro__[-2] in self.classes:
            return None  # a document or an array built in process (SON, a parsed $match stage)
        if self is OPTIONAL_BOOL:
            return MongoError(ErrorCode.TypeMismatch,
                              f"Field '{name}' should be a boolean value, but found: {type_name(value)}")
        return wrong_type(path, value, self.expected)


BOOL = IdlType(frozenset({bool}), "bool")
OPTIONAL_BOOL = IdlType(frozenset({bool}), "bool", null_absent=False)
SAFE_BOOL = IdlType(frozenset({bool}) | _NUMBERS, ("bool", "long", "int", "decimal", "double"))
SAFE_INT64 = IdlType(_NUMBERS, ("long", "int", "decimal", "double"))  # safeInt, exactInt64 alike
INT = IdlType(frozenset({int}), "int", int32=True)
LONG = IdlType(frozenset({Int64}), "long")
STRING = IdlType(frozenset({str}), "string")
OBJECT = IdlType(frozenset({dict}), "object")
ARRAY = IdlType(frozenset({list}), "array")
ANY = None  # a custom deserializer (a hint, a pipeline, a cursor, a UUID...): the handler checks it

# mongod 7.0's IDL, per command (the canonical name): find_command.idl, aggregate_command.idl,
# count_command.idl, distinct_command.idl, write_ops.idl (insert/update/delete, findAndModify),
# getmore_command.idl, list_collections.idl, list_indexes.idl, create_indexes.idl, drop_indexes.idl,
# commands/create.idl, drop.idl, coll_mod.idl.
# A generic argument the IDL also declares (maxTimeMS, readConcern, writeConcern) stays generic: the
# dispatcher checks it for every command.
_WRITE_BASE: dict[str, IdlType | None] = {
    "bypassDocumentValidation": SAFE_BOOL, "ordered": BOOL, "stmtId": INT, "stmtIds": ARRAY,
    "isTimeseriesNamespace": OPTIONAL_BOOL, "collectionUUID": ANY, "encryptionInformation": ANY,
}
COMMAND_FIELDS: dict[str, dict[str, IdlType | None]] = {
    "find": {
        "filter": ANY, "projection": ANY, "sort": ANY, "hint": ANY, "collation": ANY, "min": ANY, "max": ANY,
        "skip": SAFE_INT64, "limit": SAFE_INT64, "batchSize": SAFE_INT64, "ntoreturn": SAFE_INT64,
        "term": SAFE_INT64,
        "singleBatch": OPTIONAL_BOOL, "allowDiskUse": OPTIONAL_BOOL, "returnKey": OPTIONAL_BOOL,
        "showRecordId": OPTIONAL_BOOL, "tailable": OPTIONAL_BOOL, "noCursorTimeout": OPTIONAL_BOOL,
        "awaitData": OPTIONAL_BOOL, "allowPartialResults": OPTIONAL_BOOL, "readOnce": OPTIONAL_BOOL,
        "allowSpeculativeMajorityRead": OPTIONAL_BOOL, "$_requestResumeToken": OPTIONAL_BOOL,
        "let": OBJECT, "options": OBJECT, "$queryOptions": ANY, "$_resumeAfter": ANY, "oplogReplay": ANY,
        "runtimeConstants": ANY, "collectionUUID": ANY,
    },
    "aggregate": {
        "pipeline": ANY, "explain": ANY, "cursor": ANY, "hint": ANY, "exchange": ANY, "runtimeConstants": ANY,
        "collectionUUID": ANY, "encryptionInformation": ANY, "$_passthroughToShard": ANY, "sampleId": ANY,
        "allowDiskUse": OPTIONAL_BOOL, "needsMerge": OPTIONAL_BOOL, "fromMongos": OPTIONAL_BOOL,
        "isMapReduceCommand": OPTIONAL_BOOL, "$_requestReshardingResumeToken": OPTIONAL_BOOL,
        "$_requestResumeToken": OPTIONAL_BOOL, "$_isClusterQueryWithoutShardKeyCmd": OPTIONAL_BOOL,
        "bypassDocumentValidation": SAFE_BOOL, "stmtId": INT,
        "collation": OBJECT, "let": OBJECT, "$queryOptions": OBJECT, "$_resumeAfter": OBJECT,
        "$_externalDataSources": ARRAY,
    },
    "count": {
        "query": ANY, "limit": ANY, "skip": ANY, "hint": ANY, "collation": ANY, "fields": ANY,
        "$queryOptions": OBJECT, "encryptionInformation": ANY, "sampleId": ANY, "mirrored": OPTIONAL_BOOL,
        "collectionUUID": ANY,
    },
    "distinct": {
        "key": ANY, "query": ANY, "collation": ANY, "hint": ANY, "sampleId": ANY, "mirrored": OPTIONAL_BOOL,
        "collectionUUID": ANY,
    },
    "insert": {**_WRITE_BASE, "documents": ANY},
    "update": {**_WRITE_BASE, "updates": ANY, "let": ANY, "runtimeConstants": ANY},
    "delete": {**_WRITE_BASE, "deletes": ANY, "let": ANY, "runtimeConstants": ANY},
    "findAndModify": {
        "query": OBJECT, "fields": OBJECT, "sort": OBJECT, "collation": OBJECT, "let": OBJECT,
        "hint": ANY, "arrayFilters": ANY, "update": ANY, "runtimeConstants": ANY, "encryptionInformation": ANY,
        "sampleId": ANY, "remove": SAFE_BOOL, "upsert": SAFE_BOOL, "new": SAFE_BOOL,
        "bypassDocumentValidation": SAFE_BOOL,
        "batchSize": INT, "singleBatch": BOOL, "stmtId": INT, "isTimeseriesNamespace": OPTIONAL_BOOL,
        "mirrored": OPTIONAL_BOOL,
    },
    "getMore": {
        "collection": ANY, "batchSize": ANY, "term": LONG, "lastKnownCommittedOpTime": OBJECT,
    },
    "listCollections": {
        "cursor": ANY, "filter": OBJECT, "nameOnly": BOOL, "authorizedCollections": BOOL,
        "includePendingDrops": SAFE_BOOL,
    },
    "listIndexes": {
        "cursor": ANY, "includeBuildUUIDs": SAFE_BOOL, "includeIndexBuildInfo": SAFE_BOOL,
        "isTimeseriesNamespace": BOOL, "collectionUUID": ANY,
    },
    "createIndexes": {
        "indexes": ANY, "commitQuorum": ANY, "ignoreUnknownIndexOptions": BOOL, "isTimeseriesNamespace": BOOL,
        "collectionUUID": ANY, "returnOnStart": BOOL,
    },
    "dropIndexes": {"index": ANY, "collectionUUID": ANY, "isTimeseriesNamespace": BOOL},
    "create": {  # (commands/create.idl)
        "capped": SAFE_BOOL, "autoIndexId": SAFE_BOOL, "temp": SAFE_BOOL, "recordPreImages": SAFE_BOOL,
        "size": SAFE_INT64, "max": SAFE_INT64, "expireAfterSeconds": SAFE_INT64, "flags": SAFE_INT64,
        "storageEngine": OBJECT, "changeStreamPreAndPostImages": OBJECT,
        "idIndex": ANY, "validator": ANY, "validationLevel": ANY, "validationAction": ANY, "viewOn": ANY,
        "pipeline": ANY, "collation": ANY, "timeseries": ANY, "clusteredIndex": ANY, "indexOptionDefaults": ANY,
        "encryptedFields": ANY,
    },
    "drop": {"collectionUUID": ANY},  # (drop.idl)
    "collMod": {  # (coll_mod.idl)
        "dryRun": SAFE_BOOL, "recordPreImages": SAFE_BOOL, "timeseriesBucketsMayHaveMixedSchemaData": SAFE_BOOL,
        "cappedSize": SAFE_INT64, "cappedMax": SAFE_INT64,
        "index": ANY, "validator": ANY, "validationLevel": ANY, "validationAction": ANY, "viewOn": ANY,
        "pipeline": ANY, "expireAfterSeconds": ANY, "timeseries": ANY, "changeStreamPreAndPostImages": ANY,
        "prepareUnique": ANY, "collectionUUID": ANY,
    },
}


# The spellings of each command's own name (its first field: the handler reads it).
_NAMES = {"findAndModify": ("findAndModify", "findandmodify"), "dropIndexes": ("dropIndexes", "deleteIndexes")}
# per command, every field it takes -> the classes that pass without a closer look (None: any value) —
# its name, the generic arguments, its declared fields — so check_command looks each field up once;
# an IDL ``int`` has none (its range is checked on the slow path)
_TAKES: dict[str, dict[str, frozenset[type] | None]] = {
    command: {**dict.fromkeys(GENERIC_ARGUMENTS), **dict.fromkeys(_NAMES.get(command, (command,))),
              **{key: None if kind is None else frozenset() if kind.int32 else kind.classes
                 for key, kind in fields.items()}}
    for command, fields in COMMAND_FIELDS.items()}


# The fields of a command its IDL lets arrive as an OP_MSG document sequence (``supports_doc_sequence``).
DOC_SEQUENCE_FIELDS = {"insert": ("documents",), "update": ("updates",), "delete": ("deletes",)}

# What mongod 7.0's command classes do with OP_MSG document sequences, decided by the class's parse():
# - a BasicCommand (and BasicCommandWithReplyBuilderInterface, BasicCommandWithRequestParser,
#   ErrmsgCommandDeprecated) and explain call CommandHelpers::uassertNoDocumentSequences: 40472 "The
#   <name> command does not support document sequences." — these commands, below;
# - a TypedCommand's generated IDL parser loops over the sequences only when the command declares a
#   field with supports_doc_sequence (DOC_SEQUENCE_FIELDS: another name is 40415, check_command); a
#   typed command without one, and find, getMore, aggregate and echo (their own parse() reads the
#   body alone), never look at them: the sequences are ignored, as if not sent.
SEQUENCES_REFUSED = frozenset({
    "_hashBSONElement", "_isSelf", "appendOplogNote", "applyOps", "buildInfo", "captrunc", "checkShardingIndex",
    "clearLog", "cloneCollectionAsCapped", "collMod", "collStats", "compact", "configureFailPoint",
    "connPoolStats", "connPoolSync", "convertToCapped", "count", "cpuload", "currentOp", "dbHash", "distinct",
    "emptycapped", "explain", "features", "filemd5", "fsync", "fsyncUnlock", "getCmdLineOpts",
    "getDiagnosticData", "getLog", "getParameter", "godinsert", "hello", "hostInfo", "isMaster",
    "killAllSessions", "killAllSessionsByPattern", "killOp", "killSessions", "listCommands", "lockInfo",
    "logRotate", "mapReduce", "ping", "planCacheClear", "planCacheClearFilters", "planCacheListFilters",
    "planCacheSetFilter", "profile", "reIndex", "reapLogicalSessionCacheNow", "refreshLogicalSessionCacheNow",
    "replSetAbortPrimaryCatchUp", "replSetFreeze", "replSetGetConfig", "replSetGetRBID",
    "replSetGetStatus", "replSetHeartbeat", "replSetInitiate", "replSetMaintenance", "replSetReconfig",
    "replSetRequestVotes", "replSetStepDown", "replSetStepUp", "replSetSyncFrom", "replSetUpdatePosition",
    "serverStatus", "setFeatureCompatibilityVersion", "setParameter", "shardingState", "sleep", "splitVector",
    "startSession", "testDeprecation", "testDeprecationInVersion2", "testVersion2", "top", "validate",
    "whatsmyuri",
})


def check_command(cmd: dict, command: str, shown: str | None = None, sequences: tuple[str, ...] = ()) -> None:
    """``cmd`` (its first field the command's name) checked in document order against
    ``COMMAND_FIELDS[command]`` as mongod's generated parser checks it: a declared field of the wrong
    type is 14 (see ``IdlType``), an undeclared one not a generic argument 40415. ``shown``: the name
    messages give the command (an alias as the client spelled it; default ``command``). ``sequences``:
    the fields that came as document sequences (folded into ``cmd`` after the body's): the parser reads
    them after the body, and one that is not a sequence field of the command is 40415."""
    if sequences:
        check_command({key: value for key, value in cmd.items() if key not in sequences}, command, shown)
        for name in sequences:
            if name not in DOC_SEQUENCE_FIELDS.get(command, ()):
                raise MongoError(ErrorCode.IDLUnknownField,
                                 f"BSON field '{shown or command}.{name}' is an unknown field.")
        return
    takes = _TAKES[command]
    try:
        for key, value in cmd.items():
            classes = takes[key]  # (KeyError: undeclared — rare, so the common case pays no .get)
            if classes is not None and value.__class__ not in classes:
                kind = COMMAND_FIELDS[command][key]
                error = kind.refusal(f"{shown or command}.{key}", key, value)  # type: ignore[union-attr]
                if error is not None:
                    raise error
    except KeyError:
        unknown = next(key for key in cmd if key not in takes)  # (every field before it passed)
        raise MongoError(ErrorCode.IDLUnknownField,
                         f"BSON field '{shown or command}.{unknown}' is an unknown field.") from None
