"""The VictoriaMetrics peer without the server (MetricsQL plans, normalization, the shared line protocol),
the report's per-query CPU and n/a cells, and one tiny run against the real server when it is installed."""

from __future__ import annotations

import os
import shutil

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_bench_pipeline import run_bench

from bench.generator import FIELDS, INTERVAL_MS, START_MS, generate
from bench.harness import Context, NotExpressible, SystemResult, check_and_time
from bench.peers.influx import build_line_cache
from bench.peers.victoria import TIME_LABEL, normalize, plan, window
from bench.queries import QUERY_TYPES, UNIT_MS, Params
from bench.report import markdown

GROUPED = [q for q in QUERY_TYPES if q.startswith(("single-groupby", "double-groupby")) or q == "cpu-max-all-8"]
DAY_MS = 86_400_000


def as_victoria_reads(duration: str) -> int:
    """The milliseconds VictoriaMetrics makes of a duration ``<x>ms`` (metricsql: the float64
    ``x * 1e-3 * 1e3`` cut to an integer; Python floats are the same IEEE doubles)."""
    assert duration.endswith("ms")
    return int(float(duration[:-2]) * 1e-3 * 1e3)


def covered(requests) -> list[tuple[int, int]]:
    """The [first, last] ms each evaluation point of the requests covers as VictoriaMetrics reads
    them: (t - window, t]."""
    out = []
    for r in requests:
        ms = as_victoria_reads(r.expr.split("[", 1)[1].split("]", 1)[0])
        times = [r.end_ms] if r.start_ms is None else range(r.start_ms, r.end_ms + 1, r.step_ms)
        out += [(t - ms + 1, t) for t in times]
    return out


def test_a_window_is_read_as_its_milliseconds_where_the_plain_form_was_read_one_short():
    """A double-groupby-1 instance ([07:08:33.684, 19:08:33.684), seed 123, ``--runs 30``) came back
    wrong: the last partial hour's window, ``[513684ms]``, was read as 513,683 ms (checked against the
    real server: ``tfirst_over_time`` skipped the row at 19:00:00), so the hour's first row was left out."""
    assert as_victoria_reads("513684ms") == 513_683  # the defect, as VictoriaMetrics computes it
    short = [ms for ms in range(1, 13 * 3_600_000, 7) if as_victoria_reads(f"{ms}ms") != ms]
    assert len(short) > 1000
    assert all(as_victoria_reads(window(ms)[1:-1]) == ms for ms in short)
    assert all(as_victoria_reads(window(ms)[1:-1]) == ms for ms in range(1, 100_000))
    assert as_victoria_reads(window(DAY_MS)[1:-1]) == DAY_MS


@given(
    query=st.sampled_from(GROUPED),
    start=st.integers(START_MS, START_MS + DAY_MS),
    length=st.integers(1, 13 * 3_600_000),
)
def test_grouped_plans_cover_the_window_exactly_once_and_each_point_one_bucket(query, start, length):
    unit = UNIT_MS[QUERY_TYPES[query].unit]
    spans = sorted(covered(plan(query, Params(start, start + length, ("host_1",)), START_MS + DAY_MS)))
    assert spans[0][0] == start and spans[-1][1] == start + length - 1
    for (_, hi), (lo, _) in zip(spans, spans[1:], strict=False):
        assert lo == hi + 1  # no gap, no overlap
    for lo, hi in spans:
        assert lo // unit == hi // unit  # one $dateTrunc bucket per point


def test_an_aligned_window_is_one_range_query_and_an_unaligned_one_adds_its_partial_edges():
    hour = 3_600_000
    (whole,) = plan("single-groupby-1-1-1", Params(START_MS, START_MS + hour, ("host_0",)), START_MS + hour)
    assert (whole.start_ms, whole.end_ms, whole.step_ms) == (START_MS + 59_999, START_MS + hour - 1, 60_000)
    assert 'max(max_over_time(cpu_usage_user{hostname=~"host_0"}[60000.5ms]))' in whole.expr
    first, middle, last = plan("single-groupby-1-1-1", Params(START_MS + 25_000, START_MS + hour + 25_000, ("h",)), 0)
    assert (first.start_ms, first.end_ms) == (None, START_MS + 59_999) and "[35000.5ms]" in first.expr
    assert (middle.start_ms, middle.end_ms) == (START_MS + 119_999, START_MS + hour - 1)
    assert (last.start_ms, last.end_ms) == (None, START_MS + hour + 24_999) and "[25000.5ms]" in last.expr


def test_double_groupby_keeps_one_series_per_host_and_labels_each_field():
    (r,) = plan("double-groupby-all", Params(START_MS, START_MS + 3_600_000, ()), 0)
    assert r.expr.startswith("union(") and r.expr.count("avg_over_time(") == len(FIELDS)
    assert 'label_set(avg_over_time(cpu_usage_idle[3600000.5ms]), "m", "usage_idle")' in r.expr
    assert "hostname" not in r.expr  # all hosts; the series keep their hostname label


def test_high_cpu_evaluates_on_the_row_times_inside_the_window():
    (r,) = plan("high-cpu-1", Params(START_MS + 1, START_MS + 60_000, ("host_3",)), 0)
    assert (r.start_ms, r.end_ms, r.step_ms) == (START_MS + INTERVAL_MS, START_MS + 50_000, INTERVAL_MS)
    assert 'cpu_usage_nice{hostname=~"host_3"} if (cpu_usage_user{hostname=~"host_3"} > 90)' in r.expr
    assert plan("high-cpu-1", Params(START_MS + 1, START_MS + 2, ("h",)), 0) == []  # no row time inside


def test_lastpoint_is_one_instant_query_over_all_the_data_and_orderby_limit_is_not_expressible():
    (r,) = plan("lastpoint", Params(START_MS, START_MS + DAY_MS, ()), START_MS + DAY_MS)
    assert r.start_ms is None and r.end_ms == START_MS + DAY_MS - 1 and f"[{DAY_MS}.5ms]" in r.expr
    assert "tlast_over_time(cpu_usage_user" in r.expr and r.expr.count("last_over_time(") == len(FIELDS) + 1
    with pytest.raises(NotExpressible, match="newest five"):
        plan("groupby-orderby-limit", Params(START_MS, START_MS + DAY_MS, ()), START_MS + DAY_MS)


def test_request_paths_carry_millisecond_times_and_bypass_the_cache():
    (r,) = plan("lastpoint", Params(START_MS, START_MS + 10_000, ()), START_MS + 10_000)
    path = r.path()
    assert path.startswith("/api/v1/query?") and "nocache=1" in path and "time=1451606409.999" in path


def series(metric: dict, points) -> dict:
    return {"metric": metric, "values": [[t / 1000, str(v)] for t, v in points]}


def test_normalize_puts_each_point_in_the_bucket_its_window_covers():
    minute = 60_000
    got = normalize(
        "single-groupby-5-8-1",
        [series({"m": m}, [(START_MS + minute - 1, i), (START_MS + 2 * minute - 1, 10 + i)])
         for i, m in enumerate(FIELDS[:5])]
        + [{"metric": {"m": "usage_user"}, "value": [(START_MS + 2 * minute + 4_999) / 1000, "7"]}],
    )  # fmt: skip
    assert got == [
        (START_MS, (0.0, 1.0, 2.0, 3.0, 4.0)),
        (START_MS + minute, (10.0, 11.0, 12.0, 13.0, 14.0)),
        (START_MS + 2 * minute, (7.0, None, None, None, None)),  # a partial edge answered for one field only
    ]
    hosts = normalize("double-groupby-1", [series({"m": "usage_user", "hostname": h}, [(START_MS + 3_599_999, v)])
                                           for h, v in (("host_1", 2), ("host_0", 1))])  # fmt: skip
    assert hosts == [(START_MS, "host_0", (1.0,)), (START_MS, "host_1", (2.0,))]


def test_normalize_lastpoint_takes_the_row_time_from_tlast_over_time():
    at = (START_MS + 99_999) / 1000
    answer = [{"metric": {"hostname": "host_0", "m": m}, "value": [at, str(i)]} for i, m in enumerate(FIELDS)]
    answer.append({"metric": {"hostname": "host_0", "m": TIME_LABEL}, "value": [at, "1451606490"]})
    assert normalize("lastpoint", answer) == [("host_0", START_MS + 90_000, tuple(float(i) for i in range(10)))]


def test_the_peer_sends_the_influx_peers_line_protocol(tmp_path):
    ds = generate(3, 3600, 1)
    path, offsets = build_line_cache(ds, tmp_path)
    lines = path.read_bytes().splitlines()
    assert len(lines) == ds.rows and offsets[-1] == path.stat().st_size
    first = lines[0].decode()
    assert first.startswith("cpu,") and "hostname=host_0" in first and first.endswith(f" {START_MS}")
    assert all(f"{f}=" in first for f in FIELDS)


def test_check_and_time_reports_not_expressible_types_and_server_cpu_per_query(tmp_path):
    ds = generate(2, 1800, 1)
    ctx = Context(ds, tmp_path / "f", tmp_path, ["lastpoint", "groupby-orderby-limit"], 2, 1, 1, False,
                  progress=False)  # fmt: skip

    def execute(query, p):
        if query == "groupby-orderby-limit":
            raise NotExpressible("no way")
        return ctx.checker.expected(query, p)

    result = SystemResult("fake", "")
    check_and_time(ctx, "fake", execute, lambda q, rows: rows, result, server_pid=os.getpid())
    assert result.not_expressible == {"groupby-orderby-limit": "no way"}
    assert set(result.queries) == {"lastpoint"}
    cpu = result.queries["lastpoint"]
    assert 0 <= cpu["cpu_min_ms"] <= cpu["cpu_median_ms"] <= cpu["cpu_max_ms"]
    meta = {"started": "now", "scale": 2, "duration": "30m", "rows": ds.rows, "seed": 1, "workers": 1,
            "runs": 2, "pinned": False, "machine": "test"}  # fmt: skip
    md = markdown(meta, [result], [], None)
    assert "### Server CPU per query" in md and "| groupby-orderby-limit | n/a |" in md
    assert "n/a, fake groupby-orderby-limit: no way" in md


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("victoria-metrics") is None, reason="a real VictoriaMetrics run needs the optional bench peer's Debian package victoria-metrics "
                    "(make bench installs it; the plans, normalization and report are tested above without it)")
def test_pipeline_against_victoria_metrics_checks_its_query_results(tmp_path):
    # 10 hosts x 6 h: the first high-cpu-1 instance (seed 123) matches 1,226 rows, so the filter is checked
    done, report = run_bench(tmp_path, "--strict", "--peers", "victoria", "--scale", "10", "--duration", "6h")
    assert done.returncode == 0, done.stderr[-3000:]
    (vm,) = report["systems"]
    assert vm["ingest"]["line-protocol"]["rows"] == 21_600 and vm["ingest"]["line-protocol"]["cpu_ms_per_1000_rows"]
    assert set(vm["queries"]) == set(QUERY_TYPES) - {"groupby-orderby-limit"}
    assert all("cpu_median_ms" in q for q in vm["queries"].values())
    assert list(vm["not_expressible"]) == ["groupby-orderby-limit"]
    assert vm["storage"]["bytes_per_row"] > 0


def test_the_peer_is_skipped_with_the_reason_when_the_package_cannot_be_installed(tmp_path, monkeypatch):
    import subprocess

    from bench import harness
    from bench.peers import victoria

    # the install is harness.ensure_debian_binary's, shared by the Debian peers
    monkeypatch.setattr(harness.shutil, "which", lambda name: None)
    monkeypatch.setattr(harness.subprocess, "run",
                        lambda cmd, **kw: subprocess.CompletedProcess(cmd, 100, "", "E: Unable to locate package"))  # fmt: skip
    ctx = Context(generate(2, 1800, 1), tmp_path / "f", tmp_path, [], 1, 1, 1, False, progress=False)
    result = victoria.run(ctx)
    assert result.errors == ["skipped: `apt-get update -qq` failed: E: Unable to locate package"]
    assert not result.ingest and not result.queries and result.storage is None
