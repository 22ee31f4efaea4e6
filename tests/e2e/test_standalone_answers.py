"""What tools get from a standalone: replication commands (76), transactions (20 / 125), change streams
(40573 through pymongo's watch()), $listLocalSessions, and admin/config/local in listDatabases.

appendOplogNote (oplog_note.cpp) answers 76 "Must have replication set up to run \"appendOplogNote\""
whatever its arguments (admin only); setIndexCommitQuorum (set_index_commit_quorum.idl,
IndexBuildsCoordinator::setCommitQuorum) parses its arguments, then answers 27 without index names, 26
for a missing collection and 27 "Cannot find an index build ..." otherwise (no build is ever in progress
here). Tidemark answered both with 59 CommandNotFound."""

from __future__ import annotations

import pytest
from bson.son import SON
from hypothesis import given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

NO_AUTH_UID = bytes.fromhex("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")


def _error(call) -> OperationFailure:
    with pytest.raises(OperationFailure) as e:
        call()
    return e.value


@pytest.mark.commands("replSetGetStatus", "replSetGetConfig", "replSetInitiate")
def test_replication_commands_answer_no_replication_enabled(client, db):
    for name in ("replSetGetStatus", "replSetGetConfig"):
        e = _error(lambda name=name: client.admin.command(name))
        assert (e.code, e.details["codeName"], e.details["errmsg"]) == (76, "NoReplicationEnabled",
                                                                        "not running with --replSet")
    e = _error(lambda: client.admin.command("replSetInitiate"))
    assert e.code == 76 and "not started with replication enabled" in str(e)
    assert _error(lambda: db.command("replSetGetStatus")).code == 13  # admin only, as mongod


REPL_SET_COMMANDS = ("replSetFreeze", "replSetStepDown", "replSetStepUp", "replSetMaintenance", "replSetSyncFrom",
                     "replSetAbortPrimaryCatchUp", "replSetReconfig", "replSetGetRBID", "replSetUpdatePosition",
                     "replSetRequestVotes")


@pytest.mark.commands("replSetFreeze", "replSetStepDown", "replSetStepUp", "replSetMaintenance", "replSetSyncFrom",
                      "replSetAbortPrimaryCatchUp", "replSetReconfig", "replSetGetRBID", "replSetUpdatePosition",
                      "replSetRequestVotes", "replSetHeartbeat")
@settings(max_examples=30, deadline=None)
@given(name=st.sampled_from(REPL_SET_COMMANDS), value=st.one_of(st.integers(-5, 100), st.booleans(),
                                                                 st.text(max_size=5), st.just({})))
def test_repl_set_commands_need_replication_before_their_arguments(client, name, value):
    """repl_set_commands.cpp: each ReplSetCommand calls checkReplEnabledForCommand first (Tidemark: 59)."""
    e = _error(lambda: client.admin.command({name: value, "force": True}))
    assert (e.code, e.details["errmsg"]) == (76, "not running with --replSet")
    assert _error(lambda: client.test.command({name: value})).code == 13  # admin only
    e = _error(lambda: client.admin.command("replSetHeartbeat", "rs0"))
    assert (e.code, e.details["errmsg"]) == (76, "not running using replication")


@pytest.mark.commands("commitTransaction", "abortTransaction")
def test_transaction_commands_answer_like_a_standalone(client):
    for name in ("commitTransaction", "abortTransaction"):
        e = _error(lambda name=name: client.admin.command(name))
        assert (e.code, str(e.details["errmsg"])) == (125, f"{name} must be run within a transaction")
    with client.start_session() as session:
        e = _error(lambda: client.admin.command("commitTransaction", txnNumber=1, autocommit=False,
                                                session=session))
        assert e.code == 20 and "only allowed on a replica set member or mongos" in str(e)


@pytest.mark.commands("aggregate")
def test_watch_fails_with_40573_like_a_standalone_mongod(client, db):
    db.c.insert_one({})
    for target in (db.c, db, client):
        e = _error(lambda target=target: target.watch())
        assert e.code == 40573 and "only supported on replica sets" in str(e)


@pytest.mark.commands("aggregate", "startSession", "endSessions", "refreshSessions")
def test_list_local_sessions_lists_the_sessions_this_server_has_seen(client, db):
    with client.start_session() as session:
        db.c.insert_one({}, session=session)
        mine = session.session_id["id"]
        listed = list(client.admin.aggregate([{"$listLocalSessions": {}}]))
        record = next(r for r in listed if r["_id"]["id"] == mine)
        assert record["_id"]["uid"] == NO_AUTH_UID and "lastUse" in record  # sha256("") without auth
        everyone = list(db.aggregate([{"$listLocalSessions": {"allUsers": True}},
                                      {"$match": {"_id.id": mine}}]))
        assert [r["_id"]["id"] for r in everyone] == [mine]
        other = list(client.admin.aggregate([{"$listLocalSessions": {"users": [{"user": "x", "db": "y"}]}}]))
        assert mine not in [r["_id"]["id"] for r in other]
    started = client.admin.command("startSession")["id"]
    client.admin.command("refreshSessions", [started])
    ids = [r["_id"]["id"] for r in client.admin.aggregate([{"$listLocalSessions": {"allUsers": True}}])]
    assert started["id"] in ids
    # mongod's endSessions only notes the session as ending: the cache keeps it until its next refresh
    # (tests/e2e/test_logical_session_cache.py)
    client.admin.command("endSessions", [started])
    ids = [r["_id"]["id"] for r in client.admin.aggregate([{"$listLocalSessions": {"allUsers": True}}])]
    assert started["id"] in ids


@pytest.mark.commands("aggregate")
def test_list_local_sessions_errors_match_mongod(client, db):
    db.c.insert_one({})
    assert _error(lambda: list(db.c.aggregate([{"$listLocalSessions": {}}]))).code == 73
    assert _error(lambda: list(db.aggregate([{"$listLocalSessions": 1}]))).code == 14
    assert _error(lambda: list(db.aggregate([{"$listLocalSessions": {"bogus": 1}}]))).code == 40415
    assert _error(lambda: list(db.aggregate([
        {"$listLocalSessions": {"allUsers": True, "users": [{"user": "a", "db": "b"}]}}]))).code == 12


@pytest.mark.commands("listDatabases")
def test_list_databases_shows_admin_config_and_local_like_mongod(client):
    reply = client.admin.command("listDatabases")
    names = [d["name"] for d in reply["databases"]]
    assert {"admin", "config", "local"} <= set(names) and names == sorted(names)
    assert all(d["sizeOnDisk"] > 0 and d["empty"] is False
               for d in reply["databases"] if d["name"] in ("admin", "config", "local"))
    assert client.admin.command("listDatabases", nameOnly=True, filter={"name": "local"})["databases"] == [
        {"name": "local"}]


@pytest.mark.commands("appendOplogNote")
@pytest.mark.parametrize("extra", [{}, {"data": {"msg": "x"}}, {"data": 1}, {"data": {}, "maxClusterTime": 5}])
def test_append_oplog_note_needs_replication(client, db, extra):
    e = _error(lambda: client.admin.command(SON([("appendOplogNote", 1), *extra.items()])))
    assert (e.code, e.details["errmsg"]) == (76, 'Must have replication set up to run "appendOplogNote"')
    assert _error(lambda: db.command("appendOplogNote", 1, data={})).code == 13  # admin only


QUORUMS = st.one_of(st.integers(-3, 60), st.floats(-2, 60), st.text(max_size=4), st.booleans(), st.none(),
                    st.dictionaries(st.text("ab", max_size=1), st.integers(0, 2), max_size=1))


def _quorum_error(value) -> str | None:
    """CommitQuorumOptions::deserializerFromBSON's verdict on ``value``."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return None if 0 <= int(value) <= 50 else "commitQuorum has to be a non-negative number and not greater than 50"
    if isinstance(value, str):
        return None if value else "commitQuorum can't be an empty string"
    return "commitQuorum has to be a number or a string"


@pytest.mark.commands("setIndexCommitQuorum")
@settings(max_examples=40, deadline=None)
@given(names=st.lists(st.text("xy_1", min_size=1, max_size=4), max_size=3), quorum=QUORUMS,
       target=st.sampled_from(["coll", "missing", "view"]))
def test_set_index_commit_quorum_finds_no_index_build(client, names, quorum, target):
    db = client.quorum_db
    if "coll" not in db.list_collection_names():
        db.coll.create_index("x")
        db.command("create", "view", viewOn="coll", pipeline=[])
    cmd = SON([("setIndexCommitQuorum", target), ("indexNames", names), ("commitQuorum", quorum)])
    e = _error(lambda: db.command(cmd))
    parse = _quorum_error(quorum)
    ns = f"quorum_db.{target}"
    if parse is not None:
        assert (e.code, e.details["errmsg"]) == (9, parse)
    elif not names:
        assert (e.code, e.details["errmsg"]) == (
            27, f"Cannot set a new commit quorum on an index build in collection '{ns}' without providing any indexes.")
    elif target == "missing":
        assert (e.code, e.details["errmsg"]) == (26, f"Collection '{ns}' was not found.")
    elif target == "view":
        assert e.code == 166
    else:
        assert (e.code, e.details["errmsg"]) == (
            27, f"Cannot find an index build on collection '{ns}' with the provided index names")


@pytest.mark.commands("setIndexCommitQuorum")
def test_set_index_commit_quorum_arguments(db):
    for cmd, code in [
        (SON([("setIndexCommitQuorum", "c"), ("commitQuorum", 1)]), 40414),
        (SON([("setIndexCommitQuorum", "c"), ("indexNames", ["a"])]), 40414),
        (SON([("setIndexCommitQuorum", "c"), ("indexNames", "a"), ("commitQuorum", 1)]), 14),
        (SON([("setIndexCommitQuorum", "c"), ("indexNames", [1]), ("commitQuorum", 1)]), 14),
        (SON([("setIndexCommitQuorum", "c"), ("indexNames", ["a"]), ("commitQuorum", 1), ("x", 1)]), 40415),
        (SON([("setIndexCommitQuorum", 5), ("indexNames", ["a"]), ("commitQuorum", 1)]), 73),
    ]:
        assert _error(lambda cmd=cmd: db.command(cmd)).code == code, cmd
