"""``python -m bench.auth_handshake``: what access control costs per connection.

Starts Tidemark with ``--auth`` on a fresh data directory (or uses ``--port`` of a running one with
``--user``/``--password``), then opens connections as fast as ``--concurrency`` clients can, each
doing what a driver's pool connection does: TCP connect, ``hello``, ``saslStart`` + ``saslContinue``
(SCRAM, ``skipEmptyExchange``), one ``ping``, close. The same loop without the SASL steps is the
baseline. The client caches its PBKDF2 keys like drivers do, so the figure is the server's handshake
cost. Prints one JSON object: connections per second with and without authentication.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.harness import free_port, process_cpu_seconds, stop_process, wait_port
from bench.scram_client import ClientKeys, authenticate_async, command_async

USER, PASSWORD = "bench", "bench-password"


async def _connections(port: int, total: int, concurrency: int, auth: tuple[str, str, str] | None) -> float:
    keys = ClientKeys()
    remaining = total

    async def client() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            try:
                hello = await command_async(reader, writer, {"hello": 1, "$db": "admin"})
                assert hello["ok"] == 1
                if auth is not None:
                    user, password, mechanism = auth
                    await authenticate_async(reader, writer, user, password, mechanism=mechanism, keys=keys)
                ping = await command_async(reader, writer, {"ping": 1, "$db": "admin"})
                assert ping["ok"] == 1
            finally:
                writer.close()
                await writer.wait_closed()

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(concurrency)))
    return total / (time.perf_counter() - started)


def measure(port: int, connections: int, concurrency: int, user: str, password: str, mechanism: str,
            server_pid: int | None = None) -> dict:
    """Rates, and (when the server's pid is known) its CPU time per connection: on a shared machine
    the CPU figure is the steadier one."""
    import uvloop

    def run(auth) -> tuple[float, float | None]:
        cpu0 = process_cpu_seconds(server_pid) if server_pid else None
        rate = uvloop.run(_connections(port, connections, concurrency, auth))
        cpu1 = process_cpu_seconds(server_pid) if server_pid else None
        return rate, (None if cpu0 is None or cpu1 is None else (cpu1 - cpu0) / connections * 1000)

    uvloop.run(_connections(port, max(20, connections // 10), concurrency, (user, password, mechanism)))
    plain, plain_cpu = run(None)
    authed, authed_cpu = run((user, password, mechanism))
    result = {"mechanism": mechanism, "connections": connections, "concurrency": concurrency,
              "plain_per_s": round(plain, 1), "authenticated_per_s": round(authed, 1)}
    # process CPU time moves in clock ticks (10 ms): a run shorter than a tick measures 0 — report no
    # CPU figure then rather than a rate of 1/0 (use more connections to get one)
    if plain_cpu is not None and authed_cpu:
        result.update({"server_cpu_ms_per_plain_connection": round(plain_cpu, 3),
                       "server_cpu_ms_per_authenticated_connection": round(authed_cpu, 3),
                       "authenticated_per_server_cpu_s": round(1000 / authed_cpu, 1)})
    return result


def _start_server(workdir: Path, pin: bool) -> tuple[subprocess.Popen, int]:
    from pymongo import MongoClient

    port = free_port()
    cmd = (["taskset", "-c", "0"] if pin else []) + [sys.executable, "-m", "tidemark", "--port", str(port),
                                                       "--dbpath", str(workdir / "db"), "--auth", "--quiet"]
    (workdir / "db").mkdir(parents=True)
    proc = subprocess.Popen(cmd, stdout=open(workdir / "tidemark.log", "wb"), stderr=subprocess.STDOUT)
    wait_port(port, proc)
    with MongoClient("127.0.0.1", port, directConnection=True) as bootstrap:  # the localhost exception
        bootstrap.admin.command("createUser", USER, pwd=PASSWORD, roles=["root"])
    return proc, port


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.auth_handshake", description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, default=None, help="a running server (default: start one with --auth)")
    p.add_argument("--user", default=USER)
    p.add_argument("--password", default=PASSWORD)
    p.add_argument("--mechanism", default="SCRAM-SHA-256", choices=["SCRAM-SHA-256", "SCRAM-SHA-1"])
    p.add_argument("--connections", type=int, default=2000)
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--no-pin", action="store_true", help="do not taskset the server to core 0 and us to core 1")
    args = p.parse_args(argv)
    proc, workdir = None, None
    pin = not args.no_pin and shutil.which("taskset") is not None
    try:
        port = args.port
        if port is None:
            workdir = Path(tempfile.mkdtemp(prefix="tidemark-auth-bench-"))
            proc, port = _start_server(workdir, pin)
        if pin:
            subprocess.run(["taskset", "-pc", "1", str(__import__("os").getpid())], capture_output=True)
        result = measure(port, args.connections, args.concurrency, args.user, args.password, args.mechanism,
                         proc.pid if proc is not None else None)
    finally:
        if proc is not None:
            stop_process(proc)
        if workdir is not None:
            shutil.rmtree(workdir, ignore_errors=True)
    json.dump(result, sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
