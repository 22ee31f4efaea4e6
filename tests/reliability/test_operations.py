"""An operator can see and stop a runaway query: currentOp / $currentOp list running operations,
killOp interrupts one at its next check (11601), maxTimeMS interrupts long loops (50), and a
shutdown interrupts what is running instead of waiting for it."""

from __future__ import annotations

import threading
import time

import pytest
from pymongo.errors import ExecutionTimeout, OperationFailure

# One document takes ~1 s: a 3,000,000-element $reduce whose loop reaches the interruption check
# every few hundred elements. 100 documents make a query that would run for minutes.
RUNAWAY = [{"$project": {"x": {"$reduce": {"input": {"$range": [0, 3_000_000]}, "initialValue": 0,
                                           "in": {"$add": ["$$value", "$$this"]}}}}}]


@pytest.fixture
def coll(db):
    db.c.insert_many([{"_id": i} for i in range(100)])
    return db.c


class Runaway:
    """A runaway aggregation in a thread; ``.error`` is what it ended with."""

    def __init__(self, coll, comment: str, **kwargs):
        self.error: BaseException | None = None
        self.finished = False
        self.elapsed = 0.0

        def run():
            started = time.monotonic()
            try:
                list(coll.aggregate(RUNAWAY, comment=comment, **kwargs))
                self.finished = True
            except BaseException as exc:  # noqa: BLE001 - asserted by the test
                self.error = exc
            self.elapsed = time.monotonic() - started

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def join(self, timeout: float = 60) -> None:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the operation did not stop"


def _find_op(client, comment: str, timeout: float = 20) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ops = client.admin.command({"currentOp": 1, "command.comment": comment})["inprog"]
        if ops:
            return ops[0]
        time.sleep(0.05)
    raise AssertionError(f"no running operation with comment {comment!r}")


@pytest.mark.commands("currentOp", "killOp", "aggregate")
def test_current_op_lists_a_running_query_and_kill_op_interrupts_it(client, coll):
    runaway = Runaway(coll, "kill-me")
    op = _find_op(client, "kill-me")
    assert op["type"] == "op" and op["active"] is True
    assert isinstance(op["opid"], int)
    assert op["ns"] == coll.full_name
    assert op["op"] == "command"
    assert op["command"]["aggregate"] == "c" and op["command"]["comment"] == "kill-me"
    assert op["desc"].startswith("conn") and op["connectionId"] == int(op["desc"][4:])
    assert ":" in op["client"] and op["clientMetadata"]["driver"]["name"].startswith("PyMongo")
    for field in ("host", "currentOpTime", "secs_running", "microsecs_running", "numYields", "locks",
                  "waitingForLock", "lsid"):
        assert field in op, field
    reply = client.admin.command("killOp", op=op["opid"])
    assert reply == {"info": "attempting to kill op", "ok": 1.0}
    runaway.join()
    assert isinstance(runaway.error, OperationFailure) and runaway.error.code == 11601
    assert runaway.error.details["codeName"] == "Interrupted"
    assert runaway.error.details["errmsg"] == "operation was interrupted"
    assert client.admin.command({"currentOp": 1, "command.comment": "kill-me"})["inprog"] == []


@pytest.mark.commands("currentOp", "killOp")
def test_current_op_and_kill_op_arguments(client, db):
    everything = client.admin.command({"currentOp": 1, "$all": True})["inprog"]
    assert any(e.get("active") is False for e in everything)  # idle connections with $all
    mine = client.admin.command({"currentOp": 1, "command.currentOp": {"$exists": True}})["inprog"]
    assert len(mine) == 1 and mine[0]["ns"] == "admin.$cmd"  # currentOp sees itself
    assert client.admin.command("killOp", op=2**31 - 1)["info"] == "attempting to kill op"  # no such op
    for bad, code in (({}, 4), ({"op": "x"}, 14), ({"op": 1.5}, 2), ({"op": 2**40}, 26823)):
        with pytest.raises(OperationFailure) as err:
            client.admin.command({"killOp": 1, **bad})
        assert err.value.code == code, bad
    for name in ("currentOp", "killOp"):
        with pytest.raises(OperationFailure) as err:
            db.command({name: 1, "op": 1})
        assert err.value.code == 13


@pytest.mark.commands("aggregate")
def test_current_op_stage(client, coll):
    runaway = Runaway(coll, "stage")
    op = _find_op(client, "stage")
    found = list(client.admin.aggregate([{"$currentOp": {"allUsers": True, "idleConnections": False}},
                                         {"$match": {"opid": op["opid"]}}]))
    assert [e["command"]["comment"] for e in found] == ["stage"]
    idle = list(client.admin.aggregate([{"$currentOp": {"idleConnections": True}}, {"$match": {"active": False}}]))
    assert idle and all("connectionId" in e for e in idle)
    cursor = coll.find({}, batch_size=2)
    next(cursor)
    cursors = list(client.admin.aggregate([{"$currentOp": {"idleCursors": True}},
                                           {"$match": {"type": "idleCursor", "ns": coll.full_name}}]))
    assert cursors and cursors[0]["cursor"]["nDocsReturned"] == 2
    cursor.close()
    client.admin.command("killOp", op=op["opid"])
    runaway.join()
    for pipeline, code in (([{"$currentOp": {"bogus": True}}], 9), ([{"$currentOp": {"allUsers": 1}}], 9),
                           ([{"$currentOp": 1}], 9)):
        with pytest.raises(OperationFailure) as err:
            client.admin.command("aggregate", 1, pipeline=pipeline, cursor={})
        assert err.value.code == code, pipeline
    with pytest.raises(OperationFailure) as err:
        coll.database.command("aggregate", 1, pipeline=[{"$currentOp": {}}], cursor={})
    assert err.value.code == 73
    # mongod parses every stage before it checks their positions (Pipeline::parse, then validateCommon):
    # on a collection the stage's own namespace check answers first; where it parses, its position does
    with pytest.raises(OperationFailure) as err:
        list(coll.aggregate([{"$match": {}}, {"$currentOp": {}}]))
    assert err.value.code == 73
    with pytest.raises(OperationFailure) as err:
        client.admin.command("aggregate", 1, pipeline=[{"$currentOp": {}}, {"$currentOp": {}}], cursor={})
    assert err.value.code == 40602


@pytest.mark.commands("aggregate", "find")
def test_max_time_ms_interrupts_long_expression_loops_and_scans(coll):
    started = time.monotonic()
    with pytest.raises(ExecutionTimeout) as err:
        list(coll.aggregate(RUNAWAY, maxTimeMS=200))
    assert err.value.code == 50
    assert time.monotonic() - started < 10  # unbounded, it would run for minutes
    started = time.monotonic()
    with pytest.raises(ExecutionTimeout):
        list(coll.find({"$expr": RUNAWAY[0]["$project"]["x"]}, max_time_ms=200))
    assert time.monotonic() - started < 10


@pytest.mark.slow
@pytest.mark.clients
@pytest.mark.commands("currentOp", "killOp")
def test_mongosh_finds_and_kills_a_runaway_query(client, coll, mongosh):
    runaway = Runaway(coll, "from-mongosh")
    _find_op(client, "from-mongosh")
    killed = mongosh(
        "const ops = db.currentOp({'command.comment': 'from-mongosh'}).inprog;"
        "const res = db.killOp(ops[0].opid);"
        "({n: ops.length, ns: ops[0].ns, ok: res.ok, info: res.info})"
    )
    assert killed == {"n": 1, "ns": coll.full_name, "ok": 1, "info": "attempting to kill op"}
    runaway.join()
    assert isinstance(runaway.error, OperationFailure) and runaway.error.code == 11601


@pytest.mark.commands("aggregate")
def test_shutdown_interrupts_running_operations(start_server):
    srv = start_server()
    client = srv.client(retryReads=False)
    client.t.c.insert_many([{"_id": i} for i in range(100)])
    runaway = Runaway(client.t.c, "at-shutdown")
    _find_op(client, "at-shutdown")
    started = time.monotonic()
    assert srv.terminate() == 0
    assert time.monotonic() - started < 8  # it does not wait for the query (minutes)
    runaway.join()
    assert runaway.error is not None and not runaway.finished
