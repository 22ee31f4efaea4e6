"""mongod's Unix domain socket: a standalone mongod 7.0 also listens on ``/tmp/mongodb-<port>.sock`` unless
started with ``--nounixsocket`` (found by Motor's suite: its test_unix_socket skipped, "Socket file is not
accessible"). pymongo connects to it by its escaped path; the server names such a client ``anonymous unix
socket:<port>`` and counts it as local (the localhost exception); the file gets ``--filePermissions``
(0700 by default), replaces a file left at its path, and is removed at a clean shutdown."""

from __future__ import annotations

import ssl
import stat
import subprocess
import sys
import urllib.parse
from pathlib import Path

import pymongo.errors
import pytest
from harness.certs import make_certificates
from harness.server import ROOT, free_port
from pymongo import MongoClient


def _socket_client(path: str | Path, **kw) -> MongoClient:
    return MongoClient(f"mongodb://{urllib.parse.quote_plus(str(path))}", serverSelectionTimeoutMS=10000, **kw)


@pytest.mark.slow
@pytest.mark.commands("insert", "find", "whatsmyuri", "currentOp", "getCmdLineOpts")
def test_the_default_socket_serves_commands_and_names_its_clients_like_mongod(start_server):
    server = start_server()
    path = Path(f"/tmp/mongodb-{server.port}.sock")
    mode = path.stat().st_mode
    assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o700
    with _socket_client(path) as client:
        client.t.c.insert_one({"_id": 1, "via": "unix"})
        assert client.t.c.find_one() == {"_id": 1, "via": "unix"}
        assert client.admin.command("whatsmyuri")["you"] == f"anonymous unix socket:{server.port}"
        inprog = client.admin.command("currentOp", {"$all": True})["inprog"]
        assert f"anonymous unix socket:{server.port}" in {op.get("client") for op in inprog}
        assert "unixDomainSocket" not in client.admin.command("getCmdLineOpts")["parsed"]["net"]
    assert server.terminate() == 0
    assert not path.exists()  # a clean shutdown removes it, as mongod does
    assert "removing socket file" in server.log_text()


@pytest.mark.slow
@pytest.mark.commands("createUser", "ping")
def test_a_socket_client_is_local_for_the_localhost_exception(start_server):
    server = start_server(args=("--auth",))
    with _socket_client(f"/tmp/mongodb-{server.port}.sock") as client:
        client.admin.command("createUser", "first", pwd="pw", roles=["root"])
    with _socket_client(f"/tmp/mongodb-{server.port}.sock", username="first", password="pw") as client:
        assert client.admin.command("ping")["ok"] == 1


@pytest.mark.slow
@pytest.mark.commands("ping", "getCmdLineOpts")
def test_prefix_and_permissions_are_taken_and_a_left_file_is_replaced(start_server, tmp_path):
    prefix = tmp_path / "sockets"
    prefix.mkdir()
    port = free_port()
    left = prefix / f"mongodb-{port}.sock"
    left.write_text("left by a killed server")
    default = Path(f"/tmp/mongodb-{port}.sock")
    default.unlink(missing_ok=True)  # left by an earlier server on this port that was killed
    start_server(port=port, args=("--unixSocketPrefix", str(prefix), "--filePermissions", "0777"))
    mode = left.stat().st_mode
    assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o777
    with _socket_client(left) as client:
        assert client.admin.command("ping")["ok"] == 1
        parsed = client.admin.command("getCmdLineOpts")["parsed"]["net"]["unixDomainSocket"]
    assert parsed == {"pathPrefix": str(prefix), "filePermissions": 0o777}
    assert not default.exists()


@pytest.mark.slow
@pytest.mark.commands("ping")
@pytest.mark.parametrize("how", ["--nounixsocket", "config"])
def test_no_socket_when_disabled(start_server, tmp_path, how):
    if how == "config":
        config = tmp_path / "mongod.yaml"
        config.write_text("net:\n  unixDomainSocket:\n    enabled: false\n")
        args: tuple[str, ...] = ("--config", str(config))
    else:
        args = ("--nounixsocket",)
    port = free_port()
    path = Path(f"/tmp/mongodb-{port}.sock")
    path.unlink(missing_ok=True)  # left by an earlier server on this port that was killed
    server = start_server(port=port, args=args)
    assert server.client().admin.command("ping")["ok"] == 1
    assert not path.exists()


@pytest.mark.slow
@pytest.mark.commands("ping", "whatsmyuri")
@pytest.mark.parametrize("mode", ["requireTLS", "allowTLS"])
def test_with_tls_configured_the_socket_is_sniffed_like_the_port(start_server, tmp_path, mode):
    """mongod's sessions on the Unix socket decide TLS from the first bytes as on TCP
    (maybeHandshakeSSLForIngress): with TLS configured the socket is still opened, serves TLS clients, and
    under requireTLS refuses a plaintext one (a plaintext socket beside requireTLS would get around it)."""
    certs = make_certificates(tmp_path)
    server = start_server(args=("--tlsMode", mode, "--tlsCertificateKeyFile", str(certs.server)),
                          ssl_context=ssl.create_default_context(cafile=str(certs.ca)))
    path = f"/tmp/mongodb-{server.port}.sock"
    with _socket_client(path, tls=True, tlsCAFile=str(certs.ca), tlsAllowInvalidHostnames=True) as client:
        assert client.admin.command("ping")["ok"] == 1
        assert client.admin.command("whatsmyuri")["you"] == f"anonymous unix socket:{server.port}"
    with MongoClient(f"mongodb://{urllib.parse.quote_plus(path)}", serverSelectionTimeoutMS=1500) as plain:
        if mode == "requireTLS":
            with pytest.raises(pymongo.errors.ServerSelectionTimeoutError):
                plain.admin.command("ping")
            refused = [line for line in server.log_text().splitlines() if '"id":22988' in line]
            assert refused and all(f'"remote":"anonymous unix socket:{server.port}"' in line for line in refused)
            assert all("The server is configured to only allow SSL connections" in line for line in refused)
        else:
            assert plain.admin.command("ping")["ok"] == 1


def test_file_permissions_must_be_octal():
    result = subprocess.run([sys.executable, "-m", "tidemark", "--filePermissions", "rwx"], capture_output=True,
                            text=True, timeout=60, cwd=ROOT)
    assert result.returncode == 2 and "--filePermissions must be an octal number" in result.stderr
