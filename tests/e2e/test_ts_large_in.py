"""An ``$in`` of many values on a time-series measurement field answers as on a regular collection,
in time proportional to the rows and values, not their product.

A 100,000-value ``$in`` over 1,000 measurements took 10-20 s (and held other clients' pings up to 6 s):
the bucket filter compiled one bound per value (100,000 filters, each bucket tested against all) and
the row filter compared the column once per value. Now an ``$in`` of more than 16 values is bounded per
BSON type by its least and greatest value, and rows are tested for membership in one pass (found by a
helper probing limits). The family (Hypothesis): fields of mixed types (numbers of every width, NaN,
dates, strings, arrays, missing) against ``$in`` / ``$nin`` lists of up to 60 mixed values, in memory
and stored, give the regular collection's documents.
"""

from __future__ import annotations

import datetime as dt

import pytest
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from harness.ts_differential import in_memory_then_stored
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.commands("find", "aggregate")

T0 = dt.datetime(2024, 1, 1)
SCALARS = st.one_of(
    st.integers(-50, 50), st.integers(-50, 50).map(Int64), st.integers(-50, 50).map(float),
    st.sampled_from([0.5, -2.5, float("nan"), float("inf"), 2.0**60, 2**60, -0.0]),
    st.sampled_from([Decimal128("3"), Decimal128("NaN")]),
    st.integers(0, 50).map(lambda s: T0 + dt.timedelta(seconds=s)),
    st.sampled_from(["a", "b", "zz", ""]), st.none(), st.booleans(),
)
FIELD = st.one_of(SCALARS, st.lists(SCALARS, max_size=3))
ROWS = st.lists(st.fixed_dictionaries({"m": st.integers(0, 2)}, optional={"a": FIELD}), min_size=1, max_size=40)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=ROWS, values=st.lists(SCALARS, max_size=60), negate=st.booleans())
def test_in_lists_of_any_size_match_the_regular_collection(db, rows, values, negate):
    docs = [{**row, "t": T0 + dt.timedelta(seconds=i)} for i, row in enumerate(rows)]
    db.drop_collection("ts")
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    query = {"a": {"$nin" if negate else "$in": values}}
    for _stored in in_memory_then_stored(db.ts, db.reg, docs, {"_id": -1}):
        expected = [d["_id"] for d in db.reg.find(query, sort=[("_id", 1)])]
        assert [d["_id"] for d in db.ts.find(query, sort=[("_id", 1)])] == expected
        counted = list(db.ts.aggregate([{"$match": query}, {"$count": "n"}]))
        assert (counted[0]["n"] if counted else 0) == len(expected)


@pytest.mark.slow
def test_a_hundred_thousand_values(db):
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    db.ts.insert_one({"t": T0, "m": 1, "a": list(range(100_000))})
    db.ts.insert_many([{"t": T0, "m": i % 10, "a": i} for i in range(1000)])
    assert len(list(db.ts.find({"a": {"$in": list(range(99_990, 199_990))}}))) == 1
    assert len(list(db.ts.find({"a": {"$in": list(range(500, 100_500))}}))) == 501
    explain = db.command("explain", {"find": "ts", "filter": {"a": {"$in": list(range(500, 100_500))}}})
    assert explain["stages"][0]["$cursor"]["queryPlanner"]["namespace"].endswith("system.buckets.ts")
