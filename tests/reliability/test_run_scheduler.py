"""The run-token scheduler (server/scheduler.py), with plain threads and real operations: at most K
jobs run, waiters are served FIFO with fresh jobs ahead of preempted ones, a holder past its quantum
yields at its interruption check to a waiter (never otherwise), killOp / maxTimeMS / shutdown end a
wait at once, an exception always gives the token back, and nothing waits off the pool or while the
thread holds a read transaction."""

from __future__ import annotations

import threading
import time

import pytest

from tidemark import scheduler as sched
from tidemark.operations import Operation
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query import interrupt
from tidemark.scheduler import RunScheduler

WAIT = 10.0  # generous bound for "promptly" on a loaded machine; the failures are "never"


def op(deadline: float | None = None) -> Operation:
    return Operation(1, None, "find", {}, "db.c", deadline)


def until(predicate, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition never became true"
        time.sleep(0.001)


class Job:
    """``scheduler.run(operation, fn)`` on its own thread; ``error`` is what it raised."""

    def __init__(self, scheduler: RunScheduler, fn, operation: Operation | None = None):
        self.result = None
        self.error: BaseException | None = None
        self.op = operation
        self.thread = threading.Thread(target=self._run, args=(scheduler, fn), daemon=True)
        self.thread.start()

    def _run(self, scheduler, fn):
        try:
            self.result = scheduler.run(self.op, lambda: interrupt.running(self.op, fn))
        except BaseException as exc:  # noqa: BLE001 - inspected by the test
            self.error = exc

    def join(self) -> Job:
        self.thread.join(WAIT)
        assert not self.thread.is_alive(), "the job never finished"
        return self


def blocker(scheduler: RunScheduler) -> tuple[Job, threading.Event]:
    """A job holding a token without ever reaching a check, until the event is set."""
    release = threading.Event()
    holding = scheduler.stats()["holding"]
    job = Job(scheduler, release.wait)
    until(lambda: scheduler.stats()["holding"] == holding + 1)
    return job, release


def spinner(stop: threading.Event, operation: Operation):
    """Work of a long operation: a loop reaching its interruption check, until ``stop``."""
    def spin():
        while not stop.is_set():
            operation.check()
    return spin


def test_at_most_k_jobs_hold_a_token_and_waiters_start_in_arrival_order():
    scheduler = RunScheduler(tokens=2)
    first, release_first = blocker(scheduler)
    second, release_second = blocker(scheduler)
    order: list[int] = []
    waiters = []
    for i in range(5):
        waiters.append(Job(scheduler, lambda i=i: order.append(i), op()))
        until(lambda i=i: scheduler.stats()["waiting"] == i + 1)
    assert scheduler.stats()["holding"] == 2 and order == []
    release_first.set()  # one token goes round the waiters, one at a time: their order shows
    for job in (first, *waiters):
        assert job.join().error is None
    assert order == [0, 1, 2, 3, 4]
    release_second.set()
    second.join()
    stats = scheduler.stats()
    assert stats["holding"] == 0 and stats["waiting"] == 0 and stats["waits"] == 5


def test_a_long_holder_yields_to_a_waiter_after_its_quantum():
    scheduler = RunScheduler(tokens=1, quantum=0.02)
    stop = threading.Event()
    long = Job(scheduler, spinner(stop, op()), op())
    until(lambda: scheduler.stats()["holding"] == 1)
    time.sleep(0.1)
    assert scheduler.stats()["yields"] == 0  # nobody waiting: it keeps its token past the quantum
    short = Job(scheduler, lambda: "answered", op()).join()
    assert short.result == "answered" and long.thread.is_alive()  # answered while the long one runs
    assert scheduler.stats()["yields"] >= 1
    stop.set()
    assert long.join().error is None


def _turns(fresh_burst: int) -> list[str]:
    """Job A is preempted by B; fresh job F arrives; B reaches its check: who runs next, F or A?"""
    scheduler = RunScheduler(tokens=1, quantum=0.0, fresh_burst=fresh_burst)  # quantum 0: yield at any check
    log: list[str] = []
    step_a, step_b = threading.Event(), threading.Event()
    op_a, op_b = op(), op()

    def a():
        step_a.wait(WAIT)
        op_a.check()  # B waits: A yields and parks
        log.append("A resumed")

    def b():
        log.append("B")
        step_b.wait(WAIT)
        op_b.check()  # A (preempted) and F (fresh) wait: B yields to one of them
        log.append("B resumed")

    job_a = Job(scheduler, a, op_a)
    until(lambda: scheduler.stats()["holding"] == 1)
    job_b = Job(scheduler, b, op_b)
    until(lambda: scheduler.stats()["waiting"] == 1)
    step_a.set()
    until(lambda: log == ["B"])
    job_f = Job(scheduler, lambda: log.append("F"), op())
    until(lambda: scheduler.stats()["waiting"] == 2)
    step_b.set()
    for job in (job_a, job_b, job_f):
        assert job.join().error is None
    assert scheduler.stats()["yields"] == 2
    return log


def test_a_fresh_job_goes_ahead_of_preempted_ones():
    # FIFO over every waiter would resume A (queued first) before F
    assert _turns(fresh_burst=8) == ["B", "F", "A resumed", "B resumed"]


def test_a_preempted_job_goes_first_after_a_burst_of_fresh_ones():
    # fresh_burst 0: no fresh job may pass a waiting preempted one (the bound that keeps long jobs
    # going under a flood of short ones)
    assert _turns(fresh_burst=0) == ["B", "A resumed", "B resumed", "F"]


def test_no_more_than_fresh_burst_fresh_jobs_pass_a_preempted_one():
    scheduler = RunScheduler(tokens=1, quantum=0.0, fresh_burst=3)
    log: list[str] = []
    step, step_holder = threading.Event(), threading.Event()
    long_op = op()

    def long():
        step.wait(WAIT)
        long_op.check()  # parks behind the fresh ones
        log.append("long")

    job = Job(scheduler, long, long_op)
    until(lambda: scheduler.stats()["holding"] == 1)
    holder = Job(scheduler, lambda: (log.append("holder"), step_holder.wait(WAIT), op().check()), None)
    until(lambda: scheduler.stats()["waiting"] == 1)
    step.set()  # the long job yields to the holder and parks (preempted)
    until(lambda: log == ["holder"])
    fresh = []
    for i in range(5):
        fresh.append(Job(scheduler, lambda i=i: log.append(f"fresh{i}"), op()))
        until(lambda i=i: scheduler.stats()["waiting"] == i + 2)
    step_holder.set()
    for j in (job, holder, *fresh):
        assert j.join().error is None
    assert log == ["holder", "fresh0", "fresh1", "fresh2", "long", "fresh3", "fresh4"]


def test_kill_ends_the_wait_of_a_queued_operation_at_once():
    scheduler = RunScheduler(tokens=1)
    holder, release = blocker(scheduler)
    queued = Job(scheduler, lambda: "ran", op())
    until(lambda: scheduler.stats()["waiting"] == 1)
    started = time.monotonic()
    queued.op.kill()
    queued.join()
    assert isinstance(queued.error, MongoError) and queued.error.code == ErrorCode.Interrupted
    assert queued.result is None and time.monotonic() - started < WAIT
    stats = scheduler.stats()
    assert stats["waiting"] == 0 and stats["holding"] == 1 and stats["interrupted"] == 1
    release.set()
    holder.join()
    assert scheduler.stats()["holding"] == 0


def test_kill_wakes_a_parked_operation_while_another_holds_the_token():
    scheduler = RunScheduler(tokens=1, quantum=0.01)
    stop = threading.Event()
    parked_op = op()
    long = Job(scheduler, spinner(stop, parked_op), parked_op)
    until(lambda: scheduler.stats()["holding"] == 1)
    release = threading.Event()
    other = Job(scheduler, release.wait, op())  # takes the token at the long job's next check, keeps it
    until(lambda: parked_op.parked is not None and scheduler.stats()["yields"] == 1)
    parked_op.kill()
    long.join()
    assert isinstance(long.error, MongoError) and long.error.code == ErrorCode.Interrupted
    assert other.thread.is_alive() and scheduler.stats()["holding"] == 1
    release.set()
    assert other.join().error is None
    assert scheduler.stats()["holding"] == 0 and scheduler.stats()["waiting"] == 0


def test_max_time_ms_ends_a_wait_for_a_token():
    scheduler = RunScheduler(tokens=1)
    holder, release = blocker(scheduler)
    started = time.monotonic()
    queued = Job(scheduler, lambda: "ran", op(deadline=started + 0.2)).join()
    assert isinstance(queued.error, MongoError) and queued.error.code == ErrorCode.MaxTimeMSExpired
    assert 0.19 <= time.monotonic() - started < WAIT
    release.set()
    holder.join()


def test_an_exception_gives_the_token_back():
    scheduler = RunScheduler(tokens=1, quantum=0.0)

    def fail():
        raise ValueError("boom")

    with pytest.raises(ValueError):
        scheduler.run(op(), fail)
    assert scheduler.stats()["holding"] == 0
    # and after a park: the job yields (quantum 0, a waiter), resumes, then fails
    first = threading.Event()

    def park_then_fail():
        first.set()
        until(lambda: scheduler.stats()["waiting"] == 1)
        interrupt.current().check()  # parks: the waiter runs, then the token comes back
        raise ValueError("after the park")

    failing = Job(scheduler, park_then_fail, op())
    first.wait(WAIT)
    waiter = Job(scheduler, lambda: "ran", op()).join()
    failing.join()
    assert waiter.result == "ran" and isinstance(failing.error, ValueError)
    assert scheduler.stats()["holding"] == 0 and scheduler.stats()["yields"] == 1
    assert scheduler.run(op(), lambda: "free") == "free"


def test_checks_off_the_pool_and_inside_read_transactions_never_park():
    reading = threading.local()
    scheduler = RunScheduler(tokens=1, quantum=0.0, pinned=lambda: getattr(reading, "yes", False))
    holder, release = blocker(scheduler)
    Job(scheduler, lambda: None, op())
    until(lambda: scheduler.stats()["waiting"] == 1)
    loop_op = op()
    started = time.monotonic()
    for _ in range(1000):  # the event loop's checks (no job on this thread): never wait
        loop_op.check()
    assert sched.released(lambda: "direct") == "direct"
    assert time.monotonic() - started < WAIT and scheduler.stats()["yields"] == 0
    release.set()
    holder.join()

    # a holder past its quantum with a waiter, but inside a read transaction: keeps its token
    inside = threading.Event()
    proceed = threading.Event()

    def in_read():
        reading.yes = True
        inside.set()
        proceed.wait(WAIT)
        for _ in range(100):
            interrupt.current().check()
        assert sched.released(lambda: "kept") == "kept"
        reading.yes = False
        return scheduler.stats()["yields"]

    job = Job(scheduler, in_read, op())
    inside.wait(WAIT)
    waiter = Job(scheduler, lambda: None, op())
    until(lambda: scheduler.stats()["waiting"] == 1)
    proceed.set()
    assert job.join().result == 0
    assert waiter.join().error is None


def test_released_hands_the_token_on_during_a_gil_free_call():
    scheduler = RunScheduler(tokens=1)
    in_c = threading.Event()
    leave_c = threading.Event()

    def c_call():
        in_c.set()
        leave_c.wait(WAIT)
        return "matched"

    regex = Job(scheduler, lambda: interrupt.gil_released(c_call), op())
    in_c.wait(WAIT)
    assert scheduler.stats()["holding"] == 0  # the token went back while in C
    assert Job(scheduler, lambda: "ran", op()).join().result == "ran"
    leave_c.set()
    assert regex.join().result == "matched"
    assert scheduler.stats()["releases"] == 1 and scheduler.stats()["holding"] == 0


def test_close_lets_every_waiter_through_and_killed_operations_raise():
    scheduler = RunScheduler(tokens=1)
    holder, release = blocker(scheduler)
    background = Job(scheduler, lambda: "ran")  # work of no operation (e.g. a large frame's decoding)
    killed_op = op()
    killed = Job(scheduler, lambda: "ran", killed_op)
    until(lambda: scheduler.stats()["waiting"] == 2)
    killed_op.kill(ErrorCode.InterruptedAtShutdown)
    scheduler.close()
    assert background.join().result == "ran"
    assert killed.join().error.code == ErrorCode.InterruptedAtShutdown
    assert scheduler.run(None, lambda: "after close") == "after close"
    release.set()
    holder.join()
