"""BSONColumn encoding (pure): values -> a valid BinData subtype 7 binary.

Not MongoDB's BSONColumnBuilder (its binaries may differ byte for byte), but every binary written
here decodes to exactly the values given, in the format of ``bsoncolumn_format`` / ``bsoncolumn``:

- a value that cannot be a delta from the stream's last value is a literal;
- runs of values and skips are Simple-8b deltas (delta-of-delta for ObjectId/Date/Timestamp), base
  selectors and RLE; doubles take the smallest decimal scale that gives back the exact bits of every
  value of the run and of the value before it, else their bits; a delta that does not fit 60 bits
  ends the run (the value becomes a literal);
- consecutive objects (and skips between them) go in interleaved sections (0xF1: arrays are
  traversed too) while one reference object can describe them all in field order; an object with an
  empty sub-object/array anywhere, or without any scalar, is a literal.

Used to build compressed buckets for tests (``bucket_compression.compress_bucket``); the server itself
only decodes.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import Any, cast

import bson

from tidemark.protocol.codec import CODEC_OPTIONS
from tidemark.query.values import MISSING  # a skipped position of a column is a missing field
from tidemark.timeseries.bsoncolumn_format import (
    ARRAY,
    BINDATA,
    BOOL,
    CODE,
    DATE,
    DECIMAL,
    DELTA_OF_DELTA,
    DOUBLE,
    INT32,
    INT64,
    INTERLEAVED,
    MEMORY,
    OBJECT,
    OID,
    SCALE_OF_NIBBLE,
    SCALES,
    STRING,
    TIMESTAMP,
    WIDE,
    Element,
    elements,
    encode_double,
    encode_integer,
    encode_wide,
)
from tidemark.timeseries.simple8b import (
    MASK64,
    MASK128,
    MAX_VALUE,
    encode_words,
    values_in_word,
    zigzag_encode,
)

_SCALE_NIBBLE = {scale: nibble for nibble, scale in SCALE_OF_NIBBLE.items()}
_INTEGERS = frozenset((BOOL, INT32, INT64, DATE, TIMESTAMP, OID))
_DOUBLE = struct.Struct("<d")


def to_element(value: Any) -> Element:
    """A Python value as (BSON type, value bytes), encoded like every document of the server."""
    raw = bson.encode({"": value}, codec_options=CODEC_OPTIONS)
    return raw[4], raw[6:-1]


def _scaled(value: float, scale: int) -> int | None:
    """``value``'s integer at ``scale`` when decoding it gives back the exact bits."""
    encoded = encode_double(value, scale)
    if encoded is None or scale == MEMORY or _DOUBLE.pack(encoded / SCALES[scale]) == _DOUBLE.pack(value):
        return encoded
    return None


class _Writer:
    """Encodes the values of one decoding stream, tracking what the decoder will remember."""

    def __init__(self, last: Element | None = None) -> None:
        self.last = last  # the last present value (what a zero delta repeats)
        self.delta = 0  # the last delta, for delta-of-delta types
        self.previous: int | None = 0  # what the decoder's RLE would repeat before the next word
        self.controls: list[tuple[bytes, int]] = []  # (bytes, how many values they decode to)

    def write(self, values: list[Element | None]) -> None:
        i = 0
        while i < len(values):
            v = values[i]
            if v is not None and not self._continues(v):
                self._literal(v)
                i += 1
                continue
            j = i
            while j < len(values) and ((w := values[j]) is None or self._continues(w)):
                j += 1
            i += self._run(values[i:j])

    def _literal(self, element: Element) -> None:
        self.controls.append((bytes((element[0], 0)) + element[1], 1))
        self.last, self.delta, self.previous = element, 0, 0

    def _continues(self, element: Element) -> bool:
        """Whether ``element`` may follow the last value as a delta."""
        last = self.last
        if last is None or element[0] != last[0]:
            return False
        if element == last or element[0] in (DOUBLE, BOOL, INT32, INT64, DATE, TIMESTAMP, DECIMAL):
            return True
        if element[0] == OID:
            return element[1][4:9] == last[1][4:9]  # the process bytes come from the last value
        if element[0] == BINDATA:  # same length and subtype, at most 16 bytes
            return element[1][:5] == last[1][:5] and len(element[1]) <= 21
        if element[0] in (STRING, CODE):
            text = element[1][4:-1]
            return len(text) <= 16 and text[:1] != b"\0"
        return False

    def _run(self, values: list[Element | None]) -> int:
        """Write a prefix of ``values`` (skips, or values that continue the stream) as Simple-8b
        controls and return its length; a first value whose delta is too large becomes a literal."""
        last, scale = self.last, MEMORY
        if last is None:  # skips before any literal
            deltas: list[int | None] = [None] * len(values)
        elif last[0] == DOUBLE:
            deltas, scale = self._double_deltas(values)
        elif last[0] in WIDE:
            deltas = self._wide_deltas(values)
        elif last[0] in _INTEGERS:
            deltas = self._integer_deltas(values)
        else:  # types that only repeat
            deltas = [None if v is None else 0 for v in values]
        if not deltas:
            self._literal(cast(Element, values[0]))  # a first value that does not continue
            return 1
        self.last = next((v for v in reversed(values[:len(deltas)]) if v is not None), last)
        words = encode_words(deltas, self.previous)
        self.previous = deltas[-1]
        for start in range(0, len(words), 16):
            chunk = words[start:start + 16]
            control = bytes(((_SCALE_NIBBLE[scale] << 4) | (len(chunk) - 1),))
            self.controls.append((control + struct.pack(f"<{len(chunk)}Q", *chunk),
                                  sum(values_in_word(w) for w in chunk)))
        return len(deltas)

    def _double_deltas(self, values: list[Element | None]) -> tuple[list[int | None], int]:
        last = cast(Element, self.last)  # _run's caller checked
        doubles = [_DOUBLE.unpack(last[1])[0]] + [_DOUBLE.unpack(v[1])[0] for v in values if v is not None]
        scale = next((s for s in range(MEMORY) if all(_scaled(d, s) is not None for d in doubles)), MEMORY)
        previous = cast(int, _scaled(doubles[0], scale))  # the scale represents every value
        deltas: list[int | None] = []
        for v in values:
            if v is None:
                deltas.append(None)
                continue
            current = cast(int, _scaled(_DOUBLE.unpack(v[1])[0], scale))
            delta = zigzag_encode((current - previous) & MASK64)
            if delta > MAX_VALUE:
                break
            deltas.append(delta)
            previous = current
        return deltas, scale

    def _integer_deltas(self, values: list[Element | None]) -> list[int | None]:
        last = cast(Element, self.last)  # _run's caller checked
        delta_of_delta = last[0] in DELTA_OF_DELTA
        previous, previous_delta = encode_integer(*last), self.delta
        deltas: list[int | None] = []
        for v in values:
            if v is None:
                deltas.append(None)
                continue
            current = encode_integer(*v)
            delta = (current - previous) & MASK64
            encoded = zigzag_encode((delta - previous_delta) & MASK64 if delta_of_delta else delta)
            if encoded > MAX_VALUE:
                break
            deltas.append(encoded)
            previous, previous_delta = current, delta
        if delta_of_delta:
            self.delta = previous_delta
        return deltas

    def _wide_deltas(self, values: list[Element | None]) -> list[int | None]:
        last = cast(Element, self.last)  # _run's caller checked
        type_byte = last[0]
        previous = encode_wide(type_byte, last[1])
        deltas: list[int | None] = []
        for v in values:
            if v is None or v == last:
                deltas.append(None if v is None else 0)
                continue
            current = encode_wide(type_byte, v[1])
            delta = zigzag_encode((current - previous) & MASK128, 128)
            if delta > MAX_VALUE or not delta:  # a zero delta would repeat the last value
                break
            deltas.append(delta)
            last, previous = v, current
        return deltas


# -- interleaved sections -------------------------------------------------------------------------
# A shape is a list of [name, None, element] (a scalar) or [name, OBJECT | ARRAY, shape].

def _shape(body: bytes) -> list[Any] | None:
    """The shape of an object/array value, None when it (or a part of it) is empty."""
    shape = []
    for t, name, start, stop in elements(body, 0, len(body)):
        if t in (OBJECT, ARRAY):
            child = _shape(body[start:stop])
            if child is None:
                return None
            shape.append([name, t, child])
        else:
            shape.append([name, None, (t, body[start:stop])])
    return shape or None


def _merge(reference: list[Any], shape: list[Any]) -> list[Any] | None:
    """A reference holding both shapes with the field order of each (fields new to the reference go
    before the next field both have, or last), or None."""
    merged = [list(entry) for entry in reference]
    names = [entry[0] for entry in merged]
    position, new = 0, []
    for name, kind, payload in shape:
        if name not in names:
            new.append([name, kind, payload])
            continue
        j = names.index(name)
        if j < position or merged[j][1] != kind:
            return None
        if kind is not None:
            merged[j][2] = _merge(merged[j][2], payload)
            if merged[j][2] is None:
                return None
        merged[j:j] = new
        names[j:j] = [entry[0] for entry in new]
        position, new = j + len(new) + 1, []
    return merged + new


def _leaves(shape: list[Any], path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], Element]]:
    out: list[tuple[tuple[Any, ...], Element]] = []
    for name, kind, payload in shape:
        out.extend(_leaves(payload, path + (name,)) if kind is not None else [(path + (name,), payload)])
    return out


def _document(shape: list[Any]) -> bytes:
    body = b"".join(bytes((kind or payload[0],)) + name + b"\0" + (_document(payload) if kind else payload[1])
                    for name, kind, payload in shape)
    return struct.pack("<i", len(body) + 5) + body + b"\0"


def _section(values: list[Element | None], start: int, reference: list[Any]) -> tuple[bytes, int]:
    """The interleaved section of the objects from ``start`` on; its bytes and its end."""
    shapes: list[list[Any] | None] = [reference]
    end = start + 1
    while end < len(values):
        v = values[end]
        if v is not None:
            shape = _shape(v[1]) if v[0] == OBJECT else None
            merged = _merge(reference, shape) if shape is not None else None
            if merged is None:
                break
            reference = merged
        shapes.append(None if v is None else shape)
        end += 1
    rows = [{} if s is None else dict(_leaves(s)) for s in shapes]
    streams = []
    for path, first in _leaves(reference):
        writer = _Writer(first)
        writer.write([row.get(path) for row in rows])
        streams.append(writer.controls)
    out = [bytes((INTERLEAVED,)), _document(reference)]
    left = [0] * len(streams)  # values left in each stream's current control: the decoder's order
    for _ in shapes:
        for i, controls in enumerate(streams):
            if not left[i]:
                control, left[i] = controls.pop(0)
                out.append(control)
            left[i] -= 1
    out.append(b"\0")
    return b"".join(out), end


def encode_column(values: Iterable[Any], *, interleave: bool = True) -> bytes:
    """A BSONColumn binary holding ``values`` (Python values, ``MISSING`` for skipped rows)."""
    items = [None if v is MISSING else to_element(v) for v in values]
    out: list[bytes] = []
    writer, pending = _Writer(), []
    i = 0
    while i < len(items):
        item = items[i]
        reference = _shape(item[1]) if interleave and item is not None and item[0] == OBJECT else None
        if reference is None:
            pending.append(item)
            i += 1
            continue
        writer.write(pending)
        out.extend(control for control, _ in writer.controls)
        section, i = _section(items, i, reference)
        out.append(section)
        writer, pending = _Writer(items[i - 1]), []  # the decoder resumes from the section's last value
    writer.write(pending)
    out.extend(control for control, _ in writer.controls)
    out.append(b"\0")
    return b"".join(out)
