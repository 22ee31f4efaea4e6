"""Ingest cost does not grow with bucket fill (acceptance 7): 100 series x 360 one-measurement inserts
(one hour at 10 s) — the bytes each commit writes stay flat instead of growing with the bucket."""

import asyncio
import datetime as dt

import pytest
from harness.timeseries import Server

from tidemark.commands import timeseries_ddl
from tidemark.commands.timeseries_insert import insert_measurements

T0 = dt.datetime(2024, 3, 1, 0, 0)
SERIES = 100
ROUNDS = 360


@pytest.mark.slow
async def test_bytes_written_per_insert_stay_flat_as_buckets_fill(tmp_path):
    server = Server(tmp_path / "db")
    catalog = server.bucket_catalog
    ctx = server.ctx()
    try:
        await timeseries_ddl.create(ctx, {"create": "cpu", "timeseries": {"timeField": "time", "metaField": "tags"}, "$db": "db"})
        per_round = []
        counters = server.ts_committer.counters
        for r in range(ROUNDS):
            before = counters.journalBytes + counters.bucketBytes
            t = T0 + dt.timedelta(seconds=10 * r)
            await asyncio.gather(*(
                insert_measurements(ctx, {"insert": "cpu", "$db": "db", "documents": [
                    {"time": t, "tags": {"hostname": f"host_{s}", "region": "eu-west-1"},
                     "usage_user": float(r % 100), "usage_system": float(s % 50), "usage_idle": 42.0}]})
                for s in range(SERIES)))
            per_round.append((counters.journalBytes + counters.bucketBytes - before) / SERIES)
        tenth = ROUNDS // 10
        first, last = sum(per_round[:tenth]) / tenth, sum(per_round[-tenth:]) / tenth
        print(f"bytes written per insert: first tenth {first:.0f}, last tenth {last:.0f}")
        assert counters.bucketDocuments == 0  # no bucket closed or was rewritten during the hour
        assert last <= first * 1.1  # flat: not proportional to the ~360x larger bucket
        stats = catalog.collection_stats("db.system.buckets.cpu")
        assert stats["numMeasurementsCommitted"] == SERIES * ROUNDS
        assert stats["numBucketInserts"] == SERIES
    finally:
        server.engine.close()
