"""Run tokens: how the thread pool shares the CPU (and the GIL) among running operations.

Every piece of work of the server's thread pool runs inside :meth:`RunScheduler.run` (the one
executor path: ``tidemark.context.run_in_pool``). The pool itself is large (a thread per running
operation, up to ``tidemark.app.MAX_WORKER_THREADS``), so a long operation never keeps another from
starting; what is scarce is the right to run Python, the *run token*:

- At most ``tokens`` jobs hold a run token at once (K, about the number of cores). The others wait,
  each on its own event, in one of two FIFO queues: *fresh* jobs (never preempted) and *preempted*
  ones. A freed token goes straight to the next waiter (direct hand-off: no polling, no herd):
  fresh jobs first — a short request waits for at most about one quantum — except that after
  ``fresh_burst`` grants in a row to fresh jobs while a preempted one waited, the preempted one goes
  first (no job starves: preempted jobs get at least one grant in ``fresh_burst + 1`` under a flood
  of fresh jobs, and each fresh job holds its token for about a quantum at most before it becomes
  a preempted one).
- A job that has held its token for ``quantum`` seconds gives it up at its next interruption check
  (``Operation.check`` -> :func:`checkpoint`, which long loops reach every ~256 units of work) when
  someone is waiting: it moves to the back of the preempted queue, parks, and resumes with the
  token. So a slow query costs others a CPU share, never their place in a queue (as with mongod's
  thread per connection).
- A job about to run C code that releases the GIL for long (a regex match) hands its token on
  meanwhile (:func:`released`) and takes one back after, like a Go goroutine entering a system call.

Invariants:
1. At most ``tokens`` jobs hold a token (until :meth:`close`, after which nothing waits).
2. Only a pool thread inside :meth:`run` ever waits here. :func:`checkpoint` and :func:`released` on
   any other thread — the event loop, the storage writer, background work — return at once; so do
   nested :meth:`run` calls.
3. A waiting job holds nothing another job may need: before its work it holds nothing, and it parks
   (or releases) only when ``pinned()`` is false — no LMDB read transaction open on its thread (map
   growth waits for every open read; a parked reader could otherwise deadlock the token holders
   behind the writer). LMDB reader slots in use are thus bounded by the token holders plus the
   non-pool threads, whatever the number of parked jobs.
4. A wait ends with the token, or raises the operation's error without it: killOp (``Operation.kill``
   wakes the job through ``Operation.parked``), its ``maxTimeMS`` deadline (a timed wait), or
   shutdown (the operations are killed; :meth:`close` then lets everything through).
5. A token is always given back: :meth:`run` releases it in ``finally``, whatever ``fn`` raised.

Inline runs (:meth:`RunScheduler.run_inline`): a short, restartable read may first run on the event
loop's own thread, holding no token (the loop is one more thread running Python, as it runs every
command's parse anyway), under a budget of the thread's CPU time (and a bound of ``INLINE_WALL_FACTOR``
budgets of wall-clock time). At the first check past the budget
(:func:`checkpoint`), or when the work would run C code with the GIL released (:func:`released`: a
regex match, a JavaScript call, a wait for a lock — long or blocking, never for the loop), the check
raises :class:`MoveToPool`; the caller then runs the same work again from its start in the pool.
6. An inline run holds the loop for at most its budget of CPU time (and ``INLINE_WALL_FACTOR`` budgets
   of wall-clock time) plus the work between two checks (long loops check every ~256 units of work);
   it never waits for a token and never parks.
7. :class:`MoveToPool` is raised only inside :meth:`run_inline` and never leaves it (a
   ``BaseException``: the work's ``except Exception`` handlers let it through, its ``finally`` blocks
   and ``with`` exits — read transactions — run as it unwinds).

Data and threading only: no asyncio, nothing of the server above it.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

DEFAULT_TOKENS = 2
DEFAULT_QUANTUM = 0.005  # a check runs every ~0.1-1 ms, so a holder yields within about a quantum
DEFAULT_FRESH_BURST = 8  # fresh jobs served in a row ahead of a waiting preempted one

class _Local(threading.local):
    """Per thread: ``job``, the _Job this pool thread runs (None outside RunScheduler.run). The class
    default answers a thread that never ran a job (the event loop's ``Operation.check``s) without the
    AttributeError, and its formatted message, that ``getattr(local, "job", None)`` raises inside."""

    job: _Job | None = None
    inline: _Inline | None = None  # the event loop's thread, during RunScheduler.run_inline
    # The monotonic time before which :func:`checkpoint` has nothing to do on this thread (``Operation.check``
    # calls it from then on, so that most checks make no call of it): never on a thread running neither
    # a job nor an inline run; always in a job (its rule reads the job's token and queues); during an
    # inline run, when its budget may have been spent (``_Inline.until``: the one place it is kept).
    due: float = math.inf


_local = _Local()
# This thread's state as ``Operation.check`` reads it (``due``: whether to call :func:`checkpoint`)
thread_state = _local


class MoveToPool(BaseException):  # noqa: N818 - a control-flow signal, not an error
    """An inline run (:meth:`RunScheduler.run_inline`) spent its budget, or its work is about to run
    GIL-free C code: run the work again in the pool. Never leaves ``run_inline``."""


# An inline run moves when its thread has run for its budget, or when its wall-clock time reaches this
# many budgets whatever the thread's own time (a loop preempted by other processes, or waiting for the
# GIL a pool thread holds, is not spending the run's budget — but the loop is held all the same; so is
# a loop waiting for the disk: a page fault on cold data blocks the thread, not the CPU clock).
INLINE_WALL_FACTOR = 4


# Which kinds of read (``CommandContext.run_read``: the command, its namespace and the request's size)
# go straight to the pool: those whose last run took a budget of CPU time or more — measured wherever it
# ran: a run the pool keeps is measured there (:meth:`RunScheduler.measured`), so a long kind never
# spends a budget in vain after its first read, and a kind whose first read was slow (cold: the shape's
# plan templates made, pages faulted in) runs inline again once the pool has measured its usual cost —
# and those whose inline run met GIL-free C code (a regex match, a JavaScript call): they stay.
# (Counting moves instead — skip 64, 128 ... 1,024 reads after n moves in a row — sent a short kind's
# next 64 reads to the pool after its cold first one moved: the bench's check pass moved, and every timed
# sg-1-1-1 after it paid a hand-off and its wake-ups.)
INLINE_MEMO_MAX = 4096  # kinds remembered (the table is emptied when full)


class _Inline:
    """``_local.inline`` of the event loop's thread during :meth:`RunScheduler.run_inline` (its
    ``_local.job`` is None: no token, no check parks), which fills it (no constructor of its own: one
    Python call fewer per inline read). ``until``: the monotonic time at which its budget may be spent
    (a clock cheap enough for every check); only then is the thread's CPU time read (``spent``);
    ``cpu_until``, ``wall_until``: where its CPU time and its wall-clock time run out; ``gil_free``: the
    run moved at a GIL-free call (``released``), not for its budget."""

    __slots__ = ("until", "cpu_until", "wall_until", "gil_free")
    until: float
    cpu_until: float
    wall_until: float
    gil_free: bool

    def spent(self) -> bool:
        """The wall clock passed ``until``: has the thread run for its budget (or the wall clock
        reached its bound)? If not, look again when the budget's rest may have been spent."""
        now = time.monotonic()
        rest = self.cpu_until - time.thread_time()
        if rest <= 0 or now >= self.wall_until:
            return True
        self.until = _local.due = min(now + rest, self.wall_until)
        return False


class _Job:
    """One call of :meth:`RunScheduler.run`: its operation (or None) and its token state."""

    __slots__ = ("scheduler", "op", "holding", "ungated", "granted_at", "started_at", "queued_at", "event")

    def __init__(self, scheduler: RunScheduler, op: Any):
        self.scheduler = scheduler
        self.op = op  # tidemark.operations.Operation (check(), killed, deadline, parked) or None
        self.holding = False  # holds a run token (written under the scheduler's lock)
        self.ungated = False  # let through after close(): holds no counted token
        self.granted_at = 0.0  # when it got its current token
        self.started_at = 0.0  # when it first got one (a job older than a quantum is "long")
        self.queued_at = 0.0
        self.event: threading.Event | None = None

    def wake(self) -> None:
        """Make the waiting thread look at its state again (kill, close; any thread)."""
        event = self.event
        if event is not None:
            event.set()


class RunScheduler:
    """K run tokens shared by the pool's jobs (see the module docstring for the rules)."""

    def __init__(self, tokens: int = DEFAULT_TOKENS, quantum: float = DEFAULT_QUANTUM, *,
                 pinned: Callable[[], bool] | None = None, fresh_burst: int = DEFAULT_FRESH_BURST):
        if tokens < 1:
            raise ValueError("at least one run token")
        self.tokens = tokens
        self.quantum = quantum
        self.fresh_burst = fresh_burst
        self._fresh_streak = 0  # grants in a row to fresh jobs while a preempted one waited
        self.pinned = pinned  # True while this thread holds something others may wait for
        self._lock = threading.Lock()
        self._free = tokens
        self._fresh: deque[_Job] = deque()
        self._preempted: deque[_Job] = deque()
        self._closed = False
        self.grants = 0  # tokens given
        self.waits = 0  # grants that had to wait
        self.fresh_waits = 0  # ... of them, to fresh jobs (new requests: what a short request waits)
        self.fresh_wait_seconds = 0.0
        self.fresh_wait_max = 0.0
        self.yields = 0  # tokens given up at a checkpoint for a waiter
        self.releases = 0  # tokens handed on around GIL-free calls
        self.interrupted = 0  # waits ended by killOp, maxTimeMS or shutdown
        self.inline_runs = 0  # reads that ran inline on the event loop to the end (run_inline)
        self.inline_moves = 0  # inline runs stopped by their budget (or a GIL-free call): run in the pool
        self.inline_skips = 0  # reads sent straight to the pool: their kind is long (run_inline did not start them)
        # kind of read -> whether it stays in the pool whatever its cost (it met GIL-free C code inline);
        # absent: its inline run may be tried (run_inline, measured)
        self._pooled: dict[Any, bool] = {}

    # -- the pool thread's entry point ---------------------------------------------------------
    def run(self, op: Any, fn: Callable[[], T]) -> T:
        """``fn()`` holding a run token (on a pool thread). Waits for the token first; raises the
        operation's error instead if it is killed or times out meanwhile."""
        outer = _local.job
        if outer is not None and outer.holding:
            return fn()  # nested: the thread already runs with a token
        job = _Job(self, op)
        self._acquire(job, preempted=False)
        _local.job = job
        outer_due = _local.due
        _local.due = -math.inf
        try:
            return fn()
        finally:
            _local.job = outer
            _local.due = outer_due
            if job.holding:
                self._release(job)

    def run_inline(self, fn: Callable[..., T], budget: float, kind: Any = None, args: tuple[Any, ...] = ()) -> T:
        """``fn(*args)`` on this thread (the event loop's) holding no token, for at most ``budget``
        seconds of its CPU time (``args`` passed through: no partial to build per run): raises
        :class:`MoveToPool` at its first check past the budget, or when it would run GIL-free C code
        (:func:`released`); the caller then runs ``fn`` again in the pool, :meth:`measured`. A read
        of a ``kind`` (a hashable description, e.g. its command, namespace and size) whose last run
        took its budget or more, or that met GIL-free C code inline (see ``INLINE_MEMO_MAX``), does
        not start: :class:`MoveToPool` at once, counted in ``inline_skips``. Other exceptions are
        ``fn``'s own, as the pool would deliver them; a run that ends here, with a result or an
        exception, counts in ``inline_runs``. Loop thread only."""
        if kind in self._pooled:
            self.inline_skips += 1
            raise MoveToPool()
        outer = _local.inline
        inline = _local.inline = _Inline()
        inline.gil_free = False
        now = time.monotonic()
        outer_due = _local.due
        inline.until = _local.due = now + budget
        inline.wall_until = now + budget * INLINE_WALL_FACTOR
        inline.cpu_until = time.thread_time() + budget
        moved = False
        try:
            return fn(*args)
        except MoveToPool:
            moved = True
            self.inline_moves += 1
            if kind is not None:
                self._remember(kind, inline.gil_free)
            raise
        finally:
            _local.inline = outer
            _local.due = outer_due
            if not moved:
                self.inline_runs += 1

    def measured(self, kind: Any, budget: float, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on a pool thread — a read of ``kind`` that did not run inline — with its
        thread's CPU time learned: a budget or more keeps the kind in the pool, less lets its next
        read try inline again (unless it met GIL-free C code inline). Any thread."""
        start = time.thread_time()
        try:
            return fn(*args)
        finally:
            if time.thread_time() - start >= budget:
                self._remember(kind, False)
            elif self._pooled.get(kind) is False:
                self._pooled.pop(kind, None)  # (another run of the kind may have removed it)

    def _remember(self, kind: Any, stays: bool) -> None:
        pooled = self._pooled
        if kind not in pooled and len(pooled) >= INLINE_MEMO_MAX:
            pooled.clear()
        if stays or kind not in pooled:
            pooled[kind] = stays

    def close(self) -> None:
        """Shutdown: every waiter goes on (its operation was killed: it raises), nothing waits again."""
        with self._lock:
            self._closed = True
            waiting = [*self._fresh, *self._preempted]
        for job in waiting:
            job.wake()

    def stats(self) -> dict[str, int]:
        """The ``tidemark.scheduler`` serverStatus figures."""
        with self._lock:
            waiting = len(self._fresh) + len(self._preempted)
            holding = self.tokens - self._free
        return {"tokens": self.tokens, "quantumMicros": int(self.quantum * 1_000_000), "holding": holding,
                "waiting": waiting, "grants": self.grants, "waits": self.waits, "yields": self.yields,
                "releases": self.releases, "interrupted": self.interrupted, "freshWaits": self.fresh_waits,
                "freshWaitMicros": int(self.fresh_wait_seconds * 1_000_000),
                "freshWaitMaxMicros": int(self.fresh_wait_max * 1_000_000),
                "inlineRuns": self.inline_runs, "inlineMoves": self.inline_moves,
                "inlineSkips": self.inline_skips}

    # -- internals (the lock guards _free, the queues, job.holding, the counters) -------------
    def _acquire(self, job: _Job, *, preempted: bool) -> None:
        now = time.monotonic()
        with self._lock:
            if self._closed:
                job.holding = job.ungated = True
                return
            if self._free and not self._fresh and not self._preempted:
                self._free -= 1
                self._grant(job, now)
                return
            self._enqueue(job, preempted)
        self._wait(job)

    def _enqueue(self, job: _Job, preempted: bool) -> None:
        if job.event is None:
            job.event = threading.Event()
        job.queued_at = time.monotonic()
        (self._preempted if preempted else self._fresh).append(job)

    def _grant(self, job: _Job, now: float) -> None:
        job.holding = True
        job.granted_at = now
        if not job.started_at:
            job.started_at = now
        self.grants += 1

    def _next_waiter(self) -> _Job | None:
        preempted = self._preempted
        if not preempted:
            return self._fresh.popleft() if self._fresh else None
        if not self._fresh or self._fresh_streak >= self.fresh_burst:
            self._fresh_streak = 0
            return preempted.popleft()
        self._fresh_streak += 1
        return self._fresh.popleft()

    def _pass_on(self, now: float) -> None:
        """A token has been freed: give it to the next waiter, or keep it free."""
        nxt = self._next_waiter()
        if nxt is None:
            self._free += 1
            return
        self._grant(nxt, now)
        self.waits += 1
        if nxt.started_at == now:  # its first token: a fresh job
            waited = now - nxt.queued_at
            self.fresh_waits += 1
            self.fresh_wait_seconds += waited
            self.fresh_wait_max = max(self.fresh_wait_max, waited)
        nxt.event.set()  # type: ignore[union-attr]

    def _release(self, job: _Job) -> None:
        with self._lock:
            job.holding = False
            if job.ungated:
                job.ungated = False
                return
            self._pass_on(time.monotonic())

    def _wait(self, job: _Job) -> None:
        """Wait (queued) until ``job`` holds a token; raise the operation's error without it if the
        operation is killed or runs out of time first."""
        op = job.op
        event = job.event
        assert event is not None
        if op is not None:
            op.parked = job  # before looking at op.killed: a kill from now on wakes us
        try:
            while True:
                event.clear()
                with self._lock:
                    if job.holding:
                        return
                timeout = None
                if op is not None:
                    try:
                        _check_interrupted(op)
                    except BaseException:
                        with self._lock:
                            if job.holding:  # granted meanwhile: hand it on
                                job.holding = False
                                if job.ungated:
                                    job.ungated = False
                                else:
                                    self._pass_on(time.monotonic())
                            else:
                                self._unqueue(job)
                            self.interrupted += 1
                        raise
                    if op.deadline is not None:
                        timeout = max(0.0, op.deadline - time.monotonic())
                with self._lock:
                    if job.holding:
                        return
                    if self._closed:
                        self._unqueue(job)
                        job.holding = job.ungated = True
                        return
                event.wait(timeout)
        finally:
            if op is not None:
                op.parked = None

    def _unqueue(self, job: _Job) -> None:
        for queue in (self._fresh, self._preempted):
            try:
                queue.remove(job)
                return
            except ValueError:
                pass

    def _yield(self, job: _Job) -> None:
        """Checkpoint of a holder past its quantum: hand the token to a waiter, park, resume."""
        now = time.monotonic()
        with self._lock:
            if not self._fresh and not self._preempted:
                return  # the waiter went away
            job.holding = False
            self._pass_on(now)
            self._enqueue(job, True)
            self.yields += 1
        self._wait(job)

    def _released(self, job: _Job, fn: Callable[[], T]) -> T:
        with self._lock:
            job.holding = False
            self.releases += 1
            if job.ungated:
                job.ungated = False
            else:
                self._pass_on(time.monotonic())
        try:
            return fn()
        finally:
            self._acquire(job, preempted=time.monotonic() - job.started_at >= self.quantum)


def _check_interrupted(op: Any) -> None:
    """The operation's check (raises once killed or past its deadline). Never parks: the waiting
    job holds no token, so :func:`checkpoint` returns at once."""
    op.check()


def checkpoint() -> None:
    """The preemption point, called by ``Operation.check`` (from ``_local.due`` on): on a pool thread whose job has held its
    token for a quantum while others wait (and holds no read transaction), give the token to the next
    waiter and wait for it to come back. During an inline run past its budget: raise
    :class:`MoveToPool`. Anywhere else: nothing (a dictionary look-up)."""
    job = _local.job
    if job is None:
        inline = _local.inline
        if inline is not None and time.monotonic() >= inline.until and inline.spent():
            raise MoveToPool()
        return
    if not job.holding:
        return
    scheduler = job.scheduler
    if not scheduler._fresh and not scheduler._preempted:
        return
    if time.monotonic() - job.granted_at < scheduler.quantum:
        return
    if scheduler.pinned is not None and scheduler.pinned():
        return
    scheduler._yield(job)


def released(fn: Callable[[], T]) -> T:
    """``fn()`` — C code that runs with the GIL released (a regex match) — with this pool thread's run
    token handed on meanwhile and taken back after (waiting like any preempted job). Just ``fn()``
    off the pool, or while the thread holds a read transaction. During an inline run: raise
    :class:`MoveToPool` (such a call may be long or wait, and it would hold the event loop)."""
    job = _local.job
    if job is None or not job.holding:
        inline = _local.inline
        if job is None and inline is not None:
            inline.gil_free = True
            raise MoveToPool()
        return fn()
    scheduler = job.scheduler
    if scheduler.pinned is not None and scheduler.pinned():
        return fn()
    return scheduler._released(job, fn)
