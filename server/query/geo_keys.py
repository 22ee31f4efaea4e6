"""Index keys of geo fields and the key ranges a geo query scans (pure).

**2dsphere**: a geometry is keyed by the S2 cells of its covering (a point by its leaf cell), each
cell id stored as ``Int64(id - 2**63)`` so that key order is cell-id order. A query region is
covered by cells too; a stored cell K can touch a query cell C only when K lies inside C (the id
range of C's descendants, one interval) or K is an ancestor of C (one point per ancestor level).
Documents missing every geo field are not indexed (2dsphereIndexVersion 3 is sparse on its geo
field); a value that is not a geometry refuses the write (16755 "Can't extract geo keys").

**2d**: legacy points only, on the plane ``[min, max]`` (default -180..180) with ``bits`` (default
26) bits per axis; a point is keyed by its geohash (x and y bits interleaved) as an Int64. A query
box is covered by geohash cells (quadtree), each one contiguous hash range.

Bounds are loose: the full filter (or the exact distance of ``$near``) always decides.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, cast

import s2geometry as s2
from bson.int64 import Int64

from tidemark.protocol.errors import MongoError
from tidemark.query.geo_parse import GeoError, Shape, parse_stored
from tidemark.query.value_repr import bson_repr
from tidemark.query.values import MISSING, is_number, to_float

INDEX_MAX_LEVEL = 23  # about 1 m cells: finer detail is left to the exact filter
INDEX_MAX_CELLS = 20
QUERY_MAX_CELLS = 16
_OFFSET = 2**63


def cell_key(cell_id: int) -> Int64:
    return Int64(cell_id - _OFFSET)


def _coverer(max_cells: int, max_level: int = INDEX_MAX_LEVEL) -> s2.S2RegionCoverer:
    cov = s2.S2RegionCoverer()
    cov.set_max_cells(max_cells)
    cov.set_max_level(max_level)
    return cov


def shape_cells(shape: Shape) -> set[int]:
    """Cell ids indexing one geometry."""
    cells = {s2.S2CellId(p).id() for p in shape.points}
    if shape.lines or shape.polygons:
        cov = _coverer(INDEX_MAX_CELLS)
        for region in (*shape.lines, *shape.polygons):
            cells.update(c.id() for c in cov.GetCovering(region))
    return cells


def sphere_keys(value: Any, doc: dict) -> list[Int64]:
    """Keys of one 2dsphere field value: one geometry. The array at the end of the path is not
    expanded (mongod's S2 key generation): an array must itself be a legacy point, so an array of
    GeoJSON objects refuses the write. null, an empty array and an empty object stand for a missing
    field (2dsphereIndexVersion >= 2): no keys, not an error."""
    if value is None or value == [] or value == {}:
        return []
    try:
        shape = parse_stored(value)
    except MongoError as e:
        raise _cant_extract(doc, e.message) from None
    if shape.strict:  # a big polygon is a query region only (mongod's S2GetKeysForElement)
        raise _cant_extract(doc, "can't index geometry with strict winding order")
    if not shape.spherical:
        lng, lat = cast("tuple[float, float]", shape.flat)  # a legacy point out of bounds
        raise _cant_extract(doc, f"longitude/latitude is out of bounds, lng: {lng:g} lat: {lat:g}")
    return [cell_key(c) for c in sorted(shape_cells(shape))]


def _cant_extract(doc: dict, reason: str) -> MongoError:
    return MongoError(16755, f"Can't extract geo keys: {bson_repr(doc)}  {reason}")


def region_intervals(region: Any) -> list[tuple[Int64, Int64]]:
    """Key intervals (inclusive pairs) of the stored cells that may touch an S2 region."""
    covering = _coverer(QUERY_MAX_CELLS).GetCovering(region)
    return cells_intervals(covering)


def cells_intervals(covering: Iterable) -> list[tuple[Int64, Int64]]:
    ranges: list[tuple[int, int]] = []
    points: set[int] = set()
    for cell in covering:
        ranges.append((cell.range_min().id(), cell.range_max().id()))
        parent = cell
        while parent.level() > 0:
            parent = parent.parent()
            points.add(parent.id())
    ranges += [(p, p) for p in points]
    return [(cell_key(lo), cell_key(hi)) for lo, hi in _merged(ranges)]


def _merged(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Inclusive integer ranges sorted, with overlapping and adjacent ones joined."""
    merged: list[list[int]] = []
    for lo, hi in sorted(ranges):
        if merged and lo <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    return [(lo, hi) for lo, hi in merged]


def cap_region(point: Any, radians: float) -> Any:
    return s2.S2Cap(point, s2.S1Angle.Radians(min(radians, math.pi)))


# --------------------------------------------------------------------------------------------------
# 2d
# --------------------------------------------------------------------------------------------------


class Plane:
    """A 2d index's plane: ``[lo, hi]`` on both axes cut into ``2**bits`` steps."""

    def __init__(self, spec: dict):
        self.bits = int(spec.get("bits", 26))
        self.lo = float(spec.get("min", -180.0))
        self.hi = float(spec.get("max", 180.0))
        self.scale = (1 << self.bits) / (self.hi - self.lo)

    def _cell(self, v: float) -> int:
        return min(int((v - self.lo) * self.scale), (1 << self.bits) - 1)

    def hash(self, x: float, y: float) -> int:
        hx, hy = self._cell(x), self._cell(y)
        out = 0
        for i in range(self.bits - 1, -1, -1):
            out = (out << 2) | (((hx >> i) & 1) << 1) | ((hy >> i) & 1)
        return out

    def check_query_point(self, x: float, y: float) -> None:
        """A query point hashed on this plane (a ``$near`` / ``$geoNear`` centre) must lie on it, bounds
        included: mongod's ``GeoHashConverter::hash(double, double)`` (geo/hash.cpp), 16433."""
        if not (self.lo <= x <= self.hi and self.lo <= y <= self.hi):
            raise MongoError(16433, f"point not in interval of [ {self.lo:g}, {self.hi:g} ] :: caused by :: "
                                    f"{bson_repr([float(x), float(y)])}")

    def keys(self, value: Any, doc: dict) -> list[Int64]:
        """Keys of one 2d field value: a legacy point or an array of them. An empty array or object
        has no keys (mongod's get2DKeys skips it); an empty point inside an array refuses (13067)."""
        if isinstance(value, (list, dict)) and not value:
            return []
        points = value if isinstance(value, list) and value and all(isinstance(v, (list, dict)) for v in value) \
            else [value]
        out = set()
        for p in points:
            items = p if isinstance(p, list) else list(p.values()) if isinstance(p, dict) else None
            if items is None:
                continue
            if not items:
                raise MongoError(13067, f"geo field is empty :: caused by :: {bson_repr(doc)}")
            if len(items) < 2:
                raise MongoError(13068, f"geo field only has 1 element :: caused by :: {bson_repr(doc)}")
            x, y = items[0], items[1]
            if not (is_number(x) and is_number(y)):
                raise MongoError(13026, "geo values must be 'legacy coordinate pairs' for 2d indexes :: caused "
                                        f"by :: {bson_repr(doc)}")
            x, y = to_float(x), to_float(y)
            if not (self.lo <= x <= self.hi and self.lo <= y <= self.hi):
                raise MongoError(13027, f"point not in interval of [ {self.lo:g}, {self.hi:g} ] :: caused by :: "
                                        f"{bson_repr(doc)}")
            out.add(self.hash(x, y))
        return [Int64(h) for h in sorted(out)]

    def box_intervals(self, x1: float, y1: float, x2: float, y2: float,
                      max_cells: int = 64) -> list[tuple[Int64, Int64]]:
        """Hash intervals covering the box (quadtree descent, coarsest cells that fit the budget)."""
        x1, x2 = max(x1, self.lo), min(x2, self.hi)
        y1, y2 = max(y1, self.lo), min(y2, self.hi)
        if x1 > x2 or y1 > y2:
            return []
        cx1, cx2, cy1, cy2 = self._cell(x1), self._cell(x2), self._cell(y1), self._cell(y2)
        cells = [(0, 0, 0)]  # (level, ix, iy): 2**level cells per axis at that level
        done: list[tuple[int, int, int]] = []
        while cells:
            partial = []
            for level, ix, iy in cells:
                shift = self.bits - level
                lo_x, hi_x = ix << shift, ((ix + 1) << shift) - 1
                lo_y, hi_y = iy << shift, ((iy + 1) << shift) - 1
                if hi_x < cx1 or lo_x > cx2 or hi_y < cy1 or lo_y > cy2:
                    continue
                if (cx1 <= lo_x and hi_x <= cx2 and cy1 <= lo_y and hi_y <= cy2) or level == self.bits:
                    done.append((level, ix, iy))
                else:
                    partial.append((level, ix, iy))
            if len(done) + 4 * len(partial) > max_cells:
                done += partial  # out of budget: keep the partly covered cells whole (loose bounds)
                break
            cells = [(lv + 1, ix * 2 + a, iy * 2 + b) for lv, ix, iy in partial for a in (0, 1) for b in (0, 1)]
        out = []
        for level, ix, iy in done:
            prefix = 0
            for i in range(level - 1, -1, -1):
                prefix = (prefix << 2) | (((ix >> i) & 1) << 1) | ((iy >> i) & 1)
            shift = 2 * (self.bits - level)
            out.append((prefix << shift, ((prefix + 1) << shift) - 1))
        return [(Int64(lo), Int64(hi)) for lo, hi in _merged(out)]


def check_plane_spec(spec: dict) -> None:
    """2d index options: ``bits`` 1..32, ``min < max``."""
    bits = spec.get("bits", 26)
    if not is_number(bits) or not 1 <= to_float(bits) <= 32:
        raise GeoError("bits in geo index must be between 1 and 32")
    lo, hi = spec.get("min", -180.0), spec.get("max", 180.0)
    if not is_number(lo) or not is_number(hi) or not to_float(lo) < to_float(hi):
        raise GeoError("need a max value greater than min value in 2d index")


# --------------------------------------------------------------------------------------------------
# 2dsphere_bucket: a time-series 2dsphere index on a measurement
# --------------------------------------------------------------------------------------------------


def is_empty_geo(value: Any) -> bool:
    """null (undefined decodes as null), ``{}`` and ``[]`` count as no geo value in a bucket (mongod
    ignores them)."""
    return value is None or value is MISSING or (isinstance(value, (dict, list)) and not value)


def bucket_point(value: Any) -> s2.S2Point:
    """One measurement's value under a time-series ``2dsphere`` index: a GeoJSON Point or a legacy
    ``[x, y]`` pair, as mongod's ``getS2BucketGeoKeys`` accepts it (183934 when the value is no geometry,
    183493 when it is another geometry; 167551 when a legacy pair has no spherical form)."""
    try:
        shape = parse_stored(value)
    except MongoError as e:
        raise MongoError(183934, f"Can't extract geo keys: {e.message}") from None
    if shape.kind not in ("Point", "legacy"):
        raise MongoError(183493, "Time-series collections '2dsphere' indexes only support point data")
    if not shape.points:
        lng, lat = cast("tuple[float, float]", shape.flat)  # a legacy point out of bounds
        raise MongoError(167551, f"Can't extract geo keys: longitude/latitude is out of bounds, "
                                 f"lng: {lng:g} lat: {lat:g}")
    return shape.points[0]


def bucket_sphere_keys(values: Iterable[Any]) -> list[Int64]:
    """Keys of a bucket's measurement values under a ``2dsphere_bucket`` field: the cells of its points
    (the values that are no geo value skipped; [] when none is left: the bucket is not indexed)."""
    cells = {s2.S2CellId(bucket_point(v)).id() for v in values if not is_empty_geo(v)}
    return [cell_key(c) for c in sorted(cells)]
