"""Admin family: getParameter, setParameter, getCmdLineOpts, hostInfo, connectionStatus, getLog,
listCommands, logRotate, serverStatus, features.

Replies follow mongod 7.0's shapes. ``atlasVersion`` is deliberately absent (CommandNotFound):
success would make mongosh, Compass and the database tools believe they talk to Atlas.
"""

from __future__ import annotations

import datetime
import inspect
import os
import platform
import socket
import time
from typing import Any

import psutil
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.objectid import ObjectId

from tidemark import collections as access
from tidemark import log, ttl
from tidemark.arguments import GENERIC_ARGUMENTS, check_fields, wrong_type
from tidemark.auth.rules import OPEN, RULES
from tidemark.auth.session import auth_info
from tidemark.commands.handshake import build_info_document
from tidemark.context import CommandContext, CommandSpec
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query import javascript
from tidemark.version import MONGODB_VERSION

_PROCESS = psutil.Process()


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC).replace(tzinfo=None)


def _arguments(cmd: dict[str, Any]) -> list[tuple[str, Any]]:
    """The command's own arguments: every field after the first, generic arguments excluded."""
    return [(k, v) for i, (k, v) in enumerate(cmd.items()) if i > 0 and k not in GENERIC_ARGUMENTS]


def _live(name: str, value: Any) -> Any:
    """The log's verbosity parameters are read from the log itself (the two share ``verbosity``)."""
    if name == "logLevel":
        return log.verbosity()
    if name == "logComponentVerbosity":
        return log.component_verbosity()
    return value


_GET_PARAMETER_OPTIONS = ("allParameters", "showDetails")


def _get_parameter_options(selector: Any) -> tuple[bool, bool]:
    """(all parameters, show details) of getParameter's first value, as mongod's
    parseGetParameterOptions (src/mongo/db/commands/parameters.cpp): an object is the IDL struct
    GetParameterOptions (strict: 40415 an unknown field, 14 a field not a bool), ``"*"`` is every
    parameter, anything else names them by the command's other fields."""
    if isinstance(selector, dict):
        options = {"allParameters": False, "showDetails": False}
        for key, value in selector.items():
            if key not in options:
                raise MongoError(ErrorCode.IDLUnknownField, f"BSON field 'getParameter.{key}' is an unknown field.")
            if type(value) is not bool:
                raise wrong_type(f"getParameter.{key}", value, "bool")
            options[key] = value
        return options["allParameters"], options["showDetails"]
    return selector == "*", False


def _append(reply: dict[str, Any], key: str, name: str, value: Any) -> None:
    """mongod's ServerParameter::append of one parameter under ``key``: automationServiceDescriptor
    appends nothing while it is empty (AutomationServiceDescriptorServerParameter::append)."""
    if name == "automationServiceDescriptor" and value == "":
        return
    reply[key] = _live(name, value)


async def get_parameter(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    """The parameters asked for, in the registry's (name) order whatever the request's order, as
    mongod walks its parameter map; 72 when none is known."""
    params = ctx.server.params
    every, show_details = _get_parameter_options(cmd["getParameter"])
    reply: dict[str, Any] = {}
    found = False
    for name in params.names():
        if not every and name not in cmd:
            continue
        found = True
        if show_details:
            details = params.details(name)
            entry: dict[str, Any] = {}
            _append(entry, "value", name, details.pop("value"))
            reply[name] = {**entry, **details}
        else:
            _append(reply, name, name, params[name])
    if not found:
        raise MongoError(ErrorCode.InvalidOptions, "no option found to get")
    return reply


def _apply_side_effects(ctx: CommandContext, name: str) -> None:
    """What a new value changes beyond the registry (the log's verbosity, quiet, storage's faults)."""
    params = ctx.server.params
    if name == "logLevel":
        log.set_verbosity(params["logLevel"])
    if name == "logComponentVerbosity":
        log.apply_component_verbosity(params[name])
    if name == "quiet":
        log.set_quiet(params["quiet"])
    if name == "failStorageCommitsForTest":  # storage's fault-injection hook (storage/faults.py)
        faults = params[name]
        ctx.server.engine.faults.fail_next(faults["times"], faults["errno"], faults["at"])


async def set_parameter(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    """Several parameters in one command, as mongod's CmdSet (src/mongo/db/commands/parameters.cpp):
    every name is checked first, in the command's order (72 unknown, 20 not settable at runtime), and
    nothing is set when one fails; then the values are set in name order, each parsed as it is set, so
    a bad value fails the command after the parameters before it (by name) were set. ``was`` is the
    previous value of the first of them by name (absent when it appends nothing)."""
    assignments = _arguments(cmd)
    params = ctx.server.params
    for name, _ in assignments:
        params.check_runtime_settable(name)
    if not assignments:
        raise MongoError(ErrorCode.InvalidOptions, "no option found to set, use help:true to see options ")
    reply: dict[str, Any] = {}
    for position, (name, value) in enumerate(sorted(assignments, key=lambda item: item[0])):
        previous = params.set_at_runtime(name, value)
        if position == 0:
            _append(reply, "was", name, previous)
        _apply_side_effects(ctx, name)
    return reply


async def get_cmd_line_opts(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    options = ctx.server.options
    return {"argv": list(options.argv), "parsed": options.parsed}


def _os_info() -> dict[str, str]:
    uname = platform.uname()
    return {"name": f"{uname.system} {uname.release}", "version": uname.version}


def log_process_details(server_options: Any, *, ctx: str, rotated: bool = False) -> None:
    """The process's description as mongod logs it at start-up and again after each log rotation, so
    that every log file says what wrote it (log_process_details.cpp): after a rotation "Process Details"
    (20721: pid, port, architecture, host) first; then "Build Info" (23403), "Operating System" (51765)
    and "Options set by command line" (21951, getCmdLineOpts' ``parsed``)."""
    if rotated:
        log.info("CONTROL", 20721, "Process Details", ctx=ctx, pid=os.getpid(), port=server_options.port,
                 architecture="64-bit", host=socket.gethostname())
    build = build_info_document()
    log.info("CONTROL", 23403, "Build Info", ctx=ctx, buildInfo={
        "version": build["version"], "gitVersion": build["gitVersion"],
        "openSSLVersion": build["openssl"]["running"], "modules": build["modules"], "allocator": build["allocator"],
        "environment": {key: build["buildEnvironment"][key] for key in ("distmod", "distarch", "target_arch")}})
    log.info("CONTROL", 51765, "Operating System", ctx=ctx, os=_os_info())
    log.info("CONTROL", 21951, "Options set by command line", ctx=ctx, options=server_options.parsed)


async def host_info(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    uname = platform.uname()
    memory = psutil.virtual_memory()
    frequency = psutil.cpu_freq()
    return {
        "system": {
            "currentTime": _now(),
            "hostname": socket.gethostname(),
            "cpuAddrSize": 64,
            "memSizeMB": Int64(memory.total // (1024 * 1024)),
            "memLimitMB": Int64(memory.total // (1024 * 1024)),
            "numCores": os.cpu_count() or 1,
            "numPhysicalCores": psutil.cpu_count(logical=False) or os.cpu_count() or 1,
            "numCpuSockets": 1,
            "cpuArch": uname.machine,
            "numaEnabled": False,
            "numNumaNodes": 1,
        },
        "os": {"type": uname.system, **_os_info()},
        "extra": {
            "versionString": f"{uname.system} version {uname.release} {uname.version}",
            "kernelVersion": uname.release,
            "cpuFrequencyMHz": f"{frequency.current:.3f}" if frequency else "",
            "pageSize": Int64(os.sysconf("SC_PAGE_SIZE")) if hasattr(os, "sysconf") else Int64(4096),
            "maxOpenFiles": os.sysconf("SC_OPEN_MAX") if hasattr(os, "sysconf") else 0,
        },
    }


async def connection_status(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    return {"authInfo": auth_info(ctx.server.auth, ctx.conn, bool(cmd.get("showPrivileges")))}


LOG_NAMES = ("global", "startupWarnings")


async def get_log(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    name = cmd["getLog"]
    if type(name) is not str:
        raise MongoError(
            ErrorCode.TypeMismatch,
            f"Argument to getLog must be of type String; found {name!r} of type {type(name).__name__}",
        )
    if name == "*":
        return {"names": list(LOG_NAMES)}
    if name == "global":
        lines, total = log.recent_lines()
        return {"totalLinesWritten": total, "log": lines}
    if name == "startupWarnings":
        lines = log.startup_warnings()
        return {"totalLinesWritten": len(lines), "log": lines}
    raise MongoError(ErrorCode.OperationFailed, f"No log named '{name}'")


async def clear_log(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    """mongod's test command ClearLogCmd (generic.cpp, a typed command whose parameter is a string):
    only the "global" log can be cleared (72 for any other name)."""
    name = cmd["clearLog"]
    if type(name) is not str:
        raise wrong_type("clearLog.clearLog", name, "string")
    if name != "global":
        raise MongoError(ErrorCode.InvalidOptions, "Only the 'global' log can be cleared")
    log.clear_recent()
    return {}


INVALID_SSL_CONFIGURATION = 140  # (InvalidSSLConfiguration: the code table names it)


async def rotate_certificates(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    """mongod's RotateCertificatesCmd (rotate_certificates.idl: an optional string ``message``; admin only,
    cluster action rotateCertificates): SSLManagerCoordinator::rotate loads the certificate, key and CA
    files again for the connections accepted from now on (established ones keep theirs), logging 4913400;
    then 4988500 with the message. Without TLS there is nothing to load and it still succeeds. A file
    that no longer loads is 140 InvalidSSLConfiguration and the current certificates stay."""
    check_fields(cmd, "rotateCertificates", {"message"})
    message = cmd.get("message")
    if message is not None and type(message) is not str:
        raise wrong_type("rotateCertificates.message", message, "string")
    certificates = ctx.server.certificates
    if certificates is not None and certificates.context is not None:
        try:
            certificates.rotate()
        except ValueError as exc:
            text = str(exc)
            raise MongoError(INVALID_SSL_CONFIGURATION, "Can not set up PEM key file."
                             if text.startswith("cannot use tlsCertificateKeyFile") else text) from None
        log.info("NETWORK", 4913400, "Successfully rotated X509 certificates.", ctx=f"conn{ctx.conn.id}")
    log.info("COMMAND", 4988500, "Certificate rotation completed successfully", ctx=f"conn{ctx.conn.id}",
             message=message or "")
    return {}


async def list_commands(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    commands = {
        name: {
            "help": spec.help,
            "requiresAuth": RULES.get(spec.name) is not OPEN,
            "secondaryOk": True,
            "adminOnly": spec.admin_only,
            "apiVersions": [],
            "deprecatedApiVersions": [],
        }
        for name, spec in ctx.server.commands.items()
    }
    return {"commands": commands}


def _memory(state, memory) -> dict[str, Any]:
    """serverStatus ``mem`` (what mongostat shows as ``vsize``/``res``), in MiB: ``resident`` is the RSS;
    ``virtual`` the process's virtual size without the LMDB map's address-space reservation (the
    whole ``map_size`` is mapped up front, most of it never touched; mongod's WiredTiger maps no data
    files, so its figure is heap, stacks and libraries: this is the comparable one)."""
    engine = state.engine
    reserved = engine.stats.get("map_size", 0) if engine is not None else 0
    return {
        "bits": 64,
        "resident": memory.rss // (1024 * 1024),
        "virtual": max(memory.vms - reserved, memory.rss) // (1024 * 1024),
        "supported": True,
    }


async def server_status(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    state = ctx.server
    uptime = time.monotonic() - state.started_monotonic
    memory = _PROCESS.memory_info()
    sections: dict[str, Any] = {
        "host": state.host,
        "version": MONGODB_VERSION,
        "process": "mongod",
        "pid": Int64(os.getpid()),
        "uptime": float(int(uptime)),
        "uptimeMillis": Int64(int(uptime * 1000)),
        "uptimeEstimate": Int64(int(uptime)),
        "localTime": _now(),
        "asserts": {"regular": 0, "warning": 0, "msg": 0, "user": 0, "tripwire": 0, "rollovers": 0},
        "connections": {
            "current": state.connections_current,
            "available": max(0, 1_000_000 - state.connections_current),
            "totalCreated": state.connections_total,
            "active": state.connections_active,
        },
        "network": {
            "bytesIn": Int64(state.bytes_in),
            "bytesOut": Int64(state.bytes_out),
            "numRequests": Int64(state.num_requests),
            "compression": {
                name: {"compressor": {"bytesIn": Int64(c[0]), "bytesOut": Int64(c[1])},
                       "decompressor": {"bytesIn": Int64(c[2]), "bytesOut": Int64(c[3])}}
                for name, c in state.compression_bytes.items()
            },
        },
        "opcounters": {name: Int64(count) for name, count in state.opcounters.items()},
        "opLatencies": {kind: {"latency": Int64(h["latency"]), "ops": Int64(h["ops"])}
                        for kind, h in state.top.op_latencies().items()},
        "mem": _memory(state, memory),
        "metrics": {"aggStageCounters": {name: Int64(n) for name, n in access.stage_counters(state).items()},
                    "commands": _command_metrics(state),
                    "cursor": state.cursors.metrics(),
                    **state.document_metrics.sections(),
                    "ttl": {name: Int64(n) for name, n in ttl.metrics().items()}},
        "storageEngine": {"name": "lmdb", "supportsCommittedReads": True, "persistent": True},
    }
    for name, provider in list(state.status_sections.items()):
        section = provider()
        section = await section if inspect.isawaitable(section) else section
        if section is not None:  # (a section with nothing to say is left out, as mongod's empty ones)
            sections[name] = section
    for key, value in _arguments(cmd):
        if key in sections and not value and key not in ("host", "version", "process", "pid"):
            del sections[key]
    return sections


async def get_diagnostic_data(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    """mongod's GetDiagnosticDataCommand (ftdc_commands.cpp, admin only): ``data`` is FTDC's periodic
    document, ``{start, serverStatus: {start, ..., end}, end}``, each collector's section bracketed by
    the times it ran. mongod samples once a second and answers the latest sample; Tidemark, which keeps
    no diagnostic files, takes the sample when asked (the same figures, at most a second fresher).
    The operating-system collector (``systemMetrics``) is not collected."""
    start = _now()
    status = await server_status(ctx, {"serverStatus": 1})
    end = _now()
    return {"data": {"start": start, "serverStatus": {"start": start, **status, "end": end}, "end": end}}


def _command_metrics(state: Any) -> dict[str, Any]:
    """serverStatus metrics.commands as mongod's command metrics tree: every command (the table's names,
    aliases apart) with ``failed`` and ``total``, update and findAndModify with their ``arrayFilters``
    and ``pipeline`` statements too, and ``<UNKNOWN>`` for names of no command; sorted by name."""
    names = {spec.name for spec in (state.commands or {}).values()}
    out: dict[str, Any] = {}
    unknown = state.command_counts.get("<UNKNOWN>")
    if unknown is not None:
        out["<UNKNOWN>"] = Int64(unknown[0])
    for name in sorted(names):
        total, failed = state.command_counts.get(name, (0, 0))
        entry = {"failed": Int64(failed), "total": Int64(total)}
        shapes = state.update_shapes.get(name)
        if shapes is not None:
            entry = {"arrayFilters": Int64(shapes["arrayFilters"]), "failed": entry["failed"],
                     "pipeline": Int64(shapes["pipeline"]), "total": entry["total"]}
        out[name] = entry
    return out


async def log_rotate(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    """``{logRotate: 1}`` or ``{logRotate: "server"}``: rotate the server log as SIGUSR1 does (``--logRotate
    rename|reopen``). Logging to stdout, mongod answers ok and only logs the rotation; so does Tidemark."""
    value = cmd.get("logRotate")
    if type(value) is str and value != "server":
        raise MongoError(ErrorCode.BadValue, f"Unknown log type for rotate: {value}")
    failure = log.rotate(ctx.server.options.log_rotate == "rename", ctx=f"conn{ctx.conn.id}",
                         log_type=value if type(value) is str else None)
    if failure is not None:
        raise MongoError(ErrorCode.OperationFailed, f"Log rotation failed: {failure.strerror or failure}")
    log_process_details(ctx.server.options, ctx=f"conn{ctx.conn.id}", rotated=True)
    return {}


# pymongo's ObjectId keeps the process's 5 random bytes (mongod's per-instance "machine" nonce) in this
# class attribute, regenerated only when the pid changes; oidReset replaces it like OID::regenMachineId.
_OID_RANDOM = "_ObjectId__random"


def _oid_machine() -> Int64:
    """mongod's OID::getMachineId(): the first 4 bytes of the nonce every new ObjectId carries, read as
    a native (little-endian) unsigned int."""
    nonce = ObjectId._random()  # noqa: SLF001 - the nonce new ObjectIds use (regenerated after a fork)
    return Int64(int.from_bytes(nonce[:4], "little"))


async def features(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    """mongod's ``features`` (generic_servers.idl, strict): ``oidReset`` a safeBool; the reply's ``js``
    while JavaScript is enabled, ``oidMachineOld`` with ``oidReset``, then ``oidMachine``. The
    authorization of ``oidReset`` (cluster action oidReset) is auth/rules.py's."""
    check_fields(cmd, "features", {"oidReset"})
    reset = cmd.get("oidReset")
    if reset is not None and not isinstance(reset, bool | int | float | Decimal128):
        raise wrong_type("features.oidReset", reset, ("bool", "long", "int", "decimal", "double"))
    reply: dict[str, Any] = {}
    if javascript.enabled():
        reply["js"] = {"utf8": True}
    if reset is not None and (reset.to_decimal() != 0 if isinstance(reset, Decimal128) else bool(reset)):
        reply["oidMachineOld"] = _oid_machine()
        ObjectId._random()  # noqa: SLF001 - a fork first takes its own nonce, which the reset then replaces
        setattr(ObjectId, _OID_RANDOM, os.urandom(5))
    reply["oidMachine"] = _oid_machine()
    return reply


COMMANDS = [
    CommandSpec(
        "connectionStatus",
        connection_status,
        help="the users and roles authenticated on this connection",
    ),
    CommandSpec(
        "getCmdLineOpts",
        get_cmd_line_opts,
        help="the command line the server was started with",
        admin_only=True,
    ),
    CommandSpec(
        "getLog", get_log, help="recent log lines: '*', 'global' or 'startupWarnings'", admin_only=True
    ),
    CommandSpec("clearLog", clear_log, help="{ clearLog : 'global' }: empty the retained log lines. Test command "
                                            "only.", admin_only=True, test_only=True),
    CommandSpec("features", features, help="return build level feature settings (oidReset: a new ObjectId "
                                           "machine nonce)"),
    CommandSpec("getParameter", get_parameter, help="read server parameters ('*' for all)", admin_only=True),
    CommandSpec("getDiagnosticData", get_diagnostic_data, help="get latest diagnostic data collection snapshot",
                admin_only=True),
    CommandSpec("hostInfo", host_info, help="facts about the host: OS, CPUs, memory"),
    CommandSpec("listCommands", list_commands, help="every command this server knows, with help"),
    CommandSpec(
        "logRotate", log_rotate,
        help="rotate the server log: rename it to <logpath>.<timestamp> and open a new file (or reopen it, "
             "--logRotate reopen), as SIGUSR1 does",
        admin_only=True,
    ),
    CommandSpec("rotateCertificates", rotate_certificates, help="Rotate certificates for new SSL connections",
                admin_only=True),
    CommandSpec(
        "serverStatus", server_status, help="uptime, connections, opcounters, memory and engine state"
    ),
    CommandSpec(
        "setParameter", set_parameter, help="change a runtime-settable server parameter", admin_only=True
    ),
]
