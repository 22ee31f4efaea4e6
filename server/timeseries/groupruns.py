"""Run summaries of dense rows for the columnar ``$group`` (pure).

A *run* is a maximal stretch of consecutive rows of one bucket with one truncated time: all its rows
belong to one group. ``Runs`` holds, per run, what each accumulator takes from it (the total and count
of a ``$sum``/``$avg``, the max/min, the first/last value, the row count) plus the facts that say
whether those values may join ``groupstate.DenseGroups`` exactly (integral values and their absolute
sum for sums, ``-0.0`` for max/min).

``bucket_runs`` summarizes a whole bucket once; a stored bucket keeps it with its cached parts, so a
later query whose filter every row of the bucket passes (decided from the bucket's column ranges,
``passes_all``) takes the bucket's runs without touching its rows. ``row_runs`` summarizes rows cut
into runs at query time (buckets the filter cuts, live buckets). Either way a run's values are the
same reductions over the same rows in the same order.
"""

from __future__ import annotations

from itertools import chain
from typing import Any

import numpy as np


class Runs:
    """Per-run lists (see the module); ``extend`` appends another ``Runs`` tagged with a bucket
    sequence number (the order buckets arrived in)."""

    __slots__ = ("seq", "owner", "trunc", "first_time", "count", "values", "integral", "abs_sum", "neg_zero")

    def __init__(self, width: int):
        self.seq: list[int] = []
        self.owner: list[int] = []
        self.trunc: list[Any] = []
        self.first_time: list[int] = []
        self.count: list[int] = []
        self.values: list[list[Any]] = [[] for _ in range(width)]
        self.integral = [True] * width
        self.abs_sum = [0.0] * width
        self.neg_zero = [False] * width

    @classmethod
    def joined(cls, width: int, parts: list[tuple[int, int, Runs]]) -> Runs:
        """The runs of ``parts`` ((sequence, owner, runs) in order) one after the other."""
        out = cls(width)
        out.seq = [seq for seq, _, runs in parts for _ in runs.count]
        out.owner = [owner for _, owner, runs in parts for _ in runs.count]
        out.trunc = list(chain.from_iterable(runs.trunc for _, _, runs in parts))
        out.first_time = list(chain.from_iterable(runs.first_time for _, _, runs in parts))
        out.count = list(chain.from_iterable(runs.count for _, _, runs in parts))
        for j in range(width):
            out.values[j] = list(chain.from_iterable(runs.values[j] for _, _, runs in parts))
            out.integral[j] = all(runs.integral[j] for _, _, runs in parts)
            out.abs_sum[j] = sum(runs.abs_sum[j] for _, _, runs in parts)
            out.neg_zero[j] = any(runs.neg_zero[j] for _, _, runs in parts)
        return out

    def extend(self, other: Runs, seq: int, owner: int) -> None:
        n = len(other.count)
        self.seq.extend([seq] * n)
        self.owner.extend([owner] * n)
        self.trunc.extend(other.trunc)
        self.first_time.extend(other.first_time)
        self.count.extend(other.count)
        for j, values in enumerate(other.values):
            self.values[j].extend(values)
            self.integral[j] = self.integral[j] and other.integral[j]
            self.abs_sum[j] += other.abs_sum[j]
            self.neg_zero[j] = self.neg_zero[j] or other.neg_zero[j]



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

def summarize(runs: Runs, group: Any, times: np.ndarray, arrays: dict[str, Any], starts: np.ndarray,
              trunc: np.ndarray | None) -> None:
    """Append the runs of ``times``/``arrays`` starting at ``starts`` (``trunc``: the rows' truncated
    times) to ``runs`` (``seq``/``owner`` are the caller's)."""
    n = len(times)
    ends = np.empty_like(starts)
    ends[:-1] = starts[1:]
    ends[-1] = n
    runs.trunc.extend(trunc[starts].tolist() if trunc is not None else [None] * len(starts))
    runs.first_time.extend(times[starts].tolist())
    runs.count.extend((ends - starts).tolist())
    for j, (_, spec) in enumerate(group.fields):
        if spec.field is None:  # $count: the run's row count
            continue
        column = times if spec.field == group.time_field else arrays[spec.field]
        name = spec.name
        if name in ("$sum", "$avg"):
            picked = np.add.reduceat(column, starts)
            integral = bool(np.array_equal(np.trunc(column), column))
            runs.integral[j] = runs.integral[j] and integral
            runs.abs_sum[j] += float(np.abs(column).sum()) if integral else float("inf")
        else:
            picked = pick(name, column, starts, ends)
        if name in ("$max", "$min") and column.dtype.kind == "f" and bool(np.any(picked == 0.0)):
            # equal zeros of both signs: the generic accumulator keeps the first, a reduction may not
            runs.neg_zero[j] = runs.neg_zero[j] or bool(np.any(np.signbit(column) & (column == 0.0)))
        runs.values[j].extend(picked.tolist())


def truncated(times: np.ndarray, unit_ms: int | None) -> np.ndarray | None:
    return times - times % unit_ms if unit_ms is not None else None


def bucket_runs(group: Any, times: np.ndarray, arrays: dict[str, Any]) -> Runs:
    """The runs of one whole bucket."""
    runs = Runs(len(group.fields))
    trunc = truncated(times, group.unit_ms)
    cut = np.empty(len(times), dtype=bool)
    cut[0] = True
    if trunc is not None:
        np.not_equal(trunc[1:], trunc[:-1], out=cut[1:])
    else:
        cut[1:] = False
    summarize(runs, group, times, arrays, np.flatnonzero(cut), trunc)
    return runs


def column_ranges(times: np.ndarray, arrays: dict[str, Any], group: Any) -> dict[str, tuple[Any, Any]]:
    """(min, max) of every column a filter condition reads."""
    out = {}
    for path, _op, _operand in group.conditions:
        if path not in out:
            column = times if path == group.time_field else arrays[path]
            out[path] = (column.min().item(), column.max().item())
    return out


_HOLDS_FOR_RANGE = {  # by the condition's ufunc (columnar.plan): does it hold for every value in [low, high]?
    np.greater: lambda low, high, x: low > x,
    np.greater_equal: lambda low, high, x: low >= x,
    np.less: lambda low, high, x: high < x,
    np.less_equal: lambda low, high, x: high <= x,
    np.equal: lambda low, high, x: low == x and high == x,
}


def passes_all(ranges: dict[str, tuple[Any, Any]], group: Any) -> bool:
    """True when every row of a bucket with these column ranges passes every filter condition
    (NaN-free columns: a comparison holding at both ends of the range holds for every value)."""
    for path, op, operand in group.conditions:
        low, high = ranges[path]
        if not _HOLDS_FOR_RANGE[op](low, high, operand):
            return False
    return True
