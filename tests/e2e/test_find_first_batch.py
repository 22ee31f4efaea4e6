"""A find opens its read and draws its first batch in one job (``cursors.first_batch``, as
aggregate does): one hand-off to the pool per find (the scheduler grants one run token, not two); the
cursor counters (serverStatus ``metrics.cursor``) stay as they were with two jobs — an error opening
the read (a bad hint, a view refusing returnKey) leaves no cursor and counts none, an error drawing
the first batch counts a cursor opened and closed, a cursor left open continues with getMore; a
resumable find still reports its tokens; killOp and maxTimeMS still stop the read; many clients
at once each get their own replies."""

from __future__ import annotations

import threading

import pytest
from harness.listed import ListedRun
from pymongo.errors import ExecutionTimeout, OperationFailure

pytestmark = [pytest.mark.commands("find", "getMore", "serverStatus", "killOp", "currentOp")]

RUNAWAY = {"$expr": {"$lt": [{"$reduce": {"input": {"$range": [0, 3_000_000]}, "initialValue": 0,
                                          "in": {"$add": ["$$value", "$$this"]}}}, 0]}}


def _cursor_metrics(client) -> dict:
    m = client.admin.command("serverStatus")["metrics"]["cursor"]
    return {"totalOpened": m["totalOpened"], "open": dict(m["open"]), "lifespan": sum(m["lifespan"].values())}


def _grants(client) -> int:
    return client.admin.command("serverStatus")["tidemark"]["scheduler"]["grants"]


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    from harness.server import ServerProcess

    path = tmp_path_factory.mktemp("find_first_batch")
    proc = ServerProcess(path / "db", log_path=path / "server.log").start()
    with proc.client() as client:
        db = client.ff
        db.reg.insert_many([{"_id": i, "v": i} for i in range(300)])
        db.create_collection("view", viewOn="reg", pipeline=[])
        db.create_collection("clustered", clusteredIndex={"key": {"_id": 1}, "unique": True})
        db.clustered.insert_many([{"_id": i} for i in range(5)])
    yield proc
    proc.kill()


def test_a_find_hands_its_read_to_the_pool_once(srv):
    with srv.client() as client:
        # a short find runs inline on the event loop (tests/e2e/test_inline_reads.py): here, every
        # read goes to the pool
        client.admin.command("setParameter", 1, tidemarkInlineReadMicros=0)
        try:
            client.ff.command("find", "reg", filter={"v": 1})  # warm
            # serverStatus itself may use the pool: what it costs is measured and taken off
            first = _grants(client)
            second = _grants(client)
            for _ in range(10):
                client.ff.command("find", "reg", filter={"v": {"$lt": 3}})
            third = _grants(client)
            assert third - second - (second - first) == 10  # two jobs per find would make it 20
        finally:
            client.admin.command("setParameter", 1, tidemarkInlineReadMicros=1000)


@pytest.mark.parametrize("kwargs, code", [
    ({"hint": {"nosuch": 1}}, 2),  # the plan is made in the job: no such index
    ({"filter": {"$expr": {"$nosuchop": 1}}}, 168),
])
def test_an_error_opening_the_read_counts_no_cursor(srv, kwargs, code):
    with srv.client() as client:
        before = _cursor_metrics(client)
        with pytest.raises(OperationFailure) as err:
            client.ff.command("find", "reg", **kwargs)
        assert err.value.code == code
        assert _cursor_metrics(client) == before


@pytest.mark.parametrize("option", ["returnKey", "showRecordId"])
def test_a_view_refuses_return_key_and_show_record_id_with_no_cursor(srv, option):
    with srv.client() as client:
        before = _cursor_metrics(client)
        with pytest.raises(OperationFailure) as err:
            client.ff.command("find", "view", **{option: True})
        assert err.value.code == 168
        assert err.value.details["errmsg"] == f"Option {option} not supported in aggregation."
        assert _cursor_metrics(client) == before


def test_an_error_in_the_first_batch_counts_a_cursor_opened_and_closed(srv):
    with srv.client() as client:
        before = _cursor_metrics(client)
        with pytest.raises(OperationFailure) as err:
            client.ff.command("find", "reg", filter={"$expr": {"$eq": [{"$divide": [1, "$v"]}, 7]}})
        assert err.value.code == 2  # $divide by zero, at the first document (v: 0)
        after = _cursor_metrics(client)
        assert after["totalOpened"] == before["totalOpened"] + 1
        assert after["lifespan"] == before["lifespan"] + 1
        assert after["open"] == before["open"]


def test_a_cursor_left_open_is_counted_and_continues(srv):
    with srv.client() as client:
        before = _cursor_metrics(client)
        reply = client.ff.command("find", "reg", filter={"v": {"$gte": 10}}, sort={"v": 1},
                                  projection={"_id": 0, "v": 1}, batchSize=2)
        assert reply["cursor"]["firstBatch"] == [{"v": 10}, {"v": 11}]
        cursor_id = reply["cursor"]["id"]
        assert cursor_id
        during = _cursor_metrics(client)
        assert during["totalOpened"] == before["totalOpened"] + 1
        assert during["open"]["total"] == before["open"]["total"] + 1
        more = client.ff.command("getMore", cursor_id, collection="reg")
        assert [d["v"] for d in more["cursor"]["nextBatch"]] == list(range(12, 300))
        assert more["cursor"]["id"] == 0
        after = _cursor_metrics(client)
        assert after["open"] == before["open"] and after["lifespan"] == before["lifespan"] + 1


def test_a_resumable_find_reports_its_tokens_batch_by_batch(srv):
    with srv.client() as client:
        ids = [d["$recordId"] for d in client.ff.command("find", "clustered", hint={"$natural": 1},
                                                          showRecordId=True)["cursor"]["firstBatch"]]
        assert len(ids) == 5
        reply = client.ff.command("find", "clustered", hint={"$natural": 1}, batchSize=2,
                                  **{"$_requestResumeToken": True})
        assert [d["_id"] for d in reply["cursor"]["firstBatch"]] == [0, 1]
        assert "$recordId" not in reply["cursor"]["firstBatch"][0]
        assert reply["cursor"]["postBatchResumeToken"] == {"$recordId": ids[1]}
        more = client.ff.command("getMore", reply["cursor"]["id"], collection="clustered", batchSize=2)
        assert [d["_id"] for d in more["cursor"]["nextBatch"]] == [2, 3]
        assert more["cursor"]["postBatchResumeToken"] == {"$recordId": ids[3]}
        shown = client.ff.command("find", "clustered", hint={"$natural": 1}, showRecordId=True, batchSize=1,
                                  **{"$_requestResumeToken": True})
        assert shown["cursor"]["firstBatch"] == [{"_id": 0, "$recordId": ids[0]}]
        assert shown["cursor"]["postBatchResumeToken"] == {"$recordId": ids[0]}
        client.ff.command("killCursors", "clustered", cursors=[reply["cursor"]["id"], shown["cursor"]["id"]])


def test_max_time_ms_stops_the_read_with_no_cursor_left(srv):
    with srv.client() as client:
        before = _cursor_metrics(client)
        with pytest.raises(ExecutionTimeout) as err:
            client.ff.command("find", "reg", filter=RUNAWAY, maxTimeMS=50)
        assert err.value.code == 50
        after = _cursor_metrics(client)
        assert after["open"] == before["open"]
        assert after["totalOpened"] - before["totalOpened"] == after["lifespan"] - before["lifespan"]


def test_kill_op_stops_a_running_find_with_no_cursor_left(srv):
    with srv.client() as client, srv.client() as other:
        before = _cursor_metrics(client)
        run = ListedRun(lambda: other.ff.command("find", "reg", filter=RUNAWAY, comment="kill-this-find"),
                        client, "kill-this-find", timeout=20, poll=0.02)
        thread, outcome, ops = run.thread, run.outcome, run.ops
        assert ops, "the find was never listed by currentOp"
        assert ops[0]["op"] == "query" and ops[0]["ns"] == "ff.reg"
        client.admin.command("killOp", op=ops[0]["opid"])
        thread.join(30)
        assert not thread.is_alive()
        assert isinstance(outcome[0], OperationFailure) and outcome[0].code == 11601
        after = _cursor_metrics(client)
        assert after["open"] == before["open"]
        assert after["totalOpened"] - before["totalOpened"] == after["lifespan"] - before["lifespan"]
        assert client.admin.command({"currentOp": 1, "command.comment": "kill-this-find"})["inprog"] == []


def test_many_clients_at_once_each_get_their_own_replies(srv):
    errors: list[str] = []

    def client_loop(k: int) -> None:
        with srv.client() as client:
            for i in range(40):
                lo = (k * 7 + i) % 290
                reply = client.ff.command("find", "reg", filter={"v": {"$gte": lo, "$lt": lo + 5}},
                                          sort={"v": 1}, projection={"_id": 0, "v": 1})
                got = [d["v"] for d in reply["cursor"]["firstBatch"]]
                if got != list(range(lo, lo + 5)):
                    errors.append(f"client {k} asked from {lo}, got {got}")
                agg = client.ff.command("aggregate", "reg", pipeline=[{"$match": {"_id": lo}},
                                                                      {"$project": {"_id": 0, "k": {"$literal": k}}}],
                                        cursor={})
                if agg["cursor"]["firstBatch"] != [{"k": k}]:
                    errors.append(f"client {k} got {agg['cursor']['firstBatch']}")

    threads = [threading.Thread(target=client_loop, args=(k,)) for k in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert errors == []
