"""Column-wise ingest over the wire: raw insert batches give the buckets, statistics and query results of
the general path (``timeseriesColumnarInserts`` off), survive a SIGKILL and a restart, and bad input in
a raw batch is refused as before."""

import datetime as dt
import random
import socket
import struct
import time

import bson
import pytest
from harness import raw_command
from harness.server import recv_frame

from tidemark.protocol.messages import decode_reply

T0 = dt.datetime(2016, 1, 1)
pytestmark = pytest.mark.commands("insert", "find", "aggregate", "collStats", "setParameter")


def _batches(seed, hosts=40, ticks=500, per_batch=120, swap=True):
    """TSBS-shaped measurements without _id, time-major, some neighbouring batches swapped (late data
    across bucket boundaries), one batch with an extra field (another layout)."""
    rng = random.Random(seed)
    walk = {h: [rng.randrange(100) for _ in range(3)] for h in range(hosts)}
    rows = []
    for tick in range(ticks):
        for host in range(hosts):
            v = walk[host]
            for k in range(3):
                v[k] = min(100, max(0, v[k] + rng.choice((-1, 0, 1))))
            rows.append({"measurement": "cpu", "time": T0 + dt.timedelta(seconds=10 * tick),
                         "usage_user": float(v[0]), "usage_system": float(v[1]), "usage_idle": float(v[2]),
                         "tags": {"hostname": f"host_{host}", "rack": str(host % 9), "region": "eu-west-1"}})
    batches = [rows[i:i + per_batch] for i in range(0, len(rows), per_batch)]
    if swap:  # the first batch of each new hour arrives before the last one of the hour before
        for i in range(len(batches) - 1):
            if batches[i + 1][-1]["time"].hour != batches[i][0]["time"].hour:
                batches[i], batches[i + 1] = batches[i + 1], batches[i]
    for doc in batches[len(batches) // 2]:
        doc["note"] = "maintenance"
    return batches


def _insert(port, coll, batches, db="cw"):
    for batch in batches:
        reply = raw_command(port, {"insert": coll, "ordered": False, "$db": db}, sequences={"documents": batch})
        assert reply.get("ok") == 1.0 and reply.get("n") == len(batch), reply


def _without_ids(bucket):
    bucket = dict(bucket)
    bucket.pop("_id")
    for side in ("min", "max"):
        bucket["control"][side].pop("_id")
    bucket["data"].pop("_id")
    return bucket


def _buckets(db, coll):
    return [_without_ids(b) for b in
            db[f"system.buckets.{coll}"].find().sort([("meta.hostname", 1), ("control.min.time", 1),
                                                       ("control.max.time", 1)])]


def _stats(db, coll):
    stats = db.command("collStats", coll)["timeseries"]
    return {k: v for k, v in stats.items() if k.startswith("num") and k not in ("numCommits", "numWaits")}


def _columnar(client, on):
    client.admin.command("setParameter", 1, timeseriesColumnarInserts=on)


def _create(db, *names):
    for name in names:
        db.create_collection(name, timeseries={"timeField": "time", "metaField": "tags"})


@pytest.mark.slow
def test_raw_batches_give_the_general_paths_buckets_stats_and_results(server, client):
    db = client.cw
    client.drop_database("cw")
    _create(db, "fast", "slow")
    batches = _batches(1)
    try:
        _columnar(client, False)
        _insert(server.port, "slow", batches)
    finally:
        _columnar(client, True)
    _insert(server.port, "fast", batches)
    fast, slow = _buckets(db, "fast"), _buckets(db, "slow")
    assert len(fast) == len(slow) > 40 and fast == slow
    # the byte and uncompressed-bucket counters move when the deferred bucket writes land, which the
    # server does when idle: "fast", written last, may not be there yet (seen once in CI under load)
    deadline = time.monotonic() + 60
    while _stats(db, "fast") != _stats(db, "slow") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _stats(db, "fast") == _stats(db, "slow")
    assert _stats(db, "fast")["numBucketsArchivedDueToTimeBackward"] > 0
    assert _stats(db, "fast")["numBucketsReopened"] > 0
    pipeline = [{"$match": {"tags.hostname": {"$in": ["host_3", "host_17"]}}},
                {"$group": {"_id": {"$dateTrunc": {"date": "$time", "unit": "hour"}},
                            "max": {"$max": "$usage_user"}, "n": {"$sum": 1}}}, {"$sort": {"_id": 1}}]
    assert list(db.fast.aggregate(pipeline)) == list(db.slow.aggregate(pipeline))
    projection = {"_id": 0}
    assert (list(db.fast.find({"usage_idle": {"$gt": 90}}, projection).sort([("time", 1), ("tags.hostname", 1)]))
            == list(db.slow.find({"usage_idle": {"$gt": 90}}, projection).sort([("time", 1), ("tags.hostname", 1)])))
    sample = db.fast.find_one({"tags.hostname": "host_0"}, sort=[("time", 1)])
    assert list(sample) == ["time", "tags", "_id", "measurement", "usage_user", "usage_system", "usage_idle"]
    client.drop_database("cw")


def test_pymongo_insert_many_takes_the_column_wise_path_with_client_ids(server, client):
    db = client.cw2
    client.drop_database("cw2")
    _create(db, "fast", "slow")
    batches = _batches(2, hosts=15, ticks=200, per_batch=100, swap=False)
    try:
        _columnar(client, False)
        for batch in batches:
            db.slow.insert_many([dict(d) for d in batch], ordered=False)
    finally:
        _columnar(client, True)
    for batch in batches:
        db.fast.insert_many([dict(d) for d in batch], ordered=False)
    assert _buckets(db, "fast") == _buckets(db, "slow")
    assert db.fast.count_documents({}) == 3000
    client.drop_database("cw2")


@pytest.mark.slow
def test_column_wise_ingest_survives_sigkill_and_restarts(start_server, tmp_path):
    server = start_server(dbpath=tmp_path / "db")
    client = server.client()
    db = client.cw
    _create(db, "fast", "slow")
    batches = _batches(3, hosts=25, ticks=300, per_batch=90)
    _insert(server.port, "fast", batches)
    _columnar(client, False)
    _insert(server.port, "slow", batches)
    expected = _buckets(db, "slow")
    assert _buckets(db, "fast") == expected
    client.close()
    server.kill()  # every batch above was acknowledged: all of it must come back
    server.restart()
    client = server.client()
    assert _buckets(client.cw, "fast") == _buckets(client.cw, "slow") == expected
    assert client.cw.fast.count_documents({}) == 25 * 300
    more = _batches(4, hosts=25, ticks=20, per_batch=50, swap=False)
    for batch in more:
        for doc in batch:
            doc["time"] += dt.timedelta(days=2)
    _insert(server.port, "fast", more)
    client.close()
    assert server.terminate() == 0
    server.restart()
    client = server.client()
    assert client.cw.fast.count_documents({}) == 25 * 320
    assert _buckets(client.cw, "fast")[:len(expected)] != [] and all(
        b in _buckets(client.cw, "fast") for b in expected)
    client.close()


def test_invalid_bson_inside_a_raw_batch_is_refused_and_nothing_is_inserted(server, client):
    db = client.cw3
    client.drop_database("cw3")
    _create(db, "ts")
    db.create_collection("plain")
    good = {"time": T0, "tags": {"hostname": "a"}, "v": 1.0}
    encoded = bson.encode(good)
    broken = bytearray(encoded)
    broken[encoded.index(b"hostname") + 9] = 0x7F  # the string length inside the meta document
    for coll in ("ts", "plain"):
        seq = b"documents\x00" + encoded + bytes(broken)
        body = b"\x00" + bson.encode({"insert": coll, "$db": "cw3"}) + b"\x01" + struct.pack("<i", 4 + len(seq)) + seq
        frame = struct.pack("<iiii", 16 + 4 + len(body), 7, 0, 2013) + b"\x00\x00\x00\x00" + body



        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
            sock.sendall(frame)
            reply = decode_reply(recv_frame(sock))
        assert reply["ok"] == 0 and reply["code"] == 22 and reply["codeName"] == "InvalidBSON", reply
        assert db[coll].count_documents({}) == 0
    assert client.admin.command("ping")["ok"] == 1
    client.drop_database("cw3")
