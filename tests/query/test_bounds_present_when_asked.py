"""``FieldBounds.present`` is worked out when asked (only a sparse index or a collated string bound
asks), from the conjuncts ``extract_bounds`` saw on the path: whatever their number, order and nesting
under ``$and``, it is whether one of them ``excludes_missing``."""

from __future__ import annotations

import datetime as dt

from bson import MaxKey, MinKey
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.query.index_bounds import excludes_missing, extract_bounds

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
