"""Which time-series buckets have expired (pure; spec §9).

A collection-level ``expireAfterSeconds`` is a TTL on the buckets' clustered ``_id``: a bucket is
removed, whole, once even its latest possible measurement (bucket start + bucketMaxSpanSeconds) is
older than the expiry, i.e. when ``_id time <= now - expireAfterSeconds - bucketMaxSpanSeconds``.
Comparing against the max-filled ObjectId of that second makes the bound inclusive of the whole
second. Buckets are never partially expired.

Partial TTL indexes (6.3+) use the same margin on ``control.min.<time>`` and only cover the buckets
matching the index's (meta-only) partial filter.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import Any

from bson.objectid import ObjectId

_EPOCH = _dt.datetime(1970, 1, 1)
_MAX_OID_SECONDS = 2**32 - 1


def cutoff_seconds(now: _dt.datetime, expire_after_seconds: int, bucket_max_span_seconds: int) -> int:
    """Epoch seconds at or before which a bucket's start means the whole bucket has expired."""
    now_s = int((now - _EPOCH).total_seconds())
    return now_s - int(expire_after_seconds) - int(bucket_max_span_seconds)


def expiry_id_bound(cutoff: int) -> ObjectId | None:
    """The largest bucket ``_id`` that is expired (inclusive), or None when nothing can be.

    Pre-1970 cutoffs expire nothing; bucket ids carry 32-bit unsigned seconds, so a cutoff past
    2106 is clamped to the largest representable second.
    """
    if cutoff < 0:
        return None
    seconds = min(cutoff, _MAX_OID_SECONDS)
    return ObjectId(seconds.to_bytes(4, "big") + b"\xff" * 8)


def bucket_is_expired(bucket_id: ObjectId, bound: ObjectId | None) -> bool:
    """True when the bucket with ``bucket_id`` is at or before the expiry bound."""
    return bound is not None and bucket_id.binary <= bound.binary


@dataclass(frozen=True)
class PartialTtl:
    """A partial TTL index on a time-series collection (``{"control.min.<t>": ±1}`` + meta filter)."""

    name: str
    expire_after_seconds: int
    bucket_filter: dict[str, Any]  # the bucket-level partialFilterExpression


def partial_ttl_indexes(bucket_index_specs: list[dict[str, Any]], time_field: str) -> list[PartialTtl]:
    """The partial TTL indexes among a buckets collection's index specs."""
    out = []
    key_name = "control.min." + time_field
    for spec in bucket_index_specs:
        key = spec.get("key") or {}
        if "expireAfterSeconds" in spec and list(key) == [key_name]:
            out.append(
                PartialTtl(
                    spec["name"], int(spec["expireAfterSeconds"]), spec.get("partialFilterExpression") or {}
                )
            )
    return out


def control_min_cutoff(
    now: _dt.datetime, expire_after_seconds: int, bucket_max_span_seconds: int
) -> _dt.datetime:
    """For a partial TTL index: buckets with ``control.min.<t>`` at or before this date have expired."""
    return _EPOCH + _dt.timedelta(seconds=cutoff_seconds(now, expire_after_seconds, bucket_max_span_seconds))
