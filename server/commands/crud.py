"""CRUD commands on regular collections: insert, find, update, delete, findAndModify, count, distinct.

Writes: every statement of one command runs inside ONE ``engine.write`` function on the writer
thread (one group commit). Matching, update application and index maintenance happen inside that
function, so a read-modify-write (``$inc``, upsert) is atomic with respect to other writers: two
concurrent upserts of the same key cannot both insert. Storage writes nothing for an operation that
raises DuplicateKey, so a unique violation never leaves a partial document or index entry behind.

Reads: ``find`` plans with ``server.query.plan`` (index or scan), always re-applies the full filter,
then sorts/skips/limits/projects lazily; views and time-series views go through
``aggregate.open_read``.
"""

from __future__ import annotations

import asyncio
import importlib
import itertools
import time
from collections.abc import Iterator
from typing import Any

from bson.objectid import ObjectId

from protocol.errors import ErrorCode, MongoError
from server.commands import _collection as C
from server.commands import aggregate as agg
from server.context import CommandSpec
from server.query import plan as planner
from storage.errors import DuplicateKey, StorageError


def _q(name: str):
    """A query-language module (imported on first use; query/ imports nothing of the commands)."""
    return importlib.import_module(f"server.query.{name}")


async def _write(ctx, fn):
    return await asyncio.wrap_future(ctx.server.engine.write(fn))


def _target(ctx, name: str):
    """(collection info, view doc) of ``ctx.db.name`` in one short read transaction."""
    with ctx.server.engine.read() as r:
        return r.get_collection(C.ns_of(ctx.db, name)), C.get_view(r, ctx.db, name)


def _statements(cmd: dict, field: str, command: str) -> list:
    if field not in cmd:
        raise MongoError(ErrorCode.IDLFailedToParse,
                         f"BSON field '{command}.{field}' is missing but a required field")
    items = cmd[field]
    if not isinstance(items, list):
        raise MongoError(ErrorCode.TypeMismatch,
                         f"BSON field '{command}.{field}' is the wrong type '{C.type_name(items)}', "
                         "expected type 'array'")
    if not items:
        raise MongoError(ErrorCode.InvalidLength, "Write batch sizes must be between 1 and 100000. Got 0 operations.")
    return items


def _count_op(ctx, name: str, n: int) -> None:
    """serverStatus opcounters: mongod counts writes per document/statement, not per command."""
    counters = getattr(ctx.server, "opcounters", None)
    if counters is not None:
        counters[name] = counters.get(name, 0) + n


def _storage_error(info, e: StorageError, doc: dict) -> MongoError:
    if isinstance(e, DuplicateKey):
        return C.duplicate_key_error(info, e.index_name, doc, e.key)
    return MongoError(e.code, e.message)


def _reply(n: int, errors: list, **extra) -> dict:
    reply: dict = {"n": n, **extra}
    if errors:
        reply["writeErrors"] = errors
    return reply


# --------------------------------------------------------------------------------------------------
# insert
# --------------------------------------------------------------------------------------------------


async def insert(ctx, cmd: dict) -> dict:
    C.check_no_transaction(cmd)
    name = C.collection_arg(cmd, "insert")
    docs = _statements(cmd, "documents", "insert")
    _count_op(ctx, "insert", len(docs))
    ordered = bool(cmd.get("ordered", True))
    bypass = bool(cmd.get("bypassDocumentValidation", False))
    info, view = await ctx.run_blocking(_target, ctx, name)
    if C.is_timeseries_view(view):
        return await C.timeseries_module().insert(ctx, cmd)
    if view is not None:
        raise C.view_write_error(ctx.db, name)
    if name.startswith(C.BUCKETS_PREFIX) and info is not None and info.clustered:
        return await C.timeseries_module().insert_buckets(ctx, cmd)
    if name == C.SYSTEM_VIEWS:
        raise MongoError(ErrorCode.InvalidNamespace, f"cannot write to '{ctx.db}.system.views'")
    prepared: list[tuple[int, dict | None, bytes | None, MongoError | None]] = []
    for i, doc in enumerate(docs):
        try:
            d = C.prepare_insert(doc)
            prepared.append((i, d, C.encode_doc(d), None))
        except MongoError as e:
            prepared.append((i, None, None, e))
            if ordered:
                break
    ns = C.ns_of(ctx.db, name)

    def fn(w):
        from server.commands.ddl import ensure_collection

        coll = ensure_collection(w, ns)
        validator = None if bypass else C.validator_for(coll)
        n, errors = 0, []
        for i, doc, raw, err in prepared:
            if err is None:
                try:
                    if validator is not None:
                        validator.check(doc)
                    w.insert(coll, raw, C.index_keys(coll, doc))
                    n += 1
                    continue
                except MongoError as e:
                    err = e
                except StorageError as e:
                    err = _storage_error(coll, e, doc)
            errors.append(err.to_write_error(i))
            if ordered:
                break
        return n, errors

    n, errors = await _write(ctx, fn)
    return _reply(n, errors)


# --------------------------------------------------------------------------------------------------
# find
# --------------------------------------------------------------------------------------------------

FIND_FIELDS = frozenset({
    "find", "filter", "projection", "sort", "skip", "limit", "batchSize", "singleBatch", "hint", "comment",
    "maxTimeMS", "allowDiskUse", "let", "collation", "min", "max", "returnKey", "showRecordId", "tailable",
    "awaitData", "noCursorTimeout", "allowPartialResults", "readConcern", "oplogReplay", "term",
    "readOnce", "allowSpeculativeMajorityRead", "$db", "lsid", "$clusterTime", "$readPreference",
    "txnNumber", "autocommit", "startTransaction", "apiVersion", "apiStrict", "apiDeprecationErrors",
    "$client", "$audit", "maxScan", "snapshot",
})


class FindSpec:
    """A parsed and validated find command."""

    def __init__(self, cmd: dict, command: str = "find"):
        for k in cmd:
            if k not in FIND_FIELDS:
                raise MongoError(ErrorCode.IDLUnknownField, f"BSON field '{command}.{k}' is an unknown field.")
        if "startTransaction" in cmd or "autocommit" in cmd:
            C.check_no_transaction(cmd)
        self.name = C.collection_arg(cmd, command)
        self.filter = C.doc_arg(cmd, "filter", command) or {}
        self.projection = C.doc_arg(cmd, "projection", command)
        self.sort = C.doc_arg(cmd, "sort", command) or None
        self.skip = C.int_arg(cmd, "skip", command, 0) or 0
        self.limit = C.int_arg(cmd, "limit", command, 0) or 0
        self.batch_size = C.int_arg(cmd, "batchSize", command)
        self.single_batch = bool(cmd.get("singleBatch", False))
        self.max_time = C.int_arg(cmd, "maxTimeMS", command)
        self.let = C.doc_arg(cmd, "let", command)
        self.allow_disk = bool(cmd.get("allowDiskUse", False))
        self.hint = cmd.get("hint")
        self.min = C.doc_arg(cmd, "min", command)
        self.max = C.doc_arg(cmd, "max", command)
        for label, v in (("skip", self.skip), ("limit", self.limit), ("batchSize", self.batch_size or 0)):
            if v < 0:
                raise MongoError(51024, f"BSON field '{label}' value must be >= 0, actual value '{v}'")
        if self.max_time is not None and self.max_time < 0:
            raise MongoError(ErrorCode.BadValue, "BSON field 'maxTimeMS' value must be >= 0")
        if self.hint is not None and not isinstance(self.hint, (str, dict)):
            raise MongoError(ErrorCode.FailedToParse, "hint must be either a string or nested object")
        for unsupported in ("returnKey", "showRecordId", "tailable", "awaitData"):
            if cmd.get(unsupported):
                if unsupported in ("tailable", "awaitData"):
                    raise MongoError(ErrorCode.BadValue,
                                     "error processing query: tailable cursor requested on non capped collection")
                raise MongoError(ErrorCode.CommandNotSupported, f"find option '{unsupported}' is not supported by Tidemark")
        collation = cmd.get("collation")
        if collation and collation.get("locale", "simple") != "simple":
            raise MongoError(ErrorCode.CommandNotSupported, "collations other than 'simple' are not supported by Tidemark")
        if (self.min is not None or self.max is not None) and not self.hint:
            raise MongoError(51173, "When using min()/max() a hint of which index to use must be provided")
        match, project, sort = _q("match"), _q("project") if cmd.get("projection") else None, _q("sort")
        # compile now: parse errors surface before any work (and the callables are reused per document)
        self.match = match.compile_filter(self.filter, variables=self.let) if self.filter else None
        self.project = (project.compile_projection(self.projection, filter=self.filter, variables=self.let)
                        if self.projection else None)
        if self.sort and "$natural" in self.sort:
            self.hint = {"$natural": self.sort["$natural"]}
            self.sort = {k: v for k, v in self.sort.items() if k != "$natural"} or None
        if self.sort:
            sort.parse_sort(self.sort)

    def as_pipeline(self) -> list[dict]:
        """The equivalent aggregation pipeline (how mongod runs a find on a view)."""
        stages: list[dict] = []
        if self.filter:
            stages.append({"$match": self.filter})
        if self.sort:
            stages.append({"$sort": self.sort})
        if self.skip:
            stages.append({"$skip": self.skip})
        if self.limit:
            stages.append({"$limit": self.limit})
        if self.projection:
            stages.append({"$project": self.projection})
        return stages


def _min_max_plan(spec: FindSpec, info) -> planner.Plan:
    index = planner.find_hinted_index(list(info.indexes), spec.hint)
    fields, directions = planner.key_fields(index["key"])
    from storage.keys import encode_key

    def bound(doc):
        if doc is None:
            return None
        if list(doc.keys()) != list(fields):
            raise MongoError(51176, "min and max must have the same field names as the index key pattern")
        return encode_key(list(doc.values()), directions)

    iv = planner.Interval(bound(spec.min), bound(spec.max), True, False)
    return planner.Plan("IXSCAN", index=index, intervals=[iv], bounds_desc={})


def run_find(server, spec: FindSpec, db: str, ctx=None, budget: agg.TimeBudget | None = None,
             raw_ok: bool = False) -> agg.ReadResult:
    """The lazy result stream of a find (synchronous; called in the thread pool)."""
    with server.engine.read() as r:
        info = r.get_collection(C.ns_of(db, spec.name))
        view = C.get_view(r, db, spec.name) if info is None else None
    if view is not None or (info is not None and info.clustered and spec.name.startswith(C.BUCKETS_PREFIX)):
        return agg.open_read(server, db, spec.name, spec.as_pipeline(), variables=spec.let,
                             allow_disk_use=spec.allow_disk, ctx=ctx, budget=budget)
    ns = C.ns_of(db, spec.name)
    stats: dict = {}
    if info is None:
        return agg.ReadResult(iter(()), planner.Plan("COLLSCAN"), [], stats, None, ns)
    if spec.min is not None or spec.max is not None:
        plan = _min_max_plan(spec, info)
    else:
        plan = planner.choose_plan(list(info.indexes), spec.filter, spec.sort, spec.hint)
    # Nothing looks inside the documents: hand the stored bytes to the cursor untouched.
    passthrough = raw_ok and spec.match is None and not spec.sort and spec.project is None
    docs: Iterator[dict] = C.plan_docs(server.engine, info, plan, stats=stats, raw=passthrough)
    if budget is not None:
        docs = budget.inner(docs)
    if spec.match is not None:
        docs = filter(spec.match, docs)
    if spec.sort and not plan.provides_sort:
        top = spec.skip + spec.limit if spec.limit else None
        docs = _lazy_sorted(docs, spec.sort, top, spec.allow_disk)
    if spec.skip or spec.limit:
        docs = itertools.islice(docs, spec.skip, spec.skip + spec.limit if spec.limit else None)
    if spec.project is not None:
        docs = map(spec.project, docs)
    return agg.ReadResult(docs, plan, [], stats, None, ns, spec.filter)


def _lazy_sorted(docs, sort_spec, limit, allow_disk) -> Iterator[dict]:
    """Sort on first pull (so building the cursor does no work until the first batch)."""
    sort = _q("sort")
    yield from sort.sort_documents(docs, sort_spec, limit=limit, allow_disk_use=allow_disk)


async def find(ctx, cmd: dict) -> dict:
    spec = FindSpec(cmd)
    ns = C.ns_of(ctx.db, spec.name)
    budget = agg.TimeBudget(spec.max_time)
    result = await ctx.run_blocking(run_find, ctx.server, spec, ctx.db, ctx, budget, True)
    docs = budget.outer(result.docs)
    batch_size = spec.batch_size
    single = spec.single_batch
    if spec.limit and (batch_size is None or batch_size > spec.limit) and spec.limit <= 101:
        batch_size = spec.limit
    from server.cursors import cursor_reply

    return await cursor_reply(ctx, ns, docs, batch_size, single, first=True)


async def explain_find(ctx, cmd: dict, verbosity: str) -> dict:
    spec = FindSpec(cmd)

    def work():
        res = run_find(ctx.server, spec, ctx.db, ctx)
        t0 = time.monotonic()
        n = sum(1 for _ in res.docs) if verbosity != "queryPlanner" else None
        return res, n, int((time.monotonic() - t0) * 1000)

    def is_view():
        with ctx.server.engine.read() as r:
            return C.get_view(r, ctx.db, spec.name) is not None

    if await ctx.run_blocking(is_view):  # mongod explains the aggregation a find on a view becomes
        return await agg.explain_aggregate(ctx, ctx.db, spec.name, spec.as_pipeline(), cmd, verbosity)
    res, n, millis = await ctx.run_blocking(work)
    win = res.plan.explain(has_sort=bool(spec.sort), filter=spec.filter if res.plan.kind == "IXSCAN" else
                           spec.filter)
    if spec.skip:
        win = {"stage": "SKIP", "skipAmount": spec.skip, "inputStage": win}
    if spec.limit:
        win = {"stage": "LIMIT", "limitAmount": spec.limit, "inputStage": win}
    if spec.projection:
        win = {"stage": "PROJECTION_DEFAULT", "transformBy": spec.projection, "inputStage": win}
    reply = {"explainVersion": "1",
             "queryPlanner": {"namespace": res.namespace, "indexFilterSet": False, "parsedQuery": spec.filter,
                              "maxIndexedOrSolutionsReached": False, "maxIndexedAndSolutionsReached": False,
                              "maxScansToExplodeReached": False, "winningPlan": win, "rejectedPlans": []},
             "command": {k: v for k, v in cmd.items() if k != "$db"}, "serverInfo": agg._server_info()}
    if n is not None:
        reply["executionStats"] = agg._exec_stats(n, millis, res.stats)
    return reply


# --------------------------------------------------------------------------------------------------
# update / delete (shared statement machinery)
# --------------------------------------------------------------------------------------------------


def _matches_in_txn(w, info, flt: dict, match, *, hint=None, multi: bool, sort=None) -> list[tuple[bytes, dict]]:
    """Matching (rid, doc) pairs, read inside the write transaction, fully materialized (so the
    writes that follow never run under an open scan)."""
    plan = planner.choose_plan(list(info.indexes), flt, sort, hint)
    out = []
    gen = C.docs_in_txn(w, info, plan)
    try:
        for rid, doc in gen:
            if match is None or match(doc):
                out.append((rid, doc))
                if not multi and not sort:
                    break
    finally:
        gen.close()
    if sort and out:
        sort_mod = _q("sort")
        by_id = {id(d): rid for rid, d in out}
        docs = sort_mod.sort_documents([d for _, d in out], sort, limit=None if multi else 1)
        out = [(by_id[id(d)], d) for d in docs]
    return out


def _replace_doc(w, info, rid: bytes, old: dict, new: dict, validator) -> None:
    if new.get("_id", C.MISSING_ID) != old.get("_id", C.MISSING_ID) and "_id" in old:
        raise MongoError(ErrorCode.ImmutableField,
                         "After applying the update, the (immutable) field '_id' was found to have been altered "
                         f"to _id: {C.format_value(new.get('_id'))}")
    if "_id" not in new:
        new = {"_id": old["_id"], **new}
    C.check_storable(new)
    raw = C.encode_doc(new)
    if validator is not None:
        validator.check(new, old_doc=old)
    try:
        w.update(info, rid, raw, C.index_keys(info, old), C.index_keys(info, new))
    except StorageError as e:
        raise _storage_error(info, e, new) from None


def _upsert_doc(w, ns: str, q: dict, upd, validator_bypass: bool, array_filters=None) -> dict:
    from server.commands.ddl import ensure_collection

    update = _q("update")
    seed = update.upsert_seed(q)
    new, _ = update.apply_update(seed, upd, is_upsert=True, query=q)
    if "_id" not in new:
        new = {"_id": ObjectId(), **new}
    elif next(iter(new)) != "_id":
        new = {"_id": new["_id"], **{k: v for k, v in new.items() if k != "_id"}}
    C.check_storable(new)
    raw = C.encode_doc(new)
    info = ensure_collection(w, ns)
    validator = None if validator_bypass else C.validator_for(info)
    if validator is not None:
        validator.check(new)
    try:
        w.insert(info, raw, C.index_keys(info, new))
    except StorageError as e:
        raise _storage_error(info, e, new) from None
    return new


class UpdateStatement:
    def __init__(self, st: Any, command: str = "update", let: dict | None = None):
        if not isinstance(st, dict):
            raise MongoError(ErrorCode.TypeMismatch, f"BSON field '{command}.updates' elements must be objects")
        for k in ("q", "u"):
            if k not in st:
                raise MongoError(ErrorCode.IDLFailedToParse,
                                 f"BSON field 'update.updates.{k}' is missing but a required field")
        if not isinstance(st["q"], dict):
            raise MongoError(ErrorCode.TypeMismatch,
                             "BSON field 'update.updates.q' is the wrong type, expected type 'object'")
        match, update = _q("match"), _q("update")
        self.q = st["q"]
        self.multi = bool(st.get("multi", False))
        self.upsert = bool(st.get("upsert", False))
        self.hint = st.get("hint") or None
        self.sort = st.get("sort") or None
        af = st.get("arrayFilters")
        self.update = update.parse_update(st["u"], array_filters=af)
        if self.multi and self.update.kind == "replacement":
            raise MongoError(ErrorCode.FailedToParse, "multi update is not supported for replacement-style update")
        variables = {**(let or {}), **(st.get("c") or {})} or None
        self.match = match.compile_filter(self.q, variables=variables) if self.q else None


async def update(ctx, cmd: dict) -> dict:
    C.check_no_transaction(cmd)
    name = C.collection_arg(cmd, "update")
    raw_statements = _statements(cmd, "updates", "update")
    _count_op(ctx, "update", len(raw_statements))
    ordered = bool(cmd.get("ordered", True))
    bypass = bool(cmd.get("bypassDocumentValidation", False))
    info, view = await ctx.run_blocking(_target, ctx, name)
    if C.is_timeseries_view(view):
        return await C.timeseries_module().update(ctx, cmd)
    if view is not None:
        raise C.view_write_error(ctx.db, name)
    statements: list[UpdateStatement | MongoError] = []
    for st in raw_statements:
        try:
            statements.append(UpdateStatement(st, let=C.doc_arg(cmd, "let", "update")))
        except MongoError as e:
            statements.append(e)
            if ordered:
                break
    ns = C.ns_of(ctx.db, name)

    def fn(w):
        update_mod = _q("update")
        n = modified = 0
        errors: list = []
        upserted: list = []
        for i, st in enumerate(statements):
            try:
                if isinstance(st, MongoError):
                    raise st
                coll = w.get_collection(ns)
                matches = _matches_in_txn(w, coll, st.q, st.match, hint=st.hint, multi=st.multi,
                                          sort=st.sort) if coll is not None else []
                if not matches:
                    if st.upsert:
                        new = _upsert_doc(w, ns, st.q, st.update, bypass)
                        upserted.append({"index": i, "_id": new["_id"]})
                        n += 1
                    continue
                validator = None if bypass else C.validator_for(coll)
                for rid, doc in matches:
                    new, changed = update_mod.apply_update(doc, st.update, query=st.q)
                    n += 1
                    if changed:
                        _replace_doc(w, coll, rid, doc, new, validator)
                        modified += 1
            except MongoError as e:
                errors.append(e.to_write_error(i))
                if ordered:
                    break
        return n, modified, errors, upserted

    n, modified, errors, upserted = await _write(ctx, fn)
    reply = _reply(n, errors, nModified=modified)
    if upserted:
        reply["upserted"] = upserted
        reply["nModified"] = modified
    return reply


def _check_delete_shape(st: Any) -> None:
    """Statement shape errors fail the whole command (mongod parses the batch up front)."""
    if isinstance(st, dict) and "limit" in st:
        limit = st["limit"]
        if isinstance(limit, bool) or not isinstance(limit, (int, float)) or limit not in (0, 1):
            raise MongoError(ErrorCode.FailedToParse, f"The limit field in delete objects must be 0 or 1. Got {limit}")


async def delete(ctx, cmd: dict) -> dict:
    C.check_no_transaction(cmd)
    name = C.collection_arg(cmd, "delete")
    raw_statements = _statements(cmd, "deletes", "delete")
    _count_op(ctx, "delete", len(raw_statements))
    ordered = bool(cmd.get("ordered", True))
    info, view = await ctx.run_blocking(_target, ctx, name)
    if C.is_timeseries_view(view):
        return await C.timeseries_module().delete(ctx, cmd)
    if view is not None:
        raise C.view_write_error(ctx.db, name)
    match_mod = _q("match")
    parsed: list = []
    for st in raw_statements:
        _check_delete_shape(st)
        try:
            if not isinstance(st, dict):
                raise MongoError(ErrorCode.TypeMismatch, "BSON field 'delete.deletes' elements must be objects")
            for k in ("q", "limit"):
                if k not in st:
                    raise MongoError(ErrorCode.IDLFailedToParse,
                                     f"BSON field 'delete.deletes.{k}' is missing but a required field")
            if not isinstance(st["q"], dict):
                raise MongoError(ErrorCode.TypeMismatch,
                                 "BSON field 'delete.deletes.q' is the wrong type, expected type 'object'")
            limit = st["limit"]
            if isinstance(limit, bool) or not isinstance(limit, (int, float)) or limit not in (0, 1):
                raise MongoError(ErrorCode.FailedToParse,
                                 f"The limit field in delete objects must be 0 or 1. Got {limit}")
            variables = {**(C.doc_arg(cmd, "let", "delete") or {}), **(st.get("c") or {})} or None
            m = match_mod.compile_filter(st["q"], variables=variables) if st["q"] else None
            parsed.append((st["q"], m, int(limit), st.get("hint") or None))
        except MongoError as e:
            parsed.append(e)
            if ordered:
                break
    ns = C.ns_of(ctx.db, name)

    def fn(w):
        n, errors = 0, []
        for i, st in enumerate(parsed):
            try:
                if isinstance(st, MongoError):
                    raise st
                q, m, limit, hint = st
                coll = w.get_collection(ns)
                if coll is None:
                    continue
                for rid, doc in _matches_in_txn(w, coll, q, m, hint=hint, multi=limit == 0):
                    w.delete(coll, rid, C.index_keys(coll, doc))
                    n += 1
            except MongoError as e:
                errors.append(e.to_write_error(i))
                if ordered:
                    break
        return n, errors

    n, errors = await _write(ctx, fn)
    return _reply(n, errors)


# --------------------------------------------------------------------------------------------------
# findAndModify
# --------------------------------------------------------------------------------------------------


async def find_and_modify(ctx, cmd: dict) -> dict:
    C.check_no_transaction(cmd)
    command = "findAndModify" if "findAndModify" in cmd else "findandmodify"
    name = C.collection_arg(cmd, command)
    query = C.doc_arg(cmd, "query", command) or {}
    sort_spec = C.doc_arg(cmd, "sort", command) or None
    fields = C.doc_arg(cmd, "fields", command)
    remove = bool(cmd.get("remove", False))
    upsert = bool(cmd.get("upsert", False))
    return_new = bool(cmd.get("new", False))
    bypass = bool(cmd.get("bypassDocumentValidation", False))
    has_update = "update" in cmd and cmd["update"] is not None
    if remove and has_update:
        raise MongoError(ErrorCode.FailedToParse, "Cannot specify both an update and remove=true")
    if not remove and not has_update:
        raise MongoError(ErrorCode.FailedToParse, "Either an update or remove=true must be specified")
    if remove and upsert:
        raise MongoError(ErrorCode.FailedToParse, "Cannot specify both upsert=true and remove=true ")
    if remove and return_new:
        raise MongoError(ErrorCode.FailedToParse,
                         "Cannot specify both new=true and remove=true; 'remove' always returns the deleted document")
    info, view = await ctx.run_blocking(_target, ctx, name)
    if C.is_timeseries_view(view):
        return await C.timeseries_module().find_and_modify(ctx, cmd)
    if view is not None:
        raise C.view_write_error(ctx.db, name)
    match_mod, sort_mod = _q("match"), _q("sort")
    update_mod = _q("update") if has_update else None
    project_mod = _q("project") if fields else None
    let = C.doc_arg(cmd, "let", command)
    m = match_mod.compile_filter(query, variables=let) if query else None
    if sort_spec:
        sort_mod.parse_sort(sort_spec)
    upd = update_mod.parse_update(cmd["update"], array_filters=cmd.get("arrayFilters")) if has_update else None
    proj = project_mod.compile_projection(fields, filter=query) if fields else None
    hint = cmd.get("hint") or None
    ns = C.ns_of(ctx.db, name)

    def fn(w):
        coll = w.get_collection(ns)
        matches = _matches_in_txn(w, coll, query, m, hint=hint, multi=False, sort=sort_spec) if coll else []
        if remove:
            if not matches:
                return {"n": 0}, None
            rid, doc = matches[0]
            w.delete(coll, rid, C.index_keys(coll, doc))
            return {"n": 1}, doc
        if not matches:
            if not upsert:
                return {"n": 0, "updatedExisting": False}, None
            new = _upsert_doc(w, ns, query, upd, bypass)
            return {"n": 1, "updatedExisting": False, "upserted": new["_id"]}, (new if return_new else None)
        rid, doc = matches[0]
        new, changed = update_mod.apply_update(doc, upd, query=query)
        if changed:
            _replace_doc(w, coll, rid, doc, new, None if bypass else C.validator_for(coll))
        return {"n": 1, "updatedExisting": True}, (new if return_new else doc)

    last, value = await _write(ctx, fn)
    if value is not None and proj is not None:
        value = proj(value)
    return {"lastErrorObject": last, "value": value}


# --------------------------------------------------------------------------------------------------
# count / distinct
# --------------------------------------------------------------------------------------------------


async def count(ctx, cmd: dict) -> dict:
    name = C.collection_arg(cmd, "count")
    query = C.doc_arg(cmd, "query", "count") or {}
    skip = C.int_arg(cmd, "skip", "count", 0) or 0
    limit = abs(C.int_arg(cmd, "limit", "count", 0) or 0)
    if skip < 0:
        raise MongoError(ErrorCode.BadValue, "skip value is negative in count query")
    max_time = C.int_arg(cmd, "maxTimeMS", "count")
    hint = cmd.get("hint") or None
    budget = agg.TimeBudget(max_time)

    def work():
        with ctx.server.engine.read() as r:
            info = r.get_collection(C.ns_of(ctx.db, name))
            view = C.get_view(r, ctx.db, name) if info is None else None
            if info is not None and not query and hint is None:
                n = r.count(info)
                n = max(0, n - skip)
                return min(n, limit) if limit else n
        if view is not None:
            pipeline: list[dict] = [{"$match": query}] if query else []
            if skip:
                pipeline.append({"$skip": skip})
            if limit:
                pipeline.append({"$limit": limit})
            docs = agg.open_read(ctx.server, ctx.db, name, pipeline, ctx=ctx, budget=budget).docs
        else:
            spec = FindSpec({"find": name, "filter": query, "skip": skip, "limit": limit, "hint": hint,
                             "$db": ctx.db})
            docs = run_find(ctx.server, spec, ctx.db, ctx, budget).docs
        return sum(1 for _ in budget.outer(docs))

    return {"n": await ctx.run_blocking(work)}


async def distinct(ctx, cmd: dict) -> dict:
    name = C.collection_arg(cmd, "distinct")
    key = cmd.get("key")
    if "key" not in cmd:
        raise MongoError(ErrorCode.IDLFailedToParse, "BSON field 'distinct.key' is missing but a required field")
    if not isinstance(key, str):
        raise MongoError(ErrorCode.TypeMismatch,
                         f"BSON field 'distinct.key' is the wrong type '{C.type_name(key)}', expected type 'string'")
    if key == "" or key.startswith("$"):
        raise MongoError(ErrorCode.BadValue if key else 40352,
                         "FieldPath cannot be constructed with empty string" if not key else
                         "FieldPath field names may not start with '$'. Consider using $getField or $setField.")
    query = C.doc_arg(cmd, "query", "distinct") or {}
    max_time = C.int_arg(cmd, "maxTimeMS", "distinct")
    budget = agg.TimeBudget(max_time)

    def work():
        from server.query.values import sort_key
        from storage.keys import encode_value

        with ctx.server.engine.read() as r:
            view = C.get_view(r, ctx.db, name)
        if view is not None:
            docs = agg.open_read(ctx.server, ctx.db, name, [{"$match": query}] if query else [], ctx=ctx,
                                 budget=budget).docs
        else:
            spec = FindSpec({"find": name, "filter": query, "$db": ctx.db, "hint": cmd.get("hint")})
            docs = run_find(ctx.server, spec, ctx.db, ctx, budget).docs
        seen: dict[bytes, Any] = {}
        parts = key.split(".")
        for doc in budget.outer(docs):
            for v in _distinct_values(doc, parts):
                seen.setdefault(encode_value(v), v)
        return sorted(seen.values(), key=sort_key)

    return {"values": await ctx.run_blocking(work)}


def _distinct_values(value: Any, parts: list[str], depth: int = 0) -> Iterator[Any]:
    """Values at a dotted path, expanding arrays like mongod's distinct (leaf arrays give elements)."""
    if depth == len(parts):
        if isinstance(value, list):
            yield from value
        else:
            yield value
        return
    if isinstance(value, dict):
        if parts[depth] in value:
            yield from _distinct_values(value[parts[depth]], parts, depth + 1)
    elif isinstance(value, list):
        part = parts[depth]
        if part.isdigit() and int(part) < len(value):
            yield from _distinct_values(value[int(part)], parts, depth + 1)
            return
        for element in value:
            if isinstance(element, dict):
                yield from _distinct_values(element, parts, depth)


# --------------------------------------------------------------------------------------------------
# explain of count / distinct / update / delete / findAndModify
# --------------------------------------------------------------------------------------------------


async def explain_other(ctx, command: str, cmd: dict, verbosity: str) -> dict:
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

    def work():
        with ctx.server.engine.read() as r:
            info = r.get_collection(C.ns_of(ctx.db, name))
        if info is None:
            return {"stage": "EOF"}
        p = planner.choose_plan(list(info.indexes), flt, None, None)
        return {"stage": stage, "inputStage": p.explain(filter=flt)}

    win = await ctx.run_blocking(work)
    return {"explainVersion": "1",
            "queryPlanner": {"namespace": C.ns_of(ctx.db, name), "indexFilterSet": False, "parsedQuery": flt,
                             "winningPlan": win, "rejectedPlans": []},
            "command": {k: v for k, v in cmd.items() if k != "$db"}, "serverInfo": agg._server_info()}


COMMANDS = [
    CommandSpec("insert", insert, help="insert documents (ordered/unordered; per-document writeErrors)",
                counter=None),
    CommandSpec("find", find, help="query a collection or view with filter/sort/projection/skip/limit",
                counter="query"),
    CommandSpec("update", update, help="update documents (operators, replacement, pipeline, upsert, multi)",
                counter=None),
    CommandSpec("delete", delete, help="delete documents (limit 0 or 1 per statement)", counter=None),
    CommandSpec("findAndModify", find_and_modify, help="atomically find and update or remove one document",
                aliases=("findandmodify",)),
    CommandSpec("count", count, help="count documents matching a query"),
    CommandSpec("distinct", distinct, help="distinct values of a field among matching documents"),
]
