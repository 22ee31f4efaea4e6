"""Values of bucket columns (pure): which values a NumPy column holds, their conversions, the BSON of a
data column, and a column's exact control min/max.

A bucket column is one of three kinds (bucket.py):

- **typed**: every row holds a value of one fixed-width BSON type — double, int32, int64, date (int64
  milliseconds), bool, ObjectId (12-byte void) — kept in a NumPy array;
- **constant**: every row holds the same value (a string, null...), kept once;
- **object**: anything else (strings that vary, objects, arrays, decimals, mixed types, missing rows),
  kept as a Python list with ``MISSING`` where a row lacks the field.

Control min/max follow MongoDB's order within a type class (NaN lowest, numbers canonically), and of
equal values the first one wins (e.g. 0.0 before -0.0), exactly as accumulating row by row gives.

Nothing here caches per value; the dense-column templates live in storage's bucket codec (one per type).
"""

from __future__ import annotations

import datetime as _dt
import struct
from typing import Any, cast

import bson
import numpy as np
from bson.datetime_ms import DatetimeMS
from bson.int64 import Int64
from bson.objectid import ObjectId

from tidemark.protocol.codec import CODEC_OPTIONS
from tidemark.timeseries.bucketdoc import MISSING, POS_KEYS, date_ms, date_ms_of, ms_to_date
from tidemark.timeseries.minmax import copy_value, merge_extreme

DOUBLE, STRING, OBJECT, ARRAY, BINARY, OID, BOOL, DATE, NULL, INT32, INT64 = (
    0x01, 0x02, 0x03, 0x04, 0x05, 0x07, 0x08, 0x09, 0x0A, 0x10, 0x12)
WIDTH = {DOUBLE: 8, OID: 12, BOOL: 1, DATE: 8, INT32: 4, INT64: 8}
DTYPE = {DOUBLE: np.dtype("<f8"), OID: np.dtype("V12"), BOOL: np.dtype("?"), DATE: np.dtype("<i8"),
         INT32: np.dtype("<i4"), INT64: np.dtype("<i8")}
TYPED = frozenset(WIDTH)
_INT32 = struct.Struct("<i")
# dates ``datetime`` holds (outside: DatetimeMS, as bson.decode gives them)
MIN_DATETIME_MS = date_ms_of(_dt.datetime.min)
MAX_DATETIME_MS = date_ms_of(_dt.datetime.max.replace(microsecond=999000))
_I32_LOW, _I32_HIGH = -(2**31), 2**31 - 1


def typed_kind(value: Any) -> int | None:
    """The typed kind a column of such values can have (the BSON type pymongo encodes it as), else None."""
    kind = type(value)
    if kind is float:
        return DOUBLE
    if kind is int:
        return INT32 if _I32_LOW <= value <= _I32_HIGH else INT64 if -(2**63) <= value < 2**63 else None
    if kind is _dt.datetime:
        return DATE if value.tzinfo is None else None
    if kind is ObjectId:
        return OID
    if kind is bool:
        return BOOL
    if kind is Int64:
        return INT64
    if kind is DatetimeMS:
        return DATE
    return None


def to_array(kind: int, values: list[Any]) -> np.ndarray:
    """The NumPy form of Python values that all have ``typed_kind(v) == kind``."""
    if kind == DATE:
        return np.fromiter((date_ms(v) for v in values), np.int64, len(values))
    if kind == OID:
        return np.frombuffer(b"".join(v.binary for v in values), "V12").copy()
    return np.asarray(values, DTYPE[kind])


def python_values(kind: int, values: np.ndarray) -> list[Any]:
    """The values of a typed column as ``bson.decode`` gives them (dates as ``datetime`` when in range)."""
    out: list[Any]  # NumPy types ``tolist()`` as Any
    if kind == DOUBLE or kind == INT32 or kind == BOOL:
        out = values.tolist()
        return out
    if kind == DATE:
        if not len(values):
            return []
        if MIN_DATETIME_MS <= int(values.min()) and int(values.max()) <= MAX_DATETIME_MS:
            out = values.astype("datetime64[ms]").tolist()
            return out
        return [ms_to_date(v) for v in values.tolist()]
    if kind == INT64:
        return [Int64(v) for v in values.tolist()]
    if kind == OID:
        raw = values.tobytes()
        return [ObjectId(raw[i:i + 12]) for i in range(0, len(raw), 12)]
    raise ValueError(f"no typed column of BSON type {kind:#x}")


def python_value(kind: int, value: Any) -> Any:
    """One NumPy scalar of a typed column as ``bson.decode`` gives it."""
    if kind == DOUBLE:
        return float(value)
    if kind == INT32:
        return int(value)
    if kind == INT64:
        return Int64(int(value))
    if kind == DATE:
        return ms_to_date(int(value))
    if kind == BOOL:
        return bool(value)
    if kind == OID:
        return ObjectId(bytes(value))
    raise ValueError(f"no typed column of BSON type {kind:#x}")


def class_sample(kind: int) -> Any:
    """A value of a typed kind's type class (schema checks compare classes)."""
    return _SAMPLES[kind]


_SAMPLES = {DOUBLE: 0.0, INT32: 0, INT64: Int64(0), DATE: _dt.datetime(1970, 1, 1), BOOL: False,
            OID: ObjectId(b"\x00" * 12)}

# ---------------------------------------------------------------- BSON of data columns


def constant_bson(value: Any, n: int) -> bytes:
    """The BSON document of a column holding ``value`` in each of ``n`` rows (O(n * value size), the
    column's own size: nothing is cached per value)."""
    if n == 0:
        return b"\x05\x00\x00\x00\x00"
    element = bson.encode({"": value}, codec_options=CODEC_OPTIONS)[4:-1]  # <type>\0<value>
    kind, payload = element[:1], element[2:]
    # <type><"0">\0<value><type><"1">\0<value>... as one join over the cached key bytes
    body = kind + (payload + kind).join(_key_bytes(n)) + payload
    return _INT32.pack(len(body) + 5) + body + b"\x00"


def object_bson(values: list[Any]) -> bytes:
    """The BSON document of an object column (rows holding ``MISSING`` are left out)."""
    column = {key: value for key, value in zip(_keys(len(values)), values, strict=True) if value is not MISSING}
    return bson.encode(column, codec_options=CODEC_OPTIONS)


def _keys(n: int) -> list[str]:
    return POS_KEYS[:n] if n <= len(POS_KEYS) else [str(i) for i in range(n)]


_KEY_BYTES = [str(i).encode() + b"\x00" for i in range(4096)]  # "<i>\0" of the first positions


def _key_bytes(n: int) -> list[bytes]:
    return _KEY_BYTES[:n] if n <= len(_KEY_BYTES) else _KEY_BYTES + [str(i).encode() + b"\x00" for i in range(4096, n)]


# ---------------------------------------------------------------- exact min/max


def typed_extremes(kind: int, values: np.ndarray) -> tuple[Any, Any]:
    """(min, max) of a non-empty typed column as Python values, as control fields hold them: numbers
    canonically with NaN below everything, the first of equal values (e.g. 0.0 and -0.0)."""
    if len(values) == 1:  # a one-row bucket (every bucket of a series explosion): no reductions
        value = python_value(kind, values[0])
        return value, value
    if kind == DOUBLE:
        nan = np.isnan(values)
        if nan.all():
            first = float(values[0])
            return first, first
        if nan.any():
            low = float(values[int(np.argmax(nan))])  # the first NaN is the minimum
            finite = values[~nan]
            high = finite[int(np.argmax(finite == finite.max()))]
            return low, float(high)
        low, high = values.min(), values.max()
        return float(values[int(np.argmax(values == low))]), float(values[int(np.argmax(values == high))])
    if kind == OID:
        raw = values.view(np.uint8).reshape(-1, 12)
        hi = raw[:, :8].copy().view(">u8").reshape(-1)
        lo = raw[:, 8:].copy().view(">u4").reshape(-1)
        order = np.lexsort((lo, hi))
        return ObjectId(raw[order[0]].tobytes()), ObjectId(raw[order[-1]].tobytes())
    low, high = values.min(), values.max()
    return python_value(kind, low), python_value(kind, high)


def extremes_by_kind(by_kind: dict[int, list[str]], columns: dict[str, np.ndarray]) -> dict[str, list[tuple[Any, Any]]]:
    """``typed_extremes`` of every column in ``by_kind`` (kind -> names) for each of k buckets
    (``columns``: name -> its k x n values), one NumPy reduction per kind for all its columns of all k
    buckets (a bucket has many columns of few hundred rows: per-call overhead dominates)."""
    out: dict[str, list[tuple[Any, Any]]] = {}
    for kind, names in by_kind.items():
        if kind == OID:  # ObjectIds order as their 12 bytes big-endian: one row-wise lexsort for all k
            for name in names:
                values = columns[name]
                k, n = values.shape
                raw = np.ascontiguousarray(values).view(np.uint8).reshape(k, n, 12)
                hi = np.ascontiguousarray(raw[:, :, :8]).view(">u8").reshape(k, n)
                lo = np.ascontiguousarray(raw[:, :, 8:]).view(">u4").reshape(k, n)
                order = np.lexsort((lo, hi))  # along each row
                every = np.arange(k)
                lows, highs = raw[every, order[:, 0]].tobytes(), raw[every, order[:, -1]].tobytes()
                out[name] = [(ObjectId(lows[i:i + 12]), ObjectId(highs[i:i + 12])) for i in range(0, 12 * k, 12)]
            continue
        stacked = np.stack([columns[name] for name in names], axis=1)  # k x columns x n
        lows, highs = stacked.min(axis=2), stacked.max(axis=2)
        inexact: list[tuple[int, int]] = []
        if kind == DOUBLE:
            # NaN and signed zeros need the first-of-equals rule: those columns take the exact path
            exact = ~np.isnan(lows) & ~np.isnan(highs)
            zero = (lows == 0) | (highs == 0)
            if zero.any():
                exact &= ~(zero & (np.signbit(stacked) & (stacked == 0)).any(axis=2))
            if not exact.all():
                inexact = [(int(i), int(c)) for i, c in zip(*np.nonzero(~exact), strict=True)]
            lows_list, highs_list = lows.T.tolist(), highs.T.tolist()
        else:
            lows_list, highs_list = _python_lists(kind, lows.T), _python_lists(kind, highs.T)
        for c, name in enumerate(names):
            out[name] = list(zip(lows_list[c], highs_list[c], strict=True))
        for i, c in inexact:
            out[names[c]][i] = typed_extremes(kind, columns[names[c]][i])
    return out


def _python_lists(kind: int, values: np.ndarray) -> list[list[Any]]:
    """``python_value`` of each item of a 2-D array of a typed kind's values, as nested lists."""
    rows: list[list[Any]] = values.tolist()
    if kind == INT64:
        return [[Int64(v) for v in row] for row in rows]
    if kind == DATE:
        return [[ms_to_date(v) for v in row] for row in rows]
    if kind == BOOL:
        return [[bool(v) for v in row] for row in rows]
    return rows  # int32: ints


def object_extremes(values: list[Any], collation: Any = None) -> tuple[Any, Any] | None:
    """(min, max) of an object column's present values, merged row by row (objects field-wise,
    arrays element-wise; strings under ``collation``, the collection's default); None when no row
    holds the field."""
    low = high = MISSING
    for value in values:
        if value is MISSING:
            continue
        if low is MISSING:
            low, high = copy_value(value), copy_value(value)
        else:
            low = merge_extreme(low, value, -1, collation)
            high = merge_extreme(high, value, 1, collation)
    return None if low is MISSING else (low, high)


def control_summary(bucket_id: Any, meta: Any, start_s: int, time_field: str, columns: dict[str, Any],
                    typed: dict[str, np.ndarray], n: int, collation: Any = None) -> dict[str, Any]:
    """``control_summaries`` of one bucket (``typed``: its first ``n`` values of each typed column)."""
    return control_summaries([bucket_id], [meta], [start_s], time_field, columns,
                             {name: values[None] for name, values in typed.items()}, n, collation)[0]


def control_summaries(bucket_ids: list[Any], metas: list[Any], starts_s: list[int], time_field: str,
                      columns: dict[str, Any], typed: dict[str, np.ndarray], n: int,
                      collation: Any = None) -> list[dict[str, Any]]:
    """``{_id, control: {version: 1, min, max}, meta?}`` of the first ``n`` rows of each of k buckets
    with the same ``columns``: the one builder of a bucket's control, for full documents
    (``bucket.full_documents``) and for what reads take of an in-memory bucket
    (``bucketview.LiveBucket.summary``). ``columns``: the buckets' columns in order; ``typed``: the
    first ``n`` values of each typed column of the k buckets (k x n; the time field's included).

    The time field's min is the rounded start, its max the latest time; every other field's min and
    max are over the rows holding it (typed columns one NumPy reduction per kind for all k buckets,
    object columns merged row by row with strings under ``collation``, the collection's default); a
    field no row below ``n`` holds is left out."""
    by_kind: dict[int, list[str]] = {}
    for name, column in columns.items():
        if type(column) is TableColumn and name != time_field:
            by_kind.setdefault(column.kind, []).append(name)
    found = extremes_by_kind(by_kind, typed) if n else {}
    latest = typed[time_field].max(axis=1).tolist() if n else None
    shared: list[tuple[str, Any, Any]] = []  # (name, min, max) the same in every bucket
    if n:
        for name, column in columns.items():
            kind = type(column)
            if kind is ConstColumn and name != time_field:
                shared.append((name, column.value, column.value))
            elif kind is ObjectColumn and name != time_field:
                extremes = object_extremes(cast(ObjectColumn, column).values[:n], collation)
                if extremes is not None:
                    shared.append((name, *extremes))
    out = []
    for i, (bucket_id, meta, start_s) in enumerate(zip(bucket_ids, metas, starts_s, strict=True)):
        mins: dict[str, Any] = {time_field: ms_to_date(start_s * 1000)}
        maxs: dict[str, Any] = {time_field: ms_to_date(latest[i]) if latest is not None else None}
        if n:
            at = 0
            for name, column in columns.items():
                if name == time_field:
                    continue
                if type(column) is TableColumn:
                    mins[name], maxs[name] = found[name][i]
                elif at < len(shared) and shared[at][0] == name:
                    _, mins[name], maxs[name] = shared[at]
                    at += 1
        summary: dict[str, Any] = {"_id": bucket_id, "control": {"version": 1, "min": mins, "max": maxs}}
        if meta is not MISSING:
            summary["meta"] = meta
        out.append(summary)
    return out


# ---------------------------------------------------------------- the three column kinds of a bucket


class TableColumn:
    """A typed column: a bucket's values are ``table.data[name][bucket.slot, :count]`` (table.py)."""

    __slots__ = ("name", "kind")
    typed = True

    def __init__(self, name: str, kind: int):
        self.name, self.kind = name, kind

    def schema(self) -> Any:
        return _SAMPLES[self.kind]


class ConstColumn:
    """A constant column: every row holds ``value``."""

    __slots__ = ("name", "value")
    typed = False

    def __init__(self, name: str, value: Any):
        self.name, self.value = name, value

    def schema(self) -> Any:
        return self.value


class ObjectColumn:
    """Any other column: one Python value per row, ``MISSING`` where the row lacks the field.
    ``low`` is the running min of the present values: the schema the next value must be compatible
    with (rules 4); recomputed from the values after a rollback."""

    __slots__ = ("name", "values", "low")
    typed = False

    def __init__(self, name: str, values: list[Any]):
        self.name, self.values = name, values
        self.low: Any = MISSING
        self.recompute()

    def schema(self) -> Any:
        return self.low

    def extend(self, values: list[Any]) -> None:
        self.values.extend(values)
        low = self.low
        for value in values:
            if value is MISSING:
                continue
            low = copy_value(value) if low is MISSING else merge_extreme(low, value, -1)
        self.low = low

    def recompute(self) -> None:
        found = object_extremes(self.values)
        self.low = MISSING if found is None else found[0]

    def present(self, n: int) -> bool:
        """True when some row below ``n`` holds the field."""
        return any(value is not MISSING for value in self.values[:n])
