"""The "500 concurrent client connections, held, with no errors" check (performance.md §4).

Opens N raw connections at once, sends a ``hello`` on every one, then a ``ping`` on every one while all
are still open, and counts the replies that are ``ok: 1``. Raw sockets, not a driver pool, so the
connections really are concurrent.
"""

from __future__ import annotations

import asyncio
import struct
import time

import bson

_HEADER = struct.Struct("<iiii")


def _op_msg(request_id: int, command: dict) -> bytes:
    payload = b"\x00\x00\x00\x00\x00" + bson.encode(command)
    return _HEADER.pack(16 + len(payload), request_id, 0, 2013) + payload


async def _roundtrip(reader, writer, request_id: int, command: dict) -> dict:
    writer.write(_op_msg(request_id, command))
    header = await reader.readexactly(16)
    (length,) = struct.unpack_from("<i", header)
    body = await reader.readexactly(length - 16)
    return bson.decode(body[5:])


async def hold_connections(port: int, n: int, host: str = "127.0.0.1", timeout: float = 60.0) -> dict:
    t0 = time.perf_counter()
    errors: list[str] = []
    opened = await asyncio.gather(
        *(asyncio.wait_for(asyncio.open_connection(host, port), timeout) for _ in range(n)),
        return_exceptions=True,
    )
    streams = [s for s in opened if not isinstance(s, BaseException)]
    errors += [f"connect: {e!r}" for e in opened if isinstance(e, BaseException)][:5]
    ok = 0
    for round_no, command in enumerate(({"hello": 1, "$db": "admin"}, {"ping": 1, "$db": "admin"})):
        replies = await asyncio.gather(
            *(
                asyncio.wait_for(_roundtrip(r, w, round_no * n + i + 1, command), timeout)
                for i, (r, w) in enumerate(streams)
            ),
            return_exceptions=True,
        )
        good = [x for x in replies if isinstance(x, dict) and x.get("ok") == 1]
        errors += [repr(x)[:200] for x in replies if not (isinstance(x, dict) and x.get("ok") == 1)][:5]
        ok = len(good)
    for _, w in streams:
        w.close()
    return {
        "connections": n,
        "held": len(streams),
        "ok": ok,
        "errors": errors,
        "seconds": time.perf_counter() - t0,
    }


def check_connections(port: int, n: int = 500) -> dict:
    return asyncio.run(hold_connections(port, n))
