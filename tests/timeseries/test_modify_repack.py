"""Repacking a bucket after a partial delete keeps its identity (spec §6.3)."""

import datetime as dt

from bson.objectid import ObjectId

from tidemark.timeseries import modify as md
from tidemark.timeseries.bucketdoc import unpack_document

T, M = "t", "m"
START = dt.datetime(2024, 1, 1, 10, 0)


def _bucket():
    times = [START + dt.timedelta(seconds=s) for s in (5, 10, 20)]
    return {
        "_id": ObjectId(),
        "control": {
            "version": 1,
            "min": {T: START, "x": 1, "_id": 1},
            "max": {T: times[-1], "x": 3, "_id": 3},
        },
        "meta": {"a": 1},
        "data": {
            T: {"0": times[0], "1": times[1], "2": times[2]},
            "x": {"0": 1, "1": 2, "2": 3},
            "_id": {"0": 1, "1": 2, "2": 3},
        },
    }


def test_repack_keeps_id_meta_and_bucket_start_and_recomputes_min_max():
    bucket = _bucket()
    measurements = list(unpack_document(bucket, T, M))
    remaining = [m for m in measurements if m["x"] != 1]
    doc = md.repack(bucket, remaining, T, M)
    assert doc["_id"] == bucket["_id"]
    assert doc["meta"] == {"a": 1}
    assert doc["control"]["min"][T] == START
    assert doc["control"]["min"]["x"] == 2 and doc["control"]["max"]["x"] == 3
    assert doc["control"]["max"][T] == START + dt.timedelta(seconds=20)
    assert list(unpack_document(doc, T, M)) == remaining


def test_repack_of_nothing_means_delete_the_bucket():
    assert md.repack(_bucket(), [], T, M) is None


def test_repack_of_bucket_without_meta_has_no_meta_field():
    bucket = _bucket()
    del bucket["meta"]
    remaining = list(unpack_document(bucket, T, None))[:1]
    doc = md.repack(bucket, remaining, T, None)
    assert "meta" not in doc
    assert md.bucket_measurement_count(doc, T) == 1
