"""``$listSessions`` (server/query/stage_list_sessions.py): mongod's spec errors, its namespace and
first-stage rules, and the records kept for each spec (by ``_id.uid``, the SHA-256 of "user@db")."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.protocol.errors import MongoError
from tidemark.query.pipeline import PipelineContext, parse_pipeline
from tidemark.query.stage_list_sessions import user_digest

SESSIONS = PipelineContext(db="config", coll="system.sessions")
NO_USER = hashlib.sha256(b"").digest()


def run(spec, docs, ctx=SESSIONS):
    (stage,) = parse_pipeline([{"$listSessions": spec}], ctx)
    return list(stage.apply(iter(docs)))


def record(n: int, uid: bytes) -> dict:
    return {"_id": {"id": n, "uid": uid}, "lastUse": n}


@pytest.mark.parametrize("spec, code", [
    (1, 14), ("x", 14), ([], 14),
    ({"other": 1}, 40415),
    ({"allUsers": 1}, 14),
    ({"users": {}}, 14), ({"users": [1]}, 14), ({"users": [{"user": "a"}]}, 40414),
    ({"users": [{"user": "a", "db": 1}]}, 14), ({"users": [{"user": "a", "db": "b", "x": 1}]}, 40415),
    ({"allUsers": True, "users": [{"user": "a", "db": "b"}]}, 12),
])
def test_spec_errors_are_mongods(spec, code):
    with pytest.raises(MongoError) as info:
        run(spec, [])
    assert info.value.code == code


def test_runs_only_first_and_on_the_sessions_collection():
    with pytest.raises(MongoError) as info:
        run({}, [], PipelineContext(db="admin", coll="system.collections"))
    assert info.value.code == 73
    assert "may only be run against config.system.sessions" in str(info.value)
    with pytest.raises(MongoError) as info:
        parse_pipeline([{"$match": {}}, {"$listSessions": {}}], SESSIONS)
    assert info.value.code == 40602


USERS = st.sampled_from([("alice", "admin"), ("bob", "test"), ("alice", "test"), None])


@settings(max_examples=100, deadline=None)
@given(owners=st.lists(USERS, max_size=8), asked=st.lists(USERS.filter(lambda u: u is not None), max_size=3),
       all_users=st.booleans())
def test_keeps_the_records_of_the_users_asked_for(owners, asked, all_users):
    uids = [user_digest(*o) if o is not None else NO_USER for o in owners]
    docs = [record(i, uid) for i, uid in enumerate(uids)] + [{"_id": 5}, {"_id": {"id": 1}}]
    if all_users:
        assert run({"allUsers": True}, docs) == docs
        return
    if asked:
        wanted = {user_digest(*u) for u in asked}
        spec = {"users": [{"user": u, "db": d} for u, d in asked]}
    else:  # no operation bound: the caller has no user, its own are the sessions used without one
        wanted, spec = {NO_USER}, {}
    assert run(spec, docs) == [d for d in docs[:len(uids)] if d["_id"]["uid"] in wanted]
