"""Measurement times across the whole 64-bit range of BSON dates, on a time-series collection against an
ordinary one.

Found by probing the family's ends: a time of -2**63 ms overflowed the bucket's rounded start and failed
the whole insert command with 15, the valid documents of an unordered batch with it; and a query on a time
near either end overflowed its bucket bounds (time +- the bucket span) and failed with 15. Now a time no
bucket can start at is that one document's write error (15, with a message saying so), and bounds past
either end are that end.
"""

from __future__ import annotations

import pytest
from bson import DatetimeMS
from bson.codec_options import DatetimeConversion
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import BulkWriteError

pytestmark = pytest.mark.commands("create", "insert", "find", "count", "aggregate")

HYPO = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
EARLIEST = INT64_MIN + 2 * 365 * 86400 * 1000  # a bucket rounds its start down by up to a year

_EDGES = [INT64_MIN, INT64_MIN + 1, EARLIEST - 1, EARLIEST, -62135596800000, -86400001, -1, 0, 1,
          253402300799999, 253402300800000, 2**53, 2**62, INT64_MAX - 1, INT64_MAX]
_TIME = st.one_of(st.sampled_from(_EDGES), st.integers(INT64_MIN, INT64_MAX))


def _dates(db):
    return db.with_options(codec_options=db.codec_options.with_options(
        datetime_conversion=DatetimeConversion.DATETIME_MS))


@HYPO
@given(times=st.lists(_TIME, min_size=1, max_size=8),
       granularity=st.sampled_from(["seconds", "minutes", "hours"]))
def test_times_across_the_range(db, times, granularity):
    db = _dates(db)
    db.drop_collection("extremes_ts")
    db.create_collection("extremes_ts", timeseries={"timeField": "t", "metaField": "m", "granularity": granularity})
    docs = [{"_id": i, "t": DatetimeMS(t), "m": i % 2} for i, t in enumerate(times)]
    refused = {i for i, t in enumerate(times) if t < EARLIEST}
    try:
        db.extremes_ts.insert_many(docs, ordered=False)
        assert not refused
    except BulkWriteError as e:  # only the times no bucket can hold, each its own error
        errors = e.details["writeErrors"]
        assert {err["index"] for err in errors} == refused
        assert {err["code"] for err in errors} == {15}
    kept = [d for i, d in enumerate(docs) if i not in refused]
    assert sorted(d["_id"] for d in db.extremes_ts.find()) == [d["_id"] for d in kept]
    assert [int(d["t"]) for d in db.extremes_ts.find().sort("t", 1)] == sorted(int(d["t"]) for d in kept)
    for doc in kept:  # a query on each time, and ranges from it to either end
        t = doc["t"]
        expected_eq = sum(1 for d in kept if int(d["t"]) == int(t))
        assert db.extremes_ts.count_documents({"t": t}) == expected_eq
        assert db.extremes_ts.count_documents({"t": {"$gte": t}}) == sum(1 for d in kept if int(d["t"]) >= int(t))
        assert db.extremes_ts.count_documents({"t": {"$lt": t}}) == sum(1 for d in kept if int(d["t"]) < int(t))
    for t in (INT64_MIN, INT64_MAX):
        assert db.extremes_ts.count_documents({"t": {"$gte": DatetimeMS(t)}}) == sum(
            1 for d in kept if int(d["t"]) >= t)
