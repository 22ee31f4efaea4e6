"""The server-parameter registry (server/params.py), in process."""

from __future__ import annotations

import pytest

from protocol.errors import MongoError
from server.params import SPECS, ServerParams, idle_bucket_expiry_threshold_bytes

REQUIRED = {
    "ttlMonitorSleepSecs": 60,
    "timeseriesBucketMaxCount": 1000,
    "timeseriesBucketMaxSize": 128000,
    "timeseriesBucketMinCount": 10,
    "timeseriesIdleBucketExpiryMemoryUsageThreshold": 0,
    "timeseriesIdleBucketExpiryMaxCountPerAttempt": 3,
    "featureCompatibilityVersion": {"version": "7.0"},
    "authSchemaVersion": 5,
    "quiet": False,
    "logLevel": 0,
    "internalQueryMaxBlockingSortMemoryUsageBytes": 100 * 1024 * 1024,
    "cursorTimeoutMillis": 600000,
}


def test_defaults_match_mongod():
    params = ServerParams()
    for name, default in REQUIRED.items():
        assert params[name] == default, name
    assert params["authenticationMechanisms"] == ["SCRAM-SHA-1", "SCRAM-SHA-256"]
    assert all(spec.help for spec in SPECS)


@pytest.mark.parametrize(
    "assignment, name, value",
    [
        ("ttlMonitorSleepSecs=1", "ttlMonitorSleepSecs", 1),
        ("quiet=true", "quiet", True),
        ("quiet=0", "quiet", False),
        ("authenticationMechanisms=SCRAM-SHA-256", "authenticationMechanisms", ["SCRAM-SHA-256"]),
        ("timeseriesBucketMaxSize=64000", "timeseriesBucketMaxSize", 64000),
    ],
)
def test_startup_assignments_parse_to_the_declared_type(assignment, name, value):
    params = ServerParams()
    params.set_at_startup(assignment)
    assert params[name] == value and type(params[name]) is type(value)


@pytest.mark.parametrize(
    "assignment, message",
    [
        ("nope=1", "Unknown --setParameter 'nope'"),
        ("ttlMonitorSleepSecs", "expected name=value"),
        ("ttlMonitorSleepSecs=0", "greater than 0"),
        ("timeseriesBucketMaxCount=lots", "Bad value"),
        ("featureCompatibilityVersion=6.0", "Cannot use --setParameter"),
    ],
)
def test_bad_startup_assignments_raise_clear_errors(assignment, message):
    with pytest.raises(ValueError, match=message):
        ServerParams().set_at_startup(assignment)


def test_runtime_set_returns_previous_value_and_respects_settability():
    params = ServerParams()
    assert params.set_at_runtime("logLevel", 2) == 0 and params["logLevel"] == 2
    with pytest.raises(MongoError) as info:
        params.set_at_runtime("ttlMonitorSleepSecs", 5)
    assert info.value.code == 20
    with pytest.raises(MongoError) as info:
        params.set_at_runtime("unknownParam", 5)
    assert info.value.code == 72
    with pytest.raises(MongoError) as info:
        params.set_at_runtime("logLevel", -1)
    assert info.value.code == 2


def test_idle_bucket_expiry_threshold_zero_means_two_and_a_half_percent_of_ram():
    params = ServerParams()
    assert idle_bucket_expiry_threshold_bytes(params, 1_000_000) == 25_000
    params.set_at_startup("timeseriesIdleBucketExpiryMemoryUsageThreshold=4096")
    assert idle_bucket_expiry_threshold_bytes(params, 1_000_000) == 4096
