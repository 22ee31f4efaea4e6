"""checkShardingIndex as a standalone mongod 7.0 answers it (src/mongo/db/s/check_sharding_index_command.cpp,
shard_key_index_util.cpp's findShardKeyPrefixedIndex with requireSingleKey; jstests/core/administrative/
check_shard_index.js, and commands_lib.js's checkShardingIndex_firstDb case, which succeeds on a standalone).
Tidemark answered 59 CommandNotFound.

An index serves the shard key when the key pattern prefixes it and it is neither partial, sparse, multikey
(any document ever indexed an array in it), hidden, nor of a non-simple collation. Refusals are
errmsg-style (no code): "couldn't find valid index for shard key" and a line per index passed over.
"""

from __future__ import annotations

import pytest
from bson.son import SON
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("checkShardingIndex")

NS = "check_sharding_index.c"


@pytest.fixture
def coll(client):
    database = client["check_sharding_index"]
    database.drop_collection("c")
    yield database.c
    client.drop_database(database.name)


def check(client, key_pattern, ns=NS):
    return client.admin.command(SON([("checkShardingIndex", ns), ("keyPattern", key_pattern)]), check=False)


def test_jstest_check_shard_index(client, coll):
    """check_shard_index.js, case by case."""
    coll.create_index([("x", 1), ("y", 1)])
    assert check(client, {"x": 1, "y": 1}) == {"ok": 1.0}
    coll.insert_many([{"x": 1, "y": 1}, {"x": None, "y": 1}, {"y": 2}])
    assert check(client, {"x": 1, "y": 1}) == {"ok": 1.0}  # nulls and missing fields are fine
    assert check(client, {"_id": 1}) == {"idskip": True, "ok": 1.0}
    coll.insert_one({"x": [1, 2], "y": 2})
    assert check(client, {"x": 1, "y": 1})["ok"] == 0.0  # an array value: the index is multikey
    coll.drop()
    coll.create_index([("x", 1), ("y", 1), ("z", 1)])
    coll.insert_one({"x": 1, "y": 1, "z": 1})
    for key in ({"x": 1}, {"x": 1, "y": 1}, {"x": 1, "y": 1, "z": 1}):
        assert check(client, key) == {"ok": 1.0}
    coll.insert_one({"x": 4, "y": 4, "z": [1, 2]})
    for key in ({"x": 1}, {"x": 1, "y": 1}, {"x": 1, "y": 1, "z": 1}):
        assert check(client, key)["ok"] == 0.0


@pytest.mark.parametrize("options, docs, expected", [
    ({}, [], "Shard key is not a prefix of index key."),
    ({"partialFilterExpression": {"y": {"$gt": 0}}}, [], "Index key is partial."),
    ({"sparse": True}, [], "Index key is sparse."),
    ({}, [{"y": [1, 2, 3]}], "Index key is multikey."),
    ({"collation": {"locale": "en"}}, [], "Index has a non-simple collation."),
    ({"sparse": True, "collation": {"locale": "en"}}, [], "Index key is sparse. Index has a non-simple collation."),
])
def test_refusal_messages(client, coll, options, docs, expected):
    key = [("z", 1)] if expected.startswith("Shard key") else [("x", 1), ("y", 1)]
    coll.create_index(key, name="k", **options)
    if docs:
        coll.insert_many(docs)
    reply = check(client, {"x": 1, "y": 1})
    assert reply == {"ok": 0.0, "errmsg": "couldn't find valid index for shard key\n"
                                          "Index _id_ cannot be used for sharding because: Shard key is not a prefix "
                                          f"of index key.\nIndex k cannot be used for sharding because: {expected}"}


def test_other_refusals(client, coll):
    assert check(client, {"x": 1}, "check_sharding_index.nope") == {"ok": 0.0, "errmsg": "ns not found"}
    assert check(client, {}) == {"ok": 0.0, "errmsg": "no key pattern found in checkShardingindex"}
    reply = client.admin.command(SON([("checkShardingIndex", NS)]), check=False)
    assert reply == {"ok": 0.0, "errmsg": "no key pattern found in checkShardingindex"}
    coll.database.command("create", "v", viewOn="c", pipeline=[])
    for ns, code in (("check_sharding_index.v", 166), (5, 2), ("nodot", 73)):
        with pytest.raises(OperationFailure) as info:
            client.admin.command(SON([("checkShardingIndex", ns), ("keyPattern", {"x": 1})]))
        assert info.value.code == code
    coll.create_index("x", hidden=True)
    assert check(client, {"x": 1})["ok"] == 0.0  # a hidden index is passed over
    with pytest.raises(OperationFailure) as info:
        client.admin.command(SON([("checkShardingIndex", NS), ("keyPattern", {"x": 1}), ("writeConcern", {"w": 1})]))
    assert info.value.code == 72


FIELDS = ("x", "y", "z")
documents = st.lists(st.fixed_dictionaries({}, optional={f: st.one_of(st.integers(0, 3), st.none(),
                                                                       st.lists(st.integers(0, 3), max_size=2))
                                                          for f in FIELDS})
                     .filter(lambda d: sum(isinstance(v, list) for v in d.values()) <= 1),  # (no parallel arrays)
                     max_size=6)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(docs=documents, width=st.integers(1, 3), index_width=st.integers(1, 3))
def test_an_index_serves_until_it_is_multikey(client, coll, docs, width, index_width):
    """The key {x[, y[, z]]} is served by the index {x[, y[, z]]} when it prefixes it and no document
    ever put an array into any of the index's fields."""
    coll.drop()
    coll.create_index([(f, 1) for f in FIELDS[:index_width]])
    if docs:
        coll.insert_many([dict(d) for d in docs])
    key = {f: 1 for f in FIELDS[:width]}
    multikey = any(isinstance(d.get(f), list) for d in docs for f in FIELDS[:index_width])
    reply = check(client, key)
    assert (reply["ok"] == 1.0) == (width <= index_width and not multikey), reply


def test_authorization(root_client, auth_server):
    root_client.check_sharding_index.c.insert_one({"x": 1})
    root_client.check_sharding_index.c.create_index("x")
    root_client.admin.command("createUser", "csi_reader", pwd="pw", roles=[{"role": "read", "db": "check_sharding_index"}])
    try:
        with auth_server.client(username="csi_reader", password="pw") as reader:
            assert check(reader, {"x": 1})["ok"] == 1.0
            with pytest.raises(OperationFailure) as info:
                reader.admin.command(SON([("checkShardingIndex", "other_db.c"), ("keyPattern", {"x": 1})]))
            assert info.value.code == 13
    finally:
        root_client.admin.command("dropUser", "csi_reader")
        root_client.drop_database("check_sharding_index")
