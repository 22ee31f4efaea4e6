"""Query results keep the field order the query produced (no `_id` hoisting on the way out)."""

import datetime

import pytest


@pytest.mark.commands("find", "aggregate")
def test_unpacked_measurement_starts_with_time_then_meta(db):
    db.create_collection("weather", timeseries={"timeField": "timestamp", "metaField": "metadata"})
    db.weather.insert_one({"_id": 7, "temp": 12, "metadata": {"sensorId": 1},
                           "timestamp": datetime.datetime(2021, 5, 18)})
    found = db.weather.find_one()
    assert list(found)[:2] == ["timestamp", "metadata"]
    assert set(found) == {"timestamp", "metadata", "temp", "_id"}
    aggregated = next(db.weather.aggregate([{"$match": {}}]))
    assert list(aggregated)[:2] == ["timestamp", "metadata"]


@pytest.mark.commands("aggregate")
def test_pipeline_output_order_is_kept(db):
    db.items.insert_one({"_id": 1, "a": 2})
    out = next(db.items.aggregate([{"$replaceWith": {"z": "$a", "_id": "$_id"}}]))
    assert list(out) == ["z", "_id"]


@pytest.mark.commands("find")
def test_stored_document_has_id_first(db):
    db.items.insert_one({"a": 1, "_id": 5})
    assert list(db.items.find_one()) == ["_id", "a"]
