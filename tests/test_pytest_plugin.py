"""The pytest plugin shipped with the package (tidemark.testing, a pytest11 entry point): an
in-process server on a free port with a temporary dbpath, its URI, a pymongo client, fresh databases,
and dedicated servers — used here exactly as an application's test suite would."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest

from tidemark.testing import TidemarkServer


def test_the_fixtures_give_a_working_server(tidemark_uri, tidemark_client, tidemark_db):
    assert tidemark_uri.startswith("mongodb://127.0.0.1:") and tidemark_uri.endswith("/?directConnection=true")
    tidemark_db.orders.insert_many([{"n": i} for i in range(3)])
    assert tidemark_db.orders.count_documents({}) == 3
    assert tidemark_client.admin.command("buildInfo")["version"] == "7.0.0"


def test_each_test_gets_a_fresh_database(tidemark_db):
    assert tidemark_db.list_collection_names() == []


def test_dedicated_servers_take_parameters(tidemark_server_factory):
    server = tidemark_server_factory(params={"enableTestCommands": True})
    client = server.client()
    assert client.admin.command("getParameter", "*")["enableTestCommands"] is True
    client.close()


def test_a_server_starts_quickly_and_stops_cleanly(tmp_path):
    TidemarkServer(tmp_path / "warm").start().stop()  # imports done once per process
    started = time.monotonic()
    server = TidemarkServer(tmp_path / "db").start()
    elapsed = time.monotonic() - started
    client = server.client()
    client.t.c.insert_one({"x": 1})
    client.close()
    server.stop()
    assert elapsed < 2.0  # typically ~0.05 s; a generous bound for a busy machine
    again = TidemarkServer(tmp_path / "db").start()  # the lock was released and the data kept
    client = again.client()
    assert client.t.c.find_one({}, {"_id": 0}) == {"x": 1}
    client.close()
    again.stop()


def test_a_second_server_on_the_same_dbpath_fails_clearly(tmp_path):
    with TidemarkServer(tmp_path / "db"):
        with pytest.raises(RuntimeError, match="did not start"):
            TidemarkServer(tmp_path / "db").start()


@pytest.mark.slow
def test_the_plugin_is_found_through_its_entry_point(tmp_path):
    test_file = tmp_path / "test_app.py"
    test_file.write_text(textwrap.dedent("""
        def test_app(tidemark_db):
            tidemark_db.users.insert_one({"name": "ada"})
            assert tidemark_db.users.find_one()["name"] == "ada"
    """))
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test_file)],
                            capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout
