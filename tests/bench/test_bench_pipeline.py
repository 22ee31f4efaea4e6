"""A fast run of the whole benchmark pipeline through its real entry point, so that it cannot silently rot.

Tiny scale (3 hosts x 30 min = 540 rows, 2 runs per query): generator, message cache, replay and pymongo
loaders, null servers, raw LMDB appends, DuckDB (queries checked against the naive computation), report
and chart. InfluxDB joins when ``influxd`` is installed. The Tidemark systems are not part of this committed
test yet (see bench/README.md).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TINY = ["--scale", "3", "--duration", "30m", "--runs", "2", "--workers", "2", "--no-progress"]


def run_bench(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess, dict | None]:
    results = tmp_path / "results"
    cmd = [
        sys.executable,
        "-m",
        "bench",
        *TINY,
        "--results",
        str(results),
        "--cache",
        str(tmp_path / "cache"),
        *args,
    ]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    report = results / "latest" / "report.json"
    return done, (json.loads(report.read_text()) if report.exists() else None)


@pytest.mark.slow
def test_pipeline_against_null_servers_lmdb_and_duckdb_writes_report_and_chart(tmp_path):
    done, report = run_bench(tmp_path, "--strict", "--peers", "null,null-decode,lmdb-append,duckdb")
    assert done.returncode == 0, done.stderr[-3000:]
    latest = tmp_path / "results" / "latest"
    assert (latest / "chart.png").stat().st_size > 10_000
    md = (latest / "report.md").read_text()
    for heading in ("## Ingest", "## Storage", "## Queries", "## Targets (Tidemark)"):
        assert heading in md
    systems = {s["name"]: s for s in report["systems"]}
    assert set(systems) == {"null", "null-decode", "lmdb-append", "duckdb"}
    for name in ("null", "null-decode"):
        for method in ("replay", "pymongo"):
            st = systems[name]["ingest"][method]
            assert st["error"] is None and st["rows"] == 540 and st["rows_per_s"] > 0
    assert systems["lmdb-append"]["storage"]["bytes_per_row"] > 400  # raw BSON is ~466 B a row
    duck = systems["duckdb"]
    assert duck["errors"] == []
    assert len(duck["queries"]) == 8 and all(q["runs"] == 2 for q in duck["queries"].values())
    assert report["meta"]["result_mismatch"] is None


@pytest.mark.skipif(
    shutil.which("influxd") is None, reason="influxd is not installed (Debian package influxdb)"
)
def test_pipeline_against_influxdb_checks_its_query_results(tmp_path):
    done, report = run_bench(tmp_path, "--strict", "--peers", "influxdb")
    assert done.returncode == 0, done.stderr[-3000:]
    influx = report["systems"][0]
    assert influx["ingest"]["line-protocol"]["rows"] == 540
    assert len(influx["queries"]) == 8
    assert influx["storage"]["bytes_per_row"] > 0


@pytest.mark.slow
def test_a_wrong_query_result_fails_the_run_loudly_and_still_writes_the_report(tmp_path, monkeypatch, capsys):
    from bench import __main__ as entry
    from bench.peers import duckdb_peer

    real = duckdb_peer._normalize
    monkeypatch.setattr(
        duckdb_peer, "_normalize", lambda q, rows: real(q, rows)[:-1] if q == "lastpoint" else real(q, rows)
    )
    results = tmp_path / "results"
    status = entry.main(
        [*TINY, "--peers", "duckdb,null", "--results", str(results), "--cache", str(tmp_path / "c")]
    )
    assert status == 1
    err = capsys.readouterr().err
    assert "WRONG QUERY RESULT" in err and "duckdb: wrong result for lastpoint" in err
    report = json.loads((results / "latest" / "report.json").read_text())
    assert "lastpoint" in report["meta"]["result_mismatch"]
    assert [s["name"] for s in report["systems"]] == ["duckdb"]  # the run stopped at the mismatch


def test_connection_check_counts_every_concurrent_connection_that_answers(tmp_path):
    from bench.connections import check_connections
    from bench.harness import free_port, start_process, stop_process, wait_port

    port = free_port()
    cmd = [sys.executable, "-m", "bench.nullserver", "--mode", "count", "--port", str(port)]
    proc = start_process(cmd, tmp_path / "nullserver.log")
    try:
        wait_port(port, proc, what="null server")
        held = check_connections(port, 200)
        assert held == {**held, "connections": 200, "held": 200, "ok": 200, "errors": []}
    finally:
        stop_process(proc, timeout=10)
