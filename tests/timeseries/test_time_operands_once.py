"""The time operands of a read's filter are converted to ms once, by the column filter
(``rowfilter.ColumnFilter.dates``), and handed to the columnar ``$group``'s conditions: the conditions
bound from them are the ones ``columnar.plan`` binds converting the operands itself, whatever the
comparisons (several of the time field, in any order, among others; dates, numbers, DatetimeMS)."""

from __future__ import annotations

import datetime as dt

from bson.datetime_ms import DatetimeMS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tidemark.query.match import parse_filter
from tidemark.timeseries import columnar, rowfilter

T0 = dt.datetime(2024, 1, 1)
GROUP = [{"$group": {"_id": {"$dateTrunc": {"date": "$t", "unit": "minute"}}, "v": {"$max": "$v"}}}]
TIMES = st.one_of(st.integers(0, 10**7).map(lambda ms: T0 + dt.timedelta(milliseconds=ms)),
                  st.integers(0, 10**12).map(DatetimeMS), st.integers(-5, 5))
CONJUNCT = st.one_of(
    st.tuples(st.just("t"), st.sampled_from(["$eq", "$gt", "$gte", "$lt", "$lte"]), TIMES),
    st.tuples(st.just("v"), st.sampled_from(["$gt", "$lt"]), st.integers(-5, 5)),
    st.tuples(st.just("t"), st.just("$in"), st.lists(TIMES, min_size=1, max_size=2)),
    st.tuples(st.just("m.site"), st.just("$eq"), st.just("a")),
)


def _bound(group):
    return None if group is None else (repr(group.conditions), group.conditions_exact)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(parts=st.lists(CONJUNCT, min_size=1, max_size=4))
def test_conditions_bound_from_the_column_filters_dates_are_the_ones_converted_alone(parts):
    node = parse_filter({"$and": [{path: {op: value}} for path, op, value in parts]})
    column = rowfilter.plan(node, "t", "m")
    handed = columnar.plan(node, GROUP, "t", "m", dates=None if column is None else column.dates)
    assert _bound(handed) == _bound(columnar.plan(node, GROUP, "t", "m"))
    if column is not None:  # one entry per comparison of the time field
        assert len(column.dates) == sum(1 for path, op, _ in parts if path == "t" and op != "$in")


def test_a_time_window_is_converted_once_and_handed_down():
    lo, hi = T0, T0 + dt.timedelta(hours=1)
    node = parse_filter({"t": {"$gte": lo, "$lt": hi}, "m.site": {"$in": ["a"]}})
    column = rowfilter.plan(node, "t", "m")
    assert column is not None and column.dates == (1704067200000, 1704070800000)
    group = columnar.plan(node, GROUP, "t", "m", dates=column.dates)
    assert group is not None and [c[2] for c in group.conditions] == [1704067200000, 1704070800000]
