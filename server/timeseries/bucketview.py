"""The in-memory implementation of the read interface of a bucket (``read_interface.BucketView``).

Every read path — the generic unpack, the columnar ``$group``, lastpoint, reads of ``system.buckets``
— takes buckets as ``BucketView`` objects, whether they come from storage (stored.StoredBucket,
decoded lazily, parts kept in bucketcache) or from memory (``LiveBucket`` below).

``LiveBucket`` reads a bucket's *committed* rows (``durable`` when the view is taken) straight from its
columns — NumPy rows to ``rowbson.Unpacked``, made measurements or BSON documents — without building
the v1 document. If
the bucket leaves memory while a read still holds the view (its slot may then hold another bucket's
rows), the view notices after copying (``Bucket.final``/``left``) and reads the final document instead.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from tidemark.protocol.codec import decode
from tidemark.timeseries.bucketdoc import MISSING, POS_KEYS, control_time_range
from tidemark.timeseries.columns import (
    ConstColumn,
    ObjectColumn,
    TableColumn,
    control_summary,
    python_values,
)
from tidemark.timeseries.rowbson import Rows, Unpacked
from tidemark.timeseries.stored import DocumentBucket, document_bucket

if TYPE_CHECKING:
    from tidemark.timeseries.bucket import Bucket

# What reads derive from an in-memory bucket (its summary, time bounds, lastpoint facts: ``Bucket.memo``)
# is kept for the most recently derived buckets only, within a byte budget of its own: the catalog's
# threshold bounds the buckets, not what reads keep beside them (a count over 220,000 in-memory buckets
# kept ~1.2 KB each, ~260 MB beyond the threshold, until each bucket left memory).
LIVE_MEMO_BUDGET = int(os.environ.get("TIDEMARK_LIVE_MEMO_MB", "32")) * 1024 * 1024
MEMO_BYTES = 1024  # a memo's summary and its dicts (control, min, max, time bounds), measured ~1 KB
MEMO_BYTES_PER_COLUMN = 256  # its min and max of one more column


class LiveMemos:
    """The in-memory buckets holding a memo, least recently derived first, with the memos' estimated
    bytes: registering one over ``budget`` drops the oldest memos (the bucket derives it again on its
    next read). Thread-safe (reads run in executor threads); a reader that holds a dropped memo dict
    keeps using it, detached."""

    def __init__(self, budget: int = LIVE_MEMO_BUDGET):
        self.budget = budget
        self.used = 0
        self.dropped = 0
        self._entries: OrderedDict[int, tuple[weakref.ref[Bucket], int]] = OrderedDict()
        self._lock = threading.Lock()

    def register(self, bucket: Any, size: int) -> None:
        with self._lock:
            entries = self._entries
            old = entries.pop(id(bucket), None)
            if old is not None:
                self.used -= old[1]
            entries[id(bucket)] = (weakref.ref(bucket), size)
            self.used += size
            while self.used > self.budget and len(entries) > 1:
                _, (ref, dropped) = entries.popitem(last=False)
                self.used -= dropped
                self.dropped += 1
                gone = ref()
                if gone is not None:
                    gone.memo = NO_MEMO

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.used = 0


NO_MEMO: tuple[Any, ...] = (-1, None, {})  # never written: a memo is always a fresh dict (``_memo``)
LIVE_MEMOS = LiveMemos()


class LiveBucket:
    """A read's view of an in-memory bucket: its committed rows when the view was taken."""

    __slots__ = ("bucket", "id", "start_s", "meta", "n", "_columns", "_typed", "_values", "_summary", "_gone")
    cached = None

    def __init__(self, bucket: Bucket):
        self.bucket = bucket
        self.id = bucket.id
        self.start_s = bucket.start_s
        self.meta = bucket.meta
        self._columns = bucket.columns  # first: the rows below the durable count read next are valid in it
        self.n = bucket.durable
        # copies made on first use (None until then: a scan holds a view of every in-memory bucket)
        self._typed: dict[str, np.ndarray] | None = None
        self._values: dict[str, list[Any]] | None = None
        self._summary: dict[str, Any] | None = None
        self._gone: DocumentBucket | _Empty | None = None  # the final document's view once the bucket left memory meanwhile

    # -- rows (copied on first use; checked against the bucket leaving memory)
    def _left(self) -> DocumentBucket | _Empty | None:
        if self._gone is None and self.bucket.left:
            final = self.bucket.final
            self._gone = document_bucket(decode(final)) if final is not None else _EMPTY
        return self._gone

    def _array(self, name: str) -> np.ndarray:
        typed = self._typed
        if typed is None:
            typed = self._typed = {}
        found = typed.get(name)
        if found is None:
            found = _rows(self.bucket, name, slice(0, self.n), self.n).copy()
            found.flags.writeable = False
            typed[name] = found
        return found

    def _values_at(self, name: str, positions: np.ndarray | None) -> list[Any]:
        """An object column's values, only at ``positions`` when given (only those are taken)."""
        if positions is None:
            return self._python(name)
        values = cast(ObjectColumn, self._columns[name]).values
        return [values[i] for i in positions.tolist()]

    def derived(self) -> dict[str, Any]:
        """A memo for what reads derive from exactly these rows (shared through the bucket)."""
        return self._memo()

    def _python(self, name: str) -> list[Any]:
        values = self._values
        if values is None:
            values = self._values = {}
        found = values.get(name)
        if found is None:
            column = self._columns[name]
            if type(column) is TableColumn:
                found = python_values(column.kind, self._array(name))
            elif type(column) is ConstColumn:
                found = [column.value] * self.n
            else:
                found = column.values[:self.n]
            values[name] = found
        return found

    # -- the interface
    def column_names(self) -> list[str]:
        gone = self._left()
        if gone is not None:
            return gone.column_names()
        return [name for name, column in self._columns.items()
                if type(column) is not ObjectColumn or any(v is not MISSING for v in column.values[:self.n])]

    def dense(self, name: str) -> tuple[int, np.ndarray] | None:
        column = self._columns.get(name)
        if type(column) is not TableColumn or not self.n:
            gone = self._left()
            return None if gone is None else gone.dense(name)
        values = self._array(name)
        gone = self._left()
        return (column.kind, values) if gone is None else gone.dense(name)

    def _memo(self) -> dict[str, Any]:
        """What reads derived from exactly these rows, shared through the bucket (``Bucket.memo``)."""
        bucket = self.bucket
        n, columns, memo = bucket.memo
        if n != self.n or columns is not self._columns:
            memo = {}
            bucket.memo = (self.n, self._columns, memo)
            LIVE_MEMOS.register(bucket, MEMO_BYTES + MEMO_BYTES_PER_COLUMN * len(self._columns))
        return cast("dict[str, Any]", memo)

    def summary(self) -> dict[str, Any]:
        if self._summary is not None:
            return self._summary
        gone = self._left()
        if gone is not None:
            return gone.summary()
        memo = self._memo()
        found = memo.get("summary")
        if found is not None:
            self._summary = found
            return cast("dict[str, Any]", found)
        bucket = self.bucket
        typed = {name: self._array(name) for name, column in self._columns.items() if type(column) is TableColumn}
        out = control_summary(self.id, self.meta, self.start_s, bucket.time_field, self._columns, typed, self.n,
                              bucket.table.collation)
        if (gone := self._left()) is not None:
            return gone.summary()
        self._summary = memo["summary"] = out
        return out

    def head(self) -> dict[str, Any]:
        """``{_id, meta?}`` from the bucket itself: its meta never changes (its control — every column's
        min and max of the rows — is what ``summary`` works out)."""
        return {"_id": self.id} if self.meta is MISSING else {"_id": self.id, "meta": self.meta}

    def time_range(self, time_field: str) -> tuple[int | None, int | None]:
        """``summary``'s control min and max of the time field — the rounded start and the latest time
        (``columns.control_summaries``) — from the time column alone."""
        gone = self._left()
        if gone is None and self._summary is None and type(self._columns.get(time_field)) is TableColumn:
            # read in place, not copied (``_array``): a scan holds every view it has not passed on yet
            latest = int(_rows(self.bucket, time_field, slice(0, self.n), self.n).max())
            gone = self._left()
            if gone is None:
                return self.start_s * 1000, latest
        if gone is not None:
            return gone.time_range(time_field)
        return control_time_range(self.summary(), time_field)

    def unpack(self, fields: Any = None, positions: np.ndarray | None = None, *, time_field: str,
               meta_field: str | None) -> Rows:
        gone = self._left()
        if gone is not None:
            return gone.unpack(fields, positions, time_field=time_field, meta_field=meta_field)
        n = self.n
        if not n:
            return Unpacked(0)
        wanted = None if fields is None else set(fields)
        dense_names: list[str] = []
        sparse_names: list[str] = []
        for name, column in self._columns.items():
            if name == time_field or (wanted is not None and name not in wanted):
                continue
            if type(column) is ObjectColumn and any(v is MISSING for v in column.values[:n]):
                sparse_names.append(name)
            else:
                dense_names.append(name)
        out = Unpacked(n if positions is None else len(positions))
        if wanted is None or time_field in wanted:
            self._column(out, time_field, positions)
        if meta_field is not None and self.meta is not MISSING and (wanted is None or meta_field in wanted):
            out.constant(meta_field, self.meta)
        for name in dense_names:
            self._column(out, name, positions)
        # a column some row lacks stays after the others in every row, whichever rows are read
        for name in sparse_names:
            out.sparse_values(name, self._values_at(name, positions))
        if (gone := self._left()) is not None:  # left memory while copying: the copies may be another bucket's
            return gone.unpack(fields, positions, time_field=time_field, meta_field=meta_field)
        return out

    def _column(self, out: Unpacked, name: str, positions: np.ndarray | None) -> None:
        """A column every row holds, at ``positions`` (every row when None), in its own form."""
        column = self._columns[name]
        if type(column) is TableColumn:
            if positions is None:
                values = self._array(name)
            elif self._typed is not None and name in self._typed:
                values = self._typed[name][positions]
            else:  # only these rows: no copy of the column
                values = _rows(self.bucket, name, positions, len(positions))
            out.typed(name, column.kind, values)
        elif type(column) is ConstColumn:
            out.constant(name, column.value)
        else:
            out.values(name, self._values_at(name, positions))

    def document(self) -> dict[str, Any]:
        gone = self._left()
        if gone is not None:
            return gone.document()
        doc = dict(self.summary())
        n = self.n
        keys = POS_KEYS[:n] if n <= len(POS_KEYS) else [str(i) for i in range(n)]
        data = {}
        for name in self.column_names():
            values = self._python(name)
            data[name] = {key: value for key, value in zip(keys, values, strict=True) if value is not MISSING}
        doc["data"] = data
        if (gone := self._left()) is not None:
            return gone.document()
        return doc


def _rows(bucket: Bucket, name: str, rows: Any, n: int) -> np.ndarray:
    """Rows of a typed column from the bucket's slot. A slot beyond the table's arrays means the bucket
    left memory and its table shrank (table.py): zeros stand in, the caller then sees ``left``."""
    array = bucket.table.data[name]
    if bucket.slot >= len(array):
        return np.zeros(n, array.dtype)
    return cast(np.ndarray, array[bucket.slot, rows])


class _Empty:
    """What a view of a bucket frozen while read (its collection dropped) shows: nothing."""

    def column_names(self) -> list[str]:
        return []

    def dense(self, name: str) -> None:
        return None

    def derived(self) -> dict[str, Any]:
        return {}

    def summary(self) -> dict[str, Any]:
        return {"_id": None, "control": {"version": 1, "min": {}, "max": {}}}

    def head(self) -> dict[str, Any]:
        return {"_id": None}

    def time_range(self, time_field: str) -> tuple[int | None, int | None]:
        return None, None

    def unpack(self, *args: Any, **kwargs: Any) -> Unpacked:
        return Unpacked(0)

    def document(self) -> dict[str, Any]:
        return {"_id": None, "control": {"version": 1, "min": {}, "max": {}}, "data": {}}


_EMPTY = _Empty()
