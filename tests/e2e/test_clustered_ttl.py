"""Issue 25 item 7: TTL on a regular clustered collection (mongod 7.0's ttl.cpp, ``_deleteExpiredWithCollscan``).

A collection created with ``clusteredIndex`` and ``expireAfterSeconds: N`` (or given it by collMod) loses, at
the TTL monitor's passes, the documents whose ``_id`` is a date older than ``now - N``; an ``_id`` of any
other type (an ObjectId too: only time-series buckets expire by ObjectId time) never expires.
``expireAfterSeconds: "off"`` stops it. Tests wait on the monitor's pass counter, never on the clock.
"""

from __future__ import annotations

import datetime

import pytest
from bson.objectid import ObjectId
from harness import wait_ttl_passes
from pymongo.errors import OperationFailure

CLUSTERED = {"key": {"_id": 1}, "unique": True}


def _now():
    return datetime.datetime.now(datetime.UTC).replace(tzinfo=None)


def _docs(now):
    hour = datetime.timedelta(hours=1)
    return [{"_id": now - 3 * hour, "v": "old"}, {"_id": now - 2 * hour, "v": "older than the limit"},
            {"_id": now + hour, "v": "future"}, {"_id": now - datetime.timedelta(seconds=5), "v": "recent"},
            {"_id": ObjectId.from_datetime(now - 5 * hour), "v": "old ObjectId"}, {"_id": 7, "v": "number"},
            {"_id": "2020-01-01", "v": "string"}]


@pytest.mark.slow
@pytest.mark.commands("create", "insert", "find")
def test_clustered_collection_expires_documents_with_old_date_ids(db):
    db.command("create", "c", clusteredIndex=CLUSTERED, expireAfterSeconds=3600)
    db.c.insert_many(_docs(_now()))
    deleted = db.client.admin.command("serverStatus")["metrics"]["ttl"]["deletedDocuments"]
    wait_ttl_passes(db.client)
    assert sorted(d["v"] for d in db.c.find()) == ["future", "number", "old ObjectId", "recent", "string"]
    assert db.client.admin.command("serverStatus")["metrics"]["ttl"]["deletedDocuments"] >= deleted + 2


@pytest.mark.slow
@pytest.mark.commands("create", "collMod", "insert", "find")
def test_coll_mod_sets_changes_and_turns_off_the_clustered_ttl(db):
    now = _now()
    db.command("create", "c", clusteredIndex=CLUSTERED)
    db.c.insert_many(_docs(now))
    wait_ttl_passes(db.client)
    assert db.c.count_documents({}) == 7  # no expireAfterSeconds: nothing expires
    db.command("collMod", "c", expireAfterSeconds=4 * 3600)
    (entry,) = db.list_collections(filter={"name": "c"})
    assert entry["options"]["expireAfterSeconds"] == 4 * 3600
    wait_ttl_passes(db.client)
    assert db.c.count_documents({}) == 7
    db.command("collMod", "c", expireAfterSeconds="off")
    (entry,) = db.list_collections(filter={"name": "c"})
    assert "expireAfterSeconds" not in entry["options"]
    db.command("collMod", "c", expireAfterSeconds=0)
    wait_ttl_passes(db.client)
    assert sorted(d["v"] for d in db.c.find()) == ["future", "number", "old ObjectId", "string"]
    db.command("collMod", "c", expireAfterSeconds="off")
    db.c.insert_one({"_id": now - datetime.timedelta(days=1), "v": "kept"})
    wait_ttl_passes(db.client)
    assert db.c.find_one({"v": "kept"}) is not None


@pytest.mark.commands("collMod")
@pytest.mark.parametrize("value, code", [("on", 72), (-1, 72), ("10", 72), (True, 14)])
def test_coll_mod_of_the_clustered_ttl_checks_its_value(db, value, code):
    db.command("create", "c", clusteredIndex=CLUSTERED)
    with pytest.raises(OperationFailure) as err:
        db.command("collMod", "c", expireAfterSeconds=value)
    assert err.value.code == code
    db.command("create", "plain")
    with pytest.raises(OperationFailure) as err:
        db.command("collMod", "plain", expireAfterSeconds=10)
    assert (err.value.code, err.value.details["errmsg"]) == (
        72, "'expireAfterSeconds' option is only supported on collections clustered by _id")


def test_clustered_ttl_pass_unit_deletes_only_date_ids_before_the_cutoff(tmp_path):
    """The pass itself on a clustered collection, without a server: a fixed 'now'."""
    from tidemark import ttl
    from tidemark.protocol.codec import encode
    from tidemark.storage.engine import open_engine

    engine = open_engine(str(tmp_path / "db"))
    try:
        t0 = datetime.datetime(2024, 1, 1)
        options = {"clusteredIndex": {"v": 2, "key": {"_id": 1}, "name": "_id_", "unique": True},
                   "expireAfterSeconds": 10}

        def setup(w):
            info = w.create_collection("d.c", options, clustered=True)
            ids = [t0 + datetime.timedelta(seconds=i) for i in range(20)]
            ids += [ObjectId.from_datetime(t0), 1, "x", datetime.datetime(1960, 1, 1)]  # the last expires too
            for value in ids:
                w.insert(info, encode({"_id": value}), {})

        engine.write(setup).result()
        assert ttl.run_pass(engine, now=t0 + datetime.timedelta(seconds=15)) == 6
        with engine.read() as r:
            assert r.count(r.get_collection("d.c")) == 18
    finally:
        engine.close()


@pytest.mark.parametrize("index", [{"name": "myci"}, {"keyPattern": {"_id": 1}}], ids=["by name", "by key"])
@pytest.mark.parametrize("hidden", [True, False])
def test_the_clustered_index_cannot_be_hidden(db, index, hidden):
    """parseCollModRequest refuses the 'hidden' option on a clustered collection's clusteredIndex (6011800);
    Tidemark answered 27 IndexNotFound, the clustered index not being in the index list (found by a helper
    porting the clustered collection jstests)."""
    db.drop_collection("clustered_hidden")
    db.create_collection("clustered_hidden", clusteredIndex={"key": {"_id": 1}, "unique": True, "name": "myci"})
    with pytest.raises(OperationFailure) as failure:
        db.command("collMod", "clustered_hidden", index={**index, "hidden": hidden})
    assert (failure.value.code, failure.value.details["errmsg"]) == (
        6011800, "The 'hidden' option is not supported for a clusteredIndex")
    with pytest.raises(OperationFailure) as failure:
        db.command("collMod", "clustered_hidden", index={"name": "nope", "hidden": hidden})
    assert failure.value.code == 27
    db.drop_collection("clustered_hidden")
