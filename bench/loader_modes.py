"""``python -m bench.loader_modes``: durable ingest of the same rows by the three loader modes, one session.

Issue 15 item 4: writers whose times interleave (``interleaved``) and a parallel backfill (``ranges``,
connection i sends the i-th contiguous 1/n of the batches) must ingest at >= 0.9x the ``ordered`` rate
with a bucket count within 10% of the ordered load's. Each mode loads the pre-encoded frames
(``bench.replay``) into a fresh Tidemark time-series collection (the benchmark's collection and index);
``--rounds`` repeats the three modes, each round starting one mode later (``schedule``), so that a noisy
machine and a load's place in the round hit each mode alike. After each
load the server is let settle (``harness.settle``): the engine writes buckets a load archived in full
~2 s after their last row, so a short ordered load leaves that work for after its last acknowledgement
while a parallel backfill does much of it during the load; rows per server CPU-s *including* the settle
compares the modes' whole cost. Prints a markdown table (and ``--json`` the raw figures):

    .venv/bin/python -m bench.loader_modes                 # 100 hosts x 3,600 ticks, batches of 1,000, 4 connections
    .venv/bin/python -m bench.loader_modes --scale 10 --duration 1h --rounds 3
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from bench.batch_order import LOADERS
from bench.generator import generate, parse_duration
from bench.harness import ROOT, Context, can_pin, replay_args, run_loader, settle
from bench.messages import build_cache
from bench.peers.tidemark import TidemarkServer, bucket_count, setup_collection


def load_once(ctx: Context, workdir: Path) -> dict:
    """One replay load in ``ctx.loader`` mode on a fresh server: rows/s, server CPU, buckets."""
    server = TidemarkServer(ctx, workdir)
    try:
        server.start()
        client = server.client()
        try:
            setup_collection(client, timeseries=True)
            result = run_loader(ctx, replay_args(ctx, server.port), server.pid)
            if result["error"]:
                raise RuntimeError(f"{ctx.loader} load: {result['error']}")
            settled = settle(server.pid)
            cpu = result.get("server_cpu_s")
            total_cpu = cpu + settled["settle_cpu_s"] if cpu is not None and settled["settle_cpu_s"] is not None else None
            return {
                "settle_cpu_s": settled["settle_cpu_s"],
                "rows_per_cpu_s_settled": result["rows"] / total_cpu if total_cpu else None,
                "rows": result["rows"],
                "seconds": result["seconds"],
                "rows_per_s": result["rows"] / result["seconds"],
                "server_cpu_s": result.get("server_cpu_s"),
                "buckets": bucket_count(client),
            }
        finally:
            client.close()
    finally:
        server.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def schedule(modes: list[str], rounds: int) -> list[str]:
    """The order of the loads: round r starts at mode r (mod n), so each mode runs first, second, ...
    equally often. A load's place in the round changes its rate on this machine: with the fixed order
    ordered, interleaved, ranges, ranges measured 0.79x ordered (7 rounds); with the order reversed, 0.94x."""
    n = len(modes)
    return [modes[(r + k) % n] for r in range(rounds) for k in range(n)]


def table(runs: dict[str, list[dict]]) -> str:
    """Median of each mode's rounds, with the ratios item 4 asks for."""
    med = {m: {k: statistics.median(r[k] for r in rs) for k in ("rows_per_s", "buckets")} for m, rs in runs.items()}
    for m, rs in runs.items():
        for key, name in (("server_cpu_s", "cpu"), ("settle_cpu_s", "settle"), ("rows_per_cpu_s_settled", "whole")):
            values = [r[key] for r in rs if r.get(key) is not None]
            med[m][name] = statistics.median(values) if values else None
    base = med.get("ordered")
    lines = [
        "| loader | rows/s (median) | server CPU s | + settle CPU s | rows per server CPU-s incl. settle | buckets "
        "| rate / ordered | whole-cost rate / ordered | buckets / ordered |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]

    def num(v, fmt):
        return "—" if v is None else fmt.format(v)

    for m, f in med.items():
        rate = f"{f['rows_per_s'] / base['rows_per_s']:.2f}" if base else "—"
        whole = f"{f['whole'] / base['whole']:.2f}" if base and f["whole"] and base["whole"] else "—"
        buckets = f"{f['buckets'] / base['buckets']:.3f}" if base else "—"
        lines.append(f"| {m} | {f['rows_per_s']:,.0f} | {num(f['cpu'], '{:.1f}')} | {num(f['settle'], '{:.1f}')} "
                     f"| {num(f['whole'], '{:,.0f}')} | {f['buckets']:,.0f} | {rate} | {whole} | {buckets} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.loader_modes", description=__doc__.splitlines()[0])
    p.add_argument("--scale", type=int, default=100, help="hosts (default 100)")
    p.add_argument("--duration", default="10h", help="span of data (default 10h = 3,600 ticks)")
    p.add_argument("--workers", type=int, default=4, help="loader connections (default 4)")
    p.add_argument("--seed", type=int, default=123)
    p.add_argument("--rounds", type=int, default=1, help="times each mode is loaded (default 1)")
    p.add_argument("--modes", default=",".join(LOADERS), help="comma list of loader modes")
    p.add_argument("--cache", type=Path, default=ROOT / "bench" / ".cache")
    p.add_argument("--no-pin", action="store_true")
    p.add_argument("--tidemark-cmd", default=None)
    p.add_argument("--json", action="store_true", help="also print every round's figures as JSON")
    args = p.parse_args(argv)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not modes or any(m not in LOADERS for m in modes):
        p.error(f"--modes: choose from {', '.join(LOADERS)}")
    dataset = generate(args.scale, parse_duration(args.duration), args.seed)
    frames = build_cache(dataset, args.cache)
    workdir = Path(tempfile.mkdtemp(prefix="tidemark-loaders-"))
    runs: dict[str, list[dict]] = {m: [] for m in modes}
    try:
        for mode in schedule(modes, args.rounds):
            ctx = Context(dataset=dataset, frames_path=frames, workdir=workdir, queries=[], runs=1,
                          seed=args.seed, workers=args.workers, pin=can_pin() and not args.no_pin,
                          progress=False, loader=mode)  # fmt: skip
            if args.tidemark_cmd:
                ctx.tidemark_cmd = args.tidemark_cmd.split()
            figures = load_once(ctx, workdir / mode)
            runs[mode].append(figures)
            print(f"  {mode}: {figures['rows_per_s']:,.0f} rows/s, {figures['buckets']:,} buckets", file=sys.stderr)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"{dataset.rows:,} rows ({args.scale} hosts x {dataset.rows // args.scale:,} ticks), batches of 1,000, "
          f"{args.workers} connections, {args.rounds} round(s)\n")  # fmt: skip
    print(table(runs))
    if args.json:
        print(json.dumps(runs, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
