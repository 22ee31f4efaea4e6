"""Four ``$merge`` differences from mongod 7.0, found by porting MongoDB's jstests
(``jstests/aggregation/sources/merge/``: mode_pipeline_insert.js, merge_with_dollar_fields.js,
batch_writes.js, requires_unique_index.js), with their expectations:

1. ``whenMatched: [stages]`` with ``whenNotMatched: "insert"``: an unmatched result is inserted as it is
   (mongod 4.4+ sends the upsert with ``upsertSupplied: true, c: {new: <result>}``), where Tidemark
   inserted the stages' output over the ``on`` values.
2. A write error during ``$merge`` (a duplicate key, 66, 121): mongod writes each batch as an unordered
   ``insert``/``update`` (``ordered: false``), so the batch's other documents are written, then the
   first error is the stage's; Tidemark stopped at the first one and wrote nothing.
3. The unique index backing ``on`` must have the pipeline's collation (``collatorsMatch``): an
   ``en_US`` index served an ``en_US`` aggregate (or one over an ``en_US`` source collection) in mongod,
   51183 in Tidemark.
4. A unique index whose key pattern holds a non-number (``"2dsphere"``, ``"2d"``, ``"text"``) never backs
   ``on`` (keyPatternNamesExactPaths): 51183 up front, where Tidemark took it and failed at run time.

Hypothesis checks the family of (2): random sources and targets (a unique index on ``a``), every
merge mode, against a small model of mongod's unordered batch.
"""

from __future__ import annotations

import pytest
from bson import SON
from harness.jstests import aggregate_fails, bag, unordered
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("aggregate", "insert", "update", "find", "createIndexes", "create")

HYPO = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

PIPELINE = [{"$addFields": {"x": 1}}]


def _merge(into, when_matched, when_not_matched="insert", **extra):
    return {"$merge": {"into": into, "whenMatched": when_matched, "whenNotMatched": when_not_matched, **extra}}


def _all(coll, projection=None):
    return bag(coll.find({}, projection), unordered)


# --------------------------------------------------------------------------------------------------
# 1. whenMatched: [stages], whenNotMatched: "insert" inserts the result itself


def test_unmatched_result_is_inserted_as_it_is(db):
    db.src.insert_one({"_id": 1, "a": 1, "b": "a"})
    list(db.src.aggregate([_merge("tgt", PIPELINE)]))
    assert list(db.tgt.find()) == [{"_id": 1, "a": 1, "b": "a"}]
    list(db.src.aggregate([_merge("tgt", PIPELINE)]))  # now matched: the stages run over the target's
    assert list(db.tgt.find()) == [{"_id": 1, "a": 1, "b": "a", "x": 1}]


def test_unmatched_result_keeps_its_field_order_and_dollar_fields(db):
    """merge_with_dollar_fields.js: {$dollar: 1, joinField} without a match is inserted as it is (c.new
    is a replacement: its $-prefixed field is neither an operator nor refused); matched, the stages
    run over the target document."""
    db.src.insert_one(SON([("$dollar", 1), ("joinField", "joinField")]))
    db.tgt.create_index("joinField", unique=True)
    pipeline = [{"$project": {"_id": 0}},
                _merge("tgt", [{"$addFields": {"b": 1}}], on="joinField")]
    list(db.src.aggregate(pipeline))
    assert list(db.tgt.find({}, {"_id": 0})) == [{"$dollar": 1, "joinField": "joinField"}]
    db.tgt.drop()
    db.tgt.create_index("joinField", unique=True)
    db.tgt.insert_one({"a": 1, "joinField": "joinField"})
    list(db.src.aggregate(pipeline))
    assert list(db.tgt.find({}, {"_id": 0})) == [{"a": 1, "joinField": "joinField", "b": 1}]


def test_unmatched_result_without_id_gets_a_generated_one(db):
    """mode_pipeline_insert.js testMergeWhenDocIdIsRemovedFromProjection: ``_id`` projected out and
    ``on: "_id"``: an ObjectId is generated, the rest of the result is inserted."""
    db.src.insert_many([{"_id": 1, "a": 1, "b": "a"}, {"_id": 2, "a": 2, "b": "b"}])
    db.tgt.insert_one({"_id": 1, "b": "c"})
    list(db.src.aggregate([{"$project": {"_id": 0}}, _merge("tgt", PIPELINE)]))
    assert _all(db.tgt, {"_id": 0}) == bag([{"b": "c"}, {"a": 1, "b": "a"}, {"a": 2, "b": "b"}], unordered)
    assert all(d["_id"] != 2 for d in db.tgt.find())


def test_unmatched_result_passes_the_validator(db):
    """The inserted result is checked by the target's validator (121), not the stages' output."""
    db.create_collection("tgt", validator={"x": {"$exists": True}})
    db.src.insert_one({"_id": 1, "a": 1})
    aggregate_fails(db.src, [_merge("tgt", PIPELINE)], 121)
    assert list(db.tgt.find()) == []
    db.src.update_one({"_id": 1}, {"$set": {"x": 0}})
    list(db.src.aggregate([_merge("tgt", PIPELINE)]))
    assert list(db.tgt.find()) == [{"_id": 1, "a": 1, "x": 0}]


def test_merge_pipeline_insert_equals_the_upsert_supplied_update(db):
    """The same statement through the ``update`` command, as mongod's $merge sends it."""
    db.src.insert_many([{"_id": 1, "a": 1}, {"_id": 2, "a": 2}])
    for coll in (db.tgt, db.expected):
        coll.insert_one({"_id": 1, "b": 1})
    list(db.src.aggregate([_merge("tgt", PIPELINE)]))
    for doc in db.src.find():
        db.command({"update": "expected", "ordered": False,
                    "updates": [{"q": {"_id": doc["_id"]}, "u": PIPELINE, "c": {"new": doc}, "upsert": True,
                                 "upsertSupplied": True}]})
    assert _all(db.tgt) == _all(db.expected) == bag([{"_id": 1, "b": 1, "x": 1}, {"_id": 2, "a": 2}], unordered)


# --------------------------------------------------------------------------------------------------
# 2. write errors: the batch is unordered


@pytest.mark.parametrize("when_matched", ["fail", "replace", "merge", "keepExisting", PIPELINE],
                         ids=["fail", "replace", "merge", "keepExisting", "pipeline"])
def test_duplicate_key_writes_the_rest_of_the_batch(db, when_matched):
    """batch_writes.js: a unique index on ``a`` and a conflicting target document; the conflict is
    11000, every other document of the batch is written (9 in all)."""
    db.batch_writes.insert_many([{"_id": i, "a": i} for i in range(10)])
    db.batch_writes_out.insert_one({"_id": 2, "a": 1})
    db.batch_writes_out.create_index("a", unique=True)
    aggregate_fails(db.batch_writes, [{"$sort": {"a": 1}}, _merge("batch_writes_out", when_matched)], 11000)
    assert db.batch_writes_out.count_documents({}) == 9
    assert db.batch_writes_out.count_documents({"_id": 1}) == 0  # the one that conflicted
    others = {d["_id"]: d for d in db.batch_writes_out.find({"_id": {"$nin": [1, 2]}})}
    assert sorted(others) == [0, 3, 4, 5, 6, 7, 8, 9]


def test_batch_writes_js_runs_twice(db):
    """batch_writes.js as written: fail/insert, then replace/insert over the result."""
    coll, out = db.batch_writes, db.batch_writes_out
    coll.insert_many([{"_id": i, "a": i} for i in range(10)])
    out.insert_one({"_id": 2, "a": 1})
    out.create_index("a", unique=True)
    aggregate_fails(coll, [_merge(out.name, "fail")], 11000)
    assert out.count_documents({}) == 9
    aggregate_fails(coll, [{"$sort": {"a": 1}}, _merge(out.name, "replace")], 11000)
    assert out.count_documents({}) == 9
    assert out.find_one({"_id": 2}) == {"_id": 2, "a": 2}  # replaced once {_id: 1, a: 1} had failed


def test_first_failure_is_reported_after_the_batch(db):
    """Two conflicts in one batch: both documents are left out, the others written; the error is the
    first statement's (on ``_id`` here: whenMatched "fail" found the same 'on' values)."""
    db.src.insert_many([{"_id": i, "a": i} for i in range(6)])
    db.tgt.insert_many([{"_id": 1, "a": 100}, {"_id": 50, "a": 4}])
    db.tgt.create_index("a", unique=True)
    error = aggregate_fails(db.src, [{"$sort": {"_id": 1}}, _merge("tgt", "fail")], 11000)
    assert "whenMatched: fail found an existing document" in str(error)
    assert error.details.get("keyPattern") == {"_id": 1}
    assert _all(db.tgt) == bag([{"_id": 0, "a": 0}, {"_id": 1, "a": 100}, {"_id": 2, "a": 2}, {"_id": 3, "a": 3},
                                {"_id": 5, "a": 5}, {"_id": 50, "a": 4}], unordered)


def test_immutable_field_error_writes_the_rest_of_the_batch(db):
    """replace on ``a`` with another ``_id``: 66 for that statement, the others written."""
    db.tgt.create_index("a", unique=True)
    db.tgt.insert_many([{"_id": 10, "a": 1}, {"_id": 2, "a": 2, "old": True}])
    db.src.insert_many([{"_id": 1, "a": 1, "v": 1}, {"_id": 2, "a": 2, "v": 2}, {"_id": 3, "a": 3, "v": 3}])
    aggregate_fails(db.src, [{"$sort": {"_id": 1}}, _merge("tgt", "replace", on="a")], 66)
    assert _all(db.tgt) == bag([{"_id": 10, "a": 1}, {"_id": 2, "a": 2, "v": 2}, {"_id": 3, "a": 3, "v": 3}],
                               unordered)


def test_validation_error_writes_the_rest_of_the_batch(db):
    db.create_collection("tgt", validator={"a": {"$lt": 5}})
    db.src.insert_many([{"_id": i, "a": i} for i in range(3, 8)])
    aggregate_fails(db.src, [_merge("tgt", "merge")], 121)
    assert _all(db.tgt) == bag([{"_id": 3, "a": 3}, {"_id": 4, "a": 4}], unordered)
    list(db.src.aggregate([_merge("tgt", "merge")], bypassDocumentValidation=True))
    assert db.tgt.count_documents({}) == 5


def test_write_error_wins_over_no_match_and_stops_later_batches(db):
    """whenNotMatched "fail": a batch with both a duplicate and a result without a match reports the
    duplicate (mongod checks the write result first, then nMatched); a later 16 MB batch is not written."""
    big = "x" * (1024 * 1024 - 64)
    db.tgt.create_index("a", unique=True)
    db.tgt.insert_many([{"_id": i, "a": i} for i in range(20)] + [{"_id": 99, "a": 100}])
    db.src.insert_many([{"_id": i, "a": 100 if i == 3 else i, "pad": big} for i in range(20)])
    db.tgt.delete_one({"_id": 5})
    aggregate_fails(db.src, [{"$sort": {"_id": 1}}, _merge("tgt", "replace", "fail")], 11000)
    written = {d["_id"] for d in db.tgt.find({"pad": {"$exists": True}}, {"pad": 0})}
    assert written == set(range(16)) - {3, 5}  # the first batch's 16 documents, less the two failures
    assert db.tgt.count_documents({}) == 20


# the family: random sources and targets, a unique index on 'a', every mode, against a model of
# mongod's unordered batch (each statement on its own; the first failure reported after the batch)

_MODES = [("replace", "insert"), ("replace", "fail"), ("replace", "discard"), ("merge", "insert"),
          ("merge", "fail"), ("merge", "discard"), ("keepExisting", "insert"), ("fail", "insert"),
          ("pipeline", "insert"), ("pipeline", "fail"), ("pipeline", "discard")]
_STAGES = [{"$set": {"s": {"$add": ["$$new.b", 1]}}}]
_DOC = st.fixed_dictionaries({"a": st.integers(0, 5), "b": st.integers(0, 3)})


def _model(sources: list[dict], targets: list[dict], mode: tuple[str, str]) -> tuple[list[dict], int | None]:
    """The target after the $merge and the error code (None: no error), as mongod 7.0 writes it."""
    when_matched, when_not_matched = mode
    docs = {d["_id"]: dict(d) for d in targets}
    error = None
    unmatched = False

    def a_taken(a, by):
        return any(d["a"] == a and i != by for i, d in docs.items())

    for doc in sources:
        old = docs.get(doc["_id"])
        new = None
        if when_matched == "fail" or old is None:
            if when_matched != "fail" and when_not_matched != "insert":
                unmatched = unmatched or when_not_matched == "fail"
                continue
            new = dict(doc)  # (pipeline: the result itself, upsertSupplied)
            if old is not None or a_taken(new["a"], None):
                error = error or 11000
                continue
        elif when_matched == "keepExisting":
            continue
        elif when_matched == "replace":
            new = dict(doc)
        elif when_matched == "merge":
            new = {**old, **doc}
        else:
            new = {**old, "s": doc["b"] + 1}
        if a_taken(new["a"], doc["_id"]):
            error = error or 11000
            continue
        docs[doc["_id"]] = new
    if error is None and unmatched:
        error = 13113
    return list(docs.values()), error


@HYPO
@given(sources=st.dictionaries(st.integers(0, 6), _DOC, max_size=6),
       targets=st.dictionaries(st.integers(0, 6), _DOC, max_size=6),
       mode=st.sampled_from(_MODES))
def test_merge_batch_matches_the_unordered_model(db, sources, targets, mode):
    source, target = db.family_source, db.family_target
    source.drop()
    target.drop()
    target.create_index("a", unique=True)
    source_docs = sorted(([dict(d, _id=i) for i, d in sources.items()]), key=lambda d: d["_id"])
    target_docs, seen = [], set()
    for i, d in targets.items():  # (the target itself keeps 'a' unique)
        if d["a"] not in seen:
            seen.add(d["a"])
            target_docs.append(dict(d, _id=i))
    if source_docs:
        source.insert_many([dict(d) for d in source_docs])
    if target_docs:
        target.insert_many([dict(d) for d in target_docs])
    when_matched = _STAGES if mode[0] == "pipeline" else mode[0]
    expected, code = _model(source_docs, target_docs, mode)
    try:
        list(source.aggregate([{"$sort": {"_id": 1}}, _merge(target.name, when_matched, mode[1])]))
        got = None
    except OperationFailure as e:
        got = e.code
    assert got == code
    assert _all(target) == bag(expected, unordered)


# --------------------------------------------------------------------------------------------------
# 3. the unique index's collation must be the pipeline's


def _modes():
    for when_matched in ("replace", "keepExisting", "merge", "fail", PIPELINE):
        for when_not_matched in ("insert", "discard", "fail"):
            if when_matched in ("keepExisting", "fail") and when_not_matched != "insert":
                continue
            yield when_matched, when_not_matched


def _fails_no_index(db, target, on, **options):
    """requires_unique_index.js assertMergeFailsWithoutUniqueIndex: 51183 in every mode."""
    for when_matched, when_not_matched in _modes():
        aggregate_fails(db.source, [_merge(target, when_matched, when_not_matched, on=on)], 51183, **options)


def _works(db, target, on, source="source", **options):
    for when_matched, when_not_matched in _modes():
        if when_not_matched == "fail" or when_matched == "fail":
            continue  # (the documents are already there / not there: these modes fail for their own reasons)
        list(db[source].aggregate([{"$project": {"_id": 0}},
                                   _merge(target, when_matched, when_not_matched, on=on)], **options))


@pytest.fixture
def src(db):
    db.source.insert_many([{"_id": 0, "a": 0}, {"_id": 1, "a": 1}])
    return db


def test_collated_unique_index_backs_a_collated_aggregate(src):
    db = src
    db.ci.create_index("a", unique=True, collation={"locale": "en_US"})
    _fails_no_index(db, "ci", "a")
    _fails_no_index(db, "ci", "a", collation={"locale": "en"})
    _fails_no_index(db, "ci", "a", collation={"locale": "simple"})
    _fails_no_index(db, "ci", "a", collation={"locale": "en_US", "strength": 1})
    _works(db, "ci", "a", collation={"locale": "en_US"})
    assert _all(db.ci, {"_id": 0, "x": 0}) == bag([{"a": 0}, {"a": 1}], unordered)  # matched by 'a', not doubled
    db.ci.drop_index("a_1")
    db.ci.create_index("a", collation={"locale": "en_US"})  # not unique
    _fails_no_index(db, "ci", "a", collation={"locale": "en_US"})


def test_collection_default_collation(src):
    """The index inherits the target's default; the pipeline's collation is the aggregate's, else the
    *source* collection's default (the target's does not count)."""
    db = src
    db.create_collection("ci", collation={"locale": "en_US"})
    db.ci.create_index("a", unique=True)
    _fails_no_index(db, "ci", "a")
    _works(db, "ci", "a", collation={"locale": "en_US"})
    db.create_collection("new_source", collation={"locale": "en_US"})
    db.new_source.insert_many([{"_id": 1, "a": 1}, {"_id": 2, "a": 2}])
    _works(db, "ci", "a", source="new_source")
    aggregate_fails(db.new_source, [_merge("ci", "replace", on="a")], 51183, collation={"locale": "simple"})
    db.drop_collection("ci")
    db.ci.create_index("a", unique=True)  # simple
    _works(db, "ci", "a", collation={"locale": "simple"})
    _fails_no_index(db, "ci", "a", collation={"locale": "en_US"})
    aggregate_fails(db.new_source, [_merge("ci", "replace", on="a")], 51183)


# --------------------------------------------------------------------------------------------------
# 4. key patterns of numbers only


def test_special_index_types_never_back_on(src):
    db = src
    db.sit.create_index([("a", 1), ("text", "text")], unique=True)
    for on in ("a", ["a", "text"], "text"):
        _fails_no_index(db, "sit", on)
    db.drop_collection("sit")
    db.sit.create_index([("a", 1), ("geo", "2dsphere")], unique=True)
    for on in ("a", ["a", "geo"], ["geo", "a"]):
        _fails_no_index(db, "sit", on)
    db.drop_collection("sit")
    db.sit.create_index([("geo", "2d")], unique=True)
    for on in (["a", "geo"], "geo"):
        _fails_no_index(db, "sit", on)
    db.drop_collection("sit")
    db.sit.create_index([("a", "hashed")])
    _fails_no_index(db, "sit", "a")
    assert db.sit.count_documents({}) == 0


def test_numeric_key_patterns_of_any_number_type(src):
    """isNumber: an int, a double, a negative or a decimal key value all back ``on``."""
    from bson.decimal128 import Decimal128
    from bson.int64 import Int64

    db = src
    for value in (1, -1, 1.5, Int64(1), Decimal128("-2")):
        db.drop_collection("num")
        db.command({"createIndexes": "num", "indexes": [{"key": {"a": value}, "name": "a", "unique": True}]})
        list(db.source.aggregate([{"$project": {"_id": 0}}, _merge("num", "replace", on="a")]))
        assert _all(db.num, {"_id": 0}) == bag([{"a": 0}, {"a": 1}], unordered)


# -- no_output_to_system.js: the internal databases ------------------------------------------------------

@pytest.mark.parametrize("target_db", ["admin", "config", "local"])
@pytest.mark.parametrize("stage", ["$out", "$merge"])
def test_no_output_into_an_internal_database(client, db, target_db, stage):
    """$out / $merge into admin, config or local is refused before anything runs (31321 / 31320,
    NamespaceString::isOnInternalDb); Tidemark wrote the documents (admin.users, config.output)."""
    db.c.insert_one({"_id": 1})
    spec = {"db": target_db, "coll": "out_target"}
    if stage == "$merge":
        spec = {"into": spec}
    with pytest.raises(OperationFailure) as info:
        list(db.c.aggregate([{stage: spec}]))
    code, verb = (31321, "Can't $out") if stage == "$out" else (31320, "Cannot $merge")
    assert info.value.code == code
    assert info.value.details["errmsg"] == f"{verb} to internal database: {target_db}"
    assert "out_target" not in client[target_db].list_collection_names()
