"""User and role management input that mongod 7.0 refuses, with its codes and messages.

mongod (user_management_commands.cpp typedRun of each command, privilege.cpp
resolvePrivilegeWithTenant, checkOkayToGrantPrivilegesToRole / checkOkayToGrantRolesToRole):
- grantRolesToUser, revokeRolesFromUser, grantRolesToRole, revokeRolesFromRole with ``roles: []`` and
  grantPrivilegesToRole, revokePrivilegesFromRole with ``privileges: []``: 2 '<command> command requires
  a non-empty "roles" array' (or "privileges");
- revokeRolesFromUser of a role that does not exist: 31 "Could not find role: <role>@<db>" (rolesExist);
- a privilege with ``actions: []``: 2 "'actions' field of privilege resource must not be empty"; a
  privilege naming an invalid collection (leading '.', a '$' or a NUL): 2 "'<name>' is not a valid
  collection name";
- a role outside admin holding a privilege on anything but its own database or a namespace of it
  (system_buckets patterns included), or inheriting a role of another database: 49
  InvalidRoleModification "Roles on the '<db>' database cannot be granted privileges that target other
  databases or the cluster" / "... cannot be granted roles from other databases".

Tidemark accepted the empty arrays, the unknown role to revoke, the empty actions and the invalid names,
answered 2 BadValue (another message for roles) to the other-database cases, and let a role hold a
system_buckets privilege of its database.
"""

from __future__ import annotations

import uuid

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

DB = "umc_validation"


def _fails(db, command: dict) -> tuple[int, str]:
    with pytest.raises(OperationFailure) as failure:
        db.command(command)
    return failure.value.code, failure.value.details["errmsg"]


@pytest.fixture
def names(root_client):
    db = root_client[DB]
    user, role = f"u_{uuid.uuid4().hex[:6]}", f"r_{uuid.uuid4().hex[:6]}"
    db.command("createUser", user, pwd="pw", roles=["read"])
    db.command("createRole", role, roles=[], privileges=[])
    yield db, user, role
    db.command("dropAllUsersFromDatabase")
    db.command("dropAllRolesFromDatabase")


@pytest.mark.commands("grantRolesToUser", "revokeRolesFromUser", "grantRolesToRole", "revokeRolesFromRole",
                      "grantPrivilegesToRole", "revokePrivilegesFromRole")
def test_grant_and_revoke_refuse_empty_arrays(names):
    db, user, role = names
    for command, target, field in (("grantRolesToUser", user, "roles"), ("revokeRolesFromUser", user, "roles"),
                                   ("grantRolesToRole", role, "roles"), ("revokeRolesFromRole", role, "roles"),
                                   ("grantPrivilegesToRole", role, "privileges"),
                                   ("revokePrivilegesFromRole", role, "privileges")):
        assert _fails(db, {command: target, field: []}) == (2, f'{command} command requires a non-empty "{field}" array')
    assert db.command("usersInfo", user)["users"][0]["roles"] == [{"role": "read", "db": DB}]


@pytest.mark.commands("revokeRolesFromUser", "grantRolesToUser")
def test_revoking_a_role_that_does_not_exist_is_role_not_found(names):
    db, user, _ = names
    for command in ("revokeRolesFromUser", "grantRolesToUser"):
        assert _fails(db, {command: user, "roles": ["read", "fakeRole"]}) == (31, f"Could not find role: fakeRole@{DB}")
        assert _fails(db, {command: user, "roles": [{"role": "readAnyDatabase", "db": DB}]}) == \
            (31, f"Could not find role: readAnyDatabase@{DB}")  # an admin-only built-in role
    assert db.command("usersInfo", user)["users"][0]["roles"] == [{"role": "read", "db": DB}]
    db.command("revokeRolesFromUser", user, roles=["readWrite"])  # an existing role not held: ok
    db.command("revokeRolesFromUser", user, roles=["read"])
    assert db.command("usersInfo", user)["users"][0]["roles"] == []


@pytest.mark.commands("createRole", "updateRole", "grantPrivilegesToRole", "revokePrivilegesFromRole")
def test_a_privilege_needs_actions(names):
    db, _, role = names
    privilege = {"resource": {"db": DB, "collection": "c"}, "actions": []}
    expected = (2, "'actions' field of privilege resource must not be empty")
    assert _fails(db, {"createRole": "other", "roles": [], "privileges": [privilege]}) == expected
    for command in ("updateRole", "grantPrivilegesToRole", "revokePrivilegesFromRole"):
        assert _fails(db, {command: role, "privileges": [privilege]}) == expected


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(collection=st.text(alphabet=st.sampled_from(["a", "b", ".", "$", "\0", "_", "é"]), min_size=1, max_size=6),
       command=st.sampled_from(["createRole", "grantPrivilegesToRole", "revokePrivilegesFromRole", "updateRole"]),
       any_db=st.booleans())
@example(collection="$cmd", command="createRole", any_db=False)
@example(collection="$$$$", command="grantPrivilegesToRole", any_db=False)
@example(collection="system.buckets.x", command="createRole", any_db=True)
@pytest.mark.commands("createRole", "updateRole", "grantPrivilegesToRole", "revokePrivilegesFromRole")
def test_a_privilege_names_a_valid_collection(root_client, collection, command, any_db):
    admin = root_client.admin
    role = f"valid_{uuid.uuid4().hex[:6]}"
    valid = not collection.startswith(".") and "$" not in collection and "\0" not in collection
    privilege = {"resource": {"db": "" if any_db else DB, "collection": collection}, "actions": ["find"]}
    if command != "createRole":
        admin.command("createRole", role, roles=[], privileges=[])
    body = {"createRole": role, "roles": []} if command == "createRole" else {command: role}
    try:
        if valid:
            admin.command({**body, "privileges": [privilege]})
            if command != "revokePrivilegesFromRole":
                shown = admin.command("rolesInfo", role, showPrivileges=True)["roles"][0]["privileges"]
                assert shown == [privilege]
        else:
            assert _fails(admin, {**body, "privileges": [privilege]}) == \
                (2, f"'{collection}' is not a valid collection name")
    finally:
        if command != "createRole" or valid:
            admin.command("dropRole", role)


@pytest.mark.commands("createRole", "updateRole", "grantPrivilegesToRole", "grantRolesToRole")
def test_a_role_outside_admin_holds_only_its_own_database(names):
    db, _, role = names
    privileges_message = (49, f"Roles on the '{DB}' database cannot be granted privileges that target other "
                              "databases or the cluster")
    for resource in ({"db": "other", "collection": ""}, {"db": "other", "collection": "c"}, {"db": "", "collection": "c"},
                     {"db": "", "collection": ""}, {"cluster": True}, {"anyResource": True},
                     {"db": DB, "system_buckets": "c"}, {"db": DB, "system_buckets": ""},
                     {"db": "", "system_buckets": ""}):
        privilege = {"resource": resource, "actions": ["find"]}
        assert _fails(db, {"createRole": "other", "roles": [], "privileges": [privilege]}) == privileges_message
        for command in ("updateRole", "grantPrivilegesToRole"):
            assert _fails(db, {command: role, "privileges": [privilege]}) == privileges_message
    for own in ({"db": DB, "collection": ""}, {"db": DB, "collection": "c"}):
        db.command("grantPrivilegesToRole", role, privileges=[{"resource": own, "actions": ["find"]}])
    roles_message = (49, f"Roles on the '{DB}' database cannot be granted roles from other databases")
    for roles in ([{"role": "read", "db": "admin"}], [{"role": "read", "db": "other"}]):
        assert _fails(db, {"createRole": "other", "roles": roles, "privileges": []}) == roles_message
        for command in ("updateRole", "grantRolesToRole"):
            assert _fails(db, {command: role, "roles": roles}) == roles_message
    root_client_admin_role = f"adm_{uuid.uuid4().hex[:6]}"
    db.client.admin.command("createRole", root_client_admin_role, roles=[{"role": "read", "db": DB}],
                            privileges=[{"resource": {"db": DB, "system_buckets": ""}, "actions": ["find"]}])
    db.client.admin.command("dropRole", root_client_admin_role)
