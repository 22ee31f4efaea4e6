"""Pure checks of the geo fixes found by porting MongoDB's geo jstests (tests/e2e/test_jstests_geo.py):
boundary points of spherical polygons, GeoJSON points under the planar operators, legacy points as a
``$geoIntersects`` operand, the ``$near`` ``$geometry`` form taking nothing beside it, big polygons
never matching nor being indexed, and 2dsphere keys of null / empty values and arrays."""

from __future__ import annotations

import math

import pytest
import s2geometry as s2
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.protocol.errors import MongoError
from tidemark.query.geo_keys import Plane, sphere_keys
from tidemark.query.geo_parse import GeoError, parse_stored
from tidemark.query.geo_query import parse_intersects, parse_near, parse_within

BIG_CRS = {"type": "name", "properties": {"name": "urn:x-mongodb:crs:strictwinding:EPSG:4326"}}


def square(x0: float, y0: float, side: float) -> dict:
    ring = [[x0, y0], [x0 + side, y0], [x0 + side, y0 + side], [x0, y0 + side], [x0, y0]]
    return {"type": "Polygon", "coordinates": [ring]}


def point(x: float, y: float) -> dict:
    return {"type": "Point", "coordinates": [x, y]}


# ---- boundary points of a spherical polygon count as inside (mongod's containsPoint) -------------

@settings(max_examples=60, deadline=None)
@given(x0=st.integers(-170, 160), y0=st.integers(-60, 50), side=st.integers(1, 8),
       edge=st.sampled_from(["vertex", "west", "south"]), t=st.floats(0, 1))
def test_polygon_boundary_points_are_within_and_intersect(x0, y0, side, edge, t):
    poly = square(x0, y0, side)
    if edge == "vertex":
        pt = point(x0, y0)
    elif edge == "west":  # a meridian edge is a great circle: every point of it is on the boundary
        pt = point(x0, y0 + t * side)
    else:
        pt = point(x0 + t * side, y0) if y0 == 0 else point(x0, y0)  # only the equator is a great circle
    shape = parse_stored(pt)
    assert parse_within({"$geometry": poly}).contains(shape)
    assert parse_intersects({"$geometry": poly}).intersects(shape)
    # and the other way round: the polygon intersects the point query
    assert parse_intersects({"$geometry": pt}).intersects(parse_stored(poly))


def test_polygon_interior_and_exterior_points_unchanged():
    region = parse_within({"$geometry": square(0, 0, 1)})
    assert region.contains(parse_stored(point(0.5, 0.5)))
    assert not region.contains(parse_stored(point(1.5, 0.5)))
    assert not region.contains(parse_stored(point(0.5, -0.001)))


# ---- the planar operators read a GeoJSON Point as (lng, lat) ---------------------------------------

@pytest.mark.parametrize("operand", [{"$box": [[-5, -5], [5, 5]]},
                                     {"$polygon": [[-5, -5], [-5, 5], [5, 5], [5, -5]]},
                                     {"$center": [[0, 0], 1]}])
def test_planar_operators_see_geojson_points_only(operand):
    region = parse_within(operand)
    assert region.contains(parse_stored(point(0, 0.001)))
    assert not region.contains(parse_stored(point(9, 9)))
    line = {"type": "LineString", "coordinates": [[0, 0], [1, 1]]}
    assert not region.contains(parse_stored(line))


# ---- $geoIntersects takes a legacy point -------------------------------------------------------

def test_intersects_accepts_a_legacy_point_operand():
    region = parse_intersects({"$geometry": [0, 0]})
    assert region.intersects(parse_stored([0, 0]))
    assert region.intersects(parse_stored(point(0, 0)))
    assert not region.intersects(parse_stored(point(1, 1)))
    assert region.intersects(parse_stored(square(-1, -1, 2)))
    with pytest.raises(GeoError):
        parse_intersects({"$geometry": [200, 0]})  # no spherical form
    with pytest.raises(GeoError):
        parse_intersects({"$geometry": [[0, 0], [1, 1]]})


# ---- $near ------------------------------------------------------------------------------------

@pytest.mark.parametrize("extra", ["$minDistance", "$maxDistance"])
def test_near_geometry_form_takes_nothing_beside_it(extra):
    arg = {"$geometry": point(0, 0)}
    with pytest.raises(GeoError) as e:
        parse_near("$near", arg, {"$near": arg, extra: 0.1})
    assert e.value.code == 2 and "geo near accepts just one argument" in e.value.message
    q = parse_near("$near", {"$geometry": point(0, 0), extra: 5}, {"$near": {}})
    assert (q.min_distance if extra == "$minDistance" else q.max_distance) == 5


@pytest.mark.parametrize("shape", [{"type": "LineString", "coordinates": [[40, 5], [41, 6]]}, square(40, 5, 1)])
def test_near_a_line_or_polygon_is_bad_value(shape):
    with pytest.raises(GeoError) as e:
        parse_near("$nearSphere", shape, {"$nearSphere": shape})
    assert e.value.code == 2


# ---- big polygons: query regions only --------------------------------------------------------------

def test_stored_big_polygon_never_matches_nor_indexes():
    big = {**square(-5, -5, 10), "crs": BIG_CRS}
    stored = {"loc": big}
    for region, op in ((parse_within({"$geometry": square(-20, -20, 40)}), "$geoWithin"),
                       (parse_intersects({"$geometry": point(0, 0)}), "$geoIntersects")):
        assert not region.match_value(big, op)
        assert region.match_value(square(-5, -5, 10), op)
    with pytest.raises(MongoError) as e:
        sphere_keys(big, stored)
    assert e.value.code == 16755 and "strict winding order" in e.value.message


# ---- a hole may touch its shell at one vertex, not two (S2's IsNormalized, as mongod checks it) ------

SHELL = [[0, 0], [0, 1], [1, 1], [1, 0], [0, 0]]


@pytest.mark.parametrize("hole,ok", [
    ([[0, 0], [0.1, 0.9], [1, 1], [0.9, 0.1], [0, 0]], False),  # touches at (0, 0) and (1, 1)
    ([[0, 0], [0.5, 0.1], [0.2, 0.5], [0, 0]], True),  # touches at (0, 0) only
    ([[0.2, 0.2], [0.2, 0.8], [0.8, 0.8], [0.8, 0.2], [0.2, 0.2]], True),  # touches nothing
])
def test_hole_sharing_vertices_with_its_shell(hole, ok):
    poly = {"type": "Polygon", "coordinates": [SHELL, hole]}
    if ok:
        parse_stored(poly)
        return
    with pytest.raises(GeoError) as e:
        parse_stored(poly)
    assert e.value.message.startswith("Loop 1 shares more than one vertex with its parent loop 0: ")
    with pytest.raises(GeoError):  # each polygon of a MultiPolygon is checked alike
        parse_stored({"type": "MultiPolygon", "coordinates": [[SHELL, hole]]})


# ---- 2dsphere keys -----------------------------------------------------------------------------

@pytest.mark.parametrize("value", [None, [], {}])
def test_null_and_empty_values_have_no_keys(value):
    assert sphere_keys(value, {"geo": value}) == []


@pytest.mark.parametrize("value", [[point(0, 0), point(1, 1)], [[0, 0], [1, 1]], "here", 5])
def test_trailing_arrays_of_geometries_and_scalars_refuse_the_write(value):
    with pytest.raises(MongoError) as e:
        sphere_keys(value, {"geo": value})
    assert e.value.code == 16755 and "Can't extract geo keys" in e.value.message


@pytest.mark.parametrize("value", [[], {}])
def test_2d_empty_location_has_no_keys(value):
    assert Plane({}).keys(value, {"loc": value}) == []
    with pytest.raises(MongoError) as e:  # an empty point among several still refuses
        Plane({}).keys([[1, 2], value], {"loc": [[1, 2], value]})
    assert e.value.code == 13067


def test_near_geometry_form_under_the_geonear_alias():
    arg = {"$geometry": point(0, 0), "$maxDistance": 3}
    assert parse_near("$near", arg, {"$geoNear": arg}).max_distance == 3


def test_legacy_point_array_is_one_point():
    assert len(sphere_keys([1, 2], {})) == 1


# ---- $centerSphere holds a line or polygon only when it holds all of it ----------------------------------

def _angle(a, b) -> float:
    lng1, lat1, lng2, lat2 = map(math.radians, (*a, *b))
    h = math.sin((lat2 - lat1) / 2) ** 2 + math.cos(lat1) * math.cos(lat2) * math.sin((lng2 - lng1) / 2) ** 2
    return 2 * math.asin(min(1.0, math.sqrt(h)))


def _farthest_on_line(center, coords, samples: int = 400) -> float:
    """The largest angle from ``center`` to a point of the line (its edges sampled along the great circle)."""
    line = s2.S2Polyline()
    line.InitFromS2LatLngs([s2.S2LatLng.FromDegrees(lat, lng) for lng, lat in coords])
    far = 0.0
    for i in range(samples + 1):
        ll = s2.S2LatLng(line.Interpolate(i / samples))
        far = max(far, _angle(center, (ll.lng().degrees(), ll.lat().degrees())))
    return far


@settings(max_examples=80, deadline=None)
@given(lng=st.floats(-170, 170), lat=st.floats(-60, 60), radius=st.floats(0.05, 3.0),
       a=st.tuples(st.floats(-179, 179), st.floats(-80, 80)), b=st.tuples(st.floats(-179, 179), st.floats(-80, 80)))
def test_center_sphere_line_containment_matches_a_sampled_reference(lng, lat, radius, a, b):
    if _angle(a, b) < 1e-6 or _angle(a, b) > math.pi - 1e-3:
        return  # degenerate or nearly antipodal edges have no single great circle
    far = _farthest_on_line((lng, lat), [a, b])
    if abs(far - radius) < 1e-3:
        return  # too close to the boundary for the sampling reference
    region = parse_within({"$centerSphere": [[lng, lat], radius]})
    line = parse_stored({"type": "LineString", "coordinates": [list(a), list(b)]})
    assert region.contains(line) == (far < radius)


def test_center_sphere_polygon_holding_the_antipode_is_not_within():
    # a loop along latitude -10 around the south pole: every vertex and edge lies in a 2-radian cap
    # around the north pole, but the polygon is the southern cap (normalized: less than a
    # hemisphere), which holds the cap's antipode: not within
    ring = [[lng, -10] for lng in range(-180, 180, 30)]
    polygon = parse_stored({"type": "Polygon", "coordinates": [ring + ring[:1]]})
    assert not parse_within({"$centerSphere": [[0, 90], 2.0]}).contains(polygon)
    assert parse_within({"$centerSphere": [[0, -90], 1.5]}).contains(polygon)
    assert parse_within({"$centerSphere": [[0, 90], math.pi]}).contains(polygon)  # the whole sphere
