"""Ports of MongoDB's time-series DDL and index jstests (group E) to pymongo against a real Tidemark server.

Each test names the jstest it ports (``jstests/core/timeseries/<name>.js``, the 7.0-era flat layout, or
``jstests/core/timeseries/ddl/<name>.js`` where no flat file exists). What is checked is behaviour:
``listCollections`` entries of the view and of ``system.buckets.<coll>``, ``collMod`` replies and error
codes, index specs as listed on the view and as stored on the buckets collection, hints on both
namespaces, and ``control.min.<time>`` rounding of the bucket documents.

Left out, as they do not apply to a 7.0 standalone: sharding/balancer branches, feature-flag and FCV
branches, viewless time-series and ``rawData`` (8.0+), the 8.0-only idempotent creation of
``system.buckets.*`` namespaces, and explain-output assertions (``isMultiKey``/``multiKeyPaths``).
"""

from __future__ import annotations

import datetime as dt

import pytest
from bson.int64 import Int64
from harness.jstests import iso
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands(
    "create", "listCollections", "collMod", "drop", "createIndexes", "listIndexes", "dropIndexes", "insert",
    "find", "aggregate",
)

NOW = dt.datetime(2024, 5, 1, 12, 34, 56, 789000)  # the jstests' ISODate(): a fixed instant with ms
SPAN = {"seconds": 3600, "minutes": 86400, "hours": 2592000}
ROUNDING = {"seconds": 60, "minutes": 3600, "hours": 86400}
MAX_BUCKETING_SECONDS = 86400 * 365
OUT_OF_RANGE_CODES = {2, 51024}  # 51024 (IDL validator) up to 7.0, BadValue from 7.1: the jstests accept both


# --------------------------------------------------------------------------------------------------
# helpers


def make_ts(db, name, time_field="tm", meta_field="mm", **extra):
    options = {"timeField": time_field}
    if meta_field is not None:
        options["metaField"] = meta_field
    db.create_collection(name, timeseries=options, **extra)
    return db[name]


def buckets(db, name):
    return db[f"system.buckets.{name}"]


def entry(db, name):
    """The listCollections entry for ``name`` (None when absent), asked with a name filter."""
    found = db.command("listCollections", 1, filter={"name": name})["cursor"]["firstBatch"]
    assert len(found) <= 1, found
    return found[0] if found else None


def all_entries(db):
    return {e["name"]: e for e in db.command("listCollections", 1)["cursor"]["firstBatch"]}


def kind(db, name):
    e = entry(db, name)
    return None if e is None else e["type"]


def failure(fn):
    with pytest.raises(OperationFailure) as info:
        fn()
    return info.value


def command_fails(db, *args, **kwargs):
    return failure(lambda: db.command(*args, **kwargs))


def hint_is_refused(cursor):
    """A hint naming a missing or hidden index is BadValue (2), on the view and on the buckets."""
    assert failure(lambda: list(cursor)).code == 2


def keys(index_list):
    return [list(ix["key"].items()) for ix in index_list]


def user_keys(coll):
    return keys(coll.list_indexes())


def bucket_keys(db, name):
    return keys(buckets(db, name).list_indexes())


def hide(db, name, index, hidden=True):
    selector = {"name": index} if isinstance(index, str) else {"keyPattern": dict(index)}
    return db.command("collMod", name, index={**selector, "hidden": hidden})


def insert_reply(db, name, docs, ordered=True):
    return db.command("insert", name, documents=docs, ordered=ordered)


def bucket_key(spec, time_field="tm", meta_field="mm"):
    """The buckets-collection key MongoDB builds for a user key made of ±1 fields."""
    out = []
    for field, direction in spec:
        if field == meta_field or field.startswith(meta_field + "."):
            out.append(("meta" + field[len(meta_field):], direction))
        else:
            pair = [(f"control.min.{field}", direction), (f"control.max.{field}", direction)]
            out += pair if direction == 1 else pair[::-1]
    return out


# --------------------------------------------------------------------------------------------------
# timeseries_list_collections.js


EXPANDED_JA = {
    "locale": "ja", "caseLevel": False, "caseFirst": "off", "strength": 3, "numericOrdering": False,
    "alternate": "non-ignorable", "maxVariable": "punct", "normalization": False, "backwards": False,
    "version": "57.1",
}

LIST_COLLECTIONS_CASES = [
    ({"timeseries": {"timeField": "time"}},
     {"timeseries": {"timeField": "time", "granularity": "seconds", "bucketMaxSpanSeconds": 3600}}),
    ({"timeseries": {"timeField": "time", "metaField": "meta"}},
     {"timeseries": {"timeField": "time", "metaField": "meta", "granularity": "seconds",
                     "bucketMaxSpanSeconds": 3600}}),
    ({"timeseries": {"timeField": "time", "granularity": "minutes"}},
     {"timeseries": {"timeField": "time", "granularity": "minutes", "bucketMaxSpanSeconds": 86400}}),
    ({"timeseries": {"timeField": "time", "granularity": "minutes", "bucketMaxSpanSeconds": 86400,
                     "bucketRoundingSeconds": 3600}},
     {"timeseries": {"timeField": "time", "granularity": "minutes", "bucketMaxSpanSeconds": 86400}}),
    ({"timeseries": {"timeField": "time"}, "storageEngine": {"wiredTiger": {}}},
     {"timeseries": {"timeField": "time", "granularity": "seconds", "bucketMaxSpanSeconds": 3600},
      "storageEngine": {"wiredTiger": {}}}),
    ({"timeseries": {"timeField": "time"}, "indexOptionDefaults": {"storageEngine": {"wiredTiger": {}}}},
     {"timeseries": {"timeField": "time", "granularity": "seconds", "bucketMaxSpanSeconds": 3600},
      "indexOptionDefaults": {"storageEngine": {"wiredTiger": {}}}}),
    ({"timeseries": {"timeField": "time"}, "collation": {"locale": "ja"}},
     {"timeseries": {"timeField": "time", "granularity": "seconds", "bucketMaxSpanSeconds": 3600},
      "collation": EXPANDED_JA}),
    ({"timeseries": {"timeField": "time"}, "expireAfterSeconds": Int64(100)},
     {"timeseries": {"timeField": "time", "granularity": "seconds", "bucketMaxSpanSeconds": 3600},
      "expireAfterSeconds": 100}),
    ({"timeseries": {"timeField": "time", "metaField": "meta", "granularity": "minutes",
                     "bucketMaxSpanSeconds": 86400, "bucketRoundingSeconds": 3600},
      "storageEngine": {"wiredTiger": {}}, "indexOptionDefaults": {"storageEngine": {"wiredTiger": {}}},
      "collation": {"locale": "ja"}, "expireAfterSeconds": Int64(100)},
     {"timeseries": {"timeField": "time", "metaField": "meta", "granularity": "minutes",
                     "bucketMaxSpanSeconds": 86400},
      "storageEngine": {"wiredTiger": {}}, "indexOptionDefaults": {"storageEngine": {"wiredTiger": {}}},
      "collation": EXPANDED_JA, "expireAfterSeconds": 100}),
]


@pytest.mark.parametrize(("options", "expected"), LIST_COLLECTIONS_CASES,
                         ids=[f"case{i}" for i in range(len(LIST_COLLECTIONS_CASES))])
def test_list_collections_entry_of_the_view(db, options, expected):
    """timeseries_list_collections.js: after ``create`` with the given options, the unfiltered
    listCollections reply holds ``system.views``, ``system.buckets.<c>`` and, for the view, exactly
    ``{name, type: "timeseries", options, info: {readOnly: false}}``: the granularity defaults to
    "seconds", ``bucketMaxSpanSeconds`` is the preset, ``bucketRoundingSeconds`` is not echoed when a
    granularity is in effect (even if it was given), the collation is fully expanded, and
    ``expireAfterSeconds``, ``storageEngine`` and ``indexOptionDefaults`` are echoed."""
    db.command("create", "c", **options)
    entries = all_entries(db)
    assert {"system.views", "system.buckets.c", "c"} <= set(entries)
    assert entries["c"] == {"name": "c", "type": "timeseries", "options": expected,
                            "info": {"readOnly": False}}
    assert entries["system.buckets.c"]["type"] == "collection"


# --------------------------------------------------------------------------------------------------
# timeseries_list_collections_filter_name.js


def test_list_collections_filtered_on_the_view_name(db):
    """timeseries_list_collections_filter_name.js: listCollections with ``filter: {name: <view>}``
    returns exactly the one view entry with its defaulted time-series options."""
    make_ts(db, "c", time_field="time", meta_field=None)
    batch = db.command("listCollections", 1, filter={"name": "c"})["cursor"]["firstBatch"]
    assert batch == [{
        "name": "c",
        "type": "timeseries",
        "options": {"timeseries": {"timeField": "time", "granularity": "seconds", "bucketMaxSpanSeconds": 3600}},
        "info": {"readOnly": False},
    }]


# --------------------------------------------------------------------------------------------------
# timeseries_collmod.js


def test_collmod_allowed_and_forbidden_options(db):
    """timeseries_collmod.js: on a time-series view, converting an index to TTL, ``validator``,
    ``validationLevel``, ``validationAction``, ``viewOn``/``pipeline`` and ``recordPreImages`` are
    InvalidOptions (72), as are validator/validationLevel/validationAction on the buckets namespace
    (7.0); hiding an index and setting ``expireAfterSeconds`` work; hiding the internal clustered
    ``_id_`` index is IndexNotFound; granularity may grow seconds -> minutes -> hours but not shrink
    (72); a granularity change addressed to ``system.buckets.<c>`` is InvalidNamespace (73)."""
    db.create_collection("c", timeseries={"timeField": "time", "granularity": "seconds"})
    db.c.create_index("a")
    assert command_fails(db, "collMod", "c", index={"keyPattern": {"a": 1}, "expireAfterSeconds": 100}).code == 72
    assert db.command("collMod", "c", index={"keyPattern": {"a": 1}, "hidden": True})["ok"] == 1
    assert command_fails(db, "collMod", "c", index={"name": "_id_", "hidden": True}).code == 27
    for target in ("c", "system.buckets.c"):
        assert command_fails(db, "collMod", target, validator={"required": ["time"]}).code == 72
        assert command_fails(db, "collMod", target, validationLevel="moderate").code == 72
        assert command_fails(db, "collMod", target, validationAction="warn").code == 72
    assert command_fails(db, "collMod", "c", viewOn="foo", pipeline=[]).code == 72
    # recordPreImages: InvalidOptions in the 6.1-era jstest; later versions dropped the check (the option
    # left the collMod IDL), so an unknown-field answer is accepted as well.
    assert command_fails(db, "collMod", "c", recordPreImages=True).code in (72, 40415)
    assert db.command("collMod", "c", expireAfterSeconds=60)["ok"] == 1
    assert db.command("collMod", "c", timeseries={"granularity": "minutes"})["ok"] == 1
    assert command_fails(db, "collMod", "c", timeseries={"granularity": "seconds"}).code == 72
    assert db.command("collMod", "c", timeseries={"granularity": "hours"})["ok"] == 1
    assert command_fails(db, "collMod", "system.buckets.c", timeseries={"granularity": "hours"}).code == 73
    assert entry(db, "c")["options"]["timeseries"]["granularity"] == "hours"


def test_collmod_bucketing_seconds_rules(db):
    """timeseries_collmod.js (6.3+ part): from granularity "hours", giving only one of
    ``bucketMaxSpanSeconds``/``bucketRoundingSeconds`` is 72, lowering them is 72, the granularity with
    its own preset span is accepted (no-op), a rounding alongside a granularity is 72, unequal custom
    values are 72; equal custom values at least the current span are accepted, drop the granularity,
    and are echoed by both the view's and the buckets' listCollections entries; prepareUnique (true or
    false) on a time-series index is 72."""
    hours_span, hours_rounding = SPAN["hours"], ROUNDING["hours"]
    db.create_collection("c", timeseries={"timeField": "time", "granularity": "seconds"})
    db.command("collMod", "c", timeseries={"granularity": "minutes"})
    db.command("collMod", "c", timeseries={"granularity": "hours"})
    refused = [
        {"bucketMaxSpanSeconds": hours_span},
        {"bucketRoundingSeconds": hours_rounding},
        {"bucketMaxSpanSeconds": hours_rounding, "bucketRoundingSeconds": hours_rounding},
        {"granularity": "hours", "bucketMaxSpanSeconds": hours_span, "bucketRoundingSeconds": hours_rounding},
        {"bucketMaxSpanSeconds": hours_span + 1, "bucketRoundingSeconds": hours_rounding + 1},
        {"granularity": "hours", "bucketMaxSpanSeconds": hours_span + 1,
         "bucketRoundingSeconds": hours_rounding + 1},
    ]
    for options in refused:
        assert command_fails(db, "collMod", "c", timeseries=options).code == 72, options
    same_preset = {"granularity": "hours", "bucketMaxSpanSeconds": hours_span}
    assert db.command("collMod", "c", timeseries=same_preset)["ok"] == 1
    assert db.command("collMod", "c", timeseries={"bucketMaxSpanSeconds": hours_span + 1,
                                                  "bucketRoundingSeconds": hours_span + 1})["ok"] == 1
    db.c.create_index("prepareUniqueIndex")
    for flag in (True, False):
        assert command_fails(db, "collMod", "c", index={"keyPattern": {"prepareUniqueIndex": 1},
                                                        "prepareUnique": flag}).code == 72
    for name in ("c", "system.buckets.c"):
        options = entry(db, name)["options"]["timeseries"]
        assert options["bucketRoundingSeconds"] == hours_span + 1
        assert options["bucketMaxSpanSeconds"] == hours_span + 1
        assert "granularity" not in options


def test_collmod_custom_seconds_to_granularity_and_range_limit(db):
    """timeseries_collmod.js (last part): a collection created with custom 200/200 seconds may move to
    granularity "minutes" (its presets are larger); custom seconds above 365 days are refused
    (51024 in 7.0, BadValue from 7.1); exactly 365 days is accepted; ``timeseries: {}`` is a no-op."""
    db.create_collection("c", timeseries={"timeField": "time", "bucketMaxSpanSeconds": 200,
                                          "bucketRoundingSeconds": 200})
    assert db.command("collMod", "c", timeseries={"granularity": "minutes"})["ok"] == 1
    too_big = MAX_BUCKETING_SECONDS + 1
    error = command_fails(db, "collMod", "c", timeseries={"bucketMaxSpanSeconds": too_big,
                                                          "bucketRoundingSeconds": too_big})
    assert error.code in OUT_OF_RANGE_CODES
    assert db.command("collMod", "c", timeseries={"bucketMaxSpanSeconds": MAX_BUCKETING_SECONDS,
                                                  "bucketRoundingSeconds": MAX_BUCKETING_SECONDS})["ok"] == 1
    assert db.command("collMod", "c", timeseries={})["ok"] == 1
    options = entry(db, "c")["options"]["timeseries"]
    assert options == {"timeField": "time", "bucketMaxSpanSeconds": MAX_BUCKETING_SECONDS,
                       "bucketRoundingSeconds": MAX_BUCKETING_SECONDS}


# --------------------------------------------------------------------------------------------------
# timeseries_expire_collmod.js


def test_expire_after_seconds_collmod_needs_a_clustered_collection(db):
    """timeseries_expire_collmod.js: ``collMod expireAfterSeconds`` on an ordinary (unclustered)
    collection is InvalidOptions."""
    db.create_collection("plain")
    assert command_fails(db, "collMod", "plain", expireAfterSeconds=10).code == 72


@pytest.mark.parametrize("target", ["view", "buckets"])
def test_expire_after_seconds_collmod_invalid_values(db, target):
    """timeseries_expire_collmod.js: on the view and on the buckets namespace, a string other than
    "off" is InvalidOptions, an object is TypeMismatch, a negative number and 2^62 are
    InvalidOptions; the creation value (NumberLong 5) is left in place."""
    make_ts(db, "c", time_field="time", meta_field=None, expireAfterSeconds=Int64(5))
    name = "c" if target == "view" else "system.buckets.c"
    assert command_fails(db, "collMod", name, expireAfterSeconds="10").code == 72
    assert command_fails(db, "collMod", name, expireAfterSeconds={}).code == 14
    assert command_fails(db, "collMod", name, expireAfterSeconds=-10).code == 72
    assert command_fails(db, "collMod", name, expireAfterSeconds=Int64(4611686018427387904)).code == 72
    assert entry(db, "system.buckets.c")["options"]["expireAfterSeconds"] == 5


@pytest.mark.parametrize("target", ["view", "buckets"])
def test_expire_after_seconds_collmod_changes_the_buckets_options(db, target):
    """timeseries_expire_collmod.js: collMod on the view or on ``system.buckets.<c>`` sets
    ``expireAfterSeconds`` to 10, 0, removes it with "off" and sets it again to 100; every step is
    visible in the buckets collection's listCollections options (and in the view's)."""
    make_ts(db, "c", time_field="time", meta_field=None, expireAfterSeconds=Int64(5))
    name = "c" if target == "view" else "system.buckets.c"
    for value in (10, 0, "off", 100):
        assert db.command("collMod", name, expireAfterSeconds=value)["ok"] == 1
        for listed in ("system.buckets.c", "c"):
            options = entry(db, listed)["options"]
            if value == "off":
                assert "expireAfterSeconds" not in options, (listed, options)
            else:
                assert options["expireAfterSeconds"] == value, (listed, options)


# --------------------------------------------------------------------------------------------------
# ddl/timeseries_drop.js (and its predecessor drop_timeseries.js, for the cases a 7.0 standalone has)


def test_drop_timeseries_by_the_view_name(db):
    """ddl/timeseries_drop.js, "normal timeseries, drop by the main NS": the view is listed as
    ``timeseries`` and its buckets as ``collection``; dropping the view name removes both."""
    make_ts(db, "c", time_field="t", meta_field=None)
    assert (kind(db, "c"), kind(db, "system.buckets.c")) == ("timeseries", "collection")
    assert db.command("drop", "c")["ok"] == 1
    assert (kind(db, "c"), kind(db, "system.buckets.c")) == (None, None)


def test_drop_plain_view_by_its_name(db):
    """ddl/timeseries_drop.js, "view on another collection, buckets doesn't exist, drop by the main
    NS": an ordinary view is listed as ``view`` and dropping it removes it."""
    db.command("create", "c", viewOn="dummyCollection", pipeline=[])
    assert kind(db, "c") == "view"
    assert db.command("drop", "c")["ok"] == 1
    assert kind(db, "c") is None


def _setup_view_on_dummy(db):
    db.command("create", "c", viewOn="dummyCollection", pipeline=[])


def _setup_plain(db):
    db.create_collection("c")


DROP_CASES = [
    # (label, main namespace setup, create buckets with timeseries options, drop target, expected after)
    ("timeseries-drop-buckets", None, "timeseries", "system.buckets.c", (None, None)),
    ("view-and-buckets-drop-main", _setup_view_on_dummy, "buckets", "c", (None, "collection")),
    ("view-and-buckets-drop-buckets", _setup_view_on_dummy, "buckets", "system.buckets.c", ("view", None)),
    ("plain-and-buckets-drop-main", _setup_plain, "buckets", "c", (None, "collection")),
    ("plain-and-buckets-drop-buckets", _setup_plain, "buckets", "system.buckets.c", ("collection", None)),
    ("buckets-only-drop-buckets", None, "buckets", "system.buckets.c", (None, None)),
    # case 12: no view or collection c: dropping c drops the buckets (mongod's drop_collection.cpp:
    # "Timeseries bucket collection may exist even without the view"); they were left behind
    ("buckets-only-drop-main", None, "buckets", "c", (None, None)),
]


@pytest.mark.parametrize(("label", "setup", "make", "target", "after"), DROP_CASES,
                         ids=[c[0] for c in DROP_CASES])
def test_drop_permutations(db, label, setup, make, target, after):
    """drop_timeseries.js cases 2, 5, 6, 9, 10, 12 and 13: dropping ``system.buckets.<c>`` of a real
    time-series collection also drops its view; a ``system.buckets.<c>`` created directly (with
    time-series options) next to an ordinary view or collection ``c`` is independent of it: dropping
    either name drops only that one."""
    if setup is not None:
        setup(db)
    if make == "timeseries":
        make_ts(db, "c", time_field="t", meta_field=None)
    else:
        db.create_collection("system.buckets.c", timeseries={"timeField": "t"})
    assert kind(db, "system.buckets.c") == "collection"
    assert db.command("drop", target)["ok"] == 1
    assert (kind(db, "c"), kind(db, "system.buckets.c")) == after


@pytest.mark.parametrize("main", ["view", "collection"])
def test_drop_of_a_missing_buckets_namespace_is_ok(db, main):
    """drop_timeseries.js cases 8 and 11: with an ordinary view (or collection) ``c`` and no
    ``system.buckets.c``, dropping ``system.buckets.c`` succeeds and leaves ``c`` alone: from 7.0,
    drop of a non-existent collection returns ok instead of NamespaceNotFound (stated in
    jstests/replsets/noop_writes_wait_for_write_concern.js, which expects ``commandWorked`` for it)."""
    if main == "view":
        _setup_view_on_dummy(db)
    else:
        _setup_plain(db)
    reply = db.command("drop", "system.buckets.c")
    assert reply["ok"] == 1
    assert kind(db, "c") == main


# --------------------------------------------------------------------------------------------------
# timeseries_index_spec.js


INDEX_SPEC_CASES = [
    ("timefield_downgradable", [("tm", 1)], {}, False),
    ("metafield_downgradable", [("mm", 1)], {}, False),
    ("time_meta_field_downgradable", [("tm", 1), ("mm", 1)], {}, False),
    ("x_1", [("x", 1)], {}, True),
    ("x_partial", [("x", 1)], {"partialFilterExpression": {"x": {"$gt": 5}}}, True),
    ("time_partial", [("tm", 1)], {"partialFilterExpression": {"x": {"$gt": 5}}}, True),
    ("meta_partial", [("mm", 1)], {"partialFilterExpression": {"x": {"$gt": 5}}}, True),
    ("meta_x_partial", [("mm", 1), ("x", 1)], {"partialFilterExpression": {"x": {"$gt": 5}}}, True),
]


@pytest.mark.parametrize(("name", "key", "options", "original"), INDEX_SPEC_CASES,
                         ids=[c[0] for c in INDEX_SPEC_CASES])
def test_original_spec_is_stored_only_for_new_index_types(db, name, key, options, original):
    """timeseries_index_spec.js: indexes on the time and meta fields alone are stored on the buckets
    without ``originalSpec`` (downgradable); measurement and partial indexes carry ``originalSpec``
    with the same ``v`` and ``name`` as the bucket index but the user's key. The view's listIndexes
    never shows ``originalSpec`` but shows the user key and every option given at creation; dropping
    by name removes the index from both namespaces."""
    coll = make_ts(db, "c")
    coll.create_index(key, name=name, **options)
    (listed,) = [ix for ix in coll.list_indexes() if ix["name"] == name]
    assert "originalSpec" not in listed
    assert list(listed["key"].items()) == key
    for option, value in options.items():
        assert listed[option] == value
    (stored,) = [ix for ix in buckets(db, "c").list_indexes() if ix["name"] == name]
    assert list(stored["key"].items()) == bucket_key(key)
    if original:
        spec = stored["originalSpec"]
        assert (spec["v"], spec["name"]) == (stored["v"], stored["name"])
        assert list(spec["key"].items()) == key != list(stored["key"].items())
    else:
        assert "originalSpec" not in stored
    db.command("dropIndexes", "c", index=name)
    assert name not in [ix["name"] for ix in coll.list_indexes()]
    assert name not in [ix["name"] for ix in buckets(db, "c").list_indexes()]


def test_raw_bucket_index_maps_back_to_a_user_index(db):
    """timeseries_index_spec.js: an index created directly on the buckets collection as
    ``{control.min.y: 1, control.max.y: 1}`` has no ``originalSpec`` and is listed on the view, by
    reverse mapping, as ``{y: 1}`` without ``originalSpec``."""
    coll = make_ts(db, "c")
    buckets(db, "c").create_index([("control.min.y", 1), ("control.max.y", 1)], name="y")
    (stored,) = [ix for ix in buckets(db, "c").list_indexes() if ix["name"] == "y"]
    assert "originalSpec" not in stored
    (listed,) = [ix for ix in coll.list_indexes() if ix["name"] == "y"]
    assert "originalSpec" not in listed
    assert dict(listed["key"]) == {"y": 1}


# --------------------------------------------------------------------------------------------------
# timeseries_index.js

INDEX_DOC = {"_id": 0, "tm": NOW, "mm": {"tag1": "a", "tag2": "b", "location": [1.0, 2.0]}, "loc": [0, 0]}

INDEX_CASES = [
    ([("mm", 1)], [("meta", 1)]),
    ([("mm", -1)], [("meta", -1)]),
    ([("mm.tag1", 1)], [("meta.tag1", 1)]),
    ([("mm.tag1", 1), ("mm.tag2", -1)], [("meta.tag1", 1), ("meta.tag2", -1)]),
    ([("tm", 1)], [("control.min.tm", 1), ("control.max.tm", 1)]),
    ([("tm", -1)], [("control.max.tm", -1), ("control.min.tm", -1)]),
    ([("mm.tag1", 1), ("tm", 1)], [("meta.tag1", 1), ("control.min.tm", 1), ("control.max.tm", 1)]),
    ([("mm.tag1", 1), ("tm", -1)], [("meta.tag1", 1), ("control.max.tm", -1), ("control.min.tm", -1)]),
    ([("mm.tag1", -1), ("mm.tag2", 1), ("tm", 1)],
     [("meta.tag1", -1), ("meta.tag2", 1), ("control.min.tm", 1), ("control.max.tm", 1)]),
    ([("mm", "hashed")], [("meta", "hashed")]),
    ([("mm.location", "2dsphere")], [("meta.location", "2dsphere")]),
    ([("mm.location", "2d")], [("meta.location", "2d")]),
    ([("mm.location", "2dsphere"), ("mm.tag1", -1)], [("meta.location", "2dsphere"), ("meta.tag1", -1)]),
    ([("mm.tag1", -1), ("mm.location", "2dsphere")], [("meta.tag1", -1), ("meta.location", "2dsphere")]),
    ([("mm.location", "2d"), ("mm.tag1", -1)], [("meta.location", "2d"), ("meta.tag1", -1)]),
    ([("loc", "2dsphere")], [("data.loc", "2dsphere_bucket")]),
]


@pytest.mark.parametrize(("spec", "bucket_spec"), INDEX_CASES, ids=[str(c[0]) for c in INDEX_CASES])
def test_index_create_list_hint_hide_and_drop(db, spec, bucket_spec):
    """timeseries_index.js ``runTest``: on a collection holding one measurement, the index is stored on
    the buckets with the translated key (hint by it finds the one bucket, whose ``control.min`` has the
    ``_id`` and the time rounded down to the minute, and whose ``meta`` is the measurement's);
    listIndexes on the view (cursor ns = the view) shows the user key next to the default index, and on
    the buckets (ns = buckets) the bucket key. Dropping by key makes both hints BadValue; it can be
    created and dropped by name (string and array); hidden by name or key (hints BadValue), unhidden,
    created hidden; and hinted by name on both namespaces and by key pattern."""
    coll = make_ts(db, "c")
    raw = buckets(db, "c")
    assert len(list(raw.list_indexes())) == 1  # the default {meta, time} index
    insert_reply(db, "c", [dict(INDEX_DOC)])
    coll.create_index(spec)

    (bucket,) = list(raw.find().hint(bucket_spec))
    assert bucket["control"]["min"]["_id"] == 0
    assert bucket["control"]["min"]["tm"] == NOW.replace(second=0, microsecond=0)
    assert bucket["meta"] == INDEX_DOC["mm"]

    reply = db.command("listIndexes", "c")["cursor"]
    assert reply["ns"] == f"{db.name}.c"
    assert len(reply["firstBatch"]) == 2 and spec in keys(reply["firstBatch"])
    reply = db.command("listIndexes", "system.buckets.c")["cursor"]
    assert reply["ns"] == f"{db.name}.system.buckets.c"
    assert len(reply["firstBatch"]) == 2 and bucket_spec in keys(reply["firstBatch"])

    coll.drop_index(spec)
    hint_is_refused(raw.find().hint(bucket_spec))
    hint_is_refused(coll.find().hint(spec))

    coll.create_index(spec, name="myindex1")
    coll.drop_index("myindex1")
    coll.create_index(spec, name="myindex2")
    db.command("dropIndexes", "c", index=["myindex2"])

    for name, selector in (("hide1", "hide1"), ("hide2", spec)):
        coll.create_index(spec, name=name)
        assert len(list(raw.find().hint(bucket_spec))) == 1 and len(list(coll.find().hint(spec))) == 1
        hide(db, "c", selector)
        hint_is_refused(raw.find().hint(bucket_spec))
        hint_is_refused(coll.find().hint(spec))
        hide(db, "c", selector, hidden=False)
        assert len(list(raw.find().hint(bucket_spec))) == 1 and len(list(coll.find().hint(spec))) == 1
        coll.drop_index(name)

    coll.create_index(spec, name="hide3", hidden=True)
    hint_is_refused(raw.find().hint(bucket_spec))
    hint_is_refused(coll.find().hint(spec))
    hide(db, "c", spec, hidden=False)
    assert len(list(raw.find().hint(bucket_spec))) == 1 and len(list(coll.find().hint(spec))) == 1
    coll.drop_index("hide3")

    coll.create_index(spec, name="index_for_hint_test")
    assert len(list(raw.find().hint("index_for_hint_test"))) == 1
    assert len(list(coll.find().hint("index_for_hint_test"))) == 1
    assert len(list(raw.find().hint(bucket_spec))) == 1
    assert len(list(coll.find().hint(spec))) == 1
    coll.drop_index("index_for_hint_test")


def test_index_names_are_not_transformed_and_measurement_index_lifecycle(db):
    """timeseries_index.js (error handling): an index on a measurement field can be created, hidden and
    dropped by key pattern; dropping by a name that was never created (``mm_1``) is IndexNotFound (27)
    because names are passed through untransformed."""
    coll = make_ts(db, "c")
    insert_reply(db, "c", [dict(INDEX_DOC)])
    coll.create_index([("not_metadata", 1)])
    hide(db, "c", [("not_metadata", 1)])
    coll.drop_index([("not_metadata", 1)])
    assert command_fails(db, "dropIndexes", "c", index="mm_1").code == 27


BAD_INDEX_CASES = [
    ([("mm", 1)], {"unique": True}),
    ([("mm", 1)], {"expireAfterSeconds": 3600}),
    ([("mm", "text")], {}),
    ([("loc", "2dsphere_bucket")], {}),
    ([], {}),
    ([("$natural", 1)], {}),
    ([("$natural", -1)], {}),
    ([("$hint", "my_index_name")], {}),
]


@pytest.mark.parametrize(("key", "options"), BAD_INDEX_CASES, ids=[str(c) for c in BAD_INDEX_CASES])
def test_unsupported_index_specs_are_refused(db, key, options):
    """timeseries_index.js ``testCreateIndexFailed``: unique, TTL on the meta field, text,
    ``2dsphere_bucket`` given directly, ``{}``, and the hint keys ``$natural``/``$hint`` are refused
    with CannotCreateIndex (67) or InvalidOptions (72), and nothing is created."""
    make_ts(db, "c")
    insert_reply(db, "c", [dict(INDEX_DOC)])
    index = {"key": dict(key), "name": "testCreateIndex", **options}
    assert command_fails(db, "createIndexes", "c", indexes=[index]).code in (67, 72)
    assert "testCreateIndex" not in [ix["name"] for ix in db.c.list_indexes()]
    assert "testCreateIndex" not in [ix["name"] for ix in buckets(db, "c").list_indexes()]


def test_bucket_index_without_user_meaning_is_left_out_of_the_view(db):
    """timeseries_index.js: an index created directly on the buckets as ``{not_metadata: 1}`` is listed
    there (2 indexes with the default) but omitted from the view's listIndexes (only the default)."""
    coll = make_ts(db, "c")
    insert_reply(db, "c", [dict(INDEX_DOC)])
    buckets(db, "c").create_index([("not_metadata", 1)])
    assert len(list(buckets(db, "c").list_indexes())) == 2
    assert user_keys(coll) == [[("mm", 1), ("tm", 1)]]


FIELDS = ["tm", "mm", "mm.a", "mm.b.c", "x", "y", "z.w"]


def _unrelated(paths):
    return all(p == q or not (p.startswith(q + ".") or q.startswith(p + ".")) for p in paths for q in paths)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                HealthCheck.too_slow])
@given(fields=st.lists(st.sampled_from(FIELDS), min_size=1, max_size=3, unique=True).filter(_unrelated),
       directions=st.lists(st.sampled_from([1, -1]), min_size=3, max_size=3))
def test_any_ascending_descending_key_round_trips(db, fields, directions):
    """timeseries_index.js / timeseries_metric_index_compound.js, generalised: any compound key of 1-3
    time, meta(-subfield) and measurement fields with any directions is stored on the buckets with the
    translated key (meta -> ``meta``; time/measurement ``f: 1`` -> ``control.min.f, control.max.f``,
    ``f: -1`` -> ``control.max.f, control.min.f``, in the user's order), listed on the view with the
    user's key and generated name, usable as a hint by user key (all measurements come back), and
    dropped from both namespaces by user key."""
    spec = list(zip(fields, directions, strict=False))
    assume(spec != [("mm", 1), ("tm", 1)])  # the default index: creating it again is a no-op
    db.drop_collection("h")
    coll = make_ts(db, "h")
    insert_reply(db, "h", [{"tm": NOW, "mm": {"a": 1, "b": {"c": 2}}, "x": 1, "z": {"w": 3}},
                           {"tm": NOW, "mm": {"a": 2}, "y": 5}])
    name = coll.create_index(spec)
    assert name == "_".join(f"{f}_{d}" for f, d in spec)
    listed = {ix["name"]: list(ix["key"].items()) for ix in coll.list_indexes()}
    stored = {ix["name"]: list(ix["key"].items()) for ix in buckets(db, "h").list_indexes()}
    assert listed[name] == spec
    assert stored[name] == bucket_key(spec)
    assert len(list(coll.find().hint(spec))) == 2
    coll.drop_index(spec)
    assert set(listed) - {name} == {ix["name"] for ix in coll.list_indexes()}
    assert name not in {ix["name"] for ix in buckets(db, "h").list_indexes()}
    db.drop_collection("h")


# --------------------------------------------------------------------------------------------------
# timeseries_id_index.js


def test_id_index_on_the_buckets_collection(db):
    """timeseries_id_index.js (6.x/7.0 version): creating ``{_id: 1}`` on the buckets collection, also
    with ``clustered: true, unique: true``, succeeds (the buckets are clustered by ``_id``); passing
    ``clustered: true`` without ``unique`` is CannotCreateIndex (67)."""
    make_ts(db, "c", time_field="time", meta_field=None)
    db.command("createIndexes", "system.buckets.c", indexes=[{"key": {"_id": 1}, "name": "_id_"}])
    db.command("createIndexes", "system.buckets.c",
               indexes=[{"key": {"_id": 1}, "name": "_id_", "clustered": True, "unique": True}])
    error = command_fails(db, "createIndexes", "system.buckets.c",
                          indexes=[{"key": {"_id": 1}, "name": "_id_", "clustered": True}])
    assert error.code == 67


# --------------------------------------------------------------------------------------------------
# timeseries_sparse_index.js

SPARSE_DOCS = [
    {"_id": 0, "tm": NOW, "mm": {"tag": "a", "loc": {"type": "Point", "coordinates": [3, 3]}}, "x": 1},
    {"_id": 1, "tm": NOW, "mm": {"tag": "b"}, "y": 1},
    {"_id": 2, "tm": NOW, "mm": {"tag": "c"}, "x": 1, "y": 1},
]

SPARSE_OK = [
    ([("mm.tag", 1), ("mm.loc", "2dsphere")], [("meta.tag", 1), ("meta.loc", "2dsphere")], 1),
    ([("mm.tag", 1)], [("meta.tag", 1)], 3),
    ([("mm.abc", 1)], [("meta.abc", 1)], 0),
    ([("tm", 1), ("mm.tag", 1)], [("control.min.tm", 1), ("control.max.tm", 1), ("meta.tag", 1)], 3),
    ([("mm.abc", 1), ("tm", -1)], [("meta.abc", 1), ("control.max.tm", -1), ("control.min.tm", -1)], 3),
]


def _sparse_setup(db):
    coll = make_ts(db, "c")
    before = (len(list(coll.list_indexes())), len(list(buckets(db, "c").list_indexes())))
    insert_reply(db, "c", [dict(d) for d in SPARSE_DOCS])
    return coll, before


@pytest.mark.parametrize(("key", "bucket_spec", "count"), SPARSE_OK, ids=[str(c[0]) for c in SPARSE_OK])
def test_sparse_index_on_time_and_meta(db, key, bucket_spec, count):
    """timeseries_sparse_index.js: sparse indexes whose fields are the time and meta fields are
    created (one more index on each namespace, listed last with the user key and the bucket key); a
    hint by the index name returns only indexed buckets/measurements (1 with a location, all 3 with a
    tag or with the time, none for a missing meta subfield) on both namespaces; hidden, the hint is
    BadValue on both; the index is dropped by its user key pattern."""
    coll, (n_user, n_buckets) = _sparse_setup(db)
    coll.create_index(key, sparse=True)
    user, stored = list(coll.list_indexes()), list(buckets(db, "c").list_indexes())
    assert (len(user), len(stored)) == (n_user + 1, n_buckets + 1)
    assert list(user[-1]["key"].items()) == key
    assert list(stored[-1]["key"].items()) == bucket_spec
    name = stored[-1]["name"]
    assert len(list(buckets(db, "c").find().hint(name))) == count
    assert len(list(coll.find().hint(name))) == count
    hide(db, "c", name)
    hint_is_refused(buckets(db, "c").find().hint(name))
    hint_is_refused(coll.find().hint(name))
    hide(db, "c", name, hidden=False)
    coll.drop_index(key)
    assert len(list(coll.list_indexes())) == n_user


SPARSE_REFUSED = [
    [("x", 1)], [("y", -1)], [("x", 1), ("y", 1)], [("z", 1)],
    [("x", 1), ("mm.loc", "2dsphere")], [("tm", 1), ("x", 1)],
]


@pytest.mark.parametrize("key", SPARSE_REFUSED, ids=[str(k) for k in SPARSE_REFUSED])
def test_sparse_index_involving_a_measurement_is_invalid_options(db, key):
    """timeseries_sparse_index.js: a sparse index on a measurement field, alone or compound with the
    meta or time field, is InvalidOptions (72)."""
    _sparse_setup(db)
    error = command_fails(db, "createIndexes", "c", indexes=[{"key": dict(key), "name": "s", "sparse": True}])
    assert error.code == 72


# --------------------------------------------------------------------------------------------------
# timeseries_metric_index_ascending_descending.js

METRIC_DOCS = [
    {"_id": 0, "tm": NOW, "mm": {"tag": "a"}, "x": 1},
    {"_id": 1, "tm": NOW, "mm": {"tag": "b"}, "x": 2},
    {"_id": 2, "tm": NOW, "mm": {"tag": "c"}, "x.y": 3},
    {"_id": 3, "tm": NOW, "mm": {"tag": "d"}, "x": {"y": 4}},
]

METRIC_CASES = [
    ([("x", 1)], [("control.min.x", 1), ("control.max.x", 1)]),
    ([("x", -1)], [("control.max.x", -1), ("control.min.x", -1)]),
    ([("x.y", 1)], [("control.min.x.y", 1), ("control.max.x.y", 1)]),
]


@pytest.mark.parametrize(("key", "bucket_spec"), METRIC_CASES, ids=[str(c[0]) for c in METRIC_CASES])
def test_measurement_index_ascending_descending(db, key, bucket_spec):
    """timeseries_metric_index_ascending_descending.js: an index on a measurement field (also dotted)
    built over 4 one-measurement buckets adds one index to each namespace (listed last: user key on the
    view, ``control.min/max`` pair on the buckets); a hint by its name returns all 4 buckets and all 4
    measurements; hidden, the hint is BadValue on both; the index drops by user key or by name."""
    coll = make_ts(db, "c")
    n_user, n_buckets = len(list(coll.list_indexes())), len(list(buckets(db, "c").list_indexes()))
    for doc in METRIC_DOCS:
        insert_reply(db, "c", [dict(doc)])
    coll.create_index(key)
    user, stored = list(coll.list_indexes()), list(buckets(db, "c").list_indexes())
    assert (len(user), len(stored)) == (n_user + 1, n_buckets + 1)
    assert list(user[-1]["key"].items()) == key
    assert list(stored[-1]["key"].items()) == bucket_spec
    name = stored[-1]["name"]
    assert len(list(buckets(db, "c").find().hint(name))) == 4
    assert len(list(coll.find().hint(name))) == 4
    hide(db, "c", name)
    hint_is_refused(buckets(db, "c").find().hint(name))
    hint_is_refused(coll.find().hint(name))
    hide(db, "c", name, hidden=False)
    coll.drop_index(name if key != [("x", 1)] else key)
    assert len(list(coll.list_indexes())) == n_user


@pytest.mark.parametrize("value", ["abc", {"y": 1}, True], ids=["string", "object", "bool"])
def test_measurement_index_with_a_non_numeric_value_is_cannot_create_index(db, value):
    """timeseries_metric_index_ascending_descending.js: ``{x: "abc"}``, ``{x: {y: 1}}`` and
    ``{x: true}`` are CannotCreateIndex (67)."""
    make_ts(db, "c")
    assert command_fails(db, "createIndexes", "c", indexes=[{"key": {"x": value}, "name": "bad"}]).code == 67


@pytest.mark.parametrize("doc", [{"x": {"y": [True]}}, {"x": [{"y": False}]}], ids=["array-leaf", "array-parent"])
def test_array_under_an_indexed_dotted_measurement_is_refused(db, doc):
    """timeseries_metric_index_ascending_descending.js: with an index on ``x.y``, inserting a
    measurement where ``x.y`` goes through an array fails with code 5930501."""
    coll = make_ts(db, "c")
    coll.create_index("x.y")
    reply = insert_reply(db, "c", [{"_id": 4, "tm": NOW, "mm": {"tag": "d"}, **doc}])
    assert reply["n"] == 0 and reply["writeErrors"][0]["code"] == 5930501
    coll.drop_index([("x.y", 1)])


RAW_BUCKET_KEYS = [
    [("control.min.x.y", 1)],
    [("control.min.x.y", 1), ("control.min.y.x", 1)],
    [("control.max.x.y", 1)],
    [("control.max.x.y", 1), ("control.max.y.x", 1)],
    [("control.max.x.y", 1), ("control.min.x.y", 1)],
    [("control.min.x.y", -1), ("control.max.x.y", 1)],
    [("control.min.x.y", -1), ("control.max.x.y", -1)],
    [("control.max.x.y", 1), ("control.min.x.y", -1)],
    [("data.x", 1)],
    [("control.min.x.y", 1), ("data.x", 1)],
    [("data.x", 1), ("control.min.x.y", 1)],
    [("control.min.x.y", 1), ("control.max.x.y", 1), ("data.x", 1)],
    [("control.max.x.y", -1), ("control.min.x.y", -1), ("data.x", 1)],
]


def test_bucket_indexes_that_map_to_no_user_index_are_omitted(db):
    """timeseries_metric_index_ascending_descending.js: 13 indexes created directly on the buckets
    collection over ``control.min/max`` and ``data`` paths that are not an exact asc/desc pair (or have
    a trailing ``data`` field) are all built (14 with the default index) while the view lists only the
    default index, and listing does not fail."""
    coll = make_ts(db, "c")
    for doc in METRIC_DOCS:
        insert_reply(db, "c", [dict(doc)])
    for key in RAW_BUCKET_KEYS:
        buckets(db, "c").create_index(key)
    assert len(list(buckets(db, "c").list_indexes())) == 14
    assert user_keys(coll) == [[("mm", 1), ("tm", 1)]]


# --------------------------------------------------------------------------------------------------
# timeseries_metric_index_compound.js

COMPOUND_DOCS = [
    {"_id": 0, "tm": NOW, "mm": {"tag": "a", "r": 1, "loc": {"type": "Point", "coordinates": [3, 3]}}, "x": 1,
     "z": True},
    {"_id": 1, "tm": NOW, "mm": {"tag": "b", "r": {"s": True}, "loc2": [3, 3]}, "x": 2, "z": False},
    {"_id": 2, "tm": NOW, "mm": {"tag": "c", "r.s": "val", "loc": {"type": "Point", "coordinates": [3, 2]}},
     "a": [1, 2], "x.y": 3, "z": True},
    {"_id": 3, "tm": NOW, "mm": {"tag": "d", "r": "val", "loc2": [1, 0]}, "x": {"y": 4}, "z": False},
]

MIN_X, MAX_X = ("control.min.x", 1), ("control.max.x", 1)
COMPOUND_CASES = [
    ([("mm.tag", 1), ("mm.r", 1)], [("meta.tag", 1), ("meta.r", 1)], 4),
    ([("mm.tag", 1), ("mm.loc", "2dsphere")], [("meta.tag", 1), ("meta.loc", "2dsphere")], 2),
    ([("mm.loc", "2dsphere"), ("mm.tag", 1)], [("meta.loc", "2dsphere"), ("meta.tag", 1)], 2),
    ([("x", 1), ("z", 1)], [MIN_X, MAX_X, ("control.min.z", 1), ("control.max.z", 1)], 4),
    ([("x", -1), ("z", -1)], [("control.max.x", -1), ("control.min.x", -1), ("control.max.z", -1),
                              ("control.min.z", -1)], 4),
    ([("x", 1), ("z", -1)], [MIN_X, MAX_X, ("control.max.z", -1), ("control.min.z", -1)], 4),
    ([("x", -1), ("z", 1)], [("control.max.x", -1), ("control.min.x", -1), ("control.min.z", 1),
                             ("control.max.z", 1)], 4),
    ([("mm.r.s", 1), ("x", 1)], [("meta.r.s", 1), MIN_X, MAX_X], 4),
    ([("mm.r.s", 1), ("x", -1)], [("meta.r.s", 1), ("control.max.x", -1), ("control.min.x", -1)], 4),
    ([("x", 1), ("mm.r.s", 1)], [MIN_X, MAX_X, ("meta.r.s", 1)], 4),
    ([("x", -1), ("mm.r.s", 1)], [("control.max.x", -1), ("control.min.x", -1), ("meta.r.s", 1)], 4),
    ([("x", 1), ("mm.loc", "2dsphere"), ("z", -1)],
     [MIN_X, MAX_X, ("meta.loc", "2dsphere"), ("control.max.z", -1), ("control.min.z", -1)], 2),
    ([("mm.loc2", "2d"), ("x", 1), ("z", -1)],
     [("meta.loc2", "2d"), MIN_X, MAX_X, ("control.max.z", -1), ("control.min.z", -1)], 2),
]


@pytest.mark.parametrize(("key", "bucket_spec", "count"), COMPOUND_CASES,
                         ids=[str(c[0]) for c in COMPOUND_CASES])
def test_compound_meta_and_measurement_indexes(db, key, bucket_spec, count):
    """timeseries_metric_index_compound.js: compound indexes over meta subfields (with 2d/2dsphere) and
    measurement fields in any direction and order are stored with the element-by-element translated key
    and listed with the user key; a hint by name returns every bucket/measurement (4), or only those
    with the geo field (2); hidden, the hint is BadValue on both; the index drops by user key."""
    coll = make_ts(db, "c")
    n_user, n_buckets = len(list(coll.list_indexes())), len(list(buckets(db, "c").list_indexes()))
    insert_reply(db, "c", [dict(d) for d in COMPOUND_DOCS])
    coll.create_index(key)
    user, stored = list(coll.list_indexes()), list(buckets(db, "c").list_indexes())
    assert (len(user), len(stored)) == (n_user + 1, n_buckets + 1)
    assert list(user[-1]["key"].items()) == key
    assert list(stored[-1]["key"].items()) == bucket_spec
    name = stored[-1]["name"]
    assert len(list(buckets(db, "c").find().hint(name))) == count
    assert len(list(coll.find().hint(name))) == count
    hide(db, "c", name)
    hint_is_refused(buckets(db, "c").find().hint(name))
    hint_is_refused(coll.find().hint(name))
    hide(db, "c", name, hidden=False)
    coll.drop_index(key)
    assert len(list(coll.list_indexes())) == n_user


@pytest.mark.parametrize("key", [{"x": 1, "z": "abc"}, {"x": 1, "z": {"y": 1}}, {"x": True, "z": 1}],
                         ids=["string", "object", "bool"])
def test_compound_with_a_bad_measurement_value_is_cannot_create_index(db, key):
    """timeseries_metric_index_compound.js ``testBadIndex``: a compound key whose measurement part is
    not ±1 is CannotCreateIndex (67)."""
    make_ts(db, "c")
    assert command_fails(db, "createIndexes", "c", indexes=[{"key": key, "name": "bad"}]).code == 67


@pytest.mark.parametrize("key", [[("x", 1), ("a", 1)], [("mm.loc", "2dsphere"), ("a", 1)],
                                 [("mm.loc2", "2d"), ("a", 1)], [("mm.r", "hashed"), ("a", 1)]],
                         ids=["asc", "2dsphere", "2d", "hashed"])
def test_array_valued_measurement_under_a_compound_index_is_refused(db, key):
    """timeseries_metric_index_compound.js ``testBadIndexForData``: with a compound index including the
    measurement ``a``, an ordered insert of the 4 documents stops at the one whose ``a`` is an array
    (code 5930501)."""
    coll = make_ts(db, "c")
    coll.create_index(key)
    reply = insert_reply(db, "c", [dict(d) for d in COMPOUND_DOCS])
    assert [e["code"] for e in reply["writeErrors"]] == [5930501]
    assert reply["writeErrors"][0]["index"] == 2


# --------------------------------------------------------------------------------------------------
# timeseries_special_indexes_metadata.js


def _special_setup(db):
    coll = make_ts(db, "c")
    assert "system.buckets.c" in db.list_collection_names()
    return coll, buckets(db, "c")


def _hide_unhide_list(db, coll, raw, spec, bucket_spec, user_query=None, bucket_query=None):
    """The jstest's ``hideUnhideListIndexes``: hints work on both namespaces, listIndexes on the view
    (ns = the view) holds exactly the default index and ``spec``, hiding makes hints BadValue while the
    index stays listed, and unhiding restores the hints."""
    user_query, bucket_query = user_query or {}, bucket_query or {}
    assert list(coll.find(user_query).hint(spec))
    assert list(raw.find(bucket_query).hint(bucket_spec))

    def listed():
        cursor = db.command("listIndexes", "c")["cursor"]
        assert cursor["ns"] == f"{db.name}.c"
        return sorted(keys(cursor["firstBatch"]), key=repr)

    expected = sorted([[("mm", 1), ("tm", 1)], spec], key=repr)
    assert listed() == expected
    hide(db, "c", spec)
    hint_is_refused(coll.find().hint(spec))
    hint_is_refused(raw.find().hint(bucket_spec))
    assert listed() == expected
    hide(db, "c", spec, hidden=False)
    assert list(coll.find(user_query).hint(spec))
    assert list(raw.find(bucket_query).hint(bucket_spec))


def test_special_sparse_meta_index(db):
    """timeseries_special_indexes_metadata.js (sparse): a sparse index on ``mm.tag2`` indexes only the
    bucket whose meta has ``tag2``: hinted reads return 1 measurement / 1 bucket of 2; hide/unhide and
    listIndexes behave as for any index."""
    coll, raw = _special_setup(db)
    coll.create_index([("mm.tag2", 1)], sparse=True)
    insert_reply(db, "c", [{"_id": 0, "tm": NOW, "mm": {"tag1": "a", "tag2": "b"}}])
    insert_reply(db, "c", [{"_id": 1, "tm": NOW, "mm": {"tag1": "c"}}])
    _hide_unhide_list(db, coll, raw, [("mm.tag2", 1)], [("meta.tag2", 1)])
    assert len(list(coll.find().hint([("mm.tag2", 1)]))) == 1
    assert len(list(raw.find().hint([("meta.tag2", 1)]))) == 1
    assert len(list(coll.find())) == 2


def test_special_multikey_meta_index(db):
    """timeseries_special_indexes_metadata.js (multikey): an index on ``mm.a`` accepts a meta holding
    an array of objects and is usable, hideable and listed like any other."""
    coll, raw = _special_setup(db)
    coll.create_index([("mm.a", 1)])
    insert_reply(db, "c", [{"_id": 0, "tm": NOW, "mm": {"a": [{"zip": "01234", "town": "nyc"},
                                                              {"zip": "43210", "town": "sf"}]}}])
    _hide_unhide_list(db, coll, raw, [("mm.a", 1)], [("meta.a", 1)])


def test_special_2d_meta_index(db):
    """timeseries_special_indexes_metadata.js (2d): with ``{mm: "2d"}``, ``$near`` on the buckets'
    ``meta`` finds the bucket, ``$geoNear`` with ``key: mm`` on the view finds the measurement, and
    hide/unhide/list behave as for any index."""
    coll, raw = _special_setup(db)
    coll.create_index([("mm", "2d")])
    insert_reply(db, "c", [{"_id": 0, "tm": NOW, "mm": [40, 40]}])
    assert len(list(raw.find({"meta": {"$near": [0, 0]}}))) == 1
    near = {"$geoNear": {"near": [40.4, -70.4], "key": "mm", "distanceField": "dist", "spherical": True}}
    assert len(list(coll.aggregate([near, {"$limit": 1}]))) == 1
    _hide_unhide_list(db, coll, raw, [("mm", "2d")], [("meta", "2d")])


def test_special_2dsphere_meta_index(db):
    """timeseries_special_indexes_metadata.js (2dsphere): with ``{mm: "2dsphere"}`` and a GeoJSON
    point as meta, ``$geoNear`` with ``key: mm`` on the view finds the measurement; hide/unhide/list
    behave as for any index."""
    coll, raw = _special_setup(db)
    coll.create_index([("mm", "2dsphere")])
    insert_reply(db, "c", [{"_id": 0, "tm": NOW, "mm": {"type": "Point", "coordinates": [40, -70]}}])
    near = {"$geoNear": {"near": {"type": "Point", "coordinates": [40.4, -70.4]}, "key": "mm",
                         "distanceField": "dist", "spherical": True}}
    assert len(list(coll.aggregate([near, {"$limit": 1}]))) == 1
    _hide_unhide_list(db, coll, raw, [("mm", "2dsphere")], [("meta", "2dsphere")])


GEO_ON_BUCKETS = [
    ("2d", [40, 40], [40.4, -70.4]),
    ("2dsphere", {"type": "Point", "coordinates": [40, -70]}, {"type": "Point", "coordinates": [40.4, -70.4]}),
]


@pytest.mark.parametrize(("index", "meta", "near"), GEO_ON_BUCKETS, ids=[c[0] for c in GEO_ON_BUCKETS])
def test_geo_near_directly_on_the_buckets_collection(db, index, meta, near):
    """timeseries_special_indexes_metadata.js (2d and 2dsphere): ``aggregate`` on
    ``system.buckets.<c>`` with ``[{$geoNear: {near, distanceField, spherical: true}}, {$limit: 1}]``
    uses the meta geo index of the buckets collection and returns the one bucket."""
    coll, raw = _special_setup(db)
    coll.create_index([("mm", index)])
    insert_reply(db, "c", [{"_id": 0, "tm": NOW, "mm": meta}])
    stage = {"$geoNear": {"near": near, "distanceField": "dist", "spherical": True}}
    assert len(list(raw.aggregate([stage, {"$limit": 1}]))) == 1


def test_special_wildcard_meta_index(db):
    """timeseries_special_indexes_metadata.js (wildcard): ``{"mm.$**": 1}`` answers hinted queries on
    meta subfields on both namespaces (2 of 3 with ``c.d == 1``), hides/unhides/lists like any index,
    and after a meta with an array of objects, a hinted query on ``mm.d.zip`` finds it."""
    coll, raw = _special_setup(db)
    coll.create_index([("mm.$**", 1)])
    insert_reply(db, "c", [{"_id": 0, "tm": NOW, "mm": {"a": 1, "b": 1, "c": {"d": 1, "e": 1}}}])
    insert_reply(db, "c", [{"_id": 1, "tm": NOW, "mm": {"a": 2, "b": 2, "c": {"d": 1, "e": 2}}}])
    insert_reply(db, "c", [{"_id": 0, "tm": NOW, "mm": {"a": 3, "b": 3, "c": {"d": 3, "e": 3}}}])
    assert len(list(raw.find({"meta.c.d": 1}).hint([("meta.$**", 1)]))) == 2
    assert len(list(coll.find({"mm.c.d": 1}).hint([("mm.$**", 1)]))) == 2
    _hide_unhide_list(db, coll, raw, [("mm.$**", 1)], [("meta.$**", 1)], {"mm.c.d": 1}, {"meta.c.d": 1})
    insert_reply(db, "c", [{"_id": 0, "tm": NOW, "mm": {"a": 3, "b": 3, "c": {"d": 3, "e": 3},
                                                        "d": [{"zip": "01234", "town": "nyc"},
                                                              {"zip": "43210", "town": "sf"}]}}])
    assert len(list(coll.find({"mm.d.zip": "01234"}).hint([("mm.$**", 1)]))) == 1


# --------------------------------------------------------------------------------------------------
# timeseries_user_system_buckets.js

TS1 = {"timeField": "timestamp", "metaField": "metadata"}
TS2 = {"timeField": "timestamp", "metaField": "metadata2"}
COLL, BUCKETS = "coll", "system.buckets.coll"

USER_BUCKETS_CASES = [
    # (label, [(namespace, timeseries options or None, expected error code or None), ...])
    ("standard/standard", [(COLL, None, None), (COLL, None, None)]),
    ("standard/timeseries", [(COLL, None, None), (COLL, TS1, 48)]),
    ("standard/bucket", [(COLL, None, None), (BUCKETS, TS1, None)]),
    ("timeseries/standard", [(COLL, TS1, None), (COLL, None, 48)]),
    ("timeseries/timeseries-other-options", [(COLL, TS1, None), (COLL, TS2, 48)]),
    ("timeseries/bucket-other-options", [(COLL, TS1, None), (BUCKETS, TS2, 48)]),
    ("bucket/standard", [(BUCKETS, TS1, None), (COLL, None, None)]),
    ("bucket/timeseries-other-options", [(BUCKETS, TS1, None), (COLL, TS2, 48)]),
    ("bucket/bucket-other-options", [(BUCKETS, TS1, None), (BUCKETS, TS2, 48)]),
]


@pytest.mark.parametrize("steps", [c[1] for c in USER_BUCKETS_CASES], ids=[c[0] for c in USER_BUCKETS_CASES])
def test_creating_bucket_namespaces_next_to_other_collections(db, steps):
    """timeseries_user_system_buckets.js (the cases that run on a 7.0 standalone): creating a
    ``system.buckets.coll`` with time-series options next to an ordinary ``coll`` (either order) works;
    creating over an existing time-series collection or buckets namespace with other options, or a
    time-series collection over an ordinary one (or the reverse), is NamespaceExists (48); an ordinary
    collection created twice is a no-op."""
    for name, options, code in steps:
        kwargs = {"timeseries": options} if options else {}
        if code is None:
            assert db.command("create", name, **kwargs)["ok"] == 1
        else:
            assert command_fails(db, "create", name, **kwargs).code == code


# --------------------------------------------------------------------------------------------------
# timeseries_field_parsed_as_bson.js

ODD_TIME_FIELD = "badInput']}}}}}}"


def test_time_field_name_is_carried_as_bson_in_the_validator(db):
    """timeseries_field_parsed_as_bson.js: a time field named ``badInput']}}}}}}`` ends up verbatim in
    the buckets collection's ``$jsonSchema`` validator (the 7.0, version-1 bucket schema: required
    ``_id/control/data``, ``control.{version,min,max}`` with the time field required as a date, optional
    ``closed``); a measurement inserted with it reads back unchanged; time fields ``\\`` and ``\\\\``
    are accepted too."""
    db.create_collection("c", timeseries={"timeField": ODD_TIME_FIELD})
    bound = {"bsonType": "object", "required": [ODD_TIME_FIELD],
             "properties": {ODD_TIME_FIELD: {"bsonType": "date"}}}
    assert entry(db, "system.buckets.c")["options"]["validator"] == {"$jsonSchema": {
        "bsonType": "object",
        "required": ["_id", "control", "data"],
        "properties": {
            "_id": {"bsonType": "objectId"},
            "control": {
                "bsonType": "object",
                "required": ["version", "min", "max"],
                "properties": {"version": {"bsonType": "number"}, "min": bound, "max": bound,
                               "closed": {"bsonType": "bool"}},
            },
            "data": {"bsonType": "object"},
            "meta": {},
        },
        "additionalProperties": False,
    }}
    doc = {"a": 1, ODD_TIME_FIELD: dt.datetime(2021, 1, 1)}
    insert_reply(db, "c", [dict(doc)])
    assert list(db.c.aggregate([{"$match": {}}, {"$project": {"_id": 0}}])) == [doc]
    for time_field in ("\\", "\\\\"):
        db.drop_collection("c")
        assert db.command("create", "c", timeseries={"timeField": time_field})["ok"] == 1


# --------------------------------------------------------------------------------------------------
# bucket_granularity.js


def _insert_times(coll, *times):
    for text in times:
        coll.insert_one({"t": iso(text)})


def _bucket_count(db, name):
    return buckets(db, name).count_documents({})


GRANULARITY_CASES = {
    # granularity: (times that share one bucket, last time still in it, first time of a new bucket)
    "seconds": (["2021-04-22T20:00:00.000", "2021-04-22T20:00:03.000", "2021-04-22T20:00:59.999"],
                "2021-04-22T20:59:59.999", "2021-04-22T21:00:00.000"),
    "minutes": (["2021-04-22T20:00:00.000", "2021-04-22T20:22:02.000", "2021-04-22T20:59:59.999"],
                "2021-04-23T19:59:59.999", "2021-04-23T20:00:00.000"),
    "hours": (["2021-04-22T00:00:00.000", "2021-04-22T20:11:03.000", "2021-04-22T23:59:59.999"],
              "2021-05-21T23:59:59.999", "2021-05-22T00:00:00.000"),
}


@pytest.mark.parametrize("granularity", list(GRANULARITY_CASES))
def test_granularity_sets_the_bucket_span(db, granularity):
    """bucket_granularity.js: with granularity seconds/minutes/hours, measurements up to just under
    1 hour / 1 day / 30 days after the rounded bucket start share one bucket; one at exactly that
    span opens a second bucket."""
    same, last_inside, first_outside = GRANULARITY_CASES[granularity]
    db.create_collection("g", timeseries={"timeField": "t", "granularity": granularity})
    _insert_times(db.g, *same)
    assert _bucket_count(db, "g") == 1
    _insert_times(db.g, last_inside)
    assert _bucket_count(db, "g") == 1
    _insert_times(db.g, first_outside)
    assert _bucket_count(db, "g") == 2


def test_granularity_seconds_to_minutes_widens_the_span(db):
    """bucket_granularity.js testIncreasingSecondsToMinutes: after two "seconds" buckets (20:00 and
    21:00), collMod to "minutes" lets measurements up to 23 h later join the open 21:00 bucket (still
    2 buckets); one exactly a day after it opens a third."""
    db.create_collection("g", timeseries={"timeField": "t", "granularity": "seconds"})
    _insert_times(db.g, "2021-04-22T20:00:00.000", "2021-04-22T20:00:03.000", "2021-04-22T20:00:59.999",
                  "2021-04-22T20:59:59.999", "2021-04-22T21:00:00.000")
    assert _bucket_count(db, "g") == 2
    db.command("collMod", "g", timeseries={"granularity": "minutes"})
    _insert_times(db.g, "2021-04-23T20:00:00.000", "2021-04-23T20:22:02.000", "2021-04-23T20:59:59.999")
    assert _bucket_count(db, "g") == 2
    _insert_times(db.g, "2021-04-23T21:00:00.000")
    assert _bucket_count(db, "g") == 3


def test_granularity_minutes_to_hours_widens_the_span(db):
    """bucket_granularity.js testIncreasingMinutesToHours: after two "minutes" buckets, collMod to
    "hours" lets measurements up to just under 30 days after the open bucket's start join it; one 30
    days and 1 ms after opens a third."""
    db.create_collection("g", timeseries={"timeField": "t", "granularity": "minutes"})
    _insert_times(db.g, "2021-04-22T20:00:00.000", "2021-04-22T20:22:02.000", "2021-04-22T20:59:59.999",
                  "2021-04-23T19:59:59.999", "2021-04-23T20:00:00.000")
    assert _bucket_count(db, "g") == 2
    db.command("collMod", "g", timeseries={"granularity": "hours"})
    _insert_times(db.g, "2021-05-23T00:00:00.000", "2021-05-23T18:11:03.000", "2021-05-23T19:59:59.999")
    assert _bucket_count(db, "g") == 2
    _insert_times(db.g, "2021-05-23T20:00:00.001")
    assert _bucket_count(db, "g") == 3


def test_granularity_cannot_decrease(db):
    """bucket_granularity.js testReducingGranularityFails: minutes -> seconds fails, minutes -> hours
    works, then hours -> minutes and hours -> seconds fail."""
    db.create_collection("g", timeseries={"timeField": "t", "granularity": "minutes"})
    command_fails(db, "collMod", "g", timeseries={"granularity": "seconds"})
    db.command("collMod", "g", timeseries={"granularity": "hours"})
    command_fails(db, "collMod", "g", timeseries={"granularity": "minutes"})
    command_fails(db, "collMod", "g", timeseries={"granularity": "seconds"})
    assert entry(db, "g")["options"]["timeseries"]["granularity"] == "hours"


# --------------------------------------------------------------------------------------------------
# bucket_span_and_rounding_seconds.js


def test_custom_span_and_rounding_are_listed_on_view_and_buckets(db):
    """bucket_span_and_rounding_seconds.js: ``{bucketRoundingSeconds: 4000, bucketMaxSpanSeconds:
    4000}`` is accepted and both listCollections entries (view and buckets) echo the two values (and no
    granularity)."""
    db.create_collection("t", timeseries={"timeField": "time", "bucketRoundingSeconds": 4000,
                                          "bucketMaxSpanSeconds": 4000})
    for name in ("t", "system.buckets.t"):
        options = entry(db, name)["options"]["timeseries"]
        assert (options["bucketRoundingSeconds"], options["bucketMaxSpanSeconds"]) == (4000, 4000)
        assert "granularity" not in options


PRESET_CASES = [(None, False)] + [(g, p) for g in SPAN for p in (False, True)]


@pytest.mark.parametrize(("granularity", "give_presets"), PRESET_CASES,
                         ids=[f"{g or 'none'}-{'presets' if p else 'alone'}" for g, p in PRESET_CASES])
def test_granularity_presets_are_not_stored_as_rounding(db, granularity, give_presets):
    """bucket_span_and_rounding_seconds.js (7.0 version): with a granularity, alone or together with
    its preset ``bucketRoundingSeconds`` and ``bucketMaxSpanSeconds``, or with only the time field, the
    creation works and both listCollections entries show the preset span and no
    ``bucketRoundingSeconds``."""
    options = {"timeField": "time"}
    if granularity is not None:
        options["granularity"] = granularity
        if give_presets:
            options.update(bucketRoundingSeconds=ROUNDING[granularity], bucketMaxSpanSeconds=SPAN[granularity])
    db.create_collection("t", timeseries=options)
    for name in ("t", "system.buckets.t"):
        listed = entry(db, name)["options"]["timeseries"]
        assert "bucketRoundingSeconds" not in listed
        assert listed["bucketMaxSpanSeconds"] == SPAN[granularity or "seconds"]
        assert listed["granularity"] == (granularity or "seconds")


INVALID_SECONDS = [
    ({"bucketRoundingSeconds": 4000}, 72),
    ({"bucketMaxSpanSeconds": 4000}, 72),
    ({"bucketMaxSpanSeconds": 3600}, 72),
    ({"bucketRoundingSeconds": 100, "bucketMaxSpanSeconds": 50}, 72),
    ({"bucketRoundingSeconds": -1, "bucketMaxSpanSeconds": -1}, None),
    ({"granularity": "minutes", "bucketRoundingSeconds": 4000, "bucketMaxSpanSeconds": 4000}, 72),
    ({"granularity": "hours", "bucketRoundingSeconds": 4000, "bucketMaxSpanSeconds": 4000}, 72),
]


@pytest.mark.parametrize(("options", "code"), INVALID_SECONDS, ids=[str(c[0]) for c in INVALID_SECONDS])
def test_invalid_bucketing_seconds_fail_and_create_nothing(db, options, code):
    """bucket_span_and_rounding_seconds.js ``verifyCreateCommandFails``: one of the two seconds
    options alone, unequal values, negative values, or custom values next to a granularity fail
    (InvalidOptions where the jstest names it) and leave neither the view nor the buckets behind."""
    error = command_fails(db, "create", "t", timeseries={"timeField": "time", **options})
    if code is not None:
        assert error.code == code
    names = set(all_entries(db))
    assert "t" not in names and "system.buckets.t" not in names


_SECONDS_VALUES = st.one_of(st.none(), st.sampled_from(sorted(set(SPAN.values()) | set(ROUNDING.values()))),
                            st.integers(min_value=-2, max_value=MAX_BUCKETING_SECONDS + 2),
                            st.sampled_from([0, 1, MAX_BUCKETING_SECONDS, MAX_BUCKETING_SECONDS + 1]))


def _expected_create(granularity, span, rounding):
    """MongoDB 7.0's rules (timeseries_options.cpp, 6.3+): (ok, stored options) or (error, codes)."""
    given_values = [v for v in (span, rounding) if v is not None]
    if any(v < 1 or v > MAX_BUCKETING_SECONDS for v in given_values):
        return "error", OUT_OF_RANGE_CODES
    if granularity is not None:
        if span not in (None, SPAN[granularity]) or rounding not in (None, ROUNDING[granularity]):
            return "error", {72}
        return "ok", {"timeField": "time", "granularity": granularity, "bucketMaxSpanSeconds": SPAN[granularity]}
    if span is None and rounding is None:
        return "ok", {"timeField": "time", "granularity": "seconds", "bucketMaxSpanSeconds": 3600}
    if span is None or rounding is None or span != rounding:
        return "error", {72}
    return "ok", {"timeField": "time", "bucketMaxSpanSeconds": span, "bucketRoundingSeconds": rounding}


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                HealthCheck.too_slow])
@given(granularity=st.sampled_from([None, "seconds", "minutes", "hours"]), span=_SECONDS_VALUES,
       rounding=_SECONDS_VALUES, same=st.booleans())
def test_any_bucketing_options_follow_the_7_0_rules(db, granularity, span, rounding, same):
    """bucket_span_and_rounding_seconds.js, generalised: for any combination of granularity,
    ``bucketMaxSpanSeconds`` and ``bucketRoundingSeconds`` (presets, equal or unequal custom values,
    0, negative, the 365-day limit and one above), ``create`` succeeds exactly when the 7.0 rules allow
    it and then both listCollections entries hold the stored options; otherwise it fails with 72 (or
    51024/BadValue when a value is out of 1..31536000) and creates nothing."""
    if same:
        rounding = span
    db.drop_collection("t")
    options = {"timeField": "time"}
    for key, value in (("granularity", granularity), ("bucketMaxSpanSeconds", span),
                       ("bucketRoundingSeconds", rounding)):
        if value is not None:
            options[key] = value
    outcome, detail = _expected_create(granularity, span, rounding)
    if outcome == "ok":
        db.command("create", "t", timeseries=options)
        assert entry(db, "t")["options"]["timeseries"] == detail
        assert entry(db, "system.buckets.t")["options"]["timeseries"] == detail
        db.drop_collection("t")
    else:
        assert command_fails(db, "create", "t", timeseries=options).code in detail, options
        assert entry(db, "t") is None and entry(db, "system.buckets.t") is None


# --------------------------------------------------------------------------------------------------
# bucket_timestamp_rounding.js

ROUNDING_CASES = {
    # granularity: (first, earlier but after the rounding point, last inside the span, rounded start, new bucket)
    "seconds": ("2021-04-22T20:10:14.134", "2021-04-22T20:10:05.000", "2021-04-22T21:09:59.999",
                "2021-04-22T20:10:00.000", "2021-04-22T21:10:00.000"),
    "minutes": ("2021-04-22T20:10:14.134", "2021-04-22T20:05:00.000", "2021-04-23T19:59:59.999",
                "2021-04-22T20:00:00.000", "2021-04-23T20:00:00.000"),
    "hours": ("2021-04-22T20:10:14.134", "2021-04-22T10:00:00.000", "2021-05-21T23:59:59.999",
              "2021-04-22T00:00:00.000", "2021-05-23T00:00:00.000"),
}


def _sorted_buckets(db, name):
    return list(buckets(db, name).find().sort("_id", 1))


def _assert_bucket_start(bucket, start):
    assert bucket["control"]["min"]["t"] == start
    assert bucket["_id"].generation_time.replace(tzinfo=None) == start


@pytest.mark.parametrize("granularity", list(ROUNDING_CASES))
def test_bucket_start_is_rounded_down_per_granularity(db, granularity):
    """bucket_timestamp_rounding.js testSeconds/testMinutes/testHours: the first measurement's time is
    rounded down to the minute / hour / day for ``control.min.t`` and the bucket ``_id`` timestamp; an
    earlier measurement after the rounding point and one just under the span past the start join the
    same bucket; exceeding the span opens a second bucket."""
    first, earlier, last_inside, start, outside = ROUNDING_CASES[granularity]
    db.create_collection("r", timeseries={"timeField": "t", "granularity": granularity})
    _insert_times(db.r, first, earlier, last_inside)
    (bucket,) = _sorted_buckets(db, "r")
    _assert_bucket_start(bucket, iso(start))
    _insert_times(db.r, outside)
    assert len(_sorted_buckets(db, "r")) == 2


ROUNDING_TRANSITIONS = [
    ("seconds", "minutes", ["2021-04-22T20:10:14.134", "2021-04-22T20:10:05.000", "2021-04-22T21:09:59.999"],
     "2021-04-22T20:10:00.000",
     ["2021-04-24T20:10:14.134", "2021-04-24T20:05:00.000", "2021-04-25T19:59:59.999"],
     "2021-04-24T20:00:00.000", "2021-04-26T00:00:00.000"),
    ("minutes", "hours", ["2021-04-22T20:10:14.134", "2021-04-22T20:05:00.000", "2021-04-22T21:09:59.999"],
     "2021-04-22T20:00:00.000",
     ["2021-06-24T20:10:14.134", "2021-06-24T10:00:00.000", "2021-07-23T23:59:59.999"],
     "2021-06-24T00:00:00.000", "2021-07-25T00:00:00.000"),
]


@pytest.mark.parametrize(("before", "after", "first_times", "first_start", "second_times", "second_start",
                          "outside"), ROUNDING_TRANSITIONS, ids=["seconds-to-minutes", "minutes-to-hours"])
def test_bucket_rounding_follows_a_granularity_change(db, before, after, first_times, first_start, second_times,
                                                      second_start, outside):
    """bucket_timestamp_rounding.js testSecondsToMinutes/testMinutesToHours: the first bucket is rounded
    with the old granularity; after collMod, a new bucket's start is rounded with the new one (hour /
    day), earlier-but-after-rounding and last-inside-the-new-span measurements join it (2 buckets), and
    exceeding the new span opens a third."""
    db.create_collection("r", timeseries={"timeField": "t", "granularity": before})
    _insert_times(db.r, *first_times)
    (bucket,) = _sorted_buckets(db, "r")
    _assert_bucket_start(bucket, iso(first_start))
    db.command("collMod", "r", timeseries={"granularity": after})
    _insert_times(db.r, *second_times)
    found = _sorted_buckets(db, "r")
    assert len(found) == 2
    _assert_bucket_start(found[1], iso(second_start))
    _insert_times(db.r, outside)
    assert len(_sorted_buckets(db, "r")) == 3


EPOCH = dt.datetime(1970, 1, 1)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                HealthCheck.too_slow])
@given(seconds=st.integers(min_value=1, max_value=MAX_BUCKETING_SECONDS),
       offset_ms=st.integers(min_value=0, max_value=(dt.datetime(2100, 1, 1) - EPOCH).days * 86400 * 1000))
def test_custom_rounding_rounds_the_bucket_start_down(db, seconds, offset_ms):
    """bucket_timestamp_rounding.js with custom ``bucketRoundingSeconds == bucketMaxSpanSeconds == R``:
    a measurement at time t opens a bucket starting at t rounded down to a multiple of R seconds
    (``control.min`` and the ``_id`` timestamp); a measurement 1 ms before start + R joins it, one at
    start + R opens a new bucket."""
    db.drop_collection("r")
    db.create_collection("r", timeseries={"timeField": "t", "bucketMaxSpanSeconds": seconds,
                                          "bucketRoundingSeconds": seconds})
    t = EPOCH + dt.timedelta(milliseconds=offset_ms)
    start = EPOCH + dt.timedelta(seconds=(offset_ms // 1000) // seconds * seconds)
    db.r.insert_one({"t": t})
    (bucket,) = _sorted_buckets(db, "r")
    _assert_bucket_start(bucket, start)
    db.r.insert_one({"t": start + dt.timedelta(seconds=seconds, milliseconds=-1)})
    assert len(_sorted_buckets(db, "r")) == 1
    db.r.insert_one({"t": start + dt.timedelta(seconds=seconds)})
    assert len(_sorted_buckets(db, "r")) == 2
    db.drop_collection("r")
