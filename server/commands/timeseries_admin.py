"""Time-series admin commands: indexes, collMod, collStats. Part of the time-series command family
(timeseries.py, which the regular families reach by collection kind). What needs no command context —
target resolution, settling, the direct write, the collStats / ``$collStats`` documents, the TTL
deletion and the refusal of ``$out``/``$merge`` into a time-series collection — is in the engine's
``tidemark.timeseries.collection``.

Every command resolves the view to its ``system.buckets.<c>`` collection, validates with the pure
modules (``tidemark.timeseries.indexes`` / ``collmod`` / ``ttl``) before touching storage, then runs all
its writes in ONE ``engine.write`` function.

Invariant (bucket catalog safety): before a command rewrites or deletes stored buckets it *settles*
the collection — every in-memory bucket is written in full and leaves memory — so the catalog never
appends to, nor later rewrites, a bucket that this command changed on disk.
"""

from __future__ import annotations

from typing import Any

from bson.int64 import Int64

from tidemark.arguments import scale_arg as _scale
from tidemark.context import CommandContext, ServerState
from tidemark.core import collection as C
from tidemark.core.namespace import find_view as get_view  # (rid, doc): a point lookup by _id
from tidemark.cursors import cursor_reply
from tidemark.protocol.codec import decode, encode
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.collation import parse_collation
from tidemark.timeseries import collmod as ts_collmod
from tidemark.timeseries import indexes as ts_indexes
from tidemark.timeseries.collection import (
    Target,
    before_index_build,
    coll_stats_document,
    settle,
    target_of,
)
from tidemark.timeseries.collection import resolve_target as _resolve_sync
from tidemark.timeseries.collection import write as _write
from tidemark.timeseries.options import from_document

# --------------------------------------------------------------------------------------------------
# resolution and catalog settling
# --------------------------------------------------------------------------------------------------


async def resolve(ctx: CommandContext, cmd: dict, field: str, namespace: Any = None) -> Target:
    """The command's time-series target. ``namespace``: the ``tidemark.core.namespace.Namespace`` the regular
    family resolved for this command (a time-series view) — used as is, nothing is read again."""
    name = cmd.get(field)
    if type(name) is not str or not name:
        raise MongoError(ErrorCode.InvalidNamespace, f"Invalid namespace specified '{ctx.db}.{name}'")
    if namespace is not None and namespace.is_timeseries and namespace.name == name and namespace.db == ctx.db:
        return target_of(namespace)
    return await ctx.run_blocking(_resolve_sync, ctx.server.engine, ctx.db, name)


# --------------------------------------------------------------------------------------------------
# createIndexes / listIndexes / dropIndexes
# --------------------------------------------------------------------------------------------------


async def create_indexes(ctx: CommandContext, cmd: dict, namespace: Any = None) -> dict:
    target = await resolve(ctx, cmd, "createIndexes", namespace)
    user_specs = cmd.get("indexes")
    if not isinstance(user_specs, list):
        raise MongoError(
            ErrorCode.TypeMismatch,
            "BSON field 'createIndexes.indexes' is the wrong type, expected type 'array'",
        )
    if not user_specs:
        raise MongoError(ErrorCode.BadValue, "Must specify at least one index to create")
    # (a sibling that dispatches here: imported when run)
    from tidemark.commands.indexes import new_indexes, prepare_specs

    tf, mf = target.time_field, target.meta_field
    default = C.default_collation_of(target.info)
    span, control_collation = target.options.bucket_max_span_seconds, parse_collation(default) if default else None
    ignore_unknown = cmd.get("ignoreUnknownIndexOptions") is True
    # as mongod: every user spec translated, then the buckets specs run through the regular createIndexes
    # (the user's other fields pass through: a wrong-typed name is 14 there, not a failure further on)
    translated = [ts_indexes.to_bucket_index_spec(s, tf, mf, span, control_collation) for s in user_specs]
    bucket_specs = prepare_specs(translated, ignore_unknown, default, translated=True)

    def fn(w: Any) -> tuple[int, int]:
        info = target.buckets_in(w)
        before = len(info.indexes)
        for spec in new_indexes(info, bucket_specs):  # the regular catalog checks (85, 86, 67, ...)
            spec = dict(spec)  # build_index_entries may flag it multikey
            index_rules = ts_indexes.measurement_rules([spec], tf)
            if index_rules is not None:  # 5930501: the stored data holds an array under the indexed field
                for _rid, raw in w.scan(info):
                    index_rules.check_bucket(decode(raw))
            info = w.create_index(info, spec, C.build_index_entries(w, info, spec))
        return before, len(info.indexes)

    # the in-memory buckets stay open: storage holds what the build must see of them (before_index_build)
    await before_index_build(ctx.server, target.bns, bucket_specs, tf)
    before, after = await _write(ctx.server, fn)
    reply: dict = {"numIndexesBefore": before, "numIndexesAfter": after}
    if before == after:
        reply["note"] = "all indexes already exist"
    else:
        if after < before + len(bucket_specs):
            reply["note"] = "index already exists"
        reply["createdCollectionAutomatically"] = False
    return reply


async def list_indexes(ctx: CommandContext, cmd: dict, namespace: Any = None) -> dict:
    target = await resolve(ctx, cmd, "listIndexes", namespace)
    from tidemark.commands.indexes import (
        cursor_options,  # (a sibling that dispatches here: imported when run)
    )

    docs = ts_indexes.user_index_specs(target.info.indexes, target.time_field, target.meta_field)
    batch_size = cursor_options(cmd).get("batchSize")
    if batch_size is None or batch_size >= len(docs):
        return {"cursor": {"id": Int64(0), "ns": target.ns, "firstBatch": docs}}
    return await cursor_reply(ctx, target.ns, iter(docs), batch_size, False, first=True)


async def drop_indexes(ctx: CommandContext, cmd: dict, namespace: Any = None) -> dict:
    command = "dropIndexes" if "dropIndexes" in cmd else "deleteIndexes"
    target = await resolve(ctx, cmd, command, namespace)
    if "index" not in cmd:
        raise MongoError(
            ErrorCode.IDLFailedToParse, f"BSON field '{command}.index' is missing but a required field"
        )
    ref = cmd["index"]

    def fn(w: Any) -> int:
        info = target.buckets_in(w, "ns not found {ns}")
        was = len(info.indexes)
        if ref == "*":
            names = [s["name"] for s in info.indexes]
        elif isinstance(ref, list):
            names = list(ref)
            for name in names:
                if type(name) is not str or not any(s["name"] == name for s in info.indexes):
                    raise MongoError(ErrorCode.IndexNotFound, f"index not found with name [{name}]")
        elif type(ref) is str:
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


async def coll_mod(ctx: CommandContext, cmd: dict, namespace: Any = None) -> dict:
    target = await resolve(ctx, cmd, "collMod", namespace)
    plan = ts_collmod.plan_coll_mod(cmd, target.options.to_document(), on_buckets_namespace=target.on_buckets)
    if plan.timeseries is not None:
        await settle(ctx.server, target.bns)  # open buckets must not outlive the options they were opened with

    def fn(w: Any) -> dict:
        info = target.buckets_in(w)
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


def _adopt_options(server: ServerState, bns: str, stored: dict) -> None:
    """Let the catalog's (empty) collection state carry the new options, so its statistics survive."""
    state = server.bucket_catalog.get(bns)
    if state is not None and not state.live:
        state.options = from_document(stored)


def _rewrite_view_span(w: Any, target: Target, new_span: int | None) -> None:
    rid, view = get_view(w, target.db, target.view_name)
    if rid is None or new_span is None or view is None:  # found by its rid: never None then
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


async def coll_stats(ctx: CommandContext, cmd: dict, namespace: Any = None) -> dict:
    name = C.collection_arg(cmd, "collStats")  # (the first field: collStats or its alias collstats)
    scale = _scale(cmd)
    return await ctx.run_blocking(coll_stats_document, ctx.server, ctx.db, name, scale, namespace)


