"""insert and find end to end through pymongo: replies, cursors, options and errors."""

from __future__ import annotations

import pymongo
import pytest
from bson.int64 import Int64
from bson.objectid import ObjectId
from pymongo.errors import BulkWriteError, DuplicateKeyError, OperationFailure

pytestmark = pytest.mark.commands("insert", "find", "getMore", "killCursors")


def test_insert_generates_object_id_and_find_returns_documents(db):
    res = db.c.insert_one({"a": 1})
    assert isinstance(res.inserted_id, ObjectId)
    assert db.c.find_one({"a": 1}) == {"_id": res.inserted_id, "a": 1}


def test_insert_reply_counts_and_writes_errors_with_index(db):
    reply = db.command("insert", "c", documents=[{"_id": 1}, {"_id": 1}, {"_id": 2}], ordered=False)
    assert reply["n"] == 2
    [err] = reply["writeErrors"]
    assert err["index"] == 1 and err["code"] == 11000
    assert err["keyPattern"] == {"_id": 1} and err["keyValue"] == {"_id": 1}
    assert err["errmsg"].startswith(
        f"E11000 duplicate key error collection: {db.name}.c index: _id_ dup key: {{ _id: 1 }}"
    )


def test_ordered_insert_stops_at_first_error(db):
    with pytest.raises(BulkWriteError) as e:
        db.c.insert_many([{"_id": 1}, {"_id": 1}, {"_id": 3}])
    assert e.value.details["nInserted"] == 1
    assert sorted(d["_id"] for d in db.c.find()) == [1]


def test_insert_creates_collection_implicitly(db):
    db.newcoll.insert_one({"x": 1})
    assert "newcoll" in db.list_collection_names()


def test_id_array_write_error(db):
    reply = db.command("insert", "c", documents=[{"_id": [1]}, {"_id": 2}], ordered=False)
    assert reply["n"] == 1 and reply["writeErrors"][0]["code"] == 53


def test_document_over_16mib_is_refused_with_10334(db):
    big = {"_id": 1, "s": "x" * (16 * 1024 * 1024)}
    with pytest.raises(pymongo.errors.PyMongoError) as e:
        db.c.insert_one(big)
    assert "10334" in str(e.value) or getattr(e.value, "code", None) == 10334 or "too large" in str(e.value)
    assert list(db.c.find()) == []


def test_transaction_numbers_are_refused_on_standalone(db):
    with pytest.raises(OperationFailure) as e:
        db.command(
            {
                "insert": "c",
                "documents": [{"a": 1}],
                "lsid": {"id": __import__("uuid").uuid4()},
                "txnNumber": Int64(1),
                "startTransaction": True,
                "autocommit": False,
            }
        )
    assert e.value.code == 20
    assert "Transaction numbers are only allowed on a replica set member or mongos" in str(e.value)


@pytest.fixture
def hundred(db):
    db.c.insert_many(
        [{"_id": i, "n": i, "g": i % 5, "arr": [i, -i], "sub": {"k": i % 3}} for i in range(250)]
    )
    return db.c


def test_default_first_batch_is_101_and_getmore_drains(hundred):
    reply = hundred.database.command("find", "c")
    assert len(reply["cursor"]["firstBatch"]) == 101
    assert isinstance(reply["cursor"]["id"], Int64) and reply["cursor"]["id"] != 0
    more = hundred.database.command("getMore", reply["cursor"]["id"], collection="c")
    assert len(more["cursor"]["nextBatch"]) == 149
    assert more["cursor"]["id"] == 0


def test_batch_size_and_single_batch(hundred):
    reply = hundred.database.command("find", "c", batchSize=7)
    assert len(reply["cursor"]["firstBatch"]) == 7
    reply = hundred.database.command("find", "c", batchSize=7, singleBatch=True)
    assert len(reply["cursor"]["firstBatch"]) == 7 and reply["cursor"]["id"] == 0


def test_exhausted_cursor_has_int64_zero_id(hundred):
    reply = hundred.database.command("find", "c", filter={"n": {"$lt": 3}})
    assert reply["cursor"]["id"] == 0 and isinstance(reply["cursor"]["id"], Int64)


def test_filter_sort_skip_limit_projection(hundred):
    docs = list(hundred.find({"g": 2}, {"n": 1, "_id": 0}).sort("n", -1).skip(3).limit(4))
    assert docs == [{"n": n} for n in (232, 227, 222, 217)]


def test_sort_on_multiple_keys(hundred):
    docs = list(hundred.find({"n": {"$lt": 10}}, {"_id": 0, "g": 1, "n": 1}).sort([("g", 1), ("n", -1)]))
    assert [(d["g"], d["n"]) for d in docs][:4] == [(0, 5), (0, 0), (1, 6), (1, 1)]


def test_dotted_filter_and_array_match(hundred):
    assert len(list(hundred.find({"sub.k": 1}))) == len([i for i in range(250) if i % 3 == 1])
    assert [d["_id"] for d in hundred.find({"arr": -7})] == [7]


def test_kill_cursors_reports_killed(hundred):
    cur = hundred.database.command("find", "c", batchSize=2)
    cid = cur["cursor"]["id"]
    reply = hundred.database.command("killCursors", "c", cursors=[cid])
    assert reply["cursorsKilled"] == [cid]
    with pytest.raises(OperationFailure) as e:
        hundred.database.command("getMore", cid, collection="c")
    assert e.value.code == 43


def test_pymongo_iterates_large_result_across_batches(hundred):
    assert [d["_id"] for d in hundred.find().batch_size(13)] == list(range(250))


def test_hint_by_name_and_unknown_hint(hundred):
    hundred.create_index("g")
    assert len(list(hundred.find({"g": 1}).hint("g_1"))) == 50
    assert len(list(hundred.find({"g": 1}).hint([("g", 1)]))) == 50
    with pytest.raises(OperationFailure) as e:
        list(hundred.find({"g": 1}).hint("nope"))
    assert e.value.code == 2


def test_min_max_with_hint_bound_the_index_range(hundred):
    hundred.create_index("n")
    docs = list(hundred.find().min([("n", 10)]).max([("n", 14)]).hint([("n", 1)]))
    assert [d["n"] for d in docs] == [10, 11, 12, 13]


def test_natural_sort_and_hint(hundred):
    docs = list(hundred.find().sort("$natural", -1).limit(2))
    assert [d["_id"] for d in docs] == [249, 248]


def test_let_variables_in_expr_filter(hundred):
    reply = hundred.database.command(
        "find", "c", filter={"$expr": {"$eq": ["$n", "$$target"]}}, let={"target": 42}
    )
    assert [d["_id"] for d in reply["cursor"]["firstBatch"]] == [42]


def test_comment_and_allow_disk_use_are_accepted(hundred):
    assert len(list(hundred.find({}, comment="hello", allow_disk_use=True).sort("n", -1).limit(3))) == 3


def test_negative_skip_and_bad_types_are_rejected(hundred):
    with pytest.raises(OperationFailure) as e:
        hundred.database.command("find", "c", skip=-1)
    assert e.value.code == 51024
    with pytest.raises(OperationFailure) as e:
        hundred.database.command("find", "c", filter="x")
    assert e.value.code == 14
    with pytest.raises(OperationFailure) as e:
        hundred.database.command("find", "c", foo=1)
    assert e.value.code == 40415


def test_invalid_filter_operator_gives_badvalue(hundred):
    with pytest.raises(OperationFailure) as e:
        list(hundred.find({"n": {"$foo": 1}}))
    assert e.value.code == 2


def test_find_on_missing_collection_is_empty(db):
    assert list(db.nothing.find()) == []


def test_max_time_ms_expires_on_long_scan(db):
    db.big.insert_many([{"i": i, "s": "x" * 200} for i in range(30000)])
    with pytest.raises(pymongo.errors.ExecutionTimeout):
        list(db.big.find({"$expr": {"$gt": [{"$strLenCP": "$s"}, 1000]}}).max_time_ms(1))


def test_duplicate_key_error_class_for_insert_one(db):
    db.c.insert_one({"_id": "a"})
    with pytest.raises(DuplicateKeyError) as e:
        db.c.insert_one({"_id": "a"})
    assert e.value.details["keyValue"] == {"_id": "a"}


def test_batches_stay_under_16_mib(db):
    db.big.insert_many([{"_id": i, "blob": b"x" * (1024 * 1024)} for i in range(20)])
    reply = db.command("find", "big")
    first = reply["cursor"]["firstBatch"]
    assert 0 < len(first) < 20 and reply["cursor"]["id"] != 0
    assert sum(len(d["blob"]) for d in first) < 16 * 1024 * 1024
    assert [d["_id"] for d in db.big.find()] == list(range(20))
