"""usersInfo and rolesInfo answers shaped as mongod 7.0 shapes them.

mongod (user_management_commands.cpp CmdUMCTyped<UsersInfoCommand>, User::reportForUsersInfo,
AuthzManagerExternalStateLocal::getRolesAsUserFragment):
- usersInfo with ``showPrivileges`` or ``showAuthenticationRestrictions`` (exact names only) shows
  ``inheritedRoles``, ``inheritedPrivileges`` and ``inheritedAuthenticationRestrictions``; the user's own
  ``authenticationRestrictions`` only with ``showAuthenticationRestrictions``;
- every other usersInfo (all users of a database, ``forAllDBs``, names without details) is read through
  a pipeline sorted ``{user: 1, db: 1}``;
- rolesInfo ``showPrivileges: "asUserFragment"`` answers ``{userFragment: {roles, inheritedRoles,
  inheritedPrivileges}}``: the roles asked, every role they reach (themselves included) and their
  privileges, as a user holding them would show them.

Tidemark showed ``authenticationRestrictions`` with ``showPrivileges`` alone and no inherited fields with
``showAuthenticationRestrictions`` alone, sorted users by database then name (names: in the order
asked), and answered ``asUserFragment`` like ``showPrivileges: true``.
"""

from __future__ import annotations

import pytest

DB = "info_output"


@pytest.fixture
def accounts(root_client):
    db = root_client[DB]
    db.command("createRole", "r1", roles=["read"],
               privileges=[{"resource": {"db": DB, "collection": "c"}, "actions": ["insert"]}])
    db.command("createRole", "r2", roles=["r1"], privileges=[])
    db.command("createUser", "zed", pwd="pw", roles=["r2"],
               authenticationRestrictions=[{"clientSource": ["127.0.0.1"]}])
    db.command("createUser", "amy", pwd="pw", roles=[])
    root_client.info_output_b.command("createUser", "amy", pwd="pw", roles=[])
    root_client.info_output_b.command("createUser", "bob", pwd="pw", roles=[])
    yield db
    for name in (DB, "info_output_b"):
        root_client[name].command("dropAllUsersFromDatabase")
        root_client[name].command("dropAllRolesFromDatabase")


@pytest.mark.commands("usersInfo")
@pytest.mark.parametrize(("privileges", "restrictions"), [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("custom_data", [True, False])
def test_users_info_details(accounts, privileges, restrictions, custom_data):
    user = accounts.command("usersInfo", "zed", showPrivileges=privileges, showAuthenticationRestrictions=restrictions,
                            showCustomData=custom_data)["users"][0]
    inherited = {"inheritedRoles", "inheritedPrivileges", "inheritedAuthenticationRestrictions"}
    if privileges or restrictions:
        assert inherited <= set(user)
        assert sorted((r["role"], r["db"]) for r in user["inheritedRoles"]) == \
            [("r1", DB), ("r2", DB), ("read", DB)]
        assert {"resource": {"db": DB, "collection": "c"}, "actions": ["insert"]} in user["inheritedPrivileges"]
    else:
        assert not inherited & set(user)
    if restrictions:
        assert user["authenticationRestrictions"] == [{"clientSource": ["127.0.0.1"]}]
    else:
        assert "authenticationRestrictions" not in user


@pytest.mark.commands("usersInfo")
def test_users_info_sorts_by_user_then_db(accounts, root_client):
    pairs = [(u["user"], u["db"]) for u in root_client.admin.command("usersInfo", {"forAllDBs": True})["users"]
             if u["db"] in (DB, "info_output_b")]
    assert pairs == [("amy", DB), ("amy", "info_output_b"), ("bob", "info_output_b"), ("zed", DB)]
    assert [u["user"] for u in accounts.command("usersInfo", 1)["users"]] == ["amy", "zed"]
    asked = ["zed", {"user": "bob", "db": "info_output_b"}, "amy"]
    assert [u["user"] for u in accounts.command("usersInfo", asked)["users"]] == ["amy", "bob", "zed"]
    # one user at a time when details are asked: the order asked
    assert [u["user"] for u in accounts.command("usersInfo", asked, showPrivileges=True)["users"]] == \
        ["zed", "bob", "amy"]


@pytest.mark.commands("rolesInfo")
def test_roles_info_as_user_fragment(accounts):
    reply = accounts.command("rolesInfo", ["r2", "r1"], showPrivileges="asUserFragment")
    assert "roles" not in reply
    fragment = reply["userFragment"]
    assert fragment["roles"] == [{"role": "r2", "db": DB}, {"role": "r1", "db": DB}]
    assert sorted((r["role"], r["db"]) for r in fragment["inheritedRoles"]) == [("r1", DB), ("r2", DB), ("read", DB)]
    assert {"resource": {"db": DB, "collection": "c"}, "actions": ["insert"]} in fragment["inheritedPrivileges"]
    assert any(p["resource"] == {"db": DB, "collection": ""} and "find" in p["actions"]
               for p in fragment["inheritedPrivileges"])
    assert accounts.command("rolesInfo", "read", showPrivileges="asUserFragment")["userFragment"]["roles"] == \
        [{"role": "read", "db": DB}]
