"""mongoexport, mongoimport and bsondump (MongoDB Database Tools 100.8.0) on time-series collections, as
real clients: export reads the view (measurements, extended JSON dates), import writes measurements into an
existing time-series collection (stored as buckets), bsondump reads a dumped buckets file."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from harness.mongo_tools import BIN, SKIP_REASON, run_tool, uri_args

pytestmark = [pytest.mark.skipif(BIN is None, reason=SKIP_REASON),
              pytest.mark.commands("find", "insert", "aggregate", "listCollections", "count")]

T0 = dt.datetime(2024, 3, 1)


def _weather(db, n=50):
    db.create_collection("weather", timeseries={"timeField": "t", "metaField": "m", "granularity": "minutes"})
    db.weather.insert_many([{"t": T0 + dt.timedelta(minutes=i), "m": {"site": f"s{i % 5}"}, "v": i}
                            for i in range(n)])
    return db.weather


def test_mongoexport_reads_the_measurements_of_a_time_series_collection(db, server, tmp_path):
    _weather(db)
    out = tmp_path / "weather.json"
    result = run_tool("mongoexport", *uri_args(server.port), "-d", db.name, "-c", "weather", "-o", str(out))
    assert result.returncode == 0, result.stdout
    docs = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(d["v"] for d in docs) == list(range(50))
    first = min(docs, key=lambda d: d["v"])
    assert first["t"] == {"$date": "2024-03-01T00:00:00Z"} and first["m"] == {"site": "s0"}


def test_mongoexport_csv_with_a_query(db, server, tmp_path):
    _weather(db)
    out = tmp_path / "weather.csv"
    result = run_tool("mongoexport", *uri_args(server.port), "-d", db.name, "-c", "weather", "--type", "csv",
                      "--fields", "m.site,v", "-q", '{"m.site": "s1"}', "--sort", '{"v": 1}', "-o", str(out))
    assert result.returncode == 0, result.stdout
    lines = out.read_text().splitlines()
    assert lines[0] == "m.site,v"
    assert lines[1:] == [f"s1,{v}" for v in range(1, 50, 5)]


def test_mongoimport_into_an_existing_time_series_collection(db, server, tmp_path):
    db.create_collection("imported", timeseries={"timeField": "t", "metaField": "m"})
    source = tmp_path / "in.json"
    source.write_text("\n".join(json.dumps({"t": {"$date": f"2024-03-01T00:{i:02d}:00Z"}, "m": i % 3, "v": i})
                                for i in range(60)))
    result = run_tool("mongoimport", *uri_args(server.port), "-d", db.name, "-c", "imported", "--file", str(source))
    assert result.returncode == 0, result.stdout
    assert "60 document(s) imported successfully. 0 document(s) failed to import." in result.stdout
    assert db.imported.count_documents({}) == 60
    assert db.imported.find_one({"v": 7}, {"_id": 0}) == {"t": T0 + dt.timedelta(minutes=7), "m": 1, "v": 7}
    assert 1 <= db["system.buckets.imported"].count_documents({}) <= 60
    assert db.list_collections(filter={"name": "imported"}).next()["type"] == "timeseries"


def test_bsondump_reads_a_dumped_buckets_collection(db, server, tmp_path):
    _weather(db)
    result = run_tool("mongodump", *uri_args(server.port), "-d", db.name, "-o", str(tmp_path / "dump"))
    assert result.returncode == 0, result.stdout
    buckets_file = tmp_path / "dump" / db.name / "system.buckets.weather.bson"
    dumped = run_tool("bsondump", "--quiet", str(buckets_file))
    assert dumped.returncode == 0, dumped.stdout
    buckets = [json.loads(line) for line in dumped.stdout.splitlines() if line.startswith("{")]
    assert buckets and sum(int(b["control"]["count"]) if "count" in b["control"] else len(b["data"]["v"])
                           for b in buckets) == 50
    assert {b["control"]["version"]["$numberInt"] if isinstance(b["control"]["version"], dict)
            else str(b["control"]["version"]) for b in buckets} <= {"1", "2"}
