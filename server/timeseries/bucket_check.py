"""What ``validate`` checks in one time-series bucket (pure): mongod 7.0's validate adaptor checks, in
this order and stopping at the first that fails, that the ``_id``'s embedded time is control.min's
time, that control.version is 1 or 2, that control.min, control.max and data name as many fields,
that each data field is the version's type (an object of ``"0"``, ``"1"``, ... for 1, a BSONColumn
binary for 2), that the time values are dates (in ascending order in a version 2 bucket), that
control.count of a version 2 bucket is its number of measurements, and that every field's observed
min and max are control's (the time's min rounded down to the collection's rounding).

A bucket that fails is a "non-compliant document": validate counts it and warns once, and stays valid
(the buckets were written by someone else: a direct write to ``system.buckets``). The reasons are
mongod's, for the server log (log id 6698300)."""

from __future__ import annotations

from typing import Any

from bson.binary import Binary
from bson.objectid import ObjectId

from tidemark.query.values import MISSING, compare
from tidemark.timeseries.bsoncolumn import BSONColumnError, decode_column
from tidemark.timeseries.bucketdoc import date_ms, round_start_seconds
from tidemark.timeseries.columns import object_extremes
from tidemark.timeseries.options import TimeseriesOptions

_COLUMN_SUBTYPE = 7
_WRAP = 2**32  # an _id holds its time modulo 2**32 seconds (extended-range buckets wrap)


def bucket_inconsistency(doc: dict[str, Any], options: TimeseriesOptions, collation: Any = None) -> str | None:
    """Why ``doc`` is not a consistent bucket of a collection with ``options`` (None: it is).
    ``collation``: the collection's default ``collation.Collation`` (min/max of strings follow it)."""
    control = doc.get("control")
    if not isinstance(control, dict) or not isinstance(control.get("min"), dict) \
            or not isinstance(control.get("max"), dict) or not isinstance(doc.get("data"), dict):
        return "The bucket has no control.min, control.max or data object."
    time_field = options.time_field
    min_time = date_ms(control["min"].get(time_field, MISSING))
    bucket_id = doc.get("_id")
    if min_time is None or not isinstance(bucket_id, ObjectId):
        return f"The bucket's '_id' or 'control.min.{time_field}' is not an ObjectId and a date."
    if int(min_time / 1000) % _WRAP != int.from_bytes(bucket_id.binary[:4], "big"):
        return ("Mismatch between the embedded timestamp in the time-series bucket '_id' field and the "
                "timestamp in 'control.min' field.")
    version = control.get("version")
    if type(version) is not int or version not in (1, 2):
        return f"Invalid value for 'control.version'. Expected 1 or 2, but got {version!r}."
    data, lows, highs = doc["data"], control["min"], control["max"]
    if not len(data) == len(lows) == len(highs):
        return (f"Mismatch between the number of time-series control fields and the number of data fields. "
                f"Control had {len(lows)} min fields and {len(highs)} max fields, but observed data had "
                f"{len(data)} fields.")
    times = _values(data.get(time_field, MISSING), version)
    if isinstance(times, str):
        return times
    for i, value in enumerate(times):
        if value is MISSING:
            return "Time-series bucket has missing time fields"
        if date_ms(value) is None:
            return f"Time-series bucket '{time_field}' field is not a Date"
        if version == 2 and i and date_ms(value) < date_ms(times[i - 1]):  # type: ignore[operator]
            return f"Time-series bucket '{time_field}' field is not in ascending order"
    count = len(times)
    if version == 2 and control.get("count") != count:
        return (f"The 'control.count' field ({control.get('count')}) does not match the actual number of "
                f"measurements in the document ({count}).")
    low, high = _extremes(times, collation)
    if low is not MISSING:
        low_ms = date_ms(low)
        assert low_ms is not None
        rounded = round_start_seconds(low_ms, options.bucket_rounding_seconds) * 1000
        if date_ms(lows.get(time_field)) != rounded or date_ms(highs.get(time_field)) != date_ms(high):
            return _min_max_mismatch(time_field)
    for name, column in data.items():
        if name == time_field:
            continue
        values = _values(column, version, count)
        if isinstance(values, str):
            return values
        low, high = _extremes(values, collation)
        if not (_same(lows.get(name, MISSING), low) and _same(highs.get(name, MISSING), high)):
            return _min_max_mismatch(name)
    return None


def _values(column: Any, version: int, count: int | None = None) -> list[Any] | str:
    """A data field's values in row order (MISSING where a row has none), or why it cannot be read."""
    if version == 1:
        if not isinstance(column, dict):
            return ("Mismatch between time-series schema version and data field type. Expected type object, "
                    "but got another.")
        out: list[Any] = []
        previous = -1
        for key, value in column.items():
            index = int(key) if key.isdigit() else -1
            if count is None:  # the time field: "0", "1", ... with no gap
                if index != len(out):
                    return f"The index '{key}' in time-series bucket data field is not consecutively increasing from '0'"
                out.append(value)
                continue
            if index < 0:
                return f"The index '{key}' in time-series bucket data field is negative or non-numerical"
            if index <= previous:
                return f"The index '{key}' in time-series bucket data field is not in increasing order"
            if index > count:
                return f"The index '{key}' in time-series bucket data field is out of range"
            out.extend([MISSING] * (index - len(out)))
            out.append(value)
            previous = index
        return out
    if not (isinstance(column, Binary) and column.subtype == _COLUMN_SUBTYPE):
        return ("Mismatch between time-series schema version and data field type. Expected type BinData, "
                "but got another.")
    try:
        return decode_column(bytes(column))
    except BSONColumnError as error:
        return f"The data field's BSONColumn cannot be decoded: {error}"


def _extremes(values: list[Any], collation: Any) -> tuple[Any, Any]:
    """The (min, max) of ``values`` as a bucket's control holds them; MISSING for a field with none.
    (Rows without the field are left out here: the column helpers mark them with their own sentinel.)"""
    return object_extremes([v for v in values if v is not MISSING], collation) or (MISSING, MISSING)


def _same(stored: Any, observed: Any) -> bool:
    if stored is MISSING or observed is MISSING:
        return stored is observed
    return compare(stored, observed) == 0  # BSON order: objects compare their field names in order too


def _min_max_mismatch(field: str) -> str:
    return f"Mismatch between time-series control and observed min or max for field {field}."
