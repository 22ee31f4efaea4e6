"""Defect 15.1: a time-series insert whose commit fails is not applied, and every acknowledged insert
survives a SIGKILL after any number of failed commits.

Commit failures are injected by storage (``failStorageCommitsForTest``: the next N group commits fail
with ENOSPC or EIO before LMDB commits), on both insert paths: the batch path (documents that share a
layout, parsed column-wise) and the single-document path (a measurement that fits no batch layout).
"""

import datetime as dt

import pytest
from pymongo.errors import PyMongoError

T0 = dt.datetime(2024, 3, 1)
pytestmark = [pytest.mark.commands("insert", "find", "setParameter")]


def batch(first, n, host="h1"):
    """n measurements sharing one layout (the batch path)."""
    return [{"_id": f"b{first + i}", "t": T0 + dt.timedelta(seconds=first + i), "host": host, "v": float(first + i)}
            for i in range(n)]


def single(i, host="h1"):
    """A measurement with a nested field and an array: no batch layout fits it (single-document path)."""
    return {"_id": f"s{i}", "t": T0 + dt.timedelta(seconds=i), "host": host, "v": float(i),
            "tags": {"rack": i % 3}, "samples": [i, i + 1]}


def fail_next(client, times, kind="ENOSPC"):
    client.admin.command("setParameter", 1, failStorageCommitsForTest={"times": times, "errno": kind})


def ids(coll):
    return sorted(d["_id"] for d in coll.find({}, {"_id": 1}))


def expect_failure(fn, code):
    with pytest.raises(PyMongoError) as info:
        fn()
    assert getattr(info.value, "code", None) == code, info.value
    return info.value


@pytest.mark.slow
@pytest.mark.parametrize("kind, code", [("ENOSPC", 14031), ("EIO", 8)])
def test_failed_commits_apply_nothing_and_later_acknowledged_inserts_survive_sigkill(start_server, kind, code):
    proc = start_server(params={"enableTestCommands": 1})
    with proc.client(retryWrites=False) as client:
        client.db.create_collection("ts", timeseries={"timeField": "t", "metaField": "host"})
        coll = client.db.ts
        acked = []
        coll.insert_many(batch(0, 50))  # an open bucket with durable rows
        coll.insert_one(single(0))
        acked += [f"b{i}" for i in range(50)] + ["s0"]

        fail_next(client, 3, kind)
        error = expect_failure(lambda: coll.insert_many(batch(50, 30)), code)  # batch path, same bucket
        assert "InternalError" not in str(error)
        expect_failure(lambda: coll.insert_one(single(1)), code)  # single-document path
        expect_failure(lambda: coll.insert_many(batch(100, 10, host="h2")), code)  # a new series' first bucket
        # not visible, neither through the view nor through the buckets collection
        assert ids(coll) == sorted(acked)
        unpacked = [m for b in client.db.system.buckets.ts.find() for m in b["data"]["_id"].values()]
        assert sorted(unpacked) == sorted(acked)

        # the next inserts are acknowledged, extend the same buckets, and reuse the failed positions
        coll.insert_many(batch(80, 20))
        coll.insert_one(single(2))
        coll.insert_many(batch(200, 5, host="h2"))
        acked += [f"b{i}" for i in range(80, 100)] + ["s2"] + [f"b{i}" for i in range(200, 205)]
        assert ids(coll) == sorted(acked)
    proc.kill()
    proc.start()
    with proc.client() as client:
        assert ids(client.db.ts) == sorted(acked)
        found = {d["_id"]: d for d in client.db.ts.find()}
        assert found["s2"]["tags"] == {"rack": 2} and found["s2"]["samples"] == [2, 3]
        assert found["b99"]["v"] == 99.0


@pytest.mark.slow
def test_a_failed_commit_is_all_or_nothing_for_an_insert_spanning_many_buckets(start_server):
    proc = start_server(params={"enableTestCommands": 1})
    with proc.client(retryWrites=False) as client:
        client.db.create_collection("ts", timeseries={"timeField": "t", "metaField": "host"})
        coll = client.db.ts
        docs = [{"t": T0 + dt.timedelta(hours=h, seconds=s), "host": f"h{s % 7}", "v": float(s)}
                for h in range(3) for s in range(40)]
        fail_next(client, 1)
        expect_failure(lambda: coll.insert_many(docs), 14031)
        assert coll.count_documents({}) == 0
        assert client.db.system.buckets.ts.count_documents({}) == 0
        coll.insert_many(docs)
        assert coll.count_documents({}) == len(docs)
    proc.kill()
    proc.start()
    with proc.client() as client:
        assert client.db.ts.count_documents({}) == len(docs)


@pytest.mark.slow
def test_many_failed_commits_in_a_row_between_acknowledged_inserts_then_sigkill(start_server):
    proc = start_server(params={"enableTestCommands": 1})
    acked = []
    with proc.client(retryWrites=False) as client:
        client.db.create_collection("ts", timeseries={"timeField": "t", "metaField": "host"})
        coll = client.db.ts
        for round_ in range(6):
            base = round_ * 100
            coll.insert_many(batch(base, 10))
            acked += [f"b{base + i}" for i in range(10)]
            fail_next(client, 2)
            expect_failure(lambda base=base: coll.insert_many(batch(base + 10, 10)), 14031)
            expect_failure(lambda base=base: coll.insert_one(single(base + 50)), 14031)
            coll.insert_one(single(base + 60))
            acked.append(f"s{base + 60}")
        assert ids(coll) == sorted(acked)
    proc.kill()
    proc.start()
    with proc.client() as client:
        assert ids(client.db.ts) == sorted(acked)
