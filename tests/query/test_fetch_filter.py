"""``query.fetch_filter``: what a document fetched through a plan is re-checked against — the filter less
the conditions the plan's index bounds decide exactly (``Plan.residual``). Documents that violate a
decided condition (which an index scan never fetches) show which predicate ran."""

from __future__ import annotations

from tidemark.query import plan as planner
from tidemark.query.fetch_filter import RESIDUAL_AFTER, fetched_matching, fetched_predicate
from tidemark.query.match import compile_filter

A = {"name": "a_1", "key": {"a": 1}}


def _plan(flt: dict, indexes=(A,)):
    return planner.choose_plan(list(indexes), flt, None, None, multikey_default=False, allow_or=True)


def test_a_write_tests_only_what_the_bounds_leave_undecided():
    flt = {"a": {"$gte": 2}, "b": 1}
    plan = _plan(flt)
    match = fetched_predicate(plan, flt, compile_filter(flt))
    assert match is not None
    assert match({"a": 0, "b": 1})  # (a: decided by the bounds, not tested again)
    assert not match({"a": 5, "b": 2})


def test_a_write_whose_bounds_decide_everything_tests_nothing():
    flt = {"a": {"$in": [1, 2]}}
    assert fetched_predicate(_plan(flt), flt, compile_filter(flt)) is None


def test_a_write_the_bounds_decide_nothing_of_tests_the_whole_filter():
    for flt, indexes in (({"a": None, "b": 1}, (A,)), ({"b": 1}, (A,)), ({"a": 1}, ())):
        whole = compile_filter(flt)
        assert fetched_predicate(_plan(flt, indexes), flt, whole) is whole
    assert fetched_predicate(_plan({"a": 1}), {"a": 1}, None) is None


def test_a_read_tests_its_first_documents_whole_and_the_rest_with_the_residual():
    flt = {"a": {"$gte": 2}, "b": 1}
    whole = compile_filter(flt)
    docs = [{"a": 0, "b": 1}] * (RESIDUAL_AFTER + 3)
    out = list(fetched_matching(iter(docs), _plan(flt), flt, lambda it: filter(whole, it)))
    assert len(out) == 3  # (the first RESIDUAL_AFTER through the whole filter, a: 0 fails it)
    assert list(fetched_matching(iter(docs), _plan({"b": 1}), {"b": 1},
                                 lambda it: filter(compile_filter({"b": 1}), it))) == docs
