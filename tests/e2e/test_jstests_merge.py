"""MongoDB's ``$merge`` jstests (``jstests/aggregation/sources/merge/``) for the modes Tidemark did not
have or answered differently, ported to pymongo against a real Tidemark server.

Sources (``mongodb/mongo``), 4 files: mode_pipeline_insert.js, mode_pipeline_fail.js,
mode_replace_fail.js (with its unordered-batch case), mode_fail_insert.js.

The port found: ``whenMatched`` with a pipeline refused (115) where mongod runs it as an update
pipeline over the matched document (``let`` variables from the result document, ``$$new`` by default);
and a result without a match under ``whenNotMatched: "fail"`` undoing the whole stage, where mongod
writes in unordered 16 MB batches: the failing batch's matched documents are written, later batches not.

mode_pipeline_insert.js was first ported from its 4.2 version, where an unmatched result with
``whenNotMatched: "insert"`` inserted the pipeline's output over the ``on`` values. Since 4.4 (so in
7.0) mongod sends that upsert with ``upsertSupplied: true`` and ``c: {new: <result>}``: the result
document itself is inserted, and ``$$new`` is defined even when ``let`` is given (51273 if ``let``
binds it to anything but ``"$$ROOT"``). The expectations below are the 4.4+ file's.
Hypothesis checks the family: a ``$merge`` with an update pipeline leaves the target as the same
pipeline sent through ``update`` as mongod sends it (``upsert``, ``upsertSupplied``, ``c.new``), one
result at a time.
"""

from __future__ import annotations

import pytest
from harness.jstests import aggregate_fails, bag, unordered
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.commands("aggregate", "insert", "update", "find", "createIndexes", "delete")

HYPO = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture
def colls(db):
    db.drop_collection("merge_source")
    db.drop_collection("merge_target")
    return db.merge_source, db.merge_target


def _merge(update_pipeline, *, on="_id", let=..., initial=(), not_matched="insert"):
    spec = {"into": "merge_target", "on": on, "whenMatched": update_pipeline, "whenNotMatched": not_matched}
    if let is not ...:
        spec["let"] = let
    return [*initial, {"$merge": spec}]


def _target(target, projection=None):
    return bag(target.find({}, projection), unordered)


def test_pipeline_insert_basics(colls):
    """mode_pipeline_insert.js as of 4.4 (this port first followed the 4.2 file, which expected the
    pipeline's output over the ``on`` values, ``{_id: 1, x: 1}``): an unmatched result is inserted
    as it is, since mongod sends the upsert with ``upsertSupplied: true, c: {new: <result>}``; the
    pipeline runs only over a matched document."""
    source, target = colls
    source.insert_one({"_id": 1, "a": 1, "b": "a"})
    list(source.aggregate(_merge([{"$addFields": {"x": 1}}])))  # into a collection that does not exist
    assert list(target.find()) == [{"_id": 1, "a": 1, "b": "a"}]
    target.delete_many({})
    list(source.aggregate(_merge([{"$addFields": {"x": 1, "y": 2}}])))
    assert list(target.find()) == [{"_id": 1, "a": 1, "b": "a"}]
    list(source.aggregate(_merge([{"$project": {"x": {"$add": ["$a", 1]}, "y": {"$sum": ["$y", 2]},
                                                "z": {"$add": ["$y", 2]}}}])))
    assert list(target.find()) == [{"_id": 1, "x": 2, "y": 2, "z": None}]


@pytest.mark.parametrize(("stages", "before", "after"), [
    ([{"$addFields": {"x": {"$add": ["$b", 1]}}}], [{"_id": 1, "b": 1}], [{"_id": 1, "b": 1, "x": 2}, {"_id": 2, "a": 2}]),
    ([{"$project": {"x": {"$add": ["$b", 1]}}}], [{"_id": 1, "b": 1}], [{"_id": 1, "x": 2}, {"_id": 2, "a": 2}]),
    ([{"$replaceWith": "$c"}], [{"_id": 1, "b": 1, "c": {"x": {"y": 1}}}, {"_id": 2, "b": 2, "c": {"x": {"y": 2}}}],
     [{"_id": 1, "x": {"y": 1}}, {"_id": 2, "x": {"y": 2}}]),
    ([{"$replaceRoot": {"newRoot": "$c"}}], [{"_id": 1, "b": 1, "c": {"x": {"y": 1}}}, {"_id": 2, "b": 2, "c": {"x": {"y": 2}}}],
     [{"_id": 1, "x": {"y": 1}}, {"_id": 2, "x": {"y": 2}}]),
], ids=["addFields", "project", "replaceWith", "replaceRoot"])
def test_pipeline_insert_stages(colls, stages, before, after):
    source, target = colls
    source.insert_many([{"_id": 1, "a": 1}, {"_id": 2, "a": 2}])
    target.insert_many(before)
    list(source.aggregate(_merge(stages)))
    assert _target(target) == bag(after, unordered)


def test_pipeline_insert_errors(colls):
    source, target = colls
    source.insert_one({"_id": 4, "a": 2})
    target.insert_many([{"_id": 1, "x": 1}, {"_id": 2, "a": 2}])
    target.create_index([("a", 1)], unique=True)
    aggregate_fails(source, _merge([{"$project": {"x": 1, "a": 1}}]), 11000)
    assert _target(target) == bag([{"_id": 1, "x": 1}, {"_id": 2, "a": 2}], unordered)
    aggregate_fails(source, _merge([{"$project": {"x": 1}}], on="nonexistent"), 51190, 51183)
    aggregate_fails(source, _merge([{"$project": {"x": 1}}], on=["nonexistent1", "nonexistent2"]), 51190, 51183)
    aggregate_fails(source, _merge([{"$match": {"x": 1}}]), 72)  # not an update stage
    # unmatched, the stages never run (4.4+): the source document is inserted, and its a: 2 is the duplicate
    aggregate_fails(source, _merge([{"$set": {"_id": 99}}]), 11000)
    target.insert_one({"_id": 4, "a": 5})  # matched: the stages change _id
    aggregate_fails(source, _merge([{"$set": {"_id": 99}}]), 66)
    assert _target(target) == bag([{"_id": 1, "x": 1}, {"_id": 2, "a": 2}, {"_id": 4, "a": 5}], unordered)


def test_pipeline_insert_on_fields(colls):
    source, target = colls
    source.create_index([("a", 1)], unique=True)
    target.create_index([("a", 1)], unique=True)
    source.insert_many([{"_id": 1, "a": 1}, {"_id": 2, "a": 2}, {"_id": 3, "a": 30}])
    target.insert_many([{"_id": 1, "a": 1, "b": 1}, {"_id": 4, "a": 30, "b": 2}, {"_id": 5, "a": 40, "b": 3}])
    list(source.aggregate(_merge([{"$addFields": {"z": 1}}], on="a", initial=[{"$project": {"_id": 0}}])))
    assert _target(target, {"_id": 0}) == bag([{"a": 1, "b": 1, "z": 1}, {"a": 2}, {"a": 30, "b": 2, "z": 1},
                                               {"a": 40, "b": 3}], unordered)
    # the 'on' fields: several fields, then a dotted path
    source.drop()
    target.drop()
    source.create_index([("a", 1), ("b", 1)], unique=True)
    target.create_index([("a", 1), ("b", 1)], unique=True)
    source.insert_many([{"_id": 1, "a": 1, "b": 1}, {"_id": 2, "a": 2, "b": 4}, {"_id": 3, "a": 30, "b": 2}])
    target.insert_many([{"_id": 1, "a": 1, "b": 1}, {"_id": 4, "a": 30, "b": 2}, {"_id": 5, "a": 40, "b": 3}])
    list(source.aggregate(_merge([{"$addFields": {"z": 1}}], on=["a", "b"], initial=[{"$project": {"_id": 0}}])))
    assert _target(target, {"_id": 0}) == bag([{"a": 1, "b": 1, "z": 1}, {"a": 2, "b": 4}, {"a": 30, "b": 2, "z": 1},
                                               {"a": 40, "b": 3}], unordered)
    source.drop()
    target.drop()
    source.create_index([("a.b", 1)], unique=True)
    target.create_index([("a.b", 1)], unique=True)
    source.insert_many([{"_id": 1, "a": {"b": "b"}, "c": "x"}, {"_id": 2, "a": {"b": "c"}, "c": "y"},
                        {"_id": 3, "a": {"b": 30}, "b": "c"}])
    target.insert_one({"_id": 2, "a": {"b": "c"}, "c": "y"})
    list(source.aggregate(_merge([{"$addFields": {"z": 1}}], on="a.b", initial=[{"$project": {"_id": 0}}])))
    assert _target(target, {"_id": 0}) == bag([{"a": {"b": "b"}, "c": "x"}, {"a": {"b": "c"}, "c": "y", "z": 1},
                                               {"a": {"b": 30}, "b": "c"}], unordered)
    # the 'on' field missing, null or an array
    source.drop()
    target.drop()
    source.create_index([("z", 1)], unique=True)
    target.create_index([("z", 1)], unique=True)
    pipeline = _merge([{"$addFields": {"z": 1}}], on="z", initial=[{"$project": {"_id": 0}}])
    source.insert_one({"_id": 1})
    aggregate_fails(source, pipeline, 51132)
    source.replace_one({"_id": 1}, {"z": None})
    aggregate_fails(source, pipeline, 51132)
    source.replace_one({"_id": 1}, {"z": [1, 2]})
    aggregate_fails(source, pipeline, 51185)


def test_pipeline_insert_without_id(colls):
    source, target = colls
    source.insert_many([{"_id": 1, "a": 1, "b": "a"}, {"_id": 2, "a": 2, "b": "b"}])
    target.insert_one({"_id": 1, "b": "c"})
    list(source.aggregate(_merge([{"$addFields": {"z": 1}}], initial=[{"$project": {"_id": 0}}])))
    assert _target(target, {"_id": 0}) == bag([{"b": "c"}, {"a": 1, "b": "a"}, {"a": 2, "b": "b"}], unordered)
    target.drop()
    target.insert_one({"_id": 1, "b": "c"})
    source.create_index([("_id", 1), ("a", -1)], unique=True)
    target.create_index([("_id", 1), ("a", -1)], unique=True)
    list(source.aggregate(_merge([{"$addFields": {"z": 1}}], on=["_id", "a"], initial=[{"$project": {"_id": 0}}])))
    assert _target(target, {"_id": 0}) == bag([{"b": "c"}, {"a": 1, "b": "a"}, {"a": 2, "b": "b"}], unordered)


_UNMATCHED = {"_id": 2, "a": 2, "b": 2}  # inserted as it is (4.4+: upsertSupplied)


@pytest.mark.parametrize(("let", "stages", "after"), [
    (..., [{"$set": {"x": {"$add": ["$$new.a", "$$new.b"]}}}], [{"_id": 1, "c": 1, "x": 2}, _UNMATCHED]),
    ({}, [{"$set": {"x": "foo"}}], [{"_id": 1, "c": 1, "x": "foo"}, _UNMATCHED]),
    (None, [{"$set": {"x": "foo"}}], [{"_id": 1, "c": 1, "x": "foo"}, _UNMATCHED]),
    (None, [{"$project": {"x": "$$new.a", "y": "$$new.b"}}], [{"_id": 1, "x": 1, "y": 1}, _UNMATCHED]),
    ({"a": 1, "b": "foo", "c": True}, [{"$set": {"x": "$$a", "y": "$$b", "z": "$$c"}}],
     [{"_id": 1, "c": 1, "x": 1, "y": "foo", "z": True}, _UNMATCHED]),
    ({"a": [1, 2, 3]}, [{"$set": {"x": {"$arrayElemAt": ["$$a", 1]}}}], [{"_id": 1, "c": 1, "x": 2}, _UNMATCHED]),
    ({"x": "$a", "y": "$b"}, [{"$set": {"z": {"$add": ["$$x", "$$y"]}}}], [{"_id": 1, "c": 1, "z": 2}, _UNMATCHED]),
    ({"new": "$$ROOT"}, [{"$project": {"x": "$$new.a", "y": "$$new.b"}}], [{"_id": 1, "x": 1, "y": 1}, _UNMATCHED]),
], ids=["default-new", "empty", "null", "null-new", "constants", "constant-array", "fields", "new-root"])
def test_pipeline_let_variables(colls, let, stages, after):
    source, target = colls
    source.insert_many([{"_id": 1, "a": 1, "b": 1}, {"_id": 2, "a": 2, "b": 2}])
    target.insert_one({"_id": 1, "c": 1})
    list(source.aggregate(_merge(stages, let=let)))
    assert _target(target) == bag(after, unordered)


@pytest.mark.parametrize("let", [{"foo": "bar"}, {}])
def test_pipeline_explicit_let_keeps_new_with_insert(colls, let):
    """4.4+ (the 4.2 file expected 17276 here): with ``whenNotMatched: "insert"`` mongod adds
    ``new: "$$ROOT"`` to an explicit ``let`` (the result must travel as ``c.new``); with ``discard``
    or ``fail`` it does not, and ``$$new`` is undefined (17276)."""
    source, target = colls
    source.insert_many([{"_id": 1, "a": 1, "b": 1}, {"_id": 2, "a": 2, "b": 2}])
    target.insert_one({"_id": 1, "c": 1})
    stages = [{"$project": {"x": "$$new.a", "y": "$$new.b"}}]
    list(source.aggregate(_merge(stages, let=let)))
    assert _target(target) == bag([{"_id": 1, "x": 1, "y": 1}, _UNMATCHED], unordered)
    aggregate_fails(source, _merge(stages, let=let, not_matched="discard"), 17276)
    aggregate_fails(source, _merge(stages, let=let, not_matched="fail"), 17276)


@pytest.mark.parametrize("new", ["$a", "$$CURRENT", 1, None, {"a": 1}])
@pytest.mark.parametrize("not_matched", ["insert", "discard", "fail"])
def test_pipeline_let_cannot_redefine_new(colls, new, not_matched):
    """mode_pipeline_insert.js testMergeRejectsLetVariablesWhichRedefineNew: 51273, in every mode."""
    source, target = colls
    source.insert_many([{"_id": 1, "a": 1, "b": 1}, {"_id": 2, "a": 2, "b": 2}])
    target.insert_one({"_id": 1, "c": 1})
    aggregate_fails(source, _merge([{"$set": {"x": "foo"}}], let={"new": new}, not_matched=not_matched), 51273)
    assert _target(target) == bag([{"_id": 1, "c": 1}], unordered)


def test_pipeline_let_holds_computed_values(colls):
    source, target = colls
    source.insert_many([{"_id": 1, "a": 1, "b": 1}, {"_id": 2, "a": 1, "b": 2}, {"_id": 3, "a": 2, "b": 3}])
    target.insert_one({"_id": 1, "c": 1})
    group = [{"$group": {"_id": "$a", "a": {"$sum": "$b"}}}]
    list(source.aggregate(_merge([{"$set": {"z": "$$new"}}], initial=group)))
    assert _target(target) == bag([{"_id": 1, "c": 1, "z": {"_id": 1, "a": 3}}, {"_id": 2, "a": 3}], unordered)
    source.drop()
    target.drop()
    source.insert_many([{"_id": 1, "a": 1, "b": 5}, {"_id": 2, "a": 1, "b": 2}, {"_id": 3, "a": 2, "b": 3}])
    target.insert_one({"_id": 1, "c": 1})
    list(source.aggregate(_merge([{"$set": {"z": "$$x"}}], let={"x": {"$pow": ["$a", 2]}}, initial=group)))
    assert _target(target) == bag([{"_id": 1, "c": 1, "z": 49}, {"_id": 2, "a": 3}], unordered)


@pytest.mark.parametrize("when_matched", [[{"$addFields": {"x": 2}}], "replace"], ids=["pipeline", "replace"])
def test_not_matched_fail_writes_the_matched_ones(colls, when_matched):
    """mode_pipeline_fail.js, mode_replace_fail.js: 13113, after the batch's matched documents are written."""
    source, target = colls
    source.insert_many([{"_id": 1, "a": 1}, {"_id": 2, "a": 2}, {"_id": 3, "a": 3}])
    target.insert_many([{"_id": 1, "b": 1}, {"_id": 3, "b": 3}])
    stage = [{"$merge": {"into": "merge_target", "whenMatched": when_matched, "whenNotMatched": "fail"}}]
    aggregate_fails(source, stage, 13113)
    expected = ([{"_id": 1, "b": 1, "x": 2}, {"_id": 3, "b": 3, "x": 2}] if isinstance(when_matched, list) else
                [{"_id": 1, "a": 1}, {"_id": 3, "a": 3}])
    assert _target(target) == bag(expected, unordered)
    source.delete_many({})  # an empty source changes nothing
    list(source.aggregate(stage))
    assert _target(target) == bag(expected, unordered)


def test_not_matched_fail_stops_after_its_batch(colls):
    """mode_replace_fail.js's unordered batch: 16 1 MB documents per batch; one without a match in the first
    batch: its other 15 are written, the 4 of the next batch are not."""
    source, target = colls
    source.insert_many([{"_id": i, "padding": "x" * (1024 * 1024 - 40)} for i in range(20)])
    list(source.aggregate([{"$project": {"padding": 0}}, {"$out": "merge_target"}]))
    target.delete_one({"_id": 7})
    stage = {"$merge": {"into": "merge_target", "whenMatched": "replace", "whenNotMatched": "fail"}}
    aggregate_fails(source, [{"$sort": {"_id": 1}}, stage], 13113)
    assert target.count_documents({"padding": {"$exists": True}}) == 15
    assert target.count_documents({"padding": {"$exists": False}}) == 4


def test_fail_insert_messages(colls):
    """mode_fail_insert.js: which duplicate a whenMatched: "fail" $merge reports."""
    source, target = colls
    source.insert_one({"a": 0, "b": {"c": 2}})
    target.create_index([("a", 1), ("b.c", 1)], unique=True)
    target.insert_one({"_id": 1, "a": 0, "b": {"c": 2}})
    stage = {"$merge": {"into": "merge_target", "whenMatched": "fail", "whenNotMatched": "insert", "on": ["a", "b.c"]}}
    error = aggregate_fails(source, [stage], 11000)
    assert "$merge with whenMatched: fail found an existing document with the same values for the 'on' fields" in str(error)
    source.drop()
    source.insert_one({"_id": 1, "a": 3, "b": {"c": 4}})
    error = aggregate_fails(source, [stage], 11000)
    assert "$merge failed due to a DuplicateKey error" in str(error)


# --------------------------------------------------------------------------------------------------
# the family: $merge with an update pipeline == the update mongod sends (upsert, upsertSupplied, c.new),
# one result at a time

_DOC = st.fixed_dictionaries({"a": st.integers(0, 3), "b": st.integers(0, 3)})
_STAGES = st.sampled_from([
    [{"$set": {"s": {"$add": ["$$new.a", 1]}}}],
    [{"$set": {"t": {"$ifNull": ["$t", 0]}}}, {"$set": {"t": {"$add": ["$t", "$$new.b"]}}}],
    [{"$project": {"a": "$$new.a", "kept": "$b"}}],
    [{"$unset": "b"}],
    [{"$replaceWith": {"$mergeObjects": ["$$ROOT", "$$new"]}}],
])


@HYPO
@given(sources=st.dictionaries(st.integers(0, 8), _DOC, max_size=6), targets=st.dictionaries(st.integers(0, 8), _DOC, max_size=6),
       stages=_STAGES)
def test_merge_pipeline_equals_upserts(db, sources, targets, stages):
    source, target, expected = db.merge_family_source, db.merge_family_target, db.merge_family_expected
    for coll in (source, target, expected):
        coll.drop()
    source_docs = [dict(d, _id=i) for i, d in sources.items()]  # ids shared with the target's: some match
    target_docs = [dict(d, _id=i) for i, d in targets.items()]
    if source_docs:
        source.insert_many(source_docs)
    if target_docs:
        target.insert_many([dict(d) for d in target_docs])
        expected.insert_many([dict(d) for d in target_docs])
    list(source.aggregate([{"$merge": {"into": target.name, "whenMatched": stages, "whenNotMatched": "insert"}}]))
    for doc in source_docs:  # the reference: the update mongod sends (common_mongod_process_interface.cpp)
        db.command({"update": expected.name, "ordered": False,
                    "updates": [{"q": {"_id": doc["_id"]}, "u": stages, "c": {"new": doc}, "upsert": True,
                                 "upsertSupplied": True}]})
    assert bag(target.find(), unordered) == bag(expected.find(), unordered)
