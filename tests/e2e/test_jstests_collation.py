"""MongoDB's collation jstests ported to pymongo against a real Tidemark server: which documents a
collated find / aggregate / count / distinct / update / delete / findAndModify matches, their order
under a collated sort (with and without an index carrying the collation), the collation a
collection, an index or a view keeps, and the error codes of invalid collations.

Ported (MongoDB 7.0 behaviour as the reference): ``jstests/core/query/collation/collation.js``
(everything but mapReduce, reIndex and explain shapes), ``collation_with_reverse_index.js``,
``invalid_collation_locale.js``, ``merge_sort_collation.js``; ``jstests/core/collation_find_and_modify.js``,
``jstests/core/collation_convert_to_capped.js``, ``jstests/core/index/wildcard/wildcard_index_collation.js``
(results only), ``in_with_collation.js``, ``upsert_duplicate_key_retry_collation.js``;
``jstests/aggregation/sources/lookup/collation_lookup.js`` and ``lookup_collation.js`` (without the internal
``_internalCollation`` stage option and the join-strategy explain). Left out: ``collation_mismatch_merge.js``
and ``collation_mismatch_mapreduce.js`` (8.x behaviour, SERVER-117493), explain stage names (IDHACK /
COUNT_SCAN / DISTINCT_SCAN / covered plans), plan-cache (``collation_plan_cache.js``) and sharding variants.

Hypothesis: strength / caseLevel / caseFirst / numericOrdering / alternate over generated strings (and
numbers and arrays of strings), with PyICU's own collator as the reference for order, equality, ranges,
``$in``, ``distinct`` and ``$group``, through a collection scan and through an index carrying the same
collation.
"""

from __future__ import annotations

import icu
import pytest
from bson import MinKey
from bson.son import SON
from harness.jstests import UNDEFINED, command_fails, fails, raw, same_members, seq, unordered
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo import ReturnDocument
from pymongo.operations import DeleteMany, DeleteOne, ReplaceOne, UpdateMany, UpdateOne

pytestmark = pytest.mark.commands(
    "insert", "find", "getMore", "aggregate", "count", "distinct", "update", "delete", "findAndModify",
    "create", "createIndexes", "dropIndexes", "listCollections", "listIndexes", "drop", "applyOps",
    "cloneCollectionAsCapped", "convertToCapped",
)

BAD_VALUE = 2
TYPE_MISMATCH = 14
NAMESPACE_NOT_FOUND = 26
NAMESPACE_EXISTS = 48
NO_QUERY_EXECUTION_PLANS = 291
CANNOT_CREATE_INDEX = 67
INCOMPATIBLE_COLLATION_VERSION = 161  # (error_codes.yml: 250 is StaleChunkHistory)
IDL_UNKNOWN_FIELD = 40415
IDL_MISSING_FIELD = 40414


CI = {"locale": "en_US", "strength": 2}  # case-insensitive
CS = {"locale": "en_US", "strength": 3}  # case-sensitive
FR_CA = {
    "locale": "fr_CA", "caseLevel": False, "caseFirst": "off", "strength": 3, "numericOrdering": False,
    "alternate": "non-ignorable", "maxVariable": "punct", "normalization": False, "backwards": True,
    "version": "57.1",
}
EN_US = {**FR_CA, "locale": "en_US", "backwards": False}


def create(db, name: str, collation: dict | None = None, **options):
    if collation is not None:
        options["collation"] = collation
    return db.create_collection(name, **options)


def index_collation(coll, key: dict) -> dict | None:
    """The ``collation`` listIndexes shows for the index on ``key`` (None: the simple collation)."""
    for spec in coll.list_indexes():
        if dict(spec["key"]) == key:
            return spec.get("collation")
    raise AssertionError(f"no index on {key}")


def collection_options(db, name: str) -> dict:
    (info,) = list(db.list_collections(filter={"name": name}))
    return info["options"]


# --------------------------------------------------------------------------------------------------
# collation.js: collection and index default collations
# --------------------------------------------------------------------------------------------------

INVALID_COLLATIONS = [
    pytest.param("not an object", TYPE_MISMATCH, id="not-object"),
    pytest.param({}, IDL_MISSING_FIELD, id="empty"),
    pytest.param({"blah": 1}, IDL_UNKNOWN_FIELD, id="unknown-field-only"),
    pytest.param({"locale": "en", "blah": 1}, IDL_UNKNOWN_FIELD, id="unknown-field"),
    pytest.param({"locale": "xx"}, BAD_VALUE, id="unknown-locale"),
    pytest.param({"locale": "en", "strength": 99}, 51024, id="strength-99"),
    pytest.param({"locale": "en", "strength": 9.9}, 51024, id="strength-9.9"),
    pytest.param({"locale": "en", "version": "unknownVersion"}, INCOMPATIBLE_COLLATION_VERSION, id="version"),
]
# (an index spec's empty collation is refused by the index spec check before the collation is parsed)
INVALID_INDEX_COLLATIONS = [pytest.param({}, BAD_VALUE, id="empty") if p.id == "empty" else p
                            for p in INVALID_COLLATIONS]


@pytest.mark.parametrize("collation,code", INVALID_COLLATIONS)
def test_create_collection_refuses_an_invalid_collation(db, collation, code):
    """collation.js: createCollection fails for each invalid collation, an unknown version with
    IncompatibleCollationVersion."""
    command_fails(db, SON([("create", "c"), ("collation", collation)]), code)
    assert "c" not in db.list_collection_names()


@pytest.mark.parametrize("collation,code", INVALID_INDEX_COLLATIONS)
def test_create_index_refuses_an_invalid_collation(db, collation, code):
    """collation.js: createIndexes fails for each invalid collation."""
    db.c.insert_one({})
    command_fails(db, {"createIndexes": "c", "indexes": [{"key": {"a": 1}, "name": "a_1", "collation": collation}]},
                  code)


@pytest.mark.parametrize("locale", ["x_invalid", "X_invalid", "i-invalid", "I-invalid", "xx_invalid"])
def test_id_prefixed_locales_are_bad_values(db, locale):
    """invalid_collation_locale.js: ID-prefixed ("x_" / "i-") and unknown locales fail with BadValue."""
    command_fails(db, {"create": "c", "collation": {"locale": locale}}, BAD_VALUE)


def test_locale_validity_does_not_depend_on_earlier_requests(db):
    """A documented variant (zh@collation=stroke) is accepted also after a zh_Hant collation (whose
    default type is stroke) was used: ICU's collator cache must not decide validity."""
    create(db, "hant", {"locale": "zh_Hant"})
    db.hant.insert_one({"s": "a"})
    assert len(list(db.hant.find({"s": "a"}, collation={"locale": "zh@collation=stroke"}))) == 1
    create(db, "stroke", {"locale": "zh@collation=stroke"})
    assert collection_options(db, "stroke")["collation"]["locale"] == "zh@collation=stroke"


def test_simple_collation_is_not_stored(db):
    """collation.js: a collection created with {locale: "simple"} has no collation option."""
    create(db, "c", {"locale": "simple"})
    assert "collation" not in collection_options(db, "c")


def test_collection_collation_is_expanded_and_inherited_by_indexes(db):
    """collation.js: the fr_CA default is stored fully expanded (backwards: true); an index without a
    collation inherits it, one naming a collation keeps its own, a simple or a v: 1 index has none."""
    create(db, "c", {"locale": "fr_CA"})
    assert collection_options(db, "c")["collation"] == FR_CA
    coll = db.c
    coll.create_index("a")
    coll.create_index("b", collation={"locale": "en_US"})
    coll.create_index("d", collation={"locale": "simple"})
    coll.create_index("c", v=1)
    assert index_collation(coll, {"a": 1}) == FR_CA
    assert index_collation(coll, {"b": 1}) == EN_US
    assert index_collation(coll, {"d": 1}) is None
    assert index_collation(coll, {"c": 1}) is None


def test_create_indexes_with_a_collation_each(db):
    """collation.js: createIndexes of several indexes sharing one collation option; simple stores none."""
    coll = db.c
    coll.create_index("a", collation={"locale": "en_US"})
    coll.create_index("b", collation={"locale": "en_US"})
    coll.create_index("c", collation={"locale": "fr_CA"})
    coll.create_index("d", collation={"locale": "fr_CA"})
    coll.create_index("e", collation={"locale": "simple"})
    assert index_collation(coll, {"a": 1}) == EN_US
    assert index_collation(coll, {"b": 1}) == EN_US
    assert index_collation(coll, {"c": 1}) == FR_CA
    assert index_collation(coll, {"d": 1}) == FR_CA
    assert index_collation(coll, {"e": 1}) is None


def test_collated_index_keys_are_collation_keys(db):
    """collation.js: returnKey through an index with a collation gives the collator's key, not the
    string; through a simple index the string itself."""
    coll = db.c
    coll.create_index("a", collation={"locale": "fr_CA"})
    coll.create_index("b")
    coll.insert_one({"a": "foo", "b": "foo"})
    keys = list(coll.find(collation={"locale": "fr_CA"}, return_key=True).hint([("a", 1)]))
    assert len(keys) == 1 and keys[0]["a"] != "foo"
    keys = list(coll.find(collation={"locale": "fr_CA"}, return_key=True).hint([("b", 1)]))
    assert keys == [{"b": "foo"}]


def test_text_index_refuses_an_explicit_non_simple_collation(db):
    """collation.js: a text index with an explicit non-simple collation fails; on a collection with a
    default, overriding it with {locale: "simple"} works."""
    fails(lambda: db.c.create_index([("a", "text")], collation={"locale": "en"}), CANNOT_CREATE_INDEX)
    create(db, "en2", {"locale": "en"})
    db.en2.create_index([("a", "text")], collation={"locale": "simple"})


def test_text_index_refuses_an_inherited_non_simple_collation(db):
    """collation.js: a text index inheriting a non-simple collection default fails."""
    create(db, "en1", {"locale": "en"})
    fails(lambda: db.en1.create_index([("a", "text")]), CANNOT_CREATE_INDEX)


def test_wildcard_index_inherits_the_collation_but_paths_stay_binary(db):
    """wildcard_index_collation.js: a $** index inherits the collection's strength-1 collation; values
    compare case-insensitively, field names do not (the index answers what a collection scan does)."""
    ci1 = {"locale": "en_US", "strength": 1}
    for spec, options in (({"$**": 1}, {}), ({"$**": 1, "b": 1}, {"wildcardProjection": {"b": 0}})):
        db.drop_collection("c")
        create(db, "c", ci1)
        coll = db.c
        coll.create_index(list(spec.items()), **options)
        assert index_collation(coll, spec) == {**EN_US, "strength": 1}
        docs = [{"a": {"b": "string", "c": "STRING"}, "d": "sTrInG", "e": 5},
                {"a": {"b": "STRING", "c": "string"}, "d": "StRiNg", "e": 5},
                {"A": {"B": "string", "C": "STRING"}, "d": "sTrInG", "E": 5},
                {"A": {"B": "STRING", "C": "string"}, "d": "StRiNg", "E": 5}]
        coll.insert_many([dict(d) for d in docs])
        cases = [({"a.b": "string"}, docs[:2]), ({"A.B": "string"}, docs[2:]),
                 ({"$or": [{"a.c": "string"}, {"A.C": "string"}]}, docs), ({"d": "string"}, docs),
                 ({"e": 5}, docs[:2]), ({"E": 5}, docs[2:])]
        for flt, expected in cases:
            got = list(coll.find(flt, {"_id": 0}))
            assert same_members(got, expected, key=unordered), flt
            scanned = list(coll.find(flt, {"_id": 0}, collation=ci1).hint([("$natural", 1)]))
            assert same_members(got, scanned, key=unordered), flt


# --------------------------------------------------------------------------------------------------
# collation.js: aggregate, count, distinct
# --------------------------------------------------------------------------------------------------

def test_aggregate_with_a_collation(db):
    """collation.js: aggregate on a missing collection with a collation is empty; a collated $match;
    the collection default applies unless {locale: "simple"} overrides it; explain with a collation."""
    assert list(db.missing.aggregate([], collation={"locale": "fr"})) == []
    db.c.insert_many([{"_id": 1, "str": "foo"}, {"_id": 2, "str": "bar"}])
    assert len(list(db.c.aggregate([{"$match": {"str": "FOO"}}]))) == 0
    assert len(list(db.c.aggregate([{"$match": {"str": "FOO"}}], collation=CI))) == 1
    create(db, "d", CI)
    db.d.insert_one({"str": "foo"})
    assert len(list(db.d.aggregate([{"$match": {"str": "FOO"}}]))) == 1
    assert len(list(db.d.aggregate([{"$match": {"str": "FOO"}}], collation={"locale": "simple"}))) == 0
    db.command({"explain": {"aggregate": "d", "pipeline": [], "cursor": {}, "collation": {"locale": "fr"}}})


def test_count_with_a_collation(db):
    """collation.js: count with a query collation, the collection default and a simple override."""
    coll = db.c
    assert coll.count_documents({"str": "FOO"}, collation={"locale": "en_US"}) == 0
    assert db.command({"count": "c", "query": {"str": "FOO"}, "collation": {"locale": "en_US"}})["n"] == 0
    coll.insert_many([{"_id": 1, "str": "foo"}, {"_id": 2, "str": "bar"}])
    for collation, n in ((None, 0), ({"locale": "en_US"}, 0), (CI, 1)):
        cmd = {"count": "c", "query": {"str": "FOO"}}
        if collation:
            cmd["collation"] = collation
        assert db.command(cmd)["n"] == n, collation
        assert coll.count_documents({"str": "FOO"}, **({"collation": collation} if collation else {})) == n
    create(db, "d", CI)
    db.d.insert_one({"str": "foo"})
    assert db.command({"count": "d", "query": {"str": "FOO"}})["n"] == 1
    assert db.command({"count": "d", "query": {"str": "FOO"}, "collation": {"locale": "simple"}})["n"] == 0
    # a count over an index with a collation (the COUNT_SCAN cases of the jstest), numbers and strings
    create(db, "e", {"locale": "fr_CA"})
    db.e.create_index("a")
    db.e.insert_many([{"a": 5}, {"a": "foo"}, {"a": "FOO"}])
    assert db.command({"count": "e", "query": {"a": 5}})["n"] == 1
    assert db.command({"count": "e", "query": {"a": "foo"}})["n"] == 1


def test_distinct_with_a_collation(db):
    """collation.js: distinct folds collation-equal strings into one value, with and without an index
    carrying the collation, and filters with the collation; the collection default applies unless
    {locale: "simple"} overrides it."""
    assert db.missing.distinct("str", {}, collation=CI) == []
    coll = db.c
    coll.insert_many([{"_id": 1, "str": "foo"}, {"_id": 2, "str": "FOO"}])
    for _ in range(2):
        res = coll.distinct("str", {}, collation=CI)
        assert len(res) == 1 and res[0].lower() == "foo"
        assert len(coll.distinct("str", {}, collation=CS)) == 2
        assert len(coll.distinct("_id", {"str": "foo"}, collation=CI)) == 2
        coll.create_index("str", collation=CI)
    create(db, "d", CI)
    db.d.insert_many([{"str": "foo"}, {"str": "FOO"}])
    assert len(db.d.distinct("str")) == 1
    assert len(db.d.distinct("_id", {"str": "foo"})) == 2
    assert len(db.d.distinct("str", {}, collation={"locale": "simple"})) == 2
    assert len(db.d.distinct("_id", {"str": "foo"}, collation={"locale": "simple"})) == 1


def test_distinct_over_an_index_with_the_default_collation(db):
    """collation.js (distinct5..8): distinct through an index carrying the collection's collation,
    with exact string bounds, inexact bounds ($exists) and numeric bounds, answers as a scan would."""
    create(db, "c", {"locale": "en_US"})
    coll = db.c
    coll.create_index("a", collation={"locale": "en_US"})
    coll.insert_many([{"a": "foo"}, {"a": "goo"}, {"a": "Goo"}, {"a": 2}, {"a": 4}, {"b": 1}])
    assert sorted(coll.distinct("a", {"a": {"$gt": "foo"}})) == ["Goo", "goo"]
    assert len(coll.distinct("a", {"a": {"$exists": True}})) == 5
    assert coll.distinct("a", {"a": {"$gt": 3}}) == [4]
    assert len(coll.distinct("a")) == 5  # (a document without the field adds nothing)


# --------------------------------------------------------------------------------------------------
# collation.js: find
# --------------------------------------------------------------------------------------------------

def test_find_with_a_collation(db):
    """collation.js (find1, find2): matches on _id and on a plain field obey the query's collation,
    with and without a compatible index, and a hinted index whose collation differs from the
    query's still answers correctly."""
    assert list(db.missing.find({"_id": "FOO"}, collation={"locale": "en_US"})) == []
    coll = db.c
    coll.insert_many([{"_id": 1, "str": "foo"}, {"_id": 2, "str": "bar"}, {"_id": "foo"}])
    assert len(list(coll.find({"_id": "FOO"}))) == 0
    assert len(list(coll.find({"_id": "FOO"}, collation={"locale": "en_US"}))) == 0
    assert len(list(coll.find({"_id": "FOO"}, collation=CI))) == 1
    coll.delete_one({"_id": "foo"})
    assert len(list(coll.find({"str": "FOO"}))) == 0
    assert len(list(coll.find({"str": "FOO"}, collation={"locale": "en_US"}))) == 0
    assert len(list(coll.find({"str": "FOO"}, collation=CI))) == 1
    assert len(list(coll.find({"str": {"$ne": "FOO"}}, collation=CI))) == 1
    coll.create_index("str", collation=CI)
    assert len(list(coll.find({"str": "FOO"}, collation=CI).hint([("str", 1)]))) == 1
    assert len(list(coll.find({"str": "FOO"}).hint([("str", 1)]))) == 0
    assert len(list(coll.find({"str": "FOO"}, collation={"locale": "en_US"}).hint([("str", 1)]))) == 0
    assert len(list(coll.find({"str": {"$ne": "FOO"}}, collation=CI).hint([("str", 1)]))) == 1
    plan = coll.find({"str": "FOO"}).hint([("str", 1)]).explain()["queryPlanner"]["winningPlan"]
    ixscan = plan if plan["stage"] == "IXSCAN" else plan["inputStage"]
    assert ixscan["indexName"] == "str_1"
    assert ixscan["indexBounds"] == {"str": ["[MinKey, MaxKey]"]}


def test_find_through_a_partial_index_with_a_collation(db):
    """collation.js: a partial index whose filter ({str: {$lte: "FOO"}}) is applied with the index's
    case-insensitive collation: "foo" is in it, "goo" is not."""
    coll = db.c
    coll.insert_many([{"_id": 1, "str": "foo"}, {"_id": 2, "str": "bar"}])
    coll.create_index("str", partialFilterExpression={"str": {"$lte": "FOO"}}, collation=CI)
    assert len(list(coll.find({"str": "foo"}, collation=CI).hint([("str", 1)]))) == 1
    coll.insert_one({"_id": 3, "str": "goo"})
    assert len(list(coll.find({"str": "goo"}, collation=CI).hint([("str", 1)]))) == 0


def test_sort_through_an_index_of_another_collation(db):
    """collation.js (find3): results read through an index whose collation is not the query's are
    still sorted by the query's collation (hinted or not)."""
    coll = db.c
    coll.insert_many([{"a": "A"}, {"a": "B"}, {"a": "b"}, {"a": "a"}])
    coll.create_index("a")
    expected = [{"a": "a"}, {"a": "A"}, {"a": "b"}, {"a": "B"}]
    assert list(coll.find({"a": {"$exists": True}}, {"_id": 0}, collation=CS).sort("a", 1)) == expected
    assert list(coll.find({}, {"_id": 0}, collation=CS).sort("a", 1).hint([("a", 1)])) == expected


def test_expr_uses_the_collation(db):
    """collation.js (find4, find7): $expr's $eq compares with the query's or the collection's collation."""
    db.c.insert_many([{"a": "A"}, {"a": "B"}])
    assert len(list(db.c.find({"$expr": {"$eq": ["$a", "a"]}}, collation=CI))) == 1
    create(db, "d", CI)
    db.d.insert_many([{"a": "A"}, {"a": "B"}])
    assert len(list(db.d.find({"$expr": {"$eq": ["$a", "a"]}}))) == 1


def test_find_uses_the_collection_default(db):
    """collation.js (find5): $in, equality, $ne and sort use the collection's default collation, also
    through a hinted index of the same or of the simple collation."""
    create(db, "c", CI)
    coll = db.c
    coll.insert_many([{"str": "foo"}, {"str": "FOO"}, {"str": "bar"}])

    def check(**kw):
        find = coll.find
        assert len(list(find({"str": {"$in": ["foo", "bar"]}}, **kw))) == 3
        assert len(list(find({"str": "foo"}, **kw))) == 2
        assert len(list(find({"str": {"$ne": "foo"}}, **kw))) == 1

    check()
    assert list(coll.find({}, {"_id": 0, "str": 1}).sort("str", 1)) == [{"str": "bar"}, {"str": "foo"},
                                                                         {"str": "FOO"}]
    coll.create_index("str", collation=CI)
    check(hint=[("str", 1)])
    coll.drop_indexes()
    coll.create_index("str", collation={"locale": "simple"})
    check(hint=[("str", 1)])


def test_find_on_id_with_collations(db):
    """collation.js (find6, find8, find9): _id lookups use the collection default; "simple" overrides it
    (matches and sort); a strength-2 query over a strength-3 collection matches both cases."""
    create(db, "c", CI)
    db.c.insert_one({"_id": "foo"})
    assert len(list(db.c.find({"_id": "FOO"}))) == 1
    create(db, "d", CI)
    db.d.insert_many([{"str": "foo"}, {"str": "FOO"}, {"str": "bar"}])
    simple = {"locale": "simple"}
    assert len(list(db.d.find({"str": {"$in": ["foo", "bar"]}}, collation=simple))) == 2
    assert len(list(db.d.find({"str": "foo"}, collation=simple))) == 1
    assert list(db.d.find({}, {"_id": 0, "str": 1}, collation=simple).sort("str", 1)) == [
        {"str": "FOO"}, {"str": "bar"}, {"str": "foo"}]
    create(db, "e", CS)
    db.e.insert_many([{"_id": "foo"}, {"_id": "FOO"}])
    assert len(list(db.e.find({"_id": "foo"}, collation=CI))) == 2


def test_find_picks_only_indexes_of_the_query_collation(db):
    """collation.js (find13..16): with no query collation the collection default decides which index
    may serve a string predicate: an index of the same collation (IXSCAN), not a simple one (COLLSCAN)
    unless the query asks for "simple"."""
    def stage(coll, **kw) -> str:
        plan = coll.find({"a": "foo"}, **kw).explain()["queryPlanner"]["winningPlan"]
        while "inputStage" in plan:
            plan = plan["inputStage"]
        return plan["stage"]

    create(db, "c13", {"locale": "en_US"})
    db.c13.create_index("a", collation={"locale": "en_US"})
    assert stage(db.c13) == "IXSCAN"
    create(db, "c14", {"locale": "simple"})
    db.c14.create_index("a", collation={"locale": "simple"})
    assert stage(db.c14) == "IXSCAN"
    create(db, "c15", {"locale": "en_US"})
    db.c15.create_index("a", collation={"locale": "simple"})
    assert stage(db.c15) == "COLLSCAN"
    assert stage(db.c15, collation={"locale": "simple"}) == "IXSCAN"
    db.c3.create_index("a", collation={"locale": "fr_CA"})
    assert stage(db.c3) == "COLLSCAN"
    assert stage(db.c3, collation={"locale": "en_US"}) == "COLLSCAN"
    assert stage(db.c3, collation={"locale": "fr_CA"}) == "IXSCAN"


def test_explain_counts_with_the_collation(db):
    """collation.js (find17): explain executionStats counts what the collated find returns."""
    db.c.insert_one({"str": "foo"})
    stats = db.command({"explain": {"find": "c", "filter": {"str": "FOO"}, "collation": {"locale": "en_US"}},
                        "verbosity": "executionStats"})
    assert stats["executionStats"]["nReturned"] == 0
    stats = db.command({"explain": {"find": "c", "filter": {"str": "FOO"}, "collation": CI},
                        "verbosity": "executionStats"})
    assert stats["executionStats"]["nReturned"] == 1


def test_index_order_matches_the_collection_collation(db):
    """collation.js (find22): a compound index inheriting the collection's collation returns the
    suffix field sorted by it, ascending and descending."""
    create(db, "c", {"locale": "en", "strength": 2})
    coll = db.c
    coll.create_index([("x", 1), ("y", 1), ("z", 1)])
    coll.insert_many([{"_id": i, "x": 1, "y": 10 - i, "z": f"str{i % 3}"} for i in range(10)])
    asc = [{"z": "str0"}, {"z": "str0"}, {"z": "str1"}, {"z": "str2"}]
    assert list(coll.find({"y": {"$lt": 5}}, {"_id": 0, "z": 1}).sort("z", 1)) == asc
    assert list(coll.find({"y": {"$lt": 5}}, {"_id": 0, "z": 1}).sort("z", -1)) == asc[::-1]


def test_collation_with_reverse_index(db):
    """collation_with_reverse_index.js: a find on the prefix of a descending compound index with a
    strength-1 collation returns the document (SERVER-34846)."""
    coll = db.c
    coll.insert_one({"int": 1, "text": "hello world"})
    coll.create_index([("int", -1), ("text", -1)], collation={"locale": "en", "strength": 1})
    assert list(coll.find({"int": 1}, {"_id": 0, "int": 1, "text": 1})) == [{"int": 1, "text": "hello world"}]


# --------------------------------------------------------------------------------------------------
# collation.js: findAndModify, remove, update, bulk and CRUD API
# --------------------------------------------------------------------------------------------------

def test_find_and_modify_with_a_collation(db):
    """collation.js (findmodify1..5): the query matches with the given collation, the collection's, or
    "simple"; _id lookups with a projection or a hint."""
    assert db.missing.find_one_and_update({"str": "bar"}, {"$set": {"str": "baz"}}, collation={"locale": "fr"},
                                          return_document=ReturnDocument.AFTER) is None
    coll = db.c
    coll.insert_many([{"_id": 1, "str": "foo"}, {"_id": 2, "str": "bar"}])
    assert coll.find_one_and_update({"str": "FOO"}, {"$set": {"str": "baz"}}, collation=CI,
                                    return_document=ReturnDocument.AFTER) == {"_id": 1, "str": "baz"}
    assert coll.find_one_and_delete({"str": "BAR"}, collation=CI) == {"_id": 2, "str": "bar"}
    create(db, "d", CI)
    d = db.d
    d.insert_one({"_id": 1, "str": "foo"})
    assert d.find_one_and_update({"str": "FOO"}, {"$set": {"x": 1}}) == {"_id": 1, "str": "foo"}
    assert d.find_one_and_update({"_id": 1}, {"$inc": {"x": 1}}, projection={"str": 1, "x": 1}) == {
        "_id": 1, "str": "foo", "x": 1}
    d.create_index("x")
    assert d.find_one_and_update({"_id": 1}, {"$inc": {"x": 1}}, hint=[("x", 1)]) == {"_id": 1, "str": "foo", "x": 2}
    assert d.find_one_and_update({"_id": 1}, {"$inc": {"x": 1}}, hint=[("_id", 1)]) == {
        "_id": 1, "str": "foo", "x": 3}
    assert d.find_one_and_delete({"str": "FOO"}) == {"_id": 1, "str": "foo", "x": 4}
    create(db, "e", CI)
    db.e.insert_one({"_id": 1, "str": "foo"})
    assert db.e.find_one_and_update({"str": "FOO"}, {"$set": {"x": 1}}, collation={"locale": "simple"}) is None
    assert db.e.find_one_and_delete({"str": "FOO"}, collation={"locale": "simple"}) is None


def test_remove_with_a_collation(db):
    """collation.js (remove1..8): deletes match with the given collation, the collection's (also on
    _id, also with a hint), or "simple"."""
    db.missing.delete_one({"str": "foo"}, collation={"locale": "fr"})
    db.c.insert_many([{"_id": 1, "str": "foo"}, {"_id": 2, "str": "foo"}])
    assert db.c.delete_one({"str": "FOO"}, collation=CI).deleted_count == 1
    create(db, "d", CI)
    db.d.insert_one({"_id": 1, "str": "foo"})
    assert db.d.delete_one({"str": "FOO"}).deleted_count == 1
    create(db, "e", CI)
    db.e.insert_one({"_id": "foo"})
    assert db.e.delete_one({"_id": "FOO"}).deleted_count == 1
    db.e.insert_one({"_id": "foo"})
    db.e.create_index("a")
    assert db.e.delete_one({"_id": "FOO"}, hint=[("a", 1)]).deleted_count == 1
    create(db, "f", CI)
    db.f.insert_many([{"_id": 1, "str": "foo"}, {"_id": "foo"}])
    assert db.f.delete_one({"str": "FOO"}, collation={"locale": "simple"}).deleted_count == 0
    assert db.f.delete_one({"_id": "FOO"}, collation={"locale": "simple"}).deleted_count == 0


def test_update_with_a_collation(db):
    """collation.js (update1..8): updates match with the given collation, the collection's (also on
    _id), or "simple"."""
    db.missing.update_many({"str": "foo"}, {"$set": {"other": 99}}, collation={"locale": "fr"})
    db.c.insert_many([{"_id": 1, "str": "foo"}, {"_id": 2, "str": "foo"}])
    assert db.c.update_many({"str": "FOO"}, {"$set": {"other": 99}}, collation=CI).modified_count == 2
    create(db, "d", CI)
    db.d.insert_many([{"_id": 1, "str": "foo"}, {"_id": "foo"}])
    assert db.d.update_one({"str": "FOO"}, {"$set": {"other": 99}}).matched_count == 1
    assert db.d.update_one({"_id": "FOO"}, {"$set": {"other": 99}}).matched_count == 1
    simple = {"locale": "simple"}
    assert db.d.update_one({"str": "FOO"}, {"$set": {"other": 1}}, collation=simple).modified_count == 0
    assert db.d.update_one({"_id": "FOO"}, {"$set": {"other": 1}}, collation=simple).modified_count == 0


def test_bulk_and_crud_api_with_collations(db):
    """collation.js (bulk API, CRUD API): every write model carries its own collation, two deletes in
    one bulk with different collations; an upsert matches only under the case-insensitive collation."""
    def fresh(name):
        coll = db[name]
        coll.insert_many([{"_id": 1, "str": "foo"}, {"_id": 2, "str": "foo"}])
        return coll

    assert fresh("u").bulk_write([UpdateMany({"str": "FOO"}, {"$set": {"o": 99}}, collation=CI)],
                                 ordered=False).modified_count == 2
    assert fresh("u1").bulk_write([UpdateOne({"str": "FOO"}, {"$set": {"o": 99}}, collation=CI)]).matched_count == 1
    assert fresh("r1").bulk_write([ReplaceOne({"str": "FOO"}, {"str": "oof"}, collation=CI)]).modified_count == 1
    r2 = fresh("r2")
    res = r2.bulk_write([ReplaceOne({"str": "FOO"}, {"str": "foo"}, collation={"locale": "en_US"}, upsert=True)])
    assert (res.upserted_count, res.modified_count) == (1, 0)
    res = r2.bulk_write([ReplaceOne({"str": "FOO"}, {"str": "foo"}, collation=CI, upsert=True)])
    assert (res.upserted_count, res.modified_count) == (0, 1)
    assert fresh("d1").bulk_write([DeleteOne({"str": "FOO"}, collation=CI)]).deleted_count == 1
    assert fresh("dm").bulk_write([DeleteMany({"str": "FOO"}, collation=CI)]).deleted_count == 2
    assert fresh("dd").delete_many({"str": "FOO"}, collation=CI).deleted_count == 2
    assert fresh("ro").replace_one({"str": "FOO"}, {"str": "bar"}, collation=CI).modified_count == 1
    assert fresh("uo").update_one({"str": "FOO"}, {"$set": {"o": 99}}, collation=CI).modified_count == 1
    assert fresh("um").update_many({"str": "FOO"}, {"$set": {"o": 99}}, collation=CI).modified_count == 2
    two = db.two
    two.insert_many([{"_id": 1, "str": "foo"}, {"_id": 2, "str": "bar"}])
    res = two.bulk_write([DeleteOne({"str": "FOO"}, collation={"locale": "fr", "strength": 2}),
                          DeleteOne({"str": "BAR"}, collation=CI)])
    assert res.deleted_count == 2
    one = db.one
    one.insert_one({"_id": 1, "str": "foo"})
    assert one.find_one_and_replace({"str": "FOO"}, {"str": "bar"}, collation=CI) == {"_id": 1, "str": "foo"}
    assert one.find_one({"str": "bar"}) is not None
    assert one.find_one_and_update({"str": "BAR"}, {"$set": {"other": 99}}, collation=CI) == {"_id": 1, "str": "bar"}
    assert one.find_one({"other": 99}) is not None
    assert one.find_one_and_delete({"str": "BAR"}, collation=CI) == {"_id": 1, "str": "bar", "other": 99}
    assert one.find_one({"_id": 1}) is None


@pytest.mark.parametrize("backwards", [None, UNDEFINED], ids=["null", "undefined"])
def test_null_or_undefined_collation_option_is_refused(db, backwards):
    """collation.js (SERVER-54482): a collation with backwards: null / undefined fails (TypeMismatch)."""
    db.c.insert_one({"str": "foo"})
    update = raw({"q": {"str": "foo"}, "u": {"$set": {"str": "bar"}},
                  "collation": {"locale": "en_US", "backwards": backwards}})
    res = db.command("update", "c", updates=[update])
    assert [e["code"] for e in res["writeErrors"]] == [TYPE_MISMATCH]
    assert db.c.find_one({}, {"_id": 0}) == {"str": "foo"}


def test_apply_ops_o2_uses_the_collection_collation(db):
    """collation.js: an applyOps update's o2 matches with the collection's default collation."""
    create(db, "c", CI)
    db.c.insert_one({"_id": "foo", "x": 5, "str": "bar"})
    db.command({"applyOps": [{"op": "u", "ns": f"{db.name}.c", "o2": {"_id": "FOO"},
                              "o": {"$v": 2, "diff": {"u": {"x": 6}}}}]})
    assert db.c.find_one({"_id": "foo"})["x"] == 6


def test_capped_copies_keep_the_collation(db):
    """collation.js / collation_convert_to_capped.js: cloneCollectionAsCapped and convertToCapped keep
    the source's default collation."""
    create(db, "orig", {"locale": "en", "strength": 2})
    db.orig.insert_many([{"_id": "FOO"}, {"_id": "bar"}])
    assert list(db.orig.find({"_id": "foo"})) == [{"_id": "FOO"}]
    collation = collection_options(db, "orig")["collation"]
    db.command({"cloneCollectionAsCapped": "orig", "toCollection": "cloned", "size": 4096})
    assert collection_options(db, "cloned")["collation"] == collation
    assert list(db.cloned.find({"_id": "foo"})) == [{"_id": "FOO"}]
    db.command({"convertToCapped": "orig", "size": 4096})
    assert collection_options(db, "orig")["collation"] == collation
    assert list(db.orig.find({"_id": "foo"})) == [{"_id": "FOO"}]


# --------------------------------------------------------------------------------------------------
# collation.js: $geoNear and $nearSphere
# --------------------------------------------------------------------------------------------------

GEO_NEAR = {"$geoNear": {"near": {"type": "Point", "coordinates": [0, 0]}, "distanceField": "dist",
                         "spherical": True, "query": {"str": "ABC"}}}
NEAR_SPHERE = {"str": "ABC", "geo": {"$nearSphere": {"$geometry": {"type": "Point", "coordinates": [0, 0]}}}}
GEO_INDEXES = [
    pytest.param([("geo", "2dsphere")], None, id="geo"),
    pytest.param([("geo", "2dsphere"), ("str", 1)], None, id="geo-str"),
    pytest.param([("geo", "2dsphere"), ("str", 1)], CS, id="geo-str-cs"),
    pytest.param([("geo", "2dsphere"), ("str", 1)], CI, id="geo-str-ci"),
]


NEAR = {"near": {"type": "Point", "coordinates": [0, 0]}, "distanceField": "dist"}


def test_geo_near_on_a_missing_collection_fails(db):
    """collation.js: $geoNear (with a collation) on a missing collection fails NamespaceNotFound."""
    command_fails(db, {"aggregate": "missing", "pipeline": [{"$geoNear": NEAR}], "cursor": {}, "collation": CI},
                  NAMESPACE_NOT_FOUND)


def test_geo_near_refuses_the_collation_option(db):
    """collation.js: $geoNear's old "collation" option fails 40227."""
    near = NEAR
    db.c.insert_one({"geo": {"type": "Point", "coordinates": [0, 0]}, "str": "abc"})
    command_fails(db, {"aggregate": "c", "pipeline": [{"$geoNear": {**near, "collation": {"locale": "en_US"}}}],
                       "cursor": {}}, 40227)


@pytest.mark.parametrize("index,index_collation", GEO_INDEXES)
def test_geo_near_query_uses_the_aggregate_collation(db, index, index_collation):
    """collation.js: $geoNear's query matches "abc" to "ABC" only under the aggregate's case-insensitive
    collation, whatever the geo index's string field and collation."""
    db.c.insert_one({"geo": {"type": "Point", "coordinates": [0, 0]}, "str": "abc"})
    db.c.create_index(index, **({"collation": index_collation} if index_collation else {}))
    assert len(list(db.c.aggregate([GEO_NEAR]))) == 0
    assert len(list(db.c.aggregate([GEO_NEAR], collation=CI))) == 1


def test_geo_near_query_uses_the_collection_collation(db):
    """collation.js (geonear3, geonear4): $geoNear's query uses the collection default unless the
    aggregate asks for "simple"."""
    create(db, "c", CI)
    db.c.create_index([("geo", "2dsphere")])
    db.c.insert_one({"geo": {"type": "Point", "coordinates": [0, 0]}, "str": "abc"})
    assert len(list(db.c.aggregate([GEO_NEAR]))) == 1
    assert len(list(db.c.aggregate([GEO_NEAR], collation={"locale": "simple"}))) == 0


@pytest.mark.parametrize("index,index_collation", GEO_INDEXES)
def test_near_sphere_uses_the_query_collation(db, index, index_collation):
    """collation.js (nearsphere1, 2): a $nearSphere find with a string predicate matches with the query's
    collation, whatever the index."""
    assert list(db.missing.find(NEAR_SPHERE, collation=CI)) == []
    db.c.insert_one({"geo": {"type": "Point", "coordinates": [0, 0]}, "str": "abc"})
    db.c.create_index(index, **({"collation": index_collation} if index_collation else {}))
    assert len(list(db.c.find(NEAR_SPHERE))) == 0
    assert len(list(db.c.find(NEAR_SPHERE, collation=CI))) == 1


# --------------------------------------------------------------------------------------------------
# collation.js: min / max, views
# --------------------------------------------------------------------------------------------------

def test_min_max_need_an_index_of_the_query_collation(db):
    """collation.js (minmax1): min/max without an index fail (51173), through an index of another
    collation fail 51174 when a bound is a string; through a matching index the bounds are collated."""
    coll = db.c
    coll.insert_many([{"str": s} for s in "aAbBcCdD"])

    def run(hint=None, lo=None, hi=None):
        cmd = SON([("find", "c"), ("collation", CI), ("min", lo), ("max", hi)])
        if hint is not None:
            cmd["hint"] = hint
        return db.command(cmd)["cursor"]["firstBatch"]

    fails(lambda: run(lo={"str": "b"}, hi={"str": "D"}), NO_QUERY_EXECUTION_PLANS, 51173)
    coll.create_index("str", name="noCollation")
    fails(lambda: run({"str": 1}, {"str": "b"}, {"str": "D"}), 51174)
    fails(lambda: run({"str": 1}, {"str": MinKey()}, {"str": "Hello1"}), 51174)
    coll.create_index("str", name="withCollation", collation=CI)
    assert len(run("withCollation", {"str": "b"}, {"str": "D"})) == 4


def test_min_max_results_are_sorted_by_the_query_collation(db):
    """collation.js (minmax2): min/max over a simple index with non-string bounds, sorted by the query's
    case-sensitive collation; a string bound through that index fails."""
    coll = db.c
    coll.create_index([("a", 1), ("b", 1)])
    coll.insert_many([{"a": 1, "b": 1}, {"a": 1, "b": 2}, {"a": 1, "b": "A"}, {"a": 1, "b": "a"}, {"a": 2, "b": 2}])
    expected = [{"a": 1, "b": 1}, {"a": 1, "b": 2}, {"a": 1, "b": "a"}, {"a": 1, "b": "A"}, {"a": 2, "b": 2}]
    hint = [("a", 1), ("b", 1)]
    sort = [("a", 1), ("b", 1)]
    lo, hi = [("a", 1), ("b", 1)], [("a", 2), ("b", 3)]
    assert list(coll.find({}, {"_id": 0}, collation=CS).hint(hint).min(lo).max(hi).sort(sort)) == expected
    assert list(coll.find({}, {"_id": 0}, collation=CS).hint(hint).min(lo).sort(sort)) == expected
    assert list(coll.find({}, {"_id": 0}, collation=CS).hint(hint).max(hi).sort(sort)) == expected
    fails(lambda: list(coll.find({}, {"_id": 0}, collation=CS).hint(hint).min([("a", 1), ("b", "A")])
                       .max([("a", 2), ("b", 1)]).sort(sort)), 51174)


def test_a_view_cannot_be_created_twice_with_another_collation(db):
    """collation.js: creating the same view again with a different collation fails NamespaceExists."""
    db.command({"create": "view", "viewOn": "coll"})
    command_fails(db, {"create": "view", "viewOn": "coll", "collation": {"locale": "en"}}, NAMESPACE_EXISTS)


# --------------------------------------------------------------------------------------------------
# collation_find_and_modify.js
# --------------------------------------------------------------------------------------------------

PIPELINE_FAM_CASES = [("$set", None, 3)] + [(stage, collation, expected) for stage in ("$set", "$project", "$replaceWith")
                                              for collation, expected in ((CS, 5), (CI, 3))]


@pytest.mark.parametrize("stage,collation,expected", PIPELINE_FAM_CASES)
def test_pipeline_find_and_modify_uses_the_collation(db, stage, collation, expected):
    """collation_find_and_modify.js: $indexOfArray in a pipeline-style findAndModify compares with the
    command's collation, else the collection's (case-insensitive) default."""
    if collation is None:
        create(db, "c", CI)
    expr = {"$indexOfArray": ["$x", "B"]}
    update = [{stage: {"newField": expr}}]
    db.c.insert_one({"x": [1, 2, "a", "b", "c", "B"]})
    cmd = SON([("findAndModify", "c"), ("query", {}), ("update", update), ("new", True)])
    if collation is not None:
        cmd["collation"] = collation
    assert db.command(cmd)["value"]["newField"] == expected


# --------------------------------------------------------------------------------------------------
# in_with_collation.js
# --------------------------------------------------------------------------------------------------

IN_LIST = ["cyD", 8, "BZd", 6, "awD", 2, "Cwa", 9, 3, "bxA", "azB", 4, "Ayc", 1, "cXB", "dYa", 7, "bwC", 5]


@pytest.mark.parametrize("indexed", [False, True], ids=["scan", "index"])
def test_in_with_collation(db, indexed):
    """in_with_collation.js: a long $in of strings and numbers over a case-insensitive collection
    matches the documents holding a case variant of a listed string or a listed number, and not the
    rotated strings / shifted numbers (also through an index inheriting the collation)."""
    create(db, "c", CI)
    if indexed:
        db.c.create_index("x")
    docs = []
    for i in range(len(IN_LIST) - 1, -1, -1):
        value = IN_LIST[i]
        x1 = value if isinstance(value, int) or i % 2 else (value.lower() if i % 4 == 0 else value.upper())
        x2 = x1 + (10 if i % 2 == 0 else -10) if isinstance(x1, int) else x1[1:] + x1[:1]
        docs += [{"_id": i * 2, "x": x1}, {"_id": i * 2 + 1, "x": x2}]
    db.c.insert_many(docs)
    assert sorted(d["_id"] for d in db.c.find({"x": {"$in": IN_LIST}}, {"_id": 1})) == list(range(0, 38, 2))


# --------------------------------------------------------------------------------------------------
# upsert_duplicate_key_retry_collation.js
# --------------------------------------------------------------------------------------------------

DUPLICATE_KEY = 11000


def test_upsert_duplicate_key_respects_the_collations(db):
    """upsert_duplicate_key_retry_collation.js: an upsert whose update collides with a unique index
    fails DuplicateKey whatever the query's and the index's collations (simple index + strength-1
    query; strength-2 index + simple query; strength-3 index + strength-1 query)."""
    en1 = {"locale": "en", "strength": 1}
    coll = db.c
    coll.create_index("x", unique=True)
    coll.insert_many([{"_id": 0, "x": "UNIQUE"}, {"_id": 1, "x": "unique"}])

    def both(first, second):
        coll.update_one({"x": first[0]}, {"$set": {"x": first[1]}}, upsert=True, collation=en1)
        coll.update_one({"x": second[0]}, {"$set": {"x": second[1]}}, upsert=True, collation=en1)

    fails(lambda: both(("unique", "unique"), ("unique", "UNIQUE")), DUPLICATE_KEY)
    coll.drop()
    coll.create_index("x", unique=True, collation={"locale": "en", "strength": 2})
    coll.insert_one({"_id": 0, "x": "UNIQUE"})
    fails(lambda: coll.update_one({"x": "unique"}, {"$set": {"x": "Unique"}}, upsert=True), DUPLICATE_KEY)
    coll.drop()
    coll.create_index("x", unique=True, collation={"locale": "en", "strength": 3})
    coll.insert_many([{"_id": 0, "x": "UNIQUË"}, {"_id": 1, "x": "UNIQUE"}])
    fails(lambda: both(("UNIQUE", "UNIQUE"), ("UNIQUE", "UNIQUË")), DUPLICATE_KEY)


# --------------------------------------------------------------------------------------------------
# collation_lookup.js, lookup_collation.js
# --------------------------------------------------------------------------------------------------

def test_lookup_uses_the_local_or_the_command_collation(db):
    """collation_lookup.js: $lookup compares localField and foreignField with the collation inherited
    from the local collection or given to the aggregate (also when followed by $unwind), else simple."""
    create(db, "with_default", CI)
    db.with_default.insert_one({"_id": "lowercase", "str": "abc"})
    db.without.insert_many([{"_id": "lowercase", "str": "abc"}, {"_id": "uppercase", "str": "ABC"},
                            {"_id": "unmatched", "str": "def"}])
    lookup = {"$lookup": {"from": "without", "localField": "str", "foreignField": "str", "as": "matched"}}
    both = [{"_id": "lowercase", "str": "abc"}, {"_id": "uppercase", "str": "ABC"}]
    unwound = [{"_id": "lowercase", "str": "abc", "matched": m} for m in both]
    (res,) = list(db.with_default.aggregate([lookup]))
    assert same_members(res["matched"], both)
    assert same_members(db.with_default.aggregate([lookup, {"$unwind": "$matched"}]), unwound)
    match = {"$match": {"_id": "lowercase"}}
    (res,) = list(db.without.aggregate([match, lookup], collation=CI))
    assert same_members(res["matched"], both)
    assert same_members(db.without.aggregate([match, lookup, {"$unwind": "$matched"}], collation=CI), unwound)
    back = {"$lookup": {"from": "with_default", "localField": "str", "foreignField": "str", "as": "matched"}}
    assert list(db.without.aggregate([match, back])) == [
        {"_id": "lowercase", "str": "abc", "matched": [{"_id": "lowercase", "str": "abc"}]}]


def _lookups(foreign: str) -> list:
    return [
        {"$lookup": {"from": foreign, "as": "matched", "let": {"l_key": "$key"},
                     "pipeline": [{"$match": {"$expr": {"$eq": ["$key", "$$l_key"]}}}]}},
        {"$lookup": {"from": foreign, "localField": "key", "foreignField": "key", "as": "matched"}},
    ]


LOOKUP_RECORDS = [{"_id": 0, "key": "a"}, {"_id": 1, "key": "A"}]
LOOKUP_CS = [{"_id": 0, "key": "a", "matched": [{"_id": 0, "key": "a"}]},
             {"_id": 1, "key": "A", "matched": [{"_id": 1, "key": "A"}]}]
LOOKUP_CI = [{**r, "matched": LOOKUP_RECORDS} for r in LOOKUP_RECORDS]


def test_lookup_collation_precedence(db):
    """lookup_collation.js: the foreign collection's collation is ignored; the local collection's
    applies unless the command gives one; with a foreign index of the effective collation (or not)
    the answers are the same. (The internal '_internalCollation' stage option is left out.)"""
    en1 = {"locale": "en_US", "strength": 1}
    create(db, "cs")
    create(db, "ci", en1)
    create(db, "cs_indexed")
    for name in ("cs", "ci", "cs_indexed"):
        db[name].insert_many([dict(r) for r in LOOKUP_RECORDS])
    db.cs_indexed.create_index("key")
    db.cs_indexed.create_index([("key", 1), ("x", 1)], collation=en1)

    def check(got, expected):
        got = [{**d, "matched": sorted(d["matched"], key=lambda m: m["_id"])} for d in got]
        assert same_members(got, expected)

    for lookup_cs, lookup_ci, lookup_indexed in zip(_lookups("cs"), _lookups("ci"), _lookups("cs_indexed"),
                                                    strict=True):
        check(db.cs.aggregate([lookup_ci]), LOOKUP_CS)
        check(db.ci.aggregate([lookup_cs], allowDiskUse=False), LOOKUP_CI)
        check(db.ci.aggregate([lookup_cs], allowDiskUse=True), LOOKUP_CI)
        check(db.cs.aggregate([lookup_cs], collation=en1), LOOKUP_CI)
        check(db.ci.aggregate([lookup_cs], collation={"locale": "simple"}), LOOKUP_CS)
        check(db.ci.aggregate([lookup_indexed]), LOOKUP_CI)
        check(db.cs.aggregate([lookup_indexed], collation=en1), LOOKUP_CI)
        check(db.cs.aggregate([lookup_indexed], collation={"locale": "fr"}, allowDiskUse=False), LOOKUP_CS)


# --------------------------------------------------------------------------------------------------
# merge_sort_collation.js
# --------------------------------------------------------------------------------------------------

STD_DOCS = [{"_id": 0, "a": 0, "b": "CC"}, {"_id": 1, "a": 0, "b": "AA"}, {"_id": 2, "a": 0, "b": "bb"}]
EN1 = {"locale": "en_US", "strength": 1}
EN2 = {"locale": "en", "strength": 2}
MERGE_SORT_CASES = [
    # (collection collation, indexes, index collation, filter, sort, find collation, projection, docs, expected _ids)
    (None, [{"a": 1, "b": 1}], EN1, {"a": 0}, {"b": 1}, None, None, STD_DOCS, [1, 0, 2]),
    (None, [{"a": 1, "b": 1}], EN1, {"a": 0}, {"b": 1}, {"locale": "simple"}, None, STD_DOCS, [1, 0, 2]),
    (None, [{"a": 1, "b": 1}], None, {"a": 0}, {"b": 1}, EN1, None, STD_DOCS, [1, 2, 0]),
    (None, [{"a": 1, "b": 1}], {"locale": "simple"}, {"a": 0}, {"b": 1}, EN1, None, STD_DOCS, [1, 2, 0]),
    (None, [{"a": 1, "b": 1}], {"locale": "en_US", "strength": 5}, {"a": 0}, {"b": 1}, EN1, None, STD_DOCS,
     [1, 2, 0]),
    (None, [{"a": 1, "b": 1}], EN1, {"a": 0, "b": {"$gte": "A", "$lt": "D"}}, {"b": 1}, None, None, STD_DOCS,
     [1, 0]),
    (None, [{"a": 1, "b": 1, "c": 1}], EN1, {"a": 0, "b": {"$gte": "A", "$lt": "D"}}, {"b": 1}, None, None,
     STD_DOCS, [1, 0]),
    (None, [{"a": 1, "b": 1}], EN1, {"a": {"$in": [0, 2]}, "b": {"$gte": "A", "$lt": "D"}}, {"b": 1}, None, None,
     [{"_id": 0, "a": 0, "b": "CC"}, {"_id": 1, "a": 0, "b": "AA"}, {"_id": 2, "a": 0, "b": "bb"},
      {"_id": 3, "a": 2, "b": "BB"}], [1, 3, 0]),
    (None, [{"a": 1, "b": 1}], EN1, {"a": {"$in": [0, 2]}, "b": {"$gte": 0, "$lt": 10}}, {"b": 1}, None, None,
     [{"_id": 0, "a": 0, "b": 6}, {"_id": 1, "a": 0, "b": 10}, {"_id": 2, "a": 0, "b": "bb"},
      {"_id": 3, "a": 2, "b": 5}, {"_id": 4, "a": 2, "b": 4}], [4, 3, 0]),
    (None, [{"a": 1, "b": 1}], {"locale": "simple"}, {"a": {"$in": [0, 2]}, "b": {"$gte": 0, "$lt": 10}}, {"b": 1},
     EN1, None,
     [{"_id": 0, "a": 0, "b": 6}, {"_id": 1, "a": 0, "b": 10}, {"_id": 2, "a": 0, "b": "bb"},
      {"_id": 3, "a": 2, "b": 5}, {"_id": 4, "a": 2, "b": 4}], [4, 3, 0]),
    (None, [{"a": 1, "b": 1}], EN1, {"a": 0, "b": {"$gte": 0, "$lt": 10}}, {"b": 1}, None, None,
     [{"_id": 0, "a": 0, "b": 6}, {"_id": 1, "a": 0, "b": 5}, {"_id": 2, "a": 0, "b": "bb"},
      {"_id": 3, "a": 0, "b": 4}], [3, 1, 0]),
    (None, [{"a": 1, "b": 1}], EN2, {"a": {"$in": ["1", "2"]}}, {"b": 1}, EN2, None,
     [{"_id": 0, "a": "1", "b": "a"}, {"_id": 1, "a": "1", "b": "c"}, {"_id": 2, "a": "2", "b": "b"},
      {"_id": 3, "a": "2", "b": "d"}], [0, 2, 1, 3]),
    (None, [{"a": 1, "b": 1, "c": 1, "d": 1}], EN2, {"a": {"$in": ["1", "2"]}, "b": "1"}, {"c": 1}, EN2, None,
     [{"_id": 0, "a": "1", "b": "1", "c": "a"}, {"_id": 1, "a": "1", "b": "1", "c": "c"},
      {"_id": 2, "a": "2", "b": "1", "c": "b"}, {"_id": 3, "a": "2", "b": "1", "c": "u", "d": "a"}], [0, 2, 1, 3]),
    (None, [{"a": 1, "b": 1, "c": 1}, {"d": 1, "c": 1}, {"f": 1, "c": 1}], EN2,
     {"$or": [{"a": {"$in": ["1", "2"]}, "b": "1"}, {"d": "3", "e": "3"}, {"f": "4", "g": "3"}]}, {"c": 1}, EN2, None,
     [{"_id": 0, "d": "3", "e": "3", "c": "a"}, {"_id": 1, "d": "3", "e": "3", "c": "b"}, {"_id": 2, "d": "3", "e": "3"},
      {"_id": 3, "d": "3", "e": "3", "c": {}}, {"_id": 4, "d": "3", "e": "3", "c": "c"},
      {"_id": 5, "d": "3", "e": "3", "c": 1}, {"_id": 6, "a": "2", "b": "1", "c": {"a": "B"}},
      {"_id": 7, "d": "3", "e": "3", "c": {"a": "A"}}, {"_id": 8, "d": "3", "e": "3", "c": {"a": "C"}},
      {"_id": 9, "f": "4", "g": "3", "c": "d"}], [2, 5, 0, 1, 4, 9, 3, 7, 6, 8]),
    (EN2, [{"a": 1, "b": 1, "c": 1, "d": 1}], None, {"a": {"$in": ["1", "2"]}, "b": "1"}, {"c": 1}, None, None,
     [{"_id": 0, "a": "1", "b": "1", "c": "a"}, {"_id": 1, "a": "1", "b": "1", "c": "c"},
      {"_id": 2, "a": "2", "b": "1", "c": "b"}, {"_id": 3, "a": "2", "b": "1", "c": "d"}], [0, 2, 1, 3]),
    (None, [{"a": 1, "b": 1, "c": 1, "d": 1}], None, {"a": {"$in": ["1", "2"]}, "b": "1"}, {"c": 1}, None, None,
     [{"_id": 0, "a": "1", "b": "1", "c": "a"}, {"_id": 1, "a": "1", "b": "1", "c": "c"},
      {"_id": 2, "a": "2", "b": "1", "c": "b"}, {"_id": 3, "a": "2", "b": "1", "c": "d"}], [0, 2, 1, 3]),
    (None, [{"a": 1, "c": 1}, {"b": 1, "c": 1}], EN2, {"$or": [{"a": "1"}, {"b": "2"}]}, {"c": 1}, EN2, None,
     [{"_id": 0, "a": "1", "c": "a"}, {"_id": 1, "a": "1", "c": "c"}, {"_id": 2, "b": "2", "c": "b"},
      {"_id": 3, "b": "2", "c": "d"}], [0, 2, 1, 3]),
    (None, [{"a": 1, "c": 1}, {"b": 1, "c": 1}], EN2, {"$or": [{"a": "1"}, {"b": "2", "d": "3"}]}, {"c": 1}, EN2,
     None, [{"_id": 0, "a": "1", "c": "a"}, {"_id": 1, "a": "1", "c": "c"}, {"_id": 2, "b": "2", "c": "b", "d": "3"},
            {"_id": 3, "b": "2", "c": "d", "d": "3"}], [0, 2, 1, 3]),
    (None, [{"a": 1, "b": 1}], EN2, {"a": {"$in": [1, 2]}}, {"b": 1}, EN2, None,
     [{"_id": 0, "a": 1, "b": "a"}, {"_id": 1, "a": 1, "b": "c"}, {"_id": 2, "a": 2, "b": "b"},
      {"_id": 3, "a": 2, "b": "d"}], [0, 2, 1, 3]),
    (None, [{"a": 1, "c": 1}, {"b": 1, "c": 1}], {"locale": "fr"},
     {"$or": [{"a": 1, "c": 1}, {"b": 2, "c": 2}, {"b": 2, "c": 3}, {"b": 2, "c": 4}]}, {"c": 1}, EN2, None,
     [{"_id": 4, "b": 2, "c": 4}, {"_id": 2, "b": 2, "c": 2}, {"_id": 0, "a": 1, "c": 1}, {"_id": 3, "b": 2, "c": 3}],
     [0, 2, 3, 4]),
    (None, [{"a": 1, "c": 1}], None, {"a": {"$in": [1, 2]}}, {"c": 1}, None, {"_id": 0, "a": 1, "c": 1},
     [{"_id": 0, "a": 1, "c": 5}, {"_id": 1, "a": 1, "c": 3}, {"_id": 2, "a": 2, "c": 1}, {"_id": 3, "a": 2, "c": 4}],
     [{"a": 2, "c": 1}, {"a": 1, "c": 3}, {"a": 2, "c": 4}, {"a": 1, "c": 5}]),
    (None, [{"a": 1, "c": 1}], EN2, {"a": {"$in": [1, 2]}}, {"c": 1}, EN2, {"_id": 0, "a": 1, "c": 1},
     [{"_id": 0, "a": 1, "c": "a"}, {"_id": 1, "a": 1, "c": "c"}, {"_id": 2, "a": 2, "c": "b"},
      {"_id": 3, "a": 2, "c": "d"}],
     [{"a": 1, "c": "a"}, {"a": 2, "c": "b"}, {"a": 1, "c": "c"}, {"a": 2, "c": "d"}]),
]


@pytest.mark.parametrize("case", range(len(MERGE_SORT_CASES)))
def test_merge_sort_collation(db, case):
    """merge_sort_collation.js: sorted finds over compound indexes whose collation is or is not the
    query's (merge sorts of point prefixes, $or branches, covered projections) return the documents
    in the query collation's order."""
    coll_collation, indexes, index_collation, flt, sort, find_collation, proj, docs, expected = \
        MERGE_SORT_CASES[case]
    create(db, "c", coll_collation)
    for spec in indexes:
        db.c.create_index(list(spec.items()), **({"collation": index_collation} if index_collation else {}))
    db.c.insert_many([dict(d) for d in docs])
    kw = {"collation": find_collation} if find_collation else {}
    got = list(db.c.find(flt, proj, **kw).sort(list(sort.items())))
    if proj is None:
        by_id = {d["_id"]: d for d in docs}
        expected = [by_id[i] for i in expected]
    assert seq(got) == seq(expected)


# --------------------------------------------------------------------------------------------------
# Hypothesis: order and equality against PyICU's collator
# --------------------------------------------------------------------------------------------------

ALPHABET = "aAbBeéÉèEzZ019 -_.'ß"
_A, _V = icu.UCollAttribute, icu.UCollAttributeValue


def reference_collator(spec: dict):
    collator = icu.Collator.createInstance(icu.Locale(spec["locale"]))
    collator.setAttribute(_A.STRENGTH, {1: _V.PRIMARY, 2: _V.SECONDARY, 3: _V.TERTIARY, 4: _V.QUATERNARY,
                                        5: _V.IDENTICAL}[spec.get("strength", 3)])
    collator.setAttribute(_A.CASE_LEVEL, _V.ON if spec.get("caseLevel") else _V.OFF)
    collator.setAttribute(_A.NUMERIC_COLLATION, _V.ON if spec.get("numericOrdering") else _V.OFF)
    collator.setAttribute(_A.CASE_FIRST, {"upper": _V.UPPER_FIRST, "lower": _V.LOWER_FIRST,
                                          "off": _V.OFF}[spec.get("caseFirst", "off")])
    collator.setAttribute(_A.ALTERNATE_HANDLING,
                          _V.SHIFTED if spec.get("alternate") == "shifted" else _V.NON_IGNORABLE)
    return collator


collations = st.fixed_dictionaries(
    {"locale": st.sampled_from(["en", "fr", "de", "sv"])},
    optional={"strength": st.integers(1, 5), "caseLevel": st.booleans(), "numericOrdering": st.booleans(),
              "alternate": st.sampled_from(["non-ignorable", "shifted"]),
              "caseFirst": st.sampled_from(["upper", "lower", "off"])},
)
words = st.text(alphabet=ALPHABET, max_size=6)


@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(spec=collations, strings=st.lists(words, min_size=1, max_size=25), probe=words, indexed=st.booleans())
def test_collated_order_and_equality_follow_icu(db, spec, strings, probe, indexed):
    """Strings sorted under a collation come back in the ICU collator's order (ascending and
    descending, find and aggregate); equality, $lt and $gte match exactly the strings the collator
    calls equal / less; with an index carrying the collation (hinted) the answers are the same."""
    collator = reference_collator(spec)
    key = collator.getSortKey
    coll = db.c
    coll.drop()
    if indexed:
        coll.create_index("s", collation=spec)
    coll.insert_many([{"_id": i, "s": s} for i, s in enumerate(strings)])
    kw = {"collation": spec, **({"hint": [("s", 1)]} if indexed else {})}
    for direction in (1, -1):
        got = [d["s"] for d in coll.find({}, **kw).sort("s", direction)]
        keys = [key(s) for s in got]
        assert keys == sorted(keys, reverse=direction == -1), (spec, got)
        assert sorted(got) == sorted(strings)
        agg = [d["s"] for d in coll.aggregate([{"$sort": {"s": direction}}], collation=spec)]
        assert [key(s) for s in agg] == keys
    pk = key(probe)
    expected = {i for i, s in enumerate(strings) if key(s) == pk}
    assert {d["_id"] for d in coll.find({"s": probe}, **kw)} == expected
    assert {d["_id"] for d in coll.find({"s": {"$lt": probe}}, **kw)} == \
        {i for i, s in enumerate(strings) if key(s) < pk}
    assert {d["_id"] for d in coll.find({"s": {"$gte": probe}}, **kw)} == \
        {i for i, s in enumerate(strings) if key(s) >= pk}
    assert {d["_id"] for d in coll.find({"s": {"$in": [probe]}}, **kw)} == expected
    # distinct keeps one string per collation-equal class
    assert len(coll.distinct("s", {}, collation=spec)) == len({key(s) for s in strings})


def _ref_key(value, key) -> tuple:
    """The reference BSON order of a number, a string (by its ICU key) or an array of them (by its
    elements in order)."""
    if isinstance(value, list):
        return (2, tuple(_ref_key(v, key) for v in value))
    if isinstance(value, str):
        return (1, key(value))
    return (0, value)


def _ref_sort_key(value, key, direction: int) -> tuple:
    """A sort key as mongod builds it: an array sorts by its smallest element ascending, its largest
    descending."""
    if isinstance(value, list):
        keys = [_ref_key(v, key) for v in value]
        return min(keys) if direction == 1 else max(keys)
    return _ref_key(value, key)


values = st.one_of(words, st.integers(-3, 3), st.lists(words, min_size=1, max_size=3))


@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(spec=collations, items=st.lists(values, min_size=1, max_size=20), probe=words, indexed=st.booleans())
def test_collated_arrays_sort_match_and_group_like_icu(db, spec, items, probe, indexed):
    """Over strings, numbers and arrays of strings: a collated sort orders arrays by their smallest
    (ascending) or largest (descending) element under the collation; equality matches an array holding
    a collation-equal string; $group folds collation-equal values (arrays element by element) into one
    group; with a multikey index carrying the collation the answers are the same."""
    key = reference_collator(spec).getSortKey
    coll = db.c
    coll.drop()
    if indexed:
        coll.create_index("a", collation=spec)
    coll.insert_many([{"_id": i, "a": v} for i, v in enumerate(items)])
    kw = {"collation": spec, **({"hint": [("a", 1)]} if indexed else {})}
    for direction in (1, -1):
        got = [_ref_sort_key(d["a"], key, direction) for d in coll.find({}, **kw).sort("a", direction)]
        assert got == sorted(got, reverse=direction == -1), (spec, items)
    pk = (1, key(probe))

    def holds(v):
        return any(_ref_key(x, key) == pk for x in (v if isinstance(v, list) else [v]))

    assert {d["_id"] for d in coll.find({"a": probe}, **kw)} == {i for i, v in enumerate(items) if holds(v)}
    groups = list(coll.aggregate([{"$group": {"_id": "$a", "n": {"$sum": 1}}}], collation=spec))
    assert len(groups) == len({_ref_key(v, key) for v in items})
    assert sum(g["n"] for g in groups) == len(items)
