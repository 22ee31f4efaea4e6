"""Geo behaviours ported from mongod 7.0's jstests, checked against a running server:

- ``$center`` on legacy points uses mongod's ``distanceCompare`` (src/mongo/db/geo/shapes.cpp):
  points on the centre's vertical or horizontal line at exactly the radius are inside, with or
  without a 2d index (jstests/core/geo_circle4.js);
- a tailable find with a ``$near`` / ``$geoNear`` predicate is refused when the find is parsed:
  2 "Tailable cursors and geo $near cannot be used together" (parsed_find_command.cpp;
  jstests/core/geo_near_tailable.js);
- a ``$near`` / ``$nearSphere`` / ``$geoNear`` whose point lies off a 2d index's ``[min, max]`` plane
  fails the read with 16433 "point not in interval of [ min, max ]" (geo/hash.cpp
  ``GeoHashConverter::hash``), bounds included; ``$geoWithin`` regions past the plane do not
  (jstests/core/geo_borders.js).
"""

from __future__ import annotations

import math

import pytest
from bson import SON
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

from tidemark.protocol.errors import MongoError
from tidemark.query.match_parse import parse_filter
from tidemark.query.plan_special import check_find_specials

pytestmark = pytest.mark.commands("find", "aggregate", "count")


def _count(db, coll: str, query: dict) -> int:
    return db.command(SON([("count", coll), ("query", query)]))["n"]


def _error(db, command: SON) -> tuple[int, str]:
    with pytest.raises(OperationFailure) as info:
        db.command(command)
    return info.value.code, str(info.value.details.get("errmsg"))


# --------------------------------------------------------------------------------------------------
# $center: mongod's distanceCompare
# --------------------------------------------------------------------------------------------------

CIRCLE4_POINTS = [(4.9999, 52), (5, 52), (5.0001, 52), (5, 52.0001), (5, 51.9999)]


@pytest.mark.parametrize("operator", ["$within", "$geoWithin"])
@pytest.mark.parametrize("index", [False, True])
def test_center_holds_points_at_the_radius_along_an_axis(db, index, operator):
    """geo_circle4.js (SERVER-848): all five points are within 0.0001 of (5, 52), though
    52.0001 - 52 > 0.0001 and 52 - 51.9999 > 0.0001 in doubles."""
    for i, (x, y) in enumerate(CIRCLE4_POINTS):
        db.server848.insert_one({"_id": i + 1, "loc": {"x": x, "y": y}})
    if index:
        db.server848.create_index([("loc", "2d")])
    query = {"loc": {operator: {"$center": [[5, 52], 0.0001]}}}
    assert _count(db, "server848", query) == 5
    assert sorted(d["_id"] for d in db.server848.find(query, {"_id": 1})) == [1, 2, 3, 4, 5]


def test_center_off_axis_points_use_the_euclidean_distance(db):
    """Off the axes the distance is sqrt(a*a + b*b): (3, 4) is on the circle of radius 5 around the
    origin, a hair past it is out."""
    db.c.insert_many([{"_id": 1, "p": [3, 4]}, {"_id": 2, "p": [3, 4.000001]}, {"_id": 3, "p": [-3, -4]}])
    got = sorted(d["_id"] for d in db.c.find({"p": {"$geoWithin": {"$center": [[0, 0], 5]}}}))
    assert got == [1, 3]


def test_center_with_zero_radius_holds_its_centre(db):
    """distanceCompare of the centre itself is 0 - 0 = 0, which is within."""
    db.c.insert_many([{"_id": 1, "p": [2, 2]}, {"_id": 2, "p": [2, 2.0000001]}])
    assert [d["_id"] for d in db.c.find({"p": {"$geoWithin": {"$center": [[2, 2], 0]}}})] == [1]


def test_geo_circle5_duplicate_points_with_and_without_index(db):
    """geo_circle5.js: the four copies of one point are inside both circles."""
    c = db.server1238
    c.insert_many([{"loc": [5000000, 900000], "id": 1}, {"loc": [5000000, 900000], "id": 2}])
    c.create_index([("loc", "2d")], min=-21000000, max=21000000)
    c.insert_many([{"loc": [5000000, 900000], "id": 3}, {"loc": [5000000, 900000], "id": 4}])
    c1 = _count(db, c.name, {"loc": {"$within": {"$center": [[5000000, 900000], 1.0]}}})
    c2 = _count(db, c.name, {"loc": {"$within": {"$center": [[5000001, 900000], 5.0]}}})
    assert c1 == 4 and c2 == 4


def _model_inside(center, point, radius):
    """Whether mongod's $center holds ``point`` (src/mongo/db/geo/shapes.cpp, distanceCompare <= 0, for
    64-bit builds): on the centre's vertical or horizontal line the nearer coordinate plus the radius
    must reach the farther one, in doubles; elsewhere the Euclidean distance (sqrt of the squared sum,
    not hypot) must not exceed the radius."""
    (cx, cy), (px, py) = center, point
    if px == cx:
        return max(py, cy) <= min(py, cy) + radius
    if py == cy:
        return max(px, cx) <= min(px, cx) + radius
    return math.sqrt((px - cx) ** 2 + (py - cy) ** 2) <= radius


_COORD = st.integers(-9000, 9000).map(lambda n: n / 100)  # decimals: sums and differences round
_RADIUS = st.sampled_from([0, 0.0001, 0.001, 0.1, 0.3, 1, 2.5, 7.77])


@st.composite
def _circle_cases(draw):
    """A circle and points around it: most on its axes at exactly the radius (the doubles that
    round either way), some a few steps off, some anywhere near."""
    cx, cy, r = draw(_COORD), draw(_COORD), draw(_RADIUS)
    points = []
    for _ in range(draw(st.integers(1, 12))):
        kind = draw(st.sampled_from(["axis", "axis", "nudged", "free"]))
        if kind == "free":
            points.append((cx + draw(st.floats(-2 * r - 0.01, 2 * r + 0.01)),
                           cy + draw(st.floats(-2 * r - 0.01, 2 * r + 0.01))))
            continue
        sign = draw(st.sampled_from([1, -1]))
        on_x = draw(st.booleans())  # on the centre's horizontal line, else its vertical one
        start = cx if on_x else cy
        along = start + sign * r
        if kind == "nudged":  # a few doubles further out or in
            for _ in range(draw(st.integers(1, 3))):
                along = math.nextafter(along, math.inf * sign * draw(st.sampled_from([1, -1])))
        points.append((along, cy) if on_x else (cx, along))
    return (cx, cy), r, points


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=_circle_cases())
def test_center_matches_mongods_distance_compare(db, case):
    """Random circles and points on and about their axes: ``$geoWithin $center`` holds exactly the
    points mongod's rule holds, and a 2d index changes nothing."""
    (cx, cy), r, points = case
    db.pts.drop()
    db.pts.insert_many([{"_id": i, "loc": [x, y]} for i, (x, y) in enumerate(points)])
    expected = sorted(i for i, p in enumerate(points) if _model_inside((cx, cy), p, r))
    query = {"loc": {"$geoWithin": {"$center": [[cx, cy], r]}}}
    plain = sorted(d["_id"] for d in db.pts.find(query))
    db.pts.create_index([("loc", "2d")], min=-200, max=200)
    indexed = sorted(d["_id"] for d in db.pts.find(query))
    hinted = sorted(d["_id"] for d in db.pts.find(query).hint([("loc", "2d")]))
    assert plain == expected
    assert indexed == expected
    assert hinted == expected


def test_near_distance_along_an_axis_is_exact(db):
    """A 2d $geoNear reports mongod's distance(): |dy| on a vertical line (52.0001 - 52, not the
    Euclidean rounding of it), and $maxDistance compares that value."""
    db.p.insert_one({"_id": 1, "loc": [5, 52.0001]})
    db.p.create_index([("loc", "2d")])
    out = list(db.p.aggregate([{"$geoNear": {"near": [5, 52], "distanceField": "d"}}]))
    assert out[0]["d"] == 52.0001 - 52
    assert len(list(db.p.find({"loc": {"$near": [5, 52], "$maxDistance": 52.0001 - 52}}))) == 1


# --------------------------------------------------------------------------------------------------
# tailable + $near
# --------------------------------------------------------------------------------------------------

_TAILABLE_NEAR = "Tailable cursors and geo $near cannot be used together"


def test_find_specials_refuse_a_tailable_near():
    """parsed_find_command's check, on the parsed filter (the find's parse calls it)."""
    for filter in ({"a": {"$geoNear": [1, 2]}}, {"a": {"$near": [1, 2]}}, {"b": 1, "a": {"$nearSphere": [1, 2]}},
                   {"$and": [{"a": {"$near": {"$geometry": {"type": "Point", "coordinates": [1, 2]}}}}]}):
        with pytest.raises(MongoError) as info:
            check_find_specials(parse_filter(filter), tailable=True)
        assert (info.value.code, info.value.message) == (2, _TAILABLE_NEAR)
        check_find_specials(parse_filter(filter), tailable=False)  # not tailable: nothing to refuse here
    check_find_specials(parse_filter({"a": {"$geoWithin": {"$center": [[0, 0], 1]}}}), tailable=True)
    check_find_specials(None, tailable=True)


def test_find_specials_follow_mongods_order():
    """validateAndGetAvailableMetadata's order: a $natural sort with $near is refused before the
    tailable check; a $text with a tailable cursor has its own message."""
    near = parse_filter({"a": {"$near": [1, 2]}})
    with pytest.raises(MongoError) as info:
        check_find_specials(near, sort={"$natural": 1}, tailable=True)
    assert info.value.message == "geoNear expression not allowed with $natural sort order"
    with pytest.raises(MongoError) as info:
        check_find_specials(near, hint={"$natural": 1}, tailable=True)
    assert info.value.message == "geoNear expression not allowed with $natural hint"
    text = parse_filter({"$text": {"$search": "x"}})
    with pytest.raises(MongoError) as info:
        check_find_specials(text, tailable=True)
    assert (info.value.code, info.value.message) == (2, "text and tailable cursor not allowed in same query")


@pytest.mark.parametrize("capped", [False, True])
def test_tailable_find_with_near_is_refused(db, capped):
    """geo_near_tailable.js: 2 on a capped collection and on a regular one alike."""
    if capped:
        db.create_collection("geo_near_tailable", capped=True, size=10000)
        db.geo_near_tailable.insert_one({"a": [1, 2]})
    else:
        db.create_collection("geo_near_tailable")
    code, message = _error(db, SON([("find", "geo_near_tailable"), ("filter", {"a": {"$geoNear": [1, 2]}}),
                                    ("tailable", True)]))
    assert (code, message) == (2, _TAILABLE_NEAR)


# --------------------------------------------------------------------------------------------------
# a near point off a 2d index's plane
# --------------------------------------------------------------------------------------------------

EPS = 0.0001
_OFF_PLANE = "point not in interval of [ -1.0001, 1.0001 ] :: caused by :: [ 1.0002, 1.0002 ]"


@pytest.fixture
def borders(db):
    """geo_borders.js: a 3 x 3 grid on a 2d index over [-1 - eps, 1 + eps]."""
    t = db.borders
    t.insert_many([{"loc": {"x": x, "y": y}} for x in (-1, 0, 1) for y in (-1, 0, 1)])
    t.create_index([("loc", "2d")], max=1 + EPS, min=-1 - EPS)
    return t


def test_geo_borders_port(db, borders):
    """geo_borders.js's assertions on points, boxes and circles at the plane's edges."""
    t, n = borders, 9
    with pytest.raises(OperationFailure):  # the grid's corners are off a smaller plane (13027)
        t.create_index([("loc", "2d")], max=1 - EPS / 2, min=-1 + EPS / 2, name="small")

    def box(a, b):
        return _count(db, "borders", {"loc": {"$within": {"$box": [a, b]}}})

    assert box([-1 - 2 * EPS, -1 - 2 * EPS], [1 + 2 * EPS, 1 + 2 * EPS]) == n  # a box past the plane
    assert box([-1 - 2 * EPS, -1 - 0.5 * EPS], [1 - EPS, 1 - EPS]) == n - 5
    assert box([-1 - EPS / 2, -1 - EPS / 2], [1 + EPS / 2, 1 + EPS / 2]) == n
    assert box([1 + EPS / 2, 1 + EPS / 2], [-1 - EPS / 2, -1 - EPS / 2]) == n
    assert box([1 + EPS / 2, -1 - EPS / 2], [-1 - EPS / 2, 1 + EPS / 2]) == n
    off_center, on_bounds = [1, 1], [1 + EPS, 1 + EPS]
    on_bounds_neg = [-on_bounds[0], -on_bounds[1]]

    def circle(c, r):
        return _count(db, "borders", {"loc": {"$within": {"$center": [c, r]}}})

    assert circle([0, 0], 1 + EPS) > 0
    assert circle([0, 0], 1 + 2 * EPS) > 0
    assert circle(off_center, 1 + 2 * EPS) > 0
    assert circle([1 + 2 * EPS, 1 + 2 * EPS], 1) > 0  # a circle centred off the plane: no error
    assert t.find_one({"loc": {"$within": {"$center": [off_center, 0.5]}}})["loc"]["y"] == 1
    assert t.find_one({"loc": {"$within": {"$center": [on_bounds_neg, math.sqrt(2 * EPS * EPS) + 0.5]}}})["loc"]["y"] == -1
    assert next(t.find({"loc": {"$near": off_center}}))["loc"]["y"] == 1
    assert next(t.find({"loc": {"$near": on_bounds_neg}}))["loc"]["y"] == -1
    assert _count(db, "borders", {"loc": {"$near": off_center, "$maxDistance": 1.9}}) == 4
    assert list(t.aggregate([{"$geoNear": {"near": off_center, "distanceField": "d"}}]))[0]["loc"]["y"] == 1
    assert list(t.aggregate([{"$geoNear": {"near": on_bounds_neg, "distanceField": "d"}}]))[0]["loc"]["y"] == -1
    # a near point exactly on the plane's bounds is on it
    assert len(list(t.aggregate([{"$geoNear": {"near": on_bounds, "distanceField": "d"}}]))) == n
    assert len(list(t.aggregate([{"$geoNear": {"near": off_center, "maxDistance": 1.5, "distanceField": "d"}}]))) == 4


@pytest.mark.parametrize("command", [
    SON([("aggregate", "borders"), ("cursor", {}),
         ("pipeline", [{"$geoNear": {"near": [1.0002, 1.0002], "distanceField": "d"}}])]),
    SON([("aggregate", "borders"), ("cursor", {}),
         ("pipeline", [{"$geoNear": {"near": [1.0002, 1.0002], "distanceField": "d", "spherical": True}}])]),
    SON([("find", "borders"), ("filter", {"loc": {"$near": [1.0002, 1.0002]}})]),
    SON([("find", "borders"), ("filter", {"loc": {"$geoNear": [1.0002, 1.0002]}})]),
    SON([("find", "borders"), ("filter", {"loc": {"$nearSphere": [1.0002, 1.0002]}})]),
    SON([("count", "borders"), ("query", {"loc": {"$near": [1.0002, 1.0002], "$maxDistance": 5}})]),
], ids=["geoNear", "geoNear-spherical", "near", "geoNear-operator", "nearSphere", "count"])
def test_near_point_off_the_2d_plane_fails_16433(db, borders, command):
    """geo_borders.js: a near point past [min, max] on either axis fails the read (mongod hashes it
    on the index's plane; the error's text may carry mongod's command context before it)."""
    code, message = _error(db, command)
    assert code == 16433
    assert message.endswith(_OFF_PLANE)


@pytest.mark.parametrize("point, shown", [([0, 1.0002], "[ 0.0, 1.0002 ]"), ([-1.0002, 0], "[ -1.0002, 0.0 ]")])
def test_one_coordinate_off_the_plane_is_enough(db, borders, point, shown):
    code, message = _error(db, SON([("find", "borders"), ("filter", {"loc": {"$near": point}})]))
    assert code == 16433
    assert message.endswith(f"point not in interval of [ -1.0001, 1.0001 ] :: caused by :: {shown}")


def test_default_plane_is_minus_180_to_180(db):
    """Without min/max the plane is [-180, 180]: 180 is on it, 180.5 is not."""
    db.g.insert_one({"loc": [0, 0]})
    db.g.create_index([("loc", "2d")])
    assert len(list(db.g.find({"loc": {"$near": [180, -180]}}))) == 1
    code, message = _error(db, SON([("find", "g"), ("filter", {"loc": {"$near": [180.5, 0]}})]))
    assert code == 16433
    assert message.endswith("point not in interval of [ -180, 180 ] :: caused by :: [ 180.5, 0.0 ]")


def test_off_plane_near_on_an_empty_collection_fails_too(db):
    """mongod hashes the point before it reads any entry: an empty collection with the index fails as well."""
    db.create_collection("e")
    db.e.create_index([("loc", "2d")], min=0, max=10)
    code, _ = _error(db, SON([("find", "e"), ("filter", {"loc": {"$near": [11, 5]}})]))
    assert code == 16433


def test_within_past_the_plane_is_no_error(db, borders):
    """$geoWithin regions are covered on the plane, never hashed: a region off it finds nothing."""
    assert _count(db, "borders", {"loc": {"$geoWithin": {"$box": [[5, 5], [6, 6]]}}}) == 0
    assert _count(db, "borders", {"loc": {"$geoWithin": {"$center": [[5, 5], 1]}}}) == 0
    assert _count(db, "borders", {"loc": {"$geoWithin": {"$polygon": [[5, 5], [6, 5], [6, 6]]}}}) == 0


@pytest.mark.commands("explain")
def test_off_plane_near_explained_with_execution_reports_the_error(db, borders):
    """explain runs the read for executionStats: the 16433 is the execution's, not the command's."""
    plan = db.command("explain", {"find": "borders", "filter": {"loc": {"$near": [1.0002, 1.0002]}}},
                      verbosity="queryPlanner")
    assert plan["queryPlanner"]["winningPlan"]["inputStage"]["stage"] == "GEO_NEAR_2D"
    stats = db.command("explain", {"find": "borders", "filter": {"loc": {"$near": [1.0002, 1.0002]}}},
                       verbosity="executionStats")["executionStats"]
    assert stats["executionSuccess"] is False
    assert stats["errorCode"] == 16433
    assert stats["errorMessage"].endswith(_OFF_PLANE)


# -- $uniqueDocs anywhere in a legacy $within (geo_uniqueDocs.js) ---------------------------------------

SHAPES = {"$center": [[5, 5], 1], "$box": [[4, 4], [6, 6]], "$polygon": [[4, 4], [6, 4], [6, 6], [4, 6]],
          "$centerSphere": [[5, 5], 0.01]}


@pytest.mark.parametrize("indexed", [False, True])
@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("at", [0, 1])
def test_unique_docs_is_skipped_wherever_it_is(db, shape, at, indexed):
    """mongod's GeoExpression::parseQuery skips the deprecated ``$uniqueDocs`` wherever it is among the
    fields; Tidemark read only the first field, so ``{$uniqueDocs: false, $center: ...}`` was 2
    "unknown geo specifier"."""
    db.c.insert_many([{"loc": [5, 5]}, {"loc": [50, 50]}])
    if indexed:
        db.c.create_index([("loc", "2d")])
    fields = [(shape, SHAPES[shape])]
    fields.insert(at, ("$uniqueDocs", at == 0))
    for op in ("$within", "$geoWithin"):
        assert len(list(db.c.find({"loc": {op: SON(fields)}}))) == 1
    with pytest.raises(OperationFailure) as info:
        list(db.c.find({"loc": {"$within": {"$uniqueDocs": True}}}))
    assert info.value.code == 2 and "doesn't have any geometry" in info.value.details["errmsg"]
