"""The newest-first read ($group by $dateTrunc of the time -> $sort {_id: -1} -> $limit) under a time
bound finds buckets that start before 1901-12-13: their ``_id`` seconds wrap into the lower half of the
key space, among the keys of 2036 (the scan used to start at the bound's key and miss them; found by
bench.differential)."""

import datetime as dt

import pytest
from bson import ObjectId

pytestmark = pytest.mark.commands("aggregate", "insert")

DOCS = [{"_id": 0, "t": dt.datetime(1900, 1, 1), "v": 1.0},
        {"_id": 1, "t": dt.datetime(1969, 12, 31, 23, 59, 59), "v": 2.0},
        {"_id": 2, "t": dt.datetime(2024, 3, 1, 0, 5), "v": 3.0},
        {"_id": 3, "t": dt.datetime(2024, 3, 1, 9), "v": 4.0}]


EPOCH = dt.datetime(1970, 1, 1)


def _bucket(doc: dict, meta: bool, serial: int) -> dict:
    """A stored v1 bucket holding ``doc`` (written to system.buckets directly: not in memory)."""
    start = doc["t"].replace(second=0)
    seconds = int((start - EPOCH).total_seconds()) % 2**32
    bucket = {"_id": ObjectId(seconds.to_bytes(4, "big") + bytes(5) + serial.to_bytes(3, "big")),
              "control": {"version": 1, "min": {"_id": doc["_id"], "t": start, "v": doc["v"]},
                          "max": {"_id": doc["_id"], "t": doc["t"], "v": doc["v"]}},
              "data": {"_id": {"0": doc["_id"]}, "t": {"0": doc["t"]}, "v": {"0": doc["v"]}}}
    if meta:
        bucket["meta"] = "a"
    return bucket


@pytest.mark.parametrize("meta", [True, False])
def test_newest_groups_include_buckets_before_1901(db, meta):
    db.create_collection("ts", timeseries={"timeField": "t", **({"metaField": "m"} if meta else {})})
    db["system.buckets.ts"].insert_many([_bucket(d, meta, i) for i, d in enumerate(DOCS)])
    db.regular.insert_many(DOCS)
    pipeline = [{"$match": {"t": {"$lt": dt.datetime(2024, 3, 1, 7)}}},
                {"$group": {"_id": {"$dateTrunc": {"date": "$t", "unit": "day"}}, "v": {"$max": "$v"}}},
                {"$sort": {"_id": -1}}, {"$limit": 5}]
    expected = list(db.regular.aggregate(pipeline))
    assert [d["_id"].year for d in expected] == [2024, 1969, 1900]
    assert list(db.ts.aggregate(pipeline)) == expected
    explain = db.command("explain", {"aggregate": "ts", "pipeline": pipeline, "cursor": {}})
    assert "newestFirst" in str(explain)  # the newest-first read answered


def test_newest_groups_under_a_time_bound_read_no_bucket_after_the_bound(db):
    """The buckets before 1901 are looked for above the bound only when the newest groups did not
    stop the read: here the newest of the 20 hourly buckets under the bound decide (the read settles
    its groups at each new start), none of the 28 after it is read."""
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    docs = [{"_id": h, "t": dt.datetime(2024, 3, 1) + dt.timedelta(hours=h, minutes=5), "v": float(h)}
            for h in range(48)]
    db["system.buckets.ts"].insert_many([_bucket(d, True, i) for i, d in enumerate(docs)])
    db.regular.insert_many(docs)
    pipeline = [{"$match": {"t": {"$lt": dt.datetime(2024, 3, 1, 20)}}},
                {"$group": {"_id": {"$dateTrunc": {"date": "$t", "unit": "minute"}}, "v": {"$max": "$v"}}},
                {"$sort": {"_id": -1}}, {"$limit": 5}]
    assert list(db.ts.aggregate(pipeline)) == list(db.regular.aggregate(pipeline))
    explained = db.command("explain", {"aggregate": "ts", "pipeline": pipeline, "cursor": {}},
                           verbosity="executionStats")
    info = explained["stages"][0]["$cursor"]["queryPlanner"]["winningPlan"]["timeseries"]
    assert info["newestFirst"] == 5
    assert info["bucketsScanned"] <= 16  # (read down from the top of the key space: 36)


def test_newest_groups_decided_by_the_oldest_buckets_read_no_bucket_after_the_bound(db):
    """The read reaches the oldest bucket under the bound without a stop (every bucket there may hold
    one of the newest groups), but the groups found already outrank any bucket before 1901: the 38
    buckets after the bound are not read for them."""
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    docs = [{"_id": m, "t": dt.datetime(2024, 3, 1, 0, m), "v": float(m)} for m in range(10)]
    docs += [{"_id": 100 + h, "t": dt.datetime(2024, 3, 1, 0, 5) + dt.timedelta(hours=h), "v": float(h)}
             for h in range(1, 39)]
    db["system.buckets.ts"].insert_many([_bucket(d, True, i) for i, d in enumerate(docs)])
    db.regular.insert_many(docs)
    pipeline = [{"$match": {"t": {"$lt": dt.datetime(2024, 3, 1, 0, 30)}}},
                {"$group": {"_id": {"$dateTrunc": {"date": "$t", "unit": "minute"}}, "v": {"$max": "$v"}}},
                {"$sort": {"_id": -1}}, {"$limit": 5}]
    assert list(db.ts.aggregate(pipeline)) == list(db.regular.aggregate(pipeline))
    explained = db.command("explain", {"aggregate": "ts", "pipeline": pipeline, "cursor": {}},
                           verbosity="executionStats")
    info = explained["stages"][0]["$cursor"]["queryPlanner"]["winningPlan"]["timeseries"]
    assert info["newestFirst"] == 5 and info["bucketsScanned"] == 10
