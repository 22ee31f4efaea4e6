"""Open buckets held column-wise: the in-memory side of the ingest fast path (pure, no I/O).

A ``SeriesTable`` holds the buckets of one collection whose measurements all have one layout
(``rawbatch.Layout``: same fields, types and string contents). Each bucket owns a *slot*: row ``s``
of one 2-D NumPy array per varying field, so appending a whole insert batch to hundreds of buckets
is one fancy-indexed assignment per field, not a Python operation per measurement. The table also
maps each series (normalized meta) to the slot of its open bucket, so routing a batch is a few
vectorized gathers and comparisons (``catalog.insert_batch``).

Invariants
- Rows of a slot are append-only: ``data[f][s, :count[s]]`` never changes once written, so readers
  may copy them (from any thread) while the event loop appends further rows.
- ``durable[s] <= count[s]``: rows below ``durable`` are in the journal or in the stored document.
- ``series_slot[sid]`` is the slot of series ``sid``'s *open* bucket in this table, or -1.
- A slot is reused only after its bucket's final document is cached on the bucket object
  (``ColumnarBucket.finish``); a reader (any thread) that copies a slot's rows checks ``_final`` again
  afterwards and uses the cached document if the slot was released meanwhile, so it never returns
  another bucket's rows.
- Control min/max are derived from the rows when asked (exact, MongoDB order: NaN lowest, the first
  of equal values wins), never maintained per append.
"""

from __future__ import annotations

import datetime as _dt
import struct
from typing import Any

import bson
import numpy as np
from bson.int64 import Int64
from bson.objectid import ObjectId

from protocol.codec import CODEC_OPTIONS, decode
from server.timeseries.buckets import MISSING, date_ms, meta_key, ms_to_date, normalize_meta, value_size
from server.timeseries.columnvalues import column_bson, constant_values, extremes
from server.timeseries.rawbatch import (
    BOOL,
    DATE,
    DOUBLE,
    INT32,
    INT64,
    OID,
    VALUE_DTYPE,
    Layout,
)
from storage import bucket_codec

_INT32 = struct.Struct("<i")
_FIRST_SLOTS = 64
_FIRST_CAPACITY = 16

_SIZE = {DOUBLE: 8, INT32: 8, INT64: 8, DATE: 8, BOOL: 1, OID: 12}  # buckets.value_size of each type
_PYTHON_TYPE = {DOUBLE: float, INT32: int, INT64: Int64, DATE: _dt.datetime, BOOL: bool, OID: ObjectId}

# ---------------------------------------------------------------- the table


class SeriesTable:
    """The open (and closed, not yet written) buckets of one collection with one layout."""

    def __init__(self, layout: Layout, ns: str, time_field: str, meta_field: str | None):
        self.layout = layout
        self.ns = ns
        self.time_field = time_field
        self.meta_field = meta_field
        self.generated_id = "_id" not in layout.fields  # the server adds an ObjectId _id first
        fields = (("_id",) if self.generated_id else ()) + layout.fields
        kinds = dict(zip(layout.fields, layout.kinds, strict=True))
        if self.generated_id:
            kinds["_id"] = OID
        # bucket field order: the time field, then the measurement's fields (meta aside)
        self.order: tuple[str, ...] = (time_field,) + tuple(f for f in fields if f not in (time_field, meta_field))
        self.kinds: dict[str, int] = {f: kinds[f] for f in self.order}
        self.constants: dict[str, Any] = {f: layout.constants[f] for f in self.order if f in layout.constants}
        self.varying: tuple[str, ...] = tuple(f for f in self.order if f not in self.constants)
        self.by_kind: dict[int, list[str]] = {}  # varying columns but the time, by BSON type
        for name in self.varying[1:]:
            self.by_kind.setdefault(self.kinds[name], []).append(name)
        # measurement sizes as the general path counts them (OpenBucket.measurement_size)
        sizes = {f: (len(v) + 5 if type(v) is str else 0) if f in self.constants else _SIZE[self.kinds[f]]
                 for f, v in ((f, self.constants.get(f)) for f in self.order)}
        self.value_bytes = sum(sizes.values())  # the measurement's values, meta aside
        self.value_count = len(self.order)
        # the first measurement of a bucket also pays for creating every column but the time's
        self.first_extra = sum(12 + len(f) + 2 * (sizes[f] + 3) for f in self.order if f != time_field)
        slots, cap = _FIRST_SLOTS, _FIRST_CAPACITY
        self.cap = cap
        self.data: dict[str, np.ndarray] = {f: np.zeros((slots, cap), VALUE_DTYPE[self.kinds[f]])
                                            for f in self.varying}
        self.count = np.zeros(slots, np.int64)
        self.durable = np.zeros(slots, np.int64)  # rows already in the journal or the stored document
        self.size = np.zeros(slots, np.int64)
        self.start_ms = np.zeros(slots, np.int64)
        self.dirty = np.zeros(slots, bool)
        self.ever_committed = np.zeros(slots, bool)
        self.last_used = np.zeros(slots, np.int64)
        self.buckets: list[ColumnarBucket | None] = [None] * slots
        self.free: list[int] = list(range(slots - 1, -1, -1))
        # series: raw meta bytes -> series id; per series its key, normalized meta, BSON size, open slot
        self.sid_of_raw: dict[bytes, int] = {}
        self.sid_of_key: dict[Any, int] = {}
        self.series_key: list[Any] = []
        self.series_meta: list[Any] = []
        self.series_meta_size: list[int] = []
        self.series_slot = np.full(16, -1, np.int64)

    # -- series
    def series_ids(self, metas: list[bytes] | None, n: int) -> np.ndarray | None:
        """Series id of each measurement (registering new metas); None if a meta is not valid BSON."""
        if metas is None:
            if not self.series_key:
                self._add_series(MISSING)
            return np.zeros(n, np.int64)
        get = self.sid_of_raw.get
        sids = [get(raw, -1) for raw in metas]
        if -1 in sids:
            for i, sid in enumerate(sids):
                if sid == -1:
                    sid = self.sid_of_raw.get(metas[i], -1)
                    if sid == -1:
                        sid = self._register(metas[i])
                        if sid is None:
                            return None
                    sids[i] = sid
        return np.asarray(sids, np.int64)

    def _register(self, raw: bytes) -> int | None:
        element = bytes((self.layout.meta_kind,)) + b"\x00" + raw
        try:
            value = decode(_INT32.pack(len(element) + 5) + element + b"\x00")[""]
        except Exception:  # noqa: BLE001 - invalid BSON: the batch takes the general path (error 22)
            return None
        normalized = normalize_meta(value)
        key = meta_key(normalized)
        sid = self.sid_of_key.get(key)
        if sid is None:
            sid = self._add_series(normalized)
        if len(self.sid_of_raw) < 1_000_000:
            self.sid_of_raw[raw] = sid
        return sid

    def _add_series(self, meta: Any) -> int:
        sid = len(self.series_key)
        key = meta_key(meta)
        self.series_key.append(key)
        self.series_meta.append(meta)
        self.series_meta_size.append(value_size(meta) if meta is not MISSING else 0)
        self.sid_of_key[key] = sid
        if sid >= len(self.series_slot):
            grown = np.full(2 * len(self.series_slot), -1, np.int64)
            grown[:sid] = self.series_slot[:sid]
            self.series_slot = grown
        return sid

    # -- slots
    def allocate(self) -> int:
        if not self.free:
            self._grow_slots()
        return self.free.pop()

    def _grow_slots(self) -> None:
        old = len(self.count)
        new = old * 2
        for name, array in self.data.items():
            grown = np.zeros((new, self.cap), array.dtype)
            grown[:old] = array
            self.data[name] = grown
        for name in ("count", "durable", "size", "start_ms", "dirty", "ever_committed", "last_used"):
            array = getattr(self, name)
            grown = np.zeros(new, array.dtype)
            grown[:old] = array
            setattr(self, name, grown)
        self.buckets.extend([None] * (new - old))
        self.free.extend(range(new - 1, old - 1, -1))

    def reserve_rows(self, rows: int) -> None:
        """Make room for ``rows`` rows per slot (capacity doubles; arrays are replaced, not resized, so a
        reader holding the old array still sees consistent rows)."""
        if rows <= self.cap:
            return
        cap = self.cap
        while cap < rows:
            cap *= 2
        for name, array in self.data.items():
            grown = np.zeros((array.shape[0], cap), array.dtype)
            grown[:, :self.cap] = array
            self.data[name] = grown
        self.cap = cap

    def unlink(self, bucket: ColumnarBucket) -> None:
        """``bucket`` is no longer its series' open bucket."""
        if bucket.sid >= 0 and self.series_slot[bucket.sid] == bucket.slot:
            self.series_slot[bucket.sid] = -1

    def release(self, slot: int) -> None:
        bucket = self.buckets[slot]
        if bucket is not None and bucket.sid >= 0 and self.series_slot[bucket.sid] == slot:
            self.series_slot[bucket.sid] = -1
        self.buckets[slot] = None
        self.count[slot] = self.durable[slot] = self.size[slot] = 0
        self.dirty[slot] = self.ever_committed[slot] = False
        self.free.append(slot)

    # -- a stored bucket back into a slot (reopening)
    def load(self, doc: dict, sid: int, ns: str) -> ColumnarBucket | None:
        """The stored bucket ``doc`` as a column-wise bucket of series ``sid``, or None when its
        columns are not exactly this table's (names, order, dense positions, BSON types)."""
        data = doc.get("data")
        if not isinstance(data, dict) or list(data) != list(self.order):
            return None
        positions = list(data[self.time_field])
        n = len(positions)
        if n == 0 or positions != [str(i) for i in range(n)]:
            return None
        arrays: dict[str, np.ndarray] = {}
        for name in self.order:
            column = data[name]
            if not isinstance(column, dict) or list(column) != positions:
                return None
            values = list(column.values())
            kind = self.kinds[name]
            if name in self.constants:
                constant = self.constants[name]
                if any(type(v) is not type(constant) or v != constant for v in values):
                    return None
                continue
            wanted = _PYTHON_TYPE[kind]
            if any(type(v) is not wanted for v in values):
                return None
            if kind == DATE:
                arrays[name] = np.array([date_ms(v) for v in values], np.int64)
            elif kind == OID:
                arrays[name] = np.frombuffer(b"".join(v.binary for v in values), "V12")
            else:
                arrays[name] = np.array(values, VALUE_DTYPE[kind])
        start_ms = date_ms(doc["control"]["min"][self.time_field])
        if start_ms is None or normalize_meta(doc.get("meta", MISSING)) != self.series_meta[sid]:
            return None
        slot = self.allocate()
        self.reserve_rows(n)
        bucket = ColumnarBucket(self, slot, sid, doc["_id"], ns, start_ms // 1000)
        for name, values in arrays.items():
            self.data[name][slot, :n] = values
        self.count[slot] = self.durable[slot] = n
        self.size[slot] += int(self.row_sizes(np.arange(n)).sum()) + self.first_extra
        self.ever_committed[slot] = True
        bucket.open = False
        bucket.committed = bucket.stored = True
        bucket.full_count = n
        bucket.full_size = bucket.size
        return bucket

    # -- sizes
    def row_sizes(self, positions: np.ndarray) -> np.ndarray:
        """Bytes each measurement adds at these positions (general path: values + key digits + 2)."""
        digits = np.ones(len(positions), np.int64)
        for bound in (10, 100, 1000, 10_000, 100_000):
            digits += positions >= bound
        return self.value_bytes + self.value_count * (digits + 2)

    # -- journal rows
    def rows(self, slots: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> dict[str, np.ndarray]:
        """Rows ``lo[i]:hi[i]`` of ``slots[i]``, concatenated, for every varying column."""
        lengths = hi - lo
        total = int(lengths.sum())
        slot_of_row = np.repeat(slots, lengths)
        ends = np.cumsum(lengths)
        pos = np.arange(total) - np.repeat(ends - lengths - lo, lengths)
        return {name: self.data[name][slot_of_row, pos] for name in self.varying}


# ---------------------------------------------------------------- one bucket


class ColumnarBucket:
    """A bucket whose rows live in a ``SeriesTable`` slot. Quacks like ``buckets.OpenBucket`` for the
    catalog, the committer and readers (``count``, ``size``, ``pending``, ``journaled``, ``document()``,
    ``summary()``...); only the catalog (event loop) mutates it."""

    __slots__ = ("table", "slot", "sid", "id", "ns", "time_field", "meta_field", "meta", "key", "start_s",
                 "needs_full", "open", "committed", "stored", "full_size", "full_count", "successor",
                 "_final", "_summary_at", "_summary", "_doc_at", "_doc")

    def __init__(self, table: SeriesTable, slot: int, sid: int, bucket_id: ObjectId, ns: str, start_s: int):
        self.table = table
        self.slot = slot
        self.sid = sid
        self.id = bucket_id
        self.ns = ns
        self.time_field = table.time_field
        self.meta_field = table.meta_field
        self.meta = table.series_meta[sid]
        self.key = table.series_key[sid]
        self.start_s = start_s
        self.needs_full = False
        self.open = True
        self.committed = False  # some commit made the bucket durable (bucket insert vs update stats)
        self.stored = False  # a full document of it is in storage
        self.full_size = 0
        self.full_count = 0  # rows in the last full write
        self.successor: Any = None  # the general-path bucket that replaced this one (convert)
        self._final: bytes | None = None  # the document once the slot is released
        self._summary_at = -1
        self._summary: dict | None = None
        self._doc_at = -1
        self._doc: dict | None = None
        table.buckets[slot] = self
        table.count[slot] = 0
        table.durable[slot] = 0
        table.size[slot] = table.series_meta_size[sid]
        table.start_ms[slot] = start_s * 1000
        table.ever_committed[slot] = False

    # -- the OpenBucket interface
    @property
    def count(self) -> int:
        return int(self.table.count[self.slot]) if self._final is None else self._final_count()

    @property
    def size(self) -> int:
        return int(self.table.size[self.slot]) if self._final is None else self.full_size

    @property
    def pending(self) -> bool:
        """Rows not yet handed to a commit."""
        return self._final is None and self.table.count[self.slot] > self.table.durable[self.slot]

    @property
    def journaled(self) -> bool:
        """Rows are in journal records (not in the stored document yet)."""
        return self._final is None and int(self.table.durable[self.slot]) > self.full_count

    def _final_count(self) -> int:
        return self.full_count

    def column(self, name: str, n: int) -> np.ndarray:
        """The first ``n`` values of column ``name`` (a copy)."""
        if name in self.table.constants:
            return constant_values(self.table.kinds[name], self.table.constants[name], n)
        return self.table.data[name][self.slot, :n].copy()

    def rows_copy(self, names: Any = None) -> tuple[int, dict[str, np.ndarray]] | None:
        """Read-only accessor for readers (any thread): a consistent copy of the bucket's rows as
        (count, {name: values}) for the *varying* columns among ``names`` (all when None; constant
        columns are ``table.constants``), or None once the bucket has left memory (``finish``: its
        final document then holds the rows and the slot may hold another bucket's). The copy is
        taken before ``_final`` is checked again, so a slot reused meanwhile is never returned."""
        if self._final is not None:
            return None
        table, slot = self.table, self.slot
        n = int(table.count[slot])
        wanted = table.varying if names is None else [name for name in names if name in table.data]
        columns = {name: table.data[name][slot, :n].copy() for name in wanted}
        if self._final is not None:
            return None
        return n, columns

    def values_at(self, names: Any, positions: np.ndarray) -> dict[str, np.ndarray] | None:
        """Read-only accessor like ``rows_copy``: the values at ``positions`` (rows already counted
        when the caller read them) of the varying columns among ``names``, or None once the bucket
        has left memory."""
        if self._final is not None:
            return None
        table, slot = self.table, self.slot
        values = {name: table.data[name][slot, positions] for name in names if name in table.data}
        if self._final is not None:
            return None
        return values

    def _snapshot(self) -> tuple[int, dict[str, np.ndarray]]:
        table, slot = self.table, self.slot
        n = int(table.count[slot])
        columns = {name: table.data[name][slot, :n].copy() for name in table.varying}
        return n, columns

    def control(self, n: int, columns: dict[str, np.ndarray]) -> dict:
        table = self.table
        mins: dict[str, Any] = {self.time_field: ms_to_date(self.start_s * 1000)}
        maxs: dict[str, Any] = {self.time_field: ms_to_date(int(columns[self.time_field].max())) if n else None}
        found = extremes(table.by_kind, columns) if n else {}
        for name in table.order:
            if name == self.time_field:
                continue
            if name in table.constants:
                mins[name] = maxs[name] = table.constants[name]
            elif n:
                mins[name], maxs[name] = found[name]
        return {"version": 1, "min": mins, "max": maxs}

    def summary(self) -> dict[str, Any]:
        """``{_id, control, meta?}`` (cached until the next append)."""
        if self._final is not None:
            return _summary_of(decode(self._final))
        n = int(self.table.count[self.slot])
        if self._summary_at != n or self._summary is None:
            n, columns = self._snapshot()
            if self._final is not None:  # released meanwhile (reader thread): the rows may be reused
                return _summary_of(decode(self._final))
            return self._summary_of(n, columns)
        return self._summary

    def _summary_of(self, n: int, columns: dict[str, np.ndarray]) -> dict[str, Any]:
        if self._summary_at != n or self._summary is None:
            out: dict[str, Any] = {"_id": self.id, "control": self.control(n, columns)}
            if self.meta is not MISSING:
                out["meta"] = self.meta
            self._summary, self._summary_at = out, n
        return self._summary

    def document_bytes(self) -> bytes:
        """The full v1 bucket document as BSON (what a full write stores)."""
        if self._final is not None:
            return self._final
        n, columns = self._snapshot()
        if self._final is not None:  # released meanwhile (reader thread): the rows may be reused
            return self._final
        return self._encode(n, columns)

    def _encode(self, n: int, columns: dict[str, np.ndarray]) -> bytes:
        return self._encode_parts(n, columns)[0]

    def _encode_parts(self, n: int, columns: dict[str, np.ndarray]) -> tuple[bytes, bytes, list[tuple]]:
        """(the document's BSON, its bytes up to the ``data`` value, the data columns as
        ``(name, bson type, values or column BSON)`` for ``bucket_codec.encode_columns``)."""
        table = self.table
        head = self._summary_of(n, columns)  # {_id, control, meta?}: the document's first fields
        parts = []
        codec_columns: list[tuple] = []
        for name in table.order:
            kind = table.kinds[name]
            encoded_name = name.encode()
            if name in table.constants:
                column = column_bson(kind, constant_values(kind, table.constants[name], n))
                codec_columns.append((encoded_name, kind, column))
            else:
                column = column_bson(kind, columns[name])
                codec_columns.append((encoded_name, kind, columns[name]))
            parts.append(b"\x03" + encoded_name + b"\x00" + column)
        data = b"".join(parts)
        head_bytes = bson.encode(head, codec_options=CODEC_OPTIONS)
        size = len(head_bytes) - 1 + 6 + 4 + len(data) + 1 + 1
        prefix = b"".join((_INT32.pack(size), head_bytes[4:-1], b"\x03data\x00"))
        return b"".join((prefix, _INT32.pack(4 + len(data) + 1), data, b"\x00\x00")), prefix, codec_columns

    def full_write(self) -> tuple[dict, bytes, Any]:
        """What a full write of the bucket needs: (summary, document BSON, a function returning the
        codec's compact form of it — the same bytes ``bucket_codec.encode`` would give, built from
        the columns without parsing the BSON; None when the codec cannot be used)."""
        n, columns = self._snapshot()
        raw, prefix, codec_columns = self._encode_parts(n, columns)
        summary = self._summary_of(n, columns)
        if n == 0:
            return summary, raw, None

        def pack() -> bytes | None:
            try:
                packed = bucket_codec.encode_columns(prefix, codec_columns)
            except (ValueError, OverflowError):
                return None
            return packed if bucket_codec.decode(packed) == raw else None  # never store what does not read back

        return summary, raw, pack

    def document(self) -> dict[str, Any]:
        """The full v1 bucket document (decoded; cached until the next append; do not mutate)."""
        if self._final is not None:
            return decode(self._final)
        n = int(self.table.count[self.slot])
        if self._doc_at != n or self._doc is None:
            self._doc, self._doc_at = decode(self.document_bytes()), n
        return self._doc

    def finish(self, final: bytes) -> None:
        """The bucket is written in full and leaves memory: keep its document, free the slot."""
        self._final = final
        self.table.release(self.slot)

    def measurements(self) -> list[dict]:
        """Every measurement as the general path would hold it (conversion to ``OpenBucket``)."""
        n, columns = self._snapshot()
        table = self.table
        out_columns = []
        for name in table.order:
            if name in table.constants:
                out_columns.append([table.constants[name]] * n)
            else:
                kind = table.kinds[name]
                values = columns[name]
                if kind == DATE:
                    out_columns.append([ms_to_date(int(v)) for v in values.tolist()])
                elif kind == OID:
                    out_columns.append([ObjectId(bytes(v)) for v in values])
                elif kind == INT64:
                    out_columns.append([Int64(v) for v in values.tolist()])
                else:
                    out_columns.append(values.tolist())
        names = table.order
        return [dict(zip(names, row, strict=True)) for row in zip(*out_columns, strict=True)] if n else []


def _summary_of(doc: dict) -> dict:
    out = {"_id": doc["_id"], "control": doc["control"]}
    if "meta" in doc:
        out["meta"] = doc["meta"]
    return out

