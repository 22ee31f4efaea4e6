"""mongod 7.0 never times out an idle cursor opened in a session (a command carrying an ``lsid``, as every
driver's implicit session does) unless ``enableTimeoutOfInactiveSessionCursors`` is true (default false,
settable at start-up and at runtime; CursorManager::cursorShouldTimeout_inlock): such a cursor lives as
long as its session and dies with it — at once on killSessions / killAllSessions, and at the session
cache's refresh for a session ended by endSessions or expired (LogicalSessionCacheImpl::_refresh).
Tidemark timed out every idle cursor after cursorTimeoutMillis, so idle driver cursors died.

The timeouts are observed without relying on the machine's speed: cursorTimeoutMillis is 1 ms, and a
cursor opened without a session, idle as long as the others, shows when the reaper has run.
"""

from __future__ import annotations

import datetime
import time
import uuid
from typing import Any

import pytest
from wire_client import WireClient

DB = "sct"
# (collection, how a cursor over it is opened): find and aggregate, regular and time-series
OPENERS = [
    ("regular", lambda coll: {"find": coll, "batchSize": 1}),
    ("regular", lambda coll: {"aggregate": coll, "pipeline": [{"$match": {}}], "cursor": {"batchSize": 1}}),
    ("ts", lambda coll: {"find": coll, "batchSize": 1}),
    ("ts", lambda coll: {"aggregate": coll, "pipeline": [], "cursor": {"batchSize": 1}}),
]


def _fill(srv: Any) -> None:
    with srv.client() as client:
        db = client[DB]
        db.regular.insert_many([{"_id": i} for i in range(20)])
        db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
        base = datetime.datetime(2024, 1, 1)
        db.ts.insert_many([{"t": base + datetime.timedelta(seconds=i), "m": i % 3} for i in range(20)])


def _open(wire: WireClient, lsid: dict | None) -> list[tuple[int, str]]:
    """One cursor per opener, in the session ``lsid`` (None: outside any session)."""
    opened = []
    for coll, command in OPENERS:
        cmd = {**command(coll), "$db": DB}
        if lsid is not None:
            cmd["lsid"] = lsid
        reply = wire.command(cmd)
        assert reply["ok"] == 1.0 and reply["cursor"]["id"], reply
        opened.append((reply["cursor"]["id"], coll))
    return opened


def _alive(wire: WireClient, cursors: list[tuple[int, str]], lsid: dict | None) -> list[bool]:
    out = []
    for cursor_id, coll in cursors:
        cmd: dict[str, Any] = {"getMore": cursor_id, "collection": coll, "batchSize": 1, "$db": DB}
        if lsid is not None:
            cmd["lsid"] = lsid
        reply = wire.command(cmd)
        assert reply["ok"] == 1.0 or reply["code"] == 43, reply
        out.append(reply["ok"] == 1.0)
    return out


def _timed_out(wire: WireClient) -> int:
    return wire.command({"serverStatus": 1, "$db": "admin"})["metrics"]["cursor"]["timedOut"]


def _wait_for_reap(wire: WireClient, at_least: int) -> None:
    deadline = time.monotonic() + 60  # (a bound for a stalled machine, not a timing assumption)
    while _timed_out(wire) < at_least:
        assert time.monotonic() < deadline, "the cursor reaper never ran"
        time.sleep(0.05)


@pytest.mark.slow
@pytest.mark.commands("find", "aggregate", "getMore", "setParameter", "getParameter", "serverStatus")
def test_session_cursors_outlive_the_cursor_timeout_unless_enabled(start_server):
    srv = start_server(params={"cursorTimeoutMillis": 1, "clientCursorMonitorFrequencySecs": 1})
    _fill(srv)
    lsid = {"id": uuid.uuid4()}
    with WireClient(srv.port) as wire:
        assert wire.command({"getParameter": 1, "enableTimeoutOfInactiveSessionCursors": 1, "$db": "admin"})[
            "enableTimeoutOfInactiveSessionCursors"] is False
        in_session = _open(wire, lsid)
        sessionless = _open(wire, None)
        # the reaper's pass that timed out the sessionless cursors saw the session's ones idle as long
        _wait_for_reap(wire, len(sessionless))
        assert _alive(wire, sessionless, None) == [False] * len(OPENERS)
        assert _alive(wire, in_session, lsid) == [True] * len(OPENERS)
        assert _timed_out(wire) == len(sessionless)

        # at runtime, the parameter lets the session's cursors time out like the others
        reply = wire.command({"setParameter": 1, "enableTimeoutOfInactiveSessionCursors": True, "$db": "admin"})
        assert reply["ok"] == 1.0 and reply["was"] is False
        _wait_for_reap(wire, 2 * len(OPENERS))
        assert _alive(wire, in_session, lsid) == [False] * len(OPENERS)


@pytest.mark.slow
@pytest.mark.commands("find", "getMore", "getParameter")
def test_the_parameter_set_at_startup_times_out_session_cursors(start_server):
    srv = start_server(params={"cursorTimeoutMillis": 1, "clientCursorMonitorFrequencySecs": 1,
                               "enableTimeoutOfInactiveSessionCursors": "true"})
    _fill(srv)
    lsid = {"id": uuid.uuid4()}
    with WireClient(srv.port) as wire:
        assert wire.command({"getParameter": 1, "enableTimeoutOfInactiveSessionCursors": 1, "$db": "admin"})[
            "enableTimeoutOfInactiveSessionCursors"] is True
        in_session = _open(wire, lsid)
        _wait_for_reap(wire, len(OPENERS))
        assert _alive(wire, in_session, lsid) == [False] * len(OPENERS)


def _ended_by_end_sessions(wire: WireClient, lsid: dict) -> None:
    assert wire.command({"endSessions": [lsid], "$db": "admin"})["ok"] == 1.0
    # mongod kills an ended session's cursors at its next session-cache refresh
    assert wire.command({"refreshLogicalSessionCacheNow": 1, "$db": "admin"})["ok"] == 1.0


def _ended_by_kill_sessions(wire: WireClient, lsid: dict) -> None:
    assert wire.command({"killSessions": [lsid], "$db": "admin"})["ok"] == 1.0


def _ended_by_kill_all_sessions(wire: WireClient, lsid: dict) -> None:
    assert wire.command({"killAllSessions": [], "$db": "admin"})["ok"] == 1.0


@pytest.mark.commands("find", "aggregate", "getMore", "endSessions", "killSessions", "killAllSessions",
                      "refreshLogicalSessionCacheNow")
@pytest.mark.parametrize("end", [_ended_by_end_sessions, _ended_by_kill_sessions, _ended_by_kill_all_sessions])
def test_session_cursors_die_with_their_session(start_server, end):
    srv = start_server(params={"enableTestCommands": 1})
    _fill(srv)
    doomed, spared = {"id": uuid.uuid4()}, {"id": uuid.uuid4()}
    with WireClient(srv.port) as wire:
        cursors = _open(wire, doomed)
        others = _open(wire, spared) if end is not _ended_by_kill_all_sessions else []
        sessionless = _open(wire, None)
        end(wire, doomed)
        assert _alive(wire, cursors, doomed) == [False] * len(OPENERS)
        assert _alive(wire, others, spared) == [True] * len(others)
        assert _alive(wire, sessionless, None) == [True] * len(OPENERS)
