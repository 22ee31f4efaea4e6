"""ClickHouse (the Debian ``clickhouse-server`` package, 18.16): TabSeparated inserts over HTTP, SQL queries.

``clickhouse-server`` runs from a config and a users file this module writes under the run's work dir
(data, tmp, logs there too; HTTP and native TCP on free loopback ports; timezone UTC; an HTTP keep-alive
of an hour instead of 3 s, so the query connection is not dropped between queries; no system log tables,
no graphite, no interserver port), pinned like the other servers, and is stopped with SIGTERM; no
system service is involved. If the binary is missing it is installed with apt-get; if that fails the peer is
skipped with the reason. The profile sets ``max_threads = 1``: the server is pinned to one core, so more
threads buy it nothing, and 18.16 runs a query's extra threads in a pool made for that query whose threads
exit with it — their CPU would then be missing from the per-query figure, read from the live threads in
``/proc`` (``harness.thread_cpu_ns``).

Table (TSBS's ClickHouse layout, the tags denormalized into the row as in the other peers)::

    CREATE TABLE benchmark.cpu (hostname String, ... service_environment String, time DateTime,
                                usage_user Float64, ... usage_guest_nice Float64)
    ENGINE = MergeTree() PARTITION BY toYYYYMM(time) ORDER BY (hostname, time)

Ingest: the rows as TabSeparated, encoded once into a file like the line protocol (``build_tsv_cache``),
``INSERT INTO benchmark.cpu FORMAT TabSeparated`` of 1000 rows per POST over ``ctx.workers`` connections
(the line-protocol loader, ``influx.load_lines``), then settle (its background merges count in its ingest
cost). Storage: after the queries ``OPTIMIZE TABLE benchmark.cpu FINAL`` (one part per partition; the
other peers' figures are likewise after a full compaction / forced merge), then bytes under its data
``path`` after a clean SIGTERM shutdown (the parts a merge replaced are deleted after
``old_parts_lifetime``, set to 1 s; the peer waits for that, and any still left are not counted). Default compression (LZ4; 18.16 has no per-column codecs).

Queries: SQL over HTTP, ``FORMAT TabSeparated``; times leave as ``toUInt32`` epoch seconds. ``DateTime``
counts whole seconds (18.16 has no DateTime64) and every row lies on a whole second, so a window
[start, end) in ms is ``time >= toDateTime(ceil(start / 1000)) AND time < toDateTime(ceil(end / 1000))``,
the same rows. Buckets: ``toStartOfMinute`` / ``toStartOfHour`` (UTC) = ``$dateTrunc``. lastpoint:
``argMax(field, time)`` per host (a host's times are distinct). All eight query types are expressible.
"""

from __future__ import annotations

import datetime as dt
import http.client
import os
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
    debian_package_version,
    disk_bytes,
    ensure_debian_binary,
    free_port,
    ingest_stats,
    settle,
    start_process,
    stop_process,
    wait_port,
)
from bench.peers.influx import load_lines
from bench.queries import QUERY_TYPES, Params, ResultMismatch

DB = "benchmark"
TABLE = f"{DB}.cpu"
ROWS_PER_INSERT = 1000
TSV_FORMAT = 1
INSERT_PATH = "/?" + urllib.parse.urlencode({"query": f"INSERT INTO {TABLE} FORMAT TabSeparated"})
TRUNC = {"minute": "toStartOfMinute", "hour": "toStartOfHour"}


def ensure_clickhouse() -> str:
    return ensure_debian_binary("clickhouse-server", "clickhouse-server")


def clickhouse_version() -> str:
    package = debian_package_version("clickhouse-server")
    return f"ClickHouse {package}" if package else "ClickHouse"


def run(ctx: Context) -> SystemResult:
    result = SystemResult("clickhouse", "ClickHouse, TabSeparated inserts over HTTP, SQL queries")
    try:
        binary = ensure_clickhouse()
    except Unavailable as exc:
        result.errors.append(f"skipped: {exc}")
        return result
    result.description = f"{clickhouse_version()} (MergeTree), TabSeparated inserts over HTTP, SQL queries"
    tsv_path, offsets = build_tsv_cache(ctx.dataset, ctx.frames_path.parent)
    home = ctx.workdir / "clickhouse"
    port = free_port()
    config = write_config(home, port)
    proc = start_process(ctx.server_prefix() + [binary, f"--config-file={config}"], home / "stdout.log")
    loaded = optimized = False
    active: set[str] = set()  # the table's parts after OPTIMIZE
    try:
        wait_port(port, proc, what="clickhouse-server")
        Client(port).query(f"CREATE DATABASE {DB}")
        Client(port).query(create_table_sql())
        loaded_result = load_lines(ctx, port, tsv_path, offsets, proc.pid, "clickhouse",
                                   path=INSERT_PATH, ok_status=200)  # fmt: skip
        if not loaded_result.get("error"):
            loaded_result.update(settle(proc.pid))
        stats = ingest_stats(loaded_result, ctx.dataset.rows, ctx.pin)
        result.ingest["tsv-http"] = stats
        if stats["error"]:
            result.errors.append(f"load: {stats['error']}")
        else:
            loaded = True
            client = Client(port)
            check_and_time(ctx, "clickhouse", lambda q, p: client.query(sql(q, p)), normalize, result,
                           proc.pid)  # fmt: skip
        if loaded:
            client.query(f"OPTIMIZE TABLE {TABLE} FINAL")  # waits for the merge (one part per partition)
            active = set(client.query(
                "SELECT name FROM system.parts WHERE active AND database = 'benchmark' AND table = 'cpu' "
                "FORMAT TabSeparated").decode().split())  # fmt: skip
            optimized = True
            _wait_outdated_gone(home, active)
    except ResultMismatch:
        stop_process(proc)
        raise
    except Exception as exc:
        result.errors.append(f"{type(exc).__name__}: {exc}")
    clean = stop_process(proc)
    if loaded:
        # merged-away parts wait old_parts_lifetime before deletion; any still there are not the data
        outdated = sum(disk_bytes(d) for d in _part_dirs(home) if d.name not in active) if optimized else 0
        size = disk_bytes(home / "data") - outdated
        note = "after OPTIMIZE TABLE FINAL" if optimized else "OPTIMIZE TABLE FINAL failed"
        note += " and a clean shutdown" if clean else "; clickhouse-server had to be killed"
        if outdated:
            note += f"; without {outdated:,} bytes of merged-away parts not yet deleted"
        result.storage = {"bytes": size, "bytes_per_row": size / ctx.dataset.rows, "note": note}
    return result


def write_config(home: Path, http_port: int) -> Path:
    """The server's config and users files under ``home``; returns the config's path."""
    for d in ("data", "tmp", "user_files", "log"):
        (home / d).mkdir(parents=True, exist_ok=True)
    users = home / "users.xml"
    users.write_text("""<?xml version="1.0"?>
<yandex>
  <profiles><default><max_threads>1</max_threads></default></profiles>
  <users>
    <default>
      <password></password>
      <networks><ip>127.0.0.1</ip></networks>
      <profile>default</profile>
      <quota>default</quota>
    </default>
  </users>
  <quotas><default></default></quotas>
</yandex>
""")
    config = home / "config.xml"
    config.write_text(f"""<?xml version="1.0"?>
<yandex>
  <logger>
    <level>warning</level>
    <log>{home / "log" / "clickhouse-server.log"}</log>
    <errorlog>{home / "log" / "clickhouse-server.err.log"}</errorlog>
    <size>100M</size>
    <count>1</count>
  </logger>
  <listen_host>127.0.0.1</listen_host>
  <http_port>{http_port}</http_port>
  <tcp_port>{free_port()}</tcp_port>
  <path>{home / "data"}/</path>
  <tmp_path>{home / "tmp"}/</tmp_path>
  <user_files_path>{home / "user_files"}/</user_files_path>
  <users_config>{users}</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <timezone>UTC</timezone>
  <mark_cache_size>5368709120</mark_cache_size>
  <max_concurrent_queries>100</max_concurrent_queries>
  <keep_alive_timeout>3600</keep_alive_timeout>
  <merge_tree>
    <old_parts_lifetime>1</old_parts_lifetime>
    <cleanup_delay_period>1</cleanup_delay_period>
  </merge_tree>
</yandex>
""")
    return config


def _part_dirs(home: Path) -> list[Path]:
    table = home / "data" / "data" / DB / "cpu"
    return [d for d in table.iterdir() if d.is_dir() and d.name != "detached"] if table.is_dir() else []


def _wait_outdated_gone(home: Path, active: set[str], timeout_s: float = 30.0) -> None:
    """Wait until the parts a merge replaced are deleted (old_parts_lifetime 1 s in the config)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and {d.name for d in _part_dirs(home)} != active:
        time.sleep(0.5)


def create_table_sql() -> str:
    columns = [f"{t} String" for t in TAG_NAMES] + ["time DateTime"] + [f"{f} Float64" for f in FIELDS]
    return (f"CREATE TABLE {TABLE} ({', '.join(columns)}) "
            "ENGINE = MergeTree() PARTITION BY toYYYYMM(time) ORDER BY (hostname, time)")  # fmt: skip


# -- ingest --------------------------------------------------------------------------------------------------


def build_tsv_cache(dataset: Dataset, cache_dir: Path) -> tuple[Path, np.ndarray]:
    """Write (once) the rows as TabSeparated in the table's column order, plus the byte offsets of each
    1000-row insert."""
    name = f"cpu-v{TSV_FORMAT}-s{dataset.scale}-d{dataset.duration_s}-seed{dataset.seed}.tsv"
    path, index = cache_dir / name, cache_dir / (name + ".offsets.npy")
    if path.exists() and index.exists():
        return path, np.load(index)
    cache_dir.mkdir(parents=True, exist_ok=True)
    prefixes = ["\t".join(tags[t] for t in TAG_NAMES) + "\t" for tags in dataset.tags]
    offsets, pos, pending = [0], 0, 0
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    with open(tmp, "wb") as f:
        for tick in range(dataset.ticks):
            when = _datetime_text(START_MS + tick * INTERVAL_MS)
            for h, row in enumerate(dataset.values[tick].tolist()):
                line = (prefixes[h] + when + "\t" + "\t".join(str(v) for v in row) + "\n").encode()
                f.write(line)
                pos += len(line)
                pending += 1
                if pending == ROWS_PER_INSERT:
                    offsets.append(pos)
                    pending = 0
    if pending:
        offsets.append(pos)
    os.replace(tmp, path)
    arr = np.array(offsets, dtype=np.int64)
    np.save(index, arr)
    return path, arr


def _datetime_text(ms: int) -> str:
    """A DateTime's text form (the server's timezone is UTC)."""
    return (dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=ms)).strftime("%Y-%m-%d %H:%M:%S")


# -- queries -------------------------------------------------------------------------------------------------


class Client:
    def __init__(self, port: int):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)

    def query(self, text: str) -> bytes:
        """POST one statement; its TabSeparated answer."""
        self.conn.request("POST", "/", body=text.encode())
        resp = self.conn.getresponse()
        body = resp.read()
        if resp.status != 200:
            raise RuntimeError(f"ClickHouse error for {text[:200]!r}: HTTP {resp.status}: {body[:400]!r}")
        return body


def seconds_ceil(ms: int) -> int:
    """The first whole second at or after ``ms``: for a row time t on a whole second,
    t >= ms <=> t >= seconds_ceil(ms) * 1000 (and likewise for <)."""
    return -(-ms // 1000)


def _window(p: Params) -> str:
    return f"time >= toDateTime({seconds_ceil(p.start_ms)}) AND time < toDateTime({seconds_ceil(p.end_ms)})"


def _hosts(p: Params) -> str:
    return "hostname IN (" + ", ".join(f"'{h}'" for h in p.hosts) + ")"


def sql(query: str, p: Params) -> str:
    """The SQL answering one query instance (times out as epoch seconds)."""
    q = QUERY_TYPES[query]
    out = " FORMAT TabSeparated"
    if query.startswith("single-groupby") or query == "cpu-max-all-8":
        aggs = ", ".join(f"max({m})" for m in q.metrics)
        return (f"SELECT toUInt32({TRUNC[q.unit]}(time)) AS t, {aggs} FROM {TABLE} "
                f"WHERE {_hosts(p)} AND {_window(p)} GROUP BY t ORDER BY t" + out)  # fmt: skip
    if query.startswith("double-groupby"):
        aggs = ", ".join(f"avg({m})" for m in q.metrics)
        return (f"SELECT toUInt32(toStartOfHour(time)) AS t, hostname, {aggs} FROM {TABLE} "
                f"WHERE {_window(p)} GROUP BY t, hostname ORDER BY t, hostname" + out)  # fmt: skip
    if query == "high-cpu-1":
        return (f"SELECT toUInt32(time), hostname, {', '.join(FIELDS)} FROM {TABLE} "
                f"WHERE usage_user > 90.0 AND {_hosts(p)} AND {_window(p)}" + out)  # fmt: skip
    if query == "lastpoint":
        last = ", ".join(f"argMax({f}, time)" for f in FIELDS)
        return f"SELECT hostname, toUInt32(max(time)), {last} FROM {TABLE} GROUP BY hostname" + out
    if query == "groupby-orderby-limit":
        return (f"SELECT toUInt32(toStartOfMinute(time)) AS t, max(usage_user) FROM {TABLE} "
                f"WHERE time < toDateTime({seconds_ceil(p.end_ms)}) GROUP BY t ORDER BY t DESC LIMIT 5"
                + out)  # fmt: skip
    raise KeyError(query)


def _rows(body: bytes) -> list[list[str]]:
    return [line.split("\t") for line in body.decode().splitlines()]


def normalize(query: str, body: bytes) -> list[tuple]:
    """The normalized form of bench.queries from a TabSeparated answer of ``sql``."""
    rows = _rows(body)
    if query.startswith("double-groupby"):
        return sorted((int(r[0]) * 1000, r[1], tuple(float(v) for v in r[2:])) for r in rows)
    if query == "high-cpu-1":
        return sorted((int(r[0]) * 1000, r[1], tuple(float(v) for v in r[2:])) for r in rows)
    if query == "lastpoint":
        return sorted((r[0], int(r[1]) * 1000, tuple(float(v) for v in r[2:])) for r in rows)
    return [(int(r[0]) * 1000, tuple(float(v) for v in r[1:])) for r in rows]
