"""What every peer shares: the run context, server processes, loaders, ingest statistics, query timing.

A peer module (bench/peers/*) is a ``run(ctx) -> SystemResult`` that starts its system, loads the same
rows, checks and times the same queries and measures its bytes on disk, using these helpers. A failure of a
system (cannot start, rejects an insert) is recorded in its result and the run goes on; a *wrong query
result* raises ``ResultMismatch`` and stops the whole benchmark.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bench.generator import Dataset
from bench.naive import NaiveChecker
from bench.queries import Params, ResultMismatch, compare, make_params

ROOT = Path(__file__).resolve().parent.parent
METRICS_PER_ROW = 10
MIN_RUNS = 3  # default of Context.min_runs


@dataclass
class Context:
    dataset: Dataset
    frames_path: Path
    workdir: Path  # fresh temporary directory for data directories
    queries: list[str]
    runs: int
    seed: int
    workers: int
    pin: bool  # taskset the server to core 0 and the loader to core 1
    progress: bool = True
    pymongo: bool = True
    query_budget_s: float = 30.0  # query seconds per system and query type (see check_and_time)
    min_runs: int = MIN_RUNS  # timed runs per query type even when a slow system exhausts its budget
    connections: int = 500  # concurrent connections to hold against Tidemark; 0 skips the check
    loader: str = "ordered"  # which batches each loader connection sends (bench.batch_order)
    tidemark_cmd: list[str] = field(default_factory=lambda: [sys.executable, "-m", "tidemark"])
    # --tidemark-auth: Tidemark runs with --auth; loaders and queries authenticate as this (user, password).
    auth: tuple[str, str] | None = None
    checker: NaiveChecker | None = None
    params: dict[str, list[Params]] = field(default_factory=dict)
    interleave: Interleaver | None = None  # --interleave: queries of every system in turn (check_and_time)

    def __post_init__(self):
        self.checker = self.checker or NaiveChecker(self.dataset)
        for q in self.queries:
            self.params[q] = make_params(q, self.dataset, self.seed, self.runs)

    def server_prefix(self) -> list[str]:
        return ["taskset", "-c", "0"] if self.pin else []

    def loader_prefix(self) -> list[str]:
        return ["taskset", "-c", "1"] if self.pin else []


def can_pin() -> bool:
    return shutil.which("taskset") is not None and len(os.sched_getaffinity(0)) >= 2


@dataclass
class SystemResult:
    name: str
    description: str
    ingest: dict[str, dict] = field(default_factory=dict)  # method -> ingest_stats(...)
    storage: dict | None = None  # {"bytes": int, "bytes_per_row": float, "note": str}
    queries: dict[str, dict] = field(default_factory=dict)  # query -> timing stats
    checks: dict[str, dict] = field(default_factory=dict)  # e.g. "connections" -> bench.connections result
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    not_expressible: dict[str, str] = field(default_factory=dict)  # query -> why this system cannot run it


class NotExpressible(Exception):
    """A system's query language cannot express a query type: reported as n/a with the reason, never faked."""


# -- processes -----------------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, proc: subprocess.Popen, timeout: float = 60.0, what: str = "server") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with status {proc.returncode} before listening{_tail(proc)}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{what} did not listen on port {port} within {timeout:.0f}s{_tail(proc)}")


def _tail(proc: subprocess.Popen) -> str:
    log = getattr(proc, "log_path", None)
    if log and Path(log).exists():
        text = Path(log).read_text(errors="replace")[-1500:]
        return f"; its output ends with:\n{text}"
    return ""


def start_process(cmd: list[str], log_path: Path, env: dict | None = None) -> subprocess.Popen:
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log = open(log_path, "wb")
    proc = subprocess.Popen(
        cmd, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, env=env, start_new_session=True
    )
    proc.log_path = log_path
    log.close()
    return proc


def stop_process(proc: subprocess.Popen, timeout: float = 120.0) -> bool:
    """SIGTERM and wait: True for a clean exit (status 0 or -SIGTERM), False if it had to be killed."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            return False
    return proc.returncode in (0, -signal.SIGTERM)


def process_cpu_seconds(pid: int) -> float | None:
    try:
        import psutil

        t = psutil.Process(pid).cpu_times()
        return t.user + t.system
    except Exception:
        return None


def thread_cpu_ns(pid: int) -> int | None:
    """CPU nanoseconds of a process's live threads, from /proc/<pid>/task/*/schedstat.

    Nanosecond resolution (``process_cpu_seconds`` counts 10 ms clock ticks, too coarse for one query of
    a few ms), but a thread that exits takes its time with it: use it for short spans of a server whose
    threads persist (every system here), and ``process_cpu_seconds`` for a whole load."""
    total = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass  # the thread exited between listdir and open
    return total


def settle(pid: int, *, idle_share: float = 0.05, window_s: float = 3.5, timeout_s: float = 120.0) -> dict:
    """Wait until a server has done the work a load left behind (Tidemark writes the buckets a load
    archived in full ~2 s after their last row; the old engine wrote them during the load), so the
    queries after it are timed on a quiet server and the ingest cost can count that work: settled
    when the server used under ``idle_share`` of one core over the last ``window_s`` (longer than the
    2 s after which archived buckets are written, plus the 1 s maintenance tick). Returns the
    seconds waited and the server CPU seconds spent meanwhile."""
    started, first = time.monotonic(), process_cpu_seconds(pid)
    samples = [(started, first)]
    while first is not None:
        time.sleep(0.1)
        now, cpu = time.monotonic(), process_cpu_seconds(pid)
        if cpu is None:
            break
        samples.append((now, cpu))
        old = next((s for s in reversed(samples) if now - s[0] >= window_s), None)
        if old is not None and cpu - old[1] < idle_share * (now - old[0]):
            break
        if now - started > timeout_s:
            break
    last = samples[-1]
    return {"settle_s": last[0] - started, "settle_cpu_s": (last[1] - first) if first is not None else None}


def memory_status(pid: int) -> dict[str, int]:
    """A process's memory in bytes from /proc/<pid>/status: ``anon`` (RssAnon: its heap, Python objects,
    NumPy arrays), ``file`` (RssFile: mapped file pages it touched, e.g. an LMDB map: shared with the
    page cache and reclaimable) and ``hwm`` (VmHWM: the kernel's peak of anon + file + shmem); zeros
    when the process is gone."""
    keys = {"RssAnon:": "anon", "RssFile:": "file", "VmHWM:": "hwm"}
    out = dict.fromkeys(keys.values(), 0)
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                name = line.split(None, 1)[0] if line.strip() else ""
                if name in keys:
                    out[keys[name]] = int(line.split()[1]) * 1024
    except OSError:
        pass
    return out


class RssSampler:
    """Peaks of a process's anonymous and file-backed RSS, sampled every 20 ms on a thread until
    ``stop()``, which returns ``{"anon", "file", "hwm"}`` in bytes (``hwm``: the kernel's own peak, which
    also catches a spike between samples)."""

    def __init__(self, pid: int, interval_s: float = 0.02):
        self.pid, self.interval_s = pid, interval_s
        self.peak = {"anon": 0, "file": 0, "hwm": 0}
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _sample(self) -> bool:
        now = memory_status(self.pid)
        if not any(now.values()):
            return False
        for k, v in now.items():
            self.peak[k] = max(self.peak[k], v)
        return True

    def _run(self) -> None:
        while not self._stop.is_set() and self._sample():
            time.sleep(self.interval_s)

    def stop(self) -> dict[str, int]:
        self._stop.set()
        self.thread.join(5)
        self._sample()
        return dict(self.peak)


def disk_bytes(path: Path) -> int:
    """Bytes allocated on disk under ``path`` (what ``du`` counts; sparse files count only what they use)."""
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(root, f)).st_blocks * 512
            except FileNotFoundError:
                pass
    return total


# -- loaders -------------------------------------------------------------------------------------------------


def run_loader(ctx: Context, args: list[str], server_pid: int | None) -> dict:
    """Run a loader module (bench.replay / bench.pymongo_loader) in its own pinned process."""
    cpu0 = process_cpu_seconds(server_pid) if server_pid else None
    cmd = ctx.loader_prefix() + [sys.executable, "-m", *args] + (["--progress"] if ctx.progress else [])
    out = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=None, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"loader {args[0]} failed with status {out.returncode}")
    result = json.loads(out.stdout)
    cpu1 = process_cpu_seconds(server_pid) if server_pid else None
    if cpu0 is not None and cpu1 is not None:
        result["server_cpu_s"] = cpu1 - cpu0
    return result


def replay_args(ctx: Context, port: int, *, auth: bool = False) -> list[str]:
    args = [
        "bench.replay",
        "--port",
        str(port),
        "--file",
        str(ctx.frames_path),
        "--connections",
        str(ctx.workers),
        "--loader",
        ctx.loader,
    ]
    if auth and ctx.auth:
        args += ["--user", ctx.auth[0], "--password", ctx.auth[1]]
    return args


def pymongo_args(ctx: Context, port: int, *, auth: bool = False) -> list[str]:
    ds = ctx.dataset
    credentials = f"{ctx.auth[0]}:{ctx.auth[1]}@" if auth and ctx.auth else ""
    return [
        "bench.pymongo_loader",
        "--uri", f"mongodb://{credentials}127.0.0.1:{port}/?directConnection=true",
        "--scale", str(ds.scale), "--duration", f"{ds.duration_s}s", "--seed", str(ds.seed),
        "--threads", str(ctx.workers), "--loader", ctx.loader,
    ]  # fmt: skip


def ingest_stats(result: dict, expected_rows: int, pinned: bool, bins: int = 20) -> dict:
    """Rates, first/last tenth and a rate curve from a loader result's (t, rows) samples."""
    rows, seconds, samples = result["rows"], result["seconds"], result.get("samples") or []
    stats = {
        "rows": rows,
        "expected_rows": expected_rows,
        "seconds": seconds,
        "rows_per_s": rows / seconds if seconds > 0 else 0.0,
        "metrics_per_s": rows * METRICS_PER_ROW / seconds if seconds > 0 else 0.0,
        "pinned": pinned,
        "error": result.get("error"),
        "server_cpu_s": result.get("server_cpu_s"),
    }
    cpu = stats["server_cpu_s"]
    # the rate one saturated server core would give: rows per second of server CPU (all its threads)
    stats["rows_per_cpu_s"] = rows / cpu if cpu else None
    settle_cpu = result.get("settle_cpu_s")
    stats["settle_s"], stats["settle_cpu_s"] = result.get("settle_s"), settle_cpu
    # ... counting the work the load left behind too (see settle): the whole cost of the rows
    stats["rows_per_cpu_s_settled"] = rows / (cpu + settle_cpu) if cpu and settle_cpu is not None else None
    # the same whole cost as server CPU milliseconds per 1,000 rows (only where the settle was measured)
    whole = cpu + settle_cpu if cpu is not None and settle_cpu is not None else None
    stats["cpu_ms_per_1000_rows"] = whole / rows * 1e6 if whole is not None and rows else None
    if stats["error"] is None and rows != expected_rows:
        stats["error"] = f"loaded {rows} of {expected_rows} rows"
    if len(samples) >= 2 and rows > 0:
        ts = [0.0] + [s[0] for s in samples]
        rs = [0] + [s[1] for s in samples]
        at = _time_at_rows(ts, rs)
        tenth = rows / 10
        first = tenth / at(tenth) if at(tenth) > 0 else None
        last_span = at(rows) - at(rows - tenth)
        last = tenth / last_span if last_span > 0 else None
        stats["first_tenth_rows_per_s"] = first
        stats["last_tenth_rows_per_s"] = last
        stats["last_vs_first"] = last / first if first and last else None
        curve = []
        for i in range(bins):
            lo, hi = rows * i / bins, rows * (i + 1) / bins
            span = at(hi) - at(lo)
            if span > 0:
                curve.append(((lo + hi) / 2, (hi - lo) / span))
        stats["curve"] = curve
    return stats


def _time_at_rows(ts: list[float], rs: list[int]) -> Callable[[float], float]:
    import bisect

    def at(r: float) -> float:
        i = bisect.bisect_left(rs, r)
        if i <= 0:
            return ts[0]
        if i >= len(rs):
            return ts[-1]
        r0, r1, t0, t1 = rs[i - 1], rs[i], ts[i - 1], ts[i]
        return t0 + (t1 - t0) * (r - r0) / (r1 - r0) if r1 > r0 else t1

    return at


# -- queries -------------------------------------------------------------------------------------------------


def check_and_time(
    ctx: Context,
    system: str,
    execute: Callable[[str, Params], object],
    normalize: Callable[[str, object], list[tuple]],
    result: SystemResult,
    server_pid: int | None = None,
) -> None:
    """For each query type: check the seeded instances against the naive result, then time each of them.

    With ``server_pid`` each timed instance also measures the server's CPU (``thread_cpu_ns``): the
    figure a shared, noisy machine distorts least. An in-process system passes its own pid (its CPU then
    includes the client's share). An ``execute`` that raises ``NotExpressible`` on the first instance of a
    query type marks the type n/a for this system with the reason (``result.not_expressible``).

    The check pass doubles as the warm-up. A wrong answer raises ResultMismatch (never caught here).
    A slow system may spend at most ``ctx.query_budget_s`` of query time on the check pass of one query
    type: it then stops after at least ``ctx.min_runs`` instances, and only the checked instances are timed (the
    report shows the smaller run count). Nothing unchecked is ever timed.

    With ``ctx.interleave`` (``--interleave``) the system's queries are not run here: it waits, loaded,
    until every system of the run is (``Interleaver``), which then checks and times them all, instance by
    instance in turn.
    """
    queried = Queried(system, execute, normalize, result, server_pid)
    if ctx.interleave is not None:
        ctx.interleave.arrive(queried)
        return
    bar = progress_bar(ctx, len(ctx.queries) * ctx.runs * 2, f"  {system} queries", "q")
    for query in ctx.queries:
        checked = queried.check(ctx, query, bar)
        for p, first in checked:
            queried.time(query, p, first)
            bar.update(1)
        bar.update(len(ctx.params[query]) - len(checked))
        queried.record(query, len(ctx.params[query]))
    bar.close()


@dataclass
class Queried:
    """One system's side of the query phase: how it runs a query, and the timings it has so far."""

    system: str
    execute: Callable[[str, Params], object]
    normalize: Callable[[str, object], list[tuple]]
    result: SystemResult
    server_pid: int | None = None
    times: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)

    def check(self, ctx: Context, query: str, bar=None) -> list[tuple[Params, list[tuple]]]:
        """The check pass of one query type (see ``check_and_time``): the instances checked, with their
        answers; none when the query is not expressible on this system."""
        self.times, self.cpu = [], []
        instances = ctx.params[query]
        checked: list[tuple[Params, list[tuple]]] = []
        spent = 0.0
        for p in instances:
            t0 = time.perf_counter()
            try:
                raw = self.execute(query, p)
            except NotExpressible as exc:
                self.result.not_expressible[query] = str(exc)
                return []
            spent += time.perf_counter() - t0
            got = self.normalize(query, raw)
            compare(self.system, query, p, got, ctx.checker.expected(query, p))
            checked.append((p, got))
            if bar is not None:
                bar.update(1)
            if spent > ctx.query_budget_s and len(checked) >= ctx.min_runs:
                break
        if bar is not None:
            bar.update(len(instances) - len(checked))
        return checked

    def time(self, query: str, p: Params, first: list[tuple]) -> None:
        """One timed run of a checked instance (it must answer what it answered when checked)."""
        pid = self.server_pid
        c0 = thread_cpu_ns(pid) if pid else None
        t0 = time.perf_counter()
        raw = self.execute(query, p)
        self.times.append(time.perf_counter() - t0)
        c1 = thread_cpu_ns(pid) if pid else None
        if c0 is not None and c1 is not None:
            self.cpu.append((c1 - c0) / 1e9)
        compare(self.system, query, p, self.normalize(query, raw), first)  # timed runs answer the same

    def record(self, query: str, planned: int) -> None:
        """The query type's figures into the result (nothing when it was not expressible)."""
        if query in self.result.not_expressible or not self.times:
            return
        self.result.queries[query] = {**timing_stats(self.times), "planned": planned}
        if len(self.cpu) == len(self.times):
            self.result.queries[query].update(cpu_stats(self.cpu))


class Interleaver:
    """``--interleave``: every system loaded and up at once, then each query instance run on each in turn.

    A shared machine's speed drifts over seconds and minutes (here ±1.8× for the same Python loop), so
    systems timed one after the other (or in rounds minutes apart) are compared at different speeds; run
    instance by instance in turn, each pair of neighbouring runs meets the same machine. The bench starts
    each system's ``run`` on a thread of its own, one after the other (``begin``: the next one starts when
    the previous has loaded and reached its queries — ``arrive`` — or ended, so loads never overlap);
    once every system has arrived or ended, ``run_queries`` checks every instance on each (the warm-up),
    then times them in rotating order, and lets the systems go on (compaction, storage, stop)."""

    def __init__(self, ctx: Context):
        self.ctx = ctx
        self.arrived: list[Queried] = []
        self._cond = threading.Condition()
        self._released = False

    def arrive(self, queried: Queried) -> None:
        """A system's thread: it is loaded; wait until the queries of every system are done."""
        with self._cond:
            self.arrived.append(queried)
            self._cond.notify_all()
            while not self._released:
                self._cond.wait()

    def begin(self, target: Callable[[], None]) -> threading.Thread:
        """Start ``target`` (a system's whole run) on its own thread; return once it has arrived or ended."""
        before = len(self.arrived)
        thread = threading.Thread(target=target, daemon=True)
        thread.start()
        with self._cond:
            while len(self.arrived) == before and thread.is_alive():
                self._cond.wait(0.2)
        return thread

    def release(self) -> None:
        with self._cond:
            self._released = True
            self._cond.notify_all()

    def run_queries(self) -> None:
        """Check, then time, every query type on every arrived system, instance by instance in turn. A
        system that fails (not a wrong answer: that raises) keeps its error and leaves the query phase."""
        ctx = self.ctx
        systems = list(self.arrived)
        for query in ctx.queries:
            checked: dict[str, list[tuple[Params, list[tuple]]]] = {}
            for q in list(systems):
                try:
                    checked[q.system] = q.check(ctx, query)
                except ResultMismatch:
                    raise
                except Exception as exc:
                    q.result.errors.append(f"{query}: {type(exc).__name__}: {exc}")
                    systems.remove(q)
            turn = 0
            for i in range(len(ctx.params[query])):
                order = systems[turn % len(systems):] + systems[:turn % len(systems)] if systems else []
                turn += 1
                for q in order:
                    runs = checked.get(q.system, [])
                    if i >= len(runs) or q not in systems:
                        continue
                    try:
                        q.time(query, *runs[i])
                    except ResultMismatch:
                        raise
                    except Exception as exc:
                        q.result.errors.append(f"{query}: {type(exc).__name__}: {exc}")
                        systems.remove(q)
            for q in self.arrived:
                if q.system in checked:
                    q.record(query, len(ctx.params[query]))


def timing_stats(seconds: list[float]) -> dict:
    ms = sorted(s * 1000 for s in seconds)
    p95 = ms[max(0, math.ceil(0.95 * len(ms)) - 1)]
    return {
        "runs": len(ms),
        "mean_ms": statistics.fmean(ms),
        "median_ms": statistics.median(ms),
        "p95_ms": p95,
    }


def cpu_stats(seconds: list[float]) -> dict:
    """Server CPU per query instance: median, min and max in ms."""
    ms = sorted(s * 1000 for s in seconds)
    return {"cpu_median_ms": statistics.median(ms), "cpu_min_ms": ms[0], "cpu_max_ms": ms[-1]}


class _NoBar:
    def update(self, n=1):
        pass

    def close(self):
        pass


def progress_bar(ctx: Context, total: int, desc: str, unit: str = "rows"):
    if not ctx.progress:
        return _NoBar()
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=unit, unit_scale=True, file=sys.stderr)


class Unavailable(Exception):
    """A peer's program is not installed and could not be installed."""


def debian_package_version(package: str) -> str:
    """The installed version of the Debian ``package`` without its Debian suffix (``18.16.1`` of
    ``18.16.1+ds-7.3+b2``); empty when it is not installed."""
    version = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", package],
                             capture_output=True, text=True, check=False).stdout.strip()  # fmt: skip
    return version.split("+", 1)[0]


def ensure_debian_binary(binary: str, package: str) -> str:
    """The path of ``binary``, installing the Debian ``package`` with apt-get first when it is missing;
    raises :class:`Unavailable` with the reason when that fails (the peer is then skipped)."""
    path = shutil.which(binary)
    if path:
        return path
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", package]):
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise Unavailable(f"`{' '.join(cmd)}` failed: {done.stderr.strip()[-300:]}")
    path = shutil.which(binary)
    if not path:
        raise Unavailable(f"apt-get installed {package} but {binary} is not on PATH")
    return path
