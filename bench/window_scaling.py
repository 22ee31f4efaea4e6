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
import os
import random
import shutil
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


def cpu_round(db, proc: psutil.Process, params: list[Params], hint, runs: int) -> float:
    """Server CPU (ms) of one query: the CPU of ``runs`` queries (cycling through ``params``) divided by
    ``runs`` (the process CPU clock ticks in 10 ms: one query is below it)."""
    kwargs = {"hint": hint} if hint is not None else {}
    before = proc.cpu_times()
    for i in range(runs):
        list(db.cpu.aggregate(pipeline("single-groupby-1-1-1", params[i % len(params)]), **kwargs))
    after = proc.cpu_times()
    return (after.user + after.system - before.user - before.system) * 1000 / runs


class Server:
    """``python -m tidemark`` of one build (``pythonpath``: where its ``tidemark`` package is; None: this
    checkout's) on ``dbpath``."""

    def __init__(self, dbpath: Path, pythonpath: str | None = None):
        env = dict(os.environ)
        if pythonpath:
            env["PYTHONPATH"] = pythonpath
        self.port = free_port()
        self.log = open(dbpath.with_suffix(".log"), "ab")  # noqa: SIM115 - closed by stop
        self.proc = subprocess.Popen([sys.executable, "-m", "tidemark", "--port", str(self.port),
                                      "--dbpath", str(dbpath)], stdout=self.log, stderr=subprocess.STDOUT, env=env)
        wait_port(self.port, self.proc)
        self.client = MongoClient("127.0.0.1", self.port, directConnection=True)
        self.db = self.client.bench
        self.cpu = psutil.Process(self.proc.pid)

    def stop(self) -> None:
        self.client.close()
        stop_process(self.proc)
        self.log.close()


def loaded(days: int, hosts: int, workdir: Path) -> Path:
    """A data directory holding ``days`` days of the cpu rows (loaded by this checkout, shut down cleanly)."""
    dbpath = workdir / f"load{days}"
    dbpath.mkdir(parents=True)
    server = Server(dbpath)
    try:
        server.db.create_collection("cpu", timeseries={"timeField": "time", "metaField": "tags",
                                                       "granularity": "seconds"})
        server.db.cpu.create_index([("tags.hostname", 1), ("time", -1)])
        t0 = time.time()
        load(server.db.cpu, days, hosts)
        print(f"loaded {days} d in {time.time() - t0:.0f} s", flush=True)
    finally:
        server.stop()
    return dbpath


PATHS = (("index", None), ("clustered", {"$natural": 1}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--days", type=int, action="append", help="data sizes in days (repeatable)")
    ap.add_argument("--hosts", type=int, default=100)
    ap.add_argument("--runs", type=int, default=50, help="queries per CPU sample")
    ap.add_argument("--rounds", type=int, default=7, help="CPU samples per build, size and path (alternated)")
    ap.add_argument("--build", action="append", default=[], metavar="LABEL=PYTHONPATH",
                    help="another build to compare (its tidemark package on PYTHONPATH); this checkout is 'this'")
    args = ap.parse_args()
    builds = [("this", None)] + [tuple(b.split("=", 1)) for b in args.build]
    params = windows(args.hosts, 20)
    with tempfile.TemporaryDirectory(prefix="window-scaling-") as tmp:
        sources = {days: loaded(days, args.hosts, Path(tmp)) for days in args.days or [1, 16]}
        servers: dict = {}
        try:
            for days, source in sources.items():
                for label, pythonpath in builds:
                    copy = Path(tmp) / f"{label}-{days}"
                    shutil.copytree(source, copy)
                    servers[(label, days)] = Server(copy, pythonpath)
            time.sleep(5)  # start-up work (recovery, caches) settles
            samples: dict = {(key, name): [] for key in servers for name, _ in PATHS}
            for server in servers.values():
                for _name, hint in PATHS:
                    cpu_round(server.db, server.cpu, params, hint, 10)  # warm
            for _ in range(args.rounds):  # alternated: the machine's noise falls on every build and size alike
                for key, server in servers.items():
                    for name, hint in PATHS:
                        samples[(key, name)].append(cpu_round(server.db, server.cpu, params, hint, args.runs))
            for (label, days), server in servers.items():
                for name, hint in PATHS:
                    counts = examined(server.db, params, hint)
                    cpu = samples[((label, days), name)]
                    print({"build": label, "days": days, "path": name,
                           "keys": (min(c[0] for c in counts), max(c[0] for c in counts)),
                           "docs": (min(c[1] for c in counts), max(c[1] for c in counts)),
                           "cpu_ms_median": round(statistics.median(cpu), 2),
                           "cpu_ms_range": (round(min(cpu), 2), round(max(cpu), 2))}, flush=True)
        finally:
            for server in servers.values():
                server.stop()


if __name__ == "__main__":
    main()
