"""compile_expression compiles an expression once per shape (expressions._COMPILED): two expressions
share a compiled function only when they are the same BSON — types (1, True, Int64(1), 1.0) and field
order included — and a shared function gives every later request its own answer ($$NOW and ``let``
come in the variables at run time). Differential: the remembered function against a fresh compile
(``expressions._compile``) on random expressions and documents, in random order."""

from __future__ import annotations

import datetime

import pytest
from bson.int64 import Int64
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.protocol.errors import MongoError
from tidemark.query import expressions
from tidemark.query.expressions import compile_expression, evaluate_let


def _run(fn, doc, variables):
    try:
        return ("ok", fn(doc, variables))
    except MongoError as exc:
        return ("error", exc.code)


def test_equal_python_values_of_other_bson_types_are_other_shapes():
    doc = {"a": 1}
    answers = [compile_expression({"$eq": ["$a", v]})(doc, {}) for v in (1, True, Int64(1), 1.0)]
    assert answers == [True, False, True, True]
    assert compile_expression({"$eq": ["$a", True]})(doc, {}) is False  # not the cached {$eq: [$a, 1]}
    assert compile_expression({"$type": True})(doc, {}) == "bool"
    assert compile_expression({"$type": 1})(doc, {}) == "int"


def test_field_order_is_part_of_the_shape():
    doc = {"x": 1, "y": 2}
    assert list(compile_expression({"p": "$x", "q": "$y"})(doc, {})) == ["p", "q"]
    assert list(compile_expression({"q": "$y", "p": "$x"})(doc, {})) == ["q", "p"]


def test_now_is_read_per_request():
    fn = compile_expression({"$dateTrunc": {"date": "$$NOW", "unit": "minute"}})
    first = fn({}, evaluate_let(None, now=datetime.datetime(2026, 1, 1, 10, 30, 5)))
    again = compile_expression({"$dateTrunc": {"date": "$$NOW", "unit": "minute"}})
    assert again is fn
    second = again({}, evaluate_let(None, now=datetime.datetime(2027, 2, 2, 11, 45, 59)))
    assert (first, second) == (datetime.datetime(2026, 1, 1, 10, 30), datetime.datetime(2027, 2, 2, 11, 45))


def test_errors_are_raised_at_every_compile():
    for _ in range(2):
        with pytest.raises(MongoError) as err:
            compile_expression({"$noSuchOperator": 1})
        assert err.value.code == 168


def test_literal_values_are_not_shared():
    a = compile_expression({"$literal": [1, 2]})
    b = compile_expression({"$literal": [1, 2]})
    assert a is not b


_leaves = st.one_of(
    st.sampled_from(["$a", "$b", "$a.c", "$$NOW", "$$v", "x", ""]),
    st.integers(-2, 2), st.booleans(), st.just(None), st.just(Int64(1)), st.sampled_from([0.0, -0.0, 1.0, 2.5]),
)


def _exprs():
    return st.recursive(
        _leaves,
        lambda inner: st.one_of(
            st.tuples(st.sampled_from(["$add", "$eq", "$lt", "$cmp", "$ifNull", "$concat", "$max", "$and",
                                       "$isArray", "$type", "$toString"]),
                      st.lists(inner, min_size=1, max_size=3)).map(lambda t: {t[0]: t[1]}),
            st.dictionaries(st.sampled_from(["p", "q", "r"]), inner, min_size=1, max_size=3),
            st.lists(inner, max_size=2).map(lambda v: {"$literal": v}),
        ),
        max_leaves=6,
    )


_docs = st.fixed_dictionaries({}, optional={"a": _leaves, "b": st.lists(st.integers(-2, 2), max_size=2),
                                            "c": _leaves})


@settings(max_examples=300, deadline=None)
@given(st.lists(_exprs(), min_size=1, max_size=6), _docs, st.sampled_from([None, 1, True, "s"]))
def test_remembered_compile_answers_as_a_fresh_one(exprs, doc, v):
    variables = evaluate_let({"v": {"$literal": v}}, now=datetime.datetime(2026, 5, 6, 7, 8, 9))
    for expr in exprs + exprs[::-1]:
        try:
            fresh = expressions._compile(expr, True, None)
        except MongoError as exc:
            with pytest.raises(MongoError) as err:
                compile_expression(expr)
            assert err.value.code == exc.code
            continue
        assert _run(compile_expression(expr), doc, variables) == _run(fresh, doc, variables)
