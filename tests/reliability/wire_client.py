"""A raw wire client for reliability tests: pipelined OP_MSG commands on one socket, no driver
(a driver would close cursors, retry, or refuse to send what a hostile client sends)."""

from __future__ import annotations

import socket
from typing import Any

from tidemark.protocol.messages import decode_reply, encode_op_msg_request


class WireClient:
    def __init__(self, port: int, timeout: float = 30.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self._next_id = 1
        self._buffer = bytearray()

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def send(self, frame: bytes) -> None:
        self.sock.sendall(frame)

    def command_frame(self, command: dict[str, Any], **kw: Any) -> bytes:
        self._next_id += 1
        return encode_op_msg_request(command, self._next_id, **kw)

    def recv_frame(self) -> bytes:
        """One complete frame (raises ConnectionError when the server closes the connection)."""
        buffer = self._buffer
        while len(buffer) < 4 or len(buffer) < int.from_bytes(buffer[:4], "little"):
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("server closed the connection")
            buffer += chunk
        length = int.from_bytes(buffer[:4], "little")
        frame = bytes(buffer[:length])
        del buffer[:length]
        return frame

    def recv(self) -> dict[str, Any]:
        return decode_reply(self.recv_frame())

    def command(self, command: dict[str, Any], **kw: Any) -> dict[str, Any]:
        self.send(self.command_frame(command, **kw))
        return self.recv()

    def pipeline(self, commands: list[dict[str, Any]], window: int = 32) -> list[dict[str, Any]]:
        """Send ``commands`` keeping up to ``window`` in flight; the replies in order."""
        replies: list[dict[str, Any]] = []
        sent = 0
        while len(replies) < len(commands):
            while sent < len(commands) and sent - len(replies) < window:
                self.send(self.command_frame(commands[sent]))
                sent += 1
            replies.append(self.recv())
        return replies
