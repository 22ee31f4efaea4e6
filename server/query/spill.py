"""External merge sort: how ``$sort`` (and a find's sort) honours ``allowDiskUse`` past its memory limit.

``sort_documents`` buffers up to the memory limit; with ``allowDiskUse`` it then writes the buffer,
sorted, as a *run* of BSON documents to an anonymous file in ``SPILL_DIR`` (the server sets it to
``<dbpath>/_tmp`` at start-up, mode 0700; the files are unlinked as they are created, so nothing is
left behind, even by a crash), and goes on. At the end the runs and the in-memory rest are merged
(``heapq.merge``: a run's documents in order, one per run in memory at a time; ties keep input order,
as runs are merged in the order they were written).
"""

from __future__ import annotations

import heapq
import os
import tempfile
from collections.abc import Callable, Generator, Iterable, Iterator
from typing import IO, Any

import bson

from tidemark.protocol.codec import CODEC_OPTIONS, encode_in_order
from tidemark.query.interrupt import tick

SPILL_DIR: str | None = None  # None: the system's temporary directory (pure use, tests)
_READ_BUFFER = 1024 * 1024


def configure(directory: str) -> None:
    """Spill under ``directory`` (created 0700 at the first spill)."""
    global SPILL_DIR
    SPILL_DIR = directory


def write_run(docs: Iterable[dict]) -> IO[bytes]:
    """Write ``docs`` (already sorted) to an anonymous temporary file; returns it rewound."""
    if SPILL_DIR is not None:
        os.makedirs(SPILL_DIR, mode=0o700, exist_ok=True)
    run = tempfile.TemporaryFile(dir=SPILL_DIR)  # noqa: SIM115 - owned by the merge below
    try:
        for doc in docs:
            tick()
            run.write(encode_in_order(doc))
        run.seek(0)
    except BaseException:  # an interruption (killOp, maxTimeMS) too: the file is closed, then re-raised
        run.close()
        raise
    return run


def _read_run(run: IO[bytes]) -> Generator[dict, None, None]:
    try:
        reader = open(run.fileno(), "rb", buffering=_READ_BUFFER, closefd=False)  # noqa: SIM115
        yield from bson.decode_file_iter(reader, CODEC_OPTIONS)
    finally:
        run.close()


def merge(runs: list[IO[bytes]], rest: list[dict], key: Callable[[Any], Any]) -> Iterator[dict]:
    """The spilled runs and the in-memory ``rest`` (all sorted by ``key``) as one sorted stream."""
    streams = [_read_run(run) for run in runs]
    try:
        yield from heapq.merge(*streams, rest, key=key)
    finally:
        for stream in streams:
            stream.close()
