"""MongoDB's own time-series jstests not ported elsewhere (sweep of 2026-12-06), ported to pymongo against a
real Tidemark server.

Sources (``mongodb/mongo``; the 7.0-era file at the root of ``jstests/core/timeseries/`` where one is
stored, else ``ddl/<name>`` or ``query/<name>``):

- timeseries_create.js (root; idempotent re-create is asserted there only from 7.1, SERVER-80362, and
  the granularity + preset ``bucketRoundingSeconds`` refusal is post-7.0, so neither is asserted here),
- timeseries_create_collection.js (root, 7.0; plus the ddl/ version's cases 7.0 shares),
- timeseries_create_invalid_view.js (root, requires_fcv_61: no view on ``system.buckets.*``),
- rename_timeseries_legacy.js (ddl/; the viewful behaviour) and timeseries_bucket_rename.js (root),
- timeseries_compact.js (root/ddl; the buckets half only),
- timeseries_index_build_failure.js (root; the raw index is built on ``system.buckets.<c>``),
- timeseries_list_catalog.js (ddl/; its viewful branch),
- timeseries_block_nary_arithmetic_order.js (query/; results only, not the SBE block-processing explain),
- timeseries_bucket_spanning_epoch.js, timeseries_large_measurements.js, timeseries_expire.js,
  timeseries_list_collections_invalid_view.js, timeseries_list_collections_missing_view.js and
  timeseries_out.js (root).

Not ported (one line each in the sweep report): explain-shape files, fcv 7.1+/8.x and feature-flag files,
``rawData`` / viewless files, and files needing internals Tidemark does not have
(``$_internalBucketGeoWithin`` partial filters, ``originalSpec``, SBE engine switches, the profiler).
"""

from __future__ import annotations

import datetime as dt
import random
import time
import uuid

import pytest
from bson import ObjectId
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from harness.jstests import command_fails, fails, malformed_buckets
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands(
    "create", "listCollections", "drop", "insert", "find", "aggregate", "renameCollection", "compact",
    "createIndexes", "listIndexes", "dropIndexes",
)

TYPE_MISMATCH, INVALID_OPTIONS, NAMESPACE_EXISTS, INVALID_NAMESPACE = 14, 72, 48, 73
ILLEGAL_OPERATION, ON_VIEW, VALIDATION_FAILED, IDL_UNKNOWN_FIELD = 20, 166, 121, 40415
INTERRUPTED = 11601


def _entries(db):
    return {e["name"]: e for e in db.command("listCollections", 1)["cursor"]["firstBatch"]}


def _names(db):
    return set(db.list_collection_names())


# --------------------------------------------------------------------------------------------------
# timeseries_create.js


VALID_TS_OPTIONS = [
    {"timeField": "time"},
    {"timeField": "time", "metaField": "meta"},
    {"timeField": "time", "granularity": "minutes"},
    {"timeField": "time", "metaField": "meta", "granularity": "minutes"},
    {"timeField": "time", "metaField": "meta", "granularity": "seconds", "bucketMaxSpanSeconds": 3600},
    {"timeField": "time", "metaField": "meta", "granularity": "minutes", "bucketMaxSpanSeconds": 86400},
    {"timeField": "time", "metaField": "meta", "granularity": "hours", "bucketMaxSpanSeconds": 2592000},
    {"timeField": "time", "metaField": "meta", "granularity": "hours"},
]

# (create options besides timeseries, whether they affect storage: then a plain time-series collection of
# the same name makes the create NamespaceExists)
COMPATIBLE_CREATE_OPTIONS = [
    ({"expireAfterSeconds": Int64(100)}, True),
    ({"storageEngine": {}}, False),
    ({"storageEngine": {"wiredTiger": {}}}, True),
    ({"indexOptionDefaults": {}}, False),
    ({"indexOptionDefaults": {"storageEngine": {"wiredTiger": {}}}}, True),
    ({"collation": {"locale": "ja"}}, True),
    ({"writeConcern": {}}, False),
    ({"comment": ""}, False),
]


def _check_created(db, name, create_options):
    listed = _entries(db)
    assert listed[name]["type"] == "timeseries", listed
    buckets = listed[f"system.buckets.{name}"]
    assert buckets["type"] == "collection", buckets
    assert buckets["options"]["clusteredIndex"], buckets
    if create_options.get("expireAfterSeconds"):
        assert buckets["options"]["expireAfterSeconds"] == create_options["expireAfterSeconds"], buckets


def _gone(db, name):
    names = _names(db)
    assert name not in names and f"system.buckets.{name}" not in names, names


@pytest.mark.parametrize("options", VALID_TS_OPTIONS, ids=range(len(VALID_TS_OPTIONS)))
def test_create_accepts_valid_timeseries_options(db, options):
    """timeseries_create.js, testValidTimeseriesOptions: the create works; listCollections shows the
    view as ``timeseries`` and ``system.buckets.<c>`` as a clustered ``collection``; after a drop, with
    options beyond the time field, a plain time-series collection of that name makes the create
    NamespaceExists (48)."""
    assert db.command("create", "c", timeseries=options)["ok"] == 1
    _check_created(db, "c", {})
    db.command("drop", "c")
    if len(options) > 1:
        db.command("create", "c", timeseries={"timeField": "time"})
        assert command_fails(db, {"create": "c", "timeseries": options}, NAMESPACE_EXISTS)
        db.command("drop", "c")
    _gone(db, "c")


@pytest.mark.parametrize(("create_options", "affects_storage"), COMPATIBLE_CREATE_OPTIONS,
                         ids=[str(o) for o, _ in COMPATIBLE_CREATE_OPTIONS])
def test_create_accepts_compatible_create_options(db, create_options, affects_storage):
    """timeseries_create.js, testCompatibleCreateOptions: expireAfterSeconds (echoed on the buckets
    collection), storageEngine, indexOptionDefaults, collation, writeConcern and comment go with
    ``timeseries``; the options that affect storage make a create over a plain time-series collection of
    the same name NamespaceExists."""
    command = {"create": "c", "timeseries": {"timeField": "time"}} | create_options
    assert db.command(command)["ok"] == 1
    _check_created(db, "c", create_options)
    db.command("drop", "c")
    if affects_storage:
        db.command("create", "c", timeseries={"timeField": "time"})
        assert command_fails(db, command, NAMESPACE_EXISTS)
        db.command("drop", "c")
    _gone(db, "c")


INVALID_TS_OPTIONS = [
    ("", TYPE_MISMATCH),
    ({"timeField": 100}, TYPE_MISMATCH),
    ({"timeField": "time", "metaField": 100}, TYPE_MISMATCH),
    ({"timeField": "time", "invalidOption": {}}, IDL_UNKNOWN_FIELD),
    ({"timeField": "sub.time"}, INVALID_OPTIONS),
    ({"timeField": "time", "metaField": "sub.meta"}, INVALID_OPTIONS),
    ({"timeField": "time", "metaField": "time"}, INVALID_OPTIONS),
    ({"timeField": "time", "metaField": "meta", "bucketMaxSpanSeconds": 10}, INVALID_OPTIONS),
    ({"timeField": "time", "metaField": "meta", "granularity": "minutes", "bucketMaxSpanSeconds": 3600},
     INVALID_OPTIONS),
]
# Not ported: ``{granularity: "seconds", bucketMaxSpanSeconds: 3600, bucketRoundingSeconds: 60}`` is
# InvalidOptions only in the post-7.0 versions of this file (the stored ones date from 7.1+ and 2024); the
# 7.0 rule, ported from bucket_span_and_rounding_seconds.js in test_jstests_ts_ddl.py, accepts the presets.


@pytest.mark.parametrize(("options", "code"), INVALID_TS_OPTIONS, ids=range(len(INVALID_TS_OPTIONS)))
def test_create_refuses_invalid_timeseries_options(db, options, code):
    """timeseries_create.js, testInvalidTimeseriesOptions: a non-object option, non-string field names
    (TypeMismatch), an unknown field (IDLUnknownField 40415), dotted names, metaField equal to timeField,
    a span that is not the granularity's (InvalidOptions); nothing is left behind."""
    assert command_fails(db, {"create": "c", "timeseries": options}, code)
    _gone(db, "c")


INCOMPATIBLE_CREATE_OPTIONS = [
    ({"expireAfterSeconds": Int64(-10)}, INVALID_OPTIONS),
    ({"expireAfterSeconds": Int64(4611686018427387904)}, INVALID_OPTIONS),
    ({"expireAfterSeconds": ""}, TYPE_MISMATCH),
    ({"capped": True, "size": 100}, INVALID_OPTIONS),
    ({"capped": True, "max": 100}, INVALID_OPTIONS),
    ({"autoIndexId": True}, INVALID_OPTIONS),
    ({"idIndex": {"key": {"_id": 1}, "name": "_id_"}}, INVALID_OPTIONS),
    ({"validator": {}}, INVALID_OPTIONS),
    ({"validationLevel": "off"}, INVALID_OPTIONS),
    ({"validationAction": "warn"}, INVALID_OPTIONS),
    ({"viewOn": "coll"}, INVALID_OPTIONS),
    ({"viewOn": "coll", "pipeline": []}, INVALID_OPTIONS),
    ({"clusteredIndex": True}, INVALID_OPTIONS),
    ({"clusteredIndex": False}, INVALID_OPTIONS),
]


@pytest.mark.parametrize(("create_options", "code"), INCOMPATIBLE_CREATE_OPTIONS,
                         ids=[str(o) for o, _ in INCOMPATIBLE_CREATE_OPTIONS])
def test_create_refuses_incompatible_create_options(db, create_options, code):
    """timeseries_create.js, testIncompatibleCreateOptions: a negative or too large
    expireAfterSeconds, capped, autoIndexId, idIndex, validator/validationLevel/validationAction,
    viewOn/pipeline and clusteredIndex are InvalidOptions next to ``timeseries`` (a string
    expireAfterSeconds is TypeMismatch)."""
    command = {"create": "c", "timeseries": {"timeField": "time"}} | create_options
    assert command_fails(db, command, code)
    _gone(db, "c")


@pytest.mark.parametrize("existing", ["collection", "view"])
def test_create_over_an_existing_collection_or_view(db, existing):
    """timeseries_create.js, testTimeseriesNamespaceExists: with an ordinary collection or a view of
    that name, creating the time-series collection is NamespaceExists and makes no buckets."""
    if existing == "collection":
        db.command("create", "c")
    else:
        db.command("create", "c", viewOn="c_source", pipeline=[])
    assert command_fails(db, {"create": "c", "timeseries": {"timeField": "time"}}, NAMESPACE_EXISTS)
    assert "system.buckets.c" not in _names(db)


def test_create_puts_a_validator_on_the_buckets(db):
    """timeseries_create.js (last block): a well-formed version 1 bucket may be inserted into
    ``system.buckets.<c>``; a non-number control.version, non-date control.min/max time, non-object
    ``data`` and an unknown top-level field are DocumentValidationFailure (121)."""
    db.command("create", "c", timeseries={"timeField": "time"})
    buckets = db["system.buckets.c"]
    oid = ObjectId("65f9972047423af45aeafc67")
    stamp = oid.generation_time.replace(tzinfo=None)
    buckets.insert_one({
        "control": {"version": 1, "min": {"time": stamp, "_id": oid, "a": 1},
                    "max": {"time": stamp, "_id": oid, "a": 1}, "count": 1},
        "data": {"time": {"0": stamp}, "_id": {"0": oid}, "a": {"0": 1}},
    })
    now = dt.datetime(2024, 1, 1)
    for doc in malformed_buckets(now):
        reply = db.command("insert", "system.buckets.c", documents=[doc], check=False)
        assert [e["code"] for e in reply.get("writeErrors", [])] == [VALIDATION_FAILED], (doc, reply)
    assert [d["a"] for d in db.c.find()] == [1]


# --------------------------------------------------------------------------------------------------
# timeseries_create_collection.js


def test_create_and_drop_list_view_and_buckets(db):
    """timeseries_create_collection.js: listCollections shows the view and its buckets after the
    create, neither after the drop; an ordinary collection of that name has no buckets."""
    db.create_collection("t", timeseries={"timeField": "time"})
    assert {"t", "system.buckets.t"} <= set(_entries(db))
    db.t.drop()
    assert not {"t", "system.buckets.t"} & set(_entries(db))
    db.create_collection("t")
    listed = _entries(db)
    assert "t" in listed and "system.buckets.t" not in listed


def test_create_timeseries_over_a_collection_leaves_no_buckets(db):
    """timeseries_create_collection.js: over an existing ordinary collection the time-series create is
    NamespaceExists and no orphaned buckets collection is left; the same over a view."""
    db.create_collection("t")
    assert command_fails(db, {"create": "t", "timeseries": {"timeField": "time"}}, NAMESPACE_EXISTS)
    listed = _entries(db)
    assert listed["t"]["type"] == "collection" and "system.buckets.t" not in listed
    db.t.drop()
    db.command("create", "t", viewOn="other", pipeline=[{"$match": {"field": "A"}}])
    assert command_fails(db, {"create": "t", "timeseries": {"timeField": "time"}}, NAMESPACE_EXISTS)
    listed = _entries(db)
    assert listed["t"]["type"] == "view" and "system.buckets.t" not in listed


def test_create_collection_or_view_over_existing_namespaces(db):
    """timeseries_create_collection.js (ddl/ version, the cases 7.0 shares): creating the same ordinary
    collection again is a no-op; a view over an existing collection is NamespaceExists; over an
    existing view an ordinary collection is NamespaceExists, as are views with another target or
    pipeline."""
    db.create_collection("ts")
    assert db.command("create", "ts")["ok"] == 1
    assert command_fails(db, {"create": "ts", "viewOn": "other", "pipeline": []}, NAMESPACE_EXISTS)
    db.ts.drop()
    db.command("create", "ts", viewOn="other", pipeline=[{"$match": {"field": "A"}}])
    assert command_fails(db, {"create": "ts"}, NAMESPACE_EXISTS)
    assert command_fails(db, {"create": "ts", "viewOn": "differentNamespace",
                              "pipeline": [{"$match": {"field": "A"}}]}, NAMESPACE_EXISTS)
    assert command_fails(db, {"create": "ts", "viewOn": "other", "pipeline": []}, NAMESPACE_EXISTS)
    assert "other" not in _names(db) and "system.buckets.ts" not in _names(db)


def test_no_view_on_a_buckets_collection(db):
    """timeseries_create_collection.js (7.0): a view on ``system.buckets.<c>`` is InvalidNamespace (73);
    8.1 allowed it for viewful collections (ddl/timeseries_view_on_buckets_legacy.js, requires_fcv_81)."""
    db.create_collection("t", timeseries={"timeField": "time"})
    assert command_fails(db, {"create": "badView", "viewOn": "system.buckets.t", "pipeline": []},
                         INVALID_NAMESPACE)


# --------------------------------------------------------------------------------------------------
# rename_timeseries_legacy.js


MEASUREMENTS = [
    {"time": dt.datetime(2019, 1, 30, 7, 30, 10, 957000), "meta": 0},
    {"time": dt.datetime(2019, 1, 30, 7, 30, 11, 957000), "meta": 1},
    {"time": dt.datetime(2020, 1, 30, 7, 30, 11, 957000), "meta": 2},
    {"time": dt.datetime(2021, 1, 30, 7, 30, 11, 957000), "meta": 3},
]


@pytest.fixture
def other_db(client, db):
    other = client[db.name + "_other"]
    client.drop_database(other.name)
    yield other
    client.drop_database(other.name)


@pytest.mark.parametrize("target", ["same", "other"])
def test_rename_refusals(db, other_db, target):
    """rename_timeseries_legacy.js: renaming the time-series view (to a plain name or to a buckets name)
    is IllegalOperation or CommandNotSupportedOnView; renaming an ordinary collection to a
    ``system.buckets`` name, and ``system.buckets.<c>`` to a plain name, are IllegalOperation."""
    to_db = db if target == "same" else other_db
    db.create_collection("c", timeseries={"timeField": "time"})
    admin = db.client.admin
    assert command_fails(admin, {"renameCollection": f"{db.name}.c", "to": f"{to_db.name}.newColl"},
                         ILLEGAL_OPERATION, ON_VIEW)
    assert command_fails(admin, {"renameCollection": f"{db.name}.c",
                                 "to": f"{db.name}.system.buckets.newColl"}, ILLEGAL_OPERATION, ON_VIEW)
    assert command_fails(admin, {"renameCollection": f"{db.name}.system.buckets.c",
                                 "to": f"{to_db.name}.newColl"}, ILLEGAL_OPERATION)
    db.create_collection("plain")
    assert command_fails(admin, {"renameCollection": f"{db.name}.plain",
                                 "to": f"{to_db.name}.system.buckets.newColl"}, ILLEGAL_OPERATION)


@pytest.mark.parametrize("target", ["same", "other"])
def test_rename_buckets_to_buckets_keeps_the_data(db, other_db, target):
    """rename_timeseries_legacy.js, checkSuccesfulRename: ``system.buckets.<c>`` renamed to
    ``system.buckets.newColl`` (same or other database) keeps its buckets unchanged; after dropping the
    old view and creating the time-series collection ``newColl`` over them, its measurements are the
    four inserted."""
    to_db = db if target == "same" else other_db
    db.create_collection("c", timeseries={"timeField": "time"})
    for m in MEASUREMENTS:
        db.c.insert_one(dict(m))
    before = list(db["system.buckets.c"].find())
    assert len(before) == 3
    db.client.admin.command("renameCollection", f"{db.name}.system.buckets.c",
                            to=f"{to_db.name}.system.buckets.newColl")
    db.c.drop()
    to_db.create_collection("newColl", timeseries={"timeField": "time"})
    assert list(to_db["system.buckets.newColl"].find()) == before
    assert list(to_db.newColl.find({}, {"_id": 0}).sort("time", 1)) == MEASUREMENTS


def test_create_over_buckets_without_a_view(db):
    """mongod's _createTimeseries reuses a buckets collection left without its view when its options
    match (the view is created over it), and otherwise answers 48 "Bucket Collection already exists"."""
    db.create_collection("c", timeseries={"timeField": "time", "metaField": "m"})
    db.c.insert_one({"time": dt.datetime(2024, 1, 1), "m": 1, "x": 1})
    db.client.admin.command("renameCollection", f"{db.name}.system.buckets.c", to=f"{db.name}.system.buckets.d")
    with pytest.raises(OperationFailure) as info:
        db.create_collection("d", timeseries={"timeField": "other"})
    stored = db.command("listCollections", filter={"name": "system.buckets.d"})["cursor"]["firstBatch"][0]
    assert (info.value.code, info.value.details["errmsg"]) == (
        48, f"Bucket Collection already exists. NS: {db.name}.system.buckets.d. "
            f"UUID: {uuid.UUID(bytes=bytes(stored['info']['uuid']))}")
    db.create_collection("d", timeseries={"timeField": "time", "metaField": "m"})
    assert list(db.d.find({}, {"_id": 0})) == [{"time": dt.datetime(2024, 1, 1), "m": 1, "x": 1}]


# --------------------------------------------------------------------------------------------------
# timeseries_compact.js


def test_compact_on_the_buckets_collection(db):
    """timeseries_compact.js: ``compact`` (force) on ``system.buckets.<c>`` works (or is Interrupted under
    cache pressure) and keeps the measurements. Not asserted: ``compact`` on the view name, which the
    file (ES-module era, ``multiversion_incompatible``) expects to work but 7.0 may refuse as a view."""
    db.create_collection("c", timeseries={"timeField": "time"})
    for i in range(5):
        db.c.insert_one({"time": dt.datetime.now(dt.UTC).replace(tzinfo=None), "x": i})
    reply = db.command("compact", "system.buckets.c", force=True, check=False)
    assert reply["ok"] == 1 or reply.get("code") == INTERRUPTED, reply
    assert sorted(d["x"] for d in db.c.find()) == list(range(5))


# --------------------------------------------------------------------------------------------------
# timeseries_index_build_failure.js


def test_raw_2dsphere_index_on_control_time_fails(db):
    """timeseries_index_build_failure.js: a 2dsphere index on ``control.min.time`` of the buckets (dates
    are not geo) fails with 16755 (Can't extract geo keys) or GeoKeyExtractionFailed (16755 too, the
    named code); the build leaves no index."""
    db.create_collection("c", timeseries={"timeField": "time"})
    now = dt.datetime(2024, 1, 1)
    for i in range(10):
        db.c.insert_one({"_id": i, "measurement": "measurement", "time": now})
    fails(lambda: db["system.buckets.c"].create_index([("control.min.time", "2dsphere")]), 16755)
    assert [i["name"] for i in db["system.buckets.c"].list_indexes()] in ([], ["_id_"])


# --------------------------------------------------------------------------------------------------
# timeseries_list_catalog.js


def _list_catalog(db, via_admin):
    if via_admin:
        return list(db.client.admin.aggregate([{"$listCatalog": {}},
                                               {"$match": {"db": db.name, "name": "system.buckets.coll"}}]))
    return list(db["system.buckets.coll"].aggregate([{"$listCatalog": {}}]))


@pytest.mark.parametrize("via_admin", [True, False], ids=["admin", "collection"])
def test_list_catalog_shows_the_buckets_collection(db, via_admin):
    """timeseries_list_catalog.js (viewful): ``$listCatalog`` (on admin, filtered on db and name, or on
    ``system.buckets.coll``) has nothing before the create, exactly one ``collection`` entry whose
    ``md.options.timeseries`` names the time and meta fields after it (with or without data), and
    nothing after the drop."""
    assert _list_catalog(db, via_admin) == []
    db.create_collection("coll", timeseries={"timeField": "timestamp", "metaField": "metadata"})
    for _ in range(2):
        (found,) = _list_catalog(db, via_admin)
        assert found["type"] == "collection", found
        options = found["md"]["options"]["timeseries"]
        assert (options["timeField"], options["metaField"]) == ("timestamp", "metadata"), found
        db.coll.insert_many([{"timestamp": dt.datetime(2024, 1, 1, 0, 0, i), "metadata": i % 2, "x": i}
                             for i in range(10)])
    db.coll.drop()
    assert _list_catalog(db, via_admin) == []


# --------------------------------------------------------------------------------------------------
# timeseries_block_nary_arithmetic_order.js


def test_nary_add_and_multiply_evaluate_left_to_right(db):
    """timeseries_block_nary_arithmetic_order.js (results): in a ``$group`` over a time-series
    collection, ``$multiply: [2dec, -0dec, INT64_MIN, DBL_MAX]`` is NumberDecimal("0E+294") and
    ``$add: [23310, 861.6903510104405, -314159265358979323]`` is the left-to-right double sum."""
    db.create_collection("c", timeseries={"timeField": "t", "metaField": "m"})
    db.c.insert_one({"_id": 1, "t": dt.datetime(2024, 1, 1), "m": 1, "decimalField": Decimal128("2"),
                     "doubleField": 861.6903510104405, "str": "abc"})
    prefix = [{"$match": {"str": {"$not": {"$lte": ""}}}}, {"$sort": {"_id": 1}}]
    multiply = prefix + [{"$group": {"_id": 1, "num": {"$first": {"$multiply": [
        "$decimalField", Decimal128("-0"), Int64(-9223372036854775808), 1.7976931348623157e308]}}}}]
    (result,) = db.c.aggregate(multiply)
    assert result["num"] == Decimal128("0E+294") and str(result["num"]) == "0E+294", result
    add = prefix + [{"$group": {"_id": {"$add": [23310, "$doubleField", Int64(-314159265358979323)]},
                                "num": {"$last": 1}}}]
    (result,) = db.c.aggregate(add)
    assert result["_id"] == 23310 + 861.6903510104405 + -314159265358979323, result
    assert isinstance(result["_id"], float)


# --------------------------------------------------------------------------------------------------
# timeseries_bucket_spanning_epoch.js


def _iso(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text)


EPOCH_CASES = [
    # (inserts with the bucket count expected after each step), all with meta m and granularity hours
    ("spanning-epoch", [(["1969-12-31T23:00:00", "1970-01-01T01:00:00"], 1)]),
    ("multiples-of-epoch-width", [(["1900-01-01T00:00:00", "1900-01-01T01:00:00"], 1),
                                  (["1970-01-01T01:00:00"], 2),
                                  (["2110-01-01T00:00:00", "2110-01-01T01:00:00"], 3)]),
    ("equal-modulo-2^32-seconds", [(["2106-07-02T06:28:16", "1970-01-01T00:00:00"], 2)]),
    ("more-than-2^32-seconds-apart", [(["2105-06-24T06:28:16", "1969-05-18T00:00:00"], 2)]),
]


@pytest.mark.parametrize(("label", "steps"), EPOCH_CASES, ids=[c[0] for c in EPOCH_CASES])
def test_bucketing_across_the_unix_epoch(db, label, steps):
    """timeseries_bucket_spanning_epoch.js (requires_fcv_61): with granularity "hours", measurements an
    hour either side of the epoch share a bucket; 1900, 1970 and 2110 pairs get a bucket each; times
    equal modulo 2^32 seconds, or more than 2^32 seconds apart, do not share one."""
    db.create_collection("c", timeseries={"timeField": "t", "metaField": "m", "granularity": "hours"})
    meta = 2 if label.startswith(("equal", "more")) else 1
    for times, buckets in steps:
        for text in times:
            db.c.insert_one({"m": meta, "t": _iso(text)})
        assert db["system.buckets.c"].count_documents({}) == buckets, (label, text)


# --------------------------------------------------------------------------------------------------
# timeseries_large_measurements.js


def _large_measurements(db, batched):
    max_size = db.client.admin.command("getParameter", 1, timeseriesBucketMaxSize=1)["timeseriesBucketMaxSize"]
    value = "a" * int(max_size * 0.08)
    db.create_collection("c", timeseries={"timeField": "time"})
    now = dt.datetime(2024, 5, 1, 12, 0, 0)
    docs = [{"_id": i, "time": now, "value": value} for i in range(100)]
    if batched:
        db.c.insert_many(docs)
    else:
        for doc in docs:
            db.c.insert_one(doc)
    return max_size


@pytest.mark.parametrize("batched", [False, True], ids=["single", "batched"])
def test_large_measurements_fill_buckets_of_ten(db, batched):
    """timeseries_large_measurements.js (checkAverageBucketSize, second half): with values of 8% of
    timeseriesBucketMaxSize, the control.min/max summaries are counted in the bucket size, so the first
    bucket holds _id 0 to 9 (single and batched inserts)."""
    _large_measurements(db, batched)
    first = db["system.buckets.c"].find().sort("control.min._id", 1).limit(1).next()
    assert (first["control"]["min"]["_id"], first["control"]["max"]["_id"]) == (0, 9)


@pytest.mark.parametrize("batched", [False, True], ids=["single", "batched"])
def test_large_measurements_average_uncompressed_bucket_size(db, batched):
    """timeseries_large_measurements.js (checkAverageBucketSize, first half): collStats'
    ``timeseries.numBytesUncompressed / timeseries.bucketCount`` is at most timeseriesBucketMaxSize."""
    max_size = _large_measurements(db, batched)
    stats = db.command("collStats", "c")["timeseries"]
    assert stats["numBytesUncompressed"] / stats["bucketCount"] <= max_size, stats


# --------------------------------------------------------------------------------------------------
# timeseries_expire.js


def test_expire_after_seconds_removes_old_buckets(db):
    """timeseries_expire.js: with ``expireAfterSeconds: NumberLong(5)``, a measurement from 2020 is
    removed by the TTL monitor (the session server runs it every second): the view and the buckets
    collection end up empty."""
    db.command("create", "c", timeseries={"timeField": "time"}, expireAfterSeconds=Int64(5))
    assert "system.buckets.c" in _names(db)
    db.c.insert_one({"_id": 0, "time": dt.datetime(2020, 11, 13, 1, 0, 0), "x": 0})
    deadline = time.monotonic() + 20
    while db.c.count_documents({}) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert list(db.c.find()) == []
    assert list(db["system.buckets.c"].find()) == []


# --------------------------------------------------------------------------------------------------
# timeseries_list_collections_invalid_view.js


def _invalid_view_next_to_timeseries(db):
    db.create_collection("t", timeseries={"timeField": "time"})
    db.client.admin.command("applyOps", [{"op": "i", "ns": f"{db.name}.system.views",
                                          "o": {"_id": "invalid", "pipeline": "invalid"}}])


def test_list_collections_with_an_invalid_view_definition(db):
    """timeseries_list_collections_invalid_view.js: after applyOps inserts ``{_id: "invalid", pipeline:
    "invalid"}`` into system.views next to a time-series collection, listCollections (unfiltered, or on
    type "timeseries") is InvalidViewDefinition (182); filtered on collections only
    (``ListCollectionsFilter::makeTypeCollectionFilter``, which skips the views) it lists system.views and
    the buckets collection."""
    _invalid_view_next_to_timeseries(db)
    for extra in ({}, {"filter": {"type": "timeseries"}}):
        assert command_fails(db, {"listCollections": 1} | extra, 182)
    listed = db.command("listCollections", 1, filter={"$or": [{"type": "collection"},
                                                              {"type": {"$exists": False}}]})
    assert sorted(e["name"] for e in listed["cursor"]["firstBatch"]) == ["system.buckets.t", "system.views"]
    db.system.views.drop()


def test_list_collections_name_filter_with_an_invalid_view_definition(db):
    """timeseries_list_collections_invalid_view.js: with the invalid view in system.views, listCollections
    filtered on the time-series collection's name is InvalidViewDefinition (182) too (7.0's
    list_collections.cpp calls ``iterateViews``, which asserts a valid view catalog, for every filter but
    the collections-only one)."""
    _invalid_view_next_to_timeseries(db)
    try:
        assert command_fails(db, {"listCollections": 1, "filter": {"name": "t"}}, 182)
    finally:
        db.system.views.drop()


# --------------------------------------------------------------------------------------------------
# timeseries_list_collections_missing_view.js


def test_list_collections_without_the_timeseries_view(db):
    """timeseries_list_collections_missing_view.js: after ``system.views`` is dropped, listCollections
    shows the buckets collection alone (no time-series entry)."""
    db.create_collection("t", timeseries={"timeField": "time"})
    db.system.views.drop()
    listed = db.command("listCollections", 1)["cursor"]["firstBatch"]
    assert [e["name"] for e in listed] == ["system.buckets.t"], listed


# --------------------------------------------------------------------------------------------------
# timeseries_out.js


def test_out_from_a_timeseries_collection(db):
    """timeseries_out.js (TimeseriesAggTests): ``$out`` from a time-series collection (meta ``tags``)
    writes the same measurements as from an ordinary collection holding the same documents (10 hosts,
    20 iterations, an extra idle measurement on odd iterations), compared on ``time`` sorted by time."""
    db.create_collection("in", timeseries={"timeField": "time", "metaField": "tags"})
    db.create_collection("observer_in")
    rng = random.Random(6)
    start = dt.datetime(2024, 5, 1, 12, 0, 0)
    tick = 0
    usage_fields = ["usage_guest", "usage_guest_nice", "usage_idle", "usage_iowait", "usage_irq", "usage_nice",
                    "usage_softirq", "usage_steal", "usage_system", "usage_user"]
    for i in range(20):
        for host in range(10):
            tags = {"hostname": f"host_{host}", "region": f"r{host % 3}", "datacenter": f"d{host % 2}"}
            doc = {"tags": tags, "time": start + dt.timedelta(milliseconds=tick)} | {
                f: rng.random() * 100 for f in usage_fields}
            tick += 1
            docs = [doc]
            if i % 2:
                docs.append({"tags": tags, "time": start + dt.timedelta(milliseconds=tick),
                             "idle_user": 100 - doc["usage_user"]})
                tick += 1
            for d in docs:
                db["in"].insert_one(dict(d))
                db.observer_in.insert_one(dict(d))
    projection = {"_id": 0, "time": 1, "hostid": 1, "cpu": 1, "idle": 1}
    list(db.observer_in.aggregate([{"$out": "observer_out"}]))
    list(db["in"].aggregate([{"$out": "out"}]))
    expected = list(db.observer_out.find({}, projection).sort("time", 1))
    actual = list(db.out.find({}, projection).sort("time", 1))
    assert len(actual) == len(expected) == 300
    assert actual == expected
