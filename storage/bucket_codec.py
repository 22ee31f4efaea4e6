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
Version 3 exists only stored (``compress``): a version-2 stream whose small-integer columns' 1-byte
deltas are pooled into one Huffman-coded deflate block (``_pool``; ``_unpool`` gives the version-2
stream back, which every reader reads). Version 4, also only stored: a version-3 stream whose
control.min / control.max small integral doubles are one byte each (``_pack_control``; ``_unpool``
unpacks it first, ``BucketReader.head()`` alone reads it packed).
"""

from __future__ import annotations

import contextlib
import functools
import re
import struct
import threading
import zlib
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
import zstandard

FORMAT_VERSION = 2  # the column stream the encoders build and ``decode_raw`` reads
READABLE_VERSIONS = (1, 2)  # 1: before KIND_STRINGS (its streams are valid version-2 streams)
POOLED_VERSION = 3  # a stored version-2 stream whose small-integer columns are pooled (``_pool``)
PACKED_VERSION = 4  # a stored version-3 stream whose control's small integral doubles are bytes (``_pack_control``)
# Stored values are one zstd frame (versions 1-4, whose header names the dictionary) or, from version 5,
# ``u8 5 | varint d | a magicless zstd frame without a dictionary id``: d = 0 without a dictionary,
# else the dictionary's zstd id - DICT_ID_BASE + 1 (``frame_dictionary``). The frame's 4-byte magic
# and 4-byte dictionary id become 2 bytes (3 from 127 dictionaries on). The frame's content is what a
# version 1-4 frame holds. A zstd frame starts with its magic (0x28), so the first byte tells them apart.
# Version 6: the same with a pool coded with the collection's static Huffman code (``PoolCode``):
# ``u8 6 | varint d | a magicless zstd frame``, whose stream's pool lacks the code's block header.
FRAMED_VERSION = 5
STATIC_POOL_VERSION = 6
DICT_ID_BASE = 1 << 20  # bucket dictionaries' zstd ids (storage/dictionaries.py): ids below 32768 are reserved
_MAGICLESS = zstandard.FORMAT_ZSTD1_MAGICLESS
# Buckets with more data columns than this are not column-encoded (``encode`` and ``encode_columns``
# answer None: the caller's general compressor takes the document). The codec's cost is per column
# (~30 µs, call overhead), a general compressor's per byte: the full write of one measurement of
# 100,000 fields took the writer thread 3.5 s — every client's commit waited behind it — and zstd of
# its BSON 18 ms, to fewer bytes (457 KB against 682 KB).
MAX_COLUMNS = 1024
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


class Compressor:
    """A zstd compressor of bucket streams, the version-5 header naming its dictionary and, with a
    dictionary, the collection's static pool code (``PoolCode``, None: pools keep their own tree)."""

    __slots__ = ("zc", "header", "pool_code", "static_header")

    def __init__(self, zc: zstandard.ZstdCompressor, header: bytes, pool_code: PoolCode | None = None):
        self.zc = zc
        self.header = header
        self.pool_code = pool_code
        self.static_header = bytes((STATIC_POOL_VERSION,)) + header[1:]


class Decompressor:
    """What reading a stored value of one dictionary takes: a zstd decompressor of its frame's format
    holding the dictionary, and the collection's static pool code (version 6), if it has one."""

    __slots__ = ("zd", "pool_code")

    def __init__(self, zd: zstandard.ZstdDecompressor, pool_code: PoolCode | None = None):
        self.zd = zd
        self.pool_code = pool_code


def make_compressor(zdict: zstandard.ZstdCompressionDict | None = None,
                    pool_code: PoolCode | None = None) -> Compressor:
    """A compressor of bucket streams, with a dictionary (of id DICT_ID_BASE or more, which the stored
    value's header records, so a value names the dictionary it needs; storage/dictionaries.py trains
    one per collection, and its static pool code) or without."""
    params = zstandard.ZstdCompressionParameters.from_level(
        ZSTD_LEVEL, **ZSTD_PARAMS, write_dict_id=0, format=_MAGICLESS)
    header = bytearray((FRAMED_VERSION,))
    if zdict is None:
        _put_varint(header, 0)
        return Compressor(zstandard.ZstdCompressor(compression_params=params), bytes(header))
    dict_id = int(zdict.dict_id())
    if dict_id < DICT_ID_BASE:
        raise ValueError(f"bucket dictionary ids start at {DICT_ID_BASE}, not {dict_id}")
    _put_varint(header, dict_id - DICT_ID_BASE + 1)
    zdict.precompute_compress(compression_params=params)  # else every frame re-loads the dictionary
    return Compressor(zstandard.ZstdCompressor(dict_data=zdict, compression_params=params), bytes(header),
                      pool_code)


def _compressor() -> Compressor:
    zc = getattr(_local, "override", None) or getattr(_local, "zc", None)
    if zc is None:
        zc = _local.zc = make_compressor()
    return zc


@contextlib.contextmanager
def compressing_with(zc: Compressor | None) -> Iterator[None]:
    """Within the block, ``encode`` and ``compress`` on this thread compress with ``zc`` (None: the
    default). ValueCodec.pack picks the collection's dictionary this way around the server's
    ``bucket_form`` callback, which calls ``compress`` and knows nothing of dictionaries."""
    previous = getattr(_local, "override", None)
    _local.override = zc
    try:
        yield
    finally:
        _local.override = previous


def frame_format(packed: bytes) -> int:
    """The zstd format of a stored value's frame (versions 5, 6: magicless; before: with its magic)."""
    return _MAGICLESS if packed[0] in (FRAMED_VERSION, STATIC_POOL_VERSION) else zstandard.FORMAT_ZSTD1


def make_decompressor(zdict: zstandard.ZstdCompressionDict | None, fmt: int,
                      pool_code: PoolCode | None = None) -> Decompressor:
    """A decompressor of frames of format ``fmt`` (``frame_format``) with the dictionary ``zdict``."""
    if zdict is None:
        return Decompressor(zstandard.ZstdDecompressor(format=fmt), pool_code)
    return Decompressor(zstandard.ZstdDecompressor(dict_data=zdict, format=fmt), pool_code)


def _decompressor(fmt: int = zstandard.FORMAT_ZSTD1) -> Decompressor:
    zds = getattr(_local, "zds", None)
    if zds is None:
        zds = _local.zds = {}
    zd = zds.get(fmt)
    if zd is None:
        zd = zds[fmt] = make_decompressor(None, fmt)
    return zd


def decompress(packed: bytes, dec: Decompressor | None = None) -> bytes:
    """The stream of a stored value (any version); ``dec``: the decompressor of the dictionary it
    names (``frame_dictionary``, ``frame_format``), when it names one."""
    packed = bytes(packed)
    version = packed[0]
    if version == FRAMED_VERSION or version == STATIC_POOL_VERSION:
        at = 2 if packed[1] < 0x80 else _get_varint(packed, 1)[1]
        buf = (dec or _decompressor(_MAGICLESS)).zd.decompress(packed[at:])
        if version == FRAMED_VERSION:
            return buf
        if dec is None or dec.pool_code is None:
            raise ValueError("stored bucket needs its collection's pool code, which is missing")
        return dec.pool_code.whole(buf)
    return (dec or _decompressor()).zd.decompress(packed)


# Measured on the TSBS day (2,400 buckets of 360 rows; dictionary from the first 64 buckets, applied
# to 1,000 later ones): no dictionary 1,858 B per bucket; 16 KiB 1,511 B (+15 us to compress, the
# same to decompress); 64 KiB 1,475 B (+56 us); 64, 128 or 300 samples train the same (50-150 ms).
DICT_SIZE = 16 * 1024
# COVER segment size k and d-mer length d, fixed: zstandard's defaults train a useless dictionary on
# version-4 streams (~410 B per TSBS bucket's frame instead of ~140, whatever 64 buckets it samples);
# k=512, d=8 trains a good one on every sample tried (version 3: 166 vs 169 B; 4: 140 B).
DICT_K = 512
DICT_D = 8


def train_dictionary(streams: list[bytes], dict_id: int) -> bytes:
    """A zstd dictionary of id ``dict_id`` for bucket streams like ``streams`` (``stream`` of a
    collection's values); raises zstandard.ZstdError when they are too few or too alike to train on."""
    # the pools (entropy-coded, in a zstd block of their own) are nothing a dictionary could share
    buffers: list[bytes | bytearray | memoryview] = [_without_pool(s) for s in streams]
    return zstandard.train_dictionary(DICT_SIZE, buffers, dict_id=dict_id, k=DICT_K, d=DICT_D).as_bytes()


def stream(packed: bytes) -> bytes:
    """The column stream of a value compressed without a dictionary (what dictionaries train on)."""
    return decompress(packed)


def frame_dictionary(packed: bytes) -> int:
    """The zstd id of the dictionary ``packed`` was compressed with (0: none)."""
    if packed[0] == FRAMED_VERSION or packed[0] == STATIC_POOL_VERSION:
        d = _get_varint(packed, 1)[0]
        return d and d - 1 + DICT_ID_BASE
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
    (body,), _ = _ints_many(values.reshape(1, -1))
    out += body


def _ints_many(values: np.ndarray) -> tuple[list[bytes], np.ndarray]:
    """The ``_put_ints`` form of each row of a 2-D int64 array (u8 width + zig-zag values in that
    width), and the array those bytes read back as (``_unzigzag`` of the narrowed values, the reader's
    own arithmetic): one NumPy call per distinct width for all rows."""
    k, m = values.shape
    z = ((values << 1) ^ (values >> 63)).view(np.uint64)
    if not m:
        return [b"\x01"] * k, values.copy()
    top = z.max(axis=1)
    widths = np.where(top < 1 << 8, 1, np.where(top < 1 << 16, 2, np.where(top < 1 << 32, 4, 8)))
    first = int(widths[0])
    if (widths == first).all():
        narrow = z.astype(_UNSIGNED[first])
        head = _WIDTH_BYTE[first]
        return [head + row.tobytes() for row in narrow], _unzigzag(narrow)
    bodies: list[bytes] = [b""] * k
    back = np.empty_like(values)
    for width in np.unique(widths).tolist():
        rows = np.flatnonzero(widths == width)
        narrow = z[rows].astype(_UNSIGNED[width])
        head = _WIDTH_BYTE[width]
        for i, row in zip(rows.tolist(), narrow, strict=True):
            bodies[i] = head + row.tobytes()
        back[rows] = _unzigzag(narrow)
    return bodies, back


def _unzigzag(z: np.ndarray) -> np.ndarray:
    """Zig-zag values (any unsigned width) -> int64."""
    if z.dtype.itemsize < 8:  # zig-zag values below 2**32: signed arithmetic is exact and cheaper
        s = z.astype(np.int64)
        return (s >> 1) ^ -(s & 1)
    return ((z >> np.uint64(1)) ^ (np.uint64(0) - (z & np.uint64(1)))).view(np.int64)


_UNSIGNED: dict[int, np.dtype[np.unsignedinteger[Any]]] = {
    1: np.dtype("<u1"), 2: np.dtype("<u2"), 4: np.dtype("<u4"), 8: np.dtype("<u8")}
_WIDTH_BYTE = {width: bytes((width,)) for width in _UNSIGNED}


def _get_ints(buf: bytes, pos: int, n: int) -> tuple[np.ndarray, int]:
    width = buf[pos]
    pos += 1
    return _unzigzag(np.frombuffer(buf, _UNSIGNED[width], n, pos)), pos + n * width


def _delta(v: np.ndarray) -> np.ndarray:
    """Differences along the last axis, the first value kept."""
    d = np.empty_like(v)
    if v.shape[-1]:
        d[..., 0] = v[..., 0]
        np.subtract(v[..., 1:], v[..., :-1], out=d[..., 1:])
    return d


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
    ``_TEMPLATE_CACHED_BYTES`` bytes; one built and not kept has just the ``n`` positions asked for (as
    long as the column it is the skeleton of)."""
    cached = _templates.get((btype, width))
    if cached is None or cached[0] < n:
        cap = max(n, _TEMPLATE_MIN)
        if cap > n and cap * (width + 6) > _TEMPLATE_CACHED_BYTES:
            # positions beyond n are built only for a template kept for later columns, and one this
            # large is not kept: for one 130 KB string, 1,024 positions were 133 MB built on every read
            cap = n
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


def _dense_skeleton(out: bytearray, at: int, btype: int, width: int, n: int, length: int) -> None:
    """Write a dense column's length and element headers (``length`` bytes for ``n`` values of ``width``
    bytes: the type's template, values zero) at ``out[at:]``; the column's final NUL is left as it is:
    zero."""
    _INT32.pack_into(out, at, length)
    out[at + 4:at + length - 1] = _template(btype, width, n)[:length - 5].data


def _fill_values(rows: np.ndarray, at: int, width: int, values: np.ndarray) -> None:
    """Write the values of the dense column whose skeleton is at ``rows[..., at:]``: ``rows`` is one
    document's buffer (uint8, ``values`` its n values of ``width`` bytes as n x width uint8) or k
    documents' (k x size, ``values`` k x n x width). One strided copy per key length for all."""
    if rows.ndim == 1:
        for lo, hi, start, stride in _dense_runs(width, len(values)):
            start += at
            rows[start:start + (hi - lo) * stride].reshape(hi - lo, stride)[:, stride - width:] = values[lo:hi]
        return
    k = len(rows)
    for lo, hi, start, stride in _dense_runs(width, values.shape[1]):
        start += at
        rows[:, start:start + (hi - lo) * stride].reshape(k, hi - lo, stride)[:, :, stride - width:] = values[:, lo:hi]


def dense_column(btype: int, values: np.ndarray) -> bytes:
    """The BSON document ``{"0": v0, "1": v1, ...}`` of a dense column of a fixed-width type: ``values``
    holds the little-endian value bytes (any contiguous-able array of ``n * WIDTH[btype]`` bytes).
    Built from the type's template with one strided copy per key length (no per-byte index)."""
    return _dense_document(btype, WIDTH[btype], values)


def _dense_document(btype: int, width: int, values: np.ndarray) -> bytes:
    n = values.nbytes // width
    length = _dense_length(width, n)
    out = bytearray(length)
    _dense_skeleton(out, 0, btype, width, n, length)
    _fill_values(np.frombuffer(out, np.uint8), 0, width, np.ascontiguousarray(values).view(np.uint8).reshape(n, width))
    return bytes(out)


def _value_rows(values: np.ndarray, k: int) -> np.ndarray:
    """``values`` (k documents' values of one fixed-width column, any shape led by k) as k x bytes uint8."""
    return np.ascontiguousarray(values).view(np.uint8).reshape(k, -1)


def _column_length(btype: int, values: np.ndarray | bytes, k: int = 1) -> int:
    if isinstance(values, bytes):
        return len(values)
    return _dense_length(WIDTH[btype], values.nbytes // (k * WIDTH[btype]))


def columns_length(columns: list[tuple[bytes, int, np.ndarray | bytes]], k: int = 1) -> int:
    """Byte length of the ``data`` document of each of ``k`` documents of ``columns_documents``."""
    return 5 + sum(2 + len(name) + _column_length(btype, values, k) for name, btype, values in columns)


def columns_documents(columns: list[tuple[bytes, int, np.ndarray | bytes]], prefixes: list[bytes],
                      suffix: bytes = b"") -> list[bytes]:
    """For each of k documents (``len(prefixes)``): its prefix + the BSON document ``{<name>: <column
    document>, ...}`` + ``suffix``, the columns given as ``encode_columns`` takes them (a fixed-width
    column's values for the k documents, an array led by k, or one column BSON document for all k): a
    bucket's ``data`` the way decoding and a full write both build it. The k documents are written in
    one k x size buffer, one NumPy call per element kind and key length for all of them."""
    k = len(prefixes)
    sizes = []
    body = 0
    for name, btype, values in columns:
        size = _column_length(btype, values, k)
        sizes.append(size)
        body += 2 + len(name) + size
    length = body + 5
    # one document with its values zero (and, for one document, its prefix and suffix: decoding a
    # stored bucket); the values of all k written into k copies of it
    lead, tail = (len(prefixes[0]), len(suffix)) if k == 1 else (0, 0)
    row = bytearray(lead + length + tail)
    if k == 1:
        row[:lead] = prefixes[0]
        row[lead + length:] = suffix
    one = np.frombuffer(row, np.uint8) if k == 1 else None  # one document: its values written at once
    at = lead
    _INT32.pack_into(row, at, length)
    at += 4
    fixed = []
    for (name, btype, values), size in zip(columns, sizes, strict=True):
        row[at] = 0x03
        row[at + 1:at + 1 + len(name)] = name  # the name's NUL: already zero
        at += 2 + len(name)
        if isinstance(values, bytes):
            row[at:at + size] = values
        else:
            width = WIDTH[btype]
            cells = np.ascontiguousarray(values).view(np.uint8)
            cells = cells.reshape(-1, width) if k == 1 else cells.reshape(k, -1, width)
            _dense_skeleton(row, at, btype, width, cells.shape[-2], size)
            if one is not None:
                _fill_values(one, at, width, cells)
            else:
                fixed.append((at, width, cells))
        at += size
    if one is not None:
        return [bytes(row)]
    rows = np.empty((k, len(row)), np.uint8)
    rows[:] = np.frombuffer(row, np.uint8)
    for at, width, cells in fixed:
        _fill_values(rows, at, width, cells)
    return [b"".join((prefix, doc.data, suffix)) for prefix, doc in zip(prefixes, rows, strict=True)]


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
    body = _encode_values_many(btype, raw.reshape(1, -1), n)[0]
    if body is None:
        raise ValueError("a bucket column does not read back from its encoding")
    out += body


_CODEC_BYTE = {codec: bytes((codec,)) for codec in range(VAL_BYTES + 1)}


def _encode_values_many(btype: int, raw: np.ndarray, n: int) -> list[bytes | None]:
    """The value codec + body of each row of ``raw`` (k x n values of ``btype`` as little-endian
    bytes, uint8 k x (n * width)): one NumPy call per step for all k rows (k columns of one type,
    e.g. one field of k buckets). Verified: each row's body is read back with the reader's arithmetic
    (``_unzigzag``, cumulative sums, XOR, planes) from the very values it holds and compared with the
    row; a row that does not read back is None (never store what does not read back)."""
    k = len(raw)
    bodies: list[bytes | None]
    if btype in (0x09, 0x12):
        v = raw.view("<i8")
        packed, back = _ints_many(_delta(_delta(v)))
        ok = (np.cumsum(np.cumsum(back, axis=1), axis=1) == v).all(axis=1)
        bodies = [_CODEC_BYTE[VAL_INT_DOD] + body for body in packed]
    elif btype == 0x10:
        v = raw.view("<i4")
        packed, back = _ints_many(_delta(v.astype(np.int64)))
        ok = (np.cumsum(back, axis=1).astype("<i4") == v).all(axis=1)
        bodies = [_CODEC_BYTE[VAL_INT_DELTA] + body for body in packed]
    elif btype == 0x01:
        u = raw.view("<u8")
        with np.errstate(invalid="ignore"):
            ints = raw.view("<f8").astype(np.int64)
        integral = (ints.astype("<f8").view("<u8") == u).all(axis=1)  # bit-exactly integral
        bodies = [None] * k
        ok = np.zeros(k, bool)
        if integral.all():
            rows = None
        else:
            rows = np.flatnonzero(integral)
            xor = np.flatnonzero(~integral)
            x = u[xor]
            x[:, 1:] ^= u[xor][:, :-1]
            planes = np.ascontiguousarray(x.view(np.uint8).reshape(len(xor), n, 8).transpose(0, 2, 1))
            back_x = np.bitwise_xor.accumulate(
                np.ascontiguousarray(planes.transpose(0, 2, 1)).view("<u8").reshape(len(xor), n), axis=1)
            ok[xor] = (back_x == u[xor]).all(axis=1)
            for i, plane in zip(xor.tolist(), planes, strict=True):
                bodies[i] = _CODEC_BYTE[VAL_DOUBLE_XOR] + plane.tobytes()
        if rows is None or len(rows):
            chosen = ints if rows is None else ints[rows]
            packed, back = _ints_many(_delta(chosen))
            read = (np.cumsum(back, axis=1).astype("<f8").view("<u8") == (u if rows is None else u[rows])).all(axis=1)
            for i, body in zip(range(k) if rows is None else rows.tolist(), packed, strict=True):
                bodies[i] = _CODEC_BYTE[VAL_DOUBLE_INT] + body
            if rows is None:
                ok = read
            else:
                ok[rows] = read
    elif btype == 0x07:
        b = raw.reshape(k, n, 12)
        hi = np.ascontiguousarray(b[:, :, :8]).view(">u8").astype(np.uint64).view(np.int64).reshape(k, n)
        lo = np.ascontiguousarray(b[:, :, 8:]).view(">u4").astype(np.int64).reshape(k, n)
        his, back_hi = _ints_many(_delta(hi))
        los, back_lo = _ints_many(_delta(lo))
        ok = ((np.cumsum(back_hi, axis=1).astype(">i8").view(np.uint8).reshape(k, n, 8) == b[:, :, :8]).all(axis=(1, 2))
              & (np.cumsum(back_lo, axis=1).astype(">u4").view(np.uint8).reshape(k, n, 4) == b[:, :, 8:]).all(axis=(1, 2)))
        bodies = [_CODEC_BYTE[VAL_OID] + h + lw for h, lw in zip(his, los, strict=True)]
    else:
        width = WIDTH[btype]
        planes = np.ascontiguousarray(raw.reshape(k, n, width).transpose(0, 2, 1))
        ok = (planes.transpose(0, 2, 1).reshape(k, n * width) == raw).all(axis=1)
        bodies = [_CODEC_BYTE[VAL_BYTES] + plane.tobytes() for plane in planes]
    if not ok.all():
        for i in np.flatnonzero(~ok).tolist():
            bodies[i] = None
    return bodies


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
    cols: list[tuple[bytes, bytes]] = []
    pos, end = start + 4, stop - 1
    while pos < end:
        if len(cols) == MAX_COLUMNS:
            return None
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
        return compress(raw)
    except (ValueError, IndexError, struct.error, OverflowError):
        return None


def encode_columns(heads: list[bytes], columns: list[tuple[bytes, int, np.ndarray | bytes]]) -> list[bytes | None]:
    """``encode`` of k buckets of one column layout given as parts, without parsing their BSON, before
    zstd (``compress``): ``heads`` are the documents' bytes up to and including the ``data`` element's
    name (``<total length><_id, control, meta...>\x03data\x00``; ``data`` is the last element), each
    column is ``(name, bson type, values)`` where ``values`` is either the little-endian values of a
    dense column of a fixed-width type for the k buckets (an array led by k, ``n >= 1`` items each) or
    one column BSON document every bucket holds (bytes). ``compress`` of each result is what ``encode``
    returns for that document. One NumPy call per column and step for all k buckets: the per-column
    call overhead, not the values, was the cost of a bucket's full write.

    Verified: every fixed-width column's values are read back from what the stream holds for them
    (``_encode_values_many``) and every column given as BSON and stored otherwise than as its bytes
    (strings, a constant number) is decoded back from its encoding and compared with them; a bucket
    any of whose columns does not read back is None (never store what does not read back). The rest
    of the document (head, names, raw columns, the dense column layout) is copied or rebuilt by
    ``dense_column`` on decoding, independent of the values."""
    k = len(heads)
    if len(columns) > MAX_COLUMNS:
        return [None] * k
    streams: list[list[bytes]] = []
    for head in heads:
        out = bytearray((FORMAT_VERSION,))
        _put_varint(out, len(head))
        out += head
        _put_varint(out, 1)
        out.append(0)  # the suffix: the outer document's terminating NUL
        _put_varint(out, len(columns))
        streams.append([bytes(out)])
    failed: set[int] = set()
    for name, btype, values in columns:
        out = bytearray(name)
        out.append(0)
        if isinstance(values, bytes):
            at = len(out)
            _encode_column(out, values)
            if out[at] != KIND_RAW and decode_column(bytes(out), at) != values:
                return [None] * k
            piece = bytes(out)
            for parts in streams:
                parts.append(piece)
            continue
        raw = _value_rows(values, k)
        n = raw.shape[1] // WIDTH[btype]
        out.append(KIND_FIXED)
        out.append(btype)
        _put_varint(out, n)
        out.append(KEYS_DENSE)
        piece = bytes(out)
        for i, (parts, body) in enumerate(zip(streams, _encode_values_many(btype, raw, n), strict=True)):
            if body is None:
                failed.add(i)
                continue
            parts.append(piece)
            parts.append(body)
    return [None if i in failed else b"".join(parts) for i, parts in enumerate(streams)]


def compress(stream: bytes) -> bytes:
    """The stored form of a stream of ``encode_columns`` (``_pool``, then zstd with the thread's
    compressor: see ``compressing_with``). The pool, already entropy-coded, gets a zstd block of its
    own so its bytes do not share a literals table with the rest."""
    compressor = _compressor()
    pooled, static = _pool(stream, compressor.pool_code)
    if pooled is stream:
        return compressor.header + compressor.zc.compress(stream)
    pooled = _pack_control(pooled)
    body = len(pooled) - _get_varint(pooled, 1)[0]
    co = compressor.zc.compressobj(size=len(pooled))
    return ((compressor.static_header if static else compressor.header)
            + co.compress(pooled[:body]) + co.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)
            + co.compress(pooled[body:]) + co.flush())


# --- the pool (stored version 3) ------------------------------------------------------------------
# zstd codes the 1-byte zig-zag deltas of small-integer columns (TSBS's ten integral-double gauges)
# at ~125 B per 360-value column inside a bucket's frame (its sequences and a literals table shared
# with everything else) against an order-0 entropy of ~96 B. Pooled and Huffman-coded alone (one raw
# deflate block, Z_HUFFMAN_ONLY, in a zstd block of its own) the ten take ~1,050 B instead of ~1,275
# per bucket. Stored layout: ``u8 3 | varint len(pool) | varint k | k x (varint gap, varint n) | the
# version-2 stream after its version byte without the k pooled runs | pool``: a pooled run is the
# width byte (1) and the n values of an INT_DELTA / DOUBLE_INT column; gap is the count of stream
# bytes from the previous run's place to this one's; the pool is the raw deflate block of the runs'
# values in order. ``_unpool`` gives the version-2 stream back byte for byte (checked by ``_pool``
# before it is stored); every reader reads that.
_POOLABLE = (VAL_INT_DELTA, VAL_DOUBLE_INT)
POOL_MIN = 1024  # pooled bytes below this stay in the zstd frame (a deflate tree costs ~40-80 B)


def _values_end(buf: bytes, pos: int, btype: int, n: int) -> int:
    """End of the value codec + body at ``pos`` of a column of ``n`` values of ``btype``."""
    kind = buf[pos]
    pos += 1
    if kind in (VAL_INT_DOD, VAL_INT_DELTA, VAL_DOUBLE_INT):
        return pos + 1 + n * buf[pos]
    if kind == VAL_DOUBLE_XOR:
        return pos + 8 * n
    if kind == VAL_OID:
        pos += 1 + n * buf[pos]
        return pos + 1 + n * buf[pos]
    if kind == VAL_BYTES:
        return pos + n * WIDTH[btype]
    raise ValueError(f"unknown bucket column value codec {kind}")


def _column_end(buf: bytes, pos: int) -> int:
    """End of the column whose kind byte is at ``pos``."""
    kind = buf[pos]
    pos += 1
    if kind == KIND_RAW:
        size, pos = _get_varint(buf, pos)
        return pos + size
    if kind == KIND_STRINGS:
        return skip_strings(buf, pos)
    if kind != KIND_FIXED:
        raise ValueError(f"unknown bucket column kind {kind}")
    btype = buf[pos]
    n, pos = _get_varint(buf, pos + 1)
    if buf[pos] != KEYS_DENSE:
        pos += 1
        pos += 1 + n * buf[pos]
    else:
        pos += 1
    return _values_end(buf, pos, btype, n)


def _fixed_values(buf: bytes, pos: int) -> Iterator[tuple[int, int]]:
    """(position of the value codec, row count) of each fixed-width column of the version-2 stream
    whose column count is at ``pos``."""
    ncols, pos = _get_varint(buf, pos)
    for _ in range(ncols):
        at = buf.index(b"\0", pos) + 1
        if buf[at] == KIND_FIXED:
            n, vpos = _get_varint(buf, at + 2)
            if buf[vpos] != KEYS_DENSE:
                vpos += 1 + n * buf[vpos + 1]
            yield vpos + 1, n
        pos = _column_end(buf, at)


def _columns_at(buf: bytes, pos: int) -> int:
    """Position of the column count of a stream whose prefix length is at ``pos``."""
    n, pos = _get_varint(buf, pos)
    n, pos = _get_varint(buf, pos + n)
    return pos + n


def _pool(stream: bytes, code: PoolCode | None = None) -> tuple[bytes, bool]:
    """The version-3 form of a version-2 stream, or ``stream`` itself when fewer than ``POOL_MIN``
    bytes would be pooled or the form does not read back exactly (``_unpool``); and whether its pool
    is coded with ``code`` (without the code's block header: ``PoolCode.whole`` puts it back), which
    it is when that is shorter than the pool's own Huffman-only deflate block."""
    runs = [(at + 1, n) for at, n in _fixed_values(stream, _columns_at(stream, 1))
            if stream[at] in _POOLABLE and stream[at + 1] == 1]
    if sum(n for _, n in runs) < POOL_MIN:
        return stream, False
    head = bytearray()
    _put_varint(head, len(runs))
    body, pool = [], []
    prev = 1
    for at, n in runs:  # at: the width byte
        _put_varint(head, at - prev)
        _put_varint(head, n)
        body.append(stream[prev:at])
        pool.append(stream[at + 1:at + 1 + n])
        prev = at + 1 + n
    body.append(stream[prev:])
    values = b"".join(pool)
    co = zlib.compressobj(9, zlib.DEFLATED, -15, 9, zlib.Z_HUFFMAN_ONLY)
    block = co.compress(values) + co.flush()
    coded = code.encode(values) if code is not None else None
    static = coded is not None and len(coded) < len(block)
    if coded is not None and static:
        block = coded
    out = bytearray((POOLED_VERSION,))
    _put_varint(out, len(block))
    pooled = b"".join((out, head, *body, block))
    if _unpool(code.whole(pooled) if static and code is not None else pooled) != stream:
        return stream, False
    return pooled, static


def _unpool(buf: bytes) -> bytes:
    """The version-2 stream of a stored stream (version 3: its pool put back; 4: its control
    unpacked, then that; others: itself)."""
    if buf[0] == PACKED_VERSION:
        buf = unpack_control(buf)
    if buf[0] != POOLED_VERSION:
        return buf
    size, pos = _get_varint(buf, 1)
    end = len(buf) - size
    pool = zlib.decompressobj(-15).decompress(buf[end:])
    k, pos = _get_varint(buf, pos)
    runs = []
    for _ in range(k):
        gap, pos = _get_varint(buf, pos)
        n, pos = _get_varint(buf, pos)
        runs.append((gap, n))
    parts = [_VERSION_BYTE]
    taken = 0
    for gap, n in runs:
        parts.append(buf[pos:pos + gap])
        parts.append(_WIDTH_BYTE[1])
        parts.append(pool[taken:taken + n])
        pos += gap
        taken += n
    if taken != len(pool) or pos > end:
        raise ValueError("bucket codec pool does not match its runs")
    parts.append(buf[pos:end])
    return b"".join(parts)


_VERSION_BYTE = bytes((FORMAT_VERSION,))


# --- the pool's static code (stored version 6) ------------------------------------------------
# A pool's deflate block spends ~40-80 B on its Huffman tree (the pool 1,049 B per TSBS bucket against
# an order-0 entropy of 979). A collection's pools share their statistics, so the bucket dictionary's
# training also builds one static code from its sample pools (``train_pool_code``): the header of a
# deflate dynamic block (zlib's own, Huffman-only, over bytes of the samples' frequencies, every byte
# value at least once), stored with the dictionary (``_meta`` ``bpool:<ident>``). A pool coded with it
# is stored without that header: its first byte holds the header's last ``h % 8`` bits, and
# ``PoolCode.whole`` puts the header's whole bytes back in front, giving a deflate block zlib reads as
# before. ``_pool`` takes it when it is shorter than the pool's own block (TSBS: 1,049 -> ~1,034 B).
_CL_ORDER = (16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15)
_POOL_CODE = struct.Struct("<H")
_SHIFTS = np.arange(16, dtype=np.int64)


def _canonical(lengths: list[int]) -> list[int]:
    """Deflate's canonical Huffman codes (RFC 1951 3.2.2) of code ``lengths``."""
    count = [0] * 16
    for n in lengths:
        count[n] += 1
    count[0] = 0
    code, nxt = 0, [0] * 16
    for bits in range(1, 16):
        code = (code + count[bits - 1]) << 1
        nxt[bits] = code
    codes = [0] * len(lengths)
    for sym, n in enumerate(lengths):
        if n:
            codes[sym] = nxt[n]
            nxt[n] += 1
    return codes


def _reversed_bits(code: int, n: int) -> int:
    return int(f"{code:0{n}b}"[::-1], 2) if n else 0


class _BitReader:
    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0

    def bits(self, n: int) -> int:
        v = 0
        for i in range(n):
            v |= ((self.data[self.pos >> 3] >> (self.pos & 7)) & 1) << i
            self.pos += 1
        return v

    def symbol(self, table: dict[tuple[int, int], int]) -> int:
        code = n = 0
        while n < 16:
            code = (code << 1) | self.bits(1)
            n += 1
            sym = table.get((n, code))
            if sym is not None:
                return sym
        raise ValueError("bad code in a pool code's header")


def _dynamic_header(block: bytes) -> tuple[list[int], int]:
    """The literal/length code lengths of the deflate block ``block`` (final, dynamic Huffman), and
    the bit length of its header."""
    r = _BitReader(block)
    if r.bits(1) != 1 or r.bits(2) != 2:
        raise ValueError("a pool code is the header of a final dynamic deflate block")
    hlit, hdist, hclen = r.bits(5) + 257, r.bits(5) + 1, r.bits(4) + 4
    cl = [0] * 19
    for i in range(hclen):
        cl[_CL_ORDER[i]] = r.bits(3)
    table = {(n, c): sym for sym, (c, n) in enumerate(zip(_canonical(cl), cl, strict=True)) if n}
    lengths: list[int] = []
    while len(lengths) < hlit + hdist:
        sym = r.symbol(table)
        if sym < 16:
            lengths.append(sym)
        elif sym == 16:
            if not lengths:
                raise ValueError("bad repeat in a pool code's header")
            lengths += [lengths[-1]] * (3 + r.bits(2))
        else:
            lengths += [0] * (3 + r.bits(3) if sym == 17 else 11 + r.bits(7))
    return lengths[:hlit], r.pos


class PoolCode:
    """A static Huffman code for pools: the header of a final dynamic deflate block (``train_pool_code``
    makes one; stored as ``u16 LE bit length | its bytes``) whose literal codes are all non-empty."""

    __slots__ = ("stored", "_head", "_tail", "_tail_bits", "_lengths", "_codes", "_eob_code", "_eob_bits")

    def __init__(self, stored: bytes):
        stored = bytes(stored)
        (h,) = _POOL_CODE.unpack_from(stored)
        header = stored[2:2 + (h + 7) // 8]
        try:
            lengths, end = _dynamic_header(header)
        except IndexError:
            raise ValueError("a pool code's header is cut short") from None
        if end != h or len(lengths) < 257 or not all(lengths[:257]):
            raise ValueError("a pool code codes every byte value and the end of block")
        self.stored = stored
        self._head = header[:h // 8]  # whole bytes, put back before a stored pool
        self._tail_bits = h % 8
        self._tail = header[h // 8] & ((1 << self._tail_bits) - 1) if self._tail_bits else 0
        codes = [_reversed_bits(c, n) for c, n in zip(_canonical(lengths)[:257], lengths[:257], strict=True)]
        self._lengths = np.array(lengths[:256], np.uint8)
        self._codes = np.array(codes[:256], np.float32)  # < 2**15: exact, and exact times any 2**k
        self._eob_code, self._eob_bits = codes[256], lengths[256]

    def encode(self, values: bytes) -> bytes:
        """The deflate block of ``values`` with this code, without the header's whole bytes: its codes
        (and the end of block) after the header's last ``h % 8`` bits, in 32-bit words summed by
        ``bincount`` (the codes' bit fields never overlap; every sum < 2**47 stays exact in float64;
        the tables are 1-byte lengths and float32 codes: a gather of small items is the fast one)."""
        sym = np.frombuffer(values, np.uint8)
        n = self._lengths[sym]
        ends = np.cumsum(n, dtype=np.int32)  # < 2**31 bits: values of up to 128 MiB
        ends += self._tail_bits
        starts = ends - n
        eob = int(ends[-1]) if len(ends) else self._tail_bits
        total = eob + self._eob_bits
        fields = np.ldexp(self._codes[sym], starts & 31)
        acc = np.bincount(starts >> 5, weights=fields, minlength=(total >> 5) + 2).astype(np.uint64)
        acc[0] += np.uint64(self._tail)
        acc[eob >> 5] += np.uint64(self._eob_code << (eob & 31))
        out = acc & np.uint64(0xFFFFFFFF)
        out[1:] += acc[:-1] >> np.uint64(32)
        return out.astype("<u4").tobytes()[:(total + 7) >> 3]

    def whole(self, buf: bytes) -> bytes:
        """The version-3/4 stream ``buf`` with its pool coded by this code made a whole deflate block."""
        size, pos = _get_varint(buf, 1)
        end = len(buf) - size
        out = bytearray(buf[:1])
        _put_varint(out, len(self._head) + size)
        return b"".join((out, buf[pos:end], self._head, buf[end:]))


def train_pool_code(streams: list[bytes]) -> bytes | None:
    """A static pool code (``PoolCode``, as stored) from the pools of ``streams`` (``stream`` of a
    collection's values), or None when they hold none: zlib's Huffman-only block header for one
    block of ~12,000 bytes with the pools' byte frequencies, every byte value at least once."""
    pools = []
    for s in streams:
        if s[0] in (POOLED_VERSION, PACKED_VERSION):
            size = _get_varint(s, 1)[0]
            pools.append(zlib.decompressobj(-15).decompress(s[len(s) - size:]))
    if not pools:
        return None
    counts = np.bincount(np.frombuffer(b"".join(pools), np.uint8), minlength=256)
    scaled = np.maximum(1, np.rint(counts * (12_000 / counts.sum()))).astype(np.int64)
    co = zlib.compressobj(9, zlib.DEFLATED, -15, 9, zlib.Z_HUFFMAN_ONLY)
    block = co.compress(np.repeat(np.arange(256, dtype=np.uint8), scaled).tobytes()) + co.flush()
    try:
        h = _dynamic_header(block)[1]
    except (ValueError, IndexError):
        return None
    stored = _POOL_CODE.pack(h) + block[:(h + 7) // 8]
    try:
        PoolCode(stored)
    except (ValueError, IndexError):
        return None
    return stored


def _prefix_at(buf: bytes) -> int:
    """Position of the prefix length in a stored stream (after a version-3/4 stream's pool header)."""
    if buf[0] not in (POOLED_VERSION, PACKED_VERSION):
        return 1
    pos = _get_varint(buf, 1)[1]
    k, pos = _get_varint(buf, pos)
    if not k:
        return pos
    skip = _VARINTS.get(2 * k)
    if skip is None:
        skip = _VARINTS[2 * k] = re.compile(b"(?:[\\x80-\\xff]*[\\x00-\\x7f]){%d}" % (2 * k), re.S)
    found = skip.match(buf, pos)
    if found is None:
        raise ValueError("bucket codec pool header is cut short")
    return found.end()


_VARINTS: dict[int, re.Pattern[bytes]] = {}  # n -> a pattern matching n varints


def _without_pool(buf: bytes) -> bytes:
    """A stored stream without its pool (what zstd compresses with the dictionary)."""
    if buf[0] not in (POOLED_VERSION, PACKED_VERSION):
        return buf
    return buf[:len(buf) - _get_varint(buf, 1)[0]]


# --- the packed control (stored version 4) --------------------------------------------------------
# A bucket's control.min / control.max hold one value per measurement (TSBS: 20 integral gauges, 8 bytes
# each as BSON doubles). The dictionary codes the control's structure (names, types, lengths) almost
# for free, but not those doubles' bytes: 174 -> 141 B per TSBS bucket's frame. Version 4 is a version-3 stream whose
# prefix (``varint n | the BSON before data``) is stored as ``varint n' | varint m | varint g | g bytes:
# m x varint gap | m codes | the prefix without the m doubles``: each double directly in control.min or
# control.max whose 8 bytes are exactly those of float(c), c in 0..255, is taken out and stored as the
# byte c; gap is the count of prefix bytes from the end of the previous one to it. The gaps are the same
# for every bucket of one layout (the dictionary learns them; ``control_prefix`` keeps a ``struct`` per
# gap list, so putting the doubles back is one ``unpack_from`` and a join). The codes sit together
# after them: in place, between the names, they break the dictionary's matches (no gain at all).
# ``unpack_control`` gives the version-3 stream back byte for byte (checked by ``_pack_control``
# before it is stored); ``BucketReader`` unpacks only for ``head()``, a column read never.
_SMALL_DOUBLES = [struct.pack("<d", float(c)) for c in range(256)]
_SMALL_CODES = {b: c for c, b in enumerate(_SMALL_DOUBLES)}
_CONTROL_AT = 21  # where "\x03control\x00" starts in a v1 bucket (after _id: ObjectId)
_CONTROL_ELEMENT = b"\x03control\x00"
_GAP_STRUCTS: dict[bytes, struct.Struct] = {}  # gap varints -> the struct of the pieces between doubles
_GAP_STRUCTS_MAX = 256


def _control_slots(prefix: bytes) -> list[tuple[int, int]]:
    """(position, code) of each packable double directly in control.min / control.max of ``prefix``."""
    start = _CONTROL_AT + len(_CONTROL_ELEMENT)
    if prefix[_CONTROL_AT:start] != _CONTROL_ELEMENT or start + 4 > len(prefix):
        return []
    end = start + struct.unpack_from("<i", prefix, start)[0] - 1
    if end > len(prefix):
        return []
    slots = []
    pos = start + 4
    while pos < end:
        t = prefix[pos]
        v = prefix.index(b"\0", pos + 1) + 1
        size = _value_size(prefix, t, v)
        if size is None or v + size > end:
            return []
        if t == 0x03 and prefix[pos + 1:v - 1] in (b"min", b"max"):
            sub, sub_end = v + 4, v + size - 1
            find, codes, width = prefix.index, _SMALL_CODES.get, WIDTH.get
            while sub < sub_end:
                st = prefix[sub]
                sv = find(b"\0", sub + 1) + 1
                if st == 0x01:
                    code = codes(prefix[sv:sv + 8])
                    if code is not None:
                        slots.append((sv, code))
                    sub = sv + 8
                    continue
                ssize = width(st) or _value_size(prefix, st, sv)
                if ssize is None:
                    return []
                sub = sv + ssize
        pos = v + size
    return slots


def _pack_control(buf: bytes) -> bytes:
    """The version-4 form of a version-3 stream, or ``buf`` itself (nothing to pack, or the form
    does not unpack to ``buf`` exactly)."""
    try:
        at = _prefix_at(buf)
        n, pos = _get_varint(buf, at)
        prefix = buf[pos:pos + n]
        slots = _control_slots(prefix)
    except (ValueError, IndexError, struct.error):
        return buf
    if not slots:
        return buf
    gaps = bytearray()
    rest = []
    prev = 0
    for place, _ in slots:
        _put_varint(gaps, place - prev)
        rest.append(prefix[prev:place])
        prev = place + 8
    rest.append(prefix[prev:])
    region = bytearray()
    _put_varint(region, len(slots))
    _put_varint(region, len(gaps))
    region += gaps
    region += bytes(code for _, code in slots)
    region += b"".join(rest)
    out = bytearray((PACKED_VERSION,))
    out += buf[1:at]
    _put_varint(out, len(region))
    out += region
    out += buf[pos + n:]
    try:  # the rest of the stream is copied as it is: the prefix alone needs checking
        same = control_prefix(bytes(region)) == prefix
    except (ValueError, IndexError, struct.error):
        same = False
    return bytes(out) if same else buf


def control_prefix(region: bytes) -> bytes:
    """The prefix (the BSON before data) of a version-4 stream's packed prefix ``region``."""
    m, pos = _get_varint(region, 0)
    g, pos = _get_varint(region, pos)
    gaps = bytes(region[pos:pos + g])
    st = _GAP_STRUCTS.get(gaps)
    if st is None:
        fmt = []
        at = 0
        for _ in range(m):
            try:
                gap, at = _get_varint(gaps, at)
            except IndexError:
                raise ValueError("bucket codec packed control does not match its gaps") from None
            fmt.append(f"{gap}s")
        if at != len(gaps):
            raise ValueError("bucket codec packed control does not match its gaps")
        if len(_GAP_STRUCTS) >= _GAP_STRUCTS_MAX:
            _GAP_STRUCTS.clear()
        st = _GAP_STRUCTS[gaps] = struct.Struct("".join(fmt))
    pos += g
    codes = region[pos:pos + m]
    pos += m
    if len(codes) != m or pos + st.size > len(region):
        raise ValueError("bucket codec packed control does not match its gaps")
    parts: list[bytes] = [b""] * (2 * m)
    parts[0::2] = st.unpack_from(region, pos)
    parts[1::2] = [_SMALL_DOUBLES[c] for c in codes]
    parts.append(region[pos + st.size:])
    return b"".join(parts)


def unpack_control(buf: bytes) -> bytes:
    """The version-3 stream of a version-4 one (its control's doubles put back)."""
    at = _prefix_at(buf)
    n, pos = _get_varint(buf, at)
    prefix = control_prefix(buf[pos:pos + n])
    out = bytearray((POOLED_VERSION,))
    out += buf[1:at]
    _put_varint(out, len(prefix))
    return b"".join((out, prefix, buf[pos + n:]))


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
    """The column whose kind byte is at ``pos`` as ``columns_documents`` takes it: (bson type, its dense
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
    return columns_documents(columns, [prefix], suffix)[0]


def decode(packed: bytes, dec: Decompressor | None = None) -> bytes:
    """The exact BSON bytes given to ``encode``; ``dec``: the decompressor of the dictionary the value
    names (``frame_dictionary``), when it names one."""
    return decode_raw(_unpool(decompress(packed, dec)))
