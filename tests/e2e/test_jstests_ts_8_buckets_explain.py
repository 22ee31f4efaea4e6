"""Explain of reads addressed to ``system.buckets.<c>`` itself, against a real Tidemark server.

Source (``mongodb/mongo``): jstests/core/timeseries/query/timeseries_buckets_query_explain.js. The stored
copy reads the buckets through 8.x's ``rawData``; on 7.0 the same reads name ``system.buckets.<c>``
directly (a clustered collection like any other). What it asserts, for aggregate, count, distinct and
find: ``queryPlanner.namespace`` is the buckets namespace, the echoed command names the buckets
collection, and no unpacking stage appears. On top of that, the classic engine's rule for any
collection applies: an aggregate the query layer answers alone (a leading ``$match``, with a projection,
a sort or a limit) is explained like a find (``queryPlanner`` at the top, ``optimizedPipeline: true``,
no ``stages``), and a scan's ``docsExamined`` counts the bucket documents it read.

Defects this found: such an aggregate on ``system.buckets.<c>`` kept a ``stages`` array with a ``$cursor``
stage, and every scan of a buckets collection (find and aggregate) reported ``docsExamined: 0``.
"""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.commands("explain", "find", "aggregate", "count", "distinct", "insert", "create")

HYPO = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
T0 = dt.datetime(2024, 1, 1)


def _make(db, metas: list[int]) -> str:
    """A time-series collection ``c`` with one measurement per entry of ``metas`` (its meta value), all at
    one time: one bucket per distinct meta. Its buckets collection's name."""
    db.drop_collection("c")
    db.create_collection("c", timeseries={"timeField": "t", "metaField": "m"})
    db.c.insert_many([{"t": T0, "m": m, "a": i} for i, m in enumerate(metas)])
    return "system.buckets.c"


def _explain(db, cmd: dict, verbosity: str) -> dict:
    return db.command({"explain": cmd, "verbosity": verbosity})


def _assert_raw_read(db, explain: dict, command: str) -> None:
    """What the jstest asserts of every explain: the buckets namespace, the buckets name echoed, no unpacking."""
    buckets = "system.buckets.c"
    assert explain["queryPlanner"]["namespace"] == f"{db.name}.{buckets}"
    assert explain["command"][command] == buckets
    assert "UNPACK" not in str(explain) and "_internalUnpackBucket" not in str(explain)


def test_each_raw_read_explains_the_buckets_namespace_without_unpacking(db):
    buckets = _make(db, [1, 2, 2])
    for cmd, name in [({"aggregate": buckets, "pipeline": [{"$match": {"meta": 2}}], "cursor": {}}, "aggregate"),
                      ({"count": buckets, "query": {"meta": 2}}, "count"),
                      ({"distinct": buckets, "key": "meta", "query": {}}, "distinct"),
                      ({"find": buckets, "filter": {"meta": 2}}, "find")]:
        _assert_raw_read(db, _explain(db, cmd, "queryPlanner"), name)


# Pipelines the query layer answers alone on any collection (a leading $match, then what the classic
# engine pushes down): on system.buckets.<c> too, explained like a find.
ABSORBED = [
    lambda m: [{"$match": {"meta": m}}],
    lambda m: [{"$match": {"meta": m}}, {"$project": {"meta": 1}}],
    lambda m: [{"$match": {"meta": {"$gte": m}}}, {"$sort": {"meta": 1}}, {"$limit": 3}],
]


@HYPO
@given(metas=st.lists(st.integers(0, 5), min_size=1, max_size=12), probe=st.integers(0, 5),
       shape=st.sampled_from(range(len(ABSORBED))),
       verbosity=st.sampled_from(["queryPlanner", "executionStats", "allPlansExecution"]))
def test_an_aggregate_the_query_layer_answers_alone_is_explained_like_a_find(db, metas, probe, shape, verbosity):
    buckets = _make(db, metas)
    pipeline = ABSORBED[shape](probe)
    explain = _explain(db, {"aggregate": buckets, "pipeline": pipeline, "cursor": {}}, verbosity)
    _assert_raw_read(db, explain, "aggregate")
    assert "stages" not in explain
    assert explain["queryPlanner"]["optimizedPipeline"] is True
    assert explain["queryPlanner"]["parsedQuery"] == pipeline[0]["$match"]
    if verbosity != "queryPlanner":
        stats = explain["executionStats"]
        assert stats["nReturned"] == len(list(db[buckets].aggregate(pipeline)))
        assert stats["totalDocsExamined"] == len(set(metas))  # every bucket, read by the scan


@HYPO
@given(metas=st.lists(st.integers(0, 5), min_size=1, max_size=12), probe=st.integers(0, 5),
       natural=st.sampled_from([None, 1, -1]))
def test_a_find_on_the_buckets_counts_the_buckets_it_examined(db, metas, probe, natural):
    buckets = _make(db, metas)
    cmd: dict = {"find": buckets, "filter": {"meta": probe}}
    if natural is not None:
        cmd["hint"] = {"$natural": natural}
    stats = _explain(db, cmd, "executionStats")["executionStats"]
    assert stats["nReturned"] == (1 if probe in metas else 0)
    assert stats["totalDocsExamined"] == len(set(metas))
    assert stats["executionStages"]["stage"] == "COLLSCAN"
    assert stats["executionStages"]["docsExamined"] == len(set(metas))


def test_a_pipeline_that_keeps_stages_counts_the_buckets_its_cursor_read(db):
    buckets = _make(db, [1, 2, 2, 3])
    explain = _explain(db, {"aggregate": buckets, "pipeline": [{"$group": {"_id": "$meta"}}], "cursor": {}},
                       "executionStats")
    cursor = explain["stages"][0]["$cursor"]
    assert cursor["executionStats"]["totalDocsExamined"] == 3
    assert cursor["executionStats"]["nReturned"] == 3
