"""Bucket-level filters (the one derivation, filters.py) never drop a bucket holding a match, do prune,
and their MQL selects exactly the buckets their predicate keeps (spec §5.2)."""

import datetime as dt
import random

import pytest
from bson.objectid import ObjectId
from harness.timeseries import Engine

from tidemark.query.collation import parse_collation
from tidemark.query.match import compile_filter, parse_filter
from tidemark.timeseries.bucketdoc import date_ms, unpack_document
from tidemark.timeseries.filters import derive
from tidemark.timeseries.stored import document_bucket


def bucket_filter(node, time_field, meta_field, span, collation=None):
    return derive(node, time_field, meta_field, span, collation=collation)

T0 = dt.datetime(2024, 1, 1)


def build_buckets(seed=7, n=3000):
    rng = random.Random(seed)
    engine = Engine(params={"timeseriesBucketMaxCount": 50})
    docs = []
    for _ in range(n):
        t = T0 + dt.timedelta(seconds=rng.randrange(0, 6 * 3600))
        doc = {"_id": ObjectId(), "t": t, "m": {"site": rng.choice("abc"), "id": rng.randrange(4)}}
        if rng.random() < 0.9:
            doc["v"] = rng.choice([rng.randrange(100), rng.random() * 100])
        if rng.random() < 0.3:
            doc["s"] = rng.choice(["x", "y", "z"])
        if rng.random() < 0.1:
            doc["arr"] = [rng.randrange(10), rng.randrange(10)]
        docs.append(doc)
    engine.put_many(docs)
    return engine.documents()


BUCKETS = build_buckets()


def check(filter_doc, collation=None):
    node = parse_filter(filter_doc)
    bfilter = bucket_filter(node, "t", "m", 3600, collation)
    match = compile_filter(filter_doc, collation=collation)
    kept = 0
    for bucket in BUCKETS:
        has_match = any(match(m) for m in unpack_document(bucket, "t", "m"))
        start = bucket["_id"].generation_time.replace(tzinfo=None)
        start_s = date_ms(start) // 1000
        in_range = (bfilter.lo_s is None or start_s >= bfilter.lo_s) and (bfilter.hi_s is None or start_s <= bfilter.hi_s)
        keep = in_range and (bfilter.predicate is None or bfilter.predicate(document_bucket(bucket)))
        assert keep or not has_match, (filter_doc, bucket["_id"])
        # what explain shows selects exactly what the predicate keeps
        selected = bfilter.predicate is None or bfilter.predicate(document_bucket(bucket))
        assert selected == compile_filter(bfilter.mql, collation=collation)(bucket)
        # mongod 7.0's form (what explain shows) is a bucket filter too: it keeps every bucket holding a
        # match (it may keep fewer than what runs: the $type guard keeps a bucket with an int minimum
        # and a double maximum, which 7.0's BSON-order comparison prunes)
        if bfilter.shown and in_range and has_match:
            assert compile_filter(bfilter.shown, collation=collation)(bucket), (filter_doc, bfilter.shown)
        kept += keep
    return kept


FILTERS = [
    {"t": {"$gte": T0 + dt.timedelta(hours=2), "$lt": T0 + dt.timedelta(hours=2, minutes=5)}},
    {"t": T0 + dt.timedelta(hours=1, seconds=17)},
    {"t": {"$lte": T0 + dt.timedelta(minutes=30)}},
    {"t": {"$gt": T0 + dt.timedelta(hours=5, minutes=50)}},
    {"m.site": "a"},
    {"m": {"id": 1, "site": "b"}},
    {"m.id": {"$in": [1, 2]}, "v": {"$gt": 50}},
    {"v": {"$lt": 3}},
    {"v": 42},
    {"v": {"$in": [1, 2, 3]}},
    {"s": "x"},
    {"s": {"$gt": "y"}},
    {"arr": 3},
    {"arr.0": {"$gt": 5}},
    {"$or": [{"v": {"$lt": 1}}, {"t": {"$lt": T0 + dt.timedelta(minutes=1)}}]},
    {"v": {"$exists": True}, "m.site": {"$ne": "a"}},
    {"v": {"$not": {"$gt": 10}}},
    {"v": None},
    {"v": "string never stored"},
]


@pytest.mark.parametrize("filter_doc", FILTERS)
def test_bucket_filter_keeps_every_bucket_with_a_matching_measurement(filter_doc):
    check(filter_doc)


def test_narrow_time_range_prunes_most_buckets():
    kept = check({"t": {"$gte": T0 + dt.timedelta(hours=2), "$lt": T0 + dt.timedelta(hours=2, minutes=1)}})
    assert kept < len(BUCKETS) / 3


def test_time_predicate_yields_id_range():
    node = parse_filter({"t": {"$gte": T0, "$lt": T0 + dt.timedelta(hours=1)}})
    bfilter = bucket_filter(node, "t", "m", 3600)
    assert bfilter.lo_s == date_ms(T0) // 1000 - 3600
    assert bfilter.hi_s == date_ms(T0) // 1000 + 3600


def test_meta_predicate_prunes_exactly():
    kept = check({"m.site": "a", "m.id": 0})
    matching = sum(1 for b in BUCKETS if b["meta"] == {"id": 0, "site": "a"})
    assert kept == matching


def test_type_mismatch_prunes_string_buckets():
    assert check({"s": 5}) == 0


def test_needed_fields_of_pipelines():
    from tidemark.timeseries.deps import needed_fields

    assert needed_fields([{"$project": {"_id": 0}}], []) is None
    assert needed_fields([{"$project": {"a": 0}}], []) is None
    assert needed_fields([{"$project": {"a": 1, "b": "$c.d"}}], []) == {"_id", "a", "b", "c"}
    assert needed_fields([{"$project": {"_id": 0, "a": 1}}], []) == {"a"}
    assert needed_fields([{"$sort": {"t": 1}}, {"$group": {"_id": "$m.x", "s": {"$sum": "$v"}}}], []) == {"t", "m", "v"}
    assert needed_fields([{"$count": "n"}], [parse_filter({"v": 1})]) == {"v"}
    assert needed_fields([{"$group": {"_id": None, "all": {"$push": "$$ROOT"}}}], []) is None
    assert needed_fields([{"$addFields": {"x": 1}}], []) is None
    top = {"$topN": {"n": 2, "sortBy": {"o.k": -1, "_id": 1}, "output": "$v"}}
    assert needed_fields([{"$group": {"_id": "$m", "x": top}}], []) == {"m", "o", "_id", "v"}
    assert needed_fields([{"$group": {"_id": 1, "x": {"$bottom": {"sortBy": "o", "output": "$v"}}}}], []) is None
    assert needed_fields([], []) is None


@pytest.mark.parametrize("stage", [
    {"$project": {"p": {"$getField": "v"}}},
    {"$project": {"p": {"$getField": {"field": "v"}}}},
    {"$project": {"p": {"$getField": {"field": "v", "input": "$$CURRENT"}}}},
    {"$project": {"p": "$$CURRENT"}},
    {"$project": {"p": {"$let": {"vars": {"CURRENT": "$$ROOT"}, "in": "$v"}}}},
    {"$project": {"p": {"$unsetField": {"field": "x", "input": "$$ROOT"}}}},
    {"$group": {"_id": {"$getField": "v"}}},
    {"$match": {"$expr": {"$eq": [{"$getField": "v"}, 5]}}},
    {"$match": {"$jsonSchema": {"additionalProperties": False, "properties": {"t": {}}}}},
    {"$match": {"$jsonSchema": {"minProperties": 3}}},
])
def test_fields_named_without_a_path_need_the_whole_document(stage):
    """A field read without a ``$path`` (``$getField`` without input, ``$$CURRENT``, a schema over every
    field) cannot be proven: every field is unpacked, as a leading $match or a later stage."""
    from tidemark.timeseries.deps import leading_matches, needed_fields

    assert needed_fields([stage], []) is None
    nodes, rest = leading_matches([stage])
    assert needed_fields(rest, nodes) is None


def test_fields_named_by_paths_stay_narrow():
    from tidemark.timeseries.deps import needed_fields

    assert needed_fields([{"$match": {"$expr": {"$gt": ["$a", 1]}}}, {"$project": {"_id": 0, "b": 1}}], []) == {"a", "b"}
    assert needed_fields([{"$project": {"_id": 0, "p": {"$getField": {"field": "v", "input": "$o"}}}}], []) == {"o", "p"}
    assert needed_fields([{"$count": "n"}], [parse_filter({"$jsonSchema": {"required": ["a"]}})]) == {"a"}
    assert needed_fields([{"$project": {"_id": 0, "p": "$$CURRENT.v"}}], []) == {"p", "v"}


def test_index_filter_keeps_meta_comparisons_and_time_bounds():
    lo = T0 + dt.timedelta(hours=1)
    node = parse_filter({"m.site": {"$in": ["a", "b"]}, "m.id": 3, "t": {"$gte": lo, "$lt": lo}, "v": 5,
                         "m.x": {"$ne": 1}})
    assert bucket_filter(node, "t", "m", 3600).index_filter() == {
        "meta.site": {"$in": ["a", "b"]}, "meta.id": 3,
        "control.max.t": {"$gte": lo, "$lt": lo + dt.timedelta(hours=1)},
        "control.min.t": {"$gte": lo - dt.timedelta(hours=1), "$lt": lo}}
    assert bucket_filter(parse_filter({"v": 1}), "t", "m", 3600).index_filter() is None
    # an $or of equalities of one meta path bounds it as their $in (mongod's optimizer rewrites it so);
    # across paths, or with a regex or a range, it bounds nothing
    assert bucket_filter(parse_filter({"$or": [{"m.site": "a"}, {"m.site": {"$in": ["b", None]}}]}), "t", "m",
                         3600).index_filter() == {"meta.site": {"$in": ["a", "b", None]}}
    for branches in ([{"m.site": "a"}, {"m.id": 1}], [{"m.site": "a"}, {"m.site": {"$regex": "^b"}}],
                     [{"m.site": "a"}, {"m.site": {"$gt": "b"}}], [{"m.site": "a"}, {"v": 1}]):
        assert bucket_filter(parse_filter({"$or": branches}), "t", "m", 3600).index_filter() is None, branches


def test_only_meta_only_filters_are_exact_per_bucket():
    assert bucket_filter(parse_filter({"m.site": "a", "m.id": {"$gt": 1}}), "t", "m", 3600).exact
    assert not bucket_filter(parse_filter({"m.site": "a", "v": 1}), "t", "m", 3600).exact
    assert not bucket_filter(parse_filter({"$expr": {"$eq": ["$m", 1]}}), "t", "m", 3600).exact


CI = parse_collation({"locale": "en", "strength": 2})


@pytest.mark.parametrize("flt", [
    {"m.site": "A"}, {"m": {"id": 1, "site": "B"}}, {"m.site": {"$in": ["C", "q"]}}, {"m.site": {"$gt": "A"}},
    {"s": "X"}, {"s": {"$gte": "Y"}}, {"s": {"$in": ["Z"]}}, {"s": "Y", "t": {"$lt": T0 + dt.timedelta(hours=1)}},
    {"$or": [{"m.site": "A"}, {"s": "Z"}]},
])
def test_a_non_simple_collation_keeps_every_bucket_holding_a_collated_match(flt):
    kept = check(flt, CI)
    assert kept > 0
    if list(flt) == ["m.site"] or list(flt) == ["m"]:
        # meta predicates stay exact under the collation: whole buckets decided on meta
        assert derive(parse_filter(flt), "t", "m", 3600, collation=CI).exact
        assert kept < len(BUCKETS)


# ------------------------------------------------------------------ mongod's createIndex policy (partial indexes)


@pytest.mark.parametrize(("flt", "reason"), [
    ({"v": {"a": 1}}, "operand can't be an object or array"),
    ({"v": None}, "can't handle {$eq: null}"),
    ({"t": 7}, "This predicate will never be true, because the time field always contains a Date"),
    ({"v": {"$in": [None]}}, "can't handle {$eq: null} predicate (inside $in predicate)"),
    ({"v": {"$not": {"$gt": 1}}}, "can't handle this predicate"),
    ({"$or": [{"m": 1}, {"v": {"$type": "int"}}]}, "can't handle this predicate"),
])
def test_refusing_ineligible_predicates_raises_where_a_query_keeps_every_bucket(flt, reason):
    from tidemark.timeseries.filters import Ineligible

    node = parse_filter(flt)
    assert not derive(node, "t", "m", 3600).mql  # a query: every bucket, the measurements decide
    with pytest.raises(Ineligible) as info:
        derive(node, "t", "m", 3600, refuse_ineligible=True)
    assert info.value.reason == reason


def test_meta_predicates_and_expr_are_never_refused():
    for flt in ({"m": {"$not": {"$gt": 1}}, "m.x": {"$type": "int"}}, {"$expr": {"$gt": ["$v", 1]}}):
        derive(parse_filter(flt), "t", "m", 3600, refuse_ineligible=True)


def test_without_mixed_schema_a_measurement_bound_has_no_type_guard():
    guarded = derive(parse_filter({"v": {"$gt": 5}}), "t", "m", 3600).mql
    assert guarded["$or"][0] == {"control.max.v": {"$gt": 5}} and "$expr" in guarded["$or"][1]
    assert derive(parse_filter({"v": {"$gt": 5}}), "t", "m", 3600, assume_no_mixed_schema=True).mql == {
        "control.max.v": {"$gt": 5}}
