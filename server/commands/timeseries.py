"""The seam between the command families and time-series collections.

The regular command families call this module whenever they meet a time-series namespace: a ``create``
with ``timeseries`` options, a write or read on a view whose pipeline starts with
``$_internalUnpackBucket``, or a write/read on ``system.buckets.<c>``. It is the only bridge from
``server/commands`` to ``server/timeseries`` (see server/README.md, "Time-series seam").

Public API (keep these signatures; extend compatibly):

    async create(ctx, cmd) -> dict                      # create with `timeseries` (or of system.buckets.*)
    async insert(ctx, cmd) -> dict                      # insert on the view: {n, writeErrors?}
    async insert_buckets(ctx, cmd) -> dict              # insert into system.buckets.<c>: {n, writeErrors?}
    async drop(ctx, db, name) -> dict                   # drop of the view or of system.buckets.<c>
    read_source(ctx, db, view_doc, user_pipeline, *, hint=None) -> (iterator, remaining_pipeline, explain_info)
    bucket_source(ctx, db, coll) -> iterator            # system.buckets.<c> documents, open ones included
    EXTRA_STAGES                                        # {"$_internalUnpackBucket": .., "$_unpackBucket": ..}
    is_timeseries_view(view_doc) -> bool
    list_collections_entry(name, view_doc, buckets_info, *, name_only=False) -> dict
    buckets_list_collections_entry(buckets_info, *, name_only=False) -> dict
    async update / delete / find_and_modify / create_indexes / list_indexes / drop_indexes /
          coll_mod / coll_stats (ctx, cmd) -> dict      # delegated to server/commands/timeseries_admin.py
"""

from __future__ import annotations

from typing import Any

from server.commands import timeseries_admin as ts_admin
from server.timeseries import view as ts_view
from server.timeseries import writes as ts_writes
from server.timeseries.ddl import (
    buckets_list_collections_entry,
    create,
    drop,
    is_timeseries_view,
    list_collections_entry,
)
from server.timeseries.unpack import EXTRA_STAGES

__all__ = [
    "EXTRA_STAGES",
    "bucket_source",
    "buckets_list_collections_entry",
    "coll_mod",
    "coll_stats",
    "create",
    "create_indexes",
    "delete",
    "drop",
    "drop_indexes",
    "find_and_modify",
    "insert",
    "insert_buckets",
    "is_timeseries_view",
    "list_collections_entry",
    "list_indexes",
    "read_source",
    "update",
]


async def insert(ctx: Any, cmd: dict) -> dict:
    """``insert`` on a time-series view. Returns ``{n, writeErrors?}`` (n counts measurements)."""
    return await ts_writes.insert_measurements(ctx, cmd)


async def insert_buckets(ctx: Any, cmd: dict) -> dict:
    """``insert`` into ``system.buckets.<c>``: validated bucket documents (invalid -> 121)."""
    return await ts_writes.insert_bucket_documents(ctx, cmd)


def read_source(ctx: Any, db: str, view_doc: dict, user_pipeline: list[dict], *, hint: Any = None):
    """Measurements of the view ``view_doc`` for ``user_pipeline``.

    Returns ``(iterator, remaining_pipeline, explain_info)``: the iterator yields unpacked
    measurements already filtered by whatever leading ``$match`` could be pushed into the bucket
    scan (the full per-measurement filter is still applied here), ``remaining_pipeline`` is what
    the caller still has to run over them, and ``explain_info`` is a dict whose counters
    (``bucketsScanned``, ``bucketsUnpacked``, …) fill in as the iterator is consumed.
    ``hint`` (index name or *user* key pattern) picks the buckets index; unknown/hidden -> 2 BadValue.
    """
    return ts_view.read_source(ctx, db, view_doc, user_pipeline, hint=hint)


def bucket_source(ctx: Any, db: str, coll: str):
    """Bucket documents of ``db.<coll>`` (a ``system.buckets.*`` name), open buckets included."""
    return ts_view.bucket_source(ctx, db, coll)


async def update(ctx: Any, cmd: dict) -> dict:
    return await ts_admin.update(ctx, cmd)


async def delete(ctx: Any, cmd: dict) -> dict:
    return await ts_admin.delete(ctx, cmd)


async def find_and_modify(ctx: Any, cmd: dict) -> dict:
    return await ts_admin.find_and_modify(ctx, cmd)


async def create_indexes(ctx: Any, cmd: dict) -> dict:
    return await ts_admin.create_indexes(ctx, cmd)


async def list_indexes(ctx: Any, cmd: dict) -> dict:
    return await ts_admin.list_indexes(ctx, cmd)


async def drop_indexes(ctx: Any, cmd: dict) -> dict:
    return await ts_admin.drop_indexes(ctx, cmd)


async def coll_mod(ctx: Any, cmd: dict) -> dict:
    return await ts_admin.coll_mod(ctx, cmd)


async def coll_stats(ctx: Any, cmd: dict) -> dict:
    return await ts_admin.coll_stats(ctx, cmd)
