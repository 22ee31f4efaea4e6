"""Time-series admin and modification commands: indexes, collMod, stats, update, delete, TTL.

Called through the seam ``server.commands.timeseries`` (one-line delegations), never registered in
the command table itself. Every command resolves the view to its ``system.buckets.<c>`` collection,
validates with the pure modules (``server.timeseries.indexes`` / ``collmod`` / ``modify`` / ``ttl``)
before touching storage, then runs all its writes in ONE ``engine.write`` function.

Invariant (bucket catalog safety): before a command rewrites or deletes stored buckets it *settles*
the collection — every in-memory bucket is written in full and forgotten by the catalog — so the
catalog never appends to, nor later rewrites, a bucket that this command changed on disk. Later
inserts open new buckets.
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
from server.query import plan as planner
from server.timeseries import collmod as ts_collmod
from server.timeseries import indexes as ts_indexes
from server.timeseries import modify as ts_modify
from server.timeseries import ttl as ts_ttl
from server.timeseries.buckets import unpack_document
from server.timeseries.ddl import buckets_ns, get_view, is_timeseries_view, stored_options, view_name_of

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


async def resolve(ctx: Any, cmd: dict, field: str) -> Target:
    name = cmd.get(field)
    if not isinstance(name, str) or not name:
        raise MongoError(ErrorCode.InvalidNamespace, f"Invalid namespace specified '{ctx.db}.{name}'")
    return await ctx.run_blocking(_resolve_sync, ctx.server.engine, ctx.db, name)


async def settle(ctx_or_server: Any, bns: str) -> None:
    """Write every in-memory bucket of ``bns`` in full and make the catalog forget them."""
    server = getattr(ctx_or_server, "server", ctx_or_server)
    committer = getattr(server, "ts_committer", None)
    if committer is None:
        return
    close = getattr(committer, "close_collection", None)
    if close is not None:
        await close(bns)
        return
    catalog = committer.catalog
    for _ in range(100):
        live = catalog.live_buckets(bns)
        if not live:
            return
        if all(not (b.pending or b.needs_full or b.journaled) for b in live):
            # nothing unwritten: forget them now, with no await in between (single-threaded loop)
            state = catalog.get(bns)
            stats = dict(state.stats) if state is not None else None
            options = state.options if state is not None else None
            catalog.forget(bns)
            if stats is not None:
                catalog.collection(bns, options).stats.update(stats)
            return
        for bucket in live:
            bucket.needs_full = True  # a full write also trims the bucket's journal stream
            catalog.dirty[id(bucket)] = bucket
        await committer.commit((bns,))
    raise MongoError(ErrorCode.ConflictingOperationInProgress, f"could not settle the open buckets of {bns}")


async def _write(server: Any, fn: Any) -> Any:
    return await asyncio.wrap_future(server.engine.write(fn))


def _rid(bucket_id: Any) -> bytes:
    from storage.keys import encode_key

    return encode_key((bucket_id,), (1,))


def _measurements(bucket: dict, time_field: str) -> int:
    return ts_modify.bucket_measurement_count(bucket, time_field)


# --------------------------------------------------------------------------------------------------
# createIndexes / listIndexes / dropIndexes
# --------------------------------------------------------------------------------------------------


def _same_definition(a: dict, b: dict) -> bool:
    keys = ("key", "partialFilterExpression", "collation", "sparse", "expireAfterSeconds")
    return all(a.get(k) == b.get(k) for k in keys)


async def create_indexes(ctx: Any, cmd: dict) -> dict:
    target = await resolve(ctx, cmd, "createIndexes")
    user_specs = cmd.get("indexes")
    if not isinstance(user_specs, list):
        raise MongoError(
            ErrorCode.TypeMismatch,
            "BSON field 'createIndexes.indexes' is the wrong type, expected type 'array'",
        )
    if not user_specs:
        raise MongoError(ErrorCode.BadValue, "Must specify at least one index to create")
    if target.on_buckets:  # raw bucket indexes (e.g. mongorestore): no translation
        from server.commands.indexes import normalize_spec

        bucket_specs = [normalize_spec(s, target.bns) for s in user_specs]
    else:
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
            keyer = planner.keyer_for(spec)
            entries = [(key, bytes(rid)) for rid, raw in w.scan(info) for key in keyer.keys(decode(raw))]
            info = w.create_index(info, spec, entries)
        return before, len(info.indexes)

    await settle(ctx, target.bns)  # open buckets reach storage first, so their index entries are built
    before, after = await _write(ctx.server, fn)
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


async def list_indexes(ctx: Any, cmd: dict) -> dict:
    from server.commands.ddl import cursor_from_list

    target = await resolve(ctx, cmd, "listIndexes")
    docs = user_index_specs(target.info, target.time_field, target.meta_field)
    cursor_opts = cmd.get("cursor") if isinstance(cmd.get("cursor"), dict) else {}
    return await cursor_from_list(ctx, target.ns, docs, cursor_opts)


async def drop_indexes(ctx: Any, cmd: dict) -> dict:
    command = "dropIndexes" if "dropIndexes" in cmd else "deleteIndexes"
    target = await resolve(ctx, cmd, command)
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


async def coll_mod(ctx: Any, cmd: dict) -> dict:
    target = await resolve(ctx, cmd, "collMod")
    plan = ts_collmod.plan_coll_mod(cmd, target.options.to_document(), on_buckets_namespace=target.on_buckets)
    if plan.timeseries is not None:
        await settle(ctx, target.bns)  # open buckets must not outlive the options they were opened with

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
        await settle(ctx, target.bns)  # buckets opened meanwhile still carry the old options
        _adopt_options(ctx.server, target.bns, plan.timeseries)
    return reply


def _adopt_options(server: Any, bns: str, stored: dict) -> None:
    """Let the catalog's (empty) collection state carry the new options, so its statistics survive."""
    from server.timeseries.options import from_document

    catalog = getattr(server, "bucket_catalog", None)
    state = catalog.get(bns) if catalog is not None else None
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


def coll_stats_document(server: Any, db: str, name: str, scale: int = 1) -> dict:
    """collStats of a time-series view (spec §3.4): no count/avgObjSize, a ``timeseries`` section."""
    target = _resolve_sync(server.engine, db, name)
    catalog = getattr(server, "bucket_catalog", None)
    live = catalog.live_buckets(target.bns) if catalog is not None else []
    with server.engine.read() as r:
        info = r.get_collection(target.bns)
        stored = r.count(info)
        size = r.data_size(info)
        unsaved = [b for b in live if r.get(info, _rid(b.id)) is None]
        storage_size = r.storage_size(info) if hasattr(r, "storage_size") else size
        index_sizes = {}
        for spec in info.indexes:
            user = ts_indexes.to_user_index_spec(spec, target.time_field, target.meta_field)
            if user is not None:
                index_sizes[spec["name"]] = r.index_size(info, spec["name"]) // scale
    bucket_count = stored + len(unsaved)
    size += sum(len(encode(b.document())) for b in unsaved)
    timeseries: dict = {"bucketsNs": target.bns, "bucketCount": bucket_count}
    if bucket_count:
        timeseries["avgBucketSize"] = size // bucket_count
    if catalog is not None:
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


async def coll_stats(ctx: Any, cmd: dict) -> dict:
    name = cmd.get("collStats")
    scale = _scale(cmd)
    return await ctx.run_blocking(coll_stats_document, ctx.server, ctx.db, name, scale)


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
            out["count"] = sum(
                _measurements(decode(raw), stored_options(info).time_field) for _, raw in r.scan(info)
            )
    return out


# --------------------------------------------------------------------------------------------------
# update (5.1+ rules: meta-only, multi, no upsert)
# --------------------------------------------------------------------------------------------------


def _statements(cmd: dict, field: str, command: str) -> list:
    items = cmd.get(field)
    if items is None:
        raise MongoError(
            ErrorCode.IDLFailedToParse, f"BSON field '{command}.{field}' is missing but a required field"
        )
    if not isinstance(items, list):
        raise MongoError(
            ErrorCode.TypeMismatch, f"BSON field '{command}.{field}' is the wrong type, expected type 'array'"
        )
    if not items:
        raise MongoError(
            ErrorCode.InvalidLength, "Write batch sizes must be between 1 and 100000. Got 0 operations."
        )
    return items


def _parse_update(statement: Any, target: Target) -> tuple:
    from server.query import match, update

    if isinstance(statement, dict):
        for field in ("q", "u"):
            if field not in statement:
                raise MongoError(
                    ErrorCode.IDLFailedToParse,
                    f"BSON field 'update.updates.{field}' is missing but a required field",
                )
    translated = ts_modify.translate_update(statement, target.meta_field)
    parsed = update.parse_update(translated.bucket_update, array_filters=translated.array_filters)
    matcher = match.compile_filter(translated.bucket_query) if translated.bucket_query else None
    return translated, parsed, matcher


async def update(ctx: Any, cmd: dict) -> dict:
    target = await resolve(ctx, cmd, "update")
    ordered = bool(cmd.get("ordered", True))
    parsed: list = []
    for statement in _statements(cmd, "updates", "update"):
        try:
            parsed.append(_parse_update(statement, target))
        except MongoError as e:
            parsed.append(e)
            if ordered:
                break
    if any(not isinstance(p, MongoError) for p in parsed):
        await settle(ctx, target.bns)

    def fn(w: Any) -> tuple[int, int, list]:
        from server.query import update as update_mod

        n = modified = 0
        errors: list = []
        for i, item in enumerate(parsed):
            try:
                if isinstance(item, MongoError):
                    raise item
                translated, upd, matcher = item
                info = w.get_collection(target.bns)
                hint = None
                if translated.hint:
                    hint = ts_indexes.translate_hint(
                        translated.hint, list(info.indexes), target.time_field, target.meta_field
                    )
                access = planner.choose_plan(list(info.indexes), translated.bucket_query, None, hint)
                changes = []  # (rid, old index keys, new bucket): applied after the scan closes
                matched = changed_count = 0
                scan = C.docs_in_txn(w, info, access)
                try:
                    for rid, bucket in scan:
                        if matcher is not None and not matcher(bucket):
                            continue
                        count = _measurements(bucket, target.time_field)
                        new, changed = update_mod.apply_update(bucket, upd, query=translated.bucket_query)
                        matched += count
                        if changed:
                            changes.append((rid, C.index_keys(info, bucket), new))
                            changed_count += count
                finally:
                    scan.close()
                for rid, old_keys, new in changes:
                    w.update(info, rid, encode(new), old_keys, C.index_keys(info, new))
                n += matched
                modified += changed_count
            except MongoError as e:
                errors.append(e.to_write_error(i))
                if ordered:
                    break
        return n, modified, errors

    n, modified, errors = await _write(ctx.server, fn)
    reply: dict = {"n": n, "nModified": modified}
    if errors:
        reply["writeErrors"] = errors
    return reply


# --------------------------------------------------------------------------------------------------
# delete / findAndModify remove (7.0 arbitrary deletes)
# --------------------------------------------------------------------------------------------------


def _parse_delete(statement: Any, target: Target) -> tuple:
    from server.query import match

    if isinstance(statement, dict) and "limit" not in statement:
        raise MongoError(
            ErrorCode.IDLFailedToParse, "BSON field 'delete.deletes.limit' is missing but a required field"
        )
    if isinstance(statement, dict) and "q" not in statement:
        raise MongoError(
            ErrorCode.IDLFailedToParse, "BSON field 'delete.deletes.q' is missing but a required field"
        )
    plan = ts_modify.plan_delete(statement, target.time_field, target.meta_field)
    bucket_match = match.compile_filter(plan.bucket_filter) if plan.bucket_filter else None
    measurement_match = match.compile_filter(plan.measurement_filter) if plan.measurement_filter else None
    hint = statement.get("hint") or None
    return plan, bucket_match, measurement_match, hint


def _delete_in_txn(
    w: Any,
    target: Target,
    plan: ts_modify.DeletePlan,
    bucket_match: Any,
    measurement_match: Any,
    hint: Any = None,
) -> tuple[int, dict | None]:
    """Run one planned delete; returns (measurements deleted, the first deleted measurement).

    Buckets stream from the scan; only the changes are buffered (writes never run under the open
    scan), so memory grows with the buckets changed, not with the collection.
    """
    info = w.get_collection(target.bns)
    if info is None:
        return 0, None
    t, m = target.time_field, target.meta_field
    if hint is not None:
        hint = ts_indexes.translate_hint(hint, list(info.indexes), t, m)
    access = planner.choose_plan(list(info.indexes), plan.bucket_filter, None, hint)
    deleted = 0
    first: dict | None = None
    changes: list[tuple[bytes, dict, dict | None]] = []  # (rid, old index keys, new bucket or None)
    scan = C.docs_in_txn(w, info, access)
    try:
        for rid, bucket in scan:
            if bucket_match is not None and not bucket_match(bucket):
                continue
            if plan.whole_buckets:
                deleted += _measurements(bucket, t)
                changes.append((rid, C.index_keys(info, bucket), None))
                continue
            keep: list[dict] = []
            removed = 0
            for measurement in unpack_document(bucket, t, m):
                take = (not plan.limit_one or deleted + removed == 0) and (
                    measurement_match is None or measurement_match(measurement)
                )
                if take:
                    removed += 1
                    if first is None:
                        first = measurement
                else:
                    keep.append(measurement)
            if removed:
                deleted += removed
                changes.append((rid, C.index_keys(info, bucket), ts_modify.repack(bucket, keep, t, m)))
                if plan.limit_one:
                    break
    finally:
        scan.close()
    for rid, keys, repacked in changes:
        if repacked is None:
            w.delete(info, rid, keys)
        else:
            w.update(info, rid, encode(repacked), keys, C.index_keys(info, repacked))
    return deleted, first


async def delete(ctx: Any, cmd: dict) -> dict:
    target = await resolve(ctx, cmd, "delete")
    ordered = bool(cmd.get("ordered", True))
    parsed: list = []
    for statement in _statements(cmd, "deletes", "delete"):
        try:
            parsed.append(_parse_delete(statement, target))
        except MongoError as e:
            parsed.append(e)
            if ordered:
                break
    if any(not isinstance(p, MongoError) for p in parsed):
        await settle(ctx, target.bns)

    def fn(w: Any) -> tuple[int, list]:
        n, errors = 0, []
        for i, item in enumerate(parsed):
            try:
                if isinstance(item, MongoError):
                    raise item
                n += _delete_in_txn(w, target, *item)[0]
            except MongoError as e:
                errors.append(e.to_write_error(i))
                if ordered:
                    break
        return n, errors

    n, errors = await _write(ctx.server, fn)
    reply: dict = {"n": n}
    if errors:
        reply["writeErrors"] = errors
    return reply


async def find_and_modify(ctx: Any, cmd: dict) -> dict:
    """findAndModify on a time-series view: ``remove: true`` only (sort -> 72)."""
    from server.query import project

    field = "findAndModify" if "findAndModify" in cmd else "findandmodify"
    target = await resolve(ctx, cmd, field)
    if not cmd.get("remove", False):
        if cmd.get("upsert", False):
            raise MongoError(ErrorCode.InvalidOptions, "Cannot perform an upsert on a time-series collection")
        raise MongoError(
            ErrorCode.InvalidOptions, "Cannot perform a non-multi update on a time-series collection"
        )
    if cmd.get("sort"):
        raise MongoError(
            ErrorCode.InvalidOptions, "Cannot perform a findAndModify with a sort on a time-series collection"
        )
    query = cmd.get("query") or {}
    if not isinstance(query, dict):
        raise MongoError(
            ErrorCode.TypeMismatch, f"BSON field '{field}.query' is the wrong type, expected type 'object'"
        )
    plan, bucket_match, measurement_match, _ = _parse_delete({"q": query, "limit": 1}, target)
    fields = cmd.get("fields")
    projection = project.compile_projection(fields, filter=query) if fields else None
    await settle(ctx, target.bns)
    n, value = await _write(
        ctx.server, lambda w: _delete_in_txn(w, target, plan, bucket_match, measurement_match)
    )
    if value is not None and projection is not None:
        value = projection(value)
    return {"lastErrorObject": {"n": n}, "value": value}


# --------------------------------------------------------------------------------------------------
# TTL (spec §9): called by the TTL monitor every ttlMonitorSleepSecs
# --------------------------------------------------------------------------------------------------


def _expired_in_txn(w: Any, bns: str, now: _dt.datetime) -> int:
    """Delete every expired bucket of one collection in the writer's transaction."""
    from server.query import match

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
    loop = asyncio.get_running_loop()
    catalog = getattr(server, "bucket_catalog", None)
    total = 0
    for bns, expire, span in await loop.run_in_executor(server.executor, _ttl_collections, server.engine):
        cutoff = ts_ttl.cutoff_seconds(now, expire, span)
        live = catalog.live_buckets(bns) if catalog is not None else []
        try:
            if any(bucket.start_s <= cutoff for bucket in live):
                await settle(server, bns)  # an expired bucket still in memory must not be written back later
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
