"""Collection statistics from storage counters (stored record bytes, index bytes): the storageStats
document of collStats and of the ``$collStats`` stage. Below the command families: the read core's
``$collStats`` callback and ``tidemark.commands.stats`` both use it. Time-series buckets still in memory
count as stored (``tidemark.timeseries.scan.unstored_buckets``).
"""

from __future__ import annotations

import datetime

from bson.int64 import Int64

from tidemark.arguments import scale_arg
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


def coll_stats_document(server: ServerState, db: str, coll: str, spec: dict) -> dict:
    """One `$collStats` output document (storageStats / count / queryExecStats sections as requested)."""
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
        if "queryExecStats" in spec:
            if missing:
                raise _not_found("queryExecStats", ns)
            out["queryExecStats"] = server.index_usage.query_exec_stats(info)
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
