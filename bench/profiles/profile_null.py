"""The null decoding server under the same replay, for a same-period headroom ratio (the machine is shared).

    .venv/bin/python -m bench.profiles.profile_null [--scale 100] [--frames 200] [--mode decode|count]

Starts `python -m bench.nullserver --mode decode` (frames + bson-decodes every document, stores nothing)
pinned to core 0, replays the first `--frames` cached insert frames over 4 connections from core 1, and
prints rows/s and the null server's CPU us/row (from /proc), to set beside `profile_ingest --mode none`.
"""

from __future__ import annotations

import argparse
import subprocess

from bench.harness import free_port, wait_port
from bench.profiles._server import PY, ROOT, cpu_seconds, frames_path, pin, replay


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scale", type=int, default=100)
    p.add_argument("--frames", type=int, default=200)
    p.add_argument("--mode", choices=("decode", "count"), default="decode")
    args = p.parse_args(argv)
    port = free_port()
    proc = subprocess.Popen(pin(0) + [PY, "-m", "bench.nullserver", "--mode", args.mode, "--port", str(port)],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_port(port, proc, what="null server")
        cpu0 = cpu_seconds(proc.pid)
        load = replay(port, frames_path(args.scale), 4, args.frames)
        cpu = cpu_seconds(proc.pid) - cpu0
    finally:
        proc.terminate()
        proc.wait(30)
    rows = load["rows"]
    print(f"null-{args.mode}: {rows} rows in {load['seconds']:.1f} s = {rows / load['seconds']:,.0f} rows/s; "
          f"server CPU {cpu:.1f} s = {cpu * 1e6 / rows:.1f} us/row")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
