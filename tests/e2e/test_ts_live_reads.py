"""Reads over live column-wise buckets and over remembered per-snapshot state.

Raw insert batches of one layout keep their buckets column-wise in memory (``ColumnarBucket``); the
lastpoint read and the columnar ``$group`` take those buckets as arrays. Each pipeline must answer
exactly what the generic path answers (forced by a leading/inner ``$skip: 0``) and what a regular
collection holding the same measurements answers (an oracle sharing nothing with the time-series
reads), with the buckets live, after a restart (stored), and after the collection changed under the
remembered lastpoint facts (updates, deletes, new measurements, drop + re-create, collMod)."""

import datetime as dt
import random

import bson
import pytest
from harness import raw_command

T0 = dt.datetime(2016, 1, 1)
HOSTS = 7
pytestmark = pytest.mark.commands("insert", "aggregate", "update", "delete", "drop", "collMod")


def _batches(seed, ticks=900, per_batch=70):
    """TSBS-shaped rows in raw batches of one layout (constant string and null fields, int32 and bool
    columns); host_5 repeats its last time in its last row (two rows at the latest time, a tie)."""
    rng = random.Random(seed)
    rows = []
    for tick in range(ticks):
        for host in range(HOSTS):
            rows.append({"measurement": "cpu", "time": T0 + dt.timedelta(seconds=10 * tick),
                         "usage_user": float(rng.randrange(100)), "usage_system": float(rng.randrange(100)),
                         "cores": rng.randrange(1, 64), "busy": rng.random() < 0.5, "note": None,
                         "tags": {"hostname": f"host_{host}", "rack": str(host % 3)}})
    last = dict(rows[-2])  # host_5's last row, again at the same time with other values
    last["usage_user"], last["cores"] = 1234.0, 99
    rows.append(last)
    return [rows[i:i + per_batch] for i in range(0, len(rows), per_batch)]


def _insert(port, coll, batches, db="lr"):
    for batch in batches:
        reply = raw_command(port, {"insert": coll, "ordered": False, "$db": db}, sequences={"documents": batch})
        assert reply.get("ok") == 1.0 and reply.get("n") == len(batch), reply


LASTPOINT = [{"$sort": {"tags.hostname": 1, "time": -1}},
             {"$group": {"_id": "$tags.hostname", "time": {"$first": "$time"},
                         "rack": {"$first": "$tags.rack"},
                         **{f: {"$first": f"${f}"} for f in ("usage_user", "usage_system", "cores", "busy", "note",
                                                             "measurement")}}}]


def _window(start_min, minutes):
    return {"time": {"$gte": T0 + dt.timedelta(minutes=start_min), "$lt": T0 + dt.timedelta(minutes=start_min + minutes)}}


def _double_groupby(match, **accumulators):
    return [{"$match": match},
            {"$group": {"_id": {"time": {"$dateTrunc": {"date": "$time", "unit": "hour"}}, "hostname": "$tags.hostname"},
                        **accumulators}},
            {"$sort": {"_id.time": 1, "_id.hostname": 1}}]


GROUPS = {
    "double-groupby": _double_groupby(_window(20, 120), avg_usage_user={"$avg": "$usage_user"}),
    "all-accumulators": _double_groupby(_window(0, 200), s={"$sum": "$usage_system"}, mx={"$max": "$usage_user"},
                                        mn={"$min": "$usage_system"}, f={"$first": "$usage_user"},
                                        la={"$last": "$usage_system"}, n={"$count": {}}, t={"$max": "$time"}),
    "value-filter": _double_groupby({**_window(10, 100), "usage_user": {"$gt": 50.0}}, a={"$avg": "$usage_system"}),
    "int-column": _double_groupby(_window(30, 60), c={"$sum": "$cores"}, a={"$avg": "$cores"}),
    "by-minute-newest": [{"$match": {"time": {"$lt": T0 + dt.timedelta(minutes=140)}}},
                         {"$group": {"_id": {"$dateTrunc": {"date": "$time", "unit": "minute"}},
                                     "m": {"$max": "$usage_user"}}},
                         {"$sort": {"_id": -1}}, {"$limit": 5}],
}


def _generic(pipeline):
    at = next(i for i, s in enumerate(pipeline) if "$group" in s or "$sort" in s)
    return pipeline[:at] + [{"$skip": 0}] + pipeline[at:]


def _encoded(docs):
    return [bson.encode(d) for d in docs]


def _answers(db, pipeline, sort_key=None):
    fast = list(db.cpu.aggregate(pipeline))
    generic = list(db.cpu.aggregate(_generic(pipeline)))
    oracle = list(db.regular.aggregate(pipeline))
    if sort_key is not None:
        fast, generic, oracle = (sorted(x, key=sort_key) for x in (fast, generic, oracle))
    return fast, generic, oracle


def _by_id(doc):
    return bson.encode({"k": doc["_id"]})


@pytest.fixture(scope="module")
def server_proc(tmp_path_factory):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from harness import ServerProcess

    base = tmp_path_factory.mktemp("livereads")
    proc = ServerProcess(base / "db", log_path=base / "tidemark.log").start()
    with proc.client() as client:
        db = client["lr"]
        db.create_collection("cpu", timeseries={"timeField": "time", "metaField": "tags", "granularity": "seconds"})
        batches = _batches(5)
        _insert(proc.port, "cpu", batches)
        _insert(proc.port, "regular", batches)
    yield proc
    proc.terminate()


def _check_lastpoint(db):
    fast, generic, oracle = _answers(db, LASTPOINT, _by_id)
    assert len(fast) == HOSTS
    assert _encoded(fast) == _encoded(generic) == _encoded(oracle)
    assert fast[0]["rack"] == "0"
    tie = next(d for d in fast if d["_id"] == "host_5")
    if tie["time"] == T0 + dt.timedelta(seconds=10 * 899):  # the first of the two rows at that time
        assert tie["usage_user"] != 1234.0 and type(tie["cores"]) is int
    assert type(tie["busy"]) is bool and tie["note"] is None and tie["measurement"] == "cpu"
    assert _encoded(list(db.cpu.aggregate(LASTPOINT))) == _encoded(fast)  # remembered facts: same answer


def _check_group(db, name):
    pipeline = GROUPS[name]
    fast, generic, oracle = _answers(db, pipeline)
    assert fast
    assert _encoded(fast) == _encoded(generic), name
    # the regular collection may sum in another order: groups, types and values (within rounding) equal
    assert [d["_id"] for d in fast] == [d["_id"] for d in oracle]
    for a, b in zip(fast, oracle, strict=True):
        assert {k: type(v) for k, v in a.items()} == {k: type(v) for k, v in b.items()}
        for k, v in a.items():
            assert v == (pytest.approx(b[k], rel=1e-12) if isinstance(v, float) else b[k])
    assert _encoded(list(db.cpu.aggregate(pipeline))) == _encoded(fast)  # remembered parts: same answer


@pytest.mark.slow
def test_reads_over_live_column_wise_buckets_answer_like_generic_and_regular(server_proc):
    with server_proc.client() as client:
        db = client["lr"]
        assert client.admin.command("serverStatus")["bucketCatalog"]["numOpenBuckets"] >= HOSTS
        _check_lastpoint(db)
        for name in sorted(GROUPS):
            _check_group(db, name)
        # the live buckets grow: what lastpoint derived from their earlier rows must not be reused
        more = [{"measurement": "cpu", "time": T0 + dt.timedelta(seconds=10 * 900), "usage_user": float(h),
                 "usage_system": 50.0, "cores": h, "busy": False, "note": None,
                 "tags": {"hostname": f"host_{h}", "rack": str(h % 3)}} for h in range(HOSTS)]
        _insert(server_proc.port, "cpu", [more])
        _insert(server_proc.port, "regular", [more])
        latest = {d["_id"]: d for d in _answers(db, LASTPOINT, _by_id)[0]}
        _check_lastpoint(db)
        assert latest["host_4"]["cores"] == 4 and latest["host_4"]["time"] == T0 + dt.timedelta(seconds=9000)


@pytest.mark.slow
def test_reads_over_stored_buckets_answer_like_generic_and_regular(server_proc):
    server_proc.restart()  # a restart closes every bucket: all stored
    with server_proc.client() as client:
        db = client["lr"]
        # (the section is absent until an insert after the restart)
        assert client.admin.command("serverStatus").get("bucketCatalog", {}).get("numOpenBuckets", 0) == 0
        for _ in range(3):  # later times from remembered facts and parts (kept from a bucket's second read)
            _check_lastpoint(db)
            for name in sorted(GROUPS):
                _check_group(db, name)


def _both_changed(db, change):
    change(db.cpu)
    change(db.regular)


def _lastpoint_matches(db):
    fast, generic, oracle = _answers(db, LASTPOINT, _by_id)
    assert _encoded(fast) == _encoded(generic) == _encoded(oracle)
    return {d["_id"]: d for d in fast}


@pytest.mark.slow
def test_lastpoint_facts_remembered_per_snapshot_follow_every_change(server_proc):
    """The stored-bucket facts are kept per storage snapshot: any write makes the next read derive
    them again, so updates, deletes, new measurements, collMod and drop + re-create all show."""
    server_proc.restart()  # every bucket stored: lastpoint answers from the remembered facts
    latest = T0 + dt.timedelta(seconds=10 * 899)
    with server_proc.client() as client:
        db = client["lr"]
        before = _lastpoint_matches(db)
        _lastpoint_matches(db)  # remembered
        _both_changed(db, lambda c: c.update_many({"tags.hostname": "host_1"}, {"$set": {"tags.rack": "r9"}}))
        after = _lastpoint_matches(db)
        assert before["host_1"]["rack"] != "r9" and after["host_1"]["rack"] == "r9"
        _both_changed(db, lambda c: c.delete_many({"tags.hostname": "host_2"}))
        after = _lastpoint_matches(db)
        assert "host_2" in before and "host_2" not in after
        db.command("collMod", "cpu", expireAfterSeconds=10**9)
        _lastpoint_matches(db)
        later = [{"measurement": "cpu", "time": latest + dt.timedelta(minutes=1), "usage_user": 5.0,
                  "usage_system": 6.0, "cores": 7, "busy": True, "note": None,
                  "tags": {"hostname": "host_3", "rack": "0"}}]
        _insert(server_proc.port, "cpu", [later])
        _insert(server_proc.port, "regular", [later])
        after = _lastpoint_matches(db)
        assert after["host_3"]["usage_user"] == 5.0
        db.drop_collection("cpu")
        db.drop_collection("regular")
        db.create_collection("cpu", timeseries={"timeField": "time", "metaField": "tags", "granularity": "seconds"})
        batches = _batches(6, ticks=40)
        _insert(server_proc.port, "cpu", batches)
        _insert(server_proc.port, "regular", batches)
        server_proc.restart()
    with server_proc.client() as client:
        after = _lastpoint_matches(client["lr"])
        assert after["host_0"]["time"] == T0 + dt.timedelta(seconds=10 * 39)
