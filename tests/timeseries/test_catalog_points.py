"""CollectionState keeps its live buckets by meta point (catalog.py): after any sequence of buckets
entering memory (new, or replacing a bucket object of the same _id) and leaving it, ``points`` holds
exactly the points of the live buckets' metas, ``array_metas`` counts the live metas holding an array,
and ``buckets_at`` finds every live bucket holding a point of the chosen alternative; the points'
bytes count in the catalog's meter exactly while their buckets are live."""

from types import SimpleNamespace

from bson import ObjectId
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.timeseries.bucketdoc import MISSING, meta_points
from tidemark.timeseries.catalog import POINT_BYTES, CollectionState
from tidemark.timeseries.options import TimeseriesOptions

leaves = st.sampled_from(["a", "b", ObjectId("650000000000000000000001"), True, 1, 1.5, None])
metas = st.one_of(leaves, st.just(MISSING), st.dictionaries(st.sampled_from("hd"), leaves, max_size=2),
                  st.lists(leaves, min_size=1, max_size=2), st.fixed_dictionaries({"h": st.lists(leaves, max_size=1)}))
steps = st.lists(st.tuples(st.sampled_from(["enter", "leave"]), st.integers(0, 5), metas), max_size=40)


@settings(max_examples=200, deadline=None)
@given(steps)
def test_the_points_are_those_of_the_live_buckets(steps):
    state = CollectionState("db.system.buckets.c", TimeseriesOptions.__new__(TimeseriesOptions))
    objects: dict[int, SimpleNamespace] = {}  # the last bucket object made per _id
    for action, bid, meta in steps:
        if action == "enter":
            objects[bid] = SimpleNamespace(id=bid, meta=meta)
            state.enter(objects[bid])
        elif bid in objects:
            state.leave(objects[bid])
    expected: dict = {}
    arrays = 0
    for bucket in state.live.values():
        points = meta_points(bucket.meta)
        if points is None:
            arrays += 1
            continue
        for point in points:
            expected.setdefault(point, {})[bucket.id] = bucket
    assert state.points == expected
    assert state.array_metas == arrays
    # (the points' memory counts in the catalog's meter while their buckets are live)
    assert state.meter.bytes == POINT_BYTES * sum(len(held) for held in expected.values())
    for point, held in expected.items():
        found = state.buckets_at([(point,), (point, ("zz",), str, "none")])
        assert found is None if arrays else sorted(b.id for b in found) == sorted(held)
