"""Hashed indexes through pymongo: mongod's hash function, equality served by the index, arrays and
uniqueness refused like mongod."""

from __future__ import annotations

import pytest
from bson.int64 import Int64
from pymongo.errors import OperationFailure, WriteError

pytestmark = pytest.mark.commands("createIndexes", "find", "aggregate", "insert", "explain")


@pytest.fixture
def hashed(db):
    db.h.insert_many([{"_id": i, "k": i % 7, "s": f"v{i % 4}"} for i in range(70)] + [{"_id": "nok"}])
    assert db.h.create_index([("k", "hashed")]) == "k_hashed"
    return db.h


def test_equality_and_in_use_the_hashed_index(hashed):
    plan = hashed.find({"k": 3}).explain()["queryPlanner"]["winningPlan"]
    assert plan["inputStage"]["stage"] == "IXSCAN" and plan["inputStage"]["indexName"] == "k_hashed"
    assert sorted(d["_id"] for d in hashed.find({"k": 3})) == [i for i in range(70) if i % 7 == 3]
    assert sorted(d["_id"] for d in hashed.find({"k": {"$in": [1, 2.0]}})) == \
        [i for i in range(70) if i % 7 in (1, 2)]
    assert [d["_id"] for d in hashed.find({"k": None})] == ["nok"]  # missing hashes like null


def test_ranges_do_not_use_the_hashed_index_and_stay_correct(hashed):
    plan = hashed.find({"k": {"$gt": 4}}).explain()["queryPlanner"]["winningPlan"]
    assert plan["stage"] == "COLLSCAN"
    assert sorted(d["_id"] for d in hashed.find({"k": {"$gt": 4}})) == [i for i in range(70) if i % 7 > 4]


def test_hash_values_are_mongods(db):
    # mongod's start-up self check: BSONElementHasher::hash64({check: 42}) == -944302157085130861
    out = db.command("aggregate", 1, pipeline=[{"$documents": [{"v": 42}, {"v": 42.9}, {"v": Int64(42)}]},
                                               {"$project": {"_id": 0, "h": {"$toHashedIndexKey": "$v"}}}],
                     cursor={})
    assert [d["h"] for d in out["cursor"]["firstBatch"]] == [-944302157085130861] * 3


def test_arrays_and_unique_are_refused(hashed, db):
    with pytest.raises(WriteError) as e:
        hashed.insert_one({"k": [1, 2]})
    assert e.value.code == 16766
    with pytest.raises(OperationFailure) as e:
        db.u.create_index([("k", "hashed")], unique=True)
    assert e.value.code == 67
    with pytest.raises(OperationFailure) as e:
        db.u.create_index([("a", "hashed"), ("b", "hashed")])
    assert e.value.code == 31303


def test_updates_keep_the_hashed_index_current(hashed):
    hashed.update_many({"k": 3}, {"$set": {"k": 100}})
    assert hashed.count_documents({"k": 3}) == 0
    assert hashed.count_documents({"k": 100}) == 10
    hashed.delete_many({"k": 100})
    assert list(hashed.find({"k": 100})) == []


def test_a_hinted_hashed_index_still_answers_ranges_correctly(hashed):
    got = sorted(d["_id"] for d in hashed.find({"k": {"$gte": 5}}).hint("k_hashed"))
    assert got == [i for i in range(70) if i % 7 >= 5]
    assert sorted(d["_id"] for d in hashed.find({"k": 2}).hint([("k", "hashed")])) == \
        [i for i in range(70) if i % 7 == 2]
