"""Reading buckets through a bucket index against the real storage engine (no server): scan.index_buckets
with a plan chosen from the one bucket-filter derivation."""

import datetime as dt

import pytest
from harness.timeseries import Server

from tidemark.commands import timeseries_ddl
from tidemark.commands.timeseries_insert import insert_measurements
from tidemark.query.match import parse_filter
from tidemark.timeseries import scan, stored
from tidemark.timeseries.filters import derive
from tidemark.timeseries.view import choose_index

T0 = dt.datetime(2024, 1, 1)
BNS = "db.system.buckets.c"


@pytest.fixture
def server(tmp_path):
    s = Server(tmp_path / "data")
    yield s
    s.engine.close()


async def _load(server, sensors=50, per_sensor=3):
    await timeseries_ddl.create(server.ctx(), {"create": "c", "timeseries": {"timeField": "t", "metaField": "m"}, "$db": "db"})
    docs = [{"t": T0 + dt.timedelta(seconds=i), "m": s, "v": i} for s in range(sensors) for i in range(per_sensor)]
    await insert_measurements(server.ctx(), {"insert": "c", "documents": docs, "$db": "db"})
    await server.ts_committer.close_collection(BNS)  # every bucket in full: storage and its indexes hold them all


def _plan(server, flt):
    with server.engine.read() as r:
        specs = list(r.get_collection(BNS).indexes)
    bfilter = derive(parse_filter(flt), "t", "m", 3600)
    return choose_index(specs, bfilter, None, "t", "m"), bfilter


async def test_meta_equality_reads_only_the_matching_bucket_through_the_default_index(server):
    await _load(server)
    plan, bfilter = _plan(server, {"m": 7})
    stats: dict = {}
    found = [b for chunk in scan.index_buckets(server, BNS, plan, stats, bfilter.predicate) for b in chunk]
    assert [b.summary()["meta"] for b in found] == [7]
    assert stats["bucketsScanned"] == 1 and stats["keysExamined"] == 1


async def test_in_memory_buckets_are_merged_even_when_the_index_misses_them(server):
    await _load(server, sensors=2)
    docs = [{"t": T0 + dt.timedelta(minutes=5), "m": 99, "v": 0}]  # a new, still open bucket
    await insert_measurements(server.ctx(), {"insert": "c", "documents": docs, "$db": "db"})
    plan, bfilter = _plan(server, {"m": 99})
    metas = [b.summary().get("meta") for chunk in scan.index_buckets(server, BNS, plan, None, bfilter.predicate) for b in chunk]
    assert metas == [99]


async def test_chunked_reads_yield_each_bucket_once(server, monkeypatch):
    await _load(server, sensors=30)
    monkeypatch.setattr(stored, "CHUNK", 7)
    plan, _ = _plan(server, {"m": {"$gte": 0}})
    found = [b for chunk in scan.index_buckets(server, BNS, plan) for b in chunk]
    assert sorted(b.summary()["meta"] for b in found) == list(range(30))


async def test_bucket_predicate_drops_buckets_after_the_index_read(server):
    await _load(server, sensors=5)
    plan, _ = _plan(server, {"m": {"$gte": 0}})
    stats: dict = {}
    found = [b for chunk in scan.index_buckets(server, BNS, plan, stats, lambda b: b.summary()["meta"] % 2 == 0) for b in chunk]
    assert sorted(b.summary()["meta"] for b in found) == [0, 2, 4]
    assert stats["bucketsScanned"] == 5


async def test_a_short_index_read_opens_one_read_transaction(server, monkeypatch):
    """The record ids and the first chunk's records come from one transaction (the index scan's):
    a read of a few buckets opens no second one for the records."""
    await _load(server, sensors=5)
    plan, bfilter = _plan(server, {"m": {"$in": [1, 3]}})
    opened = []
    real = server.engine.read
    monkeypatch.setattr(server.engine, "read", lambda: opened.append(1) or real())
    stats: dict = {}
    found = [b for chunk in scan.index_buckets(server, BNS, plan, stats, bfilter.predicate) for b in chunk]
    assert [b.summary()["meta"] for b in found] == [1, 3]
    assert len(opened) == 1
    assert stats["keysExamined"] == 2 and stats["bucketsScanned"] == 2


async def test_chunked_reads_keep_the_index_order(server, monkeypatch):
    """The first chunk (read in the index scan's transaction) and the later ones (a transaction each)
    give the buckets in the index's order, as one chunk does; a chunk per transaction."""
    await _load(server, sensors=30)
    plan, _ = _plan(server, {"m": {"$gte": 0}})
    whole = [b.summary()["meta"] for chunk in scan.index_buckets(server, BNS, plan) for b in chunk]
    monkeypatch.setattr(stored, "CHUNK", 7)
    opened = []
    real = server.engine.read
    monkeypatch.setattr(server.engine, "read", lambda: opened.append(1) or real())
    chunks = [[b.summary()["meta"] for b in chunk] for chunk in scan.index_buckets(server, BNS, plan)]
    assert [m for chunk in chunks for m in chunk] == whole == list(range(30))
    assert [len(chunk) for chunk in chunks] == [7, 7, 7, 7, 2]
    assert len(opened) == 5  # the index scan with the first chunk, then one per later chunk
