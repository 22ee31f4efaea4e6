"""OP_COMPRESSED (2012): the compressors this process can use, and (de)compression of whole messages.

A compressed frame is ``header(opCode=2012) | int32 originalOpcode | int32 uncompressedSize |
uint8 compressorId | compressed body``; the body is the original message without its header.
zlib is always available; snappy and zstd only when their libraries import. The server
advertises only what is available (see :func:`negotiate`).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable, Iterable

from protocol.errors import ErrorCode
from protocol.framing import HEADER, HEADER_SIZE, MAX_MESSAGE_SIZE, OpCode, ParseError

COMPRESSED_PREFIX = struct.Struct("<iiB")  # originalOpcode, uncompressedSize, compressorId

NOOP, SNAPPY, ZLIB, ZSTD = 0, 1, 2, 3


def _zlib_decompress(data: bytes, size: int) -> bytes:
    inflater = zlib.decompressobj()
    out = inflater.decompress(data, size + 1)  # +1 so an oversized payload is detectable
    return out


def _build_codecs() -> dict[str, tuple[int, Callable[[bytes], bytes], Callable[[bytes, int], bytes]]]:
    codecs: dict[str, tuple[int, Callable[[bytes], bytes], Callable[[bytes, int], bytes]]] = {
        "zlib": (ZLIB, lambda data: zlib.compress(data, 6), _zlib_decompress),
    }
    try:
        import snappy
    except ImportError:  # pragma: no cover - the package is a declared dependency
        pass
    else:
        codecs["snappy"] = (SNAPPY, snappy.compress, lambda data, size: snappy.uncompress(data))
    try:
        import zstandard
    except ImportError:  # pragma: no cover
        pass
    else:
        # zstandard's (de)compressor objects are not thread-safe; these closures run on the event loop.
        compressor = zstandard.ZstdCompressor(level=1)
        decompressor = zstandard.ZstdDecompressor()
        codecs["zstd"] = (
            ZSTD,
            compressor.compress,
            lambda data, size: decompressor.decompress(data, max_output_size=size + 1),
        )
    return codecs


_CODECS = _build_codecs()
_BY_ID = {cid: (name, comp, decomp) for name, (cid, comp, decomp) in _CODECS.items()}
_BY_ID[NOOP] = ("noop", lambda data: data, lambda data, size: data)

AVAILABLE: tuple[str, ...] = tuple(name for name in ("snappy", "zstd", "zlib") if name in _CODECS)


def negotiate(requested: Iterable[object]) -> list[str]:
    """The compressors both sides support, in the client's order of preference."""
    return [name for name in requested if isinstance(name, str) and name in _CODECS]


def compressor_id(name: str) -> int:
    return _CODECS[name][0]


def decompress(message: bytes) -> tuple[bytes, int]:
    """Unwrap an OP_COMPRESSED frame: returns the original frame (its own header rebuilt) and the
    compressor id, so the reply can be compressed the same way."""
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
        body = codec[2](message[HEADER_SIZE + COMPRESSED_PREFIX.size :], size)
    except Exception as exc:
        raise ParseError(
            ErrorCode.ProtocolError,
            f"Could not decompress message with {codec[0]}: {exc}",
            request_id=request_id,
        ) from None
    if len(body) != size:
        raise ParseError(
            ErrorCode.ProtocolError,
            f"Decompressed message was {len(body)} bytes, expected {size}",
            request_id=request_id,
        )
    header = HEADER.pack(HEADER_SIZE + size, request_id, response_to, original_op)
    return header + body, cid


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
