"""Operator commands answer as mongod 7.0 standalone: fsync (and its lock), fsyncUnlock, shutdown,
compact, reIndex, dbHash."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from pymongo.errors import AutoReconnect, ConnectionFailure, OperationFailure


@pytest.mark.commands("fsync")
def test_fsync_flushes_and_answers_num_files(client):
    reply = client.admin.command("fsync")
    assert reply == {"numFiles": 1, "ok": 1.0}


@pytest.mark.commands("fsync")
def test_fsync_is_admin_only(client):
    with pytest.raises(OperationFailure) as err:
        client.test.command("fsync")
    assert err.value.code == 13


@pytest.mark.commands("fsyncUnlock")
def test_fsync_unlock_when_not_locked_is_illegal_operation(client):
    with pytest.raises(OperationFailure) as err:
        client.admin.command("fsyncUnlock")
    assert err.value.code == 20
    assert err.value.details["errmsg"] == "fsyncUnlock called when not locked"


def _wait_for(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


@pytest.mark.slow
@pytest.mark.commands("fsync", "fsyncUnlock", "currentOp", "killOp")
def test_fsync_lock_blocks_writes_not_reads_and_nests(start_server):
    srv = start_server()
    admin_client = srv.client()
    coll = admin_client.opsdb.things
    coll.insert_one({"_id": 0})
    locked = admin_client.admin.command({"fsync": 1, "lock": True})
    assert locked["lockCount"] == 1
    assert locked["info"] == "now locked against writes, use db.fsyncUnlock() to unlock"
    assert locked["seeAlso"] == "http://dochub.mongodb.org/core/fsynccommand"
    assert admin_client.admin.command({"fsync": 1, "lock": True})["lockCount"] == 2
    op = admin_client.admin.command("currentOp")
    assert op["fsyncLock"] is True

    writer = srv.client()
    done = threading.Event()
    errors = []

    def write():
        try:
            writer.opsdb.things.insert_one({"_id": 1})
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        done.set()

    thread = threading.Thread(target=write)
    thread.start()
    assert _wait_for(lambda: any(o.get("op") == "insert" and o.get("waitingForLock")
                                 for o in admin_client.admin.command("currentOp")["inprog"]))
    # reads go on, and other connections are served (the loop is not blocked)
    assert coll.find_one({"_id": 0}) == {"_id": 0}
    assert admin_client.admin.command("ping")["ok"] == 1.0
    assert not done.is_set()
    first = admin_client.admin.command("fsyncUnlock")
    assert first == {"info": "fsyncUnlock completed", "lockCount": 1, "ok": 1.0}
    time.sleep(0.2)
    assert not done.is_set()  # still locked once
    assert admin_client.admin.command("fsyncUnlock")["lockCount"] == 0
    assert done.wait(10)
    thread.join()
    assert not errors
    assert coll.count_documents({}) == 2
    assert "fsyncLock" not in admin_client.admin.command("currentOp")

    # killOp and maxTimeMS end a write waiting under the lock
    admin_client.admin.command({"fsync": 1, "lock": True})
    with pytest.raises(OperationFailure) as err:
        writer.opsdb.command({"insert": "things", "documents": [{"_id": 2}], "maxTimeMS": 200})
    assert err.value.code == 50

    def killed_write():
        try:
            writer.opsdb.things.insert_one({"_id": 3})
        except OperationFailure as exc:
            errors.append(exc)

    thread = threading.Thread(target=killed_write)
    thread.start()
    assert _wait_for(lambda: any(o.get("op") == "insert" and o.get("waitingForLock")
                                 for o in admin_client.admin.command("currentOp")["inprog"]))
    opid = next(o["opid"] for o in admin_client.admin.command("currentOp")["inprog"]
                if o.get("op") == "insert" and o.get("waitingForLock"))
    admin_client.admin.command({"killOp": 1, "op": opid})
    thread.join(10)
    assert errors and errors[0].code == 11601
    admin_client.admin.command("fsyncUnlock")
    assert coll.count_documents({}) == 2
    writer.close()
    admin_client.close()


@pytest.mark.slow
@pytest.mark.commands("shutdown")
def test_shutdown_closes_the_connection_and_exits_zero(start_server):
    srv = start_server()
    mongo = srv.client()
    mongo.opsdb.t.insert_one({"x": 1})
    with pytest.raises((AutoReconnect, ConnectionFailure)):
        mongo.admin.command({"shutdown": 1, "force": True, "timeoutSecs": 5})
    assert srv.process.wait(30) == 0
    mongo.close()
    assert "Terminating via shutdown command" in srv.log_text()
    srv.start()
    with srv.client() as again:
        assert again.opsdb.t.count_documents({}) == 1


@pytest.mark.commands("shutdown")
def test_shutdown_only_on_admin(client):
    with pytest.raises(OperationFailure) as err:
        client.test.command("shutdown")
    assert err.value.code == 13


@pytest.mark.commands("compact")
def test_compact_answers_bytes_freed(db):
    db.c.insert_many([{"i": i} for i in range(10)])
    reply = db.command("compact", "c")
    assert reply == {"bytesFreed": 0, "ok": 1.0}
    with pytest.raises(OperationFailure) as err:
        db.command("compact", "missing")
    assert err.value.code == 26


@pytest.mark.commands("compact")
def test_compact_on_timeseries_runs_on_buckets(db):
    db.create_collection("ts", timeseries={"timeField": "t"})
    assert db.command("compact", "ts")["bytesFreed"] == 0


@pytest.mark.commands("reIndex")
def test_reindex_rebuilds_indexes(db):
    db.r.insert_many([{"a": i, "b": [i, i + 1]} for i in range(20)])
    db.r.create_index("a")
    db.r.create_index([("b", 1)], name="b_multi")
    reply = db.command("reIndex", "r")
    assert reply["nIndexesWas"] == 3
    assert reply["nIndexes"] == 3
    assert [i["name"] for i in reply["indexes"]] == ["_id_", "a_1", "b_multi"]
    assert db.r.find({"a": 5}).hint("a_1").next()["a"] == 5
    assert db.r.count_documents({"b": 3}, hint="b_multi") == 2
    assert db.command("validate", "r")["valid"] is True


@pytest.mark.commands("reIndex", "compact")
def test_reindex_and_compact_refuse_views_and_missing_collections(db):
    with pytest.raises(OperationFailure) as err:
        db.command("reIndex", "nope")
    assert err.value.code == 26 and err.value.details["errmsg"] == "collection does not exist"
    db.create_collection("base")
    db.command({"create": "v", "viewOn": "base", "pipeline": []})
    db.create_collection("ts", timeseries={"timeField": "t"})
    for name in ("v", "ts"):
        with pytest.raises(OperationFailure) as err:
            db.command("reIndex", name)
        assert err.value.code == 166 and err.value.details["errmsg"] == "can't re-index a view"
    with pytest.raises(OperationFailure) as err:
        db.command("compact", "v")
    assert err.value.code == 166 and err.value.details["errmsg"] == "can't compact a view"


@pytest.mark.slow
@pytest.mark.commands("dbHash", "dbhash")
def test_db_hash_shape_and_stability(db, start_server):
    docs = [{"_id": i, "v": "x" * i} for i in range(30)]
    db.h.insert_many(list(reversed(docs)))
    db.create_collection("cap", capped=True, size=4096)
    db.cap.insert_one({"_id": 1})
    reply = db.command("dbHash")
    assert set(reply) >= {"host", "collections", "capped", "uuids", "md5", "timeMillis", "ok"}
    assert set(reply["collections"]) == {"h", "cap"}
    assert reply["capped"] == ["cap"]
    assert set(reply["uuids"]) == {"h", "cap"}
    import hashlib

    import bson
    expected = hashlib.md5(b"".join(bson.encode(d) for d in docs)).hexdigest()  # noqa: S324
    assert reply["collections"]["h"] == expected
    only = db.command({"dbhash": 1, "collections": ["h"]})
    assert set(only["collections"]) == {"h"}

    other = start_server()
    with other.client() as mongo:
        odb = mongo[db.name]
        odb.h.insert_many(docs)  # another order, another server: same hash
        assert odb.command({"dbHash": 1, "collections": ["h"]})["collections"]["h"] == expected



@pytest.mark.slow
@pytest.mark.commands("fsync", "fsyncUnlock", "aggregate")
def test_fsync_lock_waits_for_running_writes_then_nothing_changes(start_server):
    srv = start_server()
    admin_client = srv.client()
    writer = srv.client()
    docs = [{"i": i, "pad": "x" * 50} for i in range(60_000)]
    thread = threading.Thread(target=lambda: writer.opsdb.bulk.insert_many(docs))
    thread.start()
    assert _wait_for(lambda: admin_client.opsdb.bulk.estimated_document_count() > 0)
    admin_client.admin.command({"fsync": 1, "lock": True})
    try:
        frozen = admin_client.opsdb.bulk.count_documents({})
        time.sleep(0.5)
        assert admin_client.opsdb.bulk.count_documents({}) == frozen
        # an aggregate writing with $out waits too; a plain aggregate reads on
        assert list(admin_client.opsdb.bulk.aggregate([{"$count": "n"}])) == [{"n": frozen}]
        with pytest.raises(OperationFailure) as err:
            admin_client.opsdb.command({"aggregate": "bulk", "pipeline": [{"$out": "copy"}], "cursor": {},
                                        "maxTimeMS": 200})
        assert err.value.code == 50
    finally:
        admin_client.admin.command("fsyncUnlock")
    thread.join(60)
    assert admin_client.opsdb.bulk.count_documents({}) == len(docs)
    writer.close()
    admin_client.close()


def _file_digest(path) -> str:
    import hashlib

    return hashlib.md5(path.read_bytes()).hexdigest()  # noqa: S324 - a change detector


@pytest.mark.slow
@pytest.mark.commands("fsync", "fsyncUnlock")
def test_fsync_lock_holds_internal_writers_so_the_files_do_not_change(start_server):
    import datetime

    srv = start_server(params={"ttlMonitorSleepSecs": 1})
    with srv.client() as client:
        coll = client.opsdb.expiring
        coll.create_index("at", expireAfterSeconds=0)
        soon = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=1)
        coll.insert_one({"_id": 1, "at": soon})
        client.admin.command({"fsync": 1, "lock": True})
        data_file = Path(srv.dbpath) / "data.mdb"
        before = _file_digest(data_file)
        time.sleep(3)  # the TTL monitor's passes find the expired document but cannot delete it
        assert coll.count_documents({}) == 1
        assert client.admin.command("fsync") == {"numFiles": 1, "ok": 1.0}  # a plain fsync under the lock
        assert _file_digest(data_file) == before
        client.admin.command("fsyncUnlock")
        assert _wait_for(lambda: coll.count_documents({}) == 0)


@pytest.mark.slow
@pytest.mark.commands("fsync")
def test_sigterm_while_fsync_locked_exits_zero(start_server):
    srv = start_server()
    with srv.client() as client:
        client.opsdb.t.insert_one({"x": 1})
        client.admin.command({"fsync": 1, "lock": True})
    assert srv.terminate() == 0
    assert "Interrupting fsync because the server is shutting down" in srv.log_text()
    srv.start()
    with srv.client() as client:
        assert client.opsdb.t.count_documents({}) == 1
        assert "fsyncLock" not in client.admin.command("currentOp")  # not kept across a restart


@pytest.mark.slow
@pytest.mark.commands("shutdown", "fsync", "fsyncUnlock", "dbHash", "reIndex", "compact")
def test_operator_commands_need_mongods_actions_with_auth(start_server):
    srv = start_server(args=("--auth",))
    with srv.client() as bootstrap:
        bootstrap.admin.command("createUser", "boss", pwd="bosspw", roles=["root"])
    with srv.client(username="boss", password="bosspw") as boss:
        boss.admin.command("createUser", "reader", pwd="readerpw", roles=[{"role": "read", "db": "opsdb"}])
        boss.opsdb.c.insert_one({"_id": 1})
        with srv.client(username="reader", password="readerpw", authSource="admin") as reader:
            for command in ({"shutdown": 1}, {"fsync": 1}, {"fsyncUnlock": 1}):
                with pytest.raises(OperationFailure) as err:
                    reader.admin.command(command)
                assert err.value.code == 13, command
            for command in ({"reIndex": "c"}, {"compact": "c"}):
                with pytest.raises(OperationFailure) as err:
                    reader.opsdb.command(command)
                assert err.value.code == 13, command
            assert "c" in reader.opsdb.command("dbHash")["collections"]  # read includes dbHash
        assert boss.admin.command({"fsync": 1, "lock": True})["lockCount"] == 1
        assert boss.admin.command("fsyncUnlock")["lockCount"] == 0
        with pytest.raises((AutoReconnect, ConnectionFailure)):
            boss.admin.command("shutdown")
    assert srv.process.wait(30) == 0


def test_shutdown_without_auth_only_from_localhost():
    from tidemark.commands.operator import _is_localhost

    assert _is_localhost("127.0.0.1:5000") and _is_localhost("[::1]:5000") and _is_localhost("127.8.0.1:1")
    assert not _is_localhost("10.1.2.3:5000") and not _is_localhost("[2001:db8::1]:27017")
