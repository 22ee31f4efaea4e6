"""Time-series index edge cases as mongod 7.0 answers them (issue 25, "Time-series indexes" 1-4):
sparse and geo indexes leave buckets out of hinted reads, measurement arrays under an index and
non-point values under a measurement 2dsphere index are refused, key order names another index,
``originalSpec`` only where mongod keeps it, a non-object partial filter is 10065.
(jstests/core/timeseries: timeseries_sparse_index.js, timeseries_metric_index_2dsphere.js,
timeseries_metric_index_ascending_descending.js.)"""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import BulkWriteError, OperationFailure, WriteError

T0 = dt.datetime(2022, 4, 1)

# unique metas: one bucket each (timeseries_sparse_index.js)
SPARSE_DOCS = [
    {"_id": 0, "tm": T0, "mm": {"tag": "a", "loc": {"type": "Point", "coordinates": [3, 3]}}, "x": 1},
    {"_id": 1, "tm": T0, "mm": {"tag": "b"}, "y": 1},
    {"_id": 2, "tm": T0, "mm": {"tag": "c"}, "x": 1, "y": 1},
]


def _ts(db, name="c"):
    db.create_collection(name, timeseries={"timeField": "tm", "metaField": "mm"})
    return db[name]


def _hinted_counts(db, coll, name):
    """(measurements through the view, buckets through system.buckets), both hinted."""
    return (len(list(coll.find().hint(name))),
            len(list(db[f"system.buckets.{coll.name}"].find().hint(name))))


def _write_code(fn):
    with pytest.raises((WriteError, BulkWriteError, OperationFailure)) as info:
        fn()
    err = info.value
    if isinstance(err, BulkWriteError):
        return err.details["writeErrors"][0]["code"], err.details["writeErrors"][0]["errmsg"]
    return err.code, err.details.get("errmsg")


# ------------------------------------------------------------------------------------------- item 1


@pytest.mark.parametrize(("key", "expected"), [
    ([("mm.tag", 1), ("mm.loc", "2dsphere")], 1),
    ([("mm.tag", 1)], 3),
    ([("mm.abc", 1)], 0),
    ([("tm", 1), ("mm.tag", 1)], 3),
    ([("mm.abc", 1), ("tm", -1)], 3),
])
@pytest.mark.commands("createIndexes", "find")
def test_sparse_index_hinted_read_returns_only_indexed_buckets(db, key, expected):
    coll = _ts(db)
    coll.insert_many(SPARSE_DOCS)
    name = coll.create_index(key, sparse=True, **({"2dsphereIndexVersion": 3} if len(key) == 2 and
                                                  key[1][1] == "2dsphere" else {}))
    assert _hinted_counts(db, coll, name) == (expected, expected)


def test_sparse_index_leaves_out_in_memory_buckets_too(db):
    # created before the inserts: the buckets are still in memory (no index entries yet) when read
    coll = _ts(db)
    name = coll.create_index([("mm.abc", 1)], sparse=True)
    coll.insert_many(SPARSE_DOCS)
    coll.insert_one({"tm": T0, "mm": {"tag": "z", "abc": 5}})
    assert _hinted_counts(db, coll, name) == (1, 1)


def test_compound_2d_meta_index_leaves_out_buckets_without_the_location(db):
    coll = _ts(db)
    coll.insert_many([{"tm": T0, "mm": {"tag": "a", "loc": [3, 3]}}, {"tm": T0, "mm": {"tag": "b"}}])
    name = coll.create_index([("mm.loc", "2d"), ("mm.tag", 1)])
    assert _hinted_counts(db, coll, name) == (1, 1)


def test_sparse_on_measurements_is_still_refused(db):
    coll = _ts(db)
    for key in ([("x", 1)], [("tm", 1), ("x", 1)], [("x", 1), ("mm.loc", "2dsphere")]):
        with pytest.raises(OperationFailure) as info:
            coll.create_index(key, sparse=True)
        assert info.value.code == 72


# ------------------------------------------------------------------------------------------- item 2


@pytest.mark.parametrize("doc", [{"x": {"y": [True]}}, {"x": [{"y": False}]}, {"x": {"y": []}}])
def test_array_under_an_indexed_measurement_is_refused(db, doc):
    coll = _ts(db)
    coll.insert_one({"tm": T0, "mm": {"tag": "d"}, "x": {"y": 4}})
    coll.create_index("x.y")
    code, msg = _write_code(lambda: coll.insert_one({"tm": T0, "mm": {"tag": "d"}, **doc}))
    assert (code, msg) == (5930501, "Indexed measurement field contains an array value")
    assert coll.count_documents({}) == 1


def test_unordered_insert_refuses_only_the_measurements_with_arrays(db):
    # an array inside the indexed value ({x: {z: [2]}} under {x: 1}) is not on the indexed path
    coll = _ts(db)
    coll.create_index("x")
    with pytest.raises(BulkWriteError) as info:
        coll.insert_many([{"tm": T0, "x": 1}, {"tm": T0, "x": [1]}, {"tm": T0, "x": {"z": [2]}},
                          {"tm": T0, "x": []}], ordered=False)
    assert [(e["index"], e["code"]) for e in info.value.details["writeErrors"]] == [(1, 5930501), (3, 5930501)]
    assert coll.count_documents({}) == 2


def test_arrays_elsewhere_and_under_the_time_field_index_are_accepted(db):
    coll = _ts(db)
    coll.create_index("x.y")
    coll.create_index("tm")
    coll.insert_one({"tm": T0, "x": {"y": 5, "z": [1]}, "w": [1, 2]})
    assert coll.count_documents({}) == 1


def test_index_build_over_stored_arrays_fails(db):
    coll = _ts(db)
    coll.insert_one({"tm": T0, "x": {"y": [1]}})
    with pytest.raises(OperationFailure) as info:
        coll.create_index("x.y")
    assert info.value.code == 5930501
    assert [ix["name"] for ix in coll.list_indexes()] == ["mm_1_tm_1"]


json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=3))
values = st.recursive(json_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=2), st.dictionaries(st.sampled_from(["y", "z"]), inner, max_size=2)), max_leaves=5)


def _has_array_on(value, parts):
    if isinstance(value, list):
        return True
    if not parts or not isinstance(value, dict) or parts[0] not in value:
        return False
    return _has_array_on(value[parts[0]], parts[1:])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=values)
def test_generated_measurements_are_refused_exactly_when_the_indexed_path_holds_an_array(db, value):
    name = "g"
    if name not in db.list_collection_names():
        _ts(db, name).create_index("x.y")
    coll = db[name]
    doc = {"tm": T0, "x": value}
    if _has_array_on(value, ["y"]):
        assert _write_code(lambda: coll.insert_one(doc))[0] == 5930501
    else:
        coll.insert_one(doc)


# ------------------------------------------------------------------------------------------- item 3


GEO_DOCS = [
    {"_id": 0, "tm": T0, "mm": "m1", "location": {"type": "Point", "coordinates": [40, -70]}},
    {"_id": 1, "tm": T0 + dt.timedelta(minutes=1), "mm": "m1", "location": {"type": "Point", "coordinates": [40.1, -70.1]}},
    {"_id": 2, "tm": T0, "mm": "m2", "location": [40.2, -70.2]},  # a legacy pair
    {"_id": 3, "tm": T0 + dt.timedelta(hours=2), "mm": "m2"},
    {"_id": 4, "tm": T0, "mm": "m3", "location": None},
]


def _geo(db, before):
    coll = _ts(db)
    if not before:
        coll.insert_many(GEO_DOCS)
    coll.create_index([("location", "2dsphere")], name="location_2dsphere", **{"2dsphereIndexVersion": 3})
    if before:
        coll.insert_many(GEO_DOCS)
    return coll


@pytest.mark.parametrize("before", [True, False], ids=["index-first", "data-first"])
def test_measurement_2dsphere_hinted_read_returns_buckets_with_points(db, before):
    coll = _geo(db, before)
    found = sorted(d["_id"] for d in coll.find().hint("location_2dsphere"))
    assert found == [0, 1, 2]  # buckets m1 and m2 (first); the ones without a location are left out
    assert len(list(db["system.buckets.c"].find().hint("location_2dsphere"))) == 2


def test_measurement_2dsphere_geo_query_with_hint_finds_legacy_pairs(db):
    coll = _geo(db, False)
    near = {"location": {"$geoWithin": {"$centerSphere": [[40.2, -70.2], 0.0001]}}}
    assert [d["_id"] for d in coll.find(near).hint("location_2dsphere")] == [2]
    assert [d["_id"] for d in coll.find(near)] == [2]


@pytest.mark.parametrize(("location", "code", "message"), [
    ({"type": "Polygon", "coordinates": [[0, 0], [1, 0], [1, 1], [0, 0]]}, 183934,
     "Can't extract geo keys: GeoJSON coordinates must be an array"),
    ({"type": "MultiPoint", "coordinates": [[0, 0], [1, 0], [1, 1], [0, 0]]}, 183493,
     "Time-series collections '2dsphere' indexes only support point data"),
    ({"type": "LineString", "coordinates": [[0, 0], [1, 0], [1, 1], [0, 0]]}, 183493,
     "Time-series collections '2dsphere' indexes only support point data"),
])
def test_measurement_2dsphere_refuses_what_is_not_a_point(db, location, code, message):
    coll = _geo(db, True)
    assert _write_code(lambda: coll.insert_one({"tm": T0, "location": location})) == (code, message)
    assert coll.count_documents({}) == len(GEO_DOCS)
    assert len(list(coll.find().hint("location_2dsphere"))) == 3  # nothing unreadable got in


def test_measurement_2dsphere_index_build_over_a_non_point_fails(db):
    coll = _ts(db)
    coll.insert_one({"tm": T0, "location": {"type": "LineString", "coordinates": [[0, 0], [1, 1]]}})
    with pytest.raises(OperationFailure) as info:
        coll.create_index([("location", "2dsphere")])
    assert info.value.code == 183493


# ------------------------------------------------------------------------------------------- item 4


def test_key_order_makes_another_index(db):
    coll = _ts(db)
    assert coll.create_index([("tm", 1), ("mm", 1)]) == "tm_1_mm_1"
    keys = {ix["name"]: list(ix["key"].items()) for ix in coll.list_indexes()}
    assert keys == {"mm_1_tm_1": [("mm", 1), ("tm", 1)], "tm_1_mm_1": [("tm", 1), ("mm", 1)]}
    assert coll.create_index([("tm", 1), ("mm", 1)]) == "tm_1_mm_1"  # the same again: a no-op


def test_original_spec_only_with_a_measurement_or_a_partial_filter(db):
    coll = _ts(db)
    coll.create_index([("tm", 1), ("mm", 1)])
    coll.create_index([("mm.a", 1), ("tm", -1)])
    coll.create_index([("x", 1)])
    coll.create_index([("mm.b", 1)], partialFilterExpression={"mm.b": {"$gt": 1}})
    bucket = {ix["name"]: ix for ix in db["system.buckets.c"].list_indexes()}
    assert [n for n, ix in bucket.items() if "originalSpec" in ix] == ["x_1", "mm.b_1"]
    listed = {ix["name"]: ix for ix in coll.list_indexes()}
    assert dict(listed["mm.a_1_tm_-1"]) == {"v": 2, "key": {"mm.a": 1, "tm": -1}, "name": "mm.a_1_tm_-1"}
    assert listed["mm.b_1"]["partialFilterExpression"] == {"mm.b": {"$gt": 1}}


def test_partial_filter_that_is_not_an_object_is_10065(db):
    coll = _ts(db)
    with pytest.raises(OperationFailure) as info:
        coll.create_index([("x", 1)], partialFilterExpression=123)
    assert (info.value.code, info.value.details["errmsg"]) == (
        10065, "invalid parameter: expected an object (partialFilterExpression)")
