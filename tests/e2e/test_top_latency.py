"""``top`` in the shape mongotop reads (totals -> namespace -> total/readLock/writeLock/... {time, count}),
$collStats latencyStats, serverStatus opLatencies, and the real host:port in $collStats, $indexStats
and explain."""

from __future__ import annotations

import socket

import pytest
from harness.server import raw_command
from pymongo.errors import OperationFailure

USAGE_KEYS = {"total", "readLock", "writeLock", "queries", "getmore", "insert", "update", "remove", "commands"}


def _top(client, ns):
    totals = client.admin.command("top")["totals"]
    assert totals["note"] == "round trip time in microseconds"
    return totals.get(ns)


@pytest.mark.commands("top", "insert", "find", "update", "delete", "count")
def test_top_counts_and_times_operations_per_collection_like_mongod(db, client):
    ns = f"{db.name}.c"
    db.c.insert_many([{"i": i} for i in range(3)])
    before = _top(client, ns)
    assert set(before) == USAGE_KEYS
    db.c.insert_one({"i": 3})
    list(db.c.find())
    db.c.update_one({"i": 0}, {"$set": {"u": 1}})
    db.c.delete_one({"i": 1})
    db.c.count_documents({})
    after = _top(client, ns)
    delta = {k: after[k]["count"] - before[k]["count"] for k in USAGE_KEYS}
    assert delta["insert"] == 1 and delta["queries"] == 1 and delta["update"] == 1 and delta["remove"] == 1
    assert delta["commands"] >= 1  # the count (an aggregate for count_documents)
    assert delta["writeLock"] == 3 and delta["readLock"] >= 2 and delta["total"] == sum(
        delta[k] for k in ("queries", "getmore", "insert", "update", "remove", "commands"))
    for key in USAGE_KEYS:
        assert isinstance(after[key]["time"], int) and after[key]["time"] >= before[key]["time"]
    # mongotop's view: total time split into read and write lock time
    assert after["total"]["time"] == after["readLock"]["time"] + after["writeLock"]["time"]


@pytest.mark.commands("top")
def test_top_is_admin_only(db):
    with pytest.raises(OperationFailure) as e:
        db.command("top")
    assert e.value.code == 13


@pytest.mark.commands("aggregate", "find", "insert")
def test_coll_stats_latency_stats_report_this_collections_operations(db):
    db.c.insert_many([{"i": i} for i in range(5)])
    list(db.c.find())
    list(db.c.find({"i": 1}))
    doc = next(db.c.aggregate([{"$collStats": {"latencyStats": {"histograms": True}}}]))
    assert list(doc)[:4] == ["ns", "host", "localTime", "latencyStats"]
    stats = doc["latencyStats"]
    assert set(stats) == {"reads", "writes", "commands", "transactions"}
    assert stats["reads"]["ops"] >= 2 and stats["writes"]["ops"] == 1 and stats["reads"]["latency"] > 0
    assert sum(b["count"] for b in stats["reads"]["histogram"]) == stats["reads"]["ops"]
    plain = next(db.c.aggregate([{"$collStats": {"latencyStats": {}}}]))["latencyStats"]
    assert "histogram" not in plain["reads"]


@pytest.mark.commands("aggregate", "explain", "serverStatus")
def test_host_and_port_are_the_real_ones(db, server):
    db.c.insert_one({"a": 1})
    db.c.create_index("a")
    host = f"{socket.gethostname()}:{server.port}"
    assert next(db.c.aggregate([{"$collStats": {"count": {}}}]))["host"] == host
    assert {ix["host"] for ix in db.c.aggregate([{"$indexStats": {}}])} == {host}
    info = db.command("explain", {"find": "c", "filter": {"a": 1}})["serverInfo"]
    assert (info["host"], info["port"]) == (socket.gethostname(), server.port)
    assert db.client.admin.command("serverStatus")["host"] == host


@pytest.mark.commands("serverStatus")
def test_server_status_op_latencies(client):
    before = client.admin.command("serverStatus")["opLatencies"]
    client.admin.command("ping")
    after = client.admin.command("serverStatus")["opLatencies"]
    assert set(after) == {"reads", "writes", "commands", "transactions"}
    assert after["commands"]["ops"] > before["commands"]["ops"]


@pytest.mark.commands("aggregate", "create", "insert")
def test_time_series_coll_stats_carry_latency_stats_and_the_real_host(db, server):
    import datetime

    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    db.ts.insert_one({"t": datetime.datetime(2024, 1, 1), "m": 1, "v": 1})
    doc = next(db.ts.aggregate([{"$collStats": {"latencyStats": {}, "storageStats": {}}}]))
    assert doc["host"] == f"{socket.gethostname()}:{server.port}"
    assert doc["latencyStats"]["writes"]["ops"] == 1 and "storageStats" in doc


@pytest.mark.commands("top", "drop", "insert")
def test_a_dropped_collection_leaves_top(db, client):
    db.gone.insert_one({})
    assert _top(client, f"{db.name}.gone") is not None
    db.gone.drop()
    assert _top(client, f"{db.name}.gone") is None


def test_a_dropped_database_leaves_top(client):
    """mongod's dropDatabase drops each collection, and each drop leaves Top (Tidemark kept them)."""
    other = client.top_dropped_db
    other.a.insert_one({})
    other.b.insert_one({})
    assert _top(client, "top_dropped_db.a") is not None
    client.drop_database("top_dropped_db")
    assert _top(client, "top_dropped_db.a") is None and _top(client, "top_dropped_db.b") is None


INVALID_NAMES = ["a\x00b", "", "$x", ".a", "a$b", "x" * 300]


@pytest.mark.commands("top", "find", "insert", "count", "aggregate", "distinct")
@pytest.mark.parametrize("command", ["find", "insert", "count", "aggregate", "distinct"])
@pytest.mark.parametrize("name", INVALID_NAMES, ids=["nul", "empty", "dollar", "dot", "inner_dollar", "long"])
def test_a_command_refused_for_its_namespace_leaves_top_answering(db, client, command, name):
    """A command on a collection name mongod refuses (73) never touches that namespace, so top gets no
    entry for it; one with a NUL byte used to break every later top with 1 InternalError."""
    extra = {"insert": {"documents": [{}]}, "aggregate": {"pipeline": [], "cursor": {}},
             "distinct": {"key": "a"}}.get(command, {})
    with pytest.raises(OperationFailure) as refused:
        db.command({command: name, **extra})
    assert refused.value.code == 73
    totals = client.admin.command("top")["totals"]
    assert f"{db.name}.{name}" not in totals


@pytest.mark.commands("top", "find")
@pytest.mark.parametrize("name", ["a\x00b", "a.b", "a b", "a/b", "x" * 64])  # ('$' is a command's: dollar test)
def test_a_database_name_refused_leaves_top_answering(server, client, name):
    # (sent without a driver: pymongo refuses these names itself)
    reply = raw_command(server.port, {"find": "c", "$db": name})
    assert reply["ok"] == 0 and reply["code"] == 73
    assert all(not ns.startswith(f"{name}.") for ns in client.admin.command("top")["totals"])


def _latency_ops(db, name: str) -> dict:
    # (the $collStats reading them is one more read: the callers compare reads with that in mind)
    stats = next(db[name].aggregate([{"$collStats": {"latencyStats": {}}}]))["latencyStats"]
    return {kind: stats[kind]["ops"] for kind in ("reads", "writes", "commands")}


@pytest.mark.commands("killCursors", "explain", "dataSize", "aggregate", "top")
@pytest.mark.parametrize("operation", ["killCursors", "explain_find", "explain_count", "explain_update",
                                       "dataSize", "dataSize_other_db"])
def test_commands_naming_a_collection_their_own_way_count_on_it(db, client, operation):
    """jstests/core/diagnostics/operation_latency_histogram.js: killCursors (a cursor of the collection),
    explain (of a command on it) and dataSize (its full namespace) each add one to the collection's
    commands histogram and its top total, as mongod's Top records them (killCursors unlocked, without a
    usage counter of its own; the others read-locked commands). Tidemark looked for the collection in
    the command's first value only: it missed the explained command's and took dataSize's namespace
    for a collection name."""
    db.lat.insert_many([{"_id": i, "x": i} for i in range(5)])
    ns = f"{db.name}.lat"
    run = {
        "killCursors": lambda: db.command("killCursors", "lat", cursors=[cursor_id]),
        "explain_find": lambda: db.command("explain", {"find": "lat", "filter": {"x": 1}}),
        "explain_count": lambda: db.command("explain", {"count": "lat"}, verbosity="queryPlanner"),
        "explain_update": lambda: db.command("explain", {"update": "lat", "updates": [{"q": {}, "u": {"y": 1}}]}),
        "dataSize": lambda: db.command("dataSize", ns),
        "dataSize_other_db": lambda: client.admin.command("dataSize", ns),
    }[operation]
    cursor_id = db.command("find", "lat", batchSize=1)["cursor"]["id"]
    before, top_before = _latency_ops(db, "lat"), _top(client, ns)
    run()
    after, top_after = _latency_ops(db, "lat"), _top(client, ns)
    assert (after["reads"] - before["reads"], after["writes"] - before["writes"],
            after["commands"] - before["commands"]) == (1, 0, 1)
    # (the $collStats between the two tops is an aggregate: one more total and one more command)
    assert top_after["total"]["count"] - top_before["total"]["count"] == 2
    expected_commands = 1 if operation == "killCursors" else 2
    assert top_after["commands"]["count"] - top_before["commands"]["count"] == expected_commands
    totals = client.admin.command("top")["totals"]
    assert f"{db.name}.{ns}" not in totals and f"admin.{ns}" not in totals


@pytest.mark.commands("serverStatus")
def test_a_command_that_does_not_exist_counts_in_op_latencies_commands(server, client):
    """mongod adds every request's time to the server-wide latency of its kind, a name that is no
    command (59 CommandNotFound) under ``commands`` (jstests/noPassthrough/
    global_operation_latency_histogram.js: "Test non-command"); Tidemark left it out."""
    names = ["IHopeNobodyEverMakesThisACommand", "findd", "Find", "x" * 200, "$cmd", "a.b", "ping "]
    before = client.admin.command("serverStatus")["opLatencies"]
    for name in names:
        reply = raw_command(server.port, {name: 1, "$db": "test"})
        assert reply["ok"] == 0 and reply["code"] == 59
    after = client.admin.command("serverStatus")["opLatencies"]
    # (at least: a driver's heartbeat may land in between)
    assert after["commands"]["ops"] - before["commands"]["ops"] >= len(names) + 1
    assert after["commands"]["latency"] >= before["commands"]["latency"]
    assert after["reads"]["ops"] == before["reads"]["ops"] and after["writes"]["ops"] == before["writes"]["ops"]
