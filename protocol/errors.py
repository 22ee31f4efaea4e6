"""THE error vocabulary on the wire: MongoDB error codes <-> codeNames, and MongoError.

Every layer that answers a client raises ``MongoError(ErrorCode.X, "message")``; ``tidemark.dispatch``
turns it into ``{ok: 0.0, errmsg, code, codeName}`` in one place. Codes come from MongoDB's
``src/mongo/base/error_codes.yml``; a code without a name there is reported as ``Location<code>``.
"""

from __future__ import annotations

import enum
from typing import Any


class ErrorCode(enum.IntEnum):
    """MongoDB error codes. The member name is the wire ``codeName``."""

    InternalError = 1
    BadValue = 2
    NoSuchKey = 4
    GraphContainsCycle = 5
    HostUnreachable = 6
    HostNotFound = 7
    UnknownError = 8
    FailedToParse = 9
    CannotMutateObject = 10
    UserNotFound = 11
    UnsupportedFormat = 12
    Unauthorized = 13
    TypeMismatch = 14
    Overflow = 15
    InvalidLength = 16
    ProtocolError = 17
    AuthenticationFailed = 18
    CannotReuseObject = 19
    IllegalOperation = 20
    EmptyArrayOperation = 21
    InvalidBSON = 22
    LockTimeout = 24
    NamespaceNotFound = 26
    IndexNotFound = 27
    PathNotViable = 28
    NonExistentPath = 29
    InvalidPath = 30
    RoleNotFound = 31
    CannotBackfillArray = 34
    ConflictingUpdateOperators = 40
    CursorNotFound = 43
    UserDataInconsistent = 45
    NamespaceExists = 48
    InvalidRoleModification = 49
    MaxTimeMSExpired = 50
    ManualInterventionRequired = 51
    DollarPrefixedFieldName = 52
    InvalidIdField = 53
    NotSingleValueField = 54
    InvalidDBRef = 55
    EmptyFieldName = 56
    DottedFieldName = 57
    CommandNotFound = 59
    ShardKeyNotFound = 61
    OplogOperationUnsupported = 62
    ImmutableField = 66
    CannotCreateIndex = 67
    IndexAlreadyExists = 68
    InvalidOptions = 72
    InvalidNamespace = 73
    NodeNotFound = 74
    WriteConcernLegacyOK = 75
    NoReplicationEnabled = 76
    OperationIncomplete = 77
    CommandResultSchemaViolation = 78
    UnknownReplWriteConcern = 79
    IncompatibleShardingMetadata = 83
    IndexOptionsConflict = 85
    IndexKeySpecsConflict = 86
    CannotSplit = 87
    NetworkTimeout = 89
    CallbackCanceled = 90
    ShutdownInProgress = 91
    OperationFailed = 96
    UnsatisfiableWriteConcern = 100
    OutOfDiskSpace = 14031
    ObjectIsBusy = 314
    NotExactValueField = 111
    CommandNotSupported = 115
    DocTooLargeForCapped = 116
    ConflictingOperationInProgress = 117
    NamespaceNotSharded = 118
    InvalidSyncSource = 119
    DocumentValidationFailure = 121
    NotAReplicaSet = 123
    IncompatibleServerVersion = 124
    CommandFailed = 125
    RPCProtocolNegotiationFailed = 126
    UnrecoverableRollbackError = 127
    CannotGrowDocumentInCappedNamespace = 10003
    CappedPositionLost = 136
    JSInterpreterFailure = 139
    QueryPlanKilled = 175
    CursorKilled = 237
    ViewDepthLimitExceeded = 149
    CommandNotSupportedOnView = 166
    OptionNotSupportedOnView = 167
    InvalidPipelineOperator = 168
    CommandOnShardedViewNotSupportedOnMongod = 169
    TooManyMatchingDocuments = 170
    CannotIndexParallelArrays = 171
    ConversionFailure = 241
    AmbiguousIndexKeyPattern = 181
    InvalidViewDefinition = 182
    InvalidIndexSpecificationOption = 197
    CannotBuildIndexKeys = 201
    KeyNotFound = 211
    ClientMetadataMissingField = 183
    ClientMetadataAppNameTooLarge = 184
    ClientMetadataDocumentTooLarge = 185
    ClientMetadataCannotBeMutated = 186
    UpdateOperationFailed = 218
    IllegalOpMsgFlag = 223
    QueryFeatureNotAllowed = 224
    TransactionTooOld = 225
    AtomicityFailure = 226
    MaxSubPipelineDepthExceeded = 232
    TooManyDocumentSequences = 233
    NotImplemented = 238
    CannotConvertIndexToUnique = 359
    IncompatibleCollationVersion = 250
    NoSuchTransaction = 251
    ExceededTimeLimit = 262
    OperationNotSupportedInTransaction = 263
    TooManyLogicalSessions = 261
    ChecksumMismatch = 288
    NoQueryExecutionPlans = 291
    QueryExceededMemoryLimitNoDiskUseAllowed = 292
    APIVersionError = 322
    APIStrictError = 323
    APIDeprecationError = 324
    MechanismUnavailable = 334
    TransactionTooLargeForCache = 388
    UnsupportedOpQueryCommand = 352
    InvalidBSONType = 357
    CollectionUUIDMismatch = 361
    APIMismatchError = 498
    InvalidUUID = 9001
    NotWritablePrimary = 10107
    BSONObjectTooLarge = 10334
    DuplicateKey = 11000
    InterruptedAtShutdown = 11600
    Interrupted = 11601
    InterruptedDueToReplStateChange = 11602
    DatabaseDifferCase = 13297
    NotPrimaryNoSecondaryOk = 13435
    NotPrimaryOrSecondary = 13436
    ExceededMemoryLimit = 146
    IDLDuplicateField = 40413
    IDLFailedToParse = 40414
    IDLUnknownField = 40415



# Codes MongoDB's clients treat as topology changes (they clear the connection pool). Never raise
# these for ordinary errors; the table keeps them only so that the names are right when logged.
TOPOLOGY_CODES = frozenset({10107, 13435, 13436, 11600, 11602, 189, 91, 10058})


def code_name(code: int) -> str:
    """The wire ``codeName`` of ``code``: the table's name, else ``Location<code>``."""
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"Location{code}"


# The extra fields of an error that a ``writeErrors`` entry carries too (mongod's ErrorExtraInfo of
# DuplicateKey, DocumentValidationFailure and CollectionUUIDMismatch), between ``code`` and ``errmsg``.
WRITE_ERROR_FIELDS = ("keyPattern", "keyValue", "errInfo", "db", "collectionUUID", "expectedCollection",
                      "actualCollection")


class MongoError(Exception):
    """An error answered to the client as ``{ok: 0, errmsg, code, codeName, **extra}``.

    ``extra`` carries fields some errors add (``keyPattern``/``keyValue`` for DuplicateKey,
    ``errInfo`` for DocumentValidationFailure, ``writeErrors`` …).
    """

    def __init__(self, code: int, message: str, *, extra: dict[str, Any] | None = None):
        super().__init__(message)
        self.code = int(code)
        self.message = message
        self.extra = extra or {}

    @property
    def code_name(self) -> str:
        return code_name(self.code)

    def to_reply(self) -> dict[str, Any]:
        """The error document a command reply carries (``ok`` first, like mongod)."""
        reply: dict[str, Any] = {"ok": 0.0, "errmsg": self.message, "code": self.code, "codeName": self.code_name}
        reply.update(self.extra)
        return reply

    def to_write_error(self, index: int) -> dict[str, Any]:
        """The ``writeErrors`` entry for the statement at ``index`` of a write batch."""
        entry: dict[str, Any] = {"index": index, "code": self.code}
        entry.update({k: v for k, v in self.extra.items() if k in WRITE_ERROR_FIELDS})
        entry["errmsg"] = self.message
        return entry

    def __repr__(self) -> str:
        return f"MongoError({self.code} {self.code_name}: {self.message!r})"
