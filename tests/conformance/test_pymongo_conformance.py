"""A fast subset of `make conformance`: a handful of pymongo's own test files (sync), and of
pymongoarrow's and Motor's, unpatched, each against a fresh server, through the same runner
(bench/conformance.py) and the same known differences (tests/conformance/known_differences.toml)."""

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


# Another package's suite, each through its own sdist and venv (``conformance.ensure_suite``): the subset,
# how many of its tests must pass at least, and what its tests exercise.
OTHER_SUITES = {
    # pymongoarrow's own tests of find/aggregate into Arrow and Polars (``make conformance
    # MODES=pymongoarrow`` runs all of them): they count getMores, so they pin when a cursor ends
    "pymongoarrow": (["test/test_arrow.py", "test/test_polars.py", "test/pandas_types/test_int32_overflow.py"], 100),
    # Motor's asyncio and Tornado cursors and collections (``make conformance MODES=motor``): to_list,
    # batch sizes, tailable cursors, a getMore failing under a cancelled task (failCommand: the mode's
    # test commands), the documentation examples (one connects to MONGODB_URI), the Tornado GridFS handler
    "motor": (["test/asyncio_tests/test_asyncio_cursor.py", "test/asyncio_tests/test_examples.py",
               "test/tornado_tests/test_motor_collection.py", "test/tornado_tests/test_motor_web.py"], 60),
}


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("mode", sorted(OTHER_SUITES))
def test_other_suite_subset_matches_known_differences(mode, tmp_path):
    subset, at_least = OTHER_SUITES[mode]
    try:
        run, python = conformance.ensure_suite(mode, conformance.pymongo_version())
    except SystemExit as exc:  # no package index reachable: nothing to run the suite with
        pytest.skip(f"{mode}'s suite or its test dependencies unavailable: {str(exc)[:300]}")
    lines: list[str] = []
    report = conformance.run_mode(mode, subset, run, python, conformance.load_known(), tmp_path, lines.append)
    table = "\n".join(lines)
    assert report.passed > at_least, table
    assert not report.unexpected_failures, table + "\n" + "\n".join(
        f"{o.node}: {o.message}" for o in report.unexpected_failures)
    assert not report.unexpected_passes, table + "\nlisted but passing: " + ", ".join(report.unexpected_passes)
