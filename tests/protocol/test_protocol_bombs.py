"""Decompression bombs: a small OP_COMPRESSED frame must never make the server allocate more than
the declared uncompressedSize (itself bounded by the 48 MB message limit). The compressed data's own
size claims (zstd frame content size, snappy length preamble) are checked before any allocation, and
no decompressor produces more than the declared size."""

from __future__ import annotations

import struct
import tracemalloc
import zlib

import cramjam
import pytest
import zstandard

from tidemark.protocol import compression
from tidemark.protocol.framing import ParseError
from tidemark.protocol.messages import decode_message, encode_op_msg_request

GIB = 1 << 30
MB = 1 << 20


def _frame(body: bytes, declared: int, cid: int) -> bytes:
    prefix = struct.pack("<iiB", 2013, declared, cid)
    return struct.pack("<iiii", 16 + len(prefix) + len(body), 7, 0, 2012) + prefix + body


def _zeros_zstd(size: int, *, with_content_size: bool) -> bytes:
    cctx = zstandard.ZstdCompressor(level=1, write_content_size=with_content_size)
    chunk = bytes(MB)
    cobj = cctx.compressobj(size=size if with_content_size else -1)
    parts = [cobj.compress(chunk) for _ in range(size // MB)]
    parts.append(cobj.flush())
    return b"".join(parts)


def _snappy_bomb(declared_output: int, copies: int) -> bytes:
    """A raw snappy block: a length preamble, one literal byte, then 64-byte back-references."""
    out = bytearray()
    n = declared_output
    while True:  # varint preamble
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            break
    out += b"\x00a"  # literal of length 1
    out += b"\xfe\x01\x00" * copies  # copy, length 64, offset 1
    return bytes(out)


def _peak_during(fn) -> int:
    tracemalloc.start()
    try:
        fn()
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return peak


def _rejected(frame: bytes) -> ParseError:
    with pytest.raises(ParseError) as info:
        decode_message(frame)
    assert info.value.code == 17
    return info.value


def test_zstd_frame_declaring_one_gib_is_refused_before_allocating():
    body = _zeros_zstd(GIB, with_content_size=True)
    assert len(body) < 64 * 1024 and zstandard.frame_content_size(body) == GIB
    frame = _frame(body, 1000, compression.ZSTD)
    assert _peak_during(lambda: _rejected(frame)) < 4 * MB


def test_zstd_frame_without_content_size_stops_at_the_declared_size():
    body = _zeros_zstd(256 * MB, with_content_size=False)
    frame = _frame(body, 2 * MB, compression.ZSTD)
    assert _peak_during(lambda: _rejected(frame)) < 8 * MB


def test_snappy_preamble_is_checked_before_allocating():
    frame = _frame(_snappy_bomb(GIB, 1000), 1000, compression.SNAPPY)
    assert _peak_during(lambda: _rejected(frame)) < 4 * MB


@pytest.mark.slow
def test_zlib_bomb_stops_at_the_declared_size():
    deflate = zlib.compressobj(9)
    body = b"".join(deflate.compress(bytes(MB)) for _ in range(256)) + deflate.flush()
    frame = _frame(body, 2 * MB, compression.ZLIB)
    assert _peak_during(lambda: _rejected(frame)) < 16 * MB


def test_declared_size_over_the_message_limit_is_refused():
    original = encode_op_msg_request({"ping": 1, "$db": "a"}, 3)
    body = cramjam.snappy.compress_raw(original[16:]).read()
    _rejected(_frame(bytes(body), 48_000_000, compression.SNAPPY))
    _rejected(_frame(bytes(body), -1, compression.SNAPPY))


@pytest.mark.parametrize("name", ["zlib", "snappy", "zstd"])
def test_a_large_honest_message_still_decompresses(name):
    original = encode_op_msg_request({"insert": "c", "$db": "t"}, 9,
                                     sequences={"documents": [{"i": i, "pad": "x" * 1000} for i in range(5000)]})
    request = decode_message(compression.compress(original, compression.compressor_id(name)))
    assert len(request.command["documents"].decode()) == 5000
