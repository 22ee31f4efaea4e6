"""mongodump / mongorestore 100.8.0 round trips of a Tidemark server with users, roles and data:
the auth schema document, _mergeAuthzCollections, restored collection options, --preserveUUID and
--oplogReplay of an oplog written here."""

import datetime as dt
import uuid

import bson
import pymongo
import pytest
from bson.binary import Binary
from harness.mongo_tools import BIN, SKIP_REASON, run_tool, uri_args
from pymongo.errors import OperationFailure

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(BIN is None, reason=SKIP_REASON),
    pytest.mark.commands("_mergeAuthzCollections", "applyOps", "createUser", "createRole", "usersInfo",
                         "rolesInfo", "listCollections", "create", "insert", "find"),
]

T0 = dt.datetime(2024, 5, 1)


def populate(client) -> None:
    client.d1.command("createUser", "u1", pwd="pw1", roles=["readWrite"])
    client.d1.command("createRole", "r1", privileges=[{"resource": {"db": "d1", "collection": "c"},
                                                       "actions": ["find"]}], roles=[])
    client.d1.command("grantRolesToUser", "u1", roles=["r1"])
    client.d1.c.insert_many([{"_id": i, "a": i} for i in range(5)])
    client.d1.create_collection("m", timeseries={"timeField": "t", "metaField": "k"})
    client.d1.m.insert_many([{"t": T0 + dt.timedelta(minutes=i), "k": i % 2, "v": i} for i in range(20)])


def check_restored(client, *, roles: bool = True) -> None:
    users = client.admin.command("usersInfo", {"forAllDBs": True})["users"]
    assert ("u1", "d1") in [(u["user"], u["db"]) for u in users]
    (u1,) = [u for u in users if u["user"] == "u1"]
    assert ({"role": "r1", "db": "d1"} in u1["roles"]) is roles
    assert [r["role"] for r in client.d1.command("rolesInfo", 1)["roles"]] == ["r1"]
    assert sorted(d["a"] for d in client.d1.c.find()) == list(range(5))
    assert client.d1.m.count_documents({}) == 20
    (entry,) = client.d1.list_collections(filter={"name": "c"})
    assert entry["options"] == {}  # mongorestore's idIndex is not a collection option


def authenticates(port: int, user: str, pwd: str, db: str) -> bool:
    with pymongo.MongoClient(port=port, username=user, password=pwd, authSource=db, directConnection=True,
                             serverSelectionTimeoutMS=5000) as c:
        try:
            c[db].command("ping")
            c.d1.c.find_one()
            return True
        except OperationFailure:
            return False


def test_the_first_user_writes_the_auth_schema_document(start_server):
    srv = start_server()
    with srv.client() as c:
        assert c.admin.system.version.count_documents({"_id": "authSchema"}) == 0
        c.d1.command("createUser", "u", pwd="p", roles=[])
        assert list(c.admin.system.version.find({"_id": "authSchema"})) == [{"_id": "authSchema",
                                                                               "currentVersion": 5}]
        c.d1.command("createUser", "v", pwd="p", roles=[])
        assert c.admin.system.version.count_documents({}) == 1


def test_whole_dump_of_an_auth_server_restores_into_a_fresh_auth_server(start_server, tmp_path):
    source = start_server(args=("--auth",))
    with source.client() as local:  # the localhost exception
        local.admin.command("createUser", "root", pwd="rootpw", roles=["root"])
    with source.client(username="root", password="rootpw") as c:
        populate(c)
    out = tmp_path / "dump"
    done = run_tool("mongodump", *uri_args(source.port, "root", "rootpw"), "-o", str(out))
    assert done.returncode == 0, done.stdout
    assert (out / "admin" / "system.version.bson").exists()
    assert [d["_id"] for d in bson.decode_all((out / "admin" / "system.version.bson").read_bytes())] == ["authSchema"]

    target = start_server(args=("--auth",))
    with target.client() as local:
        local.admin.command("createUser", "root", pwd="other", roles=["root"])
    done = run_tool("mongorestore", *uri_args(target.port, "root", "other"), "--dir", str(out))
    assert done.returncode == 0, done.stdout
    with target.client(username="root", password="other") as c:
        check_restored(c)
        assert "tempusers" not in c.admin.list_collection_names()
    assert authenticates(target.port, "u1", "pw1", "d1")
    assert authenticates(target.port, "root", "other", "admin")  # the target's own root was kept


def test_db_users_and_roles_dump_and_restore(start_server, tmp_path):
    srv = start_server()
    with srv.client() as c:
        populate(c)
        c.d2.command("createUser", "other", pwd="p", roles=[])
    out = tmp_path / "dump"
    done = run_tool("mongodump", *uri_args(srv.port), "-d", "d1", "--dumpDbUsersAndRoles", "-o", str(out))
    assert done.returncode == 0, done.stdout
    assert (out / "d1" / "$admin.system.users.bson").exists()
    with srv.client() as c:
        c.d1.command("dropAllUsersFromDatabase")
        c.d1.command("dropAllRolesFromDatabase")
        c.d1.command("createUser", "extra", pwd="p", roles=[])
    done = run_tool("mongorestore", *uri_args(srv.port), "-d", "d1", "--restoreDbUsersAndRoles", "--drop",
                    "--dir", str(out / "d1"))
    assert done.returncode == 0, done.stdout
    with srv.client() as c:
        check_restored(c)
        names = {(u["user"], u["db"]) for u in c.admin.command("usersInfo", {"forAllDBs": True})["users"]}
        assert names == {("u1", "d1"), ("other", "d2")}  # d1's extra user dropped, d2 untouched
    assert authenticates(srv.port, "u1", "pw1", "d1")


def test_restore_without_drop_keeps_existing_users_and_adds_the_missing_ones(start_server, tmp_path):
    srv = start_server()
    with srv.client() as c:
        populate(c)
    out = tmp_path / "dump"
    assert run_tool("mongodump", *uri_args(srv.port), "-o", str(out)).returncode == 0
    with srv.client() as c:
        c.d1.command("updateUser", "u1", pwd="changed")
        c.d1.command("dropRole", "r1")
        c.drop_database("d1")
    done = run_tool("mongorestore", *uri_args(srv.port), "--dir", str(out))
    assert done.returncode == 0, done.stdout
    with srv.client() as c:
        check_restored(c, roles=False)  # u1 as it is now (dropRole revoked r1), r1 restored
    assert authenticates(srv.port, "u1", "changed", "d1")  # the existing user won


def test_preserve_uuid_restores_collections_with_their_uuids(start_server, tmp_path):
    srv = start_server()
    with srv.client() as c:
        c.d1.c.insert_many([{"_id": i} for i in range(3)])
        (entry,) = c.d1.list_collections(filter={"name": "c"})
        before = entry["info"]["uuid"]
    out = tmp_path / "dump"
    assert run_tool("mongodump", *uri_args(srv.port), "-d", "d1", "-o", str(out)).returncode == 0
    done = run_tool("mongorestore", *uri_args(srv.port), "--preserveUUID", "--drop", "--dir", str(out))
    assert done.returncode == 0, done.stdout
    with srv.client() as c:
        (entry,) = c.d1.list_collections(filter={"name": "c"})
        assert entry["info"]["uuid"] == before and entry["options"] == {}
        assert c.d1.c.count_documents({}) == 3


def _entry(op: str, ns: str, o: dict, i: int, **extra) -> dict:
    return {"ts": bson.Timestamp(1_700_000_000, i), "t": bson.Int64(1), "v": bson.Int64(2), "op": op, "ns": ns,
            "o": o, "wall": T0, **extra}


def test_oplog_replay_of_an_oplog_written_here(start_server, tmp_path):
    srv = start_server()
    ui = Binary(uuid.uuid4().bytes, 4)
    entries = [
        _entry("c", "o1.$cmd", {"create": "c", "idIndex": {"v": 2, "key": {"_id": 1}, "name": "_id_"}}, 1, ui=ui),
        _entry("i", "o1.c", {"_id": 1, "a": 1, "arr": [1, 2, 3]}, 2, ui=ui),
        _entry("i", "o1.c", {"_id": 2, "a": 2}, 3, ui=ui),
        _entry("i", "o1.c", {"_id": 3, "a": 3}, 4, ui=ui),
        _entry("u", "o1.c", {"$v": 2, "diff": {"u": {"a": 10}, "i": {"b": "x"}, "sarr": {"a": True, "l": 2}}}, 5,
               o2={"_id": 1}, ui=ui),
        _entry("u", "o1.c", {"_id": 2, "z": True}, 6, o2={"_id": 2}, ui=ui),
        _entry("d", "o1.c", {"_id": 3}, 7, ui=ui),
        _entry("n", "", {"msg": "periodic noop"}, 8),
        _entry("c", "o1.$cmd", {"createIndexes": "c", "v": 2, "key": {"a": 1}, "name": "a_1"}, 9, ui=ui),
        _entry("c", "o1.$cmd", {"collMod": "c", "validationLevel": "moderate"}, 10, ui=ui),
        _entry("c", "o1.$cmd", {"create": "gone"}, 11),
        _entry("c", "o1.$cmd", {"drop": "gone"}, 12),
    ]
    dump = tmp_path / "dump"
    dump.mkdir()
    (dump / "oplog.bson").write_bytes(b"".join(bson.encode(e) for e in entries))
    done = run_tool("mongorestore", *uri_args(srv.port), "--oplogReplay", "--dir", str(dump))
    assert done.returncode == 0, done.stdout
    assert "applied 11 oplog entries" in done.stdout  # the no-op is not counted
    with srv.client() as c:
        assert list(c.o1.c.find(sort=[("_id", 1)])) == [{"_id": 1, "a": 10, "arr": [1, 2], "b": "x"},
                                                       {"_id": 2, "z": True}]
        assert "a_1" in c.o1.c.index_information()
        (entry,) = c.o1.list_collections(filter={"name": "c"})
        assert entry["options"] == {"validationLevel": "moderate"}
        assert c.o1.list_collection_names() == ["c"]


def test_oplog_replay_and_preserve_uuid_as_root_under_auth(start_server, tmp_path):
    srv = start_server(args=("--auth",))
    with srv.client() as local:
        local.admin.command("createUser", "root", pwd="rootpw", roles=["root"])
    with srv.client(username="root", password="rootpw") as c:
        c.d1.c.insert_many([{"_id": i} for i in range(3)])
        (entry,) = c.d1.list_collections(filter={"name": "c"})
        before = entry["info"]["uuid"]
    auth = uri_args(srv.port, "root", "rootpw")
    dump = tmp_path / "dump"
    assert run_tool("mongodump", *auth, "-d", "d1", "-o", str(dump)).returncode == 0
    (dump / "oplog.bson").write_bytes(b"".join(bson.encode(e) for e in [
        _entry("i", "d1.c", {"_id": 10}, 1, ui=Binary(bytes(before), 4)),
        _entry("u", "d1.c", {"$v": 2, "diff": {"i": {"x": 1}}}, 2, o2={"_id": 0}, ui=Binary(bytes(before), 4)),
    ]))
    done = run_tool("mongorestore", *auth, "--drop", "--preserveUUID", "--oplogReplay", "--dir", str(dump))
    assert done.returncode == 0, done.stdout
    with srv.client(username="root", password="rootpw") as c:
        (entry,) = c.d1.list_collections(filter={"name": "c"})
        assert entry["info"]["uuid"] == before
        assert list(c.d1.c.find(sort=[("_id", 1)])) == [{"_id": 0, "x": 1}, {"_id": 1}, {"_id": 2}, {"_id": 10}]


def test_a_data_directory_with_users_but_no_auth_schema_document_gets_one_at_start_up(start_server, tmp_path):
    srv = start_server()
    with srv.client() as c:
        c.d1.command("createUser", "u", pwd="p", roles=[])
        c.admin.system.version.delete_many({})  # as a data directory written before the document existed
    srv.restart()
    with srv.client() as c:
        assert list(c.admin.system.version.find()) == [{"_id": "authSchema", "currentVersion": 5}]
    out = tmp_path / "dump"
    done = run_tool("mongodump", *uri_args(srv.port), "-d", "d1", "--dumpDbUsersAndRoles", "-o", str(out))
    assert done.returncode == 0, done.stdout
