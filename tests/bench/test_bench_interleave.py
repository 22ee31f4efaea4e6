"""``python -m bench --interleave`` (bench.harness.Interleaver): systems load one after the other, wait
loaded, then every query instance runs on each system in turn (rotating which goes first), each timed run
answering what its check answered; a system that ends before loading does not hold the others, one that
cannot express a query is n/a for it alone, and a wrong answer stops the query phase loudly."""

from __future__ import annotations

import threading

import pytest

from bench.generator import generate
from bench.harness import Context, Interleaver, NotExpressible, SystemResult, check_and_time
from bench.queries import ResultMismatch


def _ctx(tmp_path, queries=("lastpoint", "high-cpu-1"), runs=4) -> Context:
    ctx = Context(generate(3, 3600, 7), tmp_path / "f", tmp_path, list(queries), runs, 1, 1, pin=False,
                  progress=False)
    ctx.interleave = Interleaver(ctx)
    return ctx


def _system(ctx: Context, name: str, log: list, results: dict, *, wrong: bool = False,
            cannot: str | None = None, fails_loading: bool = False):
    """A fake system's whole run: load, then the query phase (check_and_time), then stop."""
    def execute(query, p):
        if query == cannot:
            raise NotExpressible("not here")
        log.append((name, query, p))
        return (query, p)

    def normalize(query, raw):
        expected = ctx.checker.expected(*raw)
        return expected[:-1] if wrong and query == "lastpoint" else expected

    def run() -> None:
        log.append((name, "loading", threading.current_thread().name))
        if fails_loading:  # a peer records its failure and returns
            results[name] = SystemResult(name, "fake", errors=["cannot start"])
            return
        result = results[name] = SystemResult(name, "fake")
        check_and_time(ctx, name, execute, normalize, result)
        log.append((name, "stopped", None))
    return run


def test_systems_load_in_turn_and_every_instance_runs_on_each_in_turn(tmp_path):
    ctx = _ctx(tmp_path)
    log: list = []
    results: dict = {}
    threads = [ctx.interleave.begin(_system(ctx, name, log, results)) for name in ("a", "b", "c")]
    # each started only once the previous one was loaded and waiting: nothing queried yet, none stopped
    assert [entry[1] for entry in log] == ["loading"] * 3
    ctx.interleave.run_queries()
    ctx.interleave.release()
    for thread in threads:
        thread.join(10)
    assert sorted(entry[:2] for entry in log[-3:]) == [("a", "stopped"), ("b", "stopped"), ("c", "stopped")]
    for query in ctx.queries:
        runs = [(name, p) for name, q, p in log if q == query]
        n = ctx.runs
        checks, timed = runs[:3 * n], runs[3 * n:]
        assert [name for name, _ in checks] == ["a"] * n + ["b"] * n + ["c"] * n  # the check pass: each its own
        assert len(timed) == 3 * n
        for i in range(n):  # instance i on every system, the first one rotating
            turn = timed[3 * i:3 * i + 3]
            assert {p for _, p in turn} == {ctx.params[query][i]}
            assert [name for name, _ in turn] == (["a", "b", "c"] * 2)[i % 3:i % 3 + 3]
    for name in "abc":
        assert set(results[name].queries) == set(ctx.queries)
        assert results[name].queries["lastpoint"]["runs"] == ctx.runs == results[name].queries["lastpoint"]["planned"]


def test_a_system_that_ends_before_loading_holds_no_one_and_a_query_it_cannot_express_is_its_own(tmp_path):
    ctx = _ctx(tmp_path)
    log: list = []
    results: dict = {}
    threads = [ctx.interleave.begin(_system(ctx, "broken", log, results, fails_loading=True)),
               ctx.interleave.begin(_system(ctx, "partial", log, results, cannot="high-cpu-1")),
               ctx.interleave.begin(_system(ctx, "full", log, results))]
    assert [q.system for q in ctx.interleave.arrived] == ["partial", "full"]
    ctx.interleave.run_queries()
    ctx.interleave.release()
    for thread in threads:
        thread.join(10)
    assert results["broken"].queries == {} and results["broken"].errors == ["cannot start"]
    assert set(results["partial"].queries) == {"lastpoint"} and "high-cpu-1" in results["partial"].not_expressible
    assert set(results["full"].queries) == {"lastpoint", "high-cpu-1"}


def test_a_wrong_answer_stops_the_query_phase_and_the_systems_still_end(tmp_path):
    ctx = _ctx(tmp_path)
    log: list = []
    results: dict = {}
    threads = [ctx.interleave.begin(_system(ctx, "good", log, results)),
               ctx.interleave.begin(_system(ctx, "liar", log, results, wrong=True))]
    with pytest.raises(ResultMismatch, match="liar: wrong result for lastpoint"):
        ctx.interleave.run_queries()
    ctx.interleave.release()
    for thread in threads:
        thread.join(10)
        assert not thread.is_alive()
    assert ("good", "stopped", None) in log and ("liar", "stopped", None) in log
