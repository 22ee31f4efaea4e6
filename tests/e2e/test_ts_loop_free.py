"""Defect 15.6 (and issue 11 item 7 for time-series inserts): decoding and routing a 100,000-measurement
insert, or one measurement with 10,000 fields, must not hold the event loop: a concurrent ``ping`` keeps
answering. The requirement is 100 ms at the 99th percentile (bench/loop_latency.py reports the figure);
this test allows a generous margin for a shared, loaded machine."""

import datetime as dt
import multiprocessing
import time

import pytest

T0 = dt.datetime(2024, 3, 1)
MARGIN_MS = 300  # the requirement is 100 ms; the margin absorbs a loaded CI machine, not a stalled loop
pytestmark = pytest.mark.commands("insert", "ping")


def _ping(uri, conn, stop):
    """In its own process (the inserting client's BSON encoding holds this process's GIL)."""
    from pymongo import MongoClient

    client = MongoClient(uri)
    client.admin.command("ping")
    conn.send("ready")
    latencies = []
    while not stop.is_set():
        start = time.perf_counter()
        client.admin.command("ping")
        latencies.append((time.perf_counter() - start) * 1000)
        time.sleep(0.005)
    client.close()
    conn.send(latencies)


class Pinger:
    """Pings from another process while the block runs; latencies in ms."""

    def __init__(self, proc):
        context = multiprocessing.get_context("spawn")
        self._stop = context.Event()
        self._conn, child = context.Pipe()
        self._process = context.Process(target=_ping, args=(proc.uri, child, self._stop), daemon=True)
        self.latencies: list[float] = []

    def __enter__(self):
        self._process.start()
        assert self._conn.recv() == "ready"
        time.sleep(0.05)
        return self

    def __exit__(self, *exc):
        time.sleep(0.05)
        self._stop.set()
        self.latencies = self._conn.recv()
        self._process.join()

    def p99(self):
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def uniform(n):
    """TSBS-like measurements of one layout (the column-wise parse)."""
    return [{"t": T0 + dt.timedelta(milliseconds=i), "host": {"hostname": f"h{i % 500}", "region": "eu"},
             **{f"usage_{k}": float(i % 100 + k) for k in range(10)}} for i in range(n)]


def mixed(n):
    """Measurements no batch layout fits (nested values, varying fields): the per-document parse."""
    return [{"t": T0 + dt.timedelta(milliseconds=i), "host": {"id": i % 500}, "v": float(i),
             **({"tags": {"k": i % 7}} if i % 3 else {"arr": [i]})} for i in range(n)]


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["uniform", "mixed", "wide"])
def test_a_concurrent_ping_answers_while_a_huge_insert_is_decoded_and_routed(start_server, shape):
    proc = start_server()
    with proc.client() as client:
        client.db.create_collection("ts", timeseries={"timeField": "t", "metaField": "host"})
        if shape == "wide":
            docs = [{"t": T0, "host": f"h{k}", **{f"f{k}_{i}": float(i) for i in range(10_000)}} for k in range(3)]
            batches = [[doc] for doc in docs]
        else:
            docs = uniform(100_000) if shape == "uniform" else mixed(100_000)
            batches = [docs]
        with Pinger(proc) as pinger:
            for batch in batches:
                client.db.ts.insert_many(batch, ordered=False)
        assert client.db.ts.count_documents({}) == len(docs)
        assert len(pinger.latencies) >= 5
        assert pinger.p99() < MARGIN_MS, sorted(pinger.latencies)[-5:]
        assert max(pinger.latencies) < 2 * MARGIN_MS, sorted(pinger.latencies)[-5:]  # no single long stall
