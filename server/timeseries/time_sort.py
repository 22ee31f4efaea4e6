"""A ``$sort`` on the time field (a find's ``sort``, with or without ``limit``/``skip``, or the pipeline's
``$sort`` with an optional ``[$skip] $limit`` after it), answered from buckets read in time order —
mongod's bounded sort (``$_internalBoundedSort``) — where a plain sort unpacks and sorts every
measurement before it returns the first (3,000,000 measurements: ~13 s and ~200 MB of sort buffer to
the first batch). Documents are held only until no later bucket can hold one before them, so memory
grows with the buckets that overlap in time, not with the collection, and the first batch comes after
the first buckets; a limit is only a stop (and a cut: a bucket or row that cannot place is not read).

Invariants:
- The answer is the generic one's, ties included: the generic sort is stable over the read's order —
  the collection scan's (ascending bucket ``_id``) or the buckets index's, then each bucket's rows — so
  documents of equal times are ranked the same way here, whatever order the buckets are read in: by
  bucket ``_id``, or by the index scan's order (read backwards for a descending sort).
- A bucket's measurements lie in ``[start, start + span)`` (``span``: the collection's
  ``bucketMaxSpanSeconds``, which collMod only raises) and its ``_id`` begins with its start: ascending,
  buckets come by start (``view.scan.buckets``); descending, newest start first (``scan.newest_first``);
  through a buckets index, in its order where that is by ``control.min`` or ``control.max`` time (the
  leading fields pinned to one value — one series — then that field: ``plan.plan_for`` with that sort);
  for a few series (the leading fields bounded by points: a ``$in``), one such scan per series merged
  into that order (mongod's SORT_MERGE; ``view._series_merged``), each bucket ranked by its place in
  the read's own index scan; else not at all.
- THE release rule (``edge``): once a bucket whose ``control.<order_by>`` time is ``at`` comes, no
  measurement of it or of any later bucket is better than ``edge(at)`` — so every held document strictly
  better than that is final and leaves, in order (ties at the edge wait: a later bucket may rank first).
- With a limit (``k`` = skip + limit): once ``k`` documents were seen, the key of the ``k``-th best is
  a ``cut`` no worse document can pass (the held documents are trimmed to the best ``k`` left when they
  are twice that, as mongod's bounded sorter trims before it would spill); reading stops at the first
  bucket whose edge is worse than the cut (``done_at``), a bucket whose own time range cannot pass it
  is skipped undecoded, and of the others only the rows whose time may still pass (by the dense time
  column) become documents (``rowfilter.accepted``'s ``within``).
- Memory: a held measurement is its BSON document (the bucket's accepted rows made straight as BSON,
  ``rowfilter.accepted``'s raw run; ~100 bytes and a key's four words, where a dict was ~600 bytes),
  handed on as it is to a cursor (``EncodedRun``) or decoded for a stage after the sort. Their BSON
  bytes count against the blocking sort's limit (internalQueryMaxBlockingSortMemoryUsageBytes), checked
  once a bucket is offered: past it (after a limit's trim), without allowDiskUse 292 with the sorter's
  message; with it (allowDiskUse, absent: allowDiskUseByDefault) every held measurement is written, in
  order, as one run of the generic sort's spill (``spill.write_run``, each record keyed), and releases
  merge the runs with what is held — mongod 7.0's BoundedSorter::_spill (sorter.cpp: its whole heap to
  one more source of its merge iterator; document_source_sort.cpp: extSortAllowed = allowDiskUse).
- Only without extended-range dates (``scan.uses_extended_range``: starts before 1970 or after 2038
  break the ``_id`` order).
"""

from __future__ import annotations

import heapq
import itertools
import math
import os
import struct
from collections.abc import Generator, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from bson.int64 import Int64
from bson.objectid import ObjectId

from tidemark.protocol.codec import EncodedRun, decode
from tidemark.query import spill
from tidemark.query.interrupt import tick
from tidemark.query.sort import sort_limit_error
from tidemark.timeseries.bucketdoc import date_ms
from tidemark.timeseries.columns import DATE

# The blocking sort's memory limit when the caller gives none (internalQueryMaxBlockingSortMemoryUsageBytes'
# default): the documents held count against it (292 past it).
DEFAULT_MEMORY_LIMIT = 100 * 1024 * 1024


@dataclass(frozen=True)
class TimeSortShape:
    """``remaining[:consumed]`` is ``$sort {time: ±1}``, then (``limit`` not None) an optional ``$skip``
    and a ``$limit``; with no ``$limit`` after it, the sort alone (a ``$skip`` after it stays a stage)."""

    descending: bool
    skip: int
    limit: int | None
    consumed: int


def _count(stage: Any, name: str) -> int | None:
    """A ``$skip``/``$limit`` stage's whole number, or None for anything the generic parse must judge
    (a fraction, NaN, an infinity, another type)."""
    value = stage.get(name) if isinstance(stage, dict) and len(stage) == 1 else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        return None
    return int(value)


def shape_of(remaining: list[Any], time_field: str) -> TimeSortShape | None:
    """The time sort (and the skip and limit it absorbs) that ``remaining`` starts with, or None (any
    other pipeline). A ``$skip``/``$limit`` the generic parse must judge (a bad value) is not absorbed:
    it stays a stage, and fails there with its own code."""
    if not remaining or not isinstance(remaining[0], dict) or len(remaining[0]) != 1:
        return None
    sort = remaining[0].get("$sort")
    if not isinstance(sort, dict) or len(sort) != 1 or time_field not in sort:
        return None
    direction = sort[time_field]
    if isinstance(direction, bool) or direction not in (1, -1):
        return None
    alone = TimeSortShape(direction == -1, 0, None, 1)
    skip, at = 0, 1
    if len(remaining) > 2 and isinstance(remaining[1], dict) and "$skip" in remaining[1]:
        found = _count(remaining[1], "$skip")
        if found is None or found < 0:
            return alone
        skip, at = found, 2
    limit = _count(remaining[at], "$limit") if len(remaining) > at else None
    if limit is None or limit <= 0:
        return alone
    return TimeSortShape(direction == -1, skip, limit, at + 1)


# A held measurement is its BSON document (``rowfilter.accepted``'s raw run of a bucket: a bytes object
# each, not a dict), keyed by (T, rank high, rank low, row): T its time in ms (negated for a descending
# sort), the rank of its bucket in the generic read's order as two unsigned words (an ObjectId's 12 bytes:
# 4 then 8; an index scan's place: 0 then the place biased by 2**63) and its row.
_BIAS = 1 << 63
_NO_TIME = -(1 << 62)  # a measurement without a time (none in a valid bucket) sorts as a null: first
# a spilled record: {k: BinData(24 bytes: T biased, rank high, rank low, row, big-endian), d: the document}
_KEY = struct.Struct(">QIQI")
_KEY_AT = 12  # int32 length, 0x05 "k" NUL, int32 24, subtype 0: the key's offset
_DOC_AT = _KEY_AT + _KEY.size + 3  # then 0x03 "d" NUL: the document's
_HEAD = struct.Struct("<i")
STRETCH = 1024  # documents a release hands on at a time (a generation of aligned buckets may be ~1M)
_KEY_HEAD = b"\x05k\x00" + _HEAD.pack(_KEY.size) + b"\x00"


def _rank_words(rank: Any) -> tuple[int, int]:
    if isinstance(rank, ObjectId):
        raw = rank.binary
        return int.from_bytes(raw[:4], "big"), int.from_bytes(raw[4:], "big")
    return 0, int(rank) + _BIAS


def _times(docs: list[bytes], sizes: np.ndarray, field: str) -> np.ndarray:
    """Each document's time (ms) as int64, read off its bytes: the time field is a row's first element
    (``rowbson``: a date, type 0x09) — read at once for all of them; a document where it is not is decoded."""
    n = len(docs)
    head = b"\x09" + field.encode() + b"\x00"
    width = len(head) + 8
    data = np.frombuffer(b"".join(docs), np.uint8)
    starts = np.cumsum(sizes) - sizes
    fits = sizes >= 4 + width + 1
    at = np.where(fits, starts, 0)[:, None] + 4 + np.arange(width)
    cells = data[at] if len(data) >= width + 4 else np.zeros((n, width), np.uint8)
    ok = fits & (cells[:, :len(head)] == np.frombuffer(head, np.uint8)).all(axis=1)
    times = np.ascontiguousarray(cells[:, len(head):]).view("<i8").reshape(n).copy()
    for i in np.flatnonzero(~ok).tolist():
        ms = date_ms(decode(docs[i]).get(field))
        times[i] = _NO_TIME if ms is None else ms
    return times


def _keyed(records: Generator[bytes, None, None]) -> Generator[tuple[tuple[int, int, int, int], bytes], None, None]:
    """A spilled run's (key, document) pairs, in order."""
    try:
        for record in records:
            t, high, low, row = _KEY.unpack_from(record, _KEY_AT)
            yield (t - _BIAS, high, low, row), record[_DOC_AT:-1]
    finally:
        records.close()


class _Run:
    """One bucket's held measurements, in the sort's order: the keys' columns and the documents."""

    __slots__ = ("t", "row", "docs", "sizes", "high", "low")

    def __init__(self, t: np.ndarray, row: np.ndarray, docs: list[bytes], sizes: np.ndarray, high: int, low: int):
        self.t, self.row, self.docs, self.sizes, self.high, self.low = t, row, docs, sizes, high, low

    def head(self) -> tuple[int, int, int, int]:
        return int(self.t[0]), self.high, self.low, int(self.row[0])


def _ordered(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[bytes], np.ndarray]]
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[bytes], np.ndarray]:
    """Pieces (t, high, low, row, docs, sizes), each sorted, as one sorted piece (by the whole key)."""
    if len(parts) == 1:
        return parts[0]
    t, high, low, row = (np.concatenate([p[i] for p in parts]) for i in range(4))
    docs = [d for p in parts for d in p[4]]
    sizes = np.concatenate([p[5] for p in parts])
    order = np.lexsort((row, low, high, t))
    return t[order], high[order], low[order], row[order], [docs[i] for i in order.tolist()], sizes[order]


class BoundedSort:
    """The measurements offered bucket by bucket, given back in the sort's order as soon as they are final.

    Held as runs (``_Run``), one per bucket offered, each sorted (a stable sort of its time column: rows
    break ties), in a heap by each run's first key: a release takes only the runs whose first time is
    before the edge, cuts each where the edge falls (a bisection of its time column) and sorts the cut
    pieces together by the whole key; documents stay BSON bytes throughout. Past the memory limit the
    held measurements are written in order as one spilled run (``spill.write_run``) and a release merges
    the runs' records before its edge with the pieces (mongod's bounded sorter: its heap spilled whole,
    each run a source of its one merge)."""

    __slots__ = ("shape", "k", "time_field", "span_ms", "runs", "count", "sign", "plan", "visits", "order_by",
                 "memory_limit", "allow_disk_use", "used", "series", "cut", "emitted", "finished", "released_to",
                 "seq", "spilled", "spills", "bytes_sorted", "spilled_bytes")

    def __init__(self, shape: TimeSortShape, time_field: str, span_s: int, plan: Any = None,
                 order_by: str = "min", *, memory_limit: int = DEFAULT_MEMORY_LIMIT, allow_disk_use: bool = False,
                 series: list[Any] | None = None):
        self.shape = shape
        # the held documents' BSON bytes may not pass it: a spill with allowDiskUse, else 292 (mongod's
        # bounded sorter: internalQueryMaxBlockingSortMemoryUsageBytes, extSortAllowed = allowDiskUse)
        self.memory_limit = memory_limit
        self.allow_disk_use = allow_disk_use
        self.used = 0
        self.order_by = order_by  # the buckets come by control.min (their start) or control.max time
        self.plan = plan  # the buckets index scan giving the buckets by start (None: the _id order)
        # or one such scan per series, merged by the caller, which gives each bucket's rank (offer_bucket)
        self.series = series
        self.visits = 0  # buckets offered so far (their rank in an index scan's order)
        self.k = None if shape.limit is None else shape.skip + shape.limit
        self.time_field = time_field
        self.span_ms = span_s * 1000
        self.runs: list[list[Any]] = []  # heap of [first held key, sequence, _Run]
        self.seq = 0
        self.count = 0  # measurements held in memory
        self.sign = -1 if shape.descending else 1
        self.cut: tuple[int, int, int, int] | None = None  # the key of the k-th best seen, once k were
        self.emitted = 0  # documents released (the skipped ones included)
        self.finished = False  # k released: nothing more to read
        self.released_to = -math.inf  # the last edge released to (edges only grow: buckets come in order)
        self.spilled: list[list[Any]] = []  # the merge: heap of [key, sequence, document, the source's rest]
        self.spills = 0  # (explain's executionStats: spills, usedDisk, spilledDataStorageSize — the files' bytes —
        self.spilled_bytes = 0  # and totalDataSizeSortedBytesEstimate, every measurement held's bytes)
        self.bytes_sorted = 0

    def stats(self) -> dict[str, Any]:
        """The ``$_internalBoundedSort`` stage's executionStats (document_source_sort.cpp's serialize)."""
        return {"totalDataSizeSortedBytesEstimate": Int64(self.bytes_sorted), "usedDisk": self.spills > 0,
                "spills": Int64(self.spills), "spilledDataStorageSize": Int64(self.spilled_bytes)}

    def _cut_ms(self) -> float | None:
        """The time of the cut (no worse document can be output), or None: anything may enter."""
        return None if self.cut is None else self.sign * self.cut[0]

    def offer_bucket(self, summary: dict[str, Any], runs: Iterable[EncodedRun], rank: Any = None) -> None:
        """Hold the measurements of ``runs`` (a bucket's accepted rows as BSON, in row order: at most one
        run, ``rowfilter.accepted``); ``rank``: the bucket's place in the generic read's order where the
        caller knows it (merged series)."""
        if rank is None and self.plan is not None:
            # the index's own order (the generic read's), which a reverse scan reads backwards
            self.visits += 1
            rank = -self.visits if self.plan.reverse else self.visits
        elif rank is None:
            rank = summary.get("_id")
            if not isinstance(rank, ObjectId):
                rank = 0
        high, low = _rank_words(rank)
        base = 0
        for run in runs:
            docs = run.docs
            n = len(docs)
            sizes = run.sizes if run.sizes is not None else np.fromiter(map(len, docs), np.int64, n)
            t = _times(docs, sizes, self.time_field) * self.sign
            row = np.arange(base, base + n)
            base += n
            if self.cut is not None:
                ct, ch, cl, cr = self.cut
                keep = t < ct
                if (high, low) < (ch, cl):
                    keep |= t == ct
                elif (high, low) == (ch, cl):
                    keep |= (t == ct) & (row <= cr)
                if not keep.all():
                    picked = np.flatnonzero(keep)
                    t, row, sizes = t[picked], row[picked], sizes[picked]
                    docs = [docs[i] for i in picked.tolist()]
                    n = len(docs)
            if not n:
                continue
            order = np.argsort(t, kind="stable")
            if not (order[1:] > order[:-1]).all():
                t, row, sizes = t[order], row[order], sizes[order]
                docs = [docs[i] for i in order.tolist()]
            self._hold(_Run(t, row, docs, sizes, high, low))
            self.count += n
            held = int(sizes.sum())
            self.used += held
            self.bytes_sorted += held
        if self.k is not None and self.count >= 2 * max(self.k - self.emitted, 1):
            self._trim()
        if self.used > self.memory_limit:
            self._trim()  # (a limit: the best k may fit, as mongod's sorter trims before it spills)
            if self.used > self.memory_limit:
                if not self.allow_disk_use:
                    raise sort_limit_error(self.memory_limit)
                self._spill()

    def _hold(self, run: _Run) -> None:
        if len(run.t):
            self.seq += 1
            heapq.heappush(self.runs, [run.head(), self.seq, run])

    def _everything(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[bytes], np.ndarray]:
        """Every measurement held in memory, in order (the runs taken)."""
        parts = [(r.t, np.full(len(r.t), r.high, np.uint64), np.full(len(r.t), r.low, np.uint64), r.row, r.docs,
                  r.sizes) for _, _, r in self.runs]
        self.runs = []
        self.count = 0
        self.used = 0
        return _ordered(parts)

    def _trim(self) -> None:
        """Keep the best ``k`` left of the held measurements (with a limit) and note the cut (the best
        ``k`` of those held are at least as good as the best ``k`` of all: no worse one can place)."""
        if self.k is None:
            return
        left = self.k - self.emitted
        if self.count <= left or left <= 0:
            return
        t, high, low, row, docs, sizes = self._everything()
        t, row, sizes, docs = t[:left], row[:left], sizes[:left], docs[:left]
        self.cut = (int(t[-1]), int(high[left - 1]), int(low[left - 1]), int(row[-1]))
        # (one run of several buckets: its rank words per row are kept by cutting it into same-rank pieces)
        bounds = np.flatnonzero((high[1:left] != high[:left - 1]) | (low[1:left] != low[:left - 1])) + 1
        for a, b in itertools.pairwise([0, *bounds.tolist(), left]):
            self._hold(_Run(t[a:b], row[a:b], docs[a:b], sizes[a:b], int(high[a]), int(low[a])))
        self.count = left
        self.used = int(sizes.sum())

    def _spill(self) -> None:
        """Every measurement held in memory, in order, to one spilled run (records keyed for the merge)."""
        used = self.used
        t, high, low, row, docs, _ = self._everything()
        keys = np.empty(len(docs), [("t", ">u8"), ("h", ">u4"), ("l", ">u8"), ("r", ">u4")])
        keys["t"], keys["h"], keys["l"], keys["r"] = t.astype(np.int64).view(np.uint64) ^ np.uint64(_BIAS), \
            high, low, row
        packed = keys.tobytes()
        width = _KEY.size
        pack = _HEAD.pack
        records = (pack(_DOC_AT + 1 + len(doc)) + _KEY_HEAD + packed[i * width:(i + 1) * width] + b"\x03d\x00"
                   + doc + b"\x00" for i, doc in enumerate(docs))
        run = spill.write_run(records, size=used)
        del docs
        self.spills += 1
        self.spilled_bytes += os.fstat(run.fileno()).st_size
        self._next_record(spill.records(run))

    def _next_record(self, records: Generator[bytes, None, None]) -> None:
        """A spilled run joins the merge (its records keyed as they are read)."""
        source = _keyed(records)
        first = next(source, None)
        if first is not None:
            self.seq += 1
            heapq.heappush(self.spilled, [first[0], self.seq, first[1], source])

    def close(self) -> None:
        """Drop the spilled runs (their files) of a read not read to its end."""
        for _, _, _, source in self.spilled:
            if hasattr(source, "close"):  # (a spilled run's; what was held is a plain iterator)
                source.close()
        self.spilled = []

    def edge(self, at_ms: int | None, side: str) -> float | None:
        """The best time a bucket whose ``control.<side>`` time is ``at_ms`` — and every bucket after it
        in an order by that side — can hold (a bucket's measurements lie within ``span`` of each end of
        its range), as T (negated for a descending sort); None: unknown."""
        if at_ms is None:
            return None
        if self.shape.descending:  # later buckets end (or start) no later
            return -(at_ms + self.span_ms if side == "min" else at_ms)
        return at_ms if side == "min" else at_ms - self.span_ms

    def _beyond(self, edge: float | None) -> bool:
        """No document at or after ``edge`` can be output (strictly worse than the cut's time)."""
        return self.cut is not None and edge is not None and edge > self.cut[0]

    def control_ms(self, summary: dict[str, Any], side: str) -> int | None:
        return date_ms(((summary.get("control") or {}).get(side) or {}).get(self.time_field))

    def skips(self, summary: dict[str, Any]) -> bool:
        """No measurement of this bucket (by its ``control`` time range) can be output."""
        side = "max" if self.shape.descending else "min"
        return self._beyond(self.edge(self.control_ms(summary, side), side))

    def rows_worth(self, view: Any) -> np.ndarray | None:
        """The rows of ``view`` (ascending positions) whose time may still pass the cut — by its dense
        time column — or None: every row (no cut, or no such column)."""
        worst = self._cut_ms()
        if worst is None:
            return None
        times = view.dense(self.time_field)
        if times is None or times[0] != DATE:
            return None
        values = times[1]
        hit = values >= worst if self.shape.descending else values <= worst  # (ties: the rank decides)
        return np.flatnonzero(hit)

    def done_before(self, start_s: int) -> bool:
        """Descending reads (``scan.newest_first``): no bucket starting at ``start_s`` or before can
        hold a document to output."""
        return self.finished or self._beyond(self.edge(start_s * 1000, "min"))

    def arrival(self, summary: dict[str, Any]) -> tuple[bool, float | None]:
        """(done, edge) for the next bucket read by ``control.<order_by>`` time: ``done`` when neither it
        nor any after it can hold a document to output; ``edge`` for ``release``."""
        edge = self.edge(self.control_ms(summary, self.order_by), self.order_by)
        return self.finished or self._beyond(edge), edge

    def release(self, edge: float | None) -> Iterator[list[bytes]]:
        """The held documents strictly before ``edge`` (T), in order (None: every one: the read ended),
        past the skip, up to the limit — in memory and spilled — as stretches of at most ``STRETCH``
        (a release of spilled runs streams: one record of each run read at a time). Each stretch is
        taken before the next is made: a caller reads a release to its end before it offers a bucket."""
        if edge is not None:
            if edge <= self.released_to:  # (nothing held is better: it was released then)
                return
            self.released_to = edge
        parts = []
        runs = self.runs
        cut: list[_Run] = []
        while runs and (edge is None or runs[0][0][0] < edge):
            run: _Run = heapq.heappop(runs)[2]
            end = len(run.t) if edge is None else int(np.searchsorted(run.t, edge, "left"))
            parts.append((run.t[:end], np.full(end, run.high, np.uint64), np.full(end, run.low, np.uint64),
                          run.row[:end], run.docs[:end], run.sizes[:end]))
            self.count -= end
            self.used -= int(run.sizes[:end].sum())
            if end < len(run.t):
                run.t, run.row, run.docs, run.sizes = run.t[end:], run.row[end:], run.docs[end:], run.sizes[end:]
                cut.append(run)
        for run in cut:  # (pushed back once the loop is over: their new heads are past the edge)
            self._hold(run)
        spilled = self.spilled
        if spilled and (edge is None or spilled[0][0][0] < edge):
            if parts:  # what is held joins the merge as one more source (all of it before the edge)
                t, high, low, row, docs, _ = _ordered(parts)
                parts = []
                held = zip(zip(t.tolist(), high.tolist(), low.tolist(), row.tolist(), strict=True), docs,
                           strict=True)
                first = next(held)
                self.seq += 1
                heapq.heappush(spilled, [first[0], self.seq, first[1], held])
            yield from self._merged(edge)
        elif parts:
            docs = _ordered(parts)[4]
            del parts
            docs.reverse()  # (taken from the end, a stretch at a time: what was given is not held here)
            while docs and not self.finished:
                stretch = docs[-STRETCH:]
                del docs[-STRETCH:]
                stretch.reverse()
                yield self._counted(stretch)

    def _merged(self, edge: float | None) -> Iterator[list[bytes]]:
        """The sources' documents (spilled runs, and what was held) before ``edge``, merged, a stretch at a
        time."""
        spilled = self.spilled
        stretch: list[bytes] = []
        while spilled and (edge is None or spilled[0][0][0] < edge):
            top = spilled[0]
            stretch.append(top[2])
            following = next(top[3], None)
            if following is None:
                heapq.heappop(spilled)
            else:
                top[0], top[2] = following
                heapq.heapreplace(spilled, top)
            if len(stretch) == STRETCH:
                yield self._counted(stretch)
                stretch = []
                if self.finished:
                    return
        if stretch:
            yield self._counted(stretch)

    def _counted(self, stretch: list[bytes]) -> list[bytes]:
        """``stretch`` (the next documents in order) past the skip and up to the limit."""
        tick()  # (a release of spilled runs may be the whole collection: killOp and maxTimeMS reach it)
        start = max(self.shape.skip - self.emitted, 0)
        stop = len(stretch) if self.k is None else min(len(stretch), self.k - self.emitted)
        self.emitted += stop
        if self.k is not None and self.emitted >= self.k:
            self.finished = True
        return stretch[start:stop] if start or stop < len(stretch) else stretch
