"""The planner takes a sparse index without a hint when the query cannot match a document lacking its field.

mongod 7.0 (planner_ixselect.cpp, QueryPlannerIXSelect::nodeIsSupportedBySparseIndex) lets a predicate use a
sparse index unless it is an equality to null, a ``$in`` holding null, or a negation other than
``{$ne: null}`` (``$exists: false`` is a negation): those match documents that lack the field, which a
sparse index leaves out (jstests/core/index/sparse_index_*.js). Tidemark took a sparse index only when
hinted. Now ``index_bounds.excludes_missing`` decides, per conjunct, and ``plan.best_index`` takes a sparse
index whose leading field some conjunct holds to be present.

The family: random filters over documents whose ``a`` is missing, null, a scalar, an array or a document
(the sparse index ``{a: 1}`` present); each answers what a collection scan (hint ``{$natural: 1}``) answers.
"""

from __future__ import annotations

import re

import pytest
from bson.max_key import MaxKey
from bson.min_key import MinKey
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.commands("find", "explain", "count", "createIndexes", "insert")

HYPO = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

_A_VALUES = [None, 0, 1, 2, 3, 2.5, "x", "y", [], [1, None], [2, 3], [None], {"x": 1}, True, MinKey(), MaxKey()]


def _documents() -> list[dict]:
    docs: list[dict] = []
    for b in (None, 1):  # None: b missing
        docs.append({} if b is None else {"b": b})
        for a in _A_VALUES:
            docs.append({"a": a} if b is None else {"a": a, "b": b})
    return [{"_id": i, **d} for i, d in enumerate(docs)]


@pytest.fixture
def coll(db):
    c = db.sparse_sel
    c.insert_many(_documents())
    c.create_index("a", sparse=True, name="a_sparse")
    return c


def _index_names(stage: dict) -> set[str]:
    names = {stage["indexName"]} if "indexName" in stage else set()
    for child in [stage.get("inputStage")] + list(stage.get("inputStages", [])):
        if child:
            names |= _index_names(child)
    return names


def _uses_sparse(coll, filter: dict) -> bool:
    plan = coll.find(filter).explain()["queryPlanner"]["winningPlan"]
    return "a_sparse" in _index_names(plan)


# ------------------------------------------------------------------ explain: which shapes take the index

CANNOT_MATCH_MISSING = [
    {"a": 1},
    {"a": "x"},
    {"a": {"$eq": 2}},
    {"a": {"$gt": 1}},
    {"a": {"$gte": 1, "$lt": 3}},
    {"a": {"$lte": "y"}},
    {"a": {"$in": [1, 2]}},
    {"a": {"$in": [1, re.compile("^x")]}},
    {"a": re.compile("^x")},
    {"a": {"$regex": "^y"}},
    {"a": {"$in": [1, None], "$ne": None}},  # {$ne: null} is false of a missing field
    {"a": None, "$and": [{"a": {"$exists": True}}]},
    {"a": {"$gt": 1}, "b": None},
    {"$and": [{"a": {"$gt": 0}}, {"a": {"$lt": 3}}]},
]

CAN_MATCH_MISSING = [
    {"a": None},
    {"a": {"$eq": None}},
    {"a": {"$in": [1, None]}},
    {"a": {"$in": [None]}},
    {"a": {"$exists": False}},
    {"a": {"$ne": 1}},
    {"a": {"$nin": [1, 2]}},
    {"a": {"$not": {"$gt": 1}}},
    {"a": {"$gte": MinKey()}},
    {"a": {"$lte": MaxKey()}},
    {"$or": [{"a": 1}, {"a": None}]},
    {"b": 1},
]


@pytest.mark.parametrize("filter", CANNOT_MATCH_MISSING, ids=repr)
def test_sparse_index_serves_a_filter_false_of_missing(coll, filter):
    assert _uses_sparse(coll, filter)
    assert _ids(coll.find(filter)) == _ids(coll.find(filter).hint([("$natural", 1)]))


@pytest.mark.parametrize("filter", CAN_MATCH_MISSING, ids=repr)
def test_sparse_index_never_serves_a_filter_true_of_missing(coll, filter):
    assert not _uses_sparse(coll, filter)
    assert _ids(coll.find(filter)) == _ids(coll.find(filter).hint([("$natural", 1)]))


def test_sparse_index_chosen_as_any_other(coll):
    """Among indexes a sparse one ranks as a plain one would: the longer equality prefix wins."""
    coll.create_index([("b", 1)], unique=False, name="b_1")
    coll.create_index([("a", 1), ("b", 1)], sparse=True, name="ab_sparse")
    plan = coll.find({"a": 1, "b": 1}).explain()["queryPlanner"]["winningPlan"]
    assert _index_names(plan) == {"ab_sparse"}
    assert _ids(coll.find({"a": 1, "b": 1})) == _ids(coll.find({"a": 1, "b": 1}).hint([("$natural", 1)]))
    assert len(_ids(coll.find({"a": 1, "b": 1}))) == 2  # a: 1 and a: [1, null], with b: 1
    assert coll.count_documents({"a": 1}) == coll.count_documents({"a": 1}, hint="a_sparse") == 4


def _ids(cursor) -> list:
    return sorted(d["_id"] for d in cursor)


# ------------------------------------------------------------------ the family

_scalars = st.one_of(st.none(), st.integers(0, 3), st.sampled_from(["x", "y", 2.5, True]))
_values = st.one_of(_scalars, st.lists(_scalars, max_size=2), st.sampled_from([MinKey(), MaxKey(), {"x": 1}]))
_ordered = st.one_of(_scalars, st.sampled_from([MinKey(), MaxKey()]))


def _condition() -> st.SearchStrategy:
    ops = st.one_of(
        st.builds(lambda v: {"$eq": v}, _values),
        st.builds(lambda vs: {"$in": vs}, st.lists(_scalars, max_size=3)),
        st.builds(lambda vs: {"$nin": vs}, st.lists(_scalars, max_size=3)),
        st.builds(lambda op, v: {op: v}, st.sampled_from(["$gt", "$gte", "$lt", "$lte"]), _ordered),
        st.builds(lambda lo, hi: {"$gte": lo, "$lt": hi}, st.integers(0, 3), st.integers(0, 4)),
        st.builds(lambda v: {"$ne": v}, _values),
        st.builds(lambda v: {"$exists": v}, st.booleans()),
        st.builds(lambda v: {"$not": {"$gt": v}}, st.integers(0, 3)),
        st.builds(lambda v: {"$type": v}, st.sampled_from(["null", "number", "array", "string"])),
        st.just({"$elemMatch": {"$gt": 1}}),
        st.just({"$regex": "^x"}),
        st.builds(lambda a, b: {**a, **b}, st.builds(lambda v: {"$ne": v}, _scalars),
                  st.builds(lambda vs: {"$in": vs}, st.lists(_scalars, min_size=1, max_size=3))),
    )
    return st.one_of(_values, ops)


_filters = st.one_of(
    st.builds(lambda c: {"a": c}, _condition()),
    st.builds(lambda c, d: {"$and": [{"a": c}, {"a": d}]}, _condition(), _condition()),
    st.builds(lambda c, b: {"a": c, "b": b}, _condition(), st.sampled_from([None, 1, {"$exists": False}])),
    st.builds(lambda c, d: {"$or": [{"a": c}, {"a": d}]}, _condition(), _condition()),
)


@pytest.mark.slow
@HYPO
@given(filter=_filters)
def test_sparse_index_answers_what_a_collection_scan_answers(coll, filter):
    scanned = _ids(coll.find(filter).hint([("$natural", 1)]))
    assert _ids(coll.find(filter)) == scanned, (filter, _uses_sparse(coll, filter))
    assert coll.count_documents(filter) == len(scanned)


def test_time_series_sparse_meta_index_answers_what_a_scan_answers(db):
    """A time-series read plans its buckets index per read when one is sparse (no choice remembered by
    bounds shape alone): a null meta path must not be read through the sparse index."""
    import datetime

    db.create_collection("ts_sparse", timeseries={"timeField": "t", "metaField": "m"})
    c = db.ts_sparse
    t0 = datetime.datetime(2024, 1, 1)
    metas = [None, {}, {"a": None}, {"a": 1}, {"a": 2}, {"a": [1, 3]}]
    c.insert_many([{"t": t0 + datetime.timedelta(seconds=i), **({} if m is None else {"m": m}), "v": i}
                   for i, m in enumerate(metas * 3)])
    c.create_index([("m.a", 1)], sparse=True, name="ma_sparse")
    for filter in ({"m.a": 1}, {"m.a": None}, {"m.a": {"$gt": 1}}, {"m.a": {"$in": [2, None]}}, {"m.a": 1},
                   {"m.a": None}):
        got = sorted(d["v"] for d in c.find(filter))
        assert got == sorted(d["v"] for d in c.find(filter).hint([("$natural", 1)])), filter
