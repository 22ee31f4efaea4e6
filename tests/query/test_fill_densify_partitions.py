"""$fill without sortBy and its mongod error codes; $densify "full" bounds over partitions (expected
values from jstests/aggregation/sources/densify/partitions.js)."""

import datetime as dt

import pytest

from tidemark.protocol.errors import MongoError
from tidemark.query.pipeline import run_pipeline

D = dt.datetime


def run(pipeline, docs):
    return list(run_pipeline(pipeline, [dict(d) for d in docs]))


def test_fill_locf_needs_no_sort_by_and_follows_the_input_order():
    docs = [{"i": i, **({"v": v} if v is not None else {})} for i, v in enumerate([None, 3, None, None, 5, None])]
    out = run([{"$fill": {"output": {"v": {"method": "locf"}}}}], docs)
    assert [(d["i"], d["v"]) for d in out] == [(0, None), (1, 3), (2, 3), (3, 3), (4, 5), (5, 5)]
    parted = [{"g": g, "v": v} for g, v in [("b", 1), ("a", 2), ("b", None), ("a", None)]]
    out = run([{"$fill": {"partitionBy": "$g", "output": {"v": {"method": "locf"}}}}], parted)
    assert sorted((d["g"], d["v"]) for d in out) == [("a", 2), ("a", 2), ("b", 1), ("b", 1)]


def test_fill_value_alone_keeps_the_input_order_even_with_sort_by():
    docs = [{"t": 3}, {"t": 1, "v": 7}, {"t": 2}]
    out = run([{"$fill": {"sortBy": {"t": 1}, "output": {"v": {"value": 0}}}}], docs)
    assert [(d["t"], d["v"]) for d in out] == [(3, 0), (1, 7), (2, 0)]


@pytest.mark.parametrize("spec,code", [
    ({"output": {}}, 6050203),
    ({"output": {"v": 1}}, 6050200),
    ({"output": {"v": {"method": "locf", "value": 1}}}, 6050201),
    ({"output": {"v": {"method": "spline"}}}, 6050202),
    ({"partitionBy": "$a", "partitionByFields": ["a"], "output": {"v": {"method": "locf"}}}, 6050204),
    ({"output": {"v": {"method": "linear"}}}, 605001),
    ({"sortBy": {"a": 1, "b": 1}, "output": {"v": {"method": "linear"}}}, 605001),
    ({"output": {"v": {"bogus": 1}}}, 40415),
    ({"foo": 1, "output": {"v": {"value": 1}}}, 40415),
    (5, 9),
])
def test_fill_errors(spec, code):
    with pytest.raises(MongoError) as e:
        run([{"$fill": spec}], [])
    assert e.value.code == code


def by_partition(out, field="val", part="part"):
    got: dict = {}
    for d in out:
        got.setdefault(d[part], []).append(d[field])
    return {k: sorted(v) for k, v in got.items()}


def test_densify_full_fills_every_partition_up_to_the_global_maximum():
    docs = [{"val": 0, "part": 0}, {"val": 0, "part": 1}, {"val": 10, "part": 2}]
    out = run([{"$densify": {"field": "val", "range": {"step": 2, "bounds": "full"}, "partitionByFields": ["part"]}}],
              docs)
    assert by_partition(out) == {p: [0, 2, 4, 6, 8, 10] for p in (0, 1, 2)}
    docs = [{"val": 0, "part": 0}, {"val": 4, "part": 0}, {"val": 0, "part": 1}, {"val": 5, "part": 1},
            {"val": 10, "part": 2}]
    out = run([{"$densify": {"field": "val", "range": {"step": 2, "bounds": "full"}, "partitionByFields": ["part"]}}],
              docs)
    assert by_partition(out) == {0: [0, 2, 4, 6, 8, 10], 1: [0, 2, 4, 5, 6, 8, 10], 2: [0, 2, 4, 6, 8, 10]}


def test_densify_full_with_dates_fills_every_partition_up_to_the_global_maximum():
    docs = [{"val": D(2021, 1, 1), "part": 0}, {"val": D(2021, 1, 1), "part": 1}, {"val": D(2031, 1, 1), "part": 2},
            {"val": D(2025, 1, 1), "part": 3}]
    out = run([{"$densify": {"field": "val", "range": {"step": 2, "unit": "year", "bounds": "full"},
                             "partitionByFields": ["part"]}}], docs)
    years = [D(2021 + k, 1, 1) for k in range(0, 11, 2)]
    assert by_partition(out) == {p: years for p in (0, 1, 2, 3)}


def test_densify_explicit_bounds_keep_the_upper_bound_exclusive():
    docs = [{"val": 0, "part": 0}, {"val": 10, "part": 1}]
    out = run([{"$densify": {"field": "val", "range": {"step": 2, "bounds": [2, 5]}, "partitionByFields": ["part"]}}],
              docs)
    assert by_partition(out) == {0: [0, 2, 4], 1: [2, 4, 10]}


def test_densify_over_decimal_and_long_values_and_bounds():
    from bson import Decimal128, Int64

    out = run([{"$densify": {"field": "x", "range": {"step": Decimal128("1"), "bounds": "full"}}}],
              [{"x": Decimal128("0")}, {"x": Int64(3)}])
    assert [float(str(d["x"])) for d in out] == [0.0, 1.0, 2.0, 3.0]
    out = run([{"$densify": {"field": "x", "range": {"step": Int64(2), "bounds": [Int64(0), Int64(5)]}}}], [])
    assert [d["x"] for d in out] == [0, 2, 4]
    # mongod 7.0's RangeStatement::parse (densify/decimal.js): explicit bounds and step of one type, else 5876900
    with pytest.raises(MongoError) as mixed:
        run([{"$densify": {"field": "x", "range": {"step": 2, "bounds": [Int64(0), Decimal128("5")]}}}], [])
    assert mixed.value.code == 5876900
