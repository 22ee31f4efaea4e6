"""Updates and deletes of measurements on a time-series view (7.0 rules): update (meta-only, multi, no
upsert), delete (any filter: whole buckets when it names only the meta field, else buckets unpacked and
repacked), findAndModify with ``remove``. Part of the time-series command family (timeseries.py).

Each statement is parsed and validated first, then the collection's in-memory buckets are written in
full and leave memory, with no bucket reopened from storage until the writes committed
(``admin.direct_write``), so the statement acts on exactly what the view shows; all writes run in ONE
``engine.write`` function. Buckets are selected with the one bucket-filter derivation
(server/timeseries/filters.py) of the statement's filter. Each statement runs under its effective
collation (its own, else the collection default): filters, the index choice, arrayFilters and ``$pull``
conditions compare strings with it.
"""

from __future__ import annotations

from typing import Any

from tidemark.collections import replace_doc
from tidemark.commands import write_statements
from tidemark.commands.timeseries_admin import resolve
from tidemark.context import CommandContext
from tidemark.core import collection as C
from tidemark.protocol.codec import encode
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query import match, project
from tidemark.query import plan as planner
from tidemark.query import update as update_mod
from tidemark.timeseries import explain_shape, scan
from tidemark.timeseries import indexes as ts_indexes
from tidemark.timeseries import modify as ts_modify
from tidemark.timeseries.bucketdoc import unpack_document
from tidemark.timeseries.collection import Target, buckets_a_write_may_touch, direct_write
from tidemark.timeseries.collection import measurements as _measurements

# --------------------------------------------------------------------------------------------------
# update (5.1+ rules: meta-only, multi, no upsert)
# --------------------------------------------------------------------------------------------------


def _collation(statement: Any, target: Target, field: str) -> Any:
    """The statement's effective collation (``collation.Collation``, None = simple): its own, else the
    collection default; an invalid spec -> mongod's error."""
    requested = C.collation_arg(statement, field) if isinstance(statement, dict) else None
    return C.effective_collation(requested, C.default_collation_of(view=target.view))


def _default_collation(buckets_info: Any) -> Any:
    """The collection's default collation (``collation.Collation``, None = simple): the order of the
    strings in its buckets' control min/max."""
    return C.effective_collation(None, C.default_collation_of(buckets_info))


def _parse_update(statement: Any, target: Target) -> tuple:
    if isinstance(statement, dict):
        for field in ("q", "u"):
            if field not in statement:
                raise MongoError(
                    ErrorCode.IDLFailedToParse,
                    f"BSON field 'update.updates.{field}' is missing but a required field",
                )
    collation = _collation(statement, target, "update.updates")
    translated = ts_modify.translate_update(statement, target.meta_field, collation=collation)
    parsed = update_mod.parse_update(translated.bucket_update, array_filters=translated.array_filters,
                                 collation=collation)
    matcher = (match.compile_filter(translated.bucket_query, collation=collation)
               if translated.bucket_query else None)
    return translated, parsed, matcher


async def update(ctx: CommandContext, cmd: dict, namespace: Any = None, statements: list | None = None) -> dict:
    """``namespace``: the view as the regular family resolved it; ``statements``: the command's updates
    as ``write_statements`` parsed them before the dispatch (parsed here when called directly)."""
    if statements is None:
        statements = write_statements.update_statements(cmd)
    target = await resolve(ctx, cmd, "update", namespace)
    # the write commands' one reading of the flag: a null 'ordered' is absent, so ordered
    ordered, bypass = write_statements.write_flags(cmd)
    parsed = C.parse_statements(statements, lambda st: _parse_update(st, target), ordered)

    def fn(w: Any) -> tuple[int, int, list]:
        n = modified = 0
        errors: list = []
        for i, item in enumerate(parsed):
            try:
                if isinstance(item, MongoError):
                    raise item
                run = _update_changes(w, target, *item)
                if run is None:  # dropped since the command resolved it: nothing matches, as on a missing one
                    continue
                # mongod runs the translated update on the buckets collection as any update: each
                # changed bucket is written by the one write of an updated document (storage rules,
                # 17419 past 16 MB, the buckets' validator unless bypassed, index keys)
                info = w.get_collection(target.bns)
                validator = None if bypass or not run.changes else C.validator_for(info)
                for rid, bucket, new in run.changes:
                    info = replace_doc(w, info, rid, bucket, new, validator)
                n += run.matched
                modified += run.modified
            except MongoError as e:
                errors.append(e.to_write_error(i))
                if ordered:
                    break
        return n, modified, errors

    n, modified, errors = await direct_write(ctx.server, target.bns, fn,
                                             buckets_a_write_may_touch(ctx.server, target, statements))
    reply: dict = {"n": n, "nModified": modified}
    if errors:
        reply["writeErrors"] = errors
    return reply


class _UpdateRun:
    """What one update statement would change: the access path over the buckets, the changes (record
    id, bucket, updated bucket), the measurements in the buckets matched and in those changed, and the
    index keys and buckets its scan examined."""

    def __init__(self, access: Any):
        self.access = access
        self.changes: list[tuple[bytes, dict, dict]] = []
        self.matched = 0
        self.modified = 0
        self.stats: dict = {}


def _update_access(info: Any, target: Target, translated: ts_modify.BucketUpdate) -> Any:
    """The access path over the buckets collection (``info``) of one translated update statement."""
    hint = None
    if translated.hint:
        hint = ts_indexes.translate_hint(translated.hint, list(info.indexes), target.time_field, target.meta_field)
    return planner.choose_plan(list(info.indexes), translated.bucket_query, None, hint,
                               collation=translated.collation)


def _update_changes(txn: Any, target: Target, translated: ts_modify.BucketUpdate, upd: Any,
                    matcher: Any) -> _UpdateRun | None:
    """Scan the buckets one parsed update selects and compute its changes, writing nothing (the update
    applies them; explain's executionStats count them). None when the buckets collection is gone."""
    info = txn.get_collection(target.bns)
    if info is None:
        return None
    run = _UpdateRun(_update_access(info, target, translated))
    scan = C.docs_in_txn(txn, info, run.access, run.stats)
    try:
        for rid, bucket in scan:
            if matcher is not None and not matcher(bucket):
                continue
            if ts_modify.is_closed(bucket):  # 7.0's meta updates leave closed buckets alone
                continue
            count = _measurements(bucket, target.time_field)
            new, changed = update_mod.apply_update(bucket, upd, query=translated.bucket_query)
            run.matched += count
            if changed:
                run.changes.append((rid, bucket, new))
                run.modified += count
    finally:
        scan.close()  # the changes are written after the scan closes
    return run


async def explain_update(ctx: CommandContext, cmd: dict, verbosity: str, namespace: Any = None) -> dict:
    """The first update statement's plan as mongod 7.0 shows a meta update: the statement translated to
    the buckets collection (its refusals, 72, are the update's own), an ``UPDATE`` over the bucket access
    path; with executionStats, what it would change — ``nMatched`` / ``nWouldModify`` in measurements,
    as the update's ``n`` / ``nModified`` — and the index keys and buckets examined. Nothing is written:
    the scan runs in a write transaction that writes nothing, after the open buckets were written out
    like any update does, so it sees what the view shows."""
    statements = write_statements.update_statements(cmd)
    target = await resolve(ctx, cmd, "update", namespace)
    translated, upd, matcher = _parse_update(statements[0], target)

    with ctx.server.engine.read() as r:
        info = r.get_collection(target.bns)
        access = None if info is None else _update_access(info, target, translated)
    win = {"stage": "EOF"} if access is None else {"stage": "UPDATE", "inputStage": access.explain(
        filter=translated.bucket_query)}
    reply: dict[str, Any] = {"queryPlanner": {"namespace": target.bns, "indexFilterSet": False,
                                              "parsedQuery": translated.bucket_query, "winningPlan": win,
                                              "rejectedPlans": []}}
    if verbosity == "queryPlanner" or access is None:
        return reply
    run = await direct_write(ctx.server, target.bns, lambda w: _update_changes(w, target, translated, upd, matcher))
    examined = run.stats if run is not None else {}
    counters = {"nMatched": run.matched if run else 0, "nWouldModify": run.modified if run else 0,
                "nWouldUpsert": 0}
    reply["executionStats"] = {"executionSuccess": True, "nReturned": 0,
                               "totalKeysExamined": examined.get("keys", 0),
                               "totalDocsExamined": examined.get("docs", 0),
                               "executionStages": {**win, "nReturned": 0, **counters}}
    return reply


# --------------------------------------------------------------------------------------------------
# delete / findAndModify remove (7.0 arbitrary deletes)
# --------------------------------------------------------------------------------------------------


def _parse_delete(statement: Any, target: Target, field: str = "delete.deletes", variables: dict | None = None
                  ) -> tuple:
    """(plan, bucket matcher, measurement matcher, hint) of one delete statement; ``variables``: the
    command's (its ``let`` evaluated once, and NOW), which both filters may read (``$expr``)."""
    if isinstance(statement, dict) and "limit" not in statement:
        raise MongoError(
            ErrorCode.IDLFailedToParse, "BSON field 'delete.deletes.limit' is missing but a required field"
        )
    if isinstance(statement, dict) and "q" not in statement:
        raise MongoError(
            ErrorCode.IDLFailedToParse, "BSON field 'delete.deletes.q' is missing but a required field"
        )
    if isinstance(statement, dict):
        # 'limit' as every delete reads it (mongod's numberDouble: a non-number is 0, every match); the
        # time-series engine sits below the command layer, so it is handed the limit as read
        statement = {**statement, "limit": write_statements.delete_limit(statement["limit"])}
    plan = ts_modify.plan_delete(statement, target.time_field, target.meta_field,
                                 target.options.bucket_max_span_seconds,
                                 collation=_collation(statement, target, field),
                                 control_collation=_default_collation(target.info))
    coll = plan.collation
    bucket_match = (match.compile_filter(plan.bucket_filter, variables=variables, collation=coll)
                    if plan.bucket_filter else None)
    measurement_match = (match.compile_filter(plan.measurement_filter, variables=variables, collation=coll)
                         if plan.measurement_filter else None)
    hint = statement.get("hint") or None
    return plan, bucket_match, measurement_match, hint


def _delete_in_txn(
    w: Any,
    target: Target,
    plan: ts_modify.DeletePlan,
    bucket_match: Any,
    measurement_match: Any,
    hint: Any = None,
) -> tuple[int, dict | None]:
    """Run one planned delete; returns (measurements deleted, the first deleted measurement).

    Buckets stream from the scan; only the changes are buffered (writes never run under the open
    scan), so memory grows with the buckets changed, not with the collection.
    """
    run = _delete_changes(w, target, plan, bucket_match, measurement_match, hint)
    if run is None:
        return 0, None
    info = w.get_collection(target.bns)
    for rid, keys, repacked in run.changes:
        if repacked is None:
            w.delete(info, rid, keys)
        else:
            info, new_keys = C.write_keys(w, info, repacked)
            w.update(info, rid, encode(repacked), keys, new_keys)
    return run.deleted, run.first


class _DeleteRun:
    """What one delete statement would change: the access path, the changes (record id, old index
    keys, repacked bucket or None to remove), the measurements deleted and buckets unpacked."""

    def __init__(self, access: Any):
        self.access = access
        self.changes: list[tuple[bytes, dict, dict | None]] = []
        self.deleted = 0
        self.buckets_unpacked = 0
        self.first: dict | None = None
        self.stats: dict = {}  # the scan's index keys and buckets examined (explain's counters)


def _delete_access(txn: Any, target: Target, plan: ts_modify.DeletePlan, hint: Any) -> tuple[Any, Any]:
    """(buckets collection info, the access path over it) of a planned delete; (None, None) when the
    buckets collection is gone."""
    info = txn.get_collection(target.bns)
    if info is None:
        return None, None
    if hint is not None:
        hint = ts_indexes.translate_hint(hint, list(info.indexes), target.time_field, target.meta_field)
    return info, planner.choose_plan(list(info.indexes), plan.bucket_filter, None, hint, collation=plan.collation)


def _delete_changes(txn: Any, target: Target, plan: ts_modify.DeletePlan, bucket_match: Any,
                    measurement_match: Any, hint: Any = None) -> _DeleteRun | None:
    """Scan the buckets a planned delete selects and compute its changes, writing nothing (the delete
    applies them; explain's executionStats count them)."""
    info, access = _delete_access(txn, target, plan, hint)
    if info is None:
        return None
    t, m = target.time_field, target.meta_field
    run = _DeleteRun(access)
    scan = C.docs_in_txn(txn, info, access, run.stats)
    try:
        for rid, bucket in scan:
            if bucket_match is not None and not bucket_match(bucket):
                continue
            if plan.whole_buckets:
                run.deleted += _measurements(bucket, t)
                run.changes.append((rid, C.index_keys(info, bucket), None))
                continue
            run.buckets_unpacked += 1
            keep: list[dict] = []
            removed = 0
            for measurement in unpack_document(bucket, t, m):
                take = (not plan.limit_one or run.deleted + removed == 0) and (
                    measurement_match is None or measurement_match(measurement)
                )
                if take:
                    removed += 1
                    if run.first is None:
                        run.first = measurement
                else:
                    keep.append(measurement)
            if removed:
                run.deleted += removed
                repacked = ts_modify.repack(bucket, keep, t, m, _default_collation(info))
                run.changes.append((rid, C.index_keys(info, bucket), repacked))
                if plan.limit_one:
                    break
    finally:
        scan.close()
    return run


async def explain_write(ctx: CommandContext, command: str, cmd: dict, verbosity: str, namespace: Any) -> dict:
    """explain of an update, delete or findAndModify on a time-series view: its first statement's plan
    (findAndModify: the delete of one measurement it is, refused as the command refuses it)."""
    if command == "update":
        return await explain_update(ctx, cmd, verbosity, namespace)
    if command == "delete":
        statements = cmd.get("deletes")
        if not isinstance(statements, list) or not statements:
            raise MongoError(ErrorCode.InvalidLength, "Write batch sizes must be between 1 and 100000. "
                                                      "Got 0 operations.")
        target = await resolve(ctx, cmd, "delete", namespace)
        return await explain_delete(ctx, target, statements[0], C.command_variables(cmd, "delete"), verbosity)
    field = "findAndModify" if "findAndModify" in cmd else "findandmodify"
    target = await resolve(ctx, cmd, field, namespace)
    statement = _find_and_modify_statement(cmd, field)
    return await explain_delete(ctx, target, statement, C.command_variables(cmd, field), verbosity, field)


async def explain_delete(ctx: CommandContext, target: Target, statement: Any, variables: dict, verbosity: str,
                         field: str = "delete.deletes") -> dict:
    """One delete statement's plan as 7.0 shows it: ``TS_MODIFY`` (``opType``, ``bucketFilter``,
    ``residualFilter``) over the bucket access path when measurements are unpacked, a plain ``DELETE``
    of whole buckets otherwise; with executionStats, what it would delete (nothing is deleted: the
    scan runs in a write transaction that writes nothing, after the open buckets were written out like
    any delete does), and the index keys and buckets its scan examined."""
    plan, bucket_match, measurement_match, hint = _parse_delete(statement, target, field, variables=variables)
    # the bucket filter as 7.0 writes it (what runs is plan.bucket_filter)
    shown = plan.shown_bucket_filter if plan.shown_bucket_filter is not None else plan.bucket_filter
    shown = explain_shape.bucket_filter(shown, uses_extended_range=scan.uses_extended_range(
        ctx.server, target.bns, target.time_field))

    def describe(txn: Any) -> dict:
        info, access = _delete_access(txn, target, plan, hint)
        if info is None:
            return {"stage": "EOF"}
        input_stage = access.explain(filter=shown)
        if plan.whole_buckets:
            return {"stage": "DELETE", "inputStage": input_stage}
        return {"stage": "TS_MODIFY", "opType": "deleteOne" if plan.limit_one else "deleteMany",
                "bucketFilter": shown, "residualFilter": plan.measurement_filter,
                "inputStage": input_stage}

    with ctx.server.engine.read() as r:
        win = describe(r)
    reply: dict[str, Any] = {"queryPlanner": {"namespace": target.bns, "indexFilterSet": False,
                                              "parsedQuery": shown, "winningPlan": win,
                                              "rejectedPlans": []}}
    if verbosity == "queryPlanner" or win["stage"] == "EOF":
        return reply
    run = await direct_write(ctx.server, target.bns, lambda w: _delete_changes(
        w, target, plan, bucket_match, measurement_match, hint))
    deleted = run.deleted if run is not None else 0
    # nWouldDelete counts measurements, as the whole-bucket DELETE does in 7.0 (one per measurement)
    counters = ({"nWouldDelete": deleted} if plan.whole_buckets else
                {"nBucketsUnpacked": run.buckets_unpacked if run is not None else 0,
                 "nMeasurementsDeleted": deleted, "nMeasurementsMatched": deleted})
    examined = run.stats if run is not None else {}
    reply["executionStats"] = {"executionSuccess": True, "nReturned": 0,
                               "totalKeysExamined": examined.get("keys", 0),
                               "totalDocsExamined": examined.get("docs", 0),
                               "executionStages": {**win, **counters, "nReturned": 0}}
    return reply


async def delete(ctx: CommandContext, cmd: dict, namespace: Any = None, statements: list | None = None) -> dict:
    """``namespace``: the view as the regular family resolved it; ``statements``: the command's deletes
    as ``write_statements`` parsed them before the dispatch (parsed here when called directly)."""
    if statements is None:
        statements = write_statements.delete_statements(cmd)
    target = await resolve(ctx, cmd, "delete", namespace)
    # the write commands' one reading of the flag: a null 'ordered' is absent, so ordered
    ordered, _ = write_statements.write_flags(cmd)
    variables = C.command_variables(cmd, "delete")
    parsed = C.parse_statements(statements, lambda st: _parse_delete(st, target, variables=variables), ordered)

    def fn(w: Any) -> tuple[int, list]:
        n, errors = 0, []
        for i, item in enumerate(parsed):
            try:
                if isinstance(item, MongoError):
                    raise item
                n += _delete_in_txn(w, target, *item)[0]
            except MongoError as e:
                errors.append(e.to_write_error(i))
                if ordered:
                    break
        return n, errors

    n, errors = await direct_write(ctx.server, target.bns, fn,
                                   buckets_a_write_may_touch(ctx.server, target, statements))
    reply: dict = {"n": n}
    if errors:
        reply["writeErrors"] = errors
    return reply


def _find_and_modify_statement(cmd: dict, field: str) -> dict:
    """findAndModify on a time-series view as the delete statement it is (``remove: true`` only; an
    update, upsert or sort -> 72): ``limit: 1`` and the command's query, collation and hint."""
    if not cmd.get("remove", False):
        if cmd.get("upsert", False):
            raise MongoError(ErrorCode.InvalidOptions, "Cannot perform an upsert on a time-series collection")
        raise MongoError(
            ErrorCode.InvalidOptions, "Cannot perform a non-multi update on a time-series collection"
        )
    if cmd.get("sort"):
        raise MongoError(
            ErrorCode.InvalidOptions, "Cannot perform a findAndModify with a sort on a time-series collection"
        )
    query = cmd.get("query") or {}
    if not isinstance(query, dict):
        raise MongoError(
            ErrorCode.TypeMismatch, f"BSON field '{field}.query' is the wrong type, expected type 'object'"
        )
    # the hint: the user's index (name or key pattern), translated per bucket index
    return {"q": query, "limit": 1, **{key: cmd[key] for key in ("collation", "hint") if cmd.get(key)}}


async def find_and_modify(ctx: CommandContext, cmd: dict, namespace: Any = None) -> dict:
    """findAndModify on a time-series view: ``remove: true`` only (sort -> 72)."""
    field = "findAndModify" if "findAndModify" in cmd else "findandmodify"
    target = await resolve(ctx, cmd, field, namespace)
    statement = _find_and_modify_statement(cmd, field)
    plan, bucket_match, measurement_match, hint = _parse_delete(statement, target, field,
                                                                C.command_variables(cmd, field))
    query = statement["q"]
    fields = cmd.get("fields")
    projection = project.compile_projection(fields, filter=query) if fields else None
    n, value = await direct_write(
        ctx.server, target.bns,
        lambda w: _delete_in_txn(w, target, plan, bucket_match, measurement_match, hint),
    )
    if value is not None and projection is not None:
        value = projection(value)
    return {"lastErrorObject": {"n": n}, "value": value}


