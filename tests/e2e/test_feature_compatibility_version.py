"""setFeatureCompatibilityVersion as a standalone mongod 7.0 runs it (Tidemark: 59 CommandNotFound, and
getParameter's featureCompatibilityVersion fixed at 7.0).

mongod (set_feature_compatibility_version_command.cpp, feature_compatibility_version.cpp): the value is
one of "6.0", "6.3", "7.0" (else 4926900; not a string: 14); ``confirm: true`` is required, even for the
current version (7369100); a standalone moves between 7.0 and 6.0 only (6.3: 5147403); the version is
kept in ``admin.system.version`` and survives a restart; a downgrade is refused (332 CannotDowngrade)
while a time-series collection has custom bucketing parameters; admin only (13).
"""

from __future__ import annotations

import pytest
from bson.son import SON
from hypothesis import given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("setFeatureCompatibilityVersion")

CMD = "setFeatureCompatibilityVersion"


def _fcv(client) -> str:
    return client.admin.command("getParameter", 1, featureCompatibilityVersion=1)["featureCompatibilityVersion"]["version"]


def _set(client, version, **extra):
    return client.admin.command(SON([(CMD, version), *extra.items()]))


def _fails(client, version, db="admin", **extra) -> OperationFailure:
    with pytest.raises(OperationFailure) as info:
        client[db].command(SON([(CMD, version), *extra.items()]))
    return info.value


def test_downgrade_and_upgrade_persist_across_restarts(start_server, tmp_path):
    server = start_server(tmp_path / "fcv")
    with server.client() as client:
        assert _fcv(client) == "7.0"
        assert _set(client, "7.0", confirm=True) == {"ok": 1.0}  # the current version: nothing to do
        assert _set(client, "6.0", confirm=True) == {"ok": 1.0}
        assert _fcv(client) == "6.0"
        assert client.admin["system.version"].find_one({"_id": "featureCompatibilityVersion"}) == {
            "_id": "featureCompatibilityVersion", "version": "6.0"}
    server.restart()
    with server.client() as client:
        assert _fcv(client) == "6.0"
        error = _fails(client, "7.0")
        assert error.code == 7369100 and error.details["errmsg"].startswith("Once you have upgraded to 7.0,")
        assert _set(client, "7.0", confirm=True) == {"ok": 1.0}
    server.restart()
    with server.client() as client:
        assert _fcv(client) == "7.0"


def test_confirm_is_required_even_for_the_current_version(client):
    error = _fails(client, "7.0")
    assert error.code == 7369100
    assert error.details["errmsg"].startswith("Once you have downgraded the FCV, if you choose to downgrade")
    assert _fails(client, "6.0", confirm=False).code == 7369100
    assert _fcv(client) == "7.0"


def test_last_continuous_is_not_a_transition_of_a_standalone(client):
    error = _fails(client, "6.3", confirm=True)
    assert (error.code, error.details["errmsg"]) == (
        5147403, "cannot set featureCompatibilityVersion to '6.3' while featureCompatibilityVersion is '7.0'")


@settings(max_examples=40, deadline=None)
@given(version=st.text(alphabet="0123456789.x", max_size=5).filter(lambda v: v not in ("6.0", "6.3", "7.0")))
def test_an_unknown_version_is_refused(client, version):
    error = _fails(client, version, confirm=True)
    assert (error.code, error.details["errmsg"]) == (
        4926900, f"Invalid feature compatibility version value '{version}'; expected '6.0' or '6.3' or '7.0'. "
                 "See https://docs.mongodb.com/master/release-notes/6.0-compatibility/#feature-compatibility.")


@settings(max_examples=30, deadline=None)
@given(value=st.one_of(st.integers(-9, 9), st.floats(allow_nan=False), st.booleans(), st.none(),
                       st.lists(st.just("7.0"), max_size=1)))
def test_arguments_are_parsed_as_the_idl_does(client, value):
    error = _fails(client, value, confirm=True)
    assert error.code == 14 and "'setFeatureCompatibilityVersion.setFeatureCompatibilityVersion' is the wrong type" \
        in error.details["errmsg"]
    if not isinstance(value, bool):
        error = _fails(client, "7.0", confirm=value)
        assert error.code == 14 and "'setFeatureCompatibilityVersion.confirm' is the wrong type" in error.details["errmsg"]
    error = _fails(client, "7.0", confirm=True, bogus=1)
    assert (error.code, error.details["errmsg"]) == (
        40415, "BSON field 'setFeatureCompatibilityVersion.bogus' is an unknown field.")
    assert _fails(client, "7.0", db="test", confirm=True).code == 13


def test_downgrade_is_refused_while_a_time_series_collection_has_custom_bucketing(client):
    db = client.fcv_ts
    db.drop_collection("custom")
    db.create_collection("custom", timeseries={"timeField": "t", "bucketMaxSpanSeconds": 100,
                                               "bucketRoundingSeconds": 100})
    try:
        error = _fails(client, "6.0", confirm=True)
        assert error.code == 332 and error.details["codeName"] == "CannotDowngrade"
        assert error.details["errmsg"].endswith("First detected incompatible collection: 'fcv_ts.custom'")
        assert _fcv(client) == "7.0"
    finally:
        client.drop_database("fcv_ts")
