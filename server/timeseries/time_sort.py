"""A ``$sort`` on the time field with a ``$limit`` after it (a find's ``sort`` and ``limit``, ``skip``
too, or the pipeline's stages), answered from buckets read in time order, stopping once no further
bucket can hold one of the documents kept — mongod's bounded sort over the clustered ``_id`` order
(``$_internalBoundedSort``), where a plain sort unpacks every measurement first (the newest measurement
of 864,000: 3-4 s).

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
- Reading stops at the first bucket after which no bucket can hold a measurement better than the worst
  of the ``k`` kept (``done_at``: by the order's own end of the bucket's range, within a span of the
  other end); a bucket whose own time range (``control.min``/``max``) cannot place is skipped undecoded,
  and of the others only the rows whose
  time may still place (by the dense time column, ties included) become documents
  (``rowfilter.accepted``'s ``within``). Only without extended-range dates (``scan.uses_extended_range``:
  starts before 1970 or after 2038 break the ``_id`` order).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from bson.objectid import ObjectId

from tidemark.query.sort import estimate_size, sort_limit_error
from tidemark.timeseries.bucketdoc import date_ms
from tidemark.timeseries.columns import DATE

# Limits above this (skip included) keep the generic sort: the documents kept are held in memory, and
# a bound that far reads about every bucket anyway.
MAX_KEPT = 100_000
# The blocking sort's memory limit when the caller gives none (internalQueryMaxBlockingSortMemoryUsageBytes'
# default): the documents kept count against it as the generic top-k sort counts them (292 past it).
DEFAULT_MEMORY_LIMIT = 100 * 1024 * 1024


@dataclass(frozen=True)
class TimeSortShape:
    """``remaining[:consumed]`` is ``$sort {time: ±1}``, an optional ``$skip`` and a ``$limit``."""

    descending: bool
    skip: int
    limit: int
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
    """The time sort and limit that ``remaining`` starts with, or None (any other pipeline, or stages
    the generic parse must judge: a bad ``$limit`` still fails there, with its own code)."""
    if len(remaining) < 2 or not isinstance(remaining[0], dict) or len(remaining[0]) != 1:
        return None
    sort = remaining[0].get("$sort")
    if not isinstance(sort, dict) or len(sort) != 1 or time_field not in sort:
        return None
    direction = sort[time_field]
    if isinstance(direction, bool) or direction not in (1, -1):
        return None
    skip, at = 0, 1
    if isinstance(remaining[1], dict) and "$skip" in remaining[1]:
        found = _count(remaining[1], "$skip")
        if found is None or found < 0 or len(remaining) < 3:
            return None
        skip, at = found, 2
    limit = _count(remaining[at], "$limit")
    if limit is None or limit <= 0 or skip + limit > MAX_KEPT:
        return None
    return TimeSortShape(direction == -1, skip, limit, at + 1)


class TimeTopK:
    """The ``skip + limit`` first documents in the sort's order among those offered, bucket by bucket.

    Each kept document is held as (N, doc) with N the negated rank (time, bucket ``_id``, row): a
    min-heap of N has the worst kept document at its root."""

    __slots__ = ("shape", "k", "time_field", "span_ms", "heap", "sign", "plan", "visits", "order_by",
                 "memory_limit", "used", "series")

    def __init__(self, shape: TimeSortShape, time_field: str, span_s: int, plan: Any = None,
                 order_by: str = "min", *, memory_limit: int | None = DEFAULT_MEMORY_LIMIT,
                 series: list[Any] | None = None):
        self.shape = shape
        # the kept documents' bytes may not pass it (292, as the generic top-k sort without allowDiskUse);
        # None (allowDiskUse): no limit — at most ``k`` documents are kept, as that sort keeps in memory
        self.memory_limit = memory_limit
        self.used = 0
        self.order_by = order_by  # the buckets come by control.min (their start) or control.max time
        self.plan = plan  # the buckets index scan giving the buckets by start (None: the _id order)
        # or one such scan per series, merged by the caller, which gives each bucket's rank (offer_bucket)
        self.series = series
        self.visits = 0  # buckets offered so far (their rank in an index scan's order)
        self.k = shape.skip + shape.limit
        self.time_field = time_field
        self.span_ms = span_s * 1000
        self.heap: list[tuple[float, int, int, Any]] = []
        self.sign = 1 if shape.descending else -1  # N's time: t descending, -t ascending

    def _worst_ms(self) -> float | None:
        """The time of the worst document kept once ``k`` are kept, else None (anything may enter)."""
        if len(self.heap) < self.k:
            return None
        return self.sign * self.heap[0][0]

    def offer_bucket(self, summary: dict[str, Any], rows: Any, rank: int | None = None) -> None:
        """Offer the documents ``rows`` yields (a bucket's measurements, in row order); ``rank``: the
        bucket's place in the generic read's order where the caller knows it (merged series)."""
        if rank is None and self.plan is not None:
            # the index's own order (the generic read's), which a reverse scan reads backwards
            self.visits += 1
            rank = -self.visits if self.plan.reverse else self.visits
        elif rank is None:
            bucket_id = summary.get("_id")
            rank = int.from_bytes(bucket_id.binary, "big") if isinstance(bucket_id, ObjectId) else 0
        heap, k, sign, field, limit = self.heap, self.k, self.sign, self.time_field, self.memory_limit
        for row, doc in enumerate(rows):
            ms = date_ms(doc.get(field))
            key = (sign * (-math.inf if ms is None else ms), -rank, -row, doc)
            if len(heap) < k:
                heapq.heappush(heap, key)
                out = None
            elif key[:3] > heap[0][:3]:
                out = heapq.heapreplace(heap, key)[3]
            else:
                continue
            if limit is not None:
                self.used += estimate_size(doc) - (estimate_size(out) if out is not None else 0)
                if self.used > limit:
                    raise sort_limit_error(limit)

    def _beyond(self, at_ms: int | None, side: str) -> bool:
        """THE stop rule: every measurement of a bucket whose ``control.<side>`` time is ``at_ms`` —
        and of every bucket after it in an order by that side — is strictly worse than the worst of the
        ``k`` kept (a bucket's measurements lie within ``span`` of each end of its range)."""
        worst = self._worst_ms()
        if worst is None or at_ms is None:
            return False
        if self.shape.descending:  # later buckets end (or start) no later: their times are below ...
            return (at_ms + self.span_ms if side == "min" else at_ms) < worst
        return (at_ms if side == "min" else at_ms - self.span_ms) > worst

    def control_ms(self, summary: dict[str, Any], side: str) -> int | None:
        return date_ms(((summary.get("control") or {}).get(side) or {}).get(self.time_field))

    def skips(self, summary: dict[str, Any]) -> bool:
        """No measurement of this bucket (by its ``control`` time range) can be kept."""
        side = "max" if self.shape.descending else "min"
        return self._beyond(self.control_ms(summary, side), side)

    def rows_worth(self, view: Any) -> np.ndarray | None:
        """The rows of ``view`` (ascending positions) whose time may still place once ``k`` are kept —
        by its dense time column — or None: every row (fewer kept, or no such column)."""
        worst = self._worst_ms()
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
        hold a document to keep."""
        return self._beyond(start_s * 1000, "min")

    def done_at(self, summary: dict[str, Any]) -> bool:
        """Buckets read by ``control.<order_by>`` time (ascending, or descending for a descending sort;
        ``min``: by start): neither this bucket nor any after it can hold a document to keep."""
        return self._beyond(self.control_ms(summary, self.order_by), self.order_by)

    def result(self) -> list[Any]:
        """The documents in the sort's order, ``skip`` first ones left out."""
        ordered = sorted(self.heap, key=lambda entry: entry[:3], reverse=True)
        return [entry[3] for entry in ordered[self.shape.skip:]]
