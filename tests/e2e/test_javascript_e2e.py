"""Server-side JavaScript through pymongo (issue 25.17): $where, $function and $accumulator as in
mongod's jstests; an infinite loop stopped by maxTimeMS (50) and by killOp (11601); a memory bomb
answered 146 with the server alive and another client unaffected; no file or network access from
JavaScript; --noscripting / security.javascriptEnabled: false refused with mongod's errors."""

from __future__ import annotations

import threading
import time

import pytest
from bson.code import Code
from harness.innocent import InnocentClient
from pymongo.errors import ExecutionTimeout, OperationFailure

pytestmark = pytest.mark.commands("find", "aggregate", "count", "delete", "insert", "killOp", "currentOp", "ping")

AVG = {"init": "function() { return {count: 0, sum: 0}; }",
       "accumulate": "function(state, x) { return {count: state.count + 1, sum: state.sum + x}; }",
       "accumulateArgs": ["$x"],
       "merge": "function(a, b) { return {count: a.count + b.count, sum: a.sum + b.sum}; }",
       "finalize": "function(state) { return state.sum / state.count; }",
       "lang": "js"}
LOOP = "function() { while (true) {} }"


@pytest.fixture
def coll(db):
    db.c.insert_many([{"_id": i, "a": i % 3, "x": i, "name": f"n{i}"} for i in range(10)])
    return db.c


def test_where_in_find_count_and_delete(coll):
    assert [d["_id"] for d in coll.find({"$where": "this.a == 1"})] == [1, 4, 7]
    assert [d["_id"] for d in coll.find({"$where": Code("function() { return obj.x > 7; }")})] == [8, 9]
    assert coll.database.command("count", "c", query={"x": {"$lt": 5}, "$where": "this.a == 0"})["n"] == 2
    with pytest.raises(OperationFailure) as e:  # count_documents is an aggregation: $where is refused there
        coll.count_documents({"$where": "true"})
    assert e.value.code == 2
    assert coll.delete_many({"$where": "this.x >= 8"}).deleted_count == 2
    with pytest.raises(OperationFailure) as e:
        list(coll.aggregate([{"$match": {"$where": "true"}}]))
    assert e.value.code == 2 and "$where is not allowed in this context" in str(e.value)


def test_function_and_accumulator_in_aggregate(coll):
    out = list(coll.aggregate([
        {"$match": {"_id": {"$lt": 3}}},
        {"$project": {"r": {"$function": {"body": "function(n, x) { return n + ':' + (x * 2); }",
                                          "args": ["$name", "$x"], "lang": "js"}}}}]))
    assert out == [{"_id": 0, "r": "n0:0"}, {"_id": 1, "r": "n1:2"}, {"_id": 2, "r": "n2:4"}]
    out = list(coll.aggregate([{"$group": {"_id": "$a", "avg": {"$accumulator": AVG}}}, {"$sort": {"_id": 1}}]))
    assert out == [{"_id": 0, "avg": 4.5}, {"_id": 1, "avg": 4.0}, {"_id": 2, "avg": 5.0}]
    with pytest.raises(OperationFailure) as e:
        list(coll.aggregate([{"$project": {"r": {"$function": {"body": "function() { throw new Error('boom'); }",
                                                               "args": [], "lang": "js"}}}}]))
    assert e.value.code == 139 and "boom" in str(e.value)


def test_no_file_or_network_access_from_javascript(coll):
    body = "function() { return [typeof require, typeof load, typeof fetch, typeof std, typeof os, typeof process]; }"
    (out,) = coll.aggregate([{"$limit": 1}, {"$project": {"_id": 0, "r": {"$function": {
        "body": body, "args": [], "lang": "js"}}}}])
    assert out["r"] == ["undefined"] * 6
    with pytest.raises(OperationFailure) as e:
        list(coll.find({"$where": "require('fs').readFileSync('/etc/passwd')"}))
    assert e.value.code == 139 and "require" in str(e.value)


def test_an_infinite_loop_is_stopped_by_max_time_ms(coll):
    start = time.monotonic()
    with pytest.raises(ExecutionTimeout) as e:
        list(coll.find({"$where": LOOP}, max_time_ms=200))
    assert e.value.code == 50
    with pytest.raises(ExecutionTimeout):
        list(coll.aggregate([{"$project": {"r": {"$function": {"body": LOOP, "args": [], "lang": "js"}}}}],
                            maxTimeMS=200))
    assert time.monotonic() - start < 30


def test_sleep_waits_once_per_call_and_is_stopped_by_max_time_ms(coll):
    """mongod's scope has sleep(ms) (drivers' suites slow a $where down with it): the call waits, each sleep
    once, even when the call is run again; maxTimeMS stops a sleep that outlasts it."""
    start = time.monotonic()
    found = list(coll.find({"_id": 1, "$where": "function() { sleep(150); sleep(150); return true; }"}))
    elapsed = time.monotonic() - start
    assert [d["_id"] for d in found] == [1]
    assert 0.3 <= elapsed < 10
    (out,) = coll.aggregate([{"$match": {"_id": 2}}, {"$project": {"r": {"$function": {
        "body": "function(x) { sleep(1); return x + 1; }", "args": ["$x"], "lang": "js"}}}}])
    assert out == {"_id": 2, "r": 3}
    start = time.monotonic()
    with pytest.raises(ExecutionTimeout) as e:
        coll.find_one({"$where": "function() { sleep(20000); return true; }"}, max_time_ms=100)
    assert e.value.code == 50 and time.monotonic() - start < 10
    with pytest.raises(OperationFailure) as e:
        coll.find_one({"$where": "function() { sleep('x'); return true; }"})
    assert e.value.code == 139 and "sleep takes a single numeric argument" in str(e.value)


@pytest.mark.parametrize("command", ["find", "count"])
def test_an_infinite_loop_is_stopped_by_kill_op(coll, client, command):
    """The running operation shows its plan in currentOp once planned (count_plan_summary.js: mongod's
    CurOp::reportState; Tidemark showed it only in the profiler), and killOp stops it."""
    errors: list[BaseException] = []

    def runaway():
        try:
            if command == "find":
                list(coll.find({"$where": LOOP, "_killme": {"$exists": False}}))
            else:
                coll.database.command("count", coll.name, query={"$where": LOOP, "_killme": {"$exists": False}})
        except BaseException as exc:  # noqa: BLE001 - asserted below
            errors.append(exc)

    thread = threading.Thread(target=runaway, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    opid = None
    while opid is None and time.monotonic() < deadline:
        for op in client.admin.command({"currentOp": 1})["inprog"]:
            if "_killme" in str(op.get("command", {})) and op.get("planSummary"):
                opid = op["opid"]
                assert op["planSummary"] == "COLLSCAN", op
        time.sleep(0.05)
    assert opid is not None, "the runaway $where never showed in currentOp with its plan"
    client.admin.command("killOp", op=opid)
    thread.join(30)
    assert not thread.is_alive()
    assert len(errors) == 1 and isinstance(errors[0], OperationFailure) and errors[0].code == 11601


@pytest.mark.slow
def test_a_memory_bomb_is_refused_and_another_client_is_unaffected(start_server):
    srv = start_server()
    hostile = srv.client(retryWrites=False, retryReads=False)
    hostile.h.c.insert_many([{"_id": i} for i in range(3)])
    with InnocentClient(srv) as innocent:
        for bomb in ("var a = []; for (;;) a.push('xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' + a.length);",
                     "var s = 'x'; for (;;) s = s + s;"):
            with pytest.raises(OperationFailure) as e:
                list(hostile.h.c.find({"$where": "function() { " + bomb + " }"}))
            assert e.value.code == 146 and "Out of memory" in str(e.value)
        assert [d["_id"] for d in hostile.h.c.find({"$where": "this._id == 1"})] == [1]
    assert not innocent.errors, innocent.errors[:1]
    assert innocent.rounds > 0
    hostile.close()
    assert srv.terminate() == 0


@pytest.mark.slow
@pytest.mark.parametrize("how", ["flag", "config"])
def test_noscripting_refuses_javascript_with_mongods_errors(start_server, tmp_path, how):
    if how == "flag":
        srv = start_server(args=("--noscripting",))
    else:
        config = tmp_path / "mongod.yaml"
        config.write_text("security:\n  javascriptEnabled: false\n")
        srv = start_server(args=("--config", str(config)))
    client = srv.client()
    client.t.c.insert_one({"_id": 1, "x": 1})
    with pytest.raises(OperationFailure) as e:
        list(client.t.c.find({"$where": "true"}))
    assert e.value.code == 6108304 and "no globalScriptEngine in $where parsing" in str(e.value)
    with pytest.raises(OperationFailure) as e:
        list(client.t.c.aggregate([{"$project": {"r": {"$function": {"body": "function() { return 1; }",
                                                                      "args": [], "lang": "js"}}}}]))
    assert e.value.code == 31264
    with pytest.raises(OperationFailure) as e:
        list(client.t.c.aggregate([{"$group": {"_id": None, "r": {"$accumulator": AVG}}}]))
    assert e.value.code == 31264
    if how == "flag":
        opts = client.admin.command("getCmdLineOpts")
        assert opts["parsed"]["security"]["javascriptEnabled"] is False
    client.close()
    assert srv.terminate() == 0
