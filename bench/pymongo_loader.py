"""The real-client loader: pymongo ``insert_many(ordered=False)`` in batches of 1000, several threads.

Builds a plain dict per row the way an application would, so the figure includes pymongo's own cost
(≈200k docs/s on this hardware: pymongo itself is the limit, performance.md §3). Threads take batch
numbers as ``--loader`` assigns them (``bench.batch_order``; by default from a shared queue, so batches
are sent roughly in load order).

Run in its own process (``python -m bench.pymongo_loader ...``) so it can be pinned to the loader core; it
regenerates the dataset from (scale, duration, seed) and writes one JSON object to stdout like
bench.replay: rows, seconds, samples, error.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import threading
import time

from bench.batch_order import LOADERS, assign
from bench.generator import FIELDS, START, Dataset, generate, parse_duration
from bench.messages import BATCH, COLLECTION, DB


def batch_documents(dataset: Dataset, first_row: int, count: int) -> list[dict]:
    tags = dataset.tags
    docs = []
    for ms, host, values in dataset.iter_rows(first_row, first_row + count):
        doc = {"measurement": "cpu", "time": START + dt.timedelta(milliseconds=ms - 1451606400000)}
        doc.update(zip(FIELDS, values, strict=True))
        doc["tags"] = dict(tags[host])
        docs.append(doc)
    return docs


def load(
    uri: str,
    dataset: Dataset,
    threads: int,
    limit_rows: int | None = None,
    progress=False,
    loader: str = "ordered",
) -> dict:
    from pymongo import MongoClient

    total = dataset.rows if limit_rows is None else min(limit_rows, dataset.rows)
    batches = -(-total // BATCH)
    batches_of = assign(batches, threads, loader)
    lock = threading.Lock()
    samples: list[tuple[float, int]] = []
    state = {"rows": 0, "error": None}
    client = MongoClient(uri, maxPoolSize=threads + 2)
    coll = client[DB][COLLECTION]
    client.admin.command("ping")
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=total, unit="rows", unit_scale=True, desc="  pymongo", file=sys.stderr)

    def worker(mine) -> None:
        for b in mine:
            if state["error"] is not None:
                return
            first = b * BATCH
            docs = batch_documents(dataset, first, min(BATCH, total - first))
            try:
                result = coll.insert_many(docs, ordered=False)
                if len(result.inserted_ids) != len(docs):
                    raise RuntimeError(f"inserted {len(result.inserted_ids)} of {len(docs)}")
            except Exception as exc:  # the whole load stops and reports the first failure
                state["error"] = f"{type(exc).__name__}: {str(exc)[:600]}"
                return
            with lock:
                state["rows"] += len(docs)
                samples.append((time.perf_counter() - t0, state["rows"]))
            if bar is not None:
                bar.update(len(docs))

    t0 = time.perf_counter()
    pool = [threading.Thread(target=worker, args=(mine,)) for mine in batches_of]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    seconds = time.perf_counter() - t0
    if bar is not None:
        bar.close()
    client.close()
    return {"rows": state["rows"], "seconds": seconds, "samples": samples, "error": state["error"]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="load the TSBS rows with pymongo insert_many")
    p.add_argument("--uri", required=True)
    p.add_argument("--scale", type=int, required=True)
    p.add_argument("--duration", default="1d")
    p.add_argument("--seed", type=int, default=123)
    p.add_argument("--threads", type=int, default=4)
    p.add_argument("--limit-rows", type=int, default=None)
    p.add_argument("--loader", choices=LOADERS, default="ordered", help="which batches each thread sends")
    p.add_argument("--progress", action="store_true")
    args = p.parse_args(argv)
    dataset = generate(args.scale, parse_duration(args.duration), args.seed)
    result = load(args.uri, dataset, args.threads, args.limit_rows, args.progress, args.loader)
    json.dump(result, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
