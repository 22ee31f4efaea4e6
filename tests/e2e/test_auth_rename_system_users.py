"""mongod refuses to rename a ``system.users`` collection or to rename one over/to ``system.users``
(rename_collection.cpp validateNamespacesForRenameCollection: 20 IllegalOperation "renaming
system.users collection or renaming to system.users is not allowed", next to the system.views and
system.js rules). Tidemark renamed ``admin.system.users`` away: every user vanished (root could no
longer log in) and the localhost exception opened again, so an unauthenticated local client could
create a root user; renaming a collection of forged user documents to ``admin.system.users`` was
accepted as well.

- Every direction (away within admin, away to another database, a plain collection renamed to it,
  with and without dropTarget) answers 20 and changes nothing: the users still authenticate, the
  localhost exception stays closed.
"""

from __future__ import annotations

import pytest
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("renameCollection")

MESSAGE = "renaming system.users collection or renaming to system.users is not allowed"


@pytest.mark.parametrize("source, target, exact", [
    ("admin.system.users", "admin.users_stash", True),
    ("admin.system.users", "stash.system.users", False),
    ("admin.system.users", "stash.users", False),
    ("admin.forged_users", "admin.system.users", True),
])
@pytest.mark.parametrize("drop_target", [False, True])
def test_system_users_is_never_renamed(auth_server, root_client, source, target, exact, drop_target):
    root_client.admin.forged_users.insert_one({"_id": "admin.evil", "user": "evil", "db": "admin", "roles": []})
    before = sorted(d["_id"] for d in root_client.admin.system.users.find({}, {"_id": 1}))
    try:
        with pytest.raises(OperationFailure) as err:
            root_client.admin.command("renameCollection", source, to=target, dropTarget=drop_target)
        assert err.value.code == 20
        if exact:
            assert err.value.details["errmsg"] == MESSAGE
        assert sorted(d["_id"] for d in root_client.admin.system.users.find({}, {"_id": 1})) == before
        with auth_server.client(username="root", password="rootpw") as again:
            assert again.admin.command("connectionStatus")["authInfo"]["authenticatedUsers"]
        with auth_server.client() as anonymous, pytest.raises(OperationFailure) as closed:
            anonymous.admin.command("createUser", "intruder", pwd="x", roles=["root"])
        assert closed.value.code == 13
    finally:
        root_client.admin.forged_users.drop()
