"""mongod lets any authenticated user run ``$listSessions`` / ``$listLocalSessions`` with ``users``
naming only itself: listSessionsRequiredPrivileges asks ``listSessions`` on the cluster for
``allUsers`` or for a ``users`` entry other than the caller (jstests/auth/list_sessions.js). Tidemark
asked it for any non-empty ``users``, so ``users: [self]`` was 13.

- ``users`` lists drawn from the caller and others (same name on another database, another user):
  13 exactly when someone else is named (or allUsers), for a user without listSessions; a user with
  it may name anyone.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("aggregate")

PW = "pw-sessions"
SELF = {"user": "sessUser", "db": "admin"}
OTHERS = [{"user": "sessUser", "db": "test"}, {"user": "someoneElse", "db": "admin"}]


@pytest.fixture(scope="module")
def clients(auth_server, root_client):
    root_client.admin.command("createUser", "sessUser", pwd=PW, roles=[])
    root_client.admin.command("createRole", "sessLister", roles=[],
                              privileges=[{"resource": {"cluster": True}, "actions": ["listSessions"]}])
    root_client.admin.command("createUser", "sessAdmin", pwd=PW, roles=["sessLister"])
    plain = auth_server.client(username="sessUser", password=PW)
    lister = auth_server.client(username="sessAdmin", password=PW)
    yield plain, lister
    plain.close()
    lister.close()
    root_client.admin.command("dropUser", "sessUser")
    root_client.admin.command("dropUser", "sessAdmin")
    root_client.admin.command("dropRole", "sessLister")


def _run(mongo, stage: str, spec: dict) -> bool:
    try:
        if stage == "$listSessions":
            list(mongo.config.system.sessions.aggregate([{stage: spec}]))
        else:
            list(mongo.admin.aggregate([{stage: spec}]))
        return True
    except OperationFailure as exc:
        assert exc.code == 13
        return False


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(stage=st.sampled_from(["$listSessions", "$listLocalSessions"]),
       users=st.lists(st.sampled_from([SELF, *OTHERS]), max_size=3), all_users=st.booleans())
def test_naming_only_oneself_needs_no_privilege(clients, stage, users, all_users):
    plain, lister = clients
    spec = {"allUsers": True} if all_users else {"users": users}
    someone_else = all_users or any(u != SELF for u in users)
    assert _run(plain, stage, spec) is not someone_else
    assert _run(lister, stage, spec)
