"""``$_unpackBucket`` on ``system.buckets.<c>`` (spec §5.1): every aggregate pipeline knows the stage,
and a malformed spec fails with mongod's 56124xx code before anything is read."""

from __future__ import annotations

import datetime as dt

import pytest
from pymongo.errors import OperationFailure

T0 = dt.datetime(2024, 3, 1)

pytestmark = pytest.mark.commands("aggregate")


@pytest.fixture
def buckets(db):
    db.create_collection("c", timeseries={"timeField": "t", "metaField": "m"})
    db.c.insert_many([{"t": T0, "m": "a", "v": 1}, {"t": T0 + dt.timedelta(seconds=1), "m": "b", "v": 2}])
    return db.system.buckets.c


def _code(buckets, spec):
    with pytest.raises(OperationFailure) as info:
        list(buckets.aggregate([{"$_unpackBucket": spec}]))
    return info.value.code


def test_unpack_bucket_on_buckets_returns_the_measurements(buckets):
    out = buckets.aggregate([{"$_unpackBucket": {"timeField": "t", "metaField": "m"}},
                             {"$project": {"_id": 0}}, {"$sort": {"v": 1}}])
    assert list(out) == [{"t": T0, "m": "a", "v": 1}, {"t": T0 + dt.timedelta(seconds=1), "m": "b", "v": 2}]


def test_unpack_bucket_runs_after_a_bucket_level_match(buckets):
    out = buckets.aggregate([{"$match": {"meta": "b"}}, {"$_unpackBucket": {"timeField": "t", "metaField": "m"}},
                             {"$project": {"_id": 0, "v": 1}}])
    assert list(out) == [{"v": 2}]


@pytest.mark.parametrize(
    ("spec", "code"),
    [
        ("t", 5612400),  # not an object
        ({"timeField": 1}, 5612401),
        ({"timeField": "t", "metaField": 1}, 5612402),
        ({"timeField": "t", "metaField": "m.x"}, 5612403),
        ({"timeField": "t", "bogus": 1}, 5612404),
        ({"metaField": "m"}, 5612405),
    ],
)
def test_malformed_unpack_bucket_spec_fails_with_mongod_code(buckets, spec, code):
    assert _code(buckets, spec) == code


def test_unpack_bucket_without_meta_field_on_buckets_with_meta_fails_5369601(buckets):
    assert _code(buckets, {"timeField": "t"}) == 5369601


def test_unpack_bucket_on_a_plain_collection_is_recognized_as_a_stage(db):
    db.plain.insert_one({"x": 1})
    assert _code(db.plain, {"bogus": 1}) == 5612404
