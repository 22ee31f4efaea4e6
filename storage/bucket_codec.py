"""Lossless column-aware compression of BSON documents shaped like version-1 time-series buckets.

A v1 bucket is ``{_id, control, meta?, data: {<field>: {"0": v0, "1": v1, ...}, ...}}``: its bulk is the
``data`` columns, one small BSON document per field whose keys are the measurement indexes. General
compressors see those columns as a mix of repeated keys and 8/12-byte values; this codec stores each
column as its key list (implied when dense ``"0".."n-1"``) and its values in a form zstd squeezes well:

    date / int64          delta-of-delta, zig-zag, fixed width per column (1, 2, 4 or 8 bytes)
    int32                 delta, zig-zag, fixed width
    double, all integral  (bit-exactly: no -0.0, NaN, inf, fractions) as int64 delta, zig-zag, fixed width
    double, otherwise     XOR with the previous value, bytes transposed (8 planes)
    ObjectId              high 8 / low 4 bytes as big-endian integers, delta, zig-zag, fixed width
    string (dense keys)   a table of its distinct values + one index per row, or lengths + bytes
    anything else         the column's BSON bytes as they are (mixed types, objects, arrays, ...)

Everything outside ``data`` (``_id``, ``control``, ``meta``, and any other field) is kept as raw bytes.
Storage stays MongoDB-query-agnostic: this is a compressor of BSON bytes keyed on their shape only.

Contract: ``encode(bson) -> bytes | None`` and ``decode(encode(bson)) == bson`` byte for byte.
``encode`` verifies the round trip itself and returns None when the document is not representable
(not bucket-shaped, malformed, non-canonical keys, ...); callers then use a general compressor.
Encoded layout (before zstd): ``u8 version | varint len(prefix) | prefix | varint len(suffix) |
suffix | varint ncols | columns``; each column is ``name\\0 | u8 kind | kind-specific body``.
Version 2 added the string column kind; version-1 streams (no string columns) read the same.
"""

from __future__ import annotations

import contextlib
import functools
import struct
import threading
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
import zstandard

FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)  # 1: before KIND_STRINGS (its streams are valid version-2 streams)
# Encoding runs on the writer thread whenever a bucket is written in full (close/checkpoint): with
# column-wise ingest at ~3 us/row on the event loop, level 19 (~2 ms per 360-measurement TSBS bucket,
# ~5.5 us/row) was the largest cost of the whole insert path. Measured on 20 such buckets (B per
# bucket / CPU per bucket): level 3 2054 B / 37 us, level 7 + min_match 7 1956 B / 100 us, level 19 +
# min_match 7 1866 B / 1944 us. Level 7 keeps 95 % of level 19's size at 5 % of its cost; min_match 7
# keeps zstd from trading the small-integer columns' cheap literals for short matches. Decoding speed
# is the same at every level.
ZSTD_LEVEL = 7
# chain/hash logs of 16 keep the context at ~2 MB per writer thread (high levels' defaults take up to
# 80 MB) with the same output on buckets of this size.
ZSTD_PARAMS = {"window_log": 20, "chain_log": 16, "hash_log": 16, "min_match": 7}

KIND_RAW = 0  # varint length + the column's BSON document bytes
KIND_FIXED = 1  # u8 bson type | u8 value codec | varint n | keys | values
KIND_STRINGS = 2  # varint n | u8 strings codec | body: a dense column of strings (keys "0".."n-1")

# strings codecs. A string's "content" is the bytes between its int32 length and its final NUL.
STR_TABLE = 0  # varint k | k x (varint len | content) | (k > 1) row indexes as ints: few distinct values
STR_LIST = 1  # lengths as ints | contents concatenated: mostly distinct values

# value codecs for fixed-width types
VAL_INT_DOD = 0  # int64-like (date, int64): delta-of-delta
VAL_INT_DELTA = 1  # int32 / int64 delta
VAL_DOUBLE_INT = 2  # integral doubles as int64 delta
VAL_DOUBLE_XOR = 3  # doubles XOR previous, byte planes
VAL_OID = 4  # ObjectId: two big-endian integers, delta each
VAL_BYTES = 5  # raw fixed-width bytes, byte planes (bool, timestamp, ...)

KEYS_DENSE = 0  # "0".."n-1"
KEYS_LIST = 1  # ascending canonical integers, delta-encoded

_INT32 = struct.Struct("<i")
WIDTH = {0x01: 8, 0x07: 12, 0x08: 1, 0x09: 8, 0x10: 4, 0x11: 8, 0x12: 8}
_local = threading.local()


def make_compressor(zdict: zstandard.ZstdCompressionDict | None = None) -> zstandard.ZstdCompressor:
    """A compressor of bucket streams, with a dictionary (whose id the frame header records, so a value
    names the dictionary it needs; storage/dictionaries.py trains one per collection) or without."""
    params = zstandard.ZstdCompressionParameters.from_level(ZSTD_LEVEL, **ZSTD_PARAMS, write_dict_id=1)
    if zdict is None:
        return zstandard.ZstdCompressor(compression_params=params)
    zdict.precompute_compress(compression_params=params)  # else every frame re-loads the dictionary
    return zstandard.ZstdCompressor(dict_data=zdict, compression_params=params)


def _compressor() -> zstandard.ZstdCompressor:
    zc = getattr(_local, "override", None) or getattr(_local, "zc", None)
    if zc is None:
        zc = _local.zc = make_compressor()
    return zc


@contextlib.contextmanager
def compressing_with(zc: zstandard.ZstdCompressor | None) -> Iterator[None]:
    """Within the block, ``encode`` and ``encode_columns`` on this thread compress with ``zc`` (None:
    the default). ValueCodec.pack picks the collection's dictionary this way around the server's
    ``bucket_form`` callback, which calls ``encode_columns`` and knows nothing of dictionaries."""
    previous = getattr(_local, "override", None)
    _local.override = zc
    try:
        yield
    finally:
        _local.override = previous


def _decompressor() -> zstandard.ZstdDecompressor:
    zd = getattr(_local, "zd", None)
    if zd is None:
        zd = _local.zd = zstandard.ZstdDecompressor()
    return zd


# Measured on the TSBS day (2,400 buckets of 360 rows; dictionary from the first 64 buckets, applied
# to 1,000 later ones): no dictionary 1,858 B per bucket; 16 KiB 1,511 B (+15 us to compress, the
# same to decompress); 64 KiB 1,475 B (+56 us); 64, 128 or 300 samples train the same (50-150 ms).
DICT_SIZE = 16 * 1024


def train_dictionary(streams: list[bytes], dict_id: int) -> bytes:
    """A zstd dictionary of id ``dict_id`` for bucket streams like ``streams`` (``stream`` of a
    collection's values); raises zstandard.ZstdError when they are too few or too alike to train on."""
    buffers: list[bytes | bytearray | memoryview] = list(streams)  # the list type zstandard takes
    return zstandard.train_dictionary(DICT_SIZE, buffers, dict_id=dict_id).as_bytes()


def stream(packed: bytes) -> bytes:
    """The column stream of a value compressed without a dictionary (what dictionaries train on)."""
    return _decompressor().decompress(bytes(packed))


def frame_dictionary(packed: bytes) -> int:
    """The id of the dictionary ``packed`` was compressed with (0: none)."""
    return int(zstandard.get_frame_parameters(packed).dict_id)


# --- varints and zig-zag fixed-width integer arrays ----------------------------------------------
def _put_varint(out: bytearray, n: int) -> None:
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def _get_varint(buf: bytes, pos: int) -> tuple[int, int]:
    n = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        if b < 0x80:
            return n, pos
        shift += 7


def _put_ints(out: bytearray, values: np.ndarray) -> None:
    """int64 array -> u8 width + zig-zag values in that width (little-endian)."""
    z = ((values << 1) ^ (values >> 63)).view(np.uint64)
    top = int(z.max()) if len(z) else 0
    width = 1 if top < 1 << 8 else 2 if top < 1 << 16 else 4 if top < 1 << 32 else 8
    out.append(width)
    out += z.astype(f"<u{width}").tobytes()


_UNSIGNED: dict[int, np.dtype[np.unsignedinteger[Any]]] = {
    1: np.dtype("<u1"), 2: np.dtype("<u2"), 4: np.dtype("<u4"), 8: np.dtype("<u8")}


def _get_ints(buf: bytes, pos: int, n: int) -> tuple[np.ndarray, int]:
    width = buf[pos]
    pos += 1
    end = pos + n * width
    if width < 8:  # zig-zag values below 2**32: signed arithmetic is exact and cheaper
        z = np.frombuffer(buf, _UNSIGNED[width], n, pos).astype(np.int64)
        return (z >> 1) ^ -(z & 1), end
    z = np.frombuffer(buf, _UNSIGNED[8], n, pos)
    return ((z >> np.uint64(1)) ^ (np.uint64(0) - (z & np.uint64(1)))).view(np.int64), end


def _delta(v: np.ndarray) -> np.ndarray:
    d = np.empty_like(v)
    if len(v):
        d[0] = v[0]
        np.subtract(v[1:], v[:-1], out=d[1:])
    return d


def _planes(raw: np.ndarray, width: int) -> bytes:
    return raw.reshape(-1, width).T.tobytes()


def _unplanes(buf: bytes, pos: int, n: int, width: int) -> np.ndarray:
    return np.frombuffer(buf, np.uint8, n * width, pos).reshape(width, n).T


# --- column skeletons: the element headers (type + key) with holes for the values --------------
_TEMPLATE_MIN = 1024
_TEMPLATE_CACHED_MAX = 65_536  # longer columns (direct inserts of huge buckets) build theirs each time
_TEMPLATE_CACHED_BYTES = 1_500_000  # a fixed-width type's longest: 65,536 ObjectIds; long strings' are not kept
# (bson type, value width) -> (cap, template): one per fixed-width type, plus one per string value
# width met (constant or equal-length string columns), at most _TEMPLATES_MAX in all (<= 24 MB)
_TEMPLATES_MAX = 16
_templates: dict[tuple[int, int], tuple[int, np.ndarray]] = {}


def _template(btype: int, width: int, n: int) -> np.ndarray:
    """The elements ``<type><"i">\\0<zeroed value>`` of positions 0..cap-1 (cap >= n) as bytes: a dense
    column of ``n`` values is its first ``_dense_length(width, n) - 5`` bytes. Bounded: at most
    ``_TEMPLATES_MAX`` kept, each of at most ``_TEMPLATE_CACHED_MAX`` positions and
    ``_TEMPLATE_CACHED_BYTES`` bytes."""
    cached = _templates.get((btype, width))
    if cached is None or cached[0] < n:
        cap = max(n, _TEMPLATE_MIN)
        hole = bytes(width)
        t = bytes((btype,))
        body = np.frombuffer(b"".join(t + str(k).encode() + b"\0" + hole for k in range(cap)), np.uint8)
        if (cap > _TEMPLATE_CACHED_MAX or len(body) > _TEMPLATE_CACHED_BYTES
                or (cached is None and len(_templates) >= _TEMPLATES_MAX)):
            return body
        cached = _templates[(btype, width)] = (cap, body)
    return cached[1]


@functools.lru_cache(maxsize=4096)
def _dense_runs(width: int, n: int) -> tuple[tuple[int, int, int, int], ...]:
    """Runs of dense elements whose keys have the same number of digits, so equal strides:
    (first index, end index, byte offset in the column document, element size)."""
    runs, pos, lo, digits = [], 4, 0, 1
    while lo < n:
        hi = min(n, 10 ** digits)
        stride = 2 + digits + width
        runs.append((lo, hi, pos, stride))
        pos += (hi - lo) * stride
        lo, digits = hi, digits + 1
    return tuple(runs)


def _fill_dense(out: bytearray, view: np.ndarray, at: int, btype: int, width: int, values: np.ndarray,
                length: int) -> None:
    """Write the dense column of ``values`` (``length`` bytes, ``width`` bytes per value) at ``out[at:]``
    (``view``: ``out`` as uint8; the bytes after the last value, the column's NUL, are left as they
    are: zero)."""
    rows = np.ascontiguousarray(values).view(np.uint8).reshape(-1, width)
    n = len(rows)
    _INT32.pack_into(out, at, length)
    view[at + 4:at + length - 1] = _template(btype, width, n)[:length - 5]
    for lo, hi, start, stride in _dense_runs(width, n):
        start += at
        view[start:start + (hi - lo) * stride].reshape(hi - lo, stride)[:, stride - width:] = rows[lo:hi]


def dense_column(btype: int, values: np.ndarray) -> bytes:
    """The BSON document ``{"0": v0, "1": v1, ...}`` of a dense column of a fixed-width type: ``values``
    holds the little-endian value bytes (any contiguous-able array of ``n * WIDTH[btype]`` bytes).
    Built from the type's template with one strided copy per key length (no per-byte index)."""
    return _dense_document(btype, WIDTH[btype], values)


def _dense_document(btype: int, width: int, values: np.ndarray) -> bytes:
    length = _dense_length(width, values.nbytes // width)
    out = bytearray(length)
    _fill_dense(out, np.frombuffer(out, np.uint8), 0, btype, width, values, length)
    return bytes(out)


def _column_length(btype: int, values: np.ndarray | bytes) -> int:
    return len(values) if isinstance(values, bytes) else _dense_length(WIDTH[btype], values.nbytes // WIDTH[btype])


def columns_length(columns: list[tuple[bytes, int, np.ndarray | bytes]]) -> int:
    """Byte length of ``columns_document(columns)``."""
    return 5 + sum(2 + len(name) + _column_length(btype, values) for name, btype, values in columns)


def columns_document(columns: list[tuple[bytes, int, np.ndarray | bytes]], prefix: bytes = b"",
                     suffix: bytes = b"") -> bytes:
    """``prefix`` + the BSON document ``{<name>: <column document>, ...}`` + ``suffix``, the columns given
    as ``encode_columns`` takes them (dense values, or a column's BSON document), written into one
    buffer: a bucket's ``data`` the way decoding and a full write both build it."""
    sizes = []
    body = 0
    for name, btype, values in columns:
        size = _column_length(btype, values)
        sizes.append(size)
        body += 2 + len(name) + size
    length = body + 5
    out = bytearray(len(prefix) + length + len(suffix))
    view = np.frombuffer(out, np.uint8)
    at = len(prefix)
    out[:at] = prefix
    _INT32.pack_into(out, at, length)
    at += 4
    for (name, btype, values), size in zip(columns, sizes, strict=True):
        out[at] = 0x03
        out[at + 1:at + 1 + len(name)] = name  # the name's NUL: already zero
        at += 2 + len(name)
        if isinstance(values, bytes):
            out[at:at + size] = values
        else:
            _fill_dense(out, view, at, btype, WIDTH[btype], values, size)
        at += size
    out[at + 1:] = suffix  # out[at]: the document's NUL, zero
    return bytes(out)


def _dense_values(doc: bytes, width: int, n: int) -> np.ndarray:
    """The value bytes of a document laid out as a dense column of ``n`` elements (n x width)."""
    whole = np.frombuffer(doc, np.uint8)
    rows = np.empty((n, width), np.uint8)
    for lo, hi, start, stride in _dense_runs(width, n):
        rows[lo:hi] = whole[start:start + (hi - lo) * stride].reshape(hi - lo, stride)[:, stride - width:]
    return rows


def _skeleton(btype: int, width: int, keys: Iterable[int]) -> tuple[bytes, np.ndarray]:
    """(column document bytes with zeroed values, flat indexes of the value bytes)."""
    parts: list[bytes] = []
    starts: list[int] = []
    pos = 4
    hole = bytes(width)
    t = bytes((btype,))
    for k in keys:
        head = t + str(k).encode() + b"\0"
        parts.append(head + hole)
        pos += len(head)
        starts.append(pos)
        pos += width
    body = b"".join(parts)
    doc = struct.pack("<i", len(body) + 5) + body + b"\0"
    index = (np.asarray(starts, np.int64)[:, None] + np.arange(width)).ravel()
    return doc, index


# --- encoding -----------------------------------------------------------------------------------
def _parse_column(doc: bytes) -> tuple[int, list[int], list[int]] | None:
    """(bson type, keys, value offsets) if every element has one fixed-width type and a canonical
    ascending integer key; None otherwise."""
    end = len(doc) - 1
    pos, btype = 4, None
    keys: list[int] = []
    offsets: list[int] = []
    while pos < end:
        t = doc[pos]
        if btype is None:
            if t not in WIDTH:
                return None
            btype = t
        elif t != btype:
            return None
        z = doc.index(b"\0", pos + 1)
        key = doc[pos + 1:z]
        if not key.isdigit() or (len(key) > 1 and key[0] == 0x30):
            return None
        k = int(key)
        if keys and k <= keys[-1]:
            return None
        keys.append(k)
        offsets.append(z + 1)
        pos = z + 1 + WIDTH[t]
    if btype is None or pos != end:
        return None
    return btype, keys, offsets


def _encode_values(out: bytearray, btype: int, raw: np.ndarray, n: int) -> None:
    if btype in (0x09, 0x12):
        v = raw.view("<i8")
        out.append(VAL_INT_DOD)
        _put_ints(out, _delta(_delta(v)))
    elif btype == 0x10:
        out.append(VAL_INT_DELTA)
        _put_ints(out, _delta(raw.view("<i4").astype(np.int64)))
    elif btype == 0x01:
        f = raw.view("<f8")
        with np.errstate(invalid="ignore"):
            ints = f.astype(np.int64)
        if ints.astype("<f8").tobytes() == raw.tobytes():  # bit-exactly integral (one memcmp)
            out.append(VAL_DOUBLE_INT)
            _put_ints(out, _delta(ints))
        else:
            u = raw.view("<u8")
            x = u.copy()
            x[1:] ^= u[:-1]
            out.append(VAL_DOUBLE_XOR)
            out += _planes(x.view(np.uint8), 8)
    elif btype == 0x07:
        b = raw.reshape(n, 12)
        hi = b[:, :8].copy().view(">u8").astype(np.uint64).view(np.int64).ravel()
        lo = b[:, 8:].copy().view(">u4").astype(np.int64).ravel()
        out.append(VAL_OID)
        _put_ints(out, _delta(hi))
        _put_ints(out, _delta(lo))
    else:
        out.append(VAL_BYTES)
        out += _planes(raw, WIDTH[btype])


@functools.lru_cache(maxsize=65536)
def _dense_length(width: int, n: int) -> int:
    """Byte length of a column document of ``n`` dense elements of ``width``-byte values."""
    digits, lo, d = 0, 0, 1
    while lo < n:
        hi = min(n, lo * 10 if lo else 10)
        digits += (hi - lo) * d
        lo, d = hi, d + 1
    return 5 + n * (2 + width) + digits


def _dense_of_width(doc: bytes, btype: int, width: int) -> tuple[int, np.ndarray] | None:
    """(n, values as n x width bytes) if ``doc`` is exactly the dense column ``{"0": v0, ..}`` of ``n``
    elements of type ``btype`` with ``width``-byte values (rebuilt from its values and compared)."""
    lo, hi = 1, len(doc) // (3 + width)  # every element takes at least 3 + width bytes
    while lo < hi:  # smallest n whose dense length reaches len(doc)
        mid = (lo + hi) // 2
        if _dense_length(width, mid) < len(doc):
            lo = mid + 1
        else:
            hi = mid
    if _dense_length(width, lo) != len(doc):
        return None
    values = _dense_values(doc, width, lo)
    if _dense_document(btype, width, values) != doc:
        return None
    return lo, values


def _parse_dense(doc: bytes) -> tuple[int, int, np.ndarray] | None:
    """The common case without a Python loop: every element of one fixed-width type under the keys
    "0".."n-1". (bson type, n, values as n x width bytes) or None."""
    if len(doc) < 6 or doc[4] not in WIDTH:
        return None
    btype = doc[4]
    found = _dense_of_width(doc, btype, WIDTH[btype])
    return None if found is None else (btype, *found)


def _parse_strings(doc: bytes) -> tuple[list[bytes], np.ndarray] | None:
    """A dense column of strings ``{"0": s0, .., "n-1": s(n-1)}`` (n >= 1) as (its distinct contents,
    the index of each row's content in them); None for any other column."""
    if len(doc) < 12 or doc[4] != 0x02 or doc[5:7] != b"0\0":
        return None
    # every string as long as the first (constants, fixed-format tags): strided, no per-row loop
    width = 4 + _INT32.unpack_from(doc, 7)[0]
    if width >= 5:
        found = _dense_of_width(doc, 0x02, width)
        if found is not None:
            n, rows = found
            if not (rows[:, :4] == rows[0, :4]).all() or rows[:, -1].any():
                return None  # lengths that disagree with the width, or no final NUL: not BSON strings
            if (rows == rows[0]).all():
                return [rows[0, 4:-1].tobytes()], np.zeros(n, np.int64)
            distinct, inverse = np.unique(rows.view(f"V{width}").ravel(), return_inverse=True)
            return [bytes(v)[4:-1] for v in distinct], inverse.astype(np.int64).ravel()
    end = len(doc) - 1
    pos, i = 4, 0
    ids: dict[bytes, int] = {}
    index: list[int] = []
    while pos < end:
        key = b"\x02%d\x00" % i
        if doc[pos:pos + len(key)] != key:
            return None
        pos += len(key)
        (size,) = _INT32.unpack_from(doc, pos)
        stop = pos + 4 + size
        if size < 1 or stop > end or doc[stop - 1] != 0:
            return None
        index.append(ids.setdefault(doc[pos + 4:stop - 1], len(ids)))
        pos, i = stop, i + 1
    if pos != end:
        return None
    return list(ids), np.asarray(index, np.int64)


def _encode_strings(out: bytearray, table: list[bytes], index: np.ndarray) -> None:
    n, k = len(index), len(table)
    out.append(KIND_STRINGS)
    _put_varint(out, n)
    if k == 1 or 2 * k <= n:
        out.append(STR_TABLE)
        _put_varint(out, k)
        for content in table:
            _put_varint(out, len(content))
            out += content
        if k > 1:
            _put_ints(out, index)
        return
    out.append(STR_LIST)
    contents = [table[i] for i in index.tolist()]
    _put_ints(out, np.fromiter(map(len, contents), np.int64, n))
    out += b"".join(contents)


def _encode_column(out: bytearray, doc: bytes) -> None:
    dense = _parse_dense(doc)
    if dense is not None:
        btype, n, values = dense
        out.append(KIND_FIXED)
        out.append(btype)
        _put_varint(out, n)
        out.append(KEYS_DENSE)
        _encode_values(out, btype, values.reshape(-1), n)
        return
    strings = _parse_strings(doc)
    if strings is not None:
        _encode_strings(out, *strings)
        return
    parsed = _parse_column(doc)
    if parsed is None:
        out.append(KIND_RAW)
        _put_varint(out, len(doc))
        out += doc
        return
    btype, keys, offsets = parsed
    n, width = len(keys), WIDTH[btype]
    out.append(KIND_FIXED)
    out.append(btype)
    _put_varint(out, n)
    if keys[-1] == n - 1:
        out.append(KEYS_DENSE)
    else:
        out.append(KEYS_LIST)
        _put_ints(out, _delta(np.asarray(keys, np.int64)))
    index = (np.asarray(offsets, np.int64)[:, None] + np.arange(width)).ravel()
    raw = np.frombuffer(doc, np.uint8)[index]
    _encode_values(out, btype, raw, n)


def _split(bson: bytes) -> tuple[int, int] | None:
    """(start, end) of the value of the top-level ``data`` embedded document, or None."""
    if len(bson) < 5 or struct.unpack_from("<i", bson)[0] != len(bson) or bson[-1] != 0:
        return None
    pos = 4
    end = len(bson) - 1
    while pos < end:
        t = bson[pos]
        z = bson.index(b"\0", pos + 1)
        name = bson[pos + 1:z]
        v = z + 1
        if t == 0x03 and name == b"data":
            return v, v + struct.unpack_from("<i", bson, v)[0]
        size = _value_size(bson, t, v)
        if size is None:
            return None
        pos = v + size
    return None


def _value_size(buf: bytes, t: int, v: int) -> int | None:
    if t in WIDTH:
        return WIDTH[t]
    length: int
    if t in (0x03, 0x04):
        (length,) = struct.unpack_from("<i", buf, v)
        return length
    if t in (0x02, 0x0D, 0x0E):
        (length,) = struct.unpack_from("<i", buf, v)
        return 4 + length
    if t == 0x05:
        (length,) = struct.unpack_from("<i", buf, v)
        return 5 + length
    if t in (0x0A, 0x06, 0xFF, 0x7F):
        return 0
    if t == 0x13:
        return 16
    return None  # regex, dbpointer, code w/ scope: not worth handling in the prefix walk


def encode_raw(bson: bytes) -> bytes | None:
    """The column stream before zstd (no verification); None when not bucket-shaped."""
    span = _split(bson)
    if span is None:
        return None
    start, stop = span
    out = bytearray((FORMAT_VERSION,))
    _put_varint(out, start)
    out += bson[:start]
    _put_varint(out, len(bson) - stop)
    out += bson[stop:]
    cols = []
    pos, end = start + 4, stop - 1
    while pos < end:
        t = bson[pos]
        z = bson.index(b"\0", pos + 1)
        if t != 0x03:
            return None
        size = struct.unpack_from("<i", bson, z + 1)[0]
        cols.append((bson[pos + 1:z], bson[z + 1:z + 1 + size]))
        pos = z + 1 + size
    if pos != end:
        return None
    _put_varint(out, len(cols))
    for name, doc in cols:
        out += name
        out.append(0)
        _encode_column(out, doc)
    return bytes(out)


def encode(bson: bytes | bytearray | memoryview) -> bytes | None:
    """Compact bytes that ``decode`` turns back into exactly ``bson``; None if not representable."""
    if not isinstance(bson, bytes):
        bson = bytes(bson)  # memoryview / bytearray callers
    try:
        raw = encode_raw(bson)
        if raw is None:
            return None
        if decode_raw(raw) != bson:  # the column codec is what is verified; zstd is lossless
            return None
        return _compressor().compress(raw)
    except (ValueError, IndexError, struct.error, OverflowError):
        return None


def encode_columns(head: bytes, columns: list[tuple[bytes, int, np.ndarray | bytes]]) -> bytes:
    """``encode`` of a bucket given as parts, without parsing its BSON: ``head`` is the document's
    bytes up to and including the ``data`` element's name (``<total length><_id, control, meta...>
    \x03data\x00``; ``data`` is the last element), each column is ``(name, bson type, values)`` where
    ``values`` is either the little-endian value bytes of a dense column of a fixed-width type (an
    array of ``n >= 1`` items) or the column's whole BSON document (bytes). The result is what
    ``encode`` returns for that document.

    Verified: every fixed-width column's values are decoded back from the stream before it is
    compressed and compared byte for byte with the given ones, and every column given as BSON and
    stored otherwise than as its bytes (strings, a constant number) is decoded back and compared with
    them (ValueError when they differ: never store what does not read back). The rest of the document
    (head, names, raw columns, the dense column layout) is copied or rebuilt by ``dense_column`` on
    decoding, independent of the values."""
    out = bytearray((FORMAT_VERSION,))
    _put_varint(out, len(head))
    out += head
    _put_varint(out, 1)
    out.append(0)  # the suffix: the outer document's terminating NUL
    _put_varint(out, len(columns))
    written = []
    parsed = []
    for name, btype, values in columns:
        out += name
        out.append(0)
        if isinstance(values, bytes):
            parsed.append((len(out), values))
            _encode_column(out, values)
            continue
        n = len(values)
        out.append(KIND_FIXED)
        out.append(btype)
        _put_varint(out, n)
        out.append(KEYS_DENSE)
        value_bytes = np.ascontiguousarray(values).view(np.uint8).reshape(-1)
        written.append((len(out), btype, n, value_bytes))
        _encode_values(out, btype, value_bytes, n)
    stream = bytes(out)
    for pos, btype, n, value_bytes in written:
        if _decode_values(stream, pos, btype, n)[0].tobytes() != value_bytes.tobytes():
            raise ValueError("a bucket column does not read back from its encoding")
    for pos, doc in parsed:
        if stream[pos] != KIND_RAW and decode_column(stream, pos) != doc:
            raise ValueError("a bucket column does not read back from its encoding")
    return _compressor().compress(stream)


def dense_column_length(btype: int, n: int) -> int:
    """Byte length of the BSON document of a dense column of ``n`` values of a fixed-width type."""
    return _dense_length(WIDTH[btype], n)


# --- decoding -----------------------------------------------------------------------------------
def _decode_values(buf: bytes, pos: int, btype: int, n: int) -> tuple[np.ndarray, int]:
    """(value bytes as a flat uint8 array, next position)."""
    codec = buf[pos]
    pos += 1
    if codec == VAL_INT_DOD:
        d, pos = _get_ints(buf, pos, n)
        v = np.cumsum(np.cumsum(d))
        return v.astype("<i8").view(np.uint8), pos
    if codec == VAL_INT_DELTA:
        d, pos = _get_ints(buf, pos, n)
        v = np.cumsum(d)
        return v.astype("<i4" if btype == 0x10 else "<i8").view(np.uint8), pos
    if codec == VAL_DOUBLE_INT:
        d, pos = _get_ints(buf, pos, n)
        return np.cumsum(d).astype("<f8").view(np.uint8), pos
    if codec == VAL_DOUBLE_XOR:
        x = np.ascontiguousarray(_unplanes(buf, pos, n, 8)).view("<u8").ravel()
        return np.bitwise_xor.accumulate(x).view(np.uint8), pos + 8 * n
    if codec == VAL_OID:
        hi, pos = _get_ints(buf, pos, n)
        lo, pos = _get_ints(buf, pos, n)
        b = np.empty((n, 12), np.uint8)
        b[:, :8] = np.cumsum(hi).astype(">i8").view(np.uint8).reshape(n, 8)
        b[:, 8:] = np.cumsum(lo).astype(">u4").view(np.uint8).reshape(n, 4)
        return b.ravel(), pos
    if codec == VAL_BYTES:
        w = WIDTH[btype]
        return np.ascontiguousarray(_unplanes(buf, pos, n, w)).ravel(), pos + n * w
    raise ValueError(f"unknown bucket column value codec {codec}")


def _read_strings(buf: bytes, pos: int) -> tuple[int, list[bytes], np.ndarray | None, int]:
    """A KIND_STRINGS body at ``pos`` (after the kind byte): (row count, contents, the index of each
    row's content in them or None when there is one content (a constant) or one per row in order,
    position after it)."""
    n, pos = _get_varint(buf, pos)
    mode = buf[pos]
    pos += 1
    if mode == STR_TABLE:
        k, pos = _get_varint(buf, pos)
        table = []
        for _ in range(k):
            size, pos = _get_varint(buf, pos)
            table.append(buf[pos:pos + size])
            pos += size
        if k == 1:
            return n, table, None, pos
        index, pos = _get_ints(buf, pos, n)
        return n, table, index, pos
    if mode != STR_LIST:
        raise ValueError(f"unknown bucket strings codec {mode}")
    lengths, pos = _get_ints(buf, pos, n)
    ends = (np.cumsum(lengths) + pos).tolist()
    starts = [pos, *ends[:-1]]
    return n, [buf[a:b] for a, b in zip(starts, ends, strict=True)], None, ends[-1]


def skip_strings(buf: bytes, pos: int) -> int:
    """The position after the KIND_STRINGS body at ``pos``, without building its contents."""
    n, pos = _get_varint(buf, pos)
    mode = buf[pos]
    pos += 1
    if mode == STR_TABLE:
        k, pos = _get_varint(buf, pos)
        for _ in range(k):
            size, pos = _get_varint(buf, pos)
            pos += size
        return pos if k == 1 else pos + 1 + n * buf[pos]
    lengths, pos = _get_ints(buf, pos, n)
    return pos + int(lengths.sum())


_CONSTANT_CACHED_BYTES = 65_536  # contents x rows: at most 64 such columns (~6 MB) are kept


@functools.lru_cache(maxsize=64)
def _constant_strings(content: bytes, n: int) -> bytes:
    """The BSON document of a column of ``n`` times the string ``content``. Cached: such columns (a
    measurement name, a constant tag) repeat in every bucket of a collection."""
    return _strings_document(n, [content], None)


def _strings_document(n: int, table: list[bytes], index: np.ndarray | None) -> bytes:
    """The BSON document of a dense column of ``n`` strings (see ``_read_strings``)."""
    sizes = {len(content) for content in table}
    if len(sizes) == 1:  # equal lengths: a fixed-width column of (length, content, NUL) values
        width = sizes.pop() + 5
        length = _INT32.pack(width - 4)
        rows = np.frombuffer(b"".join(length + c + b"\0" for c in table), np.uint8).reshape(-1, width)
        if index is not None:
            rows = rows[index]
        elif len(table) == 1:
            rows = np.broadcast_to(rows, (n, width))
        return _dense_document(0x02, width, rows)
    contents = table if index is None else [table[i] for i in index.tolist()]
    body = b"".join(b"\x02%d\x00%s%s\x00" % (i, _INT32.pack(len(c) + 1), c) for i, c in enumerate(contents))
    return _INT32.pack(len(body) + 5) + body + b"\0"


def _read_column(buf: bytes, pos: int) -> tuple[int, np.ndarray | bytes, int]:
    """The column whose kind byte is at ``pos`` as ``columns_document`` takes it: (bson type, its dense
    values (n x width bytes) or its BSON document, position after it)."""
    kind = buf[pos]
    pos += 1
    if kind == KIND_RAW:
        size, pos = _get_varint(buf, pos)
        return 0, buf[pos:pos + size], pos + size
    if kind == KIND_STRINGS:
        n, table, index, pos = _read_strings(buf, pos)
        if index is None and len(table) == 1 and len(table[0]) * n <= _CONSTANT_CACHED_BYTES:
            return 0, _constant_strings(table[0], n), pos
        return 0, _strings_document(n, table, index), pos
    if kind != KIND_FIXED:
        raise ValueError(f"unknown bucket column kind {kind}")
    btype = buf[pos]
    count, pos = _get_varint(buf, pos + 1)
    keys_kind = buf[pos]
    pos += 1
    width = WIDTH[btype]
    if keys_kind == KEYS_DENSE:
        values, pos = _decode_values(buf, pos, btype, count)
        return btype, values.reshape(count, width), pos
    deltas, pos = _get_ints(buf, pos, count)
    skeleton, index = _skeleton(btype, width, np.cumsum(deltas).tolist())
    values, pos = _decode_values(buf, pos, btype, count)
    column = np.frombuffer(skeleton, np.uint8).copy()
    column[index] = values
    return 0, column.tobytes(), pos


def decode_column(buf: bytes, pos: int) -> bytes:
    """The exact BSON document of one column of a decompressed stream (``pos``: its kind byte)."""
    btype, values, _ = _read_column(buf, pos)
    return values if isinstance(values, bytes) else dense_column(btype, values)


def decode_raw(buf: bytes) -> bytes:
    if buf[0] not in READABLE_VERSIONS:
        raise ValueError(f"unknown bucket codec format {buf[0]}")
    n, pos = _get_varint(buf, 1)
    prefix = buf[pos:pos + n]
    pos += n
    n, pos = _get_varint(buf, pos)
    suffix = buf[pos:pos + n]
    pos += n
    ncols, pos = _get_varint(buf, pos)
    columns = []
    for _ in range(ncols):
        z = buf.index(b"\0", pos)
        name = buf[pos:z]
        btype, values, pos = _read_column(buf, z + 1)
        columns.append((name, btype, values))
    return columns_document(columns, prefix, suffix)


def decode(packed: bytes, zd: zstandard.ZstdDecompressor | None = None) -> bytes:
    """The exact BSON bytes given to ``encode``; ``zd``: a decompressor holding the dictionary the value
    names (``frame_dictionary``), when it names one."""
    return decode_raw((zd or _decompressor()).decompress(bytes(packed)))
