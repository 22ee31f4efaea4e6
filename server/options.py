"""The mongod-style command line and YAML config: ``parse_options(argv) -> ServerOptions``.

Light on purpose: this module imports only the standard library (PyYAML when ``--config`` is given), so
``tidemark --version`` and ``--help`` answer without importing the server (``tidemark.__main__`` imports
``tidemark.app`` only once the options are parsed and the server is to start). Keep it that way: a test
checks that ``--version`` leaves the query layer unimported.

    tidemark --port 27017 --bind_ip 127.0.0.1 --dbpath ./data [--setParameter name=value]...
             [--logpath FILE [--logappend]] [--quiet] [--config FILE.yaml]
             [--storageCompressor none|snappy|zstd] [--slowms MS] [--profile 0|1|2]
             [--slowOpSampleRate RATE] [--metricsPort PORT] [--auth]
             [--tlsMode disabled|allowTLS|preferTLS|requireTLS --tlsCertificateKeyFile PEM
              [--tlsCAFile PEM] [--tlsAllowInvalidCertificates] ...]
             [--nounixsocket | --unixSocketPrefix DIR] [--filePermissions OCTAL]
             [--noscripting] [--storageEngine wiredTiger] [--noauth] [--ipv6]   (launcher compatibility)

``--version`` prints mongod's first line (``db version v7.0.0``, what launchers parse) then Tidemark's.
``--replSet`` is refused with a clear message (exit 2): Tidemark is a standalone.

A YAML ``--config`` file uses mongod's layout (``net.port``, ``net.bindIp``, ``storage.dbPath``,
``storage.compressor``, ``systemLog.path``, ``systemLog.quiet``, ``setParameter: {name: value}``,
``operationProfiling.slowOpThresholdMs``/``mode``/``slowOpSampleRate``, ``security.authorization:
enabled``, ``security.javascriptEnabled``, ``net.tls.mode``, ``net.tls.certificateKeyFile``, ``net.tls.certificateKeyFilePassword``,
``net.tls.CAFile``, ``net.tls.allowInvalidCertificates``, ``net.tls.allowConnectionsWithoutCertificates``,
``net.unixDomainSocket.enabled``/``pathPrefix``/``filePermissions``);
flags given on the command line win over the file.
A bad flag, value or config file prints a message and exits with status 2. The certificate key file
password is never shown (``getCmdLineOpts`` redacts it).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Any, NoReturn

COMPRESSORS = ("none", "snappy", "zstd")
TLS_MODES = ("disabled", "allowTLS", "preferTLS", "requireTLS")
REDACTED = "<password>"
LOG_ROTATE_MODES = ("rename", "reopen")


@dataclass
class ServerOptions:
    """The parsed command line (``parse_options``)."""

    port: int = 27017
    bind_ip: list[str] = field(default_factory=lambda: ["127.0.0.1"])
    dbpath: str = "./data"
    set_parameters: list[str] = field(default_factory=list)
    logpath: str | None = None
    logappend: bool = False
    log_rotate: str = "rename"  # --logRotate / systemLog.logRotate: rename | reopen (tidemark.log.rotate)
    quiet: bool = False
    config: str | None = None
    storage_compressor: str = "zstd"
    slowms: int = 100
    profile: int = 0  # default profiling level of every database (--profile, operationProfiling.mode)
    slow_op_sample_rate: float = 1.0
    metrics_port: int | None = None  # Prometheus endpoint (server/metrics.py); None: off
    storage_engine: str | None = None  # --storageEngine as given (only "wiredTiger" is accepted)
    ipv6: bool = False
    # mongod's Unix domain socket <prefix>/mongodb-<port>.sock, on by default (--nounixsocket,
    # --unixSocketPrefix, --filePermissions; net.unixDomainSocket.*)
    unix_socket: bool = True
    unix_socket_prefix: str = "/tmp"
    unix_socket_permissions: int = 0o700
    noauth: bool = False
    # Server-side JavaScript ($where, $function, $accumulator): --noscripting / security.javascriptEnabled.
    javascript_enabled: bool = True
    # Access control and TLS (tidemark.auth, tidemark.tls): --auth, --tlsMode and the tls* files.
    auth: bool = False
    tls_mode: str = "disabled"  # disabled | allowTLS | preferTLS | requireTLS
    tls_certificate_key_file: str | None = None
    tls_certificate_key_file_password: str | None = None
    tls_ca_file: str | None = None
    tls_allow_invalid_certificates: bool = False
    tls_allow_connections_without_certificates: bool = False
    pidfilepath: str | None = None  # --pidfilepath / processManagement.pidFilePath: written at start-up
    ignored_config_keys: list[str] = field(default_factory=list)  # mongod keys of --config with no effect
    argv: list[str] = field(default_factory=list)
    parsed: dict[str, Any] = field(default_factory=dict)  # mongod-style nested view for getCmdLineOpts


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # mongod-like wording, exit status 2
        self.exit(
            2,
            f"tidemark: Error parsing command line: {message}\ntry 'tidemark --help' for more information\n",
        )


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="tidemark", description="Tidemark: a MongoDB-compatible time-series database server."
    )
    parser.add_argument("--version", action="store_true", help="show the version and exit")
    parser.add_argument("-f", "--config", metavar="FILE", help="YAML configuration file (mongod layout)")
    parser.add_argument("--port", type=int, metavar="PORT", help="TCP port to listen on (default 27017)")
    parser.add_argument(
        "--bind_ip", metavar="IPS", help="comma-separated addresses to listen on (default 127.0.0.1)"
    )
    parser.add_argument("--bind_ip_all", action="store_true", help="listen on all IPv4 addresses (0.0.0.0)")
    parser.add_argument("--dbpath", metavar="DIR", help="data directory (default ./data)")
    parser.add_argument(
        "--setParameter",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        dest="set_parameters",
        help="set a server parameter at start-up (repeatable)",
    )
    parser.add_argument("--logpath", metavar="FILE", help="write the log to FILE instead of stdout")
    parser.add_argument("--logappend", action="store_true", help="append to --logpath instead of truncating")
    parser.add_argument(
        "--logRotate", choices=LOG_ROTATE_MODES, dest="log_rotate",
        help="what SIGUSR1 and the logRotate command do: rename the file to FILE.<timestamp> and open a new "
             "one (default), or reopen it (after logrotate renamed it; needs --logappend)",
    )
    parser.add_argument(
        "--quiet", action="store_true", default=None, help="less log output (no connection events)"
    )
    parser.add_argument(
        "--syncdelay", metavar="SECONDS", help="seconds between periodic checkpoints of in-memory buckets "
        "(default 60; 0: none); the syncdelay server parameter, storage.syncPeriodSecs in a config file",
    )
    parser.add_argument(
        "--storageCompressor",
        choices=COMPRESSORS,
        dest="storage_compressor",
        help="record compression (default zstd)",
    )
    parser.add_argument(
        "--slowms", type=int, metavar="MS", help="log operations slower than MS (default 100)"
    )
    parser.add_argument(
        "--profile", type=int, choices=(0, 1, 2), metavar="LEVEL",
        help="default profiling level of every database: 0 off, 1 slow operations, 2 all (default 0)",
    )
    parser.add_argument(
        "--slowOpSampleRate", type=float, metavar="RATE", dest="slow_op_sample_rate",
        help="fraction of slow operations logged/profiled (default 1.0)",
    )
    parser.add_argument(
        "--metricsPort", type=int, metavar="PORT", dest="metrics_port",
        help="serve Prometheus metrics at http://<bind_ip>:PORT/metrics (default: off)",
    )
    # mongod flags that launchers (mongodb-memory-server, test harnesses) pass.
    parser.add_argument(
        "--storageEngine", metavar="NAME", dest="storage_engine",
        help="accepted for mongod compatibility: only 'wiredTiger' (Tidemark always stores in LMDB)",
    )
    parser.add_argument("--noauth", action="store_true", help="run without access control (the default)")
    parser.add_argument("--notablescan", action="store_true",
                        help="refuse queries that would scan a whole collection (the notablescan parameter)")
    parser.add_argument("--noscripting", action="store_true",
                        help="disable server-side JavaScript ($where, $function, $accumulator)")
    parser.add_argument("--nounixsocket", action="store_true",
                        help="do not listen on the Unix domain socket <unixSocketPrefix>/mongodb-<port>.sock")
    parser.add_argument("--unixSocketPrefix", metavar="DIR", dest="unix_socket_prefix",
                        help="directory of the Unix domain socket (default /tmp)")
    parser.add_argument("--filePermissions", metavar="OCTAL", dest="unix_socket_permissions",
                        help="permissions of the Unix domain socket file (default 0700)")
    parser.add_argument("--ipv6", action="store_true", help="allow IPv6 addresses in --bind_ip")
    parser.add_argument("--pidfilepath", metavar="FILE", help="write the server's process id to FILE at start-up")
    parser.add_argument("--fork", action="store_true", help="refused: Tidemark runs in the foreground (use a supervisor)")
    parser.add_argument("--replSet", metavar="NAME", dest="repl_set", help="refused: Tidemark is a standalone")
    parser.add_argument("--auth", action="store_true", default=None, help="run with access control")
    parser.add_argument("--tlsMode", choices=TLS_MODES, dest="tls_mode", help="TLS for client connections")
    parser.add_argument("--tlsCertificateKeyFile", metavar="PEM", dest="tls_certificate_key_file",
                        help="the server's certificate and private key")
    parser.add_argument("--tlsCertificateKeyFilePassword", metavar="PASSWORD",
                        dest="tls_certificate_key_file_password", help="password of an encrypted private key")
    parser.add_argument("--tlsCAFile", metavar="PEM", dest="tls_ca_file",
                        help="CA certificates that verify client certificates")
    parser.add_argument("--tlsAllowInvalidCertificates", action="store_true", default=None,
                        dest="tls_allow_invalid_certificates", help="accept client certificates that do not verify")
    parser.add_argument("--tlsAllowConnectionsWithoutCertificates", action="store_true", default=None,
                        dest="tls_allow_connections_without_certificates",
                        help="with --tlsCAFile, also accept clients that present no certificate")
    return parser


def _print_version() -> None:
    """mongod's ``--version`` shape (launchers parse its first line) and then Tidemark's own."""
    import json
    import platform

    from tidemark.version import GIT_VERSION, MONGODB_VERSION, tidemark_version

    machine = platform.machine() or "unknown"
    build = {"version": MONGODB_VERSION, "gitVersion": GIT_VERSION, "modules": [], "allocator": "system",
             "environment": {"distarch": machine, "target_arch": machine}}
    print(f"db version v{MONGODB_VERSION}")
    print("Build Info: " + json.dumps(build, indent=4))
    print(f"tidemark {tidemark_version()} (MongoDB {MONGODB_VERSION} compatible, "
          f"Python {platform.python_version()})")


def _load_config(path: str) -> dict[str, Any]:
    import yaml

    try:
        with open(path, encoding="utf-8") as handle:
            data = yaml.safe_load(handle) or {}
    except OSError as exc:
        raise ValueError(f"cannot read config file {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ValueError(f"invalid YAML in config file {path}: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"config file {path} must hold a YAML mapping")
    return data


def _section(config: dict[str, Any], name: str) -> dict[str, Any]:
    value = config.get(name) or {}
    if not isinstance(value, dict):
        raise ValueError(f"config section '{name}' must be a mapping")
    return value


# Every key a YAML config may hold, in mongod's layout. USED keys configure Tidemark; IGNORED keys are
# mongod options with no meaning here (WiredTiger tuning, journaling, verbosity...), accepted so that a
# mongod config file carries over; ANY accepts a whole subtree (setParameter names are checked at
# start-up by tidemark.params). Anything else is refused like mongod: "Unrecognized option: net.prot",
# exit 2. README.md ("Configuration file") lists the IGNORED keys: keep the two in step.
USED, IGNORED, ANY, ANY_IGNORED = "used", "ignored", "any", "any-ignored"
CONFIG_KEYS: dict[str, Any] = {
    "net": {
        "port": USED, "bindIp": USED, "bindIpAll": USED, "ipv6": USED, "metricsPort": USED,
        "tls": {"mode": USED, "certificateKeyFile": USED, "certificateKeyFilePassword": USED, "CAFile": USED,
                "allowInvalidCertificates": USED, "allowConnectionsWithoutCertificates": USED},
        "maxIncomingConnections": IGNORED, "wireObjectCheck": IGNORED, "unixDomainSocket": {"enabled": USED, "pathPrefix": USED, "filePermissions": USED},
        "compression": {"compressors": IGNORED}, "serviceExecutor": IGNORED,
    },
    "storage": {
        "dbPath": USED, "compressor": USED, "engine": USED,
        "journal": {"enabled": IGNORED, "commitIntervalMs": IGNORED}, "directoryPerDB": IGNORED,
        "syncPeriodSecs": USED, "wiredTiger": ANY_IGNORED, "inMemory": ANY_IGNORED,
        "oplogMinRetentionHours": IGNORED,
    },
    "systemLog": {
        "destination": USED, "path": USED, "logAppend": USED, "logRotate": USED, "quiet": USED,
        "verbosity": IGNORED, "component": ANY_IGNORED, "timeStampFormat": IGNORED,
        "traceAllExceptions": IGNORED,
    },
    "processManagement": {"fork": USED, "pidFilePath": USED, "timeZoneInfo": IGNORED},
    "operationProfiling": {"mode": USED, "slowOpThresholdMs": USED, "slowOpSampleRate": USED, "filter": IGNORED},
    "security": {"authorization": USED, "javascriptEnabled": USED},
    "replication": {"replSetName": USED, "oplogSizeMB": IGNORED, "enableMajorityReadConcern": IGNORED},
    "setParameter": ANY,
}


def check_config_keys(config: dict[str, Any], schema: dict[str, Any] = CONFIG_KEYS,
                      prefix: str = "") -> list[str]:
    """The dotted names of the IGNORED keys ``config`` holds; ValueError("Unrecognized option: <name>")
    for the first key mongod's layout does not have (a typo such as ``net.prot``)."""
    ignored: list[str] = []
    for key, value in config.items():
        name = f"{prefix}{key}"
        kind = schema.get(key) if type(key) is str else None
        if kind is None:
            raise ValueError(f"Unrecognized option: {name}")
        if isinstance(kind, dict):
            if isinstance(value, dict):
                ignored += check_config_keys(value, kind, name + ".")
            elif value is not None:
                raise ValueError(f"config section '{name}' must be a mapping")
        elif kind in (IGNORED, ANY_IGNORED):
            ignored.append(name)
    return ignored


def parse_options(argv: list[str]) -> ServerOptions:
    """Parse ``argv`` (without the program name). Raises SystemExit(2) on a bad command line."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.version:
        _print_version()
        raise SystemExit(0)
    options = ServerOptions(argv=["tidemark", *argv])
    try:
        config = _load_config(args.config) if args.config else {}
        options.ignored_config_keys = check_config_keys(config)
        net, storage = _section(config, "net"), _section(config, "storage")
        system_log, profiling = _section(config, "systemLog"), _section(config, "operationProfiling")
        file_params = _section(config, "setParameter")
        security, tls = _section(config, "security"), _section(net, "tls")
    except ValueError as exc:
        if str(exc).startswith("Unrecognized option"):  # mongod's exact two lines, exit 2 (BadOptions)
            parser.exit(2, f"{exc}\ntry 'tidemark --help' for more information\n")
        parser.error(str(exc))
    _process_options(parser, args, options, _section(config, "processManagement"))
    port = args.port if args.port is not None else net.get("port", 27017)
    if not isinstance(port, int) or not 0 <= port <= 65535:
        parser.error(f"port number must be between 0 and 65535, got {port!r}")
    options.port = port
    if args.bind_ip_all or net.get("bindIpAll"):
        options.bind_ip = ["0.0.0.0"]
    else:
        bind = args.bind_ip if args.bind_ip is not None else net.get("bindIp", "127.0.0.1")
        options.bind_ip = [part.strip() for part in str(bind).split(",") if part.strip()]
        if not options.bind_ip:
            parser.error("--bind_ip needs at least one address")
    replication = _section(config, "replication") if isinstance(config.get("replication"), dict) else {}
    if args.repl_set is not None or replication.get("replSetName"):
        parser.error("--replSet is not supported: Tidemark is a standalone server (no replica sets, oplog "
                     "or change streams); start it without --replSet")
    engine = args.storage_engine or storage.get("engine")
    if engine is not None and engine != "wiredTiger":
        parser.error(f"Cannot start server with an unknown storage engine: {engine} (Tidemark stores its data "
                     "in LMDB; only --storageEngine wiredTiger is accepted, for compatibility)")
    options.storage_engine = engine
    options.ipv6 = bool(args.ipv6 or net.get("ipv6"))
    if args.bind_ip_all and options.ipv6:
        options.bind_ip = ["0.0.0.0", "::"]
    if not options.ipv6 and any(":" in host for host in options.bind_ip):
        parser.error(f"--bind_ip {','.join(options.bind_ip)} has an IPv6 address: start with --ipv6 to listen on it")
    unix_section = net.get("unixDomainSocket")
    unix: dict[str, Any] = unix_section if isinstance(unix_section, dict) else {}
    options.unix_socket = not args.nounixsocket and unix.get("enabled", True) is not False
    options.unix_socket_prefix = str(args.unix_socket_prefix or unix.get("pathPrefix") or "/tmp")
    permissions = args.unix_socket_permissions if args.unix_socket_permissions is not None else unix.get(
        "filePermissions", 0o700)
    try:  # mongod reads the flag's value as octal ("0777"); YAML gives 0777 as the octal integer too
        options.unix_socket_permissions = int(permissions, 8) if isinstance(permissions, str) else int(permissions)
    except ValueError:
        parser.error(f"--filePermissions must be an octal number, got {permissions!r}")
    options.noauth = bool(args.noauth)
    options.dbpath = args.dbpath or storage.get("dbPath") or "./data"
    compressor = args.storage_compressor or storage.get("compressor") or "zstd"
    if compressor not in COMPRESSORS:
        parser.error(f"storage compressor must be one of {', '.join(COMPRESSORS)}, got {compressor!r}")
    options.storage_compressor = compressor
    options.logpath = args.logpath or system_log.get("path")
    destination = system_log.get("destination")
    if destination not in (None, "file"):
        parser.error(f"systemLog.destination {destination!r} is not supported: Tidemark logs to stdout, or to "
                     "systemLog.path with destination: file")
    if destination == "file" and not options.logpath:
        parser.error("systemLog.path is required if systemLog.destination is to a file")
    rotate = args.log_rotate or system_log.get("logRotate", "rename")
    if rotate not in LOG_ROTATE_MODES:
        parser.error(f"logRotate must be one of rename, reopen; got {rotate!r}")
    options.log_rotate = rotate
    options.logappend = bool(args.logappend or system_log.get("logAppend"))
    if options.log_rotate == "reopen" and not options.logappend:  # mongod's rule: reopen keeps appending
        parser.error("logAppend must equal true if logRotate is set to reopen")
    options.quiet = bool(args.quiet if args.quiet is not None else system_log.get("quiet", False))
    slowms = args.slowms if args.slowms is not None else profiling.get("slowOpThresholdMs", 100)
    if not isinstance(slowms, int) or slowms < 0:
        parser.error(f"slowms must be a non-negative integer, got {slowms!r}")
    options.slowms = slowms
    modes = {"off": 0, "slowOp": 1, "all": 2}
    mode = profiling.get("mode", "off")
    if args.profile is None and mode not in modes:
        parser.error(f"operationProfiling.mode must be one of off, slowOp, all; got {mode!r}")
    options.profile = args.profile if args.profile is not None else modes[mode]
    rate = (args.slow_op_sample_rate if args.slow_op_sample_rate is not None
            else profiling.get("slowOpSampleRate", 1.0))
    if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0.0 <= rate <= 1.0:
        parser.error(f"slowOpSampleRate must be between 0.0 and 1.0, got {rate!r}")
    options.slow_op_sample_rate = float(rate)
    metrics_port = args.metrics_port if args.metrics_port is not None else net.get("metricsPort")
    if metrics_port is not None and (not isinstance(metrics_port, int) or not 0 < metrics_port <= 65535
                                     or metrics_port == port):
        parser.error(f"metricsPort must be between 1 and 65535 and differ from the port, got {metrics_port!r}")
    options.metrics_port = metrics_port
    options.config = args.config
    _security_options(parser, args, options, security, tls)
    # mongod's --syncdelay / storage.syncPeriodSecs set the syncdelay parameter (validated with it)
    sync_period = args.syncdelay if args.syncdelay is not None else storage.get("syncPeriodSecs")
    options.set_parameters = [] if sync_period is None else [f"syncdelay={_yaml_scalar(sync_period)}"]
    options.set_parameters += [f"{name}={_yaml_scalar(value)}" for name, value in file_params.items()]
    if args.notablescan:  # (mongod's --notablescan sets the notablescan parameter)
        options.set_parameters.append("notablescan=true")
    options.set_parameters += args.set_parameters
    options.parsed = _parsed_view(options)
    return options


def _process_options(parser: argparse.ArgumentParser, args: argparse.Namespace, options: ServerOptions,
                     process: dict[str, Any]) -> None:
    """--pidfilepath (``processManagement.pidFilePath``) and --fork (``processManagement.fork``), refused."""
    if args.fork or process.get("fork"):
        parser.error("--fork is not supported: Tidemark runs in the foreground; start it from a supervisor "
                     "(systemd Type=simple, Docker, supervisord) or with nohup and --logpath")
    pidfile = args.pidfilepath or process.get("pidFilePath")
    if pidfile is not None and (type(pidfile) is not str or not pidfile):
        parser.error("processManagement.pidFilePath must be a file path")
    options.pidfilepath = pidfile


def _security_options(parser: argparse.ArgumentParser, args: argparse.Namespace, options: ServerOptions,
                      security: dict[str, Any], tls: dict[str, Any]) -> None:
    """--auth and the TLS flags, or their YAML keys (``security.authorization``, ``net.tls.*``)."""
    authorization = security.get("authorization", "disabled")
    if authorization not in ("enabled", "disabled"):
        parser.error(f"security.authorization must be 'enabled' or 'disabled', got {authorization!r}")
    if args.auth and args.noauth:
        parser.error("--auth and --noauth cannot be used together")
    options.auth = bool(args.auth) if args.auth or args.noauth else authorization == "enabled"
    javascript_enabled = security.get("javascriptEnabled", True)
    if not isinstance(javascript_enabled, bool):
        parser.error(f"security.javascriptEnabled must be a boolean, got {javascript_enabled!r}")
    options.javascript_enabled = javascript_enabled and not args.noscripting
    mode = args.tls_mode or tls.get("mode", "disabled")
    if mode not in TLS_MODES:
        parser.error(f"net.tls.mode must be one of {', '.join(TLS_MODES)}, got {mode!r}")
    options.tls_mode = mode
    for name, key in (("tls_certificate_key_file", "certificateKeyFile"), ("tls_ca_file", "CAFile"),
                      ("tls_certificate_key_file_password", "certificateKeyFilePassword")):
        value = getattr(args, name) or tls.get(key)
        if value is not None and type(value) is not str:
            parser.error(f"net.tls.{key} must be a string")
        setattr(options, name, value)
    for name, key in (("tls_allow_invalid_certificates", "allowInvalidCertificates"),
                      ("tls_allow_connections_without_certificates", "allowConnectionsWithoutCertificates")):
        setattr(options, name, bool(getattr(args, name) or tls.get(key, False)))
    if mode != "disabled" and not options.tls_certificate_key_file:
        parser.error("need tlsCertificateKeyFile or certificateSelector when TLS is enabled")
    if options.tls_certificate_key_file_password:
        argv = options.argv
        for i, item in enumerate(argv):
            if i and argv[i - 1] == "--tlsCertificateKeyFilePassword":
                argv[i] = REDACTED
            elif item.startswith("--tlsCertificateKeyFilePassword="):
                argv[i] = f"--tlsCertificateKeyFilePassword={REDACTED}"


def _yaml_scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


def _parsed_view(options: ServerOptions) -> dict[str, Any]:
    """The mongod-style nested view that getCmdLineOpts reports as ``parsed``."""
    parsed: dict[str, Any] = {
        "net": {"bindIp": ",".join(options.bind_ip), "port": options.port,
                **({"ipv6": True} if options.ipv6 else {}),
                **({"metricsPort": options.metrics_port} if options.metrics_port else {})},
        "storage": {"dbPath": options.dbpath, "compressor": options.storage_compressor,
                    **({"engine": options.storage_engine} if options.storage_engine else {})},
    }
    unix = {**({} if options.unix_socket else {"enabled": False}),
            **({"pathPrefix": options.unix_socket_prefix} if options.unix_socket_prefix != "/tmp" else {}),
            **({"filePermissions": options.unix_socket_permissions} if options.unix_socket_permissions != 0o700
               else {})}
    if unix:
        parsed["net"]["unixDomainSocket"] = unix
    if options.noauth:
        parsed["security"] = {"authorization": "disabled"}
    if options.config:
        parsed["config"] = options.config
    if options.pidfilepath:
        parsed["processManagement"] = {"pidFilePath": options.pidfilepath}
    if options.set_parameters:
        parsed["setParameter"] = dict(item.partition("=")[::2] for item in options.set_parameters)
    system_log: dict[str, Any] = {}
    if options.logpath:
        system_log.update({"destination": "file", "path": options.logpath, "logAppend": options.logappend})
        if options.log_rotate != "rename":
            system_log["logRotate"] = options.log_rotate
    if options.quiet:
        system_log["quiet"] = True
    if system_log:
        parsed["systemLog"] = system_log
    profiling: dict[str, Any] = {}
    if options.profile:
        profiling["mode"] = {1: "slowOp", 2: "all"}[options.profile]
    if options.slowms != 100:
        profiling["slowOpThresholdMs"] = options.slowms
    if options.slow_op_sample_rate != 1.0:
        profiling["slowOpSampleRate"] = options.slow_op_sample_rate
    if profiling:
        parsed["operationProfiling"] = profiling
    if options.auth:
        parsed["security"] = {"authorization": "enabled"}
    if not options.javascript_enabled:
        parsed.setdefault("security", {})["javascriptEnabled"] = False
    if options.tls_mode != "disabled":
        tls: dict[str, Any] = {"mode": options.tls_mode, "certificateKeyFile": options.tls_certificate_key_file}
        if options.tls_certificate_key_file_password:
            tls["certificateKeyFilePassword"] = REDACTED
        if options.tls_ca_file:
            tls["CAFile"] = options.tls_ca_file
        if options.tls_allow_invalid_certificates:
            tls["allowInvalidCertificates"] = True
        if options.tls_allow_connections_without_certificates:
            tls["allowConnectionsWithoutCertificates"] = True
        parsed["net"]["tls"] = tls
    return parsed
