"""MongoDB's index and planning jstests (``jstests/core/index/``, ``jstests/core/query/`` hint and min/max)
ported to pymongo against a real Tidemark server: the documents a query returns through an index, through
a hint to it and through a collection scan (``{$natural: 1}``), which must be the same; unique and sparse
index semantics, hint and min/max error codes.

Ported (MongoDB 7.0 behaviour as the reference), from ``jstests/core/index/``: index1.js, index2.js,
index4.js, index5.js, index6.js, index8.js, index9.js, index13.js, index_arr2.js, index_check2.js,
index_check6.js, index_check7.js, index_diag.js, index_bounds_number_edge_cases.js, index_bounds_object.js,
index_bounds_code.js, index_bounds_timestamp.js, index_bounds_pipe.js, index_multiple_compatibility.js,
index_sort_within_multiple_point_ranges.js, elemmatch_index.js; ``hashed/``: hashed_index_queries.js,
hashed_index_queries_with_logical_operators.js, hashed_index_sort.js, hashed_index_with_arrays.js;
``covered/``: coveredIndex1.js, coveredIndex2.js, covered_index_compound_1.js, covered_index_negative_1.js,
covered_index_simple_1.js, covered_index_simple_2.js, covered_index_simple_3.js, covered_index_simple_id.js,
covered_index_sort_1.js, covered_index_sort_2.js, covered_index_sort_3.js,
covered_index_sort_no_fetch_optimization.js (results only); from ``jstests/core/query/``: hint1.js,
agg_hint.js (results), min_max_bounds.js, minmax_edge.js, min_max_hashed_index.js, min_max_key.js.
(minmax.js is in test_jstests_find_cursors.py; index_arr1, index_check3/5, index_many, the partial and
sparse files in test_jstests_index_ddl.py and test_jstests_query_semantics.py.)

Beyond the jstests, ``test_index_scans_return_what_a_collection_scan_returns`` states their common
invariant as a Hypothesis property: random documents (arrays, nulls, missing fields, subdocuments, every
numeric type), random compound indexes and random filters return the same documents through the
planner's choice, a hint to each index and a collection scan, and sorts the same order of sort keys.

Left out: explain shapes (index bounds, stages, keys examined, covered or not), plan-cache and index-filter
checks, failpoints, sharding and replication-only parts, SBE-only checks, profiler and metrics. Wildcard
indexes (refused by Tidemark with 115 on purpose), geo and text indexes are in their own ports.
"""

from __future__ import annotations

import pytest
from bson.code import Code
from bson.int64 import Int64
from bson.max_key import MaxKey
from bson.min_key import MinKey
from bson.regex import Regex
from bson.timestamp import Timestamp
from harness.jstests import bag, command_fails, fails, ms
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands(
    "insert", "find", "getMore", "aggregate", "createIndexes", "dropIndexes", "delete", "update", "drop",
    "create", "count", "distinct", "findAndModify", "listIndexes",
)

BAD_VALUE = 2
DUPLICATE_KEY = 11000
CANNOT_INDEX_PARALLEL_ARRAYS = 171
NATURAL = {"$natural": 1}
INF = float("inf")


def ids(docs) -> list:
    return sorted((d["_id"] for d in docs), key=repr)


def pairs(doc: dict) -> list:
    """A document as pymongo's ``min``/``max``/``sort`` take it."""
    return list(doc.items())


def make_index(coll, spec: dict, **options) -> str:
    return coll.create_index(list(spec.items()), **options)


def same_everywhere(coll, flt: dict, hints=(), *, sort=None, projection=None) -> list:
    """The documents ``flt`` finds with the planner's choice, with each of ``hints`` and with a collection
    scan, which must all be the same (as multisets of documents); the collection scan's answer."""
    __tracebackhide__ = True
    def run(hint):
        cursor = coll.find(flt, projection)
        if hint is not None:
            cursor = cursor.hint(hint)
        if sort:
            cursor = cursor.sort(list(sort.items()))
        return list(cursor)
    expected = run(NATURAL)
    for hint in (None, {"$natural": -1}, *hints):
        got = run(hint)
        assert bag(got) == bag(expected), (flt, hint, got, expected)
    return expected


# --------------------------------------------------------------------------------------------------
# The invariant every jstest here relies on: an index never changes a query's documents
# --------------------------------------------------------------------------------------------------

_FIELDS = ("a", "b", "c", "d.e", "d.f", "d", "a.0")
_scalar = st.one_of(
    st.none(), st.integers(-3, 3), st.integers(-3, 3).map(float), st.integers(-3, 3).map(Int64),
    st.sampled_from([0.5, -1.5, float("inf")]), st.sampled_from(["", "a", "ab", "b"]), st.booleans(),
    st.just(MinKey()), st.just(MaxKey()),
)
_array = st.lists(_scalar, max_size=3)
_value = st.one_of(_scalar, _scalar, _array, st.fixed_dictionaries({"e": _scalar}),
                   st.lists(st.one_of(_scalar, st.lists(_scalar, max_size=2)), max_size=2))  # (nested arrays)


# a subdocument under d: e and f each missing, a scalar or (rarely) an array
_sub = st.fixed_dictionaries({}, optional={"e": st.one_of(_scalar, _scalar, _array), "f": _scalar})


@st.composite
def _documents(draw) -> list[dict]:
    docs = []
    for i in range(draw(st.integers(0, 10))):
        doc: dict = {"_id": i}
        array_field = draw(st.sampled_from(["a", "b", "c", "d"]))  # one array path per document
        for field in ("a", "b", "c"):
            if draw(st.integers(0, 4)) == 0:
                continue  # missing
            doc[field] = draw(_value if field == array_field else _scalar)
        d = draw(st.sampled_from(["missing", "scalar", "doc", "array"]))
        if d == "scalar":
            doc["d"] = draw(_scalar)
        elif d == "doc":
            doc["d"] = draw(_sub)
        elif d == "array" and array_field == "d":
            doc["d"] = draw(st.lists(st.one_of(_sub, _scalar), max_size=3))
        docs.append(doc)
    return docs


_index_spec = st.lists(st.sampled_from(_FIELDS), min_size=1, max_size=3, unique=True).flatmap(
    lambda fields: st.tuples(*[st.sampled_from([1, -1]) for _ in fields]).map(
        lambda dirs: dict(zip(fields, dirs, strict=True))))

_leaf = st.one_of(
    _scalar,
    st.lists(_scalar, min_size=1, max_size=3).map(lambda vs: {"$in": vs}),
    st.tuples(st.sampled_from(["$gt", "$gte", "$lt", "$lte"]), _scalar).map(lambda t: {t[0]: t[1]}),
    st.tuples(st.sampled_from(["$gt", "$gte"]), _scalar, st.sampled_from(["$lt", "$lte"]), _scalar).map(
        lambda t: {t[0]: t[1], t[2]: t[3]}),
    st.booleans().map(lambda b: {"$exists": b}),
    _scalar.map(lambda v: {"$ne": v}),
    st.lists(_scalar, min_size=1, max_size=2).map(lambda vs: {"$nin": vs}),
    _scalar.map(lambda v: {"$elemMatch": {"$gte": v}}),
    st.lists(_scalar, min_size=1, max_size=2).map(lambda vs: {"$all": vs}),
    st.sampled_from(["number", "string", "null", "array", "object", "bool", "minKey"]).map(lambda t: {"$type": t}),
    st.sampled_from(["^a", "b", "^$"]).map(lambda p: {"$regex": p}),
    st.tuples(st.sampled_from(["$gt", "$lte"]), _scalar).map(lambda t: {"$not": {t[0]: t[1]}}),
)
_conjunction = st.dictionaries(st.sampled_from(_FIELDS), _leaf, max_size=3)
_filter = st.one_of(_conjunction, _conjunction, _conjunction,
                    st.lists(_conjunction, min_size=1, max_size=3).map(lambda fs: {"$or": fs}),
                    st.tuples(_conjunction, st.lists(_conjunction, min_size=1, max_size=2)).map(
                        lambda t: {**t[0], "$or": t[1]}))
_sort = st.one_of(st.none(), _index_spec)


@settings(max_examples=200, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(docs=_documents(), specs=st.lists(_index_spec, min_size=1, max_size=3), filters=st.lists(_filter, min_size=1,
                                                                                              max_size=4),
       sort=_sort)
def test_index_scans_return_what_a_collection_scan_returns(db, docs, specs, filters, sort):
    """For random documents (arrays, nulls, missing fields, subdocuments, every numeric type, MinKey /
    MaxKey) and random compound indexes, every conjunction of equality / ``$in`` / range / ``$exists`` /
    ``$ne`` / ``$nin`` / ``$elemMatch`` predicates returns the same documents through the planner's
    choice, a hint to each index and a collection scan (``{$natural: 1}``); with a sort, in the same order
    of sort keys."""
    coll = db.c
    coll.drop()
    if docs:
        coll.insert_many(docs)
    made = []
    for spec in specs:
        try:
            make_index(coll, spec)
        except OperationFailure as error:
            assume(error.code == CANNOT_INDEX_PARALLEL_ARRAYS)
            continue
        made.append(spec)
    for flt in filters:
        expected = same_everywhere(coll, flt, made)
        if sort:
            scan = [d["_id"] for d in coll.find(flt).sort(list(sort.items())).hint(NATURAL)]
            assert sorted(scan, key=repr) == ids(expected)
            for hint in (None, *made):
                cursor = coll.find(flt).sort(list(sort.items()))
                got = list(cursor.hint(hint) if hint else cursor)
                # ties may come in any order: compare the tie classes, in sequence
                classes = _tie_classes(coll, flt, sort)
                assert [classes[i] for i in (d["_id"] for d in got)] == [classes[i] for i in scan], (flt, sort, hint)


def _tie_classes(coll, flt: dict, sort: dict) -> dict:
    """A label per found document, shared by the documents whose sort keys are equal, read from two
    collection-scan sorts with ties broken by ``_id`` ascending and descending: a block of equal keys
    ends where both orders have seen the same documents."""
    up = [d["_id"] for d in coll.find(flt).sort([*sort.items(), ("_id", 1)]).hint(NATURAL)]
    down = [d["_id"] for d in coll.find(flt).sort([*sort.items(), ("_id", -1)]).hint(NATURAL)]
    classes: dict = {}
    block: list = []
    seen_up: set = set()
    seen_down: set = set()
    for position, (x, y) in enumerate(zip(up, down, strict=True)):
        block.append(x)
        seen_up.add(x)
        seen_down.add(y)
        if seen_up == seen_down:
            classes.update(dict.fromkeys(block, position))
            block = []
    return classes


def test_sort_with_an_empty_array_through_an_index(db):
    """An empty array's key is undefined, below null and missing: a sort through an index on the field
    puts ``{b: []}`` first, as the collection scan's sort does."""
    coll = db.c
    coll.insert_many([{"_id": 0}, {"_id": 1, "b": []}, {"_id": 2, "b": None}])
    assert [d["_id"] for d in coll.find().sort("b", 1).hint(NATURAL)] == [1, 0, 2]
    make_index(coll, {"b": 1})
    assert [d["_id"] for d in coll.find().sort("b", 1).hint({"b": 1})][0] == 1


# --------------------------------------------------------------------------------------------------
# index1.js, index2.js, index4.js, index5.js, index6.js: embedded, nested and reverse indexes
# --------------------------------------------------------------------------------------------------

def test_index_on_embedded_field_keeps_whole_document_equality(db):
    """index1.js: an index on ``z.a`` does not make ``{z: {a: 17}}`` match ``{z: {a: 17, b: 4}}``; sorts on
    the indexed path return every document."""
    coll = db.c
    coll.insert_one({"name": "foo", "z": {"a": 17, "b": 4}})
    assert coll.find_one({"z": {"a": 17}}) is None
    make_index(coll, {"z.a": 1})
    assert coll.find_one()["z"]["a"] == 17
    assert coll.find_one({"z": {"a": 17}}) is None
    coll.insert_one({"name": "bar", "z": {"a": 18}})
    assert len(list(coll.find().sort("z.a", 1))) == 2
    assert len(list(coll.find().sort("z.a", -1))) == 2


@pytest.mark.parametrize("indexed", [False, True])
def test_index_on_embedded_object_key(db, indexed):
    """index2.js: with and without an index on ``z`` (a document), equality on the whole document counts
    the same; sorts on it return every document."""
    coll = db.c
    if indexed:
        make_index(coll, {"z": 1})
    coll.insert_many([{"_id": 0, "name": "foo", "z": {"a": 17}}, {"_id": 1, "name": "foo", "z": {"a": 17}},
                      {"_id": 2, "name": "barrr", "z": {"a": 18}},
                      {"_id": 3, "name": "barrr", "z": {"k": "zzz", "L": [1, 2]}}])
    assert coll.find_one({"z": {"a": 17}})["z"]["a"] == 17
    assert coll.count_documents({"z": {"a": 17}}) == 2
    assert coll.count_documents({"z": {"a": 18}}) == 1
    # (the order of the two equal keys is the plan's: not checked)
    assert [d["_id"] for d in coll.find().sort("z", 1)][2:] == [2, 3]
    assert [d["_id"] for d in coll.find().sort("z", -1)][:2] == [3, 2]
    same_everywhere(coll, {"z": {"a": 17}}, [{"z": 1}] if indexed else [])


def test_index_on_array_subdocument_field(db):
    """index4.js, index6.js: ``{instances: {pool: 1}}`` is no key pattern (a value must be a number or a
    string); an index on ``instances.pool`` finds documents whose array holds the subdocument."""
    coll = db.c
    coll.insert_many([{"name": "alleyinsider", "instances": [{"pool": "prod1"}, {"pool": "dev1"}]},
                      {"name": "clusterstock", "instances": [{"pool": "dev1"}]}])
    fails(lambda: coll.create_index([("instances", {"pool": 1})]), 67)  # CannotCreateIndex
    assert [i["key"] for i in coll.list_indexes()] == [{"_id": 1}]
    make_index(coll, {"instances.pool": 1})
    found = list(coll.find({"instances": {"pool": "prod1"}}))
    assert [d["name"] for d in found] == ["alleyinsider"]
    same_everywhere(coll, {"instances.pool": "dev1"}, [{"instances.pool": 1}])
    db.d.insert_one({"comments": [{"name": "eliot", "foo": 1}]})
    make_index(db.d, {"comments.name": 1})
    assert db.d.find_one({"comments.name": "eliot"}) is not None


def test_reverse_index_sorts(db):
    """index5.js: a descending index sorts both ways."""
    coll = db.c
    coll.insert_many([{"a": 1}, {"a": 2}])
    for _ in range(2):
        assert [d["a"] for d in coll.find().sort("a", 1)] == [1, 2]
        assert [d["a"] for d in coll.find().sort("a", -1)] == [2, 1]
        make_index(coll, {"a": -1})


# --------------------------------------------------------------------------------------------------
# index8.js, index9.js: unique keys, the _id index
# --------------------------------------------------------------------------------------------------

def test_unique_indexes_and_hinted_reads(db):
    """index8.js: listIndexes shows which indexes are unique and their names; a unique index refuses a
    second document with the same key, also through an array; every hinted read sees every document
    (missing fields index as null: a unique ``{b: 1}`` refuses a second document without b)."""
    coll = db.c
    make_index(coll, {"a": 1})
    make_index(coll, {"b": 1}, unique=True)
    make_index(coll, {"c": 1}, name="cIndex")
    indexes = list(coll.list_indexes())
    assert [bool(i.get("unique")) for i in indexes[1:]] == [False, True, False]
    assert indexes[3]["name"] == "cIndex"
    coll.insert_one({"a": 2, "b": 1})
    coll.insert_one({"a": 2})
    assert coll.count_documents({}) == 2
    coll.insert_one({"b": 4})
    fails(lambda: coll.insert_one({"b": 4}), DUPLICATE_KEY)
    assert coll.count_documents({}) == 3
    for hint in ({"c": 1}, {"b": 1}, {"a": 1}):
        assert len(list(coll.find().hint(hint))) == 3

    coll.drop()
    make_index(coll, {"a": 1, "b": -1}, unique=True)
    for doc in ({"a": 2, "b": 3}, {"a": 2, "b": 3}, {"a": 2, "b": 4}, {"a": 1, "b": 3}):
        try:
            coll.insert_one(doc)
        except OperationFailure as error:
            assert error.code == DUPLICATE_KEY
    assert coll.count_documents({}) == 3

    coll.drop()
    make_index(coll, {"a": 1}, unique=True)
    coll.insert_one({"a": [2, 3]})
    fails(lambda: coll.insert_one({"a": 2}), DUPLICATE_KEY)
    assert coll.count_documents({}) == 1

    coll.drop()
    make_index(coll, {"a": 1}, unique=True)
    coll.insert_one({"a": 2})
    fails(lambda: coll.insert_one({"a": [1, 2, 3]}), DUPLICATE_KEY)
    fails(lambda: coll.insert_one({"a": [3, 2, 1]}), DUPLICATE_KEY)
    assert len(list(coll.find().sort("a", 1).hint({"a": 1}))) == 1
    assert len(list(coll.find().sort("a", -1).hint({"a": 1}))) == 1


def test_id_index_is_created_once(db):
    """index9.js: a new collection has the one ``_id`` index (also with ``autoIndexId: true``); creating
    ``{_id: 1}`` again is a no-op."""
    db.create_collection("c")
    assert len(list(db.c.list_indexes())) == 1
    db.c.drop()
    db.command({"create": "c", "autoIndexId": True})
    assert len(list(db.c.list_indexes())) == 1
    make_index(db.c, {"_id": 1})
    assert len(list(db.c.list_indexes())) == 1
    db.c.drop()
    db.c.insert_one({"a": 1})
    make_index(db.c, {"_id": 1})
    assert len(list(db.c.list_indexes())) == 1


# --------------------------------------------------------------------------------------------------
# index13.js: dotted compound multikey indexes and $elemMatch
# --------------------------------------------------------------------------------------------------

INDEX13_CASES = [
    ({"a.b": 1, "a.c": 1}, [{"a": [{"b": 1}, {"c": 1}]}, {"a": [{"b": 1, "c": 1}]}], [
        {"a.b": 1, "a.c": 1},
        {"a": {"$elemMatch": {"b": 1, "c": 1}}},
        {"a.b": 1, "a": {"$elemMatch": {"c": 1}}},
        {"$and": [{"a": {"$elemMatch": {"b": 1}}}, {"a": {"$elemMatch": {"c": 1}}}]},
        {"a.b": 1, "a": {"$elemMatch": {"b": {"$gt": 0}, "c": 1}}},
        {"a": {"$elemMatch": {"b": 1, "c": 1}}, "a.b": 1},
        {"a.c": 1, "a": {"$elemMatch": {"b": 1, "c": 1}}},
        {"a": {"$elemMatch": {"b": 1, "c": 1}}, "a.b": {"$gt": 0}},
    ]),
    ({"a.b": 1, "a.c": 1, "d.e": 1, "d.f": 1}, [
        {"a": [{"b": 1}, {"c": 1}], "d": {"e": 1, "f": 1}}, {"a": [{"b": 1, "c": 1}], "d": {"e": 1, "f": 1}},
        {"a": {"b": 1, "c": 1}, "d": [{"e": 1, "f": 1}]}, {"a": {"b": 1, "c": 1}, "d": [{"e": 1}, {"f": 1}]},
    ], [
        {"a.b": 1, "a.c": 1, "d.e": 1, "d.f": 1},
        {"a": {"$elemMatch": {"b": 1, "c": 1}}, "d": {"$elemMatch": {"e": 1, "f": 1}}},
        {"a": {"$elemMatch": {"b": 1, "c": 1}}, "d.e": 1, "d.f": 1},
        {"a.b": 1, "a.c": 1, "d": {"$elemMatch": {"e": 1, "f": 1}}},
    ]),
    ({"a.b.c": 1, "a.b.d": 1}, [{"a": [{"b": [{"c": 1, "d": 1}]}]}, {"a": [{"b": [{"c": 1}, {"d": 1}]}]}], [
        {"a.b.c": 1, "a.b.d": 1},
        {"a": {"$elemMatch": {"b": {"$elemMatch": {"c": 1, "d": 1}}}}},
    ]),
    ({"a.b.x": 1, "a.b.y": 1}, [
        {"a": {"b": {"x": 1, "y": 1}}}, {"a": [{"b": {"x": 1}}, {"b": {"y": 1}}]},
        {"a": [{"b": [{"x": 1}, {"y": 1}]}]}, {"a": [{"b": [{"x": 1, "y": 1}]}]},
    ], [
        {"a.b.x": 1, "a.b.y": 1},
        {"a": {"$elemMatch": {"b.x": 1, "b.y": 1}}},
        {"a.b": {"$elemMatch": {"x": 1, "y": 1}}},
    ]),
    ({"a": 1, "a.b.x": 1, "a.b.y": 1}, [
        {"a": {"b": {"x": 1, "y": 1}}}, {"a": [{"b": {"x": 1}}, {"b": {"y": 1}}]},
        {"a": [{"b": [{"x": 1}, {"y": 1}]}]}, {"a": [{"b": [{"x": 1, "y": 1}]}]},
    ], [
        {"a": {"$ne": 4}, "a.b": {"$elemMatch": {"x": 1, "y": 1}}},
        {"a.b": {"$elemMatch": {"x": 1, "y": 1}}},
    ]),
    ({"a.b.c": 1, "a.e.f": 1, "a.b.d": 1, "a.e.g": 1}, [
        {"a": {"b": {"c": 1, "d": 1}, "e": {"f": 1, "g": 1}}},
        {"a": [{"b": {"c": 1}, "e": {"f": 1}}, {"b": {"d": 1}, "e": {"g": 1}}]},
        {"a": [{"b": {"c": 1}}, {"e": {"f": 1}}, {"b": {"d": 1}}, {"e": {"g": 1}}]},
        {"a": [{"b": [{"c": 1}, {"d": 1}]}, {"e": [{"f": 1}, {"g": 1}]}]},
        {"a": [{"b": [{"c": [1]}, {"d": [1]}]}, {"e": [{"f": [1]}, {"g": [1]}]}]},
        {"a": [{"b": [{"c": 1, "d": 1}]}, {"e": [{"f": 1}, {"g": 1}]}]},
        {"a": [{"b": [{"c": 1, "d": 1}]}, {"e": [{"f": 1, "g": 1}]}]},
    ], [
        {"a.b": {"$elemMatch": {"c": 1, "d": 1}}, "a.e": {"$elemMatch": {"f": 1, "g": 1}}},
        {"a.b": {"$elemMatch": {"d": 1}}, "a.e": {"$elemMatch": {"f": 1, "g": 1}}},
    ]),
    ({"a.b.c": 1, "a.e.c": 1, "a.b.d": 1, "a.e.d": 1}, [
        {"a": [{"b": [{"c": 1, "d": 1}]}, {"e": [{"c": 1, "d": 1}]}]},
    ], [
        {"a.b": {"$elemMatch": {"c": 1, "d": 1}}, "a.e": {"$elemMatch": {"c": 1, "d": 1}}},
    ]),
]


@pytest.mark.parametrize(("index", "docs", "queries"), INDEX13_CASES, ids=[str(i) for i in range(len(INDEX13_CASES))])
def test_elem_match_over_compound_multikey_index(db, index, docs, queries):
    """index13.js (SERVER-3104): top-level and ``$elemMatch`` predicates over a dotted compound multikey
    index return, hinted, what a collection scan returns."""
    coll = db.c
    make_index(coll, index)
    coll.insert_many([dict(d) for d in docs])
    for query in queries:
        same_everywhere(coll, query, [index])


def test_unique_compound_multikey_keys_come_from_one_element(db):
    """The keys of ``{a.b, a.c}`` over an array of documents pair each element's b with its own c
    (mongod's BtreeKeyGenerator), so a unique index holds ``{a: [{b: 1, c: 1}, {b: 2, c: 2}]}`` beside
    ``{a: [{b: 1, c: 2}]}`` and refuses ``{a: {b: 2, c: 2}}``; a scalar element of the array is a null key."""
    coll = db.c
    make_index(coll, {"a.b": 1, "a.c": 1}, unique=True)
    coll.insert_one({"_id": 1, "a": [{"b": 1, "c": 1}, {"b": 2, "c": 2}]})
    coll.insert_one({"_id": 2, "a": [{"b": 1, "c": 2}]})
    fails(lambda: coll.insert_one({"_id": 3, "a": {"b": 2, "c": 2}}), DUPLICATE_KEY)
    coll.insert_one({"_id": 4, "a": [5, {"b": 3, "c": 3}]})
    fails(lambda: coll.insert_one({"_id": 5}), DUPLICATE_KEY)  # (null, null): element 5 of _id 4
    assert ids(coll.find({"a.b": 1, "a.c": 2})) == [1, 2]
    assert ids(coll.find({"a.b": 1, "a.c": 2}).hint({"a.b": 1, "a.c": 1})) == [1, 2]
    assert ids(coll.find({"a": {"$elemMatch": {"b": 1, "c": 2}}}).hint({"a.b": 1, "a.c": 1})) == [2]


def test_arrays_under_different_elements_are_not_parallel(db):
    """index13.js: ``a.b.c`` and ``a.e.f`` meet arrays inside different elements of ``a``: not parallel
    arrays (mongod expands ``a`` first); two arrays side by side in one document are (171)."""
    coll = db.c
    make_index(coll, {"a.b.c": 1, "a.e.f": 1})
    coll.insert_one({"_id": 1, "a": [{"b": [{"c": 1}, {"c": 2}]}, {"e": [{"f": 1}, {"f": 2}]}]})
    fails(lambda: coll.insert_one({"_id": 2, "a": {"b": [{"c": 1}], "e": [{"f": 1}]}}), CANNOT_INDEX_PARALLEL_ARRAYS)
    fails(lambda: coll.insert_one({"_id": 3, "a": [{"b": [{"c": 1}], "e": [{"f": 1}]}]}), CANNOT_INDEX_PARALLEL_ARRAYS)
    assert ids(coll.find({"a.b.c": 2, "a.e.f": 1}).hint({"a.b.c": 1, "a.e.f": 1})) == [1]


# --------------------------------------------------------------------------------------------------
# index_arr2.js, index_check2.js, index_check6.js, hint1.js
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("indexed", [False, True])
def test_multi_update_of_indexed_array_element(db, indexed):
    """index_arr2.js: a multi-update setting ``a.0.b.c`` on the matched documents updates all of them,
    with an index on ``a.b.c`` too, and the count of the new value through the index agrees."""
    coll = db.c
    now = 1000
    coll.insert_many([{"_id": i, "a": [{"b": {"c": 1}}], "created": now - 20 + i} for i in range(21)])
    query = {"created": {"$gte": now - 5}}
    matched = coll.count_documents(query)
    if indexed:
        coll.create_index([("a.b.c", 1)], name="x")
    result = coll.update_many(query, {"$set": {"a.0.b.c": 0}})
    assert result.matched_count == matched == 6
    assert coll.count_documents({**query, "a.b.c": 0}) == matched
    same_everywhere(coll, {"a.b.c": 0}, [{"a.b.c": 1}] if indexed else [])


def test_all_over_multikey_index(db):
    """index_check2.js: equality and ``$all`` on an array of tags count the same with an index."""
    coll = db.c
    coll.insert_many([{"num": i, "tags": [f"tag{(i * j) % 50}" for j in range(1, 5)]} for i in range(1000)])
    queries = [({"tags": "tag6"}, 120), ({"tags": "tag12"}, 120), ({"tags": {"$all": ["tag6", "tag12"]}}, 60)]
    for query, count in queries:
        assert len(list(coll.find(query))) == count
    make_index(coll, {"tags": 1})
    for query, count in queries:
        assert len(same_everywhere(coll, query, [{"tags": 1}])) == count


def test_compound_ranges_in_every_index_direction(db):
    """index_check6.js (results, not keys examined): equality / range / ``$in`` combinations over a
    compound index of every direction, sorted both ways with a hint, return what a collection scan does."""
    docs = [{"a": a, "b": b, "c": c} for a in range(1, 10) for b in range(10) for c in range(10)]
    queries = [
        {"a": 5, "b": 5, "c": 5}, {"a": 5, "b": 5, "c": {"$gte": 5, "$lte": 6}},
        {"a": 5, "b": 5, "c": {"$gte": 5.5, "$lte": 6}}, {"a": 5, "b": 5, "c": {"$gte": 5, "$lte": 5.5}},
        {"a": 5, "b": {"$gte": 5, "$lte": 6}, "c": 5}, {"a": 5, "b": {"$gte": 5.5, "$lte": 6}, "c": 5},
        {"a": {"$gte": 5, "$lte": 6}, "b": 5, "c": 5}, {"a": {"$gte": 5.5, "$lte": 6}, "b": 5, "c": {"$gte": 5, "$lte": 6}},
        {"a": {"$gte": 5, "$lte": 6}, "b": {"$gte": 5, "$lte": 6}, "c": {"$gte": 5, "$lte": 6}},
        {"a": {"$gte": 2, "$lte": 3}, "b": {"$in": [0, 9]}}, {"a": {"$in": [3, 1]}, "c": {"$in": [8, 2]}},
    ]
    for n, (a, b, c) in enumerate([(1, 1, 1), (1, -1, 1), (-1, 1, -1), (-1, -1, -1)]):
        coll = db[f"c{n}"]
        coll.insert_many([dict(d) for d in docs])
        spec = {"a": a, "b": b, "c": c}
        make_index(coll, spec)
        for query in queries:
            expected = sorted((d["a"], d["b"], d["c"]) for d in coll.find(query).hint(NATURAL))
            for sort in (spec, {"a": -a, "b": -b, "c": -c}):
                got = [(d["a"], d["b"], d["c"]) for d in coll.find(query).hint(spec).sort(list(sort.items()))]
                assert got == sorted(expected, key=lambda t, s=sort: [v * d for v, d in zip(t, s.values(), strict=True)])
    coll = db.ages
    make_index(coll, {"age": 1, "rating": 1})
    coll.insert_many([{"age": age, "rating": r} for age in range(10, 50) for r in range(10)])
    for query, count in [({"age": 30}, 10), ({"age": {"$gte": 29, "$lte": 30}}, 20),
                         ({"age": {"$gte": 25, "$lte": 30}, "rating": {"$in": [0, 9]}}, 12),
                         ({"age": {"$gte": 29, "$lte": 30}, "rating": 5}, 2),
                         ({"age": {"$gte": 29, "$lte": 30}, "rating": {"$gte": 4, "$lte": 5}}, 4),
                         ({"age": 30, "rating": {"$gte": 4, "$lte": 5}}, 2)]:
        assert len(same_everywhere(coll, query, [{"age": 1, "rating": 1}])) == count


def test_hinted_count_with_residual_predicates(db):
    """hint1.js: a hinted, sorted count whose filter has predicates besides the hinted index's."""
    coll = db.c
    coll.insert_one({"ts": ms(1), "cls": "entry", "verticals": "alleyinsider", "live": True})
    make_index(coll, {"ts": 1})
    query = {"live": True, "ts": {"$lt": ms(1234119308272)}, "cls": "entry", "verticals": "alleyinsider"}
    assert len(list(coll.find(query).sort("ts", -1).hint({"ts": 1}))) == 1
    assert coll.count_documents(query, hint={"ts": 1}) == 1


# --------------------------------------------------------------------------------------------------
# index_bounds_number_edge_cases.js, index_bounds_object.js, index_bounds_code.js,
# index_bounds_timestamp.js, index_bounds_pipe.js, min_max_key.js
# --------------------------------------------------------------------------------------------------

def test_number_extremes_bound_an_index(db):
    """index_bounds_number_edge_cases.js: ranges at ±Infinity and ±Number.MAX_VALUE count exactly."""
    coll = db.c
    make_index(coll, {"a": 1})
    big = 1.7976931348623157e308
    coll.insert_many([{"a": v} for v in (-INF, -big, 1, big, INF)])
    cases = {"$lte": [(-INF, 1), (-big, 2), (1, 3), (big, 4), (INF, 5)],
             "$lt": [(-INF, 0), (-big, 1), (1, 2), (big, 3), (INF, 4)],
             "$gt": [(INF, 0), (big, 1), (1, 2), (-big, 3), (-INF, 4)],
             "$gte": [(INF, 1), (big, 2), (1, 3), (-big, 4), (-INF, 5)]}
    for op, pairs in cases.items():
        for value, count in pairs:
            assert len(same_everywhere(coll, {"a": {op: value}}, [{"a": 1}])) == count, (op, value)


def test_object_bounds(db):
    """index_bounds_object.js (results): comparisons with documents, the empty document and ranges of
    documents, over an index on a field holding documents; values of other types stay out; the same
    once an array makes the index multikey."""
    coll = db.c
    make_index(coll, {"a": 1})
    coll.insert_one({"a": {"b": 1}})
    cases = [({"$gt": {"b": 0}}, 1), ({"$gt": {"b": 2}}, 0), ({"$gte": {"b": 1}}, 1), ({"$gte": {"b": 1, "c": 2}}, 0),
             ({"$lt": {"b": 2}}, 1), ({"$lte": {"b": 1}}, 1)]
    for cond, count in cases:
        assert len(same_everywhere(coll, {"a": cond}, [{"a": 1}], projection={"a": 1, "_id": 0})) == count
    coll.insert_one({"a": {}})
    cases = [({"$gt": {}}, 1), ({"$gte": {}}, 2), ({"$lt": {}}, 0), ({"$lte": {}}, 1), ({"$gt": {}, "$lt": {"b": 2}}, 1),
             ({"$gte": {}, "$lt": {"b": 2}}, 2), ({"$lt": {}, "$gte": {}}, 0)]
    for cond, count in cases:
        assert len(same_everywhere(coll, {"a": cond}, [{"a": 1}])) == count, cond
    coll.delete_many({})
    coll.insert_many([{"a": "string"}, {"a": True}])
    for op in ("$gt", "$gte", "$lt", "$lte"):
        assert same_everywhere(coll, {"a": {op: {}}}, [{"a": 1}]) == []
    coll.insert_one({"a": []})
    for op in ("$gt", "$gte", "$lt", "$lte"):
        assert same_everywhere(coll, {"a": {op: {}}}, [{"a": 1}]) == []


def test_code_bounds(db):
    """index_bounds_code.js (results): comparisons with JavaScript code values stay among code values."""
    coll = db.c
    make_index(coll, {"a": 1})
    inserted = Code("function() {\n    return 1;\n}")
    other = Code("function() {\n    return 2;\n}")
    coll.insert_one({"a": inserted})
    for cond, count in [({"$gt": other}, 0), ({"$gte": other}, 0), ({"$lt": other}, 1), ({"$lte": other}, 1),
                        ({"$gt": inserted}, 0), ({"$gte": inserted}, 1), ({"$lt": inserted}, 0), ({"$lte": inserted}, 1)]:
        assert len(same_everywhere(coll, {"a": cond}, [{"a": 1}])) == count, cond
    coll.delete_many({})
    coll.insert_many([{"a": "string"}, {"a": {"b": 1}}, {"a": MaxKey()}])
    for op in ("$gt", "$gte", "$lt", "$lte"):
        assert same_everywhere(coll, {"a": {op: other}}, [{"a": 1}]) == []


def test_timestamp_bounds(db):
    """index_bounds_timestamp.js (counts): ranges of timestamps over ``{ts: 1, _id: 1}`` count exactly at
    the edges of the (seconds, increment) order."""
    coll = db.c
    make_index(coll, {"ts": 1, "_id": 1})
    top = 2**32 - 1
    coll.insert_many([{"_id": 0, "ts": Timestamp(0, 1)}, {"_id": 1, "ts": Timestamp(0, 2**31)},
                      {"_id": 2, "ts": Timestamp(0, top)}, {"_id": 3, "ts": Timestamp(1, 0)},
                      {"_id": 4, "ts": Timestamp(top, top)}])
    t00, t01, t10 = Timestamp(0, 0), Timestamp(0, 1), Timestamp(1, 0)
    for cond, count in [({"$gt": t00}, 5), ({"$gte": t00}, 5), ({"$lt": t10}, 3), ({"$lte": t10}, 4),
                        ({"$gt": t01, "$lt": t10}, 2), ({"$gt": t01, "$lte": t10}, 3), ({"$gte": t01, "$lt": t10}, 3),
                        ({"$gte": t01, "$lte": t10}, 4)]:
        assert coll.count_documents({"ts": cond}) == count, cond
        assert len(same_everywhere(coll, {"ts": cond}, [{"ts": 1, "_id": 1}], projection={"ts": 1, "_id": 0})) == count


@pytest.mark.parametrize(("pattern", "expected"), [
    ("^a", ["a", "a|b"]), ("^\\\\", ["\\|"]), ("^a|b", ["a", "a|b", "b"]), ("^a\\|", ["a|b"]), ("^\\|", ["|"]),
    ("^\\\\|b", ["\\|", "a|b", "b"]), ("^\\\\|^b", ["\\|", "b"]), ("^\\\\\\|", ["\\|"]), ("^\\Q|\\E", ["|"]),
    ("^\\Q\\|\\E", ["\\|"]),
])
def test_regex_with_pipes_over_id_index(db, pattern, expected):
    """index_bounds_pipe.js (results): anchored regexes with escaped and unescaped ``|`` over the ``_id``
    index return, sorted, the matching strings; a regex value equal to the query's is found by equality."""
    coll = db.c
    coll.insert_many([{"_id": v} for v in ("", "\\|", "a", "a|b", "b", "|")])
    query = {"_id": Regex(pattern)}
    assert [d["_id"] for d in coll.find(query, {"_id": 1}).sort("_id", 1)] == expected
    assert [d["_id"] for d in coll.find(query).sort("_id", 1).hint(NATURAL)] == expected
    other = db.regex_values
    make_index(other, {"x": 1})
    other.insert_one({"_id": 0, "x": Regex(pattern)})
    assert other.find_one({"x": Regex(pattern)}) == {"_id": 0, "x": Regex(pattern)}


@pytest.mark.parametrize("indexed", [False, True])
def test_min_key_and_max_key_comparisons(db, indexed):
    """min_max_key.js: ``$eq``/ranges against MinKey and MaxKey cross type brackets (everything lies
    between them), ordinary ranges stay in theirs; with and without an index. (Undefined is left out:
    Tidemark stores it as null.)"""
    coll = db.c
    docs = [{"_id": "a_max_key", "a": MaxKey()}, {"_id": "a_min_key", "a": MinKey()}, {"_id": "a_null", "a": None},
            {"_id": "a_number", "a": 4}, {"_id": "a_subobject", "a": {"b": "hi"}}, {"_id": "a_string", "a": "hello"}]
    coll.insert_many(docs)
    if indexed:
        make_index(coll, {"a": 1})
    every = [d["_id"] for d in docs]

    def found(cond):
        return sorted(d["_id"] for d in same_everywhere(coll, {"a": cond}, [{"a": 1}] if indexed else []))

    assert found({"$eq": MinKey()}) == ["a_min_key"]
    assert found({"$gt": MinKey()}) == sorted(set(every) - {"a_min_key"})
    assert found({"$gte": MinKey()}) == sorted(every)
    assert found({"$lt": MinKey()}) == []
    assert found({"$lte": MinKey()}) == ["a_min_key"]
    assert found({"$eq": MaxKey()}) == ["a_max_key"]
    assert found({"$gt": MaxKey()}) == []
    assert found({"$gte": MaxKey()}) == ["a_max_key"]
    assert found({"$lt": MaxKey()}) == sorted(set(every) - {"a_max_key"})
    assert found({"$lte": MaxKey()}) == sorted(every)
    assert found({"$gt": 3}) == ["a_number"]
    assert found({"$lt": 3}) == []
    assert found({"$gt": "best"}) == ["a_string"]
    db.d.insert_one({"outer": {"a": {"b": MinKey()}}})
    assert len(list(db.d.find({"outer": {"$lt": {"a": {"c": 1}}}}))) == 1
    db.e.insert_one({"outer": {"a": {"b": MaxKey()}}})
    assert len(list(db.e.find({"outer": {"$gte": {"a": {"c": 1}}}}))) == 1


# --------------------------------------------------------------------------------------------------
# min_max_bounds.js, minmax_edge.js, min_max_hashed_index.js
# --------------------------------------------------------------------------------------------------

def test_min_max_bounds_inclusion(db):
    """min_max_bounds.js: ``min`` is inclusive, ``max`` exclusive, in index order (a descending index
    runs from the larger min to the smaller max), with and without a sort; string ranges of every
    inclusivity over single and compound indexes of every direction count exactly, sorted either way."""
    coll = db.c
    coll.insert_many([{"a": 1, "b": 1}, {"a": 2, "b": 2}, {"a": 3, "b": 3}])
    make_index(coll, {"a": 1})
    assert [d["a"] for d in coll.find().sort("a", 1)] == [1, 2, 3]
    assert [d["a"] for d in coll.find().sort("a", -1)] == [3, 2, 1]
    assert [d["a"] for d in coll.find().min(pairs({"a": 1})).max(pairs({"a": 3})).hint({"a": 1})] == [1, 2]
    assert [d["a"] for d in coll.find().min(pairs({"a": 1})).max(pairs({"a": 3})).sort("a", -1).hint({"a": 1})] == [2, 1]
    make_index(coll, {"b": -1})
    assert [d["b"] for d in coll.find().sort("b", -1)] == [3, 2, 1]
    assert [d["b"] for d in coll.find().min(pairs({"b": 3})).max(pairs({"b": 1})).hint({"b": -1})] == [3, 2]
    assert [d["b"] for d in coll.find().min(pairs({"b": 3})).max(pairs({"b": 1})).sort("b", 1).hint({"b": -1})] == [2, 3]

    for direction in (1, -1):
        coll = db[f"i{direction}"]
        make_index(coll, {"i": direction})
        coll.insert_many([{"i": v} for v in "abcdde"])
        for gt, lt, count in [("$gte", "$lte", 4), ("$gt", "$lte", 3), ("$gte", "$lt", 2), ("$gt", "$lt", 1)]:
            query = {"i": {gt: "b", lt: "d"}}
            assert coll.count_documents(query) == count
            for sort in (direction, -1):
                assert len(list(coll.find(query).sort("i", sort))) == count
    extra = {"$lt": 0, "$lte": 1, "$gt": 0, "$gte": 1}
    for n, (ld, nd) in enumerate([(1, 1), (-1, 1), (1, -1), (-1, -1)]):
        coll = db[f"ln{n}"]
        make_index(coll, {"l": ld, "n": nd})
        coll.insert_many([{"l": letter, "n": number} for letter in "abcde" for number in range(1, 6)])
        for llt in ("$lt", "$lte"):
            for lgt in ("$gt", "$gte"):
                for nlt in ("$lt", "$lte"):
                    for ngt in ("$gt", "$gte"):
                        query = {"l": {llt: "d", lgt: "b"}, "n": {nlt: 4, ngt: 2}}
                        count = (1 + extra[llt] + extra[lgt]) * (1 + extra[nlt] + extra[ngt])
                        assert coll.count_documents(query) == count
                        for ls in (1, -1):
                            for ns in (1, -1):
                                got = list(coll.find(query).sort([("l", ls), ("n", ns)]))
                                assert len(got) == count, (query, ls, ns)
                                assert got == sorted(got, key=lambda d, a=ls, b=ns: (
                                    [-ord(d["l"]) if a < 0 else ord(d["l"]), d["n"] * b]))


def _minmax_docs(coll) -> None:
    coll.insert_many([{"_id": i, "a": i // 3 + 1, "b": i % 3 + 1} for i in range(9)])


ALL9 = list(range(9))
MINMAX_EDGE = [
    ({"a": 1}, [
        ("min", {"a": INF}, []), ("max", {"a": INF}, ALL9), ("min", {"a": -INF}, ALL9), ("max", {"a": -INF}, []),
        ("min", {"a": float("nan")}, ALL9), ("max", {"a": float("nan")}, []),
        ("min", {"a": {"a": 1}}, []), ("max", {"a": {"a": 1}}, ALL9), ("min", {"a": "a"}, []), ("max", {"a": "a"}, ALL9),
    ]),
    ({"a": 1, "b": -1}, [
        ("min", {"a": float("nan"), "b": 1}, ALL9), ("max", {"a": float("nan"), "b": 1}, []),
        ("min", {"a": INF, "b": 1}, []), ("max", {"a": INF, "b": 1}, ALL9),
        ("min", {"a": -INF, "b": 1}, ALL9), ("max", {"a": -INF, "b": 1}, []),
        ("min", {"a": {"a": 1}, "b": 1}, []), ("max", {"a": {"a": 1}, "b": 1}, ALL9),
        ("min", {"a": "a", "b": 1}, []), ("max", {"a": "a", "b": 1}, ALL9),
        ("min", {"a": 1, "b": INF}, ALL9), ("min", {"a": 2, "b": INF}, [3, 4, 5, 6, 7, 8]),
        ("min", {"a": 3, "b": INF}, [6, 7, 8]), ("max", {"a": 1, "b": INF}, []),
        ("max", {"a": 2, "b": INF}, [0, 1, 2]), ("max", {"a": 3, "b": INF}, [0, 1, 2, 3, 4, 5]),
        ("min", {"a": 1, "b": -INF}, [3, 4, 5, 6, 7, 8]), ("min", {"a": 2, "b": -INF}, [6, 7, 8]),
        ("min", {"a": 3, "b": -INF}, []), ("max", {"a": 1, "b": -INF}, [0, 1, 2]),
        ("max", {"a": 2, "b": -INF}, [0, 1, 2, 3, 4, 5]), ("max", {"a": 3, "b": -INF}, ALL9),
        ("min", {"a": 2, "b": float("nan")}, [6, 7, 8]), ("max", {"a": 2, "b": float("nan")}, [0, 1, 2, 3, 4, 5]),
        ("min", {"a": 2, "b": {"b": 1}}, [3, 4, 5, 6, 7, 8]), ("max", {"a": 2, "b": {"b": 1}}, [0, 1, 2]),
        ("min", {"a": 2, "b": "b"}, [3, 4, 5, 6, 7, 8]), ("max", {"a": 2, "b": "b"}, [0, 1, 2]),
    ]),
    ({"a": -1}, [
        ("min", {"a": float("nan")}, []), ("max", {"a": float("nan")}, ALL9), ("min", {"a": INF}, ALL9),
        ("max", {"a": INF}, []), ("min", {"a": -INF}, []), ("max", {"a": -INF}, ALL9),
        ("min", {"a": {"a": 1}}, ALL9), ("max", {"a": {"a": 1}}, []), ("min", {"a": "a"}, ALL9), ("max", {"a": "a"}, []),
    ]),
    ({"a": -1, "b": -1}, [
        ("min", {"a": float("nan"), "b": 1}, []), ("max", {"a": float("nan"), "b": 1}, ALL9),
        ("min", {"a": INF, "b": 1}, ALL9), ("max", {"a": INF, "b": 1}, []),
        ("min", {"a": 1, "b": INF}, [0, 1, 2]), ("min", {"a": 2, "b": INF}, [0, 1, 2, 3, 4, 5]),
        ("min", {"a": 3, "b": INF}, ALL9), ("max", {"a": 1, "b": INF}, [3, 4, 5, 6, 7, 8]),
        ("max", {"a": 2, "b": INF}, [6, 7, 8]), ("max", {"a": 3, "b": INF}, []),
        ("min", {"a": 1, "b": -INF}, []), ("min", {"a": 2, "b": -INF}, [0, 1, 2]),
        ("min", {"a": 3, "b": -INF}, [0, 1, 2, 3, 4, 5]), ("max", {"a": 1, "b": -INF}, ALL9),
        ("max", {"a": 2, "b": -INF}, [3, 4, 5, 6, 7, 8]), ("max", {"a": 3, "b": -INF}, [6, 7, 8]),
        ("min", {"a": 2, "b": float("nan")}, [0, 1, 2]), ("max", {"a": 2, "b": float("nan")}, [3, 4, 5, 6, 7, 8]),
        # (the jstest lists [3..8] and [0, 1, 2] here, copied from the ascending case; its check compares
        # only the counts, 6 and 3: with b descending, a document or string b comes first within a: 2)
        ("min", {"a": 2, "b": {"b": 1}}, [0, 1, 2, 3, 4, 5]), ("max", {"a": 2, "b": {"b": 1}}, [6, 7, 8]),
        ("min", {"a": 2, "b": "b"}, [0, 1, 2, 3, 4, 5]), ("max", {"a": 2, "b": "b"}, [6, 7, 8]),
    ]),
]


@pytest.mark.parametrize(("spec", "cases"), MINMAX_EDGE, ids=["a", "a_b-", "a-", "a-_b-"])
def test_min_max_with_infinities_nan_and_other_types(db, spec, cases):
    """minmax_edge.js: ``min``/``max`` bounds at ±Infinity, NaN (below every number) and values of other
    types (above every number), over ascending, descending and compound indexes.

    (The jstest's own check compares only the counts; the ``_id`` sets are its stated expectations, in
    the index's key order: for ``{a: 1, b: -1}`` a larger b comes first.)"""
    coll = db.c
    _minmax_docs(coll)
    make_index(coll, spec)
    for side, bound, expected in cases:
        cursor = coll.find().hint(spec)
        cursor = cursor.min(pairs(bound)) if side == "min" else cursor.max(pairs(bound))
        assert sorted(d["_id"] for d in cursor) == expected, (side, bound)


def test_min_max_with_a_three_field_index(db):
    """minmax_edge.js: ``min``/``max`` over ``{a: 1, b: -1, c: 1}`` (documents inserted in index order)."""
    coll = db.c
    spec = {"a": 1, "b": -1, "c": 1}
    make_index(coll, spec)
    coll.insert_many([{"_id": i, "a": 1 + i // 4, "b": "b" if i % 4 < 2 else "a", "c": 1 + i % 2} for i in range(8)])
    cases = [("min", {"a": 1, "b": "a", "c": 1}, [2, 3, 4, 5, 6, 7]), ("min", {"a": 2, "b": "a", "c": 2}, [7]),
             ("max", {"a": 1, "b": "a", "c": 1}, [0, 1]), ("max", {"a": 2, "b": "a", "c": 2}, [0, 1, 2, 3, 4, 5, 6]),
             ("min", {"a": INF, "b": "a", "c": 2}, []), ("max", {"a": INF, "b": "a", "c": 2}, list(range(8))),
             ("min", {"a": -INF, "b": "a", "c": 2}, list(range(8))), ("max", {"a": -INF, "b": "a", "c": 2}, []),
             ("min", {"a": 1, "b": INF, "c": 2}, [4, 5, 6, 7]), ("max", {"a": 1, "b": INF, "c": 2}, [0, 1, 2, 3]),
             ("min", {"a": 1, "b": -INF, "c": 2}, [4, 5, 6, 7]), ("max", {"a": 1, "b": -INF, "c": 2}, [0, 1, 2, 3]),
             ("min", {"a": 1, "b": "a", "c": INF}, [4, 5, 6, 7]), ("max", {"a": 1, "b": "a", "c": INF}, [0, 1, 2, 3]),
             ("min", {"a": 1, "b": "a", "c": -INF}, [2, 3, 4, 5, 6, 7]), ("max", {"a": 1, "b": "a", "c": -INF}, [0, 1])]
    for side, bound, expected in cases:
        cursor = coll.find().hint(spec)
        cursor = cursor.min(pairs(bound)) if side == "min" else cursor.max(pairs(bound))
        got = [d["_id"] for d in cursor]
        assert got == expected, (side, bound)  # (in index order: the documents were inserted in it)


def test_min_with_a_hashed_index(db):
    """min_max_hashed_index.js: ``min`` works with a hinted hashed index as with an ordinary one."""
    coll = db.c
    coll.insert_one({"a": "test"})
    make_index(coll, {"a": 1})
    assert list(coll.find({}, {"_id": 0}).min(pairs({"a": -INF})).hint({"a": 1})) == [{"a": "test"}]
    make_index(coll, {"a": "hashed"})
    assert list(coll.find({}, {"_id": 0}).min(pairs({"a": -INF})).hint({"a": "hashed"})) == [{"a": "test"}]


# --------------------------------------------------------------------------------------------------
# agg_hint.js (results): hinted aggregations, finds and counts, also on views
# --------------------------------------------------------------------------------------------------

def test_hinted_aggregations_and_views(db):
    """agg_hint.js (results, not plans): an aggregation hinted by name or key pattern, to a good or a
    poor index or ``_id``, returns what the unhinted one does; hinted finds, aggregations and counts run
    against views."""
    coll = db.c
    make_index(coll, {"x": 1})
    make_index(coll, {"y": 1})
    make_index(coll, {"x": 1, "y": 1})
    coll.insert_many([{"_id": i, "x": i, "y": 4 - i} for i in range(5)])
    pipelines = [[{"$match": {"x": 3}}], [{"$match": {"x": {"$gte": 0}}}, {"$sort": {"y": 1}}],
                 [{"$match": {"x": {"$gte": 0}}}, {"$project": {"x": 1, "y": 1, "_id": 0}}]]
    for pipeline in pipelines:
        expected = list(coll.aggregate(pipeline))
        for hint in ("x_1", {"x": 1}, {"y": 1}, {"_id": 1}, {"x": 1, "y": 1}, NATURAL):
            got = list(coll.aggregate(pipeline, hint=hint))
            if any("$sort" in stage for stage in pipeline):
                assert got == expected, (pipeline, hint)
            else:
                assert bag(got) == bag(expected), (pipeline, hint)
    db.create_collection("v", viewOn="c", pipeline=[{"$match": {"x": {"$gte": 0}}}])
    for hint in ({"x": 1}, {"_id": 1}):
        assert [d["_id"] for d in db.v.aggregate([{"$match": {"x": 3}}], hint=hint)] == [3]
        assert [d["_id"] for d in db.v.find({"x": 3}).hint(hint)] == [3]
        assert db.command({"count": "v", "query": {"x": 3}, "hint": hint})["n"] == 1


# --------------------------------------------------------------------------------------------------
# hashed/: hashed_index_queries.js, hashed_index_queries_with_logical_operators.js,
# hashed_index_sort.js, hashed_index_with_arrays.js (results and codes, not plans)
# --------------------------------------------------------------------------------------------------

HASHED_DOCS = [doc for i in range(100) for doc in (
    {"_id": 2 * i, "a": i, "b": {"subObj": f"str_{i % 13}"}, "c": i % 10},
    {"_id": 2 * i + 1, "a": i, "b": i % 13, "c": i % 10})]


@pytest.mark.parametrize("spec", [{"b": "hashed", "c": -1}, {"a": 1, "b": "hashed", "c": -1}, {"b": "hashed", "a": 1}])
def test_compound_hashed_index_queries(db, spec):
    """hashed_index_queries.js: equality, ``$in`` and ranges over compound hashed indexes (hashed prefix or
    not) return and count what a collection scan does."""
    coll = db.c
    make_index(coll, spec)
    coll.insert_many([dict(d) for d in HASHED_DOCS])
    hint = [spec]
    assert len(same_everywhere(coll, {"b": {"$gt": 10, "$lt": 12}}, hint)) == 7
    assert same_everywhere(coll, {"b.subObj": "str_10"}, hint) != []
    got = same_everywhere(coll, {"b": {"subObj": "str_11"}}, hint, projection={"_id": 0})
    assert sorted(d["a"] for d in got) == [11, 24, 37, 50, 63, 76, 89]
    got = same_everywhere(coll, {"a": {"$in": [38, 37]}, "b": {"$in": [{"subObj": "str_12"}, {"subObj": "str_11"}]},
                                 "c": {"$in": [7, 8]}}, hint, projection={"_id": 0})
    assert bag(got) == bag([{"a": 37, "b": {"subObj": "str_11"}, "c": 7}, {"a": 38, "b": {"subObj": "str_12"}, "c": 8}])
    got = same_everywhere(coll, {"a": {"$gt": 25, "$lt": 29}, "b": 0}, hint, projection={"_id": 0})
    assert got == [{"a": 26, "b": 0, "c": 6}]
    assert coll.count_documents({"b": {"subObj": "str_10"}}, hint=spec) == 7
    assert coll.count_documents({"a": {"$gt": 25, "$lt": 29}, "b": 0}, hint=spec) == 1


@pytest.mark.parametrize("spec", [{"a": "hashed", "b": 1}, {"a": 1, "b": "hashed", "c": -1}])
def test_hashed_index_with_null_missing_and_logical_operators(db, spec):
    """hashed_index_queries_with_logical_operators.js: ``$or``, ``$exists``, null and ``$not`` over a
    compound hashed index tell null from missing as a collection scan does."""
    coll = db.c
    coll.insert_many([{"_id": 1}, {"_id": 2, "a": None}, {"_id": 3, "a": 12, "b": 12}, {"_id": 4, "b": 12},
                      {"_id": 5, "a": None, "b": 12}])
    make_index(coll, spec)
    cases = [({"$or": [{"a": None}, {"a": 12, "b": 12}]}, [1, 2, 3, 4, 5]), ({"a": {"$exists": True}, "b": 12}, [3, 5]),
             ({"a": {"$exists": False}, "b": 12}, [4]), ({"a": None, "b": 12}, [4, 5]),
             ({"a": {"$not": {"$eq": 12}}, "b": 12}, [4, 5]), ({"$or": [{"a": 1}, {"a": 12, "b": 12}]}, [3]),
             ({"a": None, "b": {"$exists": True}}, [4, 5]), ({"a": None, "b": {"$exists": False}}, [1, 2]),
             ({"a": 12, "b": None}, []), ({"a": {"$not": {"$gt": 12}}, "b": 12}, [3, 4, 5])]
    for query, expected in cases:
        assert sorted(d["_id"] for d in same_everywhere(coll, query, [spec])) == expected, query


def test_hashed_index_sorts(db):
    """hashed_index_sort.js (results in order): an equality on the hashed prefix sorted by the next field,
    ``$in`` on it, sorts on fields after it, and sorts by a non-hashed prefix of ``{a: 1, b: -1, c: hashed,
    d: 1}``."""
    coll = db.c
    coll.insert_many([{"_id": 10 * i + j, "a": i, "b": j, "c": i + j, "d": i - j} for i in range(5) for j in range(5)])
    make_index(coll, {"a": "hashed", "b": -1, "c": 1})

    def run(flt, projection, sort):
        return list(coll.find(flt, projection).sort(pairs(sort)))

    assert run({"a": 1}, {"b": 1, "c": 1, "_id": 0}, {"b": 1}) == [{"b": j, "c": j + 1} for j in range(5)]
    assert run({"a": {"$in": [1, 2]}}, {"b": 1, "_id": 0}, {"b": 1}) == [{"b": j} for j in range(5) for _ in range(2)]
    assert run({"a": 1}, {"_id": 0}, {"c": 1}) == [{"a": 1, "b": j, "c": 1 + j, "d": 1 - j} for j in range(5)]
    coll.drop_indexes()
    make_index(coll, {"a": 1, "b": -1, "c": "hashed", "d": 1})
    assert run({"a": 1}, {"_id": 0, "a": 1, "b": 1}, {"b": 1}) == [{"a": 1, "b": j} for j in range(5)]
    assert run({"a": 1, "c": 2}, {"_id": 0, "a": 1, "b": 1}, {"b": 1, "d": -1}) == [{"a": 1, "b": 1}]
    assert run({}, {"_id": 0, "a": 1, "b": 1}, {"a": 1, "b": -1}) == [{"a": i, "b": 4 - j} for i in range(5) for j in range(5)]
    assert run({}, {"_id": 0, "a": 1, "b": 1}, {"a": 1, "b": -1, "c": 1}) == [
        {"a": i, "b": 4 - j} for i in range(5) for j in range(5)]
    assert [d["b"] for d in run({"a": {"$in": [1, 2]}}, {"_id": 0, "a": 1, "b": 1}, {"b": 1})] == [
        j for j in range(5) for _ in range(2)]
    assert run({"a": 1}, {"_id": 0, "d": 1, "b": 1}, {"d": 1}) == [{"b": 4 - j, "d": j - 3} for j in range(5)]
    assert run({"a": 1, "b": 1}, {"_id": 0, "c": 1}, {"c": 1}) == [{"c": 2}]


HASHED_ARRAY = 16766


def test_compound_hashed_index_refuses_arrays(db):
    """hashed_index_with_arrays.js: no field of a compound hashed index may hold an array, nor any array
    stand along a key path, on insert, replacement or upsert (16766); sparse and partial ones too (but a
    document outside the partial filter may)."""
    coll = db.c
    coll.insert_many([{"a": i, "b": {"subObj": f"string_{i % 13}"}, "c": i % 10} for i in range(20)])
    make_index(coll, {"a": 1, "b": "hashed", "c": 1})
    make_index(coll, {"a": "hashed", "c": -1})
    make_index(coll, {"b": "hashed", "a": -1, "c": 1})
    for doc in ({"a": []}, {"b": []}, {"c": []}):
        fails(lambda d=doc: coll.insert_one(d), HASHED_ARRAY)
    make_index(coll, {"field1.field2.0.field4": "hashed", "field2.0.field4": 1})
    for doc in ({"field1": []}, {"field1": {"field2": []}}, {"field1": {"field2": {"0": []}}},
                {"field1": [{"field2": {"0": []}}]}, {"field1": {"field2": {"0": {"field4": []}}}},
                {"field2": []}, {"field2": {"0": [0]}}):
        fails(lambda d=doc: coll.insert_one(d), HASHED_ARRAY)
    for replacement in ({"field2": []}, {"field2": {"0": {"field4": []}}}, {"field1": []}):
        fails(lambda r=replacement: coll.replace_one({}, r), HASHED_ARRAY)
    fails(lambda: coll.replace_one({"_id": "missing"}, {"field1": []}, upsert=True), HASHED_ARRAY)
    coll.insert_one({"field1": {"field2": {"0": {"otherField": []}}}})
    coll.insert_one({"field1": {"field2": {"0": {"field4": 1}}}})
    coll.replace_one({}, {"field1": {"field2": {"0": {"field4": 1}}}})
    coll.replace_one({"_id": "missing"}, {"field1": {"field2": {"0": {"field4": 1}}}}, upsert=True)

    coll.drop_indexes()
    make_index(coll, {"a.b": 1, "c": "hashed", "d": -1}, sparse=True)
    make_index(coll, {"a.c": "hashed", "d": -1}, sparse=True)
    make_index(coll, {"b": "hashed", "d": -1, "c": 1}, sparse=True)
    for doc in ({"b": []}, {"c": [1]}, {"a": []}):
        fails(lambda d=doc: coll.insert_one(d), HASHED_ARRAY)
    coll.drop_indexes()
    make_index(coll, {"a": "hashed", "b": 1}, partialFilterExpression={"b": {"$gt": 5}})
    fails(lambda: coll.insert_one({"a": [1], "b": 6}), HASHED_ARRAY)
    coll.insert_one({"a": [1], "b": 1})


# --------------------------------------------------------------------------------------------------
# index_diag.js, index_check7.js
# --------------------------------------------------------------------------------------------------

def test_return_key_in_index_order(db):
    """index_diag.js: sorts by ``_id`` and by ``x`` (indexed descending values), ``returnKey`` giving the
    index key of the plan's index (``{}`` for a collection scan), in hinted index order."""
    coll = db.c
    make_index(coll, {"x": 1})
    docs = [{"_id": i, "x": -i} for i in range(1, 4)]
    coll.insert_many([dict(d) for d in docs])
    ids_ = [{"_id": i} for i in range(1, 4)]
    xs = [{"x": -i} for i in range(1, 4)]

    def keys(sort=None, hint=None):
        cursor = coll.find(return_key=True)
        if sort:
            cursor = cursor.sort(pairs(sort))
        return list(cursor.hint(hint) if hint else cursor)

    assert list(coll.find().sort("_id", 1)) == docs
    assert list(coll.find().sort("_id", -1)) == docs[::-1]
    assert list(coll.find().sort("x", -1)) == docs
    assert list(coll.find().sort("x", 1)) == docs[::-1]
    assert keys({"_id": 1}) == ids_
    assert keys({"_id": -1}) == ids_[::-1]
    assert keys({"x": -1}) == xs
    assert keys({"x": 1}) == xs[::-1]
    assert keys(hint={"x": 1}) == xs[::-1]
    make_index(coll, {"_id": 1, "x": 1})
    assert keys(hint={"_id": 1, "x": 1}) == docs
    assert keys({"x": 1}, {"_id": 1, "x": 1}) == docs[::-1]
    assert keys(hint=NATURAL) == [{}, {}, {}]


def test_equal_and_reverse_indexes_answer_alike(db):
    """index_check7.js (results): with ``{x: 1}`` and ``{x: -1}`` both present, an equality and a range
    return what a collection scan does."""
    coll = db.c
    make_index(coll, {"x": 1})
    coll.insert_many([{"_id": i, "x": i} for i in range(100)])
    assert ids(same_everywhere(coll, {"x": 27}, [{"x": 1}])) == [27]
    make_index(coll, {"x": -1})
    assert ids(same_everywhere(coll, {"x": 27}, [{"x": 1}, {"x": -1}])) == [27]
    assert len(same_everywhere(coll, {"x": {"$gt": 59}}, [{"x": 1}, {"x": -1}])) == 40


# --------------------------------------------------------------------------------------------------
# covered/ (results only: the documents returned, not whether the plan fetched)
# --------------------------------------------------------------------------------------------------

def test_covered_compound_and_negative_queries(db):
    """covered_index_compound_1.js, covered_index_negative_1.js (results): projections of indexed fields
    over a hinted compound index, of a multikey and of a hashed index, return what a collection scan
    returns."""
    coll = db.c
    coll.insert_many([{"a": i, "b": f"strvar_{i % 13}", "c": i % 10, "d": i * 10, "e": [i, i % 10], "f": i}
                      for i in range(100)])
    abc = {"a": 1, "b": -1, "c": 1}
    for spec in (abc, {"e": 1}, {"d": 1}, {"f": "hashed"}):
        make_index(coll, spec)
    proj3 = {"a": 1, "b": 1, "c": 1, "_id": 0}
    cases = [({"a": 10, "b": "strvar_10", "c": 0}, proj3, abc, 1), ({"a": 26, "b": "strvar_0"}, proj3, abc, 1),
             ({"a": 38, "b": "strvar_12", "c": 8}, {"b": 1, "c": 1, "_id": 0}, abc, 1),
             ({}, {"b": 1, "c": 1, "_id": 0}, abc, 100), ({"a": {"$gt": 25, "$lt": 43}}, {"b": 1, "c": 1, "_id": 0}, abc, 17),
             ({"a": 38, "b": "strvar_12", "c": {"$in": [5, 8]}}, {"b": 1, "c": 1, "_id": 0}, abc, 1),
             ({"a": 38, "b": "strvar_12", "c": 55}, proj3, abc, 0), ({"a": 10, "b": "strvar_10", "c": 0}, None, abc, 1),
             ({"d": 100}, {"d": 1, "c": 1, "_id": 0}, {"d": 1}, 1), ({"e": 99}, {"e": 1, "_id": 0}, {"e": 1}, 1),
             ({"d": {"$lt": 1000}}, proj3, abc, 100), ({"f": 10}, {"f": 1, "_id": 0}, {"f": "hashed"}, 1)]
    for query, projection, hint, count in cases:
        got = same_everywhere(coll, query, [hint], projection=projection)
        assert len(got) == count, query
    assert list(coll.find({"e": 99}, {"e": 1, "_id": 0}).hint({"e": 1})) == [{"e": [99, 9]}]


def test_covered_simple_queries_over_sparse_unique_and_id(db):
    """covered_index_simple_1/2/3.js, covered_index_simple_id.js (results): equality of numbers, strings,
    documents and null, ranges, ``$in``, ``$exists`` and ``$nin`` over plain, unique, sparse-unique and
    ``_id`` indexes; a hinted sparse index leaves out documents without the field."""
    coll = db.c
    coll.insert_many([{"foo": i} for i in range(10)] + [{"bar": i} for i in range(5)]
                     + [{"foo": "string"}, {"foo": {"bar": 1}}, {"foo": None}])
    make_index(coll, {"foo": 1}, sparse=True, unique=True)
    proj = {"foo": 1, "_id": 0}
    for query, count in [({"foo": 1}, 1), ({"foo": "string"}, 1), ({"foo": {"bar": 1}}, 1), ({"foo": {"$gt": 2, "$lt": 6}}, 3),
                         ({"foo": {"$in": [5, 8]}}, 2), ({"foo": {"$exists": True}}, 13)]:
        assert len(same_everywhere(coll, query, [{"foo": 1}], projection=proj)) == count, query
    assert len(list(coll.find({}, proj).hint({"foo": 1}))) == 13  # (sparse: the five without foo are not in it)
    coll.drop_indexes()
    make_index(coll, {"bar": 1})
    assert len(same_everywhere(coll, {"bar": {"$nin": [5, 8]}}, [{"bar": 1}], projection={"bar": 1, "_id": 0})) == 18
    ids_coll = db.ids
    ids_coll.insert_many([{"_id": i} for i in range(10)] + [{"_id": "string"}, {"_id": {"bar": 1}}, {"_id": None}])
    for query, count in [({"_id": 1}, 1), ({"_id": "string"}, 1), ({"_id": {"bar": 1}}, 1), ({"_id": {"$gt": 2, "$lt": 6}}, 3),
                         ({"_id": {"$in": [5, 8]}}, 2), ({"_id": None}, 1)]:
        assert len(same_everywhere(ids_coll, query, [{"_id": 1}], projection={"_id": 1})) == count, query


def test_covered_index_examples(db):
    """coveredIndex1.js, coveredIndex2.js (results): projections over single, compound, ``_id``-compound,
    embedded-document and positional indexes; a multikey insert keeps the projected answer right."""
    coll = db.c
    coll.insert_many([{"order": 0, "fn": "john", "ln": "doe"}, {"order": 1, "fn": "jack", "ln": "doe"},
                      {"order": 2, "fn": "john", "ln": "smith"}, {"order": 3, "fn": "jack", "ln": "black"},
                      {"order": 4, "fn": "bob", "ln": "murray"}, {"order": 5, "fn": "aaa", "ln": "bbb", "obj": {"a": 1, "b": "blah"}},
                      {"order": 6, "fn": "ccc", "ln": "ddd", "arr": [1, 2, 3, 4, 5, 6]}])
    for spec, queries in [
        ({"ln": 1}, [({"ln": "doe"}, {"ln": 1, "_id": 0}, 2)]),
        ({"ln": 1, "fn": 1}, [({"ln": "doe"}, {"ln": 1, "fn": 1, "_id": 0}, 2), ({"ln": "doe", "fn": "john"}, {"ln": 1, "_id": 0}, 1),
                              ({"fn": "john"}, {"fn": 1, "_id": 0}, 2)]),
        ({"_id": 1, "ln": 1}, [({"_id": 123, "ln": "doe"}, {"_id": 1}, 0), ({"ln": "doe"}, {"ln": 1}, 2)]),
        ({"obj": 1}, [({"obj.a": 1}, {"obj": 1}, 1), ({"obj": {"a": 1, "b": "blah"}}, {"obj": 1, "_id": 0}, 1)]),
        ({"obj.a": 1, "obj.b": 1}, [({"obj.a": 1}, {"obj": 1}, 1)]),
        ({"arr.0": 1}, [({"arr.0": 1}, None, 1), ({"arr.0": {"$mod": [7, 6]}}, None, 0)]),
    ]:
        make_index(coll, spec)
        for query, projection, count in queries:
            assert len(same_everywhere(coll, query, [spec], projection=projection)) == count, (spec, query)
    other = db.d
    other.insert_many([{"a": 1}, {"a": 2}])
    make_index(other, {"a": 1})
    assert list(other.find({"a": 1}, {"a": 1, "_id": 0})) == [{"a": 1}]
    other.insert_one({"a": [3, 4]})
    assert list(other.find({"a": 3}, {"a": 1, "_id": 0})) == [{"a": [3, 4]}]
    assert list(other.find({"a": 1}, {"a": 1, "_id": 0})) == [{"a": 1}]


def test_covered_sorts_with_and_without_collations(db):
    """covered_index_sort_no_fetch_optimization.js (results in order): sorts by index fields in another
    order than the index's, by fields outside it, over a multikey sort field, and under index and query
    collations that agree or not."""
    coll = db.c
    make_index(coll, {"a": 1, "b": 1})
    coll.insert_many([{"a": 1, "b": 1, "c": 1}, {"a": 1, "b": 2, "c": 2}, {"a": 2, "b": 1, "c": 3},
                      {"a": 2, "b": 2, "c": 4}, {"a": -1, "b": 1, "c": 5}])

    def run(flt, projection, sort, hint=None, collation=None):
        cursor = coll.find(flt, projection, collation=collation).sort(pairs(sort))
        return list(cursor.hint(hint) if hint else cursor)

    assert run({"a": {"$lt": 2}}, {"b": 1, "_id": 0}, {"b": 1}) == [{"b": 1}, {"b": 1}, {"b": 2}]
    ab = {"a": 1, "b": 1, "_id": 0}
    assert run({"a": {"$gt": 0}}, ab, {"b": 1, "a": 1}) == [{"a": 1, "b": 1}, {"a": 2, "b": 1}, {"a": 1, "b": 2}, {"a": 2, "b": 2}]
    assert run({"a": {"$gt": 0}}, ab, {"b": 1, "a": -1}) == [{"a": 2, "b": 1}, {"a": 1, "b": 1}, {"a": 2, "b": 2}, {"a": 1, "b": 2}]
    assert run({"a": {"$gt": 0}}, {"b": 1, "c": 1, "_id": 0}, {"c": 1, "b": 1}) == [
        {"b": 1, "c": 1}, {"b": 2, "c": 2}, {"b": 1, "c": 3}, {"b": 2, "c": 4}]
    assert run({"a": {"$gt": 0}}, {"b": 1, "_id": 0}, {"c": 1, "b": 1}) == [{"b": 1}, {"b": 2}, {"b": 1}, {"b": 2}]
    coll.insert_many([{"a": 1, "b": [4, 5, 6]}, {"a": 1, "b": [-1, 11, 12]}])
    assert run({"a": {"$gt": 0}}, {"b": 1, "_id": 0}, {"b": 1}) == [
        {"b": [-1, 11, 12]}, {"b": 1}, {"b": 1}, {"b": 2}, {"b": 2}, {"b": [4, 5, 6]}]

    coll.drop()
    en3 = {"locale": "en_US", "strength": 3}
    make_index(coll, {"a": 1, "b": 1}, collation=en3)
    coll.insert_many([{"a": 1, "b": 1}, {"a": 1, "b": 2}, {"a": 1, "b": "A"}, {"a": 1, "b": "a"}, {"a": 2, "b": 2}])
    lower_first = [{"a": 1, "b": 1}, {"a": 1, "b": 2}, {"a": 1, "b": "a"}, {"a": 1, "b": "A"}, {"a": 2, "b": 2}]
    assert run({}, ab, {"a": 1, "b": 1}, {"a": 1, "b": 1}, en3) == lower_first
    assert run({"a": {"$lt": 2}}, {"b": 1, "_id": 0}, {"b": 1}, {"a": 1, "b": 1}, en3) == [
        {"b": 1}, {"b": 2}, {"b": "a"}, {"b": "A"}]
    coll.drop_index([("a", 1), ("b", 1)])
    make_index(coll, {"a": 1, "b": 1}, collation={"locale": "en_US", "strength": 1})
    assert run({}, ab, {"a": 1, "b": 1}, {"a": 1, "b": 1}, en3) == lower_first
    coll.drop_index([("a", 1), ("b", 1)])
    make_index(coll, {"a": 1, "b": 1}, collation=en3)
    assert run({}, ab, {"a": 1, "b": 1}, {"a": 1, "b": 1}) == [
        {"a": 1, "b": 1}, {"a": 1, "b": 2}, {"a": 1, "b": "A"}, {"a": 1, "b": "a"}, {"a": 2, "b": 2}]
    assert run({"a": {"$gte": 1}, "b": 2}, ab, {"b": 1, "a": 1}, {"a": 1, "b": 1}) == [{"a": 1, "b": 2}, {"a": 2, "b": 2}]
    coll.drop_index([("a", 1), ("b", 1)])
    make_index(coll, {"a": 1, "b": 1})
    assert run({}, ab, {"a": 1, "b": 1}, {"a": 1, "b": 1}, en3) == lower_first

    coll.drop()
    make_index(coll, {"a": 1, "b.c": 1})
    coll.insert_many([{"a": 0, "b": {"c": 1}}, {"a": 1, "b": {"c": 2}}, {"a": 2, "b": {"c": "A"}}, {"a": 3, "b": {"c": "a"}},
                      {"a": 4, "b": {"c": 3}}])
    assert run({"a": {"$gt": 0}}, {"a": 1, "b.c": 1, "_id": 0}, {"b.c": 1}) == [
        {"a": 1, "b": {"c": 2}}, {"a": 4, "b": {"c": 3}}, {"a": 2, "b": {"c": "A"}}, {"a": 3, "b": {"c": "a"}}]
    coll.insert_one({"a": [1], "b": {"c": 1}})
    assert run({"a": {"$gt": 0}}, {"b.c": 1, "_id": 0}, {"b.c": 1}) == [
        {"b": {"c": v}} for v in (1, 2, 3, "A", "a")]


def test_covered_sorts_over_id_and_compound_index(db):
    """covered_index_sort_1/2/3.js (results in order): a hinted ``_id`` index sorted backwards over mixed
    types, and a compound index sorted in its own order, projected to indexed fields."""
    foo = db.foo
    foo.insert_many([{"foo": i % 10} for i in range(20)] + [{"bar": i} for i in range(5)]
                    + [{"foo": "1"}, {"foo": {"bar": 1}}, {"foo": None}])
    make_index(foo, {"foo": 1})
    ascending = [None] * 6 + [i for i in range(10) for _ in range(2)] + ["1", {"bar": 1}]
    got = [d.get("foo") for d in foo.find({}, {"foo": 1, "_id": 0}).sort("foo", 1).hint({"foo": 1})]
    assert got == ascending
    got = [d.get("foo") for d in foo.find({}, {"foo": 1, "_id": 0}).sort("foo", -1).hint({"foo": 1})]
    assert got == ascending[::-1]
    got = [d["foo"] for d in foo.find({"foo": {"$gt": 2}}, {"foo": 1, "_id": 0}).sort("foo", -1).hint({"foo": 1})]
    assert got == [i for i in range(9, 2, -1) for _ in range(2)]
    coll = db.c
    coll.insert_many([{"_id": i} for i in range(10)] + [{"_id": "1"}, {"_id": {"bar": 1}}, {"_id": None}])
    got = [d["_id"] for d in coll.find({}, {"_id": 1}).sort("_id", -1).hint({"_id": 1})]
    assert got == [{"bar": 1}, "1", *range(9, -1, -1), None]
    other = db.d
    other.insert_many([{"a": i, "b": f"strvar_{i % 13}", "c": i % 10} for i in range(100)])
    spec = {"a": 1, "b": -1, "c": 1}
    make_index(other, spec)
    got = list(other.find({}, {"b": 1, "c": 1, "_id": 0}).sort(pairs(spec)).hint(spec))
    assert got == [{"b": f"strvar_{i % 13}", "c": i % 10} for i in range(100)]
    other.insert_many([{"a": i % 3, "b": "x", "c": 5} for i in range(6)])
    got = [d["a"] for d in other.find({"a": {"$lt": 3}}, {"a": 1, "_id": 0}).sort("a", -1).hint(spec)]
    assert got == [2, 2, 2, 1, 1, 1, 0, 0, 0]


# --------------------------------------------------------------------------------------------------
# index_multiple_compatibility.js, index_sort_within_multiple_point_ranges.js, elemmatch_index.js
# --------------------------------------------------------------------------------------------------

EN1 = {"locale": "en_US", "strength": 1}
EN2 = {"locale": "en_US", "strength": 2}
EN3 = {"locale": "en_US", "strength": 3}
COMPAT_CASES = [
    ({"key": {"a": 1}, "name": "a1", "collation": EN1, "partialFilterExpression": {"a": {"$type": "string"}}}, None,
     {"key": {"a": 1}, "name": "a2", "collation": EN2, "partialFilterExpression": {"a": {"$type": "string"}}}, None,
     {"a": "A"}),
    ({"key": {"a": 1}, "name": "a1", "collation": EN1, "partialFilterExpression": {"a": {"$lt": 10}}}, {"a": 5},
     {"key": {"a": 1}, "name": "a2", "collation": EN2, "partialFilterExpression": {"a": {"$gt": 20}}}, {"a": 25}, None),
    ({"key": {"a": 1}, "name": "a1", "collation": EN1, "partialFilterExpression": {"a": {"$lt": 10}}}, {"a": -5},
     {"key": {"a": 1}, "name": "a2", "collation": EN2, "partialFilterExpression": {"a": {"$gte": 0}}}, {"a": 15}, {"a": 5}),
    ({"key": {"a": 1}, "name": "a1", "collation": EN1, "partialFilterExpression": {"b": 0}}, {"b": 0},
     {"key": {"a": 1}, "name": "a2", "collation": EN2, "sparse": True}, {"a": 5, "b": 1}, {"a": -1, "b": 0}),
    ({"key": {"a": 1}, "name": "a1", "collation": EN1, "sparse": True}, None,
     {"key": {"a": 1}, "name": "a2", "collation": EN2, "sparse": False}, {"b": 0}, {"a": 1}),
    ({"key": {"a": 1}, "name": "unique", "collation": EN1, "unique": True}, None,
     {"key": {"a": 1}, "name": "reg", "collation": EN2, "unique": False}, None, {"a": "foo"}),
    ({"key": {"a": 1}, "name": "unique", "collation": EN1, "unique": True,
      "partialFilterExpression": {"a": {"$type": "number"}}}, None,
     {"key": {"a": 1}, "name": "a", "collation": EN2, "unique": False}, {"a": "foo"}, {"a": 5}),
    ({"key": {"a": 1}, "name": "a1", "collation": EN1, "unique": True}, None,
     {"key": {"a": 1}, "name": "a2", "collation": EN3, "unique": True}, None, {"a": "a"}),
    ({"key": {"a": 1}, "name": "a1", "collation": EN1, "unique": True, "sparse": True}, None,
     {"key": {"a": 1}, "name": "a2", "collation": EN2, "unique": False}, {"b": 0}, {"a": "a"}),
]


@pytest.mark.parametrize(("index1", "doc1", "index2", "doc2", "both"), COMPAT_CASES,
                         ids=[str(i) for i in range(len(COMPAT_CASES))])
def test_two_indexes_on_one_key_hold_their_own_documents(db, index1, doc1, index2, doc2, both):
    """index_multiple_compatibility.js: two indexes on ``{a: 1}`` under other collations, partial filters,
    sparse and unique options each hold exactly their documents (a hinted find by name sees them, the
    other index not), also after removals."""
    coll = db.c
    db.command({"createIndexes": "c", "indexes": [index1, index2]})
    for mine, doc, other in ((index1, doc1, index2), (index2, doc2, index1)):
        if doc is not None:
            coll.insert_one(dict(doc))
            assert len(list(coll.find(doc).hint(mine["name"]))) == 1
            assert list(coll.find(doc).hint(other["name"])) == []
    if both is not None:
        coll.insert_one(dict(both))
        for index in (index1, index2):
            assert len(list(coll.find(both).hint(index["name"]))) == 1
    for index, doc in ((index1, doc1), (index2, doc2), (index1, both)):
        if doc is not None:
            coll.delete_many(doc)
            assert list(coll.find(doc).hint(index["name"])) == []


def test_unique_constraints_of_indexes_with_other_collations(db):
    """index_multiple_compatibility.js: a unique index under strength 1 refuses "F" beside "f"; a unique
    partial index on numbers leaves strings free; unique-sparse leaves missing fields free."""
    coll = db.c
    db.command({"createIndexes": "c", "indexes": [
        {"key": {"a": 1}, "name": "unique", "collation": EN1, "unique": True},
        {"key": {"a": 1}, "name": "reg", "collation": EN2}]})
    coll.insert_one({"a": "f"})
    fails(lambda: coll.insert_one({"a": "F"}), DUPLICATE_KEY)
    coll.drop()
    db.command({"createIndexes": "c", "indexes": [
        {"key": {"a": 1}, "name": "unique", "collation": EN1, "unique": True,
         "partialFilterExpression": {"a": {"$type": "number"}}},
        {"key": {"a": 1}, "name": "a", "collation": EN2}]})
    coll.insert_one({"a": 5})
    coll.insert_one({"a": "foo"})
    coll.insert_one({"a": "foo"})
    fails(lambda: coll.insert_one({"a": 5}), DUPLICATE_KEY)
    coll.drop()
    db.command({"createIndexes": "c", "indexes": [
        {"key": {"a": 1}, "name": "a1", "collation": EN1, "unique": True},
        {"key": {"a": 1}, "name": "a2", "collation": EN3, "unique": True}]})
    coll.insert_one({"a": "a"})
    fails(lambda: coll.insert_one({"a": "a"}), DUPLICATE_KEY)
    fails(lambda: coll.insert_one({"a": "A"}), DUPLICATE_KEY)
    coll.drop()
    db.command({"createIndexes": "c", "indexes": [
        {"key": {"a": 1}, "name": "a1", "collation": EN1, "unique": True, "sparse": True},
        {"key": {"a": 1}, "name": "a2", "collation": EN2}]})
    coll.insert_one({"a": "a"})
    coll.insert_one({})
    coll.insert_one({})
    fails(lambda: coll.insert_one({"a": "a"}), DUPLICATE_KEY)


def test_sort_within_descending_point_ranges_under_a_collation(db):
    """index_sort_within_multiple_point_ranges.js (SERVER-45508): ``$in`` over a descending index of a
    collection with a default collation, sorted by another field."""
    db.create_collection("c", collation={"locale": "fr"})
    make_index(db.c, {"x": -1})
    make_index(db.c, {"x": -1, "y": 1})
    db.c.insert_one({"x": 2, "y": 99})
    assert len(list(db.c.find({"x": {"$in": [2, 5]}}).sort("y", 1))) == 1


def test_elem_match_over_sparse_and_plain_indexes(db):
    """elemmatch_index.js (results): ``$elemMatch`` with ``$exists``, ``$not``, ``$geoWithin``, null
    ``$in``/``$eq`` and negated regexes over a sparse index and a plain one; empty path components;
    ``$elemMatch`` beside a compound index."""
    coll = db.c
    coll.insert_many([{"a": 1}, {"a": [{}]}, {"a": [1, None]}, {"a": [{"type": "Point", "coordinates": [0, 0]}]}])
    make_index(coll, {"a": 1}, sparse=True)
    triangle = {"type": "Polygon", "coordinates": [[[0, 0], [0, 1], [1, 0], [0, 0]]]}
    cases = [({"$exists": False}, 0), ({"$exists": True}, 3), ({"$not": {"$exists": False}}, 3),
             ({"$gt": 0, "$not": {"$exists": False}}, 1), ({"$geoWithin": {"$geometry": triangle}}, 1),
             ({"$in": [None]}, 1), ({"$eq": None}, 1), ({"$not": {"$in": [Regex("^a")]}}, 3)]
    for cond, count in cases:
        assert len(list(coll.find({"a": {"$elemMatch": cond}}))) == count, cond
    coll.drop_indexes()
    make_index(coll, {"a": 1})
    assert len(same_everywhere(coll, {"a": {"$elemMatch": {"$not": {"$in": [Regex("^a")]}}}}, [{"a": 1}])) == 3
    coll.drop()
    coll.insert_one({"a": [{"b": {"c": "x"}}]})
    make_index(coll, {"a.b.c": 1})
    for query, count in [({"": {"$elemMatch": {"a.b.c": "x"}}}, 0), ({"": {"$all": [{"$elemMatch": {"a.b.c": "x"}}]}}, 0),
                         ({"a": {"$elemMatch": {"": {"$elemMatch": {"b.c": "x"}}}}}, 0), ({"a": {"$elemMatch": {"b.c": "x"}}}, 1),
                         ({"a": {"$all": [{"$elemMatch": {"b.c": "x"}}]}}, 1),
                         ({"$and": [{"a.b.c": "x"}, {"": {"$elemMatch": {"a.b.c": "x"}}}]}, 0),
                         ({"$and": [{"a.b.c": "x"}, {"a.b.c": {"$elemMatch": {"": "x"}}}]}, 0),
                         ({"$and": [{"a.b.c": "x"}, {"$or": [{"a.b.c": "y"}, {"": {"$elemMatch": {"a.b.c": "x"}}}]}]}, 0),
                         ({"$and": [{"a.b.c": "x"}, {"$or": [{"a.b.c": "y"}, {"a.b.c": {"$elemMatch": {"": "x"}}}]}]}, 0)]:
        assert len(same_everywhere(coll, query, [{"a.b.c": 1}])) == count, query
    other = db.d
    other.insert_many([{"a": a, "b": b, "arr": [{"x": (10 * a + b) % 10, "y": (10 * a + b) % 10}]}
                       for a in range(10) for b in range(10)])
    make_index(other, {"a": 1, "b": 1})
    make_index(other, {"arr.x": 1, "a": 1})
    query = {"a": 5, "b": {"$in": [1, 3, 5]}, "arr": {"$elemMatch": {"x": 5, "y": 5}}}
    assert len(same_everywhere(other, query, [{"a": 1, "b": 1}, {"arr.x": 1, "a": 1}])) == 1


# --------------------------------------------------------------------------------------------------
# hint errors (hint1.js, agg_hint.js, and mongod 7.0's parseHint)
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("command", [
    {"aggregate": "c", "pipeline": [], "cursor": {}},
    pytest.param({"find": "c"}, id="find"),
    pytest.param({"count": "c"}, id="count"),
    pytest.param({"distinct": "c", "key": "a"}, id="distinct"),
], ids=["aggregate", "find", "count", "distinct"])
@pytest.mark.parametrize("hint", [5, [1], True])
def test_a_hint_of_another_type_is_failed_to_parse(db, command, hint):
    db.c.insert_one({"a": 1})
    make_index(db.c, {"a": 1})
    error = command_fails(db, {**command, "hint": hint}, 9)
    assert error.details["errmsg"] == "Hint must be a string or an object"


@pytest.mark.parametrize("command", [{"aggregate": "c", "pipeline": [], "cursor": {}}, {"find": "c"}, {"count": "c"},
                                     {"distinct": "c", "key": "a"}])
@pytest.mark.parametrize("hint", ["nope", {"nope": 1}, {"a": -1}])
def test_a_hint_naming_no_index_is_bad_value(db, command, hint):
    """Every hinting command refuses a hint naming no index (name or key pattern) with 2 BadValue."""
    db.c.insert_one({"a": 1})
    make_index(db.c, {"a": 1})
    error = command_fails(db, {**command, "hint": hint}, BAD_VALUE)
    assert error.details["errmsg"].endswith("hint provided does not correspond to an existing index")


def test_sort_on_a_path_sharing_an_array_with_a_bounded_one(db):
    """SERVER-31858 (sort_array.js), for every compound index over ``a.b`` and ``a.c``: ``{"a.b": 1}`` sorted
    by ``a.c`` orders documents by their least ``a.c`` over all elements, not by the ``a.c`` of the
    elements whose b is 1 (the index pairs one element's values)."""
    docs = [{"_id": 2, "a": [{"b": 1, "c": 2}, {"b": 2, "c": 3}]}, {"_id": 0, "a": [{"b": 2, "c": 0}, {"b": 1, "c": 4}]},
            {"_id": 1, "a": [{"b": 1, "c": 5}, {"b": 2, "c": 1}]}]
    for n, spec in enumerate([{"a.b": 1, "a.c": 1}, {"a.b": 1, "a.c": -1}, {"a.b": -1, "a.c": 1}]):
        coll = db[f"c{n}"]
        coll.insert_many([dict(d) for d in docs])
        make_index(coll, spec)
        for hint in (None, spec, NATURAL):
            cursor = coll.find({"a.b": 1}).sort("a.c", 1)
            assert [d["_id"] for d in (cursor.hint(hint) if hint else cursor)] == [0, 1, 2], (spec, hint)
            cursor = coll.find({"a.b": 1}).sort("a.c", -1)
            assert [d["_id"] for d in (cursor.hint(hint) if hint else cursor)] == [1, 0, 2], (spec, hint)
