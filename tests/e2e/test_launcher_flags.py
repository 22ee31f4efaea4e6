"""mongod flags that launchers pass: accepted (--storageEngine wiredTiger, --noauth, --nounixsocket,
--ipv6) or refused clearly (--replSet, other storage engines), and getCmdLineOpts shows them."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest
from harness.server import ROOT


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "server", *args], capture_output=True, text=True, timeout=60,
                          cwd=ROOT)


def test_repl_set_is_refused_with_a_clear_message():
    result = _run("--replSet", "rs0")
    assert result.returncode == 2 and "--replSet is not supported" in result.stderr
    assert "standalone" in result.stderr


def test_unknown_storage_engines_are_refused_like_mongod_7():
    result = _run("--storageEngine", "ephemeralForTest")
    assert result.returncode == 2
    assert "Cannot start server with an unknown storage engine: ephemeralForTest" in result.stderr


@pytest.mark.commands("getCmdLineOpts", "ping")
def test_launcher_flags_are_accepted_and_reported(start_server):
    server = start_server(args=("--storageEngine", "wiredTiger", "--noauth", "--nounixsocket"))
    opts = server.client().admin.command("getCmdLineOpts")
    assert opts["argv"][-4:] == ["--storageEngine", "wiredTiger", "--noauth", "--nounixsocket"]
    assert opts["parsed"]["storage"]["engine"] == "wiredTiger"
    assert opts["parsed"]["security"] == {"authorization": "disabled"}


def test_an_ipv6_bind_address_needs_ipv6():
    result = _run("--bind_ip", "::1")
    assert result.returncode == 2 and "--ipv6" in result.stderr


@pytest.mark.commands("ping")
def test_ipv6_listens_on_an_ipv6_address(start_server):
    if not socket.has_ipv6:
        pytest.skip("no IPv6 on this machine")
    try:
        probe = socket.socket(socket.AF_INET6)
        probe.bind(("::1", 0))
        probe.close()
    except OSError:
        pytest.skip("::1 is not available")
    server = start_server(args=("--ipv6", "--bind_ip", "127.0.0.1,::1"))
    from pymongo import MongoClient

    with MongoClient(f"mongodb://[::1]:{server.port}/?directConnection=true", serverSelectionTimeoutMS=10000) as c:
        assert c.admin.command("ping")["ok"] == 1.0
