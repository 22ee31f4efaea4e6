"""GeoJSON and legacy coordinates -> ``Shape`` (pure; geometry by the S2 library, as in mongod).

One parser for everything geospatial reads: stored values (matching, index keys) and query operands
(``$geometry``, ``$box``, ``$polygon``, ``$center``, ``$centerSphere``, near points). Errors carry
mongod's GeoParser messages (2 BadValue); callers add context (16755 for index keys).

A ``Shape`` keeps the two coordinate systems mongod keeps:

- ``flat``: the (x, y) of a *legacy* point (``[x, y]`` or ``{x: .., y: ..}``) for the planar
  operators (``$box``, ``$polygon``, ``$center``, 2d indexes). GeoJSON never has a flat form.
- ``points`` / ``lines`` / ``polygons``: S2 objects on the unit sphere. A legacy point has them only
  when its coordinates are a valid longitude/latitude. A GeometryCollection flattens into these
  lists (within = every component, intersects = any component).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, cast

import s2geometry as s2

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.value_repr import bson_repr
from tidemark.query.values import is_number, to_float

EARTH_RADIUS_M = 6378.1 * 1000  # mongod's kRadiusOfEarthInMeters (a sphere, not WGS84)

CRS_SPHERE = ("urn:ogc:def:crs:OGC:1.3:CRS84", "EPSG:4326")
CRS_STRICT_WINDING = "urn:x-mongodb:crs:strictwinding:EPSG:4326"
GEOJSON_TYPES = ("Point", "LineString", "Polygon", "MultiPoint", "MultiLineString", "MultiPolygon",
                 "GeometryCollection")


class GeoError(MongoError):
    """A GeoParser failure (2 BadValue); the message is mongod's status reason."""

    def __init__(self, message: str):
        super().__init__(ErrorCode.BadValue, message)


@dataclass(eq=False)
class Shape:
    kind: str  # a GeoJSON type name, or "legacy" for a legacy point
    flat: tuple[float, float] | None = None
    points: list = field(default_factory=list)  # s2.S2Point
    lines: list = field(default_factory=list)  # s2.S2Polyline
    polygons: list = field(default_factory=list)  # s2.S2Polygon
    legacy_sphere_ok: bool = True  # a legacy point with valid lng/lat (has a spherical form)
    given: tuple[float, float] | None = None  # a GeoJSON Point's coordinates as written
    strict: bool = False  # a "big polygon" (the strict-winding CRS): a query region, never a stored match

    @property
    def spherical(self) -> bool:
        return bool(self.points or self.lines or self.polygons)

    @property
    def lnglat(self) -> tuple[float, float] | None:
        """The (lng, lat) of a single point shape, as written (a $near point: a time-series $geoNear
        centres its $geoWithin there, and [1, 1] back from its S2 point is [0.9999999999999998, 1.0],
        which a maxDistance of 0 then missed)."""
        if self.flat is not None:
            return self.flat
        if self.given is not None:
            return self.given
        if self.kind == "Point" and self.points:
            ll = s2.S2LatLng(self.points[0])
            return ll.lng().degrees(), ll.lat().degrees()
        return None


def _elements(value: Any) -> list | None:
    """The values of an array or (for legacy points) of an object, in order."""
    if isinstance(value, list):
        return value
    if isinstance(value, dict):
        return list(value.values())
    return None


def flat_point(value: Any, *, extra_ok: bool = False) -> tuple[float, float]:
    """``[x, y]`` / ``{a: x, b: y}`` -> (x, y) (mongod's parseFlatPoint)."""
    items = _elements(value)
    if items is None:
        raise GeoError("Point must be an array or object")
    if len(items) < 2 or not is_number(items[0]) or not is_number(items[1]):
        raise GeoError("Point must only contain numeric elements")
    if len(items) > 2 and not extra_ok:
        raise GeoError("Point must only contain two numeric elements")
    x, y = to_float(items[0]), to_float(items[1])
    if not (math.isfinite(x) and math.isfinite(y)):
        raise GeoError("Point coordinates must be finite numbers")
    return x, y


def valid_lnglat(lng: float, lat: float) -> bool:
    return -180.0 <= lng <= 180.0 and -90.0 <= lat <= 90.0


def sphere_point(lng: float, lat: float) -> s2.S2Point:
    if not valid_lnglat(lng, lat):
        raise GeoError(f"longitude/latitude is out of bounds, lng: {_num(lng)} lat: {_num(lat)}")
    return s2.S2LatLng.FromDegrees(lat, lng).Normalized().ToPoint()


def _num(x: float) -> str:
    return str(int(x)) if x.is_integer() and abs(x) < 1e15 else repr(x)


def _coordinate(value: Any) -> s2.S2Point:
    if not isinstance(value, list):
        raise GeoError("GeoJSON coordinates must be an array")
    return sphere_point(*flat_point(value, extra_ok=True))


def _coordinates(value: Any) -> list:
    if not isinstance(value, list):
        raise GeoError("GeoJSON coordinates must be an array of coordinates")
    return [_coordinate(c) for c in value]


def _dedupe(points: list) -> list:
    out: list = []
    for p in points:
        if not out or not _same_point(out[-1], p):
            out.append(p)
    return out


def _same_point(a, b) -> bool:
    return a.x() == b.x() and a.y() == b.y() and a.z() == b.z()


def _loop(ring: Any, *, normalize: bool) -> s2.S2Loop:
    points = _coordinates(ring)
    if not points:
        raise GeoError(f"Loop has no vertices: {bson_repr(ring)}")
    if not _same_point(points[0], points[-1]):
        raise GeoError(f"Loop is not closed: {bson_repr(ring)}")
    points = _dedupe(points)[:-1]
    if len(points) < 3:
        raise GeoError(f"Loop must have at least 3 different vertices: {bson_repr(ring)}")
    loop = s2.S2Loop(points)
    if not loop.IsValid():
        raise GeoError(f"Loop is not valid: {bson_repr(ring)} Edges cross or vertices repeat")
    if normalize:
        loop.Normalize()  # a loop larger than a hemisphere means its complement (non-strict CRS)
    return loop


def _polygon(coords: Any, *, strict: bool = False) -> s2.S2Polygon:
    if not isinstance(coords, list):
        raise GeoError("Polygon coordinates must be an array")
    if strict:
        if len(coords) != 1:
            raise GeoError(f"Only one simple loop is allowed in a big polygon: {bson_repr(coords)}")
        return s2.S2Polygon(_loop(coords[0], normalize=False))
    loops: list[Any] = []
    for ring in coords:
        loop = _loop(ring, normalize=True)
        if loops and not loops[0].Contains(loop):
            raise GeoError("Secondary loops not contained by first exterior loop - secondary loops must be "
                           f"holes: {bson_repr(ring)} first loop: {bson_repr(coords[0])}")
        loops.append(loop)
    if not loops:
        raise GeoError("Polygon has no loops.")
    polygon = s2.S2Polygon()
    polygon.InitNested(loops)
    if not polygon.IsValid():
        raise GeoError(f"Polygon isn't valid: loops cross or share edges {bson_repr(coords)}")
    _check_normalized(polygon, coords)
    if polygon.num_loops() > 1:
        if polygon.GetLastDescendant(0) < polygon.num_loops() - 1:
            raise GeoError(f"Only one exterior polygon loop is allowed: {bson_repr(coords)}")
        if any(polygon.loop(i).depth() > 1 for i in range(polygon.num_loops())):
            raise GeoError(f"Polygon interior loops cannot be nested: {bson_repr(coords)}")
    return polygon


def _check_normalized(polygon: s2.S2Polygon, coords: Any) -> None:
    """S2's IsNormalized, as mongod checks it: a loop may share at most one vertex with its parent
    (a hole touching its shell at two vertices would cut the polygon in two). Loops are in preorder,
    so a loop's parent is the nearest earlier loop one level up."""
    stack: list[tuple[int, set]] = []  # (index, vertex set) of the open ancestors
    for i in range(polygon.num_loops()):
        loop = polygon.loop(i)
        vertices = {(v.x(), v.y(), v.z()) for v in (loop.vertex(k) for k in range(loop.num_vertices()))}
        del stack[loop.depth():]
        if stack and len(vertices & stack[-1][1]) > 1:
            raise GeoError(f"Loop {i} shares more than one vertex with its parent loop {stack[-1][0]}: "
                           f"{bson_repr(coords)}")
        stack.append((i, vertices))


def _line(coords: Any) -> s2.S2Polyline:
    points = _dedupe(_coordinates(coords))
    if len(points) < 2:
        raise GeoError(f"GeoJSON LineString must have at least 2 vertices: {bson_repr(coords)}")
    line = s2.S2Polyline()
    line.InitFromS2Points(points)
    if not line.IsValid():
        raise GeoError(f"GeoJSON LineString is not valid: adjacent vertices are antipodal {bson_repr(coords)}")
    return line


def _crs(obj: dict, *, allow_strict: bool = False) -> str:
    crs = obj.get("crs")
    if crs is None:
        return "sphere"
    if not isinstance(crs, dict):
        raise GeoError("GeoJSON CRS must be an object")
    if crs.get("type") != "name":
        raise GeoError('GeoJSON CRS must have field "type": "name"')
    props = crs.get("properties")
    if not isinstance(props, dict):
        raise GeoError('CRS must have field "properties" which is an object')
    name = props.get("name")
    if type(name) is not str:
        raise GeoError('In CRS, "properties.name" must be a string')
    if name in CRS_SPHERE:
        return "sphere"
    if name == CRS_STRICT_WINDING:
        if not allow_strict:
            raise GeoError("Strict winding order is only supported by polygon")
        return "strict"
    raise GeoError(f"Unknown CRS name: {name}")


def geojson_type(value: Any) -> str | None:
    t = value.get("type") if isinstance(value, dict) else None
    return t if t in GEOJSON_TYPES else None


def parse_geojson(obj: dict) -> Shape:
    """A GeoJSON object -> Shape; raises GeoError with mongod's message when invalid."""
    kind = geojson_type(obj)
    if kind is None:
        raise GeoError(f"unknown GeoJSON type: {bson_repr(obj)}")
    shape = Shape(kind)
    if kind == "GeometryCollection":
        geometries = obj.get("geometries")
        if not isinstance(geometries, list):
            raise GeoError("GeometryCollection geometries must be an array")
        if not geometries:
            raise GeoError("GeometryCollection geometries must have at least 1 element")
        for i, g in enumerate(geometries):
            if not isinstance(g, dict):
                raise GeoError(f'Element {i} of "geometries" is not an object')
            sub = geojson_type(g)
            if sub is None:
                raise GeoError(f"Unknown GeoJSON type: {bson_repr(g)}")
            if sub == "GeometryCollection":
                raise GeoError(f"GeometryCollections cannot be nested: {bson_repr(g)}")
            part = parse_geojson(g)
            shape.points += part.points
            shape.lines += part.lines
            shape.polygons += part.polygons
        return shape
    crs = _crs(obj, allow_strict=kind == "Polygon")
    coords = obj.get("coordinates")
    if kind == "Point":
        lng, lat = flat_point(coords, extra_ok=True)
        shape.points.append(sphere_point(lng, lat))
        shape.given = (lng, lat)
    elif kind == "LineString":
        shape.lines.append(_line(coords))
    elif kind == "Polygon":
        shape.polygons.append(_polygon(coords, strict=crs == "strict"))
        shape.strict = crs == "strict"
    elif kind == "MultiPoint":
        shape.points += _coordinates(coords)
        if not shape.points:
            raise GeoError("MultiPoint coordinates must have at least 1 element")
    elif kind == "MultiLineString":
        if not isinstance(coords, list):
            raise GeoError("MultiLineString coordinates must be an array")
        shape.lines += [_line(c) for c in coords]
        if not shape.lines:
            raise GeoError("MultiLineString coordinates must have at least 1 element")
    else:  # MultiPolygon
        if not isinstance(coords, list):
            raise GeoError("MultiPolygon coordinates must be an array")
        shape.polygons += [_polygon(c) for c in coords]
        if not shape.polygons:
            raise GeoError("MultiPolygon coordinates must have at least 1 element")
    return shape


def legacy_point(value: Any, *, extra_ok: bool) -> Shape:
    x, y = flat_point(value, extra_ok=extra_ok)
    shape = Shape("legacy", flat=(x, y))
    if valid_lnglat(x, y):
        shape.points.append(s2.S2LatLng.FromDegrees(y, x).Normalized().ToPoint())
    else:
        shape.legacy_sphere_ok = False
    return shape


def is_legacy_point_like(value: Any) -> bool:
    """``[x, y, ...]`` or an object whose first value is a number (mongod's legacy-point test)."""
    if isinstance(value, list):
        return True
    return isinstance(value, dict) and bool(value) and is_number(next(iter(value.values())))


def parse_stored(value: Any) -> Shape:
    """A stored field value as a geometry (GeoJSON, or a legacy point with extra fields allowed)."""
    if not isinstance(value, (dict, list)):
        raise GeoError("geo element must be an array or object")
    if is_legacy_point_like(value):
        return legacy_point(value, extra_ok=True)
    return parse_geojson(cast(dict, value))  # a list that is no legacy point has no GeoJSON type: refused


def try_stored(value: Any) -> Shape | None:
    """``parse_stored`` for matching: None instead of an error (a non-geo value matches nothing)."""
    try:
        return parse_stored(value)
    except MongoError:
        return None


def stored_pairs(value: Any) -> list[tuple[Any, Shape]]:
    """(raw value, geometry) for the geometries a field value holds: the value itself, else each
    element of an array (an array of legacy points is a multi-location field)."""
    shape = try_stored(value)
    if shape is not None:
        return [(value, shape)]
    if isinstance(value, list):
        return [(v, s) for v, s in ((v, try_stored(v)) for v in value) if s is not None]
    return []


def stored_shapes(value: Any) -> list[Shape]:
    return [shape for _raw, shape in stored_pairs(value)]
