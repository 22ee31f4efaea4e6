"""``python -m bench.rounds``: the side-by-side table over alternated rounds (issue 23's acceptance).

    python -m bench.rounds [--rounds 3] [--peers tidemark,victoria,influxdb,clickhouse,duckdb] [--runs 10]
                           [--queries all] [--out DIR] [--json F]

Each round runs ``python -m bench`` once per system, in the order given in even rounds and reversed in odd
ones (so a drift of the machine does not always fall on the same system), each on the same generated rows
(scale 100 × 1 day by default; ``--scale``/``--duration`` pass through). From each run's ``report.json``
it takes the figures a shared machine distorts least — server CPU ms per 1,000 rows incl. the settle,
bytes on disk per row, and server CPU ms per query (the median over the run's timed instances) — and
prints, per figure, every system's median over the rounds with its range (min–max), the best peer, and
Tidemark / best peer. A system that could not run a query (n/a, not expressible) is left out of that row.

Before round 1 an untimed warm-up run of round 1's first system (``--runs 2``, its figures dropped) takes
the machine's first-run costs (cold page cache for the generator, the interpreter's and the peers' files):
without it that system's round-1 figures were the slow end of its range every time (``--no-warmup`` to skip).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.harness import ROOT
from bench.queries import QUERY_TYPES

INGEST = "ingest, server CPU ms / 1,000 rows incl. settle"
STORAGE = "bytes on disk / row"


def figures_of(report: dict) -> dict[str, dict[str, float]]:
    """{system: {figure: value}} of one bench report.json."""
    out: dict[str, dict[str, float]] = {}
    for system in report["systems"]:
        figs: dict[str, float] = {}
        # the system's durable network ingest (Tidemark's replay, InfluxDB's and VictoriaMetrics' line
        # protocol); DuckDB's in-process append has no server CPU
        for load in (system.get("ingest") or {}).values():
            if isinstance(load, dict) and load.get("cpu_ms_per_1000_rows") is not None:
                figs[INGEST] = load["cpu_ms_per_1000_rows"]
                break
        storage = system.get("storage") or {}
        if storage.get("bytes_per_row") is not None:
            figs[STORAGE] = storage["bytes_per_row"]
        for query, q in (system.get("queries") or {}).items():
            if q.get("cpu_median_ms") is not None:
                figs[f"{query}, server CPU ms"] = q["cpu_median_ms"]
        out[system["name"]] = figs
    return out


def merge(rounds: list[dict[str, dict[str, float]]]) -> dict[str, dict[str, list[float]]]:
    """{figure: {system: [value per round]}}."""
    table: dict[str, dict[str, list[float]]] = {}
    for figs in rounds:
        for system, values in figs.items():
            for name, value in values.items():
                table.setdefault(name, {}).setdefault(system, []).append(value)
    return table


def _cell(values: list[float]) -> str:
    digits = 2 if statistics.median(values) < 100 else 0
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}–{max(values):.{digits}f})"


def markdown(table: dict[str, dict[str, list[float]]], systems: list[str]) -> str:
    order = [INGEST, STORAGE] + [f"{q}, server CPU ms" for q in QUERY_TYPES]
    head = "| figure | " + " | ".join(systems) + " | best peer | Tidemark / best |"
    lines = [head, "|---|" + "---:|" * (len(systems) + 2)]
    for name in order:
        row = table.get(name)
        if not row:
            continue
        cells = [_cell(row[s]) if s in row else "n/a" for s in systems]
        peers = {s: statistics.median(v) for s, v in row.items() if s != "tidemark"}
        best = min(peers, key=peers.__getitem__) if peers else None
        ratio = (f"{statistics.median(row['tidemark']) / peers[best]:.2f}×"
                 if best is not None and "tidemark" in row and peers[best] > 0 else "—")
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {best or '—'} | {ratio} |")
    return "\n".join(lines) + "\n"


WARMUP = 0  # the round number of the untimed warm-up run in ``schedule``


def schedule(systems: list[str], rounds: int, warmup: bool) -> list[tuple[int, str]]:
    """(round number, system) of every bench run in order: rounds 1.. with the systems in the given
    order in odd-numbered rounds and reversed in even ones, after one warm-up run (round ``WARMUP``) of
    round 1's first system when ``warmup``."""
    runs = [(WARMUP, systems[0])] if warmup and systems and rounds > 0 else []
    for r in range(rounds):
        runs.extend((r + 1, system) for system in (systems if r % 2 == 0 else systems[::-1]))
    return runs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--peers", default="tidemark,victoria,influxdb,clickhouse,duckdb")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--queries", default="all")
    ap.add_argument("--scale", default="100")
    ap.add_argument("--duration", default="1d")
    ap.add_argument("--out", type=Path, help="where each run's report goes (default: a temporary directory)")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--no-warmup", dest="warmup", action="store_false",
                    help="no untimed warm-up run before round 1")
    args = ap.parse_args(argv)
    systems = [s.strip() for s in args.peers.split(",") if s.strip()]
    out = args.out or Path(tempfile.mkdtemp(prefix="tidemark-rounds-"))
    rounds: list[dict[str, dict[str, float]]] = []
    for r, system in schedule(systems, args.rounds, args.warmup):
        warm = r == WARMUP
        results = out / ("warmup-" + system if warm else f"round{r}-{system}")
        cmd = [sys.executable, "-m", "bench", "--peers", system, "--queries", args.queries, "--runs",
               "2" if warm else str(args.runs), "--scale", args.scale, "--duration", args.duration,
               "--results", str(results), "--no-pymongo", "--no-progress", "--connections", "0"]
        print(f"warm-up (untimed): {system}" if warm else f"round {r}: {system}", file=sys.stderr, flush=True)
        done = subprocess.run(cmd, cwd=ROOT, check=False)
        if done.returncode == 1:
            print(f"{system}: a wrong query result (see {results}); the rounds stop", file=sys.stderr)
            return 1
        if warm:
            continue
        report = json.loads((results / "latest" / "report.json").read_text())
        if len(rounds) < r:
            rounds.append({})
        rounds[r - 1].update(figures_of(report))
    table = merge(rounds)
    if args.json:
        args.json.write_text(json.dumps({"systems": systems, "rounds": rounds}, indent=1))
    print(markdown(table, systems), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
