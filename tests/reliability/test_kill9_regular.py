"""SIGKILL during concurrent inserts: every acknowledged document survives, indexes agree with records."""

from __future__ import annotations

import threading
import time

import pytest
from pymongo.errors import PyMongoError

WRITERS = 6


@pytest.mark.slow
@pytest.mark.commands("insert", "validate", "find")
def test_kill9_during_concurrent_inserts_keeps_every_acknowledged_document(start_server):
    srv = start_server()
    setup = srv.client()
    setup.rel.c.create_index("k", unique=True)
    setup.rel.c.create_index([("w", 1), ("i", -1)])
    setup.close()
    acked: list[list[int]] = [[] for _ in range(WRITERS)]
    stop = threading.Event()

    def writer(w: int) -> None:
        client = srv.client(serverSelectionTimeoutMS=2000, retryWrites=False)
        i = 0
        try:
            while not stop.is_set():
                batch = [{"_id": w * 10_000_000 + i + j, "k": f"{w}-{i + j}", "w": w, "i": i + j,
                          "pad": "x" * 50} for j in range(5)]
                try:
                    client.rel.c.insert_many(batch)
                except PyMongoError:
                    return
                acked[w].extend(d["_id"] for d in batch)
                i += 5
        finally:
            client.close()

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(WRITERS)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 20
    while sum(map(len, acked)) < 1500 and time.monotonic() < deadline:
        time.sleep(0.05)
    srv.kill()
    stop.set()
    for t in threads:
        t.join(30)
    expected = {i for ids in acked for i in ids}
    assert len(expected) >= 500

    srv.restart()
    client = srv.client()
    try:
        present = {d["_id"] for d in client.rel.c.find({}, {"_id": 1})}
        assert expected <= present
        v = client.rel.command("validate", "c")
        assert v["valid"], v["errors"]
        n = len(present)
        assert v["keysPerIndex"] == {"_id_": n, "k_1": n, "w_1_i_-1": n}
        assert {d["_id"] for d in client.rel.c.find({"w": 0}).hint("w_1_i_-1")} == {
            i for i in present if i < 10_000_000}
    finally:
        client.close()


@pytest.mark.slow
@pytest.mark.commands("insert", "find", "createIndexes")
def test_clean_restart_keeps_collections_indexes_and_views(start_server):
    srv = start_server()
    c = srv.client()
    c.d.a.insert_many([{"x": i} for i in range(100)])
    c.d.a.create_index("x", unique=True)
    c.d.create_collection("val", validator={"x": {"$exists": True}})
    c.d.command("create", "small", viewOn="a", pipeline=[{"$match": {"x": {"$lt": 3}}}])
    c.close()
    assert srv.terminate() == 0
    srv.start()
    c = srv.client()
    try:
        assert len(list(c.d.a.find())) == 100
        assert [i["name"] for i in c.d.a.list_indexes()] == ["_id_", "x_1"]
        assert c.d.val.options() == {"validator": {"x": {"$exists": True}}}
        assert sorted(d["x"] for d in c.d.small.find()) == [0, 1, 2]
    finally:
        c.close()
