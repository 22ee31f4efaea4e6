"""Planning rules on the one path every indexed read takes. ``FieldBounds.present`` is worked out when asked (only a sparse index or a collated string bound
asks), from the conjuncts ``extract_bounds`` saw on the path: whatever their number, order and nesting
under ``$and``, it is whether one of them ``excludes_missing``. ``tight_condition`` of a two-sided range: one exact
type bracket and no empty interval, whatever the types (those Python orders as BSON does are compared
without ``compare``)."""

from __future__ import annotations

import datetime as dt
import math

from bson import Decimal128, Int64, MaxKey, MinKey
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.query.index_bounds import _exact_bracket, excludes_missing, extract_bounds, tight_condition
from tidemark.query.values import compare

PATHS = ("a", "b")
VALUES = st.sampled_from([0, 5, 2.5, "x", None, True, dt.datetime(2024, 1, 1), MinKey(), MaxKey()])
CONDITIONS = st.one_of(
    VALUES,
    st.builds(lambda op, v: {op: v}, st.sampled_from(["$eq", "$gt", "$gte", "$lt", "$lte", "$ne"]), VALUES),
    st.builds(lambda vs: {"$in": vs}, st.lists(VALUES, min_size=1, max_size=3)),
    st.builds(lambda b: {"$exists": b}, st.booleans()),
    st.builds(lambda lo, hi: {"$gt": lo, "$lt": hi}, VALUES, VALUES),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(PATHS), CONDITIONS, st.booleans()), min_size=1, max_size=5))
def test_present_is_any_conjunct_excluding_missing(conjuncts):
    top: dict = {}
    nested: list = []
    for path, cond, under_and in conjuncts:
        if under_and or path in top:
            nested.append({path: cond})
        else:
            top[path] = cond
    filter = dict(top)
    if nested:
        filter["$and"] = nested
    bounds = extract_bounds(filter)
    for path, b in bounds.items():
        expected = any(excludes_missing(cond) for p, cond, _ in conjuncts if p == path)
        assert b.present is expected, (filter, path)
        assert b.present is expected  # (asked again: the answer worked out once)


RANGE_VALUES = st.one_of(st.integers(-3, 3), st.sampled_from(["", "a", "b", "é"]),
                         st.builds(Int64, st.integers(-3, 3)),
                         st.builds(lambda d: dt.datetime(2024, 1, 1) + dt.timedelta(days=d), st.integers(-2, 2)),
                         st.sampled_from([1.5, -0.0, math.nan, True, None, Decimal128("2")]))


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(["$gt", "$gte"]), RANGE_VALUES, st.sampled_from(["$lt", "$lte"]), RANGE_VALUES)
def test_two_sided_range_tight_when_one_bracket_and_not_empty(lower, lo, upper, hi):
    """A two-sided range is tight when both ends hold one exact bracket and the range is no empty
    interval (compared in BSON order), whatever the ends' types."""
    bracket = _exact_bracket(lo)
    order = compare(lo, hi)
    expected = bracket is not None and bracket == _exact_bracket(hi) and (
        order < 0 or order == 0 and lower == "$gte" and upper == "$lte")
    assert tight_condition("t", {lower: lo, upper: hi}) is expected
