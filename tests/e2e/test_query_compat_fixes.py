"""Issue 13 A.2-A.8: let variables, computed $project paths through arrays, unknown fields and
concerns, null optional fields, arrayFilters with $and/$or, validation codes, $const."""

import datetime as dt

import pytest
from pymongo.errors import OperationFailure

HOUR_MS = 3600 * 1000


def _recent(db):
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    db.e.insert_many([{"_id": 1, "ts": now - dt.timedelta(minutes=5), "v": 1},
                      {"_id": 2, "ts": now - dt.timedelta(hours=5), "v": 2}])
    return {"since": {"$subtract": ["$$NOW", HOUR_MS]}}


def _code(fn):
    with pytest.raises(OperationFailure) as err:
        fn()
    return err.value.code


# --- A.2 let --------------------------------------------------------------------------------------

@pytest.mark.commands("find")
def test_find_let_is_evaluated_as_an_expression(db):
    let = _recent(db)
    docs = db.command("find", "e", filter={"$expr": {"$gt": ["$ts", "$$since"]}}, let=let)["cursor"]["firstBatch"]
    assert [d["_id"] for d in docs] == [1]


@pytest.mark.commands("aggregate")
def test_aggregate_and_lookup_let_are_evaluated(db):
    let = _recent(db)
    out = list(db.e.aggregate([{"$match": {"$expr": {"$gt": ["$ts", "$$since"]}}}], let=let))
    assert [d["_id"] for d in out] == [1]
    db.o.insert_many([{"_id": "a", "min": 2}])
    out = list(db.o.aggregate([{"$lookup": {"from": "e", "let": {"m": {"$add": ["$min", 0]}},
                                            "pipeline": [{"$match": {"$expr": {"$gte": ["$v", "$$m"]}}}],
                                            "as": "hits"}}]))
    assert [h["_id"] for h in out[0]["hits"]] == [2]


@pytest.mark.commands("update")
def test_update_let_reaches_pipelines_and_expr_filters(db):
    let = _recent(db)
    let["bonus"] = {"$multiply": [5, 2]}
    db.command("update", "e", updates=[{"q": {"$expr": {"$gt": ["$ts", "$$since"]}},
                                        "u": [{"$set": {"v": {"$add": ["$v", "$$bonus"]}}}], "multi": True}],
               let=let)
    assert {d["_id"]: d["v"] for d in db.e.find()} == {1: 11, 2: 2}


@pytest.mark.commands("delete", "findAndModify")
def test_delete_and_find_and_modify_let(db):
    let = _recent(db)
    r = db.command("findAndModify", "e", query={"$expr": {"$lt": ["$ts", "$$since"]}},
                   update={"$set": {"old": True}}, let=let, new=True)
    assert r["value"]["_id"] == 2 and r["value"]["old"] is True
    r = db.command("delete", "e", deletes=[{"q": {"$expr": {"$lt": ["$ts", "$$since"]}}, "limit": 0}], let=let)
    assert r["n"] == 1 and db.e.count_documents({}) == 1


@pytest.mark.commands("find")
def test_let_reading_a_field_fails_like_mongod(db):
    db.e.insert_one({"a": 1})
    assert _code(lambda: db.command("find", "e", let={"x": "$a"})) == 4890500


# --- A.3 $project through arrays ---------------------------------------------------------------------

@pytest.mark.commands("aggregate")
def test_project_computed_dotted_path_applies_to_every_array_element(db):
    db.p.insert_one({"_id": 1, "c": [{"b": 1, "x": 9}, {"b": 2}, 7]})
    # mongod's projection_node.cpp: the inclusion pass keeps a scalar element's place when computed
    # fields lie below, and the computed pass turns it into a document of them (add_fields_adds_to_missing_fields.js)
    out = list(db.p.aggregate([{"$project": {"c.b": 1, "c.a": {"$literal": 4}}}]))
    assert out == [{"_id": 1, "c": [{"b": 1, "a": 4}, {"b": 2, "a": 4}, {"a": 4}]}]
    out = list(db.p.aggregate([{"$project": {"_id": 0, "c.a": {"$literal": 4}}}]))
    assert out == [{"c": [{"a": 4}, {"a": 4}, {"a": 4}]}]
    out = list(db.p.aggregate([{"$addFields": {"c.a": 4}}]))
    assert out[0]["c"] == [{"b": 1, "x": 9, "a": 4}, {"b": 2, "a": 4}, {"a": 4}]


# --- A.4 unknown fields, concerns ---------------------------------------------------------------------

@pytest.mark.commands("update")
def test_update_statement_with_unknown_or_8_0_field_is_refused(db):
    db.u.insert_one({"_id": 1})
    assert _code(lambda: db.command("update", "u", updates=[{"q": {}, "u": {"$set": {"a": 1}}, "upsret": True}])) \
        == 40415
    assert _code(lambda: db.command("update", "u", updates=[{"q": {}, "u": {"$set": {"a": 1}}, "sort": {"a": 1}}])) \
        == 40415
    assert _code(lambda: db.command("delete", "u", deletes=[{"q": {}, "limit": 0, "multi": True}])) == 40415
    assert _code(lambda: db.command("update", "u", updates=[{"q": {}, "u": {}}], bogus=1)) == 40415
    assert _code(lambda: db.command("count", "u", bogus=1)) == 40415
    assert db.u.find_one() == {"_id": 1}


@pytest.mark.commands("find", "insert")
def test_concerns_a_standalone_cannot_honour_are_refused(db):
    db.c.insert_one({"_id": 1})
    assert _code(lambda: db.command("find", "c", readConcern={"level": "snapshot"})) == 123
    assert _code(lambda: db.command("find", "c", readConcern={"level": "linearizable"})) == 123
    assert _code(lambda: db.command("find", "c", readConcern={"level": "bogus"})) == 9
    assert _code(lambda: db.command("insert", "c", documents=[{"_id": 2}], writeConcern={"w": 50})) == 2
    assert _code(lambda: db.command("insert", "c", documents=[{"_id": 3}], writeConcern={"w": 51})) == 9
    assert db.c.count_documents({}) == 1
    ok = db.command("find", "c", readConcern={"level": "majority"})
    assert ok["cursor"]["firstBatch"] == [{"_id": 1}]
    db.command("insert", "c", documents=[{"_id": 4}], writeConcern={"w": "majority", "j": True})


# --- A.5 null optional fields ---------------------------------------------------------------------------

@pytest.mark.commands("create", "collMod")
def test_null_optional_fields_read_as_absent(db):
    db.command("create", "n1", validator=None, expireAfterSeconds=None)
    db.command("create", "n2", timeseries={"timeField": "t", "metaField": None, "granularity": None})
    info = next(db.list_collections(filter={"name": "n2"}))
    assert "metaField" not in info["options"]["timeseries"]
    db.command("collMod", "n2", timeseries={"granularity": None})
    db.command("collMod", "n1", validator=None)


# --- A.6 arrayFilters with $and/$or ---------------------------------------------------------------------

@pytest.mark.commands("update")
def test_array_filters_take_the_identifier_from_and_or_children(db):
    db.af.insert_one({"_id": 1, "a": [{"x": 1, "y": 1}, {"x": 2, "y": 5}, {"x": 3, "y": 0}]})
    db.af.update_one({}, {"$set": {"a.$[e].hit": True}},
                     array_filters=[{"$or": [{"e.x": 1}, {"e.y": {"$gt": 4}}]}])
    db.af.update_one({}, {"$set": {"a.$[f].both": True}},
                     array_filters=[{"$and": [{"f.x": {"$gte": 2}}, {"f.y": 0}]}])
    a = db.af.find_one()["a"]
    assert [e.get("hit", False) for e in a] == [True, True, False]
    assert [e.get("both", False) for e in a] == [False, False, True]


# --- A.7 validation codes ------------------------------------------------------------------------------

@pytest.mark.commands("create", "collMod")
def test_validation_codes(db):
    db.create_collection("tsv", timeseries={"timeField": "t"})
    assert _code(lambda: db.command("create", "badview", viewOn="system.buckets.tsv", pipeline=[])) == 73
    db.create_collection("plain")
    assert _code(lambda: db.command("collMod", "plain", expireAfterSeconds=10)) == 72
    assert _code(lambda: db.plain.create_index("a", partialFilterExpression=5)) == 14


@pytest.mark.commands("create")
def test_buckets_collection_with_only_a_clustered_index_can_be_created(db):
    # buckets collections use the legacy form only; the index-spec form is refused there (mongod 7.0)
    db.command("create", "system.buckets.raw", clusteredIndex=True)
    assert "system.buckets.raw" in db.list_collection_names()
    assert _code(lambda: db.command("create", "system.buckets.raw2",
                                    clusteredIndex={"key": {"_id": 1}, "unique": True})) == 5979703


@pytest.mark.commands("find")
def test_hints_on_buckets_reads(db):
    db.create_collection("tsh", timeseries={"timeField": "t", "metaField": "m"})
    db.tsh.insert_one({"t": dt.datetime(2024, 1, 1), "m": 1})
    assert _code(lambda: list(db["system.buckets.tsh"].find({}, hint="nope"))) == 2
    db.s.insert_many([{"_id": 1, "a": 1}, {"_id": 2}])
    db.s.create_index("a", sparse=True)
    assert [d["_id"] for d in db.s.find({}).hint("a_1")] == [1]


# --- A.8 $const -----------------------------------------------------------------------------------------

@pytest.mark.commands("aggregate")
def test_const_and_literal_are_both_accepted(db):
    db.k.insert_one({"_id": 1})
    out = list(db.k.aggregate([{"$project": {"a": {"$const": "$notAPath"}, "b": {"$literal": 1}}}]))
    assert out == [{"_id": 1, "a": "$notAPath", "b": 1}]
