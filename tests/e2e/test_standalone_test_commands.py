"""Test commands a mongod 7.0 standalone registers with enableTestCommands that answered 59
CommandNotFound here: echo (src/mongo/db/commands/generic.cpp), cpuload (cpuload.cpp),
reapLogicalSessionCacheNow (reap_logical_session_cache_now.cpp) and _hashBSONElement (hashcmd.cpp).

Without enableTestCommands they do not exist (59), as mongod's test-only commands. Under --auth, echo
needs no user (requiresAuth false); the others need one and no privilege. None takes a writeConcern
(72). _hashBSONElement's ``out`` is the hashed-index key of its first value with ``seed``
(hashcmd.cpp's own example: "hashthis" with seed 1 is 6271151123721111923), and a seed that is no number
answers ``{key, ok: 0, errmsg: "seed must be a number"}`` without a code (appendSimpleCommandStatus).
"""

from __future__ import annotations

import datetime
import math

import pytest
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.objectid import ObjectId
from bson.son import SON
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

NEW = ("echo", "cpuload", "reapLogicalSessionCacheNow", "_hashBSONElement", "godinsert")
pytestmark = pytest.mark.commands("echo", "cpuload", "reapLogicalSessionCacheNow", "_hashBSONElement", "godinsert")


@pytest.fixture(scope="module")
def testing(tmp_path_factory):
    from harness import ServerProcess

    proc = ServerProcess(tmp_path_factory.mktemp("test-commands") / "db", params={"enableTestCommands": 1})
    proc.start()
    with proc.client() as mongo:
        yield mongo
    assert proc.terminate() == 0


@pytest.mark.parametrize("name", NEW)
def test_absent_without_enable_test_commands(client, name):
    with pytest.raises(OperationFailure) as info:
        client.admin.command(name, 1)
    assert info.value.code == 59


@pytest.mark.parametrize("name", NEW[:4])
def test_no_write_concern(testing, name):
    with pytest.raises(OperationFailure) as info:
        testing.admin.command(SON([(name, 1), ("writeConcern", {"w": 1})]))
    assert info.value.code == 72


values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1).map(Int64), st.integers(-(2**31), 2**31 - 1),
              st.floats(allow_nan=False), st.text(max_size=8), st.binary(max_size=8),
              st.builds(ObjectId), st.just(Decimal128("1.5")),
              st.datetimes(min_value=datetime.datetime(1970, 1, 1), max_value=datetime.datetime(2100, 1, 1))
              .map(lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000))),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.text("abc", min_size=1, max_size=3), inner, max_size=3)),
    max_leaves=6)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=st.dictionaries(st.text("xyz", min_size=1, max_size=4), values, max_size=4))
def test_echo_answers_the_body(testing, body):
    command = SON([("echo", 1), *body.items()])
    reply = testing.get_database("echo_db").command(command)
    assert reply["ok"] == 1.0
    echoed = reply["echo"]
    assert {k: v for k, v in echoed.items() if k not in ("$db", "lsid", "$clusterTime", "$readPreference")} \
        == {"echo": 1, **body}
    assert echoed["$db"] == "echo_db"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=values, seed=st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1)))
def test_hash_bson_element_is_the_hashed_index_key(testing, value, seed):
    command = SON([("_hashBSONElement", value)] + ([] if seed is None else [("seed", seed)]))
    reply = testing.admin.command(command)
    assert reply["key"] == value and reply["seed"] == (seed or 0) and isinstance(reply["out"], Int64)
    if seed is None and not isinstance(value, list):  # (a hashed index refuses arrays)
        key = testing.admin.command("aggregate", 1, pipeline=[{"$documents": [{"v": value}]},
                                                              {"$project": {"h": {"$toHashedIndexKey": "$v"}}}],
                                    cursor={})["cursor"]["firstBatch"][0]["h"]
        assert reply["out"] == key


def test_hash_bson_element_known_values(testing):
    assert testing.admin.command(SON([("_hashBSONElement", "hashthis"), ("seed", 1)]))["out"] == 6271151123721111923
    assert testing.admin.command("_hashBSONElement", 42)["out"] == -944302157085130861  # mongod's start-up check
    assert testing.admin.command(SON([("_hashBSONElement", 0), ("seed", 1.9)]))["seed"] == 1
    for seed in ("1", None, [1], {"a": 1}, True):
        reply = testing.admin.command(SON([("_hashBSONElement", "x"), ("seed", seed)]), check=False)
        assert reply == {"key": "x", "ok": 0.0, "errmsg": "seed must be a number"}


@pytest.mark.parametrize("factor", [None, 0, 1, 2.5, -3, "x", Int64(2), Decimal128("1"), Decimal128("sNaN"), Decimal128("-Infinity"), math.nan, math.inf, 1e300])
def test_cpuload_reports_its_duration(testing, factor):
    command = SON([("cpuload", 1)] + ([] if factor is None else [("cpuFactor", factor)]))
    reply = testing.admin.command(command)
    assert set(reply) == {"durationMillis", "durationSeconds", "ok"}
    assert isinstance(reply["durationMillis"], Int64) and isinstance(reply["durationSeconds"], Int64)
    assert 0 <= reply["durationSeconds"] * 1000 <= reply["durationMillis"]


def test_cpuload_is_interruptible(testing):
    with pytest.raises(OperationFailure) as info:
        testing.admin.command("cpuload", 1, cpuFactor=1e10, maxTimeMS=50)  # (hours of work in mongod)
    assert info.value.code == 50


def test_reap_logical_session_cache_now(testing):
    testing.admin.command("startSession")
    assert testing.admin.command("reapLogicalSessionCacheNow") == {"ok": 1.0}
    assert testing.test_db.command("reapLogicalSessionCacheNow") == {"ok": 1.0}  # (not admin-only)


def test_authorization(auth_server, root_client):
    with auth_server.client() as anonymous:
        assert anonymous.admin.command("echo", 1)["ok"] == 1.0
        for name in NEW[1:]:
            with pytest.raises(OperationFailure) as info:
                anonymous.admin.command(name, "c")
            assert info.value.code == 13
    for name in NEW[:4]:
        assert root_client.admin.command(name, 1)["ok"] == 1.0
    assert root_client.auth_godinsert.command("godinsert", "c", obj={"_id": 1})["ok"] == 1.0
    root_client.drop_database("auth_godinsert")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc=st.dictionaries(st.text("abc", min_size=1, max_size=3), values, max_size=4))
def test_godinsert_inserts_the_document(testing, doc):
    database = testing["godinsert_db"]
    database.drop_collection("fresh")
    doc = {"_id": ObjectId(), **doc}
    assert database.command(SON([("godinsert", "fresh"), ("obj", doc)])) == {"ok": 1.0}
    assert database.fresh.find_one({"_id": doc["_id"]}) == doc  # (the collection was created)


def test_godinsert_refusals(testing):
    database = testing["godinsert_db"]
    database.command("godinsert", "c", obj={"_id": 7})
    with pytest.raises(OperationFailure) as info:
        database.command("godinsert", "c", obj={"_id": 7})
    assert info.value.code == 11000 and info.value.details["keyValue"] == {"_id": 7}
    for command, message in ((SON([("godinsert", "c"), ("obj", 5)]), "invalid parameter: expected an object (obj)"),
                             (SON([("godinsert", "c")]), "invalid parameter: expected an object ()")):
        with pytest.raises(OperationFailure) as info:
            database.command(command)
        assert (info.value.code, info.value.details["errmsg"]) == (10065, message)
    with pytest.raises(OperationFailure) as info:
        database.command("godinsert", 5, obj={})
    assert info.value.code == 73
