"""A time-series bucket holding a NaN has it as its control minimum (NaN is the least number): bucket
pruning by a bound on the minimum keeps such a bucket, whose other values may match (it used to drop
it: ``{u: {$lte: -3}}`` missed -16.75 beside a NaN; found by the generated differential test)."""

import datetime as dt

import pytest
from bson import Decimal128

pytestmark = pytest.mark.commands("find", "insert", "delete")

T0 = dt.datetime(2024, 5, 1)
DOCS = [{"_id": i, "t": T0 + dt.timedelta(minutes=i), "m": "a", "u": u}
        for i, u in enumerate([float("nan"), -16.75, 5.0, 12.5])]
FILTERS = [{"u": {"$lte": -3}}, {"u": {"$lt": 6}}, {"u": 5.0}, {"u": {"$lt": Decimal128("0")}},
           {"u": {"$gte": 5}}, {"u": float("nan")}, {"u": {"$lte": float("nan")}}]


@pytest.mark.parametrize("meta", [True, False])
def test_buckets_with_a_nan_minimum_are_not_pruned(db, meta):
    db.create_collection("ts", timeseries={"timeField": "t", **({"metaField": "m"} if meta else {})})
    db.ts.insert_many(DOCS)
    db.regular.insert_many(DOCS)
    for flt in FILTERS:
        expected = sorted(d["_id"] for d in db.regular.find(flt))
        assert expected, flt
        assert sorted(d["_id"] for d in db.ts.find(flt)) == expected, flt
    db.ts.delete_many({"u": {"$lte": -3}})  # deletes derive their bucket filter the same way
    assert sorted(d["_id"] for d in db.ts.find()) == [0, 2, 3]
