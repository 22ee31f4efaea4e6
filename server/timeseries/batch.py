"""An insert's measurements, validated, in the form the router takes (pure: built off the event loop).

Two shapes of the same thing — ``n`` measurements with their times (int64 ms) and series:

- ``ColumnBatch``: every document shares one layout (rawbatch.py recognised it from the bytes), so the
  measurements are NumPy columns plus constants; its ``table_key`` names the table its buckets use;
- ``RowBatch``: any other documents, decoded to dicts (``_id`` added, meta normalized).

Both answer ``fields(rows)`` — the values of some rows column-wise, as ``Bucket.append_rows`` takes
them — so one router and one bucket model handle both. ``table_key_of_row`` gives the layout a new
bucket opened by a dict measurement gets (its typed and constant fields).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from bson.objectid import ObjectId

from tidemark.protocol.codec import decode
from tidemark.timeseries.bucket import Bucket, Constant, Typed
from tidemark.timeseries.bucketdoc import MISSING, meta_key
from tidemark.timeseries.columns import typed_kind
from tidemark.timeseries.rawbatch import RawBatch
from tidemark.timeseries.rules import value_size
from tidemark.timeseries.table import Table

_COUNTER_SPACE = 0x1000000


def new_object_ids(n: int) -> np.ndarray:
    """``n`` new distinct ObjectIds as 12-byte voids: one timestamp and process-random part, and
    consecutive values of pymongo's process-wide counter (reserved under its lock)."""
    with ObjectId._inc_lock:
        base = ObjectId._inc
        ObjectId._inc = (base + n) % _COUNTER_SPACE
    prefix = int(time.time()).to_bytes(4, "big") + ObjectId._random()
    out = np.empty((n, 12), np.uint8)
    out[:, :9] = np.frombuffer(prefix, np.uint8)
    counters = (base + np.arange(n, dtype=np.int64)) % _COUNTER_SPACE
    out[:, 9] = counters >> 16
    out[:, 10] = (counters >> 8) & 0xFF
    out[:, 11] = counters & 0xFF
    return out.view("V12").reshape(-1)


def object_id_factory(n: int) -> Any:
    """``i -> ObjectId`` for ``0 <= i < n``: ``n`` new distinct ObjectIds for one batch."""
    ids = new_object_ids(n).tobytes()
    return lambda i: ObjectId(ids[12 * i:12 * i + 12])


class ColumnBatch:
    """Measurements of one layout as columns (see the module)."""

    rows = None

    def __init__(self, raw: RawBatch, time_field: str, meta_field: str | None):
        layout = raw.layout
        self.layout = layout
        self.n = raw.n
        self.times = raw.times
        # the distinct raw BSON meta values and, per row, the index of its own (None: no meta field)
        self.metas, self.meta_index = raw.metas, raw.meta_index
        self.meta_kind = layout.meta_kind
        self.layout_key = layout.key
        kinds = dict(zip(layout.fields, layout.kinds, strict=True))
        columns = dict(raw.columns)
        generated = "_id" not in layout.fields
        if generated:
            columns["_id"] = new_object_ids(raw.n)
            kinds["_id"] = 0x07
        fields = (("_id",) if generated else ()) + layout.fields
        # bucket field order: the time field, then the measurement's fields (meta aside)
        self.order: tuple[str, ...] = (time_field,) + tuple(f for f in fields if f not in (time_field, meta_field))
        self.constants: dict[str, Any] = {f: layout.constants[f] for f in self.order if f in layout.constants}
        self.kinds: dict[str, int] = {f: kinds[f] for f in self.order if f not in self.constants}
        self.columns: dict[str, np.ndarray] = {f: columns[f] for f in self.kinds}
        self.table_key: tuple[Any, ...] = tuple((f, self.kinds.get(f), self.constants.get(f)) for f in self.order)
        self.sids: np.ndarray | None = None  # each row's series id (ingest.series_ids; None: a meta is not valid BSON)
        self.meta_sids: np.ndarray | None = None  # the series id of each of ``metas`` (of every row without them)

    def fields(self, rows: np.ndarray) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in self.order:
            if name in self.constants:
                out[name] = Constant(self.constants[name])
            else:
                out[name] = Typed(self.kinds[name], self.columns[name][rows])
        return out

    def value_bytes(self) -> int:
        """What one measurement's values weigh (sizes of the fixed-width values and the constants)."""
        return sum(value_size(v) for v in self.constants.values()) + 12 * len(self.kinds)


class RowBatch:
    """Measurements as dicts: ``rows[i]`` (meta field included, normalized), ``times[i]`` in ms,
    ``metas[i]`` the normalized meta (``MISSING`` without one) and ``keys[i]`` its grouping key."""

    metas_raw = None

    def __init__(self, rows: list[dict[str, Any]], times: np.ndarray, metas: list[Any], keys: list[Any], meta_field: str | None):
        self.rows = rows
        self.n = len(rows)
        self.times = times
        self.metas = metas
        self.keys = keys
        self.meta_field = meta_field
        self.sids: np.ndarray | None = None  # each row's series id (ingest.series_ids)

    def fields(self, rows: Any) -> dict[str, list[Any]]:
        """The values of these rows per field (first-seen order, meta aside; ``MISSING`` where absent)."""
        picked = [self.rows[i] for i in rows]
        meta_field = self.meta_field
        names: dict[str, None] = {}
        for row in picked:
            for name in row:
                if name != meta_field and name not in names:
                    names[name] = None
        if len(picked) == 1:
            (row,) = picked
            return {name: [row[name]] for name in names}
        return {name: [row.get(name, MISSING) for row in picked] for name in names}


def table_key_of_row(row: dict[str, Any], time_field: str, meta_field: str | None) -> tuple[Any, ...]:
    """The layout of a bucket opened by ``row``: its typed fields and its string/null fields as
    constants, in bucket order (the time field first); other fields become object columns."""
    key: list[tuple[str, Any, Any]] = [(time_field, typed_kind(row[time_field]), None)]
    for name, value in row.items():
        if name == time_field or name == meta_field:
            continue
        kind = typed_kind(value)
        if kind is not None:
            key.append((name, kind, None))
        elif value is None or type(value) is str:
            key.append((name, None, value))
    return tuple(key)


def document_of_rows(rows: list[dict[str, Any]], time_field: str, meta_field: str | None, bucket_id: ObjectId, meta: Any,
                     start_s: int, collation: Any = None) -> dict[str, Any]:
    """The v1 document of a bucket holding ``rows`` (measurement dicts, in order): what repacking a
    bucket after some of its measurements were deleted writes (``collation``: the collection's
    default, for control min/max)."""
    table = Table(table_key_of_row(rows[0], time_field, meta_field), "", time_field, collation=collation)
    bucket = Bucket(table, 0, meta_key(meta), meta, bucket_id, "", start_s, meta_field)
    batch = RowBatch(rows, np.zeros(len(rows), np.int64), [], [], meta_field)
    bucket.append_rows(batch.fields(range(len(rows))), len(rows), 0)
    return decode(bucket.document_parts(len(rows)).bson())
