"""A write's query is optimized as a find's is (mongod's optimize folds each $expr's constant
sub-expressions): an invalid constant fails the update, delete or findAndModify even when no document
reaches it, and nothing is written; a collection validator is not folded (test_jstests_json_schema)."""

import pytest
from pymongo.errors import OperationFailure, WriteError

pytestmark = pytest.mark.commands("update", "delete", "findAndModify")

BAD = {"$or": [{"a": 1}, {"$expr": {"$divide": [1, 0]}}]}


@pytest.mark.parametrize("write", ["update", "delete", "findAndModify"])
def test_an_invalid_constant_in_a_write_query_fails_it(db, write):
    db.c.insert_one({"a": 1})
    with pytest.raises((OperationFailure, WriteError)) as err:
        if write == "update":
            db.c.update_many(BAD, {"$set": {"b": 1}})
        elif write == "delete":
            db.c.delete_many(BAD)
        else:
            db.c.find_one_and_update(BAD, {"$set": {"b": 1}})
    assert err.value.code == 2 and "divide by zero" in str(err.value)
    assert list(db.c.find({}, {"_id": 0})) == [{"a": 1}]


def test_a_constant_that_evaluates_fine_changes_nothing(db):
    db.c.insert_many([{"a": 1}, {"a": 2}])
    assert db.c.update_many({"$expr": {"$eq": ["$a", {"$add": [1, 1]}]}}, {"$set": {"b": 1}}).modified_count == 1
    assert db.c.delete_many({"$and": [{"$expr": {"$lt": [{"$multiply": [2, 3]}, 7]}}, {"a": 1}]}).deleted_count == 1
