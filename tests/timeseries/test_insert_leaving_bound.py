"""An insert of many new series over the memory threshold: each new bucket expires idle ones first
(mongod's rule), and their full writes go out in commits of their own between its routing slices
(``Committer.write_leaving``), so the buckets leaving memory stay about the leaving allowance instead of
one per new series until the insert's commit; nothing of the insert is lost or written early."""

import datetime as dt

from harness.timeseries import Server

from tidemark.commands import timeseries_ddl, timeseries_insert
from tidemark.timeseries import scan
from tidemark.timeseries.ingest import leaving_allowance

T0 = dt.datetime(2024, 1, 1)
NS = "db.system.buckets.m"
THRESHOLD = 4 << 20


def docs(lo, hi, t=T0):
    return [{"t": t, "h": {"id": i}, "v": float(i)} for i in range(lo, hi)]


async def test_an_insert_of_many_new_series_holds_about_the_leaving_allowance(tmp_path, monkeypatch):
    server = Server(tmp_path / "db", memory_threshold=THRESHOLD)
    ctx = server.ctx()
    catalog, committer = server.bucket_catalog, server.ts_committer
    try:
        await timeseries_ddl.create(ctx, {"create": "m", "timeseries": {"timeField": "t", "metaField": "h"}, "$db": "db"})
        for lo in range(0, 3000, 1000):
            await timeseries_insert.insert_measurements(ctx, {"insert": "m", "$db": "db", "documents": docs(lo, lo + 1000)})
        while catalog.leaving_bytes or catalog.deferred:
            await committer.commit(())
        resident = len(catalog.get(NS).live)
        peak = []
        route = timeseries_insert.router.route

        def routed(catalog, *args, **kwargs):  # after each routing slice
            route(catalog, *args, **kwargs)
            peak.append(catalog.leaving_bytes)

        monkeypatch.setattr(timeseries_insert.router, "route", routed)
        await timeseries_insert.insert_measurements(ctx, {"insert": "m", "$db": "db", "documents": docs(3000, 6000)})
        expired = catalog.collection_stats(NS)["numBucketsClosedDueToMemoryThreshold"]
        assert expired >= resident  # every resident bucket left for the new ones: ~1,600 B each
        assert len(peak) > 10  # routed in slices
        # before: every expiry of the insert waited for its commit (~4.5 MB at the last slice)
        assert max(peak) <= leaving_allowance(THRESHOLD) + (256 << 10), max(peak)
        while catalog.leaving_bytes or catalog.deferred:
            await committer.commit(())
        got = sorted(d["meta"]["id"] for d in scan.bucket_documents(server, NS))
        assert got == list(range(6000))  # written in full once, each series' one bucket
    finally:
        server.engine.close()
