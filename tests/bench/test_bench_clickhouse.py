"""The ClickHouse peer without the server (its SQL per query, the window in whole seconds, the TabSeparated
rows it loads, its config, result conversion), and one tiny run against the real server when installed."""

from __future__ import annotations

import shutil
import subprocess
import xml.etree.ElementTree as ET

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_bench_pipeline import run_bench

from bench import harness
from bench.generator import FIELDS, START_MS, TAG_NAMES, generate
from bench.harness import Context
from bench.peers import clickhouse
from bench.peers.clickhouse import (
    build_tsv_cache,
    create_table_sql,
    normalize,
    seconds_ceil,
    sql,
    write_config,
)
from bench.queries import QUERY_TYPES, Params

DAY_MS = 86_400_000
HOUR_MS = 3_600_000


@given(start=st.integers(START_MS, START_MS + DAY_MS), length=st.integers(0, DAY_MS),
       row=st.integers(0, 2 * DAY_MS // 1000))  # fmt: skip
def test_the_window_in_whole_seconds_selects_the_same_rows_as_the_window_in_ms(start, length, row):
    t_s = START_MS // 1000 + row  # a row time: a whole second
    end = start + length
    assert (seconds_ceil(start) <= t_s < seconds_ceil(end)) == (start <= t_s * 1000 < end)


def test_grouped_queries_truncate_to_the_unit_in_the_window_for_the_hosts():
    p = Params(START_MS + 1_500, START_MS + HOUR_MS + 1_500, ("host_1", "host_7"))
    assert sql("single-groupby-1-1-1", p) == (
        "SELECT toUInt32(toStartOfMinute(time)) AS t, max(usage_user) FROM benchmark.cpu "
        "WHERE hostname IN ('host_1', 'host_7') AND time >= toDateTime(1451606402) "
        "AND time < toDateTime(1451610002) GROUP BY t ORDER BY t FORMAT TabSeparated"
    )
    every = sql("cpu-max-all-8", p)
    assert "toStartOfHour(time)" in every and every.count("max(") == len(FIELDS)
    double = sql("double-groupby-all", Params(START_MS, START_MS + 12 * HOUR_MS, ()))
    assert "hostname IN" not in double and double.count("avg(") == len(FIELDS)
    assert "GROUP BY t, hostname ORDER BY t, hostname" in double


def test_high_cpu_lastpoint_and_groupby_orderby_limit():
    p = Params(START_MS, START_MS + 12 * HOUR_MS, ("host_3",))
    high = sql("high-cpu-1", p)
    assert high.startswith("SELECT toUInt32(time), hostname, " + ", ".join(FIELDS) + " FROM benchmark.cpu ")
    assert "usage_user > 90.0 AND hostname IN ('host_3')" in high
    last = sql("lastpoint", Params(START_MS, START_MS + DAY_MS, ()))
    assert "toUInt32(max(time))" in last and last.count("argMax(") == len(FIELDS) and "GROUP BY hostname" in last
    limit = sql("groupby-orderby-limit", Params(START_MS, START_MS + 5_001, ()))
    assert "WHERE time < toDateTime(1451606406) GROUP BY t ORDER BY t DESC LIMIT 5" in limit
    assert all(sql(q, p).endswith(" FORMAT TabSeparated") for q in QUERY_TYPES)  # every type expressible


def test_normalize_turns_the_tab_separated_answers_into_the_compared_form():
    s0 = START_MS // 1000
    assert normalize("single-groupby-5-8-1", f"{s0}\t1\t2\t3\t4\t5.5\n{s0 + 60}\t6\t7\t8\t9\t10\n".encode()) == [
        (START_MS, (1.0, 2.0, 3.0, 4.0, 5.5)), (START_MS + 60_000, (6.0, 7.0, 8.0, 9.0, 10.0))]
    assert normalize("double-groupby-1", f"{s0}\thost_1\t2.5\n{s0}\thost_0\t1\n".encode()) == [
        (START_MS, "host_0", (1.0,)), (START_MS, "host_1", (2.5,))]
    ten = "\t".join(str(i) for i in range(10))
    assert normalize("high-cpu-1", f"{s0 + 20}\thost_0\t{ten}\n{s0 + 10}\thost_0\t{ten}\n".encode()) == [
        (START_MS + 10_000, "host_0", tuple(float(i) for i in range(10))),
        (START_MS + 20_000, "host_0", tuple(float(i) for i in range(10)))]
    assert normalize("lastpoint", f"host_1\t{s0 + 90}\t{ten}\n".encode()) == [
        ("host_1", START_MS + 90_000, tuple(float(i) for i in range(10)))]
    newest_first = normalize("groupby-orderby-limit", f"{s0 + 60}\t3\n{s0}\t4\n".encode())
    assert newest_first == [(START_MS + 60_000, (3.0,)), (START_MS, (4.0,))]  # the server's order is kept
    assert normalize("lastpoint", b"") == []


def test_the_loaded_rows_are_tab_separated_in_the_tables_column_order(tmp_path):
    ds = generate(3, 3600, 1)
    path, offsets = build_tsv_cache(ds, tmp_path)
    lines = path.read_bytes().decode().splitlines()
    assert len(lines) == ds.rows and offsets[-1] == path.stat().st_size
    assert offsets.tolist() == sorted(set(offsets.tolist())) and len(offsets) == -(-ds.rows // 1000) + 1
    columns = [c.split()[0] for c in create_table_sql().split("(", 1)[1].split(") ENGINE")[0].split(", ")]
    assert columns == [*TAG_NAMES, "time", *FIELDS]
    first, later = lines[0].split("\t"), lines[3 * 7 + 2].split("\t")  # host 2 of tick 7
    assert first[:10] == [ds.tags[0][t] for t in TAG_NAMES] and first[10] == "2016-01-01 00:00:00"
    assert [float(v) for v in first[11:]] == ds.values[0, 0].tolist()
    assert later[0] == "host_2" and later[10] == "2016-01-01 00:01:10"
    assert [float(v) for v in later[11:]] == ds.values[7, 2].tolist()


def test_the_config_keeps_everything_under_the_work_dir_on_loopback(tmp_path):
    config = ET.parse(write_config(tmp_path, 18123)).getroot()
    assert config.findtext("http_port") == "18123" and config.findtext("listen_host") == "127.0.0.1"
    assert config.findtext("timezone") == "UTC"
    for tag in ("path", "tmp_path", "user_files_path", "users_config", "logger/log", "logger/errorlog"):
        assert config.findtext(tag).startswith(str(tmp_path)), tag
    assert config.find("query_log") is None and config.find("graphite") is None
    users = ET.parse(config.findtext("users_config")).getroot()
    assert users.findtext("profiles/default/max_threads") == "1"  # see the module docstring: per-query CPU
    assert users.findtext("users/default/networks/ip") == "127.0.0.1"


def test_the_peer_is_skipped_with_the_reason_when_the_package_cannot_be_installed(tmp_path, monkeypatch):
    monkeypatch.setattr(harness.shutil, "which", lambda name: None)
    monkeypatch.setattr(harness.subprocess, "run",
                        lambda cmd, **kw: subprocess.CompletedProcess(cmd, 100, "", "E: Unable to locate package"))  # fmt: skip
    ctx = Context(generate(2, 1800, 1), tmp_path / "f", tmp_path, [], 1, 1, 1, False, progress=False)
    result = clickhouse.run(ctx)
    assert result.errors == ["skipped: `apt-get update -qq` failed: E: Unable to locate package"]
    assert not result.ingest and not result.queries and result.storage is None


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("clickhouse-server") is None, reason="a real ClickHouse run needs the optional bench peer's Debian package clickhouse-server "
                    "(the peer installs it; its SQL, rows and normalization are tested above without it)")
def test_pipeline_against_clickhouse_checks_its_query_results(tmp_path):
    # 10 hosts x 6 h: the first high-cpu-1 instance (seed 123) matches 1,226 rows, so the filter is checked
    done, report = run_bench(tmp_path, "--strict", "--peers", "clickhouse", "--scale", "10", "--duration", "6h")
    assert done.returncode == 0, done.stderr[-3000:]
    (ch,) = report["systems"]
    assert ch["ingest"]["tsv-http"]["rows"] == 21_600 and ch["ingest"]["tsv-http"]["cpu_ms_per_1000_rows"]
    assert set(ch["queries"]) == set(QUERY_TYPES) and not ch["not_expressible"]
    assert all("cpu_median_ms" in q for q in ch["queries"].values())
    assert ch["storage"]["bytes_per_row"] > 0 and "OPTIMIZE TABLE FINAL and a clean shutdown" in ch["storage"]["note"]
