"""Profile the Tidemark server during a pre-encoded TSBS replay into the `cpu` time-series collection.

    .venv/bin/python -m bench.profiles.profile_ingest [--scale 100] [--frames 200] [--rate 250]
        [--mode active|idle|none] [--keep DIR] [--json OUT]

Starts `python -m tidemark` on a fresh dbpath (pinned to core 0), creates `cpu` + its index, attaches py-spy
(`pip install py-spy` into the venv; not a project dependency) to the server and replays the first
`--frames` cached insert frames (1000 rows each) over 4 connections (loader pinned to core 1).

`--mode active` samples only threads that are on CPU: the phase table is CPU time per row. `--mode idle`
samples every thread every tick: wall time per thread (shows the writer waiting on fsync). `--mode none`
runs without a profiler (the undisturbed rate). Per-thread CPU seconds come from /proc (not sampled).
Each sample is attributed to a phase by its innermost frame that matches a rule in PHASES.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections import Counter, defaultdict

from bench.profiles._server import ROOT, Server, frames_path, pin, replay, setup_cpu, snapshot_tree

# (file suffix, function-name regex, line or None, phase). Innermost matching frame wins, so a phase
# includes whatever unlisted code it calls (e.g. bson.encode inside journal_record).
IDLE = "idle (waiting for work)"
PHASES: list[tuple[str, str, int | None, str]] = [
    # threads parked in C calls (SimpleQueue.get, epoll) show only these frames: not CPU
    ("storage/engine.py", r"^_writer_loop$", None, IDLE),
    ("concurrent/futures/thread.py", r"^_worker$", None, IDLE),
    ("asyncio/runners.py", r".", None, IDLE),
    ("asyncio/base_events.py", r"^(run_forever|_run_once)$", None, IDLE),
    ("protocol/codec.py", r"^decode(_all)?$", None, "BSON decode of documents"),
    ("protocol/messages.py", r".", None, "OP_MSG parse (sections)"),
    ("protocol/framing.py", r".", None, "framing"),
    ("server/connection.py", r"^data_received$", None, "framing"),
    ("server/connection.py", r"^(_encode_reply|_send)$", None, "reply encode + send"),
    # column-wise ingest (rawbatch / columnstore / ingest_columns / commitlog)
    ("server/timeseries/rawbatch.py", r".", None, "column-wise: layout check + column parse"),
    ("server/timeseries/columnstore.py", r"^(series_ids|_register|_add_series)$", None,
     "column-wise: series ids (meta bytes)"),
    ("server/timeseries/columnstore.py", r"^(full_write|_encode_parts|_encode|column_bson|_summary_of|control|"
     r"_extremes|_first_extreme|document_bytes|pack)$", None, "column-wise: full bucket build (close)"),
    ("server/timeseries/commitlog.py", r".", None, "column-wise: journal record build"),
    ("server/timeseries/columnstore.py", r"^rows$", None, "column-wise: journal record build"),
    ("server/timeseries/ingest_columns.py", r"^(_slow_series|_one_series|_reopen|_open|_fit|_append)$", None,
     "column-wise: per-series rollovers"),
    ("server/timeseries/ingest_columns.py", r".", None, "column-wise: vectorized routing + appends"),
    ("server/timeseries/columnstore.py", r".", None, "column-wise: vectorized routing + appends"),
    ("server/timeseries/buckets.py", r"^(normalize_meta|meta_key)$", None, "meta normalization"),
    ("server/timeseries/catalog.py", r"^(_meta_and_key|_normalized_meta)$", None, "meta normalization"),
    ("server/timeseries/buckets.py", r"^(rollover_reason|measurement_size|value_size|shape_of)$", None,
     "rollover checks + sizing"),
    ("server/timeseries/catalog.py", r"^(_route|_reopen|_open|_retire|_expire_idle)$", None,
     "rollover checks + sizing"),
    ("server/timeseries/buckets.py", r"^(_merge_extremes|_merge_each)$", None, "min/max maintenance"),
    ("server/timeseries/minmax.py", r".", None, "min/max maintenance"),
    ("server/timeseries/buckets.py", r"^(append_run|append)$", None, "column appends"),
    ("server/timeseries/catalog.py", r".", None, "catalog: group by series, accounting"),
    ("server/timeseries/commit.py", r"^journal_record$", None, "journal record encoding"),
    ("server/timeseries/commit.py", r"^write_full_document$", None, "full bucket writes (close/checkpoint)"),
    ("server/timeseries/buckets.py", r"^(document|summary)$", None, "full bucket writes (close/checkpoint)"),
    ("storage/bucket_codec.py", r"^(decode|decode_raw|_decode_column|_decode_values|_get_ints|_unplanes|"
     r"_get_varint)$", None, "bucket codec: verify the encoded form (decode)"),
    ("storage/bucket_codec.py", r".", None, "bucket column codec encode"),
    ("storage/compression.py", r".", None, "storage value compression"),
    ("storage/dictionaries.py", r".", None, "storage value compression"),
    ("storage/engine.py", r"^_commit_group$", "COMMIT", "LMDB commit + fsync"),
    ("storage/", r".", None, "LMDB puts + storage bookkeeping"),
    ("server/timeseries/commit.py", r".", None, "committer: drain, futures"),
    ("server/timeseries/writes.py", r"^insert_measurements$", None, "insert checks: time, _id ObjectId"),
    ("bson/objectid.py", r".", None, "insert checks: time, _id ObjectId"),
    ("server/dispatch.py", r".", None, "command dispatch"),
    ("server/commands/", r".", None, "command dispatch"),
    ("server/connection.py", r".", None, "connection task (handle/drain)"),
    ("asyncio/", r".", None, "event loop + futures machinery"),
    ("concurrent/futures", r".", None, "event loop + futures machinery"),
    ("threading.py", r".", None, "thread/queue machinery"),
    ("queue.py", r".", None, "thread/queue machinery"),
]
_FRAME = re.compile(r"^(?P<func>.*) \((?P<file>.*):(?P<line>\d+)\)$")


def commit_lines() -> set[int]:
    with open(ROOT / "storage" / "engine.py") as f:
        return {i for i, line in enumerate(f, 1) if "parent.commit()" in line}


def classify(frames: list[str], commits: set[int]) -> str:
    for frame in reversed(frames):
        m = _FRAME.match(frame)
        if not m:
            continue
        path, func, line = m["file"], m["func"].rsplit(".", 1)[-1], int(m["line"])
        for suffix, func_re, want_line, phase in PHASES:
            if suffix in path and re.search(func_re, func):
                if want_line == "COMMIT" and line not in commits:
                    continue
                return phase
    return "other"


_THREAD = re.compile(r"^thread \((?P<tid>\d+)\)(: (?P<name>.*))?$")


def parse_raw(path: str) -> tuple[dict[str, Counter], dict[str, str]]:
    """({thread group: Counter(phase -> samples)}, {tid: thread group}) from py-spy raw output (--threads).

    Groups: the event loop (MainThread), the storage writer thread, every other thread (executor pool)."""
    commits = commit_lines()
    per_thread: dict[str, Counter] = defaultdict(Counter)
    groups: dict[str, str] = {}
    with open(path) as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            parts = stack.split(";")
            m = _THREAD.match(parts[0])
            if not m:
                continue
            frames = parts[1:]
            if m["name"] == "MainThread":
                group = MAIN
            elif any("_writer_loop" in fr for fr in frames):
                group = WRITER
            else:
                group = groups.get(m["tid"], OTHER)
            if group != OTHER or m["tid"] not in groups:
                groups[m["tid"]] = group
            per_thread[group][classify(frames, commits)] += int(count)
    return per_thread, groups


def top_frames(path: str, phase: str, n: int = 15) -> list[tuple[str, int]]:
    """The innermost 3 frames of the samples attributed to ``phase`` (to refine PHASES)."""
    commits = commit_lines()
    leaves: Counter = Counter()
    with open(path) as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            frames = stack.split(";")[1:]
            if classify(frames, commits) == phase:
                leaves[" <- ".join(frames[-1:-4:-1])] += int(count)
    return leaves.most_common(n)


MAIN, WRITER, OTHER = "event loop (MainThread)", "storage-writer", "other threads"


def thread_cpu(pid: int) -> dict[str, float]:
    """{tid: CPU seconds (user + system)} of every thread of ``pid``."""
    tick = os.sysconf("SC_CLK_TCK")
    out: dict[str, float] = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        out[tid] = (int(fields[11]) + int(fields[12])) / tick
    return out


def _tree(commit: str | None) -> str | None:
    return snapshot_tree(commit, tempfile.mkdtemp(prefix="tm-tree-")) if commit else None


def written_bytes(pid: int) -> int:
    """Bytes the process caused to be written to storage (/proc/<pid>/io write_bytes; 0 if unreadable)."""
    try:
        with open(f"/proc/{pid}/io") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("write_bytes"))
    except (OSError, StopIteration):
        return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scale", type=int, default=100)
    p.add_argument("--frames", type=int, default=200, help="insert frames to replay (1000 rows each); 0 = all")
    p.add_argument("--rate", type=int, default=250, help="py-spy samples per second")
    p.add_argument("--mode", choices=("active", "idle", "none"), default="active")
    p.add_argument("--connections", type=int, default=4)
    p.add_argument("--keep", help="use this dbpath and keep it (for the storage analysis)")
    p.add_argument("--json", help="write the figures here")
    p.add_argument("--commit", help="run the server from this commit (git archive to a temp dir), not the work tree")
    p.add_argument("--prelude", help="Python run in the server process before it starts, e.g. "
                                      "'import gc; gc.set_threshold(50000, 20, 100)' (experiments)")
    p.add_argument("--keep-raw", help="keep py-spy's raw stacks in this file (see top_frames)")
    p.add_argument("--nonblocking", action="store_true",
                   help="py-spy --nonblocking: do not pause the server per sample (less CPU distortion)")
    args = p.parse_args(argv)

    frames = frames_path(args.scale)
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
    tree = _tree(args.commit)
    server = Server(args.keep, tree=tree, prelude=args.prelude).start()
    spy = None
    raw = tempfile.mktemp(suffix=".spy.txt")
    try:
        with server.client() as client:
            setup_cpu(client)
            cpu0 = thread_cpu(server.pid)
            io0 = written_bytes(server.pid)
            if args.mode != "none":
                cmd = pin(1) + [str(ROOT / ".venv/bin/py-spy"), "record", "--pid", str(server.pid), "--rate",
                                str(args.rate), "--format", "raw", "--threads", "-o", raw]
                if args.mode == "idle":
                    cmd.append("--idle")
                if args.nonblocking:
                    cmd.append("--nonblocking")
                spy = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                time.sleep(1.0)  # let py-spy attach before the load starts
            load = replay(server.port, frames, args.connections, args.frames or None)
            if spy is not None:
                spy.send_signal(signal.SIGINT)
                spy.wait(60)
            cpu1 = thread_cpu(server.pid)
            io1 = written_bytes(server.pid)
            ts = client["benchmark"].command("collStats", "cpu").get("timeseries", {})
    finally:
        clean = server.stop()
        if tree:
            shutil.rmtree(tree, ignore_errors=True)
    rows = load["rows"]
    groups: dict[str, str] = {str(server.pid): MAIN}
    if spy is not None and os.path.exists(raw):
        per_thread, found = parse_raw(raw)
        groups.update(found)
        result_samples = {t: dict(c) for t, c in per_thread.items()}
        if args.keep_raw:
            os.replace(raw, args.keep_raw)
        else:
            os.unlink(raw)
    cpu_by_group: dict[str, float] = defaultdict(float)
    for tid, seconds in cpu1.items():
        cpu_by_group[groups.get(tid, OTHER)] += seconds - cpu0.get(tid, 0.0)
    result = {
        "rows": rows, "seconds": load["seconds"], "rows_per_s": rows / load["seconds"], "mode": args.mode,
        "thread_cpu_s": dict(cpu_by_group),
        "timeseries_stats": {k: v for k, v in ts.items() if isinstance(v, int)},
        "clean_shutdown": clean,
        "written_bytes_per_row": (io1 - io0) / rows,
    }
    result["cpu_us_per_row"] = {k: v * 1e6 / rows for k, v in result["thread_cpu_s"].items()}
    if spy is not None:
        result["samples"] = result_samples
    if args.keep:
        result["disk_bytes"] = server.disk_bytes()
        result["bytes_per_row"] = result["disk_bytes"] / rows
    else:
        server.cleanup()
    report(result, args.rate)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    return 0


def report(result: dict, rate: int) -> None:
    rows = result["rows"]
    print(f"{rows} rows in {result['seconds']:.1f} s = {result['rows_per_s']:,.0f} rows/s (mode {result['mode']})")
    total_cpu = sum(result["thread_cpu_s"].values())
    print(f"server CPU {total_cpu:.1f} s = {total_cpu * 1e6 / rows:.1f} us/row; per thread (us/row): "
          + ", ".join(f"{k} {v:.1f}" for k, v in result["cpu_us_per_row"].items()))
    ts = result["timeseries_stats"]
    if ts.get("numCommits"):
        print(f"commits {ts['numCommits']}, rows/commit {rows / ts['numCommits']:.0f}, "
              f"commits/s {ts['numCommits'] / result['seconds']:.1f}, waits {ts.get('numWaits')}")
    print(f"written to storage during the load: {result['written_bytes_per_row']:.0f} B/row")
    if "bytes_per_row" in result:
        print(f"disk {result['disk_bytes']:,} B = {result['bytes_per_row']:.1f} B/row")
    # Samples count runnable time too (the machine is shared), so each thread's CPU us/row (from /proc)
    # is split over its phases by sample share: "cpu us/row" is the figure to compare.
    for thread, counts in result.get("samples", {}).items():
        n = sum(counts.values())
        busy = n - counts.get(IDLE, 0) or 1
        cpu = result["cpu_us_per_row"].get(thread, 0.0)
        print(f"\n{thread}: {n} samples = {n / rate:.1f} s sampled ({counts.get(IDLE, 0) / rate:.1f} s idle), "
              f"{cpu:.1f} us/row of CPU")
        print(f"  {'phase':45s} {'cpu us/row':>10s} {'share':>6s} {'wall us/row':>11s}")
        for phase, c in sorted(counts.items(), key=lambda kv: -kv[1]):
            share = 0.0 if phase == IDLE else c / busy
            print(f"  {phase:45s} {cpu * share:10.1f} {share:6.1%} {c / rate * 1e6 / rows:11.1f}")


if __name__ == "__main__":
    raise SystemExit(main())
