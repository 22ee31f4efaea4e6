"""Short reads run inline on the event loop (``CommandContext.run_read``, server/README.md "The
request path"): a find or aggregate (without $out/$merge) first runs on the loop's thread under
``tidemarkInlineReadMicros`` of its CPU time, with no hand-off to the pool; past the budget its next
interruption check moves it, and the same work runs again from its start in the pool.

What these tests hold, against a real server and pymongo: a short read is answered with no pool job
(serverStatus ``tidemark.scheduler``: ``inlineRuns``, no new run-token grant); a long read moves
(``inlineMoves``) and answers exactly what the pool alone answers, its cursor continuing with getMore;
a read moved part-way through its first batch (a tiny budget) answers the same too; a kind that moved
runs inline again once a run in the pool measured it short; a client's ping is
answered while another client's long read runs; maxTimeMS stops a read inline and a moved one; killOp
stops a moved one; a read failing inline fails with the pool's code and message; an index access is
counted once when a read moves; the profiler reports an inline read as a pooled one; a $merge never
runs inline (it writes); regex and JavaScript reads move before their GIL-free calls and answer."""

from __future__ import annotations

import contextlib

import pytest
from harness.listed import ListedRun
from pymongo.errors import ExecutionTimeout, OperationFailure

pytestmark = [pytest.mark.commands("find", "aggregate", "getMore", "serverStatus", "setParameter", "killOp",
                                   "currentOp", "ping", "profile")]

DEFAULT_BUDGET = 1000
RUNAWAY = {"$expr": {"$lt": [{"$reduce": {"input": {"$range": [0, 3_000_000]}, "initialValue": 0,
                                          "in": {"$add": ["$$value", "$$this"]}}}, 0]}}
# A read of some tens of milliseconds: well past the default budget, short for a test.
LONG_PIPELINE = [{"$group": {"_id": {"$mod": ["$v", 97]}, "n": {"$sum": 1}, "s": {"$sum": "$w"}}},
                 {"$sort": {"_id": 1}}]


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    from harness.server import ServerProcess

    path = tmp_path_factory.mktemp("inline_reads")
    proc = ServerProcess(path / "db", log_path=path / "server.log").start()
    with proc.client() as client:
        db = client.il
        db.reg.insert_many([{"_id": i, "v": i, "w": i % 7, "s": f"name{i}"} for i in range(300)])
        db.reg.create_index("w")
        db.big.insert_many([{"_id": i, "v": i, "w": i % 13} for i in range(30_000)])
        db.big.create_index("w")
        db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
        import datetime as dt

        t0 = dt.datetime(2024, 1, 1)
        db.ts.insert_many([{"t": t0 + dt.timedelta(seconds=i), "m": i % 3, "x": i} for i in range(200)])
    yield proc
    proc.kill()


def _scheduler(client) -> dict:
    return client.admin.command("serverStatus")["tidemark"]["scheduler"]


@contextlib.contextmanager
def budget(client, micros: int):
    client.admin.command("setParameter", 1, tidemarkInlineReadMicros=micros)
    try:
        yield
    finally:
        client.admin.command("setParameter", 1, tidemarkInlineReadMicros=DEFAULT_BUDGET)


def _all(client, command: str, name: str, **kwargs) -> list:
    """Every document of a find/aggregate, getMore after getMore."""
    db = client.il
    reply = db.command(command, name, **kwargs)
    docs = list(reply["cursor"]["firstBatch"])
    cursor_id = reply["cursor"]["id"]
    while cursor_id:
        more = db.command("getMore", cursor_id, collection=name)
        docs += more["cursor"]["nextBatch"]
        cursor_id = more["cursor"]["id"]
    return docs


# A budget no short read outruns on a loaded test machine (the default, 1 ms, holds sg-1-1-1).
ROOMY = 200_000


def test_a_short_read_runs_inline_with_no_hand_off_to_the_pool(srv):
    with srv.client() as client, budget(client, ROOMY):
        first = _scheduler(client)
        second = _scheduler(client)  # what serverStatus itself costs is taken off
        for i in range(5):
            assert client.il.command("find", "reg", filter={"v": i})["cursor"]["firstBatch"] == [
                {"_id": i, "v": i, "w": i % 7, "s": f"name{i}"}]
            agg = client.il.command("aggregate", "reg", pipeline=[{"$match": {"w": 3}}, {"$count": "n"}], cursor={})
            assert agg["cursor"]["firstBatch"] == [{"n": 43}]
            ts = client.il.command("aggregate", "ts", pipeline=[{"$match": {"m": 1}}, {"$group": {"_id": None, "n": {"$sum": 1}}}],
                                   cursor={})
            assert ts["cursor"]["firstBatch"] == [{"_id": None, "n": 67}]
        third = _scheduler(client)
        own = {key: second[key] - first[key] for key in ("grants", "inlineRuns")}
        assert third["inlineRuns"] - second["inlineRuns"] - own["inlineRuns"] == 15
        assert third["grants"] - second["grants"] - own["grants"] == 0  # no pool job
        assert third["inlineMoves"] == second["inlineMoves"]


def test_a_long_read_moves_to_the_pool_and_answers_what_the_pool_answers(srv):
    with srv.client() as client:
        with budget(client, 0):
            expected = _all(client, "aggregate", "big", pipeline=LONG_PIPELINE, cursor={"batchSize": 10})
        assert len(expected) == 97 and sum(d["n"] for d in expected) == 30_000
        before = _scheduler(client)
        got = _all(client, "aggregate", "big", pipeline=LONG_PIPELINE, cursor={"batchSize": 10})
        after = _scheduler(client)
        assert got == expected
        assert after["inlineMoves"] == before["inlineMoves"] + 1
        assert after["grants"] > before["grants"]  # the pool ran it (and the getMores)
        # the kind that moved skips the inline try next time (no budget spent in vain)
        assert _all(client, "aggregate", "big", pipeline=LONG_PIPELINE, cursor={"batchSize": 10}) == expected
        assert _scheduler(client)["inlineSkips"] == after["inlineSkips"] + 1


def test_a_short_kind_whose_read_moved_runs_inline_again_once_the_pool_measured_it_short(srv):
    """The first read of a kind is often slow (cold: its shape's plan made, pages faulted in) and moves;
    the pool measures its next run, short, and the one after runs inline (counting moves sent the next
    64 of its kind to the pool)."""
    flt = {"v": {"$gte": 3, "$lt": 9}, "s": {"$ne": "moved-then-short"}}  # a kind of its own
    expected = [{"_id": i, "v": i, "w": i % 7, "s": f"name{i}"} for i in range(3, 9)]
    with srv.client() as client:
        with budget(client, 1):  # 1 µs: the read moves, and its pool run is long for that budget
            assert client.il.command("find", "reg", filter=flt)["cursor"]["firstBatch"] == expected
        with budget(client, ROOMY):
            first = _scheduler(client)
            second = _scheduler(client)  # what serverStatus itself costs is taken off
            own = {key: second[key] - first[key] for key in ("grants", "inlineRuns", "inlineSkips")}
            assert client.il.command("find", "reg", filter=flt)["cursor"]["firstBatch"] == expected
            third = _scheduler(client)
            assert client.il.command("find", "reg", filter=flt)["cursor"]["firstBatch"] == expected
            fourth = _scheduler(client)
        # still known long: straight to the pool, which measures it short ...
        assert third["inlineSkips"] - second["inlineSkips"] - own["inlineSkips"] == 1
        assert third["grants"] - second["grants"] - own["grants"] >= 1
        # ... so the next one runs inline, with no pool job
        assert fourth["inlineRuns"] - third["inlineRuns"] - own["inlineRuns"] == 1
        assert fourth["grants"] - third["grants"] - own["grants"] == 0
        assert fourth["inlineSkips"] - third["inlineSkips"] - own["inlineSkips"] == 0


@pytest.mark.parametrize("command, kwargs", [
    ("find", {"filter": {"v": {"$gte": 10}}, "sort": {"v": -1}, "batchSize": 7}),
    ("find", {"filter": {"w": 2}, "projection": {"s": 1}, "batchSize": 3}),  # the index on w
    ("aggregate", {"pipeline": [{"$match": {"v": {"$lt": 250}}}, {"$project": {"_id": 0, "k": {"$multiply": ["$v", 2]}}}],
                   "cursor": {"batchSize": 5}}),
    ("aggregate", {"pipeline": [{"$sort": {"s": 1}}, {"$limit": 120}], "cursor": {"batchSize": 50}}),
])
def test_a_read_moved_part_way_through_its_first_batch_answers_the_same(srv, command, kwargs):
    with srv.client() as client:
        with budget(client, ROOMY):
            inline_before = _scheduler(client)["inlineRuns"]
            expected = _all(client, command, "reg", **kwargs)  # inline
            assert _scheduler(client)["inlineRuns"] > inline_before
        with budget(client, 1):  # every check past the first microsecond moves it
            before = _scheduler(client)
            got = _all(client, command, "reg", **kwargs)
            after = _scheduler(client)
        assert got == expected
        assert after["inlineMoves"] + after["inlineSkips"] > before["inlineMoves"] + before["inlineSkips"]
        with budget(client, 0):
            assert _all(client, command, "reg", **kwargs) == expected


def test_a_read_moved_while_filling_its_first_batch_answers_the_same(srv):
    kwargs = {"filter": {"$expr": {"$gt": [{"$sqrt": "$v"}, -2]}}, "batchSize": 20_000}
    with srv.client() as client:
        with budget(client, 0):
            expected = _all(client, "find", "big", **kwargs)
        before = _scheduler(client)
        got = _all(client, "find", "big", **kwargs)
        after = _scheduler(client)
        assert after["inlineMoves"] == before["inlineMoves"] + 1
        assert got == expected and len(got) == 30_000


def test_a_ping_is_answered_while_a_long_read_runs_and_kill_op_stops_it(srv):
    with srv.client() as client, srv.client() as other:
        moves = _scheduler(client)["inlineMoves"] + _scheduler(client)["inlineSkips"]
        run = ListedRun(lambda: other.il.command("find", "reg", filter=RUNAWAY, comment="inline-kill-me"),
                        client, "inline-kill-me")
        thread, outcome, ops = run.thread, run.outcome, run.ops
        assert ops, "the read was never listed by currentOp"
        for _ in range(5):  # the loop answers another client while the read runs
            assert client.admin.command("ping")["ok"] == 1.0
        assert thread.is_alive()
        now = _scheduler(client)
        assert now["inlineMoves"] + now["inlineSkips"] > moves  # it runs in the pool
        client.admin.command("killOp", op=ops[0]["opid"])
        thread.join(30)
        assert not thread.is_alive()
        assert isinstance(outcome[0], OperationFailure) and outcome[0].code == 11601


def test_max_time_ms_stops_a_read_running_inline(srv):
    with srv.client() as client:
        with budget(client, 60_000_000):  # the runaway read stays on the loop until its deadline
            before = _scheduler(client)
            with pytest.raises(ExecutionTimeout) as err:
                client.il.command("find", "reg", filter=RUNAWAY, maxTimeMS=30)
            after = _scheduler(client)
        assert err.value.code == 50
        assert after["inlineMoves"] == before["inlineMoves"]
        assert after["grants"] - before["grants"] <= 1  # (serverStatus's own, if any): no pool job


def test_max_time_ms_stops_a_moved_read(srv):
    with srv.client() as client:
        before = _scheduler(client)
        with pytest.raises(ExecutionTimeout) as err:
            client.il.command("aggregate", "reg", pipeline=[{"$match": RUNAWAY}], cursor={}, maxTimeMS=150)
        after = _scheduler(client)
        assert err.value.code == 50
        assert after["inlineMoves"] + after["inlineSkips"] > before["inlineMoves"] + before["inlineSkips"]


FAILING = [  # (command, arguments, whether it fails in the read rather than in the parse before it)
    ("find", {"filter": {"$expr": {"$eq": [{"$divide": [1, "$v"]}, 7]}}}, True),  # at the first document
    ("find", {"filter": {"v": {"$gt": 250}}, "projection": {"x": {"$toInt": "$s"}}}, True),  # part-way
    ("find", {"hint": {"nosuch": 1}}, True),  # opening the read
    ("find", {"filter": {"$expr": {"$nosuchop": 1}}}, False),
    ("aggregate", {"pipeline": [{"$project": {"x": {"$divide": ["$v", {"$subtract": ["$v", 53]}]}}}], "cursor": {}},
     True),
    ("aggregate", {"pipeline": [{"$group": {"_id": "$w", "x": {"$push": "$$NOSUCH"}}}], "cursor": {}}, True),
    ("aggregate", {"pipeline": [{"$lookup": {"from": "ts", "localField": "v", "foreignField": "x", "as": "j"}},
                                {"$project": {"y": {"$toDate": "$s"}}}], "cursor": {}}, True),
]


@pytest.mark.parametrize("command, kwargs, in_read", FAILING)
def test_a_read_failing_inline_fails_as_in_the_pool(srv, command, kwargs, in_read):
    def failure() -> tuple[int, str]:
        with pytest.raises(OperationFailure) as err:
            client.il.command(command, "reg", **kwargs)
        return err.value.code, err.value.details["errmsg"]

    with srv.client() as client:
        with budget(client, ROOMY):
            before = _scheduler(client)
            inline = failure()
            after = _scheduler(client)
        assert after["inlineRuns"] == before["inlineRuns"] + in_read  # it failed inline
        assert after["inlineMoves"] == before["inlineMoves"]
        with budget(client, 0):
            pooled = failure()
        with budget(client, 1):
            moved = failure()
        assert inline == pooled == moved
        open_cursors = client.admin.command("serverStatus")["metrics"]["cursor"]["open"]["total"]
        assert open_cursors == 0


def _index_ops(client, name: str, coll: str = "reg") -> int:
    stats = client.il[coll].aggregate([{"$indexStats": {}}])
    return next(int(s["accesses"]["ops"]) for s in stats if s["name"] == name)


def test_an_index_access_is_counted_once_whether_the_read_ran_inline_or_moved(srv):
    with srv.client() as client:
        start = _index_ops(client, "w_1")
        with budget(client, ROOMY):
            client.il.command("find", "reg", filter={"w": 4})  # inline
        assert _index_ops(client, "w_1") == start + 1
        with budget(client, 1):
            before = _scheduler(client)
            client.il.command("find", "reg", filter={"w": 5})  # opened inline, moved, opened again
            client.il.command("aggregate", "reg", pipeline=[{"$match": {"w": 6}}], cursor={})
            after = _scheduler(client)
        assert after["inlineMoves"] + after["inlineSkips"] >= before["inlineMoves"] + before["inlineSkips"] + 2
        assert _index_ops(client, "w_1") == start + 3
        # moved after its plan was made (the index access recorded inline), part-way through its scan
        start = _index_ops(client, "w_1", "big")
        before = _scheduler(client)
        docs = _all(client, "find", "big", filter={"w": {"$gte": 0}}, hint="w_1", batchSize=30_000)
        after = _scheduler(client)
        assert len(docs) == 30_000
        assert after["inlineMoves"] == before["inlineMoves"] + 1
        assert _index_ops(client, "w_1", "big") == start + 1


def test_the_profiler_reports_an_inline_read_as_a_pooled_one(srv):
    def profiled(comment: str) -> dict:
        client.il.command("aggregate", "reg", pipeline=[{"$match": {"w": 1, "v": {"$gt": 20}}}, {"$sort": {"v": 1}}],
                          cursor={"batchSize": 4}, comment=comment)
        entry = client.il.system.profile.find_one({"command.comment": comment})
        assert entry is not None
        return {key: entry.get(key) for key in ("planSummary", "keysExamined", "docsExamined", "nreturned",
                                                  "op", "ns")}

    with srv.client() as client:
        client.il.command("profile", 2)
        try:
            with budget(client, ROOMY):
                inline = profiled("profiled-inline")
            with budget(client, 0):
                pooled = profiled("profiled-pooled")
            with budget(client, 1):
                moved = profiled("profiled-moved")
        finally:
            client.il.command("profile", 0)
        assert inline == pooled == moved
        assert inline["planSummary"] == "IXSCAN { w: 1 }" and inline["nreturned"] == 4


def test_a_merge_never_runs_inline(srv):
    with srv.client() as client:
        client.il.drop_collection("merged")
        with budget(client, 1):  # a restarted $merge would insert twice: duplicate keys (11000)
            before = _scheduler(client)
            client.il.command("aggregate", "reg", pipeline=[
                {"$match": {"v": {"$lt": 50}}},
                {"$merge": {"into": "merged", "whenMatched": "fail", "whenNotMatched": "insert"}}], cursor={})
            after = _scheduler(client)
        assert client.il.merged.count_documents({}) == 50
        assert (after["inlineRuns"], after["inlineMoves"]) == (before["inlineRuns"], before["inlineMoves"])


@pytest.mark.parametrize("flt, n", [
    ({"s": {"$regex": "^name2[0-9]$"}}, 10),
    ({"$where": "this.v % 50 == 1"}, 6),
])
def test_regex_and_javascript_reads_move_before_their_gil_free_calls(srv, flt, n):
    with srv.client() as client:
        before = _scheduler(client)
        docs = client.il.command("find", "reg", filter=flt)["cursor"]["firstBatch"]
        after = _scheduler(client)
        assert len(docs) == n
        assert after["inlineMoves"] + after["inlineSkips"] == before["inlineMoves"] + before["inlineSkips"] + 1


def _nested(levels: int, leaf: dict, wrap) -> dict:
    node = leaf
    for _ in range(levels):
        node = wrap(node)
    return node


# Filters and pipelines nested within two levels of the deepest a request may carry (MAX_BSON_DEPTH,
# 200: each wrap below is two BSON levels, a document and an array or two documents, and the command
# is two levels above the filter): the deepest recursion of parse, compile and match a client can
# cause. The loop's own stack starts deeper than a pool thread's, so the same read inline must still
# answer what it answers in the pool (here: documents, not 15 Overflow).
DEEPEST = 97
DEEP_READS = {
    "and": ("find", {"filter": _nested(DEEPEST, {"v": {"$gte": 5}}, lambda n: {"$and": [n]})}),
    "or": ("find", {"filter": _nested(DEEPEST, {"w": 3}, lambda n: {"$or": [n, {"v": -1}]})}),
    "nor": ("find", {"filter": _nested(DEEPEST, {"w": 3}, lambda n: {"$nor": [n]})}),
    "elemMatch": ("find", {"filter": {"v": _nested(DEEPEST - 1, {"$gte": 0},
                                                   lambda n: {"$elemMatch": {"$not": n}})}}),
    "expr": ("aggregate", {"pipeline": [{"$match": {"$expr": {"$gt": [
        _nested(DEEPEST - 2, "$v", lambda n: {"$add": [n, 1]}), 200]}}}], "cursor": {}}),
    "project": ("aggregate", {"pipeline": [{"$project": {"x": _nested(
        DEEPEST - 2, "$w", lambda n: {"$cond": [{"$gt": ["$v", 1000]}, 0, n]})}}], "cursor": {}}),
    "ts_and": ("find", {"filter": _nested(DEEPEST, {"x": {"$lt": 50}}, lambda n: {"$and": [n, {"m": 1}]})}),
}


@pytest.mark.parametrize("kind", sorted(DEEP_READS))
def test_the_deepest_request_answers_inline_what_it_answers_in_the_pool(srv, kind):
    command, kwargs = DEEP_READS[kind]
    name = "ts" if kind.startswith("ts_") else "reg"

    def outcome(client) -> object:
        try:
            return sorted(map(repr, _all(client, command, name, **kwargs)))
        except OperationFailure as exc:
            return ("error", exc.code)

    with srv.client() as client:
        with budget(client, 0):
            pooled = outcome(client)
        with budget(client, 10_000_000):
            before = _scheduler(client)
            inline = outcome(client)
            after = _scheduler(client)
    assert after["inlineRuns"] > before["inlineRuns"]  # (it ran on the loop, not moved)
    assert after["inlineMoves"] == before["inlineMoves"]
    assert isinstance(pooled, list)  # the deepest request is served, not refused
    assert inline == pooled
