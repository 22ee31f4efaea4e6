"""The rows a read takes of one bucket, column by column (pure): ``Unpacked`` holds them in the order
every row's fields come and makes them either measurements (dicts, for the stages that read fields)
or their BSON documents (for a cursor that returns them as they are: one ``EncodedRun`` of a bucket's
rows, which the cursor takes into its batches a stretch at a time, no Python object per row), never one
through the other.

Every bucket view (bucketview.py, stored.py) decides once which columns the rows hold and in which
order — the time field, the meta field, the columns every row of the bucket holds in bucket order,
then the others (the *sparse* ones) in bucket order — and hands each column over in one of three
forms:

- **typed**: (BSON type, NumPy values) of a fixed-width column (double, int32, int64, date, bool,
  ObjectId) every row holds — the bucket's whole column when the rows are taken at ``positions``
  (``Unpacked(count, positions)``: they are taken of it only as the rows are made, once), else the
  rows' values;
- **constant**: one Python value every row holds (the meta, a constant column);
- **values**: one Python value per row (``MISSING`` where a sparse column's row lacks the field).

``dicts()`` gives what ``bucketdoc.unpack_document`` gives for those rows (the same field order, the
meta one object shared by the rows). ``documents()`` gives each row's exact BSON (an ``EncodedRun``), byte for byte what
encoding its dict gives (``codec.encode_in_order``): a typed column's values are copied into the rows
as their little-endian bytes with NumPy (a double's bits, NaN payloads and -0.0 included; a date's
milliseconds, in ``datetime``'s range or not; a bool as 0/1), a constant's element is encoded once,
a string column's once per distinct string. When every column is typed or constant (a TSBS bucket:
its time, ``_id`` and metrics typed, its meta and ``measurement`` constant) every row has the same
size and the rows are one buffer cut into documents; otherwise each row joins its columns'
elements. The typed values are written into the rows' buffer through a structured dtype of the row's
layout (one NumPy assignment per column: the value fields at their offsets in the row, cached per
layout), over the row's template repeated (its names, constants and sizes).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

import numpy as np

from tidemark.protocol.codec import EncodedRun, encode_in_order
from tidemark.query.interrupt import tick
from tidemark.timeseries.bucketdoc import MISSING
from tidemark.timeseries.columns import BOOL, DATE, DOUBLE, INT32, INT64, OID, WIDTH, python_values

TYPED, CONSTANT, VALUES = 0, 1, 2
_INT32 = struct.Struct("<i")
# a typed value's field in a row's structured dtype (a bool written as 0/1: ``_fill``)
_FIELD = {DOUBLE: "<f8", DATE: "<i8", INT64: "<i8", INT32: "<i4", OID: "V12", BOOL: "u1"}
_LAYOUTS: dict[tuple[int, tuple[tuple[int, int], ...]], np.dtype] = {}  # (row size, (offset, kind)...) -> dtype
_LAYOUTS_KEPT = 1024  # distinct row layouts kept (a TSBS read has a few: the meta's length varies)
_CUTS: dict[tuple[int, int], struct.Struct] = {}  # (row size, rows) -> the Struct cutting them apart
_CUTS_KEPT = 4096
_CUT_ROWS = 512  # the rows one Struct cuts at most (a longer buffer is cut a piece at a time)


def element(name: str, value: Any) -> bytes:
    """The BSON element ``<type><name>\\0<value>`` of one field."""
    return encode_in_order({name: value})[4:-1]


class Unpacked:
    """Rows of one bucket, column by column (see the module). ``count``: how many rows."""

    __slots__ = ("count", "positions", "dense", "sparse")

    def __init__(self, count: int, positions: np.ndarray | None = None):
        """``positions``: the rows taken of the typed columns (each given whole), None when the typed
        columns hold the rows' values (every row of the bucket, or already taken); the other forms
        always hold the rows' values."""
        self.count = count
        self.positions = positions
        self.dense: list[tuple[str, int, Any]] = []  # (name, form, payload): fields every row holds, in order
        self.sparse: list[tuple[str, list[Any]]] = []  # (name, values with MISSING): after the dense ones

    # Each column taken counts as a unit of work (``interrupt.tick``): a bucket may hold hundreds of
    # thousands of fields, and its unpacking must stay killable, bounded by maxTimeMS and, run inline
    # on the event loop, moved to the pool once past its budget (a read of one row of 400,000 fields
    # held the loop for 8 s).
    def typed(self, name: str, kind: int, values: np.ndarray) -> None:
        tick()
        self.dense.append((name, TYPED, (kind, values)))

    def constant(self, name: str, value: Any) -> None:
        tick()
        self.dense.append((name, CONSTANT, value))

    def values(self, name: str, values: list[Any]) -> None:
        tick()
        self.dense.append((name, VALUES, values))

    def sparse_values(self, name: str, values: list[Any]) -> None:
        tick()
        self.sparse.append((name, values))

    # -- measurements
    def dicts(self) -> Iterator[dict[str, Any]]:
        """The rows as measurements (the meta, a constant, one object shared by all rows: stages copy
        on write)."""
        n = self.count
        names = [name for name, _, _ in self.dense]
        columns: list[Any] = []
        positions = self.positions
        for _, form, payload in self.dense:
            if form == TYPED:
                kind, values = payload
                columns.append(python_values(kind, values if positions is None else values[positions]))
            elif form == CONSTANT:
                columns.append([payload] * n)
            else:
                columns.append(payload)
        rows: Any = zip(*columns, strict=True) if columns else ((),) * n
        sparse = self.sparse
        if not sparse:
            for row in rows:
                yield dict(zip(names, row, strict=True))
            return
        for i, row in enumerate(rows):
            out = dict(zip(names, row, strict=True))
            for name, values in sparse:
                value = values[i]
                if value is not MISSING:
                    out[name] = value
            yield out

    # -- BSON
    def documents(self, rows: list[int] | None = None) -> EncodedRun:
        """Each row's BSON document (only the rows at the ascending indexes ``rows`` when given), as
        one ``EncodedRun`` (with the documents' sizes)."""
        n = self.count if rows is None else len(rows)
        if not n:
            return EncodedRun([])
        picked = rows or []
        # the rows taken of the typed columns (None: each column's values as they are)
        take = self.positions
        if rows is not None:
            take = np.asarray(rows, np.intp) if take is None else take[rows]
        segments: list[Any] = []  # per row: a fixed block's bytes or one element per row
        template = bytearray()
        fills: list[tuple[int, int, np.ndarray]] = []  # (offset in the block, kind, values)
        for name, form, payload in self.dense:
            if form == TYPED:
                kind, array = payload
                template += bytes((kind,)) + name.encode() + b"\x00"
                fills.append((len(template), kind, array))
                template += bytes(WIDTH[kind])
            elif form == CONSTANT:
                template += element(name, payload)
            else:
                values = payload if rows is None else [payload[i] for i in picked]
                elements = _elements(name, values)
                if isinstance(elements, bytes):
                    template += elements
                else:
                    if template:
                        segments.append(_block(template, fills, n, take))
                        template, fills = bytearray(), []
                    segments.append(elements)
        for name, values in self.sparse:
            if rows is not None:
                values = [values[i] for i in picked]
            elements = _elements(name, values)
            if isinstance(elements, bytes):
                template += elements
                continue
            if template:
                segments.append(_block(template, fills, n, take))
                template, fills = bytearray(), []
            segments.append(elements)
        if not segments:  # one size for every row: the rows are one buffer
            size = len(template) + 5
            data = _fill(_INT32.pack(size) + template + b"\x00", [(at + 4, kind, values) for at, kind, values in fills],
                         n, take)
            return EncodedRun(_cut(data, size, n), np.full(n, size, np.int64))
        if template:
            segments.append(_block(template, fills, n, take))
        out = []
        for parts in zip(*segments, strict=True):
            body = b"".join(parts)
            out.append(_INT32.pack(len(body) + 5) + body + b"\x00")
        return EncodedRun(out)


def _block(template: bytearray, fills: list[tuple[int, int, np.ndarray]], n: int, take: np.ndarray | None
           ) -> list[bytes]:
    """Each row's bytes of a run of typed and constant elements (all rows the same size)."""
    size = len(template)
    if not fills:
        return [bytes(template)] * n
    return _cut(_fill(template, fills, n, take), size, n)


def _fill(template: bytes | bytearray, fills: list[tuple[int, int, np.ndarray]], n: int, take: np.ndarray | None
          ) -> bytes:
    """``n`` rows of ``template`` back to back, each typed column's values (at ``take`` of them when
    given) written at its offset as its little-endian bytes: one assignment per column into the rows
    seen through the layout's structured dtype."""
    rows = bytearray(template) * n
    if fills:
        layout = _layout(len(template), tuple((at, kind) for at, kind, _ in fills))
        view = np.frombuffer(rows, layout)
        for field, (_, kind, values) in zip(layout.names or (), fills, strict=True):
            if take is not None:
                values = values[take]
            if kind == BOOL:
                values = values.view(np.uint8) != 0  # a bool is 0 or 1 whatever byte held it
            view[field] = values
        del view  # (the buffer is exported while a view holds it)
    return bytes(rows)


def _cut(data: bytes, size: int, n: int) -> list[bytes]:
    """``data`` (``n`` rows of ``size`` bytes back to back) cut into its rows: a ``Struct`` of ``n``
    ``<size>s`` fields (cached) unpacks them in one call, no Python step per row."""
    if n > _CUT_ROWS:
        whole = _CUT_ROWS * size
        out: list[bytes] = []
        for at in range(0, n * size, whole):
            piece = data[at:at + whole]
            out += _cut(piece, size, len(piece) // size)
        return out
    key = (size, n)
    cut = _CUTS.get(key)
    if cut is None:
        if len(_CUTS) >= _CUTS_KEPT:
            _CUTS.clear()
        cut = _CUTS[key] = struct.Struct(f"{size}s" * n)
    return list(cut.unpack(data))


def _layout(size: int, fields: tuple[tuple[int, int], ...]) -> np.dtype:
    """The structured dtype of a row of ``size`` bytes with typed values at (offset, kind) ``fields``."""
    key = (size, fields)
    found = _LAYOUTS.get(key)
    if found is None:
        if len(_LAYOUTS) >= _LAYOUTS_KEPT:
            _LAYOUTS.clear()
        found = _LAYOUTS[key] = np.dtype({"names": [f"f{i}" for i in range(len(fields))],
                                          "formats": [_FIELD[kind] for _, kind in fields],
                                          "offsets": [at for at, _ in fields], "itemsize": size})
    return found


def _elements(name: str, values: list[Any]) -> bytes | list[bytes]:
    """Each row's element of a column given as Python values (``b""`` where the row lacks it), or the
    one element when every row holds the same string (encoded once per distinct string)."""
    strings: dict[str, bytes] = {}
    out: list[bytes] = []
    for value in values:
        if type(value) is str:
            found = strings.get(value)
            if found is None:
                found = strings[value] = element(name, value)
            out.append(found)
        elif value is MISSING:
            out.append(b"")
        else:
            out.append(element(name, value))
    if out and all(v is out[0] for v in out):  # one string in every row (a single row: any value)
        return out[0]
    return out


class MeasurementRows:
    """Rows that come as measurements already (``bucketdoc.unpack_document`` of a bucket whose time
    column is not typed, a bucket frozen while read): their BSON is their dict's."""

    __slots__ = ("_source", "_seen")

    def __init__(self, measurements: Iterator[dict[str, Any]]):
        self._source = measurements
        self._seen: list[dict[str, Any]] = []

    def dicts(self) -> Iterator[dict[str, Any]]:
        seen = self._seen
        for measurement in self._source:
            seen.append(measurement)
            yield measurement

    def documents(self, rows: list[int] | None = None) -> EncodedRun:
        """As ``Unpacked.documents``; ``rows`` index the measurements ``dicts()`` gave."""
        if rows is None:
            return EncodedRun([encode_in_order(m) for m in self._source])
        seen = self._seen
        return EncodedRun([encode_in_order(seen[i]) for i in rows])


Rows = Unpacked | MeasurementRows
