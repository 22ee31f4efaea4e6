"""What a collection's reads and writes count: ``$collStats``' ``queryExecStats`` and ``$indexStats``.

mongod records, once per operation, the plan it ran (``CollectionQueryInfo::notifyOfQuery``, fed by the
plan's summary stats): an access to each index the plan scans (``$indexStats`` ``accesses.ops``) and a
collection scan for a COLLSCAN plan (``$collStats: {queryExecStats: {}}`` ->
``queryExecStats: {collectionScans: {total, nonTailable}}``, longs; a tailable find adds to ``total``
only). Finds, aggregates, counts and distincts record it, and so do update, delete and findAndModify
statements (write_ops_exec.cpp, find_and_modify.cpp); a getMore, an explain, and a pipeline whose
first stage makes its own documents (``$collStats``, ``$indexStats``) record nothing; a missing
collection answers 26 "Unable to retrieve queryExecStats in $collStats stage :: caused by ::
Collection [<ns>] not found." (document_source_coll_stats.cpp, common_mongod_process_interface.cpp
appendQueryExecStats; jstests/aggregation/sources/collStats/query_exec_stats.js,
jstests/core/index/index_stats.js).

Tidemark left ``queryExecStats`` out of the ``$collStats`` document altogether, and counted index
accesses for reads only: an update, delete or findAndModify through an index left its
``accesses.ops`` unchanged, so an index used only by writes looked unused.
"""

from __future__ import annotations

import datetime as dt

import pytest
from bson.int64 import Int64
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo import CursorType
from pymongo.errors import OperationFailure


def _scans(coll) -> dict:
    (doc,) = coll.aggregate([{"$collStats": {"queryExecStats": {}}}])
    return doc["queryExecStats"]["collectionScans"]


def _ops(coll, name: str) -> int:
    return {d["name"]: d["accesses"]["ops"] for d in coll.aggregate([{"$indexStats": {}}])}[name]


# One operation on a collection with an index on 'a' and none on 'b': (kind, field). A filter on 'a'
# plans an index scan of a_1, one on 'b' a collection scan.
_KINDS = ("find", "find_batches", "aggregate", "count", "distinct", "update_one", "update_many",
          "delete_one", "find_and_modify", "find_and_remove", "upsert", "explain", "coll_stats",
          "index_stats")
_OPS = st.lists(st.tuples(st.sampled_from(_KINDS), st.sampled_from(("a", "b")), st.integers(0, 9)),
                max_size=12)


def _run(coll, kind: str, field: str, value: int) -> tuple[int, int]:
    """Run one operation; (collection scans, a_1 accesses) mongod records for it."""
    flt = {field: value}
    if kind == "find":
        list(coll.find(flt))
    elif kind == "find_batches":  # the getMores add nothing
        list(coll.find({field: {"$gte": 0}}).batch_size(2))
    elif kind == "aggregate":
        list(coll.aggregate([{"$match": flt}, {"$project": {"_id": 1}}]))
    elif kind == "count":
        coll.count_documents(flt)
    elif kind == "distinct":
        coll.distinct("_id", flt)
    elif kind == "update_one":
        coll.update_one(flt, {"$inc": {"n": 1}})
    elif kind == "update_many":
        coll.update_many(flt, {"$inc": {"n": 1}})
    elif kind == "delete_one":
        coll.delete_one(flt)
    elif kind == "find_and_modify":
        coll.find_one_and_update(flt, {"$set": {"m": 1}})
    elif kind == "find_and_remove":
        coll.find_one_and_delete(flt)
    elif kind == "upsert":  # planned like any update, whether it inserts or not
        coll.update_one(flt, {"$set": {"u": 1}}, upsert=True)
    elif kind == "explain":
        coll.find(flt).explain()
        coll.database.command("explain", {"update": coll.name, "updates": [{"q": flt, "u": {"$set": {"e": 1}}}]})
        return 0, 0
    else:  # $collStats / $indexStats read no document of the collection
        list(coll.aggregate([{"$collStats": {"queryExecStats": {}}} if kind == "coll_stats" else {"$indexStats": {}}]))
        return 0, 0
    return (1, 0) if field == "b" else (0, 1)


@pytest.mark.commands("find", "getMore", "aggregate", "count", "distinct", "update", "delete", "findAndModify",
                      "explain")
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=_OPS)
def test_reads_and_writes_count_their_collection_scans_and_index_accesses(db, ops):
    db.drop_collection("c")
    coll = db.c
    coll.insert_many([{"_id": i, "a": i % 10, "b": i % 10} for i in range(20)])
    coll.create_index("a")
    assert _scans(coll) == {"total": Int64(0), "nonTailable": Int64(0)}
    scans = accesses = 0
    for kind, field, value in ops:
        s, a = _run(coll, kind, field, value)
        scans, accesses = scans + s, accesses + a
    assert _scans(coll) == {"total": Int64(scans), "nonTailable": Int64(scans)}
    assert _ops(coll, "a_1") == accesses


@pytest.mark.commands("find", "getMore", "aggregate")
def test_tailable_finds_count_in_total_only(db):
    """query_exec_stats.js: a tailable find is a collection scan, not a non-tailable one (its getMores
    add nothing); index scans add no collection scan; the counters belong to the collection (a
    re-created one starts again at 0)."""
    db.create_collection("capped", capped=True, size=4096)
    coll = db.capped
    coll.insert_many([{"a": i} for i in range(8)])
    for i in range(3):
        assert len(list(coll.find({"a": i}))) == 1
    for i in range(4):
        assert len(list(coll.find({"a": i}, cursor_type=CursorType.TAILABLE))) == 1
    assert _scans(coll) == {"total": 7, "nonTailable": 3}
    assert len(list(coll.find({}).batch_size(2))) == 8
    assert _scans(coll) == {"total": 8, "nonTailable": 4}
    coll.create_index("a")
    for i in range(3):
        list(coll.find({"a": i}))
    assert _scans(coll) == {"total": 8, "nonTailable": 4}
    coll.drop()
    db.create_collection("capped", capped=True, size=4096)
    assert _scans(coll) == {"total": 0, "nonTailable": 0}


@pytest.mark.commands("aggregate", "find")
def test_a_time_series_collection_counts_the_scans_of_its_buckets(db):
    """On a time-series collection $collStats reports the scans of its buckets collection: a read the
    meta index serves adds none, one of a measurement field scans the buckets."""
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    coll = db.ts
    coll.insert_many([{"t": dt.datetime(2024, 1, 1, 0, i), "m": i % 2, "x": i} for i in range(6)])
    assert _scans(coll) == {"total": 0, "nonTailable": 0}
    list(coll.find({"m": 1}))  # the default meta/time index
    assert _scans(coll) == {"total": 0, "nonTailable": 0}
    list(coll.find({"x": 1}))
    list(coll.aggregate([{"$match": {"x": {"$gt": 2}}}]))
    assert _scans(coll) == {"total": 2, "nonTailable": 2}


@pytest.mark.commands("aggregate")
@pytest.mark.parametrize("spec", [1, "1", True, []])
def test_query_exec_stats_takes_an_empty_object(db, spec):
    db.c.insert_one({})
    with pytest.raises(OperationFailure) as exc:
        list(db.c.aggregate([{"$collStats": {"queryExecStats": spec}}]))
    assert exc.value.code == 14  # TypeMismatch: the IDL field is an object
    with pytest.raises(OperationFailure) as exc:
        list(db.c.aggregate([{"$collStats": {"queryExecStats": {"x": 1}}}]))
    assert exc.value.code == 31170


@pytest.mark.commands("aggregate")
def test_query_exec_stats_of_a_missing_collection_fails(db, client):
    with pytest.raises(OperationFailure) as exc:
        list(db.missing.aggregate([{"$collStats": {"queryExecStats": {}}}]))
    assert exc.value.code == 26
    assert exc.value.details["errmsg"] == ("Unable to retrieve queryExecStats in $collStats stage :: caused by :: "
                                           f"Collection [{db.name}.missing] not found.")
    other = client[db.name + "_nodb"]
    with pytest.raises(OperationFailure) as exc:
        list(other.c.aggregate([{"$collStats": {"queryExecStats": {}}}]))
    assert exc.value.code == 26
