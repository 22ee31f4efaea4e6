"""bench.ab: the report arithmetic (medians, ranges, B/A) and one tiny end-to-end run with A = B."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from bench.ab import INGEST, Figure, figures, markdown
from bench.harness import ROOT

META = {"a": "old", "b": "new", "scale": 2, "duration": "30m", "rows": 360, "seed": 1, "rounds": 3, "runs": 2,
        "pinned": False}  # fmt: skip


def test_a_figure_is_the_median_and_range_over_rounds_and_b_over_a_of_the_medians():
    f = Figure("lastpoint", [2.0, 1.0, 9.0], [1.5, 0.5, 1.0])
    assert f.a_summary == (2.0, 1.0, 9.0) and f.b_summary == (1.0, 0.5, 1.5)
    assert f.ratio == 0.5
    assert f.ranges_overlap  # 1.0-9.0 and 0.5-1.5 share 1.0-1.5: no evidence at this spread
    assert not Figure("q", [2.0, 2.2], [1.0, 1.1]).ranges_overlap
    assert Figure("q", [], [1.0]).ratio is None and Figure("q", [0.0], [1.0]).ratio is None


def test_the_report_has_a_row_per_figure_with_both_columns_and_the_ratio():
    samples = {"A": {INGEST: [5.0, 6.0, 7.0], "high-cpu-1": [10.0, 12.0, 11.0]},
               "B": {INGEST: [4.0, 4.5, 5.0], "high-cpu-1": [5.0, 6.0, 5.5]}}  # fmt: skip
    md = markdown(META, figures(samples))
    assert "| server CPU, median (min–max) over rounds | A | B | B/A |" in md
    assert "| ingest, ms per 1,000 rows | 6.00 (5.00–7.00) | 4.50 (4.00–5.00) | 0.75 (ranges overlap) |" in md
    assert "| high-cpu-1, ms per query | 11.00 (10.00–12.00) | 5.50 (5.00–6.00) | 0.50 |" in md
    assert md.startswith("A: `old`\nB: `new`\n")


@pytest.mark.slow
def test_ab_end_to_end_with_the_same_build_on_both_sides(tmp_path):
    server = f"{sys.executable} -m tidemark"
    out = tmp_path / "ab.json"
    done = subprocess.run(
        [sys.executable, "-m", "bench.ab", "--a", server, "--b", server, "--scale", "2", "--duration", "30m",
         "--rounds", "1", "--runs", "2", "--queries", "single-groupby-1-1-1,lastpoint", "--cache",
         str(tmp_path / "cache"), "--json", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "| server CPU, median (min–max) over rounds | A | B | B/A |" in done.stdout
    for row in ("ingest, ms per 1,000 rows", "single-groupby-1-1-1, ms per query", "lastpoint, ms per query"):
        (line,) = [ln for ln in done.stdout.splitlines() if ln.startswith(f"| {row} |")]
        a, b = line.split("|")[2:4]
        assert "(" in a and "(" in b  # both columns measured
    samples = json.loads(out.read_text())["samples"]
    assert all(len(samples[label]["lastpoint"]) == 1 and samples[label]["lastpoint"][0] > 0 for label in "AB")


def test_ingest_cost_per_1000_rows_counts_the_settle_and_is_absent_without_it():
    from bench.harness import ingest_stats

    loaded = {"rows": 2000, "seconds": 1.0, "server_cpu_s": 0.010, "settle_cpu_s": 0.004, "settle_s": 3.5}
    assert ingest_stats(loaded, 2000, pinned=False)["cpu_ms_per_1000_rows"] == pytest.approx(7.0)
    del loaded["settle_cpu_s"]
    assert ingest_stats(loaded, 2000, pinned=False)["cpu_ms_per_1000_rows"] is None  # load only: not whole
