"""Collection statistics: collStats (and the `$collStats` stage's storageStats), validate, dataSize.

Sizes come from storage counters (stored record bytes, index bytes). ``validate`` re-derives every
index key from the records and compares the counts with what each index holds.
"""

from __future__ import annotations

import datetime

from bson.int64 import Int64

from protocol.codec import decode
from protocol.errors import ErrorCode, MongoError
from server import namespace
from server.commands import _collection as C
from server.commands import timeseries as ts
from server.context import CommandSpec
from server.query.index_keys import keyer_for


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


def _empty_stats(scale: int) -> dict:
    return {"size": Int64(0), "count": Int64(0), "numOrphanDocs": Int64(0), "storageSize": Int64(0),
            "totalSize": Int64(0), "nindexes": 0, "totalIndexSize": Int64(0), "indexDetails": {},
            "indexSizes": {}, "scaleFactor": scale}


def _scale(spec: dict | None) -> int:
    scale = (spec or {}).get("scale", 1)
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or scale < 1:
        raise MongoError(ErrorCode.BadValue, "scale has to be > 0")
    return int(scale)


def coll_stats_document(server, db: str, coll: str, spec: dict) -> dict:
    """One `$collStats` output document (storageStats / count sections as requested)."""
    ns = C.ns_of(db, coll)
    out: dict = {"ns": ns, "host": server.host,
                 "localTime": datetime.datetime.now(datetime.UTC).replace(tzinfo=None)}
    with server.engine.read() as r:
        info = r.get_collection(ns)
        if info is None and C.get_view(r, db, coll) is None:
            raise MongoError(ErrorCode.NamespaceNotFound, f"Unable to retrieve storageStats in $collStats stage :: "
                                                         f"caused by :: Collection [{ns}] not found.")
        unstored = ts.unstored_buckets(server, ns) if C.is_buckets_collection(coll, info) else (0, 0)
        if "storageStats" in spec:
            scale = _scale(spec.get("storageStats"))
            out["storageStats"] = storage_stats(r, info, scale) if info else _empty_stats(scale)
            if unstored[0]:  # in-memory buckets not stored yet count too
                _add_unstored(out["storageStats"], unstored, scale)
        if "count" in spec:
            out["count"] = Int64(r.count(info) + unstored[0]) if info else Int64(0)
    return out


async def coll_stats(ctx, cmd: dict) -> dict:
    db = ctx.db
    name = C.collection_arg(cmd, "collStats")
    scale = _scale(cmd)
    ns = C.ns_of(db, name)

    def work():
        with ctx.server.engine.read() as r:
            resolved = namespace.lookup(r, db, name, follow=False)  # the command's one resolution
            if resolved.view is not None:
                return resolved, None
            info = resolved.info
            stats = storage_stats(r, info, scale) if info else _empty_stats(scale)
        if C.is_buckets_collection(name, info):  # in-memory buckets not stored yet count too
            _add_unstored(stats, ts.unstored_buckets(ctx.server, ns), scale)
        return resolved, stats

    resolved, stats = await ctx.run_blocking(work)
    view = resolved.view
    if C.is_timeseries_view(view):
        return await ts.VIEW_COMMANDS["collStats"](ctx, cmd, resolved)
    if view is not None:
        raise MongoError(ErrorCode.CommandNotSupportedOnView, f"Namespace {ns} is a view, not a collection")
    return {"ns": ns, **stats}


def _add_unstored(stats: dict, unstored: tuple[int, int], scale: int) -> None:
    count, size = unstored
    stats["count"] = Int64(stats["count"] + count)
    for key in ("size", "storageSize", "totalSize"):
        stats[key] = Int64(stats[key] + size // scale)
    if stats["count"]:
        stats["avgObjSize"] = Int64(stats["size"] * scale // stats["count"])


async def validate(ctx, cmd: dict) -> dict:
    db = ctx.db
    name = C.collection_arg(cmd, "validate")
    ns = C.ns_of(db, name)

    def work():
        nonlocal ns
        with ctx.server.engine.read() as r:
            view = C.get_view(r, db, name)
            if C.is_timeseries_view(view):
                ns = C.ns_of(db, view["viewOn"])  # mongod 6.2+: validate the buckets collection
            elif view is not None:
                raise MongoError(ErrorCode.CommandNotSupportedOnView, "Cannot validate a view")
            info = r.get_collection(ns)
            buckets = info is not None and info.name.startswith(C.BUCKETS_PREFIX)
            noncompliant = 0
            if info is None:
                raise MongoError(ErrorCode.NamespaceNotFound, f"Collection '{ns}' does not exist to validate.")
            expected = {s["name"]: 0 for s in info.indexes}
            keyers = {s["name"]: keyer_for(s) for s in info.indexes}
            nrecords = invalid = 0
            errors: list[str] = []
            for _rid, raw in r.scan(info):
                nrecords += 1
                try:
                    doc = decode(raw)
                except Exception:  # noqa: BLE001 - a corrupt record is what validate reports
                    invalid += 1
                    continue
                if buckets and not is_bucket_shaped(doc):
                    noncompliant += 1
                for idx_name, keyer in keyers.items():
                    expected[idx_name] += len(keyer.keys(doc))
            actual = {}
            for idx_name in expected:
                actual[idx_name] = sum(1 for _ in r.index_scan(info, idx_name, None, None))
            details = {}
            for idx_name, n in actual.items():
                ok = n == expected[idx_name]
                details[idx_name] = {"valid": ok}
                if not ok:
                    errors.append(f"index '{idx_name}' has {n} entries but the records imply {expected[idx_name]}")
            stored_count = r.count(info)
            if stored_count != nrecords:
                errors.append(f"record count {stored_count} differs from the {nrecords} records scanned")
            warnings = [NONCOMPLIANT_WARNING] if noncompliant else []
            return {
                "ns": ns, "uuid": info.uuid, "nInvalidDocuments": invalid,
                "nNonCompliantDocuments": noncompliant,
                "nrecords": nrecords, "nIndexes": len(expected),
                "keysPerIndex": actual, "indexDetails": details, "valid": not errors and not invalid,
                "repaired": False, "warnings": warnings, "errors": errors, "extraIndexEntries": [],
                "missingIndexEntries": [], "corruptRecords": [],
            }

    return await ctx.run_blocking(work)


NONCOMPLIANT_WARNING = ("Detected one or more documents in this collection incompatible with time-series "
                        "specifications. For more info, see logs with log id 6698300.")


def is_bucket_shaped(doc: dict) -> bool:
    """The shape every time-series bucket has (mongod 7.0's validate checks buckets too): a control
    block of version 1 or 2 with min/max documents, and a data document."""
    control = doc.get("control")
    return (isinstance(control, dict) and control.get("version") in (1, 2)
            and isinstance(control.get("min"), dict) and isinstance(control.get("max"), dict)
            and isinstance(doc.get("data"), dict))


async def data_size(ctx, cmd: dict) -> dict:
    target = cmd.get("dataSize", cmd.get("datasize"))
    if not isinstance(target, str) or "." not in target:
        raise MongoError(ErrorCode.InvalidNamespace, f"Invalid namespace specified '{target}'")

    def work():
        with ctx.server.engine.read() as r:
            info = r.get_collection(target)
            if info is None:
                return {"size": Int64(0), "numObjects": Int64(0), "millis": Int64(0)}
            size = r.data_size(info)
            return {"estimate": bool(cmd.get("estimate", False)), "size": Int64(size),
                    "numObjects": Int64(r.count(info)), "millis": Int64(0)}

    return await ctx.run_blocking(work)


COMMANDS = [
    CommandSpec("collStats", coll_stats, help="storage statistics of a collection (deprecated; use $collStats)",
                aliases=("collstats",)),
    CommandSpec("validate", validate, help="check that records and index entries agree"),
    CommandSpec("dataSize", data_size, help="stored size and count of a collection", aliases=("datasize",)),
]
