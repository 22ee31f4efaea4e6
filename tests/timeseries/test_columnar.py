"""Pure parts of the columnar path: raw column parsing and which pipelines it accepts."""

import datetime as dt

import bson
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.query.match import parse_filter
from tidemark.timeseries import columnar, rawcolumns

GROUP = {"$group": {"_id": {"$dateTrunc": {"date": "$t", "unit": "minute"}}, "m": {"$max": "$x"}}}


def test_dense_double_and_date_columns_parse_to_arrays():
    for n in (1, 10, 11, 100, 101, 1000):
        raw = bson.encode({str(i): i / 7 for i in range(n)})
        assert rawcolumns.column_length(raw) == n
        assert rawcolumns.parse_column(raw, n, 0x01).tolist() == [i / 7 for i in range(n)]
    raw = bson.encode({"0": dt.datetime(2016, 1, 1), "1": dt.datetime(2016, 1, 1, 0, 0, 1, 5000)})
    assert rawcolumns.parse_column(raw, 2, 0x09).tolist() == [1451606400000, 1451606401005]


def test_columns_of_another_shape_are_refused():
    assert rawcolumns.parse_column(bson.encode({"0": 1.0, "2": 2.0}), 2, 0x01) is None  # a gap
    assert rawcolumns.parse_column(bson.encode({"0": 1.0, "1": 2}), 2, 0x01) is None  # an int
    assert rawcolumns.parse_column(bson.encode({"1": 1.0, "0": 2.0}), 2, 0x01) is None  # key order
    assert rawcolumns.parse_column(bson.encode({"0": 1.0, "1": 2.0}), 2, 0x09) is None  # not dates


def test_tsbs_group_shapes_are_planned():
    node = parse_filter({"t": {"$gte": dt.datetime(2016, 1, 1)}, "m.host": {"$in": ["a"]}, "x": {"$gt": 90}})
    plan = columnar.plan(node, [GROUP, {"$sort": {"_id": 1}}], "t", "m")
    assert plan is not None and plan.unit_ms == 60_000 and plan.columns == ["x"]
    keyed = {"$group": {"_id": {"time": {"$dateTrunc": {"date": "$t", "unit": "hour"}}, "h": "$m.host"},
                        "a": {"$avg": "$x"}, "n": {"$count": {}}}}
    assert columnar.plan(None, [keyed], "t", "m") is not None


def test_other_shapes_keep_the_generic_path():
    assert columnar.plan(None, [{"$group": {"_id": "$x", "m": {"$max": "$x"}}}], "t", "m") is None
    assert columnar.plan(None, [{"$group": {"_id": None, "m": {"$push": "$x"}}}], "t", "m") is None
    tz = {"$group": {"_id": {"$dateTrunc": {"date": "$t", "unit": "hour", "timezone": "Europe/Paris"}}}}
    assert columnar.plan(None, [tz], "t", "m") is None
    assert columnar.plan(parse_filter({"x": {"$exists": True}}), [GROUP], "t", "m") is None
    assert columnar.plan(None, [{"$sort": {"t": 1}}, GROUP], "t", "m") is None


def test_a_stored_bucket_is_walked_without_decoding_its_columns():
    bucket = {"_id": 1, "control": {"version": 1}, "meta": "m", "data": {"t": {"0": 1.5}, "x": {"0": 2.5}}}
    raw = bson.encode(bucket)
    top = rawcolumns.elements(raw)
    assert list(top) == ["_id", "control", "meta", "data"]
    assert rawcolumns.element_value(raw, top["meta"]) == "m"
    assert rawcolumns.raw_columns(raw, ["x"]) == {"x": bson.encode({"0": 2.5})}


@settings(max_examples=300, deadline=None)
@given(k=st.integers(1, 6), batches=st.lists(st.lists(st.integers(-5, 40), max_size=12), max_size=6))
def test_topk_offer_many_keeps_what_offering_one_at_a_time_keeps(k, batches):
    """``TopK.offer_many`` (one partition per batch) leaves the k largest (with repeats) that ``offer``
    one value at a time leaves, so ``floor`` and ``done_before`` answer alike."""
    one, many = columnar.TopK(k, 60_000), columnar.TopK(k, 60_000)
    for batch in batches:
        for value in batch:
            one.offer(value)
        many.offer_many(np.asarray(batch, dtype=np.int64))
        assert sorted(many._heap) == sorted(one._heap)
        assert many.floor() == one.floor()
