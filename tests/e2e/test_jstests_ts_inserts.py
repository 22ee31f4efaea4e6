"""Ports of MongoDB's time-series insert jstests (group A) to pymongo against a real Tidemark server.

Each test names the jstest it ports (``jstests/core/timeseries/<name>.js``, the 7.0-era flat layout).
Like the jstests' ``TimeseriesTest.run``, most tests run once with ordered and once with unordered
inserts. What is checked is behaviour: documents read back through the view, and the bucket
documents in ``system.buckets.<coll>`` (control.min/max, meta, data columns, counts). Buckets are
version 1 (uncompressed) documents by project decision (spec "Decisions for this project"), so the
jstests' "closed bucket is compressed" assertions are not ported.
"""

import datetime as dt
import itertools
import random

import pytest
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.objectid import ObjectId
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.commands("create", "insert", "find", "delete", "update", "collStats")

ORDERED = pytest.mark.parametrize("ordered", [True, False], ids=["ordered", "unordered"])


def utc(*args):
    return dt.datetime(*args)


def create_ts(db, name, time_field="time", meta_field=None):
    options = {"timeField": time_field}
    if meta_field is not None:
        options["metaField"] = meta_field
    db.create_collection(name, timeseries=options)
    assert f"system.buckets.{name}" in db.list_collection_names()
    return db[name]


def insert(coll, docs, ordered):
    """The jstests' ``insert(coll, docs)``: one insert command with the given ordering; like the shell,
    an ``_id`` is added client-side (in place) to documents without one. The reply must report every
    document inserted and no write errors (``assert.commandWorked``)."""
    docs = docs if isinstance(docs, list) else [docs]
    for doc in docs:
        doc.setdefault("_id", ObjectId())
    reply = coll.database.command("insert", coll.name, documents=docs, ordered=ordered)
    assert "writeErrors" not in reply, reply
    assert reply["n"] == len(docs), reply


def buckets_of(coll, sort=None, **kw):
    cursor = coll.database[f"system.buckets.{coll.name}"].find(**kw)
    if sort is not None:
        cursor = cursor.sort(sort)
    return list(cursor)


def typed(value, keep_order=True):
    """A comparable rendering that keeps BSON numeric types and, with ``keep_order``, field order
    (dict equality in Python ignores both)."""
    if isinstance(value, dict):
        fields = [(k, typed(v, keep_order)) for k, v in value.items()]
        return ("doc", fields if keep_order else sorted(fields))
    if isinstance(value, list):
        return ("array", [typed(v, keep_order) for v in value])
    return (type(value).__name__, value)


def measurements_from_columns(bucket):
    """Rebuild a v1 bucket's measurements from its ``data`` columns (position -> field values)."""
    rows = {}
    for field, column in bucket["data"].items():
        for position, value in column.items():
            rows.setdefault(int(position), {})[field] = value
    return [rows[p] for p in sorted(rows)]


# ---------------------------------------------------------------------------------------------------
# timeseries_simple.js


def expected_bucket(docs, time_field):
    """control.min/max and data columns as timeseries_simple.js computes them: min/max replaced only
    on a strict BSON comparison (first value wins ties), min of the time rounded down to the minute."""
    control = {"min": {}, "max": {}}
    data = {}
    for position, doc in enumerate(docs):
        for key, value in doc.items():
            if key not in control["min"]:
                if key == time_field:
                    control["min"][key] = value.replace(second=0, microsecond=0)
                else:
                    control["min"][key] = value
            elif value < control["min"][key]:
                control["min"][key] = value
            if key not in control["max"] or value > control["max"][key]:
                control["max"][key] = value
            data.setdefault(key, {})[str(position)] = value
    return control, data


USAGE_FIELDS = ["usage_guest", "usage_guest_nice", "usage_idle", "usage_iowait", "usage_irq",
                "usage_nice", "usage_softirq", "usage_steal", "usage_system", "usage_user"]


@ORDERED
def test_simple_one_bucket_with_exact_control_and_data(db, ordered):
    """timeseries_simple.js: 100 measurements (no metaField) inserted one per command all land in
    one bucket; each reads back from the view by _id unchanged; the bucket is version 1 with no
    ``meta``, control.min/max equal the per-field extremes (time min rounded down to the minute,
    ``_id`` included) and ``data.<field>`` maps each position "0".."99" to the value."""
    coll = create_ts(db, "simple")
    rng = random.Random(20201126)
    hosts = [{f: rng.randint(0, 100) for f in USAGE_FIELDS} for _ in range(10)]
    base = utc(2021, 3, 4, 10, 20, 30, 123000)
    docs = []
    for i in range(100):
        fields = hosts[rng.randrange(len(hosts))]
        for f in fields:  # the jstest's updateUsages: new random usage values, ints and doubles
            fields[f] = rng.randint(0, 100) if rng.random() < 0.5 else round(rng.uniform(0, 100), 3)
        doc = {"_id": i, "time": base + dt.timedelta(milliseconds=37 * i), **fields}
        insert(coll, dict(doc), ordered)
        assert coll.find_one({"_id": i}) == doc
        docs.append(doc)
    assert len(list(coll.find())) == 100
    (bucket,) = buckets_of(coll)
    control, data = expected_bucket(docs, "time")
    assert bucket["control"]["version"] == 1
    assert "meta" not in bucket
    assert bucket["control"]["min"] == control["min"]
    assert bucket["control"]["max"] == control["max"]
    assert bucket["control"]["min"]["time"] == utc(2021, 3, 4, 10, 20)
    for key, column in data.items():
        assert bucket["data"][key] == column, key


COUNTER = itertools.count()  # collection names for Hypothesis examples (one db per test function)

NUMBER = st.one_of(
    st.integers(-(2**31), 2**31 - 1),
    st.integers(-(2**40), 2**40).map(Int64),
    st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False),
)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture],
          database=None)
@given(rows=st.lists(st.tuples(NUMBER, NUMBER), min_size=1, max_size=12), ordered=st.booleans())
def test_simple_control_min_max_keep_the_winning_value_and_type(db, rows, ordered):
    """timeseries_simple.js (generalised with Hypothesis): for measurements with numeric fields of
    mixed BSON types in one bucket, control.min/max hold the extreme value of each field with that
    value's own BSON type, a later equal value (e.g. 1 vs 1.0) not replacing it (the jstest's
    updateControlDoc replaces only on a strict bsonWoCompare)."""
    name = f"h{next(COUNTER)}"
    coll = create_ts(db, name)
    base = utc(2022, 7, 1, 12, 0, 5)
    docs = [{"_id": i, "time": base + dt.timedelta(seconds=i), "a": a, "b": b}
            for i, (a, b) in enumerate(rows)]
    insert(coll, [dict(d) for d in docs], ordered)
    (bucket,) = buckets_of(coll)
    control, _ = expected_bucket(docs, "time")
    assert typed(bucket["control"]["min"]["a"]) == typed(control["min"]["a"])
    assert typed(bucket["control"]["max"]["a"]) == typed(control["max"]["a"])
    assert typed(bucket["control"]["min"]["b"]) == typed(control["min"]["b"])
    assert typed(bucket["control"]["max"]["b"]) == typed(control["max"]["b"])
    assert sorted(coll.find(), key=lambda d: d["_id"]) == docs
    db.drop_collection(name)


# ---------------------------------------------------------------------------------------------------
# timeseries_sparse.js

T4 = [utc(2020, 11, 26, 0, 0), utc(2020, 11, 26, 0, 10), utc(2020, 11, 26, 0, 20), utc(2020, 11, 26, 0, 30)]

SPARSE_CASES = {
    "disjoint_fields": (
        [{"_id": 0, "time": T4[0], "a": 0}, {"_id": 1, "time": T4[1], "b": 10}],
        [{"_id": 2, "time": T4[2], "c": 20}, {"_id": 3, "time": T4[3], "d": 30}],
    ),
    "sliding_overlap": (
        [{"_id": 0, "time": T4[0], "a": 0, "d": 100}, {"_id": 1, "time": T4[1], "a": 11, "b": 10}],
        [{"_id": 2, "time": T4[2], "b": 22, "c": 20}, {"_id": 3, "time": T4[3], "c": 33, "d": 30}],
    ),
}


@ORDERED
@pytest.mark.parametrize("case", sorted(SPARSE_CASES))
def test_sparse_measurements_share_one_bucket(db, case, ordered):
    """timeseries_sparse.js: measurements that each carry only some fields, inserted in two commands,
    read back unchanged from the view (no fields invented for missing ones) and all four sit in one
    bucket whose time column has 4 entries; the other columns hold only the positions that had the
    field (rebuilding the measurements from the columns gives the inserted documents)."""
    first, second = SPARSE_CASES[case]
    coll = create_ts(db, "sparse")
    insert(coll, [dict(d) for d in first], ordered)
    insert(coll, [dict(d) for d in second], ordered)
    docs = first + second
    assert list(coll.find().sort("_id", 1)) == docs
    (bucket,) = buckets_of(coll)
    assert len(bucket["data"]["time"]) == 4
    assert sorted(measurements_from_columns(bucket), key=lambda d: d["_id"]) == docs


# ---------------------------------------------------------------------------------------------------
# timeseries_min_max.js

MIN_MAX_GROUPS = {
    "empty_objects_considered": [
        ({"a": {}}, {"a": {}}, {"a": {}}),
        ({"a": {"x": {}}}, {"a": {"x": {}}}, {"a": {"x": {}}}),
        ({"a": {"x": {"y": 1}}}, {"a": {"x": {"y": 1}}}, {"a": {"x": {"y": 1}}}),
        ({"a": {"x": {}}}, {"a": {"x": {"y": 1}}}, {"a": {"x": {"y": 1}}}),
    ],
    "meta_not_considered": [
        ({"meta": 1}, {}, {}),
    ],
    "objects_and_arrays_element_wise": [
        ({"a": {"x": 1, "y": 2}, "b": [1, 2]}, {"a": {"x": 1, "y": 2}, "b": [1, 2]},
         {"a": {"x": 1, "y": 2}, "b": [1, 2]}),
        ({"a": {"x": 2, "y": 1}, "b": [2, 1]}, {"a": {"x": 1, "y": 1}, "b": [1, 1]},
         {"a": {"x": 2, "y": 2}, "b": [2, 2]}),
        # a.x turns from a number into an object: schema change, new bucket
        ({"a": {"x": {"z": [3, 4]}}, "b": [{"x": 3, "y": 4}]}, {"a": {"x": {"z": [3, 4]}}, "b": [{"x": 3, "y": 4}]},
         {"a": {"x": {"z": [3, 4]}}, "b": [{"x": 3, "y": 4}]}),
        ({"a": {"x": {"z": [4, 3]}}, "b": [{"x": 4, "y": 3}, 3, 1]},
         {"a": {"x": {"z": [3, 3]}}, "b": [{"x": 3, "y": 3}, 3, 1]},
         {"a": {"x": {"z": [4, 4]}}, "b": [{"x": 4, "y": 4}, 3, 1]}),
    ],
    "scalar_object_array_schema_changes": [
        ({"a": 1}, {"a": 1}, {"a": 1}),
        ({"a": {"b": 1}}, {"a": {"b": 1}}, {"a": {"b": 1}}),
        ({"a": []}, {"a": []}, {"a": []}),
        ({"a": [5]}, {"a": [5]}, {"a": [5]}),
    ],
    "array_object_array_schema_changes": [
        ({"a": []}, {"a": []}, {"a": []}),
        ({"a": {"b": 1}}, {"a": {"b": 1}}, {"a": {"b": 1}}),
        ({"a": [5]}, {"a": [5]}, {"a": [5]}),
    ],
    "sparse_fields_only_affect_present_fields": [
        ({"a": 1, "c": 1}, {"a": 1, "c": 1}, {"a": 1, "c": 1}),
        ({"b": 2}, {"a": 1, "b": 2, "c": 1}, {"a": 1, "b": 2, "c": 1}),
        ({"c": 3, "d": 3}, {"a": 1, "b": 2, "c": 1, "d": 3}, {"a": 1, "b": 2, "c": 3, "d": 3}),
    ],
    "canonical_numeric_types": [
        ({"a": 1.5}, {"a": 1.5}, {"a": 1.5}),
        ({"a": Int64(2)}, {"a": 1.5}, {"a": Int64(2)}),
        ({"a": 1}, {"a": 1}, {"a": Int64(2)}),
        ({"a": Decimal128("2.5")}, {"a": 1}, {"a": Decimal128("2.5")}),
        ({"a": 0.5}, {"a": 0.5}, {"a": Decimal128("2.5")}),
    ],
}


@ORDERED
@pytest.mark.parametrize("group", list(MIN_MAX_GROUPS))
def test_min_max_of_the_bucket_holding_each_measurement(db, group, ordered):
    """timeseries_min_max.js: after each insert (collection with metaField 'meta'), the measurement
    is found on the view by equality on the whole document, and the bucket whose
    control.min._id..control.max._id range holds its _id has exactly the expected control.min/max
    (besides _id and time): empty objects recorded, meta excluded, objects/arrays combined field-/
    element-wise, scalar<->object<->array changes opening a new bucket, sparse fields, and numbers
    compared across types with the winner keeping its own BSON type (int32/long/double/decimal)."""
    coll = create_ts(db, "minmax", meta_field="meta")
    buckets = db["system.buckets.minmax"]
    base = utc(2023, 2, 3, 4, 5, 6)
    for step, (doc, expected_min, expected_max) in enumerate(MIN_MAX_GROUPS[group]):
        doc = dict(doc, time=base + dt.timedelta(seconds=step))
        insert(coll, doc, ordered)
        matching = list(coll.find(doc))
        assert len(matching) == 1, (step, matching)
        mid = matching[0]["_id"]
        found = list(buckets.find(
            {"$and": [{"control.min._id": {"$lte": mid}}, {"control.max._id": {"$gte": mid}}]},
            {"control.min._id": 0, "control.max._id": 0, "control.min.time": 0, "control.max.time": 0},
        ))
        assert len(found) == 1, (step, found)
        control = found[0]["control"]
        assert control["min"] == expected_min, (step, control)
        assert control["max"] == expected_max, (step, control)
        assert typed(control["min"], False) == typed(expected_min, False), (step, control)
        assert typed(control["max"], False) == typed(expected_max, False), (step, control)


# ---------------------------------------------------------------------------------------------------
# timeseries_out_of_order.js

OOO_TIMES = [utc(2021, 1, 1, 1, 0, 0), utc(2021, 1, 1, 1, 0, 30), utc(2021, 1, 1, 2, 0, 0)]

OUT_OF_ORDER_CASES = {
    # (times of the measurements with _id 0, 1, ...), [(control.min.time, control.max.time) per bucket]
    "earlier_within_range_same_bucket": ([1, 0], [(0, 1)]),
    "later_past_span_new_bucket": ([1, 0, 2], [(0, 1), (2, 2)]),
    "earlier_after_later_bucket": ([2, 0], [(0, 0), (2, 2)]),
}


@ORDERED
@pytest.mark.parametrize("case", list(OUT_OF_ORDER_CASES))
def test_out_of_order_inserts(db, case, ordered):
    """timeseries_out_of_order.js: one insert command whose measurements go back in time. A
    measurement earlier than the first one but within the bucket's range joins that bucket
    (control.min.time = 01:00:00, max = 01:00:30); one an hour later opens a second bucket; a
    measurement an hour before the first opens its own bucket. Buckets in _id order and the view's
    documents are checked."""
    time_idx, expected = OUT_OF_ORDER_CASES[case]
    coll = create_ts(db, "ooo")
    docs = [{"_id": i, "time": OOO_TIMES[t]} for i, t in enumerate(time_idx)]
    insert(coll, [dict(d) for d in docs], ordered)
    assert list(coll.find().sort("_id", 1)) == docs
    buckets = buckets_of(coll, sort=[("_id", 1)])
    assert [(b["control"]["min"]["time"], b["control"]["max"]["time"]) for b in buckets] == [
        (OOO_TIMES[lo], OOO_TIMES[hi]) for lo, hi in expected
    ]


# ---------------------------------------------------------------------------------------------------
# timeseries_metadata.js


def with_meta(meta_values, start, x0):
    docs = []
    for k, meta in enumerate(meta_values):
        doc = {"_id": start + k, "time": T4[start + k]}
        if meta is not MISSING:
            doc["meta"] = meta
        doc["x"] = x0 + 10 * k
        docs.append(doc)
    return docs


MISSING = object()

METADATA_CASES = {
    "strings": (["a", "a"], ["b", "b"]),
    "null_vs_missing": ([None, None], [MISSING, MISSING]),
    "null_vs_number": ([None, None], [123, 123]),
    "array_vs_missing": ([[1, 2, 3], [1, 2, 3]], [MISSING, MISSING]),
    "object_field_order_ignored": ([{"a": 1, "b": 1}, {"a": 1, "b": 1}, {"b": 1, "a": 1}], [{"a": 1}]),
    "array_of_objects_in_object": ([{"a": [{"b": 1, "c": 0}]}, {"a": [{"c": 0, "b": 1}]}],
                                   [{"a": [{"b": 2, "c": 0}]}, {"a": [{"c": 0, "b": 2}]}]),
    "nested_arrays_order_matters": (
        [{"a": [{"b": 1, "c": 0}, [{"e": 1, "f": 0}]]}, {"a": [{"c": 0, "b": 1}, [{"f": 0, "e": 1}]]}],
        [{"a": [[{"e": 1, "f": 0}], {"b": 1, "c": 0}]}, {"a": [[{"f": 0, "e": 1}], {"c": 0, "b": 1}]}],
    ),
    "array_element_order_matters": ([{"a": [1, 2, 3]}, {"a": [1, 2, 3]}], [{"a": [2, 1, 3]}, {"a": [2, 1, 3]}]),
}


@ORDERED
@pytest.mark.parametrize("case", list(METADATA_CASES))
def test_metadata_decides_the_bucket(db, case, ordered):
    """timeseries_metadata.js: measurements go to the same bucket only when their meta values are
    equal after normalisation (object fields sorted recursively, array order kept); null and missing
    meta are different buckets (project decision, 7.1+ behaviour). Checks: the view returns every
    measurement (meta in its normalised form), exactly two buckets ordered by control.min._id with
    the expected number of time entries, each bucket's ``meta`` equal field-for-field and in order to
    its first measurement's meta (whose fields are already sorted), and no meta column in ``data``."""
    metas_a, metas_b = METADATA_CASES[case]
    docs_a = with_meta(metas_a, 0, 0)
    docs_b = with_meta(metas_b, len(metas_a), 10 * len(metas_a))
    coll = create_ts(db, "meta", meta_field="meta")
    insert(coll, [dict(d) for d in docs_a + docs_b], ordered)
    assert list(coll.find().sort("_id", 1)) == docs_a + docs_b
    buckets = buckets_of(coll, sort=[("control.min._id", 1)])
    assert len(buckets) == 2, buckets
    for bucket, docs in zip(buckets, (docs_a, docs_b), strict=True):
        assert len(bucket["data"]["time"]) == len(docs)
        assert "meta" not in bucket["data"]
        if "meta" in docs[0]:
            assert "meta" in bucket, bucket
            assert typed(bucket["meta"]) == typed(docs[0]["meta"])
        else:
            assert "meta" not in bucket, bucket


# ---------------------------------------------------------------------------------------------------
# timeseries_insert_mixed_schema_docs.js


@pytest.mark.slow
def test_schema_change_wins_over_large_measurement_rule(db):
    """timeseries_insert_mixed_schema_docs.js: {a: 1} then a measurement of the same meta with
    a: "foo" and a 130,000-byte payload (a large measurement, which may otherwise be kept in a
    small bucket) still opens a new bucket because of the schema change; the next measurement with
    a: 2 does not go into that "foo" bucket (its control.min.a / max.a stay "foo"). The three
    measurements share one _id, which time-series collections accept."""
    coll = create_ts(db, "ts", time_field="t", meta_field="m")
    buckets = db["system.buckets.ts"]
    # the jstest re-inserts one shell object, so all three measurements share its _id and time
    doc = {"_id": ObjectId(), "t": utc(2024, 5, 6, 7, 8, 9), "m": "meta", "a": 1, "payload": "small"}
    insert(coll, dict(doc), True)
    assert len(list(coll.find({"m": "meta"}))) == 1
    assert buckets.count_documents({}) == 1
    insert(coll, dict(doc, a="foo", payload="A" * 130000), True)
    assert len(list(coll.find({"m": "meta"}))) == 2
    assert buckets.count_documents({"meta": "meta"}) == 2
    (foo_bucket,) = list(buckets.find({"control.min.a": "foo"}))
    insert(coll, dict(doc, a=2), True)
    found = list(coll.find({"m": "meta"}, {"payload": 0}))
    assert sorted(d["a"] for d in found if d["a"] != "foo") == [1, 2]
    assert {d["_id"] for d in found} == {doc["_id"]}  # duplicate measurement _ids are accepted
    (after,) = list(buckets.find({"_id": foo_bucket["_id"]}))
    assert after["control"]["min"]["a"] != 2
    assert after["control"]["max"]["a"] != 2
    assert after["control"]["min"]["a"] == "foo" and len(after["data"]["t"]) == 1


# ---------------------------------------------------------------------------------------------------
# timeseries_bucket_limit_count.js


@pytest.mark.slow
@ORDERED
@pytest.mark.parametrize("per_insert", [1, 550, 1100])
def test_bucket_limit_count_1000(db, per_insert, ordered):
    """timeseries_bucket_limit_count.js: 1100 measurements with the same time, inserted 1, 550 or
    1100 per command: the view returns them all (x projection, sorted by _id), and there are exactly
    two buckets: the first holds _id/x 0..999 (1000 measurements), the second 1000..1099; neither
    has ``control.closed``, and the open second bucket is version 1."""
    coll = create_ts(db, "count")
    when = utc(2024, 1, 1, 1, 0, 0)
    docs = [{"_id": i, "time": when, "x": i} for i in range(1100)]
    for start in range(0, len(docs), per_insert):
        insert(coll, docs[start:start + per_insert], ordered)
    assert list(coll.find({}, {"x": 1}).sort("_id", 1)) == [{"_id": i, "x": i} for i in range(1100)]
    buckets = buckets_of(coll, sort=[("control.min._id", 1)])
    assert [
        (b["control"]["min"]["_id"], b["control"]["max"]["_id"], b["control"]["min"]["x"], b["control"]["max"]["x"])
        for b in buckets
    ] == [(0, 999, 0, 999), (1000, 1099, 1000, 1099)]
    assert [len(b["data"]["time"]) for b in buckets] == [1000, 100]
    assert all("closed" not in b["control"] for b in buckets)
    assert buckets[1]["control"]["version"] == 1


# ---------------------------------------------------------------------------------------------------
# timeseries_bucket_limit_time_range.js

RANGE_TIMES = [utc(2020, 11, 13, 1, 0, 0), utc(2020, 11, 13, 1, 0, 1), utc(2020, 11, 13, 1, 0, 2),
               utc(2020, 11, 13, 3, 0, 0)]


@ORDERED
@pytest.mark.parametrize("per_insert", [1, 4])
def test_bucket_limit_time_range(db, per_insert, ordered):
    """timeseries_bucket_limit_time_range.js: measurements at 01:00:00, :01, :02 and 03:00:00
    (inserted 1 or 4 per command): the view returns each with its time; two buckets, the first
    with control.min {_id: 0, x: 0, time: 01:00:00} and max {_id: 2, x: 2, time: 01:00:02}, the
    second (2 h later, beyond the 3600 s span) min = max = {_id: 3, x: 3, time: 03:00:00},
    version 1."""
    coll = create_ts(db, "range")
    docs = [{"_id": i, "time": t, "x": i} for i, t in enumerate(RANGE_TIMES)]
    for start in range(0, len(docs), per_insert):
        insert(coll, [dict(d) for d in docs[start:start + per_insert]], ordered)
    assert list(coll.find().sort("_id", 1)) == docs
    buckets = buckets_of(coll, sort=[("control.min._id", 1)])
    assert len(buckets) == 2, buckets
    assert buckets[0]["control"]["min"] == {"_id": 0, "x": 0, "time": RANGE_TIMES[0]}
    assert buckets[0]["control"]["max"] == {"_id": 2, "x": 2, "time": RANGE_TIMES[2]}
    assert buckets[1]["control"]["min"] == {"_id": 3, "x": 3, "time": RANGE_TIMES[3]}
    assert buckets[1]["control"]["max"] == {"_id": 3, "x": 3, "time": RANGE_TIMES[3]}
    assert buckets[1]["control"]["version"] == 1


# ---------------------------------------------------------------------------------------------------
# timeseries_insert_after_delete.js


@ORDERED
def test_insert_after_delete(db, ordered):
    """timeseries_insert_after_delete.js: after a multi delete on the metaField removes the only
    measurement (n = 1), a new measurement of the same meta inserted a minute later is the only
    document the view returns (the deleted bucket is not resurrected nor reused with old data)."""
    coll = create_ts(db, "t", meta_field="tag")
    obj_a = {"time": utc(2021, 1, 1, 1, 0), "tag": "A"}
    obj_b = {"time": utc(2021, 1, 1, 1, 1), "tag": "A"}
    insert(coll, dict(obj_a), ordered)
    reply = db.command("delete", "t", deletes=[{"q": {"tag": "A"}, "limit": 0}])
    assert reply["n"] == 1
    insert(coll, [dict(obj_b)], ordered)
    assert list(coll.find({}, {"_id": 0})) == [obj_b]
    (bucket,) = buckets_of(coll)
    assert len(bucket["data"]["time"]) == 1 and bucket["meta"] == "A"


# ---------------------------------------------------------------------------------------------------
# timeseries_insert_after_update.js


@ORDERED
def test_insert_after_update(db, ordered):
    """timeseries_insert_after_update.js (the 6.3+/7.x version, with query-based reopening): a
    measurement with m: "a" has its meta changed to "b" by a multi update; then {m: "a", 01:01} and
    {m: "b", 01:02} are inserted in one command. The view returns the three with the updated meta;
    the "a" measurement gets a new bucket (the updated bucket is no longer "a"), the "b" one goes
    into the updated bucket, which is reopened: 2 buckets, collStats bucketCount 2 and
    numBucketsReopened + 1."""
    coll = create_ts(db, "t", meta_field="m")
    docs = [
        {"time": utc(2021, 1, 1, 1, 0), "m": "a"},
        {"time": utc(2021, 1, 1, 1, 1), "m": "a"},
        {"time": utc(2021, 1, 1, 1, 2), "m": "b"},
    ]
    insert(coll, dict(docs[0]), ordered)
    db.command("update", "t", updates=[{"q": {"m": "a"}, "u": {"$set": {"m": "b"}}, "multi": True}])
    docs[0]["m"] = "b"
    before = db.command("collStats", "t")["timeseries"]["numBucketsReopened"]
    insert(coll, [dict(d) for d in docs[1:]], ordered)
    assert list(coll.find({}, {"_id": 0}).sort("time", 1)) == docs
    buckets = buckets_of(coll)
    assert len(buckets) == 2, buckets
    stats = db.command("collStats", "t")["timeseries"]
    assert stats["bucketCount"] == 2
    assert stats["numBucketsReopened"] == before + 1
    assert sorted((b["meta"], len(b["data"]["time"])) for b in buckets) == [("a", 1), ("b", 2)]

