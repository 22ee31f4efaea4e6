"""MongoDB's $group / accumulator jstests ported to pymongo against a real Tidemark server: the
documents a ``$group`` returns (and their order where the jstest checks it) and the error codes of
malformed group specifications, on ordinary collections, with MongoDB 7.0 as the reference.

Ported from mongodb/mongo (29 files):

- ``jstests/aggregation/accumulators/``: ``first_last.js``, ``first_n_last_n.js``,
  ``min_n_max_n.js``, ``top_bottom_top_n_bottom_n.js``, ``avg_ignore_missing.js``,
  ``avg_null_no_input.js``, ``accumulator_js.js``, ``bucketAuto_push.js`` (with 7.0's groupBy-order
  answer), ``percentiles_syntax.js``, ``percentiles_approx.js`` (scaled to 2,000 samples).
- ``jstests/aggregation/sources/group/``: ``numeric_grouping.js``, ``group_key_is_array.js``,
  ``group_by_variable.js``, ``group_by_system_variable.js``, ``group_by_empty_object.js`` (the
  ``{_id: {}}`` part; ``$expr`` as an expression is 8.0+), ``group_no_dotted_output_field.js``,
  ``groupMissing.js``, ``collation_group.js``, ``firstlast.js``, ``text_score_grouping.js``,
  ``expr_match_no_pushdown_through_group.js``, ``grouped_match_push_down.js`` (results),
  ``distinct_scan_optimization.js`` (its property, with Hypothesis), ``group_large_documents.js``
  and ``top_bottom_common_sort_key_optimization.js`` (results; the optimization is 8.0).
- ``jstests/aggregation/bugs/``: ``server5044.js`` ($stdDevPop/$stdDevSamp), ``server5209.js``
  (numeric grouping), ``server9625.js`` (the expression forms of $sum $avg $min $max $stdDev*; also ``expressions/group_accumulators_as_exprs.js``),
  ``server17224.js`` (scaled down to 17 MB).

Left out: explain shapes, spilling and memory-limit variants, sharding/merging (``group_doing_merge*``),
the 8.0+ accumulators ($concatArrays, $setUnion), the 8.3 empty-field-name check and the 8.3 code
for an empty ``sortBy``. Beyond the jstests, mongod 7.0's parse order for accumulated fields
(``AccumulationStatement::parseAccumulationStatement``) and ``_id`` object keys
(``DocumentSourceGroup::parseIdExpression``) are checked, $sum/$avg over mixed numeric types are
checked against the accumulator unit tests' values, Hypothesis compares random groupings with a
reference model, and the same ``$group`` run on a time-series collection must give the ordinary
collection's answer (Tidemark has a columnar group path there).
"""

from __future__ import annotations

import datetime as dt
import math
from collections import defaultdict

import pytest
from bson import Code, Decimal128, Int64, MaxKey, MinKey, ObjectId
from harness.jstests import aggregate_fails, bag, canon, ts_pair
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("insert", "aggregate", "createIndexes", "create", "drop")

INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1
NAN = float("nan")
INF = float("inf")

# Known differences from MongoDB 7.0, one reason per cause (each used by strict xfails below).


# --------------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------------

def run(coll, pipeline, **kw) -> list:
    """The ``aggregate`` command's whole answer (one batch)."""
    cmd = {"aggregate": coll.name, "pipeline": pipeline, "cursor": {"batchSize": 100000}, **kw}
    return coll.database.command(cmd)["cursor"]["firstBatch"]


def by_id(docs) -> dict:
    return {repr(canon(d["_id"])): d for d in docs}


def group1(coll, **accs) -> dict:
    """The one document of ``{$group: {_id: null, **accs}}``."""
    (doc,) = run(coll, [{"$group": {"_id": None, **accs}}])
    return doc


def same(a, b) -> bool:
    return canon(a) == canon(b)


# --------------------------------------------------------------------------------------------------
# first_last.js, sources/group/firstlast.js
# --------------------------------------------------------------------------------------------------

def _sales_docs():
    docs, first, last, doc_id = [], {}, {}, 0
    for state, sales in (("AZ", 3), ("CA", 2), ("NY", 20)):
        for i in range(min(20, sales)):
            docs.append({"_id": doc_id, "state": state, "sales": i * 10, "stateObj": {"st": state}, "n": 3})
            doc_id += 1
            first.setdefault(state, i * 10)
            last[state] = i * 10
    return docs, first, last


@pytest.mark.parametrize("key", ["$state", "$stateObj"])
@pytest.mark.parametrize("op", ["$first", "$last"])
def test_first_last_by_string_and_object_keys(db, op, key):
    docs, first, last = _sales_docs()
    db.c.insert_many(docs)
    got = run(db.c, [{"$sort": {"_id": 1}}, {"$group": {"_id": key, "sales": {op: "$sales"}}}])
    want = first if op == "$first" else last
    expected = [{"_id": s if key == "$state" else {"st": s}, "sales": v} for s, v in want.items()]
    assert bag(got) == bag(expected)


@pytest.mark.parametrize("op, value", [("$first", 0), ("$last", 190)])
def test_first_last_in_bucket_auto(db, op, value):
    docs, _, _ = _sales_docs()
    db.c.insert_many(docs)
    got = run(db.c, [{"$sort": {"sales": 1}},
                     {"$bucketAuto": {"groupBy": "$state", "buckets": 1, "output": {"sales": {op: "$sales"}}}},
                     {"$project": {"_id": "$_id.min", "sales": 1}}])
    assert got == [{"_id": "AZ", "sales": value}]


@pytest.mark.parametrize("op", ["$first", "$last"])
def test_first_last_with_hinted_index(db, op):
    docs, first, last = _sales_docs()
    db.c.insert_many(docs)
    db.c.create_index([("_id", 1), ("sales", -1)])
    got = run(db.c, [{"$sort": {"_id": 1}}, {"$group": {"_id": "$state", "sales": {op: "$sales"}}},
                     {"$sort": {"_id": 1}}], hint={"_id": 1, "sales": -1})
    want = first if op == "$first" else last
    assert got == [{"_id": s, "sales": want[s]} for s in sorted(want)]


def _first_last(coll, stages=(), expression="$b"):
    pipeline = [{"$sort": {"_id": 1}}, *stages,
                {"$group": {"_id": "$a", "first": {"$first": expression}, "last": {"$last": expression}}}]
    (doc,) = [d for d in run(coll, pipeline) if d["_id"] == 1]
    return doc["first"], doc["last"]


@pytest.mark.parametrize("bs, stages, expected", [
    ([1], [], (1, 1)),
    ([1, 2], [], (1, 2)),
    ([1, 2, 3], [], (1, 3)),
    ([1, 2, 3], [{"$project": {"x": "$a", "y": "$b"}}, {"$project": {"a": "$x", "b": "$y"}}], (1, 3)),
    ([1, 2, 3], [{"$limit": 2}], (1, 2)),
    ([1, 2, 3], [{"$skip": 1}, {"$limit": 2}], (2, 3)),
    ([1, 2, 3], [{"$skip": 1}, {"$limit": 1}], (2, 2)),
    ([1, 2, 3, "foo"], [], (1, "foo")),
    (["bar", True], [], ("bar", True)),
    ([None, 2], [], (None, 2)),
    ([2, None], [], (2, None)),
    ([None, None], [], (None, None)),
], ids=lambda v: repr(v)[:30])
def test_first_last_values(db, bs, stages, expected):
    """firstlast.js: values in _id order, skip/limit and type mixes; null is kept."""
    db.c.insert_many([{"_id": i, "a": 1, "b": b} for i, b in enumerate(bs)])
    assert _first_last(db.c, stages) == expected


def test_first_last_other_groups_and_reordering(db):
    db.c.insert_many([{"_id": 0, "a": 3, "b": 0}, {"_id": 1, "a": 1, "b": 1}, {"_id": 2, "a": 1, "b": 2},
                      {"_id": 3, "a": 1, "b": 3}, {"_id": 4, "a": 2, "b": 0}])
    assert _first_last(db.c) == (1, 3)
    assert _first_last(db.c, [{"$sort": {"b": -1}}]) == (3, 1)


@pytest.mark.parametrize("docs, expected", [
    ([{"a": 1}, {"a": 1, "b": 2}], (None, 2)),
    ([{"a": 1, "b": 2}, {"a": 1}], (2, None)),
    ([{"a": 1}, {"a": 1}], (None, None)),
])
def test_first_last_missing_values_come_out_null(db, docs, expected):
    db.c.insert_many([{"_id": i, **d} for i, d in enumerate(docs)])
    first, last = _first_last(db.c)
    assert (first, last) == expected
    (doc,) = run(db.c, [{"$sort": {"_id": 1}}, {"$group": {"_id": "$a", "f": {"$first": "$b"}, "l": {"$last": "$b"}}}])
    assert "f" in doc and "l" in doc  # present, as null (mongod outputs missing accumulators as null)


def test_first_last_dotted_and_computed(db):
    db.c.insert_many([{"_id": 0, "a": 1, "b": [{"c": 1}, {"c": 2}]}, {"_id": 1, "a": 1, "b": [{"c": 6}, {}]}])
    assert _first_last(db.c, expression="$b.c") == ([1, 2], [6])
    db.c.drop()
    db.c.insert_many([{"_id": 0, "a": 1, "b": 1}, {"_id": 1, "a": 1, "b": 2}])
    assert _first_last(db.c, expression={"$mod": ["$b", 2]}) == (1, 0)
    assert _first_last(db.c, expression={"$mod": [{"$add": ["$b", 1]}, 2]}) == (0, 1)


@pytest.mark.parametrize("pipeline", [
    [{"$group": {"_id": "$notMk", "acc": {"$first": "$mk"}}}],
    [{"$group": {"_id": "$notMk", "acc": {"$last": "$mk"}}}],
    [{"$match": {"notMk": {"$eq": 4}}}, {"$group": {"_id": "$notMk", "acc": {"$last": "$mk"}}}],
])
def test_first_last_keep_arrays_whole_with_multikey_indexes(db, pipeline):
    db.c.insert_one({"mk": [1, 2, 3], "notMk": 4})
    db.c.create_index([("notMk", 1), ("mk", 1)])
    db.c.create_index([("notMk", -1), ("mk", -1)])
    assert run(db.c, pipeline) == [{"_id": 4, "acc": [1, 2, 3]}]


# --------------------------------------------------------------------------------------------------
# first_n_last_n.js, min_n_max_n.js
# --------------------------------------------------------------------------------------------------

def _state_sales(counts):
    return [{"state": s, "sales": i * 100} for s, n in counts for i in range(1, n + 1)]


def test_first_n_last_n(db):
    docs = []
    for i in range(20):
        if i < 2:
            docs.append({"state": "CA", "sales": i * 10})
        if i < 3:
            docs.append({"state": "AZ", "sales": i * 10})
        docs.append({"state": "NY", "sales": i * 10})
    db.c.insert_many(docs)
    first = run(db.c, [{"$sort": {"_id": 1}}, {"$group": {"_id": "$state", "sales": {"$firstN": {"input": "$sales", "n": 3}}}}])
    last = run(db.c, [{"$sort": {"_id": 1}}, {"$group": {"_id": "$state", "sales": {"$lastN": {"input": "$sales", "n": 3}}}}])
    assert bag(first) == bag([{"_id": "AZ", "sales": [0, 10, 20]}, {"_id": "CA", "sales": [0, 10]},
                              {"_id": "NY", "sales": [0, 10, 20]}])
    assert bag(last) == bag([{"_id": "AZ", "sales": [0, 10, 20]}, {"_id": "CA", "sales": [0, 10]},
                             {"_id": "NY", "sales": [170, 180, 190]}])


def _expected_min_max_n(counts, n, largest):
    out = []
    for s, k in counts:
        values = [i * 100 for i in range(1, k + 1)]
        out.append({"_id": s, "sales": sorted(values, reverse=largest)[:n]})
    return out


MIN_MAX_COUNTS = [("CA", 10), ("NY", 7), ("TX", 4), ("WY", 300)]


@pytest.mark.parametrize("op", ["$minN", "$maxN"])
@pytest.mark.parametrize("n, limit", [(4, 4), (Decimal128(str(LONG_MAX)), 10**9), (299, 299)],
                         ids=["4", "largest_long", "big"])
def test_min_n_max_n_in_group_and_bucket_auto(db, op, n, limit):
    db.c.insert_many(_state_sales(MIN_MAX_COUNTS))
    expected = _expected_min_max_n(MIN_MAX_COUNTS, limit, op == "$maxN")
    got = run(db.c, [{"$group": {"_id": "$state", "sales": {op: {"input": "$sales", "n": n}}}}, {"$sort": {"_id": 1}}])
    assert got == expected
    got = run(db.c, [{"$bucketAuto": {"groupBy": "$state", "buckets": 10000, "output": {"sales": {op: {"input": "$sales", "n": n}}}}},
                     {"$project": {"_id": "$_id.min", "sales": 1}}, {"$sort": {"_id": 1}}])
    assert [{"_id": d["_id"], "sales": d["sales"]} for d in got] == expected


GROUP_KEY_N = {"$cond": {"if": {"$eq": ["$st", "CA"]}, "then": 10, "else": 4}}


@pytest.mark.parametrize("acc", [
    {"$minN": {"input": "$sales", "n": GROUP_KEY_N}},
    {"$maxN": {"input": "$sales", "n": GROUP_KEY_N}},
    {"$firstN": {"input": "$sales", "n": GROUP_KEY_N}},
    {"$lastN": {"input": "$sales", "n": GROUP_KEY_N}},
    {"$topN": {"output": "$sales", "n": GROUP_KEY_N, "sortBy": {"sales": 1}}},
    {"$bottomN": {"output": "$sales", "n": GROUP_KEY_N, "sortBy": {"sales": 1}}},
], ids=lambda a: next(iter(a)))
def test_n_computed_from_the_group_key(db, acc):
    """min_n_max_n.js / top_bottom_top_n_bottom_n.js: 'n' may read the group key (CA gets 10)."""
    db.c.insert_many(_state_sales(MIN_MAX_COUNTS))
    got = run(db.c, [{"$group": {"_id": {"st": "$state"}, "r": acc}}])
    assert {d["_id"]["st"]: len(d["r"]) for d in got} == {"CA": 10, "NY": 4, "TX": 4, "WY": 4}


@pytest.mark.parametrize("acc", [
    {"$minN": {"input": "$sales", "n": GROUP_KEY_N}},
    {"$bottomN": {"output": "$sales", "n": GROUP_KEY_N, "sortBy": {"sales": 1}}},
], ids=lambda a: next(iter(a)))
def test_n_from_the_group_key_refused_in_bucket_auto(db, acc):
    db.c.insert_many(_state_sales(MIN_MAX_COUNTS))
    aggregate_fails(db.c, [{"$bucketAuto": {"groupBy": "$state", "buckets": 2, "output": {"r": acc}}}], 4544714)


def test_n_from_let_variables_is_a_constant(db):
    db.c.insert_many(_state_sales([("CA", 5)]))
    got = run(db.c, [{"$group": {"_id": None, "r": {"$minN": {"input": "$sales", "n": "$$k"}}}}], let={"k": 2})
    assert got == [{"_id": None, "r": [100, 200]}]


N_ERRORS = [
    ({"n": "string"}, (5787902,)),
    ({"n": 3.2}, (5787903,)),
    ({"n": -1}, (5787908,)),
    ({"n": 0}, (5787908,)),
    ({"n": Decimal128("9223372036854775808")}, (5787903, 31109)),
]


@pytest.mark.parametrize("op", ["$minN", "$maxN", "$firstN", "$lastN"])
@pytest.mark.parametrize("change, codes", N_ERRORS, ids=lambda v: repr(v)[:30])
def test_n_values_refused(db, op, change, codes):
    db.c.insert_many(_state_sales([("CA", 3)]))
    aggregate_fails(db.c, [{"$group": {"_id": {"st": "$state"}, "r": {op: {"input": "$sales", **change}}}}], *codes)


@pytest.mark.parametrize("op, spec, code", [
    ("$firstN", {"input": "$sales", "n": 2, "randomField": "randomArg"}, 5787901),
    ("$minN", {"input": "$sales", "n": 2, "randomField": "randomArg"}, 5787901),
    ("$firstN", {"input": "$sales"}, 5787906),
    ("$minN", {"input": "$sales"}, 5787906),
    ("$minN", {"n": 2}, 5787907),
    ("$lastN", {"n": 2}, 5787907),
    ("$firstN", [1], 40237),
    ("$firstN", 1, 5787801),
    ("$lastN", "x", 5787801),
    ("$minN", [1], 40237),
    ("$minN", "x", 5787900),
    ("$maxN", 1, 5787900),
])
def test_n_accumulator_specs_refused(db, op, spec, code):
    db.c.insert_many(_state_sales([("CA", 3)]))
    aggregate_fails(db.c, [{"$group": {"_id": {"st": "$state"}, "r": {op: spec}}}], code)


# --------------------------------------------------------------------------------------------------
# top_bottom_top_n_bottom_n.js
# --------------------------------------------------------------------------------------------------

def _associate(i, state):
    return ["Jim", "Pam", "Dwight", "Phyllis"][i % 4] + f" the {i // 4} from {state}"


TOP_COUNTS = [("CA", 10), ("NY", 7), ("TX", 4)]


def _top_docs():
    return [{"state": s, "sales": i * 100, "associate": _associate(i, s)} for s, k in TOP_COUNTS for i in range(1, k + 1)]


def _top_expected(op, direction):
    out = []
    for s, k in TOP_COUNTS:
        low = [_associate(i, s) for i in range(1, min(k, 4) + 1)]
        high = [_associate(i, s) for i in range(k - 3, k + 1)]
        asc = {"$topN": low, "$bottomN": high}[op]
        if direction == -1:
            asc = {"$topN": high[::-1], "$bottomN": low[::-1]}[op]
        out.append({"_id": s, "associates": asc})
    return out


@pytest.mark.parametrize("op", ["$topN", "$bottomN"])
@pytest.mark.parametrize("direction", [1, -1])
def test_top_n_bottom_n_in_group_and_bucket_auto(db, op, direction):
    db.c.insert_many(_top_docs())
    spec = {op: {"output": "$associate", "n": 4, "sortBy": {"sales": direction}}}
    expected = _top_expected(op, direction)
    assert run(db.c, [{"$group": {"_id": "$state", "associates": spec}}, {"$sort": {"_id": 1}}]) == expected
    got = run(db.c, [{"$bucketAuto": {"groupBy": "$state", "buckets": 10000, "output": {"associates": spec}}},
                     {"$project": {"_id": "$_id.min", "associates": 1}}, {"$sort": {"_id": 1}}])
    assert [{"_id": d["_id"], "associates": d["associates"]} for d in got] == expected


def test_several_top_n_bottom_n_in_one_group(db):
    db.c.insert_many(_top_docs())
    fields = {"topAsc": ("$topN", 1), "topDesc": ("$topN", -1), "bottomAsc": ("$bottomN", 1), "bottomDesc": ("$bottomN", -1)}
    specs = {name: {op: {"output": "$associate", "n": 4, "sortBy": {"sales": d}}} for name, (op, d) in fields.items()}
    got = run(db.c, [{"$group": {"_id": "$state", **specs}}, {"$sort": {"_id": 1}}])
    for name, (op, d) in fields.items():
        assert [{"_id": g["_id"], "associates": g[name]} for g in got] == _top_expected(op, d)


def test_top_bottom_missing_output_is_null(db):
    db.c.insert_many(_top_docs())
    (doc,) = run(db.c, [{"$group": {"_id": "", "bottom": {"$bottom": {"output": "$b", "sortBy": {"sales": 1}}},
                                    "top": {"$top": {"output": "$b", "sortBy": {"sales": 1}}}}}])
    assert doc["top"] is None and doc["bottom"] is None and "top" in doc and "bottom" in doc


@pytest.mark.parametrize("n", [4, Decimal128(str(LONG_MAX))], ids=["4", "largest_long"])
def test_top_n_bottom_n_respect_the_sort_order(db, n):
    players = ["Mihai", "Mickey", "Kyle", "Bob", "Joe", "Rebecca", "Jane", "Jill", "Sarah"]
    db.c.insert_many([{"_id": i, "game": f"G{i // 10}", "player": players[i % 9] + str(i // 9),
                       "score": i if i % 3 == 1 else 3 * i} for i in range(100)])
    game = {"player": "$player", "score": "$score"}
    specs = {"bottomAsc": ("$bottomN", 1), "topAsc": ("$topN", 1), "topDesc": ("$topN", -1), "bottomDesc": ("$bottomN", -1)}
    got = run(db.c, [{"$group": {"_id": "$game", **{k: {op: {"output": game, "n": n, "sortBy": {"score": d}}}
                                                    for k, (op, d) in specs.items()}}}])
    assert len(got) == 10
    for doc in got:
        for name, (_, d) in specs.items():
            scores = [x["score"] for x in doc[name]]
            assert scores == sorted(scores, reverse=d == -1) and len(set(scores)) == len(scores)
            assert len(scores) <= (4 if n == 4 else 10)


@pytest.mark.parametrize("change, drop, code", [
    ({"n": "string"}, None, 5787902),
    ({"n": 3.2}, None, 5787903),
    ({"n": -1}, None, 5787908),
    ({"n": Decimal128("9223372036854775808")}, None, 5787903),
    ({}, "n", 5788003),
    ({}, "output", 5788004),
    ({}, "sortBy", 5788005),
    ({"sortBy": {"sales": "coffee"}}, None, 15974),
    ({"sortBy": {"sales": 2}}, None, 15975),
    ({"sortBy": "sales"}, None, 10065),
    ({"edgar": True}, None, 5788002),
], ids=lambda v: repr(v)[:30])
def test_bottom_n_specs_refused(db, change, drop, code):
    db.c.insert_many(_top_docs())
    spec = {"output": "$associate", "n": 2, "sortBy": {"sales": 1}, **change}
    if drop:
        del spec[drop]
    aggregate_fails(db.c, [{"$group": {"_id": {"st": "$state"}, "r": {"$bottomN": spec}}}], code)


def test_single_top_bottom_refuse_n_and_non_objects(db):
    db.c.insert_one({"a": 1})
    aggregate_fails(db.c, [{"$group": {"_id": 1, "r": {"$bottom": {"output": "$a", "n": 2, "sortBy": {"a": 1}}}}}], 5788002)
    aggregate_fails(db.c, [{"$group": {"_id": 1, "r": {"$top": 1}}}], 5788001)
    aggregate_fails(db.c, [{"$group": {"_id": 1, "r": {"$top": [1]}}}], 40237)


def test_bottom_n_on_embedded_fields_and_arrays(db):
    db.c.insert_many([{"a": {"b": i}} for i in (4, 2, 3, 1)])
    (doc,) = run(db.c, [{"$group": {"_id": "", "r": {"$bottomN": {"n": 3, "output": "$a.b", "sortBy": {"a.b": 1}}}}}])
    assert doc["r"] == [2, 3, 4]

    def arr(i):
        return [i, i + 1, i + 2]
    db.c.drop()
    db.c.insert_many([{"a": arr(i)} for i in (4, 2, 3, 1)])
    (doc,) = run(db.c, [{"$group": {"_id": "", "r": {"$bottomN": {"n": 3, "output": "$a", "sortBy": {"a": 1}}}}}])
    assert doc["r"] == [arr(2), arr(3), arr(4)]
    db.c.drop()
    db.c.insert_many([{"a": [arr(i)]} for i in (4, 2, 3, 1)])
    (doc,) = run(db.c, [{"$group": {"_id": "", "r": {"$bottomN": {"n": 3, "output": "$a", "sortBy": {"a": 1}}}}}])
    assert doc["r"] == [[arr(2)], [arr(3)], [arr(4)]]


def test_bottom_n_compound_sort(db):
    full = [{"a": a, "b": b} for a in (1, 2, 3) for b in (1, 2, 3)]
    db.c.insert_many([dict(d) for d in full])
    (doc,) = run(db.c, [{"$group": {"_id": "", "s": {"$bottomN": {"n": 9, "output": {"a": "$a", "b": "$b"}, "sortBy": {"a": 1, "b": 1}}}}}])
    assert doc["s"] == full
    (doc,) = run(db.c, [{"$group": {"_id": "", "s": {"$bottomN": {"n": 9, "output": {"a": "$a", "b": "$b"}, "sortBy": {"a": 1, "b": -1}}}}}])
    assert doc["s"] == [{"a": a, "b": b} for a in (1, 2, 3) for b in (3, 2, 1)]


@pytest.mark.parametrize("op", ["$topN", "$bottomN"])
def test_top_n_bottom_n_sort_by_text_score(db, op):
    db.c.insert_many([{"text": t} for t in ["apples apples pears", "pears pears", "apples apples apples", "apples doughnuts"]])
    db.c.create_index([("text", "text")])
    match = {"$match": {"$text": {"$search": "apples pears"}}}
    by_score = [d["text"] for d in run(db.c, [match, {"$sort": {"text": {"$meta": "textScore"}}}])]
    got = run(db.c, [match, {"$group": {"_id": "", "r": {op: {"n": 4, "output": "$text",
                                                              "sortBy": {"a.text": {"$meta": "textScore"}}}}}}])
    assert len(got) == 1 and got[0]["r"] == by_score


@pytest.mark.parametrize("op", ["$topN", "$bottomN"])
def test_top_n_bottom_n_constant_output(db, op):
    db.c.insert_many([{"a": 1}, {"a": 2}, {"a": 3}])
    assert run(db.c, [{"$group": {"_id": None, "r": {op: {"n": 3, "output": "abc", "sortBy": {"a": 1}}}}}]) == \
        [{"_id": None, "r": ["abc", "abc", "abc"]}]


# --------------------------------------------------------------------------------------------------
# avg_ignore_missing.js, avg_null_no_input.js, $sum/$avg over mixed numeric types
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("values", [[1, 4], [Int64(1), Int64(4)]], ids=["int", "long"])
def test_avg_ignores_missing(db, values):
    db.c.insert_many([{"a": values[0]}, {"a": values[1]}, {"b": 1}])
    assert group1(db.c, avg={"$avg": "$a"})["avg"] == 2.5


def test_avg_of_no_numeric_input_is_null(db):
    db.c.insert_one({"a": 1, "b": 2, "c": "string", "d": None})
    for field in ("$missing", "$c", "$d"):
        assert run(db.c, [{"$group": {"_id": "$a", "avg": {"$avg": field}}}]) == [{"_id": 1, "avg": None}]
    db.c.insert_many([{"a": 1, "d": "string"}, {"a": 1}])
    assert run(db.c, [{"$group": {"_id": "$a", "avg": {"$avg": "$d"}}}]) == [{"_id": 1, "avg": None}]


def test_avg_of_numbers_ignores_the_rest(db):
    pipeline = [{"$group": {"_id": "$a", "avg": {"$avg": "$b"}}}]
    db.c.insert_one({"a": 1, "b": 2})
    assert run(db.c, pipeline) == [{"_id": 1, "avg": 2.0}]
    db.c.insert_one({"a": 1, "b": 4})
    assert run(db.c, pipeline) == [{"_id": 1, "avg": 3.0}]
    db.c.insert_one({"a": 1, "b": -6})
    assert run(db.c, pipeline) == [{"_id": 1, "avg": 0.0}]
    db.c.insert_many([{"a": 1}, {"a": 1, "b": "string"}, {"a": 1, "b": None}])
    assert run(db.c, pipeline) == [{"_id": 1, "avg": 0.0}]


# (inputs, $sum, $avg) from mongod's accumulator unit tests (AccumulatorSum / AccumulatorAvg), types exact
SUM_AVG_CASES = [
    ([], 0, None),
    ([10], 10, 10.0),
    ([Int64(10)], Int64(10), 10.0),
    ([10.0], 10.0, 10.0),
    ([Int64(60000000000)], Int64(60000000000), 60000000000.0),
    ([4, 5], 9, 4.5),
    ([4, Int64(5)], Int64(9), 4.5),
    ([4, 5.5], 9.5, 4.75),
    ([5, 99, 0.2], 104.2, 104.2 / 3),
    ([Int64(5), -6], Int64(-1), -0.5),
    ([INT_MAX, 10], Int64(INT_MAX + 10), (INT_MAX + 10) / 2),
    ([-INT_MAX, -10], Int64(-INT_MAX - 10), (-INT_MAX - 10) / 2),
    ([INT_MAX, INT_MAX], Int64(2 * INT_MAX), float(INT_MAX)),
    ([1, Int64(LONG_MAX)], float(2**63), float(2**62)),
    ([Int64(LONG_MAX), Int64(LONG_MAX)], float(LONG_MAX) * 2, float(LONG_MAX)),
    ([Int64(LONG_MAX), 1.0], LONG_MAX + 1.0, (LONG_MAX + 1.0) / 2),
    ([Int64(LONG_MAX), Int64(1), Int64(-5)], Int64(LONG_MAX - 4), float(LONG_MAX - 4) / 3),
    # integers join the double sum exactly; $avg divides the total as a double
    ([Int64(2**53 + 1), 0.5], 2.0**53 + 2, (2.0**53 + 2) / 2),
    ([Int64(2**53 + 1), 0, 0], Int64(2**53 + 1), float(2**53 + 1) / 3),
    ([1.7976931348623157e308, 1.7976931348623157e308], INF, INF),
    ([4, NAN], NAN, NAN),
    ([INF, -INF], NAN, NAN),
    ([5, None, "x", [1], True], 5, 5.0),
    ([Decimal128("-1234567890.1234567889"), Decimal128("-1234567890.1234567891")],
     Decimal128("-2469135780.2469135780"), Decimal128("-1234567890.1234567890")),
    ([Int64(1234567890123456788), Int64(1234567890123456789), Decimal128("1234567890123456790.037037036703702")],
     Decimal128("3703703670370370367.037037036703702"), Decimal128("1234567890123456789.012345678901234")),
    ([1.0e22, Decimal128("9999999999999999999999.9999999999")],
     Decimal128("19999999999999999999999.9999999999"), Decimal128("9999999999999999999999.99999999995")),
    # a double joins a decimal sum as its exact binary value rounded to 34 digits (mongod's
    # DoubleDoubleSummation::getDecimal), not as its shortest decimal form
    ([Decimal128("0.1"), 0.2], Decimal128("0.3000000000000000111022302462515654"),
     Decimal128("0.1500000000000000055511151231257827")),
    ([Decimal128("1"), Decimal128("NaN")], Decimal128("NaN"), Decimal128("NaN")),
    ([Decimal128("Infinity"), Decimal128("-Infinity")], Decimal128("NaN"), Decimal128("NaN")),
]


@pytest.mark.parametrize("values, total, mean", SUM_AVG_CASES, ids=lambda v: repr(v)[:40])
def test_sum_and_avg_over_mixed_numeric_types(db, values, total, mean):
    db.c.insert_one({"_id": "anchor"})  # one document, so that an empty input still makes a group
    if values:
        db.c.insert_many([{"a": v} for v in values])
    doc = group1(db.c, s={"$sum": "$a"}, m={"$avg": "$a"})
    assert same(doc["s"], total), doc
    assert same(doc["m"], mean), doc


def test_sum_of_a_constant_counts(db):
    db.c.insert_many([{"x": 1}, {"x": 2}, {"x": 3}])
    doc = group1(db.c, n={"$sum": 1}, l={"$sum": Int64(2)}, d={"$sum": 0.5}, z={"$sum": "x"})
    assert same(doc, {"_id": None, "n": 3, "l": Int64(6), "d": 1.5, "z": 0})


# --------------------------------------------------------------------------------------------------
# $min/$max over mixed types, $push/$addToSet, $mergeObjects, $count
# --------------------------------------------------------------------------------------------------

def test_min_max_use_bson_order_and_ignore_null_and_missing(db):
    db.c.insert_many([{"a": 1}, {"a": "x"}, {"a": None}, {}, {"a": [0]}, {"a": {"b": 1}}, {"a": ObjectId("0" * 24)},
                      {"a": True}, {"a": dt.datetime(2020, 1, 1)}])
    doc = group1(db.c, mn={"$min": "$a"}, mx={"$max": "$a"})
    assert doc["mn"] == 1 and doc["mx"] == dt.datetime(2020, 1, 1)
    db.c.insert_many([{"a": MinKey()}, {"a": MaxKey()}])
    doc = group1(db.c, mn={"$min": "$a"}, mx={"$max": "$a"})
    assert doc["mn"] == MinKey() and doc["mx"] == MaxKey()


def test_min_max_of_null_and_missing_only_is_null(db):
    db.c.insert_many([{"a": None}, {}])
    assert group1(db.c, mn={"$min": "$a"}, mx={"$max": "$a"}) == {"_id": None, "mn": None, "mx": None}


def test_min_max_numbers_of_mixed_types_keep_their_type(db):
    db.c.insert_many([{"a": Int64(5)}, {"a": 2.5}, {"a": Decimal128("7")}, {"a": 3}, {"a": NAN}])
    doc = group1(db.c, mn={"$min": "$a"}, mx={"$max": "$a"})
    assert same(doc["mn"], NAN) and same(doc["mx"], Decimal128("7"))  # NaN sorts below every number


def test_min_max_ties_keep_the_first_value(db):
    db.c.insert_many([{"_id": 0, "a": 1.0}, {"_id": 1, "a": 1}, {"_id": 2, "a": Int64(1)}])
    doc = run(db.c, [{"$sort": {"_id": 1}}, {"$group": {"_id": None, "mn": {"$min": "$a"}, "mx": {"$max": "$a"}}}])[0]
    assert same(doc["mn"], 1.0) and same(doc["mx"], 1.0)


def test_push_keeps_order_and_null_but_drops_missing(db):
    db.c.insert_many([{"_id": i, "a": v} for i, v in enumerate([3, None, [1, 2], {"b": 1}])] + [{"_id": 9}])
    doc = run(db.c, [{"$sort": {"_id": 1}}, {"$group": {"_id": None, "p": {"$push": "$a"}}}])[0]
    assert doc["p"] == [3, None, [1, 2], {"b": 1}]


def test_add_to_set_dedups_by_bson_equality(db):
    db.c.insert_many([{"a": 1}, {"a": 1.0}, {"a": Int64(1)}, {"a": Decimal128("1.0")}, {"a": [1]}, {"a": [1.0]},
                      {"a": {"x": 1}}, {"a": {"x": 1.0}}, {"a": None}, {}, {"a": "1"}])
    doc = group1(db.c, s={"$addToSet": "$a"})
    assert len(doc["s"]) == 5  # one number, one array, one object, null, "1"
    kinds = sorted(type(v).__name__ for v in doc["s"])
    assert kinds.count("list") == 1 and kinds.count("dict") == 1 and kinds.count("NoneType") == 1 and kinds.count("str") == 1


def test_merge_objects(db):
    db.c.insert_many([{"_id": 0, "a": {"x": 1, "y": 2}}, {"_id": 1, "a": {"y": 3, "z": {"q": 1}}}, {"_id": 2, "a": None}, {"_id": 3}])
    doc = run(db.c, [{"$sort": {"_id": 1}}, {"$group": {"_id": None, "m": {"$mergeObjects": "$a"}}}])[0]
    assert doc["m"] == {"x": 1, "y": 3, "z": {"q": 1}}


@pytest.mark.parametrize("value, shown, type_name", [(1, "1", "int"), ("s", '"s"', "string"), ([1], "[ 1 ]", "array")])
def test_merge_objects_refuses_non_objects(db, value, shown, type_name):
    db.c.insert_one({"a": value})
    err = aggregate_fails(db.c, [{"$group": {"_id": None, "m": {"$mergeObjects": "$a"}}}], 40400)
    assert err.details["errmsg"] == f"$mergeObjects requires object inputs, but input {shown} is of type {type_name}"


def test_count_accumulator(db):
    db.c.insert_many([{"k": i % 2} for i in range(5)])
    got = run(db.c, [{"$group": {"_id": "$k", "n": {"$count": {}}}}, {"$sort": {"_id": 1}}])
    assert got == [{"_id": 0, "n": 3}, {"_id": 1, "n": 2}]
    for arg in ({"x": 1}, 1):
        aggregate_fails(db.c, [{"$group": {"_id": None, "n": {"$count": arg}}}], 14)
    aggregate_fails(db.c, [{"$group": {"_id": None, "n": {"$count": []}}}], 40237)


# --------------------------------------------------------------------------------------------------
# server5044.js ($stdDevPop / $stdDevSamp)
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("data, pop, samp", [
    ([], None, None),
    ([1], 0, None),
    ([1, 1], 0, 0),
    (["a"], None, None),
    ([1, "a"], 0, None),
    ([1, "a", 1], 0, 0),
    ([1, 2], 0.5, math.sqrt(0.5)),
    ([1, 2, 3], math.sqrt(2 / 3), 1),
    ([4, 7, 13, 16], math.sqrt(22.5), math.sqrt(30)),
    ([1e8 + 4, 1e8 + 7, 1e8 + 13, 1e8 + 16], math.sqrt(22.5), math.sqrt(30)),
    ([1e9 + 4, 1e9 + 7, 1e9 + 13, 1e9 + 16], math.sqrt(22.5), math.sqrt(30)),
    ([1e10 + 4, 1e10 + 7, 1e10 + 13, 1e10 + 16], math.sqrt(22.5), math.sqrt(30)),
    # beyond the double range: mongod's online algorithm (an infinity or NaN gives NaN, an overflowing
    # spread +inf), never an error
    ([INF, 1], NAN, NAN),
    ([INF], NAN, None),
    ([INF, -INF], NAN, NAN),
    ([NAN, 1], NAN, NAN),
    ([1e308, -1], INF, INF),
    ([1e308, 1e308, 1e308], 0, 0),
], ids=lambda v: repr(v)[:30])
def test_std_dev(db, data, pop, samp):
    db.c.insert_one({})
    if data:
        db.c.insert_many([{"num": v} for v in data])
    (doc,) = run(db.c, [{"$group": {"_id": 1, "pop": {"$stdDevPop": "$num"}, "samp": {"$stdDevSamp": "$num"}}}])
    for got, want in ((doc["pop"], pop), (doc["samp"], samp)):
        if want is None:
            assert got is None
        elif math.isnan(want) or math.isinf(want):
            assert same(got, want)
        else:
            assert type(got) is float and got == pytest.approx(want, abs=1e-10)


def test_std_dev_of_decimals_is_a_double(db):
    db.c.insert_many([{"a": Decimal128("1")}, {"a": Decimal128("3")}])
    doc = group1(db.c, p={"$stdDevPop": "$a"}, s={"$stdDevSamp": "$a"})
    assert type(doc["p"]) is float and doc["p"] == 1.0 and doc["s"] == pytest.approx(math.sqrt(2))


# --------------------------------------------------------------------------------------------------
# server9625.js: the expression forms of $sum $avg $min $max $stdDevPop $stdDevSamp
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("op, expected", [
    ({"$avg": [1, 2, 3, 4, 5]}, 3.0), ({"$avg": [[1, 2, 3, 4, 5]]}, 3.0),
    ({"$min": [1, 2, 3, 4, 5]}, 1), ({"$min": [[1, 2, 3, 4, 5]]}, 1),
    ({"$max": [1, 2, 3, 4, 5]}, 5), ({"$max": [[1, 2, 3, 4, 5]]}, 5),
    ({"$sum": [1, 2, 3, 4, 5]}, 15), ({"$sum": [[1, 2, 3, 4, 5]]}, 15),
    ({"$stdDevPop": [1, 3]}, 1.0), ({"$stdDevPop": [[1, 3]]}, 1.0),
    ({"$stdDevSamp": [1, 2, 3]}, 1.0), ({"$stdDevSamp": [[1, 2, 3]]}, 1.0),
    ({"$avg": [1, 2, 3, 4, 5, None]}, 3.0), ({"$min": [1, 2, 3, 4, 5, None]}, 1),
    ({"$max": [1, 2, 3, 4, 5, None]}, 5), ({"$sum": [1, 2, 3, 4, 5, None]}, 15),
    ({"$stdDevPop": [1, 3, None]}, 1.0), ({"$stdDevSamp": [1, 2, 3, None]}, 1.0),
    ({"$avg": [1, 2, 3, 4, 5, NAN]}, NAN), ({"$min": [1, 2, 3, 4, 5, NAN]}, NAN),
    ({"$max": [1, 2, 3, 4, 5, NAN]}, 5), ({"$sum": [1, 2, 3, 4, 5, NAN]}, NAN),
    ({"$stdDevPop": [1, 3, NAN]}, NAN), ({"$stdDevSamp": [1, 2, 3, NAN]}, NAN),
    ({"$sum": [Decimal128("0.1"), 0.2]}, Decimal128("0.3000000000000000111022302462515654")),
], ids=lambda v: repr(v)[:40])
def test_accumulator_expressions_on_constants(db, op, expected):
    db.c.insert_one({})
    (doc,) = run(db.c, [{"$project": {"_id": 0, "result": op}}])
    assert same(doc["result"], expected)


@pytest.mark.parametrize("op, expected", [
    ({"$sum": ["$a", 2, 3, {"$sum": [4, 5]}]}, 15),
    ({"$min": ["$a", 2, 3, {"$min": [4, 5]}]}, 1),
    ({"$max": ["$a", 2, 3, {"$max": [4, 5]}]}, 5),
    ({"$avg": ["$a", 3, {"$avg": [4, 6]}]}, 3.0),
    ({"$stdDevPop": ["$a", {"$stdDevPop": [1, 3]}]}, 0.0),
    ({"$stdDevSamp": ["$a", {"$stdDevSamp": [1, 2, 3]}]}, 0.0),
    ({"$sum": ["$a", 2, 3, {"$sum": [["$a", 4, 5]]}]}, 16),
    ({"$min": ["$b", 2, 3, {"$min": [["$a", 4, 5]]}]}, 1),
    ({"$max": ["$a", 2, 3, {"$max": [["$b", 4, 5]]}]}, 6),
], ids=lambda v: repr(v)[:40])
def test_accumulator_expressions_nested(db, op, expected):
    db.c.insert_one({"a": 1, "b": 6})
    (doc,) = run(db.c, [{"$project": {"_id": 0, "result": op}}])
    assert same(doc["result"], expected)


# --------------------------------------------------------------------------------------------------
# $group parse errors: group_no_dotted_output_field.js and mongod's parse order
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("stage, code", [
    ({"$group": 1}, 15947),
    ({"$group": "x"}, 15947),
    ({"$group": {"x": {"$sum": 1}}}, 15955),
    ({"$group": {"_id": None, "bar.baz": {"$addToSet": "$foo"}}}, 40235),
    ({"$group": {"_id": None, "$x": {"$sum": 1}}}, 40236),
    ({"$group": {"_id": None, "x": 5}}, 40234),
    ({"$group": {"_id": None, "x": {}}}, 40234),
    ({"$group": {"_id": None, "x": {"sum": 1}}}, 40234),
    # the accumulator-object check comes first (parseAccumulationStatement)
    ({"$group": {"_id": None, "bar.baz": 1}}, 40234),
    ({"$group": {"_id": None, "$x": "y"}}, 40234),
    ({"$group": {"_id": None, "x": {"$sum": 1, "$avg": 1}}}, 40238),
    ({"$group": {"_id": None, "x": {"$sum": 1, "y": 1}}}, 40238),
    ({"$group": {"_id": None, "x": {"$foo": 1}}}, 15952),
    ({"$group": {"_id": None, "x": {"$push": [1, 2]}}}, 40237),
    ({"$group": {"_id": None, "x": {"$sum": ["$a", "$b"]}}}, 40237),
    ({"$group": {"_id": None, "x": {"$sum": ["$a"]}}}, 40237),
    ({"$group": {"_id": None, "x": {"$first": []}}}, 40237),
    ({"$group": {"_id": None, "x": {"$topN": [{"n": 1, "output": "$a", "sortBy": {"a": 1}}]}}}, 40237),
    ({"$group": {"_id": None, "x.y": {"$sum": ["$a"]}}}, 40235),
    ({"$group": {"_id": None, "x": {"$sum": [1], "y": 1}}}, 40238),
    ({"$group": {"_id": {"$foo": 1}}}, 168),
    ({"$group": {"_id": "$$nosuch"}}, 17276),
    ({"$group": {"_id": {"a": 1}}}, 17390),
    ({"$group": {"_id": {"a": "$a", "b": True}}}, 17390),
    ({"$group": {"_id": {"a": "$a", "$b": "$b"}}}, 16410),
    # fields are parsed in order, the missing _id reported last (DocumentSourceGroup::createFromBson)
    ({"$group": {"x": {"$foo": 1}}}, 15952),
    ({"$group": {"x": {"$foo": 1}, "_id": {"$bar": 1}}}, 15952),
    ({"$group": {"_id": {"$bar": 1}, "x": {"$foo": 1}}}, 168),
], ids=lambda v: repr(v)[:50])
def test_group_specs_refused(db, stage, code):
    db.c.insert_one({"a": 1})
    err = aggregate_fails(db.c, [stage], code)
    assert err.details.get("codeName")


def test_group_by_inclusion_style_id_refused_with_mongods_message(db):
    db.c.insert_one({"a": 1})
    err = aggregate_fails(db.c, [{"$group": {"_id": {"t": "$a", "c": 1}}}], 17390)
    assert err.details["errmsg"] == "$group does not support inclusion-style expressions"


def test_group_error_messages(db):
    db.c.insert_one({"a": 1})
    cases = [
        ({"_id": None, "bar.baz": {"$addToSet": "$foo"}}, "The field name 'bar.baz' cannot contain '.'"),
        ({"_id": None, "x": 5}, "The field 'x' must be an accumulator object"),
        ({"_id": None, "x": {"$sum": 1, "$avg": 1}}, "The field 'x' must specify one accumulator"),
        ({"_id": None, "x": {"$foo": 1}}, "unknown group operator '$foo'"),
        ({"x": {"$sum": 1}}, "a group specification must include an _id"),
    ]
    for spec, message in cases:
        assert aggregate_fails(db.c, [{"$group": spec}]).details["errmsg"] == message


@pytest.mark.parametrize("variable", ["$$IS_MR", "$$JS_SCOPE"])
def test_group_by_internal_system_variables_fails_cleanly(db, variable):
    """group_by_system_variable.js: the query fails, the server stays up."""
    db.c.insert_one({})
    aggregate_fails(db.c, [{"$group": {"_id": variable}}])
    assert db.command("ping")["ok"] == 1


# --------------------------------------------------------------------------------------------------
# _id expressions: group_by_variable.js, group_key_is_array.js, group_by_empty_object.js,
# groupMissing.js, numeric_grouping.js, server5209.js
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("key, expected", [
    ("$$ROOT", [{"_id": {"_id": 1, "x": 1}}, {"_id": {"_id": 2, "x": 2}}]),
    ("$$CURRENT", [{"_id": {"_id": 1, "x": 1}}, {"_id": {"_id": 2, "x": 2}}]),
    ("$$ROOT.x", [{"_id": 1}, {"_id": 2}]),
    ("$$CURRENT.x", [{"_id": 1}, {"_id": 2}]),
])
def test_group_by_root_and_current(db, key, expected):
    db.c.insert_many([{"_id": 1, "x": 1}, {"_id": 2, "x": 2}])
    assert run(db.c, [{"$group": {"_id": key}}, {"$sort": {"_id": 1}}]) == expected


def test_group_key_array_top_level_and_nested(db):
    db.c.insert_many([{"x": None}, {"y": None}, {"x": None, "y": None}])
    top = run(db.c, [{"$group": {"_id": ["$x", "$y"]}}])
    nested = run(db.c, [{"$group": {"_id": {"z": ["$x", "$y"]}}}])
    assert top == [{"_id": [None, None]}] and [d["_id"]["z"] for d in nested] == [d["_id"] for d in top]


@pytest.mark.parametrize("key", [{}, {"$literal": {}}, {"$const": {}}])
def test_group_by_empty_object(db, key):
    db.c.insert_many([{"_id": 1, "x": 1}, {"_id": 2, "x": 2}])
    assert run(db.c, [{"$group": {"_id": key}}]) == [{"_id": {}}]


@pytest.mark.parametrize("indexed", [False, True])
def test_group_null_and_missing(db, indexed):
    """groupMissing.js: null and missing are one group for a single key expression, a lone field of an
    _id object included; with several fields a missing one is left out of the key."""
    db.c.insert_many([{"a": None}, {}])
    if indexed:
        db.c.create_index([("a", 1)])
    assert run(db.c, [{"$group": {"_id": "$a"}}]) == [{"_id": None}]
    assert run(db.c, [{"$sort": {"a": 1}}, {"$group": {"_id": "$a"}}]) == [{"_id": None}]
    assert run(db.c, [{"$group": {"_id": {"a": "$a"}}}]) == [{"_id": {"a": None}}]
    db.c.drop()
    db.c.insert_many([{"a": None, "b": 1}, {"b": 1}, {"a": None, "b": 1}])
    if indexed:
        db.c.create_index([("a", 1), ("b", 1)])
    expected = bag([{"_id": {"b": 1}}, {"_id": {"a": None, "b": 1}}])
    assert bag(run(db.c, [{"$group": {"_id": {"a": "$a", "b": "$b"}}}])) == expected
    if not indexed:  # (with the index mongod 7.0 answers from a covered plan: SERVER-23229)
        assert bag(run(db.c, [{"$sort": {"a": 1, "b": 1}}, {"$group": {"_id": {"a": "$a", "b": "$b"}}}])) == expected


def test_numbers_of_equal_value_share_a_group(db):
    db.c.insert_many([{"key": 24, "value": 17}, {"key": Int64(24), "value": 8}, {"key": 24.0, "value": 5},
                      {"key": 42, "value": 11}, {"key": Int64(42), "value": 13}, {"key": 42.0, "value": 6},
                      {"key": Decimal128("42.00"), "value": 0}])
    got = run(db.c, [{"$group": {"_id": "$key", "s": {"$sum": "$value"}}}])
    assert len(got) == 2 and [d["s"] for d in got] == [30, 30]


def test_group_key_types_stay_apart(db):
    db.c.insert_many([{"k": 1}, {"k": True}, {"k": "1"}, {"k": [1]}, {"k": {"a": 1}}, {"k": {"a": 1.0}},
                      {"k": None}, {}, {"k": NAN}, {"k": Decimal128("NaN")}])
    got = run(db.c, [{"$group": {"_id": "$k", "n": {"$sum": 1}}}])
    counts = sorted((type(d["_id"]).__name__, d["n"]) for d in got)
    assert counts == sorted([("int", 1), ("bool", 1), ("str", 1), ("list", 1), ("dict", 2), ("NoneType", 2),
                             ("float", 2)])


def test_group_by_text_score(db):
    """text_score_grouping.js: two distinct scores, two groups."""
    db.c.insert_many([{"_id": 1, "title": "cakes"}, {"_id": 2, "title": "cookies and cakes"}])
    db.c.create_index([("title", "text")])
    match = {"$match": {"$text": {"$search": "cake cookies"}}}
    assert len(run(db.c, [match, {"$group": {"_id": {"$meta": "textScore"}, "count": {"$sum": 1}}}])) == 2
    assert len(run(db.c, [match, {"$group": {"_id": {"$meta": "textScore"}, "firstId": {"$first": "$_id"}}}])) == 2


def test_match_on_group_output_is_not_pushed_down(db):
    """expr_match_no_pushdown_through_group.js."""
    db.c.insert_many([{"_id": 1, "k": "a", "amount": 60}, {"_id": 2, "k": "a", "amount": 70},
                      {"_id": 3, "k": "b", "amount": 40}, {"_id": 4, "k": "b", "amount": 50},
                      {"_id": 5, "k": "c", "amount": 200}, {"_id": 6, "k": "d", "amount": 10}])
    got = run(db.c, [{"$group": {"_id": "$k", "total": {"$sum": "$amount"}}}, {"$match": {"$expr": {"$gt": ["$total", 100]}}}])
    assert bag(got) == bag([{"_id": "a", "total": 130}, {"_id": "c", "total": 200}])
    db.c.drop()
    db.c.insert_many([{"_id": 1, "a": None}, {"_id": 2}])
    got = run(db.c, [{"$group": {"_id": "$a", "n": {"$count": {}}}}, {"$match": {"$expr": {"$eq": ["$_id", None]}}}])
    assert got == [{"_id": None, "n": 2}]
    db.c.drop()
    db.c.insert_many([{"_id": 1, "a": 5}, {"_id": 2, "a": Int64(5)}])
    got = run(db.c, [{"$group": {"_id": "$a", "n": {"$count": {}}}}, {"$match": {"$expr": {"$eq": ["int", {"$type": "$_id"}]}}}])
    assert got == [{"_id": 5, "n": 2}]
    db.c.drop()
    db.c.insert_many([{"_id": 1, "k": "a", "g": 1, "amount": 80}, {"_id": 2, "k": "a", "g": 1, "amount": 50},
                      {"_id": 3, "k": "b", "g": 1, "amount": 200}, {"_id": 4, "k": "a", "g": 2, "amount": 25}])
    got = run(db.c, [{"$group": {"_id": {"k": "$k", "g": "$g"}, "total": {"$sum": "$amount"}}},
                     {"$match": {"$expr": {"$and": [{"$gt": ["$total", 100]}, {"$eq": ["$_id.k", "a"]}]}}}])
    assert got == [{"_id": {"k": "a", "g": 1}, "total": 130}]


# --------------------------------------------------------------------------------------------------
# collation_group.js
# --------------------------------------------------------------------------------------------------

CASE_INSENSITIVE = {"locale": "en_US", "strength": 2}
DIACRITIC_INSENSITIVE = {"locale": "en_US", "strength": 1, "caseLevel": True}
CASE_AND_DIACRITIC_INSENSITIVE = {"locale": "en_US", "strength": 1}


def test_group_respects_the_collation(db):
    db.create_collection("c", collation=CASE_INSENSITIVE)
    db.c.insert_many([{"_id": 0, "str": "A", "str2": "á"}, {"_id": 1, "str": "a", "str2": "a"},
                      {"_id": 2, "str": "B", "str2": "é"}, {"_id": 3, "str": "b", "str2": "e"}])
    assert len(run(db.c, [{"$group": {"_id": "$str"}}])) == 2
    assert len(run(db.c, [{"$group": {"_id": "$str2"}}], collation=DIACRITIC_INSENSITIVE)) == 2
    assert len(run(db.c, [{"$sortByCount": "$str"}])) == 2
    assert len(run(db.c, [{"$sortByCount": "$str2"}])) == 4
    assert len(run(db.c, [{"$sortByCount": "$str"}], collation=DIACRITIC_INSENSITIVE)) == 4
    assert len(run(db.c, [{"$sortByCount": "$str2"}], collation=DIACRITIC_INSENSITIVE)) == 2
    (facet,) = run(db.c, [{"$facet": {"s": [{"$group": {"_id": "$str"}}], "s2": [{"$group": {"_id": "$str2"}}]}}])
    assert len(facet["s"]) == 2 and len(facet["s2"]) == 4
    assert len(run(db.c, [{"$group": {"_id": None, "set": {"$addToSet": "$str"}}}])[0]["set"]) == 2
    assert len(run(db.c, [{"$group": {"_id": None, "set": {"$addToSet": "$str2"}}}],
                   collation=DIACRITIC_INSENSITIVE)[0]["set"]) == 2
    got = run(db.c, [{"$match": {"_id": 0}}, {"$group": {"_id": None, "eq": {"$push": {"$eq": ["$str", "$str2"]}}}}],
              collation=CASE_AND_DIACRITIC_INSENSITIVE)
    assert got == [{"_id": None, "eq": [True]}]


def test_min_max_respect_the_collation(db):
    db.create_collection("c", collation={"locale": "en_US", "numericOrdering": True})
    db.c.insert_many([{"num": "100"}, {"num": "2"}])
    assert group1(db.c, mn={"$min": "$num"}, mx={"$max": "$num"}) == {"_id": None, "mn": "2", "mx": "100"}


# --------------------------------------------------------------------------------------------------
# bucketAuto_push.js, percentiles_syntax.js
# --------------------------------------------------------------------------------------------------

def test_bucket_auto_push_sees_documents_in_group_by_order(db):
    """bucketAuto_push.js, with MongoDB 7.0's answer: 7.0 sorts the documents by 'groupBy' and feeds
    each bucket's accumulators in that order (the jstest's incoming-order expectation is a later fix)."""
    db.c.insert_many([{"_id": i, "n": 9 - i} for i in range(10)])
    got = run(db.c, [{"$sort": {"_id": 1}}, {"$bucketAuto": {"groupBy": "$n", "buckets": 1, "output": {"docs": {"$push": "$$ROOT"}}}}])
    assert got == [{"_id": {"min": 0, "max": 9}, "docs": [{"_id": 9 - n, "n": n} for n in range(10)]}]
    got = run(db.c, [{"$sort": {"_id": 1}}, {"$bucketAuto": {"groupBy": "$n", "buckets": 2, "output": {"docs": {"$push": "$$ROOT"}}}}])
    assert got == [{"_id": {"min": 0, "max": 5}, "docs": [{"_id": 9 - n, "n": n} for n in range(5)]},
                   {"_id": {"min": 5, "max": 9}, "docs": [{"_id": 9 - n, "n": n} for n in range(5, 10)]}]


@pytest.mark.parametrize("spec, let", [
    ({"$percentile": 0.5}, None),
    ({"$percentile": {"input": "$x", "method": "approximate"}}, None),
    ({"$percentile": {"p": [0.5], "method": "approximate"}}, None),
    ({"$percentile": {"p": [0.5], "input": "$x"}}, None),
    ({"$percentile": {"p": [0.5], "input": "$x", "method": "approximate", "extras": 42}}, None),
    ({"$percentile": {"p": 0.5, "input": "$x", "method": "approximate"}}, None),
    ({"$percentile": {"p": [], "input": "$x", "method": "approximate"}}, None),
    ({"$percentile": {"p": [0.5, "foo"], "input": "$x", "method": "approximate"}}, None),
    ({"$percentile": {"p": [0.5, 10], "input": "$x", "method": "approximate"}}, None),
    ({"$percentile": {"p": [NAN], "input": "$x", "method": "approximate"}}, None),
    ({"$percentile": {"p": [INF], "input": "$x", "method": "approximate"}}, None),
    ({"$percentile": {"p": [-INF], "input": "$x", "method": "approximate"}}, None),
    ({"$percentile": {"p": ["$x"], "input": "$x", "method": "approximate"}}, None),
    ({"$percentile": {"p": {"$add": [0.1, 0.5]}, "input": "$x", "method": "approximate"}}, None),
    ({"$percentile": {"p": {"$concatArrays": [[0.01, 0.1], ["foo"]]}, "input": "$x", "method": "approximate"}}, None),
    ({"$percentile": {"p": "$$pvals", "input": "$x", "method": "approximate"}}, {"pvals": 0.5}),
    ({"$percentile": {"p": "$$pvals", "input": "$x", "method": "approximate"}}, {"pvals": [0.5, "foo"]}),
    ({"$percentile": {"p": [0.5, 0.7], "input": "$x", "method": 42}}, None),
    ({"$percentile": {"p": [0.5, 0.7], "input": "$x", "method": "fancy"}}, None),
    ({"$percentile": {"p": [0.5, 0.7], "input": "$x", "method": "discrete"}}, None),
    ({"$percentile": {"p": [0.5, 0.7], "input": "$x", "method": "continuous"}}, None),
    ({"$median": {"p": [0.5], "input": "$x", "method": "approximate"}}, None),
    ({"$median": {"method": "approximate"}}, None),
    ({"$median": {"input": "$x"}}, None),
    ({"$median": {"input": "$x", "method": "approximate", "extras": 42}}, None),
    ({"$median": {"input": "$x", "method": "fancy"}}, None),
    ({"$median": {"input": "$x", "method": "discrete"}}, None),
], ids=lambda v: repr(v)[:60])
def test_percentile_syntax_refused(db, spec, let):
    db.c.insert_one({"x": 42})
    err = aggregate_fails(db.c, [{"$group": {"_id": None, "p": spec}}], **({"let": let} if let else {}))
    assert err.code not in (1, 8000) and err.details.get("codeName") not in (None, "InternalError")


@pytest.mark.parametrize("spec, let", [
    ({"$percentile": {"p": [0.0, 0.0001, 0.5, 0.995, 1.0], "input": "$x", "method": "approximate"}}, None),
    ({"$percentile": {"p": [0.5, 0.9], "input": {"$divide": ["$x", 2]}, "method": "approximate"}}, None),
    ({"$percentile": {"p": [0.5, 0.9], "input": "x", "method": "approximate"}}, None),
    ({"$percentile": {"p": [0.5, 0.9], "input": {"$concatArrays": [[2], ["$x"]]}, "method": "approximate"}}, None),
    ({"$percentile": {"p": {"$concatArrays": [[0.01, 0.1], [0.9, 0.99]]}, "input": "$x", "method": "approximate"}}, None),
    ({"$percentile": {"p": [{"$add": [0.1, 0.5]}], "input": "$x", "method": "approximate"}}, None),
    ({"$percentile": {"p": "$$pvals", "input": "$x", "method": "approximate"}}, {"pvals": [0.5, 0.9]}),
    ({"$percentile": {"p": ["$$p1", "$$p2"], "input": "$x", "method": "approximate"}}, {"p1": 0.5, "p2": 0.9}),
    ({"$median": {"input": "$x", "method": "approximate"}}, None),
], ids=lambda v: repr(v)[:60])
def test_percentile_syntax_accepted(db, spec, let):
    db.c.insert_one({"x": 42})
    (doc,) = run(db.c, [{"$group": {"_id": None, "p": spec}}], **({"let": let} if let else {}))
    assert "p" in doc


# --------------------------------------------------------------------------------------------------
# Hypothesis: random groupings against a reference model of the accumulators
# --------------------------------------------------------------------------------------------------

MISSING = object()
_key = st.sampled_from(["a", "b", 1, 1.0, Int64(1), None, MISSING, 2])
# integers, and doubles with a fractional part (so no tie mixes an int and a double), strings, null
_value = st.one_of(st.integers(-1000, 1000), st.integers(-4000, 4000).map(lambda i: i / 4 + 0.125),
                   st.sampled_from(["x", "y", None, MISSING]))
_rows = st.lists(st.tuples(_key, _value), max_size=30)


def _docs(rows) -> list:
    docs = []
    for i, (k, v) in enumerate(rows):
        doc: dict = {"_id": i}
        if k is not MISSING:
            doc["k"] = k
        if v is not MISSING:
            doc["v"] = v
        docs.append(doc)
    return docs


def _group_of(k):
    return None if k is MISSING or k is None else (int(k) if not isinstance(k, str) else k)


def _bson_order(v):
    return (0, v) if isinstance(v, (int, float)) else (1, v)


def _model(rows) -> list:
    """What mongod's $group gives for the accumulators of ``_PIPELINE`` (rows in _id order)."""
    groups: dict = {}
    for k, v in rows:
        g = groups.setdefault(_group_of(k), {"_id": None if k is MISSING else k, "vals": []})
        g["vals"].append(v)
    out = []
    for g in groups.values():
        vals = g["vals"]
        nums = [v for v in vals if isinstance(v, (int, float))]
        present = [v for v in vals if v is not MISSING and v is not None]
        total = sum(nums)
        total = float(total) if any(isinstance(v, float) for v in nums) else total
        mn = mx = None
        for v in present:  # ties keep the first value met
            if mn is None or _bson_order(v) < _bson_order(mn):
                mn = v
            if mx is None or _bson_order(v) > _bson_order(mx):
                mx = v
        set_keys = {}
        for v in vals:
            if v is not MISSING:
                set_keys.setdefault(repr(canon(v)), v)
        out.append({
            "_id": g["_id"], "sum": total, "avg": (sum(nums) / len(nums)) if nums else None, "min": mn, "max": mx,
            "first": None if vals[0] is MISSING else vals[0], "last": None if vals[-1] is MISSING else vals[-1],
            "push": [v for v in vals if v is not MISSING], "set": sorted(set_keys), "count": len(vals),
        })
    return out


_PIPELINE = [{"$sort": {"_id": 1}}, {"$group": {
    "_id": "$k", "sum": {"$sum": "$v"}, "avg": {"$avg": "$v"}, "min": {"$min": "$v"}, "max": {"$max": "$v"},
    "first": {"$first": "$v"}, "last": {"$last": "$v"}, "push": {"$push": "$v"}, "set": {"$addToSet": "$v"},
    "count": {"$count": {}}}}]


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(rows=_rows)
def test_group_accumulators_match_a_reference_model(db, rows):
    """The invariants the jstests above state one case at a time (null and missing one group, numbers
    of equal value one group whatever their type, the first _id seen reported, $sum/$avg ignoring
    non-numbers, $min/$max in BSON order ignoring null, $first/$last/$push in input order, $addToSet
    by BSON equality), over random documents."""
    db.c.drop()
    if rows:
        db.c.insert_many(_docs(rows))
    got = run(db.c, _PIPELINE)
    for doc in got:
        doc["set"] = sorted(repr(canon(v)) for v in doc["set"])
    assert bag(got) == bag(_model(rows))


_distinct = st.lists(st.integers(-500, 500), unique=True, max_size=25)


@settings(max_examples=50, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(values=_distinct, keys=st.lists(st.sampled_from("ab"), min_size=25, max_size=25), n=st.integers(1, 6))
def test_n_accumulators_match_a_reference_model(db, values, keys, n):
    """$topN/$bottomN (sorted output), $minN/$maxN (ascending / descending), $firstN/$lastN (input
    order) over distinct values, per group."""
    db.c.drop()
    docs = [{"_id": i, "k": keys[i], "v": v} for i, v in enumerate(values)]
    if docs:
        db.c.insert_many(docs)
    accs = {
        "top": {"$topN": {"n": n, "output": "$v", "sortBy": {"v": 1}}},
        "topDesc": {"$topN": {"n": n, "output": "$v", "sortBy": {"v": -1}}},
        "bottom": {"$bottomN": {"n": n, "output": "$v", "sortBy": {"v": 1}}},
        "min": {"$minN": {"n": n, "input": "$v"}}, "max": {"$maxN": {"n": n, "input": "$v"}},
        "first": {"$firstN": {"n": n, "input": "$v"}}, "last": {"$lastN": {"n": n, "input": "$v"}},
        "top1": {"$top": {"output": "$v", "sortBy": {"v": 1}}}, "bottom1": {"$bottom": {"output": "$v", "sortBy": {"v": 1}}},
    }
    got = {d["_id"]: d for d in run(db.c, [{"$sort": {"_id": 1}}, {"$group": {"_id": "$k", **accs}}])}
    per_key = defaultdict(list)
    for d in docs:
        per_key[d["k"]].append(d["v"])
    assert set(got) == set(per_key)
    for k, vs in per_key.items():
        asc = sorted(vs)
        want = {"top": asc[:n], "topDesc": asc[::-1][:n], "bottom": asc[-n:], "min": asc[:n], "max": asc[::-1][:n],
                "first": vs[:n], "last": vs[-n:], "top1": asc[0], "bottom1": asc[-1]}
        assert {name: got[k][name] for name in want} == want


# --------------------------------------------------------------------------------------------------
# The same $group on a time-series collection (the columnar group path of server/timeseries/)
# --------------------------------------------------------------------------------------------------

def _ts_pair(db, docs):
    plain, ts = ts_pair(db, docs, "t", "m")
    return ts, plain


def _ts_docs():
    t0 = dt.datetime(2024, 1, 1)
    values = [1, 2.5, Int64(7), None, "x", Decimal128("0.1"), 0.2, INT_MAX, [1, 2], {"o": 1}]
    return [{"_id": i, "t": t0 + dt.timedelta(seconds=i), "m": {"st": ["CA", "NY", "TX"][i % 3]}, "k": i % 4,
             "a": values[i % len(values)], "b": i, "c": (i * 37) % 11,
             "big": Int64(2**53 + 1 + 2 * i), "mix": [Int64(2**53 + 1), 0.5, Decimal128("0.1"), 0.2][i % 4] if i % 7 else 0.1}
            for i in range(60)]


TS_ACCUMULATORS = [
    {"$sum": "$a"}, {"$avg": "$a"}, {"$sum": "$b"}, {"$avg": "$c"}, {"$min": "$a"}, {"$max": "$a"},
    {"$first": "$a"}, {"$last": "$a"}, {"$push": "$b"}, {"$addToSet": "$c"}, {"$stdDevPop": "$b"},
    {"$stdDevSamp": "$c"}, {"$count": {}}, {"$sum": 1}, {"$mergeObjects": "$m"},
    {"$topN": {"n": 3, "output": "$b", "sortBy": {"c": -1, "b": 1}}}, {"$bottom": {"output": "$a", "sortBy": {"b": 1}}},
    {"$firstN": {"n": 2, "input": "$a"}}, {"$lastN": {"n": 2, "input": "$a"}},
    {"$minN": {"n": 3, "input": "$c"}}, {"$maxN": {"n": 3, "input": "$a"}},
    {"$avg": "$big"}, {"$sum": "$big"}, {"$sum": "$mix"}, {"$avg": "$mix"},
]


@pytest.mark.parametrize("key", ["$m.st", "$k", {"st": "$m.st", "k": "$k"}, None, "$nosuch", {"z": "$nosuch"}],
                         ids=lambda k: repr(k))
@pytest.mark.parametrize("acc", TS_ACCUMULATORS, ids=lambda a: repr(a)[:40])
def test_time_series_group_gives_the_collection_answer(db, acc, key):
    ts, plain = _ts_pair(db, _ts_docs())
    pipeline = [{"$sort": {"t": 1}}, {"$group": {"_id": key, "r": acc}}]
    want = run(plain, pipeline)
    assert want and bag(run(ts, pipeline)) == bag(want)


@pytest.mark.parametrize("acc", [
    {"$minN": {"input": "$b", "n": {"$cond": [{"$eq": ["$st", "CA"]}, 5, 2]}}},
    {"$topN": {"output": "$b", "n": {"$cond": [{"$eq": ["$st", "CA"]}, 5, 2]}, "sortBy": {"b": 1}}},
    {"$lastN": {"input": "$b", "n": {"$cond": [{"$eq": ["$st", "CA"]}, 5, 2]}}},
], ids=lambda a: next(iter(a)))
def test_time_series_group_key_n(db, acc):
    ts, plain = _ts_pair(db, _ts_docs())
    pipeline = [{"$sort": {"t": 1}}, {"$group": {"_id": {"st": "$m.st"}, "r": acc}}]
    want = run(plain, pipeline)
    assert sorted(len(d["r"]) for d in want) == [2, 2, 5]
    assert bag(run(ts, pipeline)) == bag(want)


@pytest.mark.parametrize("pipeline", [
    [{"$group": {"_id": {"a": "$nosuch"}, "n": {"$sum": 1}}}],
    [{"$group": {"_id": {"a": "$m.st", "b": "$nosuch"}, "n": {"$sum": 1}}}],
    [{"$group": {"_id": "$m", "s": {"$sum": {"$multiply": ["$b", 0.5]}}, "d": {"$sum": "$a"}}}],
    [{"$match": {"b": {"$gte": 10}}}, {"$group": {"_id": "$k", "avg": {"$avg": "$b"}, "mx": {"$max": "$t"}}}],
    [{"$group": {"_id": {"$dateTrunc": {"date": "$t", "unit": "second", "binSize": 10}}, "n": {"$count": {}},
                 "s": {"$sum": "$b"}}}],
], ids=lambda p: repr(p)[:60])
def test_time_series_group_shapes_give_the_collection_answer(db, pipeline):
    ts, plain = _ts_pair(db, _ts_docs())
    want = run(plain, pipeline)
    assert want and bag(run(ts, pipeline)) == bag(want)


# --------------------------------------------------------------------------------------------------
# accumulator_js.js ($accumulator)
# --------------------------------------------------------------------------------------------------

_WORD_COUNT = {"init": Code("function() { return 0; }"), "accumulateArgs": ["$val"],
               "accumulate": Code("function(state, val) { return state + val; }"),
               "merge": Code("function(state1, state2) { return state1 + state2; }"),
               "finalize": Code("function(state) { return state; }")}
# (JavaScript numbers come back as doubles, as in mongod)
_WORDS = [{"_id": "hello", "wordCount": 2.0}, {"_id": "world", "wordCount": 2.0}, {"_id": "hi", "wordCount": 1.0}]


@pytest.mark.parametrize("variant", ["code", "strings", "no_finalize"])
def test_js_accumulator_counts_words(db, variant):
    db.c.insert_many([{"word": w, "val": 1} for w in ["hello", "world", "world", "hello", "hi"]])
    spec = dict(_WORD_COUNT)
    if variant == "strings":
        spec = {k: str(v) if isinstance(v, Code) else v for k, v in spec.items()}
    if variant == "no_finalize":
        del spec["finalize"]
    assert bag(run(db.c, [{"$group": {"_id": "$word", "wordCount": {"$accumulator": spec}}}])) == bag(_WORDS)
    db.c.insert_one({"word": None, "val": 1})  # a null word is a group of its own
    got = run(db.c, [{"$group": {"_id": "$word", "wordCount": {"$accumulator": spec}}}])
    assert bag(got) == bag([*_WORDS, {"_id": None, "wordCount": 1.0}])


def test_js_accumulator_finalize_and_missing_arguments(db):
    db.c.insert_many([{"word": w} for w in ["hello", "world", "world", "hello", "hi"]])
    spec = {"init": Code("function() { return {count: 0, sum: 0}; }"), "accumulateArgs": [{"$strLenCP": "$word"}],
            "accumulate": Code("function({count, sum}, wordLen) { return {count: count + 1, sum: sum + wordLen}; }"),
            "merge": Code("function(s1, s2) { return {count: s1.count + s2.count, sum: s1.sum + s2.sum}; }"),
            "finalize": Code("function({count, sum}) { return sum / count; }"), "lang": "js"}
    assert run(db.c, [{"$group": {"_id": 1, "avgWordLen": {"$accumulator": spec}}}]) == [{"_id": 1, "avgWordLen": 22 / 5}]
    db.c.drop()
    db.c.insert_one({"sentinel": 1})
    spec = {"init": Code("function() { return []; }"), "accumulateArgs": ["$no_such_field"],
            "accumulate": Code("function(state, value) { return state.concat([value]); }"),
            "merge": Code("function(s1, s2) { return s1.concat(s2); }"), "lang": "js"}
    assert run(db.c, [{"$group": {"_id": 1, "value": {"$accumulator": spec}}}]) == [{"_id": 1, "value": [None]}]


# --------------------------------------------------------------------------------------------------
# group_large_documents.js, server17224.js (scaled down: 18 MB instead of 64-70 MB)
# --------------------------------------------------------------------------------------------------

def test_group_may_build_documents_over_16mb_that_are_not_returned(db):
    big = "x" * (9 * 1024 * 1024)
    for _ in range(2):
        db.c.insert_one({"key": 1, "largeField": big})
    pipeline = [{"$group": {"_id": "$key", "out": {"$push": "$largeField"}}}, {"$project": {"_id": 0, "a": {"$add": [1, "$_id"]}}}]
    assert run(db.c, pipeline) == [{"a": 2}]


def test_group_result_over_16mb_fails_and_the_server_stays_up(db):
    one_mb = "a" * (1024 * 1024)
    for _ in range(17):
        db.c.insert_one({"a": one_mb})
    err = aggregate_fails(db.c, [{"$match": {}}, {"$group": {"_id": None, "arr": {"$push": {"a": "$a"}}}}])
    assert err.code not in (1, 8000) and err.details.get("codeName") not in (None, "InternalError")
    assert db.command("ping")["ok"] == 1


# --------------------------------------------------------------------------------------------------
# grouped_match_push_down.js, distinct_scan_optimization.js (results only)
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("pipeline, expected", [
    ([{"$group": {"_id": {"c": "$d"}, "c": {"$sum": {"$const": 1}}}}, {"$project": {"m": "$_id.c"}},
      {"$match": {"m": {"$eq": 2}}}], [{"_id": {"c": 2}, "m": 2}]),
    ([{"$group": {"_id": {"c": "$d"}, "c": {"$sum": {"$const": 1}}}}, {"$project": {"m": "$_id.c"}},
      {"$project": {"m2": "$m"}}, {"$match": {"m2": {"$eq": 2}}}], [{"_id": {"c": 2}, "m2": 2}]),
    ([{"$group": {"_id": {"c": {"d": "$d"}}, "c": {"$sum": {"$const": 1}}}}, {"$project": {"m": "$_id.c.d"}},
      {"$match": {"m": {"$eq": 2}}}], [{"_id": {"c": {"d": 2}}, "m": 2}]),
], ids=["rename", "two_projects", "depth3"])
def test_match_after_group_and_rename(db, pipeline, expected):
    db.c.insert_many([{"_id": 1, "x": 10}, {"_id": 2, "x": 20}, {"_id": 3, "x": 30}, {"_id": 20, "d": 2}])
    assert bag(run(db.c, pipeline)) == bag(expected)


_field_value = st.one_of(st.integers(1, 3), st.sampled_from(["aaa", "bbb", "ccc"]), st.none())
_distinct_doc = st.fixed_dictionaries({"a": _field_value, "b": _field_value, "c": _field_value})


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(fields=st.lists(st.sampled_from(["_id", "a", "b", "c", "mk"]), min_size=2, max_size=5, unique=True),
       first_dir=st.sampled_from([1, -1]), rest_dir=st.sampled_from([1, -1]), op=st.sampled_from(["$first", "$last"]),
       docs=st.lists(_distinct_doc, min_size=30, max_size=50), match=st.one_of(st.none(), st.integers(1, 3)),
       data=st.data())
def test_sorted_first_last_group_same_with_and_without_an_index(db, fields, first_dir, rest_dir, op, docs, match, data):
    """distinct_scan_optimization.js: [$sort on an index's fields, $group by its first field with
    $first/$last of the others] answers the same through the index as through a collection scan (and
    as the same $group reading the sorted documents through another stage)."""
    if fields[0] == "mk" or ("mk" in fields and op != "$first"):
        return
    mk_values = data.draw(st.lists(st.integers(-10**6, 10**6), min_size=3 * len(docs), max_size=3 * len(docs), unique=True))
    docs = [{**d, "_id": i, "mk": mk_values[3 * i: 3 * i + (i % 4)]} for i, d in enumerate(docs)]
    db.c.drop()
    db.c.insert_many(docs)
    spec = {f: (first_dir if i == 0 else rest_dir) for i, f in enumerate(fields)}
    group = {"$group": {"_id": f"${fields[0]}", **{f"{f}_accum": {op: f"${f}"} for f in fields[1:]}}}
    pipeline = [{"$sort": spec}, group]
    if match is not None:
        pipeline.insert(0, {"$match": {fields[0]: {"$gte": match}}})
    db.c.create_index(list(spec.items()))
    by_index = run(db.c, pipeline, hint=spec)
    by_scan = run(db.c, pipeline, hint={"$natural": 1})
    unfused = run(db.c, [*pipeline[:-1], {"$addFields": {"__": 1}}, group])
    assert bag(by_index) == bag(by_scan) == bag(unfused)


# --------------------------------------------------------------------------------------------------
# top_bottom_common_sort_key_optimization.js (results only; the optimization itself is 8.0)
# --------------------------------------------------------------------------------------------------

def _t(s: str) -> dt.datetime:
    return dt.datetime.fromisoformat(s)


T1_D = {"t": _t("2024-01-01T23:50:00"), "s": "D", "x": 3, "y": 10}
T1_D_A = {"t": _t("2024-01-01T23:50:00"), "s": "D", "a": [{"b": 0}]}
T2_A = {"t": _t("2024-01-02T00:00:28"), "s": "A", "x": 10, "y": 5}
T2_A_A = {"t": _t("2024-01-02T00:00:28"), "s": "A", "a": [{"b": 1}, {"b": 99}]}
T3_B_A = {"t": _t("2024-01-02T00:05:17"), "s": "B", "a": {"b": 2}}
T4_B = {"t": _t("2024-01-02T00:10:42"), "s": "B", "x": 5, "y": 24}
T5_A = {"t": _t("2024-01-02T00:15:50"), "s": "A", "x": 4, "y": 1}
T5_A_A = {"t": _t("2024-01-02T00:15:50"), "s": "A", "a": [{"b": 50}, {"b": 98}]}
T6_C = {"t": _t("2024-01-02T00:20:06"), "s": "C", "x": 5, "y": 9}
T6_C_A = {"t": _t("2024-01-02T00:20:06"), "s": "C", "a": [{"b": 100}]}
T7_C = {"t": _t("2024-01-02T00:21:06"), "s": "C", "x": 7, "y": 300}
T7_C_A = {"t": _t("2024-01-02T00:21:06"), "s": "C", "a": [50, 51]}
T8_D = {"t": _t("2024-01-02T00:22:59"), "s": "D", "x": 20, "y": 3}
T9_C = {"t": _t("2024-01-02T00:23:01"), "s": "C", "x": 6, "y": 1000}
T10_B = {"t": _t("2024-01-02T01:05:01"), "s": "B", "x": 6, "y": 1}
ARRAY_DOCS = [T1_D_A, T2_A_A, T3_B_A, T5_A_A, T6_C_A, T7_C_A]


@pytest.mark.parametrize("docs, group, expected", [
    ([T1_D, T2_A, T4_B, T9_C, T5_A, T6_C, T7_C, T8_D],
     {"_id": None, "ts": {"$top": {"output": "$s", "sortBy": {"y": -1}}}, "tx": {"$top": {"output": "$x", "sortBy": {"y": -1}}},
      "tz": {"$top": {"output": "$z", "sortBy": {"y": -1}}}},
     [{"_id": None, "ts": "C", "tx": 6, "tz": None}]),
    ([T6_C, T1_D, T2_A, T9_C, T5_A, T4_B, T8_D, T7_C],
     {"_id": None, "tns": {"$topN": {"n": 4, "output": "$s", "sortBy": {"t": -1}}},
      "tny": {"$topN": {"n": 4, "output": "$y", "sortBy": {"t": -1}}}},
     [{"_id": None, "tns": ["C", "D", "C", "C"], "tny": [1000, 3, 300, 9]}]),
    ([T1_D, T2_A, T4_B, T5_A, T6_C, T7_C, T8_D, T10_B],
     {"_id": None, "bs": {"$bottom": {"output": "$s", "sortBy": {"x": 1}}}, "by": {"$bottom": {"output": "$y", "sortBy": {"x": 1}}}},
     [{"_id": None, "bs": "D", "by": 3}]),
    ([T1_D, T2_A, T4_B, T5_A, T6_C, T7_C, T8_D, T9_C],
     {"_id": None, "bns": {"$bottomN": {"n": 3, "output": "$s", "sortBy": {"y": -1}}},
      "bnx": {"$bottomN": {"n": 3, "output": "$x", "sortBy": {"y": -1}}}},
     [{"_id": None, "bns": ["A", "D", "A"], "bnx": [10, 20, 4]}]),
    ([T5_A, T1_D, T2_A, T6_C, T7_C, T4_B, T9_C, T10_B, T8_D],
     {"_id": {"s": "$s"},
      "bnx": {"$bottomN": {"n": {"$cond": {"if": {"$eq": ["$s", "A"]}, "then": 1, "else": 2}}, "output": "$x", "sortBy": {"t": 1}}},
      "bny": {"$bottomN": {"n": {"$cond": {"if": {"$eq": ["$s", "A"]}, "then": 1, "else": 2}}, "output": "$y", "sortBy": {"t": 1}}}},
     [{"_id": {"s": "A"}, "bnx": [4], "bny": [1]}, {"_id": {"s": "B"}, "bnx": [5, 6], "bny": [24, 1]},
      {"_id": {"s": "C"}, "bnx": [7, 6], "bny": [300, 1000]}, {"_id": {"s": "D"}, "bnx": [3, 20], "bny": [10, 3]}]),
    ([T5_A, T2_A, T6_C, T7_C, T1_D, T4_B, T9_C, T10_B, T8_D],
     {"_id": None, "bs": {"$bottom": {"output": "$s", "sortBy": {"t": -1}}}, "tx": {"$top": {"output": "$x", "sortBy": {"t": 1}}},
      "ty": {"$top": {"output": "$y", "sortBy": {"t": 1}}}, "sumx": {"$sum": "$x"}},
     [{"_id": None, "bs": "D", "tx": 3, "ty": 10, "sumx": 66}]),
    (ARRAY_DOCS,
     {"_id": "$s", "tt": {"$top": {"output": "$t", "sortBy": {"a.b": 1}}}, "tadotb": {"$top": {"output": "$a.b", "sortBy": {"a.b": 1}}},
      "tadotc": {"$top": {"output": "$a.c", "sortBy": {"a.b": 1}}}},
     [{"_id": "A", "tt": T2_A_A["t"], "tadotb": [1, 99], "tadotc": []}, {"_id": "B", "tt": T3_B_A["t"], "tadotb": 2, "tadotc": None},
      {"_id": "C", "tt": T7_C_A["t"], "tadotb": [], "tadotc": []}, {"_id": "D", "tt": T1_D_A["t"], "tadotb": [0], "tadotc": []}]),
    (ARRAY_DOCS,
     {"_id": "$s", "badotb": {"$bottom": {"output": "$a.b", "sortBy": {"a.b": -1}}},
      "tt": {"$top": {"output": "$t", "sortBy": {"a.b": -1}}}, "tadotb": {"$top": {"output": "$a.b", "sortBy": {"a.b": -1}}}},
     [{"_id": "A", "badotb": [50, 98], "tt": T2_A_A["t"], "tadotb": [1, 99]}, {"_id": "B", "badotb": 2, "tt": T3_B_A["t"], "tadotb": 2},
      {"_id": "C", "badotb": [], "tt": T6_C_A["t"], "tadotb": [100]}, {"_id": "D", "badotb": [0], "tt": T1_D_A["t"], "tadotb": [0]}]),
    (ARRAY_DOCS,
     {"_id": "$s", "tadotb": {"$topN": {"n": 1, "output": "$a.b", "sortBy": {"a.b": 1}}},
      "tadotc": {"$topN": {"n": 1, "output": "$a.c", "sortBy": {"a.b": 1}}},
      "badotb": {"$bottomN": {"n": 1, "output": "$a.b", "sortBy": {"a.b": 1}}},
      "badotc": {"$bottomN": {"n": 1, "output": "$a.c", "sortBy": {"a.b": 1}}}},
     [{"_id": "A", "tadotb": [[1, 99]], "tadotc": [[]], "badotb": [[50, 98]], "badotc": [[]]},
      {"_id": "B", "tadotb": [2], "tadotc": [None], "badotb": [2], "badotc": [None]},
      {"_id": "C", "tadotb": [[]], "tadotc": [[]], "badotb": [[100]], "badotc": [[]]},
      {"_id": "D", "tadotb": [[0]], "tadotc": [[]], "badotb": [[0]], "badotc": [[]]}]),
    ([T1_D, T1_D_A, T2_A],
     {"_id": "$s", "t1": {"$topN": {"n": 1, "output": "$z", "sortBy": {"s": 1}}}, "b1": {"$bottomN": {"n": 1, "output": "$z", "sortBy": {"s": 1}}}},
     [{"_id": "A", "t1": [None], "b1": [None]}, {"_id": "D", "t1": [None], "b1": [None]}]),
], ids=["tops", "topNs", "bottoms", "bottomNs", "bottomN_group_key_n", "mixed", "array_asc", "array_desc", "array_n",
        "missing_output"])
def test_top_bottom_results(db, docs, group, expected):
    db.c.insert_many([dict(d) for d in docs])
    assert bag(run(db.c, [{"$group": group}])) == bag(expected)


# --------------------------------------------------------------------------------------------------
# percentiles_approx.js
# --------------------------------------------------------------------------------------------------

_P_DOCS = [{"x": 0}, {"x": 1}, {"x": 2}]


@pytest.mark.parametrize("docs, spec, let, expected", [
    ([{"x": 0}, {"x": "non-numeric"}, {"x": 1}, {"no_x": 0}, {"x": 2}], {"p": [0.5], "input": "$x"}, None, [1]),
    ([{"x": "non-numeric"}, {"no_x": 0}, {"x": dt.datetime(2020, 1, 1)}, {"x": [42, 43]}, {"x": None}, {"x": NAN}],
     {"p": [0.5], "input": "$x"}, None, [None]),
    ([{"x": "non-numeric"}, {"no_x": 0}, {"x": [42, 43]}, {"x": None}, {"x": NAN}], {"p": [0.5, 0.9], "input": "$x"}, None,
     [None, None]),
    ([{"x": 10}, {"x": 5}, {"x": 27}], {"p": [0], "input": "$x"}, None, [5]),
    ([{"x": 10}, {"x": 5}, {"x": 27}], {"p": [1], "input": "$x"}, None, [27]),
    (_P_DOCS, {"p": [0.5, 0.9, 0.1], "input": "$x"}, None, [1, 2, 0]),
    (_P_DOCS, {"p": "$$ps", "input": "$x"}, {"ps": [0.5, 0.9, 0.1]}, [1, 2, 0]),
    (_P_DOCS, {"p": ["$$p90"], "input": "$x"}, {"p90": 0.9}, [2]),
    (_P_DOCS, {"p": {"$concatArrays": [[0.1, 0.5], ["$$p90"]]}, "input": "$x"}, {"p90": 0.9}, [0, 1, 2]),
    (_P_DOCS, {"p": "$$ps", "input": {"$add": [42, "$x"]}}, {"ps": [0.5, 0.9, 0.1]}, [43, 44, 42]),
], ids=lambda v: repr(v)[:40])
def test_percentile_values(db, docs, spec, let, expected):
    db.c.insert_many([dict(d) for d in docs])
    (doc,) = run(db.c, [{"$group": {"_id": None, "p": {"$percentile": {**spec, "method": "approximate"}}}}],
                 **({"let": let} if let else {}))
    assert doc["p"] == expected


def test_percentile_per_group_and_median(db):
    db.c.insert_many([{"k": 0, "x": 0}, {"k": 0, "x": 1}, {"k": 1, "x": 2}, {"k": 2}, {"k": 0, "x": "str"}, {"k": 1, "x": 0}])
    got = run(db.c, [{"$group": {"_id": "$k", "p": {"$percentile": {"p": [0.9], "input": "$x", "method": "approximate"}},
                                 "m": {"$median": {"input": "$x", "method": "approximate"}}}}, {"$sort": {"_id": 1}}])
    assert [d["p"] for d in got] == [[1], [2], [None]]
    assert [d["m"] for d in got] == [0, 0, None]


@pytest.mark.parametrize("variant", ["plain", "infinities", "decimal"])
def test_percentile_rank_error_on_uniform_data(db, variant):
    """The jstest's accuracy check (rank error at most 0.1%), on 2,000 uniform samples."""
    import random
    rng = random.Random(20230328)
    samples = [rng.random() for _ in range(2000)]
    docs, ranked = [], sorted(samples)
    for i, x in enumerate(samples):
        docs.append({"x": Decimal128(repr(x)) if variant == "decimal" else x})
        if variant == "infinities" and i % 2000 == 0:  # (the jstest's share of infinities: 1 pair per 2,000)
            docs += [{"x": INF}, {"x": -INF}]
        if variant == "decimal" and i % 200 == 0:
            docs += [{"x": Decimal128("NaN")}, {"x": Decimal128("-NaN")}]
    if variant == "infinities":
        ranked = [-INF, *ranked, INF]
    db.c.insert_many(docs)
    ps = [0.0, 0.001, 0.01, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.99, 0.999, 1.0]
    (doc,) = run(db.c, [{"$group": {"_id": None, "p": {"$percentile": {"p": ps, "input": "$x", "method": "approximate"}}}}])
    for p, value in zip(ps, doc["p"], strict=True):
        computed = next(i for i, v in enumerate(ranked) if v >= value)
        assert abs(max(0, p * len(ranked) - 1) - computed) <= 0.001 * len(ranked), (p, value)


@pytest.mark.parametrize("n", ["$k", {"$add": ["$k", 1]}], ids=["field", "expression"])
def test_time_series_n_read_straight_from_the_group_key(db, n):
    docs = [{"_id": i, "t": dt.datetime(2024, 1, 1) + dt.timedelta(seconds=i), "m": i % 2, "k": 1 + i % 3, "b": i}
            for i in range(30)]
    ts, plain = _ts_pair(db, docs)
    pipeline = [{"$sort": {"t": 1}}, {"$group": {"_id": {"k": "$k"}, "r": {"$firstN": {"input": "$b", "n": n}}}}]
    want = run(plain, pipeline)
    assert sorted(len(d["r"]) - d["_id"]["k"] for d in want) == ([0, 0, 0] if n == "$k" else [1, 1, 1])
    assert bag(run(ts, pipeline)) == bag(want)


_ts_value = st.one_of(st.integers(-50, 50), st.integers(-400, 400).map(lambda i: i / 8), st.none(),
                      st.sampled_from(["x", "y", Int64(3), Decimal128("2.5"), MISSING]))
_ts_rows = st.lists(st.tuples(st.sampled_from(["A", "B", "C", None]), _ts_value, _ts_value), min_size=1, max_size=40)
_TS_GROUPS = [
    {"_id": "$m", "s": {"$sum": "$a"}, "v": {"$avg": "$b"}, "mn": {"$min": "$a"}, "mx": {"$max": "$b"}, "n": {"$count": {}}},
    {"_id": "$a", "f": {"$first": "$b"}, "l": {"$last": "$b"}, "p": {"$push": "$b"}},
    {"_id": {"m": "$m", "a": "$a"}, "top": {"$topN": {"n": 2, "output": "$b", "sortBy": {"b": -1, "t": 1}}},
     "mn": {"$minN": {"n": 2, "input": "$b"}}, "sd": {"$stdDevPop": "$a"}},
    {"_id": None, "s": {"$sum": {"$multiply": ["$a", "$b"]}}, "set": {"$addToSet": "$m"}, "last": {"$lastN": {"n": 3, "input": "$a"}}},
]


@settings(max_examples=20, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(rows=_ts_rows, group=st.sampled_from(_TS_GROUPS))
def test_time_series_group_matches_the_collection_on_random_data(db, rows, group):
    db.ts.drop()
    db.plain.drop()
    t0 = dt.datetime(2024, 1, 1)
    docs = []
    for i, (m, a, b) in enumerate(rows):
        doc: dict = {"_id": i, "t": t0 + dt.timedelta(seconds=i)}
        for name, value in (("m", m), ("a", a), ("b", b)):
            if value is not MISSING:
                doc[name] = value
        docs.append(doc)
    ts, plain = _ts_pair(db, docs)
    pipeline = [{"$sort": {"t": 1}}, {"$group": group}]

    def answer(coll):
        try:
            docs = run(coll, pipeline)
        except OperationFailure as e:  # ($multiply of a string): the same error both ways
            return ("error", e.code)
        for doc in docs:  # ($addToSet's order is unspecified)
            if "set" in doc:
                doc["set"] = sorted(map(repr, doc["set"]))
        return bag(docs)

    assert answer(ts) == answer(plain)


# --------------------------------------------------------------------------------------------------
# $bucketAuto arguments (the stage the jstests above run the accumulators in), checked in order
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("spec, code", [
    ({"groupBy": "$a", "buckets": 2.5}, 40242),
    ({"groupBy": "$a", "buckets": 2**40}, 40242),
    ({"groupBy": "$a", "buckets": "x"}, 40241),
    ({"groupBy": "$a", "buckets": 0}, 40243),
    ({"groupBy": "a", "buckets": 2}, 40239),
    ({"groupBy": 1, "buckets": 2}, 40239),
    ({"groupBy": "$a"}, 40246),
    ({"groupBy": "$a", "buckets": "x", "foo": 1}, 40241),  # arguments in their order
    ({"foo": 1, "groupBy": "$a", "buckets": "x"}, 40245),
    ({"groupBy": "$a", "buckets": 2, "output": 1}, 40244),
    ({"groupBy": "$a", "buckets": 2, "output": {"x": {"$minN": {"input": "$a", "n": "$k"}}, "y": {"$nope": 1}}}, 4544714),
], ids=lambda v: repr(v)[:60])
def test_bucket_auto_arguments_refused(db, spec, code):
    db.c.insert_many([{"a": i} for i in range(4)])
    aggregate_fails(db.c, [{"$bucketAuto": spec}], code)


def test_bucket_auto_messages_and_default_count(db):
    db.c.insert_many([{"a": i} for i in range(4)])
    assert aggregate_fails(db.c, [{"$bucketAuto": {"groupBy": "$a", "buckets": 2.5}}]).details["errmsg"] == \
        "The $bucketAuto 'buckets' field must be representable as a 32-bit integer, but found 2.5"
    assert aggregate_fails(db.c, [{"$bucketAuto": 1}]).details["errmsg"] == "The argument to $bucketAuto must be an object, but found type: int"
    assert aggregate_fails(db.c, [{"$bucketAuto": {"groupBy": "$a", "buckets": 2, "x": 1}}]).details["errmsg"] == \
        "Unrecognized option to $bucketAuto: x"
    for spec in ({"groupBy": "$a", "buckets": 2}, {"groupBy": "$a", "buckets": 2, "output": {}}):
        assert run(db.c, [{"$bucketAuto": spec}]) == [{"_id": {"min": 0, "max": 2}, "count": 2},
                                                      {"_id": {"min": 2, "max": 3}, "count": 2}]
