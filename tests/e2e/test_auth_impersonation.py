"""Claims a command makes about who runs it, checked by mongod before any command's own rule:

- ``lsid.uid``: a client may name its own user's digest; any other needs ``impersonate`` on the
  cluster, else 13 "Unauthorized to set user digest in LogicalSessionId" (logical_session_id_helpers.cpp
  makeLogicalSessionId; jstests/auth/lsid_auth_checks.js). Tidemark accepted any uid on the command
  itself (only killSessions checked it).
- ``$audit`` impersonation metadata naming a user or roles: needs ``impersonate`` on the cluster, for
  every command (hello included) and whoever asks (root included), else 13 "Unauthorized use of
  impersonation metadata." (service_entry_point_common.cpp's ImpersonationSessionGuard, in
  _initiateCommand: after the pre-parse "requires authentication" of a command that needs a user; an
  ``$audit`` naming nobody is ignored). Tidemark ignored ``$audit``.

Raw connections (bench.scram_client): drivers replace a command's lsid with their own session's.
- Property (Hypothesis): any uid bytes on find/count/distinct/insert/explain, for a reader, a writer,
  root and an impersonator: 13 exactly when the uid is not the caller's digest and the caller cannot
  impersonate; otherwise the command answers as without the uid.
- ``$audit`` variants (one user, the legacy list, roles only, empty) on hello/ping/find for an
  unauthenticated client, a reader, root and an impersonator.
"""

from __future__ import annotations

import socket
import uuid

import pytest
from bson.binary import Binary
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.scram_client import authenticate, command
from tidemark.auth.names import UserName, session_digest

pytestmark = pytest.mark.commands("find", "count", "distinct", "insert", "explain", "hello", "ping")

DB = "impersonation_data"
PW = "pw-impersonation"
USERS = {  # name -> (roles, may impersonate)
    "reader": ([{"role": "read", "db": DB}], False),
    "writer": ([{"role": "readWrite", "db": DB}], False),
    "impersonator": (["impersonatorRole", {"role": "readWrite", "db": DB}], True),
}
COMMANDS = [{"find": "c", "filter": {}}, {"count": "c"}, {"distinct": "c", "key": "_id"},
            {"insert": "c", "documents": [{"x": 1}]}, {"explain": {"find": "c"}}]
AUDITS = {
    "user": ({"$impersonatedUser": {"user": "root", "db": "admin"},
              "$impersonatedRoles": [{"role": "root", "db": "admin"}]}, True),
    "legacy": ({"$impersonatedUsers": [{"user": "root", "db": "admin"}], "$impersonatedRoles": []}, True),
    "roles": ({"$impersonatedRoles": [{"role": "root", "db": "admin"}]}, True),
    "nobody": ({"$impersonatedRoles": []}, False),
}


@pytest.fixture(scope="module")
def users(root_client):
    root_client[DB].c.insert_one({"_id": 1})
    root_client.admin.command("createRole", "impersonatorRole", roles=[],
                              privileges=[{"resource": {"cluster": True}, "actions": ["impersonate"]}])
    for name, (roles, _) in USERS.items():
        root_client.admin.command("createUser", name, pwd=PW, roles=roles)
    yield
    for name in USERS:
        root_client.admin.command("dropUser", name)
    root_client.admin.command("dropRole", "impersonatorRole")
    root_client.drop_database(DB)


def _sock(server, user: str | None) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    if user is not None:
        authenticate(sock, user, "rootpw" if user == "root" else PW)
    return sock


CALLERS = ["reader", "writer", "impersonator", "root"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(caller=st.sampled_from(CALLERS), cmd=st.sampled_from(COMMANDS),
       uid=st.one_of(st.just("own"), st.just("other"), st.binary(min_size=0, max_size=40)))
def test_lsid_uid_needs_impersonate_unless_it_is_the_callers(auth_server, users, caller, cmd, uid):
    own = session_digest(UserName(caller, "admin"))
    value = own if uid == "own" else session_digest(UserName("root" if caller != "root" else "reader", "admin")) \
        if uid == "other" else uid
    may_impersonate = USERS.get(caller, ([], False))[1]  # root has no impersonate (only __system has)
    with _sock(auth_server, caller) as sock:
        plain = command(sock, {**cmd, "$db": DB, "lsid": {"id": Binary(uuid.uuid4().bytes, 4)}})
        reply = command(sock, {**cmd, "$db": DB, "lsid": {"id": Binary(uuid.uuid4().bytes, 4), "uid": Binary(value)}})
    if value == own or may_impersonate:
        assert reply.get("ok") == plain.get("ok") and reply.get("code") == plain.get("code"), (reply, plain)
    else:
        assert (reply["ok"], reply["code"], reply["errmsg"]) == (
            0.0, 13, "Unauthorized to set user digest in LogicalSessionId"), reply


@pytest.mark.parametrize("audit", sorted(AUDITS))
@pytest.mark.parametrize("caller", [None, "reader", "root", "impersonator"])
@pytest.mark.parametrize("cmd", [{"hello": 1}, {"ping": 1}, {"find": "c"}])
def test_impersonation_metadata_needs_impersonate(auth_server, users, audit, caller, cmd):
    metadata, names_someone = AUDITS[audit]
    with _sock(auth_server, caller) as sock:
        plain = command(sock, {**cmd, "$db": DB})
        reply = command(sock, {**cmd, "$db": DB, "$audit": metadata})
    if caller is None and "find" in cmd:  # uassertShouldAttemptParse, before the impersonation guard
        assert (reply["ok"], reply["code"], reply["errmsg"]) == (
            0.0, 13, "Command find requires authentication"), reply
    elif names_someone and caller != "impersonator":
        assert (reply["ok"], reply["code"], reply["errmsg"]) == (
            0.0, 13, "Unauthorized use of impersonation metadata."), reply
    else:
        assert reply.get("ok") == plain.get("ok") and reply.get("code") == plain.get("code"), (reply, plain)
