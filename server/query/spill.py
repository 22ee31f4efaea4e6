"""Spilling to disk. External merge sort: how ``$sort`` (and a find's sort) honours ``allowDiskUse`` past its memory limit.

``sort_documents`` buffers up to the memory limit; with ``allowDiskUse`` it then writes the buffer,
sorted, as a *run* of BSON documents to an anonymous file in ``SPILL_DIR`` (the server sets it to
``<dbpath>/_tmp`` at start-up, mode 0700; the files are unlinked as they are created, so nothing is
left behind, even by a crash), and goes on. At the end the runs and the in-memory rest are merged
(``heapq.merge``: a run's documents in order, one per run in memory at a time; ties keep input order,
as runs are merged in the order they were written).

A read with metadata (``docmeta.DocMeta``: textScore, geoNearDistance/Point, indexKey, sortKey...) keeps
it through a spill, as mongod's sorter spills a Document with its metadata: each document of a run is
followed by its metadata document (taken out of the table, so a spilled document is held by nothing in
memory), and reading the run back gives the new document the same metadata before the merge keys it.

A run may be written of documents already encoded (``bytes``: written as they are) and read back as
its documents' bytes (``records``): the time-series bounded sort (``timeseries.time_sort``) holds its
measurements as BSON and spills them that way, each record carrying its sort key, and merges the runs
itself as its edge lets them go (mongod's bounded sorter adds each spilled run to one merge).

A ``Spool`` is the same file without the sort: documents written once, in their order, and read back in
that order as often as needed — a ``$setWindowFields`` partition past its memory limit (``windows.py``).
"""

from __future__ import annotations

import heapq
import os
import tempfile
from collections.abc import Callable, Generator, Iterable, Iterator
from typing import IO, Any

import bson

from tidemark.protocol.codec import CODEC_OPTIONS, encode_in_order
from tidemark.query.docmeta import DocMeta
from tidemark.query.interrupt import note_disk_use, tick
from tidemark.query.memory import approx_size

_ROW_OVERHEAD = 200  # bytes charged per buffered row beside its document (its key, the row itself)
SPILL_DIR: str | None = None  # None: the system's temporary directory (pure use, tests)
_READ_BUFFER = 1024 * 1024


def configure(directory: str) -> None:
    """Spill under ``directory`` (created 0700 at the first spill)."""
    global SPILL_DIR
    SPILL_DIR = directory


def new_file() -> IO[bytes]:
    """An anonymous temporary file in ``SPILL_DIR`` (unlinked already: a crash leaves nothing)."""
    note_disk_use()  # the operation's profile entry and slow-query line say usedDisk
    if SPILL_DIR is not None:
        os.makedirs(SPILL_DIR, mode=0o700, exist_ok=True)
    return tempfile.TemporaryFile(dir=SPILL_DIR)  # noqa: SIM115 - the caller owns it


def write_run(docs: Iterable[dict | bytes], meta: DocMeta | None = None, stats: Any = None, size: int = 0) -> IO[bytes]:
    """Write ``docs`` (already sorted; a document already encoded, ``bytes``, as it is) to an anonymous
    temporary file; returns it rewound. With the
    read's ``meta``, each document's metadata goes with it (read back by ``merge`` given the same).
    ``stats``: the spilling stage's ``pipeline.StageStats``, told the spill (``size``: the bytes the
    stage counted in memory for these documents; the file's own size is its storage size)."""
    run = new_file()
    records = 0
    try:
        for doc in docs:
            tick()
            run.write(doc if type(doc) is bytes else encode_in_order(doc))
            records += 1
            if meta is not None:
                run.write(encode_in_order(meta.take(doc)))
        if stats is not None:
            storage = run.tell()
            stats.note_spill(records, size or storage, storage)
        run.seek(0)
    except BaseException:  # an interruption (killOp, maxTimeMS) too: the file is closed, then re-raised
        run.close()
        raise
    return run


def _read_run(run: IO[bytes], meta: DocMeta | None) -> Generator[dict, None, None]:
    try:
        reader = open(run.fileno(), "rb", buffering=_READ_BUFFER, closefd=False)  # noqa: SIM115
        decoded = bson.decode_file_iter(reader, CODEC_OPTIONS)
        if meta is None:
            yield from decoded
            return
        for doc in decoded:
            meta.give(doc, next(decoded))  # before the merge's key reads a $meta field of it
            yield doc
    finally:
        run.close()


def records(run: IO[bytes]) -> Generator[bytes, None, None]:
    """The documents of ``run`` (``write_run``'s file) as their BSON bytes, in order; the file is closed
    at the end (or when the generator is closed)."""
    try:
        reader = open(run.fileno(), "rb", buffering=_READ_BUFFER, closefd=False)  # noqa: SIM115
        with reader:
            while head := reader.read(4):
                size = int.from_bytes(head, "little")
                yield head + reader.read(size - 4)
    finally:
        run.close()


def merge(runs: list[IO[bytes]], rest: list[dict], key: Callable[[Any], Any],
          meta: DocMeta | None = None) -> Iterator[dict]:
    """The spilled runs and the in-memory ``rest`` (all sorted by ``key``) as one sorted stream;
    ``meta``: the table the runs were written with."""
    streams = [_read_run(run, meta) for run in runs]
    try:
        yield from heapq.merge(*streams, rest, key=key)
    finally:
        for stream in streams:
            stream.close()


def sort_rows(rows: Iterable[tuple[Any, Any, dict]], key_of: Callable[[Any, dict], Any], limit: int,
              allow_disk_use: bool, over_limit: Callable[[], Exception],
              stats: Any = None) -> Iterator[tuple[Any, Any, dict]]:
    """``(key, value, document)`` rows in ``key`` order, ties in input order, as mongod's Sorter gives
    them (a stage that sorts on a computed value: $bucketAuto's groupBy, $setWindowFields' partition):
    the rows are buffered, and past ``limit`` bytes either ``over_limit()`` is raised (no allowDiskUse)
    or the buffer is written sorted as a run of ``{v: value, d: document}`` and buffering starts again;
    the runs and the rest are then merged, one row per run in memory (``key_of(value, document)`` gives
    a row read back its key again). Buffers everything before it returns. ``stats``: the stage's
    ``pipeline.StageStats``, told each spill."""
    buffered: list[tuple[Any, Any, dict]] = []
    runs: list[IO[bytes]] = []
    used = 0
    try:
        for row in rows:
            buffered.append(row)
            used += _ROW_OVERHEAD + approx_size(row[2], limit)
            if used > limit:
                if not allow_disk_use:
                    raise over_limit()
                buffered.sort(key=_row_key)
                runs.append(write_run(({"v": v, "d": d} for _, v, d in buffered), None, stats, used))
                buffered, used = [], 0
    except BaseException:
        for run in runs:
            run.close()
        raise
    buffered.sort(key=_row_key)
    if not runs:
        return iter(buffered)
    merged = merge(runs, [{"v": v, "d": d} for _, v, d in buffered], lambda w: key_of(w["v"], w["d"]))
    return ((key_of(w["v"], w["d"]), w["v"], w["d"]) for w in merged)


def _row_key(row: tuple) -> Any:
    return row[0]


class Spool:
    """Documents written in order to one anonymous file in ``SPILL_DIR`` and read back in that order, as
    many times as needed (one reading at a time; nothing is written after the first reading). Holds
    nothing in memory but a read buffer; ``close()`` drops the file (a crash leaves nothing: unlinked)."""

    def __init__(self, docs: Iterable[dict] = (), stats: Any = None):
        self._file = new_file()
        self._count = 0
        self._stats = stats  # the spilling stage's ``pipeline.StageStats``, told the spill when closed
        try:
            self.extend(docs)
        except BaseException:  # an interruption too: the file is closed, then re-raised
            self._file.close()
            raise

    def extend(self, docs: Iterable[dict]) -> None:
        write = self._file.write
        for doc in docs:
            tick()
            write(encode_in_order(doc))
            self._count += 1

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[dict]:
        self._file.seek(0)  # (flushes what was written)
        reader = open(self._file.fileno(), "rb", buffering=_READ_BUFFER, closefd=False)  # noqa: SIM115
        with reader:
            for doc in bson.decode_file_iter(reader, CODEC_OPTIONS):
                tick()  # (a spilled partition is read once per window function: maxTimeMS and killOp reach it)
                yield doc

    def close(self) -> None:
        if self._stats is not None and not self._file.closed:
            storage = self._file.seek(0, os.SEEK_END)
            self._stats.note_spill(self._count, storage, storage)
        self._file.close()
