"""Raw LMDB appends of the same bytes: the storage engine's own limit (performance.md §2).

Each cached insert frame becomes one synced LMDB write transaction that appends its 1000 documents under
8-byte big-endian counters, unchanged and uncompressed: durable group-of-1000 commits with no MongoDB
meaning at all. Runs in this process, pinned to the server core.
"""

from __future__ import annotations

import os
import struct
import time

from bench.harness import Context, SystemResult, disk_bytes, ingest_stats, progress_bar
from bench.messages import op_msg_sections, open_frames

KEY = struct.Struct(">Q")


def run(ctx: Context) -> SystemResult:
    import lmdb

    result = SystemResult(
        "lmdb-append", f"py-lmdb {lmdb.__version__}: raw BSON appends, one synced commit per 1000"
    )
    path = ctx.workdir / "lmdb-append"
    path.mkdir(parents=True, exist_ok=True)
    saved = os.sched_getaffinity(0)
    if ctx.pin:
        os.sched_setaffinity(0, {0})
    env = lmdb.open(str(path), map_size=1 << 40, sync=True, metasync=True)
    mm, offsets = open_frames(ctx.frames_path)
    bar = progress_bar(ctx, ctx.dataset.rows, "  lmdb append")
    samples, rows, key = [], 0, 0
    try:
        t0 = time.perf_counter()
        for offset, length in offsets:
            _, sequences = op_msg_sections(mm[offset : offset + length])
            docs = sequences["documents"]
            with env.begin(write=True) as txn:
                put = txn.put
                for doc in docs:
                    key += 1
                    put(KEY.pack(key), doc, append=True)
            rows += len(docs)
            samples.append((time.perf_counter() - t0, rows))
            bar.update(len(docs))
        seconds = time.perf_counter() - t0
    finally:
        bar.close()
        env.close()
        mm.close()
        os.sched_setaffinity(0, saved)
    result.ingest["append"] = ingest_stats(
        {"rows": rows, "seconds": seconds, "samples": samples, "error": None}, ctx.dataset.rows, ctx.pin
    )
    size = disk_bytes(path)
    result.storage = {
        "bytes": size,
        "bytes_per_row": size / ctx.dataset.rows,
        "note": "raw BSON, no compression",
    }
    return result
