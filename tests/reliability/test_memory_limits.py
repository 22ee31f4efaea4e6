"""Aggregations cannot build multi-GB values: strings stop at 16 MB (16493), built arrays at 64 MB
(13548), a $lookup's matches at 100 MB per document (4568), and each blocking stage at its memory
limit (292 with allowDiskUse false, or absent under allowDiskUseByDefault false; otherwise $sort spills to disk under the dbpath and still answers
correctly, $group spills its groups' partial states and merges them, $bucketAuto spills sorted runs, $setWindowFields
sorts on disk) — with the server's memory staying
far from what the unbounded query would have taken."""

from __future__ import annotations

import os

import psutil
import pytest
from pymongo.errors import OperationFailure

MB = 1 << 20


def _code(coll, pipeline, **kwargs) -> int:
    with pytest.raises(OperationFailure) as err:
        list(coll.aggregate(pipeline, **kwargs))
    return err.value.code


@pytest.mark.slow
@pytest.mark.commands("aggregate", "insert")
def test_blowups_fail_fast_with_mongods_codes(start_server):
    srv = start_server()
    client = srv.client()
    db = client.mem
    db.one.insert_one({"_id": 1, "s": "ab"})
    db.big.insert_many([{"_id": i, "pad": "x" * MB} for i in range(10)])
    process = psutil.Process(srv.process.pid)
    before = process.memory_info().rss

    doubling = [{"$project": {"s": {"$reduce": {"input": {"$range": [0, 40]}, "initialValue": "$s",
                                                "in": {"$concat": ["$$value", "$$value"]}}}}}]
    assert _code(db.one, doubling) == 16493  # 2^41 bytes unbounded
    replace = [{"$project": {"s": {"$replaceAll": {"input": {"$concat": ["$s"] * 1000}, "find": "a",
                                                   "replacement": "x" * 40000}}}}]
    assert _code(db.one, replace) == 16493
    arrays = [{"$project": {"a": {"$reduce": {"input": {"$range": [0, 40]}, "initialValue": ["$s"],
                                              "in": {"$concatArrays": ["$$value", "$$value"]}}}}}]
    assert _code(db.one, arrays) == 13548
    repeated = [{"$lookup": {"from": "big", "pipeline": [], "as": "b"}},
                {"$project": {"m": {"$map": {"input": {"$range": [0, 1000]}, "in": "$b"}}}}]
    assert _code(db.one, repeated) == 13548
    nested = [{"$lookup": {"from": "big", "as": "x", "pipeline": [
        {"$lookup": {"from": "big", "as": "y", "pipeline": [{"$lookup": {"from": "big", "as": "z", "pipeline": []}}]}}]}}]
    assert _code(db.one, nested) == 4568  # 10 x 10 x 10 MB per document unbounded

    grown = process.memory_info().rss - before
    assert grown < 512 * MB, f"the server grew by {grown / MB:.0f} MB"
    assert client.admin.command("ping")["ok"] == 1.0
    client.close()


@pytest.mark.slow
@pytest.mark.commands("aggregate", "find", "insert")
def test_blocking_stages_memory_limit_and_spilling_sort(start_server):
    srv = start_server(params={"internalQueryMaxBlockingSortMemoryUsageBytes": 200_000,
                               "internalDocumentSourceGroupMaxMemoryBytes": 200_000,
                               "internalDocumentSourceBucketAutoMaxMemoryBytes": 200_000})
    client = srv.client()
    coll = client.mem.docs
    coll.insert_many([{"_id": i, "k": (i * 7919) % 1000, "pad": "p" * 500} for i in range(2000)])  # ~1 MB
    for pipeline in ([{"$sort": {"k": 1}}], [{"$group": {"_id": "$_id", "p": {"$push": "$pad"}}}],
                     [{"$bucketAuto": {"groupBy": "$k", "buckets": 3}}],
                     [{"$setWindowFields": {"sortBy": {"k": 1}, "output": {"n": {"$documentNumber": {}}}}}]):
        assert _code(coll, pipeline, allowDiskUse=False) in (292, 5414201), pipeline
    spilled_groups = coll.aggregate([{"$group": {"_id": "$_id", "p": {"$push": "$pad"}}}], allowDiskUse=True)
    assert sorted((d["_id"], d["p"]) for d in spilled_groups) == [(i, ["p" * 500]) for i in range(2000)]
    numbered = coll.aggregate([{"$setWindowFields": {"sortBy": {"k": 1}, "output": {"n": {"$documentNumber": {}}}}},
                               {"$project": {"pad": 0}}], allowDiskUse=True)  # sorted on disk, as mongod's $sort
    assert [(d["_id"], d["n"]) for d in numbered] == [
        (i, n) for n, i in enumerate(sorted(range(2000), key=lambda i: ((i * 7919) % 1000, i)), 1)]
    buckets = coll.aggregate([{"$bucketAuto": {"groupBy": "$k", "buckets": 4, "output": {"n": {"$sum": 1}}}}],
                             allowDiskUse=True)
    assert [d["n"] for d in buckets] == [500] * 4
    expected = sorted(range(2000), key=lambda i: ((i * 7919) % 1000, i))
    spilled = [d["_id"] for d in coll.aggregate([{"$sort": {"k": 1}}, {"$project": {"pad": 0}}], allowDiskUse=True)]
    assert spilled == expected
    found = [d["_id"] for d in coll.find({}, {"pad": 0}, sort=[("k", 1)], allow_disk_use=True)]
    assert found == expected
    # a read that does not say spills as mongod 6.0+'s (allowDiskUseByDefault, true unless set false)
    assert [d["_id"] for d in coll.aggregate([{"$sort": {"k": 1}}, {"$project": {"pad": 0}}])] == expected
    assert [d["_id"] for d in coll.find({}, {"pad": 0}, sort=[("k", 1)])] == expected
    client.admin.command("setParameter", 1, allowDiskUseByDefault=False)
    assert _code(coll, [{"$sort": {"k": 1}}]) == 292
    with pytest.raises(OperationFailure) as refused:
        list(coll.find({}, sort=[("k", 1)]))
    assert refused.value.code == 292
    client.admin.command("setParameter", 1, allowDiskUseByDefault=True)
    assert os.listdir(os.path.join(srv.dbpath, "_tmp")) == []  # spilled runs are gone
    client.close()
