"""MongoDB's geo jstests ported to pymongo against a real Tidemark server: 2d and 2dsphere indexes,
``$geoWithin`` (``$box``, ``$center``, ``$centerSphere``, ``$polygon``, ``$geometry``), ``$geoIntersects``,
``$near``/``$nearSphere`` with ``$minDistance``/``$maxDistance``, ``$geoNear`` stage options and the
errors of malformed GeoJSON and index options.

Ported from ``jstests/core/index/geo/`` in mongodb/mongo (``jstests/core/`` in older versions), with
MongoDB 7.0's behaviour as the reference: geo1.js, geo3.js, geo6.js, geo7.js, geo9.js, geo10.js,
geob.js, geo_2d_point_near_zero.js, geo_2d_trailing_fields.js, geo_2d_with_geojson_point.js,
geo_allowedcomparisons.js, geo_array0.js, geo_big_polygon.js, geo_box1.js, geo_box1_noindex.js,
geo_box2.js, geo_center_sphere1.js, geo_center_sphere2.js, geo_circle1.js, geo_circle1_noindex.js,
geo_circle2.js, geo_distinct.js, geo_exactfetch.js, geo_fiddly_box.js, geo_invalid_2d_params.js,
geo_invalid_polygon.js, geo_max.js, geo_mindistance.js, geo_mindistance_boundaries.js,
geo_multikey0.js, geo_multinest0.js, geo_near_point_query.js, geo_nearwithin.js, geo_oob_sphere.js,
geo_operator_crs.js, geo_or.js, geo_poly_edge.js, geo_poly_line.js, geo_polygon1.js,
geo_polygon1_noindex.js, geo_polygon3.js, geo_regex0.js, geo_s2cursorlimitskip.js,
geo_s2dedupnear.js, geo_s2descindex.js, geo_s2disjoint_holes.js, geo_s2dupe_points.js,
geo_s2edgecases.js, geo_s2exact.js, geo_s2holesameasshell.js, geo_s2index.js,
geo_s2indexversion1.js, geo_s2intersection.js, geo_s2largewithin.js, geo_s2meridian.js,
geo_s2multi.js, geo_s2near.js, geo_s2near_equator_opposite.js, geo_s2nearcorrect.js,
geo_s2nearwithin.js, geo_s2nongeoarray.js, geo_s2nonstring.js, geo_s2nopoints.js,
geo_s2oddshapes.js, geo_s2ordering.js, geo_s2overlappingpolys.js, geo_s2polywithholes.js,
geo_s2selfintersectingpoly.js, geo_s2sparse.js, geo_s2twofields.js, geo_s2validindex.js,
geo_s2within.js, geo_s2within_line_polygon_sphere.js, geo_sort1.js, geo_withinquery.js,
geonear_cmd_input_validation.js, geonear_key.js; and from ``jstests/aggregation/sources/geonear/``:
collation_geonear.js, distancefield_and_includelocs.js, geonear_hint.js, geonear_let.js,
geonear_mindistance.js, mindistance_and_maxdistance.js, requires_geo_index.js, valid_type.js (its
codes; the 8.3 message is not checked). The ``*_noindex`` variants are the indexed tests' first half.

Left out: explain shapes and keys-examined counts, ``validate()`` key counts, profiler counts, timings,
sharding variants, and what arrived after 7.0 (geo_near_bounds_overflow.js, geo_key_extraction_failure.js,
geo_s2stale_polygon_parse.js, geonear_no_distancefield.js, expression min/maxDistance). Every
``$geoWithin``/``$geoIntersects`` query runs both without and with the geo index and the answers must
be equal (``found_both_ways``); Hypothesis draws boxes, circles and spherical caps over a grid and
checks both answers against a plain reference model (boundaries inclusive, as mongod's).
"""

from __future__ import annotations

import math
import random

import pytest
from bson import Int64
from harness.jstests import ids, xf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure, WriteError

pytestmark = pytest.mark.commands("insert", "find", "count", "aggregate", "createIndexes", "dropIndexes", "distinct",
                                  "delete", "drop", "create", "listIndexes")

BAD_VALUE = 2
TYPE_MISMATCH = 14
CANT_EXTRACT_GEO_KEYS = 16755
NO_QUERY_PLAN = 291
EARTH_RADIUS_M = 6378.1 * 1000
KM = 1000.0

# Known differences from MongoDB 7.0, one reason per cause (each used by strict xfails below).
POLE_TO_POLE_LOOP = ("a Polygon loop with antipodal adjacent vertices (south pole -> north pole -> [180, 0]) "
                     "gets the other hemisphere as its interior; mongod's S2 keeps the eastern one. Fix belongs "
                     "in server/query/geo_parse.py _loop")
NEAR_SPHERE_2D_WRAPS = ("$nearSphere over a 2d index finds points across the antimeridian at their spherical "
                        "distance ([-180, 0] is 0 from [180, 0]); mongod's 2d near search grows flat annuli that do "
                        "not wrap, so [179.999, 0] comes second. Fix belongs in server/query/geo_near.py near_scan, "
                        "together with server/query/plan_special.py preferring the 2dsphere index for $nearSphere "
                        "when both exist (jstests views geo test expects wrapping then). Tried and reverted: keeping "
                        "only points whose flat distance in degrees lies in [min, max] (outer at most 180) breaks "
                        "three passing rows: a point at exactly $maxDistance off the axes (its flat distance exceeds "
                        "the spherical one), multi-location documents (kept when any point is in the annulus) and "
                        "a view row; mongod's exact flat bounds for a spherical query (GeoNear2DStage's "
                        "fullBounds) are needed first")


# --------------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------------

def found_both_ways(coll, query: dict, index, **options) -> list:
    """The ``_id``s ``query`` finds with no geo index and with ``index``; the two must be equal."""
    for spec in coll.index_information():
        if spec != "_id_":
            coll.drop_index(spec)
    plain = ids(coll.find(query))
    coll.create_index(index, **options)
    indexed = ids(coll.find(query))
    assert plain == indexed, (query, plain, indexed)
    assert coll.count_documents(query) == len(indexed)
    return indexed


def count_cmd(coll, query: dict) -> int:
    """The ``count`` command (the shell's ``find().count()``): unlike ``count_documents`` (an
    aggregation, where ``$near`` is refused with 5626500) it takes ``$near``/``$nearSphere``."""
    return coll.database.command("count", coll.name, query=query)["n"]


def grid(coll, lo: int, hi: int) -> list[dict]:
    docs = [{"_id": x * 1000 + y, "loc": [x, y]} for x in range(lo, hi + 1) for y in range(lo, hi + 1)]
    coll.insert_many(docs)
    return docs


def assert_code(exc: pytest.ExceptionInfo, *codes: int) -> None:
    """mongod's codes, never Tidemark's internal failure (1) or a Python message."""
    assert exc.value.code in codes, (exc.value.code, exc.value.details)
    assert "Traceback" not in str(exc.value) and "Error(" not in str(exc.value)


def great_circle(a, b) -> float:
    """Radians between two (lng, lat) points (haversine)."""
    lng1, lat1, lng2, lat2 = map(math.radians, (*a, *b))
    h = (math.sin((lat2 - lat1) / 2) ** 2
         + math.cos(lat1) * math.cos(lat2) * math.sin((lng2 - lng1) / 2) ** 2)
    return 2 * math.asin(min(1.0, math.sqrt(h)))


# --------------------------------------------------------------------------------------------------
# geo_box1.js, geo_box1_noindex.js, geo_array0.js
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("box", [[[1, 2], [4, 5]], [[1, 1], [2, 2]], [[0, 2], [4, 5]], [[1, 1], [2, 8]]])
def test_box_counts_grid_points_inclusive(db, box):
    grid(db.t, 0, 20)
    found = found_both_ways(db.t, {"loc": {"$within": {"$box": box}}}, [("loc", "2d")])
    assert len(found) == (1 + box[1][0] - box[0][0]) * (1 + box[1][1] - box[0][1])


def test_box_outside_everything_and_covering_everything(db):
    docs = grid(db.t, 0, 20)
    assert found_both_ways(db.t, {"loc": {"$within": {"$box": [[100, 100], [110, 110]]}}}, [("loc", "2d")]) == []
    assert len(found_both_ways(db.t, {"loc": {"$within": {"$box": [[0, 0], [110, 110]]}}},
                               [("loc", "2d")])) == len(docs)
    assert len(list(db.t.find({"loc": {"$within": {"$box": [[0, 0], [110, 110]]}}}).limit(57))) == 57


@pytest.mark.parametrize("box", [[[110, 110], [0, 0]], [[110, 0], [0, 110]], [[0, 110], [110, 0]]])
def test_box_corners_in_any_order(db, box):
    # SERVER-13621: the corners are put in order.
    docs = grid(db.t, 0, 20)
    assert len(found_both_ways(db.t, {"loc": {"$within": {"$box": box}}}, [("loc", "2d")])) == len(docs)


def test_box_matches_any_point_of_an_array_of_points(db):
    db.t.insert_many([{"_id": i, "zip": f"1000{i}", "loc": [[10 * i, 10 * i], [50, 50]]} for i in range(1, 5)])
    assert len(found_both_ways(db.t, {"loc": {"$within": {"$box": [[0, 0], [45, 45]]}}},
                               [("loc", "2d"), ("zip", 1)])) == 4
    assert len(found_both_ways(db.t, {"loc": {"$within": {"$box": [[45, 45], [50, 50]]}}},
                               [("loc", "2d"), ("zip", 1)])) == 4


# --------------------------------------------------------------------------------------------------
# geo_circle1.js, geo_circle1_noindex.js
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("center,radius", [([5, 5], 3), ([5, 5], 1), ([5, 5], 5), ([0, 5], 5)])
def test_center_counts_points_within_radius_inclusive(db, center, radius):
    docs = grid(db.t, 0, 20)
    expected = sorted(d["_id"] for d in docs
                      if (d["loc"][0] - center[0]) ** 2 + (d["loc"][1] - center[1]) ** 2 <= radius ** 2)
    assert found_both_ways(db.t, {"loc": {"$within": {"$center": [center, radius]}}}, [("loc", "2d")]) == expected


# --------------------------------------------------------------------------------------------------
# geo_polygon1.js, geo_polygon1_noindex.js
# --------------------------------------------------------------------------------------------------

def test_polygon_triangle_box_object_form_and_big_box(db):
    docs = [{"_id": x * 10 + y, "loc": [x, y]} for x in range(1, 9) for y in range(1, 9)]
    db.t.insert_many(docs)
    index = [("loc", "2d")]
    assert len(found_both_ways(db.t, {"loc": {"$within": {"$polygon": [[0, 0], [1, 1], [0, 2]]}}}, index)) == 1
    assert len(found_both_ways(db.t, {"loc": {"$within": {"$polygon": [[0, 0], [0, 10], [10, 10], [10, 0]]}}},
                               index)) == len(docs)
    obj = {"a": [-10, -10], "b": [-10, 10], "c": [10, 10], "d": [10, -10]}
    assert len(found_both_ways(db.t, {"loc": {"$within": {"$polygon": obj}}}, index)) == len(docs)
    big = [[-100, -100], [-100, 100], [100, 100], [100, -100]]
    assert len(found_both_ways(db.t, {"loc": {"$within": {"$polygon": big}}}, index)) == len(docs)


def test_polygon_pacman_excludes_the_mouth(db):
    pacman = [[0, 2], [0, 4], [2, 6], [4, 6], [6, 4], [4, 3], [6, 2], [4, 0], [2, 0]]
    db.t.insert_many([{"_id": 1, "loc": [1, 3]}, {"_id": 2, "loc": [5, 3]}, {"_id": 3, "loc": [3, 7]},
                      {"_id": 4, "loc": [3, -1]}])
    assert found_both_ways(db.t, {"loc": {"$within": {"$polygon": pacman}}}, [("loc", "2d")]) == [1]


@pytest.mark.parametrize("polygon", [[1, 2], [[1, 2]], [[1, 2], [2, 3]]], ids=["numbers", "one", "two"])
def test_polygon_needs_three_points(db, polygon):
    db.t.insert_one({"loc": [1, 1]})
    with pytest.raises(OperationFailure) as e:
        list(db.t.find({"loc": {"$within": {"$polygon": polygon}}}))
    assert_code(e, BAD_VALUE)


# --------------------------------------------------------------------------------------------------
# geo_invalid_polygon.js, geo_s2polywithholes.js
# --------------------------------------------------------------------------------------------------

def test_index_build_over_invalid_polygon_names_the_document(db):
    geometry = {"type": "Polygon", "coordinates": [[[0, 0], [0, 1], [1, 1], [-2, -1], [0, 0]]]}
    db.t.insert_one({"_id": 42, "geometry": geometry})
    with pytest.raises(OperationFailure) as e:
        db.t.create_index([("geometry", "2dsphere")])
    assert_code(e, CANT_EXTRACT_GEO_KEYS)
    assert "42" in str(e.value)


SQUARE = [[0, 0], [0, 1], [1, 1], [1, 0], [0, 0]]


def test_polygon_with_no_hole_contains_center_edge_and_corner(db):
    db.t.insert_many([{"_id": 1, "geo": {"type": "Point", "coordinates": [0.5, 0.5]}},
                      {"_id": 2, "geo": {"type": "Point", "coordinates": [0, 0.5]}},
                      {"_id": 3, "geo": {"type": "Point", "coordinates": [0, 0]}}])
    q = {"geo": {"$within": {"$geometry": {"type": "Polygon", "coordinates": [SQUARE]}}}}
    assert found_both_ways(db.t, q, [("geo", "2dsphere")]) == [1, 2, 3]


@pytest.mark.parametrize("rings", [
    [SQUARE, [[0.4, 0.9], [0.4, 1.1], [0.5, 1.1], [0.5, 0.9], [0.4, 0.9]]],
    [SQUARE, [[0.2, 0.6], [0.2, 0.9], [0.6, 0.9], [0.6, 0.6], [0.2, 0.6]],
     [[0.5, 0.4], [0.5, 0.7], [0.8, 0.7], [0.8, 0.4], [0.5, 0.4]]],
    [SQUARE, [[0.1, 0.1], [0.1, 0.9], [0.9, 0.9], [0.9, 0.1], [0.1, 0.1]],
     [[0.2, 0.2], [0.2, 0.8], [0.8, 0.8], [0.8, 0.2], [0.2, 0.2]]],
    [[[0.1, 0.1], [0.1, 0.9], [0.9, 0.9], [0.9, 0.1], [0.1, 0.1]], SQUARE],
    [SQUARE, [[0, 0], [0.1, 0.9], [1, 1], [0.9, 0.1], [0, 0]]],
], ids=["protruding_hole", "overlapping_holes", "nested_hole", "hole_first", "shared_vertices"])
def test_invalid_polygon_with_holes_is_rejected(db, rings):
    db.t.create_index([("geo", "2dsphere")])
    bad = {"type": "Polygon", "coordinates": rings}
    with pytest.raises(WriteError) as e:
        db.t.insert_one({"geo": bad})
    assert_code(e, CANT_EXTRACT_GEO_KEYS)
    with pytest.raises(OperationFailure) as e:
        list(db.t.find({"geo": {"$within": {"$geometry": bad}}}))
    assert_code(e, BAD_VALUE)
    assert db.t.count_documents({}) == 0


# --------------------------------------------------------------------------------------------------
# geo_s2within.js
# --------------------------------------------------------------------------------------------------

def test_within_polygon_needs_the_whole_line(db):
    poly = {"type": "Polygon", "coordinates": [[[40, 5], [40, 6], [41, 6], [41, 5], [40, 5]]]}
    db.t.insert_many([{"_id": 1, "geo": {"type": "LineString", "coordinates": [[40.1, 5.1], [40.2, 5.2]]}},
                      {"_id": 2, "geo": {"type": "LineString", "coordinates": [[40.1, 5.1], [42, 7]]}}])
    assert found_both_ways(db.t, {"geo": {"$within": {"$geometry": poly}}}, [("geo", "2dsphere")]) == [1]


def test_within_polygon_with_hole_excludes_the_hole(db):
    poly = {"type": "Polygon", "coordinates": [[[40, 5], [40, 8], [43, 8], [43, 5], [40, 5]],
                                               [[41, 6], [42, 6], [42, 7], [41, 7], [41, 6]]]}
    db.t.insert_many([
        {"_id": 1, "geo": {"type": "Point", "coordinates": [40, 5]}},
        {"_id": 2, "geo": {"type": "Point", "coordinates": [41.1, 6.1]}},
        {"_id": 3, "geo": {"type": "LineString", "coordinates": [[41.1, 6.1], [41.2, 6.2]]}},
        {"_id": 4, "geo": {"type": "LineString", "coordinates": [[41.5, 6.5], [42.5, 7.5]]}},
    ])
    assert found_both_ways(db.t, {"geo": {"$within": {"$geometry": poly}}}, [("geo", "2dsphere")]) == [1]


# --------------------------------------------------------------------------------------------------
# geo_s2index.js
# --------------------------------------------------------------------------------------------------

POINT_A = {"type": "Point", "coordinates": [40, 5]}
POINT_B = {"type": "Point", "coordinates": [41, 6]}
POINT_D = {"type": "Point", "coordinates": [41.001, 6.001]}
SOME_LINE = {"type": "LineString", "coordinates": [[40, 5], [40, 5], [40, 5], [41, 6], [41, 6]]}
SOME_POLY = {"type": "Polygon", "coordinates": [[[40, 5], [40, 6], [41, 6], [41, 5], [40, 5]]]}


@pytest.fixture
def s2index_docs(db):
    db.t.insert_many([
        {"_id": "line", "geo": SOME_LINE, "nonGeo": "someline"},
        {"_id": "a", "geo": POINT_A, "nonGeo": "pointA"},
        {"_id": "d", "geo": POINT_D, "nonGeo": "pointD"},
        {"_id": "b", "geo": POINT_B, "nonGeo": "pointB"},
        {"_id": "c", "geo": dict(POINT_B)},
        {"_id": "e", "geo": {"type": "Point", "coordinates": [40.6, 5.4]}},
        {"_id": "none", "nonGeo": "noGeoField!"},
        {"_id": "poly", "geo": SOME_POLY, "nonGeo": "somepoly"},
    ])
    return db.t


@pytest.mark.parametrize("geometry,count", [(POINT_A, 3), (POINT_B, 4), (POINT_D, 1), (SOME_LINE, 5),
                                            (SOME_POLY, 6)], ids=["A", "B", "D", "line", "poly"])
def test_s2index_intersects_counts(s2index_docs, geometry, count):
    q = {"geo": {"$geoIntersects": {"$geometry": geometry}}}
    assert len(found_both_ways(s2index_docs, q, [("geo", "2dsphere"), ("nonGeo", 1)])) == count


def test_s2index_within_limit_and_conjunction(s2index_docs):
    assert len(found_both_ways(s2index_docs, {"geo": {"$within": {"$geometry": SOME_POLY}}},
                               [("geo", "2dsphere"), ("nonGeo", 1)])) == 6
    q = {"geo": {"$geoIntersects": {"$geometry": SOME_POLY}}}
    assert len(list(s2index_docs.find(q).limit(1))) == 1
    assert ids(s2index_docs.find({"nonGeo": "pointA", **q})) == ["a"]


def test_s2index_line_with_duplicate_points_is_indexed(db):
    db.t.insert_one({"geo": SOME_LINE, "nonGeo": "someline"})
    db.t.create_index([("geo", "2dsphere")])
    found = list(db.t.find({"geo": {"$geoIntersects": {"$geometry": {"type": "Point", "coordinates": [40, 5]}}}},
                           {"_id": 0}))
    assert found == [{"geo": SOME_LINE, "nonGeo": "someline"}]


def test_s2index_bad_operators_fail(db):
    db.t.create_index([("loc", "2dsphere"), ("x", 1)])
    db.t.insert_one({"loc": [0, 0]})
    with pytest.raises(OperationFailure) as e:
        db.t.count_documents({"loc": {"$foo": [0, 0]}})
    assert_code(e, BAD_VALUE)
    with pytest.raises(OperationFailure) as e:
        db.t.count_documents({"nonGeo": "pointA", "geo": {"$geoIntersects": {"$geometry": SOME_POLY},
                                                          "$near": {"$geometry": SOME_POLY}}})
    assert e.value.code not in (1, None)


def test_s2index_crs_must_be_wgs84(db):
    db.t.create_index([("loc", "2dsphere")])
    with pytest.raises(WriteError) as e:
        db.t.insert_one({"loc": {"type": "Point", "coordinates": [40, 5],
                                 "crs": {"type": "name", "properties": {"name": "EPSG:2000"}}}})
    assert_code(e, CANT_EXTRACT_GEO_KEYS)
    assert db.t.count_documents({}) == 0
    db.t.insert_one({"loc": {"type": "Point", "coordinates": [40, 5]}})
    for name in ("EPSG:4326", "urn:ogc:def:crs:OGC:1.3:CRS84"):
        db.t.insert_one({"loc": {"type": "Point", "coordinates": [40, 5],
                                 "crs": {"type": "name", "properties": {"name": name}}}})
    assert db.t.count_documents({}) == 3


def test_s2index_levels_are_checked_and_kept(db):
    db.t.insert_one({"loc": [0, 0]})
    db.t.create_index([("loc", "2dsphere")], finestIndexedLevel=17, coarsestIndexedLevel=5)
    near = {"loc": {"$geoNear": {"$geometry": {"type": "Point", "coordinates": [0, 0]}}}}
    assert db.t.find_one(near) is not None
    db.t.drop()
    db.t.insert_one({"loc": [0, 0]})
    for bad in ({"finestIndexedLevel": 31, "coarsestIndexedLevel": 5},
                {"finestIndexedLevel": 30, "coarsestIndexedLevel": -1}):
        with pytest.raises(OperationFailure) as e:
            db.t.create_index([("loc", "2dsphere")], **bad)
        assert e.value.code not in (1, None)
    db.t.create_index([("loc", "2dsphere")], finestIndexedLevel=30, coarsestIndexedLevel=0)
    assert db.t.find_one(near) is not None
    spec = next(s for s in db.t.list_indexes() if "2dsphereIndexVersion" in s)
    assert (spec["finestIndexedLevel"], spec["coarsestIndexedLevel"]) == (30, 0)


@pytest.mark.parametrize("option,value", [("2dsphereIndexVersion", "NOT_A_NUMBER"),
                                          ("finestIndexedLevel", "NOT_A_NUMBER"),
                                          ("coarsestIndexedLevel", "NOT_A_NUMBER"),
                                          ("finestIndexedLevel", True), ("coarsestIndexedLevel", True)])
def test_s2index_option_types(db, option, value):
    # SERVER-21491
    with pytest.raises(OperationFailure) as e:
        db.t.create_index([("loc", "2dsphere")], **{option: value})
    assert_code(e, TYPE_MISMATCH)


def test_s2index_small_polygon_near_minus_45_is_indexable(db):
    # SERVER-19674
    db.t.insert_one({"loc": {"type": "Polygon", "coordinates": [[[-45, 0], [-44.875, 0], [-44.875, 0.125],
                                                                  [-45, 0.125], [-45, 0]]]}})
    db.t.create_index([("loc", "2dsphere")])


# --------------------------------------------------------------------------------------------------
# geo_allowedcomparisons.js
# --------------------------------------------------------------------------------------------------

GJ_POINT = {"type": "Point", "coordinates": [0, 0]}
GJ_POLY = {"type": "Polygon", "coordinates": [[[-5, -5], [-5, 5], [5, 5], [5, -5], [-5, -5]]]}
GJ_LINE = {"type": "LineString", "coordinates": [[0, 0], [1, 1]]}
OLD_POINT = [0, 0]
OLD_CENTER_SPHERE = [[0, 0], math.pi / 180]
OLD_BOX = [[-5, -5], [5, 5]]
OLD_POLYGON = [[-5, -5], [-5, 5], [5, 5], [5, -5], [-5, -5]]
OLD_CENTER = [[0, 0], 1]


def test_2d_index_rejects_geojson_and_shapes(db):
    db.t.create_index([("geo", "2d")])
    for bad in (GJ_POINT, GJ_LINE, GJ_POLY, OLD_CENTER_SPHERE, OLD_CENTER):
        with pytest.raises(WriteError) as e:
            db.t.insert_one({"geo": bad})
        assert e.value.code not in (1, None)
    db.t.insert_one({"geo": OLD_POINT})
    assert db.t.count_documents({}) == 1


def test_legacy_operators_see_geojson_points(db):
    db.t.insert_many([{"gj": GJ_LINE}, {"gj": GJ_POLY}, {"gjp": {"type": "Point", "coordinates": [0, 0.001]}}])
    for op, arg in (("$box", OLD_BOX), ("$polygon", OLD_POLYGON), ("$center", OLD_CENTER),
                    ("$centerSphere", OLD_CENTER_SPHERE)):
        assert db.t.count_documents({"gjp": {"$geoWithin": {op: arg}}}) == 1, op


@pytest.mark.parametrize("index", [None, "2d", "2dsphere"])
def test_allowed_comparisons_per_index(db, index):
    db.t.insert_many([{"geo": OLD_POINT}, {"gj": GJ_LINE}, {"gj": GJ_POLY},
                      {"gjp": {"type": "Point", "coordinates": [0, 0.001]}}])
    if index:
        db.t.create_index([("geo", index)])
    if index == "2dsphere":
        with pytest.raises(WriteError) as e:  # 2dsphere does not index arrays of GeoJSON points
            db.t.insert_one({"geo": [{"type": "Point", "coordinates": [0, 0.001]}, GJ_POINT]})
        assert_code(e, CANT_EXTRACT_GEO_KEYS)
    for op, arg in (("$box", OLD_BOX), ("$polygon", OLD_POLYGON), ("$center", OLD_CENTER),
                    ("$centerSphere", OLD_CENTER_SPHERE)):
        assert db.t.count_documents({"geo": {"$geoWithin": {op: arg}}}) == 1, op
    for bad in ({"$polygon": GJ_POLY}, {"$geometry": OLD_POLYGON}, {"$geometry": OLD_BOX},
                {"$geometry": OLD_CENTER}, {"$geometry": OLD_CENTER_SPHERE}):
        with pytest.raises(OperationFailure) as e:
            list(db.t.find({"geo": {"$geoWithin": bad}}))
        assert_code(e, BAD_VALUE)
    assert db.t.count_documents({"geo": {"$geoWithin": {"$geometry": GJ_POLY}}}) == 1
    assert db.t.count_documents({"geo": {"$geoIntersects": {"$geometry": GJ_POLY}}}) == 1
    assert db.t.count_documents({"geo": {"$geoIntersects": {"$geometry": OLD_POINT}}}) == 1
    assert db.t.count_documents({"geo": {"$geoIntersects": {"$geometry": GJ_POINT}}}) == 1
    if index == "2dsphere":
        for bad in (OLD_BOX, OLD_POLYGON, OLD_CENTER, OLD_CENTER_SPHERE):
            with pytest.raises(WriteError) as e:
                db.t.insert_one({"geo": bad})
            assert_code(e, CANT_EXTRACT_GEO_KEYS)


# --------------------------------------------------------------------------------------------------
# geo_invalid_2d_params.js
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("options", [{"bits": 33}, {"min": -1, "max": -1}, {"bits": -1}, {"min": 10, "max": 9}],
                         ids=["bits33", "min_eq_max", "bits_neg", "min_gt_max"])
def test_invalid_2d_index_options(db, options):
    with pytest.raises(OperationFailure) as e:
        db.t.create_index([("loc", "2d")], **options)
    assert e.value.code not in (1, None)


def test_valid_small_2d_index_options(db):
    db.t.create_index([("loc", "2d")], bits=1, min=-1, max=1)


# --------------------------------------------------------------------------------------------------
# geo_s2intersection.js
# --------------------------------------------------------------------------------------------------

@pytest.fixture
def canon(db):
    db.t.insert_many([
        {"name": "canonLine", "geo": {"type": "LineString", "coordinates": [[0.0, 0.0], [1.0, 0.0]]}},
        {"name": "canonPoint", "geo": {"type": "Point", "coordinates": [10.0, 10.0]}},
        {"name": "canonPoly", "geo": {"type": "Polygon", "coordinates": [[[50.0, 50.0], [51.0, 50.0], [51.0, 51.0],
                                                                          [50.0, 51.0], [50.0, 50.0]]]}},
    ])
    return db.t


def _line(*pts):
    return {"type": "LineString", "coordinates": [list(p) for p in pts]}


@pytest.mark.parametrize("geometry,names", [
    (_line((0.5, 0.5), (0.5, -0.5)), ["canonLine"]),
    ({"type": "Polygon", "coordinates": [[[0.4, -0.1], [0.4, 0.1], [0.6, 0.1], [0.6, -0.1], [0.4, -0.1]]]},
     ["canonLine"]),
    (_line((0.0, 0.5), (0.0, -0.5)), ["canonLine"]),
    (_line((-0.1, 0.5), (-0.1, -0.5)), []),
    (_line((-0.5, 0.0), (0.5, 0.0)), ["canonLine"]),
    (_line((0.1, 0.0), (0.9, 0.0)), []),
    (_line((0.0, 0.0), (1.0, 0.0)), ["canonLine"]),
    (_line((10.0, 11.0), (10.0, 9.0)), ["canonPoint"]),
    ({"type": "Point", "coordinates": [10.0, 10.0]}, ["canonPoint"]),
    ({"type": "Point", "coordinates": [12.0, 12.0]}, []),
    ({"type": "Point", "coordinates": [50.5, 50.5]}, ["canonPoly"]),
], ids=["cross", "poly", "vertex", "miss", "overlap", "contained", "identical", "line_point", "point_point",
        "point_miss", "point_in_poly"])
def test_intersects_canonical_shapes(canon, geometry, names):
    q = {"geo": {"$geoIntersects": {"$geometry": geometry}}}
    found = found_both_ways(canon, q, [("geo", "2dsphere")])
    assert sorted(canon.find_one({"_id": i})["name"] for i in found) == names


def test_intersects_conjunction_of_two_points(db):
    db.t.insert_one({"a": {"type": "Polygon", "coordinates": [[[0, 0], [3, 6], [6, 0], [0, 0]]]}})
    first = {"$geometry": {"type": "Point", "coordinates": [3.0, 1.0]}}
    second = {"$geometry": {"type": "Point", "coordinates": [4.0, 1.0]}}
    for q in ({"a": {"$geoIntersects": first}}, {"a": {"$geoIntersects": second}},
              {"$and": [{"a": {"$geoIntersects": first}}, {"a": {"$geoIntersects": second}}]}):
        assert len(found_both_ways(db.t, q, [("a", "2dsphere")])) == 1


# --------------------------------------------------------------------------------------------------
# geo_mindistance.js
# --------------------------------------------------------------------------------------------------

@pytest.fixture
def mindistance(db):
    db.t.insert_many([{"loc": [x, y]} for x in range(11) for y in range(11)])
    db.t.create_index([("loc", "2dsphere")])
    return db.t


def _within(coll, radius_km: float) -> int:
    return len(list(coll.aggregate([{"$geoNear": {"near": {"type": "Point", "coordinates": [0, 0]},
                                                  "distanceField": "dis", "spherical": True,
                                                  "maxDistance": radius_km * KM}}, {"$limit": 1000}])))


def _reference_within(radius_km: float, lo_km: float = -1.0) -> int:
    return sum(1 for x in range(11) for y in range(11)
               if lo_km * KM <= great_circle((0, 0), (x, y)) * EARTH_RADIUS_M <= radius_km * KM)


def test_min_distance_near_geojson_meters(mindistance):
    n = mindistance.count_documents({})
    assert _within(mindistance, 1400) == _reference_within(1400)
    pt = {"type": "Point", "coordinates": [0, 0]}
    assert count_cmd(mindistance, {"loc": {"$near": {"$geometry": pt, "$minDistance": 1400 * KM}}}) \
        == n - _within(mindistance, 1400)
    ring = {"loc": {"$near": {"$geometry": pt, "$minDistance": 500 * KM, "$maxDistance": 1000 * KM}}}
    assert count_cmd(mindistance, ring) == _within(mindistance, 1000) - _within(mindistance, 500)


def test_min_distance_near_sphere_legacy_radians_and_geojson_meters(mindistance):
    n = mindistance.count_documents({})
    rad = 1 / EARTH_RADIUS_M
    assert count_cmd(mindistance, {"loc": {"$nearSphere": [0, 0], "$minDistance": 1400 * KM * rad}}) \
        == n - _within(mindistance, 1400)
    assert count_cmd(mindistance, {"loc": {"$nearSphere": [0, 0], "$minDistance": 500 * KM * rad,
                                           "$maxDistance": 1000 * KM * rad}}) \
        == _within(mindistance, 1000) - _within(mindistance, 500)
    pt = {"type": "Point", "coordinates": [0, 0]}
    assert count_cmd(mindistance, {"loc": {"$nearSphere": pt, "$minDistance": 1400 * KM}}) \
        == n - _within(mindistance, 1400)
    assert count_cmd(mindistance, {"loc": {"$nearSphere": pt, "$minDistance": 500 * KM,
                                           "$maxDistance": 1000 * KM}}) \
        == _within(mindistance, 1000) - _within(mindistance, 500)


def test_min_distance_geo_near_stage(mindistance):
    n = mindistance.count_documents({})
    rad = 1 / EARTH_RADIUS_M

    def count(near, **opts):
        return len(list(mindistance.aggregate([{"$geoNear": {"near": near, "spherical": True,
                                                             "distanceField": "d", **opts}}])))

    gj = {"type": "Point", "coordinates": [0, 0]}
    assert count(gj, minDistance=1400 * KM) == n - _within(mindistance, 1400)
    assert count(gj, minDistance=500 * KM, maxDistance=1000 * KM) == _within(mindistance, 1000) - _within(
        mindistance, 500)
    assert count([0, 0], minDistance=1400 * KM * rad) == n - _within(mindistance, 1400)
    assert count([0, 0], minDistance=500 * KM * rad, maxDistance=1000 * KM * rad) \
        == _within(mindistance, 1000) - _within(mindistance, 500)


def test_min_distance_2d_index(db):
    db.t.create_index([("loc", "2d")])
    db.t.insert_many([{"loc": [0, 40]}, {"loc": [0, 41]}, {"loc": [0, 42]}])
    assert len(list(db.t.find({"loc": {"$near": [0, 0]}}))) == 3
    assert len(list(db.t.find({"loc": {"$near": [0, 0], "$minDistance": 41.5}}))) == 1
    assert len(list(db.t.find({"loc": {"$nearSphere": [0, 0]}}))) == 3
    assert len(list(db.t.find({"loc": {"$nearSphere": [0, 0], "$minDistance": math.radians(41.5)}}))) == 1
    res = list(db.t.aggregate([{"$geoNear": {"near": [0, 0], "spherical": False, "distanceField": "dis"}}]))
    assert [d["dis"] for d in res] == [40, 41, 42]
    res = list(db.t.aggregate([{"$geoNear": {"near": [0, 0], "minDistance": 41.5, "spherical": False,
                                             "distanceField": "dis"}}]))
    assert [d["dis"] for d in res] == [42]
    res = list(db.t.aggregate([{"$geoNear": {"near": [0, 0], "spherical": True, "distanceField": "dis"}}]))
    assert [round(d["dis"], 3) for d in res] == [round(math.radians(v), 3) for v in (40, 41, 42)]
    res = list(db.t.aggregate([{"$geoNear": {"near": [0, 0], "minDistance": math.radians(41.5),
                                             "spherical": True, "distanceField": "dis"}}]))
    assert [round(d["dis"], 3) for d in res] == [round(math.radians(42), 3)]


# --------------------------------------------------------------------------------------------------
# geo_operator_crs.js, geo_2d_with_geojson_point.js
# --------------------------------------------------------------------------------------------------

def _near_sphere_dis(coll, point) -> float:
    return next(iter(coll.find({"geo": {"$nearSphere": point}}, {"dis": {"$meta": "geoNearDistance"}})))["dis"]


def test_near_sphere_units_follow_the_query_point_2dsphere(db):
    db.t.create_index([("geo", "2dsphere")])
    db.t.insert_one({"geo": {"type": "Point", "coordinates": [90, 0]}})
    assert _near_sphere_dis(db.t, [0, 0]) == pytest.approx(math.pi / 2)
    assert _near_sphere_dis(db.t, {"type": "Point", "coordinates": [0, 0]}) == pytest.approx(
        math.pi / 2 * EARTH_RADIUS_M)


def test_near_sphere_units_2d_and_geo_near_stage_with_both_indexes(db):
    db.t.create_index([("geo", "2d")])
    db.t.insert_one({"geo": [90, 0]})
    assert _near_sphere_dis(db.t, [0, 0]) == pytest.approx(math.pi / 2)
    db.t.create_index([("geo", "2dsphere")])
    res = list(db.t.aggregate([{"$geoNear": {"near": {"type": "Point", "coordinates": [0, 0]},
                                             "distanceField": "dis", "key": "geo"}}]))
    assert res[0]["dis"] == pytest.approx(math.pi / 2 * EARTH_RADIUS_M)


def test_near_geojson_point_needs_2dsphere_index(db):
    db.t.create_index([("loc", "2d")])
    db.t.insert_one({"loc": [0, 0]})
    with pytest.raises(OperationFailure) as e:
        db.t.find_one({"loc": {"$near": {"$geometry": {"type": "Point", "coordinates": [0, 0]}}}})
    assert_code(e, NO_QUERY_PLAN)


# --------------------------------------------------------------------------------------------------
# geo_s2nongeoarray.js, geo_s2nonstring.js, geo_regex0.js
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["2d", "2dsphere"])
def test_compound_geo_index_explodes_non_geo_arrays(db, kind):
    db.t.insert_one({"geo": [40, 5], "nonGeo": [123, 456], "otherNonGeo": [{"b": [1, 2]}, {"b": [3, 4]}]})
    db.t.create_index([("geo", kind), ("nonGeo", 1), ("otherNonGeo", 1)])
    assert len(list(db.t.find({"nonGeo": 123, "geo": {"$nearSphere": [40, 5]}}))) == 1
    assert len(list(db.t.find({"otherNonGeo.b": 1, "geo": {"$nearSphere": [40, 5]}}))) == 1


def test_plain_index_on_array_of_subdocuments(db):
    db.t.insert_one({"geo": [40, 5], "nonGeo": [123, 456], "otherNonGeo": [{"b": [1, 2]}, {"b": [3, 4]}]})
    db.t.create_index([("otherNonGeo", 1)])
    assert db.t.count_documents({"otherNonGeo": {"b": [1, 2]}}) == 1
    assert db.t.count_documents({"otherNonGeo": 1}) == 0
    assert db.t.count_documents({"otherNonGeo.b": 1}) == 1


def test_near_with_string_and_missing_trailing_field(db):
    db.t.create_index([("geo", "2dsphere"), ("x", 1)])
    db.t.insert_many([{"geo": {"type": "Point", "coordinates": [0, 0]}, "x": "a"},
                      {"geo": {"type": "Point", "coordinates": [0, 0]}}])
    near = {"$near": {"$geometry": {"type": "Point", "coordinates": [0, 0]}, "$maxDistance": 20}}
    assert len(list(db.t.find({"geo": near, "x": "a"}))) == 1
    assert len(list(db.t.find({"geo": near, "x": None}))) == 1


def test_near_with_regex_on_trailing_field(db):
    db.t.create_index([("point", "2d"), ("words", 1)])
    db.t.insert_one({"point": [1, 1], "words": ["foo", "bar"]})
    assert db.t.count_documents({"words": {"$regex": "^f"}}) == 1
    assert len(list(db.t.find({"point": {"$near": [1, 1]}}))) == 1
    assert len(list(db.t.find({"point": {"$near": [1, 1]}, "words": {"$regex": "^f"}}))) == 1


# --------------------------------------------------------------------------------------------------
# geo_s2sparse.js (what a query sees: documents without geo data are not indexed, nor an error)
# --------------------------------------------------------------------------------------------------

def test_2dsphere_is_sparse_over_missing_and_empty_geo(db):
    db.t.create_index([("geo", "2dsphere"), ("nonGeo", 1)])
    pt = {"type": "Point", "coordinates": [5, 5]}
    db.t.insert_many([{"geo": pt, "nonGeo": "p"}, {"wrongGeo": pt, "nonGeo": 1}, {"geo": pt},
                      {"geo": None}, {"geo": []}, {"geo": {}}])
    assert db.t.count_documents({}) == 6
    q = {"geo": {"$geoWithin": {"$centerSphere": [[5, 5], 0.01]}}}
    assert len(list(db.t.find(q))) == 2
    near = {"geo": {"$near": {"$geometry": pt}}}
    assert len(list(db.t.find(near))) == 2


def test_two_2dsphere_fields_index_either(db):
    db.t.create_index([("geo", "2dsphere"), ("otherGeo", "2dsphere")])
    pt = {"type": "Point", "coordinates": [5, 5]}
    db.t.insert_many([{"geo": pt}, {"otherGeo": pt}, {"nonGeo": 1}])
    q = {"otherGeo": {"$geoWithin": {"$centerSphere": [[5, 5], 0.01]}}}
    assert len(list(db.t.find(q))) == 1


# --------------------------------------------------------------------------------------------------
# Hypothesis: indexed answers equal unindexed ones and a plain reference model
# --------------------------------------------------------------------------------------------------

coord = st.integers(min_value=-6, max_value=6)


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(x1=coord, y1=coord, x2=coord, y2=coord, cx=coord, cy=coord, r=st.integers(min_value=0, max_value=6))
def test_box_and_center_match_reference_with_and_without_2d_index(db, x1, y1, x2, y2, cx, cy, r):
    db.h.drop()
    docs = [{"_id": x * 100 + y, "loc": [x, y]} for x in range(-5, 6) for y in range(-5, 6)]
    db.h.insert_many(docs)
    lo_x, hi_x, lo_y, hi_y = min(x1, x2), max(x1, x2), min(y1, y2), max(y1, y2)
    expected = sorted(d["_id"] for d in docs if lo_x <= d["loc"][0] <= hi_x and lo_y <= d["loc"][1] <= hi_y)
    assert found_both_ways(db.h, {"loc": {"$geoWithin": {"$box": [[x1, y1], [x2, y2]]}}}, [("loc", "2d")]) == expected
    expected = sorted(d["_id"] for d in docs if (d["loc"][0] - cx) ** 2 + (d["loc"][1] - cy) ** 2 <= r * r)
    assert found_both_ways(db.h, {"loc": {"$geoWithin": {"$center": [[cx, cy], r]}}}, [("loc", "2d")]) == expected


@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(lng=st.integers(min_value=-179, max_value=179), lat=st.integers(min_value=-80, max_value=80),
       radius=st.floats(min_value=0.001, max_value=0.2))
def test_center_sphere_matches_reference_with_and_without_indexes(db, lng, lat, radius):
    db.h.drop()
    pts = [((lng + dx + 540) % 360 - 180, max(-90, min(90, lat + dy))) for dx in range(-6, 7, 2)
           for dy in range(-6, 7, 2)]
    docs = [{"_id": i, "loc": list(p)} for i, p in enumerate(pts)]
    db.h.insert_many(docs)
    dists = [great_circle((lng, lat), p) for p in pts]
    if any(abs(d - radius) < 1e-9 for d in dists):  # no boundary cases: float rounding decides them
        return
    expected = sorted(i for i, d in enumerate(dists) if d <= radius)
    q = {"loc": {"$geoWithin": {"$centerSphere": [[lng, lat], radius]}}}
    assert found_both_ways(db.h, q, [("loc", "2dsphere")]) == expected
    assert found_both_ways(db.h, q, [("loc", "2d")]) == expected


# --------------------------------------------------------------------------------------------------
# geo_center_sphere1.js
# --------------------------------------------------------------------------------------------------

CENTER_SPHERE_SEARCHES = [([5, 0], 0.05), ([135, 0], 0.05), ([5, 70], 0.05), ([135, 70], 0.05), ([5, 85], 0.05),
                          ([20, 0], 0.25), ([20, -45], 0.25), ([-20, 60], 0.25), ([-20, -70], 0.25)]


@pytest.mark.parametrize("center,radius", CENTER_SPHERE_SEARCHES)
def test_center_sphere_over_a_world_grid(db, center, radius):
    pts = [(x, y) for x in range(-179, 180, 8) for y in range(-89, 90, 8)]
    db.t.insert_many([{"_id": i, "loc": list(p)} for i, p in enumerate(pts)])
    q = {"loc": {"$within": {"$centerSphere": [center, radius]}}}
    # the jstest forgives points within 0.1% of the radius (conversions); none of these grids has one
    dists = [great_circle(center, p) for p in pts]
    assert not any(abs(d - radius) / d < 0.001 for d in dists if d)
    expected = sorted(i for i, d in enumerate(dists) if d <= radius)
    assert found_both_ways(db.t, q, [("loc", "2dsphere")]) == expected
    assert found_both_ways(db.t, q, [("loc", "2d")]) == expected


# --------------------------------------------------------------------------------------------------
# geo_s2near.js
# --------------------------------------------------------------------------------------------------

def test_geo_near_include_locs_returns_the_geojson_point(db):
    golden = {"type": "Point", "coordinates": [31.0, 41.0]}
    db.t.insert_one({"geo": golden})
    db.t.create_index([("geo", "2dsphere")])
    res = list(db.t.aggregate([{"$geoNear": {"near": [30, 40], "distanceField": "d", "spherical": True,
                                             "includeLocs": "loc"}}, {"$limit": 1}]))
    assert len(res) == 1 and res[0]["loc"] == golden


@pytest.fixture
def s2near(db):
    db.t.insert_many([{"geo": {"type": "Point", "coordinates": [x / 1000.0, y / 1000.0]}}
                      for x in range(-10, 10) for y in range(-10, 10)])
    db.t.create_index([("geo", "2dsphere")])
    return db.t


def test_near_needs_a_point(s2near):
    line = {"type": "LineString", "coordinates": [[40, 5], [41, 6]]}
    poly = {"type": "Polygon", "coordinates": [[[40, 5], [40, 6], [41, 6], [41, 5], [40, 5]]]}
    for shape in (line, poly):
        with pytest.raises(OperationFailure) as e:
            count_cmd(s2near, {"geo": {"$near": {"$geometry": shape}}})
        assert_code(e, BAD_VALUE)
        with pytest.raises(OperationFailure) as e:
            list(s2near.aggregate([{"$geoNear": {"near": shape, "distanceField": "dis", "spherical": True}}]))
        assert_code(e, BAD_VALUE)


def test_near_find_and_geo_near_stage_agree(s2near):
    origin = {"type": "Point", "coordinates": [0, 0]}

    def stage(**opts):
        return len(list(s2near.aggregate([{"$geoNear": {"near": [0, 0], "distanceField": "dis", "spherical": True,
                                                        **opts}}, {"$limit": 10000}])))

    assert len(list(s2near.find({"geo": {"$near": {"$geometry": origin, "$maxDistance": 2000}}}).limit(10))) == 10
    assert stage(maxDistance=math.pi) == 400
    assert len(list(s2near.find({"geo": {"$near": {"$geometry": origin}}}).limit(10000))) == 400 == stage()
    s2near.insert_many([{"geo": {"type": "Point", "coordinates": list(c)}}
                        for c in ((-180, -90), (180, -90), (180, 90), (-180, 90))])
    assert len(list(s2near.find({"geo": {"$near": {"$geometry": origin}}}).limit(10000))) == 404 == stage()


@pytest.mark.parametrize("metres", [1, 10, 50, 10000])
def test_near_radians_and_metres_agree(s2near, metres):
    origin = {"type": "Point", "coordinates": [0, 0]}
    radians = metres / EARTH_RADIUS_M
    by_radians = list(s2near.find({"geo": {"$nearSphere": [0, 0], "$maxDistance": radians}}))
    by_metres = list(s2near.find({"geo": {"$near": {"$geometry": origin, "$maxDistance": metres}}}))
    assert len(by_radians) == len(by_metres)
    gn_m = list(s2near.aggregate([{"$geoNear": {"near": origin, "distanceField": "dis", "maxDistance": metres,
                                                "spherical": True}}]))
    gn_r = list(s2near.aggregate([{"$geoNear": {"near": [0, 0], "distanceField": "dis", "maxDistance": radians,
                                                "spherical": True}}]))
    assert len(gn_m) == len(gn_r)
    for r, m in zip(gn_r, gn_m, strict=True):
        assert r["dis"] * EARTH_RADIUS_M == pytest.approx(m["dis"])


def test_spherical_geo_near_legacy_point_out_of_bounds(s2near):
    # SERVER-13666
    with pytest.raises(OperationFailure) as e:
        list(s2near.aggregate([{"$geoNear": {"near": [1210.466, 31.2051], "distanceField": "dis",
                                             "spherical": True}}]))
    assert_code(e, BAD_VALUE)


# --------------------------------------------------------------------------------------------------
# geo_oob_sphere.js
# --------------------------------------------------------------------------------------------------

def test_spherical_queries_refuse_out_of_bounds_latitudes(db):
    db.t.insert_many([{"loc": {"x": 31, "y": 89}}] + [{"loc": {"x": 30, "y": 89}} for _ in range(5)]
                     + [{"loc": {"x": 30, "y": 91}}])
    db.t.create_index([("loc", "2d")])
    for q in ({"loc": {"$nearSphere": [30, 91], "$maxDistance": 0.25}},
              {"loc": {"$within": {"$centerSphere": [[-180, -91], 0.25]}}},
              {"loc": {"$nearSphere": [179, -91]}}):
        with pytest.raises(OperationFailure) as e:
            list(db.t.find(q))
        assert_code(e, BAD_VALUE)
    with pytest.raises(OperationFailure) as e:
        list(db.t.aggregate([{"$geoNear": {"near": [179, -91], "distanceField": "dis", "spherical": True}}]))
    assert_code(e, BAD_VALUE)


# --------------------------------------------------------------------------------------------------
# geo_or.js
# --------------------------------------------------------------------------------------------------

P = [-71.34895, 42.46037]
Q = [1.48736, 42.55327]


def test_near_in_a_one_clause_or(db):
    db.t.insert_many([{"loc": P}, {"loc": Q}])
    db.t.create_index([("loc", "2dsphere")])
    assert len(list(db.t.find({"$or": [{"loc": {"$nearSphere": P}}]}))) == 2


def test_or_with_geo_clauses(db):
    db.t.insert_many([{"loc": P}, {"loc": Q}])
    db.t.create_index([("loc", "2dsphere")])
    assert len(list(db.t.find({"loc": P}))) == 1
    with pytest.raises(OperationFailure) as e:
        list(db.t.find({"$or": [{"loc": {"$nearSphere": P}}, {"loc": {"$nearSphere": Q}}]}))
    assert e.value.code not in (1, None)
    queries = [
        {"$or": [{"loc": {"$geoWithin": {"$centerSphere": [P, 10]}}},
                 {"loc": {"$geoWithin": {"$centerSphere": [P, 10]}}}]},
        {"$or": [{"loc": {"$geoIntersects": {"$geometry": {"type": "LineString", "coordinates": [P, Q]}}}},
                 {"loc": {"$geoIntersects": {"$geometry": {"type": "LineString", "coordinates": [[0, 0], [1, 1]]}}}}]},
        {"$or": [{"loc": {"$geoIntersects": {"$geometry": {"type": "Point", "coordinates": P}}}},
                 {"loc": {"$geoIntersects": {"$geometry": {"type": "Point", "coordinates": Q}}}}]},
        {"$or": [{"loc": {"$geoIntersects": {"$geometry": {"type": "Polygon", "coordinates": [[[0, 0], P, Q, [0, 0]]]}}}},
                 {"loc": {"$geoIntersects": {"$geometry": {"type": "Polygon",
                                                           "coordinates": [[[0, 0], [1, 1], [0, 1], [0, 0]]]}}}}]},
    ]
    for q in queries:
        assert len(found_both_ways(db.t, q, [("loc", "2dsphere")])) == 2, q
    assert len(found_both_ways(db.t, queries[0], [("loc", "2d")])) == 2


# --------------------------------------------------------------------------------------------------
# geo_near_point_query.js
# --------------------------------------------------------------------------------------------------

NEAR_POINT_DOCS = [[-90, 45.1], [-90.0001, 45.1], [-90, 45.00001], [-90, 45.01], [90, -45], [90.00007, -45],
                   [90, 45], [90, 45.1], [90, 45.01]]


@pytest.mark.parametrize("dist", [0, 0.001])
def test_geo_near_max_distance_zero_finds_the_point_itself(db, dist):
    docs = [{"location": {"type": "Point", "coordinates": c}} for c in NEAR_POINT_DOCS]
    db.t.insert_many([dict(d) for d in docs])
    db.t.create_index([("location", "2dsphere")])
    for doc in docs:
        res = list(db.t.aggregate([
            {"$geoNear": {"near": doc["location"], "maxDistance": dist, "spherical": True,
                          "distanceField": "dist.calculated", "includeLocs": "dist.location"}},
            {"$project": {"_id": 0, "location": 1}}]))
        assert res == [doc]


# --------------------------------------------------------------------------------------------------
# geo_poly_line.js, geo_s2selfintersectingpoly.js, geo_s2disjoint_holes.js, geo_s2holesameasshell.js
# --------------------------------------------------------------------------------------------------

def test_degenerate_polygon_on_a_line_holds_its_points(db):
    # SERVER-3725
    db.t.insert_many([{"_id": x, "loc": [x, 0]} for x in range(5)])
    q = {"loc": {"$within": {"$polygon": [[0, 0], [2, 0], [4, 0]]}}}
    assert found_both_ways(db.t, q, [("loc", "2d")]) == [0, 1, 2, 3, 4]


def test_self_intersecting_polygon_is_refused(db):
    db.t.create_index([("geo", "2dsphere")])
    with pytest.raises(WriteError) as e:
        db.t.insert_one({"geo": {"type": "Polygon",
                                 "coordinates": [[[0.0, 0.0], [0.0, 4.0], [-3.0, 2.0], [1.0, 2.0], [0.0, 0.0]]]}})
    assert_code(e, CANT_EXTRACT_GEO_KEYS)


DISJOINT = [[[9, 9], [9, 11], [11, 11], [11, 9], [9, 9]], [[0, 0], [0, 1], [1, 1], [1, 0], [0, 0]]]


@pytest.mark.parametrize("bad", [{"type": "Polygon", "coordinates": DISJOINT},
                                 {"type": "MultiPolygon", "coordinates": [DISJOINT]}], ids=["poly", "multi"])
def test_polygon_with_hole_outside_its_shell(db, bad):
    with pytest.raises(OperationFailure) as e:
        db.t.find_one({"geo": {"$geoWithin": {"$geometry": bad}}})
    assert_code(e, BAD_VALUE)
    db.t.insert_one({"p": bad})  # no index: stored as given
    with pytest.raises(OperationFailure) as e:
        db.t.create_index([("p", "2dsphere")])
    assert_code(e, CANT_EXTRACT_GEO_KEYS)
    db.u.create_index([("p", "2dsphere")])
    with pytest.raises(WriteError) as e:
        db.u.insert_one({"p": bad})
    assert_code(e, CANT_EXTRACT_GEO_KEYS)


@pytest.mark.parametrize("holes", [
    [SQUARE],
    [[[0, 0], [0, 0.5], [1, 0.5], [1, 0], [0, 0]], [[0, 0.5], [0, 1], [1, 1], [1, 0.5], [0, 0.5]]],
], ids=["hole_is_shell", "two_holes_cover_shell"])
def test_holes_covering_the_whole_shell_are_refused(db, holes):
    db.t.create_index([("geo", "2dsphere")])
    db.t.insert_many([{"geo": {"type": "Point", "coordinates": c}} for c in ([0.5, 0.5], [0, 0.5], [0, 0])])
    bad = {"type": "Polygon", "coordinates": [SQUARE, *holes]}
    with pytest.raises(WriteError) as e:
        db.t.insert_one({"geo": bad})
    assert_code(e, CANT_EXTRACT_GEO_KEYS)
    with pytest.raises(OperationFailure) as e:
        count_cmd(db.t, {"geo": {"$geoWithin": {"$geometry": bad}}})
    assert_code(e, BAD_VALUE)


# --------------------------------------------------------------------------------------------------
# geo_s2dupe_points.js
# --------------------------------------------------------------------------------------------------

DUPES = [
    ("line", {"type": "LineString", "coordinates": [[40, 5], [40, 5], [40, 5], [41, 6], [41, 6]]},
     {"type": "LineString", "coordinates": [[40, 5], [41, 6]]}),
    ("poly", {"type": "Polygon", "coordinates": [
        [[-3.0, -3.0], [3.0, -3.0], [3.0, 3.0], [-3.0, 3.0], [-3.0, -3.0]],
        [[-2.0, -2.0], [2.0, -2.0], [2.0, 2.0], [-2.0, 2.0], [-2.0, -2.0], [-2.0, -2.0]]]},
     {"type": "Polygon", "coordinates": [
         [[-3.0, -3.0], [3.0, -3.0], [3.0, 3.0], [-3.0, 3.0], [-3.0, -3.0]],
         [[-2.0, -2.0], [2.0, -2.0], [2.0, 2.0], [-2.0, 2.0], [-2.0, -2.0]]]}),
    ("multi", {"type": "MultiPolygon", "coordinates": [
        [[[102.0, 2.0], [103.0, 2.0], [103.0, 2.0], [103.0, 3.0], [102.0, 3.0], [102.0, 2.0]]],
        [[[100.0, 0.0], [101.0, 0.0], [101.0, 1.0], [101.0, 1.0], [100.0, 1.0], [100.0, 0.0]],
         [[100.2, 0.2], [100.8, 0.2], [100.8, 0.8], [100.8, 0.8], [100.8, 0.8], [100.2, 0.8], [100.2, 0.2]]]]},
     {"type": "MultiPolygon", "coordinates": [
         [[[102.0, 2.0], [103.0, 2.0], [103.0, 3.0], [102.0, 3.0], [102.0, 2.0]]],
         [[[100.0, 0.0], [101.0, 0.0], [101.0, 1.0], [100.0, 1.0], [100.0, 0.0]],
          [[100.2, 0.2], [100.8, 0.2], [100.8, 0.8], [100.2, 0.8], [100.2, 0.2]]]]}),
]


@pytest.mark.parametrize("name,with_dupes,without", DUPES, ids=[d[0] for d in DUPES])
def test_duplicate_points_are_stored_but_ignored_by_geometry(db, name, with_dupes, without):
    # SERVER-9240, SERVER-9401
    db.t.create_index([("geo", "2dsphere")])
    db.t.insert_one({"_id": name, "geo": with_dupes})
    assert db.t.find_one({"_id": name}) == {"_id": name, "geo": with_dupes}
    for shape in (with_dupes, without):
        assert found_both_ways(db.t, {"geo": {"$geoIntersects": {"$geometry": shape}}}, [("geo", "2dsphere")]) == [name]
    assert db.t.count_documents({"geo": without}) == 0
    assert db.t.count_documents({"geo": with_dupes}) == 1


# --------------------------------------------------------------------------------------------------
# geo_s2meridian.js
# --------------------------------------------------------------------------------------------------

def test_line_across_the_antimeridian_intersects_a_line_along_it(db):
    db.t.insert_one({"_id": 1, "geo": {"type": "LineString", "coordinates": [[-178.0, 10.0], [178.0, 10.0]]}})
    q = {"geo": {"$geoIntersects": {"$geometry": {"type": "LineString", "coordinates": [[180.0, 11.0],
                                                                                         [180.0, 9.0]]}}}}
    assert found_both_ways(db.t, q, [("geo", "2dsphere")]) == [1]


def test_polygon_across_the_antimeridian_holds_points_on_both_sides(db):
    db.t.insert_many([{"_id": i, "geo": {"type": "Point", "coordinates": [lng, 1.0]}}
                      for i, lng in enumerate((180.0, -179.0, 179.0))])
    poly = {"type": "Polygon", "coordinates": [[[-178.0, 10.0], [178.0, 10.0], [178.0, -10.0], [-178.0, -10.0],
                                                [-178.0, 10.0]]]}
    assert found_both_ways(db.t, {"geo": {"$geoWithin": {"$geometry": poly}}}, [("geo", "2dsphere")]) == [0, 1, 2]


def test_geo_near_query_operator_orders_across_the_antimeridian(db):
    db.t.create_index([("geo", "2dsphere")])
    db.t.insert_many([{"name": "closer", "geo": {"type": "Point", "coordinates": [-179.0, 0.0]}},
                      {"name": "farther", "geo": {"type": "Point", "coordinates": [176.0, 0.0]}}])
    res = list(db.t.find({"geo": {"$geoNear": {"type": "Point", "coordinates": [179.0, 0.0]}}}))
    assert [d["name"] for d in res] == ["closer", "farther"]


# --------------------------------------------------------------------------------------------------
# geo_s2oddshapes.js
# --------------------------------------------------------------------------------------------------

def _ring(*pts):
    return {"type": "Polygon", "coordinates": [[list(p) for p in pts]]}


def test_tall_and_long_polygons(db):
    db.t.insert_many([
        {"name": "origin", "geo": {"type": "Point", "coordinates": [0.0, 0.0]}},
        {"name": "horiz", "geo": {"type": "LineString", "coordinates": [[-2.0, 10.0], [2.0, 10.0]]}},
        {"name": "vert", "geo": {"type": "LineString", "coordinates": [[10.0, -2.0], [10.0, 2.0]]}},
    ])
    names = {d["_id"]: d["name"] for d in db.t.find()}
    tall = _ring((1.0, 89.0), (-1.0, 89.0), (-1.0, -89.0), (1.0, -89.0), (1.0, 89.0))
    index = [("geo", "2dsphere")]
    assert [names[i] for i in found_both_ways(db.t, {"geo": {"$within": {"$geometry": tall}}}, index)] == ["origin"]
    assert sorted(names[i] for i in found_both_ways(db.t, {"geo": {"$geoIntersects": {"$geometry": tall}}},
                                                     index)) == ["horiz", "origin"]
    long = _ring((89.0, 1.0), (-89.0, 1.0), (-89.0, -1.0), (89.0, -1.0), (89.0, 1.0))
    assert len(found_both_ways(db.t, {"geo": {"$within": {"$geometry": long}}}, index)) == 3
    assert len(found_both_ways(db.t, {"geo": {"$geoIntersects": {"$geometry": long}}}, index)) == 3


@pytest.mark.parametrize("poly,inside,outside", [
    xf(POLE_TO_POLE_LOOP, _ring((0.0, -90.0), (0.0, 90.0), (180.0, 0), (0.0, -90.0)), [100.0, 0.0], [-100.0, 0.0],
       id="half_earth"),
    (_ring((0.0, -0.01), (0.015, -0.01), (0.015, 0.01), (0.0, 0.01), (0.0, -0.01)), [0.01, 0.0], [0.2, 0.0]),
], ids=["half_earth", "few_metres"])
def test_huge_and_tiny_polygons(db, poly, inside, outside):
    db.t.insert_many([{"_id": "in", "geo": {"type": "Point", "name": "inside", "coordinates": inside}},
                      {"_id": "out", "geo": {"type": "Point", "name": "inside", "coordinates": outside}}])
    assert found_both_ways(db.t, {"geo": {"$within": {"$geometry": poly}}}, [("geo", "2dsphere")]) == ["in"]


# --------------------------------------------------------------------------------------------------
# geonear_cmd_input_validation.js
# --------------------------------------------------------------------------------------------------

GJ_ORIGIN = {"type": "Point", "coordinates": [0, 0]}


def _geo_near(coll, **spec):
    return list(coll.aggregate([{"$geoNear": {"distanceField": "dist", **spec}}]))


@pytest.mark.parametrize("index", ["2d", "2dsphere"])
@pytest.mark.parametrize("point", [GJ_ORIGIN, [0, 0]], ids=["geojson", "legacy"])
@pytest.mark.parametrize("spherical", [True, False])
@pytest.mark.parametrize("option", ["minDistance", "maxDistance"])
def test_geo_near_stage_input_validation(db, index, point, spherical, option):
    db.t.create_index([("loc", index)])
    legacy = isinstance(point, list)
    if (index == "2d" and not legacy) or (index == "2dsphere" and legacy and not spherical):
        with pytest.raises(OperationFailure) as e:  # unsupported combinations
            _geo_near(db.t, near=point, spherical=spherical, **{option: 1})
        assert_code(e, NO_QUERY_PLAN)
        return
    _geo_near(db.t, near=point, spherical=spherical)
    _geo_near(db.t, near=point, spherical=spherical, **{option: 1})
    if index == "2d":
        _geo_near(db.t, near=point, spherical=spherical, **{option: 1e10})  # unlimited
    for bad in (-1, None, "foo"):
        with pytest.raises(OperationFailure) as e:
            _geo_near(db.t, near=point, spherical=spherical, **{option: bad})
        assert_code(e, BAD_VALUE, TYPE_MISMATCH)
    for name in ("num", "limit"):
        for bad in (-1, "foo"):
            with pytest.raises(OperationFailure) as e:
                _geo_near(db.t, near=point, spherical=spherical, **{option: 1, name: bad})
            assert e.value.code not in (1, None)
    for bad in (-1, None, "foo"):
        with pytest.raises(OperationFailure) as e:
            _geo_near(db.t, near=point, spherical=spherical, distanceMultiplier=bad, **{option: 1})
        assert_code(e, BAD_VALUE, TYPE_MISMATCH)
    with pytest.raises(OperationFailure) as e:
        _geo_near(db.t, near=point, spherical=spherical, foo="unknown", **{option: 1})
    assert e.value.code not in (1, None)


# --------------------------------------------------------------------------------------------------
# geonear_key.js
# --------------------------------------------------------------------------------------------------

@pytest.fixture
def keyed(db):
    db.t.insert_many([{"_id": 0, "a": [1, 1]}, {"_id": 1, "a": [1, 2]}, {"_id": 2, "b": {"c": [1, 1]}},
                      {"_id": 3, "b": {"c": [1, 2]}}, {"_id": 4, "b": {"d": [1, 1]}}, {"_id": 5, "b": {"d": [1, 2]}}])
    return db.t


def test_geo_near_key_errors_without_indexes(keyed):
    for spec, code in (({"key": 1}, TYPE_MISMATCH), ({"key": ""}, BAD_VALUE), ({}, 27),
                       ({"key": "a"}, NO_QUERY_PLAN)):
        with pytest.raises(OperationFailure) as e:
            _geo_near(keyed, near=[0, 0], **spec)
        assert_code(e, code)


def test_geo_near_key_picks_the_index(keyed):
    for key, kind in (("a", "2d"), ("a", "2dsphere"), ("b.c", "2d"), ("b.d", "2dsphere")):
        keyed.create_index([(key, kind)])
    with pytest.raises(OperationFailure) as e:  # ambiguous without a key
        _geo_near(keyed, near=[0, 0])
    assert_code(e, 27)

    def found(**spec):
        return [d["_id"] for d in _geo_near(keyed, **spec)]

    assert found(near=[0, 0], key="b.c") == [2, 3]
    assert found(near=GJ_ORIGIN, key="b.d") == [4, 5]
    assert found(near=[0, 0], key="a") == [0, 1]
    assert found(near=[0, 0], spherical=True, key="a") == [0, 1]
    assert found(near=GJ_ORIGIN, key="a") == [0, 1]
    assert found(near=GJ_ORIGIN, spherical=True, key="a") == [0, 1]
    for spec in ({"near": GJ_ORIGIN, "key": "b.c"}, {"near": [0, 0], "key": "b.d"},
                 {"near": [0, 0], "key": "b.d", "spherical": False}):
        with pytest.raises(OperationFailure) as e:
            _geo_near(keyed, **spec)
        assert_code(e, NO_QUERY_PLAN)


# --------------------------------------------------------------------------------------------------
# geo_withinquery.js, geob.js
# --------------------------------------------------------------------------------------------------

def test_within_without_index_with_a_sibling_predicate(db):
    # SERVER-7343
    grid(db.t, 0, 20)
    q = {"$and": [{"loc": {"$ne": [0, 0]}}, {"loc": {"$within": {"$box": [[0, 0], [100, 100]]}}}]}
    assert len(found_both_ways(db.t, q, [("loc", "2d")])) == 21 * 21 - 1


def test_geo_near_planar_distances_and_multiplier(db):
    db.t.insert_many([{"_id": "a", "p": [0, 0]}, {"_id": "b", "p": [1, 0]}, {"_id": "c", "p": [3, 4]},
                      {"_id": "d", "p": [0, 6]}])
    db.t.create_index([("p", "2d")])
    res = list(db.t.aggregate([{"$geoNear": {"near": [0, 0], "distanceField": "dis"}}]))
    assert [(d["_id"], d["dis"]) for d in res] == [("a", 0), ("b", 1), ("c", 5), ("d", 6)]
    res = list(db.t.aggregate([{"$geoNear": {"near": [0, 0], "distanceField": "dis", "distanceMultiplier": 2.0}}]))
    assert [d["dis"] for d in res] == [0, 2, 10, 12]


# --------------------------------------------------------------------------------------------------
# geo_s2twofields.js (answers, not timings), geo_s2largewithin.js, geo_s2exact.js
# --------------------------------------------------------------------------------------------------

def test_two_geo_fields_same_answer_with_any_index(db):
    rng = random.Random(5)
    nyc, miami = [-74.0064, 40.7142], [-80.1303, 25.7903]
    db.t.insert_many([{"_id": i,
                       "from": {"type": "Point", "coordinates": [nyc[0] + rng.uniform(0, 1), nyc[1] + rng.uniform(0, 1)]},
                       "to": {"type": "Point", "coordinates": [miami[0] + rng.uniform(0, 1),
                                                               miami[1] + rng.uniform(0, 1)]}}
                      for i in range(400)])
    rad = 0.5 * math.pi / 180.0
    q = {"from": {"$within": {"$centerSphere": [nyc, rad]}}, "to": {"$within": {"$centerSphere": [miami, rad]}}}
    docs = list(db.t.find())
    expected = sorted(d["_id"] for d in docs if great_circle(nyc, d["from"]["coordinates"]) <= rad
                      and great_circle(miami, d["to"]["coordinates"]) <= rad)
    assert expected
    for index in ([("to", "2dsphere"), ("from", "2dsphere")], [("to", "2dsphere")], [("from", "2dsphere")]):
        assert found_both_ways(db.t, q, index) == expected


def test_large_within_polygon_along_the_equator(db):
    db.t.insert_many([
        {"_id": "origin", "geo": {"type": "Point", "coordinates": [0.0, 0.0]}},
        {"_id": "horiz", "geo": {"type": "LineString", "coordinates": [[-2.0, 10.0], [2.0, 10.0]]}},
        {"_id": "vert", "geo": {"type": "LineString", "coordinates": [[10.0, -2.0], [10.0, 2.0]]}},
    ])
    poly = _ring((30.0, 1.0), (-30.0, 1.0), (-30.0, -1.0), (30.0, -1.0), (30.0, 1.0))
    assert found_both_ways(db.t, {"geo": {"$geoWithin": {"$geometry": poly}}}, [("geo", "2dsphere")]) == ["origin"]


@pytest.mark.parametrize("geometry", [
    {"type": "Point", "coordinates": [40, 5]},
    {"type": "LineString", "coordinates": [[40, 5], [41, 6]]},
    {"type": "Polygon", "coordinates": [[[40, 5], [40, 6], [41, 6], [41, 5], [40, 5]]]},
], ids=["point", "line", "poly"])
def test_equality_on_exact_geometry(db, geometry):
    db.t.insert_one({"geo": geometry})
    assert len(found_both_ways(db.t, {"geo": geometry}, [("geo", "2dsphere")])) == 1


# --------------------------------------------------------------------------------------------------
# geo_s2nearwithin.js, geo_nearwithin.js
# --------------------------------------------------------------------------------------------------

@pytest.fixture
def near_grid(db):
    db.t.insert_many([{"_id": (x + 10) * 100 + y + 10, "geo": [x, y]} for x in range(-10, 10) for y in range(-10, 10)])
    return db.t


@pytest.mark.parametrize("within,count", [({"$center": [[0, 0], 1]}, 5),
                                          ({"$centerSphere": [[0, 0], math.pi / 180.0]}, 5),
                                          ({"$centerSphere": [[0, 0], 0]}, 1),
                                          ({"$centerSphere": [[1, 0], 0.5 * math.pi / 180.0]}, 1),
                                          ({"$center": [[1, 0], 1.5]}, 9)])
def test_geo_near_stage_with_a_within_query(near_grid, within, count):
    near_grid.create_index([("geo", "2dsphere")])
    res = list(near_grid.aggregate([{"$geoNear": {"near": [0, 0], "distanceField": "d", "spherical": True,
                                                  "query": {"geo": {"$within": within}}}}]))
    assert len(res) == count
    assert [d["d"] for d in res] == sorted(d["d"] for d in res)


def test_geo_near_stage_legacy_point_needs_spherical_with_2dsphere(near_grid):
    near_grid.create_index([("geo", "2dsphere")])
    with pytest.raises(OperationFailure) as e:
        list(near_grid.aggregate([{"$geoNear": {"near": [0, 0], "distanceField": "d",
                                                "query": {"geo": {"$within": {"$center": [[0, 0], 1]}}}}}]))
    assert_code(e, NO_QUERY_PLAN)
    assert "unable to find index for $geoNear query" in str(e.value)


@pytest.mark.parametrize("center,count", [([[0, 0], 1], 5), ([[0, 0], 0], 1), ([[1, 0], 0.5], 1), ([[1, 0], 1.5], 9)])
def test_near_and_within_in_one_conjunction_2d(near_grid, center, count):
    near_grid.create_index([("geo", "2d")])
    res = list(near_grid.find({"$and": [{"geo": {"$near": [0, 0]}}, {"geo": {"$within": {"$center": center}}}]}))
    assert len(res) == count


def test_near_within_ring_via_not_within(near_grid):
    near_grid.create_index([("geo", "2d")])
    res = list(near_grid.find({"$and": [{"geo": {"$near": [0, 0]}}, {"geo": {"$within": {"$center": [[0, 0], 1.5]}}},
                                        {"geo": {"$not": {"$within": {"$center": [[0, 0], 1]}}}}]}))
    assert sorted(tuple(d["geo"]) for d in res) == [(-1, -1), (-1, 1), (1, -1), (1, 1)]


# --------------------------------------------------------------------------------------------------
# geo_distinct.js
# --------------------------------------------------------------------------------------------------

def _distinct(coll, key, query=None):
    cmd = {"distinct": coll.name, "key": key}
    if query is not None:
        cmd["query"] = query
    return coll.database.command(cmd)["values"]


def test_distinct_over_geo_values(db):
    pts = [[10, 20], [10, 20], [20, 30], [20, 30]]
    db.t.insert_many([{"loc": {"type": "Point", "coordinates": c}} for c in pts])
    expected = [{"type": "Point", "coordinates": [10, 20]}, {"type": "Point", "coordinates": [20, 30]}]
    key = lambda v: v["coordinates"]  # noqa: E731
    assert sorted(_distinct(db.t, "loc"), key=key) == expected
    db.t.create_index([("loc", "2dsphere")])
    assert sorted(_distinct(db.t, "loc"), key=key) == expected
    db.t.drop_indexes()
    assert sorted(_distinct(db.t, "loc.coordinates")) == [10, 20, 30]
    db.t.create_index([("loc.coordinates", "2d")])
    assert sorted(_distinct(db.t, "loc.coordinates")) == [10, 20, 30]


def test_distinct_with_near_predicates(db):
    db.t.insert_many([{"zone": z, "loc": {"type": "Point", "coordinates": [c, c]}}
                      for _ in range(5) for z, c in ((1, -20), (2, -10), (3, 0), (4, 10), (5, 20))])
    near_sphere = {"loc": {"$nearSphere": {"$geometry": GJ_ORIGIN, "$maxDistance": 1}}}
    with pytest.raises(OperationFailure) as e:
        _distinct(db.t, "zone", near_sphere)
    assert_code(e, NO_QUERY_PLAN)
    db.t.create_index([("loc", "2dsphere")])
    assert _distinct(db.t, "zone", near_sphere) == [3]
    db.t.create_index([("zone", 1)])
    assert _distinct(db.t, "zone", near_sphere) == [3]
    db.t.drop_indexes()
    near = {"loc.coordinates": {"$near": [0, 0], "$maxDistance": 1}}
    with pytest.raises(OperationFailure) as e:
        _distinct(db.t, "zone", near)
    assert_code(e, NO_QUERY_PLAN)
    db.t.create_index([("loc.coordinates", "2d")])
    assert _distinct(db.t, "zone", near) == [3]
    db.t.create_index([("zone", 1)])
    assert _distinct(db.t, "zone", near) == [3]


# --------------------------------------------------------------------------------------------------
# geo_poly_edge.js
# --------------------------------------------------------------------------------------------------

def test_polygon_edge_cases(db):
    db.t.insert_many([{"_id": 1, "loc": [10, 10]}, {"_id": 2, "loc": [10, -10]}])
    index = [("loc", "2d")]
    assert found_both_ways(db.t, {"loc": {"$within": {"$polygon": [[10, 10], [10, 10], [10, -10]]}}}, index) == [1, 2]
    assert found_both_ways(db.t, {"loc": {"$within": {"$polygon": [[10, 10], [10, 10], [10, 10]]}}}, index) == [1]
    db.t.drop_indexes()
    db.t.insert_many([{"_id": 3, "loc": [179, 0]}, {"_id": 4, "loc": [0, 179]}])
    q = {"loc": {"$within": {"$polygon": [[0, 0], [1000, 0], [1000, 1000], [0, 1000]]}}}
    assert found_both_ways(db.t, q, index) == [1, 3, 4]


# --------------------------------------------------------------------------------------------------
# geo_s2overlappingpolys.js
# --------------------------------------------------------------------------------------------------

MIN_ERROR = 0.8e-13


@pytest.mark.parametrize("rings,within,intersects", [
    ([[[-2.0, -2.0], [2.0, -2.0], [2.0, 2.0], [-2.0, 2.0], [-2.0, -2.0]]], 1, 1),
    ([[[-2.0, -2.0], [2.0, -2.0], [2.0, 0.0], [-2.0, 0.0], [-2.0, -2.0]]], 0, 1),
    ([[[0.0, -2.0], [0.0, -1.0], [1.0, -2.0], [0.0, -2.0]]], None, 1),
    ([[[0.0, -2.0], [1.0, -1.0], [1.0, -2.0], [0.0, -2.0]]], None, 0),
    ([[[0.0, -2.0], [1.0 - MIN_ERROR, -1.0], [1.0, -2.0], [0.0, -2.0]]], None, 0),
    ([[[0.0, -2.0], [1.0 - 10 * MIN_ERROR, -1.0], [1.0, -2.0], [0.0, -2.0]]], None, 1),
    ([[[0.0, -2.0], [0.0, -1.0 - MIN_ERROR], [1.0, -2.0], [0.0, -2.0]]], None, 1),
    ([[[0.0, -2.0], [0.0, -1.0 - 0.000152298], [1.0, -2.0], [0.0, -2.0]]], None, 0),
    ([[[-2.0, -0.5], [-1.0, -0.5], [-1.0, 0.5], [-2.0, 0.5], [-2.0, -0.5]]], None, 0),
    ([[[-2.0, -1.5], [-1.0, -1.5], [-1.0, 1.5], [-2.0, 1.5], [-2.0, -1.5]]], None, 1),
    ([[[-2.0, -1.5], [-1.0 - MIN_ERROR / 1000, -1.5], [-1.0 - MIN_ERROR / 1000, 1.5], [-2.0, 1.5],
       [-2.0, -1.5]]], None, 1),
    ([[[-2.0, -1.5], [-1.0 - MIN_ERROR / 100, -1.5], [-1.0 - MIN_ERROR / 100, 1.5], [-2.0, 1.5],
       [-2.0, -1.5]]], None, 0),
    ([[[-2.0, -1.5], [-1.0, -1.5], [-1.0, 0.5], [-2.0, 0.5], [-2.0, -1.5]]], None, 0),
    ([[[0.0, -3.0], [0.0, -1.0], [2.0, -2.0], [1.0, 0.0], [2.0, 2.0], [0.0, 1.0], [0.0, 3.0], [3.0, 3.0],
       [3.0, -3.0], [0.0, -3.0]]], None, 1),
    ([[[-3.0, -3.0], [3.0, -3.0], [3.0, 3.0], [-3.0, 3.0], [-3.0, -3.0]],
      [[-2.0, -2.0], [2.0, -2.0], [2.0, 2.0], [-2.0, 2.0], [-2.0, -2.0]]], 0, 0),
    ([[[-3.0, -3.0], [3.0, -3.0], [3.0, 3.0], [-3.0, 3.0], [-3.0, -3.0]],
      [[-2.0, 0.0], [2.0, 0.0], [2.0, 2.0], [-2.0, 2.0], [-2.0, 0.0]]], 0, 1),
], ids=["enclosing", "half", "shared_point", "shared_vertex", "almost_shared_vertex", "not_close_vertex",
        "almost_shared_point", "not_close_point", "fully_covered_edge", "covering_edge", "closeby_covering_edge",
        "not_close_covering_edge", "partially_covering_edge", "three_shared_points", "in_big_hole",
        "overlapping_hole"])
def test_overlapping_polygons(db, rings, within, intersects):
    db.t.insert_one({"_id": 1, "geo": _ring((-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0), (-1.0, -1.0))})
    poly = {"type": "Polygon", "coordinates": rings}
    if within is not None:
        assert len(found_both_ways(db.t, {"geo": {"$within": {"$geometry": poly}}}, [("geo", "2dsphere")])) == within
    assert len(found_both_ways(db.t, {"geo": {"$geoIntersects": {"$geometry": poly}}},
                               [("geo", "2dsphere")])) == intersects


# --------------------------------------------------------------------------------------------------
# geo_big_polygon.js
# --------------------------------------------------------------------------------------------------

BIG_CRS = {"type": "name", "properties": {"name": "urn:x-mongodb:crs:strictwinding:EPSG:4326"}}
BIG_POLY20 = {"type": "Polygon", "coordinates": [[[10.0, 10.0], [-10.0, 10.0], [-10.0, -10.0], [10.0, -10.0],
                                                  [10.0, 10.0]]], "crs": BIG_CRS}
BIG_POLY20_COMP = {"type": "Polygon", "coordinates": [[[10.0, 10.0], [10.0, -10.0], [-10.0, -10.0], [-10.0, 10.0],
                                                       [10.0, 10.0]]], "crs": BIG_CRS}
BIG_POLY10 = {"type": "Polygon", "coordinates": [[[5.0, 5.0], [-5.0, 5.0], [-5.0, -5.0], [5.0, -5.0], [5.0, 5.0]]],
              "crs": BIG_CRS}


def _big_polygon_counts(coll) -> list[int]:
    return [count_cmd(coll, {"loc": {op: {"$geometry": g}}})
            for g in (BIG_POLY20, BIG_POLY20_COMP) for op in ("$geoWithin", "$geoIntersects")]


def test_big_polygon_queries_with_and_without_index(db):
    db.t.insert_many([
        {"loc": {"type": "Polygon", "coordinates": [[[5.0, 5.0], [5.0, -5.0], [-5.0, -5.0], [-5.0, 5.0], [5.0, 5.0]]]}},
        {"loc": {"type": "LineString", "coordinates": [[5.0, 5.0], [5.0, -5.0], [-5.0, -5.0], [-5.0, 5.0], [5.0, 5.0]]}},
        {"loc": {"type": "Point", "coordinates": [0, 0]}},
        {"loc": {"type": "Point", "coordinates": [85, 85]}},
        {"loc": {"type": "LineString", "coordinates": [[-20, 0], [20, 0]]}},
    ])
    assert _big_polygon_counts(db.t) == [3, 4, 1, 2]
    db.t.create_index([("loc", "2dsphere")])
    assert _big_polygon_counts(db.t) == [3, 4, 1, 2]
    db.t.drop_indexes()
    db.t.insert_one({"_id": "bigPoly10", "loc": BIG_POLY10})  # stored; the queries never match it
    assert _big_polygon_counts(db.t) == [3, 4, 1, 2]
    with pytest.raises(OperationFailure) as e:  # ... and it cannot be indexed
        db.t.create_index([("loc", "2dsphere")])
    assert_code(e, CANT_EXTRACT_GEO_KEYS)
    db.t.delete_one({"_id": "bigPoly10"})
    db.t.create_index([("loc", "2dsphere")])
    with pytest.raises(WriteError) as e:
        db.t.insert_one({"_id": "bigPoly10", "loc": BIG_POLY10})
    assert_code(e, CANT_EXTRACT_GEO_KEYS)
    for g in ({"type": "Point", "coordinates": [0, 0], "crs": BIG_CRS},
              {"type": "LineString", "coordinates": [[-20, 0], [20, 0]], "crs": BIG_CRS}):
        with pytest.raises(OperationFailure) as e:
            list(db.t.find({"loc": {"$geoIntersects": {"$geometry": g}}}))
        assert_code(e, BAD_VALUE)


# --------------------------------------------------------------------------------------------------
# geo_s2multi.js
# --------------------------------------------------------------------------------------------------

MULTI_POLYGON_A = {"type": "MultiPolygon", "coordinates": [
    [[[102.0, 2.0], [103.0, 2.0], [103.0, 3.0], [102.0, 3.0], [102.0, 2.0]]],
    [[[100.0, 0.0], [101.0, 0.0], [101.0, 1.0], [100.0, 1.0], [100.0, 0.0]],
     [[100.2, 0.2], [100.8, 0.2], [100.8, 0.8], [100.2, 0.8], [100.2, 0.2]]]]}
PARTIAL_POLYGON_A = _ring((102.0, 2.0), (103.0, 2.0), (103.0, 3.0), (102.0, 3.0), (102.0, 2.0))


def test_multi_geometries(db):
    db.t.insert_many([
        {"_id": "mpoint", "geo": {"type": "MultiPoint", "coordinates": [[100.0, 0.0], [101.0, 1.0]]}},
        {"_id": "mline", "geo": {"type": "MultiLineString", "coordinates": [[[100.0, 0.0], [101.0, 1.0]],
                                                                            [[102.0, 2.0], [103.0, 3.0]]]}},
        {"_id": "mpoly", "geo": MULTI_POLYGON_A},
    ])
    index = [("geo", "2dsphere")]

    def intersects(g):
        return found_both_ways(db.t, {"geo": {"$geoIntersects": {"$geometry": g}}}, index)

    def within(g):
        return found_both_ways(db.t, {"geo": {"$geoWithin": {"$geometry": g}}}, index)

    assert len(intersects({"type": "Point", "coordinates": [100, 0]})) == 3
    assert len(intersects({"type": "Point", "coordinates": [101.0, 1.0]})) == 3
    assert intersects({"type": "Point", "coordinates": [100.21, 0.21]}) == []  # in the hole
    assert len(intersects({"type": "MultiPoint", "coordinates": [[100, 0], [100.21, 0.21]]})) == 3
    assert len(intersects({"type": "MultiPoint", "coordinates": [[100, 0], [100.21, 0.21], [101, 1]]})) == 3
    assert within(MULTI_POLYGON_A) == ["mpoint", "mpoly"]
    db.t.insert_one({"_id": "partial", "geo": PARTIAL_POLYGON_A})
    assert within(MULTI_POLYGON_A) == ["mpoint", "mpoly", "partial"]
    assert within(PARTIAL_POLYGON_A) == ["partial"]
    assert intersects(PARTIAL_POLYGON_A) == ["mline", "mpoly", "partial"]


# --------------------------------------------------------------------------------------------------
# geo_mindistance_boundaries.js
# --------------------------------------------------------------------------------------------------

def _smallest_detectable(x: float) -> float:
    eps = 5e-324
    while x + eps == x:
        eps *= 2
    return eps


def test_min_distance_boundaries(db):
    # SERVER-9395
    db.t.insert_one({"loc": [1, 0]})
    db.t.create_index([("loc", "2dsphere")])
    degree_m = 2 * math.pi * EARTH_RADIUS_M / 360
    eps_m = _smallest_detectable(degree_m)
    with pytest.raises(OperationFailure) as e:  # $minDistance beside a $geometry near, not inside it
        list(db.t.find({"loc": {"$near": {"$geometry": GJ_ORIGIN}, "$minDistance": 0.1}}))
    assert e.value.code not in (1, None)
    for op in ("$near", "$nearSphere"):
        for dist, n in ((degree_m, 1), (degree_m - eps_m, 1), (degree_m + eps_m, 0)):
            assert len(list(db.t.find({"loc": {op: {"$geometry": GJ_ORIGIN, "$minDistance": dist}}}))) == n, (op, dist)
    for dist, n in ((degree_m - eps_m, 1), (degree_m + eps_m, 0)):
        assert len(list(db.t.find({"loc": {"$nearSphere": GJ_ORIGIN, "$minDistance": dist}}))) == n
    degree_r = 2 * math.pi / 360
    eps_r = _smallest_detectable(1.0)
    for dist, n in ((degree_r, 1), (degree_r - eps_r, 1), (degree_r + eps_r, 0)):
        assert len(list(db.t.find({"loc": {"$nearSphere": [0, 0], "$minDistance": dist}}))) == n, dist


# --------------------------------------------------------------------------------------------------
# geo_2d_trailing_fields.js, geo_s2nopoints.js
# --------------------------------------------------------------------------------------------------

def test_2d_trailing_field_existence_and_arrays(db):
    db.t.create_index([("a", "2d"), ("b", 1)])
    db.t.insert_one({"a": [0, 0]})
    center = {"$geoWithin": {"$center": [[0, 0], 1]}}
    for geo in ({"$near": [0, 0]}, center):
        assert len(list(db.t.find({"a": geo, "b": {"$exists": True}}))) == 0
        assert len(list(db.t.find({"a": geo, "b": None}))) == 1
        assert len(list(db.t.find({"a": geo, "b": {"$exists": False}}))) == 1
    db.t.drop()
    db.t.create_index([("a", "2d"), ("b.c", 1)])
    db.t.insert_one({"a": [0, 0], "b": [{"c": 2}, {"c": 3}]})
    for geo in ({"$near": [0, 0]}, center):
        assert len(list(db.t.find({"a": geo, "b.c": [2, 3]}))) == 0
        assert len(list(db.t.find({"a": geo, "b.c": {"$type": "array"}}))) == 0
    db.t.drop()
    db.t.create_index([("a", "2d"), ("b.c", 1)])
    db.t.insert_one({"a": [0, 0], "b": [{"c": 1}, {"c": 2}]})
    assert len(list(db.t.find({"a": center, "b": {"$elemMatch": {"c": 1}}}))) == 1


def test_near_over_an_empty_collection(db):
    # SERVER-7794
    db.t.create_index([("loc", "2dsphere"), ("x", 1)])
    assert count_cmd(db.t, {"loc": {"$near": {"$geometry": GJ_ORIGIN, "$maxDistance": 10}}}) == 0


# --------------------------------------------------------------------------------------------------
# geo_multinest0.js
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("docs", [
    [{"zip": "10001", "data": [{"loc": [10, 10], "type": "home"}, {"loc": [50, 50], "type": "work"}]},
     {"zip": "10002", "data": [{"loc": [20, 20], "type": "home"}, {"loc": [50, 50], "type": "work"}]},
     {"zip": "10003", "data": [{"loc": [30, 30], "type": "home"}, {"loc": [50, 50], "type": "work"}]}],
    [{"zip": "10001", "data": [{"loc": [[10, 10], {"lat": 50, "long": 50}], "type": "home"}]},
     {"zip": "10002", "data": [{"loc": [20, 20], "type": "home"}, {"loc": [50, 50], "type": "work"}]},
     {"zip": "10003", "data": [{"loc": [{"x": 30, "y": 30}, [50, 50]], "type": "home"}]}],
], ids=["nested", "complex_nesting"])
def test_nested_location_arrays(db, docs):
    db.t.insert_many(docs)
    db.t.create_index([("data.loc", "2d"), ("zip", 1)])
    db.t.insert_one({"zip": "10004", "data": [{"loc": [40, 40], "type": "home"}, {"loc": [50, 50], "type": "work"}]})
    for box in ([[0, 0], [45, 45]], [[45, 45], [50, 50]]):
        assert len(found_both_ways(db.t, {"data.loc": {"$within": {"$box": box}}}, [("data.loc", "2d"), ("zip", 1)])) == 4


# --------------------------------------------------------------------------------------------------
# geo_s2cursorlimitskip.js (batches, limit and skip; the profiler counts are left out)
# --------------------------------------------------------------------------------------------------

def test_near_cursor_batches_limit_and_skip(db):
    rng = random.Random(11)
    db.t.create_index([("geo", "2dsphere")])
    db.t.insert_many([{"geo": {"type": "Point", "coordinates": [rng.choice((-1, 1)) * rng.uniform(0.01, 1.0),
                                                                 rng.choice((-1, 1)) * rng.uniform(0.01, 1.0)]}}
                      for _ in range(200)])
    near = {"geo": {"$geoNear": {"$geometry": GJ_ORIGIN}}}
    assert count_cmd(db.t, near) == 200
    batched = [d["_id"] for d in db.t.find(near).batch_size(4)]
    assert len(batched) == len(set(batched)) == 200
    assert [d["_id"] for d in db.t.find(near)] == batched
    assert len(list(db.t.find(near).limit(23))) == 23
    assert [d["_id"] for d in db.t.find(near).limit(26)][3:] == [d["_id"] for d in db.t.find(near).skip(3).limit(23)]


# --------------------------------------------------------------------------------------------------
# geo_s2descindex.js
# --------------------------------------------------------------------------------------------------

DESC_QUERY = {"coordinates": {"$geoWithin": {"$centerSphere": [[-118.240013, 34.073893], 0.44915760491198753]}}}


@pytest.mark.parametrize("key", [
    [("field1", -1), ("field2", -1), ("coordinates", "2dsphere")],
    [("field2", -1), ("coordinates", "2dsphere"), ("field1", -1)],
    [("coordinates", "2dsphere"), ("field1", -1), ("field2", -1)],
], ids=["geo_last", "geo_middle", "geo_first"])
def test_2dsphere_with_descending_fields(db, key):
    db.t.create_index(key)
    db.t.insert_many([{"field1": "a", "field2": 1, "coordinates": [-118.2400013, 34.073893]},
                      {"field1": "b", "field2": 1, "coordinates": [-118.2400012, 34.073894]}])
    for extra, n in (({"field1": "a"}, 1), ({"field1": "b"}, 1), ({"field2": 1}, 2), ({"field2": 0}, 0)):
        assert count_cmd(db.t, {**DESC_QUERY, **extra}) == n


def test_2dsphere_with_descending_field_case_from_the_wild(db):
    db.t.create_index([("coordinates", "2dsphere"), ("field", -1)])
    db.t.insert_one({"coordinates": [-118.240013, 34.073893]})
    q = {**DESC_QUERY, "field": 1}
    assert db.t.find_one(q) is None
    db.t.delete_many({})
    db.t.insert_one({"coordinates": [-118.240013, 34.073893], "field": 1})
    assert db.t.find_one(q) is not None


# --------------------------------------------------------------------------------------------------
# geo_max.js
# --------------------------------------------------------------------------------------------------

def test_points_on_the_plane_edge(db):
    rng = random.Random(3)
    db.t.insert_many([{"loc": [rng.uniform(-162, 162), rng.uniform(-81, 81)]} for _ in range(1000)])
    db.t.create_index([("loc", "2d")], min=-180, max=180)
    db.t.insert_many([{"loc": [180, 0]}, {"loc": [-180, 0]}, {"loc": [179.999, 0]}, {"loc": [-179.999, 0]}])
    for region, sign in (({"$center": [[180, 0], 1]}, 1), ({"$center": [[-180, 0], 1]}, -1),
                         ({"$box": [[180, 0.1], [179, -0.1]]}, 1), ({"$box": [[-180, 0.1], [-179, -0.1]]}, -1),
                         ({"$polygon": [[180, 0], [179, 0], [179.5, 0.5]]}, 1),
                         ({"$polygon": [[-180, 0], [-179, 0], [179.5, 0.5]]}, -1)):
        found = list(db.t.find({"loc": {"$within": region}}))
        assert len(found) == 2 and all(d["loc"][0] * sign > 0 for d in found), region
        assert found_both_ways(db.t, {"loc": {"$within": region}}, [("loc", "2d")], min=-180,
                               max=180) == sorted(d["_id"] for d in found)
    assert list(db.t.find({"loc": {"$near": [180, 0]}}, {"_id": 0}).limit(2)) == [{"loc": [180, 0]},
                                                                                  {"loc": [179.999, 0]}]
    assert list(db.t.find({"loc": {"$near": [-180, 0]}}, {"_id": 0}).limit(2)) == [{"loc": [-180, 0]},
                                                                                   {"loc": [-179.999, 0]}]


@pytest.mark.xfail(strict=True, reason=NEAR_SPHERE_2D_WRAPS)
def test_near_sphere_2d_does_not_wrap_the_antimeridian(db):
    db.t.create_index([("loc", "2d")])
    db.t.insert_many([{"loc": [180, 0]}, {"loc": [-180, 0]}, {"loc": [179.999, 0]}, {"loc": [-179.999, 0]}])
    # mongod's 2d near search does not wrap: [-180, 0] (0 away on the sphere) is never returned
    assert list(db.t.find({"loc": {"$nearSphere": [180, 0]}}, {"_id": 0}).limit(2)) == [{"loc": [180, 0]},
                                                                                         {"loc": [179.999, 0]}]
    assert list(db.t.find({"loc": {"$nearSphere": [-180, 0]}}, {"_id": 0})) == [{"loc": [-180, 0]},
                                                                                 {"loc": [-179.999, 0]}]


# --------------------------------------------------------------------------------------------------
# geo_s2edgecases.js
# --------------------------------------------------------------------------------------------------

def test_polygons_at_the_antimeridian_and_the_poles(db):
    db.t.insert_many([
        {"geo": _ring((179, 1), (-179, 1), (-179, -1), (179, -1), (179, 1))},
        {"geo": _ring((179, 1), (179, -1), (-179, -1), (-179, 1), (179, 1))},
        {"geo": _ring((179, 89), (179, 90), (-179, 90), (-179, 89), (179, 89))},
        {"geo": _ring((179, 89), (-179, 89), (-179, 90), (179, 90), (179, 89))},
        {"geo": _ring((0, -89), (0, -90), (179, -90), (179, -89), (0, -89))},
        {"geo": _ring((0, -89), (179, -89), (179, -90), (0, -90), (0, -89))},
    ])
    for pt in ([180, 0], [180, 90], [0, -90]):
        q = {"geo": {"$geoIntersects": {"$geometry": {"type": "Point", "coordinates": pt}}}}
        assert len(found_both_ways(db.t, q, [("geo", "2dsphere"), ("nonGeo", 1)])) == 2, pt


# --------------------------------------------------------------------------------------------------
# geo_s2validindex.js, geo_s2indexversion1.js
# --------------------------------------------------------------------------------------------------

def test_valid_and_invalid_2dsphere_compound_specs(db):
    db.t.create_index([("geo", "2dsphere"), ("other", 1)])
    db.u.create_index([("geo", "2dsphere"), ("other", 1), ("geo2", "2dsphere")])
    for other in ("hash", "2d"):
        with pytest.raises(OperationFailure) as e:
            db.v.create_index([("geo", "2dsphere"), ("other", other)])
        assert e.value.code not in (1, None)


@pytest.mark.parametrize("version", [-1, 0, 5, math.inf, "foo", {"a": 1}])
def test_invalid_2dsphere_index_versions(db, version):
    with pytest.raises(OperationFailure) as e:
        db.t.create_index([("geo", "2dsphere")], **{"2dsphereIndexVersion": version})
    assert e.value.code not in (1, None)


def test_2dsphere_index_versions_and_their_geometries(db):
    db.t.create_index([("geo", "2dsphere")], name="geo_2dsphere")
    assert next(s for s in db.t.list_indexes() if s["name"] == "geo_2dsphere")["2dsphereIndexVersion"] == 3
    db.t.drop()
    for v in (1, Int64(1), 2, Int64(2), 3, Int64(3)):
        db.t.create_index([("geo", "2dsphere")], **{"2dsphereIndexVersion": v})
        db.t.drop()
    db.create_collection("t")
    db.t.create_index([("geo", "2dsphere")], **{"2dsphereIndexVersion": 1})
    db.t.create_index([("geo", "2dsphere")], **{"2dsphereIndexVersion": 2})  # a no-op: same index
    db.t.create_index([("geo", "2dsphere")])
    assert len(list(db.t.list_indexes())) == 2
    db.t.drop()
    simple = [{"type": "Point", "coordinates": [40, 5]}, {"type": "LineString", "coordinates": [[40, 5], [41, 6]]},
              _ring((0, 0), (3, 6), (6, 1), (0, 0))]
    multi = [{"type": "MultiPoint", "coordinates": [[-73.958, 40.8003], [-73.9498, 40.7968]]},
             {"type": "MultiLineString", "coordinates": [[[-73.96943, 40.78519], [-73.96082, 40.78095]]]},
             {"type": "MultiPolygon", "coordinates": [[[[-73.958, 40.8003], [-73.9498, 40.7968], [-73.9737, 40.7648],
                                                        [-73.958, 40.8003]]]]},
             {"type": "GeometryCollection", "geometries": [{"type": "MultiPoint",
                                                            "coordinates": [[-73.958, 40.8003]]}]}]
    db.t.create_index([("geo", "2dsphere")], **{"2dsphereIndexVersion": 2})
    db.t.insert_many([{"geo": g} for g in simple + multi])



def test_2dsphere_version_1_indexes_simple_geometries_only(db):
    simple = [{"type": "Point", "coordinates": [40, 5]}, {"type": "LineString", "coordinates": [[40, 5], [41, 6]]},
              _ring((0, 0), (3, 6), (6, 1), (0, 0))]
    multi = [{"type": "MultiPoint", "coordinates": [[-73.958, 40.8003], [-73.9498, 40.7968]]},
             {"type": "MultiLineString", "coordinates": [[[-73.96943, 40.78519], [-73.96082, 40.78095]]]}]
    db.t.create_index([("geo", "2dsphere")], **{"2dsphereIndexVersion": 1})
    db.t.insert_many([{"geo": g} for g in simple])
    for g in multi:
        with pytest.raises(WriteError) as e:
            db.t.insert_one({"geo": g})
        assert_code(e, CANT_EXTRACT_GEO_KEYS)


# --------------------------------------------------------------------------------------------------
# geo3.js, geo6.js, geo7.js, geo9.js, geo10.js
# --------------------------------------------------------------------------------------------------

@pytest.fixture
def geo3(db):
    db.t.insert_many([{"loc": [x, y], "a": abs(x) % 5, "b": abs(y) % 5}
                      for x in range(-100, 100, 2) for y in range(-100, 100, 2)])
    return db.t


def _avg_a(coll, extra: dict, n: int = 10) -> float:
    found = [d["a"] for d in coll.find({"loc": {"$near": [50, 50]}, **extra}).limit(n)]
    assert len(found) == n
    return sum(found) / n


@pytest.mark.parametrize("index", [[("loc", "2d")], [("loc", "2d"), ("a", 1)], [("loc", "2d"), ("b", 1)]],
                         ids=["loc", "loc_a", "loc_b"])
def test_near_with_filters_and_geo_near_query(geo3, index):
    geo3.create_index(index)
    res = list(geo3.aggregate([{"$geoNear": {"near": [50, 50], "distanceField": "dist", "query": {"a": 2}}},
                               {"$limit": 10}]))
    assert len(res) == 10 and all(d["a"] == 2 for d in res)
    assert _avg_a(geo3, {}) < 2
    assert _avg_a(geo3, {"a": 2}) == 2
    assert _avg_a(geo3, {"a": 4}) == 4
    q = {"loc": {"$near": [50, 50]}}
    assert len(list(geo3.find(q).limit(100))) == 100
    assert len(list(geo3.find(q).limit(20))) == 20
    # SERVER-14039
    assert len(list(geo3.find(q).skip(10).limit(10))) == 10
    assert [d["_id"] for d in geo3.find(q).skip(10).limit(10)] == [d["_id"] for d in geo3.find(q).limit(20)][10:]


def test_near_skips_documents_without_location_and_sorts(db):
    db.t.create_index([("loc", "2d")])
    assert list(db.t.find({"loc": {"$near": [50, 50]}})) == []
    db.t.insert_many([{"_id": 1, "loc": [1, 1]}, {"_id": 2, "loc": [1, 2]}, {"_id": 3}])
    assert len(list(db.t.find())) == 3
    assert len(list(db.t.find().hint([("loc", "2d")]))) == 2
    assert len(list(db.t.find({"loc": {"$near": [50, 50]}}))) == 2
    assert next(db.t.find({"loc": {"$near": [50, 50]}}).sort("_id", 1))["_id"] == 1
    assert next(db.t.find({"loc": {"$near": [50, 50]}}).sort("_id", -1))["_id"] == 2
    db.t.insert_one({"_id": 4, "loc": []})
    assert len(list(db.t.find())) == 4


@pytest.mark.parametrize("index", [[("y", "2d"), ("z", 1)], [("y", "2d")]], ids=["compound", "simple"])
def test_geo_index_answers_equality_on_its_field(db, index):
    db.t.create_index(index)
    db.t.insert_many([{"_id": 1, "y": [1, 1]}, {"_id": 2, "y": [1, 1], "z": 3}, {"_id": 3, "y": [1, 1], "z": 4},
                      {"_id": 4, "y": [1, 1], "z": 5}])
    assert [d["_id"] for d in db.t.find({"y": [1, 1], "z": 3})] == [2]
    if len(index) == 1:
        db.t.insert_one({"_id": 5, "y": 5})  # not a point: not indexed, still found
        assert db.t.find_one({"y": 5})["_id"] == 5


def test_two_2d_indexes_each_answer_near(db):
    db.t.insert_many([{"_id": 1, "a": [10, 10], "b": [50, 50]}, {"_id": 2, "a": [11, 11], "b": [51, 52]},
                      {"_id": 3, "a": [12, 12], "b": [52, 52]}, {"_id": 4, "a": [50, 50], "b": [10, 10]},
                      {"_id": 5, "a": [51, 51], "b": [11, 11]}, {"_id": 6, "a": [52, 52], "b": [12, 12]}])
    db.t.create_index([("a", "2d")])
    db.t.create_index([("b", "2d")])
    for field in ("a", "b"):
        found = list(db.t.find({field: {"$near": [11, 11]}}).limit(3))
        assert sum(math.dist([11, 11], d[field]) for d in found) == pytest.approx(2 * math.sqrt(2))


def test_2d_index_with_a_huge_plane(db):
    # SERVER-2746
    db.t.create_index([("c", "2d"), ("t", 1)], min=0, max=2**40)
    db.t.insert_many([{"_id": 1, "c": [1, 1], "t": 1}, {"_id": 2, "c": [3600, 3600], "t": 1},
                      {"_id": 3, "c": [0.001, 0.001], "t": 1}])
    q = {"c": {"$within": {"$box": [[0.001, 0.001], [2**40 - 0.001, 2**40 - 0.001]]}}, "t": 1}
    assert found_both_ways(db.t, q, [("c", "2d"), ("t", 1)], min=0, max=2**40) == [1, 2, 3]


# --------------------------------------------------------------------------------------------------
# geo_s2ordering.js (answers only), geo_2d_point_near_zero.js, geo_s2near_equator_opposite.js
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("index", [[("nongeo", 1), ("geo", "2dsphere")], [("geo", "2dsphere"), ("nongeo", 1)]],
                         ids=["nongeo_first", "geo_first"])
def test_2dsphere_index_field_order(db, index):
    db.t.insert_many([{"nongeo": f"{x},{y}", "geo": {"type": "Point", "coordinates": [x / 20.0, y / 20.0]}}
                      for x in range(-20, 20) for y in range(-20, 20)])
    db.t.insert_one({"_id": "needle", "nongeo": "hari", "geo": GJ_ORIGIN})
    q = {"nongeo": "hari", "geo": {"$within": {"$centerSphere": [[0, 0], math.pi / 180.0]}}}
    assert found_both_ways(db.t, q, index) == ["needle"]


def test_2d_points_next_to_the_plane_maximum(db):
    # SERVER-92930
    db.t.create_index([("loc", "2d")], max=0)
    db.t.insert_many([{"loc": c} for c in ([0, 0], [-100, -50], [-180, -50], [0, -50], [-2.220446049250313e-16, 0],
                                           [-1.0e-14, -50], [-5, -5.24e-20])])
    for box, n in (([[-180, -180], [0, 0]], 7), ([[-10, -10], [10, 10]], 3), ([[-180, -60], [0, -30]], 4),
                   ([[-10, -60], [0, -30]], 2), ([[-5, -60], [0, 0]], 5)):
        assert len(list(db.t.find({"loc": {"$within": {"$box": box}}}))) == n, box


def test_near_from_the_antipode_of_the_points(db):
    # SERVER-11830
    db.t.insert_many([{"loc": GJ_ORIGIN}, {"loc": {"type": "Point", "coordinates": [-1, 0]}}])
    db.t.create_index([("loc", "2dsphere")])
    dist = 40075000 / 2 + 1
    far = {"type": "Point", "coordinates": [180, 0]}
    for op in ("$nearSphere", "$near"):
        assert len(list(db.t.find({"loc": {op: {"$geometry": far, "$maxDistance": dist}}}))) == 2
    res = list(db.t.aggregate([{"$geoNear": {"near": far, "spherical": True, "distanceField": "dist"}}]))
    assert len(res) == 2 and max(d["dist"] for d in res) < dist


# --------------------------------------------------------------------------------------------------
# geo1.js, geo_circle2.js, geo_sort1.js, geo_exactfetch.js, geo_fiddly_box.js, geo_multikey0.js
# --------------------------------------------------------------------------------------------------

def test_2d_index_spec_rules_and_bounds(db):
    db.t.insert_many([{"zip": "06525", "loc": [41.352964, 73.01212]}, {"zip": "10024", "loc": [40.786387, 73.97709]},
                      {"zip": "94061", "loc": [37.463911, 122.23396]}])
    with pytest.raises(OperationFailure) as e:  # "2d" must come first
        db.t.create_index([("zip", 1), ("loc", "2d")])
    assert e.value.code not in (1, None)
    assert len(list(db.t.list_indexes())) == 1
    db.t.create_index([("loc", "2d"), ("zip", 1)])
    with pytest.raises(WriteError) as e:
        db.t.insert_one({"loc": [200, 200]})
    assert e.value.code == 13027
    assert db.t.count_documents({}) == 3
    wb = db.t.find_one({"zip": "06525"})
    assert next(db.t.find({"loc": wb["loc"]}).hint([("$natural", 1)]))["zip"] == "06525"
    assert next(db.t.find({"loc": wb["loc"]}))["zip"] == "06525"
    db.t.drop()
    db.t.create_index([("loc", "2d")], min=-500, max=500, bits=4)
    db.t.insert_one({"loc": [200, 200]})


def test_center_with_object_points_and_a_trailing_array_field(db):
    db.t.create_index([("loc", "2d"), ("categories", 1)], name="placesIdx", min=-100, max=100)
    rows = [(368900, -36, -8, ["sports", "hotel", "restaurant"]), (555344, 13, 29, ["sports", "hotel"]),
            (855878, 38, 30, ["sports", "hotel"]), (917347, 15, 46, ["hotel"]), (647874, 25, 23, ["hotel", "restaurant"]),
            (518482, 4, 25, []), (193466, -39, 22, ["sports", "hotel"]), (622442, -24, -46, ["hotel"]),
            (297426, 33, -49, ["hotel"]), (528464, -43, 48, ["restaurant"]), (90579, -4, -23, ["restaurant"]),
            (368895, -8, 14, ["sports"]), (355844, 34, -4, ["sports", "hotel"])]
    db.t.insert_many([{"uid": u, "loc": {"x": x, "y": y}, "categories": c} for u, x, y, c in rows])
    center = {"loc": {"$within": {"$center": [{"x": 0, "y": 0}, 50]}}}
    assert len(list(db.t.find(center))) == 10
    assert len(list(db.t.find({**center, "categories": "sports"}))) == 6
    assert len(list(db.t.find({"loc": {"x": -36, "y": -8}, "categories": "sports"}))) == 1


def test_near_then_sort_by_another_field(db):
    db.t.insert_many([{"loc": [x, y], "foo": x * x * y} for x in range(10) for y in range(10)])
    db.t.create_index([("loc", "2d"), ("foo", 1)])
    q = {"loc": {"$near": [5, 5]}, "foo": {"$gt": 20}}
    by_distance = [d["foo"] for d in db.t.find(q)]
    by_foo = [d["foo"] for d in db.t.find(q).sort("foo", 1)]
    assert by_distance != by_foo and sorted(by_distance) == by_foo


@pytest.mark.parametrize("kind", ["2d", "2dsphere"])
def test_exact_point_equality_beside_a_geo_index(db, kind):
    # SERVER-7322
    db.t.insert_many([{"city": "B", "lon_lat": [-71.34895, 42.46037], "population": 1000},
                      {"city": "A", "lon_lat": [1.48736, 42.55327], "population": 100}])
    assert len(list(db.t.find({"lon_lat": [-71.34895, 42.46037]}))) == 1
    db.t.create_index([("lon_lat", kind), ("population", -1)])
    assert len(list(db.t.find({"lon_lat": {"$nearSphere": [-71.34895, 42.46037]}}))) == 2
    assert len(list(db.t.find({"lon_lat": [-71.34895, 42.46037]}))) == 1


def test_fiddly_boxes(db):
    # SERVER-2832
    db.t.insert_many([{"loc": [3, y]} for y in (1, 0.5, 0.25, -0.01, -0.25, -0.5, -1)])
    assert len(found_both_ways(db.t, {"loc": {"$within": {"$box": [[2, -2], [46, 2]]}}}, [("loc", "2d")])) == 7
    db.t.drop()
    eps = 0.0001
    db.t.insert_many([{"loc": {"x": x, "y": y}} for x in (-1, 0, 1) for y in (-1, 0, 1)])
    q = {"loc": {"$within": {"$box": [[-1 - eps / 3, -1 - eps / 3], [1 + eps / 3, 1 + eps / 3]]}}}
    assert len(found_both_ways(db.t, q, [("loc", "2d")], max=1 + eps / 2, min=-1 - eps / 2)) == 9


def test_conflicting_bounds_met_by_different_array_elements(db):
    # SERVER-3793
    db.t.insert_one({"loc": [{"x": 20, "y": 30}, {"x": 30, "y": 40}]})
    assert db.t.count_documents({"loc": {"x": 20, "y": 30},
                                 "$and": [{"loc": {"$gt": {"x": 20, "y": 35}, "$lt": {"x": 20, "y": 34}}}]}) == 1
    db.t.drop()
    db.t.insert_one({"loc": [20, 30], "x": [1, 2]})
    assert db.t.count_documents({"loc": [20, 30], "x": {"$gt": 1.7, "$lt": 1.2}}) == 1


# --------------------------------------------------------------------------------------------------
# geo_s2dedupnear.js, geo_s2nearcorrect.js
# --------------------------------------------------------------------------------------------------

def test_near_returns_a_polygon_once(db):
    db.t.create_index([("geo", "2dsphere")])
    db.t.insert_one({"geo": _ring((100.0, 0.0), (101.0, 0.0), (101.0, 1.0), (100.0, 1.0), (100.0, 0.0))})
    assert len(list(db.t.find({"geo": {"$geoNear": {"type": "Point", "coordinates": [31, 41]}}}))) == 1


def test_near_finds_a_long_line_whose_cover_spans_rings(db):
    # SERVER-9484
    db.t.insert_one({"geo": {"type": "LineString", "coordinates": [[0, 0], [179, 89]]}})
    db.t.create_index([("geo", "2dsphere")])
    near = {"geo": {"$near": {"$geometry": {"type": "Point", "coordinates": [45, 45]}, "$maxDistance": 20000000}}}
    assert count_cmd(db.t, near) == 1


# --------------------------------------------------------------------------------------------------
# aggregation/sources/geonear: distancefield_and_includelocs.js, mindistance_and_maxdistance.js,
# requires_geo_index.js, valid_type.js (codes), geonear_mindistance.js, geonear_hint.js (answers),
# geonear_let.js, collation_geonear.js
# --------------------------------------------------------------------------------------------------

GEONEAR_DOCS = [
    {"_id": "legacy", "geo": [1, 1], "ptForNearQuery": [1, 1], "scalar": "foo",
     "arr": [{"a": 1, "b": 1}, {"a": 2, "b": 2}]},
    {"_id": "point", "geo": {"type": "Point", "coordinates": [1, 0]}, "ptForNearQuery": [1, 0], "scalar": "bar",
     "arr": [{"a": 3, "b": 3}, {"a": 4, "b": 4}]},
    {"_id": "linestring", "geo": {"type": "LineString", "coordinates": [[0, 0], [-1, -1]]}, "ptForNearQuery": [-1, -1],
     "scalar": "baz", "arr": [{"a": 5, "b": 5}, {"a": 6, "b": 6}]},
]


def _close(a, b) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and abs(a - b) < 1e-10
    return a == b


@pytest.mark.parametrize("doc", GEONEAR_DOCS, ids=[d["_id"] for d in GEONEAR_DOCS])
def test_geo_near_distance_field_and_include_locs_paths(db, doc):
    db.t.create_index([("geo", "2dsphere")])
    db.t.insert_many([dict(d) for d in GEONEAR_DOCS])

    def first(proj=None, **spec):
        pipeline = [{"$geoNear": {"near": doc["ptForNearQuery"], "spherical": True, **spec}}, {"$limit": 1}]
        if proj:
            pipeline.append({"$project": proj})
        res = list(db.t.aggregate(pipeline))
        assert len(res) == 1
        return res[0]

    def plus(**fields):
        return {**doc, **fields}

    d = 0.0
    for got, want in (
        (first(distanceField="newField"), plus(newField=d)),
        (first(distanceField="nested.field"), plus(nested={"field": d})),
        (first(distanceField="scalar"), plus(scalar=d)),
        (first(distanceField="arr"), plus(arr=d)),
        (first(distanceField="arr.b"), plus(arr={"b": d})),  # SERVER-35561
        (first(distanceField="dist", includeLocs="loc"), plus(dist=d, loc=doc["geo"])),
        (first(distanceField="newField", includeLocs="newField"), plus(newField=doc["geo"])),
        (first(distanceField="comp.dist", includeLocs="comp.loc"), plus(comp={"dist": d, "loc": doc["geo"]})),
        (first({"d": 0}, distanceField="d", includeLocs="newField"), plus(newField=doc["geo"])),
        (first({"d": 0}, distanceField="d", includeLocs="nested.field"), plus(nested={"field": doc["geo"]})),
        (first({"d": 0}, distanceField="d", includeLocs="scalar"), plus(scalar=doc["geo"])),
        (first({"d": 0}, distanceField="d", includeLocs="arr"), plus(arr=doc["geo"])),
        (first({"d": 0}, distanceField="d", includeLocs="arr.a"), plus(arr={"a": doc["geo"]})),
    ):
        assert _close(got, want), repr((got, want))


@pytest.mark.parametrize("kind", ["2d", "2dsphere"])
def test_geo_near_min_and_max_distance(db, kind):
    db.t.create_index([("pt", kind)])
    pts = {"origin": [0, 0], "near": [0.23, -0.32], "far": [5.9, 0.0]}
    if kind == "2dsphere":
        dist = {k: great_circle((0, 0), p) for k, p in pts.items()}
    else:
        dist = {k: math.dist((0, 0), p) for k, p in pts.items()}
    db.t.insert_many([{"_id": k, "pt": p} for k, p in pts.items()])

    def found(**opts):
        return [d["_id"] for d in db.t.aggregate([{"$geoNear": {"near": [0, 0], "distanceField": "dist",
                                                                "spherical": kind == "2dsphere", **opts}}])]

    every = ["origin", "near", "far"]
    assert found() == every
    for name in ("minDistance", "maxDistance"):
        for bad in (-1.1, "3.2"):
            with pytest.raises(OperationFailure) as e:
                found(**{name: bad})
            assert_code(e, BAD_VALUE, TYPE_MISMATCH)
    assert found(minDistance=-0.0) == every == found(minDistance=0.0)
    assert found(minDistance=dist["near"] / 2) == ["near", "far"]
    assert found(minDistance=dist["far"] / 2) == ["far"]
    assert found(minDistance=math.pi * 2) == []
    assert found(maxDistance=0.0) == ["origin"] == found(maxDistance=-0.0)
    assert found(maxDistance=dist["near"] + 0.01) == ["origin", "near"]
    assert found(maxDistance=dist["far"] + 0.01) == every
    assert found(minDistance=0.0, maxDistance=math.pi * 2) == every
    assert found(minDistance=dist["near"] / 2, maxDistance=dist["near"] + 0.01) == ["near"]
    assert found(minDistance=3.0, maxDistance=1.0) == []


def test_geo_near_requires_a_geo_index_also_in_lookup(db):
    db.coll.insert_one({"_id": 5, "x": 5})
    db["from"].insert_one({"_id": 1, "geo": [0, 0]})
    stage = [{"$geoNear": {"near": [0, 0], "distanceField": "distance", "spherical": True}}]
    lookup = [{"$lookup": {"pipeline": stage, "from": "from", "as": "c"}}]
    for coll, pipeline in ((db["from"], stage), (db.coll, lookup)):
        with pytest.raises(OperationFailure) as e:
            list(coll.aggregate(pipeline))
        assert_code(e, 27)
    db["from"].create_index([("geo", "2dsphere")])
    assert len(list(db["from"].aggregate(stage))) == 1
    res = list(db.coll.aggregate(lookup))
    assert len(res) == 1 and len(res[0]["c"]) == 1


@pytest.mark.parametrize("stage_or_filter", [
    {"$geoNear": {"near": {"type": "blah", "coordinates": [0, 0]}, "distanceField": "d", "spherical": True,
                  "query": {"str": "a"}}},
    {"$geoNear": {"near": {"type": 1, "coordinates": [0, 0]}, "distanceField": "d", "spherical": True,
                  "query": {"str": "a"}}},
    {"$geoNear": {"near": {"type": "LineString", "coordinates": [0, 0]}, "distanceField": "d", "spherical": True}},
    {"$geoNear": {"near": {"type": "Point", "coordinates": []}, "distanceField": "d", "spherical": True,
                  "maxDistance": 1337, "key": "loc"}},
    {"$geoNear": {"near": {"type": "Point", "coordinates": [1]}, "distanceField": "d"}},
    {"loc": {"$near": {"$geometry": {"type": "blah", "coordinates": [73.9667, 40.78]}, "$minDistance": 1000,
                       "$maxDistance": 5000}}},
    {"loc": {"$near": {"$geometry": {"type": "Point", "coordinates": [73.9667, 40.78],
                                     "crs": {"type": "blah", "properties": {"name": "random"}}}}}},
    {"loc": {"$near": {"$geometry": {"type": "Point", "coordinates": [73.9667, 40.78],
                                     "crs": {"type": 2, "properties": {"name": "random"}}}}}},
], ids=["type_blah", "type_number", "line", "no_coordinates", "one_coordinate", "find_type_blah", "crs_blah",
        "crs_number"])
def test_near_operand_types(db, stage_or_filter):
    db.t.create_index([("loc", "2dsphere")])
    db.t.insert_one({"loc": [0, 0], "str": "A"})
    with pytest.raises(OperationFailure) as e:
        if "$geoNear" in stage_or_filter:
            list(db.t.aggregate([stage_or_filter]))
        else:
            list(db.t.find(stage_or_filter))
    assert_code(e, BAD_VALUE)


def test_geo_near_min_distance_in_metres(db):
    # SERVER-14421
    db.t.insert_many([{"_id": 0, "loc": GJ_ORIGIN}, {"_id": 1, "loc": {"type": "Point", "coordinates": [0, 0.01]}}])
    db.t.create_index([("loc", "2dsphere")])
    for min_d, n in ((10000, 0), (1, 1), (0, 2)):
        assert len(_geo_near(db.t, near=GJ_ORIGIN, minDistance=min_d, spherical=True)) == n


def test_geo_near_with_a_hint_and_a_key(db):
    db.t.insert_one({"_id": "1", "state": "ACTIVE", "location": [106, 10], "name": "TEST"})
    db.t.create_index([("_id", 1), ("location", "2dsphere"), ("state", 1)], name="compoundGeoNearIndex")
    db.t.create_index([("location", "2dsphere")], name="simpleGeoNearIndex")
    pipeline = [{"$geoNear": {"query": {"_id": {"$in": ["1", "2", "3"]}, "state": "ACTIVE"}, "spherical": True,
                              "near": {"coordinates": [106.65589, 10.787627], "type": "Point"},
                              "distanceField": "distance", "key": "location"}},
                {"$project": {"id": 1, "name": 1, "distance": 1}}]
    for hint in ("simpleGeoNearIndex", "compoundGeoNearIndex"):
        assert len(list(db.t.aggregate(pipeline, hint=hint))) == 1


def test_geo_near_point_from_a_let_variable(db):
    db.t.insert_many([{"_id": 0, "location": {"type": "Point", "coordinates": [10, 20]}},
                      {"_id": 1, "location": {"type": "Point", "coordinates": [8, 22]}}])
    db.t.create_index([("location", "2dsphere")])

    def compare(near):
        by_var = list(db.t.aggregate([{"$geoNear": {"near": "$$pt", "distanceField": "distance"}}], let={"pt": near}))
        const = list(db.t.aggregate([{"$geoNear": {"near": near, "distanceField": "distance"}}]))
        assert [d["distance"] for d in by_var] == [d["distance"] for d in const] and len(const) == 2

    compare({"type": "Point", "coordinates": [10, 22]})
    db.t.drop()
    db.t.insert_many([{"_id": 0, "location": [10, 20]}, {"_id": 1, "location": [8, 22]}])
    db.t.create_index([("location", "2d")])
    compare([10, 22])
    for bad in (5, "abc"):
        with pytest.raises(OperationFailure) as e:
            list(db.t.aggregate([{"$geoNear": {"near": "$$pt", "distanceField": "distance"}}], let={"pt": bad}))
        assert_code(e, 5860401)


def test_geo_near_point_from_a_lookup_let_variable(db):
    db.t.insert_many([{"_id": 0, "location": {"type": "Point", "coordinates": [10, 20]}},
                      {"_id": 1, "location": {"type": "Point", "coordinates": [8, 22]}}])
    db.t.create_index([("location", "2dsphere")])
    db.g2.insert_many([{"_id": 5, "location": {"type": "Point", "coordinates": [10, 21]}},
                       {"_id": 6, "location": {"type": "Point", "coordinates": [11, 21]}}])
    res = list(db.g2.aggregate([{"$lookup": {"from": "t", "let": {"pt": "$location"},
                                             "pipeline": [{"$geoNear": {"near": "$$pt", "distanceField": "distance"}},
                                                          {"$match": {"_id": 0}}], "as": "joined"}}]))
    assert len(res) == 2 and res[0]["joined"][0]["distance"] != res[1]["joined"][0]["distance"]


def test_geo_near_let_variable_that_is_not_a_point_fails_when_it_runs(db):
    """A near point from a $lookup let variable is known only per input document: a missing one is
    5860401 when the sub-pipeline runs (mongod's asNearQuery), and parsing the stage alone is not."""
    db.t.insert_one({"_id": 0, "location": {"type": "Point", "coordinates": [10, 20]}})
    db.t.create_index([("location", "2dsphere")])
    lookup = {"$lookup": {"from": "t", "let": {"pt": "$location"}, "as": "joined",
                          "pipeline": [{"$geoNear": {"near": "$$pt", "distanceField": "distance"}}]}}
    assert list(db.g2.aggregate([lookup])) == []  # no input document: nothing runs, nothing fails
    db.g2.insert_one({"_id": 5})
    with pytest.raises(OperationFailure) as e:
        list(db.g2.aggregate([lookup]))
    assert_code(e, 5860401)


def test_geo_near_query_respects_the_collation(db):
    ci = {"locale": "en_US", "strength": 2}
    db.t.create_index([("loc", "2dsphere")])
    db.t.insert_one({"loc": [0, 0], "str": "A"})
    stage = {"$geoNear": {"near": GJ_ORIGIN, "distanceField": "d", "spherical": True, "query": {"str": "a"}}}
    assert len(list(db.t.aggregate([stage]))) == 0
    assert len(list(db.t.aggregate([stage], collation=ci))) == 1
    with pytest.raises(OperationFailure) as e:
        list(db.t.aggregate([{"$geoNear": {**stage["$geoNear"], "collation": ci}}]))
    assert_code(e, 40227)
    db.t.drop()
    db.create_collection("t", collation=ci)
    db.t.create_index([("loc", "2dsphere")])
    db.t.insert_one({"loc": [0, 0], "str": "A"})
    assert len(list(db.t.aggregate([stage]))) == 1
    assert len(list(db.t.aggregate([stage], collation={"locale": "simple"}))) == 0


# --------------------------------------------------------------------------------------------------
# geo_s2within_line_polygon_sphere.js
# --------------------------------------------------------------------------------------------------

LINE_POLY_SPHERE_DOCS = [
    ("Point1", {"type": "Point", "coordinates": [1, 1]}),
    ("LineString1", {"type": "LineString", "coordinates": [[1, 1], [2, 2]]}),
    ("Polygon1", _ring((1, 1), (2, 2), (2, 1), (1, 1))),
    ("LineString2", {"type": "LineString", "coordinates": [[151.0997772216797, -33.86157820443923],
                                                           [151.21719360351562, -33.8952122494965]]}),
    ("LineString3", {"type": "LineString", "coordinates": [
        [174.72896575927734, -36.86698689106876], [174.72965240478516, -36.90707799098374],
        [174.7808074951172, -36.9062544131224], [174.77840423583982, -36.88154294352893],
        [174.72827911376953, -36.88373984256185]]}),
    ("Polygon2", _ring((174.72930908203125, -41.281676559981676), (174.76261138916013, -41.34820622928743),
                       (174.84329223632812, -41.32861539747227), (174.8312759399414, -41.280902559820895),
                       (174.72930908203125, -41.281676559981676))),
    ("MultiPolygon1", {"type": "MultiPolygon", "coordinates": [
        [[[151.21032714843747, -33.85074408022877], [151.23367309570312, -33.84333046657819],
          [151.20929718017578, -33.81680727566872], [151.1876678466797, -33.829927301798676],
          [151.21032714843747, -33.85074408022877]]],
        [[[151.20140075683594, -33.856446422184305], [151.17565155029297, -33.88979749364442],
          [151.2044906616211, -33.9151583833889], [151.23058319091797, -33.87041555094182],
          [151.20140075683594, -33.856446422184305]]]]}),
    ("MultiPolygon2", {"type": "MultiPolygon", "coordinates": [[
        [[151.203031539917, -33.87116383262648], [151.20401859283447, -33.88270791866475],
         [151.21891021728516, -33.88256540860479], [151.2138032913208, -33.86817066653049],
         [151.203031539917, -33.87116383262648]],
        [[151.21041297912598, -33.86980979429744], [151.20938301086426, -33.8767579211837],
         [151.2121295928955, -33.87722110953139], [151.21315956115723, -33.86995232565932],
         [151.21041297912598, -33.86980979429744]]]]}),
]
ALL_LINE_POLY_NAMES = sorted(n for n, _ in LINE_POLY_SPHERE_DOCS)


# (documents inserted so far, as the jstest inserts them between the queries)
@pytest.mark.parametrize("inserted,center,radius,names", [
    (3, [1, 1], 1, ["LineString1", "Point1", "Polygon1"]),
    (4, [151.16789425018004, -33.8508357122312], 0.0011167360027064348, ["LineString2"]),
    (4, [151.09822404831158, -33.85109290503663], 0.0013568277575574095, []),
    (5, [174.75211152791763, -36.88962755605813], 0.000550933650273084, ["LineString3"]),
    (5, [174.75689891704758, -36.8998373317427], 0.0005315628331256537, []),
    (5, [174.8099591465865, -36.89409450096385], 0.00027296698925637807, []),
    (6, [174.78536621904806, -41.30510816038769], 0.0009483659386360411, ["Polygon2"]),
    (6, [174.79144274337722, -41.307682001033385], 0, []),
    (6, [174.7599527533759, -41.27137819591382], 0.0011247013153526434, []),
    (6, [174.80008799649448, -41.201484845543426], 0.0007748581633291528, []),
    (7, [151.20821632978107, -33.865139891361636], 0.000981007241416606, ["MultiPolygon1"]),
    (7, [151.20438542915883, -33.89006380099829], 0.0006390286437185907, []),
    (8, [151.20936119647115, -33.875266834633265], 0.00020277354002627845, ["MultiPolygon2"]),
    (8, [151.20936119647115, -33.875266834633265], 3.14159265358979323846, ALL_LINE_POLY_NAMES),
    (8, [151.21028000820485, -33.87067923462358], 0.00013138775245714733, []),
    (8, [151.21093787887645, -33.87533330567804], 0.000016565456776516003, []),
])
def test_center_sphere_holds_whole_lines_and_polygons(db, inserted, center, radius, names):
    db.t.insert_many([{"name": n, "geoField": g} for n, g in LINE_POLY_SPHERE_DOCS[:inserted]])
    q = {"geoField": {"$geoWithin": {"$centerSphere": [center, radius]}}}
    found = found_both_ways(db.t, q, [("geoField", "2dsphere")])
    assert sorted(db.t.find_one({"_id": i})["name"] for i in found) == names


@pytest.mark.parametrize("shape,center,radius", [
    ({"type": "LineString", "coordinates": [[96.328125, 5.61598581915534], [153.984375, -6.315298538330033]]},
     [-59.80246852929814, -2.3633072488322853], 2.768403272464979),
    (_ring((98.96484375, -11.350796722383672), (135.35156249999997, -11.350796722383672),
           (135.35156249999997, 0.8788717828324276), (98.96484375, 0.8788717828324276),
           (98.96484375, -11.350796722383672)),
     [-61.52266094410311, 17.79937981451866], 2.9592242752161573),
], ids=["long_line", "large_region"])
def test_large_cap_holding_every_vertex_but_not_the_shape(db, shape, center, radius):
    db.t.insert_one({"geoField": shape})
    q = {"geoField": {"$geoWithin": {"$centerSphere": [center, radius]}}}
    assert found_both_ways(db.t, q, [("geoField", "2dsphere")]) == []


# --------------------------------------------------------------------------------------------------
# geo_polygon3.js, geo_box2.js
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("bits", [2, 3, 4, 5, 6, 8, 11, 13, 15, 18, 27, 32])
def test_polygons_at_every_index_precision(db, bits):
    db.t.create_index([("loc", "2d")], bits=bits)
    db.t.insert_many([{"loc": [x, y]} for x in range(1, 9) for y in range(1, 9)])
    for polygon, n in (([[0, 0], [1, 1], [0, 2]], 1), ([[0, 0], [0, 10], [10, 10], [10, 0]], 64),
                       ([[-100, -100], [-100, 100], [100, 100], [100, -100]], 64)):
        assert db.t.count_documents({"loc": {"$within": {"$polygon": polygon}}}) == n
    pacman = [[0, 2], [0, 4], [2, 6], [4, 6], [6, 4], [4, 3], [6, 2], [4, 0], [2, 0]]
    db.u.create_index([("loc", "2d")], bits=bits)
    db.u.insert_many([{"loc": [1, 3]}, {"loc": [5, 3]}, {"loc": [3, 7]}, {"loc": [3, -1]}])
    assert db.u.count_documents({"loc": {"$within": {"$polygon": pacman}}}) == 1


@pytest.mark.parametrize("options", [{}, {"min": 0, "max": 10}])
def test_box_with_default_and_narrow_planes(db, options):
    db.t.insert_many([{"loc": [i, j]} for i in range(1, 10) for j in range(1, 10)])
    assert len(found_both_ways(db.t, {"loc": {"$within": {"$box": [[4, 4], [6, 6]]}}}, [("loc", "2d")],
                               **options)) == 9


# --------------------------------------------------------------------------------------------------
# geo_center_sphere2.js (multi-location documents; seeded, fewer rounds)
# --------------------------------------------------------------------------------------------------

def _x_scan(y: float, degrees: float) -> float:
    return degrees / min(math.cos(math.radians(min(89.0, y + degrees))), math.cos(math.radians(max(-89.0, y - degrees))))


@pytest.mark.parametrize("seed", range(6))
def test_center_sphere_near_sphere_and_geo_near_over_multi_location_docs(db, seed):
    rng = random.Random(1337 + seed)
    radius = 5000 * rng.random() / 6378.1
    bits = int(5 + rng.random() * 28)
    while True:  # a start point whose search does not wrap (as the jstest picks it)
        start = [rng.random() * 360 - 180, rng.random() * 180 - 90]
        yscan = math.degrees(radius) + 0.01
        xscan = _x_scan(start[1], yscan)
        if start[0] + xscan < 180 and start[0] - xscan > -180 and start[1] + yscan < 90 and start[1] - yscan > -90:
            break
    db.t.create_index([("loc", "2d")], bits=bits)
    docs, docs_in = [], 0
    for _ in range(int(150 * rng.random()) + 1):
        pts = [[rng.random() * 360 - 180, rng.random() * 180 - 90] for _ in range(int(rng.random() * 20) + 1)]
        docs.append({"loc": pts})
        docs_in += any(great_circle(start, p) <= radius for p in pts)
    db.t.insert_many(docs)
    assert count_cmd(db.t, {"loc": {"$within": {"$centerSphere": [start, radius]}}}) == docs_in
    res = list(db.t.find({"loc": {"$nearSphere": start, "$maxDistance": radius}}))
    assert len(res) == docs_in
    nearest = [min(great_circle(start, p) for p in d["loc"]) for d in res]
    assert nearest == sorted(nearest) and all(n <= radius for n in nearest)
    res = list(db.t.aggregate([{"$geoNear": {"near": start, "distanceField": "dis", "maxDistance": radius,
                                             "spherical": True}}]))
    assert len(res) == docs_in
    assert [d["dis"] for d in res] == pytest.approx(nearest, abs=1e-9)
