"""The Node.js driver (npm `mongodb`) against a real server."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.clients


@pytest.mark.commands("ismaster", "ping")
def test_node_driver_connects_and_pings(node):
    assert node("return await client.db('admin').command({ping: 1});") == {"ok": 1}


@pytest.mark.commands("listDatabases")
def test_node_driver_lists_databases(node, client):
    client.node_list_dbs.items.insert_one({"x": 1})
    try:
        result = node("return await client.db('admin').admin().listDatabases();")
        assert "node_list_dbs" in [entry["name"] for entry in result["databases"]]
    finally:
        client.drop_database("node_list_dbs")


@pytest.mark.commands("buildInfo", "serverStatus")
def test_node_driver_admin_helpers(node):
    result = node(
        "const admin = client.db('admin').admin();"
        "const info = await admin.buildInfo();"
        "const status = await admin.serverStatus();"
        "return {version: info.version, ok: status.ok, current: status.connections.current > 0};"
    )
    assert result == {"version": "7.0.0", "ok": 1, "current": True}


@pytest.mark.commands("endSessions")
def test_node_driver_explicit_session(node):
    result = node(
        "const session = client.startSession();"
        "try { return await client.db('admin').command({ping: 1}, {session}); }"
        "finally { await session.endSession(); }"
    )
    assert result == {"ok": 1}
