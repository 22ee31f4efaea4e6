"""``scheduler.thread_state.due``: from when ``Operation.check`` calls the scheduler's preemption point
(``checkpoint``) on a thread. Never on a thread running neither a job nor an inline run; on every check in
a pool job; during an inline run from its ``until`` on, following it when ``_Inline.spent`` finds the
budget not spent yet — and restored as it was when a run ends, by a result or by ``MoveToPool``."""

from __future__ import annotations

import math
import time

import pytest

from tidemark import operations
from tidemark import scheduler as sched
from tidemark.operations import Operation
from tidemark.scheduler import MoveToPool, RunScheduler


def _op() -> Operation:
    return Operation(1, None, "find", {}, "db.c", None)


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The calls ``Operation.check`` makes of ``checkpoint`` (counted, then made)."""
    calls = [0]

    def checkpoint() -> None:
        calls[0] += 1
        sched.checkpoint()

    monkeypatch.setattr(operations, "checkpoint", checkpoint)
    return calls


def test_no_run_no_checkpoint_call(counted: list[int]) -> None:
    operation = _op()
    assert sched.thread_state.due == math.inf
    for _ in range(100):
        operation.check()
    assert counted[0] == 0


def test_a_pool_job_calls_it_at_every_check_and_restores_due(counted: list[int]) -> None:
    operation = _op()
    scheduler = RunScheduler()

    def work() -> float:
        for _ in range(10):
            operation.check()
        return sched.thread_state.due

    assert scheduler.run(operation, work) == -math.inf
    assert counted[0] == 10 and sched.thread_state.due == math.inf


def test_an_inline_run_calls_it_from_until_on_and_due_follows_until(counted: list[int]) -> None:
    operation = _op()
    scheduler = RunScheduler()
    seen: list[tuple[float, float]] = []

    def work() -> None:
        inline = sched.thread_state.inline
        assert inline is not None and sched.thread_state.due == inline.until
        operation.check()  # (well before the budget's end)
        assert counted[0] == 0
        inline.until = sched.thread_state.due = time.monotonic() - 1.0  # as if the wall clock passed it
        operation.check()
        assert counted[0] == 1  # the budget may be spent: asked, it is not (1 s of CPU); ``until`` moves on
        seen.append((inline.until, sched.thread_state.due))
        operation.check()
        assert counted[0] == 1
        inline.cpu_until = 0.0  # its CPU time spent
        inline.until = sched.thread_state.due = time.monotonic() - 1.0
        operation.check()  # moves

    with pytest.raises(MoveToPool):
        scheduler.run_inline(work, 1.0)
    (until, due), = seen
    assert until == due and until > time.monotonic()
    assert sched.thread_state.due == math.inf and sched.thread_state.inline is None
    assert scheduler.run_inline(lambda: sched.thread_state.due, 1.0) < math.inf
    assert sched.thread_state.due == math.inf
