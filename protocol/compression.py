"""OP_COMPRESSED (2012): the compressors this process can use, and (de)compression of whole messages.

A compressed frame is ``header(opCode=2012) | int32 originalOpcode | int32 uncompressedSize |
uint8 compressorId | compressed body``; the body is the original message without its header.
snappy, zstd and zlib are all available (python-snappy/cramjam and zstandard are dependencies); the
server advertises the ones a client asks for, in the client's order (see :func:`negotiate`).
"""

from __future__ import annotations

import struct
import threading
import zlib
from collections.abc import Callable, Iterable

import cramjam  # python-snappy's engine, used directly to decompress into a bounded buffer
import snappy
import zstandard

from tidemark.protocol.errors import ErrorCode
from tidemark.protocol.framing import HEADER, HEADER_SIZE, MAX_MESSAGE_SIZE, OpCode, ParseError

COMPRESSED_PREFIX = struct.Struct("<iiB")  # originalOpcode, uncompressedSize, compressorId

NOOP, SNAPPY, ZLIB, ZSTD = 0, 1, 2, 3


# A decompressor returns the original frame: a buffer of HEADER_SIZE + ``size`` bytes (the header is
# filled in by the caller) with the body decompressed after the header. ``size`` is the declared
# ``uncompressedSize``, already bounded by the 48 MB message limit; the buffer is allocated once, after
# the compressed data's own declared size (snappy preamble, zstd frame header) was checked against it,
# and never grown. ValueError when the data would produce more or fewer bytes: no decompressor ever
# allocates more than the declared size, so a bomb costs at most that.
Decompressor = Callable[[memoryview, int], bytearray]


def _frame_buffer(size: int) -> tuple[bytearray, memoryview]:
    frame = bytearray(HEADER_SIZE + size)
    return frame, memoryview(frame)[HEADER_SIZE:]


def _zlib_decompress(data: memoryview, size: int) -> bytearray:
    inflater = zlib.decompressobj()
    body = inflater.decompress(data, size + 1)  # max_length bounds the output; +1 detects excess
    if len(body) != size:
        raise ValueError(f"the data decompress to {'more' if len(body) > size else len(body)} bytes")
    frame, out = _frame_buffer(size)
    out[:] = body
    return frame


def _snappy_decompress(data: memoryview, size: int) -> bytearray:
    declared = cramjam.snappy.decompress_raw_len(data)  # the block's own length preamble
    if declared != size:
        raise ValueError(f"the snappy block declares {declared} bytes")
    frame, out = _frame_buffer(size)
    if cramjam.snappy.decompress_raw_into(data, out) != size:
        raise ValueError("the snappy block is shorter than it declares")
    return frame


def _zstd_decompress(data: memoryview, size: int) -> bytearray:
    declared = zstandard.frame_content_size(data)  # -1: the frame does not say
    if declared not in (-1, size):
        raise ValueError(f"the zstd frame declares {declared} bytes")
    frame, out = _frame_buffer(size)
    # stream_reader decompresses into ``out`` without trusting any size in the frame (decompress()
    # would allocate what the frame header declares, ignoring max_output_size).
    with _ZSTD.decompressor.stream_reader(data, read_across_frames=True) as reader:
        if reader.readinto(out) != size or reader.read(1):
            raise ValueError("the data do not decompress to the declared size")
    return frame


def _noop_decompress(data: memoryview, size: int) -> bytearray:
    if len(data) != size:
        raise ValueError(f"{len(data)} bytes, not the declared size")
    frame, out = _frame_buffer(size)
    out[:] = data
    return frame


class _ZstdContexts(threading.local):
    """zstandard's (de)compressor objects must not be used by two threads at once, and messages are
    (de)compressed on the event loop and in the thread pool: one pair per thread."""

    def __init__(self) -> None:
        self.compressor = zstandard.ZstdCompressor(level=1)
        self.decompressor = zstandard.ZstdDecompressor()


_ZSTD = _ZstdContexts()


def _zstd_compress(data: bytes) -> bytes:
    return _ZSTD.compressor.compress(data)


_CODECS: dict[str, tuple[int, Callable[[bytes], bytes], Decompressor]] = {
    "snappy": (SNAPPY, snappy.compress, _snappy_decompress),
    "zstd": (ZSTD, _zstd_compress, _zstd_decompress),
    "zlib": (ZLIB, lambda data: zlib.compress(data, 6), _zlib_decompress),
}
_BY_ID = {cid: (name, comp, decomp) for name, (cid, comp, decomp) in _CODECS.items()}
_BY_ID[NOOP] = ("noop", lambda data: data, _noop_decompress)

AVAILABLE: tuple[str, ...] = tuple(_CODECS)


def name_of(cid: int) -> str:
    """The compressor's name (``noop`` for id 0)."""
    return _BY_ID[cid][0]


def uncompressed_size(message: bytes | bytearray) -> int:
    """The size of the frame an OP_COMPRESSED ``message`` wraps (its declared uncompressedSize plus
    the header), read without decompressing."""
    size: int = COMPRESSED_PREFIX.unpack_from(message, HEADER_SIZE)[1]
    return HEADER_SIZE + size


def negotiate(requested: Iterable[object]) -> list[str]:
    """The compressors both sides support, in the client's order of preference."""
    return [name for name in requested if isinstance(name, str) and name in _CODECS]


def compressor_id(name: str) -> int:
    return _CODECS[name][0]


def decompress(message: bytes | bytearray) -> tuple[bytearray, int]:
    """Unwrap an OP_COMPRESSED frame: returns the original frame (its own header rebuilt) and the
    compressor id, so the reply can be compressed the same way. The declared ``uncompressedSize`` is
    checked against the message limit before anything is allocated, and the body is decompressed
    into one buffer of exactly that size (see ``Decompressor``)."""
    request_id, response_to = HEADER.unpack_from(message, 0)[1:3]
    if len(message) < HEADER_SIZE + COMPRESSED_PREFIX.size:
        raise ParseError(ErrorCode.ProtocolError, "OP_COMPRESSED message is too short", request_id=request_id)
    original_op, size, cid = COMPRESSED_PREFIX.unpack_from(message, HEADER_SIZE)
    if original_op == OpCode.OP_COMPRESSED:
        raise ParseError(ErrorCode.ProtocolError, "OP_COMPRESSED may not wrap OP_COMPRESSED", fatal=True)
    if size < 0 or size + HEADER_SIZE > MAX_MESSAGE_SIZE:
        raise ParseError(ErrorCode.ProtocolError, f"Invalid uncompressed size {size}", request_id=request_id)
    codec = _BY_ID.get(cid)
    if codec is None:
        raise ParseError(ErrorCode.ProtocolError, f"Unsupported compressor id {cid}", request_id=request_id)
    try:
        frame = codec[2](memoryview(message)[HEADER_SIZE + COMPRESSED_PREFIX.size :], size)
    except Exception:  # noqa: BLE001 - each library raises its own errors for corrupt input: all are the client's
        raise ParseError(
            ErrorCode.ProtocolError,
            f"Could not decompress the message with {codec[0]}: the data are corrupt or do not match "
            f"the declared uncompressed size {size}",
            request_id=request_id,
        ) from None
    HEADER.pack_into(frame, 0, HEADER_SIZE + size, request_id, response_to, original_op)
    return frame, cid


def compress(message: bytes, cid: int) -> bytes:
    """Wrap a complete frame in OP_COMPRESSED with compressor ``cid`` (keeps its ids)."""
    _, request_id, response_to, op_code = HEADER.unpack_from(message, 0)
    body = _BY_ID[cid][1](message[HEADER_SIZE:])
    total = HEADER_SIZE + COMPRESSED_PREFIX.size + len(body)
    return b"".join(
        (
            HEADER.pack(total, request_id, response_to, OpCode.OP_COMPRESSED),
            COMPRESSED_PREFIX.pack(op_code, len(message) - HEADER_SIZE, cid),
            body,
        )
    )
