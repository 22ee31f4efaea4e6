"""$merge on fields other than _id, its ImmutableField and DuplicateKey errors, as mongod 7.0 answers
(DocumentSourceMerge: unique index on the 'on' fields or 51183, 66 when _id would change, 11000 with
keyPattern/keyValue)."""

import datetime as dt

import pytest
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("aggregate")

NO_ID = {"$project": {"_id": 0}}


def failure(coll, pipeline):
    with pytest.raises(OperationFailure) as e:
        list(coll.aggregate(pipeline))
    return e.value


def test_merge_on_a_unique_non_id_field_replaces_and_inserts(db):
    db.target.insert_many([{"_id": 10, "name": "a", "qty": 1}, {"_id": 11, "name": "b", "qty": 2}])
    db.target.create_index("name", unique=True)
    db.src.insert_many([{"_id": 1, "name": "a", "qty": 5}, {"_id": 2, "name": "c", "qty": 7}])
    list(db.src.aggregate([NO_ID, {"$merge": {"into": "target", "on": "name", "whenMatched": "replace"}}]))
    got = {d["name"]: d for d in db.target.find()}
    assert got["a"] == {"_id": 10, "name": "a", "qty": 5}      # the target's _id is kept
    assert got["b"]["qty"] == 2 and got["c"]["qty"] == 7 and got["c"]["_id"] not in (1, 2, 10, 11)
    list(db.src.aggregate([{"$project": {"_id": 0, "name": 1, "extra": "$qty"}},
                           {"$merge": {"into": "target", "on": ["name"], "whenMatched": "merge"}}]))
    assert db.target.find_one({"name": "a"}) == {"_id": 10, "name": "a", "qty": 5, "extra": 5}


def test_merge_on_a_compound_unique_index_from_a_time_series_source(db):
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "host"})
    base = dt.datetime(2024, 1, 1)
    db.ts.insert_many([{"host": h, "t": base + dt.timedelta(hours=i), "v": i} for h in ("x", "y") for i in range(3)])
    db.daily.create_index([("host", 1), ("day", 1)], unique=True)
    db.daily.insert_one({"_id": "keep", "host": "x", "day": base, "total": -1})
    pipeline = [{"$group": {"_id": {"host": "$host", "day": {"$dateTrunc": {"date": "$t", "unit": "day"}}},
                            "total": {"$sum": "$v"}}},
                {"$project": {"_id": 0, "host": "$_id.host", "day": "$_id.day", "total": 1}},
                {"$merge": {"into": "daily", "on": ["day", "host"]}}]
    list(db.ts.aggregate(pipeline))
    got = sorted((d["host"], d["total"], d["_id"] == "keep") for d in db.daily.find())
    assert got == [("x", 3, True), ("y", 3, False)]


@pytest.mark.parametrize("setup", ["none", "missing", "not_unique", "partial", "wrong_fields"])
def test_merge_on_without_a_supporting_unique_index_is_51183(db, setup):
    db.src.insert_one({"name": "a"})
    if setup != "missing":
        db.target.insert_one({"name": "z"})
    if setup == "not_unique":
        db.target.create_index("name")
    elif setup == "partial":
        db.target.create_index("name", unique=True, partialFilterExpression={"name": {"$exists": True}})
    elif setup == "wrong_fields":
        db.target.create_index([("name", 1), ("other", 1)], unique=True)
    e = failure(db.src, [NO_ID, {"$merge": {"into": "target", "on": "name"}}])
    assert (e.code, e.details["errmsg"]) == (51183, "Cannot find index to verify that join fields will be unique")
    assert db.target.count_documents({}) == (0 if setup == "missing" else 1)


@pytest.mark.parametrize("mode,cause", [
    ("replace", "After applying the update, the (immutable) field '_id' was found to have been altered to _id: 1"),
    ("merge", "Performing an update on the path '_id' would modify the immutable field '_id'"),
])
def test_merge_that_would_change_the_id_is_immutable_field(db, mode, cause):
    db.target.insert_one({"_id": 10, "name": "a"})
    db.target.create_index("name", unique=True)
    db.src.insert_one({"_id": 1, "name": "a", "qty": 5})
    e = failure(db.src, [{"$merge": {"into": "target", "on": "name", "whenMatched": mode}}])
    assert e.code == 66
    assert e.details["errmsg"] == ("$merge failed to update the matching document, did you attempt to modify the _id "
                                   f"or the shard key? :: caused by :: {cause}")
    assert db.target.find_one() == {"_id": 10, "name": "a"}


def test_merge_duplicate_key_errors_carry_key_pattern_and_value(db):
    db.target.insert_one({"_id": 1, "name": "a"})
    db.target.create_index("name", unique=True)
    db.src.insert_many([{"_id": 1, "name": "x"}])
    e = failure(db.src, [{"$merge": {"into": "target", "whenMatched": "fail"}}])
    assert e.code == 11000
    assert e.details["keyPattern"] == {"_id": 1} and e.details["keyValue"] == {"_id": 1}
    assert e.details["errmsg"].startswith("$merge with whenMatched: fail found an existing document with the same "
                                          "values for the 'on' fields :: caused by :: E11000 duplicate key error")
    db.src.drop()
    db.src.insert_one({"_id": 2, "name": "a"})   # a new _id whose name collides with the unique index
    e = failure(db.src, [{"$merge": {"into": "target"}}])
    assert e.code == 11000
    assert e.details["keyPattern"] == {"name": 1} and e.details["keyValue"] == {"name": "a"}
    assert e.details["errmsg"].startswith("$merge failed due to a DuplicateKey error :: caused by :: E11000")
    assert list(db.target.find()) == [{"_id": 1, "name": "a"}]


@pytest.mark.parametrize("doc,code", [({"qty": 1}, 51132), ({"name": None}, 51132), ({"name": [1, 2]}, 51185)])
def test_merge_on_values_must_be_present_and_scalar(db, doc, code):
    db.target.create_index("name", unique=True)
    db.src.insert_one(doc)
    assert failure(db.src, [NO_ID, {"$merge": {"into": "target", "on": "name"}}]).code == code


@pytest.mark.parametrize("spec,code", [
    ({"into": "t", "whenMatched": "keepExisting", "whenNotMatched": "fail"}, 51181),
    ({"into": "t", "whenMatched": "fail", "whenNotMatched": "discard"}, 51181),
    ({"into": "t", "on": []}, 51187),
    ({"into": "t", "on": [1]}, 51134),
    ({"into": "t", "on": 1}, 51186),
    ({"into": "t", "on": ["a", "a"]}, 31465),
    ({"into": "t", "let": {"x": 1}}, 51199),
    ({"into": "t", "whenMatched": 5}, 51191),
])
def test_merge_spec_errors(db, spec, code):
    db.src.insert_one({"a": 1})
    assert failure(db.src, [{"$merge": spec}]).code == code
