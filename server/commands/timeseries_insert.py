"""``insert`` on a time-series view (spec §4): prepare the documents (on the event loop for small
inserts, in the thread pool for large ones), route them into the bucket catalog, wait for the group
commit. The steps are ``tidemark.timeseries.ingest``; this is the command of the time-series family.
"""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np

from tidemark.context import CommandContext
from tidemark.core import collection as C
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.protocol.messages import RawDocuments
from tidemark.timeseries import options as ts_options
from tidemark.timeseries import reopen, router, rules
from tidemark.timeseries.batch import ColumnBatch, RowBatch
from tidemark.timeseries.ddl import buckets_ns
from tidemark.timeseries.indexes import measurement_rules
from tidemark.timeseries.ingest import (
    MAX_LEAVING_WAITS,
    ON_LOOP_BYTES,
    ON_LOOP_DOCUMENT_BYTES,
    ON_LOOP_DOCUMENTS,
    Prepared,
    ask_storage,
    documents,
    leaving_allowance,
    prepare,
    prepare_rows,
    series_ids,
    slices,
)


async def insert_measurements(ctx: CommandContext, cmd: dict, buckets_info: Any = None) -> dict:
    """``buckets_info``: the catalog entry of the buckets collection when the caller resolved it."""
    db = cmd.get("$db") or ctx.db
    name = cmd["insert"]
    bns = buckets_ns(db, name)
    server = ctx.server
    info = buckets_info if buckets_info is not None and buckets_info.ns == bns else None
    if info is None:
        with server.engine.read() as r:
            info = r.get_collection(bns)
    if info is None or not (info.options or {}).get("timeseries"):
        raise MongoError(ErrorCode.NamespaceNotFound,
                         f"Buckets collection not found for time-series collection {db}.{name}")
    options = ts_options.from_document(info.options["timeseries"])
    catalog, committer = server.bucket_catalog, server.ts_committer
    state = catalog.collection(bns, options, C.effective_collation(None, C.default_collation_of(info)))
    raw = cmd.get("documents")
    columnar = bool(server.params["timeseriesColumnarInserts"])
    size = raw.end - raw.start if type(raw) is RawDocuments else 0
    small = type(raw) is not RawDocuments or (len(raw) <= ON_LOOP_DOCUMENTS and size <= ON_LOOP_BYTES
                                              and size <= ON_LOOP_DOCUMENT_BYTES * len(raw))
    index_rules = measurement_rules(info.indexes, options.time_field)
    if small:
        prepared = prepare(cmd, options, columnar, state.last_layout, index_rules)
    else:
        prepared = await ctx.run_blocking(prepare, cmd, options, columnar, state.last_layout, index_rules)
    async with committer.turn(bns):  # routed in arrival order, waits included (Committer.turn)
        # backpressure: buckets closed for memory leave once their full writes are durable, a bounded
        # number per commit (commit.FULL_WRITES_PER_COMMIT); an insert waits while they are more than the
        # allowance
        allowance = leaving_allowance(rules.Limits.of(server.params, options, catalog.memory_threshold).memory_threshold)
        for _ in range(MAX_LEAVING_WAITS):
            if catalog.leaving_bytes <= allowance:
                break
            await committer.commit(())
        catalog.release_series()  # series ids this insert computes stay valid until it has routed (pinned)
        with catalog.pinned():
            prepared = await _route(ctx, catalog, committer, state, options, prepared, cmd, index_rules)
    batch = prepared.batch
    if batch is not None:
        await committer.commit((bns,))
    reply: dict[str, Any] = {"n": batch.n if batch is not None else 0}
    if prepared.errors:
        reply["writeErrors"] = prepared.errors
    return reply


async def _route(ctx: CommandContext, catalog: Any, committer: Any, state: Any, options: Any, prepared: Prepared,
                 cmd: dict, index_rules: Any) -> Prepared:
    """Series ids, then the router (in slices for large inserts); the batch taken (the per-document
    parse when a meta value is not valid BSON)."""
    server = ctx.server
    batch = prepared.batch
    if isinstance(batch, ColumnBatch):
        state.last_layout = batch.layout
        if not series_ids(state.series, batch):
            # a meta value that is not valid BSON: the per-document parse reports it
            prepared = prepare_rows(documents(cmd), None, options, cmd.get("ordered", True) is not False,
                                    index_rules)
            batch = prepared.batch
    if isinstance(batch, RowBatch):
        series_ids(state.series, batch)
    if batch is not None:
        limits = rules.Limits.of(server.params, options, catalog.memory_threshold)
        load = reopen.Loader(server.engine)
        cuts = slices(batch, state.series.queried)
        if len(cuts) == 2:
            try:
                ask_storage(catalog, state, batch, 0, batch.n, load)
                router.route(catalog, state, batch, np.arange(batch.n), limits, load)
            finally:
                load.close()
        else:
            async with committer.routing():
                for start, end in zip(cuts, cuts[1:], strict=False):
                    try:
                        ask_storage(catalog, state, batch, start, end, load)
                        router.route(catalog, state, batch, np.arange(start, end), limits, load)
                    finally:
                        load.close()
                    if end < batch.n:
                        await asyncio.sleep(0)
                        await _leaving_backpressure(catalog, committer, limits)
        catalog.expire_idle(limits)
    return prepared


async def _leaving_backpressure(catalog: Any, committer: Any, limits: rules.Limits) -> None:
    """Between routing slices: while the buckets leaving memory (expired for the new buckets this insert
    opens) are more than the leaving allowance, their full writes go out in commits of their own
    (``Committer.write_leaving``), so an insert of many new series holds about the allowance + one
    slice's expiries, not one expiry per new series until its commit. Stops when a commit frees nothing
    (storage refuses, or what leaves is not idle yet: the insert's commit takes it)."""
    allowance = leaving_allowance(limits.memory_threshold)
    while catalog.leaving_bytes > allowance:
        before = catalog.leaving_bytes
        await committer.write_leaving()
        if catalog.leaving_bytes >= before:
            return
