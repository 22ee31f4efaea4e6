"""Issue 25 item 7: clustered collections as mongod 7.0 has them (jstests/core/clustered/*.js).

A regular collection created with ``clusteredIndex: {key: {_id: 1}, unique: true}`` keeps its records in
``_id`` order (``$natural`` is ``_id`` order, a second ``_id`` is a duplicate key), lists its clustered
index first in ``listIndexes`` and its canonical spec in ``listCollections``; ``system.buckets.X`` takes
only the legacy ``clusteredIndex: true``. Finds hinted ``{$natural: ±1}`` scan forward or backward,
``showRecordId`` adds ``$recordId`` (on buckets documents too; the time-series view answers 168), and
``$_requestResumeToken`` answers a ``postBatchResumeToken`` that ``$_resumeAfter`` resumes from.
"""

import datetime as dt

import pytest
from bson.int64 import Int64
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

CLUSTERED = {"key": {"_id": 1}, "unique": True}


def _error(fn):
    with pytest.raises(OperationFailure) as err:
        fn()
    return err.value.code, err.value.details["errmsg"]


def _code(fn):
    return _error(fn)[0]


# --- create -------------------------------------------------------------------------------------------

@pytest.mark.commands("create", "listIndexes", "listCollections")
def test_clustered_collection_lists_its_index_and_options_as_mongod(db):
    db.command("create", "c", clusteredIndex=CLUSTERED)
    (index,) = db.c.list_indexes()
    assert list(index.items()) == [("v", 2), ("key", {"_id": 1}), ("name", "_id_"), ("unique", True),
                                   ("clustered", True)]
    (entry,) = db.list_collections(filter={"name": "c"})
    assert entry["options"] == {"clusteredIndex": {"v": 2, "key": {"_id": 1}, "name": "_id_", "unique": True}}
    db.command("create", "named", clusteredIndex={**CLUSTERED, "name": "by_id"}, expireAfterSeconds=5)
    (entry,) = db.list_collections(filter={"name": "named"})
    assert entry["options"]["clusteredIndex"]["name"] == "by_id"
    assert entry["options"]["expireAfterSeconds"] == 5
    assert next(iter(db.named.list_indexes()))["name"] == "by_id"


@pytest.mark.commands("create")
def test_clustered_index_false_makes_an_ordinary_collection(db):
    db.command("create", "plain", clusteredIndex=False)
    (entry,) = db.list_collections(filter={"name": "plain"})
    assert "clusteredIndex" not in entry["options"]
    assert [ix.get("clustered") for ix in db.plain.list_indexes()] == [None]


@pytest.mark.commands("create")
@pytest.mark.parametrize("options, code", [
    ({"clusteredIndex": {"key": {"_id": 1}, "unique": False}}, 5979700),
    ({"clusteredIndex": {"key": {"a": 1}, "unique": True}}, 197),
    ({"clusteredIndex": {"key": {"_id": 1}}}, 40414),
    ({"clusteredIndex": {**CLUSTERED, "randField": 1}}, 40415),
    ({"clusteredIndex": {**CLUSTERED, "v": 12345}}, 5979704),
    ({"clusteredIndex": True}, 5979703),
    ({"clusteredIndex": CLUSTERED, "viewOn": "src"}, 6026500),
    ({"clusteredIndex": CLUSTERED, "autoIndexId": False}, 6026501),
    ({"clusteredIndex": CLUSTERED, "idIndex": {"key": {"_id": 1}, "name": "_id_"}}, 72),
    ({"clusteredIndex": CLUSTERED, "size": 10}, 6049200),
    ({"clusteredIndex": CLUSTERED, "max": 10}, 6049204),
    ({"clusteredIndex": CLUSTERED, "capped": True}, 6127800),
    ({"clusteredIndex": False, "expireAfterSeconds": 5}, 72),
    ({"clusteredIndex": CLUSTERED, "expireAfterSeconds": -10}, 72),
])
def test_invalid_clustered_creates_fail_with_mongods_codes(db, options, code):
    assert _code(lambda: db.command("create", "bad", **options)) == code
    assert "bad" not in db.list_collection_names()


@pytest.mark.commands("create")
def test_buckets_namespaces_take_only_the_legacy_form(db):
    db.command("create", "system.buckets.raw", clusteredIndex=True)
    assert "system.buckets.raw" in db.list_collection_names()
    assert _code(lambda: db.command("create", "system.buckets.other", clusteredIndex=CLUSTERED)) == 5979703
    assert _code(lambda: db.command("create", "system.buckets.other", clusteredIndex=CLUSTERED,
                                    timeseries={"timeField": "t"})) == 5979703


# --- records keyed by _id -----------------------------------------------------------------------------

@pytest.mark.commands("insert", "update", "delete", "find")
def test_records_are_kept_in_id_order_and_ids_are_unique(db):
    db.command("create", "c", clusteredIndex=CLUSTERED)
    db.c.insert_many([{"_id": 3}, {"_id": "x"}, {"_id": 1.0}, {"_id": 2, "a": 1}])
    assert [d["_id"] for d in db.c.find()] == [1.0, 2, 3, "x"]
    assert [d["_id"] for d in db.c.find().hint([("$natural", -1)])] == ["x", 3, 2, 1.0]
    reply = db.command("insert", "c", documents=[{"_id": 1}, {"_id": Int64(42)}], ordered=False)
    (error,) = reply["writeErrors"]  # numbers compare by value: 1 is 1.0
    assert error["code"] == 11000 and error["keyValue"] == {"_id": 1} and error["keyPattern"] == {"_id": 1}
    assert error["errmsg"] == f"E11000 duplicate key error collection: {db.name}.c dup key: {{ _id: 1 }}"
    db.c.update_one({"_id": 2}, {"$set": {"b": 5}})
    db.c.replace_one({"_id": 3}, {"z": 1})
    db.c.delete_one({"_id": "x"})
    db.c.create_index("a")
    assert list(db.c.find({"a": 1})) == [{"_id": 2, "a": 1, "b": 5}]
    assert [d["_id"] for d in db.c.find()] == [1.0, 2, 3, 42]
    assert db.c.find_one({"_id": 3}) == {"_id": 3, "z": 1}


@pytest.mark.slow
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ids=st.lists(st.one_of(st.integers(-10**6, 10**6), st.text(max_size=8), st.floats(allow_nan=False)),
                    min_size=1, max_size=12, unique_by=lambda v: (type(v) is str, v)))
@pytest.mark.commands("find")
def test_natural_order_of_a_clustered_collection_is_id_order(db, ids):
    db.drop_collection("h")
    db.command("create", "h", clusteredIndex=CLUSTERED)
    docs = [{"_id": v} for v in dict.fromkeys(ids)]  # 1 and 1.0 are one _id
    db.h.insert_many(docs, ordered=False) if docs else None
    by_id = [d["_id"] for d in db.h.find().sort("_id", 1)]
    assert [d["_id"] for d in db.h.find()] == by_id
    assert [d["_id"] for d in db.h.find().hint([("$natural", -1)])] == by_id[::-1]


# --- indexes ------------------------------------------------------------------------------------------

@pytest.mark.commands("createIndexes", "dropIndexes")
def test_the_clustered_index_exists_implicitly_and_cannot_be_dropped(db):
    db.command("create", "c", clusteredIndex={**CLUSTERED, "name": "theClusterKeyName"})
    before = list(db.c.list_indexes())
    db.c.create_index("_id")
    db.c.create_index("_id", clustered=True, unique=True)
    db.c.create_index("_id", name="notTheClusterKeyName")
    assert list(db.c.list_indexes()) == before
    assert _code(lambda: db.c.create_index("b", clustered=True, unique=True)) == 6243700
    assert _code(lambda: db.command("createIndexes", "c", indexes=[
        {"key": {"a": 1}, "name": "theClusterKeyName"}])) == 6100906
    assert _code(lambda: db.c.drop_index("theClusterKeyName")) == 5979800
    assert _code(lambda: db.command("dropIndexes", "c", index={"_id": 1})) == 5979800
    db.command("create", "plain")
    assert _code(lambda: db.plain.create_index("_id", clustered=True, unique=True)) == 6243700
    assert _code(lambda: db.command("createIndexes", "missing", indexes=[
        {"key": {"_id": 1}, "name": "_id_", "clustered": True, "unique": True}])) == 6100900
    assert _code(lambda: db.command("createIndexes", "missing", indexes=[
        {"key": {"s": 1}, "name": "s2", "clustered": False, "unique": True}])) == 6492800


# --- $natural, showRecordId, resume tokens ------------------------------------------------------------

def _timeseries(db):
    db.create_collection("ts", timeseries={"timeField": "t"})
    db.ts.insert_many([{"t": dt.datetime(2024, 1, 1, hour), "v": hour} for hour in range(3)])  # 3 buckets
    return db["system.buckets.ts"]


@pytest.mark.commands("find", "explain")
def test_natural_hints_scan_buckets_forward_and_backward(db):
    buckets = _timeseries(db)
    forward = [d["_id"] for d in buckets.find().hint([("$natural", 1)])]
    assert forward == sorted(forward) and len(forward) == 3
    assert [d["_id"] for d in buckets.find().hint([("$natural", -1)])] == forward[::-1]
    db.ts_plain.insert_one({"_id": 1})
    for direction, shown in ((1, "forward"), (-1, "backward")):
        for coll in ("system.buckets.ts", "ts_plain"):
            plan = db.command("explain", {"find": coll, "hint": {"$natural": direction}})
            assert plan["queryPlanner"]["winningPlan"]["direction"] == shown


@pytest.mark.commands("find")
def test_show_record_id_on_clustered_and_buckets_documents(db):
    db.command("create", "c", clusteredIndex=CLUSTERED)
    db.c.insert_many([{"_id": 2}, {"_id": 1}])
    docs = db.command("find", "c", showRecordId=True)["cursor"]["firstBatch"]
    assert [list(d) for d in docs] == [["_id", "$recordId"]] * 2
    assert all(isinstance(d["$recordId"], bytes) for d in docs)  # BinData, as mongod's clustered ids
    buckets = _timeseries(db)
    docs = db.command("find", buckets.name, showRecordId=True, projection={"_id": 1})["cursor"]["firstBatch"]
    assert len(docs) == 3 and all(list(d) == ["_id", "$recordId"] for d in docs)
    assert _error(lambda: db.command("find", "ts", showRecordId=True)) == (
        168, "Option showRecordId not supported in aggregation.")
    assert _code(lambda: db.command("find", "ts", hint={"$natural": 1}, **{"$_requestResumeToken": True})) == 168


@pytest.mark.parametrize("kind", ["regular", "clustered", "buckets"])
@pytest.mark.commands("find", "getMore")
def test_resume_tokens_continue_a_natural_scan(db, kind):
    if kind == "buckets":
        name = _timeseries(db).name
        db.ts.insert_many([{"t": dt.datetime(2024, 1, 1, hour), "v": hour} for hour in range(3, 6)])
    else:
        if kind == "clustered":
            db.command("create", "c", clusteredIndex=CLUSTERED)
        name = "c"
        db.c.insert_many([{"_id": i} for i in range(6)])
    everything = [d["_id"] for d in db[name].find().hint([("$natural", 1)])]
    request = {"find": name, "hint": {"$natural": 1}, "$_requestResumeToken": True, "projection": {"_id": 1}}
    first = db.command({**request, "batchSize": 2})["cursor"]
    assert [d["_id"] for d in first["firstBatch"]] == everything[:2]
    more = db.command("getMore", first["id"], collection=name, batchSize=2)["cursor"]
    assert [d["_id"] for d in more["nextBatch"]] == everything[2:4]
    assert all("$recordId" not in d for d in first["firstBatch"] + more["nextBatch"])
    resumed = db.command({**request, "$_resumeAfter": more["postBatchResumeToken"]})["cursor"]
    assert [d["_id"] for d in resumed["firstBatch"]] == everything[4:]
    again = db.command({**request, "$_resumeAfter": first["postBatchResumeToken"]})["cursor"]
    assert [d["_id"] for d in again["firstBatch"]] == everything[2:]
    empty = db.command({**request, "batchSize": 0})["cursor"]
    assert empty["postBatchResumeToken"] == {"$recordId": None}
    if kind == "regular":
        assert more["postBatchResumeToken"] == {"$recordId": 4}


@pytest.mark.commands("find")
@pytest.mark.parametrize("extra, message", [
    ({"$_requestResumeToken": True}, "hint must be {$natural:1} if 'requestResumeToken' is enabled"),
    ({"$_requestResumeToken": True, "hint": {"$natural": -1}},
     "hint must be {$natural:1} if 'requestResumeToken' is enabled"),
    ({"$_requestResumeToken": True, "hint": {"$natural": 1}, "sort": {"a": 1}},
     "sort must be unset or {$natural:1} if 'requestResumeToken' is enabled"),
    ({"$_resumeAfter": {"$recordId": Int64(1)}}, "'requestResumeToken' must be true if 'resumeAfter' is specified"),
    ({"$_requestResumeToken": True, "hint": {"$natural": 1}, "$_resumeAfter": {"$recordId": 1}},
     "Malformed resume token: the '_resumeAfter' object must contain exactly one field named '$recordId', of "
     "type NumberLong, BinData or jstNULL."),
])
def test_resume_token_options_are_validated_as_mongod(db, extra, message):
    db.c.insert_one({"_id": 1})
    assert _error(lambda: db.command({"find": "c", **extra})) == (2, message)


@pytest.mark.commands("find")
def test_resuming_after_a_missing_record_is_key_not_found(db):
    db.c.insert_one({"_id": 1})
    assert _code(lambda: db.command({"find": "c", "hint": {"$natural": 1}, "$_requestResumeToken": True,
                                     "$_resumeAfter": {"$recordId": Int64(99)}})) == 211
