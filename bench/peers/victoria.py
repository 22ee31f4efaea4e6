"""VictoriaMetrics (the Debian ``victoria-metrics`` package): InfluxDB line protocol in, MetricsQL out.

``victoria-metrics`` runs on a free loopback port with its storage under the run's work dir, a 100-year
retention (the rows are from 2016; the default retention of one month would drop them) and its rollup
result cache off (``-search.disableCache`` plus ``nocache=1`` on every query: the timed runs repeat the
check runs' queries, and a cache hit would time the cache). If the binary is missing it is installed with
apt-get; if that fails the peer is skipped with the reason.

Ingest: the very lines the InfluxDB peer sends (``influx.build_line_cache``, 1000 per write) to
VictoriaMetrics' InfluxDB-compatible ``/write`` over ``ctx.workers`` connections. VictoriaMetrics stores
each field as its own series, ``cpu_<field>`` with the row's tags (plus ``db="benchmark"`` from the
``?db=`` argument). After the load the server is flushed (``/internal/force_flush``, so the rows are
searchable) and left to settle like Tidemark (the background merges count in its ingest cost). After the
queries every partition is force-merged (``/internal/force_merge``, waited for through ``/metrics``; the
InfluxDB figure is likewise taken after a full compaction) and bytes on disk are measured under
``-storageDataPath`` after a clean SIGTERM shutdown, less the ``cache/`` it saves then (look-up caches
rebuilt from its index when missing; the note gives their size).

Queries (``plan``): MetricsQL over ``/api/v1/query_range`` and ``/api/v1/query``. A rollup
``f_over_time(m[w])`` evaluated at time t covers the samples in (t - w, t]; the other systems group rows
of [start, end) by ``$dateTrunc`` unit. Aligned so the results are the same rows:

- a grouped query over [start, end) by unit U is one ``query_range`` evaluated at t = b + U - 1 ms for every
  whole bucket b inside the window (window [U]: exactly [b, b + U)), plus one instant query per partial
  bucket at either edge: at t = min(ceil_U(start), end) - 1 with window t - start + 1 ms (the rows of
  [start, ceil_U(start))), and at t = end - 1 with window end - floor_U(end) ms (the rows of
  [floor_U(end), end)). A result point at time t belongs to bucket floor_U(t). Every request counts in the
  query's time and CPU (one to three per instance).
- several metrics in one request: ``union(label_set(expr_m, "m", "<field>"), ...)``.
- high-cpu-1: ``query_range`` with step = the 10 s row interval evaluated on the row times inside the
  window, ``field if cpu_usage_user > 90`` for each field: a raw selector at a row's time returns that
  row's sample, so the points are the matching rows. It relies on the rows lying on the 10 s grid (true of
  TSBS data); MetricsQL has no row filter independent of evaluation times.
- lastpoint: an instant query at end - 1 ms over the whole data span: ``last_over_time`` of every field
  and ``tlast_over_time(cpu_usage_user)`` for the row's time (every row carries all ten fields, so the
  fields' last samples are the last row's).
- groupby-orderby-limit: n/a — MetricsQL cannot order time buckets and keep the newest five; a
  ``query_range`` over the last five minutes before ``end`` would assume every minute has rows, a
  different query.
"""

from __future__ import annotations

import http.client
import json
import subprocess
import time
import urllib.parse
from dataclasses import dataclass

from bench.generator import FIELDS, INTERVAL_MS, START_MS
from bench.harness import (
    Context,
    NotExpressible,
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
from bench.peers.influx import build_line_cache, load_lines
from bench.queries import QUERY_TYPES, UNIT_MS, Params, ResultMismatch

METRIC_PREFIX = "cpu_"  # measurement + VictoriaMetrics' default -influxMeasurementFieldSeparator "_"
TIME_LABEL = "__time__"  # the ``m`` label of lastpoint's tlast_over_time series
GROUPBY_ORDERBY_LIMIT_NA = (
    "MetricsQL cannot order time buckets and keep the newest five (a query_range over the last five "
    "minutes would assume every minute has rows: a different query)"
)


def ensure_victoria() -> str:
    return ensure_debian_binary("victoria-metrics", "victoria-metrics")


def victoria_version(binary: str) -> str:
    out = subprocess.run([binary, "-version"], capture_output=True, text=True, check=False).stdout.strip()
    if out:  # an upstream build: "victoria-metrics-20220802-...-v1.79.5"
        return f"VictoriaMetrics {out.rsplit('-', 1)[-1]}"
    # the Debian build prints nothing: ask the package
    package = debian_package_version("victoria-metrics")
    return f"VictoriaMetrics {package}" if package else "VictoriaMetrics"


def run(ctx: Context) -> SystemResult:
    result = SystemResult("victoria", "VictoriaMetrics, InfluxDB line protocol over HTTP, MetricsQL queries")
    try:
        binary = ensure_victoria()
    except Unavailable as exc:
        result.errors.append(f"skipped: {exc}")
        return result
    result.description = f"{victoria_version(binary)}, InfluxDB line protocol over HTTP, MetricsQL queries"
    lines_path, offsets = build_line_cache(ctx.dataset, ctx.frames_path.parent)
    home = ctx.workdir / "victoria"
    storage = home / "data"
    storage.mkdir(parents=True, exist_ok=True)
    port = free_port()
    cmd = ctx.server_prefix() + [
        binary,
        f"-storageDataPath={storage}",
        f"-httpListenAddr=127.0.0.1:{port}",
        "-retentionPeriod=100y",
        "-search.disableCache",
        "-loggerLevel=ERROR",
    ]
    proc = start_process(cmd, home / "victoria-metrics.log")
    loaded = merged = False
    try:
        wait_port(port, proc, what="victoria-metrics")
        client = Client(port)
        loaded_result = load_lines(ctx, port, lines_path, offsets, proc.pid, "victoria")
        if not loaded_result.get("error"):
            client.get("/internal/force_flush")  # make the rows searchable before anything is checked
            loaded_result.update(settle(proc.pid))
        stats = ingest_stats(loaded_result, ctx.dataset.rows, ctx.pin)
        result.ingest["line-protocol"] = stats
        if stats["error"]:
            result.errors.append(f"load: {stats['error']}")
        else:
            loaded = True
            check_and_time(ctx, "victoria", lambda q, p: client.run(plan(q, p, ctx.dataset.end_ms)),
                           normalize, result, proc.pid)  # fmt: skip
        if loaded:
            merged = _force_merge(client)
    except ResultMismatch:
        stop_process(proc)
        raise
    except Exception as exc:
        result.errors.append(f"{type(exc).__name__}: {exc}")
    clean = stop_process(proc)
    if loaded:
        # the caches it saves at shutdown (-cacheDataPath, by default <storage>/cache: name -> series id
        # look-ups, rebuilt from indexdb when missing) are not the data; counted apart
        cache = disk_bytes(storage / "cache")
        size = disk_bytes(storage) - cache
        note = "after a forced merge" if merged else "the forced merge did not finish in time"
        note += " and a clean shutdown" if clean else "; victoria-metrics had to be killed"
        note += f"; without the {cache / ctx.dataset.rows:.1f} B/row of caches saved at shutdown (cache/)"
        result.storage = {"bytes": size, "bytes_per_row": size / ctx.dataset.rows, "note": note}
    return result


def _force_merge(client: Client, timeout_s: float = 300.0) -> bool:
    """Merge every partition's parts into as few as possible and wait for it (the background merges of a
    live server get there eventually; InfluxDB's figure is likewise taken after a full compaction)."""
    client.get("/internal/force_merge?partition_prefix=")  # empty prefix: every partition; runs async
    deadline = time.monotonic() + timeout_s
    time.sleep(0.5)
    while time.monotonic() < deadline:
        metrics = client.get("/metrics").decode()
        if "\nvm_active_force_merges 0\n" in metrics:
            return True
        time.sleep(0.5)
    return False


# -- queries -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Request:
    """One MetricsQL request: ``query_range`` (start, end, step) or an instant ``query`` (at ``end``)."""

    expr: str
    start_ms: int | None  # None: an instant query
    end_ms: int
    step_ms: int = 0

    def path(self) -> str:
        args = {"query": self.expr, "nocache": "1"}
        if self.start_ms is None:
            return "/api/v1/query?" + urllib.parse.urlencode({**args, "time": _seconds(self.end_ms)})
        args.update(start=_seconds(self.start_ms), end=_seconds(self.end_ms), step=f"{self.step_ms}ms")
        return "/api/v1/query_range?" + urllib.parse.urlencode(args)


def _seconds(ms: int) -> str:
    return f"{ms // 1000}.{ms % 1000:03d}"


def window(ms: int) -> str:
    """A lookbehind window of ``ms`` milliseconds as VictoriaMetrics reads it exactly. It parses a
    duration ``<x>ms`` as the float64 ``x * 1e-3 * 1e3`` cut to whole milliseconds, which lands one
    short for ~0.35 % of values (513684ms is read as 513,683: the row at the window's first
    millisecond was left out, a wrong double-groupby-1 result with ``--runs 30``); ``<x>.5ms`` is read
    as ``x`` for every ``x`` (the float error is far below half a millisecond)."""
    return f"[{ms}.5ms]"


def _hosts(p: Params) -> str:
    return '{hostname=~"' + "|".join(p.hosts) + '"}' if p.hosts else ""


def _union(parts: dict[str, str]) -> str:
    """One request for several metrics: each series labelled ``m`` = its field (or TIME_LABEL)."""
    return "union(" + ", ".join(f'label_set({e}, "m", "{m}")' for m, e in parts.items()) + ")"


def _rollup(query: str, p: Params, window_ms: int) -> str:
    q = QUERY_TYPES[query]
    sel, w = _hosts(p), window(window_ms)
    if query.startswith("single-groupby") or query == "cpu-max-all-8":
        return _union({m: f"max(max_over_time({METRIC_PREFIX}{m}{sel}{w}))" for m in q.metrics})
    if query.startswith("double-groupby"):
        return _union({m: f"avg_over_time({METRIC_PREFIX}{m}{w})" for m in q.metrics})
    raise KeyError(query)


def plan(query: str, p: Params, data_end_ms: int) -> list[Request]:
    """The MetricsQL requests answering one query instance (aligned as the module docstring says)."""
    q = QUERY_TYPES[query]
    if query == "groupby-orderby-limit":
        raise NotExpressible(GROUPBY_ORDERBY_LIMIT_NA)
    if query == "lastpoint":
        t = data_end_ms - 1
        w = window(t - START_MS + 1)
        parts = {m: f"last_over_time({METRIC_PREFIX}{m}{w})" for m in FIELDS}
        parts[TIME_LABEL] = f"tlast_over_time({METRIC_PREFIX}usage_user{w})"
        return [Request(_union(parts), None, t)]
    if query == "high-cpu-1":
        sel = _hosts(p)
        cond = f"({METRIC_PREFIX}usage_user{sel} > 90)"
        expr = _union({m: f"{METRIC_PREFIX}{m}{sel} if {cond}" for m in FIELDS})
        first = -(-(p.start_ms - START_MS) // INTERVAL_MS) * INTERVAL_MS + START_MS  # first row time >= start
        last = p.end_ms - 1 - (p.end_ms - 1 - START_MS) % INTERVAL_MS  # last row time < end
        return [Request(expr, first, last, INTERVAL_MS)] if first <= last else []
    unit = UNIT_MS[q.unit]
    lo, hi = p.start_ms, p.end_ms
    whole_lo = -(-lo // unit) * unit  # ceil to the unit
    whole_hi = hi - hi % unit  # floor to the unit
    requests = []
    if lo < min(whole_lo, hi):
        t = min(whole_lo, hi) - 1
        requests.append(Request(_rollup(query, p, t - lo + 1), None, t))
    if whole_lo < whole_hi:
        requests.append(Request(_rollup(query, p, unit), whole_lo + unit - 1, whole_hi - 1, unit))
    if whole_lo <= whole_hi < hi:
        requests.append(Request(_rollup(query, p, hi - whole_hi), None, hi - 1))
    return requests


class Client:
    def __init__(self, port: int):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)

    def get(self, path: str) -> bytes:
        self.conn.request("GET", path)
        resp = self.conn.getresponse()
        body = resp.read()
        if resp.status not in (200, 204):
            raise RuntimeError(f"victoria-metrics {path[:200]}: HTTP {resp.status}: {body[:300]!r}")
        return body

    def run(self, requests: list[Request]) -> list[dict]:
        """Every request's ``data.result`` series, as one list."""
        out = []
        for r in requests:
            body = json.loads(self.get(r.path()))
            if body.get("status") != "success":
                raise RuntimeError(f"MetricsQL error for {r.expr!r}: {body}")
            out.extend(body["data"]["result"])
        return out


def _points(series: dict) -> list[tuple[int, float]]:
    """(ms, value) of a range ("values") or instant ("value") series."""
    pairs = series["values"] if "values" in series else [series["value"]]
    return [(round(float(t) * 1000), float(v)) for t, v in pairs]


def normalize(query: str, series: list[dict]) -> list[tuple]:
    """The normalized form of bench.queries from the series of ``plan``'s requests."""
    q = QUERY_TYPES[query]
    if query == "lastpoint":
        by_host: dict[str, dict[str, float]] = {}
        for s in series:
            (_, v), = _points(s)
            by_host.setdefault(s["metric"]["hostname"], {})[s["metric"]["m"]] = v
        return sorted(
            (h, round(f[TIME_LABEL] * 1000), tuple(f[m] for m in FIELDS)) for h, f in by_host.items()
        )
    if query == "high-cpu-1":
        rows: dict[tuple[int, str], dict[str, float]] = {}
        for s in series:
            for t, v in _points(s):
                rows.setdefault((t, s["metric"]["hostname"]), {})[s["metric"]["m"]] = v
        return sorted((t, h, tuple(f[m] for m in FIELDS)) for (t, h), f in rows.items())
    unit = UNIT_MS[q.unit]
    grouped: dict[tuple, dict[str, float]] = {}
    per_host = query.startswith("double-groupby")
    for s in series:
        for t, v in _points(s):
            key = (t - t % unit, s["metric"]["hostname"]) if per_host else (t - t % unit,)
            grouped.setdefault(key, {})[s["metric"]["m"]] = v
    return [(*key, tuple(f.get(m) for m in q.metrics)) for key, f in sorted(grouped.items())]
