"""create and drop of a time-series collection (spec §1.1, §10): the view document in
``db.system.views`` and the clustered ``db.system.buckets.<c>`` collection, written in one write
function; a drop forgets the collection's in-memory buckets and journal streams first. Part of the
time-series command family (server/commands/timeseries.py); the catalog objects themselves are
``tidemark.timeseries.ddl``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from tidemark.context import CommandContext
from tidemark.core import collection as C
from tidemark.core.clustered import check_for_namespace as check_clustered_for_namespace
from tidemark.core.clustered import parse_create_option as parse_clustered_option
from tidemark.core.namespace import BUCKETS_PREFIX, is_timeseries_view
from tidemark.core.namespace import find_view as get_view  # (rid, doc): a point lookup by _id
from tidemark.cursors import dropped_reason
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.timeseries import options as ts_options
from tidemark.timeseries.ddl import (
    _delete_view,
    _insert_view,
    buckets_ns,
    stored_options,
    view_name_of,
)
from tidemark.timeseries.indexes import default_index_specs


async def create(ctx: CommandContext, cmd: dict) -> dict:
    db = cmd.get("$db") or ctx.db
    name = cmd["create"]
    if name.startswith(BUCKETS_PREFIX):
        return await _create_buckets_directly(ctx, db, name, cmd)
    request = ts_options.parse_create(db, cmd)
    ns = f"{db}.{name}"
    bns = buckets_ns(db, name)
    # the buckets collection's name must be valid too: 255 bytes at most (mongod creates it as any other)
    C.check_collection_name(db, bns[len(db) + 1:])
    view_doc = ts_options.view_document(db, name, request.timeseries, request.extra.get("collation"))
    bucket_options = request.buckets_options()

    def fn(w: Any) -> None:
        if w.get_collection(ns) is not None:
            raise MongoError(ErrorCode.NamespaceExists, f"Collection {ns} already exists.")
        _, existing_view = get_view(w, db, name)
        existing_buckets = w.get_collection(bns)
        if existing_view is not None or existing_buckets is not None:
            current = stored_options(existing_buckets)
            compatible = (
                current is not None
                and current.equivalent(request.timeseries)
                and all((existing_buckets.options or {}).get(k) == request.extra.get(k)
                        for k in ("expireAfterSeconds", "collation", "storageEngine", "indexOptionDefaults"))
            )
            if existing_view is None and existing_buckets is not None:
                # buckets without their view (renamed here, or restored): mongod's _createTimeseries
                # reuses a compatible buckets collection and creates the view over it
                if not compatible:
                    raise MongoError(ErrorCode.NamespaceExists, f"Bucket Collection already exists. NS: {bns}. "
                                                                f"UUID: {C.uuid_of(existing_buckets)}")
                _insert_view(w, db, view_doc)
                return
            if compatible and is_timeseries_view(existing_view):
                return
            raise MongoError(ErrorCode.NamespaceExists, f"A timeseries collection already exists. NS: {ns}")
        info = w.create_collection(bns, bucket_options, clustered=True)
        for spec in default_index_specs(request.timeseries.time_field, request.timeseries.meta_field):
            w.create_index(info, C.index_collation(spec, bucket_options.get("collation")), [])
        _insert_view(w, db, view_doc)

    await asyncio.wrap_future(ctx.server.engine.write(fn))
    return {}


async def _create_buckets_directly(ctx: CommandContext, db: str, name: str, cmd: dict) -> dict:
    """``create: "system.buckets.x"``: only with ``timeseries`` (how mongorestore recreates buckets)."""
    ns = f"{db}.{name}"
    if "timeseries" not in cmd:
        raise MongoError(ErrorCode.IllegalOperation,
                         f"Cannot create a system.buckets collection without timeseries options: {ns}")
    spec: Any = {k: v for k, v in cmd.items() if k not in ("validator", "clusteredIndex")}
    clustered = cmd.get("clusteredIndex", True)
    if clustered is not True:
        spec = parse_clustered_option(clustered)  # IDL's errors, then the legacy form's (5979703)
        if spec is False:
            raise MongoError(ErrorCode.InvalidOptions, "A time-series bucket collection must be clustered on _id")
        check_clustered_for_namespace(name, spec, id_index=False, auto_index_id=None)
    request = ts_options.parse_create(db, spec)
    options = request.buckets_options()

    def fn(w: Any) -> None:
        if w.get_collection(ns) is not None:
            raise MongoError(ErrorCode.NamespaceExists, f"Collection {ns} already exists.")
        w.create_collection(ns, options, clustered=True)

    await asyncio.wrap_future(ctx.server.engine.write(fn))
    return {}


async def drop(ctx: CommandContext, db: str, name: str) -> dict:
    """Drop of the view or of ``system.buckets.<c>``: both objects go (spec §10)."""
    view_name = view_name_of(name)
    bns = buckets_ns(db, view_name)
    catalog = ctx.server.bucket_catalog

    def fn(w: Any) -> tuple[int, Any]:
        _, view = get_view(w, db, view_name)
        n = 0
        if view is not None and (is_timeseries_view(view) or view.get("viewOn") == BUCKETS_PREFIX + view_name):
            _delete_view(w, db, view_name)
        info = w.get_collection(bns)
        if info is None:
            return n, None
        w.drop_collection(bns)
        return len(info.indexes) + 1, info.uuid

    await catalog_flush_before_drop(ctx, bns)
    n, uuid = await asyncio.wrap_future(ctx.server.engine.write(fn))
    catalog.forget(bns)
    # their next getMore answers 175 QueryPlanKilled, as over a dropped regular collection
    reason = dropped_reason(uuid) if uuid is not None else None
    ctx.server.cursors.kill_namespace(f"{db}.{view_name}", reason)
    ctx.server.cursors.kill_namespace(bns, reason)
    return {"nIndexesWas": n, "ns": f"{db}.{name}"}


async def catalog_flush_before_drop(ctx: CommandContext, bns: str) -> None:
    """Forget the collection's buckets and their journal streams before the drop commits."""
    await ctx.server.ts_committer.forget_collection(bns)
