"""server/timeseries/groupruns.py: ``passing_items`` (the whole-bucket test of a chunk in one pass)
keeps exactly the items ``passing`` says every row of passes, and ``passes`` (one bucket's test) says
what ``passing`` says."""

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from tidemark.timeseries.groupruns import first_range, passes, passing, passing_items, range_checks

_VALUES = st.sampled_from([-2, -1, 0, 1, 2, 0.5, -0.0, math.inf, -math.inf])
_OPS = st.sampled_from([np.greater, np.greater_equal, np.less, np.less_equal, np.equal])


@given(ranges=st.lists(st.one_of(st.none(), st.tuples(_VALUES, _VALUES).map(sorted)), max_size=8),
       checks=st.lists(st.tuples(st.sampled_from(["t", "v"]), _OPS, _VALUES), min_size=0, max_size=3))
def test_passing_items_keeps_what_passing_keeps(ranges, checks):
    class Group:
        conditions = checks

    merged = range_checks(Group())
    def item(r):  # (column_ranges holds the filter's columns only)
        columns = {"t": tuple(r), "v": (r[0] - 1, r[1])}
        columns = {path: columns[path] for path in {path for path, _, _ in checks}}
        return ("x", columns, *first_range(columns))

    items = [None if r is None else item(r) for r in ranges]
    known = iter(passing([item[1] for item in items if item is not None], merged))
    assert passing_items(items, 1, merged) == [item if item is not None and next(known) else None for item in items]

    ranges_of = [item[1] for item in items if item is not None]
    assert [passes(r, merged) for r in ranges_of] == passing(ranges_of, merged)
