"""A flag that asks for more privilege asks for it whatever true value spells it, and an alias names the
collection its command acts on (found by a fuzzer of access control, one helper session, 47,000 commands).

mongod reads these flags as safeBool (any number; ``dropTarget`` may also be the target's UUID) when it
checks a command's authorization, and Tidemark's handlers read them so too; the authorization rules asked for
the extra privilege only when the value was literally ``true``:

- findAndModify ``upsert: 1`` inserted and ``remove: 1`` deleted for a role with find and update only;
- ``bypassDocumentValidation: 1`` wrote documents the validator refuses without the bypass privilege;
- renameCollection ``dropTarget: 1`` (or the target's UUID) dropped the target without dropCollection;
- create ``capped: 1`` made a capped collection without convertToCapped (mongod's checkAuthForCreate).

Property: for each such flag and each spelling of true (``True``, ``1``, ``1.0``, ``Int64(1)``,
``Decimal128("1")``, the UUID where one is taken) a user lacking the privilege is refused with 13 and
nothing changes, exactly as with ``true``; a false spelling asks nothing more.

And through an alias of the command: ``readWrite`` on admin could make itself root with
``findandmodify`` on ``admin.system.users``, and ``read`` on admin read every user's stored credentials
with ``mapreduce`` on it (the rules checked the alias against the whole database, which never covers
``system.*``).
"""

from __future__ import annotations

import uuid

import pymongo
import pytest
from bson import Code, Decimal128, Int64
from bson.binary import Binary, UuidRepresentation
from bson.son import SON
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("findAndModify", "insert", "update", "renameCollection", "create", "mapReduce",
                                  "aggregate")

TRUE_SPELLINGS = [True, 1, 1.0, Int64(1), Decimal128("1")]
FALSE_SPELLINGS = [False, 0, 0.0]


def _code(call) -> int:
    try:
        call()
    except OperationFailure as failure:
        return failure.code
    return 0


@pytest.fixture(scope="module")
def setting(auth_server, root_client):
    db_name = f"flags_{uuid.uuid4().hex[:6]}"
    db = root_client[db_name]
    db.create_collection("c", validator={"a": {"$type": "int"}})
    db.c.insert_many([{"_id": i, "a": i} for i in range(3)])
    db.command("createRole", "findUpdate", roles=[], privileges=[
        {"resource": {"db": db_name, "collection": "c"}, "actions": ["find", "update"]}])
    db.command("createRole", "writeNoBypass", roles=[], privileges=[
        {"resource": {"db": db_name, "collection": "c"}, "actions": ["find", "insert", "update", "remove"]}])
    db.command("createRole", "noDrop", roles=[], privileges=[
        {"resource": {"db": db_name, "collection": ""},
         "actions": ["createCollection", "insert", "find", "renameCollectionSameDB", "createIndex"]}])
    for user, role in (("fu", "findUpdate"), ("wnb", "writeNoBypass"), ("nd", "noDrop")):
        db.command("createUser", user, pwd="pw", roles=[role])

    def connect(user: str) -> pymongo.MongoClient:
        return pymongo.MongoClient(f"mongodb://{user}:pw@127.0.0.1:{auth_server.port}/?directConnection=true"
                                   f"&authSource={db_name}", uuidRepresentation="standard")

    clients = {user: connect(user) for user in ("fu", "wnb", "nd")}
    yield db_name, clients
    for mongo in clients.values():
        mongo.close()
    root_client.drop_database(db_name)


def _documents(root_client, db_name: str) -> list:
    return list(root_client[db_name].c.find({}, sort=[("_id", 1)]))


@pytest.mark.parametrize("true", TRUE_SPELLINGS, ids=repr)
def test_a_true_flag_asks_its_privilege_whatever_spells_it(root_client, setting, true):
    db_name, clients = setting
    before = _documents(root_client, db_name)
    fu, wnb = clients["fu"][db_name], clients["wnb"][db_name]
    attempts = {
        "findAndModify upsert": lambda: fu.command(SON([("findAndModify", "c"), ("query", {"_id": 99}),
                                                        ("update", {"$set": {"a": 1}}), ("upsert", true)])),
        "findAndModify remove": lambda: fu.command(SON([("findAndModify", "c"), ("query", {"_id": 1}),
                                                        ("remove", true)])),
        "update upsert": lambda: fu.command(SON([("update", "c"), ("updates", [
            {"q": {"_id": 98}, "u": {"$set": {"a": 1}}, "upsert": true}])])),
        "insert bypass": lambda: wnb.command(SON([("insert", "c"), ("documents", [{"_id": 97, "a": "not an int"}]),
                                                  ("bypassDocumentValidation", true)])),
        "update bypass": lambda: wnb.command(SON([("update", "c"), ("updates", [
            {"q": {"_id": 0}, "u": {"$set": {"a": "not an int"}}}]), ("bypassDocumentValidation", true)])),
        "findAndModify bypass": lambda: wnb.command(SON([("findAndModify", "c"), ("query", {"_id": 0}),
                                                         ("update", {"$set": {"a": "x"}}),
                                                         ("bypassDocumentValidation", true)])),
    }
    codes = {name: _code(attempt) for name, attempt in attempts.items()}
    assert codes == dict.fromkeys(attempts, 13)
    assert _documents(root_client, db_name) == before


@pytest.mark.parametrize("false", FALSE_SPELLINGS, ids=repr)
def test_a_false_flag_asks_nothing_more(root_client, setting, false):
    db_name, clients = setting
    fu = clients["fu"][db_name]
    reply = fu.command(SON([("findAndModify", "c"), ("query", {"_id": 2}), ("update", {"$set": {"a": 2}}),
                            ("upsert", false), ("remove", false)]))
    assert reply["ok"] == 1


def test_drop_target_and_capped_ask_their_privileges(root_client, setting):
    db_name, clients = setting
    nd = clients["nd"][db_name]
    nd.src.insert_one({"_id": 1})
    root_client[db_name].victim.insert_one({"_id": "keep"})
    victim_uuid = next(c for c in root_client[db_name].list_collections() if c["name"] == "victim")["info"]["uuid"]
    victim_uuid = victim_uuid if isinstance(victim_uuid, Binary) else Binary.from_uuid(victim_uuid, UuidRepresentation.STANDARD)
    for drop_target in [*TRUE_SPELLINGS, victim_uuid]:
        code = _code(lambda value=drop_target: clients["nd"].admin.command(SON([
            ("renameCollection", f"{db_name}.src"), ("to", f"{db_name}.victim"), ("dropTarget", value)])))
        assert code == 13, drop_target
    assert list(root_client[db_name].victim.find()) == [{"_id": "keep"}]
    for capped in TRUE_SPELLINGS:
        assert _code(lambda value=capped: nd.command(SON([("create", "capped_one"), ("capped", value),
                                                           ("size", 4096)]))) == 13
    assert "capped_one" not in root_client[db_name].list_collection_names()


def test_an_alias_never_reaches_admin_system_users(auth_server, root_client):
    suffix = uuid.uuid4().hex[:6]
    rw, ro = f"adminrw_{suffix}", f"adminr_{suffix}"
    root_client.admin.command("createUser", rw, pwd="pw", roles=[{"role": "readWrite", "db": "admin"}])
    root_client.admin.command("createUser", ro, pwd="pw", roles=[{"role": "read", "db": "admin"}])

    def connect(user: str) -> pymongo.MongoClient:
        return pymongo.MongoClient(f"mongodb://{user}:pw@127.0.0.1:{auth_server.port}/?directConnection=true"
                                   "&authSource=admin")

    try:
        with connect(rw) as writer, connect(ro) as reader:
            for name in ("findAndModify", "findandmodify"):
                assert _code(lambda name=name: writer.admin.command(SON([
                    (name, "system.users"), ("query", {"user": rw}),
                    ("update", {"$set": {"roles": [{"role": "root", "db": "admin"}]}})]))) == 13, name
            for name in ("mapReduce", "mapreduce"):
                assert _code(lambda name=name: reader.admin.command(SON([
                    (name, "system.users"), ("map", Code("function() { emit(this._id, this.credentials); }")),
                    ("reduce", Code("function(k, v) { return v[0]; }")), ("out", {"inline": 1})]))) == 13, name
        info = root_client.admin.command("usersInfo", rw)["users"][0]
        assert info["roles"] == [{"role": "readWrite", "db": "admin"}]
    finally:
        root_client.admin.command("dropUser", rw)
        root_client.admin.command("dropUser", ro)
