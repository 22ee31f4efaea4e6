"""A standalone mongod drops every collection created with ``temp: true`` when it starts
(clearTmpCollections in its start-up recovery): the temporaries of a $out or a renameCollection that
a crash left behind. Tidemark kept them for ever (found by a helper porting noPassthroughWithMongod
jstests). A temporary renamed with stayTemp stays temporary and is dropped too; one renamed without
it is not (renameCollection clears the option)."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.commands("create", "renameCollection", "applyOps"), pytest.mark.slow]


def test_temporary_collections_are_dropped_at_start_up(start_server):
    server = start_server()
    client = server.client()
    db = client.t
    db.command("create", "scratch", temp=True)
    db.scratch.insert_many([{"_id": i} for i in range(3)])
    db.scratch.create_index("x")
    client.admin.command("applyOps", [{"op": "c", "ns": "t.$cmd", "o": {"create": "applied", "temp": True}}])
    db.command("create", "kept_temp", temp=True)
    client.admin.command("renameCollection", "t.kept_temp", to="t.kept")  # no longer temporary
    db.command("create", "moved_temp", temp=True)
    client.admin.command("renameCollection", "t.moved_temp", to="t.moved", stayTemp=True)
    db.plain.insert_one({"_id": 1})
    assert db.command("listCollections", filter={"name": "scratch"})["cursor"]["firstBatch"][0]["options"] == \
        {"temp": True}
    client.close()
    server.restart()
    client = server.client()
    assert sorted(client.t.list_collection_names()) == ["kept", "plain"]
    assert list(client.t.plain.find()) == [{"_id": 1}]
    client.t.command("create", "scratch")  # the name is free again
    assert client.t.scratch.count_documents({}) == 0
    client.close()
