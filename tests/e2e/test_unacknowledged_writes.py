"""w: 0 writes on regular collections: applied, answered with nothing, the connection stays usable."""

import pytest
from pymongo import WriteConcern


@pytest.mark.commands("insert", "update", "delete")
def test_unacknowledged_writes_are_applied_in_order(db):
    unacked = db.get_collection("c", write_concern=WriteConcern(w=0))
    result = unacked.insert_many([{"_id": i, "v": i} for i in range(50)])
    assert not result.acknowledged
    unacked.update_many({"v": {"$lt": 10}}, {"$set": {"small": True}})
    unacked.delete_one({"_id": 49})
    # Requests on one connection run in order, so an acknowledged read afterwards sees them all.
    assert db.c.count_documents({}) == 49
    assert db.c.count_documents({"small": True}) == 10


@pytest.mark.commands("insert")
def test_an_unacknowledged_error_is_dropped_and_the_connection_keeps_working(db):
    db.c.insert_one({"_id": 1})
    unacked = db.get_collection("c", write_concern=WriteConcern(w=0))
    unacked.insert_one({"_id": 1})  # duplicate key: no reply, nothing changes
    unacked.insert_one({"_id": 2})
    assert sorted(d["_id"] for d in db.c.find()) == [1, 2]
