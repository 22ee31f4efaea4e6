"""A measurement with a large meta is stored: the meta sits once at the bucket's top, never in control
min/max, so its bucket is about the measurement's own size (bucket_update_single_measurement.js inserts a
15 MB meta). Tidemark estimated the bucket as three times the whole measurement and refused every meta
over ~5.3 MB with 10334 (found by porting the jstest).

Sizes around the old cut and up to the largest document: both measurements come back whole, in memory
and once stored; a document over the user maximum is still 10334 (BSONObjectTooLarge).
"""

from __future__ import annotations

import datetime as dt

import pytest
from pymongo.errors import DocumentTooLarge, OperationFailure

pytestmark = [pytest.mark.commands("insert", "find", "delete"), pytest.mark.slow]

T0 = dt.datetime(2025, 1, 1)


@pytest.mark.parametrize("megabytes", [5, 6, 10, 15])
def test_a_large_meta_is_stored_and_read_back(db, megabytes):
    db.drop_collection("bigmeta")
    db.create_collection("bigmeta", timeseries={"timeField": "t", "metaField": "m"})
    meta = "m" * (megabytes << 20)
    db.bigmeta.insert_one({"t": T0, "m": meta, "v": 1})
    db.bigmeta.insert_one({"t": T0 + dt.timedelta(minutes=1), "m": meta, "v": 2})
    for _stored in (False, True):
        docs = list(db.bigmeta.find({}, sort=[("t", 1)]))
        assert [(d["v"], d["m"] == meta) for d in docs] == [(1, True), (2, True)]
        db.bigmeta.delete_many({"_id": "none"})  # a direct write: the buckets are stored
    db.drop_collection("bigmeta")


def test_a_document_over_the_maximum_is_still_refused(db):
    db.drop_collection("bigmeta")
    db.create_collection("bigmeta", timeseries={"timeField": "t", "metaField": "m"})
    with pytest.raises((OperationFailure, DocumentTooLarge)) as failure:
        db.bigmeta.insert_one({"t": T0, "m": "m" * ((16 << 20) + 10)})
    assert getattr(failure.value, "code", 10334) == 10334
    assert db.bigmeta.count_documents({}) == 0
    db.drop_collection("bigmeta")


@pytest.mark.parametrize("megabytes, refused", [(3, False), (5, True)])
def test_a_meta_update_past_the_document_limit_is_refused(db, megabytes, refused):
    """A meta update rewrites each bucket it matches; one that makes a bucket larger than 16 MB is
    17419, as any update's result (mongod's UpdateStage), and changes nothing. Tidemark stored the
    oversized bucket, which find on system.buckets could then not return."""
    db.drop_collection("bigmeta")
    db.create_collection("bigmeta", timeseries={"timeField": "t", "metaField": "m"})
    db.bigmeta.insert_one({"t": T0, "m": 1, "v": "x" * (4 << 20)})  # a bucket of ~12 MB (v in data, min, max)
    update = {"$set": {"m": "z" * (megabytes << 20)}}
    if refused:
        with pytest.raises(OperationFailure) as failure:
            db.bigmeta.update_many({"m": 1}, update)
        assert failure.value.code == 17419
        assert [d["m"] for d in db.bigmeta.find({}, {"v": 0})] == [1]
    else:
        assert db.bigmeta.update_many({"m": 1}, update).modified_count == 1
        assert len(next(db.system.buckets.bigmeta.find())["meta"]) == megabytes << 20
    db.drop_collection("bigmeta")
