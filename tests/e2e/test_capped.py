"""Capped collections through pymongo: create options as mongod prints them, oldest documents removed
first by count and by size, convertToCapped / cloneCollectionAsCapped, collMod cappedSize/cappedMax,
collStats, and the refusals mongod gives."""

from __future__ import annotations

import bson
import pytest
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("create", "convertToCapped", "cloneCollectionAsCapped", "collMod",
                                  "collStats", "insert", "find")


def _options(db, name):
    return next(db.list_collections(filter={"name": name}))["options"]


def _code(call) -> int:
    with pytest.raises(OperationFailure) as e:
        call()
    return e.value.code


def test_create_capped_shows_mongods_options_with_size_rounded_up_to_256(db):
    db.create_collection("log", capped=True, size=1000, max=3)
    assert _options(db, "log") == {"capped": True, "size": 1024, "max": 3}
    db.create_collection("plain", capped=True, size=4096)
    assert _options(db, "plain") == {"capped": True, "size": 4096}
    assert db.log.options() == {"capped": True, "size": 1024, "max": 3}
    db.command("create", "log", capped=True, size=1000, max=3)  # same options again: ok, like mongod
    assert _code(lambda: db.command("create", "log", capped=True, size=2048)) == 48


def test_capped_option_errors_match_mongod(db):
    assert _code(lambda: db.command("create", "a", capped=True)) == 72
    assert _code(lambda: db.command("create", "b", capped=True, max=5)) == 72
    assert _code(lambda: db.command("create", "c", size=4096)) == 72
    assert _code(lambda: db.command("create", "d", capped=True, size=0)) == 51024
    assert _code(lambda: db.command("create", "e", capped=True, size=-5)) == 51024
    assert _code(lambda: db.command("create", "f", capped=True, size="big")) == 14
    assert _code(lambda: db.command("create", "g", capped=True, size=4096, max=2**31)) == 2
    assert db.list_collection_names() == []


def test_max_documents_keeps_the_newest_in_insertion_order(db):
    db.create_collection("q", capped=True, size=1 << 20, max=3)
    for i in range(5):
        db.q.insert_one({"_id": 10 - i, "i": i})  # _id order differs from insertion order
    db.q.insert_many([{"_id": 100, "i": 5}, {"_id": 101, "i": 6}])
    assert [d["i"] for d in db.q.find()] == [4, 5, 6]
    assert [d["i"] for d in db.q.find().sort("$natural", -1)] == [6, 5, 4]
    assert db.q.count_documents({}) == 3 and db.q.estimated_document_count() == 3


def test_size_bound_removes_oldest_documents_by_bson_size(db):
    db.create_collection("s", capped=True, size=4096)
    payload = "x" * 900
    for i in range(20):
        db.s.insert_one({"i": i, "p": payload})
    docs = list(db.s.find())
    total = sum(len(bson.encode(d)) for d in docs)
    assert total <= 4096 and 4096 - total < len(bson.encode(docs[0]))  # full, minus less than one doc
    assert [d["i"] for d in docs] == list(range(20 - len(docs), 20))
    stats = db.command("collStats", "s")
    assert stats["capped"] is True and stats["maxSize"] == 4096 and stats["max"] == 0
    assert stats["count"] == len(docs) and stats["size"] <= 4096


def test_a_document_larger_than_the_cap_is_kept_alone(db):
    """mongod 7.0 stores it and removes every older document: its capped deletes stop at the record just
    inserted (capped_resize.js inserts 10 KB documents into a 256-byte collection)."""
    db.create_collection("t", capped=True, size=256)
    db.t.insert_one({"_id": 1})
    db.t.insert_one({"_id": 2, "p": "y" * 500})
    assert [d["_id"] for d in db.t.find()] == [2]
    db.t.insert_one({"_id": 3, "p": "z" * 500})
    assert [d["_id"] for d in db.t.find()] == [3]
    db.t.insert_one({"_id": 4})  # a small one after it: the big one goes, the cap holds again
    assert [d["_id"] for d in db.t.find()] == [4]


def test_updates_and_deletes_are_allowed_as_in_mongod_7(db):
    db.create_collection("u", capped=True, size=4096)
    db.u.insert_many([{"_id": i, "v": i} for i in range(3)])
    db.u.update_one({"_id": 1}, {"$set": {"v": "grown" * 10}})
    db.u.delete_one({"_id": 0})
    assert list(db.u.find()) == [{"_id": 1, "v": "grown" * 10}, {"_id": 2, "v": 2}]


def test_upserts_into_a_capped_collection_trim_it_too(db):
    db.create_collection("up", capped=True, size=4096, max=2)
    for i in range(4):
        db.up.update_one({"_id": i}, {"$set": {"v": i}}, upsert=True)
    assert [d["_id"] for d in db.up.find()] == [2, 3]


def test_convert_to_capped_keeps_the_newest_documents_and_only_the_id_index(db):
    db.c.insert_many([{"_id": i, "p": "z" * 200} for i in range(30)])
    db.c.create_index("p")
    db.command("convertToCapped", "c", size=2048)
    assert _options(db, "c") == {"capped": True, "size": 2048}
    ids = [d["_id"] for d in db.c.find()]
    assert ids == list(range(30 - len(ids), 30)) and 0 < len(ids) < 30
    assert [ix["name"] for ix in db.c.list_indexes()] == ["_id_"]
    db.c.insert_one({"_id": 99, "p": "z" * 200})
    assert [d["_id"] for d in db.c.find()][-1] == 99 and db.c.count_documents({}) == len(ids)
    assert _code(lambda: db.command("convertToCapped", "missing", size=4096)) == 26
    assert _code(lambda: db.command("convertToCapped", "c")) == 72
    db.command("create", "v", viewOn="c", pipeline=[])
    assert _code(lambda: db.command("convertToCapped", "v", size=4096)) == 166


def test_clone_collection_as_capped_copies_into_a_new_capped_collection(db):
    db.src.insert_many([{"_id": i} for i in range(10)])
    db.command("cloneCollectionAsCapped", "src", toCollection="dst", size=4096)
    assert _options(db, "dst") == {"capped": True, "size": 4096}
    assert [d["_id"] for d in db.dst.find()] == list(range(10))
    assert db.src.count_documents({}) == 10 and _options(db, "src") == {}
    assert _code(lambda: db.command("cloneCollectionAsCapped", "src", toCollection="dst", size=4096)) == 48
    assert _code(lambda: db.command("cloneCollectionAsCapped", "nope", toCollection="x", size=4096)) == 26
    assert _code(lambda: db.command("cloneCollectionAsCapped", "src", toCollection=5, size=4096)) == 14


@pytest.mark.parametrize("command", ["convertToCapped", "cloneCollectionAsCapped"])
@pytest.mark.parametrize("strength", [1, 2])
def test_the_capped_copy_keeps_the_collections_options_and_its_id_index_collation(db, command, strength):
    """mongod's cloneCollectionAsCapped (which convertToCapped runs) creates the copy with the source's
    options: its default collation, which the new _id index carries, and its validator."""
    collation = {"locale": "en", "strength": strength}
    db.create_collection("c", collation=collation, validator={"n": {"$type": "int"}})
    db.c.insert_one({"_id": "a", "n": 1})
    source_options = _options(db, "c")
    source_id_index = next(db.c.list_indexes())
    target = "c" if command == "convertToCapped" else "d"
    db.command(command, "c", **({"toCollection": "d"} if target == "d" else {}), size=4096)
    options = _options(db, target)
    assert options == {"capped": True, "size": 4096, **source_options}
    assert next(db[target].list_indexes()) == source_id_index
    # the unique _id index compares under the collation: "A" is "a" at strengths 1 and 2
    with pytest.raises(OperationFailure) as error:
        db[target].insert_one({"_id": "A", "n": 2})
    assert error.value.code == 11000
    assert _code(lambda: db[target].insert_one({"_id": "b", "n": "x"})) == 121


def test_coll_mod_changes_the_caps_and_trims_at_once(db):
    db.create_collection("m", capped=True, size=1 << 16, max=10)
    db.m.insert_many([{"_id": i} for i in range(10)])
    db.command("collMod", "m", cappedMax=4)
    assert [d["_id"] for d in db.m.find()] == [6, 7, 8, 9]
    db.command("collMod", "m", cappedSize=1000)
    assert _options(db, "m") == {"capped": True, "size": 1024, "max": 4}
    db.command("collMod", "m", cappedMax=0)  # <= 0: no document limit (2^31 - 1), as mongod
    assert _options(db, "m")["max"] == 2**31 - 1
    db.plain.insert_one({})
    assert _code(lambda: db.command("collMod", "plain", cappedSize=4096)) == 72
    assert _code(lambda: db.command("collMod", "m", cappedSize=0)) == 51024


@pytest.mark.commands("aggregate")
def test_out_into_a_capped_collection_is_refused_with_17152_and_merge_trims(db):
    db.src.insert_many([{"_id": i} for i in range(5)])
    db.create_collection("cap", capped=True, size=4096, max=2)
    with pytest.raises(OperationFailure) as e:
        list(db.src.aggregate([{"$out": "cap"}]))
    assert e.value.code == 17152
    list(db.src.aggregate([{"$merge": {"into": "cap"}}]))
    assert [d["_id"] for d in db.cap.find()] == [3, 4]


@pytest.mark.slow
def test_capped_collection_survives_a_restart_with_its_caps(start_server):
    server = start_server()
    client = server.client()
    client.t.create_collection("c", capped=True, size=4096, max=2)
    client.t.c.insert_many([{"_id": i} for i in range(3)])
    client.close()
    server.restart()
    client = server.client()
    client.t.c.insert_one({"_id": 3})
    assert [d["_id"] for d in client.t.c.find()] == [2, 3]
    assert client.t.c.options() == {"capped": True, "size": 4096, "max": 2}


@pytest.mark.commands("createIndexes")
def test_ttl_indexes_are_refused_on_capped_collections(db):
    db.create_collection("c", capped=True, size=4096)
    assert _code(lambda: db.c.create_index("t", expireAfterSeconds=60)) == 67
    db.c.create_index("t")  # an ordinary index is fine
    assert _code(lambda: db.command("collMod", "c", index={"name": "t_1", "expireAfterSeconds": 5})) == 72
