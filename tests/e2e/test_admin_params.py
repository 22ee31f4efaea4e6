"""The server-parameter registry (server/params.py), in process."""

from __future__ import annotations

import psutil
import pytest
from pymongo.errors import OperationFailure

from tidemark.params import SPECS, ServerParams
from tidemark.protocol.errors import MongoError
from tidemark.timeseries import rules

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
    "internalDocumentSourceGroupMaxMemoryBytes": 100 * 1024 * 1024,
    "cursorTimeoutMillis": 600000,
    "syncdelay": 60.0,
}


def test_defaults_match_mongod():
    params = ServerParams()
    for name, default in REQUIRED.items():
        assert params[name] == default, name
    assert params["authenticationMechanisms"] == ["MONGODB-X509", "SCRAM-SHA-1", "SCRAM-SHA-256"]
    assert all(spec.help for spec in SPECS)


@pytest.mark.parametrize(
    "assignment, name, value",
    [
        ("ttlMonitorSleepSecs=1", "ttlMonitorSleepSecs", 1),
        ("quiet=true", "quiet", True),
        ("quiet=0", "quiet", False),
        ("authenticationMechanisms=SCRAM-SHA-256", "authenticationMechanisms", ["SCRAM-SHA-256"]),
        ("timeseriesBucketMaxSize=64000", "timeseriesBucketMaxSize", 64000),
        ("syncdelay=0.5", "syncdelay", 0.5),
        ("syncdelay=0", "syncdelay", 0.0),
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
        ("syncdelay=-1", "syncdelay must be between 0 and 9000000, inclusive"),
        ("syncdelay=9000001", "syncdelay must be between 0 and 9000000, inclusive"),
        ("syncdelay=nan", "syncdelay must be between"),
        ("syncdelay=soon", "syncdelay must be a number"),
    ],
)
def test_bad_startup_assignments_raise_clear_errors(assignment, message):
    with pytest.raises(ValueError, match=message):
        ServerParams().set_at_startup(assignment)


def test_runtime_set_returns_previous_value_and_respects_settability():
    params = ServerParams()
    assert params.set_at_runtime("logLevel", 2) == 0 and params["logLevel"] == 2
    with pytest.raises(MongoError) as info:
        params.set_at_runtime("authenticationMechanisms", ["SCRAM-SHA-256"])
    assert info.value.code == 20
    assert params.set_at_runtime("ttlMonitorSleepSecs", 5) == 60  # (settable at runtime, as mongod's)
    with pytest.raises(MongoError) as info:
        params.set_at_runtime("unknownParam", 5)
    assert info.value.code == 72
    with pytest.raises(MongoError) as info:
        params.set_at_runtime("logLevel", -1)
    assert info.value.code == 2
    assert params.set_at_runtime("syncdelay", 30) == 60.0 and params["syncdelay"] == 30.0
    with pytest.raises(MongoError) as info:  # mongod: BadValue, "syncdelay must be between ..."
        params.set_at_runtime("syncdelay", 18446744073709552000)
    assert info.value.code == 2 and "syncdelay must be between" in str(info.value)


def test_idle_bucket_expiry_threshold_not_positive_means_two_and_a_half_percent_of_ram():
    """The one reading of the parameter (timeseries.rules.memory_threshold, the catalog's): 0 or less is
    2.5 % of the machine's memory, as mongod 7.0's default."""
    ram = psutil.virtual_memory().total
    assert rules.memory_threshold(0) == rules.memory_threshold(-5) == int(ram * 0.025)
    params = ServerParams()
    params.set_at_startup("timeseriesIdleBucketExpiryMemoryUsageThreshold=4096")
    assert rules.memory_threshold(params["timeseriesIdleBucketExpiryMemoryUsageThreshold"]) == 4096


@pytest.mark.commands("getParameter", "setParameter")
def test_test_only_parameters_exist_only_with_enable_test_commands(client):
    """The storage fault hook cannot be reached on a normal server: without enableTestCommands it is an
    unrecognized parameter (72) and getParameter '*' does not list it, as mongod's test-only parameters."""
    assert "failStorageCommitsForTest" not in client.admin.command("getParameter", "*")
    with pytest.raises(OperationFailure) as info:
        client.admin.command("setParameter", 1, failStorageCommitsForTest={"times": 1, "errno": "ENOSPC"})
    assert info.value.code == 72
    with_tests = ServerParams()
    with_tests.set_at_startup("enableTestCommands=1")
    assert "failStorageCommitsForTest" in set(with_tests.names())
    with_tests.set_at_runtime("failStorageCommitsForTest", {"times": 0, "errno": "EIO"})
