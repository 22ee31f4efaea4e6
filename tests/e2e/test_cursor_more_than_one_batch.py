"""serverStatus ``metrics.cursor.moreThanOneBatch`` counts a cursor that returned more than one batch
when that cursor goes — exhausted, killed or timed out — as mongod 7.0's ``~ClientCursor``
(src/mongo/db/clientcursor.cpp: ``if (_nBatchesReturned > 1) cursorStatsMoreThanOneBatch.increment()``;
jstests/noPassthroughWithMongod/cursor_server_status_metrics_num_batches.js: "Can't see the update until
after the cursor is dead").

Tidemark counted it at the cursor's second batch, while the cursor was still open."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.commands("serverStatus", "find", "aggregate", "getMore", "killCursors", "listIndexes",
                                  "listCollections")


def _counts(db) -> tuple[int, int]:
    m = db.command("serverStatus")["metrics"]["cursor"]
    return m["totalOpened"], m["moreThanOneBatch"]


@pytest.mark.parametrize("opener", ["find", "aggregate", "listIndexes", "listCollections"])
def test_counted_when_the_cursor_goes(db, opener):
    db.c.insert_many([{"a": i} for i in range(20)])
    for k in "abcd":
        db.c.create_index(k)
    for i in range(4):
        db.create_collection(f"other{i}")
    ns = "$cmd.listCollections" if opener == "listCollections" else "c"
    commands = {"find": {"find": "c", "batchSize": 2},
                "aggregate": {"aggregate": "c", "pipeline": [], "cursor": {"batchSize": 2}},
                "listIndexes": {"listIndexes": "c", "cursor": {"batchSize": 2}},
                "listCollections": {"listCollections": 1, "cursor": {"batchSize": 2}}}
    opened0, more0 = _counts(db)
    # one batch only, then killed: not counted
    cid = db.command(commands[opener])["cursor"]["id"]
    db.command({"killCursors": ns, "cursors": [cid]})
    assert _counts(db) == (opened0 + 1, more0)
    # a second batch: not counted while the cursor is open, counted when it is killed
    cid = db.command(commands[opener])["cursor"]["id"]
    db.command({"getMore": cid, "collection": ns, "batchSize": 1})
    assert _counts(db) == (opened0 + 2, more0)
    db.command({"killCursors": ns, "cursors": [cid]})
    assert _counts(db) == (opened0 + 2, more0 + 1)
    # exhausted by its getMores: counted then
    cid = db.command(commands[opener])["cursor"]["id"]
    while cid:
        cid = db.command({"getMore": cid, "collection": ns})["cursor"]["id"]
    assert _counts(db) == (opened0 + 3, more0 + 2)
