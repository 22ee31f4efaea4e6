"""create-option validation of time-series collections (spec §1.2-§1.4, MongoDB 7.0 rules)."""

import pytest
from bson.int64 import Int64

from tidemark.protocol.errors import MongoError
from tidemark.timeseries.options import from_document, parse_create, parse_timeseries, view_document


def code_of(fn, *args):
    with pytest.raises(MongoError) as info:
        fn(*args)
    return info.value.code, info.value.message


def ts(**spec):
    return parse_timeseries("db.c", spec)


def test_time_field_only_defaults_to_seconds_granularity():
    options = ts(timeField="t")
    assert options.to_document() == {"timeField": "t", "granularity": "seconds", "bucketMaxSpanSeconds": 3600}
    assert options.bucket_rounding_seconds == 60


@pytest.mark.parametrize("granularity,rounding,span", [("seconds", 60, 3600), ("minutes", 3600, 86400),
                                                       ("hours", 86400, 2592000)])
def test_granularity_presets(granularity, rounding, span):
    options = ts(timeField="t", metaField="m", granularity=granularity)
    assert (options.bucket_rounding_seconds, options.bucket_max_span_seconds) == (rounding, span)
    assert options.to_document() == {"timeField": "t", "metaField": "m", "granularity": granularity,
                                     "bucketMaxSpanSeconds": span}


def test_custom_bucket_seconds_are_echoed_without_granularity():
    options = ts(timeField="t", bucketMaxSpanSeconds=100, bucketRoundingSeconds=Int64(100))
    assert options.to_document() == {"timeField": "t", "bucketRoundingSeconds": 100, "bucketMaxSpanSeconds": 100}
    assert from_document(options.to_document()) == options


@pytest.mark.parametrize(
    "spec,code",
    [
        ({"timeField": 100}, 14),
        ({"timeField": "t", "metaField": 100}, 14),
        ({"timeField": "t", "invalidOption": 1}, 40415),
        ({"metaField": "m"}, 40414),
        ({"timeField": "t", "granularity": "days"}, 2),
        ({"timeField": "a.b"}, 72),
        ({"timeField": "t", "metaField": "a.b"}, 72),
        ({"timeField": "t", "metaField": "_id"}, 72),
        ({"timeField": "t", "metaField": "t"}, 72),
        ({"timeField": "t\x00x"}, 2),
        ({"timeField": "t", "bucketMaxSpanSeconds": 10}, 72),
        ({"timeField": "t", "bucketRoundingSeconds": 10}, 72),
        ({"timeField": "t", "bucketMaxSpanSeconds": 10, "bucketRoundingSeconds": 20}, 72),
        ({"timeField": "t", "granularity": "minutes", "bucketMaxSpanSeconds": 3600}, 72),
        ({"timeField": "t", "granularity": "seconds", "bucketRoundingSeconds": 3600}, 72),
        ({"timeField": "t", "bucketMaxSpanSeconds": 0, "bucketRoundingSeconds": 0}, 51024),
        ({"timeField": "t", "bucketMaxSpanSeconds": 31536001, "bucketRoundingSeconds": 31536001}, 51024),
        ({"timeField": "t", "bucketMaxSpanSeconds": "x", "bucketRoundingSeconds": 1}, 14),
    ],
)
def test_invalid_timeseries_options_fail_with_mongod_codes(spec, code):
    assert code_of(parse_timeseries, "db.c", spec)[0] == code


def test_non_object_timeseries_is_type_mismatch():
    assert code_of(parse_timeseries, "db.c", "")[0] == 14


def test_dotted_time_field_message_names_the_namespace():
    assert code_of(parse_timeseries, "db.c", {"timeField": "a.b"})[1] == (
        "db.c: 'timeField' must be a top-level field and not contain a '.'"
    )


def test_granularity_with_matching_presets_is_accepted():
    options = ts(timeField="t", granularity="minutes", bucketMaxSpanSeconds=86400, bucketRoundingSeconds=3600)
    assert options.granularity == "minutes"


@pytest.mark.parametrize("option", ["capped", "size", "max", "idIndex", "validator", "validationLevel",
                                    "validationAction", "viewOn", "pipeline", "clusteredIndex"])
def test_create_options_not_allowed_with_timeseries(option):
    value = True if option == "capped" else {"x": 1} if option in ("idIndex", "validator") else 1
    cmd = {"create": "c", "timeseries": {"timeField": "t"}, option: value, "$db": "db"}
    code, message = code_of(parse_create, "db", cmd)
    assert code == 72
    assert message == f"db.c: 'timeseries' is not allowed with '{option}'"


def test_create_accepts_capped_false_and_generic_arguments():
    cmd = {"create": "c", "timeseries": {"timeField": "t"}, "capped": False, "writeConcern": {"w": 1},
           "comment": "x", "$db": "db"}
    assert parse_create("db", cmd).timeseries.time_field == "t"


@pytest.mark.parametrize("value,code", [(-1, 72), (Int64(4611686018427387904), 72), ("x", 14)])
def test_expire_after_seconds_validation(value, code):
    cmd = {"create": "c", "timeseries": {"timeField": "t"}, "expireAfterSeconds": value, "$db": "db"}
    assert code_of(parse_create, "db", cmd)[0] == code


def test_expire_after_seconds_is_kept_in_buckets_options():
    cmd = {"create": "c", "timeseries": {"timeField": "t"}, "expireAfterSeconds": Int64(100), "$db": "db"}
    options = parse_create("db", cmd).buckets_options()
    assert options["expireAfterSeconds"] == 100
    assert options["clusteredIndex"] is True
    assert options["validator"]["$jsonSchema"]["required"] == ["_id", "control", "data"]


def test_equivalent_options_for_idempotent_recreate():
    assert ts(timeField="t").equivalent(ts(timeField="t", granularity="seconds"))
    assert not ts(timeField="t").equivalent(ts(timeField="t", metaField="m"))
    assert not ts(timeField="t").equivalent(ts(timeField="t", granularity="minutes"))


def test_view_document_shape():
    doc = view_document("db", "weather", ts(timeField="timestamp", metaField="metadata"))
    assert doc == {"_id": "db.weather", "viewOn": "system.buckets.weather",
                   "pipeline": [{"$_internalUnpackBucket": {"timeField": "timestamp", "metaField": "metadata",
                                                            "bucketMaxSpanSeconds": 3600}}]}
