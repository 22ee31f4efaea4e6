"""mongosh 2.x against a real server: connects cleanly (no Non-Genuine banner) and runs helpers."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.clients


@pytest.mark.slow
@pytest.mark.commands("ismaster", "buildInfo", "getParameter", "getLog", "hello", "ping")
def test_mongosh_connects_without_errors_or_non_genuine_warning(server):
    from harness import have_mongosh

    if not have_mongosh():
        pytest.skip("mongosh is not installed (run `make test`)")
    # An interactive session (script on stdin, no --quiet/--eval) runs mongosh's whole start-up
    # sequence (buildInfo, atlasVersion, getParameter, getLog startupWarnings, identifyServerName)
    # and prints the greeting plus any banner it decides to show.
    output = _mongosh_full_startup(server.uri)
    assert "Non-Genuine" not in output
    assert "MongoServerError" not in output and "MongoNetworkError" not in output, output
    assert "Using MongoDB:" in output and "7.0.0" in output.split("Using MongoDB:")[1].splitlines()[0]
    assert "hello from mongosh" in output


def _mongosh_full_startup(uri: str) -> str:
    import subprocess

    from harness.clients import MONGOSH, _env

    result = subprocess.run(
        [str(MONGOSH), "--norc", uri],
        input="print('hello from mongosh')\nexit\n",
        capture_output=True,
        text=True,
        timeout=60,
        env=_env(),
    )
    assert result.returncode == 0, result.stderr
    return result.stdout + result.stderr


@pytest.mark.slow
@pytest.mark.commands("ping")
def test_mongosh_run_command_ping(mongosh):
    assert mongosh("db.runCommand({ping: 1})") == {"ok": 1}


@pytest.mark.slow
@pytest.mark.commands("buildInfo")
def test_mongosh_db_version_is_7_0_0(mongosh):
    assert mongosh("db.version()") == "7.0.0"


@pytest.mark.slow
@pytest.mark.commands("serverStatus")
def test_mongosh_server_status_ok(mongosh):
    assert mongosh("db.serverStatus().ok") == 1


@pytest.mark.slow
@pytest.mark.commands("listDatabases")
def test_mongosh_show_dbs(mongosh, client):
    client.mongosh_show_dbs.items.insert_one({"x": 1})
    try:
        output = mongosh("show dbs", raw=True)
        assert "mongosh_show_dbs" in output
    finally:
        client.drop_database("mongosh_show_dbs")


@pytest.mark.slow
@pytest.mark.commands("hostInfo", "getCmdLineOpts", "hello", "isMaster")
def test_mongosh_admin_helpers(mongosh):
    result = mongosh(
        "({host: db.hostInfo().system.numCores > 0, opts: db.serverCmdLineOpts().ok,"
        " hello: db.hello().isWritablePrimary, master: db.isMaster().ismaster})"
    )
    assert result == {"host": True, "opts": 1, "hello": True, "master": True}


@pytest.mark.slow
@pytest.mark.commands("getLog")
def test_mongosh_show_logs(mongosh):
    output = mongosh("show logs", raw=True)
    assert "global" in output and "startupWarnings" in output
