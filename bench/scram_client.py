"""A minimal SCRAM-SHA-256 / SCRAM-SHA-1 client over a raw OP_MSG connection.

The replay loader and the connection benchmarks talk to the server with pre-encoded frames, not
through a driver; with ``--tidemark-auth`` they authenticate each connection with this client
(saslStart + saslContinue with ``skipEmptyExchange``, like the drivers). ``ClientKeys`` caches the
PBKDF2 result per (user, password, salt, iterations) as drivers do, so a benchmark measures the
server's handshake, not the client's key stretching. Tests use the step functions to build
malformed conversations.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import socket
import struct
from dataclasses import dataclass, field

import bson
from bson.binary import Binary

_HEADER = struct.Struct("<iiii")
OP_MSG = 2013
_HASH = {"SCRAM-SHA-1": "sha1", "SCRAM-SHA-256": "sha256"}


class AuthError(Exception):
    pass


def op_msg(command: dict, request_id: int = 1) -> bytes:
    body = b"\x00\x00\x00\x00\x00" + bson.encode(command)
    return _HEADER.pack(16 + len(body), request_id, 0, OP_MSG) + body


def read_reply(sock: socket.socket) -> dict:
    data = b""
    while len(data) < 4 or len(data) < int.from_bytes(data[:4], "little"):
        chunk = sock.recv(1 << 16)
        if not chunk:
            raise ConnectionError("server closed the connection")
        data += chunk
    return bson.decode(data[21:])


def command(sock: socket.socket, cmd: dict) -> dict:
    sock.sendall(op_msg(cmd))
    return read_reply(sock)


@dataclass
class ClientKeys:
    """Derived keys per credential, as drivers cache them."""

    cache: dict = field(default_factory=dict)

    def keys(self, mechanism: str, user: str, password: str, salt: bytes, iterations: int) -> tuple[bytes, bytes]:
        key = (mechanism, user, password, salt, iterations)
        if key not in self.cache:
            name = _HASH[mechanism]
            if mechanism == "SCRAM-SHA-1":
                secret = hashlib.md5(f"{user}:mongo:{password}".encode()).hexdigest().encode()
            else:
                secret = password.encode()
            salted = hashlib.pbkdf2_hmac(name, secret, salt, iterations)
            self.cache[key] = (hmac.digest(salted, b"Client Key", name), hmac.digest(salted, b"Server Key", name))
        return self.cache[key]


class Conversation:
    """One client side of a SCRAM conversation, message by message."""

    def __init__(self, user: str, password: str, mechanism: str = "SCRAM-SHA-256", keys: ClientKeys | None = None):
        self.user, self.password, self.mechanism = user, password, mechanism
        self.keys = keys or ClientKeys()
        self.nonce = base64.b64encode(os.urandom(24)).decode()
        name = user.replace("=", "=3D").replace(",", "=2C")
        self.first_bare = f"n={name},r={self.nonce}"
        self.server_signature = b""

    def first(self) -> bytes:
        return f"n,,{self.first_bare}".encode()

    def final(self, server_first: bytes) -> bytes:
        text = server_first.decode()
        attrs = dict(part.split("=", 1) for part in text.split(","))
        nonce, salt, iterations = attrs["r"], base64.b64decode(attrs["s"]), int(attrs["i"])
        if not nonce.startswith(self.nonce):
            raise AuthError("server nonce does not extend the client nonce")
        name = _HASH[self.mechanism]
        client_key, server_key = self.keys.keys(self.mechanism, self.user, self.password, salt, iterations)
        without_proof = f"c=biws,r={nonce}"
        auth_message = f"{self.first_bare},{text},{without_proof}".encode()
        signature = hmac.digest(hashlib.new(name, client_key).digest(), auth_message, name)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        self.server_signature = hmac.digest(server_key, auth_message, name)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final: bytes) -> None:
        if server_final != b"v=" + base64.b64encode(self.server_signature):
            raise AuthError("server signature mismatch")


def _steps(conv: Conversation, db: str):
    """The conversation as a generator: yields commands, receives their replies."""
    reply = yield {"saslStart": 1, "mechanism": conv.mechanism, "payload": Binary(conv.first()),
                   "options": {"skipEmptyExchange": True}, "$db": db}
    if reply.get("ok") != 1:
        raise AuthError(reply.get("errmsg"))
    reply = yield {"saslContinue": 1, "conversationId": reply["conversationId"],
                   "payload": Binary(conv.final(bytes(reply["payload"]))), "$db": db}
    if reply.get("ok") != 1:
        raise AuthError(reply.get("errmsg"))
    conv.verify(bytes(reply["payload"]))
    while not reply.get("done"):
        reply = yield {"saslContinue": 1, "conversationId": 1, "payload": Binary(b""), "$db": db}
        if reply.get("ok") != 1:
            raise AuthError(reply.get("errmsg"))


def authenticate(sock: socket.socket, user: str, password: str, *, db: str = "admin",
                 mechanism: str = "SCRAM-SHA-256", keys: ClientKeys | None = None) -> None:
    """Authenticate an open connection; AuthError when the server refuses."""
    steps = _steps(Conversation(user, password, mechanism, keys), db)
    try:
        cmd = next(steps)
        while True:
            cmd = steps.send(command(sock, cmd))
    except StopIteration:
        pass


async def command_async(reader, writer, cmd: dict) -> dict:
    writer.write(op_msg(cmd))
    header = await reader.readexactly(16)
    length = int.from_bytes(header[:4], "little")
    body = await reader.readexactly(length - 16)
    return bson.decode(body[5:])


async def authenticate_async(reader, writer, user: str, password: str, *, db: str = "admin",
                             mechanism: str = "SCRAM-SHA-256", keys: ClientKeys | None = None) -> None:
    """:func:`authenticate` over asyncio streams."""
    steps = _steps(Conversation(user, password, mechanism, keys), db)
    try:
        cmd = next(steps)
        while True:
            cmd = steps.send(await command_async(reader, writer, cmd))
    except StopIteration:
        pass
