"""BSONColumn decoding (pure): a BinData subtype 7 binary -> its values in row order.

Values are decoded by a *stream* holding the last value (``bsoncolumn_format`` has the controls and
the value integers): a literal is the next value and the new base; each value of a Simple-8b run is
a delta from the last value (a zero delta repeats it, whatever its type; deltas before any literal
are skips), or a skip.

An **interleaved** section (0xF0: arrays are scalars; 0xF1: arrays are traversed too; 0xF2: the
same with an array root) starts with a *reference object*; each of its scalars (depth first) starts
a stream whose last value is that scalar. Each value of the section is an object rebuilt on the
reference's shape taking the next value of every stream in order: a skip omits the field, a
sub-object left without fields is omitted unless it is empty in the reference, an object left
without fields is a missing value. A stream out of values decodes the next control of the binary;
a 0x00 met by the first stream ends the section (every stream must then be exhausted), and the
regular stream resumes with the section's last value as its last value.

This follows MongoDB's ``BSONColumn::Iterator`` value for value, with the validation of its later
versions (control bytes, buffer bounds, exhausted streams). Malformed input raises
``BSONColumnError`` (a ValueError); no input loops or allocates beyond ``max_values`` values and
``max_size`` decoded bytes.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any, cast

import bson

from tidemark.protocol.codec import decode
from tidemark.query.values import MISSING  # a skipped position of a column is a missing field
from tidemark.timeseries.bsoncolumn_format import (
    ARRAY,
    BOOL,
    DATE,
    DELTA_OF_DELTA,
    DOUBLE,
    I32,
    INT32,
    INT64,
    INTERLEAVED,
    INTERLEAVED_ARRAY,
    INTERLEAVED_OBJECTS,
    MEMORY,
    OBJECT,
    OID,
    SCALE_OF_NIBBLE,
    SCALES,
    TIMESTAMP,
    WIDE,
    BSONColumnError,
    Element,
    decode_oid,
    decode_wide,
    elements,
    encode_double,
    encode_integer,
    encode_wide,
    is_literal,
    signed64,
    value_end,
)
from tidemark.timeseries.simple8b import MASK64, MASK128, Simple8bError, decode_words, zigzag_decode

__all__ = ["DEFAULT_MAX_SIZE", "MISSING", "BSONColumnError", "DecodeBudget", "column_document", "decode_bson",
           "decode_column", "decode_elements"]

# Default limit on what one column or bucket may decode to, counted as memory: 8 bytes per missing
# value, 64 plus its BSON bytes per present value (scalars of interleaved objects included), 256 per
# interleaved stream. A 7.0 bucket holds at most 12 MB of measurements (125 kB unless it has fewer
# than 10), so this only stops hostile binaries.
DEFAULT_MAX_SIZE = 64 * 1024 * 1024
_VALUE_COST, _MISSING_COST, _STREAM_COST = 64, 8, 256
MAX_DEPTH = 200  # nesting of an interleaved reference object
_TYPE_BYTE = [bytes((i,)) for i in range(256)]


class DecodeBudget:
    """What a decode may still produce: ``values`` (rows of the column; None: any number) and
    ``size`` (memory as counted for DEFAULT_MAX_SIZE). The size of a whole bucket is one budget
    shared by its columns. Values are charged when a control is decoded, before they are used."""

    __slots__ = ("values", "size")

    def __init__(self, max_values: int | None, max_size: int) -> None:
        self.values = max_values
        self.size = max_size

    def rows(self, count: int) -> None:
        if self.values is not None:
            self.values -= count
            if self.values < 0:
                raise BSONColumnError("BSONColumn holds more values than allowed")

    def charge(self, size: int) -> None:
        self.size -= size
        if self.size < 0:
            raise BSONColumnError("decoded BSONColumn exceeds the size limit")

    def charge_values(self, values: list[Element | None]) -> None:
        missing = values.count(None)
        present = 0 if missing == len(values) else sum(_VALUE_COST + len(v[1]) for v in values if v is not None)
        self.charge(_MISSING_COST * missing + present)


class _Stream:
    """One decoding state: the last value and what its deltas are applied to."""

    __slots__ = ("last", "wide", "delta_of_delta", "encoded", "base", "previous", "pending", "taken")

    def __init__(self, last: Element | None = None) -> None:
        self.last = last  # None until a literal: deltas then decode as skips
        self.wide = self.delta_of_delta = False
        self.encoded = self.base = 0  # last delta / value for delta-of-delta (unsigned, wrapped)
        self.previous: int | None = 0  # what a leading RLE word repeats
        self.pending: list[Element | None] = []
        self.taken = 0

    def load_literal(self, element: Element) -> None:
        type_byte, body = element
        self.last, self.previous = element, 0
        self.wide = type_byte in WIDE
        self.delta_of_delta = type_byte in DELTA_OF_DELTA
        if self.wide:
            self.encoded = encode_wide(type_byte, body)
            return
        value = encode_integer(type_byte, body)
        if self.delta_of_delta:
            self.base, self.encoded = value & MASK64, 0
        else:
            self.encoded = value & MASK64

    def load_control(self, data: bytes, pos: int, end: int) -> tuple[list[Element | None], int]:
        """Decode the control at ``pos``: its values and the position after it."""
        control = data[pos]
        if is_literal(control):
            if pos + 1 >= end or data[pos + 1] != 0:
                raise BSONColumnError("BSONColumn literal must have an empty field name")
            stop = value_end(data, control, pos + 2, end)
            element = (control, data[pos + 2:stop])
            self.load_literal(element)
            return [element], stop
        scale = SCALE_OF_NIBBLE.get(control >> 4)
        if scale is None:
            raise BSONColumnError(f"invalid control byte 0x{control:02x} in BSONColumn")
        count = (control & 0xF) + 1
        stop = pos + 1 + 8 * count
        if stop >= end:
            raise BSONColumnError("Simple-8b block would overflow the BSONColumn")
        words = list(struct.unpack_from(f"<{count}Q", data, pos + 1))
        try:
            deltas = decode_words(words, self.previous, self.wide)
        except Simple8bError as exc:
            raise BSONColumnError(f"{exc} in BSONColumn") from None
        self.previous = deltas[-1]
        return (self._wide(deltas) if self.wide else self._narrow(deltas, scale)), stop

    def _narrow(self, deltas: list[int | None], scale: int) -> list[Element | None]:
        last = self.last
        if last is None:
            return [None] * len(deltas)
        type_byte, body = last
        if type_byte == DOUBLE:
            encoded = encode_double(struct.unpack("<d", body)[0], scale)
            if encoded is None:
                raise BSONColumnError("invalid double encoding in BSONColumn")
            self.encoded = encoded & MASK64
        if deltas.count(None) == len(deltas):  # only skips (long RLE runs of them): nothing changes
            return cast("list[Element | None]", deltas)  # every item None
        make = _MAKERS.get(type_byte)
        out: list[Element | None] = []
        append = out.append
        encoded, base, delta_of_delta = self.encoded, self.base, self.delta_of_delta
        for delta in deltas:
            if delta is None:
                append(None)
                continue
            if not delta and not delta_of_delta:
                append(last)
                continue
            encoded = (encoded + ((delta >> 1) ^ -(delta & 1))) & MASK64  # zigzag_decode, inlined (hot loop)
            if delta_of_delta:
                base = (base + encoded) & MASK64
            if make is None:
                raise BSONColumnError(f"invalid delta for BSON type 0x{type_byte:02x} in BSONColumn")
            last = (type_byte, make(base if delta_of_delta else encoded, scale, last[1]))
            append(last)
        self.encoded, self.base, self.last = encoded, base, last
        return out

    def _wide(self, deltas: list[int | None]) -> list[Element | None]:
        last = self.last
        assert last is not None  # a wide stream starts with its literal
        type_byte = last[0]
        out: list[Element | None] = []
        append = out.append
        encoded = self.encoded
        for delta in deltas:
            if delta is None:
                append(None)
            elif not delta:
                append(last)
            else:
                encoded = (encoded + zigzag_decode(delta)) & MASK128
                last = (type_byte, decode_wide(type_byte, encoded, last[1]))
                append(last)
        self.encoded, self.last = encoded, last
        return out


def _double(value: int, scale: int, _previous: bytes) -> bytes:
    if scale == MEMORY:
        return value.to_bytes(8, "little")
    return struct.pack("<d", signed64(value) / SCALES[scale])


_MAKERS: dict[int, Callable[[int, int, bytes], bytes]] = {
    DOUBLE: _double,
    OID: lambda value, _scale, previous: decode_oid(value, previous),
    BOOL: lambda value, _scale, _previous: b"\x01" if value else b"\x00",
    INT32: lambda value, _scale, _previous: (value & 0xFFFFFFFF).to_bytes(4, "little"),
    DATE: lambda value, _scale, _previous: value.to_bytes(8, "little"),
    TIMESTAMP: lambda value, _scale, _previous: value.to_bytes(8, "little"),
    INT64: lambda value, _scale, _previous: value.to_bytes(8, "little"),
}


class _End(Exception):
    """The first stream of an interleaved section met the 0x00 that ends it."""


class _Interleaved:
    """One interleaved section: the reference object's shape and one stream per scalar."""

    def __init__(self, data: bytes, pos: int, end: int, budget: DecodeBudget) -> None:
        control = data[pos]
        self.data, self.end, self.budget = data, end, budget
        self.root = ARRAY if control == INTERLEAVED_ARRAY else OBJECT
        self.arrays = control != INTERLEAVED_OBJECTS
        if pos + 5 > end:
            raise BSONColumnError("truncated interleaved reference object in BSONColumn")
        stop = pos + 1 + I32.unpack_from(data, pos + 1)[0]
        if not pos + 1 < stop <= end:
            raise BSONColumnError("truncated interleaved reference object in BSONColumn")
        self.streams: list[_Stream] = []
        self.shape = self._shape(pos + 1, stop, 0)
        if not self.streams:
            raise BSONColumnError("interleaved reference object without scalar fields in BSONColumn")
        self.pos = stop
        if stop >= end or data[stop] == 0:
            raise BSONColumnError("interleaved section of a BSONColumn holds no object")

    def _shape(self, start: int, stop: int, depth: int) -> list[Any]:
        """[(name, None, stream index) | (name, sub-object type, shape)] of a reference object."""
        if depth > MAX_DEPTH:
            raise BSONColumnError("interleaved reference object nested too deeply in BSONColumn")
        self.budget.charge(_STREAM_COST)
        shape: list[Any] = []
        for type_byte, name, value_start, value_stop in elements(self.data, start, stop):
            if type_byte == OBJECT or (type_byte == ARRAY and self.arrays):
                shape.append((name, type_byte, self._shape(value_start, value_stop, depth + 1)))
            else:
                self.budget.charge(_STREAM_COST)
                stream = _Stream()
                stream.load_literal((type_byte, self.data[value_start:value_stop]))
                shape.append((name, None, len(self.streams)))
                self.streams.append(stream)
        return shape

    def decode(self, out: list[Any]) -> Element | None:
        """Append the section's values to ``out``; return the last one (the regular stream's base)."""
        last = None
        while True:
            try:
                fields = self._fields(self.shape)
            except _End:
                break
            last = (self.root, _document(fields)) if fields else None
            out.append(last)
            self.budget.rows(1)
            self.budget.charge(_MISSING_COST if last is None else _VALUE_COST + len(last[1]))
        if any(s.taken < len(s.pending) for s in self.streams):
            raise BSONColumnError("interleaved BSONColumn section ended with values left in its streams")
        return last

    def _fields(self, shape: list[Any]) -> bytes:
        parts = []
        for name, sub_type, payload in shape:
            if sub_type is None:
                value = self._next(payload)
                if value is not None:
                    parts.append(_TYPE_BYTE[value[0]] + name + b"\0" + value[1])
            else:
                inner = self._fields(payload)
                if inner or not payload:
                    parts.append(_TYPE_BYTE[sub_type] + name + b"\0" + _document(inner))
        return b"".join(parts)

    def _next(self, index: int) -> Element | None:
        stream = self.streams[index]
        if stream.taken == len(stream.pending):
            if self.pos >= self.end:
                raise BSONColumnError("interleaved BSONColumn section is not terminated")
            if self.data[self.pos] == 0:
                if index:
                    raise BSONColumnError("interleaved BSONColumn section ends inside an object")
                self.pos += 1
                raise _End
            stream.pending, self.pos = stream.load_control(self.data, self.pos, self.end)
            stream.taken = 0
            self.budget.charge_values(stream.pending)
        stream.taken += 1
        return stream.pending[stream.taken - 1]


def _document(fields: bytes) -> bytes:
    return I32.pack(len(fields) + 5) + fields + b"\0"


def decode_elements(data: bytes, *, max_values: int | None = None,
                    max_size: int = DEFAULT_MAX_SIZE, budget: DecodeBudget | None = None) -> list[Element | None]:
    """Every value of a BSONColumn binary as (BSON type, value bytes), None where it is missing."""
    budget = budget or DecodeBudget(max_values, max_size)
    data = bytes(data)
    end = len(data)
    if not end:
        raise BSONColumnError("empty BSONColumn")
    out: list[Element | None] = []
    stream = _Stream()
    pos = 0
    while True:
        if pos >= end:
            raise BSONColumnError("BSONColumn is not terminated by EOO")
        control = data[pos]
        if control == 0:
            if pos + 1 != end:
                raise BSONColumnError("BSONColumn has bytes after its EOO terminator")
            return out
        if control in (INTERLEAVED_OBJECTS, INTERLEAVED, INTERLEAVED_ARRAY):
            section = _Interleaved(data, pos, end, budget)
            stream = _Stream(section.decode(out))
            pos = section.pos
            continue
        values, pos = stream.load_control(data, pos, end)
        budget.rows(len(values))
        budget.charge_values(values)
        out.extend(values)


_KEYS = [str(i).encode() + b"\0" for i in range(1000)]


def _key(i: int) -> bytes:
    return _KEYS[i] if i < 1000 else str(i).encode() + b"\0"


def column_document(data: bytes, *, max_values: int | None = None, max_size: int = DEFAULT_MAX_SIZE,
                    budget: DecodeBudget | None = None) -> tuple[bytes, int]:
    """A column as a v1 bucket stores it: the BSON document ``{"<row>": value}`` of its present
    values, and the number of rows (present or missing)."""
    values = decode_elements(data, max_values=max_values, max_size=max_size, budget=budget)
    body = b"".join([_TYPE_BYTE[v[0]] + _key(i) + v[1] for i, v in enumerate(values) if v is not None])
    return _document(body), len(values)


def decode_bson(raw: bytes) -> dict[str, Any]:
    try:
        return decode(raw)
    except (bson.errors.InvalidBSON, ValueError, OverflowError) as exc:
        raise BSONColumnError(f"BSONColumn holds an invalid BSON value: {exc}") from None


def decode_column(data: bytes, *, max_values: int | None = None, max_size: int = DEFAULT_MAX_SIZE) -> list[Any]:
    """Every value of a BSONColumn binary in row order (decoded like every document of the server),
    ``MISSING`` at skipped positions."""
    raw, rows = column_document(data, max_values=max_values, max_size=max_size)
    out: list[Any] = [MISSING] * rows
    for key, value in decode_bson(raw).items():
        out[int(key)] = value
    return out
