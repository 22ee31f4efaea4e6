"""_mergeAuthzCollections as mongod 7.0 runs it for mongorestore: temporary users/roles collections merged
into admin.system.users/roles, ``db`` and ``drop`` semantics, errors and privileges."""

import pytest
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("_mergeAuthzCollections", "createUser", "createRole", "usersInfo")


def _user(name: str, db: str, roles=()) -> dict:
    return {"_id": f"{db}.{name}", "user": name, "db": db, "credentials": {}, "roles": list(roles)}


def _names(client) -> set:
    return {(u["user"], u["db"]) for u in client.admin.command("usersInfo", {"forAllDBs": True})["users"]}


@pytest.fixture
def fresh(start_server):
    srv = start_server()
    with srv.client() as c:
        yield c


@pytest.mark.slow
def test_merge_adds_users_and_roles_and_keeps_existing_ones(fresh):
    fresh.a.command("createUser", "keep", pwd="p", roles=[])
    fresh.admin.tempusers.insert_many([_user("keep", "a", [{"role": "read", "db": "a"}]), _user("new", "a"),
                                       _user("other", "b")])
    fresh.admin.temproles.insert_one({"_id": "a.r", "role": "r", "db": "a", "privileges": [], "roles": []})
    assert fresh.admin.command("_mergeAuthzCollections", 1, tempUsersCollection="admin.tempusers",
                               tempRolesCollection="admin.temproles", drop=False, db="") == {"ok": 1.0}
    assert _names(fresh) == {("keep", "a"), ("new", "a"), ("other", "b")}
    (keep,) = fresh.a.command("usersInfo", "keep")["users"]
    assert keep["roles"] == []  # without drop an existing user wins
    assert [r["role"] for r in fresh.a.command("rolesInfo", 1)["roles"]] == ["r"]


@pytest.mark.slow
def test_merge_with_drop_replaces_the_users_of_db_only(fresh):
    fresh.a.command("createUser", "old", pwd="p", roles=[])
    fresh.a.command("createUser", "keep", pwd="p", roles=[])
    fresh.b.command("createUser", "untouched", pwd="p", roles=[])
    fresh.admin.tempusers.insert_many([_user("keep", "a", [{"role": "read", "db": "a"}]), _user("new", "a"),
                                       _user("ignored", "b")])
    fresh.admin.command("_mergeAuthzCollections", 1, tempUsersCollection="admin.tempusers", drop=True, db="a")
    assert _names(fresh) == {("keep", "a"), ("new", "a"), ("untouched", "b")}
    (keep,) = fresh.a.command("usersInfo", "keep")["users"]
    assert keep["roles"] == [{"role": "read", "db": "a"}]


def test_merge_arguments_are_checked(fresh):
    with pytest.raises(OperationFailure) as info:
        fresh.admin.command("_mergeAuthzCollections", 1, db="")
    assert info.value.code == 2
    assert info.value.details["errmsg"] == ('Must provide at least one of "tempUsersCollection" and '
                                            '"tempRolescollection"')
    with pytest.raises(OperationFailure) as info:
        fresh.admin.command("_mergeAuthzCollections", 1, tempUsersCollection="admin.tempusers")
    assert info.value.code == 40414
    with pytest.raises(OperationFailure) as info:
        fresh.a.command("_mergeAuthzCollections", 1, tempUsersCollection="admin.tempusers", db="")
    assert info.value.code == 13


def test_merge_under_auth_needs_user_administration_everywhere(auth_server, root_client):
    root_client.admin.tempusers.drop()
    root_client.merge_db.command("createUser", "admin1", pwd="pw", roles=["userAdmin"])
    try:
        with auth_server.client(username="admin1", password="pw", authSource="merge_db") as limited:
            with pytest.raises(OperationFailure) as info:
                limited.admin.command("_mergeAuthzCollections", 1, tempUsersCollection="admin.tempusers", db="")
        assert info.value.code == 13
        assert info.value.details["errmsg"] == ("Not authorized to update user data using _mergeAuthzCollections "
                                                "a command")
        root_client.admin.tempusers.insert_one(_user("merged", "merge_db"))
        root_client.admin.command("_mergeAuthzCollections", 1, tempUsersCollection="admin.tempusers", db="merge_db")
        assert ("merged", "merge_db") in _names(root_client)
    finally:
        root_client.merge_db.command("dropAllUsersFromDatabase")
        root_client.admin.tempusers.drop()
