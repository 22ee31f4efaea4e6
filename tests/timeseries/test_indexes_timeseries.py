"""User index specs <-> bucket index specs on time-series collections (spec §7)."""

import datetime as dt
import math

import pytest

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.timeseries import indexes as ix

T, M = "tm", "mm"


def _code(fn, *args):
    with pytest.raises(MongoError) as info:
        fn(*args)
    return info.value.code, str(info.value)


def test_time_field_ascending_maps_to_min_then_max():
    assert ix.to_bucket_key({T: 1}, T, M) == {"control.min.tm": 1, "control.max.tm": 1}


def test_time_field_descending_maps_to_max_then_min():
    key = ix.to_bucket_key({T: -1}, T, M)
    assert list(key.items()) == [("control.max.tm", -1), ("control.min.tm", -1)]


def test_meta_and_meta_subfields_map_to_bucket_meta_with_any_type():
    assert ix.to_bucket_key({"mm.a": "hashed"}, T, M) == {"meta.a": "hashed"}
    assert ix.to_bucket_key({M: -1}, T, M) == {"meta": -1}


def test_compound_spec_is_translated_element_by_element_in_order():
    key = ix.to_bucket_key({"mm.tag1": 1, T: 1}, T, M)
    assert list(key) == ["meta.tag1", "control.min.tm", "control.max.tm"]


def test_measurement_fields_map_to_control_pairs_and_2dsphere_to_data():
    assert ix.to_bucket_key({"x": -1}, T, M) == {"control.max.x": -1, "control.min.x": -1}
    assert ix.to_bucket_key({"loc": "2dsphere"}, T, M) == {"data.loc": "2dsphere_bucket"}


def test_hashed_time_field_is_cannot_create_index_with_spec_message():
    code, msg = _code(ix.to_bucket_key, {T: "hashed"}, T, M)
    assert code == ErrorCode.CannotCreateIndex
    assert "Indexes on the time field must be ascending or descending (numbers only)" in msg


def test_hashed_measurement_field_is_cannot_create_index():
    code, msg = _code(ix.to_bucket_key, {"x": "hashed"}, T, M)
    assert code == ErrorCode.CannotCreateIndex
    assert (
        "Indexes on measurement fields must be ascending or descending (numbers only), or '2dsphere'" in msg
    )


def test_text_index_is_refused_with_72():
    code, msg = _code(ix.to_bucket_key, {"mm": "text"}, T, M)
    assert (code, msg) == (72, "Text indexes are not supported on time-series collections")


def test_empty_key_is_refused():
    code, _ = _code(ix.to_bucket_key, {}, T, M)
    assert code == ErrorCode.CannotCreateIndex


def test_unique_is_refused_with_72():
    code, msg = _code(ix.to_bucket_index_spec, {"key": {M: 1}, "name": "a", "unique": True}, T, M)
    assert (code, msg) == (72, "Unique indexes are not supported on time-series collections")


def test_sparse_on_measurement_is_refused_but_allowed_on_time_and_meta():
    code, msg = _code(ix.to_bucket_index_spec, {"key": {"x": 1}, "name": "x_1", "sparse": True}, T, M)
    assert (code, msg) == (72, "Sparse indexes are not supported on time-series measurements")
    spec = ix.to_bucket_index_spec({"key": {M: 1, T: 1}, "name": "n", "sparse": True}, T, M)
    assert spec["sparse"] is True


def test_partial_filter_with_collation_conflicts_with_85():
    code, msg = _code(
        ix.to_bucket_index_spec,
        {"key": {M: 1}, "name": "n", "partialFilterExpression": {M: 1}, "collation": {"locale": "en"}},
        T,
        M,
    )
    assert code == ErrorCode.IndexOptionsConflict
    assert (
        msg == "On a time-series collection, partialFilterExpression and collation arguments are incompatible"
    )


def test_partial_filter_is_rewritten_to_bucket_level_and_original_kept():
    user = {"key": {M: 1}, "name": "n", "partialFilterExpression": {"mm.a": 1, "x": {"$gt": 5}}}
    spec = ix.to_bucket_index_spec(user, T, M)
    assert spec["partialFilterExpression"] == {"$and": [{"meta.a": 1}, {"control.max.x": {"$gt": 5}}]}
    assert spec["originalSpec"]["partialFilterExpression"] == user["partialFilterExpression"]
    assert spec["originalSpec"]["key"] == {M: 1}


def test_partial_filter_equality_on_measurement_bounds_both_min_and_max():
    bucket = ix.bucket_partial_filter({"x": 3}, T, M, 3600).mql
    bound, nan_minimum = bucket["$or"]  # a NaN is a bucket's minimum: the bound on it says nothing
    assert bound == {"$and": [{"control.min.x": {"$lte": 3}}, {"control.max.x": {"$gte": 3}}]}
    assert list(nan_minimum) == ["control.min.x"] and math.isnan(nan_minimum["control.min.x"])


def test_ttl_on_time_with_meta_partial_maps_to_control_min_only():
    spec = ix.to_bucket_index_spec(
        {"key": {T: 1}, "name": "ttl", "expireAfterSeconds": 400, "partialFilterExpression": {M: {"$gt": 5}}},
        T,
        M,
    )
    assert spec["key"] == {"control.min.tm": 1}
    assert spec["expireAfterSeconds"] == 400
    user = ix.to_user_index_spec(spec, T, M)
    assert user["key"] == {T: 1} and user["expireAfterSeconds"] == 400


@pytest.mark.parametrize(
    "partial", [None, {"data": {"$gt": 5}}, {M: {"$gt": 5}, "data": 1}, {T: {"$gt": dt.datetime(2024, 1, 1)}}]
)
def test_ttl_without_meta_only_partial_filter_is_72(partial):
    spec = {"key": {T: 1}, "name": "ttl", "expireAfterSeconds": 3600}
    if partial is not None:
        spec["partialFilterExpression"] = partial
    code, msg = _code(ix.to_bucket_index_spec, spec, T, M)
    assert code == 72
    assert msg == "TTL indexes on time-series collections require a partialFilterExpression on the metaField"


def test_ttl_on_non_time_field_is_72_and_compound_ttl_is_67():
    meta_partial = {"partialFilterExpression": {M: {"$gt": 5}}, "expireAfterSeconds": 10, "name": "n"}
    code, msg = _code(ix.to_bucket_index_spec, {"key": {M: 1}, **meta_partial}, T, M)
    assert (code, msg) == (72, "TTL indexes on non-time fields are not supported on time-series collections")
    code, _ = _code(ix.to_bucket_index_spec, {"key": {T: 1, M: 1}, **meta_partial}, T, M)
    assert code == ErrorCode.CannotCreateIndex


def test_default_index_is_meta_then_time_named_meta_1_time_1():
    (spec,) = ix.default_index_specs(T, M)
    assert spec["name"] == "mm_1_tm_1"
    assert ix.to_user_index_spec(spec, T, M) == {"v": 2, "key": {M: 1, T: 1}, "name": "mm_1_tm_1"}
    assert ix.default_index_specs(T, None) == []


def test_list_indexes_reverse_maps_keys_without_original_spec():
    spec = {"v": 2, "key": {"control.max.x": -1, "control.min.x": -1, "meta.a": 1}, "name": "k"}
    assert ix.to_user_index_spec(spec, T, M)["key"] == {"x": -1, "mm.a": 1}


@pytest.mark.parametrize(
    "key",
    [
        {"data.x": 1},
        {"control.min.x": 1, "control.min.y": 1},
        {"control.min.x": -1, "control.max.x": -1},
        {"_id": 1},
    ],
)
def test_unmappable_bucket_indexes_are_omitted(key):
    assert ix.to_user_index_spec({"v": 2, "key": key, "name": "raw"}, T, M) is None


def test_listed_original_spec_reflects_hidden_set_later_on_bucket_index():
    spec = ix.to_bucket_index_spec({"key": {"x": 1}, "name": "x_1"}, T, M)
    spec["hidden"] = True
    assert ix.to_user_index_spec(spec, T, M)["hidden"] is True
    spec.pop("hidden")
    assert "hidden" not in ix.to_user_index_spec(spec, T, M)


def test_find_bucket_index_by_name_or_user_key_pattern():
    specs = [*ix.default_index_specs(T, M), ix.to_bucket_index_spec({"key": {T: -1}, "name": "t"}, T, M)]
    assert ix.find_bucket_index(specs, "mm_1_tm_1", T, M)["name"] == "mm_1_tm_1"
    assert ix.find_bucket_index(specs, {T: -1}, T, M)["name"] == "t"
    assert ix.find_bucket_index(specs, {M: 1, T: 1.0}, T, M)["name"] == "mm_1_tm_1"
    assert ix.find_bucket_index(specs, {"x": 1}, T, M) is None


def test_hint_by_user_key_translates_to_bucket_index_name_and_hidden_is_refused():
    specs = ix.default_index_specs(T, M)
    assert ix.translate_hint({M: 1, T: 1}, specs, T, M) == "mm_1_tm_1"
    specs[0]["hidden"] = True
    code, _ = _code(ix.translate_hint, "mm_1_tm_1", specs, T, M)
    assert code == ErrorCode.BadValue


def test_a_partial_filter_is_on_the_meta_field_only_for_logical_combinations_of_meta_paths():
    assert ix.bucket_partial_filter({"$or": [{"mm.a": 1}, {M: 2}]}, T, M, 3600).exact
    assert not ix.bucket_partial_filter({"$or": [{"mm.a": 1}, {"x": 2}]}, T, M, 3600).exact
    assert not ix.bucket_partial_filter({}, T, M, 3600).exact
