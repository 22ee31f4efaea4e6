"""Principals are compared as (user, db) pairs plus the user id, never as a joined "user@db" string:
property tests of the comparison helpers and of every registry that decides ownership (cursors,
operations, sessions), with names full of '@', '.', '$' and unicode, and deliberate collisions of
their joined form (user "a@b" of db "c" vs user "a" of db "b@c")."""

from __future__ import annotations

import uuid
from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.auth.names import ANYONE, Principal, UserName, same_principal, session_digest, visible_to
from tidemark.cursors import CursorRegistry
from tidemark.operations import OperationRegistry
from tidemark.session_cache import SessionCache, ending_matcher

PART = st.text(alphabet=st.sampled_from("ab@.$é_-ü日Z9 "), min_size=1, max_size=6)


@st.composite
def two_principals(draw) -> tuple[Principal, Principal]:
    """Two distinct principals; often with the same joined "user@db" text, sometimes the same name
    with another user id (a dropped and re-created user)."""
    kind = draw(st.sampled_from(["collision", "random", "recreated"]))
    if kind == "collision":
        a, b, c = draw(PART), draw(PART), draw(PART)
        first, second = UserName(f"{a}@{b}", c), UserName(a, f"{b}@{c}")
    elif kind == "recreated":
        first = second = UserName(draw(PART), draw(PART))
    else:
        first, second = UserName(draw(PART), draw(PART)), UserName(draw(PART), draw(PART))
    p1, p2 = Principal(first, uuid.uuid4()), Principal(second, uuid.uuid4())
    return p1, p2


def _conn(i: int, principal: Principal | None) -> SimpleNamespace:
    users = [principal.name.document()] if principal is not None else []
    return SimpleNamespace(id=i, peer=f"127.0.0.1:{1000 + i}", client=None, principal=principal, users=users)


def test_a_joined_string_is_not_a_user_name():
    assert UserName("a@b", "c").display() == UserName("a", "b@c").display() == "a@b@c"
    assert UserName("a@b", "c") != UserName("a", "b@c")
    assert UserName("a", "b") != "a@b" and len({UserName("a@b", "c"), UserName("a", "b@c")}) == 2
    assert not same_principal(None, None) and not visible_to(None, None) and visible_to(None, ANYONE)


@settings(max_examples=300, deadline=None)
@given(two_principals())
def test_comparisons_follow_the_pair_and_the_user_id(pair):
    p1, p2 = pair
    assert p1 != p2 and not same_principal(p1, p2) and not same_principal(p2, p1)
    assert same_principal(p1, Principal(UserName(p1.name.user, p1.name.db), p1.user_id))
    assert not visible_to(p1, p2) and visible_to(p1, p1) and visible_to(p1, ANYONE)
    assert not same_principal(p1, None) and not same_principal(None, p1)
    assert (p1.name == p2.name) == ((p1.name.user, p1.name.db) == (p2.name.user, p2.name.db))
    assert (session_digest(p1.name) == session_digest(p2.name)) == (p1.name.display() == p2.name.display())


@settings(max_examples=200, deadline=None)
@given(two_principals())
def test_cursor_registry_ownership(pair):
    mine, theirs = pair
    registry = CursorRegistry()
    lsid = {"id": uuid.uuid4()}
    cursor = registry.open("db.c", iter(range(10)), lsid=lsid)
    cursor.owner = mine
    assert [e["cursor"]["cursorId"] for e in registry.report_idle("h", owner=theirs)] == []
    assert registry.report_idle("h", owner=None) == []
    assert len(registry.report_idle("h", owner=mine)) == 1 and len(registry.report_idle("h")) == 1
    assert registry.session_keys() == {(lsid["id"], mine)}
    assert registry.kill_sessions(ending_matcher({(lsid["id"], theirs)})) == 0 and registry.get(cursor.id) is cursor
    assert registry.kill_sessions(ending_matcher({(lsid["id"], mine)})) == 1 and registry.get(cursor.id) is None


@settings(max_examples=200, deadline=None)
@given(two_principals())
def test_operation_registry_ownership(pair):
    mine, theirs = pair
    registry = OperationRegistry()
    op = registry.start(_conn(1, mine), "find", {"find": "c", "$db": "d"}, "d.c", None)
    registry.start(_conn(2, None), "find", {"find": "c", "$db": "d"}, "d.c", None)
    assert [e["opid"] for e in registry.report("h", owner=mine)] == [op.opid]
    assert registry.report("h", owner=theirs) == [] and registry.report("h", owner=None) == []
    assert len(registry.report("h")) == 2


@settings(max_examples=200, deadline=None)
@given(two_principals())
def test_session_cache_ownership(pair):
    mine, theirs = pair
    cache = SessionCache()
    session_id = uuid.uuid4()
    cache.vivify({"id": session_id}, _conn(1, mine))
    cache.vivify({"id": session_id}, _conn(2, theirs))  # the same id used by another user: another session
    assert len(cache) == 2
    cache.end([session_id], owner=theirs)  # ends only theirs, at the next refresh
    active, ending = cache.take()
    assert set(active) == {(session_id, mine)} and ending == {(session_id, theirs)}
    cache.put_back(active, set())
    records = cache.records(lambda owner: same_principal(owner, mine))
    assert len(records) == 1 and records[0]["user"] == {"name": mine.name.display()}
    assert cache.records(lambda owner: same_principal(owner, theirs)) == []
