"""The privileges user and role management commands need, as mongod 7.0 asks them.

mongod (user_management_commands_common.cpp, checkAuthForTypedCommand of each command):
- createUser, updateUser, createRole and updateRole carrying ``authenticationRestrictions`` (an empty
  array too) need ``setAuthenticationRestriction`` on the command's database
  (checkAuthorizedToSetRestrictions);
- updateRole always, and updateUser when it sets ``roles``, need ``revokeRole`` on every normal
  resource ("updateRole command required the ability to revoke any role in the system"), plus grantRole
  on the databases of the roles and privileges they grant;
- a privilege on a database or an exact namespace is granted with grantRole on that database, any other
  resource (cluster, any database, system_buckets patterns) with grantRole on admin
  (checkAuthorizedToGrantPrivilege).

Tidemark asked setAuthenticationRestriction of updateUser only, and grantRole + revokeRole on the
database for updateRole (revokeRole on the database for updateUser's roles): userAdmin of a database and
dbOwner could rewrite any role of it, and a user holding mongod's exact privileges was refused.
"""

from __future__ import annotations

import itertools
import uuid

import pytest
from harness.role_user import one_role_user
from pymongo.errors import OperationFailure

DB = "umc_privileges"


def _p(db: str, coll: str, *actions: str) -> dict:
    return {"resource": {"db": db, "collection": coll}, "actions": list(actions)}


@pytest.fixture(scope="module")
def actor(auth_server, root_client):
    """A user with one role whose privileges each check replaces; returns (set_privileges, conn)."""
    with one_role_user(auth_server, root_client, "umc") as (role, conn):

        def set_privileges(privileges: list[dict]) -> None:
            root_client.admin.command("updateRole", role, privileges=privileges)

        yield set_privileges, conn
    root_client.drop_database(DB)


def _authorized(db, command) -> bool:
    try:
        db.command(command)
        return True
    except OperationFailure as failure:
        assert failure.code == 13, failure.details
        assert failure.details["errmsg"].startswith(f"not authorized on {db.name} to execute command "), \
            failure.details
        return False


def _cleanup(root) -> None:
    root[DB].command("dropAllUsersFromDatabase")
    root[DB].command("dropAllRolesFromDatabase")


RESTRICTIONS = ([], [{"clientSource": ["127.0.0.1"]}])


@pytest.mark.commands("createUser", "updateUser", "createRole", "updateRole")
@pytest.mark.parametrize("restrictions", [None, *RESTRICTIONS], ids=["absent", "empty", "clientSource"])
def test_authentication_restrictions_need_set_authentication_restriction(root_client, actor, restrictions):
    set_privileges, conn = actor
    base = {
        "createUser": (_p(DB, "", "createUser"), [("createUser", "u"), ("pwd", "pw"), ("roles", [])]),
        "updateUser": ((), [("updateUser", "u")]),
        "createRole": (_p(DB, "", "createRole"), [("createRole", "r"), ("roles", []), ("privileges", [])]),
        "updateRole": (_p("", "", "revokeRole"), [("updateRole", "r")]),
    }
    for name, (needed, fields) in base.items():
        command = dict(fields)
        if restrictions is not None:
            command["authenticationRestrictions"] = restrictions
        elif name.startswith("update"):
            command["customData" if name == "updateUser" else "roles"] = {} if name == "updateUser" else []
        for with_needed, with_set in itertools.product((False, True), repeat=2):
            _cleanup(root_client)
            root_client[DB].command("createUser", "u", pwd="pw", roles=[])
            root_client[DB].command("createRole", "r", roles=[], privileges=[])
            if name in ("createUser", "createRole"):
                root_client[DB].command("dropUser" if name == "createUser" else "dropRole", command[name])
            privileges = [needed] if with_needed and needed else []
            if name == "updateUser" and restrictions is None:
                privileges.append(_p(DB, "", "changeCustomData"))
            if with_set:
                privileges.append(_p(DB, "", "setAuthenticationRestriction"))
            set_privileges(privileges)
            expected = (with_needed or not needed) and (with_set or restrictions is None)
            assert _authorized(conn[DB], command) == expected, (name, privileges, command)
    _cleanup(root_client)


@pytest.mark.commands("updateRole", "updateUser")
def test_update_role_and_user_roles_need_revoke_role_on_every_normal_resource(root_client, actor):
    set_privileges, conn = actor
    cases = [
        # (privileges, updateRole allowed, updateUser {roles} allowed)
        ([_p(DB, "", "grantRole", "revokeRole")], False, False),  # userAdmin / dbOwner of the database
        ([_p("", "", "revokeRole")], True, False),  # granting read@DB still needs grantRole on DB
        ([_p("", "", "revokeRole", "grantRole")], True, True),
        ([_p("", "", "revokeRole"), _p(DB, "", "grantRole")], True, True),
        ([{"resource": {"anyResource": True}, "actions": ["revokeRole", "grantRole"]}], True, True),
        ([_p(DB, "", "grantRole"), {"resource": {"cluster": True}, "actions": ["revokeRole"]}], False, False),
    ]
    for privileges, role_ok, user_ok in cases:
        _cleanup(root_client)
        root_client[DB].command("createUser", "u", pwd="pw", roles=[])
        root_client[DB].command("createRole", "r", roles=[], privileges=[])
        set_privileges(privileges)
        assert _authorized(conn[DB], {"updateRole": "r", "privileges": []}) == role_ok, privileges
        assert _authorized(conn[DB], {"updateUser": "u", "roles": ["read"]}) == user_ok, privileges
    _cleanup(root_client)


@pytest.mark.commands("updateRole", "grantPrivilegesToRole", "revokePrivilegesFromRole", "createRole")
def test_granting_a_privilege_needs_grant_role_on_its_database_or_on_admin(root_client, actor):
    set_privileges, conn = actor
    role = f"umc_granted_{uuid.uuid4().hex[:6]}"  # an admin role: it may hold any privilege
    resources = {
        "db": ({"db": DB, "collection": ""}, DB),
        "ns": ({"db": DB, "collection": "c"}, DB),
        "other db": ({"db": "umc_elsewhere", "collection": "c"}, "umc_elsewhere"),
        "any db": ({"db": "", "collection": "c"}, "admin"),
        "any normal": ({"db": "", "collection": ""}, "admin"),
        "cluster": ({"cluster": True}, "admin"),
        "any resource": ({"anyResource": True}, "admin"),
        "buckets": ({"db": DB, "system_buckets": "c"}, "admin"),
        "buckets in db": ({"db": DB, "system_buckets": ""}, "admin"),
    }
    for label, (resource, needs) in resources.items():
        privilege = [{"resource": resource, "actions": ["inprog" if "cluster" in resource else "find"]}]
        for holder in (DB, "admin", "umc_elsewhere"):
            ok = holder == needs
            root_client.admin.command("createRole", role, roles=[], privileges=[])
            set_privileges([_p(holder, "", "grantRole", "revokeRole")])
            assert _authorized(conn.admin, {"grantPrivilegesToRole": role, "privileges": privilege}) == ok, \
                (label, holder)
            if not ok:
                root_client.admin.command("grantPrivilegesToRole", role, privileges=privilege)
            assert _authorized(conn.admin, {"revokePrivilegesFromRole": role, "privileges": privilege}) == ok, \
                (label, holder)
            # updateRole: revokeRole on every normal resource, and grantRole where the privilege needs it
            set_privileges([_p(holder, "", "grantRole"), _p("", "", "revokeRole")])
            assert _authorized(conn.admin, {"updateRole": role, "privileges": privilege}) == ok, (label, holder)
            root_client.admin.command("dropRole", role)
            set_privileges([_p(holder, "", "grantRole"), _p("admin", "", "createRole")])
            assert _authorized(conn.admin, {"createRole": role, "roles": [], "privileges": privilege}) == ok, \
                (label, holder)
            if ok:
                root_client.admin.command("dropRole", role)
