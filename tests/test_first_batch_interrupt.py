"""A read command's interruption check before its read opens (``cursors._open_and_fill``'s first step,
in the very job — inline on the loop or in the pool — that opens the read and draws its first batch): a
killed operation, or one past its maxTimeMS, opens nothing and leaves no cursor counted (serverStatus
``metrics.cursor``), wherever the read runs."""

from __future__ import annotations

import asyncio
import datetime

import pytest
from pymongo.errors import ExecutionTimeout

from tidemark import cursors
from tidemark.protocol.errors import ErrorCode, MongoError

pytestmark = [pytest.mark.commands("aggregate", "find", "configureFailPoint", "serverStatus", "setParameter")]


class _KilledOp:
    def check(self):
        raise MongoError(ErrorCode.Interrupted, "operation was interrupted")


class _Ctx:
    op = _KilledOp()

    async def run_blocking(self, fn, *args):
        return fn(*args)

    run_read = run_blocking


@pytest.mark.parametrize("restartable", [False, True])
def test_a_killed_operation_opens_nothing_and_counts_no_cursor(restartable):
    registry = cursors.CursorRegistry()
    opened = []

    def open_docs():
        opened.append(True)
        return iter([{"a": 1}]), None

    cursor = registry.open("db.c", iter(()))
    cursor.in_use = True
    with pytest.raises(MongoError) as err:
        asyncio.run(registry.first_batch(_Ctx(), cursor, open_docs, None, restartable))
    assert err.value.code == ErrorCode.Interrupted
    assert opened == []
    assert len(registry) == 0 and registry.total_opened == 0
    assert sum(registry.lifespans.values()) == 0


def _metrics(client) -> dict:
    m = client.admin.command("serverStatus")["metrics"]["cursor"]
    return {"totalOpened": m["totalOpened"], "open": dict(m["open"]), "lifespan": sum(m["lifespan"].values())}


@pytest.mark.parametrize("inline_micros", [1000, 0])  # inline on the loop first, or the pool at once
def test_a_read_past_its_max_time_opens_no_cursor(start_server, inline_micros):
    server = start_server(params={"enableTestCommands": 1, "tidemarkInlineReadMicros": inline_micros})
    with server.client() as client:
        db = client.fbi
        db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
        t0 = datetime.datetime(2024, 1, 1)
        db.ts.insert_many([{"t": t0 + datetime.timedelta(seconds=i), "m": i % 3, "v": i} for i in range(50)])
        db.reg.insert_many([{"_id": i, "v": i} for i in range(50)])
        reads = [
            lambda: db.command("aggregate", "ts", pipeline=[{"$group": {"_id": "$m", "n": {"$max": "$v"}}}],
                               cursor={}, maxTimeMS=60_000),
            lambda: db.command("aggregate", "reg", pipeline=[{"$match": {"v": {"$gte": 3}}}], cursor={},
                               maxTimeMS=60_000),
            lambda: db.command("find", "ts", filter={"m": 1}, maxTimeMS=60_000),
            lambda: db.command("find", "reg", filter={}, maxTimeMS=60_000),
        ]
        for read in reads:
            assert read()["ok"] == 1.0  # (each kind has run once: not its first, cold, run below)
        before = _metrics(client)
        client.admin.command("configureFailPoint", "maxTimeAlwaysTimeOut", mode="alwaysOn")
        try:
            for read in reads:
                with pytest.raises(ExecutionTimeout) as err:
                    read()
                assert err.value.code == 50
        finally:
            client.admin.command("configureFailPoint", "maxTimeAlwaysTimeOut", mode="off")
        assert _metrics(client) == before
        for read in reads:
            assert read()["ok"] == 1.0
