"""Reads ordered by distance (pure): the ``$near`` search through a geo index, the ``$geoNear`` stage
and its time-series form.

**Near search** (``near_scan``): an expanding search over a GEO_NEAR plan. Ring k scans the index
cells covering the disc of radius r_k around the query point (r_k grows x4 from about 100 m, or
from ``$minDistance``, up to ``$maxDistance``); every document within r_k has then been read, so
the buffered documents closer than r_k come out in distance order. Each document is fetched once
(the caller's scan de-duplicates record ids across rings). Without equality bounds on the fields
before the geo field of a compound index, and for planar ``$nearSphere`` on a 2d index, the whole
index is read and sorted instead. On a 2d index the query point must lie on the index's plane
(``[min, max]`` on both axes, bounds included) or the read fails, before anything is read, with
mongod's 16433 (``Plane.check_query_point``); a planar distance is mongod's ``distance`` (exact
along an axis: ``geo_query.planar_distance``). Which documents a near search keeps is decided in one
place, ``NearQuery.kept`` (planar: in the annulus by ``$center``'s comparison; the re-applied filter
uses it too).

**$geoNear** is a near query on its ``key`` field (``$near`` for GeoJSON or planar points,
``$nearSphere`` for ``spherical: true``) AND ``query``; each result gets ``distanceField`` (x
``distanceMultiplier``) and ``includeLocs``. It must be the first stage (40602); the read core
turns it into that query. On a time-series collection it becomes, as in mongod 7.0,
``$match $geoWithin`` + ``$_internalGeoNearDistance`` + ``$match`` on the distance + ``$sort``.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, cast

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.access_path import Interval
from tidemark.query.expr_logic import truthy
from tidemark.query.expressions import evaluate
from tidemark.query.geo_keys import Plane, cap_region, region_intervals
from tidemark.query.geo_parse import EARTH_RADIUS_M
from tidemark.query.geo_query import parse_near
from tidemark.query.index_kinds import key_direction
from tidemark.query.paths import get_path_values
from tidemark.query.pipeline import PipelineContext, Stage
from tidemark.query.stages import field_path
from tidemark.query.values import MISSING, bson_type_name, is_number, to_float
from tidemark.storage.keys import encode_key

START_RADIANS = 100.0 / EARTH_RADIUS_M
GROWTH = 4.0
# the room a region searched or pre-filtered has over the distance that decides (relative): far above
# the ~1e-16 by which S2's and the exact distance formulas can differ
_PREFILTER_ROOM = 1 + 1e-12


# --------------------------------------------------------------------------------------------------
# the near search
# --------------------------------------------------------------------------------------------------


def _distance(near: Any, doc: dict, path: str) -> tuple[float, Any] | None:
    best = None
    for value in get_path_values(doc, path):
        if value is MISSING:
            continue
        found = near.nearest(value)
        if found is not None and (best is None or found[0] < best[0]):
            best = found
    return best


def _kept(near: Any, doc: dict, path: str) -> tuple[float, Any] | None:
    return near.kept(v for v in get_path_values(doc, path) if v is not MISSING)


def near_scan(plan: Any, scan: Callable[[list], Iterator[tuple[bytes, dict]]]) -> Iterator[tuple[bytes, dict]]:
    """(rid, document) of a GEO_NEAR plan, nearest first, inside [min, max] distance.

    ``scan(intervals)`` yields the (rid, document) pairs of index entries in those key intervals
    that were not yielded before."""
    np = plan.special
    near = np.near
    kind = np.spec["key"][np.path]
    directions = [key_direction(v) for v in np.spec["key"].values()]
    pos = list(np.spec["key"]).index(np.path)
    prefix_dirs = directions[:pos] + [1]
    heap: list = []
    seq = itertools.count()

    def take(intervals: list) -> None:
        for rid, doc in scan(intervals):
            found = _kept(near, doc, np.path)
            if found is not None:
                heapq.heappush(heap, (found[0], next(seq), rid, doc, found[1]))

    def emit(limit: float) -> Iterator[tuple[bytes, dict]]:
        while heap and heap[0][0] <= limit:
            d, _, rid, doc, loc = heapq.heappop(heap)
            yield rid, _decorate(np, plan.meta, doc, d, loc)

    if kind == "2d":
        # mongod's GeoNear2DStage hashes the query point on the index's plane before it reads
        # anything ($near and $nearSphere alike): a point off the plane fails the read (16433)
        Plane(np.spec).check_query_point(*near.xy)
    whole = np.prefix is None or (kind == "2d" and near.spherical)
    if whole:
        take([Interval(None, None, True, True)])
        yield from emit(math.inf)
        return

    def intervals_for(ranges: list) -> list:
        out = []
        for prefix in np.prefix:
            for lo, hi in ranges:
                out.append(Interval(encode_key((*prefix, lo), prefix_dirs), encode_key((*prefix, hi), prefix_dirs),
                                        True, True))
        out.sort(key=lambda iv: cast(bytes, iv.lo))  # both bounds of every interval here are keys
        return out

    if kind == "2dsphere":
        to_units = EARTH_RADIUS_M if near.geojson else 1.0
        limit = near.max_radians
        r = max(START_RADIANS, near.min_distance / to_units)
        while True:
            r = min(r, limit)
            # the cells of a slightly larger disc: a point at exactly distance r (or on a cell edge the
            # disc's border runs along, like the equator) may lie a few ulps outside the disc in S2's
            # arithmetic; every point read is measured exactly (take, emit) before it is yielded
            take(intervals_for(region_intervals(cap_region(near.point, min(r * _PREFILTER_ROOM + 1e-15, math.pi)))))
            if r >= limit:
                yield from emit(math.inf)
                return
            yield from emit(r * to_units)
            r *= GROWTH
    else:  # 2d, planar distances

        plane = Plane(np.spec)
        x, y = near.xy
        span = plane.hi - plane.lo
        limit = min(near.max_distance, span * 1.5)
        r = max((span / (1 << plane.bits)) * 64, near.min_distance)
        while True:
            r = min(r, limit)
            take(intervals_for(plane.box_intervals(x - r, y - r, x + r, y + r)))
            if r >= limit:
                yield from emit(math.inf)
                return
            yield from emit(r)
            r *= GROWTH


def set_nested(doc: dict, parts: list[str], value: Any) -> dict:
    """``doc`` (copied along the path) with ``value`` at ``parts``: mongod's setNestedField, which
    replaces an array or scalar met on the way by a new object (SERVER-35561: ``distanceField:
    "arr.b"`` over an array of objects gives ``arr: {b: d}``), unlike ``$addFields``."""
    out = dict(doc)
    head = parts[0]
    if len(parts) == 1:
        out[head] = value
    else:
        sub = out.get(head)
        out[head] = set_nested(sub if isinstance(sub, dict) else {}, parts[1:], value)
    return out


def _decorate(np: Any, meta: Any, doc: dict, distance: float, location: Any) -> dict:
    if meta is not None:
        meta.set(doc, "geoNearDistance", distance)
        meta.set(doc, "geoNearPoint", location)
    if np.output is None:
        return doc

    field, multiplier, include_locs = np.output
    out = set_nested(doc, field.split("."), distance * multiplier if multiplier is not None else distance)
    if include_locs:
        out = set_nested(out, include_locs.split("."), location)
    if meta is not None:
        meta.hand_on(doc, out)
    return out


# --------------------------------------------------------------------------------------------------
# $geoNear
# --------------------------------------------------------------------------------------------------


@dataclass
class GeoNearSpec:
    near: Any
    distance_field: str
    spherical: bool = False
    max_distance: float | None = None
    min_distance: float | None = None
    distance_multiplier: float | None = None
    query: dict | None = None
    include_locs: str | None = None
    key: str | None = None

    def near_condition(self) -> dict:
        """``{$near | $nearSphere: near, $minDistance?, $maxDistance?}`` (mongod's asNearQuery)."""
        if not isinstance(self.near, (dict, list)):
            raise MongoError(5860401, "$geoNear requires near argument to be a GeoJSON object or a legacy point(array)")
        cond: dict = {"$nearSphere" if self.spherical else "$near": self.near}
        if self.min_distance is not None:
            cond["$minDistance"] = self.min_distance
        if self.max_distance is not None:
            cond["$maxDistance"] = self.max_distance
        return cond

    def near_query(self) -> Any:
        cond = self.near_condition()
        op = next(iter(cond))
        return parse_near(op, cond[op], cond)

    def output(self) -> tuple[str, float | None, str | None]:
        return self.distance_field, self.distance_multiplier, self.include_locs


def _field_path(value: str) -> str:
    """``value`` checked as mongod's FieldPath (``stages.field_path``: 40352, 15998, 16410, 16411): the
    distanceField, includeLocs and key of $geoNear are field paths."""
    field_path(value)
    return value


def parse_geo_near(spec: Any, variables: dict | None = None) -> GeoNearSpec:
    """Validate a ``$geoNear`` stage like mongod 7.0 (DocumentSourceGeoNear::parseOptions)."""
    if not isinstance(spec, (dict, list)):
        raise MongoError(10065, "invalid parameter: expected an object ($geoNear)")
    if isinstance(spec, list):
        spec = {}
    if "collation" in spec:
        raise MongoError(40227, "$geoNear does not accept the 'collation' parameter. Instead, specify a collation "
                                "for the entire aggregation command.")
    for old, code, msg in (("limit", 50858, "$geoNear no longer supports the 'limit' parameter. Use a $limit stage "
                                            "instead."),
                           ("num", 50857, "$geoNear no longer supports the 'num' parameter. Use a $limit stage "
                                          "instead."),
                           ("start", 50856, "$geoNear no longer supports the 'start' argument.")):
        if old in spec:
            raise MongoError(code, msg)
    if "near" not in spec:
        raise MongoError(5860400, "$geoNear requires a 'near' argument")
    near = spec["near"]
    # near may be a constant expression ($$var, $let, ...); one that comes to null is checked when the
    # stage runs (mongod's asNearQuery), as a $lookup sub-pipeline's $$let variable is only known then
    near_is_expression = type(near) is str or (isinstance(near, dict) and near and next(iter(near)).startswith("$"))
    if near_is_expression:
        near = evaluate(near, {}, dict(variables or {}))
    distance_field = spec.get("distanceField")
    if type(distance_field) is not str:
        raise MongoError(16606, "$geoNear requires a 'distanceField' option as a String")
    out = GeoNearSpec(near, _field_path(distance_field))
    for name, attr in (("maxDistance", "max_distance"), ("minDistance", "min_distance"),
                       ("distanceMultiplier", "distance_multiplier")):
        if name in spec:
            v = spec[name]
            if not is_number(v):
                raise MongoError(ErrorCode.TypeMismatch, f"{name} must be a number")
            if not to_float(v) >= 0:
                raise MongoError(ErrorCode.BadValue, f"{name} must be nonnegative")
            setattr(out, attr, to_float(v))
    if "query" in spec:
        if not isinstance(spec["query"], dict):
            raise MongoError(ErrorCode.TypeMismatch, "query must be an object")
        out.query = spec["query"]

    out.spherical = truthy(spec.get("spherical", False))
    if "includeLocs" in spec:
        if type(spec["includeLocs"]) is not str:
            raise MongoError(16607, "$geoNear requires that 'includeLocs' option is a String")
        out.include_locs = _field_path(spec["includeLocs"])
    if "key" in spec:
        key = spec["key"]
        if type(key) is not str:
            raise MongoError(ErrorCode.TypeMismatch, "$geoNear parameter 'key' must be of type string but found "
                                                     f"type: {bson_type_name(key)}")
        if not key:
            raise MongoError(ErrorCode.BadValue, "$geoNear parameter 'key' cannot be the empty string")
        out.key = _field_path(key)
    known = {"near", "distanceField", "maxDistance", "minDistance", "distanceMultiplier", "query", "spherical",
             "includeLocs", "key", "uniqueDocs"}
    for k in spec:
        if k not in known:
            raise MongoError(ErrorCode.FailedToParse, f"Unknown argument to $geoNear: {k}")
    if not (near_is_expression and near is None):
        out.near_query()  # validates near / distances now (2 BadValue like mongod's GeoNearExpression)
    return out


def geo_near_key(indexes: list[dict]) -> str:
    """The field of the collection's only 2d index, else of its only 2dsphere index (mongod)."""
    for kind in ("2d", "2dsphere"):
        specs = [s for s in indexes if kind in s["key"].values() and not s.get("hidden")]
        if len(specs) > 1:
            raise MongoError(ErrorCode.IndexNotFound, f"There is more than one {kind} index on the collection; unsure "
                                                      "which to use for $geoNear")
        if specs:
            return next(f for f, v in specs[0]["key"].items() if v == kind)
    raise MongoError(ErrorCode.IndexNotFound, "$geoNear requires a 2d or 2dsphere index, but none were found")


def parse_stage(spec: Any, ctx: PipelineContext) -> Stage:
    parse_geo_near(spec, ctx.variables)

    def apply(docs):  # the read core answers a leading $geoNear; anywhere else it is misplaced
        raise MongoError(40602, "$geoNear is only valid as the first stage in a pipeline")
        yield  # pragma: no cover

    return Stage("$geoNear", spec, apply)


# --------------------------------------------------------------------------------------------------
# time-series: $geoNear -> $match + $_internalGeoNearDistance + $match + $sort
# --------------------------------------------------------------------------------------------------


def timeseries_rewrite(raw: Any, variables: dict | None = None) -> list[dict]:
    """mongod 7.0's DocumentSourceGeoNear::splitForTimeseries, as pipeline stages."""
    spec = parse_geo_near(raw, variables)
    if spec.key is None:
        raise MongoError(40602, "$geoNear is only valid as the first stage in a pipeline")
    if spec.query:
        raise MongoError(5860207, "Must not specify 'query' for $geoNear on a time-series collection; use $match "
                                  "instead")
    if spec.include_locs:
        raise MongoError(5860208, "$geoNear 'includeLocs' is not supported on time-series metrics")
    near = spec.near_query()
    x, y = near.xy
    # The $geoWithin only narrows what the distance $match after it decides exactly, so its radius has
    # room for rounding: a point at exactly maxDistance (which the distance stage keeps, as a $geoNear
    # on a collection does) can land a few ulps outside the same circle measured in radians.
    if near.spherical:
        within = {"$centerSphere": [[x, y], near.max_radians * _PREFILTER_ROOM]}
    else:
        within = {"$center": [[x, y], near.max_distance * _PREFILTER_ROOM if near.max_distance != math.inf
                              else 1.7976931348623157e308]}
    mult = spec.distance_multiplier if spec.distance_multiplier is not None else 1.0
    stages: list[dict] = [
        {"$match": {spec.key: {"$geoWithin": within}}},
        {"$_internalGeoNearDistance": {"near": spec.near, "key": spec.key, "distanceField": spec.distance_field,
                                       "distanceMultiplier": mult, "spherical": spec.spherical}},
    ]
    if spec.min_distance is not None:
        stages.append({"$match": {spec.distance_field: {"$gte": spec.min_distance * mult}}})
    if spec.max_distance is not None:
        stages.append({"$match": {spec.distance_field: {"$lte": spec.max_distance * mult}}})
    stages.append({"$sort": {spec.distance_field: 1}})
    return stages


def parse_distance_stage(spec: Any, ctx: PipelineContext) -> Stage:
    """``$_internalGeoNearDistance``: sets ``distanceField`` to the distance from ``near`` to ``key``."""
    if not isinstance(spec, dict) or not {"near", "key", "distanceField"} <= set(spec):
        raise MongoError(ErrorCode.FailedToParse, "$_internalGeoNearDistance needs near, key and distanceField")
    inner = GeoNearSpec(spec["near"], spec["distanceField"], spherical=bool(spec.get("spherical")))
    near = inner.near_query()
    key, field = spec["key"], spec["distanceField"].split(".")
    mult = float(spec.get("distanceMultiplier", 1.0))

    def apply(docs):
        for doc in docs:
            found = _distance(near, doc, key)
            if found is None:
                continue
            yield set_nested(doc, field, found[0] * mult)

    return Stage("$_internalGeoNearDistance", spec, apply)


STAGES = {"$geoNear": parse_stage, "$_internalGeoNearDistance": parse_distance_stage}
