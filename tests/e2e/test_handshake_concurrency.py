"""Many simultaneous connections are accepted and served (performance.md: 500 held, no errors)."""

from __future__ import annotations

import socket

import pytest
from harness.server import recv_frame

from tidemark.protocol.messages import decode_reply, encode_op_msg_request

CONNECTIONS = 500


@pytest.mark.commands("hello", "serverStatus")
def test_500_concurrent_connections_handshake_and_are_counted(server, client):
    sockets = [socket.create_connection(("127.0.0.1", server.port), timeout=30) for _ in range(CONNECTIONS)]
    try:
        for i, sock in enumerate(sockets):
            sock.sendall(encode_op_msg_request({"hello": 1, "$db": "admin"}, i + 1))
        replies = [decode_reply(recv_frame(sock)) for sock in sockets]
        assert all(reply["ok"] == 1.0 and reply["isWritablePrimary"] for reply in replies)
        assert len({reply["connectionId"] for reply in replies}) == CONNECTIONS
        status = client.admin.command("serverStatus")
        assert status["connections"]["current"] >= CONNECTIONS
    finally:
        for sock in sockets:
            sock.close()
