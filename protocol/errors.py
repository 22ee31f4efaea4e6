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
    IncompatibleShardingMetadata = 105
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
    IncompatibleServerVersion = 188
    CommandFailed = 125
    RPCProtocolNegotiationFailed = 126
    UnrecoverableRollbackError = 127
    CannotGrowDocumentInCappedNamespace = 10003
    CappedPositionLost = 136
    JSInterpreterFailure = 139
    CursorInUse = 143
    QueryPlanKilled = 175
    CursorKilled = 237
    ViewDepthLimitExceeded = 165
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
    IncompatibleCollationVersion = 161
    NoSuchTransaction = 251
    ExceededTimeLimit = 262
    OperationNotSupportedInTransaction = 263
    TooManyLogicalSessions = 261
    FailPointSetFailed = 266
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
    APIMismatchError = 347
    InvalidUUID = 207
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


# error_codes.yml's NonResumableChangeStreamError category: ChangeStreamFatalError, ChangeStreamHistoryLost
NON_RESUMABLE_CHANGE_STREAM_CODES = frozenset({280, 286})

# The names of the codes of error_codes.yml (as of 7.0) that Tidemark never raises itself: a fail point's
# injected code (configureFailPoint failCommand's errorCode) is answered with mongod's codeName too.
OTHER_CODE_NAMES: dict[int, str] = {
    0: "OK", 3: "OBSOLETE_DuplicateKey", 23: "AlreadyInitialized", 25: "RemoteValidationError",
    32: "RolesNotRelated", 33: "PrivilegeNotFound", 35: "UserModificationFailed", 36: "RemoteChangeDetected",
    37: "FileRenameFailed", 38: "FileNotOpen", 39: "FileStreamFailed", 41: "FileAlreadyOpen", 42: "LogWriteFailed",
    46: "LockBusy", 47: "NoMatchingDocument", 58: "RoleModificationFailed", 60: "OBSOLETE_DatabaseNotFound",
    63: "OBSOLETE_StaleShardVersion", 64: "WriteConcernTimeout", 65: "MultipleErrorsOccurred",
    69: "AuthSchemaIncompatible", 70: "ShardNotFound", 71: "ReplicaSetNotFound", 80: "RoleDataInconsistent",
    81: "NoMatchParseContext", 82: "NoProgressMade", 83: "RemoteResultsUnavailable",
    84: "OBSOLETE_DuplicateKeyValue", 88: "OBSOLETE_SplitFailed", 92: "SecondaryAheadOfPrimary",
    93: "InvalidReplicaSetConfig", 94: "NotYetInitialized", 95: "NotSecondary", 97: "NoProjectionFound",
    98: "DBPathInUse", 101: "OutdatedClient", 102: "IncompatibleAuditMetadata",
    103: "NewReplicaSetConfigurationIncompatible", 104: "NodeNotElectable", 106: "DistributedClockSkewed",
    107: "LockFailed", 108: "InconsistentReplicaSetNames", 109: "ConfigurationInProgress",
    110: "CannotInitializeNodeWithData", 112: "WriteConflict", 113: "InitialSyncFailure",
    114: "InitialSyncOplogSourceMissing", 120: "OplogStartMissing", 122: "OBSOLETE_ReadAfterOptimeTimeout",
    124: "IncompatibleElectionProtocol", 128: "LockNotFound", 129: "LockStateChangeFailed", 130: "SymbolNotFound",
    132: "OBSOLETE_ConfigServersInconsistent", 133: "FailedToSatisfyReadPreference",
    134: "ReadConcernMajorityNotAvailableYet", 135: "StaleTerm", 137: "IncompatibleShardingConfigVersion",
    138: "RemoteOplogStale", 140: "InvalidSSLConfiguration", 141: "SSLHandshakeFailed", 142: "JSUncatchableError",
    144: "IncompatibleCatalogManager", 145: "PooledConnectionsDropped", 147: "ZLibError",
    148: "ReadConcernMajorityNotEnabled", 149: "NoConfigPrimary", 150: "StaleEpoch",
    151: "OperationCannotBeBatched", 152: "OplogOutOfOrder", 153: "ChunkTooBig", 154: "InconsistentShardIdentity",
    155: "CannotApplyOplogWhilePrimary", 156: "OBSOLETE_NeedsDocumentMove", 157: "CanRepairToDowngrade",
    158: "MustUpgrade", 159: "DurationOverflow", 160: "MaxStalenessOutOfRange", 162: "CollectionIsEmpty",
    163: "ZoneStillInUse", 164: "InitialSyncActive", 172: "TransportSessionClosed", 173: "TransportSessionNotFound",
    174: "TransportSessionUnknown", 176: "FileOpenFailed", 177: "ZoneNotFound", 178: "RangeOverlapConflict",
    179: "WindowsPdhError", 180: "BadPerfCounterPath", 187: "LinearizableReadConcernError",
    189: "PrimarySteppedDown", 190: "MasterSlaveConnectionFailure", 191: "OBSOLETE_BalancerLostDistributedLock",
    192: "FailPointEnabled", 193: "OBSOLETE_NoShardingEnabled", 194: "BalancerInterrupted",
    195: "ViewPipelineMaxSizeExceeded", 198: "OBSOLETE_ReceivedOpReplyMessage", 199: "ReplicaSetMonitorRemoved",
    200: "ChunkRangeCleanupPending", 202: "NetworkInterfaceExceededTimeLimit", 203: "ShardingStateNotInitialized",
    204: "TimeProofMismatch", 205: "ClusterTimeFailsRateLimiter", 206: "NoSuchSession", 208: "TooManyLocks",
    209: "StaleClusterTime", 210: "CannotVerifyAndSignLogicalTime", 212: "IncompatibleRollbackAlgorithm",
    213: "DuplicateSession", 214: "AuthenticationRestrictionUnmet", 215: "DatabaseDropPending",
    216: "ElectionInProgress", 217: "IncompleteTransactionHistory", 219: "FTDCPathNotSet",
    220: "FTDCPathAlreadySet", 221: "IndexModified", 222: "CloseChangeStream",
    227: "CannotImplicitlyCreateCollection", 228: "SessionTransferIncomplete", 229: "MustDowngrade",
    230: "DNSHostNotFound", 231: "DNSProtocolError", 234: "RetryChangeStream", 235: "InternalErrorNotSupported",
    236: "ForTestingErrorExtraInfo", 239: "SnapshotTooOld", 240: "DNSRecordTypeMismatch",
    242: "CannotCreateCollection", 243: "IncompatibleWithUpgradedServer", 245: "BrokenPromise",
    246: "SnapshotUnavailable", 247: "ProducerConsumerQueueBatchTooLarge", 248: "ProducerConsumerQueueEndClosed",
    249: "StaleDbVersion", 250: "StaleChunkHistory", 252: "ReentrancyNotAllowed", 253: "FreeMonHttpInFlight",
    254: "FreeMonHttpTemporaryFailure", 255: "FreeMonHttpPermanentFailure", 256: "TransactionCommitted",
    257: "TransactionTooLarge", 258: "UnknownFeatureCompatibilityVersion", 259: "KeyedExecutorRetry",
    260: "InvalidResumeToken", 264: "TooManyFilesOpen", 265: "OrphanedRangeCleanUpFailed",
    267: "PreparedTransactionInProgress", 268: "CannotBackup",
    269: "DataModifiedByRepair", 270: "RepairedReplicaSetNode", 271: "JSInterpreterFailureWithStack",
    272: "MigrationConflict", 273: "ProducerConsumerQueueProducerQueueDepthExceeded",
    274: "ProducerConsumerQueueConsumed", 275: "ExchangePassthrough", 276: "IndexBuildAborted",
    277: "AlarmAlreadyFulfilled", 278: "UnsatisfiableCommitQuorum", 279: "ClientDisconnect",
    280: "ChangeStreamFatalError", 281: "TransactionCoordinatorSteppingDown",
    282: "TransactionCoordinatorReachedAbortDecision", 283: "WouldChangeOwningShard",
    284: "ForTestingErrorExtraInfoWithExtraInfoInNamespace", 285: "IndexBuildAlreadyInProgress",
    286: "ChangeStreamHistoryLost", 287: "TransactionCoordinatorDeadlineTaskCanceled",
    289: "WaitForMajorityServiceEarlierOpTimeAvailable", 290: "TransactionExceededLifetimeLimitSeconds",
    293: "InvalidSeedList", 294: "InvalidTopologyType", 295: "InvalidHeartBeatFrequency",
    296: "TopologySetNameRequired", 297: "HierarchicalAcquisitionLevelViolation", 298: "InvalidServerType",
    299: "OCSPCertificateStatusRevoked", 300: "RangeDeletionAbandonedBecauseCollectionWithUUIDDoesNotExist",
    301: "DataCorruptionDetected", 302: "OCSPCertificateStatusUnknown", 303: "SplitHorizonChange",
    306: "ReadThroughCacheLookupCanceled", 307: "RangeDeletionAbandonedBecauseTaskDocumentDoesNotExist",
    308: "CurrentConfigNotCommittedYet", 309: "ExhaustCommandFinished", 310: "PeriodicJobIsStopped",
    311: "TransactionCoordinatorCanceled", 312: "OperationIsKilledAndDelisted",
    313: "ResumableRangeDeleterDisabled", 315: "TooStaleToSyncFromSource", 316: "QueryTrialRunCompleted",
    317: "ConnectionPoolExpired", 318: "ForTestingOptionalErrorExtraInfo", 319: "MovePrimaryInProgress",
    326: "OplogQueryMinTsMissing", 330: "SkipCommandExecution", 331: "FailedToRunWithReplyBuilder",
    332: "CannotDowngrade", 333: "ServiceExecutorInShutdown", 336: "TimeseriesBucketCleared",
    337: "AuthenticationAbandoned", 338: "ReshardCollectionInProgress", 339: "NoSuchReshardCollection",
    340: "ReshardCollectionCommitted", 341: "ReshardCollectionAborted", 342: "ReshardingCriticalSectionTimeout",
    343: "ShardCannotRefreshDueToLocksHeld", 344: "AuditingNotEnabled", 345: "RuntimeAuditConfigurationNotEnabled",
    346: "ChangeStreamInvalidated", 348: "ChangeStreamTopologyChange", 349: "KeyPatternShorterThanBound",
    350: "ReshardCollectionTruncatedError", 351: "ChangeStreamStartAfterInvalidate",
    354: "LoadBalancerSupportMismatch", 355: "InterruptedDueToStorageChange", 356: "TxnRetryCounterTooOld",
    358: "InternalTransactionNotSupported", 360: "PlacementVersionRefreshCanceled", 362: "FutureAlreadyRetrieved",
    363: "RetryableTransactionInProgress", 365: "TemporarilyUnavailable",
    366: "WouldChangeOwningShardDeletedNoDocument", 367: "FLECompactionPlaceholder", 369: "FLETransactionAbort",
    370: "CannotDropShardKeyIndex", 371: "UserWritesBlocked", 372: "CloseConnectionForShutdownCommand",
    373: "InternalTransactionsExhaustiveFindHasMore", 374: "TransactionAPIMustRetryTransaction",
    375: "TransactionAPIMustRetryCommit", 376: "ChangeStreamNotEnabled", 377: "FLEMaxTagLimitExceeded",
    378: "NonConformantBSON", 379: "DatabaseMetadataRefreshCanceled", 380: "RequestAlreadyFulfilled",
    381: "ReshardingCoordinatorServiceConflictingOperationInProgress", 382: "RemoteCommandExecutionError",
    383: "CollectionIsEmptyLocally", 384: "ConnectionError", 385: "ConflictingServerlessOperation",
    386: "DuplicateKeyId", 387: "EncounteredFLEPayloadWhileApplyingHmac", 9001: "SocketException",
    9996: "OBSOLETE_RecvStaleConfig", 10058: "LegacyNotPrimary", 12586: "BackgroundOperationInProgressForDatabase",
    12587: "BackgroundOperationInProgressForNamespace", 13104: "OBSOLETE_PrepareConfigsFailed",
    13113: "MergeStageNoMatchingDocument", 13388: "StaleConfig", 17280: "OBSOLETE_KeyTooLong",
    28769: "NamespaceCannotBeSharded", 31082: "SearchNotEnabled", 46841: "ClientMarkedKilled",
    50768: "NotARetryableWriteCommand", 50915: "BackupCursorOpenConflictWithCheckpoint",
    56846: "ConfigServerUnreachable", 57986: "RetryableInternalTransactionNotSupported",
    4662500: "IDLUnknownFieldPossibleMongocryptd", 4938500: "IndexNotFoundCachedPlan",
}


def code_name(code: int) -> str:
    """The wire ``codeName`` of ``code``: its name in error_codes.yml, else ``Location<code>``."""
    try:
        return ErrorCode(code).name
    except ValueError:
        return OTHER_CODE_NAMES.get(code, f"Location{code}")


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
        """The error document a command reply carries (``ok`` first, like mongod), with mongod's
        ErrorLabelBuilder's labels that depend on the code alone (a standalone has no retryable writes
        or transactions): NonResumableChangeStreamError for its category's codes. A fail point's
        ``errorLabels`` (in ``extra``) replace them, and an empty list means none (getErrorLabels)."""
        reply: dict[str, Any] = {"ok": 0.0, "errmsg": self.message, "code": self.code, "codeName": self.code_name}
        reply.update(self.extra)
        labels = reply.get("errorLabels")
        if labels is None and self.code in NON_RESUMABLE_CHANGE_STREAM_CODES:
            reply["errorLabels"] = ["NonResumableChangeStreamError"]
        elif labels == []:
            del reply["errorLabels"]
        return reply

    def to_write_error(self, index: int) -> dict[str, Any]:
        """The ``writeErrors`` entry for the statement at ``index`` of a write batch."""
        entry: dict[str, Any] = {"index": index, "code": self.code}
        entry.update({k: v for k, v in self.extra.items() if k in WRITE_ERROR_FIELDS})
        entry["errmsg"] = self.message
        return entry

    def __repr__(self) -> str:
        return f"MongoError({self.code} {self.code_name}: {self.message!r})"


class ErrmsgFailure(MongoError):
    """The failure of one of mongod's legacy errmsg-style commands (ErrmsgCommandDeprecated: the
    command sets ``errmsg`` and returns false): ``{ok: 0, errmsg}`` on the wire, with no ``code`` or
    ``codeName`` (CommandHelpers::appendSimpleCommandStatus). mongod reads such a reply back as 8
    UnknownError (getStatusFromCommandResult: the profiler's and the log's errCode), which ``code``
    keeps for the server's own accounting."""

    def __init__(self, message: str, *, before: dict[str, Any] | None = None):
        super().__init__(ErrorCode.UnknownError, message)
        self.before = before or {}  # what the command appended to its reply before it failed

    def to_reply(self) -> dict[str, Any]:
        return {**self.before, "ok": 0.0, "errmsg": self.message}
