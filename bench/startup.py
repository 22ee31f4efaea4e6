"""Launch speed: ``tidemark --version``, ``tidemark --help`` and time to the first successful ping.

    python -m bench.startup [--runs 7] [--python PATH] [--keep-dbpath]

Each figure is the median of ``--runs`` fresh processes (``python -m tidemark``, what the ``tidemark``
console script runs), wall clock from ``Popen`` to exit (``--version``/``--help``) or to the first
``ping`` answered ``ok: 1`` on a new, empty dbpath (time-to-first-ping: imports, storage open, catalog
load, recovery hooks, listener). Also printed: the median CPU time (user + system) the process used,
the steadier figure on a shared machine, and a bare ``python -c pass`` for reference (the interpreter's
own start-up, which every figure includes). The processes run as an installed ``tidemark`` does: with
bytecode caching (``PYTHONDONTWRITEBYTECODE`` is dropped from their environment) after one untimed warm-up
run of each, so no figure includes compiling the sources. Targets (issue 24): ``--version``/``--help`` <= 100 ms,
first ping <= 1 s.

Not a test: wall-clock figures depend on the machine and its load. The deterministic part (``--version``
imports no query layer) is tested in ``tests/test_startup_imports.py``.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tidemark.protocol.messages import decode_reply, encode_op_msg_request  # imported before any timing

ROOT = Path(__file__).resolve().parents[1]
VENV_PYTHON = ROOT / ".venv" / "bin" / "python"


ENV = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_exit(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one process from start to exit."""
    cpu = _children_cpu()
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT, env=ENV,
                   check=True)
    return time.perf_counter() - start, _children_cpu() - cpu


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _ping(port: int) -> bool:
    with socket.create_connection(("127.0.0.1", port), timeout=2.0) as sock:
        sock.sendall(encode_op_msg_request({"ping": 1, "$db": "admin"}, 1))
        data = b""
        while len(data) < 4 or len(data) < int.from_bytes(data[:4], "little"):
            chunk = sock.recv(1 << 16)
            if not chunk:
                return False
            data += chunk
    return decode_reply(data).get("ok") == 1.0


def time_first_ping(python: str, dbpath: str) -> tuple[float, float]:
    """(seconds from process start to the first answered ping, the server's CPU seconds in that time)."""
    port = _free_port()
    argv = [python, "-m", "tidemark", "--port", str(port), "--dbpath", dbpath, "--quiet"]
    start = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT, env=ENV)
    try:
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"server exited with {process.returncode} before answering a ping")
            try:
                if _ping(port):
                    break
            except OSError:
                pass
            time.sleep(0.002)
        elapsed = time.perf_counter() - start
        cpu = _process_cpu(process.pid)
    finally:
        process.terminate()
        process.wait(30)
    return elapsed, cpu


def _process_cpu(pid: int) -> float:
    """utime + stime of a running process (Linux /proc), in seconds; NaN elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _row(name: str, samples: list[tuple[float, float]], target: str) -> str:
    wall = statistics.median(s[0] for s in samples) * 1000
    cpu = statistics.median(s[1] for s in samples) * 1000
    return f"{name:<22} {wall:9.1f} ms   cpu {cpu:7.1f} ms   {target}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.startup", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="processes per figure (median), default 7")
    parser.add_argument("--python", default=str(VENV_PYTHON if VENV_PYTHON.exists() else sys.executable),
                        help="interpreter that runs the server (default .venv/bin/python)")
    args = parser.parse_args(argv)
    python = args.python
    with tempfile.TemporaryDirectory(prefix="tidemark-startup-") as warm:  # writes the bytecode caches
        time_exit([python, "-m", "tidemark", "--version"])
        time_first_ping(python, warm)
    bare = [time_exit([python, "-c", "pass"]) for _ in range(args.runs)]
    version = [time_exit([python, "-m", "tidemark", "--version"]) for _ in range(args.runs)]
    helps = [time_exit([python, "-m", "tidemark", "--help"]) for _ in range(args.runs)]
    pings = []
    for _ in range(args.runs):
        dbpath = tempfile.mkdtemp(prefix="tidemark-startup-")
        try:
            pings.append(time_first_ping(python, dbpath))
        finally:
            shutil.rmtree(dbpath, ignore_errors=True)
    print(f"median of {args.runs} runs, {python}, load average {os.getloadavg()[0]:.2f}")
    print(_row("python -c pass", bare, "(reference)"))
    print(_row("tidemark --version", version, "target <= 100 ms"))
    print(_row("tidemark --help", helps, "target <= 100 ms"))
    print(_row("time to first ping", pings, "target <= 1000 ms"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
