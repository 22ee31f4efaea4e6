"""Values of column-wise buckets (pure): the BSON of a dense column built from a NumPy array, and a
column's control min/max computed exactly as the general path accumulates them (MongoDB order: NaN
lowest, numbers canonically, the first of equal values kept, e.g. 0.0 before -0.0)."""

from __future__ import annotations

import struct
from typing import Any

import bson
import numpy as np
from bson.int64 import Int64
from bson.objectid import ObjectId

from protocol.codec import CODEC_OPTIONS
from server.timeseries.buckets import ms_to_date
from server.timeseries.rawbatch import BOOL, DATE, DOUBLE, INT32, INT64, NULL, OID

_INT32 = struct.Struct("<i")

# ---------------------------------------------------------------- BSON of data columns


class _Skeleton:
    """Element headers ``<type><"i">\\0`` for positions 0..cap-1 of a column of one value width."""

    __slots__ = ("bytes", "value_at", "end_at", "cap")

    def __init__(self, kind: int, width: int, cap: int):
        parts = []
        value_at = np.empty(cap, np.int64)
        end_at = np.empty(cap, np.int64)
        pos = 0
        for i in range(cap):
            header = bytes((kind,)) + str(i).encode() + b"\x00"
            parts.append(header + b"\x00" * width)
            value_at[i] = pos + len(header)
            pos += len(header) + width
            end_at[i] = pos
        self.bytes = np.frombuffer(b"".join(parts), np.uint8)
        self.value_at = value_at
        self.end_at = end_at
        self.cap = cap


_skeletons: dict[tuple[int, int], _Skeleton] = {}


def _skeleton(kind: int, width: int, n: int) -> _Skeleton:
    cached = _skeletons.get((kind, width))
    if cached is None or cached.cap < n:
        cached = _skeletons[(kind, width)] = _Skeleton(kind, width, max(n, 1024))
    return cached


def column_bson(kind: int, values: np.ndarray) -> bytes:
    """The BSON document ``{"0": v0, "1": v1, ...}`` of a dense column of fixed-width values
    (``values`` viewed as ``kind``'s little-endian bytes)."""
    n = len(values)
    width = values.dtype.itemsize if n else 0
    if n == 0:
        return b"\x05\x00\x00\x00\x00"
    skeleton = _skeleton(kind, width, n)
    body = int(skeleton.end_at[n - 1])
    out = np.empty(body + 5, np.uint8)
    out[4:body + 4] = skeleton.bytes[:body]
    out[body + 4] = 0
    out[:4] = np.frombuffer(_INT32.pack(body + 5), np.uint8)
    if width:
        at = skeleton.value_at[:n, None] + 4 + np.arange(width)
        out[at] = np.ascontiguousarray(values).view(np.uint8).reshape(n, width)
    return out.tobytes()


def constant_values(kind: int, value: Any, n: int) -> np.ndarray:
    if kind == NULL:
        return np.zeros(n, "V0") if n else np.zeros(0, np.uint8)
    encoded = bson.encode({"": value}, codec_options=CODEC_OPTIONS)[6:-1]  # the value's own bytes
    return np.repeat(np.frombuffer(encoded, f"V{len(encoded)}"), n)


# ---------------------------------------------------------------- exact min/max of a column


def first_extreme(values: np.ndarray, kind: int) -> tuple[Any, Any]:
    """(min, max) of a non-empty column as Python values, as a bucket's control fields hold them:
    numbers canonically with NaN below everything, the first of equal values (e.g. 0.0 and -0.0)."""
    if kind == DOUBLE:
        nan = np.isnan(values)
        if nan.all():
            first = float(values[0])
            return first, first
        if nan.any():
            low = float(values[int(np.argmax(nan))])  # the first NaN is the minimum
            finite = values[~nan]
            high = finite[int(np.argmax(finite == finite.max()))]
            return low, float(high)
        low, high = values.min(), values.max()
        return float(values[int(np.argmax(values == low))]), float(values[int(np.argmax(values == high))])
    if kind == OID:
        raw = values.view(np.uint8).reshape(-1, 12)
        hi = raw[:, :8].copy().view(">u8").reshape(-1)
        lo = raw[:, 8:].copy().view(">u4").reshape(-1)
        order = np.lexsort((lo, hi))
        return ObjectId(raw[order[0]].tobytes()), ObjectId(raw[order[-1]].tobytes())
    low, high = values.min(), values.max()
    return python_value(kind, low), python_value(kind, high)


def extremes(by_kind: dict[int, list[str]], columns: dict[str, np.ndarray]) -> dict[str, tuple[Any, Any]]:
    """``first_extreme`` of every column in ``by_kind`` (BSON type -> names), with one NumPy reduction per type for
    all columns of that type (a bucket has many columns and few hundred rows: per-call overhead
    dominates)."""
    out: dict[str, tuple[Any, Any]] = {}
    for kind, names in by_kind.items():
        if kind == OID or len(names) == 1:
            for name in names:
                out[name] = first_extreme(columns[name], kind)
            continue
        stacked = np.stack([columns[name] for name in names])
        lows, highs = stacked.min(axis=1), stacked.max(axis=1)
        exact = np.ones(len(names), bool)
        if kind == DOUBLE:
            # NaN and signed zeros need the first-of-equals rule: those columns take the exact path
            exact = ~np.isnan(lows) & ~np.isnan(highs)
            zero = (lows == 0) | (highs == 0)
            if zero.any():
                exact &= ~(zero & (np.signbit(stacked) & (stacked == 0)).any(axis=1))
        lows_list, highs_list = lows.tolist(), highs.tolist()
        for i, name in enumerate(names):
            if exact[i]:
                out[name] = (python_value(kind, lows[i]) if kind != DOUBLE else lows_list[i],
                             python_value(kind, highs[i]) if kind != DOUBLE else highs_list[i])
            else:
                out[name] = first_extreme(columns[name], kind)
    return out


def python_value(kind: int, value: Any) -> Any:
    """A NumPy scalar of a column of BSON type ``kind`` as the value ``bson.decode`` would give."""
    if kind == DOUBLE:
        return float(value)
    if kind == INT32:
        return int(value)
    if kind == INT64:
        return Int64(int(value))
    if kind == DATE:
        return ms_to_date(int(value))
    if kind == BOOL:
        return bool(value)
    if kind == OID:
        return ObjectId(bytes(value))
    raise ValueError(f"no column of BSON type {kind:#x}")
