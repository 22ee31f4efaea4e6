"""Byte builders for hand-written BSONColumn fixtures, written from the published format description
(MongoDB's bsoncolumn.h, simple8b.cpp, bson/column/README.md) and independent of the project's
encoder and of server/timeseries/simple8b.py."""

from __future__ import annotations

import struct

EOO = b"\x00"


def lit(type_byte: int, body: bytes) -> bytes:
    """A literal: the element with an empty field name."""
    return bytes((type_byte, 0)) + body


def dbl(x: float) -> bytes:
    return lit(0x01, struct.pack("<d", x))


def i32(x: int) -> bytes:
    return lit(0x10, struct.pack("<i", x))


def i64(x: int) -> bytes:
    return lit(0x12, struct.pack("<q", x))


def date(ms: int) -> bytes:
    return lit(0x09, struct.pack("<q", ms))


def string(s: str, type_byte: int = 0x02) -> bytes:
    raw = s.encode()
    return lit(type_byte, struct.pack("<i", len(raw) + 1) + raw + b"\0")


def doc(body: bytes) -> bytes:
    return struct.pack("<i", len(body) + 5) + body + b"\0"


def field(type_byte: int, name: str, value: bytes) -> bytes:
    return bytes((type_byte,)) + name.encode() + b"\0" + value


def zz(delta: int) -> int:
    """Zigzag: 0, -1, 1, -2, 2 -> 0, 1, 2, 3, 4."""
    return 2 * delta if delta >= 0 else -2 * delta - 1


def word(selector: int, width: int, values: list, first_bit: int = 4) -> int:
    """A base-selector word; None is a skip (a slot of all ones)."""
    w = selector
    for k, v in enumerate(values):
        w |= ((1 << width) - 1 if v is None else v) << (first_bit + k * width)
    return w


def one(value: int | None) -> int:
    """Selector 14: a single 60-bit slot."""
    return word(14, 60, [value])


def rle(units: int) -> int:
    """Selector 15: units x 120 repeats of the previous value."""
    return 15 | ((units - 1) << 4)


def blocks(scale_nibble: int, *words: int) -> bytes:
    return bytes(((scale_nibble << 4) | (len(words) - 1),)) + b"".join(struct.pack("<Q", w) for w in words)


def ints(*deltas: int | None) -> bytes:
    """A 0x80 control holding zigzag deltas one per word (selector 14)."""
    return blocks(0x8, *[one(None if d is None else zz(d)) for d in deltas])
