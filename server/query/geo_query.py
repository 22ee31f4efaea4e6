"""Geospatial query operators: ``$geoWithin`` / ``$within``, ``$geoIntersects``, ``$near``,
``$nearSphere`` — their operands (``Region``, ``NearQuery``), predicates and distances (pure).

Semantics follow mongod's GeometryContainer:

- planar regions (``$box``, ``$polygon``, ``$center``) contain points: legacy ones, and GeoJSON
  Points read as (lng, lat) (mongod projects a SPHERE point to FLAT; no other GeoJSON shape has a
  planar form); boundaries count as inside;
- a spherical polygon holds a point on its boundary too: mongod tests the point's leaf cell
  (``MayIntersect``) when S2's semi-open ``Contains`` says no, for ``$geoWithin`` and
  ``$geoIntersects`` alike;
- spherical regions (``$geometry`` Polygon/MultiPolygon, ``$centerSphere``) contain a geometry when
  they contain all of it: a polygon clips a line to itself, a cap holds every vertex and every
  edge (a long edge between two inside vertices may bulge out of a large cap); a legacy
  point takes part when it is a valid longitude/latitude;
- ``$geoIntersects`` takes any GeoJSON ``$geometry`` or a legacy point; multi-geometries intersect when any part does;
- distances: spherical ones are great-circle angles on a sphere (metres = radians x 6378.1 km),
  planar ones Euclidean (mongod's ``distance``: exact along an axis); to a line or polygon it is the
  distance to its nearest point (0 inside);
- ``$center`` holds a point when mongod's ``distanceCompare`` says so: along an axis it adds the
  radius to the nearer coordinate instead of measuring (``(5, 52.0001)`` is within 0.0001 of
  ``(5, 52)``, though ``52.0001 - 52 > 0.0001`` in doubles).

Planar geometry uses shapely; spherical geometry uses S2 (``geo_parse``).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, cast

import s2geometry as s2
import shapely

from tidemark.query.geo_parse import (
    EARTH_RADIUS_M,
    GeoError,
    Shape,
    flat_point,
    geojson_type,
    is_legacy_point_like,
    legacy_point,
    parse_geojson,
    sphere_point,
    stored_pairs,
    stored_shapes,
)
from tidemark.query.value_repr import bson_repr
from tidemark.query.values import is_number, to_float

__all__ = ["Region", "NearQuery", "parse_within", "parse_intersects", "parse_near", "NEAR_OPS", "distance_compare",
           "planar_distance"]

NEAR_OPS = ("$near", "$nearSphere")


@dataclass(eq=False)
class Region:
    """A query region. ``kind``: "box" | "polygon" | "center" (planar), "cap" | "sphere" (spherical),
    "geometry" ($geoIntersects operand)."""

    kind: str
    spec: Any  # the operand as given (explain / messages)
    flat: Any = None  # shapely geometry (box/polygon) or ((x, y), r) for center
    cap: Any = None  # s2.S2Cap
    cap_radians: float = 0.0  # the cap's radius ($centerSphere), at most pi
    shape: Shape | None = None  # spherical polygons ($geometry) or the $geoIntersects geometry

    @property
    def planar(self) -> bool:
        return self.kind in ("box", "polygon", "center")

    # ---- $geoWithin -------------------------------------------------------------------------
    def contains(self, shape: Shape) -> bool:
        if self.planar:
            # a GeoJSON Point projects to the plane as its (lng, lat); lines and polygons do not
            xy = shape.flat if shape.flat is not None else shape.given
            if xy is None:
                return False
            x, y = xy
            if self.kind == "center":
                center, r = self.flat
                return distance_compare(center, (x, y), r) <= 0.0  # mongod's distanceWithin
            return bool(shapely.intersects_xy(self.flat, x, y))
        if not shape.spherical:
            return False
        if self.kind == "cap":
            return _cap_contains(self.cap, self.cap_radians, shape)
        polys = cast(Shape, self.shape).polygons  # a $geometry region has its shape
        return (all(any(_polygon_has_point(p, pt) for p in polys) for pt in shape.points)
                and all(any(_contains_line(p, line) for p in polys) for line in shape.lines)
                and all(any(p.Contains(poly) for p in polys) for poly in shape.polygons))

    # ---- $geoIntersects ---------------------------------------------------------------------
    def intersects(self, shape: Shape) -> bool:
        if not shape.spherical:
            return False
        q = cast(Shape, self.shape)  # a $geoIntersects query has its geometry
        for a in shape.points:
            cell = s2.S2Cell(s2.S2CellId(a))
            if any(s2.S2CellId(a).id() == s2.S2CellId(b).id() for b in q.points):
                return True
            if any(line.MayIntersect(cell) for line in q.lines) or any(p.MayIntersect(cell) for p in q.polygons):
                return True
        for line in shape.lines:
            if any(line.MayIntersect(s2.S2Cell(s2.S2CellId(b))) for b in q.points):
                return True
            if any(line.Intersects(other) for other in q.lines):
                return True
            if any(p.IntersectWithPolyline(line) for p in q.polygons):
                return True
        for poly in shape.polygons:
            if any(_polygon_has_point(poly, b) for b in q.points):
                return True
            if any(poly.IntersectWithPolyline(line) for line in q.lines):
                return True
            if any(poly.Intersects(p) for p in q.polygons):
                return True
        return False

    def match_value(self, value: Any, op: str) -> bool:
        """Does a stored field value (one geometry or an array of them) satisfy the operator?"""
        test = self.intersects if op == "$geoIntersects" else self.contains
        # a stored big polygon (strict-winding CRS) never matches (mongod's matchesGeoContainer)
        return any(test(shape) for shape in stored_shapes(value) if not shape.strict)


def distance_compare(p1: tuple[float, float], p2: tuple[float, float], radius: float) -> float:
    """The sign of (the planar distance from ``p1`` to ``p2``) - ``radius``: > 0 farther, 0 on, < 0 closer.
    mongod's ``distanceCompare`` (geo/shapes.cpp), which ``$center`` containment and near annuli use:
    two points on the same vertical (horizontal) line compare ``far.y - (near.y + radius)`` instead
    of the Euclidean distance, so a point at exactly ``center.y + radius`` is inside even where
    ``52.0 - 51.9999 > 0.0001`` in double arithmetic; otherwise ``sqrt(a*a + b*b) - radius`` (not the
    more exact ``hypot``: the same doubles as mongod's)."""
    a = p2[0] - p1[0]
    b = p2[1] - p1[1]
    if a == 0:
        return p2[1] - (p1[1] + radius) if p2[1] > p1[1] else p1[1] - (p2[1] + radius)
    if b == 0:
        return p2[0] - (p1[0] + radius) if p2[0] > p1[0] else p1[0] - (p2[0] + radius)
    return math.sqrt(a * a + b * b) - radius


def planar_distance(p1: tuple[float, float], p2: tuple[float, float]) -> float:
    """mongod's planar ``distance`` (geo/shapes.cpp), what a 2d ``$near`` / ``$geoNear`` reports and
    compares with ``$maxDistance``: ``|dy|`` on a vertical line, ``|dx|`` on a horizontal one (no
    rounding), else ``sqrt(a*a + b*b)``."""
    a = p1[0] - p2[0]
    b = p1[1] - p2[1]
    if a == 0:
        return abs(b)
    if b == 0:
        return abs(a)
    return math.sqrt(a * a + b * b)


def _polygon_has_point(polygon: s2.S2Polygon, point: s2.S2Point) -> bool:
    """mongod's containsPoint: S2's Contains is semi-open (a vertex or an edge point may be out), so
    a miss is re-checked against the point's leaf cell, which counts boundaries as inside."""
    return bool(polygon.Contains(point)) or bool(polygon.MayIntersect(s2.S2Cell(s2.S2CellId(point))))


def _cap_contains(cap: s2.S2Cap, radians: float, shape: Shape) -> bool:
    """A ``$centerSphere`` cap contains a shape when it holds all of it, not just its vertices: every
    vertex inside, and no edge bulging out. An edge leaves a cap of radius r around c exactly when
    it comes closer than pi - r to the antipode -c; a polygon whose edges stay inside is inside
    unless its interior is the other side (it holds -c)."""
    if radians >= math.pi:
        return True  # the whole sphere
    center = s2.S2LatLng(cap.center())  # the bindings have no point negation: go by lat/lng
    anti = s2.S2LatLng.FromRadians(-center.lat().radians(), center.lng().radians() + math.pi).Normalized().ToPoint()
    reach = math.pi - radians

    def edges_inside(vertices: list) -> bool:
        if not all(cap.Contains(v) for v in vertices):
            return False
        if len(vertices) < 2:
            return True
        line = s2.S2Polyline()
        line.InitFromS2Points(vertices)
        nearest, _ = line.Project(anti)
        return bool(s2.S1Angle(anti, nearest).radians() >= reach)

    return (all(cap.Contains(p) for p in shape.points)
            and all(edges_inside([line.vertex(i) for i in range(line.num_vertices())]) for line in shape.lines)
            and all(not poly.Contains(anti)
                    and all(edges_inside(_closed_ring(poly.loop(k))) for k in range(poly.num_loops()))
                    for poly in shape.polygons))


def _closed_ring(loop: s2.S2Loop) -> list:
    vertices = [loop.vertex(i) for i in range(loop.num_vertices())]
    return vertices + vertices[:1]


def _contains_line(polygon: s2.S2Polygon, line: s2.S2Polyline) -> bool:
    """A polygon contains a line when clipping the line to the polygon leaves it whole (mongod)."""
    clipped = polygon.IntersectWithPolyline(line)
    return len(clipped) == 1 and clipped[0].ApproxEquals(line)


# --------------------------------------------------------------------------------------------------
# operands
# --------------------------------------------------------------------------------------------------


def _radius(value: Any) -> float:
    if not is_number(value) or not to_float(value) >= 0:
        raise GeoError("radius must be a non-negative number")
    return to_float(value)


def _circle(arg: Any) -> tuple[tuple[float, float], float]:
    items = arg if isinstance(arg, list) else list(arg.values()) if isinstance(arg, dict) else None
    if not items:
        raise GeoError("Point must be an array or object")
    center = flat_point(items[0])
    if len(items) < 2:
        raise GeoError("radius must be a non-negative number")
    radius = _radius(items[1])
    if len(items) > 2:
        raise GeoError("Only 2 fields allowed for circular region")
    return center, radius


def parse_within(arg: Any) -> Region:
    """The operand of ``$geoWithin`` / ``$within``: as mongod's GeoExpression::parseQuery, each field
    is a shape (the last one parsed is the region) but the deprecated ``$uniqueDocs``, wherever it is."""
    if not isinstance(arg, dict) or not arg:
        raise GeoError(f"geometry must be an object: {bson_repr(arg)}")
    region = None
    for name, value in arg.items():
        if name != "$uniqueDocs":
            region = _within_shape(arg, name, value)
    if region is None:
        raise GeoError("geo query doesn't have any geometry")
    return region


def _within_shape(arg: dict, name: str, value: Any) -> Region:
    if name == "$geometry":
        if not isinstance(value, dict):
            raise GeoError(f"$geometry must be an object: {bson_repr(value)}")
        if geojson_type(value) not in ("Polygon", "MultiPolygon"):
            raise GeoError(f"$geoWithin not supported with provided geometry: {bson_repr(arg)}")
        return Region("sphere", arg, shape=parse_geojson(value))
    if name == "$box":
        items = value if isinstance(value, list) else list(value.values()) if isinstance(value, dict) else []
        if len(items) < 2:
            raise GeoError("Point must be an array or object")
        (x1, y1), (x2, y2) = flat_point(items[0]), flat_point(items[1])
        return Region("box", arg, flat=shapely.box(min(x1, x2), min(y1, y2), max(x1, x2), max(y1, y2)))
    if name == "$polygon":
        items = value if isinstance(value, list) else list(value.values()) if isinstance(value, dict) else []
        points = [flat_point(p) for p in items]
        if len(points) < 3:
            raise GeoError("Polygon must have at least 3 points")
        return Region("polygon", arg, flat=shapely.Polygon(points))
    if name == "$center":
        return Region("center", arg, flat=_circle(value))
    if name == "$centerSphere":
        (lng, lat), radius = _circle(value)
        radius = min(radius, math.pi)
        return Region("cap", arg, cap=s2.S2Cap(sphere_point(lng, lat), s2.S1Angle.Radians(radius)),
                      cap_radians=radius)
    raise GeoError(f"unknown geo specifier: {name}: {bson_repr(value)}")


def parse_intersects(arg: Any) -> Region:
    """The operand of ``$geoIntersects``: a ``$geometry`` holding GeoJSON or a legacy point (which
    mongod upgrades to a spherical point when it is a valid longitude/latitude)."""
    if not isinstance(arg, dict) or "$geometry" not in arg:
        raise GeoError(f"$geoIntersects not supported with provided geometry: {bson_repr(arg)}")
    value = arg["$geometry"]
    if is_legacy_point_like(value):
        shape = legacy_point(value, extra_ok=False)
        if not shape.spherical:
            raise GeoError(f"$geoIntersects not supported with provided geometry: {bson_repr(arg)}")
        return Region("geometry", arg, shape=shape)
    if not isinstance(value, dict):
        raise GeoError(f"$geoIntersects not supported with provided geometry: {bson_repr(arg)}")
    return Region("geometry", arg, shape=parse_geojson(value))


# --------------------------------------------------------------------------------------------------
# $near / $nearSphere
# --------------------------------------------------------------------------------------------------


@dataclass(eq=False)
class NearQuery:
    """A parsed ``$near`` / ``$nearSphere``.

    ``spherical``: distances on the sphere; ``geojson``: the point was GeoJSON (distances, min and
    max in metres) — otherwise spherical distances are radians and planar ones coordinate units.
    ``point`` is the S2 point (spherical) and ``xy`` the (lng, lat) / (x, y) given."""

    op: str
    xy: tuple[float, float]
    spherical: bool
    geojson: bool
    min_distance: float = 0.0
    max_distance: float = math.inf
    point: Any = None

    def distance(self, shape: Shape) -> float | None:
        """Distance in the query's units, or None when the shape cannot be measured this way."""
        if not self.spherical:
            if shape.flat is None:
                return None
            return planar_distance(self.xy, shape.flat)
        if not shape.spherical:
            return None
        radians = min(_angle_to(self.point, shape))
        return radians * EARTH_RADIUS_M if self.geojson else radians

    def nearest(self, value: Any) -> tuple[float, Any] | None:
        """(smallest distance, the raw location it was measured to) over a field value's geometries."""
        best: tuple[float, Any] | None = None
        for raw, shape in stored_pairs(value):
            d = self.distance(shape)
            if d is not None and (best is None or d < best[0]):
                best = (d, raw)
        return best

    def kept(self, values: Iterable[Any]) -> tuple[float, Any] | None:
        """(distance, location) of the nearest geometry among a document's field ``values`` when the
        query keeps the document, else None: the one rule of a near search and of its re-applied filter.

        Spherical: the distance within [min, max], compared in metres as mongod's near stages do
        (geoNearDistanceBounds: a legacy query's radians times the earth's radius on both sides, the
        bounds capped at half its circumference). Planar, as mongod's GeoNear2DStage: a $near is a
        $within-annulus search sorted by distance, so some point must lie in the annulus [min, max]
        by ``distance_compare`` (the rule of ``$center``: exact along an axis, where the reported
        distance may pass ``$maxDistance`` by an ulp), and the nearest distance must lie within
        [min - eps, max + eps], the interval bounds mongod widens by the largest axis-aligned
        rounding error ``eps`` (DBL_EPSILON x (max(|x|, |y|) of the centre + the outer radius))."""
        best: tuple[float, Any] | None = None
        inside = self.spherical
        lo, hi = self.min_distance, self.max_distance
        for value in values:
            for raw, shape in stored_pairs(value):
                d = self.distance(shape)
                if d is None:
                    continue
                if best is None or d < best[0]:
                    best = (d, raw)
                if not inside:
                    flat = cast(tuple[float, float], shape.flat)  # (measured: a planar point)
                    inside = (distance_compare(flat, self.xy, lo) >= 0
                              and distance_compare(flat, self.xy, hi) <= 0)
        if best is None or not inside:
            return None
        d = best[0]
        if self.spherical:
            if not self.geojson:
                d, lo, hi = d * EARTH_RADIUS_M, lo * EARTH_RADIUS_M, hi * EARTH_RADIUS_M
            return best if min(lo, _HALF_EARTH_M) <= d <= min(hi, _HALF_EARTH_M) else None
        eps = sys.float_info.epsilon * (max(abs(self.xy[0]), abs(self.xy[1])) + hi)
        if lo > 0:
            lo -= eps
        if hi > 0:
            hi += eps
        return best if lo <= d <= hi else None

    @property
    def max_radians(self) -> float:
        """``max_distance`` as an angle (spherical queries), capped at pi."""
        if self.max_distance == math.inf:
            return math.pi
        r = self.max_distance / EARTH_RADIUS_M if self.geojson else self.max_distance
        return min(r, math.pi)


_HALF_EARTH_M = 2 * math.pi * EARTH_RADIUS_M / 2  # mongod's kMaxEarthDistanceInMeters


def _angle_to(point: Any, shape: Shape) -> list[float]:
    out = [s2.S1Angle(point, p).radians() for p in shape.points]
    for line in shape.lines:
        nearest, _ = line.Project(point)
        out.append(s2.S1Angle(point, nearest).radians())
    out += [p.GetDistance(point).radians() for p in shape.polygons]
    return out


def _distance_arg(value: Any, name: str) -> float:
    if not is_number(value):
        raise GeoError(f"{name} must be a number")
    d = to_float(value)
    if math.isnan(d) or d < 0:
        raise GeoError(f"{name} must be non-negative")
    return d


def parse_near(op: str, arg: Any, siblings: Mapping[str, Any]) -> NearQuery:
    """``{$near: <point or {$geometry, $maxDistance, $minDistance}>, $maxDistance?, $minDistance?}``."""
    sphere = op == "$nearSphere"
    outer_max, outer_min = siblings.get("$maxDistance"), siblings.get("$minDistance")
    if isinstance(arg, dict) and "$geometry" in arg:
        for key, value in siblings.items():
            if key not in (op, "$geoNear"):  # the $geometry form takes its distances inside, nothing beside it
                raise GeoError("geo near accepts just one argument when querying for a GeoJSON point. Extra "
                               f"field found: {key}: {bson_repr(value)}")
        geometry = arg["$geometry"]
        if not isinstance(geometry, dict) or geojson_type(geometry) != "Point":
            raise GeoError(f"invalid point in geo near query $geometry argument: {bson_repr(arg)}")
        shape = parse_geojson(geometry)
        query = NearQuery(op, cast("tuple[float, float]", shape.lnglat), True, True, point=shape.points[0])
        inner_max, inner_min = arg.get("$maxDistance"), arg.get("$minDistance")
        for key in arg:
            if key not in ("$geometry", "$maxDistance", "$minDistance"):
                raise GeoError(f"invalid argument in geo near query: {key}")
        max_d, min_d = inner_max, inner_min
    elif isinstance(arg, (list, dict)):
        if isinstance(arg, dict) and (geojson_type(arg) == "Point" or "coordinates" in arg):
            shape = parse_geojson(arg)  # {$near: {type: "Point", ...}} (old form): GeoJSON
            if not shape.points or shape.kind != "Point":  # a line / polygon is no near point (mongod: 2)
                raise GeoError(f"invalid point provided to geo near query: {bson_repr(arg)}")
            query = NearQuery(op, cast("tuple[float, float]", shape.lnglat), True, True, point=shape.points[0])
        else:
            items = arg if isinstance(arg, list) else list(arg.values())
            if len(items) == 3 and all(is_number(v) for v in items) and outer_max is None:
                outer_max = items[2]  # legacy [x, y, maxDistance]
                arg = items[:2]
            shape = legacy_point(arg, extra_ok=False)
            x, y = cast("tuple[float, float]", shape.flat)
            query = NearQuery(op, (x, y), sphere, False)
            if sphere:
                query.point = sphere_point(x, y)
        max_d, min_d = outer_max, outer_min
    else:
        raise GeoError(f"near must be first in: {{ {op}: {bson_repr(arg)} }}")
    if max_d is not None:
        query.max_distance = _distance_arg(max_d, "$maxDistance")
    if min_d is not None:
        query.min_distance = _distance_arg(min_d, "$minDistance")
    return query
