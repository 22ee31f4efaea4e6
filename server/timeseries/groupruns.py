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

from typing import Any

import numpy as np

_INTEGRAL, _ABS_SUM, _NEG_ZERO = 0, 1, 2  # rows of ``Runs.facts``


class Runs:
    """The runs of some rows as arrays (whole buckets' runs are joined by a few concatenations, not
    per run): ``keys`` int64 [3, n] — each run's truncated time in ms (0 when the group truncates no
    time: ``timed`` False), its first time in ms, its row count; ``values`` float64 [width, n] — what
    accumulator j takes from each run (a time-valued one as the exact float of its ms, below 2**53;
    a ``$count``'s row 0); ``seq``/``owner`` int64 [n] — the bucket's arrival number and meta index
    (the caller's); ``facts`` float64 [3, width] — per accumulator: every value integral (1/0), the
    sum of their absolute values, a ``-0.0`` among them (1/0)."""

    __slots__ = ("seq", "owner", "keys", "values", "facts", "timed")

    def __init__(self, keys: np.ndarray, values: np.ndarray, facts: np.ndarray, timed: bool):
        n = keys.shape[1]
        self.keys, self.values, self.facts, self.timed = keys, values, facts, timed
        self.seq = np.zeros(n, dtype=np.int64)
        self.owner = np.zeros(n, dtype=np.int64)

    @property
    def count(self) -> int:
        return int(self.keys.shape[1])

    def trunc(self) -> list[Any]:
        return self.keys[0].tolist() if self.timed else [None] * self.count

    def integral(self, j: int) -> bool:
        return bool(self.facts[_INTEGRAL, j])

    def abs_sum(self, j: int) -> float:
        return float(self.facts[_ABS_SUM, j])

    def neg_zero(self, j: int) -> bool:
        return bool(self.facts[_NEG_ZERO, j])

    @classmethod
    def joined(cls, width: int, timed: bool, parts: list[tuple[int, int, Runs]]) -> Runs:
        """The runs of ``parts`` ((sequence, owner, runs) in order) one after the other."""
        if not parts:
            out = cls(np.zeros((3, 0), dtype=np.int64), np.zeros((width, 0)), _facts(width), timed)
            return out
        facts = np.stack([runs.facts for _, _, runs in parts])
        merged = np.empty((3, width))
        merged[_INTEGRAL] = facts[:, _INTEGRAL].min(axis=0)
        merged[_ABS_SUM] = facts[:, _ABS_SUM].sum(axis=0)
        merged[_NEG_ZERO] = facts[:, _NEG_ZERO].max(axis=0)
        out = cls(np.concatenate([runs.keys for _, _, runs in parts], axis=1),
                  np.concatenate([runs.values for _, _, runs in parts], axis=1), merged, timed)
        lengths = [runs.count for _, _, runs in parts]
        out.seq = np.repeat(np.fromiter((seq for seq, _, _ in parts), np.int64, len(parts)), lengths)
        out.owner = np.repeat(np.fromiter((owner for _, owner, _ in parts), np.int64, len(parts)), lengths)
        return out

    def taken(self, order: np.ndarray) -> Runs:
        """These runs in ``order`` (a permutation)."""
        out = Runs(self.keys[:, order], self.values[:, order], self.facts, self.timed)
        out.seq, out.owner = self.seq[order], self.owner[order]
        return out


def _facts(width: int) -> np.ndarray:
    facts = np.zeros((3, width))
    facts[_INTEGRAL] = 1.0
    return facts


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
              trunc: np.ndarray | None) -> Runs:
    """The runs of ``times``/``arrays`` starting at ``starts`` (``trunc``: the rows' truncated times;
    ``seq``/``owner`` are the caller's)."""
    n, width = len(times), len(group.fields)
    ends = np.empty_like(starts)
    ends[:-1] = starts[1:]
    ends[-1] = n
    keys = np.empty((3, len(starts)), dtype=np.int64)
    if trunc is not None:
        keys[0] = trunc[starts]
    else:
        keys[0] = 0
    keys[1] = times[starts]
    keys[2] = ends - starts
    values = np.zeros((width, len(starts)))
    facts = _facts(width)
    for j, (_, spec) in enumerate(group.fields):
        if spec.field is None:  # $count: the run's row count
            continue
        column = times if spec.field == group.time_field else arrays[spec.field]
        name = spec.name
        if name in ("$sum", "$avg"):
            picked = np.add.reduceat(column, starts)
            integral = bool(np.array_equal(np.trunc(column), column))
            facts[_INTEGRAL, j] = 1.0 if integral else 0.0
            facts[_ABS_SUM, j] = float(np.abs(column).sum()) if integral else float("inf")
        else:
            picked = pick(name, column, starts, ends)
        if name in ("$max", "$min") and column.dtype.kind == "f" and bool(np.any(picked == 0.0)):
            # equal zeros of both signs: the generic accumulator keeps the first, a reduction may not
            facts[_NEG_ZERO, j] = 1.0 if bool(np.any(np.signbit(column) & (column == 0.0))) else 0.0
        values[j] = picked
    return Runs(keys, values, facts, trunc is not None)


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
