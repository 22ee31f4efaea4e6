"""The time-series command family: what the commands do when their target is a time-series collection.

A command reaches it by the kind of the collection it names, resolved where the regular family resolves
its target anyway (one line at each such point):

- ``VIEW_COMMANDS[name](ctx, cmd, namespace)`` — the view ``db.c`` of a time-series collection
  (measurements: insert, update, delete, findAndModify; create, drop; indexes, collMod, collStats);
  ``namespace`` is the ``tidemark.core.namespace.Namespace`` the regular family resolved (nothing is
  resolved again; ``create`` takes none); update and delete also take the statements ``write_statements``
  parsed before the dispatch. Handlers are defined here
  and in timeseries_admin.py (indexes, collMod, stats), timeseries_modify.py (updates and deletes of
  measurements), timeseries_ddl.py (create, drop) and timeseries_insert.py (insert of measurements);
  timeseries_out.py writes a ``$out`` into a time-series collection. Every function of the time-series
  side that takes a command context is in this package; the engine (``tidemark.timeseries``) keeps none;
- ``BUCKETS_COMMANDS[name]`` — the buckets collection ``db.system.buckets.c`` (bucket documents): a
  direct insert (validator, duplicate ``_id`` against every bucket ``find`` shows, MongoDB 7.0 compressed
  buckets decoded to v1: mongorestore of a 7.0 dump),
  and ``close_buckets`` before the regular family writes bucket documents itself: every in-memory bucket
  is written in full and leaves memory first, so direct writes act on exactly what ``find`` shows and
  the catalog never writes over them later (MongoDB notifies its bucket catalog of direct writes).

Reads need no table: ``tidemark.collections`` (below this package) resolves views and takes measurements
from the engine's ``view.read_source`` and bucket documents from ``view.bucket_source`` (in-memory
buckets merged), both called with the server state; ``explain_stages`` renders the read's plan.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from bson.objectid import ObjectId

from tidemark.commands import timeseries_admin as admin
from tidemark.commands import timeseries_ddl as ts_ddl_commands
from tidemark.commands import timeseries_modify as modify
from tidemark.commands.timeseries_insert import insert_measurements
from tidemark.context import CommandContext
from tidemark.core import collection as C
from tidemark.protocol.codec import encode
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.protocol.messages import materialize
from tidemark.query.access_path import sort_stage
from tidemark.query.collation import parse_collation
from tidemark.query.match import compile_filter
from tidemark.query.validation_error import validation_error_info
from tidemark.storage.records import clustered_rid
from tidemark.timeseries import bucket_check, bucket_compression, ddl, explain_shape, ingest, scan, view
from tidemark.timeseries import options as ts_options
from tidemark.timeseries.collection import before_index_build as collection_before_index_build
from tidemark.timeseries.collection import direct_write
from tidemark.timeseries.unpack import EXTRA_STAGES

__all__ = ["BUCKETS_COMMANDS", "EXTRA_STAGES", "VIEW_COMMANDS", "bucket_inconsistency", "bucket_records",
           "bucket_rules", "bucket_source", "before_index_build", "close_buckets", "direct_writer",
           "drop", "explain_stages", "modify", "read_source", "stored_bucket", "unstored_buckets",
           "uses_extended_range"]

list_collections_entry = ddl.list_collections_entry
buckets_list_collections_entry = ddl.buckets_list_collections_entry
read_source = view.read_source
unstored_buckets = scan.unstored_buckets
bucket_records = view.bucket_records
bucket_inconsistency = bucket_check.bucket_inconsistency


def bucket_rules(info: Any) -> tuple[Any, Any] | None:
    """(options, default collation) a buckets collection's buckets are checked against (validate);
    None for a collection without time-series options."""
    options = (info.options or {}).get("timeseries")
    if not isinstance(options, dict):
        return None
    spec = C.default_collation_of(info)
    return ts_options.from_document(options), parse_collation(spec) if spec else None
uses_extended_range = scan.uses_extended_range


# ------------------------------------------------------------------ measurements


async def insert(ctx: CommandContext, cmd: dict, namespace: Any = None) -> dict:
    """``insert`` on the view: ``{n, writeErrors?}`` (n counts measurements). ``namespace``: the view as
    the regular family resolved it (its buckets collection is not looked up again)."""
    buckets_info = namespace.buckets_info if namespace is not None and namespace.is_timeseries else None
    return await insert_measurements(ctx, cmd, buckets_info)


async def create(ctx: CommandContext, cmd: dict) -> dict:
    """``create`` with ``timeseries`` options (or of a ``system.buckets.*`` name, as mongorestore does)."""
    return await ts_ddl_commands.create(ctx, cmd)


async def drop(ctx: CommandContext, db: str, name: str) -> dict:
    """Drop of the view or of ``system.buckets.<c>`` (both go)."""
    return await ts_ddl_commands.drop(ctx, db, name)


# ------------------------------------------------------------------ the buckets namespace


async def before_index_build(ctx: CommandContext, db: str, name: str, specs: list[dict], info: Any) -> None:
    """Before an index build on ``db.<name>`` (a ``system.buckets.*`` collection, ``info`` its catalog
    entry): what the build must see of the in-memory buckets reaches storage, and they stay open
    (tidemark.timeseries.collection.before_index_build)."""
    options = ddl.stored_options(info)
    if options is not None:  # (no time-series options: no bucket of it is ever in memory)
        await collection_before_index_build(ctx.server, f"{db}.{name}", specs, options.time_field)


async def close_buckets(ctx: CommandContext, db: str, name: str) -> None:
    """Before a direct write of ``db.<name>`` (a ``system.buckets.*`` collection): write its in-memory
    buckets in full and let them leave memory."""
    await ctx.server.ts_committer.close_collection(f"{db}.{name}")


def direct_writer(name: str) -> Callable[[Any, Any], Any]:
    """``write(ctx, fn)`` for the regular family's write of bucket documents of ``ctx.db.<name>``: the
    in-memory buckets are written in full first and no bucket is reopened from storage until ``fn``
    committed (tidemark.timeseries.collection.direct_write), so the write acts on what ``find`` shows and is never overwritten."""

    async def write(ctx: CommandContext, fn: Any) -> Any:
        return await direct_write(ctx.server, f"{ctx.db}.{name}", fn)

    return write


def bucket_source(ctx: CommandContext, db: str, coll: str):
    """Bucket documents of ``db.<coll>`` (a ``system.buckets.*`` name), in-memory ones included."""
    return view.bucket_source(ctx.server, db, coll)


async def insert_buckets(ctx: CommandContext, cmd: dict) -> dict:
    """``insert`` into ``system.buckets.<c>``: bucket documents checked against the collection's
    ``$jsonSchema`` validator (121 otherwise); an ``_id`` any bucket ``find`` shows already holds is a
    duplicate key (11000)."""
    db = cmd.get("$db") or ctx.db
    name = cmd["insert"]
    ns = f"{db}.{name}"
    docs = ingest.documents(cmd)
    ordered = cmd.get("ordered", True) is not False
    with ctx.server.engine.read() as r:
        info = r.get_collection(ns)
    if info is None or not name.startswith(C.BUCKETS_PREFIX):
        raise MongoError(ErrorCode.NamespaceNotFound, f"Namespace {ns} not found")
    validator = _validator(info)
    accepted: list[tuple[int, dict]] = []
    errors: list[dict] = []
    for index, doc in enumerate(materialize(docs)):
        if isinstance(doc, dict) and (validator is None or validator(doc)):
            try:
                doc = stored_bucket(doc)
            except MongoError as exc:
                errors.append(exc.to_write_error(index))
                if ordered:
                    break
                continue
        if not isinstance(doc, dict) or (validator is not None and not validator(doc)):
            err_info = (validation_error_info(info.options["validator"], doc) if isinstance(doc, dict)
                        else {"failingDocumentId": None})
            errors.append(MongoError(ErrorCode.DocumentValidationFailure, "Document failed validation",
                                     extra={"errInfo": err_info}).to_write_error(index))
            if ordered:
                break
            continue
        accepted.append((index, doc))
    if accepted:
        await close_buckets(ctx, db, name)  # a duplicate of an in-memory bucket is then in storage

    def fn(w: Any) -> list[dict]:
        target = w.get_collection(ns)
        failures = []
        for index, doc in accepted:
            rid = clustered_rid(doc["_id"])
            if w.get(target, rid) is not None:
                failures.append(MongoError(
                    ErrorCode.DuplicateKey,
                    f"E11000 duplicate key error collection: {ns} dup key: {{ _id: {doc['_id']!r} }}",
                    extra={"keyPattern": {"_id": 1}, "keyValue": {"_id": doc["_id"]}}).to_write_error(index))
                if ordered:
                    break
                continue
            target, keys = C.write_keys(w, target, doc)
            w.insert(target, encode(doc), keys, rid=rid)
        return failures

    failures = await asyncio.wrap_future(ctx.server.engine.write(fn)) if accepted else []
    errors = sorted(errors + failures, key=lambda e: e["index"])
    if ordered and errors:
        first = errors[0]["index"]
        n = sum(1 for index, _ in accepted if index < first)
        errors = errors[:1]
    else:
        n = len(accepted) - len(failures)
    reply: dict[str, Any] = {"n": n}
    if errors:
        reply["writeErrors"] = errors
    return reply


stored_bucket = bucket_compression.stored_bucket  # every write of a bucket document stores this form


def _validator(info: Any) -> Any:
    spec = (info.options or {}).get("validator")
    return compile_filter(spec) if spec else None


# ------------------------------------------------------------------ explain of a read on the view


def explain_stages(buckets_ns: str, info: dict, rest: list[dict], n: int | None, millis: int,
                   verbosity: str, *, fixed_buckets: bool = False, uses_extended_range: bool = False) -> list[dict]:
    """Spec §5.3: a ``$cursor`` over ``system.buckets.<c>`` — the bucket filter the read ran (the one
    derivation's MQL) and its access path — then the stages as 7.0 rearranges them around
    ``$_internalUnpackBucket`` (``explain_shape``). ``info``: the read's explain info (counters filled
    as read); ``rest``: the remaining stages in explain form."""
    info = view.explain_info(info)
    sorted_stats = info.pop("timeSortStats", None)  # (the bounded sort's executionStats, on its stage)
    # the plan shows the bucket filter as 7.0 writes it; Tidemark's own (what ran) stays in ``timeseries``
    bucket_filter = explain_shape.bucket_filter(info.pop("shownBucketFilter", None) or {},
                                                uses_extended_range=uses_extended_range)
    shaped = explain_shape.shape(info, rest, fixed_buckets=fixed_buckets, uses_extended_range=uses_extended_range)
    if info.get("ixscan"):
        ixscan = info["ixscan"]
        plan = {"stage": "FETCH", "filter": bucket_filter, "inputStage": ixscan} if bucket_filter else \
            {"stage": "FETCH", "inputStage": ixscan}
    else:
        # a descending time sort reads the buckets newest first (time_sort)
        direction = "backward" if any(d == -1 for d in (info.get("timeSort") or {}).get("sortKey", {}).values()) \
            else "forward"
        if info["idRange"]["min"] is not None or info["idRange"]["max"] is not None:
            plan = {"stage": "CLUSTERED_IXSCAN", "filter": bucket_filter, "direction": direction,
                    **_clustered_bounds(info["idRange"])}
        else:
            plan = {"stage": "COLLSCAN", "filter": bucket_filter, "direction": direction}
    plan["timeseries"] = info  # Tidemark's own read details (fields unpacked, counters)
    if shaped.bucket_sort is not None:
        plan = sort_stage(shaped.bucket_sort, plan)
    cursor: dict[str, Any] = {"queryPlanner": {"namespace": buckets_ns, "indexFilterSet": False,
                                               "parsedQuery": bucket_filter, "winningPlan": plan,
                                               "rejectedPlans": []}}
    stages = shaped.stages
    if n is not None:
        keys = info.get("keysExamined", 0)
        stats = {"executionSuccess": True, "nReturned": info["bucketsUnpacked"], "executionTimeMillis": millis,
                 "totalKeysExamined": keys, "totalDocsExamined": info["bucketsScanned"],
                 "executionStages": {**plan, "nReturned": info["bucketsUnpacked"],
                                     "executionTimeMillisEstimate": millis,
                                     "docsExamined": info["bucketsScanned"], "keysExamined": keys}}
        if verbosity == "allPlansExecution":
            stats["allPlansExecution"] = []
        cursor["executionStats"] = stats
        stages = [dict(stage) for stage in stages]
        if shaped.unpack_index is not None:
            stages[shaped.unpack_index].update(nReturned=info["measurementsReturned"],
                                               executionTimeMillisEstimate=millis)
        for stage in stages if sorted_stats is not None else ():
            if "$_internalBoundedSort" in stage:  # (7.0: the sorter's stats beside the stage's spec)
                stage.update(sorted_stats)
        if stages and len(stages) - 1 != shaped.unpack_index:
            stages[-1].update(nReturned=n, executionTimeMillisEstimate=millis)
    return [{"$cursor": cursor}, *stages]


def _and(clauses: list[dict]) -> dict:
    return {} if not clauses else clauses[0] if len(clauses) == 1 else {"$and": clauses}


def _clustered_bounds(id_range: dict) -> dict:
    """minRecord/maxRecord of a CLUSTERED_IXSCAN: ObjectIds at the bucket-start bounds (seconds)."""
    out = {}
    for key, seconds in (("minRecord", id_range.get("min")), ("maxRecord", id_range.get("max"))):
        if seconds is not None and 0 <= seconds < 2**32:
            out[key] = ObjectId(seconds.to_bytes(4, "big") + b"\x00" * 8)
    return out


# ------------------------------------------------------------------ the family, by collection kind

Handler = Callable[..., Any]

VIEW_COMMANDS: dict[str, Handler] = {
    "insert": insert,
    "update": modify.update,
    "delete": modify.delete,
    "findAndModify": modify.find_and_modify,
    "create": create,
    "createIndexes": admin.create_indexes,
    "listIndexes": admin.list_indexes,
    "dropIndexes": admin.drop_indexes,
    "collMod": admin.coll_mod,
    "collStats": admin.coll_stats,
}

BUCKETS_COMMANDS: dict[str, Handler] = {
    "insert": insert_buckets,
}
