"""Measurements a cursor returns as they are (no stage after the leading ``$match``) are encoded straight
from the buckets' columns (server/timeseries/rowbson.py), not built as dicts and encoded. The bytes the
client receives must be exactly those of the dict path — the same read with a stage left after it
(``$skip: 0``), and a whole-bucket unpack (``$skip: 0`` first) — field order and BSON types included,
and the documents exactly a regular collection's holding the same measurements (field order aside: a
measurement is ``{time, meta, columns every row holds, the others}``), for columns of every kind: doubles
with NaN (payloads too) and -0.0, int32, int64, dates in and out of ``datetime``'s range, bools,
ObjectIds, constant and varying strings, nulls, objects, arrays, Decimal128, sparse and mixed columns;
meta present (an object, a scalar) or missing; buckets in memory and stored."""

from __future__ import annotations

import datetime as dt
import math
import struct

import bson
import pytest
from bson import Decimal128, Int64, ObjectId
from bson.codec_options import CodecOptions, DatetimeConversion
from bson.datetime_ms import DatetimeMS
from bson.raw_bson import RawBSONDocument
from harness.ts_differential import in_memory_then_stored
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tidemark.protocol.codec import encode_in_order

pytestmark = pytest.mark.commands("aggregate", "find", "getMore", "insert", "delete")

RAW = CodecOptions(document_class=RawBSONDocument, datetime_conversion=DatetimeConversion.DATETIME_AUTO)
T0 = dt.datetime(2024, 3, 1)
FIELDS = ("a", "b", "c", "d")
NAN_PAYLOAD = struct.unpack("<d", struct.pack("<Q", 0x7FF8_0000_0000_0ABC))[0]
OIDS = [ObjectId(bytes([i]) * 12) for i in range(3)]

SCHEMES = {  # what one series' rows hold in one field
    "double": st.sampled_from([-0.0, 0.0, 1.5, 90.0, 95.5, math.inf, -math.inf]),
    "double_nan": st.sampled_from([1.5, 95.0, math.nan, -math.nan, NAN_PAYLOAD]),
    "int": st.integers(-(2**31), 2**31 - 1),
    "long": st.sampled_from([Int64(v) for v in (-(2**63), -1, 2**53 + 1, 2**63 - 1)]),
    "date": st.sampled_from([dt.datetime(2020, 1, 1), dt.datetime(1960, 5, 5, 0, 0, 0, 123000),
                             DatetimeMS(-(2**62)), DatetimeMS(2**62)]),
    "bool": st.booleans(),
    "oid": st.sampled_from(OIDS),
    "const_string": st.just("cpu"),
    "string": st.sampled_from(["", "x", "héllo", "y" * 40]),
    "null": st.none(),
    "object": st.sampled_from([{"k": 1, "j": [1, {"z": None}]}, {}, {"b": 2.5, "a": "s"}]),
    "array": st.sampled_from([[], [1, 95.0], [[1], {"k": "v"}]]),
    "decimal": st.sampled_from([Decimal128("2.5"), Decimal128("NaN")]),
}
MIXED = st.one_of(*SCHEMES.values())
METAS = st.sampled_from(["missing", {"h": "a"}, {"h": "b", "r": [1, 2]}, "scalar", 7, None])


@st.composite
def measurements(draw) -> list[dict]:
    docs = []
    for series in range(draw(st.integers(1, 3))):
        meta = draw(METAS)
        schemes = {f: draw(st.sampled_from(sorted(SCHEMES) + ["mixed", "missing", "sparse"])) for f in FIELDS}
        for i in range(draw(st.integers(1, 40))):
            doc: dict = {"t": T0 + dt.timedelta(seconds=30 * i + series, milliseconds=draw(st.integers(0, 999)))}
            if meta != "missing":
                doc["m"] = meta
            for field, scheme in schemes.items():
                if scheme == "missing":
                    continue
                if scheme == "sparse":
                    if draw(st.booleans()):
                        doc[field] = draw(MIXED)
                    continue
                doc[field] = draw(MIXED if scheme == "mixed" else SCHEMES[scheme])
            docs.append(doc)
    return docs


@st.composite
def filters(draw) -> dict:
    parts: list[dict] = [{"t": {"$gte": T0 + dt.timedelta(seconds=draw(st.integers(0, 300)))}}]
    if draw(st.booleans()):
        parts.append({"t": {"$lt": T0 + dt.timedelta(seconds=draw(st.integers(300, 1300)))}})
    for field in draw(st.lists(st.sampled_from(FIELDS), max_size=2)):
        op = draw(st.sampled_from(["$gt", "$lte", "$ne", "$exists"]))
        parts.append({field: {op: True if op == "$exists" else draw(st.sampled_from([1.5, 90, "x", None]))}})
    meta = draw(st.sampled_from([None, {"m.h": "a"}, {"m.h": {"$in": ["a", "b"]}}, {"m": {"$exists": False}}]))
    if meta is not None:
        parts.append(meta)
    return parts[0] if len(parts) == 1 else {"$and": parts}


def _raw(cursor) -> list[bytes]:
    return [doc.raw for doc in cursor]


def _canonical(raw: bytes) -> bytes:
    """A document's BSON with its fields sorted at every level (types and values untouched)."""
    def sort(value):
        if isinstance(value, dict):
            return {k: sort(value[k]) for k in sorted(value)}
        if isinstance(value, list):
            return [sort(v) for v in value]
        return value

    options = CodecOptions(datetime_conversion=DatetimeConversion.DATETIME_AUTO)
    return bson.encode(sort(bson.decode(raw, codec_options=options)), codec_options=options)


def _pair(db):
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m", "granularity": "seconds"})
    return db.get_collection("ts", codec_options=RAW), db.get_collection("reg", codec_options=RAW)


@pytest.fixture
def pair(db):
    return _pair(db)


@pytest.fixture(scope="module")
def checkpointing_pair(tmp_path_factory):
    """On a server checkpointing every 50 ms (``syncdelay``): in-memory buckets are stored between any
    two reads (the fresh-clone CI once caught a 60 s checkpoint between two reads of one example, and the
    second read put the buckets still in memory after the stored one)."""
    from harness import ServerProcess

    base = tmp_path_factory.mktemp("checkpointing")
    proc = ServerProcess(base / "db", params={"syncdelay": 0.05}, log_path=base / "server.log")
    proc.start()
    client = proc.client()
    yield _pair(client.checkpointing)
    client.close()
    assert proc.terminate() == 0


def _same_bytes_as_the_dict_path_and_a_regular_collection(pair, docs, flts):
    ts, reg = pair
    phases = []
    for stored in in_memory_then_stored(ts, reg, docs, {"_id": "none"}):
        phases.append([])
        for flt in flts + [{}]:
            direct = _raw(ts.aggregate([{"$match": flt}], batchSize=7))
            assert direct == _raw(ts.aggregate([{"$match": flt}, {"$skip": 0}])), (flt, stored)
            assert direct == _raw(ts.aggregate([{"$skip": 0}, {"$match": flt}])), (flt, stored)
            assert direct == _raw(ts.find(flt, batch_size=5)), (flt, stored)
            assert sorted(map(_canonical, direct)) == sorted(map(_canonical, _raw(reg.find(flt)))), (flt, stored)
            phases[-1].append(direct)
    # the same bytes in the same order whether the buckets were in memory or stored (MongoDB has no such
    # difference: every bucket is in its collection)
    in_memory, stored = phases
    assert in_memory == stored


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                HealthCheck.too_slow])
@given(docs=measurements(), flts=st.lists(filters(), min_size=4, max_size=4))
def test_measurements_returned_as_they_are_are_the_dict_paths_bytes_and_a_regular_collections(pair, docs, flts):
    _same_bytes_as_the_dict_path_and_a_regular_collection(pair, docs, flts)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                HealthCheck.too_slow])
@given(docs=measurements(), flts=st.lists(filters(), min_size=4, max_size=4))
def test_reads_are_the_same_while_checkpoints_store_buckets_between_them(checkpointing_pair, docs, flts):
    _same_bytes_as_the_dict_path_and_a_regular_collection(checkpointing_pair, docs, flts)


def test_a_tsbs_read_returns_each_measurement_in_the_buckets_field_order(pair):
    """The high-cpu-1 shape: every column typed or constant, the rows one array cut into documents."""
    ts, _ = pair
    tags = {"hostname": "host_1", "region": "eu", "rack": "4"}
    normalized = {"hostname": "host_1", "rack": "4", "region": "eu"}  # a bucket's meta: fields sorted
    rows = [{"time": None, "t": T0 + dt.timedelta(seconds=10 * i), "m": tags, "_id": OIDS[i % 3],
             "measurement": "cpu", "usage_user": float(i % 100), "n": i, "big": Int64(i), "ok": i % 2 == 0}
            for i in range(300)]
    for row in rows:
        del row["time"]
    ts.insert_many(rows)
    for stored in (False, True):
        if stored:
            ts.delete_many({"_id": "none"})
        flt = {"t": {"$gte": T0 + dt.timedelta(minutes=5)}, "usage_user": {"$gt": 90.0}, "m.hostname": {"$in": ["host_1"]}}
        found = _raw(ts.aggregate([{"$match": flt}]))
        expected = [r for r in rows if r["t"] >= T0 + dt.timedelta(minutes=5) and r["usage_user"] > 90.0]
        assert found == [encode_in_order({"t": r["t"], "m": normalized, "_id": r["_id"], "measurement": "cpu",
                                      "usage_user": r["usage_user"], "n": r["n"], "big": r["big"], "ok": r["ok"]})
                         for r in expected]


def test_a_bucket_whose_time_column_is_not_typed_returns_its_dicts_bytes(db):
    """A bucket written by a client with its rows keyed other than 0..n-1: the rows come as dicts
    (bucketdoc.unpack_document), their bytes those dicts' whichever path returns them."""
    db.create_collection("c", timeseries={"timeField": "t", "metaField": "m"})
    start = dt.datetime(2024, 3, 1)
    bucket = {"_id": ObjectId(int(start.replace(tzinfo=dt.UTC).timestamp()).to_bytes(4, "big") + b"\x00" * 8),
              "control": {"version": 1, "min": {"t": start, "x": 1.0}, "max": {"t": start + dt.timedelta(seconds=5),
                                                                              "x": 99.0}},
              "meta": {"h": "a"},
              "data": {"t": {"1": start + dt.timedelta(seconds=1), "5": start + dt.timedelta(seconds=5)},
                       "x": {"1": 99.0, "5": 1.0}, "s": {"5": "only"}}}
    db.system.buckets.c.insert_one(bucket)
    coll = db.get_collection("c", codec_options=RAW)
    for flt in ({}, {"x": {"$gt": 50}}, {"x": {"$gt": 50}, "m.h": "a"}):
        direct = _raw(coll.aggregate([{"$match": flt}]))
        assert direct == _raw(coll.aggregate([{"$match": flt}, {"$skip": 0}]))
    assert _raw(coll.find()) == [encode_in_order({"t": start + dt.timedelta(seconds=1), "m": {"h": "a"}, "x": 99.0}),
                                 encode_in_order({"t": start + dt.timedelta(seconds=5), "m": {"h": "a"}, "x": 1.0,
                                                  "s": "only"})]
