"""More of MongoDB's own time-series jstests, ported to pymongo against a real Tidemark server.

Sources (``mongodb/mongo``, ``jstests/core/timeseries/``; the 7.0 layout keeps them at the folder's root,
the stored copies are also under ``query/`` and ``write/``), 47 files: agg_stage_coverage.js, basic.js,
bucket_unpacking_group_reorder_fixed_buckets.js, bucket_unpacking_with_compound_sort_on_point_queries.js,
bucket_unpacking_with_limit.js, bucket_unpacking_with_match_fixed_buckets.js,
bucket_unpacking_with_sort_extended_range.js, bucket_unpacking_with_sort_multiple_point_queries.js,
bucket_unpacking_with_sort_negative.js, bucket_unpacking_with_sort_on_multiple_fields_point_queries.js,
bucket_unpacking_with_sort_on_single_field_point_queries.js, bucket_unpacking_with_sort_with_collation.js,
bucket_unpacking_with_sort_with_geo.js, timeseries_buckets_find_and_modify.js,
timeseries_closed_update_delete.js, timeseries_delete_compressed_buckets.js,
timeseries_delete_preserves_control_min_time.js, timeseries_findAndModify_basic.js,
timeseries_findAndModify_deletes_hints.js, timeseries_findAndModify_updates_hints.js,
timeseries_find_and_modify_remove_sort.js, timeseries_group_aggregations.js,
timeseries_groupby_reorder_expr.js, timeseries_insert.js, timeseries_insert_compresses_bucket.js,
timeseries_insert_mixed_schema_bucket.js, timeseries_insert_normalize_metadata.js,
timeseries_internal_bounded_sort_compound.js, timeseries_internal_bounded_sort_compound_mixed_types.js,
timeseries_internal_bounded_sort_overflow.js, timeseries_ixscan_clusteredidxscan_union.js,
timeseries_lastpoint_common_sort_key.js, timeseries_lookup_extended_range.js,
timeseries_match_pushdown_nan.js, timeseries_match_pushdown_with_project.js,
timeseries_mixed_bucket_schema.js, timeseries_out_non_sharded.js, timeseries_partial_index_opt.js,
timeseries_project_pushdown.js, timeseries_resume_after.js, timeseries_shadowing_meta_project_pushdown.js,
timeseries_show_record_id.js, timeseries_update_compressed_buckets.js,
timeseries_update_delete_extended_range.js, timeseries_update_delete_fixed_bucket.js,
timeseries_update_mixed_schema_bucket.js, timeseries_view_aggregate.js.
Not ported: timeseries_delete_with_meta_concurrent.js and timeseries_update_concurrent.js (a failpoint,
hangDuringBatchRemove/Update, holds the write while the collection is dropped or replaced).

Only what a client observes is ported: the documents returned (and their order where the jstest checks it),
counts, error codes and the bucket documents of ``system.buckets.<name>`` where the jstest reads them.
Explain shapes (unpack ``include``/``exclude``, stage lists, bucket and residual filters, index scan
directions), plan-cache checks, SBE/block processing, failpoints and sharding are left out; where a jstest
only checks that a rewrite does (not) happen, the port checks that the answer equals the unoptimized one
($_internalInhibitOptimization before the stage). 7.0 semantics throughout: the jstests written for 7.1+
arbitrary updates (findOneAndUpdate, updateOne/updateMany of measurement fields) are ported to 7.0's
refusal (72, nothing changes); 8.0-only checks (the mixed-schema bucket refusal, compressed buckets
written by inserts) are ported to what 7.0 answers; closed buckets here stay version 1 documents by
project decision, so "the bucket is compressed" checks are not ported. Where a jstest compares a
time-series collection with an ordinary one, so does the port; Hypothesis widens the structured inputs
(measurements on and around bucket boundaries, metas of many BSON types, mixed and sparse schemas,
NaN among numbers, random fixed bucket spans, the jstest's pipeline search space) against the same
ordinary-collection reference.
"""

from __future__ import annotations

import datetime as dt
import functools
import math

import pytest
from bson import Decimal128, Int64, ObjectId
from harness import ServerProcess, jstests
from harness.jstests import error_code, unordered
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

assert_same_members = functools.partial(jstests.assert_same_members, key=unordered)  # (docEq)

pytestmark = pytest.mark.commands(
    "create", "insert", "aggregate", "find", "count", "distinct", "delete", "update", "findAndModify", "collMod",
    "createIndexes", "drop",
)

NAN = float("nan")
HYPO = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

# Known differences from MongoDB 7.0, one reason per cause (each used by strict xfails below).


# --------------------------------------------------------------------------------------------------
# helpers


def _ts(db, name="ts", time="t", meta="m", **options):
    """A fresh time-series collection (dropped first: Hypothesis examples reuse the database)."""
    db.drop_collection(name)
    spec = {"timeField": time}
    if meta is not None:
        spec["metaField"] = meta
    spec.update(options.pop("timeseries", {}))
    db.create_collection(name, timeseries=spec, **options)
    return db[name]


def _regular(db, name="reg"):
    db.drop_collection(name)
    db.create_collection(name)
    return db[name]


def _buckets(db, name="ts"):
    return db[f"system.buckets.{name}"]


def ordered(value):
    """Documents as (name, value) pair lists: equality that also checks field order (assert.docEq on
    the shell's tojson)."""
    if isinstance(value, dict):
        return [(k, ordered(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [ordered(v) for v in value]
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    return value


# ================================================================== timeseries_match_pushdown_nan.js

NAN_BUCKET = [
    {"ts": dt.datetime(2024, 1, 1, 0, 0), "m": 1, "v": 1},
    {"ts": dt.datetime(2024, 1, 1, 0, 1), "m": 1, "v": NAN},
    {"ts": dt.datetime(2024, 1, 1, 0, 2), "m": 1, "v": 100},
]
NAN_TWO_BUCKETS = NAN_BUCKET + [
    {"ts": dt.datetime(2024, 1, 1, 0, 3), "m": 2, "v": 2},
    {"ts": dt.datetime(2024, 1, 1, 0, 4), "m": 2, "v": 42},
    {"ts": dt.datetime(2024, 1, 1, 0, 5), "m": 2, "v": 1000},
]
ALL_NAN = [{"ts": dt.datetime(2024, 1, 1, 0, 0), "m": 1, "v": NAN}, {"ts": dt.datetime(2024, 1, 1, 0, 1), "m": 1, "v": NAN}]

NAN_CASES = {
    "lt_then_inclusion_project": (NAN_BUCKET, [{"$match": {"v": {"$lt": 50}}}, {"$project": {"_id": 0, "v": 1}}]),
    "gt_then_inclusion_project": (NAN_BUCKET, [{"$match": {"v": {"$gt": 50}}}, {"$project": {"_id": 0, "v": 1}}]),
    "range": (NAN_BUCKET, [{"$match": {"v": {"$gte": 0, "$lte": 200}}}, {"$project": {"_id": 0, "v": 1}}]),
    "eq_nan": (NAN_BUCKET, [{"$match": {"v": {"$eq": NAN}}}, {"$project": {"_id": 0, "v": 1}}]),
    "lt_no_project": (NAN_BUCKET, [{"$match": {"v": {"$lt": 50}}}, {"$project": {"_id": 0}}]),
    "nan_in_one_of_two_buckets": (NAN_TWO_BUCKETS, [{"$match": {"v": {"$lt": 50}}},
                                                     {"$project": {"_id": 0, "v": 1, "m": 1}}]),
    "all_nan_bucket": (ALL_NAN, [{"$match": {"v": {"$lt": 50}}}, {"$project": {"_id": 0, "v": 1}}]),
}


def _differential(db, docs, pipeline, *, time="ts", meta="m", options=None):
    """The pipeline's answer on a time-series collection and on an ordinary one holding ``docs``."""
    ts = _ts(db, time=time, meta=meta, timeseries=options or {})
    reg = _regular(db)
    if docs:
        ts.insert_many([dict(d) for d in docs])
        reg.insert_many([dict(d) for d in docs])
    return list(ts.aggregate(pipeline)), list(reg.aggregate(pipeline))


@pytest.mark.parametrize("case", list(NAN_CASES))
def test_match_pushdown_nan_agrees_with_regular_collection(db, case):
    """timeseries_match_pushdown_nan.js: a bucket whose measurement field holds NaN beside numbers is not
    dropped by the bucket-level filter derived from control.min/max: ``$lt``/``$gt``/ranges return the
    numeric measurements that match, ``$eq: NaN`` the NaN one, an all-NaN bucket none — exactly what an
    ordinary collection holding the same documents returns."""
    docs, pipeline = NAN_CASES[case]
    actual, expected = _differential(db, docs, pipeline)
    assert_same_members(actual, expected)


NUMBERS = st.one_of(
    st.sampled_from([NAN, float("inf"), float("-inf"), 0.0, -0.0]),
    st.integers(-100, 100),
    st.floats(-100, 100, allow_nan=False),
    st.integers(-100, 100).map(Int64),
    st.sampled_from([Decimal128("NaN"), Decimal128("1.5"), Decimal128("-Infinity")]),
)
NAN_OPS = st.sampled_from(["$lt", "$lte", "$gt", "$gte", "$eq", "$ne"])


@HYPO
@given(values=st.lists(NUMBERS, min_size=1, max_size=10), op=NAN_OPS, bound=NUMBERS,
       split=st.integers(0, 10))
def test_match_pushdown_nan_property(db, values, op, bound, split):
    """timeseries_match_pushdown_nan.js, generalized: for any numbers (NaN, infinities, -0, int32,
    int64, double, decimal) in one or two buckets and any comparison, the time-series answer equals the
    ordinary collection's (the invariant the jstest states)."""
    base = dt.datetime(2024, 1, 1)
    docs = [{"_id": i, "ts": base + dt.timedelta(minutes=i), "m": int(i >= split), "v": v}
            for i, v in enumerate(values)]
    pipeline = [{"$match": {"v": {op: bound}}}, {"$project": {"v": 1}}, {"$sort": {"_id": 1}}]
    actual, expected = _differential(db, docs, pipeline)
    assert [ordered(d) for d in actual] == [ordered(d) for d in expected]


# ========================================================= timeseries_insert_normalize_metadata.js

NORM_T = dt.datetime(2025, 2, 18, 12)
AB, BA = {"a": 1, "b": 1}, {"b": 1, "a": 1}
NORMALIZE_CASES = {
    "all_normalized": ([AB, AB, AB], "m"),
    "mixed_order": ([AB, BA, BA], "m"),
    "none_normalized": ([BA, BA, BA], "m"),
    "nested_all_normalized": ([{"nested": AB}] * 3, "m.nested"),
    "nested_mixed_order": ([{"nested": AB}, {"nested": BA}, {"nested": BA}], "m.nested"),
    "nested_none_normalized": ([{"nested": BA}] * 3, "m.nested"),
}


@pytest.mark.parametrize("insert_one", [False, True], ids=["insert_many", "insert_one"])
@pytest.mark.parametrize("case", list(NORMALIZE_CASES))
def test_insert_normalizes_metadata_field_order(db, case, insert_one):
    """timeseries_insert_normalize_metadata.js: the metaField's object fields are stored in normalized
    (sorted) order whatever order they were inserted in, so an equality on the whole meta (or a meta
    subobject) in sorted order finds every measurement and the same object in another order finds none."""
    metas, path = NORMALIZE_CASES[case]
    coll = _ts(db, time="time", meta="m")
    docs = [{"time": NORM_T, "m": dict(m) if "nested" not in m else {"nested": dict(m["nested"])}} for m in metas]
    if insert_one:
        for doc in docs:
            coll.insert_one(doc)
    else:
        coll.insert_many(docs)
    assert len(list(coll.find())) == 3
    assert len(list(coll.find({path: {"a": 1, "b": 1}}))) == 3
    assert len(list(coll.find({path: {"b": 1, "a": 1}}))) == 0


# ==================================================================== timeseries_view_aggregate.js

VIEW_DATA = [
    {"_id": 1, "name": "Alice", "age": 25, "status": "active", "time": dt.datetime(2025, 9, 1, 13, 0)},
    {"_id": 2, "name": "Bob", "age": 32, "status": "active", "time": dt.datetime(2025, 9, 1, 13, 30)},
    {"_id": 3, "name": "Carol", "age": 29, "status": "active", "time": dt.datetime(2025, 9, 1, 14, 0)},
    {"_id": 4, "name": "David", "age": 34, "status": "inactive", "time": dt.datetime(2025, 9, 1, 14, 30)},
    {"_id": 5, "name": "Eve", "age": 28, "status": "inactive", "time": dt.datetime(2025, 9, 1, 15, 0)},
    {"_id": 6, "name": "Frank", "age": 41, "status": "inactive", "time": dt.datetime(2025, 9, 1, 15, 30)},
]
_NAME_AGE = [{"name": d["name"], "age": d["age"]} for d in VIEW_DATA]

VIEW_CASES = {
    "match_empty_view": ([{"$match": {"status": "active"}}], [], VIEW_DATA[:3]),
    "match_over_match_view": ([{"$match": {"status": "active"}}], [{"$match": {"age": {"$gt": 27}}}],
                              [VIEW_DATA[2], VIEW_DATA[1]]),
    "group_avg": ([{"$group": {"_id": "$status", "averageAge": {"$avg": "$age"}}}], [],
                  [{"_id": "active", "averageAge": 28.666666666666668},
                   {"_id": "inactive", "averageAge": 34.333333333333336}]),
    "group_avg_over_match_view": ([{"$group": {"_id": "$status", "averageAge": {"$avg": "$age"}}}],
                                  [{"$match": {"status": "inactive"}}],
                                  [{"_id": "inactive", "averageAge": 34.333333333333336}]),
    "sort": ([{"$sort": {"age": -1}}], [], [VIEW_DATA[i] for i in (5, 3, 1, 2, 4, 0)]),
    "sort_over_project_view": ([{"$sort": {"age": -1}}], [{"$project": {"age": 1}}],
                               [{"_id": d["_id"], "age": d["age"]} for d in VIEW_DATA]),
    "project": ([{"$project": {"_id": 0, "name": 1, "age": 1}}], [], _NAME_AGE),
    "project_over_match_view": ([{"$project": {"_id": 0, "name": 1, "age": 1}}],
                                [{"$match": {"age": {"$lt": 30}}}], [d for d in _NAME_AGE if d["age"] < 30]),
}


@pytest.mark.parametrize("case", list(VIEW_CASES))
def test_view_on_timeseries_aggregate(db, case):
    """timeseries_view_aggregate.js: a view whose source is a time-series collection (fixed 3600 s
    buckets) resolves the view's pipeline over the measurements, not the buckets: $match, $group/$avg,
    $sort and $project on the view, with and without a view pipeline, return the jstest's documents."""
    pipeline, view_pipeline, expected = VIEW_CASES[case]
    coll = _ts(db, time="time", meta="status",
               timeseries={"bucketMaxSpanSeconds": 3600, "bucketRoundingSeconds": 3600})
    coll.insert_many([dict(d) for d in VIEW_DATA])
    db.command("create", "v", viewOn="ts", pipeline=view_pipeline)
    assert_same_members(list(db.v.aggregate(pipeline)), expected)


def _lookup_fixture(db):
    db.normal.insert_many([{"name": "Alice", "key": "active"}, {"name": "Bob", "key": "inactive"},
                           {"name": "Carol", "key": "active"}])
    coll = _ts(db, time="time", meta=None)
    coll.insert_many([
        {"_id": 1, "status": "active", "time": dt.datetime(2025, 9, 1, 13), "age": 25},
        {"_id": 2, "status": "inactive", "time": dt.datetime(2025, 9, 1, 14), "age": 30},
        {"_id": 3, "status": "active", "time": dt.datetime(2025, 9, 1, 15), "age": 35},
    ])
    db.command("create", "v", viewOn="ts", pipeline=[{"$match": {"age": {"$lte": 30}}}])


def test_view_on_timeseries_as_lookup_graphlookup_unionwith_source(db):
    """timeseries_view_aggregate.js: a view over a time-series collection serves as the foreign side of
    $lookup, $graphLookup (maxDepth 0) and $unionWith, with the view's $match applied to measurements."""
    _lookup_fixture(db)
    alice = [{"_id": 1, "status": "active", "age": 25}]
    bob = [{"_id": 2, "status": "inactive", "age": 30}]
    got = db.normal.aggregate([
        {"$lookup": {"from": "v", "localField": "key", "foreignField": "status", "as": "matched"}},
        {"$project": {"_id": 0, "key": 0, "matched.time": 0}}])
    assert_same_members(list(got), [{"name": "Alice", "matched": alice}, {"name": "Bob", "matched": bob},
                             {"name": "Carol", "matched": alice}])
    got = db.normal.aggregate([
        {"$graphLookup": {"from": "v", "startWith": "$key", "connectFromField": "key",
                          "connectToField": "status", "as": "matched", "maxDepth": 0}},
        {"$project": {"_id": 0, "matched.time": 0}}])
    assert_same_members(list(got), [{"name": "Alice", "key": "active", "matched": alice},
                             {"name": "Bob", "key": "inactive", "matched": bob},
                             {"name": "Carol", "key": "active", "matched": alice}])
    got = db.normal.aggregate([{"$unionWith": "v"}, {"$project": {"_id": 0, "name": 1, "age": 1, "status": 1}}])
    assert_same_members(list(got), [{"name": "Alice"}, {"name": "Bob"}, {"name": "Carol"},
                             {"status": "active", "age": 25}, {"status": "inactive", "age": 30}])


# =================================================================== timeseries_mixed_bucket_schema.js

MIXED_BUCKET = {
    "_id": ObjectId("65a6eb806ffc9fa4280ecac4"),
    "control": {
        "version": 1,
        "min": {"_id": ObjectId("65a6eba7e6d2e848e08c3750"), "t": dt.datetime(2024, 1, 16, 20, 48), "a": 4},
        "max": {"_id": ObjectId("65a6eba7e6d2e848e08c3751"), "t": dt.datetime(2024, 1, 16, 20, 48, 39, 448000),
                "a": [2, 3]},
    },
    "meta": 0,
    "data": {
        "_id": {"0": ObjectId("65a6eba7e6d2e848e08c3750"), "1": ObjectId("65a6eba7e6d2e848e08c3751")},
        "t": {"0": dt.datetime(2024, 1, 16, 20, 48, 39, 448000), "1": dt.datetime(2024, 1, 16, 20, 48, 39, 448000)},
        "a": {"0": [2, 3], "1": 4},
    },
}


def test_mixed_schema_bucket_is_not_pruned_by_control_min(db):
    """timeseries_mixed_bucket_schema.js: after ``collMod {timeseriesBucketsMayHaveMixedSchemaData:
    true}``, a bucket inserted directly whose field ``a`` holds 4 and [2, 3] (control.min 4, control.max
    [2, 3] in BSON order) still answers ``{a: {$lte: 3}}`` with the array measurement: the bucket filter
    does not assume one type per field."""
    _ts(db)
    db.command({"collMod": "ts", "timeseriesBucketsMayHaveMixedSchemaData": True})
    _buckets(db).insert_one(MIXED_BUCKET)
    results = list(db.ts.aggregate([{"$match": {"a": {"$lte": 3}}}]))
    assert len(results) == 1
    assert results[0]["a"] == [2, 3]



def test_mixed_schema_flag_is_only_for_time_series_collections(db):
    """collMod's timeseriesBucketsMayHaveMixedSchemaData takes a bool on a time-series collection and is
    72 InvalidOptions on an ordinary one, as mongod's coll_mod."""
    _ts(db)
    with pytest.raises(OperationFailure) as err:
        db.command({"collMod": "ts", "timeseriesBucketsMayHaveMixedSchemaData": "yes"})
    assert err.value.code == 14
    db.create_collection("plain")
    with pytest.raises(OperationFailure) as err:
        db.command({"collMod": "plain", "timeseriesBucketsMayHaveMixedSchemaData": True})
    assert (err.value.code, err.value.details["errmsg"]) == (
        72, "option only supported on a time-series collection: timeseriesBucketsMayHaveMixedSchemaData")


# ===================================================================== timeseries_project_pushdown.js

T_FIXED = dt.datetime(2024, 6, 1, 12, 0, 0)

PROJECT_PUSHDOWN_CASES = {
    "getfield_meta": ([{"_id": 1, "meta1": 2}], [{"$project": {"new": {"$getField": "meta1"}, "_id": 0}}],
                      [{"new": 2}]),
    "getfield_dotted_name": (
        [{"_id": 1, "meta1": 2, "a.b": 3, "a": {"b": 2}}, {"_id": 2, "meta1": 2, "a": {"b": 2}}],
        [{"$project": {"new": {"$add": ["$meta1", {"$getField": "a.b"}]}}}],
        [{"_id": 1, "new": 5}, {"_id": 2, "new": None}]),
    "getfield_literal_dollar_dotted": (
        [{"_id": 1, "meta1": 2, "a.$b": 3, "a": {"b": 4}}, {"_id": 2, "meta1": 2, "a": {"b": 2}}],
        [{"$project": {"new": {"$add": ["$meta1", {"$getField": {"$literal": "a.$b"}}]}}}],
        [{"_id": 1, "new": 5}, {"_id": 2, "new": None}]),
    "getfield_literal_dollar_meta": (
        [{"_id": 1, "meta1": 2}, {"_id": 2, "meta1": 2, "$meta1": 3}],
        [{"$project": {"new": {"$add": ["$meta1", {"$getField": {"$literal": "$meta1"}}]}}}],
        [{"_id": 1, "new": None}, {"_id": 2, "new": 5}]),
    "getfield_input_meta": (
        [{"_id": 1, "meta1": {"b": 4}}, {"_id": 2, "meta1": {"c": 5}}],
        [{"$project": {"new": {"$getField": {"input": "$meta1", "field": "b"}}}}],
        [{"_id": 1, "new": 4}, {"_id": 2}]),
    "getfield_input_meta_dollar_dotted": (
        [{"_id": 1, "meta1": {"a.$b": 4}}, {"_id": 2, "meta1": {"c": 5}}],
        [{"$project": {"new": {"$getField": {"input": "$meta1", "field": "a.$b"}}}}],
        [{"_id": 1, "new": 4}, {"_id": 2}]),
    "getfield_input_measurement_dollar_meta": (
        [{"_id": 1, "meta1": 2, "a": {"$meta1": 4}}, {"_id": 2, "meta1": 2, "a": {"c": 5}}],
        [{"$project": {"new": {"$add": ["$meta1", {"$getField": {"input": "$a", "field": {"$literal": "$meta1"}}}]}}}],
        [{"_id": 1, "new": 6}, {"_id": 2, "new": None}]),
    "getfield_input_measurement_dollar_meta_addfields": (
        [{"_id": 1, "meta1": 2, "a": {"$meta1": 4}}, {"_id": 2, "meta1": 2, "a": {"c": 5}}],
        [{"$addFields": {"new": {"$add": ["$meta1", {"$getField": {"input": "$a", "field": {"$literal": "$meta1"}}}]}}}],
        [{"t": T_FIXED, "meta1": 2, "a": {"$meta1": 4}, "_id": 1, "new": 6},
         {"t": T_FIXED, "meta1": 2, "a": {"c": 5}, "_id": 2, "new": None}]),
    "project_root": (
        [{"_id": 1, "meta1": 2, "a": 2}, {"_id": 2, "meta1": 2, "b": 3}],
        [{"$project": {"new": "$$ROOT", "_id": 1}}],
        [{"_id": 1, "new": {"_id": 1, "t": T_FIXED, "meta1": 2, "a": 2}},
         {"_id": 2, "new": {"_id": 2, "t": T_FIXED, "meta1": 2, "b": 3}}]),
    "addfields_root": (
        [{"_id": 1, "meta1": 2, "a": 2}, {"_id": 2, "meta1": 2, "b": 3}],
        [{"$addFields": {"new": "$$ROOT"}}],
        [{"_id": 1, "t": T_FIXED, "meta1": 2, "a": 2, "new": {"_id": 1, "t": T_FIXED, "meta1": 2, "a": 2}},
         {"_id": 2, "t": T_FIXED, "meta1": 2, "b": 3, "new": {"_id": 2, "t": T_FIXED, "meta1": 2, "b": 3}}]),
}


def _insert_raw(coll, docs):
    """Insert documents whose field names start with '$' or hold '.' (pymongo's insert checks keys only
    through the command path, which takes them as mongod does)."""
    coll.database.command({"insert": coll.name, "documents": docs})


@pytest.mark.parametrize("case", list(PROJECT_PUSHDOWN_CASES))
def test_project_pushdown_getfield_and_root(db, case):
    """timeseries_project_pushdown.js: ``$getField`` (a string, ``$literal``, ``input`` + ``field``) over the metaField, measurement fields whose names hold '.' or start with '$' ("$meta1"
    is not the metaField), and ``$$ROOT`` in $project/$addFields, return the whole measurement's values
    (a missing field: null inside $add, absent in $project). The jstest's cases whose ``field`` is an
    expression ($concat, $cond) need 7.2's dynamic ``field`` (SERVER-74371); 7.0 refuses them at parse
    time (5654601), so they are not ported."""
    docs, pipeline, expected = PROJECT_PUSHDOWN_CASES[case]
    coll = _ts(db, time="t", meta="meta1")
    _insert_raw(coll, [{"t": T_FIXED, **d} for d in docs])
    assert_same_members(list(coll.aggregate(pipeline)), expected)


# ========================================================== timeseries_shadowing_meta_project_pushdown.js

SHADOW_CASES = {
    "addfields_meta_by_itself_getfield": (2, [{"$addFields": {"meta1": {"$getField": "meta1"}}}],
                                          {"t": T_FIXED, "meta1": 2, "_id": 1, "meta": 100}),
    "addfields_meta_by_itself_with_others": (2, [{"$addFields": {"meta1": "$meta1", "t": "$t", "_id": "$_id"}}],
                                             {"t": T_FIXED, "meta1": 2, "_id": 1, "meta": 100}),
    "project_meta_by_itself_getfield": (2, [{"$project": {"meta1": {"$getField": "meta1"}, "_id": 0}}],
                                        {"meta1": 2}),
    "project_meta_by_itself_with_others": (2, [{"$project": {"meta1": "$meta1", "t": "$t", "_id": "$_id"}}],
                                           {"meta1": 2, "t": T_FIXED, "_id": 1}),
    "addfields_meta_by_subfield": ({"s": "string"}, [{"$addFields": {"meta1": "$meta1.s"}}],
                                   {"t": T_FIXED, "meta1": "string", "_id": 1, "meta": 100}),
    "project_meta_by_subfield": ({"s": "string"}, [{"$project": {"meta1": "$meta1.s", "meta": 1, "_id": 0}}],
                                 {"meta1": "string", "meta": 100}),
    "addfields_meta_by_meta_expr": ({"a": 1, "b": 2}, [{"$addFields": {"meta1": {"$add": ["$meta1.a", "$meta1.b"]}}}],
                                    {"t": T_FIXED, "meta1": 3, "_id": 1, "meta": 100}),
    "project_meta_by_meta_expr": ({"a": 1, "b": 2},
                                  [{"$project": {"meta1": {"$add": ["$meta1.a", "$meta1.b"]}, "meta": 1, "_id": 0}}],
                                  {"meta1": 3, "meta": 100}),
    "addfields_meta_by_measurement": ({"a": 1, "b": 2}, [{"$addFields": {"meta1": "$meta"}}],
                                      {"t": T_FIXED, "meta1": 100, "_id": 1, "meta": 100}),
    "project_meta_by_measurement": ({"a": 1, "b": 2}, [{"$project": {"meta1": "$meta", "meta": 1, "_id": 0}}],
                                    {"meta1": 100, "meta": 100}),
}


@pytest.mark.parametrize("case", list(SHADOW_CASES))
def test_project_shadowing_meta_field(db, case):
    """timeseries_shadowing_meta_project_pushdown.js: $addFields/$project that redefine the metaField —
    by itself, by a subfield, by an expression over meta subfields, by a measurement field — give the
    jstest's single document (assert.docEq: field order aside)."""
    meta, pipeline, expected = SHADOW_CASES[case]
    coll = _ts(db, time="t", meta="meta1")
    coll.insert_many([{"_id": 1, "t": T_FIXED, "meta1": meta, "meta": 100}])
    assert_same_members(list(coll.aggregate(pipeline)), [expected])


# ============================================================ timeseries_match_pushdown_with_project.js

A_TIME = dt.datetime(2022, 1, 1)
NOW_ISH = dt.datetime(2024, 6, 1, 9, 30)


def _mp(*docs):
    return [dict(d) for d in docs]


MATCH_PROJECT_CASES = {
    # $match then $project
    "match_project_id": (_mp({"t": NOW_ISH, "m": 42, "a": 1, "_id": 1}, {"t": NOW_ISH, "m": 42, "a": 2, "_id": 2}),
                         [{"$match": {"a": {"$eq": 2}}}, {"$project": {"_id": 1}}], [{"_id": 2}]),
    "match_project_other": (_mp({"t": NOW_ISH, "m": 42, "a": 1, "b": 10, "_id": 1},
                                {"t": NOW_ISH, "m": 42, "a": 2, "b": 20, "_id": 2}),
                            [{"$match": {"a": {"$eq": 2}}}, {"$project": {"b": 1}}], [{"b": 20, "_id": 2}]),
    "match_project_other_no_id": (_mp({"t": NOW_ISH, "m": 42, "a": 1, "b": 10, "_id": 1},
                                      {"t": NOW_ISH, "m": 42, "a": 2, "b": 20, "_id": 2}),
                                  [{"$match": {"a": {"$eq": 2}}}, {"$project": {"_id": 0, "b": 1}}], [{"b": 20}]),
    "match_project_same": (_mp({"t": NOW_ISH, "m": 42, "a": 1, "_id": 1}, {"t": NOW_ISH, "m": 42, "a": 2, "_id": 2}),
                           [{"$match": {"a": {"$eq": 2}}}, {"$project": {"a": 1}}], [{"a": 2, "_id": 2}]),
    "match_project_same_no_id": (_mp({"t": NOW_ISH, "m": 42, "a": 1, "_id": 1},
                                     {"t": NOW_ISH, "m": 42, "a": 2, "_id": 2}),
                                 [{"$match": {"a": {"$eq": 2}}}, {"$project": {"_id": 0, "a": 1}}], [{"a": 2}]),
    "match_project_computed_same": (_mp({"t": NOW_ISH, "m": 42, "a": 1, "_id": 1},
                                        {"t": NOW_ISH, "m": 42, "a": 2, "_id": 2}),
                                    [{"$match": {"a": {"$eq": 2}}}, {"$project": {"a": {"$add": [10, "$a"]}}}],
                                    [{"a": 12, "_id": 2}]),
    "match_project_computed_from_other": (_mp({"t": NOW_ISH, "m": 42, "a": 1, "b": 10, "_id": 1},
                                              {"t": NOW_ISH, "m": 42, "a": 2, "b": 20, "_id": 2}),
                                          [{"$match": {"a": {"$eq": 2}}}, {"$project": {"a": {"$add": [10, "$b"]}}}],
                                          [{"a": 30, "_id": 2}]),
    "match_project_computed_other": (_mp({"t": NOW_ISH, "m": 42, "a": 1, "b": 10, "_id": 1},
                                         {"t": NOW_ISH, "m": 42, "a": 2, "b": 20, "_id": 2}),
                                     [{"$match": {"a": {"$eq": 2}}}, {"$project": {"b": {"$add": [10, "$a"]}}}],
                                     [{"b": 12, "_id": 2}]),
    "match_exclude_matched": (_mp({"t": NOW_ISH, "m": 42, "a": 1, "b": 10, "_id": 1},
                                  {"t": A_TIME, "m": 42, "a": 2, "b": 20, "_id": 2}),
                              [{"$match": {"a": {"$eq": 2}}}, {"$project": {"a": 0}}],
                              [{"t": A_TIME, "m": 42, "b": 20, "_id": 2}]),
    "match_exclude_no_meta_field_generated": (_mp({"t": NOW_ISH, "a": 1, "_id": 1}, {"t": A_TIME, "a": 2, "_id": 2}),
                                              [{"$match": {"a": {"$eq": 2}}}, {"$project": {"a": 0}}],
                                              [{"t": A_TIME, "_id": 2}]),
    "match_exclude_other": (_mp({"t": NOW_ISH, "m": 42, "a": 1, "b": 10, "_id": 1},
                                {"t": A_TIME, "m": 42, "a": 2, "b": 20, "_id": 2}),
                            [{"$match": {"a": {"$eq": 2}}}, {"$project": {"b": 0}}],
                            [{"t": A_TIME, "m": 42, "a": 2, "_id": 2}]),
    "match_exclude_meta": (_mp({"t": NOW_ISH, "m": 42, "a": 1, "_id": 1}, {"t": A_TIME, "m": 42, "a": 2, "_id": 2}),
                           [{"$match": {"a": {"$eq": 2}}}, {"$project": {"m": 0}}], [{"t": A_TIME, "a": 2, "_id": 2}]),
    "match_exclude_time": (_mp({"t": NOW_ISH, "m": 42, "a": 1, "_id": 1}, {"t": NOW_ISH, "m": 42, "a": 2, "_id": 2}),
                           [{"$match": {"a": {"$eq": 2}}}, {"$project": {"t": 0}}], [{"m": 42, "a": 2, "_id": 2}]),
    # $project then $match
    "project_then_match_discarded": (_mp({"t": NOW_ISH, "m": 42, "a": 2, "b": 20, "_id": 2}),
                                     [{"$project": {"b": 1}}, {"$match": {"a": {"$eq": 2}}}], []),
    "project_then_match_discarded_subfield": (_mp({"t": NOW_ISH, "m": 42, "a": {"sub": 2}, "b": 20, "_id": 2}),
                                              [{"$project": {"b": 1}}, {"$match": {"a.sub": {"$eq": 2}}}], []),
    "project_then_match_discarded_not_exists": (_mp({"t": NOW_ISH, "m": 42, "a": 2, "b": 20, "_id": 2}),
                                                [{"$project": {"_id": 0, "b": 1}}, {"$match": {"a": {"$exists": False}}}],
                                                [{"b": 20}]),
    "project_then_match_retained": (_mp({"t": NOW_ISH, "m": 42, "a": 1, "b": 10, "_id": 1},
                                        {"t": NOW_ISH, "m": 42, "a": 2, "b": 20, "_id": 2}),
                                    [{"$project": {"a": 1}}, {"$match": {"a": {"$eq": 2}}}], [{"a": 2, "_id": 2}]),
    "project_then_match_retained_subfield": (_mp({"t": NOW_ISH, "m": 42, "a": {"sub": 1}, "b": 10, "_id": 1},
                                                 {"t": NOW_ISH, "m": 42, "a": {"sub": 2}, "b": 20, "_id": 2}),
                                             [{"$project": {"a": 1}}, {"$match": {"a.sub": {"$eq": 2}}}],
                                             [{"a": {"sub": 2}, "_id": 2}]),
    "project_then_match_overwritten": (_mp({"t": NOW_ISH, "m": 42, "a": 1, "b": 10, "_id": 1},
                                           {"t": NOW_ISH, "m": 42, "a": 2, "b": 20, "_id": 2}),
                                       [{"$project": {"a": {"$add": [1, "$a"]}}}, {"$match": {"a": {"$eq": 2}}}],
                                       [{"a": 2, "_id": 1}]),
    "project_then_match_used_in_project": (_mp({"t": NOW_ISH, "m": 42, "a": 2, "b": 20, "_id": 1}),
                                           [{"$project": {"b": {"$add": [1, "$a"]}}}, {"$match": {"a": {"$eq": 2}}}],
                                           []),
    "project_then_match_meta_retained": (_mp({"t": NOW_ISH, "m": 42, "a": 1, "_id": 1},
                                             {"t": NOW_ISH, "m": 43, "a": 2, "_id": 2}),
                                         [{"$project": {"m": 1}}, {"$match": {"m": {"$eq": 42}}}],
                                         [{"_id": 1, "m": 42}]),
    "project_then_match_meta_only": (_mp({"t": NOW_ISH, "m": 42, "a": 1, "_id": 1},
                                         {"t": NOW_ISH, "m": 43, "a": 2, "_id": 2}),
                                     [{"$project": {"m": 1, "_id": 0}}, {"$match": {"m": {"$eq": 42}}}], [{"m": 42}]),
    "project_then_match_meta_discarded": (_mp({"t": NOW_ISH, "m": 42, "a": 2, "_id": 2}),
                                          [{"$project": {"a": 1, "_id": 0}}, {"$match": {"m": {"$eq": 42}}}], []),
    "project_then_match_meta_discarded_not_exists": (_mp({"t": NOW_ISH, "m": 42, "a": 2, "_id": 2}),
                                                     [{"$project": {"a": 1, "_id": 0}},
                                                      {"$match": {"m": {"$exists": False}}}], [{"a": 2}]),
    "project_then_match_meta_subfield_discarded": (_mp({"t": NOW_ISH, "m": {"sub": 42}, "a": 2, "_id": 2}),
                                                   [{"$project": {"a": 1, "_id": 0}},
                                                    {"$match": {"m.sub": {"$eq": 42}}}], []),
}


@pytest.mark.parametrize("case", list(MATCH_PROJECT_CASES))
def test_match_pushdown_with_project(db, case):
    """timeseries_match_pushdown_with_project.js: a $match before or after an inclusion/exclusion/computed
    $project on a time-series collection answers as $project then $match in that order — a field the
    $project dropped (a measurement, the metaField or a subfield) no longer matches, ``$exists: false``
    on it does, a missing metaField is not generated — with the jstest's documents in order (field order
    aside, as assert.docEq)."""
    docs, pipeline, expected = MATCH_PROJECT_CASES[case]
    coll = _ts(db, time="t", meta="m")
    coll.insert_many(docs)
    got = list(coll.aggregate(pipeline))
    assert len(got) == len(expected)
    for doc, want in zip(got, expected, strict=True):
        assert_same_members([doc], [want])


# ====================================================================== bucket_unpacking_with_limit.js

def _epoch_ms(n):
    return dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=n)


def _limit_fixture(db):
    plain = _ts(db, name="plain", time="t", meta=None)
    docs = []
    for i in range(10):
        docs += [{"t": _epoch_ms(i), "_id": i}, {"t": _epoch_ms(i * 10), "_id": i * 10}]
    # The jstest inserts _id 0 twice (i and i * 10 for i = 0): the second is a duplicate key only on an
    # ordinary collection; a time-series collection takes both.
    plain.insert_many(docs)
    metas = _ts(db, name="metas", time="t", meta="m")
    meta_docs = [{"m": {"sensorId": i, "type": "temperature"},
                  "t": _epoch_ms(i), "_id": i}
                 for i in range(10)]
    metas.insert_many([dict(d) for d in meta_docs])
    return plain, metas, meta_docs


@pytest.mark.parametrize("size", [2, 10, 20])
def test_limit_returns_distinct_measurements(db, size):
    """bucket_unpacking_with_limit.js "testLimitCorrectness": ``$limit n`` on one bucket of 20
    measurements and on 10 one-measurement buckets returns min(n, count) measurements, each one of the
    collection's, none twice."""
    plain, metas, _ = _limit_fixture(db)
    for coll in (plain, metas):
        res = list(coll.aggregate([{"$limit": size}]))
        every = list(coll.find())
        assert len(res) == min(size, len(every))
        rest = [unordered(d) for d in every]
        for doc in map(unordered, res):  # a sub-multiset of the collection: no measurement twice
            assert doc in rest
            rest.remove(doc)


LIMIT_SORT_CASES = {
    "sort_limit": ([{"$sort": {"m.sensorId": 1}}, {"$limit": 2}], [0, 1]),
    "sort_desc_two_limits": ([{"$sort": {"m.sensorId": -1}}, {"$limit": 10}, {"$limit": 2}], [9, 8]),
    "sort_limit_larger_limit": ([{"$sort": {"m.sensorId": 1}}, {"$limit": 10}, {"$limit": 50}], list(range(10))),
    "match_sort_skip_limit": ([{"$match": {"$nor": [{"temp": {"$in": []}}]}}, {"$sort": {"m.sensorId": 1}},
                               {"$skip": 1}, {"$limit": 1}], [1]),
    "match_sort_skip_limit_skip": ([{"$match": {"$nor": [{"temp": {"$in": []}}]}}, {"$sort": {"m.sensorId": 1}},
                                    {"$skip": 1}, {"$limit": 2}, {"$skip": 1}], [2]),
}


@pytest.mark.parametrize("case", list(LIMIT_SORT_CASES))
def test_sort_absorbs_limits(db, case):
    """bucket_unpacking_with_limit.js: a $sort on a meta subfield followed by $limit(s) / $skip returns
    the jstest's measurements in order (the smaller of two limits wins; skip then limit then skip)."""
    pipeline, ids = LIMIT_SORT_CASES[case]
    _, metas, meta_docs = _limit_fixture(db)
    assert list(metas.aggregate(pipeline)) == [meta_docs[i] for i in ids]


@pytest.mark.parametrize("pipeline", [
    [{"$match": {"$nor": [{"temp": {"$in": []}}]}}, {"$limit": 5}, {"$sort": {"m.sensorId": 1}}, {"$skip": 2},
     {"$limit": 2}],
    [{"$limit": 2}, {"$sort": {"m.sensorId": 1}}],
], ids=["limit_before_sort_skip", "limit_then_sort"])
def test_limit_before_sort_counts(db, pipeline):
    """bucket_unpacking_with_limit.js: a $limit before the $sort bounds the documents sorted: two
    results either way."""
    _, metas, _ = _limit_fixture(db)
    assert len(list(metas.aggregate(pipeline))) == 2


# =================================================================== timeseries_groupby_reorder_expr.js

G_T = dt.datetime(2024, 3, 4, 5, 6, 7)
GROUPBY_EXPR_CASES = {
    "meta_key_min_max": (
        [{"myMeta": "foo", "val": 10}, {"myMeta": "Foo", "val": 30}, {"myMeta": "Bar", "val": 50},
         {"myMeta": "baR", "val": 70}],
        [{"$group": {"_id": {"$toUpper": ["$myMeta"]}, "min": {"$min": "$val"}, "max": {"$max": "$val"}}}],
        [{"_id": "FOO", "min": 10, "max": 30}, {"_id": "BAR", "min": 50, "max": 70}], False),
    "meta_key_complex_expr": (
        [{"myMeta": {"a": "foo", "b": "bar"}, "val": 10}, {"myMeta": {"a": "fOo", "b": "bAr"}, "val": 30},
         {"myMeta": {"a": "foO", "b": "baR"}, "val": 50}, {"myMeta": {"a": "Foo", "b": "Bar"}, "val": 70}],
        [{"$group": {"_id": {"u": {"$concat": [{"$toUpper": "$myMeta.a"}, "-", {"$toUpper": "$myMeta.b"}]},
                             "l": {"$concat": [{"$toLower": "$myMeta.a"}, "-", {"$toLower": "$myMeta.b"}]}},
                     "min": {"$min": "$val"}, "max": {"$max": "$val"}}}],
        [{"_id": {"u": "FOO-BAR", "l": "foo-bar"}, "min": 10, "max": 70}], False),
    "measurement_key": (
        [{"myMeta": 1, "key": "a", "val": 10}, {"myMeta": 2, "key": "A", "val": 30},
         {"myMeta": 2, "key": "B", "val": 50}, {"myMeta": 1, "key": "b", "val": 70}],
        [{"$group": {"_id": {"$toUpper": ["$key"]}, "min": {"$min": "$val"}, "max": {"$max": "$val"}}}],
        [{"_id": "A", "min": 10, "max": 30}, {"_id": "B", "min": 50, "max": 70}], False),
    "meta_and_measurement_keys": (
        [{"myMeta": "foo", "key": "a", "val": 10}, {"myMeta": "Foo", "key": "A", "val": 30},
         {"myMeta": "Bar", "key": "B", "val": 50}, {"myMeta": "baR", "key": "b", "val": 70}],
        [{"$group": {"_id": {"m": {"$toUpper": ["$myMeta"]}, "k": {"$toUpper": ["$key"]}},
                     "min": {"$min": "$val"}, "max": {"$max": "$val"}}}],
        [{"_id": {"m": "FOO", "k": "A"}, "min": 10, "max": 30}, {"_id": {"m": "BAR", "k": "B"}, "min": 50, "max": 70}],
        False),
    "no_meta_field": (
        [{"myField": "foo", "val": 10}, {"myField": "Foo", "val": 30}, {"myField": "Bar", "val": 50},
         {"myField": "baR", "val": 70}],
        [{"$group": {"_id": {"m": {"$toUpper": ["$myField"]}}, "min": {"$min": "$val"}, "max": {"$max": "$val"}}}],
        [{"_id": {"m": "FOO"}, "min": 10, "max": 30}, {"_id": {"m": "BAR"}, "min": 50, "max": 70}], True),
}


@pytest.mark.parametrize("case", list(GROUPBY_EXPR_CASES))
def test_group_by_expression_of_meta(db, case):
    """timeseries_groupby_reorder_expr.js: $group whose key is an expression ($toUpper, $concat of
    $toUpper/$toLower) over the metaField, meta subfields, a measurement field, both, or a field of a
    collection without metaField, with $min/$max, returns the jstest's groups (the bucket-level
    rewrite must not change the answer)."""
    docs, pipeline, expected, no_meta = GROUPBY_EXPR_CASES[case]
    coll = _ts(db, time="time", meta=None if no_meta else "myMeta")
    coll.insert_many([{"time": G_T, **d} for d in docs])
    assert_same_members(list(coll.aggregate(pipeline)), expected)


# ===================================================================== timeseries_group_aggregations.js

def _group_aggregations_data():
    alphabet = "abcdefghijklmnopqrstuvwxyz"
    data, n = [], 0
    for meta_idx in range(5):
        meta = meta_idx if meta_idx % 2 == 0 else {"metaA": meta_idx, "metaB": meta_idx / 2}
        for i in range(10):
            millis = -1000 * i if meta_idx % 3 == 0 else 1000 * i
            data.append({"_id": n, "t": dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=millis), "m": meta,
                         "a": i, "b": alphabet[i]})
            n += 1
    return data


ALL_FIELDS = ["t", "m", "a", "b"]


def _top(path):
    return path.split(".")[0] if path else None


def _stage_lists():
    """The jstest's $project / $match / $addFields stages (with the fields each uses and produces) and
    its $group / $count stages (with the fields each uses)."""
    project = [({"$project": {"t": "$t"}}, ["t"], ["t"]), ({"$project": {"m": "$m"}}, ["m"], ["m"]),
               ({"$project": {"a": "$a"}}, ["a"], ["a"])]
    for include in (0, 1):
        project.append(({"$project": {"t": include}}, ["t"], ["t"] if include else ["m", "a", "b"]))
        project.append(({"$project": {"m": include}}, ["m"], ["m"] if include else ["t", "a", "b"]))
        project.append(({"$project": {"a": include}}, ["a"], ["a"] if include else ["t", "m", "b"]))
    add_fields = [({"$addFields": {"t": dt.datetime(1970, 1, 1, 0, 0, 0, 100000)}}, [], ALL_FIELDS),
                  ({"$addFields": {"m": 5}}, [], ALL_FIELDS), ({"$addFields": {"a": 2}}, [], ALL_FIELDS)]
    match = []
    for field, comp in [("t", dt.datetime(1970, 1, 1)), ("m", {"metaA": 1, "metaB": 1}), ("m", 3),
                        ("m.metaA", 6), ("a", 2)]:
        for op in ("$gt", "$lte", "$eq"):
            match.append(({"$match": {field: {op: comp}}}, [_top(field)], ALL_FIELDS))
    groups = [({"$count": "c"}, []),
              ({"$group": {"_id": {"m": "$m"}, "gb": {"$min": "$a"}}}, ["m", "a"]),
              ({"$group": {"_id": {"t": "$t", "m": "$m"}, "gb": {"$min": "$a"}}}, ["t", "m", "a"]),
              ({"$group": {"_id": {"a": "$a", "m": "$m"}, "gb": {"$avg": "$t"}}}, ["t", "m", "a"]),
              ({"$group": {"_id": {"a": "$a", "m": "$m.metaB"}, "gb": {"$avg": "$t"}}}, ["t", "m", "a"]),
              ({"$group": {"_id": {"$dateTrunc": {"date": "$t", "unit": "hour"}}, "gb": {"$max": "$a"}}}, ["t", "a"])]
    for key in (None, "t", "m", "m.metaA", "a"):
        dollar_key = None if key is None else "$" + key
        for data in ("t", "m", "m.metaA", "a"):
            if key == data:
                continue
            uses = [_top(data)] + ([_top(key)] if key else [])
            for acc in ("$min", "$max", "$sum", "$avg"):
                groups.append(({"$group": {"_id": dollar_key, "gb": {acc: "$" + data}}}, uses))
            for sort_by in ("t", "m", "a", "m.metaA"):
                if sort_by == key:
                    continue
                sort_uses = uses + [sort_by]
                for acc in ("$top", "$bottom"):
                    groups.append(({"$group": {"_id": dollar_key, "gb": {
                        acc: {"output": "$" + data, "sortBy": {sort_by: 1, "_id": 1}}}}}, sort_uses))
                for acc in ("$topN", "$bottomN"):
                    groups.append(({"$group": {"_id": dollar_key, "gb": {
                        acc: {"n": 3, "output": "$" + data, "sortBy": {sort_by: 1, "_id": 1}}}}}, sort_uses))
        groups.append(({"$group": {"_id": dollar_key, "gb": {"$count": {}}}}, [_top(key)] if key else []))
    return project + match + add_fields, groups


PRE_STAGES, GROUP_STAGES = _stage_lists()


def _fits(producer, uses):
    return all(u in producer[2] for u in uses)


def _group_aggregation_pipelines():
    """The jstest's search space: two different pre-stages that feed each other and the group stage."""
    out = []
    for i1, s1 in enumerate(PRE_STAGES):
        for i2, s2 in enumerate(PRE_STAGES):
            if i1 == i2 or not _fits(s1, s2[1]):
                continue
            for group, uses in GROUP_STAGES:
                if _fits(s1, uses) and _fits(s2, uses):
                    out.append([s1[0], s2[0], group])
    return out


GROUP_PIPELINES = _group_aggregation_pipelines()


@pytest.fixture
def group_collections(db):
    data = _group_aggregations_data()
    ts = _ts(db, time="t", meta="m")
    ts.insert_many([dict(d) for d in data])
    reg = _regular(db)
    reg.insert_many([dict(d) for d in data])
    return ts, reg


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pipeline=st.sampled_from(GROUP_PIPELINES))
def test_group_aggregations_agree_with_regular_collection(group_collections, pipeline):
    """timeseries_group_aggregations.js: a $project/$match/$addFields pair followed by a $group ($min,
    $max, $sum, $avg, $count, $top/$bottom(N), compound and $dateTrunc keys) or $count, over 5 series
    of mixed number/object metas and times before and after the epoch, returns exactly what an ordinary
    collection returns (sorted by _id, as the jstest compares). Hypothesis samples the jstest's few
    thousand pipelines."""
    ts, reg = group_collections
    full = pipeline + [{"$sort": {"_id": 1}}]
    assert [ordered(d) for d in ts.aggregate(full)] == [ordered(d) for d in reg.aggregate(full)]


def test_group_aggregations_pipeline_count():
    """The ported search space is the jstest's: every pipeline is well-formed for both collections."""
    assert len(GROUP_PIPELINES) > 1000


# =================================================================== timeseries_lookup_extended_range.js

STANDARD = [{"_id": 0, "t": dt.datetime(1975, 12, 1), "m": 0}, {"_id": 1, "t": dt.datetime(1980, 1, 13), "m": 1},
            {"_id": 2, "t": dt.datetime(2018, 7, 14), "m": 2}, {"_id": 3, "t": dt.datetime(2030, 9, 30), "m": 3}]
BEFORE_EPOCH = [{"_id": 4, "t": dt.datetime(1969, 12, 31, 23, 0, 59, 1000), "m": 4},
                {"_id": 5, "t": dt.datetime(1969, 12, 31, 23, 59, 59, 1000), "m": 5}]
AFTER_EPOCH = [{"_id": 6, "t": dt.datetime(2038, 1, 19, 3, 14, 7, 1000), "m": 6},
               {"_id": 7, "t": dt.datetime(2050, 1, 20, 3, 14, 0, 3000), "m": 7}]


@pytest.mark.parametrize("docs", [BEFORE_EPOCH, AFTER_EPOCH, BEFORE_EPOCH + AFTER_EPOCH,
                                  STANDARD + BEFORE_EPOCH + AFTER_EPOCH],
                         ids=["before_epoch", "after_epoch", "extended", "mixed"])
def test_lookup_sorted_extended_range_foreign_collection(db, docs):
    """timeseries_lookup_extended_range.js: a $lookup whose sub-pipeline sorts a time-series collection
    (with a {t: 1} index) holding dates outside 1970-2038 returns one local document, and (beyond the
    jstest's count) the foreign measurements in time order."""
    db.local.insert_one({"a": 1})
    foreign = _ts(db, name="foreign", time="t", meta="m")
    foreign.create_index([("t", 1)])
    foreign.insert_many([dict(d) for d in docs])
    res = list(db.local.aggregate([{"$lookup": {"from": "foreign", "pipeline": [{"$sort": {"t": 1}}],
                                                "as": "result"}}]))
    assert len(res) == 1
    assert res[0]["result"] == sorted(docs, key=lambda d: d["t"])


# ================================================================================== basic.js

def test_basic_reads_and_buckets(db):
    """basic.js (its 7.0 reading: the buckets are read from system.buckets.<name>, not with rawData):
    three measurements inserted one by one are found by aggregate, countDocuments, find and distinct
    ``_id``; every bucket document has _id, control (version, min, max) and data, and their counts add
    up to three."""
    coll = _ts(db, time="time", meta=None)
    assert "ts" in db.list_collection_names()
    now = dt.datetime(2024, 2, 3, 4, 5, 6)
    for i in range(3):
        coll.insert_one({"_id": i, "time": now + dt.timedelta(milliseconds=i)})
    assert len(list(coll.aggregate([{"$match": {}}]))) == 3
    assert coll.count_documents({}) == 3
    assert len(list(coll.find())) == 3
    assert len(coll.distinct("_id")) == 3
    total = 0
    for bucket in _buckets(db).find():
        assert {"_id", "control", "data"} <= set(bucket)
        assert {"version", "min", "max"} <= set(bucket["control"])
        total += bucket["control"].get("count", len(bucket["data"]["time"]))
    assert total == 3


# ============================================================================ timeseries_insert.js

def test_insert_tsbs_document_per_event(db):
    """timeseries_insert.js: 100 TSBS-shaped measurements (metaField "measurement" = "cpu", a ``fields``
    object of usages and a ``tags`` object of 10 hosts) inserted one at a time are all acknowledged and
    all read back, as inserted."""
    import random

    rng = random.Random(7)
    coll = _ts(db, time="time", meta="measurement")
    hosts = [{"tags": {"hostname": f"host_{i}", "region": rng.choice(["eu", "us", "ap"]), "rack": str(i % 4)},
              "fields": {"usage_user": rng.randint(0, 100), "usage_system": rng.randint(0, 100)}} for i in range(10)]
    base = dt.datetime(2024, 5, 6, 7)
    sent = []
    for i in range(100):
        host = rng.choice(hosts)
        host["fields"] = {k: min(100, max(0, v + rng.randint(-5, 5))) for k, v in host["fields"].items()}
        doc = {"_id": i, "measurement": "cpu", "time": base + dt.timedelta(milliseconds=i),
               "fields": dict(host["fields"]), "tags": dict(host["tags"])}
        assert coll.insert_one(doc).acknowledged
        sent.append(doc)
    assert list(coll.find().sort("_id", 1)) == sent


# ===================================== bucket_unpacking_with_sort_*.js (timeseries_sort_util.js setupColl)
# The jstests check that a $sort on time after a point predicate on the meta becomes a bounded sort
# (explain: $_internalBoundedSort) and that its answer equals the same pipeline with
# $_internalInhibitOptimization before the $sort (a blocking sort). The answer is what a client sees;
# where the jstest only checks that the rewrite does not happen, the port checks the answer still equals
# the blocking sort's (same documents, same sort keys in the same order: ties may come in any order).


def _sort_docs(uses_meta: bool, sub_fields: list[str] | None, per_bucket: int) -> list[dict]:
    """setupColl: per meta value, ``per_bucket`` measurements every 6 s, then as many again 3 s later
    (going back in time: two more buckets overlapping the first two)."""
    docs = []
    for j in range(10 if uses_meta else 1):
        meta: object = j
        if sub_fields:
            meta = {f: j for f in sub_fields} | {"array": [1, 2]}
        for offset in (0, 3000):
            for i in range(per_bucket):
                doc = {"t": dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=i * 6000 + offset)}
                if uses_meta:
                    doc["m"] = meta
                docs.append(doc)
    return docs


SORT_BUCKET_MAX_COUNT = 300


@pytest.fixture(scope="module")
def sort_db(tmp_path_factory):
    """One database for the sort jstests: ``plain`` (no meta), ``meta`` (m = 0..9), ``sub`` (m = {a, b,
    array}), ``sub3`` (m = {a, b, c, array}). setupColl inserts timeseriesBucketMaxCount measurements per run; the port
    starts its own server with that (startup-only) parameter at 300 so that the same overlapping-bucket
    shape (count-closed buckets, then a second run 3 s later opening buckets that overlap them) costs
    6,000 measurements per collection instead of 20,000."""
    base = tmp_path_factory.mktemp("ts-more-sort")
    proc = ServerProcess(base / "db", params={"timeseriesBucketMaxCount": SORT_BUCKET_MAX_COUNT},
                         log_path=base / "server.log")
    proc.start()
    client = proc.client()
    sdb = client["t_ts_more_sort"]
    try:
        for coll, uses_meta, sub in (("plain", False, None), ("meta", True, None), ("sub", True, ["a", "b"]),
                                     ("sub3", True, ["a", "b", "c"])):
            spec = {"timeField": "t", "metaField": "m"} if uses_meta else {"timeField": "t"}
            sdb.create_collection(coll, timeseries=spec)
            sdb[coll].insert_many(_sort_docs(uses_meta, sub, SORT_BUCKET_MAX_COUNT))
        assert sdb["system.buckets.meta"].count_documents({"meta": 7}) >= 2  # overlapping buckets per series
        yield sdb
    finally:
        client.close()
        proc.terminate()


def _sort_key_values(doc, sort_spec):
    out = []
    for path in sort_spec:
        value = doc
        for part in path.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        out.append(unordered(value))
    return out


def _check_sort(coll, sort_spec, index, hint, stages=(), after=(), nonempty=True):
    """runRewritesTest / runDoesntRewriteTest: with ``index`` (re)built and ``hint``, the pipeline
    ``stages + $sort + after`` answers exactly as with $_internalInhibitOptimization before the $sort."""
    if index is not None:
        coll.drop_indexes()
        coll.create_index(list(index.items()))
    options = {"hint": hint} if hint else {}
    opt = list(coll.aggregate([*stages, {"$sort": sort_spec}, *after], **options))
    ref = list(coll.aggregate([*stages, {"$_internalInhibitOptimization": {}}, {"$sort": sort_spec}, *after],
                              **options))
    if nonempty:
        assert ref, "the jstest's queries have non-empty results"
    assert [_sort_key_values(d, sort_spec) for d in opt] == [_sort_key_values(d, sort_spec) for d in ref]
    # Both read the same measurements through the same stages, so equal _id multisets mean equal
    # documents (every stage here keeps _id); comparing ids keeps large answers cheap.
    assert sorted(str(d["_id"]) for d in opt) == sorted(str(d["_id"]) for d in ref)
    return opt


@pytest.mark.parametrize("with_hint", [True, False], ids=["hinted", "planned"])
@pytest.mark.parametrize("t", [1, -1])
@pytest.mark.parametrize("m", [1, -1])
@pytest.mark.parametrize("sort", [1, -1])
def test_sort_on_single_field_point_query(sort_db, sort, m, t, with_hint):
    """bucket_unpacking_with_sort_on_single_field_point_queries.js: ``{$match: {m: 7}}`` then ``$sort
    {t: ±1}`` with an index {m: ±1, t: ±1} (hinted or chosen) returns meta 7's measurements (from two
    overlapping buckets) in strict time order, as the blocking sort does."""
    index = {"m": m, "t": t}
    got = _check_sort(sort_db.meta, {"t": sort}, index, index if with_hint else None, [{"$match": {"m": 7}}])
    times = [d["t"] for d in got]
    assert len(times) == 2 * SORT_BUCKET_MAX_COUNT and times == sorted(times, reverse=sort == -1)


COMPOUND_INDEXES = [{"m.a": ix_a, "m.b": ix_b, "t": ix_t, **trailing}
                    for ix_a in (-1, 1) for ix_b in (-1, 1) for ix_t in (-1, 1)
                    for trailing in ({}, {"x": 1, "y": -1})]


@pytest.mark.parametrize("ix", COMPOUND_INDEXES, ids=lambda ix: "_".join(f"{k}{v}" for k, v in ix.items()))
def test_compound_sort_on_point_queries(sort_db, ix):
    """bucket_unpacking_with_compound_sort_on_point_queries.js: with an index {m.a, m.b, t} (every
    direction, with and without trailing fields x, y), a point predicate on m.a with a sort on {m.b, t},
    and a point predicate on m.b (alone or with a range on m.a) with a sort on {m.a, t}, in every
    direction, answer as the blocking sort, hinted and planned."""
    sort_db.sub.drop_indexes()
    sort_db.sub.create_index(list(ix.items()))
    for s1 in (-1, 1):
        for s2 in (-1, 1):
            for sort, predicate in (({"m.b": s1, "t": s2}, [{"$match": {"m.a": 7}}]),
                                    ({"m.a": s1, "t": s2}, [{"$match": {"m.b": 7}}]),
                                    ({"m.a": s1, "t": s2}, [{"$match": {"m.a": {"$gte": -999, "$lte": 999},
                                                                        "m.b": 7}}])):
                _check_sort(sort_db.sub, sort, None, ix, predicate)
                _check_sort(sort_db.sub, sort, None, None, predicate)


def _negative_cases():
    """bucket_unpacking_with_sort_negative.js's configurations: (sort, index, hint, collection, stages)."""
    cases = []
    for m in (-1, 0, 1):
        for t in (-1, 0, 1):
            for k in (-1, 0, 1):
                if k != 0:
                    sort = {"k": k} if m == 0 and t == 0 else {"k": k, "t": t} if m == 0 else \
                        {"m": m, "k": k} if t == 0 else {"m": m, "k": k, "t": t}
                    cases.append((sort, sort, sort, "meta" if m else "plain", []))
                elif m != 0 and t != 0:
                    for hint in ({"m": m, "t": -t}, {"m": -m, "t": t}, {"m": -m, "t": -t}):
                        cases.append(({"m": m, "t": t}, hint, hint, "meta", []))
    cases += [
        ({"foo": 1}, {"foo": 1}, {"foo": 1}, "plain", []),
        ({"m": 1}, {"m": 1}, {"m": 1}, "meta", []),
        ({"m": 1, "t": 1}, {"m.a": 1, "t": 1}, {"m.a": 1, "t": 1}, "sub", []),
        ({"m.b": 1, "t": 1}, {"m.a": 1, "m.b": 1, "t": 1}, {"m.a": 1, "m.b": 1, "t": 1}, "sub", []),
        ({"m.a": 1, "t": 1}, {"m": 1, "t": 1}, {"m": 1, "t": 1}, "sub", []),
        ({"m.a": 1, "m.b": 1, "t": 1}, {"m": 1, "t": 1}, {"m": 1, "t": 1}, "sub", []),
        ({"m.a": 1, "t": -1}, {"m.a": 1, "t": 1}, {"m.a": 1, "t": 1}, "sub", []),
        ({"t": 1}, None, {"$natural": 1}, "meta", [{"$project": {"t": 0}}]),
        ({"t": 1}, None, {"$natural": 1}, "meta", [{"$unset": "t"}]),
        ({"t": 1}, None, {"$natural": 1}, "meta", [{"$set": {"t": {"$const": 5}}}]),
        ({"t": 1}, None, {"$natural": 1}, "meta", [{"$set": {"t": "$m.junk"}}]),
        ({"m": 1, "t": 1}, {"m": 1, "t": 1}, {"m": 1, "t": 1}, "meta", [{"$project": {"m": 0}}]),
        ({"m": 1, "t": 1}, {"m": 1, "t": 1}, {"m": 1, "t": 1}, "meta", [{"$unset": "m"}]),
        ({"m": 1, "t": 1}, {"m": 1, "t": 1}, {"m": 1, "t": 1}, "meta", [{"$set": {"m": {"$const": 5}}}]),
        ({"m": 1, "t": 1}, {"m": 1, "t": 1}, {"m": 1, "t": 1}, "meta", [{"$set": {"m": "$m.junk"}}]),
        ({"m": 1, "t": 1}, {"m": 1, "t": 1}, {"m": 1, "t": 1}, "meta", [{"$project": {"t": 0}}]),
        ({"m": 1, "t": 1}, {"m": 1, "t": 1}, {"m": 1, "t": 1}, "meta", [{"$project": {"a": 1}}]),
        ({"m": 1, "t": 1}, {"m": 1, "t": 1}, {"m": 1, "t": 1}, "meta", [{"$project": {"m.a": 0}}]),
        ({"m.a": 1, "t": 1}, {"m.a": 1, "t": 1}, {"m.a": 1, "t": 1}, "sub", [{"$project": {"m": 0}}]),
        ({"t": 1}, {"m": 1, "t": 1}, {"m": 1, "t": 1}, "meta", [{"$match": {"m": {"$gte": 5, "$lte": 6}}}]),
        ({"t": 1}, {"m": 1, "t": 1}, {"m": 1, "t": 1}, "meta", [{"$match": {"m": {"$in": [4, 5, 6]}}}]),
        ({"t": 1}, {"m.array": 1, "t": 1}, {"m.array": 1, "t": 1}, "sub", [{"$match": {"m.array": 123}}]),
        ({"t": 1}, {"m.a": 1, "t": 1, "m.array": 1}, {"m.a": 1, "t": 1, "m.array": 1}, "sub",
         [{"$match": {"m.a": 7}}]),
        ({"t": 1}, None, None, "plain", [{"$addFields": {"t": "$a"}}]),
        ({"t": 1}, None, None, "plain", [{"$project": {"t": "$a"}}]),
    ]
    return cases


NEGATIVE_CASES = _negative_cases()


@pytest.mark.parametrize("case", range(len(NEGATIVE_CASES)))
def test_sort_without_bounded_rewrite_answers_as_blocking_sort(sort_db, case):
    """bucket_unpacking_with_sort_negative.js: sorts the bounded-sort rewrite must not take (an
    intermediary non-time field, index and sort directions that disagree, meta-only sorts, mismatched
    meta paths, stages hiding or redefining t / m, range or $in predicates, a multikey index, a renamed
    time field) still answer exactly as the blocking sort (the jstest checks only explain; the port
    checks the answer). Negated meta and time together (a backward index scan) is the rewrite case."""
    sort, index, hint, coll, stages = NEGATIVE_CASES[case]
    if index is None:
        sort_db[coll].drop_indexes()
    _check_sort(sort_db[coll], sort, index, hint, stages, nonempty=False)


@pytest.fixture
def collation_colls(db):
    docs = [{"t": t, "m": m} for m in ("a", "A", "b", "B")
            for t in (dt.datetime(1970, 1, 1), dt.datetime(1970, 1, 1, 0, 0, 7))]
    cs = _ts(db, name="cs", time="t", meta="m")
    ci = _ts(db, name="ci", time="t", meta="m", collation={"locale": "en_US", "strength": 2})
    for coll in (cs, ci):
        coll.insert_many([dict(d) for d in docs])
        assert _buckets(db, coll.name).count_documents({}) == 4
    return cs, ci


def test_sort_with_collation_point_query(collation_colls):
    """bucket_unpacking_with_sort_with_collation.js: {$match: {m: "a"}} then $sort {t: 1} with an index
    {m: 1, t: 1}: the simple-collation collection returns meta "a"'s two measurements, the
    case-insensitive one those of "a" and "A" (four), in time order — with the index's collation equal
    to the query's and, after rebuilding the indexes with the other collation, without."""
    cs, ci = collation_colls
    want = {"cs": 2, "ci": 4}
    for coll in (cs, ci):
        got = _check_sort(coll, {"t": 1}, {"m": 1, "t": 1}, {"m": 1, "t": 1}, [{"$match": {"m": "a"}}])
        assert len(got) == want[coll.name]
    cs.drop_indexes()
    ci.drop_indexes()
    cs.create_index([("m", 1), ("t", 1)], collation={"locale": "en_US", "strength": 2})
    ci.create_index([("m", 1), ("t", 1)], collation={"locale": "simple"})
    for coll in (cs, ci):
        got = _check_sort(coll, {"t": 1}, None, {"m": 1, "t": 1}, [{"$match": {"m": "a"}}])
        assert len(got) == want[coll.name]
        assert [d["t"] for d in got] == sorted(d["t"] for d in got)


AREA = {"type": "Polygon", "coordinates": [[[0, 0], [3, 6], [6, 1], [0, 0]]]}


@pytest.mark.parametrize("index", [
    {"t": 1, "m.area": "2dsphere"}, {"m.a": 1, "t": 1, "m.area": "2dsphere"},
    {"t": 1, "loc": "2dsphere"}, {"m.a": 1, "t": 1, "loc": "2dsphere"},
], ids=["t_meta_area", "ma_t_meta_area", "t_loc", "ma_t_loc"])
def test_sort_with_geo_index(db, index):
    """bucket_unpacking_with_sort_with_geo.js: two measurements of one bucket (a polygon meta, points
    far apart) with a (multikey) 2dsphere index on the meta or a measurement field: the index is built,
    and {$match: {m.a: 7}} + $sort {t: 1} hinted to it answers as the blocking sort (nothing)."""
    coll = _ts(db, time="t", meta="m")
    coll.insert_many([{"t": dt.datetime(1970, 1, 1), "m": {"area": AREA}, "loc": [0, 0]},
                      {"t": dt.datetime(1970, 1, 1), "m": {"area": AREA}, "loc": [90, 0]}])
    assert _buckets(db).count_documents({}) == 1
    coll.create_index(list(index.items()))
    assert _check_sort(coll, {"t": 1}, None, index, [{"$match": {"m.a": 7}}], nonempty=False) == []


# =========================================================== timeseries_delete_compressed_buckets.js

def _compressed_bucket_collection(db):
    """1,100 measurements of one meta at one time: a full bucket of _id 0..999 (closed by count; 7.0
    compresses it, Tidemark keeps every bucket as a version 1 document by project decision, so the
    jstest's control.version checks are not ported) and an open one of 1000..1099."""
    coll = _ts(db, time="time", meta="tag")
    stamp = dt.datetime(2021, 7, 12, 16)
    coll.insert_many([{"_id": i, "time": stamp, "tag": "meta", "f": i, "str": "even" if i % 2 == 0 else "odd"}
                      for i in range(1100)])
    buckets = list(_buckets(db).find().sort("control.min._id", 1))
    assert len(buckets) == 2
    assert (buckets[0]["control"]["min"]["f"], buckets[0]["control"]["max"]["f"]) == (0, 999)
    assert buckets[1]["control"]["min"]["f"] == 1000
    return coll


def test_delete_many_across_compressed_and_open_buckets(db):
    """timeseries_delete_compressed_buckets.js: deleteMany {str: "even"} removes 550 measurements from the
    full (closed) bucket and the open one alike; every "odd" one is left."""
    coll = _compressed_bucket_collection(db)
    assert coll.delete_many({"str": "even"}).deleted_count == 550
    assert coll.count_documents({"str": "even"}) == 0
    assert coll.count_documents({"str": "odd"}) == 550


def test_delete_one_from_compressed_bucket(db):
    """timeseries_delete_compressed_buckets.js: deleteOne {f: {$lt: 100}} removes exactly one measurement
    of the full (closed) bucket."""
    coll = _compressed_bucket_collection(db)
    assert coll.delete_one({"f": {"$lt": 100}}).deleted_count == 1
    assert coll.count_documents({"f": {"$lt": 100}}) == 99
    assert coll.count_documents({}) == 1099


# ========================================================== timeseries_insert_compresses_bucket.js

def test_insert_writes_uncompressed_buckets(db):
    """timeseries_insert_compresses_bucket.js, 7.0 (featureFlagTimeseriesAlwaysUseCompressedBuckets off):
    an insert makes a version 1 (uncompressed) bucket; a measurement before the bucket's control.min.time
    opens a second bucket, also version 1."""
    coll = _ts(db, time="time", meta=None)
    coll.insert_one({"time": dt.datetime(2024, 7, 1, 10), "x": 0})
    (bucket,) = _buckets(db).find()
    assert bucket["control"]["version"] == 1
    coll.insert_one({"time": dt.datetime(2019, 8, 11, 7, 30, 10, 957000), "x": 1})
    buckets = list(_buckets(db).find())
    assert len(buckets) == 2
    assert [b["control"]["version"] for b in buckets] == [1, 1]


# ========================================================== timeseries_closed_update_delete.js

def test_meta_update_and_delete_skip_closed_buckets(db):
    """timeseries_closed_update_delete.js: once its bucket is marked ``control.closed: true`` (a
    findAndModify on system.buckets), a metaField updateMany and a meta deleteMany succeed and change
    nothing: both measurements still have meta "a"."""
    coll = _ts(db, time="time", meta="meta")
    coll.insert_many([{"_id": 0, "time": dt.datetime(2020, 11, 26), "meta": "a", "x": 0},
                      {"_id": 1, "time": dt.datetime(2020, 11, 26, 0, 10), "meta": "a", "x": 10}])
    assert len(list(coll.find({"meta": "a"}))) == 2
    _buckets(db).find_one_and_update({"meta": "a"}, {"$set": {"control.closed": True}})
    coll.update_many({"meta": {"$eq": "a"}}, {"$set": {"meta": "b"}})
    assert len(list(coll.find({"meta": "a"}))) == 2
    assert len(list(coll.find({"meta": "b"}))) == 0
    coll.delete_many({"meta": {"$eq": "a"}})
    assert len(list(coll.find({"meta": "a"}))) == 2
    assert len(list(coll.find({"meta": "b"}))) == 0


# ========================================================= timeseries_buckets_find_and_modify.js

WRITES_T = dt.datetime(2021, 7, 12, 16)
W1 = {"_id": 1, "time": WRITES_T, "tag": "A"}
W2 = {"_id": 2, "time": WRITES_T, "tag": "A", "f": 101}
W3 = {"_id": 3, "time": WRITES_T, "tag": "A", "f": 102}
W4 = {"_id": 4, "time": WRITES_T, "tag": "B", "f": 103}
W5 = {"_id": 5, "time": WRITES_T, "tag": "B", "f": 104}
W6 = {"_id": 6, "time": WRITES_T, "tag": "C", "f": 105}
W7 = {"_id": 7, "time": WRITES_T, "tag": "C", "f": 106}
WALL = [W1, W2, W3, W4, W5, W6, W7]


def _writes_collection(db, docs):
    coll = _ts(db, time="time", meta="tag")
    coll.insert_many([dict(d) for d in docs])
    return coll


@pytest.mark.parametrize("index", [0, 1, 2])
def test_buckets_find_and_modify_remove_by_id(db, index):
    """timeseries_buckets_find_and_modify.js "testBucketDeleteById": findAndModify remove on
    system.buckets.<c> by a bucket's _id removes that bucket (n 1) and only it."""
    _writes_collection(db, WALL)
    before = list(_buckets(db).find())
    assert len(before) == 3
    target = before[index]
    reply = db.command({"findAndModify": "system.buckets.ts", "query": {"_id": target["_id"]}, "remove": True})
    assert reply["lastErrorObject"]["n"] == 1
    after = list(_buckets(db).find())
    assert len(after) == 2 and target["_id"] not in [b["_id"] for b in after]


@pytest.mark.parametrize("index", [0, 1, 2])
def test_buckets_find_and_modify_update_meta_by_id(db, index):
    """timeseries_buckets_find_and_modify.js "testBucketMetaUpdateById": findAndModify on
    system.buckets.<c> by _id with {$set: {meta: "D"}} and new: true returns the bucket with meta "D";
    the number of buckets is unchanged and the view shows those measurements with tag "D"."""
    coll = _writes_collection(db, WALL)
    before = list(_buckets(db).find())
    target = before[index]
    reply = db.command({"findAndModify": "system.buckets.ts", "query": {"_id": target["_id"]},
                        "update": {"$set": {"meta": "D"}}, "new": True})
    assert reply["lastErrorObject"]["n"] == 1
    assert reply["value"]["meta"] == "D"
    assert _buckets(db).count_documents({}) == len(before)
    assert coll.count_documents({"tag": "D"}) == coll.count_documents({}) - sum(
        1 for d in WALL if d["tag"] != target["meta"])


# ===================================================== timeseries_find_and_modify_remove_sort.js

def test_find_and_modify_remove_with_sort(db):
    """timeseries_find_and_modify_remove_sort.js, as 7.0 answers it (the jstest is
    multiversion_incompatible: "older binaries reject findAndModify with sort on any timeseries
    collection"): ``{query: {f: {$gt: 100}}, remove: true, sort: {f: 1}}`` fails with InvalidOptions (72)
    and the three measurements stay."""
    coll = _writes_collection(db, [W1, W4, W6])
    cmd = {"findAndModify": "ts", "query": {"f": {"$gt": 100}}, "remove": True, "sort": {"f": 1}}
    assert error_code(lambda: db.command(cmd)) == 72
    assert_same_members(list(coll.find()), [W1, W4, W6])


# ========================================================= timeseries_findAndModify_basic.js

def test_find_and_modify_basic_as_70_answers(db):
    """timeseries_findAndModify_basic.js (featureFlagTimeseriesUpdatesSupport), as 7.0 answers it on a
    collection without metaField: findAndModify with an update is refused (72) and changes nothing; a
    findAndModify on system.buckets updates a bucket's control.max._id; findAndModify remove deletes one
    measurement matching its query and returns it."""
    coll = _ts(db, time="time", meta=None)
    stamp = dt.datetime(2025, 8, 20, 18)
    for i in range(10):
        coll.insert_one({"_id": i, "time": stamp})
    cmd = {"findAndModify": "ts", "query": {"_id": {"$gt": 0}}, "update": {"$set": {"t2": stamp}}}
    assert error_code(lambda: db.command(cmd)) == 72
    assert coll.count_documents({"t2": {"$exists": True}}) == 0
    db.command({"findAndModify": "system.buckets.ts", "query": {}, "update": {"$set": {"control.max._id": 100}}})
    assert _buckets(db).count_documents({"control.max._id": 100}) == 1
    reply = db.command({"findAndModify": "ts", "query": {"_id": {"$gt": 5}}, "remove": True})
    assert reply["lastErrorObject"]["n"] == 1 and reply["value"]["_id"] > 5
    assert coll.count_documents({"_id": reply["value"]["_id"]}) == 0
    assert coll.count_documents({}) == 9


# ================================================== timeseries_findAndModify_deletes_hints.js

HINT_T = dt.datetime(2021, 1, 1, 18)
HA = {"_id": 1, "time": HINT_T, "tag": {"a": 1}, "measurement": 1}
HB = {"_id": 2, "time": HINT_T, "tag": {"a": 2}, "measurement": 2}
HC = {"_id": 3, "time": HINT_T, "tag": {"a": 3}, "measurement": 3}

HINT_CASES = {
    "natural_forward": ({"tag": {"a": 1}}, {"$natural": 1}, [{"tag": 1}], [HB, HC], None),
    "natural_backward": ({"tag": {"a": 1}}, {"$natural": -1}, [{"tag": 1}], [HB, HC], None),
    "meta_index_spec": ({"tag": {"a": 1}}, {"tag": 1}, [{"tag": 1}], [HB, HC], None),
    "time_meta_index_spec": ({"tag": {"a": 1}}, {"time": 1, "tag": 1}, [{"time": 1, "tag": 1}], [HB, HC], None),
    "time_desc_meta_index_spec": ({"tag": {"a": 2}}, {"time": -1, "tag": 1}, [{"time": -1, "tag": 1}],
                                  [HA, HC], None),
    "index_name": ({"tag": {"a": 2}}, "time_1_tag_1", [{"time": 1, "tag": 1}], [HA, HC], None),
    "time_index_among_several": ({"tag": {"a": 3}}, {"time": 1}, [{"tag": -1}, {"time": 1}], [HA, HB], None),
    "unknown_index_name": ({"tag": {"a": 3}}, "test_hint", [{"tag": -1}, {"time": 1}], [HA, HB, HC], 2),
    "unknown_index_spec": ({"tag": {"a": 3}}, {"test_hint": 1}, [{"time": 1, "tag": 1}], [HA, HB, HC], 2),
}


@pytest.mark.parametrize("case", list(HINT_CASES))
def test_find_and_modify_remove_with_hint(db, case):
    """timeseries_findAndModify_deletes_hints.js: findAndModify remove with a hint — $natural either way,
    an index by its user key pattern (metaField, time + metaField, descending time) or by name — removes
    the one matching measurement; a hint naming no index fails with BadValue (2) and removes nothing."""
    query, hint, indexes, left, error = HINT_CASES[case]
    coll = _ts(db, time="time", meta="tag")
    for index in indexes:
        coll.create_index(list(index.items()))
    coll.insert_many([dict(d) for d in (HA, HB, HC)])
    cmd = {"findAndModify": "ts", "query": query, "remove": True, "hint": hint}
    if error is not None:
        assert error_code(lambda: db.command(cmd)) == error
    else:
        assert db.command(cmd)["lastErrorObject"]["n"] == 1
    assert_same_members(list(coll.find()), left)


# =================================================== timeseries_update_delete_extended_range.js

EXTENDED = [{"time": dt.datetime(1968, 1, 1), "tag": 1, "_id": 0, "a": 10},
            {"time": dt.datetime(1971, 1, 1), "tag": 1, "_id": 1, "a": 10},
            {"time": dt.datetime(2035, 1, 1), "tag": 1, "_id": 2, "a": 10},
            {"time": dt.datetime(2040, 1, 1), "tag": 1, "_id": 3, "a": 10}]
NORMAL = [{"time": dt.datetime(1972, 1, 1), "tag": 1, "_id": 0, "a": 10},
          {"time": dt.datetime(1975, 1, 1), "tag": 1, "_id": 1, "a": 10},
          {"time": dt.datetime(2035, 1, 1), "tag": 1, "_id": 2, "a": 10},
          {"time": dt.datetime(2038, 1, 1), "tag": 1, "_id": 3, "a": 10}]

EXTENDED_REMOVE_CASES = {
    "extended_range_gt_1972": (EXTENDED, {"$gt": dt.datetime(1972, 1, 1)}, 2),
    "normal_gt_1972": (NORMAL, {"$gt": dt.datetime(1972, 1, 1)}, 1),
    "normal_gt_1950_matches_all": (NORMAL, {"$gt": dt.datetime(1950, 1, 1)}, 0),
    "normal_lt_1950_matches_none": (NORMAL, {"$lt": dt.datetime(1950, 1, 1)}, None),
}


@pytest.mark.parametrize("case", list(EXTENDED_REMOVE_CASES))
def test_find_and_modify_remove_extended_range(db, case):
    """timeseries_update_delete_extended_range.js (its findOneAndRemove cases; the findOneAndUpdate ones
    need 7.1's arbitrary updates and are refused with 72 by 7.0): with dates before 1970 / after 2038 in
    the collection, or a predicate date outside that range, findAndModify remove on a time predicate
    deletes the first matching measurement (all in one bucket, in _id order) — or nothing — and returns
    it."""
    docs, predicate, deleted = EXTENDED_REMOVE_CASES[case]
    coll = _ts(db, time="time", meta="tag")
    coll.insert_many([dict(d) for d in docs])
    reply = db.command({"findAndModify": "ts", "query": {"time": predicate}, "remove": True})
    if deleted is None:
        assert reply["lastErrorObject"]["n"] == 0 and reply["value"] is None
        assert_same_members(list(coll.find()), docs)
        return
    assert reply["lastErrorObject"]["n"] == 1
    gone = reply["value"]
    assert gone["_id"] in [d["_id"] for d in docs if _time_matches(d["time"], predicate)]
    assert_same_members(list(coll.find()), [d for d in docs if d["_id"] != gone["_id"]])


def _time_matches(value, predicate):
    ((op, bound),) = predicate.items()
    return value > bound if op == "$gt" else value < bound


@pytest.mark.parametrize("docs", [EXTENDED, NORMAL], ids=["extended", "normal"])
def test_find_and_modify_update_extended_range_is_refused(db, docs):
    """timeseries_update_delete_extended_range.js (findOneAndUpdate, 7.1+), as 7.0 answers it: a
    findAndModify update of a measurement field is refused with 72 and nothing changes."""
    coll = _ts(db, time="time", meta="tag")
    coll.insert_many([dict(d) for d in docs])
    cmd = {"findAndModify": "ts", "query": {"time": {"$gt": dt.datetime(1972, 1, 1)}}, "update": {"$set": {"a": 20}}}
    assert error_code(lambda: db.command(cmd)) == 72
    assert_same_members(list(coll.find()), docs)


@pytest.mark.parametrize("ix", COMPOUND_INDEXES, ids=lambda ix: "_".join(f"{k}{v}" for k, v in ix.items()))
def test_sort_on_multiple_fields_point_queries(sort_db, ix):
    """bucket_unpacking_with_sort_on_multiple_fields_point_queries.js: point predicates on m.a and m.b
    and a sort on t (either way), with an index {m.a, m.b, t} in every direction (with and without
    trailing fields), hinted and planned, answer as the blocking sort, in strict time order."""
    sort_db.sub.drop_indexes()
    sort_db.sub.create_index(list(ix.items()))
    for sort in (-1, 1):
        for hint in (ix, None):
            got = _check_sort(sort_db.sub, {"t": sort}, None, hint, [{"$match": {"m.a": 5, "m.b": 5}}])
            times = [d["t"] for d in got]
            assert times == sorted(times, reverse=sort == -1) and len(set(times)) == len(times)


MULTI_POINT_INDEX = {"m.a": 1, "m.b": 1, "m.c": 1, "t": -1}
_TIME_RANGE = {"t": {"$gt": dt.datetime(1970, 1, 1, 0, 0, 1), "$lte": dt.datetime(1970, 1, 1, 0, 50)}}


@pytest.mark.parametrize(("sort", "predicate"), [
    ({"m.a": 1, "m.b": 1, "m.c": 1, "t": -1}, {"m.a": 5, "m.b": 5, "m.c": 5}),
    ({"m.a": -1, "m.b": -1, "m.c": -1, "t": 1}, {"m.a": 5, "m.b": 5, "m.c": 5}),
    ({"m.a": 1, "m.b": 1, "m.c": 1, "t": 1}, {"m.a": 5, "m.b": 5, "m.c": 5}),
    ({"m.a": -1, "m.b": 1, "m.c": -1, "t": -1}, {"m.a": 5, "m.b": 5, "m.c": 5}),
    ({"m.a": -1, "m.b": 1, "m.c": 1, "t": -1}, {"m.a": 5, "m.c": 5}),
    ({"m.a": -1, "m.b": -1, "m.c": 1, "t": 1}, {"m.a": 5, "m.c": 5}),
    ({"m.a": 1, "m.b": -1, "m.c": -1, "t": -1}, {"m.a": 5, "m.c": 5}),
    ({"m.a": 1, "m.b": 1, "m.c": -1, "t": 1}, {"m.a": 5, "m.c": 5}),
    ({"m.a": 1, "m.b": -1, "m.c": 1, "t": -1}, {"m.a": 5, "m.c": 5}),
    ({"m.a": -1, "m.b": 1, "m.c": -1, "t": 1}, {"m.a": 5, "m.c": 5}),
], ids=lambda v: "_".join(f"{k}{x}" for k, x in v.items()) if isinstance(v, dict) else str(v))
def test_sort_multiple_point_queries(sort_db, sort, predicate):
    """bucket_unpacking_with_sort_multiple_point_queries.js (a 9.0 rewrite; the answers are the same in
    7.0): an index {m.a, m.b, m.c, t: -1}, point predicates on every meta subfield (or on m.a and m.c)
    with a time range, and compound sorts in every direction, hinted, answer as the blocking sort (the
    time range keeps them non-empty)."""
    _check_sort(sort_db.sub3, sort, MULTI_POINT_INDEX, MULTI_POINT_INDEX, [{"$match": {**predicate, **_TIME_RANGE}}])


# ============================================================ bucket_unpacking_group_reorder_fixed_buckets.js

GF_START = dt.datetime(2022, 9, 30, 15)
GF_OFFSET = dt.timedelta(seconds=3600)
GF_TIMES = [GF_START - GF_OFFSET, GF_START - GF_OFFSET / 2, GF_START - GF_OFFSET / 3, GF_START,
            GF_START + GF_OFFSET / 3, GF_START + GF_OFFSET / 2, GF_START + GF_OFFSET]
GF_B = [2, 1, 4, 3, 5, 6, 7]
GF_DOCS = [{"_id": i, "time": t, "mt": "MDB", "b": GF_B[i], "otherTime": t} for i, t in enumerate(GF_TIMES)]
_MINMAX = {"accmin": {"$min": "$b"}, "accmax": {"$max": "$b"}}

GROUP_FIXED_CASES = {
    "hour": ({"t": {"$dateTrunc": {"date": "$time", "unit": "hour"}}}, _MINMAX,
             [{"_id": {"t": dt.datetime(2022, 9, 30, 15)}, "accmin": 3, "accmax": 6},
              {"_id": {"t": dt.datetime(2022, 9, 30, 16)}, "accmin": 7, "accmax": 7},
              {"_id": {"t": dt.datetime(2022, 9, 30, 14)}, "accmin": 1, "accmax": 4}]),
    "day_all_options": ({"t": {"$dateTrunc": {"date": "$time", "unit": "day", "timezone": "+0500", "binSize": 2,
                                              "startOfWeek": "friday"}}}, _MINMAX,
                        [{"_id": {"t": dt.datetime(2022, 9, 29, 19)}, "accmin": 1, "accmax": 7}]),
    "constant_meta_day": ({"constant": "hello", "m": "$mt", "t": {"$dateTrunc": {"date": "$time", "unit": "day"}}},
                          _MINMAX, [{"_id": {"t": dt.datetime(2022, 9, 30), "m": "MDB", "constant": "hello"},
                                     "accmin": 1, "accmax": 7}]),
    "meta_day_plus0800": ({"m": "$mt", "t": {"$dateTrunc": {"date": "$time", "unit": "day", "timezone": "+0800"}}},
                          _MINMAX, [{"_id": {"m": "MDB", "t": dt.datetime(2022, 9, 29, 16)}, "accmin": 1, "accmax": 6},
                                    {"_id": {"m": "MDB", "t": dt.datetime(2022, 9, 30, 16)}, "accmin": 7, "accmax": 7}]),
    "year": ({"t": {"$dateTrunc": {"date": "$time", "unit": "year"}}}, _MINMAX,
             [{"_id": {"t": dt.datetime(2022, 1, 1)}, "accmin": 1, "accmax": 7}]),
    "month_count": ({"c": "string", "t": {"$dateTrunc": {"date": "$time", "unit": "month"}}},
                    {**_MINMAX, "count": {"$count": {}}},
                    [{"_id": {"c": "string", "t": dt.datetime(2022, 9, 1)}, "accmin": 1, "accmax": 7, "count": 7}]),
    "kathmandu_24h": ({"t": {"$dateTrunc": {"date": "$time", "unit": "hour", "binSize": 24,
                                            "timezone": "Asia/Kathmandu"}}}, _MINMAX,
                      [{"_id": {"t": dt.datetime(2022, 9, 29, 18, 15)}, "accmin": 1, "accmax": 7}]),
    "second": ({"t": {"$dateTrunc": {"date": "$time", "unit": "second"}}}, _MINMAX,
               [{"_id": {"t": t}, "accmin": b, "accmax": b} for t, b in zip(GF_TIMES, GF_B, strict=True)]),
    "other_time_day": ({"t": {"$dateTrunc": {"date": "$otherTime", "unit": "day"}}}, _MINMAX,
                       [{"_id": {"t": dt.datetime(2022, 9, 30)}, "accmax": 7, "accmin": 1}]),
    "meta_other_time_day": ({"m": "$mt", "t": {"$dateTrunc": {"date": "$otherTime", "unit": "day"}}},
                            {"accmax": {"$max": "$b"}},
                            [{"_id": {"m": "MDB", "t": dt.datetime(2022, 9, 30)}, "accmax": 7}]),
    "non_constant_bin_size": ({"t": {"$dateTrunc": {"date": "$time", "unit": "hour", "binSize": "$a"}}}, _MINMAX,
                              [{"_id": {"t": None}, "accmax": 7, "accmin": 1}]),
}


@pytest.mark.parametrize("case", list(GROUP_FIXED_CASES))
def test_group_by_date_trunc_on_fixed_buckets(db, case):
    """bucket_unpacking_group_reorder_fixed_buckets.js: on fixed 3600 s buckets, $group keyed by
    $dateTrunc of the time field (hour, day with timezone/binSize/startOfWeek, month with $count, year,
    with a constant and the meta beside it) — the rewrite's cases — and keys the rewrite must not take
    (an unaligned timezone, unit second, another date field, a non-constant binSize) return the
    jstest's groups, as an ordinary collection does."""
    key, accumulators, expected = GROUP_FIXED_CASES[case]
    pipeline = [{"$group": {"_id": key, **accumulators}}]
    actual, reference = _differential(db, GF_DOCS, pipeline, time="time", meta="mt",
                                      options={"bucketMaxSpanSeconds": 3600, "bucketRoundingSeconds": 3600})
    assert_same_members(reference, expected)
    assert_same_members(actual, expected)


# ====================================================== bucket_unpacking_with_match_fixed_buckets.js

def _fixed_match_cases(start, rounding):
    off = dt.timedelta(seconds=rounding)
    times = [start - off, start - off / 2, start - off / 3, start, start + off / 3, start + off / 2, start + off]
    docs = [{"_id": i, "time": t, "mt": {"id": 1234, "location": "nyc"}, "otherTime": t, "accValue": i * 2}
            for i, t in enumerate(times)]
    m = lambda flt: {"$match": flt}  # noqa: E731
    cases = [
        ([m({"time": {"$lt": times[2]}})], [0, 1]),
        ([m({"time": {"$lt": start}})], [0, 1, 2]),
        ([m({"time": {"$lte": start}})], [0, 1, 2, 3]),
        ([m({"time": {"$gt": start}})], [4, 5, 6]),
        ([m({"time": {"$gt": times[4]}})], [5, 6]),
        ([m({"time": {"$gte": start}})], [3, 4, 5, 6]),
        ([m({"time": {"$gte": times[4]}})], [4, 5, 6]),
        ([m({"time": start})], [3]),
        ([m({"time": times[0]})], [0]),
        ([m({"time": {"$in": [start, times[4]]}})], [3, 4]),
        ([m({"time": {"$in": [start, times[6]]}})], [3, 6]),
        ([m({"$or": [{"time": {"$gte": times[6]}}, {"time": {"$lt": start}}]})], [0, 1, 2, 6]),
        ([m({"time": {"$lt": start}}), m({"time": {"$gte": times[0]}})], [0, 1, 2]),
        ([m({"$or": [{"time": {"$gte": times[5]}}, {"time": {"$lt": times[2]}}, {"time": {"$lte": times[0]}}]})],
         [5, 6, 1, 0]),
        ([m({"time": {"$in": [start, times[4]]}}), m({"time": {"$lt": times[5]}}), m({"time": {"$gte": times[4]}})],
         [4]),
        ([m({"time": {"$lt": start}}), m({"otherTime": {"$gte": times[0]}})], [0, 1, 2]),
        ([m({"time": {"$lt": dt.datetime(1969, 9, 3)}})], []),
        ([m({"time": {"$lt": dt.datetime(2040, 9, 3)}})], list(range(7))),
    ]
    group = [m({"time": {"$lt": start}}),
             {"$group": {"_id": "$mt", "accmin": {"$min": "$accValue"}, "accmax": {"$max": "$accValue"}}}]
    return docs, cases, group


@pytest.mark.parametrize(("rounding", "start"), [(3600, dt.datetime(2022, 9, 30, 15)), (86400, dt.datetime(2022, 9, 30)),
                                                 (60, dt.datetime(2022, 9, 30, 15, 10))], ids=["hour", "day", "minute"])
def test_match_on_fixed_buckets(db, rounding, start):
    """bucket_unpacking_with_match_fixed_buckets.js "testDeterministicInput": on fixed buckets (span =
    rounding = 1 min, 1 h, 1 day), $match on the time field — $lt/$lte/$gt/$gte on and off the bucket
    boundaries, $eq, $in, $or, consecutive $match stages, another date field, extended-range dates —
    and a $match + $group (the whole-bucket rewrite) return exactly the jstest's measurements; after a
    collMod to 100000 s buckets (no longer fixed) $gte still answers the same."""
    docs, cases, group = _fixed_match_cases(start, rounding)
    coll = _ts(db, time="time", meta="mt", timeseries={"bucketMaxSpanSeconds": rounding,
                                                        "bucketRoundingSeconds": rounding})
    coll.insert_many([dict(d) for d in docs])
    for pipeline, ids in cases:
        assert_same_members(list(coll.aggregate(pipeline)), [docs[i] for i in ids])
    assert list(coll.aggregate(group)) == [{"_id": {"id": 1234, "location": "nyc"}, "accmin": 0, "accmax": 4}]
    db.command({"collMod": "ts", "timeseries": {"bucketMaxSpanSeconds": 100000, "bucketRoundingSeconds": 100000}})
    assert_same_members(list(coll.aggregate([{"$match": {"time": {"$gte": start}}}])), docs[3:])


FIXED_LOW, FIXED_HIGH = dt.datetime(2012, 1, 1, 0, 1), dt.datetime(2015, 12, 31, 23, 59, 59)
FIXED_SPAN_MS = int((FIXED_HIGH - FIXED_LOW).total_seconds() * 1000)
RANDOM_TIME = st.integers(0, FIXED_SPAN_MS).map(lambda ms: FIXED_LOW + dt.timedelta(milliseconds=ms))
# times on a 900 s bucket boundary, one millisecond either side, or anywhere
NEAR_BOUNDARY = st.one_of(
    RANDOM_TIME,
    st.tuples(st.integers(0, FIXED_SPAN_MS // 900000), st.sampled_from([-1, 0, 1])).map(
        lambda p: dt.datetime(2012, 1, 1) + dt.timedelta(milliseconds=p[0] * 900000 + p[1])),
)


@HYPO
@given(times=st.lists(NEAR_BOUNDARY, min_size=1, max_size=60), bound=NEAR_BOUNDARY,
       op=st.sampled_from(["$lt", "$lte", "$gt", "$gte", "$eq"]))
def test_match_on_fixed_buckets_random(db, times, bound, op):
    """bucket_unpacking_with_match_fixed_buckets.js "testRandomizedInput", generalized: measurements at
    random times in 2012-2015 (many on or next to a 900 s bucket boundary) in fixed 900 s buckets; a
    time comparison with a random or boundary-aligned bound answers as with
    $_internalInhibitOptimization before the $match, and as an ordinary collection."""
    coll = _ts(db, time="time", meta="mt", timeseries={"bucketMaxSpanSeconds": 900, "bucketRoundingSeconds": 900})
    reg = _regular(db)
    docs = [{"_id": i, "time": t, "mt": "location"} for i, t in enumerate(times)]
    coll.insert_many([dict(d) for d in docs])
    reg.insert_many([dict(d) for d in docs])
    stage = {"$match": {"time": {op: bound}}}
    got = list(coll.aggregate([stage]))
    assert_same_members(got, list(coll.aggregate([{"$_internalInhibitOptimization": {}}, stage])))
    assert_same_members(got, list(reg.aggregate([stage])))


# ======================================== timeseries_internal_bounded_sort_compound.js / _overflow.js

@pytest.fixture(scope="module")
def bounded_db(client):
    """timeseries_internal_bounded_sort_compound.js's data: 5 series of 600 measurements a minute apart
    (10 hours: several buckets each), with the four {m: ±1, t: ±1} indexes."""
    name = "t_ts_more_bounded"
    client.drop_database(name)
    bdb = client[name]
    bdb.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    for m in (1, -1):
        for t in (1, -1):
            bdb.ts.create_index([("m", m), ("t", t)])
    start = dt.datetime(2024, 4, 5, 6, 7, 8)
    for series in range(5):
        for batch in range(5):
            bdb.ts.insert_many([{"m": series, "t": start + dt.timedelta(minutes=batch * 120 + i)}
                                for i in range(120)])
    span = bdb.command("listCollections", filter={"name": "ts"})["cursor"]["firstBatch"][0]["options"][
        "timeseries"]["bucketMaxSpanSeconds"]
    assert bdb["system.buckets.ts"].count_documents({}) >= (600 * 60 // span) * 5
    yield bdb
    client.drop_database(name)


def _assert_m_t_sorted(docs, spec):
    keys = [(d["m"] * spec["m"], d["t"]) for d in docs]
    for (m1, t1), (m2, t2) in zip(keys, keys[1:], strict=False):
        assert m1 < m2 or (m1 == m2 and (t1 == t2 or (t1 < t2) == (spec["t"] > 0)))


@pytest.mark.parametrize("spec", [{"m": 1, "t": 1}, {"m": 1, "t": -1}, {"m": -1, "t": 1}, {"m": -1, "t": -1}],
                         ids=["m1_t1", "m1_t-1", "m-1_t1", "m-1_t-1"])
def test_bounded_sort_compound(bounded_db, spec):
    """timeseries_internal_bounded_sort_compound.js: a $sort on {m, t} (every direction) over the whole
    collection — unhinted, hinted to the matching index and to the reversed one — and with $limit 100
    returns the blocking sort's answer (the unpacked buckets sorted after $_internalInhibitOptimization),
    in {m, t} order. The jstest's direct $_internalBoundedSort pipelines over the buckets are below."""
    coll = bounded_db.ts
    reference = list(coll.aggregate([{"$_internalInhibitOptimization": {}}, {"$sort": spec}]))
    assert len(reference) == 3000
    _assert_m_t_sorted(reference, spec)
    reverse = {"m": -spec["m"], "t": -spec["t"]}
    for hint in (None, spec, reverse):
        got = list(coll.aggregate([{"$sort": spec}], **({"hint": hint} if hint else {})))
        assert [(d["m"], d["t"]) for d in got] == [(d["m"], d["t"]) for d in reference]
    limited = list(coll.aggregate([{"$sort": spec}, {"$limit": 100}]))
    assert [(d["m"], d["t"]) for d in limited] == [(d["m"], d["t"]) for d in reference[:100]]


BOUNDED_SORT_STAGE = ("the $_internalBoundedSort stage is not implemented: with enableTestCommands an aggregate "
                      "on system.buckets.<c> using it fails with 40324 (unrecognized pipeline stage); MongoDB "
                      "7.0 registers it when test commands are enabled and runs it (sortKey, bound {base: "
                      "min|max, offsetSeconds}, limit)")
UNPACK_T = {"$_internalUnpackBucket": {"timeField": "t", "metaField": "m", "bucketMaxSpanSeconds": 3600}}


def test_bounded_sort_stage_needs_test_commands(db):
    """7.0 registers $_internalBoundedSort only with enableTestCommands (the jstest suites set it):
    without, the stage is unrecognized (40324)."""
    _ts(db, time="t", meta="m").insert_one({"t": dt.datetime(2000, 1, 1)})
    stage = {"$_internalBoundedSort": {"sortKey": {"t": 1}, "bound": {"base": "min"}}}
    assert error_code(lambda: list(_buckets(db).aggregate([UNPACK_T, stage]))) == 40324


@pytest.mark.xfail(strict=True, reason=BOUNDED_SORT_STAGE)
def test_bounded_sort_stage_overflow(start_server):
    """timeseries_internal_bounded_sort_overflow.js (enableTestCommands, as the jstest suites run): two
    events a month apart (their distance in ms overflows an int32) sorted by $sort control.min.t +
    $_internalUnpackBucket + $_internalBoundedSort {sortKey: {t: 1}, bound: {base: "min"}} come out in
    time order."""
    with start_server(params={"enableTestCommands": 1}).client() as client:
        db = client.bounded
        coll = _ts(db, time="t", meta="m")
        docs = [{"t": dt.datetime(2000, 1, 1)}, {"t": dt.datetime(2000, 2, 1)}]
        coll.insert_many([dict(d) for d in docs])
        result = list(_buckets(db).aggregate([
            {"$sort": {"control.min.t": 1}}, UNPACK_T,
            {"$_internalBoundedSort": {"sortKey": {"t": 1}, "bound": {"base": "min"}}}]))
        assert [d["t"] for d in result] == [d["t"] for d in docs]


# ============================================================= timeseries_lastpoint_common_sort_key.js

LP = {"t0": dt.datetime(2016, 1, 1, 0, 0, 28), "t1": dt.datetime(2016, 1, 1, 0, 5, 17),
      "t2": dt.datetime(2016, 1, 1, 0, 10, 42), "t3": dt.datetime(2016, 1, 1, 0, 15, 50),
      "t4": dt.datetime(2016, 1, 1, 0, 20, 6), "t5": dt.datetime(2016, 1, 1, 0, 25, 59),
      "t6": dt.datetime(2016, 1, 1, 0, 30, 1)}


@pytest.mark.parametrize("pipeline", [
    [{"$group": {"_id": "$m", "acc1": {"$bottom": {"sortBy": {"t": 1}, "output": ["$x"]}},
                 "acc2": {"$bottom": {"sortBy": {"t": 1}, "output": ["$a"]}}}}],
    [{"$group": {"_id": "$m", "acc1": {"$top": {"sortBy": {"t": -1}, "output": ["$x"]}},
                 "acc2": {"$top": {"sortBy": {"t": -1}, "output": ["$a"]}}}}],
], ids=["bottom_t_asc", "top_t_desc"])
def test_lastpoint_common_sort_key(db, pipeline):
    """timeseries_lastpoint_common_sort_key.js: three overlapping buckets of series 1 (each new one
    opened by an earlier time: control.max.t t3, t4, t5) and one of series 2; several $top/$bottom
    accumulators sharing the time sort return each series' lastpoint (x 5, a 15 for m 1; x 6, a 16 for m
    2), as the lastpoint rewrite must."""
    coll = _ts(db, time="t", meta="m")
    for t, x in (("t2", 2), ("t4", 4), ("t1", 1), ("t5", 5), ("t0", 0), ("t3", 3)):
        coll.insert_one({"t": LP[t], "m": 1, "x": x, "a": 10 + x})
    coll.insert_one({"t": LP["t6"], "m": 2, "x": 6, "a": 16})
    assert_same_members([{"t": b["control"]["max"]["t"]} for b in _buckets(db).find()],
                 [{"t": LP[k]} for k in ("t3", "t4", "t5", "t6")])
    assert_same_members(list(coll.aggregate(pipeline)), [{"_id": 1, "acc1": [5], "acc2": [15]},
                                                  {"_id": 2, "acc1": [6], "acc2": [16]}])


# ========================================================= timeseries_ixscan_clusteredidxscan_union.js

UNION_PREFIX = dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=1680912440)


def _ums(n):
    return UNION_PREFIX + dt.timedelta(milliseconds=n)


UNION_FILTER = {"$or": [{"time": {"$lte": _ums(100)}}, {"$and": [{"x": {"$lt": 3}}, {"x": {"$in": [1, 2, 4]}}]}]}
UNION_CASES = {
    "project_x": ([{"$project": {"_id": 0, "x": 1}}], [{"x": 1}, {}]),
    "project_x_path": ([{"$project": {"_id": 0, "x": "$x"}}], [{"x": 1}, {}]),
    "count": ([{"$group": {"_id": None, "count": {"$sum": 1}}}], [{"_id": None, "count": 2}]),
    "project_time": ([{"$project": {"_id": 0, "time": 1}}], [{"time": _ums(100)}, {"time": _ums(450)}]),
    "project_time_path": ([{"$project": {"_id": 0, "time": "$time"}}], [{"time": _ums(100)}, {"time": _ums(450)}]),
    "count_and_max": ([{"$group": {"_id": None, "count": {"$sum": 1}, "x": {"$max": "$x"}}}],
                      [{"_id": None, "count": 2, "x": 1}]),
    "max_time": ([{"$group": {"_id": None, "time": {"$max": "$time"}}}], [{"_id": None, "time": _ums(450)}]),
}


@pytest.mark.parametrize("case", list(UNION_CASES))
def test_or_of_index_and_clustered_scans(db, case):
    """timeseries_ixscan_clusteredidxscan_union.js: with indexes {x: 1} and {x: 1, time: 1}, a $match
    $or of a time bound (a clustered _id range) and x predicates (index scans) followed by $project or
    $group returns the jstest's two measurements."""
    stages, expected = UNION_CASES[case]
    coll = _ts(db, time="time", meta="measurement")
    coll.create_index([("x", 1)])
    coll.create_index([("x", 1), ("time", 1)])
    xs = {3: 4, 7: 1, 9: 5}
    for i in range(10):
        doc = {"_id": i, "time": _ums(100 + 50 * i), "measurement": i}
        if i in xs:
            doc["x"] = xs[i]
        coll.insert_one(doc)
    assert_same_members(list(coll.aggregate([{"$match": UNION_FILTER}, *stages])), expected)


# ========================================================================= timeseries_partial_index_opt.js

def test_partial_index_queries(db):
    """timeseries_partial_index_opt.js (its answers; the fetch-filter shape is explain): with partial
    indexes {time: 1} where tag > 1 and {tag: 1} where b >= 10, the queries those indexes serve return
    exactly the matching measurements."""
    coll = _ts(db, time="time", meta="tag")
    docs = [{"_id": 0, "time": dt.datetime(2021, 7, 29, 7, 46, 38, 746000), "tag": 2, "a": 5},
            {"_id": 1, "time": dt.datetime(2021, 8, 29, 0, 15, 38, 1000), "tag": 1, "a": 5, "b": 8},
            {"_id": 2, "time": dt.datetime(2021, 11, 29, 12, 20, 34, 821000), "tag": 1, "a": 7, "b": 12},
            {"_id": 3, "time": dt.datetime(2021, 3, 9, 7, 29, 34, 201000), "tag": 2, "a": 2, "b": 7},
            {"_id": 4, "time": dt.datetime(2021, 10, 9, 7, 29, 34, 201000), "tag": 4, "a": 8, "b": 10}]
    coll.insert_many([dict(d) for d in docs])
    coll.create_index([("time", 1)], name="time_1_tag", partialFilterExpression={"tag": {"$gt": 1}})
    assert_same_members(list(coll.find({"time": {"$gte": dt.datetime(2021, 10, 1)}, "tag": {"$gt": 1}})), [docs[4]])
    coll.create_index([("tag", 1)], name="tag_1_b", partialFilterExpression={"b": {"$gte": 10}})
    assert_same_members(list(coll.find({"tag": {"$gt": 1}, "b": {"$gte": 10}})), [docs[4]])
    assert_same_members(list(coll.find({"time": {"$gte": dt.datetime(2021, 10, 1)}, "tag": {"$gt": 1}}).hint("time_1_tag")),
                 [docs[4]])


# ============================================================================ timeseries_resume_after.js

def test_resume_after_on_buckets(db):
    """timeseries_resume_after.js: a find on system.buckets.<c> ($natural, batchSize 1) with
    $_requestResumeToken returns a postBatchResumeToken with a $recordId; resuming after it at the end
    returns nothing and a null $recordId; resuming on the time-series view fails with
    InvalidPipelineOperator (168). Not ported: the stored jstest's "resuming from a null $recordId is
    KeyNotFound" and "a NumberLong $recordId on a clustered collection is 7738600" (codes of 7.1+
    servers; the generic find, outside the time-series code, answers 2 / resumes from the start)."""
    coll = _ts(db, time="time", meta=None)
    base = dt.datetime(2024, 9, 1, 12)
    for i in range(100):
        coll.insert_one({"measurement": "cpu", "time": base + dt.timedelta(milliseconds=i),
                         "fields": {"usage": i % 7}, "tags": {"host": f"h{i % 10}"}})
    assert _buckets(db).count_documents({}) == 1
    find = {"find": "system.buckets.ts", "hint": {"$natural": 1}, "batchSize": 1, "$_requestResumeToken": True}
    res = db.command(find)
    assert res["cursor"]["firstBatch"]
    token = res["cursor"]["postBatchResumeToken"]
    assert token["$recordId"] is not None
    db.command({"killCursors": "system.buckets.ts", "cursors": [res["cursor"]["id"]]})
    res = db.command({**find, "$_resumeAfter": token})
    assert res["cursor"]["firstBatch"] == []
    assert res["cursor"]["postBatchResumeToken"]["$recordId"] is None
    from bson.binary import Binary
    assert error_code(lambda: db.command({"find": "ts", "filter": {}, "$_requestResumeToken": True,
                                     "$_resumeAfter": {"$recordId": Binary(b"\xd7m\xf8", 5)},
                                     "hint": {"$natural": 1}})) == 168


# ========================================================================= timeseries_show_record_id.js

def test_show_record_id(db):
    """timeseries_show_record_id.js: showRecordId on the time-series view fails with
    InvalidPipelineOperator (168) (the view is an aggregation); on system.buckets.<c> every bucket
    carries a $recordId."""
    coll = _ts(db, time="time", meta=None)
    base = dt.datetime(2024, 9, 1, 12)
    coll.insert_many([{"measurement": "cpu", "time": base + dt.timedelta(seconds=i), "fields": {"u": i}}
                      for i in range(100)])
    assert error_code(lambda: db.command({"find": "ts", "showRecordId": True})) == 168
    buckets = db.command({"find": "system.buckets.ts", "showRecordId": True})["cursor"]["firstBatch"]
    assert buckets and all("$recordId" in b for b in buckets)


# ========================================================================== timeseries_out_non_sharded.js

def _out_sources(db):
    """TimeseriesAggTests.prepareInputCollections: 10 hosts x 20 iterations of cpu measurements in a
    time-series collection "in" and the same documents in an ordinary "observer_in"."""
    db.create_collection("in", timeseries={"timeField": "time", "metaField": "tags"})
    docs, base = [], dt.datetime(2024, 2, 2, 2)
    for it in range(20):
        for host in range(10):
            docs.append({"_id": it * 10 + host, "time": base + dt.timedelta(seconds=it * 10 + host),
                         "tags": {"hostname": f"host_{host}", "region": "r" + str(host % 3)},
                         "usage_guest": (it * host) % 100, "usage_guest_nice": (it + host) % 100})
    db["in"].insert_many([dict(d) for d in docs])
    db.observer_in.insert_many([dict(d) for d in docs])
    return db["in"], db.observer_in


def test_out_from_timeseries_source(db):
    """timeseries_out_non_sharded.js: $out from a time-series collection writes the measurements an
    ordinary source's $out writes — to an ordinary collection, to a new time-series collection (with the
    given options), replacing that time-series collection (options and indexes kept; with a $set of the
    time, every measurement has the new time), and to another database."""
    src, observer = _out_sources(db)
    observer.aggregate([{"$out": "observer_out"}])
    src.aggregate([{"$out": "out_time"}])
    assert_same_members(list(db.out_time.find()), list(db.observer_out.find()))
    assert "timeseries" not in db.command("listCollections", filter={"name": "out_time"})["cursor"]["firstBatch"][0][
        "options"]
    db.drop_collection("out_time")
    src.aggregate([{"$out": {"db": db.name, "coll": "out_time", "timeseries": {"timeField": "time", "metaField": "tags"}}}])
    assert_same_members(list(db.out_time.find()), list(db.observer_out.find()))
    options = db.command("listCollections", filter={"name": "out_time"})["cursor"]["firstBatch"][0]["options"]
    assert options["timeseries"]["timeField"] == "time" and options["timeseries"]["metaField"] == "tags"
    # (a TTL that has not expired the 2024 measurements: with 360 s, as the jstest's, the session server's TTL
    # monitor, which runs every second, could remove the replaced collection's buckets before the count reads them)
    db.command({"collMod": "out_time", "expireAfterSeconds": 400_000_000})
    db.out_time.create_index([("usage_guest", 1)])
    src.aggregate([{"$out": "out_time"}])
    assert db.out_time.count_documents({}) == 200
    assert "usage_guest_1" in [i["name"] for i in db.out_time.list_indexes()]
    # (the jstest's date is in 1999, which the kept TTL would expire at once; a date ahead does not race)
    new_date = dt.datetime(2099, 9, 30, 3, 24)
    src.aggregate([{"$set": {"time": new_date}}, {"$out": {"db": db.name, "coll": "out_time",
                                                           "timeseries": {"timeField": "time", "metaField": "tags"}}}])
    assert [d["time"] for d in db.out_time.find({}, {"time": 1})] == [new_date] * 200
    other = db.client[db.name + "_dest"]
    db.client.drop_database(other.name)
    try:
        src.aggregate([{"$out": {"db": other.name, "coll": "out_time", "timeseries": {"timeField": "time"}}}])
        assert other.out_time.count_documents({}) == 200
    finally:
        db.client.drop_database(other.name)


@pytest.mark.parametrize(("target", "ts", "code"), [
    ("observer_out", {"timeField": "time"}, 7268700),
    ("out_time", {"timeField": "time", "invalidField": "invalid"}, 40415),
    ("out_time", {"timeField": "usage_guest_nice"}, 7406103),
    ("out_time", {"timeField": "time", "metaField": "usage_guest_nice"}, 7406103),
    ("out_time", {"timeField": "time", "bucketMaxSpanSeconds": 330, "bucketRoundingSeconds": 330}, 7406103),
    ("out_time", {"timeField": "time", "granularity": "minutes"}, 7406103),
    ("view_out", {"timeField": "time"}, 7268703),
], ids=["over_regular", "invalid_option", "time_field", "meta_field", "span", "granularity", "over_view"])
def test_out_timeseries_errors(db, target, ts, code):
    """timeseries_out_non_sharded.js: $out with timeseries options over an ordinary collection
    (7268700), with an unknown option (40415), changing an existing time-series target's time field,
    metaField, bucket span or granularity (7406103), or over a view (7268703) fails the same from a
    time-series source and from an ordinary one."""
    src, observer = _out_sources(db)
    observer.aggregate([{"$out": "observer_out"}])
    db.create_collection("out_time", timeseries={"timeField": "time", "metaField": "tags"})
    db.command({"create": "view_out", "viewOn": "out"})
    pipeline = [{"$out": {"db": db.name, "coll": target, "timeseries": ts}}]
    assert error_code(lambda: list(src.aggregate(pipeline))) == code
    assert error_code(lambda: list(observer.aggregate(pipeline))) == code


# ======================================================= timeseries_internal_bounded_sort_compound_mixed_types.js

def _mixed_type_values():
    values = ["a", "A", "b", "B", [5], [5, 99], [99], {"x": 1, "y": 2}, {"y": 2, "x": 1}, 7.0, 7, Int64(7),
              Decimal128("7"), None, [], {}, ""]
    return values + [[v] for v in values] + [{"w": v} for v in values]


def _mixed_type_docs():
    docs = []
    for _ in (1, 2):
        for m in _mixed_type_values():
            docs.append({"_id": len(docs), "m": m, "t": dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=len(docs))})
        docs.append({"_id": len(docs), "t": dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=len(docs))})
    return docs


@pytest.mark.parametrize("spec", [{"m": 1, "t": 1}, {"m": 1, "t": -1}, {"m": -1, "t": 1}, {"m": -1, "t": -1}],
                         ids=["m1_t1", "m1_t-1", "m-1_t1", "m-1_t-1"])
def test_compound_sort_mixed_meta_types(db, spec):
    """timeseries_internal_bounded_sort_compound_mixed_types.js: metas with interesting equality under a
    case-insensitive collation (case-only string differences, arrays sharing an extreme element, field
    order, numbers of four types, null / [] / {} / "" / missing, each also wrapped in an array and an
    object), two events each with unique times: a $sort on {m, t} of the time-series collection gives
    the only valid order — the one an ordinary collection with the same collation holding the same
    measurements (metas field-order normalized, as stored) gives — and there are
    at most as many buckets as distinct metas."""
    collation = {"locale": "en_US", "strength": 2}
    docs = _mixed_type_docs()
    coll = _ts(db, time="t", meta="m", collation=collation)
    coll.insert_many([dict(d) for d in docs])
    assert _buckets(db).count_documents({}) <= 1 + len(_mixed_type_values())
    db.drop_collection("reg")
    reg = db.create_collection("reg", collation=collation)
    reg.insert_many(list(coll.find()))  # the measurements as stored: object metas in normalized field order
    pipeline = [{"$sort": spec}, {"$project": {"_id": 1}}]
    assert list(coll.aggregate(pipeline)) == list(reg.aggregate(pipeline))


@pytest.mark.xfail(strict=True, reason=BOUNDED_SORT_STAGE)
def test_bounded_sort_stage_mixed_meta_types(start_server):
    """timeseries_internal_bounded_sort_compound_mixed_types.js (enableTestCommands): the buckets sorted
    by {meta, control.min.t}, unpacked and passed through $_internalBoundedSort {sortKey: {m: 1, t: 1},
    bound: {base: "min", offsetSeconds: -36000}} equal the naive unpack + blocking sort (the stage's
    equality is $sort's)."""
    with start_server(params={"enableTestCommands": 1}).client() as client:
        db = client.bounded
        coll = _ts(db, time="t", meta="m", collation={"locale": "en_US", "strength": 2})
        coll.insert_many(_mixed_type_docs())
        naive = list(_buckets(db).aggregate([UNPACK_T, {"$_internalInhibitOptimization": {}},
                                             {"$sort": {"m": 1, "t": 1}}]))
        bounded = list(_buckets(db).aggregate([
            {"$sort": {"meta": 1, "control.min.t": 1}}, UNPACK_T,
            {"$_internalBoundedSort": {"sortKey": {"m": 1, "t": 1},
                                       "bound": {"base": "min", "offsetSeconds": -36000}}}]))
        assert bounded == naive


# ========================================================================== agg_stage_coverage.js

COVERAGE_STAGES = {
    "$_internalInhibitOptimization": [{"$_internalInhibitOptimization": {}}],
    "$addFields": [{"$addFields": {"newField": "$value"}}],
    "$bucket": [{"$bucket": {"groupBy": "$value", "boundaries": [0, 50, 100]}}],
    "$bucketAuto": [{"$bucketAuto": {"groupBy": "$value", "buckets": 2}}],
    "$count": [{"$count": "total"}],
    "$densify": [{"$densify": {"field": "time", "range": {"step": 1, "unit": "millisecond", "bounds": "full"}}}],
    "$facet": [{"$facet": {"pipeline1": [{"$match": {"value": {"$gt": 0}}}], "pipeline2": [{"$limit": 5}]}}],
    "$fill": [{"$fill": {"sortBy": {"time": 1}, "output": {"value": {"method": "linear"}}}}],
    "$geoNear": [{"$geoNear": {"near": {"type": "Point", "coordinates": [106.65589, 10.787627]}, "key": "m.loc",
                               "distanceField": "m.distance"}}],
    "$graphLookup": [{"$graphLookup": {"from": "other", "startWith": "$_id", "connectFromField": "_id",
                                       "connectToField": "parent", "as": "graph"}}],
    "$group": [{"$group": {"_id": "$m.tag", "total": {"$sum": "$value"}}}],
    "$limit": [{"$limit": 5}],
    "$lookup": [{"$lookup": {"from": "other", "localField": "_id", "foreignField": "_id", "as": "joined"}}],
    "$match": [{"$match": {"value": {"$gt": 20}}}],
    "$project": [{"$project": {"time": 1, "value": 1}}],
    "$redact": [{"$redact": {"$cond": {"if": {"$gt": ["$value", 50]}, "then": "$$DESCEND", "else": "$$PRUNE"}}}],
    "$replaceRoot": [{"$replaceRoot": {"newRoot": "$m"}}],
    "$replaceWith": [{"$replaceWith": "$m"}],
    "$sample": [{"$sample": {"size": 1}}],
    "$set": [{"$set": {"newField": "$value"}}],
    "$setWindowFields": [{"$setWindowFields": {"sortBy": {"time": 1}, "output": {"rank": {"$rank": {}}}}}],
    "$skip": [{"$skip": 1}],
    "$sortByCount": [{"$sortByCount": "$m.tag"}],
    "$sort": [{"$sort": {"time": 1}}],
    "$unset": [{"$unset": "value"}],
    "$unwind": [{"$unwind": {"path": "$tags", "preserveNullAndEmptyArrays": True}}],
    "$unionWith": [{"$unionWith": {"coll": "other"}}],
    "$collStats": [{"$collStats": {"latencyStats": {}}}],
    "$indexStats": [{"$indexStats": {}}],
    "$merge": [{"$merge": {"into": "outputCollection"}}],
    "$out": [{"$out": "outputCollection"}],
}
BUCKET_LEVEL_STAGES = {"$collStats", "$indexStats"}
WRITING_STAGES = {"$merge", "$out"}


@pytest.fixture
def coverage_db(db):
    coll = _ts(db, time="time", meta="m")
    coll.create_index([("m.loc", "2dsphere")])
    coll.create_index([("m.tag", 1)])
    start = dt.datetime(2024, 10, 1, 8)
    for i in range(10):
        coll.insert_one({"_id": i, "time": start + dt.timedelta(seconds=i), "m": {"tag": "A", "loc": [40, 40]},
                         "value": i * 10})
    assert len(list(coll.find({"time": {"$gt": start}, "m.tag": "A"}))) == 9
    db.other.insert_many([{"_id": i, "other": i * 20} for i in range(10)])
    return db


@pytest.mark.parametrize("stage", list(COVERAGE_STAGES))
def test_agg_stage_coverage(coverage_db, stage):
    """agg_stage_coverage.js (the stages a 7.0 server has): every aggregation stage runs on a
    time-series collection; those reading measurements return some and no bucket document (no
    ``control``), $collStats / $indexStats answer about the collection, $out / $merge return nothing."""
    result = list(coverage_db.ts.aggregate(COVERAGE_STAGES[stage]))
    if stage in WRITING_STAGES:
        assert result == []
        assert coverage_db.outputCollection.count_documents({}) == 10
        return
    assert result
    if stage not in BUCKET_LEVEL_STAGES:
        assert "control" not in result[0]


# ===================================================== timeseries_update_compressed_buckets.js

def test_update_many_measurements_as_70_answers(db):
    """timeseries_update_compressed_buckets.js (requires_fcv_71: arbitrary updates), as 7.0 answers it:
    updateMany {str: "even"} {$inc: {updated: 1}} over a full and an open bucket queries a non-meta
    field (72) and updateOne is a non-multi update (72); no measurement changes."""
    coll = _compressed_bucket_collection(db)
    reply = db.command({"update": "ts", "updates": [{"q": {"str": "even"}, "u": {"$inc": {"updated": 1}}, "multi": True}]})
    assert [e["code"] for e in reply["writeErrors"]] == [72] and reply["nModified"] == 0
    reply = db.command({"update": "ts", "updates": [{"q": {"str": "even", "f": {"$lt": 100}},
                                                     "u": {"$inc": {"updated": 1}}}]})
    assert [e["code"] for e in reply["writeErrors"]] == [72] and reply["nModified"] == 0
    assert coll.count_documents({"updated": {"$exists": True}}) == 0


# ================================================== timeseries_findAndModify_updates_hints.js

@pytest.mark.parametrize("hint", [{"$natural": 1}, {"tag": 1}, "tag_1", "test_hint"],
                         ids=["natural", "meta_index", "index_name", "unknown"])
def test_find_and_modify_update_with_hint_as_70_answers(db, hint):
    """timeseries_findAndModify_updates_hints.js (featureFlagTimeseriesUpdatesSupport), as 7.0 answers
    it: findAndModify with an update is a single update, refused with 72 whatever the hint; the
    measurements are unchanged."""
    coll = _ts(db, time="time", meta="tag")
    coll.create_index([("tag", 1)])
    coll.insert_many([dict(d) for d in (HA, HB, HC)])
    cmd = {"findAndModify": "ts", "query": {"tag": {"a": 1}}, "update": {"$set": {"measurement": 10}}, "hint": hint}
    assert error_code(lambda: db.command(cmd)) == 72
    assert_same_members(list(coll.find()), [HA, HB, HC])


# ================================================ timeseries_delete_preserves_control_min_time.js

@pytest.mark.parametrize(("times", "delete", "n"), [
    ([dt.datetime(2024, 1, 1, 0, 5, 10), dt.datetime(2024, 1, 1, 0, 30), dt.datetime(2024, 1, 1, 0, 45)],
     {"q": {"_id": 0}, "limit": 1}, 1),
    ([dt.datetime(2024, 1, 1, 0, 5, 10), dt.datetime(2024, 1, 1, 0, 5, 20), dt.datetime(2024, 1, 1, 0, 30)],
     {"q": {"v": {"$lt": 3}}, "limit": 0}, 2),
], ids=["delete_one", "delete_many"])
def test_delete_preserves_control_min_time(db, times, delete, n):
    """timeseries_delete_preserves_control_min_time.js: deleting the earliest measurement(s) of a bucket
    (granularity seconds: control.min.t is the first time rounded down to the minute) leaves one bucket
    whose control.min.t is unchanged."""
    coll = _ts(db, time="t", meta="m", timeseries={"granularity": "seconds"})
    coll.insert_many([{"_id": i, "t": t, "m": "a", "v": i + 1} for i, t in enumerate(times)])
    (before,) = _buckets(db).find()
    assert db.command({"delete": "ts", "deletes": [delete]})["n"] == n
    (after,) = _buckets(db).find()
    assert after["control"]["min"]["t"] == before["control"]["min"]["t"]


# ================================================ timeseries_insert_mixed_schema_bucket.js / _update_...

def _mixed_bucket(a0, a1, lo, hi):
    return {
        "_id": ObjectId("65a6eb806ffc9fa4280ecac4"),
        "control": {"version": 1,
                    "min": {"_id": ObjectId("65a6eba7e6d2e848e08c3750"), "t": dt.datetime(2024, 1, 16, 20, 48), "a": lo},
                    "max": {"_id": ObjectId("65a6eba7e6d2e848e08c3751"),
                            "t": dt.datetime(2024, 1, 16, 20, 48, 39, 448000), "a": hi}},
        "meta": 0,
        "data": {"_id": {"0": ObjectId("65a6eba7e6d2e848e08c3750"), "1": ObjectId("65a6eba7e6d2e848e08c3751")},
                 "t": {"0": dt.datetime(2024, 1, 16, 20, 48, 39, 448000),
                       "1": dt.datetime(2024, 1, 16, 20, 48, 39, 448000)},
                 "a": {"0": a0, "1": a1}},
    }


def test_direct_insert_of_mixed_schema_bucket(db):
    """timeseries_insert_mixed_schema_bucket.js, as 7.0 answers it (the jstest is requires_fcv_80: the
    refusal CannotInsertTimeseriesBucketsWithMixedSchema and the $listCatalog flag are 8.0's): a bucket
    whose field ``a`` holds "a" and 1 inserted into system.buckets.<c> is accepted, its measurements read
    back with their own types, ``{a: {$lte: 1}}`` and ``{a: {$gte: "a"}}`` each find theirs, and the
    bucket can be deleted."""
    coll = _ts(db)
    _buckets(db).insert_one(_mixed_bucket("a", 1, 1, "a"))
    assert sorted(map(str, (d["a"] for d in coll.find()))) == ["1", "a"]
    assert [d["a"] for d in coll.find({"a": {"$lte": 1}})] == [1]
    assert [d["a"] for d in coll.find({"a": {"$gte": "a"}})] == ["a"]
    assert _buckets(db).delete_one({"_id": ObjectId("65a6eb806ffc9fa4280ecac4")}).deleted_count == 1
    assert coll.count_documents({}) == 0


def test_direct_update_making_a_mixed_schema_bucket(db):
    """timeseries_update_mixed_schema_bucket.js, as 7.0 answers it (requires_fcv_80 refusal not in
    7.0): a direct update of a bucket ({$set: control.min.a 1, control.max.a "a", data.a.0 "a"}) is
    accepted and the view shows the measurement's new string value beside the other's 1."""
    coll = _ts(db)
    _buckets(db).insert_one(_mixed_bucket(0, 1, 0, 1))
    reply = _buckets(db).update_one({"_id": ObjectId("65a6eb806ffc9fa4280ecac4")},
                                    {"$set": {"control.min.a": 1, "control.max.a": "a", "data.a.0": "a"}})
    assert reply.modified_count == 1
    assert sorted(map(str, (d["a"] for d in coll.find()))) == ["1", "a"]
    assert [d["a"] for d in coll.find({"a": "a"})] == ["a"]


# ========================================================= bucket_unpacking_with_sort_extended_range.js

@pytest.fixture(scope="module")
def extended_db(client):
    """A bucket of 1,000 measurements a minute apart from 1969-01-01 and five from 2002-01-01 offset by
    10 s each (overlapping), in ``plain`` and in ``indexed`` (with {t: 1})."""
    name = "t_ts_more_extended"
    client.drop_database(name)
    edb = client[name]
    for coll in ("plain", "indexed"):
        edb.create_collection(coll, timeseries={"timeField": "t"})
    edb.indexed.create_index([("t", 1)])
    starts = [dt.datetime(1969, 1, 1)] + [dt.datetime(2002, 1, 1) + dt.timedelta(milliseconds=i * 10000)
                                          for i in range(5)]
    for start in starts:
        batch = [{"t": start + dt.timedelta(minutes=j)} for j in range(1000)]
        edb.plain.insert_many([dict(d) for d in batch])
        edb.indexed.insert_many([dict(d) for d in batch])
    assert edb["system.buckets.plain"].count_documents({}) > 1
    yield edb
    client.drop_database(name)


@pytest.mark.parametrize("ascending", [True, False], ids=["ascending", "descending"])
def test_sort_extended_range_dates(extended_db, ascending):
    """bucket_unpacking_with_sort_extended_range.js: with dates before 1970 in the collection, $sort on
    t — unhinted, hinted $natural either way, hinted to the {t: 1} index and (after creating it) to a
    reverse {t: -1} index — returns all 6,000 measurements in strictly increasing (decreasing) time,
    exactly the blocking sort's answer."""
    direction = 1 if ascending else -1
    for coll, hints in ((extended_db.plain, [None, {"$natural": direction}]),
                        (extended_db.indexed, [None, {"t": 1}, {"$natural": direction}])):
        reference = [d["t"] for d in coll.aggregate([{"$_internalInhibitOptimization": {}}, {"$sort": {"t": direction}}])]
        assert len(reference) == 6000
        assert all((a < b) if ascending else (a > b) for a, b in zip(reference, reference[1:], strict=False))
        for hint in hints:
            got = [d["t"] for d in coll.aggregate([{"$sort": {"t": direction}}], **({"hint": hint} if hint else {}))]
            assert got == reference, hint
    extended_db.indexed.create_index([("t", -1)], name="reverseIdx")
    try:
        got = [d["t"] for d in extended_db.indexed.aggregate([{"$sort": {"t": direction}}], hint={"t": -1})]
        assert got == reference
    finally:
        extended_db.indexed.drop_index("reverseIdx")


# ========================================================== timeseries_update_delete_fixed_bucket.js

FB_START = dt.datetime(2023, 2, 6, 1, 30)
FB_OFF = dt.timedelta(seconds=900)
FB_TIMES = [FB_START - FB_OFF / 2, FB_START, FB_START + FB_OFF / 2, FB_START + FB_OFF]
FB_A_EARLY = {"time": FB_TIMES[0], "tag": 1, "_id": 1, "a": 2, "b": 1}
FB_B_START = {"time": FB_TIMES[1], "tag": 1, "_id": 1, "b": 1}
FB_A_LATE = {"time": FB_TIMES[2], "tag": 1, "_id": 1, "b": 1, "a": 3}
FB_A_LATEST = {"time": FB_TIMES[3], "tag": 1, "_id": 1, "b": 1, "a": 5}

FIXED_REMOVE_CASES = {
    "lt_unaligned": ([FB_B_START, FB_A_LATE, FB_A_LATEST], {"time": {"$lt": FB_TIMES[2]}}, [FB_A_LATE, FB_A_LATEST]),
    "eq": ([FB_B_START, FB_A_LATE], {"time": FB_TIMES[2]}, [FB_B_START]),
    "gte_aligned": ([FB_B_START, FB_A_LATE, FB_A_LATEST], {"time": {"$gte": FB_TIMES[3]}}, [FB_B_START, FB_A_LATE]),
}


def _fixed_collection(db, docs):
    coll = _ts(db, time="time", meta="tag", timeseries={"bucketMaxSpanSeconds": 900, "bucketRoundingSeconds": 900})
    coll.insert_many([dict(d) for d in docs])
    return coll


@pytest.mark.parametrize("case", list(FIXED_REMOVE_CASES))
def test_find_and_modify_remove_on_fixed_buckets(db, case):
    """timeseries_update_delete_fixed_bucket.js (findOneAndRemove): on fixed 900 s buckets, a time
    predicate aligned with a bucket boundary ($gte) or not ($lt mid-bucket, $eq) removes the one
    measurement it matches and returns it."""
    docs, query, left = FIXED_REMOVE_CASES[case]
    coll = _fixed_collection(db, docs)
    reply = db.command({"findAndModify": "ts", "query": query, "remove": True})
    assert reply["lastErrorObject"]["n"] == 1
    assert_same_members(list(coll.find()), left)
    assert_same_members([reply["value"]], [d for d in docs if d not in left])


@pytest.mark.parametrize(("query", "left"), [
    ({"time": {"$lte": FB_TIMES[3]}}, None),
    ({"time": {"$lte": FB_TIMES[0]}}, [FB_B_START, FB_A_LATE, FB_A_LATEST]),
], ids=["lte_many_buckets", "lte_first"])
def test_delete_one_on_fixed_buckets(db, query, left):
    """timeseries_update_delete_fixed_bucket.js (deleteOne): on fixed buckets a deleteOne whose time
    predicate matches measurements of several buckets deletes one; one matching only the earliest
    deletes exactly it."""
    docs = [FB_A_EARLY, FB_B_START, FB_A_LATE, FB_A_LATEST]
    coll = _fixed_collection(db, docs)
    assert coll.delete_one(query).deleted_count == 1
    remaining = list(coll.find())
    assert len(remaining) == 3
    if left is not None:
        assert_same_members(remaining, left)


@pytest.mark.parametrize(("query", "update", "extra"), [
    ({"time": {"$lt": FB_START}}, {"$unset": {"a": ""}}, {}),
    ({"time": {"$gt": FB_START}}, [{"$set": {"tag": 2}}], {}),
    ({"time": {"$gte": FB_TIMES[3]}}, dict(FB_A_LATEST), {"new": True, "upsert": True}),
    ({"$and": [{"time": {"$lt": FB_TIMES[3]}}, {"time": {"$gte": FB_TIMES[1]}}]}, {"$set": {"tag": 2}}, {}),
    ({"time": {"$gte": FB_START}, "tag": {"$eq": 1}}, {"$set": {"a": 10}}, {}),
], ids=["unset_metric", "pipeline", "replacement_upsert", "conjunction_meta_set", "meta_and_time_metric_set"])
def test_find_and_modify_update_on_fixed_buckets_as_70_answers(db, query, update, extra):
    """timeseries_update_delete_fixed_bucket.js (findOneAndUpdate / updateOne: 7.1's arbitrary updates),
    as 7.0 answers it: each is a single update, refused with 72; nothing changes."""
    docs = [FB_A_EARLY, FB_B_START, FB_A_LATE]
    coll = _fixed_collection(db, docs)
    assert error_code(lambda: db.command({"findAndModify": "ts", "query": query, "update": update, **extra})) == 72
    assert_same_members(list(coll.find()), docs)


# ======================================== generalized: metas of many BSON types, mixed schemas, boundaries
# (timeseries_group_aggregations.js / timeseries_match_pushdown_nan.js state the invariant: a time-series
# collection answers as an ordinary collection holding the same measurements.)

from bson import MaxKey, MinKey  # noqa: E402

SCALARS = st.one_of(
    st.integers(-3, 3), st.integers(-3, 3).map(Int64), st.sampled_from([0.5, -1.5, 2.0, NAN, float("inf")]),
    st.sampled_from([Decimal128("1"), Decimal128("-0.5"), Decimal128("NaN")]), st.sampled_from(["", "a", "A", "b"]),
    st.booleans(), st.none(), st.sampled_from([MinKey(), MaxKey()]),
    st.sampled_from([dt.datetime(1969, 12, 31, 23, 59), dt.datetime(2000, 1, 1), dt.datetime(2040, 1, 1)]),
    st.sampled_from([ObjectId("65a6eb806ffc9fa4280ecac4"), ObjectId("000000000000000000000000")]),
)
BSON_VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["x", "y"]), inner, max_size=2)), max_leaves=5)
BOUNDARY_TIMES = st.tuples(st.integers(0, 3), st.sampled_from([-1, 0, 1, 1800000])).map(
    lambda p: dt.datetime(2024, 1, 1) + dt.timedelta(milliseconds=p[0] * 3600000 + p[1]))
MEASUREMENT = st.fixed_dictionaries({"t": BOUNDARY_TIMES}, optional={"m": BSON_VALUES, "a": BSON_VALUES,
                                                                     "b": SCALARS})
PROBE_PATHS = st.sampled_from(["m", "a", "b", "m.x", "a.x", "t"])


def _probe_stages(path, value, op):
    if op == "$exists":
        return [{"$match": {path: {"$exists": bool(value)}}}]
    if op == "$type":
        return [{"$match": {path: {"$type": value}}}]
    if op == "$in":
        return [{"$match": {path: {"$in": [value, None]}}}]
    if op == "group":
        return [{"$group": {"_id": "$" + path, "n": {"$sum": 1}, "lo": {"$min": "$b"}, "hi": {"$max": "$a"}}}]
    return [{"$match": {path: {op: value}}}]


PROBE_OPS = st.sampled_from(["$eq", "$ne", "$lt", "$lte", "$gt", "$gte", "$in", "$exists", "group"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(docs=st.lists(MEASUREMENT, min_size=1, max_size=12), path=PROBE_PATHS, value=SCALARS, op=PROBE_OPS)
def test_many_types_and_schemas_agree_with_regular_collection(db, docs, path, value, op):
    """For measurements with metas of many BSON types (numbers of four types, NaN, strings, bools, null,
    MinKey/MaxKey, dates before 1970 and after 2038, ObjectIds, arrays, objects, missing), sparse and
    mixed-type fields, and times on, next to and between hour-bucket boundaries, a $match comparison /
    $in / $exists on the meta, a meta subfield, a measurement or the time, or a $group by one of them,
    returns exactly what an ordinary collection holding the same (stored) measurements returns."""
    coll = _ts(db, time="t", meta="m")
    coll.insert_many([{"_id": i, **d} for i, d in enumerate(docs)])
    reg = _regular(db)
    reg.insert_many(list(coll.find()))  # as stored: object metas in normalized field order
    tail = [{"$sort": {"_id": 1}}] if op != "group" else []
    pipeline = _probe_stages(path, value, op) + tail
    got, want = list(coll.aggregate(pipeline)), list(reg.aggregate(pipeline))
    if op == "group":
        assert_same_members(got, want)
    else:  # the same documents in _id order (field order aside: an ordinary insert moves _id first)
        assert [unordered(d) for d in got] == [unordered(d) for d in want]


def _date_trunc_group(unit, **extra):
    return [{"$group": {"_id": {"t": {"$dateTrunc": {"date": "$time", "unit": unit, **extra}}},
                        **_MINMAX}}]


def _fixed_group_docs(start, span):
    off = dt.timedelta(seconds=span)
    times = [start - off, start - off / 2, start - off / 3, start, start + off / 3, start + off / 2, start + off]
    return [{"_id": i, "time": t, "mt": "MDB", "b": GF_B[i], "otherTime": t} for i, t in enumerate(times)]


def _fixed_pair(db, docs, span):
    ts = _ts(db, time="time", meta="mt", timeseries={"bucketMaxSpanSeconds": span, "bucketRoundingSeconds": span})
    reg = _regular(db)
    ts.insert_many([dict(d) for d in docs])
    reg.insert_many([dict(d) for d in docs])
    return ts, reg


def test_group_by_date_trunc_after_coll_mod(db):
    """bucket_unpacking_group_reorder_fixed_buckets.js "testCollMod": after collMod to 100000 s buckets
    (no longer fixed) a $group by $dateTrunc day still returns {2022-09-30: min 1, max 7}."""
    ts, reg = _fixed_pair(db, GF_DOCS, 3600)
    db.command({"collMod": "ts", "timeseries": {"bucketMaxSpanSeconds": 100000, "bucketRoundingSeconds": 100000}})
    expected = [{"_id": {"t": dt.datetime(2022, 9, 30)}, "accmin": 1, "accmax": 7}]
    assert_same_members(list(ts.aggregate(_date_trunc_group("day"))), expected)
    assert_same_members(list(reg.aggregate(_date_trunc_group("day"))), expected)


@pytest.mark.parametrize("unit", ["minute", "second", "day", "week", "year"])
def test_group_by_date_trunc_large_fixed_span(db, unit):
    """bucket_unpacking_group_reorder_fixed_buckets.js "testLargeBucketSpan": fixed two-day buckets
    (bucket and $dateTrunc rounding differ): $group by $dateTrunc of every unit answers as an ordinary
    collection."""
    ts, reg = _fixed_pair(db, _fixed_group_docs(dt.datetime(2012, 6, 30, 23), 3600 * 48), 3600 * 48)
    assert_same_members(list(ts.aggregate(_date_trunc_group(unit))), list(reg.aggregate(_date_trunc_group(unit))))


@HYPO
@given(span=st.integers(1, 31536000),
       unit=st.sampled_from(["millisecond", "minute", "second", "day", "week", "month", "year"]))
def test_group_by_date_trunc_random_fixed_span(db, span, unit):
    """bucket_unpacking_group_reorder_fixed_buckets.js "testRandomBucketSpan": with any fixed span (1 s
    to a year) a $group by $dateTrunc of any unit answers as an ordinary collection."""
    ts, reg = _fixed_pair(db, _fixed_group_docs(dt.datetime(2015, 6, 26, 23), span), span)
    assert_same_members(list(ts.aggregate(_date_trunc_group(unit))), list(reg.aggregate(_date_trunc_group(unit))))


def test_group_by_date_trunc_leap_second(db):
    """bucket_unpacking_group_reorder_fixed_buckets.js "testLeapSeconds": fixed one-minute buckets and
    measurements around the 2012-06-30 leap second (23:59:60 is 2012-07-01T00:00:00 as a date): $group
    by $dateTrunc minute answers as an ordinary collection."""
    docs = _fixed_group_docs(dt.datetime(2012, 6, 30, 23), 60)
    leap = [(dt.datetime(2012, 7, 1), {"b": 16}), (dt.datetime(2012, 6, 30, 23, 59, 40), {"b": 11}),
            (dt.datetime(2012, 6, 30, 23, 59, 45), {"B": 12}), (dt.datetime(2012, 6, 30, 23, 59, 50), {"b": -1}),
            (dt.datetime(2012, 6, 30, 23, 59, 59), {"b": 0}), (dt.datetime(2012, 7, 1, 0, 0, 5), {"b": 15})]
    docs += [{"_id": 100 + i, "time": t, "mt": "MDB", **f} for i, (t, f) in enumerate(leap)]
    ts, reg = _fixed_pair(db, docs, 60)
    assert_same_members(list(ts.aggregate(_date_trunc_group("minute"))), list(reg.aggregate(_date_trunc_group("minute"))))


def test_group_by_date_trunc_daylight_saving(db):
    """bucket_unpacking_group_reorder_fixed_buckets.js "testDaylightSavings": fixed hour buckets and a
    measurement every minute of 2022-03-13 05:30 UTC onward (New York's 23-hour day): $group by
    $dateTrunc hour, binSize 24, America/New_York gives one group {05:00 UTC: min -1, max 30}."""
    docs = _fixed_group_docs(dt.datetime(2022, 3, 13, 7), 3600)
    start = dt.datetime(2022, 3, 13, 5, 30)
    docs += [{"_id": 100 + i, "time": start + dt.timedelta(minutes=i), "mt": 1, "b": -1 if i == 2 else i + 8}
             for i in range(23)]
    ts, reg = _fixed_pair(db, docs, 3600)
    pipeline = _date_trunc_group("hour", binSize=24, timezone="America/New_York")
    expected = [{"_id": {"t": dt.datetime(2022, 3, 13, 5)}, "accmin": -1, "accmax": 30}]
    assert_same_members(list(reg.aggregate(pipeline)), expected)
    assert_same_members(list(ts.aggregate(pipeline)), expected)


@HYPO
@given(times=st.lists(RANDOM_TIME, min_size=1, max_size=40), unit=st.sampled_from(["day", "week", "month", "quarter", "year"]))
def test_group_by_date_trunc_random_input(db, times, unit):
    """bucket_unpacking_group_reorder_fixed_buckets.js "testRandomizedInput": measurements at random times
    of 2012-2015 in fixed one-day buckets: $group by $dateTrunc day/week/month/quarter/year answers as an
    ordinary collection."""
    docs = [{"_id": i, "time": t, "mt": "location", "b": i % 7} for i, t in enumerate(times)]
    ts, reg = _fixed_pair(db, docs, 86400)
    assert_same_members(list(ts.aggregate(_date_trunc_group(unit))), list(reg.aggregate(_date_trunc_group(unit))))
