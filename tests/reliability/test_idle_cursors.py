"""Idle cursors cost memory only: a suspended cursor holds no LMDB read transaction (reader slot), so
10,000 of them on regular and time-series collections leave every other client working, and they
still die after cursorTimeoutMillis."""

from __future__ import annotations

import datetime
import time

import pytest
from pymongo.errors import OperationFailure
from wire_client import WireClient

CURSORS = 10_000  # LMDB has 512 reader slots


def _open_cursors(port: int, db: str, coll: str, n: int) -> list[int]:
    with WireClient(port) as wire:
        replies = wire.pipeline([{"find": coll, "batchSize": 1, "$db": db}] * n)
    ids = [r["cursor"]["id"] for r in replies if r.get("ok") == 1.0]
    errors = [r for r in replies if r.get("ok") != 1.0]
    assert not errors, errors[:3]
    return ids


@pytest.mark.slow
@pytest.mark.commands("find", "getMore", "insert", "ping", "killCursors")
def test_ten_thousand_idle_cursors_leave_other_clients_working(start_server):
    srv = start_server()
    client = srv.client()
    db = client["idle"]
    db.regular.insert_many([{"_id": i, "v": "x" * 100} for i in range(3)])
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    base = datetime.datetime(2024, 1, 1)
    db.ts.insert_many([{"t": base + datetime.timedelta(seconds=i), "m": i % 2, "v": i} for i in range(3)])

    ids = _open_cursors(srv.port, "idle", "regular", CURSORS // 2)
    ids += _open_cursors(srv.port, "idle", "ts", CURSORS // 2)
    assert len(ids) == CURSORS and all(ids)

    # Every other client keeps working: reads, writes, and more cursors.
    other = srv.client()
    assert other.admin.command("ping")["ok"] == 1.0
    other.idle.regular.insert_one({"_id": "after"})
    assert other.idle.regular.count_documents({}) == 4
    assert len(list(other.idle.ts.find({}))) == 3
    assert other.idle.regular.find_one({"_id": "after"}) == {"_id": "after"}
    assert db.command("serverStatus")["metrics"]["cursor"]["open"]["total"] >= CURSORS

    # The idle cursors still work when resumed (outside any session, as they were opened: mongod
    # refuses a getMore from another session, 50736).
    with WireClient(srv.port) as wire:
        more, more_ts = wire.pipeline([{"getMore": ids[0], "collection": "regular", "$db": "idle"},
                                       {"getMore": ids[-1], "collection": "ts", "$db": "idle"}])
    assert len(more["cursor"]["nextBatch"]) == 2 and len(more_ts["cursor"]["nextBatch"]) == 2
    killed = db.command("killCursors", "regular", cursors=ids[1:CURSORS // 2])
    assert len(killed["cursorsKilled"]) == CURSORS // 2 - 1
    other.close()
    client.close()


@pytest.mark.slow
@pytest.mark.commands("find", "getMore")
def test_idle_cursors_time_out_after_cursor_timeout_millis(start_server):
    # (pymongo opens them in its implicit session: mongod times such cursors out only with the parameter)
    srv = start_server(params={"cursorTimeoutMillis": 1000, "clientCursorMonitorFrequencySecs": 1,
                               "enableTimeoutOfInactiveSessionCursors": "true"})
    client = srv.client()
    db = client["idle"]
    db.c.insert_many([{"_id": i} for i in range(50)])
    live = db.command("find", "c", batchSize=1)["cursor"]["id"]
    idle = db.command("find", "c", batchSize=1)["cursor"]["id"]
    deadline = time.monotonic() + 4
    while time.monotonic() < deadline:  # keep one cursor busy: only idle time counts
        db.command("getMore", live, collection="c", batchSize=1)
        time.sleep(0.3)
    with pytest.raises(Exception) as err:
        db.command("getMore", idle, collection="c")
    assert err.value.code == 43
    client.close()


@pytest.mark.slow
@pytest.mark.commands("setParameter", "getParameter", "getMore")
def test_cursor_monitor_frequency_is_settable_at_runtime(start_server):
    """mongod declares clientCursorMonitorFrequencySecs ``set_at: [startup, runtime]``
    (src/mongo/db/cursor_server_params.idl) and its jstests lower it with setParameter on a running server
    (noPassthrough/aggregation_cursor_invalidations.js); Tidemark refused that with 20 IllegalOperation.
    Set at runtime, the monitor's next look uses it."""
    srv = start_server(params={"enableTimeoutOfInactiveSessionCursors": "true"})
    client = srv.client()
    db = client["idle"]
    db.c.insert_many([{"_id": i} for i in range(5)])
    previous = client.admin.command("setParameter", 1, clientCursorMonitorFrequencySecs=1)
    assert previous["was"] == 4
    assert client.admin.command("getParameter", 1, clientCursorMonitorFrequencySecs=1)[
        "clientCursorMonitorFrequencySecs"] == 1
    client.admin.command("setParameter", 1, cursorTimeoutMillis=10)
    timed_out = db.command("serverStatus")["metrics"]["cursor"]["timedOut"]
    cursor_id = db.command("find", "c", batchSize=1)["cursor"]["id"]
    deadline = time.monotonic() + 8  # (the look already asleep keeps the old 4 s; the next ones 1 s)
    while db.command("serverStatus")["metrics"]["cursor"]["timedOut"] == timed_out:
        assert time.monotonic() < deadline, "the idle cursor was never reaped"
        time.sleep(0.1)
    with pytest.raises(OperationFailure) as err:
        db.command("getMore", cursor_id, collection="c")
    assert err.value.code == 43
    client.close()
