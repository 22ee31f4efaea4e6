"""mongod runs listDatabases under the localhost exception ("Commands should succeed in auth-bypass
mode regardless of requiresAuth()", jstests/auth/listcommands_preauth_base.js): its authorization
check is empty, and without the listDatabases privilege it lists only the databases the caller has
privileges on, none before any user exists. Tidemark answered 13. Once the first user exists the
exception closes and listDatabases needs authentication again.

- A server holding data, restarted with --auth and no user: listDatabases (nameOnly or not, with a
  filter) answers ok with no database from a localhost client; after createUser it is 13.
"""

from __future__ import annotations

import pytest
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("listDatabases")


@pytest.mark.parametrize("args", [{}, {"nameOnly": True}, {"filter": {"name": "data_db"}},
                                  {"authorizedDatabases": True}])
def test_list_databases_under_the_localhost_exception(start_server, tmp_path, args):
    server = start_server(dbpath=tmp_path / "db")
    with server.client() as mongo:
        mongo.data_db.c.insert_one({"x": 1})
    server.terminate()
    server = start_server(dbpath=tmp_path / "db", args=("--auth",))
    with server.client() as anonymous:
        reply = anonymous.admin.command({"listDatabases": 1, **args})
        assert reply["ok"] == 1.0 and reply["databases"] == []
        anonymous.admin.command("createUser", "root", pwd="rootpw", roles=["root"])
        with pytest.raises(OperationFailure) as err:
            anonymous.admin.command({"listDatabases": 1, **args})
        assert err.value.code == 13
    with server.client(username="root", password="rootpw") as root:
        assert "data_db" in {d["name"] for d in root.admin.command("listDatabases")["databases"]}
