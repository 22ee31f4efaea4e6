"""Every command that reads through an index re-checks a fetched document against the same thing: what
the plan's index bounds leave undecided of its filter (``query.fetch_filter``: ``Plan.residual``,
mongod's FETCH filter), and a count whose filter the bounds decide entirely, over one interval, is
mongod's COUNT_SCAN (the same rule: ``count_scan.count_scan_of`` asks for an empty residual).

The family: random conjunctions over indexed fields (equalities, ``$in``, one- and two-sided ranges on
numbers of every type and strings, null, ``$ne``, ``$exists``, ``$type``, ``$expr``) through single, descending,
compound, multikey, collated, sparse and partial indexes, run by find, aggregate (a leading ``$match``),
count, distinct, update (a marker ``$set``), delete and findAndModify, each compared with the same
command hinted ``{$natural: 1}`` (a collection scan, which applies the whole filter). The collections
hold more matching documents than a read tests with its whole filter before it compiles the residual
(``RESIDUAL_AFTER``), so both predicates run. Then explain: COUNT_SCAN for the shapes mongod turns into
one, not for the others, and the residual as the FETCH filter of an aggregate, an update and a delete."""

from __future__ import annotations

import itertools
import math

import pytest
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.max_key import MaxKey
from bson.min_key import MinKey
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tidemark.query.fetch_filter import RESIDUAL_AFTER

COLLATION = {"locale": "en", "strength": 2}

# (name, index keys, index options, whether the documents hold arrays in "a", the commands' collation)
_SETUPS = [
    ("single", [("a", 1)], {}, False, None),
    ("descending", [("a", -1)], {}, False, None),
    ("compound", [("a", 1), ("b", 1)], {}, False, None),
    ("compound_b_first", [("b", 1), ("a", -1)], {}, False, None),
    ("multikey", [("a", 1)], {}, True, None),
    ("multikey_compound", [("b", 1), ("a", 1)], {}, True, None),
    ("collated", [("s", 1), ("a", 1)], {"collation": COLLATION}, False, COLLATION),
    ("collated_simple_query", [("a", 1), ("s", 1)], {"collation": COLLATION}, False, None),
    ("sparse", [("a", 1)], {"sparse": True}, False, None),
    ("partial", [("a", 1)], {"partialFilterExpression": {"b": {"$gt": 0}}}, False, None),
]

_NUMBERS = [0, 1, 2, 2.0, Int64(2), Decimal128("2"), 2.5, 3, -1, 0.1, float("nan")]
_STRINGS = ["x", "X", "y", ""]
_SCALARS = st.sampled_from(_NUMBERS + _STRINGS + [None, True])


@st.composite
def _documents(draw, arrays: bool):
    a_values = st.one_of(_SCALARS, st.lists(_SCALARS, min_size=1, max_size=3)) if arrays else _SCALARS
    docs = draw(st.lists(st.fixed_dictionaries(
        {"a": a_values, "b": st.integers(-1, 3), "s": st.sampled_from(_STRINGS)},
        optional={"c": st.integers(0, 2)}), min_size=1, max_size=8))
    for d in draw(st.lists(st.integers(0, len(docs) - 1), max_size=2)):  # some without "a"
        docs[d] = {k: v for k, v in docs[d].items() if k != "a"}
    return docs


def _condition(draw, values):
    kind = draw(st.sampled_from(["eq", "$eq", "$in", "$gt", "$gte", "$lt", "$lte", "range", "$ne", "$exists", "$type"]))
    value = draw(values)
    if kind == "eq":
        return value
    if kind == "$in":
        return {"$in": draw(st.lists(values, min_size=1, max_size=3))}
    if kind == "range":
        return {draw(st.sampled_from(["$gt", "$gte"])): value, draw(st.sampled_from(["$lt", "$lte"])): draw(values)}
    if kind == "$exists":
        return {"$exists": draw(st.booleans())}
    if kind == "$type":
        return {"$type": draw(st.sampled_from(["number", "int", "double", "string", "null", "bool", ["number"],
                                               ["string", "null"], "array"]))}
    return {kind: value}


@st.composite
def _filters(draw):
    values = {"a": _SCALARS, "b": st.integers(-1, 3), "s": st.sampled_from(_STRINGS), "c": st.integers(0, 2)}
    fields = draw(st.lists(st.sampled_from(list(values)), min_size=1, max_size=3, unique=True))
    flt = {f: _condition(draw, values[f]) for f in fields}
    if draw(st.integers(0, 5)) == 0:
        flt["$expr"] = {"$gte": ["$b", draw(st.integers(-1, 3))]}
    return flt


def _ids(docs) -> list:
    return sorted(d["_id"] for d in docs)


def _load(db, setup, docs) -> int:
    name, keys, options, _arrays, _collation = setup
    db.c.drop()
    db.c.create_index(keys, name="ix", **options)
    # enough copies that a read passes RESIDUAL_AFTER documents and compiles the residual
    copies = RESIDUAL_AFTER // len(docs) + 2
    db.c.insert_many([{**d, "_id": i} for i, d in enumerate(itertools.chain.from_iterable([docs] * copies))])
    return len(docs) * copies


FAMILY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                         HealthCheck.too_slow])


@pytest.mark.slow
@pytest.mark.commands("find", "aggregate", "count", "distinct", "update", "delete", "findAndModify")
@FAMILY
@given(data=st.data(), setup=st.sampled_from(_SETUPS), flt=_filters())
def test_every_reader_answers_as_its_collection_scan(db, data, setup, flt):
    docs = data.draw(_documents(setup[3]))
    _load(db, setup, docs)
    collation = setup[4]
    opts = {"collation": collation} if collation else {}
    natural = {"$natural": 1}

    expected = _ids(db.c.find(flt, hint=natural, **opts))
    assert _ids(db.c.find(flt, **opts)) == expected, flt
    assert _ids(db.c.aggregate([{"$match": flt}], **opts)) == expected, flt
    assert _ids(db.c.aggregate([{"$match": flt}, {"$project": {"_id": 1}}], hint=natural, **opts)) == expected
    assert db.command("count", "c", query=flt, **opts)["n"] == len(expected), flt
    assert db.command("count", "c", query=flt, hint=natural, **opts)["n"] == len(expected), flt
    distinct = db.command("distinct", "c", key="b", query=flt, **opts)["values"]
    assert sorted(distinct) == sorted(db.command("distinct", "c", key="b", query=flt, hint=natural, **opts)["values"])

    first = db.c.find_one_and_update(flt, {"$set": {"fam": 1}}, sort=[("_id", 1)], projection={"_id": 1}, **opts)
    assert (first and first["_id"]) == (expected[0] if expected else None), flt
    updated = db.c.update_many(flt, {"$set": {"mark": 1}}, **opts)
    assert updated.matched_count == len(expected), flt
    assert _ids(db.c.find({"mark": 1}, hint=natural)) == expected, flt
    deleted = db.c.delete_many(flt, **opts)
    assert deleted.deleted_count == len(expected), flt
    assert db.c.count_documents({"mark": 1}, hint=natural) == 0


def _count_plan(db, flt, **options) -> dict:
    return db.command("explain", {"count": "c", "query": flt, **options}, verbosity="queryPlanner")[
        "queryPlanner"]["winningPlan"]["inputStage"]


@pytest.mark.commands("explain", "count", "createIndexes")
@pytest.mark.parametrize("keys, options, arrays, flt, count_scan", [
    ([("a", 1)], {}, False, {"a": 5}, True),
    ([("a", 1)], {}, False, {"a": {"$gt": 2, "$lte": 8}}, True),
    ([("a", 1)], {}, False, {"a": {"$in": [5]}}, True),
    ([("a", 1)], {}, False, {"a": {"$in": [5, 6]}}, False),  # (two intervals: IXSCAN under COUNT)
    ([("a", 1)], {}, False, {"a": None}, False),  # (null's bounds hold missing and undefined: inexact)
    ([("a", 1)], {}, False, {"a": {"$exists": True}}, False),
    ([("a", 1)], {"sparse": True}, False, {"a": {"$exists": True}}, True),  # (EXACT: mongod's SERVER-12869)
    ([("a", 1)], {}, True, {"a": {"$type": "number"}}, True),
    ([("a", 1)], {}, False, {"a": {"$type": "double"}}, False),
    ([("a", 1)], {}, False, {"a": Decimal128("5")}, True),
    ([("a", 1)], {}, False, {"a": {"$lte": float("inf")}}, True),
    ([("a", 1)], {}, False, {"a": 5, "b": 1}, False),  # (b is no key field: a FETCH filter)
    ([("a", 1)], {}, False, {"a": 0.1}, True),  # (a double's key is its exact value: EXACT)
    ([("a", 1)], {}, True, {"a": 5}, True),  # multikey: EXACT, each document counted once
    ([("a", 1)], {}, True, {"a": {"$gte": 5}}, True),
    ([("a", 1)], {}, True, {"a": {"$gt": 2, "$lt": 8}}, False),  # (a range keeps one side)
    ([("a", 1), ("b", -1)], {}, False, {"a": 5, "b": {"$lt": 3}}, True),
    ([("a", 1), ("b", 1)], {}, False, {"a": {"$gt": 5}, "b": 1}, False),  # (a bounded field after a range)
    ([("s", 1)], {"collation": COLLATION}, False, {"s": "x"}, False),  # (a collated string's key)
    ([("a", 1)], {"collation": COLLATION}, False, {"a": 5}, True),  # (numbers are not collated)
])
def test_a_count_the_bounds_decide_over_one_interval_is_a_count_scan(db, keys, options, arrays, flt, count_scan):
    db.c.insert_many([{"_id": i, "a": [i % 7, 9] if arrays else i % 7, "b": i % 3, "s": "xX"[i % 2]}
                      for i in range(30)])
    db.c.create_index(keys, **options)
    collation = options.get("collation")
    plan = _count_plan(db, flt, **({"collation": collation} if collation else {}))
    assert (plan["stage"] == "COUNT_SCAN") is count_scan, plan
    expected = db.c.count_documents(flt, hint={"$natural": 1}, **({"collation": collation} if collation else {}))
    assert db.command("count", "c", query=flt, **({"collation": collation} if collation else {}))["n"] == expected
    if count_scan:
        assert plan["isMultiKey"] is arrays and plan["indexBounds"]["startKeyInclusive"] in (True, False)


@pytest.mark.commands("explain", "count")
def test_a_count_scan_shows_its_bounds_as_mongod(db):
    db.c.insert_many([{"_id": i, "a": i, "b": i % 2} for i in range(10)])
    db.c.create_index([("a", -1), ("b", 1)])
    # (a descending field's range in key order; the field after it as the range's ends include it)
    assert _count_plan(db, {"a": {"$gt": 4}})["indexBounds"] == {
        "startKey": {"a": math.inf, "b": MinKey()}, "startKeyInclusive": True,
        "endKey": {"a": 4, "b": MinKey()}, "endKeyInclusive": False}
    assert _count_plan(db, {"a": {"$lt": "m"}})["indexBounds"] == {
        "startKey": {"a": "m", "b": MaxKey()}, "startKeyInclusive": False,
        "endKey": {"a": "", "b": MaxKey()}, "endKeyInclusive": True}
    assert db.command("count", "c", query={"a": {"$gt": 4}})["n"] == 5


def _fetch_filter(plan: dict) -> dict | None:
    while plan is not None:
        if plan.get("stage") == "FETCH":
            return plan.get("filter")
        plan = plan.get("inputStage")
    raise AssertionError("no FETCH stage")


@pytest.mark.commands("explain", "aggregate", "update", "delete", "findAndModify")
def test_the_fetch_filter_of_every_reader_is_the_residual(db):
    db.c.insert_many([{"_id": i, "a": i % 5, "b": i % 3} for i in range(20)])
    db.c.create_index("a")
    flt = {"a": {"$gte": 2}, "b": {"$ne": 1}}
    agg = db.command("explain", {"aggregate": "c", "pipeline": [{"$match": flt}, {"$group": {"_id": "$b"}}],
                                 "cursor": {}}, verbosity="queryPlanner")
    assert _fetch_filter(agg["stages"][0]["$cursor"]["queryPlanner"]["winningPlan"]) == {"b": {"$ne": 1}}
    for command in ({"update": "c", "updates": [{"q": flt, "u": {"$set": {"m": 1}}, "multi": True}]},
                    {"delete": "c", "deletes": [{"q": flt, "limit": 0}]},
                    {"findAndModify": "c", "query": flt, "update": {"$set": {"m": 1}}}):
        plan = db.command("explain", command, verbosity="queryPlanner")["queryPlanner"]["winningPlan"]
        assert _fetch_filter(plan) == {"b": {"$ne": 1}}, command
