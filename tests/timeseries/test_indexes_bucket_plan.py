"""Choosing a bucket index for a read on a time-series view (spec §5.2, §7): from the one bucket-filter
derivation of the user filter."""

import datetime as dt

import pytest

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.match import parse_filter
from tidemark.timeseries import indexes as ix
from tidemark.timeseries.filters import derive
from tidemark.timeseries.view import choose_index

T, M = "t", "m"
D = dt.datetime(2024, 1, 1, 12)
SPECS = [*ix.default_index_specs(T, M), ix.to_bucket_index_spec({"key": {"x": 1}, "name": "x_1"}, T, M)]


def plan_for(flt, hint=None):
    return choose_index(SPECS, derive(parse_filter(flt), T, M, 3600), hint, T, M)


def test_meta_equality_uses_the_default_meta_time_index():
    plan = plan_for({M: "a", "x": {"$gt": 3}})
    assert plan.kind == "IXSCAN" and plan.index["name"] == "m_1_t_1"


def test_meta_and_time_range_bound_the_second_key_component():
    plan = plan_for({M: "a", T: {"$gte": D}})
    assert plan.index["name"] == "m_1_t_1"
    (interval,) = plan.bounds_desc["control.min.t"]
    # bucket start >= D - bucketMaxSpanSeconds (2024-01-01T11:00Z), open to the dates' last
    assert interval == "[new Date(1704106800000), new Date(9223372036854775807)]"


def test_filter_without_meta_or_time_scans():
    assert plan_for({"x": 5}) is None
    assert plan_for({}) is None


def test_hint_by_user_key_pattern_forces_that_index():
    assert plan_for({"x": 5}, hint={"x": 1}).index["name"] == "x_1"


def test_hint_of_unknown_index_is_bad_value():
    with pytest.raises(MongoError) as info:
        plan_for({}, hint="nope")
    assert info.value.code == ErrorCode.BadValue


def test_time_equality_bounds_bucket_start_on_both_sides():
    flt = derive(parse_filter({T: D}), T, M, 3600).mql
    assert {"control.min.t": {"$gte": D - dt.timedelta(hours=1)}} in flt["$and"]
    assert {"control.min.t": {"$lte": D}} in flt["$and"]
    assert {"control.max.t": {"$gte": D}} in flt["$and"]


def test_an_or_of_one_meta_paths_equalities_bounds_it_as_their_in():
    bfilter = derive(parse_filter({"$or": [{M: 1}, {M: 2}]}), T, M, 3600)
    assert bfilter.index_filter() == {"meta": {"$in": [1, 2]}}
    assert derive(parse_filter({"$or": [{M: 1}, {"x": 2}]}), T, M, 3600).index_filter() is None
    assert bfilter.mql == {"$or": [{"meta": 1}, {"meta": 2}]} and bfilter.exact
