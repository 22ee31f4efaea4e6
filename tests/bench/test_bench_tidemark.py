"""The tiny benchmark run against Tidemark itself: time-series and regular collections, every query checked.

This fails (it is not skipped) when the server cannot yet load or answer the TSBS workload.
"""

from __future__ import annotations

import pytest
from test_bench_pipeline import run_bench


@pytest.mark.slow
def test_pipeline_against_tidemark_checks_every_query_and_measures_storage(tmp_path):
    done, report = run_bench(
        tmp_path, "--strict", "--connections", "50", "--peers", "tidemark,tidemark-regular"
    )
    assert done.returncode == 0, done.stderr[-3000:]
    systems = {s["name"]: s for s in report["systems"]}
    for name in ("tidemark", "tidemark-regular"):
        s = systems[name]
        assert s["errors"] == []
        assert s["ingest"]["replay"]["rows"] == 540
        assert len(s["queries"]) == 8
        assert s["storage"]["bytes_per_row"] > 0
    assert systems["tidemark"]["ingest"]["pymongo"]["rows"] == 540
    assert systems["tidemark"]["checks"]["connections"]["ok"] == 50


@pytest.mark.slow
def test_pipeline_with_tidemark_auth_authenticates_every_loader_and_query(tmp_path):
    done, report = run_bench(tmp_path, "--strict", "--connections", "20", "--peers", "tidemark", "--tidemark-auth")
    assert done.returncode == 0, done.stderr[-3000:]
    (tidemark,) = report["systems"]
    assert tidemark["errors"] == [] and "access control on" in tidemark["description"]
    assert tidemark["ingest"]["replay"]["rows"] == 540 and tidemark["ingest"]["pymongo"]["rows"] == 540
    assert len(tidemark["queries"]) == 8


@pytest.mark.slow
def test_auth_handshake_benchmark_measures_both_rates():
    import json
    import subprocess
    import sys

    from bench.harness import ROOT

    # 400 connections: their server CPU spans many 10 ms clock ticks (40 could fit in one and measure 0)
    done = subprocess.run([sys.executable, "-m", "bench.auth_handshake", "--connections", "400", "--concurrency", "4",
                           "--no-pin"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert result["mechanism"] == "SCRAM-SHA-256"
    assert result["plain_per_s"] > 0 and result["authenticated_per_s"] > 0
    assert result["server_cpu_ms_per_authenticated_connection"] > 0
