"""MongoDB's catalog and namespace-DDL jstests (ordinary collections) ported to pymongo against a real
Tidemark server: listCollections (its entries, filters, nameOnly, cursor options and their error codes),
listDatabases, dbStats, listIndexes after DDL, and create / drop / dropDatabase / renameCollection.

Ported from mongodb/mongo (7.0-era; 29 files), ``jstests/core/catalog/``: ``list_collections.js``
(``list_collections1.js``), ``list_collections_filter.js``, ``list_collections_name_only.js``,
``list_collections_no_views.js``, ``list_databases.js``, ``db_stats.js``, ``list_indexes_correctness.js``,
``list_indexes_invalidation.js``, ``list_namespaces_invalidation.js``, ``list_collections_correctness.js``
and ``list_collections_create_roundtrip.js`` (the last three are 8.x-era files whose checks hold for 7.0);
and ``jstests/core/ddl/``: ``create_collection.js``, ``create_collection_fail_cleanup.js``,
``drop_collection.js``, ``drop3.js`` (``drop_collection_cursors.js``), ``drop_database.js``
(``dropdb.js``), ``collection_uuid_drop.js``, ``rename_collection.js``, ``rename_collection_capped.js``,
``rename_collection_different_dbs.js``, ``rename_collection_long_name.js``,
``rename_collection_staytemp.js``, ``rename_collection_system_db.js``, ``rename_collection_to_itself.js``,
``rename_collection_view.js`` and ``collection_uuid_rename_collection.js``.

The views jstests of ``jstests/core/catalog/views/`` are already ported in ``test_jstests_views.py``;
``collStats_numericOnly.js`` checks WiredTiger's ``creationString`` (Tidemark has no WiredTiger section)
and the ``$listCatalog`` / ``$_internalListCollections`` jstests are 7.0-internal: all left out. The
~16 MB batch part of list_collections.js is replaced by a batch-count check on small entries; the
``top`` part of create_collection_fail_cleanup.js by the listCollections answer. The ``storageTier``
part of create_collection.js is 8.x. Where the jstest was later rewritten (the long-namespace limits of
create_collection.js and rename_collection_long_name.js), mongod 7.0's rule is used: a namespace
(``db.collection``) of at most 255 bytes. Hypothesis checks the invariant listCollections' name fast path
must keep: a filter on ``name`` lists exactly what the same filter evaluated over every entry lists.
"""

from __future__ import annotations

import re
import uuid

import bson
import pytest
from bson import Int64, Regex
from bson.binary import Binary, UuidRepresentation
from harness.jstests import fails
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo import IndexModel
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands(
    "listCollections", "listDatabases", "dbStats", "listIndexes", "create", "drop", "dropDatabase",
    "renameCollection", "applyOps", "killCursors", "getMore", "collMod", "collStats",
)

BAD_VALUE = 2
FAILED_TO_PARSE = 9
TYPE_MISMATCH = 14
NAMESPACE_NOT_FOUND = 26
CURSOR_NOT_FOUND = 43
NAMESPACE_EXISTS = 48
INVALID_OPTIONS = 72
INVALID_NAMESPACE = 73
ILLEGAL_OPERATION = 20
COMMAND_NOT_SUPPORTED_ON_VIEW = 166
INVALID_INDEX_SPEC_OPTION = 197
COLLECTION_UUID_MISMATCH = 361
UNKNOWN_FIELD = 40415
BATCH_SIZE_NEGATIVE = 51024
API_STRICT_ERROR = 323


def _list(db, **options) -> list[dict]:
    """Every entry listCollections returns (following the cursor), without system.profile."""
    reply = db.command("listCollections", 1, **options)
    docs = list(reply["cursor"]["firstBatch"])
    cursor_id = reply["cursor"]["id"]
    while cursor_id:
        more = db.command("getMore", cursor_id, collection="$cmd.listCollections")
        docs.extend(more["cursor"]["nextBatch"])
        cursor_id = more["cursor"]["id"]
    return [d for d in docs if d["name"] != "system.profile"]


def _names(db, flt=None) -> list[str]:
    return sorted(d["name"] for d in _list(db, **({} if flt is None else {"filter": flt})))


def _create_temp(db, name: str) -> None:
    """A collection with ``temp: true`` (only applyOps can create one, as in the jstests)."""
    db.command("applyOps", [{"op": "c", "ns": f"{db.name}.$cmd", "o": {"create": name, "temp": True}}])


# --------------------------------------------------------------------------------------------------
# list_collections.js / list_collections1.js
# --------------------------------------------------------------------------------------------------


def test_a_collection_entry_has_options_type_info_and_id_index(db):
    db.create_collection("foo")
    reply = db.command("listCollections")
    assert reply["cursor"]["id"] == 0 and isinstance(reply["cursor"]["ns"], str)
    (entry,) = [c for c in reply["cursor"]["firstBatch"] if c["name"] == "foo"]
    assert entry["type"] == "collection" and entry["options"] == {}
    assert entry["info"]["readOnly"] is False
    assert isinstance(entry["info"]["uuid"], Binary) and entry["info"]["uuid"].subtype == 4
    assert "v" in entry["idIndex"] and entry["idIndex"]["key"] == {"_id": 1}


def test_a_view_entry_is_read_only_without_id_index(db):
    db.create_collection("foo")
    db.command("create", "bar", viewOn="foo", pipeline=[])
    (entry,) = [c for c in _list(db) if c["name"] == "bar"]
    assert entry["options"] == {"viewOn": "foo", "pipeline": []}
    assert entry["type"] == "view" and entry["info"]["readOnly"] is True
    assert "idIndex" not in entry


def test_temp_option_is_listed_and_filterable(db):
    db.create_collection("foo")
    _create_temp(db, "bar")
    entries = {c["name"]: c for c in _list(db)}
    assert "temp" not in entries["foo"]["options"] and entries["bar"]["options"]["temp"] is True
    assert _names(db, {}) == ["bar", "foo"]
    assert _names(db, {"name": {"$in": ["foo", "bar"]}}) == ["bar", "foo"]
    assert _names(db, {"name": Regex("^foo$")}) == ["foo"]
    assert _names(db, {"options.temp": True}) == ["bar"]
    db.drop_collection("foo")
    assert _names(db, {"name": {"$in": ["foo", "bar"]}}) == ["bar"]
    assert _names(db, {"name": Regex("^foo$")}) == []
    assert _names(db, {"options.temp": True}) == ["bar"]
    db.drop_collection("bar")
    assert _names(db, {"name": {"$in": ["foo", "bar"]}}) == []
    assert _names(db, {"options.temp": True}) == []


@pytest.mark.parametrize("flt, code", [
    ({"$invalid": 1}, BAD_VALUE),
    (0, TYPE_MISMATCH),
    ("x", TYPE_MISMATCH),
    ([], TYPE_MISMATCH),
])
def test_an_invalid_filter_is_refused(db, flt, code):
    db.create_collection("foo")
    assert fails(lambda: db.command("listCollections", 1, filter=flt)).code == code


def _first_batch(db, cursor) -> tuple[list[dict], int]:
    reply = db.command("listCollections", 1, cursor=cursor, filter={"name": {"$ne": "system.profile"}})
    return reply["cursor"]["firstBatch"], reply["cursor"]["id"]


@pytest.mark.parametrize("batch_size, expected", [
    (2, 2), (1, 1), (0, 0), (bson.int64.Int64(2), 2), (2 ** 62, 2), (2.0, 2),
])
def test_cursor_batch_size_limits_the_first_batch(db, batch_size, expected):
    db.create_collection("foo")
    db.create_collection("bar")
    batch, cursor_id = _first_batch(db, {"batchSize": batch_size})
    assert len(batch) == expected
    assert (cursor_id != 0) == (expected < 2)
    rest = []
    while cursor_id:
        more = db.command("getMore", cursor_id, collection="$cmd.listCollections")
        rest.extend(more["cursor"]["nextBatch"])
        cursor_id = more["cursor"]["id"]
    assert sorted(c["name"] for c in batch + rest) == ["bar", "foo"]


def test_an_empty_cursor_document_means_the_default_batch(db):
    db.create_collection("foo")
    db.create_collection("bar")
    batch, cursor_id = _first_batch(db, {})
    assert sorted(c["name"] for c in batch) == ["bar", "foo"] and cursor_id == 0


@pytest.mark.parametrize("cursor, code", [
    (0, TYPE_MISMATCH),
    ("x", TYPE_MISMATCH),
    ([], TYPE_MISMATCH),
    ({"foo": 1}, UNKNOWN_FIELD),
    ({"batchSize": -1}, BATCH_SIZE_NEGATIVE),
    ({"batchSize": "x"}, TYPE_MISMATCH),
    ({"batchSize": {}}, TYPE_MISMATCH),
    ({"batchSize": 2, "foo": 1}, UNKNOWN_FIELD),
])
def test_an_invalid_cursor_option_is_refused(db, cursor, code):
    db.create_collection("foo")
    assert fails(lambda: db.command("listCollections", 1, cursor=cursor)).code == code


def test_get_more_walks_batches_of_the_requested_size(db):
    for name in ("foo", "bar", "baz", "quux"):
        db.create_collection(name)
    batch, cursor_id = _first_batch(db, {"batchSize": 0})
    assert batch == [] and cursor_id != 0
    sizes = []
    while cursor_id:
        more = db.command("getMore", cursor_id, collection="$cmd.listCollections", batchSize=2)
        sizes.append(len(more["cursor"]["nextBatch"]))
        cursor_id = more["cursor"]["id"]
    assert sizes[:2] == [2, 2] and sum(sizes) == 4


def test_a_missing_or_emptied_database_lists_nothing(db):
    assert _names(db) == []
    db.create_collection("foo")
    db.drop_collection("foo")
    assert "foo" not in _names(db)


def test_a_killed_list_collections_cursor_is_gone(db):
    for name in ("foo", "bar", "baz", "quux"):
        db.create_collection(name)
    _, cursor_id = _first_batch(db, {"batchSize": 0})
    reply = db.command("killCursors", "$cmd.listCollections", cursors=[cursor_id])
    assert reply["cursorsKilled"] == [cursor_id]
    err = fails(lambda: db.command("getMore", cursor_id, collection="$cmd.listCollections"))
    assert err.code == CURSOR_NOT_FOUND


@pytest.mark.parametrize("value", [{}, "s"])
def test_include_pending_drops_must_be_a_boolean(db, value):
    assert fails(lambda: db.command("listCollections", 1, includePendingDrops=value)).code == TYPE_MISMATCH


@pytest.mark.parametrize("value", [1, True, False])
def test_include_pending_drops_accepts_booleans_and_numbers(db, value):
    db.command("listCollections", 1, includePendingDrops=value)


def test_include_pending_drops_is_not_in_api_version_1(db):
    err = fails(lambda: db.command("listCollections", 1, includePendingDrops=False, apiVersion="1", apiStrict=True))
    assert err.code == API_STRICT_ERROR


# --------------------------------------------------------------------------------------------------
# list_collections_filter.js
# --------------------------------------------------------------------------------------------------


@pytest.fixture
def sets_db(db):
    for name in ("lists", "ordered_sets", "unordered_sets"):
        db.create_collection(name)
    _create_temp(db, "arrays_temp")
    return db


_ALL = ["arrays_temp", "lists", "ordered_sets", "unordered_sets"]


@pytest.mark.parametrize("flt, expected", [
    ({}, _ALL),
    ({"options": {}}, ["lists", "ordered_sets", "unordered_sets"]),
    ({"name": "lists"}, ["lists"]),
    ({"name": "non-existent"}, []),
    ({"name": ""}, []),
    ({"name": 1234}, []),
    ({"name": {"$in": ["lists"]}}, ["lists"]),
    ({"name": {"$in": []}}, []),
    ({"name": {"$in": ["lists", "ordered_sets", "non-existent", "", 1234]}}, ["lists", "ordered_sets"]),
    ({"name": {"$in": ["lists", Regex(".*_sets$"), "non-existent", "", 1234]}},
     ["lists", "ordered_sets", "unordered_sets"]),
    ({"name": "lists", "options": {}}, ["lists"]),
    ({"name": "lists", "options.temp": True}, []),
    ({"$and": [{"name": "lists"}, {"options.temp": True}]}, []),
    ({"name": "arrays_temp", "options.temp": True}, ["arrays_temp"]),
    ({"name": {"$in": ["lists", Regex(".*_sets$")]}, "options": {}}, ["lists", "ordered_sets", "unordered_sets"]),
    ({"$and": [{"name": {"$in": ["lists", Regex(".*_sets$")]}}, {"name": "lists"}, {"options": {}}]}, ["lists"]),
    ({"$and": [{"name": {"$in": ["lists", Regex(".*_sets$")]}}, {"name": "non-existent"}, {"options": {}}]}, []),
    ({"$expr": {"$eq": ["$name", "lists"]}}, ["lists"]),
])
def test_list_collections_filter(sets_db, flt, expected):
    assert _names(sets_db, flt) == expected
    # pymongo's helper (the shell's getCollectionInfos) answers the same
    assert sorted(c["name"] for c in sets_db.list_collections(filter=flt)) == expected


@pytest.mark.parametrize("flt, code", [
    ({"$expr": {"$eq": ["$name", "$$unbound"]}}, 17276),
    ({"$expr": {"$abs": "$name"}}, 28765),
    ({"$text": {"$search": "str"}}, BAD_VALUE),
    ({"$where": "function() { return true; }"}, BAD_VALUE),
    ({"a": {"$nearSphere": {"$geometry": {"type": "Point", "coordinates": [0, 0]}}}}, BAD_VALUE),
])
def test_list_collections_filter_refuses_errors_and_extensions(sets_db, flt, code):
    assert fails(lambda: sets_db.command("listCollections", 1, filter=flt)).code == code


# The fast path (point lookups for the names a filter pins) must list what a full scan lists.
_NAME_POOL = ["lists", "ordered_sets", "unordered_sets", "arrays_temp", "nope", ""]
_name_pred = st.one_of(
    st.sampled_from(_NAME_POOL),
    st.builds(lambda v: {"$eq": v}, st.sampled_from(_NAME_POOL)),
    st.builds(lambda vs: {"$in": vs}, st.lists(st.one_of(st.sampled_from(_NAME_POOL), st.just(1234),
                                                         st.just(Regex("_sets$"))), max_size=4)),
    st.builds(lambda v: {"$ne": v}, st.sampled_from(_NAME_POOL)),
)
_filters = st.recursive(
    st.builds(lambda p: {"name": p}, _name_pred) | st.sampled_from([{"options.temp": True}, {"options": {}},
                                                                     {"type": "collection"}]),
    lambda inner: st.builds(lambda cs: {"$and": cs}, st.lists(inner, min_size=1, max_size=3))
    | st.builds(lambda cs: {"$or": cs}, st.lists(inner, min_size=1, max_size=3)),
    max_leaves=5,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(flt=_filters)
def test_a_name_filter_lists_what_the_filter_over_all_entries_lists(sets_db, flt):
    everything = _list(sets_db)
    # the reference: the same filter wrapped in a disjunction no name can be pinned through
    via_scan = _names(sets_db, {"$or": [flt, {"$expr": False}]})
    assert _names(sets_db, flt) == via_scan
    assert set(via_scan) <= {e["name"] for e in everything}


# --------------------------------------------------------------------------------------------------
# list_collections_name_only.js / list_collections_no_views.js
# --------------------------------------------------------------------------------------------------


def test_name_only_entries_hold_name_and_type(db):
    db.create_collection("foo")
    (entry,) = db.command("listCollections", 1, nameOnly=True)["cursor"]["firstBatch"]
    assert entry == {"name": "foo", "type": "collection"}
    db.command("create", "bar", viewOn="foo", pipeline=[])
    entries = db.command("listCollections", 1, nameOnly=True)["cursor"]["firstBatch"]
    assert {"name": "bar", "type": "view"} in entries


def test_a_type_filter_lists_collections_or_views(db):
    db.create_collection("foo")
    db.command("create", "bar", viewOn="foo", pipeline=[])

    def pairs(flt=None):
        return sorted((c["name"], c["type"]) for c in _list(db, **({} if flt is None else {"filter": flt})))

    assert pairs() == [("bar", "view"), ("foo", "collection"), ("system.views", "collection")]
    coll_only = {"$or": [{"type": "collection"}, {"type": {"$exists": False}}]}
    assert pairs(coll_only) == [("foo", "collection"), ("system.views", "collection")]
    assert pairs({"type": "view"}) == [("bar", "view")]


def test_an_invalid_view_fails_listing_views_but_not_collections(db):
    db.create_collection("foo")
    db.command("create", "bar", viewOn="foo", pipeline=[])
    db.client.admin.command("applyOps", [{"op": "i", "ns": f"{db.name}.system.views",
                                          "o": {"_id": "invalid_view_def", "invalid": Int64(1000)}}])
    coll_only = {"$or": [{"type": "collection"}, {"type": {"$exists": False}}]}
    assert sorted(c["name"] for c in _list(db, filter=coll_only)) == ["foo", "system.views"]
    with pytest.raises(OperationFailure):
        _list(db)
    with pytest.raises(OperationFailure):
        _list(db, filter={"type": "view"})


# --------------------------------------------------------------------------------------------------
# list_databases.js / drop_database.js / dropdb.js
# --------------------------------------------------------------------------------------------------


@pytest.fixture
def four_dbs(client):
    names = [f"jstest_list_databases_{s}" for s in ("foo", "bar", "baz", "zap")]
    for name in names:
        client[name].coll.insert_one({})
    yield names
    for name in names:
        client.drop_database(name)


def _assert_size_sum(reply) -> None:
    assert sum(d["sizeOnDisk"] for d in reply["databases"]) == reply["totalSize"]


def test_list_databases_filters_by_name(client, four_dbs):
    admin = client.admin
    reply = admin.command("listDatabases", filter={"name": Regex("jstest_list_databases")})
    assert sorted(d["name"] for d in reply["databases"]) == sorted(four_dbs)
    _assert_size_sum(reply)
    reply = admin.command("listDatabases", filter={"name": Regex("^jstest_list_databases_ba")})
    assert len(reply["databases"]) == 2
    _assert_size_sum(reply)
    reply = admin.command("listDatabases", filter={"name": "admin"})
    assert [d["name"] for d in reply["databases"]] == ["admin"]
    _assert_size_sum(reply)
    reply = admin.command("listDatabases", filter={"$expr": {"$eq": ["$name", "jstest_list_databases_zap"]}})
    assert [d["name"] for d in reply["databases"]] == ["jstest_list_databases_zap"]


def test_list_databases_name_only(client, four_dbs):
    reply = client.admin.command("listDatabases", nameOnly=True)
    assert len(reply["databases"]) >= 4
    assert set(reply) <= {"databases", "nameOnly", "ok", "operationTime", "$clusterTime"}
    assert all(list(d) == ["name"] for d in reply["databases"])
    reply = client.admin.command("listDatabases", nameOnly=True, filter={"name": Regex("zap")})
    assert reply["databases"] == [{"name": "jstest_list_databases_zap"}]


@pytest.mark.parametrize("flt", [
    {"$expr": {"$eq": ["$name", "$$unbound"]}},
    {"$expr": {"$abs": "$name"}},
    {"$text": {"$search": "str"}},
    {"$where": "function() { return true; }"},
    {"a": {"$nearSphere": {"$geometry": {"type": "Point", "coordinates": [0, 0]}}}},
])
def test_list_databases_refuses_errors_and_extensions(client, flt):
    with pytest.raises(OperationFailure):
        client.admin.command("listDatabases", filter=flt)


def test_a_dropped_database_is_not_listed(client):
    name = "jstests_dropdb_catalog"

    def listed() -> int:
        return len(client.admin.command("listDatabases", nameOnly=True, filter={"name": name})["databases"])

    try:
        for i in range(3):
            client[name].unsharded.insert_one({"x": i})
            assert listed() == 1
            client.drop_database(name)
            assert listed() == 0
        client.drop_database(name)
        assert listed() == 0
    finally:
        client.drop_database(name)


# --------------------------------------------------------------------------------------------------
# db_stats.js
# --------------------------------------------------------------------------------------------------


def test_db_stats_counts_objects_sizes_and_indexes(db):
    db.testColl.create_index([("x", 1)])
    doc = {"_id": 1, "x": 1}
    db.testColl.insert_one(doc)
    stats = db.command("dbStats", freeStorage=1)
    assert stats["objects"] == 1
    size = len(bson.encode(doc))
    assert stats["avgObjSize"] == size and stats["dataSize"] == size
    assert stats["indexes"] == 2
    for field in ("storageSize", "totalSize", "indexSize", "fsUsedSize", "fsTotalSize"):
        assert field in stats, field
    assert stats["db"] == db.name


def test_db_stats_free_storage_is_reported_only_when_asked(db):
    db.testColl.insert_one({"_id": 1})
    stats = db.command("dbStats", freeStorage=1)
    for field in ("freeStorageSize", "indexFreeStorageSize", "totalFreeStorageSize"):
        assert field in stats, field
    assert stats["freeStorageSize"] + stats["indexFreeStorageSize"] == stats["totalFreeStorageSize"]
    default = db.command("dbStats")
    assert not {"freeStorageSize", "indexFreeStorageSize", "totalFreeStorageSize"} & set(default)


def test_db_stats_counts_views_and_truncates_the_scale(db):
    db.testColl.insert_one({"_id": 1, "x": 1})
    db.command("create", "testView", viewOn="testColl", pipeline=[])
    stats = db.command("dbStats")
    assert (stats["collections"], stats["views"]) == (2, 1)  # testColl + system.views
    stats = db.command("dbStats", scale=1.5)
    assert (stats["collections"], stats["views"], stats["scaleFactor"]) == (2, 1, 1)
    assert db.command("dbStats", scale=2 ** 50)["scaleFactor"] == 2 ** 50


@pytest.mark.parametrize("scale", [0, -1, 2 ** 50 + 1])
def test_db_stats_refuses_a_scale_out_of_range(db, scale):
    db.testColl.insert_one({})
    assert fails(lambda: db.command("dbStats", scale=scale)).code == BAD_VALUE


def test_db_stats_of_missing_and_empty_databases_have_the_same_fields(db):
    missing = db.command("dbStats", freeStorage=1)
    db.create_collection("test_empty_collection")
    empty = db.command("dbStats", freeStorage=1)
    assert sorted(missing) == sorted(empty)


# --------------------------------------------------------------------------------------------------
# list_indexes_correctness.js
# --------------------------------------------------------------------------------------------------


def _indexes(coll) -> list[dict]:
    return list(coll.database.command("listIndexes", coll.name)["cursor"]["firstBatch"])


def _by_key(coll, key: dict) -> dict | None:
    return next((i for i in _indexes(coll) if dict(i["key"]) == key), None)


def test_list_indexes_follows_create_and_drop_index(db):
    coll = db.collTest
    coll.create_index([("a", 1)])
    assert [dict(i["key"]) for i in _indexes(coll)] == [{"_id": 1}, {"a": 1}]
    coll.drop_index([("a", 1)])
    assert [dict(i["key"]) for i in _indexes(coll)] == [{"_id": 1}]


def test_list_indexes_follows_coll_mod(db):
    coll = db.collTest
    coll.create_index([("b", 1)])
    assert "hidden" not in _by_key(coll, {"b": 1})
    db.command("collMod", coll.name, index={"keyPattern": {"b": 1}, "hidden": True})
    assert _by_key(coll, {"b": 1})["hidden"] is True
    db.command("collMod", coll.name, index={"keyPattern": {"b": 1}, "hidden": False})
    assert "hidden" not in _by_key(coll, {"b": 1})
    coll.create_index([("c", 1)], expireAfterSeconds=3600)
    assert _by_key(coll, {"c": 1})["expireAfterSeconds"] == 3600
    db.command("collMod", coll.name, index={"keyPattern": {"c": 1}, "expireAfterSeconds": 7200})
    assert _by_key(coll, {"c": 1})["expireAfterSeconds"] == 7200


def test_list_indexes_follows_coll_mod_unique_conversion(db):
    coll = db.collTest
    coll.create_index([("e", 1)])
    db.command("collMod", coll.name, index={"keyPattern": {"e": 1}, "prepareUnique": True})
    index = _by_key(coll, {"e": 1})
    assert index.get("prepareUnique") is True and "unique" not in index
    db.command("collMod", coll.name, index={"keyPattern": {"e": 1}, "unique": True})
    index = _by_key(coll, {"e": 1})
    assert index.get("unique") is True and "prepareUnique" not in index


def test_list_indexes_after_create_collection_drop_and_drop_database(db):
    db.create_collection("collTest")
    assert [dict(i["key"]) for i in _indexes(db.collTest)] == [{"_id": 1}]
    db.collTest.create_index([("d", 1)])
    db.collTest.drop()
    assert fails(lambda: _indexes(db.collTest)).code == NAMESPACE_NOT_FOUND
    db.collTest.create_index([("e", 1)])
    db.client.drop_database(db.name)
    assert fails(lambda: _indexes(db.collTest)).code == NAMESPACE_NOT_FOUND


def test_list_indexes_after_rename_keeps_index_options(db):
    coll = db.collTest
    coll.create_index([("i", 1)])
    coll.create_index([("j", 1)], hidden=True)
    coll.create_index([("k", 1)], unique=True)
    db.client.admin.command("renameCollection", f"{db.name}.collTest", to=f"{db.name}.collTarget")
    target = db.collTarget
    assert [dict(i["key"]) for i in _indexes(target)] == [{"_id": 1}, {"i": 1}, {"j": 1}, {"k": 1}]
    assert _by_key(target, {"j": 1})["hidden"] is True and _by_key(target, {"k": 1})["unique"] is True
    assert fails(lambda: _indexes(coll)).code == NAMESPACE_NOT_FOUND


def test_rename_with_drop_target_replaces_the_target_indexes(db):
    coll = db.collTest
    coll.create_index([("x", 1)])
    coll.create_index([("y", 1)], unique=True)
    db.create_collection("collTarget")
    db.collTarget.create_index([("z", 1)])
    db.collTarget.create_index([("w", 1)], sparse=True)
    db.client.admin.command("renameCollection", f"{db.name}.collTest", to=f"{db.name}.collTarget",
                            dropTarget=True)
    target = db.collTarget
    assert [dict(i["key"]) for i in _indexes(target)] == [{"_id": 1}, {"x": 1}, {"y": 1}]
    assert _by_key(target, {"y": 1})["unique"] is True
    assert fails(lambda: _indexes(coll)).code == NAMESPACE_NOT_FOUND


# --------------------------------------------------------------------------------------------------
# create_collection.js / create_collection_fail_cleanup.js
# --------------------------------------------------------------------------------------------------


def test_create_refuses_an_unknown_option(db):
    assert fails(lambda: db.command("create", "create_collection", unknown=1)).code == UNKNOWN_FIELD


@pytest.mark.parametrize("name", ["\x00ab", "a\x00b", "ab\x00"])
def test_create_refuses_a_nul_in_the_name(db, name):
    assert fails(lambda: db.command("create", name)).code == INVALID_NAMESPACE


def test_create_accepts_a_namespace_up_to_255_bytes(db):
    name = "a" * (255 - len(db.name) - 1)
    db.command("create", name)
    assert name in _names(db)
    assert fails(lambda: db.command("create", name + "a")).code == INVALID_NAMESPACE
    assert fails(lambda: db.command("create", "a" * 255)).code == INVALID_NAMESPACE


@pytest.mark.parametrize("id_index, code", [
    (1, TYPE_MISMATCH),
    ({}, FAILED_TO_PARSE),
    ({"key": {"a": 1}, "name": "a_1"}, BAD_VALUE),
    ({"key": {"a": 1}, "name": "_id_"}, BAD_VALUE),
    ({"key": {"_id": 1}, "name": "_id_", "sparse": True}, INVALID_INDEX_SPEC_OPTION),
    ({"key": {"_id": 1}, "name": "_id_", "collation": {"locale": "en_US"}}, BAD_VALUE),
])
def test_create_refuses_an_invalid_id_index(db, id_index, code):
    assert fails(lambda: db.command("create", "create_collection", idIndex=id_index)).code == code


def test_id_index_with_a_view_is_refused(db):
    db.create_collection("create_collection")
    err = fails(lambda: db.command("create", "create_view", viewOn="create_collection", idIndex={"key": {"_id": 1}, "name": "_id_"}))
    assert err.code == INVALID_OPTIONS


@pytest.mark.parametrize("collation", [{"locale": "en_US"}, {"locale": "simple"}])
def test_id_index_collation_must_match_the_collection_default(db, collation):
    err = fails(lambda: db.command("create", "create_collection", collation={"locale": "fr_CA"}, idIndex={"key": {"_id": 1}, "name": "_id_", "collation": collation}))
    assert err.code == BAD_VALUE


def _id_index(db) -> dict:
    return next(i for i in _indexes(db["create_collection"]) if i["name"] == "_id_")


@pytest.mark.parametrize("id_index, version", [
    ({"key": {"_id": 1}, "name": "a_1"}, 2),
    ({"key": {"_id": 1}, "name": "_id_"}, 2),
    ({"key": {"_id": 1}, "name": "_id_", "v": 1}, 1),
    ({"key": {"_id": 1}, "name": "_id_", "v": 2}, 2),
])
def test_id_index_is_named_id_and_keeps_its_version(db, id_index, version):
    db.command("create", "create_collection", idIndex=id_index)
    index = _id_index(db)
    assert index["v"] == version


@pytest.mark.parametrize("id_collation", [{"locale": "en_US"}, None])
def test_id_index_takes_the_collection_collation(db, id_collation):
    id_index: dict = {"key": {"_id": 1}, "name": "_id_"}
    if id_collation is not None:
        id_index["collation"] = id_collation
    db.command("create", "create_collection", collation={"locale": "en_US", "strength": 3}, idIndex=id_index)
    assert _id_index(db)["collation"]["locale"] == "en_US"


@pytest.mark.parametrize("options", [
    {"capped": True},
    {"capped": True, "max": 10},
    {"size": 256},
    {"capped": False, "size": 256},
])
def test_capped_size_and_max_must_go_together(db, options):
    assert fails(lambda: db.command("create", "c", **options)).code == INVALID_OPTIONS


@pytest.mark.parametrize("options", [{}, {"capped": False}, {"capped": True, "size": 256},
                                     {"capped": True, "max": 10, "size": 256}])
def test_capped_size_and_max_accepted_forms(db, options):
    db.command("create", "c", **options)


def test_create_again_succeeds_only_with_the_same_options(db):
    db.command("create", "create_collection")
    db.command("create", "create_collection")
    db.drop_collection("create_collection")
    db.command("create", "create_collection", collation={"locale": "fr"})
    db.command("create", "create_collection", collation={"locale": "fr"})
    err = fails(lambda: db.command("create", "create_collection", collation={"locale": "uk"}))
    assert err.code == NAMESPACE_EXISTS


def test_a_failed_create_leaves_no_collection(db):
    with pytest.raises(OperationFailure):
        db.command("create", "broken", capped=True, size=-1)
    with pytest.raises(OperationFailure):
        db.command("create", "invalid_collation_collection", collation={"locale": "invalid"})
    db.command("create", "legal_collation_collection", collation={"locale": "en_US"})
    assert _names(db) == ["legal_collation_collection"]


# --------------------------------------------------------------------------------------------------
# drop_collection.js / drop3.js / collection_uuid_drop.js
# --------------------------------------------------------------------------------------------------


def _assert_dropped(coll) -> None:
    assert coll.name not in _names(coll.database)
    assert coll.count_documents({}) == 0
    assert fails(lambda: _indexes(coll)).code == NAMESPACE_NOT_FOUND


def test_drop_a_missing_collection_succeeds(db):
    db.command("drop", "drop_collection_coll")
    _assert_dropped(db.drop_collection_coll)


def test_drop_is_idempotent_and_takes_the_indexes(db):
    coll = db.drop_collection_coll
    coll.insert_one({"x": 1})
    assert len(_indexes(coll)) == 1
    reply = db.command("drop", coll.name)
    assert reply["nIndexesWas"] == 1 and reply["ns"] == coll.full_name
    _assert_dropped(coll)
    db.command("drop", coll.name)
    _assert_dropped(coll)
    coll.insert_one({"x": 1})
    coll.create_index([("a", 1)])
    db.command("dropIndexes", coll.name, index="*")
    assert len(_indexes(coll)) == 1
    db.command("drop", coll.name)
    _assert_dropped(coll)


def test_drop_kills_the_collections_cursors_only(db):
    t, sub = db.jstests_drop3, db["jstests_drop3.sub"]
    t.insert_many([{} for _ in range(10)])
    sub.insert_many([{} for _ in range(10)])
    cursor = db.command("find", t.name, batchSize=2)["cursor"]
    sub_cursor = db.command("find", sub.name, batchSize=2)["cursor"]
    t.drop()
    err = fails(lambda: db.command("getMore", cursor["id"], collection=t.name))
    # mongod 7.0: the cursor's plan fails to restore (RequiresCollectionStage), 175 QueryPlanKilled
    assert err.code == 175 and err.details["errmsg"].startswith("collection dropped. UUID ")
    more = db.command("getMore", sub_cursor["id"], collection=sub.name)
    assert len(more["cursor"]["nextBatch"]) == 8


def _uuid_of(db, name: str) -> Binary:
    """The collection's UUID as listCollections shows it (BSON binary subtype 4)."""
    return next(c for c in _list(db) if c["name"] == name)["info"]["uuid"]


def _std(u: uuid.UUID | Binary) -> Binary:
    return u if isinstance(u, Binary) else Binary.from_uuid(u, UuidRepresentation.STANDARD)


def _mismatch(err: OperationFailure) -> tuple:
    d = err.details or {}
    return d.get("db"), d.get("collectionUUID"), d.get("expectedCollection"), d.get("actualCollection")


def test_drop_checks_the_collection_uuid(db, client):
    db.coll.insert_one({"_id": 0})
    uid = _uuid_of(db, "coll")
    other = _std(uuid.uuid4())
    err = fails(lambda: db.command("drop", "coll", collectionUUID=other))
    assert err.code == COLLECTION_UUID_MISMATCH
    assert _mismatch(err) == (db.name, other, "coll", None)
    db.coll_2.insert_one({"_id": 1})
    err = fails(lambda: db.command("drop", "coll_2", collectionUUID=_std(uid)))
    assert _mismatch(err) == (db.name, uid, "coll_2", "coll")
    db.command("drop", "coll_2")
    err = fails(lambda: db.command("drop", "coll_2", collectionUUID=_std(uid)))
    assert _mismatch(err) == (db.name, uid, "coll_2", "coll")
    db.command("create", "view", viewOn="coll", pipeline=[])
    err = fails(lambda: db.command("drop", "view", collectionUUID=_std(uid)))
    assert _mismatch(err) == (db.name, uid, "view", "coll")
    missing = client[db.name + "_nonexistent"]
    err = fails(lambda: missing.command("drop", "nonexistent", collectionUUID=_std(uid)))
    assert _mismatch(err) == (missing.name, uid, "nonexistent", None)
    db.command("drop", "coll", collectionUUID=_std(uid))
    assert "coll" not in _names(db)


# --------------------------------------------------------------------------------------------------
# rename_collection*.js
# --------------------------------------------------------------------------------------------------


def _rename(db, src: str, dst: str, **options):
    return db.client.admin.command("renameCollection", f"{db.name}.{src}", to=f"{db.name}.{dst}", **options)


def test_rename_moves_documents_and_indexes(db):
    db.src.insert_many([{"a": 1}, {"a": 2}])
    db.src.create_indexes([IndexModel([("a", 1)]), IndexModel([("b", 1)])])
    db.existing.insert_one({"a": 100})
    assert fails(lambda: _rename(db, "src", "existing")).code == NAMESPACE_EXISTS
    before = len(_indexes(db.src))
    _rename(db, "src", "dst")
    assert db.src.count_documents({}) == 0 and db.dst.count_documents({}) == 2
    assert "dst" in _names(db) and "src" not in _names(db)
    assert len(_indexes(db.dst)) == before == 3


def test_rename_a_missing_collection_fails(db):
    assert fails(lambda: _rename(db, "src", "dst")).code == NAMESPACE_NOT_FOUND


def test_rename_over_an_existing_target_needs_drop_target(db):
    db.src.insert_one({"x": 1})
    db.dst.insert_one({"x": 2})
    assert fails(lambda: _rename(db, "src", "dst")).code == NAMESPACE_EXISTS
    assert db.src.count_documents({"x": 1}) == 1 and db.dst.count_documents({"x": 2}) == 1
    _rename(db, "src", "dst", dropTarget=True)
    assert db.src.count_documents({}) == 0
    assert list(db.dst.find({}, {"_id": 0})) == [{"x": 1}]


def test_rename_to_itself_is_illegal_and_keeps_the_data(db):
    db.sameColl.insert_one({"a": 1})
    assert fails(lambda: _rename(db, "sameColl", "sameColl", dropTarget=True)).code == ILLEGAL_OPERATION
    assert db.sameColl.count_documents({}) == 1


# system.users is left out: refusing it is 7.2 (the jstest requires_fcv_72); 7.0 renames it
@pytest.mark.parametrize("src, dst", [("rename8", "system.foo"), ("system.foo", "rename8")])
def test_rename_to_or_from_a_system_collection_fails(db, src, dst):
    db.rename8.insert_one({})
    assert fails(lambda: _rename(db, src, dst)).code == ILLEGAL_OPERATION
    assert "rename8" in _names(db)


def test_rename_to_a_long_name_keeps_the_indexes(db):
    db.renameSRC.create_index([("name", 1), ("date", 1), ("time", 1), ("renameCollection", 1), ("mongodb", 1),
                               ("testing", 1), ("data", 1)])
    long_name = "a" * (255 - len(db.name) - 1)
    _rename(db, "renameSRC", long_name)
    assert fails(lambda: _indexes(db.renameSRC)).code == NAMESPACE_NOT_FOUND
    assert len(_indexes(db[long_name])) == 2
    db.create_collection("renameSRC")
    assert fails(lambda: _rename(db, "renameSRC", "a" * 255)).code in (INVALID_NAMESPACE, ILLEGAL_OPERATION)


def test_rename_a_capped_collection_stays_capped(db):
    db.create_collection("jstests_rename_a", capped=True, size=10000)
    db.jstests_rename_a.insert_many([{"i": i + 0.1} for i in range(10)])
    _rename(db, "jstests_rename_a", "jstests_rename_b")
    assert db.jstests_rename_b.count_documents({"i": 9.1}) == 1
    db.jstests_rename_b.insert_many([{"i": i + 0.1} for i in range(10, 1000)])
    assert db.jstests_rename_b.count_documents({"i": 999.1}) == 1
    assert db.jstests_rename_b.count_documents({"i": 9.1}) == 0
    assert "jstests_rename_b" in _names(db) and "jstests_rename_a" not in _names(db)
    assert db.command("collStats", "jstests_rename_b")["capped"] is True


@pytest.mark.parametrize("to", [".foo", "jstests_rename_$cmd"])
def test_rename_to_an_invalid_name_fails(db, to):
    db.create_collection("jstests_rename_f")
    assert fails(lambda: _rename(db, "jstests_rename_f", to)).code in (INVALID_NAMESPACE, ILLEGAL_OPERATION)


def test_rename_a_non_string_namespace_is_a_type_mismatch(db):
    err = fails(lambda: db.client.admin.command("renameCollection", {"fail": "fail fail fail"}, to=f"{db.name}.x"))
    assert err.code == TYPE_MISMATCH


def test_rename_and_rename_back_with_drop_target(db):
    db.jstests_rename_d.insert_one({"a": 222})
    _rename(db, "jstests_rename_d", "jstests_rename_e")
    assert db.jstests_rename_e.find_one()["a"] == 222
    _rename(db, "jstests_rename_e", "jstests_rename_d", dropTarget=True)
    assert "jstests_rename_e" not in _names(db) and db.jstests_rename_d.find_one()["a"] == 222


@pytest.fixture
def other_db(client, db):
    other = client[db.name + "_b"]
    yield other
    client.drop_database(other.name)


def test_rename_across_databases(db, other_db):
    db.rename_different_db.insert_many([{"a": 1}, {"a": 2}, {"a": 3}])
    db.rename_different_db.create_index([("a", 1)])
    db.rename_different_db.create_index([("b", 1)])
    db.client.admin.command("renameCollection", f"{db.name}.rename_different_db",
                            to=f"{other_db.name}.rename_different_db")
    assert db.rename_different_db.count_documents({}) == 0
    assert "rename_different_db" not in _names(db)
    assert other_db.rename_different_db.count_documents({}) == 3
    assert len(_indexes(other_db.rename_different_db)) == 3


def test_rename_across_databases_needs_drop_target(db, other_db):
    db.rename_different_db.insert_one({})
    other_db.rename_different_db.insert_one({})
    args = ("renameCollection", f"{db.name}.rename_different_db")
    assert fails(lambda: db.client.admin.command(*args, to=f"{other_db.name}.rename_different_db")).code == NAMESPACE_EXISTS
    db.client.admin.command(*args, to=f"{other_db.name}.rename_different_db", dropTarget=True)


def test_rename_a_capped_collection_across_databases(db, other_db):
    db.create_collection("rename_capped", capped=True, size=10000)
    db.rename_capped.insert_many([{"a": 1}, {"a": 2}, {"a": 3}])
    max_size = db.command("collStats", "rename_capped")["maxSize"]
    db.client.admin.command("renameCollection", f"{db.name}.rename_capped", to=f"{other_db.name}.rename_capped")
    assert other_db.rename_capped.count_documents({}) == 3
    stats = other_db.command("collStats", "rename_capped")
    assert stats["capped"] is True and stats["maxSize"] == max_size


def _istemp(db, name: str) -> bool:
    (entry,) = _list(db, filter={"name": name})
    return bool(entry["options"].get("temp"))


def test_rename_drops_temp_unless_stay_temp(db):
    _create_temp(db, "orig")
    assert _istemp(db, "orig")
    _rename(db, "orig", "dest")
    assert not _istemp(db, "dest")
    db.drop_collection("dest")
    _create_temp(db, "orig")
    _rename(db, "orig", "dest", stayTemp=True)
    assert _istemp(db, "dest")


@pytest.fixture
def views_db(db):
    for name in ("c0", "c1"):
        db[name].insert_one({"_id": 1})
    db.command("create", "v0", viewOn="c0", pipeline=[])
    db.command("create", "v1", viewOn="c1", pipeline=[])
    return db


@pytest.mark.parametrize("dst", ["c1", "v1"])
@pytest.mark.parametrize("drop_target", [False, True])
def test_rename_a_view_is_not_supported(views_db, dst, drop_target):
    assert fails(lambda: _rename(views_db, "v0", dst, dropTarget=drop_target)).code == COMMAND_NOT_SUPPORTED_ON_VIEW


@pytest.mark.parametrize("drop_target", [False, True])
def test_rename_onto_a_view_is_namespace_exists(views_db, drop_target):
    assert fails(lambda: _rename(views_db, "c0", "v1", dropTarget=drop_target)).code == NAMESPACE_EXISTS


# collection_uuid_rename_collection.js


@pytest.fixture
def uuid_colls(db):
    def reset():
        for name in ("coll", "coll_2", "coll_3"):
            db.drop_collection(name)
        db.coll.insert_one({"_id": 0})
        db.coll_2.insert_one({"_id": 1})
    reset()
    return reset


def test_rename_runs_with_the_right_uuids(db, uuid_colls):
    _rename(db, "coll", "coll_3", dropTarget=True, collectionUUID=_std(_uuid_of(db, "coll")))
    uuid_colls()
    _rename(db, "coll_2", "coll", dropTarget=_std(_uuid_of(db, "coll")))
    assert "coll_2" not in _names(db)
    uuid_colls()
    _rename(db, "coll_2", "coll", dropTarget=_std(_uuid_of(db, "coll")),
            collectionUUID=_std(_uuid_of(db, "coll_2")))
    assert "coll_2" not in _names(db)


def test_rename_reports_a_uuid_mismatch(db, uuid_colls):
    other = _std(uuid.uuid4())
    uid, uid2 = _uuid_of(db, "coll"), _uuid_of(db, "coll_2")
    cases = [
        ({"src": "coll", "dst": "coll_3", "dropTarget": True, "collectionUUID": other}, (other, "coll", None)),
        ({"src": "coll_2", "dst": "coll", "dropTarget": other}, (other, "coll", None)),
        ({"src": "coll_2", "dst": "coll_3", "dropTarget": True, "collectionUUID": uid}, (uid, "coll_2", "coll")),
        ({"src": "coll", "dst": "coll_2", "dropTarget": uid}, (uid, "coll_2", "coll")),
        ({"src": "coll_2", "dst": "coll_3", "dropTarget": uid2, "collectionUUID": uid}, (uid, "coll_2", "coll")),
    ]
    for case, expected in cases:
        options = {k: v for k, v in case.items() if k not in ("src", "dst")}
        err = fails(lambda case=case, options=options: _rename(db, case["src"], case["dst"], **options))
        assert err.code == COLLECTION_UUID_MISMATCH, case
        assert _mismatch(err) == (db.name, *expected), case
    db.command("drop", "coll_2")
    err = fails(lambda: _rename(db, "coll_2", "coll_3", dropTarget=True, collectionUUID=_std(uid)))
    assert _mismatch(err) == (db.name, uid, "coll_2", "coll")
    assert "coll_2" not in _names(db)


def test_rename_uuid_mismatch_in_another_database_names_no_collection(db, uuid_colls, other_db):
    uid, uid2 = _uuid_of(db, "coll"), _uuid_of(db, "coll_2")
    other_db.coll_4.insert_one({"_id": 2})
    src, dst = f"{other_db.name}.coll_4", f"{other_db.name}.coll_5"
    admin = db.client.admin
    err = fails(lambda: admin.command("renameCollection", src, to=dst, dropTarget=True, collectionUUID=_std(uid)))
    assert _mismatch(err) == (other_db.name, uid, "coll_4", None)
    err = fails(lambda: admin.command("renameCollection", src, to=dst, dropTarget=_std(uid)))
    assert _mismatch(err) == (other_db.name, uid, "coll_5", None)
    err = fails(lambda: admin.command("renameCollection", src, to=dst, dropTarget=_std(uid2), collectionUUID=_std(uid)))
    assert _mismatch(err) == (other_db.name, uid, "coll_4", None)
    missing = db.name + "_nonexistent"
    err = fails(lambda: admin.command("renameCollection", f"{missing}.nonexistent", to=f"{missing}.nonexistent_2", dropTarget=True, collectionUUID=_std(uid)))
    assert _mismatch(err) == (missing, uid, "nonexistent", None)


def test_rename_across_databases_refuses_a_collection_uuid(db, uuid_colls, other_db):
    uid = _uuid_of(db, "coll")
    other_db.coll.insert_one({"_id": 3})
    admin = db.client.admin
    for options in ({"dropTarget": True, "collectionUUID": _std(uid)}, {"dropTarget": _std(uid)}):
        err = fails(lambda options=options: admin.command("renameCollection", f"{db.name}.coll",
                                                           to=f"{other_db.name}.coll", **options))
        assert err.code == INVALID_OPTIONS


def test_error_messages_carry_no_python_text(db):
    """Every refusal above answers with a MongoDB code name, never 1 InternalError."""
    for call in (
        lambda: db.command("listCollections", 1, cursor={"batchSize": "x"}),
        lambda: db.command("dbStats", scale="x"),
        lambda: db.client.admin.command("renameCollection", f"{db.name}.a", to=5),
    ):
        err = fails(call)
        assert err.code != 1 and re.match(r"^[A-Za-z]+$", err.details.get("codeName", ""))


# --------------------------------------------------------------------------------------------------
# list_indexes_invalidation.js / list_namespaces_invalidation.js
# --------------------------------------------------------------------------------------------------


def _drain(db, reply, collection: str) -> int:
    cursor_id, n = reply["cursor"]["id"], 0
    while cursor_id:
        more = db.command("getMore", cursor_id, collection=collection)
        n += len(more["cursor"]["nextBatch"])
        cursor_id = more["cursor"]["id"]
    return n


@pytest.mark.parametrize("action", ["drop", "rename"])
def test_a_list_indexes_cursor_outlives_a_drop_or_rename(db, action):
    coll = db.system_indexes_invalidations
    coll.create_indexes([IndexModel([(k, 1)]) for k in "abc"])
    reply = db.command("listIndexes", coll.name, cursor={"batchSize": 2})
    assert reply["cursor"]["id"] != 0 and len(reply["cursor"]["firstBatch"]) == 2
    if action == "rename":
        _rename(db, coll.name, "renamed_collection")
    else:
        coll.drop()
    assert _drain(db, reply, coll.name) > 0


@pytest.mark.parametrize("batch_size", [2, 3, 4, 5, 6])
@pytest.mark.parametrize("action", ["drop", "rename", "collMod"])
def test_a_list_collections_cursor_outlives_catalog_changes(db, action, batch_size):
    for i in range(3):
        db.create_collection(f"coll{i}")
    reply = db.command("listCollections", 1, cursor={"batchSize": batch_size})
    first = len(reply["cursor"]["firstBatch"])
    assert first > 0
    if action == "rename":
        _rename(db, "coll1", "coll1" + "lkdsahflaksjdhfsdkljhfskladhfkahfsakfla" * 2)
    elif action == "drop":
        db.drop_collection("coll1")
    else:
        db.command("collMod", "coll1", validator={"$or": [{"phone": {"$type": "string"}},
                                                          {"email": {"$regex": "@mongodb\\.com$"}}]})
    # the cursor is a snapshot: its rest comes back whatever happened since (3 entries in all)
    assert first + _drain(db, reply, "$cmd.listCollections") == 3


# --------------------------------------------------------------------------------------------------
# list_collections_create_roundtrip.js (8.x-era file; the invariant holds for 7.0's options too)
# --------------------------------------------------------------------------------------------------


_ROUNDTRIP_CASES = {
    "plain": {},
    "capped": {"capped": True, "size": 1024 * 1024, "max": 100},
    "validator": {"validator": {"$jsonSchema": {"required": ["a"], "properties": {"a": {"bsonType": "int"}}}},
                  "validationLevel": "moderate", "validationAction": "warn"},
    "collation": {"collation": {"locale": "en_US", "strength": 2}},
    "clustered": {"clusteredIndex": {"key": {"_id": 1}, "unique": True}},
    "change_stream_pre_and_post_images": {"changeStreamPreAndPostImages": {"enabled": True}},
    "timeseries_basic": {"timeseries": {"timeField": "ts", "metaField": "meta", "granularity": "seconds",
                                        "bucketMaxSpanSeconds": 3600}},
    "timeseries_custom_bucketing": {"timeseries": {"timeField": "ts", "bucketMaxSpanSeconds": 100,
                                                   "bucketRoundingSeconds": 100}},
    "timeseries_expire_after_seconds": {"timeseries": {"timeField": "ts"}, "expireAfterSeconds": 60},
}


@pytest.mark.parametrize("name", list(_ROUNDTRIP_CASES))
def test_listed_options_recreate_the_same_collection(db, name):
    db.command("create", name, **_ROUNDTRIP_CASES[name])
    (entry,) = _list(db, filter={"name": name})
    for _ in range(2):
        db.command(bson.SON([("create", name), *entry["options"].items()]))
        (again,) = _list(db, filter={"name": name})
        assert (again["type"], again["options"]) == (entry["type"], entry["options"])


# --------------------------------------------------------------------------------------------------
# list_collections_correctness.js (8.x-era file; each check holds for 7.0)
# --------------------------------------------------------------------------------------------------


def _entry(db, name: str) -> dict | None:
    found = _list(db, filter={"name": name})
    assert len(found) <= 1
    return found[0] if found else None


def test_list_collections_shows_create_options(db):
    validator = {"$jsonSchema": {"required": ["name"], "properties": {"name": {"bsonType": "string"}}}}
    db.create_collection("collTest", validator=validator, validationLevel="moderate", validationAction="warn")
    options = _entry(db, "collTest")["options"]
    assert (options["validator"], options["validationLevel"], options["validationAction"]) == (
        validator, "moderate", "warn")
    db.create_collection("capped", capped=True, size=1024 * 1024, max=100)
    options = _entry(db, "capped")["options"]
    assert (options["capped"], options["size"], options["max"]) == (True, 1024 * 1024, 100)


def test_list_collections_follows_coll_mod_and_drop(db):
    first = {"$jsonSchema": {"required": ["x"], "properties": {"x": {"bsonType": "int"}}}}
    db.create_collection("collTest", validator=first, validationLevel="strict", validationAction="error")
    assert _entry(db, "collTest")["options"]["validator"] == first
    second = {"$jsonSchema": {"required": ["y"], "properties": {"y": {"bsonType": "string"}}}}
    db.command("collMod", "collTest", validator=second)
    db.command("collMod", "collTest", validationLevel="moderate")
    db.command("collMod", "collTest", validationAction="warn")
    options = _entry(db, "collTest")["options"]
    assert (options["validator"], options["validationLevel"], options["validationAction"]) == (
        second, "moderate", "warn")
    db.drop_collection("collTest")
    assert _entry(db, "collTest") is None


def test_rename_keeps_the_options_and_drop_target_replaces_the_target(db):
    validator = {"$jsonSchema": {"required": ["field"], "properties": {"field": {"bsonType": "int"}}}}
    db.create_collection("collTest")
    db.command("collMod", "collTest", validator=validator, validationLevel="strict")
    target = {"$jsonSchema": {"required": ["target"]}}
    db.create_collection("collRenamed", validator=target)
    _rename(db, "collTest", "collRenamed", dropTarget=True)
    assert _entry(db, "collTest") is None
    options = _entry(db, "collRenamed")["options"]
    assert (options["validator"], options["validationLevel"]) == (validator, "strict")


def test_drop_database_lists_nothing(db):
    db.create_collection("a")
    db.command("create", "v", viewOn="a", pipeline=[])
    db.client.drop_database(db.name)
    assert _list(db) == []
