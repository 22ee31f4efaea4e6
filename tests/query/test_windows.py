"""$setWindowFields, $densify and $fill on the time-series examples of MongoDB's documentation."""

import datetime as dt
import math

import pytest

from tidemark.protocol.errors import MongoError
from tidemark.query.pipeline import run_pipeline

D = dt.datetime


def run(pipeline, docs):
    return list(run_pipeline(pipeline, [dict(d) for d in docs]))


CAKE_SALES = [
    {"_id": 0, "type": "chocolate", "orderDate": D(2020, 5, 18, 14, 10, 30), "state": "CA", "price": 13, "quantity": 120},
    {"_id": 1, "type": "chocolate", "orderDate": D(2021, 3, 20, 11, 30, 5), "state": "WA", "price": 14, "quantity": 140},
    {"_id": 2, "type": "vanilla", "orderDate": D(2021, 1, 11, 6, 31, 15), "state": "CA", "price": 12, "quantity": 145},
    {"_id": 3, "type": "vanilla", "orderDate": D(2020, 2, 8, 13, 13, 23), "state": "WA", "price": 13, "quantity": 104},
    {"_id": 4, "type": "strawberry", "orderDate": D(2019, 5, 18, 16, 9, 1), "state": "CA", "price": 41, "quantity": 162},
    {"_id": 5, "type": "strawberry", "orderDate": D(2019, 1, 8, 6, 12, 3), "state": "WA", "price": 43, "quantity": 134},
]


def test_range_window_in_months_with_positive_upper_bound():
    out = run([{"$setWindowFields": {"partitionBy": "$state", "sortBy": {"orderDate": 1}, "output": {
        "recentOrders": {"$push": "$orderDate", "window": {"range": ["unbounded", 10], "unit": "month"}}}}}], CAKE_SALES)
    got = {d["_id"]: [x.year for x in d["recentOrders"]] for d in out}
    assert [d["_id"] for d in out] == [4, 0, 2, 5, 3, 1]  # partitions in order, each sorted by orderDate
    assert got == {4: [2019], 0: [2019, 2020, 2021], 2: [2019, 2020, 2021], 5: [2019], 3: [2019, 2020],
                   1: [2019, 2020, 2021]}


def test_range_window_in_months_with_negative_upper_bound():
    out = run([{"$setWindowFields": {"partitionBy": "$state", "sortBy": {"orderDate": 1}, "output": {
        "recentOrders": {"$push": "$orderDate", "window": {"range": ["unbounded", -10], "unit": "month"}}}}}], CAKE_SALES)
    got = {d["_id"]: [x.year for x in d["recentOrders"]] for d in out}
    assert got == {4: [], 0: [2019], 2: [2019], 5: [], 3: [2019], 1: [2019, 2020]}


def test_documents_window_cumulative_and_moving_average():
    out = run([{"$setWindowFields": {"partitionBy": "$state", "sortBy": {"orderDate": 1}, "output": {
        "cumulativeQuantityForState": {"$sum": "$quantity", "window": {"documents": ["unbounded", "current"]}},
        "averageQuantity": {"$avg": "$quantity", "window": {"documents": [-1, 0]}}}}}], CAKE_SALES)
    got = {d["_id"]: (d["cumulativeQuantityForState"], d["averageQuantity"]) for d in out}
    assert got == {4: (162, 162.0), 0: (282, 141.0), 2: (427, 132.5), 5: (134, 134.0), 3: (238, 119.0),
                   1: (378, 122.0)}


def test_whole_partition_window_and_rank_functions():
    out = run([{"$setWindowFields": {"partitionBy": "$state", "sortBy": {"quantity": -1}, "output": {
        "total": {"$sum": "$quantity"}, "rank": {"$rank": {}}, "dense": {"$denseRank": {}},
        "n": {"$documentNumber": {}}, "maxPrice": {"$max": "$price"}}}}], CAKE_SALES)
    ca = [d for d in out if d["state"] == "CA"]
    assert [d["_id"] for d in ca] == [4, 2, 0]
    assert [(d["total"], d["rank"], d["n"], d["maxPrice"]) for d in ca] == [(427, 1, 1, 41), (427, 2, 2, 41), (427, 3, 3, 41)]


def test_rank_ties_share_a_rank_and_dense_rank_has_no_gaps():
    docs = [{"s": 10}, {"s": 20}, {"s": 20}, {"s": 30}]
    out = run([{"$setWindowFields": {"sortBy": {"s": 1}, "output": {"r": {"$rank": {}}, "d": {"$denseRank": {}}}}}], docs)
    assert [(d["r"], d["d"]) for d in out] == [(1, 1), (2, 2), (2, 2), (4, 3)]


def test_shift_and_exp_moving_average():
    docs = [{"t": i, "v": float(v)} for i, v in enumerate([13, 17, 21, 11])]
    out = run([{"$setWindowFields": {"sortBy": {"t": 1}, "output": {
        "prev": {"$shift": {"output": "$v", "by": -1, "default": "none"}},
        "ema": {"$expMovingAvg": {"input": "$v", "N": 2}}}}}], docs)
    assert [d["prev"] for d in out] == ["none", 13.0, 17.0, 21.0]
    alpha, ema, expected = 2 / 3, None, []
    for v in (13, 17, 21, 11):
        ema = v if ema is None else alpha * v + (1 - alpha) * ema
        expected.append(ema)
    assert all(math.isclose(d["ema"], e) for d, e in zip(out, expected, strict=True))


FLEET = [
    {"truckID": "1", "timeStamp": D(2020, 5, 18, 14, 10, 30), "miles": 1295.1},
    {"truckID": "1", "timeStamp": D(2020, 5, 18, 14, 11, 0), "miles": 1295.63},
    {"truckID": "1", "timeStamp": D(2020, 5, 18, 14, 11, 30), "miles": 1296.25},
    {"truckID": "1", "timeStamp": D(2020, 5, 18, 14, 12, 0), "miles": 1296.76},
    {"truckID": "2", "timeStamp": D(2020, 5, 18, 14, 10, 30), "miles": 10234.1},
    {"truckID": "2", "timeStamp": D(2020, 5, 18, 14, 11, 0), "miles": 10234.33},
    {"truckID": "2", "timeStamp": D(2020, 5, 18, 14, 11, 30), "miles": 10234.73},
    {"truckID": "2", "timeStamp": D(2020, 5, 18, 14, 12, 0), "miles": 10235.13},
]


def test_derivative_speed_in_miles_per_hour_documented_example():
    out = run([{"$setWindowFields": {"partitionBy": "$truckID", "sortBy": {"timeStamp": 1}, "output": {
        "speed": {"$derivative": {"input": "$miles", "unit": "hour"}, "window": {"range": [-30, 0], "unit": "second"}}}}},
        {"$match": {"speed": {"$gt": 50}}}], FLEET)
    speeds = [(d["truckID"], round(d["speed"], 1)) for d in out]
    assert speeds == [("1", 63.6), ("1", 74.4), ("1", 61.2)]


def test_integral_power_documented_shape():
    docs = [{"id": "A", "t": D(2020, 5, 18, 14, 10, 30) + dt.timedelta(seconds=30 * i), "kw": kw}
            for i, kw in enumerate([2.0, 2.2, 2.4, 2.8])]
    out = run([{"$setWindowFields": {"partitionBy": "$id", "sortBy": {"t": 1}, "output": {
        "kwh": {"$integral": {"input": "$kw", "unit": "hour"}, "window": {"range": ["unbounded", "current"], "unit": "hour"}}}}}],
        docs)
    expected = [0.0, (2.0 + 2.2) / 2 / 120]
    expected.append(expected[-1] + (2.2 + 2.4) / 2 / 120)
    expected.append(expected[-1] + (2.4 + 2.8) / 2 / 120)
    assert all(math.isclose(d["kwh"], e, abs_tol=1e-12) for d, e in zip(out, expected, strict=True))


@pytest.mark.parametrize("spec,code", [
    ({"sortBy": {"a": 1}, "output": {"x": {"$sum": 1, "window": {"range": [0, 1], "documents": [0, 1]}}}}, 9),
    ({"output": {"x": {"$sum": 1, "window": {"documents": [-1, 0]}}}}, 5339901),
    ({"sortBy": {"a": 1, "b": 1}, "output": {"x": {"$sum": 1, "window": {"range": [-1, 0]}}}}, 5339902),
    ({"sortBy": {"a": 1}, "output": {"x": {"$sum": 1, "window": {"documents": [1, 0]}}}}, 5339900),
    ({"output": {"x": {"$rank": {}}}}, 5371602),
    ({"sortBy": {"a": 1}, "output": {"x": {"$nope": 1}}}, 9),
])
def test_window_spec_errors(spec, code):
    with pytest.raises(MongoError) as e:
        run([{"$setWindowFields": spec}], [])
    assert e.value.code == code


def test_range_with_unit_requires_date_sort_values():
    with pytest.raises(MongoError) as e:
        run([{"$setWindowFields": {"sortBy": {"a": 1}, "output": {
            "x": {"$sum": 1, "window": {"range": [-1, 0], "unit": "hour"}}}}}], [{"a": 1}])
    assert e.value.code == 5429513


WEATHER = [
    {"metadata": {"sensorId": 5578, "type": "temperature"}, "timestamp": D(2021, 5, 18, 0), "temp": 12},
    {"metadata": {"sensorId": 5578, "type": "temperature"}, "timestamp": D(2021, 5, 18, 4), "temp": 11},
    {"metadata": {"sensorId": 5578, "type": "temperature"}, "timestamp": D(2021, 5, 18, 8), "temp": 11},
    {"metadata": {"sensorId": 5578, "type": "temperature"}, "timestamp": D(2021, 5, 18, 12), "temp": 12},
]


def test_densify_hourly_within_explicit_bounds_documented_example():
    out = run([{"$densify": {"field": "timestamp", "range": {"step": 1, "unit": "hour",
                                                              "bounds": [D(2021, 5, 18, 0), D(2021, 5, 18, 8)]}}}], WEATHER)
    assert [d["timestamp"].hour for d in out] == [0, 1, 2, 3, 4, 5, 6, 7, 8, 12]
    assert out[1] == {"timestamp": D(2021, 5, 18, 1)}   # generated documents hold only the field
    assert out[4]["temp"] == 11


def test_densify_numeric_full_range_with_partitions_documented_example():
    coffee = [{"altitude": 600, "variety": "Arabica Typica"}, {"altitude": 750, "variety": "Arabica Typica"},
              {"altitude": 950, "variety": "Arabica Typica"}, {"altitude": 1250, "variety": "Gesha"},
              {"altitude": 1700, "variety": "Gesha"}, {"altitude": 1600, "variety": "SL-14"},
              {"altitude": 1750, "variety": "SL-14"}, {"altitude": 1950, "variety": "SL-14"}]
    out = run([{"$densify": {"field": "altitude", "partitionByFields": ["variety"],
                             "range": {"bounds": "full", "step": 200}}}], coffee)
    by = {}
    for d in out:
        by.setdefault(d["variety"], []).append(d["altitude"])
    assert by["Arabica Typica"] == [600, 750, 800, 950, 1000, 1200, 1400, 1600, 1800]
    assert by["Gesha"] == [600, 800, 1000, 1200, 1250, 1400, 1600, 1700, 1800]
    assert by["SL-14"] == [600, 800, 1000, 1200, 1400, 1600, 1750, 1800, 1950]
    part = run([{"$densify": {"field": "altitude", "partitionByFields": ["variety"],
                              "range": {"bounds": "partition", "step": 200}}}], coffee)
    assert [d["altitude"] for d in part if d["variety"] == "Gesha"] == [1250, 1450, 1650, 1700]


def test_densify_month_steps_and_errors():
    """Each generated date is the previous one plus the step (mongod's DensifyValue::increment is
    dateAdd of the previous value), so a clamped month end stays clamped: Jan 31, Feb 28, Mar 28."""
    docs = [{"t": D(2021, 1, 31)}, {"t": D(2021, 5, 1)}]
    out = run([{"$densify": {"field": "t", "range": {"step": 1, "unit": "month", "bounds": "full"}}}], docs)
    assert [d["t"] for d in out] == [D(2021, 1, 31), D(2021, 2, 28), D(2021, 3, 28), D(2021, 4, 28), D(2021, 5, 1)]
    with pytest.raises(MongoError):
        run([{"$densify": {"field": "t", "range": {"step": 0, "bounds": "full"}}}], docs)


def test_fill_linear_documented_example():
    stock = [{"time": D(2021, 3, 8, h), **({"price": p} if p is not None else {})}
             for h, p in [(9, 500), (10, None), (11, 515), (12, None), (13, None), (14, 485)]]
    out = run([{"$fill": {"sortBy": {"time": 1}, "output": {"price": {"method": "linear"}}}}], stock)
    assert [d["price"] for d in out] == [500, 507.5, 515, 505, 495, 485]


def test_fill_locf_documented_example():
    reviews = [{"date": D(2021, 3, 8 + i), **({"score": s} if s is not None else {})}
               for i, s in enumerate([90, 92, 85, None, None, 99, 100, None, 93])]
    out = run([{"$fill": {"sortBy": {"date": 1}, "output": {"score": {"method": "locf"}}}}], reviews)
    assert [d["score"] for d in out] == [90, 92, 85, 85, 85, 99, 100, 100, 93]


def test_fill_with_value_and_partitions():
    docs = [{"g": "a", "t": 1, "v": 1}, {"g": "b", "t": 1}, {"g": "a", "t": 2}, {"g": "b", "t": 2, "v": 7}]
    out = run([{"$fill": {"partitionByFields": ["g"], "sortBy": {"t": 1}, "output": {"v": {"method": "locf"}}}}], docs)
    assert [(d["g"], d["t"], d["v"]) for d in out] == [("a", 1, 1), ("a", 2, 1), ("b", 1, None), ("b", 2, 7)]
    out = run([{"$fill": {"output": {"v": {"value": 0}, "w": {"value": "$t"}}}}], docs)
    assert [(d["v"], d["w"]) for d in out] == [(1, 1), (0, 1), (0, 2), (7, 2)]


def test_range_window_with_descending_sort_selects_by_value():
    docs = [{"t": t, "v": t} for t in (1, 2, 3, 5, 8)]
    out = run([{"$setWindowFields": {"sortBy": {"t": -1}, "output": {
        "near": {"$push": "$v", "window": {"range": [-1, 1]}}}}}], docs)
    assert [(d["t"], d["near"]) for d in out] == [(8, [8]), (5, [5]), (3, [3, 2]), (2, [3, 2, 1]), (1, [2, 1])]


def test_accumulator_window_functions_over_a_sliding_document_window():
    docs = [{"t": i, "v": v} for i, v in enumerate([4, 1, 3, 5, 2])]
    out = run([{"$setWindowFields": {"sortBy": {"t": 1}, "output": {
        "count": {"$count": {}, "window": {"documents": [-1, 1]}},
        "min": {"$min": "$v", "window": {"documents": [-1, 1]}},
        "max": {"$max": "$v", "window": {"documents": [-1, 1]}},
        "first": {"$first": "$v", "window": {"documents": [-1, 1]}},
        "last": {"$last": "$v", "window": {"documents": [-1, 1]}},
        "set": {"$addToSet": "$v", "window": {"documents": ["current", 1]}},
        "sd": {"$stdDevPop": "$v", "window": {"documents": [-1, 0]}},
        "top": {"$topN": {"n": 2, "sortBy": {"v": -1}, "output": "$v"}, "window": {"documents": [-2, 0]}},
        "sum": {"$sum": "$v", "window": {"documents": [-2, -1]}}}}}], docs)
    assert [d["count"] for d in out] == [2, 3, 3, 3, 2]
    assert [d["min"] for d in out] == [1, 1, 1, 2, 2]
    assert [d["max"] for d in out] == [4, 4, 5, 5, 5]
    assert [d["first"] for d in out] == [4, 4, 1, 3, 5]
    assert [d["last"] for d in out] == [1, 3, 5, 2, 2]
    assert [d["set"] for d in out] == [[4, 1], [1, 3], [3, 5], [5, 2], [2]]
    assert [d["sd"] for d in out] == [0.0, 1.5, 1.0, 1.0, 1.5]
    assert [d["top"] for d in out] == [[4], [4, 1], [4, 3], [5, 3], [5, 3]]
    assert [d["sum"] for d in out] == [0, 4, 5, 4, 8]   # an empty window sums to 0


def _reference_covariance(pairs, sample):
    pairs = [(float(x), float(y)) for x, y in pairs]
    n = len(pairs)
    if n == 1 and not sample:
        return 0.0
    if n - sample <= 0:
        return None
    mx = sum(x for x, _ in pairs) / n
    my = sum(y for _, y in pairs) / n
    return sum((x - mx) * (y - my) for x, y in pairs) / (n - sample)


@pytest.mark.parametrize("op", ["$covariancePop", "$covarianceSamp"])
@pytest.mark.parametrize("window", [None, ["unbounded", "current"], [-1, 1], [-2, 0], ["current", "unbounded"]])
def test_covariance_windows_match_a_direct_computation(op, window):
    """$covariancePop/$covarianceSamp over sliding windows (pairs leave the window: the O(1) removal
    keeps the same value as a direct computation); pairs that are not two numbers are ignored."""
    docs = [{"_id": i, "x": (i * 37) % 11 + 0.5 * i, "y": (i * 13) % 7 - i} for i in range(12)]
    docs[3]["x"] = "not a number"
    docs[7].pop("y")
    spec = {op: ["$x", "$y"]}
    if window is not None:
        spec["window"] = {"documents": window}
    out = run([{"$setWindowFields": {"sortBy": {"_id": 1}, "output": {"c": spec}}}], docs)
    for i, doc in enumerate(out):
        if window is None:
            lo, hi = 0, len(docs)
        else:
            lo = 0 if window[0] == "unbounded" else max(0, i + (0 if window[0] == "current" else window[0]))
            hi = len(docs) if window[1] == "unbounded" else min(len(docs), i + 1 + (0 if window[1] == "current" else window[1]))
        pairs = [(d["x"], d["y"]) for d in docs[lo:hi] if isinstance(d.get("x"), float | int) and "y" in d]
        expected = _reference_covariance(pairs, op == "$covarianceSamp")
        if expected is None:
            assert doc["c"] is None
        else:
            assert doc["c"] == pytest.approx(expected, rel=1e-9, abs=1e-9)


def test_covariance_non_finite_pairs():
    docs = [{"_id": 0, "x": 1.0, "y": 2.0}, {"_id": 1, "x": 2.0, "y": 5.0}, {"_id": 2, "x": math.inf, "y": 1.0}]
    out = run([{"$setWindowFields": {"sortBy": {"_id": 1}, "output": {
        "c": {"$covariancePop": ["$x", "$y"], "window": {"documents": ["unbounded", "current"]}}}}}], docs)
    assert [d["c"] for d in out][:2] == [0.0, 0.75] and out[2]["c"] == math.inf
    docs.append({"_id": 3, "x": -math.inf, "y": 1.0})
    out = run([{"$setWindowFields": {"sortBy": {"_id": 1}, "output": {"c": {"$covarianceSamp": ["$x", "$y"]}}}}], docs)
    assert all(math.isnan(d["c"]) for d in out)


def test_merge_objects_is_not_a_window_function():
    # $mergeObjects is a $group accumulator, not one of MongoDB 7.0's window operators
    stage = {"$setWindowFields": {"sortBy": {"a": 1}, "output": {"m": {"$mergeObjects": "$o"}}}}
    with pytest.raises(MongoError) as exc:
        run([stage], [{"a": 1, "o": {"x": 1}}])
    assert exc.value.code == 9 and "Unrecognized window function, $mergeObjects" in str(exc.value)
