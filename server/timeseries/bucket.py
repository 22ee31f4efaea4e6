"""The one in-memory model of a bucket (pure, no I/O): identity, lifecycle state (states.py), columns,
and the v1 document built from them.

A bucket's columns (columns.py), in bucket order (the time field first):

- typed columns live in the bucket's slot of its table (table.py), NumPy rows;
- constant columns hold one value for every row;
- object columns hold a Python value per row (``MISSING`` where a row lacks the field).

A bucket is *pure* while its columns are exactly its table's (``columns is table.columns``): router.py
then appends to it vectorized, together with the other pure buckets of the table. A row that does not
fit (a new field, a missing value, another type) turns the affected columns into object columns: the
bucket becomes impure and takes rows through ``append_rows`` from then on. Either way it is one model
with one document, one journal form and one read form.

Counts (all in rows, in the table's per-slot vectors): ``count`` held; ``durable`` committed — in
journal records or the stored document — and the only rows readers see; ``in_flight`` the end of the
rows the commit in flight carries (``durable <= in_flight <= count``). ``stored_count`` rows are in the
stored full document. Only commit.py moves ``durable`` (after the storage commit succeeded) or rolls
rows back (after it failed); only the catalog appends and changes ``state``.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import bson
import numpy as np
from bson.objectid import ObjectId

from tidemark.protocol.codec import CODEC_OPTIONS
from tidemark.storage import bucket_codec
from tidemark.timeseries import rules
from tidemark.timeseries.bucketdoc import MISSING
from tidemark.timeseries.columns import (
    ConstColumn,
    ObjectColumn,
    TableColumn,
    constant_bson,
    control_summaries,
    object_bson,
    python_values,
    to_array,
    typed_kind,
)
from tidemark.timeseries.states import State

if TYPE_CHECKING:
    from tidemark.timeseries.table import Table

_INT32 = struct.Struct("<i")
NO_MEMO: tuple[Any, ...] = (-1, None, {})  # no memo: never matches a view (n >= 0), its dict is never written


class Bucket:
    """One bucket in memory. Only the catalog (event loop) mutates it; readers use bucketview.py."""

    __slots__ = ("id", "ns", "time_field", "meta_field", "sid", "key", "meta", "start_s", "state", "table",
                 "slot", "columns", "stored_count", "needs_full", "full_size", "counted_bytes",
                 "final", "left", "memo", "charged", "kept_open", "meta_bytes", "__weakref__")

    def __init__(self, table: Table, sid: int, key: Any, meta: Any, bucket_id: ObjectId, ns: str, start_s: int,
                 meta_field: str | None):
        self.id = bucket_id
        self.ns = ns
        self.time_field = table.time_field
        self.meta_field = meta_field
        self.sid, self.key, self.meta = sid, key, meta  # meta: normalized, or MISSING
        self.start_s = start_s
        self.state = State.OPEN
        self.table = table
        self.slot = table.allocate(self)
        self.columns: dict[str, Any] = table.columns  # shared with the table while pure
        self.stored_count = 0  # rows in the stored full document
        self.needs_full = False  # the next commit writes the full document (closed, checkpoint)
        self.full_size = 0  # size at the last full write (checkpoint policy)
        # the bytes of its last full write the compression statistics counted: each full write adds its
        # growth, so a bucket counts once, as mongod counts a bucket when it closes
        self.counted_bytes = 0
        self.final: bytes | None = None  # its full document once it left memory (late readers)
        self.left = False  # it left memory: its slot may hold another bucket's rows
        # what readers derived from its first n rows (bucketview.py): (n, columns dict, {kind: value});
        # rows below n never change, so it is valid while n and the column set are the same; kept for
        # the most recently read buckets only (bucketview.LIVE_MEMOS) and dropped when it leaves memory
        self.memo: tuple[Any, ...] = NO_MEMO
        self.charged = 0  # what the catalog counts for it besides its table slot row (catalog.footprint)
        self.kept_open = False  # kept open for a large measurement once (counted once, as mongod)
        table.start_ms[self.slot] = start_s * 1000
        self.meta_bytes = rules.meta_size(meta)  # its meta's BSON bytes (the catalog's memory counts them)
        # the rules' size starts at 0: mongod's bucket size counts only the measurements' fields, never
        # the meta (stored once, at the bucket's top; calculateBucketFieldsAndSizeChange skips it)
        table.size[self.slot] = 0

    # -- per-slot state
    @property
    def count(self) -> int:
        return int(self.table.count[self.slot])

    @property
    def durable(self) -> int:
        return int(self.table.durable[self.slot])

    @property
    def in_flight(self) -> int:
        return int(self.table.in_flight[self.slot])

    @in_flight.setter
    def in_flight(self, rows: int) -> None:
        self.table.in_flight[self.slot] = rows

    @property
    def committed(self) -> bool:
        """A commit made some of its rows durable (bucket insert vs update statistics)."""
        return bool(self.table.committed[self.slot])

    @committed.setter
    def committed(self, value: bool) -> None:
        self.table.committed[self.slot] = value

    @property
    def size(self) -> int:
        return int(self.table.size[self.slot])

    @property
    def start_ms(self) -> int:
        return self.start_s * 1000

    @property
    def pure(self) -> bool:
        return self.columns is self.table.columns

    @property
    def pending(self) -> bool:
        """Rows not yet carried by a commit."""
        return bool(self.table.count[self.slot] > self.table.in_flight[self.slot])

    @property
    def idle(self) -> bool:
        """Nothing uncommitted (mongod's idle bucket): closing it costs only its full write. A full write
        already pending (a checkpoint's) does not make it busy: closed, the bucket's one full write
        is the one it awaits. Counted busy, every bucket a periodic checkpoint marked (at a million
        series, every bucket never written in full) was out of the expiry's reach until the writer
        reached its checkpoint queue, behind the buckets leaving memory: 359,000 buckets and 1,020 MB
        held against a 615 MB threshold."""
        return bool(self.table.count[self.slot] == self.table.durable[self.slot])

    # -- appends (the router decided the rules; ``added`` is the bytes they counted)
    def append_table_rows(self, columns: dict[str, np.ndarray], rows: np.ndarray, added: int) -> None:
        """Rows of the bucket's own layout (a pure bucket): typed values from ``columns`` at ``rows``."""
        table, slot = self.table, self.slot
        count = int(table.count[slot])
        k = len(rows)
        table.reserve_rows(count + k)
        if k == 1:  # the one row of a new series, mostly: an element copy (fancy indexing costs ~5x)
            row = int(rows[0])
            for name in table.varying:
                table.data[name][slot, count] = columns[name][row]
        else:
            for name in table.varying:
                table.data[name][slot, count:count + k] = columns[name][rows]
        table.count[slot] = count + k
        table.size[slot] += added

    def append_rows(self, fields: dict[str, Any], k: int, added: int) -> None:
        """``k`` rows given column-wise: ``fields`` maps each field of the rows (new ones in the order
        they first appear) to a ``Typed`` array, a ``Constant`` or a Python list (``MISSING`` where a row
        lacks the field); bucket columns the rows lack get ``MISSING``. Columns that cannot hold the
        values turn into object columns."""
        table, slot = self.table, self.slot
        count = int(table.count[slot])
        if count == 0 and any(name not in self.columns for name in fields):
            self._order_as(fields)
        columns = self.columns
        changed: dict[str, Any] = {}
        table.reserve_rows(count + k)
        for name, column in columns.items():
            values = fields.get(name, _ABSENT)
            if type(column) is TableColumn:
                array = _as_array(column.kind, values, k)
                if array is not None:
                    table.data[name][slot, count:count + k] = array
                    continue
                old = python_values(column.kind, table.data[name][slot, :count].copy())
                changed[name] = ObjectColumn(name, old + _as_list(values, k))
            elif type(column) is ConstColumn:
                if not _all_equal(values, column.value, k):
                    changed[name] = ObjectColumn(name, [column.value] * count + _as_list(values, k))
            else:
                column.extend(_as_list(values, k))
        for name, values in fields.items():
            if name not in columns:
                changed[name] = ObjectColumn(name, [MISSING] * count + _as_list(values, k))
        if changed:
            updated = dict(columns)
            updated.update(changed)
            self.columns = updated  # copy on write: readers hold the previous dict
            table.pure[slot] = False
        table.count[slot] = count + k
        table.size[slot] += added

    def _order_as(self, fields: dict[str, Any]) -> None:
        """A new bucket takes its first rows' field order (the time field first), its table columns
        interleaved with object columns for the fields the layout does not type."""
        tf = self.time_field
        ordered: dict[str, Any] = {}
        for name in (tf, *(f for f in fields if f != tf)):
            ordered[name] = self.columns.get(name) or ObjectColumn(name, [])
        for name, column in self.columns.items():  # (a layout field the rows lack: kept, it will be filled)
            ordered.setdefault(name, column)
        self.columns = ordered
        self.table.pure[self.slot] = False

    # -- rollback of a failed commit
    def remove_rows(self, lo: int, hi: int) -> None:
        """Remove rows ``[lo, hi)`` (a failed commit's) — later rows move down — then drop object
        columns no row holds any more and recompute what derives from the rows."""
        table, slot = self.table, self.slot
        count = int(table.count[slot])
        tail = count - hi
        for name, column in self.columns.items():
            if type(column) is TableColumn:
                data = table.data[name]
                data[slot, lo:lo + tail] = data[slot, hi:count].copy()
            elif type(column) is ObjectColumn:
                del column.values[lo:hi]
        left = count - (hi - lo)
        table.count[slot] = left
        kept = {name: column for name, column in self.columns.items()
                if type(column) is not ObjectColumn or column.present(left)}
        for column in kept.values():
            if type(column) is ObjectColumn:
                column.recompute()
        if len(kept) != len(self.columns):
            self.columns = kept
        table.size[slot] = self.recomputed_size(left)

    def recomputed_size(self, n: int) -> int:
        """The rules' size of the first ``n`` rows (row by row, as they were appended; the meta is not
        counted, as mongod's bucket size does not count it)."""
        size = 0
        if not n:
            return size
        if self.pure:
            table = self.table
            return size + int(table.row_sizes(np.arange(n)).sum()) + table.sizes.first_extra
        seen: set[str] = set()  # (its first row created every column, the time's too)
        for position, row in enumerate(self.rows(n)):
            size += rules.measurement_size(seen.__contains__, position, row, self.meta_field)
            seen.update(row)
        return size

    # -- reading the rows (loop or the thread building a full write; see bucketview.py for readers)
    def column_values(self, name: str, n: int, data: dict[str, Any] | None = None) -> list[Any]:
        """The first ``n`` values of a column as Python values (``MISSING`` where absent)."""
        column = self.columns[name]
        if type(column) is TableColumn:
            arrays = self.table.data if data is None else data
            return python_values(column.kind, arrays[name][self.slot, :n])
        if type(column) is ConstColumn:
            return [column.value] * n
        return cast(ObjectColumn, column).values[:n]

    def rows(self, n: int) -> list[dict[str, Any]]:
        """The first ``n`` rows as measurement dicts without the meta field (bucket field order)."""
        names = list(self.columns)
        columns = [self.column_values(name, n) for name in names]
        out = []
        for values in zip(*columns, strict=True):
            out.append({name: value for name, value in zip(names, values, strict=True) if value is not MISSING})
        return out

    # -- the v1 document
    def document_parts(self, n: int, columns: dict[str, Any] | None = None, data: dict[str, Any] | None = None) -> Parts:
        """The v1 document of the first ``n`` rows (``full_documents`` of this bucket alone)."""
        return full_documents([(self, n, self.columns if columns is None else columns,
                                self.table.data if data is None else data)])[0]

    def leave(self, final: bytes | None) -> None:
        """The bucket leaves memory (its full document ``final`` is durable, or it is frozen). ``final``
        and ``left`` are set before the slot is released: a reader that copied rows and then finds
        ``left`` unset copied this bucket's rows."""
        self.final = final
        self.left = True
        self.memo = NO_MEMO
        self.table.release(self.slot)


def full_documents(items: list[tuple[Bucket, int, dict[str, Any], dict[str, Any]]]) -> list[Parts]:
    """The v1 documents of buckets' first rows, each item ``(bucket, n, columns, arrays)``: ``columns``
    and ``arrays`` (the table's) as they were when the caller took them — a commit takes them on the
    event loop and builds the documents on the writer thread; rows below the commit's end do not change
    meanwhile. Buckets with the same column set (a table's pure buckets share it), row count and arrays
    are built together: one gather per column, one NumPy reduction per kind for their control, and
    their ``data`` and codec forms with one NumPy call per column and step (``Group``)."""
    groups: dict[tuple[int, ...], list[int]] = {}
    for i, (_, n, columns, data) in enumerate(items):
        key = (id(columns), n, *(id(data[name]) for name, column in columns.items() if type(column) is TableColumn))
        groups.setdefault(key, []).append(i)
    out: list[Parts] = [cast(Parts, None)] * len(items)
    for members in groups.values():
        first, n, columns, data = items[members[0]]
        buckets = [items[i][0] for i in members]
        slots = np.fromiter((bucket.slot for bucket in buckets), np.intp, len(buckets))
        typed = {name: data[name][slots, :n] for name, column in columns.items() if type(column) is TableColumn}
        summaries = control_summaries([b.id for b in buckets], [b.meta for b in buckets], [b.start_s for b in buckets],
                                      first.time_field, columns, typed, n, first.table.collation)
        mins = summaries[0]["control"]["min"]
        codec: list[tuple[Any, ...]] = []
        for name, column in columns.items():
            encoded = name.encode()
            kind = type(column)
            if kind is TableColumn:
                codec.append((encoded, column.kind, typed[name]))
            elif kind is ConstColumn:
                codec.append((encoded, 0, constant_bson(column.value, n)))
            elif name in mins:  # an object column some row below n holds (its buckets share it: one)
                codec.append((encoded, 0, object_bson(column.values[:n])))
        group = Group(summaries, codec, n)
        for j, i in enumerate(members):
            out[i] = Parts(group, j)
    return out


class Group:
    """The v1 documents of k buckets with one column set and row count: their heads (``_id``,
    ``control``, ``meta``: one BSON encode each) and ``data`` columns as the bucket codec takes them
    ((name, bson type, k x n values) of typed columns, (name, 0, column BSON) of the others, the same
    for all k); ``documents()`` and ``streams()`` (storage's compact form before zstd, verified) are
    built for all k on first use."""

    __slots__ = ("summaries", "codec", "n", "heads", "_documents", "_streams")

    def __init__(self, summaries: list[dict[str, Any]], codec: list[Any], n: int):
        self.summaries, self.codec, self.n = summaries, codec, n
        length = 6 + bucket_codec.columns_length(codec, len(summaries))
        # each document's bytes up to the ``data`` element's value (``data`` comes last)
        self.heads = []
        for summary in summaries:
            encoded = bson.encode(summary, codec_options=CODEC_OPTIONS)
            self.heads.append(b"".join((_INT32.pack(len(encoded) + length), encoded[4:-1], b"\x03data\x00")))
        self._documents: list[bytes] | None = None
        self._streams: list[bytes | None] | None = None

    def documents(self) -> list[bytes]:
        if self._documents is None:
            self._documents = bucket_codec.columns_documents(self.codec, self.heads, b"\x00")
        return self._documents

    def streams(self) -> list[bytes | None]:
        if self._streams is None:
            try:
                self._streams = bucket_codec.encode_columns(self.heads, self.codec)
            except (ValueError, OverflowError):
                self._streams = [None] * len(self.heads)
        return self._streams


class Parts:
    """One built v1 document of a ``Group``: ``summary`` ({_id, control, meta?}), ``bson()`` the
    document, ``codec_form()`` a function giving storage's compact form."""

    __slots__ = ("group", "i", "summary")

    def __init__(self, group: Group, i: int):
        self.group, self.i = group, i
        self.summary = group.summaries[i]

    @property
    def n(self) -> int:
        return self.group.n

    def bson(self) -> bytes:
        return self.group.documents()[self.i]

    def codec_form(self) -> Callable[[], bytes | None] | None:
        """Storage's compact form of this document built from the columns (``encode_columns`` verifies
        that every column reads back); None when there is nothing to pack, and the function answers
        None when it cannot be encoded."""
        if not self.group.n:
            return None
        group, i = self.group, self.i

        def pack() -> bytes | None:
            stream = group.streams()[i]
            return None if stream is None else bucket_codec.compress(stream)

        return pack


# ---------------------------------------------------------------- column values of appended rows

_ABSENT = object()


class Typed:
    """A batch column of one typed kind: ``values`` in NumPy (dates as int64 ms, ObjectIds as V12)."""

    __slots__ = ("kind", "values")

    def __init__(self, kind: int, values: np.ndarray):
        self.kind, self.values = kind, values


class Constant:
    """A batch column holding one value in every row (a layout constant)."""

    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value


def _as_array(kind: int, values: Any, k: int) -> np.ndarray | None:
    """The rows' values as an array of ``kind`` when every row holds a value of that kind."""
    if values is _ABSENT:
        return None
    if type(values) is Typed:
        return values.values if values.kind == kind else None
    if type(values) is Constant:
        return to_array(kind, [values.value] * k) if typed_kind(values.value) == kind else None
    if any(value is MISSING or typed_kind(value) != kind for value in values):
        return None
    return to_array(kind, values)


def _as_list(values: Any, k: int) -> list[Any]:
    if values is _ABSENT:
        return [MISSING] * k
    if type(values) is Typed:
        return python_values(values.kind, values.values)
    if type(values) is Constant:
        return [values.value] * k
    return list(values)


def _all_equal(values: Any, value: Any, k: int) -> bool:
    if values is _ABSENT or type(values) is Typed:
        return False
    if type(values) is Constant:
        return type(values.value) is type(value) and values.value == value
    kind = type(value)
    return all(type(v) is kind and v == value for v in values)
