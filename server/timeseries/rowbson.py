"""The rows a read takes of one bucket, column by column (pure): ``Unpacked`` holds them in the order
every row's fields come and makes them either measurements (dicts, for the stages that read fields)
or their BSON documents (for a cursor that returns them as they are), never one through the other.

Every bucket view (bucketview.py, stored.py) decides once which columns the rows hold and in which
order — the time field, the meta field, the columns every row of the bucket holds in bucket order,
then the others (the *sparse* ones) in bucket order — and hands each column over in one of three
forms:

- **typed**: (BSON type, NumPy values) of a fixed-width column (double, int32, int64, date, bool,
  ObjectId) every row holds;
- **constant**: one Python value every row holds (the meta, a constant column);
- **values**: one Python value per row (``MISSING`` where a sparse column's row lacks the field).

``dicts()`` gives what ``bucketdoc.unpack_document`` gives for those rows (the same field order, the
meta one object shared by the rows). ``documents()`` gives each row's exact BSON, byte for byte what
encoding its dict gives (``codec.encode_in_order``): a typed column's values are copied into the rows
as their little-endian bytes with NumPy (a double's bits, NaN payloads and -0.0 included; a date's
milliseconds, in ``datetime``'s range or not; a bool as 0/1), a constant's element is encoded once,
a string column's once per distinct string. When every column is typed or constant (a TSBS bucket:
its time, ``_id`` and metrics typed, its meta and ``measurement`` constant) every row has the same
size and the rows are one NumPy array cut into documents; otherwise each row joins its columns'
elements.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

import numpy as np

from tidemark.protocol.codec import EncodedDocument, encode_in_order
from tidemark.timeseries.bucketdoc import MISSING
from tidemark.timeseries.columns import BOOL, WIDTH, python_values

TYPED, CONSTANT, VALUES = 0, 1, 2
_INT32 = struct.Struct("<i")


def element(name: str, value: Any) -> bytes:
    """The BSON element ``<type><name>\\0<value>`` of one field."""
    return encode_in_order({name: value})[4:-1]


class Unpacked:
    """Rows of one bucket, column by column (see the module). ``count``: how many rows."""

    __slots__ = ("count", "dense", "sparse")

    def __init__(self, count: int):
        self.count = count
        self.dense: list[tuple[str, int, Any]] = []  # (name, form, payload): fields every row holds, in order
        self.sparse: list[tuple[str, list[Any]]] = []  # (name, values with MISSING): after the dense ones

    def typed(self, name: str, kind: int, values: np.ndarray) -> None:
        self.dense.append((name, TYPED, (kind, values)))

    def constant(self, name: str, value: Any) -> None:
        self.dense.append((name, CONSTANT, value))

    def values(self, name: str, values: list[Any]) -> None:
        self.dense.append((name, VALUES, values))

    def sparse_values(self, name: str, values: list[Any]) -> None:
        self.sparse.append((name, values))

    # -- measurements
    def dicts(self) -> Iterator[dict[str, Any]]:
        """The rows as measurements (the meta, a constant, one object shared by all rows: stages copy
        on write)."""
        n = self.count
        names = [name for name, _, _ in self.dense]
        columns: list[Any] = []
        for _, form, payload in self.dense:
            if form == TYPED:
                columns.append(python_values(payload[0], payload[1]))
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
    def documents(self, rows: list[int] | None = None) -> list[EncodedDocument]:
        """Each row's BSON document (only the rows at the ascending indexes ``rows`` when given)."""
        n = self.count if rows is None else len(rows)
        if not n:
            return []
        taken = None if rows is None else np.asarray(rows, np.intp)
        picked = rows or []
        segments: list[Any] = []  # per row: a fixed block (template, fills) or one element per row
        template = bytearray()
        fills: list[tuple[int, np.ndarray, int]] = []  # (offset in the block, values, width)
        for name, form, payload in self.dense:
            if form == TYPED:
                kind, array = payload
                width = WIDTH[kind]
                template += bytes((kind,)) + name.encode() + b"\x00"
                if taken is not None:
                    array = array[taken]
                if kind == BOOL:
                    array = array.astype(np.bool_)  # a bool is 0 or 1 whatever byte held it
                fills.append((len(template), np.ascontiguousarray(array).view(np.uint8).reshape(n, width), width))
                template += bytes(width)
            elif form == CONSTANT:
                template += element(name, payload)
            else:
                values = payload if taken is None else [payload[i] for i in picked]
                elements = _elements(name, values)
                if isinstance(elements, bytes):
                    template += elements
                else:
                    if template:
                        segments.append(_block(template, fills, n))
                        template, fills = bytearray(), []
                    segments.append(elements)
        for name, values in self.sparse:
            if taken is not None:
                values = [values[i] for i in picked]
            elements = _elements(name, values)
            if isinstance(elements, bytes):
                template += elements
                continue
            if template:
                segments.append(_block(template, fills, n))
                template, fills = bytearray(), []
            segments.append(elements)
        if not segments:  # one size for every row: the rows are one array
            size = len(template) + 5
            whole = np.empty((n, size), np.uint8)
            whole[:] = np.frombuffer(_INT32.pack(size) + bytes(template) + b"\x00", np.uint8)
            for offset, block, width in fills:
                whole[:, offset + 4:offset + 4 + width] = block
            data = whole.tobytes()
            return [EncodedDocument(data[i:i + size]) for i in range(0, n * size, size)]
        if template:
            segments.append(_block(template, fills, n))
        out = []
        for parts in zip(*segments, strict=True):
            body = b"".join(parts)
            out.append(EncodedDocument(_INT32.pack(len(body) + 5) + body + b"\x00"))
        return out


def _block(template: bytearray, fills: list[tuple[int, np.ndarray, int]], n: int) -> list[bytes]:
    """Each row's bytes of a run of typed and constant elements (all rows the same size)."""
    size = len(template)
    if not fills:
        return [bytes(template)] * n
    whole = np.empty((n, size), np.uint8)
    whole[:] = np.frombuffer(bytes(template), np.uint8)
    for offset, block, width in fills:
        whole[:, offset:offset + width] = block
    data = whole.tobytes()
    return [data[i:i + size] for i in range(0, n * size, size)]


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

    def documents(self, rows: list[int] | None = None) -> list[EncodedDocument]:
        """As ``Unpacked.documents``; ``rows`` index the measurements ``dicts()`` gave."""
        if rows is None:
            return [EncodedDocument(encode_in_order(m)) for m in self._source]
        seen = self._seen
        return [EncodedDocument(encode_in_order(seen[i])) for i in rows]


Rows = Unpacked | MeasurementRows
