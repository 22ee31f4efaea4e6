"""Undefined user variables fail 17276 when a pipeline is parsed (mongod's VariablesParseState), not only
when an expression runs; binders ($let, $map, $filter, $reduce, a $lookup's let, the command's let) keep
their variables visible exactly where mongod's parse scopes make them visible."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.protocol.errors import MongoError
from tidemark.query.expressions import compile_expression, defined_variables, free_variables
from tidemark.query.pipeline import PipelineContext, parse_pipeline, run_pipeline

NAMES = ["a", "b", "this", "value"]


def _expressions() -> st.SearchStrategy:
    """Expressions of variable references under every binder; each binder's body runs exactly once at
    run time (one-element inputs), so a reference fails at run time exactly when it is free."""
    refs = st.sampled_from(NAMES).map(lambda n: f"$${n}") | st.just("$$ROOT") | st.just(1)

    def extend(inner: st.SearchStrategy) -> st.SearchStrategy:
        one = inner.map(lambda e: [e])
        return st.one_of(
            st.lists(inner, max_size=2),
            st.builds(lambda n, v, body: {"$let": {"vars": {n: v}, "in": body}}, st.sampled_from(NAMES[:2]), inner,
                      inner),
            st.builds(lambda i, n, body: {"$map": {"input": i, "as": n, "in": body}}, one,
                      st.sampled_from(NAMES[:2]), inner),
            st.builds(lambda i, body: {"$map": {"input": i, "in": body}}, one, inner),
            st.builds(lambda i, n, c: {"$filter": {"input": i, "as": n, "cond": c}}, one, st.sampled_from(NAMES[:2]),
                      inner),
            st.builds(lambda i, c, lim: {"$filter": {"input": i, "cond": {"$or": [c, True]},
                                                     "limit": {"$add": [1, {"$size": [[lim]]}]}}}, one, inner, inner),
            st.builds(lambda i, init, body: {"$reduce": {"input": i, "initialValue": init, "in": body}}, one, inner,
                      inner),
        )
    return st.recursive(refs, extend, max_leaves=8)


def _run_time_code(expr, names: frozenset[str]) -> int | None:
    try:
        compile_expression(expr)({}, {n: 1 for n in names})
    except MongoError as e:
        return e.code
    return None


@settings(max_examples=300, deadline=None)
@given(expr=_expressions(), defined=st.sets(st.sampled_from(NAMES)))
def test_parse_time_check_agrees_with_run_time_resolution(expr, defined):
    """The parse-time scope check refuses an expression exactly when running it meets an undefined variable."""
    at_run = _run_time_code(expr, frozenset(defined))
    try:
        with defined_variables(defined):
            compile_expression(expr)
        at_parse = None
    except MongoError as e:
        at_parse = e.code
    assert (at_parse == 17276) == (at_run == 17276)
    assert (at_parse == 17276) == any(n not in defined for n in free_variables(expr))


@pytest.mark.parametrize("pipeline", [
    [{"$project": {"x": "$$undef"}}],
    [{"$addFields": {"x": {"$add": [1, "$$undef.a"]}}}],
    [{"$match": {"$expr": {"$eq": ["$a", "$$undef"]}}}],
    [{"$group": {"_id": None, "s": {"$sum": "$$undef"}}}],
    [{"$project": {"x": {"$map": {"input": [1], "as": "v", "in": "$$this"}}}}],  # 'as' replaces "this"
    [{"$project": {"x": {"$filter": {"input": [1], "as": "v", "cond": True, "limit": "$$v"}}}}],  # limit: outer
    [{"$project": {"x": {"$let": {"vars": {"v": 1, "w": "$$v"}, "in": "$$w"}}}}],  # vars see the outer scope
    [{"$facet": {"f": [{"$project": {"x": "$$undef"}}]}}],
    [{"$lookup": {"from": "c", "let": {"v": "$$undef"}, "pipeline": [], "as": "o"}}],
    [{"$lookup": {"from": "c", "let": {"v": 1}, "pipeline": [{"$project": {"x": "$$w"}}], "as": "o"}}],
])
def test_undefined_variable_fails_when_the_pipeline_is_parsed(pipeline):
    with pytest.raises(MongoError) as info:
        parse_pipeline(pipeline, PipelineContext())
    assert info.value.code == 17276
    assert info.value.message.rpartition(":: caused by :: ")[2].startswith("Use of undefined variable: ")


@pytest.mark.parametrize("pipeline", [
    [{"$project": {"x": "$$v", "n": "$$NOW", "r": "$$ROOT", "c": "$$CURRENT.a", "m": "$$REMOVE"}}],
    [{"$project": {"x": {"$map": {"input": [1], "as": "e", "in": {"$add": ["$$e", "$$v"]}}}}}],
    [{"$project": {"x": {"$reduce": {"input": [1], "initialValue": "$$v", "in": ["$$value", "$$this"]}}}}],
    [{"$project": {"x": {"$let": {"vars": {"w": "$$v"}, "in": {"$filter": {"input": ["$$w"], "cond": "$$this"}}}}}}],
    [{"$lookup": {"from": "c", "let": {"w": "$$v"}, "pipeline": [{"$match": {"$expr": "$$w"}},
                                                                 {"$project": {"x": "$$v"}}], "as": "o"}}],
    [{"$redact": {"$cond": [True, "$$DESCEND", "$$PRUNE"]}}],
])
def test_defined_variables_stay_visible(pipeline):
    ctx = PipelineContext(variables={"v": 1}, resolve_collection=lambda db, coll: iter([{"_id": 0}]))
    out = list(run_pipeline(parse_pipeline(pipeline, ctx), iter([{"_id": 1, "a": 2}]), ctx))
    assert len(out) == 1


def test_a_pipeline_parsed_without_a_context_checks_when_it_runs():
    """parse_pipeline(p) does not know its caller's variables (explain re-parses a pipeline alone)."""
    stages = parse_pipeline([{"$project": {"x": "$$v"}}])
    with pytest.raises(MongoError) as info:
        list(run_pipeline(stages, iter([{}]), PipelineContext()))
    assert info.value.code == 17276
