"""Compaction at clean shutdown, end to end: a server stopped with SIGTERM rewrites its data file
packed; after the restart system.buckets documents are byte-exact, queries answer the same, and a
SIGKILL that lands during the shutdown (the compaction) loses no acknowledged write."""

from __future__ import annotations

import datetime as dt
import os
import random
import time

import pytest
from bson.raw_bson import RawBSONDocument

T0 = dt.datetime(2024, 1, 1)
pytestmark = pytest.mark.commands("insert", "find", "aggregate", "create", "createIndexes")


def load(client, hosts: int = 40, per_host: int = 1000, seed: int = 1) -> None:
    """Enough buckets larger than an LMDB leaf node (random doubles barely compress) to make the
    shutdown compaction worth it, plus regular documents of mixed sizes."""
    rng = random.Random(seed)
    db = client.rel
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    db.ts.create_index([("m.host", 1), ("t", -1)])
    for start in range(0, per_host, 100):
        batch = [{"t": T0 + dt.timedelta(seconds=10 * i), "m": {"host": f"h{h}", "rack": h % 3},
                  "a": rng.random(), "b": rng.random() * 100, "c": rng.randrange(1000)}
                 for i in range(start, start + 100) for h in range(hosts)]
        db.ts.insert_many(batch, ordered=False)
    db.reg.insert_many([{"_id": i, "k": i % 10, "pad": rng.randbytes(rng.choice([100, 3000, 9000]))}
                        for i in range(300)])
    db.reg.create_index("k")


def observe(client) -> dict:
    db = client.rel
    raw = db.get_collection("system.buckets.ts", codec_options=db.codec_options.with_options(
        document_class=RawBSONDocument))
    return {
        "buckets": [doc.raw for doc in raw.find().sort("_id", 1)],
        "host_query": list(db.ts.find({"m.host": "h7", "t": {"$gte": T0 + dt.timedelta(hours=1)}},
                                      {"_id": 0}).sort("t", 1)),
        "meta_query": list(db.ts.aggregate([{"$match": {"m.rack": 2}},
                                            {"$group": {"_id": "$m.host", "n": {"$sum": 1},
                                                        "b": {"$max": "$b"}}},
                                            {"$sort": {"_id": 1}}])),
        "regular": list(db.reg.find({"k": 3}).sort("_id", 1)),
        "count": db.ts.count_documents({}),
    }


@pytest.mark.slow
def test_clean_shutdown_compacts_and_every_read_stays_byte_exact(start_server):
    srv = start_server()
    client = srv.client()
    load(client)
    before = observe(client)
    client.close()
    data_file = os.path.join(srv.dbpath, "data.mdb")
    size_running, inode_running = os.path.getsize(data_file), os.stat(data_file).st_ino
    assert srv.terminate() == 0
    assert os.stat(data_file).st_ino != inode_running  # a new, packed file was swapped in
    # smaller: free pages dropped, pieces packed (time-series appends write journal records, not whole
    # buckets, so the running file holds little churn: the gain is the shutdown's own full writes' trims)
    assert os.path.getsize(data_file) < size_running
    assert not os.path.exists(os.path.join(srv.dbpath, "compact.tmp"))

    srv.restart()
    client = srv.client()
    try:
        assert observe(client) == before
        client.rel.ts.insert_one({"t": T0, "m": {"host": "h1", "rack": 1}, "a": 0.5})
        client.rel.reg.delete_many({"k": 3})  # chunked records deleted
        client.rel.reg.update_many({"k": 4}, {"$set": {"pad": b"short"}})  # and replaced
        after_writes = observe(client)
        assert after_writes["count"] == before["count"] + 1
    finally:
        client.close()
    assert srv.terminate() == 0
    srv.restart()
    client = srv.client()
    try:
        assert observe(client) == after_writes
        assert client.rel.command("validate", "reg")["valid"]
    finally:
        client.close()


@pytest.mark.slow
@pytest.mark.parametrize("delay", [0.0, 0.05, 0.3])
def test_sigkill_during_shutdown_compaction_loses_no_acknowledged_write(start_server, delay):
    srv = start_server()
    client = srv.client()
    load(client, hosts=30, per_host=600, seed=2)
    before = observe(client)
    client.close()
    srv.process.send_signal(15)  # SIGTERM: the shutdown flushes buckets, then compacts
    time.sleep(delay)
    srv.kill()
    srv.restart()
    client = srv.client()
    try:
        assert observe(client) == before
    finally:
        client.close()
