"""$graphLookup through pymongo: every option, cycles, arrays, limits."""

from __future__ import annotations

import pytest
from pymongo.errors import ExecutionTimeout, OperationFailure

pytestmark = pytest.mark.commands("aggregate", "insert", "find", "count", "delete")

EMPLOYEES = [
    {"_id": 1, "name": "Dev"},
    {"_id": 2, "name": "Eliot", "reportsTo": "Dev"},
    {"_id": 3, "name": "Ron", "reportsTo": "Eliot"},
    {"_id": 4, "name": "Andrew", "reportsTo": "Eliot"},
    {"_id": 5, "name": "Asya", "reportsTo": "Ron"},
    {"_id": 6, "name": "Dan", "reportsTo": "Andrew"},
]


def chain(db, **extra):
    spec = {"from": "emp", "startWith": "$reportsTo", "connectFromField": "reportsTo", "connectToField": "name",
            "as": "chain", **extra}
    out = db.emp.aggregate([{"$graphLookup": spec}, {"$sort": {"_id": 1}}])
    return {d["_id"]: d["chain"] for d in out}


def test_reporting_chains_with_depth(db):
    db.emp.insert_many(EMPLOYEES)
    got = chain(db, depthField="level")
    assert got[1] == []
    assert {(c["name"], c["level"]) for c in got[6]} == {("Andrew", 0), ("Eliot", 1), ("Dev", 2)}
    assert all(isinstance(c["level"], int) for c in got[6])
    got = chain(db, maxDepth=0)
    assert [c["name"] for c in got[6]] == ["Andrew"]
    got = chain(db, maxDepth=1, restrictSearchWithMatch={"name": {"$ne": "Eliot"}})
    assert [c["name"] for c in got[6]] == ["Andrew"]  # Eliot filtered out, so the search stops there


def test_cycles_end_and_each_document_appears_once(db):
    db.emp.insert_many([{"_id": i, "name": f"n{i}", "reportsTo": f"n{(i + 1) % 5}"} for i in range(5)])
    got = chain(db, depthField="d")
    assert all(sorted(c["_id"] for c in v) == list(range(5)) for v in got.values())


def test_array_values_fan_out(db):
    db.air.insert_many([
        {"_id": 0, "airport": "JFK", "connects": ["BOS", "ORD"]},
        {"_id": 1, "airport": "BOS", "connects": ["JFK", "PWM"]},
        {"_id": 2, "airport": "ORD", "connects": ["JFK"]},
        {"_id": 3, "airport": "PWM", "connects": ["BOS", "LHR"]},
        {"_id": 4, "airport": "LHR", "connects": ["PWM"]},
    ])
    db.trav.insert_one({"_id": 1, "name": "Dev", "nearestAirport": ["JFK"]})
    out = list(db.trav.aggregate([{"$graphLookup": {
        "from": "air", "startWith": "$nearestAirport", "connectFromField": "connects", "connectToField": "airport",
        "maxDepth": 2, "depthField": "numConnections", "as": "destinations"}}]))
    hops = {d["airport"]: d["numConnections"] for d in out[0]["destinations"]}
    assert hops == {"JFK": 0, "BOS": 1, "ORD": 1, "PWM": 2}


def test_graph_lookup_uses_an_index_and_a_missing_collection_is_empty(db):
    db.emp.insert_many(EMPLOYEES)
    db.emp.create_index("name")
    assert chain(db)[5][0]["name"] == "Ron"
    out = list(db.emp.aggregate([{"$graphLookup": {"from": "nothing", "startWith": "$name",
                                                   "connectFromField": "a", "connectToField": "b", "as": "x"}}]))
    assert all(d["x"] == [] for d in out)


@pytest.mark.parametrize("spec, code", [
    ({}, 9),
    ({"from": "emp"}, 40105),
    ({"from": 1, "startWith": 1, "connectFromField": "a", "connectToField": "b", "as": "x"}, 9),  # LiteParsed
    ({"from": "emp", "startWith": 1, "connectFromField": "a", "connectToField": "b", "as": "x", "maxDepth": -1},
     40101),
    ({"from": "emp", "startWith": 1, "connectFromField": "a", "connectToField": "b", "as": "x", "maxDepth": "1"},
     40100),
    ({"from": "emp", "startWith": 1, "connectFromField": "a", "connectToField": "b", "as": "x", "maxDepth": 1.5},
     40102),
    ({"from": "emp", "startWith": 1, "connectFromField": "a", "connectToField": "b", "as": "x",
      "restrictSearchWithMatch": 3}, 40185),
    ({"from": "emp", "startWith": 1, "connectFromField": "a", "connectToField": "b", "as": "x", "bogus": 1}, 40104),
])
def test_graph_lookup_spec_errors(db, spec, code):
    db.emp.insert_one({"name": "x"})
    with pytest.raises(OperationFailure) as e:
        list(db.emp.aggregate([{"$graphLookup": spec}]))
    assert e.value.code == code


@pytest.mark.slow
def test_a_long_search_is_interrupted_by_max_time_ms(db):
    db.line.insert_many([{"_id": i, "name": i, "next": i + 1} for i in range(3000)])
    with pytest.raises(ExecutionTimeout):
        list(db.line.aggregate([{"$match": {"_id": 0}}, {"$graphLookup": {
            "from": "line", "startWith": "$next", "connectFromField": "next", "connectToField": "name", "as": "all"}}],
            maxTimeMS=20))
