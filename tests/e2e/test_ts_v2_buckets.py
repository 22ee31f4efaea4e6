"""Defect 15.9: MongoDB 7.0 compressed buckets (``control.version`` 2, data columns as BSONColumn BinData
subtype 7) inserted into ``system.buckets.<c>`` — what mongorestore does with a 7.0 mongodump — are
accepted, decoded, and served through the view like the buckets they came from."""

import datetime as dt
import random
import sys
from pathlib import Path

import pytest
from bson.objectid import ObjectId
from pymongo.errors import BulkWriteError

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "timeseries"))
from harness.timeseries import Engine  # noqa: E402
from test_bucket_compression import TIME, mongod_bucket  # noqa: E402

from tidemark.timeseries.bucket_compression import compress_bucket  # noqa: E402

T0 = dt.datetime(2024, 3, 1)
pytestmark = pytest.mark.commands("create", "insert", "find", "aggregate")


def test_a_bucket_written_by_mongod_is_served_through_the_view(db):
    db.create_collection("c", timeseries={"timeField": "t", "metaField": "m"})
    db.system.buckets.c.insert_one(mongod_bucket())
    found = list(db.c.find({}, sort=[("_id", 1)]))
    assert found == [{"t": TIME, "m": 0, "_id": ObjectId("65a6eba7e6d2e848e08c3750"), "a": 0.0},
                     {"t": TIME, "m": 0, "_id": ObjectId("65a6eba7e6d2e848e08c3751"), "a": 1.0}]
    assert [d["a"] for d in db.c.find({"a": {"$gt": 0.5}})] == [1.0]
    (stored,) = list(db.system.buckets.c.find())
    assert stored["control"]["version"] == 1 and "count" not in stored["control"]
    assert stored["data"]["a"] == {"0": 0.0, "1": 1.0}


def _measurements(n=3000, seed=4):
    rng = random.Random(seed)
    out = []
    for i in range(n):
        doc = {"_id": i, "t": T0 + dt.timedelta(seconds=7 * i, milliseconds=rng.randrange(1000)),
               "m": {"host": f"h{i % 5}"}, "cpu": rng.random() * 100, "n": rng.randrange(-5, 5)}
        if i % 11:
            doc["s"] = rng.choice(["a", "bb", "ccc"])
        if i % 13 == 0:
            doc["o"] = {"k": [i, None]}
        out.append(doc)
    return out


@pytest.mark.slow
def test_restored_v2_buckets_answer_every_query_like_the_original_measurements(db):
    measurements = _measurements()
    engine = Engine()
    engine.put_many(measurements)
    v1 = engine.documents()
    v2 = [compress_bucket(doc, "t") for doc in v1]  # the form a 7.0 mongodump holds
    assert all(doc["control"]["version"] == 2 and doc["data"]["t"].subtype == 7 for doc in v2)
    db.create_collection("c", timeseries={"timeField": "t", "metaField": "m"})
    db.system.buckets.c.insert_many(v2)
    db.create_collection("plain")
    db.plain.insert_many(measurements)  # the oracle
    for flt in ({}, {"m.host": "h2"}, {"t": {"$gte": T0 + dt.timedelta(hours=2), "$lt": T0 + dt.timedelta(hours=3)}},
                {"cpu": {"$gt": 50}, "n": {"$lt": 0}}, {"s": {"$exists": False}}, {"o.k": 13}):
        got = sorted(db.c.find(flt), key=lambda d: d["_id"])
        want = sorted(db.plain.find(flt), key=lambda d: d["_id"])
        assert got == want, flt
    pipeline = [{"$match": {"t": {"$lt": T0 + dt.timedelta(hours=4)}}},
                {"$group": {"_id": {"h": "$m.host", "t": {"$dateTrunc": {"date": "$t", "unit": "hour"}}},
                            "max": {"$max": "$cpu"}, "n": {"$sum": 1}}}, {"$sort": {"_id": 1}}]
    assert list(db.c.aggregate(pipeline)) == list(db.plain.aggregate(pipeline))
    stored = list(db.system.buckets.c.find())
    assert len(stored) == len(v1) and all(b["control"]["version"] == 1 for b in stored)


def test_a_malformed_compressed_bucket_is_refused_and_nothing_is_stored(db):
    db.create_collection("c", timeseries={"timeField": "t", "metaField": "m"})
    bad = mongod_bucket()
    bad["data"]["a"] = bad["data"]["t"].__class__(b"\x01\x00\x00", 7)  # a truncated column
    with pytest.raises(BulkWriteError) as info:
        db.system.buckets.c.insert_many([bad])
    assert info.value.details["nInserted"] == 0
    assert db.system.buckets.c.count_documents({}) == 0 and db.c.count_documents({}) == 0
