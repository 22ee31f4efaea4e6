"""The tiny benchmark run against Tidemark itself: time-series and regular collections, every query checked.

This fails (it is not skipped) when the server cannot yet load or answer the TSBS workload.
"""

from __future__ import annotations

from test_bench_pipeline import run_bench


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
