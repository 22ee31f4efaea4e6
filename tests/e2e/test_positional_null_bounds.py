"""A predicate that matches null on a path with a numeric component does not narrow an index scan.

The matcher reads ``a.0`` of ``{a: [{x: 1}, {x: 2}]}`` both as the array's element at position 0 and as
the field "0" of each document element (mongod's BSONElementIterator: the documents are traversed, then
the offset matched), and those documents lack the field, so ``{"a.0": null}`` matches the document.
The index keys ``a.0`` by the positional element alone (mongod's BtreeKeyGenerator,
``positionallyIndexedElt``): ``{x: 1}``, no null key. Tidemark bounded the scan of an ``{"a.0": 1}`` index
to ``[null, null]`` and lost the document (without a hint too, since the planner picked that index),
while the collection scan returned it.

The family: documents whose positional paths meet arrays of documents, scalars, nested arrays and
nothing; predicates holding null (equality, ``$in`` with and without regexes, ``$gte: MinKey``,
``$lte: MaxKey``) and the others beside them, on paths with one or two numeric components, through
single, compound and descending indexes: the index answers as the collection scan."""

import pytest
from bson.max_key import MaxKey
from bson.min_key import MinKey
from bson.regex import Regex
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

_SCALAR = st.sampled_from([None, 1, 2, "a", MinKey(), MaxKey()])
_VALUE = st.recursive(
    _SCALAR,
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.sampled_from(["x", "y"]), inner, max_size=2)),
    max_leaves=5,
)
_PATHS = ["a.0", "a.0.x", "a.1", "a.x.0", "a.0.0"]
_CONDITION = st.one_of(
    _SCALAR,
    st.builds(lambda v: {"$in": [v, 7]}, _SCALAR),
    st.builds(lambda v: {"$in": [v, Regex("^a")]}, _SCALAR),
    st.sampled_from([{"$gte": MinKey()}, {"$lte": MaxKey()}, {"$gt": MinKey()}, {"$lt": MaxKey()},
                     {"$gte": 1}, {"$lte": 2}, {"$exists": True}]),
)


@pytest.mark.commands("find", "count", "createIndexes")
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(st.dictionaries(st.sampled_from(["x", "y"]), _VALUE, max_size=2) | _VALUE, max_size=8),
       path=st.sampled_from(_PATHS), condition=_CONDITION, other=st.sampled_from([None, "b"]),
       direction=st.sampled_from([1, -1]))
@example(values=[[{"x": 1}, {"x": 2}]], path="a.0", condition=None, other=None, direction=1)
@example(values=[[{"x": 1}]], path="a.0.x", condition={"$in": [None, Regex("^a")]}, other="b", direction=-1)
@example(values=[[{"x": 1}, 5]], path="a.0", condition={"$gte": MinKey()}, other=None, direction=1)
def test_the_index_answers_as_the_collection_scan(db, values, path, condition, other, direction):
    db.c.drop()
    if values:
        db.c.insert_many([{"_id": i, "a": v, "b": i % 2} for i, v in enumerate(values)])
    key = [(path, direction)] if other is None else [(other, 1), (path, direction)]
    try:
        db.c.create_index(key)
    except Exception:  # 16746: a numeric field name of a document element is also the array's position
        return
    query = {path: condition} if other is None else {path: condition, "b": {"$in": [0, 1]}}
    scanned = sorted(d["_id"] for d in db.c.find(query).hint({"$natural": 1}))
    assert sorted(d["_id"] for d in db.c.find(query).hint(key)) == scanned
    assert sorted(d["_id"] for d in db.c.find(query)) == scanned
    assert db.c.count_documents(query, hint=key) == len(scanned)


@pytest.mark.commands("find", "explain", "createIndexes")
def test_a_null_equality_on_a_positional_path_scans_the_whole_index(db):
    db.c.insert_many([{"_id": 0, "a": [{"x": 1}, {"x": 2}]}, {"_id": 1, "a": [None]}, {"_id": 2, "a": [3]}])
    db.c.create_index({"a.0": 1})
    assert sorted(d["_id"] for d in db.c.find({"a.0": None})) == [0, 1]
    plan = db.c.find({"a.0": None}).hint("a.0_1").explain()["queryPlanner"]["winningPlan"]
    assert plan["inputStage"]["indexBounds"] == {"a.0": ["[MinKey, MaxKey]"]}
    # a predicate that never matches null keeps its bounds
    plan = db.c.find({"a.0": 3}).explain()["queryPlanner"]["winningPlan"]
    assert plan["inputStage"]["indexBounds"] == {"a.0": ["[3, 3]"]}
