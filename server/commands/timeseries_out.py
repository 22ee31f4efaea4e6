"""``$out`` into a time-series collection, the write (its plan, ``timeseries_out_plan``, is validated by
``tidemark.write_stages`` before the read): the results become the measurements of a temporary
time-series collection (create, insert, buckets written in full), then one write transaction swaps it
in for the target (view and buckets). Part of the time-series command family: it runs the family's
create, insert and drop with the aggregate's command context.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid

from tidemark.commands import timeseries_ddl
from tidemark.commands.timeseries_insert import insert_measurements
from tidemark.context import CommandContext
from tidemark.core import collection as C
from tidemark.core.namespace import find_view, is_timeseries_view
from tidemark.protocol.errors import MongoError
from tidemark.timeseries import ddl as ts_ddl
from tidemark.timeseries import options as ts_options
from tidemark.write_stages import OUT_BATCH, TimeseriesOut


async def out_timeseries(ctx: CommandContext, plan: TimeseriesOut, docs: list) -> None:
    """Write ``docs`` as the measurements of ``plan``'s collection the way mongod does: into a
    temporary time-series collection first (its buckets written in full), then one write transaction
    swaps it in for the target (view and buckets). A failure leaves the target untouched."""
    server = ctx.server
    db, coll = plan.db, plan.coll
    tmp = f"tmp.agg_out.{uuid.uuid4()}"
    tmp_bns, target_bns = ts_ddl.buckets_ns(db, tmp), ts_ddl.buckets_ns(db, coll)
    create = {"create": tmp, "timeseries": plan.options.to_document(), "$db": db, **plan.extra}
    await timeseries_ddl.create(ctx, create)
    try:
        if plan.indexes:
            def copy_indexes(w):
                info = w.get_collection(tmp_bns)
                for spec in plan.indexes:
                    w.create_index(info, dict(spec), [])
                    info = w.get_collection(tmp_bns)
            await asyncio.wrap_future(server.engine.write(copy_indexes))
        for start in range(0, len(docs), OUT_BATCH):
            reply = await insert_measurements(
                ctx, {"insert": tmp, "documents": docs[start:start + OUT_BATCH], "ordered": True, "$db": db})
            if reply.get("writeErrors"):
                first = reply["writeErrors"][0]
                raise MongoError(first["code"], first["errmsg"])
        await server.ts_committer.close_collection(tmp_bns)   # every bucket written in full
        await server.ts_committer.forget_collection(tmp_bns)
        await timeseries_ddl.catalog_flush_before_drop(ctx, target_bns)
        view_doc = ts_options.view_document(db, coll, plan.options, plan.extra.get("collation"))

        def swap(w):
            _, view = find_view(w, db, coll)
            if view is not None:
                if not is_timeseries_view(view):
                    raise MongoError(7268703, "Cannot create a time-series collection from a non time-series view.")
                ts_ddl._delete_view(w, db, coll)
            if w.get_collection(C.ns_of(db, coll)) is not None:
                raise MongoError(7268700, "Cannot create a time-series collection from a non time-series collection.")
            if w.get_collection(target_bns) is not None:
                w.drop_collection(target_bns)
            w.rename_collection(tmp_bns, target_bns)
            ts_ddl._delete_view(w, db, tmp)
            ts_ddl._insert_view(w, db, view_doc)

        await asyncio.wrap_future(server.engine.write(swap))
    except BaseException:
        with contextlib.suppress(Exception):
            await timeseries_ddl.drop(ctx, db, tmp)
        raise
    server.bucket_catalog.forget(target_bns)
    server.cursors.kill_namespace(C.ns_of(db, coll))
    server.cursors.kill_namespace(target_bns)
