"""A count the index alone answers is mongod's COUNT_SCAN (profile_count.js; its
``turnIxscanIntoCount``): planSummary ``COUNT_SCAN { a: 1 }``, every index entry read plus the read that
finds the interval's end as keysExamined, no document examined; COUNT over COUNT_SCAN in explain. The
pure part (which plans become one, and the bounds explain shows) in process; end to end, the profile
entry and explain of profile_count.js, and over small random collections, indexes, filters, skips and
limits: a count answers what a find finds, whichever scan it runs."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
from bson.max_key import MaxKey
from bson.min_key import MinKey
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tidemark.query import plan as planner
from tidemark.query.collation import parse_collation
from tidemark.query.count_scan import count_scan_of
from tidemark.query.index_keys import MULTIKEY_FLAG

A = {"name": "a_1", "key": {"a": 1}}
A_DESC = {"name": "a_-1", "key": {"a": -1}}
AB = {"name": "a_1_b_1", "key": {"a": 1, "b": 1}}
INFO = SimpleNamespace(clustered=False)


def _scan(index: dict, flt: dict, collation=None, hint=None):
    plan = planner.choose_plan([index], flt, None, hint, multikey_default=False, allow_or=True,
                               collation=parse_collation(collation, "collation") if collation else None)
    return count_scan_of(plan, flt, INFO)


@pytest.mark.parametrize("index, flt, start, end", [
    (A, {"a": {"$gte": 5}}, ({"a": 5}, True), ({"a": math.inf}, True)),
    (A, {"a": {"$lt": 5}}, ({"a": -math.inf}, True), ({"a": 5}, False)),
    (A, {"a": {"$gt": 1, "$lte": 4}}, ({"a": 1}, False), ({"a": 4}, True)),
    (A, {"a": 3}, ({"a": 3}, True), ({"a": 3}, True)),
    (A, {"a": {"$eq": "x"}}, ({"a": "x"}, True), ({"a": "x"}, True)),
    (A, {"a": {"$gte": "b"}}, ({"a": "b"}, True), ({"a": {}}, False)),
    (A_DESC, {"a": {"$gte": 5}}, ({"a": math.inf}, True), ({"a": 5}, True)),
    (AB, {"a": 3}, ({"a": 3, "b": MinKey()}, True), ({"a": 3, "b": MaxKey()}, True)),
    (AB, {"a": {"$gt": 3}}, ({"a": 3, "b": MaxKey()}, False), ({"a": math.inf, "b": MaxKey()}, True)),
    (AB, {"a": 3, "b": {"$lt": 2}}, ({"a": 3, "b": -math.inf}, True), ({"a": 3, "b": 2}, False)),
    (A, {"a": {"$in": [4]}}, ({"a": 4}, True), ({"a": 4}, True)),  # (one point: one interval)
    ({**A, "partialFilterExpression": {"a": {"$gt": 0}}}, {"a": {"$gte": 2}}, ({"a": 2}, True), ({"a": math.inf}, True)),
    ({**A, "collation": {"locale": "fr"}}, {"a": 1}, ({"a": 1}, True), ({"a": 1}, True)),  # (numbers: as they are)
    (A, {"a": {"$lt": True}}, ({"a": False}, True), ({"a": True}, False)),
    (A, {"a": 1.1}, ({"a": 1.1}, True), ({"a": 1.1}, True)),  # (a double's key is its exact value)
])
def test_a_count_the_bounds_answer_is_a_count_scan_of_one_interval(index, flt, start, end):
    scan = _scan(index, flt)
    assert scan is not None and scan.plan.kind == "COUNT_SCAN" and not scan.dedup
    assert ((scan.start, scan.start_inclusive), (scan.end, scan.end_inclusive)) == (start, end)
    bounds = scan.explain()["indexBounds"]
    assert (bounds["startKey"], bounds["endKey"]) == (start[0], end[0])


@pytest.mark.parametrize("index, flt", [
    (A, {"a": {"$in": [1, 2]}}),  # several intervals
    (A, {"a": {"$gte": 1}, "b": 2}),  # a field the index does not hold: a FETCH filter
    (A, {"a": {"$gte": 1, "$lt": "z"}}),  # two type brackets
    (A, {"a": {"$ne": 1}}),
    (A, {"a": None}),
    (A, {"a": [1, 2]}),
    (A, {"a": {"b": 1}}),
    (A, {"a": {"$gt": float("nan")}}),  # (no interval to mongod; $gte NaN is the point NaN)
    (A, {"a": {"$regex": "^x"}}),
    (A, {"$or": [{"a": 1}, {"a": 2}]}),
    (A, {"a.0": 1}),
    (AB, {"a": {"$gt": 3}, "b": 1}),  # a bounded field after the range
    ({**A, MULTIKEY_FLAG: True}, {"a": {"$gt": 1, "$lt": 5}}),  # multikey: two operators, not intersected
    ({"name": "ab", "key": {"a.x": 1, "a.y": 1}, MULTIKEY_FLAG: True}, {"a.x": 1, "a.y": 2}),  # (SERVER-958)
    ({**A, "collation": {"locale": "fr"}}, {"a": "x"}),  # (a collated string's key is not the string)
    ({"name": "a_hashed", "key": {"a": "hashed"}}, {"a": 1}),
    (A, {"a": {"$exists": True}}),
    (A, {"a": 1, "$expr": {"$eq": ["$a", 1]}}),
])
def test_a_count_the_bounds_do_not_answer_scans_the_index(index, flt):
    assert _scan(index, flt) is None


def test_strings_count_by_the_index_only_under_the_simple_collation():
    assert _scan(A, {"a": "x"}) is not None
    assert _scan(A, {"a": "x"}, collation={"locale": "fr"}) is None
    assert _scan(A, {"a": 1}, collation={"locale": "fr"}) is not None  # numbers compare alike


def test_a_multikey_index_counts_each_document_once():
    scan = _scan({**A, MULTIKEY_FLAG: True}, {"a": {"$gte": 2}})
    assert scan is not None and scan.dedup and "multiKeyPaths" not in scan.explain()
    scan = _scan({**AB, MULTIKEY_FLAG: True}, {"a": 1, "b": {"$in": [2]}})
    assert scan is not None and scan.dedup and (scan.start, scan.end) == ({"a": 1, "b": 2}, {"a": 1, "b": 2})


def test_a_hinted_count_without_a_query_counts_the_whole_index():
    scan = _scan(A, {}, hint={"a": 1})
    assert scan is not None and (scan.start, scan.end) == ({"a": MinKey()}, {"a": MaxKey()})
    scan = _scan({**A, "sparse": True}, {"a": 1}, hint={"a": 1})  # (what the sparse index holds, as mongod)
    assert scan is not None and (scan.start, scan.end) == ({"a": 1}, {"a": 1}) and scan.explain()["isSparse"]


# --------------------------------------------------------------------------------------------------
# end to end


def test_profiled_indexed_count_is_a_count_scan(db):
    db.test.insert_many([{"a": i} for i in range(10)])
    db.test.create_index("a")
    db.command("profile", 2)
    try:
        assert db.command("count", "test", query={"a": {"$gte": 5}})["n"] == 5
        entry = next(db.system.profile.find({"command.count": "test"}).sort("$natural", -1).limit(1))
    finally:
        db.command("profile", 0)
    assert (entry["keysExamined"], entry["docsExamined"], entry["planSummary"]) == (6, 0, "COUNT_SCAN { a: 1 }")


def test_explained_count_scan(db):
    db.test.insert_many([{"a": i} for i in range(10)])
    db.test.create_index("a")
    reply = db.command("explain", {"count": "test", "query": {"a": {"$gte": 5}}, "limit": 3, "skip": 1},
                       verbosity="executionStats")
    win = reply["queryPlanner"]["winningPlan"]
    assert win["stage"] == "COUNT" and win["inputStage"]["stage"] == "COUNT_SCAN"
    assert win["inputStage"]["indexBounds"] == {"startKey": {"a": 5}, "startKeyInclusive": True,
                                                "endKey": {"a": math.inf}, "endKeyInclusive": True}
    stats = reply["executionStats"]
    assert (stats["totalKeysExamined"], stats["totalDocsExamined"], stats["nReturned"]) == (4, 0, 0)
    stages = stats["executionStages"]
    assert (stages["nCounted"], stages["nSkipped"], stages["inputStage"]["keysExamined"]) == (3, 1, 4)
    whole = db.command("explain", {"count": "test", "query": {"a": {"$gte": 5}}}, verbosity="executionStats")
    assert (whole["executionStats"]["totalKeysExamined"], whole["executionStats"]["executionStages"]["nCounted"]) == (
        6, 5)


FAMILY = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
VALUES = st.one_of(st.integers(0, 6), st.sampled_from([2.5, "a", "b", None, True]),
                   st.lists(st.integers(0, 6), min_size=1, max_size=3))
INDEXES = st.sampled_from([[("a", 1)], [("a", -1)], [("a", 1), ("b", 1)], [("b", 1), ("a", -1)]])


@st.composite
def filters(draw):
    def cond():
        op = draw(st.sampled_from(["eq", "$gt", "$gte", "$lt", "$lte", "range", "$in", "$ne", "$eq"]))
        value = draw(st.one_of(st.integers(0, 6), st.sampled_from(["a", "b", 2.5])))
        if op == "eq":
            return value
        if op == "range":
            return {"$gt": value, "$lte": draw(st.integers(0, 6))}
        if op == "$in":
            return {"$in": [value, draw(st.integers(0, 6))]}
        return {op: value}

    fields = draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=2, unique=True))
    return {f: cond() for f in fields}


@FAMILY
@given(st.lists(st.fixed_dictionaries({"a": VALUES, "b": st.integers(0, 3)}), max_size=10), INDEXES, filters(),
       st.integers(0, 3), st.integers(0, 4))
def test_a_count_answers_what_a_find_finds(db, docs, index, flt, skip, limit):
    db.c.drop()
    db.c.create_index(index)
    if docs:
        db.c.insert_many([dict(d) for d in docs])
    found = len(list(db.c.find(flt)))
    expected = max(0, found - skip)
    if limit:
        expected = min(expected, limit)
    assert db.command("count", "c", query=flt, skip=skip, limit=limit)["n"] == expected
    explained = db.command("explain", {"count": "c", "query": flt, "skip": skip, "limit": limit},
                           verbosity="executionStats")["executionStats"]
    assert explained["executionStages"]["nCounted"] == expected


SUBDOCS = st.one_of(st.fixed_dictionaries({"x": VALUES}), st.lists(st.fixed_dictionaries({"x": VALUES}), max_size=2),
                    st.lists(st.lists(st.fixed_dictionaries({"x": VALUES}), max_size=2), max_size=2), st.just({}))


@FAMILY
@given(st.lists(st.fixed_dictionaries({"d": SUBDOCS}), max_size=8), st.sampled_from([1, -1]),
       st.sampled_from(["eq", "$gt", "$gte", "$lt", "$lte", "$eq"]), st.one_of(st.integers(0, 6), st.just("a")))
def test_a_count_over_a_dotted_path_answers_what_a_find_finds(db, docs, direction, op, value):
    db.c.drop()
    db.c.create_index([("d.x", direction)])
    if docs:
        db.c.insert_many([dict(d) for d in docs])
    flt = {"d.x": value if op == "eq" else {op: value}}
    assert db.command("count", "c", query=flt)["n"] == len(list(db.c.find(flt)))
