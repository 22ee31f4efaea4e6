"""``python -m bench``: the TSBS-shaped benchmark of Tidemark and its peers, end to end (see bench/README.md).

Phases: generate the rows, encode the insert messages once (cached), compute the naive expected query
results, then for each system: start it, load, check and time the queries, measure bytes on disk, stop.
Finally write results/<timestamp>/{report.md, report.json, chart.png} and point results/latest at it.

Exit status: 0 when the run completed; 1 when a system returned a wrong query result (the report is still
written and the mismatch printed); 2 with ``--strict`` when any system failed (cannot start, load errors).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

from bench import report
from bench.batch_order import LOADERS
from bench.generator import generate, parse_duration
from bench.harness import ROOT, Context, Interleaver, SystemResult, can_pin, progress_bar
from bench.messages import build_cache, cache_path
from bench.peers import PEERS
from bench.queries import QUERY_TYPES, ResultMismatch


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    p.add_argument("--scale", type=int, default=100, help="number of hosts (default 100)")
    p.add_argument("--duration", default="1d", help="span of data: 1d, 12h, 30m ... (default 1d)")
    p.add_argument("--workers", type=int, default=8, help="loader connections / threads (default 8)")
    p.add_argument("--seed", type=int, default=123, help="seed of data and query parameters (default 123)")
    p.add_argument("--runs", type=int, default=20, help="timed runs per query type (default 20)")
    p.add_argument(
        "--query-budget",
        type=float,
        default=30.0,
        help="seconds of query time a system may spend checking one query type before it is timed on fewer "
        "(>= 3) instances (default 30)",
    )
    p.add_argument(
        "--min-runs",
        type=int,
        default=3,
        help="instances a system over its query budget is still checked and timed on (default 3)",
    )
    p.add_argument("--peers", default="all", help=f"comma list or 'all' (in this order): {','.join(PEERS)}")
    p.add_argument("--queries", default="all", help=f"comma list or 'all': {','.join(QUERY_TYPES)}")
    p.add_argument("--results", type=Path, default=ROOT / "bench" / "results", help="results folder")
    p.add_argument("--cache", type=Path, default=ROOT / "bench" / ".cache", help="encoded-message cache")
    p.add_argument(
        "--workdir", type=Path, default=None, help="where data directories go (default: a tmp dir)"
    )
    p.add_argument("--keep", action="store_true", help="keep the data directories afterwards")
    p.add_argument(
        "--connections", type=int, default=500, help="connections to hold against Tidemark (0: skip)"
    )
    p.add_argument(
        "--loader",
        choices=LOADERS,
        default="ordered",
        help="which batches each loader connection sends: a shared queue (ordered), every n-th batch "
        "(interleaved) or a contiguous 1/n of them (ranges, a parallel backfill); see bench/batch_order.py",
    )
    p.add_argument("--no-pymongo", action="store_true", help="skip the pymongo-client loads")
    p.add_argument("--no-pin", action="store_true", help="do not taskset server and loader to separate cores")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument("--strict", action="store_true", help="exit 2 if any system failed to run")
    p.add_argument(
        "--interleave",
        action="store_true",
        help="load every system first (one after the other) and keep them all up, then run each query instance "
        "on each in turn: query figures compared at the same machine speed (bench.harness.Interleaver)",
    )
    p.add_argument(
        "--tidemark-cmd", default=None, help="command that starts Tidemark (default: python -m tidemark)"
    )
    p.add_argument(
        "--tidemark-auth",
        action="store_true",
        help="run Tidemark with --auth: a user is created and loaders and queries authenticate (SCRAM-SHA-256)",
    )
    args = p.parse_args(argv)
    args.duration_s = parse_duration(args.duration)
    args.peer_list = _choose(p, "peers", args.peers, PEERS)
    args.query_list = _choose(p, "queries", args.queries, QUERY_TYPES)
    if args.scale < 1 or args.workers < 1 or args.runs < 1 or args.min_runs < 1:
        p.error("--scale, --workers, --runs and --min-runs must be >= 1")
    return args


def _choose(p: argparse.ArgumentParser, what: str, text: str, known) -> list[str]:
    if text == "all":
        return list(known)
    chosen = [x.strip() for x in text.split(",") if x.strip()]
    unknown = [x for x in chosen if x not in known]
    if unknown or not chosen:
        p.error(f"unknown {what}: {', '.join(unknown) or '(none)'}; choose from {', '.join(known)}")
    return [x for x in known if x in chosen]  # canonical order


def _interleaved(ctx: Context, names: list[str]) -> tuple[list[SystemResult], ResultMismatch | None]:
    """``--interleave``: each system's run on a thread, started when the previous one has loaded (or
    ended); once all are loaded, the queries of all in turn (``Interleaver.run_queries``); then each run
    goes on to its end (compaction, bytes on disk, stop)."""
    ctx.interleave = interleaver = Interleaver(ctx)
    outcomes: dict[str, SystemResult] = {}
    mismatch: ResultMismatch | None = None

    def runner(name: str):
        def run() -> None:
            try:
                outcomes[name] = PEERS[name](ctx)
            except Exception as exc:  # a peer's run records its failures; anything else is its error too
                outcomes[name] = SystemResult(name, "stopped", errors=[f"{type(exc).__name__}: {exc}"])
        return run

    threads = []
    try:
        for name in names:
            say(f"== {name} (loading; its queries run interleaved with the others')")
            threads.append(interleaver.begin(runner(name)))
        say("== queries, every instance on " + ", ".join(q.system for q in interleaver.arrived) + " in turn")
        interleaver.run_queries()
    except ResultMismatch as exc:
        mismatch = exc
    finally:
        interleaver.release()
        for thread in threads:
            thread.join()
    systems = [outcomes[name] for name in names if name in outcomes]
    if mismatch is not None:
        for res in systems:
            if str(mismatch).startswith(f"{res.name}:"):  # (compare names the system first)
                res.errors.append(str(mismatch))
    for res in systems:
        for e in res.errors:
            say(f"  ! {res.name}: {e}")
    return systems, mismatch


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = dt.datetime.now(dt.UTC)
    t0 = time.perf_counter()
    say(f"generating TSBS cpu-only rows: scale {args.scale} x {args.duration}, seed {args.seed}")
    dataset = generate(args.scale, args.duration_s, args.seed)
    say(f"  {dataset.rows:,} rows")
    cached = cache_path(args.cache, dataset)
    if cached.exists():
        say(f"  insert messages: {cached} (cached)")
    bar = progress_bar(_Quiet(args), 0 if cached.exists() else dataset.rows, "encoding OP_MSG inserts")
    frames = build_cache(dataset, args.cache, progress=bar.update)
    bar.close()

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="tidemark-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    pinned = can_pin() and not args.no_pin
    ctx = Context(
        dataset=dataset,
        frames_path=frames,
        workdir=workdir,
        queries=args.query_list,
        runs=args.runs,
        seed=args.seed,
        workers=args.workers,
        pin=pinned,
        progress=not args.no_progress,
        pymongo=not args.no_pymongo,
        connections=args.connections,
        query_budget_s=args.query_budget,
        min_runs=args.min_runs,
        loader=args.loader,
    )
    if args.tidemark_cmd:
        ctx.tidemark_cmd = args.tidemark_cmd.split()
    if args.tidemark_auth:
        ctx.auth = ("bench", "bench-password")
    if any(p in args.peer_list for p in ("tidemark", "tidemark-regular", "duckdb", "influxdb", "victoria",
                                          "clickhouse")):
        bar = progress_bar(ctx, len(ctx.queries) * args.runs, "naive expected results", "q")
        for q in ctx.queries:
            for params in ctx.params[q]:
                ctx.checker.expected(q, params)
                bar.update(1)
        bar.close()

    systems: list[SystemResult] = []
    mismatch: ResultMismatch | None = None
    if args.interleave:
        systems, mismatch = _interleaved(ctx, args.peer_list)
    else:
        for name in args.peer_list:
            say(f"== {name}")
            try:
                res = PEERS[name](ctx)
            except ResultMismatch as exc:
                mismatch = exc
                res = SystemResult(name, "stopped: wrong query result", errors=[str(exc)])
            systems.append(res)
            for e in res.errors:
                say(f"  ! {name}: {e}")
            if mismatch:
                break

    meta = {
        "started": started.strftime("%Y-%m-%d %H:%M UTC"),
        "scale": args.scale,
        "duration": args.duration,
        "rows": dataset.rows,
        "seed": args.seed,
        "workers": args.workers,
        "loader": args.loader,
        "runs": args.runs,
        "pinned": pinned,
        "peers": args.peer_list,
        "tidemark_auth": bool(args.tidemark_auth),
        "queries": args.query_list,
        "machine": f"{os.cpu_count()} CPUs, Python {platform.python_version()}, {platform.system()} {platform.release()}",
        "seconds": None,
        "result_mismatch": str(mismatch) if mismatch else None,
    }
    meta["seconds"] = round(time.perf_counter() - t0, 1)
    out_dir = args.results / started.strftime("%Y%m%dT%H%M%SZ")
    paths = report.write(out_dir, meta, systems)
    _point_latest(args.results, out_dir)
    if not args.keep and args.workdir is None:
        shutil.rmtree(workdir, ignore_errors=True)
    say(f"report: {paths['md']}\nchart:  {paths['chart']}")
    if mismatch:
        say(
            "\n"
            + "!" * 100
            + "\nWRONG QUERY RESULT — the benchmark stops here:\n"
            + str(mismatch)
            + "\n"
            + "!" * 100
        )
        return 1
    if args.strict and any(s.errors for s in systems):
        say("some systems failed (see the Errors section of the report)")
        return 2
    return 0


class _Quiet:
    """A stand-in context for progress bars before the real Context exists."""

    def __init__(self, args):
        self.progress = not args.no_progress


def _point_latest(results: Path, out_dir: Path) -> None:
    latest = results / "latest"
    tmp = results / f".latest.{os.getpid()}"
    try:
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(out_dir.name)
        os.replace(tmp, latest)
    except OSError as exc:
        say(f"could not update {latest}: {exc}")


if __name__ == "__main__":
    sys.exit(main())
