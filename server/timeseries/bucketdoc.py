"""Version-1 bucket documents (pure): dates, bucket ids, meta normalization, and unpacking a v1
document into measurements.

A v1 bucket document (spec §2.1)::

    {_id: ObjectId(<4-byte rounded start><5 process-random bytes><3-byte counter>),
     control: {version: 1, min: {<time>: start, <field>: min, ...}, max: {<time>: latest, ...}},
     meta: <normalized meta>            # absent when the measurements had no meta field
     data: {<time>: {"0": t0, "1": t1, ...}, <field>: {"<pos>": value, ...}, ...}}   # sparse columns

The in-memory model of a bucket being filled is ``bucket.Bucket``; this module only knows documents.
"""

from __future__ import annotations

import datetime as _dt
import itertools
import os
import threading
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, cast

import bson
from bson.datetime_ms import DatetimeMS
from bson.objectid import ObjectId

from tidemark.protocol.codec import CODEC_OPTIONS

EPOCH = _dt.datetime(1970, 1, 1)
_MS = _dt.timedelta(milliseconds=1)
MISSING = object()  # "no meta field" / "no value in this row" — distinct from null
POS_KEYS = [str(i) for i in range(100_000)]

# ---------------------------------------------------------------- dates


def date_ms(value: Any) -> int | None:
    """Milliseconds since the epoch of a BSON date value, or None if ``value`` is not a date."""
    if type(value) is _dt.datetime:
        if value.tzinfo is not None:
            value = value.astimezone(_dt.UTC).replace(tzinfo=None)
        delta: _dt.timedelta = value - EPOCH  # (its fields' arithmetic: ~10 % faster than ``delta // _MS``)
        return (delta.days * 86400 + delta.seconds) * 1000 + delta.microseconds // 1000
    if isinstance(value, DatetimeMS):
        return int(value)
    if isinstance(value, _dt.datetime):
        return date_ms(_dt.datetime(*value.timetuple()[:6], value.microsecond, tzinfo=value.tzinfo))
    return None


def control_time_range(summary: dict[str, Any], time_field: str) -> tuple[int | None, int | None]:
    """A bucket summary's ``control.min`` and ``control.max`` of the time field in ms (None: not a date)."""
    control = summary.get("control") or {}
    return date_ms((control.get("min") or {}).get(time_field)), date_ms((control.get("max") or {}).get(time_field))


def date_ms_of(value: Any) -> int:
    """``date_ms`` of a value that must be a BSON date (a DATE-class value, a bucket's control time);
    TypeError otherwise."""
    ms = date_ms(value)
    if ms is None:
        raise TypeError(f"not a BSON date: {type(value).__name__}")
    return ms


def ms_to_date(ms: int) -> Any:
    """A BSON date for ``ms`` (``datetime`` when representable, else ``DatetimeMS``). A time past
    either end of the 64-bit range is that end: callers compute bounds (a query's time +- a bucket's
    span) that may pass it, and no stored date lies beyond it."""
    try:
        return EPOCH + _MS * ms
    except OverflowError:
        return DatetimeMS(min(max(ms, _INT64_MIN), _INT64_MAX))


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def time_bound_paths(time_field: str) -> frozenset[str]:
    """``control.min/max.<time>``: one date per bucket (the buckets validator), so a planner keeps a
    range on them two-sided even on a buckets index taken as multikey (stores written before the write
    paths kept the flag for buckets hold unflagged ones)."""
    return frozenset(("control.min." + time_field, "control.max." + time_field))


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


# A meta point: (path of field names from the meta value, exact type, value) of a leaf of a meta value
# whose type compares by identity under the simple collation (a string, an ObjectId, a bool: equal to a
# query value exactly when of the same type and equal in Python). A bucket's meta either holds a point
# at a path or cannot equal a query value of one of those types there, unless the meta holds an array
# (an equality matches an element of it): ``meta_points`` says None then. The catalog keeps its
# in-memory buckets by point and reads ask it for a point's buckets (``CollectionState.buckets_at``).
POINT_TYPES = (str, ObjectId, bool)
MetaPoint = tuple[tuple[str, ...], type, Any]


def meta_points(meta: Any) -> list[MetaPoint] | None:
    """The points of a (stored, normalized) meta value; None when it holds an array anywhere."""
    points: list[MetaPoint] = []
    stack: list[tuple[tuple[str, ...], Any]] = [((), meta)]
    while stack:
        path, value = stack.pop()
        kind = type(value)
        if kind in POINT_TYPES:
            points.append((path, kind, value))
        elif isinstance(value, dict):
            stack.extend((path + (name,), v) for name, v in value.items())
        elif isinstance(value, (list, tuple)):
            return None
    return points


def value_points(path: tuple[str, ...], value: Any) -> list[MetaPoint]:
    """Points a meta value equal to query ``value`` at ``path`` holds for sure: ``value``'s own (every
    leaf of an object); empty when it has none (another type, an array, an empty object)."""
    kind = type(value)
    if kind in POINT_TYPES:  # a plain value (a ``$in``'s usual member): its one point, no walk
        return [(path, kind, value)]
    points = meta_points(value)
    return [(path + sub, kind, leaf) for sub, kind, leaf in points] if points else []


# ---------------------------------------------------------------- unpacking


def unpack_document(doc: dict[str, Any], time_field: str, meta_field: str | None,
                    fields: Iterable[str] | None = None, rows: Sequence[int] | None = None) -> Iterator[dict[str, Any]]:
    """Measurements of a v1 bucket document: time field first, then the meta field (when the bucket
    has ``meta`` and ``meta_field`` is given), then the columns every row holds in bucket order, then
    the others in bucket order.

    ``fields``: if given, only these measurement fields are materialized (column-selective unpack);
    the time field and meta are included only when listed. ``rows``: if given, only the rows at these
    ascending positions of the time column; which columns every row holds is still decided over the
    whole bucket, so a row's fields come in the same order whichever rows are asked for.
    """
    data = doc.get("data") or {}
    time_column = data.get(time_field)
    if not time_column:
        return
    positions = list(time_column.keys())
    n = len(positions)
    keys = positions if rows is None else [positions[i] for i in rows]
    wanted = None if fields is None else set(fields)
    include_time = wanted is None or time_field in wanted
    has_meta = meta_field is not None and "meta" in doc and (wanted is None or meta_field in wanted)
    meta = doc.get("meta")
    dense: list[tuple[str, dict[str, Any]]] = []
    sparse: list[tuple[str, dict[str, Any]]] = []
    for field, column in data.items():
        if field == time_field or (wanted is not None and field not in wanted):
            continue
        if not isinstance(column, dict):
            continue
        if len(column) == n and list(column.keys()) == positions:
            dense.append((field, column))
        else:
            sparse.append((field, column))
    names: list[str] = []
    columns: list[Any] = []
    if include_time:
        names.append(time_field)
        columns.append(time_column.values() if rows is None else [time_column[key] for key in keys])
    if has_meta:
        names.append(cast(str, meta_field))  # has_meta: not None
        columns.append(itertools.repeat(meta, len(keys)))  # shared by the bucket's measurements: stages copy on write
    for field, column in dense:
        names.append(field)
        columns.append(column.values() if rows is None else [column[key] for key in keys])
    built = zip(*columns, strict=True) if columns else itertools.repeat((), len(keys))
    if not sparse:
        for row in built:  # each measurement built by one C-level dict(zip(...))
            yield dict(zip(names, row, strict=True))
        return
    for key, row in zip(keys, built, strict=True):
        out = dict(zip(names, row, strict=True))
        for field, column in sparse:
            value = column.get(key, MISSING)
            if value is not MISSING:
                out[field] = value
        yield out
