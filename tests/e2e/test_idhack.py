"""mongod 7.0's IDHACK: a statement whose filter is a simple ``{_id: v}`` (CanonicalQuery::isSimpleIdQuery)
is answered by a point lookup of the ``_id`` index, which explain shows as the stage ``IDHACK`` (with no
FETCH, SORT or LIMIT around it) and the profiler, currentOp and the slow-query log summarize as
``planSummary: "IDHACK"`` — unless a hint, a skip, min/max, showRecordId or a collation other than the
collection's default rules it out (isIdHackEligibleQuery), or the collection has no ``_id`` index (a
clustered one). Finds, aggregates whose query layer is the lookup, counts, updates, deletes and
findAndModify plan it alike. jstests/core/query/idhack.js (classic engine), ported, and the family of
filters around it: whichever plan runs, the documents are those a hinted ``_id`` index scan finds.
"""

from __future__ import annotations

import datetime

import bson
import pytest
from bson.decimal128 import Decimal128
from harness.jstests import plan_stages
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("explain", "find", "aggregate", "count", "update", "delete", "findAndModify")


def _winning(reply: dict) -> dict:
    return reply["queryPlanner"]["winningPlan"]


def _explain_find(db, **find) -> dict:
    return db.command({"explain": {"find": "c", **find}, "verbosity": "executionStats"})


def test_idhack_js(db):
    """jstests/core/query/idhack.js, its explain half (its results are ported in
    test_jstests_query_sweep.py: test_id_queries, test_id_query_projections, ...): an ``_id`` equality is
    IDHACK, a hint, a skip, a regex or min/max is not, and a projection sits over the lookup."""
    t = db.c
    t.insert_many([{"_id": {"x": 1}, "z": 1}, {"_id": {"x": 2}, "z": 2}, {"_id": {"x": 3}, "z": 3},
                   {"_id": 1, "z": 4}, {"_id": 2, "z": 5}, {"_id": 3, "z": 6}, {"_id": "abc"}])
    explain = _explain_find(db, filter={"_id": {"x": 2}})
    assert explain["executionStats"]["nReturned"] == 1
    assert explain["executionStats"]["totalKeysExamined"] == 1
    assert _winning(explain) == {"stage": "IDHACK"}
    t.create_index([("_id", 1), ("a", 1)])
    assert "IDHACK" not in plan_stages(_winning(_explain_find(db, filter={"_id": {"x": 2}}, hint={"_id": 1, "a": 1})))
    assert "IDHACK" not in plan_stages(_winning(_explain_find(db, filter={"_id": {"x": 2}}, skip=1)))
    assert "IDHACK" not in plan_stages(_winning(_explain_find(db, filter={"_id": bson.Regex("abc")})))
    covered = _explain_find(db, filter={"_id": {"x": 2}}, projection={"_id": 1})
    assert plan_stages(_winning(covered)) == ["PROJECTION_SIMPLE", "IDHACK"]
    bounded = _explain_find(db, filter={"_id": 2}, hint={"_id": 1}, min={"_id": 1}, max={"_id": 3})
    assert "IDHACK" not in plan_stages(_winning(bounded))


def test_idhack_has_no_limit_sort_or_fetch_and_counts_what_it_reads(db):
    db.c.insert_many([{"_id": i, "x": i} for i in range(5)])
    explain = _explain_find(db, filter={"_id": 3}, sort={"x": -1}, limit=5)
    assert _winning(explain) == {"stage": "IDHACK"}
    stages = explain["executionStats"]["executionStages"]
    assert (stages["stage"], stages["nReturned"], stages["keysExamined"], stages["docsExamined"]) == ("IDHACK", 1, 1, 1)
    missing = _explain_find(db, filter={"_id": 99})["executionStats"]
    assert (missing["nReturned"], missing["totalKeysExamined"], missing["totalDocsExamined"]) == (0, 0, 0)
    assert list(db.c.find({"_id": 3}).sort("x", -1)) == [{"_id": 3, "x": 3}]


def test_show_record_id_is_no_idhack(db):
    db.c.insert_one({"_id": 1})
    explain = db.command({"explain": {"find": "c", "filter": {"_id": 1}, "showRecordId": True}})
    assert "IDHACK" not in plan_stages(_winning(explain))


def test_every_statement_kind_plans_the_lookup(db):
    db.c.insert_many([{"_id": i, "x": i} for i in range(5)])
    cases = {
        "count": ({"count": "c", "query": {"_id": 3}}, ["COUNT", "IDHACK"]),
        "update": ({"update": "c", "updates": [{"q": {"_id": 3}, "u": {"$set": {"y": 1}}}]}, ["UPDATE", "IDHACK"]),
        "delete": ({"delete": "c", "deletes": [{"q": {"_id": 3}, "limit": 1}]}, ["DELETE", "IDHACK"]),
        "findAndModify": ({"findAndModify": "c", "query": {"_id": 3}, "update": {"$set": {"y": 1}}},
                          ["UPDATE", "IDHACK"]),
        "aggregate": ({"aggregate": "c", "pipeline": [{"$match": {"_id": 3}}], "cursor": {}}, ["IDHACK"]),
    }
    for name, (cmd, expected) in cases.items():
        for verbosity in ("queryPlanner", "executionStats"):
            reply = db.command({"explain": cmd, "verbosity": verbosity})
            assert plan_stages(_winning(reply)) == expected, (name, reply)
    hinted = {"update": "c", "updates": [{"q": {"_id": 3}, "u": {"$set": {"y": 1}}, "hint": {"_id": 1}}]}
    assert plan_stages(_winning(db.command({"explain": hinted}))) == ["UPDATE", "FETCH", "IXSCAN"]
    assert db.c.find_one({"_id": 3}) == {"_id": 3, "x": 3}  # (explain wrote nothing)


def test_profile_summarizes_idhack(db):
    db.c.insert_many([{"_id": i, "x": i} for i in range(8)])
    db.command("profile", 2)
    try:
        list(db.c.find({"_id": 3}))
        db.c.update_one({"_id": 4}, {"$set": {"y": 1}})
        db.c.count_documents({"_id": 5})
        db.c.find_one_and_update({"_id": 6}, {"$set": {"y": 2}})
        db.c.delete_one({"_id": 7})
        list(db.c.find({"_id": 2}).skip(0).hint([("_id", 1)]))
    finally:
        db.command("profile", 0)
    summaries = [(p["op"], p.get("planSummary"), p.get("keysExamined"), p.get("docsExamined"))
                 for p in db.system.profile.find({"ns": f"{db.name}.c"})]
    assert summaries == [("query", "IDHACK", 1, 1), ("update", "IDHACK", 1, 1), ("command", "IDHACK", 1, 1),
                         ("command", "IDHACK", 1, 1), ("remove", "IDHACK", 1, 1), ("query", "IXSCAN { _id: 1 }", 1, 1)]


def test_a_lookup_cursor_is_exhausted_with_its_document(db):
    db.c.insert_many([{"_id": i} for i in range(3)])
    reply = db.command("find", "c", filter={"_id": 1}, batchSize=1)
    assert reply["cursor"]["id"] == 0 and reply["cursor"]["firstBatch"] == [{"_id": 1}]


def test_collation_other_than_the_default_is_no_idhack(db):
    db.create_collection("c", collation={"locale": "en", "strength": 2})
    db.c.insert_many([{"_id": "a"}, {"_id": "B"}])
    same = _explain_find(db, filter={"_id": "b"}, collation={"locale": "en", "strength": 2})
    assert _winning(same) == {"stage": "IDHACK"}
    assert _winning(_explain_find(db, filter={"_id": "b"})) == {"stage": "IDHACK"}
    assert list(db.c.find({"_id": "b"})) == [{"_id": "B"}]
    other = _explain_find(db, filter={"_id": "b"}, collation={"locale": "simple"})
    assert "IDHACK" not in plan_stages(_winning(other))
    assert list(db.c.find({"_id": "b"}, collation={"locale": "simple"})) == []


def test_clustered_collection_has_no_idhack(db):
    db.create_collection("c", clusteredIndex={"key": {"_id": 1}, "unique": True})
    db.c.insert_many([{"_id": i} for i in range(3)])
    plan = _winning(_explain_find(db, filter={"_id": 1}))
    assert plan["stage"] == "CLUSTERED_IXSCAN", plan


# The family: filters on _id of every shape (literal values of each BSON type, operators, extra
# fields, several conditions) and statement options. The lookup is chosen exactly when mongod's rule
# says so, and whichever plan runs, the documents are the ones a hinted _id index scan returns.
ID_VALUES = st.one_of(
    st.integers(-3, 3), st.floats(-2, 2, allow_nan=False).map(lambda f: round(f, 1)),
    st.sampled_from(["a", "b", "", "B"]), st.just(None), st.just([1, 2]), st.just([]),
    st.just({"x": 1}), st.just({}), st.just(bson.Regex("^a")), st.sampled_from([Decimal128("1"), Decimal128("7")]),
    st.just(bson.ObjectId("5f0000000000000000000001")), st.just(datetime.datetime(2020, 1, 1)),
    st.just(bson.MinKey()), st.just(bson.MaxKey()), st.just(bson.Binary(b"\x01", 0)), st.just(True))
STORED = [0, 1, 2, -1, 1.5, "a", "b", "B", "", {"x": 1}, {}, Decimal128("7"), bson.ObjectId("5f0000000000000000000001"),
          datetime.datetime(2020, 1, 1), bson.Binary(b"\x01", 0), True, False, bson.MinKey(), bson.MaxKey()]


def _simple(filter: dict) -> bool:
    if list(filter) != ["_id"]:
        return False
    value = filter["_id"]
    if isinstance(value, dict):
        return not value or not next(iter(value)).startswith("$")
    return not isinstance(value, (list, bson.Regex, type(None)))


FILTERS = st.one_of(
    ID_VALUES.map(lambda v: {"_id": v}),
    ID_VALUES.map(lambda v: {"_id": {"$eq": v}}),
    ID_VALUES.map(lambda v: {"_id": {"$in": [v]}}),
    ID_VALUES.map(lambda v: {"_id": {"$gte": v}}),
    st.tuples(ID_VALUES, st.integers(0, 2)).map(lambda p: {"_id": p[0], "x": p[1]}),
    st.tuples(st.integers(0, 2), ID_VALUES).map(lambda p: {"x": p[0], "_id": p[1]}),
)


@pytest.fixture
def family(db):
    db.c.insert_many([{"_id": v, "x": i % 3} for i, v in enumerate(STORED)])
    db.c.create_index("x")
    return db


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(flt=FILTERS, skip=st.sampled_from([0, 0, 1]), limit=st.sampled_from([0, 0, 1, 2]),
       sort=st.sampled_from([None, {"x": 1}, {"_id": -1}]))
def test_idhack_family(family, flt, skip, limit, sort):
    db = family
    find: dict = {"filter": flt, "skip": skip, "limit": limit}
    if sort:
        find["sort"] = sort
    try:
        expected = db.command("find", "c", hint={"_id": 1}, **find)["cursor"]["firstBatch"]
    except OperationFailure as refused:  # (e.g. a regex under $gte: 2 BadValue, whatever the plan)
        with pytest.raises(OperationFailure) as info:
            db.command("find", "c", **find)
        assert info.value.code == refused.code
        return
    plan = _winning(db.command({"explain": {"find": "c", **find}}))
    assert ("IDHACK" in plan_stages(plan)) == (_simple(flt) and not skip), plan
    assert db.command("find", "c", **find)["cursor"]["firstBatch"] == expected
    counted = db.command("count", "c", query=flt)["n"]
    assert counted == len(db.command("find", "c", filter=flt, hint={"_id": 1})["cursor"]["firstBatch"])


def test_explain_of_return_key_and_show_record_id(db):
    db.c.insert_many([{"_id": i, "x": i} for i in range(3)])
    keyed = db.command({"explain": {"find": "c", "filter": {"_id": 1}, "returnKey": True, "projection": {"x": 1}},
                        "verbosity": "executionStats"})
    assert plan_stages(_winning(keyed)) == ["RETURN_KEY", "IDHACK"]
    assert keyed["executionStats"]["nReturned"] == 1
    ranged = db.command({"explain": {"find": "c", "filter": {"x": {"$gte": 1}}, "returnKey": True}})
    assert plan_stages(_winning(ranged)) == ["RETURN_KEY", "COLLSCAN"]
    db.command("create", "v", viewOn="c", pipeline=[])
    for option in ("returnKey", "showRecordId"):
        with pytest.raises(Exception) as info:
            db.command({"explain": {"find": "v", "filter": {"_id": 1}, option: True}})
        assert (info.value.code, info.value.details["errmsg"]) == (168, f"Option {option} not supported in aggregation.")
