"""``python -m server`` / ``tidemark``: a mongod-style command line.

    tidemark --port 27017 --bind_ip 127.0.0.1 --dbpath ./data [--setParameter name=value]...
             [--logpath FILE [--logappend]] [--quiet] [--config FILE.yaml]
             [--storageCompressor none|snappy|zstd] [--slowms MS] [--auth]
             [--tlsMode disabled|allowTLS|preferTLS|requireTLS --tlsCertificateKeyFile PEM
              [--tlsCAFile PEM] [--tlsAllowInvalidCertificates] ...]

A YAML ``--config`` file uses mongod's layout (``net.port``, ``net.bindIp``, ``storage.dbPath``,
``storage.compressor``, ``systemLog.path``, ``systemLog.quiet``, ``setParameter: {name: value}``,
``operationProfiling.slowOpThresholdMs``, ``security.authorization: enabled``, ``net.tls.mode``,
``net.tls.certificateKeyFile``, ``net.tls.certificateKeyFilePassword``, ``net.tls.CAFile``,
``net.tls.allowInvalidCertificates``, ``net.tls.allowConnectionsWithoutCertificates``); flags given
on the command line win over the file. A bad flag, value or config file prints a message and exits
with status 2. The certificate key file password is never shown (``getCmdLineOpts`` redacts it).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from server.context import ServerOptions

COMPRESSORS = ("none", "snappy", "zstd")
TLS_MODES = ("disabled", "allowTLS", "preferTLS", "requireTLS")
REDACTED = "<password>"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # mongod-like wording, exit status 2
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
        "--quiet", action="store_true", default=None, help="less log output (no connection events)"
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
    parser.add_argument("--auth", action="store_true", default=None, help="run with access control")
    parser.add_argument("--noauth", action="store_true", help="run without access control (default)")
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


def parse_options(argv: list[str]) -> ServerOptions:
    """Parse ``argv`` (without the program name). Raises SystemExit(2) on a bad command line."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.version:
        from server.commands.handshake import MONGODB_VERSION, tidemark_version

        print(f"tidemark {tidemark_version()} (MongoDB {MONGODB_VERSION} compatible)")
        raise SystemExit(0)
    options = ServerOptions(argv=["tidemark", *argv])
    try:
        config = _load_config(args.config) if args.config else {}
        net, storage = _section(config, "net"), _section(config, "storage")
        system_log, profiling = _section(config, "systemLog"), _section(config, "operationProfiling")
        file_params = _section(config, "setParameter")
        security, tls = _section(config, "security"), _section(net, "tls")
    except ValueError as exc:
        parser.error(str(exc))
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
    options.dbpath = args.dbpath or storage.get("dbPath") or "./data"
    compressor = args.storage_compressor or storage.get("compressor") or "zstd"
    if compressor not in COMPRESSORS:
        parser.error(f"storage compressor must be one of {', '.join(COMPRESSORS)}, got {compressor!r}")
    options.storage_compressor = compressor
    options.logpath = args.logpath or system_log.get("path")
    options.logappend = bool(args.logappend or system_log.get("logAppend"))
    options.quiet = bool(args.quiet if args.quiet is not None else system_log.get("quiet", False))
    slowms = args.slowms if args.slowms is not None else profiling.get("slowOpThresholdMs", 100)
    if not isinstance(slowms, int) or slowms < 0:
        parser.error(f"slowms must be a non-negative integer, got {slowms!r}")
    options.slowms = slowms
    options.config = args.config
    _security_options(parser, args, options, security, tls)
    options.set_parameters = [f"{name}={_yaml_scalar(value)}" for name, value in file_params.items()]
    options.set_parameters += args.set_parameters
    options.parsed = _parsed_view(options)
    return options


def _security_options(parser: argparse.ArgumentParser, args: argparse.Namespace, options: ServerOptions,
                      security: dict[str, Any], tls: dict[str, Any]) -> None:
    """--auth and the TLS flags, or their YAML keys (``security.authorization``, ``net.tls.*``)."""
    authorization = security.get("authorization", "disabled")
    if authorization not in ("enabled", "disabled"):
        parser.error(f"security.authorization must be 'enabled' or 'disabled', got {authorization!r}")
    options.auth = bool(args.auth) if args.auth or args.noauth else authorization == "enabled"
    mode = args.tls_mode or tls.get("mode", "disabled")
    if mode not in TLS_MODES:
        parser.error(f"net.tls.mode must be one of {', '.join(TLS_MODES)}, got {mode!r}")
    options.tls_mode = mode
    for name, key in (("tls_certificate_key_file", "certificateKeyFile"), ("tls_ca_file", "CAFile"),
                      ("tls_certificate_key_file_password", "certificateKeyFilePassword")):
        value = getattr(args, name) or tls.get(key)
        if value is not None and not isinstance(value, str):
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
        "net": {"bindIp": ",".join(options.bind_ip), "port": options.port},
        "storage": {"dbPath": options.dbpath, "compressor": options.storage_compressor},
    }
    if options.config:
        parsed["config"] = options.config
    if options.set_parameters:
        parsed["setParameter"] = dict(item.partition("=")[::2] for item in options.set_parameters)
    system_log: dict[str, Any] = {}
    if options.logpath:
        system_log.update({"destination": "file", "path": options.logpath, "logAppend": options.logappend})
    if options.quiet:
        system_log["quiet"] = True
    if system_log:
        parsed["systemLog"] = system_log
    if options.slowms != 100:
        parsed["operationProfiling"] = {"slowOpThresholdMs": options.slowms}
    if options.auth:
        parsed["security"] = {"authorization": "enabled"}
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


def main(argv: list[str] | None = None) -> int:
    options = parse_options(sys.argv[1:] if argv is None else argv)
    from server import app, log

    try:
        log.configure(options.logpath, quiet=options.quiet, append=options.logappend)
    except OSError as exc:
        print(f"tidemark: cannot open log file {options.logpath}: {exc.strerror}", file=sys.stderr)
        return 2
    try:
        return app.run(options)
    finally:
        log.close()


if __name__ == "__main__":
    sys.exit(main())
