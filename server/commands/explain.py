"""explain (find, aggregate, count, distinct, update, delete, findAndModify), and ``aggregate`` with
``explain: true``: mongod 7.0's explain documents, built on the read core the commands themselves run
on (``collections.open_read`` / ``run_find``).

- The command is checked as mongod's IDL does (40415 for an unknown field; generic arguments pass), and
  an explained command naming another database (its own ``$db``) is 73.
- ``queryPlanner`` describes the plan; ``executionStats`` and ``allPlansExecution`` also run the read
  and count. A write counts what it *would* do (``nWouldDelete``; ``nMatched``, ``nWouldModify``,
  ``nWouldUpsert``) and writes nothing: no document changes, no collection or database is created.
- A collection that does not exist plans as ``EOF`` (``type: "nonExistentNamespace"``); a findAndModify
  in a database that does not exist is 26, as mongod's.
- An error while counting is not the command's error: the explain answers with ``executionSuccess:
  false`` and the error's ``errorMessage`` / ``errorCode`` (mongod's explain_execution_error).
- ``command`` echoes the explained command as sent (without ``$db``).
- An aggregate of a collection whose whole pipeline the query layer absorbs (``query_layer_shape``:
  mongod 7.0's pushdown of the leading ``$match``, ``$sort``, ``$skip``/``$limit`` and projection, the
  classic engine's) is explained like a find, with ``optimizedPipeline: true`` and no ``stages``
  (run_aggregate.cpp ``canOptimizeAwayPipeline``); any other keeps ``stages``, the leading ``$match``
  being the ``$cursor``'s filter rather than a stage of its own.
- At ``executionStats`` / ``allPlansExecution`` the read runs inside ``pipeline.collecting_stats()`` and
  each stage after ``$cursor`` shows what it did (its ``Stage.stats``: ``nReturned``,
  ``executionTimeMillisEstimate``, ``$group``/``$sort``/``$_internalSetWindowFields`` their spills and
  bytes; ``query.explain``); the ``$cursor``'s ``nReturned`` is what the query layer passed on.
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Callable, Iterable
from typing import Any, cast

from tidemark import collections as access
from tidemark.arguments import check_command, check_fields
from tidemark.commands import replication, write_statements
from tidemark.commands import timeseries as ts
from tidemark.commands.aggregate import parse_aggregate
from tidemark.commands.crud import parse_count, parse_distinct, record_store_count
from tidemark.context import CommandContext, CommandSpec, ServerState
from tidemark.core import collection as C
from tidemark.core import namespace
from tidemark.core.clustered import cluster_info
from tidemark.index_usage import not_counted
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query import plan as planner
from tidemark.query.count_scan import CountScan, count_scan_of
from tidemark.query.explain_size import fit_explain
from tidemark.query.expressions import evaluate_let
from tidemark.query.memory import LOOKUP_LIMIT, MIB
from tidemark.query.pipeline import PipelineContext, collecting_stats
from tidemark.query.project import distinct_projection, keeps_sort_fields, projection_stage
from tidemark.query.pushdown import FindShape, query_layer_shape
from tidemark.query.update import apply_update
from tidemark.query.update_parse import parse_update
from tidemark.timeseries import ddl as ts_ddl

VERBOSITIES = ("queryPlanner", "executionStats", "allPlansExecution")
_EOF = {"stage": "EOF", "type": "nonExistentNamespace"}  # the plan of a collection that does not exist


def _server_sections(server: ServerState) -> dict:
    """The ``serverInfo`` and ``serverParameters`` sections every explain ends with (mongod 7.0's
    explain_common generateServerInfo / generateServerParameters): the query limits in force, the two
    Tidemark lets a client set read from its parameters, the others mongod 7.0's fixed defaults
    (Tidemark enforces the same values, without a parameter to change them)."""
    info = {"host": socket.gethostname(), "port": server.options.port, "version": "7.0.0",
            "gitVersion": "tidemark"}
    parameters = {
        "internalQueryFacetBufferSizeBytes": 100 * MIB,
        "internalQueryFacetMaxOutputDocSizeBytes": 100 * MIB,
        "internalLookupStageIntermediateDocumentMaxSizeBytes": LOOKUP_LIMIT,
        "internalDocumentSourceGroupMaxMemoryBytes": server.params["internalDocumentSourceGroupMaxMemoryBytes"],
        "internalQueryMaxBlockingSortMemoryUsageBytes": server.params["internalQueryMaxBlockingSortMemoryUsageBytes"],
        "internalQueryProhibitBlockingMergeOnMongoS": 0,
        "internalQueryMaxAddToSetBytes": 100 * MIB,
        "internalDocumentSourceSetWindowFieldsMaxMemoryBytes": 100 * MIB,
        "internalQueryFrameworkControl": "trySbeRestricted",
    }
    return {"serverInfo": info, "serverParameters": parameters}


def _echo(cmd: dict) -> dict:
    """The explained command as the client sent it."""
    return {k: v for k, v in cmd.items() if k != "$db"}


def _stage_list(pipeline: list[dict], db: str | None = None) -> list[dict]:
    try:
        from tidemark.query.explain import explain_stages
        from tidemark.query.pipeline import PipelineContext, parse_pipeline

        context = PipelineContext(db=db, check_variables=False)  # (db: the target $out / $merge show)
        return explain_stages(parse_pipeline(pipeline, context), context)
    except MongoError:
        raise
    except Exception:  # noqa: BLE001 - explain of the raw spec is still informative
        return [dict(s) for s in pipeline]


def _executed(stages: list, db: str | None) -> list[dict]:
    """The stages that ran, each with what it did (its ``Stage.stats``: mongod's execution statistics)."""
    from tidemark.query.explain import explain_stages

    return explain_stages(stages, PipelineContext(db=db, check_variables=False), executed=True) if stages else []


def _exec_stats(n: int, millis: int, stats: dict) -> dict:
    return {"executionSuccess": True, "nReturned": n, "executionTimeMillis": millis,
            "totalKeysExamined": stats.get("keys", 0), "totalDocsExamined": stats.get("docs", 0)}


# --------------------------------------------------------------------------------------------------
# the command
# --------------------------------------------------------------------------------------------------


async def explain(ctx: CommandContext, cmd: dict) -> dict:
    inner = cmd.get("explain")
    if not isinstance(inner, dict) or not inner:
        raise MongoError(ErrorCode.TypeMismatch,
                         "BSON field 'explain.explain' is the wrong type, expected type 'object'")
    check_fields(cmd, "explain", {"verbosity"})
    verbosity = cmd.get("verbosity", "allPlansExecution")
    if verbosity not in VERBOSITIES:
        raise MongoError(ErrorCode.BadValue,
                         f"Enumeration value '{verbosity}' for field 'explain.verbosity' is not a valid value.")
    inner_db = inner.get("$db", ctx.db)
    if inner_db != ctx.db:
        raise MongoError(ErrorCode.InvalidNamespace,
                         f"Mismatched $db in explain command. Expected {ctx.db} but got {inner_db}")
    command = next(iter(inner))
    inner = {**inner, "$db": ctx.db}
    db = ctx.db
    if command == "aggregate":
        target, pipeline = parse_aggregate({**inner, "explain": True})
        replication.check_change_stream(pipeline)
        return await explain_aggregate(ctx, db, target if type(target) is str else None, pipeline,
                                       inner, verbosity)
    if command == "find":
        return _fitted(ctx, await explain_find(ctx, inner, verbosity))
    if command in ("count", "distinct", "update", "delete", "findAndModify", "findandmodify"):
        return _fitted(ctx, await explain_other(ctx, command, inner, verbosity))
    raise MongoError(ErrorCode.CommandNotSupported if command in ("insert", "mapReduce") else
                     ErrorCode.CommandNotFound, f"Explain failed due to unknown command: {command}")


def _fitted(ctx: CommandContext, reply: dict) -> dict:
    """Every explain answer passes here: kept under the BSON size limit as mongod keeps it."""
    return fit_explain(reply, ctx.server.params["internalQueryExplainSizeThresholdBytes"])


async def explain_aggregate(ctx: CommandContext, db: str, name: str | None, pipeline: list[dict], cmd: dict,
                            verbosity: str, target=None) -> dict:
    """The explain of an aggregate (the explain command's, and an aggregate's ``explain: true``)."""
    return _fitted(ctx, await _explain_aggregate(ctx, db, name, pipeline, cmd, verbosity, target))


async def _explain_aggregate(ctx: CommandContext, db: str, name: str | None, pipeline: list[dict], cmd: dict,
                             verbosity: str, target=None) -> dict:
    # An explain never writes: mongod's $out / $merge exhaust their input in explain mode. An execution
    # explain runs the pipeline without its writing stage, which it still shows.
    writing = pipeline[-1:] if verbosity != "queryPlanner" and pipeline and isinstance(pipeline[-1], dict) \
        and next(iter(pipeline[-1]), None) in ("$out", "$merge") else []
    read_pipeline = pipeline[:len(pipeline) - len(writing)]

    def work():
        if name is None:
            return None
        # an explain that executes counts what each stage returns and its time (Stage.stats)
        with collecting_stats() if verbosity != "queryPlanner" else contextlib.nullcontext():
            return read(name)

    def read(name: str):
        with not_counted():  # explain is no index access ($indexStats)
            res = access.open_read(ctx.server, db, name, read_pipeline, hint=cmd.get("hint"), ctx=ctx,
                                   variables=C.command_variables(cmd, "aggregate"),
                                   collation=C.collation_arg(cmd, "aggregate"), target=target)
        access.count_stages(ctx.server, pipeline, res.target)  # (mongod ticks explained pipelines too)
        n: int | None = None
        error: MongoError | None = None
        t0 = time.monotonic()
        if verbosity != "queryPlanner":
            n = 0
            try:
                for _ in res.docs:
                    n += 1
            except MongoError as exc:  # reported in executionStats, not raised
                error = exc
        millis = int((time.monotonic() - t0) * 1000)
        extended = res.ts_info is not None and ts.uses_extended_range(
            ctx.server, C.ns_of(db, res.target.ts_view["viewOn"]), res.ts_info["timeField"])
        kind = (target or res.target or namespace.resolve(ctx.server.engine, db, name)).kind
        return res, n, millis, extended, error, kind

    result = await ctx.run_blocking(work)
    ns = C.ns_of(db, name) if name else f"{db}.$cmd.aggregate"
    echoed = _echo(cmd) if cmd.get("aggregate") is not None else {"aggregate": name, "pipeline": pipeline}
    if result is None:
        return {"stages": _stage_list(pipeline, db), **_server_sections(ctx.server), "command": echoed}
    res, n, millis, extended, error, kind = result
    flt, sort = access.leading_match_and_sort(pipeline)
    if res.ts_info is not None:
        buckets_ns = C.ns_of(db, res.target.ts_view["viewOn"])  # the read's own resolution
        options = ts_ddl.stored_options(res.target.buckets_info)
        fixed = options is not None and options.granularity is None and \
            options.bucket_rounding_seconds == options.bucket_max_span_seconds
        shown = _executed(res.stages, db) + _stage_list(writing, db) if n is not None and res.stages \
            else _stage_list(res.pipeline + writing, db)
        stages = ts.explain_stages(buckets_ns, res.ts_info, shown, n, millis,
                                   verbosity,
                                   fixed_buckets=fixed, uses_extended_range=extended)
        return {"explainVersion": "1", "stages": stages, **_server_sections(ctx.server), "command": echoed}
    geo_near = bool(pipeline) and isinstance(pipeline[0], dict) and "$geoNear" in pipeline[0]
    if kind in (namespace.REGULAR, namespace.CAPPED, namespace.BUCKETS, namespace.MISSING) and not geo_near:
        shape, _ = query_layer_shape(pipeline)
        if shape is not None:  # the query layer answers alone: explained like a find (optimizedPipeline)
            plan = res.plan if kind != namespace.MISSING else None
            return _find_shaped(ctx, ns, plan, shape, (n, millis, res.stats, error), echoed, verbosity,
                                optimized_pipeline=True)
    stages = list(res.pipeline) + writing
    absorbed = res.plan is not None and res.plan.kind != "GEO_NEAR" and bool(stages) and \
        isinstance(stages[0], dict) and "$match" in stages[0]
    parsed = list(res.stages)
    cursor_n = n
    if absorbed:  # the plan's filter: mongod's $cursor absorbs the leading $match (no stage of its own)
        flt = stages.pop(0)["$match"]
        if parsed and parsed[0].name == "$match":  # what the query layer returns is what it passed on
            cursor_n = parsed.pop(0).stats.returned if n is not None else None
    elif parsed and n is not None and res.plan is not None and res.plan.kind in ("COLLSCAN", "IXSCAN") \
            and "docs" in res.stats:
        cursor_n = res.stats["docs"]  # no filter: the query layer returns every document it examines
    planner_doc: dict[str, Any] = {"namespace": ns, "indexFilterSet": False, "parsedQuery": flt or {},
                   "winningPlan": res.plan.explain(sort=sort, filter=flt, memory_limit=_sort_memory(ctx))
                   if res.plan else dict(_EOF),
                   "rejectedPlans": []}
    cursor_stage = {"$cursor": {"queryPlanner": planner_doc}}
    shown = _stage_list(stages, db) if stages else []
    if n is not None:
        execution = _exec_stats(cast(int, cursor_n), millis, res.stats)
        if error is not None:
            execution.update(executionSuccess=False, errorMessage=error.message, errorCode=error.code)
        cursor_stage["$cursor"]["executionStats"] = _with_all_plans(execution, verbosity)
        if parsed:
            shown = _executed(parsed, db) + (_stage_list(writing, db) if writing else [])
    return {"explainVersion": "1", "stages": [cursor_stage, *shown],
            **_server_sections(ctx.server), "command": echoed}


async def explain_find(ctx: CommandContext, cmd: dict, verbosity: str) -> dict:
    # returnKey and showRecordId shape what the find returns, as the find command runs them (crud.find):
    # returnKey's documents are the index keys (mongod's RETURN_KEY stage, any projection ignored);
    # showRecordId rules out the IDHACK lookup
    check_command(cmd, "find")  # (before returnKey / showRecordId are read, and dropped)
    return_key, show_record_id = bool(cmd.get("returnKey")), bool(cmd.get("showRecordId"))
    dropped = ("returnKey", "showRecordId", "projection") if return_key else ("returnKey", "showRecordId")
    spec = access.FindSpec({k: v for k, v in cmd.items() if k not in dropped}, checked=True)
    if show_record_id:
        spec.id_lookup = False

    def work():
        with not_counted():  # explain is no index access ($indexStats)
            res = access.run_find(ctx.server, spec, ctx.db, ctx, target=target)
        t0 = time.monotonic()
        n: int | None = None
        error: MongoError | None = None
        if verbosity != "queryPlanner":
            n = 0
            try:
                for _ in res.docs:
                    n += 1
            except MongoError as exc:  # the query fails (a sort past its memory limit): reported, not raised
                error = exc
        return res, n, int((time.monotonic() - t0) * 1000), error

    target = await ctx.run_blocking(namespace.resolve, ctx.server.engine, ctx.db, spec.name)
    if target.view is not None:  # mongod explains the aggregation a find on a view becomes
        if return_key or show_record_id:
            raise access.view_option_error(return_key, show_record_id, False)
        return await explain_aggregate(ctx, ctx.db, spec.name, spec.as_pipeline(), cmd, verbosity, target)
    res, n, millis, error = await ctx.run_blocking(work)
    shape = FindShape(spec.filter, spec.sort, spec.skip or None, spec.limit or None, spec.projection)
    return _find_shaped(ctx, res.namespace, res.plan, shape, (n, millis, res.stats, error), _echo(cmd),
                        verbosity, return_key=return_key)


def _find_shaped(ctx: CommandContext, ns: str, plan: Any, shape: FindShape, counted: tuple, echoed: dict,
                 verbosity: str, *, optimized_pipeline: bool = False, return_key: bool = False) -> dict:
    """A find's explain document: the plan (``None``: a missing collection's EOF) with the shape's SKIP,
    PROJECTION and LIMIT above it; ``counted``: (nReturned or None for queryPlanner, millis, the read's
    counters, the error that stopped it). ``optimized_pipeline``: an aggregate the query layer answered
    alone (mongod marks its queryPlanner ``optimizedPipeline: true``). ``return_key``: a find's returnKey
    (mongod's RETURN_KEY stage on top, where a projection would be)."""
    n, millis, stats, error = counted
    # a blocking sort keeps the top skip + limit documents (its limitAmount) and no LIMIT stage follows;
    # mongod's IDHACK plan has no LIMIT either
    blocking_sort = plan is not None and bool(shape.sort) and not plan.provides_sort
    top_k = (shape.skip or 0) + shape.limit if blocking_sort and shape.limit else None
    win: dict[str, Any] = plan.explain(sort=shape.sort, filter=shape.filter, sort_limit=top_k,
                                       memory_limit=_sort_memory(ctx)) \
        if plan is not None else dict(_EOF)
    if win["stage"] != "EOF":  # (a missing collection: mongod's EOF plan, which nothing wraps)
        # mongod's planner analysis (analyzeDataAccess): SKIP over the sort, the projection (or
        # RETURN_KEY) over that, LIMIT on top
        if shape.skip:
            win = {"stage": "SKIP", "skipAmount": shape.skip, "inputStage": win}
        if return_key:
            win = {"stage": "RETURN_KEY", "inputStage": win}
        elif shape.projection:
            projection = {"stage": projection_stage(shape.projection), "transformBy": shape.projection}
            sort_node = win["inputStage"] if shape.skip else win
            if blocking_sort and top_k is None and keeps_sort_fields(shape.projection, shape.sort or {}):
                # tryPushdownProjectBeneathSort: a projection of flags alone that keeps every sort field
                # runs beneath a full (not top-k) sort, which then sorts less data
                sort_node["inputStage"] = {**projection, "inputStage": sort_node["inputStage"]}
            else:
                win = {**projection, "inputStage": win}
        if shape.limit is not None and top_k is None and not plan.id_lookup:
            win = {"stage": "LIMIT", "limitAmount": shape.limit, "inputStage": win}
    planner_doc: dict[str, Any] = {"namespace": ns, "indexFilterSet": False, "parsedQuery": shape.filter}
    if optimized_pipeline:
        planner_doc["optimizedPipeline"] = True
    planner_doc.update(maxIndexedOrSolutionsReached=False, maxIndexedAndSolutionsReached=False,
                       maxScansToExplodeReached=False, winningPlan=win, rejectedPlans=[])
    reply: dict[str, Any] = {"explainVersion": "1", "queryPlanner": planner_doc, "command": echoed,
                             **_server_sections(ctx.server)}
    if n is not None:
        execution = _exec_stats(n, millis, stats)
        if error is not None:
            execution.update(executionSuccess=False, errorMessage=error.message, errorCode=error.code)
        # Compass draws its plan tree from executionStages: the winning plan with the counters on top
        execution["executionStages"] = {
            **win, "nReturned": n, "executionTimeMillisEstimate": millis,
            "docsExamined": stats.get("docs", 0), "keysExamined": stats.get("keys", 0)}
        reply["executionStats"] = _with_all_plans(execution, verbosity)
    return reply


def _sort_memory(ctx: CommandContext) -> int:
    """What a blocking sort may hold (explain's memLimit: the server parameter's value)."""
    return ctx.server.params["internalQueryMaxBlockingSortMemoryUsageBytes"]


def _with_all_plans(execution: dict, verbosity: str) -> dict:
    """``allPlansExecution`` adds each candidate plan's trial: one plan is chosen here, so none."""
    if verbosity == "allPlansExecution":
        execution["allPlansExecution"] = []
    return execution


# --------------------------------------------------------------------------------------------------
# count, distinct and the writes
# --------------------------------------------------------------------------------------------------


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
    if type(key) is not str or not key or key.startswith("$"):
        raise MongoError(ErrorCode.BadValue, "distinct requires a 'key' field path")
    return [*stages, {"$unwind": {"path": f"${key}", "preserveNullAndEmptyArrays": True}},
            {"$group": {"_id": None, "distinct": {"$addToSet": f"${key}"}}}]


def _database_exists(server: ServerState, db: str) -> bool:
    with server.engine.read() as r:
        return bool(r.list_collections(db))


def _count_bound(value: Any) -> int:
    """count's skip / limit as a whole number (the count command itself validates them)."""
    try:
        return int(value or 0)
    except (TypeError, ValueError, OverflowError):
        return 0


class _Statement:
    """What an explained command reads and (would) write: its filter, the plan's stage name, and the
    pieces the counters need."""

    def __init__(self, command: str, cmd: dict):
        self.command = command = "findAndModify" if command == "findandmodify" else command
        self.sort: Any = None
        self.update: Any = None
        self.upsert = False
        self.single = False  # at most one document (limit 1, multi false, findAndModify)
        self.new = False
        self.fields: Any = None
        self.hint: Any = None
        self.collation: Any = None
        self.array_filters: Any = None
        self.skip = self.limit = 0
        self.transform: dict | None = None  # the projection a distinct's plan reads through
        self.parsed_update: Any = None  # (parse)
        # the command's ``let`` (and an update statement's ``c`` constants, which win over it): the
        # variables the explained read and update see, as the command itself would
        self.let: dict = dict(cmd.get("let") or {}) if command not in ("count", "distinct") else {}
        if command in ("count", "distinct"):
            self.filter = cmd.get("query") or {}
            self.stage = command.upper()
            self.hint, self.collation = cmd.get("hint"), cmd.get("collation")
            if command == "distinct" and type(cmd.get("key")) is str:
                # mongod runs a distinct as a find of the key's projection (getDistinctProjection); its
                # plan shows that PROJECTION stage on top (Tidemark has no DISTINCT_SCAN)
                self.transform = distinct_projection(cmd["key"])
                self.stage = projection_stage(self.transform)
            if command == "count":
                self.skip, self.limit = _count_bound(cmd.get("skip")), abs(_count_bound(cmd.get("limit")))
        elif command == "update":
            st = (cmd.get("updates") or [{}])[0]
            self.filter, self.stage = st.get("q") or {}, "UPDATE"
            self.update, self.upsert, self.single = st.get("u"), bool(st.get("upsert")), not st.get("multi")
            self.hint, self.collation, self.array_filters = st.get("hint"), st.get("collation"), st.get("arrayFilters")
            self.let.update({k: {"$literal": v} for k, v in (st.get("c") or {}).items()})
        elif command == "delete":
            st = (cmd.get("deletes") or [{}])[0]
            self.filter, self.stage = st.get("q") or {}, "DELETE"
            self.single, self.hint, self.collation = st.get("limit") == 1, st.get("hint"), st.get("collation")
        else:  # findAndModify
            self.filter = cmd.get("query") or {}
            self.stage = "DELETE" if cmd.get("remove") else "UPDATE"
            self.update, self.upsert, self.single = cmd.get("update"), bool(cmd.get("upsert")), True
            self.sort, self.new, self.fields = cmd.get("sort"), bool(cmd.get("new")), cmd.get("fields")
            self.hint, self.collation, self.array_filters = cmd.get("hint"), cmd.get("collation"), cmd.get("arrayFilters")

    def find_spec(self, name: str, db: str) -> access.FindSpec:
        cmd: dict[str, Any] = {"find": name, "filter": self.filter, "$db": db}
        for key, value in (("sort", self.sort), ("hint", self.hint), ("collation", self.collation)):
            if value is not None:
                cmd[key] = value
        if self.single:
            cmd["limit"] = 1
        if self.let:
            cmd["let"] = self.let
        return access.FindSpec(cmd)

    def parse(self, name: str, db: str) -> access.FindSpec:
        """The statement parsed as mongod parses it before planning (its query, and its update, with
        the command's variables): a parse error, such as an undefined variable, fails every verbosity."""
        spec = self.find_spec(name, db)
        if self.update is not None and self.stage == "UPDATE":
            self.parsed_update = parse_update(self.update, array_filters=self.array_filters,
                                              variables=evaluate_let(self.let))
        return spec

    def counters(self, matched: list[dict]) -> tuple[dict[str, Any], int]:
        """The write stage's counters over the documents it would touch, and what it would return."""
        if self.command == "count":
            counted = max(0, len(matched) - self.skip)
            return {"nCounted": min(counted, self.limit) if self.limit else counted, "nSkipped": min(self.skip, len(matched))}, 0
        if self.command == "distinct":
            return {}, len(matched)
        if self.stage == "DELETE":
            returned = len(matched) if self.command == "findAndModify" else 0
            return {"nWouldDelete": len(matched)}, returned
        parsed = self.parsed_update
        modified = sum(1 for doc in matched if apply_update(doc, parsed, query=self.filter)[1])
        upserts = int(self.upsert and not matched)
        if self.command == "findAndModify":
            returned = 1 if matched or (upserts and self.new) else 0
        else:
            returned = 0
        return {"nMatched": len(matched), "nWouldModify": modified, "nWouldUpsert": upserts}, returned

    def node(self, fields: dict, input_stage: dict) -> dict:
        """The statement's own stage over ``input_stage`` (with ``fields``: its counters)."""
        transform = {"transformBy": self.transform} if self.transform is not None else {}
        return {"stage": self.stage, **transform, **fields, "inputStage": input_stage}

    def wrap(self, stage: dict) -> dict:
        """findAndModify's ``fields`` is a projection above the write stage (passing on what it returns)."""
        if self.command == "findAndModify" and self.fields:
            returned = {"nReturned": stage["nReturned"]} if "nReturned" in stage else {}
            return {"stage": projection_stage(self.fields), "transformBy": self.fields, **returned,
                    "inputStage": stage}
        return stage


def _counted(run: Callable[[], Iterable[dict]]) -> tuple[list[dict], MongoError | None]:
    """The documents ``run`` yields, or the error that stopped it (reported, not raised)."""
    try:
        return list(run()), None
    except MongoError as exc:
        return [], exc


def _fast_count_explain(ctx: CommandContext, name: str, info: Any, statement: _Statement,
                        verbosity: str) -> tuple[dict, dict | None]:
    """(winningPlan, executionStats) of a count without a query or hint: mongod's
    RECORD_STORE_FAST_COUNT, the collection's record count (the count's own, ``crud.record_store_count``);
    nothing is examined."""
    win = {"stage": "RECORD_STORE_FAST_COUNT"}
    if verbosity == "queryPlanner":
        return win, None
    t0 = time.monotonic()
    with ctx.server.engine.read() as r:
        counted, skipped = record_store_count(ctx.server, r, name, info, statement.skip, statement.limit)
    millis = int((time.monotonic() - t0) * 1000)
    stage = {**win, "nReturned": 0, "executionTimeMillisEstimate": millis, "nCounted": counted, "nSkipped": skipped}
    return win, {**_exec_stats(0, millis, {}), "executionStages": stage}


def _count_scan_explain(ctx: CommandContext, info: Any, statement: _Statement, scan: CountScan,
                        verbosity: str) -> tuple[dict, dict | None]:
    """(winningPlan, executionStats) of a count the index alone answers: COUNT over COUNT_SCAN, which
    examines index keys only (the count's own, ``collections.run_count_scan``)."""
    win = {"stage": "COUNT", "inputStage": scan.explain()}
    if verbosity == "queryPlanner":
        return win, None
    t0 = time.monotonic()
    with not_counted():  # explain is no index access ($indexStats)
        counted, keys, met = access.run_count_scan(ctx.server.engine, info, scan, statement.skip, statement.limit)
    millis = int((time.monotonic() - t0) * 1000)
    stage = {"stage": "COUNT", "nReturned": 0, "executionTimeMillisEstimate": millis, "nCounted": counted,
             "nSkipped": min(statement.skip, met),
             "inputStage": {**scan.explain(), "nReturned": met, "keysExamined": keys}}
    return win, {**_exec_stats(0, millis, {"keys": keys, "docs": 0}), "executionStages": stage}


def _check_explained(command: str, cmd: dict) -> None:
    """The explained command is parsed as the command itself parses it (mongod parses it with the same
    IDL before explaining): the same refusal, with its code, for a malformed one."""
    if command == "count":
        parse_count(cmd)
    elif command == "distinct":
        parse_distinct(cmd)
    elif command == "update":
        check_command(cmd, command)
        write_statements.update_statements(cmd)
    elif command == "delete":
        check_command(cmd, command)
        write_statements.delete_statements(cmd)
    else:  # findAndModify
        check_command(cmd, "findAndModify")
        write_statements.check_find_and_modify(cmd, command)


async def explain_other(ctx: CommandContext, command: str, cmd: dict, verbosity: str) -> dict:
    name = C.collection_arg(cmd, command)
    _check_explained(command, cmd)
    statement = _Statement(command, cmd)
    flt = statement.filter
    # (a write's statement is parsed now, as mongod's ParsedUpdate / ParsedDelete: before any plan)
    parsed = statement.parse(name, ctx.db) if statement.stage in ("UPDATE", "DELETE") else None
    if command in ("update", "delete", "findAndModify", "findandmodify"):
        target = await ctx.run_blocking(namespace.resolve, ctx.server.engine, ctx.db, name)
        if target.is_timeseries:  # the time-series write family's own plans (TS_MODIFY, UPDATE on buckets)
            modified = await ts.modify.explain_write(ctx, command, cmd, verbosity, target)
            return {"explainVersion": "1", **modified, "command": _echo(cmd), **_server_sections(ctx.server)}
    if command in ("count", "distinct"):
        view_pipeline = _view_count_or_distinct(command, flt, cmd)
        if await ctx.run_blocking(_is_view, ctx.server, ctx.db, name):
            # mongod explains the aggregation a count/distinct on a view becomes
            return await explain_aggregate(ctx, ctx.db, name, view_pipeline, cmd, verbosity)
    if command in ("findAndModify", "findandmodify") and not await ctx.run_blocking(
            _database_exists, ctx.server, ctx.db):
        raise MongoError(ErrorCode.NamespaceNotFound, f"database {ctx.db} does not exist")

    def work() -> tuple[dict, dict | None]:
        with ctx.server.engine.read() as r:
            info = r.get_collection(C.ns_of(ctx.db, name))
        if info is None:
            if statement.command == "count":  # a count of nothing: COUNT over EOF, nCounted 0
                win = {"stage": "COUNT", "inputStage": dict(_EOF)}
                counted = {**win, "nReturned": 0, "nCounted": 0, "nSkipped": 0}
            else:
                win = statement.wrap(dict(_EOF))
                counted = {**win, "nReturned": 0}
            return win, (None if verbosity == "queryPlanner" else
                         {**_exec_stats(0, 0, {}), "executionStages": counted})
        p = planner.choose_plan(list(info.indexes), flt, None, statement.hint, multikey_default=info.clustered,
                               allow_or=True, cluster=cluster_info(info), id_lookup=True,
                               table_scan=access.table_scan_allowed(ctx.server, ctx.db, name, flt),
                               collation=C.effective_collation(statement.collation, C.default_collation_of(info)))
        if statement.command == "count" and not flt and statement.hint in (None, {}, ""):
            return _fast_count_explain(ctx, name, info, statement, verbosity)
        if statement.command == "count":
            scan = count_scan_of(p, flt, info)
            if scan is not None:  # the index alone answers the count: mongod's COUNT_SCAN
                return _count_scan_explain(ctx, info, statement, scan, verbosity)
        plan = p.explain(filter=flt)
        win = statement.wrap(statement.node({}, plan))
        if verbosity == "queryPlanner":
            return win, None
        t0 = time.monotonic()
        with not_counted():  # explain is no index access ($indexStats)
            spec = parsed if parsed is not None else statement.find_spec(name, ctx.db)
            # the read's own counters, the find's: its ``stats`` fill as its documents are drawn, so
            # they are read after ``_counted`` has drawn them (a copy taken before would be empty)
            read_stats: list[dict] = []

            def read() -> Iterable[dict]:
                res = access.run_find(ctx.server, spec, ctx.db, ctx)
                read_stats.append(res.stats)
                return res.docs

            matched, error = _counted(read)
            stats: dict = read_stats[0] if read_stats else {}
            if error is None:
                try:
                    counters, returned = statement.counters(matched)
                except MongoError as exc:  # the update itself fails on a matched document
                    error = exc
        millis = int((time.monotonic() - t0) * 1000)
        if error is not None:
            return win, {"executionSuccess": False, "errorMessage": error.message, "errorCode": error.code,
                         "nReturned": 0, "executionTimeMillis": millis, "totalKeysExamined": stats.get("keys", 0),
                         "totalDocsExamined": stats.get("docs", 0), "executionStages": win}
        stage = statement.node({"nReturned": returned, "executionTimeMillisEstimate": millis, **counters},
                               {**plan, "nReturned": len(matched), "docsExamined": stats.get("docs", 0),
                                "keysExamined": stats.get("keys", 0)})
        return win, {**_exec_stats(returned, millis, stats), "executionStages": statement.wrap(stage)}

    win, execution = await ctx.run_blocking(work)
    reply: dict[str, Any] = {
        "explainVersion": "1",
        "queryPlanner": {"namespace": C.ns_of(ctx.db, name), "indexFilterSet": False, "parsedQuery": flt,
                         "winningPlan": win, "rejectedPlans": []},
        "command": _echo(cmd), **_server_sections(ctx.server)}
    if execution is not None:
        reply["executionStats"] = _with_all_plans(execution, verbosity)
    return reply


COMMANDS = [
    CommandSpec("explain", explain, help="explain find/aggregate/count/distinct/update/delete/findAndModify"),
]
