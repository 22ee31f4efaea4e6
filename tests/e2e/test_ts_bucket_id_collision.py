"""A new bucket never takes the ``_id`` of a stored bucket (timeseries_bucket_oids.js).

Bucket ids are 4 bytes of start time, 5 bytes random per process and a 3-byte counter, so buckets this
process makes never collide. A bucket written straight into ``system.buckets.<name>`` can hold the id the
counter makes next, though: Tidemark gave it to the next new bucket, whose first write replaced the stored
bucket — its measurements were lost (found by porting the jstest). mongod retries with a new id.

Property: with ``k`` buckets written directly under the next ``k`` ids the counter will make (k = 1..5,
measurements of one or several series), inserting measurements of new series keeps every stored bucket
and every measurement, whether the new buckets are still in memory or written.
"""

from __future__ import annotations

import datetime as dt

import pytest
from bson.objectid import ObjectId
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.commands("insert", "find", "count")

T0 = dt.datetime(2023, 8, 1)


def _next_id(oid: ObjectId, step: int) -> ObjectId:
    raw = str(oid)
    return ObjectId(raw[:18] + "%06x" % ((int(raw[18:], 16) + step) & 0xFFFFFF))


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(k=st.integers(1, 5), new_series=st.integers(1, 4), settle=st.booleans())
def test_a_new_bucket_never_takes_a_stored_buckets_id(db, k, new_series, settle):
    db.drop_collection("ids")
    db.create_collection("ids", timeseries={"timeField": "t", "metaField": "m"})
    coll, buckets = db["ids"], db["system.buckets.ids"]
    coll.insert_one({"t": T0, "m": "first", "v": 0})
    coll.delete_many({"_id": "none"})  # a direct write: the bucket is stored
    newest = buckets.find_one({"meta": "first"})
    for step in range(1, k + 1):  # the ids this process's counter makes next
        planted = dict(newest, _id=_next_id(newest["_id"], step), meta=f"planted{step}")
        buckets.insert_one(planted)
    coll.insert_many([{"t": T0, "m": f"new{i}", "v": i} for i in range(new_series)])
    if settle:
        coll.delete_many({"_id": "none"})
    metas = sorted(b["meta"] for b in buckets.find({}, {"meta": 1}))
    assert metas == sorted(["first", *(f"planted{s}" for s in range(1, k + 1)), *(f"new{i}" for i in range(new_series))])
    assert coll.count_documents({}) == 1 + k + new_series
    assert sorted(d["m"] for d in coll.find({}, {"m": 1})) == metas
