"""Run summaries of dense rows for the columnar ``$group`` (pure).

A *run* is a maximal stretch of consecutive rows of one bucket with one truncated time: all its rows
belong to one group. ``Runs`` holds, per run, what each accumulator takes from it (the total and count
of a ``$sum``/``$avg``, the max/min, the first/last value, the row count) plus the facts that say
whether those values may join ``groupstate.DenseGroups`` exactly (integral values and their absolute
sum for sums, ``-0.0`` for max/min).

``bucket_runs`` summarizes a whole bucket once; a stored bucket keeps it with its cached parts, so a
later query whose filter every row of the bucket passes (decided from the bucket's column ranges,
``passing``) takes the bucket's runs without touching its rows. ``row_runs`` summarizes rows cut
into runs at query time (buckets the filter cuts, live buckets). Either way a run's values are the
same reductions over the same rows in the same order.
"""

from __future__ import annotations

import math
from operator import itemgetter
from typing import Any

import numpy as np

_FRACTIONAL, _ABS_SUM, _NEG_ZERO = 0, 1, 2  # parts of ``Runs.facts``
_VALUES = 3  # the first value column of ``Runs.table``
_SERIAL, _FIRST, _COUNT = itemgetter(1), itemgetter(2), itemgetter(3)  # parts of a ``bucketcache.RunRef``
# the ufuncs' reductions themselves (one C call each; ``np.count_nonzero``/``np.any`` are Python wrappers)
_ANY, _ALL = np.logical_or.reduce, np.logical_and.reduce


class Runs:
    """The runs of some rows as arrays (whole buckets' remembered runs join with two concatenations,
    not per run): ``table`` float64 [n, 3 + width], a row per run — its truncated time in ms (0 when
    the group truncates no time: ``timed`` False), its first time in ms, its row count, then what
    accumulator j takes from it (a time-valued one as its ms; a ``$count``'s 0): every one an exact
    float (times within ``datetime``'s range are below 2**53 ms); ``seq``/``owner`` int64 [n] — the
    bucket's arrival number and meta index (the caller's); ``facts`` float64 [3 * width] — per
    accumulator: how many joined parts held a value that is not integral, the sum of their absolute
    values, how many held a ``-0.0``: each merges by a sum, so joining parts is one reduction."""

    __slots__ = ("seq", "owner", "table", "facts", "timed", "_width")

    def __init__(self, table: np.ndarray, facts: np.ndarray, timed: bool, seq: np.ndarray | None = None,
                 owner: np.ndarray | None = None):
        """``seq``/``owner`` None: zeros (the caller's to set)."""
        self.table, self.facts, self.timed = table, facts, timed
        self._width = table.shape[1] - _VALUES  # the accumulators (``facts`` holds 3 of each)
        self.seq = seq if seq is not None else np.zeros(table.shape[0], dtype=np.int64)
        self.owner = owner if owner is not None else np.zeros(table.shape[0], dtype=np.int64)

    @property
    def count(self) -> int:
        return int(self.table.shape[0])

    def values(self, j: int) -> np.ndarray:
        return self.table[:, _VALUES + j]

    def exactness(self) -> tuple[list[float], list[float], list[float]]:
        """``facts`` as three lists, one entry per accumulator: (not-integral counts, sums of absolute
        values, ``-0.0`` counts) — read at once by a feed, which asks each accumulator's (one
        ``tolist``, cut in three)."""
        facts, w = self.facts.tolist(), self._width
        return (facts[_FRACTIONAL * w:_FRACTIONAL * w + w], facts[_ABS_SUM * w:_ABS_SUM * w + w],
                facts[_NEG_ZERO * w:_NEG_ZERO * w + w])

    @classmethod
    def joined(cls, width: int, timed: bool, parts: list[tuple[int, int, Runs]]) -> Runs:
        """The runs of ``parts`` ((sequence, owner, runs) in order) one after the other."""
        if not parts:
            return cls(np.zeros((0, _VALUES + width)), _facts(width), timed)
        merged = np.concatenate([runs.facts for _, _, runs in parts]).reshape(len(parts), 3 * width).sum(axis=0)
        out = cls(np.concatenate([runs.table for _, _, runs in parts]), merged, timed)
        lengths = [runs.table.shape[0] for _, _, runs in parts]
        out.seq = np.repeat(np.fromiter((seq for seq, _, _ in parts), np.int64, len(parts)), lengths)
        out.owner = np.repeat(np.fromiter((owner for _, owner, _ in parts), np.int64, len(parts)), lengths)
        return out

    def rows(self) -> np.ndarray:
        """These runs as one array to remember (``bucketcache.remember_runs``): ``table``'s columns, then
        ``facts`` on the first row (zeros on the others: facts merge by a sum). ``remembered`` joins
        such rows back."""
        n, v = self.table.shape
        rows = np.zeros((n, v + len(self.facts)))
        rows[:, :v] = self.table
        if n:
            rows[0, v:] = self.facts
        return rows

    @classmethod
    def remembered(cls, width: int, timed: bool, refs: list[Any], seqs: list[int], owners: list[int]) -> Runs:
        """The runs of whole buckets remembered as ``rows`` in run blocks, one after the other: ``refs``
        their (block, serial, first row, row count) in order, ``seqs``/``owners`` their arrival numbers
        and meta indexes. Buckets remembered one after the other sit next to each other in a block, so
        a stretch of them is one slice."""
        k = len(refs)
        if not k:
            return cls(np.zeros((0, _VALUES + width)), _facts(width), timed)
        serial = np.fromiter(map(_SERIAL, refs), np.int64, k)
        first = np.fromiter(map(_FIRST, refs), np.int64, k)
        count = np.fromiter(map(_COUNT, refs), np.int64, k)
        end = first + count
        cuts = np.flatnonzero((serial[1:] != serial[:-1]) | (first[1:] != end[:-1])) + 1
        starts, ends = [0, *cuts.tolist()], [*cuts.tolist(), k]
        firsts, lasts = first.tolist(), end.tolist()
        pieces = [refs[a][0].rows[firsts[a]:lasts[b - 1]] for a, b in zip(starts, ends, strict=True)]
        rows = pieces[0] if len(pieces) == 1 else np.concatenate(pieces)
        if len(pieces) == 1:  # a view of the block: nobody may write through it
            rows = rows.view()
            rows.flags.writeable = False
        v = _VALUES + width
        seq, owner = np.array(seqs, dtype=np.int64), np.array(owners, dtype=np.int64)
        if len(rows) != k:
            seq, owner = np.repeat(seq, count), np.repeat(owner, count)
        return cls(rows[:, :v], rows[:, v:].sum(axis=0), timed, seq, owner)

    def taken(self, order: np.ndarray) -> Runs:
        """These runs in ``order`` (a permutation)."""
        return Runs(self.table[order], self.facts, self.timed, self.seq[order], self.owner[order])


def _facts(width: int) -> np.ndarray:
    return np.zeros(3 * width)


def pick(name: str, column: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The value a ``$max``/``$min``/``$first``/``$last`` takes over each run ``[starts[i], ends[i])``
    of ``column`` (one reduction for all runs; callers handle NaN and signed zeros)."""
    picked: np.ndarray  # NumPy types reduceat and fancy indexing as Any
    if name == "$max":
        picked = np.maximum.reduceat(column, starts)
    elif name == "$min":
        picked = np.minimum.reduceat(column, starts)
    elif name == "$first":
        picked = column[starts]
    else:
        picked = column[ends - 1]
    return picked

def summarize(group: Any, times: np.ndarray, arrays: dict[str, Any], starts: np.ndarray,
              trunc: np.ndarray | None, seq: np.ndarray | None = None, owner: np.ndarray | None = None) -> Runs:
    """The runs of ``times``/``arrays`` starting at ``starts`` (``trunc``: the rows' truncated times;
    ``seq``/``owner``: the runs', None: zeros for the caller to set)."""
    n, width, k = len(times), len(group.fields), len(starts)
    table = np.empty((k, _VALUES + width))
    table[:, 0] = trunc[starts] if trunc is not None else 0
    table[:, 1] = times[starts]
    if k:  # the row counts: each run's to the next run's start, the last's to the end
        np.subtract(starts[1:], starts[:-1], out=table[:-1, 2])
        table[-1, 2] = n - starts[-1]
    ends = None  # (made only for a $last)
    facts = np.zeros(3 * width)  # (``_facts``)
    for j, (_, spec) in enumerate(group.fields):
        if spec.field is None:  # $count: the run's row count
            table[:, _VALUES + j] = 0
            continue
        column = times if spec.field == group.time_field else arrays[spec.field]
        name = spec.name
        if name in ("$sum", "$avg"):
            picked = np.add.reduceat(column, starts)
            integral = bool(_ALL(np.trunc(column) == column))
            facts[_FRACTIONAL * width + j] = 0.0 if integral else 1.0
            facts[_ABS_SUM * width + j] = float(np.abs(column).sum()) if integral else float("inf")
        else:
            if ends is None and name == "$last":
                ends = np.empty_like(starts)
                ends[:-1] = starts[1:]
                ends[-1:] = n
            picked = pick(name, column, starts, ends)  # type: ignore[arg-type]  # (ends: a $last's)
        if name in ("$max", "$min") and column.dtype.kind == "f" and not _ALL(picked):
            # a zero won (a double is false exactly when it is a zero of either sign: one reduction, no
            # comparison array): of equal zeros of both signs the generic accumulator keeps the first, a
            # reduction may not
            facts[_NEG_ZERO * width + j] = 1.0 if _ANY(np.signbit(column) & (column == 0.0)) else 0.0
        table[:, _VALUES + j] = picked
    return Runs(table, facts, trunc is not None, seq, owner)


def truncated(times: np.ndarray, unit_ms: int | None) -> np.ndarray | None:
    return times - times % unit_ms if unit_ms is not None else None


def bucket_runs(group: Any, times: np.ndarray, arrays: dict[str, Any]) -> Runs:
    """The runs of one whole bucket."""
    trunc = truncated(times, group.unit_ms)
    cut = np.empty(len(times), dtype=bool)
    cut[0] = True
    if trunc is not None:
        np.not_equal(trunc[1:], trunc[:-1], out=cut[1:])
    else:
        cut[1:] = False
    return summarize(group, times, arrays, np.flatnonzero(cut), trunc)


def column_ranges(times: np.ndarray, arrays: dict[str, Any], group: Any) -> dict[str, tuple[Any, Any]]:
    """(min, max) of every column a filter condition reads."""
    out = {}
    for path, _op, _operand in group.conditions:
        if path not in out:
            column = times if path == group.time_field else arrays[path]
            out[path] = (column.min().item(), column.max().item())
    return out


def range_checks(group: Any) -> list[tuple[str, Any, bool, Any, bool]] | None:
    """The filter conditions as one range per column: (path, lowest allowed min, strictly above it?,
    highest allowed max, strictly below it?) — every row of a bucket passes exactly when its column
    ranges sit inside (NaN-free columns: a comparison holding at both ends of a range holds for every
    value; ``$eq`` x: min >= x and max <= x). None when an operand is NaN (no row passes)."""
    merged: dict[str, list[Any]] = {}
    for path, op, operand in group.conditions:
        if operand != operand:
            return None
        if path not in merged:
            merged[path] = [-math.inf, False, math.inf, False]
        bounds = merged[path]
        if op in (np.greater, np.greater_equal, np.equal):
            strict = op is np.greater
            if operand > bounds[0] or (operand == bounds[0] and strict):
                bounds[0], bounds[1] = operand, strict
        if op in (np.less, np.less_equal, np.equal):
            strict = op is np.less
            if operand < bounds[2] or (operand == bounds[2] and strict):
                bounds[2], bounds[3] = operand, strict
    return [(path, low, low_strict, high, high_strict) for path, (low, low_strict, high, high_strict) in merged.items()]


def passing(ranges: list[dict[str, tuple[Any, Any]]], checks: list[tuple[str, Any, bool, Any, bool]] | None) -> list[bool]:
    """Per bucket (its filter columns' (min, max): ``column_ranges``), whether every row of it passes
    every filter condition (``checks``: ``range_checks`` of the group)."""
    if checks is None:
        return [False] * len(ranges)
    out = [True] * len(ranges)
    for path, low, low_strict, high, high_strict in checks:
        # v > low, or v == low when not strict (one comprehension: the check per bucket is its cost)
        out = [ok and (v[0] > low or (v[0] == low and not low_strict)) and (v[1] < high or (v[1] == high and not high_strict))
               for ok, v in zip(out, map(itemgetter(path), ranges), strict=True)]
    return out


def passes(ranges: dict[str, tuple[Any, Any]], checks: list[tuple[str, Any, bool, Any, bool]] | None) -> bool:
    """``passing`` of one bucket (the same test, one call: a bucket the ordinary way adds)."""
    if checks is None:
        return False
    for path, low, low_strict, high, high_strict in checks:
        v = ranges[path]
        if not ((v[0] > low or (v[0] == low and not low_strict)) and (v[1] < high or (v[1] == high and not high_strict))):
            return False
    return True


def passing_items(items: list[Any], at: int, checks: list[tuple[str, Any, bool, Any, bool]] | None) -> list[Any]:
    """``items`` (None or tuples holding a bucket's ``column_ranges`` at ``at``, and last the (min, max)
    of the first of the filter's columns in name order: ``first_range``) with None for those of which
    some row fails a filter condition: ``passing`` of their ranges, one pass over them for the
    one-column filter (a time window), reading the two values flat in the item (a chunk's items are
    read cold: each object followed is a cache miss)."""
    if checks is None:
        return [None] * len(items)
    if len(checks) == 1:
        _path, low, low_strict, high, high_strict = checks[0]
        return [item if item is not None
                and (low < (v := item[-2]) or (v == low and not low_strict))
                and ((w := item[-1]) < high or (w == high and not high_strict)) else None
                for item in items]
    known = iter(passing([item[at] for item in items if item is not None], checks))
    return [item if item is not None and next(known) else None for item in items]


def first_range(ranges: dict[str, tuple[Any, Any]]) -> tuple[Any, Any]:
    """The (min, max) of the first column of ``column_ranges`` in name order ((None, None): none)."""
    return ranges[min(ranges)] if ranges else (None, None)
