"""Time-series TTL: which buckets are expired (spec §9)."""

import datetime as dt

from bson.objectid import ObjectId

from tidemark.timeseries import ttl

NOW = dt.datetime(2024, 5, 1, 12, 0, 0)


def _bucket_id(when: dt.datetime, tail: bytes = b"\x00" * 8) -> ObjectId:
    seconds = int((when - dt.datetime(1970, 1, 1)).total_seconds())
    return ObjectId(seconds.to_bytes(4, "big") + tail)


def test_cutoff_subtracts_expiry_and_bucket_span():
    cutoff = ttl.cutoff_seconds(NOW, 5, 3600)
    assert cutoff == int((NOW - dt.datetime(1970, 1, 1)).total_seconds()) - 3605


def test_recent_bucket_within_span_margin_is_not_expired():
    # spec example: expire 5 s, span 3600 — a bucket started 5 min ago is kept
    bound = ttl.expiry_id_bound(ttl.cutoff_seconds(NOW, 5, 3600))
    assert not ttl.bucket_is_expired(_bucket_id(NOW - dt.timedelta(minutes=5)), bound)


def test_bucket_older_than_expiry_plus_span_is_expired():
    bound = ttl.expiry_id_bound(ttl.cutoff_seconds(NOW, 5, 3600))
    assert ttl.bucket_is_expired(_bucket_id(NOW - dt.timedelta(hours=1, seconds=6)), bound)


def test_bound_is_inclusive_of_the_whole_cutoff_second():
    cutoff = ttl.cutoff_seconds(NOW, 0, 60)
    bound = ttl.expiry_id_bound(cutoff)
    at_cutoff = ObjectId(cutoff.to_bytes(4, "big") + b"\xff" * 8)
    after = ObjectId((cutoff + 1).to_bytes(4, "big") + b"\x00" * 8)
    assert ttl.bucket_is_expired(at_cutoff, bound)
    assert not ttl.bucket_is_expired(after, bound)


def test_pre_epoch_cutoff_expires_nothing():
    assert ttl.expiry_id_bound(-1) is None
    assert not ttl.bucket_is_expired(ObjectId(b"\x00" * 12), None)


def test_partial_ttl_indexes_are_found_by_control_min_key_and_expiry():
    specs = [
        {"v": 2, "key": {"meta": 1, "control.min.t": 1, "control.max.t": 1}, "name": "m_1_t_1"},
        {
            "v": 2,
            "key": {"control.min.t": 1},
            "name": "ttl",
            "expireAfterSeconds": 10,
            "partialFilterExpression": {"meta": {"$gt": 5}},
        },
    ]
    (found,) = ttl.partial_ttl_indexes(specs, "t")
    assert found == ttl.PartialTtl("ttl", 10, {"meta": {"$gt": 5}})


def test_control_min_cutoff_is_now_minus_expiry_minus_span():
    assert ttl.control_min_cutoff(NOW, 10, 3600) == NOW - dt.timedelta(seconds=3610)
