"""Each built-in role: one action it allows and one it refuses (mongod 7.0's role -> action table),
including acting on a database the role does not cover."""

from __future__ import annotations

import uuid

import pymongo
import pytest
from pymongo.errors import OperationFailure


def _setup(root):
    root.roles_a.c.insert_one({"a": 1})
    root.roles_b.c.insert_one({"b": 1})


ROLE_CASES = {
    # role: (granted on, allowed, refused)
    "read": ("roles_a", lambda c: c.roles_a.c.find_one(), lambda c: c.roles_a.c.insert_one({})),
    "readWrite": ("roles_a", lambda c: c.roles_a.c.insert_one({}), lambda c: c.roles_b.c.insert_one({})),
    "dbAdmin": ("roles_a", lambda c: c.roles_a.command("collStats", "c"), lambda c: c.roles_a.c.find_one()),
    "dbOwner": ("roles_a", lambda c: c.roles_a.command("createUser", uuid.uuid4().hex, pwd="x", roles=[]),
                lambda c: c.roles_b.c.find_one()),
    "userAdmin": ("roles_a", lambda c: c.roles_a.command("usersInfo", 1), lambda c: c.roles_a.c.find_one()),
    "clusterMonitor": ("admin", lambda c: c.admin.command("serverStatus"), lambda c: c.roles_a.c.find_one()),
    "readAnyDatabase": ("admin", lambda c: (c.roles_b.c.find_one(), c.list_database_names()),
                        lambda c: c.roles_b.c.insert_one({})),
    "readWriteAnyDatabase": ("admin", lambda c: c.roles_b.c.insert_one({}),
                             lambda c: c.admin.command("serverStatus")),
    "userAdminAnyDatabase": ("admin", lambda c: c.roles_b.command("usersInfo", 1),
                             lambda c: c.roles_b.c.find_one()),
    "dbAdminAnyDatabase": ("admin", lambda c: c.roles_b.command("dbStats"), lambda c: c.roles_b.c.find_one()),
    "root": ("admin", lambda c: c.admin.command("getParameter", "*"), None),
}


@pytest.mark.parametrize("role", sorted(ROLE_CASES))
def test_builtin_role_allows_and_refuses(auth_server, root_client, role):
    _setup(root_client)
    granted_on, allowed, refused = ROLE_CASES[role]
    user = f"{role}_{uuid.uuid4().hex[:6]}"
    root_client[granted_on].command("createUser", user, pwd="pw", roles=[role])
    uri = (f"mongodb://{user}:pw@127.0.0.1:{auth_server.port}/?directConnection=true"
           f"&authSource={granted_on}")
    with pymongo.MongoClient(uri) as conn:
        allowed(conn)
        if refused is None:  # root: everything, except another user's cursor
            cursor_id = root_client.roles_a.command("find", "c", batchSize=0)["cursor"]["id"]
            with pytest.raises(OperationFailure) as failure:
                conn.roles_a.command("getMore", cursor_id, collection="c")
            assert failure.value.code == 13
            assert failure.value.details["errmsg"] == f"cursor id {cursor_id} was not created by the authenticated user"
            return
        with pytest.raises(OperationFailure) as failure:
            refused(conn)
        assert failure.value.code == 13
        assert failure.value.details["errmsg"].startswith("not authorized on ")


@pytest.mark.commands("rolesInfo", "createUser")
def test_the_internal_system_role_exists_on_admin_and_grants_everything(auth_server, root_client):
    """mongod's __system: an admin-only built-in role holding every action on every resource (system
    collections included), named by rolesInfo but not listed with showBuiltinRoles (Tidemark had no
    such role: 31 RoleNotFound)."""
    shown = root_client.admin.command("rolesInfo", "__system", showPrivileges=True)["roles"]
    assert shown == [{"role": "__system", "db": "admin", "isBuiltin": True, "roles": [], "inheritedRoles": [],
                      "privileges": [{"resource": {"anyResource": True}, "actions": ["anyAction"]}],
                      "inheritedPrivileges": [{"resource": {"anyResource": True}, "actions": ["anyAction"]}]}]
    listed = root_client.admin.command("rolesInfo", 1, showBuiltinRoles=True)["roles"]
    assert "__system" not in {r["role"] for r in listed}
    with pytest.raises(OperationFailure) as failure:
        root_client.roles_a.command("createUser", uuid.uuid4().hex, pwd="pw", roles=["__system"])
    assert (failure.value.code, failure.value.details["errmsg"]) == (31, "Could not find role: __system@roles_a")
    user = f"sys_{uuid.uuid4().hex[:6]}"
    root_client.admin.command("createUser", user, pwd="pw", roles=["__system"])
    try:
        with pymongo.MongoClient(f"mongodb://{user}:pw@127.0.0.1:{auth_server.port}/?directConnection=true") as conn:
            assert conn.admin["system.users"].find_one({"user": user})["db"] == "admin"
            conn.roles_sys.c.insert_one({})
            conn.roles_sys.command("create", "system.js")
            conn.admin.command("usersInfo", {"forAllDBs": True}, showCredentials=True)
            conn.admin.command("serverStatus")
    finally:
        root_client.admin.command("dropUser", user)
        root_client.drop_database("roles_sys")


def test_builtin_roles_exist_only_where_mongod_has_them(root_client):
    with pytest.raises(OperationFailure) as failure:
        root_client.roles_a.command("createUser", uuid.uuid4().hex, pwd="pw", roles=["root"])
    assert failure.value.code == 31  # root exists only on admin


def test_only_a_client_that_may_block_writes_renames_a_buckets_collection(auth_server, root_client):
    """mongod 7.0's validateNamespacesForRenameCollection: renaming ``system.buckets.<c>`` (to another
    buckets name) needs setUserWriteBlockMode on the cluster (restore, root...); readWriteAnyDatabase,
    which has every namespace privilege the rename asks, gets 20 IllegalOperation."""
    db = root_client[f"rb_{uuid.uuid4().hex[:6]}"]
    db.create_collection("c", timeseries={"timeField": "t"})
    user = f"rw_{uuid.uuid4().hex[:6]}"
    root_client.admin.command("createUser", user, pwd="pw", roles=["readWriteAnyDatabase", "dbAdminAnyDatabase"])
    uri = f"mongodb://{user}:pw@127.0.0.1:{auth_server.port}/?directConnection=true&authSource=admin"
    with pymongo.MongoClient(uri) as conn:
        with pytest.raises(OperationFailure) as failure:
            conn.admin.command("renameCollection", f"{db.name}.system.buckets.c", to=f"{db.name}.system.buckets.d")
        assert (failure.value.code, failure.value.details["errmsg"]) == (
            20, "Renaming system.buckets collections is not allowed")
    root_client.admin.command("renameCollection", f"{db.name}.system.buckets.c", to=f"{db.name}.system.buckets.d")
    assert "system.buckets.d" in db.list_collection_names()
    root_client.drop_database(db.name)
