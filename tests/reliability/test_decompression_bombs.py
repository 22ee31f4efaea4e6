"""Decompression bombs against a running server: a 32 KB zstd frame whose header declares 1 GiB and a
44 MB snappy frame that would inflate to ~900 MB get 17 ProtocolError (or a closed connection), the
server's peak RSS grows by less than 64 MB, and the next client is served as usual."""

from __future__ import annotations

import struct

import pytest
import zstandard
from wire_client import WireClient

from tidemark.protocol import compression

MB = 1 << 20


def _frame(body: bytes, declared: int, cid: int) -> bytes:
    prefix = struct.pack("<iiB", 2013, declared, cid)
    return struct.pack("<iiii", 16 + len(prefix) + len(body), 5, 0, 2012) + prefix + body


def _zstd_gib() -> bytes:
    cobj = zstandard.ZstdCompressor(level=1).compressobj(size=1 << 30)
    zero = bytes(MB)
    return b"".join(cobj.compress(zero) for _ in range(1024)) + cobj.flush()


def _snappy_bomb(size: int) -> bytes:
    copies = size // 3
    preamble = bytearray()
    n = copies * 64 + 1
    while True:
        byte = n & 0x7F
        n >>= 7
        preamble.append(byte | (0x80 if n else 0))
        if not n:
            break
    return bytes(preamble) + b"\x00a" + b"\xfe\x01\x00" * copies


def _peak_rss(pid: int) -> int:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


@pytest.mark.slow
@pytest.mark.commands("ping")
def test_bombs_are_refused_without_allocating(start_server):
    srv = start_server()
    before = _peak_rss(srv.process.pid)
    zstd_body = _zstd_gib()
    assert len(zstd_body) < 64 * 1024
    snappy_body = _snappy_bomb(44 * MB)
    for body, declared, cid in ((zstd_body, 1000, compression.ZSTD), (zstd_body, 40 * MB, compression.ZSTD),
                                (snappy_body, 40 * MB, compression.SNAPPY)):
        with WireClient(srv.port) as wire:
            wire.send(_frame(body, declared, cid))
            try:
                reply = wire.recv()
            except ConnectionError:
                continue  # closing the connection is an acceptable answer
            assert reply["ok"] == 0.0 and reply["code"] == 17, reply
    grown = _peak_rss(srv.process.pid) - before
    # the 44 MB frame itself has to be received (one copy, no more): the bombs add nothing on top
    assert grown < 64 * MB, f"peak RSS grew by {grown / MB:.0f} MB"
    with WireClient(srv.port) as wire:
        assert wire.command({"ping": 1, "$db": "admin"})["ok"] == 1.0
    client = srv.client()
    client.t.c.insert_one({"ok": True})
    assert client.t.c.count_documents({}) == 1
    client.close()
