"""mongod runs a planar (2d) ``$near`` / ``$geoNear`` as a $within-annulus search sorted by distance
(GeoNear2DStage::nextInterval, db/exec/geo_near.cpp): a document is kept when one of its points lies
in the annulus [minDistance, maxDistance] by ``distanceCompare`` (geo/shapes.cpp, the rule of
``$within: {$center}``, exact along an axis: ``52 - (51.9999 + 0.0001)`` is 0) and its distance lies
within the interval bounds widened by the largest axis-aligned rounding error. So the points exactly
on the radius along an axis are found by $near, $geoNear and $center alike (jstests/core/
geo_axis_aligned.js). Tidemark compared the reported distance (``52 - 51.9999`` = 1.0000000000331966e-4)
with $maxDistance and dropped them: 3 documents where mongod returns 5."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

# (dx, dy) in units of the radius: on the circle along each axis and on the diagonals, and just
# inside / outside it (relative 1e-9: far above the rounding the axis rule absorbs)
_ON = [(-1, 0), (1, 0), (0, 1), (0, -1)]
_DIAGONAL = [(s * math.sqrt(0.5), t * math.sqrt(0.5)) for s in (-1, 1) for t in (-1, 1)]
_NEAR_EDGE = [(f * dx, f * dy) for dx, dy in _ON + _DIAGONAL for f in (1 - 1e-9, 1 + 1e-9)]
_CORNERS = [(-1, 1), (1, 1), (-1, -1), (1, -1)]


def _sets(coll, center, radius, min_distance=None):
    """The _ids found by $within $center, $near and $geoNear (with ``min_distance``: $near and $geoNear only)."""
    near = {"$near": center, "$maxDistance": radius}
    stage = {"near": center, "distanceField": "d", "maxDistance": radius}
    if min_distance is not None:
        near["$minDistance"] = min_distance
        stage["minDistance"] = min_distance
    within = {d["_id"] for d in coll.find({"loc": {"$within": {"$center": [center, radius]}}})}
    found = [d["_id"] for d in coll.find({"loc": near})]
    staged = [d["_id"] for d in coll.aggregate([{"$geoNear": stage}])]
    assert len(found) == len(set(found)) and len(staged) == len(set(staged))
    return within, set(found), set(staged)


@pytest.mark.commands("find", "aggregate", "createIndexes")
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(center=st.sampled_from([(5, 52), (6, 53), (7, 54), (8, 55), (9, 56), (0, 0), (-3.5, 0.25)]),
       radius=st.sampled_from([0.0001, 0.001, 0.01, 0.1, 1.0, 0.3]),
       scale=st.sampled_from([1, 10, 1000]), bits=st.integers(2, 26))
def test_the_nine_points_of_geo_axis_aligned(db, center, radius, scale, bits):
    """The jstest's layout: the centre and the four axis points on the circle are found by $center,
    $near and $geoNear (5), the four corners of the square are not; $box finds all nine."""
    cx, cy, r = center[0] * scale, center[1] * scale, radius * scale
    if cx - r == cx or cy - r == cy:
        return  # (the jstest skips circles below the coordinates' precision)
    db.c.drop()
    db.c.create_index([("loc", "2d")], min=-180 * scale, max=180 * scale, bits=bits)
    layout = [(0, 0)] + _ON + _CORNERS
    db.c.insert_many([{"_id": i, "loc": {"x": cx + dx * r, "y": cy + dy * r}} for i, (dx, dy) in enumerate(layout)])
    within, near, staged = _sets(db.c, [cx, cy], r)
    assert within == near == staged == {0, 1, 2, 3, 4}
    distances = {d["_id"]: d["d"] for d in db.c.aggregate([{"$geoNear": {"near": [cx, cy], "distanceField": "d",
                                                                             "maxDistance": r}}])}
    assert distances[0] == 0 and all(math.isclose(distances[i], r, rel_tol=1e-9) for i in range(1, 5))
    box = [[cx - r, cy - r], [cx + r, cy + r]]
    assert db.c.count_documents({"loc": {"$within": {"$box": box}}}) == 9


@pytest.mark.commands("find", "aggregate", "createIndexes")
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cx=st.floats(-170, 170, allow_subnormal=False), cy=st.floats(-170, 170, allow_subnormal=False),
       radius=st.floats(1e-6, 5), extra=st.lists(st.tuples(st.floats(-1.5, 1.5), st.floats(-1.5, 1.5)), max_size=8),
       use_min=st.booleans())
def test_near_keeps_what_center_keeps(db, cx, cy, radius, extra, use_min):
    """Points on, just inside and just outside the circle along each axis and diagonal, and random ones:
    $near and $geoNear with $maxDistance keep exactly $center's points; with a $minDistance, the points
    of the annulus, by the same comparison on both radii."""
    db.c.drop()
    db.c.create_index([("loc", "2d")])
    offsets = [(0, 0)] + _ON + _DIAGONAL + _NEAR_EDGE + extra
    points = [(cx + dx * radius, cy + dy * radius) for dx, dy in offsets]
    db.c.insert_many([{"_id": i, "loc": list(p)} for i, p in enumerate(points)])
    within, near, staged = _sets(db.c, [cx, cy], radius)
    assert near == within and staged == within
    assert 0 in within
    if use_min:
        inner = radius / 2
        ring = {d["_id"] for d in db.c.find({"loc": {"$within": {"$center": [[cx, cy], inner]}}})}
        # on the inner circle counts as in the annulus ($center keeps it too): add those back
        on_inner = {i for i in ring if _distance_compare(points[i], (cx, cy), inner) == 0}
        _, near, staged = _sets(db.c, [cx, cy], radius, inner)
        assert near == staged == (within - ring) | on_inner


def _distance_compare(p, c, r):
    a, b = c[0] - p[0], c[1] - p[1]
    if a == 0:
        return c[1] - (p[1] + r) if c[1] > p[1] else p[1] - (c[1] + r)
    if b == 0:
        return c[0] - (p[0] + r) if c[0] > p[0] else p[0] - (c[0] + r)
    return math.sqrt(a * a + b * b) - r


@pytest.mark.commands("find")
def test_the_reported_defect(db):
    db.c.create_index([("loc", "2d")])
    db.c.insert_many([{"loc": p} for p in ([5, 52], [4.9999, 52], [5.0001, 52], [5, 52.0001], [5, 51.9999])])
    assert len(list(db.c.find({"loc": {"$near": [5, 52], "$maxDistance": 0.0001}}))) == 5
    assert len(list(db.c.find({"loc": {"$within": {"$center": [[5, 52], 0.0001]}}}))) == 5


@pytest.mark.commands("find")
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lng=st.floats(-179, 179), lat=st.floats(-80, 80), dlng=st.floats(-1, 1), dlat=st.floats(-1, 1),
       ulps=st.integers(-2, 2))
def test_near_sphere_compares_metres_like_mongod(db, lng, lat, dlng, dlat, ulps):
    """A legacy $nearSphere's distances and bounds are radians, but mongod's near stage compares them
    in metres (both times the earth's radius): a point a few ulps of a radian past $maxDistance is
    kept when the two come to the same metres."""
    import s2geometry as s2

    db.c.drop()
    db.c.create_index([("loc", "2d")])
    point = [lng + dlng, max(-89.0, min(89.0, lat + dlat))]
    db.c.insert_one({"_id": 1, "loc": point})
    a = s2.S2LatLng.FromDegrees(lat, lng).ToPoint()
    b = s2.S2LatLng.FromDegrees(point[1], point[0]).ToPoint()
    d = s2.S1Angle(a, b).radians()
    bound = d
    for _ in range(abs(ulps)):
        bound = math.nextafter(bound, math.inf if ulps > 0 else -math.inf)
    bound = max(bound, 0.0)  # (a $maxDistance is never negative)
    radius = 6378.1 * 1000
    expected = 1 if d * radius <= bound * radius else 0
    found = len(list(db.c.find({"loc": {"$nearSphere": [lng, lat], "$maxDistance": bound}})))
    assert found == expected
