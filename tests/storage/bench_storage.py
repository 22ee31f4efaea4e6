"""Storage micro-benchmark (not a test): python tests/storage/bench_storage.py [N]

Prints durable insert rate for 1000-record groups (one write fn per group, like one insertMany),
the same with many small concurrent fns, scan_stream rate, and bytes per TSBS-like record.
"""

import os
import random
import sys
import tempfile
import time
from concurrent.futures import wait

import bson

sys.path.insert(0, os.path.dirname(__file__))
from test_storage_compression import tsbs_like_doc  # noqa: E402

from tidemark.storage.engine import open_engine  # noqa: E402
from tidemark.storage.keys import encode_key  # noqa: E402


def main(n: int = 200_000) -> None:
    rng = random.Random(1)
    docs = [tsbs_like_doc(i, rng) for i in range(n)]
    encoded = [bson.encode(d) for d in docs]
    id_keys = [encode_key([d["_id"]]) for d in docs]
    for compressor in ("zstd", "snappy", "none"):
        with tempfile.TemporaryDirectory() as dbpath:
            eng = open_engine(dbpath, compressor=compressor)
            eng.write_sync(lambda w: w.create_collection("b.c", {}))
            t = time.perf_counter()
            futs = []
            for start in range(0, n, 1000):
                if start == 1000:
                    wait(futs)  # like a client awaiting its first insertMany: a dictionary gets trained
                def fn(w, start=start):
                    info = w.get_collection("b.c")
                    for i in range(start, min(start + 1000, n)):
                        w.insert(info, encoded[i], {"_id_": [id_keys[i]]})

                futs.append(eng.write(fn))
            wait(futs)
            dt = time.perf_counter() - t
            stats = dict(eng.stats)
            t = time.perf_counter()
            count = sum(1 for _ in eng.scan_stream("b.c", chunk=1024))
            scan_dt = time.perf_counter() - t
            eng.close()
            size = sum(os.path.getsize(os.path.join(dbpath, f)) for f in os.listdir(dbpath))
            print(f"{compressor:6s} insert {n / dt:>9,.0f} rec/s ({stats['commits']} commits) | "
                  f"scan_stream {count / scan_dt:>10,.0f} rec/s | {size / n:6.1f} B/record on disk "
                  f"(raw BSON {sum(map(len, encoded)) / n:.0f} B)")
    with tempfile.TemporaryDirectory() as dbpath:
        eng = open_engine(dbpath)
        eng.write_sync(lambda w: w.create_collection("b.c", {}))
        t = time.perf_counter()
        futs = []
        for i in range(20_000):
            def fn(w, i=i):
                w.insert(w.get_collection("b.c"), encoded[i], {"_id_": [id_keys[i]]})

            futs.append(eng.write(fn))
        wait(futs)
        dt = time.perf_counter() - t
        print(f"20k single-record fns: {20_000 / dt:,.0f} writes/s in {eng.stats['commits']} commits "
              f"(max group {eng.stats['max_group']})")
        eng.close()



def concurrent_clients(threads: int = 16, per_thread: int = 500) -> None:
    """Many clients each waiting for its own acknowledged single-record write (insertOne-like)."""
    import threading

    with tempfile.TemporaryDirectory() as dbpath:
        eng = open_engine(dbpath)
        eng.write_sync(lambda w: w.create_collection("b.c", {}))
        doc = bson.encode({"_id": 0, "x": "y" * 200})

        def client(k):
            for _ in range(per_thread):
                eng.write(lambda w: w.insert(w.get_collection("b.c"), doc, {})).result()

        workers = [threading.Thread(target=client, args=(k,)) for k in range(threads)]
        t = time.perf_counter()
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        dt = time.perf_counter() - t
        n = threads * per_thread
        print(f"{threads} clients x {per_thread} acked single writes: {n / dt:,.0f} writes/s, "
              f"{eng.stats['commits']} commits for {eng.stats['writes']} writes")
        eng.close()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200_000)
    concurrent_clients()
