"""An indexed read re-checks only what its index bounds did not decide (mongod's BoundsTightness,
index_bounds_builder.cpp; planner_access.cpp drops an EXACT predicate from the FETCH filter).

An equality, ``$in`` or range on a number of any type (keys order numbers by exact value: Decimal128 and
the infinities too; NaN as an equality, ``$gte`` or ``$lte`` only), string, bool, ObjectId or date, on a path of an index that
holds no array (and strings only without collation), and ``$type: "number"``, are decided by the bounds:
explain's FETCH stage shows no filter for it, and the read does not match it again. Everything else stays
in the FETCH filter (null, regexes, arrays and documents as values, a range of NaN, ``$ne``/``$nin``/``$not``,
``$exists`` (but on a sparse index of one field), other ``$type``s, ``$elemMatch``, ``$expr``,
two-sided ranges on a multikey index, collated strings, a second condition on the path). A wrong EXACT is a
wrong answer, so the families compare every read with the collection scan: numbers of every type at their
collision boundaries, multikey indexes with two-sided ranges, and a cursor
whose index became multikey between its batches. The 400,000-value ``$in`` of
jstests/noPassthrough/explain_output_truncation.js's family explains (no FETCH filter; the bounds too
large for the tree are mongod's warning), where the filter repeated in each tree made 10334."""

from __future__ import annotations

import datetime

import pytest
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.objectid import ObjectId
from bson.regex import Regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tidemark.query.fetch_filter import RESIDUAL_AFTER


def _stage(plan: dict, name: str) -> dict | None:
    while plan is not None:
        if plan.get("stage") == name:
            return plan
        plan = plan.get("inputStage")
    return None


def _fetch_filter(db, coll: str, flt: dict, **options) -> dict | None:
    """The FETCH filter of the winning plan (None: no filter) and, asserted, an index scan below it."""
    answer = db.command("explain", {"find": coll, "filter": flt, **options}, verbosity="queryPlanner")
    fetch = _stage(answer["queryPlanner"]["winningPlan"], "FETCH")
    assert fetch is not None and _stage(fetch, "IXSCAN") is not None, answer["queryPlanner"]["winningPlan"]
    return fetch.get("filter")


# (filter, the top-level fields its FETCH filter keeps) over an index {a: 1} holding no array
_CASES = [
    ({"a": 5}, set()),
    ({"a": {"$eq": 5}}, set()),
    ({"a": 5, "b": 3}, {"b"}),
    ({"a": {"$gt": 5, "$lt": 9}}, set()),
    ({"a": {"$gte": "k"}}, set()),
    ({"a": {"$in": [1, Int64(2), 3.5, "x", True, ObjectId("000000000000000000000001")]}}, set()),
    ({"a": datetime.datetime(2020, 1, 1)}, set()),
    ({"a": {"$lt": datetime.datetime(2020, 1, 1)}, "c": {"$exists": True}}, {"c"}),
    ({"a": {"$gt": 5}, "b": {"$ne": 1}}, {"b"}),
    ({"a": 1.5}, set()),
    ({"a": 0.1}, set()),  # (its key is its exact value's, not Decimal128("0.1000000000000000055511151231257827")'s)
    ({"a": Decimal128("1")}, set()),
    ({"a": float("nan")}, set()),  # (NaN equals NaN, of either type: its one key)
    ({"a": {"$in": [Decimal128("NaN"), Decimal128("-Infinity"), 2]}}, set()),
    ({"a": {"$gt": Decimal128("1.5"), "$lte": float("inf")}}, set()),
    ({"a": {"$lt": float("-inf")}}, set()),
    ({"a": {"$gte": float("nan")}}, set()),  # (NaN alone: a point)
    ({"a": {"$gt": float("nan")}}, {"a"}),  # (nothing, to mongod; not an empty scan here)
    ({"a": {"$type": "number"}}, set()),
    ({"a": {"$type": ["number"]}}, set()),
    ({"a": {"$type": "int"}}, {"a"}),  # (the bracket holds doubles too)
    ({"a": {"$type": "string"}}, {"a"}),
    ({"a": {"$exists": True}}, {"a"}),  # (the index holds documents lacking a, as null)
    ({"a": {"$exists": False}}, {"a"}),
    ({"a": None}, {"a"}),
    ({"a": {"$in": [1, None]}}, {"a"}),
    ({"a": Regex("^x")}, {"a"}),
    ({"a": {"$regex": "^x"}}, {"a"}),
    ({"a": [1, 2]}, {"a"}),
    ({"a": {"x": 1}}, {"a"}),
    ({"a": {"$gt": 1, "$lt": "z"}}, {"a"}),  # (two type brackets: the bounds hold numbers and strings)
    ({"a": {"$gt": 1, "$gte": 2}}, {"a"}),
    ({"a": {"$gt": 5, "$lt": 5}}, {"a"}),  # (empty ranges: storage's key-prefix bounds do not honour them)
    ({"a": {"$gte": 7, "$lt": 3}}, {"a"}),
    ({"a": {"$gte": 5, "$lte": 5}}, set()),
    ({"a": {"$eq": 5, "$in": [5, 6]}}, {"a"}),
    ({"a": {"$gt": 1, "$type": "int"}}, {"a"}),
    ({"a": {"$in": [1, 2]}, "$expr": {"$eq": ["$a", 1]}}, {"a", "$expr"}),
    ({"$and": [{"a": 5}, {"b": 3}]}, {"$and"}),
    ({"a": 0, "$or": [{"a": None}]}, {"$or"}),  # (the one-branch $or parses as a comparison on a: kept)
]


@pytest.mark.commands("explain", "find", "createIndexes")
@pytest.mark.parametrize("flt, kept", _CASES, ids=[repr(c[0]) for c in _CASES])
def test_the_fetch_filter_keeps_what_the_bounds_do_not_decide(db, flt, kept):
    db.c.insert_many([{"_id": i, "a": i % 10, "b": i % 3, "c": i} for i in range(2 * RESIDUAL_AFTER)])
    db.c.create_index("a")
    shown = _fetch_filter(db, "c", flt, hint="a_1")
    assert set(shown or {}) == kept, shown
    assert sorted(d["_id"] for d in db.c.find(flt)) == sorted(d["_id"] for d in db.c.find(flt, hint={"$natural": 1}))


@pytest.mark.commands("explain", "find", "createIndexes", "insert")
def test_a_multikey_two_sided_range_or_a_collated_string_decides_nothing(db):
    db.c.insert_many([{"_id": 0, "a": 5, "s": "x"}, {"_id": 1, "a": [1, 9], "s": "X"}, {"_id": 2, "a": [10]}])
    db.c.create_index("a")
    db.c.create_index("s", collation={"locale": "en", "strength": 2})
    # a point, a $in or a one-sided range on a multikey index is EXACT (as mongod's: a key is a value
    # the document holds on the path, and the matcher reads an array element by element)
    assert _fetch_filter(db, "c", {"a": 5}) is None
    assert _fetch_filter(db, "c", {"a": {"$in": [1, 10]}}) is None
    assert _fetch_filter(db, "c", {"a": {"$gte": 9}}) is None
    assert sorted(d["_id"] for d in db.c.find({"a": {"$gte": 9}})) == [1, 2]
    # a range on a multikey index keeps one side, (2, inf]: [10] lies in it and does not match
    assert _fetch_filter(db, "c", {"a": {"$gt": 2, "$lt": 8}}) == {"a": {"$gt": 2, "$lt": 8}}
    assert sorted(d["_id"] for d in db.c.find({"a": {"$gt": 2, "$lt": 8}})) == [0, 1]
    collation = {"locale": "en", "strength": 2}
    assert _fetch_filter(db, "c", {"s": "x"}, collation=collation) == {"s": "x"}
    assert _fetch_filter(db, "c", {"s": {"$in": [1, 2]}}, collation=collation) is None  # (numbers: not collated)
    assert sorted(d["_id"] for d in db.c.find({"s": "x"}, collation=collation)) == [0, 1]
    # a compound index: the fields after the first range are not bounded, so not decided
    db.d.insert_many([{"_id": i, "a": i % 4, "b": i % 3} for i in range(12)])
    db.d.create_index([("a", 1), ("b", 1)])
    assert _fetch_filter(db, "d", {"a": 2, "b": 1}) is None
    assert set(_fetch_filter(db, "d", {"a": {"$gt": 1}, "b": 1}) or {}) == {"b"}


# numbers next to each other across types (0.1 and the 34-digit decimal below it, 2**53 + 1 as long and decimal)
_NUMBERS = [0.1, Decimal128("0.1000000000000000055511151231257827"), Decimal128("0.1"), 0.5, Decimal128("0.5"),
            2**53, 2**53 + 1, float(2**53), Int64(2**53 + 1), Decimal128("9007199254740993"), 1, 1.0, Int64(1),
            Decimal128("1.0"), -0.0, 0, Decimal128("-0"), float("inf"), float("nan"), Decimal128("NaN"), 1e300,
            "0.1", True, None]
_VALUE = st.sampled_from(_NUMBERS)
_CONDITION = st.one_of(
    _VALUE,
    st.builds(lambda op, v: {op: v}, st.sampled_from(["$eq", "$gt", "$gte", "$lt", "$lte"]), _VALUE),
    st.builds(lambda lo, v, hi, w: {lo: v, hi: w}, st.sampled_from(["$gt", "$gte"]), _VALUE,
              st.sampled_from(["$lt", "$lte"]), _VALUE),
    st.builds(lambda vs: {"$in": vs}, st.lists(_VALUE, min_size=1, max_size=3)),
)


@pytest.mark.commands("find", "createIndexes", "count")
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(st.one_of(_VALUE, st.lists(_VALUE, min_size=1, max_size=2)), min_size=1, max_size=10),
       conditions=st.lists(_CONDITION, min_size=1, max_size=4), direction=st.sampled_from([1, -1]),
       arrays=st.booleans())
def test_reads_decided_by_bounds_answer_as_the_collection_scan(db, values, conditions, direction, arrays):
    """Numbers of every type near each other, through an index with no array (bounds decide) or, with
    ``arrays``, a multikey one (a two-sided range keeps one side and is not decided; points and one-sided
    ranges are): find == the scan."""
    db.c.drop()
    kept = [v for v in values if arrays or not isinstance(v, list)]
    # (more documents than a find matches with its whole filter before it compiles the residual)
    docs = [{"_id": i, "a": v} for i, v in enumerate(kept * (RESIDUAL_AFTER // max(len(kept), 1) + 1))]
    if docs:
        db.c.insert_many(docs)
    db.c.create_index([("a", direction)])
    for flt in [f for cond in conditions for f in ({"a": cond}, {"a": cond, "b": {"$exists": False}})]:
        expected = sorted(d["_id"] for d in db.c.find(flt, hint={"$natural": 1}))
        assert sorted(d["_id"] for d in db.c.find(flt)) == expected, (flt, docs)
        assert sorted(d["_id"] for d in db.c.find(flt, hint=[("a", direction)])) == expected, (flt, docs)


@pytest.mark.commands("find", "getMore", "createIndexes", "insert")
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cond=_CONDITION, later=st.lists(st.lists(_VALUE, max_size=3), min_size=1, max_size=6))
def test_a_cursor_meeting_arrays_between_batches_returns_only_matches(db, cond, later):
    """The plan was chosen while the index held no array (its bounds decided the condition); documents
    with arrays inserted between batches make it multikey: every document the cursor returns still
    matches (a key in the bounds is an element that meets them)."""
    db.c.drop()
    db.c.insert_many([{"_id": i, "a": v} for i, v in enumerate(_NUMBERS * (RESIDUAL_AFTER // len(_NUMBERS) + 2))])
    db.c.create_index("a")
    cursor = db.c.find({"a": cond}, batch_size=1)
    returned = [next(cursor)["_id"]] if db.c.count_documents({"a": cond}) else []
    db.c.insert_many([{"_id": 1000 + i, "a": v} for i, v in enumerate(later)])
    returned += [d["_id"] for d in cursor]
    assert len(returned) == len(set(returned))
    matching = db.c.count_documents({"a": cond, "_id": {"$in": returned}}, hint={"$natural": 1})
    assert matching == len(returned), (cond, later)


@pytest.mark.slow
@pytest.mark.commands("explain", "find", "createIndexes")
def test_a_400000_value_in_on_an_index_explains_without_a_fetch_filter(db):
    """Each value is a point interval, as in mongod, so the bounds decide the $in: no FETCH filter (it
    made the answer 10334 BSONObjectTooLarge with the $in once in each tree, beside the command and the
    parsed query); the bounds, past the tree's size threshold, are mongod's warning."""
    db.c.insert_many([{"_id": i, "a": i % 50} for i in range(200)])
    db.c.create_index("a")
    values = list(range(400_000))
    answer = db.command("explain", {"find": "c", "filter": {"a": {"$in": values}}}, verbosity="executionStats")
    for tree in (answer["queryPlanner"]["winningPlan"], answer["executionStats"]["executionStages"]):
        fetch = _stage(tree, "FETCH")
        assert fetch is not None and "filter" not in fetch, fetch
        ixscan = _stage(tree, "IXSCAN")
        assert ixscan is not None and "indexBounds" not in ixscan, ixscan
        assert ixscan["warning"] == "index bounds omitted due to BSON size limit for explain"
    assert answer["executionStats"]["nReturned"] == 200
    assert db.c.count_documents({"a": {"$in": values[:1000]}}) == 200
