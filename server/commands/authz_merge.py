"""``_mergeAuthzCollections``: how mongorestore restores users and roles, as mongod 7.0 does it.

mongorestore never writes ``admin.system.users`` / ``admin.system.roles`` itself: it inserts the
dumped documents into temporary collections (``admin.tempusers``, ``admin.temproles`` by default) and
runs ``{_mergeAuthzCollections: 1, tempUsersCollection: "admin.tempusers", tempRolesCollection:
"admin.temproles", drop: <--drop>, db: <"" for a whole dump, else the --db restored>}`` on ``admin``.

Semantics (mongod's ``CmdMergeAuthzCollections``):

- only the users (roles) of ``db`` are merged, every database's when ``db`` is "";
- without ``drop`` each temporary document is inserted; one that collides with an existing user
  (role) is skipped with a warning (log 20511 / 20513) — existing definitions win;
- with ``drop`` an existing user (role) of the same name is replaced by the temporary one, and the
  users (roles) of ``db`` (every database's for "") absent from the temporary collection are
  removed — never all at once first, so the caller cannot lock itself out midway.

The whole merge is one write transaction (acknowledged = fsynced) and every change bumps the
authorization generation, so connections see it on their next command. The auth schema document
is written as by every change of users or roles (:func:`tidemark.auth.store.ensure_auth_schema`).
"""

from __future__ import annotations

from typing import Any, cast

from tidemark import log
from tidemark.arguments import check_fields, extract_wrong_type, field
from tidemark.auth import store
from tidemark.commands.users import write
from tidemark.context import CommandContext, CommandSpec
from tidemark.protocol import codec
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query import index_keys
from tidemark.storage.errors import StorageError

COMMAND = "_mergeAuthzCollections"
_KINDS = (("tempUsersCollection", store.USERS, "user", 20510, 20511),
          ("tempRolesCollection", store.ROLES, "role", 20512, 20513))


def _name(doc: dict, kind: str) -> tuple[str, str]:
    """(name, db) of a user or role document; mongod's bsonExtractStringField errors otherwise."""
    for key in (kind, "db"):
        if key not in doc:
            raise MongoError(ErrorCode.NoSuchKey, f"Missing expected field \"{key}\"")
        if type(doc[key]) is not str:
            raise extract_wrong_type(key, doc[key], "string")
    return doc[kind], doc["db"]


def _merge(w: Any, temp_ns: str, target_ns: str, kind: str, db: str, drop: bool, log_ids: tuple[int, ...]) -> int:
    """Merge ``temp_ns`` into ``target_ns`` inside the write transaction ``w``; returns the changes."""
    wanted = (lambda d: d.get("db") == db) if db else (lambda d: True)
    existing = {_name(d, kind): d for d in store.read_all_in(w, target_ns) if wanted(d)} if drop else {}
    to_drop = set(existing)
    changes = 0
    target = store.collection_for_write(w, target_ns)
    for doc in store.read_all_in(w, temp_ns):
        name = _name(doc, kind)
        if db and name[1] != db:
            continue
        try:
            if drop and name in to_drop:
                old_rid, old = store.find_in(w, target_ns, cast(str, existing[name].get("_id")))  # "<db>.<name>"
                if old is not None:
                    target = w.get_collection(target_ns)
                    w.update(target, old_rid, codec.encode(doc), index_keys.index_key_map(target.indexes, old),
                             index_keys.index_key_map(target.indexes, doc))
                else:
                    w.insert(target, codec.encode(doc), index_keys.index_key_map(target.indexes, doc))
            else:
                w.insert(target, codec.encode(doc), index_keys.index_key_map(target.indexes, doc))
            changes += 1
        except StorageError as exc:  # a duplicate: mongod logs it and goes on (mongorestore's behaviour)
            verb = "update" if drop and name in to_drop else "insert"
            named: dict[str, Any] = {kind: f"{name[0]}@{name[1]}"}
            log.warning("ACCESS", log_ids[0] if verb == "update" else log_ids[1],
                        f"Could not {verb} {kind} during _mergeAuthzCollections command",
                        **named, error=str(getattr(exc, "message", exc)))
        to_drop.discard(name)
    if to_drop:
        gone = {existing[name].get("_id") for name in to_drop}
        changes += len(store.delete(target_ns, lambda d: d.get("_id") in gone)(w))
    return changes


async def merge_authz_collections(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    check_fields(cmd, COMMAND, {"tempUsersCollection", "tempRolesCollection", "db", "drop"})
    temps = {key: field(cmd, COMMAND, key, str, "string") or "" for key, *_ in _KINDS}
    db = field(cmd, COMMAND, "db", str, "string", required=True)
    drop = bool(field(cmd, COMMAND, "drop", bool, "bool"))
    if not any(temps.values()):
        raise MongoError(ErrorCode.BadValue,
                         "Must provide at least one of \"tempUsersCollection\" and \"tempRolescollection\"")

    def fn(w: Any) -> int:
        store.ensure_auth_schema(w)
        changes = 0
        for key, target_ns, kind, *log_ids in _KINDS:
            if temps[key]:
                changes += _merge(w, temps[key], target_ns, kind, db, drop, tuple(log_ids))
        return changes

    await write(ctx, fn)
    return {}


COMMANDS = [
    CommandSpec(COMMAND, merge_authz_collections, admin_only=True,
                help="Internal command used by mongorestore: merges users and roles restored into temporary "
                     "collections into admin.system.users and admin.system.roles"),
]
