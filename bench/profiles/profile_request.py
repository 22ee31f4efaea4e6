"""One TSBS query's server cost, in process: CPU per request and Python calls per request, by phase.

    PYTHONPATH=<build> .venv/bin/python -m bench.profiles.profile_request DBPATH [--query single-groupby-1-1-1]
        [--runs 2000] [--repeats 3] [--instances 100] [--hours 12] [--profile] [--dump FILE]
    .venv/bin/python -m bench.profiles.profile_request DBPATH --ab IMP_A IMP_B [--rounds 3]

DBPATH: a stopped server's data directory holding ``benchmark.cpu`` (scale 100, e.g. 12 h of the cached
replay frames). The server is started *in this process* (``App.start`` on a port nobody uses, so its
background tasks run as in a real server) and each request is one OP_MSG frame, built as pymongo builds
it (``lsid`` included), handed to a ``Connection``'s ``_handle`` — frame decode, dispatch, the command,
reply encode — with a transport that keeps the reply. What this leaves out: the socket read/write and
the event loop's wake-up per request (about 90 us per request measured over loopback).

Each instance's reply is checked: ``ok: 1``, a single batch (cursor id 0), and a digest of every batch
over all instances is printed, so that two builds can be seen to answer the same.

CPU: ``time.process_time`` (all threads: a read past the inline budget runs in the pool) over ``--runs``
requests, the minimum of ``--repeats`` passes; the inline runs, moves and skips are printed.
``--profile`` runs the same requests again under a ``sys.setprofile`` tracer and prints Python calls per
request (C calls included) and, per phase (``PHASES``), its calls and its share of the traced time
applied to the untraced CPU (the tracer inflates call-heavy phases: the split is rough, the calls
exact); ``--dump F`` also writes a cProfile of them. ``--ab`` runs two builds (their import trees on ``PYTHONPATH``) alternately,
``--rounds`` times each, each in a fresh process, and prints each round's us per request.
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import json
import os
import pstats
import statistics
import subprocess
import sys
import time
from typing import Any

# Phases: a call of one of these functions (file suffix, name) starts its phase; the time and Python calls
# (C calls included) inside it count to it until a nested phase starts (innermost wins; when a phase's
# function returns, the outer phase goes on). "other" is what runs outside every listed function.
PHASES: dict[tuple[str, str], str] = {
    ("connection.py", "_handle"): "connection: frame hand-off, counters",
    ("protocol/messages.py", "decode_message"): "OP_MSG parse (frame + BSON decode)",
    ("dispatch.py", "execute"): "dispatch: checks, operation, interrupt binding",
    ("top.py", "record"): "counters: top, document metrics, profiler, command counts",
    ("profiler.py", "record"): "counters: top, document metrics, profiler, command counts",
    ("profiler.py", "should_look"): "counters: top, document metrics, profiler, command counts",
    ("session_cache.py", "vivify"): "session bookkeeping",
    ("session_cache.py", "attaches_session"): "session bookkeeping",
    ("commands/aggregate.py", "aggregate"): "aggregate: command parse/validation",
    ("cursors.py", "cursor_reply"): "cursor registration, batch glue, inline-run scheduling",
    ("collections.py", "_open_read"): "view resolution, collation, pipeline checks",
    ("query/pipeline.py", "parse_pipeline"): "pipeline parse ($match node, $group, $sort)",
    ("special_reads.py", "timeseries_special"): "pipeline parse ($match node, $group, $sort)",
    ("timeseries/view.py", "read_source"): "planning: bucket filter, fields, columnar/row plans",
    ("timeseries/view.py", "_index_plan"): "planning: index choice + bounds",
    ("timeseries/scan.py", "index_buckets"): "bucket fetch (index scan, LMDB, decode)",
    ("cursors.py", "_fill_batch"): "$group + $sort execution, batch encode",
    ("connection.py", "_encode_reply"): "reply encode",
    ("protocol/messages.py", "encode_op_msg"): "reply encode",
}


class _PhaseTracer:
    """``sys.setprofile`` hook: exclusive time and calls per phase (see PHASES)."""

    def __init__(self) -> None:
        self.time: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self._codes: dict[Any, str | None] = {}
        self._stack: list[tuple[Any, str]] = [(None, "other")]
        self._since = time.perf_counter()

    def _phase_of(self, code: Any) -> str | None:
        found = self._codes.get(code, "?")
        if found == "?":
            found = None
            for (suffix, name), label in PHASES.items():
                if code.co_name == name and code.co_filename.endswith(suffix):
                    found = label
            self._codes[code] = found
        return found

    def __call__(self, frame: Any, event: str, arg: Any) -> None:
        top = self._stack[-1]
        if event == "call" or event == "c_call":
            self.calls[top[1]] = self.calls.get(top[1], 0) + 1
            if event == "call":
                label = self._phase_of(frame.f_code)
                if label is not None:
                    now = time.perf_counter()
                    self.time[top[1]] = self.time.get(top[1], 0.0) + now - self._since
                    self._since = now
                    self._stack.append((frame, label))
        elif event == "return" and top[0] is frame:
            now = time.perf_counter()
            self.time[top[1]] = self.time.get(top[1], 0.0) + now - self._since
            self._since = now
            self._stack.pop()


class _Transport:
    def __init__(self) -> None:
        self.out: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.out.append(data)

    def is_closing(self) -> bool:
        return False

    def set_write_buffer_limits(self, **_: Any) -> None:
        pass

    def get_extra_info(self, *_: Any, **__: Any) -> Any:
        return None


def _frames(query: str, instances: int, hours: int) -> list[bytes]:
    import uuid

    from bson import Binary

    from bench.generator import generate
    from bench.queries import make_params, pipeline
    from tidemark.protocol.messages import encode_op_msg_request

    dataset = generate(100, hours * 3600, 123)
    lsid = {"id": Binary(uuid.UUID(int=1234).bytes, 4)}
    frames = []
    for i, p in enumerate(make_params(query, dataset, 123, instances)):
        cmd = {"aggregate": "cpu", "pipeline": pipeline(query, p), "cursor": {}, "lsid": lsid, "$db": "benchmark"}
        frames.append(encode_op_msg_request(cmd, i + 1))
    return frames


async def _run(args: argparse.Namespace) -> dict[str, Any]:
    import bson

    from tidemark.app import App
    from tidemark.connection import Connection
    from tidemark.dispatch import Dispatcher
    from tidemark.options import parse_options

    options = parse_options(["--port", str(args.port), "--dbpath", args.dbpath, "--quiet", "--bind_ip", "127.0.0.1"])
    app = App(options)
    await app.start()
    state = app.state
    conn = Connection(state, Dispatcher(state), lambda _c: None)
    transport = _Transport()
    conn.transport = transport  # type: ignore[assignment]
    conn.info.peer = "127.0.0.1:1"
    frames = _frames(args.query, args.instances, args.hours)
    digest = hashlib.sha256()
    # warm-up and check: every instance once
    for frame in frames:
        transport.out.clear()
        await conn._handle(frame)
        reply = bson.decode(transport.out[0][21:])
        if reply.get("ok") != 1.0 or reply["cursor"]["id"] != 0:
            raise SystemExit(f"bad reply: {reply}")
        digest.update(bson.encode(reply["cursor"]["firstBatch"][0]) if reply["cursor"]["firstBatch"] else b"")
        digest.update(str(len(reply["cursor"]["firstBatch"])).encode())
    n = args.runs
    out: dict[str, Any] = {"digest": digest.hexdigest()[:16]}
    samples = []
    for _ in range(args.repeats):
        t0 = time.process_time_ns()
        for i in range(n):
            transport.out.clear()
            await conn._handle(frames[i % len(frames)])
        samples.append((time.process_time_ns() - t0) / n / 1000)
    sched = state.scheduler
    out["inline_runs_moves_skips"] = [sched.inline_runs, sched.inline_moves, sched.inline_skips]
    out["us_per_request"] = min(samples)
    out["us_samples"] = [round(s, 1) for s in samples]
    if args.profile:
        # a profiled query runs past the inline budget: keep it inline (one thread to trace)
        state.params.assign("tidemarkInlineReadMicros", 10_000_000)
        tracer = _PhaseTracer()
        sys.setprofile(tracer)
        for i in range(n):
            transport.out.clear()
            await conn._handle(frames[i % len(frames)])
        sys.setprofile(None)
        traced = sum(tracer.time.values())
        out["calls_per_request"] = round(sum(tracer.calls.values()) / n)
        # each phase's share of traced time applied to the untraced CPU per request (the tracer inflates
        # call-heavy phases: a rough split, the calls are exact)
        out["phases"] = {label: {"us": round(t / traced * out["us_per_request"], 1),
                                 "calls": round(tracer.calls.get(label, 0) / n, 1)}
                         for label, t in sorted(tracer.time.items(), key=lambda kv: -kv[1])}
        if args.dump:
            prof = cProfile.Profile()
            prof.enable()
            for i in range(n):
                transport.out.clear()
                await conn._handle(frames[i % len(frames)])
            prof.disable()
            pstats.Stats(prof).dump_stats(args.dump)
    await app.shutdown()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dbpath")
    parser.add_argument("--query", default="single-groupby-1-1-1")
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3, help="timed passes of --runs; the minimum is kept")
    parser.add_argument("--instances", type=int, default=100)
    parser.add_argument("--hours", type=int, default=12)
    parser.add_argument("--port", type=int, default=37549)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--dump", help="write the cProfile stats here")
    parser.add_argument("--ab", nargs=2, metavar=("IMP_A", "IMP_B"))
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    if args.ab:
        rows: dict[str, list[float]] = {"A": [], "B": []}
        for r in range(args.rounds):
            order = [("A", args.ab[0]), ("B", args.ab[1])]
            for label, tree in order if r % 2 == 0 else order[::-1]:
                cmd = [sys.executable, "-m", "bench.profiles.profile_request", args.dbpath, "--query", args.query,
                       "--runs", str(args.runs), "--repeats", str(args.repeats), "--instances",
                       str(args.instances), "--hours", str(args.hours), "--port", str(args.port)]
                env = dict(os.environ, PYTHONPATH=f"{tree}:{os.getcwd()}")
                res = json.loads(subprocess.run(cmd, env=env, capture_output=True, text=True,
                                                check=True).stdout.strip().splitlines()[-1])
                rows[label].append(res["us_per_request"])
                print(f"round {r} {label}: {res['us_per_request']:.1f} us/request {res['us_samples']} "
                      f"digest {res['digest']}", flush=True)
        a, b = statistics.median(rows["A"]), statistics.median(rows["B"])
        print(f"median A {a:.1f} us, B {b:.1f} us, B/A {b / a:.3f}")
        return 0
    import uvloop

    print(json.dumps(uvloop.run(_run(args))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
