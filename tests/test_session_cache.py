"""mongod's logical session cache (LogicalSessionCacheImpl) vivifies a session for every command that
carries its ``lsid``; a cache holding ``maxSessions`` sessions refuses a new one with 261
TooManyLogicalSessions (``_addToCacheIfNotFull``), and a refresh takes everything out of it (the swap of
``_activeSessions`` and ``_endingSessions``), so the cache holds what was used since the last refresh.
Tidemark stopped recording new sessions silently when full (their cursors were then taken for orphans
and killed) and kept sessions for 30 minutes instead of until the refresh. Unit tests of
``tidemark.session_cache`` (the wire behaviour: tests/e2e/test_logical_session_cache.py)."""

from __future__ import annotations

import base64
import hashlib
import uuid
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark import session_cache
from tidemark.protocol.errors import MongoError
from tidemark.session_cache import SessionCache

ANON = SimpleNamespace(principal=None)
NO_USER_UID = base64.b64encode(hashlib.sha256(b"").digest()).decode()


def test_vivify_records_then_moves_the_last_use(monkeypatch):
    cache = SessionCache()
    sid = uuid.uuid4()
    monkeypatch.setattr(session_cache.time, "time", lambda: 100.0)
    cache.vivify({"id": sid}, ANON)
    monkeypatch.setattr(session_cache.time, "time", lambda: 200.0)
    cache.vivify({"id": sid}, ANON)
    assert cache.take() == ({(sid, None): 200.0}, set())


def test_unhashable_or_missing_ids_name_no_session():
    cache = SessionCache(max_sessions=0)  # (full: still no error for them)
    for lsid in ({"id": {"a": 1}}, {"id": [1, 2]}, {"x": 1}, "not a document", None):
        cache.vivify(lsid, ANON)
    assert len(cache) == 0


def test_a_full_cache_refuses_a_new_session_with_mongods_error():
    cache = SessionCache(max_sessions=2)
    a, b, c = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    cache.vivify({"id": a}, ANON)
    cache.vivify({"id": b}, ANON)
    cache.vivify({"id": a}, ANON)  # known: its use is recorded
    with pytest.raises(MongoError) as refused:
        cache.vivify({"id": c}, ANON)
    assert refused.value.code == 261
    assert refused.value.message == (
        f"Unable to add session ID {c} - {NO_USER_UID} -  -  into the cache because the number of active "
        "sessions is too high")
    with pytest.raises(MongoError):
        cache.start(ANON)
    assert {key[0] for key in cache.take()[0]} == {a, b}
    cache.vivify({"id": c}, ANON)  # the refresh emptied the cache
    assert len(cache) == 1


# a step: ("use", i) vivifies session i; ("end", i) ends it; ("take",) is a refresh; ("fail",) a refresh
# whose write failed (what it took is put back)
STEPS = st.lists(st.one_of(st.tuples(st.just("use"), st.integers(0, 5)),
                           st.tuples(st.just("end"), st.integers(0, 5)),
                           st.tuples(st.just("take")), st.tuples(st.just("fail"))), max_size=40)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 4), STEPS)
def test_the_cache_holds_what_was_used_since_the_last_refresh(limit, steps):
    """Against a model of mongod's cache: the active set, bounded by maxSessions, and the ending set,
    both emptied by a refresh (the ending sessions left out of what it writes)."""
    ids = [uuid.uuid4() for _ in range(6)]
    cache = SessionCache(max_sessions=limit)
    active: set[int] = set()
    ending: set[int] = set()
    for step in steps:
        if step[0] == "use":
            if step[1] in active or len(active) < limit:
                cache.vivify({"id": ids[step[1]]}, ANON)
                active.add(step[1])
            else:
                with pytest.raises(MongoError):
                    cache.vivify({"id": ids[step[1]]}, ANON)
        elif step[0] == "end":
            cache.end([ids[step[1]]])
            ending.add(step[1])
        else:
            taken, ended = cache.take()
            assert {key[0] for key in taken} == {ids[i] for i in active - ending}
            assert {session_id for session_id, _owner in ended} == {ids[i] for i in ending}
            if step[0] == "fail":
                cache.put_back(taken, ended)
                active -= ending
            else:
                active, ending = set(), set()
        assert {r["_id"]["id"] for r in cache.records(None)} == {ids[i] for i in active}
