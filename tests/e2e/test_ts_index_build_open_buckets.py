"""An index build on a time-series collection leaves its open buckets open. mongod's index builds do not
touch the bucket catalog (only a drop or a rollback clears it: timeseries_op_observer.cpp), so a
measurement inserted after ``createIndex`` goes to the bucket its series had open, nothing reopened.
Tidemark wrote every in-memory bucket in full and closed it first (61 s and a 4 s stall of the event
loop at 100,000 series; each series then reopened its bucket from storage). Now an index that cannot
refuse a bucket needs nothing of the in-memory ones (their keys are made when they are written in
full), and one that can (a measurement index, a meta index over two paths or of a special kind) has
their rows written in full first, the buckets staying open. Checked: the buckets and the statistics
of inserts before and after the build are those of the same inserts into a twin collection without
the build; reads through the new index answer as a regular collection; the refusals still see the
rows of the open buckets."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("createIndexes", "insert", "find", "aggregate", "collStats")

T0 = dt.datetime(2024, 5, 1)
# (user key, whether it can refuse a bucket: its build then writes the open buckets in full first)
INDEXES = [([("m", 1)], False), ([("m.r", 1), ("t", -1)], False), ([("t", 1)], False),
           ([("v", 1)], True), ([("m.h", 1), ("v", -1)], True), ([("m.h", 1), ("m.r", 1)], True),
           ([("m", "hashed")], True)]
STATS = ("bucketCount", "numBucketInserts", "numBucketUpdates", "numBucketsOpenedDueToMetadata",
         "numBucketsClosedDueToCount", "numBucketsClosedDueToSize", "numBucketsClosedDueToSchemaChange",
         "numBucketsArchivedDueToTimeForward", "numBucketsArchivedDueToTimeBackward", "numBucketsReopened",
         "numMeasurementsCommitted")


@st.composite
def rounds(draw) -> list[list[dict]]:
    """Two rounds of inserts (before and after the build) over a few series, times moving forward
    within and past a bucket's hour."""
    series = draw(st.lists(st.sampled_from(range(6)), min_size=1, max_size=4, unique=True))
    out = []
    clock = 0
    for _ in range(2):
        docs = []
        for _ in range(draw(st.integers(1, 20))):
            s = draw(st.sampled_from(series))
            clock += draw(st.integers(0, 25))
            docs.append({"t": T0 + dt.timedelta(minutes=clock), "m": {"h": f"h{s}", "r": s % 2},
                         "v": draw(st.sampled_from([1, 2.5, -4, 7]))})
        out.append(docs)
    return out


def _stats(db, name: str) -> dict:
    found = db.command("collStats", name)["timeseries"]
    return {k: found[k] for k in STATS}


def _buckets(db, name: str) -> list:
    """Each bucket's meta, start and measurement count (what grouping made of the inserts)."""
    return sorted((repr(b.get("meta")), b["control"]["min"]["t"], len(b["data"]["t"]))
                  for b in db[f"system.buckets.{name}"].find())


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                HealthCheck.too_slow])
@given(inserts=rounds(), index=st.sampled_from(INDEXES))
def test_inserts_after_an_index_build_go_to_the_open_buckets(db, inserts, index):
    key, _ = index
    for name in ("built", "twin", "reg"):
        db.drop_collection(name)
    db.create_collection("built", timeseries={"timeField": "t", "metaField": "m"})
    db.create_collection("twin", timeseries={"timeField": "t", "metaField": "m"})
    first, second = inserts
    for name in ("built", "twin", "reg"):
        db[name].insert_many([dict(d) for d in first])
    db["built"].create_index(key)
    db["reg"].create_index(key)
    for name in ("built", "twin", "reg"):
        db[name].insert_many([dict(d) for d in second])
    assert _stats(db, "built") == _stats(db, "twin")
    assert _buckets(db, "built") == _buckets(db, "twin")
    hint = "_".join(f"{f}_{d}" for f, d in key)
    flt = {"m.h": {"$in": ["h0", "h1"]}} if key[0][0].startswith("m") else {}
    got = sorted((d["t"], d["v"]) for d in db["built"].find(flt, {"_id": 0}).hint(hint))
    assert got == sorted((d["t"], d["v"]) for d in db["reg"].find(flt, {"_id": 0}))


@pytest.mark.parametrize("key", [k for k, _ in INDEXES], ids=lambda k: "_".join(f"{f}{d}" for f, d in k))
def test_the_build_keeps_the_bucket_and_its_id(db, key):
    db.create_collection("c", timeseries={"timeField": "t", "metaField": "m"})
    db.c.insert_many([{"t": T0 + dt.timedelta(seconds=i), "m": {"h": "a", "r": 1}, "v": i} for i in range(5)])
    before = [b["_id"] for b in db["system.buckets.c"].find()]
    reopened = db.command("collStats", "c")["timeseries"]["numBucketsReopened"]
    db.c.create_index(key)
    db.c.insert_one({"t": T0 + dt.timedelta(seconds=9), "m": {"h": "a", "r": 1}, "v": 9})
    buckets = list(db["system.buckets.c"].find())
    assert [b["_id"] for b in buckets] == before and len(buckets[0]["data"]["t"]) == 6
    assert db.command("collStats", "c")["timeseries"]["numBucketsReopened"] == reopened


def test_a_refusing_index_sees_the_rows_of_open_buckets(db):
    """The build refuses what it refused when the buckets were closed first: an array under a
    measurement index (5930501), parallel arrays of a two-path meta index (171) — and the buckets
    stay usable after a refused build."""
    db.create_collection("c", timeseries={"timeField": "t", "metaField": "m"})
    db.c.insert_many([{"t": T0, "m": "a", "v": [1]}, {"t": T0 + dt.timedelta(seconds=1), "m": "a", "v": [1, 2]}])
    with pytest.raises(OperationFailure) as refused:
        db.c.create_index([("v", 1)])
    assert refused.value.code == 5930501
    db.create_collection("p", timeseries={"timeField": "t", "metaField": "m"})
    db.p.insert_one({"t": T0, "m": {"a": [1, 2], "b": [3, 4]}, "v": 1})
    with pytest.raises(OperationFailure) as refused:
        db.p.create_index([("m.a", 1), ("m.b", 1)])
    assert refused.value.code == 171
    db.c.insert_one({"t": T0 + dt.timedelta(seconds=2), "m": "a", "v": [3]})
    assert db.c.count_documents({}) == 3
    assert len(list(db["system.buckets.c"].find())) == 1
    db.c.create_index([("m", 1), ("t", 1)])  # a meta index of one path refuses no meta
    with pytest.raises(OperationFailure) as refused:  # ...and a later one still sees the open bucket
        db.c.create_index([("m", 1), ("v", 1)])
    assert refused.value.code == 5930501


def test_an_index_built_on_the_buckets_collection_keeps_them_open(db):
    """createIndexes on ``system.buckets.<c>`` itself: the same rule (a unique index may refuse: the open
    buckets' rows are written first, so a duplicate among them is refused by the build)."""
    db.create_collection("c", timeseries={"timeField": "t", "metaField": "m"})
    db.c.insert_many([{"t": T0, "m": "a"}, {"t": T0, "m": "b"}])
    buckets = db["system.buckets.c"]
    ids = sorted(b["_id"] for b in buckets.find())
    buckets.create_index([("meta", 1)])
    with pytest.raises(OperationFailure) as refused:
        buckets.create_index([("control.min.t", 1)], unique=True)
    assert refused.value.code == 11000
    db.c.insert_many([{"t": T0 + dt.timedelta(seconds=1), "m": "a"}, {"t": T0 + dt.timedelta(seconds=1), "m": "b"}])
    assert sorted(b["_id"] for b in buckets.find()) == ids
    assert db.command("collStats", "c")["timeseries"]["numBucketsReopened"] == 0
