"""Dense columns of one bucket for the columnar ``$group`` (pure): the time column as int64 ms and the
needed measurement columns as float64 arrays, when every one of them is dense and of one type (doubles
without NaN, dates within ``datetime``'s range), from any bucket view (``dense(name)``); None otherwise
(the bucket then goes the generic way). For a stored bucket the answer is remembered with its cached
parts (it depends only on the stored bytes)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tidemark.timeseries.columns import DATE, DOUBLE, MAX_DATETIME_MS, MIN_DATETIME_MS


def fast_arrays(view: Any, group: Any) -> tuple[np.ndarray, dict[str, Any]] | None:
    """(time ms, {field: float64 array}) of a bucket whose needed columns are dense doubles without
    NaN and whose times decode to ``datetime``, else None."""
    entry = view.cached
    if entry is None:
        return _fast_arrays(view, group)
    memo_key = group.fast_key  # (columnar._group_keys)
    found = entry.memo.get(memo_key)
    if found is None:
        found = entry.memo[memo_key] = _fast_arrays(view, group) or False
    return found or None


def _fast_arrays(view: Any, group: Any) -> tuple[np.ndarray, dict[str, Any]] | None:
    found = view.dense(group.time_field)
    if found is None or found[0] != DATE or not len(found[1]):
        return None
    times = found[1]
    if int(times.min()) < MIN_DATETIME_MS or int(times.max()) > MAX_DATETIME_MS:
        return None
    n = len(times)
    arrays = {}
    for name in group.columns:
        column = view.dense(name)
        if column is None or column[0] != DOUBLE or len(column[1]) != n or np.isnan(column[1]).any():
            return None
        arrays[name] = column[1]
    return times, arrays

