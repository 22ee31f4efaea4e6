"""An executed explain of distinct, update, delete and findAndModify counts what its plan examined.

mongod 7.0 reports, at executionStats, the index keys and documents the plan read (totalKeysExamined,
totalDocsExamined; ``keysExamined`` / ``docsExamined`` in the plan's stages) for every explained command,
the writes included, beside the write stage's own nMatched / nWouldModify / nWouldDelete
(jstests/core/query/explain/explain_delete.js, explain_distinct.js). Tidemark read the read's counters
before the read ran and reported 0 and 0 whatever the plan scanned.

The family: random documents, with or without an index on ``a``, a random filter; each explained
distinct / update / delete / findAndModify examines what the equivalent find examines (the same filter,
``limit: 1`` for a single-document write), and the explain changes no document.
"""

from __future__ import annotations

import datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.commands("explain", "distinct", "update", "delete", "findAndModify")

HYPO = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

_docs = st.lists(st.fixed_dictionaries({"a": st.integers(0, 4), "b": st.integers(0, 3)}), max_size=20)
_filters = st.one_of(
    st.builds(lambda v: {"a": v}, st.integers(0, 4)),
    st.builds(lambda v: {"a": {"$gte": v}}, st.integers(0, 4)),
    st.builds(lambda v, w: {"a": {"$lte": v}, "b": w}, st.integers(0, 4), st.integers(0, 3)),
    st.builds(lambda w: {"b": w}, st.integers(0, 3)),
    st.just({}),
)


def _explain(db, cmd):
    return db.command("explain", cmd, verbosity="executionStats")["executionStats"]


def _examined(execution):
    return execution["totalKeysExamined"], execution["totalDocsExamined"]


def _stage(execution, name):
    node = execution["executionStages"]
    while node["stage"] != name:
        node = node["inputStage"]
    return node


def _explained(flt, single):
    """(command name, explained command, find options it reads as)."""
    limit = {"limit": 1} if single else {}
    return [
        ("distinct", {"distinct": "c", "key": "b", "query": flt}, {}),
        ("update", {"update": "c", "updates": [{"q": flt, "u": {"$inc": {"b": 1}}, "multi": not single}]}, limit),
        ("delete", {"delete": "c", "deletes": [{"q": flt, "limit": 1 if single else 0}]}, limit),
        ("findAndModify", {"findAndModify": "c", "query": flt, "update": {"$set": {"z": 1}}}, {"limit": 1}),
        ("findAndModify", {"findAndModify": "c", "query": flt, "remove": True}, {"limit": 1}),
    ]


@HYPO
@given(docs=_docs, indexed=st.booleans(), flt=_filters, single=st.booleans())
def test_examined_as_the_equivalent_find(db, docs, indexed, flt, single):
    db.c.drop()
    if docs:
        db.c.insert_many([dict(d, _id=i) for i, d in enumerate(docs)])
    else:
        db.create_collection("c")
    if indexed:
        db.c.create_index("a")
    before = list(db.c.find().sort("_id", 1))
    for _, cmd, options in _explained(flt, single):
        found = _explain(db, {"find": "c", "filter": flt, **options})
        execution = _explain(db, cmd)
        assert _examined(execution) == _examined(found), (cmd, execution, found)
    assert list(db.c.find().sort("_id", 1)) == before  # an explain writes nothing


def test_write_stage_counters_beside_what_was_examined(db):
    """A delete over a COLLSCAN of 10 documents, 3 matching: 10 examined, 3 would be deleted; with an
    index on the filter's field, 3 keys and 3 documents examined (explain_delete.js's counts)."""
    db.c.insert_many([{"a": i % 3} for i in range(9)] + [{"a": 5}])
    delete = {"delete": "c", "deletes": [{"q": {"a": 1}, "limit": 0}]}
    execution = _explain(db, delete)
    assert _examined(execution) == (0, 10)
    assert execution["executionStages"]["nWouldDelete"] == 3
    assert _stage(execution, "COLLSCAN")["docsExamined"] == 10
    db.c.create_index("a")
    execution = _explain(db, delete)
    assert _examined(execution) == (3, 3)
    update = {"update": "c", "updates": [{"q": {"a": 1}, "u": {"$set": {"z": 1}}, "multi": True}]}
    execution = _explain(db, update)
    assert _examined(execution) == (3, 3)
    assert (execution["executionStages"]["nMatched"], execution["executionStages"]["nWouldModify"]) == (3, 3)
    assert db.c.count_documents({"z": 1}) == 0 and db.c.count_documents({}) == 10


# ------------------------------------------------------------------ time-series delete

_measurements = st.lists(st.fixed_dictionaries({"m": st.integers(0, 2), "v": st.integers(0, 5)}), min_size=1,
                         max_size=15)
_ts_filters = st.one_of(
    st.builds(lambda m: {"m": m}, st.integers(0, 2)),
    st.builds(lambda v: {"v": {"$gte": v}}, st.integers(0, 5)),
    st.builds(lambda m, v: {"m": m, "v": v}, st.integers(0, 2), st.integers(0, 5)),
)


def _leaf(stage):
    while "inputStage" in stage:
        stage = stage["inputStage"]
    return stage


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(measurements=_measurements, flt=_ts_filters, single=st.booleans())
def test_timeseries_delete_counts_the_buckets_it_scans(db, measurements, flt, single):
    """A time-series delete scans buckets: through the meta index it examines one key and one bucket per
    bucket of that meta value; a collection scan examines every bucket."""
    db.drop_collection("ts")
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    start = datetime.datetime(2024, 1, 1)
    db.ts.insert_many([{"t": start + datetime.timedelta(minutes=i), **d} for i, d in enumerate(measurements)])
    buckets = db["system.buckets.ts"]
    before = sorted(map(repr, db.ts.find({}, {"_id": 0})))
    explained = db.command("explain", {"delete": "ts", "deletes": [{"q": flt, "limit": 1 if single else 0}]},
                           verbosity="executionStats")
    execution = explained["executionStats"]
    leaf = _leaf(explained["queryPlanner"]["winningPlan"])
    if leaf["stage"] == "COLLSCAN":
        expected = (0, buckets.count_documents({}))
    else:
        assert leaf["stage"] == "IXSCAN", explained
        n = buckets.count_documents({"meta": flt["m"]})
        expected = (n, n)
    if single and leaf["stage"] == "COLLSCAN":  # (a deleteOne may stop at its first match)
        assert execution["totalKeysExamined"] == 0
        assert 0 < execution["totalDocsExamined"] <= expected[1], explained
    else:
        assert _examined(execution) == expected, explained
    assert sorted(map(repr, db.ts.find({}, {"_id": 0}))) == before  # an explain writes nothing
