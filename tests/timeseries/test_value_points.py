"""bucketdoc.value_points against its model: a query value's points are those ``meta_points`` finds in
it (a plain value: its one point, taken without the walk), each under the query's path; none when it
holds an array or has no leaf of a point type."""

import datetime as dt

from bson import Decimal128, Int64, ObjectId
from hypothesis import given
from hypothesis import strategies as st

from tidemark.timeseries.bucketdoc import meta_points, value_points

leaves = st.one_of(st.text(max_size=3), st.booleans(), st.integers(-2, 2), st.builds(Int64, st.integers(-2, 2)),
                   st.floats(allow_nan=True), st.just(None), st.just(ObjectId("650000000000000000000001")),
                   st.just(Decimal128("1")), st.just(dt.datetime(2024, 1, 1)))
values = st.recursive(leaves, lambda inner: st.one_of(st.lists(inner, max_size=2),
                                                      st.dictionaries(st.sampled_from("abc"), inner, max_size=3)),
                      max_leaves=6)


@given(path=st.lists(st.sampled_from(["h", "d"]), max_size=2).map(tuple), value=values)
def test_value_points_are_the_points_meta_points_finds_under_the_path(path, value):
    points = meta_points(value)
    assert value_points(path, value) == ([(path + sub, kind, leaf) for sub, kind, leaf in points] if points else [])
    if type(value) in (str, ObjectId, bool):
        assert value_points(path, value) == [(path, type(value), value)]
