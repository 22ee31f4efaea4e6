"""mongod invalidates its user cache on every write to admin.system.users / admin.system.roles,
whatever the route (AuthOpObserver -> AuthorizationManager::logOp on insert, update, delete, drop,
rename): a change made by writing the collections directly takes effect on the next command of every
connection. Tidemark noticed only the user/role commands; a direct write took effect after its 2 s
cache expiry, so a user whose roles root had just removed by hand kept them meanwhile.

- Each direct route (update of a user's roles, delete of the user document, update of a role's
  privileges, insert of a role the user names, delete and drop of system.roles, drop of
  system.users) changes what an authenticated connection may do on its very next command, with no
  wait.
"""

from __future__ import annotations

import pytest
from harness import ServerProcess
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("find", "update", "delete", "insert", "drop")

PW = "pw-direct"
DB = "direct_data"
READ = [{"resource": {"db": DB, "collection": ""}, "actions": ["find"]}]


@pytest.fixture
def server(tmp_path):
    proc = ServerProcess(tmp_path / "db", args=("--auth",), log_path=tmp_path / "tidemark.log").start()
    with proc.client() as bootstrap:
        bootstrap.admin.command("createUser", "root", pwd="rootpw", roles=["root"])
    with proc.client(username="root", password="rootpw") as root:
        root[DB].c.insert_one({"_id": 1})
        root.admin.command("createRole", "reader", privileges=READ, roles=[])
        root.admin.command("createUser", "u", pwd=PW, roles=["reader"])
        # root may write system.users; writing system.roles takes an explicit privilege
        root.admin.command("createRole", "rolesEditor", roles=[], privileges=[{
            "resource": {"db": "admin", "collection": "system.roles"},
            "actions": ["find", "insert", "update", "remove", "dropCollection"]}])
        root.admin.command("grantRolesToUser", "root", roles=["rolesEditor"])
    yield proc
    proc.kill()


def _can_read(mongo) -> bool:
    try:
        mongo[DB].c.find_one()
        return True
    except OperationFailure as exc:
        assert exc.code == 13
        return False


LOSE = {
    "update user roles": lambda root: root.admin.system.users.update_one({"user": "u"}, {"$set": {"roles": []}}),
    "delete user": lambda root: root.admin.system.users.delete_one({"user": "u"}),
    "drop system.users": lambda root: root.admin.system.users.drop(),
    "update role privileges": lambda root: root.admin.system.roles.update_one({"role": "reader"},
                                                                              {"$set": {"privileges": []}}),
    "delete role": lambda root: root.admin.system.roles.delete_one({"role": "reader"}),
    "drop system.roles": lambda root: root.admin.system.roles.drop(),
}


@pytest.mark.parametrize("route", sorted(LOSE))
def test_a_direct_write_revokes_at_once(server, route):
    with server.client(username="root", password="rootpw") as root, \
            server.client(username="u", password=PW) as user:
        assert _can_read(user)
        LOSE[route](root)
        assert not _can_read(user)  # the very next command, no wait


def test_a_direct_insert_grants_at_once(server):
    with server.client(username="root", password="rootpw") as root, \
            server.client(username="u", password=PW) as user:
        root.admin.system.roles.delete_one({"role": "reader"})
        assert not _can_read(user)
        root.admin.system.roles.insert_one({"_id": "admin.reader", "role": "reader", "db": "admin",
                                            "privileges": READ, "roles": []})
        assert _can_read(user)
        root.admin.system.users.update_one({"user": "u"}, {"$set": {"roles": [{"role": "read", "db": DB}]}})
        root.admin.system.roles.delete_one({"role": "reader"})
        assert _can_read(user)  # now through the built-in role the direct update gave
