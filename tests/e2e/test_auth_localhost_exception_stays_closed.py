"""mongod's localhost exception closes for good once a user exists: AuthorizationManagerImpl::
hasAnyPrivilegeDocuments remembers a positive answer ("If we know that a user exists, don't
re-check") until the process restarts, so dropping every user does not let an unauthenticated local
client create a new root user. Tidemark re-counted the users each time, so the exception re-opened the
moment the last user was gone (dropAllUsersFromDatabase, dropUser, a delete or a drop of
admin.system.users).

- For each way of removing every user, an unauthenticated localhost client is refused createUser
  (13 "requires authentication") afterwards; after a restart with no user the exception is open again,
  as in mongod.
"""

from __future__ import annotations

import pytest
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("createUser", "dropUser", "dropAllUsersFromDatabase", "delete", "drop")

REMOVALS = {
    "dropAllUsersFromDatabase": lambda root: root.admin.command("dropAllUsersFromDatabase"),
    "dropUser": lambda root: root.admin.command("dropUser", "root"),
    "delete": lambda root: root.admin.system.users.delete_many({}),
    "drop": lambda root: root.admin.system.users.drop(),
}


@pytest.mark.parametrize("removal", sorted(REMOVALS))
def test_dropping_every_user_does_not_reopen_the_exception(start_server, removal):
    server = start_server(args=("--auth",))
    with server.client() as anonymous:
        anonymous.admin.command("createUser", "root", pwd="rootpw", roles=["root"])
        with server.client(username="root", password="rootpw") as root:
            REMOVALS[removal](root)
        with pytest.raises(OperationFailure) as err:
            anonymous.admin.command("createUser", "intruder", pwd="x", roles=["root"])
        assert err.value.code == 13
        assert err.value.details["errmsg"] == "Command createUser requires authentication"
    with server.client() as other:  # a new connection too
        with pytest.raises(OperationFailure):
            other.admin.command("createUser", "intruder", pwd="x", roles=["root"])
    server.restart()  # no user at start-up: the exception is open again
    with server.client() as anonymous:
        anonymous.admin.command("createUser", "root2", pwd="rootpw", roles=["root"])
