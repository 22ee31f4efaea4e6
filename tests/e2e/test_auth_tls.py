"""TLS with a throwaway CA: pymongo connects with tls=true + CA file (and authenticates over it);
requireTLS refuses plaintext clients at once, a plaintext server refuses TLS clients at once; allowTLS
serves both on one port; client certificates are required when --tlsCAFile is given."""

from __future__ import annotations

import socket
import ssl
import time

import pymongo
import pytest
from harness import ServerProcess
from harness.certs import make_certificates
from pymongo.errors import ServerSelectionTimeoutError


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certificates(tmp_path_factory.mktemp("tls"))


def _client_context(certs, *, with_client_cert=False) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(certs.ca))
    if with_client_cert:
        context.load_cert_chain(str(certs.client))
    return context


def _tls_uri(server: ServerProcess, certs, **params) -> str:
    query = "&".join(["directConnection=true", "tls=true", f"tlsCAFile={certs.ca}",
                      *(f"{k}={v}" for k, v in params.items())])
    return f"mongodb://127.0.0.1:{server.port}/?{query}"


def _closed_quickly(sock: socket.socket, payload: bytes) -> float:
    """Send ``payload`` and time how long the server takes to close the connection."""
    started = time.monotonic()
    sock.sendall(payload)
    try:
        while sock.recv(4096):
            pass
    except ConnectionResetError:  # closed with our bytes unread: a reset, just as final
        pass
    return time.monotonic() - started


def _hello_bytes() -> bytes:
    from bench.scram_client import op_msg

    return op_msg({"hello": 1, "$db": "admin"})


@pytest.fixture(scope="module")
def require_tls(certs, tmp_path_factory):
    base = tmp_path_factory.mktemp("tls-require")
    proc = ServerProcess(base / "db", log_path=base / "tidemark.log", ssl_context=_client_context(certs),
                         args=("--tlsMode", "requireTLS", "--tlsCertificateKeyFile", str(certs.server), "--auth"))
    proc.start()
    with pymongo.MongoClient(_tls_uri(proc, certs)) as bootstrap:
        bootstrap.admin.command("createUser", "tlsroot", pwd="pw", roles=["root"])
    yield proc
    assert proc.terminate() == 0


@pytest.mark.slow
def test_pymongo_connects_and_authenticates_over_tls(require_tls, certs):
    with pymongo.MongoClient(_tls_uri(require_tls, certs), username="tlsroot", password="pw") as client:
        client.tlsdb.c.insert_one({"secure": True})
        assert client.tlsdb.c.find_one({}, {"_id": 0}) == {"secure": True}
    assert '"ssl":"on"' in require_tls.log_text()


@pytest.mark.slow
def test_a_client_that_does_not_trust_the_ca_refuses_the_server(require_tls, certs):
    uri = f"mongodb://127.0.0.1:{require_tls.port}/?directConnection=true&tls=true&tlsCAFile={certs.other_ca}"
    with pymongo.MongoClient(uri, serverSelectionTimeoutMS=1500) as client:
        with pytest.raises(ServerSelectionTimeoutError) as failure:
            client.admin.command("ping")
    assert "certificate verify failed" in str(failure.value)


@pytest.mark.slow
def test_require_tls_closes_plaintext_connections_at_once(require_tls):
    with socket.create_connection(("127.0.0.1", require_tls.port), timeout=10) as sock:
        assert _closed_quickly(sock, _hello_bytes()) < 5  # generous: the point is "not a hang"
    with pymongo.MongoClient(f"mongodb://127.0.0.1:{require_tls.port}/?directConnection=true",
                             serverSelectionTimeoutMS=1500) as client:
        with pytest.raises(ServerSelectionTimeoutError):
            client.admin.command("ping")
    assert "The server is configured to only allow SSL connections" in require_tls.log_text()


def test_a_plaintext_server_closes_tls_connections_at_once(server, certs):
    context = _client_context(certs)
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as plain:
        with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
            context.wrap_socket(plain, server_hostname="localhost")
    assert time.monotonic() - started < 5
    assert "SSL handshake received but server is started without SSL support" in server.log_text()
    with pymongo.MongoClient(server.uri) as client:  # plaintext clients are unaffected
        assert client.admin.command("ping")["ok"] == 1


def test_allow_tls_serves_tls_and_plaintext_on_one_port(start_server, certs):
    proc = start_server(args=("--tlsMode", "allowTLS", "--tlsCertificateKeyFile", str(certs.server)))
    with pymongo.MongoClient(proc.uri) as plain, pymongo.MongoClient(_tls_uri(proc, certs)) as secure:
        plain.mixed.c.insert_one({"via": "plain"})
        secure.mixed.c.insert_one({"via": "tls"})
        assert sorted(d["via"] for d in secure.mixed.c.find()) == ["plain", "tls"]


@pytest.mark.slow
def test_ca_file_requires_client_certificates(start_server, certs):
    args = ("--tlsMode", "requireTLS", "--tlsCertificateKeyFile", str(certs.server), "--tlsCAFile", str(certs.ca))
    proc = start_server(args=args, ssl_context=_client_context(certs, with_client_cert=True))
    with pymongo.MongoClient(_tls_uri(proc, certs, tlsCertificateKeyFile=certs.client)) as client:
        assert client.admin.command("ping")["ok"] == 1
    with pymongo.MongoClient(_tls_uri(proc, certs), serverSelectionTimeoutMS=1500) as client:
        with pytest.raises(ServerSelectionTimeoutError):
            client.admin.command("ping")


@pytest.mark.slow
def test_yaml_net_tls_and_security_keys(start_server, certs, tmp_path):
    config = tmp_path / "tidemark.yaml"
    config.write_text(f"net:\n  tls:\n    mode: requireTLS\n    certificateKeyFile: {certs.server}\n"
                      "security:\n  authorization: enabled\n")
    proc = start_server(args=("--config", str(config)), ssl_context=_client_context(certs))
    with pymongo.MongoClient(_tls_uri(proc, certs)) as client:
        opts = client.admin.command("getCmdLineOpts", check=False)
        assert opts["code"] == 13  # authorization is on
        client.admin.command("createUser", "y", pwd="pw", roles=["root"])
    with pymongo.MongoClient(_tls_uri(proc, certs), username="y", password="pw") as client:
        parsed = client.admin.command("getCmdLineOpts")["parsed"]
    assert parsed["net"]["tls"]["mode"] == "requireTLS" and parsed["security"] == {"authorization": "enabled"}


@pytest.mark.slow
def test_bad_tls_options_stop_the_server_with_a_message(start_server, tmp_path):
    with pytest.raises(RuntimeError) as failure:
        start_server(args=("--tlsMode", "requireTLS"))
    assert "need tlsCertificateKeyFile" in str(failure.value)
    missing = tmp_path / "missing.pem"
    with pytest.raises(RuntimeError) as failure:
        start_server(args=("--tlsMode", "requireTLS", "--tlsCertificateKeyFile", str(missing)))
    assert "cannot use tlsCertificateKeyFile" in str(failure.value)
