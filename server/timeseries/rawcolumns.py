"""Raw column access for columnar reads (pure): walk a stored bucket's elements without decoding them,
take its data columns as bytes, and parse a dense column (keys ``"0".."n-1"``, all doubles or all
dates) straight into a numpy array. Anything of another shape is refused (None) and the caller decodes
it the ordinary way."""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import Any

import numpy as np

from tidemark.protocol.codec import decode

DOUBLE, DATE = 0x01, 0x09

_LAYOUTS: dict[tuple[int, int], tuple[np.ndarray, np.ndarray, np.ndarray, int]] = {}


def _layout(n: int, type_byte: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(fixed byte positions, their expected values, value byte positions (n x 8), total length) of a
    BSON document ``{"0": v0, ..., "n-1": v}`` whose values are all of ``type_byte`` (8 bytes each)."""
    cached = _LAYOUTS.get((n, type_byte))
    if cached is not None:
        return cached
    template = bytearray(4)
    values = []
    for i in range(n):
        template += bytes([type_byte]) + str(i).encode() + b"\x00"
        values.append(len(template))
        template += b"\x00" * 8
    template += b"\x00"
    total = len(template)
    template[0:4] = total.to_bytes(4, "little")
    value_pos = (np.asarray(values, dtype=np.int64)[:, None] + np.arange(8)).reshape(-1)
    is_fixed = np.ones(total, dtype=bool)
    is_fixed[value_pos] = False
    fixed_pos = np.nonzero(is_fixed)[0]
    layout = (fixed_pos, np.frombuffer(bytes(template), dtype=np.uint8)[fixed_pos], value_pos, total)
    if len(_LAYOUTS) < 4096:
        _LAYOUTS[(n, type_byte)] = layout
    return layout


def parse_column(raw: bytes, n: int, type_byte: int) -> np.ndarray | None:
    """The values of a dense column of ``n`` doubles (float64) or dates (int64 ms), or None when the
    column has another shape (missing positions, other types, other keys)."""
    fixed_pos, expected, value_pos, total = _layout(n, type_byte)
    if len(raw) != total:
        return None
    buf = np.frombuffer(raw, dtype=np.uint8)
    if not np.array_equal(buf[fixed_pos], expected):
        return None
    values: np.ndarray = buf[value_pos].view("<f8" if type_byte == DOUBLE else "<i8")  # NumPy: Any
    return values


def column_length(raw: bytes) -> int | None:
    """n for a column laid out like ``_layout(n, ...)`` (derived from its size), else None."""
    size = len(raw) - 5
    n, width, block = 0, 1, 10  # keys "0".."9", then "10".."99", ...
    while size > 0:
        per = width + 10  # type byte + key + NUL + 8 value bytes
        if size <= block * per:
            return n + size // per if size % per == 0 else None
        size -= block * per
        n += block
        width += 1
        block = 9 * 10 ** (width - 1)
    return n if size == 0 else None


_FIXED_SIZES = {0x01: 8, 0x07: 12, 0x08: 1, 0x09: 8, 0x0A: 0, 0x10: 4, 0x11: 8, 0x12: 8, 0x13: 16,
                0x06: 0, 0x7F: 0, 0xFF: 0}
_INT32 = struct.Struct("<i")


def elements(raw: bytes) -> dict[str, tuple[int, int, int]] | None:
    """Top-level elements of a BSON document: name -> (element start, value start, element end),
    without decoding any value; None for a type the walker does not size (the caller decodes)."""
    out = {}
    pos, end = 4, len(raw) - 1
    while pos < end:
        kind = raw[pos]
        name_end = raw.index(b"\x00", pos + 1)
        value = name_end + 1
        size = _FIXED_SIZES.get(kind)
        if size is None:
            if kind in (0x03, 0x04):
                size = _INT32.unpack_from(raw, value)[0]
            elif kind in (0x02, 0x0D, 0x0E):
                size = 4 + _INT32.unpack_from(raw, value)[0]
            elif kind == 0x05:
                size = 5 + _INT32.unpack_from(raw, value)[0]
            else:
                return None
        out[raw[pos + 1:name_end].decode()] = (pos, value, value + size)
        pos = value + size
    return out


def elements_value(raw: bytes, spans: list[tuple[int, int, int]]) -> dict[str, Any]:
    """The elements found by ``elements`` at ``spans``, decoded as one document (in ``spans`` order)."""
    body = b"".join([raw[start:stop] for start, _value, stop in spans])
    return decode(_INT32.pack(len(body) + 5) + body + b"\x00")


def element_value(raw: bytes, span: tuple[int, int, int]) -> Any:
    """The decoded value of one element found by ``elements``."""
    return next(iter(elements_value(raw, [span]).values()))


def raw_columns(raw: bytes, names: Iterable[str]) -> dict[str, Any] | None:
    """``data`` of a stored bucket with the ``names`` columns as raw BSON ``bytes`` (non-document
    columns decoded), or None when the bucket cannot be walked."""
    top = elements(raw)
    if top is None or "data" not in top:
        return None
    start, value, stop = top["data"]
    if raw[start] != 0x03:
        return None
    data = raw[value:stop]
    columns = elements(data)
    if columns is None:
        return None
    out = {}
    for name in names:
        span = columns.get(name)
        if span is not None:
            out[name] = data[span[1]:span[2]] if data[span[0]] == 0x03 else element_value(data, span)
    return out
