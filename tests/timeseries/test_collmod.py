"""collMod validation and option transitions on time-series collections (spec §8)."""

import pytest

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.timeseries import collmod as cm

SECONDS = {"timeField": "t", "metaField": "m", "granularity": "seconds", "bucketMaxSpanSeconds": 3600}
MINUTES = {"timeField": "t", "metaField": "m", "granularity": "minutes", "bucketMaxSpanSeconds": 86400}
CUSTOM = {"timeField": "t", "bucketRoundingSeconds": 200, "bucketMaxSpanSeconds": 200}


def _err(fn, *args, **kw):
    with pytest.raises(MongoError) as info:
        fn(*args, **kw)
    return info.value.code, info.value.message


def _plan(cmd, options=SECONDS, **kw):
    return cm.plan_coll_mod({"collMod": "c", **cmd}, options, **kw)


def test_granularity_seconds_to_minutes_sets_preset_span_and_new_view_span():
    plan = _plan({"timeseries": {"granularity": "minutes"}})
    assert plan.timeseries == MINUTES
    assert plan.new_span == 86400


def test_granularity_seconds_to_hours_directly_is_allowed():
    assert _plan({"timeseries": {"granularity": "hours"}}).timeseries["bucketMaxSpanSeconds"] == 2592000


@pytest.mark.parametrize("target", ["seconds"])
def test_granularity_to_finer_value_is_invalid_transition(target):
    code, msg = _err(_plan, {"timeseries": {"granularity": target}}, MINUTES)
    assert code == ErrorCode.InvalidOptions
    assert msg.startswith("Invalid transition for timeseries.granularity.")


def test_same_granularity_and_empty_timeseries_are_noops():
    assert _plan({"timeseries": {"granularity": "seconds"}}).is_noop
    assert _plan({"timeseries": {}}).is_noop


def test_custom_seconds_need_each_other_and_must_be_equal():
    code, msg = _err(_plan, {"timeseries": {"bucketMaxSpanSeconds": 7200}})
    assert code == 72 and "need to be set alongside each other" in msg
    code, msg = _err(_plan, {"timeseries": {"bucketMaxSpanSeconds": 7200, "bucketRoundingSeconds": 3600}})
    assert (
        code == 72 and msg == "Timeseries 'bucketRoundingSeconds' needs to be equal to 'bucketMaxSpanSeconds'"
    )


def test_custom_seconds_replace_granularity_in_stored_options():
    plan = _plan({"timeseries": {"bucketMaxSpanSeconds": 7200, "bucketRoundingSeconds": 7200}})
    assert plan.timeseries == {
        "timeField": "t",
        "metaField": "m",
        "bucketRoundingSeconds": 7200,
        "bucketMaxSpanSeconds": 7200,
    }
    assert plan.new_span == 7200


def test_decreasing_custom_seconds_is_refused():
    code, msg = _err(
        _plan, {"timeseries": {"bucketMaxSpanSeconds": 100, "bucketRoundingSeconds": 100}}, CUSTOM
    )
    assert (
        code == 72 and msg == "Timeseries 'bucketMaxSpanSeconds' needs to be equal or greater to transition"
    )


def test_custom_rounding_below_the_granularity_rounding_is_refused():
    code, msg = _err(
        _plan, {"timeseries": {"bucketMaxSpanSeconds": 3600, "bucketRoundingSeconds": 3600}}, MINUTES
    )
    assert code == 72 and "needs to be equal or greater to transition" in msg


def test_custom_to_granularity_allowed_when_presets_are_not_smaller():
    assert _plan({"timeseries": {"granularity": "minutes"}}, CUSTOM).timeseries == {
        "timeField": "t",
        "granularity": "minutes",
        "bucketMaxSpanSeconds": 86400,
    }
    code, _ = _err(_plan, {"timeseries": {"granularity": "seconds"}}, CUSTOM)  # rounding 60 < 200
    assert code == 72


def test_granularity_with_rounding_or_other_span_is_refused():
    code, msg = _err(_plan, {"timeseries": {"granularity": "minutes", "bucketRoundingSeconds": 3600}})
    assert code == 72 and "not configurable alongside the granularity parameter" in msg
    code, msg = _err(_plan, {"timeseries": {"granularity": "minutes", "bucketMaxSpanSeconds": 10}})
    assert code == 72 and "not configurable to a value other than the default" in msg


def test_bucket_seconds_out_of_range_is_51024():
    code, _ = _err(
        _plan, {"timeseries": {"bucketMaxSpanSeconds": 31536001, "bucketRoundingSeconds": 31536001}}
    )
    assert code == 51024


def test_unknown_timeseries_field_and_bad_granularity():
    assert _err(_plan, {"timeseries": {"timeField": "x"}})[0] == ErrorCode.IDLUnknownField
    assert _err(_plan, {"timeseries": {"granularity": "days"}})[0] == ErrorCode.BadValue
    assert _err(_plan, {"timeseries": {"granularity": 1}})[0] == ErrorCode.TypeMismatch


@pytest.mark.parametrize("option", ["validator", "validationLevel", "validationAction", "viewOn", "pipeline"])
def test_forbidden_options_are_invalid_options(option):
    code, _ = _err(_plan, {option: {} if option == "validator" else "x"})
    assert code == ErrorCode.InvalidOptions


def test_validator_message_names_the_option():
    assert _err(_plan, {"validator": {}})[1] == "option not supported on a time-series collection: validator"


def test_expire_after_seconds_number_or_off():
    assert _plan({"expireAfterSeconds": 60}).expire_after_seconds == 60
    assert _plan({"expireAfterSeconds": "off"}).expire_after_seconds == "off"
    assert _err(_plan, {"expireAfterSeconds": "on"})[0] == 72
    assert _err(_plan, {"expireAfterSeconds": -1})[0] == 72
    assert _err(_plan, {"expireAfterSeconds": True})[0] == ErrorCode.TypeMismatch


def test_index_hidden_by_name_or_key_pattern():
    plan = _plan({"index": {"name": "m_1_t_1", "hidden": True}})
    assert plan.index == cm.IndexChange(name="m_1_t_1", key_pattern=None, hidden=True)
    assert _plan({"index": {"keyPattern": {"m": 1}, "hidden": False}}).index.key_pattern == {"m": 1}


def test_index_ttl_conversion_and_prepare_unique_are_72():
    assert _err(_plan, {"index": {"name": "x", "expireAfterSeconds": 10}})[0] == 72
    assert _err(_plan, {"index": {"name": "x", "prepareUnique": True}})[0] == 72
    assert _err(_plan, {"index": {"name": "x", "prepareUnique": False}})[0] == 72


def test_index_needs_exactly_one_of_name_and_key_pattern():
    assert _err(_plan, {"index": {"hidden": True}})[0] == 72
    assert _err(_plan, {"index": {"name": "a", "keyPattern": {"a": 1}, "hidden": True}})[0] == 72


def test_granularity_change_on_buckets_namespace_is_invalid_namespace():
    code, _ = _err(_plan, {"timeseries": {"granularity": "minutes"}}, on_buckets_namespace=True)
    assert code == ErrorCode.InvalidNamespace


def test_view_pipeline_gets_new_span_and_keeps_other_fields():
    pipeline = [
        {"$_internalUnpackBucket": {"timeField": "t", "metaField": "m", "bucketMaxSpanSeconds": 3600}}
    ]
    assert cm.with_new_span(pipeline, 86400) == [
        {"$_internalUnpackBucket": {"timeField": "t", "metaField": "m", "bucketMaxSpanSeconds": 86400}}
    ]
    assert pipeline[0]["$_internalUnpackBucket"]["bucketMaxSpanSeconds"] == 3600


def test_rounding_and_span_of_stored_options():
    assert cm.rounding_and_span(SECONDS) == (60, 3600)
    assert cm.rounding_and_span(CUSTOM) == (200, 200)
    assert cm.rounding_and_span({"timeField": "t"}) == (60, 3600)
