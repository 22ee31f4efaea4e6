"""The generated differential run: time-series collections against a regular collection.

``python -m bench.differential --cases 20000 [--seed N] [--documents 150] [--show 5]`` starts its own
server (``python -m tidemark`` on a free port, fresh dbpath), loads the same random measurements into a
regular collection and two time-series collections (metaField ``m``; no metaField) and runs every
generated case (tests/harness/pipeline_grammar.py: pipelines and finds) against all three; prints
the first differences as they are found (seed, case, both answers) and ``N cases, D differences``. Exit status 1 when
there is a difference. ``--uri`` runs against a server already running instead.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import pymongo

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from harness import ServerProcess, pipeline_grammar, ts_differential  # noqa: E402


def run(uri: str, cases: int, seed: int, documents: int, show: int, progress: bool = True) -> int:
    client = pymongo.MongoClient(uri)
    database = client["bench_differential"]
    ts_differential.load(database, pipeline_grammar.documents(random.Random(seed), documents))
    grammar = pipeline_grammar.Grammar(random.Random(seed))
    differences: list[str] = []
    kinds: Counter = Counter()
    errors: Counter = Counter()
    start = time.monotonic()
    for i in range(cases):
        case = grammar.case()
        kinds[case.kind] += 1
        expected = ts_differential.run(database["reg"], case)
        if expected[0] == "error":
            errors[expected[1]] += 1
        for name in ts_differential.TIME_SERIES:
            message = ts_differential.check(database, case, name, expected)
            if message:
                differences.append(f"seed {seed}, case {i}: {message}")
                if len(differences) <= show:  # as found: a long run shows its first ones early
                    print("\n" + differences[-1][:4000] + "\n", flush=True)
        if progress and (i + 1) % 1000 == 0:
            print(f"  {i + 1} cases, {len(differences)} differences, {time.monotonic() - start:.0f} s", flush=True)
    client.drop_database("bench_differential")
    client.close()
    print(f"{cases} cases, {len(differences)} differences")
    print(f"  ({kinds['aggregate']} pipelines, {kinds['find']} finds, {kinds['count']} counts, "
          f"{kinds['distinct']} distincts; each on 2 time-series collections; "
          f"{sum(errors.values())} answered an error on both, codes {dict(errors.most_common(8))}; "
          f"{time.monotonic() - start:.0f} s)")
    return 1 if differences else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.differential", description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--documents", type=int, default=150, help="measurements in each collection")
    parser.add_argument("--show", type=int, default=5, help="differences printed in full")
    parser.add_argument("--uri", help="a running server (default: start one)")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    if args.uri:
        return run(args.uri, args.cases, args.seed, args.documents, args.show, not args.no_progress)
    with tempfile.TemporaryDirectory(prefix="tidemark-differential-") as tmp:
        server = ServerProcess(Path(tmp) / "db", log_path=Path(tmp) / "tidemark.log").start()
        try:
            return run(server.uri, args.cases, args.seed, args.documents, args.show, not args.no_progress)
        finally:
            server.terminate()


if __name__ == "__main__":
    sys.exit(main())
