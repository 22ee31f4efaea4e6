"""Indexes on time-series collections end to end (spec §7): translation, listIndexes, drop, hide, hint."""

from __future__ import annotations

import datetime as dt

import pytest
from pymongo.errors import OperationFailure

T0 = dt.datetime(2024, 3, 1, 12, 0, 0)


def _ts(db, name="c", meta="mm", **extra):
    options = {"timeField": "tm"}
    if meta:
        options["metaField"] = meta
    db.create_collection(name, timeseries=options, **extra)
    return db[name]


def _keys(coll):
    return {ix["name"]: dict(ix["key"]) for ix in coll.list_indexes()}


def _bucket_keys(db, name="c"):
    return {ix["name"]: dict(ix["key"]) for ix in db[f"system.buckets.{name}"].list_indexes()}


def _code(fn):
    with pytest.raises(OperationFailure) as info:
        fn()
    return info.value.code, info.value.details.get("errmsg", "")


@pytest.mark.commands("createIndexes", "listIndexes")
def test_default_meta_time_index_is_listed_with_user_keys(db):
    coll = _ts(db)
    assert list(coll.list_indexes()) == [{"v": 2, "key": {"mm": 1, "tm": 1}, "name": "mm_1_tm_1"}]
    assert _bucket_keys(db)["mm_1_tm_1"] == {"meta": 1, "control.min.tm": 1, "control.max.tm": 1}


def test_no_default_index_without_meta_field(db):
    coll = _ts(db, meta=None)
    assert list(coll.list_indexes()) == []


def test_user_specs_are_translated_to_bucket_keys_and_listed_as_given(db):
    coll = _ts(db)
    coll.create_index([("mm.sensorId", 1), ("tm", -1)])
    coll.create_index([("temp", 1)])
    coll.create_index([("tm", -1)], name="time_desc")
    buckets = _bucket_keys(db)
    assert list(buckets["mm.sensorId_1_tm_-1"].items()) == [
        ("meta.sensorId", 1),
        ("control.max.tm", -1),
        ("control.min.tm", -1),
    ]
    assert buckets["temp_1"] == {"control.min.temp": 1, "control.max.temp": 1}
    listed = _keys(coll)
    assert list(listed["mm.sensorId_1_tm_-1"].items()) == [("mm.sensorId", 1), ("tm", -1)]
    assert listed["temp_1"] == {"temp": 1}
    assert listed["time_desc"] == {"tm": -1}


def test_list_indexes_cursor_namespace_is_the_view(db):
    _ts(db)
    reply = db.command("listIndexes", "c")
    assert reply["cursor"]["ns"] == f"{db.name}.c"


def test_bucket_index_created_directly_without_user_meaning_is_omitted(db):
    coll = _ts(db)
    db["system.buckets.c"].create_index([("control.count", 1)], name="raw")
    assert "raw" in _bucket_keys(db)
    assert "raw" not in _keys(coll)


@pytest.mark.parametrize(
    ("options", "code"),
    [
        ({"unique": True}, 72),
        ({"sparse": True}, 72),
    ],
)
def test_unsupported_options_on_measurements_are_refused(db, options, code):
    coll = _ts(db)
    assert _code(lambda: coll.create_index([("temp", 1)], **options))[0] == code


def test_unique_index_message(db):
    coll = _ts(db)
    code, msg = _code(lambda: coll.create_index([("mm", 1)], unique=True))
    assert (code, msg) == (72, "Unique indexes are not supported on time-series collections")


def test_text_index_is_refused(db):
    coll = _ts(db)
    assert _code(lambda: coll.create_index([("mm", "text")]))[0] == 72


@pytest.mark.parametrize("field", ["tm", "temp"])
def test_hashed_on_time_or_measurement_is_cannot_create_index(db, field):
    coll = _ts(db)
    assert _code(lambda: coll.create_index([(field, "hashed")]))[0] == 67


def test_hashed_on_meta_subfield_is_allowed(db):
    coll = _ts(db)
    coll.create_index([("mm.a", "hashed")])
    assert _bucket_keys(db)["mm.a_hashed"] == {"meta.a": "hashed"}


def test_partial_filter_with_collation_conflicts(db):
    coll = _ts(db)
    code, _ = _code(
        lambda: coll.create_index([("mm", 1)], partialFilterExpression={"mm": 1}, collation={"locale": "en"})
    )
    assert code == 85


def test_partial_index_keeps_the_user_filter_in_list_indexes(db):
    coll = _ts(db)
    coll.create_index([("mm", 1)], name="p", partialFilterExpression={"temp": {"$gt": 5}})
    spec = next(ix for ix in coll.list_indexes() if ix["name"] == "p")
    assert spec["partialFilterExpression"] == {"temp": {"$gt": 5}}
    raw = next(ix for ix in db["system.buckets.c"].list_indexes() if ix["name"] == "p")
    assert raw["partialFilterExpression"] == {"control.max.temp": {"$gt": 5}}


def test_ttl_index_on_time_with_meta_partial_filter(db):
    coll = _ts(db)
    coll.create_index(
        [("tm", 1)], name="ttl", expireAfterSeconds=400, partialFilterExpression={"mm": {"$gt": 5}}
    )
    spec = next(ix for ix in coll.list_indexes() if ix["name"] == "ttl")
    assert spec["key"] == {"tm": 1} and spec["expireAfterSeconds"] == 400
    assert _bucket_keys(db)["ttl"] == {"control.min.tm": 1}


def test_ttl_index_rules(db):
    coll = _ts(db)
    assert _code(lambda: coll.create_index([("tm", 1)], expireAfterSeconds=10))[0] == 72
    meta_partial = {"partialFilterExpression": {"mm": {"$gt": 5}}, "expireAfterSeconds": 10}
    assert _code(lambda: coll.create_index([("mm", 1)], **meta_partial))[0] == 72
    assert _code(lambda: coll.create_index([("tm", 1), ("mm", 1)], **meta_partial))[0] == 67


@pytest.mark.commands("dropIndexes")
def test_drop_index_by_name_and_by_user_key_pattern(db):
    coll = _ts(db)
    coll.create_index([("temp", -1)])
    coll.drop_index([("temp", -1)])
    assert "temp_-1" not in _keys(coll)
    coll.drop_index("mm_1_tm_1")
    assert _keys(coll) == {}


def test_drop_unknown_index_is_index_not_found(db):
    coll = _ts(db)
    assert _code(lambda: coll.drop_index("nope"))[0] == 27
    assert _code(lambda: coll.drop_index([("nope", 1)]))[0] == 27


def test_hidden_via_create_index_and_collmod(db):
    coll = _ts(db)
    coll.create_index([("temp", 1)], hidden=True)
    assert next(ix for ix in coll.list_indexes() if ix["name"] == "temp_1")["hidden"] is True
    reply = db.command("collMod", "c", index={"keyPattern": {"temp": 1}, "hidden": False})
    assert reply["hidden_old"] is True and reply["hidden_new"] is False
    assert (
        "hidden" not in next(ix for ix in coll.list_indexes() if ix["name"] == "temp_1")
        or next(ix for ix in coll.list_indexes() if ix["name"] == "temp_1")["hidden"] is False
    )
    db.command("collMod", "c", index={"name": "mm_1_tm_1", "hidden": True})
    assert next(ix for ix in coll.list_indexes() if ix["name"] == "mm_1_tm_1")["hidden"] is True


def test_collmod_unknown_index_is_index_not_found(db):
    _ts(db)
    assert _code(lambda: db.command("collMod", "c", index={"name": "nope", "hidden": True}))[0] == 27


def test_hint_by_name_or_user_key_pattern(db):
    coll = _ts(db)
    coll.insert_many([{"tm": T0 + dt.timedelta(minutes=i), "mm": i % 3, "temp": i} for i in range(30)])
    by_key = list(coll.find({"mm": 1}).hint([("mm", 1), ("tm", 1)]))
    by_name = list(coll.find({"mm": 1}).hint("mm_1_tm_1"))
    assert len(by_key) == len(by_name) == 10


def test_existing_index_is_a_noop_and_same_name_other_key_conflicts(db):
    coll = _ts(db)
    reply = db.command("createIndexes", "c", indexes=[{"key": {"mm": 1, "tm": 1}, "name": "mm_1_tm_1"}])
    assert reply["numIndexesBefore"] == reply["numIndexesAfter"] == 1
    assert _code(lambda: coll.create_index([("temp", 1)], name="mm_1_tm_1"))[0] == 86


def test_index_on_existing_data_is_used_for_queries(db):
    coll = _ts(db)
    coll.insert_many([{"tm": T0 + dt.timedelta(seconds=i), "mm": {"s": i % 4}, "temp": i} for i in range(40)])
    coll.create_index([("mm.s", 1)])
    assert sorted(d["temp"] for d in coll.find({"mm.s": 2}).hint([("mm.s", 1)])) == list(range(2, 40, 4))


def _buckets_scanned(db, flt):
    reply = db.command("explain", {"find": "c", "filter": flt}, verbosity="executionStats")
    return reply["stages"][0]["$cursor"]["executionStats"]["totalDocsExamined"]


def test_query_on_one_meta_value_reads_a_bounded_number_of_buckets_via_the_index(db):
    coll = _ts(db)
    docs = [{"tm": T0 + dt.timedelta(seconds=i), "mm": s, "v": i} for s in range(300) for i in range(2)]
    coll.insert_many(docs)
    coll.delete_many({"mm": -1})  # write open buckets in full so storage indexes hold them all
    assert sorted(d["v"] for d in coll.find({"mm": 123})) == [0, 1]
    assert _buckets_scanned(db, {"mm": 123}) <= 2
