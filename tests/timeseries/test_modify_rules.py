"""Update rules and delete planning on time-series collections (spec §6.2, §6.3)."""

import datetime as dt

import pytest

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.timeseries import modify as md

T, M = "time", "tag"


def _err(fn, *args):
    with pytest.raises(MongoError) as info:
        fn(*args)
    return info.value.code, info.value.message


def test_spec_example_update_translates_meta_paths_and_rename_target():
    bucket = md.translate_update(
        {
            "q": {"tag.tag.a": "a"},
            "u": {"$set": {"tag.tag.a": "A"}, "$rename": {"tag.tag.b": "tag.tag.c"}},
            "multi": True,
        },
        M,
    )
    assert bucket.bucket_query == {"meta.tag.a": "a"}
    assert bucket.bucket_update == {"$set": {"meta.tag.a": "A"}, "$rename": {"meta.tag.b": "meta.tag.c"}}


def test_non_multi_update_is_72_with_message():
    assert _err(md.translate_update, {"q": {}, "u": {"$set": {M: 1}}}, M) == (
        72,
        "Cannot perform a non-multi update on a time-series collection",
    )


def test_upsert_is_72():
    stmt = {"q": {}, "u": {"$set": {M: 1}}, "multi": True, "upsert": True}
    assert _err(md.translate_update, stmt, M) == (72, "Cannot perform an upsert on a time-series collection")


def test_update_without_meta_field_is_72():
    stmt = {"q": {}, "u": {"$set": {"x": 1}}, "multi": True}
    assert _err(md.translate_update, stmt, None) == (
        72,
        "Cannot perform an update on a time-series collection that does not have a metaField",
    )


def test_pipeline_and_replacement_updates_are_72():
    pipe = {"q": {}, "u": [{"$set": {M: 1}}], "multi": True}
    assert _err(md.translate_update, pipe, M)[1] == (
        "Cannot perform an update on a time-series collection using a pipeline update"
    )
    repl = {"q": {}, "u": {M: 1}, "multi": True}
    assert _err(md.translate_update, repl, M)[1] == (
        "Cannot perform an update on a time-series collection using a replacement document"
    )


def test_update_of_a_measurement_field_is_72():
    stmt = {"q": {}, "u": {"$set": {"x": 1}}, "multi": True}
    assert _err(md.translate_update, stmt, M) == (
        72,
        "Cannot perform an update on a time-series collection which updates a field that is not the "
        "metaField 'tag'",
    )


def test_rename_out_of_the_meta_field_is_72():
    stmt = {"q": {}, "u": {"$rename": {"tag.a": "x"}}, "multi": True}
    assert _err(md.translate_update, stmt, M)[0] == 72


def test_query_on_non_meta_field_is_72_with_message():
    stmt = {"q": {"x": 1}, "u": {"$set": {M: 1}}, "multi": True}
    assert _err(md.translate_update, stmt, M) == (
        72,
        "Cannot perform an update or delete on a time-series collection when querying on a field that is "
        "not the metaField 'tag'",
    )


def test_expr_and_where_in_update_query_are_72():
    for op in ("$expr", "$where"):
        stmt = {"q": {op: "x"}, "u": {"$set": {M: 1}}, "multi": True}
        code, msg = _err(md.translate_update, stmt, M)
        assert (
            code == 72
            and msg == f"Cannot use {op} when performing an update or delete on a time-series collection"
        )


def test_meta_query_translation_follows_logical_operators_and_json_schema():
    q = {"$or": [{"tag.a": 1}, {"$and": [{M: {"$exists": True}}]}], "$jsonSchema": {"required": [M]}}
    assert md.translate_meta_query(q, M) == {
        "$or": [{"meta.a": 1}, {"$and": [{"meta": {"$exists": True}}]}],
        "$jsonSchema": {"required": ["meta"]},
    }


def test_meta_prefix_lookalike_is_not_the_meta_field():
    assert not md.is_meta_only({"tagged": 1}, M)
    assert md.is_meta_only({"tag.x": 1}, M)


def test_meta_only_multi_delete_removes_whole_buckets_with_exact_filter():
    plan = md.plan_delete({"q": {"tag.a": 1}, "limit": 0}, T, M, 3600)
    assert plan.whole_buckets and plan.bucket_filter == {"$and": [md.CLOSED_BUCKET_FILTER, {"meta.a": 1}]}


def test_empty_filter_delete_is_whole_buckets_even_without_meta_field():
    plan = md.plan_delete({"q": {}, "limit": 0}, T, None, 3600)
    assert plan.whole_buckets and plan.bucket_filter == md.CLOSED_BUCKET_FILTER


def test_measurement_filter_delete_unpacks_with_loose_bucket_filter():
    when = dt.datetime(2024, 1, 1)
    plan = md.plan_delete({"q": {"tag": "a", "x": {"$gt": 3}, T: {"$gte": when}}, "limit": 0}, T, M, 3600)
    assert not plan.whole_buckets
    assert plan.bucket_filter == {"$and": [  # the one derivation, as explain shows it for reads
        md.CLOSED_BUCKET_FILTER, {"meta": "a"},
        {"$or": [{"control.max.x": {"$gt": 3}},
                 {"$expr": {"$ne": [{"$type": "$control.min.x"}, {"$type": "$control.max.x"}]}}]},
        {"control.max.time": {"$gte": when}}, {"control.min.time": {"$gte": when - dt.timedelta(hours=1)}}]}
    assert plan.measurement_filter == {"tag": "a", "x": {"$gt": 3}, T: {"$gte": when}}


def test_delete_one_always_unpacks_even_on_meta_filter():
    plan = md.plan_delete({"q": {"tag": "a"}, "limit": 1}, T, M, 3600)
    assert not plan.whole_buckets and plan.limit_one


def test_or_across_meta_and_measurement_unpacks_with_a_loose_or_of_both_bounds():
    plan = md.plan_delete({"q": {"$or": [{"tag": "a"}, {"x": 1}]}, "limit": 0}, T, M, 3600)
    assert not plan.whole_buckets
    assert plan.bucket_filter["$and"][0] == md.CLOSED_BUCKET_FILTER
    assert plan.bucket_filter["$and"][1]["$or"][0] == {"meta": "a"}
    assert plan.bucket_filter["$and"][1]["$or"][1]["$or"][0] == {"$and": [{"control.min.x": {"$lte": 1}},
                                                               {"control.max.x": {"$gte": 1}}]}


def test_delete_limit_must_be_zero_or_one():
    assert _err(md.plan_delete, {"q": {}, "limit": 2}, T, M, 3600)[0] == ErrorCode.FailedToParse


def test_bucket_measurement_count_counts_time_column():
    assert md.bucket_measurement_count({"data": {T: {"0": 1, "1": 2}}}, T) == 2
