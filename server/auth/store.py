"""Where users and roles live: ``admin.system.users`` and ``admin.system.roles``, as mongod keeps them.

User documents: ``{_id: "<db>.<user>", userId: UUID, user, db, credentials: {"SCRAM-SHA-1": {...},
"SCRAM-SHA-256": {...}}, roles: [{role, db}], customData?, authenticationRestrictions?}``.
Role documents: ``{_id: "<db>.<role>", role, db, privileges: [{resource, actions}], roles: [{role, db}],
authenticationRestrictions?}``. Both collections get mongod's unique ``user_1_db_1`` /
``role_1_db_1`` index besides ``_id_``; one that lost it (dropIndexes) gets it back at the next start-up
(:func:`missing_indexes`, :func:`restore_indexes`), as mongod's verifySystemIndexes.

Every write function first makes sure ``admin.system.version`` holds mongod's auth schema document
``{_id: "authSchema", currentVersion: 5}`` (:func:`ensure_auth_schema`).

Synchronous: reads open a short read transaction (call them in the thread pool, or on the event loop
for the single-document lookups of authentication); writes are functions for ``engine.write`` (they
run on the writer thread, inside the group commit: acknowledged means fsynced). Index keys come
from the query planner's extractor, so an index someone adds to these collections stays correct.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tidemark.protocol import codec
from tidemark.query import index_keys
from tidemark.storage.errors import DuplicateKey

USERS = "admin.system.users"
ROLES = "admin.system.roles"
VERSION = "admin.system.version"
AUTH_SCHEMA_ID = "authSchema"
AUTH_SCHEMA_VERSION = 5  # mongod 7.0's schemaVersion28SCRAM; getParameter authSchemaVersion says the same
_INDEXES = {
    USERS: {"v": 2, "key": {"user": 1, "db": 1}, "name": "user_1_db_1", "unique": True},
    ROLES: {"v": 2, "key": {"role": 1, "db": 1}, "name": "role_1_db_1", "unique": True},
}


class AlreadyExists(Exception):
    """An insert met an existing ``_id`` (or user/db, role/db pair)."""


def read_all(engine: Any, ns: str) -> list[dict]:
    """Every document of ``ns`` in ``_id`` order (few: users and roles of one deployment)."""
    with engine.read() as r:
        return read_all_in(r, ns)


def read_all_in(r: Any, ns: str) -> list[dict]:
    """:func:`read_all` inside an open read view or write transaction."""
    info = r.get_collection(ns)
    if info is None:
        return []
    return sorted((codec.decode(data) for _, data in r.scan(info)), key=lambda d: str(d.get("_id")))


def read_one(engine: Any, ns: str, _id: str) -> dict | None:
    """The document with this ``_id``, found through the ``_id_`` index."""
    with engine.read() as r:
        return _find(r, ns, _id)[1]


def idents_at(engine: Any) -> tuple[int, tuple[Any, Any]]:
    """(snapshot id, (ident of admin.system.users, ident of admin.system.roles)) of a fresh read view
    (None for a collection that does not exist): what ``AuthManager.sync`` compares to notice any
    write or drop of them."""
    with engine.read() as r:
        users, roles = (getattr(r.get_collection(ns), "ident", None) for ns in (USERS, ROLES))
        return r.snapshot_id(), (users, roles)


def exists_any(engine: Any) -> bool:
    """True when at least one user or role is defined (closes the localhost exception)."""
    with engine.read() as r:
        for ns in (USERS, ROLES):
            info = r.get_collection(ns)
            if info is not None and r.count(info):
                return True
    return False


def _find(r: Any, ns: str, _id: str) -> tuple[bytes | None, dict | None]:
    info = r.get_collection(ns)
    if info is None:
        return None, None
    key = index_keys.index_key_map([info.index_spec("_id_")], {"_id": _id})["_id_"][0]
    for _, rid in r.index_scan(info, "_id_", key, key):
        data = r.get(info, rid)
        if data is not None:
            return rid, codec.decode(data)
    return None, None


def _collection(w: Any, ns: str) -> Any:
    info = w.get_collection(ns)
    if info is None:
        info = w.create_collection(ns)
        info = w.create_index(info, dict(_INDEXES[ns]), [])
    return info


def index_spec(ns: str) -> dict:
    """The index mongod keeps on ``ns`` (one of the two) besides ``_id_``."""
    return dict(_INDEXES[ns])


def missing_indexes(engine: Any) -> list[str]:
    """The namespaces of the two that exist without an index on their key pattern ({user: 1, db: 1} /
    {role: 1, db: 1}: mongod looks for the pattern, whatever the index's name)."""
    with engine.read() as r:
        return [ns for ns, spec in _INDEXES.items()
                if (info := r.get_collection(ns)) is not None
                and not any(dict(s["key"]) == spec["key"] for s in info.indexes)]


def restore_indexes(namespaces: list[str]) -> Callable[[Any], list[str]]:
    """A write function giving each of ``namespaces`` its index back, built over its documents. Returns
    those it could not restore (documents that break its uniqueness): mongod logs and goes on."""

    def fn(w: Any) -> list[str]:
        failed = []
        for ns in namespaces:
            info = w.get_collection(ns)
            spec = dict(_INDEXES[ns])
            name = str(spec["name"])
            entries = [(key, rid) for rid, data in w.scan(info)
                       for key in index_keys.index_key_map([spec], codec.decode(data))[name]]
            try:
                w.create_index(info, spec, sorted(entries))
            except DuplicateKey:
                failed.append(ns)
        return failed

    return fn


def ensure_auth_schema(w: Any) -> None:
    """Inside a write transaction: ``admin.system.version`` holds ``{_id: "authSchema", currentVersion:
    5}`` — as mongod writes it (upsert) before any change of users or roles. mongodump
    --dumpDbUsersAndRoles requires it, and mongorestore reads the dump's auth schema version from it."""
    info = w.get_collection(VERSION)
    if info is None:
        info = w.create_collection(VERSION)
    elif _find(w, VERSION, AUTH_SCHEMA_ID)[1] is not None:
        return
    doc = {"_id": AUTH_SCHEMA_ID, "currentVersion": AUTH_SCHEMA_VERSION}
    w.insert(info, codec.encode(doc), index_keys.index_key_map(info.indexes, doc))


def insert(ns: str, doc: dict) -> Callable[[Any], None]:
    """A write function inserting ``doc``; raises AlreadyExists on a duplicate."""

    def fn(w: Any) -> None:
        ensure_auth_schema(w)
        info = _collection(w, ns)
        try:
            w.insert(info, codec.encode(doc), index_keys.index_key_map(info.indexes, doc))
        except DuplicateKey:
            raise AlreadyExists(doc["_id"]) from None

    return fn


def update(ns: str, _id: str, change: Callable[[dict], dict | None]) -> Callable[[Any], dict | None]:
    """A write function replacing the document ``_id`` by ``change(old)`` (None: leave it). Returns
    the new document, or None when there was no such document. ``change`` may raise to abort."""

    def fn(w: Any) -> dict | None:
        ensure_auth_schema(w)
        rid, old = _find(w, ns, _id)
        if old is None:
            return None
        new = change(old)
        if new is None:
            return old
        info = w.get_collection(ns)
        w.update(info, rid, codec.encode(new), index_keys.index_key_map(info.indexes, old),
                 index_keys.index_key_map(info.indexes, new))
        return new

    return fn


def delete(ns: str, predicate: Callable[[dict], bool]) -> Callable[[Any], list[dict]]:
    """A write function deleting every document ``predicate`` accepts; returns them."""

    def fn(w: Any) -> list[dict]:
        ensure_auth_schema(w)
        info = w.get_collection(ns)
        if info is None:
            return []
        doomed = []
        for rid, data in list(w.scan(info)):
            doc = codec.decode(data)
            if predicate(doc):
                doomed.append((rid, doc))
        for rid, doc in doomed:
            w.delete(info, rid, index_keys.index_key_map(info.indexes, doc))
        return [doc for _, doc in doomed]

    return fn


find_in = _find  # (record id, document) by _id inside a read view or write transaction
collection_for_write = _collection  # the collection inside a write transaction, created with its indexes


def user_id(db: str, user: str) -> str:
    return f"{db}.{user}"
