"""Reading buckets through a bucket index against the real storage engine (no server)."""

import datetime as dt
from types import SimpleNamespace

import pytest

from server.timeseries import ddl, indexes, writes
from server.timeseries.catalog import BucketCatalog
from server.timeseries.commit import Committer, recover
from storage.engine import open_engine

T0 = dt.datetime(2024, 1, 1)
BNS = "db.system.buckets.c"


class Server:
    def __init__(self, path):
        self.engine = open_engine(str(path))
        recover(self.engine)
        self.bucket_catalog = BucketCatalog(memory_threshold=1 << 40)
        self.ts_committer = Committer(self.engine, self.bucket_catalog)

    def ctx(self):
        return SimpleNamespace(server=self, db="db")


@pytest.fixture
def server(tmp_path):
    s = Server(tmp_path / "data")
    yield s
    s.engine.close()


async def _load(server, sensors=50, per_sensor=3):
    await ddl.create(
        server.ctx(), {"create": "c", "timeseries": {"timeField": "t", "metaField": "m"}, "$db": "db"}
    )
    docs = [
        {"t": T0 + dt.timedelta(seconds=i), "m": s, "v": i} for s in range(sensors) for i in range(per_sensor)
    ]
    await writes.insert_measurements(server.ctx(), {"insert": "c", "documents": docs, "$db": "db"})
    await server.ts_committer.close()  # write every bucket in full: storage and its indexes hold them all


def _specs(server):
    with server.engine.read() as r:
        return list(r.get_collection(BNS).indexes)


async def test_meta_equality_reads_only_the_matching_bucket_through_the_default_index(server):
    await _load(server)
    server.bucket_catalog.forget(BNS)
    plan = indexes.bucket_index_plan(_specs(server), {"m": 7}, "t", "m", 3600)
    stats: dict = {}
    found = list(indexes.indexed_bucket_documents(server, BNS, plan, stats))
    assert [b["meta"] for b in found] == [7]
    assert stats["bucketsScanned"] == 1


async def test_in_memory_buckets_are_merged_even_when_the_index_misses_them(server):
    await _load(server, sensors=2)
    docs = [{"t": T0 + dt.timedelta(minutes=5), "m": 99, "v": 0}]  # a new, still open bucket
    await writes.insert_measurements(server.ctx(), {"insert": "c", "documents": docs, "$db": "db"})
    plan = indexes.bucket_index_plan(_specs(server), {"m": 99}, "t", "m", 3600)
    metas = [b.get("meta") for b in indexes.indexed_bucket_documents(server, BNS, plan)]
    assert 99 in metas


async def test_chunked_scan_yields_each_bucket_once(server):
    await _load(server, sensors=30)
    server.bucket_catalog.forget(BNS)
    plan = indexes.bucket_index_plan(_specs(server), {"m": {"$gte": 0}}, "t", "m", 3600)
    found = list(indexes.indexed_bucket_documents(server, BNS, plan, chunk=7))
    assert sorted(b["meta"] for b in found) == list(range(30))


async def test_bucket_predicate_drops_buckets_after_the_index_read(server):
    await _load(server, sensors=5)
    server.bucket_catalog.forget(BNS)
    plan = indexes.bucket_index_plan(_specs(server), {"m": {"$gte": 0}}, "t", "m", 3600)
    stats: dict = {}
    found = list(
        indexes.indexed_bucket_documents(server, BNS, plan, stats, predicate=lambda b: b["meta"] % 2 == 0)
    )
    assert sorted(b["meta"] for b in found) == [0, 2, 4]
    assert stats["bucketsScanned"] == 5
