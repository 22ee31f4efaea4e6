"""The naive checker: each TSBS query computed in plain Python over the generated rows.

Deliberately simple and independent of every system under test: it walks the rows of the window one by
one (rows are time-major, so a window is a contiguous run of ticks) and accumulates in dicts. Its output is
the normalized form described in bench.queries. Results are memoized per (query, params), so the same
expectation serves every system in a run.
"""

from __future__ import annotations

from bench.generator import FIELDS, INTERVAL_MS, START_MS, Dataset
from bench.queries import QUERY_TYPES, UNIT_MS, Params, interval_floor, tick_range


class NaiveChecker:
    def __init__(self, dataset: Dataset):
        self.dataset = dataset
        self._memo: dict[tuple[str, Params], list[tuple]] = {}

    def expected(self, query: str, params: Params) -> list[tuple]:
        key = (query, params)
        if key not in self._memo:
            compute = {
                "single-groupby-1-1-1": self._max_by_time,
                "single-groupby-5-8-1": self._max_by_time,
                "cpu-max-all-8": self._max_by_time,
                "double-groupby-1": self._double_groupby,
                "double-groupby-all": self._double_groupby,
                "high-cpu-1": self._high_cpu,
                "lastpoint": self._lastpoint,
                "groupby-orderby-limit": self._groupby_orderby_limit,
            }[query]
            self._memo[key] = compute(query, params)
        return self._memo[key]

    # -- helpers -------------------------------------------------------------------------------------------
    def _rows(self, params: Params, hosts: list[int] | None):
        """(time_ms, host index, [10 values as floats]) for every row of the window, in load order."""
        ds = self.dataset
        for tick in tick_range(ds, params):
            block = ds.values[tick].tolist()
            ms = START_MS + tick * INTERVAL_MS
            for h in range(ds.scale) if hosts is None else hosts:
                yield ms, h, block[h]

    def _field_indexes(self, query: str) -> list[int]:
        return [FIELDS.index(m) for m in QUERY_TYPES[query].metrics]

    # -- the query types -----------------------------------------------------------------------------------
    def _max_by_time(self, query: str, params: Params) -> list[tuple]:
        unit = UNIT_MS[QUERY_TYPES[query].unit]
        fields = self._field_indexes(query)
        hosts = [self.dataset.host_index(h) for h in params.hosts]
        groups: dict[int, list[float]] = {}
        for ms, _, row in self._rows(params, hosts):
            key = interval_floor(ms, unit)
            values = [float(row[i]) for i in fields]
            current = groups.get(key)
            groups[key] = (
                values if current is None else [max(a, b) for a, b in zip(current, values, strict=True)]
            )
        return [(k, tuple(groups[k])) for k in sorted(groups)]

    def _double_groupby(self, query: str, params: Params) -> list[tuple]:
        """Average per (hour, host): the window's ticks of one hour are contiguous, so sum them per host."""
        ds = self.dataset
        fields = self._field_indexes(query)
        by_hour: dict[int, list[int]] = {}
        for tick in tick_range(ds, params):
            by_hour.setdefault(interval_floor(START_MS + tick * INTERVAL_MS, UNIT_MS["hour"]), []).append(
                tick
            )
        out = []
        for hour, ticks in sorted(by_hour.items()):
            blocks = [ds.values[t].tolist() for t in ticks]
            for h in range(ds.scale):
                columns = list(zip(*(block[h] for block in blocks), strict=True))
                avgs = tuple(sum(columns[i]) / len(ticks) for i in fields)
                out.append((hour, ds.tags[h]["hostname"], avgs))
        out.sort(key=lambda r: (r[0], r[1]))
        return out

    def _high_cpu(self, query: str, params: Params) -> list[tuple]:
        hosts = [self.dataset.host_index(h) for h in params.hosts]
        tags = self.dataset.tags
        user = FIELDS.index("usage_user")
        return sorted(
            (ms, tags[h]["hostname"], tuple(float(v) for v in row))
            for ms, h, row in self._rows(params, hosts)
            if row[user] > 90.0
        )

    def _lastpoint(self, query: str, params: Params) -> list[tuple]:
        latest: dict[int, tuple[int, list]] = {}
        for ms, h, row in self._rows(params, None):
            if h not in latest or ms > latest[h][0]:
                latest[h] = (ms, row)
        tags = self.dataset.tags
        return sorted(
            (tags[h]["hostname"], ms, tuple(float(v) for v in row)) for h, (ms, row) in latest.items()
        )

    def _groupby_orderby_limit(self, query: str, params: Params) -> list[tuple]:
        user = FIELDS.index("usage_user")
        groups: dict[int, float] = {}
        for ms, _, row in self._rows(params, None):
            key = interval_floor(ms, UNIT_MS["minute"])
            v = float(row[user])
            if key not in groups or v > groups[key]:
                groups[key] = v
        return [(k, (groups[k],)) for k in sorted(groups, reverse=True)[:5]]
