"""A comparison of a field and a constant inside ``$expr`` bounds the field's index, as mongod's
``$_internalExpr*`` rewrite (an order comparison across types, ``(5, MaxKey]``, and only on an index
holding no array: ``"$a" > 5`` holds for an array as a whole): ``{$expr: {$eq: ["$k", 5]}}``, a command's ``let`` variable, and above
all a ``$lookup``'s — ``{$lookup: {from, let: {x: "$x"}, pipeline: [{$match: {$expr: {$eq: ["$k",
"$$x"]}}}]}}`` ran its sub-pipeline over the whole foreign collection once per input document
(300 input documents against 20,000 foreign ones: 23 s; with the index 0.06 s). A sub-pipeline's
leading ``$match`` now reads the foreign collection through the planner, as an aggregate's would.

The family: foreign documents whose ``k`` is a number of any type, a string, an array, a document,
null, missing; local values of the same kinds; the equality either way round, inside ``$and``, with
``$literal``; ascending, descending and multikey indexes and a collation: the indexed answer equals
the same read of an unindexed copy."""

import pytest
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

_SCALAR = st.one_of(st.integers(-2, 2), st.sampled_from([1.0, 2.5, Int64(1), Decimal128("1"), float("nan"), True]),
                    st.sampled_from(["a", "A", "b", "é"]), st.none(), st.sampled_from([{"z": 1}, {}]))
_VALUE = st.one_of(_SCALAR, st.lists(_SCALAR, max_size=3))
_MISSING = object()


def _doc(i, value):
    return {"_id": i} if value is _MISSING else {"_id": i, "k": value}


def _join(db, foreign, form, collation):
    match = {
        "plain": {"$expr": {"$eq": ["$k", "$$x"]}},
        "flipped": {"$expr": {"$eq": ["$$x", "$k"]}},
        "and": {"$expr": {"$and": [{"$eq": ["$k", "$$x"]}, {"$ne": ["$_id", -1]}]}},
        "gt": {"$expr": {"$gt": ["$k", "$$x"]}},
        "lte_flipped": {"$expr": {"$lte": ["$$x", "$k"]}},
        "lt": {"$expr": {"$lt": ["$k", "$$x"]}},
        "window": {"$expr": {"$and": [{"$gte": ["$k", "$$x"]}, {"$lt": ["$k", "$$y"]}, {"$gt": ["$$y", "$k"]}]}},
    }[form]
    pipeline = [{"$lookup": {"from": foreign, "let": {"x": "$x", "y": "$y"}, "pipeline": [{"$match": match}],
                             "as": "j"}},
                {"$sort": {"_id": 1}}]
    options = {"collation": collation} if collation else {}
    return [(d["_id"], sorted(j["_id"] for j in d["j"])) for d in db.local.aggregate(pipeline, **options)]


@pytest.mark.commands("aggregate", "createIndexes")
@pytest.mark.parametrize("key", [[("k", 1)], [("k", -1)], [("k", 1), ("_id", 1)]])
@pytest.mark.parametrize("collation", [None, {"locale": "en", "strength": 2}])
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(foreign=st.lists(st.one_of(_VALUE, st.just(_MISSING)), max_size=15),
       local=st.lists(st.one_of(_VALUE, st.just(_MISSING)), min_size=1, max_size=6),
       form=st.sampled_from(["plain", "flipped", "and", "gt", "lte_flipped", "lt", "window"]))
def test_a_lookup_joined_through_the_index_answers_as_without_it(db, key, collation, foreign, local, form):
    for name in ("indexed", "plain", "local"):
        db[name].drop()
    db.create_collection("indexed", **({"collation": collation} if collation else {}))
    db.indexed.create_index(key)
    if foreign:
        db.indexed.insert_many([_doc(i, v) for i, v in enumerate(foreign)])
        db.plain.insert_many([_doc(i, v) for i, v in enumerate(foreign)])
    db.local.insert_many([{"_id": i, **({} if v is _MISSING else {"x": v}),
                           **({} if local[-1 - i] is _MISSING else {"y": local[-1 - i]})} for i, v in enumerate(local)])
    assert _join(db, "indexed", form, collation) == _join(db, "plain", form, collation)


@pytest.mark.commands("find", "aggregate", "explain")
def test_a_constant_or_variable_equality_is_an_index_point(db):
    db.f.insert_many([{"k": i % 100, "v": i} for i in range(1000)])
    db.f.create_index("k")
    for command in ({"find": "f", "filter": {"$expr": {"$eq": ["$k", 7]}}},
                    {"find": "f", "filter": {"$expr": {"$eq": [{"$literal": 7}, "$k"]}}},
                    {"find": "f", "filter": {"$expr": {"$eq": ["$k", "$$z"]}}, "let": {"z": 7}},
                    {"aggregate": "f", "pipeline": [{"$match": {"$expr": {"$eq": ["$k", "$$z"]}}}],
                     "let": {"z": 7}, "cursor": {}}):
        reply = db.command("explain", command, verbosity="executionStats")
        text = str(reply)
        assert "'indexBounds': {'k': ['[7, 7]']}" in text, command
        assert "'totalDocsExamined': 10" in text, command
    # not a constant, an array, null, a system variable: no bound (the scan reads every document)
    for expr in ({"$eq": ["$k", "$v"]}, {"$eq": ["$k", [7]]}, {"$eq": ["$k", None]}, {"$eq": ["$k", "$$NOW"]},
                 {"$or": [{"$eq": ["$k", 7]}]}, {"$gt": ["$k", float("nan")]}):
        reply = db.command("explain", {"find": "f", "filter": {"$expr": expr}}, verbosity="executionStats")
        assert reply["executionStats"]["totalDocsExamined"] == 1000, expr
    # an order comparison: a range across types (strings, documents... are above every number)
    for expr, bounds, examined in (({"$gte": ["$k", 95]}, "[95, MaxKey]", 50), ({"$lt": [95, "$k"]}, "(95, MaxKey]", 40),
                                   ({"$and": [{"$gt": ["$k", 10]}, {"$lte": ["$k", 12]}]}, "(10, 12]", 20),
                                   ({"$lt": ["$k", 1]}, "[MinKey, 1)", 10)):
        reply = db.command("explain", {"find": "f", "filter": {"$expr": expr}}, verbosity="executionStats")
        assert f"'indexBounds': {{'k': ['{bounds}']}}" in str(reply), expr
        assert reply["executionStats"]["totalDocsExamined"] == examined, expr
    # once the index holds an array's elements, an order comparison no longer bounds it ([1, 200] > 95
    # as a whole, though neither element is in (95, MaxKey]); an equality still does
    db.f.insert_one({"k": [1, 200]})
    reply = db.command("explain", {"find": "f", "filter": {"$expr": {"$gt": ["$k", 95]}}}, verbosity="executionStats")
    assert reply["executionStats"]["totalDocsExamined"] == 1001 and reply["executionStats"]["nReturned"] == 41
    reply = db.command("explain", {"find": "f", "filter": {"$expr": {"$eq": ["$k", 7]}}}, verbosity="executionStats")
    assert reply["executionStats"]["totalDocsExamined"] == 10


@pytest.mark.commands("aggregate")
def test_a_lookup_reads_one_index_point_per_input_document(db):
    db.f.insert_many([{"k": i, "v": 2 * i} for i in range(2000)])
    db.f.create_index("k")
    db.local.insert_many([{"x": 7 * i} for i in range(100)])
    before = db.command("serverStatus")["metrics"]["queryExecutor"]["scannedObjects"]
    joined = list(db.local.aggregate([{"$lookup": {
        "from": "f", "let": {"x": "$x"}, "as": "j",
        "pipeline": [{"$match": {"$expr": {"$eq": ["$k", "$$x"]}}}, {"$project": {"_id": 0, "v": 1}}]}}]))
    scanned = db.command("serverStatus")["metrics"]["queryExecutor"]["scannedObjects"] - before
    assert [d["j"] for d in joined] == [[{"v": 14 * i}] if 7 * i < 2000 else [] for i in range(100)]
    assert scanned <= 100 + 100  # the local collection's documents and one foreign document per point
