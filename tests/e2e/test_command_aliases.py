"""A command spelled by its alias (``collstats``, ``datasize``, ``findandmodify``, ``mapreduce``,
``deleteIndexes``, ``dbstats``, ``dbhash``, ``buildinfo``, ``ismaster``) is the command itself, on every kind
of namespace and under access control (mongod registers the alias as the same Command object).

Found by a fuzzer sending random command documents over the whole command table:
- ``{collstats: <a time-series collection>}`` answered 1 InternalError (the time-series path read the
  collection's name from the ``collStats`` field only);
- under ``--auth`` the authorization rules read a command's namespace from its canonical field, so an alias
  was checked against the whole database: ``{datasize: "other.secret"}`` sent to a database where the user
  may ``find`` was allowed, and answered the size and count of a collection of another database (mongod
  checks ``find`` on the namespace named), while ``{collstats: "c"}`` by a user with a privilege on that
  one collection was refused.

Every alias is compared with its canonical name on a regular collection, a time-series collection, a view
and a missing name: the same outcome (ok and reply fields, or the same error code). Under ``--auth`` each
aliased command asks exactly the privileges its canonical spelling asks.
"""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

import pymongo
import pytest
from pymongo.errors import OperationFailure

DB = "aliases"

pytestmark = pytest.mark.commands("buildInfo", "isMaster", "dbStats", "findAndModify", "mapReduce", "dropIndexes",
                                  "collStats", "dataSize", "dbHash")

# (alias, canonical name, the command's body given the target collection's name)
ALIASES: list[tuple[str, str, Any]] = [
    ("buildinfo", "buildInfo", lambda coll: (1, {})),
    ("ismaster", "isMaster", lambda coll: (1, {})),
    ("dbstats", "dbStats", lambda coll: (1, {})),
    ("dbhash", "dbHash", lambda coll: (1, {"collections": [coll]})),
    ("collstats", "collStats", lambda coll: (coll, {})),
    ("datasize", "dataSize", lambda coll: (f"{DB}.{coll}", {})),
    ("findandmodify", "findAndModify", lambda coll: (coll, {"query": {"_id": "none"}, "update": {"$set": {"x": 1}}})),
    ("mapreduce", "mapReduce",
     lambda coll: (coll, {"map": "function() { emit(1, 1); }", "reduce": "function(k, v) { return Array.sum(v); }",
                          "out": {"inline": 1}})),
    ("deleteIndexes", "dropIndexes", lambda coll: (coll, {"index": "x_1"})),
]
TARGETS = ("regular", "series", "view", "missing")
VOLATILE = {"operationTime", "$clusterTime", "localTime", "connectionId", "millis", "timeMillis", "md5", "timing",
            "counts"}


def _outcome(db, name: str, first: Any, body: dict) -> tuple:
    if name in ("deleteIndexes", "dropIndexes"):
        for coll in ("regular", "series"):
            db[coll].create_index("x", name="x_1")
    try:
        reply = db.command({name: first, **body})
    except OperationFailure as failure:
        return ("error", failure.code)
    return ("ok", sorted(k for k in reply if k not in VOLATILE))


@pytest.fixture(scope="module")
def aliased(client):
    db = client[DB]
    client.drop_database(DB)
    db.regular.insert_many([{"_id": i, "x": i} for i in range(3)])
    db.create_collection("series", timeseries={"timeField": "t", "metaField": "m"})
    db.series.insert_many([{"t": dt.datetime(2024, 1, 1, i), "m": i % 2, "x": i} for i in range(3)])
    db.command("create", "view", viewOn="regular", pipeline=[])
    yield db
    client.drop_database(DB)


@pytest.mark.parametrize("alias,canonical,body", ALIASES, ids=[a for a, _, _ in ALIASES])
def test_an_alias_answers_as_its_command_on_every_kind_of_namespace(aliased, alias, canonical, body):
    for target in TARGETS:
        first, rest = body(target)
        by_alias = _outcome(aliased, alias, first, rest)
        by_name = _outcome(aliased, canonical, first, rest)
        assert by_alias == by_name, (target, by_alias, by_name)
        assert by_alias[0] == "ok" or by_alias[1] != 1, (target, by_alias)


def test_an_alias_asks_the_privileges_of_its_command(auth_server, root_client):
    mine, other = f"mine_{uuid.uuid4().hex[:6]}", f"other_{uuid.uuid4().hex[:6]}"
    root_client[other].secret.insert_many([{"_id": i} for i in range(7)])
    root_client[mine].c.insert_one({"_id": 1})
    root_client[mine].d.insert_one({"_id": 1})
    # find on the whole database `mine`; collStats and find on `mine.c` alone for the second user
    root_client[mine].command("createRole", "oneColl", roles=[], privileges=[
        {"resource": {"db": mine, "collection": "c"}, "actions": ["collStats", "find"]}])
    root_client[mine].command("createUser", "reader", pwd="pw", roles=["read"])
    root_client[mine].command("createUser", "narrow", pwd="pw", roles=["oneColl"])

    def connect(user: str) -> pymongo.MongoClient:
        return pymongo.MongoClient(f"mongodb://{user}:pw@127.0.0.1:{auth_server.port}/?directConnection=true"
                                   f"&authSource={mine}")

    def code(conn, command: dict) -> int:
        try:
            conn[mine].command(command)
        except OperationFailure as failure:
            return failure.code
        return 0

    try:
        with connect("reader") as reader, connect("narrow") as narrow:
            for name in ("dataSize", "datasize"):
                assert code(reader, {name: f"{other}.secret"}) == 13, name  # another database: not theirs
                assert code(reader, {name: f"{mine}.c"}) == 0, name
            for name in ("collStats", "collstats"):
                assert code(narrow, {name: "c"}) == 0, name  # the privilege on that collection suffices
                assert code(narrow, {name: "d"}) == 13, name
            for name in ("dataSize", "datasize"):
                assert code(narrow, {name: f"{mine}.c"}) == 0, name
                assert code(narrow, {name: f"{mine}.d"}) == 13, name
    finally:
        root_client.drop_database(mine)
        root_client.drop_database(other)
