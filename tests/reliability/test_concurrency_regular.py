"""50 clients inserting and reading at once for 30 seconds: no errors, no lost writes."""

from __future__ import annotations

import threading
import time

import pytest

CLIENTS = 50
SECONDS = 30


@pytest.mark.slow
@pytest.mark.commands("insert", "find", "update", "count")
def test_fifty_clients_insert_and_read_for_thirty_seconds(server):
    errors: list[BaseException] = []
    acked = [0] * CLIENTS
    stop = threading.Event()
    setup = server.client()
    db = setup["concurrency_regular"]
    db.drop_collection("c")
    db.c.create_index([("client", 1), ("seq", 1)], unique=True)

    def worker(n: int) -> None:
        client = server.client(maxPoolSize=1)
        coll = client["concurrency_regular"].c
        seq = 0
        try:
            while not stop.is_set():
                coll.insert_one({"client": n, "seq": seq, "payload": "p" * 64})
                acked[n] += 1
                got = coll.find_one({"client": n, "seq": seq})
                assert got is not None and got["seq"] == seq, "a just-acknowledged insert was not readable"
                if seq % 10 == 0:
                    coll.update_one({"client": n, "seq": seq}, {"$inc": {"reads": 1}})
                    assert len(list(coll.find({"client": n}).sort("seq", -1).limit(5))) == min(5, seq + 1)
                seq += 1
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)
        finally:
            client.close()

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(CLIENTS)]
    for t in threads:
        t.start()
    time.sleep(SECONDS)
    stop.set()
    for t in threads:
        t.join(60)
    try:
        assert not errors, errors[:3]
        assert sum(acked) > CLIENTS
        for n in range(CLIENTS):
            assert db.command("count", "c", query={"client": n})["n"] == acked[n]
        assert db.command("validate", "c")["valid"]
    finally:
        setup.drop_database("concurrency_regular")
        setup.close()
