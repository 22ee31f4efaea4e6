"""First run (issue 24.8): the Makefile's targets, the README's promises and a small Docker build context.
Static and cheap: nothing is installed or started."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from harness import ROOT


def _targets() -> dict[str, str]:
    """Makefile target -> its recipe text."""
    text = (ROOT / "Makefile").read_text()
    targets: dict[str, str] = {}
    for match in re.finditer(r"^([\w-]+):[^=\n]*\n((?:\t.*\n)*)", text, re.MULTILINE):
        targets[match.group(1)] = match.group(2)
    return targets


def test_makefile_has_run_with_args_test_and_a_fast_tier():
    targets = _targets()
    assert {"run", "test", "test-fast", "npm"} <= set(targets)
    assert "$(ARGS)" in targets["run"] and "/bin/tidemark" in targets["run"]
    assert '-m "not slow"' in targets["test-fast"]
    assert "pytest" in targets["test"] and "not slow" not in targets["test"]  # make test runs everything


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_run_passes_args_to_tidemark():
    result = subprocess.run(["make", "-n", "run", "ARGS=--auth --logappend"], capture_output=True, text=True,
                            cwd=ROOT, timeout=30)
    assert result.returncode == 0, result.stderr
    [command] = [line for line in result.stdout.splitlines() if "bin/tidemark " in line]
    assert command.startswith(".venv/bin/tidemark ") and command.endswith("--auth --logappend")


def test_dockerignore_keeps_the_build_context_small():
    entries = {line.strip().rstrip("/") for line in (ROOT / ".dockerignore").read_text().splitlines()
               if line.strip() and not line.startswith("#")}
    assert {".venv", ".node", "data", "bench/results", "bench/.cache", ".git"} <= entries
    assert {"**/__pycache__", ".pytest_cache", ".ruff_cache"} <= entries


def test_readme_names_the_paths_the_fast_tier_and_the_compose_credentials():
    readme = (ROOT / "README.md").read_text()
    assert "make test-fast" in readme and "about 14 minutes of tests on 2 cores" in readme  # says how long
    assert ".venv/bin/tidemark" in readme and ".node/node_modules/.bin/mongosh" in readme
    assert 'make run ARGS="--auth"' in readme
    compose = (ROOT / "docker" / "compose.yaml").read_text()
    assert "ACCESS CONTROL IS ON" in compose and "MONGO_INITDB_ROOT_PASSWORD: example" in compose
    assert "root:example@" in compose and "root:example@" in readme
