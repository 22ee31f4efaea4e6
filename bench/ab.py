"""``python -m bench.ab``: two Tidemark builds side by side on the same rows, by server CPU (issue 23.5).

    python -m bench.ab --a "CMD_A" --b "CMD_B" [--rounds 3] [--queries q1,q2] [--scale 100] [--duration 1d]

Each CMD starts a Tidemark server when given ``--port P --dbpath D`` (e.g. ``/path/to/other/.venv/bin/python
-m tidemark``, or a wrapper script that ends in ``exec ... "$@"``: the CPU measured is that of the process
the command starts, so a wrapper must exec the server rather than fork it).

Per round: a fresh server of each build, loaded one after the other with the same pre-encoded rows
(``bench.replay``, the order A, B in even rounds and B, A in odd ones), each left to settle (the deferred
bucket writes count in its ingest cost); then both stay up and, per query type, every instance is first
checked against the naive result on both (the warm-up), then run on A and B alternately instance by
instance (the order flipping each instance). A wrong result stops the run (exit status 1).

Figures, all server CPU (every thread of the server process; wall time on a shared machine measures the
neighbours as much as the build):

- ingest: server CPU ms per 1,000 rows, the load plus the settle after it (``process_cpu_seconds``,
  which counts exited threads too);
- per query type: server CPU ms per instance, the mean over the round's instances
  (``thread_cpu_ns`` around each request, nanosecond resolution);

each as the median over the rounds with the range (min–max), and B/A of the medians. When A and B
ranges overlap, a B/A within the ranges' spread is no evidence of a difference.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shlex
import shutil
import statistics
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from bench.generator import generate, parse_duration
from bench.harness import (
    ROOT,
    Context,
    can_pin,
    ingest_stats,
    replay_args,
    run_loader,
    settle,
    thread_cpu_ns,
)
from bench.messages import COLLECTION, DB, build_cache
from bench.peers.tidemark import TidemarkServer, setup_collection
from bench.queries import QUERY_TYPES, ResultMismatch, compare, normalize_mongo, pipeline

INGEST = "ingest, ms per 1,000 rows"
LABELS = ("A", "B")


@dataclass(frozen=True)
class Figure:
    """One row of the report: a figure's per-round values for A and B, summarized."""

    name: str
    a: list[float]
    b: list[float]

    @staticmethod
    def _summary(values: list[float]) -> tuple[float, float, float] | None:
        return (statistics.median(values), min(values), max(values)) if values else None

    @property
    def a_summary(self):
        return self._summary(self.a)

    @property
    def b_summary(self):
        return self._summary(self.b)

    @property
    def ratio(self) -> float | None:
        """B's median over A's: below 1, B spends less CPU."""
        a, b = self.a_summary, self.b_summary
        return b[0] / a[0] if a and b and a[0] > 0 else None

    @property
    def ranges_overlap(self) -> bool:
        a, b = self.a_summary, self.b_summary
        return bool(a and b and a[1] <= b[2] and b[1] <= a[2])


def figures(samples: dict[str, dict[str, list[float]]]) -> list[Figure]:
    """``samples[label][figure]`` (per-round values) -> the report rows, in the order figures appear in A."""
    return [Figure(name, samples["A"][name], samples["B"].get(name, [])) for name in samples["A"]]


def markdown(meta: dict, rows: list[Figure]) -> str:
    def cell(s) -> str:
        return "—" if s is None else f"{s[0]:.2f} ({s[1]:.2f}–{s[2]:.2f})"

    out = [
        f"A: `{meta['a']}`",
        f"B: `{meta['b']}`",
        f"scale {meta['scale']} × {meta['duration']} = {meta['rows']:,} rows, seed {meta['seed']}, "
        f"{meta['rounds']} rounds, {meta['runs']} instances per query type per round, "
        f"server pinned: {meta['pinned']}",
        "",
        "| server CPU, median (min–max) over rounds | A | B | B/A |",
        "|---|---:|---:|---:|",
    ]
    for f in rows:
        ratio = "—" if f.ratio is None else f"{f.ratio:.2f}" + (" (ranges overlap)" if f.ranges_overlap else "")
        name = f.name if f.name == INGEST else f"{f.name}, ms per query"
        out.append(f"| {name} | {cell(f.a_summary)} | {cell(f.b_summary)} | {ratio} |")
    return "\n".join(out) + "\n"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.ab", description=__doc__.splitlines()[0])
    p.add_argument("--a", required=True, help="command starting build A (given --port P --dbpath D)")
    p.add_argument("--b", required=True, help="command starting build B")
    p.add_argument("--rounds", type=int, default=3, help="rounds, each on fresh servers (default 3)")
    p.add_argument("--queries", default="all", help=f"comma list or 'all': {','.join(QUERY_TYPES)}")
    p.add_argument("--runs", type=int, default=10, help="instances per query type per round (default 10)")
    p.add_argument("--scale", type=int, default=100, help="hosts (default 100)")
    p.add_argument("--duration", default="1d", help="span of data (default 1d)")
    p.add_argument("--seed", type=int, default=123)
    p.add_argument("--workers", type=int, default=8, help="loader connections (default 8)")
    p.add_argument("--cache", type=Path, default=ROOT / "bench" / ".cache", help="encoded-message cache")
    p.add_argument("--workdir", type=Path, default=None, help="where data directories go (default: tmp)")
    p.add_argument("--json", type=Path, default=None, help="also write the per-round values here")
    p.add_argument("--no-pin", action="store_true", help="do not taskset servers and loader")
    args = p.parse_args(argv)
    args.query_list = list(QUERY_TYPES) if args.queries == "all" else args.queries.split(",")
    unknown = [q for q in args.query_list if q not in QUERY_TYPES]
    if unknown:
        p.error(f"unknown queries: {', '.join(unknown)}")
    if args.rounds < 1 or args.runs < 1:
        p.error("--rounds and --runs must be >= 1")
    return args


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    dataset = generate(args.scale, parse_duration(args.duration), args.seed)
    frames = build_cache(dataset, args.cache)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="tidemark-ab-"))
    ctx = Context(
        dataset=dataset, frames_path=frames, workdir=workdir, queries=args.query_list, runs=args.runs,
        seed=args.seed, workers=args.workers, pin=can_pin() and not args.no_pin, progress=False,
        pymongo=False, connections=0,
    )  # fmt: skip
    commands = {"A": shlex.split(args.a), "B": shlex.split(args.b)}
    samples: dict[str, dict[str, list[float]]] = {label: {INGEST: []} for label in LABELS}
    for label in LABELS:
        samples[label].update({q: [] for q in args.query_list})
    say(f"A/B: {dataset.rows:,} rows, {args.rounds} rounds, queries {','.join(args.query_list)}")
    try:
        for r in range(args.rounds):
            order = LABELS if r % 2 == 0 else LABELS[::-1]
            _round(ctx, r, order, commands, samples)
    except ResultMismatch as exc:
        say(f"WRONG QUERY RESULT — the A/B run stops here:\n{exc}")
        return 1
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    meta = {
        "a": args.a, "b": args.b, "scale": args.scale, "duration": args.duration, "rows": dataset.rows,
        "seed": args.seed, "rounds": args.rounds, "runs": args.runs, "pinned": ctx.pin,
    }  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps({"meta": meta, "samples": samples}, indent=1))
    print(markdown(meta, figures(samples)), end="")
    return 0


def _round(ctx: Context, r: int, order, commands, samples) -> None:
    servers: dict[str, TidemarkServer] = {}
    clients = {}
    try:
        for label in order:  # loads one after the other: each has the loader core to itself
            build = dataclasses.replace(ctx, tidemark_cmd=commands[label])
            server = servers[label] = TidemarkServer(build, ctx.workdir / f"round{r}-{label}")
            server.start()
            clients[label] = client = server.client()
            setup_collection(client, timeseries=True)
            loaded = run_loader(ctx, replay_args(ctx, server.port), server.pid)
            loaded.update(settle(server.pid))
            stats = ingest_stats(loaded, ctx.dataset.rows, ctx.pin)
            if stats["error"] or stats["cpu_ms_per_1000_rows"] is None:
                raise RuntimeError(f"{label}: load failed or its CPU unmeasured: {stats['error']}")
            samples[label][INGEST].append(stats["cpu_ms_per_1000_rows"])
            say(f"round {r + 1} {label}: ingest {stats['cpu_ms_per_1000_rows']:.2f} ms server CPU / 1,000 rows")
        for query in ctx.queries:
            colls = {label: clients[label][DB][COLLECTION] for label in order}
            instances = ctx.params[query]
            for label in order:  # check every instance on both (also the warm-up)
                for p in instances:
                    got = normalize_mongo(query, list(colls[label].aggregate(pipeline(query, p))))
                    compare(label, query, p, got, ctx.checker.expected(query, p))
            spent = {label: 0 for label in order}
            for i, p in enumerate(instances):
                for label in order if i % 2 == 0 else order[::-1]:
                    pid = servers[label].pid
                    c0 = thread_cpu_ns(pid)
                    list(colls[label].aggregate(pipeline(query, p)))
                    spent[label] += thread_cpu_ns(pid) - c0
            for label in order:
                samples[label][query].append(spent[label] / len(instances) / 1e6)
    finally:
        for c in clients.values():
            c.close()
        for s in servers.values():
            s.stop()
            shutil.rmtree(s.workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
