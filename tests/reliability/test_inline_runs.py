"""Inline runs of the run-token scheduler (``RunScheduler.run_inline``, server/scheduler.py), with real
operations and a real storage engine: a run within its budget returns (or raises its own error); at
its first check past the budget — or before a GIL-free call — it raises ``MoveToPool``, which passes
through ``except Exception``, closes the read transaction it unwinds through, and leaves the thread's
checks as they were; a kind of read goes straight to the pool while its last run — inline or measured in
the pool — took the budget or more, and for good once it met GIL-free C code inline; a pool job's checks
on another thread are untouched by an inline run."""

from __future__ import annotations

import threading
import time

import pytest

from tidemark import scheduler as sched
from tidemark.operations import Operation
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query import interrupt
from tidemark.scheduler import INLINE_MEMO_MAX, MoveToPool, RunScheduler


def op(deadline: float | None = None) -> Operation:
    return Operation(1, None, "find", {}, "db.c", deadline)


def starts_inline(scheduler: RunScheduler, kind: object) -> bool:
    """Whether ``run_inline`` starts a read of ``kind`` (a kind that stays in the pool: ``MoveToPool``
    before the work runs, counted as a skip)."""
    ran: list[bool] = []
    try:
        scheduler.run_inline(ran.append, 1.0, kind, (True,))
    except MoveToPool:
        assert ran == []
        return False
    assert ran == [True]
    return True


def spin(operation: Operation, seconds: float):
    """Work checking its operation, busy (CPU) for ``seconds`` of this thread's time."""
    def work():
        end = time.thread_time() + seconds
        checks = 0
        while time.thread_time() < end:
            operation.check()
            checks += 1
        return checks
    return work


def test_a_run_within_its_budget_returns_and_counts_inline():
    scheduler = RunScheduler()
    operation = op()
    assert scheduler.run_inline(lambda: interrupt.running(operation, spin(operation, 0.001)), 1.0) > 0
    assert scheduler.stats()["inlineRuns"] == 1 and scheduler.stats()["inlineMoves"] == 0


def test_a_check_past_the_budget_moves_and_the_thread_checks_as_before():
    scheduler = RunScheduler()
    operation = op()
    with pytest.raises(MoveToPool):
        scheduler.run_inline(spin(operation, 1.0), 0.002)
    assert scheduler.stats()["inlineMoves"] == 1 and scheduler.stats()["inlineRuns"] == 0
    for _ in range(1000):  # no inline run any more: the loop's checks never raise it
        operation.check()


def test_its_own_errors_come_out_unchanged_and_the_thread_checks_as_before():
    scheduler = RunScheduler()
    killed = op()
    killed.kill()
    with pytest.raises(MongoError) as err:
        scheduler.run_inline(spin(killed, 1.0), 1.0)
    assert err.value.code == ErrorCode.Interrupted
    expired = op(deadline=time.monotonic() + 0.002)
    with pytest.raises(MongoError) as err:
        scheduler.run_inline(spin(expired, 1.0), 1.0)
    assert err.value.code == ErrorCode.MaxTimeMSExpired
    assert scheduler.stats()["inlineRuns"] == 2 and scheduler.stats()["inlineMoves"] == 0
    assert sched._local.inline is None


def test_the_move_passes_through_except_exception_and_runs_finally_blocks():
    scheduler = RunScheduler()
    operation = op()
    cleaned: list[str] = []

    def work():
        try:
            spin(operation, 1.0)()
        except Exception:  # noqa: BLE001 - what the work's own handlers look like
            cleaned.append("swallowed")
        finally:
            cleaned.append("finally")

    with pytest.raises(MoveToPool):
        scheduler.run_inline(work, 0.001)
    assert cleaned == ["finally"]


def test_a_read_transaction_open_when_the_run_moves_is_closed(tmp_path):
    from tidemark.storage.engine import open_engine

    engine = open_engine(str(tmp_path / "db"))
    try:
        engine.interrupt_check = interrupt.check
        scheduler = RunScheduler(pinned=engine.reading)
        operation = op()

        def read():
            with engine.read():
                assert engine.reading()
                spin(operation, 1.0)()

        with pytest.raises(MoveToPool):
            scheduler.run_inline(lambda: interrupt.running(operation, read), 0.001)
        assert not engine.reading()
        # a new read's own check (engine.interrupt_check) moves a run past its budget before it opens
        with pytest.raises(MoveToPool):
            scheduler.run_inline(lambda: interrupt.running(operation, lambda: (spin(operation, 0.002)(), engine.read())),
                                 0.001)
        assert not engine.reading()
    finally:
        engine.close()


def test_a_gil_free_call_moves_the_run_before_it_starts():
    scheduler = RunScheduler()
    operation = op()
    called: list[int] = []
    with pytest.raises(MoveToPool):
        scheduler.run_inline(lambda: interrupt.running(operation, lambda: interrupt.gil_released(called.append, 1)),
                             10.0)
    assert called == []
    assert interrupt.gil_released(called.append, 2) is None and called == [2]  # off an inline run: a call


def test_a_kind_goes_to_the_pool_while_its_last_run_took_the_budget_wherever_it_ran():
    scheduler = RunScheduler()
    operation = op()
    budget = 0.0005
    with pytest.raises(MoveToPool):  # a slow first read (cold) moves
        scheduler.run_inline(spin(operation, 1.0), budget, kind="k")
    assert not starts_inline(scheduler, "k") and scheduler.stats()["inlineSkips"] == 1
    assert starts_inline(scheduler, "other")  # other kinds are not concerned
    # its run in the pool measures it long: the next read goes straight to the pool too
    assert scheduler.measured("k", budget, spin(operation, 2 * budget)) > 0
    assert not starts_inline(scheduler, "k")
    # a pool run measures it short: the next read runs inline again, and is kept there
    assert scheduler.measured("k", budget, lambda x: x + 1, 41) == 42
    assert starts_inline(scheduler, "k")
    assert scheduler.run_inline(lambda: "short", budget, kind="k") == "short"
    assert starts_inline(scheduler, "k")
    # a pool run that raises is measured all the same
    def failing_long():
        spin(operation, 2 * budget)()
        raise MongoError(ErrorCode.BadValue, "no")
    with pytest.raises(MongoError):
        scheduler.measured("k", budget, failing_long)
    assert not starts_inline(scheduler, "k")
    assert scheduler.stats()["inlineSkips"] == 3 and scheduler.stats()["inlineMoves"] == 1


def test_a_kind_that_met_gil_free_code_inline_stays_in_the_pool_however_short_its_runs():
    scheduler = RunScheduler()
    operation = op()
    with pytest.raises(MoveToPool):
        scheduler.run_inline(lambda: interrupt.running(operation, lambda: interrupt.gil_released(len, "x")),
                             10.0, kind="regex")
    for _ in range(3):
        assert scheduler.measured("regex", 10.0, lambda: "quick") == "quick"
        assert not starts_inline(scheduler, "regex")
    # nor does a long pool run make it forget why it stays
    scheduler.measured("regex", 0.0, lambda: None)
    assert not starts_inline(scheduler, "regex")


def test_the_kinds_remembered_are_bounded():
    scheduler = RunScheduler()
    for i in range(INLINE_MEMO_MAX + 10):
        scheduler.measured(("find", i), 0.0, lambda: None)  # a zero budget: every run is long
    assert len(scheduler._pooled) <= INLINE_MEMO_MAX
    assert not starts_inline(scheduler, ("find", INLINE_MEMO_MAX + 9))  # the latest is remembered


def test_a_pool_job_on_another_thread_is_untouched_by_an_inline_run():
    scheduler = RunScheduler(tokens=1)
    pool_op = op()
    results: list[object] = []
    inside = threading.Event()
    go = threading.Event()

    def pool_work():
        inside.set()
        go.wait(10)
        return spin(pool_op, 0.01)()

    def pool_thread():
        try:
            results.append(scheduler.run(pool_op, pool_work))
        except BaseException as exc:  # noqa: BLE001 - inspected below
            results.append(exc)

    thread = threading.Thread(target=pool_thread, daemon=True)
    thread.start()
    assert inside.wait(10)

    def inline_work():
        go.set()
        time.sleep(0.05)  # the pool job runs its checks meanwhile (on its own thread)
        return "inline"

    assert scheduler.run_inline(inline_work, 0.0001) == "inline"  # no check here: never moved
    thread.join(10)
    assert isinstance(results[0], int) and results[0] > 0
