"""Column-at-a-time parse of an insert's raw measurement documents (the ingest fast path; pure).

Measurements sent by one client in one insert nearly always share one *layout*: the same field names
in the same order, each field of the same BSON type, strings with the same content (``measurement:
"cpu"``), only the numbers, dates and the meta value differing. ``parse`` recognises that case from
the bytes alone and returns the batch as columns (NumPy arrays), without building a dict per
measurement; any other batch returns None and takes the general path (decode to dicts).

Recognition is exact, never heuristic. The first document is walked element by element; its layout
is accepted when every element other than the meta field is a double, date, int32, int64, bool,
ObjectId, null or string (strings are part of the layout, content included), the time field is a
date and no name repeats. Every other document must then have byte-for-byte the same *skeleton*
(type bytes, names, string contents, NUL terminators) at the same offsets relative to its start
(elements before the meta field) or its end (elements after it), a meta value of the same BSON
type, and a length equal to the layout's fixed part plus its meta value's length. Bool bytes must be
0 or 1. Meta values are validated when their BSON is decoded (once per distinct value, by the
caller). So a batch is only ever accepted when ``bson.decode`` of each document would succeed and
give exactly the measurements the columns describe.
"""

from __future__ import annotations

import functools
import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

DOUBLE, STRING, OBJECT, ARRAY, BINARY, OID, BOOL, DATE, NULL, INT32, INT64 = (
    0x01, 0x02, 0x03, 0x04, 0x05, 0x07, 0x08, 0x09, 0x0A, 0x10, 0x12)
VALUE_WIDTH = {DOUBLE: 8, OID: 12, BOOL: 1, DATE: 8, NULL: 0, INT32: 4, INT64: 8}
VALUE_DTYPE = {DOUBLE: np.dtype("<f8"), OID: np.dtype("V12"), BOOL: np.dtype("?"), DATE: np.dtype("<i8"),
               INT32: np.dtype("<i4"), INT64: np.dtype("<i8")}
_INT32 = struct.Struct("<i")


@dataclass(frozen=True, slots=True)
class Column:
    """A field whose value varies per measurement: ``kind`` is its BSON type byte; its bytes sit at
    ``offset`` from the start of the prefix (``region`` 0) or of the suffix (``region`` 1)."""

    name: str
    kind: int
    region: int
    offset: int


@dataclass(frozen=True, slots=True, eq=False)
class Layout:
    """What every document of an accepted batch looks like (see the module docstring).

    ``fields``: every field name in document order, the meta field included; ``kinds`` their type
    bytes; ``constants``: fields whose value is part of the layout (strings, null) -> value;
    ``columns``: the others. A document is ``prefix | meta value | suffix``; with no meta field in
    the documents it is all prefix."""

    time_field: str
    meta_field: str | None
    fields: tuple[str, ...]
    kinds: tuple[int, ...]
    constants: dict[str, Any]
    columns: tuple[Column, ...]
    meta_kind: int | None  # BSON type of the meta value, None when the documents have no meta field
    prefix_len: int  # bytes before the meta value (the whole document without a meta field)
    suffix_len: int  # bytes after the meta value
    meta_len: int | None  # fixed meta value length, or None when it is read from the value itself
    meta_len_extra: int  # meta value length = int32 at its start + this (strings 4, binary 5, docs 0)
    window: int  # bytes gathered per document: the prefix (+ the meta length word), rounded up to 8
    prefix_mask: np.ndarray  # uint64 words, 0xFF bytes where the window byte belongs to the skeleton
    prefix_skeleton: np.ndarray  # the first document's window bytes under that mask (uint64 words)
    suffix_mask: np.ndarray  # uint8 masks for the suffix
    suffix_skeleton: np.ndarray
    bools: tuple[Column, ...]
    value_dtype: np.dtype  # structured view of a prefix row: one named field per prefix column
    key: tuple[Any, ...]  # equal for equal layouts (hashable)


@dataclass(slots=True)
class RawBatch:
    """One accepted insert batch, column-wise. ``columns[name]`` is an array of ``n`` values
    (dates as int64 milliseconds, ObjectIds as 12-byte voids); ``metas``: the distinct raw BSON meta
    values in first-seen order and ``meta_index[i]`` the index of document ``i``'s own (both None
    without a meta field)."""

    layout: Layout
    n: int
    times: np.ndarray
    columns: dict[str, np.ndarray]
    metas: list[bytes] | None
    meta_index: np.ndarray | None
    buffer: bytes  # the documents themselves, for measurements that end up on the general path
    offsets: np.ndarray  # int64


class _Reject(Exception):
    pass


def _cstring(buf: bytes, pos: int, end: int) -> tuple[str, int]:
    stop = buf.find(b"\x00", pos, end)
    if stop < 0:
        raise _Reject
    try:
        return buf[pos:stop].decode("utf-8"), stop + 1
    except UnicodeDecodeError:
        raise _Reject from None


def _string_value(buf: bytes, pos: int, end: int) -> tuple[str, int]:
    """A BSON string value at ``pos``: (text, bytes it occupies)."""
    if end - pos < 5:
        raise _Reject
    (length,) = _INT32.unpack_from(buf, pos)
    if length < 1 or pos + 4 + length > end or buf[pos + 3 + length] != 0:
        raise _Reject
    try:
        text = buf[pos + 4:pos + 3 + length].decode("utf-8")
    except UnicodeDecodeError:
        raise _Reject from None
    return text, 4 + length


def _meta_size(buf: bytes, kind: int, pos: int, end: int) -> tuple[int | None, int, int]:
    """(fixed length or None, extra, this document's length) of a meta value of type ``kind``."""
    if kind in VALUE_WIDTH:
        width = VALUE_WIDTH[kind]
        return width, 0, width
    extra = {STRING: 4, OBJECT: 0, ARRAY: 0, BINARY: 5}.get(kind)
    if extra is None or end - pos < 4:
        raise _Reject
    size = _INT32.unpack_from(buf, pos)[0] + extra
    if size < 5 or pos + size > end:
        raise _Reject
    return None, extra, size


def _layout(buf: bytes, start: int, time_field: str, meta_field: str | None) -> Layout:
    (length,) = _INT32.unpack_from(buf, start)
    end = start + length - 1  # the document's terminating NUL
    pos = start + 4
    fields: list[str] = []
    kinds: list[int] = []
    constants: dict[str, Any] = {}
    placed: list[tuple[str, int, int]] = []  # (name, kind, value offset from the document start)
    skeleton_ranges: list[tuple[int, int]] = []  # (from, to) offsets relative to the start: skeleton bytes
    meta_at = meta_kind = meta_len = None
    meta_extra = 0
    meta_size = 0
    while pos < end:
        kind = buf[pos]
        name, value_pos = _cstring(buf, pos + 1, end)
        if name in constants or name in fields:
            raise _Reject
        if name == meta_field:
            meta_len, meta_extra, meta_size = _meta_size(buf, kind, value_pos, end)
            meta_at, meta_kind = value_pos - start, kind
            skeleton_ranges.append((pos - start, value_pos - start))
            pos = value_pos + meta_size
        elif kind in VALUE_WIDTH:
            width = VALUE_WIDTH[kind]
            if value_pos + width > end:
                raise _Reject
            if kind == NULL:
                constants[name] = None
            else:
                placed.append((name, kind, value_pos - start))
            skeleton_ranges.append((pos - start, value_pos - start))
            pos = value_pos + width
        elif kind == STRING:
            constants[name], size = _string_value(buf, value_pos, end)
            skeleton_ranges.append((pos - start, value_pos + size - start))
            pos = value_pos + size
        else:
            raise _Reject
        fields.append(name)
        kinds.append(kind)
    if pos != end or time_field not in fields or kinds[fields.index(time_field)] != DATE:
        raise _Reject
    skeleton_ranges.append((length - 1, length))
    if meta_at is None:
        prefix_len, suffix_len = length, 0
    else:
        prefix_len, suffix_len = meta_at, length - meta_at - meta_size
    window = prefix_len + (4 if meta_at is not None and meta_len is None else 0)
    window += -window % 8  # compare whole 64-bit words
    first = np.zeros(max(length, window), np.uint8)
    first[:length] = np.frombuffer(buf, np.uint8, length, start)
    prefix_mask = np.zeros(window, np.uint8)
    suffix_mask = np.zeros(suffix_len, np.uint8)
    for lo, hi in skeleton_ranges:
        if hi <= prefix_len:
            prefix_mask[lo:hi] = 0xFF
        else:
            suffix_mask[lo - (length - suffix_len):hi - (length - suffix_len)] = 0xFF
    columns = []
    for name, kind, offset in placed:
        if offset < prefix_len:
            columns.append(Column(name, kind, 0, offset))
        else:
            columns.append(Column(name, kind, 1, offset - (length - suffix_len)))
    prefix_columns = [c for c in columns if c.region == 0]
    value_dtype = np.dtype({"names": [c.name for c in prefix_columns],
                            "formats": [VALUE_DTYPE[c.kind] for c in prefix_columns],
                            "offsets": [c.offset for c in prefix_columns], "itemsize": window})
    prefix_skeleton = (first[:window] & prefix_mask).view("<u8")
    suffix_skeleton = first[length - suffix_len:length] & suffix_mask
    key = (time_field, meta_field, tuple(fields), tuple(kinds), tuple(constants.items()), meta_kind, prefix_len,
           suffix_len, meta_len, prefix_skeleton.tobytes(), suffix_skeleton.tobytes())
    return Layout(
        time_field=time_field, meta_field=meta_field, key=key,
        fields=tuple(fields), kinds=tuple(kinds), constants=constants, columns=tuple(columns),
        meta_kind=meta_kind, prefix_len=prefix_len, suffix_len=suffix_len, meta_len=meta_len,
        meta_len_extra=meta_extra, window=window,
        prefix_mask=prefix_mask.view("<u8"), prefix_skeleton=prefix_skeleton,
        suffix_mask=suffix_mask, suffix_skeleton=suffix_skeleton,
        bools=tuple(c for c in columns if c.kind == BOOL), value_dtype=value_dtype)


def layout_of(buf: bytes, start: int, time_field: str, meta_field: str | None) -> Layout | None:
    """The layout of the document at ``start``, or None if it has none."""
    try:
        return _layout(buf, start, time_field, meta_field)
    except (_Reject, struct.error, IndexError):
        return None


def _rows(data: np.ndarray, starts: np.ndarray, width: int) -> np.ndarray:
    """``width`` bytes from each offset in ``starts`` (ascending) as an (n, width) array (one row copy
    each); zeros past the end of ``data``."""
    n = len(starts)
    if width == 0 or n == 0:
        return np.zeros((n, width), np.uint8)
    inside = n if int(starts[-1]) + width <= data.size else int(np.searchsorted(starts, data.size - width, "right"))
    if inside == n:
        # every window one ``width``-byte item (overlapping, stride 1): a 1-D fancy index copies each
        # item whole, ~2x cheaper than a row index into a 2-D (n, width) strided view
        windows = np.ndarray((data.size - width + 1,), np.dtype((np.void, width)), data, strides=(1,))
        rows: np.ndarray = windows[starts].view(np.uint8).reshape(n, width)
        return rows
    rows = np.empty((n, width), np.uint8)
    if inside:
        rows[:inside] = _rows(data, starts[:inside], width)
    base = int(starts[inside])  # the windows that run past the end: from a padded copy of the tail
    tail = np.zeros(int(starts[-1]) + width - base, np.uint8)
    tail[:data.size - base] = data[base:]
    rows[inside:] = _rows(tail, starts[inside:] - base, width)
    return rows


def parse(buffer: bytes, offsets: np.ndarray, time_field: str, meta_field: str | None,
          known: Layout | None = None) -> RawBatch | None:
    """The documents ``buffer[offsets[i]:...]`` (int64 offsets, framing already checked) as columns, or None when they
    do not all share one layout. ``known``: a layout to try first (the caller's last one), which
    spares walking the first document."""
    if not len(offsets):
        return None
    if known is not None and known.time_field == time_field and known.meta_field == meta_field:
        batch = _parse(buffer, offsets, known)
        if batch is not None:
            return batch
    layout = layout_of(buffer, int(offsets[0]), time_field, meta_field)
    if layout is None or (known is not None and layout.key == known.key):
        return None
    return _parse(buffer, offsets, layout)


PARSE_CHUNK = 8192  # documents per NumPy pass: a worker thread parsing a large insert lets the loop run


def _parse(buffer: bytes, offsets: np.ndarray, layout: Layout) -> RawBatch | None:
    """``_parse_chunk`` a chunk at a time (each NumPy call holds the GIL: keep them short)."""
    if len(offsets) <= PARSE_CHUNK:
        return _parse_chunk(buffer, offsets, layout)
    parts = []
    for start in range(0, len(offsets), PARSE_CHUNK):
        part = _parse_chunk(buffer, offsets[start:start + PARSE_CHUNK], layout)
        if part is None:
            return None
        parts.append(part)
    columns = {name: np.concatenate([part.columns[name] for part in parts]) for name in parts[0].columns}
    metas = meta_index = None
    if layout.meta_kind is not None:  # every part has its distinct metas: renumbered in first-seen order
        index: dict[bytes, int] = {}
        add = index.setdefault
        codes = []
        for part in parts:
            assert part.metas is not None and part.meta_index is not None
            codes.append(np.array([add(meta, len(index)) for meta in part.metas], np.int64)[part.meta_index])
        metas, meta_index = list(index), np.concatenate(codes)
    return RawBatch(layout, len(offsets), columns[layout.time_field], columns, metas, meta_index, buffer, offsets)


def _parse_chunk(buffer: bytes, offsets: np.ndarray, layout: Layout) -> RawBatch | None:
    data = np.frombuffer(buffer, np.uint8)
    starts = np.asarray(offsets, np.int64)
    prefix = _rows(data, starts, layout.window)
    lengths = prefix[:, :4].copy().view("<i4").reshape(-1).astype(np.int64)
    fixed = layout.prefix_len + layout.suffix_len
    if layout.meta_kind is None:
        meta_lens = None
        if not (lengths == fixed).all():
            return None
    else:
        if layout.meta_len is not None:
            meta_lens = np.full(len(starts), layout.meta_len, np.int64)
        else:
            word = prefix[:, layout.prefix_len:layout.prefix_len + 4].copy().view("<i4").reshape(-1)
            meta_lens = word.astype(np.int64) + layout.meta_len_extra
        if (meta_lens < 0).any() or not (lengths == fixed + meta_lens).all():
            return None
    if ((prefix.view("<u8") & layout.prefix_mask) != layout.prefix_skeleton).any():
        return None
    suffix = None
    if layout.suffix_len:
        suffix = _rows(data, starts + lengths - layout.suffix_len, layout.suffix_len)
        if ((suffix & layout.suffix_mask) != layout.suffix_skeleton).any():
            return None
    values = prefix.view(layout.value_dtype).reshape(-1)
    columns: dict[str, np.ndarray] = {}
    for column in layout.columns:
        if column.region == 0:
            array = np.ascontiguousarray(values[column.name])
        else:
            assert suffix is not None  # a column after the meta value implies a suffix
            width = VALUE_WIDTH[column.kind]
            raw = np.ascontiguousarray(suffix[:, column.offset:column.offset + width])
            array = raw.view(VALUE_DTYPE[column.kind]).reshape(-1)
        if column.kind == BOOL and (array.view(np.uint8) > 1).any():
            return None
        columns[column.name] = array
    metas = meta_index = None
    if meta_lens is not None:  # the documents have a meta field: its distinct values
        metas, meta_index = _distinct(buffer, data, starts + layout.prefix_len, meta_lens)
    return RawBatch(layout, len(offsets), columns[layout.time_field], columns, metas, meta_index, buffer, offsets)


DISTINCT_ROW_BYTES = 1024  # longer meta values are told apart by the bytes themselves (dict of slices)
_MULTIPLIERS = (np.random.default_rng(0x7D3A).integers(1, 2**62, DISTINCT_ROW_BYTES // 8, np.int64) * 2 + 1)
_WORD_MASKS = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [2**64 - 1], np.uint64)


@functools.lru_cache(maxsize=DISTINCT_ROW_BYTES // 8)
def _length_masks(width: int) -> np.ndarray:
    """Row ``length``: the 64-bit words of a ``width``-byte window with the bytes past ``length`` zeroed."""
    valid = np.clip(np.arange(width + 1)[:, None] - 8 * np.arange(width // 8), 0, 8)
    masks: np.ndarray = _WORD_MASKS[valid]
    return masks


def _distinct(buffer: bytes, data: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> tuple[list[bytes], np.ndarray]:
    """The distinct values ``buffer[starts[i]:starts[i] + lengths[i]]`` in first-seen order, and each
    one's index among them.

    One hash per value over its bytes as 64-bit words (zero past its end), the values grouped by hash
    with one sort, and every value compared with its group's first one: a hash shared by different
    values (never seen; the multipliers are fixed odd numbers) takes the exact dict of slices
    instead, as do values longer than ``DISTINCT_ROW_BYTES``. ~3x cheaper than a slice and a dict
    lookup per document (1,000 TSBS tags documents)."""
    width = int(lengths.max()) if len(starts) else 0
    width += -width % 8
    if 0 < width <= DISTINCT_ROW_BYTES:
        words = _rows(data, starts, width).view("<u8")
        words &= _length_masks(width)[lengths]  # zero past each value's end
        hashes = words.view(np.int64) @ _MULTIPLIERS[:width // 8]  # (wraps around: a hash modulo 2**64)
        _, first, inverse = np.unique(hashes, return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1)
        if (words[first[inverse]] == words).all():
            order = np.argsort(first)  # distinct values in first-seen order
            rank = np.empty(len(order), np.int64)
            rank[order] = np.arange(len(order))
            begins, ends = starts[first[order]].tolist(), (starts + lengths)[first[order]].tolist()
            return [buffer[a:b] for a, b in zip(begins, ends, strict=True)], rank[inverse]
    index: dict[bytes, int] = {}
    add = index.setdefault  # (its default, the next index, is computed before the call inserts)
    meta_index = np.array([add(buffer[a:b], len(index))
                           for a, b in zip(starts.tolist(), (starts + lengths).tolist(), strict=True)], np.int64)
    return list(index), meta_index
