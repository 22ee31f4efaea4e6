"""mongod's rolesInfo reads ``showBuiltinRoles`` only when it lists every role of a database
(``rolesInfo: 1``); with named roles the flag is accepted and changes nothing (user_management_commands.cpp
CmdRolesInfo: getRolesDescription for named roles, getRoleDescriptionsForDB with the flag;
jstests/auth/builtin_roles.js names roles with showBuiltinRoles: true). Tidemark refused it with 2
"showBuiltinRoles is only valid when requesting all roles", a message mongod does not have.

- Named roles (a string, a document, a list mixing built-in and user-defined roles, an unknown role)
  with showBuiltinRoles true or false answer the same roles as without the flag.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.commands("rolesInfo")


@pytest.fixture(scope="module")
def custom_role(root_client):
    root_client.test.command("createRole", "flagRole", privileges=[], roles=["read"])
    yield
    root_client.test.command("dropRole", "flagRole")


@pytest.mark.parametrize("names", ["read", {"role": "read", "db": "test"}, ["read", "flagRole"],
                                   [{"role": "dbOwner", "db": "test"}, "flagRole", "noSuchRole"], "flagRole"])
@pytest.mark.parametrize("flag", [True, False])
@pytest.mark.parametrize("show_privileges", [True, False])
def test_show_builtin_roles_with_named_roles_changes_nothing(root_client, custom_role, names, flag, show_privileges):
    base = root_client.test.command("rolesInfo", names, showPrivileges=show_privileges)["roles"]
    flagged = root_client.test.command("rolesInfo", names, showPrivileges=show_privileges,
                                       showBuiltinRoles=flag)["roles"]
    assert flagged == base and base
