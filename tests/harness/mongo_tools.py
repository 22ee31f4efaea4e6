"""MongoDB Database Tools 100.8.0 (mongodump, mongorestore, ...) as real clients in tests.

The binaries and mongo-tools' own time-series test dumps live in ``shared/`` beside the project
(``../shared/tools/mongo-tools-100.8.0/bin`` and ``../shared/fixtures/mongo-tools-100.8.0`` from the
repository root; for a git worktree, beside its main checkout). Where that folder is absent (a
user's machine) the tests using them skip with :data:`SKIP_REASON`.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from harness.server import ROOT

VERSION = "mongo-tools-100.8.0"


def _shared() -> Path | None:
    candidates = [ROOT.parent / "shared"]
    try:  # a git worktree: shared/ sits beside the main checkout
        common = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--path-format=absolute", "--git-common-dir"],
                                capture_output=True, text=True, timeout=10, check=False).stdout.strip()
        if common:
            candidates.append(Path(common).parent.parent / "shared")
    except (OSError, subprocess.SubprocessError):
        pass
    for path in candidates:
        if (path / "tools" / VERSION / "bin" / "mongorestore").exists():
            return path
    return None


SHARED = _shared()
BIN = SHARED / "tools" / VERSION / "bin" if SHARED else None
FIXTURES = SHARED / "fixtures" / VERSION / "timeseries_tests" if SHARED else None
SKIP_REASON = f"MongoDB Database Tools not found (expected ../shared/tools/{VERSION}/bin beside the repository)"


def run_tool(tool: str, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run one of the tools; the result carries returncode and the combined output (``.stdout``)."""
    assert BIN is not None, SKIP_REASON
    return subprocess.run([str(BIN / tool), *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=timeout, check=False)


def uri_args(port: int, user: str | None = None, password: str | None = None) -> list[str]:
    args = ["--host", "127.0.0.1", "--port", str(port)]
    if user is not None:
        args += ["-u", user, "-p", password or "", "--authenticationDatabase", "admin"]
    return args
