"""Routing an insert's measurements (batch.py) into buckets with the rules of rules.py: the one router.

``route(catalog, state, batch, rows, limits, loader)`` gives exactly the buckets, sizes, statistics and
rollovers that taking the measurements one by one in arrival order gives, but decides the common case
for a whole column batch at once:

1. every row's series and its candidate slot among the series' hot buckets in the batch's table (the
   open bucket first, then recently archived ones: writers whose times interleave land vectorized);
2. rules 1-3 and 5 for those rows at once (time range, count, running size); a series whose rows all
   fit one candidate appends them with one fancy-indexed assignment per field — if that candidate is
   not the series' open bucket, the open one is archived and the candidate reopened first (counted
   like one by one);
3. every other series goes row by row (``_route_series``): each rule is applied to the first row that
   breaks it, in the rules' order, and the rows in between are appended as one run. This is also the
   whole path of a ``RowBatch``.

``loader(state, sid, t_ms)`` returns a stored bucket document to reopen (reopen.py), or None.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tidemark.timeseries import rules
from tidemark.timeseries.batch import ColumnBatch, table_key_of_row
from tidemark.timeseries.bucketdoc import MISSING, round_start_seconds
from tidemark.timeseries.catalog import BUCKET_OVERHEAD, META_COPIES, now_ms
from tidemark.timeseries.minmax import copy_value, merge_extreme

Loader = Any  # (state, sid, t_ms) -> stored bucket document | None


def route(catalog: Any, state: Any, batch: Any, rows: np.ndarray, limits: rules.Limits, loader: Loader) -> None:
    """Append rows ``rows`` (ascending positions in ``batch``) of ``batch`` to their buckets."""
    catalog.clock = max(catalog.clock + 1, _now())
    catalog.limits = limits  # each new bucket first makes room under these (catalog.make_room)
    sids = batch.sids[rows]
    if isinstance(batch, ColumnBatch):
        table = state.table(batch.table_key)
        rows = _route_vectorized(catalog, state, table, batch, rows, sids, limits)
        if not len(rows):
            return
        assert batch.sids is not None  # set by ingest.series_ids before any routing
        sids = batch.sids[rows]
        if _open_crossing(catalog, state, table, batch, rows, sids, limits, loader):
            rows = _route_vectorized(catalog, state, table, batch, rows, sids, limits)
            if not len(rows):
                return
            sids = batch.sids[rows]
    order = np.argsort(sids, kind="stable")
    sorted_sids = sids[order]
    cuts = np.flatnonzero(np.diff(sorted_sids)) + 1
    groups = np.split(order, cuts)
    groups.sort(key=lambda group: int(group[0]))  # series in order of first appearance, like one by one
    for group in groups:
        _route_series(catalog, state, batch, int(sids[group[0]]), rows[group], limits, loader)


def _now() -> int:
    return now_ms()


# ------------------------------------------------------------------ the vectorized part


def _route_vectorized(catalog: Any, state: Any, table: Any, batch: ColumnBatch, rows: np.ndarray, sids: np.ndarray,
                      limits: rules.Limits) -> np.ndarray:
    """Append each series' leading rows that fit one hot bucket of ``table``; return the others."""
    n = len(rows)
    times = batch.times[rows]
    # each row's candidate: the first of its series' hot slots (the open bucket first) that is pure and
    # holds its time; the first hot slot decides most rows, so the others are looked at only for the rest
    first = table.hot_slots(sids, 1)[:, 0]
    safe = np.where(first >= 0, first, 0)
    slots = np.where((first >= 0) & table.pure[safe] & rules.within(table.start_ms[safe], times, limits), first, -1)
    rest = np.flatnonzero(slots < 0)
    if len(rest):
        slots[rest] = _later_candidates(table, sids[rest], times[rest], limits)
        if len(rest) == n and (slots < 0).all():
            return rows
    # rows grouped by slot (arrival order kept inside a group)
    order = np.argsort(slots, kind="stable")
    sorted_slots = slots[order]
    starts_at = np.flatnonzero(np.concatenate(([True], sorted_slots[1:] != sorted_slots[:-1])))
    lengths = np.diff(np.append(starts_at, n))
    group_slots = sorted_slots[starts_at]
    valid = sorted_slots >= 0
    safe_sorted = np.where(valid, sorted_slots, 0)
    rank = np.arange(n) - np.repeat(starts_at, lengths)
    positions = table.count[safe_sorted] + rank
    sizes = table.append_sizes(positions)
    running = np.cumsum(sizes)
    before = np.repeat(running[starts_at] - sizes[starts_at], lengths)
    ok = valid & rules.room(positions, table.size[safe_sorted] + running - before, limits)
    # a series' rows are taken up to the first one (arrival order) that does not go to the slot of its
    # first row or does not fit there (``ok`` only falls along a slot's rows: positions and sizes grow);
    # the rest take the rules path, which then sees the bucket exactly as one by one would
    row_ok = np.empty(n, bool)
    row_ok[order] = ok
    sid_order = np.argsort(sids, kind="stable")
    sid_sorted = sids[sid_order]
    sid_starts = np.flatnonzero(np.concatenate(([True], sid_sorted[1:] != sid_sorted[:-1])))
    series_rows = np.diff(np.append(sid_starts, n))
    slot_by_sid = slots[sid_order]
    good = (slot_by_sid == np.repeat(slot_by_sid[sid_starts], series_rows)) & row_ok[sid_order]
    at = np.arange(n)
    ends = np.minimum.reduceat(np.where(good, n, at), sid_starts)  # each series' first row not taken
    series_ok = ends > sid_starts
    take_by_sid = at < np.repeat(ends, series_rows)
    take = np.empty(n, bool)
    take[sid_order] = take_by_sid
    if not take.any():
        return rows
    # series whose candidate is not their open bucket: one by one would archive the open one (it cannot
    # hold the series' first row) and reopen the candidate; a series whose open bucket — of another
    # layout — does hold that time would be tried there first: it takes the rules path instead
    if _switch(catalog, state, table, batch, rows, sid_sorted[sid_starts], slot_by_sid[sid_starts],
               sid_order[sid_starts], series_ok, limits):
        take[sid_order] = take_by_sid & np.repeat(series_ok, series_rows)
        if not take.any():
            return rows
    taken = take[order]
    table.reserve_rows(int(positions[taken].max()) + 1)
    # each taken row's place in the flattened (slots x cap) arrays, in slot order (ascending: a slot's
    # rows take consecutive positions): one 1-D scatter per field (a 2-D fancy index costs ~6x) that
    # walks the arrays forwards, ~1/3 cheaper than in arrival order (a TSBS batch's rows alternate
    # between the slots: every write another cache line of mostly cold arrays)
    flat = safe_sorted * table.cap + positions
    source = rows[order]
    if not taken.all():
        source, flat = source[taken], flat[taken]
    for name in table.varying:
        table.data[name].reshape(-1)[flat] = batch.columns[name][source]
    fast_groups = np.repeat(np.arange(len(group_slots)), lengths)[taken]
    fast_slots, first_index, counts = np.unique(fast_groups, return_index=True, return_counts=True)
    fast_slots = group_slots[fast_slots]
    grown = np.add.reduceat(sizes[taken], first_index)
    table.count[fast_slots] += counts
    table.size[fast_slots] += grown
    catalog.appended_slots(table, fast_slots, int(grown.sum()))
    return rows[~take]


def _later_candidates(table: Any, sids: np.ndarray, times: np.ndarray, limits: rules.Limits) -> np.ndarray:
    """For rows (arrival order) that their series' first hot slot does not take: the slot that takes the
    series' first such row — the first of its other hot slots that is pure and holds that row's time —
    for each of its rows that slot holds; -1 for the others (and for every row of a series none holds).

    Per series, not per row against every hot slot (a parallel backfill keeps a bucket per writer hot for
    each series, and each batch misses the open one): only a series' rows that go where its first row goes
    are taken (``_route_vectorized``), and one by one, once the first row has reopened that bucket, it is
    the open one, tried first for each later row and taking every one it holds — so a row that bucket does
    not hold stops the series there whichever other slot would hold it."""
    series, first_rows, inverse = np.unique(sids, return_index=True, return_inverse=True)
    hot = table.hot_slots(series)[:, 1:]  # series x (HOT - 1)
    safe = np.where(hot >= 0, hot, 0)
    inside = (hot >= 0) & table.pure[safe] & rules.within(table.start_ms[safe], times[first_rows, None], limits)
    found = np.where(inside.any(axis=1), hot[np.arange(len(series)), np.argmax(inside, axis=1)], -1)[inverse]
    held = np.where(found >= 0, found, 0)
    return np.where((found >= 0) & rules.within(table.start_ms[held], times, limits), found, -1)


def _open_crossing(catalog: Any, state: Any, table: Any, batch: ColumnBatch, rows: np.ndarray, sids: np.ndarray,
                   limits: rules.Limits, loader: Loader) -> bool:
    """The rows the vectorized path left (``rows``, of series ``sids``) when each of their series opens
    a new bucket at its first one by the rules (its open bucket, if any, does not hold that time, no
    archived bucket does, nor a stored one) and all its rows fit that bucket: the typical bucket
    boundary of a time-ordered load. Storage is asked here for the series that would ask it (once per
    series, as ``_reopen`` records it: nothing found is the same answer the rules path would get). The buckets are opened by the rules (``_decide``) for
    every series first, in order of first appearance as one by one opens them, and True is returned:
    the vectorized path then appends the rows (one scatter per field for all, instead of the rows path
    per series). Otherwise nothing is done (False).

    One by one appends a series' rows before the next series' bucket opens; opening them all first
    changes what the memory rule (``catalog.make_room``) sees at each open, so it is done only when
    everything this can add (the buckets, their rows, table growth) leaves the catalog under the
    memory threshold: no open closes anything either way."""
    n = len(rows)
    order = np.argsort(sids, kind="stable")
    sorted_sids = sids[order]
    starts_at = np.flatnonzero(np.concatenate(([True], sorted_sids[1:] != sorted_sids[:-1])))
    lengths = np.diff(np.append(starts_at, n))
    firsts = order[starts_at]  # each series' first row left (a position in ``rows``)
    series = state.series
    opened, archived, queried, metas = series.open, series.archived, series.queried, series.metas
    parting = series.parting
    asks = loader is not None and not catalog.direct_writes.get(state.ns)
    series_sids = sorted_sids[starts_at].tolist()
    first_times = batch.times[rows[firsts]].tolist()
    starts_s: list[int] = []
    meta_bytes: list[int] = []
    for sid, t in zip(series_sids, first_times, strict=True):
        current = opened[sid]
        if current is not None and rules.time_reason(current.start_ms, t, limits) is None:
            return False  # rules 3-5 refused it (count, schema, size): the rules path decides
        if any(rules.in_range(b.start_ms, t, limits) for b in archived[sid]):
            return False
        if any(rules.in_range(b.start_ms, t, limits) for b in parting.get(sid, ())):
            return False  # (the rules path resumes it)
        if asks and not queried[sid]:  # storage is asked now, as ``_reopen`` would ask it
            queried[sid] = True
            if loader(state, sid, t) is not None:
                queried[sid] = False  # (the rules path asks again, reopens it and counts the answer)
                return False
            catalog.storage_answered(state, False)
        starts_s.append(round_start_seconds(t, limits.rounding_s))
        meta_bytes.append(rules.meta_size(metas[sid]))
    positions = np.arange(n) - np.repeat(starts_at, lengths)
    sizes = table.append_sizes(positions)
    running = np.cumsum(sizes)
    before = np.repeat(running[starts_at] - sizes[starts_at], lengths)  # (a new bucket's size starts at 0)
    start_ms = np.repeat(np.asarray(starts_s, np.int64) * 1000, lengths)
    if not (rules.within(start_ms, batch.times[rows[order]], limits) & rules.room(positions, running - before,
                                                                                  limits)).all():
        return False
    k = len(series_sids)
    row_bytes = table.row_bytes_at(int(lengths.max()))
    adds = (k * (BUCKET_OVERHEAD + row_bytes) + META_COPIES * sum(meta_bytes)  # (catalog.footprint)
            + table.live * (row_bytes - table.row_bytes))
    if catalog.memory - catalog.leaving_bytes + adds > limits.memory_threshold:
        return False
    for i in np.argsort(firsts).tolist():
        row = int(rows[firsts[i]])
        _, new = _decide(catalog, state, batch, series_sids[i], row, first_times[i], limits, loader)
        assert new  # what the checks above foresaw
    return True


def _switch(catalog: Any, state: Any, table: Any, batch: ColumnBatch, rows: np.ndarray, series_sids: np.ndarray,
            series_slots: np.ndarray, first_rows: np.ndarray, series_ok: np.ndarray, limits: rules.Limits) -> bool:
    """Archive/reopen for the taken series whose candidate is not their open bucket, all at once;
    True when a series had to be given back to the rules path (``series_ok`` cleared for it)."""
    opened = state.series.open
    buckets = table.buckets
    taken = np.flatnonzero(series_ok)
    firsts = batch.times[rows[first_rows[taken]]].tolist()
    sids: list[int] = []
    reopened: list[Any] = []
    reasons: list[rules.Rollover | None] = []
    given_back = False
    for k, sid, slot, t in zip(taken.tolist(), series_sids[taken].tolist(), series_slots[taken].tolist(), firsts,
                               strict=True):
        bucket = buckets[slot]
        current = opened[sid]
        if current is bucket:
            continue
        reason = None
        if current is not None:
            reason = rules.time_reason(current.start_ms, t, limits)
            if reason is None:
                series_ok[k], given_back = False, True
                continue
        sids.append(sid)
        reopened.append(bucket)
        reasons.append(reason)
    if reopened:
        catalog.switch(state, table, sids, reopened, reasons)
    return given_back


# ------------------------------------------------------------------ one series, row by row


class _Run:
    """The state of a bucket as rows are tentatively added to it (what the rules read): count, size,
    columns (the bucket's, overlaid with the running schema of every field the run's rows hold)."""

    __slots__ = ("count", "size", "columns", "_own")

    def __init__(self, bucket: Any):
        self.count, self.size, self.columns = bucket.count, bucket.size, rules.held_fields(bucket)
        self._own = False

    def add(self, row: dict[str, Any], size: int, meta_field: str | None) -> None:
        self.count += 1
        self.size += size
        if not self._own:
            self.columns, self._own = dict(self.columns), True
        columns = self.columns
        for name, value in row.items():
            if name == meta_field:
                continue
            column = columns.get(name)
            current = column.schema() if column is not None else MISSING
            columns[name] = _Schema(copy_value(value) if current is MISSING else merge_extreme(copy_value(current), value, -1))


class _Schema:
    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value

    def schema(self) -> Any:
        return self.value


def _route_series(catalog: Any, state: Any, batch: Any, sid: int, rows: np.ndarray, limits: rules.Limits,
                  loader: Loader) -> None:
    """Rows ``rows`` (arrival order) of series ``sid``, one rule decision at a time."""
    meta_field = state.options.meta_field
    is_columns = isinstance(batch, ColumnBatch)
    i, m = 0, len(rows)
    while i < m:
        row = rows[i]
        t = int(batch.times[row])
        bucket, first = _decide(catalog, state, batch, sid, row, t, limits, loader)
        if is_columns:
            run, added = _fit_columns(batch, bucket, rows[i:], limits, first)
            _append_columns(catalog, batch, bucket, rows[i:i + run], added)
        else:
            run, added = _fit_rows(batch, bucket, rows[i:], limits, meta_field)
            bucket.append_rows(batch.fields(rows[i:i + run]), run, added)
            catalog.appended(bucket, added)
        i += run


def _decide(catalog: Any, state: Any, batch: Any, sid: int, row: int, t: int, limits: rules.Limits,
            loader: Loader) -> tuple[Any, bool]:
    """The bucket the row ``row`` (time ``t``) goes to, by the rules in order; (bucket, is it new)."""
    series = state.series
    bucket = series.open[sid]
    if bucket is not None:
        reason = rules.time_reason(bucket.start_ms, t, limits)
        if reason is None:
            reason = _reason(batch, bucket, row, limits, state.options.meta_field)
        if reason is None:
            return bucket, False
        catalog.rollover(state, bucket, reason)
        action = reason.action
        if action is rules.Action.KEEP:
            return bucket, False
        if action is rules.Action.ARCHIVE:
            reopened = _reopen(catalog, state, batch, sid, row, t, limits, loader)
            if reopened is not None:
                return reopened, False
        return _open(catalog, state, batch, sid, row, t, limits, loader), True
    reopened = _reopen(catalog, state, batch, sid, row, t, limits, loader)
    if reopened is not None:
        return reopened, False
    return _open(catalog, state, batch, sid, row, t, limits, loader, first=True), True


def _reason(batch: Any, bucket: Any, row: int, limits: rules.Limits, meta_field: str | None) -> rules.Rollover | None:
    """Rules 3-5 for one row against a bucket."""
    if isinstance(batch, ColumnBatch):
        return rules.columns_reason(bucket, batch, limits)
    record = batch.rows[row]
    size = rules.measurement_size(rules.held_fields(bucket).__contains__, bucket.count, record, meta_field)
    return rules.row_reason(bucket, record, size, limits, meta_field)


def _open(catalog: Any, state: Any, batch: Any, sid: int, row: int, t: int, limits: rules.Limits,
          loader: Loader | None, *, first: bool = False) -> Any:
    """A new bucket for the row (``first``: the series has no bucket in memory to roll over from)."""
    if isinstance(batch, ColumnBatch):
        key = batch.table_key
    else:
        key = table_key_of_row(batch.rows[row], state.options.time_field, state.options.meta_field)
    return catalog.open(state, state.table(key), sid, t, limits.rounding_s, first=first,
                        taken=getattr(loader, "taken", None))  # (a bare function loader asks nothing)


def _reopen(catalog: Any, state: Any, batch: Any, sid: int, row: int, t: int, limits: rules.Limits,
            loader: Loader) -> Any:
    """A reopenable bucket of the series whose range holds ``t`` and that passes rules 3-5 for the row:
    an archived one in memory (newest first), else a stored one (asked of storage once per series until
    a reopenable bucket of it leaves memory again)."""
    meta_field = state.options.meta_field
    archived = state.series.archived[sid]
    for bucket in reversed(list(archived)):
        if not rules.in_range(bucket.start_ms, t, limits):
            continue
        if bucket.count >= limits.max_count:
            catalog.retire(state, bucket)  # full: only its full write is left to do
            continue
        if not rules.takes(_reason(batch, bucket, row, limits, meta_field)):
            continue
        catalog.reopen(state, bucket)
        return bucket
    series = state.series
    for bucket in reversed(series.parting.get(sid, [])):  # closed for memory or retired, not yet written
        if rules.in_range(bucket.start_ms, t, limits) and rules.takes(_reason(batch, bucket, row, limits, meta_field)):
            catalog.resume(state, bucket)
            return bucket
    if series.queried[sid] or loader is None or catalog.direct_writes.get(state.ns):
        return None
    series.queried[sid] = True
    doc = loader(state, sid, t)
    if doc is not None and state.live.get(doc["_id"]) is not None:
        doc = None  # in memory already (closed, or archived and refused above)
    catalog.storage_answered(state, doc is not None)
    if doc is None:
        return None
    bucket = catalog.load(state, doc, sid)
    if bucket is None or not rules.takes(_reason(batch, bucket, row, limits, meta_field)):
        catalog.unload(state, bucket)
        return None
    catalog.reopened_by_query(state, bucket)
    return bucket


# ------------------------------------------------------------------ runs of a column batch


def _fit_columns(batch: ColumnBatch, bucket: Any, rows: np.ndarray, limits: rules.Limits, first: bool) -> tuple[int, int]:
    """How many of ``rows`` (the first accepted) the bucket takes, and the bytes they add."""
    if len(rows) == 1:  # the one row of a new series, mostly: no rule left to apply, no arrays
        return 1, rules.column_size(batch, bucket)
    sizes = rules.column_sizes(batch, bucket, len(rows))
    run = rules.fits(bucket.count, bucket.size, bucket.start_ms, batch.times[rows], sizes, limits)
    return run, int(sizes[:run].sum())


def _append_columns(catalog: Any, batch: ColumnBatch, bucket: Any, rows: np.ndarray, added: int) -> None:
    if bucket.pure and bucket.table.key == batch.table_key:
        bucket.append_table_rows(batch.columns, rows, added)
    else:
        bucket.append_rows(batch.fields(rows), len(rows), added)
    catalog.appended(bucket, added)


# ------------------------------------------------------------------ runs of dict rows


def _fit_rows(batch: Any, bucket: Any, rows: np.ndarray, limits: rules.Limits, meta_field: str | None) -> tuple[int, int]:
    """How many of ``rows`` (the first accepted: its rules passed) the bucket takes, and their bytes."""
    run = _Run(bucket)
    added = 0
    for j, row in enumerate(rows.tolist()):
        record = batch.rows[row]
        size = rules.measurement_size(run.columns.__contains__, run.count, record, meta_field)
        if j:
            t = int(batch.times[row])
            if not rules.in_range(bucket.start_ms, t, limits) or rules.row_reason(run, record, size, limits,
                                                                                  meta_field) is not None:
                return j, added
        run.add(record, size, meta_field)
        added += size
    return len(rows), added


