"""A UUID (BinData subtype 4) is a value like any other, wherever it sits.

The server decodes subtype 4 to ``uuid.UUID`` (protocol/codec.py, STANDARD); a few places encoded values
with pymongo's default options instead of the project's one codec, which refuse ``uuid.UUID``:

- an insert into a collection with a hashed index on a field holding a UUID, and a find by it (hashed
  keys): 1 InternalError — a common shape (UUID ids, hashed shard-key indexes);
- a time-series ``$group`` over buckets whose meta holds a UUID (the meta's group token), and the columnar
  group and newest-first paths (found by porting timeseries_group_bson_types.js and a meta fuzzer);
- ``$indexStats`` of an index whose partial filter names a UUID.

Every ``bson.encode`` of the server now goes through ``protocol.codec.encode``. Property: with a UUID
placed as the meta, inside it, in an array or as a measurement, each pipeline of a corpus answers on the
time-series collection what it answers on a regular collection holding the same documents; a hashed and
a partial index over UUIDs index and find them.
"""

from __future__ import annotations

import datetime as dt
import uuid

import pytest
from bson.binary import Binary, UuidRepresentation
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.commands("insert", "aggregate", "find", "createIndexes", "distinct")

T0 = dt.datetime(2024, 1, 1)
PLACEMENTS = {
    "meta": lambda u, i: {"m": u if i % 2 else f"s{i}"},
    "meta field": lambda u, i: {"m": {"id": u, "k": i % 3}},
    "meta array": lambda u, i: {"m": [u, i % 2]},
    "measurement": lambda u, i: {"m": i % 2, "u": u},
}
PIPELINES = [
    [{"$group": {"_id": None, "n": {"$sum": 1}}}],
    [{"$group": {"_id": "$m", "n": {"$sum": 1}, "v": {"$max": "$v"}}}],
    [{"$group": {"_id": {"$dateTrunc": {"date": "$t", "unit": "hour"}}, "mx": {"$max": "$v"}, "u": {"$first": "$u"}}}],
    [{"$group": {"_id": {"$dateTrunc": {"date": "$t", "unit": "hour"}}, "mx": {"$max": "$v"}}},
     {"$sort": {"_id": -1}}, {"$limit": 2}],
    [{"$sort": {"m": 1, "t": -1}}, {"$group": {"_id": "$m", "last": {"$first": "$v"}}}],
    [{"$match": {"m.id": {"$exists": True}}}, {"$group": {"_id": "$m.id", "n": {"$sum": 1}}}],
    [{"$group": {"_id": "$u", "n": {"$sum": 1}}}],
    [{"$project": {"_id": 0, "s": {"$bsonSize": "$$ROOT"}, "ty": {"$type": "$m"}}}],
]


@pytest.fixture(scope="module")
def udb(server):
    with server.client(uuidRepresentation="standard") as mongo:  # (uuid.UUID values both ways)
        mongo.drop_database("uuid_values")
        yield mongo["uuid_values"]
        mongo.drop_database("uuid_values")


def _normal(docs: list[dict]) -> list:
    return sorted(repr(sorted(d.items())) for d in docs)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(placement=st.sampled_from(sorted(PLACEMENTS)), n=st.integers(1, 8), settle=st.booleans())
def test_a_uuid_anywhere_answers_as_in_a_regular_collection(udb, placement, n, settle):
    db = udb
    u = uuid.uuid4()
    docs = [{"t": T0 + dt.timedelta(minutes=20 * i), "v": i, **PLACEMENTS[placement](u, i)} for i in range(n)]
    for name in ("ts", "reg"):
        db.drop_collection(name)
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    db.ts.insert_many([dict(d) for d in docs])
    db.reg.insert_many([dict(d) for d in docs])
    if settle:
        db.ts.delete_many({"_id": "none"})  # a direct write: every bucket stored
    for pipeline in PIPELINES:
        ts = list(db.ts.aggregate(pipeline))
        reg = list(db.reg.aggregate(pipeline))
        if pipeline[-1].get("$limit"):  # (ordered)
            assert ts == reg, pipeline
        else:
            assert _normal(ts) == _normal(reg), pipeline


def test_hashed_and_partial_indexes_over_uuids(udb):
    db = udb
    u = uuid.uuid4()
    db.drop_collection("h")
    db.h.create_index([("a", "hashed")])
    db.h.create_index("b", partialFilterExpression={"c": Binary.from_uuid(u, UuidRepresentation.STANDARD)})
    db.h.insert_many([{"_id": 1, "a": u, "b": 1, "c": u}, {"_id": 2, "a": uuid.uuid4(), "b": 2}])
    assert [d["_id"] for d in db.h.find({"a": u})] == [1]
    assert db.h.find({"a": u}).explain()["queryPlanner"]["winningPlan"]["inputStage"]["indexName"] == "a_hashed"
    assert [d["_id"] for d in db.h.find({"b": 1, "c": u}).hint("b_1")] == [1]
    stats = {s["name"]: s for s in db.h.aggregate([{"$indexStats": {}}])}
    assert set(stats) == {"_id_", "a_hashed", "b_1"}
    assert db.h.distinct("a", {"_id": 1}) == [u]
