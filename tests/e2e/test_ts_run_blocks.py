"""Remembered whole-bucket runs kept side by side in bucketcache run blocks (server/timeseries/
bucketcache.py, groupbatch.py): reads whose windows remember different stretches of stored buckets,
in different orders, so that one batch joins runs from several blocks, buckets read whole from their
remembered runs interleaved with buckets seen for the first time, and buckets a window cuts, answer
exactly what the generic ``$group`` answers (order-sensitive accumulators, first-seen group order)."""

from __future__ import annotations

import datetime as dt

import bson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.commands("aggregate", "insert", "create", "delete")

T0 = dt.datetime(2024, 5, 1)
HOURS = 10


@pytest.fixture(scope="module")
def ts(client):
    db = client["t_ts_run_blocks"]
    db.drop_collection("ts")
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m", "granularity": "seconds"})
    rows = [{"t": T0 + dt.timedelta(minutes=10 * i + h), "m": {"h": f"h{h}"}, "v": float((i * 7 + h * 3) % 11),
             "w": 0.25 * ((i + h) % 5)}
            for i in range(HOURS * 6) for h in range(4)]
    db.ts.insert_many(rows)
    db.ts.delete_many({"_id": "none"})  # closes the buckets: they are read as stored ones
    yield db.ts
    client.drop_database("t_ts_run_blocks")


def _encoded(docs) -> list[bytes]:
    return [bson.encode(d) for d in docs]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(windows=st.lists(st.tuples(st.integers(0, HOURS * 60), st.integers(1, HOURS * 60)), min_size=2, max_size=5),
       fractional=st.booleans())
def test_windows_remembering_different_stretches_answer_like_the_generic_group(ts, windows, fractional):
    """``fractional``: an ``$avg`` of fractions, which the NumPy totals do not take: each batch of
    remembered stretches and other buckets falls back to the generic accumulators in arrival order."""
    group = {"$group": {"_id": {"t": {"$dateTrunc": {"date": "$t", "unit": "hour"}}, "h": "$m.h"},
                        "a": {"$avg": "$w" if fractional else "$v"}, "f": {"$first": "$w"}, "l": {"$last": "$w"},
                        "mx": {"$max": "$v"}, "n": {"$count": {}}}}
    for start, minutes in windows:
        match = {"$match": {"t": {"$gte": T0 + dt.timedelta(minutes=start),
                                  "$lt": T0 + dt.timedelta(minutes=start + minutes)}}}
        generic = _encoded(ts.aggregate([match, {"$skip": 0}, group]))
        assert _encoded(ts.aggregate([match, group])) == generic, match
    whole = {"$match": {"t": {"$gte": T0}}}  # every bucket: runs remembered by all the reads above
    assert _encoded(ts.aggregate([whole, group])) == _encoded(ts.aggregate([whole, {"$skip": 0}, group]))
