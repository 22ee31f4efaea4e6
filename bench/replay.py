"""The pre-encoded replay loader: sends cached insert frames over several connections (performance.md §2).

Each connection sends a frame and waits for its reply before sending another, so at most ``connections``
inserts are in flight; which frames a connection sends is ``--loader``'s choice (``bench.batch_order``:
the next frame of a shared queue, every n-th frame, or its own contiguous range). Every reply must be ``ok: 1`` with ``n`` equal to
the documents sent and no write errors; anything else stops the load and is reported.

Run in its own process (``python -m bench.replay ...``) so that the loader and the server can be pinned to
different cores; it writes one JSON object to stdout: rows, seconds, samples [(t, rows), ...], error.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import struct
import sys
import time

import bson

from bench.batch_order import LOADERS, assign
from bench.messages import BATCH, open_frames
from bench.scram_client import ClientKeys, authenticate_async

_HEADER = struct.Struct("<iiii")


class LoadError(Exception):
    pass


def check_reply(frame: bytes, expected: int) -> None:
    """Raise LoadError unless an OP_MSG reply acknowledges ``expected`` inserted documents."""
    (flags,) = struct.unpack_from("<I", frame, 16)
    if frame[20] != 0:
        raise LoadError(f"reply without a kind-0 body (section kind {frame[20]})")
    reply = bson.decode(frame[21 : len(frame) - (4 if flags & 1 else 0)])
    if reply.get("ok") != 1 or reply.get("writeErrors") or reply.get("n") != expected:
        text = repr(reply)
        raise LoadError(f"insert not acknowledged as {expected} documents: {text[:600]}")


async def replay(
    host: str,
    port: int,
    path: str,
    connections: int,
    limit: int | None = None,
    progress: bool = False,
    loader: str = "ordered",
    auth: tuple[str, str] | None = None,
) -> dict:
    mm, offsets = open_frames(path)
    if limit is not None:
        offsets = offsets[:limit]
    frames_of = assign(len(offsets), connections, loader)
    samples: list[tuple[float, int]] = []
    rows = 0
    bar = None
    if progress and offsets:
        from tqdm import tqdm

        last_offset, last_length = offsets[-1]
        total = (len(offsets) - 1) * BATCH + _count_documents(mm[last_offset : last_offset + last_length])
        bar = tqdm(total=total, unit="rows", unit_scale=True, desc="  replay", file=sys.stderr)

    async def worker(frames, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal rows
        try:
            for index in frames:
                offset, length = offsets[index]
                frame = mm[offset : offset + length]
                sent = _count_documents(frame)
                writer.write(frame)
                header = await reader.readexactly(16)
                (reply_len,) = struct.unpack_from("<i", header)
                reply = header + await reader.readexactly(reply_len - 16)
                check_reply(reply, sent)
                rows += sent
                samples.append((time.perf_counter() - t0, rows))
                if bar is not None:
                    bar.update(sent)
        finally:
            writer.close()

    streams = [await asyncio.open_connection(host, port) for _ in range(connections)]
    if auth is not None:  # --tidemark-auth: every connection authenticates first, as a driver's would
        keys = ClientKeys()
        for r, w in streams:
            await authenticate_async(r, w, auth[0], auth[1], keys=keys)
    t0 = time.perf_counter()  # connections are open (and authenticated): time only the load
    tasks = [asyncio.create_task(worker(f, r, w)) for f, (r, w) in zip(frames_of, streams, strict=True)]
    error = None
    try:
        await asyncio.gather(*tasks)
    except (LoadError, OSError, asyncio.IncompleteReadError) as exc:
        error = f"{type(exc).__name__}: {exc}"
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    seconds = time.perf_counter() - t0
    if bar is not None:
        bar.close()
    mm.close()
    return {"rows": rows, "seconds": seconds, "samples": samples, "error": error}


def _count_documents(frame: bytes) -> int:
    """Documents in the kind-1 section of one of our own frames (body first, then one sequence)."""
    (body_len,) = struct.unpack_from("<i", frame, 21)
    pos = 21 + body_len + 1 + 4 + len(b"documents\x00")
    n = 0
    end = len(frame)
    while pos < end:
        (size,) = struct.unpack_from("<i", frame, pos)
        pos += size
        n += 1
    return n


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="replay pre-encoded insert frames")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--file", required=True)
    p.add_argument("--connections", type=int, default=4)
    p.add_argument("--limit", type=int, default=None, help="send only the first N frames")
    p.add_argument("--loader", choices=LOADERS, default="ordered", help="which frames each connection sends")
    p.add_argument("--progress", action="store_true")
    p.add_argument("--user", default=None, help="authenticate each connection (SCRAM-SHA-256) as this user")
    p.add_argument("--password", default=None)
    args = p.parse_args(argv)
    import uvloop

    auth = (args.user, args.password) if args.user else None
    result = uvloop.run(
        replay(args.host, args.port, args.file, args.connections, args.limit, args.progress, args.loader, auth)
    )
    json.dump(result, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
