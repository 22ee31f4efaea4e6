"""Per-record value compression with a 1-byte tag, so every stored value says how to read it.

A database written with one ``--storageCompressor`` stays readable after a restart with another:
the compressor only decides how *new* values are written. Values shorter than ``MIN_COMPRESS``
bytes, or values that do not shrink, are stored raw (tag 0).

    tag 0x00  raw bytes follow
    tag 0x01  one zstd frame follows (the frame header records the content size)
    tag 0x02  raw snappy block follows (it starts with the uncompressed length as a varint)
"""

from __future__ import annotations

import threading

import snappy
import zstandard

TAG_RAW = 0x00
TAG_ZSTD = 0x01
TAG_SNAPPY = 0x02

COMPRESSORS = ("none", "snappy", "zstd")
MIN_COMPRESS = 64
ZSTD_LEVEL = 3

_local = threading.local()


def _zstd_compressor() -> zstandard.ZstdCompressor:
    # zstandard compressor/decompressor objects are not thread-safe: one per thread.
    c = getattr(_local, "zc", None)
    if c is None:
        c = _local.zc = zstandard.ZstdCompressor(level=ZSTD_LEVEL, write_checksum=False)
    return c


def _zstd_decompressor() -> zstandard.ZstdDecompressor:
    d = getattr(_local, "zd", None)
    if d is None:
        d = _local.zd = zstandard.ZstdDecompressor()
    return d


class ValueCodec:
    """Packs values for storage with the configured compressor; unpacks values of any tag."""

    def __init__(self, compressor: str = "zstd"):
        if compressor not in COMPRESSORS:
            raise ValueError(f"unknown storage compressor {compressor!r}; expected one of {COMPRESSORS}")
        self.compressor = compressor

    def pack(self, data: bytes) -> bytes:
        if self.compressor != "none" and len(data) >= MIN_COMPRESS:
            if self.compressor == "zstd":
                packed = _zstd_compressor().compress(data)
                tag = TAG_ZSTD
            else:
                packed = snappy.compress(data)
                tag = TAG_SNAPPY
            if len(packed) + 1 < len(data):
                return bytes((tag,)) + packed
        return b"\x00" + data

    @staticmethod
    def unpack(stored: bytes) -> bytes:
        tag = stored[0]
        if tag == TAG_RAW:
            return stored[1:]
        if tag == TAG_ZSTD:
            return _zstd_decompressor().decompress(stored[1:])
        if tag == TAG_SNAPPY:
            return snappy.uncompress(stored[1:])
        raise ValueError(f"stored value has an unknown compression tag {tag:#x}")

    @staticmethod
    def unpacked_size(stored: bytes) -> int:
        """Length of the original value, read from the header without decompressing."""
        tag = stored[0]
        if tag == TAG_RAW:
            return len(stored) - 1
        if tag == TAG_ZSTD:
            size = zstandard.frame_content_size(stored[1:])
            if size >= 0:
                return size
            return len(_zstd_decompressor().decompress(stored[1:]))
        if tag == TAG_SNAPPY:
            size = shift = 0
            for byte in stored[1:11]:
                size |= (byte & 0x7F) << shift
                shift += 7
                if not byte & 0x80:
                    return size
        raise ValueError(f"stored value has an unknown compression tag {tag:#x}")
