"""serverStatus metrics.commands, as mongod's command metrics: every command with ``total`` and ``failed``
(ok: 0 replies), ``<UNKNOWN>`` for names of no command, and update / findAndModify with the statements that
used an aggregation pipeline or arrayFilters (update_metrics.js, find_and_modify_metrics.js); the section
was absent (monitoring tools read it)."""

from __future__ import annotations

import pytest
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("serverStatus", "update", "findAndModify")


def metrics(client):
    return client.admin.command("serverStatus")["metrics"]["commands"]


def test_totals_failures_and_update_shapes(client, db):
    db.c.insert_many([{"_id": i, "a": [1, 2]} for i in range(3)])
    before = metrics(client)
    db.c.update_one({"_id": 1}, [{"$set": {"b": 1}}])
    db.c.update_many({}, {"$set": {"a.$[e]": 5}}, array_filters=[{"e": 1}])
    db.command({"update": "c", "updates": [{"q": {"_id": 0}, "u": [{"$set": {"x": 1}}]},
                                           {"q": {"_id": 1}, "u": [{"$set": {"x": 2}}]}]})
    db.c.find_one_and_update({"_id": 2}, [{"$set": {"z": 1}}])
    db.c.find_one_and_update({"_id": 2}, {"$set": {"a.$[e]": 7}}, array_filters=[{"e": 5}])
    for bad in ({"nosuchcommand": 1}, {"find": 5}):
        with pytest.raises(OperationFailure):
            db.command(bad)
    after = metrics(client)
    assert after["update"]["total"] - before["update"]["total"] == 3
    assert after["update"]["pipeline"] - before["update"]["pipeline"] == 3  # per statement
    assert after["update"]["arrayFilters"] - before["update"]["arrayFilters"] == 1
    assert after["findAndModify"]["pipeline"] - before["findAndModify"]["pipeline"] == 1
    assert after["findAndModify"]["arrayFilters"] - before["findAndModify"]["arrayFilters"] == 1
    assert after["find"]["failed"] - before["find"]["failed"] == 1
    assert after["find"]["total"] - before["find"]["total"] == 1
    assert after["<UNKNOWN>"] - before.get("<UNKNOWN>", 0) == 1
    assert sorted(after["update"]) == ["arrayFilters", "failed", "pipeline", "total"]
    assert set(after["ping"]) == {"failed", "total"} and "insert" in after and "aggregate" in after
