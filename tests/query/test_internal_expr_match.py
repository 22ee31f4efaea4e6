"""``$_internalExprEq/Gt/Gte/Lt/Lte``: mongod's comparisons without type bracketing
(``expression_internal_expr_comparison.h``), which 7.0 writes its time-series bucket filters with and
which explain shows: BSON order across types, NaN below every number, an array anywhere along the
path matches, a missing value sorts after MinKey and before everything else."""

import math

import pytest
from bson.max_key import MaxKey
from bson.min_key import MinKey
from hypothesis import given
from hypothesis import strategies as st

from tidemark.protocol.errors import MongoError
from tidemark.query.collation import parse_collation
from tidemark.query.match import compile_filter
from tidemark.query.values import compare

OPS = {"$_internalExprEq": lambda c: c == 0, "$_internalExprGt": lambda c: c > 0,
       "$_internalExprGte": lambda c: c >= 0, "$_internalExprLt": lambda c: c < 0,
       "$_internalExprLte": lambda c: c <= 0}


def matches(path, op, value, doc, collation=None):
    return compile_filter({path: {op: value}}, collation=collation)(doc)


@pytest.mark.parametrize("op, value, doc, expected", [
    ("$_internalExprGt", 2, {"a": "x"}, True),        # strings sort after numbers: no type bracket
    ("$_internalExprLt", 2, {"a": None}, True),       # null sorts before numbers
    ("$_internalExprGt", 2, {"a": {"b": 1}}, True),   # objects after strings
    ("$_internalExprLt", 1, {"a": math.nan}, True),   # NaN below every number
    ("$_internalExprEq", 1, {"a": 1.0}, True),
    ("$_internalExprEq", 1, {"a": [1]}, True),        # an array: matches (mongod leaves it to $expr)
    ("$_internalExprGt", 99, {"a": [{"b": 1}]}, True),
    ("$_internalExprLt", 0, {}, True),                # missing sorts before every value...
    ("$_internalExprGt", MinKey(), {}, True),         # ...but after MinKey
    ("$_internalExprGte", 0, {}, False),
    ("$_internalExprLte", MaxKey(), {"a": "z"}, True),
])
def test_comparisons_follow_bson_order_across_types(op, value, doc, expected):
    assert matches("a", op, value, doc) is expected


def test_dotted_paths_and_arrays_along_them():
    doc = {"control": {"min": {"v": 3}, "max": {"v": [1, 2]}}}
    assert matches("control.min.v", "$_internalExprLte", 3, doc)
    assert not matches("control.min.v", "$_internalExprLt", 3, doc)
    assert matches("control.max.v", "$_internalExprGt", 100, doc)
    assert matches("x.y", "$_internalExprEq", 1, {"x": [{"y": 5}]})
    assert not matches("x.y", "$_internalExprEq", 1, {"x": 5})


def test_strings_compare_under_the_collation():
    fr = parse_collation({"locale": "en", "strength": 2})
    assert matches("s", "$_internalExprEq", "abc", {"s": "ABC"}, fr)
    assert not matches("s", "$_internalExprEq", "abc", {"s": "ABC"})


def test_an_array_operand_is_refused():
    with pytest.raises(MongoError):
        compile_filter({"a": {"$_internalExprEq": [1]}})


SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=True, width=32),
                    st.text("ab", max_size=2), st.dictionaries(st.sampled_from("pq"), st.integers(0, 2), max_size=1))


@given(value=SCALARS, rhs=SCALARS.filter(lambda v: v is not None), op=st.sampled_from(sorted(OPS)))
def test_a_present_scalar_compares_as_the_sort_order_does(value, rhs, op):
    assert matches("a", op, rhs, {"a": value}) is OPS[op](compare(value, rhs))
