"""The read details only an explain shows (the IXSCAN node over a buckets index, the column filter's
terms) are worked out when an explain shows them, not on every read: the explain still shows them
exactly, in the same place, and a plain read of the same shape answers the same documents."""

from __future__ import annotations

import datetime as dt

import pytest

T0 = dt.datetime(2024, 3, 1)

pytestmark = pytest.mark.commands("explain", "aggregate")


@pytest.fixture
def hosts(db):
    db.create_collection("c", timeseries={"timeField": "t", "metaField": "m"})
    db.c.create_index([("m.h", 1), ("t", -1)])
    db.c.insert_many([{"t": T0 + dt.timedelta(seconds=10 * i), "m": {"h": h}, "v": float(i % 97)}
                      for i in range(2 * 360) for h in ("a", "b")])
    db.c.delete_many({"_id": "none"})  # closes open buckets: the index holds them
    return db.c


def _pipeline():
    window = {"$gte": T0 + dt.timedelta(minutes=30), "$lt": T0 + dt.timedelta(minutes=90)}
    return [{"$match": {"t": window, "m.h": {"$in": ["a"]}}},
            {"$group": {"_id": {"$dateTrunc": {"date": "$t", "unit": "minute"}}, "max_v": {"$max": "$v"}}},
            {"$sort": {"_id": 1}}]


def test_explain_shows_the_ixscan_and_the_column_filter(db, hosts):
    reply = db.command("explain", {"aggregate": "c", "pipeline": _pipeline(), "cursor": {}},
                       verbosity="executionStats")
    plan = reply["stages"][0]["$cursor"]["queryPlanner"]["winningPlan"]
    ixscan = plan["inputStage"]
    assert plan["stage"] == "FETCH" and ixscan["stage"] == "IXSCAN"
    assert ixscan["keyPattern"] == {"meta.h": 1, "control.max.t": -1, "control.min.t": -1}
    assert ixscan["indexBounds"]["meta.h"] == ['["a", "a"]']
    details = plan["timeseries"]
    assert details["ixscan"] == ixscan  # Tidemark's read details: the same node, rendered
    assert list(details).index("ixscan") == list(details).index("indexKey") + 1
    assert details["columnFilter"] == ["t $gte Date(1709253000000)", "t $lt Date(1709256600000)"]
    assert details["columnFilterComplete"] is True


def test_a_read_of_the_same_shape_answers_the_same(db, hosts):
    got = list(hosts.aggregate(_pipeline()))
    assert [d["_id"] for d in got] == [T0 + dt.timedelta(minutes=m) for m in range(30, 90)]
    assert got[0]["max_v"] == max(float(i % 97) for i in range(180, 186))
