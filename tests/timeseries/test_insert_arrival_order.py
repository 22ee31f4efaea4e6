"""Inserts into one time-series collection route in the order they arrived (Committer.turn), even when
one of them waits before routing (closed buckets awaiting their full writes) or routes in slices: a
time-ordered load over several connections then never sees a series' time go back across a bucket's
start (overtaken, every such series archived its new bucket and reopened the old one: the TSBS load
archived 2,800-4,500 buckets for time backward, and its bytes per row rose 20 %). And only series that
may query storage cut an insert into slices."""

import asyncio
import datetime as dt

import bson
import numpy as np
import pytest
from harness.timeseries import Server

from tidemark.commands import timeseries_ddl
from tidemark.commands.timeseries_insert import insert_measurements
from tidemark.protocol.codec import CODEC_OPTIONS
from tidemark.protocol.messages import RawDocuments
from tidemark.timeseries import ingest
from tidemark.timeseries import options as ts_options
from tidemark.timeseries.batch import ColumnBatch
from tidemark.timeseries.catalog import Series

T0 = dt.datetime(2024, 1, 1)
NS = "db.system.buckets.cpu"


@pytest.fixture
def server(tmp_path):
    s = Server(tmp_path / "data")
    yield s
    s.engine.close()


async def create(server):
    await timeseries_ddl.create(server.ctx(), {"create": "cpu", "timeseries": {"timeField": "t", "metaField": "m"},
                                               "$db": "db"})


def raw(docs):
    """The documents as the wire hands them over (a kind-1 sequence): the column-wise parse."""
    buffer = b"".join(bson.encode(d, codec_options=CODEC_OPTIONS) for d in docs)
    return RawDocuments(buffer, 0, len(buffer), "documents")


def rows(hosts, start, ticks):
    """Time-major, host-minor rows every 10 s from ``start`` (the TSBS shape)."""
    return [{"t": start + dt.timedelta(seconds=10 * k), "m": f"host_{h}", "v": float(k)}
            for k in range(ticks) for h in range(hosts)]


async def insert(server, docs):
    return await insert_measurements(server.ctx(), {"insert": "cpu", "documents": docs, "$db": "db"})


def stats(server):
    return server.bucket_catalog.collection_stats(NS)


async def test_an_insert_waiting_for_full_writes_is_not_overtaken_by_a_later_one(server):
    await create(server)
    await insert(server, raw(rows(4, T0, 1)))
    catalog = server.bucket_catalog
    catalog.leaving_bytes = 1 << 40  # closed buckets awaiting their full writes: the next insert waits
    first = asyncio.create_task(insert(server, raw(rows(4, T0 + dt.timedelta(minutes=10), 3))))
    await asyncio.sleep(0)
    catalog.leaving_bytes = 0  # a later insert no longer has to wait ...
    later = asyncio.create_task(insert(server, raw(rows(4, T0 + dt.timedelta(hours=1), 3))))
    await asyncio.gather(first, later)
    got = stats(server)  # ... but routes after the first: its rows open the next hour's buckets once
    assert got["numBucketsArchivedDueToTimeForward"] == 4
    assert got["numBucketsArchivedDueToTimeBackward"] == 0 and got["numBucketsReopened"] == 0
    assert got["numMeasurementsCommitted"] == 4 * 7


async def test_an_insert_routed_in_slices_is_not_interleaved_with_a_later_one(server):
    await create(server)
    await insert(server, rows(50, T0, 1))
    # dict documents (the per-document parse): 600 rows of 3 values route in slices of ~167 rows
    first = asyncio.create_task(insert(server, rows(50, T0 + dt.timedelta(minutes=10), 12)))
    later = asyncio.create_task(insert(server, rows(50, T0 + dt.timedelta(hours=1), 2)))
    await asyncio.gather(first, later)
    got = stats(server)
    assert got["numBucketsArchivedDueToTimeForward"] == 50
    assert got["numBucketsArchivedDueToTimeBackward"] == 0 and got["numBucketsReopened"] == 0
    assert got["numMeasurementsCommitted"] == 50 * 15


def column_batch(hosts, ticks, series):
    prepared = ingest.prepare({"insert": "cpu", "documents": raw(rows(hosts, T0, ticks))},
                              server_options(), True, None)
    batch = prepared.batch
    assert isinstance(batch, ColumnBatch)
    assert ingest.series_ids(series, batch)
    return batch


def server_options():
    return ts_options.from_document({"timeField": "t", "metaField": "m"})


def test_only_series_that_may_query_storage_cut_an_insert_into_slices():
    series = Series()
    batch = column_batch(100, 10, series)  # 1,000 rows of 100 series
    assert len(np.unique(batch.sids)) == 100
    fresh = ingest.slices(batch, series.queried)
    assert len(fresh) > 2  # 100 series to ask storage about: slices of ~32 series
    for sid in range(100):
        series.queried[sid] = True
    assert ingest.slices(batch, series.queried) == [0, batch.n]  # all asked already: routed at once
    for sid in range(40):
        series.queried[sid] = False
    assert 2 < len(ingest.slices(batch, series.queried)) < len(fresh)
