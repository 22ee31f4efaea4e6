"""A database name with ``$`` (``$external``, ``a$b``): mongod 7.0 takes it as a command's database
(its dispatch checks the name with DollarInDbNameBehavior::Allow) and refuses it only where a collection
would be created or written (userAllowedCreateNS / userAllowedWriteNS: 73 "Invalid namespace: <ns>").
Tidemark refused every command on such a database with 73 "Invalid database name" (found by the PHP
driver's tests and builtin_roles_external.js).

- Property (Hypothesis): for generated names holding a ``$``, every command of a corpus that creates
  nothing answers exactly what it answers on an empty database of a legal name (the ``$`` replaced);
  every command that would create or write a collection answers 73, and no database appears.
- ``$external`` holds users without passwords (what x.509 and LDAP principals are), as mongod.
- The names mongod refuses everywhere (``.``, space, ``/``, ``\\``, ``"``, NUL, 64 bytes) stay refused.

Commands go out as raw OP_MSG (``harness.server.raw_command``): pymongo refuses a ``$`` in a database
name on the client side, except ``$external``.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.harness.server import raw_command

pytestmark = pytest.mark.commands("ping", "find", "aggregate", "count", "distinct", "listCollections",
                                  "listIndexes", "dbStats", "collStats", "dropDatabase", "drop", "insert",
                                  "update", "delete", "findAndModify", "create", "createIndexes", "collMod",
                                  "dropIndexes", "validate", "explain", "mapReduce", "usersInfo",
                                  "cloneCollectionAsCapped", "convertToCapped", "createUser", "dropUser")

# Commands that create nothing: on an empty database they answer the same whatever its name.
READS: list[dict[str, Any]] = [
    {"ping": 1},
    {"find": "c", "filter": {"a": 1}},
    {"aggregate": "c", "pipeline": [{"$match": {"a": 1}}], "cursor": {}},
    {"aggregate": 1, "pipeline": [{"$documents": [{"a": 1}]}], "cursor": {}},
    {"count": "c"},
    {"distinct": "c", "key": "a"},
    {"listCollections": 1},
    {"listCollections": 1, "nameOnly": True},
    {"listIndexes": "c"},
    {"dbStats": 1},
    {"collStats": "c"},
    {"dropDatabase": 1},
    {"drop": "c"},
    {"collMod": "c"},
    {"dropIndexes": "c", "index": "*"},
    {"validate": "c"},
    {"explain": {"find": "c"}},
    {"usersInfo": 1},
    {"convertToCapped": "c", "size": 4096},
]

# Commands that would create (or write into) a collection of the database.
CREATES: list[dict[str, Any]] = [
    {"insert": "c", "documents": [{"a": 1}]},
    {"update": "c", "updates": [{"q": {}, "u": {"$set": {"a": 1}}, "upsert": True}]},
    {"update": "c", "updates": [{"q": {}, "u": {"$set": {"a": 1}}}]},
    {"delete": "c", "deletes": [{"q": {}, "limit": 0}]},
    {"findAndModify": "c", "query": {}, "update": {"$set": {"a": 1}}, "upsert": True},
    {"create": "c"},
    {"create": "t", "timeseries": {"timeField": "t", "metaField": "m"}},
    {"create": "v", "viewOn": "c", "pipeline": []},
    {"createIndexes": "c", "indexes": [{"key": {"a": 1}, "name": "a_1"}]},
    {"aggregate": 1, "pipeline": [{"$documents": [{"a": 1}]}, {"$out": "o"}], "cursor": {}},
    {"aggregate": 1, "pipeline": [{"$documents": [{"a": 1}]}, {"$merge": "m"}], "cursor": {}},
    {"mapReduce": "c", "map": "function() {}", "reduce": "function(k, v) {}", "out": "r"},
    {"cloneCollectionAsCapped": "c", "toCollection": "d", "size": 4096},
]

_NAME_CHARS = st.sampled_from("ab_-9é日@")
DOLLAR_NAMES = st.builds(lambda a, b: f"{a}${b}", st.text(_NAME_CHARS, max_size=5), st.text(_NAME_CHARS | st.just("$"), max_size=5))


def _outcome(reply: dict[str, Any]) -> tuple:
    """A reply without the names in it: ok, code, and its shape."""
    if reply.get("ok") != 1:
        return ("error", reply.get("code"), reply.get("codeName"))
    return ("ok", tuple(sorted(k for k in reply if k not in ("operationTime", "$clusterTime"))),
            tuple(reply["cursor"]["firstBatch"]) if "cursor" in reply else ())


def _databases(port: int) -> set[str]:
    reply = raw_command(port, {"listDatabases": 1, "nameOnly": True, "$db": "admin"})
    return {d["name"] for d in reply["databases"]}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=DOLLAR_NAMES)
def test_a_dollar_database_answers_commands_and_creates_nothing(server, name):
    legal = name.replace("$", "_")
    before = _databases(server.port)
    for command in READS:
        with_dollar = raw_command(server.port, {**command, "$db": name})
        plain = raw_command(server.port, {**command, "$db": legal})
        assert _outcome(with_dollar) == _outcome(plain), (command, with_dollar, plain)
    for command in CREATES:
        reply = raw_command(server.port, {**command, "$db": name})
        assert reply["ok"] == 0 and reply["code"] == 73 and reply["codeName"] == "InvalidNamespace", (command, reply)
        assert reply["errmsg"].startswith(f"Invalid namespace: {name}."), reply
    assert _databases(server.port) == before
    raw_command(server.port, {"dropDatabase": 1, "$db": legal})


def test_a_write_batch_to_a_dollar_database_is_refused_whole(server):
    """userAllowedWriteNS comes before any statement: a command error, no writeErrors, nothing written."""
    reply = raw_command(server.port, {"insert": "c", "documents": [{"_id": i} for i in range(3)],
                                      "ordered": False, "$db": "x$y"})
    assert reply == {"ok": 0.0, "errmsg": "Invalid namespace: x$y.c", "code": 73, "codeName": "InvalidNamespace"}
    assert "x$y" not in _databases(server.port)


@pytest.mark.parametrize("name", ["a.b", "a b", "a/b", "a\\b", 'a"b', "a\x00b", "d" * 64, ""])
def test_names_mongod_refuses_everywhere_stay_refused(server, name):
    reply = raw_command(server.port, {"ping": 1, "$db": name})
    assert reply["ok"] == 0 and reply["code"] == 73, reply
    if "." in name:  # the DatabaseName of the operation's namespace, before the command is looked up
        assert reply["errmsg"] == f"'.' is an invalid character in a db name: {name}"
    elif "\x00" in name:
        assert reply["errmsg"] == "database names cannot have embedded null characters"
    else:  # validDBName, in _initiateCommand
        assert reply["errmsg"] == f"Invalid database name: '{name}'"


def test_external_users_have_no_password(client):
    external = client["$external"]
    try:
        external.command("createUser", "CN=client,OU=tests", roles=[{"role": "read", "db": "app"}])
        info = external.command("usersInfo", "CN=client,OU=tests")
        assert [(u["user"], u["db"], u["roles"]) for u in info["users"]] == \
            [("CN=client,OU=tests", "$external", [{"role": "read", "db": "app"}])]
        with pytest.raises(Exception) as err:
            external.command("createUser", "other", pwd="secret", roles=[])
        assert getattr(err.value, "code", None) == 2
        assert "$external" not in client.list_database_names()  # users live in admin.system.users
    finally:
        external.command("dropAllUsersFromDatabase")
