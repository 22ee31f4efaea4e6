"""Geospatial queries through pymongo, checked against independently computed expectations.

Spherical distances are recomputed with geographiclib on mongod's sphere (radius 6378.1 km, no
flattening); planar ones with plain arithmetic; regions use hand-built fixtures with every point
well inside or well outside (no boundary cases).
"""

from __future__ import annotations

import datetime
import math
import random

import pytest
from geographiclib.geodesic import Geodesic
from pymongo.errors import OperationFailure, WriteError

R = 6378100.0
SPHERE = Geodesic(R, 0.0)

pytestmark = pytest.mark.commands("createIndexes", "find", "aggregate", "insert")


def metres(a, b) -> float:
    """Great-circle distance between two (lng, lat) points on mongod's sphere."""
    return SPHERE.Inverse(a[1], a[0], b[1], b[0])["s12"]


def _places(n=60, seed=7):
    rng = random.Random(seed)
    return [(round(rng.uniform(-20, 20), 4), round(rng.uniform(30, 60), 4)) for _ in range(n)]


@pytest.fixture
def places(db):
    pts = _places()
    db.p.insert_many([{"_id": i, "loc": {"type": "Point", "coordinates": list(p)}, "kind": i % 3}
                      for i, p in enumerate(pts)])
    db.p.create_index([("loc", "2dsphere")])
    return pts


def test_2dsphere_index_spec_and_key_errors(db):
    assert db.g.create_index([("loc", "2dsphere")]) == "loc_2dsphere"
    spec = next(s for s in db.g.list_indexes() if s["name"] == "loc_2dsphere")
    assert spec["key"] == {"loc": "2dsphere"} and spec["2dsphereIndexVersion"] == 3
    db.g.insert_one({"_id": 1})  # a missing geo field is not indexed (sparse), not an error
    for bad in ("here", {"type": "Point", "coordinates": [200, 0]},
                {"type": "Polygon", "coordinates": [[[0, 0], [1, 1], [0, 0]]]}):
        with pytest.raises(WriteError) as e:
            db.g.insert_one({"loc": bad})
        assert e.value.code == 16755 and "Can't extract geo keys" in str(e.value)
    assert db.g.count_documents({}) == 1


def test_near_geojson_orders_by_geodesic_distance(db, places):
    q = (3.5, 45.2)
    found = list(db.p.find({"loc": {"$near": {"$geometry": {"type": "Point", "coordinates": list(q)}}}}))
    expected = sorted(range(len(places)), key=lambda i: metres(q, places[i]))
    assert [d["_id"] for d in found] == expected


def test_near_min_and_max_distance_in_metres(db, places):
    q = (0.0, 45.0)
    lo, hi = 300_000, 900_000
    found = [d["_id"] for d in db.p.find({"loc": {"$near": {
        "$geometry": {"type": "Point", "coordinates": list(q)}, "$minDistance": lo, "$maxDistance": hi}}})]
    expected = sorted((i for i, p in enumerate(places) if lo <= metres(q, p) <= hi), key=lambda i: metres(q, places[i]))
    assert found == expected and found


def test_near_sphere_legacy_point_uses_radians(db, places):
    q = (-5.0, 50.0)
    found = [d["_id"] for d in db.p.find({"loc": {"$nearSphere": list(q), "$maxDistance": 0.1}})]
    expected = sorted((i for i, p in enumerate(places) if metres(q, p) / R <= 0.1), key=lambda i: metres(q, places[i]))
    assert found == expected


def test_geo_near_stage_distances_match_geographiclib(db, places):
    q = (10.0, 40.0)
    out = list(db.p.aggregate([
        {"$geoNear": {"near": {"type": "Point", "coordinates": list(q)}, "distanceField": "dist.m",
                      "includeLocs": "where", "query": {"kind": 1}, "maxDistance": 2_500_000}},
        {"$limit": 8},
    ]))
    expected = sorted((i for i, p in enumerate(places) if i % 3 == 1 and metres(q, p) <= 2_500_000),
                      key=lambda i: metres(q, places[i]))[:8]
    assert [d["_id"] for d in out] == expected
    for d in out:
        assert d["dist"]["m"] == pytest.approx(metres(q, places[d["_id"]]), rel=1e-9)
        assert d["where"] == {"type": "Point", "coordinates": list(places[d["_id"]])}


def test_geo_near_legacy_spherical_radians_and_multiplier(db, places):
    q = (0.0, 50.0)
    out = list(db.p.aggregate([{"$geoNear": {"near": list(q), "spherical": True, "distanceField": "d",
                                              "distanceMultiplier": 6378.1, "key": "loc", "minDistance": 0.01}},
                               {"$limit": 3}]))
    expected = sorted((i for i, p in enumerate(places) if metres(q, p) / R >= 0.01), key=lambda i: metres(q, places[i]))
    assert [d["_id"] for d in out] == expected[:3]
    for d in out:
        assert d["d"] == pytest.approx(metres(q, places[d["_id"]]) / 1000.0, rel=1e-9)  # radians x 6378.1 = km


def test_geo_near_meta_in_a_later_stage(db, places):
    out = list(db.p.aggregate([
        {"$geoNear": {"near": {"type": "Point", "coordinates": [0, 45]}, "distanceField": "d"}},
        {"$project": {"d": 1, "m": {"$meta": "geoNearDistance"}}}, {"$limit": 3}]))
    assert all(d["m"] == d["d"] for d in out)


def test_geo_within_regions(db, places):
    q, r = (0.0, 45.0), 0.08
    within_cap = {i for i, p in enumerate(places) if metres(q, p) / R <= r}
    assert abs(min(abs(metres(q, p) / R - r) for p in places)) > 1e-6  # no boundary case in the fixture
    got = {d["_id"] for d in db.p.find({"loc": {"$geoWithin": {"$centerSphere": [list(q), r]}}})}
    assert got == within_cap
    # the same through a collection scan (hint $natural) answers the same
    got_scan = {d["_id"] for d in db.p.find({"loc": {"$geoWithin": {"$centerSphere": [list(q), r]}}},
                                            hint=[("$natural", 1)])}
    assert got_scan == within_cap


def test_geo_within_polygon_and_multipolygon_hand_built(db):
    inside = [[2, 2], [5, 5], [8, 1]]
    outside = [[12, 5], [-1, -1], [5, 11]]
    docs = [{"_id": f"in{i}", "loc": {"type": "Point", "coordinates": p}} for i, p in enumerate(inside)]
    docs += [{"_id": f"out{i}", "loc": {"type": "Point", "coordinates": p}} for i, p in enumerate(outside)]
    docs += [{"_id": "line_in", "loc": {"type": "LineString", "coordinates": [[1, 1], [3, 3]]}},
             {"_id": "line_cross", "loc": {"type": "LineString", "coordinates": [[5, 5], [15, 5]]}},
             {"_id": "legacy_in", "loc": [4, 4]}]
    db.g.insert_many(docs)
    square = {"type": "Polygon", "coordinates": [[[0, 0], [10, 0], [10, 10], [0, 10], [0, 0]]]}
    for indexed in (False, True):
        if indexed:
            db.g.create_index([("loc", "2dsphere")])
        got = {d["_id"] for d in db.g.find({"loc": {"$geoWithin": {"$geometry": square}}})}
        assert got == {"in0", "in1", "in2", "line_in", "legacy_in"}
        multi = {"type": "MultiPolygon", "coordinates": [[[[0, 0], [3, 0], [3, 3], [0, 3], [0, 0]]],
                                                          [[[11, 4], [13, 4], [13, 6], [11, 6], [11, 4]]]]}
        got = {d["_id"] for d in db.g.find({"loc": {"$geoWithin": {"$geometry": multi}}})}
        assert got == {"in0", "out0", "line_in"}


def test_geo_intersects_lines_polygons_and_collections(db):
    db.g.insert_many([
        {"_id": "road", "loc": {"type": "LineString", "coordinates": [[-5, 5], [5, 5]]}},
        {"_id": "far_road", "loc": {"type": "LineString", "coordinates": [[20, 20], [21, 21]]}},
        {"_id": "park", "loc": {"type": "Polygon", "coordinates": [[[1, 1], [2, 1], [2, 2], [1, 2], [1, 1]]]}},
        {"_id": "pts", "loc": {"type": "MultiPoint", "coordinates": [[30, 30], [0.5, 0.5]]}},
        {"_id": "coll", "loc": {"type": "GeometryCollection", "geometries": [
            {"type": "Point", "coordinates": [40, 40]}, {"type": "Point", "coordinates": [9, 9]}]}},
    ])
    db.g.create_index([("loc", "2dsphere")])
    square = {"type": "Polygon", "coordinates": [[[0, 0], [10, 0], [10, 10], [0, 10], [0, 0]]]}
    got = {d["_id"] for d in db.g.find({"loc": {"$geoIntersects": {"$geometry": square}}})}
    assert got == {"road", "park", "pts", "coll"}
    line = {"type": "LineString", "coordinates": [[0, 0], [0, 10]]}
    got = {d["_id"] for d in db.g.find({"loc": {"$geoIntersects": {"$geometry": line}}})}
    assert got == {"road"}


def test_planar_operators_match_legacy_points_only(db):
    db.g.insert_many([{"_id": i, "p": [i, i]} for i in range(10)] + [{"_id": "json", "p": {"type": "Point",
                                                                                            "coordinates": [3, 3]}}])
    for indexed in (False, True):
        if indexed:
            with pytest.raises(OperationFailure) as e:  # a 2d index holds legacy points only
                db.g.create_index([("p", "2d")])
            assert e.value.code == 13026
            db.g.delete_one({"_id": "json"})
            db.g.create_index([("p", "2d")])
        # a GeoJSON Point is read as its (lng, lat) by the planar operators (mongod 7.0,
        # jstests geo_allowedcomparisons.js); only the 2d index refuses it
        json = set() if indexed else {"json"}
        assert {d["_id"] for d in db.g.find({"p": {"$geoWithin": {"$box": [[2, 2], [5, 5]]}}})} == {2, 3, 4, 5} | json
        assert {d["_id"] for d in db.g.find({"p": {"$geoWithin": {"$center": [[0, 0], 3]}}})} == {0, 1, 2}
        tri = [[0, 0], [9, 0], [9, 9]]  # x >= y: the diagonal points lie on its edge (inside)
        assert {d["_id"] for d in db.g.find({"p": {"$geoWithin": {"$polygon": tri}}})} == set(range(10)) | json


def test_2d_index_near_is_planar(db):
    pts = {i: (random.Random(i).uniform(-50, 50), random.Random(i + 99).uniform(-50, 50)) for i in range(40)}
    db.g.insert_many([{"_id": i, "p": list(p)} for i, p in pts.items()])
    db.g.create_index([("p", "2d")])
    q = (3.0, -4.0)
    got = [d["_id"] for d in db.g.find({"p": {"$near": list(q), "$maxDistance": 30}})]
    expected = sorted((i for i, p in pts.items() if math.dist(q, p) <= 30), key=lambda i: math.dist(q, pts[i]))
    assert got == expected
    out = list(db.g.aggregate([{"$geoNear": {"near": list(q), "distanceField": "d"}}, {"$limit": 5}]))
    assert [d["d"] for d in out] == pytest.approx(sorted(math.dist(q, p) for p in pts.values())[:5])
    with pytest.raises(WriteError) as e:
        db.g.insert_one({"p": [181, 0]})
    assert e.value.code == 13027


def test_compound_geo_index_with_equality_prefix(db, places):
    db.c.insert_many([{"_id": i, "kind": i % 3, "loc": {"type": "Point", "coordinates": list(p)}}
                      for i, p in enumerate(places)])
    db.c.create_index([("kind", 1), ("loc", "2dsphere")])
    q = (0.0, 45.0)
    got = [d["_id"] for d in db.c.find({"kind": 2, "loc": {"$near": {"$geometry": {"type": "Point",
                                                                                   "coordinates": list(q)}}}})]
    assert got == sorted((i for i in range(len(places)) if i % 3 == 2), key=lambda i: metres(q, places[i]))


def test_near_without_a_geo_index_is_refused_like_mongod(db):
    db.g.insert_one({"loc": [0, 0]})
    with pytest.raises(OperationFailure) as e:
        list(db.g.find({"loc": {"$near": {"$geometry": {"type": "Point", "coordinates": [0, 0]}}}}))
    assert e.value.code == 291 and "unable to find index for $geoNear query" in str(e.value)
    with pytest.raises(OperationFailure) as e:
        list(db.g.aggregate([{"$geoNear": {"near": [0, 0], "distanceField": "d"}}]))
    assert e.value.code == 27 and "requires a 2d or 2dsphere index" in str(e.value)


@pytest.mark.parametrize("pipeline, code", [
    ([{"$match": {}}, {"$geoNear": {"near": [0, 0], "distanceField": "d"}}], 40602),
    ([{"$geoNear": {"distanceField": "d"}}], 5860400),
    ([{"$geoNear": {"near": [0, 0]}}], 16606),
    ([{"$geoNear": {"near": [0, 0], "distanceField": "d", "limit": 5}}], 50858),
    ([{"$geoNear": {"near": [0, 0], "distanceField": "d", "maxDistance": -1}}], 2),
    ([{"$geoNear": {"near": [0, 0], "distanceField": "d", "key": 1}}], 14),
    ([{"$match": {"loc": {"$near": [0, 0]}}}], 5626500),
])
def test_geo_near_stage_errors(db, places, pipeline, code):
    with pytest.raises(OperationFailure) as e:
        list(db.p.aggregate(pipeline))
    assert e.value.code == code


def test_count_with_near_is_refused_and_geo_within_counts(db, places):
    with pytest.raises(OperationFailure) as e:
        db.p.count_documents({"loc": {"$near": {"$geometry": {"type": "Point", "coordinates": [0, 45]}}}})
    assert e.value.code == 5626500
    q, r = (0.0, 45.0), 0.1
    assert db.p.count_documents({"loc": {"$geoWithin": {"$centerSphere": [list(q), r]}}}) == sum(
        metres(q, p) / R <= r for p in places)


def test_update_and_delete_take_the_nearest(db, places):
    q = (1.0, 44.0)
    nearest = min(range(len(places)), key=lambda i: metres(q, places[i]))
    near = {"loc": {"$near": {"$geometry": {"type": "Point", "coordinates": list(q)}}}}
    assert db.p.update_one(near, {"$set": {"hit": True}}).modified_count == 1
    assert db.p.find_one({"hit": True})["_id"] == nearest
    assert db.p.delete_one(near).deleted_count == 1
    assert db.p.find_one({"_id": nearest}) is None


@pytest.mark.parametrize("flt, code", [
    ({"loc": {"$geoWithin": {"$geometry": {"type": "Point", "coordinates": [0, 0]}}}}, 2),
    ({"loc": {"$geoWithin": {"$centerSphere": [[0, 0], -1]}}}, 2),
    ({"loc": {"$geoIntersects": {"$box": [[0, 0], [1, 1]]}}}, 2),
    ({"loc": {"$near": {"$geometry": {"type": "Point", "coordinates": [0, 0]}, "$maxDistance": -5}}}, 2),
])
def test_bad_geo_operands_are_bad_value(db, places, flt, code):
    with pytest.raises(OperationFailure) as e:
        list(db.p.find(flt))
    assert e.value.code == code


T0 = datetime.datetime(2024, 1, 1)


def test_time_series_2dsphere_index_and_geo_near_over_the_view(db):
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    pts = _places(40, seed=3)
    db.ts.insert_many([{"t": T0 + datetime.timedelta(minutes=i), "m": i % 4,
                        "loc": {"type": "Point", "coordinates": list(p)}} for i, p in enumerate(pts)])
    db.ts.create_index([("loc", "2dsphere")])
    assert any(s["key"] == {"loc": "2dsphere"} for s in db.ts.list_indexes())
    bucket_keys = [s["key"] for s in db["system.buckets.ts"].list_indexes()]
    assert {"data.loc": "2dsphere_bucket"} in bucket_keys
    q = (0.0, 45.0)
    out = list(db.ts.aggregate([
        {"$geoNear": {"near": {"type": "Point", "coordinates": list(q)}, "key": "loc", "distanceField": "d",
                      "maxDistance": 1_500_000}},
        {"$project": {"_id": 0, "t": 1, "d": 1}}]))
    expected = sorted((i for i, p in enumerate(pts) if metres(q, p) <= 1_500_000), key=lambda i: metres(q, pts[i]))
    assert [d["t"] for d in out] == [T0 + datetime.timedelta(minutes=i) for i in expected]
    for d, i in zip(out, expected, strict=True):
        assert d["d"] == pytest.approx(metres(q, pts[i]), rel=1e-9)
    r = 0.1
    got = db.ts.count_documents({"loc": {"$geoWithin": {"$centerSphere": [list(q), r]}}})
    assert got == sum(metres(q, p) / R <= r for p in pts)
    with pytest.raises(OperationFailure) as e:  # without 'key' mongod cannot place the stage
        list(db.ts.aggregate([{"$geoNear": {"near": list(q), "distanceField": "d"}}]))
    assert e.value.code == 40602
    with pytest.raises(OperationFailure) as e:
        list(db.ts.find({"loc": {"$near": {"$geometry": {"type": "Point", "coordinates": list(q)}}}}))
    assert e.value.code == 5626500
