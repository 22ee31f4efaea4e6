"""Micro-benchmark of index key encoding on the insert path: 1,000,000 typical keys.

``python -m bench.key_encoding [--n 250000] [--repeat 7]`` encodes four kinds of key, n of each (a
time-series bucket key: meta document, control.min/max time; a double measurement; an int with a
descending string; an ObjectId with a long) and prints the best CPU time per key of ``repeat`` passes
(process time: the machine's other load moves it less than wall time). Compare builds by running it with
each one's ``tidemark`` on the path (e.g. ``PYTHONPATH=<import tree>``).
"""

from __future__ import annotations

import argparse
import datetime
import random
import time

from bson.int64 import Int64
from bson.objectid import ObjectId

from tidemark.storage.keys import encode_key


def kinds(n: int) -> dict[str, list[tuple[tuple, tuple]]]:
    rnd = random.Random(7)
    base = datetime.datetime(2024, 1, 1)
    return {
        "bucket key (meta doc, min/max time)": [
            (({"hostname": f"host_{rnd.randrange(100)}", "region": "eu-west-1"},
              base + datetime.timedelta(seconds=10 * i), base + datetime.timedelta(seconds=10 * i + 9)), (1, 1, 1))
            for i in range(n)],
        "double measurement": [((rnd.uniform(0, 100),), (1,)) for _ in range(n)],
        "int + descending string": [((rnd.randrange(1 << 20), f"user{i}"), (1, -1)) for i in range(n)],
        "ObjectId + long": [((ObjectId(), Int64(i * 1000)), (1, 1)) for i in range(n)],
    }


def best_pass(keys: list[tuple[tuple, tuple]], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.process_time()
        for values, directions in keys:
            encode_key(values, directions)
        best = min(best, time.process_time() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=250_000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    total = 0.0
    for name, keys in kinds(args.n).items():
        seconds = best_pass(keys, args.repeat)
        total += seconds
        print(f"{name:38} {seconds / args.n * 1e6:6.2f} us/key")
    print(f"{'all ' + format(4 * args.n, ',') + ' keys':38} {total:6.2f} s")


if __name__ == "__main__":
    main()
