"""The physical limits: null OP_MSG servers (bench.nullserver) under the same loaders as Tidemark.

``null`` frames and counts documents; ``null-decode`` also decodes every document with pymongo's bson. They
store nothing, so they have no storage figure and answer no queries.
"""

from __future__ import annotations

import sys

from bench.harness import (
    Context,
    SystemResult,
    free_port,
    ingest_stats,
    pymongo_args,
    replay_args,
    run_loader,
    start_process,
    stop_process,
    wait_port,
)


def run_count(ctx: Context) -> SystemResult:
    return _run(ctx, "null", "count", "null OP_MSG server: frames messages and counts documents")


def run_decode(ctx: Context) -> SystemResult:
    return _run(ctx, "null-decode", "decode", "null OP_MSG server that also bson-decodes every document")


def _run(ctx: Context, name: str, mode: str, description: str) -> SystemResult:
    result = SystemResult(name, description)
    port = free_port()
    cmd = ctx.server_prefix() + [
        sys.executable,
        "-m",
        "bench.nullserver",
        "--mode",
        mode,
        "--port",
        str(port),
    ]
    proc = start_process(cmd, ctx.workdir / name / "tidemark.log")
    try:
        wait_port(port, proc, what=name)
        loads = [("replay", replay_args(ctx, port))]
        if ctx.pymongo:
            loads.append(("pymongo", pymongo_args(ctx, port)))
        for method, args in loads:
            stats = ingest_stats(run_loader(ctx, args, proc.pid), ctx.dataset.rows, ctx.pin)
            result.ingest[method] = stats
            if stats["error"]:
                result.errors.append(f"{method} load: {stats['error']}")
    except Exception as exc:
        result.errors.append(f"{type(exc).__name__}: {exc}")
    finally:
        stop_process(proc, timeout=10)
    return result
