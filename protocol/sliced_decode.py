"""Decoding large BSON in slices: the same values as ``codec.decode`` / ``codec.decode_all``, but no
single call into the C decoder handles more than ``SLICE_BYTES``.

Why: the C decoder holds the GIL for a whole call, so a 16 MB command document (or a 48 MB document
sequence) decoded in one call stalls every other thread — the event loop included — for 100+ ms,
even when the call runs in the thread pool. Between slices the GIL can change hands.

How: a container larger than a slice is walked element by element (type byte, key, value length);
runs of consecutive elements up to a slice are decoded together by wrapping their bytes in a small
document, and a nested container larger than a slice is walked the same way. Arrays of fixed-size
values (the usual huge ``$in`` list) are skipped through arithmetically, checking the predicted key
of each jump, so the walk stays cheap. Anything the walk does not understand raises InvalidBSON;
the decoded values are exactly those of a single ``codec.decode`` (same codec options).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any, Literal, overload

from bson.errors import InvalidBSON

from tidemark.protocol import codec

SLICE_BYTES = 256 * 1024
_INT32 = struct.Struct("<i")
# Value sizes of fixed-size BSON types: double, undefined, ObjectId, bool, date, null, int32,
# timestamp, int64, decimal128, MinKey, MaxKey.
_FIXED = {0x01: 8, 0x06: 0, 0x07: 12, 0x08: 1, 0x09: 8, 0x0A: 0, 0x10: 4, 0x11: 8, 0x12: 8, 0x13: 16,
          0xFF: 0, 0x7F: 0}

# The walk reads an immutable copy or the caller's own bytes/bytearray (never a memoryview: it
# needs ``find``).
_Buffer = bytes | bytearray


def decode(data: bytes | bytearray | memoryview) -> dict[str, Any]:
    """One BSON document, decoded in slices when it is larger than ``SLICE_BYTES``."""
    if len(data) <= SLICE_BYTES:
        return codec.decode(data)
    buf = bytes(data) if isinstance(data, memoryview) else data
    (size,) = _INT32.unpack_from(buf, 0)
    if size != len(buf) or buf[-1] != 0:
        return codec.decode(data)  # let the C decoder report the malformation
    return _container(buf, 0, size, False)


def decode_all(data: bytes | bytearray | memoryview) -> list[dict[str, Any]]:
    """Back-to-back documents, at most about a slice of them per C call (a large one in slices)."""
    view = memoryview(data)
    out: list[dict[str, Any]] = []
    pos = 0
    end = len(view)
    while pos < end:
        run = pos
        while pos < end and pos - run < SLICE_BYTES:
            if end - pos < 5:
                raise InvalidBSON("not enough data for a BSON document")
            (size,) = _INT32.unpack_from(view, pos)
            if size < 5 or pos + size > end:
                raise InvalidBSON("objsize too large")
            if size > SLICE_BYTES and pos == run:
                out.append(decode(view[pos:pos + size]))
                pos += size
                run = pos
                break
            if size > SLICE_BYTES:
                break
            pos += size
        if pos > run:
            out.extend(codec.decode_all(view[run:pos]))
    return out


def _value_size(buf: _Buffer, t: int, pos: int, end: int) -> int:
    fixed = _FIXED.get(t)
    if fixed is not None:
        return fixed
    length: int
    if t in (0x02, 0x0D, 0x0E):  # string, code, symbol
        (length,) = _INT32.unpack_from(buf, pos)
        return 4 + length
    if t in (0x03, 0x04, 0x0F):  # document, array, code with scope
        (length,) = _INT32.unpack_from(buf, pos)
        return length
    if t == 0x05:  # binary
        (length,) = _INT32.unpack_from(buf, pos)
        return 5 + length
    if t == 0x0B:  # regex: two cstrings
        first = buf.find(b"\x00", pos, end)
        second = buf.find(b"\x00", first + 1, end) if first >= 0 else -1
        if second < 0:
            raise InvalidBSON("bad regex")
        return second + 1 - pos
    if t == 0x0C:  # DBPointer
        (length,) = _INT32.unpack_from(buf, pos)
        return 4 + length + 12
    raise InvalidBSON(f"Detected unknown BSON type {t:#04x}")


def _decode_run(buf: _Buffer, start: int, stop: int) -> dict[str, Any]:
    """The elements ``buf[start:stop]`` decoded as one small document (one C call)."""
    body = bytes(buf[start:stop])
    return codec.decode(_INT32.pack(len(body) + 5) + body + b"\x00")


@overload
def _container(buf: _Buffer, start: int, size: int, is_array: Literal[False]) -> dict[str, Any]: ...
@overload
def _container(buf: _Buffer, start: int, size: int, is_array: bool) -> dict[str, Any] | list[Any]: ...
def _container(buf: _Buffer, start: int, size: int, is_array: bool) -> dict[str, Any] | list[Any]:
    end = start + size
    if size < 5 or end > len(buf) or buf[end - 1] != 0:
        raise InvalidBSON("invalid object size")
    last = end - 1
    result: dict[str, Any] | list[Any]
    add: Callable[[Any], None]
    if is_array:
        result = []
        add = result.extend
    else:
        result = {}
        add = result.update
    pos = start + 4
    run = pos
    index = 0  # array elements: the expected key of the element at ``pos``
    run_index = 0  # ... and of the element at ``run``
    unpack = _INT32.unpack_from
    while pos < last:
        t = buf[pos]
        key_end = pos + 1 + len(str(index)) if is_array else -1  # array keys are "0", "1", ...
        if key_end < 0 or key_end >= last or buf[key_end] != 0:
            key_end = buf.find(b"\x00", pos + 1, last)
            if key_end < 0:
                raise InvalidBSON("bad key")
        value_at = key_end + 1
        if t == 0x03 or t == 0x04 or t == 0x02:
            length = unpack(buf, value_at)[0] + (4 if t == 0x02 else 0)
        else:
            length = _value_size(buf, t, value_at, last)
        after = value_at + length
        if length < 0 or after > last:
            raise InvalidBSON("value overruns its document")
        if t in (0x03, 0x04) and length > SLICE_BYTES:
            if pos > run:
                _flush(add, buf, run, pos, is_array, index - run_index)
            key = bytes(buf[pos + 1:key_end]).decode("utf-8")
            value = _container(buf, value_at, length, t == 0x04)
            if isinstance(result, list):
                result.append(value)
            else:
                result[key] = value
            run = pos = after
            index += 1
            run_index = index
            continue
        if after - run > SLICE_BYTES and pos > run:
            _flush(add, buf, run, pos, is_array, index - run_index)
            run = pos
            run_index = index
        pos = after
        index += 1
        if is_array and t in _FIXED:
            pos, index = _skip_fixed(buf, pos, last, t, _FIXED[t], index, run)
    if pos != last:
        raise InvalidBSON("element overruns its document")
    if last > run:
        _flush(add, buf, run, last, is_array, index - run_index)
    return result


def _flush(add: Callable[[Any], None], buf: _Buffer, start: int, stop: int, is_array: bool,
           count: int) -> None:
    decoded = _decode_run(buf, start, stop)
    if is_array and len(decoded) != count:  # a jump of _skip_fixed landed on look-alike bytes
        raise InvalidBSON("array elements do not line up")
    add(decoded.values() if is_array else decoded)


def _skip_fixed(buf: _Buffer, pos: int, last: int, t: int, width: int, index: int, run: int) -> tuple[int, int]:
    """Jump over array elements of type ``t`` with keys ``index, index+1, ...`` (the usual layout),
    up to the end of the current slice, verifying the predicted element at each jump; returns where
    the element-by-element walk resumes."""
    tag = bytes((t,))
    while True:
        step = 1
        # grow the jump while the predicted element fits in the slice and the array
        target_pos, target_index = pos, index
        while True:
            span = _elements_span(index, step, width)
            if pos + span >= last or (pos + span) - run > SLICE_BYTES:
                break
            candidate = pos + span
            key = str(index + step).encode()
            if buf[candidate:candidate + 1] != tag or buf[candidate + 1:candidate + 2 + len(key)] != key + b"\x00":
                break
            target_pos, target_index = candidate, index + step
            step *= 2
        if target_pos == pos:
            return pos, index
        pos, index = target_pos, target_index


def _elements_span(index: int, count: int, width: int) -> int:
    """Bytes taken by ``count`` elements of value size ``width`` with keys ``index..index+count-1``:
    each is a type byte, its decimal key, a NUL and the value."""
    total = count * (2 + width)
    lo, hi = index, index + count
    digits = 1
    bound = 10
    while lo < hi:
        top = min(hi, bound)
        if top > lo:
            total += (top - lo) * digits
            lo = top
        digits += 1
        bound *= 10
    return total
