"""Start/stop a Tidemark server for profiling (its own CLI, fresh dbpath) and load the cached frames.

Shared by the profiling scripts in this folder; only bench/ helpers are used (free_port, wait_port,
disk_bytes, the frame cache). The server is pinned to core 0 and loaders/profilers to core 1 when possible.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.harness import disk_bytes, free_port, wait_port

ROOT = Path(__file__).resolve().parents[2]
PY = str(ROOT / ".venv" / "bin" / "python")
CACHE = ROOT / "bench" / ".cache"


def snapshot_tree(commit: str, dest: str) -> str:
    """Extract ``commit``'s protocol/, server/, storage/ into ``dest`` (``git archive``; no git state changes),
    laid out under the import names that commit uses, so that ``python -m <name>`` run in ``dest`` imports
    that commit's code (not the installed checkout): since the install footprint change (issue 24) server/
    is the package ``tidemark`` with protocol/ and storage/ inside it; before it, three top-level packages."""
    os.makedirs(dest, exist_ok=True)
    archive = subprocess.run(["git", "archive", commit, "protocol", "server", "storage"], cwd=ROOT,
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", dest], input=archive, check=True)
    pyproject = subprocess.run(["git", "show", f"{commit}:pyproject.toml"], cwd=ROOT, capture_output=True,
                               text=True, check=True).stdout
    if '"tidemark" = "server"' in pyproject:
        os.rename(os.path.join(dest, "server"), os.path.join(dest, "tidemark"))
        for folder in ("protocol", "storage"):
            os.rename(os.path.join(dest, folder), os.path.join(dest, "tidemark", folder))
    return dest


def pin(core: int) -> list[str]:
    if shutil.which("taskset") and len(os.sched_getaffinity(0)) >= 2:
        return ["taskset", "-c", str(core)]
    return []


def frames_path(scale: int, seconds: int = 86400, seed: int = 123) -> Path:
    path = CACHE / f"cpu-v1-s{scale}-d{seconds}-seed{seed}-b1000.opmsg"
    if not path.exists():
        sys.exit(f"{path} missing: build it with `python -m bench --scale {scale} --peers null` first")
    return path


class Server:
    def __init__(self, dbpath: str | None = None, extra: list[str] | None = None, tree: str | None = None,
                 prelude: str | None = None):
        """``tree``: run the server from this source tree (e.g. a `git archive` of one commit, so a
        profile is not measuring other engineers' uncommitted edits); default: this work tree."""
        self.tree = tree or str(ROOT)
        # a snapshot of a commit from before the one import name runs as `python -m server`
        self.module = "server" if tree and not os.path.isdir(os.path.join(tree, "tidemark")) else "tidemark"
        # Python run before the server's own __main__ (experiments without editing the server, e.g. GC
        # settings): `python -c "<prelude>; runpy.run_module('tidemark')" <server args>`.
        self.prelude = prelude
        self.own_dir = dbpath is None
        self.dbpath = dbpath or tempfile.mkdtemp(prefix="tm-profile-")
        self.port = free_port()
        self.extra = extra or []
        self.proc: subprocess.Popen | None = None

    def start(self) -> Server:
        log = open(os.path.join(self.dbpath, "..", f"tm-profile-{self.port}.log"), "wb")
        launcher = ["-m", self.module]
        if self.prelude:
            launcher = ["-c", f"{self.prelude}\nimport runpy\nrunpy.run_module('{self.module}', run_name='__main__', "
                              "alter_sys=True)"]
        cmd = pin(0) + [PY, *launcher, "--port", str(self.port), "--dbpath", self.dbpath, "--quiet",
                        *self.extra]
        self.proc = subprocess.Popen(cmd, cwd=self.tree, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        wait_port(self.port, self.proc)
        return self

    @property
    def pid(self) -> int:
        return self.proc.pid

    def client(self):
        import pymongo

        return pymongo.MongoClient("127.0.0.1", self.port, directConnection=True)

    def stop(self) -> bool:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(300)
        return self.proc.returncode in (0, -signal.SIGTERM)

    def disk_bytes(self) -> int:
        return disk_bytes(Path(self.dbpath))

    def cleanup(self) -> None:
        if self.own_dir:
            shutil.rmtree(self.dbpath, ignore_errors=True)


def setup_cpu(client) -> None:
    db = client["benchmark"]
    db.drop_collection("cpu")
    db.create_collection("cpu", timeseries={"timeField": "time", "metaField": "tags", "granularity": "seconds"})
    db["cpu"].create_index([("tags.hostname", 1), ("time", -1)])


def replay(port: int, path: Path, connections: int = 4, limit: int | None = None) -> dict:
    cmd = pin(1) + [PY, "-m", "bench.replay", "--port", str(port), "--file", str(path),
                    "--connections", str(connections)]
    if limit:
        cmd += ["--limit", str(limit)]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True).stdout
    result = json.loads(out)
    result["wall"] = time.perf_counter() - t0
    result.pop("samples", None)
    if result.get("error"):
        raise RuntimeError(result["error"])
    return result


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
