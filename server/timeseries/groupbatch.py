"""Execution of a columnar ``$group`` (columnar.py plans it), pure: bucket columns -> numpy batches ->
runs -> the groups.

Buckets whose needed columns are dense (densecolumns.py) are gathered into batches: each bucket's rows
are filtered (a bucket a time window cuts keeps one stretch: a view) and the passing rows concatenated,
and the rows are cut into **runs** — maximal
stretches of consecutive rows of one bucket (or meta) with the same truncated time. A run belongs to
exactly one group, so each accumulator takes one value per run (groupruns.py) in row order, with no
sort; a stored bucket every row of which passes the filter gives its remembered whole-bucket runs.
Groups are NumPy totals while that is exact (groupstate.py), else the generic accumulators fed per
run (the winner of a ``$max``/``$min``, the first/last value, the exact total of a ``$sum``/``$avg``
or the run's values). Other buckets (sparse or mixed columns, NaN, live buckets that are not dense)
flush the batch and go through the generic grouping one measurement at a time, so every accumulator
sees its values in the same order as the generic ``$group``, and groups are created in the same
first-seen order.

``run`` answers with a ``GroupOutput``: the documents in first-seen order (BSON made from the group
arrays when they go to a cursor untouched: ``raw``), computed when first asked for, or — when the ``$sort`` right after the group asks it (``sort_result``, the hook in
``stages.SortStage``) — in that sort's order, taken from the group keys before any document is built
(``DenseGroups.sorted_results``; the generic sort when the groups are not NumPy totals or a key is
not a part of a templated ``_id``).

Exactness of the generic-accumulator shortcuts: ``$max``/``$min`` of NaN-free doubles keep the
winning double (what ``process_many`` does with a float batch) unless the winner is a zero of a
column holding ``-0.0`` (a reduction need not keep the first of equal zeros: such runs hand over
their values); a ``$sum``/``$avg`` run is handed its
total only when every value of the batch's column is integral and their absolute sum is below 2**53
(then every partial sum is exact, in any order, and the accumulator's fsum folding gives the same
result), otherwise the run's values themselves.

Memory, as the generic ``$group`` (``stage_group._Groups``) counts it — per group its overhead and
``_id`` — whichever way the groups are held (NumPy totals: ``DenseGroups.used``; generic accumulators:
``_Groups.used``), with or without allowDiskUse. Past ``group_memory_limit`` 292 without it; with it,
once a batch is fed (``flush``: so at most a batch's new groups past the limit, ``BATCH_ROWS`` rows), the
groups go to the generic stage's one spill as partial states (``_Batch._spill``: NumPy totals made the
generic accumulators they stand for, ``_Groups.spill``) and grouping starts again from none, as NumPy
totals when the group has that form; at the end the in-memory groups are one generation more and the
answer is the spill's merge (``_Groups.results``: its order, not first-seen; no ``$sort`` from the group
keys, no BSON from the arrays). The buckets the generic way takes spill inside ``_Groups.add_all`` alike.
What is held besides the groups is bounded by them, never by the series or runs read: once a batch is
fed, past ``METAS_SLACK`` + twice the groups, only the metas some group needs are kept, numbered again
(``_Batch._compact``), and the generic accumulators' cache by run token (``_accumulators``) is cut
past ``TOKENS_SLACK`` + twice the groups (each a cache: a token not found is keyed again).
"""

from __future__ import annotations

import datetime as _dt
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator
from functools import cached_property
from itertools import accumulate
from operator import itemgetter
from typing import Any

import numpy as np

from tidemark.protocol.codec import encode
from tidemark.query import interrupt
from tidemark.query.memory import approx_size as _approx_size
from tidemark.query.pipeline import PipelineContext
from tidemark.query.stage_group import _GROUP_OVERHEAD, _Groups, _memory_error, group_key
from tidemark.timeseries.bucketcache import CACHE, RunRef
from tidemark.timeseries.densecolumns import fast_arrays
from tidemark.timeseries.groupruns import (
    Runs,
    bucket_runs,
    column_ranges,
    first_range,
    passes,
    passing_items,
    pick,
    range_checks,
    summarize,
    truncated,
)
from tidemark.timeseries.groupstate import TOKENS_SLACK, DenseGroups, facts, supports
from tidemark.timeseries.newest_order import OrderMatters
from tidemark.timeseries.rowfilter import ColumnFilter, accepted

_EPOCH = _dt.datetime(1970, 1, 1)
_TIMES, _REF, _TOKEN = itemgetter(0), itemgetter(2), itemgetter(4)  # parts of ``_Batch.remembered``'s tuples
_INDEX, _SEQ, _WHOLE = itemgetter(2), itemgetter(3), itemgetter(4)  # parts of ``_Batch.pending``'s tuples
_EXACT_SUM = float(2**53)
BATCH_ROWS = 1 << 18  # rows gathered before a batch is cut into runs
BUCKET_TICKS = 16  # interruption ticks per bucket decoded or unpacked: a real check every 16 (interrupt.py)
# metas a batch may hold past twice its groups once flushed, before those no group needs are dropped
# (``_Batch._compact``)
METAS_SLACK = 1024


def _ms_to_datetime(ms: int) -> _dt.datetime:
    return _EPOCH + _dt.timedelta(milliseconds=int(ms))


# ------------------------------------------------------------------ execution


def run(group: Any, buckets: Iterable[list[Any]], event_filter: Any, fields: set[str] | None,
        info: dict[str, Any], ctx: PipelineContext | None = None,
        column_filter: ColumnFilter | None = None,
        in_order: tuple[Any, Callable[[], Iterable[list[Any]]]] | None = None,
        raw: bool = False) -> GroupOutput:
    """The ``$group`` output over ``buckets`` (chunks of bucket views already accepted by the bucket
    predicate, as the read sources give them; first-seen group order, like the generic stage),
    computed when first asked for.

    ``event_filter``: the per-measurement filter (``view.EventFilter``: ``get()`` compiles it once) for
    buckets that take the generic path (None when the bucket predicate is exact); ``column_filter``: its part decided on columns, for them too
    (``rowfilter.accepted``).

    ``in_order``: for a newest-first read (``group.topk``), the group as planned and a source of the
    buckets in the generic order: when the read meets an input on which the order could show
    (``newest_order.OrderMatters``), the group is answered again from that source.

    ``raw``: the read's documents go to a cursor untouched, so when nothing but a ``$sort`` (and
    ``$limit``) follows the group (``group.last``), they may be BSON made straight from the group
    arrays (``DenseGroups.encoded``)."""
    context = ctx if ctx is not None else PipelineContext(allow_disk_use=True)
    return GroupOutput((group, buckets, event_filter, fields, info, context, column_filter), in_order,
                       group.last if raw else None)


class GroupOutput:
    """The groups as an iterator of documents (first-seen order) that can also answer the ``$sort``
    stage right after it (``sort_result``, called by ``stages.SortStage``) from the groups' keys,
    before any document is built in first-seen order and sorted generically."""

    def __init__(self, args: tuple[Any, ...], in_order: tuple[Any, Callable[[], Iterable[list[Any]]]] | None,
                 raw: str | None = None):
        self._args = args  # ``_grouped``'s, computed when first asked for (``_done``)
        self._in_order = in_order  # (``run``)
        self._raw = raw  # the last stage that may hand BSON to the cursor: "$group", "$sort" or None
        self._batch: _Batch | None = None
        self._it: Iterator[Any] | None = None  # documents, or ONE EncodedRun of them all (``raw``)

    def _done(self) -> _Batch:
        batch = self._batch
        if batch is None:
            args = self._args
            try:
                batch = _grouped(*args)
            except OrderMatters:
                if self._in_order is None:
                    raise
                group, buckets, event_filter, fields, info, context, column_filter = args
                planned, source = self._in_order
                close = getattr(buckets, "close", None)
                if close is not None:  # the newest-first scan's read is given back now, not when collected
                    close()
                info["newestFirstAbandoned"] = True
                batch = _grouped(planned, source(), event_filter, fields, info, context, column_filter)
            self._batch = batch
        return batch

    def __iter__(self) -> GroupOutput:
        return self

    def __next__(self) -> Any:
        if self._it is None:
            batch = self._done()
            encoded = batch.dense.encoded() if self._raw == "$group" and batch.dense is not None else None
            # the run goes to the cursor as ONE item, which takes it a stretch at a time (``_fill_batch``)
            self._it = iter((encoded,)) if encoded is not None else batch.results()
        return next(self._it)

    def sort_result(self, spec: dict[str, Any], limit: int | None, ctx: Any) -> list[Any] | None:
        """The first ``limit`` (None: all) groups in the order of the stable ``$sort`` by ``spec``, or
        None when it cannot be told from the group keys exactly (the caller then sorts the documents);
        only before iterating."""
        if self._it is not None:
            return None
        dense = self._done().dense
        if dense is None:
            return None
        return dense.sorted_results(spec, limit, ctx, raw=self._raw == "$sort")


def _grouped(group: Any, chunks: Iterable[list[Any]], event_filter: Any, fields: set[str] | None,
             info: dict[str, Any], ctx: PipelineContext, column_filter: ColumnFilter | None) -> _Batch:
    batch = _Batch(group, ctx, info)
    if group.topk is not None:  # the newest-first scan settles the batch when its stop test may change
        group.topk.settle = batch.flush
    tf, mf = group.time_field, group.meta_field

    whole_key = batch.whole_key

    def ordinary(view: Any) -> None:
        """One bucket from its view: its dense arrays batched (a stored bucket read before: all its parts
        in one look-up, ``parts``), else the generic grouping."""
        interrupt.tick(BUCKET_TICKS)  # decoded or unpacked: a bucket's worth of work
        info["bucketsUnpacked"] += 1
        entry = view.cached
        parts = entry.memo.get(whole_key) if entry is not None else None
        if parts is None:
            fast = fast_arrays(view, group)
            if fast is None:
                batch.flush()
                batch.materialize()
                check = event_filter.get() if event_filter is not None else None  # compiled when first needed
                batch.groups.add_all(list(accepted(view, fields, check, column_filter, info, tf, mf)))
                return
            parts = batch.parts(view, *fast)
        batch.columnar += 1
        batch.add(parts)
        if batch.rows >= BATCH_ROWS:
            batch.flush()

    exact = group.conditions_exact  # (else nothing is taken whole from its remembered parts)
    for chunk in chunks:
        known = batch.remembered(chunk) if exact else None
        if known is None:  # nothing remembered: every bucket the ordinary way
            for view in chunk:
                ordinary(view)
            continue
        wholes = passing_items(known, 3, batch._checks)
        start, size = 0, len(chunk)
        cut: list[Any] = []  # remembered parts of buckets in a row that are not taken whole, added at once
        # each stretch of buckets found whole is taken at once, as far as the groups stay NumPy totals;
        # the bucket after it, and any the groups no longer take whole, go the ordinary way: from their
        # remembered parts (a bucket the filter cuts, as ``passing_items`` said, or one not taken: not
        # whole either way), else from the view
        for stop in [k for k, whole in enumerate(wholes) if whole is None] + [size]:
            if stop > start and cut:
                batch.add_cut(cut)
                cut = []
            taken = batch.take(wholes[start:stop]) if stop > start else 0
            for at in range(start + taken, stop + 1 if stop < size else size):
                parts = known[at]
                if parts is not None:
                    cut.append(parts)
                    continue
                if cut:
                    batch.add_cut(cut)
                    cut = []
                ordinary(chunk[at])
            start = stop + 1
        if cut:
            batch.add_cut(cut)
    batch.flush()
    batch.finish()
    return batch


class _Batch:
    """Dense buckets waiting to be cut into runs, and the groups fed so far."""

    def __init__(self, group: Any, ctx: PipelineContext, info: dict[str, Any]):
        self.group, self.ctx, self.info = group, ctx, info
        # (times, arrays, meta index, sequence, whole-bucket runs remembered in a run block or None) in arrival order
        self.pending: list[tuple[np.ndarray, dict[str, Any], int, int, RunRef | None]] = []
        # stretches of buckets ``take`` took whole: (sequence of the first, their ``wholes``, meta indexes,
        # rows), in arrival order like ``pending``, with which they interleave by sequence
        self.stretches: list[tuple[int, list[Any], list[int], int]] = []
        self.seq = 0  # the next bucket's sequence (arrival number) in the batch
        self.rows = 0
        self.whole_buckets = self.whole_rows = 0  # taken whole since the last flush (explain's counters)
        self.columnar = 0  # buckets ``add``ed since the last flush (explain's ``bucketsColumnar``, added there)
        self.metas: list[tuple[bool, Any]] = []  # (has meta, meta) by meta index
        self.meta_tokens: list[bytes | None] = []  # its BSON token by meta index (None: no meta)
        self._meta_index: dict[bytes | None, int] = {}
        # (meta index, truncated ms) -> the group's accumulators: the _id depends on nothing else
        self._accumulators: dict[tuple[Any, ...], list[Any]] = {}
        # groups as NumPy totals until a batch or bucket needs the generic accumulators
        shape = facts(group)
        self.dense = DenseGroups(group, ctx, self.metas, self.meta_tokens, shape) if shape.supported else None
        self._fast_key = group.fast_key  # (columnar._group_keys)
        self._runs_key = group.runs_key
        self.whole_key = self._runs_key + " whole"
        self._checks = range_checks(group)
        self._merged: list[dict[str, Any]] | None = None  # a newest-first read's merged groups (``finish``)

    @cached_property
    def groups(self) -> _Groups:
        """The generic groups (made when first needed: most batches stay NumPy totals)."""
        # (a spill takes the groups out of memory: the accumulators remembered by token go with them)
        return _Groups(self.group.id_fn, self.group.fields, self.ctx, on_spill=lambda: self._accumulators.clear())

    def materialize(self) -> None:
        """From here on, groups are generic accumulators (fed with the totals so far)."""
        if self.dense is not None:
            self.groups.groups, self._accumulators = self.dense.materialize()
            self.groups.used = self.dense.used
            self.dense = None

    def _spill(self) -> None:
        """Past the ``$group`` memory limit with allowDiskUse: every group's partial state goes to the
        generic stage's spill (``_Groups.spill``: NumPy totals as the generic accumulators they stand
        for), and grouping goes on from no group — as NumPy totals again when the group has that form
        (what made the groups generic concerned the groups now on disk)."""
        if not self.ctx.allow_disk_use:  # (raised where the groups were counted; here only as a guard)
            raise _memory_error(self.ctx.group_memory_limit)
        self.materialize()
        self.groups.spill()  # (its ``on_spill`` drops the accumulators remembered by run token)
        if self.group.topk is not None:  # groups made again after a spill offer their times again
            self.group.topk.repeats = True
        # the metas seen go with their groups (no bucket of the batch is pending: numbered again as met)
        self.metas, self.meta_tokens, self._meta_index = [], [], {}
        if supports(self.group):
            self.dense = DenseGroups(self.group, self.ctx, self.metas, self.meta_tokens)

    def spilled(self) -> bool:
        """True when some groups went to disk (``results`` then merges them: ``finish`` first)."""
        return "groups" in self.__dict__ and bool(self.groups.spilled)

    def finish(self) -> None:
        """After the last ``flush``: groups spilled, so the NumPy totals held are one generation more (the
        output is the merge's; no order or BSON is taken from the arrays). A newest-first read merges
        here, inside ``run``'s answer: merging a group's generations may meet a tie whose winner shows
        the order (``newest_order.OrderMatters``: answered again in the generic order); its groups are
        few (those the k newest left standing)."""
        if "groups" in self.__dict__ and self.groups.spilled:  # (``spilled``)
            self.materialize()
            if self.group.topk is not None:
                self._merged = list(self.groups.results())

    def results(self) -> Iterator[dict[str, Any]]:
        if self._merged is not None:
            return iter(self._merged)
        return iter(self.dense.results()) if self.dense is not None else self.groups.results()

    def _meta(self, token: bytes | None, meta: Any) -> int:
        """The meta index of a bucket's meta (``token``: its BSON; None: no meta), numbered when first met
        (``add`` looks a known one up itself)."""
        index = self._meta_index.get(token)
        if index is None:
            index = self._meta_index[token] = len(self.metas)
            self.metas.append((token is not None, meta))
            self.meta_tokens.append(token)
        return index

    def remembered(self, views: list[Any]) -> list[Any] | None:
        """Per bucket of a chunk, its remembered parts (``_gather``: fast arrays, whole-bucket runs,
        filter column ranges, meta token, meta, the first filter column's min and max) when it is a
        stored bucket the ordinary way saw, else
        None (the ordinary way remembers them for the next read); None when the groups are not NumPy
        totals (asked only when the filter is exact: ``group.conditions_exact``). ``passing_items`` of them: what ``take`` takes whole (every
        row passes the filter, decided from the ranges, the chunk at once); the others go the ordinary
        way from these parts."""
        if self.dense is None:
            return None
        key, gather = self.whole_key, self._gather
        # (gathered once from what the ordinary way remembered; one pass: the step per bucket is the cost)
        return [(entry.memo.get(key) or gather(view, entry)) if (entry := view.cached) is not None
                else None for view in views]

    def _gather(self, bucket: Any, entry: Any) -> Any:
        memo = entry.memo
        fast, runs = memo.get(self._fast_key), memo.get(self._runs_key)
        if not fast or runs is None:
            return None
        summary = bucket.summary()
        mf = self.group.meta_field
        token = memo.get("meta token") if mf is not None and "meta" in summary else None
        if token is None and mf is not None and "meta" in summary:
            return None
        # flat: unpacked per bucket, and read by ``passing_items`` (the first filter column's range last)
        found = memo[self.whole_key] = (*fast, *runs, token, summary.get("meta"), *first_range(runs[1]))
        return found

    def take(self, wholes: list[Any]) -> int:
        """Take buckets ``wholes`` found whole, in order, flushing whenever the rows gathered reach
        ``BATCH_ROWS`` (as after each bucket one at a time); how many were taken: all, or those before
        the groups stopped being NumPy totals (the rest go the generic way)."""
        done = 0
        for part, count, rows in self._flush_steps(wholes):
            if self.dense is None:
                break
            meta_index = self._meta_index
            indexes: list[Any] = list(map(meta_index.get, map(_TOKEN, part)))
            if None in indexes:  # metas seen first: numbered in order
                indexes = [self._meta(whole[4], whole[5]) if index is None else index
                           for index, whole in zip(indexes, part, strict=True)]
            self.stretches.append((self.seq, part, indexes, rows))
            self.seq += count
            self.rows += rows
            self.whole_rows += rows
            self.whole_buckets += count
            done += count
        return done

    def _flush_steps(self, items: list[Any]) -> Iterator[tuple[list[Any], int, int]]:
        """``items`` (tuples with a bucket's times first) in order as (part, its buckets, its rows), each
        part ending at the first bucket whose rows bring the batch to ``BATCH_ROWS``; the batch is
        flushed after the caller added such a part (as after each bucket one at a time). A caller may
        stop early."""
        done, n = 0, len(items)
        while done < n:
            part = items[done:] if done else items
            left = n - done
            ends = list(accumulate(map(len, map(_TIMES, part)), initial=self.rows))  # rows gathered after each bucket
            k = bisect_left(ends, BATCH_ROWS, 1)  # the first bucket reaching BATCH_ROWS, if any (ends: left + 1)
            reached = k <= left
            if reached and k < left:
                part = part[:k]
            count = k if reached else left
            yield part, count, ends[count] - self.rows
            done += count
            if reached:
                self.flush()

    def parts(self, view: Any, times: np.ndarray, arrays: dict[str, Any]) -> tuple[Any, ...]:
        """A dense bucket's parts as ``remembered`` gives them: (times, arrays, whole-bucket runs as a
        ``bucketcache.RunRef`` and the filter columns' ranges — None when not remembered: a live bucket,
        or a nearly full cache, or the groups are not NumPy totals —, the meta's token: its BSON, equal
        tokens the same group keys, None without a meta —, the meta, the first filter column's min and
        max). A stored bucket remembers its runs and ranges (they depend only on its content and the
        group's shape) and its token with its cached parts, and once its runs are remembered, these
        parts as one memo item (``whole_key``: what ``_gather`` makes), which the ordinary way of a
        later read takes in one look-up."""
        summary = view.summary()
        meta = summary.get("meta")
        has_meta = self.group.meta_field is not None and "meta" in summary
        entry = view.cached
        if entry is None:
            return times, arrays, None, None, encode({"m": meta}) if has_meta else None, meta, None, None
        memo = entry.memo
        token: bytes | None = None
        if has_meta:
            token = memo.get("meta token")
            if token is None:
                token = memo["meta token"] = encode({"m": meta})
        if self.dense is not None:
            key = self._runs_key
            found: tuple[Any, dict[str, Any]] | None = memo.get(key)
            # (a nearly full cache may be thrashing: remembered only on a bucket's next read)
            if found is None and (entry.referenced or CACHE.used < CACHE.budget * 0.9):
                found = CACHE.remember_runs(entry, key, bucket_runs(self.group, times, arrays).rows(),
                                            column_ranges(times, arrays, self.group))
            if found is not None:
                whole = memo[self.whole_key] = (times, arrays, *found, token, meta, *first_range(found[1]))
                return whole
        return times, arrays, None, None, token, meta, None, None

    def add(self, parts: tuple[Any, ...]) -> None:
        """Add a dense bucket by its parts (``parts``): whole from its remembered runs when every row of
        it passes (and the groups are NumPy totals), else its rows."""
        times, arrays, ref, ranges, token, meta, _, _ = parts
        index = self._meta_index.get(token)
        if index is None:
            index = self._meta(token, meta)
        whole = ref if self.dense is not None and ranges is not None and passes(ranges, self._checks) else None
        self.pending.append((times, arrays, index, self.seq, whole))
        self.seq += 1
        n = len(times)
        self.rows += n
        self.info["measurementsUnpacked"] += n

    def add_cut(self, cut: list[Any]) -> None:
        """Add dense buckets by their remembered parts (``remembered``), in order, their rows (none is
        taken whole: ``passing_items`` found a row of each that fails the filter, or the groups are
        no longer NumPy totals), flushing whenever the rows gathered reach ``BATCH_ROWS`` (as after
        each bucket one at a time)."""
        info = self.info
        n = len(cut)
        interrupt.tick(BUCKET_TICKS * n)  # decoded or unpacked: a bucket's worth of work each
        info["bucketsUnpacked"] += n
        self.columnar += n
        meta = self._meta
        for part, count, rows in self._flush_steps(cut):
            seq = self.seq
            self.pending.extend([(whole[0], whole[1], meta(whole[4], whole[5]), seq + i, None)
                                 for i, whole in enumerate(part)])
            self.seq += count
            self.rows += rows
            info["measurementsUnpacked"] += rows

    def flush(self) -> None:
        """Cut the batch gathered into runs and feed them to the groups (a spill past the limit), then keep
        what is held per meta in proportion to the groups (``_compact``). (One frame: it runs per batch.)"""
        info = self.info
        if self.whole_buckets:  # the counters of buckets taken whole, added up here
            info["bucketsUnpacked"] += self.whole_buckets
            info["measurementsUnpacked"] += self.whole_rows
            self.columnar += self.whole_buckets
            self.whole_buckets = self.whole_rows = 0
        if self.columnar:  # (present in explain only once some bucket was)
            info["bucketsColumnar"] = info.get("bucketsColumnar", 0) + self.columnar
            self.columnar = 0
        if self.seq:
            pending, stretches = self.pending, self.stretches
            self.pending, self.stretches, self.rows, self.seq = [], [], 0, 0
            dense = self.dense
            if dense is not None and dense.feed(self._runs(pending, stretches)):
                # (counted as the generic stage counts, per new group: 292 raised there without allowDiskUse)
                if dense.over(self.ctx.group_memory_limit):
                    self._spill()
            else:
                if dense is not None:  # (the runs could not join the NumPy totals exactly)
                    self.materialize()
                    self._flush_rows(_in_order(pending, stretches), count=False)
                else:
                    self._flush_rows(_in_order(pending, stretches))
                if self.groups.used > self.ctx.group_memory_limit:
                    self._spill()
        held = len(self.metas)
        if held > METAS_SLACK and held > METAS_SLACK + 2 * self._group_count():
            self._compact()

    def _group_count(self) -> int:
        return len(self.dense.ids) if self.dense is not None else len(self.groups.groups)

    def _compact(self) -> None:
        """Between batches (nothing pending): only the metas some group still needs are kept, numbered
        again in order (``DenseGroups.renumber``; generic accumulators need none: the token cache goes),
        so that a query over very many series into few groups holds memory for its groups, not for
        every series it read; a meta met again is numbered as new."""
        self._accumulators.clear()
        keep = self.dense.owners() if self.dense is not None else []
        if self.dense is not None:
            self.dense.renumber(keep)
        # (in place: the groups' state holds these very lists)
        self.metas[:] = [self.metas[m] for m in keep]
        self.meta_tokens[:] = [self.meta_tokens[m] for m in keep]
        self._meta_index = {token: i for i, token in enumerate(self.meta_tokens)}

    def _runs(self, pending: list[Any], stretches: list[Any]) -> Runs:
        """The runs of a batch in arrival order (remembered ones of whole buckets, the others cut from
        their rows) that may reach the output: with a ``TopK``, only those of the k newest truncated
        times (of the groups made and these runs) — an older run's group is outranked for good."""
        refs: list[Any] = []
        seqs: list[int] = []
        owners: list[int] = []
        returned = 0
        for first, part, indexes, n_rows in stretches:
            refs.extend(map(_REF, part))
            seqs.extend(range(first, first + len(part)))
            owners.extend(indexes)
            returned += n_rows
        cut = pending  # (as they are while no bucket of them is taken whole)
        for entry in pending:
            if entry[4] is not None:  # some are: split, a few calls per batch, none per bucket
                taken = len(refs)
                wholes = [p for p in pending if p[4] is not None]
                cut = [p for p in pending if p[4] is None]
                refs.extend(map(_WHOLE, wholes))
                seqs.extend(map(_SEQ, wholes))
                owners.extend(map(_INDEX, wholes))
                returned += sum(map(len, map(_TIMES, wholes)))
                if taken:  # both kinds: back in arrival order
                    order = sorted(range(len(refs)), key=seqs.__getitem__)
                    refs, seqs, owners = [refs[i] for i in order], [seqs[i] for i in order], [owners[i] for i in order]
                break
        info = self.info
        info["measurementsReturned"] += returned
        group = self.group
        timed = group.unit_ms is not None
        rows: Runs | None = None  # the runs cut from rows
        if cut:
            times, arrays, firsts, owners_of, seqs_of = self._rows(cut, group.columns)
            n = len(times)
            info["measurementsReturned"] += n
            if n:
                trunc = truncated(times, group.unit_ms)
                starts, at = _run_starts(n, firsts, None, trunc)  # (every bucket's sequence differs)
                rows = summarize(group, times, arrays, starts, trunc, seqs_of[at], owners_of[at])
        if rows is None:
            runs = Runs.remembered(len(group.fields), timed, refs, seqs, owners)
        elif not refs:
            runs = rows
        else:
            known = Runs.remembered(len(group.fields), timed, refs, seqs, owners)
            both = Runs.joined(len(group.fields), timed, [(0, 0, known), (0, 0, rows)])
            both.seq, both.owner = np.concatenate([known.seq, rows.seq]), np.concatenate([known.owner, rows.owner])
            runs = both.taken(np.argsort(both.seq, kind="stable"))
        topk = group.topk
        if topk is None or not runs.count:
            return runs
        truncs = runs.table[:, 0]
        bound = topk.bound(truncs.astype(np.int64), group.unit_ms)
        if bound is None:
            return runs
        keep = np.flatnonzero(truncs >= bound)
        return runs if len(keep) == runs.count else runs.taken(keep)

    def _rows(self, pending: list[Any], columns: list[Any]) -> tuple[Any, ...]:
        """Concatenated rows of ``pending`` (times, arrays, meta index, sequence) passing the filter, as
        (times, arrays, first row of each bucket keeping rows, its meta index, its sequence): the
        times and the filter's columns joined first and the filter decided once over all of them (a
        few NumPy calls per batch, not per bucket: these buckets are mostly ones a time window cuts),
        then the other columns joined from only the passing stretch of each bucket. Per bucket, not
        per row: a run never spans two buckets, so the buckets' first rows are all the cuts needed."""
        group = self.group
        tf, conditions = group.time_field, group.conditions
        if not pending:
            empty = np.zeros(0, dtype=np.int64)
            return empty, {name: np.zeros(0) for name in columns}, empty, empty, empty
        several = len(pending) > 1
        if not several:  # (entries may carry more than these four)
            first = pending[0]
            times, arrays, index, seq = first[0], first[1], first[2], first[3]
        else:
            times = np.concatenate(list(map(_TIMES, pending)))
            arrays = {}  # the filter's other columns
            for path, _, _ in conditions:
                if path != tf and path not in arrays:
                    arrays[path] = np.concatenate([p[1][path] for p in pending])
        mask = None
        for path, op, operand in conditions:
            hit = op(times if path == tf else arrays[path], operand)
            mask = hit if mask is None else mask & hit
        topk = group.topk
        if topk is not None and len(times):  # rows truncating below the k newest groups (made or about to
            bound = topk.bound(times if mask is None else times[mask], group.unit_ms)  # be) cannot place
            if bound is not None:
                hit = times >= bound
                mask = hit if mask is None else mask & hit
        if several:
            return _gathered(pending, columns, times, arrays, mask)
        if mask is not None:
            rows = mask.nonzero()[0]
            if len(rows) != len(times):
                first, last = (int(rows[0]), int(rows[-1])) if len(rows) else (0, -1)
                take: Any = slice(first, last + 1) if last - first + 1 == len(rows) else rows
                times = times[take]
                arrays = {name: arrays[name][take] for name in columns}
        one = np.array([(0, index, seq)] if len(times) else [], dtype=np.int64).reshape(-1, 3)
        return times, arrays, one[:, 0], one[:, 1], one[:, 2]

    def _flush_rows(self, pending: list[Any], count: bool = True) -> None:
        """The generic way: runs of one meta and truncated time fed to the generic accumulators."""
        times, arrays, firsts, owners_of, _ = self._rows(pending, self.group.columns)
        n = len(times)
        if count:
            self.info["measurementsReturned"] += n
        if not n:
            return
        trunc = truncated(times, self.group.unit_ms)
        starts, at = _run_starts(n, firsts, owners_of, trunc)
        ends = np.empty_like(starts)
        ends[:-1] = starts[1:]
        ends[-1] = n
        owners = owners_of[at].tolist()
        truncs = trunc[starts].tolist() if trunc is not None else [None] * len(owners)
        first_times = times[starts].tolist()
        self._feed(times, arrays, owners, truncs, first_times, starts, ends)

    def _feed(self, times: np.ndarray, arrays: dict[str, Any], owners: list[Any], truncs: list[Any], first_times: list[Any],
              starts: np.ndarray, ends: np.ndarray) -> None:
        group, ctx = self.group, self.ctx
        if len(self._accumulators) > TOKENS_SLACK + 2 * len(self.groups.groups):
            # (a cache by run token: tokens grow with metas x truncated times, groups may not)
            self._accumulators.clear()
        accumulators, table = self._accumulators, self.groups.groups
        tf, mf = group.time_field, group.meta_field
        check, limit = not ctx.allow_disk_use, ctx.group_memory_limit
        groups = self.groups
        run_accs = []
        for r, token in enumerate(zip(owners, truncs, strict=True)):
            accs = accumulators.get(token)
            if accs is None:
                has_meta, meta = self.metas[token[0]]
                rep = {tf: _ms_to_datetime(first_times[r])}
                if has_meta:
                    rep[mf] = meta
                idv = group.id_fn(rep, ctx.variables)
                key = _group_key(idv)
                entry = table.get(key)
                if entry is None:
                    entry = table[key] = (idv, [spec.new() for _, spec in group.fields])
                    if group.topk is not None and token[1] is not None:
                        group.topk.offer(token[1])
                    # the generic stage's accounting: the key (accumulators: groupstate's module); past
                    # the limit 292, or with allowDiskUse a spill once the runs are fed (``flush``)
                    groups.used += _GROUP_OVERHEAD + _approx_size(idv)
                    if check and groups.used > limit:
                        raise _memory_error(limit)
                accs = accumulators[token] = entry[1]
            run_accs.append(accs)
        # each accumulator takes its runs in row order (accumulators are independent of each other)
        for j, (_, spec) in enumerate(group.fields):
            _feed_runs(spec, j, run_accs, times, arrays, starts, ends, tf, ctx.variables)


def _in_order(pending: list[Any], stretches: list[Any]) -> list[Any]:
    """The buckets of a batch (``_Batch.pending`` and ``stretches``) as ``pending`` entries in arrival
    order."""
    if not stretches:
        return pending
    taken = [(whole[0], whole[1], index, seq, whole[2])
             for first, part, indexes, _rows in stretches
             for whole, index, seq in zip(part, indexes, range(first, first + len(part)), strict=True)]
    return sorted(pending + taken, key=lambda p: p[3])


def _gathered(pending: list[Any], columns: list[Any], times: np.ndarray, joined: dict[str, np.ndarray],
              mask: np.ndarray | None) -> tuple[Any, ...]:
    """``_rows`` of several buckets: (times, arrays, first row, meta index and sequence of each bucket
    keeping rows) of the rows ``mask`` keeps (None: all) of the joined ``times`` (and the ``joined``
    columns), the other columns joined from each bucket's kept stretch when every bucket keeps one (a
    window cuts a bucket once: told from where the mask changes, a few per bucket, walked in Python;
    no NumPy call per bucket), else joined whole and taken."""
    edges = list(accumulate(map(len, map(_TIMES, pending)), initial=0))  # bucket b: rows [edges[b], edges[b + 1])

    def whole(name: str) -> np.ndarray:
        found = joined.get(name) if joined else None  # (no filter column but the time: nothing joined)
        return found if found is not None else np.concatenate([p[1][name] for p in pending])

    k = len(pending)
    if mask is None:
        stretches: list[tuple[int, int, int]] | None = [(b, edges[b], edges[b + 1]) for b in range(k)
                                                        if edges[b + 1] > edges[b]]
        every = True
    else:
        changes = (mask[1:] != mask[:-1]).nonzero()[0]
        n_changes = len(changes)
        on = bool(mask[0]) if edges[-1] else False  # (edges[-1]: the rows, the mask's length)
        every = on and not n_changes
        # (one stretch per bucket changes the mask at most twice in each)
        stretches = _stretches(edges, (changes + 1).tolist(), on) if n_changes <= 2 * k else None
    if stretches is None:  # some bucket keeps rows apart: the rows taken from the joined columns
        assert mask is not None
        rows = mask.nonzero()[0]
        bounds = rows.searchsorted(np.array(edges, dtype=np.int64))
        kept = (bounds[1:] > bounds[:-1]).nonzero()[0]
        keys = np.array([(p[2], p[3]) for p in pending], dtype=np.int64).reshape(-1, 2)[kept]
        return times[rows], {name: whole(name)[rows] for name in columns}, bounds[kept], keys[:, 0], keys[:, 1]
    # per kept bucket: (its first row among the kept rows, meta index, sequence)
    firsts = accumulate([z - a for _, a, z in stretches], initial=0)  # (one more than stretches: the total)
    keys = np.array([(first, pending[b][2], pending[b][3])
                     for (b, _, _), first in zip(stretches, firsts, strict=False)], dtype=np.int64).reshape(-1, 3)
    if every:
        return times, {name: whole(name) for name in columns}, keys[:, 0], keys[:, 1], keys[:, 2]
    arrays = {}
    for name in columns:
        found = joined.get(name) if joined else None
        if found is not None:
            arrays[name] = found[mask]
        elif stretches:
            arrays[name] = np.concatenate([pending[b][1][name][a - edges[b]:z - edges[b]] for b, a, z in stretches])
        else:
            arrays[name] = pending[0][1][name][:0]
    return times[mask], arrays, keys[:, 0], keys[:, 1], keys[:, 2]


def _stretches(edges: list[int], changes: list[int], on: bool) -> list[tuple[int, int, int]] | None:
    """Per bucket keeping rows (bucket b: rows [edges[b], edges[b + 1])), (b, its first kept row, the
    row after its last) when each keeps one stretch, else None; ``changes``: the rows (ascending)
    where the mask differs from the row before; ``on``: the mask of row 0."""
    out = []
    i, m = 0, len(changes)
    for b in range(len(edges) - 1):
        a, z = edges[b], edges[b + 1]
        if a == z:
            continue
        if i < m and changes[i] == a:  # (the changes before the bucket are passed: one can sit at its first row)
            on = not on
            i += 1
        j = i
        while j < m and changes[j] < z:
            j += 1
        inside = j - i  # changes inside the bucket, after its first row
        if on:
            if inside == 0:
                out.append((b, a, z))
            elif inside == 1:
                out.append((b, a, changes[i]))
            else:
                return None
        elif inside == 1:
            out.append((b, changes[i], z))
        elif inside == 2:
            out.append((b, changes[i], changes[i + 1]))
        elif inside:
            return None
        if inside % 2:
            on = not on
        i = j
    return out


def _run_starts(n: int, firsts: np.ndarray, keys: np.ndarray | None,
                trunc: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """(first row of every run of ``n`` rows (n > 0), the index of the bucket it is in): runs are cut
    where a bucket (``firsts``: its first row) of another key (meta or sequence: ``keys``; None: every
    bucket's differs) than the one before it begins, or where the truncated time changes."""
    cut = np.empty(n, dtype=bool)
    if trunc is not None:
        np.not_equal(trunc[1:], trunc[:-1], out=cut[1:])
    else:
        cut[1:] = False
    cut[0] = True
    several = len(firsts) > 1
    if several:
        if keys is None:
            cut[firsts] = True
        else:
            new = np.empty(len(firsts), dtype=bool)
            new[0] = True
            np.not_equal(keys[1:], keys[:-1], out=new[1:])
            cut[firsts[new]] = True
    starts = cut.nonzero()[0]
    return starts, (firsts.searchsorted(starts, side="right") - 1 if several else np.zeros(len(starts), np.int64))


def _group_key(idv: Any) -> Any:
    t = type(idv)
    return idv if (t is str or t is _dt.datetime or t is int) else group_key(idv)


def _exact_sums(values: np.ndarray) -> bool:
    """True when summing any subset of ``values`` in any order is exact (integral, |sum| < 2**53)."""
    return bool(np.all(np.mod(values, 1.0) == 0.0)) and float(np.abs(values).sum()) < _EXACT_SUM


def _feed_runs(spec: Any, j: int, run_accs: list[Any], times: np.ndarray, arrays: dict[str, Any], starts: np.ndarray,
               ends: np.ndarray, tf: str, variables: dict[str, Any]) -> None:
    """Hand each run's contribution to accumulator ``j`` of its group (``run_accs[r][j]``)."""
    name, field = spec.name, spec.field
    counts = (ends - starts).tolist()
    if field is None:
        value = 1 if name == "$count" else spec.evaluate({}, variables)
        for accs, count in zip(run_accs, counts, strict=True):
            accs[j].process_many([value] * count)
        return
    column = times if field == tf else arrays[field]
    if name in ("$max", "$min", "$first", "$last"):
        picked = pick(name, column, starts, ends)
        winners = [_ms_to_datetime(v) for v in picked.tolist()] if field == tf else picked.tolist()
        # a zero winning a $max/$min of a run holding -0.0: which zero a reduction keeps is not the
        # generic rule (the first of equal values), so such runs hand over their values
        mixed_zeros = (name in ("$max", "$min") and column.dtype.kind == "f" and bool(np.any(picked == 0.0))
                       and bool(np.any(np.signbit(column) & (column == 0.0))))
        values = column.tolist() if mixed_zeros else None
        # process(v) is what process_many([v]) does for one NaN-free double or one date
        for r, (accs, winner) in enumerate(zip(run_accs, winners, strict=True)):
            if values is not None and winner == 0.0:
                accs[j].process_many(values[int(starts[r]):int(ends[r])])
            else:
                accs[j].process(winner)
        return
    if name in ("$sum", "$avg") and _exact_sums(column):
        totals = np.add.reduceat(column, starts).tolist()
        for accs, total, count in zip(run_accs, totals, counts, strict=True):
            accs[j].process_exact_doubles(total, count)
        return
    values = column.tolist()
    for accs, start, end in zip(run_accs, starts.tolist(), ends.tolist(), strict=True):
        accs[j].process_many(values[start:end])
