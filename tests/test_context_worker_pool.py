"""The server's thread pool (``tidemark.context.WorkerPool``): every job runs once on a pool thread;
an idle thread is reused before a new one starts; at most ``max_threads`` run at once, the rest wait
in order; a job that raises is logged and its thread goes on; shutdown runs what is queued, ends the
threads and refuses new jobs. And ``run_in_pool`` over it: a result or an exception comes back to
the awaiting command."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from tidemark.context import PoolInbox, WorkerPool, run_in_pool
from tidemark.protocol.errors import ErrorCode, MongoError


def _wait_for(predicate, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def test_every_job_runs_once_on_a_pool_thread():
    pool = WorkerPool(4, thread_name_prefix="t-pool")
    seen: list[tuple[int, str]] = []
    lock = threading.Lock()

    def job(i: int) -> None:
        with lock:
            seen.append((i, threading.current_thread().name))

    try:
        for i in range(500):
            pool.submit(job, i)
        _wait_for(lambda: len(seen) == 500)
        assert sorted(i for i, _ in seen) == list(range(500))
        assert all(name.startswith("t-pool_") for _, name in seen)
    finally:
        pool.shutdown()


def test_an_idle_thread_is_reused_before_a_new_one_starts():
    pool = WorkerPool(8)
    done = threading.Event()
    try:
        for _ in range(50):
            done.clear()
            pool.submit(done.set)
            assert done.wait(5)
            time.sleep(0.001)  # the thread goes back to waiting
        assert len(pool._threads) <= 2
    finally:
        pool.shutdown()


def test_at_most_max_threads_run_and_the_others_wait_in_order():
    pool = WorkerPool(2)
    gate = threading.Event()
    running = []
    order: list[int] = []
    lock = threading.Lock()

    def job(i: int) -> None:
        with lock:
            running.append(i)
        gate.wait(10)
        with lock:
            order.append(i)

    try:
        for i in range(6):
            pool.submit(job, i)
        _wait_for(lambda: len(running) == 2)
        time.sleep(0.05)
        assert len(running) == 2 and len(pool._threads) == 2  # the other four are queued
        gate.set()
        _wait_for(lambda: len(order) == 6)
        assert running[2:] == [2, 3, 4, 5]  # started in the order submitted
    finally:
        pool.shutdown()


def test_a_job_that_raises_is_logged_and_its_thread_goes_on():
    pool = WorkerPool(1)
    done = threading.Event()

    def bad() -> None:
        raise ValueError("boom")

    try:
        pool.submit(bad)
        pool.submit(done.set)
        assert done.wait(5)
        assert len(pool._threads) == 1
    finally:
        pool.shutdown()


def test_shutdown_runs_the_queued_jobs_then_ends_the_threads_and_refuses_more():
    pool = WorkerPool(1)
    gate = threading.Event()
    ran: list[int] = []
    pool.submit(gate.wait, 10)
    for i in range(3):
        pool.submit(ran.append, i)
    gate.set()
    pool.shutdown(wait=True)
    assert ran == [0, 1, 2]
    assert not any(thread.is_alive() for thread in pool._threads)
    with pytest.raises(RuntimeError):
        pool.submit(ran.append, 9)


class _State:  # what run_in_pool reads of the server state
    def __init__(self, pool: WorkerPool):
        from tidemark.scheduler import RunScheduler

        self.executor = pool
        self.scheduler = RunScheduler(2)
        self.pool_inbox = None


async def test_run_in_pool_returns_the_result_or_raises_the_jobs_error():
    pool = WorkerPool(2)
    state = _State(pool)
    try:
        value, name = await run_in_pool(state, None, lambda a, b: (a + b, threading.current_thread().name), 2, 3)
        assert value == 5 and name.startswith("tidemark-worker_")

        def fails() -> None:
            raise MongoError(ErrorCode.BadValue, "bad")

        with pytest.raises(MongoError) as err:
            await run_in_pool(state, None, fails)
        assert err.value.code == ErrorCode.BadValue
        results = await asyncio.gather(*(run_in_pool(state, None, lambda i=i: i * i) for i in range(50)))
        assert results == [i * i for i in range(50)]
    finally:
        pool.shutdown()


def test_a_job_returning_a_callable_has_it_called_once_its_thread_counts_as_idle():
    """A job's delivery runs after its thread is back in the idle count: the loop it wakes may submit
    the next job before the thread gets further, and that job must not start a second thread."""
    pool = WorkerPool(4)
    idle_at_delivery: list[int] = []
    try:
        pool.submit(lambda: lambda: idle_at_delivery.append(len(pool._idle)))
        _wait_for(lambda: idle_at_delivery)
        assert idle_at_delivery == [1]
        for _ in range(20):  # sequential hand-offs, each submitted in answer to the last delivery
            delivered = threading.Event()
            pool.submit(lambda delivered=delivered: delivered.set)
            assert delivered.wait(5)
        assert len(pool._threads) == 1
    finally:
        pool.shutdown()


async def test_run_in_pool_wakes_the_loop_with_the_gil_released_not_by_call_soon_threadsafe(monkeypatch):
    """call_soon_threadsafe wakes the loop while the pool thread holds the GIL (the woken loop then
    waits for it: two more context switches per hand-off); run_in_pool's delivery uses the server's
    PoolInbox, whose pipe write releases the GIL."""
    loop = asyncio.get_running_loop()

    def refuse(*_args, **_kwargs):
        raise AssertionError("call_soon_threadsafe used")

    monkeypatch.setattr(loop, "call_soon_threadsafe", refuse)
    pool = WorkerPool(2)
    state = _State(pool)
    try:
        assert await asyncio.wait_for(run_in_pool(state, None, lambda: 7), 5) == 7
        assert state.pool_inbox is not None and state.pool_inbox.loop is loop
    finally:
        pool.shutdown()


def test_inbox_delivers_every_outcome_when_its_pipe_fills():
    """More outcomes posted (from another thread) than the wake-up pipe holds bytes for (64 KiB on
    Linux) before the loop runs: the writes past a full pipe are dropped, and every outcome is still
    delivered, in order, with each exception as an exception."""
    async def main() -> None:
        loop = asyncio.get_running_loop()
        inbox = PoolInbox(loop)
        count = 100_000
        futures = [loop.create_future() for _ in range(count)]

        def post_all() -> None:
            for i, fut in enumerate(futures):
                if i % 1000 == 999:
                    inbox.post(fut, False, ValueError(i))
                else:
                    inbox.post(fut, True, i)

        poster = threading.Thread(target=post_all)
        poster.start()
        poster.join()  # every post made while the loop sleeps in this thread: the pipe overflows
        results = await asyncio.wait_for(asyncio.gather(*futures, return_exceptions=True), 10)
        for i, got in enumerate(results):
            if i % 1000 == 999:
                assert isinstance(got, ValueError) and got.args == (i,)
            else:
                assert got == i

    asyncio.run(main())
