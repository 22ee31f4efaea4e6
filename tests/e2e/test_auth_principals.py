"""A principal is a (user, db) pair and a user id, never the text "user@db" (issue 21, defects 3, 4, 7a).

- Property (Hypothesis): two users whose names are full of '@', '.', '$' and unicode — often made to
  print the same "user@db" (user "a@b" of db "c" and user "a" of db "b@c") — are created on an --auth
  server; the second cannot getMore or killCursors the first one's cursor, cannot killOp its running
  operation, does not see either in currentOp / $currentOp without inprog, and killSessions with the
  first one's session id kills nothing of it.
- A dropped user's open connection is logged out: a new user of the same name (with more roles)
  gives it nothing (two connections).
- killSessions with another user's session id answers ok and leaves that user's cursors alone, as
  mongod (the id names the caller's own session); naming it by its uid needs killAnySession.
"""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from bson.binary import Binary
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

from tidemark.auth.names import UserName, session_digest

DATA = "principals_data"
PW = "pw-principals"

pytestmark = pytest.mark.commands("getMore", "killCursors", "killOp", "currentOp", "killSessions",
                                  "killAllSessions", "endSessions", "usersInfo", "createUser", "dropUser")

USER_CHARS = st.sampled_from("ab@.$é_ü日Z9-")
DB_CHARS = st.sampled_from("ab@é_ü日Z9-")  # '.', '$', ' ', '/', '\\', '"' are not legal in database names
USER = st.text(USER_CHARS, min_size=1, max_size=6)
DB = st.text(DB_CHARS, min_size=1, max_size=6).filter(lambda d: d.lower() not in ("admin", "local", "config"))


@st.composite
def two_users(draw) -> tuple[UserName, UserName]:
    if draw(st.booleans()):  # the same "user@db" text, two principals
        a = draw(USER)
        b, c = draw(DB), draw(DB)
        first, second = UserName(f"{a}@{b}", c), UserName(a, f"{b}@{c}")
    else:
        first, second = UserName(draw(USER), draw(DB)), UserName(draw(USER), draw(DB))
    if first == second:
        second = UserName(second.user + "2", second.db)
    if draw(st.booleans()):
        first, second = second, first
    return first, second


def _code(call) -> int:
    with pytest.raises(OperationFailure) as err:
        call()
    return err.value.code


def _wait_for_op(root_client, app: str, timeout: float = 20) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = root_client.admin.command({"currentOp": 1, "appName": app, "command.ping": 1})["inprog"]
        if found:
            return found[0]
        time.sleep(0.02)
    raise AssertionError(f"no running ping of {app}")


@pytest.fixture(scope="module")
def data(root_client):
    root_client[DATA].c.drop()
    root_client[DATA].c.insert_many([{"_id": i} for i in range(20)])
    yield
    root_client.drop_database(DATA)


@settings(max_examples=24, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(names=two_users())
def test_no_cross_principal_access(auth_server, root_client, data, names):
    first, second = names
    roles = [{"role": "readWrite", "db": DATA}]
    for name in names:
        root_client[name.db].command("createUser", name.user, pwd=PW, roles=roles, mechanisms=["SCRAM-SHA-256"])
    app = f"owner-{uuid.uuid4().hex[:8]}"
    owner = auth_server.client(username=first.user, password=PW, authSource=first.db, appName=app)
    other = auth_server.client(username=second.user, password=PW, authSource=second.db)
    blocked: list = []
    running: list = []  # the blocked ping's opid, killed in any case (a failed example must not leave it)
    try:
        assert owner.admin.command("connectionStatus")["authInfo"]["authenticatedUsers"] == [first.document()]
        assert other.admin.command("connectionStatus")["authInfo"]["authenticatedUsers"] == [second.document()]
        session = owner.start_session()
        lsid = session.session_id["id"]
        cursor_id = owner[DATA].command("find", "c", batchSize=2, session=session)["cursor"]["id"]
        assert cursor_id

        # an operation of the first user, in flight (blocked by failCommand, interruptible by killOp)
        root_client.admin.command("configureFailPoint", "failCommand", mode="alwaysOn", data={
            "failCommands": ["ping"], "appName": app, "blockConnection": True, "blockTimeMS": 30_000})
        thread = threading.Thread(target=lambda: blocked.append(_code(lambda: owner.admin.command("ping"))))
        thread.start()
        opid = _wait_for_op(root_client, app)["opid"]
        running.append(opid)
        assert opid in {e["opid"] for e in owner.admin.command({"currentOp": 1, "$ownOps": True})["inprog"]}

        # the second user: no getMore, no killCursors, no killOp, sees nothing of the first one's
        assert _code(lambda: other[DATA].command("getMore", cursor_id, collection="c")) == 13
        assert _code(lambda: other[DATA].command("killCursors", "c", cursors=[cursor_id])) == 13
        assert _code(lambda: other.admin.command("killOp", op=opid)) == 13
        own_ops = other.admin.command({"currentOp": 1, "$ownOps": True, "$all": True})["inprog"]
        assert opid not in {e.get("opid") for e in own_ops}
        assert all(e.get("effectiveUsers") == [second.document()] for e in own_ops)
        staged = list(other.admin.aggregate([{"$currentOp": {"idleCursors": True, "idleConnections": True}}]))
        assert opid not in {e.get("opid") for e in staged}
        assert cursor_id not in {e["cursor"]["cursorId"] for e in staged if "cursor" in e}
        assert other.admin.command("killSessions", [{"id": lsid}])["ok"] == 1
        assert other.admin.command("endSessions", [{"id": lsid}])["ok"] == 1

        # ... and everything of the first user's is intact
        more = owner[DATA].command("getMore", cursor_id, collection="c", batchSize=2, session=session)
        assert [d["_id"] for d in more["cursor"]["nextBatch"]] == [2, 3]
        assert thread.is_alive()
        root_client.admin.command("killOp", op=opid)
        thread.join(20)
        assert blocked == [11601]
        session.end_session()
    finally:
        root_client.admin.command("configureFailPoint", "failCommand", mode="off")
        for opid in running:
            root_client.admin.command("killOp", op=opid)
        owner.close()
        other.close()
        for name in names:
            root_client[name.db].command("dropUser", name.user)


def test_a_dropped_users_connection_does_not_inherit_a_new_users_roles(auth_server, root_client, data):
    name = f"bob_{uuid.uuid4().hex[:6]}"
    root_client[DATA].command("createUser", name, pwd="old", roles=[{"role": "read", "db": DATA}])
    old = auth_server.client(username=name, password="old", authSource=DATA)
    try:
        assert old[DATA].c.count_documents({}) == 20
        assert _code(lambda: old.admin.system.users.find_one()) == 13
        old_cursor = old[DATA].command("find", "c", batchSize=1)["cursor"]["id"]
        root_client[DATA].command("dropUser", name)
        root_client[DATA].command("createUser", name, pwd="new", roles=[{"role": "root", "db": "admin"}])
        new = auth_server.client(username=name, password="new", authSource=DATA)
        assert "admin" in {d["name"] for d in new.admin.command("listDatabases")["databases"]}  # the new bob
        # another principal (same name, new userId): the old bob's cursor is not his
        assert _code(lambda: new[DATA].command("getMore", old_cursor, collection="c")) == 13
        # the old connection was bob the reader's: it is logged out, and reads nothing any more
        with pytest.raises(OperationFailure) as err:
            old.admin.system.users.find_one()
        assert (err.value.code, err.value.details["errmsg"]) == (13, "Command find requires authentication")
        assert _code(lambda: old[DATA].c.find_one()) == 13
        assert old.admin.command("connectionStatus")["authInfo"]["authenticatedUsers"] == []
        new.close()
    finally:
        old.close()
        root_client[DATA].command("dropUser", name)


def test_kill_sessions_kills_only_the_callers_sessions(auth_server, root_client, data):
    names = [f"ks{i}_{uuid.uuid4().hex[:6]}" for i in range(2)]
    for name in names:
        root_client[DATA].command("createUser", name, pwd=PW, roles=[{"role": "read", "db": DATA}])
    alice, mallory = (auth_server.client(username=n, password=PW, authSource=DATA) for n in names)
    try:
        session = alice.start_session()
        lsid = session.session_id["id"]
        cursor_id = alice[DATA].command("find", "c", batchSize=1, session=session)["cursor"]["id"]
        # another user's id: ok, nothing killed (mongod names the caller's own session of that id)
        assert mallory.admin.command("killSessions", [{"id": lsid}]) == {"ok": 1.0}
        assert alice[DATA].command("getMore", cursor_id, collection="c", batchSize=1, session=session)["ok"] == 1
        # her session by its uid: needs killAnySession
        uid = Binary(session_digest(UserName(names[0], DATA)), 0)
        assert _code(lambda: mallory.admin.command("killSessions", [{"id": lsid, "uid": uid}])) == 13
        assert alice[DATA].command("getMore", cursor_id, collection="c", batchSize=1, session=session)["ok"] == 1
        # her own killSessions kills it; root's (killAnySession) by uid too
        assert alice.admin.command("killSessions", [{"id": lsid}]) == {"ok": 1.0}
        assert _code(lambda: alice[DATA].command("getMore", cursor_id, collection="c", session=session)) == 43
        cursor_id = alice[DATA].command("find", "c", batchSize=1, session=session)["cursor"]["id"]
        assert root_client.admin.command("killSessions", [{"id": lsid, "uid": uid}]) == {"ok": 1.0}
        assert _code(lambda: alice[DATA].command("getMore", cursor_id, collection="c", session=session)) == 43
        # killSessions: [] kills every session of the caller, and only the caller's
        cursor_id = alice[DATA].command("find", "c", batchSize=1, session=session)["cursor"]["id"]
        assert mallory.admin.command("killSessions", []) == {"ok": 1.0}
        assert alice[DATA].command("getMore", cursor_id, collection="c", batchSize=1, session=session)["ok"] == 1
        assert alice.admin.command("killSessions", []) == {"ok": 1.0}
        assert _code(lambda: alice[DATA].command("getMore", cursor_id, collection="c", session=session)) == 43
        session.end_session()
    finally:
        alice.close()
        mallory.close()
        for name in names:
            root_client[DATA].command("dropUser", name)


def test_users_info_matches_user_and_database_as_a_pair(root_client):
    """``_id`` is "<db>.<user>": user "b.c" of "uia" and user "c" of "uia.b" share it as text."""
    root_client.uia.command("createUser", "b.c", pwd=PW, roles=[])
    try:
        assert root_client.admin.command("usersInfo", {"user": "c", "db": "uia.b"})["users"] == []
        found = root_client.admin.command("usersInfo", {"user": "b.c", "db": "uia"})["users"]
        assert [(u["user"], u["db"]) for u in found] == [("b.c", "uia")]
    finally:
        root_client.uia.command("dropUser", "b.c")


def test_kill_all_sessions_with_users_kills_only_theirs(auth_server, root_client, data):
    first, second = UserName("k@a", "ks1"), UserName("k", "a@ks1")  # both print "k@a@ks1"
    for name in (first, second):
        root_client[name.db].command("createUser", name.user, pwd=PW, roles=[{"role": "read", "db": DATA}])
    clients = [auth_server.client(username=n.user, password=PW, authSource=n.db) for n in (first, second)]
    try:
        sessions = [c.start_session() for c in clients]
        ids = [c[DATA].command("find", "c", batchSize=1, session=s)["cursor"]["id"]
               for c, s in zip(clients, sessions, strict=True)]
        assert root_client.admin.command("killAllSessions", [first.document()]) == {"ok": 1.0}
        assert _code(lambda: clients[0][DATA].command("getMore", ids[0], collection="c", session=sessions[0])) == 43
        assert clients[1][DATA].command("getMore", ids[1], collection="c", session=sessions[1])["ok"] == 1
        for s in sessions:
            s.end_session()
    finally:
        for c in clients:
            c.close()
        for name in (first, second):
            root_client[name.db].command("dropUser", name.user)
