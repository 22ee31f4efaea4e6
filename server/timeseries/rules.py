"""The bucketing rules (spec §3.3, MongoDB 7.0 form): the only place that decides whether a measurement
joins a bucket, and why not. Every limit and threshold is read here, from the server parameters at the
time of the insert (``Limits.of``).

For a measurement at time ``t`` of a series whose candidate bucket starts at ``start``, in this order:

1. ``t >= start + span``            -> the bucket is archived (time forward)
2. ``t < start``                    -> the bucket is archived (time backward)
3. the bucket holds ``timeseriesBucketMaxCount`` measurements          -> closed (Count)
4. a field changes type class (objects field-wise, arrays element-wise) -> closed (SchemaChange)
5. size + the measurement's size > ``timeseriesBucketMaxSize``          -> closed (Size), unless the
   bucket holds fewer than ``timeseriesBucketMinCount`` measurements and stays under 12 MiB: it is
   then kept open for the large measurement (KeptOpenDueToLargeMeasurements)

Each reason is a ``Rollover`` member with the catalog's ``Action`` (archive, close, or keep: rule 5's
exception) and the serverStatus / collStats statistic it counts (``catalog.rollover`` does both).

Before a new bucket is opened, a reopenable bucket of the series whose ``[start, start + span)``
holds ``t`` and that passes 3-5 takes the measurement (``REOPEN``): an archived one in memory, else a
stored one found by query (reopen.py). Above ``timeseriesIdleBucketExpiryMemoryUsageThreshold`` the
catalog closes idle buckets, at most ``timeseriesIdleBucketExpiryMaxCountPerAttempt`` before each new
bucket (catalog.make_room).

Sizes are mongod 7.0's (calculateBucketFieldsAndSizeChange): a measurement at position ``n`` of a bucket
adds, for each field but the meta, its element renamed to the position (``valuesize + 2 + numDigits(n)``,
numDigits(0) being 0), and for a field the bucket does not hold yet an empty object of that name (12 +
name) and two copies of the element (control.min and max); the meta is not counted (stored once, at the
bucket's top), so a new bucket's size is 0 and its first measurement pays for every column, the time's
too. ``row_sizes`` is the same rule for the rows of a table layout at many positions at once (the
vectorized path of router.py).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import enum
from typing import Any

import bson
import numpy as np
from bson.datetime_ms import DatetimeMS
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.objectid import ObjectId

from tidemark.protocol.codec import CODEC_OPTIONS
from tidemark.timeseries.bucketdoc import MISSING, POS_KEYS
from tidemark.timeseries.columns import OID, WIDTH, class_sample
from tidemark.timeseries.minmax import compatible


class Action(enum.Enum):
    """What the catalog does to a bucket for a rollover reason (mongod's ``RolloverAction``)."""

    __hash__ = object.__hash__
    ARCHIVE = "archive"  # no longer the series' open bucket; stays in memory, reopenable (states.ARCHIVED)
    CLOSE = "close"  # takes no more measurements: written in full, then leaves memory (states.CLOSED)
    KEEP = "keep"  # no rollover: the measurement joins the bucket, and the decision is counted


class Rollover(enum.Enum):
    """Why a bucket does not take a measurement (mongod's ``RolloverReason``), each with the catalog's
    ``action`` and the ``statistic`` of serverStatus ``bucketCatalog`` / collStats ``timeseries`` it
    counts. Unlike mongod 7.0 (soft close on time forward) both time rules archive: a writer whose
    times interleave returns to the archived bucket at no cost (see the README, States)."""

    __hash__ = object.__hash__
    TIME_FORWARD = (Action.ARCHIVE, "numBucketsArchivedDueToTimeForward")  # rule 1
    TIME_BACKWARD = (Action.ARCHIVE, "numBucketsArchivedDueToTimeBackward")  # rule 2
    COUNT = (Action.CLOSE, "numBucketsClosedDueToCount")  # rule 3
    SCHEMA_CHANGE = (Action.CLOSE, "numBucketsClosedDueToSchemaChange")  # rule 4
    SIZE = (Action.CLOSE, "numBucketsClosedDueToSize")  # rule 5
    KEPT_OPEN = (Action.KEEP, "numBucketsKeptOpenDueToLargeMeasurements")  # rule 5's exception
    MEMORY_THRESHOLD = (Action.CLOSE, "numBucketsClosedDueToMemoryThreshold")  # idle, memory over the threshold

    def __init__(self, action: Action, statistic: str):
        self.action = action
        self.statistic = statistic


LARGE_BUCKET_CAP = 12 * 1024 * 1024  # a bucket kept open for large measurements never grows past this
MAX_BUCKET_BSON = 16 * 1024 * 1024 + 16 * 1024  # mongod's BSONObjMaxInternalSize
MAX_MEASUREMENT_BSON = 16 * 1024 * 1024  # a measurement is a user document
DEFAULT_MEMORY_FRACTION = 0.025


@dataclasses.dataclass(frozen=True, slots=True)
class Limits:
    max_count: int = 1000
    max_size: int = 128_000
    min_count: int = 10
    span_ms: int = 3_600_000
    rounding_s: int = 60
    memory_threshold: int = 100 * 1024 * 1024
    expiry_per_attempt: int = 3

    @classmethod
    def of(cls, params: Any, options: Any, memory_threshold: int) -> Limits:
        """The limits for one insert: server parameters now, the collection's bucketing options;
        ``memory_threshold``: the threshold when the parameter is 0 (2.5 % of RAM)."""
        name = "timeseriesIdleBucketExpiryMemoryUsageThreshold"
        configured = params[name] if name in params else 0
        memory_threshold = configured if configured > 0 else memory_threshold  # (0 or less: the default)
        return cls(max_count=params["timeseriesBucketMaxCount"], max_size=params["timeseriesBucketMaxSize"],
                   min_count=params["timeseriesBucketMinCount"],
                   span_ms=options.bucket_max_span_seconds * 1000, rounding_s=options.bucket_rounding_seconds,
                   memory_threshold=memory_threshold,
                   expiry_per_attempt=params["timeseriesIdleBucketExpiryMaxCountPerAttempt"])


def memory_threshold(configured: int) -> int:
    """``timeseriesIdleBucketExpiryMemoryUsageThreshold``: 0 or less means 2.5 % of the machine's memory."""
    if configured > 0:
        return configured
    import psutil

    return int(psutil.virtual_memory().total * DEFAULT_MEMORY_FRACTION)


# ---------------------------------------------------------------- sizes

_FIXED_SIZES = {float: 8, Int64: 8, bool: 1, type(None): 0, _dt.datetime: 8, DatetimeMS: 8, ObjectId: 12,
                Decimal128: 16}
_INT32_LOW, _INT32_HIGH = -(2**31), 2**31 - 1


def value_size(value: Any) -> int:
    """BSON size of a value without its element header (mongod's ``BSONElement::valuesize``): an int
    as pymongo encodes it (int32 when it fits), a string's UTF-8 bytes."""
    size = _FIXED_SIZES.get(type(value))
    if size is not None:
        return size
    if type(value) is int:
        return 4 if _INT32_LOW <= value <= _INT32_HIGH else 8
    if type(value) is str:
        return _utf8_len(value) + 5
    return len(bson.encode({"": value}, codec_options=CODEC_OPTIONS)) - 7


def _utf8_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def new_field_size(name: str, vsize: int) -> int:
    """What a field a bucket does not hold yet adds besides its value: an empty object of its name
    under data (12 + name bytes) and its element in control.min and control.max."""
    name_bytes = _utf8_len(name)
    return 12 + name_bytes + 2 * (vsize + name_bytes + 2)


def meta_size(meta: Any) -> int:
    """A meta's BSON bytes: what the catalog's memory counts for it. Not part of the bucket size rule 5
    compares with ``timeseriesBucketMaxSize`` (mongod's calculateBucketFieldsAndSizeChange skips the
    meta field: it is stored once, at the bucket's top)."""
    return value_size(meta) if meta is not MISSING else 0


def _typed_size(kind: int) -> int:
    """Bytes of one value of a typed column (its BSON width: an int32 4, as ``value_size`` counts it)."""
    return WIDTH[kind]


def _digits(position: int) -> int:
    """mongod's numDigits of a bucket's measurement count: 0 for 0 (its loop counts no digit)."""
    if not position:
        return 0
    return len(POS_KEYS[position]) if position < len(POS_KEYS) else len(str(position))


def measurement_size(has_column: Any, position: int, row: dict[str, Any], meta_field: str | None) -> int:
    """Bytes ``row`` adds at ``position`` of a bucket; ``has_column(name)`` tells which fields the bucket
    holds already (a new field also pays for its column, min and max)."""
    digits = _digits(position)
    size = 0
    for field, value in row.items():
        if field == meta_field:
            continue
        vsize = value_size(value)
        size += vsize + digits + 2
        if not has_column(field):
            size += new_field_size(field, vsize)
    return size


@dataclasses.dataclass(frozen=True, slots=True)
class LayoutSizes:
    """The size rule for rows of one table layout: ``value_bytes`` of a row's values, ``value_count``
    values per row, ``first_extra`` what a bucket's first row adds for creating its columns."""

    value_bytes: int
    value_count: int
    first_extra: int


def layout_sizes(order: tuple[str, ...], kinds: dict[str, int], constants: dict[str, Any],
                 time_field: str) -> LayoutSizes:
    sizes = {f: value_size(constants[f]) if f in constants else _typed_size(kinds[f]) for f in order}
    # (a bucket's first row creates every column, the time's too: a new bucket holds no field)
    return LayoutSizes(sum(sizes.values()), len(order), sum(new_field_size(f, sizes[f]) for f in order))


def row_sizes(sizes: LayoutSizes, positions: Any) -> Any:
    """Bytes each row of a layout adds at these positions (``measurement_size`` for a bucket that holds
    every field already): an array of positions gives an array, one ``int`` position an ``int`` (the
    one-row run of a new series is common enough that NumPy's per-call cost would dominate it)."""
    if type(positions) is int:
        digits: Any = _digits(positions)
    else:  # numDigits of each position in one call (0 at position 0, as _digits)
        digits = np.searchsorted(_POSITION_DIGIT_BOUNDS, positions, side="right")
    return sizes.value_bytes + sizes.value_count * (digits + 2)


_POSITION_DIGIT_BOUNDS = np.array([10**k for k in range(19)], dtype=np.int64)  # 1, 10, ... 10**18


# ---------------------------------------------------------------- the rules


def takes(reason: Rollover | None) -> bool:
    """A bucket takes the measurement: no rule refused it, or rule 5 keeps it open for a large one."""
    return reason is None or reason.action is Action.KEEP


def time_reason(start_ms: int, t_ms: int, limits: Limits) -> Rollover | None:
    """Rules 1-2: why ``t_ms`` is outside a bucket starting at ``start_ms``, else None."""
    if t_ms - start_ms >= limits.span_ms:
        return Rollover.TIME_FORWARD
    if t_ms < start_ms:
        return Rollover.TIME_BACKWARD
    return None


def in_range(start_ms: int, t_ms: int, limits: Limits) -> bool:
    return start_ms <= t_ms < start_ms + limits.span_ms


def size_reason(count: int, size: int, added: int, limits: Limits) -> Rollover | None:
    """Rule 5 for a bucket of ``count`` rows and ``size`` bytes taking ``added`` bytes."""
    if count and size + added > limits.max_size:
        if count >= limits.min_count or size + added > LARGE_BUCKET_CAP:
            return Rollover.SIZE
        return Rollover.KEPT_OPEN
    return None


def schema_compatible(column: Any, value: Any) -> bool:
    """Rule 4 for one value against a bucket column (bucket.Column); a new field is compatible."""
    if column is None:
        return True
    current = column.schema()
    return current is MISSING or compatible(current, value)


def row_reason(bucket: Any, row: dict[str, Any], size: int, limits: Limits, meta_field: str | None) -> Rollover | None:
    """Rules 3-5 for a measurement given as a dict of ``size`` bytes (time rules are the caller's)."""
    columns = bucket.columns
    return _bucket_reason(bucket.count, bucket.size, size, limits, lambda: all(
        field == meta_field or schema_compatible(columns.get(field), value) for field, value in row.items()))


def columns_reason(bucket: Any, batch: Any, limits: Limits) -> Rollover | None:
    """Rules 3-5 for the next row of a column batch (``batch.ColumnBatch``) against a bucket."""
    return _bucket_reason(bucket.count, bucket.size, 0, limits,
                          lambda: same_layout(bucket, batch) or columns_compatible(bucket.columns, batch),
                          lambda: column_size(batch, bucket))


def _bucket_reason(count: int, size: int, added: int, limits: Limits, compatible: Any,
                   measure: Any = None) -> Rollover | None:
    """Rules 3-5 in their order; ``compatible()`` rule 4, ``measure()`` the bytes added when not
    given (computed only when rule 5 is reached)."""
    if count >= limits.max_count:
        return Rollover.COUNT
    if not compatible():
        return Rollover.SCHEMA_CHANGE
    return size_reason(count, size, measure() if measure is not None else added, limits)


def same_layout(bucket: Any, batch: Any) -> bool:
    """The bucket holds exactly the columns of the batch's table (no schema change possible)."""
    return bool(bucket.pure) and bucket.table.key == batch.table_key


def columns_compatible(columns: dict[str, Any], batch: Any) -> bool:
    """Rule 4 for a column batch against a bucket's columns: each field the bucket holds keeps its
    type class (constants by value, typed columns by their kind)."""
    for name in batch.order:
        column = columns.get(name)
        if column is None:
            continue
        if name in batch.constants:
            if not schema_compatible(column, batch.constants[name]):
                return False
        elif not kind_compatible(column, batch.kinds[name]):
            return False
    return True


def held_fields(bucket: Any) -> Any:
    """The fields a bucket's rows hold, for the size rule (a new bucket holds none, whatever its table
    layout: its first row pays for creating every column, the time's too, as mongod's)."""
    return bucket.columns if bucket.count else {}


def column_sizes(batch: Any, bucket: Any, k: int) -> np.ndarray:
    """Bytes each of the next ``k`` rows of a column batch adds to ``bucket`` (its own table: the
    table's rule; another layout: fields the bucket lacks pay for their columns on the first row)."""
    sizes: np.ndarray
    sizes, first_extra = _column_sizes_at(batch, bucket, bucket.count + np.arange(k))
    sizes[0] += first_extra
    return sizes


def column_size(batch: Any, bucket: Any) -> int:
    """``column_sizes(batch, bucket, 1)[0]`` without arrays."""
    size, first_extra = _column_sizes_at(batch, bucket, int(bucket.count))
    return int(size + first_extra)


def _column_sizes_at(batch: Any, bucket: Any, positions: Any) -> tuple[Any, int]:
    """(``row_sizes`` of the rows at ``positions``, what the bucket's next row pays on top for the
    columns it creates)."""
    count = bucket.count
    if same_layout(bucket, batch):
        return bucket.table.row_sizes(positions), bucket.table.sizes.first_extra if count == 0 else 0
    value_sizes = {name: value_size(batch.constants[name]) if name in batch.constants
                   else _typed_size(batch.kinds[name]) for name in batch.order}
    sizes = row_sizes(LayoutSizes(sum(value_sizes.values()), len(batch.order), 0), positions)
    held = held_fields(bucket)
    return sizes, sum(new_field_size(name, value_sizes[name]) for name in batch.order if name not in held)


def kind_compatible(column: Any, kind: int) -> bool:
    """Rule 4 for a whole typed batch column against a bucket column."""
    return schema_compatible(column, class_sample(kind)) if kind != OID else schema_compatible(column, _OID)


_OID = ObjectId(b"\x00" * 12)


def within(starts: np.ndarray | int, times: np.ndarray, limits: Limits) -> np.ndarray:
    """Rules 1-2 vectorized: which times lie in the span of buckets starting at ``starts``."""
    return (times >= starts) & (times < starts + limits.span_ms)


def room(positions: np.ndarray, sizes_after: np.ndarray, limits: Limits) -> np.ndarray:
    """Rules 3 and 5 vectorized (without rule 5's exception, which the row by row path decides): may a
    bucket take a row at ``positions`` that makes it ``sizes_after`` bytes."""
    return (positions < limits.max_count) & (sizes_after <= limits.max_size)


def fits(count: int, size: int, start_ms: int, times: np.ndarray, sizes: np.ndarray, limits: Limits) -> int:
    """How many of the rows at ``times`` (sizes ``sizes`` at the bucket's next positions; the first row
    already accepted) a bucket takes before a rule stops them: rules 1-3 and 5 for rows of a layout the
    bucket holds (no schema change possible)."""
    n = len(times)
    ok = within(start_ms, times, limits) & room(count + np.arange(n), size + np.cumsum(sizes), limits)
    ok[0] = True
    return n if ok.all() else int(np.argmin(ok))


def bucket_too_large(measurement_bson_size: int, value_bytes: int) -> bool:
    """A measurement whose bucket alone (its values in ``data`` and again in control min and max)
    would exceed the largest document storage returns."""
    return measurement_bson_size + 2 * value_bytes > MAX_BUCKET_BSON
