"""MongoDB's noPassthrough time-series tests (each starts its own mongod, often with setParameter), ported
where Tidemark answered differently:

- jstests/noPassthrough/timeseries/write/timeseries_idle_buckets.js and timeseries_bucket_limit_size.js
  (measurements with a 1 MiB meta under ``timeseriesBucketMinCount: 1``): mongod's bucket size rule
  counts only the measurements' fields, never the meta (calculateBucketFieldsAndSizeChange skips the
  meta field; a new bucket's size is 0). Tidemark started each bucket's size at its meta's BSON bytes, so
  a meta over 128,000 bytes closed every bucket for size after one measurement (or, with the default
  minimum count, counted numBucketsKeptOpenDueToLargeMeasurements for buckets mongod never keeps open).
- The bucket size itself, from the source the jstests exercise (timeseries_bucket_limit_size.js,
  timeseries_large_measurements.js, timeseries_insert_rollover.js): calculateBucketFieldsAndSizeChange
  counts a value as BSON does (an int32 4 bytes, a string's UTF-8 bytes), a new field's control.min and
  max copies with its name, numDigits(0) as 0, and the time field as a new field of a new bucket.
  Tidemark counted an int32 as 8, the min/max copies without the name but with the position, and a new
  bucket as already holding its time field: bucket boundaries fell some bytes off mongod's. The family
  below predicts every bucket boundary with a model of that source.
- jstests/noPassthrough/timeseries/create/timeseries_server_parameters.js (testNumericServerParameter:
  timeseriesBucketMaxCount and timeseriesBucketMaxSize are startup parameters, not runtime ones, and a
  value below the bound stops the start-up) and the rest of mongod 7.0's timeseries.idl it reads:
  timeseriesBucketMinCount and timeseriesIdleBucketExpiryMaxCountPerAttempt are startup-only too (the
  latter at least 2), timeseriesIdleBucketExpiryMemoryUsageThreshold is settable at both and takes any
  value (one not positive means 2.5 % of the memory). Tidemark let a client change all four at runtime,
  started with an expiry count of 1 and refused a negative threshold.
- jstests/noPassthrough/timeseries/stats/timeseries_serverStatus.js (7.0 form: archived buckets count
  in numBuckets): serverStatus has no ``bucketCatalog`` section until a collection has execution stats
  (mongod's section generates nothing while ``executionStats`` is empty, and a collection's stats go
  with its drop); then one open, idle bucket per series and the archived ones in numBuckets. Tidemark
  always answered the section.
"""

from __future__ import annotations

import datetime as dt

import bson
import pytest
from bson.int64 import Int64
from harness import ServerProcess
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("insert", "collStats", "find", "getParameter", "setParameter")

BASE = dt.datetime(2024, 1, 1, 1)
MAX_COUNT = 7  # the limits server's timeseriesBucketMaxCount


@pytest.fixture(scope="module")
def limits_server(tmp_path_factory):
    """A server whose buckets close on count at 7 and on size at once (no measurement kept open for
    being large), as the jstests start mongod with setParameter."""
    base = tmp_path_factory.mktemp("ts-nopassthrough")
    proc = ServerProcess(base / "db", params={"timeseriesBucketMaxCount": MAX_COUNT, "timeseriesBucketMinCount": 1},
                         log_path=base / "server.log")
    proc.start()
    yield proc
    proc.terminate()


@pytest.fixture(scope="module")
def limits_db(limits_server):
    client = limits_server.client()
    yield client.nopassthrough
    client.close()


def _stats(db, name):
    return db.command("collStats", name)["timeseries"]


@pytest.mark.slow
def test_a_large_meta_does_not_count_in_the_bucket_size(limits_db):
    """timeseries_idle_buckets.js's measurements: 3 of one series with a 1 MiB meta in one insert, then
    3 one at a time: one bucket each way, nothing closed for size."""
    db = limits_db
    meta = {"0": "a" * (1024 * 1024)}
    for name, batched in (("meta_batch", True), ("meta_single", False)):
        db.drop_collection(name)
        db.create_collection(name, timeseries={"timeField": "time", "metaField": "meta"})
        docs = [{"_id": i, "time": BASE + dt.timedelta(seconds=i), "meta": meta, "value": i} for i in range(3)]
        if batched:
            db[name].insert_many(docs)
        else:
            for doc in docs:
                db[name].insert_one(doc)
        stats = _stats(db, name)
        assert (stats["bucketCount"], stats["numBucketsClosedDueToSize"]) == (1, 0), name
        assert list(db[name].find().sort("_id", 1)) == docs


@pytest.mark.slow
def test_a_large_meta_keeps_no_bucket_open_for_large_measurements(db):
    """With the default timeseriesBucketMinCount (10), a bucket whose small measurements carry a
    200 KB meta is never 'kept open due to large measurements': its size is far under the maximum."""
    db.create_collection("kept", timeseries={"timeField": "t", "metaField": "m"})
    db.kept.insert_many([{"t": BASE + dt.timedelta(seconds=i), "m": "m" * 200_000, "x": i} for i in range(12)])
    stats = _stats(db, "kept")
    assert stats["numBucketsKeptOpenDueToLargeMeasurements"] == 0
    assert (stats["bucketCount"], stats["numBucketsClosedDueToSize"]) == (1, 0)


# A series of measurements, each either small (a few fields of up to 300 bytes: only the count rule can
# close a bucket) or large (one string of 26,000-31,000 bytes: a bucket's first costs about three times
# that with its control.min and max, each later one about once, so two fit in 128,000 bytes and a third
# never does, whatever the few bytes of field names and positions add).
metas = st.one_of(st.none(), st.integers(0, 64), st.integers(100_000, 300_000))
FIELD_VALUES = {"a": st.integers(-2**31, 2**31 - 1), "b": st.floats(allow_nan=False), "c": st.text(max_size=300),
                "d": st.booleans()}  # each field keeps its type: no schema change closes a bucket
small_docs = st.lists(st.fixed_dictionaries({}, optional=FIELD_VALUES), min_size=1, max_size=20)
large_docs = st.lists(st.integers(26_000, 31_000), min_size=1, max_size=7)


@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(meta_bytes=metas, series=st.one_of(small_docs.map(lambda d: ("small", d)),
                                          large_docs.map(lambda d: ("large", d))), batched=st.booleans())
def test_bucket_counts_follow_the_count_and_size_rules_whatever_the_meta(limits_db, meta_bytes, series, batched):
    """Every measurement reads back exactly, and the buckets are as mongod's rules predict: at most 7
    (timeseriesBucketMaxCount) small measurements or 2 large ones a bucket, the meta's size aside."""
    db = limits_db
    kind, values = series
    db.drop_collection("family")
    db.create_collection("family", timeseries={"timeField": "t", "metaField": "m"})
    docs = []
    for i, value in enumerate(values):
        doc = {"_id": i, "t": BASE + dt.timedelta(seconds=i)}
        if meta_bytes is not None:
            doc["m"] = "m" * meta_bytes
        if kind == "small":
            doc.update(value)
        else:
            doc["x"] = ("a" if i % 2 == 0 else "b") * value
        docs.append(doc)
    if batched:
        db.family.insert_many(docs)
    else:
        for doc in docs:
            db.family.insert_one(doc)
    assert list(db.family.find().sort("_id", 1)) == docs
    per_bucket = MAX_COUNT if kind == "small" else 2
    buckets = -(-len(docs) // per_bucket)
    stats = _stats(db, "family")
    assert stats["bucketCount"] == buckets
    closed = (stats["numBucketsClosedDueToCount"], stats["numBucketsClosedDueToSize"])
    assert closed == ((buckets - 1, 0) if kind == "small" else (0, buckets - 1))
    held = sorted(b["control"]["max"]["_id"] - b["control"]["min"]["_id"] + 1
                  for b in db["system.buckets.family"].find({}, {"control": 1}))
    assert held == sorted([per_bucket] * (len(docs) // per_bucket) + (
        [len(docs) % per_bucket] if len(docs) % per_bucket else []))


def _bson_value_size(value):
    return len(bson.encode({"": value})) - 7


def _num_digits(n):
    digits = 0
    while n:
        n //= 10
        digits += 1
    return digits


def _predicted_buckets(docs, meta_field, max_count, max_size, min_count):
    """The measurements of each bucket, by mongod 7.0's rules for one series whose times stay within
    one bucket span and whose fields keep their types (insertIntoBucket, determineRolloverAction,
    calculateBucketFieldsAndSizeChange): count, then size, a bucket under the minimum count kept open
    up to 12 MiB."""
    buckets, fields, size = [], set(), 0

    def added(doc):
        add = 0
        for name, value in doc.items():
            if name == meta_field:
                continue
            name_bytes = len(name.encode())
            element = 2 + name_bytes + _bson_value_size(value)
            if name not in fields:
                add += 12 + name_bytes + 2 * element
            add += element - (name_bytes + 1) + _num_digits(len(buckets[-1]) if buckets else 0) + 1
        return add

    for doc in docs:
        if buckets:
            add = added(doc)
            count = len(buckets[-1])
            roll = count >= max_count or (size + add > max_size and (
                count >= min_count or size + add > 12 * 1024 * 1024))
        if not buckets or roll:
            buckets.append([])
            fields, size = set(), 0
            add = added(doc)
        buckets[-1].append(doc["_id"])
        fields.update(name for name in doc if name != meta_field)
        size += add
    return buckets


# Measurements of one series whose sizes put bucket boundaries anywhere: strings of up to 40,000
# bytes (ASCII or not), int32 and int64 values, doubles, fields present or not (each keeps its type).
measurement = st.fixed_dictionaries({}, optional={
    "s": st.one_of(st.integers(0, 40_000).map(lambda n: "s" * n), st.text(max_size=50)),
    "i": st.integers(-2**31, 2**31 - 1), "l": st.integers(2**31, 2**62).map(Int64), "f": st.floats(allow_nan=False),
    "é": st.integers(0, 30_000).map(lambda n: "é" * n)})


@pytest.fixture(scope="module")
def default_db(client):
    name = "ts_nopassthrough_default"
    client.drop_database(name)
    yield client[name]
    client.drop_database(name)


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(rows=st.lists(measurement, min_size=1, max_size=24), meta_bytes=st.sampled_from([None, 10, 200_000]),
       batched=st.booleans(), limits=st.sampled_from(["limits", "default"]))
def test_bucket_boundaries_follow_mongods_size_rule(limits_db, default_db, rows, meta_bytes, batched, limits):
    """Every measurement reads back exactly, and each bucket holds exactly the measurements mongod's
    count and size rules put in it: on a server with timeseriesBucketMaxCount 7 and
    timeseriesBucketMinCount 1, and on one with the defaults (1000; 10: buckets kept open for large
    measurements)."""
    db = limits_db if limits == "limits" else default_db
    max_count, min_count = (MAX_COUNT, 1) if limits == "limits" else (1000, 10)
    db.drop_collection("exact")
    db.create_collection("exact", timeseries={"timeField": "t", "metaField": "m"})
    docs = []
    for i, row in enumerate(rows):
        doc = {"_id": i, "t": BASE + dt.timedelta(seconds=i)}
        if meta_bytes is not None:
            doc["m"] = "m" * meta_bytes
        doc.update(row)
        docs.append(doc)
    if batched:
        db.exact.insert_many(docs)
    else:
        for doc in docs:
            db.exact.insert_one(doc)
    assert list(db.exact.find().sort("_id", 1)) == docs
    held = sorted((b["control"]["min"]["_id"], b["control"]["max"]["_id"])
                  for b in db["system.buckets.exact"].find({}, {"control": 1}))
    predicted = _predicted_buckets(docs, "m", max_count, 128_000, min_count)
    assert held == [(ids[0], ids[-1]) for ids in predicted]  # (one series in time order: ranges of _id)


STARTUP_ONLY = ("timeseriesBucketMaxCount", "timeseriesBucketMaxSize", "timeseriesBucketMinCount",
                "timeseriesIdleBucketExpiryMaxCountPerAttempt")


def test_the_bucketing_limits_are_startup_parameters(limits_server):
    """What the server was started with is what getParameter answers; setParameter refuses every one of
    the four with 20 IllegalOperation (mongod checks a name's settability before its value), even
    with the value it holds, and changes nothing."""
    admin = limits_server.client().admin
    details = admin.command({"getParameter": {"showDetails": True}, **dict.fromkeys(STARTUP_ONLY, 1)})
    assert {name: details[name] for name in STARTUP_ONLY} == {
        name: {"value": value, "settableAtRuntime": False, "settableAtStartup": True}
        for name, value in zip(STARTUP_ONLY, (MAX_COUNT, 128_000, 1, 3), strict=True)}
    for name in STARTUP_ONLY:
        for value in (details[name]["value"], 100, "many"):
            with pytest.raises(OperationFailure) as info:
                admin.command("setParameter", 1, **{name: value})
            assert (info.value.code, info.value.details["codeName"]) == (20, "IllegalOperation")
            assert info.value.details["errmsg"] == f"not allowed to change [{name}] at runtime"
    assert admin.command("getParameter", 1, timeseriesBucketMaxCount=1)["timeseriesBucketMaxCount"] == MAX_COUNT


def test_the_idle_bucket_memory_threshold_takes_any_value_at_runtime(limits_server):
    """timeseriesIdleBucketExpiryMemoryUsageThreshold has no validator: a negative value is kept as
    given (and means the default, 2.5 % of the memory: inserts go on)."""
    client = limits_server.client()
    admin = client.admin
    name = "timeseriesIdleBucketExpiryMemoryUsageThreshold"
    assert admin.command("setParameter", 1, **{name: -5}) == {"was": 0, "ok": 1.0}
    try:
        assert admin.command("getParameter", 1, **{name: 1})[name] == -5
        db = client.nopassthrough
        db.drop_collection("negative_threshold")
        db.create_collection("negative_threshold", timeseries={"timeField": "t", "metaField": "m"})
        db.negative_threshold.insert_many([{"t": BASE, "m": i} for i in range(20)])
        stats = _stats(db, "negative_threshold")
        assert (stats["bucketCount"], stats["numBucketsClosedDueToMemoryThreshold"]) == (20, 0)
    finally:
        admin.command("setParameter", 1, **{name: 0})


@pytest.mark.slow
@pytest.mark.parametrize("params, starts", [
    ({"timeseriesIdleBucketExpiryMaxCountPerAttempt": 1}, False),  # (validator gte 2)
    ({"timeseriesIdleBucketExpiryMaxCountPerAttempt": 2}, True),
    ({"timeseriesBucketMaxCount": 0}, False),
    ({"timeseriesBucketMaxSize": 0}, False),
    ({"timeseriesBucketMinCount": 0}, False),
    ({"timeseriesIdleBucketExpiryMemoryUsageThreshold": -1}, True),
])
def test_start_up_refuses_a_value_out_of_the_parameters_bounds(start_server, params, starts):
    """testNumericServerParameter: a value below the lower bound stops mongod at start-up; one within
    starts it with that value."""
    if not starts:
        with pytest.raises(RuntimeError, match="server did not start"):
            start_server(params=params)
        return
    with start_server(params=params).client() as client:
        (name, value), = params.items()
        assert client.admin.command("getParameter", 1, **{name: 1})[name] == value


@pytest.mark.slow
@pytest.mark.commands("serverStatus", "drop")
def test_server_status_has_a_bucket_catalog_section_once_a_collection_has_stats(start_server):
    with start_server().client() as client:
        db = client.status_section

        def catalog():
            return client.admin.command("serverStatus").get("bucketCatalog")

        assert catalog() is None
        db.create_collection("t", timeseries={"timeField": "time", "metaField": "meta"})
        assert catalog() is None  # (created, nothing inserted: no execution stats yet)
        expected = []
        for time, buckets in ((dt.datetime(2025, 3, 19, 5, 17), 1),  # opens a bucket, idle once committed
                              (dt.datetime(2021, 1, 2, 1), 2),  # time backward: the first one archived
                              (dt.datetime(2021, 1, 1, 1), 3)):  # and again
            db.t.insert_one({"time": time, "meta": {"a": 1}})
            section = catalog()
            expected.append((buckets, 1, 1, buckets - 1))
            assert (section["numBuckets"], section["numOpenBuckets"], section["numIdleBuckets"],
                    section["numArchivedBuckets"]) == expected[-1]
            assert section["memoryUsage"] > 0
        assert db.drop_collection("t")["ok"] == 1.0
        assert catalog() is None  # (its stats went with it)
