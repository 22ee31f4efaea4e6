"""Defect 15.8: explain on a time-series collection shows the bucket filter, the index and the stages
that run. The shown bucket filter is checked by running it on ``system.buckets.<c>``: it selects
exactly the buckets the read unpacked. ``serverInfo`` names this server's host and port."""

import datetime as dt
import socket

import bson
import pytest

T0 = dt.datetime(2024, 3, 1)
pytestmark = pytest.mark.commands("aggregate", "explain", "find", "createIndexes")

FILTERS = [
    {"$or": [{"t": {"$gte": T0 + dt.timedelta(hours=2), "$lt": T0 + dt.timedelta(hours=3)}}, {"host": "h3"}]},
    {"$or": [{"host": "h1"}, {"host": "h2"}]},
    {"t": {"$gte": T0 + dt.timedelta(hours=1)}, "v": {"$gt": 50.0}},
    {"host": {"$in": ["h0", "h4"]}, "t": {"$lt": T0 + dt.timedelta(hours=2)}},
    {"$and": [{"v": {"$lte": 10.0}}, {"$or": [{"host": "h1"}, {"t": {"$gt": T0 + dt.timedelta(hours=3)}}]}]},
]


def load(client):
    client.db.create_collection("ts", timeseries={"timeField": "t", "metaField": "host"})
    docs = [{"t": T0 + dt.timedelta(hours=h, minutes=m), "host": f"h{k}", "v": float(h * 20 + m)}
            for h in range(4) for k in range(5) for m in range(0, 60, 10)]
    client.db.ts.insert_many(docs)
    return client.db.ts


def cursor_stage(explain):
    return explain["stages"][0]["$cursor"]


def check_filters(client, coll):
    buckets = client.db.system.buckets.ts
    total = buckets.count_documents({})
    for flt in FILTERS:
        explain = client.db.command("explain", {"aggregate": "ts", "pipeline": [{"$match": flt}], "cursor": {}},
                                    verbosity="executionStats")
        cursor = cursor_stage(explain)
        shown = cursor["queryPlanner"]["winningPlan"].get("filter", {})
        # compared as BSON (a NaN operand would never equal itself as a Python value)
        assert bson.encode(shown) == bson.encode(cursor["queryPlanner"]["parsedQuery"])
        selected = buckets.count_documents(shown)
        assert selected < total, (flt, shown)  # every filter here prunes
        assert cursor["executionStats"]["nReturned"] == selected, (flt, shown)
        got = sorted((d["t"], d["host"]) for d in coll.find(flt))
        assert got == sorted((d["t"], d["host"]) for d in coll.find() if _matches(d, flt))


OPS = {"$gte": lambda v, x: v >= x, "$gt": lambda v, x: v > x, "$lt": lambda v, x: v < x,
       "$lte": lambda v, x: v <= x, "$in": lambda v, x: v in x}


def _matches(doc, flt):
    for key, cond in flt.items():
        if key == "$or":
            if not any(_matches(doc, c) for c in cond):
                return False
        elif key == "$and":
            if not all(_matches(doc, c) for c in cond):
                return False
        elif isinstance(cond, dict):
            value = doc[key]
            for op, operand in cond.items():
                if not OPS[op](value, operand):
                    return False
        elif doc[key] != cond:
            return False
    return True


@pytest.mark.slow
def test_the_shown_bucket_filter_selects_exactly_the_buckets_the_read_unpacks(start_server):
    proc = start_server()
    with proc.client() as client:
        coll = load(client)
        check_filters(client, coll)
        coll.create_index([("host", 1)])
        check_filters(client, coll)


@pytest.mark.slow
def test_the_shown_index_is_the_one_used(start_server):
    proc = start_server()
    with proc.client() as client:
        coll = load(client)
        coll.create_index([("host", -1)], name="host_desc")
        explain = client.db.command("explain", {"aggregate": "ts", "pipeline": [{"$match": {"host": "h2"}}],
                                                "cursor": {}, "hint": "host_desc"}, verbosity="executionStats")
        cursor = cursor_stage(explain)
        plan = cursor["queryPlanner"]["winningPlan"]
        assert plan["stage"] == "FETCH" and plan["inputStage"]["indexName"] == "host_desc"
        assert cursor["executionStats"]["totalKeysExamined"] > 0
        assert cursor["executionStats"]["nReturned"] == 4


@pytest.mark.slow
def test_server_info_names_this_host_and_port(start_server):
    proc = start_server()
    with proc.client() as client:
        coll = load(client)
        client.db.create_collection("plain")
        for command in ({"aggregate": "ts", "pipeline": [], "cursor": {}},
                        {"aggregate": "plain", "pipeline": [], "cursor": {}},
                        {"find": "ts", "filter": {}}, {"find": "plain", "filter": {}}):
            info = client.db.command("explain", command)["serverInfo"]
            assert (info["host"], info["port"]) == (socket.gethostname(), proc.port), command
        assert coll.find().explain()["serverInfo"]["port"] == proc.port
