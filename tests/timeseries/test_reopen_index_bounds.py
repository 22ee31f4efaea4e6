"""Reopening by query looks a series' candidates up through the buckets index with the interval the
planner makes of ``{meta: <meta>, control.min.<time>: {$gt: t - span, $lte: t}}``, encoded directly
(reopen.index_bounds, no plan per series): for every plain meta value and time, the same interval."""

from __future__ import annotations

import datetime

from bson.int64 import Int64
from bson.objectid import ObjectId
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.query import plan as planner
from tidemark.timeseries import reopen
from tidemark.timeseries.bucketdoc import ms_to_date, time_bound_paths

_scalars = (st.text(max_size=8) | st.integers(-2**40, 2**40) | st.floats(allow_nan=False) | st.booleans()
            | st.builds(ObjectId) | st.integers(-2**62, 2**62).map(Int64)
            | st.datetimes(datetime.datetime(1970, 1, 1), datetime.datetime(2200, 1, 1)).map(
                lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000)))
_metas = _scalars | st.dictionaries(st.text(min_size=1, max_size=5).filter(lambda k: "." not in k and not k.startswith("$")),
                                    st.recursive(_scalars, lambda inner: st.dictionaries(
                                        st.sampled_from(["a", "b", "c"]), inner, max_size=3), max_leaves=4),
                                    min_size=1, max_size=4)
INDEX = {"name": "m_1_t_1", "key": {"meta": 1, "control.min.t": 1, "control.max.t": 1}}


@settings(max_examples=300, deadline=None)
@given(meta=_metas, t_ms=st.integers(0, 2**42), span_s=st.integers(1, 31_536_000))
def test_direct_bounds_are_the_planners_interval(meta, t_ms, span_s):
    low_ms = t_ms - span_s * 1000
    plan = planner.choose_plan([INDEX], {"meta": meta, "control.min.t": {"$gt": ms_to_date(low_ms),
                                                                          "$lte": ms_to_date(t_ms)}},
                               None, INDEX["name"], scalar_paths=time_bound_paths("t"))
    assert [(i.lo, i.hi, i.lo_incl, i.hi_incl) for i in plan.intervals] == [
        reopen.index_bounds(INDEX, meta, low_ms, t_ms)]


def test_no_direct_bounds_where_the_planner_decides():
    """An array meta (multikey: its elements match too), null, or a descending index: the planner's."""
    assert reopen.index_bounds(INDEX, [1, 2], 0, 1000) is None
    assert reopen.index_bounds(INDEX, None, 0, 1000) is None
    assert reopen.index_bounds({"name": "x", "key": {"meta": -1, "control.min.t": 1}}, "a", 0, 1000) is None
