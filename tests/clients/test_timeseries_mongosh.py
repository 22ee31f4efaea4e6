"""The documentation's time-series walkthrough in mongosh: createCollection with timeseries,
`show collections` badges, the system.views document, insertMany/find, and the bucket document."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.clients, pytest.mark.commands("create", "listCollections", "insert", "find")]

SETUP = """
const d = db.getSiblingDB('ts_mongosh_example');
d.dropDatabase();
d.createCollection('weather', {timeseries: {timeField: 'timestamp', metaField: 'metadata', granularity: 'hours'}});
d.weather.insertMany([
  {metadata: {sensorId: 5578, type: 'temperature'}, timestamp: ISODate('2021-05-18T00:00:00.000Z'), temp: 12},
  {metadata: {sensorId: 5578, type: 'temperature'}, timestamp: ISODate('2021-05-18T04:00:00.000Z'), temp: 11},
  {metadata: {sensorId: 5578, type: 'temperature'}, timestamp: ISODate('2021-05-18T08:00:00.000Z'), temp: 11,
   ext1: 1},
]);
"""


@pytest.mark.slow
def test_show_collections_lists_time_series_badge(server, mongosh):
    import subprocess

    from harness.clients import MONGOSH, _env

    mongosh(SETUP + "true")
    result = subprocess.run([str(MONGOSH), "--quiet", "--norc", server.uri],
                            input="use ts_mongosh_example\nshow collections\n",
                            capture_output=True, text=True, timeout=60, env=_env())
    lines = [line.strip() for line in result.stdout.splitlines()]
    names = [line.rsplit("> ", 1)[-1].strip() for line in lines]  # drop the prompt mongosh echoes
    assert any(name.startswith("weather") and name.endswith("[time-series]") for name in names), result.stdout
    assert "system.buckets.weather" in names and "system.views" in names, result.stdout


@pytest.mark.slow
def test_views_find_and_buckets_match_the_documentation(mongosh):
    result = mongosh(SETUP + """
      ({
        view: d.system.views.find().toArray(),
        measurements: d.weather.find({}, {_id: 0}).sort({timestamp: 1}).toArray(),
        withIds: d.weather.find().toArray().every(m => m._id !== undefined),
        bucket: d.system.buckets.weather.find().toArray(),
      })
    """)
    assert result["view"] == [{"_id": "ts_mongosh_example.weather", "viewOn": "system.buckets.weather",
                               "pipeline": [{"$_internalUnpackBucket": {"timeField": "timestamp",
                                                                        "metaField": "metadata",
                                                                        "bucketMaxSpanSeconds": 2592000}}]}]
    assert [m["temp"] for m in result["measurements"]] == [12, 11, 11]
    assert result["measurements"][2]["ext1"] == 1
    assert result["withIds"] is True
    (bucket,) = result["bucket"]
    assert bucket["control"]["version"] == 1
    assert bucket["control"]["min"]["timestamp"] == {"$date": "2021-05-18T00:00:00Z"} or \
        bucket["control"]["min"]["timestamp"].startswith("2021-05-18T00:00:00")
    assert set(bucket["data"]["timestamp"]) == {"0", "1", "2"}
    assert bucket["data"]["ext1"] == {"2": 1}
