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
- Memory: without allowDiskUse the held documents' bytes may not pass the blocking sort's limit (292,
  as mongod's bounded sorter, whose held documents are the overlapping buckets' too); with it nothing is
  spilled: the held documents stay in memory.
- Only without extended-range dates (``scan.uses_extended_range``: starts before 1970 or after 2038
  break the ``_id`` order).
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from bson.objectid import ObjectId

from tidemark.query.sort import estimate_size, sort_limit_error
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


class BoundedSort:
    """The documents offered bucket by bucket, given back in the sort's order as soon as they are final.

    A held document is an entry (T, rank, row, size, doc): T the time (negated for a descending sort),
    then the bucket's rank in the generic read's order and the row — the output order, unique, so ``doc``
    is never compared. Entries are held as runs, one per bucket offered, each sorted (a bucket's rows
    are mostly in time order already), in a heap of [first held entry's key, sequence, run, its
    position]: a release takes only the runs whose first entry is better than the edge, cuts each where
    the edge falls (a bisection) and sorts the cut pieces together (timsort merges runs), so a
    measurement costs a few comparisons, and a release the runs it touches, not every run held."""

    __slots__ = ("shape", "k", "time_field", "span_ms", "runs", "count", "sign", "plan", "visits", "order_by",
                 "memory_limit", "used", "series", "cut", "emitted", "finished", "released_to", "seq")

    def __init__(self, shape: TimeSortShape, time_field: str, span_s: int, plan: Any = None,
                 order_by: str = "min", *, memory_limit: int | None = DEFAULT_MEMORY_LIMIT,
                 series: list[Any] | None = None):
        self.shape = shape
        # the held documents' bytes may not pass it (292, as mongod's bounded sorter without allowDiskUse);
        # None (allowDiskUse): no limit, and no bytes counted
        self.memory_limit = memory_limit
        self.used = 0
        self.order_by = order_by  # the buckets come by control.min (their start) or control.max time
        self.plan = plan  # the buckets index scan giving the buckets by start (None: the _id order)
        # or one such scan per series, merged by the caller, which gives each bucket's rank (offer_bucket)
        self.series = series
        self.visits = 0  # buckets offered so far (their rank in an index scan's order)
        self.k = None if shape.limit is None else shape.skip + shape.limit
        self.time_field = time_field
        self.span_ms = span_s * 1000
        self.runs: list[list[Any]] = []  # heap of [first held key, sequence, entries, first held position]
        self.seq = 0
        self.count = 0  # entries held
        self.sign = -1 if shape.descending else 1
        self.cut: tuple[float, int, int] | None = None  # (T, rank, row) of the k-th best seen, once k were
        self.emitted = 0  # documents released (the skipped ones included)
        self.finished = False  # k released: nothing more to read
        self.released_to = -math.inf  # the last edge released to (edges only grow: buckets come in order)

    def _cut_ms(self) -> float | None:
        """The time of the cut (no worse document can be output), or None: anything may enter."""
        return None if self.cut is None else self.sign * self.cut[0]

    def offer_bucket(self, summary: dict[str, Any], rows: Iterable[Any], rank: int | None = None) -> None:
        """Hold the documents ``rows`` yields (a bucket's measurements, in row order); ``rank``: the
        bucket's place in the generic read's order where the caller knows it (merged series)."""
        if rank is None and self.plan is not None:
            # the index's own order (the generic read's), which a reverse scan reads backwards
            self.visits += 1
            rank = -self.visits if self.plan.reverse else self.visits
        elif rank is None:
            bucket_id = summary.get("_id")
            rank = int.from_bytes(bucket_id.binary, "big") if isinstance(bucket_id, ObjectId) else 0
        sign, field, limit, cut = self.sign, self.time_field, self.memory_limit, self.cut
        run: list[tuple[float, int, int, int, Any]] = []
        for row, doc in enumerate(rows):
            ms = date_ms(doc.get(field))
            t = sign * (-math.inf if ms is None else ms)
            if cut is not None and (t, rank, row) > cut:
                continue
            if limit is None:
                run.append((t, rank, row, 0, doc))
                continue
            size = estimate_size(doc)
            run.append((t, rank, row, size, doc))
            self.used += size
            if self.used > limit:
                self._add(run)
                run = []
                self._trim()
                if self.used > limit:
                    raise sort_limit_error(limit)
                cut = self.cut
        if run:
            self._add(run)
        if self.k is not None and self.count >= 2 * max(self.k - self.emitted, 1):
            self._trim()

    def _hold(self, run: list[Any], pos: int = 0) -> None:
        if pos < len(run):
            self.seq += 1
            heapq.heappush(self.runs, [run[pos][:3], self.seq, run, pos])

    def _add(self, run: list[Any]) -> None:
        run.sort()
        self.count += len(run)
        self._hold(run)

    def _trim(self) -> None:
        """Keep the best ``k`` left of the held documents (with a limit) and note the cut."""
        if self.k is None:
            return
        left = self.k - self.emitted
        if self.count <= left or left <= 0:
            return
        kept = heapq.nsmallest(left, itertools.chain.from_iterable(
            itertools.islice(run, pos, None) for _, _, run, pos in self.runs))  # (sorted: one run)
        self.runs = []
        self._hold(kept)
        self.count = len(kept)
        self.cut = kept[-1][:3]
        if self.memory_limit is not None:
            self.used = sum(entry[3] for entry in kept)

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

    def release(self, edge: float | None) -> Iterator[Any]:
        """The held documents strictly better than ``edge`` (T), in order (None: every one: the read
        ended), past the skip, up to the limit."""
        if edge is not None:
            if edge <= self.released_to:  # (nothing held is better: it was released then)
                return
            self.released_to = edge
        probe = (edge,)  # sorts before every entry of time ``edge``
        out: list[tuple[float, int, int, int, Any]] = []
        runs = self.runs
        cut: list[tuple[list[Any], int]] = []
        while runs and (edge is None or runs[0][0][0] < edge):
            _, _, run, pos = heapq.heappop(runs)
            end = len(run) if edge is None else bisect.bisect_left(run, probe, pos)
            out += run[pos:end] if pos or end < len(run) else run
            cut.append((run, end))
        for run, end in cut:  # (pushed back once the loop is over: their new heads are past the edge)
            self._hold(run, end)
        if not out:
            return
        # best last: each entry is popped as it goes, so a document the consumer took is not held here
        # while the rest of a large release waits for the cursor's next batches
        out.sort(reverse=True)
        self.count -= len(out)
        k, skip = self.k, self.shape.skip
        while out:
            if k is not None and self.emitted >= k:
                break
            entry = out.pop()
            self.used -= entry[3]
            self.emitted += 1
            if self.emitted > skip:
                yield entry[4]
        if k is not None and self.emitted >= k:
            self.finished = True
