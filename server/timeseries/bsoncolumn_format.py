"""The BSONColumn format's building blocks (pure): control bytes, BSON elements, value integers.

A BSONColumn (BinData subtype 7; MongoDB's bsoncolumn.h, bson/column/README.md) is a sequence of
*controls* ended by a 0x00 byte:

- a **literal** is a BSON element with an empty field name; its control byte is its type (0x01..0x13,
  MinKey 0xFF, MaxKey 0x7F);
- a **Simple-8b run** is a byte 0x8N..0xDN followed by N+1 eight-byte words (``simple8b``): the high
  nibble is the scale of doubles (8: the IEEE bits as an integer; 9..D: the value x1, x10, x100,
  x1e4, x1e8 rounded half away from zero), the words hold zigzag deltas or skips;
- 0xF0 / 0xF1 / 0xF2 start an **interleaved** section (objects; see ``bsoncolumn``).

Deltas apply to an integer per value: Int32/Int64/Date/Bool as is, Timestamp as its uint64,
ObjectId as the little-endian bytes ``c2 ts3 c1 ts2 c0 ts1 ts0`` of its timestamp and counter (the
5 process bytes come from the previous value), Double scaled as above; 128-bit for String/Code
(<= 16 bytes, no leading NUL, bytes reversed), BinData (<= 16 bytes) and Decimal128; other types
only repeat. ObjectId, Date and Timestamp store deltas of deltas.
"""

from __future__ import annotations

import math
import struct

COLUMN_SUBTYPE = 7
DOUBLE, STRING, OBJECT, ARRAY, BINDATA, OID, BOOL, DATE = 0x01, 0x02, 0x03, 0x04, 0x05, 0x07, 0x08, 0x09
CODE, INT32, TIMESTAMP, INT64, DECIMAL, MAXKEY, MINKEY = 0x0D, 0x10, 0x11, 0x12, 0x13, 0x7F, 0xFF
INTERLEAVED_OBJECTS, INTERLEAVED, INTERLEAVED_ARRAY = 0xF0, 0xF1, 0xF2  # arrays as scalars / traversed / root
WIDE = frozenset((STRING, CODE, BINDATA, DECIMAL))  # 128-bit integers
DELTA_OF_DELTA = frozenset((OID, DATE, TIMESTAMP))
SCALES = (1.0, 10.0, 100.0, 10000.0, 100000000.0)
MEMORY = 5  # the scale index of "the double's bits as an integer"
SCALE_OF_NIBBLE = {0x8: MEMORY, 0x9: 0, 0xA: 1, 0xB: 2, 0xC: 3, 0xD: 4}  # control byte >> 4 -> scale
_FIXED_SIZE = {0x01: 8, 0x06: 0, 0x07: 12, 0x08: 1, 0x09: 8, 0x0A: 0, 0x10: 4, 0x11: 8, 0x12: 8, 0x13: 16,
               MAXKEY: 0, MINKEY: 0}
I32 = struct.Struct("<i")

Element = tuple[int, bytes]  # (BSON type, value bytes); None stands for a missing value


class BSONColumnError(ValueError):
    """A malformed BSONColumn or compressed bucket. ``code`` is MongoDB's code when it has one."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code




def is_literal(control: int) -> bool:
    return control < 0x20 or control in (MAXKEY, MINKEY)


def value_end(data: bytes, type_byte: int, pos: int, end: int) -> int:
    """Where the value of a ``type_byte`` element starting at ``pos`` ends (checked against ``end``)."""
    size = _FIXED_SIZE.get(type_byte)
    if size is not None:
        stop = pos + size
    elif type_byte == 0x0B:  # regex: two cstrings
        first = data.find(b"\0", pos, end)
        stop = data.find(b"\0", first + 1, end) + 1 if first >= 0 else 0
        if stop <= 0:
            raise BSONColumnError("truncated regular expression in BSONColumn")
    elif type_byte in (0x02, 0x03, 0x04, 0x05, 0x0C, 0x0D, 0x0E, 0x0F):
        if pos + 4 > end:
            raise BSONColumnError("truncated element in BSONColumn")
        length = I32.unpack_from(data, pos)[0]
        if type_byte in (0x03, 0x04, 0x0F):
            if length < 5:
                raise BSONColumnError(f"invalid embedded document size {length} in BSONColumn")
            stop = pos + length
        elif type_byte == 0x05:
            if length < 0:
                raise BSONColumnError(f"invalid BinData length {length} in BSONColumn")
            stop = pos + 5 + length
        else:
            if length < 1:
                raise BSONColumnError(f"invalid string length {length} in BSONColumn")
            stop = pos + 4 + length + (12 if type_byte == 0x0C else 0)
    else:
        raise BSONColumnError(f"invalid BSON type 0x{type_byte:02x} in BSONColumn")
    if stop > end:
        raise BSONColumnError("truncated element in BSONColumn")
    return stop


def elements(data: bytes, start: int, stop: int) -> list[tuple[int, bytes, int, int]]:
    """(type, name, value start, value end) of each element of the document ``data[start:stop]``."""
    last = stop - 1
    if stop - start < 5 or I32.unpack_from(data, start)[0] != stop - start or data[last] != 0:
        raise BSONColumnError("invalid embedded document in BSONColumn")
    out = []
    pos = start + 4
    while pos < last:
        name_end = data.find(b"\0", pos + 1, last)
        if name_end < 0:
            raise BSONColumnError("invalid field name in BSONColumn")
        end = value_end(data, data[pos], name_end + 1, last)
        out.append((data[pos], data[pos + 1:name_end], name_end + 1, end))
        pos = end
    return out


def signed64(value: int) -> int:
    return value - (1 << 64) if value >> 63 else value


def _llround(x: float) -> int:
    """C's llround: nearest integer, halves away from zero."""
    floor = math.floor(x)
    diff = x - floor
    return floor + 1 if diff > 0.5 or (diff == 0.5 and x > 0) else floor


def encode_double(value: float, scale: int) -> int | None:
    """The scaled integer of ``value`` (as MongoDB's decoder checks it: by value, so -0.0 -> 0), or
    None when the scale does not represent it."""
    if scale == MEMORY:
        bits: int = struct.unpack("<q", struct.pack("<d", value))[0]
        return bits
    scaled = value * SCALES[scale]
    if not -(2.0 ** 53) <= scaled <= 2.0 ** 53:  # also rejects NaN
        return None
    rounded = _llround(scaled)
    return rounded if rounded / SCALES[scale] == value else None


def encode_integer(type_byte: int, body: bytes) -> int:
    """The 64-bit integer deltas of a value apply to (0 for types that only repeat; doubles are
    scaled per control by ``encode_double``)."""
    if type_byte == OID:
        return encode_oid(body)
    if type_byte == BOOL:
        return body[0]
    if type_byte in (INT32, DATE, INT64, TIMESTAMP):
        return int.from_bytes(body, "little", signed=True)
    return 0


def encode_oid(body: bytes) -> int:
    return int.from_bytes(bytes((body[11], body[3], body[10], body[2], body[9], body[1], body[0])), "little")


def decode_oid(value: int, previous: bytes) -> bytes:
    b = value.to_bytes(8, "little")
    return bytes((b[6], b[5], b[3], b[1])) + previous[4:9] + bytes((b[4], b[2], b[0]))


def encode_wide(type_byte: int, body: bytes) -> int:
    """The 128-bit integer of a String/Code/BinData/Decimal128 value (0 when it has none)."""
    if type_byte == DECIMAL:
        return int.from_bytes(body, "little")
    if type_byte == BINDATA:
        data = body[5:]
        return int.from_bytes(data, "little") if len(data) <= 16 else 0
    text = body[4:-1]
    if len(text) > 16 or text[:1] == b"\0":
        return 0
    return int.from_bytes(text[::-1], "little")


def decode_wide(type_byte: int, value: int, previous: bytes) -> bytes:
    raw = value.to_bytes(16, "little")
    if type_byte == DECIMAL:
        return raw
    if type_byte == BINDATA:
        size = I32.unpack_from(previous)[0]
        if size > 16:
            raise BSONColumnError("BinData longer than 16 bytes cannot take a delta in BSONColumn")
        return previous[:5] + raw[:size]
    text = raw.rstrip(b"\0")[::-1]
    return I32.pack(len(text) + 1) + text + b"\0"
