"""The writing stages' targets: ``$merge`` into a collection (synchronous; the pipeline callback runs in
the thread pool, the writes in one transaction per 16 MB batch on the writer thread), and the plan of a ``$out`` into a time-series
collection (``timeseries_out_plan`` validates before the read; the write itself,
``tidemark.commands.timeseries_out.out_timeseries``, runs on the event loop as time-series commands
because measurements go through the bucket catalog).

$merge follows mongod's DocumentSourceMerge:

- ``on`` fields other than ``_id`` need a unique index in the target as mongod's supportsUniqueKey: not
  partial, a key pattern of numbers only naming exactly those fields, and the pipeline's collation
  (``collatorsMatch``), else 51183 — checked before any document is read; a target that does not
  exist has only ``_id``;
- each result is matched by the equality of its ``on`` values (51132 missing/null, 51185 array), an
  ``_id`` is generated only when ``on`` includes it; a matched document is replaced (``replace``: a
  different ``_id`` is 66 ImmutableField), ``$set`` with the result (``merge``: same rule) or kept
  (``keepExisting``); an unmatched result is inserted (an ``_id`` generated if it has none),
  discarded or refused (13113, after the batch's other writes, as mongod's batch);
  ``whenMatched: "fail"`` inserts, and the duplicate is its error;
- ``whenMatched: [stages]`` runs the update pipeline over the matched document with the aggregate
  command's variables (its ``let``, ``$$NOW``) and the stage's ``let`` over them (a stage variable of the
  same name wins): mongod sends the merge's updates with the command's ``let`` and the stage's evaluated
  ``let`` as each statement's ``c`` constants, which PipelineExecutor defines last
  (CommonMongodProcessInterface::buildUpdateOp, DocumentSourceMerge::create); ``$$new``,
  the result document, is always defined with ``whenNotMatched: "insert"``; 51273 if ``let`` binds it
  to anything but ``"$$ROOT"``; unmatched with ``whenNotMatched: "insert"``, the result itself is
  inserted (mongod 4.4+ sends an ``upsertSupplied`` update with ``c: {new: <result>}``);
- the results are written in batches of up to 16 MB, each an *unordered* batch (mongod's
  ``ordered: false`` insert/update commands): a statement that fails (a duplicate key, 66, 121 ...)
  writes nothing, the batch's other statements are written, then the first failure is the stage's
  error and no later batch is written;
- a duplicate key anywhere is 11000 with ``keyPattern``/``keyValue``, in mongod's context message;
- an inserted or changed document passes the target's validator (121) unless the command has
  ``bypassDocumentValidation: true``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from bson.objectid import ObjectId

from tidemark.context import ServerState
from tidemark.core import capped
from tidemark.core import collection as C
from tidemark.core.clustered import cluster_info
from tidemark.core.namespace import find_view, is_timeseries_view
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query import collation as collation_mod
from tidemark.query import plan as planner
from tidemark.query import update as update_mod
from tidemark.query.expr_base import validate_variable_name
from tidemark.query.expressions import compile_expression
from tidemark.query.match import compile_filter
from tidemark.query.paths import get_path
from tidemark.query.stage_write import merge_options
from tidemark.query.update_parse import Update
from tidemark.query.value_repr import bson_repr
from tidemark.query.values import MISSING, is_number
from tidemark.storage.errors import DuplicateKey
from tidemark.timeseries import ddl as ts_ddl
from tidemark.timeseries import options as ts_options
from tidemark.timeseries.indexes import default_index_specs

_IMMUTABLE_CONTEXT = "$merge failed to update the matching document, did you attempt to modify the _id or the shard key?"
_FAIL_CONTEXT = "$merge with whenMatched: fail found an existing document with the same values for the 'on' fields"
_DUP_CONTEXT = "$merge failed due to a DuplicateKey error"


def merge_target(db: str, spec: Any) -> tuple[str, Any]:
    opts = merge_options(spec)
    return opts["db"] or db, opts["into"]


ANY_COLLATION: Any = object()  # check_on_fields before the pipeline's collation is known: any will do


def _supports_unique_key(index: dict, on: list[str], collation: Any) -> bool:
    """mongod's supportsUniqueKey (pipeline/process_interface/common_mongod_process_interface.cpp): a
    unique index (the ``_id`` index is one), not partial, whose key pattern names exactly the ``on``
    paths with numbers only (keyPatternNamesExactPaths: no "2dsphere", "2d", "text", "hashed"), and
    whose collation matches the pipeline's (``CollatorInterface::collatorsMatch``; ``collation``
    None is simple, ``ANY_COLLATION`` skips this test)."""
    unique = index.get("name") == "_id_" or bool(index.get("unique"))
    if not unique or "partialFilterExpression" in index:
        return False
    key = index["key"]
    if not all(is_number(v) for v in key.values()) or set(key) != set(on) or len(key) != len(on):
        return False
    if collation is ANY_COLLATION:
        return True
    spec = index.get("collation")
    return collation_mod.same(collation_mod.parse_collation(spec) if spec else None, collation)


def check_on_fields(server: ServerState, db: str, spec: Any, collation: Any = ANY_COLLATION) -> None:
    """51183 unless the target has a unique index supporting ``on`` (parse time in mongod).
    ``collation``: the pipeline's (``collation.Collation``, None = simple); the check made before the
    pipeline is opened does not know it yet (``ANY_COLLATION``), the stage checks again with it."""
    opts = merge_options(spec)
    on = opts["on"]
    if on == ["_id"]:
        return
    with server.engine.read() as r:
        info = r.get_collection(C.ns_of(opts["db"] or db, opts["into"]))
    if info is None or not any(_supports_unique_key(s, on, collation) for s in info.indexes):
        raise MongoError(51183, "Cannot find index to verify that join fields will be unique")


def _on_values(doc: dict, on: list[str]) -> dict:
    key = {}
    for path in on:
        v = get_path(doc, path)
        if isinstance(v, list):
            raise MongoError(51185, f"$merge write error: 'on' field '{path}' is an array")
        if v is None or v is MISSING:
            raise MongoError(51132, f"$merge write error: 'on' field '{path}' cannot be missing, null, "
                                    "undefined or an array")
        key[path] = v
    return key


def _duplicate(info, e: DuplicateKey, doc: dict, on: list[str], fail_mode: bool) -> MongoError:
    err = C.duplicate_key_error(info, e.index_name, doc, e.key)
    pattern = err.extra.get("keyPattern") or {}
    on_index = len(pattern) == len(on) and all(f in pattern for f in on)
    context = _FAIL_CONTEXT if fail_mode and on_index else _DUP_CONTEXT
    return MongoError(ErrorCode.DuplicateKey, f"{context} :: caused by :: {err.message}", extra=err.extra)


class _PipelineUpdate:
    """``whenMatched: [stages]``: the matched target document goes through the stages (an update
    pipeline: $addFields/$set, $project/$unset, $replaceRoot/$replaceWith), with the ``let`` variables
    evaluated against the result document (without ``let``: ``$$new`` is the result document; with
    ``whenNotMatched: "insert"`` ``$$new`` is always defined, as mongod must send the result as
    ``c.new``: DocumentSourceMerge::create). ``variables``: the aggregate command's (its ``let``,
    ``$$NOW``), which the ``let`` expressions may use and the stages see under the ``let`` values. An
    unmatched result with ``whenNotMatched: "insert"`` is mongod's ``upsertSupplied`` upsert: the result
    itself is inserted (``upserted``)."""

    def __init__(self, spec: dict, not_matched: str, variables: dict):
        self.stages = spec["whenMatched"]
        let = spec.get("let")
        if let is None:  # (an explicit null too: mongod's IDL cannot tell it from an absent field)
            let = {"new": "$$ROOT"}
        if not isinstance(let, dict):
            raise MongoError(ErrorCode.TypeMismatch, "BSON field '$merge.let' is the wrong type, expected type 'object'")
        if "new" in let and let["new"] != "$$ROOT":
            raise MongoError(51273, "'let' may not define a value for the reserved 'new' variable other than '$$ROOT'")
        if "new" not in let and not_matched == "insert":
            let = {**let, "new": "$$ROOT"}
        for name in let:
            validate_variable_name(name)
        self.let = [(name, compile_expression(expr)) for name, expr in let.items()]
        self.variables = variables
        update_mod.parse_update(self.stages, variables={**variables, **dict.fromkeys(let)})  # validated now

    def update_for(self, doc: dict) -> Any:
        command = self.variables
        variables = {**command, **{name: fn(doc, command) for name, fn in self.let}}
        return update_mod.parse_update(self.stages, variables=variables)

    @staticmethod
    def upserted(doc: dict, key: dict) -> dict:
        """The document an unmatched result inserts. mongod (4.4+) sends ``{q: <on values>, u: <stages>,
        c: {new: <result>}, upsert: true, upsertSupplied: true}`` (UpsertType::kInsertSuppliedDoc), and
        its UpsertStage seeds the new document with the query's ``_id`` then applies ``c.new`` as a
        replacement (generateNewDocumentFromSuppliedDoc): the stages never run. The same steps as the
        ``update`` command's ``upsertSupplied`` upsert (``collections.upsert_doc``): seed, then apply."""
        query = dict(key)
        seed = update_mod.upsert_seed(query, only_id=True)
        supplied = Update("replacement", replacement=dict(doc), raw=doc)
        new, _ = update_mod.apply_update(seed, supplied, is_upsert=True, query=query)
        return new


# killOp, maxTimeMS, shutdown: the whole write fails (mongod's unordered batch rethrows interruptions)
_INTERRUPTIONS = frozenset({ErrorCode.Interrupted, ErrorCode.InterruptedAtShutdown, ErrorCode.MaxTimeMSExpired,
                            ErrorCode.ExceededTimeLimit})


def merge_into(server: ServerState, db: str, spec: Any, docs, collation: Any, check_target,
               variables: dict | None = None) -> None:
    """$merge ``docs`` into the target, one write transaction per batch. ``check_target(db, coll,
    spec)`` refuses views and time-series targets. ``collation``: the pipeline's (None = simple), which
    the unique index backing the ``on`` fields must have. ``variables``: the aggregate command's (its
    evaluated ``let`` and ``$$NOW``), which a ``whenMatched`` pipeline sees."""
    opts = merge_options(spec)
    target_db, target = opts["db"] or db, opts["into"]
    on, matched, not_matched = opts["on"], opts["whenMatched"], opts["whenNotMatched"]
    # its parse errors before any read
    updater = _PipelineUpdate(spec, not_matched, variables or {}) if matched == "pipeline" else None
    check_target(target_db, target, spec)
    check_on_fields(server, db, spec, collation)
    with_id = "_id" in on
    results = []
    for d in docs:
        if with_id and "_id" not in d:
            d = {"_id": ObjectId(), **d}
        results.append((d, _on_values(d, on)))
    ns = C.ns_of(target_db, target)
    bypass = C.bypasses_validation()  # here: the writer thread has no bound operation
    validator: C.Validator | None = None

    def insert(w, info, doc, kind="insert"):
        new = C.prepare_insert(doc)
        raw = C.encode_doc(new, kind)
        if validator is not None:
            validator.check(new)
        info, keys = C.write_keys(w, info, new)
        w.insert(info, raw, keys)
        return info

    def write_one(w, info, doc: dict, key: dict) -> tuple[Any, bool]:
        """One statement of the batch: (current info, whether it found no match under
        ``whenNotMatched: "fail"``)."""
        if matched == "fail":
            return insert(w, info, doc), False
        flt = {f: {"$eq": v} for f, v in key.items()}
        matcher = compile_filter(flt)
        plan = planner.choose_plan(list(info.indexes), flt, multikey_default=info.clustered,
                                   cluster=cluster_info(info))
        existing = next((pair for pair in C.docs_in_txn(w, info, plan) if matcher(pair[1])), None)
        if existing is None:
            if not_matched == "fail":
                return info, True
            if not_matched == "insert":
                info = insert(w, info, doc) if updater is None else \
                    insert(w, info, updater.upserted(doc, key), "upsert")
            return info, False
        if matched == "keepExisting":
            return info, False
        rid, old = existing
        update = updater.update_for(doc) if updater is not None else \
            update_mod.parse_update(doc if matched == "replace" else {"$set": doc})
        try:
            new, changed = update_mod.apply_update(old, update)
        except MongoError as e:
            if e.code == ErrorCode.ImmutableField:
                raise MongoError(ErrorCode.ImmutableField,
                                 f"{_IMMUTABLE_CONTEXT} :: caused by :: {e.message}") from None
            raise
        C.check_storable(new)
        if changed and validator is not None:
            validator.check(new, old_doc=old)
        info, keys = C.write_keys(w, info, new)
        w.update(info, rid, C.encode_doc(new, "update"), C.index_keys(info, old), keys)
        return info, False

    def fn(w, batch) -> tuple[bool, MongoError | None]:
        from tidemark.core.collection import ensure_collection

        nonlocal validator
        unmatched = False
        first_error: MongoError | None = None
        info = ensure_collection(w, ns)
        # mongod's $merge writes through the target's validator (121) unless the command bypasses it
        validator = None if bypass else C.validator_for(info)
        for doc, key in batch:
            # an unordered batch (mongod's ordered: false): a failed statement writes nothing (storage
            # mutations are atomic, the checks come first) and the batch goes on; the first failure
            # is reported once the batch is written
            try:
                info, missed = write_one(w, info, doc, key)
                unmatched = unmatched or missed
                continue
            except DuplicateKey as e:
                error = _duplicate(info, e, doc, on, matched == "fail")
            except MongoError as e:
                if e.code in _INTERRUPTIONS:
                    raise
                error = e
            first_error = first_error or error
            info = w.get_collection(ns)  # (a failed write may have flagged an index multikey first)
        capped.trim(w, info)
        return unmatched, first_error

    # mongod writes the results in batches of up to 16 MB, each an unordered batch: a batch with a failed
    # statement or a result that found no match is written whole, then the stage fails before the next
    for batch in _batches(results):
        unmatched, error = server.engine.write(functools.partial(fn, batch=batch)).result()
        if error is not None:
            raise error
        if unmatched:
            raise MongoError(13113, "$merge could not find a matching document in the target collection for at "
                                    "least one document in the source collection")


MERGE_BATCH_BYTES = 16 * 1024 * 1024  # mongod's BSONObjMaxUserSize: the write batches of $merge


def _batches(results: list) -> list[list]:
    """``results`` (document, on values) cut into batches of at most ``MERGE_BATCH_BYTES`` of BSON."""
    batches: list[list] = [[]]
    size = 0
    for item in results:
        n = len(C.encode_doc(item[0]))
        if batches[-1] and size + n > MERGE_BATCH_BYTES:
            batches.append([])
            size = 0
        batches[-1].append(item)
        size += n
    return batches if batches[0] else []


# --------------------------------------------------------------------------------------------------
# $out into a time-series collection
# --------------------------------------------------------------------------------------------------

OUT_BATCH = 10_000  # measurements per insert into the temporary collection


@dataclass
class TimeseriesOut:
    """Where a final ``$out`` writes a time-series collection: the target, its options (given, or the
    existing collection's), the existing buckets' create options and secondary indexes to carry over."""

    db: str
    coll: str
    options: Any            # ts_options.TimeseriesOptions
    extra: dict             # expireAfterSeconds, collation, ... of the collection being replaced
    indexes: list           # bucket-level index specs of the replaced collection beyond the defaults
    exists: bool


def timeseries_out_plan(server: ServerState, db: str, pipeline: list) -> TimeseriesOut | None:
    """For a pipeline ending in ``$out`` with ``timeseries`` options or into an existing time-series
    collection: the validated target (mongod's DocumentSourceOut::validateTimeseries codes: 40415 and
    the other option errors, 7406103 different options, 7268700 a regular collection, 7268703 a view).
    None for any other pipeline (the regular ``$out`` path)."""
    last = pipeline[-1] if pipeline and isinstance(pipeline[-1], dict) and len(pipeline[-1]) == 1 else None
    if last is None or "$out" not in last:
        return None
    spec = last["$out"]
    if type(spec) is str:
        target_db, coll, given = db, spec, None
    elif isinstance(spec, dict) and type(spec.get("coll")) is str:
        target_db, coll, given = spec.get("db", db), spec["coll"], spec.get("timeseries")
        if type(target_db) is not str:
            return None
    else:
        return None
    ns = C.ns_of(target_db, coll)
    wanted = ts_options.parse_timeseries(ns, given, command="$out") if given is not None else None
    with server.engine.read() as r:
        _, view = find_view(r, target_db, coll)
        buckets = r.get_collection(ts_ddl.buckets_ns(target_db, coll))
        regular = r.get_collection(ns)
    existing = ts_ddl.stored_options(buckets) if is_timeseries_view(view) else None
    if existing is None:
        if wanted is None:
            return None
        if regular is not None:
            raise MongoError(7268700, "Cannot create a time-series collection from a non time-series collection.")
        if view is not None:
            raise MongoError(7268703, "Cannot create a time-series collection from a non time-series view.")
        return TimeseriesOut(target_db, coll, wanted, {}, [], False)
    if wanted is not None and not wanted.equivalent(existing):
        raise MongoError(7406103, "Time-series options inputted must match the existing time-series collection. "
                                  f"Received: {bson_repr(given)}Found: {bson_repr(existing.to_document())}")
    assert buckets is not None  # existing: the options stored on it
    stored = buckets.options or {}
    extra = {k: stored[k] for k in ("expireAfterSeconds", "collation", "storageEngine", "indexOptionDefaults")
             if k in stored}
    defaults = {s["name"] for s in default_index_specs(existing.time_field, existing.meta_field)}
    indexes = [C.public_index_spec(s) for s in buckets.indexes if s["name"] not in defaults and s["name"] != "_id_"]
    return TimeseriesOut(target_db, coll, existing, extra, indexes, True)
