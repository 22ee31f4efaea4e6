"""Does a 1-host 1-hour query cost the same whatever the data after its window? (issue 23, target 2)

Starts ``python -m tidemark`` on a fresh data directory, creates the bench's ``cpu`` collection (time-series,
timeField "time", metaField "tags", granularity seconds, index {tags.hostname: 1, time: -1}), loads the TSBS
cpu rows of ``--hosts`` hosts at 10 s for ``--days`` days in time order (insert_many of 10,000 rows), then
runs single-groupby-1-1-1 windows with explain('executionStats') (keys / documents examined) and measures
the server's CPU per query (user + system, median of ``--runs``), through the index and hinted
``{$natural: 1}`` (the clustered ``_id`` range).

    python -m bench.window_scaling --days 1 --days 16

Windows are drawn from the first day, so every size answers the same queries: what differs is only how
many later buckets each host has.
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
from pymongo import MongoClient

from bench.generator import FIELDS, START_MS, generate
from bench.harness import free_port, stop_process, wait_port
from bench.queries import HOUR_MS, Params, pipeline

BATCH = 10_000
DAY_S = 86_400


def load(coll, days: int, hosts: int) -> None:
    dataset = generate(hosts, days * DAY_S, seed=123)
    tags = dataset.tags
    batch: list[dict] = []
    for ms, host, values in dataset.iter_rows():
        doc = {"time": _date(ms), "tags": tags[host]}
        doc.update(zip(FIELDS, values, strict=True))
        batch.append(doc)
        if len(batch) == BATCH:
            coll.insert_many(batch, ordered=True)
            batch = []
    if batch:
        coll.insert_many(batch, ordered=True)


def _date(ms: int):
    import datetime as dt

    return dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=ms)


def windows(hosts: int, count: int) -> list[Params]:
    rng = random.Random(7)
    out = []
    for _ in range(count):
        start = rng.randint(START_MS, START_MS + DAY_S * 1000 - HOUR_MS)
        out.append(Params(start, start + HOUR_MS, (f"host_{rng.randrange(hosts)}",)))
    return out


def examined(db, params: list[Params], hint) -> list[tuple[int, int]]:
    """(keys examined, documents examined) of each window's explain('executionStats')."""
    out = []
    for p in params:
        cmd = {"aggregate": "cpu", "pipeline": pipeline("single-groupby-1-1-1", p), "cursor": {}}
        if hint is not None:
            cmd["hint"] = hint
        doc = db.command("explain", cmd, verbosity="executionStats")
        out.append((_total(doc, "totalKeysExamined"), _total(doc, "totalDocsExamined")))
    return out


def _total(doc, key: str) -> int:
    found = []

    def walk(x):
        if isinstance(x, dict):
            for k, v in x.items():
                if k == key and isinstance(v, int):
                    found.append(v)
                else:
                    walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    walk(doc)
    return max(found, default=-1)


def cpu_per_query(db, proc: psutil.Process, params: list[Params], hint, runs: int, rounds: int = 5) -> float:
    """Server CPU (ms) of one query: the median over ``rounds`` of the CPU of ``runs`` queries (cycling
    through ``params``) divided by ``runs`` (the process CPU clock ticks in 10 ms: one query is below it)."""
    kwargs = {"hint": hint} if hint is not None else {}
    samples = []
    for _ in range(rounds):
        before = proc.cpu_times()
        for i in range(runs):
            list(db.cpu.aggregate(pipeline("single-groupby-1-1-1", params[i % len(params)]), **kwargs))
        after = proc.cpu_times()
        samples.append((after.user + after.system - before.user - before.system) * 1000 / runs)
    return statistics.median(samples)


def measure(days: int, hosts: int, runs: int, workdir: Path) -> dict:
    dbpath = workdir / f"db{days}"
    dbpath.mkdir(parents=True)
    port = free_port()
    log = open(workdir / f"tidemark{days}.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen([sys.executable, "-m", "tidemark", "--port", str(port), "--dbpath", str(dbpath)],
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_port(port, proc)
        client = MongoClient("127.0.0.1", port, directConnection=True)
        db = client.bench
        db.create_collection("cpu", timeseries={"timeField": "time", "metaField": "tags", "granularity": "seconds"})
        db.cpu.create_index([("tags.hostname", 1), ("time", -1)])
        t0 = time.time()
        load(db.cpu, days, hosts)
        loaded_s = time.time() - t0
        time.sleep(5)  # let deferred bucket writes settle
        params = windows(hosts, 20)
        server = psutil.Process(proc.pid)
        result = {"days": days, "load_s": round(loaded_s, 1)}
        for name, hint in (("index", None), ("clustered", {"$natural": 1})):
            counts = examined(db, params, hint)
            cpu_per_query(db, server, params, hint, 10, rounds=1)  # warm
            result[name] = {
                "keys": (min(c[0] for c in counts), max(c[0] for c in counts)),
                "docs": (min(c[1] for c in counts), max(c[1] for c in counts)),
                "cpu_ms": round(cpu_per_query(db, server, params, hint, runs), 3),
            }
        client.close()
        return result
    finally:
        stop_process(proc)
        log.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--days", type=int, action="append", help="data sizes in days (repeatable)")
    ap.add_argument("--hosts", type=int, default=100)
    ap.add_argument("--runs", type=int, default=50)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="window-scaling-") as tmp:
        for days in args.days or [1, 16]:
            print(measure(days, args.hosts, args.runs, Path(tmp)), flush=True)


if __name__ == "__main__":
    main()
