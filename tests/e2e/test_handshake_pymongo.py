"""Acceptance 2: pymongo's everyday entry points."""

from __future__ import annotations

import pytest


@pytest.mark.commands("ping", "buildinfo", "listDatabases")
def test_pymongo_ping_server_info_and_list_database_names(client, db):
    assert client.admin.command("ping")["ok"] == 1.0
    assert client.server_info()["version"] == "7.0.0"
    db.items.insert_one({"x": 1})
    assert db.name in client.list_database_names()
