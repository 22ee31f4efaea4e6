"""Collection statistics from storage counters (stored record bytes, index bytes): the storageStats
document of collStats and of the ``$collStats`` stage. Below the command families: the read core's
``$collStats`` callback and ``tidemark.commands.stats`` both use it. Time-series buckets still in memory
count as stored (``tidemark.timeseries.scan.unstored_buckets``).
"""

from __future__ import annotations

import datetime
from decimal import ROUND_HALF_EVEN

from bson.decimal128 import Decimal128
from bson.int64 import Int64

from tidemark.context import ServerState
from tidemark.core import collection as C
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.timeseries.scan import unstored_buckets


def storage_stats(r, info, scale: int = 1) -> dict:
    """The storageStats document of one collection (inside a read transaction)."""
    count = r.count(info)
    size = r.data_size(info)
    index_sizes = {s["name"]: r.index_size(info, s["name"]) for s in info.indexes}
    total_index = sum(index_sizes.values())
    options = info.options or {}
    capped = {"capped": True, "max": Int64(options.get("max") or 0), "maxSize": Int64(options["size"] // scale)} \
        if options.get("capped") else {"capped": False}
    return {
        "size": Int64(size // scale),
        "count": Int64(count),
        "avgObjSize": Int64(size // count) if count else Int64(0),
        "numOrphanDocs": Int64(0),
        "storageSize": Int64(size // scale),
        "freeStorageSize": Int64(0),
        **capped,
        "nindexes": len(info.indexes),
        "indexBuilds": [],
        "totalIndexSize": Int64(total_index // scale),
        "totalSize": Int64((size + total_index) // scale),
        "indexSizes": {k: Int64(v // scale) for k, v in index_sizes.items()},
        "scaleFactor": scale,
    }


def empty_stats(scale: int) -> dict:
    return {"size": Int64(0), "count": Int64(0), "numOrphanDocs": Int64(0), "storageSize": Int64(0),
            "totalSize": Int64(0), "nindexes": 0, "totalIndexSize": Int64(0), "indexDetails": {},
            "indexSizes": {}, "scaleFactor": scale}


_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def scale_arg(spec: dict | None) -> int:
    """The ``scale`` of collStats / ``$collStats.storageStats`` as mongod's IDL reads a ``safeInt``
    (``BSONElement::safeNumberInt``): any number, NaN as 0, a double truncated toward zero, a decimal
    rounded half to even, out-of-range values clamped (to the long range, then the int range) — so
    ``Number.MAX_VALUE`` is 2147483647, and every scaled size fits a long; then at least 1."""
    scale = (spec or {}).get("scale", 1)
    if isinstance(scale, bool) or not isinstance(scale, (int, float, Decimal128)):
        raise MongoError(ErrorCode.BadValue, "scale has to be > 0")
    n = safe_number_int(scale)
    if n < 1:
        raise MongoError(ErrorCode.BadValue, "scale has to be > 0")
    return n


def safe_number_int(value: int | float | Decimal128) -> int:
    """``BSONElement::safeNumberInt`` of a number (a pure conversion: never raises)."""
    if isinstance(value, Decimal128):
        d = value.to_decimal()
        n = 0 if d.is_nan() else _INT64_MAX if d > _INT64_MAX else _INT64_MIN if d < _INT64_MIN \
            else int(d.to_integral_value(rounding=ROUND_HALF_EVEN))
    elif isinstance(value, float):
        n = 0 if value != value else _INT64_MAX if value >= 2.0**63 else _INT64_MIN if value < -(2.0**63) \
            else int(value)
    else:
        n = int(value)
    return min(max(n, _INT32_MIN), _INT32_MAX)


def coll_stats_document(server: ServerState, db: str, coll: str, spec: dict) -> dict:
    """One `$collStats` output document (storageStats / count sections as requested)."""
    ns = C.ns_of(db, coll)
    out: dict = {"ns": ns, "host": server.host,
                 "localTime": datetime.datetime.now(datetime.UTC).replace(tzinfo=None)}
    with server.engine.read() as r:
        info = r.get_collection(ns)
        # mongod fails the section that needs the missing collection, with that section's context
        # (storageStats before count, its order of the sections)
        missing = info is None and C.get_view(r, db, coll) is None
        unstored = unstored_buckets(server, ns) if C.is_buckets_collection(coll, info) else (0, 0)
        if "storageStats" in spec:
            scale = scale_arg(spec.get("storageStats"))
            if missing:
                raise _not_found("storageStats", ns)
            out["storageStats"] = storage_stats(r, info, scale) if info else empty_stats(scale)
            if unstored[0]:  # in-memory buckets not stored yet count too
                add_unstored(out["storageStats"], unstored, scale)
        if "count" in spec:
            if missing:
                raise _not_found("count", ns)
            out["count"] = Int64(r.count(info) + unstored[0]) if info else Int64(0)
    return out


def _not_found(section: str, ns: str) -> MongoError:
    return MongoError(ErrorCode.NamespaceNotFound,
                      f"Unable to retrieve {section} in $collStats stage :: caused by :: Collection [{ns}] not found.")


def add_unstored(stats: dict, unstored: tuple[int, int], scale: int) -> None:
    count, size = unstored
    stats["count"] = Int64(stats["count"] + count)
    for key in ("size", "storageSize", "totalSize"):
        stats[key] = Int64(stats[key] + size // scale)
    if stats["count"]:
        stats["avgObjSize"] = Int64(stats["size"] * scale // stats["count"])
