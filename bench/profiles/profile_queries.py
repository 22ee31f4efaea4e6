"""Profile the TSBS queries on Tidemark: latency per query type and where the server spends it.

    .venv/bin/python -m bench.profiles.profile_queries DBPATH [--scale 100] [--runs 5]
        [--queries single-groupby-1-1-1,double-groupby-1,high-cpu-1,lastpoint,groupby-orderby-limit]

DBPATH: a data directory holding `benchmark.cpu` (e.g. from `profile_ingest --frames 0 --keep DBPATH`);
the server is started on it (pinned to core 0). Per query type: one warm-up run, then `--runs` seeded
instances (the bench's parameters) timed from pymongo while py-spy samples the server; explain
(executionStats) gives buckets/measurements unpacked. Each sample is attributed to a phase by its innermost
frame matching QUERY_PHASES; threads waiting for work are dropped, so shares are of busy server time.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import tempfile
import time
from collections import Counter

from bench.generator import generate, parse_duration
from bench.profiles._server import ROOT, Server, pin, snapshot_tree
from bench.queries import make_params, pipeline

IDLE = "idle"
QUERY_PHASES: list[tuple[str, str, str]] = [
    ("threading.py", r".", IDLE),
    ("queue.py", r".", IDLE),
    ("concurrent/futures/thread.py", r"^_worker$", IDLE),
    ("asyncio/runners.py", r".", IDLE),
    ("asyncio/base_events.py", r"^(run_forever|_run_once)$", IDLE),
    ("storage/engine.py", r"^_writer_loop$", IDLE),  # blocked in SimpleQueue.get (C): no deeper frame
    # While a query runs in the executor the event loop sits in uvloop's epoll, but py-spy keeps showing
    # the loop thread's last Python frame (the previous reply's transport.write): its sample count follows
    # the query's wall time, not CPU. Counted idle.
    ("server/connection.py", r"^_send$", IDLE),
    ("storage/bucket_reader.py", r".", "bucket scan: bucket codec decode (tag 4)"),
    ("storage/bucket_codec.py", r".", "bucket scan: bucket codec decode (tag 4)"),
    ("storage/compression.py", r".", "bucket scan: zstd decompression"),
    ("storage/", r".", "bucket scan: LMDB read + copy"),
    ("protocol/codec.py", r"^decode", "BSON decode of buckets (control/meta + columns)"),
    ("bson/", r".", "BSON decode of buckets (control/meta + columns)"),
    ("server/timeseries/view.py", r"^(_summary|_partial|_plain)$", "BSON decode of buckets (control/meta + columns)"),
    ("server/timeseries/buckets.py", r"^(unpack_document|document|summary)$", "unpack to measurement dicts"),
    ("server/timeseries/columnar.py", r"^(parse_column|_fast_arrays)$", "columnar: raw BSON columns -> numpy"),
    ("server/timeseries/rawcolumns.py", r"^parse_column$", "columnar: raw BSON columns -> numpy"),
    ("server/timeseries/bucketcache.py", r".", "decoded-bucket cache"),
    ("server/timeseries/stored.py", r"^(summary|bson_summary|_plain)$", "BSON decode of buckets (control/meta + columns)"),
    ("server/timeseries/stored.py", r"^(scan|get_many)$", "bucket scan: LMDB read + copy"),
    ("server/timeseries/stored.py", r".", "stored bucket parts (partial, columns)"),
    ("server/timeseries/lastpoint.py", r"^(_build_latest_rows|_latest_rows_packed|latest_rows)$",
     "lastpoint: latest rows"),
    ("server/timeseries/lastpoint.py", r".", "lastpoint: bucket summaries"),
    ("server/timeseries/rawcolumns.py", r".", "BSON decode of buckets (control/meta + columns)"),
    ("server/timeseries/columnar.py", r".", "columnar $group (numpy, per-group feed)"),
    ("server/timeseries/densecolumns.py", r".", "columnar: raw BSON columns -> numpy"),
    ("server/timeseries/groupbatch.py", r".", "columnar $group (numpy, per-group feed)"),
    ("server/timeseries/groupruns.py", r".", "columnar $group (numpy, per-group feed)"),
    ("server/timeseries/groupstate.py", r"^(results|_values)$", "columnar $group: output documents"),
    ("server/timeseries/groupstate.py", r".", "columnar $group (numpy, per-group feed)"),
    ("server/query/match", r".", "$match"),
    ("server/timeseries/rewrite.py", r".", "planning (rewrite, index choice)"),
    ("server/query/plan.py", r".", "planning (rewrite, index choice)"),
    ("server/query/stage_group.py", r".", "$group (accumulators)"),
    ("server/query/accumulators.py", r".", "$group (accumulators)"),
    ("server/query/expr", r".", "$group key expressions ($dateTrunc, paths)"),
    ("server/query/dates.py", r".", "$group key expressions ($dateTrunc, paths)"),
    ("server/query/paths.py", r".", "$group key expressions ($dateTrunc, paths)"),
    ("server/query/sort.py", r".", "$sort"),
    ("server/query/values.py", r".", "$sort"),
    ("server/timeseries/view.py", r"^(_measurements)$", "unpack to measurement dicts"),
    ("server/timeseries/view.py", r"^(_latest_buckets|offer)$", "lastpoint: bucket summaries"),
    ("server/timeseries/view.py", r"^(read_source|_leading_matches|needed_fields|_refs|_bucket_index_plan)$",
     "planning (rewrite, index choice)"),
    ("server/timeseries/view.py", r".", "bucket scan: LMDB read + copy"),
    ("server/query/", r".", "pipeline glue (stages, generators)"),
    ("server/timeseries/unpack.py", r".", "pipeline glue (stages, generators)"),
    ("server/", r".", "command, cursor, reply encode"),
    ("protocol/", r".", "command, cursor, reply encode"),
]
_FRAME = re.compile(r"^(?P<func>.*) \((?P<file>.*):(?P<line>\d+)\)$")


def classify(frames: list[str]) -> str:
    parsed = []
    for frame in frames:
        m = _FRAME.match(frame)
        if m:
            parsed.append((m["file"], m["func"].rsplit(".", 1)[-1]))
    for i in range(len(parsed) - 1, -1, -1):
        path, func = parsed[i]
        for suffix, func_re, phase in QUERY_PHASES:
            if suffix in path and re.search(func_re, func):
                if phase == "$match":
                    # the same compiled filters run on bucket summaries (_emit) and on measurements
                    callers = [f for p, f in parsed[:i] if p.endswith("server/timeseries/view.py")]
                    if callers and callers[-1] in ("_emit", "_leftovers", "offer", "_latest_buckets"):
                        return "bucket-level predicate (control/meta)"
                    return "$match (per measurement)"
                return phase
    return "other"


def top_frames(path: str, phase: str, n: int = 15) -> list[tuple[str, int]]:
    """The innermost frames of the samples attributed to ``phase`` (to refine QUERY_PHASES)."""
    leaves: Counter = Counter()
    with open(path) as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            frames = stack.split(";")[1:]
            if classify(frames) == phase:
                leaves[" <- ".join(frames[-1:-4:-1])] += int(count)
    return leaves.most_common(n)


def parse_raw(path: str) -> Counter:
    counts: Counter = Counter()
    with open(path) as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            phase = classify(stack.split(";")[1:])
            if phase != IDLE:
                counts[phase] += int(count)
    return counts


def _find(doc, keys: tuple[str, ...], out: dict) -> None:
    if isinstance(doc, dict):
        for k, v in doc.items():
            if k in keys and isinstance(v, int):
                out[k] = max(out.get(k, 0), v)  # explain repeats some figures: keep one
            else:
                _find(v, keys, out)
    elif isinstance(doc, list):
        for v in doc:
            _find(v, keys, out)


def _tree(commit: str | None) -> str | None:
    return snapshot_tree(commit, tempfile.mkdtemp(prefix="tm-tree-")) if commit else None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("dbpath")
    p.add_argument("--scale", type=int, default=100)
    p.add_argument("--duration", default="1d")
    p.add_argument("--seed", type=int, default=123)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--rate", type=int, default=250)
    p.add_argument("--queries", default="single-groupby-1-1-1,double-groupby-1,high-cpu-1,lastpoint,"
                                         "groupby-orderby-limit")
    p.add_argument("--json", help="write the figures here")
    p.add_argument("--commit", help="run the server from this commit (git archive to a temp dir), not the work tree")
    p.add_argument("--keep-raw", help="keep py-spy's raw stacks as <dir>/<query>.txt")
    args = p.parse_args(argv)
    dataset = generate(args.scale, parse_duration(args.duration), args.seed)
    tree = _tree(args.commit)
    server = Server(args.dbpath, tree=tree).start()
    results = {}
    try:
        with server.client() as client:
            db = client["benchmark"]
            coll = db["cpu"]
            for query in args.queries.split(","):
                params = make_params(query, dataset, args.seed, args.runs)
                list(coll.aggregate(pipeline(query, params[0]), allowDiskUse=True))  # warm-up
                explain = db.command("explain", {"aggregate": "cpu", "pipeline": pipeline(query, params[0]),
                                                 "cursor": {}}, verbosity="executionStats")
                counts: dict = {}
                _find(explain, ("bucketsScanned", "bucketsUnpacked", "measurementsUnpacked",
                                "measurementsReturned", "keysExamined"), counts)
                # timed pass without the profiler (py-spy pauses the server per sample)
                cpu0 = _cpu(server.pid)
                times, returned = [], 0
                for params_i in params:
                    t0 = time.perf_counter()
                    docs = list(coll.aggregate(pipeline(query, params_i), allowDiskUse=True))
                    times.append((time.perf_counter() - t0) * 1000)
                    returned += len(docs)
                cpu1 = _cpu(server.pid)
                # profiled pass: where the time goes
                raw = tempfile.mktemp(suffix=".spy.txt")
                spy = subprocess.Popen(pin(1) + [str(ROOT / ".venv/bin/py-spy"), "record", "--pid", str(server.pid),
                                                 "--rate", str(args.rate), "--format", "raw", "--threads", "-o", raw],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                time.sleep(1.0)
                for params_i in params:
                    list(coll.aggregate(pipeline(query, params_i), allowDiskUse=True))
                spy.send_signal(signal.SIGINT)
                spy.wait(60)
                phases = parse_raw(raw) if os.path.exists(raw) else Counter()
                if os.path.exists(raw):
                    if args.keep_raw:
                        os.makedirs(args.keep_raw, exist_ok=True)
                        os.replace(raw, os.path.join(args.keep_raw, f"{query}.txt"))
                    else:
                        os.unlink(raw)
                cpu_ms = (cpu1 - cpu0) * 1000 / len(params)
                results[query] = {"median_ms": statistics.median(times), "mean_ms": statistics.mean(times),
                                  "server_cpu_ms": cpu_ms, "docs_returned": returned / len(params),
                                  "explain_first_instance": counts, "samples": dict(phases)}
                report(query, results[query])
    finally:
        server.stop()
        if tree:
            shutil.rmtree(tree, ignore_errors=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


def _cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def report(query: str, r: dict) -> None:
    print(f"\n{query}: median {r['median_ms']:.1f} ms, mean {r['mean_ms']:.1f} ms, server CPU "
          f"{r['server_cpu_ms']:.1f} ms/query, {r['docs_returned']:.0f} docs returned; explain {r['explain_first_instance']}")
    n = sum(r["samples"].values()) or 1
    # busy samples include runnable-but-preempted time on the shared machine: split server CPU by share
    for phase, c in sorted(r["samples"].items(), key=lambda kv: -kv[1]):
        print(f"  {phase:50s} {r['server_cpu_ms'] * c / n:9.1f} ms {c / n:6.1%}")


if __name__ == "__main__":
    raise SystemExit(main())
