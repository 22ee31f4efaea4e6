"""The logical-session cache's ``touch`` (``tidemark.session_cache``), which dispatch calls for every
command carrying an ``lsid``: a session is recorded (or its last use refreshed) under (id, owner); an
id that cannot be hashed (a document, an array) names no session; a full cache records a new
session only when expiring idle ones made room, and still refreshes the sessions it holds."""

from __future__ import annotations

import uuid
from types import SimpleNamespace

from tidemark import session_cache
from tidemark.session_cache import SessionCache

ANON = SimpleNamespace(principal=None)


def test_touch_records_then_refreshes(monkeypatch):
    cache = SessionCache()
    sid = uuid.uuid4()
    monkeypatch.setattr(session_cache.time, "time", lambda: 100.0)
    cache.touch({"id": sid}, ANON)
    monkeypatch.setattr(session_cache.time, "time", lambda: 200.0)
    cache.touch({"id": sid}, ANON)
    assert cache._sessions == {(sid, None): 200.0}


def test_unhashable_or_missing_ids_name_no_session():
    cache = SessionCache()
    for lsid in ({"id": {"a": 1}}, {"id": [1, 2]}, {"x": 1}, "not a document", None):
        cache.touch(lsid, ANON)
    assert len(cache) == 0


def test_a_full_cache_refreshes_known_sessions_and_refuses_new_live_ones(monkeypatch):
    monkeypatch.setattr(session_cache, "MAX_SESSIONS", 2)
    cache = SessionCache()
    a, b, c = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    monkeypatch.setattr(session_cache.time, "time", lambda: 1000.0)
    cache.touch({"id": a}, ANON)
    cache.touch({"id": b}, ANON)
    monkeypatch.setattr(session_cache.time, "time", lambda: 1001.0)
    cache.touch({"id": c}, ANON)  # full of live sessions: not recorded
    cache.touch({"id": a}, ANON)  # known: refreshed
    cache.touch({"id": [1]}, ANON)  # unhashable, full cache: still no session, no error
    assert cache._sessions == {(a, None): 1001.0, (b, None): 1000.0}


def test_a_full_cache_expires_idle_sessions_to_make_room(monkeypatch):
    monkeypatch.setattr(session_cache, "MAX_SESSIONS", 2)
    cache = SessionCache()
    a, b, c = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    monkeypatch.setattr(session_cache.time, "time", lambda: 1000.0)
    cache.touch({"id": a}, ANON)
    monkeypatch.setattr(session_cache.time, "time", lambda: 1000.0 + session_cache.TIMEOUT_SECONDS / 2)
    cache.touch({"id": b}, ANON)
    later = 1000.0 + session_cache.TIMEOUT_SECONDS + 1
    monkeypatch.setattr(session_cache.time, "time", lambda: later)
    cache.touch({"id": c}, ANON)  # a expired: c takes its place
    assert cache._sessions == {(b, None): 1000.0 + session_cache.TIMEOUT_SECONDS / 2, (c, None): later}
