"""Filter evaluation rate over in-memory documents (acceptance figure for the query core).

Usage: python bench/filter_rate.py [N]   (default 1_000_000 documents)

Builds N flat documents shaped like time-series measurements, compiles a 3-clause filter once and
times one pass of the compiled predicate. Also checks the count against a plain-Python evaluation
so a fast-but-wrong predicate cannot report a figure.
"""

from __future__ import annotations

import datetime as dt
import random
import sys
import time

from tidemark.query.match import compile_filter

FILTERS = {
    "range+eq (3 clauses)": {"usage": {"$gte": 20.0, "$lt": 80.0}, "host": "host_7", "region": {"$ne": "eu"}},
    "equality x3": {"host": "host_7", "region": "us", "cpu": 3},
    "3 ranges, unselective": {"usage": {"$gte": 10.0}, "cpu": {"$lt": 6}, "_id": {"$gte": 0}},
    "$in + range": {
        "host": {"$in": ["host_1", "host_2", "host_3"]},
        "usage": {"$gt": 50},
        "cpu": {"$lte": 4},
    },
}


def make_docs(n: int, seed: int = 1) -> list[dict]:
    rng = random.Random(seed)
    base = dt.datetime(2024, 1, 1)
    regions = ["us", "eu", "ap"]
    return [
        {
            "_id": i,
            "time": base + dt.timedelta(seconds=i),
            "host": f"host_{rng.randrange(20)}",
            "region": regions[i % 3],
            "cpu": rng.randrange(8),
            "usage": rng.random() * 100.0,
        }
        for i in range(n)
    ]


def reference_count(name: str, docs: list[dict]) -> int:
    if name.startswith("range+eq"):
        return sum(
            1 for d in docs if 20.0 <= d["usage"] < 80.0 and d["host"] == "host_7" and d["region"] != "eu"
        )
    if name.startswith("equality"):
        return sum(1 for d in docs if d["host"] == "host_7" and d["region"] == "us" and d["cpu"] == 3)
    if name.startswith("3 ranges"):
        return sum(1 for d in docs if d["usage"] >= 10.0 and d["cpu"] < 6 and d["_id"] >= 0)
    return sum(
        1 for d in docs if d["host"] in ("host_1", "host_2", "host_3") and d["usage"] > 50 and d["cpu"] <= 4
    )


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    docs = make_docs(n)
    baseline = time.perf_counter()
    sum(1 for d in docs if d)  # loop overhead alone, for reference
    overhead = time.perf_counter() - baseline
    print(f"{'(empty loop)':24s} {n / overhead / 1e6:6.2f} M docs/s")
    for name, flt in FILTERS.items():
        pred = compile_filter(flt)
        start = time.perf_counter()
        matched = sum(1 for d in docs if pred(d))
        elapsed = time.perf_counter() - start
        assert matched == reference_count(name, docs), name
        print(f"{name:24s} {n / elapsed / 1e6:6.2f} M docs/s  ({matched} matched, {elapsed:.2f}s)")


if __name__ == "__main__":
    main()
