"""Issue 25 items 7 and 13: reads and writes of a clustered collection with an ``_id`` predicate scan only
the clustered key range, explained as mongod 7.0 explains it (``CLUSTERED_IXSCAN`` with ``minRecord`` /
``maxRecord`` and ``direction``: jstests/libs/clustered_collections/clustered_collection_bounded_scan_common.js,
jstests/core/clustered/clustered_collection_collation.js). A comparison first bounds the scan to its
operand's type bracket (``$lt: 10`` scans ``[NaN, 10]``); under a non-simple collation a string operand
bounds it only by that bracket. A differential test checks the answers against a non-clustered copy.
"""

import datetime as dt
import math

import pytest
from bson.codec_options import CodecOptions, DatetimeConversion
from bson.datetime_ms import DatetimeMS
from bson.objectid import ObjectId
from bson.regex import Regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

CLUSTERED = {"key": {"_id": 1}, "unique": True}


def _populate(db, name="c", n=100):
    db.command("create", name, clusteredIndex=CLUSTERED)
    db[name].insert_many([{"_id": i, "a": -i} for i in range(n)])
    db[name].insert_many([{"_id": None, "a": None}, {"_id": "foo", "a": "foo"}])
    return db[name]


def _scan(db, filter, name="c", **extra):
    reply = db.command("explain", {"find": name, "filter": filter, **extra}, verbosity="executionStats",
                       codec_options=db.codec_options)
    return reply["queryPlanner"]["winningPlan"], reply["executionStats"]


@pytest.mark.commands("find", "explain")
@pytest.mark.parametrize("filter, low, high, returned, examined", [
    ({"_id": 5}, 5, 5, 1, 1),
    ({"_id": {"$lt": 10}}, math.nan, 10, 10, 11),
    ({"_id": {"$lte": 10}}, math.nan, 10, 11, 11),
    ({"_id": {"$gt": 89}}, 89, math.inf, 10, 11),
    ({"_id": {"$gte": 89}}, 89, math.inf, 11, 11),
    ({"_id": {"$gt": 20, "$lt": 40}}, 20, 40, 19, 21),
    ({"_id": {"$gte": 20, "$lte": 40}}, 20, 40, 21, 21),
    ({"_id": {"$in": [10, 20, 30]}}, 10, 30, 3, 21),
    ({"$and": [{"_id": {"$gte": 20}}, {"a": {"$lt": -30}}, {"_id": {"$lt": 40}}]}, 20, 40, 9, 21),
])
def test_id_predicates_scan_only_the_clustered_key_range(db, filter, low, high, returned, examined):
    _populate(db)
    plan, stats = _scan(db, filter)
    assert plan["stage"] == "CLUSTERED_IXSCAN" and plan["direction"] == "forward"
    assert list(plan)[:3] == ["stage", "filter", "direction"]
    for field, want in (("minRecord", low), ("maxRecord", high)):
        got = plan[field]
        assert (math.isnan(got) and math.isnan(want)) if isinstance(want, float) and math.isnan(want) else got == want
    assert stats["nReturned"] == returned
    # the range with its inclusive ends, never the 102 documents of the collection
    assert stats["totalDocsExamined"] == examined


@pytest.mark.commands("find", "explain")
def test_other_predicates_scan_the_whole_collection(db):
    _populate(db)
    plan, stats = _scan(db, {"a": {"$gt": -10}})
    assert plan["stage"] == "COLLSCAN" and "minRecord" not in plan and "maxRecord" not in plan
    assert stats["nReturned"] == 10 and stats["totalDocsExamined"] == 102
    for flt in ({"_id": {"$ne": 5}}, {"_id": {"$regex": "^f"}}, {"$or": [{"_id": 1}, {"_id": 2}]},
                {"_id": {"$in": [1, Regex("x")]}}):
        plan, _ = _scan(db, flt)
        assert plan["stage"] == "COLLSCAN", flt


@pytest.mark.commands("find", "explain")
def test_type_brackets_of_other_types_and_backward_scans(db):
    db.command("create", "c", clusteredIndex=CLUSTERED)
    oid = ObjectId()
    when = dt.datetime(2024, 5, 1)
    db.c.insert_many([{"_id": 1}, {"_id": "m"}, {"_id": oid}, {"_id": when}, {"_id": {"k": 1}}])
    plan, stats = _scan(db, {"_id": {"$gte": "a"}})
    assert (plan["minRecord"], plan["maxRecord"]) == ("a", {})
    assert stats["nReturned"] == 1 and stats["totalDocsExamined"] <= 2
    plan, _ = _scan(db, {"_id": {"$lt": oid}})
    assert (plan["minRecord"], plan["maxRecord"]) == (ObjectId("0" * 24), oid)
    dates = db.client.get_database(db.name, codec_options=CodecOptions(
        datetime_conversion=DatetimeConversion.DATETIME_MS))  # the bracket's ends are outside datetime's years
    plan, stats = _scan(dates, {"_id": {"$lte": when}}, hint={"$natural": -1})
    assert plan["direction"] == "backward"
    assert (plan["minRecord"], plan["maxRecord"]) == (DatetimeMS(-(1 << 63)), DatetimeMS(when))
    assert stats["nReturned"] == 1
    plan, stats = _scan(db, {"_id": {"$gt": 5, "$lt": "z"}})  # no value is both: an empty range
    assert plan["stage"] == "CLUSTERED_IXSCAN" and stats["nReturned"] == 0 and stats["totalDocsExamined"] == 0
    assert [d["_id"] for d in db.c.find({"_id": {"$gt": 0}}).hint({"_id": 1})] == [1]
    assert _scan(db, {"_id": 1}, hint="_id_")[0]["stage"] == "CLUSTERED_IXSCAN"


@pytest.mark.commands("find", "explain", "createIndexes")
def test_an_id_equality_prefers_the_clustered_scan_to_an_index(db):
    _populate(db)
    db.c.create_index("a")
    plan, stats = _scan(db, {"_id": 7, "a": -7})
    assert plan["stage"] == "CLUSTERED_IXSCAN" and stats["nReturned"] == 1
    plan, _ = _scan(db, {"_id": {"$gt": 7}, "a": -50})
    assert plan["stage"] == "FETCH" and plan["inputStage"]["indexName"] == "a_1"


@pytest.mark.commands("count", "update", "delete", "aggregate", "findAndModify", "explain", "distinct")
def test_count_aggregate_update_and_delete_use_the_range(db):
    coll = _populate(db)
    for command in ({"count": "c", "query": {"_id": {"$lt": 10}}},
                    {"delete": "c", "deletes": [{"q": {"_id": {"$lt": 10}}, "limit": 0}]},
                    {"update": "c", "updates": [{"q": {"_id": 3}, "u": {"$set": {"b": 1}}}]},
                    {"distinct": "c", "key": "a", "query": {"_id": 3}}):
        reply = db.command("explain", command, verbosity="queryPlanner")
        scan = reply["queryPlanner"]["winningPlan"]["inputStage"]
        assert scan["stage"] == "CLUSTERED_IXSCAN" and scan["maxRecord"] in (10, 3), command
    reply = db.command("explain", {"aggregate": "c", "pipeline": [{"$match": {"_id": {"$gte": 95}}}],
                                   "cursor": {}}, verbosity="executionStats")
    cursor = reply  # a lone $match is answered by the query layer: explained like a find (optimizedPipeline)
    assert cursor["queryPlanner"]["winningPlan"]["stage"] == "CLUSTERED_IXSCAN"
    assert cursor["executionStats"]["totalDocsExamined"] <= 6
    assert coll.count_documents({"_id": {"$lt": 10}}) == 10
    assert coll.update_many({"_id": {"$gte": 95}}, {"$set": {"b": 1}}).modified_count == 5
    assert coll.find_one_and_update({"_id": 50}, {"$set": {"b": 2}})["a"] == -50
    assert coll.delete_many({"_id": {"$in": [1, 2, 3, "foo"]}}).deleted_count == 4
    assert coll.delete_many({"_id": {"$lt": 10}}).deleted_count == 7
    assert sorted(d["_id"] for d in coll.find({"b": {"$exists": True}})) == [50, 95, 96, 97, 98, 99]
    assert coll.count_documents({}) == 102 - 11


@pytest.mark.commands("find", "explain", "create")
def test_string_bounds_only_under_the_simple_collation(db):
    """clustered_collection_collation.js: record ids compare strings binary-wise, so a string bound
    under a non-simple collation widens to the string type bracket; other types stay exact."""
    db.command("create", "collated", clusteredIndex=CLUSTERED, collation={"locale": "en", "strength": 2})
    db.command("create", "plain", clusteredIndex=CLUSTERED)
    for name in ("collated", "plain"):
        db[name].insert_many([{"_id": 5}, {"_id": 10}, {"_id": "a"}, {"_id": "b"}, {"_id": {"str": "a"}}])
    fr = {"locale": "fr_CA", "strength": 2}

    def bounds(name, flt, collation=None):
        extra = {"collation": collation} if collation else {}
        plan, stats = _scan(db, flt, name, **extra)
        return plan.get("minRecord"), plan.get("maxRecord"), stats["nReturned"]

    assert bounds("collated", {"_id": 5}) == (5, 5, 1)
    assert bounds("collated", {"_id": 5}, fr) == (5, 5, 1)
    assert bounds("collated", {"_id": "A"}) == ("", {}, 1)
    assert bounds("collated", {"_id": {"str": "A"}}) == ({}, [], 1)
    assert bounds("collated", {"_id": {"$in": ["A", 5]}}) == (5, {}, 2)
    assert bounds("collated", {"_id": "A"}, {"locale": "simple"}) == ("A", "A", 0)
    assert bounds("plain", {"_id": "A"}) == ("A", "A", 0)
    assert bounds("plain", {"_id": "A"}, fr) == ("", {}, 1)
    assert bounds("plain", {"_id": {"$gt": "a"}}, fr) == ("", {}, 1)


# --- the same answers as a non-clustered collection ---------------------------------------------------

_ids = st.one_of(
    st.integers(-20, 20),
    st.floats(-20, 20, allow_nan=False).map(lambda f: round(f, 1)),
    st.sampled_from(["", "a", "A", "ab", "b", "ba", "z", "é"]),
    st.integers(0, 5).map(lambda i: ObjectId(bytes([i]) * 12)),
    st.integers(0, 3).map(lambda d: dt.datetime(2024, 1, 1 + d)),
    st.booleans(),
    st.none(),
    st.integers(0, 2).map(lambda i: {"k": i}),
)
_ops = st.sampled_from(["$eq", "$gt", "$gte", "$lt", "$lte", "$ne"])
_condition = st.one_of(
    _ids,
    st.dictionaries(_ops, _ids, min_size=1, max_size=2),
    st.lists(_ids, max_size=4).map(lambda v: {"$in": v}),
    st.lists(_ids, max_size=3).map(lambda v: {"$nin": v}),
)
_leaf = st.one_of(_condition.map(lambda c: {"_id": c}),
                  st.integers(-3, 3).map(lambda i: {"a": {"$gte": i}}))


def _filters():
    conj = st.lists(_leaf, min_size=1, max_size=3).map(lambda parts: {"$and": parts})
    disj = st.lists(_leaf, min_size=1, max_size=3).map(lambda parts: {"$or": parts})
    return st.one_of(_leaf, conj, disj, st.tuples(_leaf, disj).map(lambda t: {**t[0], **t[1]}))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(flt=_filters(), collation=st.sampled_from([None, {"locale": "en", "strength": 2}]),
       backward=st.booleans())
@pytest.mark.commands("find", "count")
def test_clustered_and_regular_collections_answer_id_predicates_alike(diff_colls, flt, collation, backward):
    clustered, regular = diff_colls
    options = {"collation": collation} if collation else {}
    hint = [("$natural", -1)] if backward else None
    got = sorted(repr(d) for d in clustered.find(flt, hint=hint, **options))
    want = sorted(repr(d) for d in regular.find(flt, **options))
    assert got == want, flt
    assert clustered.count_documents(flt, **options) == len(want)


@pytest.fixture
def diff_colls(db):
    db.command("create", "clustered", clusteredIndex=CLUSTERED)
    values = [*range(-20, 21, 3), 2.5, -0.5, "", "a", "A", "ab", "b", "z", "é", *(ObjectId(bytes([i]) * 12)
              for i in range(0, 6, 2)), dt.datetime(2024, 1, 2), True, False, None, {"k": 1}, {"k": 2}]
    docs = [{"_id": v, "a": i % 7 - 3} for i, v in enumerate(values)]
    db.clustered.insert_many(docs)
    db.regular.insert_many(docs)
    return db.clustered, db.regular
