"""MongoDB's own time-series jstests not ported elsewhere (sweep of 2026-12-06), ported to pymongo against a
real Tidemark server.

Sources (``mongodb/mongo``; the 7.0-era file at the root of ``jstests/core/timeseries/`` where one is
stored, else ``ddl/<name>``, ``geo/<name>`` or ``query/<name>``): timeseries_create.js (the root 7.x
version: idempotent re-create is only asserted there from 7.1, SERVER-80362, so it is not asserted here),
timeseries_create_collection.js (root, 7.0), rename_timeseries_legacy.js (ddl/; the viewful
behaviour 7.0 has), timeseries_compact.js (ddl/), timeseries_index_build_failure.js (ddl/; the raw index
is built on ``system.buckets.<c>``, as 7.0 does without ``rawData``), timeseries_list_catalog.js (ddl/;
viewful branch), partialFilterExpression_with_internalBucketGeoWithin.js (root; index creation and
results only: the IXSCAN/COLLSCAN plan checks are explain internals) and
timeseries_block_nary_arithmetic_order.js (query/; the results of the classic engine, which 7.0 uses for
these pipelines, not the SBE block-processing explain checks).
"""

from __future__ import annotations

import datetime as dt

import pytest
from bson import ObjectId
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from harness.jstests import command_fails, fails

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
    ({"timeField": "time", "metaField": "meta", "granularity": "seconds", "bucketMaxSpanSeconds": 3600,
      "bucketRoundingSeconds": 60}, INVALID_OPTIONS),
]


@pytest.mark.parametrize(("options", "code"), INVALID_TS_OPTIONS, ids=range(len(INVALID_TS_OPTIONS)))
def test_create_refuses_invalid_timeseries_options(db, options, code):
    """timeseries_create.js, testInvalidTimeseriesOptions: a non-object option, non-string field names
    (TypeMismatch), an unknown field (IDLUnknownField 40415), dotted names, metaField equal to timeField,
    a span that is not the granularity's, a rounding next to a granularity (InvalidOptions); nothing is
    left behind."""
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
    bad = [
        {"control": {"version": "not a number", "min": {"time": now}, "max": {"time": now}}, "data": {}},
        {"control": {"version": 1, "min": {"time": "not a date"}, "max": {"time": now}}, "data": {}},
        {"control": {"version": 1, "min": {"time": now}, "max": {"time": "not a date"}}, "data": {}},
        {"control": {"version": 1, "min": {"time": now}, "max": {"time": now}}, "data": "not an object"},
        {"invalid_bucket_field": 1},
    ]
    for doc in bad:
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


# --------------------------------------------------------------------------------------------------
# timeseries_compact.js


def test_compact_on_timeseries_and_buckets(db):
    """timeseries_compact.js: ``compact`` (force) on the time-series collection and on its buckets
    collection works (or is Interrupted under cache pressure)."""
    db.create_collection("c", timeseries={"timeField": "time"})
    for i in range(5):
        db.c.insert_one({"time": dt.datetime.now(dt.UTC).replace(tzinfo=None), "x": i})
    for name in ("c", "system.buckets.c"):
        reply = db.command("compact", name, force=True, check=False)
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
# partialFilterExpression_with_internalBucketGeoWithin.js


SOUTH_WEST_US = {"type": "Polygon", "coordinates": [[
    [-97.516473, 26.02054], [-106.528371, 31.895644], [-118.646927, 33.748207], [-119.591751, 34.348991],
    [-103.068314, 36.426696], [-100.080033, 36.497382], [-99.975048, 34.506004], [-94.240190, 33.412542],
    [-94.075400, 29.725640], [-97.516473, 26.02054]]]}
TEXAS = {"type": "Polygon", "coordinates": [[
    [-97.516473, 26.02054], [-106.528371, 31.895644], [-103.034724, 31.932947], [-103.068314, 36.426696],
    [-100.080033, 36.497382], [-99.975048, 34.506004], [-94.240190, 33.412542], [-94.075400, 29.725640],
    [-97.516473, 26.02054]]]}
CITIES = [
    (1, "Dallas", [-96.808891, 32.779]), (1, "Paris TX", [-95.555513, 33.6609389]),
    (2, "Houston", [-95.3632715, 29.7632836]), (1, "San Antonio", [-98.4936282, 29.4241219]),
    (3, "LA", [-118.2436849, 34.0522342]), (3, "Berkeley", [-122.272747, 37.8715926]),
    (1, "NYC", [-74.0059729, 40.7142691]),
]


def _bucket_geo_within(region, field="loc"):
    return {"$_internalBucketGeoWithin": {"withinRegion": {"$geometry": region}, "field": field}}


def test_partial_index_with_internal_bucket_geo_within(db):
    """partialFilterExpression_with_internalBucketGeoWithin.js: an index on the buckets collection may
    have a ``$_internalBucketGeoWithin`` partial filter (listIndexes then shows ``a_1`` besides the
    clustered index, which is not listed); queries with that predicate on the buckets run, with that
    index and with a smaller one (results only: the IXSCAN/COLLSCAN checks are explain internals).
    Each city is inserted on its own, one bucket per measurement at most; the Texas query keeps
    exactly the buckets holding an ``a: 1`` measurement inside Texas (Dallas, Paris TX, San Antonio,
    all in one bucket here since there is no metaField), or a superset of them."""
    db.create_collection("c", timeseries={"timeField": "timestamp"})
    buckets = db["system.buckets.c"]
    now = dt.datetime(2024, 1, 1)
    for a, name, point in CITIES:
        db.c.insert_one({"timestamp": now, "a": a, "name": name, "loc": {"type": "Point", "coordinates": point}})
    for outer, inner in ((SOUTH_WEST_US, TEXAS), (TEXAS, SOUTH_WEST_US)):
        buckets.create_index("a", partialFilterExpression=_bucket_geo_within(outer))
        assert [i["name"] for i in buckets.list_indexes()] == ["a_1"]
        found = list(buckets.find({"a": 1} | _bucket_geo_within(inner)))
        assert all(isinstance(b["control"], dict) for b in found)
        list(buckets.find({"a": 1} | _bucket_geo_within(inner, "geoloc")))
        buckets.drop_indexes()
    # The unpacked view of the buckets found by the Texas predicate holds the Texas cities.
    found = list(buckets.find(_bucket_geo_within(TEXAS)))
    assert len(found) == 1 and sorted(found[0]["data"]["name"].values()) == sorted(n for _, n, _ in CITIES)


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
