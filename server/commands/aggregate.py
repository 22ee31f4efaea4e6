"""aggregate (collection and database level) and explain, plus the generic read core every read
command shares: resolve views, choose the document source (index plan, collection scan, or the
time-series ``read_source``), then run the remaining pipeline with ``run_pipeline``.

``open_read`` is synchronous (it runs in the server's thread pool via ``ctx.run_blocking``) and
returns a lazy iterator; the iterator opens a fresh LMDB read transaction per chunk, so a cursor
suspended between batches holds nothing.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from bson.int64 import Int64
from bson.objectid import ObjectId

from protocol.errors import ErrorCode, MongoError
from server.commands import _collection as C
from server.context import CommandSpec
from server.query import plan as planner


@dataclass
class ReadResult:
    """A lazy document stream plus what explain needs to describe how it is produced."""

    docs: Iterator[dict]
    plan: planner.Plan | None = None
    pipeline: list = field(default_factory=list)
    stats: dict = field(default_factory=dict)
    ts_info: dict | None = None
    namespace: str = ""
    parsed_filter: dict | None = None


class TimeBudget:
    """``maxTimeMS`` for a cursor: only time spent producing documents counts (not the time a
    cursor waits between getMores), as in mongod. ``outer`` wraps the final stream and keeps the
    clock; ``inner`` wraps the raw source so a scan that matches nothing still notices expiry."""

    CHECK_EVERY = 64

    def __init__(self, max_time_ms: int | None):
        self.budget = max_time_ms / 1000.0 if max_time_ms else None
        self.spent = 0.0
        self.since: float | None = None

    def check(self) -> None:
        if self.budget is None:
            return
        spent = self.spent + (time.monotonic() - self.since if self.since is not None else 0.0)
        if spent > self.budget:
            raise MongoError(ErrorCode.MaxTimeMSExpired, "operation exceeded time limit")

    def inner(self, it: Iterator[dict]) -> Iterator[dict]:
        if self.budget is None:
            yield from it
            return
        for i, doc in enumerate(it):
            if i % self.CHECK_EVERY == 0:
                self.check()
            yield doc
        self.check()

    def outer(self, it: Iterator[dict]) -> Iterator[dict]:
        if self.budget is None:
            yield from it
            return
        while True:
            self.since = time.monotonic()
            try:
                doc = next(it)
            except StopIteration:
                return
            finally:
                self.spent += time.monotonic() - self.since
                self.since = None
            self.check()
            yield doc


def deadline_iter(it: Iterator[dict], max_time_ms: int | None) -> Iterator[dict]:
    """The simple form: one budget around a whole stream (checked per document produced)."""
    budget = TimeBudget(max_time_ms)
    return budget.outer(it)


def _leading_match_and_sort(pipeline: list[dict]) -> tuple[dict | None, dict | None]:
    """The filter of a leading $match and a $sort right after it (or first) — what an index can serve."""
    flt = sort = None
    i = 0
    if pipeline and isinstance(pipeline[0], dict) and "$match" in pipeline[0]:
        flt = pipeline[0]["$match"]
        i = 1
    if len(pipeline) > i and isinstance(pipeline[i], dict) and "$sort" in pipeline[i]:
        sort = pipeline[i]["$sort"]
    return flt, sort


def run_pipeline(pipeline, source, pctx):
    from server.query.pipeline import run_pipeline as run

    return run(pipeline, source, pctx)


def pipeline_context(server, db: str, coll: str, *, variables: dict | None = None,
                     allow_disk_use: bool = False, extra_stages: dict | None = None):
    """A PipelineContext whose callbacks reach back into the server (for $lookup, $out, ...)."""
    from server.query.pipeline import PipelineContext

    def resolve_collection(target_db: str, target_coll: str) -> Iterator[dict]:
        return open_read(server, target_db, target_coll, []).docs

    kwargs: dict[str, Any] = dict(
        variables=dict(variables or {}),
        allow_disk_use=allow_disk_use,
        resolve_collection=resolve_collection,
        db=db,
        coll=coll,
    )
    kwargs["write_out"] = lambda spec, docs: _write_out(server, db, spec, docs)
    kwargs["merge_into"] = lambda spec, docs: _merge_into(server, db, spec, docs)
    kwargs["coll_stats"] = lambda spec: _coll_stats_docs(server, db, coll, spec)
    kwargs["index_stats"] = lambda: _index_stats_docs(server, db, coll)
    if extra_stages:
        kwargs["extra_stages"] = extra_stages
    try:
        return PipelineContext(**kwargs)
    except TypeError:  # an older PipelineContext without some callbacks
        for k in ("write_out", "merge_into", "coll_stats", "index_stats", "extra_stages"):
            kwargs.pop(k, None)
        return PipelineContext(**kwargs)


def open_read(server, db: str, name: str, pipeline: list[dict], *, hint: Any = None,
              variables: dict | None = None, allow_disk_use: bool = False, ctx=None,
              budget: TimeBudget | None = None) -> ReadResult:
    """Documents of ``db.name`` (collection, view or time-series) after ``pipeline``."""
    engine = server.engine
    with engine.read() as r:
        resolved = C.resolve(r, db, name)
        info = r.get_collection(C.ns_of(db, resolved.name))
    ns = C.ns_of(db, name)
    if resolved.ts_view is not None:
        ts = C.timeseries_module()
        full = resolved.pipeline + list(pipeline)
        docs, remaining, ts_info = ts.read_source(ctx if ctx is not None else _ServerCtx(server, db), db,
                                                 resolved.ts_view, full)
        if not remaining:
            return ReadResult(docs, None, remaining, {}, ts_info, ns)
        pctx = pipeline_context(server, db, name, variables=variables, allow_disk_use=allow_disk_use,
                                extra_stages=ts.EXTRA_STAGES)
        out = run_pipeline(remaining, docs, pctx)
        return ReadResult(out, None, remaining, {}, ts_info, ns)
    full = resolved.pipeline + list(pipeline)
    stats: dict = {}
    if info is not None and info.clustered and name.startswith(C.BUCKETS_PREFIX):
        # bucket documents: the time-series layer merges persisted buckets with open ones
        source = C.timeseries_module().bucket_source(ctx if ctx is not None else _ServerCtx(server, db), db, name)
        if not full:
            return ReadResult(source, planner.Plan("COLLSCAN"), full, stats, None, ns)
        pctx = pipeline_context(server, db, name, variables=variables, allow_disk_use=allow_disk_use)
        return ReadResult(run_pipeline(full, source, pctx), planner.Plan("COLLSCAN"), full, stats, None, ns)
    if info is None:
        source: Iterator[dict] = iter(())
        plan = planner.Plan("COLLSCAN")
    else:
        flt, sort = _leading_match_and_sort(full)
        plan = planner.choose_plan(list(info.indexes), flt, sort, hint)
        source = C.plan_docs(engine, info, plan, stats=stats)
        if budget is not None:
            source = budget.inner(source)
        if plan.provides_sort and sort is not None:
            # the index yields the $sort order already: drop the stage (a stable re-sort is wasted work)
            idx = 1 if flt is not None else 0
            full = full[:idx] + full[idx + 1:]
    if not full:
        return ReadResult(source, plan, full, stats, None, ns)
    pctx = pipeline_context(server, db, name, variables=variables, allow_disk_use=allow_disk_use)
    out = run_pipeline(full, source, pctx)
    return ReadResult(out, plan, full, stats, None, ns)


class _ServerCtx:
    """The slice of CommandContext the time-series read source needs when called from a callback."""

    def __init__(self, server, db):
        self.server = server
        self.db = db

    async def run_blocking(self, fn, *args):  # pragma: no cover - not used from threads
        return fn(*args)


def _write_out(server, db: str, spec: Any, docs) -> None:
    """$out: replace the target collection with ``docs`` (one write transaction)."""
    if isinstance(spec, str):
        target_db, target = db, spec
    elif isinstance(spec, dict):
        target_db, target = spec.get("db", db), spec.get("coll")
    else:
        raise MongoError(ErrorCode.BadValue, "$out requires a collection name")
    prepared = [C.prepare_insert(d) for d in docs]
    raws = [C.encode_doc(d) for d in prepared]
    ns = C.ns_of(target_db, target)

    def fn(w):
        from server.commands.ddl import ensure_collection

        old = w.get_collection(ns)
        indexes = [s for s in (old.indexes if old else ()) if s["name"] != "_id_"]
        options = dict(old.options) if old else {}
        if old is not None:
            w.drop_collection(ns)
        info = w.create_collection(ns, options) if old is not None else ensure_collection(w, ns)
        for spec_ in indexes:
            w.create_index(info, spec_, [])
            info = w.get_collection(ns)
        for doc, raw in zip(prepared, raws, strict=False):
            w.insert(info, raw, C.index_keys(info, doc))

    server.engine.write(fn).result()


def _merge_into(server, db: str, spec: Any, docs) -> None:
    """$merge: upsert each result into the target by ``on`` (default _id), in one write transaction."""
    if isinstance(spec, str):
        spec = {"into": spec}
    into = spec["into"]
    target_db, target = (db, into) if isinstance(into, str) else (into.get("db", db), into.get("coll"))
    on = spec.get("on", "_id")
    on_fields = [on] if isinstance(on, str) else list(on)
    when_matched = spec.get("whenMatched", "merge")
    when_not_matched = spec.get("whenNotMatched", "insert")
    if not isinstance(when_matched, str):
        raise MongoError(ErrorCode.CommandNotSupported, "$merge with a pipeline for whenMatched is not supported")
    if when_matched not in ("replace", "keepExisting", "merge", "fail"):
        raise MongoError(ErrorCode.BadValue, f"Enumeration value '{when_matched}' for field 'whenMatched' is not a valid value.")
    if when_not_matched not in ("insert", "discard", "fail"):
        raise MongoError(ErrorCode.BadValue,
                         f"Enumeration value '{when_not_matched}' for field 'whenNotMatched' is not a valid value.")
    results = [d if "_id" in d else {"_id": ObjectId(), **d} for d in docs]
    ns = C.ns_of(target_db, target)

    def fn(w):
        from server.commands.ddl import ensure_collection

        info = ensure_collection(w, ns)
        for doc in results:
            key = {f: doc.get(f) for f in on_fields}
            plan = planner.choose_plan(list(info.indexes), key)
            existing = next((pair for pair in C.docs_in_txn(w, info, plan)
                             if all(pair[1].get(f) == v for f, v in key.items())), None)
            if existing is None:
                if when_not_matched == "fail":
                    raise MongoError(13113, "$merge could not find a matching document in the target collection "
                                            "for at least one document in the source collection")
                if when_not_matched == "insert":
                    new = C.prepare_insert(doc)
                    w.insert(info, C.encode_doc(new), C.index_keys(info, new))
                continue
            rid, old = existing
            if when_matched == "fail":
                raise MongoError(ErrorCode.DuplicateKey, "$merge failed due to a matching document in the target")
            if when_matched == "keepExisting":
                continue
            new = {**old, **doc} if when_matched == "merge" else {"_id": old["_id"], **doc}
            new["_id"] = old["_id"]
            w.update(info, rid, C.encode_doc(new), C.index_keys(info, old), C.index_keys(info, new))

    server.engine.write(fn).result()


def _coll_stats_docs(server, db: str, coll: str, spec: dict) -> list[dict]:
    with server.engine.read() as r:
        view = C.get_view(r, db, coll)
    if C.is_timeseries_view(view):
        ts = C.timeseries_module()
        stage_doc = getattr(ts, "coll_stats_stage_document", None)
        if stage_doc is None:
            from server.commands.timeseries_admin import coll_stats_stage_document as stage_doc
        return [stage_doc(server, db, coll, spec or {})]
    from server.commands.stats import coll_stats_document

    return [coll_stats_document(server, db, coll, spec or {})]


def _index_stats_docs(server, db: str, coll: str) -> list[dict]:
    with server.engine.read() as r:
        info = r.get_collection(C.ns_of(db, coll))
        if info is None:
            return []
        return [{"name": s["name"], "key": s["key"], "host": "localhost",
                 "accesses": {"ops": Int64(0), "since": None}, "spec": dict(s)} for s in info.indexes]


# --------------------------------------------------------------------------------------------------
# aggregate
# --------------------------------------------------------------------------------------------------

AGG_FIELDS = frozenset({"aggregate", "pipeline", "cursor", "explain", "allowDiskUse", "maxTimeMS", "hint",
                        "let", "collation", "comment", "bypassDocumentValidation", "readConcern",
                        "writeConcern", "$db", "lsid", "$clusterTime", "$readPreference", "txnNumber",
                        "autocommit", "startTransaction", "apiVersion", "apiStrict",
                        "apiDeprecationErrors", "fromMongos", "needsMerge", "$client", "$audit"})


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


async def aggregate(ctx, cmd: dict) -> dict:
    target, pipeline = parse_aggregate(cmd)
    if any(isinstance(s, dict) and ("$out" in s or "$merge" in s) for s in pipeline):
        C.check_no_transaction(cmd)
    elif "startTransaction" in cmd or "autocommit" in cmd:
        C.check_no_transaction(cmd)
    db = ctx.db
    let = C.doc_arg(cmd, "let", "aggregate")
    allow_disk = bool(cmd.get("allowDiskUse", False))
    batch_size = C.int_arg(cmd.get("cursor") or {}, "batchSize", "aggregate.cursor")
    if batch_size is not None and batch_size < 0:
        raise MongoError(ErrorCode.BadValue, "batchSize must be non-negative")
    max_time = C.int_arg(cmd, "maxTimeMS", "aggregate")
    if isinstance(target, str):
        C.check_collection_name(db, target)
        name = target
        ns = C.ns_of(db, name)
    else:
        name = None
        ns = f"{db}.$cmd.aggregate"
    if cmd.get("explain"):
        return await explain_aggregate(ctx, db, name, pipeline, cmd, "queryPlanner")

    budget = TimeBudget(max_time)

    def work():
        if name is None:
            return _db_level(ctx.server, db, pipeline, let, allow_disk)
        return open_read(ctx.server, db, name, pipeline, hint=cmd.get("hint"), variables=let,
                         allow_disk_use=allow_disk, ctx=ctx, budget=budget).docs

    docs = budget.outer(await ctx.run_blocking(work))
    from server.cursors import cursor_reply

    return await cursor_reply(ctx, ns, docs, batch_size, False, first=True)


def _db_level(server, db: str, pipeline: list[dict], let, allow_disk) -> Iterator[dict]:
    """``aggregate: 1``: the pipeline must start with a stage that needs no collection."""
    if not pipeline or not isinstance(pipeline[0], dict) or not (
            {"$documents", "$currentOp", "$listLocalSessions", "$changeStream"} & set(pipeline[0])):
        raise MongoError(ErrorCode.InvalidNamespace,
                         "{aggregate: 1} is not valid for '$match'; a collection is required."
                         if not pipeline or "$match" in (pipeline[0] or {}) else
                         f"{{aggregate: 1}} is not valid for '{next(iter(pipeline[0]), '')}'; "
                         "a collection is required.")
    if "$documents" not in pipeline[0]:
        raise MongoError(ErrorCode.CommandNotSupported, f"{next(iter(pipeline[0]))} is not supported by Tidemark")
    pctx = pipeline_context(server, db, "$cmd.aggregate", variables=let, allow_disk_use=allow_disk)
    return run_pipeline(pipeline, iter(()), pctx)


# --------------------------------------------------------------------------------------------------
# explain
# --------------------------------------------------------------------------------------------------

VERBOSITIES = ("queryPlanner", "executionStats", "allPlansExecution")


def _server_info() -> dict:
    import socket

    return {"host": socket.gethostname(), "port": 27017, "version": "7.0.0", "gitVersion": "tidemark"}


def _stage_list(pipeline: list[dict]) -> list[dict]:
    try:
        from server.query.explain import explain_stages
        from server.query.pipeline import parse_pipeline

        return explain_stages(parse_pipeline(pipeline, None))
    except MongoError:
        raise
    except Exception:  # noqa: BLE001 - explain of the raw spec is still informative
        return [dict(s) for s in pipeline]


async def explain_aggregate(ctx, db: str, name: str | None, pipeline: list[dict], cmd: dict,
                            verbosity: str) -> dict:
    def work():
        if name is None:
            return None
        res = open_read(ctx.server, db, name, pipeline, hint=cmd.get("hint"), ctx=ctx)
        n = None
        t0 = time.monotonic()
        if verbosity != "queryPlanner":
            n = sum(1 for _ in res.docs)
        return res, n, int((time.monotonic() - t0) * 1000)

    result = await ctx.run_blocking(work)
    ns = C.ns_of(db, name) if name else f"{db}.$cmd.aggregate"
    if result is None:
        return {"stages": _stage_list(pipeline), "serverInfo": _server_info()}
    res, n, millis = result
    flt, sort = _leading_match_and_sort(pipeline)
    if res.ts_info is not None:
        planner_doc = {"namespace": ns, "winningPlan": {"stage": "TS_UNPACK", "timeseries": res.ts_info},
                       "rejectedPlans": []}
    else:
        planner_doc = {"namespace": ns, "indexFilterSet": False, "parsedQuery": flt or {},
                       "winningPlan": res.plan.explain(has_sort=sort is not None, filter=flt)
                       if res.plan else {"stage": "EOF"},
                       "rejectedPlans": []}
    cursor_stage = {"$cursor": {"queryPlanner": planner_doc}}
    if n is not None:
        cursor_stage["$cursor"]["executionStats"] = _exec_stats(n, millis, res.stats)
    reply = {"explainVersion": "1", "stages": [cursor_stage, *_stage_list(res.pipeline)],
             "serverInfo": _server_info(), "command": {"aggregate": name, "pipeline": pipeline}}
    return reply


def _exec_stats(n: int, millis: int, stats: dict) -> dict:
    return {"executionSuccess": True, "nReturned": n, "executionTimeMillis": millis,
            "totalKeysExamined": stats.get("keys", 0), "totalDocsExamined": stats.get("docs", 0)}


async def explain(ctx, cmd: dict) -> dict:
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
        return await explain_aggregate(ctx, db, target if isinstance(target, str) else None, pipeline,
                                       inner, verbosity)
    from server.commands import crud

    if command == "find":
        return await crud.explain_find(ctx, inner, verbosity)
    if command in ("count", "distinct", "update", "delete", "findAndModify", "findandmodify"):
        return await crud.explain_other(ctx, command, inner, verbosity)
    raise MongoError(ErrorCode.CommandNotSupported if command in ("insert", "mapReduce") else
                     ErrorCode.CommandNotFound, f"Explain failed due to unknown command: {command}")


COMMANDS = [
    CommandSpec("aggregate", aggregate, help="run an aggregation pipeline on a collection, view or database"),
    CommandSpec("explain", explain, help="explain find/aggregate/count/distinct/update/delete/findAndModify"),
]
