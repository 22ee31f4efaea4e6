"""logLevel / logComponentVerbosity (setParameter, getParameter, mongosh's setLogLevel) and getLog,
as mongod 7.0: debug lines (severity D1..D5) are written only at the verbosity set."""

from __future__ import annotations

import json

import pytest
from pymongo.errors import OperationFailure


def _debug_since(client, marker):
    """Debug lines logged after the getLog call that returned ``marker`` lines."""
    lines = [json.loads(line) for line in client.admin.command({"getLog": "global"})["log"]]
    return [line for line in lines[marker:] if line["s"].startswith("D")]


_HEARTBEATS = frozenset({"hello", "isMaster", "ismaster"})


def _mark(client):
    return len(client.admin.command({"getLog": "global"})["log"])


@pytest.mark.slow
@pytest.mark.commands("setParameter", "getParameter", "getLog")
def test_log_level_controls_debug_lines(start_server):
    srv = start_server()
    with srv.client() as client:
        assert client.admin.command({"getParameter": 1, "logLevel": 1}) == {"logLevel": 0, "ok": 1.0}
        mark = _mark(client)
        client.admin.command("ping")
        assert _debug_since(client, mark) == []

        assert client.admin.command({"setParameter": 1, "logLevel": 1}) == {"was": 0, "ok": 1.0}
        mark = _mark(client)
        client.admin.command("ping")
        found = _debug_since(client, mark)
        assert {line["s"] for line in found} == {"D1"}
        assert any(line["c"] == "COMMAND" and line["attr"].get("command") == "ping" for line in found)

        assert client.admin.command({"setParameter": 1, "logLevel": 2})["was"] == 1
        mark = _mark(client)
        client.admin.command("ping")
        found = _debug_since(client, mark)
        assert {line["s"] for line in found} == {"D1", "D2"}
        about = [line for line in found if line["id"] == 21965]
        assert about and about[0]["msg"] == "About to run the command"

        client.admin.command({"setParameter": 1, "logLevel": 0})
        mark = _mark(client)
        client.admin.command("ping")
        assert _debug_since(client, mark) == []


@pytest.mark.slow
@pytest.mark.commands("setParameter", "getParameter")
def test_log_component_verbosity_as_mongod(start_server):
    srv = start_server()
    with srv.client() as client:
        doc = client.admin.command({"getParameter": 1, "logComponentVerbosity": 1})["logComponentVerbosity"]
        assert doc["verbosity"] == 0
        assert doc["command"] == {"verbosity": -1}
        assert doc["storage"]["journal"] == {"verbosity": -1}
        assert doc["network"]["verbosity"] == -1

        # what mongosh's db.setLogLevel(2, "command") sends
        reply = client.admin.command({"setParameter": 1, "logComponentVerbosity": {"command": {"verbosity": 2}}})
        assert reply["was"]["command"] == {"verbosity": -1}
        assert reply["was"]["verbosity"] == 0
        doc = client.admin.command({"getParameter": 1, "logComponentVerbosity": 1})["logComponentVerbosity"]
        assert doc["command"] == {"verbosity": 2} and doc["verbosity"] == 0
        assert client.admin.command({"getParameter": 1, "logLevel": 1})["logLevel"] == 0
        mark = _mark(client)
        client.admin.command("ping")
        assert {line["s"] for line in _debug_since(client, mark)} == {"D1", "D2"}

        # the default verbosity is logLevel
        client.admin.command({"setParameter": 1, "logComponentVerbosity": {"verbosity": 3,
                                                                           "command": {"verbosity": -1}}})
        assert client.admin.command({"getParameter": 1, "logLevel": 1})["logLevel"] == 3
        client.admin.command({"setParameter": 1, "logComponentVerbosity": {"verbosity": 0}})
        mark = _mark(client)
        client.admin.command("ping")
        assert _debug_since(client, mark) == []

        with pytest.raises(OperationFailure) as err:
            client.admin.command({"setParameter": 1, "logComponentVerbosity": {"nosuch": {"verbosity": 1}}})
        assert err.value.code == 2
        with pytest.raises(OperationFailure) as err:
            client.admin.command({"setParameter": 1, "logComponentVerbosity": {"verbosity": "x"}})
        assert err.value.code == 2


@pytest.mark.slow
def test_log_component_verbosity_at_startup(start_server):
    srv = start_server(params={"logComponentVerbosity": '{"command": {"verbosity": 1}}'})
    with srv.client() as client:
        doc = client.admin.command({"getParameter": 1, "logComponentVerbosity": 1})["logComponentVerbosity"]
        assert doc["command"] == {"verbosity": 1}
    assert '"s":"D1"' in srv.log_text()


@pytest.mark.commands("getLog")
def test_get_log_names_global_and_startup_warnings(client):
    assert client.admin.command({"getLog": "*"}) == {"names": ["global", "startupWarnings"], "ok": 1.0}
    glob = client.admin.command({"getLog": "global"})
    assert glob["totalLinesWritten"] >= len(glob["log"]) > 0
    assert all(json.loads(line)["t"] for line in glob["log"])
    warnings = client.admin.command({"getLog": "startupWarnings"})
    assert set(warnings) == {"totalLinesWritten", "log", "ok"}
    assert all(json.loads(line)["s"] == "W" for line in warnings["log"])
    with pytest.raises(OperationFailure) as err:
        client.admin.command({"getLog": "nosuch"})
    assert err.value.code == 96
    with pytest.raises(OperationFailure) as err:
        client.test.command({"getLog": "global"})
    assert err.value.code == 13


@pytest.mark.slow
@pytest.mark.commands("setParameter", "getLog")
def test_command_raising_the_level_logs_its_own_finish(start_server):
    """The level is read when the command finishes (dispatch reads ``log.levels`` where it decides, not
    once per command): the setParameter that raises it logs its own "Command finished" line, and the one
    that lowers it logs none."""
    srv = start_server()
    with srv.client() as client:
        mark = _mark(client)
        client.admin.command({"setParameter": 1, "logComponentVerbosity": {"command": {"verbosity": 1}}})
        found = _debug_since(client, mark)
        # (the driver's monitor sends its heartbeat hello on its own connection at any moment: its line is
        # not this test's subject)
        finished = [line["attr"]["command"] for line in found if line["id"] == 4615620]
        assert [name for name in finished if name not in _HEARTBEATS] == ["setParameter"]
        client.admin.command({"setParameter": 1, "logComponentVerbosity": {"command": {"verbosity": -1}}})
        mark = _mark(client)
        client.admin.command({"setParameter": 1, "logLevel": 0})
        assert _debug_since(client, mark) == []
