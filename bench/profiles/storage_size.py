"""Where do the bytes of a TSBS load go on disk?

Starts a Tidemark server on a fresh dbpath, creates the benchmark's ``cpu`` time-series collection
(timeField "time", metaField "tags", index {"tags.hostname": 1, time: -1}), inserts the TSBS rows of
``bench/generator.py`` in batches of 1000, shuts the server down cleanly (SIGTERM), then opens the LMDB
environment read-only and breaks the file down: pages per sub-database (records, indexes, journal,
catalog/meta), free pages, stored value bytes per compression tag, and bytes per row.

    .venv/bin/python -m bench.profiles.storage_size --scale 10 [--duration 1d] [--keep DIR]
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import lmdb

from bench.generator import FIELDS, START, generate, parse_duration
from bench.harness import disk_bytes, free_port, stop_process, wait_port

ROOT = Path(__file__).resolve().parents[2]
PY = str(ROOT / ".venv" / "bin" / "python")


def load(dbpath: str, scale: int, duration_s: int, extra: list[str]) -> int:
    import datetime as dt

    import pymongo

    port = free_port()
    log = open(os.path.join(dbpath, "..", f"storage-size-{port}.log"), "wb")
    proc = subprocess.Popen([PY, "-m", "tidemark", "--port", str(port), "--dbpath", dbpath, "--quiet", *extra],
                            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_port(port, proc)
        client = pymongo.MongoClient(port=port, directConnection=True)
        db = client.benchmark
        db.create_collection("cpu", timeseries={"timeField": "time", "metaField": "tags"})
        db.cpu.create_index([("tags.hostname", 1), ("time", -1)])
        data = generate(scale, duration_s, 123)
        batch: list[dict] = []
        rows = 0
        t0 = time.monotonic()
        for ms, host, values in data.iter_rows():
            doc = {"time": START + dt.timedelta(milliseconds=ms - 1451606400000), "tags": data.tags[host]}
            doc.update(zip(FIELDS, values, strict=True))
            batch.append(doc)
            if len(batch) == 1000:
                db.cpu.insert_many(batch, ordered=False)
                rows += len(batch)
                batch = []
        if batch:
            db.cpu.insert_many(batch, ordered=False)
            rows += len(batch)
        print(f"inserted {rows:,} rows in {time.monotonic() - t0:.1f} s", file=sys.stderr)
        client.close()
        return rows
    finally:
        if not stop_process(proc):
            print("server did not stop cleanly", file=sys.stderr)


def breakdown(dbpath: str) -> dict:
    """Pages per sub-database, free pages, and stored value bytes per tag of record stores."""
    env = lmdb.open(dbpath, readonly=True, lock=False, max_dbs=100000, subdir=True)
    info, stat = env.info(), env.stat()
    psize = stat["psize"]
    out: dict = {"file_pages": info["last_pgno"] + 1, "psize": psize, "dbs": {}}
    used = stat["branch_pages"] + stat["leaf_pages"] + stat["overflow_pages"]
    with env.begin() as txn:
        names = [k for k, _ in txn.cursor()]
    for name in names:
        db = env.open_db(name, create=False)
        with env.begin() as txn:
            s = txn.stat(db)
            pages = s["branch_pages"] + s["leaf_pages"] + s["overflow_pages"]
            used += pages
            tags: collections.Counter = collections.Counter()
            sizes: collections.Counter = collections.Counter()
            if name.startswith(b"r:") or name == b"_journal":
                for _, v in txn.cursor(db=db):
                    tags[v[0]] += 1
                    sizes[v[0]] += len(v)
            out["dbs"][name.decode()] = {"entries": s["entries"], "pages": pages, "bytes": pages * psize,
                                         "overflow_pages": s["overflow_pages"],
                                         "value_bytes_by_tag": dict(sizes), "values_by_tag": dict(tags)}
    out["free_pages"] = out["file_pages"] - used
    env.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=int, default=10)
    ap.add_argument("--duration", default="1d")
    ap.add_argument("--keep", help="dbpath to use and keep (default: a temporary one, removed)")
    ap.add_argument("--skip-load", action="store_true", help="only analyse an existing --keep dbpath")
    ap.add_argument("server_args", nargs="*", help="extra server flags (after --)")
    args = ap.parse_args()
    duration_s = parse_duration(args.duration)
    parent = tempfile.mkdtemp(prefix="tm-size-")
    dbpath = args.keep or os.path.join(parent, "db")
    os.makedirs(dbpath, exist_ok=True)
    try:
        rows = (generate(args.scale, duration_s, 123).rows if args.skip_load
                else load(dbpath, args.scale, duration_s, args.server_args))
        total = disk_bytes(Path(dbpath))
        b = breakdown(dbpath)
        psize = b["psize"]
        print(f"rows {rows:,}  du {total:,} B  = {total / rows:.2f} B/row   "
              f"(file pages {b['file_pages']:,}, free {b['free_pages']:,} = "
              f"{b['free_pages'] * psize / rows:.2f} B/row)")
        for name, d in sorted(b["dbs"].items(), key=lambda kv: -kv[1]["bytes"]):
            if d["pages"] == 0:
                continue
            tags = ", ".join(f"tag{t}: {n:,} values {d['value_bytes_by_tag'][t] / rows:.2f} B/row"
                             for t, n in sorted(d["values_by_tag"].items()))
            print(f"  {name:12s} entries {d['entries']:>9,}  pages {d['pages']:>7,} "
                  f"(overflow {d['overflow_pages']:>7,})  {d['bytes'] / rows:6.2f} B/row  {tags}")
    finally:
        shutil.rmtree(parent, ignore_errors=True)


if __name__ == "__main__":
    main()
