"""pymongo's own test suite, unpatched, against Tidemark (issue 25, item 18); and pymongoarrow's and Motor's.

    python -m bench.conformance                          # every pymongo mode, every file
    python -m bench.conformance --modes sync --files test/test_cursor.py test/test_bulk.py
    python -m bench.conformance --modes pymongoarrow     # pymongoarrow's suite (NumPy, pandas, Arrow, Polars)
    python -m bench.conformance --modes motor            # Motor's suite (asyncio and Tornado)

What it does, per mode:

1. ensures pymongo's sdist for the *installed* pymongo version is cached in ``.conformance/cache/``
   (fetched from PyPI's simple index, not built), extracted in ``.conformance/src/``, and a separate virtualenv
   ``.conformance/venv/`` with that pymongo, pytest, pytest-asyncio and pytest-timeout (the project's
   venv stays clean);
2. for each test file: starts a fresh ``python -m tidemark`` on a free port with a fresh dbpath and the
   mode's flags, runs ``pytest <file>`` from the sdist's root in a subprocess (pymongo's own
   ``pyproject.toml`` options and markers apply; ``DB_IP``/``DB_PORT``, and ``DB_USER``/``DB_PASSWORD``
   for ``--auth``, are how its ``client_context`` finds the server) with a per-file timeout;
3. reads the JUnit XML (or, when the file timed out, the ``-v`` lines printed so far), compares every
   outcome with ``tests/conformance/known_differences.toml``, prints per-file counts, a summary per mode
   and one closing line: ``N passed, N failed;`` then per mode its passed, failed (how many of them
   environment-caused), n/a, and two pass rates over applicable tests: every failure counted, and with
   the failures listed as ``environment:`` (``either = true``: they fail against mongod on this machine
   too: no DNS, a container in the handshake metadata) counted as not applicable.

Modes: ``sync`` (test/test_*.py), ``async`` (test/asynchronous/test_*.py), ``auth`` (the sync files
against ``--auth``, plus pymongo's ``auth``-marked tests), ``testcommands`` (the sync files against
``--setParameter enableTestCommands=1``); ``pymongoarrow``: the test suite of pymongoarrow (MongoDB's
library that reads query results into NumPy, pandas, Arrow and Polars: how analytics users read
time-series data): its sdist's ``test/`` run from a copy (the sdist's source package would shadow the
installed wheel) in its own venv (``.conformance/venv-pymongoarrow``), its client pointed at the server
under test by a ``conftest.py`` the run writes beside that copy (the suite's client is fixed at
localhost:27017), with a ``pytest.ini`` that makes that directory pytest's rootdir; ``motor``: the test
suite of Motor (MongoDB's asyncio and Tornado driver, built on pymongo), its sdist's ``test/`` run from
the sdist's root with its own pytest options, in its own venv (``.conformance/venv-motor``: motor's
``test`` extra, with the installed pymongo), against ``enableTestCommands=1`` (as its CI's mongod); its
``test_environment`` reads ``DB_IP``/``DB_PORT`` as pymongo's does. Neither is in the default modes.

Tests pymongo itself skips against a standalone (replica-set only, test commands off, encryption...)
are *not applicable* and counted apart. The run fails (exit 1) when a test fails that the known
differences do not list, or passes although they list it (a fixed difference: delete its line).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
import xml.etree.ElementTree as ET
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / ".conformance"
KNOWN = ROOT / "tests" / "conformance" / "known_differences.toml"
sys.path.insert(0, str(ROOT / "tests"))

from harness.server import ServerProcess, free_port  # noqa: E402

ROOT_USER, ROOT_PASSWORD = "root", "rootpw"


@dataclasses.dataclass(frozen=True)
class Mode:
    glob: str  # the test files, relative to the suite's root
    server_args: tuple[str, ...] = ()
    params: tuple[tuple[str, object], ...] = ()  # server parameters (--setParameter)
    markers: str = ""  # pytest marker expression
    pytest_options: tuple[str, ...] = ()
    uri_env: tuple[str, ...] = ()  # environment variables set to the server's URI


MODES = {
    "sync": Mode("test/test_*.py", markers="default"),
    "async": Mode("test/asynchronous/test_*.py", markers="default_async"),
    "auth": Mode("test/test_*.py", ("--auth",), markers="default or auth"),
    "testcommands": Mode("test/test_*.py", params=(("enableTestCommands", 1),), markers="default"),
    "pymongoarrow": Mode("test/**/test_*.py"),
    # Motor's suite runs against a mongod with test commands on, as its CI starts one: its tests set
    # failCommand and maxTimeAlwaysTimeOut fail points without checking first. Its options turn warnings
    # into errors, and pytest-asyncio (1.x) warns at configure time that this option is unset: pytest
    # stopped with an internal error before collecting (its tests are unittest cases with no async
    # fixtures: the scope chosen, the future default, changes nothing). Its AWS Lambda example connects
    # to MONGODB_URI, else localhost:27017 (its CI's mongod).
    "motor": Mode("test/**/test_*.py", params=(("enableTestCommands", 1),),
                  pytest_options=("-o", "asyncio_default_fixture_loop_scope=function"), uri_env=("MONGODB_URI",)),
}
DEFAULT_MODES = "sync,async,auth,testcommands"
TEST_DEPENDENCIES = ["pytest>=8.2", "pytest-asyncio>=0.24.0", "pytest-timeout>=2.3"]
PYMONGOARROW_VERSION = "1.15.0"
# its optional test extras (pyproject: test, test-polars, test-pandas); pyarrow comes pinned with it
PYMONGOARROW_DEPENDENCIES = ["pytz>=2025.2", "pandas>=3.0", "polars>=1.10", "pytest>=8.0", "pytest-timeout>=2.3"]
ARROW_CONFTEST = """# Written by Tidemark's bench/conformance.py beside a copy of pymongoarrow's test/: its client is fixed
# at localhost:27017; this points it at the server under test (DB_IP / DB_PORT) before any test runs,
# and with it the files that make their own `MongoClient()` (pymongo's defaults: MongoClient.HOST/PORT).
import os

import pymongo
import test

test.client_context.host = os.environ["DB_IP"]
test.client_context.port = int(os.environ["DB_PORT"])
pymongo.MongoClient.HOST = os.environ["DB_IP"]
pymongo.MongoClient.PORT = int(os.environ["DB_PORT"])
"""
# The newest Motor; its requirements.txt pins pymongo>=4.9,<5.0, which takes the installed pymongo (pip
# refuses the venv otherwise). Its `test` extra (requirements/test.txt) is what its tests import: tornado,
# aiohttp, mockupdb, pytest-asyncio and pymongo[encryption] (pymongocrypt: the explicit-encryption tests).
MOTOR_VERSION = "3.7.1"
MOTOR_DEPENDENCIES = ["pytest-timeout>=2.3"]
FILE_TIMEOUT = 900.0  # seconds for one test file
TEST_TIMEOUT = 180  # seconds for one test (pytest-timeout; the file goes on with the next test)


# ---------------------------------------------------------------------------------------------- setup

def pymongo_version() -> str:
    return metadata.version("pymongo")


def run_quiet(argv: list[str], **kw) -> None:
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    if proc.returncode:
        raise SystemExit(f"failed: {' '.join(argv)}\n{proc.stdout[-4000:]}")


def ensure_sdist(version: str, package: str = "pymongo") -> Path:
    """The extracted sdist of ``package`` ``version`` (downloaded once into .conformance/cache)."""
    tarball = cached_sdist(package, version)
    src = WORK / "src" / f"{package}-{version}"
    if not (src / "test" / "__init__.py").exists():
        (WORK / "src").mkdir(parents=True, exist_ok=True)
        with tarfile.open(tarball) as tar:
            tar.extractall(WORK / "src", filter="data")
    return src


def cached_sdist(package: str, version: str) -> Path:
    """``.conformance/cache/<package>-<version>.tar.gz``, downloaded the first time."""
    cache = WORK / "cache"
    tarball = cache / f"{package}-{version}.tar.gz"
    if not tarball.exists():
        cache.mkdir(parents=True, exist_ok=True)
        print(f"conformance: downloading {package} {version} sdist (once)", flush=True)
        try:
            _fetch_sdist(package, version, tarball)
        except (OSError, StopIteration, ValueError) as exc:  # no index reachable, no such sdist
            tarball.unlink(missing_ok=True)
            raise SystemExit(f"failed: {package} {version} sdist: {exc!r}") from exc
    return tarball


def ensure_venv(version: str) -> Path:
    """.conformance/venv with pymongo ``version`` and pymongo's test requirements."""
    return _suite_venv("venv", version, [f"pymongo=={version}", *TEST_DEPENDENCIES])


def _suite_venv(name: str, ready: str, requirements: list[str]) -> Path:
    """The python of ``.conformance/<name>``, a venv of its own with ``requirements`` installed once
    (marked ready for ``ready``: a new version installs again)."""
    venv = WORK / name
    python = venv / "bin" / "python"
    stamp = venv / f".ready-{ready}"
    if not stamp.exists():
        print(f"conformance: creating .conformance/{name} (once)", flush=True)
        if not python.exists():
            run_quiet([sys.executable, "-m", "venv", str(venv)])
        run_quiet([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *requirements])
        stamp.touch()
    return python


def ensure_arrow_suite(pymongo: str) -> tuple[Path, Path]:
    """(the run directory: a copy of pymongoarrow's ``test/`` and the conftest that points it at the
    server, the venv's python with pymongoarrow, pymongo ``pymongo`` and the suite's extras)."""
    version = PYMONGOARROW_VERSION
    tarball = cached_sdist("pymongoarrow", version)
    run = WORK / "run" / f"pymongoarrow-{version}"
    if not (run / "test" / "__init__.py").exists():
        run.mkdir(parents=True, exist_ok=True)
        prefix = f"pymongoarrow-{version}/test/"
        with tarfile.open(tarball) as tar:
            members = [m for m in tar.getmembers() if m.name.startswith(prefix)]
            for m in members:
                m.name = m.name[len(f"pymongoarrow-{version}/"):]
            tar.extractall(run, members=members, filter="data")
    (run / "conftest.py").write_text(ARROW_CONFTEST, encoding="utf-8")
    # the run directory is pytest's rootdir (else it would take this project's pyproject.toml, above it):
    # the suite's own options that decide outcomes (its warnings-as-errors filter left out: pyarrow's
    # wheel warns of an ABI size change at import, which the suite's CI does not see)
    (run / "pytest.ini").write_text("[pytest]\ntestpaths = test\nxfail_strict = true\n", encoding="utf-8")
    python = _suite_venv("venv-pymongoarrow", f"{version}-{pymongo}",
                         [f"pymongoarrow=={version}", f"pymongo=={pymongo}", *PYMONGOARROW_DEPENDENCIES])
    return run, python


def ensure_motor_suite(pymongo: str) -> tuple[Path, Path]:
    """(Motor's extracted sdist: its tests run from its root, under its own pytest options; the venv's
    python with motor, its test extra and pymongo ``pymongo``)."""
    src = ensure_sdist(MOTOR_VERSION, "motor")
    python = _suite_venv("venv-motor", f"{MOTOR_VERSION}-{pymongo}",
                         [f"motor[test]=={MOTOR_VERSION}", f"pymongo=={pymongo}", *MOTOR_DEPENDENCIES])
    return src, python


def ensure_suite(mode: str, pymongo: str) -> tuple[Path, Path]:
    """(the directory ``mode``'s tests run in, the python of the venv they run with)."""
    if mode == "pymongoarrow":
        return ensure_arrow_suite(pymongo)
    if mode == "motor":
        return ensure_motor_suite(pymongo)
    return ensure_sdist(pymongo), ensure_venv(pymongo)


def _fetch_sdist(package: str, version: str, dest: Path) -> None:
    """Download ``package``'s sdist of ``version`` from PyPI's simple index without building it (pip
    download would build its metadata: for pymongoarrow, a C extension against libbson; only the
    sdists' tests are taken)."""
    import json
    import urllib.parse
    import urllib.request

    index = f"https://pypi.org/simple/{package}/"
    request = urllib.request.Request(index, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(request, timeout=60) as reply:
        files = json.load(reply)["files"]
    url = next(f["url"] for f in files if f["filename"] == f"{package}-{version}.tar.gz")
    with urllib.request.urlopen(urllib.parse.urljoin(index, url), timeout=300) as reply, open(dest, "wb") as out:
        shutil.copyfileobj(reply, out)


# ------------------------------------------------------------------------------------ known differences

@dataclasses.dataclass(frozen=True)
class Known:
    reason: str
    either: bool = False  # either outcome is accepted (timing- or environment-dependent tests)

    @property
    def environmental(self) -> bool:
        """The outcome depends on the machine the suite runs on, not on the server."""
        return self.either and self.reason.startswith("environment:")


def load_known(path: Path = KNOWN) -> dict[str, dict[str, Known]]:
    """``{section: {node id: Known}}``; section ``all`` applies to every mode, the others to theirs.
    A value is the reason string, or ``{reason = "...", either = true}`` when the test may pass or fail
    (it depends on timing or on the machine, not on the server)."""
    data = tomllib.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    out: dict[str, dict[str, Known]] = {}
    for section, entries in data.items():
        if section not in ("all", *MODES):
            raise SystemExit(f"{path}: unknown section [{section}]")
        table = out.setdefault(section, {})
        for node, value in entries.items():
            known = Known(value) if isinstance(value, str) else Known(value["reason"], value.get("either", False))
            if not known.reason.strip():
                raise SystemExit(f"{path}: {node} has no reason")
            table[node] = known
    return out


def known_for(mode: str, known: dict[str, dict[str, Known]]) -> dict[str, Known]:
    return {**known.get("all", {}), **known.get(mode, {})}


# ------------------------------------------------------------------------------------------- results

@dataclasses.dataclass
class Outcome:
    node: str
    status: str  # passed | failed | skipped
    message: str = ""


VERBOSE_LINE = re.compile(r"^(\S+::\S+) (PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)")


def parse_junit(path: Path, root: Path) -> list[Outcome]:
    """Outcomes from pytest's JUnit XML; ``root`` is the sdist root (classnames become file paths)."""
    outcomes: dict[str, Outcome] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        cls, name = case.get("classname", ""), case.get("name", "")
        parts = cls.split(".")
        # classname "test.test_cursor.TestCursor" -> test/test_cursor.py::TestCursor
        for i in range(len(parts), 0, -1):
            candidate = "/".join(parts[:i]) + ".py"
            if (root / candidate).exists() or i == 1:
                node = "::".join([candidate, *parts[i:], name])
                break
        status, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error"):
                status, message = "failed", child.get("message", "") or (child.text or "")[:300]
            elif child.tag == "skipped" and status != "failed":
                status, message = "skipped", child.get("message", "")
        previous = outcomes.get(node)  # a teardown error is a second element for the same test
        if previous is None or status == "failed":
            outcomes[node] = Outcome(node, status, message.strip().splitlines()[0][:300] if message.strip() else "")
    return list(outcomes.values())


def parse_verbose(text: str) -> list[Outcome]:
    status_of = {"PASSED": "passed", "FAILED": "failed", "ERROR": "failed", "SKIPPED": "skipped",
                 "XFAIL": "skipped", "XPASS": "failed"}
    outcomes: dict[str, Outcome] = {}
    for line in text.splitlines():
        match = VERBOSE_LINE.match(line)
        if match:
            outcomes[match.group(1)] = Outcome(match.group(1), status_of[match.group(2)])
    return list(outcomes.values())


@dataclasses.dataclass
class FileResult:
    path: str
    outcomes: list[Outcome]
    seconds: float
    note: str = ""  # "timeout", "crash (exit N)", "server did not start"


def run_file(mode: str, rel: str, src: Path, python: Path, scratch: Path) -> FileResult:
    spec = MODES[mode]
    args = spec.server_args
    base = Path(tempfile.mkdtemp(prefix="f-", dir=scratch))
    server = ServerProcess(base / "db", port=free_port(), args=args, params=dict(spec.params),
                           log_path=base / "tidemark.log")
    started = time.monotonic()
    try:
        server.start()
    except RuntimeError as exc:
        return FileResult(rel, [Outcome(rel, "failed", str(exc)[:300])], 0.0, "server did not start")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DB_", "PYTEST_", "MONGODB_"))}
    env.update(DB_IP="127.0.0.1", DB_PORT=str(server.port), PYTHONDONTWRITEBYTECODE="1")
    env.update({name: f"mongodb://127.0.0.1:{server.port}" for name in spec.uri_env})
    if "--auth" in args:
        with server.client() as bootstrap:  # the localhost exception: the first user
            bootstrap.admin.command("createUser", ROOT_USER, pwd=ROOT_PASSWORD, roles=["root"])
        env.update(DB_USER=ROOT_USER, DB_PASSWORD=ROOT_PASSWORD)
    junit = base / "junit.xml"
    # --maxfail=0: every outcome of the file is counted (Motor's own options stop a file at 10 failures)
    argv = [str(python), "-m", "pytest", rel, "-v", "-p", "no:cacheprovider", *(["-m", spec.markers] if spec.markers else []),
            f"--junitxml={junit}", f"--timeout={TEST_TIMEOUT}", "--maxfail=0", "-o", "log_cli=false", *spec.pytest_options]
    note = ""
    with open(base / "pytest.log", "w") as log:
        proc = subprocess.Popen(argv, cwd=src, env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            code = proc.wait(FILE_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()
            code, note = None, f"timeout after {FILE_TIMEOUT:.0f}s"
    server.kill()
    seconds = time.monotonic() - started
    text = (base / "pytest.log").read_text(errors="replace")
    outcomes = parse_junit(junit, src) if junit.exists() and code is not None else parse_verbose(text)
    if code not in (0, 1, 5) and not note:
        note = f"pytest exit {code}"
    if note and not outcomes or code not in (0, 1, 5, None):
        tail = " | ".join(text.strip().splitlines()[-3:])[:300]
        outcomes.append(Outcome(rel, "failed", f"{note}: {tail}"))
    elif note:
        outcomes.append(Outcome(rel, "failed", note))
    shutil.rmtree(base / "db", ignore_errors=True)
    return FileResult(rel, outcomes, seconds, note)


# ------------------------------------------------------------------------------------------- report

@dataclasses.dataclass
class ModeReport:
    mode: str
    passed: int = 0
    failed: int = 0  # every failure, known or not
    known_failed: int = 0
    environment_failed: int = 0  # of known_failed: listed "environment: ..." with either = true
    not_applicable: int = 0
    failures: list[Outcome] = dataclasses.field(default_factory=list)
    unexpected_failures: list[Outcome] = dataclasses.field(default_factory=list)
    unexpected_passes: list[str] = dataclasses.field(default_factory=list)

    @property
    def rate(self) -> float:
        """passed / (passed + failed): every failure counts against the server."""
        applicable = self.passed + self.failed
        return 100.0 * self.passed / applicable if applicable else 100.0

    @property
    def rate_without_environment(self) -> float:
        """The same with failures caused by the machine (no DNS, a container: they fail against mongod
        here too) counted as not applicable."""
        applicable = self.passed + self.failed - self.environment_failed
        return 100.0 * self.passed / applicable if applicable else 100.0


def run_mode(mode: str, files: list[str] | None, src: Path, python: Path, known: dict[str, dict[str, Known]],
             scratch: Path, out=print) -> ModeReport:
    pattern = MODES[mode].glob
    available = sorted(str(p.relative_to(src)) for p in src.glob(pattern))  # ("**" is recursive only here)
    wanted = [f for f in files if f in available] if files else available
    expected = known_for(mode, known)
    report = ModeReport(mode)
    out(f"\n== mode {mode}: {len(wanted)} files ==")
    out(f"{'file':58} {'pass':>5} {'fail':>5} {'known':>5} {'n/a':>5} {'secs':>6}")
    seen: set[str] = set()
    for rel in wanted:
        result = run_file(mode, rel, src, python, scratch)
        counts = {"passed": 0, "failed": 0, "known": 0, "skipped": 0}
        for o in result.outcomes:
            seen.add(o.node)
            listed = expected.get(o.node)
            if o.status == "skipped":
                counts["skipped"] += 1
                report.not_applicable += 1
            elif o.status == "passed":
                counts["passed"] += 1
                report.passed += 1
                if listed and not listed.either:
                    report.unexpected_passes.append(o.node)
            else:
                counts["failed"] += 1
                report.failed += 1
                report.failures.append(o)
                if listed:
                    counts["known"] += 1
                    report.known_failed += 1
                    if listed.environmental:
                        report.environment_failed += 1
                else:
                    report.unexpected_failures.append(o)
        note = f"  ({result.note})" if result.note else ""
        out(f"{rel:58} {counts['passed']:5} {counts['failed']:5} {counts['known']:5} {counts['skipped']:5} "
            f"{result.seconds:6.1f}{note}")
    return report


def main(argv: list[str] | None = None) -> int:
    global FILE_TIMEOUT
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modes", default=DEFAULT_MODES, help="comma-separated, of: " + ", ".join(MODES))
    parser.add_argument("--files", nargs="*", help="test files relative to the sdist root (default: all)")
    parser.add_argument("--file-timeout", type=float, default=FILE_TIMEOUT)
    parser.add_argument("--failures-out", help="write every failure (mode, known or UNEXPECTED, node id, message) "
                        "to this file")
    opts = parser.parse_args(argv)
    FILE_TIMEOUT = opts.file_timeout
    modes = [m.strip() for m in opts.modes.split(",") if m.strip()]
    for m in modes:
        if m not in MODES:
            parser.error(f"unknown mode {m!r}")
    version = pymongo_version()
    # mode -> (the directory pytest runs in, the venv's python); pymongo's modes share one
    suites = {m: ensure_suite(m, version) for m in modes}
    known = load_known()
    print(f"conformance: test suites against Tidemark (pymongo {version}), modes {','.join(modes)}", flush=True)

    def out(line: str) -> None:
        print(line, flush=True)

    reports: list[ModeReport] = []
    scratch = Path(tempfile.mkdtemp(prefix="tidemark-conformance-"))
    failures_out = open(opts.failures_out, "w") if opts.failures_out else None
    try:
        for mode in modes:
            report = run_mode(mode, opts.files, *suites[mode], known, scratch, out)
            reports.append(report)
            if failures_out:
                for o in report.failures:
                    mark = "known" if o not in report.unexpected_failures else "UNEXPECTED"
                    failures_out.write(f"{mode}\t{mark}\t{o.node}\t{o.message}\n")
                failures_out.flush()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if failures_out:
            failures_out.close()

    bad = False
    print("\n== summary (n/a = skipped by pymongo for a standalone; rate = passed / (passed + failed); "
          "rate w/o env = the same with failures listed as 'environment:' counted as n/a) ==")
    for r in reports:
        print(f"{r.mode:13} {r.passed:6} passed {r.failed:5} failed ({r.known_failed} known, "
              f"{r.environment_failed} environment) {r.not_applicable:6} n/a   rate {r.rate:6.2f}%   "
              f"rate w/o env {r.rate_without_environment:6.2f}%")
        for o in r.unexpected_failures:
            bad = True
            print(f"  UNEXPECTED FAILURE [{r.mode}] {o.node}: {o.message}")
        for node in r.unexpected_passes:
            bad = True
            print(f"  UNEXPECTED PASS [{r.mode}] {node} (listed in {KNOWN.relative_to(ROOT)}: remove it)")
    total_passed = sum(r.passed for r in reports)
    total_failed = sum(r.failed for r in reports)
    print(f"{total_passed} passed, {total_failed} failed; "
          + "; ".join(f"{r.mode}: {r.passed} passed, {r.failed} failed ({r.environment_failed} environment), "
                      f"{r.not_applicable} n/a, {r.rate:.2f}% / {r.rate_without_environment:.2f}% w/o env"
                      for r in reports))
    if bad:
        print("conformance: FAILED (unexpected outcomes above)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
