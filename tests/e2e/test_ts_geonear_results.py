"""Issue 25 items 8 and 13: ``$geoNear`` on a time-series collection answers as a regular collection holding the
same documents, on a meta subfield with a 2dsphere index and on a measurement with a 2dsphere index
(jstests/core/timeseries/timeseries_geonear_measurements.js: flat and spherical queries, minDistance,
maxDistance, distanceMultiplier; ``query`` and ``includeLocs`` refused with mongod's codes).
"""

import datetime as dt
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

EARTH_RADIUS_M = 6378.1 * 1000


@pytest.fixture
def colls(db):
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    docs = []
    for i in range(24):
        docs.append({"t": dt.datetime(2024, 1, 1, i % 12), "m": {"loc": {"type": "Point", "coordinates": [i % 6, i % 4]},
                                                               "k": i % 3},
                     "loc": [i * 0.5, (i % 7) - 3], "v": i})
    docs.append({"t": dt.datetime(2024, 1, 2), "m": {"k": 9}, "v": 100})  # neither location
    db.ts.insert_many([dict(d) for d in docs])
    db.reg.insert_many([dict(d) for d in docs])
    for coll in (db.ts, db.reg):
        coll.create_index([("m.loc", "2dsphere")])
        coll.create_index([("loc", "2dsphere")])
    db.reg.create_index([("loc", "2d")])  # the flat queries of a regular collection need one
    return db.ts, db.reg


def _answer(coll, stage, rest=()):
    pipeline = [{"$geoNear": stage}, *rest, {"$project": {"_id": 0}}]
    return [{**d, "d": round(d["d"], 3)} for d in coll.aggregate(pipeline)]


def _same(got, want):
    """Equal answers; documents at the same distance may come in any order."""
    def by_distance(rows):
        return sorted(rows, key=lambda d: (d["d"], d["v"]))
    assert by_distance(got) == by_distance(want)
    assert [d["d"] for d in got] == [d["d"] for d in want]


_near = st.tuples(st.integers(-20, 20), st.integers(-10, 10))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(point=_near, form=st.sampled_from(["geojson", "legacy_spherical", "legacy_flat"]),
       key=st.sampled_from(["m.loc", "loc"]), min_d=st.one_of(st.none(), st.floats(0, 1)),
       max_d=st.one_of(st.none(), st.floats(0, 1)), mult=st.one_of(st.none(), st.sampled_from([2, 0.5])),
       limit=st.one_of(st.none(), st.integers(1, 6)))
@pytest.mark.commands("aggregate")
def test_geo_near_on_a_time_series_collection_answers_as_a_regular_collection(colls, point, form, key, min_d,
                                                                               max_d, mult, limit):
    ts, reg = colls
    if form == "legacy_flat" and key == "m.loc":
        return  # a flat query needs a 2d index: none on a time-series collection (mongod: the same)
    stage = {"key": key, "distanceField": "d"}
    if form == "geojson":
        stage["near"], scale = {"type": "Point", "coordinates": list(point)}, math.pi * EARTH_RADIUS_M
    elif form == "legacy_spherical":
        stage["near"], stage["spherical"], scale = list(point), True, math.pi
    else:
        stage["near"], scale = list(point), 30
    if min_d is not None:
        stage["minDistance"] = min_d * scale
    if max_d is not None:
        stage["maxDistance"] = max_d * scale
    if mult is not None:
        stage["distanceMultiplier"] = mult
    rest = [{"$limit": limit}] if limit else []
    if limit:  # a cut between documents at the same distance may keep either
        full = _answer(reg, stage)
        got = _answer(ts, stage, rest)
        assert [d["d"] for d in got] == [d["d"] for d in full[:limit]]
        return
    _same(_answer(ts, stage), _answer(reg, stage))


@pytest.mark.commands("aggregate")
# mongod refuses `query` on either key and `includeLocs` on a measurement key only
@pytest.mark.parametrize("key, extra, codes", [("m.loc", {"query": {"v": 1}}, (1938439, 5860207)),
                                               ("loc", {"query": {"v": 1}}, (1938439, 5860207)),
                                               ("loc", {"includeLocs": "at"}, (5860208,))])
def test_geo_near_options_refused_on_time_series(colls, key, extra, codes):
    ts, _ = colls
    with pytest.raises(OperationFailure) as err:
        list(ts.aggregate([{"$geoNear": {"near": {"type": "Point", "coordinates": [0, 0]}, "key": key,
                                         "distanceField": "d", **extra}}]))
    assert err.value.code in codes


@pytest.mark.commands("aggregate")
@pytest.mark.parametrize("key", ["m.loc", "loc"])
def test_a_max_distance_of_zero_finds_the_documents_at_the_near_point(colls, key):
    """The time-series rewrite centres its $geoWithin on the near point as written: [1, 1] read back
    from its S2 point is [0.9999999999999998, 1.0], and a zero radius there held no document."""
    ts, reg = colls
    points = {tuple(d["m"]["loc"]["coordinates"]) if key == "m.loc" else tuple(d["loc"])
              for d in reg.find({key: {"$exists": True}})}
    for lng, lat in sorted(points):
        for near, extra in (({"type": "Point", "coordinates": [lng, lat]}, {}), ([lng, lat], {"spherical": True})):
            stage = {"near": near, "key": key, "distanceField": "d", "maxDistance": 0.0, **extra}
            want = _answer(reg, stage)
            assert want and all(d["d"] == 0.0 for d in want), (lng, lat)
            _same(_answer(ts, stage), want)
