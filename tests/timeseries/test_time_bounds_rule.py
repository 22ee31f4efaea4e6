"""``filters._TimeBounds``: the inclusive range per end it folds a conjunction's time checks into keeps
exactly the buckets every check keeps, stated per operator as the bucket filter's rule (a bucket spans
less than ``span``): ``$eq`` min <= d <= max, min >= d - span, max <= d + span; ``$gt``/``$gte`` max >(=) d,
min >(=) d - span; ``$lt``/``$lte`` min <(=) d, max <(=) d + span. The fold narrows each end with
comparisons (issue 23: no min/max calls), so the family pins strict against inclusive and every end
(ranges wider than a span too: each end is checked on its own)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.timeseries.filters import _TimeBounds

SPAN = 3
_CHECKS = st.lists(st.tuples(st.sampled_from(["$eq", "$gt", "$gte", "$lt", "$lte"]), st.integers(-5, 5))
                   .map(lambda c: (c[0], c[1], c[1] - SPAN, c[1] + SPAN)), min_size=1, max_size=4)


def _keeps(check: tuple[str, int, int, int], lo: int, hi: int) -> bool:
    op, d, earliest, latest = check
    if op == "$eq":
        return lo <= d <= hi and lo >= earliest and hi <= latest
    if op == "$gt":
        return hi > d and lo > earliest
    if op == "$gte":
        return hi >= d and lo >= earliest
    if op == "$lt":
        return lo < d and hi < latest
    return lo <= d and hi <= latest


@settings(max_examples=500, deadline=None)
@given(_CHECKS, st.integers(-10, 10), st.integers(0, 3 * SPAN))
def test_the_folded_ranges_keep_what_every_check_keeps(checks, lo, width):
    hi = lo + width
    bounds = _TimeBounds("t", tuple(checks))
    folded = bounds.lo_min <= lo <= bounds.lo_max and bounds.hi_min <= hi <= bounds.hi_max
    assert folded == all(_keeps(check, lo, hi) for check in checks)
