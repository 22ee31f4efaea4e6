"""Near reads on ``system.buckets.<c>`` answer as on any collection with the same geo index.

mongod runs ``$near`` / ``$nearSphere`` finds and a leading ``$geoNear`` on a buckets collection
through the buckets' geo index of the meta field (timeseries_special_indexes_metadata.js). Tidemark
keeps no index entries for buckets, so the one near search runs over all of them
(``special_reads.near_over``): the differential below holds each bucket's meta in a regular
collection with the same index and checks that both answer the same documents, nearest first, with
the same distances (or fail with the same code)."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("find", "aggregate")

NOW = dt.datetime(2024, 1, 1)
LON = st.integers(-360, 360).map(lambda v: v / 2)
LAT = st.integers(-180, 180).map(lambda v: v / 2)
POINTS = st.lists(st.tuples(LON, LAT), min_size=1, max_size=12, unique=True)


def _point(kind: str, lon: float, lat: float):
    return [lon, lat] if kind == "2d" else {"type": "Point", "coordinates": [lon, lat]}


def _answer(run):
    """(meta, distance or None) pairs in the order read, or the error code."""
    try:
        # (the time-series meta is normalized: a GeoJSON point's fields come back sorted)
        return [(repr(d["meta"].get("coordinates") if isinstance(d["meta"], dict) else d["meta"]), d.get("dist"))
                for d in run()]
    except OperationFailure as e:
        return e.code


def _same(got, expected):
    """The same documents at the same distances, each nearest first (documents tied on a distance may
    come in either order)."""
    if isinstance(expected, int) or isinstance(got, int):
        return got == expected
    return [d for _, d in got] == [d for _, d in expected] and sorted(got, key=repr) == sorted(expected, key=repr)


def _reads(kind: str, near, max_distance):
    bound = {} if max_distance is None else {"$maxDistance": max_distance}
    for op in ("$near", "$nearSphere"):
        yield op, lambda coll, op=op: coll.find({"meta": {op: near, **bound}}, {"meta": 1, "_id": 0})
    for spherical in (False, True):
        stage = {"near": near, "distanceField": "dist", "spherical": spherical}
        if max_distance is not None:
            stage["maxDistance"] = max_distance
        yield f"$geoNear spherical={spherical}", lambda coll, stage=stage: coll.aggregate(
            [{"$geoNear": stage}, {"$project": {"meta": 1, "dist": 1, "_id": 0}}])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(["2d", "2dsphere"]), points=POINTS, near=st.tuples(LON, LAT),
       max_distance=st.none() | st.sampled_from([0.05, 1.0, 30.0, 2_000_000.0]))
def test_near_reads_on_buckets_answer_as_on_a_collection(db, kind, points, near, max_distance):
    db.drop_collection("ts")
    db.drop_collection("reg")
    db.create_collection("ts", timeseries={"timeField": "tm", "metaField": "mm"})
    db.ts.create_index([("mm", kind)])
    db.reg.create_index([("meta", kind)])
    # one measurement per meta: one bucket per point
    db.ts.insert_many([{"tm": NOW, "mm": _point(kind, *p)} for p in points])
    db.reg.insert_many([{"meta": _point(kind, *p)} for p in points])
    buckets = db["system.buckets.ts"]
    target = _point(kind, *near)
    for label, read in _reads(kind, target, max_distance):
        expected, got = _answer(lambda read=read: read(db.reg)), _answer(lambda read=read: read(buckets))
        assert _same(got, expected), (label, got, expected)


def test_geo_near_on_buckets_without_a_geo_index_fails_as_on_a_collection(db):
    """No 2d / 2dsphere index on the buckets: $geoNear is 27 IndexNotFound, a $near find 291."""
    db.create_collection("ts", timeseries={"timeField": "tm", "metaField": "mm"})
    db.ts.insert_one({"tm": NOW, "mm": [1, 1]})
    buckets = db["system.buckets.ts"]
    with pytest.raises(OperationFailure) as e:
        list(buckets.aggregate([{"$geoNear": {"near": [0, 0], "distanceField": "d"}}]))
    assert e.value.code == 27
    with pytest.raises(OperationFailure) as e:
        list(buckets.find({"meta": {"$near": [0, 0]}}))
    assert e.value.code == 291
