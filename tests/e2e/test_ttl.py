"""TTL indexes: the monitor (ttlMonitorSleepSecs=1 in the test server) removes expired documents.

Tests wait on the monitor's own pass counter (serverStatus ``metrics.ttl.passes``), never on the clock:
two passes after the data was written, the second of which started after it.
"""

from __future__ import annotations

import datetime

import pymongo
import pytest
from harness import ttl_passes, wait_ttl_passes


@pytest.mark.commands("serverStatus")
def test_server_status_counts_ttl_passes_as_mongod(client):
    ttl = client.admin.command("serverStatus")["metrics"]["ttl"]
    assert set(ttl) == {"passes", "deletedDocuments"}
    before = ttl_passes(client)
    assert wait_ttl_passes(client, 1) >= before + 1


@pytest.mark.slow
@pytest.mark.commands("createIndexes", "insert", "find")
def test_ttl_index_removes_expired_documents_within_a_monitor_period(db):
    now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    db.s.create_index("at", expireAfterSeconds=60)
    db.s.insert_many([
        {"_id": "old", "at": now - datetime.timedelta(hours=1)},
        {"_id": "old_array", "at": [now - datetime.timedelta(hours=2), now + datetime.timedelta(hours=1)]},
        {"_id": "fresh", "at": now},
        {"_id": "no_date", "at": "yesterday"},
        {"_id": "missing"},
    ])
    deleted = db.client.admin.command("serverStatus")["metrics"]["ttl"]["deletedDocuments"]
    wait_ttl_passes(db.client)
    assert {d["_id"] for d in db.s.find()} == {"fresh", "no_date", "missing"}
    assert db.client.admin.command("serverStatus")["metrics"]["ttl"]["deletedDocuments"] >= deleted + 2


@pytest.mark.slow
@pytest.mark.commands("createIndexes", "collMod")
def test_ttl_change_by_coll_mod_takes_effect(db):
    now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    db.s.create_index([("at", -1)], expireAfterSeconds=10_000)
    db.s.insert_one({"_id": 1, "at": now - datetime.timedelta(seconds=120)})
    wait_ttl_passes(db.client)
    assert db.s.find_one({"_id": 1}) is not None
    db.command("collMod", "s", index={"keyPattern": {"at": -1}, "expireAfterSeconds": 30})
    wait_ttl_passes(db.client)
    assert db.s.find_one({"_id": 1}) is None


def test_ttl_pass_unit_deletes_only_expired(tmp_path):
    """The pass itself, without a server: an engine, a TTL index, a fixed 'now'."""
    from tidemark import ttl
    from tidemark.protocol.codec import encode
    from tidemark.query.index_keys import index_key_map
    from tidemark.storage.engine import open_engine

    engine = open_engine(str(tmp_path / "db"))
    try:
        t0 = datetime.datetime(2024, 1, 1)
        spec = {"v": 2, "key": {"t": 1}, "name": "t_1", "expireAfterSeconds": 10}

        def setup(w):
            info = w.create_collection("d.c", {})
            info = w.create_index(info, spec, [])
            for i in range(20):
                doc = {"_id": i, "t": t0 + datetime.timedelta(seconds=i)}
                w.insert(info, encode(doc), index_key_map(info.indexes, doc))

        engine.write(setup).result()
        deleted = ttl.run_pass(engine, now=t0 + datetime.timedelta(seconds=15))
        assert deleted == 5
        with engine.read() as r:
            assert r.count(r.get_collection("d.c")) == 15
    finally:
        engine.close()


@pytest.mark.commands("setParameter", "createIndexes", "insert", "count")
def test_a_new_sleep_applies_to_the_wait_in_progress(start_server):
    """jstests/noPassthrough/ttl_changes_are_immediate.js: a monitor waiting 1000 s is set to 1 s at
    runtime and passes within 20 s (the test allows 20 s; the wait re-reads the parameter every second)."""
    server = start_server(params={"ttlMonitorSleepSecs": "1000"})
    client = pymongo.MongoClient(port=server.port)
    try:
        coll = client.test.ttl_collection
        coll.create_index("x", expireAfterSeconds=0)
        now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
        coll.insert_many([{"x": now}, {"x": now}])
        assert client.admin.command("setParameter", 1, ttlMonitorSleepSecs=1)["was"] == 1000
        wait_ttl_passes(client, 2, timeout=20)
        assert coll.count_documents({}) == 0
    finally:
        client.close()
