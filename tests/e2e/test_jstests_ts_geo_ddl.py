"""MongoDB's time-series geo and DDL jstests not ported before, against a real Tidemark server.

Sources (``mongodb/mongo``; the stored copies live under ``jstests/core/timeseries/geo/`` and
``jstests/core/timeseries/ddl/``, the 7.0 layout keeps them at ``jstests/core/timeseries/``):
timeseries_geonear.js, timeseries_geonear_measurements.js, timeseries_geonear_edge_case_measurements.js,
timeseries_geonear_mindistance_and_maxdistance.js (7.0's answer: the expression forms are 7.2+),
timeseries_geonear_random_measurements.js, timeseries_geonear_lookup.js,
timeseries_text_geonear_disallowed.js, timeseries_internal_bucket_geo_within.js (results; the
``$_internalBucketGeoWithin`` explain and parse checks are internal), timeseries_bucket_index.js,
timeseries_collation.js, timeseries_metric_index_hashed.js, timeseries_metric_index_wildcard.js,
timeseries_clustered_index_options.js, timeseries_index_ttl_partial.js, timeseries_nondefault_collation.js
(results; its plan checks are explain shapes), clustered_index_crud.js (the 7.0 form of
clustered_index_types.js), rename_system_buckets_collections.js, reindex_timeseries.js (7.0's answer: a
time-series collection is a view, 166). 18 files in all.

Not ported: geo_key_extraction_failure_timeseries.js, timeseries_direct_buckets_access.js and
timeseries_view_on_buckets.js (9.0 / viewless time-series only), and explain-shape assertions.
``$geoNear`` in a ``$lookup`` sub-pipeline was refused (40602); it now runs on the foreign collection.

Where a jstest compares a time-series collection with an ordinary one, so does the port; Hypothesis widens
two families the port found defects in: ``$where`` at any depth of a time-series read (refused with 2, as
in any view's aggregation) and wildcard key patterns on measurements (refused, never built), plus the
jstest's own comparison of ``$geoNear`` on a time-series collection against an ordinary one.
"""

from __future__ import annotations

import datetime as dt
import math
import random

import pytest
from bson.int64 import Int64
from harness.jstests import UNDEFINED, aggregate_fails, bag, fails, raw, unordered
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.commands(
    "create", "insert", "aggregate", "find", "count", "distinct", "createIndexes", "listIndexes",
    "listCollections", "drop", "delete", "validate",
)

HYPO = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
NOW = dt.datetime(2024, 5, 1, 12, 34, 56, 789000)  # the jstests' ISODate(): one instant, with milliseconds
EARTH_RADIUS_M = 6378.1 * 1000  # geoconstants.h, as the jstest
EARTH_CIRCUMFERENCE_M = EARTH_RADIUS_M * math.pi * 2


def _meters(degrees: float) -> float:
    return degrees * (EARTH_CIRCUMFERENCE_M / 360)


def _ts(db, name, time="time", meta=None, **options):
    db.drop_collection(name)
    spec = {"timeField": time, **({"metaField": meta} if meta else {})}
    db.create_collection(name, timeseries=spec, **options)
    return db[name]


# --------------------------------------------------------------------------------------------------
# timeseries_geonear_measurements.js: the same assertions on an ordinary collection (2d + 2dsphere
# indexes), then on time-series collections without an index, with a 2dsphere index, and with the
# index built while documents arrive one at a time


def _geo_data(coll, batch: bool) -> None:
    docs = [{"time": NOW, "loc": [0, i]} for i in range(10)]
    docs += [{"time": NOW, "abc": 123}, {"time": NOW, "abc": 456}]  # no loc: never a $geoNear result
    random.Random(7).shuffle(docs)  # in random order: the queries must really sort
    if batch:
        coll.insert_many(docs)
    else:
        for doc in docs:
            coll.insert_one(doc)


def _geo_collection(db, kind: str):
    if kind == "baseline":
        db.drop_collection("geo_m")
        db.geo_m.create_index([("loc", "2dsphere")])
        db.geo_m.create_index([("loc", "2d")])
        _geo_data(db.geo_m, True)
        return db.geo_m
    coll = _ts(db, "geo_m")
    if kind != "noindex":
        coll.create_index([("loc", "2dsphere")])
        keys = [dict(i["key"]) for i in db["system.buckets.geo_m"].list_indexes()]
        assert keys == [{"data.loc": "2dsphere_bucket"}]
    _geo_data(coll, kind != "indexed_nonbatch")
    return coll


GEO_KINDS = ["baseline", "noindex", "indexed", "indexed_nonbatch"]


@pytest.mark.parametrize("kind", GEO_KINDS)
def test_geonear_measurements_flat(db, kind):
    coll = _geo_collection(db, kind)
    ts = kind != "baseline"
    project = {"$project": {"_id": 0, "loc": 1, "distance": 1}}

    def near(**options):
        return {"$geoNear": {"near": [0, 0], "key": "loc", "distanceField": "distance", **options}}

    # [180, 0] is closer to [0, 0] than [0, 9] in flat geometry
    first = [{"$geoNear": {"near": [180, 0], "key": "loc", "distanceField": "distance"}},
             {"$project": {"_id": 0, "loc": 1, "distance": {"$floor": "$distance"}}}, {"$limit": 1}]
    assert list(coll.aggregate(first)) == [{"loc": [0, 0], "distance": 180}]
    rows = [{"loc": [0, i], "distance": i} for i in range(10)]
    assert list(coll.aggregate([near(), project])) == rows
    assert list(coll.aggregate([near(), {"$limit": 5}, project])) == rows[:5]
    assert list(coll.aggregate([near(maxDistance=6), project])) == rows[:7]
    assert list(coll.aggregate([near(minDistance=3), project])) == rows[3:]
    assert list(coll.aggregate([near(minDistance=3, maxDistance=6), project])) == rows[3:7]
    assert list(coll.aggregate([near(distanceMultiplier=10, minDistance=3, maxDistance=6), project])) == [
        {"loc": [0, i], "distance": 10 * i} for i in range(3, 7)]
    if ts:  # 'query' is refused on a time-series collection (use $match), 'includeLocs' is not implemented
        aggregate_fails(coll, [near(query={"no_such_field": 123})], 1938439, 5860207)
        aggregate_fails(coll, [near(includeLocs="abc")], 5860208)
    else:
        assert list(coll.aggregate([near(query={"no_such_field": 123})])) == []
        assert len(list(coll.aggregate([near(includeLocs="abc")]))) > 0


SPHERE_QUERIES = [
    pytest.param(1, {"near": {"type": "Point", "coordinates": [180, 0]}}, id="geojson"),
    pytest.param(1, {"near": {"type": "Point", "coordinates": [180, 0]}, "spherical": True}, id="geojson-spherical"),
    # a legacy point with spherical: true measures in radians
    pytest.param(EARTH_RADIUS_M, {"near": [180, 0], "spherical": True}, id="legacy-spherical"),
]


@pytest.mark.parametrize("kind", GEO_KINDS)
@pytest.mark.parametrize(("scale", "query"), SPHERE_QUERIES)
def test_geonear_measurements_sphere(db, kind, scale, query):
    coll = _geo_collection(db, kind)
    ts = kind != "baseline"
    project = {"$project": {"_id": 0, "loc": 1, "distance": {"$floor": {"$multiply": [scale, "$distance"]}}}}

    def near(**options):
        return {"$geoNear": {**query, "key": "loc", "distanceField": "distance", **options}}

    def expected(lats, multiplier=1):
        return [{"loc": [0, i], "distance": math.floor(multiplier * _meters(180 - i))} for i in lats]

    low = math.floor(_meters(180 - 7)) / scale
    high = math.ceil(_meters(180 - 3)) / scale
    assert list(coll.aggregate([near(), project])) == expected(range(9, -1, -1))
    assert list(coll.aggregate([near(), {"$limit": 5}, project])) == expected(range(9, 4, -1))
    assert list(coll.aggregate([near(maxDistance=high), project])) == expected(range(9, 2, -1))
    assert list(coll.aggregate([near(minDistance=low), project])) == expected(range(7, -1, -1))
    assert list(coll.aggregate([near(minDistance=low, maxDistance=high), project])) == expected(range(7, 2, -1))
    assert list(coll.aggregate([near(distanceMultiplier=10, minDistance=low, maxDistance=high), project])) == (
        expected(range(7, 2, -1), multiplier=10))
    assert list(coll.aggregate([near(), {"$match": {"no_such_field": 456}}])) == []  # instead of 'query'
    if ts:
        aggregate_fails(coll, [near(query={"no_such_field": 123})], 1938439, 5860207)
        aggregate_fails(coll, [near(includeLocs="abc")], 5860208)
    else:
        assert list(coll.aggregate([near(query={"no_such_field": 123})])) == []
        assert len(list(coll.aggregate([near(includeLocs="abc")]))) > 0
    # the index (when there is one) holds exactly the inserted points
    for point, count in (([0, 0], 1), ([0, 6], 1), ([1, 4], 0)):
        intersects = {"$match": {"loc": {"$geoIntersects": {"$geometry": {"type": "Point", "coordinates": point}}}}}
        assert len(list(coll.aggregate([intersects]))) == count


def test_geonear_on_meta_subfield(db):
    """timeseries_geonear.js: a 2dsphere index on a metaField subfield serves $geoNear."""
    coll = _ts(db, "ts_point_data", meta="tags")
    coll.create_index([("tags.loc", "2dsphere")])
    for i in range(10):
        coll.insert_one({"time": NOW, "tags": {"loc": [40, 40], "descr": str(i)}, "value": i + 10})
    near = {"$geoNear": {"near": {"type": "Point", "coordinates": [106.65589, 10.787627]}, "key": "tags.loc",
                         "distanceField": "tags.distance"}}
    rows = list(coll.aggregate([near]))
    assert len(rows) == 10
    assert all(row["tags"]["distance"] > 0 for row in rows)


def test_geonear_min_max_distance_expressions_are_7_2(db):
    """timeseries_geonear_mindistance_and_maxdistance.js is 7.2+ (requires_fcv_72): 7.0 parses minDistance
    / maxDistance as numbers only, on ordinary and time-series collections alike (14)."""
    ts = _ts(db, "ts_coll", meta="tags")
    db.drop_collection("normal_coll")
    normal = db.normal_coll
    for coll in (ts, normal):
        coll.create_index([("tags.loc", "2dsphere")])
        coll.insert_many([{"time": NOW, "tags": {"loc": [i, i], "descr": str(i)}, "value": i + 10} for i in range(10)])
    for coll in (ts, normal):
        for option in ("minDistance", "maxDistance"):
            near = {"$geoNear": {"near": {"type": "Point", "coordinates": [0, 0]}, "key": "tags.loc",
                                 "distanceField": "tags.distance", option: "$tags.loc"}}
            aggregate_fails(coll, [near], 14)
    # numeric bounds: the same distances on both
    near = {"$geoNear": {"near": {"type": "Point", "coordinates": [0, 0]}, "key": "tags.loc",
                         "distanceField": "tags.distance", "minDistance": 0, "maxDistance": math.pi * 2 * 1e5}}
    normal_rows = list(normal.aggregate([near]))
    ts_rows = list(ts.aggregate([near]))
    assert [r["tags"]["distance"] for r in ts_rows] == [r["tags"]["distance"] for r in normal_rows]
    assert len(ts_rows) == 4  # [0, 0] to [3, 3] lie within ~628 km (157 km per step)


_LONGITUDE = st.floats(-180, 180, allow_nan=False)
_LATITUDE = st.floats(-90, 90, allow_nan=False)


@HYPO
@given(query_point=st.tuples(_LONGITUDE, _LATITUDE).map(list), center=st.tuples(_LONGITUDE, _LATITUDE).map(list))
def test_geonear_edge_case_cluster(db, query_point, center):
    """timeseries_geonear_edge_case_measurements.js (random points, as the jstest's random seed): points a
    few ulps around a cluster center, a bound exactly at the center's distance: the time-series answer
    equals the ordinary collection's. (It found the time-series rewrite dropping a point at exactly
    maxDistance: its $geoWithin pre-filter measured the same circle in radians.)"""
    db.drop_collection("temp")
    db.temp.insert_one({"loc": center})
    db.temp.create_index([("loc", "2dsphere")])
    db.temp.create_index([("loc", "2d")])
    sphere = next(db.temp.aggregate([{"$geoNear": {"near": {"type": "Point", "coordinates": query_point},
                                                   "key": "loc", "distanceField": "dist"}}]))["dist"]
    flat = next(db.temp.aggregate([{"$geoNear": {"near": query_point, "key": "loc", "distanceField": "dist"}}]))["dist"]
    epsilon = 2.0 ** -52
    step = 2 * (sphere * 360 / EARTH_CIRCUMFERENCE_M) * epsilon
    points = []
    for dx in (-step, 0, step):
        for dy in (-step, 0, step):
            x = center[0] + dx
            x = x - 360 if x > 180 else x + 360 if x < -180 else x
            points.append([x, max(-90.0, min(center[1] + dy, 90.0))])
    db.drop_collection("normal")
    db.normal.create_index([("loc", "2dsphere")])
    db.normal.create_index([("loc", "2d")])
    ts = _ts(db, "ts")
    docs = [{"time": NOW, "loc": p} for p in points]
    db.normal.insert_many([dict(d) for d in docs])
    ts.insert_many([dict(d) for d in docs])
    for near, bound in (({"type": "Point", "coordinates": query_point}, sphere), (query_point, flat)):
        for option in ("maxDistance", "minDistance"):
            pipeline = [{"$geoNear": {"near": near, "key": "loc", "distanceField": "dist", option: bound}},
                        {"$sort": {"loc.0": 1, "loc.1": 1}}, {"$project": {"_id": 0, "loc": "$loc", "dist": "$dist"}}]
            if near is not query_point:
                assert bag(ts.aggregate(pipeline)) == bag(db.normal.aggregate(pipeline))
                continue
            # flat: a collection's 2d $geoNear keeps what $center keeps, widened by mongod's rounding
            # room (GeoNear2DStage), where the time-series rewrite compares each distance with the
            # bound (splitForTimeseries: $geoWithin, distance, $match); the jstest's seed never puts
            # a point between the two, an axis-aligned cluster does
            every = [{"$geoNear": {"near": near, "key": "loc", "distanceField": "dist"}},
                     {"$project": {"_id": 0, "loc": "$loc", "dist": "$dist"}}]
            expected = [r for r in db.normal.aggregate(every)
                        if (r["dist"] <= bound if option == "maxDistance" else r["dist"] >= bound)]
            assert bag(ts.aggregate(pipeline)) == bag(expected)


# --------------------------------------------------------------------------------------------------
# timeseries_text_geonear_disallowed.js, and $where (the family the port found refused on views but
# run on time-series collections)


def test_near_text_where_refused(db):
    coll = _ts(db, "ts_point_data", meta="tags")
    coll.insert_many([{"time": NOW, "tags": {"distance": [40, 40], "descr": str(i)}, "value": i + 10} for i in range(10)])
    for flt in ({"tags.distance": {"$geoNear": [0, 0]}}, {"tags.distance": {"$near": [0, 0]}},
                {"tags.distance": {"$nearSphere": {"$geometry": {"type": "Point", "coordinates": [-73.9667, 40.78]},
                                                   "$minDistance": 10, "$maxDistance": 20}}}):
        fails(lambda flt=flt: list(coll.find(flt)), 5626500)
    fails(lambda: coll.create_index([("tags.descr", "text")]), 72)  # InvalidOptions
    fails(lambda: list(coll.find({"$text": {"$search": "1"}})), 27)  # IndexNotFound
    aggregate_fails(coll, [{"$match": {"$text": {"$search": "1"}}}], 27, 17313)
    # $where cannot be used inside a $match stage, so not on a time-series collection either (2)
    aggregate_fails(coll, [{"$match": {"$where": "return true"}}], 2, 6108304)
    fails(lambda: list(coll.find({"$where": "return true"})), 2, 6108304)


_WHERE = {"$where": "return true"}
_LEAF = st.sampled_from([{"value": {"$gte": 12}}, {"tags.descr": "3"}, {"time": NOW}, {"value": 5}])


def _with_where(depth: int):
    """Filters holding $where somewhere under $and / $or / $nor, beside ordinary clauses."""
    if depth == 0:
        return st.just(_WHERE)
    inner = _with_where(depth - 1)
    return st.one_of(
        st.just(_WHERE),
        st.builds(lambda op, w, leaves: {op: [*leaves, w]}, st.sampled_from(["$and", "$or", "$nor"]), inner,
                  st.lists(_LEAF, max_size=2)),
        st.builds(lambda leaf, w: {**leaf, "$and": [w]}, _LEAF, inner),
    )


@HYPO
@given(flt=_with_where(3), read=st.sampled_from(["find", "aggregate", "count", "distinct", "later_match"]))
def test_where_refused_at_any_depth_on_timeseries(db, flt, read):
    coll = db.where_ts
    if "where_ts" not in db.list_collection_names():
        _ts(db, "where_ts", meta="tags")
        coll.insert_many([{"time": NOW, "tags": {"descr": str(i)}, "value": i + 10} for i in range(5)])
    calls = {
        "find": lambda: list(coll.find(flt)),
        "aggregate": lambda: list(coll.aggregate([{"$match": flt}])),
        "count": lambda: coll.count_documents(flt),
        "distinct": lambda: coll.distinct("value", flt),
        "later_match": lambda: list(coll.aggregate([{"$project": {"value": 1}}, {"$match": flt}])),
    }
    fails(calls[read], 2)


# --------------------------------------------------------------------------------------------------
# timeseries_internal_bucket_geo_within.js (results): a bucket-level pre-filter must never drop a bucket
# holding a matching measurement


_POLYGON = {"type": "Polygon", "coordinates": [[[0, 0], [3, 6], [6, 1], [0, 0]]]}


def _point(x, y, **extra):
    return {"type": "Point", "coordinates": [x, y], **extra}


def test_internal_bucket_geo_within_results(db):
    within = [{"$match": {"loc": {"$geoWithin": {"$geometry": _POLYGON}}}}]
    intersects = [{"$match": {"loc": {"$geoIntersects": {"$geometry": _POLYGON}}}}]
    coll = _ts(db, "bgw", meta="m")
    coll.insert_many([{"a": a, "loc": _point(*p), "time": NOW, "m": {"sensorId": 100}}
                      for a, p in ((1, (0, 1)), (2, (2, 7)), (3, (2, 1)))])
    assert len(list(coll.aggregate(within))) == 1  # one bucket
    coll.insert_many([{"a": a, "loc": _point(*p), "time": NOW, "m": {"sensorId": s}}
                      for a, p, s in ((1, (0, 1), 101), (2, (2, 7), 102), (3, (2, 1), 103))])
    assert len(list(coll.aggregate(within))) == 2  # across buckets

    # control min/max do not summarize 'a' (objects, a number and a date)
    coll = _ts(db, "bgw", meta="m")
    coll.insert_many([{"time": NOW, "a": 5}, {"time": NOW, "a": {"b": _point(0, 0)}},
                      {"time": NOW, "a": dt.datetime(2020, 1, 1)}])
    rows = list(coll.aggregate([{"$match": {"a.b": {"$geoWithin": {"$centerSphere": [[0, 0], 100]}}}}]))
    assert [r["a"] for r in rows] == [{"b": _point(0, 0)}]

    # $geoWithin traverses arrays implicitly: 'a.1' is the "1" field of an element, not element 1
    coll = _ts(db, "bgw", meta="m")
    doc_a = [12345, _point(180, 0), {"1": _point(0, 0)}]
    coll.insert_one({"time": NOW, "a": doc_a})
    rows = list(coll.aggregate([{"$match": {"a.1": {"$geoWithin": {"$centerSphere": [[0, 0], 1]}}}}]))
    assert [r["a"] for r in rows] == [doc_a]

    # $geoIntersects and $geoWithin agree on points: a vertex, an edge, inside, outside (one bucket each)
    coll = _ts(db, "bgw", meta="m")
    docs = [{"_id": i, "a": i + 1, "loc": _point(*p), "time": NOW, "m": {"sensorId": 101 + i}}
            for i, p in enumerate([(0, 0), (1, 2), (2, 1), (-1, -2)])]
    coll.insert_many(docs)
    assert bag(coll.aggregate(intersects), unordered) == bag(docs[:3], unordered)
    assert bag(coll.aggregate(within), unordered) == bag(docs[:3], unordered)

    # a Point with an unexpected field still matches
    coll = _ts(db, "bgw", meta="m")
    docs = [{"_id": i, "a": i + 1, "loc": _point(*p, unexpected_field=1), "time": NOW, "m": {"sensorId": 101 + i}}
            for i, p in enumerate([(0, 1), (2, 7), (2, 1)])]
    coll.insert_many(docs)
    assert bag(coll.aggregate(intersects), unordered) == bag(docs[2:], unordered)

    # control min / max of other types (a date, an array) never exclude the bucket
    coll = _ts(db, "bgw", meta="m")
    docs = [{"_id": 0, "a": 1, "loc": NOW, "time": NOW, "m": {"sensorId": 101}},
            {"_id": 1, "a": 1, "loc": [5, 6, 7], "time": NOW, "m": {"sensorId": 101}},
            {"_id": 2, "a": 3, "loc": NOW, "time": NOW, "m": {"sensorId": 103}},
            {"_id": 3, "a": 3, "loc": [5, 6, 7], "time": NOW, "m": {"sensorId": 103}},
            {"_id": 4, "a": 3, "loc": _point(2, 1), "time": NOW, "m": {"sensorId": 103}}]
    coll.insert_many(docs)
    assert bag(coll.aggregate(intersects), unordered) == bag(docs[4:], unordered)

    # undefined and null beside a point in one bucket
    coll = _ts(db, "bgw", meta="m")
    coll.insert_one(raw({"_id": 0, "a": 3, "loc": UNDEFINED, "time": NOW, "m": {"sensorId": 103}}))
    coll.insert_many([{"_id": 1, "a": 3, "loc": None, "time": NOW, "m": {"sensorId": 103}},
                      {"_id": 2, "a": 3, "loc": _point(2, 1), "time": NOW, "m": {"sensorId": 103}}])
    assert [r["_id"] for r in coll.aggregate(intersects)] == [2]

    # a field inside an object that is missing, undefined, null, empty, a date or an array
    xy = [{"$match": {"x.y": {"$geoIntersects": {"$geometry": _POLYGON}}}}]
    for xs, want in (([{}, {"y": _point(2, 7)}, {"y": _point(2, 1)}], [2]),
                     ([None, {}, {"y": _point(2, 1)}, {"y": _point(3, 1)}], [2, 3]),
                     ([NOW, [1, 2, 3], {"y": _point(2, 1)}], [2])):
        coll = _ts(db, "bgw", meta="m")
        coll.insert_many([{"_id": i, "a": i, "x": x, "time": NOW, "m": {"sensorId": 100}} for i, x in enumerate(xs)])
        coll.insert_one(raw({"_id": 99, "a": 9, "x": UNDEFINED, "time": NOW, "m": {"sensorId": 100}}))
        assert sorted(r["_id"] for r in coll.aggregate(xy)) == want


# --------------------------------------------------------------------------------------------------
# DDL: timeseries_bucket_index.js, timeseries_collation.js, metric index kinds, clustered options, TTL


def test_indexes_on_the_buckets_collection(db):
    coll = _ts(db, "bucket_index")
    buckets = db["system.buckets.bucket_index"]
    assert buckets.create_index([("control.min.time", 1)]) == "control.min.time_1"
    coll.insert_one({"_id": 0, "time": NOW, "x": 0})
    assert buckets.create_index([("control.max.time", 1)]) == "control.max.time_1"
    found = list(buckets.find())
    assert len(found) == 1
    bucket = found[0]
    assert list(buckets.find({"_id": bucket["_id"]})) == found
    assert list(buckets.find({"control.max.time": bucket["control"]["max"]["time"]})) == found
    assert db.command("validate", "system.buckets.bucket_index")["valid"] is True
    assert buckets.delete_one({"_id": bucket["_id"]}).deleted_count == 1
    assert list(buckets.find()) == [] and list(coll.find()) == []


def test_collation_leaves_metadata_and_field_names_alone(db):
    """timeseries_collation.js: buckets group by the binary metadata (not the collation's equality), the
    default index carries the collation, control min/max compare values with it but names exactly."""
    coll = _ts(db, "collation", meta="meta", collation={"locale": "en", "strength": 1, "numericOrdering": True})
    index = next(i for i in coll.list_indexes() if i["name"] == "meta_1_time_1")
    assert index["collation"]["locale"] == "en"
    docs = [
        {"_id": 0, "time": NOW, "meta": {"a": ["b"], "c": "D"}, "x": "10", "y": {"z": ["2"]}},
        {"_id": 1, "time": NOW, "meta": {"a": ["B"], "c": "d"}, "r": "s", "x": "5", "y": {"z": ["5"]}},
        {"_id": 2, "time": NOW, "meta": {"a": ["B"], "c": "D"}},
        {"_id": 3, "time": NOW, "meta": {"a": ["B"], "c": "d"}, "r": "S", "X": "10", "Y": {"z": ["2"]}},
    ]
    coll.insert_many([dict(docs[0]), dict(docs[1])])
    coll.insert_one(dict(docs[2]))
    coll.insert_one(dict(docs[3]))
    assert list(coll.find().sort("_id", 1)) == docs
    found = list(db["system.buckets.collation"].find().sort("control.min._id", 1))
    assert len(found) == 3
    lo, hi = found[0]["control"]["min"], found[0]["control"]["max"]
    assert (lo["x"], lo["y"], hi["x"], hi["y"]) == ("10", {"z": ["2"]}, "10", {"z": ["2"]})
    lo, hi = found[1]["control"]["min"], found[1]["control"]["max"]
    assert (lo["r"], lo["x"], lo["X"], lo["y"], lo["Y"]) == ("s", "5", "10", {"z": ["5"]}, {"z": ["2"]})
    assert (hi["r"], hi["x"], hi["X"], hi["y"], hi["Y"]) == ("s", "5", "10", {"z": ["5"]}, {"z": ["2"]})
    assert "x" not in found[2]["control"]["min"] and "y" not in found[2]["control"]["max"]


@pytest.mark.parametrize("keys", [
    [("_id", "hashed")], [("x", "hashed")], [("x", 1), ("y", "hashed")], [("mm.tag", 1), ("x", "hashed")],
    [("x", 1), ("mm.tag", -1), ("y", "hashed")],
])
def test_hashed_measurement_indexes_refused(db, keys):
    coll = _ts(db, "metric_hashed", time="tm", meta="mm")
    coll.insert_one({"_id": 0, "tm": NOW, "mm": {"tag": "a"}, "x": 1})
    fails(lambda: coll.create_index(keys), 67)  # CannotCreateIndex


@pytest.mark.parametrize("keys", [
    [("_id.$**", 1)], [("$**", 1)], [("x", 1), ("y.$**", 1)], [("$**", -1), ("x", 1)], [("mm.tag", 1), ("x.$**", 1)],
    [("$**", 1), ("mm.tag", -1)],
])
def test_wildcard_measurement_indexes_refused(db, keys):
    coll = _ts(db, "metric_wildcard", time="tm", meta="mm")
    coll.insert_one({"_id": 0, "tm": NOW, "mm": {"tag": "a"}, "x": 1})
    fails(lambda: coll.create_index(keys), 67, 7246201)
    assert [i["name"] for i in coll.list_indexes()] == ["mm_1_tm_1"]


_MEASUREMENT = st.text(alphabet="abxy", min_size=1, max_size=3)


@HYPO
@given(prefix=st.lists(st.tuples(_MEASUREMENT, st.sampled_from([1, -1])), max_size=2),
       path=st.lists(_MEASUREMENT, max_size=2), direction=st.sampled_from([1, -1]))
def test_wildcard_keys_on_measurements_never_built(db, prefix, path, direction):
    coll = db.wild_ts
    if "wild_ts" not in db.list_collection_names():
        _ts(db, "wild_ts", time="tm", meta="mm").insert_one({"tm": NOW, "mm": 1, "a": 1})
    wildcard = ".".join([*path, "$**"])
    keys = [*dict(prefix).items(), (wildcard, direction)]
    fails(lambda: coll.create_index(keys), 67, 7246201)
    assert [i["name"] for i in coll.list_indexes()] == ["mm_1_tm_1"]


def test_buckets_collection_from_list_collections_options(db, client):
    """timeseries_clustered_index_options.js: listCollections' options of system.buckets.<coll> create it again."""
    test_db = client.get_database("ts_clustered_index_options")
    client.drop_database(test_db.name)
    test_db.create_collection("clustered_index_options", timeseries={"timeField": "time"}, expireAfterSeconds=10)
    name = "system.buckets.clustered_index_options"

    def options():
        return test_db.command("listCollections", filter={"name": name})["cursor"]["firstBatch"][0]["options"]

    original = options()
    assert original["clusteredIndex"] is True
    test_db.drop_collection("clustered_index_options")
    test_db.command("create", name, **original)
    assert options() == original
    client.drop_database(test_db.name)
    for bad, codes in (({"clusteredIndex": {}}, (40414,)), ({"clusteredIndex": "a"}, (14,)),
                       ({"clusteredIndex": False}, (72,)),
                       ({"clusteredIndex": {"key": {"_id": 1}, "unique": True}}, (5979703, 72)),
                       ({"idIndex": {"key": {"_id": 1}, "name": "_id_"}}, (72,))):
        fails(lambda bad=bad: test_db.command("create", name, **{**original, **bad}), *codes)
    fails(lambda: test_db.command("create", "test", expireAfterSeconds=10), 72)
    client.drop_database(test_db.name)


def test_partial_ttl_indexes(db):
    """timeseries_index_ttl_partial.js."""
    def reset(**extra):
        return _ts(db, "ttl_partial", time="tm", meta="mm", **extra)

    coll = reset()
    fails(lambda: coll.create_index([("tm", 1)], name="p", expireAfterSeconds=3600), 72)
    fails(lambda: coll.create_index([("mm", 1)], name="p", expireAfterSeconds=3600), 72)
    options = {"name": "p", "partialFilterExpression": {"mm": {"$gt": 5}}, "expireAfterSeconds": Int64(400)}
    for extra in ({}, {"expireAfterSeconds": 3600}):
        coll = reset(**extra)
        coll.create_index([("tm", 1)], **options)
        index = [i for i in coll.list_indexes() if i["name"] == "p"]
        assert len(index) == 1
        assert dict(index[0]["key"]) == {"tm": 1} and index[0]["expireAfterSeconds"] == 400
    coll = reset()
    for keys, pfe, code in (([("tm", 1)], {"data": {"$gt": 5}}, 72),
                            ([("tm", 1)], {"mm": {"$gt": 5}, "data": {"$gt": 5}}, 72),
                            ([("tm", 1)], {"tm": {"$gt": NOW}}, 72),
                            ([("mm", 1)], {"mm": {"$gt": 5}}, 72),
                            ([("data", 1)], {"mm": {"$gt": 5}}, 72),
                            ([("tm", 1), ("mm", 1)], {"mm": {"$gt": 5}}, 67),
                            ([("tm", 1), ("data", 1)], {"mm": {"$gt": 5}}, 67)):
        fails(lambda keys=keys, pfe=pfe: coll.create_index(keys, name="p", partialFilterExpression=pfe,
                                                          expireAfterSeconds=Int64(400)), code)


# --------------------------------------------------------------------------------------------------
# timeseries_nondefault_collation.js: bucket pruning by control min / max must not use a collation the
# query does not have

NUMERIC = {"locale": "en_US", "numericOrdering": True, "strength": 1}
CASE_SENSITIVE = {"locale": "en_US", "strength": 1, "caseLevel": True}
DIACRITIC_SENSITIVE = {"locale": "en_US", "strength": 2, "caseLevel": False}
INSENSITIVE = {"locale": "en_US", "strength": 1}


def _collated(db, collation=None):
    return _ts(db, "nondefault_collation", meta="meta", **({"collation": collation} if collation else {}))


def test_nondefault_collation_find(db):
    coll = _collated(db, NUMERIC)
    for meta in ("1", "10", "5"):
        coll.insert_one({"time": NOW, "meta": meta, "value": 42})
    assert len(list(coll.find({"meta": {"$gt": "4"}}))) == 2  # "5" and "10"
    assert len(list(coll.find({"meta": {"$gt": "4"}}).collation(INSENSITIVE))) == 1  # "5"

    coll = _collated(db, NUMERIC)
    for value in ("1", "10", "5"):  # one bucket: max "10" under the collection's collation
        coll.insert_one({"time": NOW, "meta": 42, "value": value})
    assert len(list(coll.find({"value": {"$gt": "4"}}))) == 2
    assert len(list(coll.find({"value": {"$gt": "4"}}).collation(INSENSITIVE))) == 1

    coll = _collated(db)
    for value in ("C", "b", "c"):  # control.min.value "C", control.max.value "c"
        coll.insert_one({"time": NOW, "meta": 42, "value": value})
    assert len(list(coll.find({"value": {"$lt": "c"}}))) == 2
    assert len(list(coll.find({"value": {"$lt": "c"}}).collation(INSENSITIVE))) == 1
    assert len(list(coll.aggregate([{"$match": {"value": {"$lt": "c"}}}], collation=INSENSITIVE))) == 1


def test_nondefault_collation_aggregate(db):
    coll = _collated(db, NUMERIC)
    for meta in ("1", "5"):
        coll.insert_one({"time": NOW, "meta": meta, "val": 1})
    bucket = [{"$bucket": {"groupBy": "$meta", "boundaries": ["1", "10", "50"]}}]
    assert list(coll.aggregate(bucket)) == [{"_id": "1", "count": 2}]
    assert list(coll.aggregate(bucket, collation=INSENSITIVE)) == [{"_id": "1", "count": 1}, {"_id": "10", "count": 1}]

    coll = _collated(db, INSENSITIVE)
    for meta, name in (("a", "A"), ("a", "a"), ("a", "á"), ("b", "A"), ("b", "a"), ("b", "ä")):
        coll.insert_one({"time": NOW, "meta": meta, "name": name})
    by_count = [{"$sortByCount": "$name"}]
    assert len(list(coll.aggregate(by_count))) == 1
    assert len(list(coll.aggregate(by_count, collation=CASE_SENSITIVE))) == 2
    assert len(list(coll.aggregate(by_count, collation=DIACRITIC_SENSITIVE))) == 3

    coll = _collated(db, NUMERIC)
    coll.insert_one({"time": NOW, "meta": 42, "val": "10"})
    coll.insert_one({"time": NOW, "meta": 42, "val": "5"})
    found = list(db["system.buckets.nondefault_collation"].find())
    assert len(found) == 1 and found[0]["control"]["max"]["val"] == "10"
    group = [{"$group": {"_id": "$meta", "v": {"$max": "$val"}}}]
    assert list(coll.aggregate(group))[0]["v"] == "10"
    assert list(coll.aggregate(group, collation=INSENSITIVE))[0]["v"] == "5"


def test_nondefault_collation_index_with_other_collation(db):
    coll = _collated(db, DIACRITIC_SENSITIVE)
    coll.create_index([("meta", 1)], collation=INSENSITIVE)
    coll.insert_one({"time": NOW, "meta": 42})
    coll.insert_one({"time": NOW, "meta": "the answer"})
    coll.insert_one({"time": NOW, "meta": "STR"})
    # the jstest checks plans only; the answers: strength 2 and 1 ignore case, caseLevel restores it
    assert len(list(coll.find({"meta": "str"}))) == 1
    assert len(list(coll.find({"meta": "str"}).collation(INSENSITIVE))) == 1
    assert len(list(coll.find({"meta": "str"}).collation(CASE_SENSITIVE))) == 0
    assert len(list(coll.find({"meta": 42}))) == 1


# --------------------------------------------------------------------------------------------------
# timeseries_geonear_random_measurements.js and timeseries_geonear_lookup.js

def test_geonear_random_measurements(db):
    """Queries centred on each of 100 random points, with random bounds: the same members on both
    collections, each answer sorted by distance."""
    rng = random.Random(0)
    docs = []
    for i in range(100):
        length = rng.random() * EARTH_CIRCUMFERENCE_M
        min_m = rng.random() * (EARTH_CIRCUMFERENCE_M - length)
        min_flat = rng.random() * (math.pi / 2)
        docs.append({"_id": i, "time": NOW, "loc": [rng.uniform(-180, 180), rng.uniform(-90, 90)],
                     "minDistanceMeters": min_m, "maxDistanceMeters": min_m + length,
                     "minDistanceFlat": min_flat, "maxDistanceFlat": rng.random() * (math.pi / 2) + min_flat})
    db.drop_collection("random_normal")
    normal = db.random_normal
    normal.create_index([("loc", "2dsphere")])
    normal.create_index([("loc", "2d")])
    ts = _ts(db, "random_ts")
    normal.insert_many([dict(d) for d in docs])
    ts.insert_many([dict(d) for d in docs])
    for doc in docs:
        for near, low, high in (({"type": "Point", "coordinates": doc["loc"]}, doc["minDistanceMeters"],
                                 doc["maxDistanceMeters"]), (doc["loc"], doc["minDistanceFlat"], doc["maxDistanceFlat"])):
            pipeline = [{"$geoNear": {"near": near, "key": "loc", "distanceField": "dist", "spherical": isinstance(near, dict),
                                      "minDistance": low, "maxDistance": high}}]
            expected = list(normal.aggregate(pipeline))
            got = list(ts.aggregate(pipeline))
            assert bag(got, unordered) == bag(expected, unordered)
            for rows in (expected, got):
                assert [r["dist"] for r in rows] == sorted(r["dist"] for r in rows)


@pytest.mark.parametrize("timeseries", [True, False])
def test_geonear_in_lookup(db, timeseries):
    if timeseries:
        foreign = _ts(db, "ts_coll", meta="tags")
    else:
        db.drop_collection("ts_coll")
        foreign = db.ts_coll
    foreign.create_index([("tags.loc", "2dsphere")])
    foreign.insert_one({"time": NOW, "tags": {"loc": [40, 40], "descr": 0}, "value": 0})
    db.drop_collection("store_min_max_values")
    db.store_min_max_values.insert_one({"_id": 0, "minimumDist": 0.0, "maximumDist": math.pi * 2})
    rows = list(db.store_min_max_values.aggregate([{"$lookup": {
        "from": "ts_coll", "let": {"minVal": "$minimumDist", "maxVal": "$maximumDist"},
        "pipeline": [{"$geoNear": {"near": {"type": "Point", "coordinates": [0, 0]}, "key": "tags.loc",
                                   "distanceField": "tags.distance"}}],
        "as": "output"}}]))
    assert len(rows) == 1 and {"_id", "minimumDist", "maximumDist", "output"} <= set(rows[0])
    assert len(rows[0]["output"]) == 1


# --------------------------------------------------------------------------------------------------
# clustered_index_crud.js (the 7.0 form of clustered_index_types.js), rename_system_buckets_collections.js,
# and reIndex (reindex_timeseries.js's 7.0 answer: a time-series collection is a view)


def test_clustered_buckets_collection_crud(db):
    from bson import ObjectId

    name = "system.buckets.clustered_index_crud"
    db.drop_collection(name)
    db.command("create", name, clusteredIndex=True)
    coll = db[name]
    oid = ObjectId()
    coll.insert_one({"_id": oid})
    fails(lambda: coll.insert_one({"_id": oid}), 11000)
    assert coll.count_documents({"_id": oid}) == 1
    coll.replace_one({"_id": oid}, {"a": 1})
    assert coll.count_documents({"_id": oid}) == 1
    for ident in (0, "", Int64(9223372036854775807), {"a": 1, "b": 1}, -1, "123456789012", None, "x" * 100):
        coll.insert_one({"_id": ident, "a": 1})
        assert coll.count_documents({"_id": ident}) == 1
    coll.insert_one({"_id": {"a": {"b": 1}, "c": 1}, "a": 5})
    coll.insert_one({"a": 8})
    assert coll.count_documents({"a": 8}) == 1
    coll.create_index([("a", 1)])
    coll.drop_index([("a", 1)])
    coll.insert_one({"_id": 42.0})  # no numeric type differentiation in the clustered key
    fails(lambda: coll.insert_one({"_id": 42}), 11000)
    fails(lambda: coll.insert_one({"_id": Int64(42)}), 11000)
    assert [coll.count_documents({"_id": v}) for v in (42.0, 42, Int64(42))] == [1, 1, 1]


@pytest.mark.parametrize("other_database", [False, True])
def test_rename_refused_for_timeseries_and_buckets(client, other_database):
    main = client.get_database("ts_rename_buckets")
    target = "ts_rename_buckets_other" if other_database else main.name

    def setup(**options):
        client.drop_database(main.name)
        client.drop_database("ts_rename_buckets_other")
        main.create_collection("coll", **options)

    def rename(source, to):
        return lambda: client.admin.command("renameCollection", f"{main.name}.{source}", to=to)

    setup(timeseries={"timeField": "time"})
    fails(rename("coll", f"{target}.newColl"), 20, 166)  # IllegalOperation / CommandNotSupportedOnView
    setup()
    fails(rename("coll", f"{target}.system.buckets.newColl"), 20)
    setup(timeseries={"timeField": "time"})
    fails(rename("coll", f"{main.name}.system.buckets.newColl"), 20, 166)
    setup(timeseries={"timeField": "time"})
    fails(rename("system.buckets.coll", f"{target}.newColl"), 20)
    client.drop_database(main.name)
    client.drop_database("ts_rename_buckets_other")


def test_reindex_on_timeseries_view(db):
    ts = _ts(db, "reindex_ts", time="t")
    ts.insert_one({"t": NOW})
    fails(lambda: db.command("reIndex", "reindex_ts"), 166)  # 7.0: the time-series collection is a view
    db.drop_collection("regular")
    db.regular.insert_one({"a": 1})
    db.regular.create_index([("a", 1)])
    assert db.command("reIndex", "regular")["ok"] == 1
    db.drop_collection("regular_view")
    db.command("create", "regular_view", viewOn="regular", pipeline=[])
    fails(lambda: db.command("reIndex", "regular_view"), 166)
