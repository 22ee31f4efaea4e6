"""mongod 7.0's reopening counters (collStats ``timeseries``, serverStatus ``bucketCatalog``) add up over
random insert sequences: a bucket comes back either from the catalog (an archived or parting bucket:
``numBucketsFetched``) or from storage by the query (``numBucketsQueried``; a query answering nothing
counts ``numBucketQueriesFailed``), and a found bucket that does not take the measurement counts
``numBucketReopeningsFailed``; so ``numBucketsReopened = fetched + queried - reopenings failed``. Every
bucket in storage was opened once (``numBucketInserts``), whatever came back how often."""

import asyncio
import datetime as dt
import tempfile

import bson
from harness.timeseries import Server
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.commands import timeseries_ddl, timeseries_insert
from tidemark.protocol.codec import CODEC_OPTIONS
from tidemark.protocol.messages import RawDocuments
from tidemark.timeseries import scan
from tidemark.timeseries.catalog import STAT_NAMES

T0 = dt.datetime(2024, 1, 1, 12)
NS = "db.system.buckets.m"

_rows = st.lists(st.tuples(st.integers(0, 3), st.integers(-150, 150), st.booleans()), min_size=1, max_size=16)
_ops = st.lists(st.one_of(_rows, st.just("settle")), min_size=1, max_size=10)


def _doc(meta, minutes, wide):
    doc = {"t": T0 + dt.timedelta(minutes=minutes), "h": f"s{meta}", "v": float(minutes)}
    if wide:  # another schema: an impure bucket, or a schema-change close
        doc["v"] = f"x{minutes}"
    return doc


async def _run(ops, threshold, max_count):
    server = Server(tempfile.mkdtemp(), memory_threshold=threshold)
    server.params.set_at_startup(f"timeseriesBucketMaxCount={max_count}")
    ctx = server.ctx()
    committer, catalog = server.ts_committer, server.bucket_catalog
    inserted = 0
    try:
        await timeseries_ddl.create(ctx, {"create": "m", "timeseries": {"timeField": "t", "metaField": "h"}, "$db": "db"})
        for op in ops:
            if op == "settle":  # every bucket written in full and gone: the next rows query storage
                await committer.close_collection(NS)
                continue
            docs = [_doc(*row) for row in op]
            buffer = b"".join(bson.encode(d, codec_options=CODEC_OPTIONS) for d in docs)  # as sent: the
            raw = RawDocuments(buffer, 0, len(buffer), "documents")  # column-wise parse when it can
            await timeseries_insert.insert_measurements(ctx, {"insert": "m", "$db": "db", "documents": raw})
            inserted += len(docs)
        await committer.close_collection(NS)
        stats = catalog.collection_stats(NS)
        stored = list(scan.bucket_documents(server, NS))
        return stats, stored, inserted
    finally:
        server.engine.close()


@settings(max_examples=40, deadline=None)
@given(_ops, st.sampled_from([1 << 40, 48 << 10, 12 << 10]), st.sampled_from([1000, 3]))
def test_the_reopening_counters_add_up(ops, threshold, max_count):
    stats, stored, inserted = asyncio.run(_run(ops, threshold, max_count))
    assert [n for n in stats if n != "avgNumMeasurementsPerCommit"] == list(STAT_NAMES)
    reopened = stats["numBucketsFetched"] + stats["numBucketsQueried"] - stats["numBucketReopeningsFailed"]
    assert stats["numBucketsReopened"] == reopened, stats
    assert stats["numBucketFetchesFailed"] == stats["numBucketsClosedDueToReopening"] == 0
    assert len(stored) == stats["numBucketInserts"]  # each stored bucket opened once
    assert sum(len(b["data"]["t"]) for b in stored) == inserted == stats["numMeasurementsCommitted"]


async def test_each_way_back_counts_once(tmp_path):
    server = Server(tmp_path / "db")
    ctx = server.ctx()

    async def put(minutes, meta="a"):
        await timeseries_insert.insert_measurements(ctx, {"insert": "m", "$db": "db", "documents": [_doc(meta, minutes, False)]})
        stats = server.bucket_catalog.collection_stats(NS)
        return {k: stats[k] for k in ("numBucketsReopened", "numBucketsFetched", "numBucketsQueried",
                                      "numBucketQueriesFailed", "numBucketReopeningsFailed")}

    try:
        await timeseries_ddl.create(ctx, {"create": "m", "timeseries": {"timeField": "t", "metaField": "h"}, "$db": "db"})
        got = await put(0)  # a new series: storage asked (mongod queries for it too), nothing found
        assert got == {"numBucketsReopened": 0, "numBucketsFetched": 0, "numBucketsQueried": 0,
                       "numBucketQueriesFailed": 1, "numBucketReopeningsFailed": 0}
        await put(120)  # time forward: the first bucket archived
        got = await put(1)  # back into it: fetched from the catalog
        assert got["numBucketsReopened"] == got["numBucketsFetched"] == 1 and got["numBucketsQueried"] == 0
        await server.ts_committer.close_collection(NS)  # stored and gone from memory
        got = await put(2)  # storage asked: the stored bucket of that hour
        assert got["numBucketsReopened"] == 2 and got["numBucketsQueried"] == 1
        got = await put(0, meta="new")  # another new series
        assert got["numBucketQueriesFailed"] == 2 and got["numBucketsReopened"] == 2
    finally:
        server.engine.close()
