"""A time-series $group of very many series into few groups answers as the regular collection's, under a
small $group memory limit with allowDiskUse, while its columnar state keeps only what its groups need.

mongod 7.0's DocumentSourceGroup holds its groups, nothing per series it read (document_source_group.cpp;
its memory is checked against internalDocumentSourceGroupMaxMemoryBytes and spilled with allowDiskUse:
jstests/aggregation/spill_to_disk.js). Tidemark's columnar path (server/timeseries/groupbatch.py) numbers
the metas it meets; between batches it now drops those no group needs and numbers the rest again
(``_Batch._compact``), and cuts its caches by run token back to one token per group. Here the batches are
a few buckets (``BATCH_ROWS``) and the metas kept past the groups are a handful (``METAS_SLACK``,
``TOKENS_SLACK``), so every query renumbers its metas many times, also across spills, over stored and
in-memory buckets, a window cutting some of them, and a group key that reads the meta, one that does not,
one without a template (the dicts) and accumulators the NumPy totals do not take (generic). The oracle:
the same measurements in a regular collection, in the time-series collection's read order; compared
without their order (a spilled $group's order is its own), or in order after a $sort.
"""

from __future__ import annotations

import datetime as dt

import bson
import pytest
from harness.parameters import server_parameter
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.commands("aggregate", "setParameter", "getParameter", "insert", "delete")

GROUP_LIMIT = "internalDocumentSourceGroupMaxMemoryBytes"
T0 = dt.datetime(2024, 3, 1)
SERIES = 1500
DAYS = 5


def _trunc(unit: str) -> dict:
    return {"$dateTrunc": {"date": "$t", "unit": unit}}


IDS = {
    "day": _trunc("day"),
    "day-g": {"d": _trunc("day"), "g": "$m.g"},
    "hour-r": {"h": _trunc("hour"), "r": "$m.r"},
    "g": "$m.g",
    "nested": {"a": {"d": _trunc("day")}, "g": "$m.g"},  # no template: the dicts
}
ACCUMULATORS = {
    "n": {"$count": {}}, "sum": {"$sum": "$v"}, "avg": {"$avg": "$v"}, "max": {"$max": "$v"},
    "min": {"$min": "$w"}, "first": {"$first": "$v"}, "last": {"$last": "$w"},
    "one": {"$sum": 1},  # (not NumPy totals: generic accumulators)
    "push": {"$push": "$w"},  # (not the columnar path: the generic way, for the same answer)
}


def _docs():
    """SERIES series, a few measurements each, on one of DAYS days: few groups, a run or two a series."""
    docs = []
    for i in range(SERIES):
        base = T0 + dt.timedelta(days=i % DAYS, hours=i % 3, minutes=i % 60)
        meta = {"id": i, "g": i % 3, "r": "eu" if i % 2 else "us"}
        for k in range(1 + i % 4):
            docs.append({"t": base + dt.timedelta(seconds=17 * k), "m": meta, "v": float((i * 7 + k) % 11),
                         "w": float(k)})
    return docs


@pytest.fixture
def loaded(tidemark_db):
    db = tidemark_db
    docs = _docs()
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    half = len(docs) // 2
    db.ts.insert_many([dict(d) for d in docs[:half]])
    db.ts.delete_many({"t": {"$lt": T0 - dt.timedelta(days=1)}})  # (matches nothing: settles every bucket)
    db.ts.insert_many([dict(d) for d in docs[half:]])
    db.reg.insert_many(list(db.ts.find()))
    return db


@st.composite
def pipelines(draw):
    stages = []
    if draw(st.booleans()):  # a window cutting the buckets of some days
        lo = T0 + dt.timedelta(days=draw(st.integers(0, 2)), minutes=draw(st.integers(0, 90)))
        stages.append({"$match": {"t": {"$gte": lo, "$lt": lo + dt.timedelta(days=draw(st.integers(1, 3)))}}})
    names = draw(st.lists(st.sampled_from(sorted(ACCUMULATORS)), min_size=1, max_size=4, unique=True))
    stages.append({"$group": {"_id": IDS[draw(st.sampled_from(sorted(IDS)))],
                              **{name: ACCUMULATORS[name] for name in names}}})
    return stages


def _answer(coll, pipeline):
    return sorted(bson.encode(d) for d in coll.aggregate(pipeline, allowDiskUse=True))


@pytest.fixture
def small_state(monkeypatch):
    """Batches of a few buckets, and a handful of metas and run tokens kept past the groups."""
    from tidemark.timeseries import groupbatch, groupstate

    monkeypatch.setattr(groupbatch, "BATCH_ROWS", 40)
    monkeypatch.setattr(groupbatch, "METAS_SLACK", 3)
    monkeypatch.setattr(groupbatch, "TOKENS_SLACK", 2)
    monkeypatch.setattr(groupstate, "TOKENS_SLACK", 2)


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(pipeline=pipelines(), limit=st.sampled_from([None, 600, 2048]))
def test_few_groups_over_many_series_answer_as_the_regular_collection(tidemark_client, loaded, small_state,
                                                                      pipeline, limit):
    db = loaded
    expected = _answer(db.reg, pipeline)
    if limit is None:
        assert _answer(db.ts, pipeline) == expected
        return
    with server_parameter(tidemark_client, GROUP_LIMIT, limit):
        assert _answer(db.ts, pipeline) == expected


@pytest.mark.slow
@pytest.mark.parametrize("limit", [None, 300])
def test_newest_groups_over_many_series_answer_as_the_regular_collection(tidemark_client, loaded, small_state,
                                                                         limit):
    """The newest-groups read (flushed at every bucket start) over every series: the same newest groups."""
    db = loaded
    pipeline = [{"$match": {"t": {"$lt": T0 + dt.timedelta(days=30)}}},
                {"$group": {"_id": _trunc("hour"), "n": {"$count": {}}, "max": {"$max": "$v"}, "sum": {"$sum": "$w"}}},
                {"$sort": {"_id": -1}}, {"$limit": 4}]
    expected = list(db.reg.aggregate(pipeline))
    assert len(expected) == 4
    if limit is None:
        assert list(db.ts.aggregate(pipeline, allowDiskUse=True)) == expected
        return
    with server_parameter(tidemark_client, GROUP_LIMIT, limit):
        assert list(db.ts.aggregate(pipeline, allowDiskUse=True)) == expected
