"""OP_COMPRESSED: negotiation and round trips for every available compressor."""

from __future__ import annotations

import struct

import pytest

from tidemark.protocol import compression
from tidemark.protocol.framing import ParseError
from tidemark.protocol.messages import decode_message, encode_op_msg_request


def test_all_three_compressors_are_available_here():
    assert set(compression.AVAILABLE) == {"zlib", "snappy", "zstd"}


def test_negotiation_keeps_client_order_and_drops_unknown():
    assert compression.negotiate(["lz4", "zstd", "noop", "zlib"]) == ["zstd", "zlib"]
    assert compression.negotiate(["none"]) == []
    assert compression.negotiate([1, None]) == []


@pytest.mark.parametrize("name", ["zlib", "snappy", "zstd"])
def test_compressed_op_msg_decodes_like_the_original(name):
    original = encode_op_msg_request(
        {"insert": "c", "$db": "t"}, 8, sequences={"documents": [{"x": "y" * 500}] * 20}
    )
    wrapped = compression.compress(original, compression.compressor_id(name))
    assert len(wrapped) < len(original)
    assert struct.unpack_from("<i", wrapped, 12)[0] == 2012
    request = decode_message(wrapped)
    assert request.compressor_id == compression.compressor_id(name)
    assert request.request_id == 8
    assert len(request.command["documents"].decode()) == 20
    assert compression.decompress(wrapped) == (original, compression.compressor_id(name))


def test_noop_compressor_is_accepted():
    original = encode_op_msg_request({"ping": 1, "$db": "a"}, 3)
    wrapped = compression.compress(original, compression.NOOP)
    assert decode_message(wrapped).command == {"ping": 1, "$db": "a"}


def _wrapped(
    original: bytes, size_delta: int = 0, cid: int = compression.ZLIB, body: bytes | None = None
) -> bytes:
    import zlib

    payload = zlib.compress(original[16:]) if body is None else body
    prefix = struct.pack("<iiB", 2013, len(original) - 16 + size_delta, cid)
    return struct.pack("<iiii", 16 + len(prefix) + len(payload), 1, 0, 2012) + prefix + payload


def test_size_mismatch_unknown_compressor_and_corrupt_payload_are_errors():
    original = encode_op_msg_request({"ping": 1, "$db": "a"}, 3)
    for bad in (
        _wrapped(original, size_delta=5),
        _wrapped(original, cid=9),
        _wrapped(original, body=b"junk"),
    ):
        with pytest.raises(ParseError) as info:
            decode_message(bad)
        assert info.value.code == 17
