"""A fast subset of `make conformance`: a handful of pymongo's own test files (sync), unpatched, each
against a fresh server, through the same runner (bench/conformance.py) and the same known differences
(tests/conformance/known_differences.toml)."""

from __future__ import annotations

import pytest

from bench import conformance

SUBSET = ["test/test_database.py", "test/test_collection.py", "test/test_cursor.py", "test/test_bulk.py"]


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_pymongo_suite_subset_matches_known_differences(tmp_path):
    version = conformance.pymongo_version()
    try:
        src = conformance.ensure_sdist(version)
        python = conformance.ensure_venv(version)
    except SystemExit as exc:  # no package index reachable: nothing to run the suite with
        pytest.skip(f"pymongo {version} sdist or its test dependencies unavailable: {str(exc)[:300]}")
    lines: list[str] = []
    report = conformance.run_mode("sync", SUBSET, src, python, conformance.load_known(), tmp_path, lines.append)
    table = "\n".join(lines)
    assert report.passed > 200, table
    assert not report.unexpected_failures, table + "\n" + "\n".join(
        f"{o.node}: {o.message}" for o in report.unexpected_failures)
    assert not report.unexpected_passes, table + "\nlisted but passing: " + ", ".join(report.unexpected_passes)


ARROW_SUBSET = ["test/test_arrow.py", "test/test_polars.py", "test/pandas_types/test_int32_overflow.py"]


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_pymongoarrow_suite_subset_matches_known_differences(tmp_path):
    """pymongoarrow's own tests of find/aggregate into Arrow and Polars (``make conformance
    MODES=pymongoarrow`` runs all of them): they count getMores, so they pin when a cursor ends."""
    try:
        run, python = conformance.ensure_arrow_suite(conformance.pymongo_version())
    except SystemExit as exc:  # no package index reachable: nothing to run the suite with
        pytest.skip(f"pymongoarrow {conformance.PYMONGOARROW_VERSION} or its test dependencies unavailable: "
                    f"{str(exc)[:300]}")
    lines: list[str] = []
    report = conformance.run_mode("pymongoarrow", ARROW_SUBSET, run, python, conformance.load_known(), tmp_path,
                                  lines.append)
    table = "\n".join(lines)
    assert report.passed > 100, table
    assert not report.unexpected_failures, table + "\n" + "\n".join(
        f"{o.node}: {o.message}" for o in report.unexpected_failures)
    assert not report.unexpected_passes, table + "\nlisted but passing: " + ", ".join(report.unexpected_passes)
