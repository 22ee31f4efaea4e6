"""An aggregate opens its read and draws its first batch in one pool job (cursors.first_batch): the
cursor counters (serverStatus ``metrics.cursor``) stay as they were with two — an error opening the
read leaves no cursor behind and counts none; an error drawing the first batch counts an opened
cursor, closed; a cursor left open is counted open and continues with getMore; killOp and maxTimeMS
still stop the read."""

from __future__ import annotations

import datetime

import pytest
from pymongo.errors import ExecutionTimeout, OperationFailure

pytestmark = [pytest.mark.commands("aggregate", "getMore", "serverStatus")]

T0 = datetime.datetime(2024, 1, 1)


def _cursor_metrics(client) -> dict:
    m = client.admin.command("serverStatus")["metrics"]["cursor"]
    return {"totalOpened": m["totalOpened"], "open": dict(m["open"]), "lifespan": sum(m["lifespan"].values())}


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    from harness.server import ServerProcess

    path = tmp_path_factory.mktemp("first_batch")
    proc = ServerProcess(path / "db", log_path=path / "server.log").start()
    with proc.client() as client:
        db = client.fb
        db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
        db.ts.insert_many([{"t": T0 + datetime.timedelta(seconds=i), "m": i % 3, "v": i} for i in range(300)])
        db.reg.insert_many([{"_id": i, "v": i} for i in range(300)])
    yield proc
    proc.kill()


@pytest.mark.parametrize("coll", ["ts", "reg"])
@pytest.mark.parametrize("pipeline, code", [
    ([{"$nosuchstage": {}}], 40324),
    ([{"$group": {"_id": None, "x": {"$nosuchacc": 1}}}], 15952),
    ([{"$match": {"$expr": {"$nosuchop": 1}}}], 168),
])
def test_an_error_opening_the_read_counts_no_cursor(srv, coll, pipeline, code):
    with srv.client() as client:
        before = _cursor_metrics(client)
        with pytest.raises(OperationFailure) as err:
            client.fb.command("aggregate", coll, pipeline=pipeline, cursor={})
        assert err.value.code == code
        assert _cursor_metrics(client) == before


@pytest.mark.parametrize("coll", ["ts", "reg"])
def test_an_error_in_the_first_batch_counts_a_cursor_opened_and_closed(srv, coll):
    with srv.client() as client:
        before = _cursor_metrics(client)
        with pytest.raises(OperationFailure) as err:
            client.fb.command("aggregate", coll, pipeline=[{"$project": {"x": {"$divide": [1, "$v"]}}}], cursor={})
        assert err.value.code == 2  # $divide by zero, at the first document (v: 0)
        after = _cursor_metrics(client)
        assert after["totalOpened"] == before["totalOpened"] + 1
        assert after["lifespan"] == before["lifespan"] + 1
        assert after["open"] == before["open"]


@pytest.mark.parametrize("coll", ["ts", "reg"])
def test_a_cursor_left_open_is_counted_and_continues(srv, coll):
    with srv.client() as client:
        before = _cursor_metrics(client)
        reply = client.fb.command("aggregate", coll, pipeline=[{"$match": {"v": {"$gte": 10}}}, {"$sort": {"v": 1}},
                                                             {"$project": {"_id": 0, "v": 1}}],
                                  cursor={"batchSize": 2})
        assert [d["v"] for d in reply["cursor"]["firstBatch"]] == [10, 11]
        cursor_id = reply["cursor"]["id"]
        assert cursor_id
        during = _cursor_metrics(client)
        assert during["totalOpened"] == before["totalOpened"] + 1
        assert during["open"]["total"] == before["open"]["total"] + 1
        more = client.fb.command("getMore", cursor_id, collection=coll)
        assert [d["v"] for d in more["cursor"]["nextBatch"]] == list(range(12, 300))
        assert more["cursor"]["id"] == 0
        after = _cursor_metrics(client)
        assert after["open"] == before["open"] and after["lifespan"] == before["lifespan"] + 1


@pytest.mark.parametrize("coll", ["ts", "reg"])
def test_max_time_ms_stops_the_first_batch(srv, coll):
    with srv.client() as client:
        before = _cursor_metrics(client)
        slow = {"$match": {"$expr": {"$lt": [{"$size": {"$range": [0, 200_000]}}, 0]}}}
        with pytest.raises(ExecutionTimeout):
            client.fb.command("aggregate", coll, pipeline=[slow], cursor={}, maxTimeMS=50)
        after = _cursor_metrics(client)
        assert after["open"] == before["open"]
        assert after["totalOpened"] - before["totalOpened"] == after["lifespan"] - before["lifespan"]
