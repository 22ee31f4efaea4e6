"""Admin and session families end to end (pymongo against a real server)."""

from __future__ import annotations

import json
import uuid

import pytest
from bson.int64 import Int64
from pymongo.errors import OperationFailure


def _fails(client, command, code: int, db: str = "admin") -> dict:
    with pytest.raises(OperationFailure) as info:
        client[db].command(command)
    assert info.value.code == code, info.value.details
    return info.value.details


@pytest.mark.commands("getParameter")
def test_get_parameter_star_returns_every_parameter(client):
    reply = client.admin.command({"getParameter": "*"})
    assert reply["featureCompatibilityVersion"] == {"version": "7.0"}
    assert reply["timeseriesBucketMaxCount"] == 1000
    assert reply["timeseriesBucketMaxSize"] == 128000
    assert reply["cursorTimeoutMillis"] == 600000
    assert reply["authSchemaVersion"] == 5


@pytest.mark.commands("getParameter")
def test_get_parameter_reflects_set_parameter_at_startup(client):
    assert client.admin.command({"getParameter": 1, "ttlMonitorSleepSecs": 1})["ttlMonitorSleepSecs"] == 1


@pytest.mark.commands("getParameter")
def test_get_parameter_named_and_show_details(client):
    reply = client.admin.command({"getParameter": 1, "featureCompatibilityVersion": 1, "nope": 1})
    assert reply == {"featureCompatibilityVersion": {"version": "7.0"}, "ok": 1.0}
    details = client.admin.command({"getParameter": {"showDetails": True}, "timeseriesBucketMaxCount": 1})
    assert details["timeseriesBucketMaxCount"] == {  # (startup-only in mongod 7.0's timeseries.idl)
        "value": 1000,
        "settableAtRuntime": False,
        "settableAtStartup": True,
    }
    everything = client.admin.command({"getParameter": {"showDetails": True, "allParameters": True}})
    assert everything["authenticationMechanisms"]["settableAtRuntime"] is False
    assert everything["ttlMonitorSleepSecs"]["settableAtRuntime"] is True


@pytest.mark.commands("getParameter")
def test_get_parameter_with_nothing_known_fails_with_invalid_options(client):
    details = _fails(client, {"getParameter": 1, "noSuchParameter": 1}, 72)
    assert details["errmsg"] == "no option found to get"
    _fails(client, {"getParameter": "foo"}, 72)  # what mongosh's server identification sends


@pytest.mark.commands("getParameter")
def test_get_parameter_only_on_admin(client):
    _fails(client, {"getParameter": "*"}, 13, db="test")


@pytest.mark.commands("setParameter")
def test_set_parameter_returns_previous_value_and_applies(client):
    before = client.admin.command({"getParameter": 1, "cursorTimeoutMillis": 1})["cursorTimeoutMillis"]
    reply = client.admin.command({"setParameter": 1, "cursorTimeoutMillis": 700000})
    assert reply["was"] == before
    assert (
        client.admin.command({"getParameter": 1, "cursorTimeoutMillis": 1})["cursorTimeoutMillis"] == 700000
    )
    client.admin.command({"setParameter": 1, "cursorTimeoutMillis": before})


@pytest.mark.commands("setParameter")
def test_set_parameter_refuses_unknown_startup_only_and_bad_values(client):
    assert "unrecognized parameter [bogus]" in _fails(client, {"setParameter": 1, "bogus": 1}, 72)["errmsg"]
    _fails(client, {"setParameter": 1, "authenticationMechanisms": ["SCRAM-SHA-256"]}, 20)
    _fails(client, {"setParameter": 1, "timeseriesBucketMaxCount": "many"}, 20)  # startup-only: checked first
    _fails(client, {"setParameter": 1, "ttlMonitorSleepSecs": "many"}, 2)
    _fails(client, {"setParameter": 1}, 72)


@pytest.mark.commands("getCmdLineOpts")
def test_get_cmd_line_opts_reports_argv_and_parsed(client, server):
    reply = client.admin.command("getCmdLineOpts")
    assert reply["argv"][0] == "tidemark"
    assert reply["parsed"]["net"]["port"] == server.port
    assert reply["parsed"]["storage"]["dbPath"] == server.dbpath
    assert reply["parsed"]["setParameter"] == {"ttlMonitorSleepSecs": "1"}


@pytest.mark.commands("hostInfo")
def test_host_info_has_what_compass_reads(client):
    reply = client.admin.command("hostInfo")
    assert reply["system"]["numCores"] >= 1
    assert reply["system"]["memSizeMB"] > 0
    assert reply["system"]["cpuArch"]
    assert reply["os"]["type"] and reply["os"]["name"]
    assert "versionString" in reply["extra"]


@pytest.mark.commands("connectionStatus")
def test_connection_status_with_privileges(client):
    reply = client.admin.command({"connectionStatus": 1, "showPrivileges": True})
    assert reply["authInfo"] == {
        "authenticatedUsers": [],
        "authenticatedUserRoles": [],
        "authenticatedUserPrivileges": [],
    }
    assert "authenticatedUserPrivileges" not in client.admin.command("connectionStatus")["authInfo"]


@pytest.mark.commands("getLog")
def test_get_log_names_and_structured_lines(client):
    assert client.admin.command({"getLog": "*"})["names"] == ["global", "startupWarnings"]
    reply = client.admin.command({"getLog": "global"})
    assert reply["totalLinesWritten"] >= len(reply["log"]) > 0
    entry = json.loads(reply["log"][0])
    assert set(entry) >= {"t", "s", "c", "id", "ctx", "msg"}
    assert "$date" in entry["t"]
    warnings = client.admin.command({"getLog": "startupWarnings"})
    assert isinstance(warnings["log"], list)
    assert _fails(client, {"getLog": "nope"}, 96)["codeName"] == "OperationFailed"
    _fails(client, {"getLog": 1}, 14)


@pytest.mark.commands("listCommands")
def test_list_commands_lists_every_command_with_help(client):
    commands = client.admin.command("listCommands")["commands"]
    for name in (
        "hello",
        "isMaster",
        "ismaster",
        "buildInfo",
        "buildinfo",
        "ping",
        "getMore",
        "listCommands",
    ):
        assert commands[name]["help"], name
    assert list(commands) == sorted(commands)


@pytest.mark.commands("serverStatus")
def test_server_status_sections(client):
    before = client.admin.command("serverStatus")
    after = client.admin.command("serverStatus")
    for key in ("host", "version", "uptime", "connections", "opcounters", "mem", "localTime"):
        assert key in after, key
    assert after["version"] == "7.0.0"
    assert after["connections"]["current"] >= 1
    assert after["opcounters"]["command"] > before["opcounters"]["command"]
    assert after["mem"]["resident"] > 0
    trimmed = client.admin.command({"serverStatus": 1, "mem": 0})
    assert "mem" not in trimmed and "opcounters" in trimmed


@pytest.mark.commands("startSession", "endSessions", "refreshSessions", "killSessions", "killAllSessions")
def test_session_commands(client):
    started = client.admin.command("startSession")
    session_id = started["id"]["id"]  # pymongo's default codec leaves a UUID as Binary subtype 4
    assert isinstance(session_id, uuid.UUID) or getattr(session_id, "subtype", None) == 4
    assert started["timeoutMinutes"] == 30
    lsid = started["id"]
    for name in ("refreshSessions", "killSessions", "endSessions"):
        assert client.admin.command({name: [lsid]})["ok"] == 1.0
    assert client.admin.command({"killAllSessions": []})["ok"] == 1.0
    _fails(client, {"endSessions": 1}, 14)


def test_pymongo_explicit_session_round_trip(client):
    with client.start_session() as session:
        assert client.admin.command("ping", session=session)["ok"] == 1.0


@pytest.mark.commands("getMore")
def test_get_more_on_unknown_cursor_is_cursor_not_found(client):
    details = _fails(client, {"getMore": Int64(12345), "collection": "c"}, 43, db="test")
    assert details["codeName"] == "CursorNotFound"
    _fails(client, {"getMore": Int64(1)}, 40414, db="test")
    _fails(client, {"getMore": "x", "collection": "c"}, 14, db="test")


@pytest.mark.commands("killCursors")
def test_kill_cursors_reports_unknown_ids_as_not_found(client):
    reply = client.test.command({"killCursors": "c", "cursors": [Int64(42)]})
    assert reply["cursorsNotFound"] == [42]
    assert reply["cursorsKilled"] == [] and reply["cursorsAlive"] == [] and reply["cursorsUnknown"] == []
    _fails(client, {"killCursors": "c"}, 40414, db="test")


@pytest.mark.commands("serverStatus", "aggregate", "find")
def test_an_aggregate_counts_as_a_query(client, db):
    """mongod's PipelineCommand affects the query counter, not the command counter (as find does);
    Tidemark counted an aggregate as a command (found by a helper porting opcounters jstests)."""
    db.opc.insert_one({"a": 1})
    before = client.admin.command("serverStatus")["opcounters"]
    list(db.opc.aggregate([{"$match": {"a": 1}}]))
    list(db.opc.find({"a": 1}))
    after = client.admin.command("serverStatus")["opcounters"]
    assert after["query"] - before["query"] == 2
    assert after["command"] - before["command"] == 1  # (the serverStatus itself)


@pytest.mark.commands("serverStatus")
@pytest.mark.parametrize("name", ["invalid", "IHopeNobodyEverMakesThisACommand", "Find", "isMasterX"])
def test_an_unknown_command_counts_in_unknown_only(client, db, name):
    """opcounters_write_cmd.js: an unrecognized command is not an opcounters command (mongod counts a
    command once found, ParseAndRunCommand::_prologue's gotCommand) but one more
    metrics.commands.<UNKNOWN>; Tidemark counted it in opcounters.command too."""
    before = client.admin.command("serverStatus")
    _fails(client, {name: 1}, 59, db=db.name)
    after = client.admin.command("serverStatus")
    assert after["opcounters"]["command"] - before["opcounters"]["command"] == 1  # (the serverStatus itself)
    assert after["metrics"]["commands"]["<UNKNOWN>"] - before["metrics"]["commands"].get("<UNKNOWN>", 0) == 1
    assert name not in after["metrics"]["commands"]


@pytest.mark.commands("serverStatus", "insert")
@pytest.mark.parametrize("ordered,counted", [(True, 2), (False, 3)])
def test_an_insert_counts_the_documents_it_tried(client, db, ordered, counted):
    """opcounters_write_cmd.js: an ordered insert stops at its first failure, so it counts the documents
    before it and the failed one; an unordered one tries (and counts) every document."""
    db.opc_ins.drop()
    before = client.admin.command("serverStatus")["opcounters"]["insert"]
    with pytest.raises(OperationFailure):
        db.opc_ins.insert_many([{"_id": 3}, {"_id": 3}, {"_id": 4}], ordered=ordered)
    assert client.admin.command("serverStatus")["opcounters"]["insert"] - before == counted
