"""Log rotation as mongod does it (issue 24.3): SIGUSR1 and the logRotate command rename the log file to
``<logpath>.<YYYY-MM-DDTHH-MM-SS>`` and open a new one (``--logRotate rename``, the default) or reopen it
after logrotate renamed it (``--logRotate reopen``), log 23166, and never stop the server."""

from __future__ import annotations

import json
import re
import signal
import time
import uuid

import pytest
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("logRotate")

SUFFIX = re.compile(r"^\.\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d$")


def _wait_for(predicate, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = predicate()
        if result:
            return result
        time.sleep(0.05)
    raise AssertionError("timed out")


def _rotated(path) -> list:
    return sorted(p for p in path.parent.iterdir() if p.name.startswith(path.name + "."))


def _messages(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.slow
def test_sigusr1_renames_the_log_and_the_server_keeps_running(start_server, tmp_path):
    logfile = tmp_path / "logs" / "tm.log"
    logfile.parent.mkdir()
    server = start_server(args=("--logpath", str(logfile)))
    server.process.send_signal(signal.SIGUSR1)
    [old] = _wait_for(lambda: _rotated(logfile))
    assert SUFFIX.match(old.name[len(logfile.name):])
    with server.client() as client:
        assert client.admin.command("ping")["ok"] == 1.0
    assert server.running
    rotation = [m for m in _messages(old) if m["id"] == 23166]
    assert rotation[0]["msg"] == "Log rotation initiated" and rotation[0]["ctx"] == "SignalHandler"
    assert old.name.endswith(rotation[0]["attr"]["suffix"])
    assert "Waiting for connections" in [m["msg"] for m in _messages(old)]
    new = [m["msg"] for m in _wait_for(lambda: _messages(logfile))]
    assert "Connection accepted" in new and "Waiting for connections" not in new
    assert server.terminate() == 0


@pytest.mark.slow
def test_log_rotate_command_renames_the_log(start_server, tmp_path):
    logfile = tmp_path / "tm.log"
    server = start_server(args=("--logpath", str(logfile)))
    with server.client() as client:
        assert client.admin.command({"logRotate": 1})["ok"] == 1.0
        assert len(_rotated(logfile)) == 1
        time.sleep(1.1)  # the suffix has a resolution of one second
        assert client.admin.command({"logRotate": "server"})["ok"] == 1.0
        assert len(_rotated(logfile)) == 2
        entries = [m for m in _messages(_rotated(logfile)[1]) if m["id"] == 23166]
        assert entries[0]["attr"]["logType"] == "server" and entries[0]["ctx"].startswith("conn")
        with pytest.raises(OperationFailure) as bad:
            client.admin.command({"logRotate": "nonsense"})
        assert bad.value.code == 2
        with pytest.raises(OperationFailure):  # an admin command
            client.test.command({"logRotate": 1})
        assert client.admin.command("ping")["ok"] == 1.0


@pytest.mark.slow
def test_reopen_mode_follows_logrotate_renaming_the_file(start_server, tmp_path):
    logfile = tmp_path / "tm.log"
    server = start_server(args=("--logpath", str(logfile), "--logappend", "--logRotate", "reopen"))
    logfile.rename(tmp_path / "tm.log.1")  # what logrotate does before it signals
    server.process.send_signal(signal.SIGUSR1)
    _wait_for(logfile.exists)
    with server.client() as client:
        assert client.admin.command("ping")["ok"] == 1.0
        opts = client.admin.command("getCmdLineOpts")["parsed"]["systemLog"]
        assert opts["logRotate"] == "reopen"
    assert "Connection accepted" in [m["msg"] for m in _messages(logfile)]
    assert [p.name for p in _rotated(logfile)] == ["tm.log.1"]  # nothing renamed by the server
    assert 23166 in [m["id"] for m in _messages(tmp_path / "tm.log.1")]
    assert server.terminate() == 0


def test_reopen_needs_logappend_like_mongod(tmp_path):
    import subprocess
    import sys

    from harness.server import ROOT

    result = subprocess.run([sys.executable, "-m", "tidemark", "--logpath", str(tmp_path / "tm.log"),
                             "--logRotate", "reopen"], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert result.returncode == 2
    assert "logAppend must equal true if logRotate is set to reopen" in result.stderr


def test_without_logpath_log_rotate_answers_ok_and_logs_it(client, server):
    assert client.admin.command({"logRotate": 1})["ok"] == 1.0
    lines = [json.loads(line) for line in client.admin.command({"getLog": "global"})["log"]]
    assert any(line["id"] == 23166 and line["attr"]["logType"] is None for line in lines)
    server.process.send_signal(signal.SIGUSR1)  # on stdout too: nothing to rotate, and the server stays
    assert client.admin.command("ping")["ok"] == 1.0 and server.running


def test_log_rotate_needs_the_log_rotate_action_under_auth(auth_server, root_client):
    name = f"reader_{uuid.uuid4().hex[:8]}"
    root_client.admin.command("createUser", name, pwd="pw", roles=[{"role": "readWriteAnyDatabase", "db": "admin"}])
    with auth_server.client(username=name, password="pw") as reader:
        with pytest.raises(OperationFailure) as denied:
            reader.admin.command({"logRotate": 1})
        assert denied.value.code == 13
    assert root_client.admin.command({"logRotate": 1})["ok"] == 1.0
    root_client.admin.command("createUser", name + "h", pwd="pw", roles=[{"role": "hostManager", "db": "admin"}])
    with auth_server.client(username=name + "h", password="pw") as host_manager:
        assert host_manager.admin.command({"logRotate": 1})["ok"] == 1.0


DETAILS = [(23403, "Build Info"), (51765, "Operating System"), (21951, "Options set by command line")]


def _details(messages: list[dict], ctx: str) -> list[dict]:
    wanted = {log_id for log_id, _ in DETAILS} | {20721}
    return [m for m in messages if m["id"] in wanted and m["ctx"] == ctx]


@pytest.mark.slow
@pytest.mark.commands("logRotate", "getLog", "getCmdLineOpts", "buildInfo")
@pytest.mark.parametrize("how", ["command", "sigusr1"])
def test_each_log_file_starts_with_the_process_details(start_server, tmp_path, how):
    """jstests/core/diagnostics/logprocessdetails.js: mongod logs the build, the operating system and the
    parsed options at start-up and again after every rotation, preceded there by "Process Details" (pid,
    port, architecture, host): log_process_details.cpp logProcessDetailsForLogRotate. Tidemark logged
    only its own start line and never re-logged anything after a rotation."""
    logfile = tmp_path / "logs" / "tm.log"
    logfile.parent.mkdir()
    server = start_server(args=("--logpath", str(logfile)))
    with server.client() as client:
        parsed = client.admin.command("getCmdLineOpts")["parsed"]
        version = client.admin.command("buildInfo")["version"]
        status = client.admin.command("serverStatus")
        started = _details(_messages(logfile), "initandlisten")
        assert [(m["id"], m["msg"]) for m in started] == DETAILS
        if how == "command":
            client.admin.command("logRotate")
            [old] = _rotated(logfile)
            ctx = next(m["ctx"] for m in _messages(old) if m["id"] == 23166)  # (the old file's last line)
        else:
            server.process.send_signal(signal.SIGUSR1)
            _wait_for(lambda: _rotated(logfile))
            ctx = "SignalHandler"
        rotated = _wait_for(lambda: len(_details(_messages(logfile), ctx)) == 4 and _details(_messages(logfile), ctx))
        assert [(m["id"], m["msg"]) for m in rotated] == [(20721, "Process Details"), *DETAILS]
        assert rotated[0]["attr"] == {"pid": status["pid"], "port": server.port, "architecture": "64-bit",
                                      "host": status["host"].split(":")[0]}
        for entries in (started, rotated[1:]):
            assert entries[0]["attr"]["buildInfo"]["version"] == version
            assert set(entries[1]["attr"]["os"]) == {"name", "version"}
            assert entries[2]["attr"]["options"] == parsed
        ram = client.admin.command("getLog", "global")["log"]
        assert any(re.search(".*conn.*options.*", line) for line in ram) or how == "sigusr1"
