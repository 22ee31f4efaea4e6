"""Server parameters (``getParameter`` / ``setParameter`` / ``--setParameter name=value``).

One registry of typed parameters. The registry is the only mutable state here; each value is
parsed by its spec's ``parse`` function, so a parameter always holds a value of its declared type.
Settability mirrors mongod: some only at start-up, some also at runtime, some read-only.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, cast

from tidemark import log
from tidemark.protocol.errors import ErrorCode, MongoError


def _parse_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return value != 0
    if type(value) is str and value.lower() in ("true", "1", "yes", "on"):
        return True
    if type(value) is str and value.lower() in ("false", "0", "no", "off"):
        return False
    raise ValueError(f"expected a boolean, got {value!r}")


def _parse_int(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError(f"expected an integer, got {value!r}")
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError(f"expected an integer, got {value!r}")
        return int(value)
    return int(value)  # ints, Int64, numeric strings; raises ValueError otherwise


def _parse_non_negative_int(value: Any) -> int:
    parsed = _parse_int(value)
    if parsed < 0:
        raise ValueError(f"must be greater than or equal to 0, got {parsed}")
    return parsed


INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def _parse_int32(value: Any, what: str) -> int:
    """A number that converts to a 32-bit int without loss, as mongod's ``BSONElement::tryCoerce<int>``
    (NaN, fractions and anything outside the int range fail)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{what} must be a number, got {value!r}")
    if value != value or (isinstance(value, float) and not value.is_integer()) or not INT32_MIN <= value <= INT32_MAX:
        raise ValueError(f"{what} out of range, value: {value!r}")
    return int(value)


def _parse_log_level(value: Any) -> int:
    # (at start-up the value is text: "--setParameter logLevel=2")
    parsed = _parse_int32(int(value) if type(value) is str and value.lstrip("-").isdigit() else value, "logLevel")
    if parsed < 0:
        raise ValueError(f"must be greater than or equal to 0, got {parsed}")
    return parsed


def _parse_component_verbosity(value: Any) -> dict[str, int]:
    """``logComponentVerbosity`` (server/log.py validates the components): each verbosity must be an
    int32 (NaN and out-of-range numbers fail), and a negative default clears it back to 0 as mongod
    clears the default component's severity."""
    if type(value) is str:  # (--setParameter gives JSON text)
        try:
            value = json.loads(value)
        except ValueError:
            raise ValueError(f"expected a document, got {value!r}") from None
    if isinstance(value, dict):
        _check_verbosities(value, "")
        top = value.get("verbosity")
        if isinstance(top, int | float) and not isinstance(top, bool) and top < 0:
            value = {**value, "verbosity": 0}
    return log.parse_component_verbosity(value)


def _check_verbosities(doc: dict, prefix: str) -> None:
    for key, sub in doc.items():
        dotted = f"{prefix}.{key}" if prefix else key
        if isinstance(sub, dict):
            _check_verbosities(sub, dotted)
        elif isinstance(sub, int | float) and not isinstance(sub, bool):
            _parse_int32(sub, f"verbosity of {dotted}")


AUTOMATION_DESCRIPTOR_MAX = 64


def _parse_automation_descriptor(value: Any) -> str:
    """mongod's automationServiceDescriptor: a string of at most 64 bytes (hello echoes it when set)."""
    if type(value) is not str:
        raise MongoError(ErrorCode.TypeMismatch,
                         "Value for parameter automationServiceDescriptor must be of type 'string'")
    if len(value.encode()) > AUTOMATION_DESCRIPTOR_MAX:
        raise MongoError(ErrorCode.Overflow, "Value for parameter automationServiceDescriptor must be no more "
                                             f"than {AUTOMATION_DESCRIPTOR_MAX} bytes")
    return value


def _parse_positive_int(value: Any) -> int:
    parsed = _parse_int(value)
    if parsed <= 0:
        raise ValueError(f"must be greater than 0, got {parsed}")
    return parsed


def _parse_at_least_two(value: Any) -> int:
    parsed = _parse_int(value)
    if parsed < 2:  # (timeseriesIdleBucketExpiryMaxCountPerAttempt: validator gte 2 in timeseries.idl)
        raise ValueError(f"must be greater than or equal to 2, got {parsed}")
    return parsed


MAX_SYNCDELAY_SECS = 9_000_000  # mongod's StorageGlobalParams::kMaxSyncdelaySecs


def _parse_syncdelay(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"syncdelay must be a number, got {value!r}")
    try:
        parsed = float(value)
    except ValueError:
        raise ValueError(f"syncdelay must be a number, got {value!r}") from None
    if not 0 <= parsed <= MAX_SYNCDELAY_SECS:  # (NaN fails both)
        raise ValueError(f"syncdelay must be between 0 and {MAX_SYNCDELAY_SECS}, inclusive")
    return parsed


def _parse_iteration_count(value: Any) -> int:
    parsed = _parse_int(value)
    if parsed < 5000:
        raise ValueError(f"must be greater than or equal to 5000, got {parsed}")
    return parsed


def _parse_str_list(value: Any) -> list[str]:
    if type(value) is str:
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, list) and all(type(v) is str for v in value):
        return list(value)
    raise ValueError(f"expected a comma-separated list of names, got {value!r}")


_FAULT_PLACES = ("commit", "grow", "journal", "index")  # storage/faults.py PLACES


def _parse_commit_faults(value: Any) -> dict[str, Any]:
    """``{times: N, errno: "ENOSPC"|"EIO", at: "commit"|"grow"|"journal"|"index"}`` (or ``"N"`` /
    ``"N:EIO"``): fail the next N storage operations at that place (default: commits)."""
    if type(value) is str:  # "N[:ERRNO[:AT]]", e.g. --setParameter failStorageCommitsForTest=5:ENOSPC:commit
        count, _, rest = value.partition(":")
        kind, _, at = rest.partition(":")
        value = {"times": count.strip(), "errno": kind.strip() or "ENOSPC", "at": at.strip() or "commit"}
    if not isinstance(value, dict) or set(value) - {"times", "errno", "at"}:
        raise ValueError(f"expected {{times: <n>, errno: 'ENOSPC'|'EIO', at: 'commit'|...}}, got {value!r}")
    kind = value.get("errno", "ENOSPC")
    if kind not in ("ENOSPC", "EIO"):
        raise ValueError(f"errno must be 'ENOSPC' or 'EIO', got {kind!r}")
    at = value.get("at", "commit")
    if at not in _FAULT_PLACES:
        raise ValueError(f"at must be one of {', '.join(_FAULT_PLACES)}, got {at!r}")
    return {"times": _parse_non_negative_int(value.get("times", 0)), "errno": kind, "at": at}


def _read_only(value: Any) -> Any:
    raise ValueError("this parameter cannot be set")


@dataclass(frozen=True, slots=True)
class ParamSpec:
    name: str
    default: Any
    parse: Callable[[Any], Any]
    settable_at_startup: bool
    settable_at_runtime: bool
    help: str
    test_only: bool = False  # exists only with enableTestCommands (mongod's test-only parameters)


MIB = 1024 * 1024

SPECS: tuple[ParamSpec, ...] = (
    ParamSpec("allowDiskUseByDefault", True, _parse_bool, True, True,
              "a find or aggregate without allowDiskUse may spill its blocking sort to disk (mongod 6.0+: true)"),
    ParamSpec("automationServiceDescriptor", "", _parse_automation_descriptor, True, True,
              "a service name (at most 64 bytes) that hello and isMaster echo when set"),
    ParamSpec(
        "authSchemaVersion", 5, _read_only, False, False, "version of the user/role schema (read-only)"
    ),
    ParamSpec(
        "authenticationMechanisms",
        ["MONGODB-X509", "SCRAM-SHA-1", "SCRAM-SHA-256"],
        _parse_str_list,
        True,
        False,
        "authentication mechanisms the server accepts",
    ),
    ParamSpec(
        "clientCursorMonitorFrequencySecs",
        4,
        _parse_positive_int,
        True,
        True,
        "how often idle cursors are looked for and killed (seconds; a change applies from the next look)",
    ),
    ParamSpec(
        "cursorTimeoutMillis",
        600_000,
        _parse_positive_int,
        True,
        True,
        "idle time after which a cursor is killed",
    ),
    ParamSpec("enableAccessToUserRoles", True, _parse_bool, True, True,
              "$$USER_ROLES holds the authenticated user's roles; false: reading it fails with 51144"),
    ParamSpec("notablescan", False, _parse_bool, True, True,
              "refuse a query with a filter that no index serves (a collection scan) on a user collection: "
              "291 NoQueryExecutionPlans (mongod's --notablescan)"),
    ParamSpec("disableLogicalSessionCacheRefresh", False, _parse_bool, True, False,
              "no periodic refresh of the logical session cache (refreshLogicalSessionCacheNow still refreshes it)"),
    ParamSpec(
        "enableLocalhostAuthBypass",
        True,
        _parse_bool,
        True,
        False,
        "with access control on and no user yet, let a localhost connection create the first user",
    ),
    ParamSpec(
        "enableTestCommands",
        False,
        _parse_bool,
        True,
        False,
        "enable test-only commands such as configureFailPoint (start-up only, like mongod)",
    ),
    ParamSpec(
        "enableTimeoutOfInactiveSessionCursors",
        False,
        _parse_bool,
        True,
        True,
        "let cursors opened in a session time out after cursorTimeoutMillis too (else they end with their session)",
    ),
    ParamSpec(
        "failStorageCommitsForTest",
        {"times": 0, "errno": "ENOSPC", "at": "commit"},
        _parse_commit_faults,
        True,
        True,
        "testing only: make the next <times> storage operations at <at> (commit, grow: map growth, journal: "
        "time-series journal appends, index: index builds) fail with ENOSPC or EIO (nothing of them is "
        "written; the writes get 14031 OutOfDiskSpace or 8 UnknownError); at start-up (N[:ERRNO[:AT]]) armed "
        "before the first write of the start-up (journal recovery)",
        test_only=True,
    ),
    ParamSpec(
        "featureCompatibilityVersion",
        {"version": "7.0"},
        _read_only,
        False,
        False,
        "feature compatibility version (setFeatureCompatibilityVersion sets it; kept in admin.system.version)",
    ),
    ParamSpec(
        "internalDocumentSourceBucketAutoMaxMemoryBytes",
        100 * MIB,
        _parse_positive_int,
        True,
        True,
        "memory limit of a $bucketAuto's sort (past it: 292, or with allowDiskUse sorted runs on disk)",
    ),
    ParamSpec(
        "internalDocumentSourceGroupMaxMemoryBytes",
        100 * MIB,
        _parse_positive_int,
        True,
        True,
        "memory limit of a $group (its group keys and accumulators' state)",
    ),
    ParamSpec(
        "internalDocumentSourceLookupCacheSizeBytes",
        100 * MIB,
        _parse_positive_int,
        True,
        True,
        "bytes of the documents a $lookup keeps of its sub-pipeline's uncorrelated prefix (past them it "
        "runs the whole sub-pipeline again for each input document)",
    ),
    ParamSpec(
        "internalDocumentSourceSetWindowFieldsMaxMemoryBytes",
        100 * MIB,
        _parse_positive_int,
        True,
        True,
        "memory limit of one $setWindowFields partition (past it: 5643011, or with allowDiskUse the "
        "partition on disk)",
    ),
    ParamSpec(
        "internalQueryExplainSizeThresholdBytes",
        10 * MIB,
        _parse_non_negative_int,
        True,
        True,
        "bytes of one explain stage tree past which its further stages become a size warning",
    ),
    ParamSpec(
        "internalQueryMaxBlockingSortMemoryUsageBytes",
        100 * MIB,
        _parse_positive_int,
        True,
        True,
        "memory limit of a blocking sort ($sort, a find's sort, the sort $setWindowFields runs on)",
    ),
    ParamSpec("localLogicalSessionTimeoutMinutes", 30, _parse_non_negative_int, True, False,
              "minutes a logical session lives after its last use (hello's logicalSessionTimeoutMinutes; the "
              "expireAfterSeconds of config.system.sessions' TTL index)"),
    ParamSpec(
        "logComponentVerbosity",
        {},
        _parse_component_verbosity,
        True,
        True,
        "verbosity per log component ({verbosity: n, command: {verbosity: n}, ...}; -1 inherits the parent's)",
    ),
    ParamSpec("logLevel", 0, _parse_log_level, True, True, "verbosity of the log (0 = informational)"),
    ParamSpec("logicalSessionRefreshMillis", 300_000, _parse_positive_int, True, False,
              "interval of the logical session cache's refresh (config.system.sessions; cursors of ended and "
              "expired sessions killed)"),
    ParamSpec("maxSessions", 1_000_000, _parse_non_negative_int, True, False,
              "most logical sessions the cache holds between two refreshes (past it: 261 TooManyLogicalSessions)"),
    ParamSpec("quiet", False, _parse_bool, True, True, "suppress connection accepted/ended log lines"),
    ParamSpec("redactEncryptedFields", True, _parse_bool, True, True,
              "redact BinData subtype 6 (encrypted) values in log lines and diagnostics"),
    ParamSpec(
        "scramIterationCount",
        10_000,
        _parse_iteration_count,
        True,
        True,
        "PBKDF2 iterations of new SCRAM-SHA-1 credentials (at least 5000)",
    ),
    ParamSpec(
        "scramSHA256IterationCount",
        15_000,
        _parse_iteration_count,
        True,
        True,
        "PBKDF2 iterations of new SCRAM-SHA-256 credentials (at least 5000)",
    ),
    ParamSpec(
        "tidemarkInlineReadMicros",
        1000,
        _parse_non_negative_int,
        True,
        True,
        "Tidemark: how long a short read may run on the event loop before it moves to the thread pool "
        "(microseconds of the loop thread's CPU time; 0: every read goes to the pool; server/README.md)",
    ),
    ParamSpec(
        "tidemarkRunQuantumMillis",
        5,
        _parse_positive_int,
        True,
        False,
        "Tidemark: how long a thread-pool operation runs before it yields its run token to a waiting one "
        "at its next interruption check (milliseconds; server/scheduler.py)",
    ),
    ParamSpec(
        "tidemarkRunTokens",
        2,
        _parse_positive_int,
        True,
        False,
        "Tidemark: how many thread-pool operations run Python at once (the others wait their turn; "
        "server/scheduler.py)",
    ),
    # The time-series bucketing limits are startup-only, as mongod 7.0's timeseries.idl declares them
    # (set_at: startup): setParameter answers 20 IllegalOperation "not allowed to change [...] at runtime".
    ParamSpec(
        "timeseriesBucketMaxCount",
        1000,
        _parse_positive_int,
        True,
        False,
        "maximum number of measurements in a time-series bucket",
    ),
    ParamSpec(
        "timeseriesBucketMaxSize",
        128_000,
        _parse_positive_int,
        True,
        False,
        "maximum size in bytes of a time-series bucket",
    ),
    ParamSpec(
        "timeseriesColumnarInserts",
        True,
        _parse_bool,
        True,
        True,
        "route insert batches whose measurements share one layout column-wise (Tidemark; off: decode each "
        "measurement, for diagnosis)",
    ),
    ParamSpec(
        "timeseriesBucketMinCount",
        10,
        _parse_positive_int,
        True,
        False,
        "measurements a bucket keeps before it may close for size reasons",
    ),
    ParamSpec(
        "syncdelay",
        60.0,
        _parse_syncdelay,
        True,
        True,
        "seconds between periodic checkpoints (in-memory buckets written in full; the journal keeps "
        "acknowledged writes durable in between); 0 disables them",
    ),
    ParamSpec(
        "timeseriesIdleBucketExpiryMaxCountPerAttempt",
        3,
        _parse_at_least_two,
        True,
        False,
        "idle buckets closed per expiry attempt",
    ),
    ParamSpec(
        "timeseriesIdleBucketExpiryMemoryUsageThreshold",
        0,
        _parse_int,  # (mongod's has no validator: any value, and one not positive means the default)
        True,
        True,
        "bucket catalog memory (bytes) above which idle buckets close; 0 or less means 2.5% of RAM",
    ),
    ParamSpec(
        "tlsSniffTimeoutSecs",
        30,
        _parse_positive_int,
        True,
        False,
        "testing only: seconds a connection to a TLS-enabled port (allowTLS/preferTLS/requireTLS) has to "
        "send its first 16 bytes before it is closed",
        test_only=True,
    ),
    ParamSpec(
        "requireApiVersion", False, _parse_bool, True, True,
        "testing only: every command must carry apiVersion (else 498870), as mongod's test-only parameter",
        test_only=True,
    ),
    ParamSpec(
        "ttlMonitorSleepSecs", 60, _parse_positive_int, True, True,
        "seconds between TTL monitor passes (a new value applies to the wait in progress)"
    ),
)


class ServerParams(dict[str, Any]):
    """The live parameter values of this process: the mapping itself holds them (name -> value), so
    that ``params[name]`` — read on every command, several times — is the dict's own look-up, no
    Python call. Only the methods below change a value (parsed by its ``ParamSpec``); ``in`` answers
    whether a client can see a name (test-only ones exist only with enableTestCommands), and
    ``names()`` lists those."""

    def __init__(self, specs: tuple[ParamSpec, ...] = SPECS):
        super().__init__((spec.name, spec.default) for spec in specs)
        self._specs = {spec.name: spec for spec in specs}

    def __contains__(self, name: object) -> bool:
        """Whether a client can see ``name``: a test-only parameter exists only with enableTestCommands."""
        spec = self._specs.get(cast(str, name))  # any other key is simply not found
        return spec is not None and (not spec.test_only or bool(self.get("enableTestCommands")))

    def names(self) -> Iterator[str]:
        return iter(sorted(name for name in self.keys() if name in self))

    def spec(self, name: str) -> ParamSpec:
        return self._specs[name]

    def details(self, name: str) -> dict[str, Any]:
        spec = self._specs[name]
        return {
            "value": self[name],
            "settableAtRuntime": spec.settable_at_runtime,
            "settableAtStartup": spec.settable_at_startup,
        }

    def set_at_startup(self, assignment: str) -> None:
        """Apply one ``--setParameter name=value``. Raises ValueError with a user-facing message."""
        name, sep, raw = assignment.partition("=")
        name = name.strip()
        if not sep or not name:
            raise ValueError(f"Illegal --setParameter parameter: '{assignment}' (expected name=value)")
        self.set_startup_value(name, raw)

    def set_startup_value(self, name: str, raw: Any) -> None:
        spec = self._specs.get(name)
        if spec is None:
            raise ValueError(f"Unknown --setParameter '{name}'")
        if not spec.settable_at_startup:
            raise ValueError(f"Cannot use --setParameter to set '{name}' at startup")
        try:
            self[name] = spec.parse(raw)
        except (ValueError, TypeError, MongoError) as exc:
            raise ValueError(f'Bad value for parameter "{name}": {exc}') from None

    def assign(self, name: str, value: Any) -> None:
        """Set a value the server itself maintains (``featureCompatibilityVersion``, from its document),
        past the parameter's own parsing: no client sets it this way."""
        self[name] = value

    def check_runtime_settable(self, name: str) -> ParamSpec:
        """``name`` names a parameter a client may change now (mongod's setParameter checks every name
        of the command this way before it sets any): 72 unknown, 20 not settable at runtime."""
        spec = self._specs.get(name)
        if spec is None or name not in self:
            raise MongoError(
                ErrorCode.InvalidOptions,
                f"attempted to set unrecognized parameter [{name}], use help:true to see options ",
            )
        if not spec.settable_at_runtime:
            raise MongoError(ErrorCode.IllegalOperation, f"not allowed to change [{name}] at runtime")
        return spec

    def set_at_runtime(self, name: str, value: Any) -> Any:
        """Apply ``setParameter`` at runtime; returns the previous value. Raises MongoError."""
        spec = self.check_runtime_settable(name)
        try:
            parsed = spec.parse(value)
        except (ValueError, TypeError) as exc:
            raise MongoError(ErrorCode.BadValue, f"Invalid value for parameter {name}: {exc}") from None
        previous = self[name]
        self[name] = parsed
        return previous
