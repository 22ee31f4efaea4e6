"""Lastpoint on stored buckets with a sparse column: a field present only in the first rows of a
series' latest bucket (a dense but shorter column) reads as missing in its latest row, as on a regular
collection (it used to index past the column: InternalError; found by bench.differential)."""

import datetime as dt

import pytest
from bson import ObjectId

pytestmark = pytest.mark.commands("aggregate", "insert")

T0 = dt.datetime(2024, 5, 1)


def test_lastpoint_with_a_column_missing_from_the_latest_row(db):
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    t1 = T0 + dt.timedelta(minutes=1)
    bucket = {"_id": ObjectId("663185000000000000000001"),
              "control": {"version": 1, "min": {"_id": 0, "t": T0, "s": 7}, "max": {"_id": 1, "t": t1, "s": 7}},
              "meta": "a",
              "data": {"_id": {"0": 0, "1": 1}, "t": {"0": T0, "1": t1}, "s": {"0": 7}}}
    db["system.buckets.ts"].insert_one(bucket)  # a stored bucket (not in memory)
    db.regular.insert_many([{"_id": 0, "t": T0, "m": "a", "s": 7}, {"_id": 1, "t": t1, "m": "a"}])
    pipeline = [{"$sort": {"m": 1, "t": -1}}, {"$group": {"_id": "$m", "s": {"$first": "$s"}, "i": {"$first": "$_id"}}}]
    expected = list(db.regular.aggregate(pipeline))
    assert expected == [{"_id": "a", "s": None, "i": 1}]
    assert list(db.ts.aggregate(pipeline)) == expected
