"""DuckDB in-process: the vectorized-engine bar for query speed on this hardware (performance.md §2).

The rows go straight from the generator's numpy arrays into a table
``cpu(time TIMESTAMP, <10 tag VARCHARs>, <10 DOUBLEs>)`` in a database file, in chunks of ticks (DuckDB
scans a dict of numpy arrays directly; no pandas or Arrow). Its load rate is an in-process bulk append, not
a durable network ingest, so the report lists it apart. The 8 queries are the SQL equivalents of the
MongoDB pipelines; results are checked against the same naive computation.
"""

from __future__ import annotations

import os
import time

import numpy as np

from bench.generator import FIELDS, INTERVAL_MS, START_MS, TAG_NAMES
from bench.harness import Context, SystemResult, check_and_time, disk_bytes, ingest_stats, progress_bar
from bench.queries import QUERY_TYPES, Params, ResultMismatch, datetime_to_ms, ms_to_datetime

CHUNK_TICKS = 360  # one hour of ticks per append


def run(ctx: Context) -> SystemResult:
    import duckdb

    result = SystemResult("duckdb", f"DuckDB {duckdb.__version__} in-process (vectorized SQL engine)")
    path = ctx.workdir / "duckdb" / "cpu.duckdb"
    path.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(str(path))
    try:
        result.ingest["bulk"] = ingest_stats(_load(ctx, con), ctx.dataset.rows, pinned=False)
        check_and_time(
            ctx, "duckdb", lambda q, p: _execute(con, q, p), _normalize, result, server_pid=os.getpid()
        )
    except ResultMismatch:
        con.close()
        raise
    except Exception as exc:
        result.errors.append(f"{type(exc).__name__}: {exc}")
    con.close()
    size = disk_bytes(path.parent)
    result.storage = {
        "bytes": size,
        "bytes_per_row": size / ctx.dataset.rows,
        "note": "database file after close",
    }
    return result


def _load(ctx: Context, con) -> dict:
    ds = ctx.dataset
    columns = ", ".join(
        ["time TIMESTAMP"] + [f"{t} VARCHAR" for t in TAG_NAMES] + [f"{f} DOUBLE" for f in FIELDS]
    )
    con.execute(f"CREATE TABLE cpu ({columns})")
    host_tags = {t: np.array([h[t] for h in ds.tags]) for t in TAG_NAMES}
    bar = progress_bar(ctx, ds.rows, "  duckdb load")
    samples, rows = [], 0
    t0 = time.perf_counter()
    for first in range(0, ds.ticks, CHUNK_TICKS):
        ticks = min(CHUNK_TICKS, ds.ticks - first)
        block = ds.values[first : first + ticks].reshape(ticks * ds.scale, len(FIELDS)).astype(np.float64)
        times = START_MS + (first + np.arange(ticks, dtype=np.int64)) * INTERVAL_MS
        chunk = {"time": np.repeat(times, ds.scale).astype("datetime64[ms]")}
        chunk.update({t: np.tile(v, ticks) for t, v in host_tags.items()})
        chunk.update({f: np.ascontiguousarray(block[:, i]) for i, f in enumerate(FIELDS)})
        con.execute("INSERT INTO cpu SELECT * FROM chunk")
        rows += ticks * ds.scale
        samples.append((time.perf_counter() - t0, rows))
        bar.update(ticks * ds.scale)
    con.execute("CHECKPOINT")
    bar.close()
    return {"rows": rows, "seconds": time.perf_counter() - t0, "samples": samples, "error": None}


def _sql(query: str, p: Params) -> tuple[str, list]:
    q = QUERY_TYPES[query]
    start, end = ms_to_datetime(p.start_ms), ms_to_datetime(p.end_ms)
    hosts = ", ".join("?" for _ in p.hosts)
    if query.startswith("single-groupby") or query == "cpu-max-all-8":
        aggs = ", ".join(f"max({m})" for m in q.metrics)
        return (
            f"SELECT date_trunc('{q.unit}', time) AS t, {aggs} FROM cpu "
            f"WHERE time >= ? AND time < ? AND hostname IN ({hosts}) GROUP BY t ORDER BY t",
            [start, end, *p.hosts],
        )
    if query.startswith("double-groupby"):
        aggs = ", ".join(f"avg({m})" for m in q.metrics)
        return (
            f"SELECT date_trunc('hour', time) AS t, hostname, {aggs} FROM cpu "
            "WHERE time >= ? AND time < ? GROUP BY t, hostname ORDER BY t, hostname",
            [start, end],
        )
    fields = ", ".join(FIELDS)
    if query == "high-cpu-1":
        return (
            f"SELECT time, hostname, {fields} FROM cpu "
            f"WHERE time >= ? AND time < ? AND usage_user > 90.0 AND hostname IN ({hosts})",
            [start, end, *p.hosts],
        )
    if query == "lastpoint":
        return (
            f"SELECT DISTINCT ON (hostname) hostname, time, {fields} FROM cpu ORDER BY hostname, time DESC",
            [],
        )
    if query == "groupby-orderby-limit":
        return (
            "SELECT date_trunc('minute', time) AS t, max(usage_user) FROM cpu "
            "WHERE time < ? GROUP BY t ORDER BY t DESC LIMIT 5",
            [end],
        )
    raise KeyError(query)


def _execute(con, query: str, p: Params) -> list[tuple]:
    sql, args = _sql(query, p)
    return con.execute(sql, args).fetchall()


def _normalize(query: str, rows: list[tuple]) -> list[tuple]:
    if query.startswith("double-groupby"):
        return [(datetime_to_ms(r[0]), r[1], tuple(float(v) for v in r[2:])) for r in rows]
    if query == "high-cpu-1":
        return sorted((datetime_to_ms(r[0]), r[1], tuple(float(v) for v in r[2:])) for r in rows)
    if query == "lastpoint":
        return sorted((r[0], datetime_to_ms(r[1]), tuple(float(v) for v in r[2:])) for r in rows)
    return [(datetime_to_ms(r[0]), tuple(float(v) for v in r[1:])) for r in rows]
