"""Every write of a bucket document to ``system.buckets.<c>`` stores what readers can read.

A compressed bucket (control.version 2, BSONColumn data: what mongod 7.0 writes and a 7.0 mongodump
holds) was decompressed when inserted, but stored as given when it came through an update, a
replacement, an upsert or findAndModify, and from then on every read of the collection answered
1 InternalError (a BSONColumn read as a document). A v1 bucket whose data field is not an object of
rows did the same. Now each write stores the v1 form, and a bucket no reader could unpack is refused
with a MongoDB code, changing nothing (mongod accepts it and fails every read of it instead).

The family: a valid compressed bucket through each write path reads back as its measurements; and
(Hypothesis) a data field or the version replaced by any value, through any write path, is either
refused or stored, and every read of the collection then answers — never code 1.
"""

from __future__ import annotations

import copy
import datetime as dt

import pytest
from bson.binary import Binary
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo import ReturnDocument
from pymongo.errors import OperationFailure

from tidemark.timeseries.bsoncolumn_encode import encode_column

pytestmark = pytest.mark.commands("insert", "update", "findAndModify", "find", "aggregate", "validate")

T0 = dt.datetime(2024, 1, 1)
ROWS = [{"t": T0 + dt.timedelta(seconds=i), "m": 0, "v": i * 1.5} for i in range(3)]


def _setup(db) -> dict:
    db.drop_collection("ts")
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    db.ts.insert_many(copy.deepcopy(ROWS))
    bucket = db.system.buckets.ts.find_one()
    db.system.buckets.ts.delete_many({})
    return bucket


def _compressed(bucket: dict) -> dict:
    out = copy.deepcopy(bucket)
    out["control"]["version"], out["control"]["count"] = 2, 3
    out["data"] = {name: Binary(encode_column([column[str(i)] for i in range(3)]), 7)
                   for name, column in bucket["data"].items()}
    return out


def _write(db, path: str, doc: dict) -> None:
    buckets = db.system.buckets.ts
    if path == "insert":
        buckets.insert_one(doc)
        return
    if path == "upsert":
        buckets.replace_one({"_id": doc["_id"]}, doc, upsert=True)
        return
    placeholder = {**copy.deepcopy(doc), "data": {}, "control": {**doc["control"], "version": 1}}
    placeholder["control"].pop("count", None)
    buckets.insert_one(placeholder)
    if path == "replace":
        buckets.replace_one({"_id": doc["_id"]}, doc)
    elif path == "update":
        buckets.update_one({"_id": doc["_id"]}, {"$set": {"control": doc["control"], "data": doc["data"]}})
    else:
        buckets.find_one_and_replace({"_id": doc["_id"]}, doc, return_document=ReturnDocument.AFTER)


PATHS = ["insert", "upsert", "replace", "update", "findAndModify"]


@pytest.mark.parametrize("path", PATHS)
def test_a_compressed_bucket_reads_back_through_every_write(db, path):
    bucket = _setup(db)
    _write(db, path, _compressed(bucket))
    assert list(db.ts.find({}, {"_id": 0}).sort("t", 1)) == ROWS
    assert db.system.buckets.ts.find_one()["control"]["version"] == 1
    assert db.command("validate", "ts")["nNonCompliantDocuments"] == 0


VALUES = st.one_of(st.integers(-5, 5), st.floats(allow_nan=False), st.text(max_size=3), st.none(), st.booleans(),
                   st.just(Int64(3)), st.just(Decimal128("2")), st.just(T0),
                   st.binary(max_size=12).map(lambda b: Binary(b, 7)), st.binary(max_size=4).map(lambda b: Binary(b, 0)),
                   st.lists(st.integers(0, 3), max_size=3),
                   st.dictionaries(st.sampled_from(["0", "1", "2", "x", "-1"]), st.integers(0, 9), max_size=3))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=st.sampled_from(PATHS), field=st.sampled_from(["t", "v", "_id", "w"]), value=VALUES,
       version=st.sampled_from([1, 2, 3]), compressed=st.booleans())
def test_no_bucket_a_write_stores_fails_a_read(db, path, field, value, version, compressed):
    bucket = _setup(db)
    doc = _compressed(bucket) if compressed else copy.deepcopy(bucket)
    doc["data"][field] = value
    doc["control"]["version"] = version
    try:
        _write(db, path, doc)
    except OperationFailure as refused:
        assert refused.code not in (1, None)
    reads = [lambda: list(db.ts.find()), lambda: list(db.ts.find({"v": {"$gt": 0}})),
             lambda: list(db.ts.aggregate([{"$group": {"_id": "$m", "n": {"$sum": 1}, "top": {"$max": "$v"}}}])),
             lambda: list(db.ts.find().sort("t", -1).limit(1)), lambda: db.ts.count_documents({}),
             lambda: db.ts.distinct("v"), lambda: db.command("validate", "ts"),
             lambda: db.ts.update_many({"m": 0}, {"$set": {"m": 1}})]
    for read in reads:
        try:
            read()
        except OperationFailure as failure:
            assert failure.code != 1, failure.details
