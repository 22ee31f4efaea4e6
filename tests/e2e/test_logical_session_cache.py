"""mongod 7.0's logical session cache (LogicalSessionCacheImpl, standalone):

- A command carrying an ``lsid`` (but killSessions/killAllSessions), ``startSession`` and
  ``refreshSessions`` vivify the session; a cache holding ``maxSessions`` sessions refuses a new one and
  the command fails with 261 TooManyLogicalSessions, "Unable to add session ID <id> - <uid> -  -  into
  the cache because the number of active sessions is too high" (``_addToCacheIfNotFull``).
- Every ``logicalSessionRefreshMillis`` (and on ``refreshLogicalSessionCacheNow``) the cache is
  refreshed (``_refresh``): what it holds is taken out and written to ``config.system.sessions`` (so the
  cache holds only what was used since the last refresh), the sessions ended since (``endSessions``, which
  itself does nothing else) leave the collection, and the cursors of ended sessions and of sessions whose
  record is gone (expired: the TTL index ``lsidTTLIndex``, ``localLogicalSessionTimeoutMinutes``) are
  killed.

Tidemark had no maxSessions parameter and stopped recording new sessions silently when full, so their
cursors were taken for orphans and killed by the cursor monitor; it had no periodic refresh, removed
ended sessions from the cache at once, killed their cursors at the next cursor-monitor pass (4 s) instead
of the refresh, and expired sessions from its own 30-minute clock instead of from the collection.

Ports the standalone assertions of jstests/noPassthrough/end_sessions_command.js,
refresh_sessions_command.js, verify_session_cache_updates.js and sessions_collection_auto_healing.js.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import socket
import time
import uuid
from typing import Any

import pytest
from harness.server import ServerProcess, recv_frame
from harness.ttl import wait_ttl_passes
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tidemark.protocol.messages import decode_reply, encode_op_msg_request

NO_USER_UID = base64.b64encode(hashlib.sha256(b"").digest()).decode()
DAY_MS = 24 * 3600 * 1000  # a refresh interval no test waits for


class Raw:
    """One driverless connection: commands carry an ``lsid`` only when a test gives one."""

    def __init__(self, port: int):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)

    def __call__(self, command: dict[str, Any], db: str = "admin", lsid: Any = None) -> dict[str, Any]:
        command = {**command, "$db": db}
        if lsid is not None:
            command["lsid"] = lsid
        self.sock.sendall(encode_op_msg_request(command, 1))
        return decode_reply(recv_frame(self.sock))

    def ok(self, command: dict[str, Any], db: str = "admin", lsid: Any = None) -> dict[str, Any]:
        reply = self(command, db, lsid)
        assert reply["ok"] == 1.0, reply
        return reply

    def refresh(self) -> None:
        self.ok({"refreshLogicalSessionCacheNow": 1})

    def local_sessions(self) -> set[Any]:
        reply = self.ok({"aggregate": 1, "pipeline": [{"$listLocalSessions": {"allUsers": True}}], "cursor": {}})
        return {r["_id"]["id"] for r in reply["cursor"]["firstBatch"]}

    def records(self) -> list[dict[str, Any]]:
        return self.ok({"find": "system.sessions", "filter": {}}, db="config")["cursor"]["firstBatch"]

    def open_cursor(self, lsid: Any) -> int:
        reply = self.ok({"find": "c", "batchSize": 1}, db="lsc", lsid=lsid)
        assert reply["cursor"]["id"]
        return int(reply["cursor"]["id"])

    def open_cursors(self) -> set[int]:
        reply = self.ok({"aggregate": 1, "cursor": {}, "pipeline": [
            {"$currentOp": {"idleCursors": True, "allUsers": True}}, {"$match": {"type": "idleCursor"}}]})
        return {int(op["cursor"]["cursorId"]) for op in reply["cursor"]["firstBatch"]}

    def close(self) -> None:
        self.sock.close()


def _too_many(session_id: uuid.UUID) -> str:
    return (f"Unable to add session ID {session_id} - {NO_USER_UID} -  -  into the cache because the number "
            "of active sessions is too high")


@pytest.fixture(scope="module")
def full_server(tmp_path_factory):
    """maxSessions 3, no periodic refresh within a test's time."""
    base = tmp_path_factory.mktemp("lsc-max")
    srv = ServerProcess(base / "db", log_path=base / "server.log",
                        params={"enableTestCommands": 1, "maxSessions": 3, "logicalSessionRefreshMillis": DAY_MS})
    srv.start()
    raw = Raw(srv.port)
    raw.ok({"insert": "c", "documents": [{"_id": i} for i in range(5)]}, db="lsc")
    yield srv, raw
    raw.close()
    assert srv.terminate() == 0


# How a step uses a session: each vivifies it (killSessions aside), as mongod's
# initializeOperationSessionInfo / startSession / refreshSessions do.
USES = ["ping", "find", "insert", "count", "hello", "refreshSessions", "endSessions", "killSessions"]
STEP = st.one_of(
    st.tuples(st.sampled_from(USES), st.integers(0, 5)),
    st.tuples(st.just("startSession"), st.just(0)),
    st.tuples(st.just("refresh"), st.just(0)),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(STEP, max_size=14))
def test_a_full_cache_refuses_every_way_of_starting_a_new_session(full_server, steps):
    """A model of the cache (the sessions used since the last refresh, at most 3) against every command
    that vivifies a session: a new session past the limit fails with mongod's 261 and its command does
    nothing; known sessions keep working; killSessions never counts; a refresh empties the cache."""
    _srv, raw = full_server
    raw.refresh()  # (a raw command carries no lsid: the cache is now empty)
    ids = [uuid.uuid4() for _ in range(6)]
    active: set[Any] = set()
    for step, (use, i) in enumerate(steps):
        lsid = {"id": ids[i]}
        marker = f"{ids[i]}/{step}"  # (this step's own: an earlier step may have inserted with the session)
        if use == "refresh":
            raw.refresh()
            active = set()
            continue
        if use == "startSession":
            reply = raw({"startSession": 1})
            if len(active) < 3:
                assert reply["ok"] == 1.0 and reply["timeoutMinutes"] == 30
                active.add(reply["id"]["id"])
            else:
                assert reply["code"] == 261 and reply["codeName"] == "TooManyLogicalSessions"
                assert reply["errmsg"].startswith("Unable to add session ID ")
            continue
        command: dict[str, Any] = {
            "ping": {"ping": 1}, "find": {"find": "c", "filter": {}}, "count": {"count": "c"},
            "insert": {"insert": "c", "documents": [{"marker": marker}]}, "hello": {"hello": 1},
            "refreshSessions": {"refreshSessions": [lsid]}, "endSessions": {"endSessions": [lsid]},
            "killSessions": {"killSessions": [lsid]},
        }[use]
        reply = raw(command, db="lsc" if use in ("find", "insert", "count") else "admin", lsid=lsid)
        refused = use != "killSessions" and ids[i] not in active and len(active) >= 3
        if refused:
            assert reply["ok"] == 0.0 and reply["code"] == 261, reply
            assert reply["errmsg"] == _too_many(ids[i]) and reply["codeName"] == "TooManyLogicalSessions"
            if use == "insert":
                assert raw.ok({"count": "c", "query": {"marker": marker}}, db="lsc")["n"] == 0
        else:
            assert reply["ok"] == 1.0, reply
            if use != "killSessions":
                active.add(ids[i])
        assert raw.local_sessions() == active


def test_a_cursor_of_a_session_never_refused_outlives_a_full_cache(full_server):
    """The session that opened a cursor is in the cache: a full cache refuses others, not its getMore,
    and the refresh keeps its cursor (its record is written)."""
    srv, raw = full_server
    raw.refresh()
    mine = {"id": uuid.uuid4()}
    cursor = raw.open_cursor(mine)
    for _ in range(2):
        raw.ok({"ping": 1}, lsid={"id": uuid.uuid4()})
    assert raw({"ping": 1}, lsid={"id": uuid.uuid4()})["code"] == 261
    assert raw.ok({"getMore": cursor, "collection": "c", "batchSize": 1}, db="lsc", lsid=mine)
    raw.refresh()
    raw.refresh()
    assert cursor in raw.open_cursors()
    raw.ok({"killCursors": "c", "cursors": [cursor]}, db="lsc")


@pytest.mark.commands("refreshLogicalSessionCacheNow", "endSessions", "startSession", "refreshSessions",
                      "killSessions", "getParameter")
def test_ended_and_expired_sessions_lose_their_cursors_at_the_refresh_only(start_server):
    srv = start_server(params={"enableTestCommands": 1, "logicalSessionRefreshMillis": DAY_MS,
                               "cursorTimeoutMillis": 1, "clientCursorMonitorFrequencySecs": 1})
    raw = Raw(srv.port)
    assert raw.ok({"getParameter": 1, "logicalSessionRefreshMillis": 1, "maxSessions": 1,
                   "localLogicalSessionTimeoutMinutes": 1, "disableLogicalSessionCacheRefresh": 1}) == {
        "logicalSessionRefreshMillis": DAY_MS, "maxSessions": 1_000_000, "localLogicalSessionTimeoutMinutes": 30,
        "disableLogicalSessionCacheRefresh": False, "ok": 1.0}
    raw.ok({"insert": "c", "documents": [{"_id": i} for i in range(5)]}, db="lsc")
    ended, expired, kept = ({"id": uuid.uuid4()} for _ in range(3))
    cursors = {name: raw.open_cursor(lsid) for name, lsid in (("ended", ended), ("expired", expired),
                                                              ("kept", kept))}
    raw.refresh()
    assert {r["_id"]["id"] for r in raw.records()} >= {ended["id"], expired["id"], kept["id"]}

    raw.ok({"endSessions": [ended]})
    assert ended["id"] not in raw.local_sessions()  # (the refresh took it out already)
    # the cursor monitor passes (a sessionless cursor times out) and spares the ended session's cursor
    witness = raw.ok({"find": "c", "batchSize": 1}, db="lsc")["cursor"]["id"]
    deadline = time.monotonic() + 60
    while witness in raw.open_cursors():
        assert time.monotonic() < deadline, "the cursor monitor never ran"
        time.sleep(0.05)
    assert set(cursors.values()) <= raw.open_cursors()

    raw.refresh()  # the ended session's cursor dies; its record leaves the collection
    assert raw.open_cursors() >= {cursors["expired"], cursors["kept"]}
    assert cursors["ended"] not in raw.open_cursors()
    assert ended["id"] not in {r["_id"]["id"] for r in raw.records()}

    # the TTL index removes an idle session's record (here: a delete, as the TTL monitor's): the next
    # refresh kills its cursors; a session used since keeps its own
    raw.ok({"delete": "system.sessions", "deletes": [{"q": {"_id.id": {"$in": [expired["id"], kept["id"]]}},
                                                      "limit": 0}]}, db="config")
    raw.ok({"ping": 1}, lsid=kept)
    raw.refresh()
    assert cursors["expired"] not in raw.open_cursors() and cursors["kept"] in raw.open_cursors()
    raw.refresh()  # idle but recorded: spared
    assert cursors["kept"] in raw.open_cursors()
    raw.close()


@pytest.mark.commands("refreshLogicalSessionCacheNow", "endSessions")
def test_the_periodic_refresh_does_the_same(start_server):
    """logicalSessionRefreshMillis: the refresh runs on its own and does what the test command does."""
    srv = start_server(params={"logicalSessionRefreshMillis": 200})
    raw = Raw(srv.port)
    raw.ok({"insert": "c", "documents": [{"_id": i} for i in range(5)]}, db="lsc")
    ended, kept = {"id": uuid.uuid4()}, {"id": uuid.uuid4()}
    doomed, spared = raw.open_cursor(ended), raw.open_cursor(kept)
    raw.ok({"endSessions": [ended]})
    deadline = time.monotonic() + 60
    while doomed in raw.open_cursors():
        assert time.monotonic() < deadline, "no refresh killed the ended session's cursor"
        time.sleep(0.05)
    assert spared in raw.open_cursors()
    assert kept["id"] in {r["_id"]["id"] for r in raw.records()}
    raw.close()


@pytest.mark.slow
@pytest.mark.commands("refreshLogicalSessionCacheNow", "hello", "startSession")
def test_the_sessions_ttl_index_expires_records_and_their_cursors(start_server, tmp_path):
    """localLogicalSessionTimeoutMinutes: hello's logicalSessionTimeoutMinutes and the TTL index's
    expireAfterSeconds, whose monitor removes the record; the next refresh kills the cursors
    (sessions_collection_auto_healing.js: a restart with another value collMods the index)."""
    dbpath = tmp_path / "ttl"
    srv = start_server(dbpath=dbpath, params={"enableTestCommands": 1})
    raw = Raw(srv.port)
    raw.refresh()
    index = {i["name"]: i for i in raw.ok({"listIndexes": "system.sessions"}, db="config")["cursor"]["firstBatch"]}
    assert index["lsidTTLIndex"]["expireAfterSeconds"] == 1800 and index["lsidTTLIndex"]["key"] == {"lastUse": 1}
    raw.close()
    assert srv.terminate() == 0

    srv = start_server(dbpath=dbpath, params={"enableTestCommands": 1, "localLogicalSessionTimeoutMinutes": 0,
                                              "ttlMonitorSleepSecs": 1, "logicalSessionRefreshMillis": DAY_MS})
    raw = Raw(srv.port)
    assert raw.ok({"hello": 1})["logicalSessionTimeoutMinutes"] == 0
    assert raw.ok({"startSession": 1})["timeoutMinutes"] == 0
    raw.ok({"insert": "c", "documents": [{"_id": i} for i in range(5)]}, db="lsc")
    session = {"id": uuid.uuid4()}
    cursor = raw.open_cursor(session)
    raw.refresh()
    index = {i["name"]: i for i in raw.ok({"listIndexes": "system.sessions"}, db="config")["cursor"]["firstBatch"]}
    assert index["lsidTTLIndex"]["expireAfterSeconds"] == 0
    assert session["id"] in {r["_id"]["id"] for r in raw.records()}
    with srv.client() as client:
        wait_ttl_passes(client)
    assert session["id"] not in {r["_id"]["id"] for r in raw.records()}
    assert cursor in raw.open_cursors()
    raw.refresh()
    assert cursor not in raw.open_cursors()
    # a dropped TTL index comes back at the next refresh
    raw.ok({"dropIndexes": "system.sessions", "index": "lsidTTLIndex"}, db="config")
    raw.refresh()
    names = [i["name"] for i in raw.ok({"listIndexes": "system.sessions"}, db="config")["cursor"]["firstBatch"]]
    assert "lsidTTLIndex" in names
    raw.close()


@pytest.mark.commands("refreshLogicalSessionCacheNow", "endSessions", "startSession", "usersInfo")
def test_end_sessions_command_js(start_server):
    """jstests/noPassthrough/end_sessions_command.js."""
    srv = start_server(params={"enableTestCommands": 1, "logicalSessionRefreshMillis": DAY_MS})
    raw = Raw(srv.port)
    raw.refresh()
    sessions = [raw.ok({"startSession": 1})["id"] for _ in range(20)]
    raw.refresh()
    assert len(raw.records()) == 20
    raw.ok({"endSessions": sessions[:10]})
    raw.refresh()
    assert len(raw.records()) == 10
    raw.ok({"endSessions": [s for s in sessions[10:] for _ in range(2)]})  # each twice
    raw.refresh()
    assert len(raw.records()) == 0
    raw.ok({"endSessions": [{"id": uuid.uuid4()}, {"id": uuid.uuid4()}]})  # never created
    raw.refresh()
    # a session used by a command (a driver's session handle), then ended
    handle = {"id": uuid.uuid4()}
    raw.ok({"usersInfo": 1}, lsid=handle)
    raw.ok({"refreshLogicalSessionCacheNow": 1}, lsid=handle)
    assert len(raw.records()) == 1
    raw.ok({"endSessions": [handle]})
    raw.refresh()
    assert len(raw.records()) == 0
    raw.close()


@pytest.mark.commands("refreshSessions", "startSession", "refreshLogicalSessionCacheNow")
def test_refresh_sessions_command_js(start_server):
    """jstests/noPassthrough/refresh_sessions_command.js (without access control): refreshSessions with
    known, new, duplicate and no ids; with maxSessions 3, a new one past the limit fails; the refresh
    writes all three."""
    srv = start_server(params={"enableTestCommands": 1, "maxSessions": 3, "logicalSessionRefreshMillis": DAY_MS})
    raw = Raw(srv.port)
    lsid3 = raw.ok({"startSession": 1})["id"]
    lsid = {"id": uuid.uuid4()}
    lsid2 = {"id": uuid.uuid4()}
    raw.ok({"refreshSessions": [lsid3]})
    raw.ok({"refreshSessions": [lsid]})  # a novel lsid
    raw.ok({"refreshSessions": [lsid, lsid2, lsid3]})
    raw.ok({"refreshSessions": [lsid, lsid, lsid, lsid]})
    raw.ok({"refreshSessions": []})
    lsid4 = {"id": uuid.uuid4()}
    reply = raw({"refreshSessions": [lsid4]})
    assert reply["code"] == 261 and reply["errmsg"] == _too_many(lsid4["id"])
    raw.refresh()
    assert len(raw.records()) == 3
    raw.close()


@pytest.mark.commands("refreshLogicalSessionCacheNow", "hello", "serverStatus", "find", "getMore")
def test_verify_session_cache_updates_js(start_server):
    """jstests/noPassthrough/verify_session_cache_updates.js: only a command carrying the lsid records
    the session (hello too); each use, a getMore too, moves its lastUse."""
    srv = start_server(params={"enableTestCommands": 1, "logicalSessionRefreshMillis": DAY_MS})
    raw = Raw(srv.port)
    raw.ok({"insert": "test", "documents": [{"a": i} for i in range(10)]}, db="test")

    def verify(n: int) -> list[dict[str, Any]]:
        raw.refresh()
        records = raw.records()
        assert len(records) == n
        return records

    verify(0)
    session = {"id": uuid.uuid4()}
    raw.ok({"hello": 1}, lsid=session)
    verify(1)
    raw.ok({"serverStatus": 1}, lsid=session)
    last_use = verify(1)[0]["lastUse"]
    time.sleep(0.01)
    raw.ok({"serverStatus": 1}, lsid=session)
    assert verify(1)[0]["lastUse"] > last_use
    reply = raw.ok({"find": "test", "batchSize": 1}, db="test", lsid=session)
    last_use = verify(1)[0]["lastUse"]
    time.sleep(0.01)
    raw.ok({"getMore": reply["cursor"]["id"], "collection": "test", "batchSize": 1}, db="test", lsid=session)
    assert verify(1)[0]["lastUse"] > last_use
    assert isinstance(last_use, datetime.datetime)
    raw.close()


@pytest.mark.commands("hello", "ping", "aggregate")
def test_a_connection_without_a_user_uses_no_session_under_access_control(auth_server, root_client):
    """Under access control a connection without a user uses no session (initializeOperationSessionInfo:
    no uid to give it): it does not enter the cache, so it counts against no maxSessions. (A kill
    command's own lsid is not vivified either: the killSessions steps above.)"""
    raw = Raw(auth_server.port)
    userless = {"id": uuid.uuid4()}
    raw.ok({"hello": 1}, lsid=userless)
    raw.ok({"ping": 1}, lsid=userless)
    listing = root_client.admin.aggregate([{"$listLocalSessions": {"allUsers": True}}])
    listed = {bytes(r["_id"]["id"]) for r in listing}
    assert listed and userless["id"].bytes not in listed  # (pymongo reads the ids as Binary)
    raw.close()


@pytest.mark.commands("serverStatus", "refreshLogicalSessionCacheNow")
def test_server_status_reports_the_session_record_cache(start_server):
    """serverStatus ``logicalSessionRecordCache`` (mongod's LogicalSessionCacheStats; Tidemark had no such
    section): the sessions used since the last refresh, and what the last refresh did: its start, how
    many sessions it wrote, ended and whose cursors it closed; the transaction reaper's counters stay 0
    (a standalone without transactions)."""
    srv = start_server(params={"enableTestCommands": 1, "logicalSessionRefreshMillis": DAY_MS})
    raw = Raw(srv.port)

    def section() -> dict[str, Any]:
        return raw.ok({"serverStatus": 1})["logicalSessionRecordCache"]

    first = section()
    assert list(first) == [
        "activeSessionsCount", "sessionsCollectionJobCount", "lastSessionsCollectionJobDurationMillis",
        "lastSessionsCollectionJobTimestamp", "lastSessionsCollectionJobEntriesRefreshed",
        "lastSessionsCollectionJobEntriesEnded", "lastSessionsCollectionJobCursorsClosed",
        "transactionReaperJobCount", "lastTransactionReaperJobDurationMillis", "lastTransactionReaperJobTimestamp",
        "lastTransactionReaperJobEntriesCleanedUp", "sessionCatalogSize"]
    assert first["sessionsCollectionJobCount"] == 0 and first["activeSessionsCount"] == 0
    assert isinstance(first["lastSessionsCollectionJobTimestamp"], datetime.datetime)
    raw.ok({"insert": "c", "documents": [{"_id": i} for i in range(5)]}, db="lsc")
    sessions = [{"id": uuid.uuid4()} for _ in range(3)]
    cursor = raw.open_cursor(sessions[0])
    for lsid in sessions[1:]:
        raw.ok({"ping": 1}, lsid=lsid)
    assert section()["activeSessionsCount"] == 3
    raw.refresh()
    after = section()
    assert after["sessionsCollectionJobCount"] == 1 and after["activeSessionsCount"] == 0
    assert (after["lastSessionsCollectionJobEntriesRefreshed"], after["lastSessionsCollectionJobEntriesEnded"],
            after["lastSessionsCollectionJobCursorsClosed"]) == (3, 0, 0)
    assert after["lastSessionsCollectionJobTimestamp"] >= first["lastSessionsCollectionJobTimestamp"]
    raw.ok({"endSessions": sessions[:2]})
    raw.refresh()
    last = section()
    assert last["sessionsCollectionJobCount"] == 2
    assert (last["lastSessionsCollectionJobEntriesRefreshed"], last["lastSessionsCollectionJobEntriesEnded"],
            last["lastSessionsCollectionJobCursorsClosed"]) == (0, 2, 1)
    assert cursor not in raw.open_cursors()
    assert (last["transactionReaperJobCount"], last["lastTransactionReaperJobEntriesCleanedUp"],
            last["sessionCatalogSize"]) == (0, 0, 0)
    raw.close()
