"""Dense columns of one bucket for the columnar ``$group`` (pure): the time column as int64 ms and the
needed measurement columns as float64 arrays, when every one of them is dense (keys ``"0".."n-1"``),
of one type (doubles without NaN, dates within ``datetime``'s range), from a stored bucket's packed
columns (remembered with its cached parts), raw BSON, a decoded document, or a live column-wise
bucket's arrays; None otherwise (the bucket then goes the generic way)."""

from __future__ import annotations

import datetime as _dt
from typing import Any

import numpy as np

from protocol.codec import decode
from server.timeseries.buckets import POS_KEYS
from server.timeseries.rawcolumns import DATE, DOUBLE, PackedColumn, column_length, parse_column

_EPOCH = _dt.datetime(1970, 1, 1)
# dates a BSON decode turns into ``datetime`` (outside: DatetimeMS, which the fast path does not build)
_MIN_MS = int((_dt.datetime.min - _EPOCH).total_seconds()) * 1000
_MAX_MS = int((_dt.datetime.max.replace(microsecond=0) - _EPOCH).total_seconds()) * 1000


def _dict_column(column: dict, type_byte: int, n: int | None) -> np.ndarray | None:
    """The values of a decoded column ``{"0": v0, ...}`` (a live bucket's) when dense and of one type."""
    count = len(column)
    if not count or (n is not None and count != n) or count > len(POS_KEYS) or list(column) != POS_KEYS[:count]:
        return None
    values = list(column.values())
    if type_byte == DOUBLE:
        return np.array(values, dtype=np.float64) if set(map(type, values)) == {float} else None
    if set(map(type, values)) != {_dt.datetime} or any(v.tzinfo is not None for v in values):
        return None
    return np.array(values, dtype="datetime64[ms]").view(np.int64)


def _column_array(column: Any, type_byte: int, n: int | None) -> np.ndarray | None:
    """The values of a dense column of ``type_byte`` values (of length ``n`` when given), else None."""
    if isinstance(column, PackedColumn):
        values = column.dense(type_byte)
    elif isinstance(column, bytes):
        length = column_length(column) if n is None else n
        values = parse_column(column, length, type_byte) if length else None
    elif isinstance(column, dict):
        values = _dict_column(column, type_byte, n)
    else:
        return None
    if values is None or not len(values) or (n is not None and len(values) != n):
        return None
    return values


def fast_arrays(bucket: dict, group: Any) -> tuple[np.ndarray, dict] | None:
    """(time ms, {field: float64 array}) of a bucket whose needed columns are all dense doubles
    without NaN and whose times decode to ``datetime``, else None. For a stored bucket the answer is
    remembered with its cached parts (it depends only on the stored content)."""
    data = bucket.get("data")
    if not isinstance(data, dict):
        return None
    time_column = data.get(group.time_field)
    entry = time_column.source.cached if isinstance(time_column, PackedColumn) else None
    if entry is None:
        return _fast_arrays(data, group)
    memo_key = fast_key(group)
    found = entry.memo.get(memo_key)
    if found is None:
        found = entry.memo[memo_key] = _fast_arrays(data, group) or False
    return found or None


def _fast_arrays(data: dict, group: Any) -> tuple[np.ndarray, dict] | None:
    times = _column_array(data.get(group.time_field), DATE, None)
    if times is None or times.min() < _MIN_MS or times.max() > _MAX_MS:
        return None
    n = len(times)
    arrays = {}
    for name in group.columns:
        values = _column_array(data.get(name), DOUBLE, n)
        if values is None or np.isnan(values).any():
            return None
        arrays[name] = values
    return times, arrays


def decoded(bucket: dict) -> dict:
    """``bucket`` with its undecoded (``bytes`` / ``PackedColumn``) data columns decoded."""
    data = bucket.get("data")
    if isinstance(data, dict) and any(isinstance(v, (bytes, PackedColumn)) for v in data.values()):
        bucket = dict(bucket)
        bucket["data"] = {k: decode(v) if isinstance(v, bytes) else decode(v.bson()) if isinstance(v, PackedColumn)
                          else v for k, v in data.items()}
    return bucket


def live_arrays(bucket: Any, group: Any) -> tuple[np.ndarray, dict] | None:
    """``fast_arrays(bucket.document(), group)`` of a live column-wise bucket, from a copy of its rows
    (None when it is not column-wise, its needed columns are not dense dates/doubles, or it has left
    memory meanwhile)."""
    rows_copy = getattr(bucket, "rows_copy", None)
    if rows_copy is None:
        return None
    table, tf = bucket.table, group.time_field
    if table.kinds.get(tf) != DATE or tf in table.constants:
        return None
    if any(table.kinds.get(name) != DOUBLE or name in table.constants for name in group.columns):
        return None
    copied = rows_copy([tf, *group.columns])
    if copied is None or not copied[0]:
        return None
    _, columns = copied
    times = columns[tf]
    if times.min() < _MIN_MS or times.max() > _MAX_MS:
        return None
    arrays = {name: columns[name] for name in group.columns}
    if any(np.isnan(values).any() for values in arrays.values()):
        return None
    return times, arrays


def fast_key(group: Any) -> tuple:
    """The memo key of ``fast_arrays`` for a stored bucket."""
    return ("fast arrays", group.time_field, tuple(group.columns))
