"""The query set: seeded parameters, the naive checker on hand-made rows, and loud result comparison."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pytest

from bench.generator import START_MS, Dataset, generate, make_tags
from bench.harness import Context, SystemResult, check_and_time, ingest_stats
from bench.naive import NaiveChecker
from bench.queries import (
    QUERY_TYPES,
    Params,
    ResultMismatch,
    compare,
    datetime_to_ms,
    make_params,
    ms_to_datetime,
    normalize_mongo,
    pipeline,
)

MIN = 60_000


def tiny_dataset() -> Dataset:
    """2 hosts x 8 ticks (80 s). usage_user of host_0 climbs 88..95, host_1 is 10 + tick; others = host."""
    values = np.zeros((8, 2, 10), dtype=np.uint8)
    for t in range(8):
        values[t, 0, :] = 0
        values[t, 1, :] = 1
        values[t, 0, 0] = 88 + t
        values[t, 1, 0] = 10 + t
    return Dataset(2, 80, 0, make_tags(2, 0), values)


def test_windows_are_seeded_and_inside_the_data():
    ds = generate(30, 86400, 1)
    a = make_params("double-groupby-1", ds, 7, 20)
    assert a == make_params("double-groupby-1", ds, 7, 20)
    assert a != make_params("double-groupby-1", ds, 8, 20)
    for p in a:
        assert START_MS <= p.start_ms and p.end_ms <= ds.end_ms and p.end_ms - p.start_ms == 12 * 3600_000
    for p in make_params("single-groupby-5-8-1", ds, 7, 20):
        assert len(set(p.hosts)) == 8


def test_windows_shrink_to_the_data_when_it_is_shorter():
    ds = generate(3, 1800, 1)
    for p in make_params("cpu-max-all-8", ds, 1, 5):
        assert (p.start_ms, p.end_ms) == (START_MS, ds.end_ms)


def test_naive_max_by_minute_for_one_host():
    ds = tiny_dataset()
    p = Params(START_MS + 5_000, START_MS + 75_000, ("host_0",))  # ticks 1..7
    assert NaiveChecker(ds).expected("single-groupby-1-1-1", p) == [
        (START_MS, (93.0,)),
        (START_MS + MIN, (95.0,)),
    ]


def test_naive_double_groupby_averages_per_hour_and_host():
    ds = tiny_dataset()
    p = Params(START_MS, START_MS + 80_000, ())
    got = NaiveChecker(ds).expected("double-groupby-1", p)
    assert got == [(START_MS, "host_0", (91.5,)), (START_MS, "host_1", (13.5,))]


def test_naive_high_cpu_keeps_rows_above_90_only():
    ds = tiny_dataset()
    got = NaiveChecker(ds).expected("high-cpu-1", Params(START_MS, START_MS + 80_000, ("host_0",)))
    assert [r[0] - START_MS for r in got] == [30_000, 40_000, 50_000, 60_000, 70_000]
    assert got[0][1] == "host_0" and got[0][2][0] == 91.0


def test_naive_lastpoint_is_the_newest_row_per_host():
    ds = tiny_dataset()
    got = NaiveChecker(ds).expected("lastpoint", Params(START_MS, ds.end_ms, ()))
    assert [(h, ms - START_MS, v[0]) for h, ms, v in got] == [
        ("host_0", 70_000, 95.0),
        ("host_1", 70_000, 17.0),
    ]


def test_naive_groupby_orderby_limit_is_newest_minutes_first():
    ds = tiny_dataset()
    got = NaiveChecker(ds).expected("groupby-orderby-limit", Params(START_MS, START_MS + 65_000, ()))
    assert got == [(START_MS + MIN, (94.0,)), (START_MS, (93.0,))]


def test_every_query_type_has_a_pipeline_and_mongo_normalization():
    ds = generate(10, 86400, 1)
    for q in QUERY_TYPES:
        p = make_params(q, ds, 1, 1)[0]
        stages = pipeline(q, p)
        assert stages and all(len(s) == 1 and next(iter(s)).startswith("$") for s in stages)
    docs = [{"_id": ms_to_datetime(START_MS), "max_usage_user": 5.0}]
    assert normalize_mongo("single-groupby-1-1-1", docs) == [(START_MS, (5.0,))]


def test_datetime_and_ms_round_trip():
    for ms in (START_MS, START_MS + 123_456, 0):
        assert datetime_to_ms(ms_to_datetime(ms)) == ms
    assert datetime_to_ms(dt.datetime(2016, 1, 1, tzinfo=dt.UTC)) == START_MS


def test_compare_accepts_float_rounding_but_not_a_different_value():
    p = Params(START_MS, START_MS + 1, ())
    compare("x", "double-groupby-1", p, [(1, "h", (0.1 + 0.2,))], [(1, "h", (0.3,))])
    with pytest.raises(ResultMismatch, match="expected 1 rows, got 1; first difference at row 0"):
        compare("x", "double-groupby-1", p, [(1, "h", (0.31,))], [(1, "h", (0.3,))])
    with pytest.raises(ResultMismatch, match="expected 2 rows, got 1"):
        compare("x", "lastpoint", p, [("a", 1, ())], [("a", 1, ()), ("b", 1, ())])


def test_a_wrong_answer_stops_the_timing_loudly(tmp_path):
    ds = tiny_dataset()
    ctx = Context(ds, tmp_path / "f", tmp_path, ["lastpoint"], 2, 1, 1, pin=False, progress=False)
    result = SystemResult("liar", "returns one host too few")
    with pytest.raises(ResultMismatch, match="liar: wrong result for lastpoint"):
        check_and_time(
            ctx,
            "liar",
            lambda q, p: None,
            lambda q, raw: ctx.checker.expected(q, ctx.params[q][0])[:1],
            result,
        )
    assert result.queries == {}


def test_correct_answers_are_timed_with_mean_median_and_p95(tmp_path):
    ds = tiny_dataset()
    ctx = Context(
        ds, tmp_path / "f", tmp_path, ["high-cpu-1", "lastpoint"], 3, 1, 1, pin=False, progress=False
    )
    result = SystemResult("oracle", "answers with the naive result")
    check_and_time(ctx, "oracle", lambda q, p: (q, p), lambda q, raw: ctx.checker.expected(*raw), result)
    assert set(result.queries) == {"high-cpu-1", "lastpoint"}
    st = result.queries["lastpoint"]
    assert st["runs"] == 3 and 0 <= st["median_ms"] <= st["p95_ms"]


def test_ingest_stats_compare_the_last_tenth_of_the_load_with_the_first():
    steady = {"rows": 100_000, "seconds": 10.0, "samples": [(i / 10, i * 1000) for i in range(1, 101)]}
    st = ingest_stats(steady, 100_000, pinned=True)
    assert st["rows_per_s"] == pytest.approx(10_000)
    assert st["last_vs_first"] == pytest.approx(1.0)
    assert st["error"] is None and len(st["curve"]) == 20
    # the second half of the load runs at half the speed
    samples, t = [], 0.0
    for i in range(1, 101):
        t += 0.1 if i <= 50 else 0.2
        samples.append((t, i * 1000))
    slowing = ingest_stats({"rows": 100_000, "seconds": t, "samples": samples}, 100_000, pinned=True)
    assert slowing["last_vs_first"] == pytest.approx(0.5)


def test_ingest_stats_flag_a_short_load():
    st = ingest_stats({"rows": 9000, "seconds": 1.0, "samples": [(1.0, 9000)]}, 10_000, pinned=False)
    assert st["error"] == "loaded 9000 of 10000 rows"


def test_a_slow_system_is_timed_only_on_the_instances_it_was_checked_on(tmp_path):
    ds = tiny_dataset()
    ctx = Context(ds, tmp_path / "f", tmp_path, ["lastpoint"], 10, 1, 1, pin=False, progress=False)
    ctx.query_budget_s = 0.0  # every instance is over budget: stop at the minimum
    calls = []

    def execute(q, p):
        calls.append(p)
        return (q, p)

    result = SystemResult("slow", "over budget")
    check_and_time(ctx, "slow", execute, lambda q, raw: ctx.checker.expected(*raw), result)
    assert result.queries["lastpoint"]["runs"] == 3 and result.queries["lastpoint"]["planned"] == 10
    assert len(calls) == 6 and calls[:3] == calls[3:]


def test_min_runs_sets_how_many_instances_a_slow_system_is_checked_and_timed_on(tmp_path):
    ds = tiny_dataset()
    ctx = Context(ds, tmp_path / "f", tmp_path, ["lastpoint"], 10, 1, 1, pin=False, progress=False)
    ctx.query_budget_s = 0.0
    ctx.min_runs = 1
    calls = []

    def execute(q, p):
        calls.append(p)
        return (q, p)

    result = SystemResult("slow", "over budget")
    check_and_time(ctx, "slow", execute, lambda q, raw: ctx.checker.expected(*raw), result)
    assert result.queries["lastpoint"]["runs"] == 1 and len(calls) == 2 and calls[0] == calls[1]


def test_rows_per_server_cpu_second_is_reported():
    st = ingest_stats({"rows": 10_000, "seconds": 2.0, "samples": [(2.0, 10_000)], "server_cpu_s": 0.5}, 10_000,
                      pinned=True)
    assert st["rows_per_s"] == 5_000 and st["rows_per_cpu_s"] == 20_000
    assert ingest_stats({"rows": 1, "seconds": 1.0}, 1, pinned=True)["rows_per_cpu_s"] is None
