"""Null OP_MSG servers: the physical limits of the ingest path (performance.md §2).

Both accept the same messages Tidemark gets (the replay frames and pymongo's traffic), answer the
handshake, and acknowledge every insert with ``{n, ok: 1}`` without storing anything:

- ``count``  frames each message and counts the kind-1 documents by walking their int32 lengths;
- ``decode`` also decodes every document with pymongo's C ``bson`` (what any real server must at least do).

Run as ``python -m bench.nullserver --mode count|decode --port P``; it prints ``listening <port>`` once ready
and exits on SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import signal
import struct
import sys

import bson

from bench.messages import op_msg_sections
from tidemark.protocol.codec import CODEC_OPTIONS

OP_REPLY, OP_QUERY, OP_MSG = 1, 2004, 2013
_HEADER = struct.Struct("<iiii")
MAX_MESSAGE = 48_000_000


def hello_reply(connection_id: int) -> dict:
    return {
        "helloOk": True,
        "isWritablePrimary": True,
        "ismaster": True,
        "maxBsonObjectSize": 16 * 1024 * 1024,
        "maxMessageSizeBytes": MAX_MESSAGE,
        "maxWriteBatchSize": 100_000,
        "localTime": dt.datetime.now(dt.UTC).replace(tzinfo=None),
        "logicalSessionTimeoutMinutes": 30,
        "connectionId": connection_id,
        "minWireVersion": 0,
        "maxWireVersion": 21,
        "readOnly": False,
        "ok": 1.0,
    }


class NullServer(asyncio.Protocol):
    """One connection. ``decode`` selects the decoding variant."""

    connections = 0

    def __init__(self, decode: bool):
        self.decode = decode
        self.buf = bytearray()
        NullServer.connections += 1
        self.connection_id = NullServer.connections

    def connection_made(self, transport):
        self.transport = transport

    def data_received(self, data):
        buf = self.buf
        buf += data
        while len(buf) >= 16:
            (length,) = struct.unpack_from("<i", buf)
            if length < 16 or length > MAX_MESSAGE:
                self.transport.close()
                return
            if len(buf) < length:
                return
            frame = bytes(buf[:length])
            del buf[:length]
            reply = self.handle(frame)
            if reply is not None:
                self.transport.write(reply)

    def handle(self, frame: bytes) -> bytes | None:
        _, request_id, _, opcode = _HEADER.unpack_from(frame)
        if opcode == OP_QUERY:  # legacy handshake: flags, cstring ns, skip, return, query doc
            start = frame.index(b"\x00", 20) + 9
            (n,) = struct.unpack_from("<i", frame, start)
            cmd = bson.decode(frame[start : start + n])
            doc = bson.encode(self.command(cmd, {}))
            payload = struct.pack("<iqii", 8, 0, 0, 1) + doc  # flags AwaitCapable, cursor 0, from 0, 1 doc
            return _HEADER.pack(16 + len(payload), 0, request_id, OP_REPLY) + payload
        if opcode != OP_MSG:
            return None
        (flags,) = struct.unpack_from("<I", frame, 16)
        body, sequences = op_msg_sections(frame)
        cmd = bson.decode(body) if body else {}
        reply = self.command(cmd, sequences)
        if flags & 2:  # moreToCome: unacknowledged, no reply
            return None
        payload = b"\x00\x00\x00\x00\x00" + bson.encode(reply)
        return _HEADER.pack(16 + len(payload), 0, request_id, OP_MSG) + payload

    def command(self, cmd: dict, sequences: dict) -> dict:
        name = next(iter(cmd), "").lower()
        if name in ("hello", "ismaster"):
            return hello_reply(self.connection_id)
        if name == "insert":
            docs = sequences.get("documents")
            if docs is None:
                return {"n": len(cmd.get("documents", [])), "ok": 1.0}
            if self.decode:
                n = len(bson.decode_all(b"".join(docs), CODEC_OPTIONS))
            else:
                n = len(docs)
            return {"n": n, "ok": 1.0}
        if name == "buildinfo":
            return {"version": "7.0.0", "versionArray": [7, 0, 0, 0], "ok": 1.0}
        return {"ok": 1.0}


async def serve(mode: str, host: str, port: int) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: NullServer(mode == "decode"), host, port)
    print(f"listening {server.sockets[0].getsockname()[1]}", flush=True)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    server.close()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mode", choices=("count", "decode"), required=True)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    args = p.parse_args(argv)
    import uvloop

    uvloop.run(serve(args.mode, args.host, args.port))
    return 0


if __name__ == "__main__":
    sys.exit(main())
