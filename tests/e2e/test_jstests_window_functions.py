"""Ports of MongoDB's $setWindowFields jstests (group I: jstests/aggregation/sources/setWindowFields/,
as of MongoDB 7.0): the values each window function computes (with their BSON types where the
jstest or mongod's code pins them), the order of documents where the jstest checks it, and the error
codes (and messages where pinned) of the parse checks.

Where a jstest compares $setWindowFields against a reference computed another way ($group over a
skip/limit slice, an offline covariance), the reference here is computed in Python over the same
documents. The time-series cases run on real time-series collections; several ports run on both an
ordinary and a time-series collection holding the same measurements. Explain shapes, sharding,
spilling, SBE and 8.0+ additions ($minMaxScaler, $concatArrays/$setUnion windows) are out of scope."""

from __future__ import annotations

import datetime as dt
import functools
import math
import random
import statistics

import pytest
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from harness import jstests
from harness.jstests import loose, unordered
from pymongo.errors import OperationFailure

# documents compare field-order blind (a time-series view answers its fields in another order), types kept
canon = unordered
bag = functools.partial(jstests.bag, key=unordered)
seq = functools.partial(jstests.seq, key=unordered)

pytestmark = pytest.mark.commands("aggregate", "getMore", "insert", "create", "explain")

FAILED_TO_PARSE, TYPE_MISMATCH, BAD_VALUE, INVALID_PIPELINE_OPERATOR = 9, 14, 2, 168
UNBOUNDED, CURRENT = "unbounded", "current"
KINDS = ("regular", "timeseries")
BASE = dt.datetime(2021, 1, 1)
OMIT = object()  # an argument left out of a spec


def differs(reason: str):
    """Tidemark differs from MongoDB 7.0 here: the test keeps mongod's answer."""
    return pytest.mark.xfail(strict=True, reason=reason)


def params(table) -> list:
    """Rows (id, *values, reason or None) as pytest params; a reason makes the row a strict xfail."""
    return [pytest.param(*row[1:-1], id=row[0], marks=[differs(row[-1])] if row[-1] else []) for row in table]


# --------------------------------------------------------------------------------------------------
# helpers


def aggregate(db, coll: str, pipeline: list, **extra) -> list:
    reply = db.command("aggregate", coll, pipeline=pipeline, cursor={}, **extra)
    docs = reply["cursor"]["firstBatch"]
    cursor_id = reply["cursor"]["id"]
    while cursor_id:
        more = db.command("getMore", cursor_id, collection=coll)
        docs += more["cursor"]["nextBatch"]
        cursor_id = more["cursor"]["id"]
    return docs


def agg_error(db, coll: str, pipeline: list, **extra) -> OperationFailure:
    with pytest.raises(OperationFailure) as info:
        aggregate(db, coll, pipeline, **extra)
    return info.value


def explain_error(db, coll: str, pipeline: list) -> OperationFailure:
    with pytest.raises(OperationFailure) as info:
        db.command("explain", {"aggregate": coll, "pipeline": pipeline, "cursor": {}})
    return info.value


def explain_ok(db, coll: str, pipeline: list) -> None:
    db.command("explain", {"aggregate": coll, "pipeline": pipeline, "cursor": {}})


def make_coll(db, name: str, kind: str, docs: list, time_field: str = "t", meta_field: str | None = None):
    """Create ``name`` (ordinary or time-series on ``time_field``) and insert ``docs``; documents
    of a time-series collection without the time field get BASE there."""
    if kind == "timeseries":
        opts = {"timeField": time_field}
        if meta_field:
            opts["metaField"] = meta_field
        db.create_collection(name, timeseries=opts)
        docs = [d if time_field in d else {**d, time_field: BASE} for d in docs]
    else:
        db.create_collection(name)
    if docs:
        db[name].insert_many([dict(d) for d in docs])
    return db[name]


def sec(seconds: float) -> dt.datetime:
    """jstests' makeDate: 'seconds' after 2021-01-01T00:00:00Z."""
    return BASE + dt.timedelta(milliseconds=round(seconds * 1000))


def swf(output: dict, sort_by=OMIT, partition_by=OMIT) -> dict:
    spec: dict = {}
    if partition_by is not OMIT:
        spec["partitionBy"] = partition_by
    if sort_by is not OMIT:
        spec["sortBy"] = sort_by
    spec["output"] = output
    return {"$setWindowFields": spec}


# --------------------------------------------------------------------------------------------------
# window_function_helpers.js: ticker data, document bounds, and a Python stand-in for computeAsGroup


def ticker_docs(per_ticker: int = 10) -> list[dict]:
    docs = []
    for i in range(per_ticker):
        docs.append({"_id": i, "partIndex": i, "ticker": "T1", "price": 500 - i * 10})
        docs.append({"_id": i + per_ticker, "partIndex": i, "ticker": "T2", "price": 400 + i * 10})
    return docs


DOCUMENT_BOUNDS = [
    [UNBOUNDED, 0], [UNBOUNDED, -1], [UNBOUNDED, 1], [UNBOUNDED, 5], [UNBOUNDED, UNBOUNDED],
    [0, UNBOUNDED], [0, 1], [CURRENT, 2], [0, 5], [CURRENT, 4], [-1, 1], [-2, UNBOUNDED],
    [1, UNBOUNDED], [-3, -1], [1, 3], [-2, 3],
]
# forEachDocumentBoundsCombo's extra combinations and avg.js's running averages, computed in the
# same stage as the bounds above (several windows of different kinds in one $setWindowFields).
EXTRA_BOUNDS = [[2, 3], [2, 3], [-5, -5], [-1, 0], [UNBOUNDED, 3]]
ALL_BOUNDS = DOCUMENT_BOUNDS + EXTRA_BOUNDS
PARTITION_CASES = [None, "$ticker", {"$toLower": "$ticker"}]


def window_slice(i: int, n: int, lo, hi) -> tuple[int, int]:
    """The [start, end) positions of a document-based window around position ``i`` of ``n``."""
    a = 0 if lo == UNBOUNDED else max(0, i + (0 if lo == CURRENT else lo))
    b = n if hi == UNBOUNDED else min(n, i + 1 + (0 if hi == CURRENT else hi))
    return a, max(a, b)


def _discrete(vals, p):
    s = sorted(vals)
    return float(s[max(0, min(len(s) - 1, math.ceil(p * len(s)) - 1))])


def _close(tol):
    return lambda got, want: (got is None and want is None) or (
        isinstance(got, float) and want is not None and math.isclose(got, want, rel_tol=tol, abs_tol=tol))


def _strict(got, want):
    return canon(got) == canon(want)


def _as_set(got, want):
    return isinstance(got, list) and sorted(got) == sorted(want) and len(set(got)) == len(got)


def _doubles(got, want):
    if want is None or got is None:
        return got is None and want is None
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(
            _doubles(g, w) for g, w in zip(got, want, strict=True))
    return isinstance(got, float) and got == want


# name -> (window function spec over $price, Python reference over the window's prices, comparison)
ACCUMULATOR_CASES = {
    "$sum": ("$price", lambda v: sum(v), _strict),
    "$avg": ("$price", lambda v: sum(v) / len(v) if v else None, _strict),
    "$min": ("$price", lambda v: min(v) if v else None, _strict),
    "$max": ("$price", lambda v: max(v) if v else None, _strict),
    "$first": ("$price", lambda v: v[0] if v else None, _strict),
    "$last": ("$price", lambda v: v[-1] if v else None, _strict),
    "$push": ("$price", lambda v: list(v), _strict),
    "$addToSet": ("$price", lambda v: sorted(set(v)), _as_set),
    "$stdDevPop": ("$price", lambda v: statistics.pstdev(v) if v else None, _close(1e-10)),
    "$stdDevSamp": ("$price", lambda v: statistics.stdev(v) if len(v) > 1 else None, _close(1e-10)),
}
for _n in (4, 7, 12):
    ACCUMULATOR_CASES.update({
        f"$minN:{_n}": ({"n": _n, "input": "$price"}, lambda v, n=_n: sorted(v)[:n], _strict),
        f"$maxN:{_n}": ({"n": _n, "input": "$price"}, lambda v, n=_n: sorted(v, reverse=True)[:n], _strict),
        f"$firstN:{_n}": ({"n": _n, "input": "$price"}, lambda v, n=_n: v[:n], _strict),
        f"$lastN:{_n}": ({"n": _n, "input": "$price"}, lambda v, n=_n: v[-n:], _strict),
        f"$topN:{_n}": ({"n": _n, "output": "$price", "sortBy": {"price": 1}}, lambda v, n=_n: sorted(v)[:n], _strict),
        f"$bottomN:{_n}": ({"n": _n, "output": "$price", "sortBy": {"price": 1}},
                           lambda v, n=_n: sorted(v)[-n:] if v else [], _strict),
    })
ACCUMULATOR_CASES.update({
    "$top": ({"output": "$price", "sortBy": {"price": 1}}, lambda v: min(v) if v else None, _strict),
    "$bottom": ({"output": "$price", "sortBy": {"price": 1}}, lambda v: max(v) if v else None, _strict),
    # percentile.js (7.0: only method 'approximate'; on windows this small it is the discrete percentile,
    # as the jstest's own min/max/median assertions show); results are doubles.
    "$percentile": ({"p": [0.1, 0.6], "input": "$price", "method": "approximate"},
                    lambda v: [_discrete(v, 0.1), _discrete(v, 0.6)] if v else [None, None], _doubles),
    "$median": ({"input": "$price", "method": "approximate"}, lambda v: _discrete(v, 0.5) if v else None, _doubles),
})


@pytest.fixture(params=KINDS)
def tickers(db, request):
    """seedWithTickerData(coll, 10), on an ordinary or a time-series collection (meta 'ticker')."""
    kind = request.param
    docs = ticker_docs()
    if kind == "timeseries":
        docs = [{**d, "time": BASE + dt.timedelta(seconds=d["_id"])} for d in docs]
    return make_coll(db, "tickers", kind, docs, time_field="time", meta_field="ticker")


@pytest.mark.parametrize("case", list(ACCUMULATOR_CASES))
def test_accumulator_windows_match_group_reference(tickers, case):
    """min_max.js, sum.js, avg.js, stddev.js, first.js, last.js, push.js, add_to_set.js,
    n_accumulators.js, percentile.js (testAccumAgainstGroup): each window function over every
    document-based bounds of window_function_helpers.js (plus its multi-bounds combinations and
    avg.js's running averages, all in one stage), unpartitioned (null), partitioned by '$ticker' and by
    {$toLower: '$ticker'}, equals the accumulator over the same skip/limit slice of the partition
    sorted by _id (the empty-window value where no document falls in the window)."""
    name = case.split(":")[0]
    arg, reference, same = ACCUMULATOR_CASES[case]
    docs = ticker_docs()
    for partition in PARTITION_CASES:
        output = {f"r{k}": {name: arg, "window": {"documents": b}} for k, b in enumerate(ALL_BOUNDS)}
        got = aggregate(tickers.database, tickers.name, [swf(output, {"_id": 1}, partition)])
        assert len(got) == len(docs)
        for doc in got:
            members = [d for d in docs if partition is None or d["ticker"] == doc["ticker"]]
            prices = [d["price"] for d in sorted(members, key=lambda d: d["_id"])]
            index = doc["_id"] if partition is None else doc["partIndex"]
            for k, (lo, hi) in enumerate(ALL_BOUNDS):
                a, b = window_slice(index, len(prices), lo, hi)
                if name == "$percentile" and a == b:
                    continue  # the empty window: test_percentile_empty_window_is_array_of_nulls
                want = reference(prices[a:b])
                value = doc.get(f"r{k}", "<missing>")
                assert same(value, want), (partition, [lo, hi], doc["_id"], value, want)


def test_min_max_stddev_over_strings(tickers):
    """min_max.js / stddev.js: $min and $max order values by BSON type, so over a string field they
    return the string; $stdDevPop/$stdDevSamp return null for windows without numbers."""
    got = aggregate(tickers.database, tickers.name, [
        {"$addFields": {"str": "hiya"}},
        swf({f: {op: "$str", "window": {"documents": [UNBOUNDED, CURRENT]}}
             for f, op in [("minStr", "$min"), ("maxStr", "$max"), ("pop", "$stdDevPop"), ("samp", "$stdDevSamp")]},
            {"ts": 1}),
    ])
    assert len(got) == 20
    assert {(d["minStr"], d["maxStr"], d["pop"], d["samp"]) for d in got} == {("hiya", "hiya", None, None)}


# --------------------------------------------------------------------------------------------------
# window_functions_on_timeseries_coll.js


TS_SENSOR_DOCS = [
    {"_id": 0, "time": dt.datetime(2021, 1, 1, 1, 0), "attributes": {"sensor": "S1", "field": "a"},
     "temperature": 55, "language": "en", "contributions": 10},
    {"_id": 1, "time": dt.datetime(2021, 1, 1, 1, 0), "attributes": {"sensor": "S2", "field": "a"},
     "temperature": 74, "language": "zh", "contributions": 150},
    {"_id": 2, "time": dt.datetime(2021, 1, 1, 1, 5), "attributes": {"sensor": "S1", "field": "a"},
     "temperature": 50, "language": "zh", "contributions": 20},
    {"_id": 3, "time": dt.datetime(2021, 1, 1, 1, 5), "attributes": {"sensor": "S2", "field": "a"},
     "temperature": 60, "language": "en"},
    {"_id": 4, "time": dt.datetime(2021, 1, 1, 1, 10), "attributes": {"sensor": "S1", "field": "a"},
     "temperature": 51, "language": "en", "contributions": 10},
    {"_id": 5, "time": dt.datetime(2021, 1, 1, 1, 10), "attributes": {"sensor": "S2", "field": "a"},
     "temperature": 100, "language": "es", "contributions": 35},
    {"_id": 6, "time": dt.datetime(2021, 1, 1, 2, 0), "attributes": {"sensor": "S3", "field": "b"},
     "temperature": 90, "language": "en", "contributions": 40},
]


@pytest.fixture
def sensors(db):
    ts = make_coll(db, "sensors_ts", "timeseries", TS_SENSOR_DOCS, time_field="time", meta_field="attributes")
    plain = make_coll(db, "sensors_plain", "regular", TS_SENSOR_DOCS)
    return ts, plain


def _by_id(docs):
    return {d["_id"]: d for d in docs}


def test_timeseries_avg_range_in_days_and_derivative_per_hour(sensors):
    """window_functions_on_timeseries_coll.js: on a time-series collection (meta 'attributes'),
    partitioned by the meta's sensor and sorted on time, a document-based $avg, a range $avg in days
    and a per-hour $derivative give the jstest's values (doubles; null for a one-document window),
    every other field unpacked, the same as on an ordinary collection."""
    ts, plain = sensors
    pipeline = [swf({
        "posAvgTemp": {"$avg": "$temperature", "window": {"documents": [-1, 1]}},
        "timeAvgTemp": {"$avg": "$temperature", "window": {"range": [-5, 0], "unit": "day"}},
        "tempRateOfChange": {"$derivative": {"input": "$temperature", "unit": "hour"}, "window": {"documents": [-1, 0]}},
    }, {"time": 1}, "$attributes.sensor")]
    computed = {0: (52.5, 55.0, None), 2: (52.0, 52.5, -60.0), 4: (50.5, 52.0, 12.0),
                1: (67.0, 74.0, None), 3: (78.0, 67.0, -168.0), 5: (80.0, 78.0, 480.0), 6: (90.0, 90.0, None)}
    expected = [{**d, "posAvgTemp": computed[d["_id"]][0], "timeAvgTemp": computed[d["_id"]][1],
                 "tempRateOfChange": computed[d["_id"]][2]} for d in TS_SENSOR_DOCS]
    got = aggregate(ts.database, ts.name, pipeline)
    assert bag(got) == bag(expected)
    # the stage sorts on {attributes.sensor: 1, time: 1} (the jstest's expected windowSort)
    assert [d["attributes"]["sensor"] for d in got] == ["S1"] * 3 + ["S2"] * 3 + ["S3"]
    assert bag(aggregate(plain.database, plain.name, pipeline)) == bag(got)


def test_timeseries_first_last_addtoset_sum_rank(sensors):
    """window_functions_on_timeseries_coll.js: $first/$last over each sensor's partition, $addToSet
    of the meta's sensor over a range window on _id partitioned by a measurement, $sum of the
    partition used by $divide (null where the measurement is missing), and $rank sorted descending
    with a $match on the meta after it, on a time-series collection and as on an ordinary one."""
    ts, plain = sensors
    cases = [
        ([swf({"firstTemp": {"$first": "$temperature"}, "lastTemp": {"$last": "$temperature"}},
              {"time": 1}, "$attributes.sensor"),
          {"$project": {"firstTemp": 1, "lastTemp": 1}}],
         [{"_id": 0, "firstTemp": 55, "lastTemp": 51}, {"_id": 2, "firstTemp": 55, "lastTemp": 51},
          {"_id": 4, "firstTemp": 55, "lastTemp": 51}, {"_id": 1, "firstTemp": 74, "lastTemp": 100},
          {"_id": 3, "firstTemp": 74, "lastTemp": 100}, {"_id": 5, "firstTemp": 74, "lastTemp": 100},
          {"_id": 6, "firstTemp": 90, "lastTemp": 90}]),
        ([swf({"total": {"$sum": "$contributions"}}, partition_by="$attributes.sensor"),
          {"$project": {"percentOfTotal": {"$divide": ["$contributions", "$total"]}}}],
         [{"_id": 2, "percentOfTotal": 20 / 40}, {"_id": 0, "percentOfTotal": 10 / 40},
          {"_id": 4, "percentOfTotal": 10 / 40}, {"_id": 1, "percentOfTotal": 150 / 185},
          {"_id": 5, "percentOfTotal": 35 / 185}, {"_id": 3, "percentOfTotal": None},
          {"_id": 6, "percentOfTotal": 40 / 40}]),
        ([swf({"rank": {"$rank": {}}}, {"contributions": -1}, "$attributes.sensor"),
          {"$match": {"attributes.field": {"$eq": "a"}}}, {"$project": {"rank": 1}}],
         [{"_id": 2, "rank": 1}, {"_id": 0, "rank": 2}, {"_id": 4, "rank": 2},
          {"_id": 1, "rank": 1}, {"_id": 5, "rank": 2}, {"_id": 3, "rank": 3}]),
    ]
    for pipeline, expected in cases:
        got = aggregate(ts.database, ts.name, pipeline)
        assert bag(got) == bag(expected), pipeline
        assert bag(aggregate(plain.database, plain.name, pipeline)) == bag(got)
    pipeline = [swf({"sensorsSoFar": {"$addToSet": "$attributes.sensor", "window": {"range": [-4, 0]}}},
                    {"_id": 1}, "$language"),
                {"$project": {"sensorsSoFar": 1}}]
    sets = {0: {"S1"}, 3: {"S1", "S2"}, 4: {"S1", "S2"}, 6: {"S1", "S2", "S3"}, 1: {"S2"}, 2: {"S2", "S1"}, 5: {"S2"}}
    for coll in (ts, plain):
        got = aggregate(coll.database, coll.name, pipeline)
        assert {d["_id"]: set(d["sensorsSoFar"]) for d in got} == sets
        assert all(len(d["sensorsSoFar"]) == len(sets[d["_id"]]) for d in got)


# --------------------------------------------------------------------------------------------------
# time.js


def _time_stage(lower, upper, unit="second"):
    return swf({"y": {"$push": "$x", "window": {"range": [lower, upper], "unit": unit}}}, {"x": 1}, "$partition")


TIME_SECONDS = [0, 1, 1.5, 2, 3, 42, 42, 43]
TIME_CASES = [  # (lower, upper, unit, match x (seconds) or None, [(x, [y...]), ...])
    (-1, 0, "second", None, [(0, [0]), (1, [0, 1]), (1.5, [1, 1.5]), (2, [1, 1.5, 2]), (3, [2, 3]),
                             (42, [42, 42]), (42, [42, 42]), (43, [42, 42, 43])]),
    (-1000, 0, "millisecond", None, [(0, [0]), (1, [0, 1]), (1.5, [1, 1.5]), (2, [1, 1.5, 2]), (3, [2, 3]),
                                     (42, [42, 42]), (42, [42, 42]), (43, [42, 42, 43])]),
    (UNBOUNDED, 0, "second", None, [(0, [0]), (1, [0, 1]), (1.5, [0, 1, 1.5]), (2, [0, 1, 1.5, 2]),
                                    (3, [0, 1, 1.5, 2, 3]), (42, [0, 1, 1.5, 2, 3, 42, 42]),
                                    (42, [0, 1, 1.5, 2, 3, 42, 42]), (43, TIME_SECONDS)]),
    (0, UNBOUNDED, "second", None, [(0, TIME_SECONDS), (1, TIME_SECONDS[1:]), (1.5, TIME_SECONDS[2:]),
                                    (2, TIME_SECONDS[3:]), (3, TIME_SECONDS[4:]), (42, [42, 42, 43]),
                                    (42, [42, 42, 43]), (43, [43])]),
    (UNBOUNDED, UNBOUNDED, "second", None, [(x, TIME_SECONDS) for x in TIME_SECONDS]),
    (CURRENT, CURRENT, "second", 42, [(42, [42]), (42, [42])]),
    (CURRENT, 1, "second", 42, [(42, [42, 42, 43]), (42, [42, 43])]),
    (-40, CURRENT, "second", 42, [(42, [2, 3, 42]), (42, [2, 3, 42, 42])]),
    (UNBOUNDED, -40, "second", None, [(0, []), (1, []), (1.5, []), (2, []), (3, []), (42, [0, 1, 1.5, 2]),
                                      (42, [0, 1, 1.5, 2]), (43, [0, 1, 1.5, 2, 3])]),
    (40, UNBOUNDED, "second", None, [(0, [42, 42, 43]), (1, [42, 42, 43]), (1.5, [42, 42, 43]),
                                     (2, [42, 42, 43]), (3, [43]), (42, []), (42, []), (43, [])]),
]


@pytest.mark.parametrize("kind", KINDS)
def test_time_based_range_windows(db, kind):
    """time.js: range windows over a date sortBy with a unit (second, millisecond): uneven spacing,
    '0' takes the ties of the current document and 'current' only the document itself, unbounded on
    either side, windows that are empty; the windows reset between partitions. On an ordinary and on
    a time-series collection (time field x)."""
    coll = make_coll(db, "times", kind, [{"x": sec(s)} for s in TIME_SECONDS], time_field="x")
    for lower, upper, unit, match, expected in TIME_CASES:
        pipeline = [_time_stage(lower, upper, unit)]
        if match is not None:
            pipeline.append({"$match": {"x": sec(match)}})
        got = aggregate(db, coll.name, pipeline + [{"$unset": "_id"}])
        assert bag(got) == bag([{"x": sec(x), "y": [sec(s) for s in ys]} for x, ys in expected]), (lower, upper)
    other = make_coll(db, "times_partitioned", kind,
                      [{"x": sec(s), "partition": "A"} for s in TIME_SECONDS]
                      + [{"x": sec(s), "partition": "B"} for s in (43, 44, 45)], time_field="x")
    got = aggregate(db, other.name, [_time_stage(-5, 0), {"$unset": "_id"}])
    expected = [("A", 0, [0]), ("A", 1, [0, 1]), ("A", 1.5, [0, 1, 1.5]), ("A", 2, [0, 1, 1.5, 2]),
                ("A", 3, [0, 1, 1.5, 2, 3]), ("A", 42, [42, 42]), ("A", 42, [42, 42]), ("A", 43, [42, 42, 43]),
                ("B", 43, [43]), ("B", 44, [43, 44]), ("B", 45, [43, 44, 45])]
    assert bag(got) == bag([{"partition": p, "x": sec(x), "y": [sec(s) for s in ys]} for p, x, ys in expected])


def test_time_based_range_errors(db):
    """time.js: a fractional bound with a unit is FailedToParse ('range-based bounds must be an
    integer'); a document whose sortBy is missing or a number under a unit fails with 5429513."""
    coll = make_coll(db, "times", "regular", [{"x": sec(s)} for s in TIME_SECONDS])
    err = agg_error(db, coll.name, [_time_stage(-1.5, 0)])
    assert err.code == FAILED_TO_PARSE
    assert "range-based bounds must be an integer" in str(err)
    coll.insert_one({})
    assert agg_error(db, coll.name, [_time_stage(UNBOUNDED, UNBOUNDED)]).code == 5429513
    coll.delete_many({"x": {"$exists": False}})
    coll.insert_one({"x": 0})
    assert agg_error(db, coll.name, [_time_stage(UNBOUNDED, UNBOUNDED)]).code == 5429513


# --------------------------------------------------------------------------------------------------
# range.js, range_wrong_type.js


def _range_stage(lower, upper):
    return swf({"y": {"$push": "$x", "window": {"range": [lower, upper]}}}, {"x": 1}, "$partition")


RANGE_XS = [0, 1, 1.5, 2, 3, 100, 100, 101]
RANGE_CASES = [  # (lower, upper, match x or None, [(x, [y...]), ...])
    (-1, 0, None, [(0, [0]), (1, [0, 1]), (1.5, [1, 1.5]), (2, [1, 1.5, 2]), (3, [2, 3]), (100, [100, 100]),
                   (100, [100, 100]), (101, [100, 100, 101])]),
    (UNBOUNDED, 0, None, [(0, [0]), (1, [0, 1]), (1.5, [0, 1, 1.5]), (2, [0, 1, 1.5, 2]), (3, [0, 1, 1.5, 2, 3]),
                          (100, RANGE_XS[:7]), (100, RANGE_XS[:7]), (101, RANGE_XS)]),
    (0, UNBOUNDED, None, [(0, RANGE_XS), (1, RANGE_XS[1:]), (1.5, RANGE_XS[2:]), (2, RANGE_XS[3:]),
                          (3, RANGE_XS[4:]), (100, [100, 100, 101]), (100, [100, 100, 101]), (101, [101])]),
    (UNBOUNDED, UNBOUNDED, None, [(x, RANGE_XS) for x in RANGE_XS]),
    (CURRENT, CURRENT, 100, [(100, [100]), (100, [100])]),
    (CURRENT, 1, 100, [(100, [100, 100, 101]), (100, [100, 101])]),
    (-97, CURRENT, 100, [(100, [3, 100]), (100, [3, 100, 100])]),
    (-1, -1, None, [(0, []), (1, [0]), (1.5, []), (2, [1]), (3, [2]), (100, []), (100, []), (101, [100, 100])]),
    (1, 1, None, [(0, [1]), (1, [2]), (1.5, []), (2, [3]), (3, []), (100, [101]), (100, [101]), (101, [])]),
    (UNBOUNDED, -99, None, [(0, []), (1, []), (1.5, []), (2, []), (3, []), (100, [0, 1]), (100, [0, 1]),
                            (101, [0, 1, 1.5, 2])]),
    (99, UNBOUNDED, None, [(0, [100, 100, 101]), (1, [100, 100, 101]), (1.5, [101]), (2, [101]), (3, []),
                           (100, []), (100, []), (101, [])]),
    (999, 999, None, [(x, []) for x in RANGE_XS]),
]


@pytest.mark.parametrize("kind", KINDS)
def test_numeric_range_windows(db, kind):
    """range.js: range windows over a numeric sortBy (int and double values): uneven spacing, '0'
    with ties vs 'current', unbounded sides, windows not containing (or empty around) the current
    document, ties expiring together, reset between partitions, $sum over an empty $filter input
    is 0. On an ordinary and on a time-series collection (x a measurement)."""
    coll = make_coll(db, "ranges", kind, [{"x": x} for x in RANGE_XS])
    unset = {"$unset": ["_id", "t"]}
    for lower, upper, match, expected in RANGE_CASES:
        pipeline = [_range_stage(lower, upper)] + ([{"$match": {"x": match}}] if match is not None else [])
        got = aggregate(db, coll.name, pipeline + [unset])
        assert bag(got) == bag([{"x": x, "y": ys} for x, ys in expected]), (lower, upper)

    parts = make_coll(db, "ranges_partitioned", kind, [{"x": x, "partition": "A"} for x in RANGE_XS]
                      + [{"x": x, "partition": "B"} for x in (101, 102, 103)])
    got = aggregate(db, parts.name, [_range_stage(-5, 0), unset])
    expected = [("A", 0, [0]), ("A", 1, [0, 1]), ("A", 1.5, [0, 1, 1.5]), ("A", 2, [0, 1, 1.5, 2]),
                ("A", 3, [0, 1, 1.5, 2, 3]), ("A", 100, [100, 100]), ("A", 100, [100, 100]),
                ("A", 101, [100, 100, 101]), ("B", 101, [101]), ("B", 102, [101, 102]), ("B", 103, [101, 102, 103])]
    assert bag(got) == bag([{"partition": p, "x": x, "y": ys} for p, x, ys in expected])

    ties = make_coll(db, "ranges_ties", kind, [{"x": x} for x in (0, 0, 0, 0, 3, 3, 3)])
    got = aggregate(db, ties.name, [_range_stage(UNBOUNDED, -3), unset])
    assert bag(got) == bag([{"x": 0, "y": []}] * 4 + [{"x": 3, "y": [0, 0, 0, 0]}] * 3)
    got = aggregate(db, ties.name, [
        swf({"y": {"$sum": {"$filter": {"input": [], "as": "num", "cond": {"$gte": ["$$num", 2]}}},
                   "window": {"range": [-1, 1]}}}, {"x": 1}, "$partition"), unset])
    assert bag(got) == bag([{"x": 0, "y": 0}] * 4 + [{"x": 3, "y": 0}] * 3)


@pytest.mark.parametrize("bounds", [[999, 999], [-999, 999], [UNBOUNDED, UNBOUNDED]])
def test_numeric_range_on_non_numeric_sort_values_fails(db, bounds):
    """range.js: once documents with a missing, null, string or object sortBy value are present, a
    range window fails: 'Invalid range: Expected the sortBy field to be a number' (5429414)."""
    coll = make_coll(db, "ranges", "regular", [{"x": x} for x in RANGE_XS] + [{}, {"x": None}, {"x": ""}, {"x": {}}])
    err = agg_error(db, coll.name, [_range_stage(*bounds), {"$unset": "_id"}])
    assert "Invalid range: Expected the sortBy field to be a number" in str(err)
    assert err.code == 5429414


def test_range_windows_reset_between_partitions_hours(db):
    """range.js (last case): an hour-range $min keeps no values from the previous partition."""
    rows = [(1, (0, 30), 10), (1, (1, 31), 11), (1, (1, 32), 12), (1, (1, 33), 13),
            (2, (2, 31), 5), (2, (2, 35), 6), (2, (3, 34), 2)]
    coll = make_coll(db, "temps", "regular", [{"partitionBy": p, "time": dt.datetime(2020, 2, 1, h, m), "temp": t}
                                              for p, (h, m), t in rows])
    got = aggregate(db, coll.name, [
        swf({"min": {"$min": "$temp", "window": {"range": [-1, 0], "unit": "hour"}}}, {"time": 1}, "$partitionBy")])
    assert [(d["temp"], d["min"]) for d in got] == [(10, 10), (11, 11), (12, 11), (13, 11), (5, 5), (6, 5), (2, 2)]


def test_range_lower_bound_past_numbers_into_strings(db):
    """range_wrong_type.js: [+3, 'unbounded'] over {a: 2} then {a: 'xyz'} fails with 5429414
    (not an internal assertion)."""
    coll = make_coll(db, "mixed", "regular", [{"a": 2}, {"a": "xyz"}])
    err = agg_error(db, coll.name, [swf({"b": {"$max": 5, "window": {"range": [3, UNBOUNDED]}}}, {"a": 1})])
    assert err.code == 5429414


# --------------------------------------------------------------------------------------------------
# derivative.js


def _derivative(window, unit=None, sort=1):
    arg = {"input": "$y"} if unit is None else {"input": "$y", "unit": unit}
    return swf({"dy": {"$derivative": arg, "window": window}}, {"time": sort})


def _assert_doubles(got, expected):
    """Values equal and every non-null computed value a double."""
    assert bag(got, key=loose) == bag(expected, key=loose)
    for d in got:
        assert d["dy"] is None or isinstance(d["dy"], float), d


def test_derivative_numeric(db):
    """derivative.js: $derivative needs explicit bounds (FailedToParse, on explain); it never looks
    across partitions; endpoints outside the partition clamp to its first/last document (the same as
    the reversed sort with mirrored bounds); range bounds; unbounded windows; numeric sortBy without
    a unit. Results are doubles, null for a one-document window."""
    c = make_coll(db, "d1", "regular", [{"time": t, "y": y} for t, y in [(0, 0), (1, 42), (3, 67), (7, 99), (10, 20)]])
    assert explain_error(db, c.name, [swf({"dy": {"$derivative": {"input": "$y"}}}, {"time": 1})]).code == FAILED_TO_PARSE

    rows = [("A", 0, 1, None), ("A", 1, 2, 1), ("A", 2, 1, -1), ("A", 3, 4, 3),
            ("B", 0, 100, None), ("B", 1, 105, 5), ("B", 2, 107, 2), ("B", 3, 104, -3)]
    c = make_coll(db, "d2", "regular", [{"sensor": s, "time": t, "y": y} for s, t, y, _ in rows])
    got = aggregate(db, c.name, [swf({"dy": {"$derivative": {"input": "$y"}, "window": {"documents": [-1, 0]}}},
                                     {"time": 1}, "$sensor"), {"$unset": "_id"}])
    _assert_doubles(got, [{"sensor": s, "time": t, "y": y, "dy": dy} for s, t, y, dy in rows])

    ys = [100, 105, 108, 108, 115, 115, 118, 118]
    c = make_coll(db, "d3", "regular", [{"time": t, "y": y} for t, y in enumerate(ys)])
    dys = [5, 8 / 2, 8 / 3, 15 / 4, 10 / 4, 10 / 4, 10 / 4, 3 / 3]
    got = aggregate(db, c.name, [_derivative({"documents": [-3, 1]}), {"$unset": "_id"}, {"$sort": {"time": 1}}])
    assert got == [{"time": t, "y": y, "dy": float(dy)} for t, (y, dy) in enumerate(zip(ys, dys, strict=True))]
    desc = aggregate(db, c.name, [_derivative({"documents": [-1, 3]}, sort=-1), {"$unset": "_id"}, {"$sort": {"time": 1}}])
    assert seq(desc) == seq(got)

    pts = [(0, 10), (10, 12), (11, 15), (12, 19), (13, 24), (20, 30)]
    c = make_coll(db, "d4", "regular", [{"time": t, "y": y} for t, y in pts])
    got = aggregate(db, c.name, [_derivative({"range": [-10, 0]}), {"$unset": "_id"}, {"$sort": {"time": 1}}])
    dys = [None, 2 / 10, 3 / 1, 7 / 2, 12 / 3, 18 / 10]
    assert got == [{"time": t, "y": y, "dy": dy} for (t, y), dy in zip(pts, dys, strict=True)]

    c = make_coll(db, "d5", "regular", [{"time": t, "y": 100} for t in range(3)])
    assert agg_error(db, c.name, [_derivative({"documents": [-1, 0]}, "millisecond")]).code == 5624900
    got = aggregate(db, c.name, [_derivative({"documents": [-1, 0]}), {"$unset": "_id"}])
    _assert_doubles(got, [{"time": 0, "y": 100, "dy": None}, {"time": 1, "y": 100, "dy": 0.0},
                          {"time": 2, "y": 100, "dy": 0.0}])

    c = make_coll(db, "d6", "regular", [{"time": t, "y": t * t} for t in range(4)])
    got = aggregate(db, c.name, [_derivative({"documents": [UNBOUNDED, UNBOUNDED]}), {"$unset": "_id"}])
    _assert_doubles(got, [{"time": t, "y": t * t, "dy": 3.0} for t in range(4)])


@pytest.mark.parametrize("unit,code", [("year", 5490710), ("quarter", 5490710), ("month", 5490710), ("week", None),
                                       ("day", None), ("hour", None), ("minute", None), ("second", None),
                                       ("millisecond", None)])
@pytest.mark.parametrize("op", ["$derivative", "$integral"])
def test_rate_units_week_or_smaller(db, op, unit, code):
    """derivative.js / integral.js: 'unit' accepts week and smaller; year, quarter and month fail
    with 5490710 (checked with explain, as the jstests do)."""
    db.create_collection("rates")
    field = "time" if op == "$derivative" else "x"
    pipeline = [swf({"v": {op: {"input": "$y", "unit": unit}, "window": {"documents": [-1, 0]}}}, {field: 1})]
    if code is None:
        explain_ok(db, "rates", pipeline)
    else:
        assert explain_error(db, "rates", pipeline).code == code


def _ms(n):
    return dt.datetime(2020, 1, 1) + dt.timedelta(milliseconds=n)


@pytest.mark.parametrize("kind", KINDS)
def test_derivative_over_dates(db, kind):
    """derivative.js: a date sortBy requires 'unit' (5624901) and the rate is per unit (millisecond,
    minute, second), including unbounded and time-range windows; mixed dates and numbers fail either
    way (5624901 without unit, 5624900 with). The date cases on an ordinary and a time-series
    collection."""
    c = make_coll(db, "dd1", kind, [{"time": _ms(t), "y": y} for t, y in [(0, 5), (1, 4), (2, 6), (3, 5)]], "time")
    assert agg_error(db, c.name, [_derivative({"documents": [-1, 0]})]).code == 5624901
    base = [(0, 5, None), (1, 4, -1), (2, 6, 2), (3, 5, -1)]
    for unit, scale in [("millisecond", 1), ("minute", 60_000)]:
        got = aggregate(db, c.name, [_derivative({"documents": [-1, 0]}, unit), {"$unset": "_id"}])
        _assert_doubles(got, [{"time": _ms(t), "y": y, "dy": None if d is None else float(d * scale)}
                              for t, y, d in base])

    c = make_coll(db, "dd2", kind, [{"time": _ms(60_000 * m), "y": y} for m, y in [(0, 5), (1, 4), (2, 6), (3, 5)]], "time")
    got = aggregate(db, c.name, [_derivative({"documents": [-1, 0]}, "millisecond"), {"$unset": "_id"}])
    _assert_doubles(got, [{"time": _ms(60_000 * t), "y": y, "dy": None if d is None else d / 60_000}
                          for t, y, d in base])

    c = make_coll(db, "dd3", kind, [{"time": _ms(1000 * t), "y": t * t} for t in range(4)], "time")
    got = aggregate(db, c.name, [_derivative({"documents": [UNBOUNDED, UNBOUNDED]}, "second"), {"$unset": "_id"}])
    _assert_doubles(got, [{"time": _ms(1000 * t), "y": t * t, "dy": 3.0} for t in range(4)])

    pts = [(0, 10), (10, 12), (11, 15), (12, 19), (13, 24), (20, 30)]
    c = make_coll(db, "dd4", kind, [{"time": _ms(1000 * t), "y": y} for t, y in pts], "time")
    got = aggregate(db, c.name, [_derivative({"range": [-10, 0], "unit": "second"}, "second"),
                                 {"$unset": "_id"}, {"$sort": {"time": 1}}])
    dys = [None, 2 / 10, 3 / 1, 7 / 2, 12 / 3, 18 / 10]
    assert got == [{"time": _ms(1000 * t), "y": y, "dy": dy} for (t, y), dy in zip(pts, dys, strict=True)]

    if kind == "regular":
        c = make_coll(db, "dd5", kind, [{"time": _ms(0), "y": 0}, {"time": _ms(60_000), "y": 0},
                                        {"time": 12, "y": 0}, {"time": 13, "y": 0}])
        assert agg_error(db, c.name, [_derivative({"documents": [-1, 0]})]).code == 5624901
        assert agg_error(db, c.name, [_derivative({"documents": [-1, 0]}, "second")]).code == 5624900


# --------------------------------------------------------------------------------------------------
# integral.js


def _integral(window, unit=None, sort=1, input_="$y", field="x"):
    arg = {"input": input_} if unit is None else {"input": input_, "unit": unit}
    return swf({"integral": {"$integral": arg, **({"window": window} if window is not None else {})}}, {field: sort})


def test_integral_numeric(db):
    """integral.js: the default window is the whole partition; trapezoids never span partitions;
    the reversed sort with negated input and mirrored bounds gives the same values; every document
    bounds of window_function_helpers.js returns all documents."""
    c = make_coll(db, "i1", "regular", [{"x": x, "y": y} for x, y in [(0, 0), (1, 42), (3, 67), (7, 99), (10, 20)]])
    assert len(aggregate(db, c.name, [_integral(None)])) == 5

    rows = [(1, 0, 1, 0), (1, 1, 2, 1.5), (1, 2, 1, 1.5), (1, 3, 4, 2.5),
            (2, 0, 100, 0), (2, 2, 105, 205), (2, 4, 107, 212), (2, 6, -100, 7)]
    c = make_coll(db, "i2", "regular", [{"partitionID": p, "x": x, "y": y} for p, x, y, _ in rows])
    got = aggregate(db, c.name, [swf({"integral": {"$integral": {"input": "$y"}, "window": {"documents": [-1, 0]}}},
                                     {"x": 1}, "$partitionID"), {"$unset": "_id"}])
    assert bag(got, key=loose) == bag([{"partitionID": p, "x": x, "y": y, "integral": v} for p, x, y, v in rows], key=loose)
    desc = aggregate(db, c.name, [swf({"integral": {"$integral": {"input": {"$subtract": [0, "$y"]}},
                                                    "window": {"documents": [0, 1]}}}, {"x": -1}, "$partitionID"),
                                  {"$unset": "_id"}])
    assert bag(desc, key=loose) == bag(got, key=loose)

    c = make_coll(db, "i3", "regular", [{"x": x, "y": y} for x, y in [(0, 0), (1, 42), (3, 67)]])
    output = {f"i{k}": {"$integral": {"input": "$y"}, "window": {"documents": b}} for k, b in enumerate(DOCUMENT_BOUNDS)}
    assert len(aggregate(db, c.name, [swf(output, {"x": 1})])) == 3
    for bounds in DOCUMENT_BOUNDS:
        assert len(aggregate(db, c.name, [_integral({"documents": bounds})])) == 3


def _close_docs(got, expected, field):
    assert len(got) == len(expected)
    rest = lambda d: bag([{k: v for k, v in d.items() if k != field}])  # noqa: E731
    for want in expected:
        match = [g for g in got if rest(g) == rest(want)]
        assert match, want
        g, w = match[0][field], want[field]
        assert (g is None and w is None) or (g is not None and w is not None and math.isclose(g, w, abs_tol=1e-9)), (g, w)


@pytest.mark.parametrize("kind", KINDS)
def test_integral_over_dates(db, kind):
    """integral.js: with 'unit' the date sortBy is scaled (milliseconds per second); range windows
    in seconds: empty window null, one document 0, several documents the trapezoid sum. Mixed dates
    and numbers fail: with unit 5423901, without 5423902 (ordinary collection). On an ordinary and a
    time-series collection (time field x / time)."""
    c = make_coll(db, "id1", kind, [{"x": _ms(2 * i), "y": 2 * i} for i in range(4)], time_field="x")
    got = aggregate(db, c.name, [_integral({"documents": [-1, 1]}, "second"), {"$unset": "_id"}])
    _close_docs(got, [{"x": _ms(2 * i), "y": 2 * i, "integral": v} for i, v in enumerate([0.002, 0.008, 0.016, 0.010])],
                "integral")

    rows = [(0, 0.0), (4, 2.4), (10, 5.6), (18, 6.8)]
    c = make_coll(db, "id2", kind, [{"time": _ms(1000 * s), "y": y} for s, y in rows], time_field="time")
    for bounds, values in [([-1, -1], [None] * 4), ([-2, 0], [0, 0, 0, 0]), ([-6, 6], [4.8, 28.8, 24.0, 0.0])]:
        got = aggregate(db, c.name, [
            swf({"integral": {"$integral": {"input": "$y", "unit": "second"},
                              "window": {"range": bounds, "unit": "second"}}}, {"time": 1}),
            {"$unset": "_id"}])
        _close_docs(got, [{"time": _ms(1000 * s), "y": y, "integral": v} for (s, y), v in zip(rows, values, strict=True)],
                    "integral")

    if kind == "regular":
        c = make_coll(db, "id3", kind, [{"x": 0, "y": 100}, {"x": 1, "y": 100}, {"x": _ms(0), "y": 5}, {"x": _ms(1), "y": 4}])
        assert agg_error(db, c.name, [_integral({"documents": [-1, 1]}, "second")]).code == 5423901
        assert agg_error(db, c.name, [_integral({"documents": [-1, 1]})]).code == 5423902


# --------------------------------------------------------------------------------------------------
# exp_moving_avg.js


def _ema(values, alpha):
    out, last = [], None
    for v in values:
        last = v if last is None else v * alpha + last * (1 - alpha)
        out.append(last)
    return out


def test_exp_moving_avg_values(tickers):
    """exp_moving_avg.js: null over a non-numeric input; with N (alpha = 2/(N+1)) and with alpha
    (0.5, 0.279) it matches the moving average computed in order of _id (doubles for integer
    input); a Decimal128 alpha is accepted."""
    db, name = tickers.database, tickers.name
    got = aggregate(db, name, [{"$addFields": {"str": "hiya"}},
                               swf({"e": {"$expMovingAvg": {"input": "$str", "N": 2}}}, {"_id": 1})])
    assert len(got) == 20 and all(d["e"] is None for d in got)
    prices = [d["price"] for d in sorted(ticker_docs(), key=lambda d: d["_id"])]
    for spec, alpha in [({"N": 3}, 2.0 / 4), ({"alpha": 0.5}, 0.5), ({"alpha": 0.279}, 0.279)]:
        got = aggregate(db, name, [swf({"e": {"$expMovingAvg": {"input": "$price", **spec}}}, {"_id": 1})])
        assert [d["_id"] for d in got] == list(range(20))
        for d, want in zip(got, _ema(prices, alpha), strict=True):
            assert isinstance(d["e"], float) and math.isclose(d["e"], want, rel_tol=1e-9), (spec, d, want)
    aggregate(db, name, [swf({"e": {"$expMovingAvg": {"input": "$price", "alpha": Decimal128("1.0E-1")}}}, {"_id": 1})])


@pytest.mark.parametrize("kind", KINDS)
def test_exp_moving_avg_skips_non_numeric_inputs(db, kind):
    """Not in the jstests (mongod's AccumulatorExpMovingAvg): a value that is not a number (null,
    missing, a string) leaves the average as it was, and that document gets it; documents before the
    first number get null."""
    values = [None, "x", 10, None, 20, "y", 30]
    docs = [{"_id": i, "v": v} for i, v in enumerate(values)]
    docs[3] = {"_id": 3}  # missing
    make_coll(db, "ema", kind, docs)
    got = aggregate(db, "ema", [swf({"e": {"$expMovingAvg": {"input": "$v", "alpha": 0.5}}}, {"_id": 1})])
    assert [d["_id"] for d in got] == list(range(7))
    assert seq([d["e"] for d in got]) == seq([None, None, 10.0, 10.0, 15.0, 15.0, 22.5])


def test_exp_moving_avg_decimal_input(db):
    """Not in the jstests: mongod computes the average in Decimal128 (a double enters with 15
    significant digits) and answers a decimal from the first decimal input on (doubles before it):
    alpha 2 / (3 + 1) = 0.5, then 2 * 0.5 + 1 * 0.5 = 1.5, then 4.50000000000000 * 0.5 + 1.5 * 0.5."""
    make_coll(db, "emad", "regular", [{"_id": 0, "v": 1}, {"_id": 1, "v": Decimal128("2")}, {"_id": 2, "v": 4.5}])
    got = aggregate(db, "emad", [swf({"e": {"$expMovingAvg": {"input": "$v", "N": 3}}}, {"_id": 1})])
    assert seq([d["e"] for d in got]) == seq([1.0, Decimal128("1.5"), Decimal128("3.000000000000000")])


@pytest.mark.parametrize("spec", [
    {"e": {"$expMovingAvg": {"input": "$price", "alpha": 0.5, "N": 2}}},
    {"e": {"$expMovingAvg": {"input": "$price", "N": 0.5}}},
    {"e": {"$expMovingAvg": {"input": "$price", "N": "food"}}},
    {"e": {"$expMovingAvg": {"str": "$price", "N": 2}}},
    {"e": {"$expMovingAvg": {"str": "$price", "N": 2}, "randomArg": 2}},
    {"e": {"$expMovingAvg": "$price"}},
    {"e": {"$expMovingAvg": {"input": "$price", "alpha": 1.0}}},
    {"e": {"$expMovingAvg": {"input": "$price", "alpha": 0.0}}},
    None,  # no sortBy
], ids=["alpha-and-N", "N-fraction", "N-string", "no-input", "extra-arg", "not-object", "alpha-1", "alpha-0", "no-sortBy"])
def test_exp_moving_avg_parse_errors(db, spec):
    """exp_moving_avg.js: bad arguments, alpha outside (0, 1), and a missing sortBy are FailedToParse."""
    make_coll(db, "tickers", "regular", ticker_docs())
    if spec is None:
        stage = swf({"e": {"$expMovingAvg": {"input": "$price", "N": 1}}})
    else:
        stage = swf(spec, {"_id": 1})
    assert agg_error(db, "tickers", [stage]).code == FAILED_TO_PARSE


# --------------------------------------------------------------------------------------------------
# shift.js


def _shift_docs():
    return [{"_id": i, "one": i, "partition": i % 2, "partitionSeq": i // 2} for i in range(10)]


SHIFT_CASES = [  # (sort direction, partitioned, by, default)
    (1, False, -1, -10), (1, False, -1, OMIT), (1, False, 0, OMIT), (1, False, 1, -10), (1, False, 1, OMIT),
    (-1, False, 1, OMIT), (-1, False, 0, OMIT), (-1, False, -1, OMIT),
    (1, True, -1, OMIT), (1, True, 1, OMIT), (1, True, 0, OMIT),
    (-1, True, -1, OMIT), (-1, True, 1, OMIT), (-1, True, 0, OMIT),
]


@pytest.mark.parametrize("direction,partitioned,by,default", SHIFT_CASES)
def test_shift_values(db, direction, partitioned, by, default):
    """shift.js: $shift by -1/0/+1 over an ascending or descending sort, unpartitioned or split
    odd/even: the value 'by' documents away in the partition, else the default (null when none)."""
    make_coll(db, "shift", "regular", _shift_docs())
    args = {"by": by, "output": "$one"}
    if default is not OMIT:
        args["default"] = default
    stage = swf({"a": {"$shift": args}}, {"one": direction}, "$partition" if partitioned else OMIT)
    got = aggregate(db, "shift", [stage, {"$sort": {"_id": 1}}])
    expected = []
    for d in _shift_docs():
        index, last, step = (d["partitionSeq"], 4, 2) if partitioned else (d["one"], 9, 1)
        target = index + direction * by
        value = d["one"] + direction * by * step if 0 <= target <= last else (None if default is OMIT else default)
        expected.append({**d, "a": value})
    assert seq(got) == seq(expected)


SHIFT_PARSE = [  # (id, $shift argument, sortBy, parses, reason Tidemark differs or None)
    ("no-by", {"output": "$one"}, {"one": 1}, False, None),
    ("by-string", {"by": "1", "output": "$one"}, {"one": 1}, False, None),
    ("by-expression", {"by": {"$sum": [1, 1]}, "output": "$one"}, {"one": 1}, False, None),
    ("by-fraction", {"by": 1.1, "output": "$one"}, {"one": 1}, False, None),
    ("by-integral-double", {"by": 1.0, "output": "$one"}, {"one": 1}, True, None),
    ("no-output", {"by": 1}, {"one": 1}, False, None),
    ("default-not-constant", {"by": 1, "output": "$one", "default": "$one"}, {"one": 1}, False, None),
    ("default-constant-expression", {"by": 1, "output": "$one", "default": {"$add": [1, 1]}}, {"one": 1}, True, None),
    ("no-sortBy", {"by": 1, "output": "$one"}, OMIT, False, None),
]


@pytest.mark.parametrize("args,sort,ok", params(SHIFT_PARSE))
def test_shift_parse(db, args, sort, ok):
    """shift.js: 'by' is a required integer (an integral double is accepted), 'output' is required,
    'default' must be constant (a constant expression is fine), and $shift needs a sortBy; every
    failure is FailedToParse."""
    make_coll(db, "shift", "regular", _shift_docs())
    stage = swf({"a": {"$shift": args}}, sort)
    if ok:
        assert len(aggregate(db, "shift", [stage])) == 10
    else:
        assert agg_error(db, "shift", [stage]).code == FAILED_TO_PARSE


# --------------------------------------------------------------------------------------------------
# linear_fill.js


def _fill(db, name, docs, sort="_id", partition=OMIT, project_out_id=False, field="val"):
    make_coll(db, name, "regular", docs)
    pipeline = ([{"$project": {"_id": 0}}] if project_out_id else []) + [
        swf({field: {"$linearFill": f"${field}"}}, {sort: 1}, partition)]
    return aggregate(db, name, pipeline)


LINEAR_FILL_CASES = [  # (stored [(_id, val)], expected [(_id, val)]) sorted by _id
    ([(0, 0), (1, None), (2, None), (9, None), (10, 10)], [(0, 0), (1, 1), (2, 2), (9, 9), (10, 10)]),
    ([(0, 0), (1, None), (3, 3), (9, 9), (10, None), (11, 11)], [(0, 0), (1, 1), (3, 3), (9, 9), (10, 10), (11, 11)]),
    ([(10, None), (0, 0), (11, 11), (1, None), (9, 9), (3, 3)], [(0, 0), (1, 1), (3, 3), (9, 9), (10, 10), (11, 11)]),
    ([(0.5, 0), (1, None), (4.384, None), (9, None), (10.09283, 11.28374)],
     [(0.5, 0), (1, 0.5881340542884634), (4.384, 4.5686253337127845), (9, 9.998278922903879), (10.09283, 11.28374)]),
    ([(1, 1), (2, None), (3, None), (4, None), (5, 5), (6, None), (7, None), (8, None), (9, 10), (10, None),
      (11, None), (12, None), (13, -5)],
     [(1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (6, 6.25), (7, 7.5), (8, 8.75), (9, 10), (10, 6.25), (11, 2.5),
      (12, -1.25), (13, -5)]),
    ([(0, None), (1, None), (4, None), (9, None), (10, None)], [(0, None), (1, None), (4, None), (9, None), (10, None)]),
    ([(0, 0), (1, None), (4, None), (9, None), (10, None)], [(0, 0), (1, None), (4, None), (9, None), (10, None)]),
    ([(0, None), (1, None), (4, None), (9, None), (10, 10), (11, None), (12, None), (13, 13)],
     [(0, None), (1, None), (4, None), (9, None), (10, 10), (11, 11), (12, 12), (13, 13)]),
]


@pytest.mark.parametrize("stored,expected", LINEAR_FILL_CASES)
def test_linear_fill_values(db, stored, expected):
    """linear_fill.js: nulls between two numbers are interpolated on the (numeric) sortBy, whatever
    the insertion order; leading/trailing nulls, or too few numbers, stay null; documents come back
    in sortBy order."""
    got = _fill(db, "lf", [{"_id": i, "val": v} for i, v in stored])
    assert seq(got, key=loose) == seq([{"_id": i, "val": v} for i, v in expected], key=loose)


def test_linear_fill_dates_and_partitions(db):
    """linear_fill.js: interpolation on a date sortBy, per partition (numeric and date sortBy),
    partitions in order; the documents of a partition sorted by the sortBy."""
    days = list(range(28, 15, -1))
    vals = [1, None, None, None, 5, None, None, None, 10, None, None, None, -5]
    got = _fill(db, "lf1", [{"_id": i, "date": dt.datetime(2003, 12, d), "val": v}
                            for i, (d, v) in enumerate(zip(days, vals, strict=True))], sort="date")
    filled = [1, 2, 3, 4, 5, 6.25, 7.5, 8.75, 10, 6.25, 2.5, -1.25, -5]
    assert seq(got, key=loose) == seq([{"_id": i, "date": dt.datetime(2003, 12, d), "val": v} for i, d, v in
                                   reversed(list(zip(range(13), days, filled, strict=True)))], key=loose)

    rows = [("Manhattan", 1, -1), ("Manhattan", 5, None), ("Bronx", 1000, -10), ("Bronx", 1100, None),
            ("Bronx", 1200, None), ("Bronx", 2000, 200), ("Manhattan", 10, -10), ("Queens", 2, -2),
            ("Queens", 20, -20), ("Queens", 3, None)]
    expected = [("Bronx", 1000, -10), ("Bronx", 1100, 11), ("Bronx", 1200, 32), ("Bronx", 2000, 200),
                ("Manhattan", 1, -1), ("Manhattan", 5, -5), ("Manhattan", 10, -10),
                ("Queens", 2, -2), ("Queens", 3, -3), ("Queens", 20, -20)]
    db.create_collection("lf2")
    db.lf2.insert_many([{"borough": b, "x": x, "y": y} for b, x, y in rows])
    pipeline = [{"$project": {"_id": 0}}, swf({"y": {"$linearFill": "$y"}}, {"x": 1}, "$borough")]
    assert seq(aggregate(db, "lf2", pipeline), key=loose) == seq([{"borough": b, "x": x, "y": y} for b, x, y in expected], key=loose)
    si_vals = [1, None, None, None, 5, None, None, None, 10, None, None, None, -5]
    db.lf2.insert_many([{"borough": "SI", "x": x, "y": y} for x, y in zip(range(1, 14), si_vals, strict=True)])
    expected += [("SI", x, y) for x, y in zip(range(1, 14), filled, strict=True)]
    assert seq(aggregate(db, "lf2", pipeline), key=loose) == seq([{"borough": b, "x": x, "y": y} for b, x, y in expected], key=loose)

    rows = [("Manhattan", -1, 2000), ("Manhattan", None, 2001), ("Bronx", -10, 2002), ("Bronx", None, 2003),
            ("Bronx", None, 2004), ("Bronx", 200, 2005), ("Manhattan", -10, 2006), ("Queens", -2, 2007),
            ("Queens", -20, 2008), ("Queens", None, 2009)]
    db.create_collection("lf3")
    db.lf3.insert_many([{"borough": b, "y": y, "date": dt.datetime(year, 12, 28)} for b, y, year in rows])
    expected = [("Bronx", -10, 2002), ("Bronx", 59.93613138686132, 2003), ("Bronx", 130.06386861313868, 2004),
                ("Bronx", 200, 2005), ("Manhattan", -1, 2000), ("Manhattan", -2.499315381104519, 2001),
                ("Manhattan", -10, 2006), ("Queens", -2, 2007), ("Queens", -20, 2008), ("Queens", None, 2009)]
    got = aggregate(db, "lf3", [{"$project": {"_id": 0}}, swf({"y": {"$linearFill": "$y"}}, {"date": 1}, "$borough")])
    assert seq(got, key=loose) == seq([{"borough": b, "y": y, "date": dt.datetime(year, 12, 28)} for b, y, year in expected],
                                  key=loose)


@pytest.mark.parametrize("docs,sort,code", [
    ([{"test": 0, "val": 0}, {"test": 1, "val": None}, {"test": 9, "val": 9}, {"test": 10, "val": 10},
      {"test": 10, "val": None}, {"test": 11, "val": 11}], {"test": 1}, 6050106),
    ([{"test": None, "val": 0}, {"test": 1, "val": None}, {"test": 4, "val": None}, {"test": 9, "val": None},
      {"test": 10, "val": 10}], {"test": 1}, TYPE_MISMATCH),
    ([{"test": 0, "val": "str", "z": 2}, {"test": 1, "val": None, "z": 3}, {"test": 9, "val": 9, "z": 4},
      {"test": 10, "val": "str", "z": 50}, {"test": 10, "val": None, "z": 9}, {"test": 11, "val": 11, "z": 2}],
     {"test": 1}, TYPE_MISMATCH),
    ([{"test": 0, "val": 1, "z": 2}], {"test": 1, "z": 1}, 605001),
    ([{"test": 1, "val": 10}, {"test": 2, "val": None}, {"test": dt.datetime(2024, 1, 1), "val": 20}], {"test": 1},
     TYPE_MISMATCH),
], ids=["repeated-sort-value", "null-sort-value", "string-value", "compound-sortBy", "dates-and-numbers"])
def test_linear_fill_errors(db, docs, sort, code):
    """linear_fill.js: repeated sortBy values (6050106), a non-numeric sortBy value or mixed dates
    and numbers (TypeMismatch), a non-numeric value to fill (TypeMismatch), a compound sortBy (605001)."""
    make_coll(db, "lf", "regular", docs)
    err = agg_error(db, "lf", [{"$project": {"_id": 0}}, swf({"val": {"$linearFill": "$val"}}, sort)])
    assert err.code == code


@pytest.mark.parametrize("op", ["$linearFill", "$locf"])
def test_fill_functions_take_no_window(db, op):
    """linear_fill.js / locf.js: $linearFill and $locf reject a 'window' field (FailedToParse)."""
    db.create_collection("fill")
    assert agg_error(db, "fill", [swf({"val": {op: {}, "window": []}}, {"_id": 1})]).code == FAILED_TO_PARSE


# --------------------------------------------------------------------------------------------------
# locf.js


def test_locf(db):
    """locf.js: the last non-null value carries forward (over nulls and missing fields, into a new
    field too), partitions do not mix, leading nulls/missing become null."""
    docs = [{"_id": 0, "val": None}, {"_id": 1, "val": 0}, {"_id": 2, "val": 2}, {"_id": 3, "val": None}, {"_id": 4},
            {"_id": 5, "val": "str"}, {"_id": 6, "val": None}, {"_id": 7, "rand": "rand"}]
    make_coll(db, "locf", "regular", docs)
    got = aggregate(db, "locf", [swf({"val": {"$locf": "$val"}}, {"_id": 1})])
    carried = [None, 0, 2, 2, 2, "str", "str", "str"]
    assert bag(got) == bag([{**d, "val": v} for d, v in zip(docs, carried, strict=True)])
    got = aggregate(db, "locf", [swf({"newVal": {"$locf": "$val"}}, {"_id": 1})])
    assert bag(got) == bag([{**d, "newVal": v} for d, v in zip(docs, carried, strict=True)])

    make_coll(db, "locf2", "regular", [{"_id": 1, "val": 0, "part": 1}, {"_id": 2, "val": 2, "part": 2},
                                       {"_id": 3, "val": None, "part": 1}, {"_id": 4, "val": None, "part": 2}])
    got = aggregate(db, "locf2", [swf({"val": {"$locf": "$val"}}, {"_id": 1}, "$part")])
    assert bag(got) == bag([{"_id": 1, "val": 0, "part": 1}, {"_id": 2, "val": 2, "part": 2},
                            {"_id": 3, "val": 0, "part": 1}, {"_id": 4, "val": 2, "part": 2}])

    nulls = [{"_id": i, "val": None} for i in range(1, 5)]
    for name, stored in [("locf3", [{"_id": 1}, {"_id": 2}, {"_id": 3, "val": None}, {"_id": 4, "val": None}]),
                         ("locf4", [{"_id": 1, "val": None}, {"_id": 2}, {"_id": 3, "val": None}, {"_id": 4}])]:
        make_coll(db, name, "regular", stored)
        assert bag(aggregate(db, name, [swf({"val": {"$locf": "$val"}}, {"_id": 1})])) == bag(nulls)


# --------------------------------------------------------------------------------------------------
# rank.js


def _rank_docs():
    return [{"_id": i, "double": i // 2} for i in range(12)]


RANK_PARSE = [  # (id, output spec, sortBy, code, reason Tidemark differs or None)
    ("window-array", {"$rank": {}, "window": []}, {"_id": 1}, 5371601, None),
    ("argument", {"$rank": "$_id"}, {"_id": 1}, 5371603, None),
    ("no-sortBy", {"$rank": {}}, OMIT, 5371602, None),
    ("window-documents", {"$rank": {}, "window": {"documents": [-1, 1]}}, {"_id": 1}, 5371601, None),
]


@pytest.mark.parametrize("output,sort,code", params(RANK_PARSE))
def test_rank_parse_errors(db, output, sort, code):
    """rank.js: rank functions take no window (5371601), '{}' as their only argument (5371603)
    and need a sortBy (5371602)."""
    make_coll(db, "rank", "regular", _rank_docs())
    assert agg_error(db, "rank", [swf({"rank": output}, sort)]).code == code


@pytest.mark.parametrize("sort,op,expected", [
    ("_id", "$rank", list(range(1, 13))),
    ("_id", "$denseRank", list(range(1, 13))),
    ("_id", "$documentNumber", list(range(1, 13))),
    ("double", "$rank", [n + 1 if n % 2 == 0 else n for n in range(12)]),
    ("double", "$denseRank", [n // 2 + 1 for n in range(12)]),
    ("double", "$documentNumber", list(range(1, 13))),
])
def test_rank_values(db, sort, op, expected):
    """rank.js: $rank / $denseRank / $documentNumber without ties (sortBy _id) and with ties (pairs
    of equal 'double'), in output order (ints)."""
    make_coll(db, "rank", "regular", _rank_docs())
    got = aggregate(db, "rank", [swf({"rank": {op: {}}}, {sort: 1})])
    assert seq([d["rank"] for d in got]) == seq(expected)


# --------------------------------------------------------------------------------------------------
# partition.js, empty_window.js, count.js, covariance.js, first.js, last.js


def test_partition_semantics(db):
    """partition.js: partitionBy evaluating to an array is TypeMismatch; a constant partitionBy
    (null, a string, {$add: [1, 2]}) is one partition; missing and null are the same partition, but
    as fields of a compound (object) key a missing field and a null field differ."""
    make_coll(db, "arr", "regular", [{"int_field": 0, "arr": [1, 2]}])
    err = agg_error(db, "arr", [swf({"a": {"$sum": "$int_field", "window": {"documents": [UNBOUNDED, CURRENT]}}},
                                    {"_id": 1}, "$arr")])
    assert err.code == TYPE_MISMATCH
    docs = [{"int_field": 0}, {"int_field": None, "other_field": None}, {"other_field": 0}, {"int_field": None},
            {"other_field": None}, {"int_field": None, "other_field": None}]
    make_coll(db, "part", "regular", docs)
    for constant in (None, "constant", {"$add": [1, 2]}):
        got = aggregate(db, "part", [swf({"count": {"$sum": 1}}, partition_by=constant)])
        assert [d["count"] for d in got] == [6] * 6
    got = aggregate(db, "part", [swf({"count": {"$sum": 1}}, partition_by="$int_field"), {"$project": {"_id": 0}}])
    counts = [1 if d.get("int_field") == 0 else 5 for d in docs]
    assert bag(got) == bag([{**d, "count": c} for d, c in zip(docs, counts, strict=True)])
    got = aggregate(db, "part", [swf({"count": {"$sum": 1}},
                                     partition_by={"int_field": "$int_field", "other_field": "$other_field"}),
                                 {"$project": {"_id": 0}}])
    assert bag(got) == bag([{"int_field": None, "count": 1}, {"int_field": None, "other_field": None, "count": 2},
                            {"int_field": None, "other_field": None, "count": 2}, {"other_field": None, "count": 1},
                            {"int_field": 0, "count": 1}, {"other_field": 0, "count": 1}])


@pytest.mark.parametrize("field,window", [("$noField", [UNBOUNDED, CURRENT]), ("$price", [UNBOUNDED, -1])],
                         ids=["missing-field", "no-documents"])
def test_empty_window_defaults(db, field, window):
    """empty_window.js: over a missing field or a window holding no document, $stdDevPop, $avg,
    $min and $max are null and $sum is 0."""
    make_coll(db, "ew", "regular", [{"_id": 0, "ticker": "MDB", "price": 1000, "ts": dt.datetime(2024, 1, 1)}])
    output = {f"d{op}": {f"${op}": field, "window": {"documents": window}} for op in ("stdDevPop", "sum", "avg", "min", "max")}
    [doc] = aggregate(db, "ew", [swf(output, {"ts": 1})])
    assert (doc["dstdDevPop"], doc["davg"], doc["dmin"], doc["dmax"]) == (None, None, None, None)
    assert canon(doc["dsum"]) == canon(0)


@pytest.mark.parametrize("partitioned", [False, True])
@pytest.mark.parametrize("lower,upper", [(UNBOUNDED, UNBOUNDED), (UNBOUNDED, CURRENT), (-1, CURRENT), (-1, 1)])
def test_count_windows(db, partitioned, lower, upper):
    """count.js: $count over document windows, unpartitioned and split odd/even (ints)."""
    make_coll(db, "cnt", "regular", _shift_docs())
    stage = swf({"a": {"$count": {}, "window": {"documents": [lower, upper]}}}, {"one": 1},
                "$partition" if partitioned else OMIT)
    got = aggregate(db, "cnt", [stage, {"$sort": {"_id": 1}}])
    n = 5 if partitioned else 10
    expected = []
    for d in _shift_docs():
        i = d["partitionSeq"] if partitioned else d["one"]
        a, b = window_slice(i, n, lower, upper)
        expected.append({**d, "a": b - a})
    assert seq(got) == seq(expected)


def test_covariance(db):
    """covariance.js: two documents give population covariance 0 then 1 and sample covariance null
    then 2; over random values, every document-based bounds matches the offline covariance over the
    same window (mean-centred products over n and n - 1; null below 1 / 2 documents)."""
    make_coll(db, "cov", "regular", [{"_id": 1, "x": 0, "y": 0}, {"_id": 2, "x": 2, "y": 2}])
    got = aggregate(db, "cov", [swf({
        "pop": {"$covariancePop": ["$x", "$y"], "window": {"documents": [UNBOUNDED, CURRENT]}},
        "samp": {"$covarianceSamp": ["$x", "$y"], "window": {"documents": [UNBOUNDED, CURRENT]}}}, {"_id": 1})])
    assert [(round(d["pop"], 2), d["samp"] if d["samp"] is None else round(d["samp"], 2)) for d in got] == [
        (0.0, None), (1.0, 2.0)]

    rng = random.Random(1234)
    docs = [{"_id": i, "x": rng.random(), "y": rng.random()} for i in range(1, 11)]
    make_coll(db, "cov2", "regular", docs)
    output = {}
    for k, b in enumerate(DOCUMENT_BOUNDS):
        output[f"p{k}"] = {"$covariancePop": ["$x", "$y"], "window": {"documents": b}}
        output[f"s{k}"] = {"$covarianceSamp": ["$x", "$y"], "window": {"documents": b}}
    got = aggregate(db, "cov2", [swf(output, {"_id": 1})])
    assert [d["_id"] for d in got] == list(range(1, 11))
    for i, d in enumerate(got):
        for k, (lo, hi) in enumerate(DOCUMENT_BOUNDS):
            a, b = window_slice(i, len(docs), lo, hi)
            xs, ys = [e["x"] for e in docs[a:b]], [e["y"] for e in docs[a:b]]
            n = len(xs)
            c = sum((x - sum(xs) / n) * (y - sum(ys) / n) for x, y in zip(xs, ys, strict=True)) if n else 0.0
            for field, want in ((f"p{k}", c / n if n >= 1 else None), (f"s{k}", c / (n - 1) if n >= 2 else None)):
                value = d[field]
                assert (value is None and want is None) or (
                    value is not None and want is not None and math.isclose(value, want, abs_tol=1e-9)), (i, lo, hi, field)


@pytest.mark.parametrize("op,expected", [("$first", 0), ("$last", 20)])
def test_first_last_defaults(db, op, expected):
    """first.js / last.js: the default window is the whole partition; an empty window gives null;
    a 'window' that is not an object is FailedToParse (on explain)."""
    make_coll(db, "fl", "regular", [{"x": x, "y": y} for x, y in [(0, 0), (1, 42), (2, 67), (3, 99), (4, 20)]])
    got = aggregate(db, "fl", [swf({"v": {op: "$y"}}, {"x": 1}), {"$unset": "_id"}])
    assert bag(got) == bag([{"x": x, "y": y, "v": expected} for x, y in [(0, 0), (1, 42), (2, 67), (3, 99), (4, 20)]])
    make_coll(db, "fl2", "regular", [{"x": x, "y": y} for x, y in [(1, 5), (2, 4), (3, 6), (4, 5)]])
    got = aggregate(db, "fl2", [swf({"v": {op: "$y", "window": {"documents": [-1, -1]}}}, {"x": 1}, "$x"),
                                {"$unset": "_id"}])
    assert bag(got) == bag([{"x": x, "y": y, "v": None} for x, y in [(1, 5), (2, 4), (3, 6), (4, 5)]])
    assert explain_error(db, "fl", [swf({"v": {op: "$y", "window": [0, 1]}}, {"x": 1})]).code == FAILED_TO_PARSE


# --------------------------------------------------------------------------------------------------
# n_accumulators.js, percentile.js (parse errors and special cases)


def _n_error_cases():
    """(id, spec, mongod's code, reason Tidemark differs or None) for n_accumulators.js's testError."""
    w = {"documents": [-1, 1]}
    cases = []
    for acc in ("$minN", "$maxN", "$firstN", "$lastN"):
        rows = [
            ("non-object", {acc: "non object"}, 5787900 if acc in ("$minN", "$maxN") else 5787801),
            ("no-function", {"window": w}, FAILED_TO_PARSE),
            ("no-input", {acc: {"n": 2}, "window": w}, 5787907),
            ("no-n", {acc: {"input": "$foo"}, "window": w}, 5787906),
            ("n-fraction", {acc: {"input": "$foo", "n": 2.1}, "window": w}, 5787903),
            ("window-array", {acc: {"input": "$foo", "n": 2.0}, "window": [-1, 1]}, FAILED_TO_PARSE),
            ("n-field-path", {acc: {"input": "$foo", "n": "$a"}, "window": w}, 5787902),
            ("n-partition-key", {acc: {"input": "$foo", "n": "$ticket"}, "window": w}, 5787902),
            ("n-zero", {acc: {"input": "$foo", "n": 0}, "window": w}, 5787908),
            ("n-negative", {acc: {"input": "$foo", "n": -100}, "window": w}, 5787908),
        ]
        cases += [(f"{acc}-{i}", spec, code, None) for i, spec, code in rows]
    s, o = {"foo": 1}, "$foo"
    for acc in ("$topN", "$bottomN"):
        rows = [
            ("non-object", {acc: "non object"}, 5788001),
            ("no-function", {"window": w}, FAILED_TO_PARSE),
            ("no-output", {acc: {"n": 2, "sortBy": s}, "window": w}, 5788004),
            ("no-n", {acc: {"output": o, "sortBy": s}, "window": w}, 5788003),
            ("n-fraction", {acc: {"output": o, "sortBy": s, "n": 2.1}, "window": w}, 5787903),
            ("no-sortBy", {acc: {"output": o, "n": 2}, "window": w}, 5788005),
            ("window-array", {acc: {"output": o, "sortBy": s, "n": 2.0}, "window": [-1, 1]}, FAILED_TO_PARSE),
            ("n-field-path", {acc: {"output": o, "sortBy": s, "n": "$a"}, "window": w}, 5787902),
            ("n-partition-key", {acc: {"output": o, "sortBy": s, "n": "$ticket"}, "window": w}, 5787902),
            ("n-zero", {acc: {"output": o, "sortBy": s, "n": 0}, "window": w}, 5787908),
            ("n-negative", {acc: {"output": o, "sortBy": s, "n": -100}, "window": w}, 5787908),
        ]
        cases += [(f"{acc}-{i}", spec, code, None) for i, spec, code in rows]
    for acc in ("$top", "$bottom"):
        rows = [
            ("non-object", {acc: "non object"}, 5788001),
            ("no-function", {"window": w}, FAILED_TO_PARSE),
            ("no-output", {acc: {"sortBy": s}, "window": w}, 5788004),
            ("with-n", {acc: {"n": 2, "output": o, "sortBy": s}, "window": w}, 5788002),
            ("no-sortBy", {acc: {"output": o}, "window": w}, 5788005),
        ]
        cases += [(f"{acc}-{i}", spec, code, None) for i, spec, code in rows]
    return cases


@pytest.mark.parametrize("spec,code", params(_n_error_cases()))
def test_n_accumulator_parse_errors(db, spec, code):
    """n_accumulators.js: the error code of each malformed $minN/$maxN/$firstN/$lastN/$topN/
    $bottomN/$top/$bottom window function (partitionBy '$ticket', sortBy ts)."""
    make_coll(db, "tickers", "regular", ticker_docs())
    err = agg_error(db, "tickers", [swf({"outputField": spec}, {"ts": 1}, "$ticket")])
    assert err.code == code


N_CONSTANT_SPECS = {
    "$minN": {"n": {"$add": [1, 2]}, "input": "$price"}, "$maxN": {"n": {"$add": [1, 2]}, "input": "$price"},
    "$firstN": {"n": {"$add": [1, 2]}, "input": "$price"}, "$lastN": {"n": {"$add": [1, 2]}, "input": "$price"},
    "$topN": {"n": {"$add": [1, 2]}, "output": "$price", "sortBy": {"price": 1}},
    "$bottomN": {"n": {"$add": [1, 2]}, "output": "$price", "sortBy": {"price": 1}},
}


@pytest.mark.parametrize("acc", list(N_CONSTANT_SPECS))
def test_n_accumulator_constant_n_expression(db, acc):
    """n_accumulators.js: an 'n' given as a constant expression ({$add: [1, 2]}) is accepted: three
    values over each ticker's whole partition."""
    make_coll(db, "tickers", "regular", ticker_docs())
    got = aggregate(db, "tickers", [swf({"res": {acc: N_CONSTANT_SPECS[acc]}}, {"_id": 1}, "$ticker")])
    assert len(got) == 20 and all(len(d["res"]) == 3 for d in got)


def _percentile_run(tickers, percentile, median, let=None):
    extra = {} if let is None else {"let": let}
    return aggregate(tickers.database, tickers.name, [
        {"$addFields": {"str": "hiya"}},
        swf({"runningPercentile": percentile, "runningMedian": median}, {"_id": 1})], **extra)


@pytest.mark.parametrize("shift,p,let", params([
    ("field-input", 0, [0.01, 0.99], None, None),
    ("expression-input", 42, [0.01, 0.99], None, None),
    ("p-from-let-variable", 0, "$$ps", {"ps": [0.01, 0.99]}, None),
]))
def test_percentile_and_median_values(tickers, shift, p, let):
    """percentile.js: over the whole collection p 0.01/0.99 give the minimum and maximum price and
    $median the middle one (doubles), with a field or an expression ({$add: [42, '$price']}) as
    input, and with 'p' taken from a 'let' variable."""
    inp = {"$add": [42, "$price"]} if shift else "$price"
    got = _percentile_run(tickers, {"$percentile": {"p": p, "input": inp, "method": "approximate"}},
                          {"$median": {"input": inp, "method": "approximate"}}, let)
    assert len(got) == 20
    for d in got:
        assert _doubles(d["runningPercentile"], [400.0 + shift, 500.0 + shift]), d
        assert _doubles(d["runningMedian"], 450.0 + shift), d


def test_percentile_and_median_removable_window(tickers):
    """percentile.js: over a [-1, 0] window p 0.9 is the larger and the median the smaller of the
    two prices (doubles)."""
    got = _percentile_run(tickers, {"$percentile": {"p": [0.9], "input": "$price", "method": "approximate"},
                                    "window": {"documents": [-1, 0]}},
                          {"$median": {"input": "$price", "method": "approximate"}, "window": {"documents": [-1, 0]}})
    prices = [d["price"] for d in sorted(ticker_docs(), key=lambda d: d["_id"])]
    assert [d["_id"] for d in got] == list(range(20))
    for i, d in enumerate(got):
        pair = prices[max(0, i - 1): i + 1]
        assert _doubles(d["runningPercentile"], [float(max(pair))]), d
        assert _doubles(d["runningMedian"], float(min(pair))), d


def test_percentile_and_median_null_over_non_numeric_input(tickers):
    """percentile.js: over a window holding no number $percentile gives one null per 'p'
    ([null, null]) and $median null."""
    got = _percentile_run(tickers, {"$percentile": {"p": [0.1, 0.6], "input": "$str", "method": "approximate"}},
                          {"$median": {"input": "$str", "method": "approximate"}})
    assert len(got) == 20
    assert all(d["runningPercentile"] == [None, None] and d["runningMedian"] is None for d in got)


def test_percentile_empty_window_is_array_of_nulls(tickers):
    """percentile.js (testAccumAgainstGroup's onNoResults [null, null]): a document-based window
    holding no document gives $percentile one null per 'p' and $median null."""
    got = aggregate(tickers.database, tickers.name, [swf({
        "p": {"$percentile": {"p": [0.1, 0.6], "input": "$price", "method": "approximate"},
              "window": {"documents": [UNBOUNDED, -1]}},
        "m": {"$median": {"input": "$price", "method": "approximate"}, "window": {"documents": [UNBOUNDED, -1]}},
    }, {"_id": 1})])
    assert (got[0]["p"], got[0]["m"]) == ([None, None], None)
    assert _doubles(got[1]["p"], [500.0, 500.0]) and _doubles(got[1]["m"], 500.0)


PERCENTILE_ERRORS = [  # (id, window function spec, code, let, reason Tidemark differs or None)
    ("pct-window-array", {"$percentile": {"p": [0.1, 0.6], "input": "$str", "method": "approximate"},
                          "window": [-1, 1]}, FAILED_TO_PARSE, None, None),
    ("median-window-array", {"$median": {"input": "$str", "method": "approximate"}, "window": [-1, 1]},
     FAILED_TO_PARSE, None, None),
    ("pct-window-empty-documents", {"$percentile": {"p": [0.6], "input": "$str", "method": "approximate"},
                                    "window": {"documents": []}}, FAILED_TO_PARSE, None, None),
    ("median-window-empty-documents", {"$median": {"input": "$str", "method": "approximate"},
                                       "window": {"documents": []}}, FAILED_TO_PARSE, None, None),
    ("pct-extra-argument", {"$percentile": {"p": [0.1, 0.6], "input": "$str", "method": "approximate"},
                            "extra": "extra"}, FAILED_TO_PARSE, None, None),
    ("median-extra-argument", {"$median": {"input": "$str", "method": "approximate"}, "extra": "extra"},
     FAILED_TO_PARSE, None, None),
    ("pct-not-object", {"$percentile": "not an object"}, 7429703, None, None),
    ("median-not-object", {"$median": "not an object"}, 7436100, None, None),
    ("pct-method-bool", {"$percentile": {"p": [0.1, 0.6], "input": "$str", "method": False}}, TYPE_MISMATCH, None, None),
    ("median-method-bool", {"$median": {"input": "$str", "method": False}}, TYPE_MISMATCH, None, None),
    ("pct-discrete", {"$percentile": {"p": [0.1, 0.6], "input": "$str", "method": "discrete"}}, BAD_VALUE, None, None),
    ("median-discrete", {"$median": {"input": "$str", "method": "discrete"}}, BAD_VALUE, None, None),
    ("pct-continuous", {"$percentile": {"p": [0.1, 0.6], "input": "$str", "method": "continuous"}}, BAD_VALUE, None, None),
    ("median-continuous", {"$median": {"input": "$str", "method": "continuous"}}, BAD_VALUE, None, None),
    ("pct-p-variable-not-numeric", {"$percentile": {"p": "$$ps", "input": "$price", "method": "continuous"}},
     BAD_VALUE, {"ps": "foo"}, None),
    ("pct-p-not-constant", {"$percentile": {"p": ["$price"], "input": "$str", "method": "continuous"}},
     BAD_VALUE, None, None),
    ("pct-no-p", {"$percentile": {"input": "$str", "method": "approximate"}}, 40414, None, None),
    ("median-with-p", {"$median": {"p": [0.1, 0.6], "input": "$str", "method": "approximate"}}, 40415, None, None),
]


@pytest.mark.parametrize("spec,code,let", params(PERCENTILE_ERRORS))
def test_percentile_parse_errors(db, spec, code, let):
    """percentile.js (7.0): malformed windows and extra arguments are FailedToParse; a non-object
    argument 7429703 ($percentile) / 7436100 ($median); a non-string method TypeMismatch; methods
    'discrete'/'continuous' (not available as window functions in 7.0) and a non-numeric or
    non-constant 'p' BadValue; a missing 'p' 40414 and a 'p' given to $median 40415."""
    make_coll(db, "tickers", "regular", ticker_docs())
    extra = {} if let is None else {"let": let}
    err = agg_error(db, "tickers", [swf({"outputField": spec}, {"ts": 1}, "$ticket")], **extra)
    assert err.code == code


# --------------------------------------------------------------------------------------------------
# sum.js (7.0: output paths), output_overwrites_existing_data.js


def _sum_docs():
    return [{"_id": i, "one": i, "two": i * 2, "simpleArr": [1, 2, 3], "docArr": [{"first": i}, {"second": 0}],
             "nestedDoc": {"1": {"2": {"3": 1}}}, "mixed": None if i % 2 else i} for i in range(10)]


def _tri(n):
    return n * (n + 1) // 2


RUNNING = {"documents": [UNBOUNDED, CURRENT]}
SUM_CASES = [  # (output spec, expected document for position n from the stored one)
    ({"a": {"$sum": 1, "window": RUNNING}}, lambda n, d: {**d, "a": n + 1}),
    ({"a": {"$sum": "$one", "window": RUNNING}}, lambda n, d: {**d, "a": _tri(n)}),
    ({"a": {"$sum": "$one", "window": RUNNING}, "b": {"$sum": "$two", "window": RUNNING}},
     lambda n, d: {**d, "a": _tri(n), "b": n + n * n}),
    ({"one": {"$sum": "$one", "window": RUNNING}}, lambda n, d: {**d, "one": _tri(n)}),
    ({"docArr.a": {"$sum": "$one", "window": RUNNING}},
     lambda n, d: {**d, "docArr": [{"first": n, "a": _tri(n)}, {"second": 0, "a": _tri(n)}]}),
    ({"docArr.1": {"$sum": "$one", "window": RUNNING}, "docArr.2": {"$sum": "$one", "window": RUNNING},
      "simpleArr.1": {"$sum": "$one", "window": RUNNING}},
     lambda n, d: {**d, "docArr": [{"first": n, "1": _tri(n), "2": _tri(n)}, {"second": 0, "1": _tri(n), "2": _tri(n)}],
                   "simpleArr": [{"1": _tri(n)}] * 3}),
    ({"a.b": {"$sum": "$one", "window": RUNNING}}, lambda n, d: {**d, "a": {"b": _tri(n)}}),
    ({"a": {"$sum": "$one", "window": RUNNING}, "newField.a": {"$sum": "$two", "window": RUNNING},
      "simpleArr.0.b": {"$sum": "$one", "window": RUNNING}, "nestedDoc.1.2.a": {"$sum": "$one", "window": RUNNING}},
     lambda n, d: {**d, "a": _tri(n), "newField": {"a": n + n * n}, "simpleArr": [{"0": {"b": _tri(n)}}] * 3,
                   "nestedDoc": {"1": {"2": {"3": 1, "a": _tri(n)}}}}),
    ({"one": {"$sum": "$one", "window": {"documents": [UNBOUNDED, 1]}}},
     lambda n, d: {**d, "one": _tri(n) + (n + 1 if n < 9 else 0)}),
    ({"one": {"$sum": "$one", "window": {"documents": [UNBOUNDED, -1]}}}, lambda n, d: {**d, "one": _tri(n) - n}),
    ({"mixedTypeSum": {"$sum": "$mixed", "window": RUNNING}},
     lambda n, d: {**d, "mixedTypeSum": sum(i for i in range(n + 1) if i % 2 == 0)}),
]


@pytest.mark.parametrize("output,expected", SUM_CASES, ids=[
    "count", "one-field", "two-fields", "overwrite", "array-subfield", "numeric-subfields-in-arrays", "nested-field",
    "mixed-paths", "lookahead", "behind-current", "non-numeric-ignored"])
def test_sum_output_paths(db, output, expected):
    """sum.js: running $sum (ints) written to new, existing, dotted and array-element paths (a path
    through an array sets the field in every element; scalars there become documents), over
    look-ahead and behind-current non-removable windows; non-numeric values do not count."""
    make_coll(db, "sums", "regular", _sum_docs())
    got = aggregate(db, "sums", [{"$sort": {"_id": 1}}, swf(output, {"one": 1})])
    assert seq(got) == seq([expected(n, d) for n, d in enumerate(_sum_docs())])


def test_output_overwrites_existing_data(db):
    """output_overwrites_existing_data.js: an output field replaces an existing object value
    wholesale; a dotted output path adds to it, keeping its other fields in order."""
    got = list(db.aggregate([{"$documents": [{"_id": 0, "obj": {"k1": "v1", "k2": "v2"}}]},
                             swf({"obj": {"$last": {"newSubObject": 1}}}, {"_id": 1})]))
    assert got == [{"_id": 0, "obj": {"newSubObject": 1}}]
    got = list(db.aggregate([{"$documents": [{"_id": 0, "obj": {"k1": "v1", "k2": "v2"}}]},
                             swf({"obj.subPath": {"$last": 1}}, {"_id": 1})]))
    assert [list(d.items()) for d in got] == [[("_id", 0), ("obj", {"k1": "v1", "k2": "v2", "subPath": 1})]]
    assert list(got[0]["obj"]) == ["k1", "k2", "subPath"]


# --------------------------------------------------------------------------------------------------
# parse.js


def _ww(spec):
    """runWindowFunction: one output 'v' with a single-field sortBy."""
    return swf({"v": spec}, {"ts": 1})


EXPR = {"$add": [2, 2]}
PARSE_CASES = [  # (id, stage, code or None = parses, message fragment, extra command fields, reason Tidemark differs)
    ("spec-not-object", {"$setWindowFields": "invalid"}, FAILED_TO_PARSE, None, {}, None),
    ("sortBy-not-object", {"$setWindowFields": {"sortBy": "invalid"}}, TYPE_MISMATCH, None, {}, None),
    ("output-not-object", {"$setWindowFields": {"output": "invalid"}}, TYPE_MISMATCH, None, {}, None),
    ("partitionBy-bad-operator", swf({}, partition_by={"$notAnOperator": 1}), INVALID_PIPELINE_OPERATOR, None, {}, None),
    ("partitionBy-NOW", swf({}, partition_by="$$NOW"), None, None, {}, None),
    ("partitionBy-let-variable", swf({}, partition_by="$$myobj.a"), None, None, {"let": {"myobj": {"a": 456}}}, None),
    ("unknown-parameter", {"$setWindowFields": {"what_is_this": 1}}, 40415, None, {}, None),
    ("full-spec", swf({"a": {"$sum": 1, "window": RUNNING}}, {"city": 1}, "$state"), None, None, {}, None),
    ("sum-default-window", _ww({"$sum": "$a"}), None, None, {}, None),
    ("sum-unbounded-documents", _ww({"$sum": "$a", "window": {"documents": [UNBOUNDED, UNBOUNDED]}}), None, None, {},
     None),
    ("unknown-argument", _ww({"abcde": 1}), FAILED_TO_PARSE, None, {}, None),
    ("documents-bounded", _ww({"$sum": "$a", "window": {"documents": [-2, 4]}}), None, None, {}, None),
    ("documents-left-bounded", _ww({"$sum": "$a", "window": {"documents": [-3, UNBOUNDED]}}), None, None, {}, None),
    ("documents-right-bounded", _ww({"$sum": "$a", "window": {"documents": [UNBOUNDED, 5]}}), None, None, {}, None),
    ("max-left-bounded", _ww({"$max": "$a", "window": {"documents": [-3, UNBOUNDED]}}), None, None, {}, None),
    ("range-unbounded", _ww({"$sum": "$a", "window": {"range": [UNBOUNDED, UNBOUNDED]}}), None, None, {}, None),
    ("range-bounded", _ww({"$sum": "$a", "window": {"range": [-2, 4]}}), None, None, {}, None),
    ("range-left-bounded", _ww({"$sum": "$a", "window": {"range": [-3, UNBOUNDED]}}), None, None, {}, None),
    ("range-right-bounded", _ww({"$sum": "$a", "window": {"range": [UNBOUNDED, 5]}}), None, None, {}, None),
    ("range-decimal-long", _ww({"$sum": "$a", "window": {"range": [Decimal128("1.42"), Int64(5)]}}), None, None, {},
     None),
    ("range-hours", _ww({"$sum": "$a", "window": {"range": [-3, UNBOUNDED], "unit": "hour"}}), None, None, {}, None),
    ("documents-constant-expressions", _ww({"$sum": "$a", "window": {"documents": [EXPR, EXPR]}}), None, None, {},
     None),
    ("range-constant-expressions", _ww({"$sum": "$a", "window": {"range": [EXPR, EXPR]}}), None, None, {}, None),
    ("range-unit-constant-expressions", _ww({"$sum": "$a", "window": {"range": [EXPR, EXPR], "unit": "hour"}}),
     None, None, {}, None),
    ("documents-current-as-expression", _ww({"$sum": "$a", "window": {"documents": [{"$const": "current"}, 3]}}),
     FAILED_TO_PARSE, None, {}, None),
    ("range-outside-window", _ww({"$sum": "$a", "range": [{"$const": "current"}, 3]}), FAILED_TO_PARSE, None, {},
     None),
]
for _kind, _bounds in [("documents", [1, -1]), ("range", [1, -1]), ("unit", [1, -1]),
                       ("documents", [CURRENT, -1]), ("range", [CURRENT, -1]), ("unit", [CURRENT, -1]),
                       ("documents", [1, CURRENT]), ("range", [1, CURRENT]), ("unit", [1, CURRENT])]:
    _win = {"documents": _bounds} if _kind == "documents" else {"range": _bounds}
    if _kind == "unit":
        _win["unit"] = "day"
    PARSE_CASES.append((f"backwards-{_kind}-{_bounds[0]}-{_bounds[1]}", _ww({"$sum": "$a", "window": _win}),
                        5339900, None, {}, None))
PARSE_CASES += [
    ("no-sort-documents-unbounded", swf({"v": {"$sum": "$a", "window": {"documents": [UNBOUNDED, UNBOUNDED]}}}),
     None, None, {}, None),
    ("no-sort-documents-current", swf({"v": {"$sum": "$a", "window": RUNNING}}), 5339901, None, {}, None),
]
for _unit in (OMIT, "second"):
    for _hi in (UNBOUNDED, CURRENT):
        _win = {"range": [UNBOUNDED, _hi]} if _unit is OMIT else {"range": [UNBOUNDED, _hi], "unit": _unit}
        _tag = f"{_hi}{'' if _unit is OMIT else '-unit'}"
        PARSE_CASES += [
            (f"range-no-sort-{_tag}", swf({"v": {"$sum": "$a", "window": _win}}), 5339902, None, {}, None),
            (f"range-compound-sort-{_tag}", swf({"v": {"$sum": "$a", "window": _win}}, {"a": 1, "b": 1}),
             5339902, None, {}, None),
        ]
PARSE_CASES += [(f"running-{op}", _ww({op: "$a", "window": RUNNING}), None, None, {}, None)
                for op in ("$sum", "$avg", "$max", "$min")]
PARSE_CASES += [
    ("not-a-function-b", swf({"a": {"b": {"$sum": "$a"}}}), FAILED_TO_PARSE,
     "Expected a $-prefixed window function, b", {}, None),
    ("not-a-function-sum", swf({"total": {"sum": "$x", "window": {"documents": [-1, 1]}}}), FAILED_TO_PARSE,
     "Expected a $-prefixed window function, sum", {}, None),
    ("empty-output-field", swf({"total": {}}), FAILED_TO_PARSE, "Expected a $-prefixed window function", {},
     None),
    ("mergeObjects", swf({"v": {"$mergeObjects": "$a"}}), FAILED_TO_PARSE,
     "Unrecognized window function, $mergeObjects", {}, None),
    ("accumulator", swf({"v": {"$accumulator": "$a"}}), FAILED_TO_PARSE,
     "Unrecognized window function, $accumulator", {}, None),
    ("misspelled", swf({"total": {"$summ": "$x", "window": RUNNING}}), FAILED_TO_PARSE,
     "Unrecognized window function, $summ", {}, None),
    ("misspelled-window", swf({"total": {"$summ": "$x", "windoww": RUNNING}}), FAILED_TO_PARSE,
     "Unrecognized window function, $summ", {}, None),
]


@pytest.mark.parametrize("stage,code,message,extra", params(PARSE_CASES))
def test_parse(db, stage, code, message, extra):
    """parse.js: which $setWindowFields specs parse (types of the stage's fields, partitionBy
    expressions and variables, window bounds that are numbers, constant expressions, 'unbounded' and
    'current', document/range/time bounds) and the code (and message where the jstest checks it) of
    those that do not: backwards bounds 5339900, bounds needing a sortBy 5339901/5339902, unknown or
    missing window functions. Run on an empty collection, as the jstest."""
    db.create_collection("parse")
    if code is None:
        aggregate(db, "parse", [stage], **extra)
        return
    err = agg_error(db, "parse", [stage], **extra)
    assert err.code == code
    if message is not None:
        assert message in str(err)


def test_parse_on_a_document(db):
    """parse.js (after inserting {}): {$max: {mergeObjects: {}}} (an object expression) is a valid
    window function input."""
    make_coll(db, "parse", "regular", [{}])
    assert aggregate(db, "parse", [swf({"v": {"$max": {"mergeObjects": {}}}})]) == [
        {"_id": aggregate(db, "parse", [])[0]["_id"], "v": {"mergeObjects": {}}}]


def test_parse_conflicting_output_paths(db):
    """parse.js: output paths 'a' and 'a.b' conflict: 6307900 'specification contains two
    conflicting paths'."""
    make_coll(db, "parse", "regular", [{}])
    err = agg_error(db, "parse", [swf({"a": {"$sum": 1}, "a.b": {"$sum": 1}})])
    assert err.code == 6307900
    assert "specification contains two conflicting paths" in str(err)
