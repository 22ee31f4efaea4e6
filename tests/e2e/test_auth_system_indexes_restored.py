"""admin.system.users / admin.system.roles get their unique index back at start-up.

mongod's verifySystemIndexes (system_index.cpp), run at every start-up, looks in each of the two
collections, when it exists, for an index on {user: 1, db: 1} / {role: 1, db: 1} and, when there is
none, logs 22488 "No authorization index detected. Attempting to recover by creating an index" and
builds mongod's unique ``user_1_db_1`` / ``role_1_db_1`` over the documents
(jstests/noPassthrough/system_indexes.js: after dropIndexes on either or both, a restart shows two
indexes on each). Tidemark created the index only with the collection, so a dropped one stayed gone.
"""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.commands("createUser", "createRole", "dropIndexes", "listIndexes", "usersInfo"), pytest.mark.slow]

USERS = {"v": 2, "key": {"user": 1, "db": 1}, "name": "user_1_db_1", "unique": True}
ROLES = {"v": 2, "key": {"role": 1, "db": 1}, "name": "role_1_db_1", "unique": True}


def _indexes(admin, name: str) -> list[dict]:
    return [dict(spec, key=dict(spec["key"])) for spec in admin[name].list_indexes()]


@pytest.mark.parametrize("dropped", [("system.users",), ("system.roles",), ("system.users", "system.roles")])
def test_a_restart_recreates_the_dropped_authorization_indexes(start_server, dropped):
    server = start_server()
    admin = server.client().admin
    assert _indexes(admin, "system.users") == _indexes(admin, "system.roles") == []  # (none before a user)
    admin.command("createUser", "u1", pwd="pwd", roles=[])
    admin.command("createUser", "u2", pwd="pwd", roles=[])
    admin.command("createRole", "r1", privileges=[], roles=[])
    for name in dropped:
        admin.command("dropIndexes", name, index="*")
        assert len(_indexes(admin, name)) == 1
    server.restart()
    admin = server.client().admin
    assert _indexes(admin, "system.users")[1] == USERS
    assert _indexes(admin, "system.roles")[1] == ROLES
    assert admin.command("usersInfo", 1)["users"][0]["user"] == "u1"
    for name in dropped:
        assert "No authorization index detected" in server.log_text() and f"admin.{name}" in server.log_text()
    # the rebuilt index holds the documents: a second u1 is refused, through the unique index or not
    assert admin.system.users.find({"user": "u2"}).hint("user_1_db_1").next()["db"] == "admin"
    server.restart()  # nothing missing: nothing logged again, nothing changed
    assert len(_indexes(server.client().admin, "system.users")) == 2


def test_a_collection_that_does_not_exist_gets_nothing(start_server):
    server = start_server()
    admin = server.client().admin
    admin.command("createUser", "u1", pwd="pwd", roles=[])
    admin.command("dropIndexes", "system.users", index="*")
    server.restart()
    admin = server.client().admin
    assert "system.roles" not in admin.list_collection_names()
    assert len(_indexes(admin, "system.users")) == 2
