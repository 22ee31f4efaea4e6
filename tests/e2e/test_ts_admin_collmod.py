"""collMod on time-series collections end to end (spec §8)."""

from __future__ import annotations

import datetime as dt

import pytest
from pymongo.errors import OperationFailure

T0 = dt.datetime(2024, 3, 1, 20, 10, 14, 134000)


def _ts(db, **timeseries):
    db.create_collection("c", timeseries={"timeField": "t", "metaField": "m", **timeseries})
    return db["c"]


def _options(db):
    (entry,) = [c for c in db.list_collections() if c["name"] == "c"]
    return entry["options"]


def _view(db):
    return db["system.views"].find_one({"_id": f"{db.name}.c"})


def _code(fn):
    with pytest.raises(OperationFailure) as info:
        fn()
    return info.value.code, info.value.details.get("errmsg", "")


@pytest.mark.commands("collMod")
def test_granularity_seconds_to_minutes_updates_options_and_view_span(db):
    _ts(db)
    db.command("collMod", "c", timeseries={"granularity": "minutes"})
    assert _options(db)["timeseries"] == {
        "timeField": "t",
        "metaField": "m",
        "granularity": "minutes",
        "bucketMaxSpanSeconds": 86400,
    }
    assert _view(db)["pipeline"][0]["$_internalUnpackBucket"]["bucketMaxSpanSeconds"] == 86400


def test_finer_granularity_is_an_invalid_transition(db):
    _ts(db, granularity="hours")
    code, msg = _code(lambda: db.command("collMod", "c", timeseries={"granularity": "minutes"}))
    assert code == 72 and msg.startswith("Invalid transition for timeseries.granularity")


def test_empty_timeseries_is_a_noop(db):
    _ts(db)
    assert db.command("collMod", "c", timeseries={})["ok"] == 1.0
    assert _options(db)["timeseries"]["granularity"] == "seconds"


def test_bucket_seconds_rules(db):
    _ts(db)
    assert _code(lambda: db.command("collMod", "c", timeseries={"bucketMaxSpanSeconds": 7200}))[0] == 72
    assert (
        _code(
            lambda: db.command(
                "collMod", "c", timeseries={"bucketMaxSpanSeconds": 7200, "bucketRoundingSeconds": 3600}
            )
        )[0]
        == 72
    )
    db.command("collMod", "c", timeseries={"bucketMaxSpanSeconds": 7200, "bucketRoundingSeconds": 7200})
    assert _options(db)["timeseries"] == {
        "timeField": "t",
        "metaField": "m",
        "bucketRoundingSeconds": 7200,
        "bucketMaxSpanSeconds": 7200,
    }
    assert (
        _code(
            lambda: db.command(
                "collMod", "c", timeseries={"bucketMaxSpanSeconds": 3600, "bucketRoundingSeconds": 3600}
            )
        )[0]
        == 72
    )


@pytest.mark.parametrize(
    "option",
    [
        {"validator": {"a": 1}},
        {"validationLevel": "off"},
        {"validationAction": "warn"},
        {"viewOn": "x", "pipeline": []},
    ],
)
def test_forbidden_options_are_invalid_options(db, option):
    _ts(db)
    assert _code(lambda: db.command("collMod", "c", **option))[0] == 72


def test_expire_after_seconds_set_and_off(db):
    _ts(db)
    db.command("collMod", "c", expireAfterSeconds=3600)
    assert _options(db)["expireAfterSeconds"] == 3600
    db.command("collMod", "c", expireAfterSeconds="off")
    assert "expireAfterSeconds" not in _options(db)
    assert _code(lambda: db.command("collMod", "c", expireAfterSeconds=-5))[0] == 72


def test_existing_buckets_are_untouched_and_new_buckets_use_new_rounding(db):
    coll = _ts(db)
    coll.insert_one({"t": T0, "m": 1})
    db.command("collMod", "c", timeseries={"granularity": "minutes"})
    coll.insert_one({"t": T0 + dt.timedelta(days=1), "m": 1})
    coll.delete_many({"_id": "none"})  # a delete writes the open buckets in full (system.buckets shows them)
    starts = sorted(b["control"]["min"]["t"] for b in db["system.buckets.c"].find())
    assert starts == [dt.datetime(2024, 3, 1, 20, 10), dt.datetime(2024, 3, 2, 20, 0)]
    assert sorted(d["t"] for d in coll.find()) == [T0, T0 + dt.timedelta(days=1)]


def test_index_ttl_conversion_and_prepare_unique_are_refused(db):
    _ts(db)
    assert (
        _code(lambda: db.command("collMod", "c", index={"name": "m_1_t_1", "expireAfterSeconds": 5}))[0] == 72
    )
    assert (
        _code(lambda: db.command("collMod", "c", index={"name": "m_1_t_1", "prepareUnique": True}))[0] == 72
    )


def test_granularity_change_on_buckets_namespace_is_invalid_namespace(db):
    _ts(db)
    code, _ = _code(lambda: db.command("collMod", "system.buckets.c", timeseries={"granularity": "minutes"}))
    assert code == 73


def test_bucket_catalog_statistics_survive_a_granularity_change(db):
    coll = _ts(db)
    coll.insert_one({"t": T0, "m": 1})
    db.command("collMod", "c", timeseries={"granularity": "hours"})
    coll.insert_one({"t": T0 + dt.timedelta(days=3), "m": 1})
    stats = db.command("collStats", "c")["timeseries"]
    assert stats["numMeasurementsCommitted"] == 2
    # the first bucket (start T0) holds T0 + 3 days under the new 30-day span: 7.0 reopens it by query
    assert stats["bucketCount"] == 1 and stats["numBucketsReopened"] == 1
    coll.insert_one({"t": T0 + dt.timedelta(days=40), "m": 1})
    assert db.command("collStats", "c")["timeseries"]["bucketCount"] == 2
