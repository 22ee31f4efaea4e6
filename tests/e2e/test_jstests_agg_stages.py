"""MongoDB's aggregation-stage jstests ported to pymongo against a real Tidemark server: the documents
each stage returns (and their order where the jstest checks it), and the error codes of malformed
stage specifications.

Ported from ``jstests/aggregation/sources/`` (and ``jstests/aggregation/bugs/``) in mongodb/mongo, with
MongoDB 7.0's behaviour as the reference (where a jstest was later rewritten for 8.0+ -- ``$count:
"_id"`` and ``$sample: {size: 0}`` refused by 8.1, the IDL codes of ``lookup_unknown_field.js``, the
null semantics ``addFields/independence.js`` relies on -- the 7.0 expectation is used):

- ``unwind/``: ``unwind.js``, ``unwind_empty_array.js``, ``unwind_include_array_index.js``,
  ``unwind_preserve_null_and_empty_arrays.js``, ``unwind_sort.js``, ``unwind_skip.js``;
- ``lookup/``: ``lookup.js`` (7.0: ``pipeline`` may be combined with ``localField``/``foreignField``),
  ``lookup_invalid_input.js``, ``lookup_unknown_field.js``, ``lookup_numeric_field.js``,
  ``lookup_null_semantics.js``, ``lookup_non_correlated.js``, ``lookup_equijoin_semantics_lib.js`` (the
  nested-loop join's expectations), ``lookup_subpipeline.js``, ``lookup_sort_limit.js``,
  ``lookup_contains_text.js``, ``lookup_non_existent_collection.js``, ``lookup_subpipeline_group.js``;
- ``graphLookup/``: ``error.js``, ``basic.js``, ``filter.js``, ``missing_fields.js``, ``variables.js``,
  ``nested_objects.js``, ``collation_graphlookup.js``, the ``$graphLookup`` half of
  ``lookup_numeric_field.js``;
- ``facet/``: ``use_cases.js``, ``facet_validate_pipelines.js`` (the 7.0 part), ``inner_lookup.js``,
  ``inner_graphlookup.js``;
- ``unionWith/``: ``unionWith.js``, ``unionWith_invalid_usage.js``, ``unionWith_collation.js``
  (collections);
- ``replaceRoot/``: ``use_cases.js``, ``address.js``, ``replace_root_match.js``; ``redact/``:
  ``redact.js``, ``root_redact.js``, ``collation_redact.js``;
- ``sample/agg_sample.js``, ``count.js``, ``bucket/collation_bucket.js``,
  ``bucketauto/granularity_near_zero.js``, ``agg_stages_basic_behavior_pbt.js``;
- ``densify/parse.js`` (``libs/parse_util.js``), ``libs/densify_in_js.js`` (the reference model of the
  explicit-range and full-range jstests, as a Hypothesis oracle); ``fill/fill_parse.js``, ``fill/fill.js``;
- ``addFields/``: ``dotted_paths.js``, ``empty_objs.js``, ``add_fields_adds_to_missing_fields.js``,
  ``independence.js``;
- ``project/``: ``error_project_subfield_with_existing_expr.js``,
  ``inclusion_accepts_all_numeric_types.js``, ``nested_dotted_common_prefix.js``,
  ``handle_missing_subpath.js``, ``exclusion_projection_does_not_affect_field_order.js``,
  ``project_dotted_paths.js``, ``dotted_and_nested_proj_are_equal.js``, ``remove_id.js``;
- ``sort/``: ``sort_different_types.js``, ``array_sort_key_semantics.js``,
  ``sort_key_with_missing_fields.js``, ``collation_sort.js``, ``sort_dates_before_1970.js``;
- ``match/``: ``skip_with_limit.js``, ``dotted_numeric_path.js``, ``disallow_near_in_match.js``,
  ``within_in_match.js``;
- ``bugs/``: ``empty_field_names.js``, ``server6045.js``, ``server6181.js``, ``server6185.js``.

Explain shapes, plan-cache checks, failpoints, server parameters, sharding-only parts and SBE-only
checks are left out. Stage-specification errors the jstests leave implicit ($skip/$limit/$sort/
$project/$unset/$replaceRoot/$sortByCount shapes) are checked against mongod 7.0's parsers (codes and
messages). BSON undefined is left out everywhere (Tidemark stores it as null, a known difference of
its own).
"""

from __future__ import annotations

import datetime as dt
import math
import random
from collections import Counter

import pytest
from bson import Code, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp
from bson.binary import Binary
from bson.dbref import DBRef
from harness.jstests import canon, same_members
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("aggregate", "insert", "find", "drop", "createIndexes")

FAILED_TO_PARSE = 9
TYPE_MISMATCH = 14
INVALID_NAMESPACE = 73
BAD_VALUE = 2
IDL_FAILED_TO_PARSE = 40414
IDL_UNKNOWN_FIELD = 40415

# Known differences from MongoDB 7.0, one reason per cause (each used by strict xfails below).

HYPOTHESIS = settings(max_examples=25, deadline=None,
                      suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


# --------------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------------

def agg(coll, pipeline, **kw) -> list:
    """The ``aggregate`` command's documents (one batch, as the jstests' ``toArray()`` sees them)."""
    return coll.database.command("aggregate", coll.name, pipeline=pipeline, cursor={"batchSize": 100000},
                                 **kw)["cursor"]["firstBatch"]


def db_aggregate(db, pipeline) -> list:
    """A collectionless aggregate (``db.aggregate``: ``$documents`` first)."""
    return db.command("aggregate", 1, pipeline=pipeline, cursor={})["cursor"]["firstBatch"]


def agg_fails(coll, pipeline, *codes, **kw) -> OperationFailure:
    """``assertErrorCode``: the aggregate fails with one of ``codes``."""
    with pytest.raises(OperationFailure) as info:
        agg(coll, pipeline, **kw)
    if codes:
        assert info.value.code in codes, f"{pipeline}: code {info.value.code} ({info.value}), expected {codes}"
    return info.value


def loose(value):
    """The comparison of the shell's ``assertArrayEq``/``anyEq``: numbers by value (the shell's
    numbers are doubles), documents whatever their field order."""
    if isinstance(value, dict):
        return ("doc", tuple(sorted((k, loose(v)) for k, v in value.items())))
    if isinstance(value, list):
        return ("arr", tuple(loose(v) for v in value))
    if isinstance(value, (int, float, Int64, Decimal128)) and not isinstance(value, bool):
        f = float(value.to_decimal()) if isinstance(value, Decimal128) else float(value)
        return ("num", "nan" if f != f else f)
    return (type(value).__name__, repr(value))


def by_id(docs) -> list:
    return sorted(docs, key=lambda d: canon(d["_id"]))


def ids(docs) -> list:
    return [d["_id"] for d in docs]


# --------------------------------------------------------------------------------------------------
# unwind/
# --------------------------------------------------------------------------------------------------

def test_unwind_scalar_and_array_values(db):
    """unwind.js (SERVER-8088): a scalar unwinds to itself; missing, null and [] give nothing."""
    db.c.insert_many([{"_id": 1}, {"_id": 2, "x": None}, {"_id": 3, "x": []}, {"_id": 4, "x": [1, 2]},
                      {"_id": 5, "x": [3]}, {"_id": 6, "x": 4}])
    res = agg(db.c, [{"$unwind": "$x"}, {"$sort": {"_id": 1}}])
    assert [d["x"] for d in res] == [1, 2, 3, 4]


@pytest.mark.parametrize("doc, path", [
    ({"_id": 0, "a": 1, "b": [], "c": 2}, "$b"),
    ({"_id": 0, "a": 1, "b": {"x": 10, "y": [], "z": 20}, "c": 2}, "$b.y"),
    ({"_id": 0, "a": 1, "b": None, "c": 2}, "$b"),
    ({"_id": 0, "a": 1, "c": 2}, "$b"),
    ({"_id": 0, "a": 1, "b": {"d": 4}, "c": 2}, "$b.y"),
    ({"_id": 0, "a": 1, "b": 10, "c": 2}, "$b.y"),
])
def test_unwind_drops_documents_without_elements(db, doc, path):
    """unwind_empty_array.js (SERVER-6131): empty arrays, null and missing values drop the document."""
    db.c.insert_one(doc)
    assert agg(db.c, [{"$unwind": path}]) == []


def test_unwind_empty_array_documents_beside_unwound_ones(db):
    """unwind_empty_array.js: the non-empty array of another document still unwinds."""
    db.c.insert_many([{"_id": 0, "a": 1, "b": [], "c": 2}, {"_id": 1, "b": [4, 5]}, {"_id": 2, "b": []}])
    assert agg(db.c, [{"$unwind": "$b"}]) == [{"_id": 1, "b": 4}, {"_id": 1, "b": 5}]


def test_unwind_include_array_index(db):
    """unwind_include_array_index.js (SERVER-4588): the index is a long, null for a non-array."""
    db.c.insert_many([{"_id": 0}, {"_id": 1, "x": None}, {"_id": 2, "x": []}, {"_id": 3, "x": [1, 2, 3]},
                      {"_id": 4, "x": 5}])
    sort = {"$sort": {"_id": 1, "x": 1}}
    assert agg(db.c, [{"$unwind": {"path": "$x"}}, sort]) == [
        {"_id": 3, "x": 1}, {"_id": 3, "x": 2}, {"_id": 3, "x": 3}, {"_id": 4, "x": 5}]
    res = agg(db.c, [{"$unwind": {"path": "$x", "includeArrayIndex": "index"}}, sort])
    assert res == [{"_id": 3, "x": 1, "index": 0}, {"_id": 3, "x": 2, "index": 1}, {"_id": 3, "x": 3, "index": 2},
                   {"_id": 4, "x": 5, "index": None}]
    assert all(type(d["index"]) is Int64 for d in res[:3])
    res = agg(db.c, [{"$unwind": {"path": "$x", "includeArrayIndex": "index", "preserveNullAndEmptyArrays": True}},
                     sort])
    assert res == [{"_id": 0, "index": None}, {"_id": 1, "x": None, "index": None}, {"_id": 2, "index": None},
                   {"_id": 3, "x": 1, "index": 0}, {"_id": 3, "x": 2, "index": 1}, {"_id": 3, "x": 3, "index": 2},
                   {"_id": 4, "x": 5, "index": None}]


@pytest.mark.parametrize("doc, out", [
    ({"_id": 0}, {"_id": 0}),
    ({"_id": 0, "x": None}, {"_id": 0, "x": None}),
    ({"_id": 0, "x": []}, {"_id": 0}),
])
def test_unwind_preserve_null_and_empty_arrays(db, doc, out):
    """unwind_preserve_null_and_empty_arrays.js (SERVER-20168)."""
    assert agg(db.c, [{"$unwind": {"path": "$x"}}]) == []  # a collection that does not exist
    db.c.insert_one(doc)
    assert agg(db.c, [{"$unwind": {"path": "$x", "preserveNullAndEmptyArrays": True}}]) == [out]
    assert agg(db.c, [{"$unwind": {"path": "$x"}}]) == []


@pytest.mark.parametrize("spec, code", [
    (1, 15981), ("x", 28818), ("", 28812), ({"path": ""}, 28812), ("$", 40352), ("$x.", 15998), ("$x.$y", 16410), ({}, 28812),
    ({"path": "$x", "foo": 1}, 28811), ({"path": 1}, 28808), ({"path": "$x", "includeArrayIndex": 1}, 28810),
    ({"path": "$x", "includeArrayIndex": ""}, 28810), ({"path": "$x", "includeArrayIndex": "$i"}, 28822),
    ({"path": "$x", "includeArrayIndex": "a..b"}, 15998), ({"path": "$x", "preserveNullAndEmptyArrays": 1}, 28809),
])
def test_unwind_spec_errors(db, spec, code):
    agg_fails(db.c, [{"$unwind": spec}], code)


_SCALARS = st.one_of(st.none(), st.integers(-3, 3), st.sampled_from(["a", "b"]))
_UNWIND_VALUES = st.one_of(_SCALARS, st.lists(_SCALARS, max_size=4), st.just("MISSING"))


@HYPOTHESIS
@given(values=st.lists(_UNWIND_VALUES, min_size=1, max_size=6), preserve=st.booleans())
def test_unwind_matches_reference_model(db, values, preserve):
    """The jstests' rules as a model: an array gives one document per element (index as a long), a
    scalar itself (index null), null/missing/[] nothing unless preserved (then without the field for
    missing and [])."""
    db.c.drop()
    docs = [{"_id": i} if v == "MISSING" else {"_id": i, "x": v} for i, v in enumerate(values)]
    db.c.insert_many(docs)
    expected = []
    for d in docs:
        x = d.get("x", "MISSING")
        if isinstance(x, list) and x:
            expected += [{"_id": d["_id"], "x": e, "i": i} for i, e in enumerate(x)]
        elif x not in ("MISSING", None) and not isinstance(x, list):
            expected.append({**d, "i": None})
        elif preserve:
            expected.append({**({"_id": d["_id"]} if isinstance(x, list) else d), "i": None})
    res = agg(db.c, [{"$unwind": {"path": "$x", "includeArrayIndex": "i", "preserveNullAndEmptyArrays": preserve}}])
    assert res == expected


# --------------------------------------------------------------------------------------------------
# lookup/
# --------------------------------------------------------------------------------------------------

@pytest.fixture
def lookup_colls(db):
    db.lookUp.insert_many([{"_id": 0, "a": 1}, {"_id": 1, "a": None}, {"_id": 2}])
    db["from"].insert_many([{"_id": 0, "b": 1}, {"_id": 1, "b": None}, {"_id": 2}])
    return db.lookUp, db["from"]


def _lk(local, foreign, as_="same", frm="from"):
    return {"$lookup": {"localField": local, "foreignField": foreign, "from": frm, "as": as_}}


def test_lookup_basic_equality_with_nonexistent_fields_as_null(lookup_colls):
    """lookup.js: 'from' documents are added where a == b, nonexistent fields counting as null."""
    coll, _ = lookup_colls
    assert by_id(agg(coll, [_lk("a", "b")])) == [
        {"_id": 0, "a": 1, "same": [{"_id": 0, "b": 1}]},
        {"_id": 1, "a": None, "same": [{"_id": 1, "b": None}, {"_id": 2}]},
        {"_id": 2, "same": [{"_id": 1, "b": None}, {"_id": 2}]}]
    assert by_id(agg(coll, [_lk("nonexistent", "b")])) == [
        {"_id": 0, "a": 1, "same": [{"_id": 1, "b": None}, {"_id": 2}]},
        {"_id": 1, "a": None, "same": [{"_id": 1, "b": None}, {"_id": 2}]},
        {"_id": 2, "same": [{"_id": 1, "b": None}, {"_id": 2}]}]
    everything = [{"_id": 0, "b": 1}, {"_id": 1, "b": None}, {"_id": 2}]
    assert by_id(agg(coll, [_lk("a", "nonexistent")])) == [
        {"_id": 0, "a": 1, "same": []}, {"_id": 1, "a": None, "same": everything}, {"_id": 2, "same": everything}]
    empty = [{"_id": 0, "a": 1, "same": []}, {"_id": 1, "a": None, "same": []}, {"_id": 2, "same": []}]
    assert by_id(agg(coll, [_lk("_id", "nonexistent")])) == empty
    assert by_id(agg(coll, [_lk("a", "b", frm="nonexistent")])) == empty


def test_lookup_as_overwrites_and_several_lookups(lookup_colls):
    """lookup.js: an existing 'as' field is overwritten; several $lookups may run in one pipeline."""
    coll, _ = lookup_colls
    assert by_id(agg(coll, [_lk("a", "b", as_="a")])) == [
        {"_id": 0, "a": [{"_id": 0, "b": 1}]}, {"_id": 1, "a": [{"_id": 1, "b": None}, {"_id": 2}]},
        {"_id": 2, "a": [{"_id": 1, "b": None}, {"_id": 2}]}]
    res = agg(coll, [_lk("a", "b", as_="c"), {"$project": {"a": 1, "c": 1}}, _lk("a", "b", as_="d")])
    nulls = [{"_id": 1, "b": None}, {"_id": 2}]
    assert by_id(res) == [{"_id": 0, "a": 1, "c": [{"_id": 0, "b": 1}], "d": [{"_id": 0, "b": 1}]},
                          {"_id": 1, "a": None, "c": nulls, "d": nulls}, {"_id": 2, "c": nulls, "d": nulls}]


def test_lookup_then_unwind(lookup_colls):
    """lookup.js 'Coalescing with $unwind': plain, with includeArrayIndex, preserveNullAndEmptyArrays."""
    coll, _ = lookup_colls
    assert by_id(agg(coll, [_lk("a", "b"), {"$unwind": {"path": "$same"}}])) == [
        {"_id": 0, "a": 1, "same": {"_id": 0, "b": 1}}, {"_id": 1, "a": None, "same": {"_id": 1, "b": None}},
        {"_id": 1, "a": None, "same": {"_id": 2}}, {"_id": 2, "same": {"_id": 1, "b": None}},
        {"_id": 2, "same": {"_id": 2}}]
    res = agg(coll, [_lk("a", "b"), {"$unwind": {"path": "$same", "includeArrayIndex": "index"}}])
    assert [(d["_id"], d["index"]) for d in res] == [(0, 0), (1, 0), (1, 1), (2, 0), (2, 1)]
    assert agg(coll, [_lk("_id", "nonexistent"), {"$unwind": {"path": "$same"}}]) == []
    assert by_id(agg(coll, [_lk("_id", "nonexistent"),
                            {"$unwind": {"path": "$same", "preserveNullAndEmptyArrays": True}}])) == [
        {"_id": 0, "a": 1}, {"_id": 1, "a": None}, {"_id": 2}]
    assert by_id(agg(coll, [_lk("_id", "b"), {"$unwind": {"path": "$same", "preserveNullAndEmptyArrays": True,
                                                          "includeArrayIndex": "index"}}])) == [
        {"_id": 0, "a": 1, "index": None}, {"_id": 1, "a": None, "same": {"_id": 0, "b": 1}, "index": 0},
        {"_id": 2, "index": None}]


def test_lookup_dependencies_of_local_field_and_let(lookup_colls):
    """lookup.js 'Dependencies': a later $project does not lose the fields $lookup reads."""
    coll, _ = lookup_colls
    assert by_id(agg(coll, [_lk("a", "b"), {"$project": {"same": 1}}])) == [
        {"_id": 0, "same": [{"_id": 0, "b": 1}]}, {"_id": 1, "same": [{"_id": 1, "b": None}, {"_id": 2}]},
        {"_id": 2, "same": [{"_id": 1, "b": None}, {"_id": 2}]}]
    res = agg(coll, [{"$lookup": {"let": {"var1": "$a"}, "pipeline": [{"$project": {"x": "$$var1"}}],
                                  "from": "from", "as": "same"}}, {"$project": {"same": 1}}])
    assert by_id(res) == [
        {"_id": 0, "same": [{"_id": 0, "x": 1}, {"_id": 1, "x": 1}, {"_id": 2, "x": 1}]},
        {"_id": 1, "same": [{"_id": 0, "x": None}, {"_id": 1, "x": None}, {"_id": 2, "x": None}]},
        {"_id": 2, "same": [{"_id": 0}, {"_id": 1}, {"_id": 2}]}]


def test_lookup_dotted_paths(db):
    """lookup.js 'Dotted field paths': nullish 'a.c' joins the nullish 'b.c'; a dotted 'as' and index."""
    db.lookUp.insert_many([{"_id": 0, "a": 1}, {"_id": 1, "a": None}, {"_id": 2}, {"_id": 3, "a": {"c": 1}}])
    db["from"].insert_many([{"_id": 0, "b": 1}, {"_id": 1, "b": None}, {"_id": 2}, {"_id": 3, "b": {"c": 1}},
                            {"_id": 4, "b": {"c": 2}}])
    assert by_id(agg(db.lookUp, [_lk("a", "b")])) == [
        {"_id": 0, "a": 1, "same": [{"_id": 0, "b": 1}]}, {"_id": 1, "a": None, "same": [{"_id": 1, "b": None}, {"_id": 2}]},
        {"_id": 2, "same": [{"_id": 1, "b": None}, {"_id": 2}]}, {"_id": 3, "a": {"c": 1}, "same": [{"_id": 3, "b": {"c": 1}}]}]
    nullish = [{"_id": 0, "b": 1}, {"_id": 1, "b": None}, {"_id": 2}]
    assert by_id(agg(db.lookUp, [_lk("a.c", "b.c")])) == [
        {"_id": 0, "a": 1, "same": nullish}, {"_id": 1, "a": None, "same": nullish}, {"_id": 2, "same": nullish},
        {"_id": 3, "a": {"c": 1}, "same": [{"_id": 3, "b": {"c": 1}}]}]
    db.lookUp.drop()
    db["from"].drop()
    db.lookUp.insert_many([{"_id": 0, "a": {"b": 1}}, {"_id": 1}])
    db["from"].insert_one({"_id": 0, "target": 1})
    res = agg(db.lookUp, [_lk("a.b", "target", as_="same.documents"),
                          {"$unwind": {"path": "$same.documents", "preserveNullAndEmptyArrays": True,
                                       "includeArrayIndex": "c.d.e"}}])
    assert by_id(res) == [{"_id": 0, "a": {"b": 1}, "same": {"documents": {"_id": 0, "target": 1}}, "c": {"d": {"e": 0}}},
                          {"_id": 1, "same": {}, "c": {"d": {"e": None}}}]


def test_lookup_regex_and_array_local_values(db):
    """lookup.js SERVER-21287: a regex is compared for equality, not matched; array local values."""
    db.lookUp.insert_one({"_id": 0, "a": Regex("a regex")})
    db["from"].insert_many([{"_id": 0, "b": Regex("a regex")}, {"_id": 1, "b": "string that matches /a regex/"}])
    assert [d["b"] for d in agg(db.lookUp, [_lk("a", "b", as_="b")])] == [[{"_id": 0, "b": Regex("a regex")}]]
    db.lookUp.drop()
    db["from"].drop()
    db.lookUp.insert_one({"_id": 0, "a": [0, 1, 2]})
    db["from"].insert_many([{"_id": 0}, {"_id": 1}])
    assert agg(db.lookUp, [_lk("a", "_id", as_="b")]) == [{"_id": 0, "a": [0, 1, 2], "b": [{"_id": 0}, {"_id": 1}]}]
    db.lookUp.drop()
    db.lookUp.insert_one({"_id": 0, "a": [1]})
    assert agg(db.lookUp, [_lk("a", "_id", as_="b")]) == [{"_id": 0, "a": [1], "b": [{"_id": 1}]}]
    db.lookUp.drop()
    db["from"].drop()
    db.lookUp.insert_many([{"_id": 0, "a": [Regex("a regex"), Regex("^x")]}, {"_id": 1, "a": [Regex("^x")]}])
    db["from"].insert_many([{"_id": 0, "b": "should not match a regex"}, {"_id": 1, "b": "xxxx"},
                            {"_id": 2, "b": Regex("a regex")}, {"_id": 3, "b": Regex("^x")}])
    assert [ids(d["b"]) for d in by_id(agg(db.lookUp, [_lk("a", "b", as_="b")]))] == [[2, 3], [3]]
    db.lookUp.drop()
    db["from"].drop()
    db.lookUp.insert_one({"_id": 0, "a": [{"b": 1}, {"b": 2}]})
    db["from"].insert_many([{"_id": i} for i in range(4)])
    assert agg(db.lookUp, [_lk("a.b", "_id", as_="c")]) == [
        {"_id": 0, "a": [{"b": 1}, {"b": 2}], "c": [{"_id": 1}, {"_id": 2}]}]


def test_lookup_matches_come_in_foreign_scan_order(db):
    """lookup.js compares each 'as' array in order: the foreign collection's order, whatever the
    order of the local array's values."""
    db.lookUp.insert_one({"_id": 0, "a": [2, 0, 1]})
    db["from"].insert_many([{"_id": 5, "k": 0}, {"_id": 3, "k": 1}, {"_id": 4, "k": 2}])
    assert ids(agg(db.lookUp, [_lk("a", "k", as_="m")])[0]["m"]) == [5, 3, 4]


def test_lookup_let_pipelines(db):
    """lookup.js 'Pipeline syntax using let variables': theta joins, several variables, shadowing,
    undefined variables (17276)."""
    db.lookUp.insert_many([{"_id": 1, "x": 1}, {"_id": 2, "x": 2}, {"_id": 3, "x": 3}])
    db["from"].insert_many([{"_id": 1}, {"_id": 2}, {"_id": 3}])
    theta = [{"$project": {"isMatch": {"$gt": ["$$var1", "$_id"]}}}, {"$match": {"isMatch": True}},
             {"$project": {"isMatch": 0}}]
    res = agg(db.lookUp, [{"$lookup": {"let": {"var1": "$_id"}, "pipeline": theta, "from": "from", "as": "c"}}])
    assert by_id(res) == [{"_id": 1, "x": 1, "c": []}, {"_id": 2, "x": 2, "c": [{"_id": 1}]},
                          {"_id": 3, "x": 3, "c": [{"_id": 1}, {"_id": 2}]}]
    two = [{"$project": {"isMatch": {"$gt": ["$$var1", "$_id"]}, "var2Times2": {"$multiply": [2, "$$var2"]}}},
           {"$match": {"isMatch": True}}, {"$project": {"isMatch": 0}}]
    res = agg(db.lookUp, [{"$lookup": {"let": {"var1": "$_id", "var2": "$x"}, "pipeline": two, "from": "from",
                                       "as": "c"}}, {"$project": {"x": 1, "c": 1}}])
    assert by_id(res) == [{"_id": 1, "x": 1, "c": []}, {"_id": 2, "x": 2, "c": [{"_id": 1, "var2Times2": 4}]},
                          {"_id": 3, "x": 3, "c": [{"_id": 1, "var2Times2": 6}, {"_id": 2, "var2Times2": 6}]}]
    res = agg(db.lookUp, [{"$lookup": {"let": {"var1": {"$mod": ["$x", 3]}},
                                       "pipeline": [{"$project": {"m": {"$multiply": ["$$var1", "$_id"]}}}],
                                       "from": "from", "as": "c"}}])
    assert [[e["m"] for e in d["c"]] for d in by_id(res)] == [[1, 2, 3], [2, 4, 6], [0, 0, 0]]
    res = agg(db.lookUp, [{"$match": {"_id": 2}}, {"$lookup": {
        "let": {"var1": "$_id"}, "pipeline": [{"$project": {"s": {"$let": {"vars": {"var1": "$_id"}, "in": "$$var1"}}}}],
        "from": "from", "as": "c"}}])
    assert res == [{"_id": 2, "x": 2, "c": [{"_id": 1, "s": 1}, {"_id": 2, "s": 2}, {"_id": 3, "s": 3}]}]
    agg_fails(db.lookUp, [{"$lookup": {"from": "from", "as": "as", "let": {"var1": "$x"},
                                       "pipeline": [{"$project": {"myVar": "$$nonExistent"}}]}}], 17276)


def test_lookup_nested_pipelines(db):
    """lookup.js 'Pipeline syntax with nested $lookup', and a deeply nested one that still runs."""
    db.lookUp.insert_many([{"_id": i, "w": i} for i in (1, 2, 3)])
    db["from"].insert_many([{"_id": i, "x": i} for i in (1, 2, 3)])
    db.thirdColl.insert_many([{"_id": i, "y": i} for i in (1, 2, 3)])
    db.fourthColl.insert_many([{"_id": i, "z": i} for i in (1, 2, 3)])
    pipeline = [{"$match": {"_id": 1}}, {"$lookup": {"pipeline": [
        {"$match": {"_id": 2}}, {"$lookup": {"pipeline": [
            {"$match": {"_id": 3}}, {"$lookup": {"pipeline": [{"$match": {"_id": 1}}], "from": "fourthColl",
                                                 "as": "thirdLookup"}}], "from": "thirdColl", "as": "secondLookup"}}],
        "from": "from", "as": "firstLookup"}}]
    assert agg(db.lookUp, pipeline) == [{"_id": 1, "w": 1, "firstLookup": [
        {"_id": 2, "x": 2, "secondLookup": [{"_id": 3, "y": 3, "thirdLookup": [{"_id": 1, "z": 1}]}]}]}]
    nested: list = [{"$lookup": {"pipeline": [], "from": "lookup", "as": "same"}}]
    for _ in range(15):
        nested = [{"$lookup": {"pipeline": nested, "from": "lookup", "as": "same"}}]
    assert len(agg(db.lookUp, nested)) == 3


@pytest.mark.parametrize("spec, code", [
    ({"foreignField": "b", "from": "from", "as": "same"}, FAILED_TO_PARSE),
    ({"localField": "a", "from": "from", "as": "same"}, FAILED_TO_PARSE),
    ({"localField": "a", "foreignField": "b", "as": "same"}, FAILED_TO_PARSE),
    ({"localField": "a", "foreignField": "b", "from": "from"}, FAILED_TO_PARSE),
    ({"pipeline": [], "foreignField": "b", "from": "from", "as": "as"}, FAILED_TO_PARSE),
    ({"pipeline": [], "localField": "b", "from": "from", "as": "as"}, FAILED_TO_PARSE),
    ({"let": {"a": "$b"}, "foreignField": "b", "from": "from", "as": "as"}, FAILED_TO_PARSE),
    ({"let": {"a": "$b"}, "localField": "b", "from": "from", "as": "as"}, FAILED_TO_PARSE),
    ({"let": {"a": "$b"}, "localField": "b", "foreignField": "b", "from": "from", "as": "as"}, FAILED_TO_PARSE),
    ({"localField": 1, "foreignField": "b", "from": "from", "as": "as"}, FAILED_TO_PARSE),
    ({"localField": "a", "foreignField": 1, "from": "from", "as": "as"}, FAILED_TO_PARSE),
    ({"localField": "a", "foreignField": "b", "from": 1, "as": "as"}, FAILED_TO_PARSE),
    ({"localField": "a", "foreignField": "b", "from": "from", "as": 1}, FAILED_TO_PARSE),
    ({"pipeline": 1, "from": "from", "as": "as"}, TYPE_MISMATCH),
    ({"pipeline": {}, "from": "from", "as": "as"}, TYPE_MISMATCH),
    ({"let": 1, "pipeline": [], "from": "from", "as": "as"}, FAILED_TO_PARSE),
    ({"let": [], "pipeline": [], "from": "from", "as": "as"}, FAILED_TO_PARSE),
    ({"localField": "a", "foreignField": "b", "from": "", "as": "as"}, INVALID_NAMESPACE),
    ("string", FAILED_TO_PARSE),
    ({"from": "from", "as": "result"}, FAILED_TO_PARSE),
    ({"from": "from", "localField": "x", "foreignField": "y", "as": "r", "hi": "hi"}, FAILED_TO_PARSE),
    ({"from": {"db": "x", "coll": "y"}, "pipeline": [], "as": "r"}, FAILED_TO_PARSE),
    ({"from": "from", "pipeline": [], "as": ""}, FAILED_TO_PARSE),
    ({"from": "from", "pipeline": [], "as": "$x"}, 16410),
    ({"from": "from", "pipeline": [], "as": "a..b"}, 15998),
    ({"from": "from", "localField": "$a", "foreignField": "b", "as": "x"}, 16410),
    ({"from": "from", "pipeline": [{"$out": "zz"}], "as": "x"}, 51047),
    # disallowed_in_lookup.js: $merge banned in a sub-pipeline (51047), but not being last is found first
    ({"from": "from", "pipeline": [{"$project": {"x": 0}}, {"$merge": {"into": "o", "on": "_id"}}], "as": "c"}, 51047),
    ({"from": "from", "pipeline": [{"$merge": {"into": "o", "on": "_id"}}, {"$match": {"x": True}}], "as": "c"}, 40601),
    ({"from": "from", "pipeline": [{"$out": "zz"}, {"$match": {"x": True}}], "as": "c"}, 40601),
], ids=lambda v: str(v)[:60])
def test_lookup_spec_errors(lookup_colls, spec, code):
    """lookup.js 'Error cases' (7.0: pipeline with both localField and foreignField is valid),
    lookup_invalid_input.js, lookup_unknown_field.js (7.0: FailedToParse)."""
    coll, _ = lookup_colls
    agg_fails(coll, [{"$lookup": spec}], code)


def test_lookup_error_messages_name_the_cause(lookup_colls):
    """lookup_invalid_input.js: without localField/foreignField the message mentions 'pipeline'."""
    coll, _ = lookup_colls
    assert "pipeline" in str(agg_fails(coll, [{"$lookup": {"from": "from", "as": "result"}}], FAILED_TO_PARSE))
    msg = agg_fails(coll, [{"$lookup": {"pipeline": 1, "from": "from", "as": "as"}}]).details["errmsg"]
    assert msg == "'pipeline' option must be specified as an array"
    msg = agg_fails(coll, [{"$lookup": {"localField": 1, "foreignField": "b", "from": "from", "as": "as"}}]).details
    assert msg["errmsg"] == "$lookup argument 'localField' must be a string, found localField: 1: int"


def test_lookup_valid_input_combinations(db):
    """lookup_invalid_input.js: localField/foreignField, pipeline, and both together all work."""
    db.c.insert_one({"_id": 1, "x": 1})
    db.f.insert_one({"_id": 1, "y": 1})
    for spec in ({"localField": "x", "foreignField": "y"}, {"pipeline": [{"$match": {"y": 1}}]},
                 {"localField": "x", "foreignField": "y", "pipeline": [{"$match": {"y": 1}}]}):
        assert agg(db.c, [{"$lookup": {"from": "f", "as": "result", **spec}}]) == [
            {"_id": 1, "x": 1, "result": [{"_id": 1, "y": 1}]}]


@pytest.mark.parametrize("local_field, doc, matches", [
    ("a", {"a": 3}, True), ("a", {"a": 1}, False), ("a.b", {"a": {"b": 3}}, True), ("a.b.0", {"a": {"b": [3]}}, True),
    ("a.0", {"a": [3, 2, 1]}, True), ("a.0", {"a": {"0": 3, "1": 2, "3": 1}}, True), ("a.1", {"a": [3, 2, 1]}, False),
    ("a.3", {"a": [3, 2, 1]}, False), ("b.3", {"a": [3, 2, 1]}, False), ("c.1.0", {"c": [0, [3, 4, 3], [1, 2]]}, True),
    ("c.1.2", {"c": [0, [3, 4, 3], [1, 2]]}, True), ("c.0.0", {"c": [0, [3, 4, 3], [1, 2]]}, False),
    ("b.2.1", {"a": [0, [3, 4, 3], [1, 2]]}, False), ("a.2.b.1", {"a": [{}, {"b": [2]}, {"b": [1, 3]}]}, True),
    ("a.2.b.1", {"a": {"2": {"b": [1, 3]}}}, True), ("a.2.b.2", {"a": [{}, {"b": [2]}, {"b": [1, 3]}]}, False),
    ("a.1.b.1", {"a": [{}, {"b": [2]}, {"b": [1, 3]}]}, False), ("a.1.b.2", {"a": [{}, {"b": [2]}, {"b": [1, 3]}]}, False),
    ("a.b.c.1", {"a": {"b": {"c": [1, 3]}}}, True), ("a.00", {"a": [3]}, True), ("a.b.01", {"a": {"b": [1, 3]}}, True),
    ("a.00.b", {"a": [{"b": 3}]}, True), ("a.00", {"a": {"00": 3}}, True), ("a.b.01", {"a": {"b": {"01": 3}}}, True),
    ("a.00.b", {"a": {"00": {"b": 3}}}, True),
])
def test_lookup_numeric_local_field(db, local_field, doc, matches):
    """lookup_numeric_field.js: numeric components of localField index arrays (classic engine)."""
    db.inner.insert_one({"y": 3, "z": 4})
    db.outer.insert_one(doc)
    res = agg(db.outer, [{"$lookup": {"from": "inner", "localField": local_field, "foreignField": "y", "as": "docs"}},
                         {"$match": {"docs.0.z": 4}}, {"$count": "count"}])
    assert res == ([{"count": 1}] if matches else [])


@pytest.mark.parametrize("start_with, doc, matches", [
    ("$a", {"a": 3}, True), ("$a", {"a": 1}, False), ("$a.b", {"a": {"b": 3}}, True),
    ("$a.b.0", {"a": {"b": {"0": 3}}}, True), ("$a.b.0", {"a": {"b": [{"0": 3}]}}, True),
    ("$a.b.0", {"a": {"b": [3]}}, False), ("$a.0", {"a": {"0": 3}}, True), ("$a.0", {"a": {"0": 2}}, False),
    ("$a.0", {"a": [3, 2, 1]}, False), ("$a.0", {"a": [{"0": 3}]}, True), ("$a.0", {"a": [[{"0": 3}]]}, False),
    ("$c.1.0", {"c": {"1": {"0": 3}}}, True), ("$c.1.0", {"c": {"01": {"0": 3}}}, False),
    ("$c.1.0", {"c": {"1": {"00": 3}}}, False), ("$c.1.0", {"c": {"0": {"1": 3}}}, False),
    ("$a.2.b.1", {"a": {"2": {"b": {"1": 3}}}}, True), ("$a.2.b.1", {"a": [{}, {"b": [2]}, {"b": [1, 3]}]}, False),
    ("$a.00", {"a": {"00": 3}}, True), ("$a.00", {"a": [{"00": 3}]}, True), ("$a.00", {"a": {"00": [3]}}, True),
    ("$a.00", {"a": [{"00": [3]}]}, False), ("$a.00", {"a": [3]}, False),
])
def test_graph_lookup_numeric_start_with(db, start_with, doc, matches):
    """lookup_numeric_field.js: startWith is an expression, so numeric components name fields."""
    db.inner.insert_one({"y": 3, "z": 4})
    db.outer.insert_one(doc)
    res = agg(db.outer, [{"$graphLookup": {"from": "inner", "startWith": start_with, "connectFromField": "z",
                                           "connectToField": "y", "maxDepth": 0, "as": "docs"}},
                         {"$match": {"docs.0.z": 4}}, {"$count": "count"}])
    assert res == ([{"count": 1}] if matches else [])


def test_lookup_null_semantics(db):
    """lookup_null_semantics.js: a missing or null local value joins null, missing (and undefined)
    foreign values, also inside arrays; an index on the foreign field changes nothing."""
    db.loc.insert_many([{"_id": 0}, {"_id": 1, "a": None}, {"_id": 2, "a": 9}, {"_id": 3, "a": [None, 9]}])
    db.fgn.insert_many([{"_id": 0}, {"_id": 1, "b": None}, {"_id": 3, "b": 9}, {"_id": 4, "b": [None, 9]},
                        {"_id": 5, "b": 42}, {"_id": 7, "b": [9, 10]}])
    expected = {0: [0, 1, 4], 1: [0, 1, 4], 2: [3, 4, 7], 3: [0, 1, 3, 4, 7]}
    pipeline = [{"$lookup": {"from": "fgn", "localField": "a", "foreignField": "b", "as": "r"}}]
    assert {d["_id"]: ids(d["r"]) for d in agg(db.loc, pipeline)} == expected
    db.fgn.create_index("b")
    assert {d["_id"]: ids(d["r"]) for d in agg(db.loc, pipeline)} == expected


def test_lookup_non_correlated(db):
    """lookup_non_correlated.js: the same foreign documents for every local one; then $unwind/$match."""
    db.local.insert_many([{"_id": "A"}, {"_id": "B"}, {"_id": "C"}])
    db.foreign.insert_many([{"_id": 1}, {"_id": 2}, {"_id": 3}])
    lk = {"$lookup": {"from": "foreign", "as": "foreignDocs", "pipeline": [{"$match": {"_id": {"$gte": 2}}}]}}
    assert agg(db.local, [{"$match": {"_id": {"$in": ["B", "C"]}}}, {"$sort": {"_id": 1}}, lk]) == [
        {"_id": "B", "foreignDocs": [{"_id": 2}, {"_id": 3}]}, {"_id": "C", "foreignDocs": [{"_id": 2}, {"_id": 3}]}]
    assert agg(db.local, [{"$match": {"_id": "A"}}, lk, {"$unwind": "$foreignDocs"}]) == [
        {"_id": "A", "foreignDocs": {"_id": 2}}, {"_id": "A", "foreignDocs": {"_id": 3}}]
    assert agg(db.local, [{"$match": {"_id": "A"}}, lk, {"$unwind": "$foreignDocs"},
                          {"$match": {"foreignDocs._id": 2}}]) == [{"_id": "A", "foreignDocs": {"_id": 2}}]


# lookup_equijoin_semantics_lib.js: (description, records, path on their side, the single record on the
# other side, its path, the ids of 'records' expected to join). Each case runs both ways: 'records' as
# the local collection against the single foreign record, and as the foreign one against a local record.
_NULL_DOCS = [{"_id": 0, "no_a": 1}, {"_id": 1, "a": None}, {"_id": 2, "a": [None, 1]}, {"_id": 10, "a": []},
              {"_id": 20, "a": 1}, {"_id": 21, "a": {"x": None}}, {"_id": 22, "a": [[None, 1], 2]},
              {"_id": 23, "a": False}, {"_id": 24, "a": 0}, {"_id": 25, "a": {}}, {"_id": 26, "a": ""}]
_SCALAR_DOCS = [{"_id": 0, "a": 1, "y": 2}, {"_id": 1, "a": [1]}, {"_id": 2, "a": [1, 2, 3]}, {"_id": 3, "a": [1, [2, 3]]},
                {"_id": 4, "a": [1, [1, 2]]}, {"_id": 5, "a": [1, 2, 1]}, {"_id": 6, "a": [1, None]},
                {"_id": 7, "a": [1, []]}, {"_id": 10, "a": 2}, {"_id": 11, "a": [[1], 2]}, {"_id": 12, "a": [2, 3]},
                {"_id": 13, "a": {"y": 1}}, {"_id": 14, "no_a": 1}]
_PATH_DOCS = [{"_id": 0, "a": {"x": 1, "y": 2}}, {"_id": 1, "a": [{"x": 1}, {"x": 2}]}, {"_id": 2, "a": [{"x": 1}, {"x": None}]},
              {"_id": 3, "a": [{"x": 1}, {"x": []}]}, {"_id": 4, "a": [{"x": 1}, {"no_x": 2}]}, {"_id": 5, "a": {"x": [1, 2]}},
              {"_id": 6, "a": [{"x": [1, 2]}]}, {"_id": 7, "a": [{"x": [1, 2]}, {"no_x": 2}]},
              {"_id": 10, "a": {"x": 2, "y": 1}}, {"_id": 11, "a": {"x": [2, 3], "y": 1}},
              {"_id": 12, "a": [{"no_x": 1}, {"x": 2}, {"x": 3}]}, {"_id": 13, "a": {"x": [[1], 2]}},
              {"_id": 14, "a": [{"x": [[1], 2]}]}, {"_id": 15, "a": {"no_x": 1}}]
_DEEP_DOCS = [
    {"_id": 0, "a": {"b": {"c": 1}}}, {"_id": 1, "a": {"b": {"c": [[2, 3], 1]}}}, {"_id": 2, "a": {"b": [{"c": 2}, {"c": 1}]}},
    {"_id": 3, "a": {"b": [{"c": None}, {"c": 1}]}}, {"_id": 4, "a": {"b": [{"no_c": 2}, {"c": 1}]}},
    {"_id": 5, "a": {"b": [{"c": []}, {"c": 1}]}}, {"_id": 6, "a": {"b": [{"c": [[2, 3], 1]}]}},
    {"_id": 7, "a": {"b": [{"c": 1}, {"c": [[2, 3], 4]}]}}, {"_id": 8, "a": [{"b": {"c": 2}}, {"b": {"c": 1}}]},
    {"_id": 9, "a": [{"b": {"c": None}}, {"b": {"c": 1}}]}, {"_id": 10, "a": [{"b": {"no_c": 2}}, {"b": {"c": 1}}]},
    {"_id": 11, "a": [{"b": {"c": []}}, {"b": {"c": 1}}]}, {"_id": 12, "a": [{"b": {"c": [[2, 3], 1]}}]},
    {"_id": 13, "a": [{"b": {"c": 4}}, {"b": {"c": [[2, 3], 1]}}]}, {"_id": 14, "a": [{"no_b": 2}, {"b": {"c": 1}}]},
    {"_id": 15, "a": [{"b": [{"c": 1}]}]}, {"_id": 16, "a": [{"b": {"c": 3}}, {"b": [{"c": 1}, {"c": 2}]}]},
    {"_id": 17, "a": [{"b": {"c": None}}, {"b": [{"c": 1}]}]}, {"_id": 18, "a": [{"b": {"no_c": 2}}, {"b": [{"c": 1}]}]},
    {"_id": 19, "a": [{"b": {"c": []}}, {"b": [{"c": 1}]}]}, {"_id": 20, "a": [{"b": [{"c": [[2, 3], 1]}]}]},
    {"_id": 21, "a": [{"b": {"c": 4}}, {"b": [{"c": [[2, 3], 1]}]}]}, {"_id": 22, "a": [{"no_b": 2}, {"b": [{"no_c": 3}, {"c": 1}]}]},
    {"_id": 100, "a": {"b": {"c": [[1, 2], 3]}}}, {"_id": 101, "a": {"b": [{"c": [[1, 2], 3]}]}},
    {"_id": 102, "a": [{"b": {"c": [[1, 2], 3]}}]}, {"_id": 103, "a": [{"b": [{"c": [[1, 2], 3]}]}]}]
_TOP_ARRAY_DOCS = [{"_id": 0, "a": [[1, 2], 3], "y": 4}, {"_id": 1, "a": [[1, 2]]}, {"_id": 2, "a": [1, 2], "y": 3},
                   {"_id": 10, "a": [[[1, 2], 3], 4]}, {"_id": 11, "a": [2, 1]}, {"_id": 12, "a": [[2, 1], 3], "y": [1, 2]},
                   {"_id": 13, "a": [[2, 1], 3], "y": [[1, 2], 3]}, {"_id": 14, "a": None}, {"_id": 15, "no_a": [1, 2]}]
_PATH_ARRAY_DOCS = [
    {"_id": 0, "a": {"x": [[1, 2], 3], "y": 4}}, {"_id": 1, "a": [{"x": [[1, 2], 3]}, {"x": 4}]},
    {"_id": 2, "a": [{"x": [[1, 2], 3]}, {"x": None}]}, {"_id": 3, "a": [{"x": [[1, 2], 3]}, {"no_x": 4}]},
    {"_id": 4, "a": {"x": [1, 2], "y": 4}}, {"_id": 5, "a": [{"x": [1, 2]}, {"x": 4}]}, {"_id": 6, "a": [{"x": [1, 2]}, {"x": None}]},
    {"_id": 7, "a": [{"x": [1, 2]}, {"no_x": 4}]}, {"_id": 10, "a": {"x": [2, 1], "y": [1, 2]}},
    {"_id": 11, "a": {"x": [[2, 1], 3], "y": [[1, 2], 3]}}, {"_id": 12, "a": [{"x": 1}, {"x": 2}]},
    {"_id": 13, "a": {"x": [[[1, 2], 3]]}}, {"_id": 14, "a": [{"x": [[[1, 2], 3]]}]}, {"_id": 15, "a": {"no_x": [[1, 2], 3]}}]
_MISSING_PATH_DOCS = [
    {"_id": 0, "a": {"no_x": 1}}, {"_id": 1, "a": {"no_x": [1, 2]}}, {"_id": 2, "a": [{"no_x": 1}, {"no_x": 2}]},
    {"_id": 3, "a": [{"no_x": 2}, {"x": 1}]}, {"_id": 4, "a": [{"no_x": [1, 2]}, {"x": 1}]}, {"_id": 5, "a": {"x": None}},
    {"_id": 6, "a": [{"x": None}, {"x": 1}]}, {"_id": 7, "a": [{"x": None}, {"x": [1]}]}, {"_id": 8, "no_a": 1},
    {"_id": 9, "a": [1]}, {"_id": 10, "a": []}, {"_id": 11, "a": [[1]]}, {"_id": 12, "a": [[]]},
    {"_id": 20, "a": {"x": 2, "y": 1}}, {"_id": 21, "a": [{"x": 2}, {"x": 3}]}]
_SCALARS_ON_PATH_DOCS = [{"_id": 0, "a": 1}, {"_id": 1, "no_a": 1}, {"_id": 2, "a": [1]}, {"_id": 3, "a": {"b": 1}},
                         {"_id": 4, "a": {"no_b": 1}}, {"_id": 5, "a": {"b": [1]}}, {"_id": 6, "a": [{"b": {"no_c": 1}}, 1]},
                         {"_id": 7, "a": {"b": [{"no_c": 1}, 1]}}]
_EMPTY_TOP_DOCS = [{"_id": 0, "a": [[]]}, {"_id": 1, "a": [[], 1]}, {"_id": 2, "a": [[], None]}, {"_id": 3, "a": []},
                   {"_id": 10, "no_a": 1}, {"_id": 11, "a": None}, {"_id": 12, "a": [None]}, {"_id": 13, "a": [None, 1]},
                   {"_id": 20, "a": 1}, {"_id": 21, "a": [[[], 1], 2]}, {"_id": 22, "a": [1, 2]}, {"_id": 23, "a": [[None, 1], 2]}]
_EMPTY_DEEP_DOCS = [
    {"_id": 0, "a": {"b": {"c": []}}}, {"_id": 1, "a": {"b": [{"c": []}, {"c": []}]}},
    {"_id": 2, "a": {"b": [{"no_c": 42}, {"c": []}, {"c": []}]}}, {"_id": 3, "a": [{"b": {"c": []}}, {"b": {"c": []}}]},
    {"_id": 4, "a": [{"b": {"no_c": 42}}, {"b": {"c": []}}, {"b": {"c": []}}]}, {"_id": 5, "a": {"b": {"c": [[]]}}},
    {"_id": 6, "a": {"b": [{"c": []}, {"c": [[]]}]}}, {"_id": 7, "a": {"b": [{"no_c": 42}, {"c": []}, {"c": [[]]}]}},
    {"_id": 8, "a": [{"b": {"c": []}}, {"b": {"c": [[]]}}]}, {"_id": 9, "a": [{"b": {"no_c": 42}}, {"b": {"c": []}}, {"b": {"c": [[]]}}]}]
_EMPTY_PATH_DOCS = [
    {"_id": 0, "a": {"x": [[]], "y": 1}}, {"_id": 1, "a": [{"x": [[]]}]}, {"_id": 2, "a": [{"x": [[]]}, {"x": 1}]},
    {"_id": 3, "a": [{"x": [[]]}, {"x": None}]}, {"_id": 4, "a": [{"x": [[]]}, {"no_x": 1}]}, {"_id": 5, "a": {"x": [[], 1]}},
    {"_id": 10, "a": {"x": [], "y": 1}}, {"_id": 11, "a": [{"x": []}, {"x": 1}]}, {"_id": 12, "a": [{"x": []}, {"x": None}]},
    {"_id": 13, "a": [{"x": []}, {"no_x": 1}]}, {"_id": 20, "no_a": 1}, {"_id": 21, "a": {"no_x": 1}},
    {"_id": 22, "a": [{"no_x": 1}, {"no_x": 2}]}, {"_id": 23, "a": [{"x": None}, {"x": 1}]}, {"_id": 30, "a": []},
    {"_id": 31, "a": [1]}, {"_id": 32, "a": [None, 1]}, {"_id": 33, "a": [[]]}, {"_id": 34, "a": [[1], 2]},
    {"_id": 40, "a": {"x": 1}}, {"_id": 41, "a": {"x": [[[], 1], 2]}}, {"_id": 42, "a": {"x": [1, 2]}},
    {"_id": 43, "a": {"x": [[None, 1], 2]}}, {"_id": 44, "a": [{"x": 1}]}, {"_id": 45, "a": [{"x": [[[], 1], 2]}]},
    {"_id": 46, "a": [{"x": [1, 2]}]}, {"_id": 47, "a": [{"x": [[None, 1], 2]}]}]
_NUMERIC_PATH_DOCS = [{"_id": 0, "a": [{"x": 1}, {"x": 2}]}, {"_id": 1, "a": [{"x": [2, 3, 1]}]}, {"_id": 2, "a": [{"x": 1}, {"y": 1}]},
                      {"_id": 10, "a": [{"x": 2}, {"x": 1}]}, {"_id": 11, "a": [{"x": [2, 3]}]}, {"_id": 12, "a": {"x": 1}},
                      {"_id": 13, "a": {"x": [1, 2]}}, {"_id": 14, "a": [{"y": 1}, {"x": 1}]}]
_NUMERIC_NULL_DOCS = [{"_id": 0, "a": {"x": 1}}, {"_id": 1, "a": {"x": [1, 2]}}, {"_id": 2, "a": [{"y": 1}, {"x": 1}]},
                      {"_id": 3, "a": [{"x": None}, {"x": 1}]}, {"_id": 4, "a": [{"x": [1, None]}, {"x": 1}]},
                      {"_id": 5, "a": [1, 2]}, {"_id": 10, "a": [{"x": 1}, {"y": 1}]}, {"_id": 11, "a": [{"x": [1, 2]}]}]
_ALL = [0, 1, 2, 3, 4, 5, 6, 7]
# (description, docs, their path, the other record's value ("MISSING": no field), side of 'docs', ids)
EQUIJOIN_CASES = [
    ("null in foreign, top-level local", _NULL_DOCS, "a", None, "local", [0, 1, 2, 10]),
    ("null in local, top-level foreign", _NULL_DOCS, "a", None, "foreign", [0, 1, 2]),
    ("missing in foreign, top-level local", _NULL_DOCS, "a", "MISSING", "local", [0, 1, 2, 10]),
    ("missing in local, top-level foreign", _NULL_DOCS, "a", "MISSING", "foreign", [0, 1, 2]),
    ("NaN both ways", [{"_id": 0, "a": math.nan}, {"_id": 1, "a": Decimal128("NaN")}, {"_id": 2, "a": [1, math.nan]},
                       {"_id": 3, "a": [1, Decimal128("NaN")]}, {"_id": 10, "a": None}, {"_id": 11, "no_a": 42}],
     "a", math.nan, "both", [0, 1, 2, 3]),
    ("scalar in foreign, top-level local", _SCALAR_DOCS, "a", 1, "both", _ALL),
    ("path and scalar", _PATH_DOCS, "a.x", 1, "both", _ALL),
    ("deep path and scalar", _DEEP_DOCS, "a.b.c", 1, "both", list(range(23))),
    ("top-level local, array in foreign", _TOP_ARRAY_DOCS, "a", [1, 2], "local", [0, 1, 2, 11]),
    ("array in local, top-level foreign", _TOP_ARRAY_DOCS, "a", [1, 2], "foreign", [2, 11]),
    ("top-level local, nested array in foreign", _TOP_ARRAY_DOCS, "a", [[1, 2], 42], "local", [0, 1]),
    ("nested array in local, top-level foreign", _TOP_ARRAY_DOCS, "a", [[1, 2], 42], "foreign", [0, 1, 2]),
    ("path in local, array in foreign", _PATH_ARRAY_DOCS, "a.x", [1, 2], "local", [0, 1, 2, 3, 4, 5, 6, 7, 10, 12]),
    ("array in local, path in foreign", _PATH_ARRAY_DOCS, "a.x", [1, 2], "foreign", [4, 5, 6, 7, 10, 12]),
    ("path in local, nested array in foreign", _PATH_ARRAY_DOCS, "a.x", [[1, 2], 42], "local", [0, 1, 2, 3]),
    ("nested array in local, path in foreign", _PATH_ARRAY_DOCS, "a.x", [[1, 2], 42], "foreign", _ALL),
    ("missing on local path, null in foreign", _MISSING_PATH_DOCS, "a.x", None, "local", [0, 1, 2, 5, 6, 7, 8, 9, 10, 11, 12]),
    ("null in local, missing on foreign path", _MISSING_PATH_DOCS, "a.x", None, "foreign", list(range(13))),
    ("missing on local path, missing in foreign", _MISSING_PATH_DOCS, "a.x", "MISSING", "local",
     [0, 1, 2, 5, 6, 7, 8, 9, 10, 11, 12]),
    ("missing in local, missing on foreign path", _MISSING_PATH_DOCS, "a.x", "MISSING", "foreign", list(range(13))),
    ("scalars on a path and null", _SCALARS_ON_PATH_DOCS, "a.b.c", None, "both", _ALL),
    ("empty top-level array in foreign", _EMPTY_TOP_DOCS, "a", [], "local", [0, 1, 2]),
    ("empty top-level array in local", _EMPTY_TOP_DOCS, "a", [], "foreign", [2, 10, 11, 12, 13]),
    ("empty nested array in foreign", _EMPTY_TOP_DOCS, "a", [[], 42], "local", [0, 1, 2]),
    ("empty nested array in local", _EMPTY_TOP_DOCS, "a", [[], 42], "foreign", [0, 1, 2, 3]),
    ("empty arrays on a deep local path, null in foreign", _EMPTY_DEEP_DOCS, "a.b.c", None, "local", [0, 1, 2, 3, 4]),
    ("empty arrays on a deep local path, [] in foreign", _EMPTY_DEEP_DOCS, "a.b.c", [], "local", [5, 6, 7, 8, 9]),
    ("empty array in foreign, path in local", _EMPTY_PATH_DOCS, "a.x", [], "local", [0, 1, 2, 3, 4, 5]),
    ("empty array in local, path in foreign", _EMPTY_PATH_DOCS, "a.x", [], "foreign",
     [3, 4, 12, 13, 20, 21, 22, 23, 30, 31, 32, 33, 34]),
    ("empty nested array in foreign, path in local", _EMPTY_PATH_DOCS, "a.x", [[], 42], "local", [0, 1, 2, 3, 4, 5]),
    ("empty nested array in local, path in foreign", _EMPTY_PATH_DOCS, "a.x", [[], 42], "foreign",
     [0, 1, 2, 3, 4, 5, 10, 11, 12, 13]),
    ("scalar and a path with a numeral", _NUMERIC_PATH_DOCS, "a.0.x", 1, "both", [0, 1, 2]),
    ("null in foreign, local path with a numeral", _NUMERIC_NULL_DOCS, "a.0.x", None, "local", [0, 1, 2, 3, 4, 5]),
    ("null in local, foreign path with a numeral", _NUMERIC_NULL_DOCS, "a.0.x", None, "foreign",
     [0, 1, 2, 3, 4, 5, 10, 11]),
]


def _equijoin_ids(db, docs, path, other, side) -> list:
    record = {"_id": "other"} if other == "MISSING" else {"_id": "other", "b": other}
    if side == "local":
        db.local.insert_many(docs)
        db.foreign.insert_one(record)
        res = agg(db.local, [{"$lookup": {"from": "foreign", "localField": path, "foreignField": "b", "as": "m"}}])
        assert all(len(d["m"]) < 2 for d in res)  # the foreign record is never duplicated (SERVER-66119)
        return sorted(d["_id"] for d in res if d["m"])
    db.foreign.insert_many(docs)
    db.local.insert_one(record)
    res = agg(db.local, [{"$lookup": {"from": "foreign", "localField": "b", "foreignField": path, "as": "m"}}])
    return sorted(ids(res[0]["m"]))


@pytest.mark.parametrize("desc, docs, path, other, side, expected", EQUIJOIN_CASES,
                         ids=[c[0] if isinstance(c, tuple) else None for c in EQUIJOIN_CASES])
def test_lookup_equijoin_semantics(db, desc, docs, path, other, side, expected):
    """lookup_equijoin_semantics_lib.js (the nested-loop join, as a 7.0 collection scan answers)."""
    for s in (("local", "foreign") if side == "both" else (side,)):
        db.local.drop()
        db.foreign.drop()
        assert _equijoin_ids(db, docs, path, other, s) == sorted(expected), f"{desc} ({s})"


@pytest.mark.parametrize("value", [
    0, 3.14, Decimal128("3.14"), "abc", {"b": 1, "c": 2, "d": 3}, True, False, dt.datetime(2022, 1, 1),
    ObjectId("0102030405060708090A0B0C"), Regex("hjkl"), Regex("hjkl", "i"),
])
def test_lookup_equijoin_various_types(db, value):
    """lookup_equijoin_semantics_lib.js testVariousDataTypes: each value joins only itself."""
    docs = [{"_id": i, "a": v} for i, v in enumerate([0, 3.14, Decimal128("3.14"), "abc", {"b": 1, "c": 2, "d": 3}, True,
                                                      False, dt.datetime(2022, 1, 1), ObjectId("0102030405060708090A0B0C"),
                                                      Regex("hjkl"), Regex("hjkl", "i")])]
    expected = [d["_id"] for d in docs if canon(d["a"]) == canon(value)]
    assert _equijoin_ids(db, docs, "a", value, "local") == expected
    db.local.drop()
    db.foreign.drop()
    assert _equijoin_ids(db, docs, "a", value, "foreign") == expected


_JOIN_VALUES = st.one_of(st.none(), st.integers(0, 3), st.just("MISSING"),
                         st.lists(st.one_of(st.none(), st.integers(0, 3)), max_size=3))


@HYPOTHESIS
@given(local=st.lists(_JOIN_VALUES, min_size=1, max_size=5), foreign=st.lists(_JOIN_VALUES, min_size=1, max_size=6))
def test_lookup_equals_find_with_in_of_local_values(db, local, foreign):
    """lookup_null_semantics.js's rule as an invariant: a local document joins exactly the foreign
    documents a find with ``{b: {$in: <its values>}}`` returns (null for missing/[]), in that order."""
    db.local.drop()
    db.foreign.drop()
    db.local.insert_many([{"_id": i} if v == "MISSING" else {"_id": i, "a": v} for i, v in enumerate(local)])
    db.foreign.insert_many([{"_id": i} if v == "MISSING" else {"_id": i, "b": v} for i, v in enumerate(foreign)])
    res = agg(db.local, [{"$lookup": {"from": "foreign", "localField": "a", "foreignField": "b", "as": "m"}}])
    for d in res:
        a = d.get("a")
        values = a if isinstance(a, list) and a else [None] if a is None or a == [] else [a]
        found = db.foreign.find({"b": {"$in": values}}).sort("_id", 1)
        assert ids(d["m"]) == ids(found), d


# --------------------------------------------------------------------------------------------------
# graphLookup/error.js
# --------------------------------------------------------------------------------------------------

def _gl(**changes):
    spec = {"from": "foreign", "startWith": {"$literal": 0}, "connectToField": "a", "connectFromField": "b",
            "as": "output"}
    for k, v in changes.items():
        k = k.rstrip("_")
        if v is None:
            spec.pop(k)
        else:
            spec[k] = v
    return [{"$graphLookup": spec}]


_NEAR = {"$near": {"$geometry": {"type": "Point", "coordinates": [0, 0]}, "$maxDistance": 100}}


@pytest.mark.parametrize("pipeline, code", [
    ([{"$graphLookup": 4}], FAILED_TO_PARSE), (_gl(maxDepth="string"), 40100), (_gl(maxDepth=-1), 40101),
    (_gl(maxDepth=2.3), 40102), (_gl(from_=-1), FAILED_TO_PARSE),
    (_gl(from_=""), INVALID_NAMESPACE),
    (_gl(as_=0), 40103), (_gl(as_="$output"), 16410), (_gl(connectFromField=0), 40103),
    (_gl(connectFromField="$b"), 16410), (_gl(connectToField=0), 40103), (_gl(connectToField="$a"), 16410),
    (_gl(depthField=0), 40103), (_gl(depthField="$depth"), 16410), (_gl(restrictSearchWithMatch="notamatch"), 40185),
    (_gl(notAField="foo"), 40104), (_gl(connectToField=None), 40105), (_gl(connectFromField=None), 40105),
    (_gl(startWith=None), 40105), (_gl(as_=None), 40105), (_gl(from_=None), FAILED_TO_PARSE),
    (_gl(restrictSearchWithMatch={"$not": {"a": 1}}), BAD_VALUE),
    (_gl(restrictSearchWithMatch={"$where": "3 > 2"}), BAD_VALUE),
    (_gl(restrictSearchWithMatch={"$text": {"$search": "some text"}}), BAD_VALUE),
    (_gl(restrictSearchWithMatch={"x": _NEAR}), None),
    (_gl(restrictSearchWithMatch={"$and": [{"x": _NEAR}]}), None),
], ids=lambda v: str(v)[:70])
def test_graph_lookup_spec_errors(db, pipeline, code):
    """graphLookup/error.js: each malformed specification fails (with its code where the jstest names one)."""
    db.local.insert_one({"b": 0})
    agg_fails(db.local, pipeline, *((code,) if code else ()))


def test_graph_lookup_errors_with_foreign_documents(db):
    """graphLookup/error.js: with a foreign document, an unbound variable and a restrictSearchWithMatch
    that fails at run time ($divide by 0)."""
    db.local.insert_one({"b": 0})
    db.foreign.insert_one({"a": 0, "x": 0})
    agg_fails(db.local, _gl(restrictSearchWithMatch={"$expr": {"$eq": ["$x", "$$unbound"]}}), 17276)
    agg_fails(db.local, _gl(restrictSearchWithMatch={"$expr": {"$divide": [1, "$x"]}}), 16608, BAD_VALUE)


def test_undefined_variable_is_refused_before_reading(db):
    """graphLookup/error.js 'cannot use $expr with unbound variable', on an empty foreign collection."""
    db.local.insert_one({"b": 0})
    agg_fails(db.local, _gl(restrictSearchWithMatch={"$expr": {"$eq": ["$x", "$$unbound"]}}), 17276)


def test_graph_lookup_restrict_search_error_names_the_option(db):
    db.local.insert_one({"b": 0})
    err = agg_fails(db.local, _gl(restrictSearchWithMatch={"$text": {"$search": "x"}}), BAD_VALUE)
    assert err.details["errmsg"] == ("Failed to parse 'restrictSearchWithMatch' option to $graphLookup :: caused by :: "
                                     "$text is not allowed in this context")


# --------------------------------------------------------------------------------------------------
# facet/
# --------------------------------------------------------------------------------------------------

@HYPOTHESIS
@given(seed=st.integers(0, 2**16), n=st.integers(0, 40))
def test_facet_equals_each_pipeline_alone(db, seed, n):
    """facet/use_cases.js: each $facet output equals its pipeline run on its own."""
    db.c.drop()
    rnd = random.Random(seed)
    makers = ["Sony", "Samsung", "LG", "Panasonic", "Vizio"]
    if n:
        db.c.insert_many([{"_id": i, "manufacturer": rnd.choice(makers), "price": rnd.randint(100, 4000),
                           "screenSize": rnd.randint(18, 40)} for i in range(n)])
    manufacturers = [{"$sortByCount": "$manufacturer"}, {"$sort": {"count": -1, "_id": 1}}]
    bucketed = [{"$bucket": {"groupBy": "$price", "boundaries": [0, 500, 1000, 1500, 2000], "default": 2000}},
                {"$sort": {"count": -1, "_id": 1}}]
    auto = [{"$bucketAuto": {"groupBy": "$price", "buckets": 5}}]
    res = agg(db.c, [{"$facet": {"manufacturers": manufacturers, "bucketedPrices": bucketed, "autoBucketedPrices": auto}}])
    assert res == [{"manufacturers": agg(db.c, manufacturers), "bucketedPrices": agg(db.c, bucketed),
                    "autoBucketedPrices": agg(db.c, auto)}]


@pytest.mark.parametrize("spec, code", [
    (1, 40169), ({}, 40169), ({"a": 1}, 40170), ({"a": [1]}, 40171), ({"$a": [{"$limit": 1}]}, 16410),
    ({"a.b": [{"$limit": 1}]}, 16412), ({"": [{"$limit": 1}]}, 15998), ({"x": [{"$facet": {"y": []}}]}, 40600),
    ({"a": [{"$out": "z"}]}, 40600), ({"a": [{"$indexStats": {}}]}, 40600), ({"a": [{"$collStats": {}}]}, 40600),
    ({"a": [{"$limit": 1, "$skip": 1}]}, 40323),
])
def test_facet_spec_errors(db, spec, code):
    """facet_validate_pipelines.js and mongod 7.0's $facet parser (names are field names: FieldPath)."""
    db.c.insert_many([{"_id": 0, "a": 1}, {"_id": 2, "a": 5}])
    agg_fails(db.c, [{"$facet": spec}], code)


def test_facet_messages(db):
    err = agg_fails(db.c, [{"$facet": {"x": [{"$facet": {"y": []}}]}}], 40600)
    assert "$facet is not allowed to be used within a $facet stage" in str(err)
    err = agg_fails(db.c, [{"$facet": 1}], 40169)
    assert err.details["errmsg"] == "the $facet specification must be a non-empty object, but found: $facet: 1"


# --------------------------------------------------------------------------------------------------
# unionWith/
# --------------------------------------------------------------------------------------------------

@pytest.fixture
def union_colls(db):
    for name, key, f in (("A", "a", lambda i: i), ("B", "b", lambda i: i * 2), ("C", "c", lambda i: 10 - i),
                         ("D", "d", lambda i: i * 3)):
        db[name].insert_many([{key: i, "val": f(i), "groupKey": i} for i in range(5)])
    return db


def _docs(db, name, extra=None):
    docs = list(db[name].find())
    return [{**d, **(extra or {})} for d in docs]


def test_union_with_collections_and_nesting(union_colls):
    """unionWith.js: two and four collections, sequential and nested, sub-pipelines on their own documents."""
    db = union_colls
    assert same_members(agg(db.A, [{"$unionWith": "B"}]), _docs(db, "A") + _docs(db, "B"))
    four = _docs(db, "A") + _docs(db, "B") + _docs(db, "C") + _docs(db, "D")
    assert same_members(agg(db.A, [{"$unionWith": "B"}, {"$unionWith": "C"}, {"$unionWith": "D"}]), four)
    nested = [{"$unionWith": {"coll": "B", "pipeline": [{"$unionWith": {"coll": "C", "pipeline": [{"$unionWith": "D"}]}}]}}]
    assert same_members(agg(db.A, nested), four)
    assert same_members(agg(db.A, [{"$unionWith": {"coll": "B", "pipeline": [{"$addFields": {"x": 3}}]}}]),
                        _docs(db, "A") + _docs(db, "B", {"x": 3}))
    res = agg(db.A, [{"$unionWith": {"coll": "B", "pipeline": [
        {"$unionWith": {"coll": "C", "pipeline": [{"$unionWith": {"coll": "D", "pipeline": [{"$addFields": {"z": 5}}]}},
                                                  {"$addFields": {"y": 4}}]}},
        {"$addFields": {"x": 3}}]}}])
    # (fields come in the order the stages add them: the innermost $addFields first)
    assert same_members(res, _docs(db, "A") + _docs(db, "B", {"x": 3}) + _docs(db, "C", {"y": 4, "x": 3})
                        + _docs(db, "D", {"z": 5, "y": 4, "x": 3}))


def test_union_with_group_sort_limit_and_missing_collections(union_colls):
    """unionWith.js: $group over the union and inside it, $sort/$limit inside, nonexistent and empty
    collections."""
    db = union_colls
    res = agg(db.A, [{"$unionWith": "B"}, {"$group": {"_id": "$groupKey", "sum": {"$sum": "$val"}}}], allowDiskUse=True)
    assert same_members(res, [{"_id": i, "sum": 3 * i} for i in range(5)])
    res = agg(db.A, [{"$unionWith": {"coll": "B", "pipeline": [{"$group": {"_id": "$groupKey", "val": {"$sum": "$val"}}},
                                                               {"$addFields": {"groupKey": 1}}]}},
                     {"$group": {"_id": "$groupKey", "sum": {"$sum": "$val"}}}])
    assert same_members(res, [{"_id": 0, "sum": 0}, {"_id": 1, "sum": 21}, {"_id": 2, "sum": 2}, {"_id": 3, "sum": 3},
                              {"_id": 4, "sum": 4}])
    res = agg(db.A, [{"$unionWith": {"coll": "B", "pipeline": [{"$sort": {"b": 1}}, {"$limit": 2}]}}])
    assert same_members(res, _docs(db, "A") + list(db.B.find().sort("b", 1).limit(2)))
    assert len(list(db.A.aggregate([{"$unionWith": "D"}], batchSize=2))) == 10
    assert same_members(agg(db.A, [{"$unionWith": "nonExistentCollectionAlpha"}]), _docs(db, "A"))
    assert same_members(agg(db.A, [{"$unionWith": {"coll": "nonExistentBeta", "pipeline": [{"$addFields": {"t": 5}}]}}]),
                        _docs(db, "A"))
    assert same_members(agg(db.nonExistentCollectionCharlie, [{"$unionWith": "A"}]), _docs(db, "A"))
    db.create_collection("emptyCollection")
    assert same_members(agg(db.emptyCollection, [{"$unionWith": "A"}]), _docs(db, "A"))


@pytest.mark.parametrize("spec, code", [
    ({"coll": "union", "pipeline": [{"$out": "some_out_coll"}]}, 31441),
    ({"coll": "union", "pipeline": [{"$merge": {"into": "some_merge_coll", "whenMatched": "replace",
                                                "whenNotMatched": "fail"}}]}, 31441),
    (1, FAILED_TO_PARSE), ({}, FAILED_TO_PARSE), ({"coll": 1}, TYPE_MISMATCH), ({"coll": "c", "pipeline": 1}, TYPE_MISMATCH),
    ({"coll": "c", "x": 1}, IDL_UNKNOWN_FIELD),
], ids=lambda v: str(v)[:50])
def test_union_with_invalid_usage(db, spec, code):
    """unionWith_invalid_usage.js: writing stages inside $unionWith (31441); mongod's IDL shape errors."""
    db.base.insert_one({"a": 1})
    agg_fails(db.base, [{"$unionWith": spec}], code)


# --------------------------------------------------------------------------------------------------
# replaceRoot/, redact/
# --------------------------------------------------------------------------------------------------

def test_replace_root_and_replace_with_use_cases(db):
    """replaceRoot/use_cases.js: the most frequent commenters, through both spellings."""
    db.c.insert_many([{"_id": 0, "comments": [{"user_id": "x", "comment": "foo"}, {"user_id": "y", "comment": "bar"}]},
                      {"_id": 1, "comments": [{"user_id": "y", "comment": "bar again"}]}])
    expected = [{"_id": "y", "count": 2}, {"_id": "x", "count": 1}]
    assert agg(db.c, [{"$unwind": "$comments"}, {"$replaceRoot": {"newRoot": "$comments"}},
                      {"$sortByCount": "$user_id"}]) == expected
    assert agg(db.c, [{"$unwind": "$comments"}, {"$replaceWith": "$comments"}, {"$sortByCount": "$user_id"}]) == expected


@HYPOTHESIS
@given(seed=st.integers(0, 2**16))
def test_replace_root_equals_projecting_the_subdocument(db, seed):
    """replaceRoot/address.js: $replaceRoot on the address equals $project-ing its fields to the top."""
    db.c.drop()
    rnd = random.Random(seed)
    db.c.insert_many([{"names": rnd.choice(["Asya", "Charlie", "Dan"]),
                       "address": {"number": rnd.randint(1, 999), "street": rnd.choice(["3rd", "4th", "5th"]),
                                   "city": rnd.choice(["New York", "Palo Alto", "Sydney"]), "zip": rnd.randint(10000, 99999)}}
                      for _ in range(10)])
    projected = agg(db.c, [{"$project": {"_id": 0, "number": "$address.number", "street": "$address.street",
                                         "city": "$address.city", "zip": "$address.zip"}}])
    replaced = agg(db.c, [{"$replaceRoot": {"newRoot": "$address"}}, {"$sort": {"city": 1, "zip": 1, "street": 1, "number": 1}}])
    assert same_members(replaced, projected)


@pytest.mark.parametrize("stage, code", [
    ({"$replaceRoot": 1}, 40229), ({"$replaceRoot": {}}, IDL_FAILED_TO_PARSE),
    ({"$replaceRoot": {"newRoot": {}, "x": 1}}, IDL_UNKNOWN_FIELD), ({"$replaceRoot": {"newRoot": "$y"}}, 40228),
    ({"$replaceRoot": {"newRoot": "$nope"}}, 40228), ({"$replaceWith": 1}, 40228),
])
def test_replace_root_errors(db, stage, code):
    db.c.insert_one({"_id": 1, "x": [1, 2], "y": "a"})
    agg_fails(db.c, [stage], code)


def test_replace_root_error_message_prints_values_as_mongod(db):
    db.c.insert_one({"_id": 1, "x": [1, 2], "y": "a"})
    msg = agg_fails(db.c, [{"$replaceRoot": {"newRoot": "$y"}}], 40228).details["errmsg"]
    assert msg.endswith("'newRoot' expression  must evaluate to an object, but resulting value was: \"a\". Type of "
                        "resulting value: 'string'. Input document: {_id: 1, x: [1, 2], y: \"a\"}")
    msg = agg_fails(db.c, [{"$replaceWith": "$nope"}], 40228).details["errmsg"]
    assert msg.endswith("'replacement document'  must evaluate to an object, but resulting value was: MISSING. Type "
                        "of resulting value: 'missing'. Input document: {_id: 1, x: [1, 2], y: \"a\"}")


_REDACT_DOC = {
    "_id": 1, "level": 1,
    "b": {"level": 3, "c": 5, "d": [{"level": 1, "e": 4}, {"f": 6}, {"level": 5, "g": 9}, "NOT AN OBJECT!!11!",
                                    [2, 3, 4, {"level": 1, "r": 11}, {"level": 5, "s": 99}]]},
    "h": {"level": 2, "i": {"level": 4, "j": {"level": 1, "k": 8}}},
    "l": {"m": {"level": 3, "n": 12}},
    "o": [{"level": 5, "p": 19}],
    "q": 14,
}


def _redact(level: int, keep: str = "$$DESCEND") -> list:
    return [{"$redact": {"$cond": [{"$lte": ["$level", level]}, keep, "$$PRUNE"]}}]


def test_redact_descend_and_prune(db):
    """redact.js: what each access level sees, subdocuments in arrays included."""
    db.c.insert_many([_REDACT_DOC, {"_id": 2, "level": 4}])
    assert agg(db.c, _redact(1)) == [{"_id": 1, "level": 1, "l": {}, "o": [], "q": 14}]
    assert agg(db.c, _redact(2)) == [{"_id": 1, "level": 1, "h": {"level": 2}, "l": {}, "o": [], "q": 14}]
    b3 = {"level": 3, "c": 5, "d": [{"level": 1, "e": 4}, {"f": 6}, "NOT AN OBJECT!!11!", [2, 3, 4, {"level": 1, "r": 11}]]}
    assert agg(db.c, _redact(3)) == [{"_id": 1, "level": 1, "b": b3, "h": {"level": 2}, "l": {"m": {"level": 3, "n": 12}},
                                      "o": [], "q": 14}]
    assert agg(db.c, _redact(4)) == [
        {"_id": 1, "level": 1, "b": b3, "h": {"level": 2, "i": {"level": 4, "j": {"level": 1, "k": 8}}},
         "l": {"m": {"level": 3, "n": 12}}, "o": [], "q": 14}, {"_id": 2, "level": 4}]
    assert agg(db.c, _redact(5)) == [_REDACT_DOC, {"_id": 2, "level": 4}]
    assert agg(db.c, [{"$redact": "$$PRUNE"}]) == []
    assert agg(db.c, [{"$redact": "$$KEEP"}]) == list(db.c.find())
    assert agg(db.c, [{"$redact": "$$DESCEND"}]) == list(db.c.find())


def test_redact_keep(db):
    """redact.js 'test $$KEEP': a kept document is kept whole."""
    doc = {"_id": 1, "level": 2, "b": {"level": 3, "c": 2}, "d": {"level": 1, "e": 8}, "f": 9}
    db.c.insert_one(doc)
    assert agg(db.c, _redact(1, "$$KEEP")) == []
    assert agg(db.c, _redact(2, "$$KEEP")) == [doc]
    assert agg(db.c, _redact(3, "$$KEEP")) == [doc]


def test_redact_root_and_collation(db):
    """root_redact.js ($$ROOT inside a descent) and collation_redact.js (the collation compares the
    expression's strings, not the KEEP/PRUNE/DESCEND values)."""
    big = "X" * 1024
    doc = {"_id": 0, "d": True, "sub": {"d": False, "str": big}, "str": big}
    db.c.insert_one(doc)
    assert agg(db.c, [{"$redact": {"$cond": {"if": "$d", "then": "$$DESCEND",
                                             "else": {"$cond": {"if": {"$objectToArray": "$$ROOT"}, "then": "$$KEEP",
                                                                "else": "$$PRUNE"}}}}}]) == [doc]
    db.c.drop()
    db.c.insert_one({"a": "a"})
    ci = {"locale": "en_US", "strength": 2}
    assert agg(db.c, [{"$redact": {"$cond": [{"$eq": ["A", "a"]}, "$$PRUNE", "$$KEEP"]}}], collation=ci) == []
    assert len(agg(db.c, [{"$redact": "$$KEEP"}, {"$match": {"a": "A"}}], collation=ci)) == 1
    for value in ("KEEP", "PRUNE", "REDACT"):
        agg_fails(db.c, [{"$redact": value}], 17053, collation=ci)


# --------------------------------------------------------------------------------------------------
# sample/, count.js, $skip / $limit / $sort / $sortByCount
# --------------------------------------------------------------------------------------------------

def test_sample_sizes_and_errors(db):
    """sample/agg_sample.js (SERVER-533); size 0 is valid in 7.0 (refused only from 8.1)."""
    assert agg(db.c, [{"$sample": {"size": 10}}]) == []
    db.c.insert_many([{"_id": i} for i in range(3)])
    for size in (1, 3, 4):
        res = agg(db.c, [{"$sample": {"size": size}}])
        assert len(res) == min(size, 3) and len({d["_id"] for d in res}) == len(res)
    assert len(agg(db.c, [{"$sample": {"size": 3}}, {"$sample": {"size": 1}}])) == 1
    assert agg(db.c, [{"$sample": {"size": 0}}]) == []
    for spec, code in (("string", 28745), ({"size": "string"}, 28746), ({"size": -1}, 28747),
                       ({"unknownOpt": True}, 28748), ({}, 28749)):
        agg_fails(db.c, [{"$sample": spec}], code)


def test_count_stage(db):
    """count.js (7.0: '_id' is a valid count field; 8.1 refuses it)."""
    for spec, code in ((1, 40156), ("", 40157), ("$x", 40158), ("te\x00st", 40159), ("test.string", 40160)):
        agg_fails(db.c, [{"$count": spec}], code)
    assert agg(db.c, [{"$count": "_id"}]) == []
    db.c.insert_many([{"a": i, "condition": i % 2} for i in range(1000)])
    assert agg(db.c, [{"$count": "test"}]) == [{"test": 1000}]
    assert agg(db.c, [{"$count": "_id"}]) == [{"_id": 1000}]
    assert agg(db.c, [{"$match": {"condition": 1}}, {"$count": "quantity"}]) == [{"quantity": 500}]


@pytest.mark.parametrize("stage, code", [
    ({"$skip": -1}, 15956), ({"$skip": "a"}, 15972), ({"$skip": 1.5}, 5107200), ({"$skip": math.nan}, 5107200),
    ({"$skip": 2.0**63}, 5107200), ({"$limit": 0}, 15958), ({"$limit": -1}, 15958), ({"$limit": 1.5}, 2107201),
    ({"$limit": "a"}, 15957), ({"$limit": 2.0**63}, 2107201), ({"$sort": 1}, 15973), ({"$sort": {}}, 15976),
    ({"$sort": {"a": 0}}, 15975), ({"$sort": {"a": "x"}}, 15974),  # (mongod: "Illegal key in $sort specification") ({"$sort": {"$a": 1}}, 16410),
    ({"$sort": {"": 1}}, 40352), ({"$sortByCount": "y"}, 40148), ({"$sortByCount": {}}, 40147),
    ({"$sortByCount": {"a": 1}}, 40147), ({"$sortByCount": 1}, 40149), ({"$sortByCount": ["$a"]}, 40149), ({"$match": 1}, 15959), ({"$match": {"$where": "1"}}, BAD_VALUE),
])
def test_simple_stage_spec_errors(db, stage, code):
    agg_fails(db.c, [stage], code)


@HYPOTHESIS
@given(n=st.integers(0, 30), skip=st.integers(0, 35), limit=st.integers(1, 35))
def test_skip_limit_window(db, n, skip, limit):
    """$skip then $limit (and $limit then $skip) cut the sorted input like list slices."""
    db.c.drop()
    if n:
        db.c.insert_many([{"_id": i} for i in range(n)])
    assert ids(agg(db.c, [{"$sort": {"_id": 1}}, {"$skip": skip}, {"$limit": limit}])) == list(range(n))[skip:skip + limit]
    assert ids(agg(db.c, [{"$sort": {"_id": -1}}, {"$limit": limit}, {"$skip": skip}])) == \
        list(range(n))[::-1][:limit][skip:]


@HYPOTHESIS
@given(values=st.lists(st.one_of(st.none(), st.integers(0, 4), st.sampled_from(["x", "y"])), max_size=25))
def test_sort_by_count_counts_groups(db, values):
    """$sortByCount is $group by the value with a count, sorted by the count descending."""
    db.c.drop()
    if values:
        db.c.insert_many([{"v": v} for v in values])
    res = agg(db.c, [{"$sortByCount": "$v"}])
    assert [d["count"] for d in res] == sorted((d["count"] for d in res), reverse=True)
    assert Counter({canon(d["_id"]): d["count"] for d in res}) == Counter(canon(v) for v in values)


# --------------------------------------------------------------------------------------------------
# bucket/, bucketauto/
# --------------------------------------------------------------------------------------------------

def test_bucket_follows_the_collation(db):
    """bucket/collation_bucket.js: boundaries, their order and the default bucket under a collation."""
    numeric = {"locale": "en_US", "numericOrdering": True}

    def insert():
        db.c.insert_many([{"num": s} for s in ("1", "2", "5", "10", "20", "50", "100", "200", "500")])

    insert()
    bucket = {"$bucket": {"groupBy": "$num", "boundaries": ["1", "10", "100", "1000"]}}
    expected = [{"_id": "1", "count": 3}, {"_id": "10", "count": 3}, {"_id": "100", "count": 3}]
    assert agg(db.c, [bucket], collation=numeric) == expected
    db.c.drop()
    db.create_collection("c", collation=numeric)
    insert()
    assert agg(db.c, [bucket]) == expected
    agg_fails(db.c, [bucket], collation={"locale": "simple"})
    agg_fails(db.c, [{"$bucket": {"groupBy": "$num", "boundaries": ["100", "20", "4"]}}])
    agg_fails(db.c, [{"$bucket": {"groupBy": "$num", "boundaries": ["4", "20", "100"]}}], collation={"locale": "simple"})
    agg_fails(db.c, [{"$bucket": {"groupBy": "$num", "boundaries": ["1", "10", "100"], "default": "40"}}])
    agg_fails(db.c, [{"$bucket": {"groupBy": "$num", "boundaries": ["100", "999"], "default": "2"}}],
              collation={"locale": "simple"})
    assert agg(db.c, [{"$bucket": {"groupBy": "$num", "boundaries": ["1", "19999"], "default": "2"}}],
               collation={"locale": "simple"}) == [{"_id": "1", "count": 3}, {"_id": "2", "count": 6}]


def test_bucket_default_bucket_sorts_among_the_others(db):
    """bucket/collation_bucket.js: the default bucket "2" comes before "100" under numeric ordering."""
    db.create_collection("c", collation={"locale": "en_US", "numericOrdering": True})
    db.c.insert_many([{"num": s} for s in ("1", "2", "5", "10", "20", "50", "100", "200", "500")])
    assert agg(db.c, [{"$bucket": {"groupBy": "$num", "boundaries": ["100", "999"], "default": "2"}}]) == [
        {"_id": "2", "count": 6}, {"_id": "100", "count": 3}]


def test_bucket_auto_granularity_near_zero(db):
    """bucketauto/granularity_near_zero.js (SERVER-57091)."""
    db.c.insert_one({})
    res = agg(db.c, [{"$bucketAuto": {"groupBy": {"$reduce": {"input": [], "initialValue": 4.940656484124654e-324,
                                                              "in": {"$size": ["$$value"]}}},
                                      "buckets": Int64(8), "granularity": "R80"}}])
    assert res == [{"_id": {"min": 0, "max": 1.02e-321}, "count": 1}]


# --------------------------------------------------------------------------------------------------
# densify/parse.js, fill/fill_parse.js
# --------------------------------------------------------------------------------------------------

D1, D2 = dt.datetime(2020, 1, 1), dt.datetime(2020, 1, 2)


def _densify(**spec):
    return [{"$densify": spec}]


@pytest.mark.parametrize("pipeline, code", [
    ([{"$densify": 1}], FAILED_TO_PARSE),
    (_densify(field="a", range={"step": 1.0}), IDL_FAILED_TO_PARSE),
    (_densify(range={"step": 1.0, "bounds": "full"}), IDL_FAILED_TO_PARSE),
    (_densify(field="a", range={"bounds": "full"}), IDL_FAILED_TO_PARSE),
    (_densify(field=1.0, range={"step": 1.0, "bounds": "full"}), TYPE_MISMATCH),
    (_densify(field="a", range={"step": "invalid", "bounds": "full"}), TYPE_MISMATCH),
    (_densify(field="a", partitionByFields="incorrect", range={"step": 1.0, "bounds": "full"}), TYPE_MISMATCH),
    (_densify(field="a", range={"step": 1.0, "bounds": [D1, D2], "unit": 1000}), TYPE_MISMATCH),
    (_densify(field="a", range={"step": 1.0, "bounds": [D1], "unit": "second"}), 5733403),
    (_densify(field="a", range={"step": 1.0, "bounds": [0.0, 1.0, 2.0]}), 5733403),
    (_densify(field="a", range={"step": -1.0, "bounds": [0.0, 1.0]}), 5733401),
    (_densify(field="$a", range={"step": 1.0, "bounds": [0.0, 1.0]}), 16410),
    (_densify(field="a", partitionByFields=["$b"], range={"step": 1.0, "bounds": [0.0, 1.0]}), 16410),
    (_densify(field="a", partitionByFields=[], range={"step": 1.0, "bounds": "partition"}), 5733408),
    (_densify(field="a", range={"step": 1.0, "bounds": "partition"}), 5733408),
    (_densify(field="a", range={"step": 1.0, "bounds": [2.0, 1.0]}), 5733402),
    (_densify(field="a", range={"step": 1.0, "bounds": [D2, D1], "unit": "second"}), 5733402),
    (_densify(field="a", range={"step": 1.0, "bounds": [1.0, 2.0], "unit": "second"}), 5733409),
    (_densify(field="a", range={"step": 1.0, "bounds": [1.0, D1]}), 5733406),
    (_densify(field="a", range={"step": 1.0, "bounds": [D1, 1.0], "unit": "second"}), 5733402),
    (_densify(field="a", range={"step": 1.1, "bounds": [D1, D2], "unit": "second"}), 6586400),
    (_densify(field="a", range={"step": 1.0, "bounds": [D1, D2]}), 5733410),
    (_densify(field="a", range={"step": 1.0, "bounds": ["a", "b"]}), 5946800),
    (_densify(field="a", range={"step": 1.0, "bounds": "x"}), 5946802),
    (_densify(field="a", range={"step": 1.0, "bounds": 5}), 5733404),
    pytest.param(_densify(field="a", range={"step": 1.0, "bounds": [0, 3]}), 5876900, id="densify-mixed-types"),
    pytest.param(_densify(field="val", range={"step": 0.1, "bounds": [Decimal128(".1"), Decimal128(".9")]}),
                 5876900, id="densify-decimal-bounds-double-step"),
    (_densify(field="a", range={"step": 1.0, "bounds": [0.0, 3.0], "x": 1}), IDL_UNKNOWN_FIELD),
    (_densify(field="a", range={"step": 1.0, "bounds": [0.0, 3.0]}, x=1), IDL_UNKNOWN_FIELD),
    (_densify(field="a", range={"step": 1, "bounds": [D1, D2], "unit": "parsec"}), FAILED_TO_PARSE),
    (_densify(field="a", range=5), TYPE_MISMATCH),
], ids=lambda v: str(v)[:80])
def test_densify_parse_errors(db, pipeline, code):
    """densify/parse.js (libs/parse_util.js), with mongod 7.0's RangeStatement::parse."""
    agg_fails(db.densify_parse, pipeline, code)


@pytest.mark.parametrize("spec", [
    {"field": "a", "range": {"step": 1.0, "bounds": [1.0, 2.0]}},
    {"field": "a", "range": {"step": 1.0, "bounds": [D1, dt.datetime(2021, 1, 1)], "unit": "day"}},
    {"field": "a", "partitionByFields": ["b", "c"], "range": {"step": 1.0, "bounds": [D1, dt.datetime(2021, 1, 1)],
                                                              "unit": "week"}},
    {"field": "a", "partitionByFields": ["b", "c"], "range": {"step": 1.0, "bounds": "partition", "unit": "second"}},
    {"field": "a", "partitionByFields": ["b", "c"], "range": {"step": 1.0, "bounds": "full", "unit": "second"}},
    {"field": "a", "partitionByFields": ["b", "c"], "range": {"step": 1.0, "bounds": "full"}},
    {"field": "a", "partitionByFields": ["b"], "range": {"step": 1.0, "bounds": "partition"}},
    {"field": "a", "range": {"step": 1.0, "bounds": "full"}},
], ids=lambda v: str(v)[:80])
def test_densify_parse_valid(db, spec):
    """densify/parse.js 'Positive test cases'."""
    agg(db.densify_parse, [{"$densify": spec}])


@HYPOTHESIS
@given(values=st.lists(st.integers(-20, 20), min_size=1, max_size=8, unique=True), step=st.integers(1, 5))
def test_densify_full_range_matches_reference(db, values, step):
    """$densify with 'full' bounds: the grid min + k*step up to the maximum fills the gaps (existing
    values are not generated again), all in field order."""
    db.c.drop()
    db.c.insert_many([{"a": v} for v in values])
    lo, hi = min(values), max(values)
    expected = sorted(set(values) | set(range(lo, hi + 1, step)))
    res = agg(db.c, [{"$densify": {"field": "a", "range": {"step": step, "bounds": "full"}}}, {"$project": {"_id": 0}}])
    assert [d["a"] for d in res] == expected


@pytest.mark.parametrize("stage, code", [
    ({"$fill": "test"}, FAILED_TO_PARSE), ({"$fill": {}}, IDL_FAILED_TO_PARSE), ({"$fill": {"output": {}}}, 6050203),
    ({"$fill": {"output": {"test": {"method": "random"}}}}, 6050202), ({"$fill": {"output": {"test": "random"}}}, 6050200),
    ({"$fill": {"output": {"test": {"method": "locf", "second": "locf"}}}}, IDL_UNKNOWN_FIELD),
    ({"$fill": {"output": {"test": {"method": "locf"}}, "partitionBy": {"test": "$test"},
                "partitionByFields": ["$test"]}}, 6050204),
    ({"$fill": {"output": {"test": {"method": "linear"}}, "partitionBy": {"part": "$part", "partTwo": "$partTwo"}}}, 605001),
    ({"$fill": {"output": {"test": {"method": "locf", "value": 1}}}}, 6050201),
    ({"$fill": {"output": 1}}, TYPE_MISMATCH), ({"$fill": {"output": {"t": {"value": 1}}, "sortBy": 1}}, TYPE_MISMATCH),
    ({"$fill": {"output": {"t": {"value": 1}}, "partitionByFields": "a"}}, TYPE_MISMATCH),
], ids=lambda v: str(v)[:80])
def test_fill_parse_errors(db, stage, code):
    """fill/fill_parse.js, with mongod's FillSpec IDL types."""
    agg_fails(db.c, [stage], code)


def test_fill_value_and_locf(db):
    """fill/fill_parse.js desugaring, observed through results: value -> $ifNull, method -> $locf."""
    db.c.insert_many([{"_id": 1, "key": 1, "val": 5, "part": 1}, {"_id": 2, "key": 2, "part": 1},
                      {"_id": 3, "key": 3, "val": None, "part": 2, "test": "t"}])
    res = agg(db.c, [{"$fill": {"output": {"val": {"value": "$test"}}}}])
    assert [d.get("val") for d in res] == [5, None, "t"]
    res = agg(db.c, [{"$fill": {"sortBy": {"key": 1}, "output": {"val": {"method": "locf"}}}}])
    assert [d["val"] for d in res] == [5, 5, 5]
    res = agg(db.c, [{"$fill": {"sortBy": {"key": 1}, "partitionByFields": ["part"], "output": {"val": {"method": "locf"}}}}])
    assert [(d["_id"], d.get("val")) for d in res] == [(1, 5), (2, 5), (3, None)]


# --------------------------------------------------------------------------------------------------
# addFields/, $project, $unset
# --------------------------------------------------------------------------------------------------

_DOTTED_INIT = {"_id": 1, "arrayField": [1, {"subField": [2, {}]}, [1]], "objField": {"p": {"q": 1}, "subArr": [1]},
                "otherField": "value"}
_NESTED_VALUE = {"newSubObj": [{"p": "newValue"}]}


@pytest.mark.parametrize("spec, changes", [
    ({"objField.subArr": "newValue"}, {"objField": {"p": {"q": 1}, "subArr": "newValue"}}),
    ({"objField.subArr": {"$literal": "newValue"}}, {"objField": {"p": {"q": 1}, "subArr": "newValue"}}),
    ({"objField.newSubPath.b": "newValue"},
     {"objField": {"p": {"q": 1}, "subArr": [1], "newSubPath": {"b": "newValue"}}}),
    ({"objField.newSubPath.b": _NESTED_VALUE}, {"objField": {"p": {"q": 1}, "subArr": [1], "newSubPath": {"b": _NESTED_VALUE}}}),
    ({"objField.newSubPath.b": {"$literal": _NESTED_VALUE}},
     {"objField": {"p": {"q": 1}, "subArr": [1], "newSubPath": {"b": _NESTED_VALUE}}}),
    ({"newField.newSubPath.b": "newValue"}, {"newField": {"newSubPath": {"b": "newValue"}}}),
    ({"newField.newSubPath.b": _NESTED_VALUE}, {"newField": {"newSubPath": {"b": _NESTED_VALUE}}}),
    ({"arrayField.newSubPath.b": "newValue"},
     {"arrayField": [{"newSubPath": {"b": "newValue"}}, {"subField": [2, {}], "newSubPath": {"b": "newValue"}},
                     [{"newSubPath": {"b": "newValue"}}]]}),
    ({"arrayField.subField.b": _NESTED_VALUE},
     {"arrayField": [{"subField": {"b": _NESTED_VALUE}}, {"subField": [{"b": _NESTED_VALUE}, {"b": _NESTED_VALUE}]},
                     [{"subField": {"b": _NESTED_VALUE}}]]}),
    ({"otherField": {}}, {"otherField": {}}),
    ({"otherField": {"$literal": {}}}, {"otherField": {}}),
    ({"otherField": {"b": {}}}, {"otherField": {"b": {}}}),
    ({"otherField": []}, {"otherField": []}),
    ({"newField": {}}, {"newField": {}}),
], ids=lambda v: str(v)[:60])
def test_add_fields_dotted_paths_and_empty_objects(db, spec, changes):
    """addFields/dotted_paths.js and addFields/empty_objs.js."""
    db.c.insert_one(_DOTTED_INIT)
    assert agg(db.c, [{"$addFields": spec}]) == [{**_DOTTED_INIT, **changes}]


def test_add_fields_after_projection_of_array_subfield(db):
    """addFields/add_fields_adds_to_missing_fields.js: scalars removed by a projection stay removed."""
    db.c.insert_one({"_id": 0, "array": [1, 2, {"m1": "str"}]})
    group = {"$group": {"_id": None, "array": {"$first": "$array"}}}
    assert agg(db.c, [group, {"$project": {"_id": 0, "array.m1": 1}}, {"$addFields": {"array.m2": "what?"}}]) == [
        {"array": [{"m1": "str", "m2": "what?"}]}]
    assert agg(db.c, [group, {"$project": {"_id": 0, "array.m1": 1}}]) == [{"array": [{"m1": "str"}]}]
    assert agg(db.c, [group, {"$addFields": {"array.m2": "what?"}}]) == [
        {"_id": None, "array": [{"m2": "what?"}, {"m2": "what?"}, {"m1": "str", "m2": "what?"}]}]


def test_project_computed_field_in_array_replaces_scalars(db):
    """addFields/add_fields_adds_to_missing_fields.js queryProjectWithExpression."""
    db.c.insert_one({"_id": 0, "array": [1, 2, {"m1": "str"}]})
    group = {"$group": {"_id": None, "array": {"$first": "$array"}}}
    assert agg(db.c, [group, {"$project": {"_id": 0, "array.m1": 1, "array.m2": "what?"}}]) == [
        {"array": [{"m2": "what?"}, {"m2": "what?"}, {"m1": "str", "m2": "what?"}]}]


_INDEPENDENCE_DOCS = st.fixed_dictionaries({}, optional={
    "x": st.one_of(st.integers(0, 1), st.just({}), st.just([]), st.just([0]), st.just([{}])),
    "y": st.one_of(st.none(), st.integers(6, 7)),
    "a": st.one_of(st.integers(0, 3), st.just({}), st.just({"x": 0}), st.just({"x": 0, "y": 7}), st.just({"y": 6}),
                   st.lists(st.one_of(st.integers(0, 3), st.just({}), st.just({"x": 0, "y": 7}), st.just({"y": 7})),
                            max_size=3)),
})


@HYPOTHESIS
@given(doc=_INDEPENDENCE_DOCS)
def test_add_fields_independent_of_later_stages(db, doc):
    """addFields/independence.js (7.0 part): stages on paths $addFields leaves alone give the same
    result in either order."""
    # (the jstest's {"a.y": null} pairs need 8.0's null semantics: in 7.0 {"a.y": null} does not match
    # {a: [0]} but matches it once $addFields made it {a: [{x: 5}]}, so they are left out)
    pairs = [({"$addFields": {"x": 5}}, {"$match": {"y": None}}),
             ({"$addFields": {"a.x": 5}}, {"$match": {"a.y": 7}}),
             ({"$addFields": {"a.x": 5}}, {"$addFields": {"result": "$a.y"}})]
    for one, two in pairs:
        assert db_aggregate(db, [{"$documents": [doc]}, one, two]) == \
            db_aggregate(db, [{"$documents": [doc]}, two, one]), (one, two)


def test_add_fields_dependent_numeric_path(db):
    """addFields/independence.js: 'a.0' and 'a.x' both reach a[0].x, so the order matters."""
    first = db_aggregate(db, [{"$documents": [{"a": [3]}]}, {"$addFields": {"a.x": 5}}, {"$match": {"a.0": 3}}])
    second = db_aggregate(db, [{"$documents": [{"a": [3]}]}, {"$match": {"a.0": 3}}, {"$addFields": {"a.x": 5}}])
    assert first != second
    assert first == []


@pytest.mark.parametrize("stage, code, message", [
    ({"$project": 1}, 15969, "$project specification must be an object"),
    ({"$project": {}}, 51272, "Invalid $project :: caused by :: projection specification must have at least one field"),
    ({"$project": {"a": 1, "b": 0}}, 31254, "Invalid $project :: caused by :: Cannot do exclusion on field b in "
                                            "inclusion projection"),
    ({"$project": {"a": 1, "a.b": 1}}, 31249, "Invalid $project :: caused by :: Path collision at a.b remaining "
                                              "portion b"),
    ({"$project": {"$a": 1}}, 16410, None), ({"$project": {"a.$b": 1}}, 16410, None),
    ({"$project": {"a": {"$bad": 1}}}, 31325, "Invalid $project :: caused by :: Unknown expression $bad"),
    ({"$addFields": 1}, 40272, None), ({"$addFields": {"$a": 1}}, 16410, None),
    ({"$addFields": {"a.$b": 1}}, 16410, None), ({"$set": {"a..b": 1}}, 15998, None), ({"$addFields": {"": 1}}, 40352, None),
    ({"$addFields": {"a": {"$bad": 1}}}, 168, "Invalid $addFields :: caused by :: Unrecognized expression '$bad'"),
    ({"$unset": 1}, 31002, "$unset specification must be a string or an array"),
    ({"$unset": []}, 31119, "$unset specification must be a string or an array with at least one field"),
    ({"$unset": [1]}, 31120, "$unset specification must be a string or an array containing only string values"),
    ({"$unset": ""}, 40352, "Invalid $unset :: caused by :: FieldPath cannot be constructed with empty string"),
    ({"$unset": "$a"}, 16410, None),
], ids=lambda v: str(v)[:50])
def test_projection_stage_errors(db, stage, code, message):
    """mongod 7.0 parses $project/$addFields/$set/$unset specifications under 'Invalid <stage>'."""
    err = agg_fails(db.c, [stage], code)
    if message is not None:
        assert err.details["errmsg"] == message


# --------------------------------------------------------------------------------------------------
# graphLookup/ basic.js, filter.js, missing_fields.js, variables.js
# --------------------------------------------------------------------------------------------------

def _neighbors_lookup(**extra):
    return {"$graphLookup": {"from": "foreign", "startWith": "$starting", "connectFromField": "neighbors",
                             "connectToField": "_id", "as": "integers", **extra}}


def test_graph_lookup_basic(db):
    """graphLookup/basic.js: missing collections, the whole chain, maxDepth, startWith expressions
    and arrays, a missing connectFromField, cycles, depthField."""
    basic = {"$graphLookup": {"from": "foreign", "startWith": "$starting", "connectFromField": "from",
                              "connectToField": "to", "as": "results"}}
    assert agg(db.local, [basic]) == []
    db.foreign.insert_one({})
    assert agg(db.local, [basic]) == []
    db.foreign.drop()
    db.local.insert_one({"_id": 0})
    assert agg(db.local, [basic]) == [{"_id": 0, "results": []}]
    db.local.drop()
    db.foreign.insert_many([{"_id": i, "neighbors": [i - 1, i + 1]} for i in range(100)])
    db.local.insert_one({"starting": 50})
    assert len(agg(db.local, [_neighbors_lookup()])[0]["integers"]) == 100
    assert len(agg(db.local, [_neighbors_lookup(maxDepth=5)])[0]["integers"]) == 11
    res = agg(db.local, [_neighbors_lookup(startWith={"$add": ["$starting", 3]}, maxDepth=0)])[0]["integers"]
    assert ids(res) == [53]
    assert len(agg(db.local, [_neighbors_lookup(startWith={"$literal": [1, 2, 3]}, maxDepth=0)])[0]["integers"]) == 3
    db.foreign.delete_one({"_id": 51})
    db.foreign.insert_many([{"_id": 51}, {"_id": None, "neighbors": [50, 52]}])
    # No recursion through the missing connectFromField of 51 (it must not look up null).
    assert len(agg(db.local, [_neighbors_lookup()])[0]["integers"]) == 52
    db.foreign.delete_many({"_id": {"$in": [None, 51]}})
    db.foreign.insert_one({"_id": 51, "neighbors": [50, 52]})
    db.foreign.update_one({"_id": 99}, {"$set": {"neighbors": [98, 0]}})
    db.foreign.update_one({"_id": 0}, {"$set": {"neighbors": [99, 1]}})
    assert len(agg(db.local, [_neighbors_lookup()])[0]["integers"]) == 100
    res = agg(db.local, [_neighbors_lookup(depthField="distance")])[0]["integers"]
    assert len(res) == 100
    assert all(n["distance"] == abs(50 - n["_id"]) and type(n["distance"]) is Int64 for n in res)


def test_graph_lookup_restrict_search_with_match(db):
    """graphLookup/filter.js (SERVER-24714): the filter bounds the search, also through $expr and
    variables of an enclosing $lookup."""
    db.foreign.insert_many([{"_id": i, "neighbors": [i - 1, i + 1]} for i in range(100)])
    db.local.insert_one({"starting": 0})
    assert len(agg(db.local, [_neighbors_lookup(restrictSearchWithMatch={"_id": {"$lt": 10}})])[0]["integers"]) == 10
    assert agg(db.local, [_neighbors_lookup(restrictSearchWithMatch={"_id": {"$gt": 10}})])[0]["integers"] == []
    db.foreign.drop()
    db.foreign.insert_many([{"from": 0, "to": 1, "shouldBeIncluded": True}, {"from": 1, "to": 2, "shouldBeIncluded": False},
                            {"from": 2, "to": 3, "shouldBeIncluded": True}])
    chain = {"from": "foreign", "startWith": "$starting", "connectFromField": "to", "connectToField": "from",
             "as": "results"}
    for restrict in ({"shouldBeIncluded": True}, {"$expr": {"$eq": ["$shouldBeIncluded", True]}}):
        res = agg(db.local, [{"$graphLookup": {**chain, "restrictSearchWithMatch": restrict}}])
        assert len(res[0]["results"]) == 1
    res = agg(db.local, [{"$lookup": {"from": "local", "let": {"foo": True}, "pipeline": [{"$graphLookup": {
        **chain, "restrictSearchWithMatch": {"$expr": {"$eq": ["$shouldBeIncluded", "$$foo"]}}}}], "as": "array"}}])
    assert len(res[0]["array"][0]["results"]) == 1


def test_graph_lookup_missing_and_null_values(db):
    """graphLookup/missing_fields.js: null finds null only (not missing), a missing start finds nothing."""
    db.c.insert_many([{"_id": 0, "x": 1, "y": 1}, {"_id": 1, "x": 1, "y": None}, {"_id": 2, "x": 1, "y": 1},
                      {"_id": 3, "x": 1}])
    lookup = {"from": "c", "connectFromField": "x", "connectToField": "y", "as": "arr", "maxDepth": 0}
    res = {d["_id"]: sorted(ids(d["arr"])) for d in agg(db.c, [{"$graphLookup": {**lookup, "startWith": "$y"}}])}
    assert res == {0: [0, 2], 1: [1], 2: [0, 2], 3: []}
    res = {d["_id"]: ids(d["arr"]) for d in agg(db.c, [{"$graphLookup": {**lookup, "startWith": None}}])}
    assert res == {0: [1], 1: [1], 2: [1], 3: [1]}
    db.c.drop()
    db.c.insert_many([{"_id": 0, "x": 1, "y": 1}, {"_id": 1, "x": 2}, {"_id": 3, "x": 1}])
    res = {d["_id"]: ids(d["arr"]) for d in agg(db.c, [{"$graphLookup": {**lookup, "startWith": "$y"}}])}
    assert res == {0: [0], 1: [], 3: []}


def test_graph_lookup_uses_variables_of_an_enclosing_lookup(db):
    """graphLookup/variables.js."""
    db.graph_lookup_var_foreign.insert_one({"from": "b", "to": "a", "_id": 0})
    db.graph_lookup_var_local.insert_one({})
    gl = {"$graphLookup": {"from": "graph_lookup_var_foreign", "startWith": "$$var1", "connectFromField": "from",
                           "connectToField": "to", "as": "resultsFromGraphLookup"}}
    res = agg(db.graph_lookup_var_local, [{"$lookup": {"from": "graph_lookup_var_local", "let": {"var1": "a"},
                                                       "pipeline": [gl], "as": "resultsFromLookup"}}])
    assert len(res) == 1 and len(res[0]["resultsFromLookup"]) == 1
    assert res[0]["resultsFromLookup"][0]["resultsFromGraphLookup"] == [{"_id": 0, "from": "b", "to": "a"}]


# --------------------------------------------------------------------------------------------------
# project/, sort/, match/, unwind sort and skip
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("projection, code", [
    ({"x": {"$add": [1]}, "x.b": 1}, 31249), ({"x.b": 1, "x": {"$add": [1]}}, 31250),
    ({"x": {"b": 1}, "x.b": 1}, 31250), ({"x.b": 1, "x": {"b": 1}}, 31250),
])
def test_project_subfield_of_an_existing_expression(db, projection, code):
    """project/error_project_subfield_with_existing_expr.js (SERVER-6177)."""
    db.c.insert_one({})
    agg_fails(db.c, [{"$project": projection}], code)


def test_project_inclusion_accepts_all_numeric_types(db):
    """project/inclusion_accepts_all_numeric_types.js."""
    db.c.insert_one({"key": 4, "v": 3, "x": 2})
    assert agg(db.c, [{"$project": {"_id": 0, "key": Int64(1), "v": 1.0, "x": 1}}]) == [{"key": 4, "v": 3, "x": 2}]


def test_project_nested_and_dotted_with_a_common_prefix(db):
    """project/nested_dotted_common_prefix.js (SERVER-6184): computed fields in specification order."""
    db.c.insert_one({"a": "missing", "b": {"c": "bar", "a": "baz", "z": "not there"}})
    for projection in ({"_id": 0, "b": {"a": 1}, "b.c": 1}, {"_id": 0, "b.c": 1, "b": {"a": 1}}):
        assert agg(db.c, [{"$project": projection}]) == [{"b": {"c": "bar", "a": "baz"}}]
    one = {"$add": [1]}
    assert agg(db.c, [{"$project": {"_id": 0, "A.Z": one, "A": {"Y": one, "A": one}, "A.B": one}}]) == [
        {"A": {"Z": 1, "Y": 1, "A": 1, "B": 1}}]


def test_project_missing_subpath(db):
    """project/handle_missing_subpath.js (SERVER-6127)."""
    db.c.insert_many([{"_id": 0, "a": 1}, {"_id": 1, "foo": 2}, {"_id": 2, "foo": {"bar": 3}}])
    res = agg(db.c, [{"$sort": {"_id": 1}}, {"$project": {"_id": 0, "foo.bar": 1, "field": "$foo", "path": "$foo.bar"}}])
    assert res == [{}, {"field": 2}, {"foo": {"bar": 3}, "field": {"bar": 3}, "path": 3}]


def test_exclusion_projection_keeps_field_order(db):
    """project/exclusion_projection_does_not_affect_field_order.js (SERVER-37791)."""
    db.c.insert_many([{"_id": 1}, {"_id": 2, "c": 1}, {"_id": 3, "y": 1, "z": 1}])
    res = agg(db.c, [{"$project": {"b": 0, "c": 0}}, {"$addFields": {"x": 3, "y": 4, "b": 5, "c": 6, "a": 7}},
                     {"$sort": {"_id": 1}}])
    assert [list(d.items()) for d in res] == [
        [("_id", 1), ("x", 3), ("y", 4), ("b", 5), ("c", 6), ("a", 7)],
        [("_id", 2), ("x", 3), ("y", 4), ("b", 5), ("c", 6), ("a", 7)],
        [("_id", 3), ("y", 4), ("z", 1), ("x", 3), ("b", 5), ("c", 6), ("a", 7)]]
    db.c.insert_one({"_id": 4, "c": {"y": 11, "z": 22, "a": 33}, "a": 1})
    assert agg(db.c, [{"$project": {"c.z": 0}}, {"$sort": {"_id": 1}}]) == [
        {"_id": 1}, {"_id": 2, "c": 1}, {"_id": 3, "y": 1, "z": 1}, {"_id": 4, "c": {"y": 11, "a": 33}, "a": 1}]


@pytest.mark.parametrize("projection, expected", [
    ({"a": {"$literal": "newValue"}, "_id": 0}, [{"a": "newValue"}]),
    pytest.param({"a.b": {"$literal": "newValue"}, "_id": 0},
                 [{"a": [{"b": "newValue"}, {"b": "newValue"}, {"b": "newValue"}, {"b": "newValue"}]}], id="a.b"),
    pytest.param({"a.b.c": {"$literal": "newValue"}, "_id": 0},
                 [{"a": [{"b": {"c": "newValue"}}, {"b": {"c": "newValue"}}, {"b": {"c": "newValue"}},
                         {"b": {"c": "newValue"}}]}], id="a.b.c"),
])
def test_project_dotted_computed_paths(db, projection, expected):
    """project/project_dotted_paths.js (SERVER-26066): $project, unoptimized $project and find agree."""
    db.c.insert_one({"a": [1, {"b": 2}, 3, {}]})
    assert agg(db.c, [{"$project": projection}]) == expected
    assert agg(db.c, [{"$_internalInhibitOptimization": {}}, {"$project": projection}]) == expected
    assert list(db.c.find({}, projection)) == expected


_SORT_TYPES = [MinKey(), None, 1, Int64(2), "3", {}, DBRef("test.c", ObjectId("0102030405060708090A0B0C")), [[]],
               [[1, 2, "a", "B"]], Binary(b"\xef\xbf\xbd"), ObjectId("0102030405060708090A0B0C"), True,
               dt.datetime(1970, 1, 1, 0, 0, 0, 2000), Timestamp(0, 1), Regex("regex"), Code("function() {}"), MaxKey()]


@pytest.mark.parametrize("nest, key, direction", [(False, "a", 1), (True, "a", 1), (True, "a.b", 1), (False, "a", -1),
                                                  (True, "a", -1), (True, "a.b", -1)])
def test_sort_across_all_types(db, nest, key, direction):
    """sort/sort_different_types.js (SERVER-6125): documents come out in BSON type order."""
    docs = [{"_id": i, "a": {"b": v} if nest else v} for i, v in enumerate(_SORT_TYPES)]
    random.Random(6125).shuffle(docs)
    db.c.insert_many(docs)
    order = ids(agg(db.c, [{"$sort": {key: direction}}]))
    assert order == sorted(order, reverse=direction == -1)


def test_sort_arrays_by_their_smallest_element(db):
    """sort/array_sort_key_semantics.js, with and without an index."""
    db.c.insert_many([{"_id": 2, "a": [2, 3]}, {"_id": 3, "a": [2, 4]}, {"_id": 4, "a": [2, 1]}])
    expected = [{"_id": 4, "a": [2, 1]}, {"_id": 2, "a": [2, 3]}, {"_id": 3, "a": [2, 4]}]
    assert agg(db.c, [{"$sort": {"a": 1, "_id": 1}}]) == expected
    db.c.create_index("a")
    assert agg(db.c, [{"$sort": {"a": 1, "_id": 1}}]) == expected


def test_sort_missing_null_and_empty_arrays(db):
    """sort/sort_key_with_missing_fields.js (SERVER-42565, the null/missing half: BSON undefined is
    stored as null by Tidemark): [] sorts before null and missing, which tie."""
    db.c.insert_many([{"_id": 2, "a": None}, {"_id": 3, "a": []}, {"_id": 4}, {"_id": 5}, {"_id": 6, "a": []},
                      {"_id": 7, "a": None}])
    assert ids(agg(db.c, [{"$sort": {"a": 1, "_id": 1}}])) == [3, 6, 2, 4, 5, 7]
    assert ids(agg(db.c, [{"$sort": {"a": -1, "_id": -1}}])) == [7, 5, 4, 2, 6, 3]
    db.c.drop()
    db.c.insert_many([{"_id": 2, "a": [{"b": None}]}, {"_id": 3, "a": [{"b": []}]}, {"_id": 4, "a": [{}]}, {"_id": 5},
                      {"_id": 6, "a": [{"b": []}]}, {"_id": 7, "a": [{"b": None}]}])
    assert ids(agg(db.c, [{"$sort": {"a.b": 1, "_id": 1}}])) == [3, 6, 2, 4, 5, 7]


@pytest.mark.parametrize("stages, count", [
    ([{"$skip": 10}, {"$limit": 5}], 5), ([{"$skip": 7}, {"$skip": 3}, {"$limit": 5}], 5),
    ([{"$skip": 10}, {"$addFields": {"y": 1}}, {"$limit": 5}], 5), ([{"$skip": 10}, {"$group": {"_id": "$y"}}, {"$limit": 5}], 5),
    ([{"$limit": 10}, {"$skip": 5}], 5), ([{"$limit": 7}, {"$limit": 3}, {"$skip": 1}], 2),
    ([{"$limit": 10}, {"$addFields": {"y": 1}}, {"$skip": 5}], 5), ([{"$limit": 10}, {"$group": {"_id": "$y"}}, {"$skip": 5}], 5),
    ([{"$skip": 18}, {"$limit": 5}], 2), ([{"$skip": 11}, {"$skip": 7}, {"$limit": 5}], 2),
    ([{"$skip": 18}, {"$addFields": {"y": 1}}, {"$limit": 5}], 2), ([{"$skip": 18}, {"$group": {"_id": "$y"}}, {"$limit": 5}], 2),
    ([{"$sort": {"x": 1}}, {"$skip": 10}, {"$skip": 8}, {"$limit": 5}], 2),
    ([{"$skip": 5}, {"$limit": 10}, {"$skip": 5}, {"$limit": 4}], 4), ([{"$skip": 7}, {"$skip": 4}, {"$limit": 4}], 4),
    ([{"$sort": {"y": -1}}, {"$skip": 7}, {"$skip": 4}, {"$limit": 4}], 4), ([{"$skip": 7}, {"$skip": 10}, {"$limit": 4}], 3),
    ([{"$sort": {"y": -1}}, {"$skip": 7}, {"$skip": 10}, {"$limit": 4}], 3),
    ([{"$_internalInhibitOptimization": {}}, {"$sort": {"x": 1}}, {"$skip": 10}, {"$skip": 8}, {"$limit": 5}], 2),
    ([{"$_internalInhibitOptimization": {}}, {"$sort": {"y": -1}}, {"$skip": 7}, {"$skip": 10}, {"$limit": 4}], 3),
], ids=lambda v: str(v)[:60])
def test_skip_with_limit(db, stages, count):
    """match/skip_with_limit.js: several $skips and $limits, around $sort, $addFields and $group."""
    db.c.insert_many([{"x": 4, "y": i} for i in range(20)])
    assert len(agg(db.c, [{"$match": {"x": 4}}, *stages])) == count


def test_match_dotted_numeric_path(db):
    """match/dotted_numeric_path.js."""
    db.c.insert_many([{"_id": 1, "quizzes": [{"score": 100}]}, {"_id": 2, "quizzes": [{"score": 200}]}])
    assert agg(db.c, [{"$match": {"quizzes.0.score": {"$gt": 0}}}, {"$count": "count"}]) == [{"count": 2}]


# --------------------------------------------------------------------------------------------------
# lookup/lookup_subpipeline.js
# --------------------------------------------------------------------------------------------------

@pytest.fixture
def subpipeline_colls(db):
    db.lookUp.insert_many([{"_id": i, "x": i} for i in (1, 2, 3)])
    db["from"].insert_many([{"_id": i} for i in (1, 2, 3)])
    return db


def _sub(pipeline, **kw):
    return {"$lookup": {"from": "from", "as": "c", "pipeline": pipeline, **kw}}


def test_lookup_subpipeline_theta_joins(subpipeline_colls):
    """lookup_subpipeline.js: non-equi joins via $match/$expr and $group, a two-level join, and an
    equijoin $match that follows an $addFields."""
    coll = subpipeline_colls.lookUp
    res = agg(coll, [_sub([{"$match": {"$expr": {"$lt": ["$_id", "$$var1"]}}}], let={"var1": "$_id"})])
    assert {d["_id"]: ids(d["c"]) for d in res} == {1: [], 2: [1], 3: [1, 2]}
    res = agg(coll, [_sub([{"$group": {"_id": "$_id", "avg": {"$avg": "$_id"}}}, {"$sort": {"_id": 1}}])])
    assert all(d["c"] == [{"_id": 1, "avg": 1.0}, {"_id": 2, "avg": 2.0}, {"_id": 3, "avg": 3.0}] for d in res)
    res = agg(coll, [_sub([{"$match": {"$expr": {"$eq": ["$_id", "$$var1"]}}},
                           {"$lookup": {"let": {"var2": "$_id"}, "from": "from", "as": "d",
                                        "pipeline": [{"$match": {"$expr": {"$gt": ["$_id", "$$var2"]}}}, {"$sort": {"_id": 1}}]}}],
                          let={"var1": "$_id"})])
    assert by_id(res) == [{"_id": 1, "x": 1, "c": [{"_id": 1, "d": [{"_id": 2}, {"_id": 3}]}]},
                          {"_id": 2, "x": 2, "c": [{"_id": 2, "d": [{"_id": 3}]}]}, {"_id": 3, "x": 3, "c": [{"_id": 3, "d": []}]}]
    res = agg(coll, [_sub([{"$addFields": {"newField": 2}}, {"$match": {"$expr": {"$eq": ["$newField", "$$var1"]}}},
                           {"$project": {"newField": 0}}, {"$sort": {"_id": 1}}], let={"var1": "$x"})])
    assert {d["_id"]: ids(d["c"]) for d in res} == {1: [], 2: [1, 2, 3], 3: []}


def test_lookup_subpipeline_variables_in_nested_pipelines(subpipeline_colls):
    """lookup_subpipeline.js: 'let' variables reach every nested sub-pipeline; shadowing by $let."""
    coll = subpipeline_colls.lookUp
    res = agg(coll, [{"$match": {"_id": 1}}, _sub([
        {"$match": {"_id": 1}},
        {"$lookup": {"from": "from", "as": "join2", "pipeline": [
            {"$match": {"_id": 2}}, {"$addFields": {"letVar1": "$$var1"}},
            {"$lookup": {"from": "from", "as": "join3", "let": {"var3": "XYZ"}, "pipeline": [
                {"$addFields": {"mergedLetVars": {"$concat": ["$$var1", "$$var2", "$$var3"]}}}]}}]}}],
        let={"var1": "ABC", "var2": "123"}, **{"as": "join1"})])
    assert res == [{"_id": 1, "x": 1, "join1": [{"_id": 1, "join2": [{"_id": 2, "letVar1": "ABC", "join3": [
        {"_id": i, "mergedLetVars": "ABC123XYZ"} for i in (1, 2, 3)]}]}]}]
    res = agg(coll, [{"$match": {"_id": 2}}, _sub([
        {"$project": {"shadowedVar": {"$let": {"vars": {"var1": "abc"}, "in": "$$var1"}}, "originalVar": "$$var1"}},
        {"$lookup": {"from": "from", "as": "d", "pipeline": [
            {"$project": {"shadowedVar": {"$let": {"vars": {"var1": "xyz"}, "in": "$$var1"}}, "originalVar": "$$var1"}}]}}],
        let={"var1": "$_id"})])
    inner = [{"_id": i, "shadowedVar": "xyz", "originalVar": 2} for i in (1, 2, 3)]
    assert res == [{"_id": 2, "x": 2, "c": [{"_id": i, "shadowedVar": "abc", "originalVar": 2, "d": inner} for i in (1, 2, 3)]}]


@pytest.mark.parametrize("let", [
    {"var1": 1, "var2": "$$var1"},
    {"var1": {"$let": {"vars": {"var1": 2}, "in": "$$var1"}}, "var2": {"$let": {"vars": {"var1": 4}, "in": "$$var2"}}},
])
def test_lookup_let_cannot_read_its_own_variables(subpipeline_colls, let):
    """lookup_subpipeline.js: a 'let' variable is not defined for the other 'let' expressions (17276)."""
    agg_fails(subpipeline_colls.lookUp, [_sub([], let=let)], 17276)


def test_lookup_subpipeline_variable_paths(subpipeline_colls):
    """lookup_subpipeline.js: a dotted path off a scalar variable is missing; array variables compare
    whole; dotted paths off object variables, $$ROOT and $$CURRENT; an empty sub-pipeline and $unwind."""
    db = subpipeline_colls
    res = agg(db.lookUp, [_sub([{"$match": {"$expr": {"$eq": ["FIELD-IS-NULL", {"$ifNull": ["$$var1.y.z", "FIELD-IS-NULL"]}]}}}],
                               let={"var1": "$x"}), {"$project": {"_id": 0}}, {"$sort": {"x": 1}}])
    assert res == [{"x": i, "c": [{"_id": 1}, {"_id": 2}, {"_id": 3}]} for i in (1, 2, 3)]
    res = agg(db.lookUp, [{"$match": {"_id": 1}}, {"$lookup": {"from": "from", "pipeline": [], "as": "as"}},
                          {"$unwind": "$as"}, {"$match": {"as._id": {"$gt": 2}}}])
    assert res == [{"_id": 1, "x": 1, "as": {"_id": 3}}]
    db.lookUp.drop()
    db.lookUp.insert_one({"x": [1, 2, 3]})
    res = agg(db.lookUp, [_sub([{"$match": {"$expr": {"$eq": ["$$var1", [1, 2, 3]]}}}], let={"var1": "$x"}),
                          {"$project": {"_id": 0}}])
    assert res == [{"x": [1, 2, 3], "c": [{"_id": 1}, {"_id": 2}, {"_id": 3}]}]
    db.lookUp.drop()
    db.lookUp.insert_one({"x": {"y": {"z": 10}}})
    res = agg(db.lookUp, [_sub([{"$project": {"z": "$$var1.y.z"}}], let={"var1": "$x"}), {"$project": {"_id": 0}}])
    assert res == [{"x": {"y": {"z": 10}}, "c": [{"_id": i, "z": 10} for i in (1, 2, 3)]}]
    for var in ("$$ROOT.x.y.z", "$$CURRENT.x.y.z"):
        res = agg(db.lookUp, [{"$lookup": {"let": {"var1": var}, "from": "lookUp", "as": "as", "pipeline": [
            {"$match": {"$expr": {"$eq": ["$$var1", var]}}}, {"$project": {"_id": 0}}]}}, {"$project": {"_id": 0}}])
        assert res == [{"x": {"y": {"z": 10}}, "as": [{"x": {"y": {"z": 10}}}]}]


# --------------------------------------------------------------------------------------------------
# densify/ (libs/densify_in_js.js as the reference model)
# --------------------------------------------------------------------------------------------------

def densify_in_js(field: str, step: int, bounds, docs: list) -> list:
    """densify_in_js.js's densifyInJS for numbers: sort by the field (null/missing first), then, on
    the grid lower + k*step, generate the values in [lower, upper) that lie strictly between
    consecutive documents' values (and after the last one up to upper); 'full' is [min, max)."""
    docs = sorted(docs, key=lambda d: (d.get(field) is not None, d.get(field) if d.get(field) is not None else 0))
    valued = [d for d in docs if d.get(field) is not None]
    if bounds == "full":
        if not docs:
            return []
        return densify_in_js(field, step, [valued[0][field], valued[-1][field]], docs)
    lower, upper = bounds

    def next_on_grid(val):
        n = lower
        while n <= val:
            n += step
        return n

    def generate(lo, hi, in_range=True):
        out = []
        while lo < hi:
            if not in_range or lower <= lo < upper:
                out.append({field: lo})
            lo += step
        return out

    stream: list = []
    current = lower - step
    for d in docs:
        v = d.get(field)
        if v is None:
            stream.append(d)
            continue
        stream += generate(next_on_grid(current), v)
        stream.append(d)
        current = v
    last = valued[-1][field] if valued else lower - step
    if last < upper:
        stream += generate(next_on_grid(current), upper, in_range=False)
    return stream


@HYPOTHESIS
@given(values=st.lists(st.one_of(st.integers(-10, 25), st.none(), st.just("MISSING")), max_size=8),
       step=st.integers(1, 5), bounds=st.one_of(st.just("full"), st.tuples(st.integers(-5, 10), st.integers(0, 15))))
def test_densify_matches_the_js_reference(db, values, step, bounds):
    """densify/explicit_range.js and full_range.js: $densify equals densifyInJS (as sets of documents)."""
    if isinstance(bounds, tuple):
        bounds = sorted(bounds)
    if bounds == "full" and not any(isinstance(v, int) for v in values):
        return  # densifyInJS cannot take the bounds of no values; mongod passes the documents through
    db.c.drop()
    docs = [{"_id": i} if v == "MISSING" else {"_id": i, "val": v} for i, v in enumerate(values)]
    if docs:
        db.c.insert_many(docs)
    res = agg(db.c, [{"$densify": {"field": "val", "range": {"step": step, "bounds": bounds}}}])
    assert same_members(res, densify_in_js("val", step, bounds, docs))


# --------------------------------------------------------------------------------------------------
# unwind_sort.js, unwind_skip.js, facet/inner_lookup.js, lookup_sort_limit.js
# --------------------------------------------------------------------------------------------------

def test_unwind_then_sort(db):
    """unwind/unwind_sort.js: sorting on unwound values and on the array index."""
    db.c.insert_many([{"a": [3, 4, 5]}, {"a": [1, 2]}])
    assert [d["a"] for d in agg(db.c, [{"$unwind": "$a"}, {"$sort": {"a": 1}}])] == [1, 2, 3, 4, 5]
    assert [d["a"] for d in agg(db.c, [{"$unwind": "$a"}, {"$sort": {"a": -1}}])] == [5, 4, 3, 2, 1]
    res = agg(db.c, [{"$unwind": {"path": "$a", "includeArrayIndex": "i"}}, {"$sort": {"i": 1}}])
    assert [d["i"] for d in res] == [0, 0, 1, 1, 2] and all(type(d["i"]) is Int64 for d in res)
    res = agg(db.c, [{"$unwind": {"path": "$a", "includeArrayIndex": "i"}}, {"$sort": {"i": -1}}])
    assert [d["i"] for d in res] == [2, 1, 1, 0, 0]


def test_unwind_then_skip(db):
    """unwind/unwind_skip.js (SERVER-6269): $skip counts unwound documents."""
    db.c.insert_one({"_id": 0, "a": [1, 2, 3]})
    assert agg(db.c, [{"$unwind": "$a"}, {"$skip": 1}]) == [{"_id": 0, "a": 2}, {"_id": 0, "a": 3}]
    db.c.insert_one({"_id": 1, "a": [4, 5, 6]})
    assert agg(db.c, [{"$unwind": "$a"}, {"$skip": 2}]) == [{"_id": 0, "a": 3}, {"_id": 1, "a": 4}, {"_id": 1, "a": 5},
                                                            {"_id": 1, "a": 6}]


@pytest.mark.parametrize("lookup", [
    {"$lookup": {"from": "facetLookupForeign", "localField": "_id", "foreignField": "foreignKey", "as": "joined"}},
    {"$lookup": {"from": "facetLookupForeign", "let": {"id1": "$_id"}, "as": "joined", "pipeline": [
        {"$match": {"$expr": {"$eq": ["$$id1", "$foreignKey"]}}},
        {"$lookup": {"from": "facetLookupForeign", "let": {"id2": "$_id"}, "as": "joined2",
                     "pipeline": [{"$match": {"$expr": {"$eq": ["$$id2", "$foreignKey"]}}}]}},
        {"$unwind": "$joined2"}]}},
], ids=["equality", "nested-pipelines"])
def test_lookup_inside_facet(db, lookup):
    """facet/inner_lookup.js: a $lookup inside $facet answers as it does outside."""
    db.facetLookupLocal.insert_many([{"_id": 0}, {"_id": 1}])
    db.facetLookupForeign.insert_many([{"_id": i, "foreignKey": i} for i in range(3)])
    coll = db.facetLookupLocal
    assert agg(coll, [{"$facet": {"nested": [lookup]}}]) == [{"nested": agg(coll, [lookup])}]
    unwound = [lookup, {"$unwind": "$joined"}]
    assert agg(coll, [{"$facet": {"nested": unwound}}]) == [{"nested": agg(coll, unwound)}]


def test_graph_lookup_inside_facet(db):
    """facet/inner_graphlookup.js: a $graphLookup inside $facet answers as it does outside (graph
    0 --- 1 --- 2    3)."""
    db.facetGraphLookup.insert_many([{"_id": 0, "edges": [1]}, {"_id": 1, "edges": [0, 2]}, {"_id": 2, "edges": [1]},
                                     {"_id": 3}])
    coll = db.facetGraphLookup
    gl = {"$graphLookup": {"from": "facetGraphLookup", "startWith": "$_id", "connectFromField": "edges",
                           "connectToField": "_id", "as": "connected"}}
    project = {"$project": {"_id": 1, "edges": 1, "connected_length": {"$size": "$connected"}}}
    normal = agg(coll, [gl, project])
    assert [d["connected_length"] for d in by_id(normal)] == [3, 3, 3, 1]
    assert agg(coll, [{"$facet": {"nested": [gl, project]}}]) == [{"nested": normal}]
    unwound = [gl, {"$unwind": "$connected"}, {"$sort": {"_id": 1, "connected._id": 1}}]
    assert agg(coll, [{"$facet": {"nested": unwound}}]) == [{"nested": agg(coll, unwound)}]


def test_lookup_sub_pipeline_sort_limit(db):
    """lookup/lookup_sort_limit.js (SERVER-36715)."""
    db["from"].insert_many([{"_id": i, "foreignField": i} for i in range(10)])
    db.local.insert_one({"_id": 0})
    res = agg(db.local, [{"$lookup": {"from": "from", "let": {}, "pipeline": [{"$sort": {"_id": 1}}, {"$limit": 1}],
                                      "as": "result"}}])
    assert res == [{"_id": 0, "result": [{"_id": 0, "foreignField": 0}]}]
    res = agg(db.local, [{"$lookup": {"from": "from", "let": {}, "pipeline": [{"$sort": {"foreignField": -1}}, {"$limit": 1}],
                                      "as": "result"}}])
    assert res == [{"_id": 0, "result": [{"_id": 9, "foreignField": 9}]}]


# --------------------------------------------------------------------------------------------------
# bugs/: empty_field_names.js, server6045.js, server6181.js, server6185.js
# --------------------------------------------------------------------------------------------------

def test_documents_with_an_empty_field_name(db):
    """bugs/empty_field_names.js (SERVER-86619): an empty field name passes $sort/$addFields/$match."""
    db.emptyFields.insert_many([{"": 123, "b": 456, "sortField": i} for i in range(50)])
    res = agg(db.emptyFields, [{"$sort": {"sortField": 1}}, {"$addFields": {"m": "$sortField"}}, {"$match": {"b": 456}}])
    assert len(res) == 50 and res[0][""] == 123


@pytest.mark.parametrize("pipeline", [
    [{}], [{"$project": {"value": 1}}, {}], [{}, {"$project": {"value": 1}}],
    [{"$project": {"value": 1}}, {}, {"$project": {"value": 1}}],
])
def test_empty_stage_document_anywhere(db, pipeline):
    """bugs/server6045.js: an empty stage document fails (40323 since 3.6; 16435 in the old jstest)."""
    err = agg_fails(db.aggtype, pipeline, 40323)
    assert err.details["errmsg"] == "A pipeline stage specification object must contain exactly one field."


def test_project_id_expression(db):
    """bugs/server6181.js: _id may be computed by $project."""
    db.c.insert_one({"a": 2})
    assert agg(db.c, [{"$project": {"_id": "$a"}}]) == [{"_id": 2}]
    assert agg(db.c, [{"$project": {"_id": {"$add": [1, "$a"]}}}]) == [{"_id": 3}]


def test_project_nonexistent_subfield_like_find(db):
    """bugs/server6185.js: $project of 'a.b' equals the find projection."""
    db.c.insert_many([{"a": [1]}, {"a": {"c": 1}}, {"a": [{"c": 1}, {"b": 1, "c": 1}, {"c": 1}]}, {"a": 1}, {"b": 1}])
    assert agg(db.c, [{"$project": {"a.b": 1}}, {"$sort": {"_id": 1}}]) == list(db.c.find({}, {"a.b": 1}).sort("_id", 1))


# --------------------------------------------------------------------------------------------------
# fill/fill.js
# --------------------------------------------------------------------------------------------------

_FILL_DOCS = [
    {"_id": 1, "linear": 1, "other": 1, "part": 1}, {"_id": 2, "linear": 1, "other": 1, "part": 2},
    {"_id": 3, "linear": None, "other": None, "part": 1}, {"_id": 4, "linear": None, "other": None, "part": 2},
    {"_id": 5, "linear": 5, "other": 10, "part": 1}, {"_id": 6, "linear": 6, "other": 2, "part": 2},
    {"_id": 7, "linear": None, "other": None, "part": 1}, {"_id": 8, "linear": 3, "other": 5, "part": 2},
    {"_id": 9, "linear": 7, "other": 15, "part": 1}, {"_id": 10, "linear": None, "other": None, "part": 2}]


def _rows(*rows):
    """(_id, linear, other, part) tuples -> documents (a None part/field left out when given as ...)."""
    out = []
    for r in rows:
        doc = {"_id": r[0]}
        for name, v in zip(("linear", "other", "part"), r[1:], strict=False):
            if v is not ...:
                doc[name] = v
        out.append(doc)
    return out


_LOCF_BY_PART = _rows((1, 1, 1, 1), (2, 1, 1, 2), (3, None, 1, 1), (4, None, 1, 2), (5, 5, 10, 1), (6, 6, 2, 2),
                      (7, None, 10, 1), (8, 3, 5, 2), (9, 7, 15, 1), (10, None, 5, 2))
_LINEAR_BY_PART = _rows((1, 1, 1, 1), (3, 3, None, 1), (5, 5, 10, 1), (7, 6, None, 1), (9, 7, 15, 1), (2, 1, 1, 2),
                        (4, 3.5, None, 2), (6, 6, 2, 2), (8, 3, 5, 2), (10, None, None, 2))
FILL_CASES = [
    ([{"$match": {"part": 1}}, {"$project": {"other": 0, "part": 0}},
      {"$fill": {"sortBy": {"_id": 1}, "output": {"linear": {"method": "linear"}}}}],
     _rows((1, 1), (3, 3), (5, 5), (7, 6), (9, 7))),
    ([{"$project": {"linear": 0, "part": 0}}, {"$fill": {"sortBy": {"_id": 1}, "output": {"other": {"method": "locf"}}}}],
     [{"_id": i, "other": o} for i, o in ((1, 1), (2, 1), (3, 1), (4, 1), (5, 10), (6, 2), (7, 2), (8, 5), (9, 15), (10, 15))]),
    ([{"$match": {"part": 2}}, {"$fill": {"sortBy": {"_id": 1}, "output": {"other": {"method": "locf"},
                                                                          "linear": {"method": "linear"}}}}],
     _rows((2, 1, 1, 2), (4, 3.5, 1, 2), (6, 6, 2, 2), (8, 3, 5, 2), (10, None, 5, 2))),
    ([{"$fill": {"sortBy": {"_id": 1}, "output": {"other": {"method": "locf"}}, "partitionByFields": ["part"]}}], _LOCF_BY_PART),
    ([{"$fill": {"sortBy": {"_id": 1}, "output": {"other": {"method": "locf"}}, "partitionBy": {"part": "$part"}}}],
     _LOCF_BY_PART),
    ([{"$fill": {"sortBy": {"_id": 1}, "output": {"linear": {"method": "linear"}}, "partitionByFields": ["part"]}}],
     _LINEAR_BY_PART),
    ([{"$fill": {"sortBy": {"_id": 1}, "output": {"linear": {"method": "linear"}}, "partitionBy": {"part": "$part"}}}],
     _LINEAR_BY_PART),
    ([{"$fill": {"sortBy": {"_id": 1}, "output": {"other": {"method": "locf"}, "linear": {"method": "linear"}},
                 "partitionByFields": ["part"]}}],
     _rows((1, 1, 1, 1), (3, 3, 1, 1), (5, 5, 10, 1), (7, 6, 10, 1), (9, 7, 15, 1), (2, 1, 1, 2), (4, 3.5, 1, 2),
           (6, 6, 2, 2), (8, 3, 5, 2), (10, None, 5, 2))),
    ([{"$set": {"linear": {"$cond": [{"$eq": ["$linear", 1]}, None, "$linear"]}}},
      {"$fill": {"sortBy": {"_id": 1}, "output": {"other": {"method": "locf"}, "linear": {"method": "linear"}},
                 "partitionByFields": ["part"]}}],
     _rows((1, None, 1, 1), (3, None, 1, 1), (5, 5, 10, 1), (7, 6, 10, 1), (9, 7, 15, 1), (2, None, 1, 2),
           (4, None, 1, 2), (6, 6, 2, 2), (8, 3, 5, 2), (10, None, 5, 2))),
    ([{"$match": {"part": 1}}, {"$project": {"linear": 0, "part": 0}},
      {"$fill": {"sortBy": {"_id": 1}, "output": {"other": {"value": "$_id"}}}}],
     [{"_id": i, "other": o} for i, o in ((1, 1), (3, 3), (5, 10), (7, 7), (9, 15))]),
    ([{"$match": {"part": 1}}, {"$project": {"linear": 0, "part": 0}},
      {"$fill": {"sortBy": {"_id": 1}, "output": {"other": {"value": -1}}}}],
     [{"_id": i, "other": o} for i, o in ((1, 1), (3, -1), (5, 10), (7, -1), (9, 15))]),
    ([{"$match": {"part": 1}}, {"$fill": {"sortBy": {"_id": 1}, "output": {"other": {"value": -1},
                                                                          "linear": {"value": {"$add": ["$part", 1]}}}}},
      {"$project": {"part": 0}}],
     [{"_id": i, "other": o, "linear": v} for i, o, v in ((1, 1, 1), (3, -1, 2), (5, 10, 5), (7, -1, 2), (9, 15, 7))]),
    ([{"$match": {"part": 1}}, {"$project": {"part": 0}}, {"$unionWith": {"pipeline": [{"$documents": [{"_id": 2}, {"_id": 4}]}]}},
      {"$fill": {"sortBy": {"_id": 1}, "output": {"other": {"value": "$linear"}}}}, {"$project": {"linear": 0}}],
     [{"_id": 1, "other": 1}, {"_id": 2}, {"_id": 3, "other": None}, {"_id": 4}, {"_id": 5, "other": 10},
      {"_id": 7, "other": None}, {"_id": 9, "other": 15}]),
]


@pytest.mark.parametrize("pipeline, expected", FILL_CASES, ids=[f"case{i}" for i in range(len(FILL_CASES))])
def test_fill_results(db, pipeline, expected):
    """fill/fill.js: locf and linear, by partition, arbitrary values, values that are missing or null
    (compared as the shell does: numbers by value, fields in any order)."""
    db.c.insert_many(_FILL_DOCS)
    assert sorted(map(loose, agg(db.c, pipeline))) == sorted(map(loose, expected))


# --------------------------------------------------------------------------------------------------
# collation: graphLookup/collation_graphlookup.js, unionWith/unionWith_collation.js
# --------------------------------------------------------------------------------------------------

CASE_INSENSITIVE = {"locale": "en_US", "strength": 2}


def _friends(coll_name="c"):
    return [{"$match": {"username": "erica"}},
            {"$graphLookup": {"from": coll_name, "startWith": "$friends", "connectFromField": "friends",
                              "connectToField": "username", "as": "friendUsers"}}]


def test_graph_lookup_follows_the_pipeline_collation(db):
    """graphLookup/collation_graphlookup.js: the pipeline's (or the local collection's) collation,
    never the foreign collection's; _ids and results are not de-duplicated under it."""
    db.c.insert_many([{"username": "erica", "friends": ["jeremy", "jimmy"]}, {"username": "JEREMY"}, {"username": "JIMMY"}])
    assert len(agg(db.c, _friends(), collation=CASE_INSENSITIVE)[0]["friendUsers"]) == 2
    assert agg(db.c, _friends())[0]["friendUsers"] == []
    db.create_collection("f", collation=CASE_INSENSITIVE)
    db.f.insert_many([{"username": "JEREMY"}, {"username": "JIMMY"}])
    db.c.insert_many([{"username": "fiona", "friends": ["jeremy"]}, {"username": "gretchen", "friends": ["jimmy"]}])
    res = agg(db.c, [{"$match": {"username": {"$in": ["erica", "fiona", "gretchen"]}}}, _friends("f")[1]])
    assert len(res) == 3 and all(d["friendUsers"] == [] for d in res)
    db.c.drop()
    db.f.drop()
    db.create_collection("c", collation=CASE_INSENSITIVE)
    db.c.insert_one({"username": "erica", "friends": ["jeremy", "jimmy"]})
    db.create_collection("f", collation={"locale": "en_US", "strength": 3})
    db.f.insert_many([{"username": "JEREMY"}, {"username": "JIMMY"}])
    assert len(agg(db.c, _friends("f"))[0]["friendUsers"]) == 2
    db.c.drop()
    db.c.insert_many([{"username": "erica", "friends": ["jeremy"]}, {"_id": "foo", "username": "JEREMY", "friends": ["jimmy"]},
                      {"_id": "FOO", "username": "jimmy", "friends": []}])
    assert len(agg(db.c, _friends(), collation=CASE_INSENSITIVE)[0]["friendUsers"]) == 2
    db.c.drop()
    db.c.insert_many([{"username": "erica", "friends": ["jeremy"]}, {"_id": "foo", "username": "jeremy"},
                      {"_id": "FOO", "username": "JEREMY"}])
    assert len(agg(db.c, _friends(), collation=CASE_INSENSITIVE)[0]["friendUsers"]) == 2


def test_union_with_follows_the_pipeline_collation(db):
    """unionWith/unionWith_collation.js (collections): the user's or the local collection's collation
    is used on the foreign collection."""
    primary = {"locale": "en_US", "strength": 1}
    db.create_collection("no_collation")
    db.create_collection("case_insensitive", collation=primary)
    db.no_collation.insert_many([{"_id": 0, "val": "a"}, {"_id": 1, "val": "b", "caseSensitiveColl": True},
                                 {"_id": 2, "val": "B", "caseSensitiveColl": True}, {"_id": 3, "val": "c"}])
    db.case_insensitive.insert_many([{"_id": 0, "val": "a"}, {"_id": 1, "val": "B", "caseSensitiveColl": False},
                                     {"_id": 2, "val": "b", "caseSensitiveColl": False}, {"_id": 3, "val": "c"}])

    def union(foreign):
        return [{"$match": {"val": {"$in": ["B"]}}},
                {"$unionWith": {"coll": foreign, "pipeline": [{"$match": {"val": {"$in": ["B"]}}}]}},
                {"$sort": {"val": 1, "caseSensitiveColl": 1, "_id": 1}}, {"$project": {"_id": 0}}]

    only_b = [{"val": "B", "caseSensitiveColl": False}, {"val": "B", "caseSensitiveColl": True}]
    all_b = [{"val": "B", "caseSensitiveColl": False}, {"val": "b", "caseSensitiveColl": False},
             {"val": "b", "caseSensitiveColl": True}, {"val": "B", "caseSensitiveColl": True}]
    assert agg(db.no_collation, union("case_insensitive")) == only_b
    assert agg(db.no_collation, union("case_insensitive"), collation=primary) == all_b
    assert agg(db.case_insensitive, union("no_collation")) == all_b
    assert agg(db.case_insensitive, union("no_collation"), collation={"locale": "simple"}) == only_b


def test_graph_lookup_nested_array_fields(db):
    """graphLookup/nested_objects.js: connectFromField and/or connectToField inside arrays of documents."""
    db.local.insert_one({"starting": 0})
    db.foreign.insert_many([{"_id": i, "neighbors": [{"id": i + 1}, {"id": i + 2}]} for i in range(100)])
    spec = {"from": "foreign", "startWith": "$starting", "as": "integers"}
    res = agg(db.local, [{"$graphLookup": {**spec, "connectFromField": "neighbors.id", "connectToField": "_id"}}])
    assert len(res[0]["integers"]) == 100
    db.foreign.drop()
    db.foreign.insert_many([{"previous": [{"neighbor": i}, {"neighbor": i - 1}], "value": i + 1} for i in range(100)])
    res = agg(db.local, [{"$graphLookup": {**spec, "connectFromField": "value", "connectToField": "previous.neighbor"}}])
    assert len(res[0]["integers"]) == 100
    db.foreign.drop()
    db.foreign.insert_many([{"previous": [{"neighbor": i}, {"neighbor": i - 1}],
                             "values": [{"neighbor": i + 1}, {"neighbor": i + 2}]} for i in range(100)])
    res = agg(db.local, [{"$graphLookup": {**spec, "connectFromField": "values.neighbor",
                                           "connectToField": "previous.neighbor"}}])
    assert len(res[0]["integers"]) == 100


def test_lookup_sub_pipeline_text_search(db):
    """lookup/lookup_contains_text.js: a $text search inside the sub-pipeline searches the foreign
    collection (the text-score halves depend on $meta availability checks and are left out)."""
    db.outer.insert_one({"_id": 100, "a": "foo"})
    db.inner.insert_one({"_id": 100, "a": "bar apple banana"})
    pipeline = [{"$match": {"$text": {"$search": "foo"}}},
                {"$lookup": {"from": "inner", "as": "as", "pipeline": [{"$project": {"score": {"$meta": "textScore"}}}]}}]
    agg_fails(db.outer, pipeline, 27)  # IndexNotFound: no text index on 'outer'


def test_lookup_sub_pipeline_starting_with_text(db):
    """lookup/lookup_contains_text.js: $text first in the sub-pipeline searches the foreign collection."""
    db.outer.insert_one({"_id": 100, "a": "foo"})
    db.inner.insert_one({"_id": 100, "a": "bar apple banana"})
    db.outer.create_index([("a", "text")])
    db.inner.create_index([("a", "text")])
    res = agg(db.outer, [{"$lookup": {"from": "inner", "as": "as",
                                      "pipeline": [{"$match": {"$text": {"$search": "bar apple banana hello"}}}]}}])
    assert res == [{"_id": 100, "a": "foo", "as": [{"_id": 100, "a": "bar apple banana"}]}]
    res = agg(db.outer, [{"$match": {"$text": {"$search": "foo"}}},
                         {"$lookup": {"from": "inner", "as": "as", "pipeline": [
                             {"$match": {"$text": {"$search": "bar apple banana hello"}}},
                             {"$project": {"score": {"$meta": "textScore"}}}]}}])
    assert res == [{"_id": 100, "a": "foo", "as": [{"_id": 100, "score": 2.0}]}]




def test_lookup_sub_pipeline_text_search_and_scores(db):
    """lookup/lookup_contains_text.js without the $meta-only $project: $text leading a $lookup
    sub-pipeline searches the foreign collection's text index (correlated by ``let`` too), its scores
    reach the sub-pipeline; a $text later in the sub-pipeline is still 17313, and a foreign collection
    without a text index 27."""
    db.outer.insert_one({"_id": 100, "a": "foo"})
    db.inner.insert_many([{"_id": 100, "a": "bar apple banana"}, {"_id": 101, "a": "cherry"}])
    db.outer.create_index([("a", "text")])
    db.inner.create_index([("a", "text")])
    text = {"$match": {"$text": {"$search": "bar apple banana hello"}}}
    res = agg(db.outer, [{"$match": {"$text": {"$search": "foo"}}},
                         {"$lookup": {"from": "inner", "as": "as", "pipeline": [
                             text, {"$project": {"_id": 1, "score": {"$meta": "textScore"}}}]}}])
    assert res == [{"_id": 100, "a": "foo", "as": [{"_id": 100, "score": 2.0}]}]
    res = agg(db.outer, [{"$lookup": {"from": "inner", "as": "as", "let": {"x": "$_id"},
                                      "pipeline": [text, {"$match": {"$expr": {"$eq": ["$_id", "$$x"]}}}]}}])
    assert res == [{"_id": 100, "a": "foo", "as": [{"_id": 100, "a": "bar apple banana"}]}]
    agg_fails(db.outer, [{"$lookup": {"from": "inner", "as": "as", "pipeline": [{"$match": {}}, text]}}], 17313)
    db.plain.insert_one({"_id": 1, "a": "bar"})
    agg_fails(db.outer, [{"$lookup": {"from": "plain", "as": "as", "pipeline": [text]}}], 27)


_CASED = st.sampled_from(["a", "A", "b", "B", "c"])


@HYPOTHESIS
@given(st.lists(st.fixed_dictionaries({"f": _CASED, "t": _CASED}), min_size=1, max_size=8),
       st.sampled_from([None, {"locale": "en", "strength": 2}, {"locale": "simple"}]),
       st.sampled_from([None, {"locale": "en", "strength": 2}]), st.booleans())
def test_foreign_reads_take_the_pipeline_collation(db, edges, collation, foreign_default, indexed):
    """A $graphLookup (and a $lookup's $text) reads the foreign collection through one query path,
    under the pipeline's collation — not the foreign collection's default — with or without an
    index on connectToField: the same answer as the pure stage filtering every foreign document."""
    from tidemark.query.collation import parse_collation
    from tidemark.query.pipeline import PipelineContext, run_pipeline

    db.drop_collection("g")
    db.create_collection("g", **({"collation": foreign_default} if foreign_default else {}))
    docs = [{"_id": i, **e} for i, e in enumerate(edges)]
    db.g.insert_many(docs)
    if indexed:
        db.g.create_index("t")
    db.drop_collection("start")
    db.start.insert_one({"_id": 0, "s": "a"})
    stage = {"$graphLookup": {"from": "g", "startWith": "$s", "connectFromField": "f", "connectToField": "t",
                              "as": "found", "depthField": "d"}}
    got = agg(db.start, [stage], **({"collation": collation} if collation else {}))
    pctx = PipelineContext(collation=parse_collation(collation) if collation else None, db=db.name,
                           resolve_collection=lambda _db, _c: iter([dict(d) for d in docs]))
    want = list(run_pipeline([stage], [{"_id": 0, "s": "a"}], pctx))
    assert sorted(d["_id"] for d in got[0]["found"]) == sorted(d["_id"] for d in want[0]["found"])


# --------------------------------------------------------------------------------------------------
# agg_stages_basic_behavior_pbt.js
# --------------------------------------------------------------------------------------------------

_FIELDS = ["a", "b", "m"]
_PBT_VALUES = st.one_of(st.integers(-3, 3), st.sampled_from(["x", "y"]), st.none(), st.booleans(),
                        st.lists(st.integers(0, 3), max_size=3), st.fixed_dictionaries({"c": st.integers(0, 2)}))
_PBT_DOCS = st.lists(st.fixed_dictionaries({}, optional={f: _PBT_VALUES for f in _FIELDS}), max_size=12)
_PREFIX_STAGES = st.one_of(
    st.builds(lambda f, v: {"$match": {f: {"$gte": v}}}, st.sampled_from(_FIELDS), st.integers(-3, 3)),
    st.builds(lambda f, d: {"$sort": {f: d, "_id": 1}}, st.sampled_from(_FIELDS), st.sampled_from([1, -1])),
    st.builds(lambda n: {"$limit": n}, st.integers(1, 10)),
    st.builds(lambda n: {"$skip": n}, st.integers(0, 5)),
    st.builds(lambda f, g: {"$addFields": {f: "$" + g}}, st.sampled_from(_FIELDS), st.sampled_from(_FIELDS)),
    st.builds(lambda f: {"$unwind": {"path": "$" + f, "preserveNullAndEmptyArrays": True}}, st.sampled_from(_FIELDS)),
    st.builds(lambda f: {"$project": {f: 0}}, st.sampled_from(_FIELDS)),
)
_LAST_STAGES = st.one_of(
    st.builds(lambda f, keep_id: ("exclude", {"$project": {f: 0, "_id": keep_id}}), st.sampled_from(_FIELDS), st.booleans()),
    st.builds(lambda f, keep_id: ("include", {"$project": {f: 1, "_id": keep_id}}), st.sampled_from(_FIELDS), st.booleans()),
    st.builds(lambda n: ("limit", {"$limit": n}), st.integers(1, 6)),
    st.builds(lambda f, d: ("sort", {"$sort": {f: d}}), st.sampled_from(_FIELDS), st.sampled_from([1, -1])),
    st.builds(lambda f: ("group", {"$group": {"_id": "$" + f, "n": {"$sum": 1}}}), st.sampled_from(_FIELDS)),
)


def _bson_order_key(v):
    """A sort key for the scalar values of _PBT_VALUES in BSON order (null < numbers < strings <
    objects < booleans)."""
    if v is None:
        return (1,)
    if isinstance(v, bool):
        return (8, v)
    if isinstance(v, (int, float)):
        return (2, v)
    if isinstance(v, str):
        return (3, v)
    return (4, canon(v))


@HYPOTHESIS
@given(docs=_PBT_DOCS, prefix=st.lists(_PREFIX_STAGES, max_size=3), last=_LAST_STAGES)
def test_stage_basic_properties_at_the_end_of_a_pipeline(db, docs, prefix, last):
    """agg_stages_basic_behavior_pbt.js: whatever comes before, an exclusion drops its field, an
    inclusion keeps only its field (and _id if asked), $limit limits, $sort sorts (arrays and missing
    values aside, as in the jstest) and $group's _ids are unique."""
    db.c.drop()
    if docs:
        db.c.insert_many([dict(d) for d in docs])
    kind, stage = last
    res = agg(db.c, [*prefix, stage])
    spec = next(iter(stage.values()))
    if kind == "exclude":
        field = next(k for k in spec if k != "_id")
        assert all(field not in d and ("_id" in d) == spec["_id"] for d in res)
    elif kind == "include":
        field = next(k for k in spec if k != "_id")
        assert all(set(d) <= {field, "_id"} and (spec["_id"] or "_id" not in d) for d in res)
    elif kind == "limit":
        assert len(res) <= spec
    elif kind == "sort":
        field, direction = next(iter(spec.items()))
        keys = [_bson_order_key(d[field]) for d in res if field in d and not isinstance(d[field], list)]
        assert keys == sorted(keys, reverse=direction == -1)
    else:
        group_ids = [canon(d["_id"]) for d in res]
        assert len(group_ids) == len(set(group_ids))


# --------------------------------------------------------------------------------------------------
# sort/collation_sort.js, sort/sort_dates_before_1970.js
# --------------------------------------------------------------------------------------------------

def test_sort_follows_the_collation(db):
    """sort/collation_sort.js: French backwards accent ordering, ascending, descending, compound, in $facet."""
    french = {"locale": "fr", "backwards": True}
    words = [("pêche", "côté"), ("pêche", "coté"), ("pêche", "côte"), ("pèché", "côté"), ("pèché", "coté"),
             ("pèché", "côte"), ("pêché", "côté"), ("pêché", "coté"), ("pêché", "côte")]
    db.c.insert_many([{"_id": i, "word1": w1, "word2": w2} for i, (w1, w2) in enumerate(words, 1)])
    groups = [{"$group": {"_id": "$word1"}}]
    assert agg(db.c, [*groups, {"$sort": {"_id": 1}}]) == [{"_id": "pèché"}, {"_id": "pêche"}, {"_id": "pêché"}]
    assert agg(db.c, [*groups, {"$sort": {"_id": 1}}], collation=french) == [{"_id": "pêche"}, {"_id": "pèché"}, {"_id": "pêché"}]
    assert agg(db.c, [*groups, {"$sort": {"_id": -1}}]) == [{"_id": "pêché"}, {"_id": "pêche"}, {"_id": "pèché"}]
    assert agg(db.c, [*groups, {"$sort": {"_id": -1}}], collation=french) == [{"_id": "pêché"}, {"_id": "pèché"}, {"_id": "pêche"}]

    def order(sort, **kw):
        return agg(db.c, [{"$sort": sort}, {"$project": {"_id": 1}}, {"$group": {"_id": None, "out": {"$push": "$_id"}}}],
                   **kw)[0]["out"]

    assert order({"word1": 1, "word2": -1}) == [4, 6, 5, 1, 3, 2, 7, 9, 8]
    assert order({"word1": 1, "word2": -1}, collation=french) == [1, 2, 3, 4, 5, 6, 7, 8, 9]
    assert order({"word1": -1, "word2": 1}) == [8, 9, 7, 2, 3, 1, 5, 6, 4]
    assert order({"word1": -1, "word2": 1}, collation=french) == [9, 8, 7, 6, 5, 4, 3, 2, 1]
    res = agg(db.c, [{"$facet": {"fct": [{"$sort": {"word1": -1, "word2": 1}}, {"$project": {"_id": 1}},
                                         {"$group": {"_id": None, "out": {"$push": "$_id"}}}]}}], collation=french)
    assert res[0]["fct"][0]["out"] == [9, 8, 7, 6, 5, 4, 3, 2, 1]


def test_sort_dates_before_1970(db):
    """sort/sort_dates_before_1970.js (SERVER-5369)."""
    db.test.insert_many([{"d": dt.datetime(1950, 1, 1)}, {"d": dt.datetime(1980, 1, 1)}])
    out = agg(db.test, [{"$sort": {"d": 1}}])
    assert out[0]["d"] < out[1]["d"]


# --------------------------------------------------------------------------------------------------
# match/disallow_near_in_match.js, match/within_in_match.js, project/dotted_and_nested_proj_are_equal.js,
# replaceRoot/replace_root_match.js
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("query", [{"point2d": {"$near": [0, 0]}}, {"point2dsphere": {"$nearSphere": [0, 0]}},
                                   pytest.param({"point2d": {"$geoNear": [0, 0]}}, id="$geoNear")])
def test_near_is_refused_in_match(db, query):
    """match/disallow_near_in_match.js: a find answers, a $match fails 5626500."""
    db.c.create_index([("point2d", "2d")])
    db.c.create_index([("point2dsphere", "2dsphere")])
    db.c.insert_many([{"point2d": [0.25, 0.35]}, {"point2dsphere": [0.25, 0.35]}])
    agg_fails(db.c, [{"$match": query}], 5626500)
    assert len(list(db.c.find(query))) == 1


@pytest.mark.parametrize("index", [None, "2d", "2dsphere"])
def test_within_in_match_equals_find(db, index):
    """match/within_in_match.js (SERVER-6531), without an index and with 2d / 2dsphere ones."""
    db.c.insert_many([{"loc": [x, y]} for x in range(10) for y in range(10)])
    if index:
        db.c.create_index([("loc", index)])
    query = {"loc": {"$within": {"$center": [[5, 5], 3]}}}
    assert agg(db.c, [{"$match": query}, {"$sort": {"_id": 1}}]) == list(db.c.find(query).sort("_id", 1))


@pytest.mark.parametrize("projection", [{"_id": 0, "b.c": 1}, {"_id": 0, "b.c": "$b.c"}, {"_id": 0, "b": {"c": 1}},
                                        {"_id": 0, "b": {"c": "$b.c"}}])
def test_dotted_and_nested_projections_are_equal(db, projection):
    """project/dotted_and_nested_proj_are_equal.js (SERVER-6468)."""
    db.c.insert_one({"a": "foo", "b": {"c": "bar", "z": "not there"}})
    assert agg(db.c, [{"$project": projection}]) == [{"b": {"c": "bar"}}]


def test_project_after_project_renames(db):
    """project/remove_id.js: a later $project sees only what the earlier one kept."""
    db.article.insert_many([{"_id": i, "author": a, "title": "t"} for i, a in enumerate(["bob", "dave", "jane"])])
    assert agg(db.article, [{"$sort": {"_id": 1}}, {"$project": {"author": 1, "_id": 0}},
                            {"$project": {"Writer": "$author"}}]) == [{"Writer": "bob"}, {"Writer": "dave"}, {"Writer": "jane"}]


_RR_DOCS = [
    {"x": 1, "subDocument": {"x": 6.98, "y": 1, "subDocument": {"x": 1}}},
    {"_id": 2, "x": 2, "subDocument": {"x": 2, "y": 2, "subDocument": {"x": 2}}},
    {"x": 3, "subDocument": {"x": "big", "y": "small", "subDocument": {"x": 3}}},
    {"x": 5, "subDocument": {"x": "small", "y": 5, "subDocument": {"x": {"a": 2}}}},
    {"subDocument": {"a": {"0": 2}}}, {"subDocument": {"a": [2, 3]}}, {"subDocument": {"a": [1, 0]}},
    {"subDocument": {"a": [{"b": 2}]}}, {"subDocument": {"a": {"b": 3}}}, {"subDocument": {"a": {"c": 4}}},
    {"subDocument": {"a": [{"0": 4}, {"0": 2}]}}, {"subDocument": {"a": [{"b": 2}, {"b": 2}]}},
    {"subDocument": {"a": {"b": []}}}, {"subDocument": {"$a.0": 2}}, {"subDocument": {"a.b": 4}},
]


@pytest.mark.parametrize("pipeline, expected", [
    ([{"$replaceRoot": {"newRoot": "$subDocument"}}, {"$match": {"x": 2}}], [1]),
    ([{"$replaceWith": "$subDocument"}, {"$match": {"x": 6.98}}], [0]),
    ([{"$replaceWith": "$subDocument"}, {"$match": {"$or": [{"x": "big"}, {"x": "small"}]}}], [2, 3]),
    ([{"$replaceWith": "$subDocument"}, {"$match": {"x": "small"}}, {"$match": {"y": 5}}], [3]),
    ([{"$replaceWith": "$subDocument"}, {"$match": {"subDocument.x": 2}}], [1]),
    ([{"$replaceWith": "$subDocument"}, {"$match": {"$expr": {"$eq": ["$x", 2]}}}], [1]),
    ([{"$replaceWith": "$subDocument"}, {"$match": {"a.0": 2}}], [4, 5, 10]),
    ([{"$replaceWith": "$subDocument"}, {"$match": {"$expr": {"$gt": ["$a.b", 2]}}}], [5, 6, 7, 10, 11, 8, 12]),
    ([{"$replaceWith": "$subDocument"}, {"$match": {"$expr": {"$eq": [{"$getField": {"$literal": "$a.0"}}, 2]}}}], [13]),
    ([{"$replaceWith": "$subDocument"}, {"$match": {"$expr": {"$gt": [{"$getField": "a.b"}, 2]}}}], [14]),
], ids=lambda v: str(v)[:60])
def test_replace_root_then_match(db, pipeline, expected):
    """replaceRoot/replace_root_match.js (SERVER-88220): a $match after $replaceRoot/$replaceWith
    filters the new roots."""
    db.c.insert_many([dict(d) for d in _RR_DOCS])
    assert same_members(agg(db.c, pipeline), [_RR_DOCS[i]["subDocument"] for i in expected])


def test_replace_root_then_match_edge_cases(db):
    """replaceRoot/replace_root_match.js: a missing or non-document new root fails (40228) even when
    a later $match would drop it; the $$ROOT replacement and several replacements."""
    db.c.insert_many([dict(d) for d in _RR_DOCS])
    agg_fails(db.c, [{"$replaceWith": "$subDocument"}, {"$replaceWith": "$subDocument"}, {"$match": {"x.a": 2}}], 40228)
    assert ids(agg(db.c, [{"$replaceWith": "$$ROOT"}, {"$match": {"x": 2}}])) == [2]
    res = agg(db.c, [{"$match": {"subDocument.subDocument.x": {"$exists": True}}}, {"$replaceWith": "$subDocument"},
                     {"$replaceWith": "$subDocument"}, {"$match": {"x.a": 2}}])
    assert res == [{"x": {"a": 2}}]
    db.c.insert_one({"subDocument": [{"a": 4}, {"a": 5}]})
    agg_fails(db.c, [{"$replaceWith": "$subDocument"}, {"$match": {"a": 3}}], 40228)
    agg_fails(db.c, [{"$match": {"subDocument": {"$type": "object"}}}, {"$replaceWith": "$subDocument"},
                     {"$match": {"a": 3}}], 40228)
    res = agg(db.c, [{"$match": {"$and": [{"subDocument": {"$type": "object"}}, {"subDocument": {"$not": {"$type": "array"}}}]}},
                     {"$replaceWith": "$subDocument"}, {"$match": {"a": 3}}])
    assert res == [{"a": [2, 3]}]


def test_lookup_into_a_nonexistent_collection(db):
    """lookup/lookup_non_existent_collection.js: one of two foreign collections does not exist."""
    db.localColl.insert_one({"_id": 1, "a": 5})
    db.foreignColl.insert_one({"_id": 2, "b": 5})
    res = agg(db.localColl, [{"$lookup": {"from": "foreignColl", "localField": "a", "foreignField": "b", "as": "result"}},
                             {"$lookup": {"from": "nonExistingForeignColl", "localField": "a", "foreignField": "b",
                                          "as": "result2"}}])
    assert res == [{"_id": 1, "a": 5, "result": [{"_id": 2, "b": 5}], "result2": []}]


# --------------------------------------------------------------------------------------------------
# lookup/lookup_subpipeline_group.js
# --------------------------------------------------------------------------------------------------

_ALL_GROUPS = {"foo": 2.5, "bar": 10, "baz": 5}


@pytest.mark.parametrize("join, group, expected", [
    (False, {"$group": {"_id": "$key", "avg": {"$avg": "$num"}}}, {0: _ALL_GROUPS, 1: _ALL_GROUPS}),
    (True, {"$group": {"_id": "$key", "avg": {"$avg": "$num"}}}, {0: {"foo": 2.5}, 1: {"bar": 10}}),
    (False, {"$group": {"_id": "$key", "top": {"$top": {"output": "$num", "sortBy": {"key": -1, "num": 1}}}}},
     {0: {"foo": 0, "bar": 10, "baz": 5}, 1: {"foo": 0, "bar": 10, "baz": 5}}),
    (True, {"$group": {"_id": "$key", "top": {"$top": {"output": "$num", "sortBy": {"key": 1, "num": -1}}}}},
     {0: {"foo": 5}, 1: {"bar": 10}}),
    (True, {"$group": {"_id": "$key", "bottom": {"$bottom": {"output": "$num", "sortBy": {"key": 1, "num": -1}}}}},
     {0: {"foo": 0}, 1: {"bar": 10}}),
], ids=["avg", "avg-join", "top", "top-join", "bottom-join"])
def test_lookup_sub_pipeline_group(db, join, group, expected):
    """lookup/lookup_subpipeline_group.js: a $group in the sub-pipeline, with and without a join field."""
    db.base.insert_many([{"_id": 0, "key": "foo"}, {"_id": 1, "key": "bar"}])
    db["from"].insert_many([{"_id": 2, "key": "foo", "num": 0}, {"_id": 3, "key": "foo", "num": 5},
                            {"_id": 4, "key": "bar", "num": 10}, {"_id": 5, "key": "baz", "num": 5},
                            {"_id": 6, "key": "baz", "num": 5}])
    db["from"].create_index("key")
    db["from"].create_index([("key", -1), ("num", 1)])
    join_fields = {"localField": "key", "foreignField": "key"} if join else {}
    res = agg(db.base, [{"$lookup": {"from": "from", "as": "r", "pipeline": [group], **join_fields}}])
    field = next(k for k in next(iter(group.values())) if k != "_id")
    assert {d["_id"]: {g["_id"]: g[field] for g in d["r"]} for d in res} == expected


@pytest.mark.parametrize("sort, acc, expected", [
    ({"key": -1, "num": 1}, "$first", {0: {"foo": 0, "bar": 10, "baz": 5}, 1: {"foo": 0, "bar": 10, "baz": 5}}),
])
def test_lookup_sub_pipeline_sort_then_first(db, sort, acc, expected):
    """lookup/lookup_subpipeline_group.js: $sort then $group with $first / $last, with a join and $unwind."""
    db.base.insert_many([{"_id": 0, "key": "foo"}, {"_id": 1, "key": "bar"}])
    db["from"].insert_many([{"_id": 2, "key": "foo", "num": 0}, {"_id": 3, "key": "foo", "num": 5},
                            {"_id": 4, "key": "bar", "num": 10}, {"_id": 5, "key": "baz", "num": 5},
                            {"_id": 6, "key": "baz", "num": 5}])
    res = agg(db.base, [{"$lookup": {"from": "from", "as": "r", "pipeline": [
        {"$sort": sort}, {"$group": {"_id": "$key", "v": {acc: "$num"}}}]}}])
    assert {d["_id"]: {g["_id"]: g["v"] for g in d["r"]} for d in res} == expected
    res = agg(db.base, [{"$lookup": {"from": "from", "as": "r", "localField": "key", "foreignField": "key", "pipeline": [
        {"$sort": {"key": -1, "num": 1}}, {"$group": {"_id": "$key", "last": {"$last": "$num"}}}]}}])
    assert {d["_id"]: d["r"] for d in res} == {0: [{"_id": "foo", "last": 5}], 1: [{"_id": "bar", "last": 10}]}
    res = agg(db.base, [{"$lookup": {"from": "from", "as": "r", "localField": "key", "foreignField": "key", "pipeline": [
        {"$sort": {"key": 1, "num": -1}}, {"$group": {"_id": "$key", "last": {"$last": "$num"}}}]}},
        {"$unwind": {"path": "$r"}}])
    assert by_id(res) == [{"_id": 0, "key": "foo", "r": {"_id": "foo", "last": 0}},
                          {"_id": 1, "key": "bar", "r": {"_id": "bar", "last": 10}}]
