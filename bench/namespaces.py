"""Does a command's cost depend on how many views and collections its database holds? (issue 22)

``python -m bench.namespaces [--runs 300] [--views 1000] [--collections 1000] [--workdir DIR]``

Starts ``python -m tidemark`` on a fresh dbpath (in /dev/shm by default) with two databases, each with a
time-series collection (1,000 measurements) and a regular one; the second also holds ``--views``
unrelated views and ``--collections`` unrelated collections. It times on loopback — client round
trip, median of ``--runs``, the two databases alternately — a time-series ``find`` with a time filter,
a one-document insert into the regular collection and a one-measurement insert into the time-series
collection, a listCollections filtered by one name and a pymongo ``create_collection`` + ``drop_collection``
(the driver's create lists the name first), and prints both medians and their ratio (the target: within 10 %).
"""

from __future__ import annotations

import argparse
import datetime
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench.harness import free_port, start_process, stop_process, wait_port

T0 = datetime.datetime(2024, 1, 1)


def _timed_pair(a, b, runs: int) -> tuple[float, float]:
    """Median milliseconds of ``a()`` and of ``b()`` over ``runs`` calls each, taken alternately (so a
    change in the machine's load during the run weighs on both alike), after a few warm-up calls."""
    for _ in range(min(20, runs)):
        a()
        b()
    samples: tuple[list[float], list[float]] = ([], [])
    for _ in range(runs):
        for fn, out in ((a, samples[0]), (b, samples[1])):
            start = time.perf_counter()
            fn()
            out.append(time.perf_counter() - start)
    return statistics.median(samples[0]) * 1000.0, statistics.median(samples[1]) * 1000.0


def _operations(db) -> dict:
    counter = iter(range(10**9))

    def ts_find():
        return list(db.ts.find({"t": {"$gte": T0 + datetime.timedelta(minutes=990)}}))

    def regular_insert():
        db.reg.insert_one({"n": next(counter)})

    def ts_insert():
        n = next(counter)
        db.ts.insert_one({"t": T0 + datetime.timedelta(minutes=2000 + n % 5000), "m": n % 3, "v": n})

    def list_by_name():
        db.command("listCollections", filter={"name": "reg"})

    def create_and_drop():
        name = f"new_{next(counter)}"
        db.create_collection(name)  # (the driver lists the name first: listCollections by name)
        db.drop_collection(name)

    return {"time-series find (time filter)": ts_find, "insert, regular collection": regular_insert,
            "insert, time-series collection": ts_insert, "listCollections {name: <one>}": list_by_name,
            "create_collection + drop_collection": create_and_drop}


def _prepare(db) -> None:
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    db.ts.insert_many([{"t": T0 + datetime.timedelta(minutes=i), "m": i % 3, "v": i} for i in range(1000)])
    db.create_collection("reg")


def _populate(db, views: int, collections: int) -> None:
    for i in range(collections):
        db.create_collection(f"other_{i:05d}")
    for i in range(views):
        db.command({"create": f"view_{i:05d}", "viewOn": f"other_{i % max(collections, 1):05d}",
                    "pipeline": [{"$match": {"k": i}}]})


def run(runs: int, views: int, collections: int, workdir: str | None = None) -> list[tuple[str, float, float]]:
    """Two databases on one server — ``plain`` (the collections only) and ``crowded`` (the same plus
    the unrelated views and collections) — each operation timed on both, alternately."""
    from pymongo import MongoClient

    work = Path(tempfile.mkdtemp(prefix="bench-ns-", dir=workdir))
    port = free_port()
    proc = start_process([sys.executable, "-m", "tidemark", "--port", str(port), "--dbpath", str(work / "db")],
                         work / "tidemark.log")
    try:
        wait_port(port, proc)
        client = MongoClient(f"mongodb://127.0.0.1:{port}/?directConnection=true")
        plain, crowded = client.plain, client.crowded
        _prepare(plain)
        _prepare(crowded)
        _populate(crowded, views, collections)
        ops_plain, ops_crowded = _operations(plain), _operations(crowded)
        rows = []
        for name in ops_plain:
            none, many = _timed_pair(ops_plain[name], ops_crowded[name], runs)
            rows.append((name, none, many))
        client.close()
    finally:
        stop_process(proc)
        shutil.rmtree(work, ignore_errors=True)
    return rows


def table(rows: list[tuple[str, float, float]], views: int, collections: int) -> str:
    head = f"| operation | none (ms) | {views} views + {collections} collections (ms) | ratio |"
    lines = [head, "|---|---:|---:|---:|"]
    for name, none, many in rows:
        lines.append(f"| {name} | {none:.3f} | {many:.3f} | {many / none:.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.namespaces", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--views", type=int, default=1000)
    parser.add_argument("--collections", type=int, default=1000)
    parser.add_argument("--workdir", default="/dev/shm" if Path("/dev/shm").is_dir() else None,
                        help="where the dbpath goes (default /dev/shm: fsync then costs nothing, so the "
                             "figures show the request path, not the disk)")
    args = parser.parse_args(argv)
    rows = run(args.runs, args.views, args.collections, args.workdir)
    print(table(rows, args.views, args.collections))
    return 0


if __name__ == "__main__":
    sys.exit(main())
