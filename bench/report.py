"""The report: report.json (everything), report.md (tables, ratios, targets) and chart.png.

Targets are those of performance.md §4. They are stated for scale 1000 x 1 day; at other scales the
"target" column still compares against the same numbers, and the header says which scale was run.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path

from bench.harness import SystemResult
from bench.queries import QUERY_TYPES

INGEST_LABELS = {
    "replay": "pre-encoded OP_MSG replay",
    "pymongo": "pymongo insert_many",
    "line-protocol": "line protocol over HTTP",
    "bulk": "in-process bulk append",
    "append": "raw LMDB append",
}


def write(results_dir: Path, meta: dict, systems: list[SystemResult]) -> dict[str, Path]:
    results_dir.mkdir(parents=True, exist_ok=True)
    data = {"meta": meta, "systems": [dataclasses.asdict(s) for s in systems], "targets": targets(systems)}
    paths = {
        "json": results_dir / "report.json",
        "md": results_dir / "report.md",
        "chart": results_dir / "chart.png",
    }
    paths["json"].write_text(json.dumps(data, indent=1, default=str))
    chart_ok = chart(paths["chart"], systems)
    paths["md"].write_text(markdown(meta, systems, data["targets"], "chart.png" if chart_ok else None))
    return paths


# -- figures ---------------------------------------------------------------------------------------------------


def _by_name(systems: list[SystemResult]) -> dict[str, SystemResult]:
    return {s.name: s for s in systems}


def _rate(s: SystemResult | None, method: str) -> float | None:
    st = s.ingest.get(method) if s else None
    return st["rows_per_s"] if st and not st.get("error") else None


def _median(s: SystemResult | None, query: str) -> float | None:
    q = s.queries.get(query) if s else None
    return q["median_ms"] if q else None


def _cpu(s: SystemResult | None, query: str) -> float | None:
    q = s.queries.get(query) if s else None
    return q.get("cpu_median_ms") if q else None


def targets(systems: list[SystemResult]) -> list[dict]:
    """performance.md §4, evaluated on this run: [{metric, target, value, met}] (met None = not measured)."""
    by = _by_name(systems)
    tm, influx, duck, nd = by.get("tidemark"), by.get("influxdb"), by.get("duckdb"), by.get("null-decode")
    rows: list[dict] = []

    def add(metric: str, target: str, value: float | None, fmt: str, ok) -> None:
        rows.append(
            {
                "metric": metric,
                "target": target,
                "value": None if value is None else fmt.format(value),
                "met": None if value is None else bool(ok(value)),
            }
        )

    replay = _rate(tm, "replay")
    add(
        "durable ingest, pre-encoded replay (rows/s per server core)",
        ">= 150,000",
        replay,
        "{:,.0f}",
        lambda v: v >= 150_000,
    )
    cpu_rate = tm.ingest.get("replay", {}).get("rows_per_cpu_s") if tm else None
    add(
        "... the same, per second of server CPU (what one saturated core gives)",
        ">= 150,000",
        cpu_rate,
        "{:,.0f}",
        lambda v: v >= 150_000,
    )
    influx_rate = _rate(influx, "line-protocol")
    ratio = replay / influx_rate if replay and influx_rate else None
    add("... vs InfluxDB 1.x measured side by side", ">= 1.5x", ratio, "{:.2f}x", lambda v: v >= 1.5)
    pm, nd_pm = _rate(tm, "pymongo"), _rate(nd, "pymongo")
    add(
        "pymongo client: null-decode rate / Tidemark rate",
        "<= 1.2x",
        nd_pm / pm if pm and nd_pm else None,
        "{:.2f}x",
        lambda v: v <= 1.2,
    )
    tenth = tm.ingest.get("replay", {}).get("last_vs_first") if tm else None
    add("ingest rate, last tenth / first tenth", ">= 0.9", tenth, "{:.2f}", lambda v: v >= 0.9)
    bpr = tm.storage["bytes_per_row"] if tm and tm.storage else None
    add("bytes on disk per row (first target)", "<= 20 B", bpr, "{:.1f} B", lambda v: v <= 20)
    influx_bpr = influx.storage["bytes_per_row"] if influx and influx.storage else None
    add(
        "bytes on disk per row (then: below InfluxDB)",
        f"<= 8 B and < InfluxDB ({influx_bpr or 8.6:.1f} B)",
        bpr,
        "{:.1f} B",
        lambda v: v <= 8 and v < (influx_bpr or 8.6),
    )
    for query, limit in (
        ("single-groupby-1-1-1", 10),
        ("high-cpu-1", 50),
        ("double-groupby-1", 1000),
        ("lastpoint", 100),
        ("groupby-orderby-limit", 1000),
    ):
        add(
            f"{query} median",
            f"<= {limit:,} ms",
            _median(tm, query),
            "{:.1f} ms",
            lambda v, lim=limit: v <= lim,
        )
    tm_dg, duck_dg = _median(tm, "double-groupby-1"), _median(duck, "double-groupby-1")
    add(
        "double-groupby-1 vs DuckDB",
        "<= 5x",
        tm_dg / duck_dg if tm_dg and duck_dg else None,
        "{:.1f}x",
        lambda v: v <= 5,
    )
    slower = [
        q
        for q in QUERY_TYPES
        if _median(tm, q) and _median(influx, q) and _median(tm, q) > _median(influx, q)
    ]
    compared = [q for q in QUERY_TYPES if _median(tm, q) and _median(influx, q)]
    add(
        "queries no slower than InfluxDB (count)",
        f"all {len(compared)}",
        (len(compared) - len(slower)) if compared else None,
        "{:.0f} of " + str(len(compared)),
        lambda v: v == len(compared),
    )
    held = tm.checks.get("connections") if tm else None
    rows.append(
        {
            "metric": f"{held['connections'] if held else 500} concurrent client connections",
            "target": "held, no errors",
            "value": f"{held['ok']} of {held['connections']} answered" if held else None,
            "met": (held["ok"] == held["connections"] and not held["errors"]) if held else None,
        }
    )
    return rows


# -- markdown ----------------------------------------------------------------------------------------------


def _f(v, fmt="{:,.0f}") -> str:
    return "—" if v is None else fmt.format(v)


def _query_rows(queried: list[SystemResult], cell: Callable[[dict], str | None]) -> list[str]:
    """One table row per query type some system answered: ``cell(stats)`` for a measured query, else
    why it is missing."""
    rows = []
    for q in QUERY_TYPES:
        cells = []
        for s in queried:
            st = s.queries.get(q)
            text = cell(st) if st else None
            cells.append(text if text is not None else _missing(s, q))
        if any(c != "—" for c in cells):
            rows.append(f"| {q} | " + " | ".join(cells) + " |")
    return rows


def _wall_cell(st: dict) -> str:
    runs = f" [{st['runs']} runs]" if st["runs"] < st.get("planned", st["runs"]) else ""
    return f"{st['median_ms']:.1f} ({st['mean_ms']:.1f} / {st['p95_ms']:.1f}){runs}"


def _cpu_cell(st: dict) -> str | None:
    if "cpu_median_ms" not in st:
        return None
    return f"{st['cpu_median_ms']:.2f} ({st['cpu_min_ms']:.2f}–{st['cpu_max_ms']:.2f})"


def _missing(s: SystemResult, query: str) -> str:
    return "n/a" if query in s.not_expressible else "—"


def _settle(st: dict) -> str:
    """How long the server kept working after the load, and the CPU it spent (see harness.settle)."""
    if st.get("settle_s") is None:
        return "—"
    return f"{st['settle_s']:.1f} ({_f(st.get('settle_cpu_s'), '{:.1f}')})"


def markdown(meta: dict, systems: list[SystemResult], target_rows: list[dict], chart_name: str | None) -> str:
    by = _by_name(systems)
    out = [
        "# Tidemark benchmark: TSBS devops cpu-only",
        "",
        f"Run {meta['started']} · scale {meta['scale']} × {meta['duration']} = {meta['rows']:,} rows "
        f"({meta['rows'] * 10:,} metrics) · seed {meta['seed']} · {meta['workers']} loader connections/threads "
        f"({meta.get('loader', 'ordered')} batches) · "
        f"{meta['runs']} timed runs per query · server/loader pinned to separate cores: {meta['pinned']} · "
        f"{meta['machine']}" + (" · Tidemark with access control on (--tidemark-auth)" if meta.get("tidemark_auth") else ""),
        "",
        "Targets (performance.md §4) are stated for scale 1000 × 1 day.",
        "",
        "## Ingest",
        "",
        "| system | method | rows/s | metrics/s | first tenth rows/s | last tenth rows/s | last/first | server CPU s "
        "| rows per server CPU-s | settle s (CPU s) | rows per server CPU-s incl. settle "
        "| server CPU ms / 1,000 rows incl. settle | status |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for s in systems:
        for method, st in s.ingest.items():
            status = st.get("error") or "ok"
            out.append(
                f"| {s.name} | {INGEST_LABELS.get(method, method)} | {_f(st['rows_per_s'])} | {_f(st['metrics_per_s'])} "
                f"| {_f(st.get('first_tenth_rows_per_s'))} | {_f(st.get('last_tenth_rows_per_s'))} "
                f"| {_f(st.get('last_vs_first'), '{:.2f}')} | {_f(st.get('server_cpu_s'), '{:.1f}')} "
                f"| {_f(st.get('rows_per_cpu_s'))} | {_settle(st)} | {_f(st.get('rows_per_cpu_s_settled'))} "
                f"| {_f(st.get('cpu_ms_per_1000_rows'), '{:.2f}')} | {status} |"
            )
    out += ["", "## Storage", "", "| system | bytes on disk | bytes/row | note |", "|---|---:|---:|---|"]
    for s in systems:
        if s.storage:
            st = s.storage
            out.append(f"| {s.name} | {st['bytes']:,} | {st['bytes_per_row']:.1f} | {st['note']} |")
    queried = [s for s in systems if s.queries or s.not_expressible]
    if queried:
        out += [
            "",
            "## Queries",
            "",
            "Median ms (mean / p95) over the timed runs; every result was first checked against the naive "
            "computation. [n runs]: a slow system reached its query budget and was timed on fewer instances.",
            "",
            "| query | " + " | ".join(s.name for s in queried) + " |",
            "|---|" + "---:|" * len(queried),
        ]
        out += _query_rows(queried, _wall_cell)
        out += [
            "",
            "### Server CPU per query",
            "",
            "Median ms of server CPU per timed instance (min–max), all the server's threads "
            "(/proc/<pid>/task/*/schedstat): the figure a shared machine distorts least. DuckDB runs "
            "in-process, so its figure includes the client's share.",
            "",
            "| query | " + " | ".join(s.name for s in queried) + " |",
            "|---|" + "---:|" * len(queried),
        ]
        out += _query_rows(queried, _cpu_cell)
        na = [(s.name, q, why) for s in queried for q, why in s.not_expressible.items()]
        if na:
            out += [""] + [f"- n/a, {name} {q}: {why}" for name, q, why in na]
    out += ["", "## Ratios", ""] + _ratios(by)
    out += ["", "## Targets (Tidemark)", "", "| metric | target | measured | met |", "|---|---|---:|---|"]
    for t in target_rows:
        met = "not measured" if t["met"] is None else ("**met**" if t["met"] else "missed")
        out.append(f"| {t['metric']} | {t['target']} | {t['value'] or '—'} | {met} |")
    problems = [(s.name, e) for s in systems for e in s.errors]
    if problems:
        out += ["", "## Errors", ""] + [f"- **{n}**: {e}" for n, e in problems]
    notes = [(s.name, n) for s in systems for n in s.notes]
    out += ["", "## Systems", ""] + [f"- **{s.name}**: {s.description}" for s in systems]
    out += [f"- {n}: {t}" for n, t in notes]
    if chart_name:
        out += ["", f"![ingest rate over the load and query latencies]({chart_name})"]
    return "\n".join(out) + "\n"


def _ratios(by: dict[str, SystemResult]) -> list[str]:
    tm = by.get("tidemark")
    lines = []
    replay = _rate(tm, "replay")
    for peer, method, label in (
        ("influxdb", "line-protocol", "InfluxDB (line protocol)"),
        ("victoria", "line-protocol", "VictoriaMetrics (line protocol)"),
        ("clickhouse", "tsv-http", "ClickHouse (TabSeparated over HTTP)"),
        ("null", "replay", "null server, count only"),
        ("null-decode", "replay", "null server, decoding"),
        ("lmdb-append", "append", "raw LMDB appends"),
        ("tidemark-regular", "replay", "Tidemark regular collection"),
    ):
        other = _rate(by.get(peer), method)
        if replay and other:
            lines.append(f"- ingest, Tidemark replay vs {label}: {replay / other:.2f}x")
    pm, nd_pm = _rate(tm, "pymongo"), _rate(by.get("null-decode"), "pymongo")
    if pm and nd_pm:
        lines.append(
            f"- ingest with pymongo, Tidemark vs null-decode under the same client: {pm / nd_pm:.2f}x"
        )
    bpr = tm.storage["bytes_per_row"] if tm and tm.storage else None
    for peer in ("influxdb", "victoria", "clickhouse", "duckdb", "tidemark-regular"):
        p = by.get(peer)
        if bpr and p and p.storage:
            lines.append(f"- bytes/row, Tidemark vs {peer}: {bpr / p.storage['bytes_per_row']:.2f}x")
    for peer in ("duckdb", "influxdb", "victoria", "clickhouse", "tidemark-regular"):
        p = by.get(peer)
        parts = []
        for q in QUERY_TYPES:
            a, b = _median(tm, q), _median(p, q)
            if a and b:
                parts.append(f"{q} {a / b:.2f}x")
        if parts:
            lines.append(f"- query median, Tidemark vs {peer} (lower is better): " + ", ".join(parts))
        parts = []
        for q in QUERY_TYPES:
            a, b = _cpu(tm, q), _cpu(p, q)
            if a and b:
                parts.append(f"{q} {a / b:.2f}x")
        if parts:
            lines.append(f"- query server CPU, Tidemark vs {peer} (lower is better): " + ", ".join(parts))
    if not lines:
        lines.append("- no Tidemark figures in this run, so no ratios")
    return lines


# -- chart -----------------------------------------------------------------------------------------------------


def chart(path: Path, systems: list[SystemResult]) -> bool:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(15, 6))
    for s in systems:
        for method, st in s.ingest.items():
            curve = st.get("curve")
            if curve and not st.get("error"):
                xs = [c[0] / max(st["rows"], 1) * 100 for c in curve]
                left.plot(
                    xs,
                    [c[1] for c in curve],
                    marker=".",
                    label=f"{s.name} ({INGEST_LABELS.get(method, method)})",
                )
    left.set_title("Ingest rate over the load")
    left.set_xlabel("load progress (% of rows)")
    left.set_ylabel("rows/s")
    left.set_yscale("log")
    left.grid(True, which="both", alpha=0.3)
    if left.get_legend_handles_labels()[0]:
        left.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2)

    queried = [s for s in systems if s.queries]
    queries = [q for q in QUERY_TYPES if any(q in s.queries for s in queried)]
    width = 0.8 / max(len(queried), 1)
    for i, s in enumerate(queried):
        xs = [j + i * width for j in range(len(queries))]
        ys = [s.queries[q]["median_ms"] if q in s.queries else 0 for q in queries]
        right.bar(xs, ys, width, label=s.name)
    right.set_title("Query latency (median)")
    right.set_ylabel("ms (log)")
    right.set_yscale("log")
    right.set_xticks([j + width * (len(queried) - 1) / 2 for j in range(len(queries))])
    right.set_xticklabels(queries, rotation=30, ha="right", fontsize=8)
    right.grid(True, axis="y", which="both", alpha=0.3)
    if queried:
        right.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True
