"""MongoDB's explain jstests (``jstests/core/query/explain/``), ported to pymongo against a real Tidemark
server: what a client reads from an explain (its fields, the counters of executionStats, errors), not the
plan shapes mongod's optimizer picks (COUNT_SCAN bounds, rejected plans, plan cache, SBE).

Sources (``mongodb/mongo``), 15 files: explain_validation.js, explain_uuid.js, explain_explicit_false.js,
explain_missing_collection.js, explain_db_mismatch.js,
explain_missing_database.js, explain_writecmd_nonexistent_collection.js (the EOF plan and no collection
created; the jstest is 8.1's, 7.0 answers the same), explain_includes_command.js, explain_delete.js,
explain_upsert.js, explain_find_and_modify.js, explain_agg_write_concern.js, explain_count.js (nCounted),
explain_execution_error.js (with the sort memory limit lowered by setParameter instead of 120 MB of
documents), explain_distinct.js (results).

The port found: unknown explain fields and a mismatched inner ``$db`` accepted; count, distinct and the
writes explained without executionStats (no nCounted, nWouldDelete, nWouldModify, nWouldUpsert); an
aggregate's echoed ``command`` missing its fields; a find whose execution fails failing the explain
instead of reporting ``executionSuccess: false``; ``aggregate`` with ``explain`` and ``writeConcern``
accepted. Hypothesis checks the family the counters belong to: for random documents and filters, what a
delete / update / findAndModify explain says it would do equals what the command then does.
"""

from __future__ import annotations

import pytest
from harness.jstests import fails
from harness.parameters import server_parameter
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.commands("explain", "find", "aggregate", "count", "distinct", "update", "delete",
                                  "findAndModify", "insert", "setParameter")

HYPO = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
VERBOSITIES = ("queryPlanner", "executionStats", "allPlansExecution")


def _explain(db, cmd, verbosity="executionStats"):
    return db.command({"explain": cmd, "verbosity": verbosity})


def _stage(plan, name):
    """The first stage called ``name`` in a plan tree (depth first), or None."""
    if not isinstance(plan, dict):
        return None
    if plan.get("stage") == name:
        return plan
    for key in ("inputStage", "inputStages"):
        children = plan.get(key)
        for child in children if isinstance(children, list) else [children]:
            found = _stage(child, name)
            if found is not None:
                return found
    return None


def test_explain_validation(db):
    db.drop_collection("test")
    db.test.create_index([("a", 1)])
    fails(lambda: db.command({"explain": {"find": "test"}, "unknownField": True}), 40415)
    assert db.command({"explain": {"find": "test"}, "comment": True})["ok"] == 1  # a generic argument


def test_explain_db_mismatch(db):
    fails(lambda: db.command({"explain": {"find": "some_collection", "$db": "not_my_db"}}), 73)


def test_explain_missing_database(client):
    missing = client.get_database("explainMissingDb")
    for cmd in ({"find": "collection"}, {"count": "collection"},
                {"delete": "collection", "deletes": [{"q": {"a": 1}, "limit": 0}]},
                {"update": "collection", "updates": [{"q": {"a": 1}, "u": {"b": 1}}]},
                {"update": "collection", "updates": [{"q": {"a": 1}, "u": {"b": 1}, "upsert": True}]}):
        client.drop_database(missing.name)
        explain = _explain(missing, cmd)
        assert "executionStats" in explain
    client.drop_database(missing.name)
    assert missing.command({"explain": {"aggregate": "collection", "pipeline": [{"$match": {"a": 1}}], "cursor": {}},
                            "verbosity": "executionStats"})["ok"] == 1
    assert missing.name not in client.list_database_names()


def test_explain_writes_on_a_missing_collection(db):
    db.drop_collection("explain_nonexistent")
    for cmd in ({"delete": "explain_nonexistent", "deletes": [{"q": {"a": 1}, "limit": 0}]},
                {"update": "explain_nonexistent", "updates": [{"q": {"a": 1}, "u": {"$set": {"b": 1}}, "upsert": False}]},
                {"update": "explain_nonexistent", "updates": [{"q": {"a": 1}, "u": {"$set": {"b": 1}}, "upsert": True}]}):
        win = db.command({"explain": cmd})["queryPlanner"]["winningPlan"]
        eof = _stage(win, "EOF")
        assert eof is not None and eof["type"] == "nonExistentNamespace"
        assert _stage(win, "DELETE") is None and _stage(win, "UPDATE") is None
        assert "explain_nonexistent" not in db.list_collection_names()


@pytest.mark.parametrize("cmd", [
    {"find": "explain_includes_command", "filter": {}},
    {"find": "explain_includes_command", "filter": {"_id": 1}},
    {"aggregate": "explain_includes_command", "pipeline": [{"$match": {"_id": 1}}], "cursor": {}},
    {"update": "explain_includes_command", "updates": [{"q": {"_id": 1}, "u": {"_id": 10}}]},
    {"delete": "explain_includes_command", "deletes": [{"q": {"_id": 1}, "limit": 0}]},
    {"findAndModify": "explain_includes_command", "query": {"_id": 10}, "update": {"_id": 1}},
    {"findAndModify": "explain_includes_command", "query": {"_id": 1}, "remove": True},
    {"count": "explain_includes_command", "query": {"_id": 1}},
    {"distinct": "explain_includes_command", "key": "a"},
], ids=lambda cmd: next(iter(cmd)))
def test_explain_includes_command(db, cmd):
    db.drop_collection("explain_includes_command")
    db.explain_includes_command.insert_many([{"_id": i} for i in range(3)])
    for verbosity in VERBOSITIES:
        echoed = _explain(db, cmd, verbosity)["command"]
        assert all(echoed[key] == value for key, value in cmd.items())
    assert sorted(d["_id"] for d in db.explain_includes_command.find()) == [0, 1, 2]  # nothing written


def test_explain_delete_counts_without_deleting(db):
    db.drop_collection("explain_delete")
    db.create_collection("explain_delete")
    cmd = {"delete": "explain_delete", "deletes": [{"q": {"a": 1}, "limit": 0}]}

    def would_delete():
        return _stage(_explain(db, cmd)["executionStats"]["executionStages"], "DELETE")["nWouldDelete"]

    assert would_delete() == 0
    db.explain_delete.create_index([("a", 1)])
    assert would_delete() == 0
    db.explain_delete.insert_many([{"a": 1} for _ in range(10)])
    assert would_delete() == 10
    assert db.explain_delete.count_documents({}) == 10
    assert db.command({"delete": "explain_delete", "deletes": [{"q": {"a": 1}, "limit": 0}]})["n"] == 10
    assert db.explain_delete.count_documents({}) == 0


def test_explain_upsert_writes_nothing(db):
    db.drop_collection("explain_upsert")
    cmd = {"update": "explain_upsert", "updates": [{"q": {"a": 1}, "u": {"a": 1}, "upsert": True}]}
    assert db.command({"explain": cmd})["ok"] == 1
    assert "explain_upsert" not in db.list_collection_names()
    db.explain_upsert.insert_one({"a": 3})
    assert db.command({"explain": cmd})["ok"] == 1
    assert db.explain_upsert.count_documents({}) == 1


FIND_AND_MODIFY_CASES = [
    ({"remove": True, "query": {"_id": "no-match"}}, 0, "DELETE", {"nWouldDelete": 0}),
    ({"remove": True, "query": {"_id": 0}}, 1, "DELETE", {"nWouldDelete": 1}),
    ({"update": {"$inc": {"i": 1}}, "query": {"_id": "no-match"}}, 0, "UPDATE", {"nWouldModify": 0, "nWouldUpsert": 0}),
    ({"update": {"$inc": {"i": 1}}, "query": {"_id": "no-match"}, "new": True}, 0, "UPDATE",
     {"nWouldModify": 0, "nWouldUpsert": 0}),
    ({"update": {"$inc": {"i": 1}}, "query": {"_id": 0}}, 1, "UPDATE", {"nWouldModify": 1, "nWouldUpsert": 0}),
    ({"update": {"$inc": {"i": 1}}, "query": {"_id": 0}, "new": True}, 1, "UPDATE", {"nWouldModify": 1, "nWouldUpsert": 0}),
    ({"update": {"$inc": {"i": 1}}, "upsert": True, "query": {"_id": "no-match"}}, 0, "UPDATE",
     {"nWouldModify": 0, "nWouldUpsert": 1}),
    ({"update": {"$inc": {"i": 1}}, "upsert": True, "query": {"_id": "no-match"}, "new": True}, 1, "UPDATE",
     {"nWouldModify": 0, "nWouldUpsert": 1}),
    ({"update": {"$inc": {"i": 1}}, "upsert": True, "query": {"_id": 0}, "new": True}, 1, "UPDATE",
     {"nWouldModify": 1, "nWouldUpsert": 0}),
]


@pytest.mark.parametrize("projected", [False, True])
@pytest.mark.parametrize(("args", "returned", "stage", "counters"), FIND_AND_MODIFY_CASES)
def test_explain_find_and_modify(db, args, returned, stage, counters, projected):
    db.drop_collection("explain_find_and_modify")
    db.explain_find_and_modify.insert_one({"_id": 0, "i": 1})
    cmd = {"findAndModify": "explain_find_and_modify", **args, **({"fields": {"i": 0}} if projected else {})}
    for verbosity in VERBOSITIES:
        explain = _explain(db, cmd, verbosity)
        if verbosity == "queryPlanner":
            continue
        stats = explain["executionStats"]
        assert stats["nReturned"] == returned and stats["executionSuccess"] is True
        root = stats["executionStages"]
        if projected:
            assert root["stage"] == "PROJECTION_DEFAULT" and root["transformBy"] == {"i": 0}
            root = root["inputStage"]
        assert root["stage"] == stage
        assert {key: root[key] for key in counters} == counters
    assert list(db.explain_find_and_modify.find()) == [{"_id": 0, "i": 1}]  # nothing written


def test_explain_find_and_modify_creates_nothing(client, db):
    other = client.get_database("explain_find_and_modify_new")
    client.drop_database(other.name)
    for cmd in ({"findAndModify": "c", "remove": True, "query": {"_id": 0}},
                {"findAndModify": "c", "update": {"$inc": {"i": 1}}, "query": {"_id": 0}, "upsert": True}):
        fails(lambda cmd=cmd: other.command({"explain": cmd}), 26)  # the database does not exist
        assert other.name not in client.list_database_names()
    db.explain_fam_other.insert_one({})  # the database exists (mongod keeps a dropped collection's database open)
    db.drop_collection("explain_fam_new")
    for extra in ({}, {"fields": {"x": 1}}):
        cmd = {"findAndModify": "explain_fam_new", "update": {"$inc": {"i": 1}}, "query": {"_id": 0}, "upsert": True,
               **extra}
        assert db.command({"explain": cmd})["ok"] == 1
        assert "explain_fam_new" not in db.list_collection_names()


def test_explain_agg_write_concern(db):
    db.drop_collection("explain_awc")
    db.drop_collection("explain_awc_out")
    db.explain_awc.insert_one({"_id": 1})
    db.command({"aggregate": "explain_awc", "pipeline": [{"$out": "explain_awc_out"}], "cursor": {},
                "writeConcern": {"w": 1}})
    assert db.explain_awc_out.count_documents({}) == 1
    db.drop_collection("explain_awc_out")
    assert db.command({"aggregate": "explain_awc", "pipeline": [], "cursor": {}, "writeConcern": {"w": 1}})["ok"] == 1
    assert db.command({"aggregate": "explain_awc", "pipeline": [{"$out": "explain_awc_out"}], "explain": True})["ok"] == 1
    assert db.explain_awc_out.count_documents({}) == 0
    fails(lambda: db.command({"aggregate": "explain_awc", "pipeline": [{"$out": "explain_awc_out"}], "explain": True,
                              "writeConcern": {"w": 1}}), 9)
    for verbosity in VERBOSITIES:
        fails(lambda verbosity=verbosity: db.command({
            "explain": {"aggregate": "explain_awc", "pipeline": [{"$out": "explain_awc_out"}], "cursor": {},
                        "writeConcern": {"w": 1}}, "verbosity": verbosity}), 9)


def _counted(explain):
    """analyze_plan.js assertExplainCount: the root stage is COUNT or RECORD_STORE_FAST_COUNT."""
    root = explain["executionStats"]["executionStages"]
    assert root["stage"] in ("COUNT", "RECORD_STORE_FAST_COUNT")
    return root["nCounted"]


def test_explain_count(db):
    db.drop_collection("explain_count")
    options = ({}, {"skip": 3}, {"limit": 3}, {"limit": -3}, {"limit": -3, "skip": 4}, {"query": {"a": 1}, "limit": -3, "skip": 4})
    for extra in options:  # the collection does not exist
        assert _counted(_explain(db, {"count": "explain_count", **extra})) == 0
    db.explain_count.create_index([("a", 1), ("_id", 1)])
    db.explain_count.insert_many([{"_id": i, "a": 1} for i in range(10)])
    for extra, n in (({}, 10), ({"skip": 3}, 7), ({"limit": 3}, 3), ({"limit": -3}, 3), ({"limit": -3, "skip": 4}, 3),
                     ({"query": {"a": 1}}, 10), ({"query": {"a": 1}, "skip": 3}, 7), ({"query": {"a": 1}, "limit": 3}, 3)):
        assert db.command({"count": "explain_count", **extra})["n"] == n
        assert _counted(_explain(db, {"count": "explain_count", **extra})) == n
    db.explain_count.insert_one({"a": 2})
    assert _counted(_explain(db, {"count": "explain_count", "query": {"a": 2}, "skip": 2})) == 0
    assert _counted(_explain(db, {"count": "explain_count", "query": {"a": 2}, "limit": 2})) == 1


def test_explain_distinct(db):
    db.drop_collection("explain_distinct")
    assert _explain(db, {"distinct": "explain_distinct", "key": "a"})["ok"] == 1
    db.explain_distinct.insert_many([{"a": i % 3, "b": i} for i in range(9)])
    db.explain_distinct.create_index([("a", 1)])
    explain = _explain(db, {"distinct": "explain_distinct", "key": "a", "query": {"b": {"$gte": 3}}})
    assert explain["executionStats"]["executionSuccess"] is True
    assert explain["queryPlanner"]["namespace"] == f"{db.name}.explain_distinct"
    assert sorted(db.explain_distinct.distinct("a", {"b": {"$gte": 3}})) == [0, 1, 2]


@pytest.fixture
def small_sort_memory(client):
    with server_parameter(client, "internalQueryMaxBlockingSortMemoryUsageBytes", 64 * 1024):
        yield


def test_explain_execution_error(db, small_sort_memory):
    db.drop_collection("explain_execution_error")
    coll = db.explain_execution_error
    coll.insert_many([{"a": "x" * 2048, "b": 1, "c": i} for i in range(40)])  # 80 KB to sort, 64 KB allowed
    fails(lambda: list(coll.find({"a": {"$exists": True}}).sort("b", 1).allow_disk_use(False)), 292)
    failing = {"find": coll.name, "filter": {"a": {"$exists": True}}, "sort": {"b": 1}, "allowDiskUse": False}
    assert "queryPlanner" in _explain(db, failing, "queryPlanner")
    for verbosity in ("executionStats", "allPlansExecution"):
        explain = _explain(db, failing, verbosity)
        stats = explain["executionStats"]
        assert stats["executionSuccess"] is False and "errorMessage" in stats and stats["errorCode"] == 292
        assert ("allPlansExecution" in stats) == (verbosity == "allPlansExecution")
    coll.create_index([("b", 1)])
    coll.create_index([("c", 1)])
    passing = {"find": coll.name, "filter": {"c": {"$lt": 20}}, "sort": {"b": 1}, "allowDiskUse": False}
    assert len(list(coll.find({"c": {"$lt": 20}}).sort("b", 1).allow_disk_use(False))) == 20
    for verbosity in ("executionStats", "allPlansExecution"):
        stats = _explain(db, passing, verbosity)["executionStats"]
        assert stats["executionSuccess"] is True and "errorMessage" not in stats and "errorCode" not in stats


# --------------------------------------------------------------------------------------------------
# what an explained write says it would do is what the write then does

_DOCS = st.lists(st.fixed_dictionaries({"a": st.integers(0, 3), "b": st.integers(0, 3)}), max_size=8)
_FILTER = st.sampled_from([{}, {"a": 1}, {"a": {"$gte": 2}}, {"b": {"$in": [0, 3]}}, {"a": 1, "b": 2}, {"a": 9}])
_UPDATE = st.sampled_from([{"$set": {"b": 2}}, {"$inc": {"a": 1}}, {"$set": {"a": 1}}, {"$unset": {"b": 1}},
                           {"$max": {"b": 2}}])


@HYPO
@given(docs=_DOCS, flt=_FILTER, update=_UPDATE, multi=st.booleans(), upsert=st.booleans(), limit=st.sampled_from([0, 1]))
def test_explained_counters_match_the_writes(db, docs, flt, update, multi, upsert, limit):
    coll = db.explain_counters
    coll.drop()
    coll.create_index([("a", 1)])
    if docs:
        coll.insert_many([dict(d, _id=i) for i, d in enumerate(docs)])
    statement = {"q": flt, "u": update, "multi": multi, "upsert": upsert}
    stage = _stage(_explain(db, {"update": coll.name, "updates": [statement]})["executionStats"]["executionStages"],
                   "UPDATE")
    result = db.command({"update": coll.name, "updates": [statement]})
    upserted = len(result.get("upserted", []))
    assert (stage["nMatched"], stage["nWouldModify"], stage["nWouldUpsert"]) == (result["n"] - upserted,
                                                                               result["nModified"], upserted)
    deletion = {"q": flt, "limit": limit}
    stage = _stage(_explain(db, {"delete": coll.name, "deletes": [deletion]})["executionStats"]["executionStages"],
                   "DELETE")
    assert stage["nWouldDelete"] == db.command({"delete": coll.name, "deletes": [deletion]})["n"]


def test_explain_uuid_names_refused(client):
    """explain_uuid.js: a collection's UUID in place of its name fails cleanly."""
    test_db = client.get_database("explain_uuid_db")
    client.drop_database(test_db.name)
    test_db.explain_uuid.insert_one({"a": 1})
    uuid = test_db.command("listCollections", filter={"name": "explain_uuid"})["cursor"]["firstBatch"][0]["info"]["uuid"]
    for cmd in ({"find": uuid}, {"aggregate": uuid, "cursor": {}, "pipeline": []}, {"count": uuid},
                {"distinct": uuid, "key": "x"}, {"findAndModify": uuid, "query": {"a": 1}, "remove": True},
                {"delete": uuid, "deletes": [{"q": {}, "limit": 1}]},
                {"update": uuid, "updates": [{"q": {"a": 1}, "u": {"$set": {"b": 1}}}]}):
        fails(lambda cmd=cmd: test_db.command({"explain": cmd}), 73, 2, 14)
    client.drop_database(test_db.name)


def test_aggregate_with_explain_false_runs(db):
    """explain_explicit_false.js."""
    db.drop_collection("explain_false")
    db.explain_false.insert_many([{"a": 3, "b": 3}, {"a": 4, "b": 1}, {"a": 4, "b": 2}, {"a": 4, "b": 3}, {"a": 2, "b": 3}])
    pipeline = [{"$match": {"a": {"$gte": 3}}}, {"$group": {"_id": {}, "bSum": {"$sum": "$b"}}},
                {"$addFields": {"newField": "test"}}]
    reply = db.command({"aggregate": "explain_false", "pipeline": pipeline, "cursor": {}, "explain": False})
    assert reply["cursor"]["firstBatch"] == [{"_id": {}, "bSum": 9, "newField": "test"}]
    assert reply["cursor"]["ns"] == f"{db.name}.explain_false"


def test_explain_missing_collection(db):
    """explain_missing_collection.js: every explain of a missing collection answers, with executionStats."""
    db.filler_collection.insert_one({})
    db.drop_collection("explain_null_collection")
    for cmd in ({"find": "explain_null_collection"}, {"count": "explain_null_collection"},
                {"delete": "explain_null_collection", "deletes": [{"q": {"a": 1}, "limit": 0}]},
                {"update": "explain_null_collection", "updates": [{"q": {"a": 1}, "u": {"b": 1}}]},
                {"update": "explain_null_collection", "updates": [{"q": {"a": 1}, "u": {"b": 1}, "upsert": True}]}):
        assert "executionStats" in _explain(db, cmd)
    assert _explain(db, {"aggregate": "explain_null_collection", "pipeline": [{"$match": {"a": 1}}], "cursor": {}})["ok"] == 1
    assert "explain_null_collection" not in db.list_collection_names()
