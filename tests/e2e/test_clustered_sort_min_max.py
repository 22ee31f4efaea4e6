"""Issue 25 item 7: a clustered collection's record order serves a sort on ``_id`` (no blocking SORT
stage: a COLLSCAN / CLUSTERED_IXSCAN in the sort's direction, jstests/noPassthrough/
clustered_collection_sorted_scan.js), and ``find`` with ``min``/``max`` hinted to the clustered index
scans ``[min, max)`` of ``_id`` with mongod 7.0's refusals 6137400 / 6137401
(query_planner.cpp ``handleClusteredScanHint``; jstests/libs/clustered_collections/
clustered_collection_hint_common.js, jstests/core/clustered/clustered_collection_collation.js).
"""

import pytest
from bson.max_key import MaxKey
from bson.min_key import MinKey
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

CLUSTERED = {"key": {"_id": 1}, "unique": True}


def _populate(db, name="c", n=10):
    db.command("create", name, clusteredIndex=CLUSTERED)
    db[name].insert_many([{"_id": i, "a": -i} for i in range(n)])
    return db[name]


def _explain(db, cmd):
    reply = db.command("explain", cmd, verbosity="executionStats")
    return reply["queryPlanner"]["winningPlan"], reply["executionStats"]["nReturned"]


def _stages(plan):
    while plan:
        yield plan["stage"]
        plan = plan.get("inputStage")


@pytest.mark.commands("find", "explain")
@pytest.mark.parametrize("filter, hint, stage", [
    ({}, None, "COLLSCAN"),
    ({"_id": {"$gt": -1}}, None, "CLUSTERED_IXSCAN"),
    ({}, {"_id": 1}, "COLLSCAN"),
    ({"_id": {"$gt": -1}}, {"_id": 1}, "CLUSTERED_IXSCAN"),
    ({"a": {"$lt": 1}}, None, "COLLSCAN"),
])
@pytest.mark.parametrize("direction", [1, -1])
def test_a_sort_on_id_is_the_clustered_order(db, filter, hint, stage, direction):
    _populate(db)
    cmd = {"find": "c", "filter": filter, "sort": {"_id": direction}, **({"hint": hint} if hint else {})}
    plan, returned = _explain(db, cmd)
    assert "SORT" not in _stages(plan)
    assert plan["stage"] == stage and plan["direction"] == ("forward" if direction > 0 else "backward")
    assert returned == 10
    got = [d["_id"] for d in db.c.find(filter, sort=[("_id", direction)], hint=hint)]
    assert got == sorted(range(10), reverse=direction < 0)


@pytest.mark.commands("find", "explain", "aggregate")
def test_other_sorts_still_sort(db):
    _populate(db)
    assert "SORT" in _stages(_explain(db, {"find": "c", "sort": {"_id": 1, "a": 1}})[0])
    assert "SORT" in _stages(_explain(db, {"find": "c", "sort": {"a": 1}})[0])
    # a $natural hint fixes the scan's direction: the sort stays a stage
    plan, _ = _explain(db, {"find": "c", "sort": {"_id": 1}, "hint": {"$natural": -1}})
    assert plan["stage"] == "SORT" and plan["inputStage"]["direction"] == "backward"
    assert [d["_id"] for d in db.c.find(sort=[("_id", 1)], hint=[("$natural", -1)])] == list(range(10))
    out = db.c.aggregate([{"$match": {"a": {"$lte": 0}}}, {"$sort": {"_id": -1}}, {"$limit": 3}])
    assert [d["_id"] for d in out] == [9, 8, 7]


@pytest.mark.commands("find", "explain", "create")
def test_a_collated_sort_needs_a_stage_unless_the_filter_leaves_strings_out(db):
    """Record ids order strings binary-wise: under a non-simple collation only a filter that lets no
    string ``_id`` through keeps the clustered order (mongod's hasCompatibleCollation)."""
    db.command("create", "c", clusteredIndex=CLUSTERED)
    db.c.insert_many([{"_id": s} for s in ("b", "B", "a", "A")] + [{"_id": i} for i in range(3)])
    fo = {"locale": "fo", "caseLevel": True}
    plan, _ = _explain(db, {"find": "c", "sort": {"_id": 1}, "collation": fo})
    assert plan["stage"] == "SORT"
    want = [d["_id"] for d in db.c.find(sort=[("_id", 1)]).collation(fo)]
    assert want[:3] == [0, 1, 2] and [s.lower() for s in want[3:]] == ["a", "a", "b", "b"]
    for flt in ({"_id": {"$gt": -1}}, {"_id": {"$in": [1, 2]}}, {"$and": [{"_id": {"$lt": "z"}}, {"_id": {"$gt": 0}}]}):
        plan, _ = _explain(db, {"find": "c", "filter": flt, "sort": {"_id": -1}, "collation": fo})
        assert "SORT" not in _stages(plan) and plan["direction"] == "backward", flt
    assert [d["_id"] for d in db.c.find({"_id": {"$gt": -1}}, sort=[("_id", -1)]).collation(fo)] == [2, 1, 0]


_IDS = st.one_of(st.integers(-50, 50), st.floats(-50, 50, allow_nan=False), st.text("aAbB", max_size=3))


@pytest.mark.commands("find")
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ids=st.lists(_IDS, max_size=12, unique_by=lambda v: (type(v) is str, v)),
       direction=st.sampled_from([1, -1]), low=st.integers(-60, 60))
def test_the_clustered_order_matches_a_sorted_regular_collection(db, ids, direction, low):
    db.drop_collection("c")
    db.drop_collection("r")
    db.command("create", "c", clusteredIndex=CLUSTERED)
    docs = [{"_id": v} for v in ids if not (isinstance(v, float) and v.is_integer() and int(v) in ids)]
    if docs:
        db.c.insert_many(docs)
        db.r.insert_many(docs)
    for flt in ({}, {"_id": {"$gte": low}}, {"_id": {"$lt": "b"}}):
        got = [d["_id"] for d in db.c.find(flt, sort=[("_id", direction)])]
        want = [d["_id"] for d in db.r.find(flt, sort=[("_id", direction)])]
        assert got == want, flt


@pytest.mark.commands("find", "explain", "createIndexes")
def test_min_max_hinted_to_the_clustered_index_scan_that_id_range(db):
    coll = _populate(db, n=100)
    coll.create_index([("a", -1)])
    for cmd, returned, fields in (
        ({"min": {"_id": 101}, "max": {"_id": MaxKey()}}, 0, {"minRecord": 101, "maxRecord": MaxKey()}),
        ({"min": {"_id": MinKey()}, "max": {"_id": -2}}, 0, {"minRecord": MinKey(), "maxRecord": -2}),
        ({"min": {"_id": 5}, "max": {"_id": 8}}, 3, {"minRecord": 5, "maxRecord": 8}),
        ({"min": {"_id": 95}}, 5, {"minRecord": 95}),
        ({"max": {"_id": 3}, "filter": {"_id": {"$gte": 1}}}, 2, {"minRecord": 1, "maxRecord": 3}),
    ):
        plan, got = _explain(db, {"find": "c", "hint": {"_id": 1}, **cmd})
        assert got == returned, cmd
        assert plan["stage"] == "CLUSTERED_IXSCAN" and plan["direction"] == "forward"
        assert {k: plan[k] for k in ("minRecord", "maxRecord") if k in plan} == fields, cmd
    # the same answers as a regular collection's {_id: 1} index, in _id order, by name or key pattern
    db.r.insert_many([{"_id": i, "a": -i} for i in range(100)])
    for hint in ({"_id": 1}, "_id_"):
        got = list(coll.find(sort=[("_id", 1)]).hint(hint).min([("_id", 5)]).max([("_id", 8)]))
        assert got == list(db.r.find(sort=[("_id", 1)]).hint({"_id": 1}).min([("_id", 5)]).max([("_id", 8)]))
    assert [d["_id"] for d in coll.find({"a": {"$lt": -6}}).hint("_id_").min([("_id", 5)]).max([("_id", 8)])] == [7]


@pytest.mark.commands("find", "explain")
@pytest.mark.parametrize("options, code", [
    ({"min": {"_id": 6}, "max": {"_id": 3}}, 6137401),
    ({"min": {"_id": 6}, "max": {"_id": 6}}, 6137401),
    ({"min": {"a": 6}}, 6137400),
    ({"max": {"_id": 6, "a": 1}}, 6137400),
    ({"min": {"_id": 1}, "hint": {"$natural": 1}}, 291),
])
def test_min_max_refusals(db, options, code):
    _populate(db)
    cmd = {"find": "c", "hint": {"_id": 1}, **options}
    for command in (cmd, {"explain": cmd}):
        with pytest.raises(OperationFailure) as err:
            db.command(command)
        assert err.value.code == code
        assert err.value.details["errmsg"].startswith("error processing query: ")


@pytest.mark.commands("find", "explain", "create")
def test_min_max_under_collations(db):
    """clustered_collection_collation.js: strings compare under the query's collation, which must be
    the collection's for a collatable value (6137400); numbers bound the scan under any collation."""
    db.command("create", "collated", clusteredIndex=CLUSTERED, collation={"locale": "en", "strength": 2})
    db.command("create", "plain", clusteredIndex=CLUSTERED)
    for name in ("collated", "plain"):
        db[name].insert_many([{"_id": 5}, {"_id": 10}, {"_id": "a"}, {"_id": "b"}, {"_id": {"str": "a"}}])
    db.plain.insert_one({"_id": "B"})
    fr = {"locale": "fr_CA", "strength": 2}

    def ids(name, **extra):
        return [d["_id"] for d in db.command("find", name, hint={"_id": 1}, **extra)["cursor"]["firstBatch"]]

    assert sorted(ids("collated", min={"_id": "a"}, max={"_id": "C"})) == ["a", "b"]
    assert sorted(ids("plain", min={"_id": "A"}, max={"_id": "c"})) == ["B", "a", "b"]
    assert ids("collated", min={"_id": 5}, max={"_id": 11}, collation=fr) == [5, 10]
    assert ids("plain", min={"_id": 5}, max={"_id": 11}, collation=fr) == [5, 10]
    for name, extra, code in (("plain", {}, 6137401), ("collated", {"collation": fr}, 6137400),
                              ("plain", {"collation": fr}, 6137400)):
        with pytest.raises(OperationFailure) as err:
            db.command("find", name, hint={"_id": 1}, min={"_id": "a"}, max={"_id": "C"}, **extra)
        assert err.value.code == code, (name, extra)


@pytest.mark.commands("find", "explain", "create", "insert")
def test_a_sort_on_bucket_ids_is_the_clustered_order(db):
    import datetime as dt

    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    start = dt.datetime(2024, 1, 1)
    db.ts.insert_many([{"t": start + dt.timedelta(hours=2 * i), "m": i % 3, "v": i} for i in range(12)])
    buckets = db["system.buckets.ts"]
    want = sorted(d["_id"] for d in buckets.find())
    assert len(want) > 1
    for direction in (1, -1):
        plan, _ = _explain(db, {"find": "system.buckets.ts", "sort": {"_id": direction}})
        assert plan["stage"] == "COLLSCAN" and plan["direction"] == ("forward" if direction > 0 else "backward")
        assert [d["_id"] for d in buckets.find(sort=[("_id", direction)])] == want[::direction]
