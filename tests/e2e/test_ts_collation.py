"""Collation on time-series collections (issue 13 A.1): reads and writes under a per-operation or
default collation answer exactly as a regular collection holding the same documents does (the regular
path is the reference), while bucket pruning stays loose for strings (control min/max and the buckets
index are binary-ordered) and still prunes by time and, exactly under the collation, by meta."""

import datetime as dt

import pytest
from pymongo import DeleteMany, UpdateMany

CI = {"locale": "en", "strength": 2}  # case-insensitive
SIMPLE = {"locale": "simple"}
T0 = dt.datetime(2024, 1, 1)

# meta "A", "a" and "b" live in different buckets; the string field s has per-bucket control min/max
# that prune under the simple collation but not under CI ("X".."Xb" vs "x": binary order puts "x" after)
DOCS = (
    [{"_id": i, "t": T0 + dt.timedelta(minutes=i), "m": "A", "s": "X" if i % 2 else "Xb", "v": i}
     for i in range(0, 4)]
    + [{"_id": i, "t": T0 + dt.timedelta(minutes=i), "m": "a", "s": "x", "v": i} for i in range(4, 7)]
    + [{"_id": i, "t": T0 + dt.timedelta(hours=5, minutes=i), "m": "b", "s": "Y" if i % 2 else "y", "v": i}
       for i in range(7, 10)]
)


def _pair(db, *, collation=None, docs=DOCS):
    """A time-series collection and a regular one holding the same documents."""
    extra = {"collation": collation} if collation else {}
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"}, **extra)
    db.create_collection("ref", **extra)
    db.ts.insert_many([dict(d) for d in docs])
    db.ref.insert_many([dict(d) for d in docs])
    return db.ts, db.ref


def _sorted(docs):
    return sorted(docs, key=lambda d: d["_id"])


def _same_contents(ts, ref):
    assert _sorted(ts.find()) == _sorted(ref.find())


def _ts_explain(db, cmd):
    explain = db.command("explain", cmd, verbosity="executionStats")
    return explain["stages"][0]["$cursor"]["queryPlanner"]["winningPlan"]["timeseries"]


# ------------------------------------------------------------------------------------------ reads


@pytest.mark.commands("find")
@pytest.mark.parametrize("flt", [
    {"m": "a"}, {"m": {"$in": ["B", "zz"]}}, {"m": {"$gt": "a"}}, {"m": {"$lte": "A"}},
    {"s": "x"}, {"s": {"$in": ["XB"]}}, {"s": {"$gte": "x", "$lt": "xc"}}, {"s": {"$lt": "Y"}},
    {"s": "x", "t": {"$gte": T0 + dt.timedelta(minutes=3)}}, {"$or": [{"m": "B"}, {"s": "xB"}]},
])
def test_find_with_a_per_operation_collation_matches_a_regular_collection(db, flt):
    ts, ref = _pair(db)
    expected = _sorted(ref.find(flt, collation=CI))
    assert expected  # each filter matches something under CI
    assert _sorted(ts.find(flt, collation=CI)) == expected
    assert _sorted(ts.find(flt)) == _sorted(ref.find(flt))  # and simple without it


@pytest.mark.commands("find")
def test_find_sorts_strings_by_the_collation(db):
    ts, ref = _pair(db)
    sort = [("s", 1), ("_id", -1)]
    expected = [d["_id"] for d in ref.find({}, sort=sort, collation=CI)]
    assert [d["_id"] for d in ts.find({}, sort=sort, collation=CI)] == expected
    assert expected != [d["_id"] for d in ref.find({}, sort=sort)]  # the collation changes the order


@pytest.mark.commands("count", "distinct", "aggregate")
def test_count_distinct_and_aggregate_use_the_per_operation_collation(db):
    ts, ref = _pair(db)
    for flt in ({"m": "a"}, {"s": "X"}, {"s": {"$gte": "xb"}}):
        assert ts.count_documents(flt, collation=CI) == ref.count_documents(flt, collation=CI)
        assert db.command("count", "ts", query=flt, collation=CI)["n"] == \
            db.command("count", "ref", query=flt, collation=CI)["n"]
    assert len(ts.distinct("m", collation=CI)) == len(ref.distinct("m", collation=CI)) == 2
    assert sorted(v.lower() for v in ts.distinct("s", {"m": "A"}, collation=CI)) == ["x", "xb"]
    pipeline = [{"$match": {"s": "x"}}, {"$group": {"_id": "$m", "n": {"$sum": 1}}}, {"$sort": {"n": -1}}]
    expected = list(ref.aggregate(pipeline, collation=CI))
    assert [g["n"] for g in ts.aggregate(pipeline, collation=CI)] == [g["n"] for g in expected] == [5]


@pytest.mark.commands("explain")
def test_a_per_operation_collation_still_prunes_buckets_by_time_and_meta(db):
    ts, _ = _pair(db)
    buckets = db.system.buckets.ts.count_documents({})
    assert buckets == 3
    # meta compared under the collation decides whole buckets: "A" and "a", not "b"
    info = _ts_explain(db, {"find": "ts", "filter": {"m": "a"}, "collation": CI})
    assert info["bucketsUnpacked"] == 2 and info["measurementsReturned"] == 7
    # a string measurement bound does not prune under the collation, time still does
    late = {"s": "y", "t": {"$gte": T0 + dt.timedelta(hours=5)}}
    info = _ts_explain(db, {"find": "ts", "filter": late, "collation": CI})
    assert info["bucketsUnpacked"] == 1 and info["measurementsReturned"] == 3
    assert len(list(ts.find(late, collation=CI))) == 3


@pytest.mark.commands("aggregate")
def test_default_collation_group_and_simple_override(db):
    ts, ref = _pair(db, collation=CI)
    pipeline = [{"$group": {"_id": "$m", "n": {"$sum": 1}}}, {"$sort": {"n": -1}}]
    assert [g["n"] for g in ts.aggregate(pipeline)] == [g["n"] for g in ref.aggregate(pipeline)] == [7, 3]
    assert ts.count_documents({"s": "x"}, collation=SIMPLE) == ref.count_documents({"s": "x"}, collation=SIMPLE)
    assert ts.count_documents({"m": "a"}) == 7


# ------------------------------------------------------------------------------------------ writes


@pytest.mark.commands("delete")
@pytest.mark.parametrize("flt", [
    {"m": "a"},                                    # meta only: whole buckets, "A" included
    {"m": {"$in": ["B"]}},
    {"s": "x"},                                    # measurement strings: unpack and repack
    {"m": "A", "s": "xB"},
    {"s": {"$gte": "xb"}, "t": {"$lt": T0 + dt.timedelta(hours=1)}},
])
def test_delete_many_with_a_per_operation_collation(db, flt):
    ts, ref = _pair(db)
    expected = ref.delete_many(flt, collation=CI).deleted_count
    assert expected > 1
    assert ts.delete_many(flt, collation=CI).deleted_count == expected
    _same_contents(ts, ref)


@pytest.mark.commands("delete")
def test_case_insensitive_meta_delete_removes_every_case_variant(db):
    ts, _ = _pair(db)
    assert ts.delete_many({"m": "a"}, collation=CI).deleted_count == 7
    assert sorted(d["m"] for d in ts.find()) == ["b"] * 3
    assert db.system.buckets.ts.count_documents({}) == 1


@pytest.mark.commands("delete", "findAndModify")
def test_delete_one_and_find_one_and_delete_with_a_collation(db):
    ts, ref = _pair(db)
    assert ts.delete_one({"s": "XB"}, collation=CI).deleted_count == 1
    assert ref.delete_one({"s": "XB"}, collation=CI).deleted_count == 1
    assert ts.count_documents({"s": "xb"}, collation=CI) == ref.count_documents({"s": "xb"}, collation=CI) == 1
    gone = ts.find_one_and_delete({"s": "Y"}, collation=CI)
    assert gone is not None and gone["s"].lower() == "y"
    assert ts.count_documents({"m": "b"}) == 2
    assert ts.find_one_and_delete({"s": "Y"}) is not None  # simple: a "Y" is left (two were stored)
    assert ts.find_one_and_delete({"s": "nothing"}, collation=CI) is None


@pytest.mark.commands("update")
def test_meta_update_matches_under_the_collation_and_sets_values_as_given(db):
    ts, ref = _pair(db)
    res = ts.update_many({"m": "a"}, {"$set": {"m": "Z"}}, collation=CI)
    expected = ref.update_many({"m": "a"}, {"$set": {"m": "Z"}}, collation=CI)
    assert (res.matched_count, res.modified_count) == (expected.matched_count, expected.modified_count) == (7, 7)
    _same_contents(ts, ref)
    assert ts.update_many({"m": "b"}, {"$set": {"m": "q"}}, collation=SIMPLE).matched_count == 3
    assert ts.update_many({"m": "Q"}, {"$set": {"m": "r"}}).matched_count == 0


@pytest.mark.commands("update")
def test_meta_update_array_filters_and_pull_compare_under_the_collation(db):
    docs = [{"_id": 1, "t": T0, "m": {"tags": ["A", "b"]}}, {"_id": 2, "t": T0, "m": {"tags": ["c"]}}]
    ts, ref = _pair(db, docs=docs)
    for coll in (ts, ref):
        coll.update_many({"m.tags": "a"}, {"$set": {"m.tags.$[e]": "z"}}, array_filters=[{"e": "a"}],
                         collation=CI)
        coll.update_many({}, {"$pull": {"m.tags": "C"}}, collation=CI)
    _same_contents(ts, ref)
    assert [d["m"]["tags"] for d in _sorted(ts.find())] == [["z", "b"], []]


@pytest.mark.commands("delete", "update", "findAndModify")
def test_collection_default_collation_applies_to_writes_unless_overridden(db):
    ts, ref = _pair(db, collation=CI)
    for coll in (ts, ref):
        coll.update_many({"m": "B"}, {"$set": {"m": "c"}})
        coll.delete_many({"s": "xb"}, collation=SIMPLE)  # nothing: only "Xb" exists
        coll.delete_many({"s": "XB"})
    _same_contents(ts, ref)
    assert ts.count_documents({"m": "c"}) == 3 and ts.count_documents({"s": "xb"}) == 0
    assert ts.delete_many({"m": "a"}).deleted_count == 5  # "A" and "a" by the default collation
    assert ts.find_one_and_delete({"m": "C"}) is not None


@pytest.mark.commands("delete", "update")
def test_bulk_writes_carry_their_statement_collations(db):
    ts, ref = _pair(db)
    ops = [UpdateMany({"m": "A"}, {"$set": {"m": "k"}}, collation=CI), DeleteMany({"s": "y"}, collation=CI),
           DeleteMany({"s": "x"})]
    a, b = ts.bulk_write(ops), ref.bulk_write(ops)
    assert (a.matched_count, a.deleted_count) == (b.matched_count, b.deleted_count) == (7, 6)
    _same_contents(ts, ref)


# ------------------------------------------------------------------------------------------ mongosh


@pytest.mark.slow
@pytest.mark.commands("delete", "find")
def test_mongosh_case_insensitive_delete_on_a_time_series_collection(db, mongosh):
    _pair(db)
    out = mongosh(f"""
        const d = db.getSiblingDB('{db.name}');
        const ci = {{locale: 'en', strength: 2}};
        const found = d.ts.find({{m: 'a'}}).collation(ci).toArray().length;
        const deleted = d.ts.deleteMany({{s: 'X'}}, {{collation: ci}}).deletedCount;
        ({{found, deleted, left: d.ts.countDocuments({{}})}})
    """)
    assert out == {"found": 7, "deleted": 5, "left": 5}


@pytest.mark.commands("createIndexes", "find", "delete", "update")
@pytest.mark.parametrize("default", [None, CI])
def test_a_meta_index_bounds_strings_only_under_its_own_collation(db, default):
    ts, ref = _pair(db, collation=default)
    ts.create_index("m")
    ref.create_index("m")
    for collation in (CI, SIMPLE):
        for flt in ({"m": "a"}, {"m": {"$gte": "B"}}, {"m": "a", "t": {"$gte": T0}}):
            assert _sorted(ts.find(flt, collation=collation)) == _sorted(ref.find(flt, collation=collation))
            assert _sorted(ts.find(flt, collation=collation).hint([("m", 1)])) == \
                _sorted(ref.find(flt, collation=collation))
    assert ts.update_many({"m": "B"}, {"$set": {"m": "c"}}, collation=CI).matched_count == 3
    assert ts.delete_many({"m": "a"}, collation=CI).deleted_count == 7
    assert [d["m"] for d in ts.find({"m": "C"}, collation=CI)] == ["c"] * 3


@pytest.mark.commands("delete", "update", "findAndModify")
def test_an_invalid_statement_collation_is_refused_like_on_a_regular_collection(db):
    from pymongo.errors import OperationFailure

    ts, ref = _pair(db)
    bad = {"locale": "xx_nowhere"}
    for name in ("ts", "ref"):
        out = db.command("delete", name, deletes=[{"q": {"m": "a"}, "limit": 0, "collation": bad}])
        assert out["n"] == 0 and out["writeErrors"][0]["code"] == 2
        out = db.command("update", name, updates=[{"q": {"m": "a"}, "u": {"$set": {"m": "z"}}, "multi": True,
                                                   "collation": bad}])
        assert out["n"] == 0 and out["writeErrors"][0]["code"] == 2
        with pytest.raises(OperationFailure) as err:
            db.command("findAndModify", name, query={"m": "a"}, remove=True, collation=bad)
        assert err.value.code == 2
    _same_contents(ts, ref)
