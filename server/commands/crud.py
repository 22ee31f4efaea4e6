"""CRUD commands on regular collections: insert, find, update, delete, findAndModify, count, distinct.

Writes run as ``engine.write`` functions on the writer thread (one group commit each) of bounded
work: an insert 2,000 documents per function, an update/delete as many statements as fit one slice
budget, a long multi statement continuing in the next function (``_write_slices``); killOp and
maxTimeMS are checked between functions. Matching, update application and index maintenance happen
inside a function, so a read-modify-write (``$inc``, upsert) is atomic with respect to other
writers: two concurrent upserts of the same key cannot both insert. Storage writes nothing for an
operation that raises DuplicateKey, so a unique violation never leaves a partial document or index
entry behind.

Reads: ``find`` plans with ``tidemark.query.plan`` (index or scan), always re-applies the full filter,
then sorts/skips/limits/projects lazily; views and time-series views go through
``tidemark.collections.open_read`` (where the find spec, the read core and the write-statement
helpers live).
"""

from __future__ import annotations

import asyncio
import functools
import itertools
from collections.abc import Iterator
from typing import Any, NamedTuple

from bson.decimal128 import Decimal128

from tidemark import collections as access
from tidemark import special_reads
from tidemark.arguments import check_command
from tidemark.commands import _write_slices as slices
from tidemark.commands import cursors as cursor_commands
from tidemark.commands import timeseries as ts
from tidemark.commands import write_statements
from tidemark.context import FILTER_REQUEST_BYTES, CommandContext, CommandSpec, ServerState
from tidemark.core import capped, namespace
from tidemark.core import collection as C
from tidemark.cursors import ResumeTokens, cursor_reply
from tidemark.profiler import ReadFacts
from tidemark.protocol.codec import encode
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.protocol.messages import materialize
from tidemark.query import docmeta, expr_optimize
from tidemark.query import match as match_mod
from tidemark.query import project as project_mod
from tidemark.query import sort as sort_mod
from tidemark.query import update as update_mod
from tidemark.query.access_path import Plan
from tidemark.query.count_scan import count_scan_of
from tidemark.query.docmeta import comparison_key_value
from tidemark.query.index_keys import IndexKeyer, index_key_map_multikey, key_document, keyer_for
from tidemark.query.paths import set_path
from tidemark.query.plan import check_hint_type
from tidemark.query.values import compare, is_number
from tidemark.query.wildcard import WildcardKeyer
from tidemark.storage.errors import DuplicateKey, StorageError
from tidemark.storage.ranges import raw_range

# Documents written per writer-thread function by one insert (see insert()).
INSERT_SLICE = 2000
# The plan a count without a query reports: it reads the record store's count (mongod's planSummary).
_FAST_COUNT = Plan("RECORD_STORE_FAST_COUNT")
# The plan of a findAndModify on a missing collection (mongod's planSummary "EOF").
_EOF_PLAN = Plan("EOF")



async def _write(ctx: CommandContext, fn):
    return await asyncio.wrap_future(ctx.server.engine.write(fn))


def _target(ctx: CommandContext, name: str, collection_uuid=None) -> namespace.Namespace:
    """``ctx.db.name`` resolved (the command's one resolution; point lookups, no chain followed: a
    write on a view is refused) in one short read transaction; ``collection_uuid``: the command's."""
    with ctx.server.engine.read() as r:
        return namespace.lookup(r, ctx.db, name, follow=False, collection_uuid=collection_uuid)


def _failed_statements(error: MongoError, count: int, ordered: bool, **extra) -> dict:
    """The reply of a write whose statements all fail with ``error`` before any runs (mongod: each
    statement acquires the collection and fails; an ordered write stops at the first)."""
    return _reply(0, [error.to_write_error(i) for i in range(1 if ordered else count)], **extra)


def _check_write_namespace(db: str, name: str) -> None:
    """mongod's userAllowedWriteNS: a write names no system collection a client may not create
    (73 "Invalid system namespace") nor system.profile, which the profiler alone writes (73 "cannot
    write to <ns>"), nor one in a database whose name has a ``$`` (73 "Invalid namespace: <ns>"),
    before it looks the namespace up."""
    if name.startswith("system.") or "$" in db:
        C.check_write_name(db, name)


def _count_op(ctx: CommandContext, name: str, n: int) -> None:
    """serverStatus opcounters: mongod counts writes per document/statement, not per command."""
    counters = ctx.server.opcounters
    counters[name] = counters.get(name, 0) + n


def _count_update_shape(ctx: CommandContext, command: str, statement: dict) -> None:
    """serverStatus metrics.commands.<update|findAndModify>: a statement with an aggregation pipeline as its
    update, one with arrayFilters (mongod's UpdateMetrics, per statement of a parsed command)."""
    shapes = ctx.server.update_shapes[command]
    update = statement.get("u" if command == "update" else "update")
    if isinstance(update, list):
        shapes["pipeline"] += 1
        if command == "update":  # (and its stages: mongod's update command ticks them, findAndModify not)
            access.count_stages(ctx.server, update)
    if statement.get("arrayFilters") is not None:
        shapes["arrayFilters"] += 1


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


def _prepare_documents(docs: list, ordered: bool, indexes, from_oplog: bool = False) -> list[tuple]:
    """(index, document, BSON, error, precomputed keys, their number) per document: ``_id`` first,
    storage rules, empty timestamps filled, 16 MiB limit, and — when the collection exists — its index
    keys, computed here in the thread pool so the single writer thread only stores (the writer re-checks
    the index list is unchanged) and counts (keysInserted: one integer add per document). ``from_oplog``:
    an applyOps insert (``C.prepare_insert``)."""
    prepared: list[tuple] = []
    for i, doc in enumerate(docs):
        try:
            d = write_statements.fill_empty_timestamps(C.prepare_insert(doc, from_oplog=from_oplog))
            raw = C.encode_doc(d)
            keys = index_key_map_multikey(indexes, d) if indexes is not None else None
            prepared.append((i, d, raw, None, keys, access.key_count(keys[0]) if keys is not None else 0))
        except MongoError as e:
            prepared.append((i, None, None, e, None, 0))
            if ordered:
                break
    return prepared


async def insert(ctx: CommandContext, cmd: dict) -> dict:
    check_command(cmd, "insert", sequences=ctx.sequence_ids)
    ordered, bypass = write_statements.write_flags(cmd)
    name = C.collection_arg(cmd, "insert")
    _check_write_namespace(ctx.db, name)
    docs = await ctx.run_heavy(write_statements.insert_documents, cmd)  # parse, then dispatch
    reply = None
    try:
        reply = await _insert(ctx, cmd, name, docs, ordered, bypass)
        return reply
    finally:
        # mongod counts each document it tried: an ordered insert stops at its first failure
        if reply is not None and ordered and reply.get("writeErrors"):
            _count_op(ctx, "insert", int(reply["n"]) + 1)
        else:
            _count_op(ctx, "insert", len(docs))


async def _insert(ctx: CommandContext, cmd: dict, name: str, docs: Any, ordered: bool, bypass: bool) -> dict:
    try:
        # three point gets: cheaper inline than a hop to the thread pool
        resolved = _target(ctx, name, namespace.collection_uuid_arg(cmd, "insert"))
    except namespace.CollectionUUIDMismatch as mismatch:
        if mismatch.namespace.is_timeseries:  # mongod checks before any measurement: the command fails
            mismatch.message = f"time-series insert failed: {ctx.db}.{name} :: caused by :: {mismatch.message}"
            raise
        return _failed_statements(mismatch, len(docs), ordered)
    info, view = resolved.info, resolved.view
    if resolved.is_timeseries:
        return await ts.VIEW_COMMANDS["insert"](ctx, cmd, resolved)  # reads RawDocuments itself
    cmd["documents"] = docs = await ctx.run_heavy(materialize, docs)
    if view is not None:
        raise C.view_write_error(ctx.db, name)
    if C.is_buckets_collection(name, info):
        return await ts.BUCKETS_COMMANDS["insert"](ctx, cmd)
    # <db>.system.views takes client inserts like any collection (mongod 7.0 lists it among the legal
    # client system namespaces; its op observer loads what it can and never fails the insert): a bad
    # definition stored this way is what view commands later answer 182 InvalidViewDefinition for.
    indexes = info.indexes if info is not None else None
    prepared = await ctx.run_blocking(_prepare_documents, docs, ordered, indexes, ctx.from_oplog)  # off the loop
    if all(entry[3] is not None for entry in prepared):
        # mongod creates the collection only to write a batch of prepared documents: when every
        # document fails preparation (a regex, array or undefined _id...), nothing is created
        return _reply(0, [err.to_write_error(i) for i, _, _, err, _, _ in prepared])
    ns = C.ns_of(ctx.db, name)

    def fn(w, part):
        from tidemark.core.collection import ensure_collection

        try:
            coll = ensure_collection(w, ns)
        except StorageError as e:  # the implicit creation failed (28838: a non-capped local.oplog.*):
            # mongod's performInserts answers it as each document's write error (ordered: the first)
            error = MongoError(e.code, e.message)
            return 0, [error.to_write_error(entry[0]) for entry in part[:1 if ordered else None]], 0
        validator = None if bypass else C.validator_for(coll)
        same = indexes is not None and C.index_signature(coll.indexes) == C.index_signature(indexes)
        cap = capped.limits(coll)
        n, errors, inserted_keys = 0, [], 0
        for i, doc, raw, err, keys, key_count in part:
            if err is None:
                try:
                    if validator is not None:
                        validator.check(doc)
                    coll, keys = C.write_keys(w, coll, doc, keys if same else None)
                    w.insert(coll, raw, keys)
                    n += 1
                    inserted_keys += key_count if same else access.key_count(keys)
                    continue
                except MongoError as e:
                    err = e
                except StorageError as e:
                    err = _storage_error(coll, e, doc)
            errors.append(err.to_write_error(i))
            if ordered:
                break
        if cap is not None:
            capped.trim(w, coll, cap)
        return n, errors, inserted_keys

    # A large insert is written a slice at a time (mongod also inserts in batches, each atomic on its
    # own): the one writer thread is never held by one client for long, other writes go in between.
    # What it wrote is on ctx.facts as it goes (the profiler's ninserted / keysInserted; mongod sets
    # keysInserted once a document is written), so an interrupted insert reports its committed slices.
    writes = {"ninserted": 0}
    ctx.facts = ReadFacts(writes=writes)
    n, errors = 0, []
    for start in range(0, len(prepared), INSERT_SLICE):
        if start:
            try:
                ctx.check_deadline()  # a killOp or maxTimeMS stops a large insert between slices
            except MongoError as exc:
                exc.extra["n"] = n  # what the committed slices inserted (see _write_slices)
                raise
        part_n, part_errors, part_keys = await _write(ctx, functools.partial(fn, part=prepared[start:start + INSERT_SLICE]))
        n += part_n
        errors += part_errors
        writes["ninserted"] = n
        if part_n:
            writes["keysInserted"] = writes.get("keysInserted", 0) + part_keys
        if part_errors and ordered:
            break
    if n:
        ctx.server.tailing.notify(ns)
    return _reply(n, errors)


# --------------------------------------------------------------------------------------------------
# find
# --------------------------------------------------------------------------------------------------


_checked_find_spec = functools.partial(access.FindSpec, checked=True)  # (find checks its fields first)


async def find(ctx: CommandContext, cmd: dict) -> dict:
    check_command(cmd, "find")  # (before anything reads a field: FindSpec below sees some dropped)
    _check_natural(cmd.get("sort"), "sort")  # mongod validates these before it parses the filter
    _check_natural(cmd.get("hint"), "hint")
    return_key, show_record_id = bool(cmd.get("returnKey")), bool(cmd.get("showRecordId"))
    resumable = bool(cmd.get("$_requestResumeToken"))
    record_ids = show_record_id or resumable  # the read carries each document's $recordId
    asked, project = cmd, None
    sort_key_fields: list[str] = []
    if return_key or record_ids:
        # returnKey: only the plan's index key of each document, and the projection's {$meta: "sortKey"}
        # fields (mongod's ReturnKeyStage sortKeyMetaFields); showRecordId (and a resume token's record
        # ids): $recordId, added after the projection (run here, past the read)
        if record_ids and not return_key and cmd.get("projection"):
            project = access.FindSpec({k: v for k, v in cmd.items() if k not in ("returnKey", "showRecordId")},
                                      checked=True).project
        if return_key and isinstance(cmd.get("projection"), dict):
            sort_key_fields = [k for k, v in cmd["projection"].items() if v == {"$meta": "sortKey"}]
        cmd = {k: v for k, v in cmd.items() if k not in ("returnKey", "showRecordId", "projection")}
        if sort_key_fields:  # (the read's DocMeta then notes each document's sort key)
            cmd["projection"] = {k: {"$meta": "sortKey"} for k in sort_key_fields}
    spec = await ctx.run_heavy(_checked_find_spec, cmd, offload_bytes=FILTER_REQUEST_BYTES)
    if sort_key_fields:
        spec.project = None  # (returnKey shapes the documents itself)
    # {$meta: "sortKey"} shows the sort's key: mongod's CanonicalQuery refuses it without a sort
    sort_key_meta = spec.meta is not None and "sortKey" in spec.meta.wants
    if sort_key_meta and not cmd.get("sort"):
        raise MongoError(ErrorCode.BadValue, "cannot use sortKey $meta projection without a sort")
    if record_ids and spec.meta is None:
        spec.meta = C.RecordIdMeta()
    if record_ids:
        spec.id_lookup = False  # (mongod's IDHACK does not run with showRecordId)
    ns = C.ns_of(ctx.db, spec.name)
    check_view = return_key or record_ids or "$_resumeAfter" in cmd
    if spec.tailable:
        if check_view and await ctx.run_blocking(_is_view, ctx.server, ctx.db, spec.name):
            raise access.view_option_error(return_key, show_record_id, resumable)
        # the tail reshapes its documents as open_docs below does (returnKey: a collection scan's
        # key, {}; showRecordId: the record id after the projection)
        shape = functools.partial(_shape_with_record_id, _index_key_of(None) if return_key else project,
                                  keep=not return_key) if return_key or project is not None else None
        return await cursor_commands.tailable_find(ctx, spec, ns, cmd, record_ids=show_record_id, shape=shape)
    budget = access.TimeBudget(spec.max_time)
    # A resumable read's tokens follow the documents the read opens (in the pool job, below).
    opened: list[Iterator[Any]] = []
    resume = ResumeTokens(itertools.chain.from_iterable(opened), keep=show_record_id and not return_key) \
        if resumable else None

    def open_docs() -> tuple[Iterator[Any], ReadFacts]:
        """The read, opened in the job that draws the first batch (cursor_reply): one hand-off to the
        pool per find, not two, and none for a short one (restartable: it changes nothing but what
        it returns, ``ctx.facts`` set again by each run — except a resumable find's token list)."""
        if check_view and _is_view(ctx.server, ctx.db, spec.name):
            raise access.view_option_error(return_key, show_record_id, resumable)
        result = access.run_find(ctx.server, spec, ctx.db, ctx, not (return_key or record_ids))
        if sort_key_meta and spec.sort and spec.meta is not None:
            # where the plan gives the order (no sort runs), the scan notes each document's sort key
            # from this (C.plan_docs, at its first pull): the find's collation is known only now
            spec.meta.sort_keys = sort_mod.sort_key_array(spec.sort, spec.collation, spec.meta)
        facts = ctx.facts = ReadFacts(result.plan, result.stats, result.ts_info, asked)
        facts.ends_after = _ends_after(spec, result)  # (the local: ctx.facts is a property)
        docs = budget.outer(result.docs)
        if return_key or project is not None:
            # returnKey's documents hold the key alone: mongod's ReturnKeyStage drops the record id, so
            # showRecordId adds nothing to them (a resume token still reads it, then drops it)
            docs = map(functools.partial(_shape_with_record_id,
                                         _return_key_of(result.plan, spec.meta, sort_key_fields) if return_key
                                         else project,
                                         keep=not return_key or resumable), docs)
        if resume is not None:
            opened.append(docs)
            docs = resume.docs
        return docs, facts

    batch_size = spec.batch_size
    if spec.limit and (batch_size is None or batch_size > spec.limit) and spec.limit <= 101:
        batch_size = spec.limit
    return await cursor_reply(ctx, ns, None, batch_size, spec.single_batch, first=True, open_docs=open_docs,
                              no_timeout=bool(cmd.get("noCursorTimeout", False)), resume=resume,
                              restartable=resume is None)


def _ends_after(spec: access.FindSpec, result: access.ReadResult) -> int | None:
    """How many documents a find returns before its plan knows it has no more (``ReadFacts.ends_after``,
    what mongod's ``isEOF`` knows without drawing): none from a missing collection (the EOF plan),
    one from an IDHACK lookup (``Plan.id_lookup``), the limit (a LIMIT stage). A find on a view runs as
    an aggregate, whose pipeline knows its end only by drawing past it: None."""
    if result.pipeline or result.ts_info is not None or result.plan is None:
        return None
    if result.plan.kind == "EOF":
        return 0
    if result.plan.id_lookup:
        return 1 if not spec.limit else min(spec.limit, 1)
    return spec.limit or None


def _is_view(server: ServerState, db: str, name: str) -> bool:
    with server.engine.read() as r:
        return r.get_collection(C.ns_of(db, name)) is None and C.get_view(r, db, name) is not None


def _shape_with_record_id(shape, doc: dict, keep: bool = True) -> dict:
    """``shape(doc)`` (returnKey's key or the projection), with the document's ``$recordId`` last
    (when ``keep``)."""
    record_id = doc.pop("$recordId", None)
    out = shape(doc)
    if record_id is not None and keep:
        out = {**out, "$recordId": record_id}
    return out


def _return_key_of(plan: Any, meta: Any, sort_key_fields: list[str]):
    """find ``returnKey``'s document: the index key (``_index_key_of``), then each of the projection's
    ``{$meta: "sortKey"}`` fields set to the document's sort key, as mongod's ReturnKeyStage."""
    key_of = _index_key_of(plan)
    if not sort_key_fields or meta is None:
        return key_of

    def shape(doc: dict) -> dict:
        out = key_of(doc)
        sort_key = meta.get(doc, "sortKey")
        if sort_key is not None:
            for field in sort_key_fields:
                set_path(out, field, sort_key)
        return out
    return shape


def _index_key_of(plan: Any):
    """find ``returnKey``: a document's key in the index the plan scans (mongod: ``{}`` without an
    index scan), keyed by the key pattern's field names. mongod's ReturnKeyStage shows the entry
    the scan met: of a multikey document's entries, the first in scan order that lies within the
    scan's intervals (``min``/``max`` included); under an index collation, strings are the
    collator's comparison keys the index holds, not the strings themselves."""
    index = plan.index if plan is not None and plan.kind == "IXSCAN" else None
    if index is None:
        return lambda doc: {}
    keyer = keyer_for(index)
    if not isinstance(keyer, IndexKeyer | WildcardKeyer):  # 2d / 2dsphere / text / hashed keys: the first entry
        def special_key(doc: dict) -> dict:
            entries = keyer.entries(doc)
            return key_document(keyer, entries[0][1]) if entries else {}
        return special_key
    collation = getattr(keyer, "collation", None)  # (a wildcard index's entries hold its keys already)
    # the [start, end) each interval covers over encoded keys (prefix semantics, as the storage scan)
    spans = [span for iv in plan.intervals if (span := raw_range(iv.lo, iv.hi, iv.lo_incl, iv.hi_incl)) is not None]
    first_met = max if plan.reverse else min

    def scanned(entry: tuple[bytes, tuple]) -> bool:
        encoded = entry[0]
        return any((lo is None or encoded >= lo) and (hi is None or encoded < hi) for lo, hi in spans)

    def key(doc: dict) -> dict:
        entries = keyer.entries(doc)
        if not entries:
            return {}
        entry = entries[0]
        if len(entries) > 1:  # one document, several entries (multikey): the scan meets one of them first
            entry = first_met([e for e in entries if scanned(e)] or entries, key=lambda e: e[0])
        values = entry[1] if collation is None else [comparison_key_value(v, collation) for v in entry[1]]
        return key_document(keyer, values)

    return key


def _check_natural(spec: Any, field: str) -> None:
    """mongod's ``hasInvalidNaturalParam`` for a find's ``sort`` / ``hint`` (also count's and distinct's
    hint): a document naming ``$natural`` must be exactly ``{$natural: 1}`` or ``{$natural: -1}`` (any
    numeric type, nothing beside it), else 2 BadValue — checked once, at parse time."""
    if not isinstance(spec, dict) or "$natural" not in spec:
        return
    value = spec["$natural"]
    if len(spec) == 1 and is_number(value) and (compare(value, 1) == 0 or compare(value, -1) == 0):
        return
    raise MongoError(ErrorCode.BadValue, f"$natural {field} cannot be set to a value other than -1 or 1.")


# --------------------------------------------------------------------------------------------------
# update / delete (shared statement machinery)
# --------------------------------------------------------------------------------------------------


class UpdateStatement:
    """One parsed update statement: its collation (the statement's, else the collection default),
    the command's variables (``let`` evaluated once, plus NOW) and its own constants ``c``."""

    def __init__(self, st: Any, command: str = "update", variables: dict | None = None,
                 default_collation: dict | None = None, from_oplog: bool = False):
        if not isinstance(st, dict):
            raise MongoError(ErrorCode.TypeMismatch, f"BSON field '{command}.updates' elements must be objects")
        for k in ("q", "u"):
            if k not in st:
                raise MongoError(ErrorCode.IDLFailedToParse,
                                 f"BSON field 'update.updates.{k}' is missing but a required field")
        if not isinstance(st["q"], dict):
            raise MongoError(ErrorCode.TypeMismatch,
                             "BSON field 'update.updates.q' is the wrong type, expected type 'object'")
        match, update = match_mod, update_mod
        self.q = st["q"]
        self.multi = bool(st.get("multi", False))
        self.upsert = bool(st.get("upsert", False))
        self.hint = st.get("hint") or None
        self.sort = None  # a statement 'sort' is MongoDB 8.0 (refused as an unknown field in 7.0)
        constants = C.doc_arg(st, "c", "update.updates")
        # upsertSupplied: insert c.new (applied over the query's equalities) instead of running the
        # update when nothing matches; mongod's ParsedUpdate checks it first (9).
        self.supplied: Any = None
        if st.get("upsertSupplied"):
            if not self.upsert:
                raise MongoError(ErrorCode.FailedToParse,
                                 "cannot specify 'upsertSupplied: true' for a non-upsert operation")
            if constants is None or not isinstance(constants.get("new"), dict):
                raise MongoError(ErrorCode.FailedToParse,
                                 "the parameter 'upsertSupplied' is set to 'true', but no document was supplied")
            self.supplied = constants["new"]
        self.collation = C.effective_collation(C.collation_arg(st, "update.updates"), default_collation)
        af = st.get("arrayFilters")
        if constants is not None and not isinstance(st["u"], list):
            # mongod's UpdateDriver refuses 'c' (even {}) before it parses a non-pipeline update
            raise MongoError(51198, "Constant values may only be specified for pipeline updates")
        variables = {**(variables or {}), **(constants or {})}
        # a replacement's empty timestamps are filled once, when it is parsed (as mongod's executor)
        u = write_statements.fill_replacement_timestamps(st["u"])
        self.update = update.parse_update(u, array_filters=af, collation=self.collation, variables=variables,
                                          from_oplog=from_oplog)
        if self.multi and self.update.kind == "replacement":
            raise MongoError(ErrorCode.FailedToParse, "multi update is not supported for replacement-style update")
        if self.upsert:  # the update is parsed first; then the query, without $expr (mongod's ParsedUpdate)
            update.check_upsert_query(self.q)
        self.variables = variables  # (a residual filter compiles with them: collections.matches_in_txn)
        self.match = (match.compile_filter(self.q, variables=variables, collation=self.collation)
                      if self.q else None)
        expr_optimize.fold_filter_constants(self.q, collation=self.collation)  # (a query: mongod optimizes it)


def _parse_updates(cmd: dict, raw_statements: list, ordered: bool, info, from_oplog: bool = False) -> list:
    """Well-shaped statements (``write_statements.update_statements``) compiled; a statement that
    does not compile is that statement's write error. ``from_oplog``: an applyOps entry's update."""
    variables = C.command_variables(cmd, "update")
    default_collation = C.default_collation_of(info)
    return C.parse_statements(
        raw_statements, lambda st: UpdateStatement(st, variables=variables, default_collation=default_collation,
                                                   from_oplog=from_oplog),
        ordered)


async def update(ctx: CommandContext, cmd: dict) -> dict:
    check_command(cmd, "update", sequences=ctx.sequence_ids)
    ordered, bypass = write_statements.write_flags(cmd)
    name = C.collection_arg(cmd, "update")
    _check_write_namespace(ctx.db, name)
    raw_statements = await ctx.run_heavy(write_statements.update_statements, cmd)  # parse, then dispatch
    _count_op(ctx, "update", len(raw_statements))
    for statement in raw_statements:
        _count_update_shape(ctx, "update", statement)
    try:
        # three point gets: cheaper inline than a hop to the thread pool
        resolved = _target(ctx, name, namespace.collection_uuid_arg(cmd, "update"))
    except namespace.CollectionUUIDMismatch as mismatch:
        return _failed_statements(mismatch, len(raw_statements), ordered, nModified=0)
    info, view = resolved.info, resolved.view
    if resolved.is_timeseries:
        return await ts.VIEW_COMMANDS["update"](ctx, cmd, resolved, raw_statements)
    write = ts.direct_writer(name) if C.is_buckets_collection(name, info) else _write
    if view is not None:
        raise C.view_write_error(ctx.db, name)
    statements = await ctx.run_heavy(_parse_updates, cmd, raw_statements, ordered, info, ctx.from_oplog,
                                     offload_bytes=FILTER_REQUEST_BYTES)
    ns = C.ns_of(ctx.db, name)

    def apply(w, coll, i: int, st: UpdateStatement, matches: list, out: slices.Slice) -> None:
        validator = None if bypass or not matches else C.validator_for(coll)
        writes = _statement_writes(out, i)
        counts = None
        if matches:  # the keys its documents' replacements add and remove (mongod shows them only when
            # the update may write an indexed path: decided when a profile entry is made, if ever)
            counts = writes
            out.facts[i].touches_indexes = functools.partial(_touches_indexes, st.update, coll.indexes)
        n = modified = 0
        for rid, doc in matches:
            new, changed = update_mod.apply_update(doc, st.update, query=st.q)
            n += 1
            if changed:
                with C.update_rules(st.update.kind):
                    access.replace_doc(w, coll, rid, doc, new, validator, counts, from_oplog=st.update.from_oplog)
                modified += 1
        # counted once the matches are applied: a statement that fails is its write error and adds
        # nothing to n / nModified (mongod discards a failed statement's counts)
        out.n += n
        out.modified += modified
        writes["nMatched"] = writes.get("nMatched", 0) + n
        writes["nModified"] = writes.get("nModified", 0) + modified
        writes.setdefault("nUpserted", 0)

    def upsert(w, coll, i: int, st: UpdateStatement, spanned: bool, out: slices.Slice) -> None:
        if not st.upsert:
            return
        late = access.matches_in_txn(w, coll, st.q, st.match, hint=st.hint, multi=False,
                                     collation=st.collation, variables=st.variables) if spanned and coll is not None else []
        if late:  # a matching document arrived while the scan ran in slices: update it, insert nothing
            apply(w, coll, i, st, late, out)
            return
        # c.new is a classic update (a replacement, or operators if its first field is one), parsed
        # only when an upsert inserts, as mongod's UpsertStage does
        supplied = update_mod.parse_update(st.supplied) if st.supplied is not None else None
        writes = _statement_writes(out, i)
        with C.update_rules(st.update.kind if supplied is None else supplied.kind):
            new = access.upsert_doc(w, ns, st.q, st.update, bypass, supplied=supplied, counts=writes)
        out.upserted.append({"index": i, "_id": new["_id"]})
        out.n += 1
        writes["nUpserted"] = 1

    work = slices.Statements(ns, statements, ordered=ordered, apply=apply, unmatched=upsert,
                             target=lambda st: (st.q, st.match, st.hint, st.collation, st.multi, st.variables),
                             table_scan=lambda flt: access.table_scan_allowed(ctx.server, ctx.db, name, flt))
    ctx.facts = work.facts  # one entry per statement run (the profiler's per-statement entries)
    done = await work.run(ctx, modified=True, write=write)
    reply = _reply(done.n, done.errors, nModified=done.modified)
    if done.upserted:
        ctx.server.tailing.notify(ns)
        reply["upserted"] = done.upserted
        reply["nModified"] = done.modified
    return reply


def _parse_deletes(cmd: dict, raw_statements: list, ordered: bool, info) -> list:
    parsed: list = []
    variables = C.command_variables(cmd, "delete")
    default_collation = C.default_collation_of(info)
    for st in raw_statements:  # well-shaped (write_statements.delete_statements)
        try:
            limit = int(write_statements.delete_limit(st["limit"]))  # mongod's numberDouble reading
            collation = C.effective_collation(C.collation_arg(st, "delete.deletes"), default_collation)
            m = match_mod.compile_filter(st["q"], variables=variables, collation=collation) if st["q"] else None
            expr_optimize.fold_filter_constants(st["q"], collation=collation)
            parsed.append((st["q"], m, limit, st.get("hint") or None, collation, variables))
        except MongoError as e:
            parsed.append(e)
            if ordered:
                break
    return parsed


async def delete(ctx: CommandContext, cmd: dict) -> dict:
    check_command(cmd, "delete", sequences=ctx.sequence_ids)
    ordered, _ = write_statements.write_flags(cmd)
    name = C.collection_arg(cmd, "delete")
    _check_write_namespace(ctx.db, name)
    raw_statements = await ctx.run_heavy(write_statements.delete_statements, cmd)  # parse, then dispatch
    _count_op(ctx, "delete", len(raw_statements))
    try:
        resolved = await ctx.run_blocking(_target, ctx, name, namespace.collection_uuid_arg(cmd, "delete"))
    except namespace.CollectionUUIDMismatch as mismatch:
        return _failed_statements(mismatch, len(raw_statements), ordered)
    info, view = resolved.info, resolved.view
    if resolved.is_timeseries:
        return await ts.VIEW_COMMANDS["delete"](ctx, cmd, resolved, raw_statements)
    write = ts.direct_writer(name) if C.is_buckets_collection(name, info) else _write
    if view is not None:
        raise C.view_write_error(ctx.db, name)
    parsed = await ctx.run_heavy(_parse_deletes, cmd, raw_statements, ordered, info, offload_bytes=FILTER_REQUEST_BYTES)
    ns = C.ns_of(ctx.db, name)

    def remove(w, coll, i: int, st: tuple, matches: list, out: slices.Slice) -> None:
        writes = _statement_writes(out, i)
        deleted = keys_deleted = 0
        try:
            for rid, doc in matches:
                keys = C.index_keys(coll, doc)
                w.delete(coll, rid, keys)
                out.n += 1
                deleted += 1
                keys_deleted += access.key_count(keys)
        finally:
            writes["ndeleted"] = writes.get("ndeleted", 0) + deleted
            if deleted:  # mongod's keysDeleted: set by the documents deleted
                writes["keysDeleted"] = writes.get("keysDeleted", 0) + keys_deleted

    def target(st: tuple) -> tuple:
        q, m, limit, hint, collation, variables = st
        return q, m, hint, collation, limit == 0, variables

    work = slices.Statements(ns, parsed, ordered=ordered, target=target, apply=remove,
                             table_scan=lambda flt: access.table_scan_allowed(ctx.server, ctx.db, name, flt))
    ctx.facts = work.facts  # one entry per statement run (the profiler's per-statement entries)
    done = await work.run(ctx, modified=False, write=write)
    return _reply(done.n, done.errors)


def _statement_writes(out: slices.Slice, i: int) -> dict[str, int]:
    """The write counters of statement ``i`` in this slice (its ``ReadFacts.writes``)."""
    writes = out.facts[i].writes
    assert writes is not None  # (ReadFacts.statement_facts)
    return writes


def _canonical_path(path: str) -> tuple[str, ...]:
    """A path as mongod's UpdateIndexData compares paths: its field names, without positional
    (``$``, ``$[]``, ``$[id]``) and array index parts."""
    return tuple(part for part in path.split(".") if not (part.startswith("$") or part.isdigit()))


def _indexed_paths(indexes: list[dict]) -> list[tuple[str, ...]] | None:
    """The canonical paths a collection's indexes read (key fields, partial filter fields); None when
    every path may be indexed (a wildcard or text index)."""
    paths: list[tuple[str, ...]] = []
    for spec in indexes:
        for name, kind in spec["key"].items():
            if name == "$**" or name.endswith(".$**") or kind == "text" or name in ("_fts", "_ftsx"):
                return None
            paths.append(_canonical_path(name))
        partial = spec.get("partialFilterExpression")
        if isinstance(partial, dict):
            paths.extend(_canonical_path(name) for name in _filter_fields(partial))
    return paths


def _filter_fields(flt: dict) -> list[str]:
    """The field paths a (partial index) filter names, through ``$and`` / ``$or``."""
    fields: list[str] = []
    for key, value in flt.items():
        if key in ("$and", "$or", "$nor") and isinstance(value, list):
            for clause in value:
                if isinstance(clause, dict):
                    fields.extend(_filter_fields(clause))
        elif not key.startswith("$"):
            fields.append(key)
    return fields


def _touches_indexes(update: Any, indexes: list[dict]) -> bool:
    """mongod's ``indexesAffected`` of a parsed update: a replacement or pipeline always; operators when
    a path they write is an indexed path, a prefix of one or under one (profile entries only)."""
    paths = update_mod.modified_paths(update)
    indexed = _indexed_paths(indexes)
    if paths == [""] or indexed is None:
        return True
    written = [_canonical_path(p) for p in paths]
    return any(w[:len(p)] == p or p[:len(w)] == w for w in written for p in indexed)


# --------------------------------------------------------------------------------------------------
# findAndModify
# --------------------------------------------------------------------------------------------------


async def find_and_modify(ctx: CommandContext, cmd: dict) -> dict:
    command = "findAndModify" if "findAndModify" in cmd else "findandmodify"
    check_command(cmd, "findAndModify")
    name = C.collection_arg(cmd, command)
    write_statements.check_find_and_modify(cmd, command)  # parse, then dispatch
    _count_update_shape(ctx, "findAndModify", cmd)
    _check_write_namespace(ctx.db, name)
    query = C.doc_arg(cmd, "query", command) or {}
    sort_spec = C.doc_arg(cmd, "sort", command) or None
    fields = C.doc_arg(cmd, "fields", command)
    remove = write_statements.safe_bool_value(cmd.get("remove"))
    upsert = write_statements.safe_bool_value(cmd.get("upsert"))
    return_new = write_statements.safe_bool_value(cmd.get("new"))
    bypass = write_statements.safe_bool_value(cmd.get("bypassDocumentValidation"))
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
    resolved = await ctx.run_blocking(_target, ctx, name)
    info, view = resolved.info, resolved.view
    if resolved.is_timeseries:
        return await ts.VIEW_COMMANDS["findAndModify"](ctx, cmd, resolved)
    write = ts.direct_writer(name) if C.is_buckets_collection(name, info) else _write
    if view is not None:
        raise C.view_write_error(ctx.db, name)
    variables = C.command_variables(cmd, command)
    collation = C.effective_collation(C.collation_arg(cmd, command), C.default_collation_of(info))
    u = write_statements.fill_replacement_timestamps(cmd["update"]) if has_update else None  # as in update
    upd: Any = update_mod.parse_update(u, array_filters=cmd.get("arrayFilters"), collation=collation,
                                       variables=variables) if has_update else None  # None only with remove
    if upsert:  # as mongod's ParsedUpdate: the update first, then the query, which may not hold $expr
        update_mod.check_upsert_query(query)
    m = match_mod.compile_filter(query, variables=variables, collation=collation) if query else None
    expr_optimize.fold_filter_constants(query, collation=collation)
    if sort_spec:
        sort_mod.parse_sort(sort_spec, allow_meta=True)  # a $meta textScore / randVal sort, as find's
    # a $meta in the sort or the projection: the read's DocMeta. A textScore sort needs a $text query
    # (40218, mongod's CanonicalQuery); a projection only reads what there is (mongod's makeProjection
    # checks nothing of the kind: without $text the score is left out)
    meta, meta_variables = special_reads.find_meta(None, sort_spec, query, variables)
    if meta is None and docmeta.mentions_meta(fields):
        meta = docmeta.DocMeta()
        meta_variables = {**variables, docmeta.META_VAR: meta}
    proj = (project_mod.compile_projection(fields, filter=query, variables=meta_variables, collation=collation)
            if fields else None)
    if return_new and fields and _has_positional_projection(fields):
        # the query's match position belongs to the old document, which the new one may no longer match
        raise MongoError(ErrorCode.BadValue, "cannot use a positional projection and return the new document")
    if meta is not None and "sortKey" in meta.wants:  # (mongod's next check, in the same order)
        raise MongoError(ErrorCode.BadValue, "Cannot use a $meta sortKey projection in findAndModify commands.")
    hint = cmd.get("hint") or None
    ns = C.ns_of(ctx.db, name)

    # What the profiler reports (mongod's OpDebug of a findAndModify): the plan, the keys and documents
    # examined, and the write counters. Made afresh by each run of the writer function (the engine may
    # run it again), so nothing is counted twice; set on ctx.facts whether the write succeeded or not.
    ran: list[ReadFacts] = []
    planned: list[Any] = []  # the collection the kept run planned on (its index access / scan)

    def fn(w):
        facts = ReadFacts(stats={"keys": 0, "docs": 0}, origin=cmd, writes={})
        ran[:] = [facts]
        writes = facts.writes
        assert writes is not None
        coll = w.get_collection(ns)
        planned[:] = [coll]
        if coll is None:
            facts.plan = _EOF_PLAN  # mongod plans nothing over a missing collection
        matches = access.matches_in_txn(w, coll, query, m, hint=hint, multi=False, sort=sort_spec,
                                        collation=collation, variables=variables, meta=meta, facts=facts,
                                        table_scan=access.table_scan_allowed(ctx.server, ctx.db, name, query)
                                        ) if coll else []
        if remove:
            writes["ndeleted"] = len(matches[:1])
            if not matches:
                return {"n": 0}, None
            rid, doc = matches[0]
            keys = C.index_keys(coll, doc)
            w.delete(coll, rid, keys)
            writes["keysDeleted"] = access.key_count(keys)
            return {"n": 1}, doc
        writes.update(nMatched=len(matches[:1]), nModified=0, nUpserted=0)
        if not matches:
            if not upsert:
                return {"n": 0, "updatedExisting": False}, None
            with C.update_rules(upd.kind):
                new = access.upsert_doc(w, ns, query, upd, bypass, counts=writes)
            writes["nUpserted"] = 1
            return {"n": 1, "updatedExisting": False, "upserted": new["_id"]}, (new if return_new else None)
        rid, doc = matches[0]
        new, changed = update_mod.apply_update(doc, upd, query=query)
        if changed:
            # the keys it adds and removes (shown only if the update may write an indexed path: asked
            # when a profile entry is made, if ever)
            facts.touches_indexes = functools.partial(_touches_indexes, upd, coll.indexes)
            with C.update_rules(upd.kind):
                access.replace_doc(w, coll, rid, doc, new, None if bypass else C.validator_for(coll), writes)
            writes["nModified"] = 1
        if meta is not None and return_new:
            meta.hand_on(doc, new)  # the new document is the matched one's: its metadata (score) too
        return {"n": 1, "updatedExisting": True}, (new if return_new else doc)

    try:
        last, value = await write(ctx, fn)
    finally:
        if ran:
            ctx.facts = ran[0]
    if planned[0] is not None:  # (mongod counts a findAndModify that succeeded)
        ctx.server.index_usage.record_plan(planned[0], ran[0].plan)
    if "upserted" in last:
        ctx.server.tailing.notify(ns)
    if value is not None and proj is not None:
        value = proj(value)
    return {"lastErrorObject": last, "value": value}


def _has_positional_projection(fields: dict) -> bool:
    """Whether a (parsed, valid) projection has a positional ``a.$`` field at any depth."""
    for key, sub in fields.items():
        if key == "$" or key.endswith(".$"):
            return True
        if isinstance(sub, dict) and not match_mod.is_operator_document(sub) and _has_positional_projection(sub):
            return True
    return False


# --------------------------------------------------------------------------------------------------
# count / distinct
# --------------------------------------------------------------------------------------------------


class CountArgs(NamedTuple):
    name: str
    collation: dict | None
    query: dict
    skip: int
    limit: int  # (for a count, limit and -limit mean the same: its absolute value)
    hint: Any


def parse_count(cmd: dict) -> CountArgs:
    """A count command's arguments, checked as mongod's CountCommandRequest parse checks them (the
    command and its explain read them here)."""
    check_command(cmd, "count")
    name = C.collection_arg(cmd, "count")
    collation = C.collation_arg(cmd, "count")
    query = C.doc_arg(cmd, "query", "count") or {}
    skip = _count_integer(cmd, "skip")
    if skip < 0:
        raise MongoError(ErrorCode.FailedToParse, f"Expected a non-negative number in: skip: {_element_repr(cmd['skip'])}")
    limit = _count_integer(cmd, "limit")
    if limit == -(2**63):
        raise MongoError(ErrorCode.BadValue, "limit value for count cannot be min long")
    if cmd.get("hint") is not None:
        check_hint_type(cmd["hint"])
    hint = cmd.get("hint") or None
    _check_natural(hint, "hint")
    return CountArgs(name, collation, query, skip, abs(limit), hint)


async def count(ctx: CommandContext, cmd: dict) -> dict:
    name, collation, query, skip, limit, hint = parse_count(cmd)
    max_time = C.int_arg(cmd, "maxTimeMS", "count")
    budget = access.TimeBudget(max_time)
    collection_uuid = namespace.collection_uuid_arg(cmd, "count")

    def work():
        with ctx.server.engine.read() as r:
            target = namespace.lookup(r, ctx.db, name, collection_uuid=collection_uuid)  # the one resolution
            info, view = target.info, target.view
            if info is not None and not query and hint is None:
                counted, _ = record_store_count(ctx.server, r, name, info, skip, limit)
                ctx.facts = ReadFacts(_FAST_COUNT, {})  # the record store's count: nothing examined
                return counted
        if view is not None:
            # mongod runs a count on a view as this aggregation (count_cmd.cpp,
            # countCommandAsAggregationCommand): a time-series read answers the $count per bucket
            pipeline: list[dict] = [{"$match": query}] if query else []
            if skip:
                pipeline.append({"$skip": skip})
            if limit:
                pipeline.append({"$limit": limit})
            pipeline.append({"$count": "count"})
            result = access.open_read(ctx.server, ctx.db, name, pipeline, hint=hint, ctx=ctx,
                                      collation=collation, target=target)
            ctx.facts = ReadFacts(result.plan, result.stats, result.ts_info)
            return int(next(budget.outer(result.docs), {"count": 0})["count"])
        else:
            spec = access.FindSpec({"find": name, "filter": query, "skip": skip, "limit": limit, "hint": hint,
                                    "$db": ctx.db, **({"collation": collation} if collation is not None else {})})
            spec.id_lookup = True  # (mongod's count leaves its skip out of the query it plans)
            result = access.run_find(ctx.server, spec, ctx.db, ctx, target=target)
            scan = count_scan_of(result.plan, query, info) if info is not None else None
            if scan is not None:
                # the index alone answers: mongod's COUNT_SCAN, no document fetched (the planned stream
                # was never pulled: it opened nothing)
                n, keys, _ = access.run_count_scan(ctx.server.engine, info, scan, skip, limit)
                ctx.facts = ReadFacts(scan.plan, {"keys": keys, "docs": 0})
                return n
        # the plan and the counters the scan fills as it runs: the profiler's planSummary, examined
        ctx.facts = ReadFacts(result.plan, result.stats, result.ts_info)
        return sum(1 for _ in budget.outer(result.docs))

    return {"n": await ctx.run_blocking(work)}


def record_store_count(server: ServerState, r: Any, name: str, info: Any, skip: int, limit: int) -> tuple[int, int]:
    """(counted, skipped) of a count without a query or hint: mongod's RECORD_STORE_FAST_COUNT asks the
    collection for its number of records (a buckets collection's in-memory buckets too)."""
    n = r.count(info)
    if C.is_buckets_collection(name, info):
        n += ts.unstored_buckets(server, info.ns)[0]
    left = max(0, n - skip)
    return (min(left, limit) if limit else left), min(skip, n)


def _count_integer(cmd: dict, name: str) -> int:
    """count's ``skip`` / ``limit`` as mongod's countParseSkip / countParseLimit read them (0 when
    absent): any number holding a 64-bit integer; 2 '<name> value is not a valid number' for
    another type, 9 FailedToParse (BSONElement::parseIntegerElementToLong) for NaN, a fraction or a
    value past 64 bits."""
    value = cmd.get(name)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal128):
        raise MongoError(ErrorCode.BadValue, f"{name} value is not a valid number")
    shown = f"{name}: {_element_repr(value)}"
    if isinstance(value, float):
        if value != value:
            raise MongoError(ErrorCode.FailedToParse, f"Expected an integer, but found NaN in: {shown}")
        if not -(2.0**63) <= value < 2.0**63:
            raise MongoError(ErrorCode.FailedToParse, f"Cannot represent as a 64-bit integer: {shown}")
        if value != int(value):
            raise MongoError(ErrorCode.FailedToParse, f"Expected an integer: {shown}")
        return int(value)
    if isinstance(value, Decimal128):
        exact = value.to_decimal()
        if not exact.is_finite() or exact != exact.to_integral_value() or not -(2**63) <= exact < 2**63:
            raise MongoError(ErrorCode.FailedToParse, f"Cannot represent as a 64-bit integer: {shown}")
        return int(exact)
    return int(value)


def _element_repr(value: Any) -> str:
    """A number as mongod's BSONElement::toString shows it: doubles by appendDoubleNice ('%.16g', then
    '.0' unless the text holds '.', 'E' or 'N' — so 1e30 shows as '1e+30.0'), decimals by their string."""
    if isinstance(value, float):
        text = f"{value:.16g}"
        return text if any(c in text for c in ".EN") else text + ".0"
    return str(value)


def parse_distinct(cmd: dict) -> tuple[str, dict | None, str, dict]:
    """(collection, collation, key, query) of a distinct command, checked as mongod's parse checks them
    (the command and its explain read them here)."""
    check_command(cmd, "distinct")
    name = C.collection_arg(cmd, "distinct")
    collation = C.collation_arg(cmd, "distinct")
    key = cmd.get("key")
    if "key" not in cmd:
        raise MongoError(ErrorCode.IDLFailedToParse, "BSON field 'distinct.key' is missing but a required field")
    if type(key) is not str:
        raise MongoError(ErrorCode.TypeMismatch,
                         f"BSON field 'distinct.key' is the wrong type '{C.type_name(key)}', expected type 'string'")
    if "\0" in key:  # mongod checks this first, before the key becomes a field path
        raise MongoError(31032, "Key field cannot contain an embedded null byte")
    if key == "" or key.startswith("$"):
        raise MongoError(ErrorCode.BadValue if key else 40352,
                         "FieldPath cannot be constructed with empty string" if not key else
                         "FieldPath field names may not start with '$'. Consider using $getField or $setField.")
    if "" in key.split("."):  # mongod projects the key ({key: 1}): its FieldPath refuses an empty part
        raise MongoError(15998, "FieldPath field names may not be empty strings.")
    query = C.doc_arg(cmd, "query", "distinct") or {}
    if cmd.get("hint") is not None:
        check_hint_type(cmd["hint"])
    _check_natural(cmd.get("hint"), "hint")
    return name, collation, key, query


async def distinct(ctx: CommandContext, cmd: dict) -> dict:
    name, collation, key, query = parse_distinct(cmd)
    max_time = C.int_arg(cmd, "maxTimeMS", "distinct")
    budget = access.TimeBudget(max_time)
    collection_uuid = namespace.collection_uuid_arg(cmd, "distinct")

    def work():
        from tidemark.query.collation import sort_key_for
        from tidemark.storage.keys import encode_value

        with ctx.server.engine.read() as r:
            target = namespace.lookup(r, ctx.db, name, collection_uuid=collection_uuid)  # the one resolution
        info, view = target.info, target.view
        if view is not None:
            coll = C.effective_collation(collation, C.default_collation_of(view=view),
                                         on_view=not C.is_timeseries_view(view))
            result = access.open_read(ctx.server, ctx.db, name, [{"$match": query}] if query else [], ctx=ctx,
                                      hint=cmd.get("hint") or None, collation=collation, target=target)
        else:
            coll = C.effective_collation(collation, C.default_collation_of(info))
            spec = access.FindSpec({"find": name, "filter": query, "$db": ctx.db, "hint": cmd.get("hint"),
                                    **({"collation": collation} if collation is not None else {})})
            result = access.run_find(ctx.server, spec, ctx.db, ctx, target=target)
        # the plan and the counters the scan fills as it runs: the profiler's planSummary, examined
        # (profile_distinct.js), as a count's
        ctx.facts = ReadFacts(result.plan, result.stats, result.ts_info)
        docs = result.docs
        parts = key.split(".")
        sort_key = sort_key_for(coll)
        seen: dict[Any, Any] = {}
        # one value per equivalence class: exact BSON identity, or the collation's key
        identity = encode_value if coll is None else sort_key
        # mongod caps the values it gathers (not a view's: that runs as an aggregation): the sum of the
        # BSON sizes of the elements it keeps stays under 16 MB - 4 KB, or 17217
        capped_size = view is None
        approx_bytes = 0
        for doc in budget.outer(docs):
            for field, v in _distinct_values(doc, parts):
                ident = identity(v)
                if ident in seen:
                    continue
                if capped_size:
                    approx_bytes += _element_size(field, v)
                    if approx_bytes >= _DISTINCT_MAX_BYTES:
                        raise MongoError(17217, "distinct too big, 16mb cap")
                seen[ident] = v
        return sorted(seen.values(), key=sort_key)

    return {"values": await ctx.run_blocking(work)}


_DISTINCT_MAX_BYTES = 16 * 1024 * 1024 - 4096  # mongod's kMaxResponseSize (BSONObjMaxUserSize - 4096)


def _element_size(field: str, value: Any) -> int:
    """The BSON size of the element ``field: value`` (type byte, name, value), as mongod's elt.size()."""
    return len(encode({field: value})) - 5


def _distinct_values(value: Any, parts: list[str], depth: int = 0, field: str = "") -> Iterator[tuple[str, Any]]:
    """(field name, value) of each element at a dotted path, expanding arrays like mongod's distinct
    (leaf arrays give their elements, named by their index)."""
    if depth == len(parts):
        if isinstance(value, list):
            for i, element in enumerate(value):
                yield str(i), element
        else:
            yield field, value
        return
    if isinstance(value, dict):
        if parts[depth] in value:
            yield from _distinct_values(value[parts[depth]], parts, depth + 1, parts[depth])
    elif isinstance(value, list):
        part = parts[depth]
        if part.isdigit() and int(part) < len(value):
            yield from _distinct_values(value[int(part)], parts, depth + 1, part)
            return
        for element in value:
            if isinstance(element, dict):
                yield from _distinct_values(element, parts, depth, field)


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
