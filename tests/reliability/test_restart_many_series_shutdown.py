"""A graceful shutdown with many open buckets writes every one in full (commit.Committer.close), leaves
nothing in the journal to replay, and the next start reads every measurement once."""

import datetime as dt

from harness.timeseries import Server

from tidemark.commands import timeseries_ddl, timeseries_insert
from tidemark.timeseries import scan

T0 = dt.datetime(2024, 1, 1)
NS = "db.system.buckets.many"
SERIES = 1_000


def measurements(start: int, n: int) -> list[dict]:
    return [{"t": T0 + dt.timedelta(seconds=i), "m": f"s-{i:06d}", "v": float(i)} for i in range(start, start + n)]


async def test_shutdown_writes_every_open_bucket_in_full_and_the_restart_replays_nothing(tmp_path):
    path = tmp_path / "db"
    server = Server(path)
    ctx = server.ctx()
    await timeseries_ddl.create(ctx, {"create": "many", "timeseries": {"timeField": "t", "metaField": "m"},
                                      "$db": "db"})
    for at in range(0, SERIES, 250):
        await timeseries_insert.insert_measurements(ctx, {"insert": "many", "$db": "db",
                                                          "documents": measurements(at, 250)})
    counters = server.ts_committer.counters
    assert counters.bucketDocuments == 0  # every bucket open, its rows in the journal only
    await server.ts_committer.close()
    assert counters.bucketDocuments == SERIES
    with server.engine.read() as r:
        assert list(r.journal_scan()) == []
    server.engine.close()

    restarted = Server(path)
    try:
        docs = list(scan.bucket_documents(restarted, NS))
        assert sorted(d["meta"] for d in docs) == [f"s-{i:06d}" for i in range(SERIES)]
        assert [len(d["data"]["v"]) for d in docs] == [1] * SERIES
    finally:
        restarted.engine.close()
