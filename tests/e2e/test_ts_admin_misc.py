"""Other commands on time-series collections (spec §10): rename, reIndex, $out/$merge, dbStats, explain."""

from __future__ import annotations

import datetime as dt

import pytest
from pymongo.errors import OperationFailure

T0 = dt.datetime(2024, 3, 1)


def _ts(db):
    db.create_collection("c", timeseries={"timeField": "t", "metaField": "m"})
    db.c.insert_many([{"t": T0, "m": 1, "v": 1}, {"t": T0, "m": 2, "v": 2}])
    return db.c


def _code(fn):
    with pytest.raises(OperationFailure) as info:
        fn()
    return info.value.code


@pytest.mark.commands("renameCollection")
def test_renaming_the_view_is_refused(db, client):
    _ts(db)
    assert _code(lambda: client.admin.command("renameCollection", f"{db.name}.c", to=f"{db.name}.d")) in (
        20,
        166,
    )
    assert db.c.count_documents({}) == 2


def test_renaming_the_buckets_collection_to_a_normal_name_is_refused(db, client):
    _ts(db)
    code = _code(
        lambda: client.admin.command("renameCollection", f"{db.name}.system.buckets.c", to=f"{db.name}.e")
    )
    assert code in (20, 166)


def test_renaming_a_normal_collection_to_a_buckets_name_is_illegal_operation(db, client):
    db.plain.insert_one({"x": 1})
    code = _code(
        lambda: client.admin.command("renameCollection", f"{db.name}.plain", to=f"{db.name}.system.buckets.x")
    )
    assert code == 20


def test_reindex_of_a_timeseries_collection_fails(db):
    _ts(db)
    with pytest.raises(OperationFailure):
        db.command("reIndex", "c")


@pytest.mark.commands("aggregate")
def test_merge_into_a_timeseries_collection_is_refused_and_writes_nothing(db):
    _ts(db)
    db.plain.insert_one({"t": T0, "m": 3})
    for into in ("c", {"db": db.name, "coll": "c"}, "system.buckets.c"):
        with pytest.raises(OperationFailure) as info:
            list(db.plain.aggregate([{"$merge": {"into": into}}]))
        assert info.value.code == 166
        assert "time-series" in str(info.value)
    assert db.c.count_documents({}) == 2


def test_out_into_an_existing_timeseries_collection_replaces_its_measurements(db):
    _ts(db)
    db.plain.insert_one({"t": T0, "m": 3})
    assert list(db.plain.aggregate([{"$project": {"_id": 0}}, {"$out": "c"}])) == []
    assert [(d["m"], d["t"]) for d in db.c.find()] == [(3, T0)]
    assert "c" in db.list_collection_names(filter={"type": "timeseries"})


def test_merge_into_a_timeseries_collection_is_refused_before_the_pipeline_runs(db):
    _ts(db)
    db.plain.insert_one({"x": 1})
    failing = {"$project": {"y": {"$divide": [1, 0]}}}  # would fail on the first document
    with pytest.raises(OperationFailure) as info:
        list(db.plain.aggregate([failing, {"$merge": "c"}]))
    assert info.value.code == 166
    with pytest.raises(OperationFailure) as info:   # $out runs the pipeline; its failure changes nothing
        list(db.plain.aggregate([failing, {"$out": "c"}]))
    assert info.value.code == 2
    assert db.c.count_documents({}) == 2


def test_out_with_timeseries_options_creates_a_timeseries_collection(db):
    db.plain.insert_one({"t": T0, "m": 3})
    list(db.plain.aggregate([{"$out": {"db": db.name, "coll": "o", "timeseries": {"timeField": "t"}}}]))
    assert "o" in db.list_collection_names(filter={"type": "timeseries"})
    assert db.o.count_documents({"m": 3}) == 1


@pytest.mark.commands("dbStats")
def test_db_stats_counts_the_view_and_the_buckets_collection(db):
    _ts(db)
    stats = db.command("dbStats")
    assert stats["views"] == 1
    names = set(db.list_collection_names())
    assert {"c", "system.buckets.c"} <= names


def test_explain_on_the_view_shows_bucket_filter_and_unpack_stage(db):
    _ts(db)
    reply = db.command(
        "explain", {"find": "c", "filter": {"m": 1, "v": {"$gt": 0}}}, verbosity="executionStats"
    )
    planner = reply["stages"][0]["$cursor"]["queryPlanner"]
    assert planner["namespace"] == f"{db.name}.system.buckets.c"
    assert planner["parsedQuery"] == {"$and": [{"meta": 1}, {"control.max.v": {"$_internalExprGt": 0}}]}
    unpack = reply["stages"][1]["$_internalUnpackBucket"]
    assert unpack["timeField"] == "t" and unpack["metaField"] == "m"
    assert unpack["eventFilter"] == {"m": 1, "v": {"$gt": 0}}
