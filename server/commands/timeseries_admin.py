"""Time-series admin commands: indexes, collMod, collStats / ``$collStats``, the TTL pass, and the refusal
of ``$out``/``$merge`` into a time-series collection. Part of the time-series command family
(timeseries.py, which the regular families reach by collection kind).

Every command resolves the view to its ``system.buckets.<c>`` collection, validates with the pure
modules (``server.timeseries.indexes`` / ``collmod`` / ``ttl``) before touching storage, then runs all
its writes in ONE ``engine.write`` function.

Invariant (bucket catalog safety): before a command rewrites or deletes stored buckets it *settles*
the collection — every in-memory bucket is written in full and leaves memory — so the catalog never
appends to, nor later rewrites, a bucket that this command changed on disk.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import logging
from typing import Any

from bson.int64 import Int64

from protocol.codec import decode, encode
from protocol.errors import ErrorCode, MongoError
from server.commands import _collection as C
from server.context import run_in_pool
from server.cursors import cursor_reply
from server.query import match
from server.query import plan as planner
from server.query.index_keys import keyer_for
from server.timeseries import collmod as ts_collmod
from server.timeseries import indexes as ts_indexes
from server.timeseries import modify as ts_modify
from server.timeseries import scan
from server.timeseries import ttl as ts_ttl
from server.timeseries.ddl import buckets_ns, get_view, is_timeseries_view, stored_options, view_name_of
from server.timeseries.options import from_document

log = logging.getLogger("tidemark.timeseries")

# --------------------------------------------------------------------------------------------------
# resolution and catalog settling
# --------------------------------------------------------------------------------------------------


class Target:
    """A time-series collection addressed by a command (view name or ``system.buckets.<c>``)."""

    def __init__(self, db: str, name: str, view: dict | None, info: Any):
        self.db = db
        self.view_name = view_name_of(name)
        self.on_buckets = name != self.view_name
        self.view = view
        self.info = info
        self.bns = buckets_ns(db, self.view_name)
        self.ns = f"{db}.{self.view_name}"
        options = stored_options(info)
        if options is None:
            raise MongoError(ErrorCode.NamespaceNotFound, f"ns does not exist: {self.bns}")
        self.options = options
        self.time_field = options.time_field
        self.meta_field = options.meta_field


def _resolve_sync(engine: Any, db: str, name: str) -> Target:
    with engine.read() as r:
        _, view = get_view(r, db, view_name_of(name))
        info = r.get_collection(buckets_ns(db, view_name_of(name)))
    if info is None or (view is not None and not is_timeseries_view(view)):
        raise MongoError(ErrorCode.NamespaceNotFound, f"ns does not exist: {db}.{name}")
    return Target(db, name, view, info)


async def resolve(ctx: Any, cmd: dict, field: str, namespace: Any = None) -> Target:
    """The command's time-series target. ``namespace``: the ``server.namespace.Namespace`` the regular
    family resolved for this command (a time-series view) — used as is, nothing is read again."""
    name = cmd.get(field)
    if not isinstance(name, str) or not name:
        raise MongoError(ErrorCode.InvalidNamespace, f"Invalid namespace specified '{ctx.db}.{name}'")
    if namespace is not None and namespace.is_timeseries and namespace.name == name and namespace.db == ctx.db:
        return _target_of(namespace)
    return await ctx.run_blocking(_resolve_sync, ctx.server.engine, ctx.db, name)


def _target_of(namespace: Any) -> Target:
    if namespace.buckets_info is None:
        raise MongoError(ErrorCode.NamespaceNotFound, f"ns does not exist: {namespace.ns}")
    return Target(namespace.db, namespace.name, namespace.view, namespace.buckets_info)


async def settle(server: Any, bns: str) -> None:
    """Write every in-memory bucket of ``bns`` in full and let it leave memory."""
    await server.ts_committer.close_collection(bns)


async def direct_write(server: Any, bns: str, fn: Any) -> Any:
    """Run the storage write ``fn`` on the bucket documents of ``bns`` after settling it, with no bucket
    reopened from storage meanwhile: a bucket loaded between the settle and ``fn`` would be written
    back over what ``fn`` changed."""
    catalog = server.bucket_catalog
    with catalog.direct_write(bns):
        await settle(server, bns)
        return await _write(server, fn)


async def _write(server: Any, fn: Any) -> Any:
    return await asyncio.wrap_future(server.engine.write(fn))


def _measurements(bucket: dict, time_field: str) -> int:
    return ts_modify.bucket_measurement_count(bucket, time_field)


# --------------------------------------------------------------------------------------------------
# createIndexes / listIndexes / dropIndexes
# --------------------------------------------------------------------------------------------------


def _same_definition(a: dict, b: dict) -> bool:
    keys = ("key", "partialFilterExpression", "collation", "sparse", "expireAfterSeconds")
    return all(a.get(k) == b.get(k) for k in keys)


async def create_indexes(ctx: Any, cmd: dict, namespace: Any = None) -> dict:
    target = await resolve(ctx, cmd, "createIndexes", namespace)
    user_specs = cmd.get("indexes")
    if not isinstance(user_specs, list):
        raise MongoError(
            ErrorCode.TypeMismatch,
            "BSON field 'createIndexes.indexes' is the wrong type, expected type 'array'",
        )
    if not user_specs:
        raise MongoError(ErrorCode.BadValue, "Must specify at least one index to create")
    tf, mf = target.time_field, target.meta_field
    bucket_specs = [ts_indexes.to_bucket_index_spec(s, tf, mf) for s in user_specs]

    def fn(w: Any) -> tuple[int, int]:
        info = w.get_collection(target.bns)
        if info is None:
            raise MongoError(ErrorCode.NamespaceNotFound, f"ns does not exist: {target.ns}")
        before = len(info.indexes)
        for spec in bucket_specs:
            same_name = next((s for s in info.indexes if s["name"] == spec["name"]), None)
            if same_name is not None:
                if _same_definition(same_name, spec):
                    continue
                code = (
                    ErrorCode.IndexOptionsConflict
                    if same_name["key"] == spec["key"]
                    else ErrorCode.IndexKeySpecsConflict
                )
                raise MongoError(
                    code,
                    "An existing index has the same name as the requested index. Requested index: "
                    f"{ts_indexes.mongo_repr(spec.get('originalSpec', spec))}, existing index: "
                    f"{ts_indexes.mongo_repr(same_name.get('originalSpec', same_name))}",
                )
            same_key = next((s for s in info.indexes if _same_definition(s, spec)), None)
            if same_key is not None:
                raise MongoError(
                    ErrorCode.IndexOptionsConflict,
                    f"Index already exists with a different name: {same_key['name']}",
                )
            keyer = keyer_for(spec)
            entries = [(key, bytes(rid)) for rid, raw in w.scan(info) for key in keyer.keys(decode(raw))]
            info = w.create_index(info, spec, entries)
        return before, len(info.indexes)

    # in-memory buckets reach storage first, so their index entries are built
    before, after = await direct_write(ctx.server, target.bns, fn)
    reply: dict = {"numIndexesBefore": before, "numIndexesAfter": after}
    if before == after:
        reply["note"] = "all indexes already exist"
    else:
        reply["createdCollectionAutomatically"] = False
    return reply


def user_index_specs(info: Any, time_field: str, meta_field: str | None) -> list[dict]:
    """The indexes of a buckets collection as listIndexes on the view shows them."""
    out = []
    for spec in info.indexes:
        user = ts_indexes.to_user_index_spec(spec, time_field, meta_field)
        if user is not None:
            out.append(user)
    return out


async def list_indexes(ctx: Any, cmd: dict, namespace: Any = None) -> dict:
    target = await resolve(ctx, cmd, "listIndexes", namespace)
    docs = user_index_specs(target.info, target.time_field, target.meta_field)
    cursor_opts = cmd.get("cursor") if isinstance(cmd.get("cursor"), dict) else {}
    batch_size = cursor_opts.get("batchSize")
    if batch_size is None or batch_size >= len(docs):
        return {"cursor": {"id": Int64(0), "ns": target.ns, "firstBatch": docs}}
    return await cursor_reply(ctx, target.ns, iter(docs), int(batch_size), False, first=True)


async def drop_indexes(ctx: Any, cmd: dict, namespace: Any = None) -> dict:
    command = "dropIndexes" if "dropIndexes" in cmd else "deleteIndexes"
    target = await resolve(ctx, cmd, command, namespace)
    if "index" not in cmd:
        raise MongoError(
            ErrorCode.IDLFailedToParse, f"BSON field '{command}.index' is missing but a required field"
        )
    ref = cmd["index"]

    def fn(w: Any) -> int:
        info = w.get_collection(target.bns)
        was = len(info.indexes)
        if ref == "*":
            names = [s["name"] for s in info.indexes]
        elif isinstance(ref, list):
            names = list(ref)
            for name in names:
                if not isinstance(name, str) or not any(s["name"] == name for s in info.indexes):
                    raise MongoError(ErrorCode.IndexNotFound, f"index not found with name [{name}]")
        elif isinstance(ref, str):
            if not any(s["name"] == ref for s in info.indexes):
                raise MongoError(ErrorCode.IndexNotFound, f"index not found with name [{ref}]")
            names = [ref]
        elif isinstance(ref, dict):
            spec = ts_indexes.find_bucket_index(list(info.indexes), ref, target.time_field, target.meta_field)
            if spec is None:
                raise MongoError(
                    ErrorCode.IndexNotFound, f"can't find index with key: {ts_indexes.mongo_repr(ref)}"
                )
            names = [spec["name"]]
        else:
            raise MongoError(
                ErrorCode.TypeMismatch,
                "BSON field 'dropIndexes.index' is the wrong type, expected types '[string, object, array]'",
            )
        for name in names:
            info = w.drop_index(info, name)
        return was

    was = await _write(ctx.server, fn)
    return {"nIndexesWas": was}


# --------------------------------------------------------------------------------------------------
# collMod
# --------------------------------------------------------------------------------------------------


async def coll_mod(ctx: Any, cmd: dict, namespace: Any = None) -> dict:
    target = await resolve(ctx, cmd, "collMod", namespace)
    plan = ts_collmod.plan_coll_mod(cmd, target.options.to_document(), on_buckets_namespace=target.on_buckets)
    if plan.timeseries is not None:
        await settle(ctx.server, target.bns)  # open buckets must not outlive the options they were opened with

    def fn(w: Any) -> dict:
        info = w.get_collection(target.bns)
        reply: dict = {}
        options = dict(info.options or {})
        changed = False
        if plan.timeseries is not None:
            options["timeseries"] = plan.timeseries
            changed = True
            _rewrite_view_span(w, target, plan.new_span)
        if plan.expire_after_seconds == "off":
            changed = options.pop("expireAfterSeconds", None) is not None or changed
        elif plan.expire_after_seconds is not None:
            options["expireAfterSeconds"] = Int64(plan.expire_after_seconds)
            changed = True
        if changed:
            info = w.set_options(target.bns, options)
        if plan.index is not None:
            reply.update(_hide_index(w, info, target, plan.index))
        return reply

    reply = await _write(ctx.server, fn)
    if plan.timeseries is not None:
        await settle(ctx.server, target.bns)  # buckets opened meanwhile still carry the old options
        _adopt_options(ctx.server, target.bns, plan.timeseries)
    return reply


def _adopt_options(server: Any, bns: str, stored: dict) -> None:
    """Let the catalog's (empty) collection state carry the new options, so its statistics survive."""
    state = server.bucket_catalog.get(bns)
    if state is not None and not state.live:
        state.options = from_document(stored)


def _rewrite_view_span(w: Any, target: Target, new_span: int | None) -> None:
    rid, view = get_view(w, target.db, target.view_name)
    if rid is None or new_span is None:
        return
    new_view = dict(view)
    new_view["pipeline"] = ts_collmod.with_new_span(view.get("pipeline") or [], new_span)
    views = w.get_collection(f"{target.db}.system.views")
    w.update(views, rid, encode(new_view), C.index_keys(views, view), C.index_keys(views, new_view))


def _hide_index(w: Any, info: Any, target: Target, change: ts_collmod.IndexChange) -> dict:
    ref = change.name if change.name is not None else change.key_pattern
    spec = ts_indexes.find_bucket_index(list(info.indexes), ref, target.time_field, target.meta_field)
    if spec is None:
        shown = change.name if change.name is not None else ts_indexes.mongo_repr(change.key_pattern)
        raise MongoError(ErrorCode.IndexNotFound, f"cannot find index {shown} for ns {target.ns}")
    old = bool(spec.get("hidden", False))
    if old == change.hidden:
        return {}
    w.set_index_options(info, spec["name"], {"hidden": change.hidden})
    return {"hidden_old": old, "hidden_new": change.hidden}


# --------------------------------------------------------------------------------------------------
# collStats / $collStats
# --------------------------------------------------------------------------------------------------


def coll_stats_document(server: Any, db: str, name: str, scale: int = 1, namespace: Any = None) -> dict:
    """collStats of a time-series view (spec §3.4): no count/avgObjSize, a ``timeseries`` section.
    ``namespace``: the view as the caller resolved it."""
    if namespace is not None and namespace.is_timeseries and (namespace.db, namespace.name) == (db, name):
        target = _target_of(namespace)
    else:
        target = _resolve_sync(server.engine, db, name)
    catalog = server.bucket_catalog
    unstored, unstored_size = scan.unstored_buckets(server, target.bns)
    with server.engine.read() as r:
        info = r.get_collection(target.bns)
        stored = r.count(info)
        size = r.data_size(info)
        storage_size = r.storage_size(info)
        index_sizes = {}
        for spec in info.indexes:
            user = ts_indexes.to_user_index_spec(spec, target.time_field, target.meta_field)
            if user is not None:
                index_sizes[spec["name"]] = r.index_size(info, spec["name"]) // scale
    bucket_count = stored + unstored
    size += unstored_size
    storage_size += unstored_size  # until written, an in-memory bucket occupies about its size
    timeseries: dict = {"bucketsNs": target.bns, "bucketCount": bucket_count}
    if bucket_count:
        timeseries["avgBucketSize"] = size // bucket_count
    timeseries.update(catalog.collection_stats(target.bns))
    total_index = sum(index_sizes.values())
    return {
        "ns": target.ns,
        "size": Int64(size // scale),
        "timeseries": timeseries,
        "numOrphanDocs": Int64(0),
        "storageSize": Int64(storage_size // scale),
        "freeStorageSize": Int64(0),
        "capped": False,
        "nindexes": len(index_sizes),
        "indexDetails": {},
        "indexBuilds": [],
        "totalIndexSize": Int64(total_index),
        "totalSize": Int64(storage_size // scale + total_index),
        "indexSizes": {k: Int64(v) for k, v in index_sizes.items()},
        "scaleFactor": scale,
    }


def _scale(cmd_or_spec: dict) -> int:
    scale = cmd_or_spec.get("scale", 1)
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or scale < 1:
        raise MongoError(ErrorCode.BadValue, "scale has to be >= 1")
    return int(scale)


async def coll_stats(ctx: Any, cmd: dict, namespace: Any = None) -> dict:
    name = cmd.get("collStats")
    scale = _scale(cmd)
    return await ctx.run_blocking(coll_stats_document, ctx.server, ctx.db, name, scale, namespace)


def coll_stats_stage_document(server: Any, db: str, name: str, spec: dict) -> dict:
    """The document ``$collStats`` yields on a time-series view (``storageStats`` holds collStats)."""
    out: dict = {
        "ns": f"{db}.{name}",
        "host": "localhost",
        "localTime": _dt.datetime.now(_dt.UTC).replace(tzinfo=None),
    }
    if "storageStats" in spec:
        stats_spec = spec["storageStats"] if isinstance(spec["storageStats"], dict) else {}
        out["storageStats"] = coll_stats_document(server, db, name, _scale(stats_spec))
    if "count" in spec:
        with server.engine.read() as r:
            info = r.get_collection(buckets_ns(db, name))
        time_field = stored_options(info).time_field
        out["count"] = sum(_measurements(doc, time_field) for doc in scan.bucket_documents(server, info.ns))
    return out


# --------------------------------------------------------------------------------------------------
# TTL (spec §9): called by the TTL monitor every ttlMonitorSleepSecs
# --------------------------------------------------------------------------------------------------


def _expired_in_txn(w: Any, bns: str, now: _dt.datetime) -> int:
    """Delete every expired bucket of one collection in the writer's transaction."""
    info = w.get_collection(bns)
    if info is None:
        return 0
    options = stored_options(info)
    span = options.bucket_max_span_seconds
    doomed: list[tuple[bytes, dict]] = []
    expire = (info.options or {}).get("expireAfterSeconds")
    if expire is not None:
        bound = ts_ttl.expiry_id_bound(ts_ttl.cutoff_seconds(now, int(expire), span))
        for rid, raw in w.scan(info):
            bucket = decode(raw)
            if not ts_ttl.bucket_is_expired(bucket["_id"], bound):
                break  # clustered by _id: every later bucket is newer
            doomed.append((bytes(rid), bucket))
    time_path = "control.min." + options.time_field
    for ttl_index in ts_ttl.partial_ttl_indexes(list(info.indexes), options.time_field):
        cutoff = ts_ttl.control_min_cutoff(now, ttl_index.expire_after_seconds, span)
        partial = match.compile_filter(ttl_index.bucket_filter) if ttl_index.bucket_filter else None
        seen = {rid for rid, _ in doomed}
        # the partial TTL index holds exactly the buckets matching its filter, keyed by bucket start
        specs = [
            dict(s, hidden=False) if s["name"] == ttl_index.name else s for s in info.indexes
        ]  # hidden TTL still expires
        plan = planner.choose_plan(specs, {time_path: {"$lte": cutoff}}, None, ttl_index.name)
        for rid, bucket in C.docs_in_txn(w, info, plan):
            start = bucket.get("control", {}).get("min", {}).get(options.time_field)
            if rid in seen or not isinstance(start, _dt.datetime) or start > cutoff:
                continue
            if partial is None or partial(bucket):
                doomed.append((rid, bucket))
                seen.add(rid)
    for rid, bucket in doomed:
        w.delete(info, rid, C.index_keys(info, bucket))
    return len(doomed)


def _ttl_collections(engine: Any) -> list[tuple[str, int, int]]:
    """(buckets ns, smallest expireAfterSeconds, bucketMaxSpanSeconds) of every TS collection with a TTL."""
    out = []
    with engine.read() as r:
        for db in r.list_databases():
            for info in r.list_collections(db):
                options = info.options or {}
                if not info.name.startswith("system.buckets.") or not options.get("timeseries"):
                    continue
                expiries = [int(s["expireAfterSeconds"]) for s in info.indexes if "expireAfterSeconds" in s]
                if "expireAfterSeconds" in options:
                    expiries.append(int(options["expireAfterSeconds"]))
                if expiries:
                    out.append((info.ns, min(expiries), stored_options(info).bucket_max_span_seconds))
    return out


async def ttl_pass(server: Any, now: _dt.datetime | None = None) -> int:
    """One TTL monitor pass over every time-series collection; returns the buckets deleted."""
    now = now or _dt.datetime.now(_dt.UTC).replace(tzinfo=None)
    catalog = server.bucket_catalog
    total = 0
    for bns, expire, span in await run_in_pool(server, None, _ttl_collections, server.engine):
        cutoff = ts_ttl.cutoff_seconds(now, expire, span)
        live = catalog.live_buckets(bns)
        try:
            if any(bucket.start_s <= cutoff for bucket in live):
                # an expired bucket still in memory must not be written back later
                total += await direct_write(server, bns, lambda w, bns=bns: _expired_in_txn(w, bns, now))
            else:
                with catalog.direct_write(bns):  # no expired bucket reopened from storage meanwhile
                    total += await _write(server, lambda w, bns=bns: _expired_in_txn(w, bns, now))
        except MongoError:  # dropped meanwhile, or one bad collection: the others still expire
            log.warning("time-series TTL pass failed for %s", bns, exc_info=True)
    return total


# --------------------------------------------------------------------------------------------------
# write stages targeting a time-series collection (spec §10): refused with a clear error
# --------------------------------------------------------------------------------------------------


def check_write_stage_target(r: Any, db: str, coll: str, stage: str, spec: Any = None) -> None:
    """Raise when ``$out`` / ``$merge`` (``stage``) would write into a time-series collection.

    ``$merge`` into a time-series collection is not supported by MongoDB 7.0 (the target is a view);
    ``$out`` to one (the 7.0.3+ ``{$out: {db, coll, timeseries}}`` form included) is not supported by
    this server. Called with a read view ``r`` before the pipeline runs.
    """
    if stage == "$out" and isinstance(spec, dict) and "timeseries" in spec:
        raise MongoError(
            ErrorCode.CommandNotSupported,
            "$out with 'timeseries' options (writing a time-series collection) is not supported by this server",
        )
    _, view = get_view(r, db, view_name_of(coll))
    if is_timeseries_view(view) or coll.startswith("system.buckets."):
        raise MongoError(
            ErrorCode.CommandNotSupportedOnView,
            f"{stage} into the time-series collection {db}.{view_name_of(coll)} is not supported",
        )
