"""``python -m bench.loop_latency``: how long a ``ping`` waits while huge time-series inserts run.

Issue 15 item 6 (and issue 11 item 7): decoding and routing a 100,000-measurement insert, or one
measurement with 10,000 fields, must not hold the server's event loop; a concurrent ``ping`` answers
within 100 ms at the 99th percentile. For each shape, the insert frames are encoded beforehand (the
client costs nothing while timed) and sent one after another on one connection while a second
connection pings every 5 ms; the table gives the pings' p50/p99/max and the inserts' own time.
``idle`` is the same ping with no insert running. (tests/e2e/test_ts_loop_free.py asserts the bound
with a margin.)

    .venv/bin/python -m bench.loop_latency [--inserts 3] [--rows 100000]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import shutil
import struct
import sys
import tempfile
import time
from pathlib import Path

import bson

from bench.harness import free_port, start_process, stop_process, wait_port
from bench.messages import DB, insert_message

T0 = dt.datetime(2024, 3, 1)
COLL = "loop"
_HEADER = struct.Struct("<iiii")


def uniform(n: int, start: int) -> list[dict]:
    """TSBS-like measurements of one layout (the column-wise parse)."""
    return [{"t": T0 + dt.timedelta(milliseconds=start + i), "host": {"hostname": f"h{i % 500}", "region": "eu"},
             **{f"usage_{k}": float(i % 100 + k) for k in range(10)}} for i in range(n)]  # fmt: skip


def mixed(n: int, start: int) -> list[dict]:
    """Measurements no batch layout fits (nested values, varying fields): the per-document parse."""
    return [{"t": T0 + dt.timedelta(milliseconds=start + i), "host": {"id": i % 500}, "v": float(i),
             **({"tags": {"k": i % 7}} if i % 3 else {"arr": [i]})} for i in range(n)]  # fmt: skip


def wide(n: int, start: int) -> list[dict]:
    """One measurement with 10,000 fields per insert (n is ignored)."""
    return [{"t": T0 + dt.timedelta(seconds=start), "host": f"w{start}", **{f"f{i}": float(i) for i in range(10_000)}}]


SHAPES = {"uniform": uniform, "mixed": mixed, "wide": wide}


def command_frame(body: dict, request_id: int) -> bytes:
    payload = b"\x00\x00\x00\x00\x00" + bson.encode(body)
    return _HEADER.pack(16 + len(payload), request_id, 0, 2013) + payload


async def roundtrip(reader, writer, frame: bytes) -> dict:
    writer.write(frame)
    header = await reader.readexactly(16)
    (length,) = struct.unpack_from("<i", header)
    reply = await reader.readexactly(length - 16)
    return bson.decode(reply[5:])


async def measure(port: int, frames: list[bytes]) -> dict:
    """Ping every 5 ms while ``frames`` are sent in turn (none: an idle server)."""
    ping_r, ping_w = await asyncio.open_connection("127.0.0.1", port)
    ins_r, ins_w = await asyncio.open_connection("127.0.0.1", port)
    ping = command_frame({"ping": 1, "$db": "admin"}, 1)
    latencies: list[float] = []
    done = asyncio.Event()

    async def pinger():
        while not done.is_set():
            start = time.perf_counter()
            await roundtrip(ping_r, ping_w, ping)
            latencies.append((time.perf_counter() - start) * 1000)
            await asyncio.sleep(0.005)

    task = asyncio.create_task(pinger())
    await asyncio.sleep(0.05)
    start = time.perf_counter()
    if frames:
        for frame in frames:
            reply = await roundtrip(ins_r, ins_w, frame)
            if reply.get("ok") != 1 or reply.get("writeErrors"):
                raise RuntimeError(f"insert failed: {str(reply)[:300]}")
    else:
        await asyncio.sleep(1.0)
    seconds = time.perf_counter() - start
    await asyncio.sleep(0.05)
    done.set()
    await task
    for w in (ping_w, ins_w):
        w.close()
    ordered = sorted(latencies)
    return {"pings": len(ordered), "p50": ordered[len(ordered) // 2],
            "p99": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], "max": ordered[-1],
            "insert_s": seconds}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.loop_latency", description=__doc__.splitlines()[0])
    p.add_argument("--inserts", type=int, default=3, help="inserts per shape (default 3)")
    p.add_argument("--rows", type=int, default=100_000, help="measurements per insert (default 100,000)")
    p.add_argument("--tidemark-cmd", default=f"{sys.executable} -m tidemark")
    args = p.parse_args(argv)
    import uvloop

    workdir = Path(tempfile.mkdtemp(prefix="tidemark-loop-"))
    port = free_port()
    cmd = args.tidemark_cmd.split() + ["--port", str(port), "--dbpath", str(workdir / "db")]
    (workdir / "db").mkdir()
    proc = start_process(cmd, workdir / "tidemark.log")
    rows = []
    try:
        wait_port(port, proc)
        create = command_frame({"create": COLL, "timeseries": {"timeField": "t", "metaField": "host"}, "$db": DB}, 2)

        async def setup():
            r, w = await asyncio.open_connection("127.0.0.1", port)
            await roundtrip(r, w, create)
            w.close()

        uvloop.run(setup())
        rows.append(("idle", uvloop.run(measure(port, []))))
        for name, make in SHAPES.items():
            frames = [insert_message([bson.encode(d) for d in make(args.rows, i * args.rows)], 10 + i,
                                     collection=COLL) for i in range(args.inserts)]  # fmt: skip
            rows.append((name, uvloop.run(measure(port, frames))))
            print(f"  {name}: p99 {rows[-1][1]['p99']:.1f} ms", file=sys.stderr)
    finally:
        stop_process(proc)
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"ping every 5 ms while {args.inserts} inserts of each shape run one after another "
          f"({args.rows:,} measurements each; wide: one measurement of 10,000 fields)\n")  # fmt: skip
    print("| inserts | pings | p50 ms | p99 ms | max ms | inserts took s |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, r in rows:
        print(f"| {name} | {r['pings']} | {r['p50']:.1f} | {r['p99']:.1f} | {r['max']:.1f} | {r['insert_s']:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
