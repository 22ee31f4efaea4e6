"""Update/delete statements cut into many tiny slices (an in-process server whose slice budget is 3
matches): every plan kind resumes where it stopped and visits each document exactly once, and the
results equal those of one big slice."""

from __future__ import annotations

import pytest
from pymongo import ASCENDING, DESCENDING, DeleteMany, UpdateMany, UpdateOne

from tidemark.commands import _write_slices

pytestmark = pytest.mark.commands("update", "delete")


@pytest.fixture
def tiny(monkeypatch, tidemark_db):
    monkeypatch.setattr(_write_slices, "SLICE_MATCHES", 3)
    coll = tidemark_db.c
    coll.create_index([("x", ASCENDING)])
    coll.create_index([("tags", DESCENDING)])
    coll.insert_many([{"_id": i, "x": i % 50, "tags": [i, i + 100]} for i in range(200)])
    return coll


def test_every_plan_kind_resumes_and_visits_each_document_once(tiny):
    cases = [
        ({}, None, 200),                                       # collection scan
        ({}, {"$natural": -1}, 200),                           # ... backwards
        ({"x": {"$in": [3, 7, 40]}}, "x_1", 12),               # index, several intervals
        ({"x": {"$gte": 10, "$lt": 5000}}, "x_1", 160),        # documents moved ahead in the scanned range
        ({"tags": {"$gte": 50}}, "tags_-1", 200 - 0),          # multikey (two entries per document)
        ({"$or": [{"x": {"$lt": 5}}, {"tags": {"$gte": 250}}]}, None, 20 + 50 - 5),  # index union
    ]
    for i, (flt, hint, expected) in enumerate(cases):
        kwargs = {"hint": hint} if hint is not None else {}
        result = tiny.update_many(flt, {"$inc": {f"c{i}": 1, "x": 1000}}, **kwargs)
        assert result.matched_count == result.modified_count == expected, (flt, hint)
        assert tiny.count_documents({f"c{i}": 1}) == expected and tiny.count_documents({f"c{i}": {"$gt": 1}}) == 0
        tiny.update_many({}, {"$inc": {"x": -1000}}, hint={"$natural": 1})  # back to 0..49 (moved ones only)
        tiny.update_many({"x": {"$lt": 0}}, {"$inc": {"x": 1000}})


def test_single_statements_upserts_bulks_and_deletes_across_tiny_slices(tiny):
    assert tiny.update_one({"tags": 299}, {"$set": {"late": 1}}).modified_count == 1  # found late in the scan
    assert tiny.update_one({"nothing": 1}, {"$set": {"v": 1}}, upsert=True).upserted_id is not None
    assert tiny.count_documents({"nothing": 1}) == 1
    result = tiny.bulk_write([UpdateMany({"x": {"$lt": 10}}, {"$set": {"a": 1}}),
                              UpdateOne({"_id": 5}, {"$set": {"b": 1}}),
                              UpdateMany({"x": {"$gte": 10}}, {"$set": {"a": 2}}),
                              DeleteMany({"x": 49})], ordered=True)
    assert result.matched_count == 40 + 1 + 160 and result.deleted_count == 4
    assert tiny.count_documents({"a": 1}) == 40 and tiny.count_documents({"a": 2}) == 156
    assert tiny.delete_many({"x": {"$gte": 0}}).deleted_count == 196
    assert tiny.delete_many({}).deleted_count == 1  # the upserted document
    assert tiny.count_documents({}) == 0
