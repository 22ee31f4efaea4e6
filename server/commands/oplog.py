"""``applyOps``: apply oplog entries, as mongod 7.0 does for ``mongorestore --oplogReplay`` and
``--preserveUUID`` (one entry per command) and for direct callers.

Entries (``{op, ns, o, o2?, ui?, b?, ...}``; other oplog fields — ts, t, v, wall, lsid, txnNumber,
stmtId, prevOpTime — are accepted and ignored) are applied in order, each on its own, through the
regular command handlers (so time-series buckets, validators, indexes and the group commit behave as
for any client write), in oplog application mode (``CommandContext.from_oplog``): as mongod's
applyOperation_inlock, what an entry stores is not validated as a client's write is (no 180-level
nesting rule, ``$``-prefixed names anywhere, ``_id`` included); the 16 MB limit and the ``_id`` type
rules stay:

- ``i`` inserts ``o`` (its ``_id`` required); an existing ``_id`` makes it a replacement (idempotent
  replay);
- ``u`` updates the document ``o2._id`` with ``o``: a ``$v: 2`` diff (``{$v: 2, diff: {...}}``,
  applied atomically inside one write function) or, when ``o`` has an ``_id``, a replacement; an
  absent document is inserted when ``alwaysUpsert`` (default true) or the entry's ``b`` is true;
- ``d`` deletes ``o._id`` (an absent namespace or document is fine);
- ``n`` is skipped (not counted in ``applied`` nor ``results``);
- entries on ``<db>.system.views`` (mongod logs a view's creation — a time-series view's too — as an
  insert there) write the view document directly, as the catalog does; so does a ``create`` with a
  ``viewOn`` of ``system.buckets.*``;
- ``c``: create (``ui``: with that UUID; ``idIndex`` ignored), drop, collMod, dropIndexes,
  renameCollection, dropDatabase (only as the single entry), convertToCapped, nested applyOps.
  createIndexes and the index-build entries answer 115 as in mongod's applyOps mode (mongorestore
  turns them into createIndexes commands itself). mongod's acceptable errors (the namespace exists
  on create, is missing on drop, an index is missing ...) count as success.

``ui`` on a CRUD entry must name the collection of ``ns`` (3318200 otherwise). Replies are mongod's:
``{applied, results: [bool...]}``; a CRUD entry that finds nothing to update (or a UUID of another
collection) is ``false`` and the command ends ``UnknownError`` (8) "applyOps had one or more errors
applying ops" after the rest ran; a malformed entry, a failing command or a write the storage refuses
(a duplicate key: apply_ops_dups.js) stops at once with its own code, ``applied`` counting it.
``preCondition`` is 6711600 (removed in 6.2). ``oplogApplicationMode`` takes mongod's names
(``APPLICATION_MODES``; 9 FailedToParse otherwise, 14 TypeMismatch for no string), all applied alike
(the fCV document's guard of mongod's "InitialSync" mode is not modelled). Authorization
(``applyOps`` on the cluster, ``useUUID``/``forceUUID`` for UUIDs, each entry's own actions) is the
rule in :mod:`tidemark.auth.oplog_rules`. Bucket documents in the MongoDB 7.0 compressed form are
stored decoded, as by an insert into ``system.buckets.*``.
"""

from __future__ import annotations

import asyncio
import uuid as uuid_mod
from typing import Any

from tidemark import collections as access
from tidemark.arguments import extract_wrong_type, of_kind
from tidemark.auth.oplog_rules import as_uuid, ns_by_uuid
from tidemark.commands import capped, crud, ddl, indexes
from tidemark.commands import timeseries as ts
from tidemark.commands._oplog_diff import apply_diff
from tidemark.context import CommandContext, CommandSpec
from tidemark.core import collection as C
from tidemark.protocol.codec import decode, encode
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.expr_logic import truthy
from tidemark.query.match import compile_filter

COMMAND = "applyOps"
MAX_DEPTH = 10
_OPS = frozenset("iudcn")
# oplog command types mongod knows (parseCommandType); those it cannot apply here answer 115
_KNOWN = frozenset({"create", "renameCollection", "drop", "collMod", "applyOps", "dbCheck", "dropDatabase",
                    "emptycapped", "convertToCapped", "createIndexes", "startIndexBuild", "commitIndexBuild",
                    "abortIndexBuild", "dropIndexes", "deleteIndexes", "commitTransaction", "abortTransaction",
                    "importCollection", "deleteIndex", "dropIndex"})
_NOT_IN_APPLY_OPS = ("createIndexes", "startIndexBuild", "commitIndexBuild", "abortIndexBuild")
_ACCEPTABLE = {  # mongod's acceptableErrors of each command (idempotent replay)
    "create": {ErrorCode.NamespaceExists},
    "drop": {ErrorCode.NamespaceNotFound},
    "collMod": {ErrorCode.IndexNotFound, ErrorCode.NamespaceNotFound},
    "dropIndexes": {ErrorCode.IndexNotFound, ErrorCode.NamespaceNotFound},
    "renameCollection": {ErrorCode.NamespaceNotFound, ErrorCode.NamespaceExists},
    "dropDatabase": {ErrorCode.NamespaceNotFound},
    "convertToCapped": {ErrorCode.NamespaceNotFound},
}


class _Failed(Exception):
    """A CRUD entry that did not apply: ``false`` in ``results``; the batch goes on."""

    def __init__(self, error: MongoError):
        super().__init__(error.message)
        self.error = error


def _type_name(value: Any) -> str:
    return "missing" if value is _MISSING else C.type_name(value)


_MISSING = object()


def _check_type(name: str, value: Any, kind: type, expected: str) -> None:
    """mongod's checkBSONType: 14 "Wrong type for '<field>'. Expected a <type>, got a <type>."."""
    if not of_kind(value, kind):
        raise MongoError(ErrorCode.TypeMismatch,
                         f"Wrong type for '{name}'. Expected a {expected}, got a {_type_name(value)}.")


def _validate(ops: Any, name: str = COMMAND, depth: int = 0) -> None:
    """mongod's validateApplyOpsCommand: shapes, and nesting at most ten deep."""
    _check_type(name, ops, list, "array")
    for i, op in enumerate(ops):
        _check_type(str(i), op, dict, "object")
        _check_type("op", op.get("op", _MISSING), str, "string")
        if op["op"] == "c":
            _check_type("o", op.get("o", _MISSING), dict, "object")
            if next(iter(op["o"]), None) == "applyOps":
                if depth + 1 >= MAX_DEPTH:
                    raise MongoError(ErrorCode.FailedToParse, "Too many nested applyOps")
                _validate(op["o"]["applyOps"], "applyOps", depth + 1)


def _check_operations(ops: list) -> None:
    """mongod's OplogApplicationChecks::checkOperationArray."""
    for i, op in enumerate(ops):
        kind = op.get("op")
        if kind is None:
            raise MongoError(ErrorCode.IllegalOperation, f"op does not contain required \"op\" field: {i}")
        if type(kind) is not str:
            raise MongoError(ErrorCode.IllegalOperation, f"\"op\" field is not a string: {i}")
        if not kind:
            raise MongoError(ErrorCode.IllegalOperation, f"\"op\" field value cannot be empty: {i}")
        ns = op.get("ns")
        if ns is None:
            raise MongoError(ErrorCode.IllegalOperation, f"op does not contain required \"ns\" field: {i}")
        if type(ns) is not str:
            raise MongoError(ErrorCode.IllegalOperation, f"\"ns\" field is not a string: {i}")
        if "\0" in ns:
            raise MongoError(ErrorCode.IllegalOperation, "namespaces cannot have embedded null characters")
        if kind != "n" and not ns:
            raise MongoError(ErrorCode.IllegalOperation,
                             f"\"ns\" field value cannot be empty when op type is not 'n': {i}")


def _valid_ns(ns: str) -> bool:
    db, _, coll = ns.partition(".")
    return bool(db and coll) and not any(c in db for c in '/\\ "$')


def _shown(op: dict) -> str:
    return C.format_value(op)


def _sub(ctx: CommandContext, db: str, name: str) -> CommandContext:
    """The context of one entry's own command (same connection and operation, other database); its
    writes are oplog application's (``from_oplog``: no storage rules of a client's write)."""
    return CommandContext(ctx.server, ctx.conn, db, name, op=ctx.op, lsid=ctx.lsid, from_oplog=True)


def _parse_entry(op: dict) -> None:
    """mongod's OplogEntry::parse of the fields applyOps reads."""
    kind = op["op"]
    if kind not in _OPS:
        raise MongoError(ErrorCode.BadValue, f"Enumeration value '{kind}' for field 'op' is not a valid value.")
    if "o" not in op:
        raise MongoError(ErrorCode.IDLFailedToParse, "BSON field 'o' is missing but a required field")
    if not isinstance(op["o"], dict):
        raise MongoError(ErrorCode.TypeMismatch, "BSON field 'o' is the wrong type "
                                                 f"'{C.type_name(op['o'])}', expected type 'object'")
    if "o2" in op and not isinstance(op["o2"], dict):
        raise MongoError(ErrorCode.TypeMismatch, "BSON field 'o2' is the wrong type "
                                                 f"'{C.type_name(op['o2'])}', expected type 'object'")
    if kind == "c":
        name = next(iter(op["o"]), "")
        if name not in _KNOWN:
            raise MongoError(ErrorCode.BadValue,
                             f"Unknown oplog entry command type: {name} Object field: {C.format_value(op['o'])}")


# ------------------------------------------------------------------------------------------ the batch


# mongod's OplogApplication::parseMode (repl/oplog.cpp): the names an applyOps may give
APPLICATION_MODES = frozenset({"InitialSync", "Recovering", "Secondary", "ApplyOps"})


async def apply_ops(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    ops: Any = cmd.get(COMMAND)
    _validate(ops)
    _check_operations(ops)
    if cmd.get("prepare") is not None:
        raise MongoError(ErrorCode.BadValue, "applyOps command can't have 'prepare' field")
    if cmd.get("partialTxn") is not None:
        raise MongoError(31056, "applyOps command can't have 'partialTxn' field.")
    if cmd.get("count") is not None:
        raise MongoError(31240, "applyOps command can't have 'count' field.")
    if "preCondition" in cmd:  # (removed in 6.2)
        raise MongoError(6711600, "applyOps command no longer supports the 'preCondition' option")
    if "oplogApplicationMode" in cmd:  # (applied alike: Tidemark has no replication to tell apart)
        mode = cmd["oplogApplicationMode"]
        if not of_kind(mode, str):  # (null too: mongod's bsonExtractStringField)
            error = extract_wrong_type("oplogApplicationMode", mode, "string")
            raise MongoError(error.code, f"Could not parse out oplogApplicationMode :: caused by :: {error.message}")
        if mode not in APPLICATION_MODES:
            raise MongoError(ErrorCode.FailedToParse, "Could not parse oplogApplicationMode :: caused by :: "
                                                      f"Invalid oplog application mode provided: {mode}")
    if any(op["op"] == "c" and next(iter(op.get("o") or {}), None) == "dropDatabase" for op in ops) and len(ops) != 1:
        raise MongoError(6275900, "dropDatabase in an applyOps must be the only entry")
    always_upsert = True if "alwaysUpsert" not in cmd else bool(cmd["alwaysUpsert"])
    bypass = cmd.get("bypassDocumentValidation") is True
    applied, results, errors = await _apply(ctx, ops, always_upsert, bypass)
    if errors:
        raise MongoError(ErrorCode.UnknownError, "applyOps had one or more errors applying ops",
                         extra={"applied": applied, "results": results})
    return {"applied": applied, "results": results}


async def _apply(ctx: CommandContext, ops: list, always_upsert: bool, bypass: bool) -> tuple[int, list, int]:
    """(applied, results, failed entries); a malformed entry or failing command raises with ``applied``
    and ``results`` as mongod reports them."""
    applied, results, errors = 0, [], 0
    for op in ops:
        if op["op"] == "n":
            continue
        ns = op["ns"]
        if op["op"] != "c" and not _valid_ns(ns):
            raise MongoError(ErrorCode.InvalidNamespace, f"invalid ns: {ns}")
        try:
            ctx.check_deadline()
            _parse_entry(op)
            if op["op"] == "c":
                await _command(ctx, op, bypass)
            else:
                await _crud(ctx, op, always_upsert, bypass)
            results.append(True)
        except _Failed:
            results.append(False)
            errors += 1
        except MongoError as exc:
            applied += 1
            results.append(False)
            raise MongoError(exc.code, exc.message,
                             extra={**exc.extra, "applied": applied, "results": results}) from None
        applied += 1
    return applied, results, errors


# ------------------------------------------------------------------------------------------ CRUD entries


async def _crud(ctx: CommandContext, op: dict, always_upsert: bool, bypass: bool) -> None:
    ns, kind, o = op["ns"], op["op"], op["o"]
    db, coll = ns.split(".", 1)
    if "ui" in op:
        ui = as_uuid(op["ui"])
        if ui is None or await ctx.run_blocking(ns_by_uuid, ctx.server.engine, ui) != ns:
            raise _Failed(MongoError(3318200, f"Namespace '{ns}' and UUID '{ui or op['ui']}' point to different "
                                              "collections"))
    with ctx.server.engine.read() as r:
        exists = r.get_collection(ns) is not None
        # mongod acquires the collection with views forbidden before anything else: 166 even for 'd'
        if not exists and C.get_view(r, db, coll) is not None:
            raise MongoError(ErrorCode.CommandNotSupportedOnView, f"Namespace {ns} is a view, not a collection")
    if not exists:
        if kind == "d":
            return  # idempotent: deleting from a missing collection is fine
        raise MongoError(ErrorCode.NamespaceNotFound, "cannot apply insert or update operation on a non-existent "
                                                      f"namespace {ns}: {_shown(op)}")
    sub = _sub(ctx, db, "applyOps")
    if coll == C.SYSTEM_VIEWS:  # view definitions: written as the catalog writes them, not by clients
        await _views_write(sub, op, always_upsert or op.get("b") is True)
        return
    if kind == "i":
        if "_id" not in o:
            raise MongoError(ErrorCode.NoSuchKey, f"Failed to apply insert due to missing _id: {_shown(op)}")
        await _insert(sub, coll, o, bypass)
    elif kind == "d":
        if "_id" not in o:
            raise MongoError(ErrorCode.NoSuchKey, f"Failed to apply delete due to missing _id: {_shown(op)}")
        reply = await crud.delete(sub, {"delete": coll, "deletes": [{"q": {"_id": o["_id"]}, "limit": 1}],
                                        "$db": db})
        _check_write(reply)
    else:
        await _update(sub, op, always_upsert or op.get("b") is True, bypass)


def _check_write(reply: dict) -> None:
    """A write the storage refused (a duplicate key, a validator...) is an exception in mongod's
    applyOperation: the batch stops there with its code, the entry counted in ``applied``."""
    errors = reply.get("writeErrors")
    if errors:
        raise MongoError(errors[0]["code"], errors[0]["errmsg"])


def _stored(coll: str, doc: dict) -> dict:
    """A bucket document as Tidemark stores it (MongoDB 7.0 compressed buckets decoded)."""
    return ts.stored_bucket(doc) if coll.startswith(C.BUCKETS_PREFIX) else doc


async def _insert(sub: CommandContext, coll: str, doc: dict, bypass: bool) -> None:
    """Insert; on a duplicate ``_id`` replace the document instead (mongod's insert-to-upsert)."""
    cmd: dict[str, Any] = {"insert": coll, "documents": [doc], "$db": sub.db}
    if bypass:
        cmd["bypassDocumentValidation"] = True
    reply = await crud.insert(sub, cmd)
    errors = reply.get("writeErrors") or []
    if errors and errors[0]["code"] == ErrorCode.DuplicateKey and "_id" in (errors[0].get("keyPattern") or {"_id": 1}):
        await _replace(sub, coll, doc["_id"], doc, not coll.startswith(C.BUCKETS_PREFIX), bypass)
        return
    _check_write(reply)


async def _replace(sub: CommandContext, coll: str, _id: Any, doc: dict, upsert: bool, bypass: bool) -> dict:
    cmd: dict[str, Any] = {"update": coll, "updates": [{"q": {"_id": _id}, "u": _stored(coll, doc), "upsert": upsert}],
           "$db": sub.db}
    if bypass:
        cmd["bypassDocumentValidation"] = True
    reply = await crud.update(sub, cmd)
    _check_write(reply)
    return reply


async def _update(sub: CommandContext, op: dict, upsert: bool, bypass: bool) -> None:
    o, o2 = op["o"], op.get("o2")
    coll = op["ns"].split(".", 1)[1]
    if not isinstance(o2, dict) or "_id" not in o2:
        raise MongoError(ErrorCode.NoSuchKey, f"Failed to apply update due to missing _id: {_shown(op)}")
    _id = o2["_id"]
    if "_id" in o:  # a replacement ($v may then be a user field)
        buckets = coll.startswith(C.BUCKETS_PREFIX)  # a new bucket goes in by the buckets' own insert
        reply = await _replace(sub, coll, _id, o, upsert and not buckets, bypass)
        if not reply.get("n"):
            if not upsert:
                raise _Failed(MongoError(ErrorCode.UpdateOperationFailed, f"Update of non-mod failed: {_shown(op)}"))
            if buckets:
                await _insert(sub, coll, {**o, "_id": _id}, bypass)
        return
    version = o.get("$v", _MISSING)
    if version is _MISSING or isinstance(version, bool) or not isinstance(version, int | float) or version != 2:
        shown = "EOO" if version is _MISSING else f"$v: {C.format_value(version)}"
        raise MongoError(4772600, f"Expected _id field or $v:2, but got: {shown}")
    diff = o.get("diff", _MISSING)
    if not isinstance(diff, dict):
        raise MongoError(4772601, "Expected 'diff' field to be an object, instead got type: "
                                  f"{_type_name(diff)}")
    if not diff:
        raise MongoError(4770500, "Expected diff to be non-empty")
    if await _apply_diff(sub, coll, _id, diff, bypass):
        return
    if not upsert:
        raise _Failed(MongoError(ErrorCode.UpdateOperationFailed, f"Failed to apply update: {_shown(op)}"))
    await _insert(sub, coll, apply_diff({"_id": _id}, diff), bypass)


async def _apply_diff(sub: CommandContext, coll: str, _id: Any, diff: dict, bypass: bool) -> bool:
    """Apply ``diff`` to the document ``_id`` in one write function; False when there is none."""
    ns = C.ns_of(sub.db, coll)
    flt = {"_id": _id}

    def fn(w: Any) -> bool:
        info = w.get_collection(ns)
        if info is None:
            return False
        # mongod finds o2's document with the collection's default collation ({_id: "FOO"} finds "foo"
        # in a case-insensitive collection), as the replacement and delete entries do through crud
        collation = C.effective_collation(None, C.default_collation_of(info))
        match = compile_filter(flt, collation=collation)
        found = access.matches_in_txn(w, info, flt, match, multi=False, collation=collation)
        if not found:
            return False
        rid, doc = found[0]
        new = _stored(coll, apply_diff(doc, diff))
        access.replace_doc(w, info, rid, doc, new, None if bypass else C.validator_for(info), from_oplog=True)
        return True

    try:
        if coll.startswith(C.BUCKETS_PREFIX):
            return await ts.direct_writer(coll)(sub, fn)
        return await asyncio.wrap_future(sub.server.engine.write(fn))
    except MongoError as exc:
        if exc.code in (4770500, 4770501, 4770502, 4770503, 4770504, 4770505, 4770507, 4770512, 4770514,
                        4770519, 4770520, 4770521, 4728000, 470510):
            raise  # a malformed diff stops the batch, as mongod's parse does
        raise _Failed(exc) from None


async def _views_write(sub: CommandContext, op: dict, upsert: bool) -> None:
    """An entry on ``<db>.system.views`` (mongod logs view creation, time-series views included, as an
    insert there): the view document inserted, replaced, diffed or deleted by ``_id``."""
    kind, o = op["op"], op["o"]
    key = (op.get("o2") or {}) if kind == "u" else o
    if "_id" not in key:
        raise MongoError(ErrorCode.NoSuchKey, f"Failed to apply {_VERBS[kind]} due to missing _id: {_shown(op)}")
    _id = key["_id"]
    diff = None
    if kind == "u" and "_id" not in o:
        if o.get("$v") != 2 or not isinstance(o.get("diff"), dict) or not o["diff"]:
            raise MongoError(4772600, f"Expected _id field or $v:2, but got: {C.format_value(o.get('$v'))}")
        diff = o["diff"]
    ns = C.ns_of(sub.db, C.SYSTEM_VIEWS)

    def fn(w: Any) -> bool:
        info = w.get_collection(ns)
        views = [(bytes(rid), decode(raw)) for rid, raw in w.scan(info)]  # a few documents; no scan left open
        found = next(((rid, doc) for rid, doc in views if doc.get("_id") == _id), None)
        if kind == "d":
            if found is not None:
                w.delete(info, found[0], C.index_keys(info, found[1]))
            return True
        if kind == "u" and found is None and not upsert:
            return False
        new = o if diff is None else apply_diff(found[1] if found else {"_id": _id}, diff)
        if found is None:
            w.insert(info, encode(new), C.index_keys(info, new))
        else:
            w.update(info, found[0], encode(new), C.index_keys(info, found[1]), C.index_keys(info, new))
        return True

    if not await asyncio.wrap_future(sub.server.engine.write(fn)):
        raise _Failed(MongoError(ErrorCode.UpdateOperationFailed, f"Failed to apply update: {_shown(op)}"))


_VERBS = {"i": "insert", "u": "update", "d": "delete"}


# ------------------------------------------------------------------------------------------ command entries


async def _command(ctx: CommandContext, op: dict, bypass: bool) -> None:
    o = dict(op["o"])
    name = next(iter(o))
    db = op["ns"].split(".", 1)[0]
    if name in _NOT_IN_APPLY_OPS:
        raise MongoError(ErrorCode.CommandNotSupported, f"The {name} operation is not supported in applyOps mode")
    if name in ("dbCheck", "emptycapped", "commitTransaction", "abortTransaction", "importCollection"):
        raise MongoError(ErrorCode.CommandNotSupported, f"applying a '{name}' oplog entry is not supported by Tidemark")
    if name == "applyOps":
        _validate(o["applyOps"], "applyOps")
        _check_operations(o["applyOps"])
        nested_upsert = True if "alwaysUpsert" not in o else bool(o["alwaysUpsert"])
        applied, results, errors = await _apply(ctx, o["applyOps"], nested_upsert, bypass)
        if errors:
            raise MongoError(ErrorCode.UnknownError, "applyOps had one or more errors applying ops")
        return
    family = {"deleteIndexes": "dropIndexes", "deleteIndex": "dropIndexes", "dropIndex": "dropIndexes"}.get(name, name)
    ui = as_uuid(op.get("ui"))
    if family != "create" and ui is not None and family in ("drop", "collMod", "dropIndexes", "convertToCapped"):
        found = await ctx.run_blocking(ns_by_uuid, ctx.server.engine, ui)
        if found is None:
            return  # NamespaceNotFound: acceptable for each of these
        db, o[name] = found.split(".", 1)
    sub = _sub(ctx, "admin" if family == "renameCollection" else db, name)
    body = {family: o.pop(name), **o, "$db": sub.db}
    try:
        if family == "create":
            body.pop("idIndex", None)
            view_on = body.get("viewOn")
            if type(view_on) is str and view_on.startswith(C.BUCKETS_PREFIX):  # a time-series view
                view = {"_id": C.ns_of(sub.db, body[family]), "viewOn": view_on, "pipeline": body.get("pipeline", [])}
                if "collation" in body:
                    view["collation"] = body["collation"]
                await ddl.create(sub, {"create": C.SYSTEM_VIEWS, "$db": sub.db})
                await _views_write(sub, {"op": "i", "ns": C.ns_of(sub.db, C.SYSTEM_VIEWS), "o": view}, True)
            elif ui is not None:
                await _create_with_uuid(sub, body, ui)
            else:
                await ddl.create(sub, body)
        elif family == "drop":
            await ddl.drop(sub, body)
        elif family == "collMod":
            if truthy(body.get("dryRun")):  # coll_mod.cpp: a dry run changes nothing, so replays none
                raise MongoError(ErrorCode.InvalidOptions,
                                 "dry run mode is not applicable to oplog application or applyOps")
            await ddl.coll_mod(sub, body)
        elif family == "dropIndexes":
            await indexes.drop_indexes(sub, body)
        elif family == "renameCollection":
            await ddl.rename_collection(sub, body)
        elif family == "dropDatabase":
            await ddl.drop_database(sub, {"dropDatabase": 1, "$db": db})
        elif family == "convertToCapped":
            await capped.convert_to_capped(sub, body)
    except MongoError as exc:
        if exc.code not in _ACCEPTABLE.get(family, ()):
            raise


async def _create_with_uuid(sub: CommandContext, body: dict, ui: uuid_mod.UUID) -> None:
    """``create`` with the collection UUID given (``mongorestore --preserveUUID``): a collection that
    already has this UUID keeps it (moved to this name within the database, like mongod); a name
    already taken by another collection is NamespaceExists."""
    name = C.collection_arg(body, "create")
    if "timeseries" in body or name.startswith(C.BUCKETS_PREFIX) or "viewOn" in body:
        raise MongoError(ErrorCode.CommandNotSupported,
                         "creating a view or a time-series collection with a given UUID is not supported by Tidemark")
    C.check_create_name(sub.db, name)
    options = ddl.parse_create_options(body, name)
    ns = C.ns_of(sub.db, name)

    def fn(w: Any) -> None:
        existing = w.get_collection(ns)
        if existing is not None:
            if existing.uuid == ui:
                return
            raise MongoError(ErrorCode.NamespaceExists, f"Namespace {ns} already exists")
        if C.get_view(w, sub.db, name) is not None:
            raise MongoError(ErrorCode.NamespaceExists, f"Namespace {ns} already exists")
        for info in w.list_collections(sub.db):
            if info.uuid == ui:  # mongod renames the collection holding the UUID to the name created
                w.rename_collection(info.ns, ns)
                return
        access.create_collection(w, ns, options, uuid=ui, clustered="clusteredIndex" in options)

    await asyncio.wrap_future(sub.server.engine.write(fn))


COMMANDS = [
    CommandSpec(COMMAND, apply_ops, help="internal command to apply oplog entries\n{ applyOps : [ ] }"),
]
