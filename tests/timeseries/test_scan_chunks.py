"""Bucket scans in chunks against the real storage engine (no server): the interruption check of a read
(maxTimeMS, killOp) runs per chunk of buckets scanned — also when the bucket predicate rejects them
all — and per bucket the columnar $group decodes; the chunk-at-once bucket predicate and whole-bucket
filter decide exactly what the per-bucket forms decide."""

import datetime as dt
import math

import numpy as np
import pytest
from harness.timeseries import Server
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.commands import timeseries_ddl
from tidemark.commands.timeseries_insert import insert_measurements
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query import interrupt
from tidemark.query.pipeline import PipelineContext
from tidemark.timeseries import ddl, scan, stored, view
from tidemark.timeseries.bucketcache import CACHE
from tidemark.timeseries.filters import _TimeBounds, kept
from tidemark.timeseries.groupruns import passing, range_checks

T0 = dt.datetime(2024, 1, 1)
BNS = "db.system.buckets.c"
SERIES = 300  # one stored bucket each


@pytest.fixture
def server(tmp_path):
    s = Server(tmp_path / "data")
    yield s
    s.engine.close()


async def _load(server, series=SERIES):
    await timeseries_ddl.create(server.ctx(), {"create": "c", "timeseries": {"timeField": "t", "metaField": "m"},
                                               "$db": "db"})
    docs = [{"t": T0 + dt.timedelta(minutes=i), "m": s, "v": float(i)} for s in range(series) for i in range(3)]
    await insert_measurements(server.ctx(), {"insert": "c", "documents": docs, "$db": "db"})
    await server.ts_committer.close_collection(BNS)  # every bucket stored


class CountingOp:
    """An interruptible operation counting its real checks; ``fail_at``: the check that raises (50)."""

    def __init__(self, fail_at=None):
        self.ticks = interrupt.TICKS_PER_CHECK
        self.checks = 0
        self.fail_at = fail_at

    def check(self):
        self.checks += 1
        if self.fail_at is not None and self.checks >= self.fail_at:
            raise MongoError(ErrorCode.MaxTimeMSExpired, "operation exceeded time limit")


def _group(server, match):
    with server.engine.read() as r:
        view_doc = ddl.get_view(r, "db", "c")[1]
    spec = {"_id": {"m": "$m", "h": {"$dateTrunc": {"date": "$t", "unit": "hour"}}}, "n": {"$sum": "$v"}}
    source, remaining, info = view.read_source(server.ctx().server, "db", view_doc, [{"$match": match}, {"$group": spec}])
    assert info.get("columnarGroup") and remaining[0] == {"$group": spec}
    return list(source.group_result(spec, PipelineContext(allow_disk_use=True))), info


def _run(op, fn):
    token = interrupt.bind(op)
    try:
        return fn()
    finally:
        interrupt.unbind(token)


async def test_a_scan_whose_predicate_rejects_every_bucket_is_still_checked_per_chunk(server):
    await _load(server)
    op = CountingOp()
    # a bound the _id range cannot use (a measurement one): every bucket read, every one rejected
    found, info = _run(op, lambda: _group(server, {"v": {"$gt": 1e9}}))
    assert found == [] and info["bucketsScanned"] == SERIES
    assert op.checks >= math.ceil(SERIES / stored.CHUNK)


async def test_the_check_interval_is_bounded_while_buckets_are_decoded(server, monkeypatch):
    await _load(server)
    CACHE.clear()  # every bucket decoded by this read
    monkeypatch.setattr(stored, "CHUNK", 1000)  # one chunk: only the per-bucket ticks check within it
    op = CountingOp()
    found, _ = _run(op, lambda: _group(server, {"t": {"$gte": T0}}))
    assert len(found) == SERIES
    assert op.checks >= SERIES // 16


async def test_an_expired_operation_stops_the_columnar_group_within_a_chunk(server):
    await _load(server)
    op = CountingOp(fail_at=2)
    with pytest.raises(MongoError) as e:
        _run(op, lambda: _group(server, {"t": {"$gte": T0}}))
    assert e.value.code == ErrorCode.MaxTimeMSExpired
    assert op.checks == 2


# ------------------------------------------------------------------ the chunk-at-once decisions


class Entry:
    """A bucketcache entry stand-in: its memo."""

    def __init__(self, memo):
        self.memo = memo


class Bucket:
    """A bucketview stand-in: the control time bounds and a memo, that of its cache entry when ``cached``
    (a stored bucket's), else its own (an in-memory bucket's)."""

    def __init__(self, lo, hi, cached=False):
        control = {"min": {} if lo is None else {"t": _date(lo)}, "max": {} if hi is None else {"t": _date(hi)}}
        self._summary = {"_id": 0, "control": control}
        self._memo = {}
        self.cached = Entry(self._memo) if cached else None

    def summary(self):
        return self._summary

    def time_range(self, time_field):
        control = self._summary["control"]
        lo, hi = control["min"].get(time_field), control["max"].get(time_field)
        return (None if lo is None else round((lo - _date(0)).total_seconds() * 1000),
                None if hi is None else round((hi - _date(0)).total_seconds() * 1000))

    def derived(self):
        return self._memo


def _date(ms):
    return dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=ms)


def _reference(lo, hi, checks):
    """The per-check formulas of the time-bounds predicate before chunks (each check on its own)."""
    if lo is None or hi is None:
        return False
    for op, d, earliest, latest in checks:
        ok = {"$eq": lo <= d <= hi and lo >= earliest and hi <= latest, "$gt": hi > d and lo > earliest,
              "$gte": hi >= d and lo >= earliest, "$lt": lo < d and hi < latest,
              "$lte": lo <= d and hi <= latest}[op]
        if not ok:
            return False
    return True


_MS = st.integers(0, 20) .map(lambda k: k * 1000)
_BOUND = st.one_of(st.none(), _MS)
_CHECK = st.tuples(st.sampled_from(["$eq", "$gt", "$gte", "$lt", "$lte"]), _MS).map(
    lambda c: (c[0], c[1], c[1] - 5000, c[1] + 5000))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_BOUND, _BOUND, st.booleans()), max_size=40), st.lists(_CHECK, min_size=1, max_size=3))
def test_time_bounds_decide_a_chunk_as_each_check_decides_each_bucket(drawn, checks):
    predicate = _TimeBounds("t", tuple(checks))
    bounds = [(lo, hi) for lo, hi, _ in drawn]
    buckets = [Bucket(lo, hi, cached) for lo, hi, cached in drawn]
    expected = [b for b, (lo, hi) in zip(buckets, bounds, strict=True) if _reference(lo, hi, checks)]
    assert [predicate(b) for b in buckets] == [_reference(lo, hi, checks) for lo, hi in bounds]
    assert kept(predicate, buckets) == expected
    assert kept(predicate, buckets) == expected  # from the remembered bounds


class Group:
    def __init__(self, conditions):
        self.time_field = "t"
        self.conditions = conditions


_OPS = {np.greater: lambda low, high, x: low > x, np.greater_equal: lambda low, high, x: low >= x,
        np.less: lambda low, high, x: high < x, np.less_equal: lambda low, high, x: high <= x,
        np.equal: lambda low, high, x: low == x and high == x}
_VALUE = st.one_of(st.integers(-3, 3), st.sampled_from([-1.5, 0.5, 2.0, 2**53 + 1.0]), st.just(2**53 + 1))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["t", "v"]), st.sampled_from(list(_OPS)),
                          st.one_of(_VALUE, st.just(math.nan))), min_size=1, max_size=4),
       st.lists(st.fixed_dictionaries({"t": st.tuples(_VALUE, _VALUE).map(sorted).map(tuple),
                                       "v": st.tuples(_VALUE, _VALUE).map(sorted).map(tuple)}), max_size=20))
def test_whole_bucket_ranges_pass_as_every_condition_on_its_own_says(conditions, ranges):
    expected = [all(_OPS[op](*r[path], x) for path, op, x in conditions) for r in ranges]
    assert passing(ranges, range_checks(Group(conditions))) == expected


def _group_with_flushes_seen(server, monkeypatch, match):
    """``_group`` with ``BATCH_ROWS`` 7 (every third 3-row bucket, mid-chunk): (groups, info, the rows
    gathered at each flush)."""
    from tidemark.timeseries import groupbatch

    seen = []
    flush = groupbatch._Batch.flush

    def spy(self):
        seen.append(self.rows)
        flush(self)

    monkeypatch.setattr(groupbatch._Batch, "flush", spy)
    monkeypatch.setattr(groupbatch, "BATCH_ROWS", 7)
    found, info = _group(server, match)
    return found, info, seen


async def test_whole_buckets_taken_a_chunk_at_once_flush_where_one_at_a_time_would(server, monkeypatch):
    """``_Batch.take`` takes a chunk's whole buckets at once yet flushes exactly when the rows gathered
    reach ``BATCH_ROWS``, as taking them one at a time did: same groups, same counters."""
    await _load(server)
    match = {"t": {"$gte": T0}}
    _group(server, match)  # decoded once: the buckets' runs are remembered
    expected, expected_info = _group(server, match)
    assert expected_info["bucketsColumnar"] == SERIES and len(expected) == SERIES
    found, info, seen = _group_with_flushes_seen(server, monkeypatch, match)
    assert found == expected
    assert {k: info[k] for k in ("bucketsColumnar", "bucketsUnpacked", "measurementsUnpacked")} == \
        {k: expected_info[k] for k in ("bucketsColumnar", "bucketsUnpacked", "measurementsUnpacked")}
    assert seen[:-1] == [9] * (SERIES // 3) and seen[-1] == 0


async def test_cut_buckets_added_at_once_flush_where_one_at_a_time_would(server, monkeypatch):
    """Buckets a window cuts (remembered parts, not taken whole) are added a row of them at once
    (``_Batch.add_cut``) yet flush exactly when the rows gathered reach ``BATCH_ROWS``, as adding
    them one at a time did: same groups, same counters."""
    await _load(server)
    match = {"t": {"$gte": T0 + dt.timedelta(minutes=1)}}  # 2 of each bucket's 3 rows
    _group(server, match)  # decoded once: the buckets' parts are remembered
    expected, expected_info = _group(server, match)
    assert expected_info["bucketsColumnar"] == SERIES and len(expected) == SERIES
    assert expected_info["measurementsReturned"] == 2 * SERIES
    found, info, seen = _group_with_flushes_seen(server, monkeypatch, match)
    assert found == expected
    keys = ("bucketsColumnar", "bucketsUnpacked", "measurementsUnpacked", "measurementsReturned")
    assert {k: info[k] for k in keys} == {k: expected_info[k] for k in keys}
    assert seen[:-1] == [9] * (SERIES // 3) and seen[-1] == 0


async def test_an_in_memory_bucket_replaces_its_stored_version_where_the_scan_meets_it(server):
    """A stored bucket reopened in memory with more rows is read once, as its in-memory view (matched by
    record id), in the stored bucket's place; the other stored buckets are read as stored."""
    await _load(server, series=5)
    more = [{"t": T0 + dt.timedelta(minutes=3), "m": s, "v": 100.0} for s in (1, 3)]
    await insert_measurements(server.ctx(), {"insert": "c", "documents": more, "$db": "db"})
    views = [v for chunk in scan.buckets(server.ctx().server, BNS) for v in chunk]
    metas = [v.summary()["meta"] for v in views]
    assert metas == [0, 1, 2, 3, 4]
    assert [v.cached is None and not isinstance(v, stored.StoredBucket) for v in views] == \
        [False, True, False, True, False]
    assert [len(v.dense("v")[1]) for v in views] == [3, 4, 3, 4, 3]


async def test_the_in_memory_buckets_of_a_scan_are_interruptible_before_its_first_chunk(server):
    """A scan makes a view of every in-memory bucket and places it before it hands on its first chunk:
    that work checks for interruption too (killOp, maxTimeMS; an inline run on the event loop moves to the
    pool at a check), at least once per ``TICKS_PER_CHECK`` buckets. Before, 100,000 in-memory buckets
    held an inline read on the loop ~1 s before its first check."""
    await timeseries_ddl.create(server.ctx(), {"create": "c", "timeseries": {"timeField": "t", "metaField": "m"},
                                               "$db": "db"})
    series = 3 * interrupt.TICKS_PER_CHECK
    docs = [{"t": T0, "m": s, "v": 1.0} for s in range(series)]
    await insert_measurements(server.ctx(), {"insert": "c", "documents": docs, "$db": "db"})  # all in memory
    op = CountingOp(fail_at=1)
    with pytest.raises(MongoError) as expired:
        _run(op, lambda: next(iter(scan.buckets(server.ctx().server, BNS))))
    assert expired.value.code == ErrorCode.MaxTimeMSExpired and op.checks == 1
    op = CountingOp()
    chunks = _run(op, lambda: list(scan.buckets(server.ctx().server, BNS)))
    assert sum(map(len, chunks)) == series
    assert op.checks >= 2 * series // interrupt.TICKS_PER_CHECK - 1  # the views, then their places
