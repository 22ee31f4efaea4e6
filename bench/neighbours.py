"""The noisy-neighbour benchmark: one hostile client against one innocent client, per workload.

``python -m bench.neighbours`` (``--workloads a,b``, ``--fuzz-frames 100000``, ``--seconds 4``). For each
workload a fresh server starts; an innocent client runs ``ping`` + ``insert`` + ``find`` in a loop
while the hostile request(s) run, and the table reports, per workload: whether the hostile request
got the answer it should (mongod's error code, or a correct result), the innocent client's p50/p99/max
latency per operation and its p99 corrected for coordinated omission (a stalled closed-loop client sends
nothing, so its plain p99 hides a stall), its errors, and the server's peak RSS (sampled every 20 ms,
and its VmHWM). Targets (issue 11): innocent p99 (plain and corrected) <= 100 ms and 0 errors in every
workload; peak RSS <= 1 GB. The
"16 concurrent slow reads" workloads (issue 21) start 16 clients' expensive reads at once (a catastrophic
regex without maxTimeMS, a ``$reduce`` over a ``$range``): one client's long work must not queue another's
short request.
Then the wire fuzzer (``bench/wire_fuzz.py``) sends ``--fuzz-frames`` mutated frames beside the same
innocent client. Results also go to ``bench/results/neighbours-<UTC>.json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import resource
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import pymongo

from bench import wire_fuzz
from bench.harness import RssSampler
from tidemark.protocol import compression
from tidemark.protocol.messages import decode_reply, encode_op_msg_request

ROOT = Path(__file__).resolve().parents[1]
MB = 1 << 20
TARGET_P99_MS = 100.0
TARGET_RSS_MB = 1024.0
EXPECTED_INTERVAL = 0.010  # the innocent's nominal pace (s per operation) for the corrected p99


# ------------------------------------------------------------------------------------------ plumbing


class Server:
    """A fresh server; ``tls=True`` starts it with ``--tlsMode allowTLS`` and a throwaway certificate (TLS and
    plaintext on one port: the innocent client stays plaintext)."""

    def __init__(self, workdir: str, python: str, tls: bool = False, set_parameters: list[str] | None = None):
        self.port = _free_port()
        self.dbpath = tempfile.mkdtemp(dir=workdir)
        self.log = open(os.path.join(self.dbpath, "..", f"server-{self.port}.log"), "wb")  # noqa: SIM115
        extra: list[str] = []
        if tls:
            extra = ["--tlsMode", "allowTLS", "--tlsCertificateKeyFile", _server_certificate(workdir)]
        self.process = subprocess.Popen([python, "-m", "tidemark", "--port", str(self.port), "--dbpath", self.dbpath,
                                         "--quiet", *extra, *(a for p in set_parameters or () for a in ("--setParameter", p))],
                                        stdout=self.log, stderr=subprocess.STDOUT, cwd=ROOT)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with Raw(self.port, timeout=1) as raw:
                    if raw.command({"ping": 1, "$db": "admin"}).get("ok") == 1.0:
                        return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("the server did not start")

    @property
    def uri(self) -> str:
        return f"mongodb://127.0.0.1:{self.port}/?directConnection=true"

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()


def _server_certificate(workdir: str) -> str:
    """A self-signed certificate + key for localhost (PEM), made once per run with ``cryptography``."""
    path = os.path.join(workdir, "server.pem")
    if os.path.exists(path):
        return path
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(days=1))
            .not_valid_after(now + dt.timedelta(days=365))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
            .sign(key, hashes.SHA256()))
    with open(path, "wb") as out:
        out.write(cert.public_bytes(serialization.Encoding.PEM))
        out.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption()))
    return path


def _raise_fd_limit(needed: int) -> None:
    """Raise this process's soft limit on open files (each hostile connection holds one here)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed if hard == resource.RLIM_INFINITY else min(needed, hard),
                                                    hard))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Raw:
    """A driverless connection: whatever a hostile client sends."""

    def __init__(self, port: int, timeout: float = 60):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buffer = bytearray()
        self.next_id = 1

    def __enter__(self) -> Raw:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.sock.close()

    def frame(self, command: dict, **kw: Any) -> bytes:
        self.next_id += 1
        return encode_op_msg_request(command, self.next_id, **kw)

    def recv(self) -> dict:
        while len(self.buffer) < 4 or len(self.buffer) < int.from_bytes(self.buffer[:4], "little"):
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("closed by the server")
            self.buffer += chunk
        n = int.from_bytes(self.buffer[:4], "little")
        reply = decode_reply(bytes(self.buffer[:n]))
        del self.buffer[:n]
        return reply

    def command(self, command: dict, **kw: Any) -> dict:
        self.sock.sendall(self.frame(command, **kw))
        return self.recv()


class Innocent:
    """ping + insert + find in a loop; per-operation latencies and errors."""

    def __init__(self, uri: str):
        self.client = pymongo.MongoClient(uri, retryWrites=False, retryReads=False, serverSelectionTimeoutMS=10_000)
        self.latencies: list[float] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        coll = self.client.innocent.c
        n = 0
        while not self._stop.is_set():
            for step in range(3):
                started = time.perf_counter()
                try:
                    if step == 0:
                        self.client.admin.command("ping")
                    elif step == 1:
                        coll.insert_one({"_id": n, "v": n})
                    elif coll.find_one({"_id": n}) != {"_id": n, "v": n}:
                        self.errors.append(f"find {n}: wrong document")
                except Exception as exc:  # noqa: BLE001 - counted
                    self.errors.append(f"{type(exc).__name__}: {str(exc)[:200]}")
                self.latencies.append(time.perf_counter() - started)
            n += 1
            time.sleep(0.002)

    def start(self) -> Innocent:
        self.thread.start()
        return self

    def stop(self) -> dict:
        self._stop.set()
        self.thread.join(30)
        self.client.close()
        lat = sorted(self.latencies) or [0.0]
        # A closed loop sends nothing while it waits, so a 10 s stall is one sample among thousands of
        # fast ones: the corrected p99 adds the requests it would have sent meanwhile, one per
        # EXPECTED_INTERVAL (HdrHistogram's coordinated-omission correction).
        corrected = sorted(lat + [x - k * EXPECTED_INTERVAL for x in lat
                                  for k in range(1, int(x / EXPECTED_INTERVAL) + 1)])
        return {"ops": len(self.latencies), "p50_ms": lat[len(lat) // 2] * 1000,
                "p99_ms": lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1000, "max_ms": lat[-1] * 1000,
                "p99_corrected_ms": corrected[min(len(corrected) - 1, int(len(corrected) * 0.99))] * 1000,
                "errors": len(self.errors), "error_samples": self.errors[:3]}


# ------------------------------------------------------------------------------------------ workloads
# Each workload gets the server and returns (hostile outcome as text, as expected?).


def _expect_error(reply: dict, codes: tuple[int, ...]) -> tuple[str, bool]:
    if reply.get("ok") == 1.0:
        return "ok (no error)", False
    return f"{reply.get('code')} {reply.get('codeName')}", reply.get("code") in codes


def idle_cursors(srv: Server) -> tuple[str, bool]:
    client = pymongo.MongoClient(srv.uri)
    client.h.regular.insert_many([{"i": i} for i in range(3)])
    client.h.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    client.h.ts.insert_many([{"t": dt.datetime(2024, 1, 1, 0, 0, i), "m": i % 2} for i in range(3)])
    client.close()
    opened = 0
    with Raw(srv.port) as raw:
        for coll in ("regular", "ts"):
            for _ in range(0, 5000, 50):
                raw.sock.sendall(b"".join(raw.frame({"find": coll, "batchSize": 1, "$db": "h"}) for _ in range(50)))
                for _ in range(50):
                    opened += raw.recv().get("ok") == 1.0
        time.sleep(2)  # idle, while the innocent client works
    return f"{opened} of 10000 cursors open", opened == 10_000


def _bomb_frame(body: bytes, declared: int, cid: int) -> bytes:
    prefix = struct.pack("<iiB", 2013, declared, cid)
    return struct.pack("<iiii", 16 + len(prefix) + len(body), 9, 0, 2012) + prefix + body


def bombs(srv: Server) -> tuple[str, bool]:
    import zstandard

    cctx = zstandard.ZstdCompressor(level=1)
    cobj = cctx.compressobj(size=1 << 30)
    zero = bytes(MB)
    zstd_body = b"".join(cobj.compress(zero) for _ in range(1024)) + cobj.flush()
    out = bytearray()
    n = 44 * MB // 3 * 64
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            break
    snappy_body = bytes(out) + b"\x00a" + b"\xfe\x01\x00" * (44 * MB // 3)
    outcomes = []
    for body, declared, cid in ((zstd_body, 1000, compression.ZSTD), (snappy_body, 40 * MB, compression.SNAPPY),
                                (zstd_body, 40 * MB, compression.ZSTD)):
        with Raw(srv.port) as raw:
            raw.sock.sendall(_bomb_frame(body, declared, cid))
            try:
                reply = raw.recv()
                outcomes.append(reply.get("code") if reply.get("ok") == 0.0 else "accepted")
            except (ConnectionError, OSError):
                outcomes.append("closed")
    good = all(o in (17, "closed") for o in outcomes)
    return f"{outcomes} (zstd 1 GiB frame x2, snappy 44 MB)", good


def _one_doc(srv: Server, doc: dict) -> pymongo.collection.Collection:
    client = pymongo.MongoClient(srv.uri)
    coll = client.h.c
    coll.insert_one(doc)
    return coll


def regex(srv: Server, max_time_ms: int | None) -> tuple[str, bool]:
    client = pymongo.MongoClient(srv.uri)
    coll = client.h.r
    coll.insert_many([{"s": "a" * 40 + "!"} for _ in range(3)])
    started = time.perf_counter()
    try:
        found = list(coll.find({"s": {"$regex": "^(a|aa)+$"}}, max_time_ms=max_time_ms))
        outcome, good = f"{len(found)} documents (no match past the match limit)", max_time_ms is None and not found
    except pymongo.errors.PyMongoError as exc:
        code = getattr(exc, "code", None)
        outcome, good = f"{code}", max_time_ms is not None and code == 50
    client.close()
    return f"{outcome} in {time.perf_counter() - started:.2f} s", good


def regex_bomb(srv: Server, patterns: list[str], expect: int | None) -> tuple[str, bool]:
    """Each pattern in a find; ``expect`` is mongod's code (None: accepted). Issue 21: the first of
    these, ``a{99999999}``, allocated until the kernel killed the server."""
    coll = _one_doc(srv, {"s": "ab"})
    outcomes: dict[str, int] = {}
    with Raw(srv.port) as raw:
        for pattern in patterns:
            reply = raw.command({"find": "c", "filter": {"s": {"$regex": pattern}}, "$db": "h"})
            key = "ok" if reply.get("ok") == 1.0 else f"{reply.get('code')} {reply.get('codeName', '')}".strip()
            outcomes[key] = outcomes.get(key, 0) + 1
    coll.database.client.close()
    (only, *_), wanted = outcomes, "ok" if expect is None else f"{expect} "
    good = len(outcomes) == 1 and (only == wanted if expect is None else only.startswith(wanted))
    return ", ".join(f"{n} x {k}" for k, n in outcomes.items()), good


def concat(srv: Server) -> tuple[str, bool]:
    coll = _one_doc(srv, {"s": "ab"})
    with Raw(srv.port) as raw:
        reply = raw.command({"aggregate": "c", "cursor": {}, "$db": "h", "pipeline": [{"$project": {"s": {
            "$reduce": {"input": {"$range": [0, 40]}, "initialValue": "$s",
                        "in": {"$concat": ["$$value", "$$value"]}}}}}]})
    coll.database.client.close()
    return _expect_error(reply, (16493,))


def nested_lookup(srv: Server) -> tuple[str, bool]:
    client = pymongo.MongoClient(srv.uri)
    client.h.big.insert_many([{"i": i, "pad": "x" * MB} for i in range(10)])
    client.h.one.insert_one({"i": 0})
    client.close()
    pipeline = [{"$lookup": {"from": "big", "as": "x", "pipeline": [
        {"$lookup": {"from": "big", "as": "y", "pipeline": [{"$lookup": {"from": "big", "as": "z", "pipeline": []}}]}}]}}]
    with Raw(srv.port) as raw:
        reply = raw.command({"aggregate": "one", "pipeline": pipeline, "cursor": {}, "$db": "h"})
    return _expect_error(reply, (4568,))


def never_reading(srv: Server) -> tuple[str, bool]:
    client = pymongo.MongoClient(srv.uri)
    client.h.big.insert_many([{"i": i, "pad": "x" * MB} for i in range(4)])
    client.close()
    raw = Raw(srv.port)
    raw.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    raw.sock.setblocking(False)
    frame = raw.frame({"find": "big", "batchSize": 10, "$db": "h"})
    sent, pending, deadline = 0, b"", time.monotonic() + 5
    while sent < 500 and time.monotonic() < deadline:
        pending = pending or frame
        try:
            n = raw.sock.send(pending)
            pending = pending[n:]
            sent += not pending
        except BlockingIOError:
            time.sleep(0.01)
    time.sleep(1)
    raw.sock.close()
    return f"{sent} x 4 MB replies requested, none read", True


def insert_100k(srv: Server) -> tuple[str, bool]:
    docs = [{"i": i, "pad": "p" * 400, "v": i * 1.5} for i in range(100_000)]
    with Raw(srv.port) as raw:
        reply = raw.command({"insert": "bulk", "$db": "h"}, sequences={"documents": docs})
    return f"n={reply.get('n')} ({reply.get('codeName', 'ok')})", reply.get("n") == 100_000


def in_1m(srv: Server) -> tuple[str, bool]:
    client = pymongo.MongoClient(srv.uri)
    client.h.c.insert_many([{"x": i} for i in range(0, 2_000_000, 200_000)])
    client.close()
    with Raw(srv.port) as raw:
        reply = raw.command({"find": "c", "filter": {"x": {"$in": list(range(1_000_000))}}, "$db": "h"})
    n = len(reply.get("cursor", {}).get("firstBatch", []))
    return f"{n} documents ({reply.get('codeName', 'ok')})", n == 5


TLS_STALLED = 2000


def tls_stall(srv: Server) -> tuple[str, bool]:
    """2,000 connections to the allowTLS port that send one byte (of a TLS record) and stall in the sniffing
    phase; the server's CPU over the stall is reported against its CPU over as long a time just before
    (the innocent client runs through both, and its requests cost the server CPU too): the stalled
    connections should add nothing (nothing to do until 16 bytes come)."""
    _raise_fd_limit(TLS_STALLED + 1024)
    cpu = psutil.Process(srv.process.pid)

    def share_over(seconds: float) -> float:
        before, started = cpu.cpu_times(), time.monotonic()
        time.sleep(seconds)
        after = cpu.cpu_times()
        return (after.user + after.system - before.user - before.system) / (time.monotonic() - started)

    baseline = share_over(3)
    socks = []
    try:
        for _ in range(TLS_STALLED):
            sock = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
            sock.sendall(b"\x16")
            socks.append(sock)
        time.sleep(0.5)
        share = share_over(3)
    finally:
        for sock in socks:
            sock.close()
    added = share - baseline
    return (f"{len(socks)} stalled, server CPU {share:.0%} of a core ({baseline:.0%} before them, the innocent "
            f"client's): {added:+.0%}", added < 0.1)


SLOW_READERS = 16
SLOW_REGEX = "^(a+)+$"  # ~1 s per document, the match limit (a "a" * 20,000 + "b" subject)
SLOW_REGEX_DOCS = 4
SLOW_RANGE = 500_000  # ~1.2 s of $add per document (under $range's 100 MB memory limit: 6,553,600)


def _slow_reads(srv: Server, setup: Callable[[pymongo.MongoClient], None],
                read: Callable[[pymongo.MongoClient], Any], expected: Any) -> tuple[str, bool]:
    """``SLOW_READERS`` clients (a thread and a pymongo client each) run ``read`` at the same moment;
    every one must return ``expected``. Outcome: how many did, and the slowest one's time."""
    admin = pymongo.MongoClient(srv.uri)
    setup(admin)
    admin.close()
    clients = [pymongo.MongoClient(srv.uri, retryReads=False) for _ in range(SLOW_READERS)]
    for client in clients:
        client.admin.command("ping")  # connected before the start line
    results: list[Any] = [None] * SLOW_READERS
    seconds = [0.0] * SLOW_READERS
    start = threading.Barrier(SLOW_READERS)

    def run(i: int) -> None:
        start.wait()
        started = time.perf_counter()
        try:
            results[i] = read(clients[i])
        except Exception as exc:  # noqa: BLE001 - reported
            results[i] = f"{type(exc).__name__}: {exc}"[:120]
        seconds[i] = time.perf_counter() - started

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(SLOW_READERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for client in clients:
        client.close()
    good = sum(r == expected for r in results)
    bad = next((r for r in results if r != expected), None)
    outcome = f"{good} of {SLOW_READERS} as expected, {min(seconds):.1f}-{max(seconds):.1f} s"
    return outcome + (f" (e.g. {bad!r:.80})" if bad is not None else ""), good == SLOW_READERS


def slow_regex_reads(srv: Server) -> tuple[str, bool]:
    def setup(client: pymongo.MongoClient) -> None:
        client.h.r.insert_many([{"s": "a" * 20_000 + "b"} for _ in range(SLOW_REGEX_DOCS)])

    def read(client: pymongo.MongoClient) -> int:
        return len(list(client.h.r.find({"s": {"$regex": SLOW_REGEX}})))  # no maxTimeMS

    return _slow_reads(srv, setup, read, 0)


def slow_reduce_reads(srv: Server) -> tuple[str, bool]:
    def setup(client: pymongo.MongoClient) -> None:
        client.h.c.insert_one({"_id": 1})

    pipeline = [{"$project": {"sum": {"$reduce": {"input": {"$range": [0, SLOW_RANGE]}, "initialValue": 0,
                                                  "in": {"$add": ["$$value", "$$this"]}}}}}]

    def read(client: pymongo.MongoClient) -> list:
        return list(client.h.c.aggregate(pipeline))

    return _slow_reads(srv, setup, read, [{"_id": 1, "sum": SLOW_RANGE * (SLOW_RANGE - 1) // 2}])


SERIES_EXPLOSION = 300_000
SERIES_BATCH = 1_000


def series_explosion(srv: Server, series: int = SERIES_EXPLOSION) -> tuple[str, bool]:
    """Every measurement on a new meta (a request id as meta: a common schema mistake), in 1,000-row
    batches, at the server's default ``timeseriesIdleBucketExpiryMemoryUsageThreshold``: the bucket
    catalog must expire idle buckets as new ones open, and every measurement must be readable."""
    client = pymongo.MongoClient(srv.uri)
    coll = client.h.create_collection("req", timeseries={"timeField": "t", "metaField": "request"})
    t0 = dt.datetime(2024, 1, 1)
    for start in range(0, series, SERIES_BATCH):
        coll.insert_many([{"t": t0 + dt.timedelta(milliseconds=i), "request": f"req-{i:09d}", "v": float(i)}
                          for i in range(start, min(start + SERIES_BATCH, series))], ordered=False)
    count = coll.count_documents({})
    sample = coll.find_one({"request": f"req-{series // 2:09d}"}, {"_id": 0})
    catalog = client.admin.command("serverStatus")["bucketCatalog"]
    client.close()
    good = count == series and sample is not None and sample["v"] == float(series // 2)
    return (f"{count:,} rows, {catalog['numBucketsClosedDueToMemoryThreshold']:,} closed for memory, catalog "
            f"{catalog['memoryUsage'] / MB:.0f} MB"), good


def baseline(srv: Server) -> tuple[str, bool]:
    time.sleep(3)
    return "-", True


WORKLOADS: dict[str, Callable[[Server], tuple[str, bool]]] = {
    "baseline (no hostile client)": baseline,
    "idle cursors x10,000": idle_cursors,
    "decompression bombs": bombs,
    "catastrophic regex, no maxTimeMS": lambda s: regex(s, None),
    "catastrophic regex, maxTimeMS 100": lambda s: regex(s, 100),
    "regex compile bomb a{99999999}": lambda s: regex_bomb(s, ["a{99999999}"], 51091),
    "8 distinct a{1000000}b<i> regexes": lambda s: regex_bomb(s, [f"a{{1000000}}b{i}" for i in range(8)], 51091),
    "8 distinct a{60000}b<i> regexes (accepted)": lambda s: regex_bomb(s, [f"a{{60000}}b{i}" for i in range(8)], None),
    "$concat doubling in $reduce": concat,
    "nested $lookup": nested_lookup,
    "never-reading client": never_reading,
    "100,000-document insert": insert_100k,
    "1,000,000-element $in": in_1m,
    "TLS stall: 2,000 connections sending 1 byte": tls_stall,
    f"{SLOW_READERS} concurrent slow reads: catastrophic regex, no maxTimeMS": slow_regex_reads,
    f"{SLOW_READERS} concurrent slow reads: $reduce over $range": slow_reduce_reads,
    "series explosion: 300,000 new metas in 1,000-row batches": series_explosion,
}
TLS_WORKLOADS = {"TLS stall: 2,000 connections sending 1 byte"}  # their server listens with --tlsMode allowTLS


def run_workload(name: str, fn: Callable, workdir: str, python: str, set_parameters: list[str]) -> dict:
    srv = Server(workdir, python, tls=name in TLS_WORKLOADS, set_parameters=set_parameters)
    rss = RssSampler(srv.process.pid)
    innocent = Innocent(srv.uri).start()
    time.sleep(0.5)
    started = time.monotonic()
    try:
        outcome, good = fn(srv)
    except Exception as exc:  # noqa: BLE001 - reported
        outcome, good = f"client failed: {type(exc).__name__}: {exc}"[:200], False
    hostile_seconds = time.monotonic() - started
    time.sleep(0.5)
    stats = innocent.stop()
    peak = rss.stop()["hwm"] / MB
    try:
        alive = pymongo.MongoClient(srv.uri, serverSelectionTimeoutMS=5000).admin.command("ping")["ok"] == 1.0
    except Exception:  # noqa: BLE001
        alive = False
    srv.stop()
    return {"workload": name, "hostile": outcome, "hostile_as_expected": good, "hostile_seconds": hostile_seconds,
            "peak_rss_mb": peak, "server_alive": alive, **stats}


def run_fuzz(frames: int, workdir: str, python: str) -> dict:
    srv = Server(workdir, python)
    rss = RssSampler(srv.process.pid)
    innocent = Innocent(srv.uri).start()
    report = wire_fuzz.run(srv.port, frames, seed=11)
    stats = innocent.stop()
    peak = rss.stop()["hwm"] / MB
    srv.stop()
    return {"workload": f"wire fuzz, {frames:,} frames", "hostile": report.summary(), "hostile_as_expected": report.ok(),
            "peak_rss_mb": peak, "server_alive": True, **stats}


def table(rows: list[dict]) -> str:
    lines = ["| workload | hostile request | as expected | innocent ops | p50 ms | p99 ms | p99 corrected ms | max ms "
             "| errors | peak RSS MB | targets |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        p99 = max(r["p99_ms"], r["p99_corrected_ms"])
        met = p99 <= TARGET_P99_MS and r["errors"] == 0 and r["peak_rss_mb"] <= TARGET_RSS_MB
        lines.append(f"| {r['workload']} | {r['hostile']} | {'yes' if r['hostile_as_expected'] else 'NO'} | {r['ops']} | "
                     f"{r['p50_ms']:.1f} | {r['p99_ms']:.1f} | {r['p99_corrected_ms']:.1f} | {r['max_ms']:.1f} | "
                     f"{r['errors']} | {r['peak_rss_mb']:.0f} | {'met' if met else 'missed'} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.neighbours", description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", default="all", help="comma list of workload name prefixes, or 'all'")
    parser.add_argument("--fuzz-frames", type=int, default=100_000, help="0 skips the fuzzer")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--setParameter", dest="set_parameters", action="append", default=[], metavar="NAME=VALUE",
                        help="passed to every server started (e.g. tidemarkRunTokens=1)")
    args = parser.parse_args(argv)
    chosen = [n for n in WORKLOADS if args.workloads == "all"
              or any(n.startswith(p.strip()) for p in args.workloads.split(","))]
    rows = []
    with tempfile.TemporaryDirectory(prefix="neighbours-") as workdir:
        for name in chosen:
            print(f"... {name}", file=sys.stderr, flush=True)
            rows.append(run_workload(name, WORKLOADS[name], workdir, args.python, args.set_parameters))
        if args.fuzz_frames:
            print(f"... wire fuzz ({args.fuzz_frames} frames)", file=sys.stderr, flush=True)
            rows.append(run_fuzz(args.fuzz_frames, workdir, args.python))
    print(table(rows))
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    (out / f"neighbours-{stamp}.json").write_text(json.dumps(rows, indent=1, default=str))
    ok = all(r["hostile_as_expected"] and r["errors"] == 0 for r in rows)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
