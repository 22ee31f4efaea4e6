"""mongod's ``notablescan`` (``--notablescan``, or the parameter, settable at start-up and at runtime):
a query with a filter that no index serves is refused by the planner, 291 NoQueryExecutionPlans "No
indexed plans available, and running with 'notablescan'" — for every command that plans one (find,
count, distinct, aggregate, update, delete, findAndModify, explain) — as is a ``$natural`` hint ("hint
$natural is not allowed, because 'notablescan' is enabled") and a tailable cursor ("Running with
'notablescan', so tailable cursors (which always do a table scan) are not allowed"). A query without a
filter, one on a ``system.*`` collection or in admin/local/config, an indexed one and a clustered
collection's scan bounded by ``_id`` still run (query_planner.cpp; QueryPlannerParams:
``isEmpty() || nss.isSystem() || nss.isOnInternalDb()``; jstests/core/notablescan.js,
noPassthrough/command_line_parsing.js and ignore_notablescan.js). Tidemark had no such parameter
(72 on setParameter, an unknown --setParameter at start-up) and scanned."""

from __future__ import annotations

import datetime

import pytest
from pymongo import CursorType
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("find", "count", "distinct", "aggregate", "update", "delete", "findAndModify",
                                  "explain", "setParameter", "getParameter")

NO_INDEX = "No indexed plans available, and running with 'notablescan'"


@pytest.fixture(scope="module")
def client(start_server_module):
    srv = start_server_module(args=("--notablescan",))
    mongo = srv.client()
    yield mongo
    mongo.close()


@pytest.fixture(scope="module")
def start_server_module(tmp_path_factory):
    from harness.server import ServerProcess

    started = []

    def start(args=()):
        base = tmp_path_factory.mktemp("notablescan")
        proc = ServerProcess(base / "db", args=args, log_path=base / "server.log")
        proc.start()
        started.append(proc)
        return proc

    yield start
    for proc in started:
        assert proc.terminate() == 0


@pytest.fixture
def db(client):
    database = client.nts
    database.c.drop()
    database.c.insert_many([{"_id": i, "a": i, "b": i % 3} for i in range(10)])
    yield database
    client.drop_database("nts")


def refused(run, reason=NO_INDEX) -> None:
    with pytest.raises(OperationFailure) as info:
        result = run()
        list(result) if not isinstance(result, dict) and hasattr(result, "__iter__") else result
    assert info.value.code == 291
    assert info.value.details["errmsg"] == f"error processing query: planner returned error :: caused by :: {reason}"


COMMANDS = {
    "find": lambda c, q: c.find(q),
    "count": lambda c, q: c.database.command("count", c.name, query=q),
    "countDocuments": lambda c, q: c.count_documents(q),
    "distinct": lambda c, q: c.distinct("a", q),
    "aggregate": lambda c, q: c.aggregate([{"$match": q}, {"$project": {"a": 1}}]),
    "update": lambda c, q: c.update_many(q, {"$set": {"x": 1}}).raw_result,
    "upsert": lambda c, q: c.update_one(q, {"$set": {"x": 1}}, upsert=True).raw_result,
    "delete": lambda c, q: c.delete_many(q).raw_result,
    "findAndModify": lambda c, q: c.find_one_and_update(q, {"$set": {"x": 1}}) or {},
    "explain": lambda c, q: c.database.command("explain", {"find": c.name, "filter": q}),
}
UNINDEXED = [{"b": 1}, {"b": {"$gt": 0}}, {"$or": [{"a": 1}, {"b": 1}]},
             {"b": {"$in": [1, 2]}, "c": {"$exists": False}}]


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_filter_no_index_serves_is_refused_by_every_command(client, db, command):
    db.c.create_index("a")
    for query in UNINDEXED:
        refused(lambda q=query: COMMANDS[command](db.c, q))
    assert not [d for d in db.c.find() if "x" in d]  # nothing was written


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_what_still_runs(client, db, command):
    db.c.create_index("a")
    COMMANDS[command](db.c, {"a": 3})  # an indexed filter
    COMMANDS[command](db.c, {"_id": 4})  # the _id index
    COMMANDS[command](db.c, {"a": 5, "b": 2})  # an index serves a part of it
    if command not in ("upsert", "findAndModify"):  # (those need a filter to say what they match)
        COMMANDS[command](db.c, {})  # no filter: a scan is what was asked for
    for other in (client.admin.nts_c, client.config.nts_c, client.local.nts_c, db["system.js"]):
        other.insert_one({"b": 1})
        COMMANDS[command](other, {"b": 1})
        other.drop()


def test_natural_hints_and_tailable_cursors(client, db):
    refused(lambda: db.c.find({"b": 1}).hint([("$natural", 1)]),
            "hint $natural is not allowed, because 'notablescan' is enabled")
    db.create_collection("capped", capped=True, size=4096)
    db.capped.insert_one({"b": 1})
    refused(lambda: db.capped.find({"b": 1}, cursor_type=CursorType.TAILABLE),
            "Running with 'notablescan', so tailable cursors (which always do a table scan) are not allowed")
    assert len(list(db.capped.find({}, cursor_type=CursorType.TAILABLE))) == 1


def test_clustered_views_and_time_series(client, db):
    db.create_collection("cl", clusteredIndex={"key": {"_id": 1}, "unique": True})
    db.cl.insert_many([{"_id": i, "a": i} for i in range(5)])
    assert [d["_id"] for d in db.cl.find({"_id": {"$gt": 2}})] == [3, 4]  # a bounded clustered scan
    refused(lambda: db.cl.find({"a": 2}))
    db.command("create", "v", viewOn="c", pipeline=[{"$match": {"a": {"$gte": 0}}}])
    refused(lambda: db.v.find({"b": 1}))
    db.create_collection("ts", timeseries={"timeField": "t"})  # (its buckets are a system collection)
    db.ts.insert_one({"t": datetime.datetime(2024, 1, 1), "b": 1})
    assert len(list(db.ts.find({"b": 1}))) == 1


def test_the_parameter_is_settable_at_runtime(client, db):
    assert client.admin.command("getParameter", 1, notablescan=1)["notablescan"] is True
    assert client.admin.command("setParameter", 1, notablescan=False)["was"] is True
    try:
        assert len(list(db.c.find({"b": 1}))) == 3
    finally:
        client.admin.command("setParameter", 1, notablescan=True)
    refused(lambda: db.c.find({"b": 1}))


def test_off_by_default(start_server_module):
    srv = start_server_module()
    mongo = srv.client()
    try:
        assert mongo.admin.command("getParameter", 1, notablescan=1)["notablescan"] is False
        mongo.t.c.insert_one({"b": 1})
        assert len(list(mongo.t.c.find({"b": 1}))) == 1
    finally:
        mongo.close()
