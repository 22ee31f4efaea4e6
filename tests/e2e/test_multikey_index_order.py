"""An index answers like a collection scan over arrays: a multikey index gives a sort's order only over
the sort field's whole range (a bounded scan meets a document at its smallest key *within the bounds*,
its sort key is its smallest value of the whole array), its keys hold null for an array element that
lacks the indexed path, and two paths through one array are not "parallel arrays"."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.commands("find", "insert", "createIndexes")

NUMBERS = st.integers(-3, 3).map(float)
VALUES = st.one_of(NUMBERS, st.lists(NUMBERS, min_size=1, max_size=3))
PREDICATES = st.one_of(
    NUMBERS.map(lambda v: {"a": v}),
    st.tuples(st.sampled_from(["$gt", "$gte", "$lt", "$lte"]), NUMBERS).map(lambda t: {"a": {t[0]: t[1]}}),
    st.lists(NUMBERS, min_size=1, max_size=3).map(lambda vs: {"a": {"$in": vs}}),
    st.tuples(NUMBERS, NUMBERS).map(lambda t: {"a": {"$gt": min(t), "$lt": max(t)}}),
    st.just({}),
)


def _sort_key(value, direction):
    values = value if isinstance(value, list) else [value]
    return min(values) if direction == 1 else max(values)


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(VALUES, min_size=1, max_size=8), predicate=PREDICATES, direction=st.sampled_from([1, -1]),
       index_direction=st.sampled_from([1, -1]))
def test_a_multikey_index_sorts_like_a_collection_scan(db, values, predicate, direction, index_direction):
    db.c.drop()
    db.c.insert_many([{"_id": i, "a": v} for i, v in enumerate(values)])
    db.c.create_index([("a", index_direction)])
    scanned = list(db.c.find(predicate).sort("a", direction).hint({"$natural": 1}))
    indexed = list(db.c.find(predicate).sort("a", direction).hint([("a", index_direction)]))
    assert sorted(d["_id"] for d in indexed) == sorted(d["_id"] for d in scanned)
    keys = [_sort_key(d["a"], direction) for d in indexed]
    assert keys == sorted(keys, reverse=direction == -1), (predicate, direction, indexed)


def test_a_bounded_sort_on_a_multikey_field_sorts_whole_arrays(db):
    db.c.insert_many([{"_id": 0, "a": [4.0, 0.0, 1.0]}, {"_id": 1, "a": [1.0, 0.0]}])
    db.c.create_index("a")
    assert [d["_id"] for d in db.c.find({"a": 1.0}).sort("a", -1)] == [0, 1]  # (max 4, then max 1)
    assert [d["_id"] for d in db.c.find({"a": {"$gte": 1.0}}).sort("a", 1)] == [0, 1]  # (min 0, then min 0)


def test_an_element_lacking_the_path_is_a_null_key_and_a_sparse_index_still_leaves_out_a_document_without_it(db):
    db.c.insert_many([{"_id": 1, "a": [{"b": 3.0}, {}]}, {"_id": 2, "a": [{"c": 1.0}]}, {"_id": 3, "a": [{"b": 4.0}]},
                      {"_id": 4}])
    db.c.create_index("a.b")
    assert sorted(d["_id"] for d in db.c.find({"a.b": None})) == [1, 2, 4]
    assert sorted(d["_id"] for d in db.c.find({"a.b": None}).hint({"$natural": 1})) == [1, 2, 4]
    db.s.insert_many([{"_id": 1, "a": [{"b": 3.0}, {}]}, {"_id": 2, "a": [{"c": 1.0}]}])
    db.s.create_index("a.b", sparse=True)
    assert sorted(d["_id"] for d in db.s.find({"a.b": {"$gt": 0}}).hint("a.b_1")) == [1]
    assert [d["_id"] for d in db.s.find({}, {"_id": 1}).hint("a.b_1")] == [1]  # (2 holds no b anywhere)


def test_two_paths_through_one_array_index_and_parallel_arrays_are_refused(db):
    from pymongo.errors import WriteError

    db.c.create_index([("a.b", 1), ("a.c", 1)])
    db.c.insert_many([{"_id": 0, "a": [{"b": 1.0, "c": 2.0}, {"b": 3.0, "c": 4.0}]}])
    assert [d["_id"] for d in db.c.find({"a.b": 1.0, "a.c": 4.0})] == [0]  # (b and c of different elements)
    assert [d["_id"] for d in db.c.find({"a": {"$elemMatch": {"b": 1.0, "c": 2.0}}})] == [0]
    with pytest.raises(WriteError) as parallel:  # b and c each an array of their own
        db.c.insert_one({"_id": 1, "a": [{"b": [1.0, 2.0], "c": [3.0, 4.0]}]})
    assert parallel.value.code == 171
    db.d.create_index([("x", 1), ("y", 1)])
    with pytest.raises(WriteError) as unrelated:
        db.d.insert_one({"x": [1.0], "y": [2.0]})
    assert unrelated.value.code == 171
    db.d.insert_one({"x": [1.0, 2.0], "y": 3.0})
