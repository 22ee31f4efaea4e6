"""aggregate (collection and database level); ``explain: true`` is answered by ``commands/explain.py``.

The read core every read command shares — view resolution, the document source (index plan,
collection scan, time-series ``read_source``) and the pipeline run — lives in ``server/collections.py``
(``open_read``); this module parses the command and opens its cursor.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tidemark import collections as access
from tidemark import write_stages
from tidemark.arguments import check_command
from tidemark.commands import replication, timeseries_out
from tidemark.context import CommandContext, CommandSpec, ServerState
from tidemark.core import collection as C
from tidemark.core import namespace
from tidemark.cursors import cursor_reply
from tidemark.profiler import ReadFacts
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.pipeline import check_shape

# --------------------------------------------------------------------------------------------------
# aggregate
# --------------------------------------------------------------------------------------------------

def parse_aggregate(cmd: dict) -> tuple[Any, list[dict]]:
    target = cmd.get("aggregate")
    check_command(cmd, "aggregate")  # mongod's IDL: 40415 unknown fields, 14 wrong types
    if "pipeline" not in cmd:
        raise MongoError(ErrorCode.IDLFailedToParse,
                         "BSON field 'aggregate.pipeline' is missing but a required field")
    pipeline = cmd["pipeline"]
    if type(pipeline) is not list and not isinstance(pipeline, list):
        raise MongoError(ErrorCode.TypeMismatch,
                         f"BSON field 'aggregate.pipeline' is the wrong type '{C.type_name(pipeline)}', "
                         "expected type 'array'")
    check_shape(pipeline)  # (mongod's command parse reads every element before anything else looks at one)
    explain = "explain" in cmd and cmd["explain"]
    if "cursor" not in cmd and not explain:
        raise MongoError(ErrorCode.FailedToParse,
                         "The 'cursor' option is required, except for aggregate with the explain argument")
    if explain and "writeConcern" in cmd:  # (mongod's message, its missing space included)
        raise MongoError(ErrorCode.FailedToParse, "Aggregation explain does not support the'writeConcern' option")
    if "cursor" in cmd and type(cmd["cursor"]) is not dict and not isinstance(cmd["cursor"], dict):
        raise MongoError(ErrorCode.TypeMismatch,
                         "BSON field 'aggregate.cursor' is the wrong type, expected type 'object'")
    if type(target) is not str and not (isinstance(target, (int, float)) and target == 1):
        raise MongoError(ErrorCode.InvalidNamespace,
                         f"collection name has invalid type {C.type_name(target)}")
    return target, pipeline


async def aggregate(ctx: CommandContext, cmd: dict) -> dict:
    target, pipeline = parse_aggregate(cmd)
    sessions = None
    if replication.check_leading_stage(pipeline):  # (40573 for a change stream)
        if type(target) is str:
            raise MongoError(ErrorCode.InvalidNamespace, "$listLocalSessions must be run against the database "
                                                         "with {aggregate: 1}, not a collection")
        sessions = replication.local_sessions(ctx, pipeline[0]["$listLocalSessions"])  # loop-side state
    writes = False
    for stage in pipeline:  # (each a one-field object: check_shape; a loop, no call per stage)
        if "$out" in stage or "$merge" in stage:
            writes = True
    # The fsync lock holds back a writing aggregate (a $out or $merge: mongod's global lock in write
    # mode), as dispatch holds back the write commands; a read goes on (no call for it).
    gate = ctx.server.fsync_lock if writes else None
    if gate is not None:
        await gate.enter(ctx.op)
    try:
        db = ctx.db
        let = C.command_variables(cmd, "aggregate")
        # (an option the command does not give costs a look-up, not a call: most give none of these)
        collation = C.collation_arg(cmd, "aggregate") if "collation" in cmd else None
        allow_disk = cmd.get("allowDiskUse")  # an optionalBool: a bool, or absent (parse_aggregate checked it)
        if allow_disk is None:
            allow_disk = access.allow_disk_use_default(ctx.server)
        cursor = cmd.get("cursor")  # (a document when given: parse_aggregate checked it)
        batch_size = C.int_arg(cursor, "batchSize", "aggregate.cursor") if cursor and "batchSize" in cursor else None
        if batch_size is not None and batch_size < 0:
            raise MongoError(ErrorCode.BadValue, "batchSize must be non-negative")
        max_time = C.int_arg(cmd, "maxTimeMS", "aggregate") if "maxTimeMS" in cmd else None
        collection_uuid = namespace.collection_uuid_arg(cmd, "aggregate") if "collectionUUID" in cmd else None
        if type(target) is str:
            C.check_collection_name(db, target)
            if pipeline and "$documents" in pipeline[0]:  # (each stage an object: check_shape)
                # mongod's validateTopLevelPipeline: a first stage independent of any collection needs
                # {aggregate: 1} (a misplaced one fails 40602 when the pipeline parses).
                raise MongoError(ErrorCode.InvalidNamespace, "'$documents' can only be run with {aggregate: 1}")
            name = target
            ns = C.ns_of(db, name)
        else:
            name = None
            ns = f"{db}.$cmd.aggregate"
        if "explain" in cmd and cmd["explain"]:
            # (the explain family builds on this one: imported here, where the one cycle is broken)
            from tidemark.commands.explain import explain_aggregate
            return await explain_aggregate(ctx, db, name, pipeline, cmd, "queryPlanner")

        budget = access.TimeBudget(max_time)
        ts_out = None
        if pipeline and "$out" in pipeline[-1]:  # one hop only for $out
            ts_out = await ctx.run_blocking(write_stages.timeseries_out_plan, ctx.server, db, pipeline)
        if ts_out is not None:  # $out writing a time-series collection: measurements go through the loop
            def results():
                if name is None:
                    return list(budget.outer(_db_level(ctx.server, db, pipeline[:-1], let, allow_disk, collation,
                                                       ctx.conn)))
                result = access.open_read(ctx.server, db, name, pipeline[:-1], hint=cmd.get("hint"), variables=let,
                                          allow_disk_use=allow_disk, ctx=ctx, collation=collation,
                                          collection_uuid=collection_uuid)
                ctx.facts = ReadFacts(result.plan, result.stats, result.ts_info, cmd)
                return list(budget.outer(result.docs))

            await timeseries_out.out_timeseries(ctx, ts_out, await ctx.run_blocking(results))
            return await cursor_reply(ctx, ns, iter(()), batch_size, False, first=True, facts=ctx.facts)

        counted: list[bool] = []

        def open_docs() -> tuple[Iterator[Any], ReadFacts | None]:
            """The read, opened in the job that draws the first batch (cursor_reply). Without $out or
            $merge it changes nothing but what it returns (``ctx.facts``, set again by each run) and the
            stage counters (ticked by the first run only): restartable, so a short one runs inline on
            the event loop."""
            facts = target = None
            if sessions is not None:
                pctx = access.pipeline_context(ctx.server, db, "$cmd.aggregate", variables=let,
                                               allow_disk_use=allow_disk)
                docs = access.run_pipeline(pipeline[1:], sessions, pctx)
            elif name is None:
                docs = _db_level(ctx.server, db, pipeline, let, allow_disk, collation, ctx.conn)
            else:
                if writes:  # (a final $out or $merge: what it writes into is checked before the read)
                    access.check_output_stage(ctx.server, db, pipeline)
                result = access.open_read(ctx.server, db, name, pipeline, hint=cmd.get("hint"), variables=let,
                                          allow_disk_use=allow_disk, ctx=ctx, collation=collation,
                                          collection_uuid=collection_uuid, raw_ok=True, shape_checked=True,
                                          interrupt_checked=True)  # (_open_and_fill checked the operation just before)
                docs, target = result.docs, result.target
                facts = ctx.facts = ReadFacts(result.plan, result.stats, result.ts_info, cmd)  # (a local: a property)
            if not counted:  # (once the read opened; once: a restarted open_docs does not count again)
                counted.append(True)
                access.count_stages(ctx.server, pipeline, target)
            return budget.outer(docs), facts

        return await cursor_reply(ctx, ns, None, batch_size, False, first=True, open_docs=open_docs,
                                  restartable=not writes)

    finally:
        if gate is not None:
            gate.exit()

def _db_level(server: ServerState, db: str, pipeline: list[dict], let, allow_disk, collation=None, conn=None) -> Iterator[dict]:
    """``aggregate: 1``: the pipeline (its shape checked by ``parse_aggregate``) must start with a stage
    that needs no collection."""
    if not pipeline or not (
            {"$documents", "$currentOp", "$listLocalSessions", "$changeStream", "$listCatalog"} & set(pipeline[0])):
        raise MongoError(ErrorCode.InvalidNamespace,
                         "{aggregate: 1} is not valid for '$match'; a collection is required."
                         if not pipeline or "$match" in pipeline[0] else
                         f"{{aggregate: 1}} is not valid for '{next(iter(pipeline[0]), '')}'; "
                         "a collection is required.")
    if not {"$documents", "$currentOp", "$listCatalog"} & set(pipeline[0]):
        raise MongoError(ErrorCode.CommandNotSupported, f"{next(iter(pipeline[0]))} is not supported by Tidemark")
    pctx = access.pipeline_context(server, db, "$cmd.aggregate", variables=let, allow_disk_use=allow_disk,
                                   collation=C.effective_collation(collation, None), conn=conn)
    return access.run_pipeline(pipeline, iter(()), pctx)


COMMANDS = [
    # (mongod's PipelineCommand counts in opcounters.query, not .command: shouldAffectQueryCounter)
    CommandSpec("aggregate", aggregate, help="run an aggregation pipeline on a collection, view or database",
                counter="query"),
]
