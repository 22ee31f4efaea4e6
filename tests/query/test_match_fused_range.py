"""A number or date range on one top-level field ({a: {$gte: x, $lt: y}}) compiles to one closure
(match_compile._fused_range); the two comparisons' own predicates, for arrays and other types, are
compiled when a document first needs them. Differential: one compiled range predicate applied to a
sequence of documents (scalars first, then arrays and other types) answers as the two comparisons
matched on their own."""

from __future__ import annotations

import datetime as dt

from bson.int64 import Int64
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.query.match import compile_filter

_D = [dt.datetime(2020, 1, 1) + dt.timedelta(minutes=i) for i in range(4)]
_numbers = st.one_of(st.integers(-3, 3), st.integers(-3, 3).map(Int64), st.sampled_from([-0.5, 0.0, 1.5, 2.5]))
_bounds = st.one_of(st.tuples(_numbers, _numbers), st.tuples(st.sampled_from(_D), st.sampled_from(_D)))
_scalars = st.one_of(_numbers, st.sampled_from(_D), st.sampled_from(["1", None, True, float("nan")]))
_values = st.one_of(_scalars, st.lists(_scalars, max_size=3), st.fixed_dictionaries({"b": _scalars}))


@settings(max_examples=400, deadline=None)
@given(_bounds, st.sampled_from(["$gt", "$gte"]), st.sampled_from(["$lt", "$lte"]),
       st.lists(st.one_of(_values, st.none()), min_size=1, max_size=6))
def test_one_range_predicate_answers_as_both_comparisons(bounds, lo_op, hi_op, values):
    lo, hi = bounds
    fused = compile_filter({"a": {lo_op: lo, hi_op: hi}})
    low, high = compile_filter({"a": {lo_op: lo}}), compile_filter({"a": {hi_op: hi}})
    for v in values:
        doc = {} if v is None else {"a": v}
        assert fused(doc) == (low(doc) and high(doc)), doc


def test_arrays_after_scalars():
    fused = compile_filter({"a": {"$gte": 1, "$lt": 5}})
    assert [fused(d) for d in ({"a": 3}, {"a": 7}, {"a": [0, 9]}, {"a": [7]}, {"a": "3"}, {"a": [3]})] == \
        [True, False, True, False, False, True]
