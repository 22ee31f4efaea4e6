"""Collection statistics: collStats (and the `$collStats` stage's storageStats), validate, dataSize.

Sizes come from storage counters (stored record bytes, index bytes). ``validate`` re-derives every
index key from the records and compares the counts with what each index holds.
"""

from __future__ import annotations

from bson.int64 import Int64

from tidemark.arguments import scale_arg as _scale
from tidemark.coll_stats import add_unstored as _add_unstored
from tidemark.coll_stats import empty_stats as _empty_stats
from tidemark.coll_stats import storage_stats
from tidemark.commands import timeseries as ts
from tidemark.context import CommandContext, CommandSpec
from tidemark.core import collection as C
from tidemark.core import namespace
from tidemark.protocol.codec import decode
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.index_keys import keyer_for


async def coll_stats(ctx: CommandContext, cmd: dict) -> dict:
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
    if cmd.get("indexDetails") and resolved.info is not None:
        stats["indexDetails"] = _index_details(cmd, resolved.info, stats.get("indexSizes") or {})
    return {"ns": ns, **stats}


def _index_details(cmd: dict, info, sizes: dict) -> dict:
    """``indexDetails: true``: the storage engine's facts per index (mongod: WiredTiger's statistics;
    here the LMDB table and its size), only the index ``indexDetailsKey`` or ``indexDetailsName``
    names when one is given (apitest_dbcollection.js)."""
    key, name = cmd.get("indexDetailsKey"), cmd.get("indexDetailsName")
    if key is not None and not isinstance(key, dict):
        raise MongoError(ErrorCode.TypeMismatch, "indexDetailsKey must be an object")
    if name is not None and type(name) is not str:
        raise MongoError(ErrorCode.TypeMismatch, "indexDetailsName must be a string")
    if key is not None and name is not None:
        raise MongoError(ErrorCode.BadValue, "Only one of indexDetailsKey and indexDetailsName may be specified")
    wanted = list(key.items()) if key is not None else None  # (a key pattern's field order counts)
    details: dict = {}
    for spec in info.indexes:
        if (wanted is not None and list(spec["key"].items()) != wanted) or (name is not None and spec["name"] != name):
            continue
        details[spec["name"]] = {"type": "lmdb", "uri": info.index_idents.get(spec["name"], ""),
                                 "size": sizes.get(spec["name"], Int64(0))}
    return details


async def validate(ctx: CommandContext, cmd: dict) -> dict:
    db = ctx.db
    name = C.collection_arg(cmd, "validate")
    ns = C.ns_of(db, name)

    def work():
        nonlocal ns
        with ctx.server.engine.read() as r:
            view = C.get_view(r, db, name)
            if view is not None and C.is_timeseries_view(view):
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


async def data_size(ctx: CommandContext, cmd: dict) -> dict:
    target = cmd.get("dataSize", cmd.get("datasize"))
    if type(target) is not str or "." not in target:
        raise MongoError(ErrorCode.InvalidNamespace, f"Invalid namespace specified '{target}'")

    db, _, name = target.partition(".")

    def work():
        with ctx.server.engine.read() as r:
            info = r.get_collection(target)
            if info is None:
                # mongod reads the namespace with views forbidden: a view (a time-series one too) is 166
                if C.get_view(r, db, name) is not None:
                    raise MongoError(ErrorCode.CommandNotSupportedOnView,
                                     f"Namespace {target} is a view, not a collection")
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
