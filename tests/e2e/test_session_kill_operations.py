"""killSessions / killAllSessions / killAllSessionsByPattern kill the sessions' running operations, not
only their cursors, as mongod 7.0's SessionKiller does (killSessionsLocalKillOps: the operation stops with
11601 Interrupted); Tidemark killed only the cursors, and had no killAllSessionsByPattern (59).

killAllSessionsByPattern (kill_all_sessions_by_pattern_command.cpp, kill_sessions.idl): a list of patterns
``{uid}`` (the sessions of that user digest), ``{lsid: {id, uid}}`` (that session), ``{}`` (every session);
``[]`` kills every session; each pattern is parsed as its IDL (40415 unknown field, 14 wrong type); it
needs ``killAnySession``, and ``impersonate`` for a pattern with ``users`` or ``roles``.
"""

from __future__ import annotations

import hashlib
import threading
import time
import uuid

import pytest
from bson.binary import Binary
from bson.son import SON
from hypothesis import given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("killSessions", "killAllSessions", "killAllSessionsByPattern")

# ~1 s of interruptible work per document: 100 of them run until killed
RUNAWAY = [{"$project": {"x": {"$reduce": {"input": {"$range": [0, 3_000_000]}, "initialValue": 0,
                                           "in": {"$add": ["$$value", "$$this"]}}}}}]
NO_USER_UID = Binary(hashlib.sha256(b"").digest(), 0)


class Runaway:
    """A runaway aggregation in a thread, in a session (or none); ``error`` is how it ended."""

    def __init__(self, client, db: str, comment: str, session: bool = True):
        self.error: BaseException | None = None
        self.session = client.start_session() if session else None
        self.lsid = self.session.session_id if self.session else None
        self.comment = comment

        def run():
            try:
                list(client[db].c.aggregate(RUNAWAY, comment=comment, session=self.session))
            except BaseException as exc:  # noqa: BLE001 - asserted by the test
                self.error = exc

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 20
        while not client.admin.command({"currentOp": 1, "command.comment": comment})["inprog"]:
            assert time.monotonic() < deadline, "the operation did not start"
            time.sleep(0.05)

    def killed(self) -> bool:
        self.thread.join(30)
        assert not self.thread.is_alive(), "the operation was not killed"
        return isinstance(self.error, OperationFailure) and self.error.code == 11601

    def running(self) -> bool:
        time.sleep(0.5)
        return self.thread.is_alive()

    def stop(self, client) -> None:
        for op in client.admin.command({"currentOp": 1, "command.comment": self.comment})["inprog"]:
            client.admin.command("killOp", op=op["opid"])
        self.thread.join(30)
        if self.session:
            self.session.end_session()


@pytest.fixture
def runaway_db(client):
    name = f"kill_ops_{uuid.uuid4().hex[:6]}"
    client[name].c.insert_many([{"_id": i} for i in range(100)])
    yield name
    client.drop_database(name)


@pytest.mark.parametrize("how", ["killSessions", "killAllSessions", "pattern_lsid", "pattern_uid", "pattern_all",
                                 "pattern_empty"])
def test_killing_a_session_kills_its_running_operation(client, runaway_db, how):
    target = Runaway(client, runaway_db, f"target-{how}")
    # another session (pymongo gives a command without one an implicit session: every operation of a
    # driver runs in one): killed only by the kills that name no single session
    bystander = Runaway(client, runaway_db, f"bystander-{how}", session=False)
    try:
        lsid = target.lsid
        command = {
            "killSessions": SON([("killSessions", [{"id": lsid["id"]}])]),
            "killAllSessions": SON([("killAllSessions", [])]),
            "pattern_lsid": SON([("killAllSessionsByPattern", [{"lsid": {"id": lsid["id"], "uid": NO_USER_UID}}])]),
            "pattern_uid": SON([("killAllSessionsByPattern", [{"uid": NO_USER_UID}])]),
            "pattern_all": SON([("killAllSessionsByPattern", [{}])]),
            "pattern_empty": SON([("killAllSessionsByPattern", [])]),
        }[how]
        assert client.admin.command(command) == {"ok": 1.0}
        assert target.killed(), target.error
        if how in ("killSessions", "pattern_lsid"):
            assert bystander.running()
        else:
            assert bystander.killed(), bystander.error
    finally:
        target.stop(client)
        bystander.stop(client)


def test_a_pattern_of_another_session_leaves_the_operation_running(client, runaway_db):
    target = Runaway(client, runaway_db, "other-session")
    try:
        other = {"id": Binary.from_uuid(uuid.uuid4()), "uid": NO_USER_UID}
        client.admin.command("killAllSessionsByPattern", [{"lsid": other}, {"uid": Binary(b"\x01" * 32, 0)}])
        assert target.running()
    finally:
        target.stop(client)


@settings(max_examples=40, deadline=None)
@given(value=st.one_of(st.integers(-5, 5), st.text(max_size=3), st.none(), st.booleans(),
                       st.dictionaries(st.sampled_from(["bogus", "x"]), st.integers(0, 3), min_size=1, max_size=1)))
def test_patterns_are_parsed_as_the_idl_does(client, value):
    with pytest.raises(OperationFailure) as info:
        client.admin.command("killAllSessionsByPattern", value if not isinstance(value, dict) else [value])
    if isinstance(value, dict):
        assert info.value.code == 40415 and "is an unknown field" in info.value.details["errmsg"]
    else:
        assert info.value.code == 14
    with pytest.raises(OperationFailure) as info:
        client.admin.command("killAllSessionsByPattern", [value])
    assert info.value.code in (14, 40415)


def test_kill_by_pattern_needs_kill_any_session_and_impersonate_for_users(auth_server, root_client):
    db = root_client[f"kill_auth_{uuid.uuid4().hex[:6]}"]
    names = {}
    for key, roles in (("plain", ["readWrite"]), ("host", [{"role": "hostManager", "db": "admin"}])):
        names[key] = f"{key}_{uuid.uuid4().hex[:6]}"
        db.command("createUser", names[key], pwd="pw", roles=roles)
    try:
        with auth_server.client(username=names["plain"], password="pw", authSource=db.name) as plain:
            with pytest.raises(OperationFailure) as info:
                plain.admin.command("killAllSessionsByPattern", [])
            assert info.value.code == 13
        with auth_server.client(username=names["host"], password="pw", authSource=db.name) as host:
            assert host.admin.command("killAllSessionsByPattern", [{"uid": NO_USER_UID}])["ok"] == 1.0
            with pytest.raises(OperationFailure) as info:
                host.admin.command("killAllSessionsByPattern", [{"users": [{"user": "x", "db": "y"}]}])
            assert (info.value.code, info.value.details["errmsg"]) == (
                13, "Not authorized to impersonate in killAllSessionsByPattern")
        with pytest.raises(OperationFailure) as info:  # root has no impersonate (only __system)
            root_client.admin.command("killAllSessionsByPattern", [{"roles": []}])
        assert info.value.code == 13
    finally:
        for name in names.values():
            db.command("dropUser", name)
        root_client.drop_database(db.name)
