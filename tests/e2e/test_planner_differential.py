"""Every plan answers what the collection scan answers. mongod's planner may pick any index (or union
of indexes) for a read and, whichever it picks, the read's answer is the one of the ``{$natural: 1}``-hinted
collection scan: index bounds only narrow what is fetched, the filter decides. Tidemark picks index plans
itself (query/plan.py, index_bounds.py, wildcard_plan.py, plan_special.py) and re-applies the filter, so
a bound that is too tight (a value the filter accepts whose key lies outside the intervals), a sort the
index is wrongly trusted to give, or a count/distinct that reads the index alone shows here as a
difference from the scan.

The family: a few random documents (nested fields, arrays of scalars and of documents, every BSON type
the bounds treat specially: Int64/Decimal128/NaN/-0.0, dates, ObjectIds, regex values, MinKey/MaxKey,
null and missing, strings differing only by case) in a collection with random indexes (single,
compound with mixed directions, multikey, sparse, partial, collated, hashed, wildcard ``$**`` and
``a.$**``, unique where the data allows) and, for reference, in one with no index at all; random
filters from a grammar (equality, ``$ne``, ranges, ``$in``/``$nin`` with regexes, ``$exists``,
``$type``, regexes with flags, ``$elemMatch``, ``$all``, ``$size``, ``$not``, ``$and``/``$or``/``$nor``,
dotted and positional paths, ``$expr`` equalities), with an optional sort, skip, limit, projection and
collation. Checked: find without a hint == find hinted ``$natural`` (the same documents; sorted: the
same sequence of sort keys), every non-sparse, non-partial index hinted == the scan, count and distinct
== the index-free collection's, an aggregate ``$match`` and a ``$lookup`` sub-pipeline's ``$match`` ==
the scan, and explain answers. Half of the document sets hold no array, so that the indexes stay not
multikey and their bounds decide conditions exactly (index_bounds.tight_condition: no FETCH filter for
them); their values include numbers near each other across types (0.1, Decimal128("0.1"), 2**53 + 1
and its double); a find's cursor then meets, between batches, documents with
arrays that made its index multikey since its plan was chosen, and returns only matching documents."""

from __future__ import annotations

import datetime

import bson
import pytest
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.max_key import MaxKey
from bson.min_key import MinKey
from bson.objectid import ObjectId
from bson.regex import Regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

from tidemark.query.fetch_filter import RESIDUAL_AFTER

_SCALARS = [
    0, 1, 2, -1, Int64(1), Int64(2**40), 1.0, 1.5, -0.0, float("nan"), float("inf"),
    Decimal128("1"), Decimal128("1.50"), Decimal128("NaN"), Decimal128("-0"),
    "a", "A", "b", "ab", "Ab", "", "é",
    datetime.datetime(2020, 1, 1), datetime.datetime(1960, 1, 1), ObjectId("000000000000000000000001"),
    Regex("^a"), Regex("a", "i"), MinKey(), MaxKey(), None, True, False,
    # numbers near each other across types (0.1 and the 34-digit decimal just below its exact value)
    0.1, Decimal128("0.1"), Decimal128("0.1000000000000000055511151231257827"), 2**53 + 1, float(2**53),
    Int64(2**53), 0.5,
]
_COMMON = [0, 1, 1.0, "a", "A", None, True]  # (most values come from these, so that predicates meet documents)
_SCALAR = st.one_of(st.sampled_from(_COMMON), st.sampled_from(_COMMON), st.sampled_from(_SCALARS))
_SUBDOC = st.dictionaries(st.sampled_from(["x", "y"]), _SCALAR, max_size=2)
_VALUE = st.one_of(
    _SCALAR, _SCALAR, _SCALAR,
    st.lists(_SCALAR, max_size=3),
    _SUBDOC,
    st.lists(_SUBDOC, min_size=1, max_size=2),
    st.lists(st.lists(_SCALAR, max_size=2), min_size=1, max_size=2),
)
_MISSING = object()


@st.composite
def _document(draw, i):
    doc = {"_id": i}
    if (a := draw(st.one_of(st.just(_MISSING), _VALUE))) is not _MISSING:
        doc["a"] = a
    if (b := draw(st.one_of(st.just(_MISSING), _SCALAR))) is not _MISSING:
        doc["b"] = b
    c = draw(st.one_of(st.just(_MISSING), _SCALAR, st.fixed_dictionaries(
        {}, optional={"d": _VALUE, "e": _SCALAR}), st.lists(st.fixed_dictionaries({}, optional={"d": _SCALAR}),
                                                            min_size=1, max_size=2)))
    if c is not _MISSING:
        doc["c"] = c
    return doc


@st.composite
def _scalar_document(draw, i):
    """A document holding no array: the indexes stay not multikey, so their bounds decide predicates
    exactly (index_bounds.tight_condition) and the FETCH filter leaves those out."""
    doc = {"_id": i}
    for field, value in (("a", _SCALAR), ("b", _SCALAR), ("c", st.fixed_dictionaries({}, optional={
            "d": _SCALAR, "e": _SCALAR}))):
        if (v := draw(st.one_of(st.just(_MISSING), value))) is not _MISSING:
            doc[field] = v
    return doc


_DOCUMENTS = st.one_of(
    st.integers(1, 10).flatmap(lambda n: st.tuples(*[_document(i) for i in range(n)])),
    st.integers(1, 10).flatmap(lambda n: st.tuples(*[_scalar_document(i) for i in range(n)])),
)

_FIELDS = ["a", "b", "c.d", "a", "b", "c.d", "a.x", "c", "c.e"]
_COLLATIONS = [{"locale": "en", "strength": 2}, {"locale": "en", "strength": 1}, {"locale": "fr"}]
_PARTIALS = [{"a": {"$exists": True}}, {"b": {"$gt": 0}}, {"a": {"$type": "string"}},
             {"$and": [{"b": {"$gte": 1}}, {"a": {"$exists": True}}]}, {"c.d": {"$eq": 1}}, {"b": {"$in": [1, "a"]}}]


@st.composite
def _index(draw):
    kind = draw(st.sampled_from(["single", "single", "single", "compound", "compound", "hashed", "wildcard"]))
    options: dict = {}
    if kind == "single":
        key = [(draw(st.sampled_from(_FIELDS)), draw(st.sampled_from([1, -1])))]
    elif kind == "compound":
        fields = draw(st.lists(st.sampled_from(_FIELDS), min_size=2, max_size=3, unique=True))
        key = [(f, draw(st.sampled_from([1, -1]))) for f in fields]
    elif kind == "hashed":
        field = draw(st.sampled_from(["a", "b", "c.d"]))
        key = [(field, "hashed")]
        if draw(st.booleans()):
            other = draw(st.sampled_from([f for f in _FIELDS if f != field]))
            key = draw(st.sampled_from([[*key, (other, 1)], [(other, 1), *key]]))
    else:
        key = [(draw(st.sampled_from(["$**", "a.$**", "c.$**"])), 1)]
        if key[0][0] == "$**" and draw(st.booleans()):
            options["wildcardProjection"] = {draw(st.sampled_from(["a", "c", "b"])): 1}
    if kind != "wildcard" and draw(st.integers(0, 4)) == 0:
        options["sparse"] = True
    if draw(st.integers(0, 4)) == 0:
        options["partialFilterExpression"] = draw(st.sampled_from(_PARTIALS))
    if draw(st.integers(0, 3)) == 0:
        options["collation"] = draw(st.sampled_from(_COLLATIONS))
    if kind in ("single", "compound") and draw(st.integers(0, 4)) == 0:
        options["unique"] = True
    return key, options


_PATHS = ["a", "b", "c.d", "a.x", "a", "b", "c.d", "a.x", "a.0", "a.0.x", "c", "c.e", "c.0.d", "a.1"]
_PATTERNS = ["^a", "a", "^A", "^a$", "^$", "^ab", "b", "^é", "^a.", "^(a|b)"]
_OPTIONS = ["", "", "i", "m", "s", "x"]
_TYPES = ["number", "string", "null", "array", "double", "int", "long", "decimal", "date", "objectId", "regex",
          "minKey", "maxKey", "bool", "object", 1, 16]
_REGEX = st.builds(Regex, st.sampled_from(_PATTERNS), st.sampled_from(_OPTIONS))
_IN_ITEM = st.one_of(_SCALAR, _SCALAR, _REGEX, st.lists(_SCALAR, max_size=2), _SUBDOC)
_RANGE_OPS = ["$gt", "$gte", "$lt", "$lte"]


def _comparison():
    return st.one_of(
        st.builds(lambda op, v: {op: v}, st.sampled_from(_RANGE_OPS + ["$eq", "$ne"]), _SCALAR),
        st.builds(lambda o1, v1, o2, v2: {o1: v1, o2: v2}, st.sampled_from(["$gt", "$gte"]), _SCALAR,
                  st.sampled_from(["$lt", "$lte"]), _SCALAR),
    )


def _leaf_condition():
    return st.one_of(
        _VALUE, _SCALAR, _SCALAR,
        _comparison(), _comparison(), _comparison(),
        st.builds(lambda vs: {"$in": vs}, st.lists(_IN_ITEM, max_size=4)),
        st.builds(lambda vs: {"$nin": vs}, st.lists(_IN_ITEM, max_size=3)),
        st.builds(lambda b: {"$exists": b}, st.booleans()),
        st.builds(lambda t: {"$type": t}, st.sampled_from(_TYPES)),
        _REGEX,
        st.builds(lambda p, o: {"$regex": p, "$options": o}, st.sampled_from(_PATTERNS), st.sampled_from(_OPTIONS)),
        st.builds(lambda c: {"$elemMatch": c}, _comparison()),
        st.builds(lambda f, c: {"$elemMatch": {f: c}}, st.sampled_from(["x", "y"]),
                  st.one_of(_SCALAR, _comparison())),
        st.builds(lambda vs: {"$all": vs}, st.lists(st.one_of(_SCALAR, _REGEX), min_size=1, max_size=2)),
        st.builds(lambda n: {"$size": n}, st.integers(0, 2)),
        st.builds(lambda c: {"$not": c}, st.one_of(_comparison(), _REGEX,
                                                    st.builds(lambda vs: {"$in": vs}, st.lists(_IN_ITEM, max_size=3)))),
    )


def _leaf(paths):
    plain = st.builds(lambda p, c: {p: c}, paths, _leaf_condition())
    return st.one_of(
        plain, plain, plain, plain,
        st.builds(lambda p, v: {"$expr": {"$eq": ["$" + p, {"$literal": v}]}}, paths,
                  st.one_of(_SCALAR, st.lists(_SCALAR, max_size=2))),
    )


def _filter(paths):
    return st.one_of(_leaf(paths), _leaf(paths), st.recursive(
        st.one_of(_leaf(paths), st.builds(lambda x, y: {**x, **y}, _leaf(paths), _leaf(paths))),
        lambda inner: st.builds(lambda op, fs: {op: fs}, st.sampled_from(["$and", "$or", "$or", "$nor"]),
                                st.lists(inner, min_size=1, max_size=3)),
        max_leaves=4,
    ))


_SORT = st.lists(st.tuples(st.sampled_from(["a", "b", "c.d", "_id", "a.x"]), st.sampled_from([1, -1])),
                 max_size=2, unique_by=lambda t: t[0])
_PROJECTIONS = [None, None, {"a": 1}, {"a": 0}, {"b": 1, "_id": 0}, {"c.d": 1}]


@st.composite
def _query(draw, indexed=()):
    """A query whose paths are mostly the indexed ones (``indexed``: the key fields of the indexes)."""
    sort = draw(_SORT)
    fields = [f.replace(".$**", ".x").replace("$**", "a") for f in indexed if not f.startswith("_")]
    return {
        "filter": draw(_filter(st.sampled_from(_PATHS + fields * 3))),
        "sort": sort,
        "skip": draw(st.sampled_from([0, 0, 1, 3])) if sort else 0,
        "limit": draw(st.sampled_from([0, 0, 1, 2, 5])) if sort else 0,
        "projection": draw(st.sampled_from(_PROJECTIONS)),
        "collation": draw(st.sampled_from([None, None, None, *_COLLATIONS])),
    }


def _outcome(run):
    """A read's answer, or its error code (a filter refused is refused whatever the plan)."""
    try:
        return run()
    except OperationFailure as failure:
        return ("error", failure.code)


def _multiset(docs):
    return sorted(bson.encode({"v": d}) for d in docs)


def _find(coll, q, *, hint=None, sort_keys=False):
    options = {"filter": q["filter"], "skip": q["skip"], "limit": q["limit"]}
    if q["sort"]:
        options["sort"] = q["sort"]
    if q["collation"]:
        options["collation"] = q["collation"]
    if hint is not None:
        options["hint"] = hint
    if sort_keys:
        # (a projection of $meta fields alone keeps every field: the inclusion of an absent one drops them)
        options["projection"] = {"_id": 0, "none": 1, "k": {"$meta": "sortKey"}}
        return _outcome(lambda: [d["k"] for d in coll.find(**options)])
    options["projection"] = q["projection"]
    docs = _outcome(lambda: list(coll.find(**options)))
    return docs if isinstance(docs, tuple) else _multiset(docs)


def _same_read(coll, q, hint, reference, context, wildcard=False):
    docs = _find(coll, q, hint=hint)
    if wildcard and isinstance(docs, tuple) and docs[1] in (2, 291):
        return  # a hinted wildcard index no predicate can use is refused (mongod's QueryPlanner::plan)
    if not (q["skip"] or q["limit"]) or isinstance(docs, tuple):  # (a skip or limit may cut through ties)
        assert docs == reference["docs"], context
    if q["sort"] and not _empty_array_sorted(context["docs"], q["sort"]):
        assert _same_keys(coll.database, _find(coll, q, hint=hint, sort_keys=True), reference["keys"],
                          q["collation"]), context


def _same_keys(db, got, expected, collation):
    """The same sequence of sort keys, compared by the server (keys that tie may differ: 0 and -0.0,
    1 and 1.0, "a" and "A" under a collation)."""
    if isinstance(got, tuple) or isinstance(expected, tuple) or len(got) != len(expected):
        return got == expected
    if not got:
        return True
    pairs = [{"g": g, "e": e} for g, e in zip(got, expected, strict=True)]
    options = {"collation": collation} if collation else {}
    return not list(db.aggregate([{"$documents": pairs}, {"$match": {"$expr": {"$ne": ["$g", "$e"]}}}], **options))


def _empty_array_sorted(docs, sort):
    """Whether a sort path ends at an empty array in some document. Known difference, left out: an index
    keys ``[]`` as null (mongod: undefined, below null), so the order an index gives puts such documents
    among the null ones, where a sort puts them before."""
    def ends_empty(value, parts):
        if not parts:
            return value == [] or (isinstance(value, list) and any(v == [] for v in value))
        if isinstance(value, list):
            return any(ends_empty(v, parts) for v in value) or (
                parts[0].isdigit() and int(parts[0]) < len(value) and ends_empty(value[int(parts[0])], parts[1:]))
        return isinstance(value, dict) and parts[0] in value and ends_empty(value[parts[0]], parts[1:])
    return any(ends_empty(d, path.split(".")) for d in docs for path, _direction in sort)


def _count(coll, q, hint=None):
    command = {"count": coll.name, "query": q["filter"]}
    if q["collation"]:
        command["collation"] = q["collation"]
    if hint is not None:
        command["hint"] = hint
    return _outcome(lambda: coll.database.command(command)["n"])


def _distinct(coll, q, key):
    command = {"distinct": coll.name, "key": key, "query": q["filter"]}
    if q["collation"]:
        command["collation"] = q["collation"]
    return _outcome(lambda: coll.database.command(command)["values"])


def _same_values(db, got, expected, collation):
    """The same distinct values, compared by the server: which of the values equal to each other (1, 1.0,
    "a" and "A" under a collation) is kept depends on the scan order."""
    if isinstance(got, tuple) or isinstance(expected, tuple) or len(got) != len(expected):
        return got == expected
    options = {"collation": collation} if collation else {}
    return not list(db.aggregate([{"$documents": [{"g": got, "e": expected}]},
                                  {"$match": {"$expr": {"$not": {"$setEquals": ["$g", "$e"]}}}}], **options))


def _aggregate(coll, pipeline, collation):
    options = {"collation": collation} if collation else {}
    return _outcome(lambda: _multiset(coll.aggregate(pipeline, **options)))


def _check(db, docs, indexes, queries):
    plain, ix = db.plain, db.ix
    plain.drop()
    ix.drop()
    before, after = docs[:len(docs) // 2], docs[len(docs) // 2:]  # (index builds, then the write path)
    if before:
        plain.insert_many([dict(d) for d in before])
        ix.insert_many([dict(d) for d in before])
    built = []
    for key, options in indexes:
        try:
            name = ix.create_index(key, **options)
        except OperationFailure:  # parallel arrays, a hashed array, a duplicate under unique, a same-name index
            continue
        built.append((name, key, options))
    for d in after:
        try:
            ix.insert_one(dict(d))
        except OperationFailure:  # (the same refusals, from the write path)
            continue
        plain.insert_one(dict(d))
    db.one.drop()
    db.one.insert_one({"_id": 0})
    for q in queries:
        context = {"query": q, "indexes": built, "docs": docs}
        reference = {"docs": _find(ix, q, hint={"$natural": 1})}
        if q["sort"]:
            reference["keys"] = _find(ix, q, hint={"$natural": 1}, sort_keys=True)
        _same_read(plain, q, None, reference, context)
        _same_read(ix, q, None, reference, context)
        for name, _key, options in built:
            if not ({"sparse", "partialFilterExpression"} & options.keys()):
                _same_read(ix, q, name, reference, {**context, "hint": name}, "$**" in name)
        unlimited = {**q, "skip": 0, "limit": 0, "sort": []}
        count = _count(plain, unlimited)
        assert _count(ix, unlimited) == count, context
        for name, _key, options in built:
            if not ({"sparse", "partialFilterExpression"} & options.keys()):
                hinted = _count(ix, unlimited, name)
                if not ("$**" in name and isinstance(hinted, tuple) and hinted[1] in (2, 291)):
                    assert hinted == count, {**context, "hint": name}
        for key in ("a", "c.d", "b"):
            assert _same_values(db, _distinct(ix, q, key), _distinct(plain, q, key), q["collation"]), {
                **context, "distinct": key}
        match = [{"$match": q["filter"]}]
        assert _aggregate(ix, match, q["collation"]) == _aggregate(plain, match, q["collation"]), context
        lookup = [{"$lookup": {"from": "ix", "pipeline": [*match, {"$project": {"_id": 1}}, {"$sort": {"_id": 1}}], "as": "j"}}]
        expected = _aggregate(db.one, [{"$lookup": {**lookup[0]["$lookup"], "from": "plain"}}], q["collation"])
        assert _aggregate(db.one, lookup, q["collation"]) == expected, context
        explain = {"find": "ix", "filter": q["filter"]}
        if q["sort"]:
            explain["sort"] = dict(q["sort"])
        if q["collation"]:
            explain["collation"] = q["collation"]
        try:
            answer = db.command("explain", explain, verbosity="executionStats")
        except OperationFailure as failure:
            assert isinstance(reference["docs"], tuple), {**context, "explain": failure.details}
        else:
            if not isinstance(reference["docs"], tuple):
                assert answer["executionStats"]["nReturned"] == count, context


def _check_writes(db, q):
    """An update and a delete through the planner change the documents the scan would."""
    options = {"collation": q["collation"]} if q["collation"] else {}
    for coll in (db.plain, db.ix):
        _outcome(lambda coll=coll: coll.update_many(q["filter"], {"$inc": {"n": 1}}, **options))
    assert _multiset(db.ix.find()) == _multiset(db.plain.find()), q
    for coll in (db.plain, db.ix):
        _outcome(lambda coll=coll: coll.delete_many(q["filter"], **options))
    assert _multiset(db.ix.find()) == _multiset(db.plain.find()), q


def _check_cursor_meeting_arrays(db, q, arrays):
    """A find whose plan was chosen while its index held no array goes on, between batches, over
    documents that made the index multikey since (``arrays``, inserted after its first batch): each
    document it returns still matches the filter, as the collection scan decides. A condition the
    plan took as decided by its bounds (dropped from the FETCH filter) must stay true of every document
    whose key lies in them, an array's element included."""
    ix = db.ix
    options = {"collation": q["collation"]} if q["collation"] else {}
    # (copies: more entries than the scan's first read takes, more documents than a find matches with its
    # whole filter before it compiles the residual, fetch_filter.RESIDUAL_AFTER)
    present = list(ix.find())
    try:
        ix.insert_many([{**d, "_id": 1000 + i} for i, d in enumerate(present * (RESIDUAL_AFTER // 2))]
                       or [{"_id": 999}], ordered=False)
    except OperationFailure:  # (duplicates under a unique index)
        pass
    cursor = ix.find(q["filter"], batch_size=1, **options)
    try:
        returned = [d["_id"] for d in [next(cursor, None)] if d is not None]
        for d in arrays:
            try:
                ix.insert_one({**d, "_id": 2000 + d["_id"]})
            except OperationFailure:  # (parallel arrays, unique...)
                continue
        returned += [d["_id"] for d in cursor]
    except OperationFailure:
        return  # (a filter refused is refused whatever the plan)
    assert len(returned) == len(set(returned)), q
    matching = {"$and": [q["filter"], {"_id": {"$in": returned}}]}
    assert ix.count_documents(matching, hint={"$natural": 1}, **options) == len(returned), (q, arrays)


@pytest.mark.commands("find", "count", "distinct", "aggregate", "explain", "createIndexes", "update", "delete")
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow, HealthCheck.data_too_large])
@given(docs=_DOCUMENTS, indexes=st.lists(_index(), min_size=1, max_size=3),
       data=st.data())
def test_every_plan_answers_as_the_collection_scan(db, docs, indexes, data):
    indexed = [field for key, _options in indexes for field, _direction in key]
    queries = data.draw(st.lists(_query(indexed), min_size=1, max_size=4))
    _check(db, docs, indexes, queries)
    _check_writes(db, queries[-1])
    _check_cursor_meeting_arrays(db, queries[0], data.draw(st.lists(st.integers(0, 50).flatmap(_document),
                                                                    max_size=6, unique_by=lambda d: d["_id"])))



def _q(filter, sort=(), collation=None):
    return {"filter": filter, "sort": list(sort), "skip": 0, "limit": 0, "projection": None, "collation": collation}


# The reduced cases of the differences this test found (the queries draw on the indexes, so they are
# examples of their own rather than @example)
_REDUCED = [
    # {"a.0": null} matches a document element lacking "0"; the index keys the positional element only
    (({"_id": 0, "a": [{"x": 1}, {"x": 2}]}, {"_id": 1, "a": [None]}), [([("a.0", 1)], {})],
     [_q({"a.0": None}), _q({"a.0": {"$in": [None, Regex("^a")]}}), _q({"a.0": {"$gte": MinKey()}})]),
    # a COUNT_SCAN of a range below a number counted NaN, first of the number bracket
    (({"_id": 0, "a": float("nan")}, {"_id": 1, "a": Decimal128("-NaN")}, {"_id": 2, "a": -1}),
     [([("a", 1)], {}), ([("b", 1), ("a", -1)], {})],
     [_q({"a": {"$lt": 0}}), _q({"a": {"$lte": Decimal128("-1")}, "b": None})]),
]


@pytest.mark.commands("find", "count", "distinct", "aggregate", "explain", "createIndexes", "update", "delete")
@pytest.mark.parametrize("docs, indexes, queries", _REDUCED)
def test_the_reduced_cases_answer_as_the_collection_scan(db, docs, indexes, queries):
    _check(db, docs, indexes, queries)
    _check_writes(db, queries[0])
