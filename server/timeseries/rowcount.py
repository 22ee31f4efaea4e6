"""Reads that only count measurements (pure): which pipelines qualify, and their answer from each
bucket's number of accepted rows (``rowfilter.count``) instead of a document per measurement.

A read counts when, after the leading ``$match`` stages the source absorbs, the pipeline goes on with
``$skip``/``$limit`` stages (any number, any order) and then a *counting group*: ``$count`` (which
mongod parses as ``{$group: {_id: {$const: null}, <name>: {$sum: {$const: 1}}}}`` then a
``$project``: document_source_count.cpp), or a ``$group`` whose ``_id`` is a literal and whose every
accumulator is ``$count: {}`` or ``$sum`` of a literal integer (``countDocuments``' ``{_id: 1, n:
{$sum: 1}}``). Such a group reads no field of the measurements and ends in one group (none for no
input), so its answer is the number of measurements that reach it: the skips and limits are
arithmetic on that number, and each bucket adds the rows the filter accepts. mongod's count on a
view runs as that aggregation (count_cmd.cpp: ``[$match, $skip, $limit, $count]``), so the count
command, ``estimatedDocumentCount`` (a count without a query), ``countDocuments`` and an aggregate's
``$count`` are all this one read.

The accumulators' results are the generic ones (``Accumulator.process_repeated``: the same state as
the value fed once per measurement), so types (int32, then long) are the generic ``$group``'s.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Iterator
from typing import Any

from bson.int64 import Int64

from tidemark.query import desugar, interrupt
from tidemark.query.expressions import compile_expression
from tidemark.query.stage_group import parse_accumulated_fields
from tidemark.timeseries.rowfilter import ColumnFilter, count

_INT32 = (-(2**31), 2**31 - 1)
# interruption ticks per bucket counted (``interrupt.tick``: a bucket counted whole costs a fraction of one
# unpacked or decoded, groupbatch.BUCKET_TICKS)
BUCKET_TICKS = 1


class CountPlan:
    """The counting group of a read and the ``$skip``/``$limit`` stages before it."""

    __slots__ = ("group_spec", "steps", "consumed", "needed")

    def __init__(self, group_spec: dict[str, Any], steps: list[tuple[str, int]]):
        self.group_spec = group_spec  # the $group the group stage asks for (``$count``'s desugared form)
        self.steps = steps  # (("$skip" | "$limit"), n) in pipeline order
        self.consumed = len(steps)  # stages of the remaining pipeline the source absorbs
        # the measurements past which the answer no longer changes (None: every one counts)
        self.needed = _needed(steps)

    def reaching(self, total: int) -> int:
        """How many of ``total`` measurements pass the skips and limits."""
        n = total
        for name, k in self.steps:
            n = max(0, n - k) if name == "$skip" else min(n, k)
        return n


def _needed(steps: list[tuple[str, int]]) -> int | None:
    skipped, needed = 0, None
    for name, k in steps:
        if name == "$skip":
            skipped += k
        else:
            needed = skipped + k if needed is None else min(needed, skipped + k)
    return needed


def plan(remaining: list[dict[str, Any]]) -> CountPlan | None:
    """The counting read of the pipeline after the absorbed ``$match`` stages, or None."""
    steps: list[tuple[str, int]] = []
    for stage in remaining:
        if not isinstance(stage, dict) or len(stage) != 1:
            return None
        name, body = next(iter(stage.items()))
        if name in ("$skip", "$limit"):
            # only a value the stage itself takes as is (anything else: the stage's own parse answers)
            if type(body) not in (int, Int64) or body < (1 if name == "$limit" else 0) or body >= 2**63:
                return None
            steps.append((name, int(body)))
            continue
        if name == "$count":
            if type(body) is not str or not body or body.startswith("$") or "." in body or "\0" in body:
                return None
            return CountPlan(desugar.count(body)[0]["$group"], steps)  # (its $project keeps the count)
        if name == "$group" and _counting_group(body):
            return CountPlan(body, steps)
        return None
    return None


def _literal(value: Any) -> bool:
    """A value that is itself, whatever the document (no path, no variable, no operator but a literal)."""
    if isinstance(value, dict):
        return len(value) == 1 and next(iter(value)) in ("$const", "$literal")
    if type(value) is str:
        return not value.startswith("$")
    return value is None or type(value) in (bool, int, float, Int64, _dt.datetime)


def _integer(value: Any) -> bool:
    if isinstance(value, dict) and len(value) == 1 and next(iter(value)) in ("$const", "$literal"):
        value = next(iter(value.values()))
    return type(value) is int and _INT32[0] <= value <= _INT32[1]


def _counting_group(body: Any) -> bool:
    if not isinstance(body, dict) or "_id" not in body or not _literal(body["_id"]):
        return False
    for name, acc in body.items():
        if name == "_id":
            continue
        if not isinstance(acc, dict) or len(acc) != 1:
            return False
        op, arg = next(iter(acc.items()))
        if not ((op == "$sum" and _integer(arg)) or (op == "$count" and arg == {})):
            return False
    return True


def run(counting: CountPlan, buckets: Iterable[list[Any]], event_filter: Any, fields: set[str] | None,
        info: dict[str, Any], column_filter: ColumnFilter | None, time_field: str, meta_field: str | None,
        variables: dict[str, Any] | None) -> Iterator[dict[str, Any]]:
    """The counting group's output (one document, none when no measurement reaches it) over
    ``buckets`` (chunks of bucket views the bucket predicate accepted; interruptible per chunk):
    ``event_filter`` / ``column_filter`` as for ``rowfilter.accepted``. Stops reading once the limits
    are reached."""
    check = None
    total = 0
    needed = counting.needed
    for chunk in buckets:
        for bucket in chunk:
            if check is None and event_filter is not None:
                check = event_filter.get()  # compiled at the first bucket: a read that meets none never does
            interrupt.tick(BUCKET_TICKS)
            info["bucketsUnpacked"] += 1
            total += count(bucket, fields, check, column_filter, info, time_field, meta_field)
            if needed is not None and total >= needed:
                break
        else:
            continue
        break
    return iter(_documents(counting.group_spec, counting.reaching(total), variables))


def _documents(group_spec: dict[str, Any], n: int, variables: dict[str, Any] | None) -> list[dict[str, Any]]:
    if not n:
        return []
    vars_ = variables or {}
    out: dict[str, Any] = {"_id": compile_expression(group_spec["_id"])({}, vars_)}
    for name, spec in parse_accumulated_fields(group_spec, "$group"):
        acc = spec.new()
        acc.process_repeated(spec.evaluate({}, vars_), n)
        out[name] = acc.result()
    return [out]
