"""The columnar ``$group`` under a filter with a meta part (server/timeseries/groupbatch.py: each bucket
the ordinary way; a stored bucket read before gives its parts — arrays, remembered whole-bucket runs,
column ranges, meta token — in one memo look-up, ``_Batch.parts``): reads of the same shape with
different hosts and time windows, each bucket's parts remembered by the reads before it, answer
exactly what the generic ``$group`` answers — buckets a window cuts, buckets it holds whole (taken from
their remembered runs, ``groupruns.passes``), and buckets of other hosts."""

from __future__ import annotations

import datetime as dt

import bson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.commands("aggregate", "insert", "create", "delete")

T0 = dt.datetime(2024, 5, 1)
HOURS = 6
HOSTS = 4


@pytest.fixture(scope="module")
def ts(client):
    db = client["t_ts_group_meta_parts"]
    db.drop_collection("ts")
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m", "granularity": "seconds"})
    rows = [{"t": T0 + dt.timedelta(minutes=5 * i + h), "m": {"h": f"h{h}"}, "v": float((i * 7 + h * 3) % 13),
             "w": 0.5 * ((i + h) % 5)}
            for i in range(HOURS * 12) for h in range(HOSTS)]
    db.ts.insert_many(rows)
    db.ts.delete_many({"_id": "none"})  # closes the buckets: they are read as stored ones
    yield db.ts
    client.drop_database("t_ts_group_meta_parts")


def _encoded(docs) -> list[bytes]:
    return [bson.encode(d) for d in docs]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(reads=st.lists(st.tuples(st.lists(st.integers(0, HOSTS - 1), min_size=1, max_size=HOSTS, unique=True),
                                st.integers(-30, HOURS * 60), st.integers(1, HOURS * 60 + 60),
                                st.sampled_from(["minute", "hour"])),
                      min_size=2, max_size=5))
def test_meta_filtered_reads_answer_like_the_generic_group(ts, reads):
    for hosts, start, minutes, unit in reads:
        group = {"$group": {"_id": {"$dateTrunc": {"date": "$t", "unit": unit}}, "mx": {"$max": "$v"},
                            "mn": {"$min": "$w"}, "s": {"$sum": "$v"}, "f": {"$first": "$w"}, "n": {"$count": {}}}}
        match = {"$match": {"t": {"$gte": T0 + dt.timedelta(minutes=start),
                                  "$lt": T0 + dt.timedelta(minutes=start + minutes)},
                            "m.h": {"$in": [f"h{h}" for h in hosts]}}}
        generic = _encoded(ts.aggregate([match, {"$skip": 0}, group, {"$sort": {"_id": 1}}]))
        assert _encoded(ts.aggregate([match, group, {"$sort": {"_id": 1}}])) == generic, match
        # twice: the second read takes every bucket's parts from its memo
        assert _encoded(ts.aggregate([match, group, {"$sort": {"_id": 1}}])) == generic, match


def test_whole_buckets_under_a_meta_filter_are_counted_columnar(ts):
    """A window holding whole buckets of one host, read twice: the second read's buckets come from their
    remembered parts and runs, counted in explain as the first read's (``bucketsColumnar``)."""
    pipeline = [{"$match": {"t": {"$gte": T0, "$lt": T0 + dt.timedelta(hours=HOURS)}, "m.h": "h1"}},
                {"$group": {"_id": {"$dateTrunc": {"date": "$t", "unit": "hour"}}, "mx": {"$max": "$v"}}}]
    db = ts.database
    answers, counters = [], []
    for _ in range(2):
        answers.append(_encoded(ts.aggregate(pipeline)))
        explained = db.command("explain", {"aggregate": "ts", "pipeline": pipeline, "cursor": {}},
                               verbosity="executionStats")
        plan = explained["stages"][0]["$cursor"]["queryPlanner"]["winningPlan"]["timeseries"]
        counters.append({k: plan.get(k) for k in ("bucketsColumnar", "bucketsUnpacked", "measurementsUnpacked")})
    assert answers[0] == answers[1] == _encoded(ts.aggregate([pipeline[0], {"$skip": 0}, pipeline[1]]))
    assert counters[0] == counters[1] and counters[0]["bucketsColumnar"] == counters[0]["bucketsUnpacked"] > 0
