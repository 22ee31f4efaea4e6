"""Collection access shared by the command families (synchronous; runs in the thread pool or on
the writer thread):

- the **read core**: ``open_read`` resolves views, picks the document source (index plan, collection
  scan, time-series ``read_source``, bucket source) and runs the remaining pipeline with
  ``run_pipeline``; ``FindSpec``/``run_find`` are the parsed find and its lazy stream; ``TimeBudget``
  is maxTimeMS over processing time; the pipeline callbacks write ``$out``/``$merge`` targets and
  answer ``$collStats``/``$indexStats``;
- the **write statements**: matching inside the write transaction (materialized before any write),
  replacing and upserting documents with validation, unique checks and index maintenance.

Streams open a fresh LMDB read transaction per chunk, so a cursor suspended between batches holds
nothing (storage README, "LMDB discipline").
"""

from __future__ import annotations

import datetime
import functools
import itertools
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, cast

from bson.int64 import Int64
from bson.max_key import MaxKey
from bson.min_key import MinKey
from bson.objectid import ObjectId

from tidemark import coll_stats, special_reads, write_stages
from tidemark.arguments import check_command
from tidemark.context import ServerState
from tidemark.core import capped, namespace
from tidemark.core import collection as C
from tidemark.core.clustered import cluster_info
from tidemark.index_usage import not_counted
from tidemark.profiler import ReadFacts
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query import clustered_range, docmeta, expr_optimize, field_deps, interrupt
from tidemark.query import match as match_mod
from tidemark.query import pipeline as pipeline_mod
from tidemark.query import plan as planner
from tidemark.query import plan_special as plan_special_mod
from tidemark.query import project as project_mod
from tidemark.query import sort as sort_mod
from tidemark.query import update as update_mod
from tidemark.query.access_path import Interval, Plan
from tidemark.query.collation import same
from tidemark.query.count_scan import CountScan
from tidemark.query.expr_base import check_compound_keys
from tidemark.query.fetch_filter import fetched_matching, fetched_predicate
from tidemark.query.index_keys import collated_key_value, holds, index_collation, key_fields, may_leave_out
from tidemark.query.index_kinds import key_direction
from tidemark.query.match_ast import Node
from tidemark.query.match_pushdown import push_matches_before
from tidemark.query.parsed_match import MatchStage, parsed
from tidemark.query.values import is_number
from tidemark.storage.errors import DuplicateKey, StorageError
from tidemark.storage.keys import encode_key
from tidemark.timeseries import collection as ts_admin
from tidemark.timeseries import ddl as ts_ddl
from tidemark.timeseries import indexes as ts_indexes
from tidemark.timeseries import view as ts_view
from tidemark.timeseries.bucket_compression import stored_bucket
from tidemark.timeseries.unpack import EXTRA_STAGES as TS_EXTRA_STAGES


def storage_error(info, e: StorageError, doc: dict) -> MongoError:
    """A storage failure of one document as the MongoError a client sees (11000 with keyValue...)."""
    if isinstance(e, DuplicateKey):
        return C.duplicate_key_error(info, e.index_name, doc, e.key)
    return MongoError(e.code, e.message)


@dataclass
class ReadResult:
    """A lazy document stream plus what explain needs to describe how it is produced."""

    docs: Iterator[dict]
    plan: Plan | None = None
    pipeline: list = field(default_factory=list)
    stats: dict = field(default_factory=dict)
    ts_info: dict | None = None
    namespace: str = ""
    parsed_filter: dict | None = None
    target: Any = None  # the tidemark.core.namespace.Namespace read (resolved once; explain reuses it)
    stages: list = field(default_factory=list)  # the parsed stages that run (explain reads their statistics)


class TimeBudget:
    """``maxTimeMS`` for a cursor: only time spent producing documents counts (not the time a
    cursor waits between getMores), as in mongod. ``outer`` wraps the final stream, keeps the clock
    and, while it pulls a document, lends the remaining budget to the running operation's deadline,
    so every interruption check below it (``tidemark.query.interrupt``: sources are wrapped in
    ``interrupt.checked``, so a scan that matches nothing still notices expiry or a killOp; ``$group``,
    regex, expressions tick too) sees it."""

    def __init__(self, max_time_ms: int | None):
        self.budget = max_time_ms / 1000.0 if max_time_ms else None
        self.spent = 0.0
        self.since: float | None = None

    def check(self) -> None:
        interrupt.check()
        if self.budget is None:
            return
        spent = self.spent + (time.monotonic() - self.since if self.since is not None else 0.0)
        if spent > self.budget:
            raise MongoError(ErrorCode.MaxTimeMSExpired, "operation exceeded time limit")

    def outer(self, it: Iterator[dict]) -> Iterator[dict]:
        if self.budget is None:
            yield from it
            return
        while True:
            self.since = since = time.monotonic()
            op = interrupt.current()
            saved = None
            if op is not None:
                saved = op.deadline
                lent = since + self.budget - self.spent
                op.deadline = lent if saved is None else min(saved, lent)
            try:
                doc = next(it)
            except StopIteration:
                return
            finally:
                if op is not None:
                    op.deadline = saved
                self.spent += time.monotonic() - since
                self.since = None
            if self.spent > self.budget:
                raise MongoError(ErrorCode.MaxTimeMSExpired, "operation exceeded time limit")
            yield doc


def deadline_iter(it: Iterator[dict], max_time_ms: int | None) -> Iterator[dict]:
    """The simple form: one budget around a whole stream (checked per document produced)."""
    budget = TimeBudget(max_time_ms)
    return budget.outer(it)


def table_scan_allowed(server: ServerState, db: str, name: str, flt: Any) -> bool:
    """Whether a user's query on ``db.name`` may scan the whole collection (``planner.choose_plan``'s
    ``table_scan``): always, unless the ``notablescan`` parameter is on; then still for a query without
    a filter, on a ``system.*`` collection (a time-series collection's buckets too) or in the admin,
    local and config databases, as mongod 7.0's planner parameters exempt them (``nss.isSystem() ||
    nss.isOnInternalDb()``)."""
    if not flt or not server.params["notablescan"]:
        return True
    return db in ("admin", "local", "config") or name.startswith("system.")


def leading_match_and_sort(pipeline: list[dict]) -> tuple[dict | None, dict | None]:
    """The filter of a leading $match and a $sort right after it (or first) — what an index can serve."""
    flt = sort = None
    i = 0
    if pipeline and isinstance(pipeline[0], dict) and "$match" in pipeline[0]:
        flt = pipeline[0]["$match"]
        if not isinstance(flt, dict):
            return None, None  # invalid: parsing the pipeline reports it
        i = 1
    if len(pipeline) > i and isinstance(pipeline[i], dict) and "$sort" in pipeline[i]:
        sort = pipeline[i]["$sort"]
        # only numeric directions are an index order: anything else ({$meta: ...}, a bad value) is left
        # to the $sort stage, which parses it (mongod's 31138 / 15974 ... even where _id leads)
        if not isinstance(sort, dict) or not all(is_number(v) for v in sort.values()):
            return flt, None
    return flt, sort


def run_pipeline(pipeline, source, pctx):
    return pipeline_mod.run_pipeline(pipeline, source, pctx)


def pipeline_context(server: ServerState, db: str, coll: str, *, variables: dict | None = None,
                     allow_disk_use: bool = False, extra_stages: dict | None = None, collation: Any = None,
                     conn: Any = None):
    """A PipelineContext whose callbacks reach back into the server (for $lookup, $out, ...).
    ``collation``: the pipeline's ``collation.Collation`` (None = simple); foreign collections read
    by $lookup/$unionWith are compared under it too, as in mongod. ``conn``: the caller's
    ConnectionInfo (``$currentOp`` without ``allUsers`` lists only its user's operations)."""
    def resolve_collection(target_db: str, target_coll: str) -> Iterator[dict]:
        return open_read(server, target_db, target_coll, [], nested=True).docs

    def front_stages(target_db: str, target_coll: str) -> list[dict]:
        return _front_stages(namespace.resolve(server.engine, target_db, target_coll))

    # A foreign read ($graphLookup's queries, a $lookup/$unionWith sub-pipeline's leading $text, $geoNear or
    # $indexStats) compares under the
    # pipeline's collation, not the foreign collection's default (an explicit simple one when None),
    # and sees the pipeline's variables (a text score goes into the pipeline's DocMeta table).
    foreign_collation = dict(collation.spec) if collation is not None else {"locale": "simple"}

    def query_collection(target_db: str, target_coll: str, stage: dict, stage_variables: dict | None = None
                         ) -> Iterator[dict]:
        return open_read(server, target_db, target_coll, [stage], nested=True,
                         variables=variables if stage_variables is None else stage_variables,
                         collation=foreign_collation).docs

    def foreign_scans_all(target_db: str, target_coll: str, stage: dict, stage_variables: dict | None = None
                          ) -> bool:
        # only a plain collection is asked (a view's or a time-series collection's read may be narrowed
        # in ways this does not plan: said to be served). Planned, not run: no index usage is recorded.
        with server.engine.read() as r:
            target = namespace.lookup_once(r, target_db, target_coll, None)
        if target.kind == namespace.MISSING:
            return True
        info = target.base_info
        if target.kind not in (namespace.REGULAR, namespace.CAPPED) or info is None:
            return False
        plan = planner.choose_plan(list(info.indexes), stage.get("$match"), None, None,
                                   multikey_default=info.clustered, allow_or=True,
                                   collation=C.effective_collation(foreign_collation, C.default_collation_of(info)),
                                   cluster=cluster_info(info), id_lookup=True, table_scan=True,
                                   variables=variables if stage_variables is None else stage_variables)
        return plan.kind == "COLLSCAN" and plan.record_range is None

    params = server.params
    # every pipeline knows the time-series stages: $_unpackBucket runs on system.buckets.<c> (spec §5.1)
    # (their factories return a bare apply callable, which the parse takes but the field's type omits;
    # an annotation, not typing.cast: a call per pipeline)
    extras: Any = extra_stages if extra_stages is not None else TS_EXTRA_STAGES
    return pipeline_mod.PipelineContext(
        variables=dict(variables or {}),
        allow_disk_use=allow_disk_use,
        memory_limit=params["internalQueryMaxBlockingSortMemoryUsageBytes"],  # (what one blocking stage may buffer)
        group_memory_limit=params["internalDocumentSourceGroupMaxMemoryBytes"],
        bucket_auto_memory_limit=params["internalDocumentSourceBucketAutoMaxMemoryBytes"],
        window_memory_limit=params["internalDocumentSourceSetWindowFieldsMaxMemoryBytes"],
        lookup_cache_limit=params["internalDocumentSourceLookupCacheSizeBytes"],
        collation=collation,
        resolve_collection=resolve_collection,
        front_stages=front_stages,
        query_collection=query_collection,
        foreign_scans_all=foreign_scans_all,
        deadline=interrupt.check,  # the one interruption check, for stages that loop on their own
        db=db,
        coll=coll,
        write_out=lambda spec, docs: write_out(server, db, spec, docs),
        merge_into=lambda spec, docs, collation, variables: write_stages.merge_into(
            server, db, spec, docs, collation,
            lambda tdb, coll, sp: check_write_target(server, tdb, coll, "$merge", sp), variables),
        coll_stats=lambda spec: _coll_stats_docs(server, db, coll, spec),
        index_stats=lambda: _index_stats_docs(server, db, coll),
        list_catalog=lambda: _list_catalog_docs(server, db, coll),
        plan_cache_stats=lambda: _plan_cache_stats_docs(server, db, coll),
        current_op=lambda options: _current_op_docs(server, conn, options),
        extra_stages=extras,
    )


def _current_op_docs(server: ServerState, conn, options: dict) -> list[dict]:
    from tidemark.operations import current_ops as report

    return report(server, conn, all_users=options.get("allUsers", False),
                  idle_connections=options.get("idleConnections", False),
                  idle_cursors=options.get("idleCursors", False), truncate=options.get("truncateOps", False))


def count_stages(server: ServerState, pipeline: Any, target: Any = None) -> None:
    """serverStatus metrics.aggStageCounters: one use of each stage of a pipeline that ran (after its read
    opened, as mongod ticks once the executor is built), of its sub-pipelines, and of the stages put in
    front of it by what it read (``target``, the resolved namespace: a view's pipeline, a time-series
    collection's $_internalUnpackBucket — mongod ticks the resolved pipeline); an update statement's
    pipeline."""
    counters = server.agg_stage_counters
    # (one walk: the front stages and the pipeline's, as stage_names counts only a list's stages)
    whole = pipeline if target is None else \
        [*_front_stages(target), *(pipeline if type(pipeline) is list else ())]
    for name in pipeline_mod.stage_names(whole, TS_EXTRA_STAGES):
        try:
            counters[name] += 1
        except KeyError:  # (a stage's first use)
            counters[name] = 1


def stage_counters(server: ServerState) -> dict[str, int]:
    """Every stage Tidemark knows, by name, with its uses (mongod lists each registered stage, from 0)."""
    counters = server.agg_stage_counters
    return {name: counters.get(name, 0) for name in sorted({*pipeline_mod.known_stage_names(), *TS_EXTRA_STAGES})}


def allow_disk_use_default(server: ServerState) -> bool:
    """What a read that does not say ``allowDiskUse`` may do (mongod's ``allowDiskUseByDefault``,
    true since 6.0: a blocking sort over its memory limit spills instead of failing with 292)."""
    return bool(server.params["allowDiskUseByDefault"])


def open_read(server: ServerState, db: str, name: str, pipeline: list[dict], *, hint: Any = None,
              variables: dict | None = None, allow_disk_use: bool | None = None, ctx=None,
              collation: dict | None = None, target: Any = None, collection_uuid: Any = None,
              raw_ok: bool = False, nested: bool = False, shape_checked: bool = False,
              interrupt_checked: bool = False) -> ReadResult:
    """Documents of ``db.name`` (collection, view or time-series) after ``pipeline``.

    ``shape_checked``: the command passed ``pipeline`` through ``pipeline.check_shape`` (aggregate's
    parse): only the stages the read puts in front of it and the whole length are checked again.

    ``interrupt_checked``: the caller checked the operation for interruption just before, in this job
    (a cursor's ``open_docs``: ``cursors._open_and_fill``), so resolving ``db.name`` from the cache does
    not check again.

    ``nested``: the read of a ``$lookup``/``$unionWith``/``$graphLookup`` target (its command checked
    the namespaces it involves already).

    ``raw_ok``: the caller hands the documents to a cursor untouched, so a time-series read with no
    stage left may give them as ``RawBSONDocument``s made straight from the buckets' columns.

    ``collation`` is the one the command asks for (None: the collection's or view's default).
    ``target``: ``db.name`` as the command already resolved it (``tidemark.core.namespace.Namespace``).
    ``collection_uuid``: the command's ``collectionUUID`` (checked by the resolution).
    ``allow_disk_use``: the command's ``allowDiskUse``; None (a command without one: count, distinct,
    a find or aggregate that does not say) is the ``allowDiskUseByDefault`` parameter's."""
    if allow_disk_use is None:
        allow_disk_use = allow_disk_use_default(server)
    result, coll = _open_read(server, db, name, pipeline, hint=hint, variables=variables,
                              allow_disk_use=allow_disk_use, ctx=ctx, collation=collation, target=target,
                              collection_uuid=collection_uuid, raw_ok=raw_ok, nested=nested,
                              shape_checked=shape_checked, interrupt_checked=interrupt_checked)
    # mongod optimizes the pipeline once it parsed all of it (a parse error of any stage comes first):
    # an invalid constant in a $match's $expr fails the read even when no document reaches it
    for stage in pipeline:
        if (type(stage) is dict or isinstance(stage, dict)) and "$match" in stage:
            expr_optimize.fold_filter_constants(stage["$match"], collation=coll)
    # then it plans the read: a stage reading metadata the read cannot make fails it (40218); a
    # time-series read opens with its unpack ($text refused, $geoNear rewritten) and is left out
    if not nested and (result.target is None or result.target.ts_view is None):
        whole = (result.target.pipeline if result.target is not None else []) + list(pipeline)
        docmeta.check_available(whole)
        if whole and not pipeline_mod.starts_with_source(whole):
            # (the leading $match or $geoNear is the read's query, outside the dependency analysis)
            moved = push_matches_before(whole)
            first = moved[0] if isinstance(moved[0], dict) else {}
            field_deps.check_match_paths(moved[1:] if "$match" in first or "$geoNear" in first else moved)
    return result


def _open_read(server: ServerState, db: str, name: str, pipeline: list[dict], *, hint: Any = None,
               variables: dict | None = None, allow_disk_use: bool = False, ctx=None,
               collation: dict | None = None, target: Any = None, collection_uuid: Any = None,
               raw_ok: bool = False, nested: bool = False, shape_checked: bool = False,
               interrupt_checked: bool = False) -> tuple[ReadResult, Any]:
    """``open_read``'s work; also the collation the read runs with."""
    engine = server.engine
    if target is None or not target.followed or (target.db, target.name) != (db, name):
        target = namespace.resolve(engine, db, name, collection_uuid=collection_uuid, checked=interrupt_checked)
    elif collection_uuid:
        with engine.read() as r:
            namespace.check_collection_uuid(r, target, collection_uuid)
    resolved = target
    if resolved.kind == namespace.VIEW and pipeline \
            and isinstance(pipeline[0], dict) and "$collStats" in pipeline[0]:
        # mongod runs a pipeline starting with $collStats on the view itself, unresolved: it reports
        # the view's latencies (storageStats: 166)
        resolved = namespace.Namespace(db, name, namespace.VIEW, view=resolved.view, chain=resolved.chain,
                                       base=name)
    info = resolved.base_info
    ns = C.ns_of(db, name)
    # a view chain ended by a $collStats stage reports on the namespace that stage names
    stats_name = resolved.base if resolved.pipeline and resolved.is_view and "$collStats" in resolved.pipeline[0] \
        else name
    variables, meta = special_reads.with_meta(variables, pipeline)
    if meta is None and nested:
        # a nested read ($lookup's leading $text) records its scores where the calling pipeline reads
        # them (its DocMeta table; a find's record-id table never reaches a nested read)
        caller_meta = docmeta.table(variables)
        meta = caller_meta if type(caller_meta) is docmeta.DocMeta else None
    default = C.default_collation_of(info, resolved.chain[0] if resolved.chain else None)
    if collation is None and not default:
        coll = None  # (effective_collation's simple case, without the call)
    elif resolved.chain:
        # a time-series collection may be queried with another collation (mongod checks only views;
        # the chain's first view is the time-series one only for kind TIMESERIES)
        coll = C.effective_collation(collation, default, on_view=resolved.kind != namespace.TIMESERIES)
    else:
        coll = C.effective_collation(collation, default)
    if not nested and (pipeline or resolved.pipeline):
        direct = namespace.involved_namespaces(resolved.pipeline, pipeline)
        if direct:  # (most pipelines read no other namespace: no call)
            _resolve_involved(server, db, coll, direct)
    if resolved.ts_view is not None:
        # mongod's pipeline here is the view's $_internalUnpackBucket, the views' stages, then the read's:
        # its length limits count them all (the time-series planner reads stages before they are parsed)
        implicit = 0
        if shape_checked and not resolved.pipeline:
            whole, implicit = pipeline, 1  # (the unpack in front: one stage, counted without a list made)
        else:
            whole = _front_stages(resolved) + list(pipeline) \
                if type(pipeline) is list or isinstance(pipeline, list) else pipeline
        if shape_checked:  # (the read's own stages were checked: the views' and the whole length are left)
            if resolved.pipeline or len(pipeline) >= pipeline_mod.MAX_PIPELINE_LENGTH:
                pipeline_mod.check_shape(resolved.pipeline, len(pipeline) + 1)  # (+1: the unpack stage)
        else:
            pipeline_mod.check_shape(whole)
        # one context for the checks below and the stages the source leaves (each makes a dozen closures)
        pctx = pipeline_context(server, db, name, variables=variables, allow_disk_use=allow_disk_use,
                                extra_stages=TS_EXTRA_STAGES, collation=coll)
        if not resolved.pipeline:
            # the read's stages follow the $_internalUnpackBucket: a first-only stage fails 40602
            # (resolved_view.cpp), but a leading $collStats (run on the view itself, unresolved) or
            # $indexStats (moved in front of the unpack)
            pipeline_mod.check_after_front(pipeline, pctx, _TS_HEAD_STAGES, shape_checked=shape_checked)
        full = special_reads.timeseries_special(resolved.pipeline + push_matches_before(pipeline), variables)
        # the source absorbs what it can under the read's collation; the rest runs here, collated
        # ($collStats... make their own documents: no scan of the buckets is counted; a counted read
        # enters no with-block)
        options = {"hint": hint, "collation": coll, "buckets_info": resolved.buckets_info, "raw": raw_ok,
                   "sort_memory": (pctx.memory_limit, allow_disk_use)}
        if pipeline_mod.starts_with_source(full):
            with not_counted():
                docs, remaining, ts_info = ts_view.read_source(server, db, resolved.ts_view, full, **options)
        else:
            docs, remaining, ts_info = ts_view.read_source(server, db, resolved.ts_view, full, **options)
        remaining = list(remaining)
        out = docs
        stages: list = []
        if remaining:
            # (what the source leaves is a tail of the read's own stages, or stages it made)
            stages = pipeline_mod.parse_pipeline(remaining, pctx, shape_checked=shape_checked)
            out = pipeline_mod.chain(stages, docs)
        pipeline_mod.check_expanded_length(whole, implicit)  # (once every stage has parsed)
        return ReadResult(out, None, remaining, {}, ts_info, ns, target=resolved,
                          stages=stages), coll
    full = resolved.pipeline + list(pipeline)
    stats: dict = {}
    if C.is_buckets_collection(name, info):
        # bucket documents: the time-series layer merges persisted buckets with in-memory ones
        source: Iterator[dict] = ts_view.bucket_source(server, db, name)
        if hint not in (None, {}, "") and not (isinstance(hint, dict) and "$natural" in hint):
            hinted = planner.find_hinted_index(list(info.indexes), hint)  # 2 BadValue for a missing index
            if may_leave_out(hinted):  # a hinted scan returns only the buckets the index holds
                source = (doc for doc in source if holds(hinted, doc))
        source = _examined(source, stats)
        plan = Plan("COLLSCAN")
        # $geoNear searches the buckets' geo index of the meta field in mongod; here no index holds the
        # buckets, so the same search runs over them all (special_reads.near_over)
        if full and isinstance(full[0], dict) and "$geoNear" in full[0]:
            plan, source = special_reads.geo_near_source(engine, info, full[0]["$geoNear"], variables, meta, stats,
                                                         collation=coll, unindexed=source)
            full = full[1:]
        if not full:
            return ReadResult(source, plan, full, stats, None, ns, target=resolved), coll
        pctx = pipeline_context(server, db, name, variables=variables, allow_disk_use=allow_disk_use,
                                collation=coll)
        stages = pipeline_mod.parse_pipeline(full, pctx)
        return ReadResult(pipeline_mod.chain(stages, source), plan, full, stats, None, ns,
                          target=resolved, stages=stages), coll
    flt: dict | None = None  # (the leading $match an index plan reads for)
    if info is None:
        source = iter(())
        plan = Plan("COLLSCAN")
        if full and isinstance(full[0], dict) and "$geoNear" in full[0]:
            special_reads.geo_near_on_missing(full[0]["$geoNear"], variables, C.ns_of(db, resolved.base or name))
    elif full and isinstance(full[0], dict) and "$geoNear" in full[0]:
        plan, source = special_reads.geo_near_source(engine, info, full[0]["$geoNear"], variables, meta, stats,
                                                     collation=coll)
        server.index_usage.record_plan(info, plan)
        source = interrupt.checked(source)
        full = full[1:]
    else:
        full = push_matches_before(full)
        flt, sort = leading_match_and_sort(full)
        # A find's $near/$nearSphere on a view with no stages of its own runs as on the collection
        # (mongod turns it into a $geoNear); in an aggregate's $match it stays 5626500.
        match_stage = parsed(full[0]) if flt is not None else None
        near_find = match_stage is not None and not resolved.pipeline and pipeline_mod.has_near(flt)
        if flt and plan_special_mod.mentions_special(flt) and not near_find:
            pipeline_mod.parse_pipeline(full[:1])  # $near in a $match: 5626500 before any planning
        plan = planner.choose_plan(list(info.indexes), flt, sort, hint, multikey_default=info.clustered,
                                   allow_or=True, collation=coll, cluster=cluster_info(info), id_lookup=True,
                                   table_scan=nested or table_scan_allowed(server, db, resolved.base or name, flt),
                                   variables=variables)
        plan.meta = meta
        if not pipeline_mod.starts_with_source(full):  # ($collStats... read no document of it)
            server.index_usage.record_plan(info, plan)
        source = interrupt.checked(C.plan_docs(engine, info, plan, stats=stats))
        if plan.provides_sort and sort is not None:
            # the index yields the $sort order already: drop the stage (a stable re-sort is wasted work),
            # once the positions it holds are checked
            pipeline_mod.check_text_first(full)
            idx = 1 if flt is not None else 0
            full = full[:idx] + full[idx + 1:]
            if meta is not None:  # a {$meta: "sortKey"} later on: the scan notes the key the stage would have
                meta.sort_keys = sort_mod.sort_key_array(sort, coll, meta)
        if near_find and match_stage is not None:
            # the GEO_NEAR plan yields by distance; the filter confirms the rest (as run_find does)
            source = filter(match_mod.compile_node(match_stage.node, variables=variables, collation=coll), source)
            full = full[1:]
    if not full:
        return ReadResult(source, plan, full, stats, None, ns, target=resolved), coll
    pctx = pipeline_context(server, db, stats_name, variables=variables, allow_disk_use=allow_disk_use,
                            collation=coll)
    stages = pipeline_mod.parse_pipeline(full, pctx, shape_checked=shape_checked and not resolved.pipeline)
    if plan.exact and flt and stages[0].name == "$match" and full[0].get("$match") is flt:
        # the leading $match is the plan's FETCH filter: it re-checks what the bounds left undecided
        # (its statistics stay the stage's: explain shows what the query layer passed on)
        leading = stages[0]
        stages[0] = pipeline_mod.Stage("$match", leading.spec, functools.partial(
            _fetched_stage, plan=plan, flt=flt, whole=leading, variables=variables, collation=coll),
            stats=leading.stats)
    return ReadResult(pipeline_mod.chain(stages, source), plan, full, stats, None, ns, target=resolved,
                      stages=stages), coll


def _fetched_stage(docs: Iterator[dict], *, plan: Plan, flt: dict, whole: pipeline_mod.Stage,
                   variables: dict | None, collation: Any) -> Iterator[dict]:
    """A leading ``$match`` applied to what ``plan`` fetches: ``fetched_matching`` with the stage's own
    compiled filter as the whole predicate."""
    return fetched_matching(docs, plan, flt, whole.uncounted, variables=variables, collation=collation)


def _resolve_involved(server: ServerState, db: str, collation: Any, direct: list[str]) -> None:
    """``direct``: the namespaces a command's pipelines read (``namespace.involved_namespaces``, not
    empty). mongod resolves every namespace a command's pipeline reads before running it
    (resolveInvolvedNamespaces): a view among them, or among the namespaces its own pipeline reads,
    that is too deep to resolve fails the command up front (165) instead of after the stages before
    it ran; a view the pipeline reads directly must have the pipeline's collation (167,
    collatorCompatibleWithPipeline; the views' own references were checked when they were defined).
    Each name is resolved once (point lookups, cached per snapshot)."""
    todo = list(direct)
    seen: set[str] = set()
    with server.engine.read() as r:
        while todo:
            other = todo.pop()
            if other in seen:
                continue
            seen.add(other)
            target = namespace.lookup(r, db, other)
            if target.kind != namespace.VIEW:
                continue
            if other in direct and not same(C.effective_collation(None, target.collation), collation):
                raise MongoError(ErrorCode.OptionNotSupportedOnView,
                                 f"Cannot override default collation of view {db}.{other}")
            if target.pipeline:
                todo.extend(namespace.involved_namespaces(target.pipeline))


_INTERNAL_DBS = frozenset({"admin", "config", "local"})


def check_write_target(server: ServerState, db: str, coll: str, stage: str, spec: Any) -> None:
    """$out/$merge (and mapReduce's out) may not write into a view (166); time-series targets get the TS
    layer's refusal; ``$out``/``$merge`` (mapReduce's output too) into any other ``system.`` collection
    (system.profile...) is refused as mongod's stage parsers do (17385 / 31319), and so is ``$out``/``$merge``
    into the internal databases admin, config and local (31321 / 31320), before the target is looked up;
    then the target must be a name a user may create (``check_create_name``: no '$', at most 255 bytes
    in all...), as mongod's rename of the stage's temporary collection onto it requires. First of all, a
    target namespace mongod's NamespaceString::isValid refuses (a database name of 64 bytes or more, or
    with a character no database name has; an empty collection name, or one starting with '.' or holding
    a NUL) is 73, as the stage's parser refuses it."""
    if stage in ("$out", "$merge") and not C.valid_target_namespace(db, coll):
        shown = f"{db}.{coll}"[:300]
        raise MongoError(ErrorCode.InvalidNamespace, f"Invalid $out target namespace, {shown}" if stage == "$out"
                         else f"Invalid $merge target namespace: '{shown}'")
    if db in _INTERNAL_DBS:  # (NamespaceString::isOnInternalDb)
        if stage == "$out":
            raise MongoError(31321, f"Can't $out to internal database: {db}")
        if stage == "$merge":
            raise MongoError(31320, f"Cannot $merge to internal database: {db}")
    with server.engine.read() as r:
        ts_admin.check_write_stage_target(r, db, coll, stage, spec)
        if C.get_view(r, db, coll) is not None:
            raise MongoError(ErrorCode.CommandNotSupportedOnView,
                             f"Namespace {db}.{coll} is a view, not a collection")
    if coll.startswith("system."):
        if stage == "$out":
            raise MongoError(17385, f"Can't $out to special collection: {coll}")
        if stage in ("$merge", "mapReduce"):  # mapReduce's merge/reduce output is a $merge in mongod 7.0
            raise MongoError(31319, f"Cannot $merge to special collection: {coll}")
    C.check_create_name(db, coll)


def _out_target(db: str, spec: Any) -> tuple[str, Any]:
    if type(spec) is str:
        return db, spec
    if isinstance(spec, dict):
        return spec.get("db", db), spec.get("coll")
    raise MongoError(ErrorCode.BadValue, "$out requires a collection name")


# the first-only stages mongod runs at the head of a read of a time-series view, not after its unpack
_TS_HEAD_STAGES = frozenset({"$collStats", "$indexStats"})


def _front_stages(resolved: Any) -> list[dict]:
    """The stages mongod puts in front of a read of ``resolved``: the views' pipeline, after a time-series
    collection's $_internalUnpackBucket (``UNPACK_FRONT``)."""
    front = resolved.pipeline or ()
    return [pipeline_mod.UNPACK_FRONT, *front] if resolved.ts_view is not None else list(front)


def check_output_stage(server: ServerState, db: str, pipeline: list) -> None:
    """Refuse a final ``$out``/``$merge`` into a view or a time-series collection before the pipeline
    runs (the write callbacks check again under their own read)."""
    if not pipeline:
        return
    last = pipeline[-1]  # (the usual last stage, neither: no call)
    if type(last) is not dict and not isinstance(last, dict) or "$out" not in last and "$merge" not in last \
            or len(last) != 1:
        return
    stage, spec = next(iter(last.items()))
    target_db, target = (_out_target if stage == "$out" else write_stages.merge_target)(db, spec)
    if type(target_db) is str and type(target) is str:
        check_write_target(server, target_db, target, stage, spec)
        if stage == "$merge":
            write_stages.check_on_fields(server, db, spec)


def create_collection(w, ns: str, options: dict, **kwargs: Any) -> Any:
    """``w.create_collection`` with the _id index mongod builds (getDefaultIdIndexSpec): it carries the
    collection's default collation, so listIndexes shows it and its keys (hence ``_id`` uniqueness)
    compare under it. Written while the collection is empty: no key needs recomputing."""
    info = w.create_collection(ns, options, **kwargs)
    collation = options.get("collation")
    if collation and "_id_" in info.index_idents:
        info = w.set_index_options(info, "_id_", {"collation": collation})
    return info


def write_out(server: ServerState, db: str, spec: Any, docs) -> None:
    """$out (and mapReduce's ``out: {replace}``): replace the target collection with ``docs`` (one write
    transaction). As mongod's $out
    (which inserts into a temporary collection carrying the target's options), every document passes
    the target's validator unless the command bypasses document validation; a failure (121) leaves
    the target as it was."""
    target_db, target = _out_target(db, spec)
    check_write_target(server, target_db, target, "$out", spec)
    prepared = [C.prepare_insert(d) for d in docs]
    raws = [C.encode_doc(d) for d in prepared]
    ns = C.ns_of(target_db, target)
    bypass = C.bypasses_validation()

    def fn(w):
        from tidemark.core.collection import ensure_collection

        old = w.get_collection(ns)
        if capped.limits(old) is not None:
            raise MongoError(17152, f"namespace '{ns}' is capped so it can't be used for $out")
        indexes = [s for s in (old.indexes if old else ()) if s["name"] != "_id_"]
        options = dict(old.options) if old else {}
        if old is not None:
            w.drop_collection(ns)
        info = create_collection(w, ns, options) if old is not None else ensure_collection(w, ns)
        for spec_ in indexes:
            w.create_index(info, spec_, [])
            info = w.get_collection(ns)
        validator = None if bypass else C.validator_for(info)
        if validator is not None:
            for doc in prepared:
                validator.check(doc)
        for doc, raw in zip(prepared, raws, strict=False):
            info, keys = C.write_keys(w, info, doc)
            w.insert(info, raw, keys)

    server.engine.write(fn).result()


_STORED_STATS = frozenset({"storageStats", "count", "queryExecStats"})  # $collStats sections reading the collection


def _coll_stats_docs(server: ServerState, db: str, coll: str, spec: dict) -> list[dict]:
    with server.engine.read() as r:
        view = C.get_view(r, db, coll)
    if C.is_timeseries_view(view):
        doc = ts_admin.coll_stats_stage_document(server, db, coll, spec or {})
    elif view is not None and isinstance(spec, dict) and "storageStats" in spec:
        raise MongoError(ErrorCode.CommandNotSupportedOnView, f"Namespace {db}.{coll} is a view, not a collection")
    elif isinstance(spec, dict) and not _STORED_STATS.intersection(spec):
        # latencies only: they come from top, for any name (a view's viewOn may not exist)
        doc = {"ns": C.ns_of(db, coll), "localTime": datetime.datetime.now(datetime.UTC).replace(tzinfo=None)}
    else:
        doc = coll_stats.coll_stats_document(server, db, coll, spec or {})
    # The header every $collStats document shares, in mongod's order: the real host:port and the
    # collection's latencies as top records them (server/top.py).
    head = {"ns": doc.pop("ns"), "host": server.host, "localTime": doc.pop("localTime", None)}
    doc.pop("host", None)
    latency = (spec or {}).get("latencyStats")
    if latency is not None:
        histograms = isinstance(latency, dict) and bool(latency.get("histograms"))
        head["latencyStats"] = server.top.latency_stats(C.ns_of(db, coll), histograms)
    return [{**head, **doc}]


def _plan_cache_stats_docs(server: ServerState, db: str, coll: str) -> list[dict]:
    """``$planCacheStats``: Tidemark keeps no plan cache, so no entry; the collection must exist (mongod's
    getMatchingPlanCacheEntryStats: 50933)."""
    with server.engine.read() as r:
        target = namespace.lookup(r, db, coll)
    if target.kind == namespace.MISSING:
        raise MongoError(50933, f"collection '{db}.{coll}' does not exist")
    return []


def _list_catalog_docs(server: ServerState, db: str, coll: str) -> list[dict]:
    """``$listCatalog``'s entries, as mongod's durable catalog holds them: ``{aggregate: 1}`` (on
    admin) every collection of every database, then its views (``type`` "view", or "timeseries" for a
    time-series collection's view, with ``viewOn`` and ``pipeline``); on a collection its one entry (none
    for a view or a missing name). A collection's entry: ``db``, ``name``, ``type: "collection"``, ``md``
    (``ns``, ``options`` with the collection's ``uuid`` and create options, ``indexes``: each ``spec``,
    ready), ``idxIdent`` and ``ident``."""
    with server.engine.read() as r:
        if coll != "$cmd.aggregate":
            info = r.get_collection(C.ns_of(db, coll))
            return [] if info is None else [_catalog_entry(info)]
        out: list[dict] = []
        for name in r.list_databases():
            out.extend(_catalog_entry(info) for info in r.list_collections(name))
            for view in C.view_docs(r, name):
                view_id = view.get("_id")
                if type(view_id) is str and "." in view_id:
                    out.append({"db": name, "name": view_id.split(".", 1)[1],
                                "type": "timeseries" if C.is_timeseries_view(view) else "view",
                                "viewOn": view.get("viewOn"), "pipeline": view.get("pipeline")})
        return out


def _catalog_entry(info) -> dict:
    indexes = [{"spec": dict(spec), "ready": True, "multikey": False} for spec in info.indexes]
    return {"db": info.db, "name": info.name, "type": "collection",
            "md": {"ns": info.ns, "options": {"uuid": info.uuid, **(info.options or {})}, "indexes": indexes},
            "idxIdent": dict(info.index_idents), "ns": info.ns, "ident": info.ident}


def _index_stats_docs(server: ServerState, db: str, coll: str) -> list[dict]:
    """``$indexStats``: one document per index, in mongod's field order. On a time-series collection
    the indexes of its buckets collection in user form (as listIndexes on the view shows them; bucket
    indexes with no user form are left out), with the accesses of the buckets index. On a view (whose
    stages are none: else the stage is not first, 40602) those of the collection its chain ends at, as
    mongod runs the stage on the resolved namespace."""
    with server.engine.read() as r:
        target = namespace.lookup(r, db, coll)
    info, specs = target.base_info if target.is_view else target.info, None
    if target.is_timeseries or target.ts_view is not None:
        info = target.buckets_info
        options = ts_ddl.stored_options(info)
        if options is not None:
            specs = ts_indexes.user_index_specs(info.indexes, options.time_field, options.meta_field)
    elif info is not None:
        specs = list(info.indexes)
    if info is None or specs is None:
        return []
    accesses = server.index_usage.accesses(info)
    return [{"name": name, "key": spec["key"], "host": server.host, "accesses": accesses[name],
             "spec": C.public_index_spec(spec)}
            for spec in specs if (name := spec["name"]) in accesses]



# --------------------------------------------------------------------------------------------------
# find
# --------------------------------------------------------------------------------------------------


class FindSpec:
    """A parsed and validated find command."""

    def __init__(self, cmd: dict, command: str = "find", *, checked: bool = False):
        """``checked``: the caller has run ``arguments.check_command`` on the client's command (the
        find handler does, before it reads the options it takes off)."""
        if not checked:
            check_command(cmd, "find", command)  # mongod's IDL: 40415 unknown fields, 14 wrong types
        self.name = C.collection_arg(cmd, command)
        self.collection_uuid = namespace.collection_uuid_arg(cmd, command)
        self.filter = C.doc_arg(cmd, "filter", command) or {}
        self.projection = C.doc_arg(cmd, "projection", command)
        self.sort = C.doc_arg(cmd, "sort", command) or None
        self.skip = C.int_arg(cmd, "skip", command, 0) or 0
        self.limit = C.int_arg(cmd, "limit", command, 0) or 0
        self.batch_size = C.int_arg(cmd, "batchSize", command)
        self.single_batch = bool(cmd.get("singleBatch", False))
        self.max_time = C.int_arg(cmd, "maxTimeMS", command)
        self.let = C.doc_arg(cmd, "let", command)
        self.collation_spec = C.collation_arg(cmd, command)  # as asked (None: the collection's default)
        self.allow_disk: bool | None = bool(cmd["allowDiskUse"]) if "allowDiskUse" in cmd else None
        self.hint = cmd.get("hint")
        # an empty min/max bounds nothing: mongod tests both with isEmpty(), so {} is as if absent
        self.min = C.doc_arg(cmd, "min", command) or None
        self.max = C.doc_arg(cmd, "max", command) or None
        # mongod's IDHACK may answer an {_id: v} filter (plan.choose_plan): not with a skip, nor with
        # showRecordId (its caller clears this); a count's skip is its COUNT stage's, so a count sets it
        self.id_lookup = not self.skip
        for label, v in (("skip", self.skip), ("limit", self.limit), ("batchSize", self.batch_size or 0)):
            if v < 0:
                raise MongoError(51024, f"BSON field '{label}' value must be >= 0, actual value '{v}'")
        if self.max_time is not None and self.max_time < 0:
            raise MongoError(ErrorCode.BadValue, "BSON field 'maxTimeMS' value must be >= 0")
        if self.hint is not None:
            planner.check_hint_type(self.hint)
        if self.min is not None and self.max is not None and list(self.min) != list(self.max):
            # validateFindCommandRequest's first check, before any index is looked at: the same names
            # in the same order (the hinted index's own pattern is the planner's 51174)
            raise MongoError(51176, "min and max must have the same field names")
        for unsupported in ("returnKey", "showRecordId"):
            if cmd.get(unsupported):
                raise MongoError(ErrorCode.CommandNotSupported, f"find option '{unsupported}' is not supported by Tidemark")
        self.request_resume_token, self.resume_token = _resume_options(cmd, self.hint, self.sort)
        self.tailable = bool(cmd.get("tailable", False))
        self.await_data = bool(cmd.get("awaitData", False))
        if self.await_data and not self.tailable:
            raise MongoError(ErrorCode.FailedToParse, "Cannot set 'awaitData' without also setting 'tailable'")
        if self.tailable:
            if self.sort and self.sort != {"$natural": 1}:
                raise MongoError(ErrorCode.BadValue, "cannot use tailable option with a sort other than {$natural: 1}")
            if self.single_batch:
                raise MongoError(ErrorCode.BadValue, "cannot use tailable option with the 'singleBatch' option")
        # a find on a view runs as an aggregate: the options it cannot carry, in mongod's order
        # (asAggregationCommand); raised only once the name turns out to be a view (run_find)
        self.view_refusal = _aggregation_refusal(cmd) if _MAYBE_REFUSED.intersection(cmd) else None
        if self.tailable and (self.min is not None or self.max is not None) and not self.hint:
            # a tailable read never reaches run_find's check (tidemark.tailable plans it)
            raise MongoError(51173, "When using min()/max() a hint of which index to use must be provided")
        self.variables = C.command_variables(cmd, command)  # once per command, with NOW
        self.meta, self.projection_variables = special_reads.find_meta(self.projection, self.sort, self.filter,
                                                                       self.variables)
        # compile now: parse errors surface before any work (and the callables are reused per document)
        self.collation = C.effective_collation(self.collation_spec, None)
        self.node: Node | None = None
        self._compile()
        if self.tailable or self.hint or (self.sort and "$natural" in self.sort):  # (nothing else can fail it)
            plan_special_mod.check_find_specials(self.node, sort=self.sort, hint=self.hint, tailable=self.tailable)
        # mongod optimizes a query's filter once parsed: an invalid constant in an $expr fails the
        # find (count, distinct) even when no document reaches it (validators are never optimized)
        expr_optimize.fold_filter_constants(self.filter, collation=self.collation)
        if self.sort and "$natural" in self.sort:
            _check_natural_sort_hint(self.sort["$natural"], self.hint)
            self.hint = {"$natural": self.sort["$natural"]}
            self.sort = {k: v for k, v in self.sort.items() if k != "$natural"} or None
        if self.sort:  # (more than 32 keys: 13103, mongod's Ordering of the find's sort pattern)
            check_compound_keys(sort_mod.parse_sort(self.sort, allow_meta=True))

    def _compile(self) -> None:
        if self.filter and self.node is None:
            self.node = match_mod.parse_filter(self.filter)  # the command's one parse of its filter
        self.match = (match_mod.compile_node(self.node, variables=self.variables, collation=self.collation)
                      if self.filter and self.node is not None else None)
        self.project = (project_mod.compile_projection(self.projection, filter=self.filter,
                                                   variables=self.projection_variables, collation=self.collation)
                        if self.projection else None)

    def fetch_filter(self, docs: Iterator[dict], plan: Plan) -> Iterator[dict]:
        """``docs`` (what ``plan`` fetches) that match the filter (``fetch_filter.fetched_matching``: only
        what the plan's index bounds leave undecided is re-checked)."""
        if self.match is None:
            return docs
        return fetched_matching(docs, plan, self.filter, functools.partial(filter, self.match),
                                variables=self.variables, collation=self.collation)

    def use_default_collation(self, default: dict | None) -> None:
        """Without a collation of its own, a find runs with the collection's default one."""
        if self.collation_spec is None and default:
            self.collation = C.effective_collation(None, default)
            self._compile()

    def as_pipeline(self) -> list[dict]:
        """The equivalent aggregation pipeline (how mongod runs a find on a view)."""
        stages: list[dict] = []
        if self.filter:
            # the parsed (and compiled) filter travels with the stage: the source reuses it
            stages.append(MatchStage(self.filter, cast(Node, self.node), self.match, self.collation,
                                     self.variables))  # a filter: _compile parsed it
        if self.sort:
            stages.append({"$sort": self.sort})
        if self.skip:
            stages.append({"$skip": self.skip})
        if self.limit:
            stages.append({"$limit": self.limit})
        if self.projection:
            stages.append({"$project": self.projection})
        return stages


def _check_natural_sort_hint(direction: Any, hint: Any) -> None:
    """A ``$natural`` sort becomes the find's hint, so it must agree with the hint given (mongod's
    parsed_find_command isValid): an index hint -> 2 "index hint not allowed with $natural sort order";
    a ``$natural`` hint of the other direction -> 2 as well. An empty hint is no hint."""
    if hint is None or hint == {}:
        return
    if not (isinstance(hint, dict) and "$natural" in hint):  # an index name or key pattern
        raise MongoError(ErrorCode.BadValue, "index hint not allowed with $natural sort order")
    if key_direction(hint["$natural"]) != key_direction(direction):
        raise MongoError(ErrorCode.BadValue, "$natural hint must be in the same direction as $natural sort order")


_MAYBE_REFUSED = frozenset({"min", "max", "tailable", "noCursorTimeout", "allowPartialResults", "sort",
                            "singleBatch", "readOnce", "allowSpeculativeMajorityRead"})


def view_option_error(return_key: bool, show_record_id: bool, resumable: bool) -> MongoError:
    """168 for a find option a view's aggregate cannot carry (returnKey, showRecordId, a resume token)."""
    option = ("returnKey" if return_key else "showRecordId" if show_record_id  # mongod: a view's find
              else "$_requestResumeToken" if resumable else "$_resumeAfter")  # is an aggregate
    return MongoError(ErrorCode.InvalidPipelineOperator, f"Option {option} not supported in aggregation.")


def _aggregation_refusal(cmd: dict) -> str | None:
    """mongod's message when a find with these options runs on a view (168), else None."""
    for option in ("min", "max"):
        if cmd.get(option):
            return f"Option {option} not supported in aggregation."
    if cmd.get("tailable"):
        return "Tailable cursors are not supported in aggregation."
    for option in ("noCursorTimeout", "allowPartialResults"):
        if cmd.get(option):
            return f"Option {option} not supported in aggregation."
    sort = cmd.get("sort")
    if isinstance(sort, dict) and "$natural" in sort:
        return "Sort option $natural not supported in aggregation."
    if cmd.get("singleBatch") and cmd.get("limit") != 1:  # mongod lets a findOne through
        return "Option singleBatch not supported in aggregation."
    for option in ("readOnce", "allowSpeculativeMajorityRead"):
        if cmd.get(option):
            return f"Option {option} not supported in aggregation."
    return None


def _resume_options(cmd: dict, hint: Any, sort: dict | None) -> tuple[bool, Any]:
    """``$_requestResumeToken`` and the ``$recordId`` of ``$_resumeAfter`` (``NO_RESUME`` when absent),
    checked as mongod's ``validateFindCommandRequest``: resumable reads are ``$natural``-ordered scans."""
    requested = bool(cmd.get("$_requestResumeToken", False))
    resume_after = C.doc_arg(cmd, "$_resumeAfter", "find") or {}
    if not requested:
        if resume_after:
            raise MongoError(ErrorCode.BadValue, "'requestResumeToken' must be true if 'resumeAfter' is specified")
        return False, NO_RESUME
    if not isinstance(hint, dict) or hint != {"$natural": 1}:
        raise MongoError(ErrorCode.BadValue, "hint must be {$natural:1} if 'requestResumeToken' is enabled")
    if sort and sort != {"$natural": 1}:
        raise MongoError(ErrorCode.BadValue, "sort must be unset or {$natural:1} if 'requestResumeToken' is enabled")
    if not resume_after:
        return True, NO_RESUME
    value = resume_after.get("$recordId", NO_RESUME)
    if len(resume_after) != 1 or not (value is None or isinstance(value, (Int64, bytes))):
        raise MongoError(ErrorCode.BadValue, "Malformed resume token: the '_resumeAfter' object must contain exactly "
                                             "one field named '$recordId', of type NumberLong, BinData or jstNULL.")
    return True, value


NO_RESUME = object()  # no $_resumeAfter (a $recordId of null resumes from the start)


def _min_max_plan(spec: FindSpec, info) -> tuple[Plan, Any]:
    """The scan of a find with ``min``/``max``, and the test a document must pass besides the filter
    (None: the scan's bounds are exact). A hint naming a clustered collection's clustered index scans
    the ``_id`` range (``clustered_range.min_max``), in ``_id`` order."""
    if isinstance(spec.hint, dict) and "$natural" in spec.hint:
        raise MongoError(ErrorCode.NoQueryExecutionPlans, "error processing query: planner returned error :: "
                                                          "caused by :: min and max are incompatible with $natural")
    cluster = cluster_info(info)
    if cluster is not None and planner.names_cluster(cluster, spec.hint):
        within = clustered_range.record_range(spec.filter, spec.collation)
        default = C.effective_collation(None, C.default_collation_of(info))
        record_range, keep = clustered_range.min_max(spec.min, spec.max, spec.collation, default, within)
        provides = clustered_range.sort_direction(spec.sort) == 1 and spec.collation is None
        return Plan("COLLSCAN", record_range=record_range, provides_sort=provides), keep
    index = planner.find_hinted_index(list(info.indexes), spec.hint)
    low, high = _min_max_bounds(spec.min, spec.max, index, spec.collation)
    iv = Interval(low, high, True, False)
    return Plan("IXSCAN", index=index, intervals=[iv], bounds_desc={}), None


# MinKey and MaxKey as one-field keys: what mongod's finishMinObj/finishMaxObj put in place of an absent
# bound before comparing the two
_MIN_KEY, _MAX_KEY = [MinKey()], [MaxKey()]


def _min_max_bounds(lo: dict | None, hi: dict | None, index: dict, collation: Any) -> tuple[bytes | None, bytes | None]:
    """The encoded ``[min, max)`` bounds of a find hinted to ``index`` (None: that side unbounded),
    checked as mongod 7.0's planner: each given bound names exactly the key pattern's fields, in order,
    and holds no collatable value (string, object, array) unless the query's collation is the index's
    (else 51174); ``min`` comes before ``max`` in the index's order, an absent side being MinKey or
    MaxKey as ``finishMinObj``/``finishMaxObj`` choose it (else 51175). Once per query, never per key."""
    fields, directions = key_fields(index["key"])
    index_coll = index_collation(index)
    collators_match = same(collation, index_coll)
    for doc in (lo, hi):
        if doc is not None and (list(doc) != list(fields) or (
                not collators_match and any(type(v) is str or isinstance(v, dict | list) for v in doc.values()))):
            raise MongoError(51174, "The index chosen is not compatible with min/max")

    def encode(values: list) -> bytes:
        # a shorter key encodes as a prefix, so sorts first: BSONObj::woCompare's rule for the
        # one-field MinKey/MaxKey against a compound bound
        if index_coll is not None:  # the index stores collation keys (stripFieldNamesAndApplyCollation)
            values = [collated_key_value(v, index_coll) for v in values]
        return encode_key(values, directions[:len(values)])

    low = encode(list(lo.values())) if lo is not None else None
    high = encode(list(hi.values())) if hi is not None else None
    if low is not None or high is not None:
        finished_low = low if low is not None else (
            encode(_MIN_KEY) if encode(_MIN_KEY) < cast(bytes, high) else encode(_MAX_KEY))
        finished_high = high if high is not None else (
            encode(_MAX_KEY) if encode(_MAX_KEY) > cast(bytes, low) else encode(_MIN_KEY))
        if finished_low >= finished_high:
            raise MongoError(51175, "The value provided for min() does not come before the value provided for "
                                    "max() in the hinted index")
    return low, high


def run_find(server: ServerState, spec: FindSpec, db: str, ctx=None, raw_ok: bool = False, target: Any = None) -> ReadResult:
    """The lazy result stream of a find (synchronous; called in the thread pool). ``target``: the
    namespace when the caller resolved it already (``tidemark.core.namespace.Namespace``)."""
    with server.engine.read() as r:
        target = namespace.lookup_once(r, db, spec.name, target, collection_uuid=spec.collection_uuid)
    info, view = target.info, target.view
    if view is not None:
        if spec.view_refusal is not None:
            raise MongoError(ErrorCode.InvalidPipelineOperator, spec.view_refusal)
        return open_read(server, db, spec.name, spec.as_pipeline(), hint=spec.hint, variables=spec.variables,
                         allow_disk_use=spec.allow_disk, ctx=ctx, collation=spec.collation_spec, target=target,
                         raw_ok=raw_ok)
    ns = C.ns_of(db, spec.name)
    stats: dict = {}
    if info is None:  # mongod's EOF plan
        return ReadResult(iter(()), Plan("EOF"), [], stats, None, ns)
    spec.use_default_collation(C.default_collation_of(info))
    resume_after = None if spec.resume_token is NO_RESUME else C.record_id_from_value(spec.resume_token,
                                                                                      info.clustered)
    docs: Iterator[dict]
    in_min_max = None
    if C.is_buckets_collection(spec.name, info):
        plan, docs = _buckets_natural_scan(server, db, spec, info, resume_after)
        docs = _examined(docs, stats)
    else:
        if spec.min is not None or spec.max is not None:
            if not spec.hint:  # checked by the planner, as mongod's: a view or a missing name never plans
                raise MongoError(51173, "When using min()/max() a hint of which index to use must be provided")
            plan, in_min_max = _min_max_plan(spec, info)
        else:
            plan = planner.choose_plan(list(info.indexes), spec.filter, spec.sort, spec.hint,
                                       multikey_default=info.clustered, allow_or=True, collation=spec.collation,
                                       cluster=cluster_info(info), id_lookup=spec.id_lookup,
                                       table_scan=table_scan_allowed(server, db, spec.name, spec.filter),
                                       variables=spec.variables)
        plan.meta = spec.meta
        plan.resume_after = resume_after
        server.index_usage.record_plan(info, plan)
        # Nothing looks inside the documents: hand the stored bytes to the cursor untouched.
        passthrough = raw_ok and spec.match is None and not spec.sort and spec.project is None
        docs = interrupt.checked(C.plan_docs(server.engine, info, plan, stats=stats, raw=passthrough))
    if in_min_max is not None:
        docs = filter(in_min_max, docs)
    docs = spec.fetch_filter(docs, plan)
    # skip/limit are int64s: a sum past sys.maxsize means "no limit" in practice
    stop = spec.skip + spec.limit if spec.limit and spec.skip + spec.limit <= sys.maxsize else None
    if spec.sort and not plan.provides_sort:
        allow_disk = allow_disk_use_default(server) if spec.allow_disk is None else spec.allow_disk
        docs = _lazy_sorted(docs, spec.sort, stop, allow_disk,
                                server.params["internalQueryMaxBlockingSortMemoryUsageBytes"], spec.collation, spec.meta)
        if not allow_disk and in_min_max is None and not spec.hint and not C.is_buckets_collection(spec.name, info):
            docs = _sorting_plan_on_memory_limit(docs, server, spec, info, stats)
    if spec.skip or spec.limit:
        docs = itertools.islice(docs, min(spec.skip, sys.maxsize), stop)
    if spec.project is not None:
        docs = map(spec.project, docs)
    return ReadResult(docs, plan, [], stats, None, ns, spec.filter)


def _sorting_plan_on_memory_limit(sorted_docs: Iterator[dict], server: ServerState, spec: FindSpec, info,
                                  stats: dict) -> Iterator[dict]:
    """A find's blocking sort, or — when it outgrows the memory limit (292, before it hands on
    anything: a sort reads all its input first) — the same find through an index that gives the sort
    order. mongod's planner also enumerates such a plan (a whole-index scan providing the sort) and its
    multi-planner drops a candidate that fails in its trial, so the sort-providing plan answers
    (sortg.js); without one the 292 stands."""
    try:
        first = next(sorted_docs)
    except StopIteration:
        return
    except MongoError as error:
        if error.code != ErrorCode.QueryExceededMemoryLimitNoDiskUseAllowed:
            raise
        plan = _sort_providing_plan(spec, info)
        if plan is None:
            raise
        yield from spec.fetch_filter(interrupt.checked(C.plan_docs(server.engine, info, plan, stats=stats)), plan)
        return
    yield first
    yield from sorted_docs


def _sort_providing_plan(spec: FindSpec, info) -> Plan | None:
    """A plan for ``spec`` through a plain ascending/descending index that yields its sort order (the
    first such index in catalog order), or None."""
    indexes = list(info.indexes)
    for index in indexes:
        if index.get("sparse") or index.get("partialFilterExpression") or index.get("hidden") or \
                not all(is_number(v) for v in index["key"].values()):
            continue
        plan = planner.choose_plan(indexes, spec.filter, spec.sort, index["name"], multikey_default=info.clustered,
                                   collation=spec.collation, cluster=cluster_info(info), variables=spec.variables)
        if plan.provides_sort:
            plan.meta = spec.meta
            return plan
    return None


def _buckets_natural_scan(server: ServerState, db: str, spec: FindSpec, info, resume_after: bytes | None):
    """A find on ``system.buckets.X``: bucket documents (open buckets included) in ``$natural`` order,
    forward or backward, resumable by record id, with ``$recordId`` when the find asks for it. An index
    hint is checked (2 BadValue for a missing index); the read stays a clustered scan, keeping only the
    buckets the hinted index holds (a sparse, partial or geo index leaves some out)."""
    hint = spec.hint
    hinted = None
    if hint not in (None, {}, "") and not (isinstance(hint, dict) and "$natural" in hint):
        hinted = planner.find_hinted_index(list(info.indexes), hint)  # 2 BadValue for a missing index
    reverse = isinstance(hint, dict) and "$natural" in hint and key_direction(hint["$natural"]) < 0
    # unhinted, the clustered order gives a sort on {_id: ±1} (as for any clustered collection)
    direction = clustered_range.sort_direction(spec.sort) if hint in (None, {}, "") and \
        spec.collation is None else 0
    if direction:
        reverse = direction < 0
    records = ts_view.bucket_records(server, db, spec.name, reverse=reverse, after=resume_after)
    if hinted is not None and may_leave_out(hinted):  # a hinted scan returns only the buckets the index holds
        records = ((rid, doc) for rid, doc in records if holds(hinted, doc))
    if isinstance(spec.meta, C.RecordIdMeta):
        docs = ({**doc, "$recordId": C.record_id_value(rid, True)} for rid, doc in records)
    else:
        docs = (doc for _, doc in records)
    if spec.filter and pipeline_mod.has_near(spec.filter):
        # $near / $nearSphere search the buckets' geo index of the meta field in mongod (291 without
        # one) and hand the buckets on nearest first; here no index holds the buckets, so the same
        # search runs over them all (special_reads.near_over)
        plan = planner.choose_plan(list(info.indexes), spec.filter, None, None, collation=spec.collation,
                                   variables=spec.variables)
        if plan.kind == "GEO_NEAR":
            plan.meta = spec.meta
            return plan, interrupt.checked(special_reads.near_over(plan, docs))
    return Plan("COLLSCAN", natural_reverse=reverse, provides_sort=bool(direction)), interrupt.checked(docs)


def _examined(docs: Iterator[dict], stats: dict) -> Iterator[dict]:
    """``docs`` of a ``system.buckets.*`` scan, each counted into ``stats["docs"]`` as it is handed on
    (what explain reports as the COLLSCAN's docsExamined, as for any collection's scan)."""
    stats.setdefault("docs", 0)
    for doc in docs:
        stats["docs"] += 1
        yield doc


def _lazy_sorted(docs, sort_spec, limit, allow_disk, memory_limit, collation=None, meta=None) -> Iterator[dict]:
    """Sort on first pull (so building the cursor does no work until the first batch)."""
    yield from sort_mod.sort_documents(docs, sort_spec, limit=limit, allow_disk_use=allow_disk,
                                   memory_limit=memory_limit, collation=collation, meta=meta)



# --------------------------------------------------------------------------------------------------
# write statements
# --------------------------------------------------------------------------------------------------


def run_count_scan(engine, info, scan: CountScan, skip: int, limit: int) -> tuple[int, int, int]:
    """(documents counted, keys examined, documents met) of a COUNT_SCAN under mongod's COUNT stage:
    every entry read is a key examined, and so is the read that finds the interval's end (mongod's
    count scan counts its last, empty step); ``skip`` entries are passed first; the count stops as soon
    as it reaches ``limit`` (nothing more read)."""
    iv = scan.plan.intervals[0]
    index = scan.plan.index
    assert index is not None  # (count_scan_of)
    seen: set[bytes] | None = set() if scan.dedup else None
    keys = met = counted = 0
    for _key, rid in interrupt.checked(engine.index_scan_stream(
            info.ns, index["name"], iv.lo, iv.hi, lo_inclusive=iv.lo_incl, hi_inclusive=iv.hi_incl)):
        keys += 1
        if seen is not None:
            rid = bytes(rid)
            if rid in seen:
                continue
            seen.add(rid)
        met += 1
        if met > skip:
            counted += 1
            if limit and counted >= limit:
                return counted, keys, met
    return counted, keys + 1, met


def matches_in_txn(w, info, flt: dict, match, *, hint=None, multi: bool, sort=None,
                   collation=None, variables: dict | None = None, meta=None, facts: ReadFacts | None = None,
                   table_scan: bool = True) -> list[tuple[bytes, dict]]:
    """Matching (rid, doc) pairs, read inside the write transaction, fully materialized (so the
    writes that follow never run under an open scan). ``match``: ``flt`` compiled (with ``variables``
    and ``collation``); a fetched document is tested only against what the plan's index bounds leave
    undecided (``fetch_filter.fetched_predicate``). ``collation``: the statement's (planning, sort).
    ``meta``: the read's DocMeta when the statement reads metadata (findAndModify's textScore sort or
    projection): the plan carries it (a $text scan notes each score), the sort reads it, and every
    match is read before the sort (a score is known only once its document was scanned).
    ``facts`` (findAndModify's profile): gets the plan, and its ``stats`` the keys and documents the
    scan examined up to the match it stopped at. ``table_scan``: as ``planner.choose_plan``'s."""
    plan = planner.choose_plan(list(info.indexes), flt, sort, hint, multikey_default=info.clustered,
                               allow_or=True, collation=collation, cluster=cluster_info(info), id_lookup=True,
                               table_scan=table_scan)
    if meta is not None:
        plan.meta = meta
    match = fetched_predicate(plan, flt, match, variables=variables, collation=collation)
    stats = None
    if facts is not None:
        facts.plan = plan
        stats = facts.stats = facts.stats if facts.stats is not None else {}
    out = []
    gen = C.docs_in_txn(w, info, plan, stats)
    try:
        for rid, doc in gen:
            if match is None or match(doc):
                out.append((rid, doc))
                if not multi and not sort:
                    break
    finally:
        gen.close()
    if sort and out:
        by_id = {id(d): rid for rid, d in out}
        docs = sort_mod.sort_documents([d for _, d in out], sort, limit=None if multi else 1, collation=collation,
                                       meta=meta)
        out = [(by_id[id(d)], d) for d in docs]
    return out


def key_count(keys: dict[str, list[bytes]]) -> int:
    """How many index entries ``keys`` (an ``index_keys`` map) writes: mongod's keysInserted /
    keysDeleted of one document."""
    n = 0
    for entries in keys.values():
        n += len(entries)
    return n


def _key_changes(old_keys: dict[str, list[bytes]], new_keys: dict[str, list[bytes]]
                 ) -> tuple[dict[str, list[bytes]], dict[str, list[bytes]]]:
    """(entries removed, entries added) per index by replacing a document whose keys were
    ``old_keys`` with one whose keys are ``new_keys``. Storage's update takes these as its old and new
    keys (it removes old - new and adds new - old: the same for disjoint sets), so the difference is
    made once; an index whose key list is unchanged — most, for most updates — costs one comparison."""
    removed: dict[str, list[bytes]] = {}
    added: dict[str, list[bytes]] = {}
    for name, new in new_keys.items():
        old = old_keys.get(name, [])
        if old == new:
            continue
        old_set, new_set = set(old), set(new)
        if gone := old_set - new_set:
            removed[name] = list(gone)
        if came := new_set - old_set:
            added[name] = list(came)
    if len(old_keys) != len(new_keys):  # (one index list for both: not expected)
        for name in old_keys.keys() - new_keys.keys():
            removed[name] = old_keys[name]
    return removed, added


def replace_doc(w, info, rid: bytes, old: dict, new: dict, validator,
                counts: dict[str, int] | None = None, *, from_oplog: bool = False):
    """Replace record ``rid`` (``old``) with ``new``: the one write of an updated document (every update
    path: update, findAndModify, a time-series meta update of its buckets, applyOps), with its storage
    rules, the buckets' stored form, the 16 MiB limit, the validator and the index keys. ``counts``
    (mongod's write metrics of the statement, given when the update may touch an indexed path): its
    keysInserted / keysDeleted grow by the index entries the replacement adds and removes. Returns the
    collection's current info (an index the document made multikey is flagged in it). ``from_oplog``:
    an applyOps write, stored without the storage rules (``C.check_storable``)."""
    if "_id" in old and "_id" in new:
        update_mod.check_replaced_id(new["_id"], old["_id"])  # (a contract re-checked at the write)
    if "_id" not in new:
        new = {"_id": old["_id"], **new}
    C.check_storable(new, from_oplog=from_oplog)
    if C.is_buckets_collection(info.name, info):
        new = stored_bucket(new)
    raw = C.encode_doc(new, "update")
    if validator is not None:
        validator.check(new, old_doc=old)
    try:
        old_keys = C.index_keys(info, old)
        info, new_keys = C.write_keys(w, info, new)
        removed, added = _key_changes(old_keys, new_keys)
        w.update(info, rid, raw, removed, added)
    except StorageError as e:
        raise storage_error(info, e, new) from None
    if counts is not None:
        counts["keysInserted"] = counts.get("keysInserted", 0) + key_count(added)
        counts["keysDeleted"] = counts.get("keysDeleted", 0) + key_count(removed)
    return info


def upsert_doc(w, ns: str, q: dict, upd, validator_bypass: bool, array_filters=None, *,
               supplied: Any = None, counts: dict[str, int] | None = None) -> dict:
    """Insert the document an unmatched upsert makes, as mongod's UpsertStage: the query's equalities
    (only ``_id`` for a replacement), then the update over them — or, with ``supplied`` (the parsed
    ``c.new`` of an ``upsertSupplied`` statement), that document applied as a classic update instead;
    ``_id`` first (generated when absent), then the insert's storage rules (top-level ``$`` names are
    stored: mongod 5.0+ validates an upserted document like an inserted one)."""
    from tidemark.core.collection import ensure_collection

    seed = update_mod.upsert_seed(q, only_id=upd.kind == "replacement")
    new, _ = update_mod.apply_update(seed, supplied or upd, is_upsert=True, query=q)
    if "_id" not in new:
        new = {"_id": ObjectId(), **new}
    elif next(iter(new)) != "_id":
        new = {"_id": new["_id"], **{k: v for k, v in new.items() if k != "_id"}}
    C.check_storable(new, top_level_dollar=True, from_oplog=upd.from_oplog)
    raw = C.encode_doc(new, "upsert")
    info = ensure_collection(w, ns)
    if C.is_buckets_collection(info.name, info):
        new = stored_bucket(new)
        raw = C.encode_doc(new, "upsert")
    validator = None if validator_bypass else C.validator_for(info)
    if validator is not None:
        validator.check(new)
    cap = capped.limits(info)
    try:
        info, keys = C.write_keys(w, info, new)
        w.insert(info, raw, keys)
    except StorageError as e:
        raise storage_error(info, e, new) from None
    if counts is not None:  # the statement's keysInserted (mongod's insert of the upserted document)
        counts["keysInserted"] = counts.get("keysInserted", 0) + key_count(keys)
    capped.trim(w, info, cap)
    return new


