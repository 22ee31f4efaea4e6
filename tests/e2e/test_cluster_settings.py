"""Commands a standalone mongod 7.0 answers about cluster-wide settings and the inter-server machinery
it takes no part in (Tidemark answered each with 59 CommandNotFound):

- getDefaultRWConcern / setDefaultRWConcern: arguments parsed as their IDL (40415 unknown field, 14 wrong
  type), then 51300 "'<name>' is not supported on standalone nodes." (rwc_defaults_commands.cpp
  assertNotStandaloneOrShardServer; jstests/hooks/run_fuzzer_restore_settings.js accepts 51300 from a
  standalone; jstests/core/.../read_preference_metrics: getDefaultRWConcern "doesNotRunOnStandalone");
  admin only (13 elsewhere);
- getClusterParameter / setClusterParameter: parsed as their IDL (a string or an array of strings; an
  object; 40415 for another field), then 20 IllegalOperation "<name> cannot be run on standalones"
  (get_cluster_parameter_command.cpp, set_cluster_parameter_command.cpp); admin only;
- setUserWriteBlockMode: ``global`` (a bool) required (40414, 14, 40415 for another field), then 20
  IllegalOperation "setUserWriteBlockMode cannot be run on standalones" (set_user_write_block_mode_command.cpp;
  its op observer blocks writes only on a replica-set primary), on any database; writes go on;
- shardingState: ``{enabled: false}`` (ShardingState::appendInfo on a node that is no shard);
- connPoolStats: empty pools (no outgoing connection): zero totals, the empty acquisition-wait
  histogram, ``pools``/``hosts``/``replicaSets`` empty (ConnectionPoolStats::appendToBSON);
- connPoolSync (``connpoolsync``): ok.
- dropConnections: ``hostAndPort`` (required, 40414; an array of strings, 14) entries parsed as mongod's
  HostAndPort::initialize (9 FailedToParse with its message for an empty host, a second ':' outside
  brackets, unbalanced brackets, a port that is no number or outside 1..65535), then ok: a standalone
  has no pooled egress connection to drop, and its clients stay connected; admin only.
Privileges: tests/e2e/test_auth_commands_lib.py (commands_lib.js's cases).
"""

from __future__ import annotations

import pytest
from bson.int64 import Int64
from bson.son import SON
from hypothesis import given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

NOT_BOOL = st.one_of(st.integers(-5, 5), st.floats(allow_nan=False), st.text(max_size=3), st.none(),
                     st.lists(st.integers(-9, 9), max_size=2), st.dictionaries(st.text("abc", max_size=2), st.integers(-9, 9), max_size=1))
NOT_OBJECT = st.one_of(st.integers(-5, 5), st.booleans(), st.text(max_size=3), st.none(),
                       st.lists(st.integers(-9, 9), max_size=2))


def _fails(client, cmd, db="admin") -> OperationFailure:
    with pytest.raises(OperationFailure) as info:
        client[db].command(cmd)
    return info.value


@pytest.mark.commands("getDefaultRWConcern", "setDefaultRWConcern")
@pytest.mark.parametrize("cmd", [
    SON([("getDefaultRWConcern", 1)]), SON([("getDefaultRWConcern", 1), ("inMemory", True)]),
    SON([("getDefaultRWConcern", 1), ("inMemory", False)]),
    SON([("setDefaultRWConcern", 1), ("defaultReadConcern", {"level": "local"})]),
    SON([("setDefaultRWConcern", 1), ("defaultWriteConcern", {"w": 1}), ("writeConcern", {"w": 1})]),
    SON([("setDefaultRWConcern", 1)]),
])
def test_default_rw_concerns_are_refused_on_a_standalone(client, cmd):
    name = next(iter(cmd))
    error = _fails(client, cmd)
    assert (error.code, error.details["errmsg"]) == (51300, f"'{name}' is not supported on standalone nodes.")
    error = _fails(client, cmd, db="test")
    assert (error.code, error.details["errmsg"]) == (13, f"{name} may only be run against the admin database.")


@pytest.mark.commands("getDefaultRWConcern", "setDefaultRWConcern")
@settings(max_examples=30, deadline=None)
@given(in_memory=NOT_BOOL, read=NOT_OBJECT, write=NOT_OBJECT)
def test_default_rw_concern_arguments_are_parsed_first(client, in_memory, read, write):
    error = _fails(client, SON([("getDefaultRWConcern", 1), ("inMemory", in_memory)]))
    assert error.code == 14 and "'getDefaultRWConcern.inMemory' is the wrong type" in error.details["errmsg"]
    for name, value in (("defaultReadConcern", read), ("defaultWriteConcern", write)):
        error = _fails(client, SON([("setDefaultRWConcern", 1), (name, value)]))
        assert error.code == 14, error.details
        assert f"'setDefaultRWConcern.{name}' is the wrong type" in error.details["errmsg"]
    for name in ("getDefaultRWConcern", "setDefaultRWConcern"):
        error = _fails(client, SON([(name, 1), ("bogus", 1)]))
        assert (error.code, error.details["errmsg"]) == (40415, f"BSON field '{name}.bogus' is an unknown field.")


@pytest.mark.commands("getClusterParameter", "setClusterParameter")
@pytest.mark.parametrize("cmd", [
    SON([("getClusterParameter", "changeStreamOptions")]), SON([("getClusterParameter", "*")]),
    SON([("getClusterParameter", ["a", "b"])]), SON([("getClusterParameter", [])]),
    SON([("setClusterParameter", {"changeStreamOptions": {"preAndPostImages": {"expireAfterSeconds": 10}}})]),
    SON([("setClusterParameter", {})]),
])
def test_cluster_parameters_are_refused_on_a_standalone(client, cmd):
    name = next(iter(cmd))
    error = _fails(client, cmd)
    assert (error.code, error.details["errmsg"]) == (20, f"{name} cannot be run on standalones")
    assert _fails(client, cmd, db="test").code == 13
    error = _fails(client, SON([*cmd.items(), ("bogus", 1)]))
    assert (error.code, error.details["errmsg"]) == (40415, f"BSON field '{name}.bogus' is an unknown field.")


@pytest.mark.commands("getClusterParameter", "setClusterParameter")
@settings(max_examples=30, deadline=None)
@given(value=NOT_OBJECT)
def test_cluster_parameter_arguments_are_parsed_first(client, value):
    if not isinstance(value, str | list) or any(not isinstance(v, str) for v in value):  # ([] is an array of strings)
        error = _fails(client, SON([("getClusterParameter", value)]))
        assert error.code == 14 and "'getClusterParameter.getClusterParameter' is the wrong type" in error.details["errmsg"]
    error = _fails(client, SON([("setClusterParameter", value)]))
    assert error.code == 14 and "'setClusterParameter.setClusterParameter' is the wrong type" in error.details["errmsg"]


@pytest.mark.commands("shardingState")
def test_sharding_state_of_a_standalone_is_disabled(client):
    assert client.admin.command("shardingState") == {"enabled": False, "ok": 1.0}
    assert _fails(client, {"shardingState": 1}, db="test").code == 13


@pytest.mark.commands("connPoolStats", "connPoolSync", "connpoolsync")
@pytest.mark.parametrize("db", ["admin", "test"])
def test_connection_pools_of_a_standalone_are_empty(client, db):
    reply = client[db].command("connPoolStats")
    assert list(reply) == [
        "numClientConnections", "numAScopedConnections", "totalInUse", "totalAvailable", "totalLeased",
        "totalCreated", "totalRefreshing", "totalRefreshed", "totalWasNeverUsed", "acquisitionWaitTimes",
        "pools", "hosts", "replicaSets", "ok"]
    # (BSONObjBuilder::appendNumber stores a long long that fits in 32 bits as an int)
    assert all(reply[name] == 0 and not isinstance(reply[name], Int64) for name in list(reply)[:9])
    histogram = reply["acquisitionWaitTimes"]
    assert list(histogram)[:2] == ["(-inf, 0ms)", "[0ms, 50ms)"] and list(histogram)[-2:] == ["[1000ms, inf)", "totalCount"]
    assert len(histogram) == 23 and all(v == {"count": Int64(0)} for k, v in histogram.items() if k != "totalCount")
    assert (reply["pools"], reply["hosts"], reply["replicaSets"]) == ({}, {}, {})
    for name in ("connPoolSync", "connpoolsync"):
        assert client[db].command(name) == {"ok": 1.0}


HOSTS = st.one_of(
    st.from_regex(r"[a-z0-9.\-]{1,12}(:[0-9]{1,6})?", fullmatch=True),
    st.from_regex(r"\[[0-9a-f:]{2,10}\](:[0-9]{1,6})?", fullmatch=True),
    st.text(alphabet=":[]a1", max_size=8),
)


def _host_error(text: str) -> str | None:
    """HostAndPort::initialize's verdict, written from its rules: the message, or None when it parses."""
    colon = text.rfind(":")
    host = text[:colon] if colon >= 0 else text
    if "[" in text:
        close = text.find("]")
        if text.find("[") != 0:
            return f"'[' present, but not first character in {text}"
        if close < 0:
            return f"ipv6 address is missing closing ']' in hostname in {text}"
        host = text[1:close]
        if colon < close:
            if len(text) != close + 1:
                return f"missing colon after ']' before the port in {text}"
            colon = -1
        elif colon != close + 1:
            return f"Extraneous characters between ']' and pre-port ':' in {text}"
    elif "]" in text:
        return f"']' present without '[' in {text}"
    elif text.count(":") > 1:
        return f"More than one ':' detected. If this is an ipv6 address, it needs to be surrounded by '[' and ']'; {text}"
    if not host:
        return f'Empty host component parsing HostAndPort from "{text}"'
    if colon >= 0:
        digits = text[colon + 1:]
        if not digits.isdigit():
            return "No digits" if not digits else "Did not consume whole string."
        if not 0 < int(digits) <= 65535:
            return f'Port number {int(digits)} out of range parsing HostAndPort from "{text}"'
    return None


@pytest.mark.commands("dropConnections")
@settings(max_examples=60, deadline=None)
@given(hosts=st.lists(HOSTS, max_size=3))
def test_drop_connections_parses_each_host_and_port(client, hosts):
    expected = next((m for m in map(_host_error, hosts) if m is not None), None)
    cmd = SON([("dropConnections", 1), ("hostAndPort", hosts)])
    if expected is None:
        assert client.admin.command(cmd)["ok"] == 1
    else:
        error = _fails(client, cmd)
        assert (error.code, error.details["errmsg"]) == (9, expected)
    assert client.admin.command("ping")["ok"] == 1  # this client's own connection is not dropped


@pytest.mark.commands("dropConnections")
def test_drop_connections_arguments(client):
    assert _fails(client, SON([("dropConnections", 1)])).code == 40414
    assert _fails(client, SON([("dropConnections", 1), ("hostAndPort", "a:1")])).code == 14
    error = _fails(client, SON([("dropConnections", 1), ("hostAndPort", ["a:1", 5])]))
    assert (error.code, error.details["errmsg"]) == (
        14, "BSON field 'dropConnections.hostAndPort.1' is the wrong type 'int', expected type 'string'")
    assert _fails(client, SON([("dropConnections", 1), ("hostAndPort", []), ("other", 1)])).code == 40415
    assert _fails(client, SON([("dropConnections", 1), ("hostAndPort", [])]), db="test").code == 13
    reply = client.admin.command(SON([("dropConnections", 1), ("hostAndPort", ["localhost:27017", "[::1]:1"])]))
    assert reply["ok"] == 1
    error = _fails(client, SON([("dropConnections", 1), ("hostAndPort", []), ("writeConcern", {"w": 1})]))
    assert error.code == 72


@pytest.mark.commands("setUserWriteBlockMode")
@settings(max_examples=30, deadline=None)
@given(value=st.one_of(st.booleans(), NOT_BOOL), db=st.sampled_from(["admin", "test"]))
def test_set_user_write_block_mode_is_refused_on_a_standalone(client, value, db):
    error = _fails(client, SON([("setUserWriteBlockMode", 1), ("global", value)]), db=db)
    if isinstance(value, bool):
        assert (error.code, error.details["errmsg"]) == (20, "setUserWriteBlockMode cannot be run on standalones")
    else:
        assert error.code == 14
    client.test.write_block.insert_one({})  # a standalone never blocks user writes


@pytest.mark.commands("setUserWriteBlockMode")
def test_set_user_write_block_mode_arguments(client):
    assert _fails(client, SON([("setUserWriteBlockMode", 1)])).code == 40414
    assert _fails(client, SON([("setUserWriteBlockMode", 1), ("global", True), ("x", 1)])).code == 40415
    error = _fails(client, SON([("setUserWriteBlockMode", 1), ("global", True), ("writeConcern", {"w": 1})]))
    assert error.code == 72
