"""$setWindowFields, $densify and $fill over real time-series collections (MongoDB's documented examples)."""

import datetime as dt

import pytest

D = dt.datetime
pytestmark = pytest.mark.commands("aggregate")


def test_densify_hourly_on_the_weather_time_series(db):
    db.create_collection("weather", timeseries={"timeField": "timestamp", "metaField": "metadata",
                                                "granularity": "hours"})
    meta = {"sensorId": 5578, "type": "temperature"}
    db.weather.insert_many([{"metadata": meta, "timestamp": D(2021, 5, 18, h), "temp": t}
                            for h, t in [(0, 12), (4, 11), (8, 11), (12, 12)]])
    out = list(db.weather.aggregate([
        {"$densify": {"field": "timestamp",
                      "range": {"step": 1, "unit": "hour", "bounds": [D(2021, 5, 18, 0), D(2021, 5, 18, 8)]}}},
        {"$project": {"_id": 0}},
    ]))
    assert [d["timestamp"].hour for d in out] == [0, 1, 2, 3, 4, 5, 6, 7, 8, 12]
    assert out[1] == {"timestamp": D(2021, 5, 18, 1)}  # generated documents hold only the densified field
    assert [d["temp"] for d in out if "temp" in d] == [12, 11, 11, 12]


def test_fill_linear_and_locf_on_a_stock_time_series(db):
    db.create_collection("stock", timeseries={"timeField": "time", "metaField": "ticker"})
    db.stock.insert_many([{"time": D(2021, 3, 8, h), "ticker": "MDB", **({"price": p} if p is not None else {})}
                          for h, p in [(9, 500), (10, None), (11, 515), (12, None), (13, None), (14, 485)]])
    linear = list(db.stock.aggregate([
        {"$fill": {"sortBy": {"time": 1}, "output": {"price": {"method": "linear"}}}}]))
    assert [d["price"] for d in linear] == [500, 507.5, 515, 505, 495, 485]
    locf = list(db.stock.aggregate([
        {"$fill": {"partitionBy": "$ticker", "sortBy": {"time": 1}, "output": {"price": {"method": "locf"}}}}]))
    assert [d["price"] for d in locf] == [500, 500, 515, 515, 515, 485]


def test_set_window_fields_range_window_in_time_units_on_a_fleet_time_series(db):
    db.create_collection("fleet", timeseries={"timeField": "timeStamp", "metaField": "truckID"})
    readings = {"1": [1295.1, 1295.63, 1296.25, 1296.76], "2": [10234.1, 10234.33, 10234.73, 10235.13]}
    db.fleet.insert_many([{"truckID": truck, "timeStamp": D(2020, 5, 18, 14, 10, 30) + dt.timedelta(seconds=30 * i),
                           "miles": miles}
                          for truck, values in readings.items() for i, miles in enumerate(values)])
    out = list(db.fleet.aggregate([
        {"$setWindowFields": {"partitionBy": "$truckID", "sortBy": {"timeStamp": 1}, "output": {
            "speed": {"$derivative": {"input": "$miles", "unit": "hour"},
                      "window": {"range": [-30, 0], "unit": "second"}}}}},
        {"$match": {"speed": {"$gt": 50}}},
    ]))
    assert [(d["truckID"], round(d["speed"], 1)) for d in out] == [("1", 63.6), ("1", 74.4), ("1", 61.2)]


def test_range_current_locf_without_sort_and_full_densify_over_partitions(db):
    db.create_collection("readings", timeseries={"timeField": "t", "metaField": "sensor"})
    base = D(2021, 1, 1)
    db.readings.insert_many([{"sensor": s, "t": base + dt.timedelta(hours=h), "x": x}
                             for s, h, x in [("a", 0, 1), ("a", 1, 1), ("a", 2, 2), ("b", 0, 5), ("b", 4, 7)]])
    same = list(db.readings.aggregate([
        {"$setWindowFields": {"partitionBy": "$sensor", "sortBy": {"x": 1}, "output": {
            "cur": {"$push": "$x", "window": {"range": ["current", "current"]}},
            "ties": {"$push": "$x", "window": {"range": [0, 0]}}}}},
        {"$match": {"sensor": "a"}}, {"$sort": {"t": 1}}]))
    assert [(d["cur"], d["ties"]) for d in same] == [([1], [1, 1]), ([1], [1, 1]), ([2], [2])]
    dense = list(db.readings.aggregate([
        {"$densify": {"field": "t", "partitionByFields": ["sensor"],
                      "range": {"step": 2, "unit": "hour", "bounds": "full"}}},
        {"$project": {"_id": 0, "sensor": 1, "h": {"$hour": "$t"}}}, {"$sort": {"sensor": 1, "h": 1}}]))
    assert [(d["sensor"], d["h"]) for d in dense] == [("a", 0), ("a", 1), ("a", 2), ("a", 4),
                                                      ("b", 0), ("b", 2), ("b", 4)]
    filled = list(db.readings.aggregate([
        {"$project": {"_id": 0, "sensor": 1, "t": 1, "x": {"$cond": [{"$eq": ["$x", 1]}, None, "$x"]}}},
        {"$sort": {"t": 1, "sensor": 1}},
        {"$fill": {"output": {"x": {"method": "locf"}}}}]))
    assert [d["x"] for d in filled] == [None, 5, 5, 2, 7]  # input order: no sortBy needed
