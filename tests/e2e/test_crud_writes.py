"""update, delete, findAndModify, count and distinct end to end through pymongo."""

from __future__ import annotations

import datetime

import pytest
from bson.int64 import Int64
from pymongo import ReturnDocument
from pymongo.errors import DuplicateKeyError, OperationFailure, WriteError


@pytest.fixture
def people(db):
    db.p.insert_many(
        [
            {"_id": 1, "name": "ann", "age": 30, "tags": ["a", "b"]},
            {"_id": 2, "name": "bob", "age": 25, "tags": ["b"]},
            {"_id": 3, "name": "cid", "age": 35, "tags": []},
        ]
    )
    return db.p


@pytest.mark.commands("update")
def test_update_one_with_operators_reports_n_and_nmodified(people):
    res = people.update_one({"_id": 1}, {"$inc": {"age": 1}, "$push": {"tags": "c"}})
    assert (res.matched_count, res.modified_count) == (1, 1)
    assert people.find_one({"_id": 1}) == {"_id": 1, "name": "ann", "age": 31, "tags": ["a", "b", "c"]}


@pytest.mark.commands("update")
def test_update_that_changes_nothing_is_matched_not_modified(people):
    res = people.update_one({"_id": 1}, {"$set": {"age": 30}})
    assert (res.matched_count, res.modified_count) == (1, 0)


@pytest.mark.commands("update")
def test_update_many_and_replacement(people):
    assert people.update_many({"age": {"$gte": 30}}, {"$set": {"old": True}}).modified_count == 2
    people.replace_one({"_id": 2}, {"name": "bobby"})
    assert people.find_one({"_id": 2}) == {"_id": 2, "name": "bobby"}


@pytest.mark.commands("update")
def test_upsert_uses_query_equality_fields(people):
    res = people.update_one({"name": "dan", "age": 40}, {"$set": {"x": 1}}, upsert=True)
    assert res.upserted_id is not None and res.matched_count == 0
    doc = people.find_one({"_id": res.upserted_id})
    assert {k: doc[k] for k in ("name", "age", "x")} == {"name": "dan", "age": 40, "x": 1}


@pytest.mark.commands("update")
def test_raw_update_reply_has_upserted_with_index(people):
    reply = people.database.command(
        "update",
        "p",
        updates=[
            {"q": {"_id": 1}, "u": {"$set": {"k": 1}}},
            {"q": {"_id": 9}, "u": {"$set": {"k": 2}}, "upsert": True},
        ],
    )
    assert reply["n"] == 2 and reply["nModified"] == 1
    assert reply["upserted"] == [{"index": 1, "_id": 9}]


@pytest.mark.commands("update")
def test_update_with_array_filters(db):
    db.g.insert_one({"_id": 1, "grades": [95, 102, 90, 150]})
    db.g.update_one({"_id": 1}, {"$set": {"grades.$[el]": 100}}, array_filters=[{"el": {"$gte": 100}}])
    assert db.g.find_one()["grades"] == [95, 100, 90, 100]


@pytest.mark.commands("update")
def test_update_of_immutable_id_is_66_write_error(people):
    with pytest.raises(WriteError) as e:
        people.update_one({"_id": 1}, {"$set": {"_id": 5}})
    assert e.value.code == 66


@pytest.mark.commands("update")
def test_unknown_update_operator_is_failed_to_parse(people):
    with pytest.raises(WriteError) as e:
        people.update_one({"_id": 1}, {"$foo": {"a": 1}})
    assert e.value.code == 9


@pytest.mark.commands("update")
def test_update_violating_unique_index_leaves_document_unchanged(people):
    people.create_index("name", unique=True)
    with pytest.raises(DuplicateKeyError) as e:
        people.update_one({"_id": 2}, {"$set": {"name": "ann", "age": 99}})
    assert e.value.details["keyPattern"] == {"name": 1}
    assert people.find_one({"_id": 2})["age"] == 25
    assert people.database.command("validate", "p")["valid"]


@pytest.mark.commands("update")
def test_bucket_pattern_upsert_inc_creates_one_document_per_page_minute(db):
    minutes = [datetime.datetime(2024, 1, 1, 0, m) for m in range(3)]
    for _round in range(4):
        for page in ("/index.htm", "/about.htm"):
            for minute in minutes:
                db.hits.update_one(
                    {"page": page, "timestamp": minute},
                    {"$inc": {"seconds.2": 1, "totalViews": 1}},
                    upsert=True,
                )
    docs = list(db.hits.find({}, {"_id": 0}))
    assert len(docs) == 6
    for d in docs:
        assert d["totalViews"] == 4 and d["seconds"] == {"2": 4}


@pytest.mark.commands("update")
def test_preallocated_bucket_documents_update_in_place(db):
    db.hits.insert_one({"_id": "b1", "page": "/", "seconds": [0] * 60, "totalViews": 0})
    for s in (0, 5, 5, 59):
        db.hits.update_one({"_id": "b1"}, {"$inc": {f"seconds.{s}": 1, "totalViews": 1}})
    doc = db.hits.find_one({"_id": "b1"})
    assert doc["totalViews"] == 4 and doc["seconds"][5] == 2 and doc["seconds"][59] == 1
    assert len(doc["seconds"]) == 60


@pytest.mark.commands("delete")
def test_delete_one_and_many(people):
    assert people.delete_one({"age": {"$gt": 20}}).deleted_count == 1
    assert people.delete_many({}).deleted_count == 2
    assert list(people.find()) == []


@pytest.mark.commands("delete")
def test_delete_limit_must_be_0_or_1(people):
    with pytest.raises(OperationFailure) as e:
        people.database.command("delete", "p", deletes=[{"q": {}, "limit": 2}])
    assert e.value.code == 9


@pytest.mark.commands("delete")
def test_delete_removes_index_entries(people):
    people.create_index("age")
    people.delete_many({"age": {"$lt": 31}})
    assert [d["_id"] for d in people.find({"age": {"$gte": 0}})] == [3]
    assert people.database.command("validate", "p")["keysPerIndex"]["age_1"] == 1


@pytest.mark.commands("findAndModify")
def test_find_one_and_update_returns_before_or_after(people):
    before = people.find_one_and_update({"_id": 1}, {"$inc": {"age": 5}})
    assert before["age"] == 30
    after = people.find_one_and_update(
        {"_id": 1},
        {"$inc": {"age": 5}},
        return_document=ReturnDocument.AFTER,
        projection={"age": 1, "_id": 0},
    )
    assert after == {"age": 40}


@pytest.mark.commands("findAndModify")
def test_find_and_modify_sort_picks_first(people):
    doc = people.find_one_and_delete({}, sort=[("age", -1)])
    assert doc["_id"] == 3


@pytest.mark.commands("findAndModify")
def test_find_and_modify_upsert_and_last_error_object(people):
    reply = people.database.command(
        "findAndModify", "p", query={"_id": 50}, update={"$set": {"z": 1}}, upsert=True, new=True
    )
    assert reply["value"] == {"_id": 50, "z": 1}
    assert reply["lastErrorObject"] == {"n": 1, "updatedExisting": False, "upserted": 50}
    reply = people.database.command("findAndModify", "p", query={"_id": 50}, update={"$set": {"z": 2}})
    assert reply["lastErrorObject"] == {"n": 1, "updatedExisting": True}
    assert reply["value"]["z"] == 1


@pytest.mark.commands("findAndModify")
def test_find_and_modify_argument_errors(people):
    for args, code in (
        ({"remove": True, "update": {"$set": {"a": 1}}}, 9),
        ({}, 9),
        ({"remove": True, "new": True}, 9),
    ):
        with pytest.raises(OperationFailure) as e:
            people.database.command("findAndModify", "p", query={}, **args)
        assert e.value.code == code


@pytest.mark.commands("count")
def test_count_with_query_skip_limit(people):
    db = people.database
    assert db.command("count", "p")["n"] == 3
    assert db.command("count", "p", query={"age": {"$gt": 26}})["n"] == 2
    assert db.command("count", "p", skip=1, limit=1)["n"] == 1
    assert db.command("count", "missing")["n"] == 0
    assert people.estimated_document_count() == 3


@pytest.mark.commands("distinct")
def test_distinct_expands_arrays_and_dedupes_numbers(db):
    db.d.insert_many(
        [{"v": 1}, {"v": 1.0}, {"v": Int64(1)}, {"v": [2, 3]}, {"v": "x"}, {"w": 1}, {"v": {"a": 1}}]
    )
    values = db.d.distinct("v")
    assert len(values) == 5 and values[:3] == [1, 2, 3]
    assert db.d.distinct("v", {"v": {"$type": "string"}}) == ["x"]


@pytest.mark.commands("distinct")
def test_distinct_key_must_be_string(db):
    with pytest.raises(OperationFailure) as e:
        db.command("distinct", "d", key=1)
    assert e.value.code == 14


@pytest.mark.commands("update", "delete")
def test_let_variables_in_update_and_delete_filters(people):
    db = people.database
    db.command("update", "p", updates=[{"q": {"$expr": {"$eq": ["$name", "$$who"]}}, "u": {"$set": {"hit": 1}}}],
               let={"who": "bob"})
    assert people.find_one({"hit": 1})["_id"] == 2
    reply = db.command("delete", "p", deletes=[{"q": {"$expr": {"$gt": ["$age", "$$min"]}}, "limit": 0}],
                       let={"min": 29})
    assert reply["n"] == 2


@pytest.mark.commands("update")
def test_concurrent_bucket_upserts_never_duplicate_a_bucket(server, db):
    import threading

    minute = datetime.datetime(2024, 1, 1, 12, 0)

    def hammer():
        client = server.client(maxPoolSize=1)
        try:
            coll = client[db.name].hits
            for i in range(40):
                coll.update_one({"page": f"/p{i % 3}", "timestamp": minute},
                                {"$inc": {"seconds.7": 1, "totalViews": 1}}, upsert=True)
        finally:
            client.close()

    threads = [threading.Thread(target=hammer) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    docs = sorted(db.hits.find({}, {"_id": 0}), key=lambda d: d["page"])
    assert [d["page"] for d in docs] == ["/p0", "/p1", "/p2"]
    assert sum(d["totalViews"] for d in docs) == 320
    assert all(d["seconds"]["7"] == d["totalViews"] for d in docs)


@pytest.mark.commands("update", "delete")
def test_statement_shape_errors_fail_the_whole_command(people):
    db = people.database
    with pytest.raises(OperationFailure) as e:
        db.command("update", "p", updates=[{"q": {}}])
    assert e.value.code == 40414
    with pytest.raises(OperationFailure) as e:
        db.command("delete", "p", deletes=[{"q": {}}])
    assert e.value.code == 40414
    with pytest.raises(OperationFailure) as e:
        db.command("update", "p", updates=[])
    assert e.value.code == 16
