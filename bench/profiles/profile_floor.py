"""The per-command floor every query pays, in process: ``ping`` and a ``find`` on an empty collection.

    PYTHONPATH=<build> .venv/bin/python -m bench.profiles.profile_floor DBPATH [--command ping|find-empty]
        [--runs 5000] [--repeats 3] [--profile] [--port 37549]

The same harness as ``profile_request`` (its transport, its phase tracer and ``PHASES``): the server is
started in this process on DBPATH (a stopped server's data directory, which it must not share with a
running server), each request one OP_MSG frame built as pymongo builds it (``lsid`` included) and handed
to a ``Connection``'s ``_handle``. ``find-empty`` first creates ``profile_floor.empty`` (dropped again at
the end). Prints CPU us per request (``time.process_time``, the minimum of ``--repeats`` passes) and,
with ``--profile``, Python + C calls per request and their split by phase.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from typing import Any

from bench.profiles.profile_request import _PhaseTracer, _Transport

_DB = "profile_floor"


def _command(name: str, lsid: dict[str, Any]) -> dict[str, Any]:
    if name == "ping":
        return {"ping": 1, "lsid": lsid, "$db": "admin"}
    if name == "find-empty":
        return {"find": "empty", "filter": {}, "lsid": lsid, "$db": _DB}
    raise SystemExit(f"unknown command {name!r}")


async def _run(args: argparse.Namespace) -> dict[str, Any]:
    import bson
    from bson import Binary

    from tidemark.app import App
    from tidemark.connection import Connection
    from tidemark.dispatch import Dispatcher
    from tidemark.options import parse_options
    from tidemark.protocol.messages import encode_op_msg_request

    options = parse_options(["--port", str(args.port), "--dbpath", args.dbpath, "--quiet", "--bind_ip", "127.0.0.1"])
    app = App(options)
    await app.start()
    conn = Connection(app.state, Dispatcher(app.state), lambda _c: None)
    transport = _Transport()
    conn.transport = transport  # type: ignore[assignment]
    conn.info.peer = "127.0.0.1:1"
    lsid = {"id": Binary(uuid.UUID(int=1234).bytes, 4)}

    async def run(cmd: dict[str, Any], request_id: int = 1) -> dict[str, Any]:
        transport.out.clear()
        await conn._handle(encode_op_msg_request(cmd, request_id))
        reply: dict[str, Any] = bson.decode(transport.out[0][21:])
        return reply

    if args.command == "find-empty":
        await run({"create": "empty", "$db": _DB})
    frame = encode_op_msg_request(_command(args.command, lsid), 7)
    transport.out.clear()
    await conn._handle(frame)
    reply = bson.decode(transport.out[0][21:])
    if reply.get("ok") != 1.0:
        raise SystemExit(f"bad reply: {reply}")
    out: dict[str, Any] = {"command": args.command}
    n = args.runs
    samples = []
    for _ in range(args.repeats):
        t0 = time.process_time_ns()
        for _ in range(n):
            transport.out.clear()
            await conn._handle(frame)
        samples.append((time.process_time_ns() - t0) / n / 1000)
    out["us_per_request"] = round(min(samples), 2)
    out["us_samples"] = [round(s, 1) for s in samples]
    if args.profile:
        tracer = _PhaseTracer()
        sys.setprofile(tracer)
        for _ in range(n):
            transport.out.clear()
            await conn._handle(frame)
        sys.setprofile(None)
        traced = sum(tracer.time.values())
        out["calls_per_request"] = round(sum(tracer.calls.values()) / n, 1)
        out["phases"] = {label: {"us": round(t / traced * out["us_per_request"], 1),
                                 "calls": round(tracer.calls.get(label, 0) / n, 1)}
                         for label, t in sorted(tracer.time.items(), key=lambda kv: -kv[1])}
    if args.command == "find-empty":
        await run({"dropDatabase": 1, "$db": _DB})
    await app.shutdown()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dbpath")
    parser.add_argument("--command", default="ping", choices=("ping", "find-empty"))
    parser.add_argument("--runs", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=3, help="timed passes of --runs; the minimum is kept")
    parser.add_argument("--port", type=int, default=37549)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args(argv)
    import uvloop

    print(json.dumps(uvloop.run(_run(args))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
