"""mongosh helpers on a time-series collection: createIndex, getIndexes, stats(), collMod."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.clients


@pytest.mark.slow
@pytest.mark.commands("createIndexes", "listIndexes", "collMod", "collStats")
def test_mongosh_index_stats_and_collmod_helpers_on_timeseries(mongosh):
    script = """
    const d = db.getSiblingDB('ts_admin_mongosh');
    d.dropDatabase();
    d.createCollection('c', {timeseries: {timeField: 'timestamp', metaField: 'metadata'}});
    d.c.insertMany([
      {timestamp: ISODate('2024-01-01T00:00:00Z'), metadata: {sensorId: 1}, temp: 10},
      {timestamp: ISODate('2024-01-01T00:00:01Z'), metadata: {sensorId: 2}, temp: 11},
    ]);
    const created = d.c.createIndex({'metadata.sensorId': 1, timestamp: -1});
    const indexes = d.c.getIndexes().map(ix => ({name: ix.name, key: ix.key}));
    const bucketCount = d.c.stats().timeseries.bucketCount;
    const collMod = d.runCommand({collMod: 'c', timeseries: {granularity: 'minutes'}});
    const granularity = d.getCollectionInfos({name: 'c'})[0].options.timeseries.granularity;
    ({created, indexes, bucketCount, collModOk: collMod.ok, granularity})
    """
    result = mongosh(script)
    assert result["created"] == "metadata.sensorId_1_timestamp_-1"
    assert result["indexes"] == [
        {"name": "metadata_1_timestamp_1", "key": {"metadata": 1, "timestamp": 1}},
        {"name": "metadata.sensorId_1_timestamp_-1", "key": {"metadata.sensorId": 1, "timestamp": -1}},
    ]
    assert result["bucketCount"] == 2
    assert result["collModOk"] == 1
    assert result["granularity"] == "minutes"
