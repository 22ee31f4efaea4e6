"""serverStatus ``metrics.document``, ``metrics.queryExecutor`` and ``metrics.operation.scanAndOrder``
(mongod 7.0: ``recordCurOpMetrics`` in src/mongo/db/curop_metrics.cpp):
after every operation mongod adds its OpDebug counters — documents returned (``nreturned``), inserted
(``ninserted``), updated (``nMatched``), deleted (``ndeleted``), keys and documents examined
(``scanned`` / ``scannedObjects``) and one ``scanAndOrder`` per operation with an in-memory sort —
whether or not the operation is profiled (jstests/noPassthroughWithMongod/findAndModify_document_metrics.js
reads them around findAndModify).

Tidemark's serverStatus had no ``metrics.document`` (nor ``queryExecutor``, ``operation``) at all."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.commands("serverStatus", "insert", "find", "getMore", "aggregate", "update", "delete",
                                  "findAndModify")

FIELDS = ("deleted", "inserted", "returned", "updated", "scanned", "scannedObjects", "scanAndOrder")


def _metrics(db) -> dict:
    m = db.command("serverStatus")["metrics"]
    return {**m["document"], **m["queryExecutor"], "scanAndOrder": m["operation"]["scanAndOrder"]}


def _delta(db, run) -> dict:
    before = _metrics(db)
    run()
    after = _metrics(db)
    return {k: after[k] - before[k] for k in FIELDS}


def test_sections_are_int64_counters(db):
    m = db.command("serverStatus")["metrics"]
    assert set(m["document"]) == {"deleted", "inserted", "returned", "updated"}
    assert set(m["queryExecutor"]) >= {"scanned", "scannedObjects"}
    assert "scanAndOrder" in m["operation"]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(st.integers(0, 3), min_size=1, max_size=12), target=st.integers(0, 3),
       batch=st.integers(0, 4))
def test_counts_follow_each_operation(db, values, target, batch):
    db.c.drop()
    n = len(values)
    assert _delta(db, lambda: db.c.insert_many([{"v": v} for v in values]))["inserted"] == n
    found = _delta(db, lambda: list(db.c.find().batch_size(batch)))  # getMores included
    assert (found["returned"], found["scannedObjects"], found["scanAndOrder"]) == (n, n, 0)
    assert _delta(db, lambda: list(db.c.find().sort("v", 1)))["scanAndOrder"] == 1
    assert _delta(db, lambda: list(db.c.aggregate([{"$match": {"v": target}}])))["returned"] == values.count(target)
    matching = values.count(target)
    updated = _delta(db, lambda: db.c.update_many({"v": target}, {"$set": {"w": 1}}))
    assert (updated["updated"], updated["scannedObjects"]) == (matching, n)
    assert _delta(db, lambda: db.c.delete_many({"v": target}))["deleted"] == matching


def test_find_and_modify_counts_only_what_it_wrote(db):
    db.c.insert_one({"a": 1, "b": 1})
    assert _delta(db, lambda: db.c.find_one_and_update({"a": 2}, {"$set": {"b": 2}}))["updated"] == 0
    assert _delta(db, lambda: db.c.find_one_and_update({"a": 1}, {"$set": {"b": 2}}))["updated"] == 1
    assert _delta(db, lambda: db.c.find_one_and_delete({"a": 2}))["deleted"] == 0
    assert _delta(db, lambda: db.c.find_one_and_delete({"a": 1}))["deleted"] == 1


def test_indexed_reads_count_keys_examined(db):
    db.c.create_index("v")
    db.c.insert_many([{"v": i} for i in range(10)])
    read = _delta(db, lambda: list(db.c.find({"v": {"$gte": 5}})))
    assert (read["returned"], read["scannedObjects"]) == (5, 5)
    assert read["scanned"] >= 5
