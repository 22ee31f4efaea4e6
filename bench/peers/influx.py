"""InfluxDB 1.x (the Debian ``influxdb`` package): line protocol over HTTP on loopback, InfluxQL queries.

``influxd`` runs from a temporary config: meta/data/wal under the run's work dir, HTTP on a free loopback
port, reporting and monitoring off, ``wal-fsync-delay = 0s`` (every acknowledged write is fsynced, like
Tidemark), and short "cold" durations so that a full compaction happens soon after the load; the storage
figure is taken once the data directory is stable and the WAL drained, after a clean SIGTERM shutdown.

The rows are written as line protocol (``cpu,<10 tags> <10 float fields> <ms>``), 1000 lines per write,
over ``ctx.workers`` connections, from a file encoded once like the OP_MSG frames. If ``influxd`` is
missing it is installed with apt-get; if that fails the peer is skipped with the reason.
"""

from __future__ import annotations

import http.client
import json
import mmap
import os
import subprocess
import threading
import time
import urllib.parse
from pathlib import Path

import numpy as np

from bench.generator import FIELDS, INTERVAL_MS, START_MS, TAG_NAMES, Dataset
from bench.harness import (
    Context,
    SystemResult,
    Unavailable,
    check_and_time,
    disk_bytes,
    ensure_debian_binary,
    free_port,
    ingest_stats,
    process_cpu_seconds,
    progress_bar,
    start_process,
    stop_process,
    wait_port,
)
from bench.queries import QUERY_TYPES, Params, ResultMismatch

DB = "benchmark"
LINES_PER_WRITE = 1000
LP_FORMAT = 1


def ensure_influxd() -> str:
    return ensure_debian_binary("influxd", "influxdb")


def influxd_version(influxd: str) -> str:
    out = subprocess.run([influxd, "version"], capture_output=True, text=True, check=False).stdout
    return out.split("(")[0].strip() or "InfluxDB"


def run(ctx: Context) -> SystemResult:
    result = SystemResult("influxdb", "InfluxDB 1.x, line protocol over HTTP, WAL fsync on every write")
    try:
        influxd = ensure_influxd()
    except Unavailable as exc:
        result.errors.append(f"skipped: {exc}")
        return result
    result.description = f"{influxd_version(influxd)}, line protocol over HTTP, WAL fsync on every write"
    lines_path, offsets = build_line_cache(ctx.dataset, ctx.frames_path.parent)
    home = ctx.workdir / "influxdb"
    port = free_port()
    config = write_config(home, port)
    proc = start_process(ctx.server_prefix() + [influxd, "-config", str(config)], home / "influxd.log")
    loaded = False
    try:
        wait_port(port, proc, what="influxd")
        client = _Client(port)
        client.wait_ready()
        client.query(f"CREATE DATABASE {DB}", db=None)
        stats = ingest_stats(
            load_lines(ctx, port, lines_path, offsets, proc.pid, "influx"), ctx.dataset.rows, ctx.pin
        )
        result.ingest["line-protocol"] = stats
        if stats["error"]:
            result.errors.append(f"load: {stats['error']}")
        else:
            loaded = True
            check_and_time(
                ctx, "influxdb", lambda q, p: client.query(influxql(q, p)), normalize, result, proc.pid
            )
    except ResultMismatch:
        stop_process(proc)
        raise
    except Exception as exc:
        result.errors.append(f"{type(exc).__name__}: {exc}")
    if loaded:
        compacted = _wait_compaction(home)
    clean = stop_process(proc)
    if loaded:
        size = disk_bytes(home / "data") + disk_bytes(home / "wal") + disk_bytes(home / "meta")
        note = (
            "after full compaction and a clean shutdown" if compacted else "compaction did not settle in time"
        )
        if not clean:
            note += "; influxd had to be killed"
        result.storage = {"bytes": size, "bytes_per_row": size / ctx.dataset.rows, "note": note}
    return result


def write_config(home: Path, port: int) -> Path:
    for d in ("meta", "data", "wal"):
        (home / d).mkdir(parents=True, exist_ok=True)
    text = f"""
reporting-disabled = true
bind-address = "127.0.0.1:{free_port()}"
[meta]
  dir = "{home / "meta"}"
[data]
  dir = "{home / "data"}"
  wal-dir = "{home / "wal"}"
  wal-fsync-delay = "0s"
  query-log-enabled = false
  cache-snapshot-write-cold-duration = "2s"
  compact-full-write-cold-duration = "4s"
[retention]
  enabled = false
[shard-precreation]
  enabled = false
[monitor]
  store-enabled = false
[http]
  enabled = true
  bind-address = "127.0.0.1:{port}"
  log-enabled = false
  max-body-size = 0
[continuous_queries]
  enabled = false
[subscriber]
  enabled = false
"""
    path = home / "influxdb.conf"
    path.write_text(text)
    return path


# -- line protocol -------------------------------------------------------------------------------------------


def build_line_cache(dataset: Dataset, cache_dir: Path) -> tuple[Path, np.ndarray]:
    """Write (once) the rows as line protocol, plus the byte offsets of each 1000-line write."""
    name = f"cpu-v{LP_FORMAT}-s{dataset.scale}-d{dataset.duration_s}-seed{dataset.seed}.lp"
    path, index = cache_dir / name, cache_dir / (name + ".offsets.npy")
    if path.exists() and index.exists():
        return path, np.load(index)
    cache_dir.mkdir(parents=True, exist_ok=True)
    prefixes = [
        ("cpu," + ",".join(f"{t}={tags[t]}" for t in sorted(TAG_NAMES)) + " ") for tags in dataset.tags
    ]
    offsets, pos, pending = [0], 0, 0
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    with open(tmp, "wb") as f:
        for tick in range(dataset.ticks):
            ms = START_MS + tick * INTERVAL_MS
            block = dataset.values[tick].tolist()
            for h, row in enumerate(block):
                line = (
                    prefixes[h] + ",".join(f"{n}={v}" for n, v in zip(FIELDS, row, strict=True)) + f" {ms}\n"
                ).encode()
                f.write(line)
                pos += len(line)
                pending += 1
                if pending == LINES_PER_WRITE:
                    offsets.append(pos)
                    pending = 0
    if pending:
        offsets.append(pos)
    os.replace(tmp, path)
    arr = np.array(offsets, dtype=np.int64)
    np.save(index, arr)
    return path, arr


def load_lines(
    ctx: Context,
    port: int,
    lines_path: Path,
    offsets: np.ndarray,
    server_pid: int,
    system: str,
    *,
    path: str = f"/write?db={DB}&precision=ms",
    ok_status: int = 204,
) -> dict:
    """POST the writes (the bytes between consecutive ``offsets``, one row a line) to ``path`` over
    ``ctx.workers`` connections, timing them and the server's CPU. The defaults: line protocol to
    ``/write`` (InfluxDB and VictoriaMetrics' InfluxDB-compatible endpoint both answer 204); ClickHouse
    posts TabSeparated rows to its ``INSERT`` (200)."""
    with open(lines_path, "rb") as f:
        data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)  # 2.6 GB at scale 1000: map, don't read
    bounds = list(zip(offsets[:-1].tolist(), offsets[1:].tolist(), strict=True))
    batches = iter(range(len(bounds)))
    lock = threading.Lock()
    samples: list[tuple[float, int]] = []
    state = {"rows": 0, "error": None}
    bar = progress_bar(ctx, ctx.dataset.rows, f"  {system} load")

    def worker() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
        try:
            while state["error"] is None:
                with lock:
                    i = next(batches, None)
                if i is None:
                    return
                lo, hi = bounds[i]
                body = data[lo:hi]
                conn.request("POST", path, body=body)
                resp = conn.getresponse()
                text = resp.read()
                if resp.status != ok_status:
                    state["error"] = f"HTTP {resp.status}: {text[:300]!r}"
                    return
                n = body.count(b"\n")
                with lock:
                    state["rows"] += n
                    samples.append((time.perf_counter() - t0, state["rows"]))
                bar.update(n)
        except Exception as exc:
            state["error"] = f"{type(exc).__name__}: {exc}"
        finally:
            conn.close()

    saved = os.sched_getaffinity(0)
    if ctx.pin:
        os.sched_setaffinity(0, {1})  # the loader's core, as for the other systems
    cpu0 = process_cpu_seconds(server_pid)
    t0 = time.perf_counter()
    try:
        threads = [threading.Thread(target=worker) for _ in range(ctx.workers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        os.sched_setaffinity(0, saved)
    seconds = time.perf_counter() - t0
    cpu1 = process_cpu_seconds(server_pid)
    bar.close()
    data.close()
    out = {"rows": state["rows"], "seconds": seconds, "samples": samples, "error": state["error"]}
    if cpu0 is not None and cpu1 is not None:
        out["server_cpu_s"] = cpu1 - cpu0
    return out


def _wait_compaction(home: Path, timeout: float = 180.0) -> bool:
    """Wait until the WAL has drained into TSM files and the data dir has not changed for 8 s."""
    deadline = time.monotonic() + timeout
    last, since = None, time.monotonic()
    while time.monotonic() < deadline:
        wal = disk_bytes(home / "wal")
        data = sorted(
            (str(p), p.stat().st_size) for p in (home / "data").rglob("*") if p.is_file() and p.exists()
        )
        now = (wal, data)
        if now != last:
            last, since = now, time.monotonic()
        elif wal < 64 * 1024 and time.monotonic() - since >= 8:
            return True
        time.sleep(1)
    return False


# -- queries -------------------------------------------------------------------------------------------------


class _Client:
    def __init__(self, port: int):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)

    def wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.conn.request("GET", "/ping")
                resp = self.conn.getresponse()
                resp.read()
                if resp.status == 204:
                    return
            except OSError:
                self.conn.close()
            if time.monotonic() > deadline:
                raise RuntimeError("influxd did not answer /ping")
            time.sleep(0.2)

    def query(self, q: str, db: str | None = DB) -> dict:
        params = {"q": q, "epoch": "ms"}
        if db:
            params["db"] = db
        self.conn.request("POST", "/query?" + urllib.parse.urlencode(params))
        resp = self.conn.getresponse()
        body = json.loads(resp.read())
        errors = [r["error"] for r in body.get("results", []) if "error" in r]
        if resp.status != 200 or body.get("error") or errors:
            raise RuntimeError(f"InfluxQL error for {q!r}: {body.get('error') or errors or resp.status}")
        return body


def _hosts_clause(p: Params) -> str:
    return "(" + " OR ".join(f"hostname = '{h}'" for h in p.hosts) + ")"


def influxql(query: str, p: Params) -> str:
    q = QUERY_TYPES[query]
    window = f"time >= {p.start_ms}ms AND time < {p.end_ms}ms"
    if query.startswith("single-groupby") or query == "cpu-max-all-8":
        aggs = ", ".join(f"max({m})" for m in q.metrics)
        step = {"minute": "1m", "hour": "1h"}[q.unit]
        return (
            f"SELECT {aggs} FROM cpu WHERE {_hosts_clause(p)} AND {window} GROUP BY time({step}) fill(none)"
        )
    if query.startswith("double-groupby"):
        aggs = ", ".join(f"mean({m})" for m in q.metrics)
        return f"SELECT {aggs} FROM cpu WHERE {window} GROUP BY time(1h), hostname fill(none)"
    if query == "high-cpu-1":
        return f"SELECT * FROM cpu WHERE usage_user > 90.0 AND {_hosts_clause(p)} AND {window}"
    if query == "lastpoint":
        return "SELECT * FROM cpu GROUP BY hostname ORDER BY time DESC LIMIT 1"
    if query == "groupby-orderby-limit":
        # InfluxQL needs a lower bound for GROUP BY time(); the data start is the same query.
        return (
            f"SELECT max(usage_user) FROM cpu WHERE time >= {START_MS}ms AND time < {p.end_ms}ms "
            "GROUP BY time(1m) fill(none) ORDER BY time DESC LIMIT 5"
        )
    raise KeyError(query)


def normalize(query: str, body: dict) -> list[tuple]:
    series = [s for r in body.get("results", []) for s in r.get("series", [])]
    if query.startswith("double-groupby"):
        rows = [
            (v[0], s["tags"]["hostname"], tuple(float(x) for x in v[1:])) for s in series for v in s["values"]
        ]
        return sorted(rows, key=lambda r: (r[0], r[1]))
    if query in ("high-cpu-1", "lastpoint"):
        out = []
        for s in series:
            cols = s["columns"]
            for v in s["values"]:
                rec = dict(zip(cols, v, strict=True))
                host = rec.get("hostname") or s.get("tags", {}).get("hostname")
                fields = tuple(float(rec[f]) for f in FIELDS)
                out.append(
                    (rec["time"], host, fields) if query == "high-cpu-1" else (host, rec["time"], fields)
                )
        return sorted(out)
    return [
        (v[0], tuple(None if x is None else float(x) for x in v[1:])) for s in series for v in s["values"]
    ]
