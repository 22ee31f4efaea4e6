"""mongod's getMore checks that the caller still holds the privileges of the command that opened the
cursor (getmore_cmd.cpp validateAuthorization: isAuthorizedForPrivileges(originatingPrivileges), else
13 "not authorized for getMore with cursor id N"), after the cursor-owner check. Tidemark checked only
that the cursor was the caller's, so a user whose roles were revoked kept reading a collection
through the cursors it had opened before.

- For cursors of find, aggregate (also one whose $lookup reads a second collection), listCollections
  and listIndexes: revoking the privilege the opening command needed (from the user's role, or the
  role itself from the user) makes the next getMore 13 with mongod's message; revoking an unrelated
  privilege leaves it working, and granting the privilege back makes it work again.
"""

from __future__ import annotations

import itertools

import pytest
from bson.int64 import Int64
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("getMore", "find", "aggregate", "listCollections", "listIndexes",
                                  "revokePrivilegesFromRole", "grantPrivilegesToRole", "revokeRolesFromUser")

DB = "getmore_privs"
PW = "pw-getmore"
_SEQ = itertools.count()

# name -> (command opening a cursor of batch size 1, the privileges it needs, the collection getMore names)
CURSORS = {
    "find": ({"find": "c", "batchSize": 1}, [("c", "find")], "c"),
    "aggregate": ({"aggregate": "c", "pipeline": [{"$match": {}}], "cursor": {"batchSize": 1}}, [("c", "find")], "c"),
    "lookup": ({"aggregate": "c", "pipeline": [{"$lookup": {"from": "other", "localField": "_id",
                                                             "foreignField": "_id", "as": "o"}}],
                "cursor": {"batchSize": 1}}, [("c", "find"), ("other", "find")], "c"),
    "listCollections": ({"listCollections": 1, "cursor": {"batchSize": 1}}, [("", "listCollections")],
                        "$cmd.listCollections"),
    "listIndexes": ({"listIndexes": "c", "cursor": {"batchSize": 1}}, [("c", "listIndexes")], "c"),
}


def _privilege(coll: str, action: str) -> dict:
    resource = {"db": DB, "collection": coll}
    return {"resource": resource, "actions": [action]}


@pytest.fixture(scope="module")
def data(root_client):
    root_client[DB].c.insert_many([{"_id": i} for i in range(30)])
    root_client[DB].other.insert_many([{"_id": i} for i in range(30)])
    for i in range(12):  # enough collections and indexes for every batch of one
        root_client[DB].c.create_index(f"k{i}")
        root_client[DB][f"extra{i}"].insert_one({})
    yield
    root_client.drop_database(DB)


def _get_more(db, cursor_id: int, coll: str):
    return db.command("getMore", Int64(cursor_id), collection=coll, batchSize=1)


@pytest.mark.parametrize("kind", sorted(CURSORS))
@pytest.mark.parametrize("revoke", ["privilege", "role"])
def test_get_more_needs_the_originating_privileges(auth_server, root_client, data, kind, revoke):
    command, needed, coll = CURSORS[kind]
    n = next(_SEQ)
    role, user = f"gmRole{n}", f"gmUser{n}"
    privileges = [_privilege(c, a) for c, a in needed] + [_privilege("unrelated", "find")]
    root_client[DB].command("createRole", role, privileges=privileges, roles=[])
    root_client[DB].command("createUser", user, pwd=PW, roles=[role])
    try:
        with auth_server.client(username=user, password=PW, authSource=DB) as mongo:
            db = mongo[DB]
            cursor_id = db.command(dict(command))["cursor"]["id"]
            assert cursor_id
            _get_more(db, cursor_id, coll)
            root_client[DB].command("revokePrivilegesFromRole", role, privileges=[_privilege("unrelated", "find")])
            _get_more(db, cursor_id, coll)  # an unrelated privilege: still allowed
            for c, a in needed:  # each privilege the opening command needed is required
                lost = _privilege(c, a)
                if revoke == "privilege":
                    root_client[DB].command("revokePrivilegesFromRole", role, privileges=[lost])
                else:
                    root_client[DB].command("revokeRolesFromUser", user, roles=[role])
                with pytest.raises(OperationFailure) as err:
                    _get_more(db, cursor_id, coll)
                assert err.value.code == 13
                assert err.value.details["errmsg"] == f"not authorized for getMore with cursor id {cursor_id}"
                if revoke == "privilege":
                    root_client[DB].command("grantPrivilegesToRole", role, privileges=[lost])
                else:
                    root_client[DB].command("grantRolesToUser", user, roles=[role])
                _get_more(db, cursor_id, coll)  # granted back: the cursor goes on
    finally:
        root_client[DB].command("dropUser", user)
        root_client[DB].command("dropRole", role)
