"""The query-only optimize step of ``$expr`` (``expr_optimize``): mongod folds a query's constant
sub-expressions, children first, so an invalid constant fails the query even where no document
reaches it; what reads a field, a variable, ``$rand`` or JavaScript is never evaluated, and
``compile_filter`` (validators) never folds. Differential: on random constant arithmetic trees the
fold raises exactly the error a bottom-up evaluation raises."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.protocol.errors import MongoError
from tidemark.query.expr_optimize import fold_expression_constants, fold_filter_constants
from tidemark.query.expressions import compile_expression
from tidemark.query.match import compile_filter


def _fold_code(flt: dict) -> int | None:
    try:
        fold_filter_constants(flt)
    except MongoError as exc:
        return exc.code
    return None


@pytest.mark.parametrize("flt, code", [
    ({"$expr": {"$anyElementTrue": None}}, 17041),
    ({"$expr": {"$divide": [1, 0]}}, 2),
    ({"$or": [{"a": 0}, {"$expr": {"$anyElementTrue": None}}]}, 17041),
    ({"$and": [{"a": 0}, {"$nor": [{"$expr": {"$divide": [1, 0]}}]}]}, 2),
    # children first: a branch $cond does not take, a constant inside $map's 'in', a $let variable
    ({"$expr": {"$cond": [True, 1, {"$divide": [1, 0]}]}}, 2),
    ({"$expr": {"$map": {"input": "$a", "in": {"$divide": [1, 0]}}}}, 2),
    ({"$expr": {"$let": {"vars": {"x": {"$divide": [1, 0]}}, "in": "$$x"}}}, 2),
    ({"$expr": {"$switch": {"branches": [{"case": "$a", "then": {"$divide": [1, 0]}}], "default": 1}}}, 2),
    ({"$expr": {"$eq": ["$a", {"$size": 5}]}}, 17124),
    ({"$expr": {"$lt": [{"$dateToString": {"date": {"$toDate": "x"}, "format": "%Y"}}, "$a"]}}, 241),
    # $setIsSubset's optimize checks a constant second operand even when the first reads the document
    # (SERVER-99186, found by django-mongodb-backend's tests); both constant: the evaluation's codes
    ({"$expr": {"$and": [{"$ne": [None, None]}, {"$setIsSubset": ["$field", None]}]}}, 17311),
    ({"$expr": {"$setIsSubset": ["$field", {"$literal": "x"}]}}, 17311),
    ({"$expr": {"$setIsSubset": ["$field", {"$concat": ["a", "b"]}]}}, 17311),
    ({"$expr": {"$setIsSubset": [None, [1]]}}, 17046),
    ({"$expr": {"$setIsSubset": [[1], 5]}}, 17042),
])
def test_an_invalid_constant_fails_the_query(flt, code):
    compile_filter(flt)  # a valid filter: the parse and a validator's compile never evaluate constants
    assert _fold_code(flt) == code


@pytest.mark.parametrize("flt", [
    {"$expr": {"$divide": [1, "$a"]}},  # reads the document
    {"$expr": {"$divide": [1, {"$subtract": ["$$NOW", "$$NOW"]}]}},  # variables are not constants here
    {"$expr": {"$size": {"$getField": "arr"}}},  # $getField without input reads the document
    {"$expr": {"$divide": [1, {"$floor": {"$rand": {}}}]}},  # not deterministic
    {"$expr": {"$map": {"input": [0], "in": {"$divide": [1, "$$this"]}}}},  # a bound variable
    {"$expr": {"$regexMatch": {"input": 5, "regex": "a"}}},  # mongod keeps the regex operators
    {"$expr": {"$sortArray": {"input": 5, "sortBy": 1}}},  # no optimize of its own in mongod
    {"$expr": {"$literal": {"$divide": [1, 0]}}},  # data
    {"$where": "return 1 / 0"},
    {"a": {"$eq": 1}},
    {"$expr": {"$setIsSubset": ["$a", [1, 2]]}},  # an array: precomputed, no error
    {"$expr": {"$setIsSubset": [None, "$a"]}},  # only the second operand is checked before a document
])
def test_what_is_not_constant_is_not_evaluated(flt):
    assert _fold_code(flt) is None


def test_a_collated_comparison_decides_what_the_parent_sees():
    from tidemark.query.collation import parse_collation

    ci = parse_collation({"locale": "en", "strength": 2})
    expr = {"$size": {"$cond": [{"$eq": ["a", "A"]}, [1], "x"]}}
    fold_expression_constants(expr, collation=ci)  # under the collation "a" == "A": an array
    with pytest.raises(MongoError) as info:
        fold_expression_constants(expr)
    assert info.value.code == 17124


# ---------------------------------------------------------------------------------------------------
# Differential: random constant trees of operators that evaluate all their arguments


LEAVES = st.one_of(st.integers(-3, 3), st.sampled_from([0.5, -1.5, "s", None, [1, 2], True]))
UNARY = ["$abs", "$sqrt", "$ln", "$size", "$anyElementTrue", "$toInt", "$floor", "$exp"]
BINARY = ["$add", "$subtract", "$multiply", "$divide", "$mod", "$pow", "$concat", "$arrayElemAt"]


def _trees():
    return st.recursive(
        LEAVES,
        lambda inner: st.one_of(
            st.builds(lambda op, a: {op: [a]}, st.sampled_from(UNARY), inner),
            st.builds(lambda op, a, b: {op: [a, b]}, st.sampled_from(BINARY), inner, inner),
        ),
        max_leaves=8,
    )


def _bottom_up(expr):
    """The first error of a children-first evaluation, or None (the reference the fold must match)."""
    if isinstance(expr, dict):
        for child in next(iter(expr.values())):
            code = _bottom_up(child)
            if code is not None:
                return code
        try:
            compile_expression(expr)({}, {})
        except MongoError as exc:
            return exc.code
    return None


@settings(max_examples=300, deadline=None)
@given(tree=_trees())
def test_the_fold_raises_the_first_error_of_a_children_first_evaluation(tree):
    try:
        compile_expression(tree)
    except MongoError:
        return  # a parse error: the query fails before it is optimized
    assert _fold_code({"$expr": tree}) == _bottom_up(tree)
    try:
        compile_expression(tree)({}, {})
        evaluated = None
    except MongoError as exc:
        evaluated = exc.code
    # what fails evaluated fails folded (the fold evaluates the whole tree last); the fold fails more
    # often, as mongod's: an inner constant fails even where the evaluation stops early
    # ({$add: [null, {$abs: "s"}]}), with its own code ({$concat: [0, {$sqrt: [-1]}]}: 28714, not 16702)
    if evaluated is not None:
        assert _fold_code({"$expr": tree}) is not None
    # beside a field path the tree is still folded; the operator holding both is not
    assert _fold_code({"$expr": {"$cond": ["$a", "$b", tree]}}) == _bottom_up(tree)
