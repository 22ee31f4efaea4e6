"""The TLS-or-plaintext sniffing phase (``--tlsMode allowTLS``): connections that send a byte or two
and stall cost the server no CPU (it waits for the first 16 bytes with the event loop, never by
polling), are closed after the sniffing timeout, and do not get in the way of TLS and plaintext
clients."""

from __future__ import annotations

import os
import resource
import socket
import ssl
import time

import pymongo
import pytest
from harness import raw_command
from harness.certs import make_certificates
from harness.server import recv_frame

from tidemark.protocol.messages import decode_reply, encode_op_msg_request

STALLED = 400


def _cpu_seconds(pid: int) -> float:
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certificates(tmp_path_factory.mktemp("tls-sniff"))


def _raise_fd_limit(needed: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < needed:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(needed, hard), hard))


@pytest.mark.slow
def test_stalled_sniffing_connections_cost_no_cpu_and_clients_still_work(start_server, certs):
    _raise_fd_limit(STALLED * 2 + 256)
    srv = start_server(args=("--tlsMode", "allowTLS", "--tlsCertificateKeyFile", str(certs.server), "--quiet"))
    pid = srv.process.pid
    stalled = []
    try:
        for _ in range(STALLED):
            sock = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
            sock.sendall(b"\x16")  # the first byte of a TLS record, and nothing more
            stalled.append(sock)
        time.sleep(0.5)  # every connection accepted and waiting
        before, started = _cpu_seconds(pid), time.monotonic()
        time.sleep(3.0)
        share = (_cpu_seconds(pid) - before) / (time.monotonic() - started)
        assert share < 0.3, f"the server used {share:.0%} of a core with {STALLED} stalled connections"
        # TLS and plaintext clients are served beside them.
        context = ssl.create_default_context(cafile=str(certs.ca))
        assert raw_command(srv.port, {"ping": 1, "$db": "admin"}, ssl_context=context)["ok"] == 1.0
        assert raw_command(srv.port, {"ping": 1, "$db": "admin"})["ok"] == 1.0
        uri = f"mongodb://127.0.0.1:{srv.port}/?directConnection=true&tls=true&tlsCAFile={certs.ca}"
        with pymongo.MongoClient(uri, serverSelectionTimeoutMS=5000) as client:
            assert client.admin.command("ping")["ok"] == 1.0
    finally:
        for sock in stalled:
            sock.close()


@pytest.mark.slow
def test_a_stalled_sniffing_connection_is_closed_after_the_timeout(start_server, certs):
    srv = start_server(args=("--tlsMode", "allowTLS", "--tlsCertificateKeyFile", str(certs.server)),
                       params={"tlsSniffTimeoutSecs": 1, "enableTestCommands": 1})
    with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as sock:
        sock.sendall(b"\x16\x03")
        started = time.monotonic()
        try:
            assert sock.recv(1) == b""
        except ConnectionResetError:
            pass
        assert 0.5 < time.monotonic() - started < 5
    with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as sock:  # nothing sent at all
        started = time.monotonic()
        try:
            assert sock.recv(1) == b""
        except ConnectionResetError:
            pass
        assert 0.5 < time.monotonic() - started < 5
    # A client that splits its first message is still served (the rest arrives in time).
    with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as sock:
        frame = encode_op_msg_request({"ping": 1, "$db": "admin"}, 7)
        sock.sendall(frame[:3])
        time.sleep(0.3)
        sock.sendall(frame[3:])
        assert decode_reply(recv_frame(sock))["ok"] == 1.0
