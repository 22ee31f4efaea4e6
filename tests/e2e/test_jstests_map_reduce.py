"""mapReduce (deprecated in mongod, still served by 7.0), which Tidemark answered 59 "no such command".
Ported from MongoDB's ``jstests/core/query/mr/``: mr_reduce.js, mr_sort.js, mr_null_arguments.js,
mr_fail_invalid_js.js (its valid parts and the bad emit), mr_scope.js-style scope variables, and the
inline / replace / merge / reduce output modes; a view (time-series collections included) is 166.

Hypothesis checks the family: for random documents and keys, mapReduce's inline results equal the
``$group`` the same map and reduce describe (a count and a sum per key).
"""

from __future__ import annotations

import pytest
from bson.code import Code
from harness.jstests import fails
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.commands("mapReduce", "mapreduce", "insert", "find", "aggregate", "create")

HYPO = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

EMIT_EACH = Code("function() { for (let i = 0; i < this.a.length; i++) emit(this.a[i], 1); }")
SUM = Code("function(k, vs) { return Array.sum(vs); }")


def _mr(db, coll, **options):
    return db.command("mapReduce", coll, **options)


def test_reduce_output_mode(db):
    """mr_reduce.js."""
    db.drop_collection("mr_reduce")
    db.drop_collection("mr_reduce_out")
    db.mr_reduce.insert_many([{"_id": 1, "a": [1, 2]}, {"_id": 2, "a": [2, 3]}, {"_id": 3, "a": [3, 4]}])
    assert _mr(db, "mr_reduce", map=EMIT_EACH, reduce=SUM, out="mr_reduce_out") == {"result": "mr_reduce_out", "ok": 1.0}
    assert list(db.mr_reduce_out.find().sort("_id", 1)) == [
        {"_id": 1, "value": 1}, {"_id": 2, "value": 2}, {"_id": 3, "value": 2}, {"_id": 4, "value": 1}]
    db.mr_reduce.insert_one({"_id": 4, "a": [4, 5]})
    db.mr_reduce_out.insert_one({"_id": 10, "value": 5})  # untouched by the reduce
    _mr(db, "mr_reduce", map=EMIT_EACH, reduce=SUM, out={"reduce": "mr_reduce_out"}, query={"_id": {"$gt": 3}})
    assert list(db.mr_reduce_out.find().sort("_id", 1)) == [
        {"_id": 1, "value": 1}, {"_id": 2, "value": 2}, {"_id": 3, "value": 2}, {"_id": 4, "value": 2},
        {"_id": 5, "value": 1}, {"_id": 10, "value": 5}]


def test_sort_limit_and_query(db):
    """mr_sort.js."""
    db.drop_collection("mr_sort")
    db.mr_sort.create_index([("x", 1)])
    for x in (1, 10, 2, 9, 3, 8, 4, 7, 5, 6):
        db.mr_sort.insert_one({"x": x})
    m, r = Code("function() { emit('a', this.x); }"), SUM
    for options, total in (({}, 55), ({"query": {"x": {"$lt": 3}}}, 3), ({"sort": {"x": 1}, "limit": 2}, 3),
                           ({"sort": {"x": 1}}, 55)):
        db.drop_collection("mr_sort_out")
        _mr(db, "mr_sort", map=m, reduce=r, out="mr_sort_out", **options)
        assert list(db.mr_sort_out.find()) == [{"_id": "a", "value": total}]


@pytest.mark.parametrize("field", ["finalize", "query", "sort", "scope"])
def test_explicit_null_arguments(db, field):
    """mr_null_arguments.js: the Java driver sends null for the options a user left out."""
    db.drop_collection("mr_null_test")
    db.mr_null_test.insert_one({"val": 1})
    reply = _mr(db, "mr_null_test", map=Code("function() { emit(this.val, 1); }"), reduce=SUM,
                out={"merge": "mr_null_test_out"}, **{field: None})
    assert reply["ok"] == 1


def test_inline_finalize_scope_and_other_database(db, client):
    db.drop_collection("mr_tags")
    db.mr_tags.insert_many([{"_id": i, "tags": ["a", "b"][: i % 3], "x": i} for i in range(10)])
    m = Code("function() { this.tags.forEach(function(z) { emit(z, {count: 1}); }); }")
    r = Code("function(key, values) { var total = 0; for (var i = 0; i < values.length; i++) "
             "total += values[i].count; return {count: total}; }")
    reply = _mr(db, "mr_tags", map=m, reduce=r, out={"inline": 1})
    assert reply == {"results": [{"_id": "a", "value": {"count": 6}}, {"_id": "b", "value": {"count": 3}}], "ok": 1.0}
    reply = _mr(db, "mr_tags", map=m, reduce=r, out={"inline": 1}, query={"x": {"$gt": 5}},
                finalize=Code("function(k, v) { return v.count * factor; }"), scope={"factor": 10})
    assert reply["results"] == [{"_id": "a", "value": 20}, {"_id": "b", "value": 10}]
    client.drop_database("mr_other_db")
    reply = _mr(db, "mr_tags", map=m, reduce=r, out={"merge": "merged", "db": "mr_other_db"})
    assert reply["result"] == {"db": "mr_other_db", "collection": "merged"}
    assert list(client.mr_other_db.merged.find().sort("_id", 1)) == [
        {"_id": "a", "value": {"count": 6}}, {"_id": "b", "value": {"count": 3}}]
    client.drop_database("mr_other_db")


def test_errors(db):
    """mr_fail_invalid_js.js and mongod's argument errors."""
    db.drop_collection("mr_errors")
    db.mr_errors.insert_many([{"a": [1, 2, 3]}, {"a": [2, 3, 4]}])
    fails(lambda: _mr(db, "mr_errors", map=EMIT_EACH, reduce=SUM), 40414)  # out is required
    fails(lambda: _mr(db, "mr_errors", reduce=SUM, out={"inline": 1}), 40414)
    fails(lambda: _mr(db, "mr_errors", map=EMIT_EACH, reduce=SUM, out={"inline": 1}, bogus=1), 40415)
    error = fails(lambda: _mr(db, "mr_errors", map=Code("function() { emit(this.a[0]); }"), reduce=SUM,
                              out="mr_errors_out"), 139)
    assert "emit" in str(error)
    fails(lambda: _mr(db, "mr_errors", map=Code("function() { emit(this._id, this.missing.nested); }"),
                      reduce=SUM, out={"inline": 1}), 139)
    # and the next one works
    _mr(db, "mr_errors", map=EMIT_EACH, reduce=SUM, out={"merge": "mr_errors_out"})
    assert list(db.mr_errors_out.find().sort("_id", 1)) == [
        {"_id": 1, "value": 1}, {"_id": 2, "value": 2}, {"_id": 3, "value": 2}, {"_id": 4, "value": 1}]
    db.drop_collection("mr_ts")
    db.create_collection("mr_ts", timeseries={"timeField": "t"})
    fails(lambda: _mr(db, "mr_ts", map=EMIT_EACH, reduce=SUM, out={"inline": 1}), 166)
    assert _mr(db, "mr_missing_collection", map=EMIT_EACH, reduce=SUM, out={"inline": 1})["results"] == []


@HYPO
@given(docs=st.lists(st.fixed_dictionaries({"k": st.sampled_from(["x", "y", 1, 2.5, None]),
                                            "v": st.integers(-50, 50)}), max_size=30))
def test_inline_results_equal_a_group(db, docs):
    db.drop_collection("mr_family")
    if docs:
        db.mr_family.insert_many([dict(d) for d in docs])
    reply = _mr(db, "mr_family", map=Code("function() { emit(this.k, {n: 1, s: this.v}); }"),
                reduce=Code("function(k, vs) { var r = {n: 0, s: 0}; vs.forEach(function(v) { r.n += v.n; "
                            "r.s += v.s; }); return r; }"), out={"inline": 1})
    def key(value):  # a key comes back from JavaScript as a double, as from mongod's
        return repr(float(value)) if isinstance(value, int | float) and not isinstance(value, bool) else repr(value)

    got = {key(row["_id"]): (row["value"]["n"], row["value"]["s"]) for row in reply["results"]}
    expected = {key(row["_id"]): (row["n"], row["s"]) for row in db.mr_family.aggregate(
        [{"$group": {"_id": "$k", "n": {"$sum": 1}, "s": {"$sum": "$v"}}}])}
    assert got == expected


def test_lowercase_alias(db):
    db.drop_collection("mr_alias")
    db.mr_alias.insert_many([{"a": [1, 2]}, {"a": [2]}])
    reply = db.command("mapreduce", "mr_alias", map=EMIT_EACH, reduce=SUM, out={"inline": 1})
    assert reply["results"] == [{"_id": 1, "value": 1}, {"_id": 2, "value": 2}]
