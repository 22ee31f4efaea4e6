"""Selective reads of bucket-codec values (tag 4): the parts outside ``data`` and single columns,
without rebuilding the whole BSON document.

``bucket_codec.decode`` rebuilds a bucket's exact BSON (~200 us for 360 TSBS rows, most of it
re-creating the ``"0".."n-1"`` element headers of every column). A reader that needs only the
bucket's ``_id``/``control``/``meta`` (pruning, lastpoint) or a few columns (a ``$group`` over one
metric) pays for the zstd frame (~20 us) and then only for what it touches:

    reader = BucketReader(packed)           # one zstd decompression, nothing else parsed yet
    reader.head()                           # BSON bytes of the document without its ``data`` field
    reader.column_names()                   # ``data`` field names, in stored order
    reader.column_values(name)              # (bson type, numpy values) of a dense fixed-width column
    reader.column_bson(name)                # that column's exact BSON document bytes (any column)
    reader.document()                       # the whole BSON document (== bucket_codec.decode)

Contract (tested against ``bucket_codec.decode``): ``head()`` is the decoded document with the
``data`` element removed (fields in their stored order); ``column_bson(name)`` is byte-equal to the
value of ``data.<name>`` in the decoded document; ``column_values(name)`` is not None only for a
column stored with dense keys ``"0".."n-1"`` and one fixed-width type, and then the array's values
are exactly that column's values (dtype ``<f8`` doubles, ``<i8`` dates/int64, ``<i4`` int32,
``|u1`` bool, ``(n, 12) uint8`` ObjectIds, ``<u8`` timestamps). Arrays are read-only views or fresh arrays
owned by the caller; the reader holds no transaction.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

from tidemark.storage import bucket_codec as codec

_DATA_ELEMENT = b"\x03data\x00"
_INT32 = struct.Struct("<i")
# numpy dtypes of the values of a dense fixed-width column, by BSON type
_VALUE_DTYPES: dict[int, np.dtype[Any]] = {
    0x01: np.dtype("<f8"), 0x09: np.dtype("<i8"), 0x12: np.dtype("<i8"), 0x10: np.dtype("<i4"),
    0x08: np.dtype("u1"), 0x11: np.dtype("<u8")}


class BucketReader:
    """Lazy views over one tag-4 value (the bytes after the tag and length header)."""

    __slots__ = ("_buf", "_prefix", "_suffix", "_columns_at", "_columns", "_pooled")

    def __init__(self, packed: bytes, zd: codec.Decompressor | None = None):
        """``zd``: a decompressor holding the dictionary the value names, when it names one
        (``bucket_codec.frame_dictionary``; ``ValueCodec.bucket_decompressor`` picks it)."""
        buf = self._buf = codec.decompress(packed, zd)
        # a stored version-3 stream is unpooled (``bucket_codec._unpool``) only when a column is read
        self._pooled = buf[0] in (codec.POOLED_VERSION, codec.PACKED_VERSION)
        if not self._pooled and buf[0] not in codec.READABLE_VERSIONS:
            raise ValueError(f"unknown bucket codec format {buf[0]}")
        self._locate(codec._prefix_at(buf))
        self._columns: dict[bytes, tuple[int, int]] | None = None  # name -> (kind position, end)

    def _locate(self, at: int) -> None:
        buf = self._buf
        n, pos = codec._get_varint(buf, at)
        self._prefix = (pos, pos + n)
        n, pos = codec._get_varint(buf, pos + n)
        self._suffix = (pos, pos + n)
        self._columns_at = pos + n

    # --- outside data -----------------------------------------------------------------------
    def head(self) -> bytes:
        """The document without its ``data`` element (a valid BSON document, fields in order)."""
        buf = self._buf
        p0, p1 = self._prefix
        s0, s1 = self._suffix
        if buf[0] == codec.PACKED_VERSION:  # still packed (no column read yet): its control's doubles
            prefix = codec.control_prefix(buf[p0:p1])
            p0, p1 = 0, len(prefix)
        else:
            prefix = buf
        if prefix[p1 - len(_DATA_ELEMENT):p1] != _DATA_ELEMENT:
            raise ValueError("bucket codec prefix does not end with the data element header")
        body = prefix[p0 + 4:p1 - len(_DATA_ELEMENT)] + buf[s0:s1 - 1]
        return _INT32.pack(len(body) + 5) + body + b"\x00"

    # --- columns ------------------------------------------------------------------------------
    def _directory(self) -> dict[bytes, tuple[int, int]]:
        if self._columns is not None:
            return self._columns
        if self._pooled:
            self._buf = codec._unpool(self._buf)
            self._pooled = False
            self._locate(1)
        buf = self._buf
        ncols, pos = codec._get_varint(buf, self._columns_at)
        out = {}
        for _ in range(ncols):
            z = buf.index(b"\x00", pos)
            name = buf[pos:z]
            start = z + 1
            pos = codec._column_end(buf, start)
            out[name] = (start, pos)
        self._columns = out
        return out

    def column_names(self) -> list[str]:
        return [name.decode() for name in self._directory()]

    def column_values(self, name: str) -> tuple[int, np.ndarray] | None:
        """(bson type, values) of a dense fixed-width column; None for a column stored otherwise
        (sparse keys, mixed or variable-size types) or absent."""
        span = self._directory().get(name.encode())
        if span is None:
            return None
        buf = self._buf
        pos = span[0]
        if buf[pos] != codec.KIND_FIXED:
            return None
        btype = buf[pos + 1]
        count, pos = codec._get_varint(buf, pos + 2)
        if buf[pos] != codec.KEYS_DENSE:
            return None
        raw, _ = codec._decode_values(buf, pos + 1, btype, count)
        if btype == 0x07:
            return btype, raw.reshape(count, 12)
        dtype = _VALUE_DTYPES.get(btype)
        if dtype is None:
            return None
        return btype, raw.view(dtype)

    def column_bson(self, name: str) -> bytes | None:
        """The exact BSON document of column ``name`` (None when absent)."""
        span = self._directory().get(name.encode())
        if span is None:
            return None
        return codec.decode_column(self._buf, span[0])

    def document(self) -> bytes:
        """The whole BSON document (what ``bucket_codec.decode`` returns)."""
        self._directory()  # the version-2 stream
        return codec.decode_raw(self._buf)
