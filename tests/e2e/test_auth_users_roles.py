"""User and role management as mongod answers it: createUser, updateUser, dropUser,
dropAllUsersFromDatabase, usersInfo, grantRolesToUser, revokeRolesFromUser, createRole, updateRole,
dropRole, dropAllRolesFromDatabase, rolesInfo, grant/revokeRolesToRole, grant/revokePrivilegesToRole."""

from __future__ import annotations

import base64
import uuid

import pymongo
import pytest
from pymongo.errors import OperationFailure


def _name(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


def _fails(db, command, code, *args, **kwargs) -> str:
    with pytest.raises(OperationFailure) as failure:
        db.command(command, *args, **kwargs)
    assert failure.value.code == code, failure.value.details
    return failure.value.details["errmsg"]


def _connect(server, user, password, source="admin"):
    return pymongo.MongoClient(
        f"mongodb://{user}:{password}@127.0.0.1:{server.port}/?directConnection=true&authSource={source}",
        serverSelectionTimeoutMS=10000)


@pytest.mark.commands("createUser", "usersInfo")
def test_create_user_stores_salted_credentials_not_the_password(root_client):
    user = _name("alice")
    assert root_client.admin.command("createUser", user, pwd="pa55word", roles=["readAnyDatabase"],
                                     customData={"team": "ops"}) == {"ok": 1.0}
    doc = root_client.admin["system.users"].find_one({"_id": f"admin.{user}"})
    assert doc["user"] == user and doc["db"] == "admin" and doc["userId"].subtype == 4
    assert doc["roles"] == [{"role": "readAnyDatabase", "db": "admin"}]
    sha1, sha256 = doc["credentials"]["SCRAM-SHA-1"], doc["credentials"]["SCRAM-SHA-256"]
    assert sha1["iterationCount"] == 10000 and sha256["iterationCount"] == 15000
    assert len(base64.b64decode(sha1["salt"])) == 16 and len(base64.b64decode(sha256["salt"])) == 28
    assert set(sha256) == {"iterationCount", "salt", "storedKey", "serverKey"}
    assert "pa55word" not in repr(doc)
    info = root_client.admin.command("usersInfo", user)["users"]
    assert info == [{"_id": f"admin.{user}", "userId": doc["userId"], "user": user, "db": "admin",
                     "roles": [{"role": "readAnyDatabase", "db": "admin"}], "customData": {"team": "ops"},
                     "mechanisms": ["SCRAM-SHA-1", "SCRAM-SHA-256"]}]
    assert "credentials" not in info[0]
    shown = root_client.admin.command("usersInfo", user, showCredentials=True)["users"][0]
    assert shown["credentials"] == doc["credentials"]


@pytest.mark.commands("createUser")
def test_create_user_refuses_what_mongod_refuses(root_client):
    db = root_client.usersdb
    user = _name("bob")
    db.command("createUser", user, pwd="pw", roles=[])
    assert _fails(db, "createUser", 51003, user, pwd="pw", roles=[]) == f'User "{user}@usersdb" already exists'
    assert "roles" in _fails(db, "createUser", 40414, _name("u"), pwd="pw")
    _fails(db, "createUser", 2, _name("u"), roles=[])  # no pwd
    assert _fails(db, "createUser", 31, _name("u"), pwd="pw", roles=["nosuchrole"]) == \
        "Could not find role: nosuchrole@usersdb"
    assert "undigested" in _fails(db, "createUser", 2, _name("u"), pwd="pw", roles=[], digestPassword=False)
    _fails(db, "createUser", 2, _name("u"), pwd="pw", roles=[], mechanisms=["PLAIN"])
    _fails(db, "createUser", 40415, _name("u"), pwd="pw", roles=[], bogus=1)
    _fails(root_client.local, "createUser", 2, _name("u"), pwd="pw", roles=[])
    _fails(db, "createUser", 14, 42, pwd="pw", roles=[])


@pytest.mark.commands("usersInfo")
def test_users_info_forms(root_client):
    db = root_client.infodb
    a, b = _name("a"), _name("b")
    db.command("createUser", a, pwd="pw", roles=["read"])
    db.command("createUser", b, pwd="pw", roles=[{"role": "readWrite", "db": "infodb"}])
    every = [u["user"] for u in db.command("usersInfo", 1)["users"]]
    assert a in every and b in every and all(u["db"] == "infodb" for u in db.command("usersInfo", 1)["users"])
    assert [u["user"] for u in db.command("usersInfo", {"user": a, "db": "infodb"})["users"]] == [a]
    assert [u["user"] for u in db.command("usersInfo", [a, {"user": b, "db": "infodb"}])["users"]] == [a, b]
    everywhere = root_client.admin.command("usersInfo", {"forAllDBs": True})["users"]
    assert {("infodb", a), ("admin", "root")} <= {(u["db"], u["user"]) for u in everywhere}
    assert db.command("usersInfo", "nobody")["users"] == []
    filtered = db.command("usersInfo", 1, filter={"roles.role": "readWrite"})["users"]
    assert [u["user"] for u in filtered] == [b]
    detail = db.command("usersInfo", b, showPrivileges=True)["users"][0]
    assert detail["inheritedRoles"] == [{"role": "readWrite", "db": "infodb"}]
    assert any(p["resource"] == {"db": "infodb", "collection": ""} and "insert" in p["actions"]
               for p in detail["inheritedPrivileges"])
    _fails(db, "usersInfo", 2, 1, showPrivileges=True)


@pytest.mark.commands("updateUser")
def test_update_user_changes_the_password_roles_and_custom_data(auth_server, root_client):
    db = root_client.admin
    user = _name("carol")
    db.command("createUser", user, pwd="old", roles=[])
    db.command("updateUser", user, pwd="new", customData={"k": 1}, roles=[{"role": "read", "db": "upd"}])
    with _connect(auth_server, user, "old") as stale:
        with pytest.raises(OperationFailure) as failure:
            stale.admin.command("ping")
        assert failure.value.code == 18
    with _connect(auth_server, user, "new") as fresh:
        fresh.upd.c.find_one()
    info = db.command("usersInfo", user)["users"][0]
    assert info["customData"] == {"k": 1} and info["roles"] == [{"role": "read", "db": "upd"}]
    db.command("updateUser", user, mechanisms=["SCRAM-SHA-256"])
    assert db.command("usersInfo", user)["users"][0]["mechanisms"] == ["SCRAM-SHA-256"]
    _fails(db, "updateUser", 2, user, mechanisms=["SCRAM-SHA-1"])  # not a subset of what is left
    _fails(db, "updateUser", 2, user)
    assert _fails(db, "updateUser", 11, "nobody", pwd="x") == "User nobody@admin not found"


@pytest.mark.commands("grantRolesToUser", "revokeRolesFromUser")
def test_granted_and_revoked_roles_apply_to_open_connections(auth_server, root_client):
    user = _name("dave")
    root_client.admin.command("createUser", user, pwd="pw", roles=[])
    root_client.grantdb.c.insert_one({"x": 1})
    with _connect(auth_server, user, "pw") as conn:
        with pytest.raises(OperationFailure) as failure:
            conn.grantdb.c.find_one()
        assert failure.value.code == 13
        root_client.admin.command("grantRolesToUser", user, roles=[{"role": "read", "db": "grantdb"}])
        assert conn.grantdb.c.find_one({}, {"_id": 0}) == {"x": 1}
        root_client.admin.command("revokeRolesFromUser", user, roles=[{"role": "read", "db": "grantdb"}])
        with pytest.raises(OperationFailure) as failure:
            conn.grantdb.c.find_one()
        assert failure.value.code == 13
    _fails(root_client.admin, "grantRolesToUser", 11, "nobody", roles=["read"])
    _fails(root_client.admin, "grantRolesToUser", 31, user, roles=["nosuchrole"])


@pytest.mark.commands("dropUser", "dropAllUsersFromDatabase")
def test_drop_user_and_drop_all_users(auth_server, root_client):
    db = root_client.dropdb
    doomed = _name("erin")
    db.command("createUser", doomed, pwd="pw", roles=["read"])
    with _connect(auth_server, doomed, "pw", source="dropdb") as conn:
        conn.dropdb.c.find_one()
        assert db.command("dropUser", doomed) == {"ok": 1.0}
        with pytest.raises(OperationFailure) as failure:  # a dropped user keeps no privilege
            conn.dropdb.c.find_one()
        assert failure.value.code == 13
    assert _fails(db, "dropUser", 11, doomed) == f"User '{doomed}@dropdb' not found"
    for _ in range(3):
        db.command("createUser", _name("f"), pwd="pw", roles=[])
    assert db.command("dropAllUsersFromDatabase") == {"n": 3, "ok": 1.0}
    assert db.command("usersInfo", 1)["users"] == []


@pytest.mark.commands("createRole", "rolesInfo", "grantPrivilegesToRole", "revokePrivilegesFromRole")
def test_a_user_defined_role_grants_exactly_its_privileges(auth_server, root_client):
    db = root_client.roledb
    role, user = _name("reporter"), _name("gina")
    db.command("createRole", role, privileges=[
        {"resource": {"db": "roledb", "collection": "reports"}, "actions": ["find"]}], roles=[])
    db.command("createUser", user, pwd="pw", roles=[role])
    db.reports.insert_one({"r": 1})
    db.secrets.insert_one({"s": 1})
    with _connect(auth_server, user, "pw", source="roledb") as conn:
        assert conn.roledb.reports.find_one({}, {"_id": 0}) == {"r": 1}
        for attempt in (lambda: conn.roledb.secrets.find_one(), lambda: conn.roledb.reports.insert_one({})):
            with pytest.raises(OperationFailure) as failure:
                attempt()
            assert failure.value.code == 13
        db.command("grantPrivilegesToRole", role, privileges=[
            {"resource": {"db": "roledb", "collection": "reports"}, "actions": ["insert"]}])
        conn.roledb.reports.insert_one({"r": 2})
        db.command("revokePrivilegesFromRole", role, privileges=[
            {"resource": {"db": "roledb", "collection": "reports"}, "actions": ["insert"]}])
        with pytest.raises(OperationFailure):
            conn.roledb.reports.insert_one({"r": 3})
        assert conn.roledb.command("listCollections", nameOnly=True, authorizedCollections=True)[
            "cursor"]["firstBatch"] == [{"name": "reports", "type": "collection"}]
    info = db.command("rolesInfo", role, showPrivileges=True)["roles"][0]
    assert (info["role"], info["db"], info["isBuiltin"]) == (role, "roledb", False)
    assert info["privileges"] == [{"resource": {"db": "roledb", "collection": "reports"}, "actions": ["find"]}]


@pytest.mark.commands("createRole", "rolesInfo")
def test_create_role_refuses_what_mongod_refuses(root_client):
    db = root_client.roledb2
    role = _name("r")
    db.command("createRole", role, privileges=[], roles=["read"])
    assert _fails(db, "createRole", 51002, role, privileges=[], roles=[]) == f'Role "{role}@roledb2" already exists'
    _fails(db, "createRole", 2, "read", privileges=[], roles=[])
    # mongod's checkOkayToGrantPrivilegesToRole / checkOkayToGrantRolesToRole: 49 InvalidRoleModification
    _fails(db, "createRole", 49, _name("r"), privileges=[{"resource": {"cluster": True}, "actions": ["inprog"]}],
           roles=[])
    _fails(db, "createRole", 49, _name("r"), privileges=[], roles=[{"role": "read", "db": "other"}])
    _fails(db, "createRole", 2, _name("r"), privileges=[
        {"resource": {"db": "roledb2", "collection": ""}, "actions": ["fly"]}], roles=[])
    _fails(db, "createRole", 9, _name("r"), privileges=[{"resource": {"db": "roledb2"}, "actions": []}], roles=[])
    _fails(db, "createRole", 40414, _name("r"), privileges=[])
    builtins = db.command("rolesInfo", 1, showBuiltinRoles=True)["roles"]
    names = {r["role"] for r in builtins}
    assert {"read", "readWrite", "dbAdmin", "dbOwner", "userAdmin", role} <= names and "root" not in names
    assert {r["role"] for r in root_client.admin.command("rolesInfo", 1, showBuiltinRoles=True)["roles"]} >= {
        "root", "clusterMonitor", "readAnyDatabase", "readWriteAnyDatabase", "userAdminAnyDatabase",
        "dbAdminAnyDatabase"}
    read = db.command("rolesInfo", "read")["roles"]
    assert read == [{"role": "read", "db": "roledb2", "isBuiltin": True, "roles": [], "inheritedRoles": []}]


@pytest.mark.commands("grantRolesToRole", "revokeRolesFromRole", "updateRole")
def test_role_inheritance_and_cycles(root_client):
    db = root_client.admin
    a, b = _name("a"), _name("b")
    db.command("createRole", a, privileges=[], roles=[])
    db.command("createRole", b, privileges=[], roles=[a])
    assert db.command("rolesInfo", b)["roles"][0]["inheritedRoles"] == [{"role": a, "db": "admin"}]
    msg = _fails(db, "grantRolesToRole", 5, a, roles=[b])
    assert msg.startswith("Cycle in dependency graph")
    db.command("grantRolesToRole", a, roles=[{"role": "read", "db": "x1"}])
    assert {"role": "read", "db": "x1"} in db.command("rolesInfo", b)["roles"][0]["inheritedRoles"]
    db.command("revokeRolesFromRole", a, roles=[{"role": "read", "db": "x1"}])
    assert db.command("rolesInfo", a)["roles"][0]["roles"] == []
    db.command("updateRole", a, privileges=[{"resource": {"cluster": True}, "actions": ["serverStatus"]}])
    info = db.command("rolesInfo", b, showPrivileges=True)["roles"][0]
    assert info["inheritedPrivileges"] == [{"resource": {"cluster": True}, "actions": ["serverStatus"]}]
    _fails(db, "updateRole", 31, "nosuchrole", roles=[])
    _fails(db, "updateRole", 49, "root", roles=[])


@pytest.mark.commands("dropRole", "dropAllRolesFromDatabase")
def test_dropping_roles_removes_their_grants(root_client):
    db = root_client.droproles
    role, user = _name("r"), _name("u")
    db.command("createRole", role, privileges=[], roles=["read"])
    db.command("createUser", user, pwd="pw", roles=[role, "readWrite"])
    assert db.command("dropRole", role) == {"ok": 1.0}
    assert db.command("usersInfo", user)["users"][0]["roles"] == [{"role": "readWrite", "db": "droproles"}]
    _fails(db, "dropRole", 31, role)
    _fails(db, "dropRole", 49, "read")
    for _ in range(2):
        db.command("createRole", _name("r"), privileges=[], roles=[])
    assert db.command("dropAllRolesFromDatabase") == {"n": 2, "ok": 1.0}
    assert db.command("rolesInfo", 1)["roles"] == []
