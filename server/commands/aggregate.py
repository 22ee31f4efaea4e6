"""aggregate (collection and database level) and explain (find, aggregate, count, distinct, update,
delete, findAndModify).

The read core every read command shares — view resolution, the document source (index plan,
collection scan, time-series ``read_source``) and the pipeline run — lives in ``server/collections.py``
(``open_read``); this module parses the commands, opens cursors and assembles explain documents.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

from tidemark import collections as access
from tidemark import write_stages
from tidemark.commands import replication, timeseries_out
from tidemark.commands import timeseries as ts
from tidemark.context import CommandContext, CommandSpec, ServerState
from tidemark.core import collection as C
from tidemark.core import namespace
from tidemark.core.clustered import cluster_info
from tidemark.cursors import cursor_reply
from tidemark.index_usage import not_counted
from tidemark.profiler import ReadFacts
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query import plan as planner
from tidemark.query.expressions import evaluate_let
from tidemark.query.pipeline import check_shape
from tidemark.timeseries import ddl as ts_ddl

# --------------------------------------------------------------------------------------------------
# aggregate
# --------------------------------------------------------------------------------------------------

AGG_FIELDS = frozenset({"aggregate", "pipeline", "cursor", "explain", "allowDiskUse", "maxTimeMS", "hint",
                        "let", "collation", "comment", "bypassDocumentValidation", "readConcern",
                        "writeConcern", "$db", "lsid", "$clusterTime", "$readPreference", "txnNumber",
                        "autocommit", "startTransaction", "apiVersion", "apiStrict",
                        "apiDeprecationErrors", "fromMongos", "needsMerge", "$client", "$audit",
                        "collectionUUID"})


def parse_aggregate(cmd: dict) -> tuple[Any, list[dict]]:
    target = cmd.get("aggregate")
    for k in cmd:
        if k not in AGG_FIELDS:
            raise MongoError(ErrorCode.IDLUnknownField, f"BSON field 'aggregate.{k}' is an unknown field.")
    if "pipeline" not in cmd:
        raise MongoError(ErrorCode.IDLFailedToParse,
                         "BSON field 'aggregate.pipeline' is missing but a required field")
    pipeline = cmd["pipeline"]
    if not isinstance(pipeline, list):
        raise MongoError(ErrorCode.TypeMismatch,
                         f"BSON field 'aggregate.pipeline' is the wrong type '{C.type_name(pipeline)}', "
                         "expected type 'array'")
    check_shape(pipeline)  # (mongod's command parse reads every element before anything else looks at one)
    if "cursor" not in cmd and not cmd.get("explain"):
        raise MongoError(ErrorCode.FailedToParse,
                         "The 'cursor' option is required, except for aggregate with the explain argument")
    if "cursor" in cmd and not isinstance(cmd["cursor"], dict):
        raise MongoError(ErrorCode.TypeMismatch,
                         "BSON field 'aggregate.cursor' is the wrong type, expected type 'object'")
    if not isinstance(target, str) and not (isinstance(target, (int, float)) and target == 1):
        raise MongoError(ErrorCode.InvalidNamespace,
                         f"collection name has invalid type {C.type_name(target)}")
    return target, pipeline


async def aggregate(ctx: CommandContext, cmd: dict) -> dict:
    target, pipeline = parse_aggregate(cmd)
    replication.check_change_stream(pipeline)
    sessions = None
    if replication.is_list_local_sessions(pipeline):
        if isinstance(target, str):
            raise MongoError(ErrorCode.InvalidNamespace, "$listLocalSessions must be run against the database "
                                                         "with {aggregate: 1}, not a collection")
        sessions = replication.local_sessions(ctx, pipeline[0]["$listLocalSessions"])  # loop-side state
    writes = any(isinstance(s, dict) and ("$out" in s or "$merge" in s) for s in pipeline)
    if writes:
        C.check_no_transaction(cmd)
    elif "startTransaction" in cmd or "autocommit" in cmd:
        C.check_no_transaction(cmd)
    db = ctx.db
    let = evaluate_let(C.doc_arg(cmd, "let", "aggregate"))
    collation = C.collation_arg(cmd, "aggregate")
    allow_disk = bool(cmd.get("allowDiskUse", False))
    batch_size = C.int_arg(cmd.get("cursor") or {}, "batchSize", "aggregate.cursor")
    if batch_size is not None and batch_size < 0:
        raise MongoError(ErrorCode.BadValue, "batchSize must be non-negative")
    max_time = C.int_arg(cmd, "maxTimeMS", "aggregate")
    collection_uuid = namespace.collection_uuid_arg(cmd, "aggregate")
    if isinstance(target, str):
        C.check_collection_name(db, target)
        name = target
        ns = C.ns_of(db, name)
    else:
        name = None
        ns = f"{db}.$cmd.aggregate"
    if cmd.get("explain"):
        return await explain_aggregate(ctx, db, name, pipeline, cmd, "queryPlanner")

    budget = access.TimeBudget(max_time)
    ts_out = None
    if pipeline and isinstance(pipeline[-1], dict) and "$out" in pipeline[-1]:  # one hop only for $out
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

    def open_docs() -> tuple[Iterator[Any], ReadFacts | None]:
        """The read, opened in the job that draws the first batch (cursor_reply). Without $out or
        $merge it changes nothing but what it returns (``ctx.facts``, set again by each run):
        restartable, so a short one runs inline on the event loop."""
        if sessions is not None:
            pctx = access.pipeline_context(ctx.server, db, "$cmd.aggregate", variables=let,
                                           allow_disk_use=allow_disk)
            return budget.outer(access.run_pipeline(pipeline[1:], sessions, pctx)), None
        if name is None:
            return budget.outer(_db_level(ctx.server, db, pipeline, let, allow_disk, collation, ctx.conn)), None
        access.check_output_stage(ctx.server, db, pipeline)
        result = access.open_read(ctx.server, db, name, pipeline, hint=cmd.get("hint"), variables=let,
                                  allow_disk_use=allow_disk, ctx=ctx, collation=collation,
                                  collection_uuid=collection_uuid, raw_ok=True)
        ctx.facts = ReadFacts(result.plan, result.stats, result.ts_info, cmd)
        return budget.outer(result.docs), ctx.facts

    return await cursor_reply(ctx, ns, None, batch_size, False, first=True, open_docs=open_docs,
                              restartable=not writes)


def _db_level(server: ServerState, db: str, pipeline: list[dict], let, allow_disk, collation=None, conn=None) -> Iterator[dict]:
    """``aggregate: 1``: the pipeline (its shape checked by ``parse_aggregate``) must start with a stage
    that needs no collection."""
    if not pipeline or not (
            {"$documents", "$currentOp", "$listLocalSessions", "$changeStream"} & set(pipeline[0])):
        raise MongoError(ErrorCode.InvalidNamespace,
                         "{aggregate: 1} is not valid for '$match'; a collection is required."
                         if not pipeline or "$match" in pipeline[0] else
                         f"{{aggregate: 1}} is not valid for '{next(iter(pipeline[0]), '')}'; "
                         "a collection is required.")
    if "$documents" not in pipeline[0] and "$currentOp" not in pipeline[0]:
        raise MongoError(ErrorCode.CommandNotSupported, f"{next(iter(pipeline[0]))} is not supported by Tidemark")
    pctx = access.pipeline_context(server, db, "$cmd.aggregate", variables=let, allow_disk_use=allow_disk,
                                   collation=C.effective_collation(collation, None), conn=conn)
    return access.run_pipeline(pipeline, iter(()), pctx)


# --------------------------------------------------------------------------------------------------
# explain
# --------------------------------------------------------------------------------------------------

VERBOSITIES = ("queryPlanner", "executionStats", "allPlansExecution")


def _server_info(server: ServerState) -> dict:

    return {"host": socket.gethostname(), "port": server.options.port, "version": "7.0.0",
            "gitVersion": "tidemark"}


def _stage_list(pipeline: list[dict]) -> list[dict]:
    try:
        from tidemark.query.explain import explain_stages
        from tidemark.query.pipeline import parse_pipeline

        return explain_stages(parse_pipeline(pipeline, None))
    except MongoError:
        raise
    except Exception:  # noqa: BLE001 - explain of the raw spec is still informative
        return [dict(s) for s in pipeline]


async def explain_aggregate(ctx: CommandContext, db: str, name: str | None, pipeline: list[dict], cmd: dict,
                            verbosity: str, target=None) -> dict:
    def work():
        if name is None:
            return None
        with not_counted():  # explain is no index access ($indexStats)
            res = access.open_read(ctx.server, db, name, pipeline, hint=cmd.get("hint"), ctx=ctx,
                                   variables=evaluate_let(C.doc_arg(cmd, "let", "aggregate")),
                                   collation=C.collation_arg(cmd, "aggregate"), target=target)
        n = None
        t0 = time.monotonic()
        if verbosity != "queryPlanner":
            n = sum(1 for _ in res.docs)
        millis = int((time.monotonic() - t0) * 1000)
        extended = res.ts_info is not None and ts.uses_extended_range(
            ctx.server, C.ns_of(db, res.target.ts_view["viewOn"]), res.ts_info["timeField"])
        return res, n, millis, extended

    result = await ctx.run_blocking(work)
    ns = C.ns_of(db, name) if name else f"{db}.$cmd.aggregate"
    if result is None:
        return {"stages": _stage_list(pipeline), "serverInfo": _server_info(ctx.server)}
    res, n, millis, extended = result
    flt, sort = access.leading_match_and_sort(pipeline)
    if res.ts_info is not None:
        buckets_ns = C.ns_of(db, res.target.ts_view["viewOn"])  # the read's own resolution
        options = ts_ddl.stored_options(res.target.buckets_info)
        fixed = options is not None and options.granularity is None and \
            options.bucket_rounding_seconds == options.bucket_max_span_seconds
        stages = ts.explain_stages(buckets_ns, res.ts_info, _stage_list(res.pipeline), n, millis, verbosity,
                                   fixed_buckets=fixed, uses_extended_range=extended)
        return {"explainVersion": "1", "stages": stages, "serverInfo": _server_info(ctx.server),
                "command": {"aggregate": name, "pipeline": pipeline}}
    planner_doc: dict[str, Any] = {"namespace": ns, "indexFilterSet": False, "parsedQuery": flt or {},
                   "winningPlan": res.plan.explain(has_sort=sort is not None, filter=flt)
                   if res.plan else {"stage": "EOF"},
                   "rejectedPlans": []}
    cursor_stage = {"$cursor": {"queryPlanner": planner_doc}}
    if n is not None:
        cursor_stage["$cursor"]["executionStats"] = _exec_stats(n, millis, res.stats)
    reply = {"explainVersion": "1", "stages": [cursor_stage, *_stage_list(res.pipeline)],
             "serverInfo": _server_info(ctx.server), "command": {"aggregate": name, "pipeline": pipeline}}
    return reply


def _exec_stats(n: int, millis: int, stats: dict) -> dict:
    return {"executionSuccess": True, "nReturned": n, "executionTimeMillis": millis,
            "totalKeysExamined": stats.get("keys", 0), "totalDocsExamined": stats.get("docs", 0)}


async def explain(ctx: CommandContext, cmd: dict) -> dict:
    inner = cmd.get("explain")
    if not isinstance(inner, dict) or not inner:
        raise MongoError(ErrorCode.TypeMismatch,
                         "BSON field 'explain.explain' is the wrong type, expected type 'object'")
    verbosity = cmd.get("verbosity", "allPlansExecution")
    if verbosity not in VERBOSITIES:
        raise MongoError(ErrorCode.BadValue,
                         f"Enumeration value '{verbosity}' for field 'explain.verbosity' is not a valid value.")
    command = next(iter(inner))
    inner = {**inner, "$db": ctx.db}
    db = ctx.db
    if command == "aggregate":
        target, pipeline = parse_aggregate({**inner, "explain": True})
        replication.check_change_stream(pipeline)
        return await explain_aggregate(ctx, db, target if isinstance(target, str) else None, pipeline,
                                       inner, verbosity)
    if command == "find":
        return await explain_find(ctx, inner, verbosity)
    if command in ("count", "distinct", "update", "delete", "findAndModify", "findandmodify"):
        return await explain_other(ctx, command, inner, verbosity)
    raise MongoError(ErrorCode.CommandNotSupported if command in ("insert", "mapReduce") else
                     ErrorCode.CommandNotFound, f"Explain failed due to unknown command: {command}")


async def explain_find(ctx: CommandContext, cmd: dict, verbosity: str) -> dict:
    spec = access.FindSpec(cmd)

    def work():
        with not_counted():  # explain is no index access ($indexStats)
            res = access.run_find(ctx.server, spec, ctx.db, ctx, target=target)
        t0 = time.monotonic()
        n = sum(1 for _ in res.docs) if verbosity != "queryPlanner" else None
        return res, n, int((time.monotonic() - t0) * 1000)

    target = await ctx.run_blocking(namespace.resolve, ctx.server.engine, ctx.db, spec.name)
    if target.view is not None:  # mongod explains the aggregation a find on a view becomes
        return await explain_aggregate(ctx, ctx.db, spec.name, spec.as_pipeline(), cmd, verbosity, target)
    res, n, millis = await ctx.run_blocking(work)
    win = res.plan.explain(has_sort=bool(spec.sort), filter=spec.filter if res.plan.kind == "IXSCAN" else
                           spec.filter)
    if spec.skip:
        win = {"stage": "SKIP", "skipAmount": spec.skip, "inputStage": win}
    if spec.limit:
        win = {"stage": "LIMIT", "limitAmount": spec.limit, "inputStage": win}
    if spec.projection:
        win = {"stage": "PROJECTION_DEFAULT", "transformBy": spec.projection, "inputStage": win}
    reply: dict[str, Any] = {"explainVersion": "1",
             "queryPlanner": {"namespace": res.namespace, "indexFilterSet": False, "parsedQuery": spec.filter,
                              "maxIndexedOrSolutionsReached": False, "maxIndexedAndSolutionsReached": False,
                              "maxScansToExplodeReached": False, "winningPlan": win, "rejectedPlans": []},
             "command": {k: v for k, v in cmd.items() if k != "$db"}, "serverInfo": _server_info(ctx.server)}
    if n is not None:
        reply["executionStats"] = _exec_stats(n, millis, res.stats)
        # Compass draws its plan tree from executionStages: the winning plan with the counters on top
        reply["executionStats"]["executionStages"] = {
            **win, "nReturned": n, "executionTimeMillisEstimate": millis,
            "docsExamined": res.stats.get("docs", 0), "keysExamined": res.stats.get("keys", 0)}
    return reply


def _is_view(server: ServerState, db: str, name: str) -> bool:
    with server.engine.read() as r:
        return C.get_view(r, db, name) is not None


def _view_count_or_distinct(command: str, flt: dict, cmd: dict) -> list[dict]:
    """The pipeline a count/distinct on a view runs as (how mongod explains it)."""
    stages: list[dict] = [{"$match": flt}] if flt else []
    if command == "count":
        if cmd.get("skip"):
            stages.append({"$skip": cmd["skip"]})
        if cmd.get("limit"):
            stages.append({"$limit": abs(cmd["limit"])})
        return [*stages, {"$count": "count"}]
    key = cmd.get("key")
    if not isinstance(key, str) or not key or key.startswith("$"):
        raise MongoError(ErrorCode.BadValue, "distinct requires a 'key' field path")
    return [*stages, {"$unwind": {"path": f"${key}", "preserveNullAndEmptyArrays": True}},
            {"$group": {"_id": None, "distinct": {"$addToSet": f"${key}"}}}]


async def explain_other(ctx: CommandContext, command: str, cmd: dict, verbosity: str) -> dict:
    name = C.collection_arg(cmd, command)
    if command == "count":
        flt = cmd.get("query") or {}
        stage = "COUNT"
    elif command == "distinct":
        flt = cmd.get("query") or {}
        stage = "DISTINCT"
    elif command == "update":
        st = (cmd.get("updates") or [{}])[0]
        flt, stage = st.get("q") or {}, "UPDATE"
    elif command == "delete":
        st = (cmd.get("deletes") or [{}])[0]
        flt, stage = st.get("q") or {}, "DELETE"
    else:
        flt, stage = cmd.get("query") or {}, "UPDATE" if not cmd.get("remove") else "DELETE"

    if command == "delete":
        target = await ctx.run_blocking(namespace.resolve, ctx.server.engine, ctx.db, name)
        if target.is_timeseries:
            reply = await ts.modify.explain_delete(ctx, cmd, verbosity, target)
            return {"explainVersion": "1", **reply, "command": {k: v for k, v in cmd.items() if k != "$db"},
                    "serverInfo": _server_info(ctx.server)}
    if command in ("count", "distinct"):
        view_pipeline = _view_count_or_distinct(command, flt, cmd)
        if await ctx.run_blocking(_is_view, ctx.server, ctx.db, name):
            # mongod explains the aggregation a count/distinct on a view becomes
            return await explain_aggregate(ctx, ctx.db, name, view_pipeline, cmd, verbosity)

    def work():
        with ctx.server.engine.read() as r:
            info = r.get_collection(C.ns_of(ctx.db, name))
        if info is None:
            return {"stage": "EOF"}
        p = planner.choose_plan(list(info.indexes), flt, None, None, multikey_default=info.clustered,
                               allow_or=True, cluster=cluster_info(info))
        return {"stage": stage, "inputStage": p.explain(filter=flt)}

    win = await ctx.run_blocking(work)
    return {"explainVersion": "1",
            "queryPlanner": {"namespace": C.ns_of(ctx.db, name), "indexFilterSet": False, "parsedQuery": flt,
                             "winningPlan": win, "rejectedPlans": []},
            "command": {k: v for k, v in cmd.items() if k != "$db"}, "serverInfo": _server_info(ctx.server)}



COMMANDS = [
    CommandSpec("aggregate", aggregate, help="run an aggregation pipeline on a collection, view or database"),
    CommandSpec("explain", explain, help="explain find/aggregate/count/distinct/update/delete/findAndModify"),
]
