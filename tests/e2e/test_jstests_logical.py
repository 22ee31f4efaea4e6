"""MongoDB's logical-operator jstests ($or, $and, $nor, $not, $in, $nin, $ne and $expr in a find) ported
to pymongo against a real Tidemark server: the documents a ``find`` returns, ``count`` answers and the
error codes of malformed predicates. Every query runs with and without the indexes the jstest creates
(the indexed answers must equal the collection-scan ones).

Ported (MongoDB 7.0 behaviour as the reference), from ``jstests/core/query/``:
or/or2.js, or/or3.js, or/or4.js, or/or5.js, or/or6.js, or/or7.js, or/or8.js, or/or9.js, or/ora.js,
or/orb.js, or/orc.js, or/ord.js, or/ore.js, or/orf.js, or/org.js, or/orh.js, or/oro.js, or/orp.js,
or/or_inexact.js, or/or_to_in.js (results only); and/and2.js, and/and3.js, and/and_or_index_sort.js,
and/and_or_nested.js; in/in2.js, in/in3.js, in/in4.js, in/in_with_collation.js; ne/ne1.js, ne/ne2.js,
ne/ne_null.js, ne/ne_null_indexed.js, nin/nin.js, nin/nin2.js, nin/nin_null.js (the 9.0-only dotted
null cases of the *_null files left out); always_true_false.js, coercetobool_invalid.js,
boolean_expression_simplification.js (results only); expr/expr.js, expr/expr_valid_positions.js,
expr/expr_index_use.js, expr/expr_in_index_use.js, expr/expr_and_or_index.js, expr/expr_or_pushdown.js,
expr/expr_in_split_pushdown.js (results only); basic1.js, basic2.js, basic4.js, basic5.js, basic6.js,
basic7.js, basic8.js, basica.js, query1.js; date/date1.js, date/date2.js, date/date3.js;
number/numberint.js, number/numberlong.js, number/numberlong2.js, number/numberlong3.js,
number/numberlong4.js, objid/objid1.js, objid/objid2.js, objid/objid3.js, objid/objid5.js (their
server-side parts; the shell's NumberInt / NumberLong / ObjectId helpers, and objid4/6/7.js, which
test only those, are left out).
(or1.js, orj.js, ork.js, and.js, andor.js, in.js, in5-8.js, in_with_mixed_values.js, not1-3.js, ne3.js
and ne_array.js are in test_jstests_query_semantics.py.)

A Hypothesis property checks random ``$and`` / ``$or`` / ``$nor`` / ``$not`` trees against a Python
reference evaluator, with and without indexes.

Left out: explain shapes (IXSCAN / OR stages, keys examined, index bounds), plan-cache checks, memory
limits and spilling, mapReduce (or4.js, expr.js), failpoints and sharding variants.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from bson import Decimal128, Int64, ObjectId, Timestamp
from bson.regex import Regex
from harness.jstests import UNDEFINED, aggregate_fails, canon, fails, iso, ms, raw, xf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure, WriteError

pytestmark = pytest.mark.commands(
    "insert", "find", "count", "getMore", "createIndexes", "dropIndexes", "delete", "update", "drop", "aggregate",
    "distinct", "findAndModify", "explain", "validate", "collStats", "create",
)

BAD_VALUE = 2
FAILED_TO_PARSE = 9
INVALID_PIPELINE_OPERATOR = 168
QUERY_FEATURE_NOT_ALLOWED = 224
UNBOUND_VARIABLE = 17276
QUERY_PLAN_KILLED = 175
DIVIDE_BY_ZERO = 2  # "can't $divide by zero": BadValue from 7.0's ExpressionDivide::apply (16608 before)
NAN = float("nan")

# Known differences from MongoDB 7.0, one reason per cause (each used by strict xfails below).
UNDEFINED_AS_NULL = ("BSON undefined (type 6) is decoded from the wire and stored as null (type 10): in an aggregation "
                     "comparison a document {w: undefined} or an undefined constant then equals null; MongoDB keeps "
                     "undefined, which compares as missing, below null (protocol/codec.py and the storage document "
                     "codec, not server/query)")


# --------------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------------

def index_variants(db, docs: list[dict], *indexes) -> Iterator:
    """The collection holding ``docs``, first without indexes, then (a fresh collection) with
    ``indexes`` (each a key dict, or a ``(keys, options)`` pair) built after the inserts."""
    for n, indexed in enumerate((False, True)):
        coll = db[f"c{n}"]
        coll.drop()
        if docs:
            coll.insert_many([raw(d) for d in docs])
        if indexed:
            for index in indexes:
                keys, options = index if isinstance(index, tuple) else (index, {})
                coll.create_index(list(keys.items()), **options)
        yield coll


def count(coll, query: dict, **kw) -> int:
    """The ``count`` command, as the shell's ``coll.count(query)`` sends it."""
    return coll.database.command("count", coll.name, query=raw(query), **kw)["n"]


def find(coll, query: dict, **kw) -> list:
    """All documents ``find`` returns (through getMores)."""
    return list(coll.find(raw(query), **kw))


def find_ids(coll, query: dict, **kw) -> list:
    return sorted(d["_id"] for d in find(coll, query, **kw))


def find_fails(coll, query: dict, *codes: int) -> OperationFailure:
    with pytest.raises(OperationFailure) as info:
        coll.database.command("find", coll.name, filter=raw(query))
    if codes:
        assert info.value.code in codes, f"{query}: code {info.value.code} ({info.value}), expected {codes}"
    return info.value


def write_fails(call, code: int) -> None:
    """A single write (update_one / delete_one) fails with a write error of ``code``."""
    with pytest.raises(WriteError) as info:
        call()
    assert info.value.code == code, info.value


# --------------------------------------------------------------------------------------------------
# or/or2.js, or/or3.js
# --------------------------------------------------------------------------------------------------

OR2_DOCS = [
    {"_id": 0, "x": 0, "a": 1}, {"_id": 1, "x": 0, "a": 2}, {"_id": 2, "x": 0, "b": 1}, {"_id": 3, "x": 0, "b": 2},
    {"_id": 4, "x": 1, "a": 1, "b": 1}, {"_id": 5, "x": 1, "a": 1, "b": 2}, {"_id": 6, "x": 1, "a": 2, "b": 1},
    {"_id": 7, "x": 1, "a": 2, "b": 2},
]
OR2_INDEXES = [{"x": 1}, {"x": 1, "a": 1}, {"x": 1, "b": 1}, {"x": 1, "a": 1, "b": 1}]


@pytest.mark.parametrize("index", OR2_INDEXES, ids=lambda i: "_".join(i))
@pytest.mark.parametrize("op", ["$or", "$nor", "$and"])
def test_logical_operator_argument_must_be_a_nonempty_array_of_objects(db, index, op):
    """or2.js / or3.js: ``$or`` / ``$nor`` (and ``$and``) given a string, an empty array or an array
    holding a non-object fail with 2 BadValue, with and without an index."""
    for coll in index_variants(db, OR2_DOCS, index):
        for bad in ("a", [], ["a"]):
            find_fails(coll, {"x": 0, op: bad}, BAD_VALUE)


@pytest.mark.parametrize("index", OR2_INDEXES, ids=lambda i: "_".join(i))
def test_or_with_equality_conjunct(db, index):
    """or2.js: ``{x, $or: [...]}`` returns the documents matching ``x`` and any clause."""
    for coll in index_variants(db, OR2_DOCS, index):
        assert find(coll, {"x": 0, "$or": [{"a": 1}]}) == [{"_id": 0, "x": 0, "a": 1}]
        assert find_ids(coll, {"x": 1, "$or": [{"a": 1}, {"b": 2}]}) == [4, 5, 7]


@pytest.mark.parametrize("index", OR2_INDEXES, ids=lambda i: "_".join(i))
def test_nor_equals_conjunction_of_ne(db, index):
    """or3.js: ``$nor`` of equalities matches what the conjunction of ``$ne``s matches."""
    for coll in index_variants(db, OR2_DOCS, index):
        assert find_ids(coll, {"$nor": [{"a": 1}]}) == find_ids(coll, {"a": {"$ne": 1}}) == [1, 2, 3, 6, 7]
        assert find_ids(coll, {"x": 1, "$nor": [{"a": 1}, {"b": 2}]}) == [6]
        assert find_ids(coll, {"x": 1, "a": {"$ne": 1}, "b": {"$ne": 2}}) == [6]
        assert find_ids(coll, {"$nor": [{"a": 1}], "$or": [{"b": 2}]}) == find_ids(coll, {"a": {"$ne": 1}, "b": 2}) == [3, 7]


# --------------------------------------------------------------------------------------------------
# or/or4.js, or/or5.js
# --------------------------------------------------------------------------------------------------

def test_or_counts_skip_limit_and_writes(db):
    """or4.js: ``$or`` over two indexed fields in count (with skip / limit), find (sorted, skipped,
    small batches), distinct, multi-update and delete; a document matching both clauses counts once."""
    for coll in index_variants(db, [], {"a": 1}, {"b": 1}):
        coll.insert_many([{"a": 2}, {"b": 3}, {"b": 3}, {"a": 2, "b": 3}])
        q = {"$or": [{"a": 2}, {"b": 3}]}
        assert count(coll, q) == 4
        assert count(coll, {"$or": [{"a": 2}, {"a": 2}]}) == 2
        assert count(coll, {}, skip=2) == 2
        assert count(coll, q, skip=2) == 2
        assert count(coll, q, skip=3) == 1
        assert count(coll, {}, limit=2) == 2
        for n in (1, 2, 3, 4):
            assert count(coll, q, limit=n) == n
        coll.delete_many(q)
        assert count(coll, {}) == 0
        coll.insert_one({"b": 3})
        coll.delete_many(q)
        assert count(coll, {}) == 0

        coll.insert_many([{"a": 2}, {"b": 3}, {"a": 2, "b": 3}])
        coll.update_many(q, {"$set": {"z": 1}})
        assert count(coll, {"z": 1}) == 3
        assert len(find(coll, q)) == 3
        assert list(coll.find().sort("_id", 1)) == list(coll.find(q).sort("_id", 1))
        assert len(list(coll.find(q).skip(1))) == 2
        assert len(list(coll.find(q).batch_size(2))) == 3
        coll.insert_many([{"a": 1}, {"b": 4}, {"a": 2}])
        assert len(list(coll.find(q).batch_size(2))) == 4
        coll.insert_one({"a": 1, "b": 3})
        assert len(list(coll.find(q).limit(4))) == 4
        assert sorted(coll.distinct("a", q)) == [1, 2]

        coll.delete_many({})
        coll.insert_one({"a": [1, 2]})
        for clauses in ([{"a": 1}, {"a": 2}], [{"a": 2}, {"a": 1}]):
            assert len(find(coll, {"$or": clauses})) == 1
            assert count(coll, {"$or": clauses}) == 1


def test_or_three_indexed_clauses_in_batches(db):
    """or5.js: ``$or`` of three clauses over three indexed fields, in every batch size; ``$near``
    inside ``$or`` fails; an array equality and ``$all`` inside ``$or``."""
    docs = [{"a": 2}, {"b": 3}, {"c": 4}, {"a": 2, "b": 3}, {"a": 2, "c": 4}, {"b": 3, "c": 4}, {"a": 2, "b": 3, "c": 4}]
    cases = [([{"a": 2}, {"b": 3}, {"c": 4}], 7), ([{"a": 6}, {"b": 3}, {"c": 4}], 6),
             ([{"a": 2}, {"b": 6}, {"c": 4}], 6), ([{"a": 2}, {"b": 3}, {"c": 6}], 6)]
    for coll in index_variants(db, docs, {"a": 1}, {"b": 1}, {"c": 1}):
        for clauses, n in cases:
            assert count(coll, {"$or": clauses}) == n
            assert len(find(coll, {"$or": clauses})) == n
            for batch in range(2, 8):
                assert len(list(coll.find({"$or": clauses}).batch_size(batch))) == n
        coll.create_index([("z", "2d")])
        with pytest.raises(OperationFailure):
            find(coll, {"$or": [{"z": {"$near": [50, 50]}}, {"a": 2}]})

    for coll in index_variants(db, [{"a": 2}, {"a": 2}, {"b": 3}, {"b": 3}, {"c": 4}, {"c": 4}],
                               {"a": 1}, {"b": 1}, {"c": 1}):
        for batch in (1, 2):
            assert len(list(coll.find({"$or": [{"a": 2}, {"b": 3}, {"c": 4}]}).batch_size(batch))) == 6

    for coll in index_variants(db, [{"a": [1, 2]}], {"a": 1}):
        assert len(find(coll, {"$or": [{"a": [1, 2]}]})) == 1
        assert len(find(coll, {"$or": [{"a": {"$all": [1, 2]}}]})) == 1
        assert len(find(coll, {"$or": [{"a": {"$all": [1, 3]}}]})) == 0


# --------------------------------------------------------------------------------------------------
# or/or6.js, or/or7.js, or/or8.js, or/or9.js
# --------------------------------------------------------------------------------------------------

def test_rooted_or_sorted(db):
    """or6.js (SERVER-13715): a rooted ``$or`` sorted by a field both indexes end in, and sorted by a
    field one clause lacks."""
    docs = [{"a": 1, "c": 9}, {"a": 1, "c": 10}, {"b": 2, "c": 8}, {"b": 2, "c": 7}]
    for coll in index_variants(db, docs, {"a": 1, "c": 1}, {"b": 1, "c": 1}):
        assert [d["c"] for d in coll.find({"$or": [{"a": 1}, {"b": 2}]}).sort("c", 1)] == [7, 8, 9, 10]
        assert len(list(coll.find({"$or": [{"a": 1}, {"b": 2}]}).sort("a", 1))) == 4


def test_or_of_overlapping_ranges_regexes_and_in(db):
    """or7.js (SERVER-1201): ``$or`` clauses whose ranges, ``$in`` sets and regex prefixes overlap
    count each document once."""
    for coll in index_variants(db, [{"a": 2}], {"a": 1}):
        assert count(coll, {"$or": [{"a": {"$in": [1, 3]}}, {"a": 2}]}) == 1
    regex_or = {"$or": [{"a": {"$regex": "^ab"}}, {"a": {"$regex": "^a"}}]}
    for docs, n in (([{"a": "aa"}, {"a": "ab"}, {"a": "ad"}], 3), ([{"a": "aa"}, {"a": "ad"}], 2),
                    ([{"a": "aa"}, {"a": "ac"}], 2)):
        for coll in index_variants(db, docs, {"a": 1}):
            assert count(coll, regex_or) == n
    for coll in index_variants(db, [{"a": "aa"}, {"a": "ac"}, {"a": "ab"}], {"a": 1}):
        assert count(coll, {"$or": [{"a": {"$in": [Regex("^ab")], "$gte": "abc"}}, {"a": Regex("^a")}]}) == 3
    for coll in index_variants(db, [{"a": "a"}, {"a": "b"}], {"a": 1}):
        assert count(coll, {"$or": [{"a": {"$gt": "a", "$lt": "b"}}, {"a": {"$gte": "a", "$lte": "b"}}]}) == 2


def test_or_with_empty_in_and_nested_fields(db):
    """or8.js: ``$or`` on a missing collection; an empty ``$in`` clause matches nothing; clauses on
    two subfields of one (array of) subdocument(s) count it once."""
    assert find(db.missing, {"$or": [{"PropA": {"$lt": "b"}}, {"PropA": {"$lt": "b", "$gt": "a"}}]}) == []
    for coll in index_variants(db, [{"a": 1}, {"a": 3}], {"a": 1}):
        assert find(coll, {"$or": [{"a": {"$in": []}}]}) == []
        for clauses in ([{"a": {"$in": []}}, {"a": 1}, {"a": 3}], [{"a": 1}, {"a": {"$in": []}}, {"a": 3}],
                        [{"a": 1}, {"a": 3}, {"a": {"$in": []}}]):
            assert len(find(coll, {"$or": clauses})) == 2
    for coll in index_variants(db, [{"a": {"b": 1, "c": 1}}], {"a.b": 1}, {"a.c": 1}):
        assert len(find(coll, {"$or": [{"a.b": 1}, {"a.c": 1}]})) == 1
    for coll in index_variants(db, [{"a": [{"b": 1, "c": 1}, {"b": 2, "c": 1}]}], {"a.b": 1}, {"a.c": 1}):
        assert len(find(coll, {"$or": [{"a.b": 2}, {"a.c": 1}]})) == 1


OR9_ONE = [
    {"$or": [{"a": {"$gte": 1, "$lte": 3}}, {"a": 2}]},
    {"$or": [{"a": {"$gt": 2, "$lte": 3}}, {"a": 2}]},
    {"$or": [{"b": {"$gte": 1, "$lte": 3}}, {"b": 2}]},
    {"$or": [{"b": {"$gte": 2, "$lte": 3}}, {"b": 2}]},
    {"$or": [{"b": {"$gt": 2, "$lte": 3}}, {"b": 2}]},
    {"$or": [{"a": {"$gte": 1, "$lte": 3}}, {"a": 2, "b": 2}]},
    {"$or": [{"a": {"$gte": 1, "$lte": 3}, "b": 3}, {"a": 2}]},
    {"$or": [{"b": {"$gte": 1, "$lte": 3}}, {"b": 2, "a": 2}]},
    {"$or": [{"b": {"$gte": 1, "$lte": 3}, "a": 3}, {"b": 2}]},
    {"$or": [{"a": {"$gte": 1, "$lte": 3}, "b": 3}, {"a": 2, "b": 2}]},
    {"$or": [{"a": {"$gte": 2, "$lte": 3}, "b": 3}, {"a": 2, "b": 2}]},
    {"$or": [{"a": {"$gte": 1, "$lte": 3}, "b": 2}, {"a": 2, "b": 2}]},
    {"$or": [{"b": {"$gte": 1, "$lte": 3}, "a": 3}, {"a": 2, "b": 2}]},
    {"$or": [{"b": {"$gte": 2, "$lte": 3}, "a": 3}, {"a": 2, "b": 2}]},
    {"$or": [{"b": {"$gte": 1, "$lte": 3}, "a": 2}, {"a": 2, "b": 2}]},
]
OR9_TWO = [
    {"$or": [{"a": {"$in": [1, 5]}, "b": {"$in": [1, 5]}}, {"a": {"$in": [1, 5]}, "b": {"$in": [1, 5]}}]},
    {"$or": [{"a": {"$in": [1]}, "b": {"$in": [1, 5]}}, {"a": {"$in": [1, 5]}, "b": {"$in": [1, 5]}}]},
    {"$or": [{"a": {"$in": [1]}, "b": {"$in": [1]}}, {"a": {"$in": [1, 5]}, "b": {"$in": [1, 5]}}]},
]


def test_or_clauses_over_compound_index_ranges(db):
    """or9.js (SERVER-12594): clauses whose ranges on a compound index overlap count a document once."""
    for coll in index_variants(db, [{"a": 2, "b": 2}], {"a": 1, "b": 1}):
        for q in OR9_ONE:
            assert count(coll, q) == 1, q
    for coll in index_variants(db, [{"a": 1, "b": 5}, {"a": 5, "b": 1}], {"a": 1, "b": 1}):
        for q in OR9_TWO:
            assert count(coll, q) == 2, q


# --------------------------------------------------------------------------------------------------
# or/ora.js, or/orb.js, or/orc.js, or/ore.js, or/orf.js, or/org.js, or/orh.js, or/oro.js, or/orp.js
# --------------------------------------------------------------------------------------------------

def test_or_of_where_clauses(db):
    """ora.js: ``$where`` clauses inside ``$or``; a ``$near`` as the one branch of an ``$or`` finds
    nothing in an empty collection (or fails)."""
    coll = db.c
    coll.insert_many([{"x": i, "y": 10 - i} for i in range(10)])
    assert count(coll, {"$or": [{"$where": "this.x === 2"}]}) == 1
    assert count(coll, {"$or": [{"$where": "this.x === 2"}, {"$where": "this.y === 2"}]}) == 2
    assert count(coll, {"$or": [{"$where": "this.x === 2"}, {"$where": "this.y === 8"}]}) == 1
    assert count(coll, {"$or": [{"$where": "this.x === 2"}, {"x": {"$ne": 2}}]}) == 10
    geo = db.geo
    geo.create_index([("loc", "2d")])
    # (the jstest's assert.throws passes on the empty collection's exhausted cursor as well: a $or of
    # one branch is that branch, a top-level $near)
    with pytest.raises((OperationFailure, StopIteration)):
        next(geo.find({"$or": [{"loc": {"$near": [11, 11]}}]}).limit(1))


def test_or_over_descending_index_ranges(db):
    """orb.js: overlapping range clauses over a descending (and mixed-direction compound) index."""
    for coll in index_variants(db, [{"a": 1}], {"a": -1}):
        assert count(coll, {"$or": [{"a": {"$gt": 0, "$lt": 2}}, {"a": {"$gt": -1, "$lt": 3}}]}) == 1
    for coll in index_variants(db, [{"a": 1, "b": 1}], {"a": 1, "b": -1}):
        assert count(coll, {"$or": [{"a": {"$gt": 0, "$lt": 2}}, {"a": {"$gt": -1, "$lt": 3}}]}) == 1
        assert count(coll, {"$or": [{"a": 1, "b": {"$gt": 0, "$lt": 2}}, {"a": 1, "b": {"$gt": -1, "$lt": 3}}]}) == 1


@pytest.mark.parametrize("doc", [{"a": None, "b": 4, "c": 4}, {"b": 4, "c": 4}], ids=["null", "missing"])
def test_or_dedups_null_clauses(db, doc):
    """orc.js (SERVER-2245): two ``{a: null, b: range, c: range}`` clauses over ``{a: -1, b: 1, c: 1}``
    count a document with a null or missing ``a`` once."""
    q = {"$or": [{"a": None, "b": {"$gte": 0, "$lte": 5}, "c": {"$gte": 0, "$lte": 5}},
                 {"a": None, "b": {"$gte": 3, "$lte": 8}, "c": {"$gte": 3, "$lte": 8}}]}
    for coll in index_variants(db, [doc], {"a": -1, "b": 1, "c": 1}):
        assert count(coll, q) == 1


def test_or_dedup_across_index_directions(db):
    """ore.js: an ``$in`` clause over a descending index and an equality over another index."""
    for coll in index_variants(db, [{"a": 1, "b": 1}, {"a": 2, "b": 1}], {"a": -1}, {"b": 1}):
        assert count(coll, {"$or": [{"a": {"$in": [1, 2]}}, {"b": 1}]}) == 2


def test_or_of_two_hundred_id_clauses(db):
    """orf.js: ``$or`` of 200 ``_id`` equalities (hinted to the ``_id`` index too)."""
    coll = db.c
    clauses = [{"_id": i} for i in range(200)]
    coll.insert_many([dict(c) for c in clauses])
    assert count(coll, {"$or": clauses}) == 200
    assert len(list(coll.find({"$or": clauses}).hint([("_id", 1)]))) == 200


def test_or_with_sparse_index_and_null(db):
    """org.js (SERVER-2282), orh.js (SERVER-2831): ``{a: null}`` clauses where ``a`` has a sparse index
    still match documents lacking ``a``."""
    for doc, q in (({"a": 1, "b": 2}, {"$or": [{"a": 1}, {"b": 2}]}),
                   ({"a": None, "b": 2}, {"$or": [{"a": None}, {"b": 2}]}),
                   ({"b": 2}, {"$or": [{"a": None}, {"b": 2}]})):
        for coll in index_variants(db, [doc], ({"a": 1}, {"sparse": True}), {"b": 1}):
            assert count(coll, q) == 1
    for coll in index_variants(db, [{"b": 2}], ({"a": 1}, {"sparse": True}), {"b": 1, "a": 1}):
        assert count(coll, {"a": None}) == 1
        assert count(coll, {"b": 2, "a": None}) == 1
        assert count(coll, {"$or": [{"b": 2, "a": None}, {"a": None}]}) == 1
        assert count(coll, {"$or": [{"a": None}, {"b": 2, "a": None}]}) == 1


def test_or_over_ten_indexes_interleaved_with_stats(db):
    """oro.js: ``$or`` of ten clauses each on its own index, read in batches of 100 with collStats
    between getMores."""
    coll = db.c
    clauses = []
    for n in range(1, 11):
        key = "a" * n
        coll.create_index([(key, 1)])
        coll.insert_many([{key: 1} for _ in range(200)])
        clauses.append({key: 1})
    cursor = coll.find({"$or": clauses}).batch_size(100)
    seen = 0
    for _ in cursor:
        seen += 1
        if seen % 50 == 0:
            db.command("collStats", coll.name)
    assert seen == 2000


def test_or_dedups_large_result_sets(db):
    """orp.js: ``$or`` deduplication with more than 101 results, from the previous clause, from an
    earlier clause, over overlapping compound-index ranges and from a clause finished early."""
    docs = [{"_id": i, "a": 1, "b": 1} for i in range(110)]
    for coll in index_variants(db, docs, {"a": 1}, {"b": 1}, {"c": 1}):
        assert coll.count_documents({"$or": [{"a": 1}, {"b": 1}]}) == 110
        assert coll.count_documents({"$or": [{"a": 1}, {"c": 1}, {"b": 1}]}) == 110
        coll.insert_one({"_id": 1000, "c": 1})
        assert coll.count_documents({"$or": [{"a": 1}, {"c": 1}, {"b": 1}]}) == 111
    k = 11
    docs = [{"a": i, "b": j} for i in range(k) for j in range(k)]
    for coll in index_variants(db, docs, {"a": 1, "b": 1}):
        q = {"$or": [{"a": {"$gte": 0}, "b": {"$gte": 0}}, {"a": {"$lte": k}, "b": {"$lte": k}}]}
        assert coll.count_documents(q) == k * k
    k = 120
    docs = [{"a": 1, "b": k}] + [{"b": i} for i in range(k)]
    for coll in index_variants(db, docs, {"a": 1}, {"b": 1}):
        assert coll.count_documents({"$or": [{"a": 1}, {"b": {"$gte": 0}}]}) == k + 1


# --------------------------------------------------------------------------------------------------
# or/or_inexact.js
# --------------------------------------------------------------------------------------------------

SQUARE_40_5 = {"type": "Polygon", "coordinates": [[[39, 4], [41, 4], [41, 6], [39, 6], [39, 4]]]}
SQUARE_0_0 = {"type": "Polygon", "coordinates": [[[-1, -1], [1, -1], [1, 1], [-1, 1], [-1, -1]]]}
POINTS = [{"_id": 0, "pre": 3, "loc": {"type": "Point", "coordinates": [40, 5]}},
          {"_id": 1, "pre": 4, "loc": {"type": "Point", "coordinates": [0, 0]}}]
INEXACT_CASES = {
    "exact_and_covered": ([{"_id": 0, "name": "thomas"}, {"_id": 1, "name": "alexandra"}], [{"name": 1}],
                          {"$or": [{"name": "thomas"}, {"name": Regex("^alexand(er|ra)")}]}, 2),
    "two_covered": ([{"_id": 0, "name": "thomas"}, {"_id": 1, "name": "alexandra"}], [{"name": 1}],
                    {"$or": [{"name": Regex("omas")}, {"name": Regex("^alexand(er|ra)")}]}, 2),
    "exact_covered_fetch": (
        [{"_id": 0, "names": ["thomas", "alexandra"]}, {"_id": 1, "names": "frank"}, {"_id": 2, "names": "alice"},
         {"_id": 3, "names": ["dave"]}], [{"names": 1}],
        {"$or": [{"names": "frank"}, {"names": Regex("^al(ice|ex)")}, {"names": {"$elemMatch": {"$eq": "thomas"}}}]}, 3),
    "two_fetch": (
        [{"_id": 0, "names": ["thomas", "alexandra"]}, {"_id": 1, "names": ["frank", "alice"]}, {"_id": 2, "names": "frank"}],
        [{"names": 1}],
        {"$or": [{"names": {"$elemMatch": {"$eq": "alexandra"}}}, {"names": {"$elemMatch": {"$eq": "frank"}}}]}, 2),
    "two_indexes": (
        [{"_id": 0, "first": "frank", "last": "smith"}, {"_id": 1, "first": "john", "last": "doe"},
         {"_id": 2, "first": "dave", "last": "st"}, {"_id": 3, "first": ["dave", "david"], "last": "pasette"},
         {"_id": 4, "first": "joanna", "last": ["smith", "doe"]}], [{"first": 1}, {"last": 1}],
        {"$or": [{"first": "frank"}, {"last": {"$elemMatch": {"$eq": "doe"}}}, {"first": Regex("david")}, {"last": "st"}]}, 4),
    "multikey_exact": ([{"_id": 0, "names": ["david", "dave"]}, {"_id": 1, "names": ["joseph", "joe", "joey"]}],
                       [{"names": 1}], {"$or": [{"names": "dave"}, {"names": "joe"}]}, 2),
    "multikey_covered": ([{"_id": 0, "names": ["david", "dave"]}, {"_id": 1, "names": ["joseph", "joe", "joey"]}],
                         [{"names": 1}], {"$or": [{"names": "dave"}, {"names": Regex("joe")}]}, 2),
    "geo_2dsphere": (POINTS, [{"pre": 1, "loc": "2dsphere"}],
                     {"$or": [{"pre": 3, "loc": {"$geoWithin": {"$geometry": SQUARE_40_5}}},
                              {"pre": 4, "loc": {"$geoWithin": {"$geometry": SQUARE_0_0}}}]}, 2),
    # (the jstest's {pre: 1, loc: "2d"} fails 16801 "2d has to be first in index": no index there)
    "geo_2d": (POINTS, [], {"$or": [{"pre": 3, "loc": {"$geoWithin": {"$geometry": SQUARE_40_5}}},
                                    {"pre": 4, "loc": {"$geoWithin": {"$geometry": SQUARE_0_0}}}]}, 2),
    "elem_match_object": ([{"_id": 0, "a": [{"b": 1}, {"b": 2}]}, {"_id": 1, "a": [{"b": 3}, {"b": 4}]}], [{"a.b": 1}],
                          {"$or": [{"a": {"$elemMatch": {"b": {"$lte": 1}}}}, {"a": {"$elemMatch": {"b": {"$gte": 4}}}}]}, 2),
    "elem_match_under_and": (
        [{"_id": 0, "a": [{"b": 1}, {"b": 2}]}, {"_id": 1, "a": [{"b": 2}, {"b": 4}]}], [{"a.b": 1}],
        {"a.b": 2, "$or": [{"a": {"$elemMatch": {"b": {"$lte": 1}}}}, {"a": {"$elemMatch": {"b": {"$gte": 4}}}}]}, 2),
    "or_under_elem_match": (
        [{"_id": 0, "a": [{"b": 1}, {"b": 2}]}, {"_id": 1, "a": [{"b": 2}, {"b": 4}]}, {"_id": 2, "a": {"b": 4}}],
        [{"a.b": 1}], {"a": {"$elemMatch": {"$or": [{"b": 1}, {"b": 4}]}}}, 2),
    "or_under_elem_match_regex": (
        [{"_id": 0, "a": [{"b": "x"}, {"b": "y"}]}, {"_id": 1, "a": [{"b": "y"}, {"b": ["y", "z"]}]},
         {"_id": 2, "a": {"b": ["y", "z"]}}], [{"a.b": 1}],
        {"a": {"$elemMatch": {"$or": [{"b": "x"}, {"b": Regex("z")}]}}}, 2),
    "null_or_range": ([{"number": None, "user_id": 1}, {"number": 2, "user_id": 1}, {"number": 1, "user_id": 1}],
                      [{"number": 1}], {"$or": [{"number": None}, {"number": {"$lte": 2}}]}, 3),
    "in_exact_and_regex": ([{"_id": 0, "name": "thomas"}, {"_id": 1, "name": "alexandra"}], [{"name": 1}],
                           {"name": {"$in": ["thomas", Regex("^alexand(er|ra)")]}}, 2),
    "in_or_not_exists": ([{"_id": 0, "name": "thomas"}, {"_id": 1, "name": "alexandra"}, {"_id": 2}], [{"name": 1}],
                         {"$or": [{"name": {"$in": ["thomas", Regex("^alexand(er|ra)")]}}, {"name": {"$exists": False}}]}, 3),
    "in_two_indexes": (
        [{"_id": 0, "a": "x", "b": "y"}, {"_id": 1, "a": "z", "b": "z"}, {"_id": 2}, {"_id": 3, "a": "w", "b": "x"},
         {"_id": 4, "a": "l", "b": "p"}], [{"a": 1}, {"b": 1}],
        {"$or": [{"a": {"$in": [Regex("z"), Regex("x")]}}, {"a": "w"}, {"b": {"$exists": False}}, {"b": {"$in": ["p"]}}]}, 5),
    "two_geo_within": ([{"_id": 0, "loc": POINTS[0]["loc"]}, {"_id": 1, "loc": POINTS[1]["loc"]}], [{"loc": "2dsphere"}],
                       {"$or": [{"loc": {"$geoWithin": {"$geometry": SQUARE_40_5}}},
                                {"loc": {"$geoWithin": {"$geometry": SQUARE_0_0}}}]}, 2),
}


@pytest.mark.parametrize("case", list(INEXACT_CASES))
def test_or_with_inexact_index_bounds(db, case):
    """or_inexact.js: ``$or`` / ``$in`` whose clauses give exact, covered-inexact (regex) and
    fetch-inexact (``$elemMatch``, ``$exists: false``) bounds, multikey and geo index clauses."""
    docs, indexes, query, n = INEXACT_CASES[case]
    for coll in index_variants(db, docs, *indexes):
        assert len(find(coll, query)) == n


def test_2d_index_must_lead(db):
    """or_inexact.js case 12 creates ``{pre: 1, loc: '2d'}``, which fails: a 2d field must come first."""
    with pytest.raises(OperationFailure) as info:
        db.c.create_index([("pre", 1), ("loc", "2d")])
    assert info.value.code == 16801


TEXT_CASES = [
    pytest.param([{"_id": 0, "pre": 3, "names": "david dave", "other": 1}, {"_id": 1, "pre": 4, "names": "joseph joe joey", "other": 2}],
     {"$or": [{"$text": {"$search": "dave"}, "pre": 3}, {"other": 2}]}, 2, id="exact"),
    pytest.param([{"_id": 0, "pre": 3, "names": "david dave", "other": "foo"}, {"_id": 1, "pre": 5, "names": "david dave", "other": "foo"},
      {"_id": 2, "pre": 4, "names": "joseph joe joey", "other": "bar"}],
     {"$or": [{"$text": {"$search": "dave"}, "pre": 3}, {"other": Regex("bar")}]}, 2, id="covered"),
    pytest.param([{"_id": 0, "pre": 3, "names": "david dave", "other": "foo"}, {"_id": 1, "pre": 3, "names": "david dave", "other": "foo"},
      {"_id": 2, "pre": 4, "names": "joseph joe joey", "other": "bar"}],
     {"$or": [{"$text": {"$search": "dave"}, "pre": 3, "other": "foo"}, {"other": Regex("bar")}]}, 3, id="filtered"),
]


@pytest.mark.parametrize("docs,query,n", TEXT_CASES)
def test_or_with_text_clause(db, docs, query, n):
    """or_inexact.js cases 8-10: a ``$text`` clause (over ``{pre: 1, names: 'text'}``) beside an
    indexed clause inside ``$or``."""
    coll = db.c
    coll.create_index([("pre", 1), ("names", "text")])
    coll.create_index([("other", 1)])
    coll.insert_many(docs)
    assert len(find(coll, query)) == n


# --------------------------------------------------------------------------------------------------
# or/or_to_in.js
# --------------------------------------------------------------------------------------------------

OR_TO_IN_DOCS = [
    {"_id": 0, "f1": 3, "f2": 7}, {"_id": 1, "f1": 1, "f2": [32, 42, 52, [11]]}, {"_id": 2, "f1": 2, "f2": 9},
    {"_id": 3, "f1": 5, "f2": 42}, {"_id": 4, "f1": 1, "f2": [23, 42, 13]}, {"_id": 5, "f1": "xz", "f2": 13},
    {"_id": 6, "f1": "ab", "f2": 15}, {"_id": 7, "f1": None, "f2": None}, {"_id": 8, "f1": UNDEFINED, "f2": UNDEFINED},
    {"_id": 9, "f1": NAN, "f2": NAN}, {"_id": 10, "f1": 1, "f2": [32, 52]}, {"_id": 11, "f1": 1, "f2": [42, [13, 11]]},
]
OR_TO_IN_PAIRS = [
    ({"$or": [{"f1": 5}, {"f1": 3}, {"f1": 7}]}, {"f1": {"$in": [7, 3, 5]}}, [0, 3]),
    ({"$or": [{"f1": {"$eq": 5}}, {"f1": {"$eq": 3}}, {"f1": {"$eq": 7}}]}, {"f1": {"$in": [7, 3, 5]}}, [0, 3]),
    ({"$or": [{"f1": 42}, {"f1": NAN}, {"f1": 99}]}, {"f1": {"$in": [42, NAN, 99]}}, [9]),
    ({"$or": [{"f1": Regex("^x")}, {"f1": "ab"}]}, {"f1": {"$in": [Regex("^x"), "ab"]}}, [5, 6]),
    ({"$or": [{"f1": Regex("^x")}, {"f1": "ab"}]}, {"$or": [{"f1": "ab"}, {"f1": Regex("^x")}]}, [5, 6]),
    ({"$or": [{"f1": Regex("^x")}, {"f1": "^a"}]}, {"f1": {"$in": [Regex("^x"), "^a"]}}, [5]),
    ({"$or": [{"f1": 42}, {"f1": None}, {"f1": 99}]}, {"f1": {"$in": [42, 99, None]}}, [7, 8]),
    ({"$or": [{"f1": 1}, {"f2": 9}, {"f1": 99}]}, {"$or": [{"f2": 9}, {"f1": {"$in": [1, 99]}}]}, [1, 2, 4, 10, 11]),
    ({"$or": [{"f1": {"$regex": Regex("^x")}}, {"f1": {"$regex": Regex("ab")}}]}, {"f1": {"$in": [Regex("^x"), Regex("ab")]}},
     [5, 6]),
    ({"$and": [{"$or": [{"f1": 7}, {"f1": 3}, {"f1": 5}]}, {"$or": [{"f1": 1}, {"f1": 2}, {"f1": 3}]}]},
     {"$and": [{"f1": {"$in": [7, 3, 5]}}, {"f1": {"$in": [1, 2, 3]}}]}, [0]),
    ({"$or": [{"$or": [{"f1": 7}, {"f1": 3}, {"f1": 5}]}, {"$or": [{"f1": 1}, {"f1": 2}, {"f1": 3}]}]},
     {"$or": [{"f1": {"$in": [7, 3, 5]}}, {"f1": {"$in": [1, 2, 3]}}]}, [0, 1, 2, 3, 4, 10, 11]),
    ({"$or": [{"$and": [{"f1": 7}, {"f2": 7}, {"f1": 5}]}, {"$or": [{"f1": 1}, {"f1": 2}, {"f1": 3}]}]},
     {"$or": [{"$and": [{"f1": 7}, {"f2": 7}, {"f1": 5}]}, {"f1": {"$in": [1, 2, 3]}}]}, [0, 1, 2, 4, 10, 11]),
    ({"$or": [{"f2": [32, 52]}, {"f2": [42, [13, 11]]}]}, {"f2": {"$in": [[32, 52], [42, [13, 11]]]}}, [10, 11]),
    ({"$or": [{"f2": 52}, {"f2": 13}]}, {"f2": {"$in": [52, 13]}}, [1, 4, 5, 10]),
    ({"$or": [{"f2": [11]}, {"f2": [23]}]}, {"f2": {"$in": [[11], [23]]}}, [1]),
    ({"$or": [{"f1": 42}, {"f1": None}]}, {"f1": {"$in": [42, None]}}, [7, 8]),
    ({"$or": [{"f1": "a"}, {"f1": "b"}, {"f1": Regex("c")}]}, {"f1": {"$in": ["a", "b", Regex("c")]}}, []),
    ({"$or": [{"f1": "a"}, {"f1": "b"}, {"f1": Regex("c")}]}, {"$or": [{"f1": Regex("c")}, {"f1": "a"}, {"f1": "b"}]}, []),
    ({"$or": [{"f2": 9}, {"f1": 1}, {"f1": 99}]}, {"$or": [{"f2": 9}, {"f1": {"$in": [1, 99]}}]}, [1, 2, 4, 10, 11]),
    ({"$or": [{"f1": 1}, {"f1": 2}, {"f2": 3}, {"f2": 4}]}, {"$or": [{"f1": {"$in": [1, 2]}}, {"f2": {"$in": [3, 4]}}]},
     [1, 2, 4, 10, 11]),
    ({"$or": [{"f1": 1}, {"f2": 3}, {"f1": 2}, {"f2": 4}]}, {"$or": [{"f1": {"$in": [1, 2]}}, {"f2": {"$in": [3, 4]}}]},
     [1, 2, 4, 10, 11]),
    ({"$or": [{"f1": 1}, {"f1": 2}, {"f2": 3}, {"f2": 4}, {"f3": 5}]},
     {"$or": [{"f1": {"$in": [1, 2]}}, {"f2": {"$in": [3, 4]}}, {"f3": 5}]}, [1, 2, 4, 10, 11]),
    ({"$or": [{"f1": 1}, {"f1": 1}]}, {"f1": 1}, [1, 4, 10, 11]),
    # not rewritten to $in (different semantics): $eq to a regex is an equality with a regex value
    ({"$or": [{"f1": {"$eq": Regex("^x")}}, {"f1": {"$eq": Regex("ab")}}]}, {"f1": {"$in": []}}, []),
    ({"$or": [{"f1": {"$lt": 2}}, {"f1": {"$gt": 3}}]}, {"f1": {"$in": [1, 5]}}, [1, 3, 4, 10, 11]),
]


@pytest.mark.parametrize("collation", [None, {"locale": "en_US"}, {"locale": "de"}], ids=["simple", "en_US", "de"])
def test_or_of_equalities_equals_in(db, collation):
    """or_to_in.js (results): an ``$or`` of equalities on one path returns what the equivalent ``$in``
    returns (NaN, null/undefined, regexes, arrays), without indexes, with ``{f1: 1}``, and with
    ``{f1: 1}``, ``{f2: 1}``, ``{f1: -1, f2: 1}``; also under a collection default collation (the
    query collation en_US), sorted by ``f1``."""
    for n, indexes in enumerate(([], [{"f1": 1}], [{"f1": 1}, {"f2": 1}, {"f1": -1, "f2": 1}])):
        coll = db[f"c{n}"]
        if collation:
            db.create_collection(coll.name, collation=collation)
        coll.insert_many([raw(d) for d in OR_TO_IN_DOCS])
        for index in indexes:
            coll.create_index(list(index.items()))
        for or_query, in_query, expected in OR_TO_IN_PAIRS:
            assert find_ids(coll, or_query) == find_ids(coll, in_query) == expected, or_query
            en = {"locale": "en_US"}
            assert (sorted(d["_id"] for d in coll.find(raw(or_query), collation=en).sort("f1", 1))
                    == sorted(d["_id"] for d in coll.find(raw(in_query), collation=en).sort("f1", 1)) == expected)


# --------------------------------------------------------------------------------------------------
# and/and2.js, and/and3.js, and/and_or_index_sort.js, and/and_or_nested.js
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("query,expected", [
    pytest.param({"a": 1}, {"a": [5, 2]}, id="plain"),
    pytest.param({"$and": [{"a": 1}]}, {"a": [5, 2]}, id="and"),
    pytest.param({"a": 1, "b": 4}, {"a": [1, 5], "b": [3, 4]}, id="two_arrays"),
    pytest.param({"a": 1, "$and": [{"b": 4}]}, {"a": [1, 5], "b": [3, 4]}, id="two_arrays_and"),
])
def test_positional_update_through_and(db, query, expected):
    """and2.js (SERVER-1089): the positional ``$`` of an update whose query matches the array inside
    ``$and`` is the one of the same query without ``$and`` (the last array matched sets it)."""
    coll = db.c
    coll.insert_one({"a": [1, 2], **({"b": [3, 4]} if "b" in expected else {})})
    coll.update_one(query, {"$set": {"a.$": 5}})
    assert coll.find_one({}, {"_id": 0}) == expected


AND3_CASES = [
    ({"a": Regex("o")}, 1), ({"a": Regex("a")}, 0), ({"a": {"$not": Regex("o")}}, 1), ({"a": {"$not": Regex("a")}}, 2),
    ({"$and": [{"a": Regex("o")}]}, 1), ({"$and": [{"a": Regex("a")}]}, 0),
    ({"$and": [{"a": {"$not": Regex("o")}}]}, 1), ({"$and": [{"a": {"$not": Regex("a")}}]}, 2),
    ({"$and": [{"a": Regex("oo")}, {"a": {"$not": Regex("o")}}]}, 0),
    ({"$and": [{"a": Regex("o")}, {"a": {"$not": Regex("a")}}]}, 1),
    ({"$or": [{"a": Regex("o")}]}, 1), ({"$or": [{"a": Regex("a")}]}, 0),
    ({"$nor": [{"a": Regex("o")}]}, 1), ({"$nor": [{"a": Regex("a")}]}, 2),
    ({"$and": [{"$and": [{"a": Regex("o")}]}]}, 1), ({"$and": [{"$and": [{"a": Regex("a")}]}]}, 0),
    ({"$and": [{"$and": [{"a": {"$not": Regex("o")}}]}]}, 1), ({"$and": [{"$and": [{"a": {"$not": Regex("a")}}]}]}, 2),
    ({"$and": [{"$or": [{"a": Regex("o")}]}]}, 1), ({"$and": [{"$or": [{"a": Regex("a")}]}]}, 0),
    ({"$or": [{"a": {"$not": Regex("o")}}]}, 1), ({"$and": [{"$or": [{"a": {"$not": Regex("o")}}]}]}, 1),
    ({"$and": [{"$or": [{"a": {"$not": Regex("a")}}]}]}, 2),
    ({"$and": [{"$nor": [{"a": Regex("o")}]}]}, 1), ({"$and": [{"$nor": [{"a": Regex("a")}]}]}, 2),
    ({"$where": "this.a==1"}, 1), ({"$and": [{"$where": "this.a==1"}]}, 1),
    ({"a": 1, "$where": "this.a==1"}, 1), ({"a": 1, "$and": [{"$where": "this.a==1"}]}, 1),
    ({"$and": [{"a": 1}, {"$where": "this.a==1"}]}, 1), ({"$and": [{"a": 1, "$where": "this.a==1"}]}, 1),
    ({"a": 1, "$and": [{"a": 1}, {"a": 1, "$where": "this.a==1"}]}, 1),
    ({"a": 1, "$and": [{"a": 2}]}, 0), ({"$and": [{"a": 1}, {"a": 2}]}, 0),
]


def test_nested_logical_operators_over_regex_and_where(db):
    """and3.js (SERVER-3192): regexes, ``$not`` regexes and ``$where`` nested in ``$and`` / ``$or`` /
    ``$nor`` return the same documents with and without the ``{a: 1}`` index (hinted)."""
    for n, coll in enumerate(index_variants(db, [{"a": 1}, {"a": "foo"}], {"a": 1})):
        for query, expected in AND3_CASES:
            assert len(find(coll, query)) == expected, query
            if n:
                assert len(find(coll, query, hint=[("a", 1)])) == expected, query


AND_OR_DOCS = [
    {"_id": 1, "a": 8, "b": 3, "c": 4, "d": 0}, {"_id": 2, "a": 1, "b": 5, "c": 9, "d": 1},
    {"_id": 3, "a": 6, "b": 7, "c": 2, "d": 1}, {"_id": 4, "a": 4, "b": 8, "c": 3, "d": 0},
    {"_id": 5, "a": 9, "b": 1, "c": 5, "d": 1}, {"_id": 6, "a": 2, "b": 6, "c": 7, "d": 0},
    {"_id": 7, "a": 3, "b": 4, "c": 8, "d": 0}, {"_id": 8, "a": 5, "b": 9, "c": 1, "d": 0},
    {"_id": 9, "a": 7, "b": 2, "c": 6, "d": 1},
]
SORT_DOCS = AND_OR_DOCS + [{"_id": 10, "b": 3, "c": 4.5, "d": 0}, {"_id": 11, "a": 8, "b": 3.5, "d": 0},
                           {"_id": 12, "a": 9, "c": 5.5, "d": 1}, {"_id": 13, "a": 9, "b": 1.5, "d": 1}]
NESTED_DOCS = AND_OR_DOCS + [{"_id": 10, "b": 3, "c": 4, "d": 0}, {"_id": 11, "a": 8, "b": 3, "d": 0},
                             {"_id": 12, "a": 9, "c": 5, "d": 1}, {"_id": 13, "a": 9, "b": 1, "d": 1}]
DEEP_OR = {"$or": [{"a": {"$gt": 8}}, {"$and": [{"b": {"$lt": 5}}, {"$or": [{"c": {"$lt": 5}}, {"d": 1}]}]}]}
AND_OF_ANDS = {"$or": [{"$and": [{"a": {"$gt": 5}}, {"c": {"$gt": 2}}]}, {"$and": [{"b": {"$lt": 5}}, {"d": 1}]}]}
SIX_OR_FOUR = {"$or": [{"a": {"$gt": 6}}, {"b": {"$lt": 4}}]}


@pytest.mark.parametrize("indexes", [[{"a": 1}, {"b": 1, "c": 1}], [{"a": 1, "c": 1}, {"b": 1}],
                                     [{"a": 1, "c": 1}, {"b": 1, "c": 1}]], ids=["a_bc", "ac_b", "ac_bc"])
def test_nested_and_or_sorted(db, indexes):
    """and_or_index_sort.js: nested ``$and`` / ``$or`` with sorts (the order checked) and a projection
    of the sort field, under several index sets."""
    by_id = {d["_id"]: d for d in SORT_DOCS}

    def docs(*ids):
        return [by_id[i] for i in ids]

    for coll in index_variants(db, SORT_DOCS, *indexes):
        assert list(coll.find({"a": {"$lt": 3}}).sort([("c", 1), ("a", 1)])) == docs(6, 2)
        assert list(coll.find({"$or": [{"a": {"$gt": 8}}, {"b": {"$lt": 2}}]}).sort("c", 1)) == docs(13, 5, 12)
        assert list(coll.find(DEEP_OR).sort("c", 1)) == docs(13, 1, 10, 5, 12, 9)
        assert list(coll.find(SIX_OR_FOUR).sort([("a", 1), ("b", 1)])) == docs(10, 9, 1, 11, 12, 5, 13)
        assert find_ids(coll, SIX_OR_FOUR) == [1, 5, 9, 10, 11, 12, 13]
        assert find_ids(coll, DEEP_OR) == [1, 5, 9, 10, 12, 13]
        assert find_ids(coll, AND_OF_ANDS) == [1, 5, 9, 12, 13]
        cs = [d.get("c") for d in coll.find({"a": {"$gt": 6}}, {"c": 1, "_id": 0}).sort("c", 1)]
        assert cs == [None, None, 4, 5, 5.5, 6]
        cs = [d.get("c") for d in coll.find(SIX_OR_FOUR, {"c": 1, "_id": 0}).sort("c", 1)]
        assert cs == [None, None, 4, 4.5, 5, 5.5, 6]


@pytest.mark.parametrize("indexes", [[{"a": 1}], [{"b": 1}], [{"a": 1}, {"b": 1}], [{"a": 1}, {"c": 1}]],
                         ids=["a", "b", "a_b", "a_c"])
def test_nested_and_or(db, indexes):
    """and_or_nested.js: ``$and`` / ``$or`` nested in each other, under several index sets."""
    for coll in index_variants(db, NESTED_DOCS, *indexes):
        assert find_ids(coll, {"$and": [{"a": {"$gt": 5}}, {"c": {"$gt": 4}}]}) == [5, 9, 12]
        assert find_ids(coll, {"$and": [{"$or": [{"a": {"$gt": 5}}, {"b": {"$lt": 5}}]}, {"c": {"$lt": 6}}]}) == [1, 3, 5, 10, 12]
        assert find_ids(coll, {"$or": [{"b": {"$gte": 7}}]}) == [3, 4, 8]
        assert find_ids(coll, {"$or": [{"$and": [{"b": {"$gte": 7}}]}]}) == [3, 4, 8]
        assert find_ids(coll, SIX_OR_FOUR) == [1, 5, 9, 10, 11, 12, 13]
        assert find_ids(coll, AND_OF_ANDS) == [1, 5, 9, 12, 13]
        assert find_ids(coll, DEEP_OR) == [1, 5, 9, 10, 12, 13]


# --------------------------------------------------------------------------------------------------
# ne/ne1.js, ne/ne2.js, ne/ne_null.js, ne/ne_null_indexed.js, nin/nin.js, nin/nin2.js, nin/nin_null.js
# --------------------------------------------------------------------------------------------------

def test_ne_excludes_the_value(db):
    """ne1.js, ne2.js: ``$ne`` alone and inside a range, with and without an index."""
    for coll in index_variants(db, [{"x": 1}, {"x": 2}, {"x": 3}], {"x": 1}):
        assert len(find(coll, {"x": {"$ne": 2}})) == 2
    for coll in index_variants(db, [{"a": -0.5}, {"a": 0}, {"a": 0}, {"a": 0.5}], {"a": 1}):
        assert len(find(coll, {"a": {"$ne": 0}})) == 2
        assert len(find(coll, {"a": {"$gt": -1, "$lt": 1, "$ne": 0}})) == 2


NULL_DOCS = [{"a": [1, {"c": 1}]}, {"a": [1]}, {"a": []}, {"a": [[]]}, {"a": [{}]}, {}, {"a": {}}, {"a": None}]


def test_ne_and_nin_null_on_a_missing_field(db):
    """ne_null.js, nin_null.js, ne_null_indexed.js (SERVER-36681): a field no document has is null
    everywhere: ``$ne: null`` / ``$nin: [null]`` match nothing, ``$eq: null`` / ``$in: [null]``
    everything; a dotted path reaching a real (nested-array) value is not null. (The jstests' other
    dotted-path cases pin 9.0 semantics and are left out.)"""
    for coll in index_variants(db, NULL_DOCS, {"a.b": 1}, {"b": 1}):
        assert count(coll, {"b": {"$ne": None}}) == 0
        assert count(coll, {"b": {"$nin": [None]}}) == 0
        assert count(coll, {"b": {"$eq": None}}) == 8
        assert count(coll, {"b": {"$in": [None]}}) == 8
    for coll in index_variants(db, [{"_id": 0, "a": [{"b": [[3]]}]}, {"_id": 1, "a": {"b": [[2]]}}], {"a.b": 1}):
        assert find_ids(coll, {"a.b": {"$ne": None}}) == [0, 1]
        assert find_ids(coll, {"a.b": {"$eq": None}}) == []
        assert count(coll, {"a.b": {"$ne": None}}) == 2
        assert count(coll, {"a.b": {"$eq": None}}) == 0


def test_nin_over_arrays(db):
    """nin.js: ``$nin`` over array fields (an array matches ``$nin`` only if no element is in the
    set), ``$in`` + ``$nin`` of one value partition the collection, dotted paths, ``$all``."""
    for coll in index_variants(db, [], {"a": 1}):
        coll.insert_many([{"a": [1, 2, 3]}, {"a": [1, 2, 4]}, {"a": [1, 8, 5]}, {"a": [1, 8, 6]}, {"a": [1, 9, 7]}])
        for query, n in (({"$nin": [10]}, 5), ({"$ne": 1}, 0), ({"$nin": [1]}, 0), ({"$nin": [1, 2]}, 0),
                         ({"$nin": [2]}, 3), ({"$nin": [8]}, 3), ({"$nin": [9]}, 4), ({"$nin": [3]}, 4),
                         ({"$nin": [2, 3]}, 3), ({"$ne": 8, "$nin": [2, 3]}, 1)):
            assert count(coll, {"a": query}) == n, query

        partition(coll, "a", 5)
        coll.insert_one({"a": [2, 2]})
        assert count(coll, {"a": {"$nin": [2, 2]}}) == 3
        coll.insert_one({"a": [[2]]})
        assert count(coll, {"a": {"$nin": [2]}}) == 4
        coll.insert_one({"a": [{"b": [10, 11]}, 11]})
        partition(coll, "a", 5)
        partition(coll, "a.b", 5)
        assert count(coll, {"a.b": {"$nin": [10]}}) == 7
        assert count(coll, {"a.b": {"$nin": [[10, 11]]}}) == 7
        assert count(coll, {"a": {"$nin": [11]}}) == 7
        coll.insert_one({"a": {"b": [20, 30]}})
        assert count(coll, {"a.b": {"$all": [20]}}) == 1
        assert count(coll, {"a.b": {"$all": [20, 30]}}) == 1


def partition(coll, key: str, value) -> None:
    """nin.js checkEqual: ``$in: [value]`` and ``$nin: [value]`` split the collection."""
    assert count(coll, {key: {"$in": [value]}}) + count(coll, {key: {"$nin": [value]}}) == count(coll, {})


NIN2_CASES = [
    ({}, [[None], True], [[None, 1], True], [[1, None], True]),
    ({"foo": None}, [[], False], [[None], True], [[None, 1], True], [[1, None], True]),
    ({"foo": 1}, [[None], False], [[None, 1], True], [[1, None], True]),
    ({"foo": [0, 1]}, [[[0, 1]], True]),
    ({"foo": []}, [[[]], True]),
    ({"foo": "foo"}, [[Regex("o")], True]),
]


@pytest.mark.parametrize("case", NIN2_CASES, ids=["missing", "null", "one", "array", "empty_array", "regex"])
def test_nin_is_the_negation_of_in(db, case):
    """nin2.js (SERVER-3264): ``$nin`` (and ``$not: {$in}``) matches exactly what ``$in`` does not,
    for a missing field, null, numbers, arrays and regexes."""
    doc, *checks = case
    for coll in index_variants(db, [doc], {"foo": 1}):
        if "foo" not in doc or doc["foo"] is None:
            assert count(coll, {"foo": None}) == 1
            assert count(coll, {"foo": {"$ne": None}}) == 0
            assert count(coll, {"foo": 1}) == 0
        for array, matches in checks:
            n = int(matches)
            assert count(coll, {"foo": {"$in": array}}) == n, array
            assert count(coll, {"foo": {"$not": {"$in": array}}}) == 1 - n, array
            assert count(coll, {"foo": {"$nin": array}}) == 1 - n, array
            assert count(coll, {"foo": {"$not": {"$nin": array}}}) == n, array


# --------------------------------------------------------------------------------------------------
# always_true_false.js, coercetobool_invalid.js, boolean_expression_simplification.js
# --------------------------------------------------------------------------------------------------

def test_always_true_and_always_false(db):
    """always_true_false.js: ``$alwaysTrue`` / ``$alwaysFalse`` alone and under ``$and`` / ``$or``; an
    empty ``$or`` is 2; a rooted ``$or`` of false clauses returns nothing; ``$alwaysTrue: 0`` is 9
    FailedToParse; ``$alwaysFalse`` as a field operator is 2."""
    coll = db.c
    coll.insert_many([{"a": []}, {"a": False}, {"a": None}, {}, {"a": False, "b": 2}, {"a": False, "b": 1}])
    f, t = {"$alwaysFalse": 1}, {"$alwaysTrue": 1}
    for query, n in (
        (f, 0), ({**f, "a": False}, 0), ({**f, "b": 1}, 0), ({"$or": [{"b": 1}, f]}, 1), ({"$or": [f]}, 0),
        ({"$or": [f, f]}, 0), ({"$or": [f, {"a": {"$all": []}}, f]}, 0), ({"$and": [{"b": 1}, f]}, 0),
        ({"$and": [{"a": False}, f, f]}, 0), (t, 6), ({**t, "a": False}, 3), ({**t, "b": 1}, 1),
        ({"$and": [{"a": False}, t, t]}, 3), ({"$and": [{"a": False}, t, f]}, 0), ({"$or": [{"b": 1}, t]}, 6),
        ({"$or": [{"b": 1}, f, t]}, 6),
    ):
        assert len(find(coll, query)) == n, query
    coll.drop()
    coll.insert_many([{}, {}, {}])
    find_fails(coll, {"$or": []}, BAD_VALUE)
    for query in ({"$or": [f]}, {"$or": [{"a": {"$all": []}}]}, {"$or": [f, f]}, {"$or": [f, {"a": {"$all": []}}, f]}):
        assert find(coll, query) == []
    find_fails(coll, {"$alwaysTrue": 0}, FAILED_TO_PARSE)
    find_fails(coll, {"$alwaysFalse": 0}, FAILED_TO_PARSE)
    find_fails(coll, {"a": {"$alwaysFalse": 1}}, BAD_VALUE)


def test_coerce_to_bool_is_not_an_expression(db):
    """coercetobool_invalid.js: ``$coerceToBool`` is no expression: 168 in a find's ``$expr``, 31325
    in a ``$project``."""
    err = find_fails(db.c, {"$expr": {"$coerceToBool": {"$eq": ["$_id", 15]}}}, INVALID_PIPELINE_OPERATOR)
    assert "Unrecognized expression '$coerceToBool'" in str(err)
    aggregate_fails(db.c, [{"$project": {"x": {"$coerceToBool": {"$eq": ["$_id", 15]}}}}], 31325)


SIMPLIFIER_DOCS = [
    {"_id": 0, "a": 1, "b": 1}, {"_id": 1, "a": 1, "b": 2}, {"_id": 2, "a": 2, "b": 1}, {"_id": 3, "a": 2, "b": 2},
    {"_id": 4, "c": [1, 2]}, {"_id": 5, "c": [1]}, {"_id": 6, "c": 1, "d": 2},
    {"_id": 7, "d": [{"e": [{"f": [11]}]}]}, {"_id": 8, "a": [3, 6, 9]}, {"_id": 9, "a": [5, 7]},
    {"_id": 10, "a": [{"b": 9, "id": 1}, {"id": 1}]}, {"_id": 11, "a": 0, "b": 0}, {"_id": 12, "b": 0, "c": 34},
    {"_id": 13, "a": 1, "b": 0, "c": 2}, {"_id": 14, "a": {"id": {"$eq": 1}}},
]
SIMPLIFIER_PAIRS = [
    ({"$or": [{"$and": [{"a": 1}, {"a": {"$ne": 1}}]}, {"b": 2}]}, {"b": {"$eq": 2}}),
    ({"$and": [{"c": 1}, {"c": {"$elemMatch": {"$ne": 1}}}]}, {"$and": [{"c": {"$elemMatch": {"$not": {"$eq": 1}}}}, {"c": {"$eq": 1}}]}),
    ({"$and": [{"$or": [{"a": {"$eq": 1}}, {"b": {"$eq": 1}}]}, {"$or": [{"c": {"$eq": 2}}, {"d": {"$eq": 2}}]}]},
     {"$or": [{"a": 1, "c": 2}, {"a": 1, "d": 2}, {"b": 1, "c": 2}, {"b": 1, "d": 2}]}),
    ({"$or": [{}, {}]}, {}),
    ({"$or": [{}]}, {}),
    ({"$and": [{"a": 1}, {"a": 1}]}, {"a": {"$eq": 1}}),
    ({"a": {"$elemMatch": {"$not": {"$gt": 5, "$lt": 8}, "$gt": 4}}}, {"a": {"$elemMatch": {"$gt": 4, "$not": {"$gt": 5, "$lt": 8}}}}),
    ({"$and": [{"a": {"$elemMatch": {"$and": [{"b": {"$eq": 9}}, {"id": {"$eq": 1}}]}}}, {"a": {"$eq": {"id": {"$eq": 1}}}}]},
     {"$and": [{"a": {"$eq": {"id": {"$eq": 1}}}}, {"a": {"$elemMatch": {"b": 9, "id": 1}}}]}),
    ({"a": {"$eq": 1, "$exists": True}}, {"$and": [{"a": {"$eq": 1}}, {"a": {"$exists": True}}]}),
    ({"a": {"$eq": 1, "$ne": None}}, {"$and": [{"a": {"$eq": 1}}, {"a": {"$not": {"$eq": None}}}]}),
    ({"$and": [{"b": 0}, {"$or": [{"a": 0}, {"$and": [{"c": {"$in": [34, 45]}}, {"c": {"$nin": [34, 45]}}]}]}]},
     {"$and": [{"a": {"$eq": 0}}, {"b": {"$eq": 0}}]}),
]


@pytest.mark.parametrize("pair", range(len(SIMPLIFIER_PAIRS)))
def test_boolean_simplification_keeps_results(db, pair):
    """boolean_expression_simplification.js (results only): each filter returns what mongod's
    simplified form returns (contradictions dropped, duplicate predicates merged, DNF expansions)."""
    query, simplified = SIMPLIFIER_PAIRS[pair]
    for coll in index_variants(db, SIMPLIFIER_DOCS, {"a": 1}, {"b": 1}):
        assert find_ids(coll, query) == find_ids(coll, simplified)


# --------------------------------------------------------------------------------------------------
# expr/expr.js, expr/expr_valid_positions.js
# --------------------------------------------------------------------------------------------------

UNBOUND = {"$eq": ["$a", "$$unbound"]}
DIVIDE = {"$divide": [1, "$a"]}


def test_expr_in_aggregate_count_distinct_and_find(db):
    """expr.js: ``$expr`` in a ``$match``, count, distinct and find; an unbound variable fails 17276
    (at parse time, before any document), a division by zero 16608 (when a document is read)."""
    coll = db.c
    coll.insert_one({"_id": 0, "a": 0})
    assert len(list(coll.aggregate([{"$match": {"$expr": {"$eq": ["$a", 0]}}}]))) == 1
    assert len(list(coll.aggregate([{"$match": {"$expr": {"$eq": ["$$ROOT", {"_id": 0, "a": 0}]}}}]))) == 1
    aggregate_fails(coll, [{"$match": {"$expr": UNBOUND}}], UNBOUND_VARIABLE)
    aggregate_fails(coll, [{"$match": {"$expr": DIVIDE}}], DIVIDE_BY_ZERO)
    assert count(coll, {"$expr": {"$eq": ["$a", 0]}}) == 1
    fails(lambda: count(coll, {"$expr": UNBOUND}), UNBOUND_VARIABLE)
    fails(lambda: count(coll, {"$expr": DIVIDE}), DIVIDE_BY_ZERO)
    assert coll.distinct("a", {"$expr": {"$eq": ["$a", 0]}}) == [0]
    fails(lambda: coll.distinct("a", {"$expr": UNBOUND}), UNBOUND_VARIABLE)
    fails(lambda: coll.distinct("a", {"$expr": DIVIDE}), DIVIDE_BY_ZERO)
    assert len(find(coll, {"$expr": {"$eq": ["$a", 0]}})) == 1
    find_fails(coll, {"$expr": UNBOUND}, UNBOUND_VARIABLE)
    find_fails(coll, {"$expr": DIVIDE}, DIVIDE_BY_ZERO)
    find_fails(db.empty, {"$expr": UNBOUND}, UNBOUND_VARIABLE)
    coll.database.command("explain", {"find": coll.name, "filter": {"$expr": {"$eq": ["$a", 0]}}})
    fails(lambda: coll.database.command("explain", {"find": coll.name, "filter": {"$expr": UNBOUND}}), UNBOUND_VARIABLE)


def test_expr_time_zone_across_get_more(db):
    """expr.js (SERVER-31664): an ``$expr`` with a time-zone expression evaluated in a getMore."""
    coll = db.c
    coll.insert_one({"a": iso("2017-10-01T22:00:00")})
    flt = {"$expr": {"$eq": [1, {"$dayOfMonth": {"date": "$a", "timezone": "America/New_York"}}]}}
    res = db.command("find", coll.name, filter=flt, batchSize=0)
    assert res["cursor"]["firstBatch"] == []
    more = db.command("getMore", res["cursor"]["id"], collection=coll.name)
    assert len(more["cursor"]["nextBatch"]) == 1


@pytest.mark.parametrize("op", ["$and", "$or", "$nor"])
def test_expr_invalid_constant_expression_under_logical_operator(db, op):
    """expr.js: a logical operator holding an ``$expr`` whose constant argument is invalid
    (``$anyElementTrue: undefined``) fails even where a sibling clause decides the match (the
    expression is folded when the filter is optimized): 17041."""
    coll = db.c
    coll.insert_one({"a": iso("2017-10-01T22:00:00")})
    find_fails(coll, {op: [{"a": 0}, {"$expr": {"$anyElementTrue": UNDEFINED}}]}, 17041)
    find_fails(db.empty, {op: [{"a": 0}, {"$expr": {"$anyElementTrue": UNDEFINED}}]}, 17041)


def test_expr_only_at_the_document_root(db):
    """expr_valid_positions.js: ``$expr`` works at the root and inside ``$or``; inside an
    ``$elemMatch`` or ``$_internalSchemaObjectMatch`` filter it is 2 BadValue."""
    coll = db.c
    assert find(coll, {"$expr": {"$eq": ["$foo", "$bar"]}}) == []
    assert find(coll, {"$or": [{"$expr": {"$eq": ["$foo", "$bar"]}}, {"b": {"$gt": 3}}]}) == []
    find_fails(coll, {"a": {"$elemMatch": {"$expr": {"$eq": ["$foo", "$bar"]}}}}, BAD_VALUE)
    find_fails(coll, {"a": {"$_internalSchemaObjectMatch": {"$expr": {"$eq": ["$foo", "$bar"]}}}}, BAD_VALUE)


PULL_EXPR = {"$pull": {"a": {"$expr": {"$eq": ["$b", 5]}}}}
ARRAY_FILTER_EXPR = [{"i.b": 5, "$expr": {"$eq": ["$i.b", 5]}}]
REFUSED_EXPR = [
    pytest.param(lambda c: list(c.find({}, {"a": {"$elemMatch": {"$expr": {"$eq": ["$b", 5]}}}})), id="elem_match_projection"),
    pytest.param(lambda c: c.find_one_and_update({"_id": 0}, PULL_EXPR), id="find_and_modify_pull"),
    pytest.param(lambda c: c.find_one_and_update({"_id": 0}, {"$set": {"a.$[i].b": 6}}, array_filters=ARRAY_FILTER_EXPR),
                 id="find_and_modify_array_filters"),
    pytest.param(lambda c: c.find_one_and_update({"_id": 0, "$expr": {"$eq": ["$a", 0]}}, {"$set": {"b": 6}},
                                                 upsert=True), id="find_and_modify_upsert"),
    pytest.param(lambda c: c.update_one({"_id": 0}, PULL_EXPR), id="update_pull"),
    pytest.param(lambda c: c.update_one({"_id": 0}, {"$set": {"a.$[i].b": 6}}, array_filters=ARRAY_FILTER_EXPR),
                 id="update_array_filters"),
    pytest.param(lambda c: c.update_one({"_id": 0, "$expr": {"$eq": ["$a", 5]}}, {"$set": {"b": 6}}, upsert=True),
                 id="update_upsert"),
]


@pytest.mark.parametrize("call", REFUSED_EXPR)
def test_expr_refused_where_no_document_root(db, call):
    """expr.js: ``$expr`` is 224 QueryFeatureNotAllowed in an ``$elemMatch`` projection, a ``$pull``
    condition, arrayFilters and an upsert's query (findAndModify and update)."""
    coll = db.c
    coll.insert_one({"_id": 0, "a": [{"b": 5}]})
    with pytest.raises(OperationFailure) as info:
        call(coll)
    assert info.value.code == QUERY_FEATURE_NOT_ALLOWED, info.value


def test_expr_in_writes(db):
    """expr.js: ``$expr`` in findAndModify, delete and update queries (no upsert); an unbound variable
    or a division by zero fails the write; in a batch, the statements before a failing one apply."""
    coll = db.c
    coll.insert_one({"_id": 0, "a": 0})
    assert coll.find_one_and_update({"_id": 0, "$expr": {"$eq": ["$a", 0]}}, {"$set": {"b": 6}},
                                    return_document=True) == {"_id": 0, "a": 0, "b": 6}
    fails(lambda: coll.find_one_and_update({"_id": 0, "$expr": UNBOUND}, {"$set": {"b": 6}}), UNBOUND_VARIABLE)
    fails(lambda: coll.find_one_and_update({"_id": 0, "$expr": DIVIDE}, {"$set": {"b": 6}}), DIVIDE_BY_ZERO)
    assert coll.delete_one({"_id": 0, "$expr": {"$eq": ["$a", 0]}}).deleted_count == 1
    write_fails(lambda: coll.delete_one({"_id": 0, "$expr": UNBOUND}), UNBOUND_VARIABLE)
    coll.insert_one({"_id": 0, "a": 0})
    write_fails(lambda: coll.delete_one({"_id": 0, "$expr": DIVIDE}), DIVIDE_BY_ZERO)
    coll.update_one({"_id": 0, "$expr": {"$eq": ["$a", 0]}}, {"$set": {"b": 6}})
    assert coll.find_one({"_id": 0}) == {"_id": 0, "a": 0, "b": 6}
    write_fails(lambda: coll.update_one({"_id": 0, "$expr": UNBOUND}, {"$set": {"b": 6}}), UNBOUND_VARIABLE)
    write_fails(lambda: coll.update_one({"_id": 0, "$expr": DIVIDE}, {"$set": {"b": 6}}), DIVIDE_BY_ZERO)

    coll.drop()
    coll.insert_many([{"_id": 0}, {"_id": 1}])
    res = db.command("delete", coll.name, deletes=[{"q": {"_id": 0}, "limit": 1}, {"q": {"$expr": "$$unbound"}, "limit": 1}])
    assert res["n"] == 1 and res["writeErrors"][0]["code"] == UNBOUND_VARIABLE
    res = db.command("update", coll.name, updates=[{"q": {"_id": 1}, "u": {"$set": {"b": 6}}},
                                                   {"q": {"$expr": "$$unbound"}, "u": {"$set": {"b": 6}}}])
    assert res["n"] == 1 and res["writeErrors"][0]["code"] == UNBOUND_VARIABLE


def test_expr_in_geo_near_query(db):
    """expr.js: ``$expr`` in ``$geoNear``'s query; an unbound variable or a division by zero fails."""
    coll = db.c
    coll.insert_one({"geo": {"type": "Point", "coordinates": [0, 0]}, "a": 0})
    coll.create_index([("geo", "2dsphere")])

    def geo_near(query):
        return [{"$geoNear": {"near": {"type": "Point", "coordinates": [0, 0]}, "distanceField": "dist",
                              "spherical": True, "query": query}}]

    assert len(list(coll.aggregate(geo_near({"$expr": {"$eq": ["$a", 0]}})))) == 1
    aggregate_fails(coll, geo_near({"$expr": UNBOUND}), UNBOUND_VARIABLE)
    aggregate_fails(coll, geo_near({"$expr": DIVIDE}), DIVIDE_BY_ZERO)


# --------------------------------------------------------------------------------------------------
# Hypothesis: random $and / $or / $nor / $not trees against a reference evaluator
# --------------------------------------------------------------------------------------------------

_ABSENT = object()
FIELD_VALUES = [_ABSENT, None, 0, 1, 2, 3, [], [1], [0, 2], [3, 1, 2]]
TREE_DOCS = [{"_id": i * len(FIELD_VALUES) + j, **({} if a is _ABSENT else {"a": a}), **({} if b is _ABSENT else {"b": b})}
             for i, a in enumerate(FIELD_VALUES) for j, b in enumerate(FIELD_VALUES)]


def _candidates(doc: dict, field: str) -> list:
    """What a leaf predicate on ``field`` looks at: the value, and an array's elements too."""
    if field not in doc:
        return [_ABSENT]
    value = doc[field]
    return [value, *value] if isinstance(value, list) else [value]


def _leaf(doc: dict, field: str, op: str, arg) -> bool:
    """The reference semantics of one leaf over ints, null, missing and arrays of ints."""
    xs = _candidates(doc, field)
    if op == "$eq":
        return any(x == arg and not isinstance(x, list) or (arg is None and x is _ABSENT) for x in xs)
    if op == "$ne":
        return not _leaf(doc, field, "$eq", arg)
    if op == "$in":
        return any(_leaf(doc, field, "$eq", v) for v in arg)
    if op == "$nin":
        return not _leaf(doc, field, "$in", arg)
    if op == "$exists":
        return (field in doc) == arg
    if op in ("$gt", "$gte", "$lt", "$lte"):
        cmp = {"$gt": int.__gt__, "$gte": int.__ge__, "$lt": int.__lt__, "$lte": int.__le__}[op]
        return any(type(x) is int and cmp(x, arg) for x in xs)
    raise AssertionError(op)


def reference(doc: dict, flt: dict) -> bool:
    """A filter of the generated language evaluated in Python (each key of a filter ANDed)."""
    for key, value in flt.items():
        if key == "$and":
            ok = all(reference(doc, c) for c in value)
        elif key == "$or":
            ok = any(reference(doc, c) for c in value)
        elif key == "$nor":
            ok = not any(reference(doc, c) for c in value)
        elif isinstance(value, dict):
            ok = all(not _leaf(doc, key, *next(iter(arg.items()))) if op == "$not" else _leaf(doc, key, op, arg)
                     for op, arg in value.items())
        else:
            ok = _leaf(doc, key, "$eq", value)
        if not ok:
            return False
    return True


_values = st.sampled_from([None, 0, 1, 2, 3])
_ints = st.integers(0, 3)
_condition = st.one_of(
    st.tuples(st.sampled_from(["$eq", "$ne"]), _values),
    st.tuples(st.sampled_from(["$gt", "$gte", "$lt", "$lte"]), _ints),
    st.tuples(st.sampled_from(["$in", "$nin"]), st.lists(_values, min_size=0, max_size=3)),
    st.tuples(st.just("$exists"), st.booleans()),
)
_negatable = st.one_of(st.tuples(st.sampled_from(["$gt", "$gte", "$lt", "$lte"]), _ints),
                       st.tuples(st.sampled_from(["$eq", "$in"]), st.one_of(_values, st.lists(_values, min_size=1, max_size=2))))


@st.composite
def _leaf_filter(draw) -> dict:
    field = draw(st.sampled_from(["a", "b"]))
    form = draw(st.sampled_from(["plain", "op", "not"]))
    if form == "plain":
        return {field: draw(_values)}
    if form == "not":
        op, arg = draw(_negatable)
        if (op == "$in") != isinstance(arg, list):
            op = "$in" if isinstance(arg, list) else "$eq"
        return {field: {"$not": {op: arg}}}
    ops = draw(st.lists(_condition, min_size=1, max_size=2, unique_by=lambda c: c[0]))
    return {field: dict(ops)}


_filters = st.recursive(
    _leaf_filter(),
    lambda children: st.one_of(
        st.builds(lambda op, cs: {op: cs}, st.sampled_from(["$and", "$or", "$nor"]), st.lists(children, min_size=1, max_size=3)),
        st.builds(lambda a, b: {**a, **b}, children, children),
    ),
    max_leaves=6,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(flt=_filters)
def test_random_logical_trees_match_the_reference(db, flt):
    """Random ``$and`` / ``$or`` / ``$nor`` / ``$not`` trees of ``$eq``/``$ne``/ranges/``$in``/``$nin``/
    ``$exists`` over documents whose fields are missing, null, ints or arrays of ints return what a
    Python reference evaluator says, without indexes and with ``{a: 1}``, ``{b: 1}`` and a sparse
    ``{a: -1, _id: 1}``."""
    plain, indexed = db.plain, db.indexed
    if plain.estimated_document_count() == 0:
        plain.insert_many(TREE_DOCS)
        indexed.create_index([("a", 1)])
        indexed.create_index([("b", 1)])
        indexed.create_index([("a", -1), ("_id", 1)], sparse=True)
        indexed.insert_many(TREE_DOCS)
    expected = sorted(d["_id"] for d in TREE_DOCS if reference(d, flt))
    assert find_ids(plain, flt) == expected, flt
    assert find_ids(indexed, flt) == expected, flt


# --------------------------------------------------------------------------------------------------
# expr/expr_index_use.js, expr/expr_in_index_use.js, expr/expr_and_or_index.js,
# expr/expr_or_pushdown.js, expr/expr_in_split_pushdown.js (results only)
# --------------------------------------------------------------------------------------------------

def expr_answers(coll, expr, collation=None) -> dict:
    """The documents ``expr`` selects as a find ``$expr``, an aggregate ``$match`` and a ``$cond``
    in a ``$project`` (never an index): each as sorted ``_id``s."""
    opts = {"collation": collation} if collation else {}
    agg = list(coll.aggregate([{"$match": raw({"$expr": expr})}], **opts))
    found = list(coll.find(raw({"$expr": expr}), **opts))
    projected = list(coll.aggregate([raw({"$project": {"result": {"$cond": [expr, True, False]}}}),
                                     {"$match": {"result": True}}], **opts))
    return {"agg": sorted(map(str, ids_of(agg))), "find": sorted(map(str, ids_of(found))),
            "project": sorted(map(str, ids_of(projected)))}


def ids_of(docs) -> list:
    return [d["_id"] for d in docs]


def assert_expr_count(coll, expr, n, collation=None) -> None:
    got = expr_answers(coll, expr, collation)
    assert {k: len(v) for k, v in got.items()} == {"agg": n, "find": n, "project": n}, expr
    assert got["agg"] == got["find"] == got["project"], expr


EXPR_INDEX_DOCS = [
    {"a": {"b": 1}}, {"a": {"b": [1]}}, {"a": [{"b": 1}]}, {"a": [{"b": [1]}]}, {"c": {"d": 1}}, {"e": [{"f": 1}]},
    {"g": {"h": [1]}}, {"i": 1, "j": [1]}, {"k": 1, "l": "abc"}, {"x": 0}, {"x": 1, "y": 1}, {"x": 2, "y": 2},
    {"x": 3, "y": 10}, {"y": 20}, {"w": 123}, {}, {"w": None}, {"w": UNDEFINED}, {"w": NAN}, {"w": "foo"},
    {"w": "FOO"}, {"w": {"z": 1}}, {"w": {"z": 2}},
]
EXPR_INDEXES = [{"a.b": 1}, {"c.d": 1}, {"e.f": 1}, {"g.h": 1}, {"i": 1, "j": 1}, {"x": 1, "y": 1}, {"w": 1}, {"w.z": 1}]
EXPR_COUNTS = [
    ({"$eq": ["$x", 1]}, 1), ({"$eq": [1, "$x"]}, 1), ({"$lt": ["$x", 1]}, 20), ({"$lt": [1, "$x"]}, 2),
    ({"$lte": ["$x", 1]}, 21), ({"$lte": [1, "$x"]}, 3), ({"$gt": ["$x", 1]}, 2), ({"$gt": [1, "$x"]}, 20),
    ({"$gte": ["$x", 1]}, 3), ({"$gte": [1, "$x"]}, 21),
    ({"$and": [{"$eq": ["$x", 2]}, {"$eq": ["$y", 2]}]}, 1), ({"$and": [{"$gt": ["$x", 1]}, {"$lt": ["$y", 5]}]}, 1),
    ({"$and": [{"$eq": ["$x", 1]}, {"$eq": ["$x", "$y"]}]}, 1), ({"$and": [{"$gt": ["$x", 1]}, {"$lte": ["$x", "$y"]}]}, 2),
    ({"$and": [{"$eq": ["$x", 1]}, {"$or": [{"$eq": ["$x", "$y"]}, {"$eq": ["$y", 1]}]}]}, 1),
    ({"$and": [{"$gt": ["$x", 1]}, {"$or": [{"$gt": ["$y", "$x"]}, {"$lt": ["$y", 5]}]}]}, 2),
    ({"$eq": ["$c.d", 1]}, 1), ({"$gt": ["$c.d", 0]}, 1), ({"$lt": ["$c.d", 0]}, 22),
    ({"$in": ["$x", [1, 3]]}, 2), ({"$cmp": ["$x", 1]}, 22), ({"$ne": ["$x", 1]}, 22),
    ({"$eq": ["$a.b", [1]]}, 2), ({"$eq": ["$w", [1]]}, 0), ({"$gt": ["$a.b", [1]]}, 1), ({"$gte": ["$a.b", [1]]}, 3),
    ({"$lt": ["$w", [1]]}, 23), ({"$lte": ["$w", [1]]}, 23),
    (1, 23), (False, 0), ({"$eq": [1, 1]}, 23), ({"$eq": [0, 1]}, 0), ({"$gt": [0, 1]}, 0), ({"$gte": [1, 0]}, 23),
    ({"$lt": [0, 1]}, 23), ({"$lte": [1, 0]}, 0),
    ({"$eq": ["$x", "$y"]}, 20), ({"$gt": ["$x", "$y"]}, 1), ({"$gte": ["$x", "$y"]}, 21), ({"$lt": ["$x", "$y"]}, 2),
    ({"$lte": ["$x", "$y"]}, 22),
    ({"$eq": ["$a.b", 1]}, 1), ({"$eq": ["$e.f", [1]]}, 1), ({"$eq": ["$e.f", 1]}, 0), ({"$eq": ["$g.h", [1]]}, 1),
    ({"$eq": ["$g.h", 1]}, 0), ({"$gt": ["$a.b", 1]}, 3), ({"$gte": ["$a.b", 1]}, 4), ({"$lt": ["$g.h", 1]}, 22),
    ({"$lte": ["$g.h", 1]}, 22),
    ({"$eq": ["$i", 1]}, 1), ({"$gt": ["$i", 0]}, 1), ({"$gte": ["$i", 0]}, 1), ({"$eq": ["$i", 2]}, 0),
    ({"$lt": ["$i", 1]}, 22), ({"$lte": ["$i", 0]}, 22),
    ({"$eq": ["$w", NAN]}, 1), ({"$gt": ["$w", NAN]}, 5), ({"$gte": ["$w", NAN]}, 6), ({"$lt": ["$w", NAN]}, 17),
    ({"$lte": ["$w", NAN]}, 18),
    ({"$gte": ["$w", "$$REMOVE"]}, 23), ({"$lt": ["$w", "$$REMOVE"]}, 0),
    ({"$gt": ["$w", None]}, 6), ({"$lte": ["$w", None]}, 17),
    ({"$eq": ["$w.z", 2]}, 1), ({"$gt": ["$w.z", 1]}, 1), ({"$gte": ["$w.z", 1]}, 2), ({"$lt": ["$w.z", 2]}, 22),
    ({"$lte": ["$w.z", 2]}, 23),
]
# (the document {w: undefined} is one of the missing ones here, below null; a stored null it is not)
EXPR_UNDEFINED_COUNTS = [
    xf(UNDEFINED_AS_NULL, {"$eq": ["$w", "$$REMOVE"]}, 16, id="eq_remove"),
    xf(UNDEFINED_AS_NULL, {"$gt": ["$w", "$$REMOVE"]}, 7, id="gt_remove"),
    xf(UNDEFINED_AS_NULL, {"$lte": ["$w", "$$REMOVE"]}, 16, id="lte_remove"),
    xf(UNDEFINED_AS_NULL, {"$eq": ["$w", None]}, 1, id="eq_null"),
    xf(UNDEFINED_AS_NULL, {"$gte": ["$w", None]}, 7, id="gte_null"),
    xf(UNDEFINED_AS_NULL, {"$lt": ["$w", None]}, 16, id="lt_null"),
    xf(UNDEFINED_AS_NULL, {"$eq": ["$w", UNDEFINED]}, 16, id="eq_undefined"),
    xf(UNDEFINED_AS_NULL, {"$gt": ["$w", UNDEFINED]}, 7, id="gt_undefined"),
    xf(UNDEFINED_AS_NULL, {"$gte": ["$w", UNDEFINED]}, 23, id="gte_undefined"),
    xf(UNDEFINED_AS_NULL, {"$lt": ["$w", UNDEFINED]}, 0, id="lt_undefined"),
    xf(UNDEFINED_AS_NULL, {"$lte": ["$w", UNDEFINED]}, 16, id="lte_undefined"),
]
CASE_INSENSITIVE = {"locale": "en_US", "strength": 2}


def test_expr_comparisons_with_and_without_indexes(db):
    """expr_index_use.js (results): ``$expr`` comparisons of a field and a constant, of two fields,
    of constants, against arrays, multikey and dotted paths, NaN, null, ``$$REMOVE``, under ``$and`` /
    ``$or``: the same counts as a find, an aggregate ``$match`` and a ``$project``, with and without
    the jstest's indexes (the hashed ``{w: 'hashed'}`` index too), and under a case-insensitive
    collation."""
    for n, coll in enumerate(index_variants(db, EXPR_INDEX_DOCS, *EXPR_INDEXES)):
        for expr, count_ in EXPR_COUNTS:
            assert_expr_count(coll, expr, count_)
        for expr, count_ in (({"$eq": ["$w", "FoO"]}, 2), ({"$gt": ["$w", "FoO"]}, 2), ({"$gte": ["$w", "FoO"]}, 4),
                             ({"$lt": ["$w", "FoO"]}, 19), ({"$lte": ["$w", "FoO"]}, 21)):
            assert_expr_count(coll, expr, count_, CASE_INSENSITIVE)
        if n:
            coll.drop_index([("w", 1)])
            coll.create_index([("w", "hashed")])
            for expr, count_ in (({"$eq": ["$w", 123]}, 1), ({"$eq": ["$w", NAN]}, 1)):
                assert_expr_count(coll, expr, count_)


@pytest.mark.parametrize("expr,n", EXPR_UNDEFINED_COUNTS)
def test_expr_comparison_to_undefined_null_and_missing(db, expr, n):
    """expr_index_use.js: in an aggregation comparison a BSON undefined (stored or constant) is
    missing, below null: with and without the indexes (the hashed ``{w: 'hashed'}`` one too)."""
    for n_, coll in enumerate(index_variants(db, EXPR_INDEX_DOCS, *EXPR_INDEXES)):
        assert_expr_count(coll, expr, n)
        if n_:
            coll.drop_index([("w", 1)])
            coll.create_index([("w", "hashed")])
            assert_expr_count(coll, expr, n)


def test_expr_in_and_text_prefix(db):
    """expr_index_use.js: a ``$text`` search over ``{k: 1, l: 'text'}`` needs an equality on ``k``
    outside ``$expr``: with only ``$expr: {$eq: ['$k', 1]}`` it fails."""
    coll = db.c
    coll.insert_one({"k": 1, "l": "abc"})
    coll.create_index([("k", 1), ("l", "text")])
    aggregate_fails(coll, [{"$match": {"$expr": {"$eq": ["$k", 1]}, "$text": {"$search": "abc"}}}])


def test_expr_respects_the_collection_collation(db):
    """expr_index_use.js: comparisons in ``$expr`` use the collection's default (case-insensitive)
    collation, with an index of that collation and with a simple-collation index."""
    coll = db.c
    db.create_collection("c", collation=CASE_INSENSITIVE)
    coll.insert_many([{"a": "foo", "b": "bar"}, {"a": "FOO", "b": "BAR"}])
    coll.create_index([("a", 1)])
    coll.create_index([("b", 1)], collation={"locale": "simple"})
    for field, value in (("a", "foo"), ("b", "bar")):
        for op, n in (("$eq", 2), ("$gt", 0), ("$gte", 2), ("$lt", 0), ("$lte", 2)):
            assert_expr_count(coll, {op: [f"${field}", value]}, n)


def test_expr_comparison_to_subdocument_with_undefined(db):
    """expr_index_use.js: comparisons to a subdocument holding undefined and an array."""
    docs = [{}, {"w": UNDEFINED}, {"w": None}, {"w": NAN}, {"w": 123}, {"w": "foo"}, {"w": {"z": 1}},
            {"w": {"z": UNDEFINED, "u": ["array"]}}]
    value = {"z": UNDEFINED, "u": ["array"]}
    for coll in index_variants(db, docs, {"w": 1}):
        for op, n in (("$eq", 1), ("$gt", 1), ("$gte", 2), ("$lt", 6), ("$lte", 7)):
            assert_expr_count(coll, {op: ["$w", value]}, n)


EXPR_IN_DOCS = [
    {"_id": 0, "category": "clothing"}, {"_id": 1, "category": "electronics"}, {"_id": 2, "category": "materials"},
    {"_id": 3}, {"_id": 4, "category": None}, {"_id": 5, "category": {}}, {"_id": 6, "category": []},
    {"_id": 7, "category": [[]]}, {"_id": 8, "category": [None]}, {"_id": 9, "category": [[], [""]]},
    {"_id": 10, "category": ["clothing", "electronics"]}, {"_id": 11, "category": ["materials", "clothing", "electronics"]},
    {"_id": 12, "category": [["clothing"], ["electronics"]]}, {"_id": 13, "category": Regex("clothing")},
    {"_id": 14, "category": Regex("electronics")}, {"_id": 15, "category": [{}]},
    {"_id": 16, "category": [["clothing", "electronics"]]}, {"_id": 17, "category": [[["clothing", "materials", "electronics"]]]},
    {"_id": 18, "category": [[["clothing", "electronics"]]]}, {"_id": 19, "category": [[[None]]]},
    {"_id": 20, "category": "clothings"}, {"_id": 21, "category": 1}, {"_id": 22, "category": 1.0},
    {"_id": 23, "category": Decimal128("1.00000000000000")}, {"_id": 24, "category": Int64(1)},
    {"_id": 25, "category": {"$toDouble": 1}}, {"_id": 26, "category.a": "clothing"}, {"_id": 27, "category": {"a": "clothing"}},
    {"_id": 28, "category": {"b": "clothing"}}, {"_id": 29, "category": [{"a": "clothing"}, {"a": "electronics"}, {}]},
]
EXPR_IN_CASES = [
    ({"$in": ["$category", ["clothing", "materials"]]}, [0, 2]),
    ({"$in": ["$category", [1]]}, [21, 22, 23, 24]),
    ({"$in": ["$category.a", ["clothing", "electronics"]]}, [27]),
    ({"$in": ["$category", [{}]]}, [5]),
    ({"$in": ["$category", [{"a": "clothing"}]]}, [27]),
    ({"$in": ["$category", [{"$toDouble": 1}]]}, [21, 22, 23, 24]),
    ({"$in": ["$category", [{"$literal": {"$toDouble": 1}}]]}, [25]),
    ({"$in": ["$category", ["clothing", "materials", ["clothing", "electronics"]]]}, [0, 2, 10]),
    ({"$in": ["$category", [[]]]}, [6]),
    ({"$in": ["$category.a", [[]]]}, [6, 7, 8, 9, 10, 11, 12, 15, 16, 17, 18, 19]),
    ({"$in": ["$category", [Regex("clothing")]]}, [13]),
    ({"$in": ["$category", [None]]}, [4]),
    ({"$in": [{"$getField": "category.a"}, ["clothing", "electronics"]]}, [26]),
]


@pytest.mark.parametrize("case", range(len(EXPR_IN_CASES)))
def test_expr_in_with_and_without_indexes(db, case):
    """expr_in_index_use.js (results): ``$expr`` ``$in`` over scalars, numbers of every type, dotted
    paths, objects, expressions in the list, arrays, regexes and null, with the indexes
    ``{category: 1}`` and ``{'category.a': 1}`` and without."""
    expr, expected = EXPR_IN_CASES[case]
    for coll in index_variants(db, EXPR_IN_DOCS, {"category": 1}, {"category.a": 1}):
        got = expr_answers(coll, expr)
        assert got == {k: sorted(map(str, expected)) for k in got}, expr


EXPR_AND_OR_CASES = [
    ({"$and": [{"$eq": ["$_id", 3]}]}, [3]), ({"$and": [{"$eq": ["$_id", 3]}, True]}, [3]),
    ({"$and": [{"$eq": ["$a", 3]}]}, [7]), ({"$and": [{"$eq": ["$a", 3]}, True]}, [7]),
    ({"$and": [{"$gte": ["$a", 10]}, True, True]}, []),
    ({"$and": [{"$gte": ["$_id", 5]}, {"$lte": ["$_id", 10]}, True]}, [5, 6, 7, 8, 9, 10]),
    ({"$and": [{"$lt": ["$_id", 5]}, False, True]}, []),
    ({"$or": [{"$eq": ["$_id", 3]}, False]}, [3]), ({"$or": [{"$eq": ["$_id", 3]}, False, False]}, [3]),
    ({"$or": [{"$eq": ["$a", 3]}, False]}, [7]), ({"$or": [{"$eq": ["$a", 3]}, False, False]}, [7]),
    ({"$or": [{"$gte": ["$a", 8]}, {"$lt": ["$a", 3]}, False]}, [1, 2, 5, 6, 10, 11, 12, 13]),
    ({"$or": [{"$lt": ["$_id", 5]}, True]}, list(range(1, 14))),
    ({"$or": [{"$lt": ["$_id", 5]}, False, True]}, list(range(1, 14))),
    ({"$and": [{"$eq": ["$a", 3]}, {"$and": [True]}]}, [7]),
    ({"$and": [{"$eq": ["$a", 5]}, {"$or": [False]}]}, []),
    ({"$or": [{"$lte": ["$a", 3]}, {"$or": [False]}]}, [2, 6, 7, 10]),
    ({"$or": [{"$lte": ["$_id", 3]}, {"$and": [True]}]}, list(range(1, 14))),
    ({"$or": [{"$gt": ["$a", 9]}, {"$and": [True]}, {"$or": [False]}, {"$and": [False]}]}, list(range(1, 14))),
    ({"$and": [{"$gt": ["$a", 9]}, {"$and": [True]}, {"$or": [False]}, {"$and": [False]}]}, []),
    ({"$and": [{"$gt": ["$a", 9]}, {"$and": [True]}, {"$and": [True]}, {"$or": [True]}]}, []),
    ({"$and": [{"$lte": ["$_id", 1]}, {"$and": [{"$gte": ["$_id", 0]}]}]}, [1]),
]


def test_expr_and_or_with_constant_branches(db):
    """expr_and_or_index.js (results): ``$expr`` ``$and`` / ``$or`` mixing comparisons with constant
    true / false branches (nested too), with an index on ``a`` and without. (A missing ``a`` is
    below every number in an aggregation comparison, so ``$lt`` / ``$lte`` also take it.)"""
    for coll in index_variants(db, SORT_DOCS, {"a": 1}):
        for expr, expected in EXPR_AND_OR_CASES:
            assert find_ids(coll, {"$expr": expr}) == expected, expr


def test_expr_beside_a_rooted_or(db):
    """expr_or_pushdown.js: an ``$expr`` ``$and`` beside a top-level ``$or`` over a compound index."""
    docs = [{"_id": 0, "a": "a", "b": "b", "d": "d"}, {"_id": 1, "a": "a", "b": "c", "d": "d"},
            {"_id": 2, "a": "a", "b": "x", "d": "d"}, {"_id": 3, "a": "x", "b": "b", "d": "d"},
            {"_id": 4, "a": "a", "b": "b", "d": "x"}]
    for coll in index_variants(db, docs, {"a": 1, "b": 1}):
        q = {"$expr": {"$and": [{"$eq": ["$d", "d"]}, {"$eq": ["$a", "a"]}]}, "$or": [{"b": "b"}, {"b": "c"}]}
        assert list(coll.find(q).sort("_id", 1)) == docs[:2]


def test_expr_in_after_computed_fields(db):
    """expr_in_split_pushdown.js (SERVER-124974): an ``$expr`` ``$and`` of ``$in``s over computed
    fields, over stored fields, and over one of each, after an ``$addFields``."""
    coll = db.c
    coll.insert_many([{"_id": 0, "a": 1, "b": 10}, {"_id": 1, "a": 2, "b": 20}, {"_id": 2, "a": 3, "b": 30},
                      {"_id": 3, "a": 4, "b": 40}])
    add = {"$addFields": {"newF": {"$add": ["$a", 1]}, "newG": {"$add": ["$b", 1]}}}
    for cond, expected in (([{"$in": ["$newF", [2, 4]]}, {"$in": ["$newG", [11, 31]]}], [0, 2]),
                           ([{"$in": ["$a", [1, 2, 3]]}, {"$in": ["$b", [10, 20]]}], [0, 1]),
                           ([{"$in": ["$a", [1, 3]]}, {"$in": ["$newG", [11, 31]]}], [0, 2])):
        got = coll.aggregate([add, {"$match": {"$expr": {"$and": cond}}}, {"$project": {"_id": 1}}])
        assert sorted(d["_id"] for d in got) == expected


# --------------------------------------------------------------------------------------------------
# in/in2.js, in/in3.js, in/in4.js, in/in_with_collation.js
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("index", [{"a": 1}, {"b": 1}, {"a": 1, "b": 1}], ids=["a", "b", "ab"])
def test_in_on_one_and_two_fields(db, index):
    """in2.js: ``$in`` on one field and on two, with an index on either or both and without."""
    docs = [{"a": a, "b": b} for a, b in ((1, 1), (1, 2), (1, 3), (1, 1), (2, 2), (3, 3), (1, 1), (2, 1), (3, 1))]
    for coll in index_variants(db, docs, index):
        assert count(coll, {"a": {"$in": [1, 2]}}) == 7
        assert count(coll, {"a": {"$in": [1, 2]}, "b": {"$in": [1, 2]}}) == 6


def test_in_arrays_match_themselves(db):
    """in3.js (SERVER-2829): an array in an ``$in`` list matches the array itself, also beside
    ``$ne`` and ``$type``; in4.js (SERVER-2343): ``[]`` in ``$in`` matches an empty array only."""
    for coll in index_variants(db, [{"key": [1]}, {"key": ["1"]}, {"key": [[2]]}], {"key": 1}):
        for query in ({"key": [1]}, {"key": {"$in": [[1]]}}, {"key": {"$in": [[1]], "$ne": [2]}},
                      {"key": {"$in": [["1"]], "$type": 2}}, {"key": ["1"]}, {"key": {"$in": [["1"]]}},
                      {"key": [2]}, {"key": {"$in": [[2]]}}):
            assert count(coll, query) == 1, query
    for docs in ([{"key": []}], [{"key": []}, {"key": [1]}, {"key": ["1"]}, {"key": None}, {}]):
        for coll in index_variants(db, docs, {"key": 1}):
            assert count(coll, {"key": []}) == 1
            assert count(coll, {"key": {"$in": [[]]}}) == 1


def test_in_under_a_case_insensitive_collection_collation(db):
    """in_with_collation.js: ``$in`` of mixed strings and numbers under a case-insensitive collection
    default collation matches the case-changed strings and the equal numbers only."""
    inlist = ["cyD", 8, "BZd", 6, "awD", 2, "Cwa", 9, 3, "bxA", "azB", 4, "Ayc", 1, "cXB", "dYa", 7, "bwC", 5]
    docs = []
    for i in range(len(inlist) - 1, -1, -1):
        value = inlist[i]
        x1 = value if isinstance(value, int) or i % 2 else (value.lower() if i % 4 == 0 else value.upper())
        docs.append({"_id": i * 2, "x": x1})
        x2 = x1 + (10 if i % 2 == 0 else -10) if isinstance(x1, int) else x1[1:] + x1[:1]
        docs.append({"_id": i * 2 + 1, "x": x2})
    db.create_collection("c", collation={"locale": "en_US", "strength": 2})
    db.c.insert_many(docs)
    for coll_indexed in (False, True):
        if coll_indexed:
            db.c.create_index([("x", 1)])
        assert find_ids(db.c, {"x": {"$in": inlist}}) == list(range(0, 37, 2))


# --------------------------------------------------------------------------------------------------
# basic1.js, basic2.js, basic4.js, basic5.js, basic6.js, basic7.js, basic8.js, basica.js, query1.js
# --------------------------------------------------------------------------------------------------

def test_basic_save_find_and_remove(db):
    """basic1.js, basic2.js, basic5.js, basic7.js, basic8.js: a saved document gets an ObjectId
    ``_id`` and is replaced by a save of the same ``_id``; a find by ``_id`` (with a projection), a
    remove by ``_id``; an array round-trips; a find through an index; validate."""
    coll = db.basic
    doc = {"a": 1}
    coll.insert_one(doc)
    assert isinstance(doc["_id"], ObjectId)
    assert coll.find_one()["a"] == 1
    coll.replace_one({"_id": doc["_id"]}, {"a": 2}, upsert=True)
    assert coll.find_one()["a"] == 2 and coll.count_documents({}) == 1
    assert db.command("validate", coll.name)["valid"]
    other = db.basic2
    oid = other.insert_one({"n": 2}).inserted_id
    assert count(other, {}) == 1
    assert find(other, {"_id": oid})[0]["n"] == 2
    assert find(other, {"_id": oid}, projection={"n": 1})[0]["n"] == 2
    other.delete_one({"_id": oid})
    assert count(other, {}) == 0
    arrays = db.basic5
    arrays.insert_one({"a": 1, "b": [1, 2, 3]})
    assert len(arrays.find_one()["b"]) == 3
    indexed = db.basic7
    indexed.insert_one({"a": 1})
    indexed.create_index([("a", 1)])
    assert indexed.find()[0]["a"] == 1
    added = db.basic8
    added.insert_one({"a": 1})
    got = added.find_one()
    got["b"] = 2
    added.replace_one({"_id": got["_id"]}, got)
    assert count(added, {}) == 1 and added.find_one()["b"] == 2


def test_basic_numeric_equality_across_types(db):
    """basic4.js: an int and a double of equal value match each other's equality."""
    coll = db.c
    coll.insert_one({"a": 1, "b": 1.0})
    for query in ({}, {"a": 1}, {"a": 1.0}, {"b": 1}, {"b": 1.0}):
        assert coll.find_one(query) is not None
    assert coll.find_one({"b": 2.0}) is None


def test_basic_subcollection_names(db):
    """basic6.js: a collection named like a subcollection (``basic6.a``) is a collection of its own."""
    assert db.basic6.find_one() is None
    assert db["basic6.a"].find_one() is None
    db["basic6.a"].insert_one({"x": 1})
    assert db.basic6.find_one() is None and db["basic6.a"].find_one()["x"] == 1


def test_basic_nested_array_edits_round_trip(db):
    """basica.js: a document with edited array elements (new fields, changed values) saved back
    reads back identically, field order included."""
    coll = db.c
    for edit in ("many", "one"):
        coll.drop()
        coll.insert_one({"a": 1, "b": [{"x": 2, "y": 2}, {"x": 3, "y": 3}]})
        doc = coll.find_one()
        doc["b"][0]["z"] = 4
        if edit == "many":
            doc["b"][0]["x"] = 4
            doc["b"][0]["m"] = 9
            doc["b"][0]["asd"] = 11
            doc["a"] = 2
            doc["z"] = 11
        coll.replace_one({"_id": doc["_id"]}, doc)
        assert canon(coll.find_one()) == canon(doc)


def test_query_comment_and_iteration(db):
    """query1.js: every document is iterated once; a comment changes no answer of find or count."""
    coll = db.c
    coll.insert_many([{"num": 1}, {"num": 3}, {"num": 4}])
    docs = list(coll.find())
    assert len(docs) == 3 and sum(d["num"] for d in docs) == 8
    for comment in ("this is a test", "yo ho ho"):
        assert len(list(coll.find().comment(comment))) == 3
        assert db.command("count", coll.name, query={}, comment=comment)["n"] == 3


# --------------------------------------------------------------------------------------------------
# date/date1.js, date/date2.js, date/date3.js
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("millis", [1, 0, -10, 1_700_000_000_123], ids=["one", "epoch", "negative", "now"])
def test_date_round_trips(db, millis):
    """date1.js: a date (also the epoch and before it) reads back unchanged."""
    db.c.insert_one({"a": 1, "d": ms(millis)})
    assert db.c.find_one()["d"] == ms(millis)


def test_date_and_timestamp_never_equal(db):
    """date2.js (SERVER-3304): a Timestamp is never equal to a Date and not in a Date's range."""
    for coll in index_variants(db, [{"a": Timestamp(0, 1)}], {"a": 1}):
        assert find(coll, {"a": {"$gt": ms(1)}}) == []
        assert len(find(coll, {"a": Timestamp(0, 1)})) == 1
        assert find(coll, {"a": ms(1)}) == []


def test_dates_before_the_epoch(db):
    """date3.js (SERVER-405): dates before the epoch compare and sort below it."""
    docs = [{"x": 3, "d": ms(0)}, {"x": 2, "d": ms(1000)}, {"x": 1, "d": ms(-1000)}]
    for coll in index_variants(db, docs, {"d": 1}):
        below = find(coll, {"d": {"$lt": ms(0)}})
        assert [(d["x"], d["d"]) for d in below] == [(1, ms(-1000))]
        assert [d["x"] for d in find(coll, {"d": {"$gt": ms(0)}})] == [2]
        assert [d["x"] for d in coll.find().sort("d", 1)] == [1, 3, 2]


# --------------------------------------------------------------------------------------------------
# number/numberint.js, number/numberlong.js, number/numberlong2.js, number/numberlong3.js,
# number/numberlong4.js (the server parts; the rest tests the shell's NumberInt / NumberLong)
# --------------------------------------------------------------------------------------------------

def test_int32_type_round_trips(db):
    """numberint.js: an int32 is stored as type 16 (not double, type 1), stays int32 through a
    read-modify-save, equals a double of the same value."""
    coll = db.c
    coll.insert_one({"a": 42})
    assert count(coll, {"a": {"$type": 16}}) == 1 and count(coll, {"a": {"$type": 1}}) == 0
    doc = coll.find_one({"a": 42})
    coll.insert_one({"a": doc["a"] + 10, "b": "foo"})
    assert count(coll, {"a": {"$type": 16}}) == 2 and count(coll, {"a": {"$type": 1}}) == 0
    assert count(coll, {"a": 52}) == 1
    coll.insert_one({"a": 42.0})
    assert count(coll, {"a": {"$type": 16}}) == 2 and count(coll, {"a": {"$type": 1}}) == 1
    assert count(coll, {"a": 42}) == 2


@pytest.mark.parametrize("value", ["1123539983311657217", "-1123539983311657217", "4503599627370495",
                                   "4503599627370496", "4503599627370497", "9223372036854775807",
                                   "-9223372036854775808"])
def test_int64_precision_through_an_index(db, value):
    """numberlong2.js (SERVER-3717), numberlong.js: a long beyond a double's precision reads back
    exactly, also through its index (hinted, with a projection)."""
    coll = db.c
    coll.create_index([("x", 1)])
    coll.insert_one({"x": Int64(value)})
    assert coll.find().hint([("x", 1)]).next()["x"] == Int64(value)
    got = coll.find({}, {"_id": 0, "x": 1}).hint([("x", 1)]).next()["x"]
    assert type(got) is Int64 and got == int(value)
    assert count(coll, {"x": Int64(value)}) == 1


def test_int64_order_beyond_double_precision(db):
    """numberlong2.js, numberlong3.js (SERVER-3719): longs differing beyond a double's precision sort
    exactly, the same with the index as without; numberlong4.js: a long and its double
    approximation are distinct values in one index."""
    coll = db.c
    coll.create_index([("x", 1)])
    base = "11235399833116571"
    coll.insert_many([{"x": Int64(base + str(i))} for i in range(99, -1, -1)])
    natural = [d["x"] for d in coll.find().sort("x", 1).hint([("$natural", 1)])]
    indexed = [d["x"] for d in coll.find().sort("x", 1).hint([("x", 1)])]
    assert natural == indexed == sorted(int(base + str(i)) for i in range(100))
    coll.drop()
    coll.create_index([("x", 1)])
    n = Int64(base + "7")
    coll.insert_many([{"_id": 0, "x": n}, {"_id": 1, "x": float(n)}, {"_id": 2, "x": Int64(base + "3")}])
    assert find_ids(coll, {"x": n}) == [0]
    assert find_ids(coll, {"x": float(n)}) == [1]
    assert [d["_id"] for d in coll.find().sort([("x", 1), ("_id", 1)]).hint([("x", 1)])] == \
        [d["_id"] for d in coll.find().sort([("x", 1), ("_id", 1)]).hint([("$natural", 1)])]


# --------------------------------------------------------------------------------------------------
# objid/objid1.js, objid/objid2.js, objid/objid3.js, objid/objid5.js (objid4/6/7 test the shell)
# --------------------------------------------------------------------------------------------------

def test_object_ids_and_other_ids(db):
    """objid1.js: an ObjectId field round-trips; objid2.js: a number ``_id`` is kept; objid3.js: the
    ``_id`` comes first even when given last; objid5.js: ``{_id: 5.5}`` is 18 bytes of BSON."""
    coll = db.c
    oid = ObjectId()
    coll.insert_one({"a": oid})
    assert coll.find_one()["a"] == oid
    coll.drop()
    coll.insert_one({"_id": 517, "a": "hello"})
    assert coll.find_one() == {"_id": 517, "a": "hello"}
    coll.drop()
    coll.insert_one({"a": "bob", "_id": 517})
    assert list(coll.find_one()) == ["_id", "a"]
    coll.drop()
    coll.insert_one({"_id": 5.5})
    assert list(coll.aggregate([{"$project": {"size": {"$bsonSize": "$$ROOT"}}}]))[0]["size"] == 18


@pytest.mark.commands("features")
def test_features_command_reports_the_oid_machine(db):
    """objid5.js: ``features`` reports ``oidMachine``; with ``oidReset`` a new one, and the old as
    ``oidMachineOld``."""
    x = db.command("features")
    y = db.command("features", oidReset=1)
    assert x["oidMachine"] and x["oidMachine"] != y["oidMachine"] and y["oidMachineOld"] == x["oidMachine"]


def test_or_cursor_fails_when_its_indexes_are_dropped(db):
    """ord.js: an ``$or`` answered from two indexes, read in batches of 100, fails its next getMore
    with 175 QueryPlanKilled once both indexes are dropped between getMores."""
    coll = db.c
    coll.create_index([("a", 1)])
    coll.create_index([("b", 1)])
    coll.insert_many([{"a": 1} for _ in range(80)] + [{"b": 1} for _ in range(100)] + [{"c": 1} for _ in range(1000)])
    res = db.command("find", coll.name, filter={"$or": [{"a": 1}, {"b": 1}]}, batchSize=100)
    assert len(res["cursor"]["firstBatch"]) == 100
    coll.drop_index([("a", 1)])
    coll.drop_index([("b", 1)])
    with pytest.raises(OperationFailure) as info:
        db.command("getMore", res["cursor"]["id"], collection=coll.name, batchSize=100)
    assert info.value.code == QUERY_PLAN_KILLED
