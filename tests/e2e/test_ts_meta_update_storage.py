"""A time-series meta update stores its buckets as every update stores a document.

mongod 7.0 translates a meta update to an update of the buckets collection (``<metaField>[.x]`` ->
``meta[.x]``: src/mongo/db/timeseries/timeseries_update_delete_util.cpp, translateUpdate) and runs
it there as any update: UpdateStage validates the result for storage (update/storage_validation.cpp:
``$``-prefixed names are refused only at level 1, ``_id`` rules concern the top-level ``_id``; a
meta value is the bucket's ``meta`` field, so a ``$``-prefixed, empty or DBRef-like name inside it
is at level 2 or deeper and stored as given) and the collection's validator checks it (121
DocumentValidationFailure unless the command bypasses validation). Tidemark's meta update wrote its
buckets with a copy of the write steps of an update (size, keys, store) that left out the storage
rules and the buckets' validator: a bucket that fails the validator (made by a direct write with
bypassDocumentValidation) was rewritten by a meta update, which mongod refuses with 121 as it refuses
the same update sent to ``system.buckets`` directly. The meta update now writes through the one write
of an updated document (``collections.replace_doc``).

The family: meta values and paths holding ``$``-prefixed, DBRef and empty names at any depth, set
on a time-series collection and on a regular one: the same (successful) outcome and stored value.
"""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure, WriteError

pytestmark = pytest.mark.commands("update", "insert", "create")

T0 = dt.datetime(2024, 1, 1)
NAMES = ["a", "b", "$x", "$ref", "$id", "$db", "", "_id", "$"]
PATH_NAMES = ["a", "b", "$x", "$ref", "$id", "$db", "_id"]  # a path component is never empty nor "$"

scalars = st.sampled_from([1, "s", None, True, 2.5])
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(NAMES), inner, max_size=3),
    max_leaves=8,
)


def outcome(fn):
    try:
        fn()
    except (OperationFailure, WriteError) as err:
        return err.code
    return "ok"


def setup(db):
    db.ts.drop()
    db.reg.drop()
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    db.ts.insert_one({"t": T0, "m": {"k": 1}, "v": 1})
    db.reg.insert_one({"_id": 1, "m": {"k": 1}})


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=st.lists(st.sampled_from(PATH_NAMES), max_size=3), value=values)
def test_a_meta_update_stores_what_a_regular_update_stores(db, path, value):
    setup(db)
    field = ".".join(["m", *path])
    ts = outcome(lambda: db.ts.update_many({}, {"$set": {field: value}}))
    reg = outcome(lambda: db.reg.update_many({}, {"$set": {field: value}}))
    assert ts == reg == "ok"  # every name is at level 2 or deeper: mongod stores it
    assert db.ts.find_one({}, {"_id": 0, "m": 1}) == db.reg.find_one({}, {"_id": 0, "m": 1})


def test_the_brief_examples_are_stored(db):
    setup(db)
    db.ts.update_many({}, {"$set": {"m.$bad": 1}})
    assert db.ts.find_one()["m"] == {"k": 1, "$bad": 1}
    db.ts.update_many({}, {"$set": {"m": {"$x": 1}}})
    assert db.ts.find_one()["m"] == {"$x": 1}
    with pytest.raises(WriteError) as err:  # a top-level field other than the metaField: 72, not 52
        db.ts.update_many({}, {"$set": {"$bad": 1}})
    assert err.value.code == 72


def invalid_bucket(db):
    """A bucket the buckets' validator refuses (a top-level field it does not allow), written directly
    with bypassDocumentValidation."""
    setup(db)
    db.ts.insert_one({"t": T0, "m": {"k": 2}, "v": 2})
    db.system.buckets.ts.update_many({"meta.k": 2}, {"$set": {"extra": 1}}, bypass_document_validation=True)


def test_a_meta_update_checks_the_buckets_validator(db):
    invalid_bucket(db)
    with pytest.raises(WriteError) as ts_err:
        db.ts.update_many({"m.k": 2}, {"$set": {"m.z": 1}})
    with pytest.raises(WriteError) as direct_err:
        db.system.buckets.ts.update_many({"meta.k": 2}, {"$set": {"meta.z": 1}})
    assert ts_err.value.code == direct_err.value.code == 121
    assert db.ts.count_documents({"m.z": 1}) == 0
    db.ts.update_many({"m.k": 1}, {"$set": {"m.z": 1}})  # a valid bucket still updates
    assert db.ts.count_documents({"m.z": 1}) == 1


def test_a_meta_update_may_bypass_the_validator(db):
    invalid_bucket(db)
    result = db.ts.update_many({"m.k": 2}, {"$set": {"m.z": 1}}, bypass_document_validation=True)
    assert (result.matched_count, result.modified_count) == (1, 1)
    assert db.ts.count_documents({"m.z": 1}) == 1
