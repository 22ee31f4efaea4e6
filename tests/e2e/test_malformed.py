"""Malformed frames: the server answers an error or closes that one connection, and keeps serving others."""

from __future__ import annotations

import socket
import struct

import pytest
from harness.server import recv_frame

from tidemark.protocol import codec
from tidemark.protocol.messages import decode_reply, encode_op_msg_request

HEADER = struct.Struct("<iiii")


def _exchange(port: int, payload: bytes) -> dict | None:
    """Send raw bytes; return the reply document, or None if the server closed the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(payload)
        try:
            return decode_reply(recv_frame(sock))
        except (ConnectionError, OSError):
            return None


def _op_msg(body: bytes, request_id: int = 5, flags: int = 0) -> bytes:
    payload = struct.pack("<I", flags) + body
    return HEADER.pack(16 + len(payload), request_id, 0, 2013) + payload


PING = codec.encode({"ping": 1, "$db": "admin"})


def _assert_still_serving(client) -> None:
    assert client.admin.command("ping")["ok"] == 1.0


@pytest.fixture
def second_client(server):
    """A client connected before the garbage arrives: it must keep working throughout."""
    mongo = server.client()
    _assert_still_serving(mongo)
    yield mongo
    mongo.close()


@pytest.mark.parametrize(
    "payload",
    [
        pytest.param(b"\x05\x00\x00\x00\x01", id="length-below-header"),
        pytest.param(HEADER.pack(48_000_001, 1, 0, 2013), id="length-above-limit"),
        pytest.param(HEADER.pack(-5, 1, 0, 2013), id="negative-length"),
        pytest.param(HEADER.pack(16, 1, 0, 9999), id="unknown-opcode"),
        pytest.param(HEADER.pack(20, 1, 0, 2002) + b"\x00" * 4, id="legacy-op-insert"),
        pytest.param(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", id="garbage-http"),
        pytest.param(_op_msg(b"\x00" + PING, flags=0x4), id="illegal-required-flag"),
        pytest.param(_op_msg(b"\x00" + PING + b"\x00\x00\x00\x00", flags=0x1), id="bad-checksum"),
    ],
)
def test_fatal_garbage_closes_only_that_connection(server, second_client, payload):
    reply = _exchange(server.port, payload)
    assert reply is None or reply["ok"] == 0.0
    _assert_still_serving(second_client)


def test_short_header_then_silence_does_not_block_others(server, second_client):
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(b"\x10\x00")  # half a length field; the server must just wait for more
        _assert_still_serving(second_client)


@pytest.mark.parametrize(
    "body, code",
    [
        pytest.param(b"\x00" + b"\x05\x00\x00\x00\x00"[:-1] + b"\xff", 22, id="invalid-bson-terminator"),
        pytest.param(b"\x00" + b"\x0c\x00\x00\x00\x10a\x00\x01\x00", 22, id="truncated-bson-body"),
        pytest.param(
            b"\x00"
            + codec.encode({"insert": "c", "$db": "test"})
            + b"\x01"
            + struct.pack("<i", 1000)
            + b"documents\x00",
            17,
            id="truncated-kind-1-section",
        ),
        pytest.param(b"\x00" + PING + b"\x00" + PING, 40430, id="two-body-sections"),
        pytest.param(b"\x07" + PING, 40432, id="unknown-section-kind"),
        pytest.param(b"\x01" + struct.pack("<i", 9) + b"docs\x00", 40587, id="no-body-section"),
        pytest.param(
            b"\x00"
            + codec.encode({"insert": "c", "documents": [], "$db": "test"})
            + b"\x01"
            + struct.pack("<i", 14)
            + b"documents\x00",
            40433,
            id="sequence-duplicates-body-field",
        ),
        pytest.param(
            b"\x00" + PING + b"\x01" + struct.pack("<i", 18) + b"documents\x00" + b"\x05\x00\x00\x00",
            22,
            id="invalid-bson-in-sequence",
        ),
    ],
)
def test_malformed_op_msg_gets_an_error_reply_and_connection_stays_usable(server, second_client, body, code):
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(_op_msg(body, request_id=77))
        frame = recv_frame(sock)
        assert int.from_bytes(frame[8:12], "little") == 77
        reply = decode_reply(frame)
        assert reply["ok"] == 0.0 and reply["code"] == code, reply
        sock.sendall(encode_op_msg_request({"ping": 1, "$db": "admin"}, 78))
        assert decode_reply(recv_frame(sock)) == {"ok": 1.0}
    _assert_still_serving(second_client)


def test_valid_checksum_is_accepted(server):
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(encode_op_msg_request({"ping": 1, "$db": "admin"}, 1, checksum=True))
        frame = recv_frame(sock)
    assert int.from_bytes(frame[16:20], "little") == 0, "replies never carry a checksum"
    assert decode_reply(frame) == {"ok": 1.0}


def test_more_to_come_gets_no_reply(server):
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(encode_op_msg_request({"ping": 1, "$db": "admin"}, 1, flags=0x2))
        sock.sendall(encode_op_msg_request({"buildInfo": 1, "$db": "admin"}, 2))
        frame = recv_frame(sock)
    assert int.from_bytes(frame[8:12], "little") == 2, "the first reply answers the second request"
    assert decode_reply(frame)["version"] == "7.0.0"


def test_pipelined_requests_are_answered_in_order(server):
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(b"".join(encode_op_msg_request({"ping": 1, "$db": "admin"}, i) for i in range(1, 51)))
        order = [int.from_bytes(recv_frame_exact(sock)[8:12], "little") for _ in range(50)]
    assert order == list(range(1, 51))


def recv_frame_exact(sock: socket.socket) -> bytes:
    header = _recv_n(sock, 4)
    return header + _recv_n(sock, int.from_bytes(header, "little") - 4)


def _recv_n(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data
