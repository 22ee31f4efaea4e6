"""Issue 25 item 13: the ``$_internalUnpackBucket`` stage of an explain on a time-series collection
carries the flags 7.0's resolved view passes it (resolved_view.cpp ``asExpandedViewAggregation``) and
shows them where its ``serializeToArray`` does: ``assumeNoMixedSchemaData: true`` after
``bucketMaxSpanSeconds`` (a collection created in 7.0 has no mixed-schema buckets; the bucket catalog
rolls a bucket over on a schema change), then ``usesExtendedRange: true`` only once the collection
holds a date whose whole seconds fall outside ``[0, 2**31 - 1]`` (``dateOutsideStandardRange``)."""

from __future__ import annotations

import datetime as dt

import pytest
from bson.codec_options import CodecOptions, DatetimeConversion
from bson.datetime_ms import DatetimeMS

pytestmark = pytest.mark.commands("explain", "aggregate", "find", "insert")

T0 = dt.datetime(2024, 3, 1)


def _unpack(db, coll="ts", pipeline=None):
    reply = db.command("explain", {"aggregate": coll, "pipeline": pipeline or [{"$match": {"v": {"$gt": 1}}}],
                                   "cursor": {}}, verbosity="queryPlanner")
    return reply["stages"][1]["$_internalUnpackBucket"]


def _create(db, name="ts"):
    db.create_collection(name, timeseries={"timeField": "t", "metaField": "m"})
    return db.get_collection(name, codec_options=CodecOptions(datetime_conversion=DatetimeConversion.DATETIME_MS))


def test_the_flags_follow_bucket_max_span_seconds_in_7_0_order(db):
    _create(db).insert_one({"t": DatetimeMS(T0), "m": 1, "v": 5})
    unpack = _unpack(db)
    assert list(unpack) == ["exclude", "timeField", "metaField", "bucketMaxSpanSeconds", "assumeNoMixedSchemaData",
                            "eventFilter"]
    assert unpack["assumeNoMixedSchemaData"] is True
    # a find explains as the same aggregation
    reply = db.command("explain", {"find": "ts", "filter": {"v": 2}}, verbosity="queryPlanner")
    assert reply["stages"][1]["$_internalUnpackBucket"]["assumeNoMixedSchemaData"] is True


@pytest.mark.parametrize("when_ms, extended", [
    (-86_400_000 * 200, True),                   # 1969
    (int(dt.datetime(2040, 1, 1, tzinfo=dt.UTC).timestamp() * 1000), True),
    ((2**31 - 1) * 1000 + 999, False),           # 2038-01-19T03:14:07.999Z: still standard
    ((2**31) * 1000, True),                      # 03:14:08: the first extended second
    (0, False),
])
def test_uses_extended_range_once_a_date_outside_1970_2038_is_stored(db, when_ms, extended):
    coll = _create(db)
    coll.insert_one({"t": DatetimeMS(T0), "m": 1, "v": 5})
    assert "usesExtendedRange" not in _unpack(db)
    coll.insert_one({"t": DatetimeMS(when_ms), "m": 2, "v": 6})
    unpack = _unpack(db)
    assert unpack.get("usesExtendedRange") is (True if extended else None)
    if extended:
        keys = list(unpack)
        assert keys.index("usesExtendedRange") == keys.index("assumeNoMixedSchemaData") + 1
    assert sorted(d["v"] for d in coll.find()) == [5, 6]


@pytest.mark.slow
def test_stored_buckets_tell_after_a_restart(start_server):
    server = start_server()
    with server.client() as client:
        _create(client.flags).insert_many([{"t": DatetimeMS(T0), "m": 1, "v": 1},
                                           {"t": DatetimeMS(-86_400_000), "m": 1, "v": 2}])
        _create(client.flags, "plain").insert_one({"t": DatetimeMS(T0), "m": 1, "v": 1})
    server.restart()
    with server.client() as client:
        assert _unpack(client.flags)["usesExtendedRange"] is True
        assert "usesExtendedRange" not in _unpack(client.flags, "plain")
