"""MongoDB 7.0 compressed time-series buckets <-> v1 buckets (pure).

A compressed bucket (``control.version`` 2: measurements sorted on time, or 3: unsorted) holds
``control.count`` and every ``data.<field>`` as a BSONColumn (BinData subtype 7) of all the rows,
missing values as skips; a v1 bucket holds no count and every ``data.<field>`` as an object
``{"<row>": value}`` of its present values (``buckets``). A 7.0 ``mongodump`` of a time-series
collection holds closed buckets in the compressed form; ``decompress_bucket`` turns them into what
Tidemark stores and serves, as MongoDB's ``timeseries::decompressBucket`` does.
"""

from __future__ import annotations

from typing import Any

from bson.binary import Binary

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.timeseries.bsoncolumn import (
    DEFAULT_MAX_SIZE,
    MISSING,
    BSONColumnError,
    DecodeBudget,
    column_document,
    decode_bson,
)
from tidemark.timeseries.bsoncolumn_encode import encode_column, to_element
from tidemark.timeseries.bsoncolumn_format import COLUMN_SUBTYPE

UNCOMPRESSED_VERSION = 1
COMPRESSED_VERSIONS = (2, 3)  # kTimeseriesControlCompressedSortedVersion, ...UnsortedVersion


def is_compressed_bucket(doc: dict[str, Any]) -> bool:
    """Whether a bucket document is compressed (control.version 2 or 3), as MongoDB decides it."""
    control = doc.get("control")
    if not isinstance(control, dict):
        raise BSONColumnError("Time-series bucket documents must have 'control' object present", 6540600)
    version = control.get("version")
    if isinstance(version, bool) or not isinstance(version, (int, float)):
        raise BSONColumnError("Time-series bucket documents must have 'control.version' field present", 6540601)
    if version == UNCOMPRESSED_VERSION:
        return False
    if version in COMPRESSED_VERSIONS:
        return True
    raise BSONColumnError("Invalid bucket version", 6540602)


def decompress_bucket(doc: dict[str, Any], *, max_size: int = DEFAULT_MAX_SIZE) -> dict[str, Any]:
    """A compressed (v2/v3) bucket document -> the equivalent v1 bucket: ``control.version`` 1 and no
    ``control.count``, every ``data.<field>`` an object ``{"<row>": value}`` of its present values,
    all other fields kept in place. No column may hold more rows than ``control.count``."""
    if not is_compressed_bucket(doc):
        raise BSONColumnError("bucket is not compressed (control.version is 1)")
    control = doc["control"]
    count = control.get("count")
    max_rows = count if isinstance(count, int) and not isinstance(count, bool) and count >= 0 else None
    budget = DecodeBudget(None, max_size)
    out: dict[str, Any] = {}
    for key, value in doc.items():
        if key == "control":
            out[key] = {k: (UNCOMPRESSED_VERSION if k == "version" else v) for k, v in value.items() if k != "count"}
        elif key == "data":
            if not isinstance(value, dict):
                raise BSONColumnError("compressed bucket 'data' must be an object")
            out[key] = {name: _decompress_column(name, column, max_rows, budget) for name, column in value.items()}
        else:
            out[key] = value
    return out


def _decompress_column(name: str, column: Any, max_rows: int | None, budget: DecodeBudget) -> dict[str, Any]:
    if not isinstance(column, Binary) or column.subtype != COLUMN_SUBTYPE:
        raise BSONColumnError(f"compressed bucket field 'data.{name}' is not a BSONColumn (BinData subtype 7)")
    column_budget = DecodeBudget(max_rows, budget.size)  # the size limit is the bucket's, the row limit the column's
    try:
        raw, _rows = column_document(column, budget=column_budget)
        return decode_bson(raw)
    except BSONColumnError as exc:
        if column_budget.values is not None and column_budget.values < 0:
            raise BSONColumnError(f"compressed bucket field 'data.{name}' holds more values than control.count "
                                  f"({max_rows})") from None
        raise BSONColumnError(f"compressed bucket field 'data.{name}': {exc}", exc.code) from None
    finally:
        budget.size = column_budget.size


def compress_bucket(doc: dict[str, Any], time_field: str) -> dict[str, Any]:
    """A v1 bucket document -> its v2 form as MongoDB 7.0 writes it: measurements sorted on time,
    ``control.version`` 2 and ``control.count``, every data column a BSONColumn (time first)."""
    data = doc.get("data", {})
    times = data[time_field]
    rows = sorted(times, key=lambda key: int.from_bytes(to_element(times[key])[1], "little", signed=True))
    control = {k: (2 if k == "version" else v) for k, v in doc["control"].items()}
    control.setdefault("version", 2)
    control["count"] = len(rows)
    out: dict[str, Any] = {"_id": doc["_id"]} if "_id" in doc else {}
    out["control"] = control
    out.update((k, v) for k, v in doc.items() if k not in ("_id", "control", "data"))
    columns = {time_field: Binary(encode_column(times[key] for key in rows), COLUMN_SUBTYPE)}
    for name, column in data.items():
        if name != time_field:
            columns[name] = Binary(encode_column(column.get(key, MISSING) for key in rows), COLUMN_SUBTYPE)
    out["data"] = columns
    return out


def stored_bucket(doc: dict[str, Any]) -> dict[str, Any]:
    """A bucket document written to ``system.buckets.<c>`` (an insert, an update's result, an upsert,
    an applyOps entry) as Tidemark stores and serves it: a compressed bucket decompressed to v1, and
    every data field of a v1 bucket an object of rows, which is what every reader takes it to be
    (mongod's bucket unpacker reads ``data.<field>`` as an object and fails the read otherwise).
    MongoError with MongoDB's code (else 2 BadValue) for a bucket that is neither."""
    control = doc.get("control")
    try:
        if isinstance(control, dict) and control.get("version") in COMPRESSED_VERSIONS:
            return decompress_bucket(doc)
    except BSONColumnError as exc:
        raise MongoError(exc.code or ErrorCode.BadValue, f"Invalid compressed bucket: {exc}") from None
    data = doc.get("data")
    if isinstance(data, dict):
        for name, column in data.items():
            if not isinstance(column, dict):
                raise MongoError(ErrorCode.BadValue,
                                 f"Invalid bucket: 'data.{name}' is not an object of the bucket's measurements")
    return doc
