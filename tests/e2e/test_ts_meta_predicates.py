"""Predicates on meta subfields of a time-series collection answer what a regular collection with the same
documents answers (issue 25 item 8): the meta pushdown rewrites every match expression node kind onto the
buckets' ``meta`` (geo included), or leaves what it cannot to the per-measurement filter — never an
InternalError. Generated with Hypothesis (``harness.meta_predicates``) for find, count and aggregate."""

import pytest
from harness.meta_predicates import measurements, meta_filters, mixed_filters
from hypothesis import HealthCheck, given, settings
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("find", "aggregate", "count", "delete")

SETTINGS = settings(max_examples=250, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


@pytest.fixture(scope="module")
def collections(client):
    name = "ts_meta_predicates"
    client.drop_database(name)
    database = client[name]
    database.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    docs = measurements()
    database.ts.insert_many([dict(d) for d in docs])
    database.reg.insert_many([dict(d) for d in docs])
    yield database.ts, database.reg
    client.drop_database(name)


def answers(coll, flt):
    """(ids of find, count, ids of an aggregate $match) or the error code."""
    try:
        found = sorted(d["_id"] for d in coll.find(flt, {"_id": 1}))
        counted = coll.count_documents(flt)
        matched = sorted(d["_id"] for d in coll.aggregate([{"$match": flt}, {"$project": {"_id": 1}}]))
        return found, counted, matched
    except OperationFailure as exc:
        assert exc.code != 1, (flt, exc.details)
        return exc.code


@pytest.mark.slow
@SETTINGS
@given(flt=meta_filters)
def test_meta_predicates_answer_as_a_regular_collection(collections, flt):
    ts, reg = collections
    assert answers(ts, flt) == answers(reg, flt), flt


@pytest.mark.slow
@SETTINGS
@given(flt=mixed_filters)
def test_meta_predicates_mixed_with_measurement_predicates_answer_as_a_regular_collection(collections, flt):
    ts, reg = collections
    assert answers(ts, flt) == answers(reg, flt), flt


GEO_ON_META = [
    {"m.loc": {"$geoWithin": {"$box": [[0, 0], [3, 3]]}}},
    {"m.loc": {"$within": {"$center": [[2, 2], 2]}}},
    {"m.loc": {"$geoWithin": {"$centerSphere": [[2, 2], 0.05]}}},
    {"m.loc": {"$geoWithin": {"$polygon": [[0, 0], [9, 0], [9, 9]]}}},
    {"m.loc": {"$geoIntersects": {"$geometry": {"type": "Polygon",
                                                "coordinates": [[[0, 0], [4, 0], [4, 4], [0, 4], [0, 0]]]}}}},
    {"$or": [{"m.loc": {"$geoWithin": {"$box": [[0, 0], [3, 3]]}}}, {"v": 3}]},
    {"$and": [{"m.loc": {"$geoWithin": {"$box": [[0, 0], [6, 6]]}}}, {"m.a": {"$gte": 1}}]},
    {"m.loc": {"$not": {"$geoWithin": {"$box": [[0, 0], [3, 3]]}}}},
]


@pytest.mark.parametrize("flt", GEO_ON_META)
def test_geo_predicates_on_meta_answer_as_a_regular_collection(collections, flt):
    ts, reg = collections
    expected = answers(reg, flt)
    assert expected[0], "the example selects something"
    assert answers(ts, flt) == expected


@pytest.mark.parametrize("flt", GEO_ON_META)
def test_deletes_by_geo_predicates_on_meta_delete_what_a_regular_collection_deletes(db, flt):
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    docs = measurements()
    db.ts.insert_many([dict(d) for d in docs])
    db.reg.insert_many([dict(d) for d in docs])
    assert db.ts.delete_many(flt).deleted_count == db.reg.delete_many(flt).deleted_count
    assert sorted(d["_id"] for d in db.ts.find()) == sorted(d["_id"] for d in db.reg.find())


def test_near_on_a_time_series_collection_is_refused_as_on_a_view(collections):
    ts, _ = collections
    with pytest.raises(OperationFailure) as exc:
        list(ts.find({"m.loc": {"$near": [0, 0], "$maxDistance": 3}}))
    assert exc.value.code == 5626500
