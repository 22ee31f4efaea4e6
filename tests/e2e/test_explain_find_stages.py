"""A find's explain stages as mongod 7.0's planner analysis builds them (query_planner_analysis.cpp,
analyzeSort / analyzeDataAccess / tryPushdownProjectBeneathSort), over the access path:

- a blocking sort is ``SORT {sortPattern, memLimit, [limitAmount], type}``: ``memLimit`` the server's
  internalQueryMaxBlockingSortMemoryUsageBytes, ``type`` simple over fetched documents (default with a
  ``$meta`` key), and a limit becomes its top-k ``limitAmount`` = skip + limit with no LIMIT stage;
- SKIP sits over the sort, the projection (or RETURN_KEY) over SKIP, LIMIT on top;
- a projection is PROJECTION_SIMPLE when it includes top-level fields by flags alone, else
  PROJECTION_DEFAULT; a flags-only projection that keeps every sort field goes beneath a full sort.

The documents a find returns do not depend on any of this: each case also checks them.
"""

from __future__ import annotations

import datetime

import pytest
from bson import ObjectId
from harness.jstests import plan_stages
from harness.parameters import server_parameter
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.commands("explain", "find")

MEM = 104857600


def _plan(db, verbosity: str = "queryPlanner", **find) -> dict:
    return db.command({"explain": {"find": "c", **find}, "verbosity": verbosity})["queryPlanner"]["winningPlan"]


@pytest.fixture
def docs(db):
    db.c.insert_many([{"_id": i, "a": i % 4, "b": {"c": i}, "x": 10 - i} for i in range(10)])
    return db


def test_blocking_sort_stage_fields(docs):
    sort = _plan(docs, sort={"a": 1, "x": -1})
    assert sort == {"stage": "SORT", "sortPattern": {"a": 1, "x": -1}, "memLimit": MEM, "type": "simple",
                    "inputStage": {"stage": "COLLSCAN", "filter": {}, "direction": "forward"}}


def test_limit_becomes_the_sorts_top_k_and_skip_sits_above(docs):
    assert plan_stages(_plan(docs, sort={"x": 1}, limit=3)) == ["SORT", "COLLSCAN"]
    assert _plan(docs, sort={"x": 1}, limit=3)["limitAmount"] == 3
    skipped = _plan(docs, sort={"x": 1}, skip=2, limit=3)
    assert plan_stages(skipped) == ["SKIP", "SORT", "COLLSCAN"]
    assert (skipped["skipAmount"], skipped["inputStage"]["limitAmount"]) == (2, 5)
    assert [d["_id"] for d in docs.c.find(sort=[("x", 1)], skip=2, limit=3)] == [7, 6, 5]


def test_limit_without_a_blocking_sort_is_on_top(docs):
    assert plan_stages(_plan(docs, skip=1, limit=2)) == ["LIMIT", "SKIP", "COLLSCAN"]
    docs.c.create_index("x")
    provided = _plan(docs, sort={"x": 1}, limit=2, projection={"x": 1})
    assert plan_stages(provided) == ["LIMIT", "PROJECTION_SIMPLE", "FETCH", "IXSCAN"]
    assert list(docs.c.find({}, {"x": 1}, sort=[("x", 1)], limit=2)) == [{"_id": 9, "x": 1}, {"_id": 8, "x": 2}]


def test_projection_goes_beneath_a_full_sort_that_it_keeps(docs):
    assert plan_stages(_plan(docs, sort={"a": 1}, projection={"a": 1})) == ["SORT", "PROJECTION_SIMPLE", "COLLSCAN"]
    assert plan_stages(_plan(docs, sort={"a": 1}, skip=1, projection={"a": 1})) == \
        ["SKIP", "SORT", "PROJECTION_SIMPLE", "COLLSCAN"]
    assert plan_stages(_plan(docs, sort={"a": 1}, projection={"x": 0})) == ["SORT", "PROJECTION_DEFAULT", "COLLSCAN"]
    # not when it drops a sort field, computes a value, or the sort is top-k
    assert plan_stages(_plan(docs, sort={"a": 1}, projection={"x": 1})) == ["PROJECTION_SIMPLE", "SORT", "COLLSCAN"]
    assert plan_stages(_plan(docs, sort={"a": 1}, projection={"a": 0})) == ["PROJECTION_DEFAULT", "SORT", "COLLSCAN"]
    assert plan_stages(_plan(docs, sort={"a": 1}, projection={"a": 1, "y": {"$add": [1, 2]}})) == \
        ["PROJECTION_DEFAULT", "SORT", "COLLSCAN"]
    assert plan_stages(_plan(docs, sort={"a": 1}, limit=2, projection={"a": 1})) == \
        ["PROJECTION_SIMPLE", "SORT", "COLLSCAN"]
    assert plan_stages(_plan(docs, sort={"b.c": 1}, projection={"b": 1})) == ["SORT", "PROJECTION_SIMPLE", "COLLSCAN"]
    assert list(docs.c.find({}, {"a": 1}, sort=[("a", -1), ("_id", 1)], limit=3)) == [
        {"_id": 3, "a": 3}, {"_id": 7, "a": 3}, {"_id": 2, "a": 2}]


def test_memory_limit_is_the_server_parameter(docs):
    with server_parameter(docs.client, "internalQueryMaxBlockingSortMemoryUsageBytes", 1 << 20):
        assert _plan(docs, sort={"a": 1})["memLimit"] == 1 << 20


def test_meta_sort_is_a_default_sort(docs):
    docs.c.insert_one({"_id": 20, "t": "hello world"})
    docs.c.create_index([("t", "text")])
    plan = _plan(docs, filter={"$text": {"$search": "hello"}}, sort={"s": {"$meta": "textScore"}},
                 projection={"s": {"$meta": "textScore"}})
    sort = next(p for p in _walk(plan) if p["stage"] == "SORT")
    assert sort["type"] == "default"


def _walk(plan: dict):
    while plan:
        yield plan
        plan = plan.get("inputStage")


@pytest.mark.parametrize("projection, stage", [
    ({"a": 1}, "PROJECTION_SIMPLE"), ({"a": True, "x": 1}, "PROJECTION_SIMPLE"), ({"_id": 0, "a": 1}, "PROJECTION_SIMPLE"),
    ({"_id": 1}, "PROJECTION_SIMPLE"), ({"a": 0}, "PROJECTION_DEFAULT"), ({"_id": 0}, "PROJECTION_DEFAULT"),
    ({"b.c": 1}, "PROJECTION_DEFAULT"), ({"b": {"c": 1}}, "PROJECTION_DEFAULT"), ({"a": {"$slice": 1}}, "PROJECTION_DEFAULT"),
    ({"y": {"$add": ["$a", 1]}}, "PROJECTION_DEFAULT"), ({"y": "lit"}, "PROJECTION_DEFAULT"),
    ({"b": {"$elemMatch": {"c": 1}}}, "PROJECTION_DEFAULT"),
])
def test_projection_stage_name(docs, projection, stage):
    assert _plan(docs, projection=projection)["stage"] == stage


SORTS = st.sampled_from([None, {"a": 1}, {"x": -1}, {"a": 1, "_id": -1}, {"b.c": 1}])
PROJECTIONS = st.sampled_from([None, {"a": 1}, {"x": 1}, {"_id": 0, "a": 1}, {"a": 0}, {"b": 1}, {"b.c": 1},
                               {"y": {"$add": ["$a", 1]}}])


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sort=SORTS, projection=PROJECTIONS, skip=st.sampled_from([0, 0, 3]), limit=st.sampled_from([0, 0, 2, 5]))
def test_find_stage_family(docs, sort, projection, skip, limit):
    """Whatever the stages, the SORT/SKIP/LIMIT amounts are consistent with the options, there is exactly
    one of each stage asked for, and the documents are the find's."""
    find: dict = {"skip": skip, "limit": limit}
    if sort:
        find["sort"] = sort
    if projection:
        find["projection"] = projection
    plan = _plan(docs, **find)
    stages = plan_stages(plan)
    by_stage = {p["stage"]: p for p in _walk(plan)}
    assert stages[-1] == "COLLSCAN"
    assert ("SORT" in by_stage) == bool(sort)
    if sort:
        assert by_stage["SORT"].get("limitAmount") == (skip + limit if limit else None)
        assert "LIMIT" not in by_stage
    else:
        assert ("LIMIT" in by_stage) == bool(limit) and (stages[0] == "LIMIT" or not limit)
    assert ("SKIP" in by_stage) == bool(skip)
    assert any(s.startswith("PROJECTION") for s in stages) == bool(projection)
    got = docs.command("find", "c", **find)["cursor"]["firstBatch"]
    expected = list(docs.c.aggregate([{"$sort": sort or {"_id": 1}}, *([{"$skip": skip}] if skip else []),
                                      *([{"$limit": limit}] if limit else []),
                                      *([{"$project": projection}] if projection else [])]))
    if sort:
        assert [_sorted_key(d, sort) for d in got] == [_sorted_key(d, sort) for d in expected]
    else:
        assert len(got) == len(expected)


def _sorted_key(doc: dict, sort: dict) -> tuple:
    out = []
    for path in sort:
        value = doc
        for part in path.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        out.append(value)
    return tuple(out)


@pytest.mark.commands("distinct")
@pytest.mark.parametrize("key, transform", [
    ("a", {"_id": 0, "a": 1}), ("_id", {"_id": 1}), ("b.c", {"_id": 0, "b.c": 1}), ("b.2.c", {"_id": 0, "b": 1}),
    ("b.-1", {"_id": 0, "b.-1": 1}), ("_id.x", {"_id.x": 1}), ("2.a", {"_id": 0, "2.a": 1}),
])
def test_distinct_reads_through_its_key_projection(docs, key, transform):
    """mongod runs a distinct as a find of its key's projection (parsed_distinct's getDistinctProjection:
    ``{_id: 0, key: 1}``, ``{_id: 1}`` for ``_id``, a dotted key cut before its first array index, ``_id``
    kept under it); without a DISTINCT_SCAN its plan is that PROJECTION over the find's access path, and
    executionStats count the documents read."""
    reply = docs.command({"explain": {"distinct": "c", "key": key, "query": {"a": {"$gte": 1}}},
                          "verbosity": "executionStats"})
    plan = reply["queryPlanner"]["winningPlan"]
    expected_stage = "PROJECTION_SIMPLE" if all("." not in f for f in transform) else "PROJECTION_DEFAULT"
    assert (plan["stage"], plan["transformBy"], plan["inputStage"]["stage"]) == (expected_stage, transform, "COLLSCAN")
    assert reply["executionStats"]["nReturned"] == docs.c.count_documents({"a": {"$gte": 1}})
    by_id = docs.command({"explain": {"distinct": "c", "key": key, "query": {"_id": 3}}})
    assert by_id["queryPlanner"]["winningPlan"]["inputStage"] == {"stage": "IDHACK"}


@pytest.mark.commands("count")
def test_count_without_a_query_is_a_record_store_count(docs):
    """getExecutorCount: a count with an empty query and no hint asks the collection for its number of
    records (RECORD_STORE_FAST_COUNT, nothing examined), as the count command itself does; skip and limit
    apply to that number. With a hint or a query it counts through a plan."""
    reply = docs.command({"explain": {"count": "c", "skip": 2, "limit": 5}, "verbosity": "executionStats"})
    assert reply["queryPlanner"]["winningPlan"] == {"stage": "RECORD_STORE_FAST_COUNT"}
    stages = reply["executionStats"]["executionStages"]
    assert (stages["stage"], stages["nCounted"], stages["nSkipped"]) == ("RECORD_STORE_FAST_COUNT", 5, 2)
    assert reply["executionStats"]["totalDocsExamined"] == reply["executionStats"]["totalKeysExamined"] == 0
    assert docs.command("count", "c", skip=2, limit=5)["n"] == 5
    hinted = docs.command({"explain": {"count": "c", "hint": {"_id": 1}}})["queryPlanner"]["winningPlan"]
    assert hinted["stage"] == "COUNT" and hinted["inputStage"]["stage"] != "RECORD_STORE_FAST_COUNT"
    missing = docs.command({"explain": {"count": "nothing"}})["queryPlanner"]["winningPlan"]
    assert missing == {"stage": "COUNT", "inputStage": {"stage": "EOF", "type": "nonExistentNamespace"}}


# -- indexBounds of a range open on one side ---------------------------------------------------------
# mongod's IndexBoundsBuilder closes the open side at the end of the value's type bracket
# (appendMinForType / appendMaxForType; -inf / inf for numbers): {$gt: 5} is "(5, inf.0]", not
# "(5, MaxKey]" as Tidemark showed (found checking kombu's plans). The scan itself always stayed inside
# the bracket; the family checks both the strings and the documents.

def _show(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return f'"{v}"'
    if isinstance(v, datetime.datetime):
        return f"new Date({int((v - datetime.datetime(1970, 1, 1)).total_seconds() * 1000)})"
    if isinstance(v, ObjectId):
        return f"ObjectId('{v}')"
    return str(v)


_BRACKETS = {  # type -> ((min shown, inclusive), (max shown, inclusive))
    int: (("-inf.0", True), ("inf.0", True)),
    float: (("-inf.0", True), ("inf.0", True)),
    str: (('""', True), ("{}", False)),
    bool: (("false", True), ("true", True)),
    datetime.datetime: (("new Date(-9223372036854775808)", True), ("new Date(9223372036854775807)", True)),
    ObjectId: ((f"ObjectId('{'0' * 24}')", True), (f"ObjectId('{'f' * 24}')", True)),
}
_RANGE_VALUES = st.one_of(st.integers(-5, 5), st.sampled_from([2.5, -1.5]), st.sampled_from(["b", "m", ""]),
                          st.booleans(), st.sampled_from([datetime.datetime(2024, 1, 1), datetime.datetime(1969, 7, 20)]),
                          st.sampled_from([ObjectId("0" * 24), ObjectId("5" * 24)]))
_STORED = [-3, 0, 2, 2.5, 7, "", "a", "m", "z", False, True, datetime.datetime(2000, 1, 1), datetime.datetime(2030, 1, 1),
           ObjectId("1" * 24), ObjectId("9" * 24), None, {"x": 1}, [1, 9]]


def _model_interval(op, value, direction):
    low, high = _BRACKETS[type(value)]
    if op in ("$gt", "$gte"):
        lo, lo_incl, hi, hi_incl = _show(value), op == "$gte", *high
    else:
        (lo, lo_incl), hi, hi_incl = low, _show(value), op == "$lte"
    if direction == -1:
        lo, lo_incl, hi, hi_incl = hi, hi_incl, lo, lo_incl
    return f"{'[' if lo_incl else '('}{lo}, {hi}{']' if hi_incl else ')'}"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(op=st.sampled_from(["$gt", "$gte", "$lt", "$lte"]), value=_RANGE_VALUES, direction=st.sampled_from([1, -1]))
def test_one_sided_range_bounds_family(db, op, value, direction):
    db.drop_collection("bounds")
    db.bounds.create_index([("a", direction)])
    db.bounds.insert_many([{"_id": i, "a": v} for i, v in enumerate(_STORED)])
    plan = db.command("explain", {"find": "bounds", "filter": {"a": {op: value}}},
                      verbosity="queryPlanner")["queryPlanner"]["winningPlan"]
    while "indexBounds" not in plan:
        plan = plan["inputStage"]
    assert plan["indexBounds"] == {"a": [_model_interval(op, value, direction)]}
    # the documents: those whose value (an array's element) has the value's canonical type and compares
    number = (int, float)
    same = (lambda v: isinstance(v, number) and not isinstance(v, bool)) if type(value) in number else \
        (lambda v: type(v) is type(value))
    compare = {"$gt": lambda v: v > value, "$gte": lambda v: v >= value,
               "$lt": lambda v: v < value, "$lte": lambda v: v <= value}[op]
    expected = sorted(i for i, v in enumerate(_STORED)
                      if any(same(e) and compare(e) for e in (v if isinstance(v, list) else [v])))
    assert sorted(d["_id"] for d in db.bounds.find({"a": {op: value}})) == expected
