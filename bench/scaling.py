"""``python -m bench.scaling``: does Tidemark's cost stay flat as the data grows? (issue 23, target 2)

    python -m bench.scaling [--days 1 --days 4 --days 16] [--scale 100] [--runs 20] [--json out.json]

For each size, a fresh server (pinned like the benchmark) is loaded with the TSBS cpu rows of ``--scale``
hosts for that many days, time-ordered, through the benchmark's pre-encoded replay (``bench.replay``,
8 connections) and left to settle; then, all figures server CPU (every thread of the server process):

- **ingest**: ms per 1,000 rows, the load plus the settle after it (the deferred bucket writes), and
  rows/s of the load;
- **1-host 1-hour**: single-groupby-1-1-1 over windows drawn from the first day (the same queries at
  every size: only the data after them differs), ms per query, the mean over ``--runs`` instances;
- **lastpoint read-only**: ms per query, nothing written between queries;
- **lastpoint after an insert**: ms of a lastpoint right after a one-row insert (a later row of one host),
  ``--runs`` times;
- **restart**: the server stopped cleanly and started again on the same data: the first lastpoint's CPU
  and the anonymous RSS it added;
- **RSS**: the peak during load + settle (``VmHWM``) and, sampled every 20 ms, the peaks of anonymous
  (``RssAnon``: Python objects, caches, NumPy arrays) and file-backed (``RssFile``: the LMDB map's pages
  the server touched, shared with the page cache and reclaimable) memory; the same at the end.

Every query result is first checked against the naive computation (1-host windows; lastpoint before any
insert). The sizes run one after the other on the same machine; CPU, not wall time, is the figure.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from bench.generator import FIELDS, INTERVAL_MS, START_MS, generate
from bench.harness import (
    ROOT,
    Context,
    RssSampler,
    can_pin,
    ingest_stats,
    memory_status,
    replay_args,
    run_loader,
    settle,
    thread_cpu_ns,
)
from bench.messages import COLLECTION, DB, build_cache
from bench.peers.tidemark import TidemarkServer, setup_collection
from bench.queries import HOUR_MS, Params, compare, normalize_mongo, pipeline

DAY_S = 86_400
MB = 1024 * 1024


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def windows(scale: int, count: int, seed: int) -> list[Params]:
    """1-host 1-hour windows inside the first day (seeded): the same queries at every data size."""
    import random

    rng = random.Random(f"{seed}:scaling")
    out = []
    for _ in range(count):
        start = rng.randint(START_MS, START_MS + DAY_S * 1000 - HOUR_MS)
        out.append(Params(start, start + HOUR_MS, (f"host_{rng.randrange(scale)}",)))
    return out


def query_cpu_ms(pid: int, run) -> float:
    c0 = thread_cpu_ns(pid)
    run()
    return (thread_cpu_ns(pid) - c0) / 1e6


def measure_size(days: int, args: argparse.Namespace, workdir: Path) -> dict:
    dataset = generate(args.scale, days * DAY_S, args.seed)
    frames = build_cache(dataset, args.cache)
    ctx = Context(dataset=dataset, frames_path=frames, workdir=workdir, queries=[], runs=args.runs,
                  seed=args.seed, workers=args.workers, pin=can_pin() and not args.no_pin, progress=False,
                  pymongo=False, connections=0)
    server = TidemarkServer(ctx, workdir / f"days{days}")
    server.start()
    out: dict = {"days": days, "rows": dataset.rows}
    try:
        client = server.client()
        setup_collection(client, timeseries=True)
        rss = RssSampler(server.pid)
        loaded = run_loader(ctx, replay_args(ctx, server.port), server.pid)
        loaded.update(settle(server.pid))
        out["load_peak"] = rss.stop()
        stats = ingest_stats(loaded, dataset.rows, ctx.pin)
        if stats["error"] or stats["cpu_ms_per_1000_rows"] is None:
            raise RuntimeError(f"{days} d: load failed or its CPU unmeasured: {stats['error']}")
        out["ingest_ms_per_1000_rows"] = stats["cpu_ms_per_1000_rows"]
        out["rows_per_s"] = stats["rows_per_s"]
        say(f"{days} d: {dataset.rows:,} rows, ingest {out['ingest_ms_per_1000_rows']:.2f} ms CPU / 1,000 rows, "
            f"{out['rows_per_s']:,.0f} rows/s")
        coll = client[DB][COLLECTION]
        checker = ctx.checker
        # -- the 1-host 1-hour query (single-groupby-1-1-1 over windows of the first day)
        params = windows(args.scale, args.runs, args.seed)
        for p in params:  # checked, and the warm-up
            got = normalize_mongo("single-groupby-1-1-1", list(coll.aggregate(pipeline("single-groupby-1-1-1", p))))
            compare("tidemark", "single-groupby-1-1-1", p, got, checker.expected("single-groupby-1-1-1", p))
        rounds = [statistics.fmean(query_cpu_ms(server.pid, lambda p=p: list(
            coll.aggregate(pipeline("single-groupby-1-1-1", p)))) for p in params) for _ in range(args.rounds)]
        out["one_host_hour_ms"] = rounds
        # -- lastpoint, read-only (checked: every host's row at the last tick is its latest)
        last = Params(dataset.end_ms - INTERVAL_MS, dataset.end_ms, ())
        lastpoint = pipeline("lastpoint", Params(START_MS, dataset.end_ms, ()))
        got = normalize_mongo("lastpoint", list(coll.aggregate(lastpoint)))
        compare("tidemark", "lastpoint", last, got, checker.expected("lastpoint", last))
        out["lastpoint_ms"] = [statistics.fmean(query_cpu_ms(server.pid, lambda: list(coll.aggregate(lastpoint)))
                                                for _ in range(args.runs)) for _ in range(args.rounds)]
        # -- lastpoint right after a one-row insert (a later row of one host each time)
        after = []
        tags = dataset.tags
        for i in range(args.runs * args.rounds):
            ms = dataset.end_ms + (i + 1) * INTERVAL_MS
            doc = {"time": dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=ms), "tags": tags[i % args.scale]}
            doc.update({f: 50.0 for f in FIELDS})
            coll.insert_one(doc)
            after.append(query_cpu_ms(server.pid, lambda: list(coll.aggregate(lastpoint))))
            if len(list(coll.aggregate(lastpoint))) != args.scale:
                raise RuntimeError("lastpoint lost a host after an insert")
        out["lastpoint_after_insert_ms"] = [statistics.fmean(after[r * args.runs:(r + 1) * args.runs])
                                            for r in range(args.rounds)]
        out["end_memory"] = memory_status(server.pid)
        client.close()
        # -- restart: the first lastpoint on the same data
        server.stop()
        server.start()
        settle(server.pid, window_s=1.5)
        client = server.client()
        coll = client[DB][COLLECTION]
        before = memory_status(server.pid)
        out["restart_first_lastpoint_ms"] = query_cpu_ms(server.pid, lambda: list(coll.aggregate(lastpoint)))
        after_first = memory_status(server.pid)
        out["restart_first_lastpoint_anon_mb"] = (after_first["anon"] - before["anon"]) / MB
        out["restart_second_lastpoint_ms"] = query_cpu_ms(server.pid, lambda: list(coll.aggregate(lastpoint)))
        client.close()
    finally:
        server.stop()
        if not args.keep:
            shutil.rmtree(server.workdir, ignore_errors=True)
    return out


def _median(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f}–{max(values):.2f})"


def markdown(results: list[dict]) -> str:
    base = results[0]
    lines = [
        "| days | rows | ingest ms CPU / 1,000 rows (× first) | rows/s | 1-host 1-hour ms (× first) "
        "| lastpoint ms | lastpoint after insert ms (× read-only) | first lastpoint after restart ms, anon MB "
        "| peak RSS MB (anon / file) | end RSS MB (anon / file) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        one = statistics.median(r["one_host_hour_ms"])
        lp, lpi = statistics.median(r["lastpoint_ms"]), statistics.median(r["lastpoint_after_insert_ms"])
        peak, end = r["load_peak"], r["end_memory"]
        lines.append(
            f"| {r['days']} | {r['rows']:,} | {r['ingest_ms_per_1000_rows']:.2f} "
            f"({r['ingest_ms_per_1000_rows'] / base['ingest_ms_per_1000_rows']:.2f}×) | {r['rows_per_s']:,.0f} "
            f"| {_median(r['one_host_hour_ms'])} ({one / statistics.median(base['one_host_hour_ms']):.2f}×) "
            f"| {_median(r['lastpoint_ms'])} | {_median(r['lastpoint_after_insert_ms'])} ({lpi / lp:.2f}×) "
            f"| {r['restart_first_lastpoint_ms']:.1f}, {r['restart_first_lastpoint_anon_mb']:+.0f} "
            f"| {peak['hwm'] / MB:.0f} ({peak['anon'] / MB:.0f} / {peak['file'] / MB:.0f}) "
            f"| {(end['anon'] + end['file']) / MB:.0f} ({end['anon'] / MB:.0f} / {end['file'] / MB:.0f}) |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--days", type=int, action="append", help="data sizes in days (repeatable; 1, 4, 16)")
    ap.add_argument("--scale", type=int, default=100)
    ap.add_argument("--seed", type=int, default=123)
    ap.add_argument("--runs", type=int, default=20, help="query instances per round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--no-pin", action="store_true")
    ap.add_argument("--cache", type=Path, default=ROOT / "bench" / ".cache")
    ap.add_argument("--workdir", type=Path)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--keep", action="store_true", help="keep each size's data directory (under --workdir)")
    args = ap.parse_args(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="tidemark-scaling-"))
    try:
        results = [measure_size(days, args, workdir) for days in args.days or [1, 4, 16]]
    finally:
        if args.workdir is None and not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    print(markdown(results), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
