"""Lastpoint while the collection is written: its per-bucket facts are brought forward through the
records each commit changed (issue 23.2), so after any write (a new series, a newer point, an older
one out of order, buckets deleted by meta, the collection dropped and created again, a restart) the
fast path answers exactly what the generic sort + group answers (forced by a leading ``$skip: 0``),
and writes never make it read every bucket again (explain's ``factsRebuilt`` / ``factsBucketsRead``)."""

import datetime as dt

import bson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.commands("aggregate", "explain", "insert", "delete", "drop")

T0 = dt.datetime(2016, 1, 1)
LASTPOINT = [{"$sort": {"tags.hostname": 1, "time": -1}},
             {"$group": {"_id": "$tags.hostname", "time": {"$first": "$time"}, "v": {"$first": "$v"}}}]


def _rows(hosts=4, hours=3, value=0.0):
    """One point a minute per host: hour-long buckets, ``hours`` of them per host."""
    return [{"time": T0 + dt.timedelta(minutes=m), "tags": {"hostname": f"host_{h}"}, "v": value + h * 1000 + m}
            for m in range(hours * 60) for h in range(hosts)]


def _create(db, name="cpu", rows=None):
    db.create_collection(name, timeseries={"timeField": "time", "metaField": "tags", "granularity": "seconds"})
    db[name].insert_many(rows if rows is not None else _rows(), ordered=False)
    return db[name]


def _answer(coll):
    """The fast path's answer, checked against the generic path's (both sorted by group key)."""
    fast = sorted(coll.aggregate(LASTPOINT), key=lambda d: d["_id"])
    generic = sorted(coll.aggregate([{"$skip": 0}, *LASTPOINT]), key=lambda d: d["_id"])
    assert [bson.encode(d) for d in fast] == [bson.encode(d) for d in generic]
    return {d["_id"]: (d["time"], d["v"]) for d in fast}


def _facts_stats(coll):
    explained = coll.database.command("explain", {"aggregate": coll.name, "pipeline": LASTPOINT, "cursor": {}},
                                      verbosity="executionStats")
    plan = explained["stages"][0]["$cursor"]["queryPlanner"]["winningPlan"]["timeseries"]
    assert plan["lastpoint"] is True
    return plan["factsRebuilt"], plan["factsBucketsRead"]


@pytest.fixture(scope="module")
def server_proc(tmp_path_factory):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from harness import ServerProcess

    base = tmp_path_factory.mktemp("lastpoint-writes")
    proc = ServerProcess(base / "db", log_path=base / "tidemark.log").start()
    yield proc
    proc.terminate()


@pytest.mark.slow
def test_lastpoint_answers_like_the_generic_path_after_each_kind_of_write(server_proc):
    with server_proc.client() as client:
        client.drop_database("lpw")
        _create(client["lpw"])
    server_proc.restart()  # every bucket stored: the writes below change stored records
    with server_proc.client() as client:
        coll = client["lpw"]["cpu"]
        latest = T0 + dt.timedelta(minutes=179)
        assert _answer(coll) == {f"host_{h}": (latest, h * 1000 + 179.0) for h in range(4)}

        coll.insert_one({"time": T0 + dt.timedelta(minutes=30), "tags": {"hostname": "host_9"}, "v": -9.0})
        assert _answer(coll)["host_9"] == (T0 + dt.timedelta(minutes=30), -9.0)  # a new series

        newer = T0 + dt.timedelta(hours=7)  # past its bucket's span: a new bucket, the old one written
        coll.insert_one({"time": newer, "tags": {"hostname": "host_0"}, "v": -1.0})
        assert _answer(coll)["host_0"] == (newer, -1.0)

        older = T0 - dt.timedelta(days=1)  # out of order: a bucket of its own, not the latest
        coll.insert_one({"time": older, "tags": {"hostname": "host_1"}, "v": -2.0})
        coll.insert_one({"time": older, "tags": {"hostname": "host_8"}, "v": -8.0})
        answer = _answer(coll)
        assert answer["host_1"] == (latest, 1179.0) and answer["host_8"] == (older, -8.0)

        coll.delete_many({"tags.hostname": "host_2"})  # whole buckets deleted
        coll.delete_many({"tags.hostname": "host_0", "time": {"$gte": newer}})  # its latest point
        answer = _answer(coll)
        assert "host_2" not in answer and answer["host_0"] == (latest, 179.0)

    server_proc.restart()  # the facts are derived again from what is stored
    with server_proc.client() as client:
        coll = client["lpw"]["cpu"]
        assert _answer(coll) == answer
        coll.drop()
        coll = _create(client["lpw"], rows=_rows(hosts=2, hours=1, value=0.5))  # same name, other buckets
        assert _answer(coll) == {f"host_{h}": (T0 + dt.timedelta(minutes=59), h * 1000 + 59.5) for h in range(2)}
        coll.drop()
        assert list(coll.aggregate(LASTPOINT)) == []


@pytest.mark.slow
def test_writes_bring_the_facts_forward_without_reading_every_bucket(server_proc):
    with server_proc.client() as client:
        client.drop_database("lpf")
        _create(client["lpf"])
    server_proc.restart()
    with server_proc.client() as client:
        db = client["lpf"]
        coll = db["cpu"]
        stored = db["system.buckets.cpu"].count_documents({})
        assert stored == 12  # 4 hosts x 3 hour-long buckets, all stored after the restart
        assert _facts_stats(coll) == (True, stored)  # the first read after a restart: every bucket
        assert _facts_stats(coll) == (False, 0)  # nothing written since

        coll.insert_one({"time": T0 + dt.timedelta(minutes=179, seconds=30), "tags": {"hostname": "host_3"},
                         "v": -3.0})
        assert _facts_stats(coll) == (False, 0)  # an append to a bucket held in memory: no record written

        host_2_buckets = db["system.buckets.cpu"].count_documents({"meta.hostname": "host_2"})
        coll.delete_many({"tags.hostname": "host_2"})
        rebuilt, read = _facts_stats(coll)
        # the deleted records, and host_3's bucket if the delete wrote it out of memory first: not all
        assert rebuilt is False and host_2_buckets <= read <= host_2_buckets + 1 < stored
        assert "host_2" not in _answer(coll)

        coll.drop()
        coll = _create(db, rows=_rows(hosts=1, hours=2))
        assert _facts_stats(coll)[0] is True  # another collection under the same name: its own facts


ops = st.lists(st.one_of(
    st.tuples(st.just("insert"), st.integers(0, 5), st.integers(-600, 600)),
    st.tuples(st.just("delete"), st.integers(0, 5), st.just(0)),
    st.tuples(st.just("read"), st.just(0), st.just(0)),
), min_size=1, max_size=12)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=ops)
def test_lastpoint_after_generated_writes_answers_like_the_generic_path(db, steps):
    """Points for six series at minutes around the data (newer, older, inside it), deletes by meta,
    and reads in between (so the facts are brought forward over one write or several)."""
    db.drop_collection("g")
    coll = _create(db, "g", rows=_rows(hosts=3, hours=2))
    _answer(coll)
    for i, (op, host, minute) in enumerate(steps):
        if op == "insert":
            coll.insert_one({"time": T0 + dt.timedelta(minutes=minute, seconds=i), "tags": {"hostname": f"host_{host}"},
                             "v": float(-i)})
        elif op == "delete":
            coll.delete_many({"tags.hostname": f"host_{host}"})
        else:
            _answer(coll)
    _answer(coll)
