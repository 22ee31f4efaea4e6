"""The process log: one line per event in MongoDB's structured JSON log format.

    {"t":{"$date":"2026-01-01T00:00:00.000+00:00"},"s":"I","c":"NETWORK","id":22943,
     "ctx":"listener","msg":"Connection accepted","attr":{...}}

Lines go to stdout or ``--logpath`` and into a bounded ring (``getLog: "global"``); warnings logged
with ``startup=True`` are also kept for ``getLog: "startupWarnings"`` (mongosh prints them as a
banner). ``private`` attributes (a Python traceback with source paths) go to the log sink only: the
ring answers clients, and clients see mongod-shaped lines, never the server's internals. The sink is process-wide: :func:`configure` is called once by ``tidemark.app``; before that,
lines go to stdout. Thread-safe: the storage writer thread may log too.
"""

from __future__ import annotations

import collections
import datetime
import errno
import json
import os
import sys
import threading
import traceback
from typing import Any, TextIO

RING_SIZE = 1024

# Severities as MongoDB writes them.
FATAL, ERROR, WARNING, INFO, DEBUG = "F", "E", "W", "I", "D1"


class _Sink:
    def __init__(self) -> None:
        self.stream: TextIO = sys.stdout
        self.owns_stream = False
        self.path: str | None = None  # the --logpath file, None for stdout
        self.quiet = False
        self.lock = threading.Lock()
        self.recent: collections.deque[str] = collections.deque(maxlen=RING_SIZE)
        self.startup: list[str] = []
        self.total_lines = 0


_sink = _Sink()


def configure(path: str | None = None, *, quiet: bool = False, append: bool = True) -> None:
    """Send lines to ``path`` (appending unless ``append`` is False) or stdout; ``quiet`` drops
    connection chatter like mongod's --quiet."""
    with _sink.lock:
        if _sink.owns_stream:
            _sink.stream.close()
        if path:
            _sink.stream = open(path, "a" if append else "w", encoding="utf-8", buffering=1)  # noqa: SIM115
            _sink.owns_stream = True
        else:
            _sink.stream = sys.stdout
            _sink.owns_stream = False
        _sink.path = path or None
        _sink.quiet = quiet


def set_quiet(quiet: bool) -> None:
    _sink.quiet = quiet


def is_quiet() -> bool:
    return _sink.quiet


def close() -> None:
    with _sink.lock:
        _sink.stream.flush()
        if _sink.owns_stream:
            _sink.stream.close()
            _sink.stream = sys.stdout
            _sink.owns_stream = False
            _sink.path = None


def rotation_suffix(now: datetime.datetime | None = None) -> str:
    """``.YYYY-MM-DDTHH-MM-SS`` (UTC): what mongod appends to the renamed log file."""
    return "." + (now or datetime.datetime.now(datetime.UTC)).strftime("%Y-%m-%dT%H-%M-%S")


def rotate(rename: bool, *, ctx: str = "SignalHandler", log_type: str | None = None) -> OSError | None:
    """mongod's log rotation (SIGUSR1, ``logRotate``). ``rename``: the file becomes ``<path>.<suffix>`` and
    a new one is opened at ``<path>``; otherwise (``--logRotate reopen``, after logrotate renamed it) the
    file is closed and opened again (appending). Logging to stdout there is nothing to do but the line.
    Returns the error (also logged as a warning, 23168) when the file could not be rotated; the sink then
    keeps writing, to the old file or to stdout — never raises, never stops the server."""
    suffix = rotation_suffix()
    info("CONTROL", 23166, "Log rotation initiated", ctx=ctx, suffix=suffix, logType=log_type)
    failure: OSError | None = None
    with _sink.lock:
        path = _sink.path
        if path is None:
            return None
        _sink.stream.flush()
        try:
            if rename:
                target = path + suffix
                if os.path.exists(target):  # two rotations in one second: mongod refuses to overwrite
                    raise FileExistsError(errno.EEXIST, "Target file exists", target)
                os.rename(path, target)
            stream = open(path, "a", encoding="utf-8", buffering=1)  # noqa: SIM115
        except OSError as exc:
            failure = exc
        else:
            _sink.stream.close()
            _sink.stream = stream
    if failure is not None:
        warning("CONTROL", 23168, "Log rotation failed", ctx=ctx, file=path,
                error=f"{failure.strerror or failure}" + (f": {failure.filename}" if failure.filename else ""))
    return failure


def _timestamp() -> str:
    now = datetime.datetime.now(datetime.UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}+00:00"


def _jsonable(value: Any) -> Any:
    return str(value)


def format_line(severity: str, component: str, log_id: int, ctx: str, msg: str, attr: dict | None,
                extra: dict | None = None) -> str:
    """One JSON line; ``extra`` adds top-level fields after ``attr`` (``truncated``/``size`` when an
    attribute was truncated, as mongod writes them)."""
    entry: dict[str, Any] = {
        "t": {"$date": _timestamp()},
        "s": severity,
        "c": component,
        "id": log_id,
        "ctx": ctx,
        "msg": msg,
    }
    if attr:
        entry["attr"] = attr
    if extra:
        entry.update(extra)
    return json.dumps(entry, separators=(",", ":"), default=_jsonable, ensure_ascii=False)


def log(
    severity: str,
    component: str,
    log_id: int,
    msg: str,
    *,
    ctx: str = "main",
    attr: dict | None = None,
    startup: bool = False,
    chatter: bool = False,
    extra: dict | None = None,
    private: dict | None = None,
) -> None:
    """Write one event. ``chatter`` events (connection accepted/ended) are dropped when quiet;
    ``private`` attributes are written to the sink but not kept for ``getLog``."""
    if chatter and _sink.quiet:
        return
    line = format_line(severity, component, log_id, ctx, msg, attr, extra)
    full = (format_line(severity, component, log_id, ctx, msg, {**(attr or {}), **private}, extra) if private
            else line)
    with _sink.lock:
        _sink.stream.write(full + "\n")
        _sink.stream.flush()
        _sink.recent.append(line)
        _sink.total_lines += 1
        if startup:
            _sink.startup.append(line)


def info(component: str, log_id: int, msg: str, *, ctx: str = "main", **attr: Any) -> None:
    log(INFO, component, log_id, msg, ctx=ctx, attr=attr or None)


def warning(
    component: str, log_id: int, msg: str, *, ctx: str = "main", startup: bool = False, **attr: Any
) -> None:
    log(WARNING, component, log_id, msg, ctx=ctx, attr=attr or None, startup=startup)


def error(component: str, log_id: int, msg: str, *, ctx: str = "main", **attr: Any) -> None:
    log(ERROR, component, log_id, msg, ctx=ctx, attr=attr or None)


def exception(
    component: str, log_id: int, msg: str, exc: BaseException, *, ctx: str = "main", **attr: Any
) -> None:
    """Log an unexpected exception with its traceback (as one line, like mongod's backtraces); the
    traceback goes to the log sink only (``getLog`` lines carry no source paths)."""
    attr["error"] = f"{type(exc).__name__}: {exc}"
    log(ERROR, component, log_id, msg, ctx=ctx, attr=attr,
        private={"traceback": "".join(traceback.format_exception(exc))})


# --- verbosity (logLevel, logComponentVerbosity) ------------------------------------------------
# mongod's logv2 components: (dotted name, the "c" field written in lines). A component's verbosity
# of -1 inherits its parent's; the default (``verbosity`` at the top, = ``logLevel``) is >= 0.
COMPONENTS: tuple[tuple[str, str], ...] = (
    ("accessControl", "ACCESS"), ("command", "COMMAND"), ("control", "CONTROL"), ("executor", "EXECUTOR"),
    ("geo", "GEO"), ("index", "INDEX"), ("network", "NETWORK"), ("network.asio", "ASIO"),
    ("network.bridge", "BRIDGE"), ("network.connectionPool", "CONNPOOL"), ("processHealth", "HEALTH"),
    ("query", "QUERY"), ("replication", "REPL"), ("replication.election", "ELECTION"),
    ("replication.heartbeats", "REPL_HB"), ("replication.initialSync", "INITSYNC"),
    ("replication.rollback", "ROLLBACK"), ("sharding", "SHARDING"), ("sharding.rangeDeleter", "RDELETER"),
    ("sharding.shardingCatalogRefresh", "SH_REFR"), ("sharding.migration", "MIGRATE"),
    ("sharding.reshard", "RESHARD"), ("sharding.migrationPerf", "MIG_PERF"), ("storage", "STORAGE"),
    ("storage.recovery", "RECOVERY"), ("storage.journal", "JOURNAL"), ("write", "WRITE"), ("ftdc", "FTDC"),
    ("tracking", "TRACKING"), ("transaction", "TXN"), ("tenantMigration", "TENANT_M"), ("test", "TEST"),
)
_COMPONENT_NAMES = {dotted for dotted, _ in COMPONENTS}
_verbosity: dict[str, int] = {"": 0, **dict.fromkeys(_COMPONENT_NAMES, -1)}  # "" is the default
# "c" field -> effective verbosity, for every component (recomputed in place on every change): the
# per-command checks read it directly, ``log.levels["COMMAND"] >= 1`` — a look-up, no call — each where
# it decides, so that a command that changes the level logs its own "Command finished" at the new one
levels: dict[str, int] = {}


def _recompute() -> None:
    effective = {}
    for dotted, short in COMPONENTS:
        name = dotted
        while _verbosity.get(name, -1) < 0 and name:
            name = name.rpartition(".")[0]
        effective[short] = _verbosity[name]
    levels.update(effective)  # (the same keys every time: no moment without one, for a reader elsewhere)


_recompute()


def verbosity() -> int:
    """The default verbosity (``logLevel``)."""
    return _verbosity[""]


def set_verbosity(level: int) -> None:
    _verbosity[""] = int(level)
    _recompute()


def component_verbosity() -> dict[str, Any]:
    """``logComponentVerbosity`` as mongod's getParameter shows it (nested, -1 = inherited)."""
    doc: dict[str, Any] = {"verbosity": _verbosity[""]}
    for dotted, _short in COMPONENTS:
        node = doc
        for part in dotted.split("."):
            node = node.setdefault(part, {})
        node["verbosity"] = _verbosity[dotted]
    return doc


def parse_component_verbosity(value: Any) -> dict[str, int]:
    """Validate a ``logComponentVerbosity`` document (or its JSON text, from --setParameter) into
    {dotted component ("" = default): verbosity}. Raises ValueError."""
    if type(value) is str:
        try:
            value = json.loads(value)
        except ValueError:
            raise ValueError(f"expected a document, got {value!r}") from None
    if not isinstance(value, dict):
        raise ValueError(f"expected a document, got {value!r}")
    changes: dict[str, int] = {}

    def walk(doc: dict, prefix: str) -> None:
        for key, sub in doc.items():
            if key == "verbosity":
                if isinstance(sub, bool) or not isinstance(sub, int | float) or int(sub) != sub:
                    raise ValueError(f"Expected {prefix or 'default'}.verbosity to be a number, but found "
                                     f"{type(sub).__name__}")
                if not prefix and sub < 0:
                    raise ValueError("the default verbosity must be greater than or equal to 0")
                changes[prefix] = max(int(sub), -1)
                continue
            dotted = f"{prefix}.{key}" if prefix else key
            if dotted not in _COMPONENT_NAMES:
                raise ValueError(f"Invalid component name default.{dotted}")
            if isinstance(sub, dict):
                walk(sub, dotted)
            elif isinstance(sub, int | float) and not isinstance(sub, bool):
                walk({"verbosity": sub}, dotted)
            else:
                raise ValueError(f"Invalid type for component {dotted}: {type(sub).__name__}")

    walk(value, "")
    return changes


def apply_component_verbosity(changes: dict[str, int]) -> None:
    _verbosity.update(changes)
    _recompute()


def debug(level: int, component: str, log_id: int, msg: str, *, ctx: str = "main", **attr: Any) -> None:
    """A debug line (severity ``D1``..``D5``), written only when the component's verbosity reaches
    ``level`` (``setParameter logLevel`` / ``logComponentVerbosity``, mongosh's ``db.setLogLevel``)."""
    if levels.get(component, _verbosity[""]) >= level:
        log(f"D{level}", component, log_id, msg, ctx=ctx, attr=attr or None)


def recent_lines() -> tuple[list[str], int]:
    """(the retained global lines, total lines written since start)."""
    with _sink.lock:
        return list(_sink.recent), _sink.total_lines


def clear_recent() -> None:
    """mongod's RamLog::clear (the test command ``clearLog: "global"``): the retained lines go and the
    count of lines written starts again at 0. The sink and the start-up warnings are untouched."""
    with _sink.lock:
        _sink.recent.clear()
        _sink.total_lines = 0


def startup_warnings() -> list[str]:
    with _sink.lock:
        return list(_sink.startup)
