"""mongod flags that launchers pass: accepted (--storageEngine wiredTiger, --noauth, --nounixsocket,
--ipv6) or refused clearly (--replSet, other storage engines), and getCmdLineOpts shows them."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest
from harness.server import ROOT


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tidemark", *args], capture_output=True, text=True, timeout=60,
                          cwd=ROOT)


def test_repl_set_is_refused_with_a_clear_message():
    result = _run("--replSet", "rs0")
    assert result.returncode == 2 and "--replSet is not supported" in result.stderr
    assert "standalone" in result.stderr


def test_unknown_storage_engines_are_refused_like_mongod_7():
    result = _run("--storageEngine", "ephemeralForTest")
    assert result.returncode == 2
    assert "Cannot start server with an unknown storage engine: ephemeralForTest" in result.stderr


@pytest.mark.slow
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


@pytest.mark.slow
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


# ---- the YAML config: mistyped keys are refused, mongod keys without effect accepted (issue 24.5)

def _config(tmp_path, text: str) -> str:
    path = tmp_path / "tidemark.yaml"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(("text", "name"), [
    ("net:\n  prot: 27017\n", "net.prot"),
    ("stroage:\n  dbPath: /tmp/x\n", "stroage"),
    ("net:\n  tls:\n    mdoe: requireTLS\n", "net.tls.mdoe"),
    ("storage:\n  journal:\n    enable: true\n", "storage.journal.enable"),
])
def test_an_unknown_config_key_is_refused_like_mongod(tmp_path, text, name):
    result = _run("--config", _config(tmp_path, text), "--dbpath", str(tmp_path / "db"))
    assert result.returncode == 2  # mongod's BadOptions exit code
    assert result.stderr.splitlines() == [f"Unrecognized option: {name}",
                                          "try 'tidemark --help' for more information"]
    assert not (tmp_path / "db").exists()  # refused before anything starts


@pytest.mark.slow
@pytest.mark.commands("ping", "getCmdLineOpts")
def test_mongod_keys_tidemark_ignores_are_accepted(start_server, tmp_path):
    config = _config(tmp_path, (
        "storage:\n  journal:\n    enabled: true\n  directoryPerDB: false\n"
        "  wiredTiger:\n    engineConfig:\n      cacheSizeGB: 1\n    collectionConfig:\n      blockCompressor: zstd\n"
        "systemLog:\n  verbosity: 0\n  component:\n    query:\n      verbosity: 1\n"
        "net:\n  maxIncomingConnections: 1000\n  unixDomainSocket:\n    enabled: false\n"
        "processManagement:\n  fork: false\n  timeZoneInfo: /usr/share/zoneinfo\n"
        "setParameter:\n  ttlMonitorSleepSecs: 5\n"
    ))
    server = start_server(args=("--config", config))
    with server.client() as client:
        assert client.admin.command("ping")["ok"] == 1.0
        assert client.admin.command("getCmdLineOpts")["parsed"]["config"] == config


@pytest.mark.slow
def test_pid_file_holds_the_server_pid_and_is_removed_at_shutdown(start_server, tmp_path):
    pidfile = tmp_path / "run" / "tidemark.pid"
    server = start_server(args=("--config", _config(tmp_path, f"processManagement:\n  pidFilePath: {pidfile}\n")))
    assert pidfile.read_text() == f"{server.process.pid}\n"
    assert server.terminate() == 0
    assert not pidfile.exists()


@pytest.mark.slow
def test_pidfilepath_flag_and_a_refused_second_server_leaves_the_file_alone(start_server, tmp_path):
    pidfile = tmp_path / "tidemark.pid"
    first = start_server(args=("--pidfilepath", str(pidfile)))
    second = _run("--port", "0", "--dbpath", first.dbpath, "--pidfilepath", str(pidfile))
    assert second.returncode == 100  # the dbpath is locked
    assert pidfile.read_text() == f"{first.process.pid}\n"


@pytest.mark.parametrize("how", ["flag", "config"])
def test_fork_is_refused_clearly(tmp_path, how):
    args = ("--fork",) if how == "flag" else ("--config", _config(tmp_path, "processManagement:\n  fork: true\n"))
    result = _run(*args, "--logpath", str(tmp_path / "tm.log"))
    assert result.returncode == 2
    assert "--fork is not supported" in result.stderr and "supervisor" in result.stderr


def test_syslog_destination_is_refused_and_file_needs_a_path(tmp_path):
    syslog = _run("--config", _config(tmp_path, "systemLog:\n  destination: syslog\n"))
    assert syslog.returncode == 2 and "not supported" in syslog.stderr
    no_path = _run("--config", _config(tmp_path, "systemLog:\n  destination: file\n"))
    assert no_path.returncode == 2
    assert "systemLog.path is required if systemLog.destination is to a file" in no_path.stderr


@pytest.mark.slow
@pytest.mark.commands("getParameter")
def test_syncdelay_comes_from_the_flag_or_the_config_file_like_mongod(start_server, tmp_path):
    """mongod's --syncdelay and storage.syncPeriodSecs set the syncdelay parameter (the checkpoint
    interval); the flag wins over the file, and an out-of-range value stops the start."""
    config = _config(tmp_path, "storage:\n  syncPeriodSecs: 30\n")
    for args, expected in (((), 60.0), (("--config", config), 30.0), (("--config", config, "--syncdelay", "0.5"), 0.5)):
        server = start_server(args=args)
        with server.client() as client:
            assert client.admin.command("getParameter", 1, syncdelay=1)["syncdelay"] == expected
            assert client.admin.command("setParameter", 1, syncdelay=2)["was"] == expected
        server.kill()
    result = _run("--syncdelay", "-1", "--port", "1")
    assert result.returncode != 0 and "syncdelay must be between 0 and 9000000" in result.stdout + result.stderr
