"""Reads of a time-series collection find in-memory buckets by meta point (issue 23.2: a read of one
series among a million cost O(in-memory buckets); the catalog now keeps them by the (path, string /
ObjectId / bool) leaves of their meta and a filter whose meta must equal such a value looks them up).

The property: for any metas (scalars of every type, objects in any field order, arrays, missing, null),
buckets stored or in memory, a collection collation or none, and any equality / ``$in`` filter on the
meta or a meta subfield (alone, in a conjunction, with a time window), the documents found are exactly
those of the same filter inside an ``$or`` (a disjunction gives no point to look up: every in-memory
bucket is tested, as before)."""

from __future__ import annotations

import datetime as dt

import pytest
from bson import Int64, ObjectId
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.commands("find", "insert", "delete", "create", "drop", "explain")

T0 = dt.datetime(2024, 5, 1)
OIDS = (ObjectId("650000000000000000000001"), ObjectId("650000000000000000000002"))
# (few values, so that a query value often meets a meta equal to it under MongoDB's rules but not
# Python's — 1, 1.0 and Int64(1); True and 1 — or one differing only by case)
SCALARS = ("a", "A", "", OIDS[0], OIDS[1], True, False, 1, 1.0, Int64(1), None, dt.datetime(2024, 1, 1))
scalars = st.sampled_from(SCALARS)
objects = st.one_of(
    st.fixed_dictionaries({"h": scalars, "d": scalars}),
    st.fixed_dictionaries({"d": scalars, "h": scalars}),
    st.fixed_dictionaries({"h": scalars}),
    st.fixed_dictionaries({"h": st.fixed_dictionaries({"x": scalars})}),
    st.just({}),
)
metas = st.one_of(scalars, objects, st.just("MISSING"))
array_metas = st.one_of(st.lists(scalars, min_size=1, max_size=2), st.lists(objects, min_size=1, max_size=2))
query_values = st.one_of(scalars, objects, st.lists(scalars, max_size=2))


def _clause(path: str, values: list) -> dict:
    return {path: values[0]} if len(values) == 1 else {path: {"$in": values}}


clauses = st.builds(_clause, st.sampled_from(["m", "m.h", "m.d", "m.h.x"]),
                    st.lists(query_values, min_size=1, max_size=3))
filters = st.one_of(
    clauses,
    st.builds(lambda a, b: {"$and": [a, b]}, clauses, clauses),
    st.builds(lambda a: {**a, "t": {"$gte": T0, "$lt": T0 + dt.timedelta(minutes=30)}}, clauses),
    st.builds(lambda a: {**a, "v": {"$gte": 2}}, clauses),
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(first=st.lists(metas, min_size=1, max_size=8), later=st.lists(metas, max_size=6),
       arrays=st.lists(array_metas, max_size=2), store_first=st.booleans(), collated=st.booleans(),
       queries=st.lists(filters, min_size=1, max_size=6))
def test_a_meta_filter_finds_what_the_same_filter_in_a_disjunction_finds(db, first, later, arrays, store_first,
                                                                         collated, queries):
    db.drop_collection("c")
    options = {"collation": {"locale": "en", "strength": 2}} if collated else {}
    db.create_collection("c", timeseries={"timeField": "t", "metaField": "m"}, **options)
    coll = db["c"]

    def insert(series: list, minute: int) -> None:
        docs = []
        for i, meta in enumerate(series):
            doc = {"t": T0 + dt.timedelta(minutes=minute + i), "v": len(docs)}
            if meta != "MISSING":
                doc["m"] = meta
            docs.append(doc)
        if docs:
            coll.insert_many(docs)

    insert(first, 0)
    if store_first:
        coll.delete_many({"v": -1})  # a direct write: the buckets so far are stored (and left memory)
    insert(later + arrays, 10)  # in memory: some series' buckets reopened from storage
    insert(first[:2], 20)
    for query in queries:
        found = sorted((d["t"], d["v"]) for d in coll.find(query, {"_id": 0}))
        every = sorted((d["t"], d["v"]) for d in coll.find({"$or": [query, {"never": 1}]}, {"_id": 0}))
        assert found == every, query


def test_a_series_read_examines_only_its_in_memory_buckets_and_not_with_an_array_meta_live(db):
    db.create_collection("c", timeseries={"timeField": "t", "metaField": "m"})
    coll = db["c"]
    coll.insert_many([{"t": T0, "m": {"h": f"h{i}", "d": "x"}, "v": i} for i in range(300)])

    def examined(query: dict) -> tuple[list, int]:
        stats = db.command("explain", {"find": "c", "filter": query}, verbosity="executionStats")
        stats = stats["stages"][0]["$cursor"]["executionStats"] if "stages" in stats else stats["executionStats"]
        return sorted(d["v"] for d in coll.find(query)), stats["totalDocsExamined"]

    assert examined({"m.h": "h7"}) == ([7], 1)
    assert examined({"m": {"d": "x", "h": "h7"}}) == ([7], 1)  # (through the {meta, time} index)
    assert examined({"m.h": {"$in": ["h7", "h9", "nope"]}, "m.d": "x"}) == ([7, 9], 2)
    assert examined({"m.h": {"$in": ["h7", 7]}})[1] == 300  # a number has no point: every bucket tested
    assert examined({"m.h": {"$regex": "^h7$"}}) == ([7], 300)
    coll.insert_one({"t": T0, "m": ["h7"], "v": 1000})  # an array meta in memory: an equality may match it
    assert examined({"m": "h7"}) == ([1000], 301)


def test_under_a_collation_a_series_read_tests_every_in_memory_bucket(db):
    """Strings equal under the collection's collation are different points: no lookup by point then."""
    db.create_collection("c", timeseries={"timeField": "t", "metaField": "m"},
                         collation={"locale": "en", "strength": 2})
    coll = db["c"]
    coll.insert_many([{"t": T0, "m": "A", "v": 1}, {"t": T0, "m": {"h": "A"}, "v": 2}, {"t": T0, "m": "b", "v": 3}])
    assert [d["v"] for d in coll.find({"m": "a"})] == [1]
    assert [d["v"] for d in coll.find({"m.h": {"$in": ["a", "z"]}})] == [2]
    assert [d["v"] for d in coll.find({"m": "a"}).collation({"locale": "simple"})] == []


TRAPS = [  # (metas of in-memory buckets, a filter): values equal under MongoDB's rules but not Python's
    ([1.0, {"h": 1.0}, Int64(1)], {"m": 1}),
    ([1, {"h": Int64(1)}], {"m.h": 1.0}),
    ([True, 1, {"h": True}], {"m": {"$in": [True, "x"]}}),
    ([["a", "b"], "a"], {"m": "a"}),
    ([{"h": ["a"]}, {"h": "a"}], {"m.h": "a"}),
    ([{"h": {"x": "a"}}, {"h": "a"}], {"m.h.x": "a"}),
    ([{"d": "x", "h": "a"}], {"m": {"h": "a", "d": "x"}}),  # stored field order is sorted: no match
    ([{"d": "x", "h": "a"}], {"m": {"d": "x", "h": "a"}}),
    ([None, {"h": None}, {}], {"m.h": None}),
]


@pytest.mark.parametrize(("metas", "query"), TRAPS)
def test_a_meta_filter_finds_what_the_same_filter_in_a_disjunction_finds_for_known_traps(db, metas, query):
    db.create_collection("c", timeseries={"timeField": "t", "metaField": "m"})
    coll = db["c"]
    coll.insert_many([{"t": T0, "m": meta, "v": i} for i, meta in enumerate(metas)])
    found = sorted(d["v"] for d in coll.find(query))
    assert found == sorted(d["v"] for d in coll.find({"$or": [query, {"never": 1}]}))
    assert found or query == {"m": {"h": "a", "d": "x"}}
