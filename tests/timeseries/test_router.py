"""router.py called directly: a real ``BucketCatalog`` and collection state, batches from ingest.py,
``router.route`` and nothing else (no harness copy of the insert path, no storage).

For each rollover rule the router applies (count, size, span/time forward, time backward, schema change,
memory), the bucket every row lands in and the statistic that counts the rollover; then the router's
choice of bucket for a measurement (open, archived reopened, a stored one asked of the loader once)."""

from __future__ import annotations

import datetime as dt

import bson
import numpy as np
import pytest

from tidemark.protocol.codec import CODEC_OPTIONS
from tidemark.protocol.messages import RawDocuments
from tidemark.timeseries import ingest, router, rules
from tidemark.timeseries.batch import ColumnBatch, RowBatch
from tidemark.timeseries.catalog import BucketCatalog
from tidemark.timeseries.options import parse_timeseries
from tidemark.timeseries.states import State

T0 = dt.datetime(2024, 3, 1, 12, 0)
PARAMS = {"timeseriesBucketMaxCount": 1000, "timeseriesBucketMaxSize": 128_000, "timeseriesBucketMinCount": 10,
          "timeseriesIdleBucketExpiryMaxCountPerAttempt": 3}


class Collection:
    """One time-series collection in a fresh catalog; ``route`` sends a batch through ``router.route``."""

    def __init__(self, memory_threshold: int = 1 << 40, loader=None, **params):
        self.options = parse_timeseries("db.c", {"timeField": "t", "metaField": "m"})
        self.catalog = BucketCatalog(memory_threshold=memory_threshold)
        self.state = self.catalog.collection("db.system.buckets.c", self.options)
        self.limits = rules.Limits.of({**PARAMS, **params}, self.options, memory_threshold)
        self.loader = loader

    def route(self, docs: list[dict], columns: bool = False) -> list:
        """Route ``docs`` in one batch; returns the bucket each one landed in."""
        if columns:
            buffer = b"".join(bson.encode(d, codec_options=CODEC_OPTIONS) for d in docs)
            raw = RawDocuments(buffer, 0, len(buffer), "documents")
            prepared = ingest.prepare({"insert": "c", "documents": raw}, self.options, True, None)
            assert isinstance(prepared.batch, ColumnBatch)
        else:
            prepared = ingest.prepare_rows([dict(d) for d in docs], None, self.options, True)
            assert isinstance(prepared.batch, RowBatch)
        assert not prepared.errors
        batch = prepared.batch
        assert ingest.series_ids(self.state.series, batch)
        router.route(self.catalog, self.state, batch, np.arange(batch.n), self.limits, self.loader)
        return [self._holder(d) for d in docs]

    def _holder(self, doc: dict):
        """The in-memory bucket holding ``doc`` (by its ``_id``)."""
        for bucket in self.state.live.values():
            rows = bucket.document_parts(bucket.count)
            if doc["_id"] in bson.decode(rows.bson(), codec_options=CODEC_OPTIONS)["data"]["_id"].values():
                return bucket
        raise AssertionError(f"{doc['_id']} is in no bucket")

    def commit(self) -> None:
        """As a commit would: every row durable, so the buckets are idle."""
        for bucket in self.state.live.values():
            bucket.table.durable[bucket.slot] = bucket.in_flight = bucket.count
            bucket.committed = True
        self.catalog.take_dirty()

    @property
    def stats(self) -> dict:
        return self.state.stats


def doc(i: int, t: dt.datetime, m="a", **fields) -> dict:
    return {"_id": i, "t": t, "m": m, **fields}


def ids(buckets) -> list[int]:
    """Buckets as small numbers in order of first appearance."""
    seen: dict[int, int] = {}
    return [seen.setdefault(id(b), len(seen)) for b in buckets]


BOTH = pytest.mark.parametrize("columns", [False, True], ids=["rows", "columns"])


# ------------------------------------------------------------------ rollovers


@BOTH
def test_count_rolls_over_at_the_max_count(columns):
    coll = Collection(timeseriesBucketMaxCount=3)
    landed = coll.route([doc(i, T0 + dt.timedelta(seconds=i), v=i) for i in range(7)], columns)
    assert ids(landed) == [0, 0, 0, 1, 1, 1, 2]
    assert coll.stats["numBucketsClosedDueToCount"] == 2
    assert [b.state for b in landed[::3]] == [State.CLOSED, State.CLOSED, State.OPEN]


@BOTH
def test_size_rolls_over_once_the_bucket_holds_the_min_count(columns):
    coll = Collection(timeseriesBucketMaxSize=2_000, timeseriesBucketMinCount=2)
    landed = coll.route([doc(i, T0 + dt.timedelta(seconds=i), s="x" * 300) for i in range(8)], columns)
    assert len(set(ids(landed))) > 1
    assert coll.stats["numBucketsClosedDueToSize"] == len(set(ids(landed))) - 1
    assert all(b.size <= 2_000 for b in landed)


def test_size_keeps_a_bucket_under_the_min_count_open_for_large_measurements():
    coll = Collection(timeseriesBucketMaxSize=500, timeseriesBucketMinCount=10)
    landed = coll.route([doc(i, T0 + dt.timedelta(seconds=i), s="x" * 400) for i in range(3)])
    assert ids(landed) == [0, 0, 0]
    assert coll.stats["numBucketsKeptOpenDueToLargeMeasurements"] == 1  # once per bucket, as mongod
    assert coll.stats["numBucketsClosedDueToSize"] == 0


@BOTH
def test_span_time_forward_archives_at_the_span_boundary(columns):
    coll = Collection()  # granularity seconds: span 3600 s, buckets start on the minute
    start = T0
    landed = coll.route([doc(0, start), doc(1, start + dt.timedelta(seconds=3599, milliseconds=999)),
                         doc(2, start + dt.timedelta(seconds=3600))], columns)
    assert ids(landed) == [0, 0, 1]
    assert landed[0].state is State.ARCHIVED and landed[2].state is State.OPEN
    assert coll.stats["numBucketsArchivedDueToTimeForward"] == 1


def test_time_backward_archives_and_the_next_row_in_range_reopens():
    coll = Collection()
    # the second bucket starts 11:55 and holds the hour up to 12:55; 12:56 is past it, inside the first
    landed = coll.route([doc(0, T0), doc(1, T0 - dt.timedelta(minutes=5)), doc(2, T0 + dt.timedelta(minutes=56))])
    assert ids(landed) == [0, 1, 0]
    assert coll.stats["numBucketsArchivedDueToTimeBackward"] == 1
    assert coll.stats["numBucketsArchivedDueToTimeForward"] == 1  # back to the first: the second archived
    assert coll.stats["numBucketsReopened"] == 1
    assert landed[0].state is State.OPEN and landed[1].state is State.ARCHIVED


@BOTH
def test_schema_change_closes_the_bucket(columns):
    coll = Collection()
    first = coll.route([doc(0, T0, v=1.5), doc(1, T0, v=2.5)], columns)
    assert coll.route([doc(9, T0, v=3)], columns)[0] is first[0]  # numbers are one type class
    changed = coll.route([doc(2, T0, v="text")], columns)  # a string is another
    assert ids(first + changed) == [0, 0, 1]
    assert first[0].state is State.CLOSED
    assert coll.stats["numBucketsClosedDueToSchemaChange"] == 1


def test_memory_threshold_closes_idle_buckets_before_a_new_one():
    coll = Collection(memory_threshold=20_000, timeseriesIdleBucketExpiryMaxCountPerAttempt=3)
    for k in range(40):
        coll.route([doc(k, T0, m=k, v=1.0)])
        coll.commit()  # idle: only buckets with nothing uncommitted may close for memory
    closed = coll.stats["numBucketsClosedDueToMemoryThreshold"]
    assert closed > 0
    # retired: awaiting their full write, unrouted, resumable by their series (catalog.resume)
    expired = [b for b in coll.state.live.values() if id(b) in coll.catalog.leaving]
    assert len(expired) == closed and all(b.state is State.ARCHIVED and b.needs_full for b in expired)
    assert sorted(b.sid for b in expired) == sorted(coll.state.series.parting)
    # held under the threshold but for the bucket opened after room was made
    largest = max(b.charged + b.table.row_bytes for b in coll.state.live.values())
    assert coll.catalog.memory - coll.catalog.leaving_bytes <= 20_000 + largest


def test_memory_threshold_never_closes_a_bucket_with_uncommitted_rows():
    coll = Collection(memory_threshold=5_000)
    for k in range(20):
        coll.route([doc(k, T0, m=k, v=1.0)])
    assert coll.stats["numBucketsClosedDueToMemoryThreshold"] == 0


# ------------------------------------------------------------------ the bucket a measurement goes to


@BOTH
def test_measurements_of_a_series_share_its_open_bucket_and_series_never_share(columns):
    coll = Collection()
    landed = coll.route([doc(0, T0, m="a"), doc(1, T0, m="b"), doc(2, T0, m="a"), doc(3, T0, m="c")], columns)
    assert ids(landed) == [0, 1, 0, 2]
    assert coll.stats["numBucketsOpenedDueToMetadata"] == 3
    sid = coll.state.series.sid_of_key
    assert len(sid) == 3


def test_an_archived_bucket_whose_range_holds_the_time_takes_it_newest_first():
    coll = Collection()
    day1, day2, day3 = T0, T0 + dt.timedelta(days=1), T0 + dt.timedelta(days=2)
    a, b, c = coll.route([doc(0, day1), doc(1, day2), doc(2, day3)])
    assert a.state is b.state is State.ARCHIVED and c.state is State.OPEN
    (back,) = coll.route([doc(3, day1 + dt.timedelta(minutes=1))])
    assert back is a and a.state is State.OPEN and c.state is State.ARCHIVED


def test_an_archived_bucket_that_breaks_a_rule_is_passed_over():
    coll = Collection(timeseriesBucketMaxCount=2)
    day1, day2 = T0, T0 + dt.timedelta(days=1)
    a1, a2, b = coll.route([doc(0, day1), doc(1, day1), doc(2, day2)])
    assert a1 is a2  # full (2 of 2); archived by the time-forward row
    (new,) = coll.route([doc(3, day1)])
    assert new is not a1 and new is not b
    assert a1.state is not State.OPEN


def test_the_loader_is_asked_once_per_series_before_a_new_bucket():
    asked = []

    def loader(state, sid, t_ms):
        asked.append((sid, t_ms))
        return None  # storage holds no bucket with room

    coll = Collection(loader=loader)
    coll.route([doc(0, T0, m="a"), doc(1, T0, m="b")])
    coll.route([doc(2, T0 + dt.timedelta(days=1), m="a")])  # a new bucket again: storage not asked again
    sids = coll.state.series.sid_of_key
    assert [sid for sid, _ in asked] == sorted(sids.values())
    assert asked[0][1] == rules_ms(T0)


def test_rows_and_columns_route_alike():
    """The vectorized path of a column batch gives the buckets that one-by-one routing gives."""
    docs = [doc(i, T0 + dt.timedelta(seconds=(i * 37) % 5000), m=i % 3, v=float(i)) for i in range(300)]
    by_rows, by_columns = Collection(timeseriesBucketMaxCount=40), Collection(timeseriesBucketMaxCount=40)
    assert ids(by_rows.route(docs)) == ids(by_columns.route(docs, columns=True))
    assert by_rows.stats == by_columns.stats


def rules_ms(t: dt.datetime) -> int:
    from tidemark.timeseries.bucketdoc import date_ms

    return date_ms(t)


# ------------------------------------------------------------------ what the router leaves to the catalog


@pytest.mark.parametrize("reason", list(rules.Rollover), ids=lambda r: r.name)
def test_the_catalog_does_what_each_rollover_reason_says_and_counts_its_statistic(reason):
    coll = Collection()
    (bucket,) = coll.route([doc(0, T0, v=1.0)])
    before = dict(coll.stats)
    coll.catalog.rollover(coll.state, bucket, reason)
    expected = {rules.Action.ARCHIVE: State.ARCHIVED, rules.Action.CLOSE: State.CLOSED,
                rules.Action.KEEP: State.OPEN}[reason.action]
    assert bucket.state is expected
    assert {k: v - before[k] for k, v in coll.stats.items() if v != before[k]} == {reason.statistic: 1}


@BOTH
def test_a_pure_bucket_counts_its_table_row_and_its_objects_not_its_bytes_again(columns):
    """A pure bucket's values are in its table's typed arrays, which the table counts as its slot row
    at the table's capacity: appends to it (vectorized or one by one) count nothing per byte, so memory
    grows only with the rows' capacity. Before, every appended byte also counted PYTHON_OVERHEAD (3)
    bytes: a 360-row TSBS bucket was counted ~300 KB for ~60 KB held (a 1-day load of 100 hosts: 632 MB
    counted, 121 MB of anonymous RSS grown), so the memory threshold closed buckets at a fifth of it."""
    from tidemark.timeseries.catalog import BUCKET_OVERHEAD, META_COPIES

    coll = Collection()
    coll.route([doc(i, T0, m=i % 4, v=1.0, w=i) for i in range(4)], columns=columns)  # a bucket per series
    tables = list(coll.state.tables.values())
    before = coll.catalog.memory - sum(t.live * t.row_bytes for t in tables)
    for k in range(1, 300):
        landed = coll.route([doc(10 * k + i, T0 + dt.timedelta(seconds=k), m=i % 4, v=float(k), w=k)
                             for i in range(4)], columns=columns)
        assert all(b.pure for b in landed)
    assert len(coll.state.live) == 4 and all(b.count == 300 for b in coll.state.live.values())
    assert all(b.charged == BUCKET_OVERHEAD + META_COPIES * b.meta_bytes for b in coll.state.live.values())
    # only the slot rows grew (with the tables' capacity)
    assert coll.catalog.memory - sum(t.live * t.row_bytes for t in tables) == before
    assert sum(t.row_bytes for t in tables) >= 300 * 8 * 2  # (two float/int columns of 300 rows at least)
