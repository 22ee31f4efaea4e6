"""createIndexes, listIndexes, dropIndexes, unique-index behaviour and index use by queries."""

from __future__ import annotations

import pytest
from bson.regex import Regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo import ASCENDING, DESCENDING, IndexModel
from pymongo.errors import BulkWriteError, DuplicateKeyError, OperationFailure

NATURAL_HINT = [("$natural", 1)]


@pytest.mark.commands("createIndexes", "listIndexes")
def test_create_index_names_and_list_shape(db):
    assert db.c.create_index([("a", ASCENDING), ("b", DESCENDING)]) == "a_1_b_-1"
    reply = db.command("createIndexes", "c", indexes=[{"key": {"x": 1}, "name": "x_1"}])
    assert reply["numIndexesBefore"] == 2 and reply["numIndexesAfter"] == 3
    assert reply["createdCollectionAutomatically"] is False
    specs = list(db.c.list_indexes())
    assert [s["name"] for s in specs] == ["_id_", "a_1_b_-1", "x_1"]
    assert specs[1] == {"v": 2, "key": {"a": 1, "b": -1}, "name": "a_1_b_-1"}


@pytest.mark.commands("createIndexes")
def test_create_index_creates_collection_automatically_and_notes_existing(db):
    reply = db.command("createIndexes", "new", indexes=[{"key": {"a": 1}, "name": "a_1"}])
    assert reply["createdCollectionAutomatically"] is True
    reply = db.command("createIndexes", "new", indexes=[{"key": {"a": 1}, "name": "a_1"}])
    assert reply["note"] == "all indexes already exist"
    assert reply["numIndexesBefore"] == reply["numIndexesAfter"] == 2


@pytest.mark.commands("createIndexes")
def test_index_option_and_key_conflicts_give_85_and_86(db):
    db.c.create_index("a")
    with pytest.raises(OperationFailure) as e:
        db.c.create_index("a", name="other")
    assert e.value.code == 85
    with pytest.raises(OperationFailure) as e:
        db.command("createIndexes", "c", indexes=[{"key": {"b": 1}, "name": "a_1"}])
    assert e.value.code == 86
    with pytest.raises(OperationFailure) as e:  # unique is part of the signature (mongod 4.9+): the name clashes
        db.c.create_index("a", unique=True)
    assert e.value.code == 86


@pytest.mark.commands("createIndexes")
def test_conflict_messages_show_the_existing_index_without_the_internal_multikey_flag(db):
    db.c.insert_one({"a": [1, 2]})
    db.c.create_index("a")
    for spec in ({"key": {"b": 1}, "name": "a_1"}, {"key": {"a": 1}, "name": "a_1", "sparse": True}):
        with pytest.raises(OperationFailure) as e:
            db.command("createIndexes", "c", indexes=[spec])
        assert "existing index: { v: 2, key: { a: 1 }, name: \"a_1\" }" in str(e.value), str(e.value)


@pytest.mark.commands("createIndexes")
def test_bad_index_specs_give_67(db):
    for key in ({}, {"a": 0}, {"a": "bogus"}, {"a": True}):
        with pytest.raises(OperationFailure) as e:
            db.command("createIndexes", "c", indexes=[{"key": key, "name": "k"}])
        assert e.value.code == 67, key


@pytest.mark.commands("createIndexes")
def test_unimplemented_index_types_are_refused_as_not_supported(db):
    with pytest.raises(OperationFailure) as e:
        db.c.create_index([("a", "columnstore")])
    assert "not supported" in str(e.value)


@pytest.mark.commands("createIndexes")
@pytest.mark.parametrize("key", [{"a": "geoHaystack"}, {"a": "geoHaystack", "b": 1}, {"a": 1, "b": "geoHaystack"},
                                 {"a": "geoHaystack", "$b": 0}])
def test_geo_haystack_indexes_are_refused_with_67(db, key):
    """mongod 7.0 (index_key_validate.cpp validateKeyPattern) refuses a geoHaystack plugin with 67
    CannotCreateIndex as soon as it finds the plugin name, before checking the key's fields."""
    with pytest.raises(OperationFailure) as e:
        db.command("createIndexes", "c", indexes=[{"key": key, "name": "k"}])
    assert e.value.code == 67
    assert e.value.details["errmsg"].endswith(":: caused by :: GeoHaystack indexes cannot be created in version 5.0 and above")


@pytest.mark.commands("createIndexes")
def test_wildcard_index_is_built_and_listed(db):
    db.c.insert_one({"a": {"b": 1}})
    assert db.c.create_index([("$**", 1)]) == "$**_1"
    assert db.c.index_information()["$**_1"]["key"] == [("$**", 1)]
    assert [d["a"] for d in db.c.find({"a.b": 1}, {"_id": 0}).hint("$**_1")] == [{"b": 1}]


@pytest.mark.commands("createIndexes")
def test_at_most_64_indexes(db):
    db.c.create_indexes([IndexModel([(f"f{i}", 1)]) for i in range(63)])
    with pytest.raises(OperationFailure) as e:
        db.c.create_index("one_too_many")
    assert e.value.code == 67


@pytest.mark.commands("createIndexes", "insert")
def test_unique_violation_in_ordered_insert_reports_key_pattern_and_value(db):
    db.u.create_index([("email", 1)], unique=True)
    db.u.insert_one({"_id": 1, "email": "a@x"})
    with pytest.raises(BulkWriteError) as e:
        db.u.insert_many([{"_id": 2, "email": "b@x"}, {"_id": 3, "email": "a@x"}, {"_id": 4, "email": "c@x"}])
    [err] = e.value.details["writeErrors"]
    assert err["index"] == 1 and err["code"] == 11000
    assert err["keyPattern"] == {"email": 1} and err["keyValue"] == {"email": "a@x"}
    assert "index: email_1 dup key: { email: \"a@x\" }" in err["errmsg"]
    assert sorted(d["_id"] for d in db.u.find()) == [1, 2]
    assert db.command("validate", "u")["keysPerIndex"] == {"_id_": 2, "email_1": 2}


@pytest.mark.commands("createIndexes", "insert")
def test_unique_violation_in_unordered_insert_continues_and_leaves_nothing_partial(db):
    db.u.create_index([("email", 1)], unique=True)
    with pytest.raises(BulkWriteError) as e:
        db.u.insert_many([{"_id": 1, "email": "a"}, {"_id": 2, "email": "a"}, {"_id": 3, "email": "b"},
                          {"_id": 1, "email": "z"}], ordered=False)
    errs = e.value.details["writeErrors"]
    assert [(x["index"], x["keyPattern"]) for x in errs] == [(1, {"email": 1}), (3, {"_id": 1})]
    assert sorted(d["_id"] for d in db.u.find()) == [1, 3]
    assert [d["_id"] for d in db.u.find({"email": "z"})] == []
    v = db.command("validate", "u")
    assert v["valid"] and v["keysPerIndex"] == {"_id_": 2, "email_1": 2}


@pytest.mark.commands("createIndexes")
def test_unique_compound_and_multikey(db):
    db.u.create_index([("a", 1), ("b", 1)], unique=True)
    db.u.insert_one({"a": 1, "b": 1})
    db.u.insert_one({"a": 1, "b": 2})
    with pytest.raises(DuplicateKeyError) as e:
        db.u.insert_one({"a": 1, "b": [3, 2]})
    assert e.value.details["keyValue"] == {"a": 1, "b": 2}


@pytest.mark.commands("createIndexes")
def test_unique_index_build_over_duplicates_fails_with_11000(db):
    db.c.insert_many([{"a": 1}, {"a": 1}])
    with pytest.raises(OperationFailure) as e:
        db.c.create_index("a", unique=True)
    assert e.value.code == 11000
    assert [i["name"] for i in db.c.list_indexes()] == ["_id_"]


@pytest.mark.commands("createIndexes")
def test_sparse_unique_allows_many_missing(db):
    db.c.create_index("a", unique=True, sparse=True)
    db.c.insert_many([{"x": 1}, {"x": 2}, {"a": 1}])
    with pytest.raises(DuplicateKeyError):
        db.c.insert_one({"a": 1})


@pytest.mark.commands("createIndexes")
def test_partial_unique_only_constrains_matching_documents(db):
    db.c.create_index("a", unique=True, partialFilterExpression={"active": True})
    db.c.insert_many([{"a": 1, "active": False}, {"a": 1, "active": False}, {"a": 1, "active": True}])
    with pytest.raises(DuplicateKeyError):
        db.c.insert_one({"a": 1, "active": True})


@pytest.mark.commands("createIndexes")
def test_parallel_arrays_cannot_be_indexed(db):
    db.c.create_index([("a", 1), ("b", 1)])
    with pytest.raises(OperationFailure) as e:
        db.c.insert_one({"a": [1], "b": [2]})
    assert e.value.code == 171
    assert list(db.c.find()) == []


@pytest.mark.commands("dropIndexes")
def test_drop_indexes_by_name_key_list_and_star(db):
    db.c.create_indexes([IndexModel("a"), IndexModel("b"), IndexModel("c"), IndexModel("d")])
    assert db.command("dropIndexes", "c", index="a_1")["nIndexesWas"] == 5
    db.command("dropIndexes", "c", index={"b": 1})
    db.command("dropIndexes", "c", index=["c_1"])
    assert [i["name"] for i in db.c.list_indexes()] == ["_id_", "d_1"]
    db.c.drop_indexes()
    assert [i["name"] for i in db.c.list_indexes()] == ["_id_"]


@pytest.mark.commands("dropIndexes", "listIndexes")
def test_drop_indexes_errors(db):
    db.c.insert_one({})
    with pytest.raises(OperationFailure) as e:
        db.command("dropIndexes", "c", index="nope")
    assert e.value.code == 27
    with pytest.raises(OperationFailure) as e:
        db.command("dropIndexes", "c", index="_id_")
    assert e.value.code == 72
    with pytest.raises(OperationFailure) as e:
        db.command("dropIndexes", "missing", index="*")
    assert e.value.code == 26
    with pytest.raises(OperationFailure) as e:
        db.command("listIndexes", "missing")
    assert e.value.code == 26
    assert list(db.missing.list_indexes()) == []  # pymongo turns 26 into an empty cursor


@pytest.mark.commands("find", "explain")
def test_queries_use_indexes_and_give_same_results(db):
    db.c.insert_many([{"_id": i, "a": i % 10, "b": i} for i in range(200)])
    plan = db.c.find({"a": 3}).explain()["queryPlanner"]["winningPlan"]
    assert plan["stage"] == "COLLSCAN"
    db.c.create_index([("a", 1), ("b", -1)])
    plan = db.c.find({"a": 3, "b": {"$gt": 100}}).explain()["queryPlanner"]["winningPlan"]
    assert plan["stage"] == "FETCH" and plan["inputStage"]["stage"] == "IXSCAN"
    assert plan["inputStage"]["indexName"] == "a_1_b_-1"
    got = [d["_id"] for d in db.c.find({"a": 3, "b": {"$gt": 100}})]
    assert sorted(got) == [i for i in range(101, 200) if i % 10 == 3]
    got = [d["b"] for d in db.c.find({"a": 3}).sort([("a", 1), ("b", -1)]).limit(3)]
    assert got == [193, 183, 173]
    stats = db.c.find({"a": 3}).explain()["executionStats"]
    assert stats["nReturned"] == 20 and stats["totalDocsExamined"] == 20


@pytest.mark.commands("find")
def test_hidden_index_is_not_used_but_maintained(db):
    db.c.insert_many([{"a": i} for i in range(20)])
    db.c.create_index("a", hidden=True)
    plan = db.c.find({"a": 3}).explain()["queryPlanner"]["winningPlan"]
    assert plan["stage"] == "COLLSCAN"
    db.c.insert_one({"a": 3})
    db.command("collMod", "c", index={"name": "a_1", "hidden": False})
    assert len(list(db.c.find({"a": 3}).hint("a_1"))) == 2


@pytest.mark.commands("find")
def test_multikey_index_returns_each_document_once(db):
    db.c.create_index("tags")
    db.c.insert_many([{"_id": 1, "tags": ["a", "b", "a"]}, {"_id": 2, "tags": ["b"]}, {"_id": 3, "tags": []}])
    assert [d["_id"] for d in db.c.find({"tags": {"$in": ["a", "b"]}})] == [1, 2]
    assert [d["_id"] for d in db.c.find({"tags": {"$gte": "a"}}).sort("tags", 1)] == [1, 2]
    assert [d["_id"] for d in db.c.find({"tags": None})] == []


@pytest.mark.commands("find")
def test_range_on_mixed_types_through_index_matches_scan(db):
    values = [1, 2.5, "s", None, [3, 4], {"x": 1}, True, 7]
    db.c.insert_many([{"v": v} for v in values])
    filters = [{"v": {"$gt": 2}}, {"v": {"$lte": 3}}, {"v": None}, {"v": {"$in": [1, "s", True]}}, {"v": 4}]
    scans = [[d["_id"] for d in db.c.find(f).sort("_id", 1)] for f in filters]
    db.c.create_index("v")
    assert [[d["_id"] for d in db.c.find(f).sort("_id", 1)] for f in filters] == scans


@pytest.mark.commands("find")
def test_two_sided_range_on_multikey_field_matches_scan(db):
    db.c.insert_many([{"_id": 1, "a": [1, 10]}, {"_id": 2, "a": 6}, {"_id": 3, "a": [1, 2]}])
    db.c.create_index("a")
    for flt in ({"a": {"$gt": 5, "$lt": 8}}, {"$and": [{"a": {"$lt": 8}}, {"a": {"$gt": 5}}]}):
        assert sorted(d["_id"] for d in db.c.find(flt)) == [1, 2]


@pytest.mark.commands("find", "insert", "listIndexes", "explain")
def test_multikey_flag_tightens_ranges_only_while_index_has_no_arrays(db):
    db.c.insert_many([{"_id": i, "a": i} for i in range(20)])
    db.c.create_index("a")
    q = {"a": {"$gt": 5, "$lt": 8}}
    ix = db.c.find(q).explain()["queryPlanner"]["winningPlan"]["inputStage"]
    assert ix["isMultiKey"] is False and ix["indexBounds"]["a"] == ["(5, 8)"]
    assert db.c.find(q).explain()["executionStats"]["totalDocsExamined"] == 2
    db.c.insert_one({"_id": 100, "a": [1, 10]})
    ix = db.c.find(q).explain()["queryPlanner"]["winningPlan"]["inputStage"]
    assert ix["isMultiKey"] is True
    assert sorted(d["_id"] for d in db.c.find(q)) == [6, 7, 100]
    assert all("multikey" not in spec for spec in db.c.list_indexes())


@pytest.mark.commands("createIndexes", "find")
def test_index_built_over_arrays_is_multikey_from_the_start(db):
    db.c.insert_many([{"_id": 1, "a": [1, 10]}, {"_id": 2, "a": 6}])
    db.c.create_index("a")
    assert sorted(d["_id"] for d in db.c.find({"a": {"$gt": 5, "$lt": 8}})) == [1, 2]


@pytest.mark.commands("find", "aggregate", "explain")
def test_latest_readings_of_one_device_come_from_the_index_in_order(db):
    import datetime

    t0 = datetime.datetime(2024, 1, 1)
    db.r.insert_many([{"device": f"d{i % 3}", "ts": t0 + datetime.timedelta(minutes=i), "v": i} for i in range(90)])
    db.r.create_index([("device", 1), ("ts", 1)])
    cursor = db.r.find({"device": "d1"}).sort("ts", -1).limit(3)
    assert [d["v"] for d in cursor] == [88, 85, 82]
    plan = db.r.find({"device": "d1"}).sort("ts", -1).limit(3).explain()["queryPlanner"]["winningPlan"]
    assert "SORT" not in str(plan)
    out = db.r.aggregate([{"$match": {"device": "d2"}}, {"$sort": {"ts": -1}}, {"$limit": 2}])
    assert [d["v"] for d in out] == [89, 86]


@pytest.mark.commands("find", "update", "delete", "explain")
def test_or_over_indexed_fields_uses_an_index_union_and_matches_scan(db):
    db.c.insert_many([{"_id": i, "a": i % 7, "b": i % 11, "t": [i, i + 1]} for i in range(200)])
    flt = {"$or": [{"a": 3}, {"b": {"$gte": 9}}, {"t": 50}]}
    expected = sorted(d["_id"] for d in db.c.find(flt))
    db.c.create_index("a")
    db.c.create_index("b")
    db.c.create_index("t")
    plan = db.c.find(flt).explain()["queryPlanner"]["winningPlan"]
    assert plan["inputStage"]["stage"] == "OR" and len(plan["inputStage"]["inputStages"]) == 3
    assert sorted(d["_id"] for d in db.c.find(flt)) == expected
    assert db.c.update_many(flt, {"$set": {"hit": True}}).matched_count == len(expected)
    assert db.c.delete_many(flt).deleted_count == len(expected)


# Index types and whether mongod 7.0 lets them compare strings under a collation (IndexCatalog::_isSpecOk).
_COLLATED_KINDS = [(1, True), (-1, True), ("hashed", True), ("2dsphere", True), ("text", False), ("2d", False)]


@pytest.mark.commands("createIndexes")
@pytest.mark.parametrize("kind,collated", _COLLATED_KINDS)
@pytest.mark.parametrize("how", ["inherited", "explicit", "simple override"])
def test_index_types_without_collation_refuse_a_given_or_inherited_one(db, kind, collated, how):
    """Whether the collation is the index's own or the collection default it inherits, text and 2d
    indexes refuse a non-simple one with 67 naming it; an explicit simple collation creates any of them."""
    en = {"locale": "en", "strength": 2}
    if how == "explicit":
        options: dict = {"collation": en}
    else:
        db.create_collection("c", collation=en)
        options = {"collation": {"locale": "simple"}} if how == "simple override" else {}
    command = {"createIndexes": "c", "indexes": [{"key": {"a": kind}, "name": "k", **options}]}
    if collated or how == "simple override":
        db.command(command)
        stored = next(s for s in db.c.list_indexes() if s["name"] == "k").get("collation")
        assert (stored or {}).get("locale") == (None if how == "simple override" else "en")
        return
    with pytest.raises(OperationFailure) as e:
        db.command(command)
    assert e.value.code == 67
    assert e.value.details["errmsg"].endswith(f"Index type '{kind}' does not support collation: "
                                              '{ locale: "en", caseLevel: false, caseFirst: "off", strength: 2, '
                                              'numericOrdering: false, alternate: "non-ignorable", maxVariable: '
                                              '"punct", normalization: false, backwards: false, version: "57.1" }')


STRICT = {"apiVersion": "1", "apiStrict": True}


@pytest.fixture
def unstable_indexes(db):
    """A collection with one index of each kind, those outside API Version 1 (sparse, text) among them."""
    db.c.insert_many([{"_id": i, "a": i, "s": i, "t": f"word{i} coffee", "h": i} for i in range(4)])
    db.c.create_index("a", name="a_1")
    db.c.create_index("s", name="s_1", sparse=True)
    db.c.create_index([("t", "text")], name="t_text")
    db.c.create_index([("h", "hashed")], name="h_hashed")
    return db.c


@pytest.mark.commands("find", "count", "aggregate")
@pytest.mark.parametrize("hint,stable", [("a_1", True), ({"a": 1}, True), ("h_hashed", True), ("s_1", False),
                                         ({"s": 1}, False), ("t_text", False)])
@pytest.mark.parametrize("command", [{"find": "c"}, {"count": "c"}, {"aggregate": "c", "pipeline": [], "cursor": {}}],
                         ids=lambda c: next(iter(c)))
def test_api_strict_reads_cannot_hint_an_index_outside_api_version_1(db, unstable_indexes, hint, stable, command):
    """api_version_unstable_indexes.js, for every hinting read of API Version 1 (distinct is not in it):
    under apiStrict a sparse or text index is not the planner's (2 BadValue, as for a missing index);
    without it, or for other kinds, the hint works."""
    assert db.command({**command, "hint": hint})["ok"] == 1
    if stable:
        assert db.command({**command, "hint": hint, **STRICT})["ok"] == 1
        return
    with pytest.raises(OperationFailure) as e:
        db.command({**command, "hint": hint, **STRICT})
    assert e.value.code == 2
    assert e.value.details["errmsg"].endswith("hint provided does not correspond to an existing index")


@pytest.mark.commands("find", "count", "aggregate", "explain")
@pytest.mark.parametrize("command", [
    {"find": "c", "filter": {"$text": {"$search": "coffee"}}},
    {"count": "c", "query": {"$text": {"$search": "coffee"}}},
    {"aggregate": "c", "pipeline": [{"$match": {"$text": {"$search": "coffee"}}}], "cursor": {}},
    {"explain": {"find": "c", "filter": {"$text": {"$search": "coffee"}}}},
], ids=lambda c: next(iter(c)))
def test_api_strict_text_search_has_no_plan(db, unstable_indexes, command):
    """Under apiStrict the text index is left out of planning: $text fails with 291 (mongod's
    query_planner.cpp count of the text indexes it was given); without apiStrict it finds all four."""
    assert db.command(command)["ok"] == 1
    with pytest.raises(OperationFailure) as e:
        db.command({**command, **STRICT})
    assert e.value.code == 291
    assert e.value.details["errmsg"].endswith("need exactly one text index for $text query")


@pytest.mark.commands("find")
def test_api_strict_plans_with_the_indexes_in_api_version_1(db, unstable_indexes):
    """apiStrict leaves the plain index usable: the same answer as without it."""
    for flt in ({"a": 2}, {"a": {"$gte": 1}}, {"s": 3}, {"h": 1}):
        plain = db.command({"find": "c", "filter": flt})["cursor"]["firstBatch"]
        assert db.command({"find": "c", "filter": flt, **STRICT})["cursor"]["firstBatch"] == plain


# --------------------------------------------------------------------------------------------------
# $text below $or: an index union of the TEXT read and the siblings' index scans (or_inexact.js)
# --------------------------------------------------------------------------------------------------

_WORDS = ["dave", "david", "joe", "joey", "apple"]
_TEXT_DOCS = st.lists(st.fixed_dictionaries({
    "pre": st.integers(0, 2), "other": st.one_of(st.integers(0, 3), st.sampled_from(["foo", "bar", "xbarx"]),
                                                st.lists(st.integers(0, 3), max_size=2)),
    "names": st.lists(st.sampled_from(_WORDS), max_size=3).map(" ".join)}), max_size=12)
_SEARCH = st.sampled_from(["dave", "joe apple", "david -dave", '"joe joey"', "apple -joey"])
_SIBLING = st.one_of(st.builds(lambda v: {"other": v}, st.integers(0, 3)),
                     st.builds(lambda v: {"other": {"$in": v}}, st.lists(st.integers(0, 3), min_size=1, max_size=2)),
                     st.builds(lambda v: {"other": {"$gte": v}}, st.integers(0, 3)),
                     st.just({"other": Regex("bar")}), st.builds(lambda v: {"_id": v}, st.integers(0, 11)))


def _text_or_filters(search: str) -> st.SearchStrategy:
    text = {"$text": {"$search": search}}
    holder = st.builds(lambda pre, extra: {**text, "pre": pre, **extra}, st.integers(0, 2),
                       st.sampled_from([{}, {"other": "foo"}, {"other": {"$ne": 1}}]))
    inner = st.builds(lambda h, sibs: {"$or": [h, *sibs]}, holder, st.lists(_SIBLING, min_size=1, max_size=2))
    nested = st.builds(lambda o, sibs, extra: {"$or": [{**o, **extra}, *sibs]}, inner,
                       st.lists(_SIBLING, min_size=1, max_size=2), st.sampled_from([{}, {"pre": {"$lte": 1}}]))
    return st.one_of(inner, nested, st.builds(lambda o, pre: {**o, "pre": {"$gte": pre}}, inner, st.integers(0, 2)))


def _replace_text(node, by: dict):
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            if k == "$text":
                out.update(by)
            else:
                out[k] = _replace_text(v, by)
        return out
    if isinstance(node, list):
        return [_replace_text(v, by) for v in node]
    return node


@settings(max_examples=120, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(docs=_TEXT_DOCS, data=st.data(), search=_SEARCH)
def test_text_below_or_reads_what_its_definition_says(db, docs, data, search):
    """A $text below $or beside indexed branches (the TEXT read and index scans, as mongod's OR plan)
    finds the documents whose filter holds with the $text read as the top-level $text query answers it:
    (matched by the text and the filter with $text true) or (the filter with $text false), both through
    collection scans; a matched document's textScore is the top-level query's."""
    coll = db.c
    coll.drop()
    coll.create_index([("pre", 1), ("names", "text")])
    coll.create_index([("other", 1)])
    if docs:
        coll.insert_many([{"_id": i, **d} for i, d in enumerate(docs)])
    flt = data.draw(_text_or_filters(search))
    scores = {d["_id"]: d["s"] for pre in range(3)
              for d in coll.find({"$text": {"$search": search}, "pre": pre}, {"s": {"$meta": "textScore"}})}
    true_ids = {d["_id"] for d in coll.find(_replace_text(flt, {"$alwaysTrue": 1})).hint(NATURAL_HINT)}
    false_ids = {d["_id"] for d in coll.find(_replace_text(flt, {"$alwaysFalse": 1})).hint(NATURAL_HINT)}
    expected = (true_ids & set(scores)) | false_ids
    got = {d["_id"]: d.get("s") for d in coll.find(flt, {"s": {"$meta": "textScore"}})}
    assert set(got) == expected, flt
    for _id, score in got.items():
        if _id in scores:
            assert score == scores[_id], flt
    assert coll.count_documents(flt) == db.command("count", "c", query=flt)["n"] == len(expected)
    assert sorted(coll.distinct("_id", flt)) == sorted(expected)
    assert {d["_id"] for d in coll.aggregate([{"$match": flt}])} == expected
    assert coll.update_many(flt, {"$set": {"hit": True}}).matched_count == len(expected)
    assert {d["_id"] for d in coll.find({"hit": True})} == expected
    assert coll.delete_many(flt).deleted_count == len(expected)


@pytest.mark.commands("explain")
def test_text_below_or_explains_an_or_of_the_text_read_and_index_scans(db):
    coll = db.c
    coll.create_index([("pre", 1), ("names", "text")])
    coll.create_index([("other", 1)])
    coll.insert_many([{"_id": 0, "pre": 3, "names": "david dave", "other": 1}, {"_id": 1, "pre": 4, "other": 2}])
    flt = {"$or": [{"$text": {"$search": "dave"}, "pre": 3}, {"other": 2}]}
    plan = coll.find(flt).explain()["queryPlanner"]["winningPlan"]
    assert plan["stage"] == "FETCH" and plan["inputStage"]["stage"] == "OR"
    stages = plan["inputStage"]["inputStages"]
    assert stages[0]["stage"] == "TEXT_MATCH" and stages[0]["indexName"] == "pre_1_names_text"
    assert stages[1]["inputStage"]["indexName"] == "other_1"
    assert sorted(d["_id"] for d in coll.find(flt)) == [0, 1]
