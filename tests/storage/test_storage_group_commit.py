"""Writer thread and group commit: batching, isolation of failing fns, durability ordering, map growth."""

import os
import threading

import bson
import pytest

from tidemark.storage.engine import open_engine
from tidemark.storage.keys import encode_key


def test_concurrent_writers_share_commits_and_resolve_after_commit(engine):
    engine.write_sync(lambda w: w.create_collection("db.c", {}))
    gate = threading.Event()
    commits_seen = {}

    def block(w):  # holds the writer so the other writes pile up in the queue
        gate.wait(5)

    engine.write(block)
    futures = []
    lock = threading.Lock()

    def client(n):
        for i in range(25):
            def fn(w, n=n, i=i):
                info = w.get_collection("db.c")
                doc = {"_id": n * 1000 + i}
                return w.insert(info, bson.encode(doc), {"_id_": [encode_key([doc["_id"]])]})

            fut = engine.write(fn)
            fut.add_done_callback(lambda f: commits_seen.setdefault(id(f), engine.stats["commits"]))
            with lock:
                futures.append(fut)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    before = engine.stats["commits"]
    gate.set()
    for fut in futures:
        fut.result(timeout=10)
    assert len(futures) == 200
    group_commits = engine.stats["commits"] - before
    assert group_commits <= 3  # 200 queued writes -> the blocked group + one or two more
    assert engine.stats["max_group"] >= 100
    # every future resolved after (not before) the commit that made its write durable
    assert all(commits_seen[id(f)] > before for f in futures)
    with engine.read() as r:
        assert r.count(r.get_collection("db.c")) == 200


def test_raising_fn_rolls_back_only_itself(engine):
    engine.write_sync(lambda w: w.create_collection("db.c", {}))
    gate = threading.Event()
    engine.write(lambda w: gate.wait(5))

    def good(n):
        def fn(w):
            info = w.get_collection("db.c")
            return w.insert(info, bson.encode({"_id": n}), {"_id_": [encode_key([n])]})
        return fn

    def bad(w):
        info = w.get_collection("db.c")
        w.insert(info, bson.encode({"_id": 99}), {"_id_": [encode_key([99])]})
        w.create_collection("db.half", {})
        raise ValueError("boom")

    f1 = engine.write(good(1))
    f2 = engine.write(bad)
    f3 = engine.write(good(3))
    commits = engine.stats["commits"]
    gate.set()
    f1.result(5)
    f3.result(5)
    with pytest.raises(ValueError, match="boom"):
        f2.result(5)
    assert engine.stats["commits"] == commits + 1  # the three shared one commit
    assert engine.stats["isolated_reruns"] == 1  # fast path aborted once, rerun with nested txns
    with engine.read() as r:
        info = r.get_collection("db.c")
        assert [bson.decode(v)["_id"] for _, v in r.scan(info)] == [1, 3]
        assert r.get_collection("db.half") is None


def test_cancelled_future_is_skipped(engine):
    gate = threading.Event()
    engine.write(lambda w: gate.wait(5))
    fut = engine.write(lambda w: w.create_collection("db.c", {}))
    assert fut.cancel()
    gate.set()
    engine.write_sync(lambda w: None)
    with engine.read() as r:
        assert r.get_collection("db.c") is None


def test_close_runs_queued_writes(dbpath):
    eng = open_engine(dbpath)
    futs = [eng.write(lambda w, n=n: w.create_collection(f"db.c{n}", {})) for n in range(20)]
    eng.close()
    assert all(f.result(0).ns.startswith("db.c") for f in futs)
    eng = open_engine(dbpath)
    with eng.read() as r:
        assert len(r.list_collections("db")) == 20
    eng.close()


def test_small_map_grows_transparently(dbpath):
    eng = open_engine(dbpath, map_size=256 * 1024)
    try:
        eng.write_sync(lambda w: w.create_collection("db.c", {}))
        payload = b"x" * 3000
        blobs = [os.urandom(3000) for _ in range(10)]  # incompressible
        for batch in range(20):
            def fn(w, batch=batch):
                info = w.get_collection("db.c")
                for i in range(10):
                    doc = {"_id": batch * 10 + i, "blob": blobs[i], "p": payload}
                    w.insert(info, bson.encode(doc), {"_id_": [encode_key([doc["_id"]])]})

            eng.write_sync(fn)
        assert eng.stats["map_size"] > 256 * 1024
        with eng.read() as r:
            assert r.count(r.get_collection("db.c")) == 200
    finally:
        eng.close()


def test_map_full_inside_a_group_retries_every_fn_once_grown(dbpath):
    eng = open_engine(dbpath, map_size=128 * 1024)
    try:
        eng.write_sync(lambda w: w.create_collection("db.c", {}))
        swallowed = []

        def big(w):  # swallows the MapFullError: the engine must still notice and retry
            info = w.get_collection("db.c")
            try:
                for i in range(300):
                    doc = {"_id": i, "blob": os.urandom(1000)}
                    w.insert(info, bson.encode(doc), {"_id_": [encode_key([i])]})
            except Exception as exc:
                swallowed.append(type(exc).__name__)
            return w.count(info)

        assert eng.write_sync(big) == 300
        assert eng.stats["retries"] >= 1
        assert swallowed == ["MapFullError"] * eng.stats["retries"]  # one per aborted attempt
    finally:
        eng.close()


def test_reads_proceed_while_the_writer_is_busy(engine):
    from storage_helpers import insert_docs

    insert_docs(engine, "db.c", [{"_id": 1}])
    started, release = threading.Event(), threading.Event()

    def slow(w):
        info = w.get_collection("db.c")
        w.insert(info, bson.encode({"_id": 2}), {"_id_": [encode_key([2])]})
        started.set()
        release.wait(5)

    fut = engine.write(slow)
    assert started.wait(5)
    with engine.read() as r:  # not blocked, and does not see the uncommitted insert
        assert r.count(r.get_collection("db.c")) == 1
    release.set()
    fut.result(5)
    with engine.read() as r:
        assert r.count(r.get_collection("db.c")) == 2


def test_counter_rids_skip_past_explicitly_placed_records(engine):
    def fn(w):
        info = w.create_collection("db.c", {})
        a = w.insert(info, bson.encode({"_id": 1}), {})
        w.insert(info, bson.encode({"_id": 2}), {}, rid=(10).to_bytes(8, "big"))
        b = w.insert(info, bson.encode({"_id": 3}), {})
        return a, b, [bson.decode(v)["_id"] for _, v in w.scan(info)]

    a, b, order = engine.write_sync(fn)
    assert int.from_bytes(a, "big") == 1 and int.from_bytes(b, "big") == 11
    assert order == [1, 2, 3]


def test_commit_failures_reach_writers_as_storage_errors():
    import lmdb

    from tidemark.storage.engine import _commit_error
    from tidemark.storage.errors import OutOfDiskSpace, StorageError

    assert isinstance(_commit_error(lmdb.DiskError("mdb_txn_commit: No space left on device")), OutOfDiskSpace)
    assert isinstance(_commit_error(lmdb.CorruptedError("bad page")), StorageError)
    boom = ValueError("x")
    assert _commit_error(boom) is boom
