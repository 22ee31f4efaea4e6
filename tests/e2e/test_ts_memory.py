"""Defect 15.5 (and issue 11 item 9 for time-series inserts): memory follows the data. Reading a live
bucket allocates O(its data); a ~16 MiB measurement round-trips or is refused with 10334 like a regular
insert, and a measurement over the BSON limit is refused with 10334 where a regular insert is 2 —
each with the server's peak RSS growing by less than 100 MB."""

import datetime as dt
from pathlib import Path

import pytest
from harness import raw_command
from pymongo.errors import PyMongoError

T0 = dt.datetime(2024, 3, 1)
LIMIT_MB = 100
pytestmark = pytest.mark.commands("insert", "find")


class PeakRss:
    """The server's peak resident memory growth over a block (``/proc/<pid>/clear_refs`` resets the peak)."""

    def __init__(self, proc):
        self.pid = proc.process.pid

    def _status(self, key):
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
        raise KeyError(key)

    def __enter__(self):
        Path(f"/proc/{self.pid}/clear_refs").write_text("5")
        self.before = self._status("VmRSS")
        return self

    def __exit__(self, *exc):
        self.growth_mb = (self._status("VmHWM") - self.before) / 2**20


def create(client):
    client.db.create_collection("ts", timeseries={"timeField": "t", "metaField": "host"})
    return client.db.ts


@pytest.mark.slow
def test_reading_a_live_bucket_with_a_long_string_allocates_o_of_its_data(start_server):
    proc = start_server()
    with proc.client() as client:
        coll = create(client)
        coll.insert_one({"t": T0, "host": "warm-up", "s": "short", "v": 0})
        coll.find_one()  # first read: imports and caches of the read path
        big = "x" * (1 << 20)
        coll.insert_many([{"t": T0 + dt.timedelta(seconds=i), "host": "h", "s": big, "v": i} for i in range(3)])
        with PeakRss(proc) as peak:
            for _ in range(3):
                docs = list(coll.find({"host": "h"}))
                assert [d["s"] == big for d in docs] == [True] * 3
            assert len(list(client.db.system.buckets.ts.find({"meta": "h"}))) == 1
        assert peak.growth_mb < LIMIT_MB, peak.growth_mb


@pytest.mark.slow
def test_a_16_mib_measurement_round_trips_or_is_refused_like_a_regular_insert(start_server):
    proc = start_server()
    with proc.client() as client:
        coll = create(client)
        coll.insert_one({"t": T0, "host": "h", "v": 1})
        coll.find_one()
        doc = {"t": T0 + dt.timedelta(seconds=1), "host": "h", "s": "y" * (16 * 2**20 - 200)}
        with PeakRss(proc) as peak:
            try:
                coll.insert_one(doc)
            except PyMongoError as exc:
                assert exc.code == 10334, exc
                assert coll.count_documents({}) == 1
            else:
                (found,) = list(coll.find({"t": doc["t"]}))
                assert found["s"] == doc["s"]
        assert peak.growth_mb < LIMIT_MB, peak.growth_mb
        assert coll.count_documents({"v": 1}) == 1


@pytest.mark.slow
def test_a_measurement_over_the_bson_limit_is_10334_with_a_regular_inserts_message(start_server):
    proc = start_server()
    with proc.client() as client:
        create(client)
        client.db.create_collection("plain")
    too_big = {"t": T0, "host": "h", "s": "z" * (16 * 2**20 + 10)}
    replies = {}
    for name in ("plain", "ts"):
        replies[name] = raw_command(proc.port, {"insert": name, "$db": "db"}, timeout=30,
                                    sequences={"documents": [too_big]})
    for reply in replies.values():
        assert reply["ok"] == 1.0 and reply["n"] == 0
    # mongod 7.0: a regular insert is refused by fixDocumentForInsert (src/mongo/db/ops/insert.cpp) with 2
    # BadValue; a measurement when its bucket document is built, 10334 BSONObjectTooLarge
    # (jstests/core/timeseries/timeseries_insert_respect_max_bson_size_too_big.js)
    assert [e["code"] for e in replies["plain"]["writeErrors"]] == [2]
    assert [e["code"] for e in replies["ts"]["writeErrors"]] == [10334]
    assert replies["ts"]["writeErrors"][0]["errmsg"] == replies["plain"]["writeErrors"][0]["errmsg"]
    with proc.client() as client:
        assert client.db.ts.count_documents({}) == 0
