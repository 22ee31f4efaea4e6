"""Authorization of the restore commands ``applyOps`` and ``_mergeAuthzCollections``, as mongod 7.0
checks them (``OplogApplicationChecks::checkAuthForOperation``; ``checkAuthForTypedCommand`` of
``MergeAuthzCollectionsCommand``). Both answer with their own messages ("Unauthorized", "Not authorized
to ..."), not the usual "not authorized on <db> to execute command".

applyOps needs ``applyOps`` on the cluster; all actions on every resource for an empty batch or a
batch of several entries with a create/renameCollection (mongod's "needs superuser"); ``useUUID``
(cluster) when an entry carries a UUID, plus ``forceUUID`` to create a collection with one; then, per
entry: ``i`` insert, ``u`` update (and insert when it may upsert: ``alwaysUpsert``, default true, or
the entry's ``b``), ``d`` remove — plus ``bypassDocumentValidation`` when asked — on its namespace (the
collection of ``ui`` when that exists); ``n`` ``appendOplogNote`` (cluster); ``c`` whatever the
command itself needs on the entry's database (``admin`` for renameCollection). ``root`` has all of it
but the "superuser" case, like in mongod. Rules are called by :func:`tidemark.auth.rules.authorize`.
"""

from __future__ import annotations

import uuid as uuid_mod
from typing import Any

from bson.binary import Binary

from tidemark.auth import resources as R
from tidemark.auth.render import render_command
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.expr_logic import truthy  # BSON trueValue(): a flag as the handlers read it


def _unauthorized(message: str = "Unauthorized") -> MongoError:
    return MongoError(ErrorCode.Unauthorized, message)


def _is_uuid(value: Any) -> bool:
    return isinstance(value, uuid_mod.UUID) or (isinstance(value, Binary) and value.subtype == 4)


def as_uuid(value: Any) -> uuid_mod.UUID | None:
    """A BSON UUID (binary subtype 4) as a UUID; None for anything else."""
    if isinstance(value, uuid_mod.UUID):
        return value
    if isinstance(value, Binary) and value.subtype == 4 and len(value) == 16:
        return uuid_mod.UUID(bytes=bytes(value))
    return None


def ns_by_uuid(engine: Any, ui: uuid_mod.UUID | None) -> str | None:
    """The namespace of the collection with this UUID (None when there is none)."""
    if ui is None:
        return None
    with engine.read() as r:
        for db in r.list_databases():
            for info in r.list_collections(db):
                if info.uuid == ui:
                    return info.ns
    return None


def _allowed_everywhere(req: Any, pattern: R.Pattern, actions: list[str]) -> bool:
    """``actions`` granted on the resource pattern itself (``anyResource`` or ``anyNormal`` named as
    the target, as mongod's isAuthorizedForActionsOnResource(forAnyNormalResource()) asks)."""
    have = (req.privileges.get(R.ANY) or frozenset()) | (req.privileges.get(pattern) or frozenset())
    return "anyAction" in have or all(a in have for a in actions)


def _first(doc: Any) -> str | None:
    return next(iter(doc), None) if isinstance(doc, dict) else None


def _validity(ops: Any) -> str:
    """mongod's validateApplyOpsCommand, for authorization: "ok", "uuid", "forceUuid" or "superuser"."""
    level = {"ok": 0, "uuid": 1, "forceUuid": 2, "superuser": 3}
    worst = "ok"
    stack = [ops]
    while stack:
        batch = stack.pop()
        if not isinstance(batch, list):
            continue
        if not batch:
            return "superuser"
        entries = [op for op in batch if isinstance(op, dict)]
        if len(batch) > 1 and any(op.get("op") == "c" and _first(op.get("o")) in ("create", "renameCollection")
                                  for op in entries):
            return "superuser"
        for op in entries:
            o: Any = op.get("o")
            has_uuid = any(_is_uuid(v) for v in op.values()) or (
                op.get("op") == "c" and isinstance(o, dict) and any(_is_uuid(v) for v in o.values()))
            if has_uuid:
                want = "forceUuid" if op.get("op") == "c" and _first(o) == "create" else "uuid"
                worst = want if level[want] > level[worst] else worst
            if op.get("op") == "c" and _first(o) == "applyOps":
                stack.append(o.get("applyOps"))
    return worst


def apply_ops(req: Any) -> None:
    """The rule of ``applyOps`` (``req``: a :class:`tidemark.auth.rules.Request`)."""
    from tidemark.auth import rules

    cmd = req.cmd
    if not req.allowed(R.CLUSTER, "applyOps"):
        raise _unauthorized()
    validity = _validity(cmd.get("applyOps"))
    if validity == "superuser":
        if not _allowed_everywhere(req, R.ANY, sorted(R.ACTIONS)):
            raise _unauthorized()
        return
    if validity == "forceUuid" and not req.allowed(R.CLUSTER, "forceUUID", "useUUID"):
        raise _unauthorized()
    if validity == "uuid" and not req.allowed(R.CLUSTER, "useUUID"):
        raise _unauthorized()
    always_upsert = bool(cmd["alwaysUpsert"]) if "alwaysUpsert" in cmd else True
    bypass = ("bypassDocumentValidation",) if truthy(cmd.get("bypassDocumentValidation")) else ()
    ops = cmd.get("applyOps")
    for op in ops if isinstance(ops, list) else []:
        if isinstance(op, dict):
            _entry(req, rules, op, always_upsert, bypass)
    conditions = cmd.get("preCondition")
    for condition in conditions if isinstance(conditions, list) else []:
        ns = condition.get("ns") if isinstance(condition, dict) else None
        if not req.allowed(req.full_ns(ns), "find"):
            raise _unauthorized("Unauthorized to check precondition")


def _entry(req: Any, rules: Any, op: dict, always_upsert: bool, bypass: tuple) -> None:
    kind = op.get("op")
    if kind == "n":
        if not req.allowed(R.CLUSTER, "appendOplogNote"):
            raise _unauthorized()
        return
    ns = op.get("ns")
    if _is_uuid(op.get("ui")):
        found = ns_by_uuid(req.server.engine, as_uuid(op["ui"]))
        ns = found or ns
    target = req.full_ns(ns)
    o: Any = op.get("o")
    if kind == "c":
        name = _first(o)
        spec = req.server.commands.get(name) if name else None
        if spec is None:
            raise MongoError(ErrorCode.FailedToParse, "Unrecognized command in op")
        db = "admin" if spec.name == "renameCollection" else (ns.split(".", 1)[0] if type(ns) is str else req.db)
        rule = rules.RULES.get(spec.name)
        if rule is None:
            return
        inner = rules.Request(req.server, req.conn, req.session, req.privileges, db, o, spec.name)
        try:
            rule(inner)
        except rules.Denied:
            raise MongoError(ErrorCode.Unauthorized,
                             f"not authorized on {db} to execute command {render_command(o)}") from None
        return
    if kind == "i":
        actions: tuple[str, ...] = ("insert", *bypass)
    elif kind == "u":
        actions = ("update", *(("insert",) if always_upsert or truthy(op.get("b")) else ()), *bypass)
    elif kind == "d":
        actions = ("remove",)
    else:
        raise MongoError(ErrorCode.FailedToParse, "Unrecognized opType")
    if not req.allowed(target, *actions):
        raise _unauthorized()


def merge_authz_collections(req: Any) -> None:
    """The rule of ``_mergeAuthzCollections``: create/grant/revoke users and roles everywhere (drop
    too with ``drop``), and ``find`` on the temporary collections."""
    cmd = req.cmd
    actions = ["createUser", "createRole", "grantRole", "revokeRole"]
    if truthy(cmd.get("drop")):
        actions += ["dropUser", "dropRole"]
    for key, what in (("tempUsersCollection", "user"), ("tempRolesCollection", "role")):
        coll = cmd.get(key)
        if type(coll) is not str or not coll:
            continue
        if not _allowed_everywhere(req, R.ANY_NORMAL, actions):
            raise _unauthorized(f"Not authorized to update {what} data using _mergeAuthzCollections a command")
        if not req.allowed(req.full_ns(coll), "find"):
            raise _unauthorized(f"Not authorized to read {coll}")
