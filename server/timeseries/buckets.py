"""Buckets in version 1 format (pure): meta normalization, control min/max, schema classes, pack/unpack.

A v1 bucket document (spec §2.1)::

    {_id: ObjectId(<4-byte rounded start><5 process-random bytes><3-byte counter>),
     control: {version: 1, min: {<time>: start, <field>: min, ...}, max: {<time>: latest, ...}},
     meta: <normalized meta>            # absent when the measurements had no meta field
     data: {<time>: {"0": t0, "1": t1, ...}, <field>: {"<pos>": value, ...}, ...}}   # sparse columns

``OpenBucket`` is the in-memory form of one bucket being filled: columns are plain dicts keyed by the
position string (appending costs one dict insert per field), min/max are updated incrementally, and the
full document is produced on demand (cached until the next append).
"""

from __future__ import annotations

import datetime as _dt
import itertools
import operator
import os
import threading
from collections.abc import Iterable, Iterator
from typing import Any

import bson
from bson.datetime_ms import DatetimeMS
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.objectid import ObjectId

from protocol.codec import CODEC_OPTIONS
from server.timeseries.minmax import (  # noqa: F401 - re-exported for callers of this module
    ARRAY,
    BINARY,
    BOOL,
    DATE,
    NULL,
    NUMBER,
    OBJECT,
    OID,
    OTHER,
    STRING,
    _copy,
    _snapshot,
    compare_same_class,
    compatible,
    merge_extreme,
    type_class,
)

EPOCH = _dt.datetime(1970, 1, 1)
MISSING = object()  # "no meta field" — distinct from a null meta
POS_KEYS = [str(i) for i in range(100_000)]

# ---------------------------------------------------------------- dates


def date_ms(value: Any) -> int | None:
    """Milliseconds since the epoch of a BSON date value, or None if ``value`` is not a date."""
    if type(value) is _dt.datetime:
        if value.tzinfo is not None:
            value = value.astimezone(_dt.UTC).replace(tzinfo=None)
        delta = value - EPOCH
        return (delta.days * 86400 + delta.seconds) * 1000 + delta.microseconds // 1000
    if isinstance(value, DatetimeMS):
        return int(value)
    if isinstance(value, _dt.datetime):
        return date_ms(_dt.datetime(*value.timetuple()[:6], value.microsecond, tzinfo=value.tzinfo))
    return None


def ms_to_date(ms: int) -> Any:
    """A BSON date for ``ms`` (``datetime`` when representable, else ``DatetimeMS``)."""
    try:
        return EPOCH + _dt.timedelta(milliseconds=ms)
    except OverflowError:
        return DatetimeMS(ms)


def round_start_seconds(t_ms: int, rounding_seconds: int) -> int:
    """Bucket start in seconds: ``t`` floored (towards -inf) to a multiple of the rounding (§3.1)."""
    seconds = t_ms // 1000
    return seconds - seconds % rounding_seconds


# ---------------------------------------------------------------- bucket ids

_OID_LOCK = threading.Lock()
_OID_INSTANCE = os.urandom(5)
_OID_COUNTER = [int.from_bytes(os.urandom(3), "big")]


def new_bucket_id(start_seconds: int) -> ObjectId:
    """4-byte rounded start (wrapping outside 1970..2106) + 5 process-random bytes + 3-byte counter."""
    with _OID_LOCK:
        _OID_COUNTER[0] = (_OID_COUNTER[0] + 1) & 0xFFFFFF
        counter = _OID_COUNTER[0]
    return ObjectId((start_seconds & 0xFFFFFFFF).to_bytes(4, "big") + _OID_INSTANCE + counter.to_bytes(3, "big"))


def oid_bound(seconds: int, *, high: bool) -> ObjectId:
    """OID(min|max, seconds): the given timestamp with all-0 or all-FF remaining bytes (§5.2)."""
    seconds = min(max(seconds, 0), 0xFFFFFFFF)
    return ObjectId(seconds.to_bytes(4, "big") + (b"\xff" * 8 if high else b"\x00" * 8))


# ---------------------------------------------------------------- meta


def normalize_meta(value: Any) -> Any:
    """Sort every (nested) object's fields; arrays keep their order (§3.6)."""
    if isinstance(value, dict):
        return {k: normalize_meta(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [normalize_meta(v) for v in value]
    return value


def meta_key(normalized: Any) -> Any:
    """A hashable grouping key of a normalized meta value (MISSING stays MISSING)."""
    if normalized is MISSING:
        return MISSING
    kind = type(normalized)
    if kind is str or kind is bool or normalized is None:
        return (kind.__name__, normalized)
    return bson.encode({"": normalized}, codec_options=CODEC_OPTIONS)


# ---------------------------------------------------------------- type classes and ordering (minmax.py)

# ---------------------------------------------------------------- sizes

_FIXED_SIZES = {float: 8, int: 8, Int64: 8, bool: 1, type(None): 0, _dt.datetime: 8, DatetimeMS: 8, ObjectId: 12,
                Decimal128: 16}


def value_size(value: Any) -> int:
    """Approximate BSON size of a value (without element header)."""
    size = _FIXED_SIZES.get(type(value))
    if size is not None:
        return size
    if type(value) is str:
        return len(value) + 5
    return len(bson.encode({"": value}, codec_options=CODEC_OPTIONS)) - 7


# ---------------------------------------------------------------- the open bucket

_T_MS = operator.itemgetter(1)
_FAST_TYPES = frozenset({float, int, Int64, str, bool, _dt.datetime, ObjectId})
COUNT, SIZE, SCHEMA = "Count", "Size", "SchemaChange"
KEPT_OPEN = "KeptOpenDueToLargeMeasurements"  # not a rollover: counted, the measurement joins the bucket


class OpenBucket:
    """One bucket being filled. Not thread-safe: only the catalog (event loop) mutates it."""

    __slots__ = ("id", "ns", "time_field", "meta_field", "meta", "key", "start_s", "count", "size",
                 "columns", "mins", "maxs", "max_time_ms", "_doc", "pending", "journaled", "committed", "needs_full", "open", "_shape", "full_size",
                 "full_count")

    def __init__(self, bucket_id: ObjectId, ns: str, time_field: str, meta_field: str | None,
                 meta: Any, start_s: int):
        self.id = bucket_id
        self.ns = ns
        self.time_field = time_field
        self.meta_field = meta_field
        self.meta = meta  # normalized, or MISSING
        self.key = meta_key(meta)
        self.start_s = start_s
        self.count = 0
        self.size = value_size(meta) if meta is not MISSING else 0
        self.columns: dict[str, dict[str, Any]] = {time_field: {}}
        self.mins: dict[str, Any] = {time_field: ms_to_date(start_s * 1000)}
        self.maxs: dict[str, Any] = {time_field: None}
        self.max_time_ms: int | None = None
        self._doc: dict | None = None
        self.pending: list[dict] = []  # measurements appended since the last commit drain
        self.journaled = False  # journal records exist since the last full write
        self.committed = False  # some commit has made this bucket durable (bucket insert vs update)
        self.needs_full = False  # the next commit writes the full document (close, archive, checkpoint)
        self.open = True  # still routable by the catalog (else archived/closed, awaiting its full write)
        self._shape: tuple | None = None  # (keys, types, fixed size, string fields) of the last fast run
        self.full_size = 0  # size at the last full write (checkpoint policy)
        self.full_count = 0  # measurements in the last full write

    # -- rollover checks (span/time-backward are the catalog's: they need the options)
    def rollover_reason(self, measurement: dict, max_count: int, max_size: int, min_count: int,
                        large_cap: int, size: int | None = None, *, schema_checked: bool = False) -> str | None:
        """Why ``measurement`` cannot join this bucket (count, size, schema change), else None.

        ``size``: the measurement's size if the caller already knows it (e.g. its BSON length);
        ``schema_checked``: the caller knows the measurement cannot change the bucket's schema."""
        if self.count >= max_count:
            return COUNT
        mins = self.mins
        time_field, meta_field = self.time_field, self.meta_field
        for field, value in () if schema_checked else measurement.items():
            current = mins.get(field, MISSING)
            if current is MISSING or field == time_field or field == meta_field:
                continue
            kind = type(value)
            if kind is not type(current) or kind is dict or kind is list:
                if not compatible(current, value):
                    return SCHEMA
        if self.count:
            if size is None:
                size = self.measurement_size(measurement)
            if self.size + size > max_size:
                if self.count >= min_count or self.size + size > large_cap:
                    return SIZE
                return KEPT_OPEN  # large measurements: below the minimum count the bucket stays open
        return None

    def measurement_size(self, measurement: dict) -> int:
        """Approximate bytes the measurement adds to the bucket (BSON size of its values)."""
        digits = len(POS_KEYS[self.count]) if self.count < len(POS_KEYS) else 6
        size = 0
        columns = self.columns
        for field, value in measurement.items():
            if field == self.meta_field:
                continue
            vsize = value_size(value) + digits + 2
            if field not in columns:
                vsize += 12 + len(field) + 2 * vsize
            size += vsize
        return size

    def append(self, measurement: dict, t_ms: int, time_value: Any, size: int | None = None) -> None:
        """Add one measurement (already routed here: rollover checks passed)."""
        count = self.count
        pos = POS_KEYS[count] if count < 100_000 else str(count)
        self.size += self.measurement_size(measurement) if size is None else size
        columns, mins, maxs = self.columns, self.mins, self.maxs
        time_field, meta_field = self.time_field, self.meta_field
        fast = _FAST_TYPES
        for field, value in measurement.items():
            column = columns.get(field)
            if column is None:
                if field == meta_field:
                    continue
                columns[field] = column = {}
            column[pos] = value
            current = mins.get(field, MISSING)
            if current is MISSING:
                if field == time_field:
                    continue
                mins[field] = _copy(value)
                maxs[field] = _copy(value)
                continue
            kind = type(value)
            if kind is type(current) and kind in fast and value == value and current == current:
                if field == time_field:
                    continue
                if value < current:
                    mins[field] = value
                elif value > maxs[field]:
                    maxs[field] = value
            elif field != time_field:
                mins[field] = merge_extreme(current, value, -1)
                maxs[field] = merge_extreme(maxs[field], value, 1)
        if self.max_time_ms is None or t_ms > self.max_time_ms:
            self.max_time_ms = t_ms
            maxs[time_field] = time_value
        self.count = count + 1
        self._doc = None

    # -- column-wise appends of same-shaped measurements (the hot path of large inserts)
    def shape_of(self, measurement: dict) -> tuple | None:
        """``(keys, types, fixed_size, string_fields, exact_fixed_size, value_count, minmax_fields)`` when
        every value of ``measurement`` (meta aside) is a plain scalar, so that measurements of the
        same keys and types can be appended column-wise without per-value schema checks; None
        otherwise. Once a measurement of a shape is in the bucket, later ones of that shape cannot
        change its schema (type classes per field never change in a bucket). ``minmax_fields`` lists
        ``(field, is_float)`` for every field but time and meta."""
        keys = tuple(measurement)
        types = tuple(map(type, measurement.values()))
        shape = self._shape
        if shape is not None and shape[0] == keys and shape[1] == types:
            return shape
        fixed = 0
        exact = 0  # sum of value_size over the fixed-size values and the strings' 5-byte overhead
        strings = []
        values = []
        meta_field, time_field = self.meta_field, self.time_field
        for field, kind in zip(keys, types, strict=True):
            if field == meta_field:
                continue
            if kind not in _FAST_TYPES:
                return None
            if field != time_field:
                values.append((field, kind is float))
            if kind is str:
                strings.append(field)
                fixed += 5 + 8
                exact += 5
            else:
                fixed += _FIXED_SIZES[kind] + 8
                exact += _FIXED_SIZES[kind]
        if time_field not in keys or types[keys.index(time_field)] is not _dt.datetime:
            return None
        self._shape = shape = (keys, types, fixed, tuple(strings), exact, len(values) + 1, tuple(values))
        return shape

    def shaped_size(self, measurement: dict, shape: tuple) -> int:
        """``measurement_size(measurement)`` for a measurement of ``shape`` (see ``shape_of``) whose
        fields all have columns already: no per-value type dispatch."""
        count = self.count
        digits = len(POS_KEYS[count]) if count < len(POS_KEYS) else 6
        size = shape[4] + shape[5] * (digits + 2)
        for field in shape[3]:
            size += len(measurement[field])
        return size

    def append_shaped(self, measurement: dict, t_ms: int, time_value: Any, size: int, shape: tuple) -> None:
        """``append`` for a measurement of the bucket's cached ``shape`` (a measurement of that shape is
        already in the bucket, so every column and min/max exists): type-specialised min/max updates."""
        count = self.count
        pos = POS_KEYS[count] if count < 100_000 else str(count)
        columns, mins, maxs = self.columns, self.mins, self.maxs
        columns[self.time_field][pos] = time_value
        for field, is_float in shape[6]:
            value = measurement[field]
            columns[field][pos] = value
            current = mins[field]
            # only floats can be NaN (which compares false with everything): other types skip the check
            if type(current) is type(value) and (not is_float or (value == value and current == current)):
                if value < current:
                    mins[field] = value
                elif value > maxs[field]:
                    maxs[field] = value
            else:
                mins[field] = merge_extreme(current, value, -1)
                maxs[field] = merge_extreme(maxs[field], value, 1)
        if self.max_time_ms is None or t_ms > self.max_time_ms:
            self.max_time_ms = t_ms
            maxs[self.time_field] = time_value
        self.size += size
        self.count = count + 1
        self._doc = None

    def append_run(self, run: list[tuple[dict, int, Any]], keys: tuple[str, ...], sizes: list[int]) -> None:
        """Append ``(measurement, t_ms, time_value)`` items that all have the shape ``keys`` (see
        ``shape_of``) and already passed the rollover rules, column by column."""
        measurements = [item[0] for item in run]
        count = self.count
        k = len(measurements)
        positions = POS_KEYS[count:count + k] if count + k <= len(POS_KEYS) else [
            str(p) for p in range(count, count + k)]
        columns = self.columns
        time_field, meta_field = self.time_field, self.meta_field
        for field in keys:
            if field == meta_field:
                continue
            values = [m[field] for m in measurements]
            column = columns.get(field)
            if column is None:
                columns[field] = column = {}
            column.update(zip(positions, values, strict=True))
            if field != time_field:
                self._merge_extremes(field, values)
        latest = max(run, key=_T_MS)
        if self.max_time_ms is None or latest[1] > self.max_time_ms:
            self.max_time_ms = latest[1]
            self.maxs[time_field] = latest[2]
        self.size += sum(sizes)
        self.count = count + k
        self._doc = None

    def _merge_extremes(self, field: str, values: list) -> None:
        mins, maxs = self.mins, self.maxs
        first = values[0]
        if type(first) is float:
            total = sum(values)
            if total != total:  # a NaN (or inf - inf): per-value canonical comparison
                return self._merge_each(field, values)
        low, high = min(values), max(values)
        current = mins.get(field, MISSING)
        if current is MISSING:
            mins[field] = low
            maxs[field] = high
            return
        top = maxs[field]
        kind = type(low)
        if type(current) is kind and type(top) is kind and current == current and top == top:
            if low < current:
                mins[field] = low
            if high > top:
                maxs[field] = high
            return
        self._merge_each(field, values)

    def _merge_each(self, field: str, values: list) -> None:
        mins, maxs = self.mins, self.maxs
        for value in values:
            current = mins.get(field, MISSING)
            if current is MISSING:
                mins[field] = _copy(value)
                maxs[field] = _copy(value)
            else:
                mins[field] = merge_extreme(current, value, -1)
                maxs[field] = merge_extreme(maxs[field], value, 1)

    def document(self) -> dict[str, Any]:
        """The full v1 bucket document (cached until the next append; callers must not mutate it).

        Readers call this from worker threads while the event loop appends: every container is
        copied with one C-level call (atomic under the GIL), and the result is cached only if no
        append happened meanwhile."""
        doc = self._doc
        if doc is None:
            version = self.count
            doc = {"_id": self.id, "control": {"version": 1, "min": _snapshot(self.mins),
                                               "max": _snapshot(self.maxs)}}
            if self.meta is not MISSING:
                doc["meta"] = _snapshot(self.meta)  # readers share it across measurements, never the catalog's
            doc["data"] = {field: column.copy() for field, column in list(self.columns.items())}
            if self.count == version:
                self._doc = doc
        return doc

    def summary(self) -> dict[str, Any]:
        """``{_id, control, meta?}`` without the data columns (what bucket-level predicates read)."""
        out: dict[str, Any] = {"_id": self.id, "control": {"version": 1, "min": _snapshot(self.mins),
                                                         "max": _snapshot(self.maxs)}}
        if self.meta is not MISSING:
            out["meta"] = self.meta
        return out

    @classmethod
    def from_document(cls, doc: dict, ns: str, time_field: str, meta_field: str | None) -> OpenBucket:
        """Rebuild the in-memory form of a stored bucket (reopening, recovery)."""
        start_ms = date_ms(doc["control"]["min"][time_field])
        meta = normalize_meta(doc["meta"]) if "meta" in doc else MISSING
        bucket = cls(doc["_id"], ns, time_field, meta_field, meta, start_ms // 1000)
        for measurement in unpack_document(doc, time_field, None):
            time_value = measurement[time_field]
            bucket.append(measurement, date_ms(time_value), time_value)
        return bucket


# ---------------------------------------------------------------- unpacking


def unpack_document(doc: dict, time_field: str, meta_field: str | None,
                    fields: Iterable[str] | None = None) -> Iterator[dict]:
    """Measurements of a v1 bucket document: time field first, then the meta field (when the bucket
    has ``meta`` and ``meta_field`` is given), then the other columns in bucket order.

    ``fields``: if given, only these measurement fields are materialized (column-selective unpack);
    the time field and meta are included only when listed.
    """
    data = doc.get("data") or {}
    time_column = data.get(time_field)
    if not time_column:
        return
    positions = list(time_column.keys())
    n = len(positions)
    wanted = None if fields is None else set(fields)
    include_time = wanted is None or time_field in wanted
    has_meta = meta_field is not None and "meta" in doc and (wanted is None or meta_field in wanted)
    meta = doc.get("meta")
    dense: list[tuple[str, list]] = []
    sparse: list[tuple[str, dict]] = []
    for field, column in data.items():
        if field == time_field or (wanted is not None and field not in wanted):
            continue
        if not isinstance(column, dict):
            continue
        if len(column) == n and list(column.keys()) == positions:
            dense.append((field, list(column.values())))
        else:
            sparse.append((field, column))
    names: list[str] = []
    columns: list[Any] = []
    if include_time:
        names.append(time_field)
        columns.append(time_column.values())
    if has_meta:
        names.append(meta_field)
        columns.append(itertools.repeat(meta, n))  # shared by the bucket's measurements: stages copy on write
    for field, values in dense:
        names.append(field)
        columns.append(values)
    rows = zip(*columns, strict=True) if columns else itertools.repeat((), n)
    if not sparse:
        for row in rows:  # each measurement built by one C-level dict(zip(...))
            yield dict(zip(names, row, strict=True))
        return
    for key, row in zip(positions, rows, strict=True):
        out = dict(zip(names, row, strict=True))
        for field, column in sparse:
            value = column.get(key, MISSING)
            if value is not MISSING:
                out[field] = value
        yield out
