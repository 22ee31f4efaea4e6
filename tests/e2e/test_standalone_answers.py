"""What tools get from a standalone: replication commands (76), transactions (20 / 125), change streams
(40573 through pymongo's watch()), $listLocalSessions, and admin/config/local in listDatabases."""

from __future__ import annotations

import pytest
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
