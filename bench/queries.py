"""The TSBS query set of performance.md §1: seeded parameters, MongoDB pipelines, result comparison.

A result is compared in a *normalized* form that every system can produce: a list of tuples with times
as epoch milliseconds and numbers as floats.

- single-groupby-*, cpu-max-all-8:  [(bucket_ms, (max, ...)), ...]                in ``_id`` order
- double-groupby-*:                 [(hour_ms, hostname, (avg, ...)), ...]        in (time, hostname) order
- high-cpu-1:                       sorted [(time_ms, hostname, (10 fields)), ...] (the pipeline has no sort)
- lastpoint:                        sorted [(hostname, time_ms, (10 fields)), ...] ($group order is free)
- groupby-orderby-limit:            [(minute_ms, (max,)), ...]                     newest first, at most 5

Parameters are drawn from ``random.Random(f"{seed}:{query}")``, so every system gets the same windows and
hosts, and adding a query type does not change the others'.
"""

from __future__ import annotations

import datetime as dt
import math
import random
from dataclasses import dataclass

from bench.generator import FIELDS, START_MS, Dataset

HOUR_MS = 3_600_000
MINUTE_MS = 60_000


@dataclass(frozen=True)
class QueryType:
    name: str
    window_ms: int | None  # None: no window (lastpoint) or open start (groupby-orderby-limit)
    hosts: int  # distinct random hosts; 0 = all hosts
    metrics: tuple[str, ...]
    unit: str  # $dateTrunc unit of the grouping ("" when not grouped by time)


QUERY_TYPES: dict[str, QueryType] = {
    q.name: q
    for q in (
        QueryType("single-groupby-1-1-1", HOUR_MS, 1, FIELDS[:1], "minute"),
        QueryType("single-groupby-5-8-1", HOUR_MS, 8, FIELDS[:5], "minute"),
        QueryType("cpu-max-all-8", 8 * HOUR_MS, 8, FIELDS, "hour"),
        QueryType("double-groupby-1", 12 * HOUR_MS, 0, FIELDS[:1], "hour"),
        QueryType("double-groupby-all", 12 * HOUR_MS, 0, FIELDS, "hour"),
        QueryType("high-cpu-1", 12 * HOUR_MS, 1, FIELDS, ""),
        QueryType("lastpoint", None, 0, FIELDS, ""),
        QueryType("groupby-orderby-limit", None, 0, FIELDS[:1], "minute"),
    )
}
UNIT_MS = {"minute": MINUTE_MS, "hour": HOUR_MS}


@dataclass(frozen=True)
class Params:
    """One query instance: time window [start_ms, end_ms) and hosts (empty = all hosts)."""

    start_ms: int
    end_ms: int
    hosts: tuple[str, ...]

    def describe(self) -> str:
        def iso(ms: int) -> str:
            return ms_to_datetime(ms).isoformat() + "Z"

        hosts = f", hosts {list(self.hosts)}" if self.hosts else ""
        return f"[{iso(self.start_ms)}, {iso(self.end_ms)}){hosts}"


class ResultMismatch(AssertionError):
    """A system answered a query differently from the naive computation: the benchmark must stop."""


def ms_to_datetime(ms: int) -> dt.datetime:
    return dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=ms)


def datetime_to_ms(d: dt.datetime) -> int:
    if d.tzinfo is not None:
        d = d.astimezone(dt.UTC).replace(tzinfo=None)
    delta = d - dt.datetime(1970, 1, 1)
    return (delta.days * 86400 + delta.seconds) * 1000 + delta.microseconds // 1000


def make_params(query: str, dataset: Dataset, seed: int, runs: int) -> list[Params]:
    """``runs`` seeded parameter sets: windows start uniformly at random inside the data."""
    q = QUERY_TYPES[query]
    rng = random.Random(f"{seed}:{query}")
    data_start, data_end = START_MS, dataset.end_ms
    hostnames = [t["hostname"] for t in dataset.tags]
    out = []
    for _ in range(runs):
        hosts = tuple(rng.sample(hostnames, min(q.hosts, len(hostnames)))) if q.hosts else ()
        if q.name == "lastpoint":
            out.append(Params(data_start, data_end, ()))
        elif q.name == "groupby-orderby-limit":
            out.append(Params(data_start, rng.randint(data_start + 1, data_end), ()))
        else:
            window = min(q.window_ms, data_end - data_start)
            start = rng.randint(data_start, data_end - window)
            out.append(Params(start, start + window, hosts))
    return out


def pipeline(query: str, p: Params) -> list[dict]:
    """The MongoDB aggregation pipeline of performance.md §1 for one parameter set."""
    q = QUERY_TYPES[query]
    window = {"$gte": ms_to_datetime(p.start_ms), "$lt": ms_to_datetime(p.end_ms)}
    if query.startswith("single-groupby") or query == "cpu-max-all-8":
        group = {"_id": {"$dateTrunc": {"date": "$time", "unit": q.unit}}}
        group.update({f"max_{m}": {"$max": f"${m}"} for m in q.metrics})
        return [
            {"$match": {"time": window, "tags.hostname": {"$in": list(p.hosts)}}},
            {"$group": group},
            {"$sort": {"_id": 1}},
        ]
    if query.startswith("double-groupby"):
        group = {
            "_id": {"time": {"$dateTrunc": {"date": "$time", "unit": "hour"}}, "hostname": "$tags.hostname"}
        }
        group.update({f"avg_{m}": {"$avg": f"${m}"} for m in q.metrics})
        return [
            {"$match": {"time": window}},
            {"$group": group},
            {"$sort": {"_id.time": 1, "_id.hostname": 1}},
        ]
    if query == "high-cpu-1":
        return [
            {"$match": {"time": window, "usage_user": {"$gt": 90.0}, "tags.hostname": {"$in": list(p.hosts)}}}
        ]
    if query == "lastpoint":
        group = {"_id": "$tags.hostname", "time": {"$first": "$time"}}
        group.update({m: {"$first": f"${m}"} for m in FIELDS})
        return [{"$sort": {"tags.hostname": 1, "time": -1}}, {"$group": group}]
    if query == "groupby-orderby-limit":
        return [
            {"$match": {"time": {"$lt": ms_to_datetime(p.end_ms)}}},
            {
                "$group": {
                    "_id": {"$dateTrunc": {"date": "$time", "unit": "minute"}},
                    "max_value": {"$max": "$usage_user"},
                }
            },
            {"$sort": {"_id": -1}},
            {"$limit": 5},
        ]
    raise KeyError(query)


def normalize_mongo(query: str, docs: list[dict]) -> list[tuple]:
    """Normalize the documents a MongoDB-compatible server returned for ``pipeline(query, ...)``."""
    q = QUERY_TYPES[query]
    if query.startswith("single-groupby") or query == "cpu-max-all-8":
        return [(datetime_to_ms(d["_id"]), tuple(_num(d.get(f"max_{m}")) for m in q.metrics)) for d in docs]
    if query.startswith("double-groupby"):
        return [
            (
                datetime_to_ms(d["_id"]["time"]),
                d["_id"]["hostname"],
                tuple(_num(d.get(f"avg_{m}")) for m in q.metrics),
            )
            for d in docs
        ]
    if query == "high-cpu-1":
        return sorted(
            (datetime_to_ms(d["time"]), d["tags"]["hostname"], tuple(_num(d.get(m)) for m in FIELDS))
            for d in docs
        )
    if query == "lastpoint":
        return sorted(
            (d["_id"], datetime_to_ms(d["time"]), tuple(_num(d.get(m)) for m in FIELDS)) for d in docs
        )
    if query == "groupby-orderby-limit":
        return [(datetime_to_ms(d["_id"]), (_num(d.get("max_value")),)) for d in docs]
    raise KeyError(query)


def _num(v) -> float | None:
    return None if v is None else float(v)


def _close(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        if a is None or b is None:
            return a is b
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def compare(system: str, query: str, params: Params, got: list[tuple], expected: list[tuple]) -> None:
    """Raise ResultMismatch (showing both results) unless ``got`` equals ``expected`` (floats approximately)."""
    if len(got) == len(expected) and all(_close(g, e) for g, e in zip(got, expected, strict=True)):
        return
    first_diff = next(
        (i for i, (g, e) in enumerate(zip(got, expected, strict=False)) if not _close(g, e)),
        min(len(got), len(expected)),
    )
    raise ResultMismatch(
        f"{system}: wrong result for {query} {params.describe()}\n"
        f"  expected {len(expected)} rows, got {len(got)}; first difference at row {first_diff}\n"
        f"  expected: {_preview(expected, first_diff)}\n"
        f"  got:      {_preview(got, first_diff)}"
    )


def _preview(rows: list, at: int) -> str:
    lo = max(0, at - 1)
    return f"[{lo}:] {rows[lo : lo + 3]!r}" + (" ..." if len(rows) > lo + 3 else "")


def interval_floor(ms: int, unit_ms: int) -> int:
    return ms - ms % unit_ms


def tick_range(dataset: Dataset, p: Params) -> range:
    """Ticks whose time lies in [start_ms, end_ms)."""
    return range(dataset.tick_of_ms(p.start_ms), dataset.tick_of_ms(p.end_ms))
