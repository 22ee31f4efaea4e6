"""Does the bucket cache's cost per eviction depend on how many entries it holds?

``python -m bench.cache_evictions [--sizes 5000,50000,150000] [--inserts 50000]``

Fills a ``BucketCache`` sized for each count of ~700-byte entries to twice that many inserts (so its
CLOCK hand has already gone round), then times ``--inserts`` more misses, each evicting one entry, and
prints microseconds per insert and the ratio of the largest size's figure to the smallest's (the target:
within 1.5x; a dict whose first item is found by walking the slots its earlier evictions deleted took
2.9 -> 89 us from 5,000 to 150,000 entries). A full scan of a collection of more stored buckets than the
cache holds (a million series) pays this for every bucket, up to three times.
"""

from __future__ import annotations

import argparse
import time

from tidemark.timeseries.bucketcache import _ENTRY_OVERHEAD, BucketCache

_VALUE = b"x" * 100


def micros_per_eviction(entries: int, inserts: int) -> float:
    cache = BucketCache(budget=entries * (len(_VALUE) + _ENTRY_OVERHEAD))
    for i in range(2 * entries):
        cache.entry("ns", i.to_bytes(8, "big"), _VALUE)
    first = 2 * entries
    start = time.perf_counter()
    for i in range(first, first + inserts):
        cache.entry("ns", i.to_bytes(8, "big"), _VALUE)
    return (time.perf_counter() - start) * 1e6 / inserts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="5000,50000,150000")
    parser.add_argument("--inserts", type=int, default=50_000)
    args = parser.parse_args()
    figures = []
    for size in (int(s) for s in args.sizes.split(",")):
        figures.append(micros_per_eviction(size, args.inserts))
        print(f"{size:>9,} entries: {figures[-1]:6.1f} us per insert that evicts", flush=True)
    print(f"largest / smallest: {figures[-1] / figures[0]:.2f}x (target <= 1.5x)")


if __name__ == "__main__":
    main()
